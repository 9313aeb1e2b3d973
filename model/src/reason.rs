//! Why a job waits, or why it ended: the codes of Slurm's `enum job_state_reason` that
//! Drover uses, typed, with Slurm's spelling for the wire and every command.
//!
//! Example: a job waiting for free nodes has `Reason::Resources` (`Resources`); one held
//! back by its account's GPU limit has
//! `Reason::Limit(LimitReason::Assoc(Limit::Tres(TresLimit::Grp, TresClass::Gres)))`,
//! which Slurm spells `AssocGrpGRES`. [`Reason::parse`] reads every
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
    /// Ended: it could not finish by its `--deadline`.
    DeadLine,
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
    /// GrpWall.
    GrpWall,
    /// A TRES limit (GrpTRES, GrpTRESMins, MaxTRESPerJob) on one TRES.
    Tres(TresLimit, TresClass),
}

/// The kind of a TRES limit that both a QOS and an association set. MaxTRESPerUser
/// is a QOS's only: [`LimitReason::QosPerUser`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum TresLimit {
    Grp,
    GrpMins,
    /// GrpTRESRunMins.
    GrpRunMins,
    MaxPerJob,
    /// MaxTRESMinsPerJob.
    MaxMinsPerJob,
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
    /// A TRES without a reason name of its own (Slurm's `Unknown`).
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

/// A limit and who sets it: `QOSGrpJobsLimit`, `AssocMaxCpuPerJobLimit`, ... Only
/// the combinations Slurm has a name for can be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum LimitReason {
    /// A limit of the job's QOS.
    Qos(Limit),
    /// MaxTRESPerUser of the job's QOS on one TRES.
    QosPerUser(TresClass),
    /// A limit of the job's association or of one above it.
    Assoc(Limit),
}

impl LimitReason {
    pub fn new(scope: Scope, limit: Limit) -> LimitReason {
        match scope {
            Scope::Qos => LimitReason::Qos(limit),
            Scope::Assoc => LimitReason::Assoc(limit),
        }
    }

    /// Slurm's spelling (`job_state_reason_string`).
    fn name(self) -> &'static str {
        use TresClass as C;
        use TresLimit as K;
        match self {
            LimitReason::Qos(limit) => match limit {
                Limit::MaxWallDurationPerJob => "QOSMaxWallDurationPerJobLimit",
                Limit::GrpJobs => "QOSGrpJobsLimit",
                Limit::MaxJobsPerUser => "QOSMaxJobsPerUserLimit",
                Limit::GrpWall => "QOSGrpWallLimit",
                Limit::Tres(kind, class) => match (kind, class) {
                    (K::Grp, C::Cpu) => "QOSGrpCpuLimit",
                    (K::Grp, C::Mem) => "QOSGrpMemLimit",
                    (K::Grp, C::Node) => "QOSGrpNodeLimit",
                    (K::Grp, C::Billing) => "QOSGrpBilling",
                    (K::Grp, C::Gres) => "QOSGrpGRES",
                    (K::Grp, C::Other) => "QOSGrpUnknown",
                    (K::GrpMins, C::Cpu) => "QOSGrpCPUMinutesLimit",
                    (K::GrpMins, C::Mem) => "QOSGrpMemoryMinutes",
                    (K::GrpMins, C::Node) => "QOSGrpNodeMinutes",
                    (K::GrpMins, C::Billing) => "QOSGrpBillingMinutes",
                    (K::GrpMins, C::Gres) => "QOSGrpGRESMinutes",
                    (K::GrpMins, C::Other) => "QOSGrpUnknownMinutes",
                    (K::GrpRunMins, C::Cpu) => "QOSGrpCPURunMinutesLimit",
                    (K::GrpRunMins, C::Mem) => "QOSGrpMemoryRunMinutes",
                    (K::GrpRunMins, C::Node) => "QOSGrpNodeRunMinutes",
                    (K::GrpRunMins, C::Billing) => "QOSGrpBillingRunMinutes",
                    (K::GrpRunMins, C::Gres) => "QOSGrpGRESRunMinutes",
                    (K::GrpRunMins, C::Other) => "QOSGrpUnknownRunMinutes",
                    (K::MaxPerJob, C::Cpu) => "QOSMaxCpuPerJobLimit",
                    (K::MaxPerJob, C::Mem) => "QOSMaxMemoryPerJob",
                    (K::MaxPerJob, C::Node) => "QOSMaxNodePerJobLimit",
                    (K::MaxPerJob, C::Billing) => "QOSMaxBillingPerJob",
                    (K::MaxPerJob, C::Gres) => "QOSMaxGRESPerJob",
                    (K::MaxPerJob, C::Other) => "QOSMaxUnknownPerJob",
                    (K::MaxMinsPerJob, C::Cpu) => "QOSMaxCpuMinutesPerJobLimit",
                    (K::MaxMinsPerJob, C::Mem) => "QOSMaxMemoryMinutesPerJob",
                    (K::MaxMinsPerJob, C::Node) => "QOSMaxNodeMinutesPerJob",
                    (K::MaxMinsPerJob, C::Billing) => "QOSMaxBillingMinutesPerJob",
                    (K::MaxMinsPerJob, C::Gres) => "QOSMaxGRESMinutesPerJob",
                    (K::MaxMinsPerJob, C::Other) => "QOSMaxUnknownMinutesPerJob",
                },
            },
            LimitReason::QosPerUser(class) => match class {
                C::Cpu => "QOSMaxCpuPerUserLimit",
                C::Mem => "QOSMaxMemoryPerUser",
                C::Node => "QOSMaxNodePerUserLimit",
                C::Billing => "QOSMaxBillingPerUser",
                C::Gres => "QOSMaxGRESPerUser",
                C::Other => "QOSMaxUnknownPerUser",
            },
            LimitReason::Assoc(limit) => match limit {
                Limit::MaxWallDurationPerJob => "AssocMaxWallDurationPerJobLimit",
                Limit::GrpJobs => "AssocGrpJobsLimit",
                Limit::MaxJobsPerUser => "AssocMaxJobsLimit",
                Limit::GrpWall => "AssocGrpWallLimit",
                Limit::Tres(kind, class) => match (kind, class) {
                    (K::Grp, C::Cpu) => "AssocGrpCpuLimit",
                    (K::Grp, C::Mem) => "AssocGrpMemLimit",
                    (K::Grp, C::Node) => "AssocGrpNodeLimit",
                    (K::Grp, C::Billing) => "AssocGrpBilling",
                    (K::Grp, C::Gres) => "AssocGrpGRES",
                    (K::Grp, C::Other) => "AssocGrpUnknown",
                    (K::GrpMins, C::Cpu) => "AssocGrpCPUMinutesLimit",
                    (K::GrpMins, C::Mem) => "AssocGrpMemMinutes",
                    (K::GrpMins, C::Node) => "AssocGrpNodeMinutes",
                    (K::GrpMins, C::Billing) => "AssocGrpBillingMinutes",
                    (K::GrpMins, C::Gres) => "AssocGrpGRESMinutes",
                    (K::GrpMins, C::Other) => "AssocGrpUnknownMinutes",
                    (K::GrpRunMins, C::Cpu) => "AssocGrpCPURunMinutesLimit",
                    (K::GrpRunMins, C::Mem) => "AssocGrpMemRunMinutes",
                    (K::GrpRunMins, C::Node) => "AssocGrpNodeRunMinutes",
                    (K::GrpRunMins, C::Billing) => "AssocGrpBillingRunMinutes",
                    (K::GrpRunMins, C::Gres) => "AssocGrpGRESRunMinutes",
                    (K::GrpRunMins, C::Other) => "AssocGrpUnknownRunMinutes",
                    (K::MaxPerJob, C::Cpu) => "AssocMaxCpuPerJobLimit",
                    (K::MaxPerJob, C::Mem) => "AssocMaxMemPerJob",
                    (K::MaxPerJob, C::Node) => "AssocMaxNodePerJobLimit",
                    (K::MaxPerJob, C::Billing) => "AssocMaxBillingPerJob",
                    (K::MaxPerJob, C::Gres) => "AssocMaxGRESPerJob",
                    (K::MaxPerJob, C::Other) => "AssocMaxUnknownPerJob",
                    (K::MaxMinsPerJob, C::Cpu) => "AssocMaxCpuMinutesPerJobLimit",
                    (K::MaxMinsPerJob, C::Mem) => "AssocMaxMemMinutesPerJob",
                    (K::MaxMinsPerJob, C::Node) => "AssocMaxNodeMinutesPerJob",
                    (K::MaxMinsPerJob, C::Billing) => "AssocMaxBillingMinutesPerJob",
                    (K::MaxMinsPerJob, C::Gres) => "AssocMaxGRESMinutesPerJob",
                    (K::MaxMinsPerJob, C::Other) => "AssocMaxUnknownMinutesPerJob",
                },
            },
        }
    }

    /// Every limit reason, for parsing.
    fn all() -> impl Iterator<Item = LimitReason> {
        let classes = [
            TresClass::Cpu,
            TresClass::Mem,
            TresClass::Node,
            TresClass::Billing,
            TresClass::Gres,
            TresClass::Other,
        ];
        let limits: Vec<Limit> = [
            Limit::MaxWallDurationPerJob,
            Limit::GrpJobs,
            Limit::MaxJobsPerUser,
            Limit::GrpWall,
        ]
        .into_iter()
        .chain(
            [
                TresLimit::Grp,
                TresLimit::GrpMins,
                TresLimit::GrpRunMins,
                TresLimit::MaxPerJob,
                TresLimit::MaxMinsPerJob,
            ]
            .into_iter()
            .flat_map(move |k| classes.into_iter().map(move |c| Limit::Tres(k, c))),
        )
        .collect();
        let qos: Vec<LimitReason> = limits.iter().map(|l| LimitReason::Qos(*l)).collect();
        let assoc: Vec<LimitReason> = limits.iter().map(|l| LimitReason::Assoc(*l)).collect();
        qos.into_iter()
            .chain(classes.into_iter().map(LimitReason::QosPerUser))
            .chain(assoc)
    }
}

/// The reasons that are one word each, spelled as the variant is named: the match of
/// [`Reason::name`] and the list [`Reason::parse`] reads are made from this one list,
/// so a variant missing here does not compile.
macro_rules! one_word_reasons {
    ($($word:ident),* $(,)?) => {
        const WORDS: &[Reason] = &[$(Reason::$word),*];

        impl Reason {
            /// Slurm's spelling.
            pub fn name(self) -> &'static str {
                match self {
                    Reason::Limit(l) => l.name(),
                    $(Reason::$word => stringify!($word),)*
                }
            }
        }
    };
}

one_word_reasons!(
    None,
    Priority,
    Resources,
    Dependency,
    DependencyNeverSatisfied,
    BeginTime,
    JobHeldUser,
    JobHeldAdmin,
    Reservation,
    ReservationDeleted,
    PartitionDown,
    PartitionInactive,
    JobArrayTaskLimit,
    NonZeroExitCode,
    TimeLimit,
    OutOfMemory,
    JobLaunchFailure,
    NodeDown,
    DeadLine,
);

impl Reason {
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
            .copied()
            .find(|r| is(r.name()))
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
            .copied()
            .chain(LimitReason::all().map(Reason::Limit));
        let mut names = std::collections::BTreeSet::new();
        for r in all {
            let name = r.name();
            assert_eq!(Reason::parse(name), Some(r), "{name}");
            assert!(names.insert(name), "{name} twice");
        }
        // 19 words, 34 limits of each scope and 6 per-user limits of a QOS.
        assert_eq!(names.len(), 19 + 2 * 34 + 6);
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
    fn names_slurm_does_not_have_are_neither_written_nor_read() {
        for name in [
            "QOSGrpMemMinutes",
            "AssocGrpTRESLimit",
            "QOSGrpTRESLimit",
            "AssocMaxCpuPerUserLimit",
            "AssocMaxMemoryPerUser",
            "AssocMaxGRESPerUser",
        ] {
            assert_eq!(Reason::parse(name), None, "{name}");
        }
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
            r(Scope::Qos, tres(TresLimit::GrpMins, TresClass::Mem)),
            "QOSGrpMemoryMinutes"
        );
        assert_eq!(
            r(Scope::Assoc, tres(TresLimit::GrpMins, TresClass::Mem)),
            "AssocGrpMemMinutes"
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
            r(Scope::Qos, tres(TresLimit::Grp, TresClass::Other)),
            "QOSGrpUnknown"
        );
        assert_eq!(
            r(Scope::Assoc, tres(TresLimit::MaxMinsPerJob, TresClass::Cpu)),
            "AssocMaxCpuMinutesPerJobLimit"
        );
        assert_eq!(
            r(Scope::Qos, tres(TresLimit::MaxMinsPerJob, TresClass::Mem)),
            "QOSMaxMemoryMinutesPerJob"
        );
        assert_eq!(r(Scope::Assoc, Limit::GrpWall), "AssocGrpWallLimit");
        assert_eq!(
            Reason::parse("QOSMaxCpuMinutesPerJobLimit"),
            Some(Reason::Limit(LimitReason::Qos(tres(
                TresLimit::MaxMinsPerJob,
                TresClass::Cpu
            ))))
        );
        assert_eq!(
            r(Scope::Assoc, tres(TresLimit::MaxPerJob, TresClass::Other)),
            "AssocMaxUnknownPerJob"
        );
        assert_eq!(
            Reason::Limit(LimitReason::QosPerUser(TresClass::Mem)).to_string(),
            "QOSMaxMemoryPerUser"
        );
        assert_eq!(
            r(Scope::Qos, Limit::MaxWallDurationPerJob),
            "QOSMaxWallDurationPerJobLimit"
        );
    }
}
