//! Which copy of a cluster unit this process runs: the fencing token its tasks publish with
//! and where it runs (recorded in every task it publishes).

/// One copy of a unit's work running in this process (a job run on a node): its fencing
/// token and where it runs, recorded in every task it publishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterCopy {
    /// `<job id>-<restart count>`: unique per run of a job (a requeued job runs again with
    /// the next restart count), so two copies never share a token.
    pub token: String,
    /// The Slurm job id (`None` outside Slurm: a unit run by hand).
    pub job_id: Option<u64>,
    /// How often Slurm requeued the job before this run.
    pub restart: u32,
    /// The node it runs on (`SLURMD_NODENAME`).
    pub node: String,
}

impl ClusterCopy {
    /// The copy described by the Slurm job environment (`SLURM_JOB_ID`,
    /// `SLURM_RESTART_COUNT`, `SLURMD_NODENAME`); outside a job, a copy named after this
    /// process.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> ClusterCopy {
        let job_id = env("SLURM_JOB_ID").and_then(|id| id.trim().parse::<u64>().ok());
        let restart = env("SLURM_RESTART_COUNT")
            .and_then(|n| n.trim().parse::<u32>().ok())
            .unwrap_or(0);
        let node = env("SLURMD_NODENAME")
            .or_else(|| env("HOSTNAME"))
            .unwrap_or_default();
        let token = match job_id {
            Some(id) => format!("{id}-{restart}"),
            None => format!("local-{}", std::process::id()),
        };
        ClusterCopy {
            token,
            job_id,
            restart,
            node,
        }
    }

    /// The `executor` record of a task this copy published (`task.json`).
    pub fn record(&self) -> serde_json::Value {
        serde_json::json!({
            "kind": "slurm",
            "job_id": self.job_id,
            "restart": self.restart,
            "node": self.node,
            "token": self.token,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_is_named_by_its_job_and_restart() {
        let env = |name: &str| match name {
            "SLURM_JOB_ID" => Some("42".to_string()),
            "SLURM_RESTART_COUNT" => Some("2".to_string()),
            "SLURMD_NODENAME" => Some("n3".to_string()),
            _ => None,
        };
        let copy = ClusterCopy::from_env(&env);
        assert_eq!(copy.token, "42-2");
        assert_eq!(copy.node, "n3");
        assert_eq!(copy.record()["job_id"], 42);
        let outside = ClusterCopy::from_env(&|_| None);
        assert!(outside.token.starts_with("local-"), "{outside:?}");
        assert!(agentcompass_results::store::claim::valid_token(
            &outside.token
        ));
    }
}
