//! Nodes as the controller knows them: what the config says and what the node daemon
//! reported, whether it answers, and whether an admin drained it.
//!
//! The state users see is derived: a responding node with nothing allocated is IDLE,
//! partly used MIXED, full ALLOCATED; DRAIN turns those into DRAINED (nothing running)
//! or DRAINING; a node that stopped answering is DOWN.

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
}

impl GpuDevice {
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
        }
    }
}

/// The default NUMA node of GPU `index` of `count`: the first half on 0, the rest on 1.
pub fn default_gpu_numa(index: u32, count: u32) -> u32 {
    if count < 2 {
        0
    } else {
        u32::from(index >= count.div_ceil(2))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
    pub features: Vec<String>,
    pub health: NodeHealth,
    pub drain: bool,
    pub reason: String,
    pub reason_time: Time,
    pub reason_uid: u32,
    pub boot_time: Time,
    pub last_heartbeat: Time,
}

impl Node {
    pub fn from_config(name: &str, cpus: u32, memory_mb: u64, gpus: Vec<GpuDevice>) -> Node {
        Node {
            name: name.to_string(),
            addr: String::new(),
            cpus,
            memory_mb,
            gpus,
            features: Vec::new(),
            health: NodeHealth::Unknown,
            drain: false,
            reason: String::new(),
            reason_time: 0,
            reason_uid: 0,
            boot_time: 0,
            last_heartbeat: 0,
        }
    }

    /// May the scheduler start new work here?
    pub fn schedulable(&self) -> bool {
        self.health == NodeHealth::Up && !self.drain
    }

    pub fn gpu_type(&self) -> &str {
        self.gpus.first().map(|g| g.gpu_type.as_str()).unwrap_or("")
    }

    /// Slurm's state word given what is allocated here.
    pub fn state_word(&self, cpus_alloc: u32, running_jobs: usize) -> &'static str {
        match (self.health, self.drain) {
            (NodeHealth::Down, true) => "DOWN+DRAIN",
            (NodeHealth::Down, false) => "DOWN",
            (NodeHealth::Unknown, _) => "UNKNOWN",
            (NodeHealth::Up, true) if running_jobs > 0 => "DRAINING",
            (NodeHealth::Up, true) => "DRAINED",
            (NodeHealth::Up, false) if running_jobs == 0 => "IDLE",
            (NodeHealth::Up, false) if cpus_alloc >= self.cpus => "ALLOCATED",
            (NodeHealth::Up, false) => "MIXED",
        }
    }
}
