//! `--mail-type`: the job events its user is mailed about, and the subject line each
//! mail gets, as Slurm 22.05's slurmctld gives them to its MailProg
//! (`MailProg -s SUBJECT USER`).
//!
//! Worked example: `--mail-type=BEGIN,FAIL` on job 12 named `train`, which waited 65
//! seconds and failed after 3 with exit code 2, mails twice:
//!
//! ```text
//! Slurm Job_id=12 Name=train Began, Queued time 00:01:05
//! Slurm Job_id=12 Name=train Failed, Run time 00:00:03, FAILED, ExitCode 2
//! ```
//!
//! `ALL` is BEGIN, END, FAIL, REQUEUE, INVALID_DEPEND and STAGE_OUT; `NONE` is none.

use crate::job::{Job, JobState};
use crate::units::format_elapsed;
use serde::{Deserialize, Serialize};

/// One `--mail-type` word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum MailType {
    Begin,
    End,
    Fail,
    Requeue,
    InvalidDepend,
    StageOut,
    TimeLimit,
    TimeLimit90,
    TimeLimit80,
    TimeLimit50,
    ArrayTasks,
}

impl MailType {
    pub const ALL: [MailType; 11] = [
        MailType::Begin,
        MailType::End,
        MailType::Fail,
        MailType::Requeue,
        MailType::InvalidDepend,
        MailType::StageOut,
        MailType::TimeLimit,
        MailType::TimeLimit90,
        MailType::TimeLimit80,
        MailType::TimeLimit50,
        MailType::ArrayTasks,
    ];

    /// What `ALL` stands for: the types before the time-limit ones.
    pub const ALL_WORD: &[MailType] = MailType::ALL.split_at(6).0;

    /// Slurm's word.
    pub fn name(self) -> &'static str {
        match self {
            MailType::Begin => "BEGIN",
            MailType::End => "END",
            MailType::Fail => "FAIL",
            MailType::Requeue => "REQUEUE",
            MailType::InvalidDepend => "INVALID_DEPEND",
            MailType::StageOut => "STAGE_OUT",
            MailType::TimeLimit => "TIME_LIMIT",
            MailType::TimeLimit90 => "TIME_LIMIT_90",
            MailType::TimeLimit80 => "TIME_LIMIT_80",
            MailType::TimeLimit50 => "TIME_LIMIT_50",
            MailType::ArrayTasks => "ARRAY_TASKS",
        }
    }
}

/// The mail types of a `--mail-type` list (`BEGIN,END`, `ALL`, `NONE`), sorted, each
/// once; Slurm's message for a word it does not know.
pub fn parse_mail_types(text: &str) -> Result<Vec<MailType>, String> {
    let mut out = Vec::new();
    for word in text.split(',').map(str::trim) {
        let found = MailType::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(word));
        match found {
            Some(t) => out.push(t),
            None if word.eq_ignore_ascii_case("ALL") => out.extend(MailType::ALL_WORD),
            None if word.eq_ignore_ascii_case("NONE") => {}
            None => return Err("Invalid --mail-type specification".to_string()),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// What happened to a job that its user may be mailed about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobMail {
    /// It started after waiting `queued` seconds.
    Began { queued: u64 },
    /// It ended in `state`, after running `run` seconds (`None`: it never ran);
    /// `exit_code` when its batch script exited (not killed by a signal).
    Ended {
        run: Option<u64>,
        state: JobState,
        exit_code: Option<i32>,
    },
    /// It went back to the queue, after running `run` seconds.
    Requeued { run: Option<u64> },
    /// It has run `percent` (50, 80, 90 or 100) of its time limit: `run` seconds.
    ReachedTimeLimit { percent: u8, run: u64 },
    /// The first task of an array began (mailed for the whole array, without
    /// ARRAY_TASKS).
    ArrayBegan,
    /// The last task of an array ended: `state` the last one's, the least and the
    /// highest exit code of its tasks, and whether any failed.
    ArrayEnded {
        state: JobState,
        exit_min: i32,
        exit_max: i32,
        failed: bool,
    },
    /// Its GPUs have all been idle for `idle` seconds (its QOS's `gpu_idle_limit`);
    /// `then`: what happens if they stay idle `grace` seconds more (Drover's).
    GpuIdle {
        idle: u64,
        then: Option<(crate::gpu_use::GpuIdleAction, u64)>,
    },
}

impl JobMail {
    /// Whether a job that asked for `types` gets this mail: a GPU idle warning goes
    /// to every job that asked for any mail.
    pub fn asked_by(self, types: &[MailType]) -> bool {
        match self.wanted_by() {
            Some(t) => types.contains(&t),
            None => !types.is_empty(),
        }
    }

    /// The `--mail-type` that asks for this mail: END for a job that completed or was
    /// cancelled, FAIL for one that failed otherwise; `None`: any type.
    pub fn wanted_by(self) -> Option<MailType> {
        Some(match self {
            JobMail::GpuIdle { .. } => return None,
            JobMail::Began { .. } => MailType::Begin,
            JobMail::Ended {
                state: JobState::Completed | JobState::Cancelled,
                ..
            } => MailType::End,
            JobMail::Ended { .. } => MailType::Fail,
            JobMail::Requeued { .. } => MailType::Requeue,
            JobMail::ReachedTimeLimit { percent: 50, .. } => MailType::TimeLimit50,
            JobMail::ReachedTimeLimit { percent: 80, .. } => MailType::TimeLimit80,
            JobMail::ReachedTimeLimit { percent: 90, .. } => MailType::TimeLimit90,
            JobMail::ReachedTimeLimit { .. } => MailType::TimeLimit,
            JobMail::ArrayBegan => MailType::Begin,
            JobMail::ArrayEnded { failed: false, .. } => MailType::End,
            JobMail::ArrayEnded { .. } => MailType::Fail,
        })
    }

    /// The subject line for `job`, as Slurm 22.05 writes it: `Slurm Job_id=12
    /// Name=train` (an array task: `Slurm Array Task Job_id=7_1 (8) Name=train`), what
    /// happened, then its times and, at the end, its state and exit code.
    pub fn subject(self, job: &Job) -> String {
        let head = match job.array_task_id {
            _ if matches!(self, JobMail::ArrayBegan | JobMail::ArrayEnded { .. }) => format!(
                "Slurm Array Summary Job_id={}_* ({}) Name={}",
                job.array_job_id, job.array_job_id, job.spec.name
            ),
            Some(task) if job.array_job_id != 0 => format!(
                "Slurm Array Task Job_id={}_{task} ({}) Name={}",
                job.array_job_id, job.id, job.spec.name
            ),
            _ => format!("Slurm Job_id={} Name={}", job.id, job.spec.name),
        };
        let run_time = |run: Option<u64>| {
            run.map(|r| format!(", Run time {}", format_elapsed(r)))
                .unwrap_or_default()
        };
        match self {
            JobMail::Began { queued } => {
                format!("{head} Began, Queued time {}", format_elapsed(queued))
            }
            JobMail::Ended {
                run,
                state,
                exit_code,
            } => {
                let word = match self.wanted_by() {
                    Some(MailType::End) => "Ended",
                    _ => "Failed",
                };
                let code = exit_code
                    .map(|c| format!(", ExitCode {c}"))
                    .unwrap_or_default();
                format!("{head} {word}{}, {}{code}", run_time(run), state.name())
            }
            JobMail::Requeued { run } => format!("{head} Requeued{}", run_time(run)),
            JobMail::ReachedTimeLimit { percent, run } => {
                let what = match percent {
                    100 => "Reached time limit".to_string(),
                    p => format!("Reached {p}% of time limit"),
                };
                format!("{head} {what}{}", run_time(Some(run)))
            }
            JobMail::ArrayBegan => format!("{head} Began"),
            JobMail::ArrayEnded {
                state,
                exit_min,
                exit_max,
                failed,
            } => {
                let word = if failed { "Failed" } else { "Ended" };
                // Some tasks exited 0 and others not: Slurm says "Mixed".
                let state = if exit_min == 0 && exit_max > 0 {
                    "Mixed"
                } else {
                    state.name()
                };
                format!("{head} {word}, {state}, ExitCode [{exit_min}-{exit_max}]")
            }
            JobMail::GpuIdle { idle, then } => {
                let then = match then {
                    Some((action, grace)) => format!(
                        ", {} if still idle in {}",
                        match action {
                            crate::gpu_use::GpuIdleAction::Requeue => "requeued",
                            crate::gpu_use::GpuIdleAction::Cancel => "cancelled",
                            crate::gpu_use::GpuIdleAction::Warn => "warned again",
                        },
                        format_elapsed(grace)
                    ),
                    None => String::new(),
                };
                format!("{head} GPUs idle for {}{then}", format_elapsed(idle))
            }
        }
    }
}

/// The time-limit mails of `--mail-type`, with the share of the limit each is sent at.
pub const TIME_LIMIT_MAILS: [(MailType, u8); 4] = [
    (MailType::TimeLimit50, 50),
    (MailType::TimeLimit80, 80),
    (MailType::TimeLimit90, 90),
    (MailType::TimeLimit, 100),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mail_type_lists_as_slurm_reads_them() {
        assert_eq!(
            parse_mail_types("end,BEGIN,end").unwrap(),
            [MailType::Begin, MailType::End]
        );
        assert_eq!(parse_mail_types("ALL").unwrap().len(), 6);
        assert!(parse_mail_types("NONE").unwrap().is_empty());
        assert_eq!(
            parse_mail_types("TIME_LIMIT_80,ARRAY_TASKS").unwrap(),
            [MailType::TimeLimit80, MailType::ArrayTasks]
        );
        for bad in ["BOGUS", "BEGIN,", "BEGIN,BOGUS", ""] {
            assert_eq!(
                parse_mail_types(bad).unwrap_err(),
                "Invalid --mail-type specification",
                "{bad:?}"
            );
        }
    }

    #[test]
    fn subjects_are_slurms() {
        let mut job = Job::new(
            12,
            crate::job::JobSpec {
                name: "train".into(),
                ..Default::default()
            },
            0,
            None,
        );
        let began = JobMail::Began { queued: 65 };
        assert_eq!(
            began.subject(&job),
            "Slurm Job_id=12 Name=train Began, Queued time 00:01:05"
        );
        let ended = |state, exit_code| JobMail::Ended {
            run: Some(3),
            state,
            exit_code,
        };
        assert_eq!(
            ended(JobState::Completed, Some(0)).subject(&job),
            "Slurm Job_id=12 Name=train Ended, Run time 00:00:03, COMPLETED, ExitCode 0"
        );
        assert_eq!(
            ended(JobState::Failed, Some(2)).subject(&job),
            "Slurm Job_id=12 Name=train Failed, Run time 00:00:03, FAILED, ExitCode 2"
        );
        assert_eq!(
            ended(JobState::NodeFail, None).subject(&job),
            "Slurm Job_id=12 Name=train Failed, Run time 00:00:03, NODE_FAIL"
        );
        let never = JobMail::Ended {
            run: None,
            state: JobState::Cancelled,
            exit_code: Some(0),
        };
        assert_eq!(
            never.subject(&job),
            "Slurm Job_id=12 Name=train Ended, CANCELLED, ExitCode 0"
        );
        assert_eq!(
            ended(JobState::Cancelled, Some(0)).wanted_by(),
            Some(MailType::End)
        );
        assert_eq!(
            ended(JobState::Timeout, None).wanted_by(),
            Some(MailType::Fail)
        );
        assert_eq!(
            JobMail::Requeued { run: Some(12) }.subject(&job),
            "Slurm Job_id=12 Name=train Requeued, Run time 00:00:12"
        );
        let half = JobMail::ReachedTimeLimit {
            percent: 50,
            run: 30,
        };
        assert_eq!(
            half.subject(&job),
            "Slurm Job_id=12 Name=train Reached 50% of time limit, Run time 00:00:30"
        );
        assert_eq!(half.wanted_by(), Some(MailType::TimeLimit50));
        let all = JobMail::ReachedTimeLimit {
            percent: 100,
            run: 60,
        };
        assert_eq!(all.wanted_by(), Some(MailType::TimeLimit));
        assert!(
            all.subject(&job)
                .ends_with("Name=train Reached time limit, Run time 00:01:00")
        );
        job.array_job_id = 7;
        job.array_task_id = Some(1);
        assert_eq!(
            began.subject(&job),
            "Slurm Array Task Job_id=7_1 (12) Name=train Began, Queued time 00:01:05"
        );
        assert_eq!(
            JobMail::ArrayBegan.subject(&job),
            "Slurm Array Summary Job_id=7_* (7) Name=train Began"
        );
        let ended = |exit_max, failed| JobMail::ArrayEnded {
            state: JobState::Completed,
            exit_min: 0,
            exit_max,
            failed,
        };
        assert_eq!(
            ended(0, false).subject(&job),
            "Slurm Array Summary Job_id=7_* (7) Name=train Ended, COMPLETED, ExitCode [0-0]"
        );
        assert_eq!(
            ended(3, true).subject(&job),
            "Slurm Array Summary Job_id=7_* (7) Name=train Failed, Mixed, ExitCode [0-3]"
        );
        assert_eq!(ended(3, true).wanted_by(), Some(MailType::Fail));
    }

    #[test]
    fn a_gpu_idle_warning_goes_to_any_job_that_asked_for_mail() {
        let job = Job::new(
            12,
            crate::job::JobSpec {
                name: "train".into(),
                ..Default::default()
            },
            0,
            None,
        );
        let warning = JobMail::GpuIdle {
            idle: 600,
            then: Some((crate::gpu_use::GpuIdleAction::Requeue, 300)),
        };
        assert_eq!(
            warning.subject(&job),
            "Slurm Job_id=12 Name=train GPUs idle for 00:10:00, requeued if still idle in 00:05:00"
        );
        assert_eq!(
            JobMail::GpuIdle {
                idle: 60,
                then: None
            }
            .subject(&job),
            "Slurm Job_id=12 Name=train GPUs idle for 00:01:00"
        );
        assert!(warning.asked_by(&[MailType::End]));
        assert!(!warning.asked_by(&[]));
        assert!(!JobMail::Began { queued: 1 }.asked_by(&[MailType::End]));
    }
}
