//! Drover's scheduler core: `schedule(&state, now, &config) -> Plan`, a pure and
//! deterministic function. It never reads a clock or does IO; the controller and the
//! simulator call the very same code.
//!
//! One pass: pending jobs come in priority order (`priority::queue_order`); each is
//! checked for eligibility (holds, begin time, dependencies, partition state) and
//! limits, then handed to the placement policy (`backfill`: fcfs, easy or
//! conservative) over an availability profile of every node's free CPUs, memory and
//! GPUs over time (`profile`). A job starts now with an exact allocation, or waits
//! with Slurm's reason code and, when the policy reserved resources for it, a
//! planned start and nodes (`squeue --start`).
//!
//! Example (easy, the default): two idle 4-CPU nodes n1, n2 and jobs 1 (3 CPUs),
//! 2 (3 CPUs), 3 (2 CPUs, 1 h), 4 (1 CPU, 10 min), jobs 1 and 2 limited to 30 min:
//! 1 starts on n1, 2 on n2; 3 does not fit and is reserved on n1 at +30 min
//! (`Resources`); 4 fits on n1 and ends before +30 min, so it starts (backfill).
pub mod apply;
pub mod backfill;
pub mod config;
pub mod cpus;
pub mod dependency;
pub mod eligibility;
pub mod explain;
pub mod fairshare;
pub mod fragmentation;
pub mod guarantee;
pub mod limits;
pub mod preempt;
pub mod priority;
pub mod profile;
pub mod reservation;

use backfill::Decision;
pub use config::{BackfillConfig, Policy, SchedConfig};
use eligibility::Eligibility;
use model::{Allocation, ClusterState, Job, JobId, Reason, Time};
use std::collections::BTreeMap;

/// One job to start now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    /// The record to start; for an array with pending tasks, the array's record.
    pub job_id: JobId,
    /// For a job of several partitions (`-p a,b`) that starts in one other than its
    /// first: that partition.
    pub partition: Option<String>,
    /// For arrays: the task that starts (split off the array record unless last).
    pub array_task: Option<u32>,
    pub alloc: Allocation,
}

/// Why a job still waits, and when and where it is expected to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// Slurm's reason code (`Resources`, `Priority`, `Dependency`, ...).
    pub reason: Reason,
    /// The start the pass reserved for it; 0 when it made no reservation.
    pub planned_start: Time,
    /// The nodes of that reservation, as a hostlist; empty without one.
    pub planned_nodes: String,
}

/// A job the scheduler wants ended without running (an unsatisfiable dependency with
/// `--kill-on-invalid-dep`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cancel {
    pub job_id: JobId,
    pub reason: Reason,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub starts: Vec<Start>,
    /// Every unheld pending job that does not start. Held jobs are not the pass's
    /// business: they keep the reason they were given when held.
    pub pending: BTreeMap<JobId, Pending>,
    pub cancels: Vec<Cancel>,
    /// Running jobs to preempt for pending ones (`preempt`); the preemptors wait.
    pub preempts: Vec<preempt::Preempt>,
    /// Jobs suspended by preemption whose preemptor no longer waits and whose room is
    /// free again: resume them.
    pub resumes: Vec<JobId>,
}

/// What a job needs on each of its nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerNode {
    pub nodes: u32,
    /// `-N min-max`: the most nodes the job may start on (`nodes` without a range, or
    /// where its limits allow no more).
    pub most_nodes: u32,
    pub cpus: u32,
    pub mem_mb: u64,
    /// `--mem=0`: all of each node's memory (`mem_mb` is then 0).
    pub whole_memory: bool,
    /// `--mem-per-gpu` (MB); 0: not asked. `mem_mb` is then what the node taking the
    /// most GPUs needs, and each node gives it for the GPUs it is given
    /// (`model::job::mem_for_gpus`).
    pub mem_per_gpu_mb: u64,
    pub gpus: u32,
    pub gpu_type: String,
    pub exclusive: bool,
}

impl PerNode {
    /// The request spread over `nodes` nodes instead: a count of `-N min-max`.
    pub fn on_nodes(&self, spec: &model::JobSpec, nodes: u32) -> PerNode {
        let (cpus, mem_mb) = spec.per_node_cpus_mem_on(nodes);
        PerNode {
            nodes,
            cpus,
            mem_mb,
            gpus: spec.gpus_on_each_of(nodes),
            ..self.clone()
        }
    }

    /// The memory (MB) the request takes on `node`.
    pub fn mem_on(&self, node: &model::Node) -> u64 {
        if self.whole_memory {
            node.memory_mb
        } else {
            self.mem_mb
        }
    }
}

/// The per-node request of a job: CPUs spread evenly over its nodes.
pub fn per_node_request(job: &Job) -> PerNode {
    let spec = &job.spec;
    let nodes = spec.num_nodes.max(1);
    let (cpus, mem_mb) = spec.per_node_cpus_mem();
    PerNode {
        nodes,
        most_nodes: spec.max_nodes.max(nodes),
        cpus,
        mem_mb,
        whole_memory: spec.mem_whole_node,
        mem_per_gpu_mb: if spec.mem_per_cpu_mb > 0 {
            0
        } else {
            spec.details.mem_per_gpu_mb
        },
        gpus: spec.gpus_on_each_node(),
        gpu_type: spec.gpu_type.clone(),
        exclusive: spec.exclusive,
    }
}

/// Could a node of this size ever run the per-node request?
pub fn node_could_fit(node: &model::Node, req: &PerNode) -> bool {
    let gpus = node.gpus.iter().filter(|g| g.serves(&req.gpu_type)).count() as u32;
    node.cpus >= req.cpus && node.memory_mb >= req.mem_on(node) && gpus >= req.gpus
}

/// Plans one scheduling pass.
pub fn schedule(state: &ClusterState, now: Time, config: &SchedConfig) -> Plan {
    let running: Vec<&Job> = state.running_jobs().collect();
    // Suspended jobs lend their CPUs and GPUs (memory stays held); those suspended for
    // a preemptor that no longer waits resume when their room is free again.
    let mut resumes = Vec::new();
    let lent: Vec<Job> = if running
        .iter()
        .any(|j| j.state == model::JobState::Suspended)
    {
        resumes = preempt::resumable(state);
        running
            .iter()
            .filter(|j| preempt::lends_cpus(state, j))
            .map(|j| preempt::memory_only(j))
            .collect()
    } else {
        Vec::new()
    };
    let running: Vec<&Job> = if lent.is_empty() {
        running
    } else {
        running
            .into_iter()
            .filter(|j| !preempt::lends_cpus(state, j))
            .chain(lent.iter())
            .collect()
    };
    let mut profile = profile::Profile::build(state, &running, now);
    let mut preemptor = config
        .preempts()
        .then(|| preempt::Preemptor::new(state, now, config));
    let mut planner = backfill::Planner::new(&config.backfill, state);

    // Running tasks per array, for `%N` throttles.
    let mut array_running: BTreeMap<JobId, u32> = BTreeMap::new();
    for job in &running {
        if job.array_job_id != 0 {
            *array_running.entry(job.array_job_id).or_default() += 1;
        }
    }

    let mut queue = priority::unheld_queue_order(state, now, config);
    if config.preempts() {
        // A job requeued by preemption goes behind its preemptor while that one
        // waits, so that it does not take back the room it left.
        let behind = |j: &Job| {
            j.preemption
                .as_ref()
                .is_some_and(|p| state.job(p.preemptor).is_some_and(Job::is_pending))
        };
        if queue.iter().any(|(j, _)| behind(j)) {
            queue.sort_by_key(|(j, _)| behind(j));
        }
    }
    let mut limits = limits::LimitTracker::at(state, now, config);

    let mut plan = Plan {
        resumes,
        ..Plan::default()
    };
    let mut pending: Vec<(JobId, Pending)> = Vec::with_capacity(queue.len());
    for (job, _priority) in queue {
        // A heterogeneous job starts whole when its leader's turn comes, or not at all.
        if let Some(het) = job.het {
            // A leader that can never run (past its deadline, an impossible
            // dependency with --kill-on-invalid-dep) is cancelled; its end takes the
            // others with it.
            if het.offset == 0
                && let Eligibility::Cancel(reason) = eligibility::check(state, job, now)
            {
                plan.cancels.push(Cancel {
                    job_id: job.id,
                    reason,
                });
            } else if het.offset == 0 {
                let members: Vec<&Job> = het
                    .ids()
                    .filter_map(|id| state.job(id))
                    .filter(|j| j.is_pending())
                    .collect();
                match start_together(state, now, &members, &mut profile, &mut planner, &limits) {
                    Ok(starts) => {
                        for start in starts {
                            let member = members.iter().find(|m| m.id == start.job_id);
                            if let Some(m) = member {
                                limits.charge(m, &start.alloc);
                                if let Some(p) = preemptor.as_mut() {
                                    p.started(m, &start.alloc);
                                }
                            }
                            plan.starts.push(start);
                        }
                    }
                    Err(reason) => pending.extend(members.iter().map(|m| {
                        let waiting = Pending {
                            reason,
                            planned_start: 0,
                            planned_nodes: String::new(),
                        };
                        (m.id, waiting)
                    })),
                }
            }
            continue;
        }
        let mut pend = |reason: Reason, planned_start: Time, planned_nodes: String| {
            pending.push((
                job.id,
                Pending {
                    reason,
                    planned_start,
                    planned_nodes,
                },
            ));
        };
        match eligibility::check(state, job, now) {
            Eligibility::Eligible => {}
            Eligibility::Wait(reason) => {
                pend(reason, 0, String::new());
                continue;
            }
            Eligibility::Cancel(reason) => {
                plan.cancels.push(Cancel {
                    job_id: job.id,
                    reason,
                });
                continue;
            }
        }
        // The partitions it may start in now, in its order: a job of several
        // (`-p a,b`) starts in the first where it fits, and otherwise waits in the
        // first of them.
        let partitions = partitions_of(state, job);
        let Some(p) = partitions.clone().next() else {
            pend(Reason::PartitionDown, 0, String::new());
            continue;
        };
        if let Some(reason) = limits.check(job) {
            pend(reason, 0, String::new());
            continue;
        }
        let mut req = per_node_request(job);
        // `-N min-max`: no more nodes than its limits allow (the least passed above).
        if req.most_nodes > req.nodes {
            req.most_nodes = job
                .spec
                .node_counts()
                .find(|&n| n == req.nodes || limits.check(&job.on_nodes(n)).is_none())
                .unwrap_or(req.nodes);
        }
        // OverSubscribe=EXCLUSIVE: every job of the partition gets whole nodes.
        let request_in = |p: usize| PerNode {
            exclusive: req.exclusive || state.partitions[p].exclusive(),
            ..req.clone()
        };
        let req = request_in(p);
        // An array record starts as many of its tasks as fit and the throttle allows.
        let meta = job.is_array_meta();
        let tasks = std::iter::once(None)
            .filter(|_| !meta)
            .chain(job.pending_tasks.iter().map(|t| Some(*t)).filter(|_| meta));
        let throttle = job.spec.array.as_ref().map(|a| a.max_running).unwrap_or(0);
        let mut waiting: Option<(Reason, Time, String)> = None;
        for (n, task) in tasks.enumerate() {
            let running = array_running.get(&job.array_job_id).copied().unwrap_or(0);
            if job.array_job_id != 0 && throttle > 0 && running >= throttle {
                waiting = Some((Reason::JobArrayTaskLimit, 0, String::new()));
                break;
            }
            // Each further task of an array counts against the limits again.
            if n > 0
                && let Some(reason) = limits.check(job)
            {
                waiting = Some((reason, 0, String::new()));
                break;
            }
            // The first of its partitions where it starts now, else it waits in its
            // first.
            // Within the first of its reservations where it starts now, else it waits
            // in its first (most jobs have one or none: no copies, no detour).
            let mut start_in = |trial: &Job| {
                partitions.clone().find_map(|q| {
                    let other;
                    let req = if q == p {
                        &req
                    } else {
                        other = request_in(q);
                        &other
                    };
                    let alloc = planner.start_now(&mut profile, q, trial, req)?;
                    Some((q, alloc))
                })
            };
            let several = job.spec.has_several_reservations();
            let started = if several {
                reservation::within_each(job).find_map(|trial| start_in(&trial))
            } else {
                start_in(job)
            };
            let (q, decision) = match started {
                Some((q, alloc)) => (q, Decision::Start(alloc)),
                None if several => {
                    let first = reservation::within_each(job).next();
                    let trial = first.as_deref().unwrap_or(job);
                    (p, planner.wait(&mut profile, p, trial, &req))
                }
                None => (p, planner.wait(&mut profile, p, job, &req)),
            };
            match decision {
                Decision::Start(alloc) => {
                    if job.array_job_id != 0 {
                        *array_running.entry(job.array_job_id).or_default() += 1;
                    }
                    limits.charge(job, &alloc);
                    if let Some(p) = preemptor.as_mut() {
                        p.started(job, &alloc);
                    }
                    let partition = &state.partitions[q].name;
                    plan.starts.push(Start {
                        job_id: job.id,
                        partition: (*partition != job.spec.partition).then(|| partition.clone()),
                        array_task: task,
                        alloc,
                    });
                }
                Decision::Wait {
                    reason,
                    planned_start,
                    planned_nodes,
                } => {
                    if let Some(search) = preemptor.as_mut().filter(|s| s.could_preempt(job))
                        && let preempt::Outcome::Victims(victims) =
                            search.find(&profile, p, job, &req)
                    {
                        // A victim already suspended changes preemptor, not state.
                        plan.resumes
                            .retain(|id| !victims.iter().any(|v| v.job_id == *id));
                        plan.preempts.extend(victims);
                    }
                    waiting = Some((reason, planned_start, planned_nodes));
                    break;
                }
            }
        }
        if let Some((reason, planned_start, planned_nodes)) = waiting {
            pend(reason, planned_start, planned_nodes);
        }
    }
    cpus::assign(state, &mut plan.starts);
    pending.sort_unstable_by_key(|(id, _)| *id);
    plan.pending = pending.into_iter().collect();
    plan
}

/// The partitions a job may start in now, in its order (`-p a,b`), by their index.
/// Nothing is collected: most jobs have one partition, and the pass looks at each.
fn partitions_of<'s>(
    state: &'s ClusterState,
    job: &'s Job,
) -> impl Iterator<Item = usize> + Clone + 's {
    job.spec.partitions().filter_map(move |name| {
        state
            .partitions
            .iter()
            .position(|p| p.name == name && p.schedules_jobs())
    })
}

/// Starts every component of a heterogeneous job now, each in the first of its
/// partitions where it fits, or none: the profile and the planner are left as they
/// were, and the reason all of them wait is answered.
fn start_together<'s>(
    state: &'s ClusterState,
    now: Time,
    members: &[&'s Job],
    profile: &mut profile::Profile<'s>,
    planner: &mut backfill::Planner<'_, 's>,
    limits: &limits::LimitTracker,
) -> Result<Vec<Start>, Reason> {
    for member in members {
        // A component that can never run waits (its leader's end cancels it).
        match eligibility::check(state, member, now) {
            Eligibility::Eligible => {}
            Eligibility::Wait(reason) | Eligibility::Cancel(reason) => return Err(reason),
        }
        if let Some(reason) = limits.check(member) {
            return Err(reason);
        }
    }
    let count = members.first().and_then(|m| m.het).map_or(0, |h| h.count);
    if members.len() as u32 != count {
        // A component ended before the others started: they cannot start whole.
        return Err(Reason::Resources);
    }
    let (before, planned) = (profile.clone(), planner.clone());
    let mut starts = Vec::with_capacity(members.len());
    for member in members {
        let req = per_node_request(member);
        let started = partitions_of(state, member).find_map(|p| {
            let req = PerNode {
                exclusive: req.exclusive || state.partitions[p].exclusive(),
                ..req.clone()
            };
            let alloc = planner.start_now(profile, p, member, &req)?;
            Some((p, alloc))
        });
        let Some((p, alloc)) = started else {
            *profile = before;
            *planner = planned;
            return Err(Reason::Resources);
        };
        let partition = &state.partitions[p].name;
        starts.push(Start {
            job_id: member.id,
            partition: (*partition != member.spec.partition).then(|| partition.clone()),
            array_task: None,
            alloc,
        });
    }
    Ok(starts)
}

#[cfg(test)]
mod placement_tests;
#[cfg(test)]
mod preempt_tests;
#[cfg(test)]
mod tests;
