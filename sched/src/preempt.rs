//! Preemption: a pending job that cannot start now may stop running jobs it outranks
//! (Slurm's `PreemptType`): by QOS (`[[qos]] preempt` lists the QOS a QOS may preempt)
//! or by partition tier (a job of a higher `PriorityTier` partition preempts jobs of
//! lower-tier partitions on the nodes they share). The victim's QOS `preempt_mode`, or
//! the cluster's `[scheduler] preempt_mode`, says how it is stopped: CANCEL (it ends
//! PREEMPTED), REQUEUE (back to PENDING) or SUSPEND (SIGSTOP; its CPUs and GPUs are lent
//! to the preemptor, its memory stays held, and it resumes once the room is free again).
//!
//! The pass stays pure: it only names victims (`Plan::preempts`). The preemptor keeps
//! waiting until they are gone; the controller terminates or suspends them and the next
//! pass starts it in their room. Victims already being terminated for a job count as
//! freed for it, so a waiting preemptor never picks a second set while the first one is
//! still on its way out.
//!
//! Accounts' guaranteed quota (`guarantee`) adds victims whatever the PreemptType: a
//! job within its account's guarantee may reclaim it from jobs of other accounts that
//! borrow it, stopped by `[scheduler] reclaim_mode`.
//!
//! Choosing victims: on every node the job could use, the victims it may preempt are
//! taken lowest first (partition tier, QOS priority, job priority, then the youngest)
//! until the node has room; the nodes needing the fewest and lowest victims win; then
//! victims the chosen nodes turn out not to need are dropped again, highest first.
//!
//! Worked example: node n1 (4 CPUs) runs job 1 (QOS `low`, 2 CPUs, priority 10) and job
//! 2 (QOS `low`, 2 CPUs, priority 20); node n2 (4 CPUs) runs job 3 (QOS `low`, 4 CPUs).
//! Job 4 (QOS `high`, which may preempt `low`) needs 2 CPUs: on n1 job 1 alone frees
//! enough, on n2 job 3 would; both cost one victim, and job 1 is the lower, so job 1 is
//! preempted. Had job 4 needed 4 CPUs, n1 would cost two victims and n2 one: job 3.

use crate::backfill::NodeFilter;
use crate::guarantee::Guarantees;
use crate::profile::{Free, Profile, Slot};
use crate::{PerNode, SchedConfig, node_could_fit};
use model::{ClusterState, Job, JobId, JobState, NodeAllocation, PreemptMode, Time};
use std::cmp::Reverse;
use std::collections::BTreeSet;

/// Who may preempt whom (`[scheduler] preempt_type`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PreemptType {
    /// No preemption (Slurm's `preempt/none`, the default).
    #[default]
    None,
    /// A job's QOS preempts the QOS in its `preempt` list (`preempt/qos`).
    Qos,
    /// A job of a higher-`PriorityTier` partition preempts jobs of lower-tier
    /// partitions (`preempt/partition_prio`).
    PartitionPrio,
}

impl PreemptType {
    /// Parses `none`, `qos` or `partition_prio` (any case).
    pub fn parse(text: &str) -> Option<PreemptType> {
        match text.trim().to_ascii_lowercase().as_str() {
            "none" => Some(PreemptType::None),
            "qos" => Some(PreemptType::Qos),
            "partition_prio" => Some(PreemptType::PartitionPrio),
            _ => None,
        }
    }
}

/// The preemption knobs of `[scheduler]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PreemptConfig {
    pub kind: PreemptType,
    /// The cluster's mode, for victims whose QOS names none.
    pub mode: PreemptMode,
    /// PreemptExemptTime: jobs that have run less than this many seconds are spared.
    pub exempt_secs: Time,
    /// How borrowers of a guaranteed quota are stopped when it is reclaimed.
    pub reclaim_mode: PreemptMode,
}

impl PreemptConfig {
    /// The config was checked when parsed; unknown values turn preemption off.
    pub fn from_config(config: &model::config::SchedulerConfig) -> PreemptConfig {
        PreemptConfig {
            kind: PreemptType::parse(&config.preempt_type).unwrap_or_default(),
            mode: PreemptMode::parse(&config.preempt_mode).unwrap_or(PreemptMode::Cancel),
            exempt_secs: model::units::parse_duration_secs(&config.preempt_exempt_time)
                .ok()
                .flatten()
                .map_or(0, |s| s as Time),
            reclaim_mode: PreemptMode::parse(&config.reclaim_mode).unwrap_or(PreemptMode::Requeue),
        }
    }

    pub fn enabled(&self) -> bool {
        self.kind != PreemptType::None
    }
}

/// One job to preempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preempt {
    pub job_id: JobId,
    pub mode: PreemptMode,
    /// The pending job it makes room for.
    pub preemptor: JobId,
    /// GraceTime of the victim's QOS: SIGTERM now, the kill this many seconds later.
    pub grace_secs: u32,
}

/// Is job `id` still waiting to start as a preemptor (pending and not held)? Victims
/// being freed count as room for it; once it started (or went away), they do not.
pub fn preemptor_waiting(state: &ClusterState, id: JobId) -> bool {
    state.job(id).is_some_and(|j| j.is_pending() && !j.held)
}

/// Does a suspended job lend its CPUs and GPUs (its memory stays held)? Jobs suspended
/// by an admin do, and jobs suspended for a preemptor while it waits to start in their
/// room. Once the preemptor started (or went away), the job claims its room back: it
/// counts whole again (over-committing its nodes while the preemptor runs there), so
/// that nobody else takes the room, and it resumes as soon as the room is free.
pub fn lends_cpus(state: &ClusterState, job: &Job) -> bool {
    job.state == JobState::Suspended
        && job
            .preemption
            .as_ref()
            .is_none_or(|p| preemptor_waiting(state, p.preemptor))
}

/// The job as the availability profile counts it while it lends its CPUs and GPUs:
/// memory only.
pub fn memory_only(job: &Job) -> Job {
    let mut copy = job.clone();
    if let Some(alloc) = copy.alloc.as_mut() {
        for na in &mut alloc.nodes {
            na.cpus = 0;
            na.gpus.clear();
        }
    }
    copy
}

/// Suspended jobs whose preemptor no longer waits and whose CPUs and GPUs are free
/// again, to be resumed, oldest first.
pub fn resumable(state: &ClusterState) -> Vec<JobId> {
    let mut orphans: Vec<&Job> = Vec::new();
    let mut used: std::collections::BTreeMap<&str, (u32, BTreeSet<u32>)> = Default::default();
    for job in state.running_jobs() {
        if job.state == JobState::Suspended {
            if !lends_cpus(state, job) && job.preemption.is_some() {
                orphans.push(job);
            }
            continue;
        }
        for na in job.alloc.iter().flat_map(|a| &a.nodes) {
            let u = used.entry(na.node.as_str()).or_default();
            u.0 += na.cpus;
            u.1.extend(&na.gpus);
        }
    }
    orphans.sort_by_key(|j| (j.start_time, j.id));
    let mut out = Vec::new();
    for job in orphans {
        let nodes = job
            .alloc
            .as_ref()
            .map(|a| a.nodes.as_slice())
            .unwrap_or(&[]);
        let room = nodes.iter().all(|na| {
            let Some(node) = state.nodes.get(&na.node) else {
                return false;
            };
            let (cpus, gpus) = used.get(na.node.as_str()).cloned().unwrap_or_default();
            cpus + na.cpus <= node.cpus && na.gpus.iter().all(|g| !gpus.contains(g))
        });
        if room {
            for na in nodes {
                let u = used.entry(na.node.as_str()).or_default();
                u.0 += na.cpus;
                u.1.extend(&na.gpus);
            }
            out.push(job.id);
        }
    }
    out
}

/// How a job is preempted: its QOS's `preempt_mode`, else the cluster's.
pub fn mode_of(config: &SchedConfig, job: &Job) -> PreemptMode {
    let assocs = &config.assocs;
    assocs
        .qos
        .get(assocs.qos_of(&job.spec))
        .and_then(|q| PreemptMode::parse(&q.preempt_mode))
        .unwrap_or(config.preempt.mode)
}

/// The GraceTime of a job's QOS, seconds.
pub fn grace_of(config: &SchedConfig, job: &Job) -> u32 {
    let assocs = &config.assocs;
    assocs
        .qos
        .get(assocs.qos_of(&job.spec))
        .map_or(0, |q| q.grace_time)
}

fn tier(state: &ClusterState, job: &Job) -> u32 {
    state
        .partition(&job.spec.partition)
        .map_or(0, |p| p.priority_tier)
}

/// May `preemptor` preempt `victim` (whatever their resources)?
pub fn may_preempt(
    config: &SchedConfig,
    state: &ClusterState,
    preemptor: &Job,
    victim: &Job,
) -> bool {
    if preemptor.id == victim.id || mode_of(config, victim) == PreemptMode::Off {
        return false;
    }
    match config.preempt.kind {
        PreemptType::None => false,
        PreemptType::Qos => {
            let assocs = &config.assocs;
            let theirs = assocs.qos_of(&victim.spec);
            assocs
                .qos
                .get(assocs.qos_of(&preemptor.spec))
                .is_some_and(|q| q.preempt.iter().any(|n| n == theirs))
        }
        PreemptType::PartitionPrio => tier(state, preemptor) > tier(state, victim),
    }
}

/// What a pending job got from the search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Preempting cannot make room for it now.
    NotPossible,
    /// Jobs already being preempted for it will make the room: wait for them.
    Wait,
    /// Preempt these.
    Victims(Vec<Preempt>),
}

/// Victims are taken in ascending order of this key: partition tier, QOS priority,
/// job priority, then the youngest (latest start) and the highest id.
type VictimKey = (u32, u32, u32, Reverse<Time>, Reverse<JobId>);

struct Candidate<'s> {
    job: &'s Job,
    /// Its QOS name (`key.0` is its partition tier).
    qos: &'s str,
    key: VictimKey,
    mode: PreemptMode,
    /// Already being terminated (CANCEL or REQUEUE) for `preemption.preemptor`.
    dying: bool,
}

/// A node the job could get by preempting: the victims it needs there (indices into
/// the search's victim list, lowest first) and the highest of them.
struct NodeOption {
    top: Option<VictimKey>,
    slot: usize,
    victims: Vec<usize>,
    /// It has room only counting jobs already being preempted for the job.
    needs_dying: bool,
}

/// The victim search of one pass. Victims named in the pass are not offered twice.
pub struct Preemptor<'s> {
    state: &'s ClusterState,
    config: &'s SchedConfig,
    now: Time,
    candidates: Option<Vec<Candidate<'s>>>,
    claimed: BTreeSet<JobId>,
    /// The lowest tier of any partition.
    min_tier: u32,
    /// Requests (of jobs without node lists or reservations, while no job is being
    /// terminated) for which preempting found no room: the profile only loses room and
    /// victims are only claimed during a pass, so they find none again.
    impossible: BTreeSet<RequestKey>,
    /// The accounts' guarantees, when any is set.
    guarantees: Option<Guarantees<'s>>,
}

/// What a victim search depends on, for requests without node lists or reservations.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct RequestKey {
    qos: String,
    tier: u32,
    partition: usize,
    nodes: u32,
    cpus: u32,
    mem_mb: u64,
    gpus: u32,
    gpu_type: String,
    exclusive: bool,
}

impl<'s> Preemptor<'s> {
    pub fn new(state: &'s ClusterState, now: Time, config: &'s SchedConfig) -> Preemptor<'s> {
        Preemptor {
            state,
            config,
            now,
            candidates: None,
            claimed: BTreeSet::new(),
            impossible: BTreeSet::new(),
            guarantees: crate::guarantee::any(&config.assocs)
                .then(|| Guarantees::new(state, &config.assocs)),
            min_tier: state
                .partitions
                .iter()
                .map(|p| p.priority_tier)
                .min()
                .unwrap_or(0),
        }
    }

    /// Counts a start the pass planned (what its account holds of its guarantee).
    pub fn started(&mut self, job: &Job, alloc: &model::Allocation) {
        if let Some(g) = self.guarantees.as_mut() {
            g.started(job, alloc, self.state);
        }
    }

    /// A cheap test: could this job preempt anybody at all?
    pub fn could_preempt(&self, job: &Job) -> bool {
        if self
            .guarantees
            .as_ref()
            .is_some_and(|g| g.may_reclaim_any(job))
        {
            return true;
        }
        match self.config.preempt.kind {
            PreemptType::None => false,
            PreemptType::Qos => {
                let assocs = &self.config.assocs;
                assocs
                    .qos
                    .get(assocs.qos_of(&job.spec))
                    .is_some_and(|q| !q.preempt.is_empty())
            }
            PreemptType::PartitionPrio => tier(self.state, job) > self.min_tier,
        }
    }

    fn candidates(&mut self) -> &[Candidate<'s>] {
        if self.candidates.is_none() {
            let ctx = crate::priority::Context::new(self.state, self.now, self.config);
            let assocs = &self.config.assocs;
            let mut list = Vec::new();
            for job in self.state.running_jobs() {
                if job.state == JobState::Completing {
                    continue;
                }
                let qos_priority = assocs
                    .qos
                    .get(assocs.qos_of(&job.spec))
                    .map_or(0, |q| q.priority);
                let (tier, priority) = ctx.rank(job);
                let dying = job.state == JobState::Running
                    && job
                        .preemption
                        .as_ref()
                        .is_some_and(|p| p.mode != PreemptMode::Suspend);
                list.push(Candidate {
                    job,
                    qos: assocs.qos_of(&job.spec),
                    key: (
                        tier,
                        qos_priority,
                        priority,
                        Reverse(job.start_time),
                        Reverse(job.id),
                    ),
                    mode: if job.state == JobState::Suspended {
                        PreemptMode::Suspend
                    } else {
                        mode_of(self.config, job)
                    },
                    dying,
                });
            }
            list.sort_by_key(|c| c.key);
            self.candidates = Some(list);
        }
        self.candidates.as_deref().unwrap_or_default()
    }

    /// Looks for running jobs `job` (of partition `p`, needing `req` on each node) may
    /// preempt so that it fits now on `req.nodes` nodes of its partition.
    pub fn find(&mut self, profile: &Profile, p: usize, job: &Job, req: &PerNode) -> Outcome {
        let (outcome, key) = self.search(profile, p, job, req);
        if outcome == Outcome::NotPossible
            && let Some(key) = key
        {
            self.impossible.insert(key);
        }
        outcome
    }

    /// `find`, and the request's cache key when the outcome may be cached.
    fn search(
        &mut self,
        profile: &Profile,
        p: usize,
        job: &Job,
        req: &PerNode,
    ) -> (Outcome, Option<RequestKey>) {
        let mut guarantees = self.guarantees.take();
        let out = self.search_with(profile, p, job, req, &mut guarantees);
        self.guarantees = guarantees;
        out
    }

    /// `search`, with the guarantees taken out of `self` meanwhile.
    fn search_with(
        &mut self,
        profile: &Profile,
        p: usize,
        job: &Job,
        req: &PerNode,
        guarantees: &mut Option<Guarantees<'s>>,
    ) -> (Outcome, Option<RequestKey>) {
        let state = self.state;
        let config = self.config;
        let now = self.now;
        let dur = crate::backfill::job_duration(job);
        let to = now.saturating_add(dur).min(crate::profile::FOREVER);
        let assocs = &config.assocs;
        let my_qos = assocs.qos_of(&job.spec);
        let my_tier = tier(state, job);
        let preemptable: &[String] = assocs.qos.get(my_qos).map_or(&[], |q| q.preempt.as_slice());
        let key = (job.spec.nodelist.is_empty()
            && job.spec.exclude.is_empty()
            && job.spec.reservation.is_empty()
            && !job.spec.mem_whole_node
            && state.reservations.is_empty())
        .then(|| RequestKey {
            qos: my_qos.to_string(),
            tier: my_tier,
            partition: p,
            nodes: req.nodes,
            cpus: req.cpus,
            mem_mb: req.mem_mb,
            gpus: req.gpus,
            gpu_type: req.gpu_type.clone(),
            exclusive: req.exclusive,
        });
        if key.as_ref().is_some_and(|k| self.impossible.contains(k)) {
            return (Outcome::NotPossible, None);
        }
        let kind = config.preempt.kind;
        let claimed = std::mem::take(&mut self.claimed);
        let job_req = model::tres::job_request(&job.spec);
        let candidates = self.candidates();
        let any_dying = candidates.iter().any(|c| c.dying);
        let cache = if any_dying { None } else { key };
        // Per candidate: what it frees for `job`, and whether it is freeing already.
        let mut dying_for_job: Vec<&Candidate> = Vec::new();
        // Each victim with how it is stopped.
        let mut victims: Vec<(&Candidate, PreemptMode)> = Vec::new();
        for c in candidates {
            let v = c.job;
            if c.dying {
                let theirs = v.preemption.as_ref().map_or(0, |x| x.preemptor);
                if theirs == job.id || !preemptor_waiting(state, theirs) {
                    dying_for_job.push(c);
                }
                continue;
            }
            let by_rank = c.mode != PreemptMode::Off
                && v.id != job.id
                && match kind {
                    PreemptType::None => false,
                    PreemptType::Qos => preemptable.iter().any(|q| q == c.qos),
                    PreemptType::PartitionPrio => my_tier > c.key.0,
                };
            let reclaim = !by_rank
                && c.mode != PreemptMode::Off
                && v.id != job.id
                && guarantees.as_ref().is_some_and(|g| {
                    v.alloc.as_ref().is_some_and(|a| {
                        g.may_reclaim(job, &job_req, v, &model::tres::alloc_tres(a, &state.nodes))
                    })
                });
            if !(by_rank || reclaim) || claimed.contains(&v.id) {
                continue;
            }
            let mode = if by_rank || v.state == JobState::Suspended {
                c.mode
            } else {
                config.preempt.reclaim_mode
            };
            // PreemptExemptTime: a job that has run less than this is spared.
            if v.state == JobState::Running && v.run_secs(now) < config.preempt.exempt_secs {
                continue;
            }
            // A suspended job still lends its CPUs to a standing preemptor: there is
            // nothing more to take from it.
            if v.state == JobState::Suspended && lends_cpus(state, v) {
                continue;
            }
            victims.push((c, mode));
        }
        if victims.is_empty() && dying_for_job.is_empty() {
            self.claimed = claimed;
            return (Outcome::NotPossible, cache);
        }
        let filter = NodeFilter::new(job);
        let reservations = !state.reservations.is_empty() || !job.spec.reservation.is_empty();
        let mut options: Vec<NodeOption> = Vec::new();
        for &i in profile.partition_slots(p) {
            let slot = &profile.slots[i];
            let node = slot.node;
            if !slot.usable || !filter.allows(node) || !node_could_fit(node, req) {
                continue;
            }
            // Within the job's reservation, or any one of its several.
            let allowed =
                |within: &str| crate::reservation::node_allowed(state, within, &node.name, now, to);
            if reservations
                && !(job.spec.reservation.is_empty() && allowed("")
                    || job.spec.reservations().any(allowed))
            {
                continue;
            }
            let plain = slot.line.now();
            let mut free = plain;
            for c in &dying_for_job {
                if let Some(na) = on_node(c.job, &node.name) {
                    add(&mut free, &freed(slot, na, PreemptMode::Cancel));
                }
            }
            if slot.fit(req, &free).is_some() {
                let needs_dying = slot.fit(req, &plain).is_none();
                options.push(NodeOption {
                    top: None,
                    slot: i,
                    victims: Vec::new(),
                    needs_dying,
                });
                continue;
            }
            let mut taken = Vec::new();
            for (n, (c, mode)) in victims.iter().enumerate() {
                let Some(na) = on_node(c.job, &node.name) else {
                    continue;
                };
                let gain = freed(slot, na, *mode);
                if gain.cpus == 0 && gain.mem_mb == 0 && gain.gpus == 0 {
                    continue;
                }
                add(&mut free, &gain);
                taken.push(n);
                if slot.fit(req, &free).is_some() {
                    options.push(NodeOption {
                        top: Some(victims[n].0.key),
                        slot: i,
                        victims: taken,
                        needs_dying: false,
                    });
                    break;
                }
            }
        }
        let want = req.nodes.max(1) as usize;
        if options.len() < want {
            self.claimed = claimed;
            return (Outcome::NotPossible, cache);
        }
        options.sort_by_key(|o| (o.victims.len(), o.top, o.slot));
        options.truncate(want);
        let mut chosen: BTreeSet<usize> = options
            .iter()
            .flat_map(|o| o.victims.iter().copied())
            .collect();
        if chosen.is_empty() {
            self.claimed = claimed;
            return if options.iter().any(|o| o.needs_dying) {
                (Outcome::Wait, None)
            } else {
                (Outcome::NotPossible, cache)
            };
        }
        // Drop victims the chosen nodes do not need after all, highest first.
        let slots: Vec<usize> = options.iter().map(|o| o.slot).collect();
        let fits_all = |set: &BTreeSet<usize>| {
            slots.iter().all(|&i| {
                let slot = &profile.slots[i];
                let mut free = slot.line.now();
                for c in &dying_for_job {
                    if let Some(na) = on_node(c.job, &slot.node.name) {
                        add(&mut free, &freed(slot, na, PreemptMode::Cancel));
                    }
                }
                for &n in set {
                    let (c, mode) = victims[n];
                    if let Some(na) = on_node(c.job, &slot.node.name) {
                        add(&mut free, &freed(slot, na, mode));
                    }
                }
                slot.fit(req, &free).is_some()
            })
        };
        let order: Vec<usize> = chosen.iter().rev().copied().collect();
        for n in order {
            chosen.remove(&n);
            if !fits_all(&chosen) {
                chosen.insert(n);
            }
        }
        let out: Vec<Preempt> = chosen
            .iter()
            .map(|&n| {
                let (c, mode) = victims[n];
                Preempt {
                    job_id: c.job.id,
                    mode,
                    preemptor: job.id,
                    grace_secs: if mode == PreemptMode::Suspend {
                        0
                    } else {
                        grace_of(config, c.job)
                    },
                }
            })
            .collect();
        if let Some(g) = guarantees.as_mut() {
            let stopped: Vec<(&Job, model::tres::TresCounts)> = chosen
                .iter()
                .filter_map(|&n| {
                    let v = victims[n].0.job;
                    let a = v.alloc.as_ref()?;
                    Some((v, model::tres::alloc_tres(a, &state.nodes)))
                })
                .collect();
            g.reclaimed(job, &job_req, &stopped);
        }
        let mut claimed = claimed;
        claimed.extend(out.iter().map(|v| v.job_id));
        self.claimed = claimed;
        (Outcome::Victims(out), None)
    }
}

/// A job's share of a node.
fn on_node<'a>(job: &'a Job, node: &str) -> Option<&'a NodeAllocation> {
    job.alloc.as_ref()?.nodes.iter().find(|na| na.node == node)
}

/// What stopping a job frees on a node: everything, or CPUs and GPUs when suspended.
fn freed(slot: &Slot, na: &NodeAllocation, mode: PreemptMode) -> Free {
    let mut gpus = 0u64;
    for (bit, g) in slot.node.gpus.iter().take(64).enumerate() {
        if na.gpus.contains(&g.index) {
            gpus |= 1 << bit;
        }
    }
    Free {
        cpus: i64::from(na.cpus),
        mem_mb: if mode == PreemptMode::Suspend {
            0
        } else {
            na.mem_mb as i64
        },
        gpus,
    }
}

fn add(free: &mut Free, more: &Free) {
    free.cpus += more.cpus;
    free.mem_mb += more.mem_mb;
    free.gpus |= more.gpus;
}
