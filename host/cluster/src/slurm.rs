//! Slurm through its command-line tools: `sbatch --parsable` submits, `squeue -t all` reads
//! states (finished jobs stay listed for the cluster's `MinJobAge`; a job missing from the
//! list has ended), `scancel` cancels. Facts of Slurm 22.05 this relies on: `--parsable`
//! prints `ID` or `ID;CLUSTER`; `squeue -j ID` for an unknown id exits 1 with "Invalid job id
//! specified"; `scancel` of an unknown id exits 0 silently (so callers read the state
//! after); a requeued job keeps its id and sees `SLURM_RESTART_COUNT` = 1, 2, ...

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::error::ClusterError;
use crate::job_state::JobState;

/// The `squeue` output format: id, long state, nodes, reason, name.
const SQUEUE_FORMAT: &str = "%i|%T|%N|%r|%j";

/// One batch job to submit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobSpec {
    /// `--job-name` (how the run finds its jobs again).
    pub name: String,
    /// The batch script (written with [`write_job_script`]).
    pub script: PathBuf,
    /// Standard output and error of every run of the job (appended across requeues).
    pub output: PathBuf,
    /// `--chdir`.
    pub workdir: PathBuf,
    /// `--partition`.
    pub partition: Option<String>,
    /// `--account`.
    pub account: Option<String>,
    /// `--qos`.
    pub qos: Option<String>,
    /// `--time` (Slurm's formats: `MM`, `HH:MM:SS`, `D-HH:MM`...).
    pub time_limit: Option<String>,
    /// `--cpus-per-task`.
    pub cpus: Option<u32>,
    /// `--mem` (`2G`, `512M`).
    pub memory: Option<String>,
    /// `--requeue` (run again elsewhere when the node fails) or `--no-requeue`.
    pub requeue: bool,
    /// More `sbatch` arguments, before the script.
    pub extra_args: Vec<String>,
    /// Variables set in `sbatch`'s environment, which Slurm passes to the job
    /// (`--export=ALL`): the only way secrets reach it.
    pub env: Vec<(String, String)>,
}

impl JobSpec {
    /// The `sbatch` arguments (never the environment's values).
    pub fn sbatch_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            "--parsable".into(),
            format!("--job-name={}", self.name).into(),
            flag("--output=", &self.output),
            "--open-mode=append".into(),
            flag("--chdir=", &self.workdir),
            "--export=ALL".into(),
            if self.requeue {
                "--requeue"
            } else {
                "--no-requeue"
            }
            .into(),
        ];
        let optional = [
            ("--partition=", &self.partition),
            ("--account=", &self.account),
            ("--qos=", &self.qos),
            ("--time=", &self.time_limit),
            ("--mem=", &self.memory),
        ];
        for (name, value) in optional {
            if let Some(value) = value {
                args.push(format!("{name}{value}").into());
            }
        }
        if let Some(cpus) = self.cpus {
            args.push(format!("--cpus-per-task={cpus}").into());
        }
        args.extend(self.extra_args.iter().map(OsString::from));
        args.push(self.script.clone().into_os_string());
        args
    }
}

fn flag(name: &str, path: &Path) -> OsString {
    let mut flag = OsString::from(name);
    flag.push(path.as_os_str());
    flag
}

/// A job as `squeue` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    /// The job id.
    pub id: u64,
    /// Its state.
    pub state: JobState,
    /// The nodes it runs on (`n1`, `n[1-2]`; empty while pending).
    pub nodes: String,
    /// Why it waits (`Resources`, `BeginTime`, `None`...).
    pub reason: String,
    /// Its name.
    pub name: String,
}

impl JobInfo {
    /// Parses one `squeue` line of [`SQUEUE_FORMAT`].
    pub fn parse(line: &str) -> Option<JobInfo> {
        let mut fields = line.splitn(5, '|');
        let id = fields.next()?.trim().parse().ok()?;
        let state = JobState::parse(fields.next()?);
        let nodes = fields.next()?.trim().to_string();
        let reason = fields.next()?.trim().to_string();
        let name = fields.next()?.trim().to_string();
        Some(JobInfo {
            id,
            state,
            nodes,
            reason,
            name,
        })
    }
}

/// The Slurm command-line tools, optionally with a `slurm.conf` of their own (`SLURM_CONF`).
#[derive(Debug, Clone, Default)]
pub struct SlurmCli {
    conf: Option<PathBuf>,
}

impl SlurmCli {
    /// The tools with the environment's configuration (`SLURM_CONF` or the system's).
    pub fn new() -> SlurmCli {
        SlurmCli::default()
    }

    /// The tools with the configuration file `conf`.
    pub fn with_conf(conf: &Path) -> SlurmCli {
        SlurmCli {
            conf: Some(conf.to_path_buf()),
        }
    }

    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        if let Some(conf) = &self.conf {
            command.env("SLURM_CONF", conf);
        }
        command
    }

    fn output(&self, program: &str, command: &mut Command) -> Result<Output, ClusterError> {
        command.output().map_err(|cause| ClusterError::Spawn {
            program: program.to_string(),
            cause,
        })
    }

    /// Submits `job`; returns its id.
    pub fn submit(&self, job: &JobSpec) -> Result<u64, ClusterError> {
        let mut command = self.command("sbatch");
        command.args(job.sbatch_args());
        command.envs(job.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let out = self.output("sbatch", &mut command)?;
        let out = succeeded("sbatch", out)?;
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text.lines().last().unwrap_or_default().trim();
        line.split(';')
            .next()
            .and_then(|id| id.parse().ok())
            .ok_or_else(|| ClusterError::Output {
                program: "sbatch".into(),
                output: line.to_string(),
            })
    }

    /// Every job `squeue` lists (finished ones included) whose name starts with `prefix`.
    pub fn jobs(&self, prefix: &str) -> Result<Vec<JobInfo>, ClusterError> {
        let mut command = self.command("squeue");
        command.args(["--noheader", "--states=all", "--format", SQUEUE_FORMAT]);
        let out = succeeded("squeue", self.output("squeue", &mut command)?)?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(JobInfo::parse)
            .filter(|job| job.name.starts_with(prefix))
            .collect())
    }

    /// The job `id`, or `None` when Slurm no longer knows it (it ended long enough ago).
    pub fn job(&self, id: u64) -> Result<Option<JobInfo>, ClusterError> {
        let mut command = self.command("squeue");
        command.args(["--noheader", "--states=all", "--format", SQUEUE_FORMAT]);
        command.arg(format!("--jobs={id}"));
        let out = self.output("squeue", &mut command)?;
        if !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("Invalid job id")
        {
            return Ok(None);
        }
        let out = succeeded("squeue", out)?;
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(JobInfo::parse)
            .find(|job| job.id == id))
    }

    /// Cancels the jobs `ids` (nothing to do for none). Slurm does not report unknown ids:
    /// read the states afterwards to know.
    pub fn cancel(&self, ids: &[u64]) -> Result<(), ClusterError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut command = self.command("scancel");
        command.args(ids.iter().map(u64::to_string));
        succeeded("scancel", self.output("scancel", &mut command)?).map(|_| ())
    }
}

fn succeeded(program: &str, out: Output) -> Result<Output, ClusterError> {
    if out.status.success() {
        return Ok(out);
    }
    // One line: the tools print one message per line.
    let stderr: String = String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
        .chars()
        .take(500)
        .collect();
    Err(ClusterError::Failed {
        program: program.to_string(),
        status: out.status.to_string(),
        stderr,
    })
}

/// Quotes `word` for a POSIX shell.
pub fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Writes an executable batch script at `path` that runs `program` with `args` (`exec`, so
/// the job's signals reach it). Neither may hold a secret: the script is a file.
pub fn write_job_script(path: &Path, program: &Path, args: &[String]) -> Result<(), ClusterError> {
    let mut text = String::from("#!/bin/sh\nexec ");
    text.push_str(&shell_quote(&program.to_string_lossy()));
    for arg in args {
        text.push(' ');
        text.push_str(&shell_quote(arg));
    }
    text.push('\n');
    let failed = |cause| ClusterError::Script {
        path: path.to_path_buf(),
        cause,
    };
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o755)
        .open(path)
        .map_err(failed)?;
    file.write_all(text.as_bytes()).map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_never_hold_the_environment() {
        let job = JobSpec {
            name: "ac-run-1".into(),
            script: "/shared/run/job-1.sh".into(),
            output: "/shared/run/job-1.out".into(),
            workdir: "/shared/run".into(),
            partition: Some("gpu".into()),
            time_limit: Some("01:00:00".into()),
            cpus: Some(2),
            requeue: true,
            extra_args: vec!["--exclusive".into()],
            env: vec![("MODEL_KEY".into(), "sk-secret-value".into())],
            ..JobSpec::default()
        };
        let args: Vec<String> = job
            .sbatch_args()
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args,
            [
                "--parsable",
                "--job-name=ac-run-1",
                "--output=/shared/run/job-1.out",
                "--open-mode=append",
                "--chdir=/shared/run",
                "--export=ALL",
                "--requeue",
                "--partition=gpu",
                "--time=01:00:00",
                "--cpus-per-task=2",
                "--exclusive",
                "/shared/run/job-1.sh",
            ]
        );
        assert!(!args.iter().any(|a| a.contains("sk-secret-value")));
    }

    #[test]
    fn squeue_lines() {
        let job = JobInfo::parse("42|RUNNING|n2|None|ac-x-1").unwrap();
        assert_eq!(
            (job.id, &job.state, job.nodes.as_str(), job.name.as_str()),
            (42, &JobState::Running, "n2", "ac-x-1")
        );
        let pending =
            JobInfo::parse("9|PENDING||ReqNodeNotAvail, UnavailableNodes:n1|a|b").unwrap();
        assert_eq!(pending.reason, "ReqNodeNotAvail, UnavailableNodes:n1");
        assert_eq!(pending.name, "a|b");
        assert!(JobInfo::parse("garbage").is_none());
    }

    #[test]
    fn scripts_quote_their_words() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("job.sh");
        write_job_script(
            &path,
            Path::new("/opt/a b/host"),
            &["it's".into(), "$HOME".into()],
        )
        .unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text, "#!/bin/sh\nexec '/opt/a b/host' 'it'\\''s' '$HOME'\n");
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "printf '%s|' {} {}",
                shell_quote("it's"),
                shell_quote("$HOME")
            ))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "it's|$HOME|");
    }
}
