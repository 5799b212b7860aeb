//! `agentcompass-cluster`: what the host needs from a cluster scheduler, for running a
//! request's attempts on many machines (issue 17). Today: Slurm through its command-line tools
//! (`sbatch`, `squeue`, `scancel`) — what every Slurm site has, authenticated as the user,
//! with no REST daemon or token to set up. *Invariant*: secrets never appear in an argument
//! list (other users can read `/proc/<pid>/cmdline`); a job's secrets travel only in the
//! environment given to `sbatch`, which Slurm hands to the job.

pub mod error;
pub mod job_state;
pub mod slurm;

pub use error::ClusterError;
pub use job_state::JobState;
pub use slurm::{JobInfo, JobSpec, SlurmCli};
