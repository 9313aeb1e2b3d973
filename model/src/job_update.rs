//! `scontrol update job`: the changes Slurm's `Key=Value` pairs ask for, parsed once
//! (by the command, into typed changes that go on the wire) and applied by the
//! controller to the job as it stands in its state owner, so that a relative change
//! (`TimeLimit=+30`) cannot race with another update.
//!
//! Example: `TimeLimit=+30 Comment=x` on a running job limited to 60 minutes is
//! `[TimeLimit(Add(30)), Comment("x")]`; applied by root it gives a limit of 90
//! minutes. Applied by the job's owner it is refused: only an operator raises a time
//! limit (Slurm's rule). `Partition=gpu` is refused for a job that already runs.

use crate::job::{Job, JobSpec, JobState, Time};
use crate::timespec::{self, LocalZone, Toward};
use crate::units;

/// The largest `Nice` (and `SiteFactor`) either way: Slurm's `NICE_OFFSET - 3`.
pub const MAX_NICE: u32 = 0x8000_0000 - 3;

/// A new time limit (minutes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeLimitChange {
    /// This limit; `None` is UNLIMITED.
    Set(Option<u32>),
    /// `+N`: the current limit raised by N minutes.
    Add(u32),
    /// `-N`: the current limit lowered by N minutes.
    Subtract(u32),
}

impl TimeLimitChange {
    /// The limit this change makes of `current` (`None`: UNLIMITED), a job's or a
    /// step's. Only an operator raises a limit.
    pub fn apply(self, current: Option<u32>, operator: bool) -> Result<Option<u32>, UpdateError> {
        let new = match self {
            TimeLimitChange::Set(l) => l,
            TimeLimitChange::Add(n) => {
                let current = current.ok_or_else(|| {
                    invalid("TimeLimit increment not possible for an UNLIMITED job")
                })?;
                Some(current.saturating_add(n))
            }
            TimeLimitChange::Subtract(n) => {
                let current = current.ok_or_else(|| {
                    invalid("TimeLimit decrement not possible for an UNLIMITED job")
                })?;
                if n > current {
                    return Err(invalid(format!(
                        "TimeLimit decrement larger than current time limit ({n} > {current})"
                    )));
                }
                Some(current - n)
            }
        };
        if !operator && new.unwrap_or(u32::MAX) > current.unwrap_or(u32::MAX) {
            return Err(UpdateError::PermissionDenied);
        }
        Ok(new)
    }
}

/// One change of a job's request, by Slurm's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobChange {
    TimeLimit(TimeLimitChange),
    /// `JobName`, `Name`.
    Name(String),
    Comment(String),
    Partition(String),
    Nice(i32),
    /// `NumCPUs`, `MinCPUsNode`: CPUs for the whole job, spread over its tasks.
    NumCpus(u32),
    CpusPerTask(u32),
    NumTasks(u32),
    /// `NumNodes`, `ReqNodes` (the low end of a range).
    NumNodes(u32),
    MinMemoryNode(u64),
    MinMemoryCpu(u64),
    /// Empty: no dependency.
    Dependency(String),
    /// `StartTime`, `EligibleTime`: Unix seconds.
    BeginTime(Time),
    WcKey(String),
    Account(String),
    Qos(String),
    /// `NodeList`, `ReqNodeList`.
    NodeList(String),
    ExcNodeList(String),
    /// `Features`: the job's `--constraint`.
    Features(String),
    /// `ReservationName`; empty: none.
    Reservation(String),
    /// `ArrayTaskThrottle`: the array's `%N`.
    ArrayTaskThrottle(u32),
    Requeue(bool),
    /// `Priority=N`: fixed at N (its nice cleared); 0 holds the job. Only an operator
    /// raises a job's priority (the controller checks that, knowing the current one).
    Priority(u32),
    /// `SiteFactor=N`: an operator's addition to the multifactor priority.
    SiteFactor(i32),
    /// `sacctmgr modify job ... set DerivedExitCode=N`: the accounting record's derived
    /// exit code, a wait status as Slurm keeps it (22 reads `0:22`).
    DerivedExitCode(i32),
}

/// Why a change cannot be made; the words Slurm prints.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpdateError {
    #[error("{0}")]
    Invalid(String),
    /// A key `scontrol update job` cannot change.
    #[error("Update of this parameter is not supported: {0}")]
    Unsupported(String),
    #[error("Access/permission denied")]
    PermissionDenied,
    #[error("{0}")]
    WrongState(String),
}

fn invalid(text: impl Into<String>) -> UpdateError {
    UpdateError::Invalid(text.into())
}

impl JobChange {
    /// The change a `Key=Value` pair asks for. `key` is Slurm's canonical spelling
    /// (`TimeLimit`, `JobName`, `MinMemoryNode`, ...); `StartTime` takes every
    /// `--begin` form, resolved toward the future from `now` in `zone`.
    pub fn parse(
        key: &str,
        value: &str,
        now: Time,
        zone: &dyn LocalZone,
    ) -> Result<JobChange, UpdateError> {
        let bad = || invalid(format!("Invalid {key} value: {value}"));
        let number = |v: &str| v.trim().parse::<u32>().map_err(|_| bad());
        let memory = |v: &str| units::parse_memory_mb(v).map_err(|_| bad());
        Ok(match key {
            "TimeLimit" => {
                let minutes = |v: &str| {
                    units::parse_time_limit(v).map_err(|_| invalid(format!("Invalid {key} value")))
                };
                let change = if let Some(v) = value.strip_prefix('+') {
                    TimeLimitChange::Add(minutes(v)?.ok_or_else(bad)?)
                } else if let Some(v) = value.strip_prefix('-') {
                    TimeLimitChange::Subtract(minutes(v)?.ok_or_else(bad)?)
                } else {
                    TimeLimitChange::Set(minutes(value)?)
                };
                JobChange::TimeLimit(change)
            }
            "JobName" | "Name" => JobChange::Name(value.to_string()),
            "Comment" => JobChange::Comment(value.to_string()),
            "Partition" => JobChange::Partition(value.to_string()),
            "Nice" => JobChange::Nice(if value.is_empty() {
                100
            } else {
                let n: i64 = value.trim().parse().map_err(|_| bad())?;
                if n.unsigned_abs() > u64::from(MAX_NICE) {
                    return Err(invalid(format!(
                        "Nice value out of range (+/- {MAX_NICE}). Value ignored"
                    )));
                }
                i32::try_from(n).map_err(|_| bad())?
            }),
            "NumCPUs" | "MinCPUsNode" => {
                let n = number(value.split('-').next().unwrap_or(value))?;
                if n == 0 {
                    return Err(bad());
                }
                JobChange::NumCpus(n)
            }
            "CPUsPerTask" => JobChange::CpusPerTask(number(value)?.max(1)),
            "NumTasks" => JobChange::NumTasks(number(value)?.max(1)),
            "NumNodes" | "ReqNodes" => {
                JobChange::NumNodes(number(value.split('-').next().unwrap_or(value))?.max(1))
            }
            "MinMemoryNode" => JobChange::MinMemoryNode(memory(value)?),
            "MinMemoryCPU" => JobChange::MinMemoryCpu(memory(value)?),
            "Dependency" => JobChange::Dependency(value.to_string()),
            "StartTime" | "EligibleTime" => JobChange::BeginTime(
                timespec::parse(value, now, Toward::Future, zone)
                    .map_err(|_| bad())?
                    .max(now),
            ),
            "WCKey" => JobChange::WcKey(value.to_string()),
            "Account" => JobChange::Account(value.to_string()),
            "QOS" => JobChange::Qos(value.to_string()),
            "NodeList" | "ReqNodeList" | "ExcNodeList" => {
                crate::hostlist::expand(value).map_err(|e| invalid(e.to_string()))?;
                if key == "ExcNodeList" {
                    JobChange::ExcNodeList(value.to_string())
                } else {
                    JobChange::NodeList(value.to_string())
                }
            }
            "Features" => {
                if !value.is_empty() {
                    crate::constraint::Constraint::parse(value)
                        .map_err(|_| invalid("Invalid feature specification"))?;
                }
                JobChange::Features(value.to_string())
            }
            "ReservationName" => JobChange::Reservation(value.to_string()),
            "ArrayTaskThrottle" => JobChange::ArrayTaskThrottle(number(value)?),
            "Requeue" => JobChange::Requeue(number(value)? != 0),
            "Priority" => JobChange::Priority(number(value)?),
            "SiteFactor" => {
                let n: i64 = value.trim().parse().map_err(|_| bad())?;
                if n.unsigned_abs() > u64::from(MAX_NICE) {
                    return Err(invalid("SiteFactor value out of range"));
                }
                JobChange::SiteFactor(n as i32)
            }
            _ => return Err(UpdateError::Unsupported(format!("{key}={value}"))),
        })
    }

    /// May it change a job that already runs? (Slurm allows a running job's time
    /// limit, name and comment to change, its node count to shrink, and an array's
    /// throttle while its last tasks run.)
    pub fn while_running(&self) -> bool {
        matches!(
            self,
            JobChange::TimeLimit(_)
                | JobChange::Name(_)
                | JobChange::Comment(_)
                | JobChange::ArrayTaskThrottle(_)
                | JobChange::Priority(_)
                | JobChange::SiteFactor(_)
                | JobChange::NumNodes(_)
        )
    }
}

/// A job's request and time limit after the changes, applied in order by `uid`'s
/// rights (`operator`: root or an admin may raise a time limit and set a negative
/// nice; anyone may set a nice of 0 or more, and a lower `Priority`). The caller checks
/// what needs the cluster (the partition exists, the account and QOS are allowed).
pub fn apply(
    job: &Job,
    changes: &[JobChange],
    operator: bool,
) -> Result<(JobSpec, Option<u32>), UpdateError> {
    if job.state.is_final() {
        return Err(UpdateError::WrongState("Job has already finished".into()));
    }
    let pending = job.state == JobState::Pending;
    let mut spec = job.spec.clone();
    let mut limit = job.time_limit_min;
    for change in changes {
        if !pending && !change.while_running() {
            return Err(UpdateError::WrongState(
                "Job is no longer pending execution".into(),
            ));
        }
        match change {
            JobChange::TimeLimit(t) => limit = t.apply(limit, operator)?,
            JobChange::Name(v) => spec.name.clone_from(v),
            JobChange::Comment(v) => spec.comment.clone_from(v),
            JobChange::Partition(v) => spec.set_partition_list(v),
            JobChange::Nice(n) => {
                if *n < 0 && !operator {
                    return Err(UpdateError::PermissionDenied);
                }
                spec.nice = *n;
            }
            JobChange::NumCpus(n) => {
                spec.cpus_per_task = n.div_ceil(spec.num_tasks.max(1)).max(1);
            }
            JobChange::CpusPerTask(n) => spec.cpus_per_task = *n,
            JobChange::NumTasks(n) => spec.num_tasks = *n,
            // A running job may only shrink (Slurm's resize), keeping a node.
            JobChange::NumNodes(n)
                if !pending
                    && (*n == 0
                        || *n as usize > job.alloc.as_ref().map_or(0, |a| a.nodes.len())) =>
            {
                return Err(invalid("Node count specification invalid"));
            }
            JobChange::NumNodes(n) => spec.num_nodes = *n,
            JobChange::MinMemoryNode(mb) => {
                spec.mem_per_node_mb = *mb;
                spec.mem_per_cpu_mb = 0;
                spec.details.mem_per_gpu_mb = 0;
            }
            JobChange::MinMemoryCpu(mb) => {
                spec.mem_per_cpu_mb = *mb;
                spec.mem_per_node_mb = 0;
                spec.details.mem_per_gpu_mb = 0;
            }
            JobChange::Dependency(v) => spec.dependency.clone_from(v),
            JobChange::BeginTime(t) => spec.begin_time = *t,
            JobChange::WcKey(v) => spec.wckey.clone_from(v),
            JobChange::Account(v) => spec.account.clone_from(v),
            JobChange::Qos(v) => spec.qos.clone_from(v),
            JobChange::NodeList(v) => spec.nodelist.clone_from(v),
            JobChange::ExcNodeList(v) => spec.exclude.clone_from(v),
            JobChange::Features(v) => spec.constraint.clone_from(v),
            JobChange::Reservation(v) => spec.reservation.clone_from(v),
            JobChange::ArrayTaskThrottle(n) => match spec.array.as_mut() {
                Some(a) => a.max_running = *n,
                None => return Err(invalid("Job is not an array")),
            },
            JobChange::Requeue(on) => spec.requeue = *on,
            // 0 holds the job (the controller's doing): its priority is computed again
            // once it is released.
            JobChange::Priority(0) => spec.priority = None,
            JobChange::Priority(n) => {
                spec.priority = Some(*n);
                spec.nice = 0;
            }
            JobChange::SiteFactor(n) => {
                if !operator {
                    return Err(UpdateError::PermissionDenied);
                }
                spec.site_factor = *n;
            }
            JobChange::DerivedExitCode(_) => {
                return Err(UpdateError::Unsupported("DerivedExitCode".into()));
            }
        }
    }
    if spec.oversized().is_some() {
        return Err(invalid(crate::job::TOO_LONG));
    }
    Ok((spec, limit))
}

/// `sacctmgr modify job`: the job's accounting record after the changes (its comment
/// and derived exit status), in whatever state the job is. Only `Comment` and
/// `DerivedExitCode` belong to the record.
pub fn apply_record(
    job: &Job,
    changes: &[JobChange],
) -> Result<(String, Option<i32>), UpdateError> {
    let mut spec = job.spec.clone();
    let mut derived = job.derived_exit_status;
    for change in changes {
        match change {
            JobChange::Comment(c) => spec.comment.clone_from(c),
            JobChange::DerivedExitCode(status) => derived = Some(*status),
            other => {
                return Err(UpdateError::Unsupported(format!(
                    "{other:?} is not part of a job's accounting record"
                )));
            }
        }
    }
    if spec.oversized().is_some() {
        return Err(invalid(crate::job::TOO_LONG));
    }
    Ok((spec.comment, derived))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(key: &str, value: &str) -> Result<JobChange, UpdateError> {
        JobChange::parse(key, value, 1_000_000, &jiff::tz::TimeZone::UTC)
    }

    fn running(limit: Option<u32>) -> Job {
        let mut job = Job::new(1, JobSpec::default(), 0, limit);
        job.state = JobState::Running;
        job
    }

    #[test]
    fn a_finished_job_s_record_takes_a_comment_and_a_derived_exit_code() {
        let mut done = running(Some(5));
        done.state = JobState::Completed;
        let changes = [
            JobChange::DerivedExitCode(22),
            JobChange::Comment("hello".into()),
        ];
        assert_eq!(
            apply_record(&done, &changes),
            Ok(("hello".to_string(), Some(22)))
        );
        assert!(matches!(
            apply_record(&done, &[JobChange::Nice(1)]),
            Err(UpdateError::Unsupported(_))
        ));
        // scontrol's update leaves the record alone.
        assert!(apply(&running(None), &changes, true).is_err());
    }

    #[test]
    fn a_running_job_may_shrink_not_grow() {
        let mut job = running(None);
        let node = |name: &str| crate::NodeAllocation {
            node: name.into(),
            cpus: 1,
            mem_mb: 0,
            gpus: vec![],
            cpu_ids: vec![],
        };
        job.alloc = Some(crate::Allocation {
            nodes: vec![node("n1"), node("n2")],
        });
        let nodes = |n| apply(&job, &[JobChange::NumNodes(n)], true).map(|(s, _)| s.num_nodes);
        assert_eq!(nodes(1), Ok(1));
        assert_eq!(nodes(2), Ok(2));
        assert_eq!(
            nodes(3),
            Err(UpdateError::Invalid(
                "Node count specification invalid".into()
            ))
        );
        // Other request changes are still refused while it runs.
        assert!(matches!(
            apply(&job, &[JobChange::NumTasks(1)], true),
            Err(UpdateError::WrongState(_))
        ));
    }

    #[test]
    fn keys_and_values_parse_as_slurm_writes_them() {
        use TimeLimitChange::*;
        assert_eq!(
            parse("TimeLimit", "+30").unwrap(),
            JobChange::TimeLimit(Add(30))
        );
        assert_eq!(
            parse("TimeLimit", "-1:00:00").unwrap(),
            JobChange::TimeLimit(Subtract(60))
        );
        assert_eq!(
            parse("TimeLimit", "UNLIMITED").unwrap(),
            JobChange::TimeLimit(Set(None))
        );
        assert_eq!(parse("Nice", "").unwrap(), JobChange::Nice(100));
        assert_eq!(parse("NumNodes", "2-4").unwrap(), JobChange::NumNodes(2));
        assert_eq!(
            parse("MinMemoryNode", "2G").unwrap(),
            JobChange::MinMemoryNode(2048)
        );
        assert_eq!(
            parse("StartTime", "now+60").unwrap(),
            JobChange::BeginTime(1_000_060)
        );
        assert_eq!(parse("Requeue", "0").unwrap(), JobChange::Requeue(false));
        assert_eq!(
            parse("ExcNodeList", "n[1-2]").unwrap(),
            JobChange::ExcNodeList("n[1-2]".into())
        );
        assert_eq!(
            parse("ReqNodeList", "").unwrap(),
            JobChange::NodeList(String::new())
        );
        for (key, value) in [
            ("TimeLimit", "abc"),
            ("NumCPUs", "0"),
            ("Nice", "x"),
            ("Features", "a&&"),
            ("TimeMin", "10"),
            ("NodeList", "n[1-"),
            ("ExcNodeList", "n[1-"),
            ("ExcNodeList", "n[3-x]"),
        ] {
            assert!(parse(key, value).is_err(), "{key}={value}");
        }
    }

    #[test]
    fn a_relative_time_limit_moves_the_current_one_and_only_operators_raise_it() {
        use TimeLimitChange::*;
        let job = running(Some(60));
        let limit = |c, op| apply(&job, &[JobChange::TimeLimit(c)], op).map(|(_, l)| l);
        assert_eq!(limit(Add(30), true), Ok(Some(90)));
        assert_eq!(limit(Add(30), false), Err(UpdateError::PermissionDenied));
        assert_eq!(limit(Subtract(15), false), Ok(Some(45)));
        assert!(limit(Subtract(61), true).is_err());
        assert_eq!(limit(Set(None), false), Err(UpdateError::PermissionDenied));
        assert!(apply(&running(None), &[JobChange::TimeLimit(Add(1))], true).is_err());
    }

    #[test]
    fn only_operators_lower_nice_below_zero_and_the_range_is_slurms() {
        let job = Job::new(1, JobSpec::default(), 0, Some(60));
        let nice = |n, op| apply(&job, &[JobChange::Nice(n)], op).map(|(s, _)| s.nice);
        assert_eq!(nice(-5, false), Err(UpdateError::PermissionDenied));
        assert_eq!(nice(-5, true), Ok(-5));
        assert_eq!(nice(0, false), Ok(0));
        assert_eq!(nice(500, false), Ok(500));
        assert_eq!(
            parse("Nice", "2147483645").unwrap(),
            JobChange::Nice(2147483645)
        );
        assert_eq!(
            parse("Nice", "-2147483645").unwrap(),
            JobChange::Nice(-2147483645)
        );
        for v in ["2147483646", "-2147483646", "-2147483648", "9999999999"] {
            assert_eq!(
                parse("Nice", v),
                Err(UpdateError::Invalid(
                    "Nice value out of range (+/- 2147483645). Value ignored".into()
                )),
                "{v}"
            );
        }
    }

    #[test]
    fn site_factor_is_an_operators_within_slurms_range() {
        let job = Job::new(1, JobSpec::default(), 0, Some(60));
        let site = |n, op| apply(&job, &[JobChange::SiteFactor(n)], op).map(|(s, _)| s.site_factor);
        assert_eq!(site(100, false), Err(UpdateError::PermissionDenied));
        assert_eq!(site(-100, true), Ok(-100));
        assert_eq!(
            parse("SiteFactor", "-2147483645").unwrap(),
            JobChange::SiteFactor(-2147483645)
        );
        for v in ["2147483646", "-2147483646"] {
            assert_eq!(
                parse("SiteFactor", v),
                Err(UpdateError::Invalid("SiteFactor value out of range".into()))
            );
        }
    }

    #[test]
    fn a_running_job_takes_only_some_changes() {
        let job = running(Some(60));
        let changed = apply(&job, &[JobChange::Comment("x".into())], false).unwrap();
        assert_eq!(changed.0.comment, "x");
        // Not beyond Slurm's sizes, by update either.
        assert_eq!(
            apply(&job, &[JobChange::Comment("x".repeat(1025))], true),
            Err(UpdateError::Invalid(crate::job::TOO_LONG.into()))
        );
        assert_eq!(
            apply(&job, &[JobChange::Partition("gpu".into())], true),
            Err(UpdateError::WrongState(
                "Job is no longer pending execution".into()
            ))
        );
        // An array whose last tasks run takes a new throttle.
        let mut array = job.clone();
        array.spec.array = Some(crate::job::ArraySpec {
            task_ids: vec![1, 2, 3],
            max_running: 0,
        });
        let changed = apply(&array, &[JobChange::ArrayTaskThrottle(1)], false).unwrap();
        assert_eq!(changed.0.array.map(|a| a.max_running), Some(1));
        let mut done = job.clone();
        done.state = JobState::Completed;
        assert!(matches!(
            apply(&done, &[JobChange::Comment("x".into())], true),
            Err(UpdateError::WrongState(_))
        ));
    }
}
