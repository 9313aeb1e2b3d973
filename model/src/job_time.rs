//! Facts derived from a job's times, defined once for every command and the scheduler:
//! how long it has run, how long it has left, and when it ends.
//!
//! Worked example: a job with a 60-minute limit starts at 10:00, is suspended from
//! 10:20 to 10:30 (`suspended_secs` = 600) and is suspended again at 10:40. At 10:45
//! its run time is 30 minutes (45 elapsed, 10 + 5 suspended), it has 30 minutes left,
//! and its expected end is 11:10 (start + limit + the time suspended before the current
//! suspension), which is what commands show. The scheduler asks when the job would end
//! if it resumed now ([`Job::limit_end`]): 11:15. Suspended time counts neither as run time nor against the limit, as in
//! Slurm's squeue TIME, sacct Elapsed and scontrol RunTime.

use crate::job::{Job, JobState, Time};

impl Job {
    /// Seconds the job has run by `now`, not counting the time it spent suspended (the
    /// current suspension included). 0 until it starts (gets an allocation); for an ended
    /// job, up to its end.
    pub fn run_secs(&self, now: Time) -> Time {
        let started = self.alloc.is_some() || self.start_time > 0;
        if self.state == JobState::Pending || !started {
            return 0;
        }
        let running = matches!(self.state, JobState::Running | JobState::Suspended);
        let end = if self.end_time > 0 && !running {
            self.end_time
        } else {
            now
        };
        (end - self.start_time - self.suspended_secs_at(end)).max(0)
    }

    /// Seconds the job has spent suspended by `now`: the earlier suspensions and the
    /// current one so far.
    pub fn suspended_secs_at(&self, now: Time) -> Time {
        let current = if self.state == JobState::Suspended && self.suspend_time > 0 {
            (now - self.suspend_time).max(0)
        } else {
            0
        };
        self.suspended_secs + current
    }

    /// When the time limit of a job that holds an allocation runs out, as seen at
    /// `now`: the start plus the limit, moved on by all the time it spent suspended,
    /// the current suspension counted up to `now` (as if it resumed then). This is
    /// when the scheduler expects its resources back. `None` without a limit.
    pub fn limit_end(&self, now: Time) -> Option<Time> {
        let limit = self.time_limit_secs()?;
        Some(
            self.start_time
                .saturating_add(limit)
                .saturating_add(self.suspended_secs_at(now)),
        )
    }

    /// Seconds left of the time limit at `now` (negative once past it); `None` for a
    /// job without a limit.
    pub fn time_left(&self, now: Time) -> Option<Time> {
        self.time_limit_secs()
            .map(|limit| limit - self.run_secs(now))
    }

    /// When the job ended, or is expected to, as commands show it (Slurm's EndTime):
    /// its end once it has one; [`Job::limit_end`] while it holds an allocation, which
    /// stands still during a suspension (the limit's end as the suspension began;
    /// Slurm moves it when the job resumes); the planned start plus the limit while it
    /// is pending with a planned start. `None` when nothing says (no limit, or pending
    /// without a plan).
    pub fn expected_end(&self) -> Option<Time> {
        if self.end_time > 0 {
            return Some(self.end_time);
        }
        match self.state {
            JobState::Running | JobState::Suspended | JobState::Completing => {
                self.limit_end(self.suspend_time)
            }
            JobState::Pending if self.planned_start > 0 => self
                .time_limit_secs()
                .map(|limit| self.planned_start + limit),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobSpec;

    const T10: Time = 36_000;
    const MIN: Time = 60;

    fn job(state: JobState, limit_min: Option<u32>) -> Job {
        let mut j = Job::new(1, JobSpec::default(), T10 - 100, limit_min);
        j.state = state;
        if state != JobState::Pending {
            j.start_time = T10;
        }
        j
    }

    #[test]
    fn the_worked_example() {
        let mut j = job(JobState::Suspended, Some(60));
        j.suspended_secs = 10 * MIN;
        j.suspend_time = T10 + 40 * MIN;
        let now = T10 + 45 * MIN;
        assert_eq!(j.run_secs(now), 30 * MIN);
        assert_eq!(j.time_left(now), Some(30 * MIN));
        assert_eq!(j.expected_end(), Some(T10 + 70 * MIN));
        // The scheduler counts the current suspension too: resumed now, it would end
        // at 11:15.
        assert_eq!(j.suspended_secs_at(now), 15 * MIN);
        assert_eq!(j.limit_end(now), Some(T10 + 75 * MIN));
        // Resumed at 10:45: the clock runs again from there.
        j.state = JobState::Running;
        j.suspended_secs += 5 * MIN;
        j.suspend_time = now;
        assert_eq!(j.run_secs(now + 10 * MIN), 40 * MIN);
        assert_eq!(j.expected_end(), Some(T10 + 75 * MIN));
        assert_eq!(j.limit_end(now + 10 * MIN), Some(T10 + 75 * MIN));
    }

    #[test]
    fn pending_running_and_ended_jobs() {
        let pending = job(JobState::Pending, Some(30));
        assert_eq!(pending.run_secs(T10 + 999), 0);
        assert_eq!(pending.time_left(T10), Some(30 * MIN));
        assert_eq!(pending.expected_end(), None);
        let mut planned = pending.clone();
        planned.planned_start = T10 + 5 * MIN;
        assert_eq!(planned.expected_end(), Some(T10 + 35 * MIN));

        let running = job(JobState::Running, Some(30));
        assert_eq!(running.run_secs(T10 + 100), 100);
        assert_eq!(running.time_left(T10 + 40 * MIN), Some(-10 * MIN));
        assert_eq!(running.expected_end(), Some(T10 + 30 * MIN));
        let unlimited = job(JobState::Running, None);
        assert_eq!(
            (unlimited.time_left(T10), unlimited.expected_end()),
            (None, None)
        );

        let mut done = job(JobState::Completed, Some(30));
        done.end_time = T10 + 7 * MIN;
        done.suspended_secs = MIN;
        assert_eq!(done.run_secs(T10 + 99 * MIN), 6 * MIN);
        assert_eq!(done.expected_end(), Some(T10 + 7 * MIN));
        // A clock behind the start reads as no run time, never negative.
        assert_eq!(running.run_secs(T10 - 5), 0);
        // A simulator's clock starts at 0: the allocation says the job started.
        let mut at_zero = job(JobState::Running, None);
        at_zero.start_time = 0;
        assert_eq!(at_zero.run_secs(50), 0);
        at_zero.alloc = Some(crate::job::Allocation::default());
        assert_eq!(at_zero.run_secs(50), 50);
    }
}
