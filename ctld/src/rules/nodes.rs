//! The rules of nodes: `scontrol update node`, a node daemon's registration and
//! heartbeats, launch confirmations and failures, the end of a job's run, and jobs a
//! node lost.
//!
//! What a node must do is derived from the durable state and compared with what it
//! reports, at every registration and heartbeat, so that an order lost with a
//! controller's crash (or a dropped RPC) is given again until the node does it:
//!
//! | the job's record | the node reports | the node is told |
//! |---|---|---|
//! | a kill requested | it running, not being killed | kill it |
//! | SUSPENDED | it running | suspend it |
//! | RUNNING | it stopped | resume it |
//! | running there, launch not confirmed | nothing | launch it (again) |
//! | running there, launch confirmed | nothing (registration) | lost: NODE_FAIL, or requeued |
//! | not running there (ended, elsewhere, another run) | it | kill it |
//!
//! Example: job 7 runs on n1 and is cancelled; the controller crashes after the
//! acknowledgement, before the kill reached n1. Restarted, it reads `kill: Cancel by
//! 1000` in 7's record; n1 registers, reporting 7 running and not being killed, and is
//! told to kill 7. Its end report then ends 7 CANCELLED by 1000.

use super::{Order, Turn, batch_node};
use crate::command::{
    EndKind, Heartbeat, JobEnd, JobOnNode, NodeAction, NodeOrders, Registration, Rejection,
    UpdateNodes,
};
use model::gpu_use::{GpuIdleAction, GpuIdleVerdict};
use model::node::NOT_RESPONDING;
use model::{Event, GpuDevice, JobId, JobState, KillCause, NodeHealth, PreemptMode, Reason, Time};
use std::collections::BTreeMap;

/// `scontrol update node=... state=drain|down|resume`.
pub fn update_nodes(turn: &mut Turn, cmd: UpdateNodes) -> Result<(), Rejection> {
    let names =
        model::hostlist::expand(&cmd.nodes).map_err(|e| Rejection::Invalid(e.to_string()))?;
    if let Some(unknown) = names.iter().find(|n| !turn.state.nodes.contains_key(*n)) {
        return Err(Rejection::NotFound(format!(
            "Invalid node name specified: {unknown}"
        )));
    }
    if !cmd.requester.is_operator() {
        return Err(Rejection::PermissionDenied);
    }
    if let Some(features) = &cmd.features {
        if let Some(bad) = features
            .iter()
            .find(|f| !model::constraint::Constraint::is_feature_name(f))
        {
            return Err(Rejection::invalid(format!(
                "Invalid feature specification: {bad}"
            )));
        }
        for name in &names {
            turn.emit(Event::NodeFeaturesSet {
                name: name.clone(),
                features: features.clone(),
            });
        }
        turn.reschedule = true;
    }
    let Some(action) = cmd.action else {
        return Ok(());
    };
    let (drain, down) = match action {
        NodeAction::Drain => (true, false),
        NodeAction::Down => (false, true),
        NodeAction::Resume => (false, false),
    };
    if (drain || down) && cmd.reason.trim().is_empty() {
        return Err(Rejection::invalid(
            "You must specify a reason when DOWNING or DRAINING a node. Request denied",
        ));
    }
    let reason = if drain || down {
        cmd.reason
    } else {
        String::new()
    };
    for name in names {
        turn.emit(Event::NodeAdmin {
            name: name.clone(),
            drain,
            down,
            reason: reason.clone(),
            uid: cmd.requester.uid,
            time: turn.now,
        });
        if down {
            fail_jobs_on(turn, &name);
        }
    }
    turn.reschedule = true;
    Ok(())
}

/// `scontrol reconfigure`: the features of the nodes the config declares as it declares
/// them, where `scontrol update` changed them (as Slurm's reconfigure reads slurm.conf's).
pub fn restore_features(turn: &mut Turn) {
    for declared in turn.config.node_list() {
        let changed = turn
            .state
            .nodes
            .get(&declared.name)
            .is_some_and(|n| n.features != declared.features);
        if changed {
            turn.emit(Event::NodeFeaturesSet {
                name: declared.name,
                features: declared.features,
            });
            turn.reschedule = true;
        }
    }
}

/// A node daemon registers: its resources are recorded, and what it runs is compared
/// with what it should run. A job that should run there and whose launch the node had
/// confirmed, but that the node no longer has, was lost with the node's state.
pub fn register(turn: &mut Turn, reg: Registration) -> NodeOrders {
    tracing::info!(node = %reg.node, addr = %reg.addr, jobs = reg.jobs.len(), "node registered");
    // A node the config declares is scheduled as declared, and drained when it found
    // less (Slurm's validate_node_specs); its GPUs are the ones it found (their real
    // ids and topology) when they are what is declared.
    let declared = turn
        .config
        .node_list()
        .into_iter()
        .find(|n| n.name == reg.node);
    let (cpus, memory_mb, gpus, declared_numa, lacking) = match declared {
        Some(d) => {
            let lacking = d.shortfall(reg.cpus, reg.memory_mb, &reg.gpus);
            let gpus = found_as_declared(&d.gpus, &reg.gpus).unwrap_or(d.gpus);
            (d.cpus, d.memory_mb, gpus, d.numa_cpus, lacking)
        }
        None => (reg.cpus, reg.memory_mb, reg.gpus, Vec::new(), Vec::new()),
    };
    // The NUMA nodes' CPUs as found, when they name only CPUs the node is scheduled
    // with; else as declared.
    let numa_cpus =
        if !reg.numa_cpus.is_empty() && reg.numa_cpus.iter().flatten().all(|&cpu| cpu < cpus) {
            reg.numa_cpus
        } else {
            declared_numa
        };
    let returns_to_service = turn
        .state
        .nodes
        .get(&reg.node)
        .is_none_or(|n| returns_to_service(turn.config, n));
    if !returns_to_service {
        tracing::info!(node = %reg.node, "node stays DOWN until resumed (ReturnToService)");
    }
    turn.emit(Event::NodeRegistered {
        name: reg.node.clone(),
        addr: reg.addr,
        cpus,
        memory_mb,
        gpus,
        numa_cpus,
        features: reg.features,
        boot_time: reg.boot_time,
        time: turn.now,
        returns_to_service,
    });
    // Its load, as a heartbeat brings it (not stored).
    if reg.load.is_some() {
        turn.emit(Event::NodeHeartbeat {
            name: reg.node.clone(),
            time: turn.now,
            load: reg.load,
        });
    }
    if !lacking.is_empty() {
        tracing::warn!(node = %reg.node, "node has less than configured");
        drain_for(turn, &reg.node, &lacking.join(", "));
    }
    turn.reschedule = true;
    reconcile(turn, &reg.node, &reg.jobs, true)
}

/// The GPUs a node found, one for each declared GPU (in order, of its type), under the
/// declared type names, with the ids and topology found: `None` when it found fewer
/// (`GpuDevice::stands_for`).
fn found_as_declared(declared: &[GpuDevice], found: &[GpuDevice]) -> Option<Vec<GpuDevice>> {
    let mut taken = vec![false; found.len()];
    declared
        .iter()
        .map(|d| {
            let k = (0..found.len()).find(|&k| !taken[k] && found[k].stands_for(&d.gpu_type))?;
            taken[k] = true;
            Some(GpuDevice {
                gpu_type: d.gpu_type.clone(),
                ..found[k].clone()
            })
        })
        .collect()
}

/// Slurm's ReturnToService: would a registration of `node` bring it back from DOWN?
/// A node that is not DOWN is in service anyway.
fn returns_to_service(config: &model::Config, node: &model::Node) -> bool {
    node.health != NodeHealth::Down
        || match config.controller.return_to_service {
            0 => false,
            1 => node.reason == NOT_RESPONDING,
            _ => true,
        }
}

/// Drains `node` for `reason`, as the node asked, unless it is drained or DOWN already
/// (an admin's drain and its reason stay).
fn drain_for(turn: &mut Turn, node: &str, reason: &str) {
    let Some(n) = turn.state.nodes.get(node) else {
        return;
    };
    // A DOWN node takes no work anyway, and a drain would count as its resume.
    if n.drain || n.health == NodeHealth::Down {
        return;
    }
    tracing::warn!(node, reason, "draining node at its request");
    turn.emit(Event::NodeAdmin {
        name: node.to_string(),
        drain: true,
        down: false,
        reason: reason.to_string(),
        uid: 0,
        time: turn.now,
    });
}

/// A heartbeat: the node's time is noted (not stored) and what it runs corrected.
pub fn heartbeat(turn: &mut Turn, hb: Heartbeat) -> NodeOrders {
    // A node DOWN that registering would not bring back is heard as it is: what it
    // runs is still corrected. One registering would bring back is asked to.
    let known = turn.state.nodes.get(&hb.node).is_some_and(|n| {
        !n.addr.is_empty()
            && (n.health == NodeHealth::Up
                || (n.health == NodeHealth::Down && !returns_to_service(turn.config, n)))
    });
    if !known {
        return NodeOrders {
            register_again: true,
            ..NodeOrders::default()
        };
    }
    turn.emit(Event::NodeHeartbeat {
        name: hb.node.clone(),
        time: turn.now,
        load: hb.load,
    });
    if !hb.unhealthy.is_empty() {
        drain_for(turn, &hb.node, &hb.unhealthy);
    }
    reconcile(turn, &hb.node, &hb.jobs, false)
}

/// The jobs whose batch step should run on `node`, by id.
fn jobs_on(turn: &Turn, node: &str) -> Vec<JobId> {
    turn.state
        .running_jobs()
        .filter(|j| batch_node(j) == Some(node))
        .map(|j| j.id)
        .collect()
}

/// Compares what a node reports with the durable state: orders for the node, launches
/// sent again, and (at a registration) the ends of jobs it lost.
fn reconcile(turn: &mut Turn, node: &str, reported: &[JobOnNode], registering: bool) -> NodeOrders {
    let reported: BTreeMap<JobId, JobOnNode> = reported.iter().map(|j| (j.job_id, *j)).collect();
    let mut orders = NodeOrders::default();
    for id in jobs_on(turn, node) {
        let Some(job) = turn.state.job(id) else {
            continue;
        };
        let run = job.restart_count;
        match reported.get(&id).filter(|r| r.restart_count == run) {
            Some(on_node) => {
                if !job.launched {
                    turn.emit(Event::JobLaunched {
                        job_id: id,
                        restart_count: run,
                    });
                }
                if let Some(used) = on_node.gpu_use
                    && !on_node.ending
                {
                    gpu_idle(turn, id, used.idle_ms);
                }
                let job = turn.state.job(id).expect("still there");
                if job.kill.is_some() && !on_node.ending {
                    orders.kill.push(id);
                } else if job.kill.is_none() {
                    match (job.state, on_node.suspended) {
                        (JobState::Suspended, false) => orders.suspend.push(id),
                        (JobState::Running, true) => orders.resume.push(id),
                        _ => {}
                    }
                }
            }
            None if !job.launched => {
                tracing::info!(
                    job_id = id,
                    node,
                    "launch not confirmed by the node; sending it again"
                );
                turn.launch(id);
            }
            None if registering => {
                tracing::warn!(
                    job_id = id,
                    node,
                    "job lost: its node registered without it"
                );
                end_lost_job(turn, id);
            }
            None => {}
        }
    }
    // What the node runs that should not run there (ended, requeued, another run).
    for (id, on_node) in &reported {
        let current = turn.state.job(*id).is_some_and(|j| {
            !j.state.is_final()
                && j.alloc.is_some()
                && batch_node(j) == Some(node)
                && j.restart_count == on_node.restart_count
        });
        if !current && !on_node.ending {
            orders.kill.push(*id);
        }
    }
    orders.kill.sort_unstable();
    orders.kill.dedup();
    orders
}

/// Applies the job's QOS's GPU idle policy to a running job whose GPUs have all been
/// idle for `idle_ms` on its batch node: the job is flagged (and mailed) at the limit,
/// then requeued or cancelled (by root) after the grace, as `model::gpu_use` says.
fn gpu_idle(turn: &mut Turn, id: JobId, idle_ms: u64) {
    let Some(job) = turn.state.job(id) else {
        return;
    };
    if job.state != JobState::Running || job.kill.is_some() {
        return;
    }
    let Some(policy) = turn.sched.assocs.qos.get(&job.spec.qos).map(|q| q.gpu_idle) else {
        return;
    };
    let mut flagged = job.gpu_idle_flagged.is_some();
    while let Some(verdict) = policy.verdict(idle_ms, flagged) {
        match verdict {
            GpuIdleVerdict::Flag => {
                tracing::info!(job_id = id, idle_ms, policy = %policy.describe(), "GPUs idle: job flagged");
                turn.emit(Event::JobGpuIdleFlagged {
                    job_id: id,
                    time: turn.now,
                });
                let then = (policy.action != GpuIdleAction::Warn)
                    .then(|| (policy.action, u64::from(policy.grace_s)));
                let mail = model::mail::JobMail::GpuIdle {
                    idle: idle_ms / 1000,
                    then,
                };
                if let Some(effect) = super::mail::for_mail(turn.state, id, mail) {
                    turn.effects.push(effect);
                }
                flagged = true;
            }
            GpuIdleVerdict::Act(action) => {
                tracing::warn!(
                    job_id = id,
                    idle_ms,
                    action = action.word(),
                    "GPUs still idle after the grace time"
                );
                let cause = match action {
                    GpuIdleAction::Requeue => KillCause::Requeue { hold: false },
                    GpuIdleAction::Cancel | GpuIdleAction::Warn => KillCause::Cancel { by: 0 },
                };
                // The heartbeat's answer orders the kill (`reconcile`).
                super::jobs::request_kill(turn, id, cause);
                return;
            }
        }
    }
}

/// The node confirmed it started this run of the job.
pub fn launched(turn: &mut Turn, job_id: JobId, restart_count: u32) {
    let current = turn.state.job(job_id).is_some_and(|j| {
        !j.launched && j.restart_count == restart_count && j.alloc.is_some() && !j.state.is_final()
    });
    if current {
        turn.emit(Event::JobLaunched {
            job_id,
            restart_count,
        });
    }
}

/// A node could not be told to launch this run of a job: the node goes DOWN, and the
/// job back to the queue, unless a kill request says how it ends (a cancel ends it
/// CANCELLED). A failure reported for a run the node has since confirmed (through a
/// heartbeat) or for an earlier run changes nothing.
pub fn launch_failed(
    turn: &mut Turn,
    job_id: JobId,
    restart_count: u32,
    node: &str,
    message: &str,
) {
    tracing::warn!(job_id, node, error = message, "launch failed");
    let Some(job) = turn.state.job(job_id) else {
        return;
    };
    let unconfirmed = job.state == JobState::Running
        && !job.launched
        && job.restart_count == restart_count
        && batch_node(job) == Some(node);
    if !unconfirmed {
        return;
    }
    if job.kill.is_some() {
        end_lost_job(turn, job_id);
    } else {
        turn.emit(Event::JobRequeued {
            job_id,
            time: turn.now,
            hold: false,
            special_exit: false,
            not_before: None,
        });
    }
    turn.emit(Event::NodeDown {
        name: node.to_string(),
        reason: NOT_RESPONDING.into(),
        time: turn.now,
    });
    turn.reschedule = true;
}

/// A node reports the end of a job's run: the job ends as its kill request, its
/// preemption or the node's report says.
pub fn job_finished(turn: &mut Turn, end: JobEnd) {
    let id = end.job_id;
    // What the node says of itself holds whichever run it reports.
    if !end.drain_reason.is_empty() {
        drain_for(turn, &end.node, &end.drain_reason);
    }
    let Some(job) = turn.state.job(id) else {
        return;
    };
    // A report from another node, or of another run, is about an earlier run (the
    // job was requeued since): it says nothing about the current one.
    if batch_node(job) != Some(end.node.as_str())
        || end.restart_count != job.restart_count
        || !matches!(
            job.state,
            JobState::Running | JobState::Suspended | JobState::Completing
        )
    {
        return;
    }
    let time = if end.end_time > 0 {
        end.end_time
    } else {
        turn.now
    };
    turn.reschedule = true;
    let kill = job.kill.map(|k| k.cause);
    if let Some(usage) = end.batch_usage.clone() {
        turn.emit(Event::StepUsageMeasured {
            job_id: id,
            step_id: None,
            usage,
        });
    }
    match kill {
        Some(cause @ (KillCause::Requeue { .. } | KillCause::RequeueSpecialExit)) => {
            turn.emit(super::jobs::requeued_by_admin(turn, id, time, cause));
            return;
        }
        Some(KillCause::Cancel { by }) => {
            turn.emit(ended(
                id,
                JobState::Cancelled,
                Reason::None,
                &end,
                time,
                Some(by),
            ));
            return;
        }
        Some(KillCause::Preempt) | None => {
            if end_preempted(turn, id, time, end.exit_code, end.exit_signal) {
                return;
            }
        }
    }
    if end.kind == EndKind::PrologFailed {
        tracing::warn!(job_id = id, node = %end.node, error = %end.message, "prolog failed; requeueing the job");
        turn.emit(Event::JobRequeued {
            job_id: id,
            time,
            hold: false,
            special_exit: false,
            not_before: None,
        });
        return;
    }
    let (state, reason) = match end.kind {
        EndKind::PrologFailed => unreachable!("requeued above"),
        EndKind::Cancelled => (JobState::Cancelled, Reason::None),
        EndKind::Timeout => (JobState::Timeout, Reason::TimeLimit),
        EndKind::OutOfMemory => (JobState::OutOfMemory, Reason::OutOfMemory),
        EndKind::LaunchFailed => (JobState::Failed, Reason::JobLaunchFailure),
        EndKind::Exited if end.exit_code == 0 && end.exit_signal == 0 => {
            (JobState::Completed, Reason::None)
        }
        EndKind::Exited => (JobState::Failed, Reason::NonZeroExitCode),
    };
    if end.kind == EndKind::LaunchFailed {
        tracing::warn!(job_id = id, error = %end.message, "job launch failed on node");
    }
    // Cancelled on the node without a request here: by root (the node's own kill).
    let by = (state == JobState::Cancelled).then_some(0);
    turn.emit(ended(id, state, reason, &end, time, by));
}

fn ended(
    job_id: JobId,
    state: JobState,
    reason: Reason,
    end: &JobEnd,
    time: Time,
    cancelled_by: Option<u32>,
) -> Event {
    Event::JobEnded {
        job_id,
        state,
        exit_code: end.exit_code,
        exit_signal: end.exit_signal,
        time,
        reason,
        cancelled_by,
    }
}

/// Ends a job being preempted (CANCEL: PREEMPTED; REQUEUE: back to pending). False
/// when it is not being preempted so.
fn end_preempted(turn: &mut Turn, id: JobId, time: Time, exit_code: i32, exit_signal: i32) -> bool {
    let mode = turn
        .state
        .job(id)
        .and_then(|j| j.preemption.as_ref())
        .map(|p| p.mode);
    match mode {
        Some(PreemptMode::Requeue) => {
            tracing::info!(job_id = id, "preempted job requeued");
            turn.emit(Event::JobRequeued {
                job_id: id,
                time,
                hold: false,
                special_exit: false,
                not_before: None,
            });
        }
        Some(PreemptMode::Cancel) => {
            tracing::info!(job_id = id, "preempted job ended");
            turn.emit(Event::JobEnded {
                job_id: id,
                state: JobState::Preempted,
                exit_code,
                exit_signal,
                time,
                reason: Reason::None,
                cancelled_by: None,
            });
        }
        _ => return false,
    }
    turn.reschedule = true;
    true
}

/// A job whose node lost it or failed: it ends as its kill request says, as its
/// preemption says, requeued with `--requeue`, or NODE_FAIL.
pub(super) fn end_lost_job(turn: &mut Turn, id: JobId) {
    let Some(job) = turn.state.job(id) else {
        return;
    };
    let now = turn.now;
    let requeue = job.spec.requeue;
    match job.kill.map(|k| k.cause) {
        Some(cause @ (KillCause::Requeue { .. } | KillCause::RequeueSpecialExit)) => {
            turn.emit(super::jobs::requeued_by_admin(turn, id, now, cause))
        }
        Some(KillCause::Cancel { by }) => turn.emit(Event::JobEnded {
            job_id: id,
            state: JobState::Cancelled,
            exit_code: 0,
            exit_signal: 0,
            time: now,
            reason: Reason::None,
            cancelled_by: Some(by),
        }),
        Some(KillCause::Preempt) | None => {
            if end_preempted(turn, id, now, 0, 0) {
                return;
            }
            if requeue {
                tracing::warn!(job_id = id, "job lost with its node; requeued");
                turn.emit(Event::JobRequeued {
                    job_id: id,
                    time: now,
                    hold: false,
                    special_exit: false,
                    not_before: None,
                });
            } else {
                tracing::warn!(job_id = id, "job lost with its node; NODE_FAIL");
                turn.emit(Event::JobEnded {
                    job_id: id,
                    state: JobState::NodeFail,
                    exit_code: 0,
                    exit_signal: 0,
                    time: now,
                    reason: Reason::NodeDown,
                    cancelled_by: None,
                });
            }
        }
    }
    turn.reschedule = true;
}

/// A node failed (or an admin set it DOWN): every job holding an allocation on it is
/// killed there and ends as a lost job.
pub(super) fn fail_jobs_on(turn: &mut Turn, node: &str) {
    let ids: Vec<JobId> = turn
        .state
        .running_jobs()
        .filter(|j| {
            j.alloc
                .as_ref()
                .is_some_and(|a| a.nodes.iter().any(|n| n.node == node))
        })
        .map(|j| j.id)
        .collect();
    for id in ids {
        turn.order(id, Order::Kill);
        end_lost_job(turn, id);
    }
}
