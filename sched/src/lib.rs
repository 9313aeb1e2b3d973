//! Drover's scheduler core: `schedule(&state, now, &config) -> Plan`, a pure and
//! deterministic function. It never reads a clock or does IO; the controller and the
//! simulator call the very same code.
//!
//! This is the first-fit placeholder that the multifactor/backfill scheduler replaces:
//! pending jobs are taken in (submit time, job id) order; each eligible job starts on
//! the first nodes of its partition that have enough free CPUs, memory and GPUs;
//! others keep a pending reason.
//!
//! Example: two idle 4-CPU nodes n1, n2 and jobs 1 (3 CPUs), 2 (3 CPUs), 3 (2 CPUs)
//! give: 1 on n1, 2 on n2, and 3 pends with reason `Resources` (1 CPU free on each).

pub mod config;
pub mod dependency;
pub mod eligibility;
pub mod limits;
pub mod priority;

pub use config::SchedConfig;
use eligibility::Eligibility;
use model::{Allocation, ClusterState, Job, JobId, NodeAllocation, NodeUsage, Time};
use std::collections::BTreeMap;

/// One job to start now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    /// The record to start; for an array with pending tasks, the array's record.
    pub job_id: JobId,
    /// For arrays: the task that starts (split off the array record unless last).
    pub array_task: Option<u32>,
    pub alloc: Allocation,
}

/// Why a job still waits, and when it is expected to start (0: unknown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub reason: String,
    pub planned_start: Time,
}

/// A job the scheduler wants ended without running (an unsatisfiable dependency with
/// `--kill-on-invalid-dep`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cancel {
    pub job_id: JobId,
    pub reason: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub starts: Vec<Start>,
    pub pending: BTreeMap<JobId, Pending>,
    pub cancels: Vec<Cancel>,
}

/// Free resources on one node during a pass.
#[derive(Debug, Clone)]
struct Free {
    cpus: u32,
    mem_mb: u64,
    /// Free GPU indices with their types, in index order.
    gpus: Vec<(u32, String)>,
    idle: bool,
}

/// What a job needs on each of its nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerNode {
    pub nodes: u32,
    pub cpus: u32,
    pub mem_mb: u64,
    pub gpus: u32,
    pub gpu_type: String,
    pub exclusive: bool,
}

/// The per-node request of a job: CPUs spread evenly over its nodes.
pub fn per_node_request(job: &Job) -> PerNode {
    let spec = &job.spec;
    let nodes = spec.num_nodes.max(1);
    let cpus = if spec.ntasks_per_node > 0 {
        spec.ntasks_per_node * spec.cpus_per_task.max(1)
    } else {
        spec.total_cpus().div_ceil(nodes)
    };
    let mem_mb = if spec.mem_per_cpu_mb > 0 {
        spec.mem_per_cpu_mb * u64::from(cpus)
    } else {
        spec.mem_per_node_mb
    };
    PerNode {
        nodes,
        cpus,
        mem_mb,
        gpus: spec.gpus_on_each_node(),
        gpu_type: spec.gpu_type.clone(),
        exclusive: spec.exclusive,
    }
}

/// Could a node of this size ever run the per-node request?
pub fn node_could_fit(node: &model::Node, req: &PerNode) -> bool {
    let gpus = node
        .gpus
        .iter()
        .filter(|g| req.gpu_type.is_empty() || g.gpu_type == req.gpu_type)
        .count() as u32;
    node.cpus >= req.cpus && node.memory_mb >= req.mem_mb && gpus >= req.gpus
}

/// Plans one scheduling pass.
pub fn schedule(state: &ClusterState, now: Time, config: &SchedConfig) -> Plan {
    let usage = state.node_usage();
    let mut free: BTreeMap<&str, Free> = state
        .nodes
        .values()
        .filter(|n| n.schedulable())
        .map(|n| {
            let u = usage
                .get(&n.name)
                .cloned()
                .unwrap_or_else(NodeUsage::default);
            let gpus = n
                .gpus
                .iter()
                .filter(|g| !u.gpus.contains(&g.index))
                .map(|g| (g.index, g.gpu_type.clone()))
                .collect();
            let f = Free {
                cpus: n.cpus.saturating_sub(u.cpus),
                mem_mb: n.memory_mb.saturating_sub(u.mem_mb),
                gpus,
                idle: u.jobs == 0,
            };
            (n.name.as_str(), f)
        })
        .collect();

    // Running tasks per array, for `%N` throttles.
    let mut array_running: BTreeMap<JobId, u32> = BTreeMap::new();
    for job in state.running_jobs() {
        if job.array_job_id != 0 {
            *array_running.entry(job.array_job_id).or_default() += 1;
        }
    }

    let queue = priority::queue_order(state, now, config);
    let mut limits = limits::LimitTracker::new(state, config);

    let mut plan = Plan::default();
    let mut blocked_partitions: BTreeMap<&str, ()> = BTreeMap::new();
    for (job, _priority) in queue {
        let pend = |plan: &mut Plan, reason: &str| {
            plan.pending.insert(
                job.id,
                Pending {
                    reason: reason.to_string(),
                    planned_start: 0,
                },
            );
        };
        match eligibility::check(state, job, now) {
            Eligibility::Eligible => {}
            Eligibility::Wait(reason) => {
                pend(&mut plan, &reason);
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
        let Some(partition) = state.partition(&job.spec.partition) else {
            pend(&mut plan, "PartitionDown");
            continue;
        };
        if let Some(reason) = limits.check(job) {
            pend(&mut plan, &reason);
            continue;
        }
        let req = per_node_request(job);
        // An array record starts as many of its tasks as fit and the throttle allows.
        let tasks: Vec<Option<u32>> = if job.is_array_meta() {
            job.pending_tasks.iter().map(|t| Some(*t)).collect()
        } else {
            vec![None]
        };
        let limit = job.spec.array.as_ref().map(|a| a.max_running).unwrap_or(0);
        let mut started = 0;
        let mut throttled = false;
        for task in tasks {
            let running = array_running.get(&job.array_job_id).copied().unwrap_or(0);
            if job.array_job_id != 0 && limit > 0 && running >= limit {
                throttled = true;
                break;
            }
            let Some(alloc) = place(state, partition, job, &req, &free) else {
                break;
            };
            for na in &alloc.nodes {
                let f = free
                    .get_mut(na.node.as_str())
                    .expect("placed on a free node");
                f.cpus -= na.cpus;
                f.mem_mb -= na.mem_mb;
                f.gpus.retain(|(i, _)| !na.gpus.contains(i));
                f.idle = false;
            }
            if job.array_job_id != 0 {
                *array_running.entry(job.array_job_id).or_default() += 1;
            }
            limits.charge(job, &alloc);
            plan.starts.push(Start {
                job_id: job.id,
                array_task: task,
                alloc,
            });
            started += 1;
        }
        let all_started =
            started > 0 && (!job.is_array_meta() || started == job.pending_tasks.len());
        if throttled {
            pend(&mut plan, "JobArrayTaskLimit");
        } else if !all_started {
            let first_blocked = blocked_partitions
                .insert(partition.name.as_str(), ())
                .is_none();
            pend(
                &mut plan,
                if first_blocked {
                    "Resources"
                } else {
                    "Priority"
                },
            );
        }
    }
    plan
}

/// Finds nodes for one job (or one array task) among the free ones, first fit in the
/// partition's node order; `None` if it does not fit now.
fn place(
    state: &ClusterState,
    partition: &model::Partition,
    job: &Job,
    req: &PerNode,
    free: &BTreeMap<&str, Free>,
) -> Option<Allocation> {
    let wanted: Option<Vec<String>> = (!job.spec.nodelist.is_empty())
        .then(|| model::hostlist::expand(&job.spec.nodelist).unwrap_or_default());
    let excluded = model::hostlist::expand(&job.spec.exclude).unwrap_or_default();
    let mut chosen = Vec::new();
    for name in &partition.nodes {
        if chosen.len() as u32 == req.nodes {
            break;
        }
        if excluded.contains(name) || wanted.as_ref().is_some_and(|w| !w.contains(name)) {
            continue;
        }
        let Some(f) = free.get(name.as_str()) else {
            continue;
        };
        if req.exclusive && !f.idle {
            continue;
        }
        let gpus: Vec<u32> = f
            .gpus
            .iter()
            .filter(|(_, t)| req.gpu_type.is_empty() || *t == req.gpu_type)
            .map(|(i, _)| *i)
            .take(req.gpus as usize)
            .collect();
        if f.cpus < req.cpus || f.mem_mb < req.mem_mb || (gpus.len() as u32) < req.gpus {
            continue;
        }
        let node = &state.nodes[name];
        let (cpus, mem_mb) = if req.exclusive {
            (node.cpus, if req.mem_mb > 0 { node.memory_mb } else { 0 })
        } else {
            (req.cpus, req.mem_mb)
        };
        chosen.push(NodeAllocation {
            node: name.clone(),
            cpus,
            mem_mb,
            gpus,
        });
    }
    (chosen.len() as u32 == req.nodes).then_some(Allocation { nodes: chosen })
}

#[cfg(test)]
mod tests;
