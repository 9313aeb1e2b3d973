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

use crate::job::JobState;
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
            None if word.eq_ignore_ascii_case("ALL") => out.extend([
                MailType::Begin,
                MailType::End,
                MailType::Fail,
                MailType::Requeue,
                MailType::InvalidDepend,
                MailType::StageOut,
            ]),
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
    /// It ended after running `run` seconds, in `state`; `exit_code` when its batch
    /// script exited (not killed by a signal).
    Ended {
        run: u64,
        state: JobState,
        exit_code: Option<i32>,
    },
    /// It went back to the queue after running `run` seconds.
    Requeued { run: u64 },
}

impl JobMail {
    /// The `--mail-type` that asks for this mail: END for a job that completed or was
    /// cancelled, FAIL for one that failed otherwise.
    pub fn wanted_by(self) -> MailType {
        match self {
            JobMail::Began { .. } => MailType::Begin,
            JobMail::Ended {
                state: JobState::Completed | JobState::Cancelled,
                ..
            } => MailType::End,
            JobMail::Ended { .. } => MailType::Fail,
            JobMail::Requeued { .. } => MailType::Requeue,
        }
    }

    /// The subject line, as Slurm 22.05 writes it.
    pub fn subject(self, job: &str, name: &str) -> String {
        let head = format!("Slurm Job_id={job} Name={name}");
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
                    MailType::End => "Ended",
                    _ => "Failed",
                };
                let mut out = format!(
                    "{head} {word}, Run time {}, {}",
                    format_elapsed(run),
                    state.name()
                );
                if let Some(code) = exit_code {
                    out.push_str(&format!(", ExitCode {code}"));
                }
                out
            }
            JobMail::Requeued { run } => {
                format!("{head} Requeued, Run time {}", format_elapsed(run))
            }
        }
    }
}

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
        let began = JobMail::Began { queued: 65 };
        assert_eq!(
            began.subject("12", "train"),
            "Slurm Job_id=12 Name=train Began, Queued time 00:01:05"
        );
        let ended = |state, exit_code| JobMail::Ended {
            run: 3,
            state,
            exit_code,
        };
        assert_eq!(
            ended(JobState::Completed, Some(0)).subject("12", "train"),
            "Slurm Job_id=12 Name=train Ended, Run time 00:00:03, COMPLETED, ExitCode 0"
        );
        assert_eq!(
            ended(JobState::Failed, Some(2)).subject("12", "train"),
            "Slurm Job_id=12 Name=train Failed, Run time 00:00:03, FAILED, ExitCode 2"
        );
        assert_eq!(
            ended(JobState::NodeFail, None).subject("7_1", "a"),
            "Slurm Job_id=7_1 Name=a Failed, Run time 00:00:03, NODE_FAIL"
        );
        assert_eq!(
            ended(JobState::Cancelled, Some(0)).wanted_by(),
            MailType::End
        );
        assert_eq!(ended(JobState::Timeout, None).wanted_by(), MailType::Fail);
        assert_eq!(
            JobMail::Requeued { run: 12 }.subject("4", "x"),
            "Slurm Job_id=4 Name=x Requeued, Run time 00:00:12"
        );
    }
}
