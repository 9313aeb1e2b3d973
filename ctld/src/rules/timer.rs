//! The rules of time: the periodic tick and the scheduling pass.
//!
//! The tick kills preempted jobs whose grace time is over (a kill request in their
//! record, so that a restart does not forget it), drops reservations that ended, sets
//! DOWN the nodes silent for longer than `node_timeout_s`, ending their jobs, kills the
//! steps that ran past their own time limit, mails
//! the jobs that passed a share of their time limit since the tick before, and once a
//! minute purges finished jobs older than `purge_job_after` and their steps older than
//! `purge_step_after` (handing the records to the shell to archive first, with
//! `archive_jobs`). The
//! pass runs `sched::schedule` and carries the plan out with `Plan::apply`, the code
//! the simulator uses too; the effects follow from its events.
//!
//! Example: job 3 is preempted with CANCEL and a grace time of 30 s at t=100: the pass
//! records `JobPreempted { 3, grace 30 }` and sends SIGTERM to all of 3's processes;
//! the first tick at t>=130 records `JobKillRequested { 3, Preempt }` and kills it.

use super::nodes::fail_jobs_on;
use super::{Order, Turn};
use model::node::NOT_RESPONDING;
use model::{Event, JobId, JobState, KillCause, NodeHealth, PreemptMode, Time};

/// Most finished jobs one tick purges: a large backlog goes over several ticks.
const PURGE_BATCH: usize = 10_000;

/// Steps run past their own time limit (`srun -t`) are killed on each of their nodes
/// and end TIMEOUT; their job goes on, as in Slurm.
fn kill_steps_past_their_limit(turn: &mut Turn) {
    let now = turn.now;
    let over: Vec<(JobId, u32, Vec<String>)> = turn
        .state
        .running_jobs()
        .filter(|j| j.state == JobState::Running)
        .flat_map(|j| {
            j.steps
                .iter()
                .filter(|s| s.time_limit_reached(now))
                .map(|s| (j.id, s.id.unwrap_or_default(), s.nodes.clone()))
        })
        .collect();
    for (job_id, step_id, nodes) in over {
        tracing::info!(job_id, step_id, "step time limit reached: killing the step");
        turn.emit(Event::StepTimedOut { job_id, step_id });
        for node in nodes {
            turn.effects.push(super::Effect::Order {
                job_id,
                node,
                order: Order::StepTimeLimit { step_id },
            });
        }
    }
}

/// Retention, in one scan of the records: finished jobs that ended before
/// `purge_job_after` ago leave the state and the store (Slurm's PurgeJobAfter), but the
/// newest; of the others, those that ended before `purge_step_after` ago lose their
/// steps, their own records kept (PurgeStepAfter).
fn purge(turn: &mut Turn) {
    let cutoff = |age: &str| match model::units::PurgeAge::parse(age) {
        Ok(Some(age)) => Some(age.cutoff(turn.now)),
        _ => None,
    };
    let controller = &turn.config.controller;
    let (jobs_before, steps_before) = (
        cutoff(&controller.purge_job_after),
        cutoff(&controller.purge_step_after),
    );
    if jobs_before.is_none() && steps_before.is_none() {
        return;
    }
    // The newest record stays whatever its age: a restart counts job ids on from it,
    // so that an id is never given twice.
    let newest = turn.state.jobs.get_max().map_or(0, |(id, _)| *id);
    let ended_before = |j: &model::Job, cutoff: Option<Time>| {
        cutoff.is_some_and(|c| j.state.is_final() && j.end_time > 0 && j.end_time < c)
    };
    let (mut jobs, mut steps): (Vec<JobId>, Vec<JobId>) = (Vec::new(), Vec::new());
    for j in turn.state.jobs.values() {
        if jobs.len() >= PURGE_BATCH && steps.len() >= PURGE_BATCH {
            break;
        }
        if j.id < newest && ended_before(j, jobs_before) {
            if jobs.len() < PURGE_BATCH {
                jobs.push(j.id);
            }
        } else if !j.steps.is_empty() && ended_before(j, steps_before) && steps.len() < PURGE_BATCH
        {
            steps.push(j.id);
        }
    }
    // ArchiveJobs: what either purge drops is archived first, whole.
    if turn.config.controller.archive_jobs {
        let archived = jobs
            .iter()
            .chain(&steps)
            .filter_map(|id| turn.state.job(*id));
        turn.archive.extend(archived.cloned());
    }
    if !jobs.is_empty() {
        tracing::info!(
            jobs = jobs.len(),
            before = jobs_before,
            "purging finished jobs"
        );
        turn.emit(Event::JobsPurged { job_ids: jobs });
    }
    if !steps.is_empty() {
        tracing::info!(
            jobs = steps.len(),
            before = steps_before,
            "purging the steps of finished jobs"
        );
        turn.emit(Event::StepsPurged { job_ids: steps });
    }
}

/// Periodic work; `since` is the time of the tick before (this one's at the first).
pub fn tick(turn: &mut Turn, since: Time) {
    let now = turn.now;
    // Once a minute: a scan of every record.
    if since == now || now / 60 != since / 60 {
        purge(turn);
    }
    let reached = super::mail::time_limits(turn.state, since, now);
    turn.effects.extend(reached);
    let timed: Vec<(u32, String)> = turn
        .state
        .triggers
        .values()
        .filter(|t| super::triggers::tick_fires(t, turn.state, since, now))
        .map(|t| (t.id, super::triggers::argument(t, None)))
        .collect();
    turn.fire(timed);
    let graced: Vec<JobId> = turn
        .state
        .running_jobs()
        .filter(|j| j.state == JobState::Running && j.kill.is_none())
        .filter(|j| {
            j.preemption.as_ref().is_some_and(|p| {
                p.mode != PreemptMode::Suspend && p.time + Time::from(p.grace_secs) <= now
            })
        })
        .map(|j| j.id)
        .collect();
    for id in graced {
        tracing::info!(job_id = id, "grace time over: killing preempted job");
        super::jobs::request_kill(turn, id, KillCause::Preempt);
        turn.order(id, Order::Kill);
    }
    kill_steps_past_their_limit(turn);
    let expired: Vec<String> = turn
        .state
        .reservations
        .values()
        .filter(|r| r.expired(now))
        .map(|r| r.name.clone())
        .collect();
    for name in expired {
        tracing::info!(reservation = %name, "reservation ended");
        turn.emit(Event::ReservationDeleted { name });
    }
    replace_reservation_nodes(turn);
    let timeout = Time::from(turn.config.controller.node_timeout_s);
    let silent: Vec<String> = turn
        .state
        .nodes
        .values()
        .filter(|n| n.health != NodeHealth::Down && now - n.last_heartbeat > timeout)
        .map(|n| n.name.clone())
        .collect();
    for name in silent {
        tracing::warn!(node = %name, "node not responding, setting it down");
        turn.emit(Event::NodeDown {
            name: name.clone(),
            reason: NOT_RESPONDING.into(),
            time: now,
        });
        fail_jobs_on(turn, &name);
    }
}

/// One scheduling pass: start what fits, preempt and resume as the plan says, and
/// note why the rest waits. What changed a job's chances makes another pass follow.
pub fn schedule(turn: &mut Turn) -> sched::Plan {
    let plan = sched::schedule(turn.state, turn.now, turn.sched);
    for p in &plan.preempts {
        tracing::info!(
            job_id = p.job_id,
            preemptor = p.preemptor,
            mode = p.mode.name(),
            grace_secs = p.grace_secs,
            "preempting job"
        );
    }
    for event in plan.apply(turn.state, turn.now) {
        match &event {
            Event::JobStarted { job_id, alloc, .. } => {
                tracing::debug!(job_id, nodes = %alloc.hostlist(), "job started");
                turn.launch(*job_id);
            }
            Event::JobKillRequested { job_id, .. } => turn.order(*job_id, Order::Kill),
            Event::JobPreempted {
                job_id, grace_secs, ..
            } if *grace_secs > 0 => turn.order(
                *job_id,
                Order::SignalAll {
                    signal: libc::SIGTERM,
                },
            ),
            Event::JobSuspended { job_id, .. } => turn.order(*job_id, Order::Suspend),
            Event::JobResumed { job_id, .. } => {
                tracing::info!(job_id, "resuming job suspended by preemption");
                turn.order(*job_id, Order::Resume);
            }
            _ => {}
        }
        // (After the event applied, which a start or an end does not mind.)
        if let Some(mail) = super::mail::for_event(turn.state, &event) {
            turn.effects.push(mail);
        }
        turn.events.push(event);
    }
    for event in plan.pending_reason_events(turn.state, turn.now) {
        turn.emit(event);
    }
    if !plan.preempts.is_empty() || !plan.resumes.is_empty() {
        // Suspended victims lend their room at once: start their preemptors.
        turn.reschedule = true;
    }
    if !plan.starts.is_empty() {
        replace_reservation_nodes(turn);
    }
    plan
}

/// REPLACE reservations' nodes taken by jobs, drained or down, replaced by idle ones
/// (at each tick, and as jobs start, as Slurm's `job_claim_resv`).
fn replace_reservation_nodes(turn: &mut Turn) {
    for event in crate::reservations::replacements(turn.state, turn.now) {
        turn.emit(event);
    }
}
