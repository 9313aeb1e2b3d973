//! The state owner: one task that holds the `ClusterState`, takes a closed set of
//! inputs from the gRPC front, hands each to the controller's rules (`rules`), and
//! only then makes the turn durable, answers and acts.
//!
//! Each turn drains every input waiting (up to a bound), runs their rules, writes the
//! records their events touched to the store and flushes once (group commit), and
//! only then answers the callers and tells nodes to act. Inputs that arrive during the
//! flush form the next batch. Scheduling passes run a few milliseconds after a change
//! (debounced) and at least every `sched_interval_ms`. Once a turn is durable, and
//! before its callers are answered, an immutable snapshot is published for readers
//! (squeue, sinfo), so polling never waits on this loop and a caller's next read shows
//! what it was told.
//!
//! When the store refuses a turn because its disk is full, the turn is undone: the
//! state goes back to the last snapshot, every caller of the turn is told "state
//! store full", and nothing is dispatched. Reads go on from the snapshot, and writes
//! succeed again once the disk has room.

use crate::command::{
    ChangeAccounting, ChangeReservation, CompleteStep, ControlJobs, CreateStep, Heartbeat, JobEnd,
    JobResult, NodeOrders, Registration, Rejection, SignalJobs, StartedStep, Submit, Submitted,
    UpdateJobs, UpdateNodes, UpdateStep,
};
use crate::dispatch::Dispatcher;
use crate::rules::{self, Turn};
use crate::store::{Batch, Store, StoreError};
use model::{ClusterState, Config, Event, JobId, JobPayload, Time};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, watch};

pub type Reply<T> = oneshot::Sender<Result<T, Rejection>>;

/// Everything that can change the cluster state: a domain command and where to send
/// its answer.
pub enum Input {
    Submit(Box<Submit>, Reply<Submitted>),
    /// A heterogeneous job's components, the leader first.
    SubmitHet(Vec<Submit>, Reply<Submitted>),
    Signal(SignalJobs, Reply<Vec<JobResult>>),
    Control(ControlJobs, Reply<Vec<JobResult>>),
    Notify(crate::command::NotifyJob, Reply<()>),
    Update(UpdateJobs, Reply<Vec<JobResult>>),
    ModifyRecords(crate::command::ModifyJobRecords, Reply<Vec<JobResult>>),
    UpdateNodes(UpdateNodes, Reply<()>),
    CreateStep(CreateStep, Reply<StartedStep>),
    CompleteStep(CompleteStep, Reply<()>),
    UpdateStep(UpdateStep, Reply<()>),
    Register(Registration, Reply<NodeOrders>),
    Heartbeat(Heartbeat, Reply<NodeOrders>),
    JobFinished(JobEnd, Reply<()>),
    ChangeReservation(ChangeReservation, Reply<String>),
    SetTrigger(crate::command::SetTrigger, Reply<u32>),
    ClearTriggers(crate::command::ClearTriggers, Reply<()>),
    ChangePartition(crate::command::ChangePartition, Reply<String>),
    /// `scontrol reconfigure` of an unchanged file: the config's partitions, to put
    /// back as it defines them.
    RestorePartitions(Vec<model::config::Partition>, Reply<()>),
    /// `sacctmgr`: the last input of its turn, so that the next sees the change.
    ChangeAccounting(ChangeAccounting, Reply<model::assoc_change::Changed>),
    /// A node confirmed it started this run of a job.
    Launched {
        job_id: JobId,
        restart_count: u32,
    },
    /// A node could not be told to launch this run of a job.
    LaunchFailed {
        job_id: JobId,
        restart_count: u32,
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

/// An answer held back until the turn is durable: sent as decided, or replaced by the
/// reason the turn could not be committed.
type Ack = Box<dyn FnOnce(Option<&Rejection>) + Send>;

pub struct Core {
    state: ClusterState,
    config: Arc<Config>,
    sched_config: Arc<sched::SchedConfig>,
    /// Publishes the scheduler's config (its associations) after a `sacctmgr` change.
    published_config: watch::Sender<Arc<sched::SchedConfig>>,
    store: Arc<dyn Store>,
    snapshot: watch::Sender<Arc<ClusterState>>,
    dispatcher: Dispatcher,
    sched_at: Option<Instant>,
    last_pass: Duration,
    /// The last commit failed for want of room: no pass runs until the next tick.
    store_full: bool,
    /// What `sdiag` reports: the committed turns' job events and the passes' times.
    statistics: Arc<crate::stats::Statistics>,
}

impl Core {
    pub fn new(
        state: ClusterState,
        config: Arc<Config>,
        published_config: watch::Sender<Arc<sched::SchedConfig>>,
        store: Arc<dyn Store>,
        snapshot: watch::Sender<Arc<ClusterState>>,
        dispatcher: Dispatcher,
    ) -> Core {
        let sched_config = published_config.borrow().clone();
        Core {
            state,
            sched_config,
            published_config,
            config,
            store,
            snapshot,
            dispatcher,
            sched_at: Some(Instant::now()),
            last_pass: Duration::ZERO,
            store_full: false,
            statistics: Arc::new(crate::stats::Statistics::new(unix_now())),
        }
    }

    /// Counts into `statistics` (shared with the services that report them).
    pub fn with_statistics(mut self, statistics: Arc<crate::stats::Statistics>) -> Core {
        self.statistics = statistics;
        self
    }

    /// Runs until every sender is gone.
    pub async fn run(mut self, mut inbox: mpsc::Receiver<Input>) {
        let tick =
            Duration::from_millis(u64::from(self.config.controller.sched_interval_ms.max(100)));
        let mut next_tick = Instant::now() + tick;
        // The time of the tick before, for what passed between two ticks (none before
        // the first: a restart does not mail what it missed).
        let mut last_tick: Option<Time> = None;
        loop {
            let wake = self.sched_at.map_or(next_tick, |s| s.min(next_tick));
            tokio::select! {
                input = inbox.recv() => {
                    let Some(input) = input else { break };
                    let mut inputs = vec![input];
                    while inputs.len() < MAX_BATCH
                        && !matches!(inputs.last(), Some(Input::ChangeAccounting(..)))
                    {
                        match inbox.try_recv() {
                            Ok(input) => inputs.push(input),
                            Err(_) => break,
                        }
                    }
                    self.turn(unix_now(), |turn, acks, dispatcher| {
                        for input in inputs {
                            handle(turn, input, acks, dispatcher);
                        }
                    });
                }
                _ = tokio::time::sleep_until(wake.into()) => {
                    let now = unix_now();
                    if Instant::now() >= next_tick {
                        self.store_full = false;
                        let since = last_tick.replace(now).unwrap_or(now);
                        self.turn(now, |turn, _, _| rules::timer::tick(turn, since));
                        next_tick = Instant::now() + tick;
                        self.sched_at.get_or_insert_with(Instant::now);
                    }
                    if self.sched_at.is_some_and(|s| Instant::now() >= s) && !self.store_full {
                        self.sched_at = None;
                        self.pass(now);
                    }
                }
            }
        }
    }

    /// One scheduling pass. It is long CPU work on a large queue: on a multi-threaded
    /// runtime the worker hands its other tasks (connections, reads, node reports) to
    /// another thread meanwhile.
    fn pass(&mut self, now: Time) {
        let started = Instant::now();
        let multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        let (mut starts, mut cancels) = (0, 0);
        let queue_length = self.state.queued_records();
        self.turn(now, |turn, _, _| {
            let plan = if multi_thread {
                tokio::task::block_in_place(|| rules::timer::schedule(turn))
            } else {
                rules::timer::schedule(turn)
            };
            (starts, cancels) = (plan.starts.len(), plan.cancels.len());
        });
        self.last_pass = started.elapsed();
        self.statistics.pass(self.last_pass, queue_length, now);
        if starts + cancels > 0 {
            tracing::debug!(
                started = starts,
                cancelled = cancels,
                pass_us = self.last_pass.as_micros() as u64,
                "scheduling pass"
            );
        }
    }

    /// Runs rules in one turn, then makes their events durable, answers and acts.
    fn turn(&mut self, now: Time, decide: impl FnOnce(&mut Turn, &mut Vec<Ack>, &mut Dispatcher)) {
        let mut acks: Vec<Ack> = Vec::new();
        let mut turn = Turn::new(&mut self.state, &self.config, &self.sched_config, now);
        decide(&mut turn, &mut acks, &mut self.dispatcher);
        let Turn {
            events,
            effects,
            payloads,
            reschedule,
            assocs,
            archive,
            ..
        } = turn;
        // ArchiveJobs: what a purge drops is on disk before the purge is; a purge
        // whose archive cannot be written is undone, and tried again at a later tick
        // (purges run in the tick's turn, which answers no caller).
        if !archive.is_empty()
            && let Some(dir) = self.config.archive_dir()
        {
            let written = crate::archive::write(
                std::path::Path::new(&dir),
                &self.config.cluster_name,
                now,
                &archive,
            );
            match written {
                Ok(path) => {
                    tracing::info!(jobs = archive.len(), file = %path.display(), "job records archived");
                }
                Err(e) => {
                    tracing::error!(dir, error = %e, "cannot archive job records; their purge waits");
                    debug_assert!(acks.is_empty(), "a purge in a turn with callers");
                    self.undo_turn(false);
                    return;
                }
            }
        }
        let mut batch = batch_of(&self.state, &events, payloads);
        batch.assocs = assocs.clone();
        // Fault injection (inert unless `FAILPOINTS` names these points): a crash of
        // the controller after a turn that tells nodes to act became durable, before
        // its answers (`after-commit`) or after them (`after-ack`), before any node
        // was told. The multi-process tests use them; see `orders_node`.
        let orders_node = events.iter().any(orders_node);
        match self.store.commit(batch) {
            Ok(()) => {}
            Err(StoreError::Full(why)) => {
                tracing::warn!(error = %why, "state store full: the turn is refused");
                self.undo_turn(true);
                let refused = Rejection::StoreFull(why);
                for ack in acks {
                    ack(Some(&refused));
                }
                return;
            }
            Err(e) => fatal(&e),
        }
        fail::fail_point!("after-commit", orders_node, |_| std::process::abort());
        self.statistics.count(&events);
        if let Some(assocs) = assocs {
            let mut next = self.sched_config.as_ref().clone();
            next.assocs = assocs;
            self.sched_config = Arc::new(next);
            self.published_config
                .send_replace(self.sched_config.clone());
        }
        // Readers see the turn before its callers hear of it: a caller's next read
        // shows what it was told. Heartbeats change nothing a reader needs at once,
        // but a node's first load: readers then see it, refreshed with later turns.
        let publish = {
            let published = self.snapshot.borrow();
            events.iter().any(|e| match e {
                Event::NodeHeartbeat { name, load, .. } => {
                    load.is_some() && published.nodes.get(name).is_some_and(|n| n.load.is_none())
                }
                _ => true,
            })
        };
        if publish {
            self.snapshot.send_replace(Arc::new(self.state.clone()));
        }
        for ack in acks {
            ack(None);
        }
        // The answers leave on other workers while the state owner waits (no other
        // turn, nothing dispatched), then the process dies.
        fail::fail_point!("after-ack", orders_node, |_| {
            tokio::task::block_in_place(|| std::thread::sleep(Duration::from_millis(500)));
            std::process::abort()
        });
        for effect in effects {
            self.dispatcher
                .perform(effect, &self.state, self.store.as_ref());
        }
        if reschedule {
            self.want_schedule();
        }
    }

    /// Back to the state of the last published snapshot (the last turn committed),
    /// keeping the nodes' heartbeat times and loads, which heartbeats move without a
    /// commit;
    /// `store_full`: because the store's disk is full.
    fn undo_turn(&mut self, store_full: bool) {
        self.store_full |= store_full;
        let mut state = self.snapshot.borrow().as_ref().clone();
        for (name, node) in &mut state.nodes {
            if let Some(now) = self.state.nodes.get(name) {
                node.last_heartbeat = now.last_heartbeat;
                node.load = now.load;
            }
        }
        self.state = state;
    }

    fn want_schedule(&mut self) {
        let delay = Duration::from_millis(u64::from(self.config.controller.sched_delay_ms))
            .max(self.last_pass);
        let at = Instant::now() + delay;
        self.sched_at = Some(self.sched_at.map_or(at, |s| s.min(at)));
    }
}

/// Does the event lead to an order for a node (a launch, a kill, a suspend or resume)?
fn orders_node(event: &Event) -> bool {
    matches!(
        event,
        Event::JobStarted { .. }
            | Event::JobKillRequested { .. }
            | Event::JobSuspended { .. }
            | Event::JobResumed { .. }
    )
}

/// The records a turn's events touched, as they now stand.
fn batch_of(state: &ClusterState, events: &[Event], payloads: Vec<(JobId, JobPayload)>) -> Batch {
    let mut jobs = BTreeSet::new();
    let mut nodes = BTreeSet::new();
    let mut reservations = BTreeSet::new();
    // A partition's name, and whether the store keeps a run-time record of it (the
    // last event of the turn says).
    let mut partitions = std::collections::BTreeMap::new();
    let mut usage = BTreeSet::new();
    let mut qos_usage = BTreeSet::new();
    let mut purged = Vec::new();
    let mut triggers = BTreeSet::new();
    let mut only_submits = true;
    for event in events.iter().filter(|e| e.persisted()) {
        if let Event::JobsPurged { job_ids } = event {
            purged.extend(job_ids.iter().copied());
        }
        if let Event::StepsPurged { job_ids } = event {
            jobs.extend(job_ids.iter().copied());
        }
        if let Event::UsageCharged {
            account, user, qos, ..
        } = event
        {
            usage.insert((account.clone(), user.clone()));
            qos_usage.insert(qos.clone());
        }
        if let Some(id) = event.job_id() {
            jobs.insert(id);
        }
        if let Event::ArrayTaskSplit { array_id, .. } = event {
            jobs.insert(*array_id);
        }
        if let Some(name) = event.reservation_name() {
            reservations.insert(name.to_string());
        }
        if let Some(name) = event.partition_name() {
            let kept = !matches!(event, Event::PartitionRestored { .. });
            partitions.insert(name.to_string(), kept);
        }
        if let Some(name) = event.node_name() {
            nodes.insert(name.to_string());
        }
        triggers.extend(event.trigger_ids());
        only_submits &= matches!(event, Event::JobSubmitted { .. });
    }
    Batch {
        payloads,
        jobs: jobs
            .into_iter()
            .filter_map(|id| state.jobs.get(&id).cloned())
            .collect(),
        only_submits,
        nodes: nodes
            .into_iter()
            .filter_map(|n| state.nodes.get(&n).cloned())
            .collect(),
        reservations: reservations
            .into_iter()
            .map(|name| {
                let r = state.reservations.get(&name).cloned();
                (name, r)
            })
            .collect(),
        partitions: partitions
            .into_iter()
            .map(|(name, kept)| {
                let p = state.partition(&name).filter(|_| kept).cloned();
                (name, p)
            })
            .collect(),
        usage: usage
            .into_iter()
            .filter_map(|k| state.usage.get(&k).cloned().map(|u| (k, u)))
            .collect(),
        qos_usage: qos_usage
            .into_iter()
            .filter_map(|k| state.qos_usage.get(&k).cloned().map(|u| (k, u)))
            .collect(),
        assocs: None,
        purged,
        next_trigger_id: events
            .iter()
            .any(|e| matches!(e, Event::TriggerSet { .. }))
            .then_some(state.next_trigger_id),
        triggers: triggers
            .into_iter()
            .map(|id| (id, state.triggers.get(&id).cloned()))
            .collect(),
    }
}

/// Queues the answer to send once the turn is durable.
fn answer<T: Send + 'static>(acks: &mut Vec<Ack>, reply: Reply<T>, value: Result<T, Rejection>) {
    acks.push(Box::new(move |refused| {
        let _ = reply.send(match refused {
            Some(r) => Err(r.clone()),
            None => value,
        });
    }));
}

fn handle(turn: &mut Turn, input: Input, acks: &mut Vec<Ack>, dispatcher: &mut Dispatcher) {
    use rules::{jobs, nodes};
    match input {
        Input::Submit(cmd, reply) => {
            // Fault injection (inert unless `FAILPOINTS` names it): a bug in a rule.
            fail::fail_point!("submit-panics", |_| panic!("fault point submit-panics"));
            let r = jobs::submit(turn, *cmd);
            answer(acks, reply, r);
        }
        Input::SubmitHet(components, reply) => {
            let r = jobs::submit_het(turn, components);
            answer(acks, reply, r);
        }
        Input::Signal(cmd, reply) => {
            let r = jobs::signal(turn, cmd);
            answer(acks, reply, Ok(r));
        }
        Input::Control(cmd, reply) => {
            let r = jobs::control(turn, cmd);
            answer(acks, reply, Ok(r));
        }
        Input::Notify(cmd, reply) => {
            let r = jobs::notify(turn, cmd);
            answer(acks, reply, r);
        }
        Input::Update(cmd, reply) => {
            let r = jobs::update(turn, cmd);
            answer(acks, reply, Ok(r));
        }
        Input::ModifyRecords(cmd, reply) => {
            let r = jobs::modify_records(turn, cmd);
            answer(acks, reply, Ok(r));
        }
        Input::UpdateNodes(cmd, reply) => {
            let r = nodes::update_nodes(turn, cmd);
            answer(acks, reply, r);
        }
        Input::CreateStep(cmd, reply) => {
            let r = jobs::create_step(turn, cmd);
            answer(acks, reply, r);
        }
        Input::CompleteStep(cmd, reply) => {
            let r = jobs::complete_step(turn, cmd);
            answer(acks, reply, r);
        }
        Input::UpdateStep(cmd, reply) => {
            let r = jobs::update_step(turn, cmd);
            answer(acks, reply, r);
        }
        Input::Register(reg, reply) => {
            // The daemon restarted or moved: the next call dials it afresh.
            dispatcher.forget(&reg.addr);
            let orders = nodes::register(turn, reg);
            answer(acks, reply, Ok(orders));
        }
        Input::Heartbeat(hb, reply) => {
            let orders = nodes::heartbeat(turn, hb);
            answer(acks, reply, Ok(orders));
        }
        Input::JobFinished(end, reply) => {
            nodes::job_finished(turn, end);
            answer(acks, reply, Ok(()));
        }
        Input::ChangeReservation(cmd, reply) => {
            let r = jobs::change_reservation(turn, cmd);
            answer(acks, reply, r);
        }
        Input::ChangePartition(cmd, reply) => {
            let r = jobs::change_partition(turn, cmd);
            answer(acks, reply, r);
        }
        Input::RestorePartitions(partitions, reply) => {
            jobs::restore_partitions(turn, &partitions);
            nodes::restore_features(turn);
            answer(acks, reply, Ok(()));
        }
        Input::ChangeAccounting(cmd, reply) => {
            let r = rules::accounting::change(turn, cmd);
            answer(acks, reply, r);
        }
        Input::SetTrigger(cmd, reply) => {
            let r = rules::triggers::set(turn, cmd);
            answer(acks, reply, r);
        }
        Input::ClearTriggers(cmd, reply) => {
            let r = rules::triggers::clear(turn, cmd);
            answer(acks, reply, r);
        }
        Input::Launched {
            job_id,
            restart_count,
        } => nodes::launched(turn, job_id, restart_count),
        Input::LaunchFailed {
            job_id,
            restart_count,
            node,
            message,
        } => {
            if let Some(addr) = turn.state.nodes.get(&node).map(|n| n.addr.clone()) {
                dispatcher.forget(&addr);
            }
            nodes::launch_failed(turn, job_id, restart_count, &node, &message);
        }
    }
}

fn fatal(e: &dyn std::fmt::Display) -> ! {
    tracing::error!(error = %e, "cannot persist state, stopping");
    std::process::exit(70)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::NoStore;
    use model::JobSpec;
    use std::sync::Mutex;

    /// A steps purge rewrites the jobs' records (now without steps); a jobs purge
    /// removes them.
    #[test]
    fn a_steps_purge_rewrites_the_jobs_and_a_jobs_purge_removes_them() {
        let config = Config::parse(
            "[[nodes]]\nnames = \"n1\"\ncpus = 2\nmemory = \"1G\"\n\
             [[partitions]]\nname = \"p\"\nnodes = \"ALL\"\n",
            "t.toml",
        )
        .unwrap();
        let mut state = ClusterState::new(config.node_list(), config.partition_list());
        for id in [1, 2] {
            let mut job = model::Job::new(id, JobSpec::default(), 0, None);
            job.state = model::JobState::Completed;
            state.insert_job(job);
        }
        let events = [
            Event::StepsPurged { job_ids: vec![1] },
            Event::JobsPurged { job_ids: vec![2] },
        ];
        let batch = batch_of(&state, &events, Vec::new());
        let rewritten: Vec<JobId> = batch.jobs.iter().map(|j| j.id).collect();
        assert_eq!((rewritten, batch.purged), (vec![1], vec![2]));
    }

    /// A partition set at run time is kept by the store; one restored to the config's
    /// definition is forgotten, whichever came last in the turn.
    #[test]
    fn a_restored_partition_leaves_the_store_and_a_set_one_is_kept() {
        let config = Config::parse(
            "[[nodes]]\nnames = \"n1\"\ncpus = 2\nmemory = \"1G\"\n\
             [[partitions]]\nname = \"p\"\nnodes = \"ALL\"\n\
             [[partitions]]\nname = \"q\"\nnodes = \"ALL\"\n",
            "t.toml",
        )
        .unwrap();
        let state = ClusterState::new(config.node_list(), config.partition_list());
        let of = |name: &str| Box::new(state.partition(name).unwrap().clone());
        let events = [
            Event::PartitionSet { partition: of("p") },
            Event::PartitionRestored { partition: of("p") },
            Event::PartitionRestored { partition: of("q") },
            Event::PartitionSet { partition: of("q") },
        ];
        let batch = batch_of(&state, &events, Vec::new());
        let kept: Vec<(&str, bool)> = batch
            .partitions
            .iter()
            .map(|(name, p)| (name.as_str(), p.is_some()))
            .collect();
        assert_eq!(kept, [("p", false), ("q", true)]);
    }

    /// A core over `config` and `state`, with no store, and a reader of its snapshots.
    fn core_over(
        config: Config,
        state: ClusterState,
    ) -> (Core, watch::Receiver<Arc<ClusterState>>) {
        let (inbox, _rx) = mpsc::channel(1);
        let (snapshot, readers) = watch::channel(Arc::new(state.clone()));
        let signer = Arc::new(auth::Signer::Key {
            key: auth::Key::from_bytes(&[0; 32]).unwrap(),
            issuer: auth::Issuer::Controller,
            host: "c".into(),
            ttl_s: 60,
        });
        let dispatcher =
            Dispatcher::new(inbox.downgrade(), "c".into(), "a:1".into(), 1, signer, None);
        let (sched, _) = watch::channel(Arc::new(sched::SchedConfig::from_config(&config)));
        let core = Core::new(
            state,
            Arc::new(config),
            sched,
            Arc::new(NoStore),
            snapshot,
            dispatcher,
        );
        (core, readers)
    }

    /// A core over `config` holding finished jobs 1 (ended at 1) and 2 (the newest,
    /// which always stays).
    fn core_with_old_jobs(config: Config) -> Core {
        let mut state = ClusterState::new(config.node_list(), config.partition_list());
        for id in [1, 2] {
            let mut job = model::Job::new(id, JobSpec::default(), 0, None);
            job.state = model::JobState::Completed;
            job.end_time = 1;
            state.insert_job(job);
        }
        core_over(config, state).0
    }

    #[test]
    fn a_purge_is_archived_first_and_waits_when_its_archive_cannot_be_written() {
        let dir = tempfile::tempdir().unwrap();
        let config = |archive_dir: &std::path::Path| {
            Config::parse(
                &format!(
                    "[controller]\npurge_job_after = \"1hours\"\narchive_jobs = true\n\
                     archive_dir = \"{}\"\n\
                     [[nodes]]\nnames = \"n1\"\ncpus = 2\nmemory = \"1G\"\n\
                     [[partitions]]\nname = \"p\"\nnodes = \"ALL\"\n",
                    archive_dir.display()
                ),
                "t.toml",
            )
            .unwrap()
        };
        let day = 86_400;
        // Under a plain file no directory can be made: the purge is undone.
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "").unwrap();
        let mut core = core_with_old_jobs(config(&blocker.join("archive")));
        core.turn(day, |t, _, _| rules::timer::tick(t, day));
        assert!(core.state.job(1).is_some(), "purged without its archive");
        // With a directory it can make, the archive is written, then job 1 goes.
        let archive = dir.path().join("archive");
        let mut core = core_with_old_jobs(config(&archive));
        core.turn(day, |t, _, _| rules::timer::tick(t, day));
        assert!(core.state.job(1).is_none() && core.state.job(2).is_some());
        let files: Vec<_> = std::fs::read_dir(&archive).unwrap().collect();
        assert_eq!(files.len(), 1);
        let bytes = std::fs::read(files[0].as_ref().unwrap().path()).unwrap();
        let back: proto::v1::JobArchive = proto::decode(&bytes).unwrap();
        assert_eq!(back.jobs.iter().map(|j| j.job_id).collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn callers_are_answered_after_readers_can_see_the_turn() {
        let config = Config::parse(
            "[[nodes]]\nnames = \"n1\"\ncpus = 2\nmemory = \"1G\"\n\
             [[partitions]]\nname = \"p\"\nnodes = \"ALL\"\ndefault = true\n",
            "t.toml",
        )
        .unwrap();
        let state = ClusterState::new(config.node_list(), config.partition_list());
        let (mut core, readers) = core_over(config, state);
        // What a reader sees at the moment the caller is answered.
        let seen = Arc::new(Mutex::new(None));
        let at_answer = Arc::clone(&seen);
        core.turn(1, |turn, acks, _| {
            let spec = JobSpec {
                user: "alice".into(),
                uid: 1000,
                work_dir: "/tmp".into(),
                ..JobSpec::default()
            };
            let payload = JobPayload {
                script: "#!/bin/sh\n".into(),
                env: vec![],
            };
            let submitted = rules::jobs::submit(
                turn,
                Submit {
                    spec,
                    payload,
                    user_groups: Vec::new(),
                },
            )
            .unwrap();
            acks.push(Box::new(move |_| {
                let listed = readers.borrow().job(submitted.job_id).is_some();
                *at_answer.lock().unwrap() = Some(listed);
            }));
        });
        assert_eq!(*seen.lock().unwrap(), Some(true));
    }
}
