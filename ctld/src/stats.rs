//! The controller's statistics, as `sdiag` reports them: jobs submitted, started and
//! ended (completed, canceled, failed) and the scheduling passes' times, counted since
//! the controller started or an operator last reset them (`sdiag --reset`). As Slurm's,
//! they live in memory only: a restart starts them afresh.
//!
//! The state owner counts the events of each committed turn (`count`) and times each
//! pass (`pass`); the services read them (`read`) from any thread.

use model::{Event, JobState, Time};
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// The counters, shared by the state owner and the services.
#[derive(Debug, Default)]
pub struct Statistics {
    since: AtomicI64,
    submitted: AtomicU32,
    started: AtomicU32,
    completed: AtomicU32,
    canceled: AtomicU32,
    failed: AtomicU32,
    cycle_last_us: AtomicU64,
    cycle_max_us: AtomicU64,
    cycles: AtomicU64,
    cycle_sum_us: AtomicU64,
    cycle_when: AtomicI64,
    queue_length: AtomicU32,
}

/// The counters as read at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub since: Time,
    pub submitted: u32,
    pub started: u32,
    pub completed: u32,
    pub canceled: u32,
    pub failed: u32,
    pub cycle_last_us: u64,
    pub cycle_max_us: u64,
    pub cycles: u64,
    pub cycle_sum_us: u64,
    pub cycle_when: Time,
    pub queue_length: u32,
}

impl Statistics {
    /// Counters at zero since `now`.
    pub fn new(now: Time) -> Statistics {
        let stats = Statistics::default();
        stats.since.store(now, Relaxed);
        stats
    }

    /// Counts what a committed turn did: submits, starts and ends by how the job ended
    /// (a cancel is counted as canceled; a failure, a time limit, a node failure, an
    /// out-of-memory kill, a preemption or a deadline as failed).
    pub fn count(&self, events: &[Event]) {
        for event in events {
            let counter = match event {
                Event::JobSubmitted { .. } => &self.submitted,
                Event::JobStarted { .. } => &self.started,
                Event::JobEnded { state, .. } => match state {
                    JobState::Completed => &self.completed,
                    JobState::Cancelled => &self.canceled,
                    _ => &self.failed,
                },
                _ => continue,
            };
            counter.fetch_add(1, Relaxed);
        }
    }

    /// Notes a scheduling pass that took `took` over `queue_length` queued jobs and
    /// ended at `now`.
    pub fn pass(&self, took: Duration, queue_length: usize, now: Time) {
        let us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.cycle_last_us.store(us, Relaxed);
        self.cycle_max_us.fetch_max(us, Relaxed);
        self.cycles.fetch_add(1, Relaxed);
        self.cycle_sum_us.fetch_add(us, Relaxed);
        self.cycle_when.store(now, Relaxed);
        self.queue_length
            .store(u32::try_from(queue_length).unwrap_or(u32::MAX), Relaxed);
    }

    /// Every counter back to zero, counting again from `now`.
    pub fn reset(&self, now: Time) {
        for counter in [
            &self.submitted,
            &self.started,
            &self.completed,
            &self.canceled,
            &self.failed,
            &self.queue_length,
        ] {
            counter.store(0, Relaxed);
        }
        for counter in [
            &self.cycle_last_us,
            &self.cycle_max_us,
            &self.cycles,
            &self.cycle_sum_us,
        ] {
            counter.store(0, Relaxed);
        }
        self.cycle_when.store(0, Relaxed);
        self.since.store(now, Relaxed);
    }

    pub fn read(&self) -> Counts {
        Counts {
            since: self.since.load(Relaxed),
            submitted: self.submitted.load(Relaxed),
            started: self.started.load(Relaxed),
            completed: self.completed.load(Relaxed),
            canceled: self.canceled.load(Relaxed),
            failed: self.failed.load(Relaxed),
            cycle_last_us: self.cycle_last_us.load(Relaxed),
            cycle_max_us: self.cycle_max_us.load(Relaxed),
            cycles: self.cycles.load(Relaxed),
            cycle_sum_us: self.cycle_sum_us.load(Relaxed),
            cycle_when: self.cycle_when.load(Relaxed),
            queue_length: self.queue_length.load(Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(job_id: u32, state: JobState) -> Event {
        Event::JobEnded {
            job_id,
            state,
            exit_code: 0,
            exit_signal: 0,
            time: 0,
            reason: model::Reason::None,
            cancelled_by: None,
        }
    }

    #[test]
    fn ends_are_counted_by_how_jobs_ended_and_a_reset_clears_all() {
        let stats = Statistics::new(100);
        stats.count(&[
            ended(1, JobState::Completed),
            ended(2, JobState::Cancelled),
            ended(3, JobState::Timeout),
            ended(4, JobState::Failed),
        ]);
        stats.pass(Duration::from_micros(40), 3, 110);
        stats.pass(Duration::from_micros(20), 2, 120);
        let c = stats.read();
        assert_eq!(
            (c.completed, c.canceled, c.failed, c.submitted),
            (1, 1, 2, 0)
        );
        assert_eq!(
            (c.cycle_last_us, c.cycle_max_us, c.cycles, c.cycle_sum_us),
            (20, 40, 2, 60)
        );
        assert_eq!((c.cycle_when, c.queue_length, c.since), (120, 2, 100));
        stats.reset(130);
        assert_eq!(
            stats.read(),
            Counts {
                since: 130,
                ..Counts::default()
            }
        );
    }
}
