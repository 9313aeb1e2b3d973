//! The replay: a trace's jobs go through `model::ClusterState::apply` and
//! `sched::schedule` in virtual time. No clock, no threads: the next event time is
//! the earlier of the next submit and the next job end.
//!
//! At each event time: jobs ending then end (their actual run time is over), then
//! jobs submitted then enter the queue, then one scheduling pass runs and its starts
//! are applied. A job that starts gets an end event at start + its actual run time;
//! the scheduler itself only knows the time limit (the trace's estimate), exactly as
//! in a real cluster.
//!
//! Under `multifactor`, each job's run is charged to its user's usage as it ends
//! (`sched::fairshare::charge`), so fair share follows the trace's users.
//!
//! The machine is one partition of one node with `procs` CPUs, each job asking for its
//! processor count in CPUs on that node, so that a job fits whenever enough CPUs are
//! free: the homogeneous single queue of the reference replays.
//!
//! A pass that cannot start anything is skipped (unless `every_event`): at a time
//! when no job ended, under a policy whose queue order does not change with time
//! (fcfs, easy, conservative), the jobs already waiting could not start at the
//! previous pass and the profile has not grown since, so only the new jobs could
//! start, and they cannot if none fits in the CPUs free now. The skipped pass would
//! have started nothing; a test checks that the digests agree.
//!
//! Example: P=4, job 1 (4 CPUs, runs 10 s, estimate 20 s) and job 2 (1 CPU, runs 5 s,
//! estimate 5 s) both submitted at 0: at 0 job 1 starts; job 2 waits (no CPU free). At
//! 10 job 1 ends and job 2 starts. Waits 0 and 10, bounded slowdowns 1 and 1.5.

use crate::metrics::{Digest, Summary};
use crate::swf::TraceJob;
use model::{ClusterState, Event, Job, JobSpec, JobState, Node, NodeHealth, Partition, Time};
use sched::{Policy, SchedConfig};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The policies `--policy` offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimPolicy {
    /// First come, first served, no backfill.
    Fcfs,
    /// FCFS order with EASY backfill.
    Easy,
    /// FCFS order with conservative backfill.
    Conservative,
    /// Drover's production policy: the priority module's order with EASY backfill.
    Multifactor,
}

impl SimPolicy {
    pub fn parse(text: &str) -> Option<SimPolicy> {
        match text {
            "fcfs" => Some(SimPolicy::Fcfs),
            "easy" => Some(SimPolicy::Easy),
            "conservative" => Some(SimPolicy::Conservative),
            "multifactor" => Some(SimPolicy::Multifactor),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SimPolicy::Fcfs => "fcfs",
            SimPolicy::Easy => "easy",
            SimPolicy::Conservative => "conservative",
            SimPolicy::Multifactor => "multifactor",
        }
    }

    /// The scheduler configuration this policy replays with.
    pub fn sched_config(self) -> SchedConfig {
        let mut config = SchedConfig::default();
        config.backfill.policy = match self {
            SimPolicy::Fcfs => Policy::Fcfs,
            SimPolicy::Easy | SimPolicy::Multifactor => Policy::Easy,
            SimPolicy::Conservative => Policy::Conservative,
        };
        config.backfill.max_reservations = 0;
        if self == SimPolicy::Multifactor {
            config.priority = sched::priority::PriorityParams::from_config(&production_priority());
        } else {
            // The reference policies take jobs in submit order.
            config.priority.basic = true;
        }
        config
    }
}

/// The `[priority]` weights of the sample configuration (`conf/drover.toml`): age
/// 1000 over 7 days, fair share 10000 (Fair Tree, 7-day half-life), partition 1000,
/// QOS 2000. Every trace user is a user of the implicit `default` account.
pub fn production_priority() -> model::config::PriorityConfig {
    model::config::PriorityConfig {
        weight_age: 1000,
        weight_fairshare: 10_000,
        weight_partition: 1000,
        weight_qos: 2000,
        ..model::config::PriorityConfig::default()
    }
}

pub const NODE: &str = "sim";
pub const PARTITION: &str = "batch";

/// The simulated machine: one node of `procs` CPUs in one partition.
pub fn machine(procs: u32) -> ClusterState {
    let mut node = Node::from_config(NODE, procs, 0, Vec::new());
    node.health = NodeHealth::Up;
    let partition = Partition {
        name: PARTITION.into(),
        nodes: vec![NODE.into()],
        is_default: true,
        max_time_min: None,
        default_time_min: None,
        max_nodes: 0,
        state: "UP".into(),
        priority_job_factor: 1,
        priority_tier: 1,
    };
    ClusterState::new(vec![node], vec![partition])
}

/// The job record a trace job becomes.
pub fn job_record(id: u32, t: &TraceJob) -> Job {
    let spec = JobSpec {
        name: format!("job{}", t.number),
        uid: t.user.max(0) as u32,
        gid: t.group.max(0) as u32,
        user: format!("user{}", t.user),
        partition: PARTITION.into(),
        num_nodes: 1,
        num_tasks: 1,
        cpus_per_task: t.procs,
        ..JobSpec::default()
    };
    let estimate = t.estimate.clamp(0, i64::from(u32::MAX));
    let minutes = (estimate as u64).div_ceil(60).min(u64::from(u32::MAX)) as u32;
    let mut job = Job::new(id, spec, t.submit, Some(minutes));
    job.time_limit_s = Some(estimate as u32);
    job
}

/// Called after each event time with the number of jobs submitted so far.
pub type Progress<'a> = &'a mut dyn FnMut(usize);

/// Replays `jobs` (sorted by submit time) on `procs` CPUs. `every_event`: run a pass
/// at every event time, even one that provably starts nothing.
pub fn run(
    jobs: &[TraceJob],
    procs: u32,
    policy: SimPolicy,
    every_event: bool,
    mut progress: Option<Progress>,
) -> Summary {
    let config = policy.sched_config();
    let mut state = machine(procs);
    let mut starts: Vec<Time> = vec![-1; jobs.len()];
    // (end time, job index): ends in time order, ties by job index.
    let mut ends: BinaryHeap<Reverse<(Time, usize)>> = BinaryHeap::new();
    let mut digest = Digest::new();
    let mut next = 0;
    let mut passes = 0u64;
    // CPUs not held by running jobs.
    let mut free = i64::from(procs);
    let may_skip = !every_event && policy != SimPolicy::Multifactor;
    loop {
        let t_submit = jobs.get(next).map(|j| j.submit);
        let t_end = ends.peek().map(|Reverse((t, _))| *t);
        let now = match (t_submit, t_end) {
            (None, None) => break,
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (Some(a), Some(b)) => a.min(b),
        };
        let mut ended = false;
        while let Some(&Reverse((t, i))) = ends.peek() {
            if t != now {
                break;
            }
            ends.pop();
            ended = true;
            free += i64::from(jobs[i].procs);
            let id = i as u32 + 1;
            if policy == SimPolicy::Multifactor
                && let Some(job) = state.job(id)
                && let Some(charge) = sched::fairshare::charge(&state, job, now, &config)
            {
                // Fair share: the run is charged to the user before the job ends.
                state.apply(&charge);
            }
            state.apply(&Event::JobEnded {
                job_id: id,
                state: JobState::Completed,
                exit_code: 0,
                exit_signal: 0,
                time: now,
                reason: "None".into(),
                cancelled_by: None,
            });
            // Finished jobs matter no more to the scheduler: keep the state small.
            state.remove_job(id);
        }
        let mut newcomer_fits = false;
        while next < jobs.len() && jobs[next].submit == now {
            newcomer_fits |= i64::from(jobs[next].procs) <= free;
            let job = job_record(next as u32 + 1, &jobs[next]);
            state.apply(&Event::JobSubmitted { job: Box::new(job) });
            next += 1;
        }
        if may_skip && !ended && !newcomer_fits {
            if let Some(p) = progress.as_mut() {
                p(next);
            }
            continue;
        }
        let plan = sched::schedule(&state, now, &config);
        passes += 1;
        for start in plan.starts {
            let i = start.job_id as usize - 1;
            starts[i] = now;
            free -= i64::from(jobs[i].procs);
            digest.start(start.job_id, now, &start.alloc);
            ends.push(Reverse((now + jobs[i].run, i)));
            state.apply(&Event::JobStarted {
                job_id: start.job_id,
                alloc: start.alloc,
                time: now,
                stdout_path: String::new(),
                stderr_path: String::new(),
            });
        }
        if let Some(p) = progress.as_mut() {
            p(next);
        }
    }
    Summary::new(jobs, &starts, procs, digest, passes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(number: u64, submit: i64, run: i64, procs: u32, estimate: i64) -> TraceJob {
        TraceJob {
            number,
            submit,
            run,
            procs,
            estimate,
            user: number as i64,
            group: 1,
            queue: 1,
        }
    }

    #[test]
    fn worked_example() {
        let jobs = [job(1, 0, 10, 4, 20), job(2, 0, 5, 1, 5)];
        for policy in [SimPolicy::Fcfs, SimPolicy::Easy, SimPolicy::Multifactor] {
            let s = run(&jobs, 4, policy, false, None);
            assert_eq!(s.starts, [0, 10], "{policy:?}");
            assert_eq!(s.avg_wait_s, 5.0);
            assert_eq!(s.avg_bsld, 1.25);
            assert_eq!(s.makespan_s, 15.0);
        }
    }

    #[test]
    fn easy_backfills_by_the_estimate_fcfs_does_not() {
        // P=4: job 1 holds 2 CPUs (estimate 100); job 2 needs 4; job 3 (2 CPUs,
        // estimate 50) ends before job 2 can start, so EASY starts it at once.
        let jobs = [
            job(1, 0, 100, 2, 100),
            job(2, 1, 10, 4, 10),
            job(3, 2, 50, 2, 50),
        ];
        let easy = run(&jobs, 4, SimPolicy::Easy, false, None);
        assert_eq!(easy.starts, [0, 100, 2]);
        let fcfs = run(&jobs, 4, SimPolicy::Fcfs, false, None);
        assert_eq!(fcfs.starts, [0, 100, 110]);
        // Same input, same digest; different decisions, different digests.
        assert_eq!(
            easy.digest,
            run(&jobs, 4, SimPolicy::Easy, true, None).digest
        );
        assert_ne!(easy.digest, fcfs.digest);
    }
}
