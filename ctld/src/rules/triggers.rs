//! `strigger`'s triggers: which of them an event or a tick fires, and with what
//! argument (the node's name, or the job's id). A fired trigger is removed unless it
//! is permanent (`--flags=perm`); its program is an effect, run as the trigger's
//! owner by the daemon of the first node that answers (only node daemons start
//! processes), since Drover's controller host runs none of them. A job's triggers
//! go when it ends, fired or not.
//!
//! Worked example: trigger 4 (`--node=n[1-2] --down`) and node n2, UP, that stops
//! heartbeating: `NodeDown { n2 }` fires it with argument `n2` (`TriggersRemoved
//! { [4] }` and `Effect::RunTrigger`); a second `NodeDown { n2 }` of a node already
//! DOWN fires nothing. Trigger 5 (`--jobid=9 --time --offset=-600`) of a job whose
//! limit runs out at 5000 fires at the first tick at or after 4400.

use super::Turn;
use crate::command::{ClearTriggers, Rejection, SetTrigger};
use model::trigger::{MAX_OFFSET, Trigger, TriggerEvent, TriggerResource};
use model::{ClusterState, Event, JobState, Node, NodeHealth, Time};

/// Does a change of `before` into `after` (one node, across one event) fire `trigger`?
pub fn node_change_fires(trigger: &Trigger, before: &Node, after: &Node) -> bool {
    if !trigger.spec.resource.names_node(&after.name) {
        return false;
    }
    let down = |n: &Node| n.health == NodeHealth::Down;
    match trigger.spec.event {
        TriggerEvent::Down => !down(before) && down(after),
        TriggerEvent::Up => down(before) && after.health == NodeHealth::Up,
        TriggerEvent::Drained => !before.drain && after.drain,
        TriggerEvent::Idle | TriggerEvent::Fini | TriggerEvent::Time => false,
    }
}

/// Does `event` fire `trigger` on the job it ends? (Node events go through
/// [`node_change_fires`].)
pub fn job_event_fires(trigger: &Trigger, event: &Event) -> bool {
    match (event, &trigger.spec.resource, trigger.spec.event) {
        (Event::JobEnded { job_id, .. }, TriggerResource::Job(id), TriggerEvent::Fini) => {
            job_id == id
        }
        _ => false,
    }
}

/// Does `event` leave `trigger` with nothing to wait for: a job's other triggers go
/// when it ends, fired or not (a `--time` trigger whose limit was not reached).
pub fn outlived_by(trigger: &Trigger, event: &Event) -> bool {
    match (event, &trigger.spec.resource) {
        (Event::JobEnded { job_id, .. }, TriggerResource::Job(id)) => job_id == id,
        _ => false,
    }
}

/// Does a tick at `now` (the one before was at `since`) fire `trigger`: a `--time`
/// trigger once its running job's limit plus the offset is reached (a permanent one
/// only at the tick that reaches it, not at every later one).
pub fn tick_fires(trigger: &Trigger, state: &ClusterState, since: Time, now: Time) -> bool {
    let (TriggerResource::Job(id), TriggerEvent::Time) =
        (&trigger.spec.resource, trigger.spec.event)
    else {
        return false;
    };
    let Some(job) = state.job(*id) else {
        return false;
    };
    if job.state != JobState::Running {
        return false;
    }
    job.limit_end(now).is_some_and(|end| {
        let at = end.saturating_add(Time::from(trigger.spec.offset));
        at <= now && (!trigger.spec.perm || since < at)
    })
}

/// The node whose daemon runs a fired trigger's program: the first that answers.
pub fn runner(state: &ClusterState) -> Option<String> {
    state
        .nodes
        .values()
        .find(|n| n.health == NodeHealth::Up)
        .map(|n| n.name.clone())
}

/// The argument a fired trigger's program gets: the node's name or the job's id.
pub fn argument(trigger: &Trigger, node: Option<&str>) -> String {
    match (&trigger.spec.resource, node) {
        (_, Some(node)) => node.to_string(),
        (resource, None) => resource.id_word(),
    }
}

/// `strigger --set`: the new trigger's id. A trigger on nodes is only root's (Slurm's
/// SlurmUser's); one on a job needs a job that exists and has not ended, owned by the
/// requester unless they are root. `--idle` is refused: the controller does not keep
/// how long a node has been idle.
pub fn set(turn: &mut Turn, cmd: SetTrigger) -> Result<u32, Rejection> {
    let SetTrigger {
        spec,
        requester,
        gid,
    } = cmd;
    if !(-MAX_OFFSET..=MAX_OFFSET).contains(&spec.offset) {
        return Err(Rejection::invalid(
            "The --offset parameter must be between +/-32000",
        ));
    }
    if !spec.program.starts_with('/') {
        return Err(Rejection::invalid(
            "The --program value must start with \"/\"",
        ));
    }
    if spec.event == TriggerEvent::Idle {
        return Err(Rejection::invalid(
            "--idle triggers are not supported by this controller",
        ));
    }
    match &spec.resource {
        TriggerResource::Nodes(list) => {
            if spec.event.of_job() {
                return Err(Rejection::invalid("You must specify a --jobid value"));
            }
            if requester.uid != 0 {
                return Err(Rejection::PermissionDenied);
            }
            if let Some(list) = list
                && model::hostlist::expand(list).is_err()
            {
                return Err(Rejection::invalid("Invalid node name specified"));
            }
        }
        TriggerResource::Job(_) if !spec.event.of_job() => {
            return Err(Rejection::invalid(
                "Only --fini and --time triggers may name a --jobid",
            ));
        }
        TriggerResource::Job(id) => {
            let job = turn
                .state
                .job(*id)
                .filter(|j| !j.state.is_final())
                .ok_or_else(|| Rejection::NotFound("Invalid job id specified".into()))?;
            if requester.uid != 0 && job.spec.uid != requester.uid {
                return Err(Rejection::PermissionDenied);
            }
        }
    }
    let id = turn.state.next_trigger_id;
    let trigger = Trigger {
        id,
        spec,
        uid: requester.uid,
        gid,
        user: requester.user,
    };
    turn.emit(Event::TriggerSet {
        trigger: Box::new(trigger),
    });
    Ok(id)
}

/// `strigger --clear`: removes the requester's triggers the filter matches (root's
/// clear anyone's); Slurm's "No such process" when none does.
pub fn clear(turn: &mut Turn, cmd: ClearTriggers) -> Result<(), Rejection> {
    let ClearTriggers { filter, requester } = cmd;
    if filter.is_empty() {
        return Err(Rejection::invalid(
            "You must specify a --id, --jobid, or --user to clear",
        ));
    }
    let ids: Vec<u32> = turn
        .state
        .triggers
        .values()
        .filter(|t| requester.uid == 0 || t.uid == requester.uid)
        .filter(|t| filter.matches(t))
        .map(|t| t.id)
        .collect();
    if ids.is_empty() {
        return Err(Rejection::NotFound("No such process".into()));
    }
    turn.emit(Event::TriggersRemoved { ids });
    Ok(())
}
