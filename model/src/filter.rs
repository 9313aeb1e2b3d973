//! The one job filter: which jobs a listing (`squeue`, `sacct`) or a bulk command
//! (`scancel -u alice -t pending`) selects, with one set of rules for every caller.
//!
//! Every part that is not empty must match (they are AND-ed); within a part, any value
//! may match. Ids match as `JobIdSpec::matches` says (`12` names array 12's tasks too,
//! `12_[1-3]` three of them); users by name or uid, groups by gid; names, partitions,
//! reservations and WCKeys exactly; accounts and QOS in any case (Slurm keeps their
//! names in lower case); states and reasons by their types; nodes by the job's
//! allocation; `sacct`'s window by its [`WindowRule`].
//!
//! Example: `users: ["alice", "1001"], states: [Pending]` selects the pending jobs of
//! alice and of uid 1001.

use crate::job::{Job, JobState, Time};
use crate::job_id::JobIdSpec;
use crate::reason::Reason;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobFilter {
    pub ids: Vec<JobIdSpec>,
    /// User names or uids.
    pub users: Vec<String>,
    pub names: Vec<String>,
    pub partitions: Vec<String>,
    pub accounts: Vec<String>,
    pub qos: Vec<String>,
    pub reservations: Vec<String>,
    pub states: Vec<JobState>,
    /// Jobs with an allocation on any of these nodes.
    pub nodes: Vec<String>,
    pub wckeys: Vec<String>,
    pub reasons: Vec<Reason>,
    pub gids: Vec<u32>,
    /// `sacct -S`: the window's start; 0: no bound.
    pub window_start: crate::job::Time,
    /// `sacct -E`: the window's end; 0: no bound.
    pub window_end: crate::job::Time,
    /// How the window picks jobs (and, with [`WindowRule::InStates`], the states).
    pub window_rule: WindowRule,
}

/// How `sacct -S/-E` pick jobs, as Slurm 22.05's accounting does. Example, a job
/// submitted at 10 that waits on a dependency until 20 (eligible then) and runs from
/// 30: `-S 5 -E 15` picks it by submit time (`-j`), not by eligibility; `-s PD -S 25`
/// picks it (pending at 25), `-s PD -S 15` does not (not yet eligible at 15).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WindowRule {
    /// `sacct -j`: submitted by the end, not ended before the start.
    #[default]
    Submitted,
    /// Without `-s`: eligible by the end, not ended before the start (a job never
    /// eligible is never picked).
    Eligible,
    /// `-s`: in one of the states during the window (pending from eligible until it
    /// started, running from its start to its end, a final state by its end time);
    /// with a start but no end, at the start itself.
    InStates,
}

impl JobFilter {
    /// Does the job pass every part of the filter?
    pub fn matches(&self, job: &Job) -> bool {
        let spec = &job.spec;
        let any = |values: &[String], f: &dyn Fn(&str) -> bool| {
            values.is_empty() || values.iter().any(|v| f(v))
        };
        (self.ids.is_empty() || self.ids.iter().any(|id| id.matches(job)))
            && any(&self.users, &|u| {
                u == spec.user || u.parse::<u32>().ok() == Some(spec.uid)
            })
            && any(&self.names, &|n| n == spec.name)
            && any(&self.partitions, &|p| job.in_partition(p))
            && any(&self.accounts, &|a| a.eq_ignore_ascii_case(&spec.account))
            && any(&self.qos, &|q| q.eq_ignore_ascii_case(&spec.qos))
            && any(&self.reservations, &|r| spec.may_use_reservation(r))
            && self.in_window(job)
            && any(&self.wckeys, &|w| w == spec.wckey)
            && (self.reasons.is_empty() || self.reasons.contains(&job.reason))
            && (self.gids.is_empty() || self.gids.contains(&spec.gid))
            && (self.nodes.is_empty()
                || job
                    .alloc
                    .as_ref()
                    .is_some_and(|a| a.nodes.iter().any(|n| self.nodes.contains(&n.node))))
    }

    /// The states and the `sacct -S/-E` window, by the window's rule.
    fn in_window(&self, job: &Job) -> bool {
        let (start, end) = (self.window_start, self.window_end);
        let in_state = || self.states.is_empty() || self.states.contains(&job.state);
        let not_ended_before = start <= 0 || job.end_time == 0 || job.end_time >= start;
        match self.window_rule {
            WindowRule::Submitted => {
                in_state() && not_ended_before && (end <= 0 || job.submit_time <= end)
            }
            WindowRule::Eligible => {
                in_state()
                    && (start <= 0 && end <= 0
                        || job.eligible_time > 0
                            && (end <= 0 || job.eligible_time <= end)
                            && not_ended_before)
            }
            WindowRule::InStates => self
                .states
                .iter()
                .any(|s| in_state_during(job, *s, start, end)),
        }
    }

    /// Parses reason names as users write them (any case), refusing the unknown ones.
    pub fn parse_reasons(names: &[String]) -> Result<Vec<Reason>, String> {
        names
            .iter()
            .map(|n| {
                Reason::parse_any_case(n).ok_or_else(|| format!("Invalid reason specified: {n}"))
            })
            .collect()
    }

    /// Parses state names as users write them (`pd`, `RUNNING`, `all`), refusing the
    /// unknown ones.
    pub fn parse_states(names: &[String]) -> Result<Vec<JobState>, String> {
        let mut states = Vec::new();
        for name in names {
            if name.eq_ignore_ascii_case("all") {
                return Ok(JobState::ALL.to_vec());
            }
            states.push(
                JobState::parse(name)
                    .ok_or_else(|| format!("Invalid job state specified: {name}"))?,
            );
        }
        Ok(states)
    }
}

/// Whether the job was in `state` during the window (see [`WindowRule::InStates`]).
fn in_state_during(job: &Job, state: JobState, start: Time, end: Time) -> bool {
    // In the state from `begin` until just before `finish` (0: still in it): a job that
    // started at the window's start was no longer pending then.
    let during = |begin: Time, finish: Time| {
        begin > 0
            && match (start > 0, end > 0) {
                (true, false) => begin <= start && (finish == 0 || finish > start),
                (_, true) => begin <= end && (finish == 0 || start <= 0 || finish > start),
                (false, false) => true,
            }
    };
    match state {
        JobState::Pending => {
            let left = if job.start_time > 0 {
                job.start_time
            } else {
                job.end_time
            };
            during(job.eligible_time, left)
        }
        JobState::Running => during(job.start_time, job.end_time),
        s if s.is_final() => {
            job.state == s
                && job.end_time > 0
                && (start <= 0 || job.end_time >= start)
                && (end <= 0 || job.end_time <= end)
        }
        s => job.state == s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobSpec;

    fn job(user: &str, uid: u32, account: &str, state: JobState) -> Job {
        let spec = JobSpec {
            user: user.into(),
            uid,
            account: account.into(),
            name: "train".into(),
            partition: "gpu".into(),
            ..JobSpec::default()
        };
        let mut job = Job::new(1, spec, 0, None);
        job.state = state;
        job
    }

    #[test]
    fn sacct_windows_by_submit_eligibility_or_state() {
        // Submitted at 10, eligible at 20, running since 30.
        let mut j = job("alice", 1000, "ml", JobState::Running);
        j.submit_time = 10;
        j.eligible_time = 20;
        j.start_time = 30;
        let pick_of = |j: &Job, rule, states: &[JobState], start, end| {
            JobFilter {
                states: states.to_vec(),
                window_start: start,
                window_end: end,
                window_rule: rule,
                ..JobFilter::default()
            }
            .matches(j)
        };
        let pick = |rule, states: &[JobState], start, end| pick_of(&j, rule, states, start, end);
        use JobState::{Completed, Pending, Running};
        use WindowRule::*;
        assert!(pick(Submitted, &[], 5, 15));
        assert!(!pick(Submitted, &[], 0, 5));
        assert!(!pick(Eligible, &[], 5, 15));
        assert!(pick(Eligible, &[], 5, 25));
        // Pending from 20 to 30, running since.
        assert!(pick(InStates, &[Pending], 25, 0));
        assert!(!pick(InStates, &[Pending], 15, 0));
        assert!(!pick(InStates, &[Pending], 35, 0));
        assert!(pick(InStates, &[Pending], 0, 25));
        assert!(pick(InStates, &[Pending], 15, 25));
        assert!(!pick(InStates, &[Running], 15, 25));
        assert!(pick(InStates, &[Running, Completed], 35, 0));
        // At its start it runs, no longer pends.
        assert!(!pick(InStates, &[Pending], 30, 0));
        assert!(!pick(InStates, &[Pending], 30, 40));
        assert!(pick(InStates, &[Running], 30, 0));
        // A job never eligible was never pending, as far as sacct goes.
        let mut waiting = j.clone();
        waiting.eligible_time = 0;
        waiting.start_time = 0;
        waiting.state = JobState::Pending;
        assert!(!pick_of(&waiting, InStates, &[Pending], 0, 100));
        assert!(!pick_of(&waiting, Eligible, &[], 0, 100));
        assert!(pick_of(&waiting, Submitted, &[], 0, 100));
    }

    #[test]
    fn ids_match_jobs_and_array_tasks() {
        let mut task = job("alice", 1000, "ml", JobState::Running);
        task.id = 15;
        task.array_job_id = 12;
        task.array_task_id = Some(2);
        let ids = |text: &str| JobFilter {
            ids: JobIdSpec::parse_list(text).unwrap(),
            ..JobFilter::default()
        };
        assert!(ids("12").matches(&task));
        assert!(ids("12_[1-3]").matches(&task));
        assert!(ids("12_2,99").matches(&task));
        assert!(!ids("12_[3-4]").matches(&task));
        assert!(ids("15").matches(&task));
        assert!(!ids("16").matches(&task));
    }

    #[test]
    fn parts_are_anded_and_values_ored() {
        let alice = job("alice", 1000, "ml", JobState::Pending);
        let bob = job("bob", 1001, "ML", JobState::Running);
        let f = JobFilter {
            users: vec!["alice".into(), "1001".into()],
            ..JobFilter::default()
        };
        assert!(f.matches(&alice) && f.matches(&bob));
        let f = JobFilter {
            users: vec!["alice".into(), "1001".into()],
            states: JobFilter::parse_states(&["pd".into()]).unwrap(),
            ..JobFilter::default()
        };
        assert!(f.matches(&alice) && !f.matches(&bob));
        let f = JobFilter {
            accounts: vec!["Ml".into()],
            names: vec!["train".into()],
            partitions: vec!["gpu".into()],
            ..JobFilter::default()
        };
        assert!(f.matches(&alice) && f.matches(&bob));
        let on = |nodes: &[&str]| JobFilter {
            nodes: nodes.iter().map(|n| n.to_string()).collect(),
            ..JobFilter::default()
        };
        let mut running = bob.clone();
        running.alloc = Some(crate::job::Allocation {
            nodes: vec![crate::job::NodeAllocation {
                node: "n2".into(),
                cpus: 1,
                mem_mb: 0,
                gpus: vec![],
                cpu_ids: vec![],
            }],
        });
        assert!(on(&["n1", "n2"]).matches(&running));
        let window = |start, end| JobFilter {
            window_start: start,
            window_end: end,
            ..JobFilter::default()
        };
        let mut ended = alice.clone();
        (ended.submit_time, ended.end_time) = (100, 200);
        assert!(window(150, 0).matches(&ended) && window(0, 100).matches(&ended));
        assert!(!window(201, 0).matches(&ended) && !window(0, 99).matches(&ended));
        assert!(!on(&["n1"]).matches(&running) && !on(&["n2"]).matches(&alice));
        let f = JobFilter {
            names: vec!["Train".into()],
            ..JobFilter::default()
        };
        assert!(!f.matches(&alice));
        assert!(JobFilter::default().matches(&bob));
    }

    #[test]
    fn state_names_are_checked() {
        assert_eq!(
            JobFilter::parse_states(&["r".into(), "CD".into()]).unwrap(),
            vec![JobState::Running, JobState::Completed]
        );
        assert_eq!(JobFilter::parse_states(&["all".into()]).unwrap().len(), 15);
        assert!(JobFilter::parse_states(&["bogus".into()]).is_err());
    }
}
