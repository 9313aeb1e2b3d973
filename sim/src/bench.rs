//! `drover-sim bench`: milliseconds per full, uncapped scheduling pass over synthetic
//! clusters and queues. Figures printed, not timed tests.
//!
//! A cluster of N nodes: 7 of 8 are CPU nodes (32 CPUs, 128 GB) in partition `cpu`,
//! 1 of 8 GPU nodes (64 CPUs, 512 GB, 8 GPUs) in partition `gpu`. Job sizes follow the
//! processor counts of the RICC trace (77% one processor, then 32, 8, 16, 4, 128,
//! 256, ... processors), spread over as many 32-CPU nodes as they need; one job in
//! eight asks for 1, 2, 4 or 8 GPUs (or two whole GPU nodes). Time limits range from
//! 10 minutes to 3 days. The cluster is first filled with running jobs whose ends
//! are spread over their limits, one in ten of them then ends (leaving holes for
//! backfill), the pending queue is submitted, and the pass is timed (best of `runs`).
//!
//! Example: `drover-sim bench --jobs 10000 --nodes 1000` prints one line with the
//! pass time, the jobs started and the jobs given a reservation.

use model::{ClusterState, Event, GpuDevice, Job, JobSpec, Node, NodeHealth, Partition, Time};
use sched::{Policy, SchedConfig};
use std::time::Instant;

#[derive(clap::Args, Debug, Clone)]
pub struct Options {
    /// Pending jobs (with --nodes; default: the two standard sizes).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Nodes.
    #[arg(long)]
    pub nodes: Option<usize>,
    /// fcfs, easy or conservative.
    #[arg(long, default_value = "easy")]
    pub policy: String,
    /// Passes timed per size; the best is printed.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
}

/// A deterministic generator (splitmix64) with a fixed seed: same figures' inputs
/// every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// An index drawn with the given weights.
    fn pick(&mut self, weights: &[u64]) -> usize {
        let total: u64 = weights.iter().sum();
        let mut x = self.below(total);
        for (i, w) in weights.iter().enumerate() {
            if x < *w {
                return i;
            }
            x -= w;
        }
        weights.len() - 1
    }
}

/// Processor counts of the RICC trace with their frequencies (the 15 most common).
const RICC_PROCS: [(u32, u64); 15] = [
    (1, 346_268),
    (32, 30_079),
    (8, 23_929),
    (16, 12_592),
    (4, 8_843),
    (128, 6_050),
    (256, 5_128),
    (64, 3_146),
    (80, 2_413),
    (512, 945),
    (192, 827),
    (160, 809),
    (2, 797),
    (3, 674),
    (72, 648),
];

/// Time limits (minutes) and their weights.
const LIMITS: [(u32, u64); 6] = [
    (10, 20),
    (60, 30),
    (240, 20),
    (720, 15),
    (1440, 10),
    (4320, 5),
];

const NOW: Time = 1_000_000;

fn cluster(nodes: usize) -> ClusterState {
    let mut list = Vec::with_capacity(nodes);
    let (mut cpu, mut gpu) = (Vec::new(), Vec::new());
    for i in 0..nodes {
        let name = format!("n{i:05}");
        let node = if i % 8 == 7 {
            let gpus = (0..8)
                .map(|g| GpuDevice::with_default_topology(g, 8, "h100"))
                .collect();
            gpu.push(name.clone());
            Node::from_config(&name, 64, 512 * 1024, gpus)
        } else {
            cpu.push(name.clone());
            Node::from_config(&name, 32, 128 * 1024, Vec::new())
        };
        let mut node = node;
        node.health = NodeHealth::Up;
        list.push(node);
    }
    ClusterState::new(
        list,
        vec![
            Partition::open("cpu", cpu, true),
            Partition::open("gpu", gpu, false),
        ],
    )
}

fn random_job(rng: &mut Rng, id: u32, submit: Time, cpu_nodes: usize) -> Job {
    let limit = LIMITS[rng.pick(&LIMITS.map(|l| l.1))].0;
    let mut spec = JobSpec {
        user: format!("user{}", rng.below(200)),
        account: format!("acct{}", rng.below(20)),
        num_tasks: 1,
        cpus_per_task: 1,
        num_nodes: 1,
        ..JobSpec::default()
    };
    if rng.below(8) == 0 {
        spec.partition = "gpu".into();
        spec.gpu_type = "h100".into();
        match rng.pick(&[40, 20, 20, 15, 5]) {
            4 => {
                spec.num_nodes = 2;
                spec.gpus_per_node = 8;
                spec.num_tasks = 16;
                spec.cpus_per_task = 8;
            }
            g => {
                spec.gpus_per_node = 1 << g;
                spec.cpus_per_task = 8 * (1 << g);
            }
        }
        spec.mem_per_node_mb = u64::from(spec.gpus_per_node) * 32 * 1024;
    } else {
        spec.partition = "cpu".into();
        let procs = RICC_PROCS[rng.pick(&RICC_PROCS.map(|p| p.1))].0;
        let nodes = procs.div_ceil(32).min(cpu_nodes.max(1) as u32);
        spec.num_nodes = nodes;
        spec.num_tasks = procs;
        spec.mem_per_cpu_mb = 2048;
    }
    Job::new(id, spec, submit, Some(limit))
}

/// A filled cluster with `pending` jobs waiting.
pub fn scenario(pending: usize, nodes: usize) -> ClusterState {
    let mut rng = Rng(0x00d1_0e55_5eed);
    let mut state = cluster(nodes);
    let cpu_nodes = nodes - nodes / 8;
    // Fill: submit more jobs than the cluster holds and start what fits (with
    // backfill, so that the cluster ends up nearly full).
    let mut id = 1;
    let fill = nodes * 12;
    for _ in 0..fill {
        let job = random_job(&mut rng, id, NOW - 100_000, cpu_nodes);
        state.apply(&Event::JobSubmitted { job: Box::new(job) });
        id += 1;
    }
    let mut config = SchedConfig::default();
    config.backfill.policy = Policy::Easy;
    let plan = sched::schedule(&state, NOW, &config);
    for start in plan.starts {
        let limit = state.job(start.job_id).and_then(|j| j.time_limit_secs());
        let ran = rng.below(limit.unwrap_or(3600).max(1) as u64) as Time;
        state.apply(&Event::JobStarted {
            job_id: start.job_id,
            alloc: start.alloc,
            time: NOW - ran,
            stdout_path: String::new(),
            stderr_path: String::new(),
        });
    }
    // What did not start is dropped, and one running job in ten has just ended (holes
    // for backfill); the measured queue comes after.
    let unstarted: Vec<u32> = state.pending_jobs().map(|j| j.id).collect();
    for id in unstarted {
        state.remove_job(id);
    }
    let ended: Vec<u32> = state.running_jobs().map(|j| j.id).step_by(10).collect();
    for id in ended {
        state.remove_job(id);
    }
    for i in 0..pending {
        let job = random_job(&mut rng, id, NOW - 50_000 + i as Time, cpu_nodes);
        state.apply(&Event::JobSubmitted { job: Box::new(job) });
        id += 1;
    }
    state
}

/// Times passes of each size; returns the report.
pub fn run(options: &Options) -> String {
    let sizes = match (options.jobs, options.nodes) {
        (Some(j), Some(n)) => vec![(j, n)],
        (Some(j), None) => vec![(j, j / 10)],
        (None, Some(n)) => vec![(n * 10, n)],
        (None, None) => vec![(10_000, 1_000), (100_000, 10_000)],
    };
    let policy = Policy::parse(&options.policy).unwrap_or_default();
    let mut config = SchedConfig::default();
    config.backfill.policy = policy;
    let mut out = String::new();
    for (jobs, nodes) in sizes {
        let state = scenario(jobs, nodes.max(8));
        let running = state.running_jobs().count();
        let busy: u64 = state.node_usage().values().map(|u| u64::from(u.cpus)).sum();
        let total: u64 = state.nodes.values().map(|n| u64::from(n.cpus)).sum();
        let mut best = f64::INFINITY;
        let mut plan = None;
        for _ in 0..options.runs.max(1) {
            let t = Instant::now();
            let p = sched::schedule(&state, NOW, &config);
            best = best.min(t.elapsed().as_secs_f64() * 1000.0);
            plan = Some(p);
        }
        let plan = plan.expect("at least one run");
        let reserved = plan
            .pending
            .values()
            .filter(|p| p.planned_start > 0)
            .count();
        out.push_str(&format!(
            "{policy} pass: {jobs} pending x {nodes} nodes ({running} running, {:.0}% of CPUs busy): {best:.1} ms \
             ({} started, {reserved} reserved, {} waiting; {:.2} us per pending job)\n",
            100.0 * busy as f64 / total.max(1) as f64,
            plan.starts.len(),
            plan.pending.len(),
            best * 1000.0 / jobs.max(1) as f64,
            policy = policy.name(),
        ));
    }
    out
}
