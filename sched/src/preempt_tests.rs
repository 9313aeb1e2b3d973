//! Data-driven tests of preemption: a cluster, QOS and running jobs in, the pass's
//! `preempts`/`starts`/`resumes` rendered out; and a property that the victims named
//! really free the room (the next pass starts the preemptor), and that when no victim
//! is named, stopping every job it may preempt would not make room either.

use super::*;
use model::{Config, Event, JobSpec, JobState, NodeAllocation, PreemptMode};

const BASE: &str = r#"
[[nodes]]
names = "n[1-2]"
cpus = 4
memory = "4000M"
gpus = 2

[[partitions]]
name = "p"
nodes = "n[1-2]"
default = true

[[qos]]
name = "low"

[[qos]]
name = "mid"
priority = 10

[[qos]]
name = "high"
priority = 100
preempt = ["low", "mid"]
"#;

fn setup(extra: &str) -> (ClusterState, SchedConfig) {
    let config = Config::parse(&format!("{BASE}\n{extra}"), "t.toml").unwrap();
    let mut nodes = config.node_list();
    for n in &mut nodes {
        n.health = model::NodeHealth::Up;
    }
    let state = ClusterState::new(nodes, config.partition_list());
    (state, SchedConfig::from_config(&config))
}

const QOS_CANCEL: &str = "[scheduler]\npreempt_type = \"qos\"\n";

fn submit(state: &mut ClusterState, id: u32, qos: &str, f: impl FnOnce(&mut JobSpec)) {
    let mut spec = JobSpec {
        partition: "p".into(),
        qos: qos.into(),
        num_tasks: 1,
        cpus_per_task: 1,
        ..JobSpec::default()
    };
    f(&mut spec);
    state.apply(&Event::JobSubmitted {
        job: Box::new(Job::new(id, spec, i64::from(id), Some(60))),
    });
}

/// Runs job `id` on `(node, cpus, mem, gpus)`s, started at time `id`.
fn run_on(state: &mut ClusterState, id: u32, nodes: &[(&str, u32, u64, &[u32])]) {
    state.apply(&Event::JobStarted {
        job_id: id,
        alloc: Allocation {
            nodes: nodes
                .iter()
                .map(|(n, c, m, g)| NodeAllocation {
                    node: n.to_string(),
                    cpus: *c,
                    mem_mb: *m,
                    gpus: g.to_vec(),
                    cpu_ids: Vec::new(),
                })
                .collect(),
        },
        time: i64::from(id),
        stdout_path: String::new(),
        stderr_path: String::new(),
    });
}

fn render(plan: &Plan) -> String {
    let mut out = String::new();
    for p in &plan.preempts {
        out.push_str(&format!(
            "preempt {} {} for {}",
            p.job_id,
            p.mode.name(),
            p.preemptor
        ));
        if p.grace_secs > 0 {
            out.push_str(&format!(" grace {}", p.grace_secs));
        }
        out.push('\n');
    }
    for s in &plan.starts {
        out.push_str(&format!("start {} {}\n", s.job_id, s.alloc.hostlist()));
    }
    for r in &plan.resumes {
        out.push_str(&format!("resume {r}\n"));
    }
    out
}

/// The worked example of `preempt`: n1 runs 1 (low) and 2 (mid), n2 runs 3 (mid, all
/// four CPUs).
fn example(extra: &str) -> ClusterState {
    let (mut s, _) = setup(extra);
    submit(&mut s, 1, "low", |j| j.cpus_per_task = 2);
    submit(&mut s, 2, "mid", |j| j.cpus_per_task = 2);
    submit(&mut s, 3, "mid", |j| j.cpus_per_task = 4);
    run_on(&mut s, 1, &[("n1", 2, 0, &[])]);
    run_on(&mut s, 2, &[("n1", 2, 0, &[])]);
    run_on(&mut s, 3, &[("n2", 4, 0, &[])]);
    s
}

#[test]
fn fewest_and_lowest_victims() {
    let (_, config) = setup(QOS_CANCEL);
    let mut s = example(QOS_CANCEL);
    submit(&mut s, 4, "high", |j| j.cpus_per_task = 2);
    let plan = schedule(&s, 100, &config);
    assert_eq!(render(&plan), "preempt 1 CANCEL for 4\n");
    assert_eq!(plan.pending[&4].reason, Reason::Resources);

    let mut s = example(QOS_CANCEL);
    submit(&mut s, 4, "high", |j| j.cpus_per_task = 4);
    assert_eq!(
        render(&schedule(&s, 100, &config)),
        "preempt 3 CANCEL for 4\n"
    );

    // Two nodes' worth: both nodes, every job on them.
    let mut s = example(QOS_CANCEL);
    submit(&mut s, 4, "high", |j| {
        j.num_nodes = 2;
        j.num_tasks = 2;
        j.cpus_per_task = 4;
    });
    assert_eq!(
        render(&schedule(&s, 100, &config)),
        "preempt 1 CANCEL for 4\npreempt 3 CANCEL for 4\npreempt 2 CANCEL for 4\n"
    );
}

#[test]
fn victims_are_only_on_nodes_the_preemptor_may_use() {
    let (_, config) = setup(QOS_CANCEL);
    // Job 3 alone fills n2, the fewest victims for four CPUs; but only n1 has the
    // feature the preemptor asks for, so it takes jobs 1 and 2 there.
    let mut s = example(QOS_CANCEL);
    s.nodes.get_mut("n1").unwrap().features = vec!["fast".into()];
    submit(&mut s, 4, "high", |j| {
        j.cpus_per_task = 4;
        j.constraint = "fast".into();
    });
    assert_eq!(
        render(&schedule(&s, 100, &config)),
        "preempt 1 CANCEL for 4\npreempt 2 CANCEL for 4\n"
    );
    // No node has the feature: nobody is preempted for nothing.
    let mut s = example(QOS_CANCEL);
    submit(&mut s, 4, "high", |j| {
        j.cpus_per_task = 4;
        j.constraint = "slow".into();
    });
    assert_eq!(render(&schedule(&s, 100, &config)), "");
}

#[test]
fn no_preemption_without_the_right() {
    // preempt_type none: nothing happens.
    let (_, config) = setup("");
    let mut s = example("");
    submit(&mut s, 4, "high", |j| j.cpus_per_task = 2);
    assert_eq!(render(&schedule(&s, 100, &config)), "");
    // A QOS that preempts nobody, and one the victim's QOS turns off.
    let (_, config) = setup(QOS_CANCEL);
    let mut s = example(QOS_CANCEL);
    submit(&mut s, 4, "mid", |j| j.cpus_per_task = 2);
    assert_eq!(render(&schedule(&s, 100, &config)), "");
    let extra = "[scheduler]\npreempt_type = \"qos\"\npreempt_mode = \"off\"\n";
    let (_, config) = setup(extra);
    let mut s = example(extra);
    submit(&mut s, 4, "high", |j| j.cpus_per_task = 2);
    assert_eq!(render(&schedule(&s, 100, &config)), "");
    // More than the whole node: no victims.
    let (_, config) = setup(QOS_CANCEL);
    let mut s = example(QOS_CANCEL);
    submit(&mut s, 4, "high", |j| j.cpus_per_task = 5);
    assert_eq!(render(&schedule(&s, 100, &config)), "");
}

/// Preemption records `victim` (in `mode`, at `time`) for `preemptor`.
fn preempted(
    s: &mut ClusterState,
    victim: u32,
    preemptor: u32,
    mode: PreemptMode,
    time: i64,
    grace_secs: u32,
) {
    s.apply(&Event::JobPreempted {
        job_id: victim,
        preemptor,
        mode,
        time,
        grace_secs,
    });
}

/// The example with job 4 (QOS high, 2 CPUs) waiting for job 1, which it preempts
/// (CANCEL, at 100) with `grace_secs`.
fn preempting_job_1(grace_secs: u32) -> (SchedConfig, ClusterState) {
    let (_, config) = setup(QOS_CANCEL);
    let mut s = example(QOS_CANCEL);
    submit(&mut s, 4, "high", |j| j.cpus_per_task = 2);
    preempted(&mut s, 1, 4, PreemptMode::Cancel, 100, grace_secs);
    (config, s)
}

#[test]
fn a_waiting_preemptor_picks_no_second_set() {
    let (config, mut s) = preempting_job_1(0);
    let plan = schedule(&s, 101, &config);
    assert_eq!(render(&plan), "");
    assert_eq!(plan.pending[&4].reason, Reason::Resources);
    // Another preemptor does not count on job 1: it picks its own victim (of two
    // equal ones, the youngest).
    submit(&mut s, 5, "high", |j| j.cpus_per_task = 2);
    assert_eq!(
        render(&schedule(&s, 101, &config)),
        "preempt 3 CANCEL for 5\n"
    );
    preempted(&mut s, 3, 5, PreemptMode::Cancel, 101, 0);
    // Once job 1 is gone, job 4 starts in its room.
    s.apply(&Event::JobEnded {
        job_id: 1,
        state: JobState::Preempted,
        exit_code: 0,
        exit_signal: 15,
        time: 102,
        reason: Reason::None,
        cancelled_by: None,
    });
    let plan = schedule(&s, 102, &config);
    assert_eq!(render(&plan), "start 4 n1\n");
    assert_eq!(plan.pending[&5].reason, Reason::Resources);
}

#[test]
fn requeue_mode_and_grace_time_come_from_the_victims_qos() {
    let extra = "[scheduler]\npreempt_type = \"qos\"\n";
    let text = BASE.replace(
        "[[qos]]\nname = \"low\"\n",
        "[[qos]]\nname = \"low\"\npreempt_mode = \"requeue\"\ngrace_time = 30\n",
    );
    let config = Config::parse(&format!("{text}\n{extra}"), "t.toml").unwrap();
    let config = SchedConfig::from_config(&config);
    let mut s = example(extra);
    submit(&mut s, 4, "high", |j| j.cpus_per_task = 2);
    assert_eq!(
        render(&schedule(&s, 100, &config)),
        "preempt 1 REQUEUE for 4 grace 30\n"
    );
}

#[test]
fn suspend_lends_cpus_and_gpus_keeps_memory_and_resumes() {
    let extra = "[scheduler]\npreempt_type = \"qos\"\npreempt_mode = \"suspend\"\n";
    let (mut s, config) = setup(extra);
    // Job 1 (low) fills n1 and n2 with its GPUs and half the memory of each.
    submit(&mut s, 1, "low", |j| {
        j.num_nodes = 2;
        j.num_tasks = 2;
        j.cpus_per_task = 4;
        j.gpus_per_node = 2;
        j.mem_per_node_mb = 2000;
    });
    run_on(
        &mut s,
        1,
        &[("n1", 4, 2000, &[0, 1]), ("n2", 4, 2000, &[0, 1])],
    );
    // Job 2 (high) needs more memory than suspending job 1 frees: no victim.
    submit(&mut s, 2, "high", |j| j.mem_per_node_mb = 3000);
    assert_eq!(render(&schedule(&s, 100, &config)), "");
    s.apply(&Event::JobEnded {
        job_id: 2,
        state: JobState::Cancelled,
        exit_code: 0,
        exit_signal: 0,
        time: 100,
        reason: Reason::None,
        cancelled_by: Some(0),
    });
    submit(&mut s, 3, "high", |j| {
        j.cpus_per_task = 4;
        j.gpus_per_node = 1;
        j.mem_per_node_mb = 1000;
    });
    assert_eq!(
        render(&schedule(&s, 100, &config)),
        "preempt 1 SUSPEND for 3\n"
    );
    s.apply(&Event::JobSuspended {
        job_id: 1,
        time: 100,
        preemptor: Some(3),
    });
    // Its CPUs and GPUs are lent to job 3, which starts; job 1 stays suspended.
    let plan = schedule(&s, 101, &config);
    assert_eq!(render(&plan), "start 3 n1\n");
    assert_eq!(plan.starts[0].alloc.nodes[0].gpus, vec![0]);
    run_on(&mut s, 3, &[("n1", 4, 1000, &[0])]);
    // Once job 3 runs, job 1 claims its room back: a low job does not get the CPUs job
    // 1 holds on n2, and job 1 stays suspended while job 3 holds its CPUs on n1.
    submit(&mut s, 4, "low", |j| j.cpus_per_task = 1);
    let plan = schedule(&s, 150, &config);
    assert_eq!(render(&plan), "");
    assert_eq!(plan.pending[&4].reason, Reason::Resources);
    // When job 3 ends, job 1 resumes, before the low job.
    s.apply(&Event::JobEnded {
        job_id: 3,
        state: JobState::Completed,
        exit_code: 0,
        exit_signal: 0,
        time: 160,
        reason: Reason::None,
        cancelled_by: None,
    });
    let plan = schedule(&s, 160, &config);
    assert_eq!(render(&plan), "resume 1\n");
    assert_eq!(plan.pending[&4].reason, Reason::Resources);
    s.apply(&Event::JobResumed {
        job_id: 1,
        time: 160,
    });
    let job = s.job(1).unwrap();
    assert_eq!(job.state, JobState::Running);
    assert_eq!(job.suspended_secs, 60);
    // Its expected end moved by the time it was suspended.
    assert_eq!(profile::expected_end(job, 160), 1 + 3600 + 60);
}

#[test]
fn young_jobs_are_exempt() {
    // Jobs 1-3 started at 1-3; with a 100 s exemption, at 101 only job 1 may go.
    let extra = "[scheduler]\npreempt_type = \"qos\"\npreempt_exempt_time = \"1:40\"\n";
    let (_, config) = setup(extra);
    let mut s = example(extra);
    submit(&mut s, 4, "high", |j| j.cpus_per_task = 4);
    assert_eq!(render(&schedule(&s, 101, &config)), "");
    // Two seconds later job 3 may go too.
    assert_eq!(
        render(&schedule(&s, 103, &config)),
        "preempt 3 CANCEL for 4\n"
    );
    let mut s = example(extra);
    submit(&mut s, 4, "high", |j| j.cpus_per_task = 2);
    assert_eq!(
        render(&schedule(&s, 101, &config)),
        "preempt 1 CANCEL for 4\n"
    );
}

#[test]
fn partition_tiers_preempt_on_shared_nodes() {
    let extra = r#"
[[partitions]]
name = "urgent"
nodes = "n1"
priority_tier = 2

[scheduler]
preempt_type = "partition_prio"
preempt_mode = "requeue"
"#;
    let (mut s, config) = setup(extra);
    submit(&mut s, 1, "", |j| j.cpus_per_task = 4);
    submit(&mut s, 2, "", |j| j.cpus_per_task = 4);
    run_on(&mut s, 1, &[("n1", 4, 0, &[])]);
    run_on(&mut s, 2, &[("n2", 4, 0, &[])]);
    // Same tier: no preemption.
    submit(&mut s, 3, "", |j| j.cpus_per_task = 4);
    assert_eq!(render(&schedule(&s, 100, &config)), "");
    // The urgent partition holds n1 only: job 1 goes, not job 2.
    submit(&mut s, 4, "", |j| {
        j.cpus_per_task = 4;
        j.partition = "urgent".into();
    });
    assert_eq!(
        render(&schedule(&s, 100, &config)),
        "preempt 1 REQUEUE for 4\n"
    );
}

/// A small deterministic generator (no unseeded randomness in tests either).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

#[test]
fn victims_free_the_room_and_none_are_missed() {
    let (mut named, mut missed_none, mut started) = (0, 0, 0);
    for seed in 0..300u64 {
        let mut rng = Lcg(seed);
        let mode = ["cancel", "requeue", "suspend"][rng.below(3) as usize];
        let extra = format!("[scheduler]\npreempt_type = \"qos\"\npreempt_mode = \"{mode}\"\n");
        let (mut s, config) = setup(&extra);
        // Fill the cluster with low and mid jobs as the scheduler places them.
        for id in 1..=6 {
            let qos = if rng.below(2) == 0 { "low" } else { "mid" };
            let cpus = 1 + rng.below(3) as u32;
            let gpus = rng.below(2) as u32;
            let mem = 500 * rng.below(3);
            submit(&mut s, id, qos, |j| {
                j.cpus_per_task = cpus;
                j.gpus_per_node = gpus;
                j.mem_per_node_mb = mem;
            });
        }
        let plan = schedule(&s, 10, &config);
        for st in &plan.starts {
            s.apply(&Event::JobStarted {
                job_id: st.job_id,
                alloc: st.alloc.clone(),
                time: 10,
                stdout_path: String::new(),
                stderr_path: String::new(),
            });
        }
        for id in 1..=6 {
            if s.job(id).unwrap().is_pending() {
                s.remove_job(id);
            }
        }
        let nodes = 1 + rng.below(2) as u32;
        let cpus = 1 + rng.below(4) as u32;
        let gpus = rng.below(3) as u32;
        let mem = 1000 * rng.below(4);
        submit(&mut s, 10, "high", |j| {
            j.num_nodes = nodes;
            j.num_tasks = nodes;
            j.cpus_per_task = cpus;
            j.gpus_per_node = gpus;
            j.mem_per_node_mb = mem;
        });
        let plan = schedule(&s, 20, &config);
        assert_eq!(
            plan,
            schedule(&s, 20, &config),
            "seed {seed}: deterministic"
        );
        if plan.starts.iter().any(|st| st.job_id == 10) {
            assert!(plan.preempts.is_empty(), "seed {seed}");
            started += 1;
            continue;
        }
        // What stopping victims does, applied as the controller would.
        let stop = |s: &mut ClusterState, id: JobId| {
            if mode == "suspend" {
                s.apply(&Event::JobSuspended {
                    job_id: id,
                    time: 20,
                    preemptor: Some(10),
                });
            } else {
                s.apply(&Event::JobEnded {
                    job_id: id,
                    state: JobState::Preempted,
                    exit_code: 0,
                    exit_signal: 9,
                    time: 20,
                    reason: Reason::None,
                    cancelled_by: None,
                });
            }
        };
        if plan.preempts.is_empty() {
            // None named: stopping all of them would not make room either.
            let all: Vec<JobId> = s.running_jobs().map(|j| j.id).collect();
            for id in all {
                stop(&mut s, id);
            }
            let next = schedule(&s, 21, &config);
            assert!(
                !next.starts.iter().any(|st| st.job_id == 10),
                "seed {seed}: a victim set existed but none was named"
            );
            missed_none += 1;
            continue;
        }
        for p in &plan.preempts {
            assert_eq!(p.preemptor, 10);
            assert_ne!(s.job(p.job_id).unwrap().spec.qos, "high");
            stop(&mut s, p.job_id);
        }
        let next = schedule(&s, 21, &config);
        assert!(
            next.starts.iter().any(|st| st.job_id == 10),
            "seed {seed}: the victims {:?} did not free the room:\n{}",
            plan.preempts,
            render(&next)
        );
        assert!(next.preempts.is_empty(), "seed {seed}: a second round");
        named += 1;
    }
    // Every branch is exercised.
    assert!(
        named > 50 && missed_none > 2 && started > 10,
        "{named} {missed_none} {started}"
    );
}

#[test]
fn a_requeued_victim_waits_behind_its_preemptor() {
    let (_, config) = setup(QOS_CANCEL);
    let mut s = example(QOS_CANCEL);
    submit(&mut s, 4, "high", |j| j.cpus_per_task = 4);
    let plan = schedule(&s, 100, &config);
    assert_eq!(render(&plan), "preempt 3 CANCEL for 4\n");
    preempted(&mut s, 3, 4, PreemptMode::Requeue, 100, 0);
    s.apply(&Event::JobRequeued {
        job_id: 3,
        time: 101,
        hold: false,
        special_exit: false,
        not_before: None,
    });
    // Even when the victim would rank first (here: every job has the same priority,
    // and it has the lower id), its preemptor goes first.
    let config = SchedConfig {
        priority: crate::priority::PriorityParams {
            basic: true,
            ..config.priority.clone()
        },
        ..config
    };
    let plan = schedule(&s, 101, &config);
    assert_eq!(render(&plan), "start 4 n2\n");
    assert_eq!(plan.pending[&3].reason, Reason::Resources);
}

#[test]
fn why_names_the_victims_being_preempted() {
    let (config, s) = preempting_job_1(30);
    let lines = crate::explain::explain(&s, 110, &config, 4);
    let line = lines
        .iter()
        .find(|b| b.text.starts_with("preempting job 1"))
        .unwrap_or_else(|| panic!("{lines:?}"));
    assert_eq!(
        (line.text.as_str(), line.clears_at),
        (
            "preempting job 1 (RUNNING, CANCEL, grace time 30 s): it starts in the room job 1 leaves",
            130
        )
    );
}

/// `guarantee`'s worked example on n1 and n2 (2 GPUs each): ml is guaranteed 2 GPUs,
/// physics 1; no PreemptType is needed.
const GUARANTEES: &str = "[[accounts]]\nname = \"ml\"\nusers = [\"alice\"]\nguaranteed_tres = \"gres/gpu=2\"\n\
     [[accounts]]\nname = \"physics\"\nusers = [\"bob\"]\nguaranteed_tres = \"gres/gpu=1\"\n\
     [[accounts]]\nname = \"guest\"\nusers = [\"carol\"]\n";

fn gpu_job(s: &mut ClusterState, id: u32, account: &str, gpus: u32) {
    let user = match account {
        "ml" => "alice",
        "physics" => "bob",
        _ => "carol",
    };
    submit(s, id, "low", |j| {
        j.account = account.into();
        j.user = user.into();
        j.gpus = gpus;
    });
}

#[test]
fn a_guaranteed_account_reclaims_what_others_borrow_and_nothing_more() {
    let (mut s, config) = setup(GUARANTEES);
    // guest (no guarantee) runs on both of n1's GPUs, physics on both of n2's: physics
    // holds one more than its guarantee.
    gpu_job(&mut s, 1, "guest", 2);
    run_on(&mut s, 1, &[("n1", 1, 0, &[0, 1])]);
    gpu_job(&mut s, 2, "physics", 1);
    run_on(&mut s, 2, &[("n2", 1, 0, &[0])]);
    gpu_job(&mut s, 3, "physics", 1);
    run_on(&mut s, 3, &[("n2", 1, 0, &[1])]);
    let g = crate::guarantee::Guarantees::new(&s, &config.assocs);
    let held = |id| model::tres::alloc_tres(s.job(id).unwrap().alloc.as_ref().unwrap(), &s.nodes);
    assert_eq!(g.borrowed(s.job(1).unwrap(), &held(1)).len(), 1);
    assert!(!g.borrowed(s.job(2).unwrap(), &held(2)).is_empty());
    // What each borrows, for scontrol and squeue: physics holds 2 of its 1, and both
    // of its jobs count as borrowing.
    let borrowed = crate::guarantee::borrowed_by_job(&s, &config.assocs);
    let shown: Vec<(u32, String)> = borrowed
        .iter()
        .map(|(id, t)| (*id, model::tres::format_counts(t)))
        .collect();
    assert_eq!(
        shown,
        [
            (1, "gres/gpu=2".to_string()),
            (2, "gres/gpu=1".into()),
            (3, "gres/gpu=1".into())
        ]
    );
    // `drover why` says so, and whose idle quota it is.
    let why = crate::explain::explain(&s, 100, &config, 1);
    assert_eq!(why.len(), 1);
    assert_eq!(
        why[0].text,
        "runs on borrowed gres/gpu (2 of it; its account guest has no guarantee of it), \
         idle guaranteed quota of ml; reclaimable: its owners' jobs take it back (requeue)"
    );
    // An ml job of 2 GPUs is within ml's guarantee: the guest's job is requeued.
    gpu_job(&mut s, 4, "ml", 2);
    assert_eq!(
        render(&schedule(&s, 100, &config)),
        "preempt 1 REQUEUE for 4\n"
    );
    // ml holding its whole guarantee reclaims nothing more; physics, holding none of
    // its own, does.
    let (mut s2, _) = setup(GUARANTEES);
    for (id, acct, gpus, node, ids) in [
        (1, "guest", 2, "n1", &[0u32, 1][..]),
        (2, "ml", 1, "n2", &[0][..]),
        (3, "ml", 1, "n2", &[1][..]),
    ] {
        gpu_job(&mut s2, id, acct, gpus);
        run_on(&mut s2, id, &[(node, 1, 0, ids)]);
    }
    gpu_job(&mut s2, 4, "physics", 1);
    gpu_job(&mut s2, 5, "ml", 1);
    // physics (within its 1) reclaims from the guest; ml (holding its 2) may not.
    assert_eq!(
        render(&schedule(&s2, 100, &config)),
        "preempt 1 REQUEUE for 4\n"
    );
}

#[test]
fn a_reclaim_takes_only_what_the_victims_account_borrows() {
    let (mut s, config) = setup(GUARANTEES);
    // physics holds 2 GPUs on n1 against its guarantee of 1, guest 2 on n2.
    gpu_job(&mut s, 1, "physics", 1);
    run_on(&mut s, 1, &[("n1", 1, 0, &[0])]);
    gpu_job(&mut s, 2, "physics", 1);
    run_on(&mut s, 2, &[("n1", 1, 0, &[1])]);
    gpu_job(&mut s, 3, "guest", 2);
    run_on(&mut s, 3, &[("n2", 1, 0, &[0, 1])]);
    // ml wants 1 GPU: physics's job 2 borrows one (taking it leaves physics its
    // guarantee), the guest's job 3 two. One victim either way; the lower is the
    // youngest, job 3.
    gpu_job(&mut s, 4, "ml", 1);
    assert_eq!(
        render(&schedule(&s, 100, &config)),
        "preempt 3 REQUEUE for 4\n"
    );
    // Once both physics jobs would leave it under its guarantee, only the borrowed one
    // goes: ml asking for 2 on one node takes the guest's n2, not both physics jobs.
    let (mut s, _) = setup(GUARANTEES);
    for (id, acct, node, ids) in [
        (1, "physics", "n1", &[0u32][..]),
        (2, "physics", "n1", &[1][..]),
    ] {
        gpu_job(&mut s, id, acct, 1);
        run_on(&mut s, id, &[(node, 1, 0, ids)]);
    }
    gpu_job(&mut s, 3, "guest", 2);
    run_on(&mut s, 3, &[("n2", 1, 0, &[0, 1])]);
    gpu_job(&mut s, 4, "ml", 2);
    assert_eq!(
        render(&schedule(&s, 100, &config)),
        "preempt 3 REQUEUE for 4\n"
    );
}
