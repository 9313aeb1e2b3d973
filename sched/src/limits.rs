//! Limits on associations and QOS (GrpTRES, MaxTRESPerUser, MaxJobs, MaxSubmit,
//! MaxWall, ...), checked for each job in queue order and charged as jobs are planned
//! to start, so that one pass never exceeds a limit.
//!
//! For now there are no limits: every job passes. The contract: `check` returns the
//! Slurm reason code (`QOSMaxGRESPerUser`, `AssocGrpGRES`, ...) of the first limit the
//! job would break by starting now, and `charge` records a start planned in this pass.

use crate::SchedConfig;
use model::{Allocation, ClusterState, Job};

/// What running and just-planned jobs use against each limit.
#[derive(Debug, Default)]
pub struct LimitTracker {}

impl LimitTracker {
    pub fn new(_state: &ClusterState, _config: &SchedConfig) -> LimitTracker {
        LimitTracker {}
    }

    /// The reason the job may not start now because of a limit, if any.
    pub fn check(&self, _job: &Job) -> Option<String> {
        None
    }

    /// Counts a start planned in this pass.
    pub fn charge(&mut self, _job: &Job, _alloc: &Allocation) {}
}
