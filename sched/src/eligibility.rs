//! May a pending job be considered for a start at all, before resources? Holds, begin
//! times, dependencies and partition states, each with Slurm's reason code.
//!
//! Example: a job held by its user waits with `JobHeldUser`; one whose `afterok`
//! dependency failed waits with `DependencyNeverSatisfied` (or is cancelled with
//! `--kill-on-invalid-dep`); one submitted into a reservation whose window has not
//! opened waits with `Reservation`.

use crate::dependency::{self, DepStatus};
use model::{ClusterState, Job, Reason, Time};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eligibility {
    Eligible,
    /// Not now, for this reason.
    Wait(Reason),
    /// Never: end the job with this reason.
    Cancel(Reason),
}

pub fn check(state: &ClusterState, job: &Job, now: Time) -> Eligibility {
    use Eligibility::Wait;
    if job.held {
        return Wait(if job.reason.is_hold() {
            job.reason
        } else {
            Reason::JobHeldUser
        });
    }
    if job.spec.begin_time > now {
        return Wait(Reason::BeginTime);
    }
    if !job.could_finish_by_deadline(now) {
        return Eligibility::Cancel(Reason::DeadLine);
    }
    match dependency::evaluate(state, job) {
        DepStatus::Satisfied => {}
        DepStatus::Waiting => return Wait(Reason::Dependency),
        DepStatus::Never if job.spec.kill_on_invalid_dep => {
            return Eligibility::Cancel(Reason::DependencyNeverSatisfied);
        }
        DepStatus::Never => return Wait(Reason::DependencyNeverSatisfied),
    }
    // Of several reservations, one left is enough, and one open now.
    if !job.spec.reservation.is_empty() {
        let mut known = job
            .spec
            .reservations()
            .filter_map(|r| state.reservations.get(r))
            .peekable();
        if known.peek().is_none() {
            return Wait(Reason::ReservationDeleted);
        }
        if known.all(|r| r.window_at(now).0 > now) {
            return Wait(Reason::Reservation);
        }
    }
    // A job of several partitions (`-p a,b`) waits only while none of them
    // schedules jobs, with the first one's reason.
    let mut why = None;
    for name in job.spec.partitions() {
        let reason = match state.partition(name) {
            None => Reason::PartitionDown,
            Some(p) if p.state == model::config::PartitionState::Inactive => {
                Reason::PartitionInactive
            }
            Some(p) if !p.schedules_jobs() => Reason::PartitionDown,
            Some(_) => return Eligibility::Eligible,
        };
        why.get_or_insert(reason);
    }
    Wait(why.unwrap_or(Reason::PartitionDown))
}
