//! Advance reservations as placement sees them: may a job use a node over a span of
//! time?
//!
//! Example: with `maint` holding n1 from 10:00 to 12:00, a job of another user with a
//! one-hour limit may start on n1 at 08:30 (it ends by 09:30) but not at 09:30; a job
//! inside `maint` may use only n1 and only from 10:00.

use model::{ClusterState, Job, Time};
use std::borrow::Cow;

/// May a job placed `within` a reservation (its name; empty: none) run on `node` from
/// `from` until `to` as far as reservations go? A job of several reservations
/// (`--reservation=a,b`) is placed within each in turn (`within_each`).
pub fn node_allowed(state: &ClusterState, within: &str, node: &str, from: Time, to: Time) -> bool {
    if !within.is_empty() && !state.reservations.contains_key(within) {
        return false;
    }
    !state
        .reservations
        .values()
        .any(|r| r.blocks(within, node, from, to))
}

/// The job as placement tries it in each of its reservations, in its order: itself
/// with none or one (nothing allocated), else a copy naming one of them (a job runs
/// in one reservation).
pub fn within_each(job: &Job) -> impl Iterator<Item = Cow<'_, Job>> {
    let several = job.spec.has_several_reservations();
    let itself = (!several).then_some(Cow::Borrowed(job));
    let copies = job
        .spec
        .reservations()
        .filter(move |_| several)
        .map(move |name| {
            let mut trial = job.clone();
            trial.spec.reservation = name.to_string();
            Cow::Owned(trial)
        });
    itself.into_iter().chain(copies)
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
            "",
            "n1",
            30_600,
            planned_end(&other, 30_600)
        ));
        assert!(!node_allowed(
            &s,
            "",
            "n1",
            34_200,
            planned_end(&other, 34_200)
        ));
        assert!(node_allowed(
            &s,
            "",
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
            "maint",
            "n2",
            36_000,
            planned_end(&member, 36_000)
        ));
        assert!(node_allowed(
            &s,
            "maint",
            "n1",
            36_000,
            planned_end(&member, 36_000)
        ));
        // A reservation that no longer exists admits nowhere.
        assert!(!node_allowed(&s, "gone", "n1", 0, 60));
    }

    #[test]
    fn a_job_of_several_reservations_is_tried_within_each() {
        let job = |list: &str| {
            let spec = JobSpec {
                reservation: list.into(),
                ..JobSpec::default()
            };
            Job::new(1, spec, 0, None)
        };
        let names = |j: &Job| -> Vec<String> {
            within_each(j).map(|t| t.spec.reservation.clone()).collect()
        };
        assert_eq!(names(&job("")), [""]);
        assert_eq!(names(&job("a")), ["a"]);
        assert_eq!(names(&job("b,a")), ["b", "a"]);
        // One reservation: the job itself, not a copy.
        let one = job("a");
        assert!(matches!(within_each(&one).next(), Some(Cow::Borrowed(_))));
    }
}
