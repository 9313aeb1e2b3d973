//! May a pending job be considered for a start at all, before resources? Holds, begin
//! times, dependencies and partition states, each with Slurm's reason code.
//!
//! Example: a job held by its user waits with `JobHeldUser`; one whose `afterok`
//! dependency failed waits with `DependencyNeverSatisfied` (or is cancelled with
//! `--kill-on-invalid-dep`); one submitted into a reservation whose window has not
//! opened waits with `Reservation`.

use crate::dependency::{self, DepStatus};
use model::{ClusterState, Job, Time};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Eligibility {
    Eligible,
    /// Not now, for this reason.
    Wait(String),
    /// Never: end the job with this reason.
    Cancel(String),
}

pub fn check(state: &ClusterState, job: &Job, now: Time) -> Eligibility {
    let wait = |r: &str| Eligibility::Wait(r.to_string());
    if job.held {
        return if job.reason.starts_with("JobHeld") {
            wait(&job.reason)
        } else {
            wait("JobHeldUser")
        };
    }
    if job.spec.begin_time > now {
        return wait("BeginTime");
    }
    match dependency::evaluate(state, job) {
        DepStatus::Satisfied => {}
        DepStatus::Waiting => return wait("Dependency"),
        DepStatus::Never if job.spec.kill_on_invalid_dep => {
            return Eligibility::Cancel("DependencyNeverSatisfied".into());
        }
        DepStatus::Never => return wait("DependencyNeverSatisfied"),
    }
    if !job.spec.reservation.is_empty() {
        match state.reservations.get(&job.spec.reservation) {
            None => return wait("ReservationDeleted"),
            Some(r) if r.window_at(now).0 > now => return wait("Reservation"),
            Some(_) => {}
        }
    }
    match state.partition(&job.spec.partition) {
        None => wait("PartitionDown"),
        Some(p) if p.state == "INACTIVE" => wait("PartitionInactive"),
        Some(p) if !p.schedules_jobs() => wait("PartitionDown"),
        Some(_) => Eligibility::Eligible,
    }
}
