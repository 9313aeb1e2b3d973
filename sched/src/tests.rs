//! Data-driven tests of the pass: a small cluster and queue in, the rendered plan out
//! (`start JOB NODE:cCPUSmMEMgGPUS`, `pend JOB REASON [@PLANNED_START on NODES]`), and
//! property tests of its invariants after every pass: no oversubscription of CPUs,
//! memory or any GPU, reservations honoured when the world runs as planned, and
//! determinism.

use super::*;
use model::{Config, Event, Job, JobSpec, JobState, Node};

fn cluster(nodes: &[(&str, u32, u64, u32)]) -> ClusterState {
    let text = String::from("[[partitions]]\nname = \"p\"\nnodes = \"ALL\"\n");
    let mut config = Config::parse(&text, "t").unwrap();
    config.nodes.clear();
    let mut list = Vec::new();
    for (name, cpus, mem, gpus) in nodes {
        let gpus = (0..*gpus)
            .map(|i| model::GpuDevice::with_default_topology(i, *gpus, "h100"))
            .collect();
        let mut n = Node::from_config(name, *cpus, *mem, gpus);
        n.health = model::NodeHealth::Up;
        list.push(n);
    }
    let mut parts = config.partition_list();
    parts[0].nodes = list.iter().map(|n| n.name.clone()).collect();
    ClusterState::new(list, parts)
}

/// Submits job `id` (1 task, 1 CPU, partition `p`) changed by `f`.
pub(crate) fn submit(state: &mut ClusterState, id: u32, f: impl FnOnce(&mut JobSpec)) {
    let mut spec = JobSpec {
        partition: "p".into(),
        num_tasks: 1,
        cpus_per_task: 1,
        ..JobSpec::default()
    };
    f(&mut spec);
    state.apply(&Event::JobSubmitted {
        job: Box::new(Job::new(id, spec, i64::from(id), None)),
    });
}

fn render(plan: &Plan) -> String {
    let mut out = String::new();
    for s in &plan.starts {
        let nodes: Vec<String> = s
            .alloc
            .nodes
            .iter()
            .map(|n| format!("{}:c{}m{}g{:?}", n.node, n.cpus, n.mem_mb, n.gpus))
            .collect();
        let task = s.array_task.map(|t| format!("_{t}")).unwrap_or_default();
        let other = s
            .partition
            .as_ref()
            .map(|p| format!(" in {p}"))
            .unwrap_or_default();
        out.push_str(&format!(
            "start {}{task} {}{other}\n",
            s.job_id,
            nodes.join(" ")
        ));
    }
    for (id, p) in &plan.pending {
        out.push_str(&format!("pend {id} {}", p.reason));
        if p.planned_start > 0 {
            out.push_str(&format!(" @{} on {}", p.planned_start, p.planned_nodes));
        }
        out.push('\n');
    }
    out
}

fn config(policy: Policy) -> SchedConfig {
    let mut c = SchedConfig::default();
    c.backfill.policy = policy;
    c.backfill.max_reservations = 0;
    c
}

/// Submits a job with a time limit in seconds.
fn submit_for(state: &mut ClusterState, id: u32, limit_s: u32, f: impl FnOnce(&mut JobSpec)) {
    submit(state, id, f);
    let mut job = state.job(id).unwrap().clone();
    job.time_limit_s = Some(limit_s);
    job.time_limit_min = Some(limit_s.div_ceil(60));
    state.insert_job(job);
}

/// Starts job `id` at `time` on the nodes given as `(node, cpus, gpus)`.
fn run_on(state: &mut ClusterState, id: u32, time: Time, nodes: &[(&str, u32, &[u32])]) {
    state.apply(&Event::JobStarted {
        job_id: id,
        alloc: Allocation {
            nodes: nodes
                .iter()
                .map(|(n, c, g)| model::NodeAllocation {
                    node: n.to_string(),
                    cpus: *c,
                    mem_mb: 0,
                    gpus: g.to_vec(),
                    cpu_ids: Vec::new(),
                })
                .collect(),
        },
        time,
        stdout_path: String::new(),
        stderr_path: String::new(),
    });
}

#[test]
fn first_fit_in_submit_order() {
    let mut s = cluster(&[("n1", 4, 1000, 0), ("n2", 4, 1000, 0)]);
    submit(&mut s, 1, |j| j.cpus_per_task = 3);
    submit(&mut s, 2, |j| j.cpus_per_task = 3);
    submit(&mut s, 3, |j| j.cpus_per_task = 2);
    submit(&mut s, 4, |j| j.cpus_per_task = 1);
    // Without time limits nothing ever ends: job 3 can get no reservation, so job 4
    // may use the CPU it leaves.
    assert_eq!(
        render(&schedule(&s, 100, &SchedConfig::default())),
        "start 1 n1:c3m0g[]\nstart 2 n2:c3m0g[]\nstart 4 n1:c1m0g[]\npend 3 Resources\n"
    );
    // FCFS: job 3 blocks the partition.
    assert_eq!(
        render(&schedule(&s, 100, &config(Policy::Fcfs))),
        "start 1 n1:c3m0g[]\nstart 2 n2:c3m0g[]\npend 3 Resources\npend 4 Priority\n"
    );
}

/// The worked example of `backfill`: one 4-CPU node, job 1 holds 2 CPUs until 100.
fn backfill_example() -> ClusterState {
    let mut s = cluster(&[("n1", 4, 1000, 0)]);
    submit_for(&mut s, 1, 100, |j| j.cpus_per_task = 2);
    run_on(&mut s, 1, 0, &[("n1", 2, &[])]);
    submit_for(&mut s, 2, 50, |j| j.cpus_per_task = 4);
    submit_for(&mut s, 3, 50, |j| j.cpus_per_task = 2);
    submit_for(&mut s, 4, 500, |j| j.cpus_per_task = 2);
    s
}

#[test]
fn easy_backfills_a_short_job_not_a_long_one() {
    let s = backfill_example();
    assert_eq!(
        render(&schedule(&s, 10, &config(Policy::Easy))),
        "start 3 n1:c2m0g[]\npend 2 Resources @100 on n1\npend 4 Priority\n"
    );
}

#[test]
fn conservative_reserves_for_every_job() {
    let s = backfill_example();
    assert_eq!(
        render(&schedule(&s, 10, &config(Policy::Conservative))),
        "start 3 n1:c2m0g[]\npend 2 Resources @100 on n1\npend 4 Priority @150 on n1\n"
    );
    // Reserving for the first job only is EASY without the per-partition rule.
    let mut one = config(Policy::Conservative);
    one.backfill.max_reservations = 1;
    assert_eq!(
        render(&schedule(&s, 10, &one)),
        "start 3 n1:c2m0g[]\npend 2 Resources @100 on n1\npend 4 Priority\n"
    );
}

#[test]
fn fcfs_starts_nothing_behind_a_blocked_job() {
    let s = backfill_example();
    assert_eq!(
        render(&schedule(&s, 10, &config(Policy::Fcfs))),
        "pend 2 Resources\npend 3 Priority\npend 4 Priority\n"
    );
}

#[test]
fn extra_resources_beyond_the_reservation_backfill_long_jobs() {
    // 8 CPUs; job 1 holds 6 until 100. Job 2 needs 4 at 100, leaving 4 spare then:
    // job 3 (2 CPUs, long) fits now and beside the reservation (the "extra
    // processors" of EASY); job 4 finds no CPU free now.
    let mut s = cluster(&[("n1", 8, 1000, 0)]);
    submit_for(&mut s, 1, 100, |j| j.cpus_per_task = 6);
    run_on(&mut s, 1, 0, &[("n1", 6, &[])]);
    submit_for(&mut s, 2, 50, |j| j.cpus_per_task = 4);
    submit_for(&mut s, 3, 1000, |j| j.cpus_per_task = 2);
    submit_for(&mut s, 4, 1000, |j| j.cpus_per_task = 2);
    assert_eq!(
        render(&schedule(&s, 10, &config(Policy::Easy))),
        "start 3 n1:c2m0g[]\npend 2 Resources @100 on n1\npend 4 Priority\n"
    );
}

#[test]
fn multi_node_gpu_reservation_and_gpu_backfill() {
    // Two nodes with 4 GPUs. Job 1 holds GPUs 0-1 of n1 until 100; job 2 all of n2
    // until 200. Job 3 wants both whole nodes' GPUs: reserved at 200 on n[1-2]. Job 4
    // (1 GPU, 50 s) uses a free GPU of n1 and ends long before; job 5 (1 GPU, 500 s)
    // would still hold it at 200.
    let mut s = cluster(&[("n1", 8, 1000, 4), ("n2", 8, 1000, 4)]);
    submit_for(&mut s, 1, 100, |j| j.gpus_per_node = 2);
    run_on(&mut s, 1, 0, &[("n1", 1, &[0, 1])]);
    submit_for(&mut s, 2, 200, |j| j.gpus_per_node = 4);
    run_on(&mut s, 2, 0, &[("n2", 1, &[0, 1, 2, 3])]);
    submit_for(&mut s, 3, 60, |j| {
        j.num_nodes = 2;
        j.gpus_per_node = 4;
    });
    submit_for(&mut s, 4, 50, |j| j.gpus_per_node = 1);
    submit_for(&mut s, 5, 500, |j| j.gpus_per_node = 1);
    assert_eq!(
        render(&schedule(&s, 10, &config(Policy::Easy))),
        "start 4 n1:c1m0g[2]\npend 3 Resources @200 on n[1-2]\npend 5 Priority\n"
    );
}

#[test]
fn a_job_that_can_never_start_does_not_hold_the_reservation() {
    // Job 1 has no time limit: n1 never becomes idle, so job 3 (exclusive, on n1)
    // gets no reservation. Job 4 needs all of n2, busy until 300: it gets the
    // partition's reservation. Job 5 (no limit) starts on n1: nothing is reserved
    // there.
    let mut s = cluster(&[("n1", 4, 1000, 0), ("n2", 4, 1000, 0)]);
    submit(&mut s, 1, |j| j.cpus_per_task = 2);
    run_on(&mut s, 1, 0, &[("n1", 2, &[])]);
    submit_for(&mut s, 2, 300, |j| j.cpus_per_task = 4);
    run_on(&mut s, 2, 0, &[("n2", 4, &[])]);
    submit_for(&mut s, 3, 100, |j| {
        j.cpus_per_task = 1;
        j.exclusive = true;
        j.nodelist = "n1".into();
    });
    submit_for(&mut s, 4, 100, |j| j.cpus_per_task = 4);
    submit(&mut s, 5, |j| j.cpus_per_task = 2);
    assert_eq!(
        render(&schedule(&s, 10, &config(Policy::Easy))),
        "start 5 n1:c2m0g[]\npend 3 Resources\npend 4 Priority @300 on n2\n"
    );
}

#[test]
fn arrays_reserve_for_the_first_task_that_does_not_fit() {
    let mut s = cluster(&[("n1", 2, 1000, 0)]);
    submit_for(&mut s, 1, 100, |j| j.cpus_per_task = 1);
    run_on(&mut s, 1, 0, &[("n1", 1, &[])]);
    submit_for(&mut s, 2, 60, |j| {
        j.array = Some(model::job::parse_array("0-2", 100).unwrap());
    });
    assert_eq!(
        render(&schedule(&s, 10, &config(Policy::Easy))),
        "start 2_0 n1:c1m0g[]\npend 2 Resources @70 on n1\n"
    );
}

#[test]
fn node_lists_and_excludes_are_honoured() {
    let mut s = cluster(&[("n1", 4, 1000, 0), ("n2", 4, 1000, 0), ("n3", 4, 1000, 0)]);
    submit(&mut s, 1, |j| j.nodelist = "n3".into());
    submit(&mut s, 2, |j| {
        j.exclude = "n1".into();
        j.num_nodes = 2;
    });
    submit(&mut s, 3, |j| {
        j.exclude = "n[1-3]".into();
    });
    // An exclude list that does not parse (an old record) excludes every node, not
    // none.
    submit(&mut s, 4, |j| j.exclude = "n[1-".into());
    assert_eq!(
        render(&schedule(&s, 10, &config(Policy::Easy))),
        "start 1 n3:c1m0g[]\nstart 2 n2:c1m0g[] n3:c1m0g[]\npend 3 Resources\npend 4 Priority\n"
    );
}

#[test]
fn a_node_list_is_at_least_those_nodes() {
    // Slurm's `-w`: the job gets every node named, and others when it needs more.
    let mut s = cluster(&[("n1", 8, 1000, 4), ("n2", 8, 1000, 4), ("n3", 8, 1000, 4)]);
    // `-w n3 --gpus=5`: n3 and another node (the validated count is 2).
    submit(&mut s, 1, |j| {
        j.nodelist = "n3".into();
        j.gpus = 5;
        j.num_nodes = 2;
    });
    // `-w n2 -N2`: n2 and another (by best fit, n3, with the fewest GPUs free).
    submit(&mut s, 2, |j| {
        j.nodelist = "n2".into();
        j.num_nodes = 2;
        j.num_tasks = 2;
    });
    assert_eq!(
        render(&schedule(&s, 10, &config(Policy::Easy))),
        "start 1 n3:c1m0g[0, 1, 2] n1:c1m0g[0, 1]\nstart 2 n2:c1m0g[] n3:c1m0g[]\n"
    );
    // A listed node that is busy keeps the job waiting, though others are free; its
    // reservation holds the listed node.
    let mut s = cluster(&[("n1", 4, 1000, 0), ("n2", 4, 1000, 0), ("n3", 4, 1000, 0)]);
    submit_for(&mut s, 1, 100, |j| j.cpus_per_task = 4);
    run_on(&mut s, 1, 0, &[("n1", 4, &[])]);
    submit_for(&mut s, 2, 100, |j| {
        j.nodelist = "n1".into();
        j.num_nodes = 2;
    });
    assert_eq!(
        render(&schedule(&s, 10, &config(Policy::Easy))),
        "pend 2 Resources @100 on n[1-2]\n"
    );
}

#[test]
fn memory_per_gpu_follows_the_gpus_each_node_gets() {
    // `--gpus=5 --mem-per-gpu=13` over two nodes: 3 and 2 GPUs, 39 and 26 MB.
    let mut s = cluster(&[("n1", 8, 1000, 4), ("n2", 8, 1000, 4)]);
    submit(&mut s, 1, |j| {
        j.gpus = 5;
        j.num_nodes = 2;
        j.details.mem_per_gpu_mb = 13;
    });
    assert_eq!(
        render(&schedule(&s, 10, &SchedConfig::default())),
        "start 1 n1:c1m39g[0, 1, 2] n2:c1m26g[0, 1]\n"
    );
    // Exclusive: every GPU of the node, and the memory of each.
    let mut s = cluster(&[("n1", 8, 1000, 4)]);
    submit(&mut s, 1, |j| {
        j.gpus_per_node = 1;
        j.exclusive = true;
        j.details.mem_per_gpu_mb = 12;
    });
    assert_eq!(
        render(&schedule(&s, 10, &SchedConfig::default())),
        "start 1 n1:c8m48g[0, 1, 2, 3]\n"
    );
    // Memory for 4 GPUs beyond a node's: it needs two nodes of 2 GPUs.
    let mut s = cluster(&[("n1", 8, 1000, 4), ("n2", 8, 1000, 4)]);
    submit(&mut s, 1, |j| {
        j.gpus = 4;
        j.details.mem_per_gpu_mb = 300;
    });
    submit(&mut s, 2, |j| {
        j.gpus = 4;
        j.num_nodes = 2;
        j.details.mem_per_gpu_mb = 300;
    });
    assert_eq!(
        render(&schedule(&s, 10, &SchedConfig::default())),
        "start 2 n1:c1m600g[0, 1] n2:c1m600g[0, 1]\npend 1 Resources\n"
    );
}

#[test]
fn memory_gpus_and_multi_node() {
    let mut s = cluster(&[("n1", 8, 1000, 2), ("n2", 8, 1000, 2)]);
    submit(&mut s, 1, |j| j.mem_per_node_mb = 600);
    submit(&mut s, 2, |j| j.mem_per_node_mb = 600);
    submit(&mut s, 3, |j| j.mem_per_node_mb = 600);
    submit(&mut s, 4, |j| {
        j.gpus = 4;
        j.num_nodes = 2;
    });
    submit(&mut s, 5, |j| j.gpus_per_node = 1);
    assert_eq!(
        render(&schedule(&s, 100, &SchedConfig::default())),
        "start 1 n1:c1m600g[]\nstart 2 n2:c1m600g[]\nstart 4 n1:c1m0g[0, 1] n2:c1m0g[0, 1]\n\
         pend 3 Resources\npend 5 Priority\n"
    );
}

#[test]
fn mem_zero_takes_all_of_each_nodes_memory() {
    // --mem=0: job 2 needs n1's 1000 MB or n2's 2000 MB whole; job 1 holds 100 MB of
    // n1, so job 2 goes to n2, and job 3 (any memory) still fits beside job 1 only.
    let mut s = cluster(&[("n1", 8, 1000, 0), ("n2", 8, 2000, 0)]);
    submit(&mut s, 1, |j| j.mem_per_node_mb = 100);
    submit(&mut s, 2, |j| j.mem_whole_node = true);
    submit(&mut s, 3, |j| j.mem_per_node_mb = 10);
    assert_eq!(
        render(&schedule(&s, 100, &SchedConfig::default())),
        "start 1 n1:c1m100g[]
start 2 n2:c1m2000g[]
start 3 n1:c1m10g[]
"
    );
    // With both nodes partly used it waits, and could run on either once free.
    let mut s = cluster(&[("n1", 8, 1000, 0), ("n2", 8, 2000, 0)]);
    submit(&mut s, 1, |j| j.mem_per_node_mb = 100);
    submit(&mut s, 2, |j| {
        j.mem_per_node_mb = 100;
        j.nodelist = "n2".into();
    });
    submit(&mut s, 3, |j| j.mem_whole_node = true);
    assert_eq!(
        render(&schedule(&s, 100, &SchedConfig::default())),
        "start 1 n1:c1m100g[]
start 2 n2:c1m100g[]
pend 3 Resources
"
    );
    let req = per_node_request(s.job(3).unwrap());
    assert!(s.nodes.values().all(|n| node_could_fit(n, &req)));
}

#[test]
fn holds_begin_times_dependencies_and_down_nodes() {
    let mut s = cluster(&[("n1", 2, 1000, 0), ("n2", 2, 1000, 0)]);
    s.nodes.get_mut("n2").unwrap().drain = true;
    submit(&mut s, 1, |j| j.hold = true);
    submit(&mut s, 2, |j| j.begin_time = 500);
    submit(&mut s, 3, |_| {});
    submit(&mut s, 4, |j| j.dependency = "afterok:3".into());
    submit(&mut s, 5, |j| j.cpus_per_task = 2);
    assert_eq!(
        render(&schedule(&s, 100, &SchedConfig::default())),
        "start 3 n1:c1m0g[]\npend 2 BeginTime\npend 4 Dependency\npend 5 Resources\n"
    );
    // A held job is not the pass's business: it keeps the reason it got when held.
    assert_eq!(s.job(1).unwrap().reason, Reason::JobHeldUser);
    s.apply(&Event::JobEnded {
        job_id: 3,
        state: JobState::Failed,
        exit_code: 1,
        exit_signal: 0,
        time: 101,
        reason: Reason::None,
        cancelled_by: None,
    });
    let plan = schedule(&s, 102, &SchedConfig::default());
    assert_eq!(plan.pending[&4].reason, Reason::DependencyNeverSatisfied);
}

#[test]
fn arrays_start_tasks_up_to_the_throttle() {
    let mut s = cluster(&[("n1", 4, 1000, 0)]);
    submit(&mut s, 1, |j| {
        j.array = Some(model::job::parse_array("0-5%2", 100).unwrap())
    });
    assert_eq!(
        render(&schedule(&s, 100, &SchedConfig::default())),
        "start 1_0 n1:c1m0g[]\nstart 1_1 n1:c1m0g[]\npend 1 JobArrayTaskLimit\n"
    );
}

#[test]
fn never_oversubscribes_and_is_deterministic() {
    use proptest::prelude::*;
    proptest!(|(jobs in proptest::collection::vec((1u32..6, 0u64..800, 0u32..3, 1u32..3), 1..40))| {
        let mut s = cluster(&[("n1", 8, 1000, 2), ("n2", 4, 2000, 4), ("n3", 16, 500, 0)]);
        for (i, (cpus, mem, gpus, nodes)) in jobs.iter().enumerate() {
            submit(&mut s, i as u32 + 1, |j| {
                j.cpus_per_task = *cpus;
                j.mem_per_node_mb = *mem;
                j.gpus_per_node = *gpus;
                j.num_nodes = *nodes;
            });
        }
        let plan = schedule(&s, 100, &SchedConfig::default());
        prop_assert_eq!(&plan, &schedule(&s, 100, &SchedConfig::default()));
        for start in &plan.starts {
            s.apply(&Event::JobStarted {
                job_id: start.job_id,
                alloc: start.alloc.clone(),
                time: 100,
                stdout_path: String::new(),
                stderr_path: String::new(),
            });
        }
        for (name, u) in s.node_usage() {
            let n = &s.nodes[&name];
            prop_assert!(u.cpus <= n.cpus && u.mem_mb <= n.memory_mb);
            let mut g = u.gpus.clone();
            g.sort_unstable();
            g.dedup();
            prop_assert_eq!(g.len(), u.gpus.len(), "a GPU given twice on {}", name);
            prop_assert!(g.len() <= n.gpus.len());
        }
    });
}

/// The top reserved job starts no later than planned when every job runs exactly its
/// time limit and nothing new arrives: the jobs backfilled in this pass and the later
/// ones did not delay it. Checked by simulating the following passes. (Reservations
/// are recomputed every pass, as Slurm does, so under `conservative` the planned
/// starts of lower jobs are estimates: re-placing a higher job can push them back.)
#[test]
fn backfill_never_delays_a_reservation() {
    use proptest::prelude::*;
    let policies = [Policy::Fcfs, Policy::Easy, Policy::Conservative];
    proptest!(|(
        running in proptest::collection::vec((1u32..6, 0u32..3, 1u32..400), 0..8),
        pending in proptest::collection::vec((1u32..6, 0u64..700, 0u32..3, 1u32..3, 1u32..500), 1..25),
        policy in 0usize..3,
    )| {
        let cfg = config(policies[policy]);
        let mut s = cluster(&[("n1", 8, 1000, 2), ("n2", 4, 2000, 4), ("n3", 16, 500, 0)]);
        let mut limits = BTreeMap::new();
        // Fill the cluster at time 0 with the running jobs that fit.
        let mut id = 1;
        for (cpus, gpus, limit) in &running {
            submit_for(&mut s, id, *limit, |j| {
                j.cpus_per_task = *cpus;
                j.gpus_per_node = *gpus;
            });
            limits.insert(id, i64::from(*limit));
            id += 1;
        }
        let first = schedule(&s, 0, &config(Policy::Fcfs));
        for st in &first.starts {
            run_on_alloc(&mut s, st, 0);
        }
        let unstarted: Vec<u32> = s.pending_jobs().map(|j| j.id).collect();
        for u in unstarted {
            s.remove_job(u);
        }
        for (cpus, mem, gpus, nodes, limit) in &pending {
            submit_for(&mut s, id, *limit, |j| {
                j.cpus_per_task = *cpus;
                j.mem_per_node_mb = *mem;
                j.gpus_per_node = *gpus;
                j.num_nodes = *nodes;
            });
            limits.insert(id, i64::from(*limit));
            id += 1;
        }
        let now = 5;
        let plan = schedule(&s, now, &cfg);
        prop_assert_eq!(&plan, &schedule(&s, now, &cfg), "deterministic");
        let planned: BTreeMap<u32, Time> = plan
            .pending
            .iter()
            .filter(|(_, p)| p.planned_start > 0)
            .map(|(id, p)| (*id, p.planned_start))
            .take(1)
            .collect();
        // Run the world forward: every job ends exactly at its limit.
        let mut t = now;
        let mut plan = plan;
        let mut started: BTreeMap<u32, Time> = BTreeMap::new();
        for _ in 0..200 {
            for st in &plan.starts {
                started.insert(st.job_id, t);
                run_on_alloc(&mut s, st, t);
            }
            check_no_oversubscription(&s)?;
            let next = s
                .running_jobs()
                .map(|j| j.start_time + limits[&j.id])
                .min();
            let Some(next) = next else { break };
            let ending: Vec<u32> = s
                .running_jobs()
                .filter(|j| j.start_time + limits[&j.id] == next)
                .map(|j| j.id)
                .collect();
            for e in ending {
                s.apply(&Event::JobEnded {
                    job_id: e,
                    state: JobState::Completed,
                    exit_code: 0,
                    exit_signal: 0,
                    time: next,
                    reason: Reason::None,
                    cancelled_by: None,
                });
            }
            t = next;
            plan = schedule(&s, t, &cfg);
        }
        for (job, at) in &planned {
            let start = started.get(job).copied();
            prop_assert!(
                start.is_some_and(|st| st <= *at),
                "job {} planned at {} started at {:?} ({:?})", job, at, start, policies[policy]
            );
        }
    });
}

fn run_on_alloc(state: &mut ClusterState, start: &Start, time: Time) {
    state.apply(&Event::JobStarted {
        job_id: start.job_id,
        alloc: start.alloc.clone(),
        time,
        stdout_path: String::new(),
        stderr_path: String::new(),
    });
}

fn check_no_oversubscription(s: &ClusterState) -> Result<(), proptest::test_runner::TestCaseError> {
    use proptest::prelude::*;
    for (name, u) in s.node_usage() {
        let n = &s.nodes[&name];
        prop_assert!(
            u.cpus <= n.cpus && u.mem_mb <= n.memory_mb,
            "{} over: {:?}",
            name,
            u
        );
        let mut g = u.gpus.clone();
        g.sort_unstable();
        g.dedup();
        prop_assert_eq!(g.len(), u.gpus.len(), "a GPU given twice on {}", name);
        prop_assert!(g.len() <= n.gpus.len());
    }
    Ok(())
}

/// The example at the top of `lib.rs`.
#[test]
fn module_example() {
    let mut s = cluster(&[("n1", 4, 1000, 0), ("n2", 4, 1000, 0)]);
    submit_for(&mut s, 1, 1800, |j| j.cpus_per_task = 3);
    submit_for(&mut s, 2, 1800, |j| j.cpus_per_task = 3);
    submit_for(&mut s, 3, 3600, |j| j.cpus_per_task = 2);
    submit_for(&mut s, 4, 600, |j| j.cpus_per_task = 1);
    assert_eq!(
        render(&schedule(&s, 100, &SchedConfig::default())),
        "start 1 n1:c3m0g[]\nstart 2 n2:c3m0g[]\nstart 4 n1:c1m0g[]\n\
         pend 3 Resources @1900 on n1\n"
    );
}

#[test]
fn drained_nodes_get_no_reservation() {
    let mut s = cluster(&[("n1", 4, 1000, 0), ("n2", 4, 1000, 0)]);
    s.nodes.get_mut("n2").unwrap().drain = true;
    submit_for(&mut s, 1, 60, |j| j.num_nodes = 2);
    submit_for(&mut s, 2, 60, |j| j.cpus_per_task = 4);
    submit_for(&mut s, 3, 60, |j| j.num_nodes = 2);
    assert_eq!(
        render(&schedule(&s, 10, &SchedConfig::default())),
        "start 2 n1:c4m0g[]\npend 1 Resources\npend 3 Priority\n"
    );
}

#[test]
fn advance_reservations_shape_starts_and_planned_starts() {
    // `maint` holds n1 from 100 to 200. Job 1 (limit 50) fits before it; job 2 (limit
    // 150) would overlap it, so it waits for its end; job 3 is inside the
    // reservation and waits for it to open (eligibility).
    let mut s = cluster(&[("n1", 4, 1000, 0)]);
    s.apply(&Event::ReservationSet {
        reservation: Box::new(model::Reservation {
            name: "maint".into(),
            start: 100,
            end: 200,
            nodes: vec!["n1".into()],
            users: vec!["ada".into()],
            accounts: vec![],
            flags: vec![],
            partition: String::new(),
        }),
    });
    submit_for(&mut s, 1, 50, |j| j.cpus_per_task = 4);
    submit_for(&mut s, 2, 150, |j| j.cpus_per_task = 4);
    submit_for(&mut s, 3, 50, |j| {
        j.user = "ada".into();
        j.reservation = "maint".into();
    });
    assert_eq!(
        render(&schedule(&s, 10, &config(Policy::Easy))),
        "start 1 n1:c4m0g[]\npend 2 Resources @200 on n1\npend 3 Reservation\n"
    );
}

#[test]
fn a_job_of_several_reservations_starts_in_the_first_with_room() {
    // `r1` holds n1, busy until 100; `r2` holds n2 from now, `r3` n3 from 500.
    let mut s = cluster(&[("n1", 4, 1000, 0), ("n2", 4, 1000, 0), ("n3", 4, 1000, 0)]);
    for (name, node, start) in [("r1", "n1", 0), ("r2", "n2", 0), ("r3", "n3", 500)] {
        s.apply(&Event::ReservationSet {
            reservation: Box::new(model::Reservation {
                name: name.into(),
                start,
                end: 1000,
                nodes: vec![node.into()],
                users: vec!["ada".into()],
                accounts: vec![],
                flags: vec![],
                partition: String::new(),
            }),
        });
    }
    submit_for(&mut s, 1, 100, |j| {
        j.user = "ada".into();
        j.reservation = "r1".into();
        j.cpus_per_task = 4;
    });
    run_on(&mut s, 1, 0, &[("n1", 4, &[])]);
    // Job 2 fits in r2 only (r1's node is busy); job 3 of r1 and r3 waits in r1, its
    // first, for n1; job 4 of r3 alone waits for r3 to open.
    for (id, list) in [(2, "r1,r2"), (3, "r1,r3"), (4, "r3")] {
        submit_for(&mut s, id, 6000, |j| {
            j.user = "ada".into();
            j.reservation = list.into();
            j.cpus_per_task = 4;
        });
    }
    assert_eq!(
        render(&schedule(&s, 10, &config(Policy::Conservative))),
        "start 2 n2:c4m0g[]\npend 3 Resources @100 on n1\npend 4 Reservation\n"
    );
    // Once r3 is open, job 3 starts there, and job 4 waits for it.
    assert_eq!(
        render(&schedule(&s, 500, &config(Policy::Conservative))),
        "start 2 n2:c4m0g[]\nstart 3 n3:c4m0g[]\npend 4 Resources\n"
    );
    // A job whose limit outlasts its reservation may start, and ends by its end (at
    // 1000): started at 960, job 2's 100 minutes become one.
    run_on(&mut s, 2, 960, &[("n2", 4, &[])]);
    assert_eq!(s.job(2).unwrap().time_limit_min, Some(1));
}

#[test]
fn array_tasks_are_checked_against_limits_one_by_one() {
    let mut s = cluster(&[("n1", 8, 1000, 0)]);
    let config = SchedConfig::from_config(
        &Config::parse(
            "[[partitions]]\nname = \"p\"\nnodes = \"ALL\"\n[[qos]]\nname = \"normal\"\nmax_jobs_per_user = 2\n",
            "t",
        )
        .unwrap(),
    );
    submit(&mut s, 1, |j| {
        j.user = "ada".into();
        j.qos = "normal".into();
        j.array = Some(model::job::parse_array("0-4", 100).unwrap());
    });
    let plan = schedule(&s, 100, &config);
    assert_eq!(plan.starts.len(), 2, "{}", render(&plan));
    assert_eq!(
        plan.pending[&1].reason,
        Reason::parse("QOSMaxJobsPerUserLimit").unwrap()
    );
}

/// The worked example of `cpus`: CPU ids next to the job's GPUs, else the lowest free.
#[test]
fn cpu_ids_follow_the_gpus_numa_node() {
    let mut s = cluster(&[("n1", 16, 1000, 8)]);
    submit(&mut s, 1, |j| j.cpus_per_task = 2);
    run_on(&mut s, 1, 0, &[("n1", 2, &[4])]);
    let mut job = s.job(1).unwrap().clone();
    job.alloc.as_mut().unwrap().nodes[0].cpu_ids = vec![0, 1];
    s.insert_job(job);
    submit(&mut s, 2, |j| {
        j.cpus_per_task = 4;
        j.gpus = 1;
    });
    submit(&mut s, 3, |j| j.cpus_per_task = 4);
    let plan = schedule(&s, 100, &SchedConfig::default());
    let ids: Vec<(u32, Vec<u32>, Vec<u32>)> = plan
        .starts
        .iter()
        .map(|st| {
            let na = &st.alloc.nodes[0];
            (st.job_id, na.gpus.clone(), na.cpu_ids.clone())
        })
        .collect();
    assert_eq!(
        ids,
        vec![
            (2, vec![5], vec![8, 9, 10, 11]),
            (3, vec![], vec![2, 3, 4, 5])
        ]
    );
}

/// With the NUMA nodes' CPU ids known (interleaved, as many two-socket hosts number
/// their threads), a job next to its GPU gets ids of that NUMA node, not the upper half.
#[test]
fn cpu_ids_follow_the_numa_cpus_the_node_reported() {
    let mut s = cluster(&[("n1", 16, 1000, 8)]);
    let mut node = s.nodes["n1"].clone();
    node.numa_cpus = vec![
        vec![0, 1, 2, 3, 8, 9, 10, 11],
        vec![4, 5, 6, 7, 12, 13, 14, 15],
    ];
    s.nodes.insert("n1".into(), node);
    submit(&mut s, 1, |j| {
        j.cpus_per_task = 6;
        j.gpus = 1;
    });
    let plan = schedule(&s, 100, &SchedConfig::default());
    let na = &plan.starts[0].alloc.nodes[0];
    // GPU 0 is on NUMA 0: its six lowest ids.
    assert_eq!(
        (na.gpus.as_slice(), na.cpu_ids.as_slice()),
        (&[0][..], &[0, 1, 2, 3, 8, 9][..])
    );
}

proptest::proptest! {
    /// However jobs come and go, the CPU ids of running jobs never overlap and each
    /// job holds exactly as many as it was counted for.
    #[test]
    fn cpu_ids_never_overlap(sizes in proptest::collection::vec((1u32..6, proptest::bool::ANY), 1..30)) {
        let mut s = cluster(&[("n1", 8, 1000, 0), ("n2", 6, 1000, 0)]);
        let mut now = 100;
        for (i, (cpus, finish_first)) in sizes.iter().enumerate() {
            let id = i as u32 + 1;
            let first_running = s.running_jobs().map(|j| j.id).next();
            if *finish_first && let Some(victim) = first_running {
                s.apply(&Event::JobEnded {
                    job_id: victim,
                    state: JobState::Completed,
                    exit_code: 0,
                    exit_signal: 0,
                    time: now,
                    reason: Reason::None,
                    cancelled_by: None,
                });
            }
            submit(&mut s, id, |j| j.cpus_per_task = *cpus);
            let plan = schedule(&s, now, &SchedConfig::default());
            for st in plan.starts {
                s.apply(&Event::JobStarted {
                    job_id: st.job_id,
                    alloc: st.alloc,
                    time: now,
                    stdout_path: String::new(),
                    stderr_path: String::new(),
                });
            }
            let mut held: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
            for job in s.running_jobs() {
                for na in &job.alloc.as_ref().unwrap().nodes {
                    proptest::prop_assert_eq!(na.cpu_ids.len() as u32, na.cpus);
                    held.entry(na.node.as_str()).or_default().extend(&na.cpu_ids);
                }
            }
            for ids in held.values_mut() {
                let n = ids.len();
                ids.sort_unstable();
                ids.dedup();
                proptest::prop_assert_eq!(ids.len(), n);
            }
            now += 10;
        }
    }
}

#[test]
fn a_job_past_its_deadline_ends_deadline_and_one_started_has_its_limit_cut() {
    let mut s = cluster(&[("n1", 2, 1000, 0)]);
    submit(&mut s, 1, |j| j.details.deadline = 100);
    submit(&mut s, 2, |j| j.details.deadline = 100 + 600);
    let plan = schedule(&s, 100, &SchedConfig::default());
    assert_eq!(
        plan.cancels,
        [Cancel {
            job_id: 1,
            reason: Reason::DeadLine
        }]
    );
    plan.apply(&mut s, 100);
    let ended = s.job(1).unwrap();
    assert_eq!(
        (ended.state, ended.reason),
        (JobState::Deadline, Reason::DeadLine)
    );
    let started = s.job(2).unwrap();
    assert_eq!(
        (started.state, started.time_limit_min),
        (JobState::Running, Some(10))
    );
}

/// Partition `p` on n1 and `q` on n2, each of 2 CPUs.
fn two_partitions() -> ClusterState {
    let mut s = cluster(&[("n1", 2, 1000, 0), ("n2", 2, 1000, 0)]);
    for (name, node) in [("p", "n1"), ("q", "n2")] {
        s.apply(&Event::PartitionSet {
            partition: Box::new(model::Partition::open(name, vec![node.into()], false)),
        });
    }
    s
}

#[test]
fn a_job_of_two_partitions_starts_in_the_first_where_it_fits() {
    let mut s = two_partitions();
    submit(&mut s, 1, |j| j.cpus_per_task = 2);
    // Job 2 lists p then q: p is full, q is free.
    submit(&mut s, 2, |j| {
        j.cpus_per_task = 2;
        j.more_partitions = vec!["q".into()];
    });
    // Job 3 lists q then p: both are taken by then.
    submit(&mut s, 3, |j| {
        j.partition = "q".into();
        j.more_partitions = vec!["p".into()];
    });
    let plan = schedule(&s, 100, &config(Policy::Easy));
    assert_eq!(
        render(&plan),
        "start 1 n1:c2m0g[]\nstart 2 n2:c2m0g[] in q\npend 3 Resources\n"
    );
    // Applied, job 2 runs in q and keeps p as the other partition of its list.
    plan.apply(&mut s, 100);
    let two = s.job(2).unwrap();
    assert_eq!(
        (
            two.spec.partition.as_str(),
            two.spec.more_partitions.clone()
        ),
        ("q", vec!["p".to_string()])
    );
    assert_eq!(two.partition_shown(), "q");
    let three = s.job(3).unwrap();
    assert_eq!(three.partition_shown(), "q,p");
    assert!(three.in_partition("p") && !two.in_partition("p"));
}

#[test]
fn a_job_of_two_partitions_waits_only_while_both_are_down() {
    let mut s = two_partitions();
    submit(&mut s, 1, |j| j.more_partitions = vec!["q".into()]);
    let take_down = |s: &mut ClusterState, name: &str| {
        let mut down = s.partition(name).unwrap().clone();
        down.state = model::config::PartitionState::Down;
        s.apply(&Event::PartitionSet {
            partition: Box::new(down),
        });
    };
    take_down(&mut s, "p");
    let plan = schedule(&s, 100, &config(Policy::Easy));
    assert_eq!(render(&plan), "start 1 n2:c1m0g[] in q\n");
    take_down(&mut s, "q");
    let plan = schedule(&s, 100, &config(Policy::Easy));
    assert_eq!(render(&plan), "pend 1 PartitionDown\n");
}

#[test]
fn gpus_of_a_job_spread_over_its_nodes_with_the_larger_shares_first() {
    let mut s = cluster(&[("n1", 8, 1000, 4), ("n2", 8, 1000, 4)]);
    submit(&mut s, 1, |j| {
        j.num_nodes = 2;
        j.num_tasks = 2;
        j.gpus = 7;
    });
    // The GPU the first job leaves is the second's.
    submit(&mut s, 2, |j| j.gpus = 1);
    let plan = schedule(&s, 100, &config(Policy::Easy));
    assert_eq!(
        render(&plan),
        "start 1 n1:c1m0g[0, 1, 2, 3] n2:c1m0g[0, 1, 2]\nstart 2 n2:c1m0g[3]\n"
    );
}

#[test]
fn an_exclusive_job_gets_every_gpu_of_its_node() {
    let mut s = cluster(&[("n1", 2, 1000, 4)]);
    submit(&mut s, 1, |j| {
        j.gpus = 1;
        j.exclusive = true;
    });
    let plan = schedule(&s, 100, &config(Policy::Easy));
    assert_eq!(render(&plan), "start 1 n1:c2m0g[0, 1, 2, 3]\n");
}

/// Submits the components of a heterogeneous job, `first` on, each changed by its `f`.
fn submit_het(state: &mut ClusterState, first: u32, components: &[&dyn Fn(&mut JobSpec)]) {
    let count = components.len() as u32;
    for (offset, f) in components.iter().enumerate() {
        let id = first + offset as u32;
        submit(state, id, |j| f(j));
        let mut job = state.job(id).unwrap().clone();
        job.het = Some(model::job::HetJob {
            leader: first,
            offset: offset as u32,
            count,
        });
        state.insert_job(job);
    }
}

#[test]
fn a_heterogeneous_job_starts_whole_or_not_at_all() {
    let mut s = cluster(&[("n1", 4, 1000, 0), ("n2", 2, 1000, 0)]);
    // Components of 4 and 2 CPUs: they fit together.
    submit_het(
        &mut s,
        1,
        &[&|j| j.cpus_per_task = 4, &|j| j.cpus_per_task = 2],
    );
    let plan = schedule(&s, 100, &config(Policy::Easy));
    assert_eq!(render(&plan), "start 1 n1:c4m0g[]\nstart 2 n2:c2m0g[]\n");

    // Components of 4 and 4 CPUs: the second never fits beside the first, so neither
    // starts, and the room stays for job 5 behind them.
    let mut s = cluster(&[("n1", 4, 1000, 0), ("n2", 2, 1000, 0)]);
    submit_het(
        &mut s,
        3,
        &[&|j| j.cpus_per_task = 2, &|j| j.cpus_per_task = 4],
    );
    let mut s2 = s.clone();
    submit(&mut s2, 5, |j| j.cpus_per_task = 4);
    let plan = schedule(&s2, 100, &config(Policy::Easy));
    assert_eq!(
        render(&plan),
        "start 5 n1:c4m0g[]\npend 3 Resources\npend 4 Resources\n"
    );
    // Held, the leader holds its components back too.
    let mut leader = s.job(3).unwrap().clone();
    leader.held = true;
    s.insert_job(leader.clone());
    assert_eq!(render(&schedule(&s, 100, &config(Policy::Easy))), "");
    // Past its deadline, the leader is cancelled (its end takes the others).
    leader.held = false;
    leader.spec.details.deadline = 50;
    s.insert_job(leader);
    let plan = schedule(&s, 100, &config(Policy::Easy));
    assert_eq!(
        plan.cancels,
        [Cancel {
            job_id: 3,
            reason: Reason::DeadLine
        }]
    );
}
