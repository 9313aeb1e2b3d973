//! `drover why JOBID`: every reason a pending job waits, with numbers, and what will
//! unblock it. Pure: the same state, time and config give the same lines.
//!
//! Example, for a job asking for 4 GPUs on one node in partition `gpu`:
//! ```text
//! job 42 is PENDING (Resources), planned to start at 2026-11-30T10:00:00 on gpu03
//! - needs 1 node with 8 CPUs, 4 GPUs (h100): 2 of 4 nodes in partition gpu could ever run it
//! - the largest free block now is 2 GPUs on gpu01 (gpu02: 0 GPUs, gpu03: 1 GPU)
//! - 3 higher-priority pending jobs in partition gpu want 10 GPUs, 24 CPUs first
//! - first to free resources: job 17 on gpu03 ends by its time limit at 10:00:00
//! ```
//! Times are Unix seconds here; the command line formats them.

use crate::dependency::{self, DepStatus};
use crate::eligibility::{self, Eligibility};
use crate::{SchedConfig, limits, node_could_fit, per_node_request, priority};
use model::{ClusterState, Job, JobId, JobState, Reason, Time};

/// What a running job borrows of other accounts' guaranteed quota (`guarantee`), e.g.
/// `runs on borrowed gres/gpu (2 of it), idle guaranteed quota of ml; reclaimable: its
/// owners' jobs take it back (requeue)`.
fn borrowing(state: &ClusterState, config: &SchedConfig, job: &Job) -> Vec<Blocker> {
    if !crate::guarantee::any(&config.assocs) {
        return Vec::new();
    }
    let Some(alloc) = &job.alloc else {
        return Vec::new();
    };
    let g = crate::guarantee::Guarantees::new(state, &config.assocs);
    let held = model::tres::alloc_tres(alloc, &state.nodes);
    g.borrowed(job, &held)
        .into_iter()
        .map(|(name, from)| {
            let whose = match from {
                crate::guarantee::BorrowedFrom::NoGuarantee => {
                    format!("its account {} has no guarantee of it", job.spec.account)
                }
                crate::guarantee::BorrowedFrom::OverGuarantee {
                    account,
                    guaranteed,
                    held,
                } => format!("account {account} holds {held} against a guarantee of {guaranteed}"),
            };
            let lenders = g.lenders(&name);
            let of = if lenders.is_empty() {
                String::new()
            } else {
                format!(", idle guaranteed quota of {}", lenders.join(", "))
            };
            Blocker {
                text: format!(
                    "runs on borrowed {name} ({} of it; {whose}){of}; reclaimable: its \
                     owners' jobs take it back ({})",
                    held.get(&name).copied().unwrap_or(0),
                    config.preempt.reclaim_mode.name().to_lowercase()
                ),
                clears_at: 0,
            }
        })
        .collect()
}

/// One thing holding the job back, with the time it is expected to clear (0: unknown
/// or never by itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocker {
    pub text: String,
    pub clears_at: Time,
}

/// Why the job waits. An empty list for a job that is not pending.
pub fn explain(state: &ClusterState, now: Time, config: &SchedConfig, id: JobId) -> Vec<Blocker> {
    let Some(job) = state.job(id) else {
        return Vec::new();
    };
    if matches!(job.state, JobState::Running | JobState::Suspended) {
        return borrowing(state, config, job);
    }
    if job.state != JobState::Pending {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut push = |text: String, clears_at: Time| out.push(Blocker { text, clears_at });
    if let Eligibility::Wait(reason) | Eligibility::Cancel(reason) =
        eligibility::check(state, job, now)
    {
        match reason {
            Reason::JobHeldUser | Reason::JobHeldAdmin => push(
                format!("held ({reason}): `scontrol release {}` lets it run", job.id),
                0,
            ),
            Reason::BeginTime => push(
                format!(
                    "may not start before its begin time {}",
                    job.spec.begin_time
                ),
                job.spec.begin_time,
            ),
            Reason::Dependency | Reason::DependencyNeverSatisfied => {
                for line in dependency_lines(state, job) {
                    push(line, 0);
                }
            }
            Reason::Reservation => {
                // The first of its reservations to open.
                let start = job
                    .spec
                    .reservations()
                    .filter_map(|r| state.reservations.get(r))
                    .map(|r| r.window_at(now).0)
                    .min()
                    .unwrap_or(0);
                push(
                    format!("its reservation {} opens at {start}", job.spec.reservation),
                    start,
                );
            }
            Reason::ReservationDeleted => push(
                format!("its reservation {} no longer exists", job.spec.reservation),
                0,
            ),
            other => push(
                format!(
                    "partition {} does not schedule jobs now ({other})",
                    job.spec.partition
                ),
                0,
            ),
        }
    }
    let tracker = limits::LimitTracker::at(state, now, config);
    match tracker.check(job) {
        // Only a LendingLimit gives Resources: say whose idle quota is kept.
        Some(Reason::Resources) => {
            let account = config.assocs.account_of(&job.spec);
            let req = model::tres::job_request(&job.spec);
            for kept in tracker.kept_by_lenders(account, &req) {
                let whose: Vec<String> = kept
                    .lenders
                    .iter()
                    .map(|(lender, n)| format!("{lender} keeps {n}"))
                    .collect();
                push(
                    format!(
                        "idle guaranteed {} is kept for its owners' jobs (LendingLimit: {}); {} \
                         free, it asks for {}",
                        kept.tres,
                        whose.join(", "),
                        kept.free,
                        req.get(&kept.tres).copied().unwrap_or(0)
                    ),
                    0,
                );
            }
        }
        Some(reason) => push(
            format!(
                "a limit holds it: {reason} (it clears as the association's or QOS's running jobs end)"
            ),
            0,
        ),
        None => {}
    }
    preemption_lines(state, job, &mut push);
    resource_lines(state, now, config, job, &mut push);
    out
}

/// Victims being preempted for the job, or the preemptor a requeued victim waits for.
fn preemption_lines(state: &ClusterState, job: &Job, push: &mut impl FnMut(String, Time)) {
    for victim in state.running_jobs() {
        let Some(p) = victim.preemption.as_ref().filter(|p| p.preemptor == job.id) else {
            continue;
        };
        let mode = format!("{:?}", p.mode).to_uppercase();
        let clears = p.time + i64::from(p.grace_secs);
        let grace = if p.grace_secs > 0 {
            format!(", grace time {} s", p.grace_secs)
        } else {
            String::new()
        };
        push(
            format!(
                "preempting job {} ({}, {mode}{grace}): it starts in the room job {} leaves",
                victim.id,
                victim.state.name(),
                victim.id
            ),
            clears,
        );
    }
    if let Some(p) = &job.preemption
        && state.job(p.preemptor).is_some_and(Job::is_pending)
    {
        push(
            format!(
                "requeued by preemption: waits behind job {}, which took its room",
                p.preemptor
            ),
            0,
        );
    }
}

fn dependency_lines(state: &ClusterState, job: &Job) -> Vec<String> {
    let Ok(dep) = dependency::parse(&job.spec.dependency) else {
        return vec![format!(
            "its dependency `{}` cannot be read",
            job.spec.dependency
        )];
    };
    let mut lines = Vec::new();
    for clause in &dep.clauses {
        if clause.jobs.is_empty() {
            lines.push(
                "singleton: another job of the same name and user runs or waits ahead".into(),
            );
        }
        for id in &clause.jobs {
            let state_text = state
                .job(*id)
                .map_or("gone".to_string(), |j| j.state.name().to_string());
            let kind = format!("{:?}", clause.kind).to_lowercase();
            lines.push(format!("waits for job {id} ({state_text}) under {kind}"));
        }
    }
    if dependency::evaluate(state, job) == DepStatus::Never {
        lines.push(
            "the dependency can never be satisfied: cancel the job or update its dependency".into(),
        );
    }
    lines
}

fn resource_lines(
    state: &ClusterState,
    now: Time,
    config: &SchedConfig,
    job: &Job,
    push: &mut impl FnMut(String, Time),
) {
    let Some(partition) = state.partition(&job.spec.partition) else {
        return;
    };
    let mut req = per_node_request(job);
    req.exclusive |= partition.exclusive();
    let filter = crate::backfill::NodeFilter::new(job);
    let gpu_text = if req.gpus > 0 {
        let ty = if req.gpu_type.is_empty() {
            String::new()
        } else {
            format!(" ({})", req.gpu_type)
        };
        format!(", {} GPUs{ty}", req.gpus)
    } else {
        String::new()
    };
    let able: Vec<&model::Node> = partition
        .nodes
        .iter()
        .filter_map(|n| state.nodes.get(n))
        .filter(|n| node_could_fit(n, &req) && filter.allows(n))
        .collect();
    let up = able.iter().filter(|n| n.schedulable()).count();
    push(
        format!(
            "needs {} node(s) with {} CPUs, {}{gpu_text} each: {} of {} nodes in partition {} could ever run it, {up} of them up",
            req.nodes,
            req.cpus,
            if req.whole_memory {
                "all their memory".to_string()
            } else {
                format!("{} MB", req.mem_mb)
            },
            able.len(),
            partition.nodes.len(),
            partition.name
        ),
        0,
    );
    let usage = state.node_usage();
    let mut free: Vec<(u32, u32, String)> = able
        .iter()
        .filter(|n| n.schedulable())
        .map(|n| {
            let u = usage.get(&n.name).cloned().unwrap_or_default();
            let gpus = n.gpus.iter().filter(|g| !u.gpus.contains(&g.index)).count() as u32;
            (n.cpus.saturating_sub(u.cpus), gpus, n.name.clone())
        })
        .collect();
    free.sort_by(|a, b| (b.1, b.0, &a.2).cmp(&(a.1, a.0, &b.2)));
    if let Some((cpus, gpus, name)) = free.first() {
        let gpu = if req.gpus > 0 {
            format!(", {gpus} GPUs")
        } else {
            String::new()
        };
        push(
            format!("the most free on one usable node now: {cpus} CPUs{gpu} on {name}"),
            0,
        );
    }
    if req.gpus > 0 {
        let block = crate::fragmentation::largest_free_block(state, &req.gpu_type)
            .map_or("no GPU is free".to_string(), |(n, node)| {
                format!("the largest free block is {n} GPUs on {node}")
            });
        push(
            format!(
                "GPU fragmentation index {:.2} (the share of free GPUs on partly used nodes); {block}",
                crate::fragmentation::gpu_fragmentation(state)
            ),
            0,
        );
    }
    let queue = priority::queue_order(state, now, config);
    let ahead: Vec<&Job> = queue
        .iter()
        .take_while(|(j, _)| j.id != job.id)
        .map(|(j, _)| *j)
        .filter(|j| j.spec.partition == job.spec.partition && !j.held)
        .collect();
    if !ahead.is_empty() {
        let cpus: u32 = ahead.iter().map(|j| j.spec.total_cpus()).sum();
        let gpus: u32 = ahead
            .iter()
            .map(|j| per_node_request(j).gpus * j.spec.num_nodes.max(1))
            .sum();
        let gpu = if gpus > 0 {
            format!(", {gpus} GPUs")
        } else {
            String::new()
        };
        push(
            format!(
                "{} higher-priority pending jobs in partition {} want {cpus} CPUs{gpu} first",
                ahead.len(),
                partition.name
            ),
            0,
        );
    }
    // The earliest end of a running job on a node that could run this one.
    let next_end = state
        .running_jobs()
        .filter(|j| {
            j.alloc.as_ref().is_some_and(|a| {
                a.nodes
                    .iter()
                    .any(|n| able.iter().any(|m| m.name == n.node))
            })
        })
        .filter_map(|j| {
            j.time_limit_min
                .map(|m| (j.start_time + Time::from(m) * 60, j.id))
        })
        .min();
    if let Some((end, id)) = next_end {
        push(
            format!("first to free resources: job {id} ends by its time limit at {end}"),
            end,
        );
    }
    if job.planned_start > 0 {
        push(
            format!("planned to start at {}", job.planned_start),
            job.planned_start,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::{Allocation, Config, Event, JobSpec, NodeAllocation};

    #[test]
    fn explains_holds_dependencies_and_resources() {
        let c = Config::parse(
            "[[nodes]]\nnames = \"n[1-2]\"\ncpus = 4\nmemory = \"1G\"\ngpus = 2\ngpu_type = \"h100\"\n\
             [[partitions]]\nname = \"gpu\"\nnodes = \"ALL\"\n",
            "t",
        )
        .unwrap();
        let mut s = ClusterState::new(c.node_list(), c.partition_list());
        for n in s.nodes.values_mut() {
            n.health = model::NodeHealth::Up;
        }
        let spec = |gpus: u32| JobSpec {
            partition: "gpu".into(),
            gpus_per_node: gpus,
            ..JobSpec::default()
        };
        s.apply(&Event::JobSubmitted {
            job: Box::new(model::Job::new(1, spec(2), 0, Some(10))),
        });
        let alloc = Allocation {
            nodes: vec![NodeAllocation {
                node: "n1".into(),
                cpus: 1,
                mem_mb: 0,
                gpus: vec![0, 1],
                cpu_ids: Vec::new(),
            }],
        };
        s.apply(&Event::JobStarted {
            job_id: 1,
            alloc,
            time: 0,
            stdout_path: String::new(),
            stderr_path: String::new(),
        });
        s.apply(&Event::JobSubmitted {
            job: Box::new(model::Job::new(2, spec(2), 1, Some(10))),
        });
        let mut held = spec(3);
        held.hold = true;
        held.dependency = "afterok:1".into();
        s.apply(&Event::JobSubmitted {
            job: Box::new(model::Job::new(3, held, 2, Some(10))),
        });
        let config = SchedConfig::default();
        let text: Vec<String> = explain(&s, 10, &config, 3)
            .into_iter()
            .map(|b| b.text)
            .collect();
        assert!(text[0].starts_with("held (JobHeldUser)"), "{text:?}");
        assert!(
            text.iter()
                .any(|t| t.contains("0 of 2 nodes in partition gpu could ever run it")),
            "{text:?}"
        );
        let text: Vec<String> = explain(&s, 10, &config, 2)
            .into_iter()
            .map(|b| b.text)
            .collect();
        assert!(text.iter().any(|t| t.contains("2 of 2 nodes")), "{text:?}");
        assert!(text.iter().any(|t| t.contains("2 GPUs on n2")), "{text:?}");
        // n1's 2 GPUs are busy, n2's both free: nothing is stranded.
        assert!(
            text.iter().any(|t| t
                == "GPU fragmentation index 0.00 (the share of free GPUs on partly used nodes); \
                    the largest free block is 2 GPUs on n2"),
            "{text:?}"
        );
        let end = explain(&s, 10, &config, 2)
            .into_iter()
            .find(|b| b.text.starts_with("first to free"))
            .unwrap();
        assert_eq!(end.clears_at, 600);
        assert!(
            explain(&s, 10, &config, 1).is_empty(),
            "a running job has no blockers"
        );
    }
}
