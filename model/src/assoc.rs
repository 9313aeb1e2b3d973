//! Accounts, users and QOS: the associations that fair share and limits work on.
//! The controller keeps them in its store and `sacctmgr` changes them
//! (`assoc_change`); the config's `[[accounts]]` and `[[qos]]` seed an empty store.
//!
//! An association is an (account, user) pair. Accounts form a tree under `root`; users
//! hang under the accounts that list them. A job runs under one association: its
//! `--account` (or the user's default account, the first that lists them) and its user.
//!
//! With no `[[accounts]]` at all, accounting is not enforced: every user belongs to an
//! implicit account `default` under `root`, with equal shares, any account name a job
//! gives is accepted (and becomes a sibling of `default`), and there are no account
//! limits. The QOS `normal` always exists.
//!
//! Example:
//!
//! ```toml
//! [[accounts]]
//! name = "ml"
//! shares = 3
//! users = ["alice", "bob"]
//! [[accounts]]
//! name = "physics"
//! users = ["carol", "alice"]
//! ```
//!
//! gives `root → {ml (3 shares) → {alice, bob}, physics (1) → {alice, carol}}`;
//! alice's default account is `ml`, and `bob -A physics` is refused.

use crate::config::{AccountConfig, Config, QosConfig};
use crate::job::JobSpec;
use crate::tres::{self, TresCounts};
use crate::units;
use std::collections::{BTreeMap, BTreeSet};

/// The top of the account tree.
pub const ROOT: &str = "root";
/// The implicit account of every user when no accounts are configured.
pub const DEFAULT_ACCOUNT: &str = "default";
/// The QOS that always exists and jobs get by default.
pub const DEFAULT_QOS: &str = "normal";

/// Slurm's AdminLevel: what a user may do beyond their own jobs. Operators and
/// administrators act on every job, node and reservation; root is an administrator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum AdminLevel {
    #[default]
    None,
    Operator,
    Administrator,
}

/// Limits of an account or a QOS. `None` or an absent TRES is no limit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Limits {
    /// GrpTRES: running jobs of the account (and below) or of the QOS, together.
    pub grp_tres: TresCounts,
    /// GrpTRESMins: TRES-minutes of past (decayed), running and new jobs (accounts).
    pub grp_tres_mins: TresCounts,
    /// GrpJobs: running jobs of the account (and below) or of the QOS.
    pub grp_jobs: Option<u32>,
    /// Running jobs of one user (in the account, or in the QOS), together.
    pub max_tres_per_user: TresCounts,
    /// What a single job may hold.
    pub max_tres_per_job: TresCounts,
    /// Running jobs per user (MaxJobs / MaxJobsPerUser).
    pub max_jobs: Option<u32>,
    /// Pending and running jobs per user (MaxSubmitJobs / MaxSubmitJobsPerUser).
    pub max_submit: Option<u32>,
    /// The longest time limit, minutes.
    pub max_wall_min: Option<u32>,
    /// MaxTRESMinsPerJob: TRES-minutes one job may ask for (its TRES times its time
    /// limit).
    pub max_tres_mins_per_job: TresCounts,
    /// GrpWall: wall-clock minutes the jobs of the association (and below) or of the
    /// QOS may run together, counted as past usage (decayed) plus what running jobs
    /// ran so far; minutes.
    pub grp_wall_min: Option<u32>,
    /// GrpSubmitJobs: pending and running jobs of the account (and below) or of the
    /// QOS, checked at submit.
    pub grp_submit: Option<u32>,
    /// GrpTRESRunMins: TRES-minutes left to the running jobs (their TRES times the time
    /// left of their limits), together.
    pub grp_tres_run_mins: TresCounts,
    /// GuaranteedTRES (accounts; Drover's, not Slurm's): what the account and everything
    /// below it are guaranteed. Others may borrow it while it is idle; the account's
    /// jobs take it back (see `sched::preempt`).
    pub guaranteed_tres: TresCounts,
    /// BorrowingLimit (accounts; Drover's, Kueue's `borrowingLimit`): the most the
    /// account (with everything below it) may hold beyond its guarantee, on others'
    /// idle quota or unguaranteed capacity.
    pub borrowing_limit: TresCounts,
    /// LendingLimit (accounts; Drover's, Kueue's `lendingLimit`): the most of its idle
    /// guarantee others may borrow; the rest stays free for the account's own jobs.
    pub lending_limit: TresCounts,
}

impl Limits {
    /// True when nothing is limited.
    pub fn is_empty(&self) -> bool {
        *self == Limits::default()
    }
}

/// What a user's association in an account sets besides limits (`sacctmgr add|modify
/// user ... Fairshare= Priority= QOS= DefaultQOS=`): its share among the account's
/// users, its association priority (0: the account's, inherited), and the QOS its jobs
/// may use and get by default (empty: the account's, inherited).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserAssoc {
    pub shares: u32,
    pub priority: u32,
    /// Its own QOS list (`Some(empty)`: none); `None`: the account's.
    pub qos: Option<BTreeSet<String>>,
    pub default_qos: String,
}

impl Default for UserAssoc {
    fn default() -> Self {
        UserAssoc {
            shares: DEFAULT_SHARES,
            priority: 0,
            qos: None,
            default_qos: String::new(),
        }
    }
}

impl UserAssoc {
    /// True when it sets nothing of its own.
    pub fn is_default(&self) -> bool {
        *self == UserAssoc::default()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Account {
    pub name: String,
    /// `None` for root.
    pub parent: Option<String>,
    pub shares: u32,
    pub priority: u32,
    pub users: BTreeSet<String>,
    /// Limits set on a user's association in this account (`sacctmgr modify user
    /// where account=`), by user; they come before the account's own `Max*` limits.
    pub user_limits: BTreeMap<String, Limits>,
    /// A user's association's own share and QOS, by user (only those that set some).
    pub user_assocs: BTreeMap<String, UserAssoc>,
    /// Slurm's Description and Organization (`sacctmgr show account`).
    pub description: String,
    pub organization: String,
    /// Child accounts, by name.
    pub children: BTreeSet<String>,
    pub limits: Limits,
    /// The QOS its jobs may use, its own (`Some(empty)`: none, as `sacctmgr modify
    /// ... set qos=` leaves it); `None`: its parent's (at root: any).
    pub qos: Option<BTreeSet<String>>,
    /// Default QOS as configured (empty: inherited).
    pub default_qos: String,
    /// Users who coordinate this account (and the accounts below it).
    pub coordinators: BTreeSet<String>,
}

/// A QOS list (`None`: inherited; `Some(empty)`: none) as records and the wire keep
/// it: its names, and whether it is set to none.
pub fn qos_list_parts(list: &Option<BTreeSet<String>>) -> (Vec<String>, bool) {
    match list {
        Some(names) => (names.iter().cloned().collect(), names.is_empty()),
        None => (Vec::new(), false),
    }
}

/// The QOS list [`qos_list_parts`] gave.
pub fn qos_list_from_parts(names: Vec<String>, none: bool) -> Option<BTreeSet<String>> {
    (none || !names.is_empty()).then(|| names.into_iter().collect())
}

/// An association's share when none is set (Slurm's default).
pub const DEFAULT_SHARES: u32 = 1;

impl Account {
    /// A new account with Slurm's defaults: 1 share, described by its name, of the
    /// organization of its parent's name (its own under root).
    pub fn new(name: &str, parent: Option<&str>) -> Account {
        Account {
            name: name.to_string(),
            parent: parent.map(str::to_string),
            shares: DEFAULT_SHARES,
            priority: 0,
            users: BTreeSet::new(),
            user_limits: BTreeMap::new(),
            user_assocs: BTreeMap::new(),
            description: name.to_string(),
            organization: match parent {
                Some(p) if p != ROOT => p.to_string(),
                _ => name.to_string(),
            },
            children: BTreeSet::new(),
            limits: Limits::default(),
            qos: None,
            default_qos: String::new(),
            coordinators: BTreeSet::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Qos {
    pub name: String,
    pub priority: u32,
    pub limits: Limits,
    pub preempt: Vec<String>,
    /// Lower case; empty: the cluster's default.
    pub preempt_mode: String,
    /// GraceTime in seconds: between SIGTERM and the kill of a preempted job.
    pub grace_time: u32,
    pub usage_factor: f64,
    /// What becomes of its jobs that hold GPUs idle (Drover's; `model::gpu_use`).
    pub gpu_idle: crate::gpu_use::GpuIdlePolicy,
}

impl Qos {
    fn normal() -> Qos {
        Qos::new(DEFAULT_QOS)
    }

    /// A QOS with Slurm's defaults: priority 0, no limits, usage factor 1.
    pub fn new(name: &str) -> Qos {
        Qos {
            name: name.into(),
            priority: 0,
            limits: Limits::default(),
            preempt: Vec::new(),
            preempt_mode: String::new(),
            grace_time: 0,
            usage_factor: 1.0,
            gpu_idle: Default::default(),
        }
    }
}

/// A user known to accounting: their default account and AdminLevel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub default_account: String,
    /// As `sacctmgr modify user set adminlevel=` gave it; `[auth]` in the config
    /// raises it (`AuthConfig::admin_level`), never lowers it.
    pub admin_level: AdminLevel,
}

/// One cluster's associations: every account, `root` included, by name. The root
/// account's limits and shares are the cluster's (`sacctmgr show cluster`).
pub type AccountTree = BTreeMap<String, Account>;

/// The account tree and the QOS, ready for lookups.
#[derive(Debug, Clone, PartialEq)]
pub struct Associations {
    /// This cluster's associations: every account, `root` included.
    pub accounts: AccountTree,
    pub qos: BTreeMap<String, Qos>,
    /// Every user of some account, with their default account (in the config: the
    /// first account listing them).
    pub users: BTreeMap<String, User>,
    /// False while no account is defined besides root: any account name is accepted.
    pub enforced: bool,
    /// Other clusters' associations, by cluster name: records `sacctmgr` keeps for a
    /// site's other clusters, as one slurmdbd serves several. Accounts' names and
    /// users are shared with this cluster's; nothing here is scheduled.
    pub other_clusters: BTreeMap<String, AccountTree>,
}

/// Recomputes each account's `children` from the parents of one tree.
fn relink(tree: &mut AccountTree) {
    for a in tree.values_mut() {
        a.children.clear();
    }
    let links: Vec<(String, String)> = tree
        .values()
        .filter_map(|a| a.parent.clone().map(|p| (p, a.name.clone())))
        .collect();
    for (parent, child) in links {
        if let Some(p) = tree.get_mut(&parent) {
            p.children.insert(child);
        }
    }
}

impl Default for Associations {
    fn default() -> Self {
        Associations::build(&[], &[])
    }
}

fn counts(text: &str) -> TresCounts {
    tres::parse_counts(text).unwrap_or_default()
}

fn wall(text: &str) -> Option<u32> {
    if text.is_empty() {
        None
    } else {
        units::parse_time_limit(text).unwrap_or(None)
    }
}

impl Associations {
    /// From a checked config.
    pub fn from_config(config: &Config) -> Associations {
        Associations::build(&config.accounts, &config.qos)
    }

    /// From `[[accounts]]` and `[[qos]]` entries (already checked: unparsable values
    /// are taken as no limit).
    pub fn build(accounts: &[AccountConfig], qos: &[QosConfig]) -> Associations {
        let mut out = Associations {
            accounts: BTreeMap::new(),
            qos: BTreeMap::new(),
            users: BTreeMap::new(),
            enforced: !accounts.is_empty(),
            other_clusters: BTreeMap::new(),
        };
        out.qos.insert(DEFAULT_QOS.into(), Qos::normal());
        for q in qos {
            out.qos.insert(
                q.name.clone(),
                Qos {
                    name: q.name.clone(),
                    priority: q.priority,
                    limits: Limits {
                        grp_tres: counts(&q.grp_tres),
                        grp_tres_mins: counts(&q.grp_tres_mins),
                        grp_jobs: q.grp_jobs,
                        max_tres_per_user: counts(&q.max_tres_per_user),
                        max_tres_per_job: counts(&q.max_tres_per_job),
                        max_jobs: q.max_jobs_per_user,
                        max_submit: q.max_submit_jobs_per_user,
                        max_wall_min: wall(&q.max_wall),
                        max_tres_mins_per_job: counts(&q.max_tres_mins),
                        grp_wall_min: wall(&q.grp_wall),
                        grp_submit: None,
                        grp_tres_run_mins: TresCounts::new(),
                        guaranteed_tres: TresCounts::new(),
                        borrowing_limit: TresCounts::new(),
                        lending_limit: TresCounts::new(),
                    },
                    preempt: q.preempt.clone(),
                    preempt_mode: q.preempt_mode.to_ascii_lowercase(),
                    grace_time: u32::try_from(q.grace_time).unwrap_or(0),
                    usage_factor: q.usage_factor,
                    // Checked with the config (`check`).
                    gpu_idle: crate::gpu_use::GpuIdlePolicy::parse(
                        &q.gpu_idle_limit,
                        &q.gpu_idle_action,
                        &q.gpu_idle_grace,
                    )
                    .unwrap_or_default(),
                },
            );
        }
        // Slurm's root user belongs to the root account.
        out.accounts = Associations::new_cluster_tree();
        if accounts.is_empty() {
            out.accounts.insert(
                DEFAULT_ACCOUNT.into(),
                Account::new(DEFAULT_ACCOUNT, Some(ROOT)),
            );
        }
        for a in accounts {
            let parent = if a.name == ROOT {
                None
            } else if a.parent.is_empty() {
                Some(ROOT)
            } else {
                Some(a.parent.as_str())
            };
            let entry = out
                .accounts
                .entry(a.name.clone())
                .or_insert_with(|| Account::new(&a.name, parent));
            entry.parent = parent.map(str::to_string);
            entry.shares = a.shares;
            entry.priority = a.priority;
            entry.users.extend(a.users.iter().cloned());
            entry.qos = (!a.qos.is_empty()).then(|| a.qos.iter().cloned().collect());
            entry.default_qos = a.default_qos.clone();
            entry.coordinators = a.coordinators.iter().cloned().collect();
            entry.limits = Limits {
                grp_tres: counts(&a.grp_tres),
                grp_tres_mins: counts(&a.grp_tres_mins),
                grp_jobs: a.grp_jobs,
                max_tres_per_user: counts(&a.max_tres_per_user),
                max_tres_per_job: counts(&a.max_tres_per_job),
                max_jobs: a.max_jobs,
                max_submit: a.max_submit,
                max_wall_min: wall(&a.max_wall),
                max_tres_mins_per_job: counts(&a.max_tres_mins),
                grp_wall_min: wall(&a.grp_wall),
                grp_submit: None,
                grp_tres_run_mins: TresCounts::new(),
                guaranteed_tres: counts(&a.guaranteed_tres),
                borrowing_limit: counts(&a.borrowing_limit),
                lending_limit: counts(&a.lending_limit),
            };
            for user in &a.users {
                out.users.entry(user.clone()).or_insert_with(|| User {
                    default_account: a.name.clone(),
                    admin_level: AdminLevel::None,
                });
            }
        }
        // Root is an administrator, in the root account unless an account lists it.
        out.users
            .entry("root".into())
            .or_insert_with(|| User {
                default_account: ROOT.into(),
                admin_level: AdminLevel::None,
            })
            .admin_level = AdminLevel::Administrator;
        out.relink();
        out
    }

    /// Recomputes each account's `children` from the parents (after a change), in
    /// every cluster's tree.
    pub fn relink(&mut self) {
        relink(&mut self.accounts);
        self.other_clusters.values_mut().for_each(relink);
    }

    /// A new cluster's associations, as Slurm's `sacctmgr add cluster` makes them: the
    /// root account, with the root user in it.
    pub fn new_cluster_tree() -> AccountTree {
        let mut root = Account::new(ROOT, None);
        root.users.insert("root".into());
        root.description = "default root account".into();
        AccountTree::from([(ROOT.to_string(), root)])
    }

    /// The associations as cluster `name` has them (this cluster's, `local`, or another
    /// kept for the site): its account tree with the shared users and QOS; `None` for a
    /// cluster accounting does not know.
    pub fn of_cluster(&self, name: &str, local: &str) -> Option<Associations> {
        if name == local {
            let mut out = self.clone();
            out.other_clusters.clear();
            return Some(out);
        }
        let tree = self.other_clusters.get(name)?;
        Some(Associations {
            accounts: tree.clone(),
            qos: self.qos.clone(),
            users: self.users.clone(),
            enforced: true,
            other_clusters: BTreeMap::new(),
        })
    }

    /// The names of every cluster accounting knows, this one (`local`) first.
    pub fn cluster_names<'a>(&'a self, local: &'a str) -> Vec<&'a str> {
        std::iter::once(local)
            .chain(self.other_clusters.keys().map(String::as_str))
            .collect()
    }

    /// What `user` may see of the associations under Slurm's PrivateData `accounts`
    /// and `users`: with `accounts`, the accounts they belong to or coordinate (and,
    /// for the tree's sake, the names of those above them); with `users`, themselves
    /// and, in the accounts they coordinate, those accounts' users. Operators see all;
    /// the caller decides. Other clusters' associations are not shown under either.
    ///
    /// Example: alice in `vision` under `ml`, bob in `physics`; with both words alice
    /// sees root, ml (its name and limits, no users), vision with alice only, no
    /// physics and no bob.
    pub fn visible_to(&self, user: &str, accounts: bool, users: bool) -> Associations {
        let mut out = self.clone();
        if accounts || users {
            out.other_clusters.clear();
        }
        let own = |a: &Account| a.users.contains(user) || self.coordinates(user, &a.name);
        if accounts {
            let mut keep: BTreeSet<String> = BTreeSet::new();
            for a in self.accounts.values().filter(|a| own(a)) {
                keep.extend(self.lineage(&a.name).iter().map(|l| l.name.clone()));
            }
            out.accounts.retain(|name, _| keep.contains(name));
            for a in out.accounts.values_mut() {
                if !own(&self.accounts[&a.name]) {
                    a.users.clear();
                    a.user_limits.clear();
                    a.user_assocs.clear();
                    a.coordinators.clear();
                }
            }
            out.relink();
        }
        if users {
            for a in out.accounts.values_mut() {
                if !self.coordinates(user, &a.name) {
                    a.users.retain(|u| u == user);
                    a.user_limits.retain(|u, _| u == user);
                    a.user_assocs.retain(|u, _| u == user);
                }
            }
            let seen: BTreeSet<String> = out
                .accounts
                .values()
                .flat_map(|a| a.users.iter().cloned())
                .collect();
            out.users.retain(|u, _| u == user || seen.contains(u));
        }
        out
    }

    /// The AdminLevel accounting gives a user.
    pub fn admin_level(&self, user: &str) -> AdminLevel {
        self.users
            .get(user)
            .map(|u| u.admin_level)
            .unwrap_or_default()
    }

    /// The account a user's jobs go to without `--account`.
    pub fn default_account(&self, user: &str) -> Option<&str> {
        if !self.enforced {
            return Some(DEFAULT_ACCOUNT);
        }
        match self.users.get(user) {
            Some(u) => Some(&u.default_account),
            None if user == "root" => Some(ROOT),
            None => None,
        }
    }

    /// May `user` run jobs under `account`?
    pub fn is_member(&self, account: &str, user: &str) -> bool {
        !self.enforced
            || self
                .accounts
                .get(account)
                .is_some_and(|a| a.users.contains(user))
    }

    /// The account of a job: its `--account`, else its user's default account.
    pub fn account_of<'a>(&'a self, spec: &'a JobSpec) -> &'a str {
        if !spec.account.is_empty() {
            &spec.account
        } else {
            self.default_account(&spec.user).unwrap_or(DEFAULT_ACCOUNT)
        }
    }

    /// The QOS of a job: its `--qos`, else its association's default, else `normal`.
    pub fn qos_of<'a>(&'a self, spec: &'a JobSpec) -> &'a str {
        if !spec.qos.is_empty() {
            return &spec.qos;
        }
        self.default_qos(self.account_of(spec), &spec.user)
            .unwrap_or(DEFAULT_QOS)
    }

    /// The user's association's own settings in an account, if it sets any.
    fn user_assoc(&self, account: &str, user: &str) -> Option<&UserAssoc> {
        self.accounts
            .get(account)
            .and_then(|a| a.user_assocs.get(user))
    }

    /// The default QOS of a user's association in an account (`user` empty: of the
    /// account's own): its own, else the account's, inherited; `None`: none set.
    pub fn default_qos(&self, account: &str, user: &str) -> Option<&str> {
        self.user_assoc(account, user)
            .map(|u| u.default_qos.as_str())
            .into_iter()
            .chain(
                self.lineage(account)
                    .into_iter()
                    .map(|a| a.default_qos.as_str()),
            )
            .find(|q| !q.is_empty())
    }

    /// The QOS the jobs of a user's association in an account may use (`user` empty:
    /// of the account's own): its own, else the account's, inherited; `None` for any.
    pub fn allowed_qos(&self, account: &str, user: &str) -> Option<&BTreeSet<String>> {
        self.user_assoc(account, user)
            .and_then(|u| u.qos.as_ref())
            .into_iter()
            .chain(
                self.lineage(account)
                    .into_iter()
                    .filter_map(|a| a.qos.as_ref()),
            )
            .next()
    }

    /// The share of a user's association in an account (1 unless it sets one).
    pub fn user_shares(&self, account: &str, user: &str) -> u32 {
        self.user_assoc(account, user)
            .map_or(DEFAULT_SHARES, |u| u.shares)
    }

    /// Whether `user` coordinates `account`: they are a coordinator of it or of an
    /// account above it, as Slurm's coordinators are of sub-accounts.
    ///
    /// Example: bob coordinates `ml`; he coordinates `ml/vision` too, not `physics`.
    pub fn coordinates(&self, user: &str, account: &str) -> bool {
        self.accounts.contains_key(account)
            && self
                .lineage(account)
                .iter()
                .any(|a| a.coordinators.contains(user))
    }

    /// The account and its ancestors, nearest first, ending at root. An unknown account
    /// (accounting not enforced) is a child of root.
    pub fn lineage(&self, account: &str) -> Vec<&Account> {
        let mut out = Vec::new();
        let mut at = self.accounts.get(account);
        if at.is_none() {
            at = self.accounts.get(ROOT);
        }
        while let Some(a) = at {
            out.push(a);
            if out.len() > self.accounts.len() {
                break;
            }
            at = a.parent.as_ref().and_then(|p| self.accounts.get(p));
        }
        out
    }

    /// The per-user and per-job limits in force for a user's association in an
    /// account: each one set on the user's association, else on the account or,
    /// failing that, on its nearest ancestor (as Slurm's associations inherit them);
    /// TRES limits TRES by TRES.
    ///
    /// Example: `ml` sets MaxJobs=10 and MaxTRES=cpu=2, alice's association in
    /// `ml/vision` MaxJobs=2 and MaxTRES=node=5: alice has 2 jobs and cpu=2,node=5 in
    /// `vision`, bob 10 jobs and cpu=2.
    pub fn user_limits(&self, account: &str, user: &str) -> Limits {
        let lineage = self.lineage(account);
        let own = lineage
            .first()
            .filter(|a| a.name == account)
            .and_then(|a| a.user_limits.get(user));
        let chain: Vec<&Limits> = own
            .into_iter()
            .chain(lineage.iter().map(|a| &a.limits))
            .collect();
        // TRES by TRES, as Slurm combines a parent's TRES limits into a child's.
        let pick_map = |f: fn(&Limits) -> &TresCounts| {
            let mut out = TresCounts::new();
            for l in &chain {
                for (name, count) in f(l) {
                    out.entry(name.clone()).or_insert(*count);
                }
            }
            out
        };
        let pick = |f: fn(&Limits) -> Option<u32>| chain.iter().find_map(|l| f(l));
        Limits {
            grp_tres: TresCounts::new(),
            grp_tres_mins: TresCounts::new(),
            grp_submit: None,
            grp_tres_run_mins: TresCounts::new(),
            guaranteed_tres: TresCounts::new(),
            borrowing_limit: TresCounts::new(),
            lending_limit: TresCounts::new(),
            grp_jobs: None,
            max_tres_per_user: pick_map(|l| &l.max_tres_per_user),
            max_tres_per_job: pick_map(|l| &l.max_tres_per_job),
            max_tres_mins_per_job: pick_map(|l| &l.max_tres_mins_per_job),
            grp_wall_min: None,
            max_jobs: pick(|l| l.max_jobs),
            max_submit: pick(|l| l.max_submit),
            max_wall_min: pick(|l| l.max_wall_min),
        }
    }

    /// The largest QOS priority, for normalizing.
    pub fn max_qos_priority(&self) -> u32 {
        self.qos.values().map(|q| q.priority).max().unwrap_or(0)
    }

    /// The priority of a user's association in an account (`user` empty: of the
    /// account's own): its own, else the account's, else its nearest ancestor's.
    pub fn assoc_priority(&self, account: &str, user: &str) -> u32 {
        self.user_assoc(account, user)
            .map(|u| u.priority)
            .into_iter()
            .chain(self.lineage(account).iter().map(|a| a.priority))
            .find(|p| *p > 0)
            .unwrap_or(0)
    }

    /// The largest association priority, for normalizing.
    pub fn max_assoc_priority(&self) -> u32 {
        self.accounts
            .values()
            .flat_map(|a| {
                std::iter::once(a.priority).chain(a.user_assocs.values().map(|u| u.priority))
            })
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        Config::parse(text, "t.toml").unwrap()
    }

    #[test]
    fn coordinators_coordinate_their_accounts_and_those_below() {
        let c = config(
            "[[accounts]]\nname = \"ml\"\nusers = [\"alice\"]\ncoordinators = [\"bob\"]\n\
             [[accounts]]\nname = \"vision\"\nparent = \"ml\"\nusers = [\"carol\"]\n\
             [[accounts]]\nname = \"physics\"\nusers = [\"dave\"]\n\
             [auth]\noperators = [\"ops\"]\nadministrators = [\"boss\"]\n",
        );
        let a = Associations::from_config(&c);
        assert!(a.coordinates("bob", "ml"));
        assert!(a.coordinates("bob", "vision"));
        assert!(!a.coordinates("bob", "physics"));
        assert!(!a.coordinates("alice", "ml"));
        assert!(!a.coordinates("bob", "unknown"));
        let level = |u: &str| c.auth.admin_level(u);
        assert_eq!(level("ops"), AdminLevel::Operator);
        assert_eq!(level("boss"), AdminLevel::Administrator);
        assert_eq!(level("root"), AdminLevel::Administrator);
        assert_eq!(level("alice"), AdminLevel::None);
        assert!(AdminLevel::Administrator > AdminLevel::Operator);
    }

    #[test]
    fn private_accounts_and_users_show_a_user_their_own() {
        let a = Associations::from_config(&config(
            "[[accounts]]\nname = \"ml\"\nusers = [\"erin\"]\ncoordinators = [\"bob\"]\n\
             [[accounts]]\nname = \"vision\"\nparent = \"ml\"\nusers = [\"alice\", \"carol\"]\n\
             [[accounts]]\nname = \"physics\"\nusers = [\"dave\"]\n",
        ));
        let names = |v: &Associations| v.accounts.keys().cloned().collect::<Vec<_>>();
        let users = |v: &Associations, acct: &str| {
            v.accounts[acct].users.iter().cloned().collect::<Vec<_>>()
        };
        let alice = a.visible_to("alice", true, true);
        assert_eq!(names(&alice), ["ml", "root", "vision"]);
        assert!(users(&alice, "ml").is_empty());
        assert_eq!(users(&alice, "vision"), ["alice"]);
        assert_eq!(alice.users.keys().collect::<Vec<_>>(), ["alice"]);
        assert!(alice.accounts["ml"].children.contains("vision"));
        // A coordinator sees their accounts whole, with their users.
        let bob = a.visible_to("bob", true, true);
        assert_eq!(names(&bob), ["ml", "root", "vision"]);
        assert_eq!(users(&bob, "vision"), ["alice", "carol"]);
        assert!(bob.users.contains_key("carol") && !bob.users.contains_key("dave"));
        // `users` alone keeps every account, `accounts` alone every user of them.
        assert_eq!(
            a.visible_to("alice", false, true).accounts.len(),
            a.accounts.len()
        );
        assert_eq!(
            users(&a.visible_to("alice", true, false), "vision"),
            ["alice", "carol"]
        );
    }

    #[test]
    fn defaults_without_accounts() {
        let a = Associations::from_config(&config(""));
        assert!(!a.enforced);
        assert_eq!(a.default_account("anyone"), Some(DEFAULT_ACCOUNT));
        assert!(a.is_member("whatever", "anyone"));
        assert!(a.qos.contains_key(DEFAULT_QOS));
        let spec = JobSpec {
            user: "x".into(),
            ..JobSpec::default()
        };
        assert_eq!(a.account_of(&spec), DEFAULT_ACCOUNT);
        assert_eq!(a.qos_of(&spec), DEFAULT_QOS);
        let names: Vec<&str> = a
            .lineage("unknown")
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        assert_eq!(names, vec!["root"]);
    }

    #[test]
    fn tree_defaults_and_inherited_limits() {
        let a = Associations::from_config(&config(
            r#"
[[qos]]
name = "high"
priority = 100
[[accounts]]
name = "ml"
shares = 3
users = ["alice", "bob"]
max_jobs = 4
max_wall = "1-0"
max_tres_per_job = "cpu=2"
default_qos = "high"
[[accounts]]
name = "vision"
parent = "ml"
users = ["alice"]
max_jobs = 2
max_tres_per_job = "node=5"
[[accounts]]
name = "physics"
users = ["carol", "alice"]
qos = ["normal"]
"#,
        ));
        assert!(a.enforced);
        assert_eq!(a.default_account("alice"), Some("ml"));
        assert_eq!(a.default_account("carol"), Some("physics"));
        assert_eq!(a.default_account("root"), Some(ROOT));
        assert_eq!(a.default_account("dave"), None);
        // Root listed by an account has it as its default, and stays an administrator.
        let b =
            Associations::from_config(&config("[[accounts]]\nname = \"ml\"\nusers = [\"root\"]\n"));
        assert_eq!(b.default_account("root"), Some("ml"));
        assert_eq!(b.admin_level("root"), AdminLevel::Administrator);
        assert!(a.is_member("physics", "alice"));
        assert!(!a.is_member("physics", "bob"));
        let lineage: Vec<&str> = a
            .lineage("vision")
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        assert_eq!(lineage, vec!["vision", "ml", "root"]);
        let l = a.user_limits("vision", "alice");
        assert_eq!((l.max_jobs, l.max_wall_min), (Some(2), Some(1440)));
        assert_eq!(tres::format_counts(&l.max_tres_per_job), "cpu=2,node=5");
        let spec = JobSpec {
            user: "alice".into(),
            account: "vision".into(),
            ..JobSpec::default()
        };
        assert_eq!(a.qos_of(&spec), "high");
        assert_eq!(a.allowed_qos("vision", "alice"), None);
        assert!(a.allowed_qos("physics", "").unwrap().contains("normal"));
        // A user's association's own QOS and default come first.
        let mut b = a.clone();
        b.accounts.get_mut("vision").unwrap().user_assocs.insert(
            "alice".into(),
            UserAssoc {
                shares: 5,
                priority: 9,
                qos: Some(BTreeSet::from(["normal".to_string()])),
                default_qos: "normal".into(),
            },
        );
        assert_eq!(b.assoc_priority("vision", "alice"), 9);
        assert_eq!(b.max_assoc_priority(), 9);
        assert_eq!(b.qos_of(&spec), "normal");
        assert_eq!(b.allowed_qos("vision", "alice").unwrap().len(), 1);
        assert_eq!(b.allowed_qos("vision", "bob"), None);
        assert_eq!(b.default_qos("vision", "bob"), Some("high"));
        assert_eq!(
            (
                b.user_shares("vision", "alice"),
                b.user_shares("ml", "alice")
            ),
            (5, 1)
        );
        assert_eq!(
            a.accounts["root"].children,
            BTreeSet::from(["ml".to_string(), "physics".to_string()])
        );
        assert_eq!(a.max_qos_priority(), 100);
    }
}
