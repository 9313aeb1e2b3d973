//! drover-noded, the node daemon, as a library: the parts the binary wires together and
//! the tests drive directly.
//!
//! Two processes share this code. The daemon (`agent`, `jobs`, `control`) serves the
//! controller's `NodeAgent` calls, registers and heartbeats, and reports job ends. For
//! each job it starts a supervisor (`supervisor`, `spawn`), the same binary run as
//! `drover-noded supervise <job-dir>`, which runs the batch script and outlives a
//! restart of the daemon. They talk through files in the job directory (`spool`):
//! `launch.json` in, `pid`/`pgid` and `status.json` out; and through signals: SIGTERM to
//! the supervisor cancels the job.
//!
//! The supervisor confines the job (`isolation`, `cgroup`, `device_filter`) and runs it
//! as its user (`user`); the daemon finds what the host offers (`inventory`, `nvml`),
//! runs the site's health check (`health`), the tasks of steps `srun` starts
//! (`tasks`) and the site's MailProg (`mail`), and writes the files `sbcast` sends
//! (`bcast`).

pub mod affinity;
pub mod agent;
pub mod backoff;
pub mod bcast;
pub mod cgroup;
pub mod control;
pub mod device_filter;
pub mod env;
pub mod gpu_sampler;
pub mod health;
pub mod host;
pub mod inventory;
pub mod isolation;
pub mod jobs;
pub mod launch;
pub mod mail;
pub mod nvml;
pub mod output;
pub mod procfs;
pub mod spawn;
pub mod spool;
pub mod status;
pub mod supervisor;
pub mod tasks;
pub mod topology;
pub mod trigger;
pub mod user;

/// Unix time in seconds, read from the system clock.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
