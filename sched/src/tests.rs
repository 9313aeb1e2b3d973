//! Data-driven tests of the first-fit pass: a small cluster and queue in, the rendered
//! plan out.

use super::*;
use model::{Config, Event, Job, JobSpec, JobState, Node};

fn cluster(nodes: &[(&str, u32, u64, u32)]) -> ClusterState {
    let text = String::from("[[partitions]]\nname = \"p\"\nnodes = \"ALL\"\n");
    let mut config = Config::parse(&text, "t").unwrap();
    config.nodes.clear();
    let mut list = Vec::new();
    for (name, cpus, mem, gpus) in nodes {
        let gpus = (0..*gpus)
            .map(|i| model::GpuDevice {
                index: i,
                gpu_type: "h100".into(),
                uuid: String::new(),
            })
            .collect();
        let mut n = Node::from_config(name, *cpus, *mem, gpus);
        n.health = model::NodeHealth::Up;
        list.push(n);
    }
    let mut parts = config.partition_list();
    parts[0].nodes = list.iter().map(|n| n.name.clone()).collect();
    ClusterState::new(list, parts)
}

fn submit(state: &mut ClusterState, id: u32, f: impl FnOnce(&mut JobSpec)) {
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
        out.push_str(&format!("start {}{task} {}\n", s.job_id, nodes.join(" ")));
    }
    for (id, p) in &plan.pending {
        out.push_str(&format!("pend {id} {}\n", p.reason));
    }
    out
}

#[test]
fn first_fit_in_submit_order() {
    let mut s = cluster(&[("n1", 4, 1000, 0), ("n2", 4, 1000, 0)]);
    submit(&mut s, 1, |j| j.cpus_per_task = 3);
    submit(&mut s, 2, |j| j.cpus_per_task = 3);
    submit(&mut s, 3, |j| j.cpus_per_task = 2);
    submit(&mut s, 4, |j| j.cpus_per_task = 1);
    assert_eq!(
        render(&schedule(&s, 100, &SchedConfig::default())),
        "start 1 n1:c3m0g[]\nstart 2 n2:c3m0g[]\nstart 4 n1:c1m0g[]\npend 3 Resources\n"
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
        "start 3 n1:c1m0g[]\npend 1 JobHeldUser\npend 2 BeginTime\npend 4 Dependency\npend 5 Resources\n"
    );
    s.apply(&Event::JobEnded {
        job_id: 3,
        state: JobState::Failed,
        exit_code: 1,
        exit_signal: 0,
        time: 101,
        reason: String::new(),
        cancelled_by: None,
    });
    let plan = schedule(&s, 102, &SchedConfig::default());
    assert_eq!(plan.pending[&4].reason, "DependencyNeverSatisfied");
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
