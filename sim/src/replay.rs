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
use crate::pool::{Pool, Prediction};
use crate::swf::TraceJob;
use model::{
    Allocation, ClusterState, Event, Job, JobId, JobSpec, JobState, Node, NodeAllocation,
    NodeHealth, Partition, Time,
};
use sched::{Policy, SchedConfig};
use std::cmp::Reverse;
use std::collections::BTreeMap;
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
    let partition = Partition::open(PARTITION, vec![NODE.into()], true);
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
        mem_per_node_mb: t.mem_mb,
        gpus: t.gpus,
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

/// What a replay runs on.
pub struct Machine {
    pub state: ClusterState,
    /// The machine's CPUs (the denominator of the utilization).
    pub cpus: u32,
    /// One node of `cpus` CPUs and CPU-only jobs (an SWF replay): passes can be
    /// predicted (`pool`).
    pub pool: bool,
    /// Report the GPU fragmentation index over time.
    pub gpus: bool,
    /// Check the state's invariants (`ClusterState::check_invariants`) at every event
    /// time, and stop at the first broken one (slower: for tests).
    pub check: bool,
}

impl Machine {
    /// The SWF machine: one node of `procs` CPUs in one partition.
    pub fn pool(procs: u32) -> Machine {
        Machine {
            state: machine(procs),
            cpus: procs,
            pool: true,
            gpus: false,
            check: false,
        }
    }
}

/// Replays `jobs` (sorted by submit time) on `procs` CPUs. `every_event`: run a pass
/// over the whole queue at every event time (slower; the same starts).
pub fn run(
    jobs: &[TraceJob],
    procs: u32,
    policy: SimPolicy,
    every_event: bool,
    progress: Option<Progress>,
) -> Summary {
    replay(jobs, Machine::pool(procs), policy, every_event, progress)
}

/// The time limit the scheduler knows for a trace job, seconds (its estimate).
fn limit(t: &TraceJob) -> Time {
    t.estimate.clamp(0, i64::from(u32::MAX))
}

/// Replays `jobs` (sorted by submit time) on a machine.
///
/// How passes are run:
/// - `every_event`: one pass over the whole queue at every event time;
/// - FCFS and EASY on a pool machine: `pool::Pool` predicts each pass; a pass that
///   starts nothing is skipped, and the others are shown only the jobs they start and
///   the head of the queue (the plan is checked against the prediction; a difference
///   reruns the pass over the whole queue and counts a fallback);
/// - conservative on a pool machine: a pass at a time when no job ended is skipped
///   when none of the new jobs fits in the CPUs free now (only they could start);
/// - multifactor on a pool machine (its order moves with time): a pass is skipped when
///   no pending job fits in the CPUs free now, whatever the order;
/// - machines of several nodes: a pass at every event time.
///
/// In every mode, no pass runs while nothing waits.
pub fn replay(
    jobs: &[TraceJob],
    machine: Machine,
    policy: SimPolicy,
    every_event: bool,
    mut progress: Option<Progress>,
) -> Summary {
    let config = policy.sched_config();
    let Machine {
        mut state,
        cpus,
        pool: is_pool,
        gpus: track_gpus,
        check,
    } = machine;
    let predicted = is_pool && !every_event && matches!(policy, SimPolicy::Easy | SimPolicy::Fcfs);
    let may_skip = is_pool && !every_event;
    // Pool machines: CPUs asked → pending jobs asking for them.
    let mut sizes: BTreeMap<u32, usize> = BTreeMap::new();
    let easy = policy == SimPolicy::Easy;
    let mut starts: Vec<Time> = vec![-1; jobs.len()];
    // (end time, job index): ends in time order, ties by job index.
    let mut ends: BinaryHeap<Reverse<(Time, usize)>> = BinaryHeap::new();
    let mut digest = Digest::new();
    let mut next = 0;
    let mut passes = 0u64;
    let mut fallbacks = 0u64;
    let mut pool = Pool::new(cpus);
    // Pending jobs in queue order (submit time, then index: index order).
    let mut queue: Vec<usize> = Vec::new();
    // Predicted mode: the pending jobs whose records are in the state, in order.
    let mut shown: Vec<usize> = Vec::new();
    let mut busy = 0i64;
    let mut timeline: Vec<(Time, i64)> = Vec::new();
    let mut frag = Fragmentation::default();
    let mut folded = Folded::new(jobs.len());
    let job_of = |k: usize| (i64::from(jobs[k].procs), limit(&jobs[k]).max(1));
    loop {
        let t_submit = jobs.get(next).map(|j| j.submit);
        let t_end = ends.peek().map(|Reverse((t, _))| *t);
        let now = match (t_submit, t_end) {
            (None, None) => break,
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (Some(a), Some(b)) => a.min(b),
        };
        if track_gpus {
            frag.advance(now);
        }
        let mut ended = false;
        while let Some(&Reverse((t, i))) = ends.peek() {
            if t != now {
                break;
            }
            ends.pop();
            ended = true;
            pool.end(starts[i] + limit(&jobs[i]), jobs[i].procs);
            busy -= i64::from(jobs[i].procs);
            if predicted {
                folded.remove(&mut state, starts[i] + limit(&jobs[i]), jobs[i].procs);
                continue;
            }
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
                reason: model::Reason::None,
                cancelled_by: None,
            });
            // Finished jobs matter no more to the scheduler: keep the state small.
            state.remove_job(id);
        }
        let mut newcomer_fits = false;
        while next < jobs.len() && jobs[next].submit == now {
            newcomer_fits |= i64::from(jobs[next].procs) <= pool.free();
            if !predicted {
                let job = job_record(next as u32 + 1, &jobs[next]);
                state.apply(&Event::JobSubmitted { job: Box::new(job) });
            }
            queue.push(next);
            *sizes.entry(jobs[next].procs).or_default() += 1;
            next += 1;
        }
        let plan = if queue.is_empty() {
            // Nothing waits: nothing to start.
            None
        } else if predicted {
            let expect = pool.predict(&queue, job_of, now, easy);
            if expect.starts.is_empty() {
                None
            } else {
                show(&mut state, &mut shown, expect.visible(), jobs);
                let plan = sched::schedule(&state, now, &config);
                passes += 1;
                if agrees(&plan, &expect) {
                    Some(plan)
                } else {
                    fallbacks += 1;
                    show(&mut state, &mut shown, queue.clone(), jobs);
                    passes += 1;
                    Some(sched::schedule(&state, now, &config))
                }
            }
        } else if may_skip
            && ((!ended && !newcomer_fits && policy == SimPolicy::Conservative)
                || sizes
                    .first_key_value()
                    .is_some_and(|(&p, _)| i64::from(p) > pool.free()))
        {
            // Conservative: no job ended, so only the new jobs could start, and none
            // fits in the CPUs free now. Any policy: no pending job fits in them.
            None
        } else {
            passes += 1;
            Some(sched::schedule(&state, now, &config))
        };
        if let Some(plan) = plan
            && !plan.starts.is_empty()
        {
            for start in &plan.starts {
                let i = start.job_id as usize - 1;
                starts[i] = now;
                if let Some(n) = sizes.get_mut(&jobs[i].procs) {
                    *n -= 1;
                    if *n == 0 {
                        sizes.remove(&jobs[i].procs);
                    }
                }
                pool.start(now + limit(&jobs[i]), jobs[i].procs);
                busy += i64::from(jobs[i].procs);
                digest.start(start.job_id, now, &start.alloc);
                ends.push(Reverse((now + jobs[i].run, i)));
                if predicted {
                    state.remove_job(start.job_id);
                    folded.add(&mut state, now, now + limit(&jobs[i]), jobs[i].procs);
                }
            }
            if !predicted {
                // The controller's own code carries the plan out.
                plan.apply(&mut state, now);
            }
            queue.retain(|&k| starts[k] < 0);
            shown.retain(|&k| starts[k] < 0);
        }
        if check && let Err(broken) = state.check_invariants() {
            panic!("at time {now}: {broken}");
        }
        if timeline.last().is_none_or(|(_, b)| *b != busy) {
            timeline.push((now, busy));
        }
        if track_gpus {
            frag.set(sched::fragmentation::gpu_fragmentation(&state));
        }
        if let Some(p) = progress.as_mut() {
            p(next);
        }
    }
    let mut summary = Summary::new(jobs, &starts, cpus, digest, passes);
    summary.fallbacks = fallbacks;
    summary.busy = timeline;
    if track_gpus {
        summary.set_fragmentation(frag.finish());
    }
    summary
}

/// Predicted mode: the running jobs as the scheduler sees them, folded into one
/// running record per estimated end (start + time limit) that holds the CPUs of every
/// job ending then. The profile of a pass is made of exactly these (end, CPUs) steps,
/// so it is the same as with one record per job, and a pass costs per distinct end
/// rather than per running job. Folded records have ids above the trace's.
struct Folded {
    next_id: JobId,
    /// Estimated end → (record id, CPUs, start of the record).
    by_end: BTreeMap<Time, (JobId, u32, Time)>,
}

impl Folded {
    fn new(jobs: usize) -> Folded {
        Folded {
            next_id: jobs as JobId + 1,
            by_end: BTreeMap::new(),
        }
    }

    /// A job started at `now` holding `cpus` until `end`.
    fn add(&mut self, state: &mut ClusterState, now: Time, end: Time, cpus: u32) {
        let entry = self.by_end.entry(end).or_insert_with(|| {
            let id = self.next_id;
            self.next_id += 1;
            (id, 0, now)
        });
        entry.1 += cpus;
        state.insert_job(folded_record(*entry, end));
    }

    /// A job that held `cpus` until `end` ended.
    fn remove(&mut self, state: &mut ClusterState, end: Time, cpus: u32) {
        let Some(entry) = self.by_end.get_mut(&end) else {
            return;
        };
        entry.1 = entry.1.saturating_sub(cpus);
        if entry.1 == 0 {
            state.remove_job(entry.0);
            self.by_end.remove(&end);
        } else {
            state.insert_job(folded_record(*entry, end));
        }
    }
}

/// The running record of a folded group: from the start of its first job, with the
/// time limit that ends it at `end`.
fn folded_record((id, cpus, start): (JobId, u32, Time), end: Time) -> Job {
    let spec = JobSpec {
        name: "running".into(),
        user: "sim".into(),
        partition: PARTITION.into(),
        num_nodes: 1,
        num_tasks: 1,
        cpus_per_task: cpus,
        ..JobSpec::default()
    };
    let mut job = Job::new(id, spec, start, None);
    job.time_limit_s = Some((end - start).clamp(0, i64::from(u32::MAX)) as u32);
    job.state = JobState::Running;
    job.start_time = start;
    job.alloc = Some(Allocation {
        nodes: vec![NodeAllocation {
            node: NODE.into(),
            cpus,
            mem_mb: 0,
            gpus: Vec::new(),
            cpu_ids: Vec::new(),
        }],
    });
    job
}

/// Puts exactly the pending jobs `visible` (in queue order) into the state: records
/// of the others come out, missing ones go in.
fn show(state: &mut ClusterState, shown: &mut Vec<usize>, visible: Vec<usize>, jobs: &[TraceJob]) {
    let (mut a, mut b) = (0, 0);
    while a < shown.len() || b < visible.len() {
        let x = shown.get(a).copied().unwrap_or(usize::MAX);
        let y = visible.get(b).copied().unwrap_or(usize::MAX);
        if x < y {
            state.remove_job(x as u32 + 1);
            a += 1;
        } else if y < x {
            let job = job_record(y as u32 + 1, &jobs[y]);
            state.apply(&Event::JobSubmitted { job: Box::new(job) });
            b += 1;
        } else {
            a += 1;
            b += 1;
        }
    }
    *shown = visible;
}

/// Does the plan start exactly the predicted jobs, in order, and reserve the head at
/// the predicted shadow time?
fn agrees(plan: &sched::Plan, expect: &Prediction) -> bool {
    let same_starts = plan.starts.len() == expect.starts.len()
        && plan
            .starts
            .iter()
            .zip(&expect.starts)
            .all(|(s, &k)| s.job_id as usize == k + 1 && s.array_task.is_none());
    let same_shadow = match (expect.head, expect.shadow) {
        (Some(h), Some(s)) => plan
            .pending
            .get(&(h as u32 + 1))
            .is_some_and(|p| p.planned_start == s),
        _ => true,
    };
    same_starts && same_shadow
}

/// The time average, maximum and last value of the GPU fragmentation index.
#[derive(Debug, Default)]
struct Fragmentation {
    value: f64,
    since: Option<Time>,
    first: Option<Time>,
    weighted: f64,
    max: f64,
}

impl Fragmentation {
    /// Time moves to `now`: the current value held since the last change.
    fn advance(&mut self, now: Time) {
        if let Some(t) = self.since {
            self.weighted += self.value * (now - t) as f64;
        }
        self.first.get_or_insert(now);
        self.since = Some(now);
    }

    fn set(&mut self, value: f64) {
        self.value = value;
        self.max = self.max.max(value);
    }

    /// (time average, maximum, last value).
    fn finish(&self) -> (f64, f64, f64) {
        let span = match (self.first, self.since) {
            (Some(a), Some(b)) if b > a => (b - a) as f64,
            _ => 0.0,
        };
        let avg = if span > 0.0 {
            self.weighted / span
        } else {
            self.value
        };
        (avg, self.max, self.value)
    }
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
            ..TraceJob::default()
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
