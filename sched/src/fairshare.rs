//! Fair share over the account tree: usage (decayed billing-seconds) against shares,
//! with Slurm's Fair Tree (the default) or classic `2^(-U/S)` algorithm. Also what a
//! job's run costs (`charge`), the only way usage grows.
//!
//! Usage of an association at `now` = its stored record decayed to `now` plus, for each
//! of its running jobs, the decayed integral of the job's billing rate since its start.
//! An account's usage is the sum over everything below it.
//!
//! **Fair Tree.** For every node, against its siblings: `S = shares / Σ sibling shares`,
//! `U = usage / parent usage` and the level fair share `LF = S / U` (∞ without usage).
//! Children are visited by LF, highest first, depth-first; users are ranked in that
//! order and get `rank / users` (the first user 1.0). Users with equal LF share a rank;
//! sibling accounts with equal LF have their children merged.
//!
//! **Classic.** `S` is the product of the share ratios down the tree, `UA = usage /
//! total usage`, effective usage `UE = UA` under root and `UE = UA + (UE_parent − UA) ·
//! shares / Σ sibling shares` below, and the factor is `2^(−UE/S)`.
//!
//! Worked example: root → A (1 share, used 30) → {a1 (30), a2 (0)}, and B (1 share,
//! used 10) → {b1 (10)}. Fair Tree: A has S = 0.5, U = 0.75, LF = 0.67; B has
//! LF = 0.5/0.25 = 2, so b1 comes first (3/3 = 1.0), then under A a2 (LF ∞, 2/3) and a1
//! (LF 0.5, 1/3). Classic: S(a1) = S(a2) = 0.25, S(b1) = 0.5; UE(a1) = 0.75,
//! UE(a2) = 0 + 0.75 · 0.5 = 0.375, UE(b1) = 0.25, so a1 = 2^−3 = 0.125,
//! a2 = 2^−1.5 ≈ 0.354, b1 = 2^−0.5 ≈ 0.707.

use crate::SchedConfig;
use model::assoc::{Associations, ROOT};
use model::tres::{self, TresCounts};
use model::usage::{AssocKey, AssocUsage, decayed_integral};
use model::{ClusterState, Event, Job, JobState, Time};
use std::collections::{BTreeMap, BTreeSet};

pub use model::factors::ShareRow;

/// `[priority] fairshare`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Algorithm {
    #[default]
    FairTree,
    Classic,
}

impl Algorithm {
    pub fn parse(text: &str) -> Option<Algorithm> {
        match text {
            "fair_tree" => Some(Algorithm::FairTree),
            "classic" => Some(Algorithm::Classic),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::FairTree => "fair_tree",
            Algorithm::Classic => "classic",
        }
    }
}

/// What a running job holds and what a second of it costs.
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    /// Billing units per second, the QOS usage factor applied.
    pub billing: f64,
    /// TRES held (from its allocation).
    pub tres: TresCounts,
}

/// The billing rate of a job that holds an allocation, `None` otherwise.
pub fn job_rate(state: &ClusterState, job: &Job, config: &SchedConfig) -> Option<Rate> {
    let alloc = job.alloc.as_ref()?;
    let tres = tres::alloc_tres(alloc, &state.nodes);
    let factor = config
        .assocs
        .qos
        .get(config.assocs.qos_of(&job.spec))
        .map(|q| q.usage_factor)
        .unwrap_or(1.0);
    Some(Rate {
        billing: tres::billing(&tres, &config.priority.billing_weights) * factor,
        tres,
    })
}

/// The association a job charges: (account, user).
pub fn assoc_key(assocs: &Associations, job: &Job) -> AssocKey {
    (
        assocs.account_of(&job.spec).to_string(),
        job.spec.user.clone(),
    )
}

/// The usage a job's run from its start to `end` adds, decayed to `end`.
pub fn run_usage(rate: &Rate, start: Time, end: Time, half_life_s: u64) -> AssocUsage {
    let mut usage = AssocUsage {
        billing: decayed_integral(rate.billing, start, end, half_life_s),
        tres: BTreeMap::new(),
        wall: decayed_integral(1.0, start, end, half_life_s),
        at: end,
    };
    for (name, count) in &rate.tres {
        usage.tres.insert(
            name.clone(),
            decayed_integral(*count as f64, start, end, half_life_s),
        );
    }
    usage
}

/// Where a job's charged run begins: `end` less the seconds it ran by then
/// (`Job::run_secs`, which leaves out the time it spent suspended), so that suspended
/// seconds are not charged. The window keeps its end, so decay treats the run as the
/// most recent part of the span.
fn charged_start(job: &Job, end: Time) -> Time {
    end - job.run_secs(end)
}

/// The event that charges a job's run (from its start to `end`) to its association
/// and its QOS, for a job that holds an allocation; `None` otherwise. Emit it before
/// the event that ends or requeues the job.
pub fn charge(state: &ClusterState, job: &Job, end: Time, config: &SchedConfig) -> Option<Event> {
    let rate = job_rate(state, job, config)?;
    let half_life = config.priority.half_life_s;
    let key = assoc_key(&config.assocs, job);
    let qos = config.assocs.qos_of(&job.spec).to_string();
    let end = end.max(job.start_time);
    let run = run_usage(&rate, charged_start(job, end), end, half_life);
    let charged = |old: Option<&AssocUsage>| {
        let mut usage = old
            .map(|u| u.decayed(end, half_life))
            .unwrap_or_else(|| AssocUsage {
                at: end,
                ..AssocUsage::default()
            });
        usage.add(&run);
        usage
    };
    Some(Event::UsageCharged {
        job_id: job.id,
        usage: charged(state.usage.get(&key)),
        account: key.0,
        user: key.1,
        qos_usage: charged(state.qos_usage.get(&qos)),
        qos,
    })
}

/// Every association's usage at `now`: stored records decayed, plus what running jobs
/// used so far.
pub fn current_usage(
    state: &ClusterState,
    now: Time,
    config: &SchedConfig,
) -> BTreeMap<AssocKey, AssocUsage> {
    let running: Vec<&Job> = state.running_jobs().collect();
    usage_with_running(state, &running, now, config)
}

/// The associations' usage at `now`, with what the `running` jobs used so far.
fn usage_with_running(
    state: &ClusterState,
    running: &[&Job],
    now: Time,
    config: &SchedConfig,
) -> BTreeMap<AssocKey, AssocUsage> {
    let key = |j: &Job| assoc_key(&config.assocs, j);
    with_running(&state.usage, key, state, running, now, config)
}

/// Every QOS's usage at `now`, as [`current_usage`] the associations'.
pub fn current_qos_usage(
    state: &ClusterState,
    now: Time,
    config: &SchedConfig,
) -> BTreeMap<String, AssocUsage> {
    let running: Vec<&Job> = state.running_jobs().collect();
    let qos = |j: &Job| config.assocs.qos_of(&j.spec).to_string();
    with_running(&state.qos_usage, qos, state, &running, now, config)
}

/// Stored usage records decayed to `now`, plus what the `running` jobs used so far,
/// each under its `key`.
fn with_running<K: Ord + Clone>(
    stored: &BTreeMap<K, AssocUsage>,
    key: impl Fn(&Job) -> K,
    state: &ClusterState,
    running: &[&Job],
    now: Time,
    config: &SchedConfig,
) -> BTreeMap<K, AssocUsage> {
    let half_life = config.priority.half_life_s;
    let mut out: BTreeMap<K, AssocUsage> = stored
        .iter()
        .map(|(k, u)| (k.clone(), u.decayed(now, half_life)))
        .collect();
    for job in running {
        let Some(rate) = job_rate(state, job, config) else {
            continue;
        };
        let run = run_usage(&rate, charged_start(job, now), now, half_life);
        out.entry(key(job))
            .or_insert_with(|| AssocUsage {
                at: now,
                ..AssocUsage::default()
            })
            .add(&run);
    }
    out
}

/// The fair-share state of every association at one time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShareTree {
    pub algorithm: Algorithm,
    /// Root, then depth first: an account's users (by name), then its sub-accounts.
    pub rows: Vec<ShareRow>,
    /// account → user → factor.
    factors: BTreeMap<String, BTreeMap<String, f64>>,
}

#[derive(Debug)]
struct TreeNode {
    account: String,
    user: Option<String>,
    parent: Option<usize>,
    children: Vec<usize>,
    shares: u32,
    usage: f64,
    depth: u32,
    // Computed:
    norm_shares_level: f64,
    level_usage: f64,
    level_fs: f64,
}

/// What the tree is built from.
struct TreeInput<'a> {
    /// account → (parent, shares)
    accounts: &'a BTreeMap<String, (Option<String>, u32)>,
    members: &'a BTreeMap<String, BTreeSet<String>>,
    children_of: &'a BTreeMap<String, Vec<String>>,
    usage: &'a BTreeMap<AssocKey, AssocUsage>,
    /// For users' shares (their associations' own, else 1).
    assocs: &'a Associations,
}

impl TreeInput<'_> {
    /// Adds an account, then its users, then its sub-accounts (each by name), depth
    /// first; returns the account's index.
    fn add(
        &self,
        account: &str,
        parent: Option<usize>,
        depth: u32,
        nodes: &mut Vec<TreeNode>,
    ) -> usize {
        let node = |user: Option<String>, parent, shares, usage, depth| TreeNode {
            account: account.to_string(),
            user,
            parent,
            children: Vec::new(),
            shares,
            usage,
            depth,
            norm_shares_level: 0.0,
            level_usage: 0.0,
            level_fs: 0.0,
        };
        let me = nodes.len();
        let shares = self.accounts.get(account).map(|a| a.1).unwrap_or(1);
        nodes.push(node(None, parent, shares, 0.0, depth));
        for user in self.members.get(account).into_iter().flatten() {
            let id = nodes.len();
            let used = self
                .usage
                .get(&(account.to_string(), user.clone()))
                .map(|u| u.billing)
                .unwrap_or(0.0);
            let shares = self.assocs.user_shares(account, user);
            nodes.push(node(Some(user.clone()), Some(me), shares, used, depth + 1));
            nodes[me].children.push(id);
        }
        if depth < 64 {
            for child in self.children_of.get(account).into_iter().flatten() {
                let id = self.add(child, Some(me), depth + 1, nodes);
                nodes[me].children.push(id);
            }
        }
        me
    }
}

impl ShareTree {
    /// Computes the tree from the state's usage and jobs at `now`.
    pub fn compute(state: &ClusterState, now: Time, config: &SchedConfig) -> ShareTree {
        // One pass over the jobs: the running ones, and every live association (most
        // jobs share few associations: deduplicated borrowed, then copied once each).
        let mut running: Vec<&Job> = Vec::new();
        let mut seen: BTreeSet<(&str, &str)> = BTreeSet::new();
        for job in state.pending_jobs().chain(state.running_jobs()) {
            if job.state != JobState::Pending {
                running.push(job);
            }
            seen.insert((config.assocs.account_of(&job.spec), job.spec.user.as_str()));
        }
        let usage = usage_with_running(state, &running, now, config);
        let mut run_mins: BTreeMap<AssocKey, TresCounts> = BTreeMap::new();
        for job in &running {
            let (Some(limit), Some(alloc)) = (job.time_limit_secs(), job.alloc.as_ref()) else {
                continue;
            };
            let left_min = ((job.start_time + limit - now).max(0) / 60) as u64;
            let held = tres::alloc_tres(alloc, &state.nodes);
            let entry = run_mins.entry(assoc_key(&config.assocs, job)).or_default();
            for (name, n) in held {
                *entry.entry(name).or_default() += n * left_min;
            }
        }
        let users: BTreeSet<AssocKey> = seen
            .into_iter()
            .map(|(a, u)| (a.to_string(), u.to_string()))
            .chain(usage.keys().cloned())
            .collect();
        Self::build(
            &config.assocs,
            config.priority.algorithm,
            &usage,
            &users,
            &run_mins,
        )
    }

    /// The tree for given usage per association (pure arithmetic: tests use it
    /// directly). `extra_users` adds associations beyond the configured ones.
    pub fn build(
        assocs: &Associations,
        algorithm: Algorithm,
        usage: &BTreeMap<AssocKey, AssocUsage>,
        extra_users: &BTreeSet<AssocKey>,
        run_mins: &BTreeMap<AssocKey, TresCounts>,
    ) -> ShareTree {
        // Accounts: configured ones, plus unknown ones named by jobs under root.
        let mut accounts: BTreeMap<String, (Option<String>, u32)> = assocs
            .accounts
            .values()
            .map(|a| (a.name.clone(), (a.parent.clone(), a.shares)))
            .collect();
        let mut members: BTreeMap<String, BTreeSet<String>> = assocs
            .accounts
            .values()
            .map(|a| (a.name.clone(), a.users.clone()))
            .collect();
        for (account, user) in extra_users.iter().chain(usage.keys()) {
            accounts
                .entry(account.clone())
                .or_insert_with(|| (Some(ROOT.to_string()), 1));
            members
                .entry(account.clone())
                .or_default()
                .insert(user.clone());
        }
        // Root's own users only appear when they have usage or jobs.
        if let Some(root_users) = members.get_mut(ROOT) {
            root_users.retain(|u| {
                let key = (ROOT.to_string(), u.clone());
                usage.contains_key(&key) || extra_users.contains(&key)
            });
        }
        let mut nodes: Vec<TreeNode> = Vec::new();
        let mut children_of: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, (parent, _)) in &accounts {
            if let Some(p) = parent {
                children_of.entry(p.clone()).or_default().push(name.clone());
            }
        }
        let input = TreeInput {
            accounts: &accounts,
            members: &members,
            children_of: &children_of,
            usage,
            assocs,
        };
        input.add(ROOT, None, 0, &mut nodes);
        // Usage sums up the tree (children come after their parent).
        for i in (0..nodes.len()).rev() {
            if let Some(p) = nodes[i].parent {
                let u = nodes[i].usage;
                nodes[p].usage += u;
            }
        }
        let total = nodes[0].usage;
        for i in 0..nodes.len() {
            let kids = nodes[i].children.clone();
            let level_shares: u64 = kids.iter().map(|k| u64::from(nodes[*k].shares)).sum();
            let parent_usage = nodes[i].usage;
            for k in kids {
                let n = &mut nodes[k];
                n.norm_shares_level = if level_shares == 0 {
                    0.0
                } else {
                    f64::from(n.shares) / level_shares as f64
                };
                n.level_usage = if parent_usage > 0.0 {
                    n.usage / parent_usage
                } else {
                    0.0
                };
                n.level_fs = if n.norm_shares_level == 0.0 {
                    0.0
                } else if n.level_usage == 0.0 {
                    f64::INFINITY
                } else {
                    n.norm_shares_level / n.level_usage
                };
            }
        }
        let norm_usage = |n: &TreeNode| if total > 0.0 { n.usage / total } else { 0.0 };

        let mut rows: Vec<ShareRow> = Vec::with_capacity(nodes.len());
        let mut factors = BTreeMap::new();
        match algorithm {
            Algorithm::FairTree => {
                let user_count = nodes.iter().filter(|n| n.user.is_some()).count();
                let mut fs = vec![None; nodes.len()];
                let mut rank = user_count;
                let mut remaining = user_count;
                rank_level(
                    &nodes,
                    nodes[0].children.clone(),
                    false,
                    &mut rank,
                    &mut remaining,
                    user_count,
                    &mut fs,
                );
                for (i, n) in nodes.iter().enumerate() {
                    rows.push(ShareRow {
                        account: n.account.clone(),
                        user: n.user.clone(),
                        parent: n.parent.map(|p| nodes[p].account.clone()),
                        depth: n.depth,
                        raw_shares: n.parent.map(|_| n.shares),
                        norm_shares: if i == 0 { 1.0 } else { n.norm_shares_level },
                        raw_usage: n.usage,
                        norm_usage: norm_usage(n),
                        effective_usage: if i == 0 { 1.0 } else { n.level_usage },
                        level_fs: n.parent.map(|_| n.level_fs),
                        fairshare: fs[i],
                        grp_tres_mins: TresCounts::new(),
                        tres_run_mins: TresCounts::new(),
                    });
                    if let (Some(u), Some(f)) = (&n.user, fs[i]) {
                        factors
                            .entry(n.account.clone())
                            .or_insert_with(BTreeMap::new)
                            .insert(u.clone(), f);
                    }
                }
            }
            Algorithm::Classic => {
                let mut shares = vec![1.0; nodes.len()];
                let mut effective = vec![1.0; nodes.len()];
                for i in 1..nodes.len() {
                    let p = nodes[i].parent.unwrap_or(0);
                    shares[i] = shares[p] * nodes[i].norm_shares_level;
                    let ua = norm_usage(&nodes[i]);
                    effective[i] = if p == 0 {
                        ua
                    } else if nodes[p]
                        .children
                        .iter()
                        .all(|c| nodes[*c].norm_shares_level == 0.0)
                    {
                        effective[p]
                    } else {
                        ua + (effective[p] - ua) * nodes[i].norm_shares_level
                    };
                }
                for (i, n) in nodes.iter().enumerate() {
                    let f = classic_factor(effective[i], shares[i]);
                    rows.push(ShareRow {
                        account: n.account.clone(),
                        user: n.user.clone(),
                        parent: n.parent.map(|p| nodes[p].account.clone()),
                        depth: n.depth,
                        raw_shares: n.parent.map(|_| n.shares),
                        norm_shares: shares[i],
                        raw_usage: n.usage,
                        norm_usage: norm_usage(n),
                        effective_usage: effective[i],
                        level_fs: n.parent.map(|_| n.level_fs),
                        fairshare: (i > 0).then_some(f),
                        grp_tres_mins: TresCounts::new(),
                        tres_run_mins: TresCounts::new(),
                    });
                    if let Some(u) = &n.user {
                        factors
                            .entry(n.account.clone())
                            .or_insert_with(BTreeMap::new)
                            .insert(u.clone(), f);
                    }
                }
            }
        }
        // TRES-minutes: the account's limit, and what running jobs below still hold.
        for (i, n) in nodes.iter().enumerate() {
            if n.user.is_none() {
                if let Some(a) = assocs.accounts.get(&n.account) {
                    rows[i].grp_tres_mins = a.limits.grp_tres_mins.clone();
                }
            } else if let Some(m) = run_mins.get(&(n.account.clone(), n.user.clone().unwrap())) {
                let mut at = Some(i);
                while let Some(k) = at {
                    for (name, v) in m {
                        *rows[k].tres_run_mins.entry(name.clone()).or_default() += v;
                    }
                    at = nodes[k].parent;
                }
            }
        }
        ShareTree {
            algorithm,
            rows,
            factors,
        }
    }

    /// The fair-share factor of an association (0 when unknown).
    pub fn factor(&self, account: &str, user: &str) -> f64 {
        self.factors
            .get(account)
            .and_then(|users| users.get(user))
            .copied()
            .unwrap_or(0.0)
    }
}

/// Classic fair share: `2^(−UE/S)`, 0 without shares.
pub fn classic_factor(effective_usage: f64, norm_shares: f64) -> f64 {
    if norm_shares <= 0.0 {
        0.0
    } else {
        (-effective_usage / norm_shares).exp2()
    }
}

/// Fair Tree's ranking of one level (`ids` are siblings, or the merged children of
/// tied accounts). `tied` says the first of them ties with the user ranked last.
fn rank_level(
    nodes: &[TreeNode],
    mut ids: Vec<usize>,
    tied: bool,
    rank: &mut usize,
    remaining: &mut usize,
    user_count: usize,
    fs: &mut [Option<f64>],
) {
    // Highest LF first; on equal LF users before accounts, then by name.
    ids.sort_by(|a, b| {
        let (x, y) = (&nodes[*a], &nodes[*b]);
        y.level_fs
            .total_cmp(&x.level_fs)
            .then_with(|| y.user.is_some().cmp(&x.user.is_some()))
            .then_with(|| x.account.cmp(&y.account))
            .then_with(|| x.user.cmp(&y.user))
    });
    let mut i = 0;
    while i < ids.len() {
        let n = &nodes[ids[i]];
        let is_tied = if i == 0 {
            tied
        } else {
            nodes[ids[i - 1]].level_fs == n.level_fs
        };
        if n.user.is_some() {
            if !is_tied {
                *rank = *remaining;
            }
            fs[ids[i]] = Some(*rank as f64 / user_count.max(1) as f64);
            *remaining = remaining.saturating_sub(1);
            i += 1;
        } else {
            // Accounts tied with each other are merged into one level.
            let mut merged = n.children.clone();
            let mut j = i + 1;
            while j < ids.len()
                && nodes[ids[j]].user.is_none()
                && nodes[ids[j]].level_fs == n.level_fs
            {
                merged.extend(nodes[ids[j]].children.iter().copied());
                j += 1;
            }
            rank_level(nodes, merged, is_tied, rank, remaining, user_count, fs);
            i = j;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::Config;

    fn assocs(text: &str) -> Associations {
        Associations::from_config(&Config::parse(text, "t.toml").unwrap())
    }

    fn used(pairs: &[(&str, &str, f64)]) -> BTreeMap<AssocKey, AssocUsage> {
        pairs
            .iter()
            .map(|(a, u, b)| {
                (
                    (a.to_string(), u.to_string()),
                    AssocUsage {
                        billing: *b,
                        tres: BTreeMap::new(),
                        wall: 0.0,
                        at: 0,
                    },
                )
            })
            .collect()
    }

    const TREE: &str = r#"
[[accounts]]
name = "A"
users = ["a1", "a2"]
[[accounts]]
name = "B"
users = ["b1"]
"#;

    fn render(t: &ShareTree) -> String {
        let mut out = String::new();
        for r in &t.rows {
            let name = format!(
                "{}{}{}",
                " ".repeat(r.depth as usize),
                r.account,
                r.user.as_ref().map(|u| format!("/{u}")).unwrap_or_default()
            );
            out.push_str(&format!(
                "{name} S={:.3} U={:.3} LF={} F={}\n",
                r.norm_shares,
                r.effective_usage,
                r.level_fs.map(|l| format!("{l:.3}")).unwrap_or("-".into()),
                r.fairshare.map(|f| format!("{f:.3}")).unwrap_or("-".into()),
            ));
        }
        out
    }

    #[test]
    fn fair_tree_worked_example() {
        let a = assocs(TREE);
        let usage = used(&[("A", "a1", 30.0), ("B", "b1", 10.0)]);
        let t = ShareTree::build(
            &a,
            Algorithm::FairTree,
            &usage,
            &BTreeSet::new(),
            &BTreeMap::new(),
        );
        assert_eq!(
            render(&t),
            "root S=1.000 U=1.000 LF=- F=-\n\
             \x20A S=0.500 U=0.750 LF=0.667 F=-\n\
             \x20\x20A/a1 S=0.500 U=1.000 LF=0.500 F=0.333\n\
             \x20\x20A/a2 S=0.500 U=0.000 LF=inf F=0.667\n\
             \x20B S=0.500 U=0.250 LF=2.000 F=-\n\
             \x20\x20B/b1 S=1.000 U=1.000 LF=1.000 F=1.000\n"
        );
        assert_eq!(t.factor("A", "a2"), 2.0 / 3.0);
        assert_eq!(t.factor("nope", "x"), 0.0);
    }

    #[test]
    fn a_user_association_s_own_share_splits_its_account() {
        let mut a = assocs(TREE);
        a.accounts.get_mut("A").unwrap().user_assocs.insert(
            "a1".into(),
            model::assoc::UserAssoc {
                shares: 3,
                ..Default::default()
            },
        );
        let t = ShareTree::build(
            &a,
            Algorithm::FairTree,
            &BTreeMap::new(),
            &BTreeSet::new(),
            &BTreeMap::new(),
        );
        let share = |user: &str| {
            t.rows
                .iter()
                .find(|r| r.user.as_deref() == Some(user))
                .map(|r| (r.raw_shares, r.norm_shares))
                .unwrap()
        };
        assert_eq!(share("a1"), (Some(3), 0.75));
        assert_eq!(share("a2"), (Some(1), 0.25));
    }

    #[test]
    fn classic_worked_example() {
        let a = assocs(TREE);
        let usage = used(&[("A", "a1", 30.0), ("B", "b1", 10.0)]);
        let t = ShareTree::build(
            &a,
            Algorithm::Classic,
            &usage,
            &BTreeSet::new(),
            &BTreeMap::new(),
        );
        assert!((t.factor("A", "a1") - 0.125).abs() < 1e-12);
        assert!((t.factor("A", "a2") - 2f64.powf(-1.5)).abs() < 1e-12);
        assert!((t.factor("B", "b1") - 2f64.powf(-0.5)).abs() < 1e-12);
        let a2 = t
            .rows
            .iter()
            .find(|r| r.user.as_deref() == Some("a2"))
            .unwrap();
        assert_eq!((a2.norm_shares, a2.effective_usage), (0.25, 0.375));
    }

    #[test]
    fn fair_tree_ties_share_ranks_and_merge_accounts() {
        // Nobody has used anything: every LF is ∞, all users tie at 1.0.
        let a = assocs(TREE);
        let t = ShareTree::build(
            &a,
            Algorithm::FairTree,
            &BTreeMap::new(),
            &BTreeSet::new(),
            &BTreeMap::new(),
        );
        for u in [("A", "a1"), ("A", "a2"), ("B", "b1")] {
            assert_eq!(t.factor(u.0, u.1), 1.0, "{u:?}");
        }
        // A and B tie (same shares, same usage share): their users are ranked
        // together, by their own LF.
        let usage = used(&[("A", "a1", 10.0), ("B", "b1", 10.0), ("A", "a2", 0.0)]);
        let t = ShareTree::build(
            &a,
            Algorithm::FairTree,
            &usage,
            &BTreeSet::new(),
            &BTreeMap::new(),
        );
        // Merged level: a2 (∞), b1 (1.0), a1 (0.5).
        assert_eq!(t.factor("A", "a2"), 1.0);
        assert_eq!(t.factor("B", "b1"), 2.0 / 3.0);
        assert_eq!(t.factor("A", "a1"), 1.0 / 3.0);
    }

    /// A 2-CPU, 1-GPU job runs from 0 to 100 on a node of 4 CPUs and 2 GPUs.
    fn running_job(priority: &str) -> (ClusterState, SchedConfig) {
        let config = Config::parse(
            &format!(
                "[[nodes]]\nnames = \"n1\"\ncpus = 4\nmemory = \"4G\"\ngpus = 2\n\
                 gpu_type = \"h100\"\n[[partitions]]\nname = \"p\"\nnodes = \"n1\"\n\
                 [[qos]]\nname = \"cheap\"\nusage_factor = 0.5\n[priority]\n{priority}"
            ),
            "t",
        )
        .unwrap();
        let mut state = ClusterState::new(config.node_list(), config.partition_list());
        let spec = model::JobSpec {
            user: "u".into(),
            partition: "p".into(),
            ..model::JobSpec::default()
        };
        state.apply(&Event::JobSubmitted {
            job: Box::new(Job::new(1, spec, 0, Some(10))),
        });
        state.apply(&Event::JobStarted {
            job_id: 1,
            alloc: model::Allocation {
                nodes: vec![model::NodeAllocation {
                    node: "n1".into(),
                    cpus: 2,
                    mem_mb: 0,
                    gpus: vec![1],
                    cpu_ids: Vec::new(),
                }],
            },
            time: 0,
            stdout_path: String::new(),
            stderr_path: String::new(),
        });
        (state, SchedConfig::from_config(&config))
    }

    #[test]
    fn charges_decay_and_running_jobs_count_so_far() {
        let key = ("default".to_string(), "u".to_string());
        // No decay, CPUs billed: 2 CPUs × 100 s.
        let (mut s, c) = running_job("decay_half_life = \"0\"");
        assert_eq!(current_usage(&s, 100, &c)[&key].billing, 200.0);
        let Some(event @ Event::UsageCharged { .. }) = charge(&s, s.job(1).unwrap(), 100, &c)
        else {
            panic!("no charge");
        };
        s.apply(&event);
        let u = &s.usage[&key];
        assert_eq!((u.billing, u.at, u.wall), (200.0, 100, 100.0));
        assert_eq!(u.tres["cpu"], 200.0);
        assert_eq!(u.tres["gres/gpu:h100"], 100.0);
        // The job's QOS is charged the same.
        assert_eq!(&s.qos_usage["normal"], u);
        // The job still runs here (no end applied): its 100 s so far come on top.
        assert_eq!(current_qos_usage(&s, 100, &c)["normal"].wall, 200.0);
        // Decay: with a 100 s half-life the run itself is already decayed at its end,
        // and halves again every 100 s.
        let (mut s, c) = running_job("decay_half_life = \"1:40\"");
        let so_far = current_usage(&s, 100, &c)[&key].billing;
        let exact = 2.0 * 100.0 / std::f64::consts::LN_2 * 0.5;
        assert!((so_far - exact).abs() < 1e-9, "{so_far}");
        let event = charge(&s, s.job(1).unwrap(), 100, &c).unwrap();
        s.apply(&event);
        s.apply(&Event::JobEnded {
            job_id: 1,
            state: model::JobState::Completed,
            exit_code: 0,
            exit_signal: 0,
            time: 100,
            reason: model::Reason::None,
            cancelled_by: None,
        });
        let later = current_usage(&s, 300, &c)[&key].billing;
        assert!((later - exact / 4.0).abs() < 1e-9, "{later}");
        // Billing weights and the QOS usage factor.
        let (mut s, c) =
            running_job("decay_half_life = \"0\"\nbilling_weights = \"cpu=1,gres/gpu=10\"");
        assert_eq!(current_usage(&s, 10, &c)[&key].billing, 120.0);
        let mut job = s.job(1).unwrap().clone();
        job.spec.qos = "cheap".into();
        s.insert_job(job);
        assert_eq!(current_usage(&s, 10, &c)[&key].billing, 60.0);
        // Nothing to charge for a job that never ran.
        let pending = Job::new(9, model::JobSpec::default(), 0, None);
        assert!(charge(&s, &pending, 10, &c).is_none());
    }

    #[test]
    fn suspended_time_is_not_charged() {
        let key = ("default".to_string(), "u".to_string());
        let (mut s, c) = running_job("decay_half_life = \"0\"");
        // Suspended from 40 to 70, then again since 90: 2 CPUs × (100 - 30 - 10) s.
        let mut job = s.job(1).unwrap().clone();
        job.suspended_secs = 30;
        job.suspend_time = 90;
        job.state = JobState::Suspended;
        s.insert_job(job);
        assert_eq!(current_usage(&s, 100, &c)[&key].billing, 120.0);
        let Some(Event::UsageCharged { usage, .. }) = charge(&s, s.job(1).unwrap(), 100, &c) else {
            panic!("no charge");
        };
        assert_eq!(usage.billing, 120.0);
    }

    #[test]
    fn deeper_trees_and_unknown_accounts() {
        let a = assocs(
            r#"
[[accounts]]
name = "ml"
shares = 3
[[accounts]]
name = "vision"
parent = "ml"
users = ["v1"]
[[accounts]]
name = "nlp"
parent = "ml"
users = ["n1"]
[[accounts]]
name = "physics"
users = ["p1"]
"#,
        );
        // ml has 3/5 of root's shares and 1/2 of the usage (LF 1.2), physics 1/5 and
        // 1/2 (LF 0.4): both users of ml beat p1 whatever they used among themselves.
        // The unused account `elsewhere` (LF ∞) comes first.
        let usage = used(&[
            ("vision", "v1", 40.0),
            ("nlp", "n1", 10.0),
            ("physics", "p1", 50.0),
        ]);
        let t = ShareTree::build(
            &a,
            Algorithm::FairTree,
            &usage,
            &BTreeSet::from([("elsewhere".to_string(), "z".to_string())]),
            &BTreeMap::new(),
        );
        // An account nobody configured hangs under root with 1 share.
        assert_eq!(t.factor("elsewhere", "z"), 1.0);
        assert_eq!(t.factor("nlp", "n1"), 0.75);
        assert_eq!(t.factor("vision", "v1"), 0.5);
        assert_eq!(t.factor("physics", "p1"), 0.25);
        let order: Vec<String> = t
            .rows
            .iter()
            .map(|r| r.user.clone().unwrap_or_else(|| r.account.clone()))
            .collect();
        assert_eq!(
            order,
            [
                "root",
                "elsewhere",
                "z",
                "ml",
                "nlp",
                "n1",
                "vision",
                "v1",
                "physics",
                "p1"
            ]
        );
    }
}
