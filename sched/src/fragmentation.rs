//! The GPU fragmentation index: how much of the free GPU capacity is stranded on
//! partly used nodes, where a job that wants a whole node's GPUs cannot use it.
//!
//! Definition, over the GPU nodes that may take work (up, not drained):
//!
//! ```text
//!   fragmentation = 1 - (free GPUs on nodes whose GPUs are all free) / (all free GPUs)
//! ```
//!
//! 0 when there are no free GPUs (nothing to fragment) or every free GPU sits on a
//! node with all its GPUs free; close to 1 when the free GPUs are scattered one or
//! two per node. A GPU is free when no running, suspended or completing job holds it.
//!
//! Worked example: four 8-GPU nodes gpu01..gpu04 running a 2-GPU and a 5-GPU job.
//!
//! - spread, the jobs on gpu01 and gpu02: free 6 + 3 + 8 + 8 = 25 GPUs, 16 of them on
//!   whole free nodes: 1 - 16/25 = 0.36;
//! - packed, both on gpu01 (7 used): free 1 + 8 + 8 + 8 = 25, 24 on whole free nodes:
//!   1 - 24/25 = 0.04. Three 8-GPU jobs can still start, against two.
//!
//! Why not the largest free block alone: it says whether *one* big job fits, not how
//! much capacity is lost; the index weighs every stranded GPU. `largest_free_block`
//! gives the block too, for `drover why`.

use model::{ClusterState, Node};
use std::collections::BTreeMap;

/// Free and total GPUs of each schedulable GPU node, by name.
fn free_gpus(state: &ClusterState) -> BTreeMap<&str, (u32, u32)> {
    let mut free: BTreeMap<&str, (u32, u32)> = state
        .nodes
        .values()
        .filter(|n| n.schedulable() && !n.gpus.is_empty())
        .map(|n| (n.name.as_str(), (n.gpus.len() as u32, n.gpus.len() as u32)))
        .collect();
    for job in state.running_jobs() {
        for na in job.alloc.iter().flat_map(|a| &a.nodes) {
            if let Some((f, _)) = free.get_mut(na.node.as_str()) {
                *f = f.saturating_sub(na.gpus.len() as u32);
            }
        }
    }
    free
}

/// The GPU fragmentation index of the cluster as it runs now, in `[0, 1]`.
pub fn gpu_fragmentation(state: &ClusterState) -> f64 {
    let mut all = 0u64;
    let mut whole = 0u64;
    for (f, total) in free_gpus(state).into_values() {
        all += u64::from(f);
        if f == total {
            whole += u64::from(f);
        }
    }
    if all == 0 {
        0.0
    } else {
        1.0 - whole as f64 / all as f64
    }
}

/// The most GPUs free together on one schedulable node (of `gpu_type`, any type when
/// empty) and that node: `(count, name)`, the first node in name order on a tie.
pub fn largest_free_block(state: &ClusterState, gpu_type: &str) -> Option<(u32, String)> {
    let typed = |n: &Node| {
        n.gpus
            .iter()
            .filter(|g| g.serves(gpu_type))
            .map(|g| g.index)
            .collect::<Vec<u32>>()
    };
    let mut used: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for job in state.running_jobs() {
        for na in job.alloc.iter().flat_map(|a| &a.nodes) {
            used.entry(na.node.as_str()).or_default().extend(&na.gpus);
        }
    }
    let mut best: Option<(u32, String)> = None;
    for node in state.nodes.values().filter(|n| n.schedulable()) {
        let busy = used.get(node.name.as_str());
        let free = typed(node)
            .into_iter()
            .filter(|i| busy.is_none_or(|b| !b.contains(i)))
            .count() as u32;
        if free > 0 && best.as_ref().is_none_or(|(c, _)| free > *c) {
            best = Some((free, node.name.clone()));
        }
    }
    best
}
