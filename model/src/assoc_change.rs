//! `sacctmgr add|modify|delete account|user|qos|coordinator`: the change Slurm's words
//! ask for, parsed once (by the command) into typed fields that go on the wire, and
//! applied to the associations by the controller (pure: [`apply`]).
//!
//! Example: `sacctmgr modify user where name=alice account=ml set MaxJobs=2
//! GrpTRES=gres/gpu=4` is a `Modify` of `User` with the conditions `names = [alice]`,
//! `accounts = [ml]` and the settings `MaxJobs = 2`, `GrpTRES: gres/gpu = 4`; applied,
//! it sets both limits on alice's association in `ml` and reports that association.
//! A count of `-1` clears a limit (`MaxJobs=-1`, `GrpTRES=gres/gpu=-1`), as in Slurm.
//!
//! Names of accounts, QOS and clusters are lower case, as Slurm keeps them.
//!
//! Accounting keeps other clusters' associations besides this one's (as one slurmdbd
//! serves several clusters): a change to accounts, users or coordinators applies to
//! the clusters its `cluster=` names, else to every cluster it can (an `add` to those
//! that have the accounts it needs), each through the same rules as this cluster's.

use crate::assoc::{
    Account, AccountTree, AdminLevel, Associations, DEFAULT_SHARES, Limits, Qos, ROOT, User,
};
use crate::job::PreemptMode;
use crate::reservation_change::ListEdit;
use crate::tres::{self, TresCounts};
use crate::units;
use std::collections::BTreeSet;

/// What `sacctmgr` changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entity {
    Account,
    User,
    Qos,
    Coordinator,
    /// A cluster of the site: its root association (the cluster's limits and shares).
    Cluster,
}

impl Entity {
    /// Slurm's words for the entity (`account`, `accounts`, `acct`, ...).
    pub fn parse(word: &str) -> Option<Entity> {
        Some(match word.to_ascii_lowercase().as_str() {
            "account" | "accounts" | "acct" | "acc" => Entity::Account,
            "user" | "users" => Entity::User,
            "qos" => Entity::Qos,
            "coordinator" | "coordinators" | "coord" => Entity::Coordinator,
            "cluster" | "clusters" => Entity::Cluster,
            _ => return None,
        })
    }
}

/// How it changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Add,
    Modify,
    Delete,
}

impl Action {
    /// Slurm's words: `add`/`create`, `modify`/`update`, `delete`/`remove`.
    pub fn parse(word: &str) -> Option<Action> {
        Some(match word.to_ascii_lowercase().as_str() {
            "add" | "create" => Action::Add,
            "modify" | "update" => Action::Modify,
            "delete" | "remove" => Action::Delete,
            _ => return None,
        })
    }
}

/// A limit `sacctmgr` sets on an association or a QOS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LimitKind {
    GrpTres,
    GrpTresMins,
    GrpTresRunMins,
    GrpJobs,
    GrpSubmitJobs,
    MaxTres,
    MaxTresPerUser,
    MaxJobs,
    MaxSubmitJobs,
    MaxWall,
    /// MaxTRESMinsPerJob: TRES-minutes of one job.
    MaxTresMins,
    /// GrpWall (associations and QOS): wall-clock minutes, past and running.
    GrpWall,
    /// Drover's GuaranteedTRES (accounts).
    GuaranteedTres,
    /// Drover's BorrowingLimit (accounts; Kueue's `borrowingLimit`).
    BorrowingLimit,
    /// Drover's LendingLimit (accounts; Kueue's `lendingLimit`).
    LendingLimit,
}

impl LimitKind {
    pub const ALL: [LimitKind; 15] = [
        LimitKind::GrpTres,
        LimitKind::GrpTresMins,
        LimitKind::GrpTresRunMins,
        LimitKind::GrpJobs,
        LimitKind::GrpSubmitJobs,
        LimitKind::MaxTres,
        LimitKind::MaxTresPerUser,
        LimitKind::MaxJobs,
        LimitKind::MaxSubmitJobs,
        LimitKind::MaxWall,
        LimitKind::MaxTresMins,
        LimitKind::GrpWall,
        LimitKind::GuaranteedTres,
        LimitKind::BorrowingLimit,
        LimitKind::LendingLimit,
    ];

    /// Slurm's name of the limit, as `sacctmgr` prints it.
    pub fn name(self) -> &'static str {
        match self {
            LimitKind::GrpTres => "GrpTRES",
            LimitKind::GrpTresMins => "GrpTRESMins",
            LimitKind::GrpTresRunMins => "GrpTRESRunMins",
            LimitKind::GrpJobs => "GrpJobs",
            LimitKind::GrpSubmitJobs => "GrpSubmitJobs",
            LimitKind::MaxTres => "MaxTRES",
            LimitKind::MaxTresPerUser => "MaxTRESPerUser",
            LimitKind::MaxJobs => "MaxJobs",
            LimitKind::MaxSubmitJobs => "MaxSubmitJobs",
            LimitKind::MaxWall => "MaxWall",
            LimitKind::MaxTresMins => "MaxTRESMins",
            LimitKind::GrpWall => "GrpWall",
            LimitKind::GuaranteedTres => "GuaranteedTRES",
            LimitKind::BorrowingLimit => "BorrowingLimit",
            LimitKind::LendingLimit => "LendingLimit",
        }
    }

    /// Whether its value is TRES counts (otherwise a number, MaxWall and GrpWall
    /// minutes).
    pub fn is_tres(self) -> bool {
        matches!(
            self,
            LimitKind::GrpTres
                | LimitKind::GrpTresMins
                | LimitKind::GrpTresRunMins
                | LimitKind::MaxTres
                | LimitKind::MaxTresPerUser
                | LimitKind::MaxTresMins
                | LimitKind::GuaranteedTres
                | LimitKind::BorrowingLimit
                | LimitKind::LendingLimit
        )
    }

    /// Whether its value is a time (minutes, given and shown in Slurm's time syntax).
    pub fn is_time(self) -> bool {
        matches!(self, LimitKind::MaxWall | LimitKind::GrpWall)
    }

    /// The TRES counts this limit is in `limits` (for a TRES limit).
    pub fn tres_mut(self, limits: &mut Limits) -> Option<&mut TresCounts> {
        Some(match self {
            LimitKind::GrpTres => &mut limits.grp_tres,
            LimitKind::GrpTresMins => &mut limits.grp_tres_mins,
            LimitKind::GrpTresRunMins => &mut limits.grp_tres_run_mins,
            LimitKind::MaxTres => &mut limits.max_tres_per_job,
            LimitKind::MaxTresPerUser => &mut limits.max_tres_per_user,
            LimitKind::MaxTresMins => &mut limits.max_tres_mins_per_job,
            LimitKind::GuaranteedTres => &mut limits.guaranteed_tres,
            LimitKind::BorrowingLimit => &mut limits.borrowing_limit,
            LimitKind::LendingLimit => &mut limits.lending_limit,
            _ => return None,
        })
    }

    /// The number this limit is in `limits` (for a count, MaxWall or GrpWall).
    pub fn count_mut(self, limits: &mut Limits) -> Option<&mut Option<u32>> {
        Some(match self {
            LimitKind::GrpJobs => &mut limits.grp_jobs,
            LimitKind::GrpSubmitJobs => &mut limits.grp_submit,
            LimitKind::MaxJobs => &mut limits.max_jobs,
            LimitKind::MaxSubmitJobs => &mut limits.max_submit,
            LimitKind::MaxWall => &mut limits.max_wall_min,
            LimitKind::GrpWall => &mut limits.grp_wall_min,
            _ => return None,
        })
    }

    /// The limit as `sacctmgr show` prints it (empty: not set).
    pub fn show(self, limits: &Limits) -> String {
        let mut l = limits.clone();
        if let Some(t) = self.tres_mut(&mut l) {
            return tres::format_counts(t);
        }
        match self.count_mut(&mut l).and_then(|c| *c) {
            None => String::new(),
            Some(m) if self.is_time() => units::format_time_limit(Some(m)),
            Some(n) => n.to_string(),
        }
    }

    /// The limit a `sacctmgr` key names, with the TRES a legacy key stands for
    /// (`GrpCPUs` is `GrpTRES=cpu=`): a whole key of Slurm's or Drover's, else an
    /// abbreviation of one of Slurm's, tried in the order its sacctmgr tries them
    /// (`MaxNodes`, `maxn` and `grpjob` are its `MaxNodesPerJob` and `GrpJobs`).
    fn parse_key(key: &str) -> Option<(LimitKind, Option<&'static str>)> {
        use LimitKind as K;
        let whole = match key {
            "grpsubmit" => Some((K::GrpSubmitJobs, None)),
            "maxtres" | "maxtresperjobs" => Some((K::MaxTres, None)),
            "maxtresmins" => Some((K::MaxTresMins, None)),
            "maxtresperuser" | "maxtrespu" => Some((K::MaxTresPerUser, None)),
            "maxjobsperuser" | "maxjobspu" => Some((K::MaxJobs, None)),
            "maxsubmit" | "maxsubmitjobsperuser" | "maxsubmitpu" => Some((K::MaxSubmitJobs, None)),
            "guaranteedtres" => Some((K::GuaranteedTres, None)),
            "borrowinglimit" => Some((K::BorrowingLimit, None)),
            "lendinglimit" => Some((K::LendingLimit, None)),
            _ => None,
        };
        type Key = (LimitKind, Option<&'static str>);
        const ABBREVIATED: &[(&str, usize, Key)] = &[
            ("grpcpumins", 7, (K::GrpTresMins, Some("cpu"))),
            ("grpcpurunmins", 7, (K::GrpTresRunMins, Some("cpu"))),
            ("grpcpus", 7, (K::GrpTres, Some("cpu"))),
            ("grpjobs", 4, (K::GrpJobs, None)),
            ("grpmemory", 4, (K::GrpTres, Some("mem"))),
            ("grpnodes", 4, (K::GrpTres, Some("node"))),
            ("grpsubmitjobs", 4, (K::GrpSubmitJobs, None)),
            ("grptres", 7, (K::GrpTres, None)),
            ("grptresmins", 8, (K::GrpTresMins, None)),
            ("grptresrunmins", 8, (K::GrpTresRunMins, None)),
            ("grpwall", 4, (K::GrpWall, None)),
            ("maxcpuminsperjob", 7, (K::MaxTresMins, Some("cpu"))),
            ("maxcpusperjob", 7, (K::MaxTres, Some("cpu"))),
            ("maxjobs", 4, (K::MaxJobs, None)),
            ("maxnodesperjob", 4, (K::MaxTres, Some("node"))),
            ("maxsubmitjobs", 4, (K::MaxSubmitJobs, None)),
            ("maxtresperjob", 7, (K::MaxTres, None)),
            ("maxtresminsperjob", 8, (K::MaxTresMins, None)),
            ("maxwalldurationperjob", 4, (K::MaxWall, None)),
        ];
        whole.or_else(|| crate::keyword::abbreviated(key, ABBREVIATED))
    }
}

/// A limit's new value: TRES counts to set (`None` clears that TRES), or a number
/// (`None` clears the limit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LimitValue {
    Tres(Vec<(String, Option<u64>)>),
    Count(Option<u32>),
}

/// What a change sets; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    pub parent: Option<String>,
    pub description: Option<String>,
    pub organization: Option<String>,
    pub fairshare: Option<u32>,
    pub priority: Option<u32>,
    pub default_account: Option<String>,
    pub admin_level: Option<AdminLevel>,
    pub qos: Option<ListEdit<String>>,
    pub default_qos: Option<String>,
    pub preempt: Option<ListEdit<String>>,
    /// `cancel`, `requeue`, `suspend`, `off` or `cluster` (the cluster's default).
    pub preempt_mode: Option<Option<PreemptMode>>,
    pub grace_time_s: Option<u32>,
    pub usage_factor: Option<f64>,
    pub limits: Vec<(LimitKind, LimitValue)>,
    /// GpuIdleLimit (`Some(None)`: cleared), GpuIdleAction, GpuIdleGrace.
    pub gpu_idle_limit_s: Option<Option<u32>>,
    pub gpu_idle_action: Option<crate::gpu_use::GpuIdleAction>,
    pub gpu_idle_grace_s: Option<u32>,
}

/// Which records a change is about (`where ...`), or, for `add`, what it adds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conditions {
    /// Accounts, users, QOS or clusters by name (a coordinator's users).
    pub names: Vec<String>,
    /// `account=`: a user's associations in these accounts, a coordinator's accounts.
    pub accounts: Vec<String>,
    /// `cluster=`: the clusters a change goes to (none: every cluster it can).
    pub clusters: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AssocChange {
    pub action: Action,
    pub entity: Entity,
    pub conditions: Conditions,
    pub settings: Settings,
}

impl AssocChange {
    /// The steps a change is made in, each reported as it is made. As Slurm's
    /// sacctmgr, a `modify user` that changes both users' records (DefaultAccount,
    /// AdminLevel) and their associations makes the first, then the second; any
    /// other change is one step.
    pub fn steps(&self) -> Vec<AssocChange> {
        let s = &self.settings;
        let record = Settings {
            default_account: s.default_account.clone(),
            admin_level: s.admin_level,
            ..Settings::default()
        };
        let assoc = Settings {
            default_account: None,
            admin_level: None,
            ..s.clone()
        };
        let both = record != Settings::default() && assoc != Settings::default();
        if (self.action, self.entity) != (Action::Modify, Entity::User) || !both {
            return vec![self.clone()];
        }
        [record, assoc]
            .into_iter()
            .map(|settings| AssocChange {
                settings,
                ..self.clone()
            })
            .collect()
    }
}

/// Where a word goes while parsing: before `set` (or after `where`), or after `set`.
#[derive(Clone, Copy, PartialEq)]
enum Part {
    Conditions,
    Settings,
}

fn unknown(word: &str) -> String {
    format!("Unknown option: {word}\n Use keyword 'where' to modify condition")
}

fn names(value: &str, lower: bool) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            if lower {
                s.to_lowercase()
            } else {
                s.to_string()
            }
        })
        .collect()
}

fn number(value: &str, what: &str) -> Result<Option<u32>, String> {
    match value.trim() {
        "-1" => Ok(None),
        v => v
            .parse::<u32>()
            .map(Some)
            .map_err(|_| format!("Invalid value for {what} ({value})")),
    }
}

fn tres_value(value: &str, legacy: Option<&str>) -> Result<Vec<(String, Option<u64>)>, String> {
    let bad = |why: String| format!("Invalid TRES value {value}: {why}");
    let items: Vec<(String, String)> = match legacy {
        Some(name) => vec![(name.to_string(), value.to_string())],
        None => value
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|item| match item.split_once('=') {
                Some((n, v)) => Ok((n.to_string(), v.to_string())),
                None => Err(bad(format!("`{item}` is not TRES=COUNT"))),
            })
            .collect::<Result<_, _>>()?,
    };
    if items.is_empty() {
        return Err(bad("no TRES given".into()));
    }
    items
        .into_iter()
        .map(|(name, count)| {
            let name = tres::canonical_name(&name)
                .ok_or_else(|| format!("no TRES known by type {name}"))?;
            if count.trim() == "-1" {
                return Ok((name, None));
            }
            let parsed =
                tres::parse_counts(&format!("{name}={count}")).map_err(|e| bad(e.reason))?;
            Ok((name.clone(), parsed.get(&name).copied()))
        })
        .collect()
}

fn admin_level(value: &str) -> Result<AdminLevel, String> {
    match value.to_ascii_lowercase().as_str() {
        "none" => Ok(AdminLevel::None),
        "operator" => Ok(AdminLevel::Operator),
        "administrator" | "admin" => Ok(AdminLevel::Administrator),
        _ => Err(format!(
            "Invalid AdminLevel '{value}': it is None, Operator or Administrator"
        )),
    }
}

/// Slurm's word for an AdminLevel.
pub fn admin_level_name(level: AdminLevel) -> &'static str {
    match level {
        AdminLevel::None => "None",
        AdminLevel::Operator => "Operator",
        AdminLevel::Administrator => "Administrator",
    }
}

/// A QOS's PreemptMode as sacctmgr takes it: a mode, or `cluster` (`None`: the
/// cluster's `[scheduler] preempt_mode`).
pub fn parse_preempt_mode(word: &str) -> Option<Option<PreemptMode>> {
    if word.trim().eq_ignore_ascii_case("cluster") {
        return Some(None);
    }
    PreemptMode::parse(word).map(Some)
}

impl AssocChange {
    /// Parses the words after `sacctmgr ACTION ENTITY`: names, `where`, `set` and
    /// `Key=Value` pairs (keys in any case). An unknown key or a bad value is refused
    /// with Slurm's message.
    pub fn parse(action: Action, entity: Entity, words: &[String]) -> Result<AssocChange, String> {
        let mut change = AssocChange {
            action,
            entity,
            conditions: Conditions::default(),
            settings: Settings::default(),
        };
        let mut part = Part::Conditions;
        let lower_names = matches!(entity, Entity::Account | Entity::Qos | Entity::Cluster);
        for word in words {
            match word.to_ascii_lowercase().as_str() {
                "where" => {
                    part = Part::Conditions;
                    continue;
                }
                "set" if action == Action::Modify => {
                    part = Part::Settings;
                    continue;
                }
                _ => {}
            }
            let Some((key, value)) = word.split_once('=') else {
                if part == Part::Settings {
                    return Err(unknown(word));
                }
                change.conditions.names.extend(names(word, lower_names));
                continue;
            };
            let key = key.trim().to_ascii_lowercase();
            // A script's quotes that reached the command (`DefaultAccount='ml'`) are not
            // part of the value, as Slurm's sacctmgr strips them.
            let value = crate::keyword::unquoted(value);
            // `QOS+=high` adds to a list, `QOS-=low` removes from it.
            let edited;
            let (key, value) = match key.strip_suffix(['+', '-']) {
                Some(plain) => {
                    edited = format!("{}{value}", &key[plain.len()..]);
                    (plain, edited.as_str())
                }
                None => (key.as_str(), value),
            };
            let c = &mut change.conditions;
            // Keys that name records, wherever they stand in an `add`.
            let naming = part == Part::Conditions || action == Action::Add;
            match key {
                "name" | "names" if naming => c.names.extend(names(value, lower_names)),
                "user" | "users" if naming && entity != Entity::Account => {
                    c.names.extend(names(value, false))
                }
                "account" | "accounts" | "acct"
                    if naming && matches!(entity, Entity::User | Entity::Coordinator) =>
                {
                    c.accounts.extend(names(value, true))
                }
                "cluster" | "clusters" if naming && entity == Entity::Cluster => {
                    c.names.extend(names(value, true))
                }
                "cluster" | "clusters" if naming => c.clusters.extend(names(value, true)),
                _ if part == Part::Conditions && action != Action::Add => {
                    return Err(unknown(word));
                }
                _ => change.settings.set(key, value, word)?,
            }
        }
        Ok(change)
    }
}

impl Settings {
    fn set(&mut self, key: &str, value: &str, word: &str) -> Result<(), String> {
        let list = |v: &str| ListEdit::parse(&v.to_lowercase(), |q| Ok(q.to_string()));
        match key {
            "parent" | "parentname" => self.parent = Some(value.to_lowercase()),
            "description" | "descr" => self.description = Some(value.to_string()),
            "organization" | "org" => self.organization = Some(value.to_string()),
            // `-1` clears it back to the default share, 1.
            "fairshare" | "share" | "shares" => {
                self.fairshare = Some(number(value, "FairShare")?.unwrap_or(DEFAULT_SHARES))
            }
            "priority" => self.priority = Some(number(value, "Priority")?.unwrap_or(0)),
            "defaultaccount" | "defaccount" => self.default_account = Some(value.to_lowercase()),
            "adminlevel" | "admin" => self.admin_level = Some(admin_level(value)?),
            "qos" | "qoslevel" => self.qos = Some(list(value)?),
            "defaultqos" | "defqos" => self.default_qos = Some(value.to_lowercase()),
            "preempt" => self.preempt = Some(list(value)?),
            "preemptmode" => {
                self.preempt_mode = Some(parse_preempt_mode(value).ok_or_else(|| {
                    format!(
                        "Invalid PreemptMode '{value}': it is one of cancel, requeue, \
                         suspend, off, cluster"
                    )
                })?);
            }
            // Seconds, as Slurm's GraceTime (or a [days-]hours:minutes:seconds time).
            "gracetime" => {
                let secs = match value.trim().parse::<u32>() {
                    Ok(secs) => u64::from(secs),
                    Err(_) => units::parse_duration_secs(value)
                        .ok()
                        .flatten()
                        .filter(|_| value.contains(':'))
                        .ok_or_else(|| format!(" Bad GraceTime time format: {word}"))?,
                };
                self.grace_time_s = Some(u32::try_from(secs).unwrap_or(u32::MAX));
            }
            // Drover's GPU idle policy (`model::gpu_use`), in Slurm time syntax.
            "gpuidlelimit" => {
                self.gpu_idle_limit_s = Some(
                    crate::gpu_use::parse_limit(value)
                        .map_err(|e| format!("Invalid GpuIdleLimit '{value}': {e}"))?,
                );
            }
            "gpuidleaction" => {
                self.gpu_idle_action = Some(
                    crate::gpu_use::parse_action(value)
                        .map_err(|e| format!("Invalid GpuIdleAction '{value}': it {e}"))?,
                );
            }
            "gpuidlegrace" => {
                self.gpu_idle_grace_s = Some(
                    crate::gpu_use::parse_grace(value)
                        .map_err(|e| format!("Invalid GpuIdleGrace '{value}': {e}"))?,
                );
            }
            "usagefactor" => {
                let f: f64 = value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|f: &f64| f.is_finite() && *f >= 0.0)
                    .ok_or_else(|| format!("Invalid value for UsageFactor ({value})"))?;
                self.usage_factor = Some(f);
            }
            _ => {
                let Some((kind, legacy)) = LimitKind::parse_key(key) else {
                    return Err(unknown(word));
                };
                let value = if kind.is_tres() {
                    LimitValue::Tres(tres_value(value, legacy)?)
                } else if kind.is_time() {
                    LimitValue::Count(match value.trim() {
                        "-1" => None,
                        v => units::parse_time_limit(v)
                            .map_err(|_| format!("Bad {} time format: {word}", kind.name()))?,
                    })
                } else {
                    LimitValue::Count(number(value, kind.name())?)
                };
                self.limits.push((kind, value));
            }
        }
        Ok(())
    }

    /// Refuses values the words could not have given (a change that came over the
    /// wire is checked again): an unknown TRES, a negative factor.
    fn check_values(&self) -> Result<(), String> {
        if let Some(f) = self.usage_factor
            && !(f.is_finite() && f >= 0.0)
        {
            return Err(format!("Invalid value for UsageFactor ({f})"));
        }
        for (kind, value) in &self.limits {
            if let LimitValue::Tres(items) = value
                && let Some((name, _)) = items
                    .iter()
                    .find(|(name, _)| tres::canonical_name(name).as_deref() != Some(name))
            {
                return Err(format!("Invalid TRES '{name}' in {}", kind.name()));
            }
        }
        Ok(())
    }

    /// The settings an entity does not have, by Slurm's name.
    fn foreign(&self, entity: Entity) -> Vec<&'static str> {
        let mut out = Vec::new();
        let mut check = |set: bool, name: &'static str, allowed: &[Entity]| {
            if set && !allowed.contains(&entity) {
                out.push(name);
            }
        };
        use Entity::{Account as A, Cluster as C, Qos as Q, User as U};
        check(self.parent.is_some(), "Parent", &[A]);
        check(self.description.is_some(), "Description", &[A, Q]);
        check(self.organization.is_some(), "Organization", &[A]);
        check(self.fairshare.is_some(), "Fairshare", &[A, C, U]);
        check(self.priority.is_some(), "Priority", &[A, Q, U]);
        check(self.default_account.is_some(), "DefaultAccount", &[U]);
        check(self.admin_level.is_some(), "AdminLevel", &[U]);
        check(self.qos.is_some(), "QOS", &[A, C, U]);
        check(self.default_qos.is_some(), "DefaultQOS", &[A, C, U]);
        check(self.preempt.is_some(), "Preempt", &[Q]);
        check(self.preempt_mode.is_some(), "PreemptMode", &[Q]);
        check(self.grace_time_s.is_some(), "GraceTime", &[Q]);
        check(self.usage_factor.is_some(), "UsageFactor", &[Q]);
        check(self.gpu_idle_limit_s.is_some(), "GpuIdleLimit", &[Q]);
        check(self.gpu_idle_action.is_some(), "GpuIdleAction", &[Q]);
        check(self.gpu_idle_grace_s.is_some(), "GpuIdleGrace", &[Q]);
        check(!self.limits.is_empty(), "limits", &[A, U, Q, C]);
        let sets = |kind: LimitKind| self.limits.iter().any(|(k, _)| *k == kind);
        for kind in [
            LimitKind::GuaranteedTres,
            LimitKind::BorrowingLimit,
            LimitKind::LendingLimit,
        ] {
            check(sets(kind), kind.name(), &[A]);
        }
        // Slurm does not enforce it on a cluster's root association.
        check(
            sets(LimitKind::GrpWall),
            LimitKind::GrpWall.name(),
            &[A, U, Q],
        );
        out
    }

    fn set_limits(&self, limits: &mut Limits) {
        for (kind, value) in &self.limits {
            match value {
                LimitValue::Tres(items) => {
                    if let Some(map) = kind.tres_mut(limits) {
                        for (name, count) in items {
                            match count {
                                Some(n) => map.insert(name.clone(), *n),
                                None => map.remove(name),
                            };
                        }
                    }
                }
                LimitValue::Count(n) => {
                    if let Some(slot) = kind.count_mut(limits) {
                        *slot = *n;
                    }
                }
            }
        }
    }
}

/// An association a change touched: an account's own (`user` empty, with its parent)
/// or a user's in an account, in a cluster.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct AssocRef {
    pub cluster: String,
    pub account: String,
    pub user: String,
    pub parent: String,
}

/// What a change did, for `sacctmgr` to report. All empty: it matched nothing (or
/// added nothing new).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changed {
    /// Accounts, users, QOS or coordinators added, modified or deleted as a whole.
    pub names: Vec<String>,
    /// Associations added, modified or deleted.
    pub assocs: Vec<AssocRef>,
    /// Users deleted because no association was left to them.
    pub users_removed: Vec<String>,
}

impl Changed {
    pub fn is_empty(&self) -> bool {
        self.names.is_empty() && self.assocs.is_empty() && self.users_removed.is_empty()
    }
}

/// What [`apply`] needs to know of the cluster besides the associations.
pub struct Context<'a> {
    /// This cluster's name: its associations are `Associations::accounts`.
    pub cluster: &'a str,
    /// Whether pending or running jobs use an association (account, user).
    pub busy_assoc: &'a dyn Fn(&str, &str) -> bool,
    /// Whether pending or running jobs use a QOS.
    pub busy_qos: &'a dyn Fn(&str) -> bool,
}

/// Slurm's refusal of a delete that would take away what live jobs use.
pub const JOBS_ACTIVE: &str = "Job(s) active, cancel job(s) before remove";

/// Applies a change to a copy of the associations. Nothing matched is not an error
/// (`Changed::is_empty`); a change that cannot be made is, with the reason.
pub fn apply(
    assocs: &Associations,
    change: &AssocChange,
    ctx: &Context<'_>,
) -> Result<(Associations, Changed), String> {
    change.settings.check_values()?;
    let foreign = change.settings.foreign(change.entity);
    if !foreign.is_empty() {
        return Err(format!(
            "{} cannot be set on {}",
            foreign.join(", "),
            match change.entity {
                Entity::Account => "an account",
                Entity::User => "a user",
                Entity::Qos => "a QOS",
                Entity::Coordinator => "a coordinator",
                Entity::Cluster => "a cluster",
            }
        ));
    }
    let mut out = assocs.clone();
    let mut changed = Changed::default();
    let c = &change.conditions;
    let s = &change.settings;
    match (change.action, change.entity) {
        (action, Entity::Qos) => qos(&mut out, action, c, s, ctx, &mut changed)?,
        (action, Entity::Cluster) => clusters(&mut out, action, c, s, ctx, &mut changed)?,
        (Action::Modify, Entity::Coordinator) => {
            return Err("Coordinators are added or deleted, not modified".into());
        }
        (action, entity) => {
            for cluster in target_clusters(&out, change, ctx.cluster)? {
                let before = changed.assocs.len();
                in_cluster(&mut out, &cluster, ctx.cluster, |out| {
                    let idle = Context {
                        cluster: &cluster,
                        busy_assoc: &|_, _| false,
                        busy_qos: &|_| false,
                    };
                    // Jobs run in this cluster only.
                    let ctx = if cluster == ctx.cluster { ctx } else { &idle };
                    match (action, entity) {
                        (Action::Add, Entity::Account) => add_accounts(out, c, s, &mut changed),
                        (Action::Add, Entity::User) => add_users(out, c, s, &mut changed),
                        (action, Entity::Coordinator) => {
                            coordinators(out, c, action == Action::Add, &mut changed)
                        }
                        (Action::Modify, Entity::Account) => {
                            modify_accounts(out, c, s, &mut changed)
                        }
                        (Action::Modify, Entity::User) => modify_users(out, c, s, &mut changed),
                        (Action::Delete, Entity::Account) => {
                            delete_accounts(out, c, ctx, &mut changed)
                        }
                        (Action::Delete, Entity::User) => delete_users(out, c, ctx, &mut changed),
                        _ => unreachable!("QOS and clusters are changed above"),
                    }
                })?;
                for a in &mut changed.assocs[before..] {
                    a.cluster = cluster.clone();
                }
            }
            dedup(&mut changed.names);
            dedup(&mut changed.users_removed);
        }
    }
    out.relink();
    Ok((out, changed))
}

/// Drops repeats (a name reported by each cluster a change went to), keeping the order.
fn dedup(names: &mut Vec<String>) {
    let mut seen = BTreeSet::new();
    names.retain(|n| seen.insert(n.clone()));
}

/// Slurm's refusal of a cluster accounting does not know.
fn unknown_cluster(name: &str) -> String {
    format!(" This cluster '{name}' doesn't exist. Contact your admin to add it to accounting.")
}

/// The clusters a change to accounts, users or coordinators goes to: those its
/// `cluster=` names (each must exist), else every cluster, for an `add` only those
/// with the accounts it needs (this cluster alone when none has them, to say why).
fn target_clusters(
    assocs: &Associations,
    change: &AssocChange,
    local: &str,
) -> Result<Vec<String>, String> {
    let c = &change.conditions;
    if !c.clusters.is_empty() {
        let known = assocs.cluster_names(local);
        if let Some(other) = c.clusters.iter().find(|n| !known.contains(&n.as_str())) {
            return Err(unknown_cluster(other));
        }
        let mut named = c.clusters.clone();
        dedup(&mut named);
        return Ok(named);
    }
    let needed: Vec<&String> = match (change.action, change.entity) {
        (Action::Add, Entity::Account) => change.settings.parent.iter().collect(),
        (Action::Add, Entity::User) => c
            .accounts
            .iter()
            .chain(&change.settings.default_account)
            .collect(),
        (Action::Add, Entity::Coordinator) => c.accounts.iter().collect(),
        _ => Vec::new(),
    };
    let has = |tree: &AccountTree| needed.iter().all(|a| tree.contains_key(*a));
    let mut out: Vec<String> = std::iter::once((local, &assocs.accounts))
        .chain(assocs.other_clusters.iter().map(|(n, t)| (n.as_str(), t)))
        .filter(|(_, tree)| has(tree))
        .map(|(n, _)| n.to_string())
        .collect();
    if out.is_empty() {
        out.push(local.to_string());
    }
    Ok(out)
}

/// Runs `f` on cluster `name`'s associations as if they were this cluster's (`local`):
/// its tree in `accounts`, every other tree, this cluster's included, in
/// `other_clusters`, so that a rule looking across clusters sees them all.
fn in_cluster<R>(
    out: &mut Associations,
    name: &str,
    local: &str,
    f: impl FnOnce(&mut Associations) -> Result<R, String>,
) -> Result<R, String> {
    if name == local {
        return f(out);
    }
    let tree = out.other_clusters.remove(name).unwrap_or_default();
    let local_tree = std::mem::replace(&mut out.accounts, tree);
    out.other_clusters.insert(local.to_string(), local_tree);
    let enforced = std::mem::replace(&mut out.enforced, true);
    let result = f(out);
    out.enforced = enforced;
    let local_tree = out.other_clusters.remove(local).unwrap_or_default();
    let tree = std::mem::replace(&mut out.accounts, local_tree);
    out.other_clusters.insert(name.to_string(), tree);
    result
}

/// Every cluster's account tree, this one's first.
fn trees(out: &Associations) -> impl Iterator<Item = &AccountTree> {
    std::iter::once(&out.accounts).chain(out.other_clusters.values())
}

/// Every account of every cluster, for what goes from all of them at once.
fn every_account_mut(out: &mut Associations) -> impl Iterator<Item = &mut Account> {
    out.accounts
        .values_mut()
        .chain(out.other_clusters.values_mut().flat_map(|t| t.values_mut()))
}

fn qos(
    out: &mut Associations,
    action: Action,
    c: &Conditions,
    s: &Settings,
    ctx: &Context<'_>,
    changed: &mut Changed,
) -> Result<(), String> {
    match action {
        Action::Add => {
            for name in &c.names {
                if !out.qos.contains_key(name) {
                    let mut q = Qos::new(name);
                    modify_qos(&mut q, s);
                    out.qos.insert(name.clone(), q);
                    changed.names.push(name.clone());
                }
            }
            check_qos_names(out, s)?;
        }
        Action::Modify => {
            check_qos_names(out, s)?;
            for name in &c.names {
                if let Some(q) = out.qos.get_mut(name) {
                    modify_qos(q, s);
                    changed.names.push(name.clone());
                }
            }
        }
        Action::Delete => {
            for name in &c.names {
                if !out.qos.contains_key(name) {
                    continue;
                }
                if name == crate::assoc::DEFAULT_QOS {
                    return Err("QOS 'normal' is every job's default: it cannot be deleted".into());
                }
                if (ctx.busy_qos)(name) {
                    return Err(JOBS_ACTIVE.into());
                }
                out.qos.remove(name);
                // A list the deleted QOS leaves empty is the parent's again.
                let without = |list: &mut Option<BTreeSet<String>>| {
                    if let Some(own) = list
                        && own.remove(name)
                        && own.is_empty()
                    {
                        *list = None;
                    }
                };
                for a in every_account_mut(out) {
                    without(&mut a.qos);
                    if a.default_qos == *name {
                        a.default_qos.clear();
                    }
                    for u in a.user_assocs.values_mut() {
                        without(&mut u.qos);
                        if u.default_qos == *name {
                            u.default_qos.clear();
                        }
                    }
                    a.user_assocs.retain(|_, u| !u.is_default());
                }
                for q in out.qos.values_mut() {
                    q.preempt.retain(|p| p != name);
                }
                changed.names.push(name.clone());
            }
        }
    }
    Ok(())
}

/// `add|modify|delete cluster`: another cluster's associations are made with its root
/// account, set through its root association (the cluster's limits, shares and QOS)
/// and deleted whole; this cluster exists already and is not deleted.
fn clusters(
    out: &mut Associations,
    action: Action,
    c: &Conditions,
    s: &Settings,
    ctx: &Context<'_>,
    changed: &mut Changed,
) -> Result<(), String> {
    need_names(c, "cluster")?;
    check_qos_names(out, s)?;
    for name in &c.names {
        let exists = name == ctx.cluster || out.other_clusters.contains_key(name);
        match action {
            Action::Add => {
                check_name(name, "cluster")?;
                if exists {
                    continue;
                }
                let mut tree = Associations::new_cluster_tree();
                modify_account(tree.get_mut(ROOT).expect("a new tree has root"), s, &[]);
                out.other_clusters.insert(name.clone(), tree);
            }
            Action::Modify => {
                let tree = if name == ctx.cluster {
                    &mut out.accounts
                } else {
                    match out.other_clusters.get_mut(name) {
                        Some(tree) => tree,
                        None => continue,
                    }
                };
                if let Some(root) = tree.get_mut(ROOT) {
                    modify_account(root, s, &[]);
                }
            }
            Action::Delete => {
                if name == ctx.cluster {
                    return Err(format!(
                        "Cluster '{name}' is this controller's own: it cannot be deleted"
                    ));
                }
                if out.other_clusters.remove(name).is_none() {
                    continue;
                }
            }
        }
        changed.names.push(name.clone());
    }
    if action == Action::Delete {
        // Users go with their last association, as everywhere else.
        let orphans: Vec<String> = out
            .users
            .keys()
            .filter(|u| {
                *u != "root" && !trees(out).any(|t| t.values().any(|a| a.users.contains(*u)))
            })
            .cloned()
            .collect();
        for user in orphans {
            out.users.remove(&user);
        }
    }
    Ok(())
}

fn need_names(c: &Conditions, what: &str) -> Result<(), String> {
    if c.names.is_empty() {
        return Err(format!("Need name of {what}"));
    }
    Ok(())
}

fn check_qos_names(assocs: &Associations, s: &Settings) -> Result<(), String> {
    let listed = s
        .qos
        .iter()
        .chain(&s.preempt)
        .flat_map(|edit| match edit {
            ListEdit::Set(v) | ListEdit::Add(v) | ListEdit::Remove(v) => v.iter(),
        })
        .chain(&s.default_qos);
    for q in listed {
        if !assocs.qos.contains_key(q) {
            return Err(format!("Unknown QOS '{q}'"));
        }
    }
    Ok(())
}

fn check_name(name: &str, what: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= crate::job::MAX_WORD_CHARS
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(format!("Invalid {what} name '{name}'"))
    }
}

/// The QOS an account's jobs may use when its own list is not set: its parent's, as
/// the association inherits them (empty: any, or none).
fn inherited_qos(out: &Associations, account: &Account) -> Vec<String> {
    account
        .parent
        .as_deref()
        .and_then(|p| out.allowed_qos(p, ""))
        .into_iter()
        .flatten()
        .cloned()
        .collect()
}

/// A QOS list after an edit: from the association's own list, else the `inherited`
/// one (a `+q` adds to what it has now).
fn edited_qos(
    own: &Option<BTreeSet<String>>,
    inherited: &[String],
    edit: &ListEdit<String>,
) -> BTreeSet<String> {
    let now: Vec<String> = match own {
        Some(own) => own.iter().cloned().collect(),
        None => inherited.to_vec(),
    };
    edit.apply(&now).into_iter().collect()
}

/// Sets what `s` sets on an account; a QOS list edit (`+q`, `-q`) starts from the QOS
/// it has now, its own or `inherited`, and leaves a list of its own (`qos=`: none).
fn modify_account(a: &mut Account, s: &Settings, inherited: &[String]) {
    if let Some(d) = &s.description {
        a.description = d.clone();
    }
    if let Some(o) = &s.organization {
        a.organization = o.clone();
    }
    if let Some(f) = s.fairshare {
        a.shares = f;
    }
    if let Some(p) = s.priority {
        a.priority = p;
    }
    if let Some(edit) = &s.qos {
        a.qos = Some(edited_qos(&a.qos, inherited, edit));
    }
    if let Some(q) = &s.default_qos {
        a.default_qos = q.clone();
    }
    s.set_limits(&mut a.limits);
}

fn modify_qos(q: &mut Qos, s: &Settings) {
    if let Some(p) = s.priority {
        q.priority = p;
    }
    if let Some(edit) = &s.preempt {
        q.preempt = edit.apply(&q.preempt);
    }
    if let Some(mode) = s.preempt_mode {
        q.preempt_mode = mode.map(|m| m.name().to_lowercase()).unwrap_or_default();
    }
    if let Some(g) = s.grace_time_s {
        q.grace_time = g;
    }
    if let Some(f) = s.usage_factor {
        q.usage_factor = f;
    }
    if let Some(limit) = s.gpu_idle_limit_s {
        q.gpu_idle.limit_s = limit;
    }
    if let Some(action) = s.gpu_idle_action {
        q.gpu_idle.action = action;
    }
    if let Some(grace) = s.gpu_idle_grace_s {
        q.gpu_idle.grace_s = grace;
    }
    s.set_limits(&mut q.limits);
}

fn add_accounts(
    out: &mut Associations,
    c: &Conditions,
    s: &Settings,
    changed: &mut Changed,
) -> Result<(), String> {
    need_names(c, "account")?;
    check_qos_names(out, s)?;
    let parent = s.parent.clone().unwrap_or_else(|| ROOT.to_string());
    if !out.accounts.contains_key(&parent) {
        return Err(format!("Parent account '{parent}' doesn't exist."));
    }
    for name in &c.names {
        check_name(name, "account")?;
        if out.accounts.contains_key(name) {
            continue;
        }
        let mut a = Account::new(name, Some(&parent));
        let inherited = inherited_qos(out, &a);
        modify_account(&mut a, s, &inherited);
        out.accounts.insert(name.clone(), a);
        changed.names.push(name.clone());
        changed.assocs.push(AssocRef {
            cluster: String::new(),
            account: name.clone(),
            user: String::new(),
            parent: parent.clone(),
        });
        out.enforced = true;
    }
    Ok(())
}

fn add_users(
    out: &mut Associations,
    c: &Conditions,
    s: &Settings,
    changed: &mut Changed,
) -> Result<(), String> {
    need_names(c, "user")?;
    let mut accounts = c.accounts.clone();
    if let Some(d) = &s.default_account
        && !accounts.contains(d)
    {
        accounts.insert(0, d.clone());
    }
    if accounts.is_empty() {
        return Err("Need name of account to add user to".into());
    }
    if let Some(a) = accounts.iter().find(|a| !out.accounts.contains_key(*a)) {
        return Err(format!("This account '{a}' doesn't exist."));
    }
    check_qos_names(out, s)?;
    for user in &c.names {
        if !crate::config::is_name(user) {
            return Err(format!("Invalid user name '{user}'"));
        }
        let new_user = !out.users.contains_key(user);
        if new_user {
            out.users.insert(
                user.clone(),
                User {
                    default_account: s.default_account.clone().unwrap_or(accounts[0].clone()),
                    admin_level: s.admin_level.unwrap_or_default(),
                },
            );
        }
        for account in &accounts {
            let a = out.accounts.get_mut(account).expect("checked above");
            if a.users.insert(user.clone()) {
                let mut limits = Limits::default();
                s.set_limits(&mut limits);
                if !limits.is_empty() {
                    a.user_limits.insert(user.clone(), limits);
                }
                set_user_assoc(out, account, user, s);
                changed.assocs.push(AssocRef {
                    cluster: String::new(),
                    account: account.clone(),
                    user: user.clone(),
                    parent: String::new(),
                });
            }
        }
        if new_user {
            changed.names.push(user.clone());
        }
    }
    if changed.assocs.is_empty() {
        changed.names.clear();
    }
    Ok(())
}

fn coordinators(
    out: &mut Associations,
    c: &Conditions,
    add: bool,
    changed: &mut Changed,
) -> Result<(), String> {
    need_names(c, "user")?;
    if c.accounts.is_empty() {
        return Err("Need name of account for the coordinator".into());
    }
    if let Some(a) = c.accounts.iter().find(|a| !out.accounts.contains_key(*a)) {
        return Err(format!("This account '{a}' doesn't exist."));
    }
    if add && let Some(u) = c.names.iter().find(|u| !out.users.contains_key(*u)) {
        return Err(format!("This user '{u}' doesn't exist."));
    }
    let mut touched = BTreeSet::new();
    for account in &c.accounts {
        let a = out.accounts.get_mut(account).expect("checked above");
        for user in &c.names {
            let did = if add {
                a.coordinators.insert(user.clone())
            } else {
                a.coordinators.remove(user)
            };
            if did {
                touched.insert(user.clone());
                changed.assocs.push(AssocRef {
                    cluster: String::new(),
                    account: account.clone(),
                    user: user.clone(),
                    parent: String::new(),
                });
            }
        }
    }
    changed.names = touched.into_iter().collect();
    Ok(())
}

/// The accounts below `name` (not itself), depth first.
fn descendants(assocs: &Associations, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![name.to_string()];
    while let Some(at) = stack.pop() {
        if let Some(a) = assocs.accounts.get(&at) {
            for child in &a.children {
                if out.len() < assocs.accounts.len() {
                    out.push(child.clone());
                    stack.push(child.clone());
                }
            }
        }
    }
    out
}

fn modify_accounts(
    out: &mut Associations,
    c: &Conditions,
    s: &Settings,
    changed: &mut Changed,
) -> Result<(), String> {
    check_qos_names(out, s)?;
    if let Some(p) = &s.parent {
        if !out.accounts.contains_key(p) {
            return Err(format!("Parent account '{p}' doesn't exist."));
        }
        if c.names.contains(p) {
            return Err(format!("Account '{p}' cannot be its own parent"));
        }
    }
    for name in &c.names {
        if name == ROOT && s.parent.is_some() {
            return Err("root has no parent".into());
        }
        let Some(old_parent) = out.accounts.get(name).map(|a| a.parent.clone()) else {
            continue;
        };
        // A new parent from below the account first takes the account's place, as
        // Slurm's: the child becomes the parent.
        if let Some(p) = &s.parent
            && descendants(out, name).contains(p)
            && let Some(moved) = out.accounts.get_mut(p)
        {
            moved.parent = old_parent.clone();
            out.relink();
        }
        let inherited = inherited_qos(out, &out.accounts[name]);
        let a = out.accounts.get_mut(name).expect("found above");
        let old_parent = old_parent.unwrap_or_default();
        modify_account(a, s, &inherited);
        if let Some(p) = &s.parent {
            a.parent = Some(p.clone());
        }
        changed.names.push(name.clone());
        changed.assocs.push(AssocRef {
            cluster: String::new(),
            account: name.clone(),
            user: String::new(),
            parent: old_parent,
        });
        if !s.limits.is_empty() {
            for user in &a.users {
                changed.assocs.push(AssocRef {
                    cluster: String::new(),
                    account: name.clone(),
                    user: user.clone(),
                    parent: String::new(),
                });
            }
        }
    }
    Ok(())
}

fn modify_users(
    out: &mut Associations,
    c: &Conditions,
    s: &Settings,
    changed: &mut Changed,
) -> Result<(), String> {
    check_qos_names(out, s)?;
    let users: Vec<String> = c
        .names
        .iter()
        .filter(|u| out.users.contains_key(*u))
        .cloned()
        .collect();
    if let Some(d) = &s.default_account {
        let strays: Vec<&String> = users
            .iter()
            .filter(|u| !trees(out).any(|t| t.get(d).is_some_and(|a| a.users.contains(*u))))
            .collect();
        if !strays.is_empty() {
            return Err(format!(
                "Can't modify because these users aren't associated with new default \
                 account '{d}': {}",
                strays
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    for user in &users {
        let record = out.users.get_mut(user).expect("filtered above");
        if s.default_account.is_some() || s.admin_level.is_some() {
            if let Some(d) = &s.default_account {
                record.default_account = d.clone();
            }
            if let Some(level) = s.admin_level {
                record.admin_level = level;
            }
            changed.names.push(user.clone());
        }
        let sets_assoc = !s.limits.is_empty()
            || s.fairshare.is_some()
            || s.priority.is_some()
            || s.qos.is_some()
            || s.default_qos.is_some();
        if !sets_assoc {
            continue;
        }
        let accounts: Vec<String> = out
            .accounts
            .iter()
            .filter(|(name, a)| {
                (c.accounts.is_empty() || c.accounts.contains(name)) && a.users.contains(user)
            })
            .map(|(name, _)| name.clone())
            .collect();
        for name in accounts {
            let a = out.accounts.get_mut(&name).expect("listed above");
            let limits = a.user_limits.entry(user.clone()).or_default();
            s.set_limits(limits);
            if limits.is_empty() {
                a.user_limits.remove(user);
            }
            set_user_assoc(out, &name, user, s);
            changed.assocs.push(AssocRef {
                cluster: String::new(),
                account: name,
                user: user.clone(),
                parent: String::new(),
            });
        }
    }
    Ok(())
}

/// Sets a user's association's own share and QOS in an account. A QOS list edit
/// (`+q`, `-q`) starts from the QOS the association has now, its own or inherited.
fn set_user_assoc(out: &mut Associations, account: &str, user: &str, s: &Settings) {
    let inherited: Vec<String> = out
        .allowed_qos(account, "")
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    let Some(a) = out.accounts.get_mut(account) else {
        return;
    };
    let assoc = a.user_assocs.entry(user.to_string()).or_default();
    if let Some(f) = s.fairshare {
        assoc.shares = f;
    }
    if let Some(p) = s.priority {
        assoc.priority = p;
    }
    if let Some(edit) = &s.qos {
        assoc.qos = Some(edited_qos(&assoc.qos, &inherited, edit));
    }
    if let Some(q) = &s.default_qos {
        assoc.default_qos = q.clone();
    }
    if assoc.is_default() {
        a.user_assocs.remove(user);
    }
}

/// Removes a user's association with an account; the user goes with their last (in
/// any cluster).
fn remove_assoc(out: &mut Associations, account: &str, user: &str, changed: &mut Changed) {
    if let Some(a) = out.accounts.get_mut(account) {
        a.users.remove(user);
        a.user_limits.remove(user);
        a.user_assocs.remove(user);
    }
    let left: Vec<String> = trees(out)
        .flat_map(|t| t.values())
        .filter(|a| a.users.contains(user))
        .map(|a| a.name.clone())
        .collect();
    match left.first() {
        None => {
            out.users.remove(user);
            for a in every_account_mut(out) {
                a.coordinators.remove(user);
            }
            changed.users_removed.push(user.to_string());
        }
        Some(first) => {
            if let Some(u) = out.users.get_mut(user)
                && u.default_account == account
                && !left.iter().any(|l| l == account)
            {
                u.default_account = first.clone();
            }
        }
    }
}

fn delete_accounts(
    out: &mut Associations,
    c: &Conditions,
    ctx: &Context<'_>,
    changed: &mut Changed,
) -> Result<(), String> {
    let doomed: Vec<String> = c
        .names
        .iter()
        .filter(|n| out.accounts.contains_key(*n))
        .cloned()
        .collect();
    for name in &doomed {
        if name == ROOT {
            return Err("The root account cannot be deleted".into());
        }
        let a = &out.accounts[name];
        let kept: Vec<&String> = a.children.iter().filter(|c| !doomed.contains(c)).collect();
        if !kept.is_empty() {
            return Err(format!(
                "Account '{name}' has sub-accounts ({}): delete or move them first",
                kept.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ));
        }
        if (ctx.busy_assoc)(name, "") || a.users.iter().any(|u| (ctx.busy_assoc)(name, u)) {
            return Err(JOBS_ACTIVE.into());
        }
    }
    for name in &doomed {
        let users: Vec<String> = out.accounts[name].users.iter().cloned().collect();
        for user in users {
            remove_assoc(out, name, &user, changed);
        }
        out.accounts.remove(name);
        changed.names.push(name.clone());
    }
    changed.users_removed.clear();
    Ok(())
}

fn delete_users(
    out: &mut Associations,
    c: &Conditions,
    ctx: &Context<'_>,
    changed: &mut Changed,
) -> Result<(), String> {
    let mut pairs = Vec::new();
    for user in c.names.iter().filter(|u| out.users.contains_key(*u)) {
        for a in out.accounts.values() {
            let wanted = c.accounts.is_empty() || c.accounts.contains(&a.name);
            if wanted && a.users.contains(user) {
                if (ctx.busy_assoc)(&a.name, user) {
                    return Err(JOBS_ACTIVE.into());
                }
                pairs.push((a.name.clone(), user.clone()));
            }
        }
    }
    for (account, user) in &pairs {
        remove_assoc(out, account, user, changed);
        if !c.accounts.is_empty() {
            changed.assocs.push(AssocRef {
                cluster: String::new(),
                account: account.clone(),
                user: user.clone(),
                parent: String::new(),
            });
        }
    }
    if c.accounts.is_empty() {
        changed.names = std::mem::take(&mut changed.users_removed);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    fn change(text: &str) -> AssocChange {
        let w = words(text);
        AssocChange::parse(
            Action::parse(&w[0]).unwrap(),
            Entity::parse(&w[1]).unwrap(),
            &w[2..],
        )
        .unwrap()
    }

    fn idle() -> (impl Fn(&str, &str) -> bool, impl Fn(&str) -> bool) {
        (|_: &str, _: &str| false, |_: &str| false)
    }

    fn run(assocs: &Associations, text: &str) -> Result<(Associations, Changed), String> {
        let (a, q) = idle();
        let ctx = Context {
            cluster: "drover",
            busy_assoc: &a,
            busy_qos: &q,
        };
        apply(assocs, &change(text), &ctx)
    }

    fn ok(assocs: &Associations, text: &str) -> (Associations, Changed) {
        run(assocs, text).unwrap()
    }

    #[test]
    fn parses_conditions_settings_and_slurm_errors() {
        let c = change(
            "modify user where name=alice account=ML set MaxJobs=2 GrpTRES=gres/gpu=4,cpu=-1",
        );
        assert_eq!(c.conditions.names, vec!["alice"]);
        assert_eq!(c.conditions.accounts, vec!["ml"]);
        assert_eq!(
            c.settings.limits,
            vec![
                (LimitKind::MaxJobs, LimitValue::Count(Some(2))),
                (
                    LimitKind::GrpTres,
                    LimitValue::Tres(vec![("gres/gpu".into(), Some(4)), ("cpu".into(), None)])
                ),
            ]
        );
        let c = change("add account ML,Physics parent=top fairshare=3 maxwall=1-0 grpcpus=8");
        assert_eq!(c.conditions.names, vec!["ml", "physics"]);
        assert_eq!(c.settings.fairshare, Some(3));
        assert_eq!(
            c.settings.limits[0],
            (LimitKind::MaxWall, LimitValue::Count(Some(1440)))
        );
        assert_eq!(
            c.settings.limits[1],
            (
                LimitKind::GrpTres,
                LimitValue::Tres(vec![("cpu".into(), Some(8))])
            )
        );
        let err = |text: &str| {
            let w = words(text);
            AssocChange::parse(
                Action::parse(&w[0]).unwrap(),
                Entity::parse(&w[1]).unwrap(),
                &w[2..],
            )
            .unwrap_err()
        };
        assert_eq!(
            err("add account x badkey=1"),
            "Unknown option: badkey=1\n Use keyword 'where' to modify condition"
        );
        assert_eq!(
            err("add account x fairshare=abc"),
            "Invalid value for FairShare (abc)"
        );
        assert_eq!(
            err("add account x grptres=foo=1"),
            "no TRES known by type foo"
        );
        assert_eq!(
            err("add account x maxwall=xyz"),
            "Bad MaxWall time format: maxwall=xyz"
        );
        assert!(err("modify account where fairshare=2").starts_with("Unknown option"));
        assert!(err("modify user alice set adminlevel=king").contains("AdminLevel"));
        // `+=` and `-=` edit a list; GraceTime is seconds, or a clock time.
        let c = change("modify account ml set qos+=High,low");
        assert_eq!(
            c.settings.qos,
            Some(ListEdit::Add(vec!["high".into(), "low".into()]))
        );
        let c = change("modify qos high set preempt-=low gracetime=60");
        assert_eq!(
            c.settings.preempt,
            Some(ListEdit::Remove(vec!["low".into()]))
        );
        assert_eq!(c.settings.grace_time_s, Some(60));
        assert_eq!(
            change("modify qos high set gracetime=00:01:30")
                .settings
                .grace_time_s,
            Some(90)
        );
        assert!(err("modify qos high set gracetime=soon").contains("GraceTime"));
        // The GPU idle policy: times in Slurm's syntax, an action word, -1 clears.
        let c =
            change("modify qos gpu set GpuIdleLimit=30:00 GpuIdleAction=Requeue GpuIdleGrace=5");
        assert_eq!(
            (
                c.settings.gpu_idle_limit_s,
                c.settings.gpu_idle_action,
                c.settings.gpu_idle_grace_s
            ),
            (
                Some(Some(1800)),
                Some(crate::gpu_use::GpuIdleAction::Requeue),
                Some(300)
            )
        );
        assert_eq!(
            change("modify qos gpu set gpuidlelimit=-1")
                .settings
                .gpu_idle_limit_s,
            Some(None)
        );
        assert_eq!(
            err("modify qos gpu set gpuidleaction=kill"),
            "Invalid GpuIdleAction 'kill': it must be one of warn, requeue, cancel, not \"kill\""
        );
        assert_eq!(
            change("modify account ml set gpuidlelimit=10")
                .settings
                .foreign(Entity::Account),
            ["GpuIdleLimit"]
        );
        // PreemptMode is a mode or the cluster's.
        assert_eq!(
            change("modify qos high set preemptmode=Requeue")
                .settings
                .preempt_mode,
            Some(Some(PreemptMode::Requeue))
        );
        assert_eq!(
            change("modify qos high set preemptmode=cluster")
                .settings
                .preempt_mode,
            Some(None)
        );
        assert!(err("modify qos high set preemptmode=gently").contains("PreemptMode"));
    }

    #[test]
    fn an_admin_script_builds_a_tree_with_limits() {
        let a = Associations::default();
        assert!(!a.enforced);
        let (a, ch) = ok(&a, "add account ml description=ML fairshare=3");
        assert!(a.enforced);
        assert_eq!(ch.names, vec!["ml"]);
        assert_eq!(a.accounts["ml"].organization, "ml");
        let (a, _) = ok(&a, "add account vision parent=ml");
        assert_eq!(a.accounts["vision"].organization, "ml");
        assert!(a.accounts["ml"].children.contains("vision"));
        let (a, ch) = ok(&a, "add user bob account=ml,vision defaultaccount=vision");
        assert_eq!(ch.assocs.len(), 2);
        assert_eq!(a.default_account("bob"), Some("vision"));
        let (a, _) = ok(&a, "add user alice account=ml");
        assert_eq!(a.default_account("alice"), Some("ml"));
        let (a, ch) = ok(&a, "modify account ml set maxjobs=10 GrpTRES=gres/gpu=8");
        assert_eq!(ch.assocs.len(), 3, "the account and its two users: {ch:?}");
        let (a, _) = ok(
            &a,
            "modify user where name=bob account=vision set maxjobs=2",
        );
        assert_eq!(a.user_limits("vision", "bob").max_jobs, Some(2));
        assert_eq!(a.user_limits("ml", "bob").max_jobs, Some(10));
        assert_eq!(a.user_limits("ml", "alice").max_jobs, Some(10));
        let (a, _) = ok(
            &a,
            "modify user where name=bob account=vision set maxjobs=-1",
        );
        assert_eq!(
            a.user_limits("vision", "bob").max_jobs,
            Some(10),
            "inherited again"
        );
        assert!(a.accounts["vision"].user_limits.is_empty());
        let (a, ch) = ok(&a, "add account ml");
        assert!(ch.is_empty(), "nothing new");
        let (_, ch) = ok(&a, "modify account nosuch set maxjobs=1");
        assert!(ch.is_empty());
        assert_eq!(
            run(&a, "add user carol account=nosuch").unwrap_err(),
            "This account 'nosuch' doesn't exist."
        );
        assert_eq!(
            run(&a, "add account x parent=nosuch").unwrap_err(),
            "Parent account 'nosuch' doesn't exist."
        );
        assert!(
            run(&a, "modify user alice set defaultaccount=vision")
                .unwrap_err()
                .starts_with("Can't modify because these users aren't associated")
        );
        assert_eq!(
            run(&a, "modify account ml set parent=ml").unwrap_err(),
            "Account 'ml' cannot be its own parent"
        );
        // A child made the parent takes its parent's place first, as Slurm's.
        let (b, _) = ok(&a, "modify account ml set parent=vision");
        assert_eq!(b.accounts["vision"].parent.as_deref(), Some(ROOT));
        assert_eq!(b.accounts["ml"].parent.as_deref(), Some("vision"));
        assert!(
            run(&a, "add account x defaultaccount=ml")
                .unwrap_err()
                .contains("cannot be set")
        );
        let (a, _) = ok(&a, "modify user alice set adminlevel=operator");
        assert_eq!(a.admin_level("alice"), AdminLevel::Operator);
        let (a, ch) = ok(&a, "add coordinator account=ml names=bob");
        assert_eq!(ch.names, vec!["bob"]);
        assert!(a.coordinates("bob", "vision"));
        // Drover's quota limits, on accounts only.
        let (a, _) = ok(
            &a,
            "modify account ml set GuaranteedTRES=gres/gpu=8 BorrowingLimit=gres/gpu=2 \
             lendinglimit=gres/gpu=4",
        );
        let l = &a.accounts["ml"].limits;
        assert_eq!(l.borrowing_limit.get("gres/gpu"), Some(&2));
        assert_eq!(l.lending_limit.get("gres/gpu"), Some(&4));
        assert_eq!(LimitKind::LendingLimit.show(l), "gres/gpu=4");
        let (a, _) = ok(&a, "modify account ml set BorrowingLimit=gres/gpu=-1");
        assert!(a.accounts["ml"].limits.borrowing_limit.is_empty());
        assert!(
            run(&a, "modify user alice set LendingLimit=gres/gpu=1")
                .unwrap_err()
                .contains("LendingLimit")
        );
    }

    #[test]
    fn qos_are_added_modified_and_deleted() {
        let a = Associations::default();
        let (a, _) = ok(
            &a,
            "add qos high priority=10 maxtresperuser=gres/gpu=4 maxwall=1-0",
        );
        let q = &a.qos["high"];
        assert_eq!((q.priority, q.limits.max_wall_min), (10, Some(1440)));
        assert_eq!(q.limits.max_tres_per_user["gres/gpu"], 4);
        let (a, _) = ok(
            &a,
            "modify qos high set grpjobs=3 preempt=normal preemptmode=requeue",
        );
        assert_eq!(a.qos["high"].limits.grp_jobs, Some(3));
        assert_eq!(a.qos["high"].preempt, vec!["normal"]);
        assert!(run(&a, "modify qos high set preempt=nosuch").is_err());
        let (a, _) = ok(&a, "add account ml qos=normal,high defaultqos=high");
        let (a, ch) = ok(&a, "delete qos high");
        assert_eq!(ch.names, vec!["high"]);
        assert_eq!(
            a.accounts["ml"].qos,
            Some(BTreeSet::from(["normal".to_string()]))
        );
        assert_eq!(a.accounts["ml"].default_qos, "");
        // A list the deleted QOS empties is the parent's again.
        let (a, _) = ok(&a, "add qos solo");
        let (a, _) = ok(&a, "add account cv qos=solo");
        let (a, _) = ok(&a, "delete qos solo");
        assert_eq!(a.accounts["cv"].qos, None);
        assert!(run(&a, "delete qos normal").is_err());
    }

    #[test]
    fn deletes_keep_the_tree_whole_and_spare_live_jobs() {
        let a = Associations::default();
        let (a, _) = ok(&a, "add account ml");
        let (a, _) = ok(&a, "add account vision parent=ml");
        let (a, _) = ok(&a, "add user bob account=ml,vision");
        assert!(
            run(&a, "delete account ml")
                .unwrap_err()
                .contains("sub-accounts")
        );
        let (b, ch) = ok(&a, "delete user where name=bob account=ml");
        assert_eq!(ch.assocs.len(), 1);
        assert!(ch.users_removed.is_empty());
        assert_eq!(
            b.default_account("bob"),
            Some("vision"),
            "moved to what is left"
        );
        let (b, ch) = ok(&b, "delete user where name=bob account=vision");
        assert_eq!(ch.users_removed, vec!["bob"]);
        assert!(!b.users.contains_key("bob"));
        let (b, ch) = ok(&a, "delete account vision,ml");
        assert_eq!(ch.names, vec!["vision", "ml"]);
        assert!(!b.users.contains_key("bob"));
        let (busy, q) = (
            |acct: &str, user: &str| acct == "ml" && user == "bob",
            |_: &str| false,
        );
        let ctx = Context {
            cluster: "drover",
            busy_assoc: &busy,
            busy_qos: &q,
        };
        assert_eq!(
            apply(&a, &change("delete user bob"), &ctx).unwrap_err(),
            JOBS_ACTIVE
        );
        assert!(run(&a, "delete account root").is_err());
        assert!(run(&a, "add account x cluster=other").is_err());
    }
}

#[cfg(test)]
mod cluster_tests {
    //! Other clusters' associations: made, listed apart, changed by `cluster=`.
    use super::*;

    fn change(text: &str) -> AssocChange {
        let w: Vec<String> = text.split_whitespace().map(str::to_string).collect();
        AssocChange::parse(
            Action::parse(&w[0]).unwrap(),
            Entity::parse(&w[1]).unwrap(),
            &w[2..],
        )
        .unwrap()
    }

    fn run(assocs: &Associations, text: &str) -> Result<(Associations, Changed), String> {
        let busy = |account: &str, _: &str| account == "busy";
        let ctx = Context {
            cluster: "drover",
            busy_assoc: &busy,
            busy_qos: &|_| false,
        };
        apply(assocs, &change(text), &ctx)
    }

    fn ok(assocs: &Associations, text: &str) -> (Associations, Changed) {
        run(assocs, text).unwrap()
    }

    #[test]
    fn a_cluster_is_added_with_its_root_limits_and_deleted_whole() {
        let base = Associations::default();
        let (a, changed) = ok(
            &base,
            "add cluster C2,c3 GrpJobs=5 MaxNodes=3 Fairshare=7 grpmem=200",
        );
        assert_eq!(changed.names, ["c2", "c3"]);
        let root = &a.other_clusters["c2"][ROOT];
        assert_eq!(
            (root.shares, root.limits.grp_jobs),
            (7, Some(5)),
            "the cluster's limits are its root association's"
        );
        assert_eq!(root.limits.max_tres_per_job.get("node"), Some(&3));
        assert_eq!(root.limits.grp_tres.get("mem"), Some(&200));
        assert!(root.users.contains("root"));
        // This cluster's own tree is untouched, and it is known already.
        assert_eq!(a.accounts, base.accounts);
        assert!(ok(&a, "add cluster drover,c2").1.is_empty());
        // Modify reaches the root association; this cluster's too.
        let (a, changed) = ok(&a, "modify cluster set GrpJobs=9 where name=c3,drover");
        assert_eq!(changed.names, ["c3", "drover"]);
        assert_eq!(a.other_clusters["c3"][ROOT].limits.grp_jobs, Some(9));
        assert_eq!(a.accounts[ROOT].limits.grp_jobs, Some(9));
        assert_eq!(a.other_clusters["c2"][ROOT].limits.grp_jobs, Some(5));
        // This cluster is never deleted; another goes with its associations.
        assert!(run(&a, "delete cluster drover").is_err());
        let (a, changed) = ok(&a, "delete cluster c3");
        assert_eq!(changed.names, ["c3"]);
        assert!(!a.other_clusters.contains_key("c3"));
        // A setting a cluster does not have is refused.
        assert_eq!(
            run(&a, "add cluster c4 description=x").unwrap_err(),
            "Description cannot be set on a cluster"
        );
        // GrpWall: not on a cluster's root (Slurm does not enforce it there).
        assert_eq!(
            run(&a, "add cluster c4 GrpWall=10").unwrap_err(),
            "GrpWall cannot be set on a cluster"
        );
        let (q, _) = ok(&a, "add qos q1 GrpWall=10");
        assert_eq!(q.qos["q1"].limits.grp_wall_min, Some(10));
        // MaxCPUMins on a cluster is its root association's; GrpWall and
        // MaxTRESMins on an account and a user's association in it.
        let (a, _) = ok(&a, "add cluster c4 MaxCPUMins=1000");
        assert_eq!(
            a.other_clusters["c4"][ROOT].limits.max_tres_mins_per_job["cpu"],
            1000
        );
        let (a, _) = ok(
            &a,
            "add account ml cluster=drover GrpWall=1:00:00 MaxTRESMins=mem=90",
        );
        let (a, _) = ok(&a, "add user alice account=ml cluster=drover GrpWall=30");
        let ml = &a.accounts["ml"];
        assert_eq!(ml.limits.grp_wall_min, Some(60));
        assert_eq!(ml.limits.max_tres_mins_per_job["mem"], 90);
        assert_eq!(ml.user_limits["alice"].grp_wall_min, Some(30));
        let (a, _) = ok(&a, "modify account ml set GrpWall=-1");
        assert_eq!(a.accounts["ml"].limits.grp_wall_min, None);
    }

    #[test]
    fn a_qos_list_is_inherited_until_set_and_may_be_set_to_none() {
        let a = Associations::default();
        let (a, _) = ok(&a, "add qos q");
        let (a, _) = ok(&a, "add account ml");
        let (a, _) = ok(&a, "add account cv parent=ml");
        let list = |a: &Associations, acct: &str| {
            a.allowed_qos(acct, "")
                .map(|q| q.iter().cloned().collect::<Vec<_>>().join(","))
        };
        // Nothing set anywhere: any QOS.
        assert_eq!(list(&a, "cv"), None);
        // `qos=` on the cluster: none, down the tree.
        let (a, _) = ok(&a, "modify cluster drover set qos=");
        assert_eq!(list(&a, "cv").as_deref(), Some(""));
        let (a, _) = ok(&a, "modify account ml set qos=+q");
        assert_eq!(list(&a, "cv").as_deref(), Some("q"));
        // An edit starts from what the account has now, inherited or its own.
        let (a, _) = ok(&a, "modify account cv set qos=-q");
        assert_eq!(
            (list(&a, "ml").as_deref(), list(&a, "cv").as_deref()),
            (Some("q"), Some(""))
        );
        let (a, _) = ok(&a, "modify account root set qos=+q");
        assert_eq!(list(&a, "cv").as_deref(), Some(""));
    }

    #[test]
    fn a_user_association_sets_its_own_share_and_qos() {
        let a = Associations::default();
        let (a, _) = ok(&a, "add qos q1");
        let (a, _) = ok(&a, "add qos q2");
        let (a, _) = ok(&a, "add qos q3");
        let (a, _) = ok(&a, "add account ml,cv");
        let (a, _) = ok(
            &a,
            "add user alice account=ml,cv fairshare=5 priority=4 qos=q1,q2 defaultqos=q1",
        );
        assert_eq!(a.user_shares("ml", "alice"), 5);
        assert_eq!(a.assoc_priority("cv", "alice"), 4);
        assert_eq!(a.allowed_qos("cv", "alice").unwrap().len(), 2);
        assert_eq!(a.default_qos("ml", "alice"), Some("q1"));
        // Changed in one account only; `+`/`-` edit what it has.
        let (a, changed) = ok(
            &a,
            "modify user alice where account=ml set qos=+q3 fairshare=-1",
        );
        assert_eq!(changed.assocs.len(), 1);
        let qos = |a: &Associations, acct| a.allowed_qos(acct, "alice").unwrap().clone();
        assert_eq!(qos(&a, "ml").len(), 3);
        assert_eq!(qos(&a, "cv").len(), 2);
        assert_eq!(a.user_shares("ml", "alice"), 1);
        let (a, _) = ok(&a, "modify user alice where account=cv set qos=-q2");
        assert_eq!(qos(&a, "cv").into_iter().collect::<Vec<_>>(), ["q1"]);
        // An unknown QOS is refused; a deleted one leaves the associations.
        assert_eq!(
            run(&a, "modify user alice set qos=q9").unwrap_err(),
            "Unknown QOS 'q9'"
        );
        let (a, _) = ok(&a, "delete qos q1");
        assert_eq!(a.default_qos("ml", "alice"), None);
        assert_eq!(a.allowed_qos("cv", "alice"), None);
        assert!(!a.allowed_qos("ml", "alice").unwrap().contains("q1"));
        // The association goes with the user's membership.
        let (a, _) = ok(&a, "delete user alice where account=ml");
        assert!(a.accounts["ml"].user_assocs.is_empty());
    }

    #[test]
    fn accounts_and_users_go_to_the_clusters_named_or_to_every_cluster() {
        let (a, _) = ok(&Associations::default(), "add cluster c2,c3");
        // Named clusters only; an unknown one is Slurm's refusal.
        let (a, changed) = ok(&a, "add account ml cluster=c2,c3 maxjobs=4");
        let clusters: Vec<&str> = changed.assocs.iter().map(|r| r.cluster.as_str()).collect();
        assert_eq!(clusters, ["c2", "c3"]);
        assert_eq!(changed.names, ["ml"], "the account is named once");
        assert!(!a.accounts.contains_key("ml"));
        assert_eq!(a.other_clusters["c3"]["ml"].limits.max_jobs, Some(4));
        assert!(
            run(&a, "add account x cluster=nowhere")
                .unwrap_err()
                .contains("This cluster 'nowhere' doesn't exist.")
        );
        // Without cluster=, an account goes to every cluster ...
        let (a, _) = ok(&a, "add account physics");
        assert!(a.accounts.contains_key("physics"));
        assert!(a.other_clusters.values().all(|t| t.contains_key("physics")));
        // ... and a user to every cluster that has the accounts named.
        let (a, changed) = ok(&a, "add user alice account=ml defaultaccount='ml'");
        let clusters: Vec<&str> = changed.assocs.iter().map(|r| r.cluster.as_str()).collect();
        assert_eq!(clusters, ["c2", "c3"]);
        assert_eq!(
            a.users["alice"].default_account, "ml",
            "quotes are not the value's"
        );
        // A limit by cluster: only that cluster's association changes.
        let (a, _) = ok(&a, "modify user where name=alice cluster=c2 set maxjob=2");
        assert_eq!(
            a.other_clusters["c2"]["ml"].user_limits["alice"].max_jobs,
            Some(2)
        );
        assert!(
            !a.other_clusters["c3"]["ml"]
                .user_limits
                .contains_key("alice")
        );
        // The user stays while an association is left in any cluster.
        let (a, _) = ok(&a, "delete user alice where cluster=c2");
        assert!(a.users.contains_key("alice"));
        let (a, changed) = ok(&a, "delete user alice where cluster=c3");
        assert!(!a.users.contains_key("alice"));
        assert_eq!(changed.names, ["alice"]);
        // Deleting a cluster takes the users whose last associations were there.
        let (a, _) = ok(&a, "add user bob account=ml cluster=c3");
        let (a, _) = ok(&a, "delete cluster c3");
        assert!(!a.users.contains_key("bob"));
        // Jobs run here only: a busy account elsewhere is no obstacle.
        let (a, _) = ok(&a, "add account busy cluster=c2");
        assert!(ok(&a, "delete account busy").1.names == ["busy"]);
    }

    #[test]
    fn slurms_abbreviated_limit_keys() {
        let c = change("add account x maxn=3 grpjob=4 maxj=5 maxw=10 grpmemory=6 maxcpus=7");
        assert_eq!(
            c.settings.limits,
            vec![
                (
                    LimitKind::MaxTres,
                    LimitValue::Tres(vec![("node".into(), Some(3))])
                ),
                (LimitKind::GrpJobs, LimitValue::Count(Some(4))),
                (LimitKind::MaxJobs, LimitValue::Count(Some(5))),
                (LimitKind::MaxWall, LimitValue::Count(Some(10))),
                (
                    LimitKind::GrpTres,
                    LimitValue::Tres(vec![("mem".into(), Some(6))])
                ),
                (
                    LimitKind::MaxTres,
                    LimitValue::Tres(vec![("cpu".into(), Some(7))])
                ),
            ]
        );
        // Too short to name one, or no limit Drover keeps: refused.
        for word in ["max=1", "grpc=1", "maxcpu=1", "maxtresperno=1"] {
            let w = [word.to_string()];
            assert!(
                AssocChange::parse(Action::Add, Entity::Account, &w).is_err(),
                "{word}"
            );
        }
        // MaxCPUMins and GrpWall, whole or abbreviated as Slurm's sacctmgr reads them.
        let words: Vec<String> = ["maxcpumin=100", "MaxTRESMins=gres/gpu=60", "grpw=45:00"]
            .iter()
            .map(|w| w.to_string())
            .collect();
        let c = AssocChange::parse(Action::Add, Entity::Account, &words).unwrap();
        assert_eq!(
            c.settings.limits,
            vec![
                (
                    LimitKind::MaxTresMins,
                    LimitValue::Tres(vec![("cpu".into(), Some(100))])
                ),
                (
                    LimitKind::MaxTresMins,
                    LimitValue::Tres(vec![("gres/gpu".into(), Some(60))])
                ),
                (LimitKind::GrpWall, LimitValue::Count(Some(45))),
            ]
        );
        let bad = AssocChange::parse(Action::Add, Entity::Account, &["grpwall=soon".into()]);
        assert_eq!(bad.unwrap_err(), "Bad GrpWall time format: grpwall=soon");
    }
}
