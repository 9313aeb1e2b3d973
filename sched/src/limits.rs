//! Limits on associations and QOS, checked for each job in queue order and charged as
//! jobs are planned to start, so that one pass never exceeds a limit; and the MaxSubmit
//! limits, checked when a job is submitted.
//!
//! A job runs under one QOS and one association (account, user). QOS limits are checked
//! first, then the account's, each giving Slurm's reason code:
//!
//! | limit | QOS | account |
//! |---|---|---|
//! | MaxWall | `QOSMaxWallDurationPerJobLimit` | `AssocMaxWallDurationPerJobLimit` |
//! | MaxTRESPerJob | `QOSMaxCpuPerJobLimit`, `QOSMaxGRESPerJob`, … | `AssocMaxCpuPerJobLimit`, `AssocMaxGRESPerJob`, … |
//! | MaxTRESMinsPerJob | `QOSMaxCpuMinutesPerJobLimit`, `QOSMaxGRESMinutesPerJob`, … | `AssocMaxCpuMinutesPerJobLimit`, `AssocMaxGRESMinutesPerJob`, … |
//! | GrpJobs | `QOSGrpJobsLimit` | `AssocGrpJobsLimit` |
//! | MaxJobs per user | `QOSMaxJobsPerUserLimit` | `AssocMaxJobsLimit` |
//! | GrpTRES | `QOSGrpCpuLimit`, `QOSGrpGRES`, `QOSGrpMemLimit`, … | `AssocGrpCpuLimit`, `AssocGrpGRES`, … |
//! | MaxTRESPerUser | `QOSMaxCpuPerUserLimit`, `QOSMaxGRESPerUser`, … | `AssocGrpCpuLimit`, … (the user's association) |
//! | GrpTRESMins | `QOSGrpCPUMinutesLimit`, `QOSGrpGRESMinutes`, … | `AssocGrpCPUMinutesLimit`, `AssocGrpGRESMinutes`, … |
//! | GrpWall | `QOSGrpWallLimit` | `AssocGrpWallLimit` |
//! | GrpTRESRunMins | `QOSGrpCPURunMinutesLimit`, `QOSGrpGRESRunMinutes`, … | `AssocGrpCPURunMinutesLimit`, `AssocGrpGRESRunMinutes`, … |
//! | BorrowingLimit (Drover's) | | as GrpTRES = GuaranteedTRES + BorrowingLimit: `AssocGrpGRES`, … |
//! | LendingLimit (Drover's) | | others' jobs: `Resources` |
//!
//! Account `Grp*` limits hold for everything below the account; `Max*` limits of an
//! account apply to each of its users and are inherited by sub-accounts that set none;
//! a limit set on one user's association comes first. GrpTRESMins counts past usage
//! (decayed), every running job for its whole time limit, and the new job for its time
//! limit; GrpTRESRunMins counts only what the running jobs have left of their limits,
//! and the new job's whole limit. MaxTRESMinsPerJob holds a job's TRES times its time
//! limit. GrpWall counts the wall-clock minutes the association's jobs ran (decayed,
//! each job once whatever it holds) and those the running jobs ran so far; a job waits
//! while they reach it (on a user's association, that user's; on an account, everything
//! below it; on a QOS, its jobs'). A QOS's GrpTRESMins and GrpWall count its own usage,
//! charged with the associations' as jobs end. GrpSubmitJobs and MaxSubmitJobs are checked at submit.
//! An account's LendingLimit keeps the part of its GuaranteedTRES it does not lend, less
//! what it holds, free of other accounts' jobs (Kueue's `lendingLimit`).
//!
//! Worked example: QOS `normal` with `max_tres_per_user = "gres/gpu=4"`; alice runs a
//! 3-GPU job and has two pending 1-GPU jobs. The first fits (4 of 4) and is charged;
//! the second pends with `QOSMaxGRESPerUser`. bob's jobs are not affected.

use crate::SchedConfig;
use model::assoc::{Associations, Limits};
use model::reason::{Limit, LimitReason, Scope, TresClass, TresLimit};
use model::tres::{self, TresCounts, TresWeights};
use model::usage::AssocKey;
use model::{Allocation, ClusterState, Job, JobSpec, Reason, Time};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The reason of a TRES limit of `scope` on TRES `name`.
fn tres_reason(scope: Scope, kind: TresLimit, name: &str) -> Reason {
    Reason::Limit(LimitReason::new(
        scope,
        Limit::Tres(kind, TresClass::of(name)),
    ))
}

fn limit_reason(scope: Scope, limit: Limit) -> Reason {
    Reason::Limit(LimitReason::new(scope, limit))
}

/// The message of a submit refused by MaxSubmit limits (Slurm's
/// ESLURM_ACCOUNTING_POLICY).
pub const SUBMIT_LIMIT_MESSAGE: &str =
    "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)";

/// The first TRES of `counts` + `add` over its limit, if any.
fn over<'l>(
    limits: &'l TresCounts,
    used: Option<&TresCounts>,
    add: &TresCounts,
) -> Option<&'l str> {
    limits.iter().find_map(|(name, limit)| {
        let have = used.and_then(|u| u.get(name)).copied().unwrap_or(0);
        let want = add.get(name).copied().unwrap_or(0);
        (want > 0 && have + want > *limit).then_some(name.as_str())
    })
}

fn add_into(map: &mut TresCounts, add: &TresCounts) {
    for (k, v) in add {
        *map.entry(k.clone()).or_default() += v;
    }
}

/// A job's TRES with its billing value added (for billing limits).
fn with_billing(mut t: TresCounts, weights: &TresWeights) -> TresCounts {
    let b = tres::billing(&t, weights);
    t.insert("billing".into(), b.ceil() as u64);
    t
}

/// Usage as TRES-minutes, billing among them.
fn usage_mins(usage: &model::usage::AssocUsage) -> BTreeMap<String, f64> {
    let mut mins: BTreeMap<String, f64> = usage
        .tres
        .iter()
        .map(|(k, v)| (k.clone(), v / 60.0))
        .collect();
    mins.insert("billing".into(), usage.billing / 60.0);
    mins
}

/// The first TRES of a GrpTRESMins `limits` that minutes `used` and a job asking
/// `req` for `wall` minutes go over, if any.
fn over_mins<'l>(
    limits: &'l TresCounts,
    used: Option<&BTreeMap<String, f64>>,
    req: &TresCounts,
    wall: Option<u32>,
) -> Option<&'l str> {
    limits.iter().find_map(|(name, limit)| {
        let have = used.and_then(|u| u.get(name)).copied().unwrap_or(0.0);
        let asked = req.get(name).copied().unwrap_or(0);
        let want = asked as f64 * f64::from(wall.unwrap_or(0));
        (asked > 0 && have + want > *limit as f64).then_some(name.as_str())
    })
}

/// Whether an account or one of its users' associations sets GrpWall.
fn has_grp_wall(a: &model::assoc::Account) -> bool {
    a.limits.grp_wall_min.is_some() || a.user_limits.values().any(|l| l.grp_wall_min.is_some())
}

/// Whether wall-clock minutes `used` reach a GrpWall `limit` (none: no limit).
fn wall_reached(limit: Option<u32>, used: Option<&f64>) -> bool {
    limit.is_some_and(|max| used.copied().unwrap_or(0.0) >= f64::from(max))
}

/// TRES-minutes of `tres` held for `minutes` (none without a time limit).
fn job_run_mins(tres: &TresCounts, minutes: Option<u32>) -> TresCounts {
    let minutes = u64::from(minutes.unwrap_or(0));
    tres.iter()
        .map(|(k, v)| (k.clone(), v.saturating_mul(minutes)))
        .filter(|(_, v)| *v > 0)
        .collect()
}

/// What running and just-planned jobs use against each limit.
#[derive(Debug)]
pub struct LimitTracker<'a> {
    state: &'a ClusterState,
    assocs: Arc<Associations>,
    billing_weights: TresWeights,
    /// False when no limit is configured anywhere: every check passes at once.
    enabled: bool,
    qos_jobs: BTreeMap<String, u32>,
    qos_tres: BTreeMap<String, TresCounts>,
    qos_user_jobs: BTreeMap<(String, String), u32>,
    qos_user_tres: BTreeMap<(String, String), TresCounts>,
    /// Per account, everything below it.
    acct_jobs: BTreeMap<String, u32>,
    acct_tres: BTreeMap<String, TresCounts>,
    /// Per account and per QOS: TRES-minutes of past usage and of running jobs' time
    /// limits.
    acct_tres_mins: BTreeMap<String, BTreeMap<String, f64>>,
    qos_tres_mins: BTreeMap<String, BTreeMap<String, f64>>,
    /// Wall-clock minutes run (past, decayed, and running so far), per account (and
    /// below), per association and per QOS, with a GrpWall anywhere.
    acct_wall_min: BTreeMap<String, f64>,
    assoc_wall_min: BTreeMap<AssocKey, f64>,
    qos_wall_min: BTreeMap<String, f64>,
    /// TRES-minutes the running jobs have left, per QOS and per account (and below).
    qos_run_mins: BTreeMap<String, TresCounts>,
    acct_run_mins: BTreeMap<String, TresCounts>,
    /// The pass's time: what running jobs have left is counted from it.
    now: Time,
    assoc_jobs: BTreeMap<AssocKey, u32>,
    assoc_tres: BTreeMap<AssocKey, TresCounts>,
    /// With a LendingLimit anywhere: what the schedulable nodes offer, and what every
    /// running job holds together.
    capacity: TresCounts,
    held: TresCounts,
}

impl<'a> LimitTracker<'a> {
    /// The tracker for a pass; past usage (for GrpTRESMins) is decayed to the latest
    /// time the state has seen (a submit, start or end): `at` with the pass's time is
    /// exact.
    pub fn new(state: &'a ClusterState, config: &SchedConfig) -> LimitTracker<'a> {
        let assocs = &config.assocs;
        let needs_time = assocs.accounts.values().any(|a| {
            !a.limits.grp_tres_mins.is_empty()
                || !a.limits.grp_tres_run_mins.is_empty()
                || has_grp_wall(a)
        }) || assocs.qos.values().any(|q| {
            !q.limits.grp_tres_run_mins.is_empty()
                || !q.limits.grp_tres_mins.is_empty()
                || q.limits.grp_wall_min.is_some()
        });
        let latest = if needs_time {
            state
                .usage
                .values()
                .map(|u| u.at)
                .chain(
                    state
                        .jobs
                        .values()
                        .map(|j| j.submit_time.max(j.start_time).max(j.end_time)),
                )
                .max()
                .unwrap_or(0)
        } else {
            0
        };
        LimitTracker::at(state, latest, config)
    }

    /// The tracker for a pass at `now`.
    pub fn at(state: &'a ClusterState, now: Time, config: &SchedConfig) -> LimitTracker<'a> {
        let assocs = config.assocs.clone();
        let enabled = assocs.qos.values().any(|q| !q.limits.is_empty())
            || assocs
                .accounts
                .values()
                .any(|a| !a.limits.is_empty() || a.user_limits.values().any(|l| !l.is_empty()));
        let mut t = LimitTracker {
            state,
            assocs,
            billing_weights: config.priority.billing_weights.clone(),
            enabled,
            qos_jobs: BTreeMap::new(),
            qos_tres: BTreeMap::new(),
            qos_user_jobs: BTreeMap::new(),
            qos_user_tres: BTreeMap::new(),
            acct_jobs: BTreeMap::new(),
            acct_tres: BTreeMap::new(),
            acct_tres_mins: BTreeMap::new(),
            qos_tres_mins: BTreeMap::new(),
            acct_wall_min: BTreeMap::new(),
            assoc_wall_min: BTreeMap::new(),
            qos_wall_min: BTreeMap::new(),
            qos_run_mins: BTreeMap::new(),
            acct_run_mins: BTreeMap::new(),
            now,
            assoc_jobs: BTreeMap::new(),
            assoc_tres: BTreeMap::new(),
            capacity: TresCounts::new(),
            held: TresCounts::new(),
        };
        if !t.enabled {
            return t;
        }
        if t.assocs
            .accounts
            .values()
            .any(|a| !a.limits.lending_limit.is_empty())
        {
            for node in state.nodes.values().filter(|n| n.schedulable()) {
                add_into(&mut t.capacity, &tres::node_tres(node));
            }
        }
        let half_life = config.priority.half_life_s;
        let any_mins = t
            .assocs
            .accounts
            .values()
            .any(|a| !a.limits.grp_tres_mins.is_empty());
        if any_mins {
            for ((account, _), usage) in &state.usage {
                let mins = usage_mins(&usage.decayed(now, half_life));
                let names: Vec<String> = t
                    .assocs
                    .lineage(account)
                    .iter()
                    .map(|a| a.name.clone())
                    .collect();
                for name in names {
                    let entry = t.acct_tres_mins.entry(name).or_default();
                    for (k, v) in &mins {
                        *entry.entry(k.clone()).or_default() += v;
                    }
                }
            }
        }
        if t.assocs
            .qos
            .values()
            .any(|q| !q.limits.grp_tres_mins.is_empty())
        {
            for (qos, usage) in &state.qos_usage {
                let mins = usage_mins(&usage.decayed(now, half_life));
                t.qos_tres_mins.insert(qos.clone(), mins);
            }
        }
        if t.assocs
            .qos
            .values()
            .any(|q| q.limits.grp_wall_min.is_some())
        {
            for (qos, usage) in crate::fairshare::current_qos_usage(state, now, config) {
                t.qos_wall_min.insert(qos, usage.wall / 60.0);
            }
        }
        if t.assocs.accounts.values().any(has_grp_wall) {
            for (key, usage) in crate::fairshare::current_usage(state, now, config) {
                let minutes = usage.wall / 60.0;
                for a in t.assocs.lineage(&key.0) {
                    *t.acct_wall_min.entry(a.name.clone()).or_default() += minutes;
                }
                *t.assoc_wall_min.entry(key).or_default() += minutes;
            }
        }
        for job in state.running_jobs() {
            if let Some(alloc) = &job.alloc {
                t.charge(job, alloc);
            }
        }
        t
    }

    /// The reason the job may not start now because of a limit, if any.
    pub fn check(&self, job: &Job) -> Option<Reason> {
        if !self.enabled {
            return None;
        }
        let assocs = &self.assocs;
        let spec = &job.spec;
        let account = assocs.account_of(spec).to_string();
        let user = spec.user.clone();
        let qos_name = assocs.qos_of(spec).to_string();
        let req = with_billing(tres::job_request(spec), &self.billing_weights);
        let wall = job.time_limit_min;
        let run_mins = job_run_mins(&req, wall);
        let over_wall = |l: &Limits| {
            l.max_wall_min
                .is_some_and(|max| wall.is_none_or(|w| w > max))
        };
        if let Some(q) = assocs.qos.get(&qos_name) {
            let l = &q.limits;
            if over_wall(l) {
                return Some(limit_reason(Scope::Qos, Limit::MaxWallDurationPerJob));
            }
            if let Some(name) = over(&l.max_tres_per_job, None, &req) {
                return Some(tres_reason(Scope::Qos, TresLimit::MaxPerJob, name));
            }
            if let Some(name) = over(&l.max_tres_mins_per_job, None, &run_mins) {
                return Some(tres_reason(Scope::Qos, TresLimit::MaxMinsPerJob, name));
            }
            if l.grp_jobs
                .is_some_and(|max| self.qos_jobs.get(&qos_name).copied().unwrap_or(0) >= max)
            {
                return Some(limit_reason(Scope::Qos, Limit::GrpJobs));
            }
            let qu = (qos_name.clone(), user.clone());
            if l.max_jobs
                .is_some_and(|max| self.qos_user_jobs.get(&qu).copied().unwrap_or(0) >= max)
            {
                return Some(limit_reason(Scope::Qos, Limit::MaxJobsPerUser));
            }
            if let Some(name) = over(&l.grp_tres, self.qos_tres.get(&qos_name), &req) {
                return Some(tres_reason(Scope::Qos, TresLimit::Grp, name));
            }
            if let Some(name) = over(&l.max_tres_per_user, self.qos_user_tres.get(&qu), &req) {
                return Some(Reason::Limit(LimitReason::QosPerUser(TresClass::of(name))));
            }
            if let Some(name) = over(
                &l.grp_tres_run_mins,
                self.qos_run_mins.get(&qos_name),
                &run_mins,
            ) {
                return Some(tres_reason(Scope::Qos, TresLimit::GrpRunMins, name));
            }
            if let Some(name) = over_mins(
                &l.grp_tres_mins,
                self.qos_tres_mins.get(&qos_name),
                &req,
                wall,
            ) {
                return Some(tres_reason(Scope::Qos, TresLimit::GrpMins, name));
            }
            if wall_reached(l.grp_wall_min, self.qos_wall_min.get(&qos_name)) {
                return Some(limit_reason(Scope::Qos, Limit::GrpWall));
            }
        }
        let ul = assocs.user_limits(&account, &user);
        if over_wall(&ul) {
            return Some(limit_reason(Scope::Assoc, Limit::MaxWallDurationPerJob));
        }
        if let Some(name) = over(&ul.max_tres_per_job, None, &req) {
            return Some(tres_reason(Scope::Assoc, TresLimit::MaxPerJob, name));
        }
        if let Some(name) = over(&ul.max_tres_mins_per_job, None, &run_mins) {
            return Some(tres_reason(Scope::Assoc, TresLimit::MaxMinsPerJob, name));
        }
        let key = (account.clone(), user);
        let own_wall = assocs
            .accounts
            .get(&account)
            .and_then(|a| a.user_limits.get(&key.1))
            .and_then(|l| l.grp_wall_min);
        if wall_reached(own_wall, self.assoc_wall_min.get(&key)) {
            return Some(limit_reason(Scope::Assoc, Limit::GrpWall));
        }
        if ul
            .max_jobs
            .is_some_and(|max| self.assoc_jobs.get(&key).copied().unwrap_or(0) >= max)
        {
            return Some(limit_reason(Scope::Assoc, Limit::MaxJobsPerUser));
        }
        if let Some(name) = over(&ul.max_tres_per_user, self.assoc_tres.get(&key), &req) {
            return Some(tres_reason(Scope::Assoc, TresLimit::Grp, name));
        }
        for a in assocs.lineage(&account) {
            let l = &a.limits;
            if l.grp_jobs
                .is_some_and(|max| self.acct_jobs.get(&a.name).copied().unwrap_or(0) >= max)
            {
                return Some(limit_reason(Scope::Assoc, Limit::GrpJobs));
            }
            if let Some(name) = over(&l.grp_tres, self.acct_tres.get(&a.name), &req) {
                return Some(tres_reason(Scope::Assoc, TresLimit::Grp, name));
            }
            if wall_reached(l.grp_wall_min, self.acct_wall_min.get(&a.name)) {
                return Some(limit_reason(Scope::Assoc, Limit::GrpWall));
            }
            if let Some(name) = over_mins(
                &l.grp_tres_mins,
                self.acct_tres_mins.get(&a.name),
                &req,
                wall,
            ) {
                return Some(tres_reason(Scope::Assoc, TresLimit::GrpMins, name));
            }
            if let Some(name) = over(
                &l.grp_tres_run_mins,
                self.acct_run_mins.get(&a.name),
                &run_mins,
            ) {
                return Some(tres_reason(Scope::Assoc, TresLimit::GrpRunMins, name));
            }
            // BorrowingLimit: the guarantee plus what may be borrowed, as a GrpTRES.
            if !l.borrowing_limit.is_empty() {
                let cap: TresCounts = l
                    .borrowing_limit
                    .iter()
                    .map(|(k, b)| {
                        (
                            k.clone(),
                            b + l.guaranteed_tres.get(k).copied().unwrap_or(0),
                        )
                    })
                    .collect();
                if let Some(name) = over(&cap, self.acct_tres.get(&a.name), &req) {
                    return Some(tres_reason(Scope::Assoc, TresLimit::Grp, name));
                }
            }
        }
        if !self.kept_by_lenders(&account, &req).is_empty() {
            return Some(Reason::Resources);
        }
        None
    }

    /// LendingLimit: the TRES a job of `account` asking `req` may not take because
    /// lenders keep them. Each lender above neither the job's account nor its own keeps
    /// free the part of its guarantee it does not lend (guarantee − LendingLimit) less
    /// what it holds; the job may take only what is free beyond all of those. Each such
    /// TRES, how many are free, and what each lender keeps of it (only lenders that
    /// keep some). Empty: none is kept from it.
    pub fn kept_by_lenders(&self, account: &str, req: &TresCounts) -> Vec<KeptByLenders> {
        if self.capacity.is_empty() {
            return Vec::new();
        }
        let own: BTreeSet<&str> = self
            .assocs
            .lineage(account)
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        let mut kept: BTreeMap<&str, Vec<(String, u64)>> = BTreeMap::new();
        for lender in self.assocs.accounts.values() {
            if own.contains(lender.name.as_str()) {
                continue;
            }
            let held = self.acct_tres.get(&lender.name);
            for (k, lend) in &lender.limits.lending_limit {
                let guaranteed = lender.limits.guaranteed_tres.get(k).copied().unwrap_or(0);
                let have = held.and_then(|h| h.get(k)).copied().unwrap_or(0);
                let keep = guaranteed.saturating_sub(*lend).saturating_sub(have);
                if keep > 0 {
                    kept.entry(k).or_default().push((lender.name.clone(), keep));
                }
            }
        }
        kept.into_iter()
            .filter_map(|(k, lenders)| {
                let want = req.get(k).copied().unwrap_or(0);
                let capacity = self.capacity.get(k).copied().unwrap_or(0);
                let free = capacity.saturating_sub(self.held.get(k).copied().unwrap_or(0));
                let keep: u64 = lenders.iter().map(|(_, n)| n).sum();
                (want > 0 && free < want + keep).then(|| KeptByLenders {
                    tres: k.to_string(),
                    free,
                    lenders,
                })
            })
            .collect()
    }

    /// Counts a start planned in this pass (and, in `new`, every running job).
    pub fn charge(&mut self, job: &Job, alloc: &Allocation) {
        if !self.enabled {
            return;
        }
        let held = with_billing(
            tres::alloc_tres(alloc, &self.state.nodes),
            &self.billing_weights,
        );
        let spec = &job.spec;
        let account = self.assocs.account_of(spec).to_string();
        let qos = self.assocs.qos_of(spec).to_string();
        let user = spec.user.clone();
        // A running job has what is left of its limit; a planned one all of it.
        let left_min = job.time_limit_min.map(|limit| {
            let ran_min = match job.alloc {
                Some(_) => self.now.saturating_sub(job.start_time) / 60,
                None => 0,
            };
            limit.saturating_sub(ran_min.try_into().unwrap_or(u32::MAX))
        });
        let run_mins = job_run_mins(&held, left_min);
        add_into(&mut self.held, &held);
        add_into(self.qos_run_mins.entry(qos.clone()).or_default(), &run_mins);
        *self.qos_jobs.entry(qos.clone()).or_default() += 1;
        add_into(self.qos_tres.entry(qos.clone()).or_default(), &held);
        let qu = (qos, user.clone());
        *self.qos_user_jobs.entry(qu.clone()).or_default() += 1;
        add_into(self.qos_user_tres.entry(qu).or_default(), &held);
        let key = (account.clone(), user);
        *self.assoc_jobs.entry(key.clone()).or_default() += 1;
        add_into(self.assoc_tres.entry(key).or_default(), &held);
        let minutes = job.time_limit_min.map(f64::from).unwrap_or(0.0);
        if minutes > 0.0 {
            let mins = self
                .qos_tres_mins
                .entry(self.assocs.qos_of(spec).to_string())
                .or_default();
            for (k, v) in &held {
                *mins.entry(k.clone()).or_default() += *v as f64 * minutes;
            }
        }
        let names: Vec<String> = self
            .assocs
            .lineage(&account)
            .iter()
            .map(|a| a.name.clone())
            .collect();
        for name in names {
            *self.acct_jobs.entry(name.clone()).or_default() += 1;
            add_into(self.acct_tres.entry(name.clone()).or_default(), &held);
            add_into(
                self.acct_run_mins.entry(name.clone()).or_default(),
                &run_mins,
            );
            if minutes > 0.0 {
                let mins = self.acct_tres_mins.entry(name).or_default();
                for (k, v) in &held {
                    *mins.entry(k.clone()).or_default() += *v as f64 * minutes;
                }
            }
        }
    }
}

/// Of a TRES a job asks for, what lenders keep free of it (`LendingLimit`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptByLenders {
    pub tres: String,
    /// Free now on the schedulable nodes.
    pub free: u64,
    /// Each lender and how much it keeps.
    pub lenders: Vec<(String, u64)>,
}

/// Pending and running jobs per user, by QOS and by association, for MaxSubmit
/// limits; and per QOS and per account (everything below it), for GrpSubmitJobs.
#[derive(Debug, Clone, Default)]
pub struct SubmitCounts {
    qos_user: BTreeMap<(String, String), u32>,
    assoc: BTreeMap<AssocKey, u32>,
    qos: BTreeMap<String, u32>,
    account: BTreeMap<String, u32>,
}

/// How many jobs a record stands for: its pending tasks for an array's remainder.
fn job_count(job: &Job) -> u32 {
    if job.is_array_meta() {
        job.pending_tasks.len() as u32
    } else {
        1
    }
}

fn spec_count(spec: &JobSpec) -> u32 {
    spec.array
        .as_ref()
        .map(|a| a.task_ids.len() as u32)
        .unwrap_or(1)
}

impl SubmitCounts {
    /// Counts the live jobs of the state.
    pub fn new(state: &ClusterState, assocs: &Associations) -> SubmitCounts {
        let mut out = SubmitCounts::default();
        for job in state.pending_jobs().chain(state.running_jobs()) {
            out.add_n(assocs, &job.spec, job_count(job));
        }
        out
    }

    /// True when some submit limit exists (otherwise counting is pointless).
    pub fn needed(assocs: &Associations) -> bool {
        let submit = |l: &Limits| l.max_submit.is_some() || l.grp_submit.is_some();
        assocs.qos.values().any(|q| submit(&q.limits))
            || assocs
                .accounts
                .values()
                .any(|a| submit(&a.limits) || a.user_limits.values().any(submit))
    }

    /// Would submitting this spec exceed a MaxSubmit limit?
    pub fn check(&self, assocs: &Associations, spec: &JobSpec) -> Result<(), String> {
        let n = spec_count(spec);
        let account = assocs.account_of(spec).to_string();
        let qos = assocs.qos_of(spec).to_string();
        let user = spec.user.clone();
        let exceeds = |max: Option<u32>, have: Option<&u32>| {
            max.is_some_and(|max| have.copied().unwrap_or(0) + n > max)
        };
        if let Some(q) = assocs.qos.get(&qos)
            && (exceeds(q.limits.grp_submit, self.qos.get(&qos))
                || exceeds(q.limits.max_submit, self.qos_user.get(&(qos, user.clone()))))
        {
            return Err(SUBMIT_LIMIT_MESSAGE.into());
        }
        if assocs
            .lineage(&account)
            .iter()
            .any(|a| exceeds(a.limits.grp_submit, self.account.get(&a.name)))
        {
            return Err(SUBMIT_LIMIT_MESSAGE.into());
        }
        let have = self
            .assoc
            .get(&(account.clone(), user))
            .copied()
            .unwrap_or(0);
        if assocs
            .user_limits(&account, &spec.user)
            .max_submit
            .is_some_and(|max| have + n > max)
        {
            return Err(SUBMIT_LIMIT_MESSAGE.into());
        }
        Ok(())
    }

    /// Counts a submitted spec.
    pub fn add(&mut self, assocs: &Associations, spec: &JobSpec) {
        self.add_n(assocs, spec, spec_count(spec));
    }

    fn add_n(&mut self, assocs: &Associations, spec: &JobSpec, n: u32) {
        let account = assocs.account_of(spec).to_string();
        let qos = assocs.qos_of(spec).to_string();
        *self.qos.entry(qos.clone()).or_default() += n;
        *self.qos_user.entry((qos, spec.user.clone())).or_default() += n;
        for a in assocs.lineage(&account) {
            *self.account.entry(a.name.clone()).or_default() += n;
        }
        *self.assoc.entry((account, spec.user.clone())).or_default() += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::{Config, Event, NodeAllocation};

    const NODES: &str = r#"
[[nodes]]
names = "n[1-4]"
cpus = 16
memory = "64G"
gpus = 4
gpu_type = "h100"
[[partitions]]
name = "p"
nodes = "ALL"
"#;

    fn setup(extra: &str) -> (ClusterState, SchedConfig) {
        let config = Config::parse(&format!("{NODES}{extra}"), "t").unwrap();
        let state = ClusterState::new(config.node_list(), config.partition_list());
        (state, SchedConfig::from_config(&config))
    }

    fn job(id: u32, user: &str, f: impl FnOnce(&mut JobSpec)) -> Job {
        let mut spec = JobSpec {
            partition: "p".into(),
            user: user.into(),
            num_tasks: 1,
            cpus_per_task: 1,
            ..JobSpec::default()
        };
        f(&mut spec);
        Job::new(id, spec, 0, Some(60))
    }

    fn alloc(node: &str, cpus: u32, gpus: &[u32]) -> Allocation {
        Allocation {
            nodes: vec![NodeAllocation {
                node: node.into(),
                cpus,
                mem_mb: 0,
                gpus: gpus.to_vec(),
                cpu_ids: Vec::new(),
            }],
        }
    }

    /// Runs `job` on `alloc` in the state.
    fn run(s: &mut ClusterState, j: Job, a: Allocation) {
        let id = j.id;
        s.apply(&Event::JobSubmitted { job: Box::new(j) });
        s.apply(&Event::JobStarted {
            job_id: id,
            alloc: a,
            time: 0,
            stdout_path: String::new(),
            stderr_path: String::new(),
        });
    }

    #[test]
    fn worked_example_qos_gpus_per_user() {
        let (mut s, c) = setup("[[qos]]\nname = \"normal\"\nmax_tres_per_user = \"gres/gpu=4\"\n");
        run(
            &mut s,
            job(1, "alice", |j| j.gpus = 3),
            alloc("n1", 1, &[0, 1, 2]),
        );
        let (j2, j3) = (
            job(2, "alice", |j| j.gpus = 1),
            job(3, "alice", |j| j.gpus = 1),
        );
        let j4 = job(4, "bob", |j| j.gpus = 4);
        let mut t = LimitTracker::new(&s, &c);
        assert_eq!(t.check(&j2), None);
        t.charge(&j2, &alloc("n1", 1, &[3]));
        assert_eq!(
            t.check(&j3).map(|r| r.to_string()).as_deref(),
            Some("QOSMaxGRESPerUser")
        );
        assert_eq!(t.check(&j4), None);
    }

    /// 16 GPUs on four nodes: ml is guaranteed 8 and lends at most 2 of them, bio is
    /// guaranteed 4 and may borrow 2 beyond, physics has no quota.
    #[test]
    fn borrowing_and_lending_limits_bound_what_moves_between_quotas() {
        let (mut s, c) = setup(
            "[[accounts]]\nname = \"ml\"\nusers = [\"alice\"]\n\
             guaranteed_tres = \"gres/gpu=8\"\nlending_limit = \"gres/gpu=2\"\n\
             [[accounts]]\nname = \"bio\"\nusers = [\"carol\"]\n\
             guaranteed_tres = \"gres/gpu=4\"\nborrowing_limit = \"gres/gpu=2\"\n\
             [[accounts]]\nname = \"physics\"\nusers = [\"bob\"]\n",
        );
        for n in s.nodes.values_mut() {
            n.health = model::NodeHealth::Up;
        }
        let gpus = |id: u32, user: &str, account: &str, n: u32| {
            let account = account.to_string();
            job(id, user, move |j| {
                j.gpus = n;
                j.account = account;
            })
        };
        // bio holds 5 of its 4 + 2: two more would pass its borrowing limit.
        run(
            &mut s,
            gpus(1, "carol", "bio", 4),
            alloc("n1", 1, &[0, 1, 2, 3]),
        );
        run(&mut s, gpus(2, "carol", "bio", 1), alloc("n2", 1, &[0]));
        // physics holds 7: 16 - 5 - 7 = 4 are free.
        run(
            &mut s,
            gpus(3, "bob", "physics", 3),
            alloc("n2", 1, &[1, 2, 3]),
        );
        run(
            &mut s,
            gpus(4, "bob", "physics", 4),
            alloc("n3", 1, &[0, 1, 2, 3]),
        );
        let t = LimitTracker::new(&s, &c);
        let reason = |j: &Job| t.check(j).map(|r| r.to_string());
        assert_eq!(
            reason(&gpus(5, "carol", "bio", 2)).as_deref(),
            Some("AssocGrpGRES")
        );
        // ml is idle and keeps 8 - 2 = 6 for itself: of the 4 free GPUs others may
        // take none, ml itself all four.
        assert_eq!(
            reason(&gpus(6, "bob", "physics", 1)).as_deref(),
            Some("Resources")
        );
        assert_eq!(reason(&gpus(7, "alice", "ml", 4)), None);
        // `drover why` says whose quota is kept.
        let mut pending = s.clone();
        pending.apply(&Event::JobSubmitted {
            job: Box::new(gpus(6, "bob", "physics", 1)),
        });
        let why: Vec<String> = crate::explain::explain(&pending, 0, &c, 6)
            .into_iter()
            .map(|b| b.text)
            .collect();
        assert!(
            why.contains(
                &"idle guaranteed gres/gpu is kept for its owners' jobs (LendingLimit: ml keeps \
                  6); 4 free, it asks for 1"
                    .to_string()
            ),
            "{why:?}"
        );
        // physics gone from n2, ml on n4: 16 - 5 - 4 - 4 = 3 free, ml keeps 8 - 2 - 4
        // = 2 of them, so others may take 1.
        s.remove_job(3);
        run(
            &mut s,
            gpus(8, "alice", "ml", 4),
            alloc("n4", 1, &[0, 1, 2, 3]),
        );
        let t = LimitTracker::new(&s, &c);
        let reason = |j: &Job| t.check(j).map(|r| r.to_string());
        assert_eq!(reason(&gpus(9, "bob", "physics", 1)), None);
        assert_eq!(
            reason(&gpus(10, "bob", "physics", 2)).as_deref(),
            Some("Resources")
        );
    }

    /// Each case: limits (TOML), running jobs, the candidate, the reason.
    #[test]
    fn reasons_by_limit() {
        type Mk = fn(&mut JobSpec);
        let none: Mk = |_| {};
        type Case = (
            &'static str,
            Vec<(&'static str, Mk)>,
            Mk,
            Option<&'static str>,
        );
        let cases: Vec<Case> = vec![
            (
                "[[qos]]\nname = \"normal\"\nmax_tres_per_user = \"cpu=4\"\n",
                vec![("alice", |j| j.cpus_per_task = 3)],
                |j| j.cpus_per_task = 2,
                Some("QOSMaxCpuPerUserLimit"),
            ),
            (
                "[[qos]]\nname = \"normal\"\nmax_jobs_per_user = 1\n",
                vec![("alice", none)],
                none,
                Some("QOSMaxJobsPerUserLimit"),
            ),
            (
                "[[qos]]\nname = \"normal\"\ngrp_jobs = 1\n",
                vec![("bob", none)],
                none,
                Some("QOSGrpJobsLimit"),
            ),
            (
                "[[qos]]\nname = \"normal\"\ngrp_tres = \"gres/gpu=4\"\n",
                vec![("bob", |j| j.gpus = 2)],
                |j| j.gpus = 3,
                Some("QOSGrpGRES"),
            ),
            (
                "[[qos]]\nname = \"normal\"\nmax_wall = \"30\"\n",
                vec![],
                none,
                Some("QOSMaxWallDurationPerJobLimit"),
            ),
            (
                "[[qos]]\nname = \"normal\"\nmax_tres_per_job = \"gres/gpu:h100=2\"\n",
                vec![],
                |j| {
                    j.gpus = 3;
                    j.gpu_type = "h100".into()
                },
                Some("QOSMaxGRESPerJob"),
            ),
            (
                "[[accounts]]\nname = \"ml\"\nusers = [\"alice\", \"bob\"]\ngrp_tres = \"cpu=4\"\n",
                vec![("bob", |j| j.cpus_per_task = 2)],
                |j| j.cpus_per_task = 3,
                Some("AssocGrpCpuLimit"),
            ),
            (
                "[[accounts]]\nname = \"ml\"\nusers = [\"alice\", \"bob\"]\ngrp_tres = \"gres/gpu=4\"\n",
                vec![("bob", |j| j.gpus = 4)],
                |j| j.gpus = 1,
                Some("AssocGrpGRES"),
            ),
            (
                "[[accounts]]\nname = \"ml\"\nusers = [\"alice\"]\nmax_jobs = 1\n",
                vec![("alice", none)],
                none,
                Some("AssocMaxJobsLimit"),
            ),
            (
                "[[accounts]]\nname = \"ml\"\nusers = [\"alice\", \"bob\"]\ngrp_jobs = 1\n",
                vec![("bob", none)],
                none,
                Some("AssocGrpJobsLimit"),
            ),
            (
                "[[accounts]]\nname = \"ml\"\nusers = [\"alice\"]\nmax_wall = \"59\"\n",
                vec![],
                none,
                Some("AssocMaxWallDurationPerJobLimit"),
            ),
            (
                "[[accounts]]\nname = \"ml\"\nusers = [\"alice\"]\nmax_tres_per_user = \"gres/gpu=2\"\n",
                vec![("alice", |j| j.gpus = 2)],
                |j| j.gpus = 1,
                Some("AssocGrpGRES"),
            ),
            (
                "[[accounts]]\nname = \"ml\"\nusers = [\"alice\"]\nmax_tres_per_job = \"cpu=8\"\n",
                vec![],
                |j| j.cpus_per_task = 9,
                Some("AssocMaxCpuPerJobLimit"),
            ),
            // The running job holds 2 CPUs × 60 min = 120 of 150 CPU-minutes.
            (
                "[[accounts]]\nname = \"ml\"\nusers = [\"alice\"]\ngrp_tres_mins = \"cpu=150\"\n",
                vec![("alice", |j| j.cpus_per_task = 2)],
                none,
                Some("AssocGrpCPUMinutesLimit"),
            ),
            // A parent's GrpTRES holds for its sub-accounts.
            (
                "[[accounts]]\nname = \"ml\"\ngrp_tres = \"cpu=2\"\n\
                 [[accounts]]\nname = \"vision\"\nparent = \"ml\"\nusers = [\"alice\", \"bob\"]\n",
                vec![("bob", |j| j.cpus_per_task = 2)],
                none,
                Some("AssocGrpCpuLimit"),
            ),
            // Within every limit.
            (
                "[[qos]]\nname = \"normal\"\nmax_jobs_per_user = 2\nmax_tres_per_user = \"cpu=8\"\n\
                 [[accounts]]\nname = \"ml\"\nusers = [\"alice\"]\ngrp_tres = \"cpu=8\"\n",
                vec![("alice", |j| j.cpus_per_task = 4)],
                |j| j.cpus_per_task = 4,
                None,
            ),
        ];
        for (limits, running, candidate, want) in cases {
            let (mut s, c) = setup(limits);
            for (i, (user, f)) in running.iter().enumerate() {
                let j = job(i as u32 + 1, user, f);
                let req = tres::job_request(&j.spec);
                let gpus: Vec<u32> =
                    (0..req.get("gres/gpu").copied().unwrap_or(0) as u32).collect();
                let a = alloc(&format!("n{}", i + 1), req["cpu"] as u32, &gpus);
                run(&mut s, j, a);
            }
            let t = LimitTracker::new(&s, &c);
            let got = t.check(&job(100, "alice", candidate));
            assert_eq!(got.map(|r| r.to_string()).as_deref(), want, "{limits}");
        }
    }

    #[test]
    fn grp_tres_mins_counts_decayed_usage() {
        let (mut s, c) = setup(
            "[priority]\ndecay_half_life = \"1:00:00\"\n\
             [[accounts]]\nname = \"ml\"\nusers = [\"alice\"]\ngrp_tres_mins = \"cpu=100\"\n",
        );
        // 160 CPU-minutes recorded at time 0; one half-life later they count 80.
        s.usage.insert(
            ("ml".into(), "alice".into()),
            model::usage::AssocUsage {
                billing: 9600.0,
                tres: BTreeMap::from([("cpu".to_string(), 9600.0)]),
                wall: 0.0,
                at: 0,
            },
        );
        let mut j = job(1, "alice", |_| {});
        j.time_limit_min = Some(10);
        assert_eq!(
            LimitTracker::at(&s, 0, &c)
                .check(&j)
                .map(|r| r.to_string())
                .as_deref(),
            Some("AssocGrpCPUMinutesLimit")
        );
        assert_eq!(LimitTracker::at(&s, 3600, &c).check(&j), None);
        j.time_limit_min = Some(30);
        assert!(LimitTracker::at(&s, 3600, &c).check(&j).is_some());
    }

    /// Sets limits the config cannot: on a user's association, run-minutes, submits.
    fn edit(c: &mut SchedConfig, f: impl FnOnce(&mut Associations)) {
        f(Arc::make_mut(&mut c.assocs));
    }

    #[test]
    fn grp_tres_run_mins_count_what_running_jobs_have_left() {
        let (mut s, mut c) = setup("[[accounts]]\nname = \"ml\"\nusers = [\"alice\"]\n");
        edit(&mut c, |a| {
            a.accounts.get_mut("ml").unwrap().limits.grp_tres_run_mins =
                tres::parse_counts("cpu=150").unwrap();
            a.qos.get_mut("normal").unwrap().limits.grp_tres_run_mins =
                tres::parse_counts("gres/gpu=100").unwrap();
        });
        // 2 CPUs for 60 minutes from time 0: 120 CPU-minutes left at 0, 60 at 30 min.
        run(
            &mut s,
            job(1, "alice", |j| j.cpus_per_task = 2),
            alloc("n1", 2, &[]),
        );
        let next = job(2, "alice", |_| {});
        let at = |now| {
            LimitTracker::at(&s, now, &c)
                .check(&next)
                .map(|r| r.to_string())
        };
        assert_eq!(at(0).as_deref(), Some("AssocGrpCPURunMinutesLimit"));
        assert_eq!(at(1800), None);
        // Two GPUs for 60 minutes are 120 GPU-minutes: over the QOS's 100.
        let gpus = job(3, "alice", |j| j.gpus = 2);
        assert_eq!(
            LimitTracker::at(&s, 1800, &c)
                .check(&gpus)
                .map(|r| r.to_string())
                .as_deref(),
            Some("QOSGrpGRESRunMinutes")
        );
    }

    #[test]
    fn max_tres_mins_per_job_holds_tres_times_the_time_limit() {
        let (s, mut c) = setup(
            "[[qos]]\nname = \"normal\"\nmax_tres_mins = \"gres/gpu=100\"\n\
             [[accounts]]\nname = \"ml\"\nusers = [\"alice\", \"bob\"]\nmax_tres_mins = \"cpu=120\"\n",
        );
        edit(&mut c, |a| {
            let ml = a.accounts.get_mut("ml").unwrap();
            ml.user_limits
                .entry("bob".into())
                .or_default()
                .max_tres_mins_per_job = tres::parse_counts("cpu=60").unwrap();
        });
        let t = LimitTracker::at(&s, 0, &c);
        let why = |j: &Job| t.check(j).map(|r| r.to_string());
        // Two CPUs for 60 minutes: 120 CPU-minutes, the account's most.
        assert_eq!(why(&job(1, "alice", |j| j.cpus_per_task = 2)), None);
        assert_eq!(
            why(&job(2, "alice", |j| j.cpus_per_task = 3)).as_deref(),
            Some("AssocMaxCpuMinutesPerJobLimit")
        );
        // bob's own association sets 60.
        assert_eq!(
            why(&job(3, "bob", |j| j.cpus_per_task = 2)).as_deref(),
            Some("AssocMaxCpuMinutesPerJobLimit")
        );
        // Two GPUs for 60 minutes: over the QOS's 100 GPU-minutes.
        assert_eq!(
            why(&job(4, "alice", |j| j.gpus = 2)).as_deref(),
            Some("QOSMaxGRESMinutesPerJob")
        );
        let mut short = job(5, "alice", |j| j.cpus_per_task = 3);
        short.time_limit_min = Some(40);
        assert_eq!(why(&short), None);
    }

    #[test]
    fn grp_wall_counts_past_and_running_wall_time() {
        let (mut s, mut c) = setup(
            "[priority]\ndecay_half_life = \"1:00:00\"\n\
             [[accounts]]\nname = \"ml\"\nusers = [\"alice\", \"bob\"]\ngrp_wall = \"1:00:00\"\n",
        );
        // 80 wall-minutes recorded at time 0 (whatever the jobs held): one half-life
        // later they count 40.
        s.usage.insert(
            ("ml".into(), "alice".into()),
            model::usage::AssocUsage {
                wall: 4800.0,
                ..Default::default()
            },
        );
        let next = job(2, "bob", |_| {});
        let at = |s: &ClusterState, c: &SchedConfig, now| {
            LimitTracker::at(s, now, c)
                .check(&next)
                .map(|r| r.to_string())
        };
        assert_eq!(at(&s, &c, 0).as_deref(), Some("AssocGrpWallLimit"));
        assert_eq!(at(&s, &c, 3600), None);
        // A job running since 0 adds what it ran so far: at one hour, about 43
        // minutes (decayed) beside the 40.
        run(
            &mut s,
            job(1, "bob", |j| j.cpus_per_task = 4),
            alloc("n1", 4, &[]),
        );
        assert_eq!(at(&s, &c, 3600).as_deref(), Some("AssocGrpWallLimit"));
        // On a user's association, only that user's jobs count.
        edit(&mut c, |a| {
            let ml = a.accounts.get_mut("ml").unwrap();
            ml.limits.grp_wall_min = None;
            ml.user_limits
                .entry("alice".into())
                .or_default()
                .grp_wall_min = Some(30);
        });
        assert_eq!(at(&s, &c, 3600), None);
        let alice = job(3, "alice", |_| {});
        assert_eq!(
            LimitTracker::at(&s, 3600, &c)
                .check(&alice)
                .map(|r| r.to_string())
                .as_deref(),
            Some("AssocGrpWallLimit")
        );
    }

    #[test]
    fn a_qos_counts_its_own_usage_for_grp_tres_mins_and_grp_wall() {
        let (mut s, c) = setup(
            "[[qos]]\nname = \"normal\"\ngrp_tres_mins = \"cpu=100\"\ngrp_wall = \"1:00:00\"\n",
        );
        // 90 CPU-minutes and 30 wall-minutes charged to the QOS.
        s.qos_usage.insert(
            "normal".into(),
            model::usage::AssocUsage {
                tres: BTreeMap::from([("cpu".to_string(), 5400.0)]),
                wall: 1800.0,
                ..Default::default()
            },
        );
        let mut j = job(1, "alice", |_| {});
        j.time_limit_min = Some(20);
        let why =
            |s: &ClusterState, j: &Job| LimitTracker::at(s, 0, &c).check(j).map(|r| r.to_string());
        assert_eq!(why(&s, &j).as_deref(), Some("QOSGrpCPUMinutesLimit"));
        j.time_limit_min = Some(10);
        assert_eq!(why(&s, &j), None);
        s.qos_usage.get_mut("normal").unwrap().wall = 3600.0;
        assert_eq!(why(&s, &j).as_deref(), Some("QOSGrpWallLimit"));
    }

    #[test]
    fn a_user_association_limit_comes_before_the_account_limit() {
        let (mut s, mut c) =
            setup("[[accounts]]\nname = \"ml\"\nusers = [\"alice\", \"bob\"]\nmax_jobs = 5\n");
        edit(&mut c, |a| {
            let ml = a.accounts.get_mut("ml").unwrap();
            ml.user_limits.entry("alice".into()).or_default().max_jobs = Some(1);
        });
        run(&mut s, job(1, "alice", |_| {}), alloc("n1", 1, &[]));
        run(&mut s, job(2, "bob", |_| {}), alloc("n2", 1, &[]));
        let t = LimitTracker::at(&s, 0, &c);
        assert_eq!(
            t.check(&job(3, "alice", |_| {}))
                .map(|r| r.to_string())
                .as_deref(),
            Some("AssocMaxJobsLimit")
        );
        assert_eq!(t.check(&job(4, "bob", |_| {})), None);
    }

    #[test]
    fn grp_submit_counts_everyone_below_the_account() {
        let (mut s, mut c) = setup(
            "[[accounts]]\nname = \"ml\"\n\
             [[accounts]]\nname = \"vision\"\nparent = \"ml\"\nusers = [\"alice\", \"bob\"]\n",
        );
        edit(&mut c, |a| {
            a.accounts.get_mut("ml").unwrap().limits.grp_submit = Some(2);
        });
        assert!(SubmitCounts::needed(&c.assocs));
        s.apply(&Event::JobSubmitted {
            job: Box::new(job(1, "alice", |_| {})),
        });
        let mut counts = SubmitCounts::new(&s, &c.assocs);
        let bob = job(2, "bob", |_| {}).spec;
        assert_eq!(counts.check(&c.assocs, &bob), Ok(()));
        counts.add(&c.assocs, &bob);
        assert_eq!(
            counts.check(&c.assocs, &job(3, "alice", |_| {}).spec),
            Err(SUBMIT_LIMIT_MESSAGE.into())
        );
        // A QOS's GrpSubmitJobs counts every user of the QOS.
        edit(&mut c, |a| {
            a.accounts.get_mut("ml").unwrap().limits.grp_submit = None;
            a.qos.get_mut("normal").unwrap().limits.grp_submit = Some(2);
        });
        assert!(counts.check(&c.assocs, &bob).is_err());
    }

    #[test]
    fn submit_limits_count_array_tasks() {
        let (mut s, c) = setup(
            "[[qos]]\nname = \"normal\"\nmax_submit_jobs_per_user = 4\n\
             [[accounts]]\nname = \"ml\"\nusers = [\"alice\", \"bob\"]\nmax_submit = 3\n",
        );
        let a = &c.assocs;
        let array = job(1, "alice", |j| {
            j.array = Some(model::job::parse_array("0-1", 10).unwrap())
        });
        s.apply(&Event::JobSubmitted {
            job: Box::new(array),
        });
        let counts = SubmitCounts::new(&s, a);
        let one = job(2, "alice", |_| {}).spec;
        assert_eq!(counts.check(a, &one), Ok(()));
        let two = job(3, "alice", |j| {
            j.array = Some(model::job::parse_array("0-1", 10).unwrap())
        })
        .spec;
        assert_eq!(counts.check(a, &two), Err(SUBMIT_LIMIT_MESSAGE.into()));
        let mut counts = counts;
        counts.add(a, &one);
        assert!(counts.check(a, &one).is_err());
        assert_eq!(counts.check(a, &job(4, "bob", |_| {}).spec), Ok(()));
        assert!(SubmitCounts::needed(a));
    }
}
