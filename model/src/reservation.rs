//! Advance reservations: nodes set aside for some users or accounts over a time window,
//! as `scontrol create reservation` makes them.
//!
//! Example: `maint` on `n[1-2]` from 10:00 to 12:00 with flag MAINT. A job of another
//! user may run on n1 before 10:00 only if its time limit ends by then; a job submitted
//! with `--reservation=maint` by an allowed user runs only on n1–n2 and only inside the
//! window. A DAILY reservation moves one day ahead when its window has passed.

use crate::job::{JobSpec, Time};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ReservationFlag {
    Maint,
    IgnoreJobs,
    Flex,
    Daily,
    Weekly,
    Overlap,
    /// Slurm's REPLACE: while the reservation is active, its nodes that are down,
    /// drained or allocated to jobs are replaced by idle ones.
    Replace,
}

impl ReservationFlag {
    pub fn name(self) -> &'static str {
        match self {
            ReservationFlag::Maint => "MAINT",
            ReservationFlag::IgnoreJobs => "IGNORE_JOBS",
            ReservationFlag::Flex => "FLEX",
            ReservationFlag::Daily => "DAILY",
            ReservationFlag::Weekly => "WEEKLY",
            ReservationFlag::Overlap => "OVERLAP",
            ReservationFlag::Replace => "REPLACE",
        }
    }

    pub fn parse(text: &str) -> Option<ReservationFlag> {
        let up = text.trim().to_ascii_uppercase();
        [
            ReservationFlag::Maint,
            ReservationFlag::IgnoreJobs,
            ReservationFlag::Flex,
            ReservationFlag::Daily,
            ReservationFlag::Weekly,
            ReservationFlag::Overlap,
            ReservationFlag::Replace,
        ]
        .into_iter()
        .find(|f| f.name() == up)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reservation {
    pub name: String,
    pub start: Time,
    pub end: Time,
    /// Node names, expanded.
    pub nodes: Vec<String>,
    pub users: Vec<String>,
    pub accounts: Vec<String>,
    pub flags: Vec<ReservationFlag>,
    pub partition: String,
}

impl Reservation {
    pub fn has(&self, flag: ReservationFlag) -> bool {
        self.flags.contains(&flag)
    }

    /// The window in force at `now`: a DAILY or WEEKLY reservation whose window has
    /// passed repeats with the same length.
    pub fn window_at(&self, now: Time) -> (Time, Time) {
        let period = if self.has(ReservationFlag::Daily) {
            86_400
        } else if self.has(ReservationFlag::Weekly) {
            7 * 86_400
        } else {
            return (self.start, self.end);
        };
        if now < self.end {
            return (self.start, self.end);
        }
        let skipped = (now - self.end) / period + 1;
        (self.start + skipped * period, self.end + skipped * period)
    }

    /// ACTIVE while the window is open, INACTIVE before it.
    pub fn state_at(&self, now: Time) -> &'static str {
        let (start, end) = self.window_at(now);
        if start <= now && now < end {
            "ACTIVE"
        } else {
            "INACTIVE"
        }
    }

    /// Has the (non-repeating) reservation ended for good?
    pub fn expired(&self, now: Time) -> bool {
        !self.has(ReservationFlag::Daily) && !self.has(ReservationFlag::Weekly) && now >= self.end
    }

    /// May a job of this request use the reservation (`--reservation=name`)?
    pub fn admits(&self, spec: &JobSpec) -> bool {
        self.users
            .iter()
            .any(|u| *u == spec.user || u.parse::<u32>().ok() == Some(spec.uid))
            || (!spec.account.is_empty() && self.accounts.contains(&spec.account))
    }

    /// Does the reservation keep a job placed `within` a reservation (its name; empty:
    /// none) off `node` during `[from, to)`? Jobs inside the reservation are confined
    /// to its nodes and start in its window (they end by its end: `ends_jobs_at`);
    /// other jobs may not overlap it.
    pub fn blocks(&self, within: &str, node: &str, from: Time, to: Time) -> bool {
        let (start, end) = self.window_at(from);
        let inside = within == self.name;
        if inside {
            return !self.nodes.iter().any(|n| n == node) || from < start || from >= end;
        }
        self.nodes.iter().any(|n| n == node) && from < end && to > start
    }

    /// When a job that starts inside the reservation at `now` must end: the end of its
    /// window, as Slurm times such jobs out (ResvOverRun=0); `None` with FLEX, whose
    /// jobs may run past it.
    pub fn ends_jobs_at(&self, now: Time) -> Option<Time> {
        (!self.has(ReservationFlag::Flex)).then(|| self.window_at(now).1)
    }

    pub fn flags_text(&self) -> String {
        if self.flags.is_empty() {
            return "(null)".into();
        }
        self.flags
            .iter()
            .map(|f| f.name())
            .collect::<Vec<_>>()
            .join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(flags: Vec<ReservationFlag>) -> Reservation {
        Reservation {
            name: "maint".into(),
            start: 1000,
            end: 2000,
            nodes: vec!["n1".into(), "n2".into()],
            users: vec!["ada".into()],
            accounts: vec![],
            flags,
            partition: String::new(),
        }
    }

    fn request(user: &str, reservation: &str) -> JobSpec {
        JobSpec {
            user: user.into(),
            reservation: reservation.into(),
            ..JobSpec::default()
        }
    }

    #[test]
    fn outsiders_may_not_overlap_members_stay_inside() {
        let r = res(vec![]);
        let other = request("bob", "");
        assert!(!r.blocks("", "n1", 0, 1000), "ends as the window opens");
        assert!(r.blocks("", "n1", 500, 1500));
        assert!(!r.blocks("", "n3", 500, 1500));
        let member = request("ada", "maint");
        assert!(r.admits(&member));
        assert!(!r.admits(&other));
        assert!(r.blocks("maint", "n3", 1000, 1500), "only its nodes");
        assert!(r.blocks("maint", "n1", 900, 1500), "not before the window");
        assert!(!r.blocks("maint", "n1", 1000, 2000));
        // A job may start with a limit past the end; without FLEX it ends there.
        assert!(!r.blocks("maint", "n1", 1500, 2500));
        assert_eq!(r.ends_jobs_at(1500), Some(2000));
        assert_eq!(res(vec![ReservationFlag::Flex]).ends_jobs_at(1500), None);
    }

    #[test]
    fn daily_windows_repeat() {
        let r = res(vec![ReservationFlag::Daily]);
        assert_eq!(r.window_at(1500), (1000, 2000));
        assert_eq!(r.window_at(2000), (87_400, 88_400));
        assert_eq!(r.state_at(87_500), "ACTIVE");
        assert!(!r.expired(10_000_000));
        assert!(res(vec![]).expired(2000));
        assert_eq!(
            ReservationFlag::parse("ignore_jobs"),
            Some(ReservationFlag::IgnoreJobs)
        );
    }
}
