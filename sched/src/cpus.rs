//! CPU ids for the jobs a pass starts: the profile counts CPUs, this module names
//! them, so that a node daemon can pin a job to exactly its CPUs and no two running
//! jobs ever share one.
//!
//! The CPUs of a NUMA node are the ids its node daemon found there (hwloc) or the
//! config declares (`numa_cpus`); when neither is known they are split evenly over the
//! NUMA nodes the GPUs name (`Node::cpu_numa`): on a 16-CPU node whose GPUs sit on
//! NUMA 0 and 1, CPUs 0-7 are NUMA 0 and 8-15 NUMA 1. A job takes the lowest free ids
//! on the NUMA nodes of the GPUs it was given, then the lowest free ids elsewhere.
//!
//! Worked example: that 16-CPU node runs a job on CPUs 0-1. A new job gets 4 CPUs and
//! GPU 5 (NUMA 1): it takes CPUs 8-11, next to its GPU. A CPU-only job of 4 CPUs
//! after it takes 2-5, the lowest free ids.
//!
//! A job suspended for a waiting preemptor holds no CPU ids: it lends its CPUs to the
//! preemptor (`preempt::lends_cpus`). Jobs recorded before ids existed hold none either; if a node runs out of
//! free ids for such a reason, the job takes the lowest ids so that it still has as
//! many as it was counted for.

use crate::Start;
use model::ClusterState;
use std::collections::{BTreeMap, BTreeSet};

/// A set of CPU ids as a bitmap (nodes with thousands of CPUs, many passes), with
/// `low`: every id below it is in the set, so scans for free ids start there.
#[derive(Debug, Default)]
struct IdSet {
    words: Vec<u64>,
    low: u32,
}

impl IdSet {
    fn contains(&self, id: &u32) -> bool {
        self.words
            .get(*id as usize / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    fn extend<'a>(&mut self, ids: impl IntoIterator<Item = &'a u32>) {
        for &id in ids {
            // Scans ask only for ids below the node's CPU count; an absurd id (a
            // damaged record) must not grow the bitmap to gigabytes.
            if id >= 1 << 22 {
                continue;
            }
            let word = id as usize / 64;
            if self.words.len() <= word {
                self.words.resize(word + 1, 0);
            }
            self.words[word] |= 1 << (id % 64);
        }
        while self.contains(&self.low) {
            self.low += 1;
        }
    }
}

/// Fills `cpu_ids` of every node allocation of `starts`, in order, avoiding the ids
/// running jobs hold and the ids given to earlier starts.
pub fn assign(state: &ClusterState, starts: &mut [Start]) {
    if starts.is_empty() {
        return;
    }
    let mut used: BTreeMap<&str, IdSet> = starts
        .iter()
        .flat_map(|s| &s.alloc.nodes)
        .map(|na| (na.node.as_str(), IdSet::default()))
        .collect();
    for job in state.running_jobs() {
        if crate::preempt::lends_cpus(state, job) {
            continue;
        }
        for na in job.alloc.iter().flat_map(|a| &a.nodes) {
            if let Some(ids) = used.get_mut(na.node.as_str()) {
                ids.extend(&na.cpu_ids);
            }
        }
    }
    let mut given: Vec<(String, Vec<u32>)> = Vec::new();
    for start in starts.iter() {
        for na in &start.alloc.nodes {
            let Some(node) = state.nodes.get(&na.node) else {
                given.push((na.node.clone(), Vec::new()));
                continue;
            };
            let taken = used.entry(na.node.as_str()).or_default();
            let near: BTreeSet<u32> = na
                .gpus
                .iter()
                .filter_map(|i| node.gpus.iter().find(|g| g.index == *i))
                .map(|g| g.numa)
                .collect();
            // The lowest free ids near its GPUs, then the lowest free ids elsewhere,
            // scanning only as far as needed (a node may have thousands of CPUs).
            let want = na.cpus as usize;
            let is_near = |c: &u32| near.contains(&node.cpu_numa(*c));
            let mut ids: Vec<u32> = Vec::with_capacity(want);
            if !near.is_empty() {
                ids.extend(
                    (taken.low..node.cpus)
                        .filter(|c| !taken.contains(c) && is_near(c))
                        .take(want),
                );
            }
            let left = want - ids.len();
            if left > 0 {
                ids.extend(
                    (taken.low..node.cpus)
                        .filter(|c| !taken.contains(c) && (near.is_empty() || !is_near(c)))
                        .take(left),
                );
            }
            // Only when ids ran out: reuse the lowest, keeping the count right.
            let mut c = 0;
            while ids.len() < na.cpus as usize && c < node.cpus {
                if !ids.contains(&c) {
                    ids.push(c);
                }
                c += 1;
            }
            ids.sort_unstable();
            taken.extend(&ids);
            given.push((na.node.clone(), ids));
        }
    }
    let mut given = given.into_iter();
    for start in starts.iter_mut() {
        for na in &mut start.alloc.nodes {
            if let Some((_, ids)) = given.next() {
                na.cpu_ids = ids;
            }
        }
    }
}
