//! The state owner: one task that holds the `ClusterState`, takes a closed set of
//! inputs from the gRPC handlers, and changes the state only through events.
//!
//! Each turn drains every input waiting (up to a bound), applies their events, writes
//! the touched records to the store and flushes once (group commit), and only then
//! answers the callers and tells nodes to act. Inputs that arrive during the flush
//! form the next batch. Scheduling passes run a few milliseconds after a change
//! (debounced) and at least every `sched_interval_ms`. After each turn an immutable
//! snapshot is published for readers (squeue, sinfo), so polling never waits on this
//! loop.

use crate::dispatch::{Dispatcher, Effect};
use crate::store::{Store, WriteBatch};
use crate::validate;
use model::{
    ClusterState, Config, Event, Job, JobId, JobPayload, JobSpec, JobState, NodeHealth,
    PreemptMode, Time,
};
use proto::v1;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, watch};
use tonic::Status;

pub type Reply<T> = oneshot::Sender<Result<T, Status>>;

/// Everything that can change the cluster state.
pub enum Input {
    Submit {
        spec: Box<JobSpec>,
        payload: JobPayload,
        test_only: bool,
        reply: Reply<v1::SubmitJobReply>,
    },
    Signal {
        req: v1::SignalJobsRequest,
        reply: Reply<Vec<v1::JobResult>>,
    },
    Control {
        req: v1::ControlJobsRequest,
        reply: Reply<Vec<v1::JobResult>>,
    },
    Update {
        req: v1::UpdateJobRequest,
        reply: Reply<Vec<v1::JobResult>>,
    },
    UpdateNodes {
        req: v1::UpdateNodesRequest,
        reply: Reply<()>,
    },
    CreateStep {
        req: v1::CreateStepRequest,
        reply: Reply<u32>,
    },
    CompleteStep {
        req: v1::CompleteStepRequest,
        reply: Reply<()>,
    },
    Register {
        req: v1::RegisterRequest,
        reply: Reply<v1::RegisterReply>,
    },
    Heartbeat {
        req: v1::HeartbeatRequest,
        reply: Reply<v1::HeartbeatReply>,
    },
    JobFinished {
        req: v1::JobFinishedRequest,
        reply: Reply<()>,
    },
    ChangeReservation {
        req: v1::ChangeReservationRequest,
        reply: Reply<String>,
    },
    /// A node could not be told to launch a job.
    LaunchFailed {
        job_id: JobId,
        node: String,
        message: String,
    },
}

/// Most inputs handled in one turn (one flush).
const MAX_BATCH: usize = 4096;

pub fn unix_now() -> Time {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as Time)
        .unwrap_or(0)
}

pub struct Core {
    state: ClusterState,
    config: Arc<Config>,
    sched_config: sched::SchedConfig,
    store: Arc<Store>,
    snapshot: watch::Sender<Arc<ClusterState>>,
    dispatcher: Dispatcher,
    batch: WriteBatch,
    dirty_jobs: BTreeSet<JobId>,
    /// Jobs submitted this turn: records that stand alone (see `finish_turn`).
    submitted: BTreeSet<JobId>,
    dirty_nodes: BTreeSet<String>,
    /// Associations whose usage record changed this turn.
    dirty_usage: BTreeSet<model::usage::AssocKey>,
    /// Live jobs per user for MaxSubmit limits, counted once per turn when needed.
    submit_counts: Option<sched::limits::SubmitCounts>,
    dirty_reservations: BTreeSet<String>,
    /// Acknowledgements held back until the turn's flush.
    acks: Vec<Box<dyn FnOnce() + Send>>,
    effects: Vec<Effect>,
    /// Running jobs a user asked to cancel, with who asked.
    cancel_requests: BTreeMap<JobId, u32>,
    /// Running jobs to requeue once their node reports them ended (true: held).
    requeue_requests: BTreeMap<JobId, bool>,
    /// Preempted jobs in their GraceTime: when they are to be killed.
    grace_deadlines: BTreeMap<JobId, Time>,
    sched_at: Option<Instant>,
    last_pass: Duration,
    changed: bool,
}

impl Core {
    pub fn new(
        state: ClusterState,
        config: Arc<Config>,
        store: Arc<Store>,
        snapshot: watch::Sender<Arc<ClusterState>>,
        dispatcher: Dispatcher,
    ) -> Core {
        // Jobs preempted before a restart are killed when their grace time is over (a
        // kill that was already sent is harmless to repeat).
        let grace_deadlines = state
            .running_jobs()
            .filter(|j| j.state == JobState::Running)
            .filter_map(|j| {
                let p = j.preemption.as_ref()?;
                (p.mode != PreemptMode::Suspend).then(|| (j.id, p.time + Time::from(p.grace_secs)))
            })
            .collect();
        Core {
            state,
            sched_config: sched::SchedConfig::from_config(&config),
            config,
            store,
            snapshot,
            dispatcher,
            batch: WriteBatch::default(),
            dirty_jobs: BTreeSet::new(),
            submitted: BTreeSet::new(),
            dirty_nodes: BTreeSet::new(),
            dirty_usage: BTreeSet::new(),
            submit_counts: None,
            dirty_reservations: BTreeSet::new(),
            acks: Vec::new(),
            effects: Vec::new(),
            cancel_requests: BTreeMap::new(),
            requeue_requests: BTreeMap::new(),
            grace_deadlines,
            sched_at: Some(Instant::now()),
            last_pass: Duration::ZERO,
            changed: true,
        }
    }

    /// Runs until every sender is gone.
    pub async fn run(mut self, mut inbox: mpsc::Receiver<Input>) {
        let tick =
            Duration::from_millis(u64::from(self.config.controller.sched_interval_ms.max(100)));
        let mut next_tick = Instant::now() + tick;
        loop {
            let wake = self.sched_at.map_or(next_tick, |s| s.min(next_tick));
            tokio::select! {
                input = inbox.recv() => {
                    let Some(input) = input else { break };
                    let now = unix_now();
                    self.handle(input, now);
                    let mut n = 1;
                    while n < MAX_BATCH {
                        match inbox.try_recv() {
                            Ok(input) => self.handle(input, now),
                            Err(_) => break,
                        }
                        n += 1;
                    }
                }
                _ = tokio::time::sleep_until(wake.into()) => {
                    let now = unix_now();
                    if Instant::now() >= next_tick {
                        self.tick(now);
                        next_tick = Instant::now() + tick;
                        self.sched_at.get_or_insert_with(Instant::now);
                    }
                    if self.sched_at.is_some_and(|s| Instant::now() >= s) {
                        self.sched_at = None;
                        self.schedule(now);
                    }
                }
            }
            self.finish_turn();
        }
    }

    /// Makes the turn's changes durable, then acknowledges and acts.
    fn finish_turn(&mut self) {
        // A turn of submits alone changes nothing but its new jobs, and each stands
        // alone: after a crash, any subset of them is a state the cluster could have
        // been in. The store then writes them without a journal.
        let submitted = std::mem::take(&mut self.submitted);
        let only_submits = self.dirty_jobs.iter().all(|id| submitted.contains(id))
            && self.dirty_nodes.is_empty()
            && self.dirty_reservations.is_empty()
            && self.dirty_usage.is_empty();
        for id in std::mem::take(&mut self.dirty_jobs) {
            if let Some(job) = self.state.job(id) {
                let put = if only_submits {
                    self.batch.put_submitted_job(job)
                } else {
                    self.batch.put_job(job)
                };
                put.unwrap_or_else(|e| fatal(&e));
            }
        }
        for name in std::mem::take(&mut self.dirty_nodes) {
            if let Some(node) = self.state.nodes.get(&name) {
                self.batch.put_node(node).unwrap_or_else(|e| fatal(&e));
            }
        }
        for name in std::mem::take(&mut self.dirty_reservations) {
            match self.state.reservations.get(&name) {
                Some(r) => self.batch.put_reservation(r).unwrap_or_else(|e| fatal(&e)),
                None => self.batch.delete_reservation(&name),
            }
        }
        for key in std::mem::take(&mut self.dirty_usage) {
            if let Some(usage) = self.state.usage.get(&key) {
                self.batch
                    .put_usage(&key, usage)
                    .unwrap_or_else(|e| fatal(&e));
            }
        }
        self.submit_counts = None;
        let batch = std::mem::take(&mut self.batch);
        if let Err(e) = self.store.commit(batch) {
            fatal(&e);
        }
        for ack in self.acks.drain(..) {
            ack();
        }
        for effect in std::mem::take(&mut self.effects) {
            self.dispatcher.perform(effect, &self.state, &self.store);
        }
        if std::mem::take(&mut self.changed) {
            self.snapshot.send_replace(Arc::new(self.state.clone()));
        }
    }

    fn ack<T: Send + 'static>(&mut self, reply: Reply<T>, value: Result<T, Status>) {
        self.acks.push(Box::new(move || {
            let _ = reply.send(value);
        }));
    }

    /// Applies an event and marks what it touched for the store.
    fn emit(&mut self, event: Event) {
        // A run that ends (or is requeued) is charged to its association first.
        if let Some(charge) = self.usage_charge(&event) {
            self.emit(charge);
        }
        self.state.apply(&event);
        if let Event::UsageCharged { account, user, .. } = &event {
            self.dirty_usage.insert((account.clone(), user.clone()));
        }
        if let Some(id) = event.job_id() {
            self.dirty_jobs.insert(id);
        }
        if let Some(name) = event.reservation_name() {
            self.dirty_reservations.insert(name.to_string());
        }
        if let Some(name) = event.node_name()
            && !matches!(event, Event::NodeHeartbeat { .. })
        {
            self.dirty_nodes.insert(name.to_string());
        }
        self.changed = true;
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
        sched::fairshare::charge(&self.state, job, time, &self.sched_config)
    }

    fn want_schedule(&mut self) {
        let delay = Duration::from_millis(u64::from(self.config.controller.sched_delay_ms))
            .max(self.last_pass);
        let at = Instant::now() + delay;
        self.sched_at = Some(self.sched_at.map_or(at, |s| s.min(at)));
    }

    fn handle(&mut self, input: Input, now: Time) {
        match input {
            Input::Submit {
                spec,
                payload,
                test_only,
                reply,
            } => {
                let result = self.submit(*spec, payload, test_only, now);
                if test_only {
                    let _ = reply.send(result);
                } else {
                    self.ack(reply, result);
                }
            }
            Input::Signal { req, reply } => {
                let r = self.signal(req, now);
                self.ack(reply, Ok(r));
            }
            Input::Control { req, reply } => {
                let r = self.control(req, now);
                self.ack(reply, Ok(r));
            }
            Input::Update { req, reply } => {
                let r = self.update(req);
                self.ack(reply, Ok(r));
            }
            Input::UpdateNodes { req, reply } => {
                let r = self.update_nodes(req, now);
                self.ack(reply, r);
            }
            Input::CreateStep { req, reply } => {
                let r = self.create_step(req, now);
                self.ack(reply, r);
            }
            Input::CompleteStep { req, reply } => {
                self.emit(Event::StepEnded {
                    job_id: req.job_id,
                    step_id: req.step_id,
                    exit_code: req.exit_code,
                    exit_signal: req.exit_signal,
                    time: now,
                });
                self.ack(reply, Ok(()));
            }
            Input::Register { req, reply } => {
                let r = self.register(req, now);
                self.ack(reply, Ok(r));
            }
            Input::Heartbeat { req, reply } => {
                let r = self.heartbeat(req, now);
                let _ = reply.send(Ok(r));
            }
            Input::JobFinished { req, reply } => {
                self.job_finished(req, now);
                self.ack(reply, Ok(()));
            }
            Input::ChangeReservation { req, reply } => {
                let result = crate::reservations::change(&self.state, &req, now)
                    .map_err(Status::invalid_argument)
                    .map(|event| {
                        let name = event.reservation_name().unwrap_or_default().to_string();
                        self.emit(event);
                        self.want_schedule();
                        name
                    });
                self.ack(reply, result);
            }
            Input::LaunchFailed {
                job_id,
                node,
                message,
            } => {
                tracing::warn!(job_id, node = %node, error = %message, "launch failed");
                if let Some(addr) = self.state.nodes.get(&node).map(|n| n.addr.clone()) {
                    self.dispatcher.forget(&addr);
                }
                let on_node = self.state.job(job_id).is_some_and(|j| {
                    j.state == JobState::Running
                        && j.alloc
                            .as_ref()
                            .is_some_and(|a| a.nodes.first().is_some_and(|n| n.node == node))
                });
                if on_node {
                    self.emit(Event::JobRequeued {
                        job_id,
                        time: now,
                        hold: false,
                    });
                    self.emit(Event::NodeDown {
                        name: node,
                        reason: "Not responding".into(),
                        time: now,
                    });
                    self.want_schedule();
                }
            }
        }
    }

    fn submit(
        &mut self,
        spec: JobSpec,
        payload: JobPayload,
        test_only: bool,
        now: Time,
    ) -> Result<v1::SubmitJobReply, Status> {
        let (spec, time_limit) = validate::check_submit(&self.state, &self.config, spec, &payload)
            .map_err(|e| Status::invalid_argument(e.0))?;
        let assocs = self.sched_config.assocs.clone();
        let spec =
            validate::check_accounting(&assocs, spec).map_err(|e| Status::invalid_argument(e.0))?;
        validate::check_partition_access(&self.state, &spec)
            .map_err(|e| Status::invalid_argument(e.0))?;
        if sched::limits::SubmitCounts::needed(&assocs) {
            let state = &self.state;
            let counts = self
                .submit_counts
                .get_or_insert_with(|| sched::limits::SubmitCounts::new(state, &assocs));
            counts
                .check(&assocs, &spec)
                .map_err(Status::invalid_argument)?;
            if !test_only {
                counts.add(&assocs, &spec);
            }
        }
        let cluster_name = self.config.cluster_name.clone();
        if test_only {
            let mut trial = self.state.clone();
            let id = trial.next_job_id;
            trial.apply(&Event::JobSubmitted {
                job: Box::new(Job::new(id, spec, now, time_limit)),
            });
            let plan = sched::schedule(&trial, now, &self.sched_config);
            let start = plan.starts.iter().find(|s| s.job_id == id);
            return Ok(v1::SubmitJobReply {
                job_id: id,
                estimated_start: if start.is_some() { now } else { 0 },
                estimated_nodes: start.map(|s| s.alloc.hostlist()).unwrap_or_default(),
                cluster_name,
            });
        }
        let id = self.state.next_job_id;
        self.batch
            .put_payload(id, &payload)
            .unwrap_or_else(|e| fatal(&e));
        self.emit(Event::JobSubmitted {
            job: Box::new(Job::new(id, spec, now, time_limit)),
        });
        self.submitted.insert(id);
        tracing::debug!(job_id = id, "job submitted");
        // A held job cannot start and changes no other job's plan: no pass for it.
        if !self.state.job(id).is_some_and(|j| j.held) {
            self.want_schedule();
        }
        Ok(v1::SubmitJobReply {
            job_id: id,
            estimated_start: 0,
            estimated_nodes: String::new(),
            cluster_name,
        })
    }

    /// Resolves a job id as users write it (`12`, `12_3`, `12_[1-3]`) to records,
    /// splitting pending array tasks into their own records when named alone.
    fn resolve_ids(&mut self, text: &str) -> Result<Vec<JobId>, String> {
        let invalid = || "Invalid job id specified".to_string();
        let text = text.trim();
        let (base, tasks) = match text.split_once('_') {
            Some((b, t)) => {
                let t = t.trim_start_matches('[').trim_end_matches(']');
                let t = t.split('%').next().unwrap_or(t);
                let spec = model::job::parse_array(t, u32::MAX).map_err(|_| invalid())?;
                (b, Some(spec.task_ids))
            }
            None => (text, None),
        };
        let base: JobId = base.parse().map_err(|_| invalid())?;
        let Some(job) = self.state.job(base) else {
            return Err(invalid());
        };
        let array_id = if job.array_job_id != 0 {
            job.array_job_id
        } else {
            base
        };
        let Some(tasks) = tasks else {
            // A plain id names a job, or every record of the array it starts.
            if job.array_job_id == base {
                return Ok(self
                    .state
                    .jobs
                    .range(base..)
                    .filter(|(_, j)| j.array_job_id == base)
                    .map(|(id, _)| *id)
                    .collect());
            }
            return Ok(vec![base]);
        };
        let mut out = Vec::new();
        for task in tasks {
            let existing = self
                .state
                .jobs
                .range(array_id..)
                .find(|(_, j)| j.array_job_id == array_id && j.array_task_id == Some(task))
                .map(|(id, _)| *id);
            match existing {
                Some(id) => out.push(id),
                None => {
                    let meta = self
                        .state
                        .job(array_id)
                        .filter(|m| m.pending_tasks.contains(&task));
                    match meta {
                        Some(m) if m.pending_tasks.len() == 1 => out.push(array_id),
                        Some(_) => {
                            let new_id = self.state.next_job_id;
                            self.emit(Event::ArrayTaskSplit {
                                array_id,
                                task_id: task,
                                new_id,
                            });
                            out.push(new_id);
                        }
                        None => return Err(invalid()),
                    }
                }
            }
        }
        Ok(out)
    }

    fn may_modify(&self, job: &Job, uid: u32) -> bool {
        uid == 0 || job.spec.uid == uid
    }

    /// The records a filter selects, labelled as the user named them.
    fn select(&mut self, filter: &v1::JobFilter) -> Vec<(String, Result<JobId, String>)> {
        let mut targets: Vec<(String, Result<JobId, String>)> = Vec::new();
        if filter.job_ids.is_empty() {
            let ids: Vec<JobId> = self.state.jobs.keys().copied().collect();
            for id in ids {
                targets.push((id.to_string(), Ok(id)));
            }
        } else {
            for text in &filter.job_ids {
                match self.resolve_ids(text) {
                    Ok(ids) => targets.extend(ids.into_iter().map(|id| (text.clone(), Ok(id)))),
                    Err(e) => targets.push((text.clone(), Err(e))),
                }
            }
        }
        let explicit = !filter.job_ids.is_empty();
        targets.retain(|(_, r)| {
            let Ok(id) = r else { return true };
            let Some(job) = self.state.job(*id) else {
                return false;
            };
            // Without explicit ids only live jobs are candidates.
            (explicit || !job.state.is_final()) && job_matches(job, filter)
        });
        targets
    }

    fn signal(&mut self, req: v1::SignalJobsRequest, now: Time) -> Vec<v1::JobResult> {
        let filter = req.filter.unwrap_or_default();
        let mut results = Vec::new();
        for (label, target) in self.select(&filter) {
            let result = target.and_then(|id| {
                self.signal_one(id, req.signal, req.requester_uid, req.batch_only, now)
            });
            results.push(v1::JobResult {
                job_id: label,
                error: result.err().unwrap_or_default(),
            });
        }
        results
    }

    fn signal_one(
        &mut self,
        id: JobId,
        signal: i32,
        uid: u32,
        batch_only: bool,
        now: Time,
    ) -> Result<(), String> {
        let job = self.state.job(id).ok_or("Invalid job id specified")?;
        if !self.may_modify(job, uid) {
            return Err("Access/permission denied".into());
        }
        match (job.state, signal) {
            (s, _) if s.is_final() => Err("Job/step already completing or completed".into()),
            (JobState::Pending, 0) => {
                self.emit(Event::JobEnded {
                    job_id: id,
                    state: JobState::Cancelled,
                    exit_code: 0,
                    exit_signal: 0,
                    time: now,
                    reason: "None".into(),
                    cancelled_by: Some(uid),
                });
                self.want_schedule();
                Ok(())
            }
            (JobState::Pending, _) => Err("Job is pending execution".into()),
            (_, sig) => {
                if sig == 0 {
                    self.cancel_requests.insert(id, uid);
                }
                self.effects.push(Effect::Signal {
                    job_id: id,
                    signal: sig,
                    batch_only,
                });
                Ok(())
            }
        }
    }

    fn control(&mut self, req: v1::ControlJobsRequest, now: Time) -> Vec<v1::JobResult> {
        let op = v1::ControlOp::try_from(req.op).unwrap_or(v1::ControlOp::Hold);
        let uid = req.requester_uid;
        let mut results = Vec::new();
        for text in &req.job_ids {
            let outcome = self.resolve_ids(text).and_then(|ids| {
                for id in ids {
                    self.control_one(id, op, uid, now)?;
                }
                Ok(())
            });
            results.push(v1::JobResult {
                job_id: text.clone(),
                error: outcome.err().unwrap_or_default(),
            });
        }
        results
    }

    fn control_one(
        &mut self,
        id: JobId,
        op: v1::ControlOp,
        uid: u32,
        now: Time,
    ) -> Result<(), String> {
        use v1::ControlOp as Op;
        let job = self.state.job(id).ok_or("Invalid job id specified")?;
        if !self.may_modify(job, uid) {
            return Err("Access/permission denied".into());
        }
        let state = job.state;
        match op {
            Op::Hold | Op::Uhold => {
                if state != JobState::Pending {
                    return Err("Job is no longer pending execution".into());
                }
                let reason = if op == Op::Hold && uid == 0 {
                    "JobHeldAdmin"
                } else {
                    "JobHeldUser"
                };
                self.emit(Event::JobHeld {
                    job_id: id,
                    held: true,
                    reason: reason.into(),
                });
            }
            Op::Release => {
                if state != JobState::Pending {
                    return Err("Job is no longer pending execution".into());
                }
                self.emit(Event::JobHeld {
                    job_id: id,
                    held: false,
                    reason: "None".into(),
                });
                self.want_schedule();
            }
            Op::Requeue | Op::RequeueHold => {
                let hold = op == Op::RequeueHold;
                match state {
                    JobState::Pending => return Err("Job is pending execution".into()),
                    JobState::Running | JobState::Suspended | JobState::Completing => {
                        self.requeue_requests.insert(id, hold);
                        self.effects.push(Effect::Signal {
                            job_id: id,
                            signal: 0,
                            batch_only: false,
                        });
                    }
                    _ => {
                        self.emit(Event::JobRequeued {
                            job_id: id,
                            time: now,
                            hold,
                        });
                        self.want_schedule();
                    }
                }
            }
            Op::Suspend | Op::Resume => {
                if uid != 0 {
                    return Err("Access/permission denied".into());
                }
                let resume = op == Op::Resume;
                match (state, resume) {
                    (JobState::Running, false) => self.emit(Event::JobSuspended {
                        job_id: id,
                        time: now,
                        preemptor: None,
                    }),
                    (JobState::Suspended, true) => self.emit(Event::JobResumed {
                        job_id: id,
                        time: now,
                    }),
                    (JobState::Pending, _) => return Err("Job is pending execution".into()),
                    (_, false) => return Err("Job is not running".into()),
                    (_, true) => return Err("Job is not suspended".into()),
                }
                tracing::info!(job_id = id, resume, "job suspended or resumed by an admin");
                self.effects.push(Effect::Suspend { job_id: id, resume });
                self.want_schedule();
            }
        }
        Ok(())
    }

    fn update(&mut self, req: v1::UpdateJobRequest) -> Vec<v1::JobResult> {
        let mut results = Vec::new();
        for text in &req.job_ids {
            let outcome = self.resolve_ids(text).and_then(|ids| {
                for id in ids {
                    self.update_one(id, &req.fields, req.requester_uid)?;
                }
                Ok(())
            });
            results.push(v1::JobResult {
                job_id: text.clone(),
                error: outcome.err().unwrap_or_default(),
            });
        }
        self.want_schedule();
        results
    }

    fn update_one(&mut self, id: JobId, fields: &[v1::EnvVar], uid: u32) -> Result<(), String> {
        let job = self.state.job(id).ok_or("Invalid job id specified")?;
        if !self.may_modify(job, uid) {
            return Err("Access/permission denied".into());
        }
        if job.state.is_final() {
            return Err("Job has already finished".into());
        }
        let pending = job.state == JobState::Pending;
        let mut spec = job.spec.clone();
        let old_assoc = (job.spec.account.clone(), job.spec.qos.clone());
        let mut limit = job.time_limit_min;
        let parse_u32 = |v: &str| v.parse::<u32>().map_err(|_| format!("Invalid value {v}"));
        for f in fields {
            let value = f.value.as_str();
            let key = f.name.to_ascii_lowercase();
            let pending_only =
                !matches!(key.as_str(), "timelimit" | "comment" | "name" | "jobname");
            if pending_only && !pending {
                return Err("Job is no longer pending execution".into());
            }
            match key.as_str() {
                "timelimit" => {
                    let new = model::units::parse_time_limit(value).map_err(|e| e.to_string())?;
                    if uid != 0 && new.unwrap_or(u32::MAX) > limit.unwrap_or(u32::MAX) {
                        return Err("Access/permission denied".into());
                    }
                    limit = new;
                }
                "name" | "jobname" => spec.name = value.to_string(),
                "comment" => spec.comment = value.to_string(),
                "partition" => {
                    if self.state.partition(value).is_none() {
                        return Err("Invalid partition name specified".into());
                    }
                    spec.partition = value.to_string();
                }
                "nice" => {
                    spec.nice = value
                        .parse()
                        .map_err(|_| format!("Invalid nice value {value}"))?
                }
                "numcpus" | "mincpusnode" => {
                    spec.cpus_per_task = parse_u32(value)?.max(1).div_ceil(spec.num_tasks.max(1));
                }
                "numtasks" => spec.num_tasks = parse_u32(value)?.max(1),
                "numnodes" => {
                    spec.num_nodes = parse_u32(value.split('-').next().unwrap_or(value))?.max(1)
                }
                "minmemorynode" => {
                    spec.mem_per_node_mb =
                        model::units::parse_memory_mb(value).map_err(|e| e.to_string())?;
                    spec.mem_per_cpu_mb = 0;
                }
                "minmemorycpu" => {
                    spec.mem_per_cpu_mb =
                        model::units::parse_memory_mb(value).map_err(|e| e.to_string())?;
                    spec.mem_per_node_mb = 0;
                }
                "dependency" => {
                    if !value.is_empty() {
                        sched::dependency::parse(value)
                            .map_err(|_| "Job dependency problem".to_string())?;
                    }
                    spec.dependency = value.to_string();
                }
                "starttime" | "begintime" => {
                    spec.begin_time = value.parse().map_err(|_| format!("Invalid time {value}"))?;
                }
                "wckey" => spec.wckey = value.to_string(),
                "account" => spec.account = value.to_string(),
                "qos" => spec.qos = value.to_string(),
                "reqnodelist" | "nodelist" => spec.nodelist = value.to_string(),
                "excnodelist" => spec.exclude = value.to_string(),
                "requeue" => spec.requeue = value == "1" || value.eq_ignore_ascii_case("yes"),
                other => return Err(format!("Update of {other} is not supported")),
            }
        }
        if (spec.account.clone(), spec.qos.clone()) != old_assoc {
            spec = validate::check_accounting(&self.sched_config.assocs, spec).map_err(|e| e.0)?;
            validate::check_partition_access(&self.state, &spec).map_err(|e| e.0)?;
        }
        self.emit(Event::JobUpdated {
            job_id: id,
            spec: Box::new(spec),
            time_limit_min: limit,
        });
        Ok(())
    }

    fn update_nodes(&mut self, req: v1::UpdateNodesRequest, now: Time) -> Result<(), Status> {
        let names = model::hostlist::expand(&req.nodes)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        if let Some(unknown) = names.iter().find(|n| !self.state.nodes.contains_key(*n)) {
            return Err(Status::not_found(format!(
                "Invalid node name specified: {unknown}"
            )));
        }
        if req.requester_uid != 0 {
            return Err(Status::permission_denied("Access/permission denied"));
        }
        let state = req.state.to_ascii_uppercase();
        for name in names {
            let (drain, down) = match state.as_str() {
                "DRAIN" => (true, false),
                "DOWN" => (false, true),
                "RESUME" | "IDLE" | "UNDRAIN" => (false, false),
                other => {
                    return Err(Status::invalid_argument(format!(
                        "Invalid node state specified: {other}"
                    )));
                }
            };
            let reason = if drain || down {
                req.reason.clone()
            } else {
                String::new()
            };
            self.emit(Event::NodeAdmin {
                name: name.clone(),
                drain,
                down,
                reason,
                uid: req.requester_uid,
                time: now,
            });
            if down {
                self.fail_jobs_on(&name, now);
            }
        }
        self.want_schedule();
        Ok(())
    }

    fn create_step(&mut self, req: v1::CreateStepRequest, now: Time) -> Result<u32, Status> {
        let job = self
            .state
            .job(req.job_id)
            .ok_or_else(|| Status::not_found("Invalid job id specified"))?;
        if job.state != JobState::Running {
            return Err(Status::failed_precondition("Job is not running"));
        }
        if !self.may_modify(job, req.requester_uid) {
            return Err(Status::permission_denied("Access/permission denied"));
        }
        let step_id = job.next_step_id;
        let step = model::Step {
            id: Some(step_id),
            name: req.name,
            state: JobState::Running,
            start_time: now,
            end_time: 0,
            exit_code: 0,
            exit_signal: 0,
            num_tasks: req.num_tasks.max(1),
        };
        self.emit(Event::StepStarted {
            job_id: req.job_id,
            step,
        });
        Ok(step_id)
    }

    fn register(&mut self, req: v1::RegisterRequest, now: Time) -> v1::RegisterReply {
        let name = req.node_name.clone();
        self.dispatcher.forget(&req.agent_addr);
        tracing::info!(node = %name, addr = %req.agent_addr, running = req.running_jobs.len(), "node registered");
        self.emit(Event::NodeRegistered {
            name: name.clone(),
            addr: req.agent_addr,
            cpus: req.cpus,
            memory_mb: req.memory_mb,
            gpus: req
                .gpus
                .into_iter()
                .map(proto::convert::gpu_from_wire)
                .collect(),
            features: req.features,
            boot_time: req.boot_time,
            time: now,
        });
        let reported: BTreeSet<JobId> = req.running_jobs.iter().copied().collect();
        let here = self.jobs_running_on(&name);
        // Jobs the node no longer runs ended without a report: the node lost them.
        for id in here.iter().filter(|id| !reported.contains(id)) {
            self.end_lost_job(*id, now);
        }
        let kill_jobs: Vec<JobId> = reported
            .iter()
            .copied()
            .filter(|id| !here.contains(id))
            .collect();
        self.want_schedule();
        v1::RegisterReply {
            heartbeat_interval_ms: self.config.controller.heartbeat_interval_ms,
            kill_jobs,
        }
    }

    fn heartbeat(&mut self, req: v1::HeartbeatRequest, now: Time) -> v1::HeartbeatReply {
        let known = self
            .state
            .nodes
            .get(&req.node_name)
            .is_some_and(|n| n.health == NodeHealth::Up && !n.addr.is_empty());
        if !known {
            return v1::HeartbeatReply {
                register_again: true,
                kill_jobs: Vec::new(),
            };
        }
        self.state.apply(&Event::NodeHeartbeat {
            name: req.node_name.clone(),
            time: now,
        });
        let here = self.jobs_running_on(&req.node_name);
        let kill_jobs = req
            .running_jobs
            .into_iter()
            .filter(|id| {
                !here.contains(id) && self.state.job(*id).is_some_and(|j| j.state.is_final())
            })
            .collect();
        v1::HeartbeatReply {
            register_again: false,
            kill_jobs,
        }
    }

    fn jobs_running_on(&self, node: &str) -> BTreeSet<JobId> {
        self.state
            .running_jobs()
            .filter(|j| {
                j.alloc
                    .as_ref()
                    .is_some_and(|a| a.nodes.first().is_some_and(|n| n.node == node))
            })
            .map(|j| j.id)
            .collect()
    }

    fn job_finished(&mut self, req: v1::JobFinishedRequest, now: Time) {
        let id = req.job_id;
        let Some(job) = self.state.job(id) else {
            return;
        };
        // A report from another node, or of another run, is about an earlier run (the
        // job was requeued since): it says nothing about the current one.
        let on_reporting_node = job
            .alloc
            .as_ref()
            .and_then(|a| a.nodes.first())
            .is_some_and(|n| n.node == req.node_name);
        if !on_reporting_node
            || req.restart_count != job.restart_count
            || !matches!(
                job.state,
                JobState::Running | JobState::Suspended | JobState::Completing
            )
        {
            return;
        }
        let time = if req.end_time > 0 { req.end_time } else { now };
        self.want_schedule();
        if let Some(hold) = self.requeue_requests.remove(&id) {
            self.cancel_requests.remove(&id);
            self.emit(Event::JobRequeued {
                job_id: id,
                time,
                hold,
            });
            return;
        }
        if !self.cancel_requests.contains_key(&id)
            && self.end_preempted(id, time, req.exit_code, req.exit_signal)
        {
            return;
        }
        let kind = v1::FinishKind::try_from(req.kind).unwrap_or(v1::FinishKind::Exited);
        let cancelled_by = self.cancel_requests.remove(&id);
        let (state, reason) = match kind {
            v1::FinishKind::Cancelled => (JobState::Cancelled, "None"),
            v1::FinishKind::Timeout => (JobState::Timeout, "TimeLimit"),
            v1::FinishKind::OutOfMemory => (JobState::OutOfMemory, "OutOfMemory"),
            v1::FinishKind::LaunchFailed => (JobState::Failed, "JobLaunchFailure"),
            v1::FinishKind::Exited if req.exit_code == 0 && req.exit_signal == 0 => {
                (JobState::Completed, "None")
            }
            v1::FinishKind::Exited => (JobState::Failed, "NonZeroExitCode"),
        };
        if kind == v1::FinishKind::LaunchFailed {
            tracing::warn!(job_id = id, error = %req.message, "job launch failed on node");
        }
        let cancelled_by = if state == JobState::Cancelled {
            Some(cancelled_by.unwrap_or(0))
        } else {
            None
        };
        self.emit(Event::JobEnded {
            job_id: id,
            state,
            exit_code: req.exit_code,
            exit_signal: req.exit_signal,
            time,
            reason: reason.into(),
            cancelled_by,
        });
    }

    /// Ends a job being preempted (CANCEL: PREEMPTED; REQUEUE: back to pending).
    /// False when it is not being preempted.
    fn end_preempted(&mut self, id: JobId, time: Time, exit_code: i32, exit_signal: i32) -> bool {
        let mode = self
            .state
            .job(id)
            .and_then(|j| j.preemption.as_ref())
            .map(|p| p.mode);
        self.grace_deadlines.remove(&id);
        match mode {
            Some(PreemptMode::Requeue) => {
                tracing::info!(job_id = id, "preempted job requeued");
                self.emit(Event::JobRequeued {
                    job_id: id,
                    time,
                    hold: false,
                });
            }
            Some(PreemptMode::Cancel) => {
                tracing::info!(job_id = id, "preempted job ended");
                self.emit(Event::JobEnded {
                    job_id: id,
                    state: JobState::Preempted,
                    exit_code,
                    exit_signal,
                    time,
                    reason: "None".into(),
                    cancelled_by: None,
                });
            }
            _ => return false,
        }
        self.want_schedule();
        true
    }

    /// A job whose node vanished: requeued if it asked for it, NODE_FAIL otherwise.
    fn end_lost_job(&mut self, id: JobId, now: Time) {
        if !self.requeue_requests.contains_key(&id) && self.end_preempted(id, now, 0, 0) {
            self.cancel_requests.remove(&id);
            return;
        }
        let Some(job) = self.state.job(id) else {
            return;
        };
        self.cancel_requests.remove(&id);
        let hold = self.requeue_requests.remove(&id);
        if job.spec.requeue || hold.is_some() {
            self.emit(Event::JobRequeued {
                job_id: id,
                time: now,
                hold: hold.unwrap_or(false),
            });
        } else {
            self.emit(Event::JobEnded {
                job_id: id,
                state: JobState::NodeFail,
                exit_code: 0,
                exit_signal: 0,
                time: now,
                reason: "NodeDown".into(),
                cancelled_by: None,
            });
        }
        self.want_schedule();
    }

    fn fail_jobs_on(&mut self, node: &str, now: Time) {
        let ids: Vec<JobId> = self
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
            self.effects.push(Effect::Signal {
                job_id: id,
                signal: 0,
                batch_only: false,
            });
            self.end_lost_job(id, now);
        }
    }

    /// Periodic work: nodes that stopped answering go DOWN; preempted jobs whose grace
    /// time is over are killed.
    fn tick(&mut self, now: Time) {
        let due: Vec<JobId> = self
            .grace_deadlines
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            self.grace_deadlines.remove(&id);
            if self
                .state
                .job(id)
                .is_some_and(|j| j.state == JobState::Running)
            {
                tracing::info!(job_id = id, "killing preempted job");
                self.effects.push(Effect::Signal {
                    job_id: id,
                    signal: 0,
                    batch_only: false,
                });
            }
        }
        let expired: Vec<String> = self
            .state
            .reservations
            .values()
            .filter(|r| r.expired(now))
            .map(|r| r.name.clone())
            .collect();
        for name in expired {
            tracing::info!(reservation = %name, "reservation ended");
            self.emit(Event::ReservationDeleted { name });
        }
        let timeout = Time::from(self.config.controller.node_timeout_s);
        let silent: Vec<String> = self
            .state
            .nodes
            .values()
            .filter(|n| n.health != NodeHealth::Down && now - n.last_heartbeat > timeout)
            .map(|n| n.name.clone())
            .collect();
        for name in silent {
            tracing::warn!(node = %name, "node not responding, setting it down");
            self.emit(Event::NodeDown {
                name: name.clone(),
                reason: "Not responding".into(),
                time: now,
            });
            self.fail_jobs_on(&name, now);
        }
    }

    /// One scheduling pass: start what fits, note why the rest waits.
    fn schedule(&mut self, now: Time) {
        let started = Instant::now();
        // A pass over a large queue is long CPU work: on a multi-threaded runtime the
        // worker hands its other tasks (accepting connections, reads, node reports) to
        // another thread meanwhile.
        let multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        let plan = if multi_thread {
            tokio::task::block_in_place(|| sched::schedule(&self.state, now, &self.sched_config))
        } else {
            sched::schedule(&self.state, now, &self.sched_config)
        };
        for start in &plan.starts {
            let mut id = start.job_id;
            if let Some(task) = start.array_task
                && self
                    .state
                    .job(id)
                    .is_some_and(|j| j.is_array_meta() && j.pending_tasks.len() > 1)
            {
                let new_id = self.state.next_job_id;
                self.emit(Event::ArrayTaskSplit {
                    array_id: id,
                    task_id: task,
                    new_id,
                });
                id = new_id;
            }
            let Some(job) = self.state.job(id) else {
                continue;
            };
            let node = start
                .alloc
                .nodes
                .first()
                .map(|n| n.node.as_str())
                .unwrap_or("");
            let mut probe = job.clone();
            if probe.is_array_meta() {
                probe.array_task_id = probe.pending_tasks.first().copied();
            }
            let (stdout_path, stderr_path) = model::pattern::batch_output_paths(&probe, node);
            self.emit(Event::JobStarted {
                job_id: id,
                alloc: start.alloc.clone(),
                time: now,
                stdout_path,
                stderr_path,
            });
            tracing::debug!(job_id = id, nodes = %start.alloc.hostlist(), "job started");
            self.effects.push(Effect::Launch { job_id: id });
        }
        for cancel in &plan.cancels {
            self.emit(Event::JobEnded {
                job_id: cancel.job_id,
                state: JobState::Cancelled,
                exit_code: 0,
                exit_signal: 0,
                time: now,
                reason: cancel.reason.clone(),
                cancelled_by: None,
            });
        }
        for &id in &plan.resumes {
            tracing::info!(job_id = id, "resuming job suspended by preemption");
            self.emit(Event::JobResumed {
                job_id: id,
                time: now,
            });
            self.effects.push(Effect::Suspend {
                job_id: id,
                resume: true,
            });
        }
        for p in &plan.preempts {
            self.preempt(p, now);
        }
        for (id, pending) in plan.pending {
            let changed = self.state.job(id).is_some_and(|j| {
                j.reason != pending.reason
                    || j.planned_start != pending.planned_start
                    || j.planned_nodes != pending.planned_nodes
            });
            if changed {
                // Derived, not persisted: the next pass recomputes it after a restart.
                self.state.apply(&Event::JobPendingReason {
                    job_id: id,
                    reason: pending.reason.into_owned(),
                    planned_start: pending.planned_start,
                    planned_nodes: pending.planned_nodes,
                });
                self.changed = true;
            }
        }
        self.last_pass = started.elapsed();
        if !plan.preempts.is_empty() || !plan.resumes.is_empty() {
            // Suspended victims lend their room at once: start their preemptors.
            self.want_schedule();
        }
        if !plan.starts.is_empty() || !plan.cancels.is_empty() {
            tracing::debug!(
                started = plan.starts.len(),
                pass_us = self.last_pass.as_micros() as u64,
                "scheduling pass"
            );
        }
    }
}

impl Core {
    /// Stops a job the scheduler chose for a preemptor: SUSPEND stops it at once;
    /// CANCEL and REQUEUE terminate it now, or with a GraceTime send SIGTERM now and
    /// kill it when the grace time is over (`tick`).
    fn preempt(&mut self, p: &sched::preempt::Preempt, now: Time) {
        let Some(state) = self.state.job(p.job_id).map(|j| j.state) else {
            return;
        };
        tracing::info!(
            job_id = p.job_id,
            preemptor = p.preemptor,
            mode = p.mode.name(),
            grace_secs = p.grace_secs,
            "preempting job"
        );
        match p.mode {
            PreemptMode::Suspend => {
                self.emit(Event::JobSuspended {
                    job_id: p.job_id,
                    time: now,
                    preemptor: Some(p.preemptor),
                });
                if state == JobState::Running {
                    self.effects.push(Effect::Suspend {
                        job_id: p.job_id,
                        resume: false,
                    });
                }
            }
            PreemptMode::Cancel | PreemptMode::Requeue if state == JobState::Running => {
                self.emit(Event::JobPreempted {
                    job_id: p.job_id,
                    preemptor: p.preemptor,
                    mode: p.mode,
                    time: now,
                    grace_secs: p.grace_secs,
                });
                if p.grace_secs == 0 {
                    self.effects.push(Effect::Signal {
                        job_id: p.job_id,
                        signal: 0,
                        batch_only: false,
                    });
                } else {
                    self.effects.push(Effect::SignalAll {
                        job_id: p.job_id,
                        signal: libc::SIGTERM,
                    });
                }
                // The kill when the grace time is over; without one, the next tick
                // repeats the cancel once, should the first have been lost.
                self.grace_deadlines
                    .insert(p.job_id, now + Time::from(p.grace_secs));
            }
            _ => {}
        }
    }
}

/// Does a job pass a filter's user, name, partition, state and account parts?
pub fn job_matches(job: &Job, f: &v1::JobFilter) -> bool {
    let user_ok = f.users.is_empty()
        || f.users
            .iter()
            .any(|u| *u == job.spec.user || u.parse::<u32>().ok() == Some(job.spec.uid));
    let name_ok = f.names.is_empty() || f.names.contains(&job.spec.name);
    let part_ok = f.partitions.is_empty() || f.partitions.contains(&job.spec.partition);
    let acct_ok = f.accounts.is_empty() || f.accounts.contains(&job.spec.account);
    let state_ok = f.states.is_empty()
        || f.states
            .iter()
            .any(|s| s.eq_ignore_ascii_case("all") || JobState::parse(s) == Some(job.state));
    user_ok && name_ok && part_ok && acct_ok && state_ok
}

fn fatal(e: &dyn std::fmt::Display) -> ! {
    tracing::error!(error = %e, "cannot persist state, stopping");
    std::process::exit(70)
}
