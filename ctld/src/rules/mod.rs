//! The controller's rules: what each command, node report and timer does to the
//! cluster, as pure decisions over the state. No IO (but log lines), no clock, no
//! wire types: a rule takes a [`Turn`] (the state, the config, the turn's time) and a
//! domain command, and records events (applied to the state as they are emitted, so
//! that the next rule sees them) and effects (what nodes must be told once the events
//! are durable). The state owner (`core`) commits the events, then answers and
//! dispatches the effects.
//!
//! For example, `scancel 7` of a running job records `JobKillRequested { 7, Cancel by
//! 1000 }` and the effect `Order { 7, Kill }`; the node's later report of the end records
//! `UsageCharged` and `JobEnded { 7, CANCELLED by 1000 }`. Because the request is in
//! the job's record, a controller restarted in between still kills the job (the
//! node's registration is answered with an order to kill it) and still ends it as
//! cancelled by 1000.
//!
//! - `jobs`: submit, job ids, signals, hold/release/requeue/suspend, updates, steps;
//! - `nodes`: node admin, registration and heartbeats (what a node runs is compared
//!   with the durable state and corrected), launch confirmations, job ends, lost jobs;
//! - `accounting`: `sacctmgr`'s changes to the accounts, users and QOS;
//! - `timer`: the periodic tick (grace times, reservations, silent nodes) and the
//!   scheduling pass;
//! - `mail`: the mail a turn's events send (`--mail-type`);
//! - `triggers`: which of `strigger`'s triggers an event or a tick fires.

pub mod accounting;
pub mod jobs;
pub mod mail;
pub mod nodes;
pub mod timer;
pub mod triggers;

#[cfg(test)]
mod tests;

use model::{ClusterState, Config, Event, JobId, JobPayload, JobState, Time};
use sched::SchedConfig;

/// What a node must be told, once the events that decided it are durable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Start the job's current run on its batch node.
    Launch { job_id: JobId },
    /// An order for the node that runs the job's batch step (named when it was given,
    /// so that an order for a job that ended since still finds its node).
    Order {
        job_id: JobId,
        node: String,
        order: Order,
    },
    /// Run a fired trigger's program as its owner, with `argument` (a node's name or
    /// a job's id).
    RunTrigger {
        /// The node whose daemon runs it: the first that answers.
        node: String,
        trigger: Box<model::trigger::Trigger>,
        argument: String,
    },
    /// `scontrol notify`: `message` on the stderr of the job's batch script, which runs
    /// on `node`.
    Notify {
        job_id: JobId,
        node: String,
        message: String,
    },
    /// Mail `user` about a job with `subject`, through `node`'s MailProg.
    Mail {
        node: String,
        user: String,
        subject: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Kill the job: SIGTERM, then SIGKILL after KillWait.
    Kill,
    /// `scancel -s SIG`: a signal to the job's steps (with `batch_only`, to the batch
    /// shell alone).
    Signal { signal: i32, batch_only: bool },
    /// A signal to every process of the job, the batch shell included (the SIGTERM a
    /// preempted job gets when its grace time starts).
    SignalAll { signal: i32 },
    /// `scancel JOB.STEP`: a signal to the tasks of one step (0: SIGKILL, its cancel).
    SignalStep { step_id: u32, signal: i32 },
    /// A step past its own time limit: the node says so on the step's stderr, then
    /// ends its tasks (SIGTERM, SIGKILL after KillWait).
    StepTimeLimit { step_id: u32 },
    /// Stop (SIGSTOP) the job's processes.
    Suspend,
    /// Continue (SIGCONT) them.
    Resume,
}

impl Order {
    /// Is the order derived from the durable state, so that a node that missed it is
    /// given it again at its next heartbeat or registration (`nodes::reconcile`)? A
    /// signal is not: it is sent once.
    pub fn given_again(self) -> bool {
        matches!(self, Order::Kill | Order::Suspend | Order::Resume)
    }
}

/// One turn of the state owner, as the rules see it: the state they change (through
/// [`Turn::emit`], or `sched::Plan::apply` for a scheduling pass's plan), the config,
/// the turn's time, and what they decided.
pub struct Turn<'a> {
    pub state: &'a mut ClusterState,
    pub config: &'a Config,
    pub sched: &'a SchedConfig,
    pub now: Time,
    /// The events applied, in order.
    pub events: Vec<Event>,
    /// What nodes must be told once the events are durable.
    pub effects: Vec<Effect>,
    /// Scripts and environments of new jobs, stored apart from their records.
    pub payloads: Vec<(JobId, JobPayload)>,
    /// A scheduling pass is wanted soon.
    pub reschedule: bool,
    /// Live jobs per user for MaxSubmit limits, counted once per turn when needed.
    pub(crate) submit_counts: Option<sched::limits::SubmitCounts>,
    /// The associations as a `sacctmgr` change of this turn left them: made durable
    /// with the turn, and in force from the next.
    pub assocs: Option<std::sync::Arc<model::assoc::Associations>>,
    /// Records this turn's purges drop, as they stood, to be archived before the turn
    /// is committed (`[controller] archive_jobs`).
    pub archive: Vec<model::Job>,
}

impl<'a> Turn<'a> {
    pub fn new(
        state: &'a mut ClusterState,
        config: &'a Config,
        sched: &'a SchedConfig,
        now: Time,
    ) -> Turn<'a> {
        Turn {
            state,
            config,
            sched,
            now,
            events: Vec::new(),
            effects: Vec::new(),
            payloads: Vec::new(),
            reschedule: false,
            submit_counts: None,
            assocs: None,
            archive: Vec::new(),
        }
    }

    /// Applies an event and records it. A run that ends (or is requeued) is charged to
    /// its association first, in the same turn.
    pub fn emit(&mut self, event: Event) {
        let components = self.components_following(&event);
        self.emit_one(event);
        for (id, follow, running) in components {
            if running {
                self.order(id, Order::Kill);
            }
            self.emit(follow);
        }
    }

    /// What a heterogeneous job's leader takes its other components through, as
    /// Slurm's: when it ends, those that run end in its state (their node is told to
    /// kill what holds them) and those that wait are cancelled; when it is requeued,
    /// those that run are killed to be requeued, so that all start together again.
    /// The events, and whether each component runs.
    fn components_following(&self, event: &Event) -> Vec<(JobId, Event, bool)> {
        let leader = match event {
            Event::JobEnded { job_id, .. } | Event::JobRequeued { job_id, .. } => *job_id,
            _ => return Vec::new(),
        };
        let Some(het) = self
            .state
            .job(leader)
            .and_then(|j| j.het)
            .filter(|h| h.offset == 0)
        else {
            return Vec::new();
        };
        let members = het
            .ids()
            .skip(1)
            .filter_map(|id| self.state.job(id).filter(|j| !j.state.is_final()));
        match event {
            Event::JobEnded {
                state,
                exit_code,
                exit_signal,
                time,
                cancelled_by,
                ..
            } => members
                .map(|member| {
                    let running = !member.is_pending();
                    let end = Event::JobEnded {
                        job_id: member.id,
                        state: if running { *state } else { JobState::Cancelled },
                        exit_code: if running { *exit_code } else { 0 },
                        exit_signal: if running { *exit_signal } else { 0 },
                        time: *time,
                        reason: model::Reason::None,
                        cancelled_by: *cancelled_by,
                    };
                    (member.id, end, running)
                })
                .collect(),
            Event::JobRequeued { time, .. } => members
                .filter(|m| !m.is_pending() && m.kill.is_none())
                .map(|member| {
                    let kill = Event::JobKillRequested {
                        job_id: member.id,
                        request: model::KillRequest {
                            cause: model::KillCause::Requeue { hold: false },
                            time: *time,
                        },
                    };
                    (member.id, kill, true)
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    fn emit_one(&mut self, event: Event) {
        if let Some(charge) = self.usage_charge(&event) {
            self.emit(charge);
        }
        if let Some(mail) = mail::for_event(self.state, &event) {
            self.effects.push(mail);
        }
        let node_before = event
            .node_name()
            .filter(|_| !self.state.triggers.is_empty())
            .and_then(|name| self.state.nodes.get(name).cloned());
        self.state.apply(&event);
        // The rules' tests check every change, not only every turn.
        #[cfg(test)]
        if let Err(broken) = self.state.check_invariants() {
            panic!("after {event:?}: {broken}");
        }
        self.events.push(event);
        if self.state.triggers.is_empty() {
            return;
        }
        let node_after = node_before
            .as_ref()
            .and_then(|b| self.state.nodes.get(&b.name));
        let last = self.events.last().expect("just pushed");
        let fired: Vec<(u32, String)> = self
            .state
            .triggers
            .values()
            .filter_map(|t| match (&node_before, node_after) {
                (Some(before), Some(after)) if triggers::node_change_fires(t, before, after) => {
                    Some((t.id, triggers::argument(t, Some(&after.name))))
                }
                _ if triggers::job_event_fires(t, last) => {
                    Some((t.id, triggers::argument(t, None)))
                }
                _ => None,
            })
            .collect();
        let at = self.events.len() - 1;
        self.fire(fired);
        // A job's triggers left once it ends (permanent ones, unreached limits) go.
        let outlived: Vec<u32> = self
            .state
            .triggers
            .values()
            .filter(|t| triggers::outlived_by(t, &self.events[at]))
            .map(|t| t.id)
            .collect();
        if !outlived.is_empty() {
            self.emit(Event::TriggersRemoved { ids: outlived });
        }
    }

    /// Runs the programs of fired triggers and removes those not permanent.
    pub fn fire(&mut self, fired: Vec<(u32, String)>) {
        let mut removed = Vec::new();
        for (id, argument) in fired {
            let Some(trigger) = self.state.triggers.get(&id) else {
                continue;
            };
            if !trigger.spec.perm {
                removed.push(id);
            }
            let Some(node) = triggers::runner(self.state) else {
                tracing::warn!(trigger = id, "trigger fired, but no node answers to run it");
                continue;
            };
            self.effects.push(Effect::RunTrigger {
                node,
                trigger: Box::new(trigger.clone()),
                argument,
            });
        }
        if !removed.is_empty() {
            self.emit(Event::TriggersRemoved { ids: removed });
        }
    }

    /// Orders the node that runs the job's batch step; nothing when it has none.
    pub fn order(&mut self, job_id: JobId, order: Order) {
        if let Some(node) = self.state.job(job_id).and_then(batch_node) {
            self.effects.push(Effect::Order {
                job_id,
                node: node.to_string(),
                order,
            });
        }
    }

    /// Tells every node of the job's allocation (a signal for the job's steps, which
    /// may run on any of them).
    pub fn order_every_node(&mut self, job_id: JobId, order: Order) {
        let nodes: Vec<String> = self
            .state
            .job(job_id)
            .and_then(|j| j.alloc.as_ref())
            .map(|a| a.nodes.iter().map(|n| n.node.clone()).collect())
            .unwrap_or_default();
        for node in nodes {
            self.effects.push(Effect::Order {
                job_id,
                node,
                order,
            });
        }
    }

    /// Launches the job's current run on its batch node.
    pub fn launch(&mut self, job_id: JobId) {
        self.effects.push(Effect::Launch { job_id });
    }

    /// The usage charge of a running job that this event ends or requeues.
    fn usage_charge(&self, event: &Event) -> Option<Event> {
        let (job_id, time) = match event {
            Event::JobEnded { job_id, time, .. } | Event::JobRequeued { job_id, time, .. } => {
                (*job_id, *time)
            }
            _ => return None,
        };
        let job = self.state.job(job_id)?;
        if !matches!(
            job.state,
            JobState::Running | JobState::Suspended | JobState::Completing
        ) {
            return None;
        }
        sched::fairshare::charge(self.state, job, time, self.sched)
    }
}

/// The node that runs a job's batch step, while it holds an allocation.
pub fn batch_node(job: &model::Job) -> Option<&str> {
    job.alloc
        .as_ref()
        .and_then(|a| a.nodes.first())
        .map(|n| n.node.as_str())
}
