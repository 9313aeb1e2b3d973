//! The order in which pending jobs are considered: Slurm's multifactor priority, with
//! partition tiers first.
//!
//! ```text
//! priority = site + W_age·age + W_fs·fairshare + W_size·job_size + W_part·partition
//!          + W_qos·qos + W_assoc·assoc + Σ W_tres·tres − nice
//! ```
//!
//! Every factor is in [0, 1]. `age` grows from the time the job became eligible (its
//! submit, `--begin` time or the end of the jobs it depends on) to 1 at `max_age`, and
//! is 0 while the job is held, waits for a begin time or a dependency. `fairshare` is
//! its association's factor (`fairshare`). `job_size` is the mean of its share of the
//! cluster's nodes and CPUs (`1 −` that with `favor_small`). `partition`, `qos` and
//! `assoc` are the partition's `priority_job_factor`, the QOS priority and the account
//! priority, each over the largest configured. A TRES factor is the job's request over
//! the partition's total. The sum is truncated to an integer, at least 1; a held job
//! has priority 0, and a job whose priority an operator fixed (`--priority`,
//! `scontrol update Priority=`) has that one.
//!
//! The queue is sorted by (partition `priority_tier` desc, priority desc, submit time,
//! job id). With `type = "basic"` it is (tier desc, submit time, job id), a fixed
//! priority (below) coming before those it exceeds.
//!
//! Worked example: weights age 1000, job size 100, QOS 2000; `max_age` 1 day; a
//! 64-CPU, 2-node cluster. Job 1 (1 CPU, QOS normal, pending 12 h) gets
//! 1000·0.5 + 100·(1/2 + 1/64)/2 + 0 = 525; job 2 (32 CPUs, QOS high with the top QOS
//! priority, pending 1 h) gets 41 + 100·(1/2 + 32/64)/2 + 2000 = 2091, so job 2 goes
//! first; with `favor_small` job 1's size factor is 0.742 instead of 0.258.

use crate::SchedConfig;
use crate::dependency::{self, DepStatus, Kind};
use crate::fairshare::{Algorithm, ShareTree};
use model::config::PriorityConfig;
pub use model::factors::Factors;
use model::tres::{self, TresCounts, TresWeights};
use model::{ClusterState, Job, Time, units};
use std::collections::BTreeMap;

/// `[priority]`, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct PriorityParams {
    /// `type = "basic"`: submit order (within tiers), no factors.
    pub basic: bool,
    pub weight_age: u32,
    pub weight_fairshare: u32,
    pub weight_job_size: u32,
    pub weight_partition: u32,
    pub weight_qos: u32,
    pub weight_assoc: u32,
    /// The text of `weight_tres`, as `sprio -w` shows it.
    pub weight_tres_text: String,
    pub weight_tres: TresWeights,
    pub max_age_s: Time,
    pub favor_small: bool,
    /// 0: usage never decays.
    pub half_life_s: u64,
    pub algorithm: Algorithm,
    pub billing_weights: TresWeights,
}

impl Default for PriorityParams {
    fn default() -> Self {
        PriorityParams::from_config(&PriorityConfig::default())
    }
}

impl PriorityParams {
    /// From a checked config (unparsable values fall back to the defaults).
    pub fn from_config(c: &PriorityConfig) -> PriorityParams {
        let secs = |t: &str, default: u64| {
            units::parse_duration_secs(t)
                .ok()
                .flatten()
                .unwrap_or(default)
        };
        PriorityParams {
            basic: c.kind == "basic",
            weight_age: c.weight_age,
            weight_fairshare: c.weight_fairshare,
            weight_job_size: c.weight_job_size,
            weight_partition: c.weight_partition,
            weight_qos: c.weight_qos,
            weight_assoc: c.weight_assoc,
            weight_tres_text: c.weight_tres.clone(),
            weight_tres: tres::parse_weights(&c.weight_tres).unwrap_or_default(),
            max_age_s: secs(&c.max_age, 7 * 86400) as Time,
            favor_small: c.favor_small,
            half_life_s: secs(&c.decay_half_life, 7 * 86400),
            algorithm: Algorithm::parse(&c.fairshare).unwrap_or_default(),
            billing_weights: tres::parse_weights(&c.billing_weights).unwrap_or_default(),
        }
    }
}

/// What computing factors needs once per pass.
pub struct Context<'a> {
    state: &'a ClusterState,
    config: &'a SchedConfig,
    now: Time,
    shares: Option<ShareTree>,
    cluster_nodes: f64,
    cluster_cpus: f64,
    max_part_factor: u32,
    max_qos: u32,
    max_assoc: u32,
    /// Per partition: its total TRES, for TRES factors.
    part_tres: BTreeMap<&'a str, TresCounts>,
    /// The weighted TRES, in display order.
    tres_names: Vec<String>,
}

impl<'a> Context<'a> {
    pub fn new(state: &'a ClusterState, now: Time, config: &'a SchedConfig) -> Context<'a> {
        let p = &config.priority;
        let shares =
            (!p.basic && p.weight_fairshare > 0).then(|| ShareTree::compute(state, now, config));
        Self::with_shares(state, now, config, shares)
    }

    /// Like `new`, with the fair-share tree always computed (for `sprio`, which shows
    /// it even when its weight is 0).
    pub fn with_share_tree(
        state: &'a ClusterState,
        now: Time,
        config: &'a SchedConfig,
    ) -> Context<'a> {
        let shares = Some(ShareTree::compute(state, now, config));
        Self::with_shares(state, now, config, shares)
    }

    fn with_shares(
        state: &'a ClusterState,
        now: Time,
        config: &'a SchedConfig,
        shares: Option<ShareTree>,
    ) -> Context<'a> {
        let part_tres = if config.priority.weight_tres.is_empty() {
            BTreeMap::new()
        } else {
            state
                .partitions
                .iter()
                .map(|p| {
                    let mut t = TresCounts::new();
                    for node in p.nodes.iter().filter_map(|n| state.nodes.get(n)) {
                        *t.entry("cpu".into()).or_default() += u64::from(node.cpus);
                        *t.entry("mem".into()).or_default() += node.memory_mb;
                        *t.entry("node".into()).or_default() += 1;
                        for g in &node.gpus {
                            for name in model::tres::device_tres(&g.gpu_type) {
                                *t.entry(name).or_default() += 1;
                            }
                        }
                    }
                    let billing = tres::billing(&t, &config.priority.billing_weights);
                    t.insert("billing".into(), billing as u64);
                    (p.name.as_str(), t)
                })
                .collect()
        };
        Context {
            state,
            config,
            now,
            shares,
            cluster_nodes: state.nodes.len() as f64,
            cluster_cpus: state.nodes.values().map(|n| f64::from(n.cpus)).sum(),
            max_part_factor: state
                .partitions
                .iter()
                .map(|p| p.priority_job_factor)
                .max()
                .unwrap_or(0),
            max_qos: config.assocs.max_qos_priority(),
            max_assoc: config.assocs.max_assoc_priority(),
            part_tres,
            tres_names: tres::sorted_names(&config.priority.weight_tres)
                .into_iter()
                .map(String::from)
                .collect(),
        }
    }

    /// The fair-share tree, when it was computed.
    pub fn share_tree(&self) -> Option<&ShareTree> {
        self.shares.as_ref()
    }

    /// The factors and priority of a job at the context's time (a job that already
    /// started is valued as of its start).
    pub fn factors(&self, job: &Job) -> Factors {
        let assocs = &self.config.assocs;
        let v = self.values(job);
        Factors {
            job_id: job.id,
            partition: job.spec.partition.clone(),
            user: job.spec.user.clone(),
            uid: job.spec.uid,
            account: assocs.account_of(&job.spec).to_string(),
            qos: assocs.qos_of(&job.spec).to_string(),
            age: v.age,
            fairshare: v.fairshare,
            job_size: v.job_size,
            partition_factor: v.partition,
            qos_factor: v.qos,
            assoc: v.assoc,
            tres: self.tres_names.iter().cloned().zip(v.tres).collect(),
            nice: i64::from(job.spec.nice),
            site: i64::from(job.spec.site_factor),
            tier: v.tier,
            priority: v.priority,
        }
    }

    /// The partition tier and the priority of a job (what the queue is sorted by).
    pub fn rank(&self, job: &Job) -> (u32, u32) {
        let v = self.values(job);
        (v.tier, v.priority)
    }

    fn values(&self, job: &Job) -> Values {
        let p = &self.config.priority;
        let assocs = &self.config.assocs;
        let spec = &job.spec;
        let partition = self.state.partition(&spec.partition);
        let mut v = Values {
            tier: partition.map(|p| p.priority_tier).unwrap_or(0),
            ..Values::default()
        };
        if p.basic {
            v.priority = match (job.held, spec.priority) {
                (true, _) => 0,
                (false, Some(fixed)) => fixed,
                (false, None) => (u32::MAX >> 4).saturating_sub(job.id),
            };
            return v;
        }
        let at = if job.start_time > 0 && !job.is_pending() {
            job.start_time.min(self.now)
        } else {
            self.now
        };
        if p.weight_age > 0 {
            v.age = match eligible_since(self.state, job, at) {
                Some(_) if p.max_age_s <= 0 => 1.0,
                Some(since) => ((at - since).max(0) as f64 / p.max_age_s as f64).min(1.0),
                None => 0.0,
            };
        }
        let account = assocs.account_of(spec);
        if let Some(shares) = &self.shares {
            v.fairshare = shares.factor(account, &spec.user);
        }
        if self.cluster_nodes > 0.0 && self.cluster_cpus > 0.0 {
            let nodes = spec.num_nodes.max(1);
            let per_node = if spec.ntasks_per_node > 0 {
                spec.ntasks_per_node * spec.cpus_per_task.max(1)
            } else {
                spec.total_cpus().div_ceil(nodes)
            };
            let cpus = f64::from(per_node) * f64::from(nodes);
            let size = ((f64::from(nodes) / self.cluster_nodes + cpus / self.cluster_cpus) / 2.0)
                .clamp(0.0, 1.0);
            v.job_size = if p.favor_small { 1.0 - size } else { size };
        }
        if self.max_part_factor > 0 {
            v.partition = f64::from(partition.map(|p| p.priority_job_factor).unwrap_or(0))
                / f64::from(self.max_part_factor);
        }
        if self.max_qos > 0 {
            let prio = assocs
                .qos
                .get(assocs.qos_of(spec))
                .map(|q| q.priority)
                .unwrap_or(0);
            v.qos = f64::from(prio) / f64::from(self.max_qos);
        }
        if self.max_assoc > 0 {
            v.assoc =
                f64::from(assocs.assoc_priority(account, &spec.user)) / f64::from(self.max_assoc);
        }
        let mut tres_sum = 0.0;
        if !self.tres_names.is_empty() {
            let request = tres::job_request(spec);
            let total = self.part_tres.get(spec.partition.as_str());
            for name in &self.tres_names {
                let want = if name == "billing" {
                    tres::billing(&request, &p.billing_weights)
                } else {
                    request.get(name).copied().unwrap_or(0) as f64
                };
                let have = total.and_then(|t| t.get(name)).copied().unwrap_or(0) as f64;
                let factor = if have > 0.0 {
                    (want / have).min(1.0)
                } else {
                    0.0
                };
                tres_sum += p.weight_tres.get(name).copied().unwrap_or(0.0) * factor;
                v.tres.push(factor);
            }
        }
        let sum = f64::from(spec.site_factor)
            + f64::from(p.weight_age) * v.age
            + f64::from(p.weight_fairshare) * v.fairshare
            + f64::from(p.weight_job_size) * v.job_size
            + f64::from(p.weight_partition) * v.partition
            + f64::from(p.weight_qos) * v.qos
            + f64::from(p.weight_assoc) * v.assoc
            + tres_sum
            - f64::from(spec.nice);
        v.priority = match (job.held, spec.priority) {
            (true, _) => 0,
            (false, Some(fixed)) => fixed,
            (false, None) => sum.clamp(1.0, f64::from(u32::MAX)) as u32,
        };
        v
    }
}

/// A job's factors without names (the hot path of the queue order).
#[derive(Debug, Default)]
struct Values {
    age: f64,
    fairshare: f64,
    job_size: f64,
    partition: f64,
    qos: f64,
    assoc: f64,
    /// In the order of `Context::tres_names`.
    tres: Vec<f64>,
    tier: u32,
    priority: u32,
}

/// When the job became eligible, as of `at`: `None` while it is held or waits for a
/// begin time or a dependency. After a dependency is satisfied, the time it was (the
/// latest start or end among the jobs it named).
pub fn eligible_since(state: &ClusterState, job: &Job, at: Time) -> Option<Time> {
    if job.held || job.spec.begin_time > at {
        return None;
    }
    let mut since = job.submit_time.max(job.spec.begin_time);
    if !job.spec.dependency.is_empty() {
        if job.is_pending() && dependency::evaluate(state, job) != DepStatus::Satisfied {
            return None;
        }
        if let Ok(dep) = dependency::parse(&job.spec.dependency) {
            let mut times = Vec::new();
            for clause in &dep.clauses {
                let mut latest: Time = 0;
                for id in &clause.jobs {
                    // The job, or every task of the array it names.
                    let is_array = state.job(*id).is_some_and(|j| j.array_job_id == *id);
                    let records = state
                        .jobs
                        .range(*id..)
                        .map(|(_, j)| j.as_ref())
                        .take_while(|j| is_array || j.id == *id)
                        .filter(|j| j.id == *id || (is_array && j.array_job_id == *id));
                    for other in records {
                        let t = if clause.kind == Kind::After {
                            other.start_time
                        } else {
                            other.end_time
                        };
                        latest = latest.max(t);
                    }
                }
                times.push(latest);
            }
            let dep_time = if dep.any {
                times.into_iter().filter(|t| *t > 0).min().unwrap_or(0)
            } else {
                times.into_iter().max().unwrap_or(0)
            };
            since = since.max(dep_time);
        }
    }
    Some(since)
}

/// Pending jobs, highest priority first, each with its priority value: by (partition
/// tier desc, priority desc, submit time, job id).
pub fn queue_order<'a>(
    state: &'a ClusterState,
    now: Time,
    config: &SchedConfig,
) -> Vec<(&'a Job, f64)> {
    ordered(state, now, config, true)
}

/// As `queue_order`, without held jobs: what a pass may start. A queue of 100k held
/// jobs then costs a pass nothing but their (unchanged) hold reasons.
pub fn unheld_queue_order<'a>(
    state: &'a ClusterState,
    now: Time,
    config: &SchedConfig,
) -> Vec<(&'a Job, f64)> {
    ordered(state, now, config, false)
}

fn ordered<'a>(
    state: &'a ClusterState,
    now: Time,
    config: &SchedConfig,
    with_held: bool,
) -> Vec<(&'a Job, f64)> {
    let ctx = Context::new(state, now, config);
    let jobs: Box<dyn Iterator<Item = &Job>> = if with_held {
        Box::new(state.pending_jobs())
    } else {
        Box::new(state.queued_jobs())
    };
    let mut queue: Vec<(&Job, u32, u32)> = jobs
        .map(|j| {
            let (tier, priority) = ctx.rank(j);
            (j, tier, priority)
        })
        .collect();
    let basic = config.priority.basic;
    queue.sort_by(|a, b| {
        // Under `basic`, submit order, except for priorities an operator fixed.
        let fixed = a.0.spec.priority.is_some() || b.0.spec.priority.is_some();
        b.1.cmp(&a.1)
            .then(if basic && !fixed {
                std::cmp::Ordering::Equal
            } else {
                b.2.cmp(&a.2)
            })
            .then(a.0.submit_time.cmp(&b.0.submit_time))
            .then(a.0.id.cmp(&b.0.id))
    });
    queue
        .into_iter()
        .map(|(j, _, p)| (j, f64::from(p)))
        .collect()
}

/// `scontrol top`: the priorities that put the `listed` jobs, in their order, at the
/// top of their `group` (the pending jobs of one user, partition, account and QOS,
/// with their priorities now), as Slurm's: the group's priorities, highest first, are
/// given out again, first to the listed jobs, then to the others in their order; each
/// is made lower than the one before it, so that ties are broken the listed way.
///
/// Example: jobs 1, 2, 3 all at 500; `top 3,2` gives 3 → 500, 2 → 499, 1 → 498; then
/// `top 1` gives 1 → 500, 3 → 499, 2 → 498.
pub fn top_priorities(
    listed: &[model::JobId],
    group: &[(model::JobId, u32)],
) -> Vec<(model::JobId, u32)> {
    let mut priorities: Vec<u32> = group.iter().map(|&(_, p)| p).collect();
    priorities.sort_unstable_by(|a, b| b.cmp(a));
    let mut order: Vec<model::JobId> = Vec::with_capacity(group.len());
    for id in listed {
        if group.iter().any(|(g, _)| g == id) && !order.contains(id) {
            order.push(*id);
        }
    }
    let mut rest: Vec<(model::JobId, u32)> = group
        .iter()
        .filter(|(id, _)| !order.contains(id))
        .copied()
        .collect();
    rest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    order.extend(rest.into_iter().map(|(id, _)| id));
    let mut out: Vec<(model::JobId, u32)> = Vec::with_capacity(order.len());
    for (id, p) in order.into_iter().zip(priorities) {
        let p = match out.last() {
            Some(&(_, before)) => p.min(before.saturating_sub(1)).max(1),
            None => p,
        };
        out.push((id, p));
    }
    out
}

/// The factors of the pending jobs `sprio` shows, in job id order: as Slurm, not held
/// ones (priority 0) nor ones whose begin time is still ahead.
pub fn pending_factors(state: &ClusterState, now: Time, config: &SchedConfig) -> Vec<Factors> {
    let ctx = Context::with_share_tree(state, now, config);
    state
        .pending_jobs()
        .filter(|j| !j.held && j.spec.begin_time <= now)
        .map(|j| ctx.factors(j))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::{Config, Event, JobSpec, JobState};

    const BASE: &str = r#"
[[nodes]]
names = "n[1-2]"
cpus = 32
memory = "64G"
gpus = 4
gpu_type = "h100"
[[partitions]]
name = "batch"
nodes = "n[1-2]"
[[partitions]]
name = "prio"
nodes = "n[1-2]"
priority_job_factor = 4
[[partitions]]
name = "urgent"
nodes = "n1"
priority_tier = 2
[[qos]]
name = "high"
priority = 100
[[qos]]
name = "low"
priority = 25
"#;

    fn setup(priority: &str) -> (ClusterState, SchedConfig) {
        let config = Config::parse(&format!("{BASE}\n[priority]\n{priority}"), "t").unwrap();
        let mut state = ClusterState::new(config.node_list(), config.partition_list());
        for n in state.nodes.values_mut() {
            n.health = model::NodeHealth::Up;
        }
        (state, SchedConfig::from_config(&config))
    }

    /// Submits job `id` at time `at` with its spec changed by `f`.
    fn submit(s: &mut ClusterState, id: u32, at: Time, f: impl FnOnce(&mut JobSpec)) {
        let mut spec = JobSpec {
            partition: "batch".into(),
            user: "u".into(),
            num_tasks: 1,
            cpus_per_task: 1,
            ..JobSpec::default()
        };
        f(&mut spec);
        s.apply(&Event::JobSubmitted {
            job: Box::new(Job::new(id, spec, at, Some(60))),
        });
    }

    fn order(s: &ClusterState, now: Time, c: &SchedConfig) -> String {
        queue_order(s, now, c)
            .iter()
            .map(|(j, p)| format!("{}:{p}", j.id))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn worked_example() {
        let (mut s, c) =
            setup("weight_age = 1000\nweight_job_size = 100\nweight_qos = 2000\nmax_age = \"1-0\"");
        submit(&mut s, 1, 0, |_| {});
        submit(&mut s, 2, 11 * 3600, |j| {
            j.cpus_per_task = 32;
            j.qos = "high".into();
        });
        assert_eq!(order(&s, 12 * 3600, &c), "2:2091 1:525");
        let (_, small) = setup("weight_job_size = 100\nfavor_small = true");
        let f = Context::new(&s, 12 * 3600, &small).factors(s.job(1).unwrap());
        assert!((f.job_size - (1.0 - (0.5 + 1.0 / 64.0) / 2.0)).abs() < 1e-12);
    }

    #[test]
    fn zero_weights_keep_submit_order_and_ties_break_by_id() {
        let (mut s, c) = setup("");
        submit(&mut s, 3, 10, |_| {});
        submit(&mut s, 1, 12, |_| {});
        submit(&mut s, 2, 12, |_| {});
        assert_eq!(order(&s, 100, &c), "3:1 1:1 2:1");
        let (_, basic) = setup("type = \"basic\"\nweight_age = 1000");
        let q: Vec<u32> = queue_order(&s, 100, &basic)
            .iter()
            .map(|(j, _)| j.id)
            .collect();
        assert_eq!(q, vec![3, 1, 2]);
    }

    #[test]
    fn age_is_capped_and_stops_while_held_or_waiting() {
        let (mut s, c) = setup("weight_age = 1000\nmax_age = \"10:00\"");
        submit(&mut s, 1, 0, |_| {}); // 10 min old: capped at 1
        submit(&mut s, 2, 1000, |_| {}); // 100 s old
        submit(&mut s, 3, 0, |j| j.hold = true);
        submit(&mut s, 4, 0, |j| j.begin_time = 2000);
        submit(&mut s, 5, 0, |j| j.dependency = "afterok:2".into());
        submit(&mut s, 6, 0, |j| j.begin_time = 600);
        assert_eq!(order(&s, 1100, &c), "1:1000 6:833 2:166 4:1 5:1 3:0");
        // Job 5's age starts when job 2 completes.
        s.apply(&Event::JobEnded {
            job_id: 2,
            state: JobState::Completed,
            exit_code: 0,
            exit_signal: 0,
            time: 1200,
            reason: model::Reason::None,
            cancelled_by: None,
        });
        let f = Context::new(&s, 1500, &c).factors(s.job(5).unwrap());
        assert_eq!(f.priority, 500);
    }

    #[test]
    fn top_puts_the_listed_jobs_first_in_their_order_and_breaks_ties() {
        let tied = [(1, 500), (2, 500), (3, 500)];
        let once = top_priorities(&[3, 2], &tied);
        assert_eq!(once, [(3, 500), (2, 499), (1, 498)]);
        let mut again = top_priorities(&[1], &once);
        again.sort();
        assert_eq!(again, [(1, 500), (2, 498), (3, 499)]);
        // The group's priorities are given out again; a job not in it is left out.
        let spread = [(1, 900), (2, 100), (3, 50)];
        assert_eq!(
            top_priorities(&[3, 9], &spread),
            [(3, 900), (1, 100), (2, 50)]
        );
    }

    #[test]
    fn partitions_tiers_qos_nice_and_tres() {
        let (mut s, c) = setup(
            "weight_partition = 1000\nweight_qos = 400\nweight_tres = \"gres/gpu=800,cpu=64\"",
        );
        submit(&mut s, 1, 0, |_| {});
        submit(&mut s, 2, 0, |j| j.partition = "prio".into());
        submit(&mut s, 3, 0, |j| j.qos = "low".into());
        submit(&mut s, 4, 0, |j| {
            j.qos = "high".into();
            j.nice = 150;
        });
        submit(&mut s, 5, 0, |j| j.partition = "urgent".into());
        submit(&mut s, 6, 0, |j| j.gpus = 4);
        // 1: 1000/4 + 64·1/64 = 251; 2: 1000 + 1; 3: 250 + 100 + 1; 4: 250 + 400 + 1 − 150;
        // 5 is alone in tier 2 (n1 only: 1000/4 + 64/32); 6: 250 + 800·4/8 + 1.
        assert_eq!(order(&s, 10, &c), "5:252 2:1001 6:651 4:501 3:351 1:251");
        let f = Context::new(&s, 10, &c).factors(s.job(6).unwrap());
        assert_eq!(
            f.tres,
            vec![
                ("cpu".to_string(), 1.0 / 64.0),
                ("gres/gpu".to_string(), 0.5)
            ]
        );
    }

    #[test]
    fn fair_share_orders_users_by_past_usage() {
        let (mut s, c) = setup("weight_fairshare = 10000");
        s.usage.insert(
            ("default".into(), "heavy".into()),
            model::usage::AssocUsage {
                billing: 1e6,
                tres: Default::default(),
                wall: 0.0,
                at: 0,
            },
        );
        submit(&mut s, 1, 0, |j| j.user = "heavy".into());
        submit(&mut s, 2, 5, |j| j.user = "light".into());
        // Two users: light ranks first (1.0), heavy second (0.5).
        assert_eq!(order(&s, 10, &c), "2:10000 1:5000");
        let all = pending_factors(&s, 10, &c);
        assert_eq!(all[0].fairshare, 0.5);
        assert_eq!(all[0].account, "default");
    }
}
