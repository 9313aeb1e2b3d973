//! The placement policies over the availability profile: FCFS, EASY backfill and
//! conservative backfill. The pass in `lib.rs` hands jobs here in priority order; each
//! one starts now, or waits with a reason and, when the policy reserves for it, a
//! planned start and nodes.
//!
//! Worked example (one 4-CPU node; job R runs 2 CPUs until t=100; queue in order:
//! A 4 CPUs/50 s, B 2 CPUs/50 s, C 2 CPUs/500 s; now = 0):
//!
//! - fcfs: A does not fit and blocks the partition (`Resources`); B and C wait
//!   (`Priority`) although they would fit.
//! - easy: A does not fit; its reservation is the earliest time the profile fits it,
//!   t=100 on the node, and it waits with `Resources`, planned start 100. B fits now and
//!   ends at 50 ≤ 100: it starts. C fits now but would still run at 100, where A needs
//!   all 4 CPUs: it waits with `Priority`.
//! - conservative: as easy, and C gets a reservation too, after A's: t=150.
//!
//! A job starts now only if the profile has room for it over its whole time limit,
//! and the profile already holds every reservation made earlier in the pass, so a job
//! that starts never delays a reserved one. Under EASY each partition gets one
//! reservation (the first of its jobs that cannot start); under conservative every
//! job that cannot start gets one, up to `max_reservations`.

use crate::config::{BackfillConfig, Policy};
use crate::profile::{self, FOREVER, Free, Profile};
use crate::{PerNode, node_could_fit};
use model::{Allocation, ClusterState, Job, NodeAllocation, Reason, Time};
use std::collections::{BTreeMap, BTreeSet};

/// What the pass does with one job (or one array task).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Start(Allocation),
    Wait {
        reason: Reason,
        /// 0 when the pass made no reservation for it.
        planned_start: Time,
        /// The reserved nodes as a hostlist; empty without a reservation.
        planned_nodes: String,
    },
}

/// A request as far as fitting goes, for jobs without node lists, reservations or GPU
/// types: if one such request did not fit now (or could never start) for some
/// duration, the same request for a duration as long or longer does not either until
/// the pass ends (the profile only loses room during a pass).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct RequestKey {
    partition: usize,
    nodes: u32,
    cpus: u32,
    mem_mb: u64,
    mem_per_gpu_mb: u64,
    gpus: u32,
    exclusive: bool,
}

/// The policy's state during one pass.
#[derive(Clone)]
pub struct Planner<'a, 's> {
    config: &'a BackfillConfig,
    state: &'s ClusterState,
    /// Per partition: some job of it could not start in this pass.
    blocked: Vec<bool>,
    /// Per partition: it holds an EASY reservation.
    reserved: Vec<bool>,
    reservations: u32,
    failed_now: BTreeMap<RequestKey, Time>,
    /// Requests that can never start as the profile stands, with the shortest
    /// duration that could not.
    never: BTreeMap<RequestKey, Time>,
}

impl<'a, 's> Planner<'a, 's> {
    pub fn new(config: &'a BackfillConfig, state: &'s ClusterState) -> Planner<'a, 's> {
        Planner {
            config,
            state,
            blocked: vec![false; state.partitions.len()],
            reserved: vec![false; state.partitions.len()],
            reservations: 0,
            failed_now: BTreeMap::new(),
            never: BTreeMap::new(),
        }
    }

    /// Starts the job now in partition `p` if it fits there, taking its room in the
    /// profile; `None` leaves the profile and the policy's state as they were (a job
    /// of several partitions tries each before it waits).
    pub fn start_now(
        &mut self,
        profile: &mut Profile<'s>,
        p: usize,
        job: &Job,
        req: &PerNode,
    ) -> Option<Allocation> {
        if self.config.policy == Policy::Fcfs && self.blocked[p] {
            return None;
        }
        let now = profile.now;
        let dur = job_duration(job);
        // `-N min-max`: as many nodes as are free now, else the least, as Slurm.
        let mut counts = job.spec.node_counts().filter(|&n| n <= req.most_nodes);
        let mut chosen = counts.find_map(|n| {
            let wider = (n != req.nodes).then(|| req.on_nodes(&job.spec, n));
            self.fits_now(profile, p, job, wider.as_ref().unwrap_or(req), dur)
        })?;
        spread_gpus(&job.spec, req, &mut chosen);
        let end = now.saturating_add(dur).min(FOREVER);
        let alloc = allocation(profile, &chosen);
        for (slot, used) in &chosen {
            profile.take(*slot, now, end, used);
        }
        Some(alloc)
    }

    /// The job did not start now (`start_now`) in partition `p`: its reason, and the
    /// reservation the policy makes for it there, if any.
    pub fn wait(
        &mut self,
        profile: &mut Profile<'s>,
        p: usize,
        job: &Job,
        req: &PerNode,
    ) -> Decision {
        if self.config.policy == Policy::Fcfs && self.blocked[p] {
            return wait(Reason::Priority);
        }
        let dur = job_duration(job);
        let first = !self.blocked[p];
        self.blocked[p] = true;
        let reason = if first {
            Reason::Resources
        } else {
            Reason::Priority
        };
        let may_reserve = match self.config.policy {
            Policy::Fcfs => false,
            Policy::Easy => !self.reserved[p],
            Policy::Conservative => {
                self.config.max_reservations == 0
                    || self.reservations < self.config.max_reservations
            }
        };
        if may_reserve
            && let Some((start, mut chosen)) = self.earliest_cached(profile, p, job, req, dur)
        {
            spread_gpus(&job.spec, req, &mut chosen);
            let end = start.saturating_add(dur).min(FOREVER);
            for (slot, used) in &chosen {
                profile.take(*slot, start, end, used);
            }
            self.reserved[p] = true;
            self.reservations += 1;
            let names: Vec<&str> = chosen
                .iter()
                .map(|(s, _)| profile.slots[*s].node.name.as_str())
                .collect();
            return Decision::Wait {
                reason,
                planned_start: start,
                planned_nodes: model::hostlist::fold(&names),
            };
        }
        wait(reason)
    }

    /// Nodes on which the job fits from now over its whole limit, with what it takes
    /// on each; `None` if fewer than it needs.
    fn fits_now(
        &mut self,
        profile: &Profile<'s>,
        p: usize,
        job: &Job,
        req: &PerNode,
        dur: Time,
    ) -> Option<Vec<(usize, Free)>> {
        let key = request_key(p, job, req);
        if let Some(k) = &key
            && self.failed_now.get(k).is_some_and(|d| *d <= dur)
        {
            return None;
        }
        let now = profile.now;
        let to = now.saturating_add(dur).min(FOREVER);
        let want = req.nodes as usize;
        let filter = NodeFilter::new(job);
        let mut chosen = Vec::with_capacity(want);
        let slots = profile.partition_slots(p);
        let check = |i: usize| -> Option<Free> {
            let slot = &profile.slots[i];
            if !slot.usable || !filter.allows(slot.node) {
                return None;
            }
            let used = slot.fit(req, &slot.line.window(now, to))?;
            self.reservations_allow(job, &slot.node.name, now, to)
                .then_some(used)
        };
        // The listed nodes first, in the partition's order: every one of them (a job
        // without a list goes straight to the best fit, with no scan of the nodes).
        let mut missing = 0;
        if filter.has_list() {
            let listed: Vec<usize> = slots
                .iter()
                .copied()
                .filter(|&i| filter.lists(profile.slots[i].node))
                .collect();
            missing = want.min(listed.len());
            for i in listed {
                if chosen.len() == want {
                    break;
                }
                if let Some(used) = check(i) {
                    chosen.push((i, used));
                    missing -= 1;
                }
            }
        }
        if missing == 0 && chosen.len() < want {
            // Best fit by free GPUs first (`Profile::free_now`).
            for i in profile.free_now(p, req) {
                if filter.lists(profile.slots[i].node) {
                    continue;
                }
                if let Some(used) = check(i) {
                    chosen.push((i, used));
                    if chosen.len() == want {
                        break;
                    }
                }
            }
        }
        if chosen.len() == want {
            return Some(chosen);
        }
        if let Some(k) = key {
            let d = self.failed_now.entry(k).or_insert(dur);
            *d = (*d).min(dur);
        }
        None
    }

    /// `earliest`, remembering requests that can never start.
    fn earliest_cached(
        &mut self,
        profile: &Profile<'s>,
        p: usize,
        job: &Job,
        req: &PerNode,
        dur: Time,
    ) -> Option<(Time, Vec<(usize, Free)>)> {
        let key = request_key(p, job, req);
        if let Some(k) = &key
            && self.never.get(k).is_some_and(|d| *d <= dur)
        {
            return None;
        }
        let found = self.earliest(profile, p, job, req, dur);
        if found.is_none()
            && let Some(k) = key
        {
            let d = self.never.entry(k).or_insert(dur);
            *d = (*d).min(dur);
        }
        found
    }

    /// The earliest time from now at which the job fits on enough nodes over its whole
    /// limit, with the nodes and what it would take on each.
    fn earliest(
        &self,
        profile: &Profile<'s>,
        p: usize,
        job: &Job,
        req: &PerNode,
        dur: Time,
    ) -> Option<(Time, Vec<(usize, Free)>)> {
        let filter = NodeFilter::new(job);
        let candidates = profile.partition_slots(p).iter().copied().filter(|&i| {
            let node = profile.slots[i].node;
            filter.allows(node) && node_could_fit(node, req)
        });
        let mut intervals = Vec::new();
        profile.feasible_starts(candidates, req, dur, &mut intervals);
        if !self.state.reservations.is_empty() {
            intervals = self.without_reservations(profile, job, dur, intervals);
        }
        let want = req.nodes as usize;
        let is_listed = |i: usize| filter.lists(profile.slots[i].node);
        // Every listed node the job must get (or `want` of them, if it lists more).
        let must = if filter.has_list() {
            let listed = profile.partition_slots(p).iter().filter(|&&i| is_listed(i));
            want.min(listed.count())
        } else {
            0
        };
        let mut found = None;
        profile::sweep(&intervals, want, |t, open| {
            let to = t.saturating_add(dur).min(FOREVER);
            let mut chosen = Vec::with_capacity(want);
            // The listed nodes first (without a list, every open one in order).
            let listed = (must > 0).then(|| open.iter().filter(|&&i| is_listed(i)));
            let listed_first = listed
                .into_iter()
                .flatten()
                .chain(open.iter().filter(|&&i| must == 0 || !is_listed(i)));
            for &i in listed_first {
                if chosen.len() < must && !is_listed(i) {
                    return false;
                }
                let slot = &profile.slots[i];
                if let Some(used) = slot.fit(req, &slot.line.window(t, to))
                    && self.reservations_allow(job, &slot.node.name, t, to)
                {
                    chosen.push((i, used));
                    if chosen.len() == want {
                        found = Some((t, chosen));
                        return true;
                    }
                }
            }
            false
        });
        found
    }

    fn reservations_allow(&self, job: &Job, node: &str, from: Time, to: Time) -> bool {
        (self.state.reservations.is_empty() && job.spec.reservation.is_empty())
            || crate::reservation::node_allowed(self.state, &job.spec.reservation, node, from, to)
    }

    /// Cuts out of feasible start intervals the starts that advance reservations
    /// forbid: for a job outside a reservation, starts whose window would overlap it
    /// on its nodes; for a job inside one, starts outside its window or off its nodes.
    fn without_reservations(
        &self,
        profile: &Profile<'s>,
        job: &Job,
        dur: Time,
        intervals: Vec<(Time, Time, usize)>,
    ) -> Vec<(Time, Time, usize)> {
        let mut out = Vec::with_capacity(intervals.len());
        for (a, b, i) in intervals {
            let node = profile.slots[i].node.name.as_str();
            let mut pieces = vec![(a, b)];
            for r in self.state.reservations.values() {
                let on_node = r.nodes.iter().any(|n| n == node);
                let inside = job.spec.reservation == r.name;
                if !inside && !on_node {
                    continue;
                }
                for (start, end) in windows(r, profile.now, b) {
                    pieces = if inside {
                        if !on_node {
                            Vec::new()
                        } else {
                            // Any start in the window: without FLEX the job ends by
                            // its end (`Reservation::ends_jobs_at`).
                            intersect(&pieces, start, end - 1)
                        }
                    } else {
                        // Starts in (start - dur, end) overlap the window.
                        subtract(&pieces, start.saturating_sub(dur) + 1, end - 1)
                    };
                    if inside {
                        // A job inside a reservation uses its current window only.
                        break;
                    }
                }
            }
            out.extend(pieces.into_iter().map(|(a, b)| (a, b, i)));
        }
        out
    }
}

/// A reservation's windows from its current one on, up to `until` (repeating ones).
fn windows(r: &model::Reservation, now: Time, until: Time) -> Vec<(Time, Time)> {
    let (mut start, mut end) = r.window_at(now);
    let period = if r.has(model::ReservationFlag::Daily) {
        86_400
    } else if r.has(model::ReservationFlag::Weekly) {
        7 * 86_400
    } else {
        0
    };
    let mut out = vec![(start, end)];
    while period > 0 && start < until && out.len() < 1000 {
        start += period;
        end += period;
        out.push((start, end));
    }
    out
}

fn intersect(pieces: &[(Time, Time)], lo: Time, hi: Time) -> Vec<(Time, Time)> {
    pieces
        .iter()
        .filter_map(|&(a, b)| {
            let (a, b) = (a.max(lo), b.min(hi));
            (a <= b).then_some((a, b))
        })
        .collect()
}

fn subtract(pieces: &[(Time, Time)], lo: Time, hi: Time) -> Vec<(Time, Time)> {
    let mut out = Vec::with_capacity(pieces.len() + 1);
    for &(a, b) in pieces {
        if hi < a || lo > b {
            out.push((a, b));
            continue;
        }
        if a < lo {
            out.push((a, lo - 1));
        }
        if b > hi {
            out.push((hi + 1, b));
        }
    }
    out
}

fn request_key(p: usize, job: &Job, req: &PerNode) -> Option<RequestKey> {
    let spec = &job.spec;
    (spec.nodelist.is_empty()
        && spec.exclude.is_empty()
        && spec.constraint.is_empty()
        && spec.reservation.is_empty()
        && req.gpu_type.is_empty()
        && !req.whole_memory)
        .then_some(RequestKey {
            partition: p,
            nodes: req.nodes,
            cpus: req.cpus,
            mem_mb: req.mem_mb,
            mem_per_gpu_mb: req.mem_per_gpu_mb,
            gpus: req.gpus,
            exclusive: req.exclusive,
        })
}

fn wait(reason: Reason) -> Decision {
    Decision::Wait {
        reason,
        planned_start: 0,
        planned_nodes: String::new(),
    }
}

/// How long the job holds its resources as far as planning goes: its time limit, or
/// forever without one.
pub fn job_duration(job: &Job) -> Time {
    job.time_limit_secs().map_or(FOREVER, |d| d.max(1))
}

/// `--gpus=N` over several nodes: each node found with the most any one takes keeps
/// its share (`JobSpec::gpus_on_node`, the larger shares first), giving back the
/// GPUs of the highest indices, and with `--mem-per-gpu` the memory of those.
///
/// Example: `--gpus=7 -N2` is placed on two nodes with 4 free GPUs each, and keeps
/// 4 and 3 of them. An exclusive job keeps every GPU of its nodes.
fn spread_gpus(spec: &model::JobSpec, req: &PerNode, chosen: &mut [(usize, Free)]) {
    if spec.gpus_per_node > 0 || spec.gpus == 0 || req.exclusive {
        return;
    }
    let nodes = chosen.len() as u32;
    for (i, (_, used)) in chosen.iter_mut().enumerate() {
        let share = spec.gpus_on_node(i as u32, nodes);
        while used.gpus.count_ones() > share {
            used.gpus &= !(1u64 << (63 - used.gpus.leading_zeros()));
        }
        if req.mem_per_gpu_mb > 0 {
            used.mem_mb = model::job::mem_for_gpus(req.mem_per_gpu_mb, share) as i64;
        }
    }
}

fn allocation(profile: &Profile, chosen: &[(usize, Free)]) -> Allocation {
    Allocation {
        nodes: chosen
            .iter()
            .map(|(i, used)| {
                let slot = &profile.slots[*i];
                NodeAllocation {
                    node: slot.node.name.clone(),
                    cpus: used.cpus as u32,
                    mem_mb: used.mem_mb as u64,
                    gpus: slot.gpu_indices(used.gpus),
                    cpu_ids: Vec::new(),
                }
            })
            .collect(),
    }
}

/// `--nodelist`, `--exclude` and `--constraint` of a job.
///
/// The node list is "at least these", as Slurm's: the job gets every node it names,
/// and when it needs more (`-N 3 -w n1`, or `--gpus=5 -w n1` on 4-GPU nodes) others
/// beside them.
pub struct NodeFilter {
    /// `--nodelist`; `Some(None)`: a list that does not parse, matching nothing.
    listed: Option<Option<BTreeSet<String>>>,
    /// The list names as many nodes as the job needs, or more: no other node may
    /// serve it.
    only_listed: bool,
    /// `None`: an exclude list that does not parse, so that no node is allowed
    /// (submit and update refuse those, so only an old record could have one).
    excluded: Option<BTreeSet<String>>,
    /// `None`: no constraint; `Some(None)`: one that does not parse, matching nothing.
    constraint: Option<Option<model::constraint::Constraint>>,
}

impl NodeFilter {
    pub fn new(job: &Job) -> NodeFilter {
        let expand = |text: &str| -> Option<BTreeSet<String>> {
            model::hostlist::expand(text)
                .ok()
                .map(|names| names.into_iter().collect())
        };
        let listed = (!job.spec.nodelist.is_empty()).then(|| expand(&job.spec.nodelist));
        let only_listed = listed.as_ref().is_some_and(|l| {
            l.as_ref()
                .is_none_or(|l| l.len() >= job.spec.num_nodes.max(1) as usize)
        });
        NodeFilter {
            listed,
            only_listed,
            excluded: expand(&job.spec.exclude),
            constraint: (!job.spec.constraint.is_empty())
                .then(|| model::constraint::Constraint::parse(&job.spec.constraint).ok()),
        }
    }

    /// May the job use this node: not excluded, with the features its `--constraint`
    /// asks for, and in its `--nodelist` when the list holds every node it needs?
    pub fn allows(&self, node: &model::Node) -> bool {
        let name = node.name.as_str();
        self.excluded.as_ref().is_some_and(|e| !e.contains(name))
            && (!self.only_listed || self.lists(node))
            && self
                .constraint
                .as_ref()
                .is_none_or(|c| c.as_ref().is_some_and(|c| c.matches(&node.features)))
    }

    /// Does the job's `--nodelist` name this node (one it must get)?
    pub fn lists(&self, node: &model::Node) -> bool {
        self.listed
            .as_ref()
            .is_some_and(|l| l.as_ref().is_some_and(|l| l.contains(node.name.as_str())))
    }

    /// Has the job a `--nodelist`?
    pub fn has_list(&self) -> bool {
        self.listed.is_some()
    }

    /// Could these nodes (a partition's) ever hold the job's per-node request `req`
    /// on `count` of them: every node it lists can, and enough nodes in all.
    pub fn could_hold<'n>(
        &self,
        nodes: impl IntoIterator<Item = &'n model::Node>,
        req: &PerNode,
        count: u32,
    ) -> bool {
        let mut able = 0u32;
        for node in nodes {
            if self.allows(node) && node_could_fit(node, req) {
                able += 1;
            } else if self.lists(node) {
                return false;
            }
        }
        able >= count
    }
}
