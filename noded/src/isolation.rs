//! Where a job's processes are placed and how every one of them is reached: the seam for
//! cgroups (cpuset, memory, devices, pids), dropping to the submitting user and GPU
//! device confinement. The supervisor calls an `Isolation` at fixed points of a job's
//! life; `NoIsolation` confines nothing and reaches the job through its process group.

use crate::launch::LaunchInfo;
use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

#[derive(Debug, thiserror::Error)]
pub enum IsolationError {
    /// The job's container could not be built; the job cannot start here.
    #[error("cannot set up {what}: {errno}")]
    Setup { what: &'static str, errno: Errno },
    /// Signals could not be delivered to the job's processes.
    #[error("cannot signal the job's processes: {0}")]
    Signal(Errno),
}

/// One job's placement, driven by its supervisor.
pub trait Isolation {
    /// For logs: what confines the job.
    fn name(&self) -> &'static str;
    /// Before the script starts: build the job's container from its allocation.
    fn prepare(&mut self, job: &LaunchInfo) -> Result<(), IsolationError>;
    /// In the forked child, before exec: join the container, drop privileges. Only
    /// async-signal-safe calls are allowed here (no allocation, no locks).
    fn enter_child(&self) -> Result<(), Errno>;
    /// The batch shell started with this pid; it leads its own process group.
    fn started(&mut self, pid: Pid);
    /// Sends `signal` to every process of the job. Nothing left to signal is success.
    fn signal_all(&self, signal: Signal) -> Result<(), IsolationError>;
    /// True when the kernel killed a process of the job for lack of memory.
    fn out_of_memory(&self) -> bool {
        false
    }
    /// After the job's last process is gone: remove the container.
    fn release(&mut self) {}
}

/// No confinement: the job is its process group (and, through the supervisor being a
/// child subreaper, every orphan it leaves).
#[derive(Debug, Default)]
pub struct NoIsolation {
    pgid: Option<Pid>,
}

impl Isolation for NoIsolation {
    fn name(&self) -> &'static str {
        "none"
    }

    fn prepare(&mut self, _job: &LaunchInfo) -> Result<(), IsolationError> {
        Ok(())
    }

    fn enter_child(&self) -> Result<(), Errno> {
        Ok(())
    }

    fn started(&mut self, pid: Pid) {
        self.pgid = Some(pid);
    }

    fn signal_all(&self, signal: Signal) -> Result<(), IsolationError> {
        let Some(pgid) = self.pgid else { return Ok(()) };
        match killpg(pgid, signal) {
            Ok(()) | Err(Errno::ESRCH) => Ok(()),
            Err(e) => Err(IsolationError::Signal(e)),
        }
    }
}
