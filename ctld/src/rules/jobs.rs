//! The rules of job commands: submit (and `--test-only`), Slurm's job ids, `scancel`,
//! `scontrol hold|release|requeue|suspend|resume`, `scontrol update job`, and steps.
//!
//! A cancel or requeue of a running job is a [`model::KillRequest`] in the job's
//! record; the job ends as the request says when its node reports the end (`nodes`).
//! Example: `scontrol requeue 7` of running job 7 records `JobKillRequested { 7,
//! Requeue }` and the effect `Order { 7, Kill }`; the node's report then records
//! `JobRequeued { 7 }`, and 7 is pending again.

use super::{Order, Turn};
use crate::command::{
    ChangeReservation, CompleteStep, ControlJobs, ControlOp, CreateStep, JobResult,
    ModifyJobRecords, Rejection, Requester, SignalJobs, SignalScope, StartedStep, Submit,
    Submitted, UpdateJobs, UpdateStep,
};
use crate::validate;
use model::job_id::{JobIdSpec, Tasks};
use model::job_update::JobChange;
use model::{
    ClusterState, Config, Event, Job, JobId, JobState, KillCause, KillRequest, Reason, Time,
};
use sched::SchedConfig;

const INVALID_JOB_ID: &str = "Invalid job id specified";

fn invalid_id() -> Rejection {
    Rejection::NotFound(INVALID_JOB_ID.into())
}

fn wrong_state(text: &str) -> Rejection {
    Rejection::WrongState(text.into())
}

/// A submit checked against the cluster: the spec with its partition, account and QOS
/// resolved, and the time limit in force.
fn check(
    state: &ClusterState,
    config: &Config,
    sched: &SchedConfig,
    submit: Submit,
) -> Result<(Submit, Option<u32>), Rejection> {
    let (spec, time_limit) = validate::check_submit(state, config, submit.spec, &submit.payload)?;
    let spec = validate::check_accounting(&sched.assocs, spec)?;
    validate::check_partition_access(state, &spec)?;
    validate::check_partition_groups(state, &spec, &submit.user_groups)?;
    Ok((
        Submit {
            spec,
            payload: submit.payload,
            user_groups: submit.user_groups,
        },
        time_limit,
    ))
}

/// `sbatch`: queues a job (or a whole array) under the next id.
pub fn submit(turn: &mut Turn, submit: Submit) -> Result<Submitted, Rejection> {
    queue(turn, vec![submit])
}

/// `sbatch` of a heterogeneous job (`#SBATCH hetjob`): its components, the leader
/// first, under consecutive ids, each checked as a job of its own; none is queued
/// unless all can be. A component that gives no time limit has the leader's, as in
/// Slurm.
pub fn submit_het(turn: &mut Turn, mut components: Vec<Submit>) -> Result<Submitted, Rejection> {
    if components.iter().any(|c| c.spec.array.is_some()) {
        return Err(Rejection::invalid(
            "Job arrays are not supported for heterogeneous jobs",
        ));
    }
    let leader_limit = components.first().and_then(|c| c.spec.time_limit_min);
    for c in components.iter_mut().skip(1) {
        c.spec.time_limit_min = c.spec.time_limit_min.or(leader_limit);
    }
    queue(turn, components)
}

/// Queues the jobs of one submission under consecutive ids, the first's id answered;
/// several are the components of a heterogeneous job.
fn queue(turn: &mut Turn, submits: Vec<Submit>) -> Result<Submitted, Rejection> {
    let checked = submits
        .into_iter()
        .map(|s| check(turn.state, turn.config, turn.sched, s))
        .collect::<Result<Vec<_>, _>>()?;
    let max = turn.config.controller.max_job_count;
    if turn.state.live_records() + checked.len() > max as usize {
        tracing::warn!(max_job_count = max, "MaxJobCount reached: submit refused");
        return Err(Rejection::Busy);
    }
    let assocs = &turn.sched.assocs;
    if sched::limits::SubmitCounts::needed(assocs) {
        let state = &*turn.state;
        let counts = turn
            .submit_counts
            .get_or_insert_with(|| sched::limits::SubmitCounts::new(state, assocs));
        for (submit, _) in &checked {
            counts
                .check(assocs, &submit.spec)
                .map_err(Rejection::Invalid)?;
        }
        for (submit, _) in &checked {
            counts.add(assocs, &submit.spec);
        }
    }
    let leader = turn.state.next_job_id;
    let count = checked.len() as u32;
    let held = checked.first().is_some_and(|(s, _)| s.spec.hold);
    for (offset, (submit, time_limit)) in checked.into_iter().enumerate() {
        let id = turn.state.next_job_id;
        let mut job = Job::new(id, submit.spec, turn.now, time_limit);
        job.het = (count > 1).then_some(model::job::HetJob {
            leader,
            offset: offset as u32,
            count,
        });
        turn.payloads.push((id, submit.payload));
        turn.emit(Event::JobSubmitted { job: Box::new(job) });
        tracing::debug!(job_id = id, "job submitted");
    }
    // A held job cannot start and changes no other job's plan: no pass for it.
    if !held {
        turn.reschedule = true;
    }
    Ok(Submitted {
        job_id: leader,
        estimated_start: 0,
        estimated_nodes: String::new(),
    })
}

/// `sbatch --test-only`: checks the job as a submit would and says when and where it
/// would start, from a snapshot of the state; nothing is queued or stored. As Slurm's
/// will-run test, a job that cannot start now gets its earliest start behind every
/// pending job ahead of it, each planned at its own earliest start (a conservative
/// pass over the trial state, whatever the configured policy).
pub fn estimate(
    state: &ClusterState,
    config: &Config,
    sched: &SchedConfig,
    submit: Submit,
    now: Time,
) -> Result<Submitted, Rejection> {
    let (submit, time_limit) = check(state, config, sched, submit)?;
    if sched::limits::SubmitCounts::needed(&sched.assocs) {
        sched::limits::SubmitCounts::new(state, &sched.assocs)
            .check(&sched.assocs, &submit.spec)
            .map_err(Rejection::Invalid)?;
    }
    let mut trial = state.clone();
    let id = trial.next_job_id;
    trial.apply(&Event::JobSubmitted {
        job: Box::new(Job::new(id, submit.spec, now, time_limit)),
    });
    let mut will_run = sched.clone();
    will_run.backfill.policy = sched::Policy::Conservative;
    will_run.backfill.max_reservations = 0;
    let plan = sched::schedule(&trial, now, &will_run);
    let (estimated_start, estimated_nodes) = match plan.starts.iter().find(|s| s.job_id == id) {
        Some(start) => (now, start.alloc.hostlist()),
        None => plan
            .pending
            .get(&id)
            .map(|p| (p.planned_start, p.planned_nodes.clone()))
            .unwrap_or_default(),
    };
    Ok(Submitted {
        job_id: id,
        estimated_start,
        estimated_nodes,
    })
}

/// Resolves a job id as users write it (`12`, `12_3`, `12_[1-3]`, `12_*`) to records,
/// splitting pending array tasks into records of their own when named alone. Nothing
/// is split unless every task named exists and `who` may change the array.
pub fn resolve_ids(turn: &mut Turn, text: &str, who: &Requester) -> Result<Vec<JobId>, Rejection> {
    let (array_id, named) = resolve_named(turn, text, who)?;
    let mut out = Vec::new();
    for n in named {
        let pending = turn
            .state
            .job(array_id)
            .map_or(0, |m| m.pending_tasks.len());
        match n {
            Ok(id) => out.push(id),
            // The last pending task stays in the array's record.
            Err(_) if pending == 1 => out.push(array_id),
            Err(task) => {
                let new_id = turn.state.next_job_id;
                turn.emit(Event::ArrayTaskSplit {
                    array_id,
                    task_id: task,
                    new_id,
                });
                out.push(new_id);
            }
        }
    }
    Ok(out)
}

/// The records a job id names (`Ok`), and the array's pending tasks it names that
/// have no record of their own yet (`Err(task)`), with the array's id. Naming such a
/// task asks for the right to change the array's record.
fn resolve_named(
    turn: &Turn,
    text: &str,
    who: &Requester,
) -> Result<(JobId, Vec<Result<JobId, u32>>), Rejection> {
    let spec = JobIdSpec::parse(text).map_err(|_| invalid_id())?;
    if spec.step().is_some() {
        return Err(invalid_id());
    }
    let base = spec.job_id();
    let job = turn.state.job(base).ok_or_else(invalid_id)?;
    let array_id = if job.array_job_id != 0 {
        job.array_job_id
    } else {
        base
    };
    let records_of_array = |turn: &Turn| -> Vec<JobId> {
        turn.state
            .jobs
            .range(array_id..)
            .filter(|(_, j)| j.array_job_id == array_id)
            .map(|(id, _)| *id)
            .collect()
    };
    let all = |ids: Vec<JobId>| (array_id, ids.into_iter().map(Ok).collect());
    let tasks = match spec.tasks() {
        // A plain id names a job, or every record of the array it starts, or every
        // component of the heterogeneous job it leads.
        Tasks::Unnamed if job.array_job_id == base => return Ok(all(records_of_array(turn))),
        Tasks::Unnamed => match job.het.filter(|h| h.leader == base) {
            Some(h) => {
                let ids = h.ids().filter(|id| turn.state.job(*id).is_some()).collect();
                return Ok(all(ids));
            }
            None => return Ok(all(vec![base])),
        },
        Tasks::HetComponent(k) => {
            let id = job
                .het
                .filter(|h| h.leader == base && *k < h.count)
                .map(|h| h.leader + k)
                .filter(|id| turn.state.job(*id).is_some())
                .ok_or_else(invalid_id)?;
            return Ok(all(vec![id]));
        }
        Tasks::Every if job.array_job_id != 0 => return Ok(all(records_of_array(turn))),
        Tasks::Every => return Err(invalid_id()),
        Tasks::Listed { ids, .. } => ids.clone(),
    };
    // Each task named: its own record, or a pending task still in the array's record.
    let mut named = Vec::new();
    for task in tasks {
        let existing = turn
            .state
            .jobs
            .range(array_id..)
            .find(|(_, j)| j.array_job_id == array_id && j.array_task_id == Some(task))
            .map(|(id, _)| *id);
        let pending = || {
            turn.state
                .job(array_id)
                .is_some_and(|m| m.pending_tasks.contains(&task))
        };
        match existing {
            Some(id) => named.push(Ok(id)),
            None if pending() => named.push(Err(task)),
            None => return Err(invalid_id()),
        }
    }
    let splits = named.iter().filter(|n| n.is_err()).count();
    let assocs = turn.sched.assocs.as_ref();
    if splits > 0
        && !turn
            .state
            .job(array_id)
            .is_some_and(|m| who.may_act_on(assocs, m))
    {
        return Err(Rejection::PermissionDenied);
    }
    Ok((array_id, named))
}

/// A cancel's records: the pending tasks it names that are still in their array's
/// record leave it without a record of their own (the array's last pending task is the
/// record itself, cancelled as one); the records named are returned.
fn cancel_pending_tasks(
    turn: &mut Turn,
    text: &str,
    cmd: &SignalJobs,
) -> Result<Vec<JobId>, Rejection> {
    let (array_id, named) = resolve_named(turn, text, &cmd.requester)?;
    let mut records = Vec::new();
    for n in named {
        let Err(task_id) = n else {
            records.extend(n.ok());
            continue;
        };
        let Some(meta) = turn.state.job(array_id) else {
            continue;
        };
        if meta.pending_tasks.len() == 1 {
            records.push(array_id);
        } else if cmd.filter.matches(meta) {
            turn.emit(Event::ArrayTaskCancelled { array_id, task_id });
            turn.reschedule = true;
        }
    }
    Ok(records)
}

/// The job named, if `who` may change it.
fn owned<'s>(turn: &'s Turn, id: JobId, who: &Requester) -> Result<&'s Job, Rejection> {
    let job = turn.state.job(id).ok_or_else(invalid_id)?;
    if !who.may_act_on(&turn.sched.assocs, job) {
        return Err(Rejection::PermissionDenied);
    }
    Ok(job)
}

/// Runs `each` on every record each id names, one result per id as the user wrote it.
fn for_each_id(
    turn: &mut Turn,
    ids: &[String],
    who: &Requester,
    mut each: impl FnMut(&mut Turn, JobId) -> Result<(), Rejection>,
) -> Vec<JobResult> {
    ids.iter()
        .map(|text| {
            // Every record named is tried; the first refusal is the answer.
            let outcome = resolve_ids(turn, text, who).and_then(|ids| {
                let mut first = Ok(());
                for id in ids {
                    let result = each(turn, id);
                    if first.is_ok() {
                        first = result;
                    }
                }
                first
            });
            JobResult {
                job_id: text.clone(),
                error: outcome.err(),
            }
        })
        .collect()
}

/// `scancel`: cancels (signal 0) or signals the jobs named, or without ids every live
/// job the filter selects.
pub fn signal(turn: &mut Turn, cmd: SignalJobs) -> Vec<JobResult> {
    let selected = |turn: &Turn, id: JobId, explicit: bool| {
        turn.state
            .job(id)
            .is_some_and(|j| (explicit || !j.state.is_final()) && cmd.filter.matches(j))
    };
    if cmd.job_ids.is_empty() {
        let ids: Vec<JobId> = turn
            .state
            .jobs
            .keys()
            .copied()
            .filter(|id| selected(turn, *id, false))
            .collect();
        return ids
            .into_iter()
            .map(|id| JobResult {
                job_id: id.to_string(),
                error: signal_one(turn, id, &cmd).err(),
            })
            .collect();
    }
    let mut results = Vec::new();
    for text in &cmd.job_ids {
        if let Some(result) = signal_step(turn, text, &cmd) {
            results.push(result);
            continue;
        }
        let resolved = if cmd.signal == 0 {
            cancel_pending_tasks(turn, text, &cmd)
        } else {
            resolve_ids(turn, text, &cmd.requester)
        };
        match resolved {
            Ok(ids) => {
                let ids: Vec<JobId> = ids
                    .into_iter()
                    .filter(|id| selected(turn, *id, true))
                    .collect();
                for id in ids {
                    results.push(JobResult {
                        job_id: text.clone(),
                        error: signal_one(turn, id, &cmd).err(),
                    });
                }
            }
            Err(e) => results.push(JobResult {
                job_id: text.clone(),
                error: Some(e),
            }),
        }
    }
    results
}

/// `scancel JOB.STEP`: the signal (a cancel: SIGKILL) to a running step's tasks, on
/// each node the step runs on; `None` when `text` names no step.
fn signal_step(turn: &mut Turn, text: &str, cmd: &SignalJobs) -> Option<JobResult> {
    let spec = JobIdSpec::parse(text).ok()?;
    let step = spec.step()?;
    let mut order_step = || -> Result<(), Rejection> {
        let model::job_id::StepId::Numbered(step_id) = step else {
            return Err(invalid_id());
        };
        let job_text = spec.without_step().to_string();
        let ids = resolve_ids(turn, &job_text, &cmd.requester)?;
        let [id] = ids[..] else {
            return Err(invalid_id());
        };
        let job = owned(turn, id, &cmd.requester)?;
        if job.state.is_final() {
            return Err(wrong_state("Job/step already completing or completed"));
        }
        let nodes = job
            .steps
            .iter()
            .find(|s| s.id == Some(step_id) && !s.state.is_final())
            .map(|s| s.nodes.clone())
            .ok_or_else(invalid_id)?;
        for node in nodes {
            turn.effects.push(super::Effect::Order {
                job_id: id,
                node,
                order: Order::SignalStep {
                    step_id,
                    signal: cmd.signal,
                },
            });
        }
        Ok(())
    };
    Some(JobResult {
        job_id: text.to_string(),
        error: order_step().err(),
    })
}

fn signal_one(turn: &mut Turn, id: JobId, cmd: &SignalJobs) -> Result<(), Rejection> {
    let job = owned(turn, id, &cmd.requester)?;
    // A component of a heterogeneous job is cancelled with the whole job: its leader's
    // end takes the others with it (`Turn::emit`).
    if cmd.signal == 0
        && let Some(het) = job.het.filter(|h| h.offset != 0)
        && turn
            .state
            .job(het.leader)
            .is_some_and(|l| !l.state.is_final())
    {
        return signal_one(turn, het.leader, cmd);
    }
    match (job.state, cmd.signal) {
        (s, _) if s.is_final() => Err(wrong_state("Job/step already completing or completed")),
        (s, 0) if s.is_waiting() => {
            turn.emit(Event::JobEnded {
                job_id: id,
                state: JobState::Cancelled,
                exit_code: 0,
                exit_signal: 0,
                time: turn.now,
                reason: Reason::None,
                cancelled_by: Some(cmd.requester.uid),
            });
            turn.reschedule = true;
            Ok(())
        }
        // A signal reaches the tasks of running steps: not yet to a job that waits
        // or whose start its node has not confirmed (Slurm's transitional state,
        // which scancel asks again after).
        (s, _) if s.is_waiting() => Err(Rejection::NotYet),
        (JobState::Running, signal) if signal != 0 && !job.launched => Err(Rejection::NotYet),
        (_, 0) => {
            // A repeated cancel keeps the first canceller; a cancel overrides a
            // requeue or a preemption's kill.
            if !matches!(job.kill.map(|k| k.cause), Some(KillCause::Cancel { .. })) {
                request_kill(
                    turn,
                    id,
                    KillCause::Cancel {
                        by: cmd.requester.uid,
                    },
                );
            }
            turn.order(id, Order::Kill);
            Ok(())
        }
        (_, signal) => {
            // `-b`: the batch shell, and `-f` its whole group, on the batch node; else
            // the job's steps, on every node they may run on.
            match cmd.scope {
                SignalScope::Steps => turn.order_every_node(
                    id,
                    Order::Signal {
                        signal,
                        batch_only: false,
                    },
                ),
                SignalScope::Batch => turn.order(
                    id,
                    Order::Signal {
                        signal,
                        batch_only: true,
                    },
                ),
                SignalScope::Full => turn.order(id, Order::SignalAll { signal }),
            }
            Ok(())
        }
    }
}

/// Records an acknowledged kill of a running job.
pub(super) fn request_kill(turn: &mut Turn, job_id: JobId, cause: KillCause) {
    let time = turn.now;
    turn.emit(Event::JobKillRequested {
        job_id,
        request: KillRequest { cause, time },
    });
}

/// The end of an admin's requeue (`scontrol requeue`, `requeuehold`, an idle-GPU
/// requeue) at `time`: the job may start again only `requeue_delay_s` later, as Slurm
/// holds a requeued batch job back.
pub(super) fn requeued_by_admin(turn: &Turn, job_id: JobId, time: Time, cause: KillCause) -> Event {
    let delay = Time::from(turn.config.controller.requeue_delay_s);
    Event::JobRequeued {
        job_id,
        time,
        hold: matches!(cause, KillCause::Requeue { hold: true }),
        special_exit: cause == KillCause::RequeueSpecialExit,
        not_before: Some(time + delay),
    }
}

/// `scontrol hold|uhold|release|requeue|requeuehold|suspend|resume|top`.
pub fn control(turn: &mut Turn, cmd: ControlJobs) -> Vec<JobResult> {
    if cmd.op == ControlOp::Top {
        return top(turn, &cmd);
    }
    for_each_id(turn, &cmd.job_ids, &cmd.requester, |turn, id| {
        let requeue = matches!(
            cmd.op,
            ControlOp::Requeue | ControlOp::RequeueHold | ControlOp::RequeueSpecialExit
        );
        if requeue && cmd.incomplete {
            let job = owned(turn, id, &cmd.requester)?;
            if !matches!(job.state, JobState::Running | JobState::Suspended) {
                return Ok(());
            }
        }
        control_one(turn, id, cmd.op, &cmd.requester)
    })
}

/// `scontrol notify`: the job's owner's or an operator's message, kept for the srun or
/// salloc that holds its allocation (which print it) and, once the job runs, written
/// on its batch script's stderr by its node, as Slurm's.
pub fn notify(turn: &mut Turn, cmd: crate::command::NotifyJob) -> Result<(), Rejection> {
    let job = owned(turn, cmd.job_id, &cmd.requester)?;
    if job.state.is_final() {
        return Err(wrong_state("Job/step already completing or completed"));
    }
    if cmd.message.len() > model::job::Notices::MAX_LEN {
        return Err(Rejection::invalid("Message too long"));
    }
    let node = (job.state == JobState::Running)
        .then(|| super::batch_node(job).map(str::to_string))
        .flatten();
    turn.emit(Event::JobNotified {
        job_id: cmd.job_id,
        message: cmd.message.clone(),
    });
    if let Some(node) = node {
        turn.effects.push(super::Effect::Notify {
            job_id: cmd.job_id,
            node,
            message: cmd.message,
        });
    }
    Ok(())
}

/// `scontrol top`: an operator's (Slurm allows others only with
/// `enable_user_top`). The jobs named that are pending, of the first one's user,
/// partition, account and QOS, get the top priorities of that group in their order
/// (`sched::priority::top_priorities`), through their nice values, as Slurm's (or
/// their fixed priority, where an operator fixed one).
fn top(turn: &mut Turn, cmd: &ControlJobs) -> Vec<JobResult> {
    let who = &cmd.requester;
    let mut listed = Vec::new();
    let results = for_each_id(turn, &cmd.job_ids, who, |turn, id| {
        if !who.is_operator() {
            return Err(Rejection::PermissionDenied);
        }
        let job = turn.state.job(id).ok_or_else(invalid_id)?;
        if !job.is_pending() {
            return Err(wrong_state("Job is no longer pending execution"));
        }
        listed.push(id);
        Ok(())
    });
    let Some(first) = listed.first().and_then(|&id| turn.state.job(id)) else {
        return results;
    };
    let group_key = top_group(first);
    let ctx = sched::priority::Context::new(turn.state, turn.now, turn.sched);
    let group: Vec<(JobId, u32)> = turn
        .state
        .pending_jobs()
        .filter(|j| !j.held && top_group(j) == group_key)
        .map(|j| (j.id, ctx.rank(j).1))
        .collect();
    let mut updates = Vec::new();
    for (id, new) in sched::priority::top_priorities(&listed, &group) {
        let old = group.iter().find(|(g, _)| *g == id).map_or(new, |g| g.1);
        let Some(job) = turn.state.job(id).filter(|_| old != new) else {
            continue;
        };
        let mut spec = job.spec.clone();
        if spec.priority.is_some() {
            spec.priority = Some(new);
        } else {
            let nice = i64::from(spec.nice) + i64::from(old) - i64::from(new);
            let most = i64::from(model::job_update::MAX_NICE);
            spec.nice = nice.clamp(-most, most) as i32;
        }
        updates.push(Event::JobUpdated {
            job_id: id,
            spec: Box::new(spec),
            time_limit_min: job.time_limit_min,
        });
    }
    for update in updates {
        turn.emit(update);
    }
    turn.reschedule = true;
    results
}

/// What `scontrol top` reorders within: a job's user, partition, account and QOS.
fn top_group(j: &Job) -> (u32, &str, &str, &str) {
    (j.spec.uid, &j.spec.partition, &j.spec.account, &j.spec.qos)
}

fn control_one(
    turn: &mut Turn,
    id: JobId,
    op: ControlOp,
    who: &Requester,
) -> Result<(), Rejection> {
    let job = owned(turn, id, who)?;
    let state = job.state;
    let now = turn.now;
    let not_pending = || wrong_state("Job is no longer pending execution");
    match op {
        ControlOp::Hold | ControlOp::Uhold => {
            if !state.is_waiting() {
                return Err(not_pending());
            }
            let reason = if op == ControlOp::Hold && who.is_operator() {
                Reason::JobHeldAdmin
            } else {
                Reason::JobHeldUser
            };
            turn.emit(Event::JobHeld {
                job_id: id,
                held: true,
                reason,
            });
        }
        ControlOp::Release => {
            if !state.is_waiting() {
                return Err(not_pending());
            }
            turn.emit(Event::JobHeld {
                job_id: id,
                held: false,
                reason: Reason::None,
            });
            turn.reschedule = true;
        }
        ControlOp::Requeue | ControlOp::RequeueHold | ControlOp::RequeueSpecialExit => {
            let cause = if op == ControlOp::RequeueSpecialExit {
                KillCause::RequeueSpecialExit
            } else {
                KillCause::Requeue {
                    hold: op == ControlOp::RequeueHold,
                }
            };
            match state {
                s if s.is_waiting() => return Err(wrong_state("Job is pending execution")),
                JobState::Running | JobState::Suspended | JobState::Completing => {
                    if matches!(job.kill.map(|k| k.cause), Some(KillCause::Cancel { .. })) {
                        return Err(wrong_state("Job/step already completing or completed"));
                    }
                    request_kill(turn, id, cause);
                    turn.order(id, Order::Kill);
                }
                _ => {
                    let requeued = requeued_by_admin(turn, id, now, cause);
                    turn.emit(requeued);
                    turn.reschedule = true;
                }
            }
        }
        ControlOp::Suspend | ControlOp::Resume => {
            if !who.is_operator() {
                return Err(Rejection::PermissionDenied);
            }
            let resume = op == ControlOp::Resume;
            match (state, resume) {
                (JobState::Running, false) => turn.emit(Event::JobSuspended {
                    job_id: id,
                    time: now,
                    preemptor: None,
                }),
                (JobState::Suspended, true) => turn.emit(Event::JobResumed {
                    job_id: id,
                    time: now,
                }),
                (s, _) if s.is_waiting() => return Err(wrong_state("Job is pending execution")),
                (_, false) => return Err(wrong_state("Job is not running")),
                (_, true) => return Err(wrong_state("Job is not suspended")),
            }
            tracing::info!(job_id = id, resume, "job suspended or resumed by an admin");
            turn.order(
                id,
                if resume {
                    Order::Resume
                } else {
                    Order::Suspend
                },
            );
            turn.reschedule = true;
        }
        // The whole list at once (`top`), never one by one.
        ControlOp::Top => return Err(Rejection::invalid("scontrol top takes its jobs together")),
    }
    Ok(())
}

/// `scontrol update job`: the changes applied to each job as it stands now (a
/// relative time limit moves the current one). A new partition must exist, take jobs
/// and the job's node count, and allow its account and QOS; a new account or QOS is
/// resolved and checked as at submit.
pub fn update(turn: &mut Turn, cmd: UpdateJobs) -> Vec<JobResult> {
    let results = for_each_id(turn, &cmd.job_ids, &cmd.requester, |turn, id| {
        update_one(turn, id, &cmd.changes, &cmd.requester)
    });
    turn.reschedule = true;
    results
}

/// `sacctmgr modify job`: each job's accounting record (comment, DerivedExitCode), in
/// any state, by its owner or an operator.
pub fn modify_records(turn: &mut Turn, cmd: ModifyJobRecords) -> Vec<JobResult> {
    for_each_id(turn, &cmd.job_ids, &cmd.requester, |turn, id| {
        let job = owned(turn, id, &cmd.requester)?;
        let (comment, derived_exit_status) =
            model::job_update::apply_record(job, &cmd.changes).map_err(update_refused)?;
        turn.emit(Event::JobRecordModified {
            job_id: id,
            comment,
            derived_exit_status,
        });
        Ok(())
    })
}

/// Why `scontrol update` cannot make a change, in the controller's terms.
fn update_refused(e: model::job_update::UpdateError) -> Rejection {
    use model::job_update::UpdateError;
    match e {
        UpdateError::PermissionDenied => Rejection::PermissionDenied,
        UpdateError::WrongState(text) => Rejection::WrongState(text),
        e @ (UpdateError::Invalid(_) | UpdateError::Unsupported(_)) => {
            Rejection::Invalid(e.to_string())
        }
    }
}

fn update_one(
    turn: &mut Turn,
    id: JobId,
    changes: &[JobChange],
    who: &Requester,
) -> Result<(), Rejection> {
    let job = owned(turn, id, who)?;
    let old_assoc = (job.spec.account.clone(), job.spec.qos.clone());
    let old_partition = job.spec.partition.clone();
    let (mut spec, limit) =
        model::job_update::apply(job, changes, who.is_operator()).map_err(update_refused)?;
    // Only an operator raises a job's priority (Slurm's rule); 0 holds the job.
    let new_priority = changes.iter().rev().find_map(|c| match c {
        JobChange::Priority(n) => Some(*n),
        _ => None,
    });
    if let Some(n) = new_priority.filter(|_| !who.is_operator()) {
        let (_, current) =
            sched::priority::Context::new(turn.state, turn.now, turn.sched).rank(job);
        if n > current {
            return Err(Rejection::PermissionDenied);
        }
    }
    let hold = new_priority == Some(0) && !job.held;
    // A running job shrunk (`NumNodes=` fewer than it has: the model refused more).
    let shrink = changes.iter().rev().find_map(|c| match c {
        JobChange::NumNodes(n) if !job.is_pending() => job
            .alloc
            .as_ref()
            .filter(|a| (*n as usize) < a.nodes.len())
            .map(|a| a.shrunk_to(*n as usize)),
        _ => None,
    });
    let invalid = |text: &str| Err(Rejection::invalid(text));
    for change in changes {
        match change {
            JobChange::Partition(list)
                if list
                    .split(model::job::PARTITION_LIST_SEPARATOR)
                    .any(|p| turn.state.partition(p).is_none()) =>
            {
                return invalid("Invalid partition name specified");
            }
            JobChange::Dependency(d) if !d.is_empty() && sched::dependency::parse(d).is_err() => {
                return invalid("Job dependency problem");
            }
            JobChange::Reservation(r)
                if model::job::reservation_names(r)
                    .any(|r| !turn.state.reservations.contains_key(r)) =>
            {
                return invalid("Invalid reservation name specified");
            }
            _ => {}
        }
    }
    let moved = spec.partition != old_partition || spec.more_partitions != job.spec.more_partitions;
    if moved {
        validate::check_partition_move(turn.state, &spec)?;
    }
    let assoc_changed = (&spec.account, &spec.qos) != (&old_assoc.0, &old_assoc.1);
    if assoc_changed {
        spec = validate::check_accounting(&turn.sched.assocs, spec)?;
    }
    if moved || assoc_changed {
        validate::check_partition_access(turn.state, &spec)?;
    }
    turn.emit(Event::JobUpdated {
        job_id: id,
        spec: Box::new(spec),
        time_limit_min: limit,
    });
    if let Some((kept, given_up)) = shrink {
        tracing::info!(job_id = id, nodes = %kept.hostlist(), "job shrunk");
        turn.emit(Event::JobResized {
            job_id: id,
            alloc: kept,
        });
        // What its steps still run on the nodes it gave up ends (Slurm's
        // abort_job_on_nodes), and those nodes are free for others.
        for node in given_up {
            turn.effects.push(super::Effect::Order {
                job_id: id,
                node,
                order: Order::Signal {
                    signal: libc::SIGKILL,
                    batch_only: false,
                },
            });
        }
        turn.reschedule = true;
    }
    if hold {
        turn.emit(Event::JobHeld {
            job_id: id,
            held: true,
            reason: if who.is_operator() {
                Reason::JobHeldAdmin
            } else {
                Reason::JobHeldUser
            },
        });
    }
    Ok(())
}

/// `srun` inside an allocation: a new step of the running job; its id.
pub fn create_step(turn: &mut Turn, cmd: CreateStep) -> Result<StartedStep, Rejection> {
    let job = turn.state.job(cmd.job_id).ok_or_else(invalid_id)?;
    if job.state != JobState::Running {
        return Err(wrong_state("Job is not running"));
    }
    if !cmd.requester.may_act_on(&turn.sched.assocs, job) {
        return Err(Rejection::PermissionDenied);
    }
    // Until its node has taken the launch (and cleared what an earlier run left), a
    // step would race the job's own start there: srun asks again, as Slurm's does.
    if !job.launched {
        return Err(wrong_state(model::step::NODES_BUSY));
    }
    let refused = |e: model::step::StepLayoutError| Rejection::invalid(e.to_string());
    // The nodes the step may use, those `-w` names first; `-w` alone asks for them all.
    let job_nodes = job.alloc.clone().unwrap_or_default().nodes;
    let names: Vec<&str> = job_nodes.iter().map(|n| n.node.as_str()).collect();
    // `-m arbitrary`: the nodes its tasks name, and no other.
    let arbitrary = !cmd.task_nodes.is_empty();
    let nodelist = if arbitrary {
        &cmd.task_nodes
    } else {
        &cmd.nodelist
    };
    let candidates =
        model::step::step_candidates(&names, nodelist, &cmd.exclude).map_err(refused)?;
    // `-r N`: from the job's node N on.
    let mut candidates: Vec<usize> = candidates
        .into_iter()
        .filter(|i| *i >= cmd.relative as usize)
        .filter(|i| !arbitrary || cmd.task_nodes.contains(&job_nodes[*i].node))
        .collect();
    if candidates.is_empty() {
        return Err(Rejection::invalid(model::step::INVALID_RELATIVE));
    }
    let mut request = cmd.request;
    if request.num_nodes == 0 {
        request.num_nodes = cmd.nodelist.len() as u32;
    }
    if !arbitrary && !request.exclusive {
        // The nodes the step takes, in the job's order, as Slurm numbers the tasks:
        // `-w` chooses them, not their order.
        candidates.truncate(model::step::node_count(request, candidates.len() as u32) as usize);
        candidates.sort_unstable();
    }
    let alloc: Vec<model::NodeAllocation> =
        candidates.iter().map(|i| job_nodes[*i].clone()).collect();
    // An `--overcommit` job's steps may run more tasks than its CPUs, as Slurm's
    // (its srun inherits SLURM_OVERCOMMIT): the CPUs bound no task count.
    let cpus: Vec<u32> = alloc
        .iter()
        .map(|n| {
            if job.spec.details.overcommit {
                u32::MAX
            } else {
                n.cpus
            }
        })
        .collect();
    let request = request.within_a_node(cmd.gpu_request.cpus_per_gpu, &cpus);
    let nodes: Vec<(model::NodeAllocation, Vec<u32>)> = if arbitrary {
        let names: Vec<&str> = alloc.iter().map(|n| n.node.as_str()).collect();
        model::step::arbitrary_layout(request, &names, &cpus, &cmd.task_nodes)
            .map_err(refused)?
            .into_iter()
            .map(|(i, tasks)| (alloc[i].clone(), tasks))
            .collect()
    } else if request.exclusive {
        // Only the CPUs its tasks need, of those no running step holds: the step's
        // share of each node is that many of the job's CPUs, after the held ones.
        let names: Vec<&str> = alloc.iter().map(|n| n.node.as_str()).collect();
        let running = job
            .steps
            .iter()
            .filter(|s| s.id.is_some() && s.state == JobState::Running);
        let held = model::step::held_cpus(&names, running);
        let layout = model::step::exclusive_layout(request, &cpus, &held)
            .map_err(refused)?
            .ok_or_else(|| wrong_state(model::step::NODES_BUSY))?;
        let per_task = request.cpus_per_task.max(1);
        layout
            .into_iter()
            .map(|(i, tasks)| {
                let mut share = alloc[i].clone();
                share.cpus = (tasks.len() as u32 * per_task).min(alloc[i].cpus);
                share.cpu_ids = alloc[i]
                    .cpu_ids
                    .iter()
                    .copied()
                    .cycle()
                    .skip(held[i] as usize)
                    .take(share.cpus as usize)
                    .collect();
                (share, tasks)
            })
            .collect()
    } else {
        model::step::layout(request, &cpus)
            .map_err(refused)?
            .into_iter()
            .map(|(i, tasks)| (alloc[i].clone(), tasks))
            .collect()
    };
    let num_tasks = nodes.iter().map(|(_, t)| t.len() as u32).sum::<u32>();
    let step_id = job.next_step_id;
    let step = model::Step {
        num_tasks,
        nodes: nodes.iter().map(|(n, _)| n.node.clone()).collect(),
        cpus: nodes.iter().map(|(n, _)| n.cpus).sum(),
        time_limit_min: cmd.time_limit_min,
        gpu_request: cmd.gpu_request,
        ..model::Step::started(Some(step_id), &cmd.name, turn.now)
    };
    turn.emit(Event::StepStarted {
        job_id: cmd.job_id,
        step,
    });
    Ok(StartedStep { step_id, nodes })
}

/// The end of a step `srun` started: a step that does not exist is refused, one that
/// already ended stays as it ended.
pub fn complete_step(turn: &mut Turn, cmd: CompleteStep) -> Result<(), Rejection> {
    let job = owned(turn, cmd.job_id, &cmd.requester)?;
    let step = job.steps.iter().find(|s| s.id == Some(cmd.step_id));
    match step {
        None => return Err(invalid_id()),
        // Told twice (a retried report): it ended as it was first told.
        Some(step) if step.state.is_final() => return Ok(()),
        Some(_) => {}
    }
    let time = turn.now;
    if let Some(usage) = cmd.usage {
        turn.emit(Event::StepUsageMeasured {
            job_id: cmd.job_id,
            step_id: Some(cmd.step_id),
            usage,
        });
    }
    turn.emit(Event::StepEnded {
        job_id: cmd.job_id,
        step_id: cmd.step_id,
        exit_code: cmd.exit_code,
        exit_signal: cmd.exit_signal,
        time,
    });
    Ok(())
}

/// `scontrol update StepId=JOB[.STEP] TimeLimit=`: the new limit of the step, or of
/// every running step of the job. A step without a limit of its own has its job's; as
/// for a job, only an operator raises it. A step that ended, or a job with no running
/// step, is refused with Slurm's words.
pub fn update_step(turn: &mut Turn, cmd: UpdateStep) -> Result<(), Rejection> {
    let job = owned(turn, cmd.job_id, &cmd.requester)?;
    if job.state.is_final() {
        return Err(wrong_state("Job/step already completing or completed"));
    }
    let steps: Vec<&model::Step> = job
        .steps
        .iter()
        .filter(|s| s.id.is_some() && (cmd.step_id.is_none() || s.id == cmd.step_id))
        .filter(|s| s.state == JobState::Running)
        .collect();
    if steps.is_empty() {
        return Err(invalid_id());
    }
    let mut limits = Vec::with_capacity(steps.len());
    for step in steps {
        let current = step.time_limit_min.or(job.time_limit_min);
        let limit = cmd
            .time_limit
            .apply(current, cmd.requester.is_operator())
            .map_err(update_refused)?;
        limits.push((step.id.unwrap_or_default(), limit));
    }
    for (step_id, time_limit_min) in limits {
        tracing::info!(
            job_id = cmd.job_id,
            step_id,
            ?time_limit_min,
            "step time limit updated"
        );
        turn.emit(Event::StepTimeLimitSet {
            job_id: cmd.job_id,
            step_id,
            time_limit_min,
        });
    }
    Ok(())
}

/// `scontrol create|update|delete partition`: the partition's name.
pub fn change_partition(
    turn: &mut Turn,
    cmd: crate::command::ChangePartition,
) -> Result<String, Rejection> {
    let event = crate::partitions::change(turn.state, &cmd)?;
    let name = event.partition_name().unwrap_or_default().to_string();
    turn.emit(event);
    turn.reschedule = true;
    Ok(name)
}

/// `scontrol reconfigure`: the config's partitions as its file defines them, where
/// `scontrol update` or `delete` changed them.
pub fn restore_partitions(turn: &mut Turn, config: &[model::config::Partition]) {
    let events = crate::partitions::restore(turn.state, config);
    turn.reschedule |= !events.is_empty();
    for event in events {
        turn.emit(event);
    }
}

/// `scontrol create|update|delete reservation`: the reservation's name.
pub fn change_reservation(turn: &mut Turn, cmd: ChangeReservation) -> Result<String, Rejection> {
    let event = crate::reservations::change(turn.state, &cmd, turn.now)?;
    let name = event.reservation_name().unwrap_or_default().to_string();
    turn.emit(event);
    turn.reschedule = true;
    Ok(name)
}
