//! The controller's rules, in process: a cluster from a config, commands and node
//! reports in, events, effects and orders out. No store, no RPCs, no processes; the
//! state's invariants are checked after every turn. A "restart" keeps what the store
//! keeps (the job and node records) and forgets everything else, as a `kill -9` of
//! the controller does.

use super::{Effect, Order, Turn, accounting, jobs, nodes, timer};
use crate::command::{
    ControlJobs, ControlOp, EndKind, Heartbeat, JobEnd, JobOnNode, NodeOrders, Registration,
    SignalJobs, SignalScope, Submit,
};
use model::filter::JobFilter;
use model::{
    ClusterState, Config, Event, JobId, JobPayload, JobSpec, JobState, KillCause, Reason, Restored,
    Time,
};
use sched::SchedConfig;

const CLUSTER: &str = r#"
[controller]
node_timeout_s = 30
[[nodes]]
names = "n[1-2]"
cpus = 4
memory = "4G"
[[partitions]]
name = "p"
nodes = "ALL"
default = true
default_time = "10:00"
"#;

const ALICE: u32 = 1000;

/// The requester of uid `uid`: root for 0, else a user named `u<uid>` without an
/// AdminLevel.
fn who(uid: u32) -> crate::command::Requester {
    if uid == 0 {
        crate::command::Requester::root()
    } else {
        crate::command::Requester::user(uid, &format!("u{uid}"))
    }
}

/// Alice's `srun` in job `id`: a step named `s` of `num_tasks` tasks, with no time limit
/// of its own.
fn srun(id: JobId, num_tasks: u32) -> crate::command::CreateStep {
    crate::command::CreateStep {
        job_id: id,
        name: "s".into(),
        request: model::step::StepRequest {
            num_tasks,
            ..Default::default()
        },
        nodelist: Vec::new(),
        exclude: Vec::new(),
        relative: 0,
        task_nodes: Vec::new(),
        time_limit_min: None,
        gpu_request: Default::default(),
        requester: who(ALICE),
    }
}

struct Env {
    state: ClusterState,
    config: Config,
    sched: SchedConfig,
    now: Time,
}

/// What one turn decided.
struct Decided<R> {
    answer: R,
    events: Vec<Event>,
    effects: Vec<Effect>,
    /// The records handed to the shell to archive.
    archive: Vec<model::Job>,
}

impl Env {
    fn new(extra: &str) -> Env {
        let config = Config::parse(&format!("{CLUSTER}{extra}"), "test.toml").unwrap();
        let state = ClusterState::new(config.node_list(), config.partition_list());
        let sched = SchedConfig::from_config(&config);
        let mut env = Env {
            state,
            config,
            sched,
            now: 1_000,
        };
        for node in ["n1", "n2"] {
            env.register(node, &[]);
        }
        env
    }

    fn turn<R>(&mut self, f: impl FnOnce(&mut Turn) -> R) -> Decided<R> {
        let mut turn = Turn::new(&mut self.state, &self.config, &self.sched, self.now);
        let answer = f(&mut turn);
        let (events, effects, archive) = (turn.events, turn.effects, turn.archive);
        if let Err(broken) = self.state.check_invariants() {
            panic!("after {events:?}: {broken}");
        }
        Decided {
            answer,
            events,
            effects,
            archive,
        }
    }

    fn register(&mut self, node: &str, jobs: &[JobOnNode]) -> NodeOrders {
        let reg = Registration {
            node: node.into(),
            addr: format!("{node}:1"),
            cpus: 4,
            memory_mb: 4096,
            gpus: vec![],
            numa_cpus: vec![],
            features: vec![],
            boot_time: 1,
            jobs: jobs.to_vec(),
            load: None,
        };
        self.turn(|t| nodes::register(t, reg)).answer
    }

    fn heartbeat(&mut self, node: &str, jobs: &[JobOnNode]) -> NodeOrders {
        self.heartbeat_turn(node, jobs).answer
    }

    fn heartbeat_turn(&mut self, node: &str, jobs: &[JobOnNode]) -> Decided<NodeOrders> {
        let hb = Heartbeat {
            node: node.into(),
            unhealthy: String::new(),
            jobs: jobs.to_vec(),
            load: None,
        };
        self.turn(|t| nodes::heartbeat(t, hb))
    }

    fn submit(&mut self, f: impl FnOnce(&mut JobSpec)) -> JobId {
        let mut spec = JobSpec {
            user: "alice".into(),
            uid: ALICE,
            work_dir: "/tmp".into(),
            num_tasks: 1,
            cpus_per_task: 1,
            ..JobSpec::default()
        };
        f(&mut spec);
        let payload = JobPayload {
            script: "#!/bin/sh\ntrue\n".into(),
            env: vec![],
        };
        self.turn(|t| {
            jobs::submit(
                t,
                Submit {
                    spec,
                    payload,
                    user_groups: Vec::new(),
                },
            )
        })
        .answer
        .unwrap()
        .job_id
    }

    /// A pass that starts the job; returns its node. The node confirms the launch.
    fn start(&mut self, id: JobId) -> String {
        let d = self.turn(timer::schedule);
        assert!(
            d.effects.contains(&Effect::Launch { job_id: id }),
            "{:?}",
            d.effects
        );
        let node = self.node_of(id);
        let run = self.job(id).restart_count;
        self.turn(|t| nodes::launched(t, id, run));
        assert!(self.job(id).launched);
        node
    }

    fn job(&self, id: JobId) -> &model::Job {
        self.state.job(id).unwrap()
    }

    fn node_of(&self, id: JobId) -> String {
        super::batch_node(self.job(id)).unwrap().to_string()
    }

    /// What the job's node reports of it.
    fn on_node(&self, id: JobId) -> JobOnNode {
        JobOnNode {
            job_id: id,
            restart_count: self.job(id).restart_count,
            suspended: false,
            ending: false,
            gpu_use: None,
        }
    }

    fn scancel(&mut self, id: JobId, uid: u32) -> Decided<()> {
        let cmd = SignalJobs {
            job_ids: vec![id.to_string()],
            filter: JobFilter::default(),
            signal: 0,
            scope: SignalScope::Steps,
            requester: who(uid),
        };
        let d = self.turn(|t| jobs::signal(t, cmd));
        assert!(d.answer.iter().all(|r| r.error.is_none()), "{:?}", d.answer);
        Decided {
            answer: (),
            events: d.events,
            effects: d.effects,
            archive: d.archive,
        }
    }

    fn control(&mut self, id: JobId, op: ControlOp) -> Decided<()> {
        let cmd = ControlJobs {
            incomplete: false,
            op,
            job_ids: vec![id.to_string()],
            requester: who(0),
        };
        let d = self.turn(|t| jobs::control(t, cmd));
        assert!(d.answer.iter().all(|r| r.error.is_none()), "{:?}", d.answer);
        Decided {
            answer: (),
            events: d.events,
            effects: d.effects,
            archive: d.archive,
        }
    }

    fn finished(&mut self, id: JobId, kind: EndKind, exit_code: i32) {
        let end = self.job_end(id, kind, exit_code);
        self.turn(|t| nodes::job_finished(t, end));
    }

    /// The report of the end of job `id`'s current run on its node.
    fn job_end(&self, id: JobId, kind: EndKind, exit_code: i32) -> JobEnd {
        JobEnd {
            node: self.node_of(id),
            job_id: id,
            restart_count: self.job(id).restart_count,
            kind,
            exit_code,
            exit_signal: if kind == EndKind::Cancelled { 15 } else { 0 },
            end_time: 0,
            message: String::new(),
            drain_reason: String::new(),
            batch_usage: None,
        }
    }

    /// A controller restart: only what the store keeps survives; nodes are UNKNOWN
    /// until they register again.
    fn restart(&mut self) {
        let kept = Restored {
            jobs: self
                .state
                .jobs
                .values()
                .map(|j| j.as_ref().clone())
                .collect(),
            nodes: self.state.nodes.values().cloned().collect(),
            reservations: self.state.reservations.values().cloned().collect(),
            // What the store keeps: the partitions changed at run time.
            partitions: {
                let configured = self.config.partition_list();
                self.state
                    .partitions
                    .iter()
                    .filter(|p| !configured.contains(p))
                    .cloned()
                    .collect()
            },
            usage: self.state.usage.clone().into_iter().collect(),
            qos_usage: self.state.qos_usage.clone().into_iter().collect(),
            assocs: None,
            triggers: self.state.triggers.values().cloned().collect(),
            next_trigger_id: self.state.next_trigger_id,
        };
        self.state = ClusterState::restored(
            self.config.node_list(),
            self.config.partition_list(),
            kept,
            self.now,
        );
        self.state.check_invariants().unwrap();
    }
}

fn kill(node: &str, id: JobId) -> Effect {
    Effect::Order {
        job_id: id,
        node: node.into(),
        order: Order::Kill,
    }
}

#[test]
fn an_acknowledged_cancel_survives_a_restart_and_names_the_canceller() {
    let mut env = Env::new("");
    let id = env.submit(|_| {});
    let node = env.start(id);
    let d = env.scancel(id, ALICE);
    assert_eq!(d.effects, vec![kill(&node, id)]);
    assert!(matches!(
        env.job(id).kill.map(|k| k.cause),
        Some(KillCause::Cancel { by: ALICE })
    ));
    // The controller dies before the kill reaches the node: restarted, it orders the
    // kill when the node registers, reporting the job still running.
    env.restart();
    let orders = env.register(&node, &[env.on_node(id)]);
    assert_eq!(orders.kill, vec![id]);
    // Being killed: no order again.
    let ending = JobOnNode {
        ending: true,
        ..env.on_node(id)
    };
    assert_eq!(env.heartbeat(&node, &[ending]), NodeOrders::default());
    env.finished(id, EndKind::Cancelled, 0);
    let job = env.job(id);
    assert_eq!(
        (job.state, job.cancelled_by),
        (JobState::Cancelled, Some(ALICE))
    );
    assert!(job.kill.is_none());
}

#[test]
fn requeue_incomplete_leaves_jobs_that_are_not_running_alone() {
    let mut env = Env::new("");
    let running = env.submit(|_| {});
    env.start(running);
    let done = env.submit(|_| {});
    env.start(done);
    env.finished(done, EndKind::Exited, 0);
    let pending = env.submit(|s| s.hold = true);
    let cmd = ControlJobs {
        op: ControlOp::Requeue,
        job_ids: vec![running.to_string(), done.to_string(), pending.to_string()],
        incomplete: true,
        requester: who(0),
    };
    let d = env.turn(|t| jobs::control(t, cmd));
    assert!(d.answer.iter().all(|r| r.error.is_none()));
    assert!(matches!(
        env.job(running).kill.map(|k| k.cause),
        Some(KillCause::Requeue { hold: false })
    ));
    assert_eq!(env.job(done).state, JobState::Completed);
    assert_eq!(env.job(pending).state, JobState::Pending);
}

#[test]
fn an_acknowledged_requeue_survives_a_restart() {
    let mut env = Env::new("");
    let id = env.submit(|_| {});
    let node = env.start(id);
    env.control(id, ControlOp::Requeue);
    env.restart();
    assert_eq!(env.register(&node, &[env.on_node(id)]).kill, vec![id]);
    // The node's report of the end (a cancel, as far as it knows) requeues the job.
    env.finished(id, EndKind::Cancelled, 0);
    let job = env.job(id);
    assert_eq!(
        (job.state, job.restart_count, job.held),
        (JobState::Pending, 1, false)
    );
    assert!(job.kill.is_none() && !job.launched);
}

#[test]
fn a_requeue_whose_node_lost_the_job_still_requeues_it() {
    let mut env = Env::new("");
    let id = env.submit(|_| {});
    let node = env.start(id);
    env.control(id, ControlOp::RequeueHold);
    env.restart();
    // The node comes back without the job (its state was lost).
    env.register(&node, &[]);
    let job = env.job(id);
    assert_eq!((job.state, job.held), (JobState::Pending, true));
    assert_eq!(job.reason, Reason::JobHeldUser);
}

#[test]
fn a_launch_never_confirmed_is_sent_again_and_a_confirmed_one_is_lost() {
    let mut env = Env::new("");
    let unconfirmed = env.submit(|_| {});
    let d = env.turn(timer::schedule);
    assert!(d.effects.contains(&Effect::Launch {
        job_id: unconfirmed
    }));
    let confirmed = env.submit(|_| {});
    let node = env.start(confirmed);
    let node_unconfirmed = env.node_of(unconfirmed);
    // The controller dies before it sent the first launch; neither node has it.
    env.restart();
    let d = env.turn(|t| {
        nodes::register(
            t,
            Registration {
                node: node_unconfirmed.clone(),
                addr: "x:1".into(),
                cpus: 4,
                memory_mb: 4096,
                gpus: vec![],
                numa_cpus: vec![],
                features: vec![],
                boot_time: 1,
                jobs: vec![],
                load: None,
            },
        )
    });
    assert!(d.effects.contains(&Effect::Launch {
        job_id: unconfirmed
    }));
    assert_eq!(env.job(unconfirmed).state, JobState::Running);
    if node != node_unconfirmed {
        env.register(&node, &[]);
    }
    let lost = env.job(confirmed);
    assert_eq!(
        (lost.state, lost.reason),
        (JobState::NodeFail, Reason::NodeDown)
    );
    // A heartbeat that reports the relaunched job confirms it.
    let report = env.on_node(unconfirmed);
    env.heartbeat(&node_unconfirmed, &[report]);
    assert!(env.job(unconfirmed).launched);
}

#[test]
fn a_lost_suspend_is_ordered_again_and_a_lost_resume_too() {
    let mut env = Env::new("");
    let id = env.submit(|_| {});
    let node = env.start(id);
    let d = env.control(id, ControlOp::Suspend);
    assert!(matches!(
        d.effects[..],
        [Effect::Order {
            order: Order::Suspend,
            ..
        }]
    ));
    // The RPC was lost: the node still runs the job.
    let orders = env.heartbeat(&node, &[env.on_node(id)]);
    assert_eq!(orders.suspend, vec![id]);
    let stopped = JobOnNode {
        suspended: true,
        ..env.on_node(id)
    };
    assert_eq!(env.heartbeat(&node, &[stopped]), NodeOrders::default());
    env.control(id, ControlOp::Resume);
    env.restart();
    assert_eq!(env.register(&node, &[stopped]).resume, vec![id]);
}

#[test]
fn a_node_is_told_to_kill_what_it_should_not_run() {
    let mut env = Env::new("");
    let id = env.submit(|_| {});
    let node = env.start(id);
    env.finished(id, EndKind::Exited, 0);
    assert_eq!(env.job(id).state, JobState::Completed);
    // A stale run, an unknown job, and a job that ended: all killed.
    let stale = JobOnNode {
        restart_count: 7,
        ..env.on_node(id)
    };
    let unknown = JobOnNode {
        job_id: 999,
        ..stale
    };
    let orders = env.heartbeat(&node, &[stale, unknown]);
    assert_eq!(orders.kill, vec![id, 999]);
}

#[test]
fn a_cancel_wins_over_a_preemption_and_a_requeue_over_nothing_it_cannot() {
    let mut env = Env::new("");
    let id = env.submit(|_| {});
    env.start(id);
    env.scancel(id, ALICE);
    // A requeue of a job being cancelled is refused.
    let cmd = ControlJobs {
        incomplete: false,
        op: ControlOp::Requeue,
        job_ids: vec![id.to_string()],
        requester: who(0),
    };
    let d = env.turn(|t| jobs::control(t, cmd));
    assert!(d.answer[0].error.is_some());
    // A second cancel keeps the first canceller.
    env.scancel(id, 0);
    assert!(matches!(
        env.job(id).kill.map(|k| k.cause),
        Some(KillCause::Cancel { by: ALICE })
    ));
}

#[test]
fn a_preempted_jobs_grace_time_ends_in_a_durable_kill() {
    let extra = r#"
[scheduler]
preempt_type = "qos"
[[qos]]
name = "low"
grace_time = 30
[[qos]]
name = "high"
priority = 100
preempt = ["low"]
"#;
    let mut env = Env::new(extra);
    let low: Vec<JobId> = (0..2)
        .map(|_| {
            env.submit(|s| {
                s.qos = "low".into();
                s.cpus_per_task = 4;
            })
        })
        .collect();
    env.turn(timer::schedule);
    for id in &low {
        let run = env.job(*id).restart_count;
        env.turn(|t| nodes::launched(t, *id, run));
    }
    let high = env.submit(|s| {
        s.qos = "high".into();
        s.cpus_per_task = 4;
    });
    let d = env.turn(timer::schedule);
    let victim = d
        .events
        .iter()
        .find_map(|e| match e {
            Event::JobPreempted { job_id, .. } => Some(*job_id),
            _ => None,
        })
        .expect("a victim");
    assert!(d.effects.iter().any(|e| matches!(
        e,
        Effect::Order {
            order: Order::SignalAll { .. },
            ..
        }
    )));
    assert!(env.job(victim).kill.is_none());
    env.now += 31;
    env.restart();
    let d = env.turn(|t| timer::tick(t, t.now));
    assert!(matches!(
        env.job(victim).kill.map(|k| k.cause),
        Some(KillCause::Preempt)
    ));
    assert!(d.effects.iter().any(
        |e| matches!(e, Effect::Order { job_id, order: Order::Kill, .. } if *job_id == victim)
    ));
    let node = env.node_of(victim);
    env.register(&node, &[]);
    assert_eq!(env.job(victim).state, JobState::Preempted);
    assert_eq!(env.job(high).state, JobState::Pending);
}

#[test]
fn relative_time_limits_move_the_limit_the_job_has_in_the_state_owner() {
    use crate::command::UpdateJobs;
    use model::job_update::{JobChange, TimeLimitChange};
    let mut env = Env::new("");
    let id = env.submit(|s| s.time_limit_min = Some(10));
    let add = |uid| UpdateJobs {
        job_ids: vec![id.to_string()],
        changes: vec![JobChange::TimeLimit(TimeLimitChange::Add(30))],
        requester: who(uid),
    };
    // Two updates in one turn: each moves the limit the other left.
    let d = env.turn(|t| {
        let first = jobs::update(t, add(0));
        let second = jobs::update(t, add(0));
        (first, second)
    });
    assert!(d.answer.0[0].error.is_none() && d.answer.1[0].error.is_none());
    assert_eq!(env.job(id).time_limit_min, Some(70));
    // Only root raises a limit; its owner may lower it.
    let d = env.turn(|t| jobs::update(t, add(ALICE)));
    assert_eq!(
        d.answer[0].error,
        Some(crate::command::Rejection::PermissionDenied)
    );
    let lower = UpdateJobs {
        job_ids: vec![id.to_string()],
        changes: vec![JobChange::TimeLimit(TimeLimitChange::Subtract(20))],
        requester: who(ALICE),
    };
    let d = env.turn(|t| jobs::update(t, lower));
    assert!(d.answer[0].error.is_none());
    assert_eq!(env.job(id).time_limit_min, Some(50));
    let bad = UpdateJobs {
        job_ids: vec![id.to_string()],
        changes: vec![JobChange::Partition("nope".into())],
        requester: who(0),
    };
    let d = env.turn(|t| jobs::update(t, bad));
    assert!(d.answer[0].error.is_some() && d.events.is_empty());
}

#[test]
fn a_job_moved_to_another_partition_is_checked_as_a_submit_to_it_would_be() {
    use crate::command::UpdateJobs;
    use model::job_update::JobChange;
    let mut env = Env::new(
        r#"
[[partitions]]
name = "physics"
nodes = "n[1-2]"
allow_accounts = ["physics"]
[[partitions]]
name = "one"
nodes = "n1"
"#,
    );
    let id = env.submit(|s| s.num_nodes = 2);
    let mut move_to = |partition: &str| {
        let cmd = UpdateJobs {
            job_ids: vec![id.to_string()],
            changes: vec![JobChange::Partition(partition.into())],
            requester: who(ALICE),
        };
        let d = env.turn(|t| jobs::update(t, cmd));
        assert!(d.events.is_empty(), "{:?}", d.events);
        d.answer[0].error.clone().map(|e| e.to_string())
    };
    assert_eq!(
        move_to("physics").as_deref(),
        Some(crate::validate::INVALID_ACCOUNT)
    );
    assert_eq!(
        move_to("one").as_deref(),
        Some("Node count specification invalid")
    );
    assert_eq!(env.job(id).spec.partition, "p");
}

#[test]
fn a_test_only_submit_estimates_from_a_snapshot_and_queues_nothing() {
    let env = Env::new("");
    let spec = JobSpec {
        user: "alice".into(),
        uid: ALICE,
        work_dir: "/tmp".into(),
        num_tasks: 1,
        cpus_per_task: 2,
        ..JobSpec::default()
    };
    let payload = JobPayload {
        script: "#!/bin/sh\ntrue\n".into(),
        env: vec![],
    };
    let snapshot = env.state.clone();
    let submit = || Submit {
        user_groups: Vec::new(),
        spec: spec.clone(),
        payload: payload.clone(),
    };
    let est = jobs::estimate(&snapshot, &env.config, &env.sched, submit(), env.now).unwrap();
    assert_eq!((est.job_id, est.estimated_start), (1, env.now));
    assert!(est.estimated_nodes.starts_with('n'), "{est:?}");
    assert!(snapshot.jobs.is_empty() && snapshot.next_job_id == 1);
    // Impossible requests are refused as a submit would refuse them.
    let mut too_big = submit();
    too_big.spec.cpus_per_task = 99;
    assert!(jobs::estimate(&snapshot, &env.config, &env.sched, too_big, env.now).is_err());
}

#[test]
fn a_test_only_submit_on_a_busy_cluster_says_when_and_where_it_would_start() {
    let mut env = Env::new("");
    // Every CPU of both nodes is busy for 10 and 20 minutes.
    let short = env.submit(|s| {
        s.cpus_per_task = 4;
        s.time_limit_min = Some(10);
    });
    let long = env.submit(|s| {
        s.cpus_per_task = 4;
        s.time_limit_min = Some(20);
    });
    env.turn(timer::schedule);
    for id in [short, long] {
        env.turn(|t| nodes::launched(t, id, 0));
    }
    let short_node = env.node_of(short);
    let spec = JobSpec {
        user: "alice".into(),
        uid: ALICE,
        work_dir: "/tmp".into(),
        num_tasks: 1,
        cpus_per_task: 2,
        time_limit_min: Some(5),
        ..JobSpec::default()
    };
    let submit = Submit {
        user_groups: Vec::new(),
        spec,
        payload: JobPayload {
            script: "#!/bin/sh\ntrue\n".into(),
            env: vec![],
        },
    };
    let est = jobs::estimate(&env.state, &env.config, &env.sched, submit, env.now).unwrap();
    let ends = env.job(short).start_time + 600;
    assert_eq!(
        (est.estimated_start, est.estimated_nodes.as_str()),
        (ends, short_node.as_str())
    );
}

#[test]
fn a_silent_node_goes_down_and_its_jobs_fail_or_are_requeued() {
    let mut env = Env::new("");
    let plain = env.submit(|s| s.cpus_per_task = 4);
    let requeue = env.submit(|s| {
        s.cpus_per_task = 4;
        s.requeue = true;
    });
    env.turn(timer::schedule);
    for id in [plain, requeue] {
        let run = env.job(id).restart_count;
        env.turn(|t| nodes::launched(t, id, run));
    }
    // Both nodes stop heartbeating.
    env.now += 31;
    let d = env.turn(|t| timer::tick(t, t.now));
    let downs = d
        .events
        .iter()
        .filter(|e| matches!(e, Event::NodeDown { .. }))
        .count();
    assert_eq!(downs, 2);
    assert_eq!(env.job(plain).state, JobState::NodeFail);
    let job = env.job(requeue);
    assert_eq!((job.state, job.restart_count), (JobState::Pending, 1));
    // The jobs' nodes were told to kill them, should they still run there.
    let kills = d
        .effects
        .iter()
        .filter(|e| {
            matches!(
                e,
                Effect::Order {
                    order: Order::Kill,
                    ..
                }
            )
        })
        .count();
    assert_eq!(kills, 2);
}

#[test]
fn a_launch_the_node_refuses_requeues_the_job_and_downs_the_node() {
    let mut env = Env::new("");
    let id = env.submit(|_| {});
    env.turn(timer::schedule);
    let node = env.node_of(id);
    env.turn(|t| nodes::launch_failed(t, id, 0, &node, "connection refused"));
    assert_eq!(env.job(id).state, JobState::Pending);
    assert_eq!(env.state.nodes[&node].health, model::NodeHealth::Down);
    // A report of the first run, late, says nothing about the job now.
    let end = JobEnd {
        node: node.clone(),
        job_id: id,
        restart_count: 0,
        kind: EndKind::Exited,
        exit_code: 0,
        exit_signal: 0,
        end_time: 0,
        message: String::new(),
        drain_reason: String::new(),
        batch_usage: None,
    };
    let d = env.turn(|t| nodes::job_finished(t, end));
    assert!(d.events.is_empty());
}

#[test]
fn a_launch_failure_keeps_a_cancel_and_ignores_a_confirmed_or_earlier_run() {
    let mut env = Env::new("");
    // Cancelled between the start and the failure: it ends CANCELLED, never requeued.
    let cancelled = env.submit(|_| {});
    env.turn(timer::schedule);
    let node = env.node_of(cancelled);
    env.scancel(cancelled, ALICE);
    env.turn(|t| nodes::launch_failed(t, cancelled, 0, &node, "timed out"));
    let job = env.job(cancelled);
    assert_eq!(
        (job.state, job.cancelled_by, job.restart_count),
        (JobState::Cancelled, Some(ALICE), 0)
    );
    // A run the node confirmed meanwhile (through a heartbeat), or an earlier run of
    // the job: the failure is stale and changes nothing.
    let mut env = Env::new("");
    let confirmed = env.submit(|_| {});
    let node = env.start(confirmed);
    let d = env.turn(|t| nodes::launch_failed(t, confirmed, 0, &node, "timed out"));
    assert!(d.events.is_empty(), "{:?}", d.events);
    let d = env.turn(|t| nodes::launch_failed(t, confirmed, 7, &node, "timed out"));
    assert!(d.events.is_empty(), "{:?}", d.events);
    assert_eq!(env.job(confirmed).state, JobState::Running);
    assert_eq!(env.state.nodes[&node].health, model::NodeHealth::Up);
}

#[test]
fn a_refused_command_splits_no_array_task_and_a_whole_array_is_tried_task_by_task() {
    let mut env = Env::new("");
    let array = env.submit(|s| {
        s.array = Some(model::ArraySpec {
            task_ids: vec![1, 2, 3, 4],
            max_running: 1,
        })
    });
    let control = |env: &mut Env, ids: &str, requester: u32| {
        let cmd = ControlJobs {
            incomplete: false,
            op: ControlOp::Hold,
            job_ids: vec![ids.to_string()],
            requester: who(requester),
        };
        env.turn(|t| jobs::control(t, cmd))
    };
    // Another user's hold of one task, and a list naming a task that does not exist:
    // refused, and the array's record is as it was.
    let d = control(&mut env, &format!("{array}_3"), ALICE + 1);
    assert_eq!(
        d.answer[0].error,
        Some(crate::command::Rejection::PermissionDenied)
    );
    assert!(d.events.is_empty(), "{:?}", d.events);
    let d = control(&mut env, &format!("{array}_[3,9]"), 0);
    assert!(d.answer[0].error.is_some());
    assert!(d.events.is_empty(), "{:?}", d.events);
    assert_eq!(env.job(array).pending_tasks.len(), 4);
    // One task runs; a hold of the whole array holds every pending task and says that
    // the running one could not be held.
    let _ = env.turn(timer::schedule);
    let running: Vec<JobId> = env
        .state
        .jobs
        .values()
        .filter(|j| j.state == JobState::Running)
        .map(|j| j.id)
        .collect();
    assert!(!running.is_empty());
    let d = control(&mut env, &array.to_string(), 0);
    assert!(d.answer[0].error.is_some());
    let pending: Vec<&std::sync::Arc<model::Job>> = env
        .state
        .jobs
        .values()
        .filter(|j| j.state == JobState::Pending)
        .collect();
    assert!(!pending.is_empty());
    assert!(pending.iter().all(|j| j.held), "{pending:?}");
}

#[test]
fn an_overcommitted_jobs_steps_may_run_more_tasks_than_its_cpus() {
    let mut env = Env::new("");
    let id = env.submit(|s| {
        s.num_tasks = 10;
        s.details.overcommit = true;
    });
    env.start(id);
    let started = env
        .turn(|t| jobs::create_step(t, srun(id, 10)))
        .answer
        .unwrap();
    assert_eq!(started.nodes[0].1.len(), 10);
}

#[test]
fn a_step_ends_once_and_only_a_step_that_exists() {
    use crate::command::CompleteStep;
    let mut env = Env::new("");
    let id = env.submit(|_| {});
    env.start(id);
    let create = |num_tasks| srun(id, num_tasks);
    // More tasks than the job's CPUs: refused, nothing recorded.
    let d = env.turn(|t| jobs::create_step(t, create(1000)));
    assert!(d.events.is_empty());
    assert_eq!(
        d.answer.unwrap_err().to_string(),
        "More processors requested than permitted"
    );
    let started = env
        .turn(|t| jobs::create_step(t, create(1)))
        .answer
        .unwrap();
    assert_eq!(started.nodes.len(), 1);
    assert_eq!(started.nodes[0].1, vec![0]);
    let step = started.step_id;
    let usage = model::StepUsage {
        max_rss_bytes: 1 << 20,
        max_rss_node: started.nodes[0].0.node.clone(),
        total_cpu_us: 2500,
        user_cpu_us: 2000,
        system_cpu_us: 500,
        tasks: None,
        gpu: None,
    };
    let end = |step_id, exit_code| CompleteStep {
        job_id: id,
        step_id,
        exit_code,
        exit_signal: 0,
        usage: Some(usage.clone()),
        requester: who(ALICE),
    };
    let d = env.turn(|t| jobs::complete_step(t, end(step + 1, 0)));
    assert!(d.answer.is_err() && d.events.is_empty());
    // Only the job's user (or root) ends its steps.
    let by_bob = CompleteStep {
        requester: who(ALICE + 1),
        ..end(step, 0)
    };
    let d = env.turn(|t| jobs::complete_step(t, by_bob));
    assert_eq!(d.answer, Err(crate::command::Rejection::PermissionDenied));
    assert!(d.events.is_empty());
    // Its usage, then its end.
    let d = env.turn(|t| jobs::complete_step(t, end(step, 3)));
    assert!(d.answer.is_ok() && d.events.len() == 2);
    let d = env.turn(|t| jobs::complete_step(t, end(step, 0)));
    assert!(d.answer.is_ok() && d.events.is_empty());
    let ended = env
        .job(id)
        .steps
        .iter()
        .find(|s| s.id == Some(step))
        .unwrap();
    assert_eq!(ended.exit_code, 3);
    assert_eq!(ended.usage.as_ref(), Some(&usage));
    // The step keeps its own nodes and CPUs.
    assert_eq!(ended.nodes, vec![started.nodes[0].0.node.clone()]);
    assert_eq!(ended.cpus, started.nodes[0].0.cpus);
}

#[test]
fn an_exclusive_step_waits_for_cpus_no_running_step_holds() {
    use crate::command::CompleteStep;
    let mut env = Env::new("");
    let id = env.submit(|s| s.cpus_per_task = 2);
    env.start(id);
    let create = || {
        let mut step = srun(id, 1);
        step.request.exclusive = true;
        step
    };
    let first = env.turn(|t| jobs::create_step(t, create())).answer.unwrap();
    let second = env.turn(|t| jobs::create_step(t, create())).answer.unwrap();
    // Each holds one CPU of its own.
    assert_eq!(first.nodes[0].0.cpus, 1);
    assert_eq!(second.nodes[0].0.cpus, 1);
    assert_ne!(first.nodes[0].0.cpu_ids, second.nodes[0].0.cpu_ids);
    // The job's two CPUs are held: a third waits, nothing recorded.
    let d = env.turn(|t| jobs::create_step(t, create()));
    assert!(d.events.is_empty());
    assert_eq!(d.answer.unwrap_err().to_string(), model::step::NODES_BUSY);
    let end = CompleteStep {
        job_id: id,
        step_id: first.step_id,
        exit_code: 0,
        exit_signal: 0,
        usage: None,
        requester: who(ALICE),
    };
    env.turn(|t| jobs::complete_step(t, end)).answer.unwrap();
    assert!(env.turn(|t| jobs::create_step(t, create())).answer.is_ok());
}

/// `srun -w` runs a step on the job's nodes it names, `-x` off those it names; a node
/// outside the job is refused.
#[test]
fn a_step_runs_on_the_nodes_srun_names_and_off_those_it_excludes() {
    let mut env = Env::new("");
    let id = env.submit(|s| {
        s.num_nodes = 2;
        s.num_tasks = 2;
    });
    env.start(id);
    let step_nodes = |env: &mut Env, nodelist: &[&str], exclude: &[&str]| {
        let cmd = crate::command::CreateStep {
            nodelist: nodelist.iter().map(|n| n.to_string()).collect(),
            exclude: exclude.iter().map(|n| n.to_string()).collect(),
            ..srun(id, 0)
        };
        env.turn(|t| jobs::create_step(t, cmd)).answer.map(|s| {
            let nodes: Vec<String> = s.nodes.iter().map(|(n, _)| n.node.clone()).collect();
            nodes
        })
    };
    assert_eq!(
        step_nodes(&mut env, &["n2"], &[]),
        Ok(vec!["n2".to_string()])
    );
    assert_eq!(
        step_nodes(&mut env, &[], &["n1"]),
        Ok(vec!["n2".to_string()])
    );
    assert_eq!(
        step_nodes(&mut env, &["n1", "n2"], &[]).map(|n| n.len()),
        Ok(2),
        "-w alone asks for every node it names"
    );
    assert!(step_nodes(&mut env, &["n9"], &[]).is_err());
    // -r 1: from the job's second node on; past its last, refused.
    for (relative, want) in [(1, Ok(vec!["n2".to_string()])), (2, Err(()))] {
        let cmd = crate::command::CreateStep {
            relative,
            ..srun(id, 0)
        };
        let got = env.turn(|t| jobs::create_step(t, cmd)).answer;
        let got = got
            .map(|s| {
                s.nodes
                    .iter()
                    .map(|(n, _)| n.node.clone())
                    .collect::<Vec<_>>()
            })
            .map_err(|_| ());
        assert_eq!(got, want, "-r {relative}");
    }
    let laid_out = |env: &mut Env, cmd: crate::command::CreateStep| {
        let started = env.turn(|t| jobs::create_step(t, cmd)).answer.unwrap();
        started
            .nodes
            .iter()
            .map(|(n, tasks)| (n.node.clone(), tasks.clone()))
            .collect::<Vec<_>>()
    };
    // `-w n2 -N2 -n3`: n2 must be one of the nodes, and the tasks are numbered in the
    // job's order of nodes, as Slurm's.
    let mut request = srun(id, 3);
    request.request.num_nodes = 2;
    request.request.overcommit = true;
    request.nodelist = vec!["n2".into()];
    assert_eq!(
        laid_out(&mut env, request),
        [("n1".to_string(), vec![0, 1]), ("n2".to_string(), vec![2])]
    );
    // `-m arbitrary -w n2,n1,n1`: task by task as named.
    let arbitrary = crate::command::CreateStep {
        task_nodes: ["n2", "n1", "n1"].map(String::from).to_vec(),
        request: model::step::StepRequest {
            overcommit: true,
            ..Default::default()
        },
        ..srun(id, 0)
    };
    assert_eq!(
        laid_out(&mut env, arbitrary),
        [("n1".to_string(), vec![1, 2]), ("n2".to_string(), vec![0])]
    );
}

#[test]
fn a_step_past_its_own_time_limit_is_killed_once_and_ends_timeout() {
    use crate::command::{CompleteStep, CreateStep};
    let mut env = Env::new("");
    let id = env.submit(|_| {});
    let node = env.start(id);
    let create = |time_limit_min| CreateStep {
        time_limit_min,
        ..srun(id, 1)
    };
    let limited = env.turn(|t| jobs::create_step(t, create(Some(1))));
    let limited = limited.answer.unwrap();
    let free = env
        .turn(|t| jobs::create_step(t, create(None)))
        .answer
        .unwrap();
    let killed = |d: &Decided<()>| -> Vec<u32> {
        d.effects
            .iter()
            .filter_map(|e| match e {
                Effect::Order {
                    order: Order::StepTimeLimit { step_id },
                    ..
                } => Some(*step_id),
                _ => None,
            })
            .collect()
    };
    // The node keeps answering: only the step's limit ends anything.
    let tick_at = |env: &mut Env, now| {
        env.now = now;
        let job = env.on_node(id);
        env.heartbeat(&node, &[job]);
        env.turn(|t| timer::tick(t, t.now))
    };
    let started = env.now;
    assert!(killed(&tick_at(&mut env, started + 59)).is_empty());
    let d = tick_at(&mut env, started + 60);
    assert_eq!(killed(&d), vec![limited.step_id]);
    // What was decided survives a restart: the next tick does not kill it again.
    env.restart();
    assert!(killed(&tick_at(&mut env, started + 65)).is_empty());
    let end = |step_id| CompleteStep {
        job_id: id,
        step_id,
        exit_code: 0,
        exit_signal: 9,
        usage: None,
        requester: who(ALICE),
    };
    env.turn(|t| jobs::complete_step(t, end(limited.step_id)))
        .answer
        .unwrap();
    env.turn(|t| jobs::complete_step(t, end(free.step_id)))
        .answer
        .unwrap();
    let state = |step| {
        let job = env.job(id);
        job.steps.iter().find(|s| s.id == Some(step)).unwrap().state
    };
    assert_eq!(state(limited.step_id), JobState::Timeout);
    assert_eq!(state(free.step_id), JobState::Cancelled);
    assert_eq!(env.job(id).state, JobState::Running);
}

#[test]
fn a_steps_time_limit_is_lowered_by_its_owner_and_raised_by_an_operator_only() {
    use crate::command::UpdateStep;
    use model::job_update::TimeLimitChange;
    let mut env = Env::new("");
    let id = env.submit(|_| {});
    env.start(id);
    let step = env
        .turn(|t| jobs::create_step(t, srun(id, 1)))
        .answer
        .unwrap();
    let update = |step_id, time_limit, uid| UpdateStep {
        job_id: id,
        step_id,
        time_limit,
        requester: who(uid),
    };
    let limit = |env: &Env| {
        env.job(id)
            .steps
            .iter()
            .find(|s| s.id == Some(step.step_id))
            .unwrap()
            .time_limit_min
    };
    // Without a limit of its own a step has its job's (the default 10 minutes): moved
    // from there.
    let d = env.turn(|t| {
        jobs::update_step(
            t,
            update(Some(step.step_id), TimeLimitChange::Subtract(4), ALICE),
        )
    });
    d.answer.unwrap();
    assert_eq!(limit(&env), Some(6));
    let d = env.turn(|t| jobs::update_step(t, update(None, TimeLimitChange::Add(1), ALICE)));
    assert!(matches!(
        d.answer,
        Err(crate::command::Rejection::PermissionDenied)
    ));
    assert!(d.events.is_empty());
    let d = env.turn(|t| jobs::update_step(t, update(None, TimeLimitChange::Set(Some(30)), 0)));
    d.answer.unwrap();
    assert_eq!(limit(&env), Some(30));
    let d = env.turn(|t| jobs::update_step(t, update(Some(7), TimeLimitChange::Set(Some(1)), 0)));
    assert!(d.answer.is_err() && d.events.is_empty());
    assert_eq!(limit(&env), Some(30));
}

#[test]
fn the_batch_step_keeps_what_its_node_measured() {
    let mut env = Env::new("");
    let id = env.submit(|_| {});
    let node = env.start(id);
    let usage = model::StepUsage {
        max_rss_bytes: 4096,
        max_rss_node: node.clone(),
        total_cpu_us: 10,
        user_cpu_us: 7,
        system_cpu_us: 3,
        tasks: None,
        // The batch node's NVML sampled its GPUs: kept with the batch step.
        gpu: Some(model::gpu_use::GpuUse {
            sampled_gpu_ms: 4000,
            busy_gpu_ms: 3000,
            max_memory_bytes: 1 << 30,
            idle_ms: 0,
        }),
    };
    let end = JobEnd {
        batch_usage: Some(usage.clone()),
        ..env.job_end(id, EndKind::Exited, 0)
    };
    env.turn(|t| nodes::job_finished(t, end));
    let job = env.job(id);
    assert_eq!(job.state, JobState::Completed);
    let batch = job.steps.iter().find(|s| s.id.is_none()).unwrap();
    assert_eq!(batch.usage.as_ref(), Some(&usage));
    assert_eq!(batch.nodes, vec![node]);
}

#[test]
fn max_job_count_live_jobs_refuse_the_next_submit_until_one_ends() {
    let mut env = Env::new("");
    env.config.controller.max_job_count = 2;
    let first = env.submit(|_| {});
    env.submit(|s| {
        s.array = Some(model::ArraySpec {
            task_ids: vec![1, 2, 3],
            max_running: 0,
        })
    });
    let spec = JobSpec {
        user: "alice".into(),
        uid: ALICE,
        work_dir: "/tmp".into(),
        ..JobSpec::default()
    };
    let payload = JobPayload {
        script: "#!/bin/sh\n".into(),
        env: vec![],
    };
    let submit = |spec: &JobSpec| Submit {
        user_groups: Vec::new(),
        spec: spec.clone(),
        payload: payload.clone(),
    };
    let d = env.turn(|t| jobs::submit(t, submit(&spec)));
    assert_eq!(d.answer.unwrap_err(), crate::command::Rejection::Busy);
    assert!(d.events.is_empty());
    env.scancel(first, ALICE);
    let d = env.turn(|t| jobs::submit(t, submit(&spec)));
    assert!(d.answer.is_ok(), "{:?}", d.answer);
}

#[test]
fn holds_and_releases_set_slurms_reasons() {
    let mut env = Env::new("");
    let id = env.submit(|_| {});
    env.control(id, ControlOp::Hold);
    assert_eq!(
        (env.job(id).held, env.job(id).reason),
        (true, Reason::JobHeldAdmin)
    );
    env.control(id, ControlOp::Release);
    assert!(!env.job(id).held);
    let d = env.turn(timer::schedule);
    assert!(d.effects.contains(&Effect::Launch { job_id: id }));
    // A running job cannot be held.
    let cmd = ControlJobs {
        incomplete: false,
        op: ControlOp::Uhold,
        job_ids: vec![id.to_string()],
        requester: who(ALICE),
    };
    let d = env.turn(|t| jobs::control(t, cmd));
    assert!(d.answer[0].error.is_some());
}

#[test]
fn a_node_is_drained_or_downed_only_with_a_reason() {
    use crate::command::{NodeAction, Rejection, UpdateNodes};
    let mut env = Env::new("");
    let update = |action, reason: &str| UpdateNodes {
        nodes: "n1".into(),
        action: Some(action),
        reason: reason.into(),
        features: None,
        requester: who(0),
    };
    for action in [NodeAction::Drain, NodeAction::Down] {
        for reason in ["", "  "] {
            let d = env.turn(|t| nodes::update_nodes(t, update(action, reason)));
            assert_eq!(
                d.answer,
                Err(Rejection::invalid(
                    "You must specify a reason when DOWNING or DRAINING a node. Request denied"
                ))
            );
            assert!(d.events.is_empty());
        }
    }
    let d = env.turn(|t| nodes::update_nodes(t, update(NodeAction::Resume, "")));
    assert_eq!(d.answer, Ok(()));
    let d = env.turn(|t| nodes::update_nodes(t, update(NodeAction::Drain, "disk swap")));
    assert_eq!(d.answer, Ok(()));
    assert!(env.state.nodes["n1"].drain);
}

#[test]
fn a_node_that_registers_less_than_configured_is_drained_with_what_it_lacks() {
    let mut env = Env::new("");
    let short = Registration {
        node: "n1".into(),
        addr: "n1:1".into(),
        cpus: 2,
        memory_mb: 4096,
        gpus: vec![],
        numa_cpus: vec![],
        features: vec![],
        boot_time: 2,
        jobs: vec![],
        load: None,
    };
    let d = env.turn(|t| nodes::register(t, short.clone()));
    assert_eq!(d.events.len(), 2, "{:?}", d.events);
    let n1 = &env.state.nodes["n1"];
    assert!(n1.drain);
    assert_eq!(n1.reason, "Low CPUs");
    // Scheduled as declared, not as found.
    assert_eq!(n1.cpus, 4);
    // Registering again leaves the drain (and the admin's resume) alone.
    let d = env.turn(|t| nodes::register(t, short));
    assert_eq!(d.events.len(), 1);
    assert!(!env.state.nodes["n2"].drain);
}

#[test]
fn a_node_schedules_by_the_numa_cpus_it_found_when_they_fit_what_it_is_declared() {
    let mut env = Env::new("");
    let reg = |numa_cpus: Vec<Vec<u32>>| Registration {
        node: "n1".into(),
        addr: "n1:1".into(),
        cpus: 4,
        memory_mb: 4096,
        gpus: vec![],
        numa_cpus,
        features: vec![],
        boot_time: 2,
        jobs: vec![],
        load: None,
    };
    env.turn(|t| nodes::register(t, reg(vec![vec![0, 2], vec![1, 3]])));
    let n1 = &env.state.nodes["n1"];
    assert_eq!(n1.numa_cpus, [vec![0, 2], vec![1, 3]]);
    assert_eq!((n1.cpu_numa(2), n1.cpu_numa(3)), (0, 1));
    // CPU 7 is not one of the 4 it is scheduled with: what it found is not used.
    env.turn(|t| nodes::register(t, reg(vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]])));
    assert!(env.state.nodes["n1"].numa_cpus.is_empty());
}

#[test]
fn a_failed_prolog_requeues_the_job_and_drains_its_node() {
    let mut env = Env::new("");
    let id = env.submit(|_| {});
    let node = env.start(id);
    let end = JobEnd {
        node: node.clone(),
        job_id: id,
        restart_count: 0,
        kind: EndKind::PrologFailed,
        exit_code: 1,
        exit_signal: 0,
        end_time: 0,
        message: "prolog exited with 1".into(),
        drain_reason: "Prolog error".into(),
        batch_usage: None,
    };
    env.turn(|t| nodes::job_finished(t, end));
    let job = env.job(id);
    assert_eq!((job.state, job.restart_count), (JobState::Pending, 1));
    let n = &env.state.nodes[&node];
    assert!(n.drain && n.reason == "Prolog error", "{n:?}");
}

#[test]
fn a_failed_health_check_drains_the_node_with_its_output() {
    let mut env = Env::new("");
    let hb = Heartbeat {
        node: "n2".into(),
        unhealthy: "ERROR: /scratch is not mounted".into(),
        jobs: vec![],
        load: None,
    };
    env.turn(|t| nodes::heartbeat(t, hb));
    let n = &env.state.nodes["n2"];
    assert!(
        n.drain && n.reason == "ERROR: /scratch is not mounted",
        "{n:?}"
    );
    assert!(!env.state.nodes["n1"].drain);
}

#[test]
fn a_heartbeat_brings_the_nodes_free_memory_and_load() {
    let mut env = Env::new("");
    let load = model::node::NodeLoad {
        free_mem_mb: 12000,
        cpu_load_centi: 125,
    };
    for (said, kept) in [(Some(load), Some(load)), (None, Some(load))] {
        let hb = Heartbeat {
            node: "n2".into(),
            unhealthy: String::new(),
            jobs: vec![],
            load: said,
        };
        env.turn(|t| nodes::heartbeat(t, hb));
        assert_eq!(env.state.nodes["n2"].load, kept);
    }
    assert_eq!(env.state.nodes["n1"].load, None);
    // A registration brings it too.
    let reg = Registration {
        node: "n1".into(),
        addr: "n1:1".into(),
        cpus: 4,
        memory_mb: 4096,
        gpus: vec![],
        numa_cpus: vec![],
        features: vec![],
        boot_time: 1,
        jobs: vec![],
        load: Some(load),
    };
    env.turn(|t| nodes::register(t, reg));
    assert_eq!(env.state.nodes["n1"].load, Some(load));
}

#[test]
fn a_node_down_for_silence_stays_down_when_it_answers_unless_return_to_service_says() {
    for (rts, back) in [(0, false), (1, true)] {
        let mut env = Env::new("");
        env.config.controller.return_to_service = rts;
        let id = env.submit(|s| s.requeue = true);
        let node = env.start(id);
        // The node stalls past the timeout: DOWN, its job requeued.
        env.now += 31;
        env.heartbeat(if node == "n1" { "n2" } else { "n1" }, &[]);
        env.turn(|t| timer::tick(t, t.now));
        assert_eq!(env.state.nodes[&node].health, model::NodeHealth::Down);
        assert_eq!(env.job(id).state, JobState::Pending);
        // It answers again, still running the old run.
        let stale = [JobOnNode {
            job_id: id,
            restart_count: 0,
            suspended: false,
            ending: false,
            gpu_use: None,
        }];
        let orders = env.heartbeat(&node, &stale);
        assert_eq!(orders.register_again, back, "rts {rts}");
        let orders = env.register(&node, &stale);
        assert!(orders.kill.contains(&id), "rts {rts}: {orders:?}");
        let health = env.state.nodes[&node].health;
        assert_eq!(health == model::NodeHealth::Up, back, "rts {rts}");
    }
}

/// The mail effects of a turn.
fn mails(effects: &[Effect]) -> Vec<(String, String, String)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Mail {
                node,
                user,
                subject,
            } => Some((node.clone(), user.clone(), subject.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn mail_types_mail_the_user_through_the_jobs_node_when_it_begins_and_ends() {
    use model::mail::MailType;
    let mut env = Env::new("");
    let id = env.submit(|s| {
        s.name = "train".into();
        s.mail_types = vec![MailType::Begin, MailType::End];
    });
    env.now += 65;
    let d = env.turn(timer::schedule);
    let node = env.node_of(id);
    assert_eq!(
        mails(&d.effects),
        [(
            node.clone(),
            "alice".to_string(),
            format!("Slurm Job_id={id} Name=train Began, Queued time 00:01:05")
        )]
    );
    env.now += 3;
    let end = env.job_end(id, EndKind::Exited, 0);
    let d = env.turn(|t| nodes::job_finished(t, end));
    assert_eq!(
        mails(&d.effects),
        [(
            node.clone(),
            "alice".to_string(),
            format!("Slurm Job_id={id} Name=train Ended, Run time 00:00:03, COMPLETED, ExitCode 0")
        )]
    );
    // FAIL only: a failure mails (to --mail-user), a success does not.
    let failing = env.submit(|s| {
        s.name = "bad".into();
        s.mail_types = vec![MailType::Fail];
        s.mail_user = "ops@example.org".into();
    });
    let quiet = env.submit(|s| s.mail_types = vec![MailType::Fail]);
    let d = env.turn(timer::schedule);
    assert!(mails(&d.effects).is_empty(), "{:?}", d.effects);
    let end = env.job_end(failing, EndKind::Exited, 2);
    let d = env.turn(|t| nodes::job_finished(t, end));
    let sent = mails(&d.effects);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].1, "ops@example.org");
    assert_eq!(
        sent[0].2,
        format!("Slurm Job_id={failing} Name=bad Failed, Run time 00:00:00, FAILED, ExitCode 2")
    );
    let end = env.job_end(quiet, EndKind::Exited, 0);
    let d = env.turn(|t| nodes::job_finished(t, end));
    assert!(mails(&d.effects).is_empty(), "{:?}", d.effects);
}

#[test]
fn time_limit_mails_go_once_as_a_job_passes_each_share_of_its_limit() {
    use model::mail::MailType;
    let mut env = Env::new("");
    let id = env.submit(|s| {
        s.name = "long".into();
        s.time_limit_min = Some(10);
        s.mail_types = vec![MailType::TimeLimit50, MailType::TimeLimit90];
    });
    env.start(id);
    let start = env.job(id).start_time;
    let subjects = |since: Time, now: Time| -> Vec<String> {
        mails(&super::mail::time_limits(&env.state, since, now))
            .into_iter()
            .map(|(_, _, subject)| subject)
            .collect()
    };
    assert!(subjects(start, start + 299).is_empty());
    assert_eq!(
        subjects(start + 299, start + 300),
        [format!(
            "Slurm Job_id={id} Name=long Reached 50% of time limit, Run time 00:05:00"
        )]
    );
    // Each share once: not in the ticks after, and 80% was not asked for.
    assert!(subjects(start + 300, start + 500).is_empty());
    assert_eq!(
        subjects(start + 500, start + 600),
        [format!(
            "Slurm Job_id={id} Name=long Reached 90% of time limit, Run time 00:09:00"
        )]
    );
}

#[test]
fn an_array_mails_its_summary_and_its_tasks_mail_with_array_tasks() {
    use model::mail::MailType;
    let mut env = Env::new("");
    let array = |types: Vec<MailType>| {
        move |s: &mut JobSpec| {
            s.name = "arr".into();
            s.mail_types = types;
            s.array = Some(model::ArraySpec {
                task_ids: vec![0, 1],
                max_running: 0,
            });
        }
    };
    // Without ARRAY_TASKS: once when the first task begins, once when the last ends.
    let id = env.submit(array(vec![MailType::Begin, MailType::End, MailType::Fail]));
    let d = env.turn(timer::schedule);
    let sent = mails(&d.effects);
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(
        sent[0].2,
        format!("Slurm Array Summary Job_id={id}_* ({id}) Name=arr Began")
    );
    let tasks: Vec<JobId> = env
        .state
        .jobs
        .values()
        .filter(|j| j.array_job_id == id && j.state == JobState::Running)
        .map(|j| j.id)
        .collect();
    assert_eq!(tasks.len(), 2);
    for (k, task) in tasks.iter().enumerate() {
        let run = env.job(*task).restart_count;
        env.turn(|t| nodes::launched(t, *task, run));
        let end = env.job_end(*task, EndKind::Exited, 3 * k as i32);
        let d = env.turn(|t| nodes::job_finished(t, end));
        let sent = mails(&d.effects);
        if k == 0 {
            assert!(sent.is_empty(), "{sent:?}");
        } else {
            assert_eq!(
                sent.iter().map(|m| m.2.as_str()).collect::<Vec<_>>(),
                [format!(
                    "Slurm Array Summary Job_id={id}_* ({id}) Name=arr Failed, Mixed, ExitCode [0-3]"
                )]
            );
        }
    }
    // With ARRAY_TASKS: each task its own.
    let id = env.submit(array(vec![MailType::Begin, MailType::ArrayTasks]));
    let d = env.turn(timer::schedule);
    let sent = mails(&d.effects);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert!(
        sent.iter()
            .all(|m| m.2.starts_with(&format!("Slurm Array Task Job_id={id}_"))),
        "{sent:?}"
    );
}

#[test]
fn coordinators_act_on_their_accounts_jobs_and_operators_on_all() {
    use crate::command::{ControlJobs, ControlOp, Rejection, Requester};
    let mut env = Env::new(
        "[[accounts]]\nname = \"ml\"\nusers = [\"alice\", \"bob\"]\ncoordinators = [\"carol\"]\n\
         [[accounts]]\nname = \"physics\"\nusers = [\"dave\"]\ncoordinators = [\"erin\"]\n",
    );
    let id = env.submit(|s| s.account = "ml".into());
    let hold = |env: &mut Env, op, who: Requester| {
        let cmd = ControlJobs {
            incomplete: false,
            op,
            job_ids: vec![id.to_string()],
            requester: who,
        };
        let d = env.turn(|t| jobs::control(t, cmd));
        (d.answer[0].error.clone(), d.events.len())
    };
    // Bob shares the account, erin coordinates another: neither may.
    for other in [Requester::user(1001, "bob"), Requester::user(1004, "erin")] {
        assert_eq!(
            hold(&mut env, ControlOp::Hold, other),
            (Some(Rejection::PermissionDenied), 0)
        );
    }
    // Carol coordinates ml: she holds it, as its user would (a user hold).
    let (error, events) = hold(&mut env, ControlOp::Hold, Requester::user(1002, "carol"));
    assert_eq!((error, events > 0), (None, true));
    assert_eq!(env.job(id).reason, model::Reason::JobHeldUser);
    // An operator releases it.
    let mut ops = Requester::user(1005, "ops");
    ops.level = model::assoc::AdminLevel::Operator;
    assert_eq!(hold(&mut env, ControlOp::Release, ops).0, None);
    assert_ne!(env.job(id).reason, model::Reason::JobHeldUser);
}

#[test]
fn a_step_waits_until_its_jobs_node_has_taken_the_launch() {
    use crate::command::Rejection;
    let mut env = Env::new("");
    let id = env.submit(|_| {});
    let create = || srun(id, 0);
    // Running, but its node has not confirmed the launch: busy, nothing recorded.
    env.turn(timer::schedule);
    assert_eq!(env.job(id).state, model::JobState::Running);
    let d = env.turn(|t| jobs::create_step(t, create()));
    assert_eq!(
        d.answer.unwrap_err(),
        Rejection::WrongState(model::step::NODES_BUSY.into())
    );
    assert!(d.events.is_empty());
    let run = env.job(id).restart_count;
    env.turn(|t| nodes::launched(t, id, run));
    assert!(env.turn(|t| jobs::create_step(t, create())).answer.is_ok());
}

#[test]
fn only_operators_change_accounting_and_live_jobs_keep_what_they_use() {
    use crate::command::{ChangeAccounting, Rejection, Requester};
    use model::assoc_change::{Action, AssocChange, Entity, JOBS_ACTIVE};
    let mut env = Env::new("[[accounts]]\nname = \"ml\"\nusers = [\"alice\"]\n");
    let words = |w: &str| w.split_whitespace().map(String::from).collect::<Vec<_>>();
    let change = |action, entity, w: &str| AssocChange::parse(action, entity, &words(w)).unwrap();
    let ask = |env: &mut Env, who: Requester, change: AssocChange, dry_run: bool| {
        let cmd = ChangeAccounting {
            requester: who,
            change,
            dry_run,
        };
        let d = env.turn(|t| {
            let r = accounting::change(t, cmd);
            (r, t.assocs.clone())
        });
        d.answer
    };
    let add = change(Action::Add, Entity::Account, "vision parent=ml fairshare=3");
    // A user may not; an operator's dry run says what it would do and keeps nothing.
    let (refused, kept) = ask(
        &mut env,
        Requester::user(ALICE, "alice"),
        add.clone(),
        false,
    );
    assert_eq!(
        (refused.unwrap_err(), kept),
        (Rejection::PermissionDenied, None)
    );
    let mut ops = Requester::user(1005, "ops");
    ops.level = model::assoc::AdminLevel::Operator;
    let (would, kept) = ask(&mut env, ops.clone(), add.clone(), true);
    assert_eq!(would.unwrap().names, vec!["vision".to_string()]);
    assert!(kept.is_none());
    let (done, kept) = ask(&mut env, ops.clone(), add, false);
    assert_eq!(done.unwrap().names, vec!["vision".to_string()]);
    let kept = kept.unwrap();
    assert_eq!(kept.accounts["vision"].shares, 3);
    assert_eq!(kept.accounts["vision"].parent.as_deref(), Some("ml"));
    // alice's pending job in ml keeps the account from being deleted.
    env.submit(|s| s.account = "ml".into());
    let (refused, kept) = ask(
        &mut env,
        ops,
        change(Action::Delete, Entity::Account, "where name=ml"),
        false,
    );
    assert_eq!(
        (refused.unwrap_err(), kept),
        (Rejection::Invalid(JOBS_ACTIVE.into()), None)
    );
}

#[test]
fn a_coordinator_manages_users_and_sub_accounts_of_their_accounts_only() {
    use crate::command::{ChangeAccounting, Rejection, Requester};
    use model::assoc_change::{Action, AssocChange, Entity};
    let mut env = Env::new(
        "[[accounts]]\nname = \"ml\"\nusers = [\"alice\"]\ncoordinators = [\"bob\"]\n\
         [[accounts]]\nname = \"physics\"\nusers = [\"dave\"]\n",
    );
    let bob = Requester::user(1001, "bob");
    let ask = |env: &mut Env, action, entity, w: &str| {
        let words: Vec<String> = w.split_whitespace().map(String::from).collect();
        let cmd = ChangeAccounting {
            requester: bob.clone(),
            change: AssocChange::parse(action, entity, &words).unwrap(),
            dry_run: false,
        };
        let d = env.turn(|t| (accounting::change(t, cmd).map(|_| ()), t.assocs.clone()));
        let (answer, next) = d.answer;
        if let Some(next) = next {
            env.sched.assocs = next;
        }
        answer
    };
    let denied = Err(Rejection::PermissionDenied);
    assert_eq!(
        ask(&mut env, Action::Add, Entity::Account, "vision parent=ml"),
        Ok(())
    );
    assert_eq!(
        ask(&mut env, Action::Add, Entity::User, "carol account=vision"),
        Ok(())
    );
    assert_eq!(
        ask(
            &mut env,
            Action::Modify,
            Entity::User,
            "where name=carol account=vision set MaxJobs=2"
        ),
        Ok(())
    );
    assert_eq!(
        ask(
            &mut env,
            Action::Modify,
            Entity::Account,
            "where name=ml set GrpJobs=9"
        ),
        Ok(())
    );
    for (action, entity, words) in [
        (Action::Add, Entity::Account, "x parent=physics"),
        (Action::Add, Entity::Account, "x"),
        (Action::Add, Entity::User, "erin account=physics"),
        (
            Action::Modify,
            Entity::User,
            "where name=carol set MaxJobs=2",
        ),
        (
            Action::Modify,
            Entity::User,
            "where name=alice account=ml set adminlevel=Operator",
        ),
        (Action::Delete, Entity::Account, "where name=ml"),
        (Action::Add, Entity::Qos, "high"),
    ] {
        assert_eq!(ask(&mut env, action, entity, words), denied, "{words}");
    }
    assert_eq!(
        ask(
            &mut env,
            Action::Delete,
            Entity::Account,
            "where name=vision"
        ),
        Ok(())
    );
}

#[test]
fn finished_jobs_older_than_the_retention_are_purged_and_live_ones_kept() {
    let mut env = Env::new("");
    env.config.controller.purge_job_after = "1hours".into();
    let old = env.submit(|_| {});
    env.start(old);
    env.finished(old, EndKind::Exited, 0);
    let live = env.submit(|_| {});
    env.now += 3600 + 60;
    let recent = env.submit(|_| {});
    env.start(recent);
    env.finished(recent, EndKind::Exited, 0);
    let d = env.turn(|t| timer::tick(t, 0));
    assert!(
        d.events
            .iter()
            .any(|e| matches!(e, Event::JobsPurged { job_ids } if job_ids == &vec![old])),
        "{:?}",
        d.events
    );
    assert!(env.state.job(old).is_none());
    assert!(env.state.job(live).is_some() && env.state.job(recent).is_some());
    // The newest record stays, however old: a restart counts ids on from it.
    for id in [live, recent] {
        if env.job(id).state == JobState::Pending {
            env.start(id);
        }
        env.finished(id, EndKind::Exited, 0);
    }
    env.now += 7200;
    env.turn(|t| timer::tick(t, 0));
    let kept: Vec<JobId> = env.state.jobs.keys().copied().collect();
    assert_eq!(kept, vec![recent]);
}

#[test]
fn steps_older_than_their_retention_are_purged_and_the_job_kept() {
    let mut env = Env::new("");
    env.config.controller.purge_step_after = "1hours".into();
    let old = env.submit(|_| {});
    env.start(old);
    env.finished(old, EndKind::Exited, 0);
    assert!(!env.job(old).steps.is_empty(), "the batch step is recorded");
    env.now += 1800;
    let recent = env.submit(|_| {});
    env.start(recent);
    env.finished(recent, EndKind::Exited, 0);
    // Not an hour yet: nothing goes.
    let d = env.turn(|t| timer::tick(t, 0));
    assert!(
        !d.events
            .iter()
            .any(|e| matches!(e, Event::StepsPurged { .. }))
    );
    env.now += 1800 + 60;
    let d = env.turn(|t| timer::tick(t, 0));
    assert!(
        d.events
            .iter()
            .any(|e| matches!(e, Event::StepsPurged { job_ids } if job_ids == &vec![old])),
        "{:?}",
        d.events
    );
    assert!(env.job(old).steps.is_empty());
    assert_eq!(env.job(old).state, JobState::Completed);
    assert!(!env.job(recent).steps.is_empty());
    // With jobs kept as long as steps, one scan purges a job whole, not its steps too
    // (the newest, `recent`, stays and loses only its steps). With ArchiveJobs, both
    // records are handed to the shell to archive first, as they stood: `recent` with
    // its steps.
    env.config.controller.purge_job_after = "1hours".into();
    env.config.controller.archive_jobs = true;
    env.now += 3600;
    let d = env.turn(|t| timer::tick(t, 0));
    let archived: Vec<(JobId, usize)> = d.archive.iter().map(|j| (j.id, j.steps.len())).collect();
    assert_eq!(archived, [(old, 0), (recent, 1)]);
    let purged: Vec<&Event> = d
        .events
        .iter()
        .filter(|e| matches!(e, Event::JobsPurged { .. } | Event::StepsPurged { .. }))
        .collect();
    assert!(
        matches!(
            purged.as_slice(),
            [Event::JobsPurged { job_ids: jobs }, Event::StepsPurged { job_ids: steps }]
                if jobs == &vec![old] && steps == &vec![recent]
        ),
        "{purged:?}"
    );
}

#[test]
fn a_job_holding_idle_gpus_is_flagged_mailed_then_requeued_after_the_grace() {
    let mut env = Env::new(
        "[[qos]]\nname = \"normal\"\ngpu_idle_limit = \"10:00\"\n\
         gpu_idle_action = \"requeue\"\ngpu_idle_grace = \"5:00\"\n",
    );
    let id = env.submit(|s| s.mail_types = vec![model::mail::MailType::End]);
    let node = env.start(id);
    let idle = |ms| JobOnNode {
        gpu_use: Some(model::gpu_use::GpuUse {
            sampled_gpu_ms: ms,
            idle_ms: ms,
            ..Default::default()
        }),
        ..env.on_node(id)
    };
    let (nine, ten, fifteen) = (idle(540_000), idle(600_000), idle(900_000));
    // Under the limit: nothing.
    let d = env.heartbeat_turn(&node, &[nine]);
    assert!(d.effects.is_empty() && env.job(id).gpu_idle_flagged.is_none());
    // At the limit: flagged, and its user mailed what comes next.
    let d = env.heartbeat_turn(&node, &[ten]);
    assert!(d.events.contains(&Event::JobGpuIdleFlagged {
        job_id: id,
        time: 1_000
    }));
    assert_eq!(
        d.effects,
        [Effect::Mail {
            node: node.clone(),
            user: "alice".into(),
            subject: format!(
                "Slurm Job_id={id} Name= GPUs idle for 00:10:00, requeued if still idle in 00:05:00"
            ),
        }]
    );
    assert_eq!(d.answer.kill, Vec::<JobId>::new());
    // Flagged once: the next report under the grace does nothing more.
    let d = env.heartbeat_turn(&node, &[ten]);
    assert!(d.effects.is_empty() && d.answer.kill.is_empty());
    // Still idle after the grace: requeued, the kill ordered in the answer.
    let orders = env.heartbeat(&node, &[fifteen]);
    assert_eq!(orders.kill, vec![id]);
    assert_eq!(
        env.job(id).kill.map(|k| k.cause),
        Some(KillCause::Requeue { hold: false })
    );
    assert_eq!(env.job(id).gpu_idle_flagged, Some(1_000));
}

#[test]
fn a_warning_policy_only_flags_and_a_busy_job_is_left_alone() {
    let mut env = Env::new("[[qos]]\nname = \"normal\"\ngpu_idle_limit = \"1:00\"\n");
    let busy = env.submit(|_| {});
    let node_b = env.start(busy);
    let idle = env.submit(|_| {});
    let node_i = env.start(idle);
    let report = |env: &Env, id, idle_ms| JobOnNode {
        gpu_use: Some(model::gpu_use::GpuUse {
            sampled_gpu_ms: 3_600_000,
            busy_gpu_ms: 3_600_000 - idle_ms,
            idle_ms,
            ..Default::default()
        }),
        ..env.on_node(id)
    };
    let b = report(&env, busy, 0);
    let i = report(&env, idle, 3_600_000);
    env.heartbeat(&node_b, &[b]);
    let orders = env.heartbeat(&node_i, &[i]);
    assert!(orders.kill.is_empty());
    assert_eq!(env.job(busy).gpu_idle_flagged, None);
    assert_eq!(env.job(idle).gpu_idle_flagged, Some(1_000));
    assert_eq!(env.job(idle).kill, None);
}

#[test]
fn a_signal_reaches_the_steps_on_every_node_and_a_batch_signal_the_batch_node_only() {
    let mut env = Env::new("");
    let id = env.submit(|s| s.num_nodes = 2);
    env.start(id);
    let signal = |scope| SignalJobs {
        job_ids: vec![id.to_string()],
        filter: JobFilter::default(),
        signal: libc::SIGUSR1,
        scope,
        requester: who(ALICE),
    };
    let ordered = |effects: &[Effect]| -> Vec<String> {
        let mut nodes: Vec<String> = effects
            .iter()
            .filter_map(|e| match e {
                Effect::Order {
                    node,
                    order: Order::Signal { signal, .. },
                    ..
                } if *signal == libc::SIGUSR1 => Some(node.clone()),
                _ => None,
            })
            .collect();
        nodes.sort();
        nodes
    };
    let d = env.turn(|t| jobs::signal(t, signal(SignalScope::Steps)));
    assert_eq!(ordered(&d.effects), ["n1", "n2"]);
    let d = env.turn(|t| jobs::signal(t, signal(SignalScope::Batch)));
    assert_eq!(ordered(&d.effects), [env.node_of(id)]);
    // `--full`: the batch node, to every process of the batch shell's group.
    let d = env.turn(|t| jobs::signal(t, signal(SignalScope::Full)));
    let full: Vec<&String> = d
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::Order {
                node,
                order: Order::SignalAll { signal },
                ..
            } if *signal == libc::SIGUSR1 => Some(node),
            _ => None,
        })
        .collect();
    assert_eq!(full, [&env.node_of(id)]);
}

#[test]
fn a_signal_waits_for_the_job_to_start_and_its_node_to_confirm_it() {
    let mut env = Env::new("");
    let id = env.submit(|_| {});
    let signal = |signal| SignalJobs {
        job_ids: vec![id.to_string()],
        filter: JobFilter::default(),
        signal,
        scope: SignalScope::Steps,
        requester: who(ALICE),
    };
    let answer = |env: &mut Env, sig| {
        let d = env.turn(|t| jobs::signal(t, signal(sig)));
        d.answer.into_iter().next().and_then(|r| r.error)
    };
    // Pending: not yet (scancel asks again), and nothing is ordered.
    let d = env.turn(|t| jobs::signal(t, signal(libc::SIGUSR1)));
    assert_eq!(d.answer[0].error, Some(crate::command::Rejection::NotYet));
    assert!(d.effects.is_empty(), "{:?}", d.effects);
    // Started, its launch not confirmed: not yet either.
    env.turn(timer::schedule);
    assert!(!env.job(id).launched);
    assert_eq!(
        answer(&mut env, libc::SIGUSR1),
        Some(crate::command::Rejection::NotYet)
    );
    let run = env.job(id).restart_count;
    env.turn(|t| nodes::launched(t, id, run));
    assert_eq!(answer(&mut env, libc::SIGUSR1), None);
    // A cancel never waits.
    assert_eq!(answer(&mut env, 0), None);
}

#[test]
fn scancel_of_a_step_orders_its_nodes_to_signal_its_tasks_only() {
    let mut env = Env::new("");
    let id = env.submit(|_| {});
    env.start(id);
    let started = env
        .turn(|t| jobs::create_step(t, srun(id, 1)))
        .answer
        .unwrap();
    let step = started.step_id;
    let signal = |text: String| SignalJobs {
        job_ids: vec![text],
        filter: JobFilter::default(),
        signal: 0,
        scope: SignalScope::Steps,
        requester: who(ALICE),
    };
    let d = env.turn(|t| jobs::signal(t, signal(format!("{id}.{step}"))));
    assert!(d.answer.iter().all(|r| r.error.is_none()), "{:?}", d.answer);
    assert!(d.events.is_empty(), "the job goes on: {:?}", d.events);
    assert!(
        d.effects.iter().any(|e| matches!(
            e,
            Effect::Order {
                order: Order::SignalStep { step_id, signal: 0 },
                ..
            } if *step_id == step
        )),
        "{:?}",
        d.effects
    );
    // A step that is not there is an invalid id.
    let d = env.turn(|t| jobs::signal(t, signal(format!("{id}.{}", step + 5))));
    assert_eq!(
        d.answer[0]
            .error
            .as_ref()
            .map(ToString::to_string)
            .as_deref(),
        Some("Invalid job id specified")
    );
    assert!(d.effects.is_empty());
}

#[test]
fn a_requeued_job_waits_the_requeue_delay_and_other_requeues_do_not() {
    let mut env = Env::new("");
    let id = env.submit(|_| {});
    env.start(id);
    env.control(id, ControlOp::Requeue);
    env.finished(id, EndKind::Cancelled, 0);
    let job = env.job(id);
    assert_eq!(job.state, JobState::Pending);
    assert_eq!(job.spec.begin_time, env.now + 121);
    let _ = env.turn(timer::schedule);
    assert_eq!(env.job(id).state, JobState::Pending);
    assert_eq!(env.job(id).reason, Reason::BeginTime);
    env.now += 121;
    let _ = env.turn(timer::schedule);
    assert_eq!(env.job(id).state, JobState::Running);

    let mut env = Env::new("");
    env.config.controller.requeue_delay_s = 0;
    let id = env.submit(|_| {});
    env.start(id);
    env.control(id, ControlOp::Requeue);
    env.finished(id, EndKind::Cancelled, 0);
    let _ = env.turn(timer::schedule);
    assert_eq!(env.job(id).state, JobState::Running);
}

#[test]
fn requeuehold_special_exit_holds_the_job_until_it_is_released() {
    let mut env = Env::new("");
    let id = env.submit(|_| {});
    env.start(id);
    env.finished(id, EndKind::Exited, 0);
    env.control(id, ControlOp::RequeueSpecialExit);
    let job = env.job(id);
    assert_eq!((job.state, job.held), (JobState::SpecialExit, true));
    assert_eq!(job.reason, Reason::JobHeldUser);
    env.now += 1_000;
    let _ = env.turn(timer::schedule);
    assert_eq!(env.job(id).state, JobState::SpecialExit);
    env.control(id, ControlOp::Release);
    let _ = env.turn(timer::schedule);
    assert_eq!(env.job(id).state, JobState::Running);

    // A running job goes to SPECIAL_EXIT when its node reports its end; a job in
    // SPECIAL_EXIT can be cancelled.
    env.control(id, ControlOp::RequeueSpecialExit);
    assert_eq!(env.job(id).state, JobState::Running);
    env.finished(id, EndKind::Cancelled, 0);
    assert_eq!(env.job(id).state, JobState::SpecialExit);
    env.scancel(id, 0);
    assert_eq!(env.job(id).state, JobState::Cancelled);
}

#[test]
fn a_cancelled_pending_array_task_leaves_the_array_without_a_record() {
    let mut env = Env::new("");
    let array = env.submit(|s| {
        s.hold = true;
        s.array = Some(model::ArraySpec {
            task_ids: vec![1, 2, 3],
            max_running: 0,
        })
    });
    let records = env.state.jobs.len();
    let cancel = |env: &mut Env, ids: &str| {
        let cmd = SignalJobs {
            job_ids: vec![ids.to_string()],
            filter: JobFilter::default(),
            signal: 0,
            scope: SignalScope::Steps,
            requester: who(ALICE),
        };
        let d = env.turn(|t| jobs::signal(t, cmd));
        assert!(d.answer.iter().all(|r| r.error.is_none()), "{:?}", d.answer);
    };
    cancel(&mut env, &format!("{array}_3"));
    assert_eq!(env.state.jobs.len(), records);
    let meta = env.job(array);
    assert_eq!(
        meta.pending_tasks.iter().copied().collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(meta.state, JobState::Pending);
    // Cancelling the rest: the last task is the array's record, cancelled.
    cancel(&mut env, &format!("{array}_[1-2]"));
    assert_eq!(env.state.jobs.len(), records);
    assert_eq!(env.job(array).state, JobState::Cancelled);
}

fn fired(effects: &[Effect]) -> Vec<(u32, String)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::RunTrigger {
                trigger, argument, ..
            } => Some((trigger.id, argument.clone())),
            _ => None,
        })
        .collect()
}

fn trigger_spec(
    resource: model::trigger::TriggerResource,
    event: model::trigger::TriggerEvent,
) -> model::trigger::TriggerSpec {
    model::trigger::TriggerSpec {
        resource,
        event,
        offset: 0,
        program: "/bin/true".into(),
        perm: false,
    }
}

impl Env {
    fn set_trigger(
        &mut self,
        spec: model::trigger::TriggerSpec,
        uid: u32,
    ) -> Result<u32, crate::command::Rejection> {
        let cmd = crate::command::SetTrigger {
            spec,
            requester: who(uid),
            gid: uid,
        };
        self.turn(|t| super::triggers::set(t, cmd)).answer
    }
}

#[test]
fn node_triggers_are_roots_and_fire_once_as_a_node_goes_down_drains_and_comes_up() {
    use crate::command::{NodeAction, Rejection, UpdateNodes};
    use model::trigger::{TriggerEvent as E, TriggerResource as R};
    let mut env = Env::new("");
    let n2 = || R::Nodes(Some("n2".into()));
    assert_eq!(
        env.set_trigger(trigger_spec(n2(), E::Down), ALICE),
        Err(Rejection::PermissionDenied)
    );
    assert!(matches!(
        env.set_trigger(trigger_spec(n2(), E::Idle), 0),
        Err(Rejection::Invalid(_))
    ));
    let down = env.set_trigger(trigger_spec(n2(), E::Down), 0).unwrap();
    let any_down = env
        .set_trigger(trigger_spec(R::Nodes(None), E::Down), 0)
        .unwrap();
    let mut perm = trigger_spec(R::Nodes(None), E::Drained);
    perm.perm = true;
    let drained = env.set_trigger(perm, 0).unwrap();
    let up = env.set_trigger(trigger_spec(n2(), E::Up), 0).unwrap();
    assert_eq!((down, any_down, drained, up), (1, 2, 3, 4));
    let update = |nodes: &str, action, reason: &str| UpdateNodes {
        nodes: nodes.into(),
        action: Some(action),
        reason: reason.into(),
        features: None,
        requester: who(0),
    };
    // n1 going down fires only the trigger on every node, which goes.
    let d = env.turn(|t| nodes::update_nodes(t, update("n1", NodeAction::Down, "fan")));
    assert_eq!(fired(&d.effects), [(any_down, "n1".to_string())]);
    assert!(d.events.contains(&Event::TriggersRemoved {
        ids: vec![any_down]
    }));
    // A trigger's program runs on a node that answers: n1 comes back.
    env.turn(|t| nodes::update_nodes(t, update("n1", NodeAction::Resume, "")))
        .answer
        .unwrap();
    // n2 stops heartbeating: its down trigger fires; a node already down fires nothing.
    env.now += 31;
    env.heartbeat("n1", &[]);
    let d = env.turn(|t| timer::tick(t, t.now));
    assert_eq!(fired(&d.effects), [(down, "n2".to_string())]);
    let d = env.turn(|t| timer::tick(t, t.now));
    assert!(fired(&d.effects).is_empty());
    // It answers again: up (with ReturnToService=1). Drains fire the permanent trigger each time.
    env.config.controller.return_to_service = 1;
    let d = env.turn(|t| {
        nodes::register(
            t,
            crate::command::Registration {
                node: "n2".into(),
                addr: "n2:1".into(),
                cpus: 4,
                memory_mb: 4096,
                gpus: vec![],
                numa_cpus: vec![],
                features: vec![],
                boot_time: 1,
                jobs: vec![],
                load: None,
            },
        )
    });
    assert_eq!(fired(&d.effects), [(up, "n2".to_string())]);
    assert_eq!(env.state.nodes["n2"].health, model::NodeHealth::Up);
    assert!(!env.state.triggers.contains_key(&up));
    for node in ["n2", "n1"] {
        let d = env.turn(|t| nodes::update_nodes(t, update(node, NodeAction::Drain, "disk")));
        assert_eq!(fired(&d.effects), [(drained, node.to_string())]);
    }
    assert_eq!(
        env.state.triggers.keys().copied().collect::<Vec<_>>(),
        [drained]
    );
    // Kept across a restart, and the ids of those gone are not given again.
    env.restart();
    assert_eq!(
        env.state.triggers.keys().copied().collect::<Vec<_>>(),
        [drained]
    );
    assert_eq!(env.set_trigger(trigger_spec(n2(), E::Up), 0), Ok(5));
}

#[test]
fn job_triggers_fire_at_the_jobs_end_or_before_its_limit_and_are_cleared_by_their_owner() {
    use crate::command::{ClearTriggers, Rejection};
    use model::trigger::{TriggerEvent as E, TriggerFilter, TriggerResource as R};
    let mut env = Env::new("");
    let id = env.submit(|s| s.time_limit_min = Some(10));
    assert_eq!(
        env.set_trigger(trigger_spec(R::Job(id), E::Fini), 2000),
        Err(Rejection::PermissionDenied)
    );
    assert_eq!(
        env.set_trigger(trigger_spec(R::Job(99), E::Fini), ALICE),
        Err(Rejection::NotFound("Invalid job id specified".into()))
    );
    let fini = env
        .set_trigger(trigger_spec(R::Job(id), E::Fini), ALICE)
        .unwrap();
    let mut early = trigger_spec(R::Job(id), E::Time);
    early.offset = -60;
    let time = env.set_trigger(early, ALICE).unwrap();
    let spare = env
        .set_trigger(trigger_spec(R::Job(id), E::Time), 0)
        .unwrap();
    // Alice may not clear root's trigger; root may.
    let clear = |filter: TriggerFilter, uid: u32| ClearTriggers {
        filter,
        requester: who(uid),
    };
    let by_id = TriggerFilter {
        id: Some(spare),
        ..Default::default()
    };
    let d = env.turn(|t| super::triggers::clear(t, clear(by_id.clone(), ALICE)));
    assert_eq!(d.answer, Err(Rejection::NotFound("No such process".into())));
    let d = env.turn(|t| super::triggers::clear(t, clear(by_id, 0)));
    assert_eq!(d.answer, Ok(()));
    // The time trigger fires 60 s before the limit, at the first tick that reaches it.
    env.start(id);
    let start = env.job(id).start_time;
    let alive = |env: &mut Env| {
        let ran = env.on_node(id);
        let node = env.node_of(id);
        for n in ["n1", "n2"] {
            env.heartbeat(
                n,
                if n == node {
                    std::slice::from_ref(&ran)
                } else {
                    &[]
                },
            );
        }
    };
    env.now = start + 539;
    alive(&mut env);
    let d = env.turn(|t| timer::tick(t, t.now - 1));
    assert!(
        fired(&d.effects).is_empty(),
        "{:?} {:?}",
        d.effects,
        env.job(id)
    );
    env.now = start + 545;
    alive(&mut env);
    let d = env.turn(|t| timer::tick(t, t.now - 6));
    assert_eq!(fired(&d.effects), [(time, id.to_string())]);
    let end = env.job_end(id, EndKind::Exited, 0);
    let d = env.turn(|t| nodes::job_finished(t, end));
    assert_eq!(fired(&d.effects), [(fini, id.to_string())]);
    assert!(env.state.triggers.is_empty(), "{:?}", env.state.triggers);
}

#[test]
fn operators_create_update_and_delete_partitions_and_a_restart_keeps_them() {
    use crate::command::Rejection;
    use crate::command::{ChangePartition, PartitionOp};
    let mut env = Env::new("");
    let change = |env: &mut Env, op: PartitionOp, words: &str, uid: u32| {
        let words: Vec<String> = words.split_whitespace().map(String::from).collect();
        let cmd = ChangePartition {
            op,
            change: model::partition_change::parse(&words).unwrap(),
            requester: who(uid),
        };
        env.turn(|t| jobs::change_partition(t, cmd)).answer
    };
    assert_eq!(
        change(
            &mut env,
            PartitionOp::Create,
            "PartitionName=extra Nodes=n1",
            ALICE
        ),
        Err(Rejection::PermissionDenied)
    );
    assert_eq!(
        change(
            &mut env,
            PartitionOp::Create,
            "partition=extra nodes=n1 MaxTime=30",
            0
        ),
        Ok("extra".into())
    );
    assert_eq!(env.state.partition("extra").unwrap().nodes, ["n1"]);
    assert_eq!(env.state.partition("extra").unwrap().max_time_min, Some(30));
    assert!(
        change(
            &mut env,
            PartitionOp::Create,
            "PartitionName=extra Nodes=n1",
            0
        )
        .is_err()
    );
    assert_eq!(
        change(
            &mut env,
            PartitionOp::Update,
            "PartitionName=extra Nodes=nosuch",
            0
        ),
        Err(Rejection::Invalid("Invalid node name specified".into()))
    );
    assert_eq!(
        change(
            &mut env,
            PartitionOp::Update,
            "PartitionName=ghost Nodes=n1",
            0
        ),
        Err(Rejection::NotFound(
            "Invalid partition name specified".into()
        ))
    );
    change(
        &mut env,
        PartitionOp::Update,
        "PartitionName=extra Nodes=n[1-2]",
        0,
    )
    .unwrap();
    env.restart();
    assert_eq!(env.state.partition("extra").unwrap().nodes, ["n1", "n2"]);

    // A job in it holds it; once the job ends it may go.
    let id = env.submit(|s| s.partition = "extra".into());
    assert_eq!(
        change(&mut env, PartitionOp::Delete, "PartitionName=extra", 0),
        Err(Rejection::WrongState("Partition is in use".into()))
    );
    env.scancel(id, 0);
    change(&mut env, PartitionOp::Delete, "PartitionName=extra", 0).unwrap();
    assert!(env.state.partition("extra").is_none());
    assert!(env.state.partition("p").is_some());
}

/// A running job holds its partition; once cancelled, while it is still completing on
/// its node, it no longer does (Slurm counts a completing job as ended).
#[test]
fn a_partition_whose_jobs_are_completing_may_be_deleted() {
    use crate::command::{ChangePartition, PartitionOp, Rejection};
    let mut env = Env::new("[[partitions]]\nname = \"q\"\nnodes = \"n1\"\n");
    let id = env.submit(|s| s.partition = "q".into());
    env.start(id);
    let delete = |env: &mut Env| {
        let cmd = ChangePartition {
            op: PartitionOp::Delete,
            change: model::partition_change::parse(&["PartitionName=q".to_string()]).unwrap(),
            requester: who(0),
        };
        env.turn(|t| jobs::change_partition(t, cmd)).answer
    };
    assert_eq!(
        delete(&mut env),
        Err(Rejection::WrongState("Partition is in use".into()))
    );
    env.scancel(id, 0);
    // Cancelled, its node not yet done with it.
    assert!(env.job(id).kill.is_some() && !env.job(id).state.is_final());
    assert!(delete(&mut env).is_ok());
}

/// `scontrol reconfigure` puts the config's partitions back as the file defines them
/// (an updated one, a deleted one), and keeps the ones made at run time.
#[test]
fn reconfigure_puts_the_configs_partitions_back_and_keeps_run_time_ones() {
    use crate::command::{ChangePartition, PartitionOp};
    let mut env = Env::new("[[partitions]]\nname = \"q\"\nnodes = \"n1\"\n");
    let change = |env: &mut Env, op: PartitionOp, words: &str| {
        let words: Vec<String> = words.split_whitespace().map(String::from).collect();
        let cmd = ChangePartition {
            op,
            change: model::partition_change::parse(&words).unwrap(),
            requester: who(0),
        };
        env.turn(|t| jobs::change_partition(t, cmd)).answer.unwrap();
    };
    change(
        &mut env,
        PartitionOp::Update,
        "PartitionName=p DefaultTime=5 Default=NO",
    );
    change(&mut env, PartitionOp::Update, "PartitionName=q Default=YES");
    change(
        &mut env,
        PartitionOp::Create,
        "PartitionName=extra Nodes=n2",
    );
    assert_eq!(env.state.partition("p").unwrap().default_time_min, Some(5));
    let configured = env.config.partition_list();
    let restored = env.turn(|t| jobs::restore_partitions(t, &configured));
    let names: Vec<&str> = restored
        .events
        .iter()
        .filter_map(|e| match e {
            model::Event::PartitionRestored { partition } => Some(partition.name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(names, ["p", "q"]);
    assert_eq!(env.state.partition("p").unwrap().default_time_min, Some(10));
    assert_eq!(env.state.default_partition().unwrap().name, "p");
    assert!(
        env.state.partition("extra").is_some(),
        "made at run time: kept"
    );
    // Deleted, then back.
    change(&mut env, PartitionOp::Delete, "PartitionName=q");
    let restored = env.turn(|t| jobs::restore_partitions(t, &configured));
    assert_eq!(restored.events.len(), 1, "{:?}", restored.events);
    assert_eq!(env.state.partition("q").unwrap().nodes, ["n1"]);
    // Nothing changed since: nothing to put back.
    let again = env.turn(|t| jobs::restore_partitions(t, &configured));
    assert!(again.events.is_empty(), "{:?}", again.events);
}

/// Submits a heterogeneous job of components of `cpus` CPUs each; the leader's id.
fn submit_het(env: &mut Env, cpus: &[u32]) -> Result<JobId, crate::command::Rejection> {
    let components = cpus
        .iter()
        .map(|&c| Submit {
            user_groups: Vec::new(),
            spec: JobSpec {
                user: "alice".into(),
                uid: ALICE,
                work_dir: "/tmp".into(),
                num_tasks: 1,
                cpus_per_task: c,
                ..JobSpec::default()
            },
            payload: JobPayload {
                script: "#!/bin/sh\ntrue\n".into(),
                env: vec![],
            },
        })
        .collect();
    env.turn(|t| jobs::submit_het(t, components))
        .answer
        .map(|s| s.job_id)
}

#[test]
fn a_heterogeneous_job_starts_together_and_ends_with_its_leader() {
    let mut env = Env::new("");
    let leader = submit_het(&mut env, &[4, 2, 1]).unwrap();
    let het = |env: &Env, id| env.job(id).het.map(|h| (h.leader, h.offset, h.count));
    assert_eq!(het(&env, leader), Some((leader, 0, 3)));
    assert_eq!(het(&env, leader + 2), Some((leader, 2, 3)));
    // All three start in one pass: 4 CPUs on one node, 2 and 1 on the other.
    let d = env.turn(timer::schedule);
    let launched = d
        .effects
        .iter()
        .filter(|e| matches!(e, Effect::Launch { .. }))
        .count();
    assert_eq!(launched, 3);
    for id in leader..leader + 3 {
        let run = env.job(id).restart_count;
        env.turn(|t| nodes::launched(t, id, run));
    }
    // The leader's script ends: the others end in its state, and their nodes are told
    // to kill what holds them.
    let end = env.job_end(leader, EndKind::Exited, 0);
    let d = env.turn(|t| nodes::job_finished(t, end));
    for id in leader + 1..leader + 3 {
        assert_eq!(env.job(id).state, JobState::Completed, "job {id}");
        assert!(
            d.effects.iter().any(|e| matches!(
                e,
                Effect::Order { job_id, order: Order::Kill, .. } if *job_id == id
            )),
            "{:?}",
            d.effects
        );
    }
}

#[test]
fn a_requeued_leader_brings_its_components_back_to_wait_with_it() {
    let mut env = Env::new("");
    let leader = submit_het(&mut env, &[1, 1]).unwrap();
    env.turn(timer::schedule);
    for id in [leader, leader + 1] {
        let run = env.job(id).restart_count;
        env.turn(|t| nodes::launched(t, id, run));
    }
    env.control(leader, ControlOp::Requeue);
    env.finished(leader, EndKind::Cancelled, 0);
    assert_eq!(env.job(leader).state, JobState::Pending);
    // The other component is killed to be requeued; its end brings it back too.
    assert!(matches!(
        env.job(leader + 1).kill.map(|k| k.cause),
        Some(KillCause::Requeue { hold: false })
    ));
    env.finished(leader + 1, EndKind::Cancelled, 0);
    assert_eq!(env.job(leader + 1).state, JobState::Pending);
}

#[test]
fn cancelling_a_component_of_a_waiting_heterogeneous_job_cancels_all_of_it() {
    let mut env = Env::new("");
    // Before any pass, the job waits.
    let leader = submit_het(&mut env, &[1, 1]).unwrap();
    let cmd = SignalJobs {
        job_ids: vec![(leader + 1).to_string()],
        filter: JobFilter::default(),
        signal: 0,
        scope: SignalScope::Steps,
        requester: who(ALICE),
    };
    let d = env.turn(|t| jobs::signal(t, cmd));
    assert_eq!(d.answer[0].error, None);
    for id in [leader, leader + 1] {
        assert_eq!(env.job(id).state, JobState::Cancelled, "job {id}");
    }
    // An array cannot be a component.
    let mut env = Env::new("");
    let array = Submit {
        user_groups: Vec::new(),
        spec: JobSpec {
            user: "alice".into(),
            uid: ALICE,
            work_dir: "/tmp".into(),
            array: Some(model::ArraySpec {
                task_ids: vec![0, 1],
                max_running: 0,
            }),
            ..JobSpec::default()
        },
        payload: JobPayload {
            script: "#!/bin/sh\ntrue\n".into(),
            env: vec![],
        },
    };
    let refused = env.turn(|t| jobs::submit_het(t, vec![array.clone(), array]));
    assert!(refused.answer.is_err());
    assert!(refused.events.is_empty());
}

/// The priority job `id` has now.
fn priority_of(env: &Env, id: JobId) -> u32 {
    sched::priority::Context::new(&env.state, env.now, &env.sched)
        .rank(env.job(id))
        .1
}

/// `scontrol update JobId=id Priority=n` by `uid`: its refusal, if any.
fn set_priority(env: &mut Env, id: JobId, uid: u32, n: u32) -> Option<crate::command::Rejection> {
    let cmd = crate::command::UpdateJobs {
        job_ids: vec![id.to_string()],
        changes: vec![model::job_update::JobChange::Priority(n)],
        requester: who(uid),
    };
    env.turn(|t| jobs::update(t, cmd)).answer[0].error.clone()
}

/// `scontrol top ids` by `uid`: the first refusal, if any.
fn top(env: &mut Env, ids: &[JobId], uid: u32) -> Option<crate::command::Rejection> {
    let cmd = ControlJobs {
        incomplete: false,
        op: ControlOp::Top,
        job_ids: ids.iter().map(JobId::to_string).collect(),
        requester: who(uid),
    };
    env.turn(|t| jobs::control(t, cmd))
        .answer
        .into_iter()
        .find_map(|r| r.error)
}

#[test]
fn a_fixed_priority_holds_until_a_hold_and_release_and_only_an_operator_raises_it() {
    use crate::command::Rejection;
    let mut env = Env::new("[priority]\nweight_partition = 1000\n");
    let id = env.submit(|s| s.nice = 10);
    assert_eq!(priority_of(&env, id), 990);
    assert_eq!(set_priority(&mut env, id, 0, 5000), None);
    // Fixed, and its nice cleared, as Slurm's.
    assert_eq!(env.job(id).spec.nice, 0);
    assert_eq!(priority_of(&env, id), 5000);
    assert_eq!(
        set_priority(&mut env, id, ALICE, 6000),
        Some(Rejection::PermissionDenied)
    );
    assert_eq!(set_priority(&mut env, id, ALICE, 40), None);
    assert_eq!(priority_of(&env, id), 40);
    assert_eq!(set_priority(&mut env, id, 0, 0), None);
    assert_eq!(
        (env.job(id).held, env.job(id).reason),
        (true, Reason::JobHeldAdmin)
    );
    env.control(id, ControlOp::Release);
    assert_eq!(env.job(id).spec.priority, None);
    assert_eq!(priority_of(&env, id), 1000);
    // A SiteFactor adds to the computed priority.
    let cmd = crate::command::UpdateJobs {
        job_ids: vec![id.to_string()],
        changes: vec![model::job_update::JobChange::SiteFactor(-300)],
        requester: who(0),
    };
    assert!(env.turn(|t| jobs::update(t, cmd)).answer[0].error.is_none());
    assert_eq!(priority_of(&env, id), 700);
}

#[test]
fn top_puts_the_named_jobs_first_among_their_users_pending_ones() {
    use crate::command::Rejection;
    let mut env = Env::new("[priority]\nweight_partition = 1000\n");
    let [a, b, c] = [(); 3].map(|()| env.submit(|s| s.begin_time = 5_000));
    assert_eq!(top(&mut env, &[c, b], 0), None);
    let p = |env: &Env, id| priority_of(env, id);
    assert_eq!((p(&env, c), p(&env, b), p(&env, a)), (1000, 999, 998));
    assert_eq!(top(&mut env, &[a], 0), None);
    assert_eq!((p(&env, a), p(&env, c), p(&env, b)), (1000, 999, 998));
    // Through nice values, as Slurm's.
    assert_eq!(env.job(b).spec.nice, 2);
    // An operator's command only.
    assert_eq!(
        top(&mut env, &[b], ALICE),
        Some(Rejection::PermissionDenied)
    );
}

#[test]
fn allow_groups_and_deny_qos_refuse_a_submit_in_slurms_words() {
    let mut env = Env::new(
        r#"
[[partitions]]
name = "ml"
nodes = "ALL"
allow_groups = ["ml"]
[[partitions]]
name = "open"
nodes = "ALL"
deny_qos = ["normal"]
"#,
    );
    let mut submit = |partition: &str, uid: u32, groups: &[&str]| {
        let spec = JobSpec {
            user: "alice".into(),
            uid,
            work_dir: "/tmp".into(),
            num_tasks: 1,
            cpus_per_task: 1,
            partition: partition.into(),
            ..JobSpec::default()
        };
        let submit = Submit {
            spec,
            payload: JobPayload {
                script: "#!/bin/sh\ntrue\n".into(),
                env: vec![],
            },
            user_groups: groups.iter().map(|g| g.to_string()).collect(),
        };
        env.turn(|t| jobs::submit(t, submit))
            .answer
            .err()
            .map(|e| e.to_string())
    };
    assert_eq!(
        submit("ml", ALICE, &["users"]).as_deref(),
        Some(crate::validate::GROUP_NOT_PERMITTED)
    );
    assert_eq!(submit("ml", ALICE, &["users", "ml"]), None);
    assert_eq!(submit("ml", 0, &[]), None, "root always may");
    assert_eq!(
        submit("open", ALICE, &[]).as_deref(),
        Some(crate::validate::INVALID_QOS)
    );
}

#[test]
fn notify_keeps_the_message_for_srun_and_sends_it_to_a_running_jobs_node() {
    use crate::command::{NotifyJob, Rejection};
    let mut env = Env::new("");
    let id = env.submit(|_| {});
    let notify = |env: &mut Env, uid: u32, message: &str| {
        let cmd = NotifyJob {
            job_id: id,
            message: message.into(),
            requester: who(uid),
        };
        env.turn(|t| jobs::notify(t, cmd))
    };
    // Pending: kept for its salloc, no node to tell yet.
    let d = notify(&mut env, ALICE, "soon");
    assert!(d.answer.is_ok() && d.effects.is_empty());
    let node = env.start(id);
    let d = notify(&mut env, ALICE, "now");
    assert!(d.answer.is_ok());
    assert_eq!(
        d.effects,
        [Effect::Notify {
            job_id: id,
            node,
            message: "now".into()
        }]
    );
    assert_eq!(env.job(id).notices.after(0), ["soon", "now"]);
    assert_eq!(
        notify(&mut env, 2000, "not yours").answer,
        Err(Rejection::PermissionDenied)
    );
    assert!(notify(&mut env, 0, &"x".repeat(5000)).answer.is_err());
}

#[test]
fn an_operator_sets_a_nodes_features_and_constrained_jobs_follow() {
    use crate::command::{Rejection, UpdateNodes};
    let mut env = Env::new("");
    let update = |features: &[&str], uid: u32| UpdateNodes {
        nodes: "n2".into(),
        action: None,
        reason: String::new(),
        features: Some(features.iter().map(|f| f.to_string()).collect()),
        requester: who(uid),
    };
    let d = env.turn(|t| nodes::update_nodes(t, update(&["fast"], ALICE)));
    assert_eq!(d.answer, Err(Rejection::PermissionDenied));
    let d = env.turn(|t| nodes::update_nodes(t, update(&["a|b"], 0)));
    assert!(d.answer.is_err() && d.events.is_empty());
    let d = env.turn(|t| nodes::update_nodes(t, update(&["fast"], 0)));
    assert!(d.answer.is_ok());
    assert_eq!(env.state.nodes["n2"].features, ["fast"]);
    let id = env.submit(|s| s.constraint = "fast".into());
    assert_eq!(env.start(id), "n2");
    // `scontrol reconfigure` puts the config's features back.
    env.turn(nodes::restore_features);
    assert!(env.state.nodes["n2"].features.is_empty());
}

#[test]
fn components_take_their_leaders_time_limit_and_its_id_updates_them_all() {
    use crate::command::UpdateJobs;
    use model::job_update::{JobChange, TimeLimitChange};
    let mut env = Env::new("");
    let component = |minutes: Option<u32>| Submit {
        user_groups: Vec::new(),
        spec: JobSpec {
            user: "alice".into(),
            uid: ALICE,
            work_dir: "/tmp".into(),
            num_tasks: 1,
            cpus_per_task: 1,
            time_limit_min: minutes,
            ..JobSpec::default()
        },
        payload: JobPayload {
            script: "#!/bin/sh\ntrue\n".into(),
            env: vec![],
        },
    };
    let submits = vec![component(Some(9)), component(None), component(Some(3))];
    let leader = env
        .turn(|t| jobs::submit_het(t, submits))
        .answer
        .unwrap()
        .job_id;
    let limits = |env: &Env| {
        (0..3)
            .map(|k| env.job(leader + k).time_limit_min)
            .collect::<Vec<_>>()
    };
    assert_eq!(limits(&env), [Some(9), Some(9), Some(3)]);
    let update = |id: String, minutes: u32| UpdateJobs {
        job_ids: vec![id],
        changes: vec![JobChange::TimeLimit(TimeLimitChange::Set(Some(minutes)))],
        requester: who(0),
    };
    env.turn(|t| jobs::update(t, update(leader.to_string(), 8)));
    assert_eq!(limits(&env), [Some(8), Some(8), Some(8)]);
    env.turn(|t| jobs::update(t, update(format!("{leader}+1"), 6)));
    assert_eq!(limits(&env), [Some(8), Some(6), Some(8)]);
}
