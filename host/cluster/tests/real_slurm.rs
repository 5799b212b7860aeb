//! `SlurmCli` against the real three-node cluster `./dev.sh test` starts (`ci/slurm.sh`:
//! slurmctld + `slurmd -N n1..n3`, config in `AGENTCOMPASS_TEST_SLURM_CONF`).

// Test code: a failed call is the test's failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentcompass_cluster::slurm::write_job_script;
use agentcompass_cluster::{JobSpec, JobState, SlurmCli};

fn cluster() -> SlurmCli {
    let conf = std::env::var_os("AGENTCOMPASS_TEST_SLURM_CONF").expect(
        "AGENTCOMPASS_TEST_SLURM_CONF is not set: run the tests with ./dev.sh test, which starts \
         the Slurm cluster",
    );
    SlurmCli::with_conf(Path::new(&conf))
}

fn job(dir: &Path, name: &str, script: &str, extra: &[&str]) -> JobSpec {
    let path = dir.join(format!("{name}.sh"));
    write_job_script(
        &path,
        Path::new("/bin/sh"),
        &["-c".to_string(), script.to_string()],
    )
    .unwrap();
    JobSpec {
        name: name.to_string(),
        script: path,
        output: dir.join(format!("{name}.out")),
        workdir: dir.to_path_buf(),
        requeue: true,
        extra_args: extra.iter().map(|s| s.to_string()).collect(),
        ..JobSpec::default()
    }
}

/// Polls until `done` holds for the job's state (60 s at most).
fn wait_for(slurm: &SlurmCli, id: u64, done: impl Fn(&JobState) -> bool) -> JobState {
    let started = Instant::now();
    loop {
        let state = slurm
            .job(id)
            .unwrap()
            .map(|j| j.state)
            .unwrap_or(JobState::Other("gone".into()));
        if done(&state) {
            return state;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "job {id} still {state:?} after 60 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn jobs_run_on_each_node_with_their_environment_and_cancel() {
    let slurm = cluster();
    let dir = tempfile::tempdir().unwrap();
    let prefix = format!("ac-test-{}-", std::process::id());
    let secret = "sk-test-never-in-argv";
    let mut ids = Vec::new();
    let mut outputs: Vec<PathBuf> = Vec::new();
    for node in ["n1", "n2", "n3"] {
        let mut spec = job(
            dir.path(),
            &format!("{prefix}{node}"),
            "echo \"$SLURMD_NODENAME ${#TEST_MODEL_KEY} ${SLURM_RESTART_COUNT:-0}\"",
            &["--nodelist", node],
        );
        spec.env = vec![("TEST_MODEL_KEY".into(), secret.into())];
        outputs.push(spec.output.clone());
        ids.push(slurm.submit(&spec).unwrap());
    }
    for id in &ids {
        assert_eq!(
            wait_for(&slurm, *id, JobState::is_final),
            JobState::Completed
        );
    }
    for (node, output) in ["n1", "n2", "n3"].iter().zip(&outputs) {
        let text = std::fs::read_to_string(output).unwrap();
        assert_eq!(text.trim(), format!("{node} {} 0", secret.len()), "{node}");
    }
    let listed = slurm.jobs(&prefix).unwrap();
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert!(listed.iter().all(|j| j.state == JobState::Completed));

    // A running job is cancelled; cancelling it again (or an unknown id) is not an error.
    let sleeper = slurm
        .submit(&job(
            dir.path(),
            &format!("{prefix}sleep"),
            "sleep 300",
            &[],
        ))
        .unwrap();
    wait_for(&slurm, sleeper, |s| *s == JobState::Running);
    slurm.cancel(&[sleeper]).unwrap();
    assert_eq!(
        wait_for(&slurm, sleeper, JobState::is_final),
        JobState::Cancelled
    );
    slurm.cancel(&[sleeper, 999_999_999]).unwrap();
    assert_eq!(slurm.job(999_999_999).unwrap(), None);
}
