//! Data-driven tests of where jobs land: a small cluster and queue in, the rendered
//! starts out (`start JOB NODE[GPUS]`). Best fit by free GPUs across nodes, NVLink and
//! NUMA locality on a node, CPU-only jobs kept off free GPUs, `--constraint`,
//! exclusive partitions, `-N min-max`, and the fragmentation index.

use super::*;
use crate::tests::submit;
use model::{Config, Event, GpuDevice, Node};

/// A node: name, CPUs, GPUs as `(numa, nvlink)` per GPU, features.
struct N<'a>(&'a str, u32, Vec<(u32, u32)>, &'a [&'a str]);

/// `count` GPUs with the default topology (half per NUMA node, a domain per NUMA).
fn default_gpus(count: u32) -> Vec<(u32, u32)> {
    (0..count)
        .map(|i| {
            let g = GpuDevice::with_default_topology(i, count, "h100");
            (g.numa, g.nvlink)
        })
        .collect()
}

fn cluster(nodes: &[N]) -> ClusterState {
    let config = Config::parse("[[partitions]]\nname = \"p\"\nnodes = \"ALL\"\n", "t").unwrap();
    let mut list = Vec::new();
    for N(name, cpus, gpus, features) in nodes {
        let gpus = gpus
            .iter()
            .enumerate()
            .map(|(i, &(numa, nvlink))| GpuDevice {
                index: i as u32,
                gpu_type: "h100".into(),
                uuid: String::new(),
                numa,
                nvlink,
                whole: None,
            })
            .collect();
        let mut n = Node::from_config(name, *cpus, 100_000, gpus);
        n.features = features.iter().map(|f| f.to_string()).collect();
        n.health = model::NodeHealth::Up;
        list.push(n);
    }
    let mut parts = config.partition_list();
    parts[0].nodes = list.iter().map(|n| n.name.clone()).collect();
    ClusterState::new(list, parts)
}

/// The cluster a config declares, every node up.
fn up_cluster(text: &str) -> (ClusterState, Config) {
    let config = Config::parse(text, "t").unwrap();
    let mut nodes = config.node_list();
    for n in &mut nodes {
        n.health = model::NodeHealth::Up;
    }
    (ClusterState::new(nodes, config.partition_list()), config)
}

fn gpus(state: &mut ClusterState, id: u32, n: u32) {
    submit(state, id, |j| j.gpus_per_node = n);
}

/// Starts job `id` (already submitted) on `node` holding `gpus`.
fn run_on(state: &mut ClusterState, id: u32, node: &str, gpus: &[u32]) {
    state.apply(&Event::JobStarted {
        job_id: id,
        alloc: Allocation {
            nodes: vec![model::NodeAllocation {
                node: node.into(),
                cpus: 1,
                mem_mb: 0,
                gpus: gpus.to_vec(),
                cpu_ids: Vec::new(),
            }],
        },
        time: 0,
        stdout_path: String::new(),
        stderr_path: String::new(),
    });
}

/// The plan's starts, one per line: `start JOB NODE[GPUS] ...`; pending jobs as
/// `pend JOB REASON`.
fn render(plan: &Plan) -> String {
    let mut out = String::new();
    for s in &plan.starts {
        let nodes: Vec<String> = s
            .alloc
            .nodes
            .iter()
            .map(|n| format!("{}{:?}", n.node, n.gpus))
            .collect();
        out.push_str(&format!("start {} {}\n", s.job_id, nodes.join(" ")));
    }
    for (id, p) in &plan.pending {
        out.push_str(&format!("pend {id} {}\n", p.reason));
    }
    out
}

fn pass(state: &ClusterState) -> String {
    render(&schedule(state, 100, &SchedConfig::default()))
}

#[test]
fn small_gpu_jobs_pack_onto_the_fullest_node_that_fits() {
    // g1 is idle; g2 runs a 5-GPU job (GPUs 0-4). First fit would put the 2-GPU job
    // on g1 and leave no whole node for the 8-GPU job; best fit puts it on g2 (3
    // free), inside NVLink domain 4-7, and the 8-GPU job gets g1.
    let mut s = cluster(&[
        N("g1", 16, default_gpus(8), &[]),
        N("g2", 16, default_gpus(8), &[]),
    ]);
    gpus(&mut s, 1, 5);
    run_on(&mut s, 1, "g2", &[0, 1, 2, 3, 4]);
    gpus(&mut s, 2, 2);
    gpus(&mut s, 3, 8);
    assert_eq!(
        pass(&s),
        "start 2 g2[5, 6]\nstart 3 g1[0, 1, 2, 3, 4, 5, 6, 7]\n"
    );
}

#[test]
fn a_stream_of_small_jobs_fills_one_node_before_the_next() {
    let mut s = cluster(&[
        N("g1", 16, default_gpus(8), &[]),
        N("g2", 16, default_gpus(8), &[]),
        N("g3", 16, default_gpus(8), &[]),
    ]);
    for (id, n) in [(1, 1), (2, 2), (3, 1), (4, 4)] {
        gpus(&mut s, id, n);
    }
    gpus(&mut s, 5, 8);
    gpus(&mut s, 6, 8);
    assert_eq!(
        pass(&s),
        "start 1 g1[0]\nstart 2 g1[1, 2]\nstart 3 g1[3]\nstart 4 g1[4, 5, 6, 7]\n\
         start 5 g2[0, 1, 2, 3, 4, 5, 6, 7]\nstart 6 g3[0, 1, 2, 3, 4, 5, 6, 7]\n"
    );
}

#[test]
fn gpus_on_a_node_stay_within_one_nvlink_domain() {
    // The worked example of `profile`: domains 0-3 and 4-7, GPUs 0 and 4 busy.
    let mut s = cluster(&[N("g1", 16, default_gpus(8), &[])]);
    gpus(&mut s, 1, 1);
    run_on(&mut s, 1, "g1", &[0]);
    gpus(&mut s, 2, 1);
    run_on(&mut s, 2, "g1", &[4]);
    gpus(&mut s, 3, 2);
    gpus(&mut s, 4, 1);
    gpus(&mut s, 5, 3);
    assert_eq!(
        pass(&s),
        "start 3 g1[1, 2]\nstart 4 g1[3]\nstart 5 g1[5, 6, 7]\n"
    );
    // A 4-GPU job instead of the last two spreads over the fewest domains.
    let mut s = cluster(&[N("g1", 16, default_gpus(8), &[])]);
    for (id, g) in [(1, 0), (2, 4), (3, 1)] {
        gpus(&mut s, id, 1);
        run_on(&mut s, id, "g1", &[g]);
    }
    gpus(&mut s, 4, 4);
    // Free: 2,3 | 5,6,7. The fullest domain whole, the one GPU left from the other.
    assert_eq!(pass(&s), "start 4 g1[2, 5, 6, 7]\n");
}

#[test]
fn without_a_domain_large_enough_the_gpus_stay_on_one_numa_node() {
    // NVLink pairs {0,1} {2,3} {4,5} {6,7}; NUMA 0: 0-3, NUMA 1: 4-7. GPUs 0, 2 and 4
    // busy: free 1 | 3 | 5 | 6,7. Three GPUs fit in no pair, in NUMA 1 only.
    let topo: Vec<(u32, u32)> = (0..8).map(|i| (i / 4, i / 2)).collect();
    let busy = |s: &mut ClusterState| {
        for (id, g) in [(1, 0), (2, 2), (3, 4)] {
            gpus(s, id, 1);
            run_on(s, id, "g1", &[g]);
        }
    };
    let mut s = cluster(&[N("g1", 16, topo.clone(), &[])]);
    busy(&mut s);
    gpus(&mut s, 4, 3);
    assert_eq!(pass(&s), "start 4 g1[5, 6, 7]\n");
    // Four fit in no NUMA node: the fewest pairs, the fullest first (6,7), then 1, 3.
    let mut s = cluster(&[N("g1", 16, topo, &[])]);
    busy(&mut s);
    gpus(&mut s, 4, 4);
    assert_eq!(pass(&s), "start 4 g1[1, 3, 6, 7]\n");
}

#[test]
fn cpu_only_jobs_prefer_nodes_without_free_gpus() {
    let mut s = cluster(&[
        N("g1", 16, default_gpus(8), &[]),
        N("g2", 16, default_gpus(2), &[]),
        N("c1", 4, Vec::new(), &[]),
    ]);
    submit(&mut s, 1, |j| j.cpus_per_task = 4);
    // c1 is full now: the next CPU job takes the node with the fewest free GPUs.
    submit(&mut s, 2, |j| j.cpus_per_task = 4);
    gpus(&mut s, 3, 8);
    assert_eq!(
        pass(&s),
        "start 1 c1[]\nstart 2 g2[]\nstart 3 g1[0, 1, 2, 3, 4, 5, 6, 7]\n"
    );
}

#[test]
fn constraints_pick_nodes_with_the_features() {
    let mut s = cluster(&[
        N("n1", 4, Vec::new(), &["a100", "ib"]),
        N("n2", 4, Vec::new(), &["h100", "ib"]),
        N("n3", 4, Vec::new(), &["h100"]),
    ]);
    submit(&mut s, 1, |j| j.constraint = "h100&ib".into());
    submit(&mut s, 2, |j| j.constraint = "(a100|h100)&ib".into());
    submit(&mut s, 3, |j| {
        j.constraint = "h100".into();
        j.num_nodes = 2;
    });
    submit(&mut s, 4, |j| j.constraint = "a100&h100".into());
    assert_eq!(
        pass(&s),
        "start 1 n2[]\nstart 2 n1[]\nstart 3 n2[] n3[]\npend 4 Resources\n"
    );
}

#[test]
fn exclusive_partitions_give_whole_nodes() {
    let mut s = cluster(&[N("n1", 4, Vec::new(), &[]), N("n2", 4, Vec::new(), &[])]);
    s.partitions[0].oversubscribe = model::config::OverSubscribe::Exclusive;
    for id in 1..=3 {
        submit(&mut s, id, |j| j.cpus_per_task = 1);
    }
    let plan = schedule(&s, 100, &SchedConfig::default());
    let cpus: Vec<(u32, &str, u32)> = plan
        .starts
        .iter()
        .map(|st| {
            (
                st.job_id,
                st.alloc.nodes[0].node.as_str(),
                st.alloc.nodes[0].cpus,
            )
        })
        .collect();
    assert_eq!(cpus, vec![(1, "n1", 4), (2, "n2", 4)]);
    assert_eq!(plan.pending[&3].reason, Reason::Resources);
}

#[test]
fn fragmentation_index_of_the_worked_example() {
    let nodes = || {
        (1..=4)
            .map(|i| N(["g1", "g2", "g3", "g4"][i - 1], 16, default_gpus(8), &[]))
            .collect::<Vec<_>>()
    };
    let mut s = cluster(&nodes());
    assert_eq!(fragmentation::gpu_fragmentation(&s), 0.0);
    // Spread: a 2-GPU job on g1, a 5-GPU job on g2.
    gpus(&mut s, 1, 2);
    run_on(&mut s, 1, "g1", &[0, 1]);
    gpus(&mut s, 2, 5);
    run_on(&mut s, 2, "g2", &[0, 1, 2, 3, 4]);
    let spread = fragmentation::gpu_fragmentation(&s);
    assert!((spread - (1.0 - 16.0 / 25.0)).abs() < 1e-9, "{spread}");
    assert_eq!(
        fragmentation::largest_free_block(&s, ""),
        Some((8, "g3".to_string()))
    );
    // Packed: both on g1.
    let mut s = cluster(&nodes());
    gpus(&mut s, 1, 2);
    run_on(&mut s, 1, "g1", &[0, 1]);
    gpus(&mut s, 2, 5);
    run_on(&mut s, 2, "g1", &[2, 3, 4, 5, 6]);
    let packed = fragmentation::gpu_fragmentation(&s);
    assert!((packed - (1.0 - 24.0 / 25.0)).abs() < 1e-9, "{packed}");
    // Everything busy: nothing free, nothing fragmented.
    let mut s = cluster(&nodes()[..1]);
    gpus(&mut s, 1, 8);
    run_on(&mut s, 1, "g1", &[0, 1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(fragmentation::gpu_fragmentation(&s), 0.0);
    assert_eq!(fragmentation::largest_free_block(&s, ""), None);
}

#[test]
fn the_scheduler_keeps_fragmentation_low() {
    // 1-4 GPU jobs on 4 idle 8-GPU nodes, one pass: each goes to the fullest node
    // that fits it, so g4 stays whole.
    let mut s = cluster(&[
        N("g1", 64, default_gpus(8), &[]),
        N("g2", 64, default_gpus(8), &[]),
        N("g3", 64, default_gpus(8), &[]),
        N("g4", 64, default_gpus(8), &[]),
    ]);
    for (id, n) in [1, 3, 2, 4, 1, 1, 2, 3, 1].into_iter().enumerate() {
        gpus(&mut s, id as u32 + 1, n);
    }
    let plan = schedule(&s, 100, &SchedConfig::default());
    for st in &plan.starts {
        s.apply(&Event::JobStarted {
            job_id: st.job_id,
            alloc: st.alloc.clone(),
            time: 100,
            stdout_path: String::new(),
            stderr_path: String::new(),
        });
    }
    // 18 GPUs used: g1 8, g2 7, g3 3 (the 3-GPU job found no room on g1 or g2): 6
    // of the 14 free GPUs are stranded, g4 is whole.
    let used: Vec<usize> = s.node_usage().values().map(|u| u.gpus.len()).collect();
    assert_eq!(used, vec![8, 7, 3]);
    let f = fragmentation::gpu_fragmentation(&s);
    assert!((f - 6.0 / 14.0).abs() < 1e-9, "{f}");
}

/// Random nodes (0-10 GPUs in random NVLink domains) and random allocations taken
/// now: `free_now` offers exactly the nodes with the request free, in (free-GPU
/// bucket, node order) order, however the trees were updated; and `pick_gpus` takes
/// `n` of the free GPUs, within one NVLink domain whenever one has `n` free.
#[test]
fn free_now_and_pick_gpus_agree_with_brute_force() {
    use proptest::prelude::*;
    let node = (1u32..9, proptest::collection::vec(0u32..3, 0..11));
    proptest!(|(
        nodes in proptest::collection::vec(node, 1..8),
        takes in proptest::collection::vec((0usize..8, 0u32..4, any::<u64>()), 0..12),
        reqs in proptest::collection::vec((0u32..5, 0u32..6), 1..6),
    )| {
        let names: Vec<String> = (0..nodes.len()).map(|i| format!("n{i}")).collect();
        let specs: Vec<N> = nodes
            .iter()
            .zip(&names)
            .map(|((cpus, domains), name)| {
                N(name, *cpus, domains.iter().map(|d| (d / 2, *d)).collect(), &[])
            })
            .collect();
        let s = cluster(&specs);
        let mut profile = profile::Profile::build(&s, &[], 100);
        for (i, cpus, bits) in takes {
            let i = i % profile.slots.len();
            let free = profile.slots[i].line.now();
            let used = profile::Free {
                cpus: i64::from(cpus).min(free.cpus),
                mem_mb: 0,
                gpus: bits & free.gpus,
            };
            profile.take(i, 100, profile::FOREVER, &used);
        }
        for (cpus, gpus) in reqs {
            let req = PerNode {
                nodes: 1,
                most_nodes: 1,
                cpus,
                mem_mb: 0,
                whole_memory: false,
                mem_per_gpu_mb: 0,
                gpus,
                gpu_type: String::new(),
                exclusive: false,
            };
            let got: Vec<usize> = profile.free_now(0, &req).collect();
            let mut want: Vec<(u32, usize)> = profile
                .partition_slots(0)
                .iter()
                .copied()
                .filter(|&i| {
                    let f = profile.slots[i].line.now();
                    f.cpus >= i64::from(cpus.max(1)) && f.gpus.count_ones() >= gpus
                })
                .map(|i| {
                    let free = profile.slots[i].line.now().gpus.count_ones();
                    (free.min(9), i)
                })
                .collect();
            // Buckets: 0..=8 exact, 9 for 9-15 (the nodes here have at most 10 GPUs);
            // the partition's node order (here the slot order) within one.
            want.sort_unstable();
            let want: Vec<usize> = want.into_iter().map(|(_, i)| i).collect();
            prop_assert_eq!(&got, &want);
            for &i in &got {
                let slot = &profile.slots[i];
                let avail = slot.line.now().gpus;
                if gpus == 0 || avail.count_ones() < gpus {
                    continue;
                }
                let picked = slot.pick_gpus(avail, gpus);
                prop_assert_eq!(picked.count_ones(), gpus);
                prop_assert_eq!(picked & !avail, 0);
                let domains: Vec<u32> = slot
                    .node
                    .gpus
                    .iter()
                    .enumerate()
                    .filter(|(b, _)| picked & (1 << b) != 0)
                    .map(|(_, g)| g.nvlink)
                    .collect();
                let one_domain_fits = slot.node.gpus.iter().any(|d| {
                    slot.node
                        .gpus
                        .iter()
                        .enumerate()
                        .filter(|(b, g)| g.nvlink == d.nvlink && avail & (1 << b) != 0)
                        .count() as u32
                        >= gpus
                });
                if one_domain_fits {
                    prop_assert!(domains.iter().all(|d| *d == domains[0]), "{:?}", domains);
                }
            }
        }
    });
}

#[test]
fn a_node_range_takes_as_many_nodes_as_are_free() {
    let mut s = cluster(&[
        N("c1", 4, vec![], &[]),
        N("c2", 4, vec![], &[]),
        N("c3", 4, vec![], &[]),
        N("c4", 4, vec![], &[]),
    ]);
    // c4 is full; `-N 2-8 -n 8`: the three free nodes, the tasks spread over them.
    submit(&mut s, 1, |j| j.num_tasks = 4);
    s.apply(&Event::JobStarted {
        job_id: 1,
        alloc: Allocation {
            nodes: vec![model::NodeAllocation {
                node: "c4".into(),
                cpus: 4,
                mem_mb: 0,
                gpus: vec![],
                cpu_ids: Vec::new(),
            }],
        },
        time: 0,
        stdout_path: String::new(),
        stderr_path: String::new(),
    });
    submit(&mut s, 2, |j| {
        j.num_nodes = 2;
        j.max_nodes = 8;
        j.num_tasks = 8;
    });
    let plan = schedule(&s, 100, &SchedConfig::default());
    let alloc = &plan.starts[0].alloc;
    assert_eq!(alloc.hostlist(), "c[1-3]");
    assert_eq!(
        alloc.nodes.iter().map(|n| n.cpus).collect::<Vec<_>>(),
        [3, 3, 3]
    );
    // With c4 full and one CPU free on each of c1-c3: `-N 1-4 -n 3` takes those
    // three (one task each); `-N 2-4 -n 8` fits on no count and waits.
    s.apply(&Event::JobStarted {
        job_id: 2,
        alloc: alloc.clone(),
        time: 100,
        stdout_path: String::new(),
        stderr_path: String::new(),
    });
    submit(&mut s, 3, |j| {
        j.num_nodes = 2;
        j.max_nodes = 4;
        j.num_tasks = 8;
    });
    submit(&mut s, 4, |j| {
        j.num_nodes = 1;
        j.max_nodes = 4;
        j.num_tasks = 3;
    });
    assert_eq!(pass(&s), "start 4 c1[] c2[] c3[]\npend 3 Resources\n");
}

#[test]
fn shards_pack_on_one_shared_gpu_and_gpu_requests_never_take_them() {
    let (mut s, _) = up_cluster(
        "[[nodes]]\nnames = \"g1\"\ncpus = 16\nmemory = \"64G\"\ngpus = 3\n\
         gpu_type = \"h100\"\nshards_per_gpu = 4\nshard_gpus = 2\nwhole_shared_gpus = false\n\
         [[partitions]]\nname = \"p\"\nnodes = \"ALL\"\n",
    );
    // Devices: 0 the whole GPU; 1-4 the shards of GPU 1, 5-8 those of GPU 2.
    let shards = |n: u32| {
        move |j: &mut model::JobSpec| {
            j.gpus_per_node = n;
            j.gpu_type = model::node::SHARD.into();
        }
    };
    submit(&mut s, 1, shards(3));
    submit(&mut s, 2, shards(1));
    submit(&mut s, 3, |j| j.gpus_per_node = 1);
    submit(&mut s, 4, |j| j.gpus_per_node = 1);
    submit(&mut s, 5, shards(4));
    submit(&mut s, 6, shards(1));
    // 1 and 2 share GPU 1; an untyped GPU request gets the whole GPU, and the next
    // waits for it though shards are free; 5 takes GPU 2's four; 6 waits for a shard.
    assert_eq!(
        pass(&s),
        "start 1 g1[1, 2, 3]\nstart 2 g1[4]\nstart 3 g1[0]\nstart 5 g1[5, 6, 7, 8]\n\
         pend 4 Resources\npend 6 Priority\n"
    );
}

#[test]
fn a_shared_gpu_is_given_whole_or_as_shards_never_both() {
    let node = || {
        up_cluster(
            "[[nodes]]\nnames = \"g1\"\ncpus = 16\nmemory = \"64G\"\ngpus = 3\n\
         gpu_type = \"h100\"\nshards_per_gpu = 4\nshard_gpus = 2\n\
         [[partitions]]\nname = \"p\"\nnodes = \"ALL\"\n",
        )
        .0
    };
    let mut s = node();
    // Devices: 0 GPU 0; 1 and 2 GPUs 1 and 2 whole; 3-6 GPU 1's shards, 7-10 GPU 2's.
    let shards = |n: u32| {
        move |j: &mut model::JobSpec| {
            j.gpus_per_node = n;
            j.gpu_type = model::node::SHARD.into();
        }
    };
    submit(&mut s, 1, shards(3));
    submit(&mut s, 2, |j| j.gpus_per_node = 1);
    submit(&mut s, 3, |j| j.gpus_per_node = 1);
    submit(&mut s, 4, shards(1));
    submit(&mut s, 5, shards(1));
    // 1 takes shards of GPU 1, which is then not given whole; 2 gets the GPU that
    // cannot be shared, 3 GPU 2 whole, whose shards 5 then cannot have; 4 gets the
    // last shard of GPU 1.
    assert_eq!(
        pass(&s),
        "start 1 g1[3, 4, 5]\nstart 2 g1[0]\nstart 3 g1[2]\nstart 4 g1[6]\npend 5 Resources\n"
    );
    // With no shard taken, every GPU is given whole.
    let mut s = node();
    submit(&mut s, 6, |j| j.gpus_per_node = 3);
    submit(&mut s, 7, shards(1));
    assert_eq!(pass(&s), "start 6 g1[0, 1, 2]\npend 7 Resources\n");
}

#[test]
fn a_node_range_starts_no_wider_than_its_limits_allow() {
    let (mut s, config) = up_cluster(
        "[[nodes]]\nnames = \"c[1-4]\"\ncpus = 4\nmemory = \"8G\"\n\
         [[partitions]]\nname = \"p\"\nnodes = \"ALL\"\n\
         [[qos]]\nname = \"normal\"\nmax_tres_per_job = \"node=2\"\n",
    );
    submit(&mut s, 1, |j| {
        j.num_nodes = 1;
        j.max_nodes = 4;
        j.num_tasks = 4;
        j.qos = "normal".into();
    });
    // Four nodes are free, but the QOS allows two per job.
    let plan = schedule(&s, 100, &SchedConfig::from_config(&config));
    assert_eq!(
        plan.starts[0].alloc.hostlist(),
        "c[1-2]",
        "{}",
        render(&plan)
    );
}
