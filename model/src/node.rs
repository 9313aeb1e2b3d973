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
