//! Why a job waits, or why it ended: the codes of Slurm's `enum job_state_reason` that
//! Drover uses, typed, with Slurm's spelling for the wire and every command.
//!
//! Example: a job waiting for free nodes has `Reason::Resources` (`Resources`); one held
//! back by its account's GPU limit has
//! `Reason::Limit(LimitReason { scope: Scope::Assoc, limit: Limit::Tres(TresLimit::Grp,
//! TresClass::Gres) })`, which Slurm spells `AssocGrpGRES`. [`Reason::parse`] reads every
//! spelling [`Reason::name`] writes, and nothing else.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A job's reason code (Slurm's `Reason=` of `scontrol show job`, squeue's `%r`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize,
)]
pub enum Reason {
    /// No reason: it runs, or it ended normally.
    #[default]
    None,
    /// Higher-priority jobs go first.
    Priority,
    /// Not enough free resources.
    Resources,
    /// A dependency is not satisfied yet.
    Dependency,
    /// A dependency can never be satisfied.
    DependencyNeverSatisfied,
    /// `--begin` is in the future.
    BeginTime,
    JobHeldUser,
    JobHeldAdmin,
    /// Its reservation's window has not opened.
    Reservation,
    /// Its reservation no longer exists.
    ReservationDeleted,
    PartitionDown,
    PartitionInactive,
    /// The array's `%N` throttle is reached.
    JobArrayTaskLimit,
    /// Held back by an association or QOS limit.
    Limit(LimitReason),
    /// Ended: the batch script exited non-zero.
    NonZeroExitCode,
    /// Ended: its time limit was reached.
    TimeLimit,
    /// Ended: out of memory.
    OutOfMemory,
    /// Ended: its node could not start it.
    JobLaunchFailure,
    /// Ended: its node failed.
    NodeDown,
}

/// Who sets the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Scope {
    Qos,
    Assoc,
}

/// Which limit holds a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Limit {
    /// MaxWall.
    MaxWallDurationPerJob,
    /// GrpJobs.
    GrpJobs,
    /// MaxJobs of each user.
    MaxJobsPerUser,
    /// A TRES limit (GrpTRES, GrpTRESMins, MaxTRESPerUser, MaxTRESPerJob) on one TRES.
    Tres(TresLimit, TresClass),
}

/// The kind of a TRES limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum TresLimit {
    Grp,
    GrpMins,
    MaxPerUser,
    MaxPerJob,
}

/// The TRES a limit is about, as far as Slurm's reason names tell them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum TresClass {
    Cpu,
    Mem,
    Node,
    Billing,
    /// Any `gres/...`.
    Gres,
    /// A TRES without a reason name of its own.
    Other,
}

impl TresClass {
    /// The class of a TRES name (`cpu`, `mem`, `node`, `billing`, `gres/gpu`, ...).
    pub fn of(tres: &str) -> TresClass {
        match tres {
            "cpu" => TresClass::Cpu,
            "mem" => TresClass::Mem,
            "node" => TresClass::Node,
            "billing" => TresClass::Billing,
            t if t.starts_with("gres/") => TresClass::Gres,
            _ => TresClass::Other,
        }
    }
}

/// A limit and who sets it: `QOSGrpJobsLimit`, `AssocMaxCpuPerJobLimit`, ...
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LimitReason {
    pub scope: Scope,
    pub limit: Limit,
}

impl LimitReason {
    pub fn new(scope: Scope, limit: Limit) -> LimitReason {
        LimitReason { scope, limit }
    }

    /// Slurm's spelling: the scope's prefix (`QOS`, `Assoc`) and the limit's name.
    fn name(self) -> &'static str {
        use TresClass as C;
        use TresLimit as K;
        /// One name under both prefixes.
        macro_rules! both {
            ($body:literal) => {
                (concat!("QOS", $body), concat!("Assoc", $body))
            };
        }
        let (qos, assoc) = match self.limit {
            Limit::MaxWallDurationPerJob => both!("MaxWallDurationPerJobLimit"),
            Limit::GrpJobs => both!("GrpJobsLimit"),
            Limit::MaxJobsPerUser => ("QOSMaxJobsPerUserLimit", "AssocMaxJobsLimit"),
            Limit::Tres(kind, class) => match (kind, class) {
                (K::Grp, C::Cpu) => both!("GrpCpuLimit"),
                (K::Grp, C::Mem) => both!("GrpMemLimit"),
                (K::Grp, C::Node) => both!("GrpNodeLimit"),
                (K::Grp, C::Billing) => both!("GrpBilling"),
                (K::Grp, C::Gres) => both!("GrpGRES"),
                (K::GrpMins, C::Cpu) => both!("GrpCPUMinutesLimit"),
                (K::GrpMins, C::Mem) => both!("GrpMemMinutes"),
                (K::GrpMins, C::Node) => both!("GrpNodeMinutes"),
                (K::GrpMins, C::Billing) => both!("GrpBillingMinutes"),
                (K::GrpMins, C::Gres) => both!("GrpGRESMinutes"),
                (K::MaxPerUser, C::Cpu) => both!("MaxCpuPerUserLimit"),
                (K::MaxPerUser, C::Mem) => both!("MaxMemoryPerUser"),
                (K::MaxPerUser, C::Node) => both!("MaxNodePerUserLimit"),
                (K::MaxPerUser, C::Billing) => both!("MaxBillingPerUser"),
                (K::MaxPerUser, C::Gres) => both!("MaxGRESPerUser"),
                (K::MaxPerJob, C::Cpu) => both!("MaxCpuPerJobLimit"),
                (K::MaxPerJob, C::Mem) => ("QOSMaxMemoryPerJob", "AssocMaxMemPerJob"),
                (K::MaxPerJob, C::Node) => both!("MaxNodePerJobLimit"),
                (K::MaxPerJob, C::Billing) => both!("MaxBillingPerJob"),
                (K::MaxPerJob, C::Gres) => both!("MaxGRESPerJob"),
                (_, C::Other) => both!("GrpTRESLimit"),
            },
        };
        match self.scope {
            Scope::Qos => qos,
            Scope::Assoc => assoc,
        }
    }

    /// Every limit reason, for parsing.
    fn all() -> impl Iterator<Item = LimitReason> {
        let kinds = [
            TresLimit::Grp,
            TresLimit::GrpMins,
            TresLimit::MaxPerUser,
            TresLimit::MaxPerJob,
        ];
        let classes = [
            TresClass::Cpu,
            TresClass::Mem,
            TresClass::Node,
            TresClass::Billing,
            TresClass::Gres,
            TresClass::Other,
        ];
        let limits = [
            Limit::MaxWallDurationPerJob,
            Limit::GrpJobs,
            Limit::MaxJobsPerUser,
        ]
        .into_iter()
        .chain(
            kinds
                .into_iter()
                .flat_map(move |k| classes.into_iter().map(move |c| Limit::Tres(k, c))),
        );
        let limits: Vec<Limit> = limits.collect();
        [Scope::Qos, Scope::Assoc].into_iter().flat_map(move |s| {
            limits
                .clone()
                .into_iter()
                .map(move |l| LimitReason::new(s, l))
        })
    }
}

/// The reasons that are one word each, with their spelling.
const WORDS: &[(Reason, &str)] = &[
    (Reason::None, "None"),
    (Reason::Priority, "Priority"),
    (Reason::Resources, "Resources"),
    (Reason::Dependency, "Dependency"),
    (Reason::DependencyNeverSatisfied, "DependencyNeverSatisfied"),
    (Reason::BeginTime, "BeginTime"),
    (Reason::JobHeldUser, "JobHeldUser"),
    (Reason::JobHeldAdmin, "JobHeldAdmin"),
    (Reason::Reservation, "Reservation"),
    (Reason::ReservationDeleted, "ReservationDeleted"),
    (Reason::PartitionDown, "PartitionDown"),
    (Reason::PartitionInactive, "PartitionInactive"),
    (Reason::JobArrayTaskLimit, "JobArrayTaskLimit"),
    (Reason::NonZeroExitCode, "NonZeroExitCode"),
    (Reason::TimeLimit, "TimeLimit"),
    (Reason::OutOfMemory, "OutOfMemory"),
    (Reason::JobLaunchFailure, "JobLaunchFailure"),
    (Reason::NodeDown, "NodeDown"),
];

impl Reason {
    /// Slurm's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Reason::Limit(l) => l.name(),
            word => WORDS
                .iter()
                .find(|(r, _)| *r == word)
                .map(|(_, name)| *name)
                .expect("every one-word reason is in WORDS"),
        }
    }

    /// Reads Slurm's spelling back (exactly as [`Reason::name`] writes it).
    pub fn parse(text: &str) -> Option<Reason> {
        Reason::find(|name| name == text)
    }

    /// Reads a reason as users type it (`sacct --reason=resources`): in any case.
    pub fn parse_any_case(text: &str) -> Option<Reason> {
        Reason::find(|name| name.eq_ignore_ascii_case(text))
    }

    fn find(is: impl Fn(&str) -> bool) -> Option<Reason> {
        WORDS
            .iter()
            .find(|(_, name)| is(name))
            .map(|(r, _)| *r)
            .or_else(|| LimitReason::all().find(|l| is(l.name())).map(Reason::Limit))
    }

    /// A hold by the user or an admin.
    pub fn is_hold(self) -> bool {
        matches!(self, Reason::JobHeldUser | Reason::JobHeldAdmin)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_reads_back_from_its_name() {
        let all = WORDS
            .iter()
            .map(|(r, _)| *r)
            .chain(LimitReason::all().map(Reason::Limit));
        let mut names = std::collections::BTreeSet::new();
        for r in all {
            let name = r.name();
            if let Reason::Limit(LimitReason {
                limit: Limit::Tres(_, TresClass::Other),
                ..
            }) = r
            {
                // Every kind of limit on an unnamed TRES shares Slurm's generic name.
                continue;
            }
            assert_eq!(Reason::parse(name), Some(r), "{name}");
            assert!(names.insert(name), "{name} twice");
        }
        assert_eq!(Reason::parse("bogus"), None);
        assert_eq!(Reason::parse("resources"), None);
        assert_eq!(Reason::parse_any_case("resources"), Some(Reason::Resources));
        assert_eq!(
            Reason::parse_any_case("assocgrpgres")
                .map(|r| r.to_string())
                .as_deref(),
            Some("AssocGrpGRES")
        );
    }

    #[test]
    fn limit_reasons_have_slurms_names() {
        let r = |scope, limit| Reason::Limit(LimitReason::new(scope, limit)).to_string();
        let tres = |k, c| Limit::Tres(k, c);
        assert_eq!(r(Scope::Qos, Limit::GrpJobs), "QOSGrpJobsLimit");
        assert_eq!(
            r(Scope::Qos, Limit::MaxJobsPerUser),
            "QOSMaxJobsPerUserLimit"
        );
        assert_eq!(r(Scope::Assoc, Limit::MaxJobsPerUser), "AssocMaxJobsLimit");
        assert_eq!(
            r(Scope::Assoc, tres(TresLimit::Grp, TresClass::Gres)),
            "AssocGrpGRES"
        );
        assert_eq!(
            r(Scope::Assoc, tres(TresLimit::GrpMins, TresClass::Cpu)),
            "AssocGrpCPUMinutesLimit"
        );
        assert_eq!(
            r(Scope::Assoc, tres(TresLimit::MaxPerJob, TresClass::Mem)),
            "AssocMaxMemPerJob"
        );
        assert_eq!(
            r(Scope::Qos, tres(TresLimit::MaxPerJob, TresClass::Mem)),
            "QOSMaxMemoryPerJob"
        );
        assert_eq!(
            r(Scope::Qos, Limit::MaxWallDurationPerJob),
            "QOSMaxWallDurationPerJobLimit"
        );
    }
}
