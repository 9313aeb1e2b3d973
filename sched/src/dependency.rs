//! Job dependencies in Slurm's syntax, parsed and evaluated against the cluster state.
//!
//! `afterok:12:13,afterany:14` needs all of its parts (`,`); `afterok:12?afterany:14`
//! needs any (`?`). Kinds: `after` (the job started or ended), `afterany` (ended),
//! `afterok` (ended COMPLETED), `afternotok` (ended otherwise), `aftercorr` (the task
//! of the same index ended COMPLETED), `singleton` (no other job of the same name and
//! user is pending or running ahead of it). A job id that names an array means every
//! task of it.
//!
//! Example: job 20 with `afterok:12` waits while 12 runs, starts once 12 is COMPLETED,
//! and can never start (`DependencyNeverSatisfied`) if 12 FAILED.

use model::{ClusterState, Job, JobId, JobState};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    After,
    AfterAny,
    AfterOk,
    AfterNotOk,
    AfterCorr,
    Singleton,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clause {
    pub kind: Kind,
    pub jobs: Vec<JobId>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    pub clauses: Vec<Clause>,
    /// `?`-separated: any clause suffices.
    pub any: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid dependency `{0}`")]
pub struct DependencyError(pub String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepStatus {
    Satisfied,
    Waiting,
    Never,
}

pub fn parse(text: &str) -> Result<Dependency, DependencyError> {
    let err = || DependencyError(text.to_string());
    let any = text.contains('?');
    if any && text.contains(',') {
        return Err(err());
    }
    let mut clauses = Vec::new();
    for part in text.split([',', '?']).filter(|p| !p.is_empty()) {
        if part == "singleton" {
            clauses.push(Clause {
                kind: Kind::Singleton,
                jobs: Vec::new(),
            });
            continue;
        }
        let mut fields = part.split(':');
        let kind = match fields.next().unwrap_or("") {
            "after" => Kind::After,
            "afterany" => Kind::AfterAny,
            "afterok" => Kind::AfterOk,
            "afternotok" => Kind::AfterNotOk,
            "aftercorr" => Kind::AfterCorr,
            _ => return Err(err()),
        };
        let mut jobs = Vec::new();
        for id in fields {
            // `after:12+5` (minutes after start) and `12_3` are accepted; the offset
            // and task index are not distinguished yet.
            let id = id.split(['+', '_']).next().unwrap_or("");
            jobs.push(id.parse::<JobId>().map_err(|_| err())?);
        }
        if jobs.is_empty() {
            return Err(err());
        }
        clauses.push(Clause { kind, jobs });
    }
    if clauses.is_empty() {
        return Err(err());
    }
    Ok(Dependency { clauses, any })
}

/// Every job id a dependency names that the state does not know.
pub fn unknown_jobs(state: &ClusterState, dep: &Dependency) -> Vec<JobId> {
    dep.clauses
        .iter()
        .flat_map(|c| &c.jobs)
        .copied()
        .filter(|id| state.job(*id).is_none())
        .collect()
}

/// The records that make up job `id`: the job, or every task of the array it names.
fn records(state: &ClusterState, id: JobId) -> Vec<&Job> {
    match state.job(id) {
        Some(j) if j.array_job_id == id => state
            .jobs
            .range(id..)
            .map(|(_, j)| j.as_ref())
            .filter(|j| j.array_job_id == id)
            .collect(),
        Some(j) => vec![j],
        None => Vec::new(),
    }
}

fn clause_status(state: &ClusterState, job: &Job, clause: &Clause) -> DepStatus {
    if clause.kind == Kind::Singleton {
        let ahead = state.jobs.values().any(|other| {
            other.id != job.id
                && !(job.array_job_id != 0 && other.array_job_id == job.array_job_id)
                && other.spec.name == job.spec.name
                && other.spec.user == job.spec.user
                && (matches!(other.state, JobState::Running | JobState::Suspended)
                    || (other.state == JobState::Pending && other.id < job.id))
        });
        return if ahead {
            DepStatus::Waiting
        } else {
            DepStatus::Satisfied
        };
    }
    let mut status = DepStatus::Satisfied;
    for id in &clause.jobs {
        for dep in records(state, *id) {
            let done = dep.state.is_final();
            let one = match clause.kind {
                Kind::After => {
                    if dep.state != JobState::Pending || done {
                        DepStatus::Satisfied
                    } else {
                        DepStatus::Waiting
                    }
                }
                Kind::AfterAny => {
                    if done {
                        DepStatus::Satisfied
                    } else {
                        DepStatus::Waiting
                    }
                }
                Kind::AfterOk | Kind::AfterCorr => match (done, dep.state) {
                    (true, JobState::Completed) => DepStatus::Satisfied,
                    (true, _) => DepStatus::Never,
                    _ => DepStatus::Waiting,
                },
                Kind::AfterNotOk => match (done, dep.state) {
                    (true, JobState::Completed) => DepStatus::Never,
                    (true, _) => DepStatus::Satisfied,
                    _ => DepStatus::Waiting,
                },
                Kind::Singleton => DepStatus::Satisfied,
            };
            status = match (status, one) {
                (DepStatus::Never, _) | (_, DepStatus::Never) => DepStatus::Never,
                (DepStatus::Waiting, _) | (_, DepStatus::Waiting) => DepStatus::Waiting,
                _ => DepStatus::Satisfied,
            };
        }
    }
    status
}

/// Where a job's dependency stands now. A malformed dependency never clears.
pub fn evaluate(state: &ClusterState, job: &Job) -> DepStatus {
    if job.spec.dependency.is_empty() {
        return DepStatus::Satisfied;
    }
    let Ok(dep) = parse(&job.spec.dependency) else {
        return DepStatus::Never;
    };
    let statuses = dep.clauses.iter().map(|c| clause_status(state, job, c));
    if dep.any {
        let all: Vec<DepStatus> = statuses.collect();
        if all.contains(&DepStatus::Satisfied) {
            DepStatus::Satisfied
        } else if all.iter().all(|s| *s == DepStatus::Never) {
            DepStatus::Never
        } else {
            DepStatus::Waiting
        }
    } else {
        let mut out = DepStatus::Satisfied;
        for s in statuses {
            match s {
                DepStatus::Never => return DepStatus::Never,
                DepStatus::Waiting => out = DepStatus::Waiting,
                DepStatus::Satisfied => {}
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_forms() {
        let d = parse("afterok:12:13,afterany:14").unwrap();
        assert_eq!(d.clauses.len(), 2);
        assert!(!d.any);
        assert_eq!(d.clauses[0].jobs, vec![12, 13]);
        assert!(parse("afterok:1?afternotok:2").unwrap().any);
        assert_eq!(parse("singleton").unwrap().clauses[0].kind, Kind::Singleton);
        for bad in [
            "",
            "afterok",
            "afterok:x",
            "bogus:1",
            "afterok:1,afterany:2?after:3",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, ..Default::default() })]

        /// Any `--dependency` text parses or is refused, never panics.
        #[test]
        fn any_dependency_text_parses_or_is_refused(
            t in proptest::prop_oneof![
                proptest::prelude::any::<String>(),
                "[afterokanynotsingletoncorburstbuffer0-9:+,?_*]{0,40}",
            ]
        ) {
            let _ = parse(&t);
        }
    }
}
