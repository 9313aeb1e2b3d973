//! How a step's tasks are laid out over its job's nodes, as Slurm's block distribution
//! does for `srun` inside an allocation: the step takes the first `-N` nodes of the job
//! (without `-N`, as many as it has tasks, up to all of them), gives each node
//! `--ntasks-per-node` tasks or an even share with the remainder on the first nodes, and
//! numbers the tasks node after node.
//!
//! Worked example: a job on `n1,n2,n3` with 4 CPUs each. `srun -n 5` takes all three
//! nodes: n1 runs tasks 0-1, n2 tasks 2-3, n3 task 4. `srun -n 5 -N 2` runs 0-2 on n1
//! and 3-4 on n2. `srun -n 2 -c 4` runs one task on each of n1 and n2. `srun -n 9`
//! needs 9 CPUs of 12 and is laid out 3,3,3; `srun -n 13` is refused: more processors
//! than the job has, unless `-O` (overcommit) lets tasks share CPUs.
//!
//! `-m` changes the numbering and the shares (`distribution::TaskLayout`): `srun -n 5
//! -m cyclic` runs tasks 0,3 on n1, 1,4 on n2 and 2 on n3; `-m plane=2` runs 0-1 and
//! 4 on n1, 2-3 on n2 (two nodes, 5 tasks: n3 gets none and is refused, as a step must
//! use each of its nodes); `-N 2 -n 5 -m pack` runs 0-3 on n1 (its 4 CPUs) and 4 on n2.

use crate::distribution::TaskLayout;

/// Slurm's answer to `srun -r N` beyond its job's last node (ESLURM_INVALID_RELATIVE).
pub const INVALID_RELATIVE: &str = "Invalid relative value";

/// Slurm's answer to a step its job's nodes cannot take yet (ESLURM_NODES_BUSY): the
/// controller's refusal, on which `srun` waits and asks again.
pub const NODES_BUSY: &str = "Requested nodes are busy";

/// What `srun` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StepRequest {
    /// `-n`; 0: one task per node of the step.
    pub num_tasks: u32,
    /// `-N`; 0: as many nodes as tasks, up to the job's.
    pub num_nodes: u32,
    /// `--ntasks-per-node`; 0: an even share.
    pub ntasks_per_node: u32,
    /// `-c`; 0: one.
    pub cpus_per_task: u32,
    /// `-O`: more tasks than the job's CPUs on a node may run there.
    pub overcommit: bool,
    /// `--exclusive`: the step takes only the CPUs its tasks need, none that another
    /// running step of the job holds, and waits for them (`exclusive_layout`).
    pub exclusive: bool,
    /// `-m`'s node part: how the tasks are shared out and numbered.
    pub layout: TaskLayout,
}

impl StepRequest {
    /// A task's CPUs asked through `--cpus-per-gpu` (which `-c` cannot join) stop at
    /// the most one of the job's nodes has (`cpus`, per node): the job took those
    /// CPUs for its GPUs, spread over its nodes as Slurm's cons_tres spreads them.
    ///
    /// Example: `srun --gpus=2 --cpus-per-gpu=8` on 8-CPU nodes gets two nodes and
    /// 16 CPUs, and its one task runs with the 8 of its node.
    pub fn within_a_node(mut self, cpus_per_gpu: u32, cpus: &[u32]) -> StepRequest {
        if cpus_per_gpu > 0
            && let Some(&most) = cpus.iter().max()
        {
            self.cpus_per_task = self.cpus_per_task.min(most.max(1));
        }
        self
    }
}

/// Why a step cannot run in its job, in Slurm's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepLayoutError {
    #[error("Only allocated {allocated} nodes asked for {asked}")]
    TooManyNodes { asked: u32, allocated: u32 },
    #[error("More processors requested than permitted")]
    TooManyCpus,
    #[error("Requested node configuration is not available")]
    Impossible,
}

/// A step's tasks, node by node: (index of the node in the job's allocation, global
/// task ids), in node order.
pub type Layout = Vec<(usize, Vec<u32>)>;

/// The tasks of each node of the step: (index of the node in the job's allocation,
/// global task ids), in node order. `cpus` are the job's CPUs on each of its nodes.
pub fn layout(req: StepRequest, cpus: &[u32]) -> Result<Layout, StepLayoutError> {
    let allocated = cpus.len() as u32;
    if allocated == 0 {
        return Err(StepLayoutError::Impossible);
    }
    if req.num_nodes > allocated {
        return Err(StepLayoutError::TooManyNodes {
            asked: req.num_nodes,
            allocated,
        });
    }
    let per_task = req.cpus_per_task.max(1);
    let num_nodes = node_count(req, allocated);
    let num_tasks = match (req.num_tasks, req.ntasks_per_node) {
        (0, 0) => num_nodes,
        (0, per) => per * num_nodes,
        (n, _) => n,
    };
    if num_tasks < num_nodes {
        return Err(StepLayoutError::Impossible);
    }
    let capacity = |i: usize| {
        if req.overcommit {
            u32::MAX
        } else {
            cpus[i] / per_task
        }
    };
    let counts = match req.layout {
        TaskLayout::Plane(size) => (0..num_tasks).fold(vec![0; num_nodes as usize], |mut c, t| {
            c[((t / size) % num_nodes) as usize] += 1;
            c
        }),
        TaskLayout::Pack if req.ntasks_per_node == 0 => {
            // Fill each node, leaving one task for each node after it.
            let mut left = num_tasks;
            let mut counts: Vec<u32> = (0..num_nodes as usize)
                .map(|i| {
                    let later = num_nodes - i as u32 - 1;
                    let count = capacity(i).min(left - later).max(1);
                    left -= count;
                    count
                })
                .collect();
            // What no node holds goes to the last, which is then too full.
            if let Some(last) = counts.last_mut() {
                *last += left;
            }
            counts
        }
        _ => {
            let mut counts = even_counts(num_tasks, num_nodes, req.ntasks_per_node);
            // With --ntasks-per-node, the last nodes get what is left.
            let mut left = num_tasks;
            for c in &mut counts {
                *c = (*c).min(left);
                left -= *c;
            }
            counts
        }
    };
    if counts.iter().sum::<u32>() != num_tasks || counts.contains(&0) {
        return Err(StepLayoutError::Impossible);
    }
    if counts.iter().enumerate().any(|(i, c)| *c > capacity(i)) {
        return Err(StepLayoutError::TooManyCpus);
    }
    Ok(number_tasks(&counts, deal(req.layout))
        .into_iter()
        .enumerate()
        .collect())
}

/// How many of the `allocated` nodes a step takes: `-N`, else as many as its tasks
/// need, up to all of them (the first ones `layout` is given).
pub fn node_count(req: StepRequest, allocated: u32) -> u32 {
    match (req.num_nodes, req.num_tasks, req.ntasks_per_node) {
        (0, 0, _) => 1,
        (0, tasks, 0) => tasks.min(allocated),
        (0, tasks, per) => tasks.div_ceil(per).min(allocated),
        (n, _, _) => n,
    }
}

/// How many tasks `layout` numbers on a node before it goes on to the next.
fn deal(layout: TaskLayout) -> u32 {
    match layout {
        TaskLayout::Block | TaskLayout::Pack => u32::MAX,
        TaskLayout::Cyclic => 1,
        TaskLayout::Plane(size) => size,
    }
}

/// Numbers the tasks of nodes that run `counts` tasks: `deal` at a time to each node
/// in turn, round after round, until every node has its count (`u32::MAX`: node after
/// node; 1: cyclic).
fn number_tasks(counts: &[u32], deal: u32) -> Vec<Vec<u32>> {
    let mut ids: Vec<Vec<u32>> = counts
        .iter()
        .map(|c| Vec::with_capacity(*c as usize))
        .collect();
    let total: u32 = counts.iter().sum();
    let mut next = 0;
    while next < total {
        for (node, count) in counts.iter().enumerate() {
            let given = ids[node].len() as u32;
            let take = deal.min(count - given);
            ids[node].extend(next..next + take);
            next += take;
        }
    }
    ids
}

/// `-m arbitrary`: the tasks of each of the step's `nodes` when the node of every task is
/// given (`task_nodes`, from `-w` or `SLURM_HOSTFILE`): task `t` runs on `task_nodes[t]`.
/// `cpus` are the job's CPUs on each of `nodes`; each node must get a task, and no more
/// than its CPUs hold (unless `-O`).
///
/// Example: `n2,n1,n1` on the nodes `n1,n2` runs tasks 1,2 on n1 and task 0 on n2.
pub fn arbitrary_layout(
    req: StepRequest,
    nodes: &[&str],
    cpus: &[u32],
    task_nodes: &[String],
) -> Result<Layout, StepLayoutError> {
    if req.num_tasks != 0 && req.num_tasks as usize != task_nodes.len() {
        return Err(StepLayoutError::Impossible);
    }
    let per_task = req.cpus_per_task.max(1);
    let mut layout = Vec::with_capacity(nodes.len());
    for (i, node) in nodes.iter().enumerate() {
        let tasks: Vec<u32> = (0..task_nodes.len() as u32)
            .filter(|t| task_nodes[*t as usize] == *node)
            .collect();
        if tasks.is_empty() {
            return Err(StepLayoutError::Impossible);
        }
        if !req.overcommit && tasks.len() as u32 > cpus[i] / per_task {
            return Err(StepLayoutError::TooManyCpus);
        }
        layout.push((i, tasks));
    }
    if layout.iter().map(|(_, t)| t.len()).sum::<usize>() != task_nodes.len() {
        return Err(StepLayoutError::Impossible);
    }
    Ok(layout)
}

/// The job's nodes a step may use, by index in the job's order (`job_nodes`): those
/// `-w` names first (each must be the job's, and not `-x`'s), then the others that
/// `-x` does not name.
///
/// Example: on `n[1-3]`, `-w n3` gives `[2, 0, 1]` (with `-N` unset the step then runs
/// on n3 alone), `-x n1` gives `[1, 2]`, and `-w n4` is refused.
pub fn step_candidates(
    job_nodes: &[&str],
    nodelist: &[String],
    exclude: &[String],
) -> Result<Vec<usize>, StepLayoutError> {
    let named = |list: &[String], n: &str| list.iter().any(|m| m == n);
    if nodelist
        .iter()
        .any(|n| !job_nodes.contains(&n.as_str()) || named(exclude, n))
    {
        return Err(StepLayoutError::Impossible);
    }
    let (first, rest): (Vec<usize>, Vec<usize>) = (0..job_nodes.len())
        .filter(|i| !named(exclude, job_nodes[*i]))
        .partition(|i| named(nodelist, job_nodes[*i]));
    Ok(first.into_iter().chain(rest).collect())
}

/// The CPUs of each of its job's nodes (`job_nodes`, in the job's order) that the job's
/// running steps hold. A step's CPUs are taken as spread evenly over its nodes, as
/// `layout` spreads its tasks (rounded up: a node is never counted freer than it is).
pub fn held_cpus<'a>(
    job_nodes: &[&str],
    running: impl IntoIterator<Item = &'a crate::Step>,
) -> Vec<u32> {
    let mut held = vec![0u32; job_nodes.len()];
    for step in running {
        let share = step.cpus.div_ceil((step.nodes.len() as u32).max(1));
        for node in &step.nodes {
            if let Some(i) = job_nodes.iter().position(|n| n == node) {
                held[i] = held[i].saturating_add(share);
            }
        }
    }
    held
}

/// `srun --exclusive`: the step laid out (as `layout`) on the CPUs of its job that its
/// running steps do not hold (`held`, node by node). An error: the step can never run in
/// its job; `Ok(None)`: not yet, its nodes are busy (Slurm's ESLURM_NODES_BUSY).
pub fn exclusive_layout(
    req: StepRequest,
    cpus: &[u32],
    held: &[u32],
) -> Result<Option<Layout>, StepLayoutError> {
    layout(req, cpus)?;
    let per_task = req.cpus_per_task.max(1);
    let free: Vec<(usize, u32)> = cpus
        .iter()
        .zip(held)
        .enumerate()
        .map(|(i, (c, h))| (i, c.saturating_sub(*h)))
        .filter(|(_, f)| *f >= per_task)
        .collect();
    if free.is_empty() {
        return Ok(None);
    }
    let free_cpus: Vec<u32> = free.iter().map(|(_, f)| *f).collect();
    Ok(layout(req, &free_cpus)
        .ok()
        .map(|l| l.into_iter().map(|(i, tasks)| (free[i].0, tasks)).collect()))
}

/// A resource limit srun and sbatch pass on to the tasks and the batch script, as
/// Slurm's default PropagateResourceLimits=ALL does: each starts with the submitting
/// command's soft limit. sbatch passes them in the job's environment as Slurm's does
/// (`SLURM_RLIMIT_CORE=1024`), which the node daemon takes out and applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rlimit {
    Cpu,
    Fsize,
    Data,
    Stack,
    Core,
    Rss,
    Nproc,
    Nofile,
    Memlock,
    As,
}

impl Rlimit {
    /// Every limit srun passes on, in Linux's order.
    pub const ALL: [Rlimit; 10] = [
        Rlimit::Cpu,
        Rlimit::Fsize,
        Rlimit::Data,
        Rlimit::Stack,
        Rlimit::Core,
        Rlimit::Rss,
        Rlimit::Nproc,
        Rlimit::Nofile,
        Rlimit::Memlock,
        Rlimit::As,
    ];

    /// Its resource number in Linux's `getrlimit(2)` (`RLIMIT_CORE` is 4).
    pub fn linux_resource(self) -> u32 {
        self as u32
    }

    /// The variable sbatch passes it in (`SLURM_RLIMIT_CORE`).
    pub fn env_name(self) -> &'static str {
        match self {
            Rlimit::Cpu => "SLURM_RLIMIT_CPU",
            Rlimit::Fsize => "SLURM_RLIMIT_FSIZE",
            Rlimit::Data => "SLURM_RLIMIT_DATA",
            Rlimit::Stack => "SLURM_RLIMIT_STACK",
            Rlimit::Core => "SLURM_RLIMIT_CORE",
            Rlimit::Rss => "SLURM_RLIMIT_RSS",
            Rlimit::Nproc => "SLURM_RLIMIT_NPROC",
            Rlimit::Nofile => "SLURM_RLIMIT_NOFILE",
            Rlimit::Memlock => "SLURM_RLIMIT_MEMLOCK",
            Rlimit::As => "SLURM_RLIMIT_AS",
        }
    }

    /// The limits an environment passes on (`SLURM_RLIMIT_*`, a number of Slurm's,
    /// `U` before it when the user asked with `--propagate`), taken out of it; a value
    /// that is not a number is left out.
    pub fn take_from_env(env: &mut Vec<(String, String)>) -> Vec<(Rlimit, u64)> {
        let mut out = Vec::new();
        env.retain(|(name, value)| {
            let Some(r) = Rlimit::ALL.into_iter().find(|r| r.env_name() == name) else {
                return true;
            };
            let digits = value.strip_prefix('U').unwrap_or(value);
            if let Ok(soft) = digits.parse::<u64>() {
                out.push((r, soft));
            }
            false
        });
        out
    }
}

/// `--cpu-bind`: which of its node's step CPUs each task runs on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CpuBind {
    /// Each task its own CPUs: its `-c` of them, in task order (what Slurm's
    /// task/affinity does by default, and for `cores`, `threads`, `sockets`, `rank`,
    /// `ldoms`, here without the node's topology to go by).
    #[default]
    Own,
    /// No binding of tasks: each may run on all of the step's CPUs.
    None,
    /// Task `i` (on its node) on CPU id `list[i % len]`.
    Map(Vec<u32>),
}

impl CpuBind {
    /// Slurm's syntax: `none`, `cores`, `threads`, `sockets`, `rank`, `ldoms`,
    /// `map_cpu:0,2`, each with `quiet,`/`verbose,` (or `q`, `v`) allowed in front, or
    /// alone.
    pub fn parse(text: &str) -> Result<CpuBind, String> {
        let bad = || format!("Invalid --cpu-bind argument: {text}");
        let mut bind = CpuBind::Own;
        for part in split_outside_lists(text) {
            match part.split_once(':') {
                None if matches!(part, "q" | "quiet" | "v" | "verbose") => {}
                None if matches!(part, "none" | "no") => bind = CpuBind::None,
                None if matches!(part, "cores" | "threads" | "sockets" | "rank" | "ldoms") => {
                    bind = CpuBind::Own
                }
                Some(("map_cpu", list)) => {
                    bind = CpuBind::Map(
                        list.split(',')
                            .map(|i| i.trim().parse::<u32>().map_err(|_| bad()))
                            .collect::<Result<Vec<_>, _>>()?,
                    )
                }
                _ => return Err(bad()),
            }
        }
        Ok(bind)
    }
}

/// The words of a `--cpu-bind` value: split at commas, but a `map_cpu:` list keeps its
/// own (it comes last).
fn split_outside_lists(text: &str) -> Vec<&str> {
    match text.find("map_cpu:") {
        Some(at) => {
            let mut words: Vec<&str> = text[..at].split(',').filter(|w| !w.is_empty()).collect();
            words.push(&text[at..]);
            words
        }
        None => text.split(',').filter(|w| !w.is_empty()).collect(),
    }
}

/// The CPU ids task `local` runs on, of the step's CPUs on its node `cpus` (in order),
/// each task taking `per_task` of them: empty when it is not bound.
pub fn task_cpus(cpus: &[u32], local: u32, per_task: u32, bind: &CpuBind) -> Vec<u32> {
    if cpus.is_empty() {
        return Vec::new();
    }
    match bind {
        CpuBind::None => Vec::new(),
        CpuBind::Map(list) if !list.is_empty() => vec![list[local as usize % list.len()]],
        _ => {
            let per = per_task.max(1) as usize;
            (0..per)
                .map(|k| cpus[(local as usize * per + k) % cpus.len()])
                .collect()
        }
    }
}

/// `--gpu-bind`: which of its node's step GPUs each task sees.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum GpuBind {
    /// Every task sees all of them (the default without `--gpus-per-task`).
    #[default]
    None,
    /// Each task the GPUs on the NUMA nodes of its CPUs (`closest_gpus`); where those
    /// are not known, one each, in turn (as `single:1`).
    Closest,
    /// Each task one GPU, `n` tasks to a GPU.
    Single(u32),
    /// Task `i` (on its node) the GPU at position `list[i % len]` of the step's GPUs.
    Map(Vec<u32>),
    /// Task `i` (on its node) the GPUs whose positions are the bits of
    /// `masks[i % len]`.
    Mask(Vec<u64>),
}

impl GpuBind {
    /// Slurm's syntax: `none`, `closest`, `single:N`, `map_gpu:0,1`, `mask_gpu:0x3,0xc`
    /// (each item may end `*count`, repeated), with an optional `verbose,` in front.
    /// A list item with a character its base has not gives Slurm's two lines:
    /// `Failed to validate NaN, offending character is N`, then the argument refused,
    /// named as Slurm names it (`gpu:` and the argument).
    pub fn parse(text: &str) -> Result<GpuBind, String> {
        let bad = || format!("Invalid --gpu-bind argument: gpu:{text}");
        let t = text.strip_prefix("verbose,").unwrap_or(text);
        match t.split_once(':') {
            None if t == "none" || t == "verbose" => Ok(GpuBind::None),
            None if t == "closest" => Ok(GpuBind::Closest),
            Some(("single", n)) => n
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .map(GpuBind::Single)
                .ok_or_else(bad),
            Some(("map_gpu", list)) => bind_list(list, 10)
                .map_err(|e| format!("{e}\n{}", bad()))?
                .into_iter()
                .map(|n| u32::try_from(n).map_err(|_| bad()))
                .collect::<Result<Vec<_>, _>>()
                .map(GpuBind::Map),
            Some(("mask_gpu", list)) => bind_list(list, 16)
                .map(GpuBind::Mask)
                .map_err(|e| format!("{e}\n{}", bad())),
            _ => Err(bad()),
        }
    }
}

/// `--gpu-freq`, checked as Slurm's `tres_freq_verify_cmdline` checks it: a list of
/// a frequency (MHz, or `low`, `medium`, `high`, `highm1`), `memory=` one, and
/// `verbose`. A bad one is refused with Slurm's words, naming the argument as Slurm
/// does (`gpu:` and the argument).
///
/// ```
/// use model::step::check_gpu_freq;
/// assert!(check_gpu_freq("low").is_ok() && check_gpu_freq("1500,memory=high,verbose").is_ok());
/// assert_eq!(check_gpu_freq("blah").unwrap_err(), "Invalid --gpu-freq argument: gpu:blah");
/// ```
pub fn check_gpu_freq(text: &str) -> Result<(), String> {
    let value = |v: &str| {
        if v.starts_with(|c: char| c.is_ascii_digit()) {
            v.parse::<i64>().is_ok()
        } else {
            matches!(v, "low" | "medium" | "high" | "highm1")
        }
    };
    // Slurm checks `gpu:TEXT`, whose `;`-separated items each name a TRES (`gpu`
    // alone is known); empty items and words are skipped, as strtok skips them.
    let whole = format!("gpu:{text}");
    let good = whole.split(';').filter(|t| !t.is_empty()).all(|item| {
        item.split_once(':').is_some_and(|(tres, list)| {
            tres == "gpu"
                && !list.is_empty()
                && list.split(',').filter(|w| !w.is_empty()).all(|word| {
                    match word.split_once('=') {
                        None => value(word) || word == "verbose",
                        Some((key, v)) => key == "memory" && value(v),
                    }
                })
        })
    });
    if good {
        Ok(())
    } else {
        Err(format!("Invalid --gpu-freq argument: gpu:{text}"))
    }
}

/// Does `--cpu-bind` ask each task to report its CPUs (`verbose` or `v` among its
/// words)?
pub fn cpu_bind_verbose(text: &str) -> bool {
    split_outside_lists(text)
        .iter()
        .any(|w| matches!(*w, "v" | "verbose"))
}

/// The line a task of a `--cpu-bind=verbose` step writes to its standard error, as
/// Slurm's task/affinity does: how it is bound, its node, its task id and local id, its
/// pid, and its CPUs as a hexadecimal mask of CPU ids.
///
/// ```
/// let line = model::step::cpu_bind_report(true, "node1", 3, 1, 4242, &[2, 3]);
/// assert_eq!(line, "cpu-bind=MASK - node1, task  3  1 [4242]: mask 0xc set\n");
/// ```
pub fn cpu_bind_report(
    bound: bool,
    node: &str,
    task: u32,
    local: u32,
    pid: i32,
    cpus: &[u32],
) -> String {
    let how = if bound { "MASK" } else { "NONE" };
    let mask = hex_mask(cpus);
    format!("cpu-bind={how} - {node}, task {task:>2} {local:>2} [{pid}]: mask {mask} set\n")
}

/// Ids (CPUs, GPUs) as the hexadecimal mask Slurm's binding reports print: `[2, 3]` is
/// `0xc`; ids past 127 are left out.
fn hex_mask(ids: &[u32]) -> String {
    let bits = ids
        .iter()
        .filter(|i| **i < 128)
        .fold(0u128, |m, i| m | (1 << i));
    format!("0x{bits:x}")
}

/// Does `--gpu-bind` ask each task to report its GPUs (`verbose`, alone or first)?
pub fn gpu_bind_verbose(text: &str) -> bool {
    text == "verbose" || text.starts_with("verbose,")
}

/// The line a task of a `--gpu-bind=verbose` step writes to its standard error, as
/// Slurm's does: the GPUs it may use and the step's GPUs on its node as hexadecimal
/// masks of node indices, the position of its first GPU among the step's, its GPUs by
/// node index, and as it sees them (`CUDA_VISIBLE_DEVICES`).
///
/// ```
/// let line = model::step::gpu_bind_report(&[0, 1], &[1], "1");
/// assert_eq!(line, "gpu-bind: usable_gres=0x2; bit_alloc=0x3; local_inx=1; global_list=1; local_list=1\n");
/// ```
pub fn gpu_bind_report(step_gpus: &[u32], task_gpus: &[u32], visible: &str) -> String {
    let local_inx = task_gpus
        .first()
        .and_then(|g| step_gpus.iter().position(|s| s == g))
        .unwrap_or(0);
    let global: Vec<String> = task_gpus.iter().map(u32::to_string).collect();
    format!(
        "gpu-bind: usable_gres={}; bit_alloc={}; local_inx={local_inx}; global_list={}; local_list={visible}\n",
        hex_mask(task_gpus),
        hex_mask(step_gpus),
        global.join(",")
    )
}

/// The numbers of a `map_gpu`/`mask_gpu` list in `radix` (hexadecimal ones may start
/// `0x`), each `n*count` repeated; an item with another character is refused with
/// Slurm's words (its `_valid_num_list`).
fn bind_list(list: &str, radix: u32) -> Result<Vec<u64>, String> {
    let mut out = Vec::new();
    for item in list.split(',') {
        let digits = if radix == 16 {
            item.strip_prefix("0x")
                .or_else(|| item.strip_prefix("0X"))
                .unwrap_or(item)
        } else {
            item
        };
        if let Some(c) = digits.chars().find(|c| !c.is_digit(radix) && *c != '*') {
            return Err(format!(
                "Failed to validate {item}, offending character is {c}"
            ));
        }
        let (number, count) = digits.split_once('*').unwrap_or((digits, "1"));
        let invalid = || format!("Failed to validate {item}");
        let number = u64::from_str_radix(number, radix).map_err(|_| invalid())?;
        let count: usize = count.parse().map_err(|_| invalid())?;
        out.extend(std::iter::repeat_n(number, count.min(1024)));
    }
    Ok(out)
}

/// The GPUs (node indices) task `local` (its rank on the node) sees, of the step's GPUs
/// on the node `gpus` (in order): `gpus_per_task` of its own, in task order, or as
/// `bind` says.
pub fn task_gpus(gpus: &[u32], local: u32, gpus_per_task: u32, bind: &GpuBind) -> Vec<u32> {
    if gpus.is_empty() {
        return Vec::new();
    }
    let at = |k: u32| gpus[k as usize % gpus.len()];
    match bind {
        GpuBind::Map(list) if !list.is_empty() => vec![at(list[local as usize % list.len()])],
        GpuBind::Mask(masks) if !masks.is_empty() => {
            let mask = masks[local as usize % masks.len()];
            (0..gpus.len().min(64) as u32)
                .filter(|k| mask & (1 << k) != 0)
                .map(at)
                .collect()
        }
        GpuBind::Single(n) => vec![at(local / n)],
        GpuBind::Closest => vec![at(local)],
        _ if gpus_per_task > 0 => (0..gpus_per_task)
            .map(|k| at(local * gpus_per_task + k))
            .collect(),
        _ => gpus.to_vec(),
    }
}

/// `--gpu-bind=closest` for task `local`: of the step's GPUs on the node `gpus`, those
/// on the NUMA nodes of the task's CPUs (`task_numa`; `gpu_numa` gives a GPU's NUMA
/// node); when none is, or the task's NUMA nodes are not known, one GPU in turn.
///
/// Example: GPUs 0-3 on NUMA 0 and 4-7 on NUMA 1; a task on CPUs of NUMA 1 gets 4-7.
pub fn closest_gpus(
    gpus: &[u32],
    local: u32,
    task_numa: &[u32],
    gpu_numa: impl Fn(u32) -> Option<u32>,
) -> Vec<u32> {
    let near: Vec<u32> = gpus
        .iter()
        .copied()
        .filter(|g| gpu_numa(*g).is_some_and(|n| task_numa.contains(&n)))
        .collect();
    if near.is_empty() {
        task_gpus(gpus, local, 0, &GpuBind::Closest)
    } else {
        near
    }
}

/// Counts per node in Slurm's compressed form (`SLURM_TASKS_PER_NODE`,
/// `SLURM_JOB_CPUS_PER_NODE`): `[3, 2]` is `3,2`, `[2, 2, 2, 1]` is `2(x3),1`.
pub fn compressed_counts(counts: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < counts.len() {
        let run = counts[i..].iter().take_while(|c| **c == counts[i]).count();
        parts.push(if run > 1 {
            format!("{}(x{run})", counts[i])
        } else {
            counts[i].to_string()
        });
        i += run;
    }
    parts.join(",")
}

/// How many of `num_tasks` tasks each of `num_nodes` nodes runs: `per_node` each, or an
/// even share with the remainder on the first nodes.
pub fn even_counts(num_tasks: u32, num_nodes: u32, per_node: u32) -> Vec<u32> {
    (0..num_nodes)
        .map(|i| match per_node {
            0 => num_tasks / num_nodes + u32::from(i < num_tasks % num_nodes),
            per => per,
        })
        .collect()
}

/// `srun --mpi` (or `SLURM_MPI_TYPE`): the process-management interface a step's tasks
/// are told about. Drover runs no PMI server: `pmi2` gives each task the PMI variables
/// (`PMI_RANK`, `PMI_SIZE`, `PMI_JOBID`) that rank-detecting programs read, but no
/// `PMI_FD` to wire up through, so an MPI library started this way runs as a singleton
/// per task. `pmix` and `cray_shasta` are refused, as by a Slurm built without them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MpiType {
    #[default]
    None,
    Pmi2,
}

impl MpiType {
    /// Every type, as `srun --mpi=list` lists them.
    pub const ALL: [MpiType; 2] = [MpiType::None, MpiType::Pmi2];

    /// Slurm's name: `none`, `pmi2`.
    pub fn name(self) -> &'static str {
        match self {
            MpiType::None => "none",
            MpiType::Pmi2 => "pmi2",
        }
    }

    /// A type by name, with Slurm's message for one it does not have.
    pub fn parse(text: &str) -> Result<MpiType, String> {
        MpiType::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(text))
            .ok_or_else(|| format!("Invalid MPI type '{text}', --mpi=list for acceptable types"))
    }

    /// The variables task `rank` of step `job_id.step_id` with `size` tasks gets.
    ///
    /// Example: `pmi2`, task 1 of step 7.0 with 4 tasks: `PMI_RANK=1`, `PMI_SIZE=4`,
    /// `PMI_JOBID=7.0`.
    pub fn task_vars(
        self,
        job_id: u32,
        step_id: u32,
        rank: u32,
        size: u32,
    ) -> Vec<(&'static str, String)> {
        match self {
            MpiType::None => Vec::new(),
            MpiType::Pmi2 => vec![
                ("PMI_RANK", rank.to_string()),
                ("PMI_SIZE", size.to_string()),
                ("PMI_JOBID", format!("{job_id}.{step_id}")),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_come_out_of_the_environment() {
        let mut env: Vec<(String, String)> = [
            ("SLURM_RLIMIT_CORE", "965632"),
            ("PATH", "/bin"),
            ("SLURM_RLIMIT_NOFILE", "U1016"),
            ("SLURM_RLIMIT_STACK", "lots"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(
            Rlimit::take_from_env(&mut env),
            [(Rlimit::Core, 965632), (Rlimit::Nofile, 1016)]
        );
        assert_eq!(env, [("PATH".to_string(), "/bin".to_string())]);
    }

    #[test]
    fn cpus_asked_for_gpus_stop_at_a_node() {
        let one_task = StepRequest {
            num_tasks: 1,
            cpus_per_task: 16,
            ..StepRequest::default()
        };
        // `--gpus=2 --cpus-per-gpu=8` on two 8-CPU nodes: its task runs with 8.
        let fitted = one_task.within_a_node(8, &[8, 8]);
        assert_eq!(fitted.cpus_per_task, 8);
        assert_eq!(layout(fitted, &[8, 8]), Ok(vec![(0, vec![0])]));
        // `-c 16` is the user's: too many for a node.
        let asked = one_task.within_a_node(0, &[8, 8]);
        assert_eq!(layout(asked, &[8, 8]), Err(StepLayoutError::TooManyCpus));
    }

    #[test]
    fn closest_gpus_are_those_on_the_tasks_numa_nodes() {
        let numa = |g: u32| Some(g / 4);
        let gpus: Vec<u32> = (0..8).collect();
        assert_eq!(closest_gpus(&gpus, 0, &[1], numa), [4, 5, 6, 7]);
        assert_eq!(closest_gpus(&gpus, 1, &[0, 1], numa), gpus);
        // The step's GPUs only, and one in turn where none is near or NUMA is unknown.
        assert_eq!(closest_gpus(&[2, 3], 1, &[1], numa), [3]);
        assert_eq!(closest_gpus(&gpus, 2, &[], numa), [2]);
        assert_eq!(closest_gpus(&gpus, 2, &[0], |_| None), [2]);
    }

    fn req(
        num_tasks: u32,
        num_nodes: u32,
        ntasks_per_node: u32,
        cpus_per_task: u32,
    ) -> StepRequest {
        StepRequest {
            num_tasks,
            num_nodes,
            ntasks_per_node,
            cpus_per_task,
            overcommit: false,
            exclusive: false,
            layout: TaskLayout::Block,
        }
    }

    fn running(nodes: &[&str], cpus: u32) -> crate::Step {
        crate::Step {
            num_tasks: 1,
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            cpus,
            ..crate::Step::started(Some(0), "s", 0)
        }
    }

    #[test]
    fn an_exclusive_step_takes_the_cpus_no_running_step_holds() {
        let job_nodes = ["n1", "n2", "n3", "n4"];
        let cpus = [1, 1, 1, 1];
        let one = req(1, 0, 0, 0);
        let steps = [running(&["n1"], 1), running(&["n2"], 1)];
        let held = held_cpus(&job_nodes, &steps);
        assert_eq!(held, vec![1, 1, 0, 0]);
        assert_eq!(
            exclusive_layout(one, &cpus, &held),
            Ok(Some(vec![(2, vec![0])]))
        );
        // All held: the step waits.
        assert_eq!(exclusive_layout(one, &cpus, &[1, 1, 1, 1]), Ok(None));
        // Two nodes asked, one free: waits too.
        assert_eq!(
            exclusive_layout(req(2, 2, 0, 0), &cpus, &[1, 1, 1, 0]),
            Ok(None)
        );
        // More than the job has: never.
        assert_eq!(
            exclusive_layout(req(5, 0, 0, 0), &cpus, &[0; 4]),
            Err(StepLayoutError::TooManyCpus)
        );
        // A step on two nodes holds half its CPUs on each.
        assert_eq!(
            held_cpus(&job_nodes, &[running(&["n3", "n4"], 4)]),
            vec![0, 0, 2, 2]
        );
    }

    fn counts(r: StepRequest, cpus: &[u32]) -> Result<Vec<usize>, StepLayoutError> {
        layout(r, cpus).map(|l| l.iter().map(|(_, t)| t.len()).collect())
    }

    #[test]
    fn nodes_named_and_excluded() {
        let job = ["n1", "n2", "n3"];
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            step_candidates(&job, &names(&["n3"]), &[]),
            Ok(vec![2, 0, 1])
        );
        assert_eq!(step_candidates(&job, &[], &names(&["n1"])), Ok(vec![1, 2]));
        assert_eq!(
            step_candidates(&job, &names(&["n2"]), &names(&["n1"])),
            Ok(vec![1, 2])
        );
        for (list, exclude) in [(&["n4"][..], &[][..]), (&["n2"], &["n2"])] {
            assert_eq!(
                step_candidates(&job, &names(list), &names(exclude)),
                Err(StepLayoutError::Impossible)
            );
        }
    }

    #[test]
    fn arbitrary_layout_follows_the_node_of_each_task() {
        let nodes = ["n1", "n2"];
        let tasks: Vec<String> = ["n2", "n1", "n1"].map(String::from).to_vec();
        assert_eq!(
            arbitrary_layout(req(0, 0, 0, 0), &nodes, &[4, 4], &tasks),
            Ok(vec![(0, vec![1, 2]), (1, vec![0])])
        );
        assert_eq!(
            arbitrary_layout(req(3, 0, 0, 0), &nodes, &[4, 4], &tasks).map(|l| l.len()),
            Ok(2)
        );
        // Another task count than the list's, a node without a task, a task off the
        // step's nodes, and more tasks than a node's CPUs (unless -O) are refused.
        assert_eq!(
            arbitrary_layout(req(2, 0, 0, 0), &nodes, &[4, 4], &tasks),
            Err(StepLayoutError::Impossible)
        );
        assert_eq!(
            arbitrary_layout(req(0, 0, 0, 0), &["n1", "n2", "n3"], &[4, 4, 4], &tasks),
            Err(StepLayoutError::Impossible)
        );
        assert_eq!(
            arbitrary_layout(req(0, 0, 0, 0), &["n1"], &[4], &tasks),
            Err(StepLayoutError::Impossible)
        );
        assert_eq!(
            arbitrary_layout(req(0, 0, 0, 0), &nodes, &[1, 1], &tasks),
            Err(StepLayoutError::TooManyCpus)
        );
        let over = StepRequest {
            overcommit: true,
            ..req(0, 0, 0, 0)
        };
        assert!(arbitrary_layout(over, &nodes, &[1, 1], &tasks).is_ok());
    }

    #[test]
    fn distributions_of_the_worked_example() {
        let job = [4, 4, 4];
        let with = |layout: TaskLayout, tasks: u32, nodes: u32| {
            crate::step::layout(
                StepRequest {
                    layout,
                    ..req(tasks, nodes, 0, 0)
                },
                &job,
            )
        };
        assert_eq!(
            with(TaskLayout::Cyclic, 5, 0).unwrap(),
            vec![(0, vec![0, 3]), (1, vec![1, 4]), (2, vec![2])]
        );
        assert_eq!(
            with(TaskLayout::Plane(2), 5, 2).unwrap(),
            vec![(0, vec![0, 1, 4]), (1, vec![2, 3])]
        );
        assert_eq!(
            with(TaskLayout::Plane(2), 5, 3).unwrap(),
            vec![(0, vec![0, 1]), (1, vec![2, 3]), (2, vec![4])]
        );
        assert_eq!(
            with(TaskLayout::Plane(4), 5, 3),
            Err(StepLayoutError::Impossible),
            "a node without a task"
        );
        assert_eq!(
            with(TaskLayout::Pack, 5, 2).unwrap(),
            vec![(0, vec![0, 1, 2, 3]), (1, vec![4])]
        );
        // Packed: each later node keeps one task.
        assert_eq!(
            with(TaskLayout::Pack, 4, 2).unwrap(),
            vec![(0, vec![0, 1, 2]), (1, vec![3])]
        );
        assert_eq!(
            with(TaskLayout::Pack, 13, 3),
            Err(StepLayoutError::TooManyCpus)
        );
        let over = StepRequest {
            layout: TaskLayout::Pack,
            overcommit: true,
            ..req(9, 2, 0, 0)
        };
        assert_eq!(counts(over, &job), Ok(vec![8, 1]));
    }

    #[test]
    fn the_worked_example() {
        let job = [4, 4, 4];
        assert_eq!(
            layout(req(5, 0, 0, 0), &job).unwrap(),
            vec![(0, vec![0, 1]), (1, vec![2, 3]), (2, vec![4])]
        );
        assert_eq!(
            layout(req(5, 2, 0, 0), &job).unwrap(),
            vec![(0, vec![0, 1, 2]), (1, vec![3, 4])]
        );
        assert_eq!(counts(req(2, 0, 0, 4), &job), Ok(vec![1, 1]));
        assert_eq!(counts(req(9, 0, 0, 0), &job), Ok(vec![3, 3, 3]));
        assert_eq!(
            counts(req(13, 0, 0, 0), &job),
            Err(StepLayoutError::TooManyCpus)
        );
        // -O: tasks share the CPUs, still spread as without it.
        let overcommitted = StepRequest {
            overcommit: true,
            ..req(13, 0, 0, 0)
        };
        assert_eq!(counts(overcommitted, &job), Ok(vec![5, 4, 4]));
        let one_cpu = StepRequest {
            overcommit: true,
            ..req(10, 1, 0, 0)
        };
        assert_eq!(counts(one_cpu, &[1]), Ok(vec![10]));
    }

    #[test]
    fn each_task_runs_on_the_cpus_its_binding_gives_it() {
        let cpus = [4, 5, 6, 7];
        assert_eq!(task_cpus(&cpus, 1, 2, &CpuBind::Own), vec![6, 7]);
        assert_eq!(task_cpus(&cpus, 3, 1, &CpuBind::Own), vec![7]);
        assert_eq!(task_cpus(&cpus, 1, 1, &CpuBind::None), Vec::<u32>::new());
        assert_eq!(task_cpus(&cpus, 3, 1, &CpuBind::Map(vec![5, 4])), vec![4]);
        assert_eq!(CpuBind::parse("q"), Ok(CpuBind::Own));
        assert_eq!(CpuBind::parse("verbose,none"), Ok(CpuBind::None));
        assert_eq!(CpuBind::parse("cores"), Ok(CpuBind::Own));
        assert_eq!(
            CpuBind::parse("quiet,map_cpu:1,3"),
            Ok(CpuBind::Map(vec![1, 3]))
        );
        assert_eq!(
            CpuBind::parse("mask_cpu:0x3"),
            Err("Invalid --cpu-bind argument: mask_cpu:0x3".into())
        );
    }

    #[test]
    fn each_task_sees_the_gpus_its_binding_gives_it() {
        let gpus = [2, 3, 6, 7];
        assert_eq!(task_gpus(&gpus, 1, 0, &GpuBind::None), vec![2, 3, 6, 7]);
        assert_eq!(task_gpus(&gpus, 1, 2, &GpuBind::None), vec![6, 7]);
        assert_eq!(task_gpus(&gpus, 3, 1, &GpuBind::None), vec![7]);
        assert_eq!(task_gpus(&gpus, 3, 0, &GpuBind::Single(2)), vec![3]);
        assert_eq!(task_gpus(&gpus, 2, 0, &GpuBind::Map(vec![3, 0])), vec![7]);
        assert_eq!(task_gpus(&gpus, 5, 0, &GpuBind::Closest), vec![3]);
        assert_eq!(task_gpus(&[], 0, 1, &GpuBind::None), Vec::<u32>::new());
        assert_eq!(GpuBind::parse("verbose,single:2"), Ok(GpuBind::Single(2)));
        assert_eq!(GpuBind::parse("map_gpu:0,1"), Ok(GpuBind::Map(vec![0, 1])));
        assert_eq!(GpuBind::parse("closest"), Ok(GpuBind::Closest));
        assert_eq!(GpuBind::parse("verbose"), Ok(GpuBind::None));
        assert!(gpu_bind_verbose("verbose,closest") && gpu_bind_verbose("verbose"));
        assert!(!gpu_bind_verbose("closest") && !gpu_bind_verbose("verbosely"));
        assert_eq!(
            GpuBind::parse("mask_gpu:0x1,0xc"),
            Ok(GpuBind::Mask(vec![1, 12]))
        );
        assert_eq!(
            task_gpus(&gpus, 1, 0, &GpuBind::Mask(vec![1, 12])),
            vec![6, 7]
        );
        assert_eq!(
            GpuBind::parse("map_gpu:1*2,0"),
            Ok(GpuBind::Map(vec![1, 1, 0]))
        );
        for arg in ["verbose,mask_gpu:NaN", "verbose,map_gpu:NaN"] {
            assert_eq!(
                GpuBind::parse(arg),
                Err(format!(
                    "Failed to validate NaN, offending character is N\n\
                     Invalid --gpu-bind argument: gpu:{arg}"
                ))
            );
        }
        assert!(GpuBind::parse("single:0").is_err());
    }

    #[test]
    fn gpu_frequencies_are_checked_as_slurm_checks_them() {
        for good in [
            "low",
            "medium",
            "high",
            "highm1",
            "450",
            "verbose,low",
            "memory=high",
        ] {
            assert_eq!(check_gpu_freq(good), Ok(()), "{good}");
        }
        assert!(check_gpu_freq("low;gpu:high").is_ok() && check_gpu_freq("low,").is_ok());
        for bad in [
            "", "blah", "-5", "12x", "memory=", "core=low", "low;high", "low;gpu:",
        ] {
            assert_eq!(
                check_gpu_freq(bad),
                Err(format!("Invalid --gpu-freq argument: gpu:{bad}")),
                "{bad}"
            );
        }
    }

    #[test]
    fn counts_compress_as_slurm_writes_them() {
        assert_eq!(compressed_counts(&[3, 2]), "3,2");
        assert_eq!(compressed_counts(&[2, 2, 2, 1]), "2(x3),1");
        assert_eq!(compressed_counts(&[4]), "4");
        assert_eq!(even_counts(5, 2, 0), vec![3, 2]);
        assert_eq!(even_counts(5, 2, 4), vec![4, 4]);
    }

    #[test]
    fn defaults_and_tasks_per_node() {
        let job = [8, 8];
        // A plain srun: one task on the first node.
        assert_eq!(layout(req(0, 0, 0, 0), &job).unwrap(), vec![(0, vec![0])]);
        // -N 2 alone: one task per node.
        assert_eq!(counts(req(0, 2, 0, 0), &job), Ok(vec![1, 1]));
        assert_eq!(counts(req(0, 2, 3, 0), &job), Ok(vec![3, 3]));
        assert_eq!(counts(req(5, 0, 4, 0), &job), Ok(vec![4, 1]));
        assert_eq!(
            counts(req(1, 3, 0, 0), &job),
            Err(StepLayoutError::TooManyNodes {
                asked: 3,
                allocated: 2
            })
        );
        assert_eq!(
            counts(req(1, 2, 0, 0), &job),
            Err(StepLayoutError::Impossible)
        );
        assert_eq!(
            counts(req(2, 0, 0, 9), &job),
            Err(StepLayoutError::TooManyCpus)
        );
        assert_eq!(
            StepLayoutError::TooManyNodes {
                asked: 3,
                allocated: 2
            }
            .to_string(),
            "Only allocated 2 nodes asked for 3"
        );
    }

    #[test]
    fn mpi_types_by_name_and_their_task_variables() {
        assert_eq!(MpiType::parse("PMI2"), Ok(MpiType::Pmi2));
        assert_eq!(MpiType::parse("none"), Ok(MpiType::None));
        assert_eq!(
            MpiType::parse("pmix"),
            Err("Invalid MPI type 'pmix', --mpi=list for acceptable types".to_string())
        );
        assert!(MpiType::None.task_vars(7, 0, 1, 4).is_empty());
        assert_eq!(
            MpiType::Pmi2.task_vars(7, 0, 1, 4),
            [
                ("PMI_RANK", "1".to_string()),
                ("PMI_SIZE", "4".to_string()),
                ("PMI_JOBID", "7.0".to_string())
            ]
        );
    }
}
