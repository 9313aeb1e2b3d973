//! Where a job's processes are placed and how every one of them is reached. The
//! supervisor calls an `Isolation` at fixed points of a job's life: `CgroupIsolation`
//! confines the job to its CPUs, memory and GPUs in cgroups (`cgroup`) and reaches every
//! process through them; `NoIsolation` confines nothing and reaches the job through its
//! process group (a daemon without root or cgroups, or `[cgroup] mode = "off"`).

use crate::cgroup::{self, JobCgroup, Limits, TaskTrace};
use crate::launch::LaunchInfo;
use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum IsolationError {
    /// The job's container could not be built; the job cannot start here.
    #[error("cannot set up {what}: {errno}")]
    Setup { what: &'static str, errno: Errno },
    /// The job's cgroups could not be built.
    #[error("cannot set up the job's cgroup: {0}")]
    Cgroup(String),
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
    /// How many processes of the job the kernel killed for lack of memory.
    fn oom_kills(&self) -> u64 {
        0
    }
    /// After the script ended: kills what is left of the job, waiting up to `timeout`.
    /// False when processes of the job survive (or cannot be told apart).
    fn kill_rest(&self, _timeout: Duration) -> bool {
        true
    }
    /// What the batch step used, as the container counted it (`node`: this node's
    /// name; `script_io`: what the script read and wrote, read as it ended); `None`:
    /// nothing counts.
    fn batch_usage(
        &self,
        _node: &str,
        _script_io: Option<model::DiskIo>,
    ) -> Option<model::StepUsage> {
        None
    }
    /// After the job's last process is gone: remove the container.
    fn release(&mut self) {}
}

/// Sets the soft resource limits the submitting command passed on (Linux resource,
/// limit), raising the hard one where the daemon may; as slurmstepd, a limit it cannot
/// set is left as it was. For the forked child before exec: async-signal-safe.
pub fn set_rlimits(rlimits: &[(u32, u64)]) {
    for &(resource, soft) in rlimits {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit and setrlimit read and write one rlimit; both are
        // async-signal-safe system calls.
        unsafe {
            if libc::getrlimit(resource as _, &mut limit) == 0 {
                let wanted = libc::rlimit {
                    rlim_cur: soft,
                    rlim_max: limit.rlim_max.max(soft),
                };
                if libc::setrlimit(resource as _, &wanted) != 0 {
                    let capped = libc::rlimit {
                        rlim_cur: soft.min(limit.rlim_max),
                        rlim_max: limit.rlim_max,
                    };
                    libc::setrlimit(resource as _, &capped);
                }
            }
        }
    }
}

/// A job's isolation whose processes also start with the resource limits sbatch passed
/// on (`model::step::Rlimit`): the batch script's.
pub struct WithRlimits<'a> {
    pub inner: &'a dyn Isolation,
    pub rlimits: &'a [(u32, u64)],
}

impl Isolation for WithRlimits<'_> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn prepare(&mut self, _job: &LaunchInfo) -> Result<(), IsolationError> {
        Ok(())
    }
    fn enter_child(&self) -> Result<(), Errno> {
        self.inner.enter_child()?;
        set_rlimits(self.rlimits);
        Ok(())
    }
    fn started(&mut self, _pid: Pid) {}
    fn signal_all(&self, _signal: Signal) -> Result<(), IsolationError> {
        Ok(())
    }
}

/// The isolation a launch record asks for.
pub fn for_job(info: &LaunchInfo) -> Box<dyn Isolation> {
    match &info.cgroup {
        Some(placement) => Box::new(CgroupIsolation {
            placement: placement.clone(),
            cgroup: None,
            procs: Vec::new(),
            pgid: None,
        }),
        None => Box::new(NoIsolation::default()),
    }
}

/// The job in its own cgroups: limited to its CPUs, memory and GPUs; every process of it
/// found through them.
#[derive(Debug)]
pub struct CgroupIsolation {
    placement: crate::launch::CgroupPlacement,
    cgroup: Option<JobCgroup>,
    /// The batch step's `cgroup.procs` files, which the child joins.
    procs: Vec<OwnedFd>,
    pgid: Option<Pid>,
}

/// What a job may use on this node, from its launch record: its CPU ids, its memory,
/// and none of the node's GPUs it was not given. A GPU file that is missing, or is no
/// character device, cannot be opened anyway and is skipped; the file of a GPU in MIG
/// mode stays open to a job given one of its instances.
pub fn job_limits(info: &LaunchInfo) -> Limits {
    // MIG instances of one GPU share its file: a file any given GPU needs stays open.
    let given: Vec<&String> = info
        .gpu_indices
        .iter()
        .filter_map(|i| info.gpu_files.get(*i as usize))
        .collect();
    let mut deny_devices: Vec<(u64, u64)> = info
        .gpu_files
        .iter()
        .filter(|file| !given.contains(file))
        .filter_map(|file| {
            let meta = std::fs::metadata(file).ok()?;
            meta.file_type().is_char_device().then(|| {
                let rdev = meta.rdev();
                (u64::from(libc::major(rdev)), u64::from(libc::minor(rdev)))
            })
        })
        .collect();
    deny_devices.sort_unstable();
    deny_devices.dedup();
    Limits {
        cpus: info.cpu_ids.clone(),
        memory: (info.mem_on_node_mb > 0).then(|| info.mem_on_node_mb * 1024 * 1024),
        deny_devices,
        max_tasks: info.cgroup.as_ref().map(|c| c.max_tasks).filter(|m| *m > 0),
    }
}

impl Isolation for CgroupIsolation {
    fn name(&self) -> &'static str {
        match self.placement.hierarchy.version() {
            1 => "cgroup v1",
            _ => "cgroup v2",
        }
    }

    fn prepare(&mut self, job: &LaunchInfo) -> Result<(), IsolationError> {
        let setup = |e: cgroup::CgroupError| IsolationError::Cgroup(e.to_string());
        let cg = JobCgroup::new(
            &self.placement.hierarchy,
            &self.placement.prefix,
            &job.node_name,
            job.job_id,
        )
        .map_err(setup)?;
        // What an earlier run of the job left was cleared by the node daemon before it
        // started this supervisor (`Jobs::launch`); steps of this run may already be here.
        self.procs = cg
            .create(&job_limits(job), cgroup::BATCH_STEP)
            .map_err(setup)?;
        self.cgroup = Some(cg);
        Ok(())
    }

    fn enter_child(&self) -> Result<(), Errno> {
        cgroup::join(&self.procs)
    }

    fn started(&mut self, pid: Pid) {
        self.pgid = Some(pid);
        self.procs.clear();
    }

    fn signal_all(&self, signal: Signal) -> Result<(), IsolationError> {
        if let Some(cg) = &self.cgroup {
            cg.signal_all(signal);
        }
        Ok(())
    }

    fn oom_kills(&self) -> u64 {
        self.cgroup.as_ref().map_or(0, JobCgroup::oom_kills)
    }

    fn kill_rest(&self, timeout: Duration) -> bool {
        self.cgroup
            .as_ref()
            .is_none_or(|cg| cg.kill_and_wait(timeout))
    }

    fn batch_usage(
        &self,
        node: &str,
        script_io: Option<model::DiskIo>,
    ) -> Option<model::StepUsage> {
        // The script is the batch step's one task, 0.
        let traced = BTreeMap::from([(
            0,
            TaskTrace {
                rss_bytes: 0,
                io: script_io,
            },
        )]);
        self.cgroup
            .as_ref()?
            .step_usage(cgroup::BATCH_STEP, node, &traced)
    }

    fn release(&mut self) {
        if let Some(cg) = self.cgroup.take()
            && let Err(e) = cg.remove()
        {
            tracing::warn!(error = %e, "cannot remove the job's cgroup");
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_is_denied_the_files_of_gpus_it_was_not_given_but_not_its_mig_parent() {
        // Stand-ins that exist everywhere: /dev/null is 1:3, /dev/zero 1:5. GPUs 1 and 2
        // are MIG instances of one GPU, behind one file.
        let mut info = LaunchInfo::minimal(1, "n1", "/tmp");
        info.gpu_files = vec!["/dev/null".into(), "/dev/zero".into(), "/dev/zero".into()];
        info.gpu_files.push("/nonexistent/gpu3".into());
        info.gpu_indices = vec![2];
        info.mem_on_node_mb = 2;
        info.cpu_ids = vec![0];
        let limits = job_limits(&info);
        assert_eq!(limits.deny_devices, vec![(1, 3)]);
        assert_eq!(limits.memory, Some(2 << 20));
        assert_eq!(limits.cpus, vec![0]);
        info.gpu_indices = vec![];
        assert_eq!(job_limits(&info).deny_devices, vec![(1, 3), (1, 5)]);
    }
}
