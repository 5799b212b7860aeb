//! A Slurm job's state (`squeue --format=%T`), typed.

/// The state of a Slurm job, as `squeue -t all --format=%T` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum JobState {
    /// Queued.
    Pending,
    /// Running.
    Running,
    /// Requeued, or being requeued (it will run again).
    Requeued,
    /// Suspended.
    Suspended,
    /// Its processes are ending.
    Completing,
    /// Ended with exit code 0.
    Completed,
    /// Cancelled (`scancel`, or by the system).
    Cancelled,
    /// Ended with a non-zero exit code.
    Failed,
    /// Reached its time limit.
    Timeout,
    /// Its node failed (and the job is not requeued).
    NodeFail,
    /// Preempted.
    Preempted,
    /// Killed for exceeding its memory.
    OutOfMemory,
    /// Could not start (bad node, prolog failure...).
    BootFail,
    /// The submission's deadline passed.
    Deadline,
    /// A state this version does not know, as printed.
    Other(String),
}

impl std::fmt::Display for JobState {
    /// The long name `squeue` prints (`RUNNING`, `NODE_FAIL`, ...).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            JobState::Pending => "PENDING",
            JobState::Running => "RUNNING",
            JobState::Requeued => "REQUEUED",
            JobState::Suspended => "SUSPENDED",
            JobState::Completing => "COMPLETING",
            JobState::Completed => "COMPLETED",
            JobState::Cancelled => "CANCELLED",
            JobState::Failed => "FAILED",
            JobState::Timeout => "TIMEOUT",
            JobState::NodeFail => "NODE_FAIL",
            JobState::Preempted => "PREEMPTED",
            JobState::OutOfMemory => "OUT_OF_MEMORY",
            JobState::BootFail => "BOOT_FAIL",
            JobState::Deadline => "DEADLINE",
            JobState::Other(text) => text,
        };
        f.write_str(name)
    }
}

impl JobState {
    /// The state printed as `text` (`PENDING`, `RUNNING`, ... as `%T` prints them; the short
    /// codes of `%t` are accepted too).
    pub fn parse(text: &str) -> JobState {
        match text.trim() {
            "PENDING" | "PD" => JobState::Pending,
            "RUNNING" | "R" | "CONFIGURING" | "CF" | "RESIZING" | "RS" | "SIGNALING" | "SI"
            | "STAGE_OUT" | "SO" => JobState::Running,
            "REQUEUED" | "RQ" | "REQUEUE_FED" | "RF" | "REQUEUE_HOLD" | "RH" => JobState::Requeued,
            "SUSPENDED" | "S" | "STOPPED" | "ST" => JobState::Suspended,
            "COMPLETING" | "CG" => JobState::Completing,
            "COMPLETED" | "CD" => JobState::Completed,
            "CANCELLED" | "CA" => JobState::Cancelled,
            "FAILED" | "F" => JobState::Failed,
            "TIMEOUT" | "TO" => JobState::Timeout,
            "NODE_FAIL" | "NF" => JobState::NodeFail,
            "PREEMPTED" | "PR" => JobState::Preempted,
            "OUT_OF_MEMORY" | "OOM" => JobState::OutOfMemory,
            "BOOT_FAIL" | "BF" => JobState::BootFail,
            "DEADLINE" | "DL" => JobState::Deadline,
            other => JobState::Other(other.to_string()),
        }
    }

    /// Whether the job has ended and will not run again.
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            JobState::Completed
                | JobState::Cancelled
                | JobState::Failed
                | JobState::Timeout
                | JobState::NodeFail
                | JobState::Preempted
                | JobState::OutOfMemory
                | JobState::BootFail
                | JobState::Deadline
        )
    }

    /// Whether the job is queued, running or will run again (it still holds or may take its
    /// work).
    pub fn is_active(&self) -> bool {
        !self.is_final()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_and_short_names() {
        assert_eq!(JobState::parse("PENDING"), JobState::Pending);
        assert_eq!(JobState::parse("R"), JobState::Running);
        assert_eq!(JobState::parse("NODE_FAIL"), JobState::NodeFail);
        assert_eq!(
            JobState::parse("SPECIAL_EXIT"),
            JobState::Other("SPECIAL_EXIT".into())
        );
        assert!(JobState::Cancelled.is_final());
        assert!(JobState::Requeued.is_active() && JobState::Completing.is_active());
        assert!(JobState::Other("X".into()).is_active());
    }
}
