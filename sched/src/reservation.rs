//! Advance reservations as placement sees them: may a job use a node over a span of
//! time?
//!
//! Example: with `maint` holding n1 from 10:00 to 12:00, a job of another user with a
//! one-hour limit may start on n1 at 08:30 (it ends by 09:30) but not at 09:30; a job
//! inside `maint` may use only n1 and only from 10:00.

use model::{ClusterState, Job, Time};

/// May `job` run on `node` from `from` until `to` as far as reservations go?
pub fn node_allowed(state: &ClusterState, job: &Job, node: &str, from: Time, to: Time) -> bool {
    if !job.spec.reservation.is_empty() && !state.reservations.contains_key(&job.spec.reservation) {
        return false;
    }
    !state
        .reservations
        .values()
        .any(|r| r.blocks(job, node, from, to))
}

/// When the job would end if it started at `from` (its time limit; unlimited jobs
/// run for a year as far as reservations are concerned).
pub fn planned_end(job: &Job, from: Time) -> Time {
    from + job
        .time_limit_min
        .map_or(365 * 86_400, |m| Time::from(m) * 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::{Event, JobSpec, Reservation};

    #[test]
    fn reserved_nodes_are_kept_for_members() {
        let mut s = ClusterState::default();
        s.apply(&Event::ReservationSet {
            reservation: Box::new(Reservation {
                name: "maint".into(),
                start: 36_000,
                end: 43_200,
                nodes: vec!["n1".into()],
                users: vec!["ada".into()],
                accounts: vec![],
                flags: vec![],
                partition: String::new(),
            }),
        });
        let other = Job::new(
            1,
            JobSpec {
                user: "bob".into(),
                ..JobSpec::default()
            },
            0,
            Some(60),
        );
        assert!(node_allowed(
            &s,
            &other,
            "n1",
            30_600,
            planned_end(&other, 30_600)
        ));
        assert!(!node_allowed(
            &s,
            &other,
            "n1",
            34_200,
            planned_end(&other, 34_200)
        ));
        assert!(node_allowed(
            &s,
            &other,
            "n2",
            34_200,
            planned_end(&other, 34_200)
        ));
        let member = Job::new(
            2,
            JobSpec {
                user: "ada".into(),
                reservation: "maint".into(),
                ..JobSpec::default()
            },
            0,
            Some(60),
        );
        assert!(!node_allowed(
            &s,
            &member,
            "n2",
            36_000,
            planned_end(&member, 36_000)
        ));
        assert!(node_allowed(
            &s,
            &member,
            "n1",
            36_000,
            planned_end(&member, 36_000)
        ));
        let lost = Job::new(
            3,
            JobSpec {
                reservation: "gone".into(),
                ..JobSpec::default()
            },
            0,
            Some(60),
        );
        assert!(!node_allowed(&s, &lost, "n1", 0, 60));
    }
}
