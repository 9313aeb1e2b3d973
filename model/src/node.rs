//! Nodes as the controller knows them: what the config says and what the node daemon
//! reported, whether it answers, and whether an admin drained it.
//!
//! The state users see is derived (`NodeState`, rendered here for every command): a
//! node that is up with nothing allocated is IDLE, partly used MIXED, full ALLOCATED;
//! DRAIN turns those into DRAINED (nothing running) or DRAINING; a node an admin set
//! down, or that stopped answering (then also not responding, Slurm's `*`), is DOWN.

use crate::job::Time;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuDevice {
    pub index: u32,
    pub gpu_type: String,
    pub uuid: String,
    /// The NUMA node the GPU hangs off (its PCIe root's socket).
    pub numa: u32,
    /// The NVLink domain: GPUs of one domain talk over NVLink; across domains over
    /// PCIe or the inter-socket link.
    pub nvlink: u32,
    /// For a share (shard or MPS share) of a GPU that is also given whole while none
    /// of its shares is taken (Slurm's way with `gres/shard` and `gres/mps`): the index
    /// of that whole GPU's device. A GPU is then given either whole or as shares, never
    /// both at once. `None` for every other device.
    pub whole: Option<u32>,
}

impl GpuDevice {
    /// True when this GPU, as a node found it, stands for a GPU declared of type
    /// `declared`: its type starts with it (`h100_80gb_hbm3`, NVML's model name, for
    /// `h100`; any type for an untyped declaration).
    /// A MIG instance or a share stands only for its own kind, and a whole GPU never
    /// for one.
    pub fn stands_for(&self, declared: &str) -> bool {
        let special = |t: &str| is_mig_profile(t) || is_share_type(t);
        if special(&self.gpu_type) || special(declared) {
            return self.gpu_type == declared;
        }
        self.gpu_type.starts_with(declared)
    }

    /// One share of a GPU in shared use: a shard (`gres/shard`) or an MPS share
    /// (`gres/mps`).
    pub fn is_share(&self) -> bool {
        is_share_type(&self.gpu_type)
    }

    /// Whether this device serves a request for GPUs of type `wanted` (empty: any GPU):
    /// shares serve only requests for their kind (`--gres=shard:N`, `--gres=mps:N`), and
    /// those only them.
    pub fn serves(&self, wanted: &str) -> bool {
        if self.is_share() || is_share_type(wanted) {
            return self.gpu_type == wanted;
        }
        wanted.is_empty() || self.gpu_type == wanted
    }

    /// GPU `index` of `count` on a node, with the default topology: the GPUs split
    /// evenly over two NUMA nodes (the first half on NUMA 0), one NVLink domain per
    /// NUMA node. 8 GPUs: 0-3 on NUMA 0 / domain 0, 4-7 on NUMA 1 / domain 1.
    pub fn with_default_topology(index: u32, count: u32, gpu_type: &str) -> GpuDevice {
        let numa = default_gpu_numa(index, count);
        GpuDevice {
            index,
            gpu_type: gpu_type.to_string(),
            uuid: String::new(),
            numa,
            nvlink: numa,
            whole: None,
        }
    }
}

/// The type of the devices that stand for shards of a GPU in shared use (`gres/shard`).
pub const SHARD: &str = "shard";

/// The type of the devices that stand for MPS shares of a GPU (`gres/mps`): a job's
/// shares of its GPU's are its `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`.
pub const MPS: &str = "mps";

/// Whether `gpu_type` is a share of a GPU: a shard or an MPS share.
pub fn is_share_type(gpu_type: &str) -> bool {
    gpu_type == SHARD || gpu_type == MPS
}

/// Whether `gpu_type` is a MIG profile, the type of a MIG instance: `1g.10gb`,
/// `3g.40gb`, `1c.3g.40gb` (a compute instance), as NVIDIA names them.
pub fn is_mig_profile(gpu_type: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let rest = match gpu_type.split_once("c.") {
        Some((c, rest)) if digits(c) => rest,
        _ => gpu_type,
    };
    match rest.split_once("g.") {
        Some((g, mem)) => digits(g) && mem.strip_suffix("gb").is_some_and(digits),
        None => false,
    }
}

/// The GPU slices a MIG profile takes (its `Ng`): 3 for `3g.40gb` and `1c.3g.40gb`.
fn mig_slices(profile: &str) -> u32 {
    let rest = profile.split_once("c.").map_or(profile, |(_, r)| r);
    rest.split_once('g')
        .and_then(|(g, _)| g.parse().ok())
        .unwrap_or(0)
}

/// The most GPU slices of one GPU in MIG mode (A100, H100, H200: 7).
pub const MIG_SLICES_PER_GPU: u32 = 7;

/// A MIG layout, the instances one GPU in MIG mode is split into: `COUNTxPROFILE`
/// terms joined by `,`, one profile per instance in order. `7x1g.10gb` is seven
/// `1g.10gb`; `1x3g.40gb,2x2g.20gb` three instances. At most 7 slices in all.
pub fn parse_mig_layout(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for term in text.split(',') {
        let term = term.trim();
        let bad = || format!("invalid MIG layout term `{term}` (COUNTxPROFILE, as `7x1g.10gb`)");
        let (count, profile) = term.split_once('x').ok_or_else(bad)?;
        let count: u32 = count.parse().map_err(|_| bad())?;
        if count == 0 || !is_mig_profile(profile) {
            return Err(bad());
        }
        out.extend(std::iter::repeat_n(profile.to_string(), count as usize));
    }
    let slices: u32 = out.iter().map(|p| mig_slices(p)).sum();
    if slices > MIG_SLICES_PER_GPU {
        return Err(format!(
            "MIG layout `{text}` takes {slices} slices of one GPU (at most {MIG_SLICES_PER_GPU})"
        ));
    }
    Ok(out)
}

/// The default NUMA node of GPU `index` of `count`: the first half on 0, the rest on 1.
pub fn default_gpu_numa(index: u32, count: u32) -> u32 {
    if count < 2 {
        0
    } else {
        u32::from(index >= count.div_ceil(2))
    }
}

/// A node's processors as Slurm counts them (`Sockets`, `CoresPerSocket`,
/// `ThreadsPerCore`): 2 sockets of 4 cores of 2 threads are 16 CPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SocketLayout {
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
}

impl SocketLayout {
    /// A node configured with its CPUs alone, as Slurm infers it: each CPU a socket of
    /// one core of one thread.
    pub fn of_cpus(cpus: u32) -> SocketLayout {
        SocketLayout {
            sockets: cpus.max(1),
            cores_per_socket: 1,
            threads_per_core: 1,
        }
    }

    /// The CPUs the layout holds: sockets × cores × threads (at most `u32::MAX`).
    pub fn cpus(&self) -> u32 {
        self.sockets
            .saturating_mul(self.cores_per_socket)
            .saturating_mul(self.threads_per_core)
    }
}

/// What a node's config entry declares beside its CPUs, memory and GPUs, for listings:
/// its TmpDisk and processor layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeclaredHardware {
    /// Slurm's TmpDisk, in MB; 0: not declared.
    pub tmp_disk_mb: u64,
    pub layout: SocketLayout,
}

impl DeclaredHardware {
    /// A node of `cpus` with nothing declared.
    pub fn of_cpus(cpus: u32) -> DeclaredHardware {
        DeclaredHardware {
            tmp_disk_mb: 0,
            layout: SocketLayout::of_cpus(cpus),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NodeHealth {
    /// Configured, never registered since the controller started.
    Unknown,
    Up,
    /// Stopped heartbeating, or set DOWN by an admin.
    Down,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    pub name: String,
    /// host:port of the node daemon's agent service; empty until it registers.
    pub addr: String,
    pub cpus: u32,
    pub memory_mb: u64,
    pub gpus: Vec<GpuDevice>,
    /// The CPU ids of each NUMA node, by NUMA node id (sorted), as the node daemon
    /// found them (hwloc) or the config declares them (`numa_cpus`); empty when not
    /// known, and then the CPUs count as split evenly over the GPUs' NUMA nodes.
    pub numa_cpus: Vec<Vec<u32>>,
    pub features: Vec<String>,
    pub health: NodeHealth,
    pub drain: bool,
    pub reason: String,
    pub reason_time: Time,
    pub reason_uid: u32,
    pub boot_time: Time,
    pub last_heartbeat: Time,
    /// What its daemon's last heartbeat said of its load (not stored: the next
    /// heartbeat says it again); none: nothing yet.
    pub load: Option<NodeLoad>,
}

/// A node's free memory and load, as its daemon measures them: Slurm's FreeMem and
/// CPULoad.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeLoad {
    /// Free memory, in MB.
    pub free_mem_mb: u64,
    /// The load average, in hundredths (CPULoad=1.25 is 125).
    pub cpu_load_centi: u32,
}

impl Node {
    pub fn from_config(name: &str, cpus: u32, memory_mb: u64, gpus: Vec<GpuDevice>) -> Node {
        Node {
            name: name.to_string(),
            addr: String::new(),
            cpus,
            memory_mb,
            gpus,
            numa_cpus: Vec::new(),
            features: Vec::new(),
            health: NodeHealth::Unknown,
            drain: false,
            reason: String::new(),
            reason_time: 0,
            reason_uid: 0,
            boot_time: 0,
            last_heartbeat: 0,
            load: None,
        }
    }

    /// What a node daemon found that is less than this node is configured with, in
    /// Slurm's words (slurmctld's reasons for draining a node at registration): an
    /// empty list when it has at least what is declared (a found GPU counts for the
    /// declared types it `stands_for`).
    pub fn shortfall(&self, cpus: u32, memory_mb: u64, gpus: &[GpuDevice]) -> Vec<String> {
        let mut out = Vec::new();
        if cpus < self.cpus {
            out.push("Low CPUs".to_string());
        }
        if memory_mb < self.memory_mb {
            out.push(format!(
                "Low RealMemory (reported:{memory_mb} < 100.00% of configured:{})",
                self.memory_mb
            ));
        }
        let mut types: Vec<&str> = self.gpus.iter().map(|g| g.gpu_type.as_str()).collect();
        types.sort_unstable();
        types.dedup();
        for t in types {
            let want = self.gpus.iter().filter(|g| g.gpu_type == t).count();
            let found = gpus.iter().filter(|g| g.stands_for(t)).count();
            if found < want {
                let name = if t.is_empty() {
                    "gres/gpu".to_string()
                } else {
                    format!("gres/gpu:{t}")
                };
                out.push(format!(
                    "{name} count reported lower than configured ({found} < {want})"
                ));
            }
        }
        out
    }

    /// The NUMA node of CPU `cpu`: the one whose CPU ids hold it (`numa_cpus`), else,
    /// when those are not known or do not name it, by an even split of the CPUs over
    /// as many NUMA nodes as the GPUs name (at least one): on a 16-CPU node whose GPUs
    /// sit on NUMA 0 and 1, CPUs 0-7 are NUMA 0 and 8-15 NUMA 1.
    pub fn cpu_numa(&self, cpu: u32) -> u32 {
        if let Some(numa) = self
            .numa_cpus
            .iter()
            .position(|ids| ids.binary_search(&cpu).is_ok())
        {
            return numa as u32;
        }
        let numa_nodes = self
            .gpus
            .iter()
            .map(|g| g.numa + 1)
            .max()
            .unwrap_or(1)
            .max(1);
        if self.cpus == 0 {
            return 0;
        }
        (u64::from(cpu) * u64::from(numa_nodes) / u64::from(self.cpus)) as u32
    }

    /// May the scheduler start new work here?
    pub fn schedulable(&self) -> bool {
        self.health == NodeHealth::Up && !self.drain
    }

    pub fn gpu_type(&self) -> &str {
        self.gpus.first().map(|g| g.gpu_type.as_str()).unwrap_or("")
    }

    /// The node's GPUs by type, in the order the types first appear by index: each
    /// type, how many GPUs of it, and how many of those are in `used` (indices).
    pub fn gpus_by_type(&self, used: &[u32]) -> Vec<(&str, u32, u32)> {
        let mut out: Vec<(&str, u32, u32)> = Vec::new();
        for g in &self.gpus {
            let k = match out.iter().position(|(t, ..)| *t == g.gpu_type) {
                Some(k) => k,
                None => {
                    out.push((&g.gpu_type, 0, 0));
                    out.len() - 1
                }
            };
            out[k].1 += 1;
            out[k].2 += u32::from(used.contains(&g.index));
        }
        out
    }

    /// Whether the node answers: not when the controller marked it DOWN for silence
    /// (Slurm's `*` suffix, `NOT_RESPONDING`).
    pub fn responding(&self) -> bool {
        !(self.health == NodeHealth::Down && self.reason == NOT_RESPONDING)
    }

    /// The node's state as users see it, given what is allocated here.
    pub fn state(&self, cpus_alloc: u32, running_jobs: usize) -> NodeState {
        NodeState {
            health: self.health,
            drain: self.drain,
            responding: self.responding(),
            alloc: if running_jobs == 0 {
                NodeAlloc::Idle
            } else if cpus_alloc >= self.cpus {
                NodeAlloc::Allocated
            } else {
                NodeAlloc::Mixed
            },
        }
    }
}

/// The reason a node gets when it stops answering. As in Slurm 22.05 with
/// `ReturnToService=1`, a DOWN node whose reason is this text returns to service when
/// it registers again, and any other DOWN stays (slurmctld compares the same text).
pub const NOT_RESPONDING: &str = "Not responding";

/// How much of a node running jobs hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeAlloc {
    /// No job runs here.
    Idle,
    /// Jobs hold some of its CPUs.
    Mixed,
    /// Jobs hold all of its CPUs.
    Allocated,
}

/// A node's state as Slurm shows it, from its parts: health, the drain flag, whether
/// it answers, and what is allocated. One renderer for every command:
///
/// | health, drain, alloc | `long` (sinfo `%T`) | `compact` (`%t`) | `flags` (scontrol) |
/// |---|---|---|---|
/// | up, -, idle | `idle` | `idle` | `IDLE` |
/// | up, -, some CPUs | `mixed` | `mix` | `MIXED` |
/// | up, drain, some CPUs | `draining` | `drng` | `MIXED+DRAIN` |
/// | up, drain, idle | `drained` | `drain` | `IDLE+DRAIN` |
/// | down, drain | `drained` | `drain` | `DOWN+DRAIN` |
/// | down (silent) | `down*` | `down*` | `DOWN+NOT_RESPONDING` |
/// | unknown | `unknown` | `unk` | `UNKNOWN` |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NodeState {
    pub health: NodeHealth,
    pub drain: bool,
    pub responding: bool,
    pub alloc: NodeAlloc,
}

/// The one word sinfo shows for a state (before the `*` of a silent node).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeWord {
    Idle,
    Mixed,
    Allocated,
    Draining,
    Drained,
    Down,
    Unknown,
}

impl NodeWord {
    /// `idle`, `mixed`, `allocated`, `draining`, `drained`, `down`, `unknown`.
    pub fn long(self) -> &'static str {
        match self {
            NodeWord::Idle => "idle",
            NodeWord::Mixed => "mixed",
            NodeWord::Allocated => "allocated",
            NodeWord::Draining => "draining",
            NodeWord::Drained => "drained",
            NodeWord::Down => "down",
            NodeWord::Unknown => "unknown",
        }
    }

    /// `idle`, `mix`, `alloc`, `drng`, `drain`, `down`, `unk`.
    pub fn compact(self) -> &'static str {
        match self {
            NodeWord::Idle => "idle",
            NodeWord::Mixed => "mix",
            NodeWord::Allocated => "alloc",
            NodeWord::Draining => "drng",
            NodeWord::Drained => "drain",
            NodeWord::Down => "down",
            NodeWord::Unknown => "unk",
        }
    }
}

impl NodeState {
    /// The word sinfo shows: a drained node is `draining` while jobs still run on it
    /// (and it is up), else `drained`, whatever else holds, as in Slurm.
    pub fn word(&self) -> NodeWord {
        if self.drain {
            return if self.health == NodeHealth::Up && self.alloc != NodeAlloc::Idle {
                NodeWord::Draining
            } else {
                NodeWord::Drained
            };
        }
        match (self.health, self.alloc) {
            (NodeHealth::Down, _) => NodeWord::Down,
            (NodeHealth::Unknown, _) => NodeWord::Unknown,
            (NodeHealth::Up, NodeAlloc::Idle) => NodeWord::Idle,
            (NodeHealth::Up, NodeAlloc::Mixed) => NodeWord::Mixed,
            (NodeHealth::Up, NodeAlloc::Allocated) => NodeWord::Allocated,
        }
    }

    fn star(&self) -> &'static str {
        if self.responding { "" } else { "*" }
    }

    /// sinfo's `%T`: `idle`, `draining`, `down*`, ...
    pub fn long(&self) -> String {
        format!("{}{}", self.word().long(), self.star())
    }

    /// sinfo's `%t`: `idle`, `drng`, `down*`, ...
    pub fn compact(&self) -> String {
        format!("{}{}", self.word().compact(), self.star())
    }

    /// The base state and its flags, as `scontrol show node` and the JSON outputs name
    /// them: `IDLE`, `MIXED`, `ALLOCATED`, `DOWN` or `UNKNOWN`, then `DRAIN` and
    /// `NOT_RESPONDING` when they apply.
    pub fn flags(&self) -> Vec<&'static str> {
        let base = match (self.health, self.alloc) {
            (NodeHealth::Down, _) => "DOWN",
            (NodeHealth::Unknown, _) => "UNKNOWN",
            (NodeHealth::Up, NodeAlloc::Idle) => "IDLE",
            (NodeHealth::Up, NodeAlloc::Mixed) => "MIXED",
            (NodeHealth::Up, NodeAlloc::Allocated) => "ALLOCATED",
        };
        let mut out = vec![base];
        if self.drain {
            out.push("DRAIN");
        }
        if !self.responding {
            out.push("NOT_RESPONDING");
        }
        out
    }

    /// Whether the state is one sinfo's `-t` names (any case): `idle`, `mix[ed]`,
    /// `alloc[ated]`, `down`, `drain` (drained or draining), `drained`, `draining`,
    /// `unk[nown]`, `no_respond`, `responding`. `None` for a word that names no state
    /// Drover has (`comp`, `fail`, `resv`, ...), which no node matches.
    pub fn matches(&self, word: &str) -> Option<bool> {
        let w = self.word();
        Some(match word.to_ascii_uppercase().as_str() {
            "IDLE" => w == NodeWord::Idle,
            "MIX" | "MIXED" => w == NodeWord::Mixed,
            "ALLOC" | "ALLOCATED" => w == NodeWord::Allocated,
            "DOWN" => self.health == NodeHealth::Down,
            "DRAIN" => self.drain,
            "DRAINED" => w == NodeWord::Drained,
            "DRAINING" => w == NodeWord::Draining,
            "UNK" | "UNKNOWN" => self.health == NodeHealth::Unknown,
            "NO_RESPOND" => !self.responding,
            "RESPONDING" => self.responding,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_is_on_the_numa_node_that_lists_it_else_on_an_even_split() {
        let gpus = (0..2)
            .map(|i| GpuDevice::with_default_topology(i, 2, "h100"))
            .collect();
        let mut node = Node::from_config("n1", 16, 1024, gpus);
        // Not known: 0-7 on NUMA 0, 8-15 on NUMA 1.
        assert_eq!((node.cpu_numa(7), node.cpu_numa(8)), (0, 1));
        // Interleaved, as many two-socket hosts number their threads.
        node.numa_cpus = vec![
            vec![0, 1, 2, 3, 8, 9, 10, 11],
            vec![4, 5, 6, 7, 12, 13, 14, 15],
        ];
        let numa: Vec<u32> = (0..16).map(|c| node.cpu_numa(c)).collect();
        assert_eq!(numa, [0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1]);
    }

    #[test]
    fn mig_profiles_and_layouts() {
        for p in ["1g.10gb", "3g.40gb", "7g.141gb", "1c.3g.40gb"] {
            assert!(is_mig_profile(p), "{p}");
        }
        for p in ["h100", "", "1g", "g.10gb", "1g.10", "1g.10gb+me", "xg.10gb"] {
            assert!(!is_mig_profile(p), "{p}");
        }
        assert_eq!(parse_mig_layout("7x1g.18gb").unwrap(), vec!["1g.18gb"; 7]);
        assert_eq!(
            parse_mig_layout("1x3g.40gb, 2x2g.20gb").unwrap(),
            vec!["3g.40gb", "2g.20gb", "2g.20gb"]
        );
        assert_eq!(
            parse_mig_layout("8x1g.10gb").unwrap_err(),
            "MIG layout `8x1g.10gb` takes 8 slices of one GPU (at most 7)"
        );
        for bad in ["", "7", "0x1g.10gb", "7xh100", "x1g.10gb", "7x1g.10gb,"] {
            assert!(parse_mig_layout(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn gpus_are_counted_by_type_in_index_order() {
        let mut gpus: Vec<GpuDevice> = (0..3)
            .map(|i| GpuDevice::with_default_topology(i, 3, "h100"))
            .collect();
        for i in 3..5 {
            gpus.push(GpuDevice::with_default_topology(i, 5, "1g.10gb"));
        }
        let node = Node::from_config("n1", 8, 1024, gpus);
        assert_eq!(
            node.gpus_by_type(&[1, 4]),
            vec![("h100", 3, 1), ("1g.10gb", 2, 1)]
        );
        assert!(
            Node::from_config("c1", 1, 1, vec![])
                .gpus_by_type(&[])
                .is_empty()
        );
    }

    #[test]
    fn shards_serve_only_shard_requests() {
        let dev = |t: &str| GpuDevice::with_default_topology(0, 1, t);
        assert!(dev(SHARD).serves(SHARD));
        assert!(
            !dev(SHARD).serves(""),
            "an untyped GPU request takes no shard"
        );
        assert!(!dev("h100").serves(SHARD));
        assert!(dev("h100").serves("") && dev("h100").serves("h100"));
        assert!(dev(SHARD).stands_for(SHARD) && !dev(SHARD).stands_for(""));
        assert!(!dev("h100").stands_for(SHARD));
        assert!(dev(MPS).serves(MPS) && !dev(MPS).serves(SHARD) && !dev(SHARD).serves(MPS));
        assert!(!dev(MPS).serves("") && !dev("h100").serves(MPS));
    }

    #[test]
    fn a_mig_instance_stands_only_for_its_profile() {
        let dev = |t: &str| GpuDevice::with_default_topology(0, 1, t);
        assert!(dev("1g.10gb").stands_for("1g.10gb"));
        assert!(
            !dev("1g.10gb").stands_for(""),
            "an untyped GPU is a whole one"
        );
        assert!(!dev("1g.10gb").stands_for("1g"));
        assert!(!dev("2g.20gb").stands_for("1g.10gb"));
        assert!(!dev("h100_80gb_hbm3").stands_for("1g.10gb"));
        assert!(dev("h100_80gb_hbm3").stands_for("h100"));
        assert!(dev("h100_80gb_hbm3").stands_for(""));
    }

    #[test]
    fn a_node_that_finds_less_than_declared_says_what_it_lacks() {
        let gpus = |n: u32, t: &str| -> Vec<GpuDevice> {
            (0..n)
                .map(|i| GpuDevice::with_default_topology(i, n, t))
                .collect()
        };
        let node = Node::from_config("g1", 8, 64_000, gpus(8, "h100"));
        assert!(
            node.shortfall(8, 64_000, &gpus(8, "h100_80gb_hbm3"))
                .is_empty()
        );
        assert!(node.shortfall(16, 128_000, &gpus(9, "h100")).is_empty());
        assert_eq!(
            node.shortfall(4, 32_000, &gpus(6, "h100_80gb_hbm3")),
            vec![
                "Low CPUs".to_string(),
                "Low RealMemory (reported:32000 < 100.00% of configured:64000)".to_string(),
                "gres/gpu:h100 count reported lower than configured (6 < 8)".to_string(),
            ]
        );
        assert_eq!(
            node.shortfall(8, 64_000, &gpus(8, "a100")),
            vec!["gres/gpu:h100 count reported lower than configured (0 < 8)".to_string()]
        );
        let plain = Node::from_config("c1", 4, 1000, gpus(2, ""));
        assert_eq!(
            plain.shortfall(4, 1000, &[]),
            vec!["gres/gpu count reported lower than configured (0 < 2)".to_string()]
        );
    }

    fn state(health: NodeHealth, drain: bool, responding: bool, alloc: NodeAlloc) -> NodeState {
        NodeState {
            health,
            drain,
            responding,
            alloc,
        }
    }

    #[test]
    fn states_render_as_slurm_shows_them() {
        use NodeAlloc::{Allocated, Idle, Mixed};
        use NodeHealth::{Down, Unknown, Up};
        let cases = [
            (state(Up, false, true, Idle), "idle", "idle", "IDLE"),
            (state(Up, false, true, Mixed), "mixed", "mix", "MIXED"),
            (
                state(Up, false, true, Allocated),
                "allocated",
                "alloc",
                "ALLOCATED",
            ),
            (
                state(Up, true, true, Mixed),
                "draining",
                "drng",
                "MIXED+DRAIN",
            ),
            (
                state(Up, true, true, Idle),
                "drained",
                "drain",
                "IDLE+DRAIN",
            ),
            (
                state(Down, true, true, Idle),
                "drained",
                "drain",
                "DOWN+DRAIN",
            ),
            (
                state(Down, false, false, Idle),
                "down*",
                "down*",
                "DOWN+NOT_RESPONDING",
            ),
            (state(Down, false, true, Idle), "down", "down", "DOWN"),
            (
                state(Unknown, false, true, Idle),
                "unknown",
                "unk",
                "UNKNOWN",
            ),
        ];
        for (s, long, compact, flags) in cases {
            assert_eq!(
                (s.long().as_str(), s.compact().as_str()),
                (long, compact),
                "{s:?}"
            );
            assert_eq!(s.flags().join("+"), flags, "{s:?}");
        }
    }

    #[test]
    fn nodes_derive_their_state() {
        let mut n = Node::from_config("n1", 4, 1024, Vec::new());
        assert_eq!(n.state(0, 0).word(), NodeWord::Unknown);
        n.health = NodeHealth::Up;
        assert_eq!(n.state(2, 1).word(), NodeWord::Mixed);
        assert_eq!(n.state(4, 2).word(), NodeWord::Allocated);
        n.health = NodeHealth::Down;
        n.reason = NOT_RESPONDING.into();
        assert!(!n.state(0, 0).responding);
        n.reason = "maintenance".into();
        assert!(n.state(0, 0).responding);
    }

    #[test]
    fn state_words_filter() {
        let draining = state(NodeHealth::Up, true, true, NodeAlloc::Mixed);
        assert_eq!(draining.matches("drain"), Some(true));
        assert_eq!(draining.matches("DRAINING"), Some(true));
        assert_eq!(draining.matches("drained"), Some(false));
        assert_eq!(draining.matches("mix"), Some(false));
        assert_eq!(draining.matches("responding"), Some(true));
        assert_eq!(draining.matches("resv"), None);
        let silent = state(NodeHealth::Down, false, false, NodeAlloc::Idle);
        assert_eq!(silent.matches("down"), Some(true));
        assert_eq!(silent.matches("no_respond"), Some(true));
    }
}
