//! The order in which pending jobs are considered.
//!
//! For now: first come, first served — `(submit time, job id)`, as Slurm's
//! priority/basic. The multifactor priority replaces the body of `queue_order`; the
//! scheduler only relies on its contract: every pending job exactly once, highest
//! priority first, in a deterministic order.
//!
//! Example: jobs 3 (submitted at 10), 1 (at 12) and 2 (at 12) come out as 3, 1, 2.

use crate::SchedConfig;
use model::{ClusterState, Job, Time};

/// Pending jobs, highest priority first, each with its priority value.
pub fn queue_order<'a>(
    state: &'a ClusterState,
    _now: Time,
    _config: &SchedConfig,
) -> Vec<(&'a Job, f64)> {
    let mut queue: Vec<&Job> = state.pending_jobs().collect();
    queue.sort_by_key(|j| (j.submit_time, j.id));
    let n = queue.len() as f64;
    queue
        .into_iter()
        .enumerate()
        .map(|(i, j)| (j, n - i as f64))
        .collect()
}
