//! The availability profile: every node's free CPUs, memory and GPUs over time, built
//! from the running jobs (each frees its resources at start + time limit; one without
//! a limit holds them forever) and changed as a pass starts jobs now or reserves
//! resources for later.
//!
//! Worked example: node n1 has 8 CPUs; job A (4 CPUs) runs until t=100 and job B
//! (2 CPUs) until t=300. At now=0 its timeline is
//!
//! ```text
//!   [0,100): 2 free    [100,300): 6 free    [300,∞): 8 free
//! ```
//!
//! An 8-CPU job with a 50 s limit fits first at 300 (`earliest`); reserving it makes
//! `[300,350)` 0 free and records 300 as a *dip*. A 2-CPU job with a 100 s limit fits
//! now (it ends by 300); a 2-CPU job with a 1000 s limit fits now but not at the dip,
//! so starting it would delay the reservation and `window` says no.
//!
//! A timeline only falls at dips (reservation starts): starting a job now lowers it
//! from now on and raises it again at the job's end, and running jobs only end. So
//! between two dips it never decreases, and the least free over a window is at the
//! window's start or at a dip inside it: a window check is one binary search per dip
//! in the window, not a scan of the timeline.
//!
//! For "does it fit now" the profile keeps, for every partition, max-trees over its
//! nodes' free resources at `now`, one per *free-GPU bucket* (0, 1, ..., 8, 9-15,
//! 16-31, 32-64 free GPUs): a full cluster answers "no" at the roots, and a search
//! visits only nodes with enough free now. Searching the buckets in order gives the
//! fragmentation-aware choice of nodes (`Profile::free_now`): a job with GPUs takes
//! the nodes with the fewest free GPUs that still fit it (best fit: a whole free
//! 8-GPU node stays whole for an 8-GPU job), a job without GPUs takes nodes without
//! free GPUs first.
//!
//! On a node, `Slot::fit` picks the GPUs by topology: within one NVLink domain if one
//! has enough free (the one with the fewest free that fits), else within one NUMA
//! node, else over as few NVLink domains as possible. Example: 8 GPUs in NVLink
//! domains 0-3 and 4-7, GPUs 0 and 4 busy. A 2-GPU job gets 1,2 (both domains have 3
//! free; the lower domain wins the tie). Now domain 0 has one free GPU (3) and domain 1
//! three (5-7): a 1-GPU job gets 3 (the fullest domain that fits), a 3-GPU job 5,6,7,
//! and a 4-GPU job spreads over the fewest domains: 5,6,7 and 3.
//!
//! A GPU that is given either whole or as shares (`GpuDevice::whole`) is one or the
//! other at a time (`Slot::usable_gpus`): GPU 1 of a node with 4 shards on it, one
//! shard taken, is not given whole; taken whole, none of its shards is given. Whole
//! requests take such GPUs last, so a 1-GPU job on a node with GPU 0 plain and GPU 1
//! sharable gets GPU 0 and leaves GPU 1's shards free.

use crate::PerNode;
use model::{ClusterState, Job, JobState, Node, Time};
use std::collections::{BTreeMap, BTreeSet};

/// Time far enough away to stand for "never" (a job without a time limit).
pub const FOREVER: Time = Time::MAX / 4;

/// Resources free on a node over some span. CPUs and memory are signed so that an
/// over-committed node (its size shrank under running jobs) stays consistent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Free {
    pub cpus: i64,
    pub mem_mb: i64,
    /// Bit i: the node's i-th GPU (in the node's GPU list) is free. Nodes have at
    /// most 64 GPUs as far as the scheduler goes.
    pub gpus: u64,
}

impl Free {
    /// Free over two spans at once: the least of each resource, the GPUs free in both.
    pub fn meet(self, other: Free) -> Free {
        Free {
            cpus: self.cpus.min(other.cpus),
            mem_mb: self.mem_mb.min(other.mem_mb),
            gpus: self.gpus & other.gpus,
        }
    }

    fn take(&mut self, used: &Free) {
        self.cpus -= used.cpus;
        self.mem_mb -= used.mem_mb;
        self.gpus &= !used.gpus;
    }

    fn give(&mut self, used: &Free) {
        self.cpus += used.cpus;
        self.mem_mb += used.mem_mb;
        self.gpus |= used.gpus;
    }
}

/// One node's free resources over time, from `now` on.
#[derive(Debug, Clone)]
pub struct Timeline {
    /// `(from, free)`: free from this time until the next step; the first step is at
    /// `now`, the last lasts forever.
    steps: Vec<(Time, Free)>,
    /// Times after `now` where the timeline falls (reservation starts), sorted.
    dips: Vec<Time>,
}

impl Timeline {
    fn new(now: Time, free: Free) -> Timeline {
        Timeline {
            steps: vec![(now, free)],
            dips: Vec::new(),
        }
    }

    fn index_at(&self, t: Time) -> usize {
        self.steps.partition_point(|s| s.0 <= t).saturating_sub(1)
    }

    /// What is free at `t`.
    pub fn at(&self, t: Time) -> Free {
        self.steps[self.index_at(t)].1
    }

    pub fn now(&self) -> Free {
        self.steps[0].1
    }

    /// What is free during the whole of `[from, to)`.
    pub fn window(&self, from: Time, to: Time) -> Free {
        let mut free = self.at(from);
        let first = self.dips.partition_point(|d| *d <= from);
        for &dip in &self.dips[first..] {
            if dip >= to {
                break;
            }
            free = free.meet(self.at(dip));
        }
        free
    }

    /// Makes a step start exactly at `t`; returns its index.
    fn split(&mut self, t: Time) -> usize {
        let i = self.index_at(t);
        if self.steps[i].0 == t {
            return i;
        }
        let free = self.steps[i].1;
        self.steps.insert(i + 1, (t, free));
        i + 1
    }

    /// Marks `used` as taken during `[from, to)`.
    fn take(&mut self, from: Time, to: Time, used: &Free) {
        let from = from.max(self.steps[0].0);
        if to <= from {
            return;
        }
        let i = self.split(from);
        let j = if to >= FOREVER {
            self.steps.len()
        } else {
            self.split(to)
        };
        for step in &mut self.steps[i..j] {
            step.1.take(used);
        }
        if i > 0 {
            let at = self.dips.partition_point(|d| *d < from);
            if self.dips.get(at) != Some(&from) {
                self.dips.insert(at, from);
            }
        }
    }

    /// The start times from `from` on at which a window of `dur` fits as far as each
    /// step alone goes (`fits` on every step it overlaps), as closed intervals.
    /// GPU sets are checked step by step here; `window` checks them exactly.
    fn feasible_starts(
        &self,
        from: Time,
        dur: Time,
        fits: impl Fn(&Free) -> bool,
        out: &mut Vec<(Time, Time)>,
    ) {
        let mut cur = from;
        for (i, (at, free)) in self.steps.iter().enumerate() {
            if fits(free) {
                continue;
            }
            let end = self.steps.get(i + 1).map_or(FOREVER, |s| s.0);
            if end <= cur {
                continue;
            }
            // Starts in (at - dur, end) would overlap this step.
            let last_ok = at.saturating_sub(dur);
            if last_ok >= cur {
                out.push((cur, last_ok));
            }
            cur = cur.max(end);
            if cur >= FOREVER {
                return;
            }
        }
        out.push((cur, FOREVER));
    }

    /// The step boundaries, for tests and explanations.
    pub fn steps(&self) -> &[(Time, Free)] {
        &self.steps
    }
}

/// Per-partition max-tree over the partition's nodes' free resources now.
#[derive(Debug, Clone)]
struct NowTree {
    size: usize,
    /// `(cpus, mem, free GPU count)` maxima; leaves at `size..`.
    max: Vec<(i64, i64, u32)>,
}

const NONE: (i64, i64, u32) = (i64::MIN, i64::MIN, 0);

impl NowTree {
    fn new(leaves: &[(i64, i64, u32)]) -> NowTree {
        let size = leaves.len().next_power_of_two().max(1);
        let mut max = vec![NONE; 2 * size];
        max[size..size + leaves.len()].copy_from_slice(leaves);
        for i in (1..size).rev() {
            max[i] = join(max[2 * i], max[2 * i + 1]);
        }
        NowTree { size, max }
    }

    fn set(&mut self, pos: usize, value: (i64, i64, u32)) {
        let mut i = self.size + pos;
        self.max[i] = value;
        while i > 1 {
            i /= 2;
            self.max[i] = join(self.max[2 * i], self.max[2 * i + 1]);
        }
    }

    /// The first position at or after `from` whose maxima cover `need`.
    fn find(&self, from: usize, need: (i64, i64, u32)) -> Option<usize> {
        self.find_in(1, 0, self.size, from, need)
    }

    fn find_in(
        &self,
        i: usize,
        lo: usize,
        hi: usize,
        from: usize,
        need: (i64, i64, u32),
    ) -> Option<usize> {
        let m = self.max[i];
        if hi <= from || m.0 < need.0 || m.1 < need.1 || m.2 < need.2 {
            return None;
        }
        if hi - lo == 1 {
            return Some(lo);
        }
        let mid = (lo + hi) / 2;
        self.find_in(2 * i, lo, mid, from, need)
            .or_else(|| self.find_in(2 * i + 1, mid, hi, from, need))
    }
}

fn join(a: (i64, i64, u32), b: (i64, i64, u32)) -> (i64, i64, u32) {
    (a.0.max(b.0), a.1.max(b.1), a.2.max(b.2))
}

/// A node as the profile sees it.
#[derive(Debug, Clone)]
pub struct Slot<'s> {
    pub node: &'s Node,
    /// Up and not drained: may get new work.
    pub usable: bool,
    pub line: Timeline,
    /// `(partition index, position in it, position among its GPU nodes or NO_POS)` for
    /// every partition holding the node.
    member_of: Vec<(usize, usize, usize)>,
    /// The free-GPU bucket whose now-tree holds the node's leaf.
    bucket: usize,
    /// The node's GPUs per NVLink domain and per NUMA node (bit masks over the node's
    /// GPU list, in domain order); empty for nodes without GPUs.
    nvlink_masks: Vec<u64>,
    numa_masks: Vec<u64>,
    /// Each GPU given either whole or as shares (`GpuDevice::whole`): the bit of its
    /// whole device and the bits of its shares.
    shared_wholes: Vec<(u64, u64)>,
    /// The bits of those whole devices together.
    sharable: u64,
}

/// No position (a node without GPUs in a partition's GPU-node order).
const NO_POS: usize = usize::MAX;

/// The now-tree bucket of a node with `free_gpus` free GPUs.
fn bucket(free_gpus: u32) -> usize {
    match free_gpus {
        0..=8 => free_gpus as usize,
        9..=15 => 9,
        16..=31 => 10,
        _ => 11,
    }
}

/// Masks of the GPUs of each distinct key (NVLink domain or NUMA node), in key order.
fn group_masks(node: &Node, key: impl Fn(&model::GpuDevice) -> u32) -> Vec<u64> {
    let mut groups: BTreeMap<u32, u64> = BTreeMap::new();
    for (bit, g) in node.gpus.iter().take(64).enumerate() {
        *groups.entry(key(g)).or_default() |= 1 << bit;
    }
    groups.into_values().collect()
}

/// The GPUs of `node` that are given either whole or as shares: each whole device's
/// bit with the bits of its shares, by the shares' `GpuDevice::whole`.
fn shared_wholes(node: &Node) -> Vec<(u64, u64)> {
    let bit_of = |index: u32| node.gpus.iter().take(64).position(|g| g.index == index);
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (bit, g) in node.gpus.iter().take(64).enumerate() {
        let Some(whole) = g.whole.and_then(bit_of) else {
            continue;
        };
        match out.iter_mut().find(|(w, _)| *w == 1 << whole) {
            Some((_, shares)) => *shares |= 1 << bit,
            None => out.push((1 << whole, 1 << bit)),
        }
    }
    out
}

/// The lowest `n` bits of `mask` (which has at least `n`).
fn lowest_bits(mut mask: u64, n: u32) -> u64 {
    let mut out = 0;
    for _ in 0..n {
        let low = mask & mask.wrapping_neg();
        out |= low;
        mask &= !low;
    }
    out
}

/// The group (mask) with the fewest bits of `avail` that still has `n`, the first on a
/// tie: best fit, so that fuller groups stay whole.
fn best_group(groups: &[u64], avail: u64, n: u32) -> Option<u64> {
    groups
        .iter()
        .map(|g| (g & avail).count_ones())
        .zip(groups)
        .filter(|(free, _)| *free >= n)
        .min_by_key(|(free, _)| *free)
        .map(|(_, g)| g & avail)
}

impl Slot<'_> {
    /// The GPUs of `free` that may be given: a GPU given either whole or as shares
    /// is not given whole while one of its shares is taken, and its shares are not
    /// given while it is taken whole. On a window's free GPUs (met over its steps) a
    /// share taken at any time in it keeps its GPU from being given whole.
    pub fn usable_gpus(&self, free: u64) -> u64 {
        let mut out = free;
        for &(whole, shares) in &self.shared_wholes {
            if free & whole == 0 {
                out &= !shares;
            } else if free & shares != shares {
                out &= !whole;
            }
        }
        out
    }

    /// Bits of the node's GPUs of a type (all GPUs for an empty type).
    pub fn gpu_mask(&self, gpu_type: &str) -> u64 {
        let mut mask = 0;
        for (bit, g) in self.node.gpus.iter().take(64).enumerate() {
            if g.serves(gpu_type) {
                mask |= 1 << bit;
            }
        }
        mask
    }

    /// GPU indices of the bits in `mask`.
    pub fn gpu_indices(&self, mask: u64) -> Vec<u32> {
        self.node
            .gpus
            .iter()
            .take(64)
            .enumerate()
            .filter(|(bit, _)| mask & (1 << bit) != 0)
            .map(|(_, g)| g.index)
            .collect()
    }

    /// `n` GPUs out of `avail` (which has at least `n`), by topology: within one NVLink
    /// domain, else one NUMA node, else the fewest NVLink domains (the fullest first,
    /// the remainder from the domain that fits it best); the lowest bits of each.
    pub fn pick_gpus(&self, avail: u64, n: u32) -> u64 {
        if avail.count_ones() == n || self.nvlink_masks.len() <= 1 {
            return lowest_bits(avail, n);
        }
        if let Some(g) = best_group(&self.nvlink_masks, avail, n) {
            return lowest_bits(g, n);
        }
        let within = best_group(&self.numa_masks, avail, n).unwrap_or(avail);
        let mut groups: Vec<(u32, u64)> = self
            .nvlink_masks
            .iter()
            .map(|g| ((g & within).count_ones(), g & within))
            .filter(|(free, _)| *free > 0)
            .collect();
        // Fullest first; a stable sort keeps domain order on ties.
        groups.sort_by_key(|(free, _)| std::cmp::Reverse(*free));
        let mut out = 0;
        let mut left = n;
        let mut rest = &groups[..];
        while left > 0 && !rest.is_empty() {
            if let Some((_, g)) = rest
                .iter()
                .filter(|(free, _)| *free >= left)
                .min_by_key(|(free, _)| *free)
            {
                return out | lowest_bits(*g, left);
            }
            out |= rest[0].1;
            left -= rest[0].0;
            rest = &rest[1..];
        }
        out
    }

    /// The resources a job's per-node request takes here, GPUs chosen from `free` by
    /// topology (`pick_gpus`); `None` if they do not fit.
    pub fn fit(&self, req: &PerNode, free: &Free) -> Option<Free> {
        let node = self.node;
        if req.exclusive {
            if free.cpus < i64::from(node.cpus) {
                return None;
            }
        } else if free.cpus < i64::from(req.cpus) {
            return None;
        }
        let mem_need = req.mem_on(node) as i64;
        if free.mem_mb < mem_need {
            return None;
        }
        let mut gpus = 0u64;
        if req.gpus > 0 {
            let avail = self.usable_gpus(free.gpus) & self.gpu_mask(&req.gpu_type);
            if avail.count_ones() < req.gpus {
                return None;
            }
            // Whole GPUs that could be shared are taken last, so that they stay free
            // for shares while other GPUs do.
            gpus = match avail & !self.sharable {
                plain if plain.count_ones() >= req.gpus => self.pick_gpus(plain, req.gpus),
                plain => {
                    plain | self.pick_gpus(avail & self.sharable, req.gpus - plain.count_ones())
                }
            };
        }
        if req.exclusive {
            // Slurm's `--exclusive`: all of the node's GPUs too (whole ones, not the
            // shares of a shared one).
            let shares = self
                .shared_wholes
                .iter()
                .fold(0, |all, &(_, shares)| all | shares);
            gpus |= self.usable_gpus(free.gpus) & !shares;
        }
        let (cpus, mem_mb) = if req.mem_per_gpu_mb > 0 {
            // `--mem-per-gpu`: for the GPUs taken here, every one of an exclusive node.
            let mem = model::job::mem_for_gpus(req.mem_per_gpu_mb, gpus.count_ones()) as i64;
            if free.mem_mb < mem {
                return None;
            }
            let cpus = if req.exclusive { node.cpus } else { req.cpus };
            (i64::from(cpus), mem)
        } else if req.exclusive {
            (
                i64::from(node.cpus),
                if mem_need > 0 {
                    node.memory_mb as i64
                } else {
                    0
                },
            )
        } else {
            (i64::from(req.cpus), mem_need)
        };
        Some(Free { cpus, mem_mb, gpus })
    }
}

/// The profile of one pass.
#[derive(Debug, Clone)]
pub struct Profile<'s> {
    pub now: Time,
    pub slots: Vec<Slot<'s>>,
    by_name: BTreeMap<&'s str, usize>,
    /// Slot indices of each partition (in `state.partitions` order), in its node order.
    part_slots: Vec<Vec<usize>>,
    /// Slot indices of each partition's nodes with GPUs, in its node order.
    part_gpu_slots: Vec<Vec<usize>>,
    /// Per partition, a now-tree per free-GPU bucket: bucket 0 over all its nodes (a
    /// leaf is set while its node has no free GPU), the others over its GPU nodes.
    trees: Vec<Vec<NowTree>>,
}

/// When a running job gives its resources back, as far as the scheduler knows.
/// That is the end of its limit (`Job::limit_end`, suspended time not counted), or now
/// for a job already completing.
pub fn expected_end(job: &Job, now: Time) -> Time {
    let Some(mut end) = job.limit_end(now) else {
        return FOREVER;
    };
    if job.state == JobState::Completing {
        end = now;
    }
    // A job past its limit is being killed: its resources come back imminently.
    end.max(now + 1).min(FOREVER)
}

impl<'s> Profile<'s> {
    /// The profile at `now` from the state's nodes, partitions and running jobs.
    pub fn build(state: &'s ClusterState, running: &[&Job], now: Time) -> Profile<'s> {
        let mut slots: Vec<Slot<'s>> = Vec::with_capacity(state.nodes.len());
        let mut by_name = BTreeMap::new();
        for node in state.nodes.values() {
            by_name.insert(node.name.as_str(), slots.len());
            let gpus = if node.gpus.len() >= 64 {
                u64::MAX
            } else {
                (1u64 << node.gpus.len()) - 1
            };
            let shared = shared_wholes(node);
            slots.push(Slot {
                node,
                usable: node.schedulable(),
                line: Timeline::new(
                    now,
                    Free {
                        cpus: i64::from(node.cpus),
                        mem_mb: node.memory_mb as i64,
                        gpus,
                    },
                ),
                member_of: Vec::new(),
                bucket: 0,
                nvlink_masks: if node.gpus.is_empty() {
                    Vec::new()
                } else {
                    group_masks(node, |g| g.nvlink)
                },
                numa_masks: if node.gpus.is_empty() {
                    Vec::new()
                } else {
                    group_masks(node, |g| g.numa)
                },
                sharable: shared.iter().fold(0, |a, (w, _)| a | w),
                shared_wholes: shared,
            });
        }
        // Every running job's use, per node, with its end.
        let mut ends: Vec<Vec<(Time, Free)>> = vec![Vec::new(); slots.len()];
        for job in running {
            let Some(alloc) = &job.alloc else { continue };
            let end = expected_end(job, now);
            for na in &alloc.nodes {
                let Some(&i) = by_name.get(na.node.as_str()) else {
                    continue;
                };
                let slot = &slots[i];
                let mut gpus = 0u64;
                for (bit, g) in slot.node.gpus.iter().take(64).enumerate() {
                    if na.gpus.contains(&g.index) {
                        gpus |= 1 << bit;
                    }
                }
                ends[i].push((
                    end,
                    Free {
                        cpus: i64::from(na.cpus),
                        mem_mb: na.mem_mb as i64,
                        gpus,
                    },
                ));
            }
        }
        for (slot, mut uses) in slots.iter_mut().zip(ends) {
            if uses.is_empty() {
                continue;
            }
            uses.sort_unstable_by_key(|u| u.0);
            let mut free = slot.line.steps[0].1;
            for (_, u) in &uses {
                free.take(u);
            }
            let mut steps = Vec::with_capacity(uses.len() + 1);
            steps.push((now, free));
            for (end, u) in uses {
                if end >= FOREVER {
                    break;
                }
                free.give(&u);
                match steps.last_mut() {
                    Some(last) if last.0 == end => last.1 = free,
                    _ => steps.push((end, free)),
                }
            }
            slot.line.steps = steps;
        }
        for slot in &mut slots {
            slot.bucket = bucket(slot.line.now().gpus.count_ones());
        }
        let mut part_slots = Vec::with_capacity(state.partitions.len());
        let mut part_gpu_slots = Vec::with_capacity(state.partitions.len());
        let mut trees = Vec::with_capacity(state.partitions.len());
        for (p, partition) in state.partitions.iter().enumerate() {
            let members: Vec<usize> = partition
                .nodes
                .iter()
                .filter_map(|n| by_name.get(n.as_str()).copied())
                .collect();
            let gpu_members: Vec<usize> = members
                .iter()
                .copied()
                .filter(|&i| !slots[i].node.gpus.is_empty())
                .collect();
            let max_gpus = gpu_members
                .iter()
                .map(|&i| slots[i].node.gpus.len().min(64) as u32)
                .max()
                .unwrap_or(0);
            let buckets = bucket(max_gpus) + 1;
            let width = |b: usize| {
                if b == 0 {
                    members.len()
                } else {
                    gpu_members.len()
                }
            };
            let mut leaves: Vec<Vec<(i64, i64, u32)>> =
                (0..buckets).map(|b| vec![NONE; width(b)]).collect();
            let mut gpos = 0;
            for (pos, &i) in members.iter().enumerate() {
                let slot = &mut slots[i];
                let g = if slot.node.gpus.is_empty() {
                    NO_POS
                } else {
                    gpos += 1;
                    gpos - 1
                };
                slot.member_of.push((p, pos, g));
                let b = slot.bucket;
                let at = if b == 0 { pos } else { g };
                leaves[b][at] = leaf(slot);
            }
            trees.push(leaves.iter().map(|l| NowTree::new(l)).collect());
            part_slots.push(members);
            part_gpu_slots.push(gpu_members);
        }
        Profile {
            now,
            slots,
            by_name,
            part_slots,
            part_gpu_slots,
            trees,
        }
    }

    pub fn slot_of(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The slots of partition `p` (index in `state.partitions`), in its node order.
    pub fn partition_slots(&self, p: usize) -> &[usize] {
        &self.part_slots[p]
    }

    /// The slots of partition `p` whose nodes have at least the request free now (a
    /// necessary condition: GPU types, features and later dips are checked by the
    /// caller), lazily, in the order of preference: by free-GPU bucket (from the
    /// request's GPU count up for a job with GPUs, from 0 up without), then in the
    /// partition's node order.
    pub fn free_now<'p>(&'p self, p: usize, req: &PerNode) -> impl Iterator<Item = usize> + 'p {
        let need = (i64::from(req.cpus.max(1)), req.mem_mb as i64, req.gpus);
        let trees = &self.trees[p];
        let first = if req.gpus == 0 { 0 } else { bucket(req.gpus) };
        let mut b = first;
        let mut from = 0;
        std::iter::from_fn(move || {
            while b < trees.len() {
                if let Some(at) = trees[b].find(from, need) {
                    from = at + 1;
                    return Some(if b == 0 {
                        self.part_slots[p][at]
                    } else {
                        self.part_gpu_slots[p][at]
                    });
                }
                b += 1;
                from = 0;
            }
            None
        })
    }

    /// Takes `used` on slot `i` during `[from, to)`.
    pub fn take(&mut self, i: usize, from: Time, to: Time, used: &Free) {
        self.slots[i].line.take(from, to, used);
        if from <= self.now {
            let slot = &mut self.slots[i];
            let value = leaf(slot);
            let old = slot.bucket;
            let new = bucket(slot.line.now().gpus.count_ones());
            slot.bucket = new;
            for &(p, pos, gpos) in &slot.member_of {
                let at = |b: usize| if b == 0 { pos } else { gpos };
                if old != new {
                    self.trees[p][old].set(at(old), NONE);
                }
                self.trees[p][new].set(at(new), value);
            }
        }
    }

    /// For each slot in `candidates` (positions into `part`), the closed intervals of
    /// start times from `now` on at which a window of `dur` fits step by step, as
    /// `(start, end, slot)`.
    pub fn feasible_starts(
        &self,
        candidates: impl Iterator<Item = usize>,
        req: &PerNode,
        dur: Time,
        out: &mut Vec<(Time, Time, usize)>,
    ) {
        let mut buf = Vec::new();
        for i in candidates {
            let slot = &self.slots[i];
            if !slot.usable {
                continue;
            }
            let mask = slot.gpu_mask(&req.gpu_type);
            let cpus = if req.exclusive {
                i64::from(slot.node.cpus)
            } else {
                i64::from(req.cpus)
            };
            let mem = req.mem_on(slot.node) as i64;
            let fits = |f: &Free| {
                f.cpus >= cpus
                    && f.mem_mb >= mem
                    && (slot.usable_gpus(f.gpus) & mask).count_ones() >= req.gpus
            };
            buf.clear();
            slot.line.feasible_starts(self.now, dur, fits, &mut buf);
            out.extend(buf.iter().map(|&(a, b)| (a, b, i)));
        }
    }
}

fn leaf(slot: &Slot) -> (i64, i64, u32) {
    if !slot.usable {
        return NONE;
    }
    let f = slot.line.now();
    (f.cpus, f.mem_mb, f.gpus.count_ones())
}

/// Sweeps closed intervals of feasible start times `(start, end, slot)` (a slot's
/// intervals disjoint) in time order. At each time where intervals open, if at least
/// `k` slots are open, calls `visit(time, open slots in ascending order)`; `visit`
/// returns true to stop.
pub fn sweep(
    intervals: &[(Time, Time, usize)],
    k: usize,
    mut visit: impl FnMut(Time, &BTreeSet<usize>) -> bool,
) {
    // (time, 0 = close | 1 = open, slot): closes at a time sort before opens.
    let mut events: Vec<(Time, u8, usize)> = Vec::with_capacity(2 * intervals.len());
    for &(a, b, i) in intervals {
        events.push((a, 1, i));
        if b < FOREVER {
            events.push((b + 1, 0, i));
        }
    }
    events.sort_unstable();
    let mut open = BTreeSet::new();
    let mut e = 0;
    while e < events.len() {
        let t = events[e].0;
        let mut opened = false;
        while e < events.len() && events[e].0 == t {
            let (_, kind, i) = events[e];
            if kind == 1 {
                open.insert(i);
                opened = true;
            } else {
                open.remove(&i);
            }
            e += 1;
        }
        if opened && open.len() >= k && visit(t, &open) {
            return;
        }
    }
}
