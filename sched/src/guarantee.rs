//! Guaranteed quota with borrowing: an account's `GuaranteedTRES` (Drover's; `[[accounts]]
//! guaranteed_tres` or `sacctmgr modify account X set GuaranteedTRES=gres/gpu=8`) is
//! what it and everything below it may always have back. While it is idle others run
//! on it; such a job is *borrowing*, and when a job of the owner needs the room, the
//! scheduler reclaims it: the borrower is stopped by `[scheduler] reclaim_mode`
//! (requeue by default, after its QOS's GraceTime), through the preemption search.
//!
//! A job borrows a guaranteed TRES when its account has no guarantee of that TRES, or
//! when its account's running jobs together hold more than the guarantee. A pending job
//! may reclaim from a borrower of another account when its own account's running jobs
//! and the job itself stay within its guarantee, and when stopping the borrower leaves
//! the borrower's account at least its own guarantee: only what is borrowed is taken.
//!
//! Worked example: one node with 4 GPUs; `ml` is guaranteed `gres/gpu=4`, `physics`
//! nothing. A physics job runs on all 4 GPUs while ml is idle: it borrows. An ml job
//! asking for 2 GPUs finds no room; ml holds 0 + 2 ≤ 4, so the physics job is
//! reclaimed (requeued) and the ml job starts in its room. A second ml job of 4 GPUs
//! would hold 2 + 4 > 4: it waits like any other job.
//!
//! Beside Slurm, this is QOS preemption with GrpTRES per team made automatic: the
//! guarantee decides who may preempt whom, jobs need no special QOS. Beside Kueue, an
//! account is a ClusterQueue whose nominal quota is its guarantee, the cluster is one
//! cohort, borrowing is unlimited while capacity is idle unless the account's
//! BorrowingLimit or a lender's LendingLimit says otherwise (`crate::limits`), and
//! reclaim is Kueue's `reclaimWithinCohort: Any`.

use model::assoc::Associations;
use model::tres::{self, TresCounts};
use model::{Allocation, ClusterState, Job, JobId, JobState};
use std::collections::{BTreeMap, BTreeSet};

/// Is any guarantee set? (Otherwise nothing borrows and nothing is reclaimed.)
pub fn any(assocs: &Associations) -> bool {
    assocs
        .accounts
        .values()
        .any(|a| !a.limits.guaranteed_tres.is_empty())
}

/// The guarantees and what each guaranteed account's running jobs hold, as a pass
/// sees them (starts and reclaims it plans are counted as they are decided).
#[derive(Debug, Clone)]
pub struct Guarantees<'a> {
    assocs: &'a Associations,
    /// The guaranteed TRES names, of every account together.
    kinds: BTreeSet<String>,
    /// Per guaranteed account: what its subtree's running jobs hold.
    held: BTreeMap<String, TresCounts>,
}

impl<'a> Guarantees<'a> {
    pub fn new(state: &ClusterState, assocs: &'a Associations) -> Guarantees<'a> {
        let kinds = assocs
            .accounts
            .values()
            .flat_map(|a| a.limits.guaranteed_tres.keys().cloned())
            .collect();
        let mut g = Guarantees {
            assocs,
            kinds,
            held: BTreeMap::new(),
        };
        for job in state.running_jobs() {
            if job.state == JobState::Completing {
                continue;
            }
            if let Some(alloc) = &job.alloc {
                g.add(job, &tres::alloc_tres(alloc, &state.nodes));
            }
        }
        g
    }

    /// The account whose guarantee covers `account`: itself or its nearest ancestor
    /// with one.
    pub fn group_of(&self, account: &str) -> Option<&'a str> {
        self.assocs
            .lineage(account)
            .into_iter()
            .find(|a| !a.limits.guaranteed_tres.is_empty())
            .map(|a| a.name.as_str())
    }

    fn guarantee(&self, group: &str) -> &'a TresCounts {
        &self.assocs.accounts[group].limits.guaranteed_tres
    }

    fn held_of(&self, group: &str, name: &str) -> u64 {
        self.held
            .get(group)
            .and_then(|h| h.get(name))
            .copied()
            .unwrap_or(0)
    }

    /// Counts what `job` holds (a start) for its group.
    pub fn add(&mut self, job: &Job, held: &TresCounts) {
        if let Some(group) = self.group_of(&job.spec.account) {
            let sum = self.held.entry(group.to_string()).or_default();
            for (k, v) in held {
                *sum.entry(k.clone()).or_default() += v;
            }
        }
    }

    /// Takes back what a stopped job held.
    fn remove(&mut self, job: &Job, held: &TresCounts) {
        if let Some(group) = self.group_of(&job.spec.account) {
            let sum = self.held.entry(group.to_string()).or_default();
            for (k, v) in held {
                let have = sum.entry(k.clone()).or_default();
                *have = have.saturating_sub(*v);
            }
        }
    }

    /// The guaranteed TRES a job holding `held` borrows: those its account has no
    /// guarantee of, or holds more of than guaranteed. Empty: it runs on its own.
    pub fn borrowed(&self, job: &Job, held: &TresCounts) -> Vec<(String, BorrowedFrom)> {
        let group = self.group_of(&job.spec.account);
        self.kinds
            .iter()
            .filter(|k| held.get(*k).is_some_and(|n| *n > 0))
            .filter_map(|k| match group {
                None => Some((k.clone(), BorrowedFrom::NoGuarantee)),
                Some(g) => {
                    let limit = self.guarantee(g).get(k).copied();
                    match limit {
                        None => Some((k.clone(), BorrowedFrom::NoGuarantee)),
                        Some(limit) if self.held_of(g, k) > limit => Some((
                            k.clone(),
                            BorrowedFrom::OverGuarantee {
                                account: g.to_string(),
                                guaranteed: limit,
                                held: self.held_of(g, k),
                            },
                        )),
                        Some(_) => None,
                    }
                }
            })
            .collect()
    }

    /// The guaranteed TRES `job` (pending, asking `req`) may take back: those it asks
    /// for while its account stays within the guarantee.
    fn reclaimable(&self, job: &Job, req: &TresCounts) -> Vec<&str> {
        let Some(group) = self.group_of(&job.spec.account) else {
            return Vec::new();
        };
        self.guarantee(group)
            .iter()
            .filter(|(k, limit)| {
                let want = req.get(*k).copied().unwrap_or(0);
                want > 0 && self.held_of(group, k) + want <= **limit
            })
            .map(|(k, _)| k.as_str())
            .collect()
    }

    /// Could `job` reclaim anything at all?
    pub fn may_reclaim_any(&self, job: &Job) -> bool {
        !self
            .reclaimable(job, &tres::job_request(&job.spec))
            .is_empty()
    }

    /// May `job` (asking `req`) reclaim from `victim`, which holds `held`?
    pub fn may_reclaim(
        &self,
        job: &Job,
        req: &TresCounts,
        victim: &Job,
        held: &TresCounts,
    ) -> bool {
        let mine = self.group_of(&job.spec.account);
        let theirs = self.group_of(&victim.spec.account);
        if mine.is_none() || mine == theirs {
            return false;
        }
        self.reclaimable(job, req).into_iter().any(|k| {
            let v = held.get(k).copied().unwrap_or(0);
            v > 0
                && theirs.is_none_or(|g| match self.guarantee(g).get(k) {
                    None => true,
                    Some(limit) => self.held_of(g, k).saturating_sub(v) >= *limit,
                })
        })
    }

    /// Counts a reclaim decided in the pass: the victims stop holding, the job will.
    pub fn reclaimed(&mut self, job: &Job, req: &TresCounts, victims: &[(&Job, TresCounts)]) {
        for (victim, held) in victims {
            self.remove(victim, held);
        }
        self.add(job, req);
    }

    /// The accounts lending TRES `name` now: holding less of it than guaranteed.
    pub fn lenders(&self, name: &str) -> Vec<&'a str> {
        self.assocs
            .accounts
            .values()
            .filter(|a| {
                a.limits
                    .guaranteed_tres
                    .get(name)
                    .is_some_and(|limit| self.held_of(&a.name, name) < *limit)
            })
            .map(|a| a.name.as_str())
            .collect()
    }

    /// Counts a start planned in the pass.
    pub fn started(&mut self, job: &Job, alloc: &Allocation, state: &ClusterState) {
        self.add(job, &tres::alloc_tres(alloc, &state.nodes));
    }
}

/// What each running job borrows of the guaranteed TRES (`Guarantees::borrowed`), by
/// job: the TRES and how much of it the job holds; jobs that borrow nothing are left
/// out, and so is everything when no guarantee is set. `scontrol show job` shows it as
/// `Borrowed=gres/gpu=2`, `squeue -O borrowed` as a column.
pub fn borrowed_by_job(state: &ClusterState, assocs: &Associations) -> BTreeMap<JobId, TresCounts> {
    let mut out = BTreeMap::new();
    if !any(assocs) {
        return out;
    }
    let g = Guarantees::new(state, assocs);
    for job in state.running_jobs() {
        let Some(alloc) = &job.alloc else { continue };
        let held = tres::alloc_tres(alloc, &state.nodes);
        let borrowed: TresCounts = g
            .borrowed(job, &held)
            .into_iter()
            .map(|(name, _)| {
                let n = held.get(&name).copied().unwrap_or(0);
                (name, n)
            })
            .collect();
        if !borrowed.is_empty() {
            out.insert(job.id, borrowed);
        }
    }
    out
}

/// Whose idle quota a borrowing job runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BorrowedFrom {
    /// Its account has no guarantee of this TRES.
    NoGuarantee,
    /// Its account holds more than its guarantee.
    OverGuarantee {
        account: String,
        guaranteed: u64,
        held: u64,
    },
}
