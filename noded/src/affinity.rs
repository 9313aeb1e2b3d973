//! CPU pinning: a job runs on exactly the CPU ids the scheduler gave it
//! (`sched::cpus`). The supervisor pins itself before it starts the script, so the
//! script and everything it starts inherit the mask.
//!
//! Ids name the node's CPUs as configured. When the node is faked (a config that
//! claims more CPUs than this host lets us use), the daemon does not pin at all
//! (`node_fits_host`) rather than crowd the jobs onto the few ids that do exist.

use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;

/// What `pin` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pinning {
    /// The calling process now runs on exactly these ids.
    Pinned(Vec<u32>),
    /// No ids were given.
    NotAsked,
    /// Some id is not usable on this host (faked node, or a narrower inherited mask).
    Unavailable(u32),
    /// The kernel refused the mask.
    Failed(nix::errno::Errno),
}

/// True when a node of `cpus` CPUs can be this host: every id it hands out exists
/// here. A faked node claiming more is never pinned, so that jobs of several faked
/// nodes do not all crowd onto the host's first CPUs.
pub fn node_fits_host(cpus: u32) -> bool {
    sched_getaffinity(Pid::from_raw(0))
        .is_ok_and(|allowed| (0..cpus as usize).all(|id| allowed.is_set(id).unwrap_or(false)))
}

/// Pins the calling process to `cpu_ids` when every one of them is usable here.
pub fn pin(cpu_ids: &[u32]) -> Pinning {
    if cpu_ids.is_empty() {
        return Pinning::NotAsked;
    }
    let allowed = match sched_getaffinity(Pid::from_raw(0)) {
        Ok(set) => set,
        Err(errno) => return Pinning::Failed(errno),
    };
    let mut set = CpuSet::new();
    for &id in cpu_ids {
        if !allowed.is_set(id as usize).unwrap_or(false) || set.set(id as usize).is_err() {
            return Pinning::Unavailable(id);
        }
    }
    match sched_setaffinity(Pid::from_raw(0), &set) {
        Ok(()) => Pinning::Pinned(cpu_ids.to_vec()),
        Err(errno) => Pinning::Failed(errno),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_beyond_this_host_are_not_pinned() {
        assert_eq!(pin(&[]), Pinning::NotAsked);
        assert!(node_fits_host(1));
        assert!(!node_fits_host(CpuSet::count() as u32 + 1));
        assert_eq!(
            pin(&[0, CpuSet::count() as u32]),
            Pinning::Unavailable(CpuSet::count() as u32)
        );
    }
}
