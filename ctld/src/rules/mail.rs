//! Mail about jobs (`--mail-type`): the events of a turn that mail a job's user, and
//! the time-limit shares a tick passes, each an effect for a node daemon, which runs
//! the site's MailProg (`noded`'s `mail_prog`: only node daemons start processes). A
//! job's mail goes through its batch node while that node answers, else through the
//! first node that does. An array's tasks mail only with ARRAY_TASKS (Slurm's summary
//! of a whole array is not sent).
//!
//! Worked example: job 12 (`--mail-type=BEGIN,END`, user ada) submitted at 100 starts
//! on n1 at 165: `JobStarted` gives `Mail { n1, ada, "Slurm Job_id=12 Name=train Began,
//! Queued time 00:01:05" }`; it completes at 168: `JobEnded` gives `Mail { n1, ada,
//! "Slurm Job_id=12 Name=train Ended, Run time 00:00:03, COMPLETED, ExitCode 0" }`.

use super::{Effect, batch_node};
use model::mail::{JobMail, MailType, TIME_LIMIT_MAILS};
use model::{ClusterState, Event, Job, JobState, NodeHealth, Time};

/// The mail `event` sends, read from the job as it stands before the event applies
/// (a requeue clears the start time) or, for a start and an end, after it.
pub fn for_event(state: &ClusterState, event: &Event) -> Option<Effect> {
    let (job_id, mail) = match *event {
        Event::JobStarted { job_id, time, .. } => {
            let job = state.job(job_id)?;
            let queued = time.saturating_sub(job.submit_time).max(0) as u64;
            (job_id, JobMail::Began { queued })
        }
        Event::JobEnded {
            job_id,
            state: end,
            exit_code,
            exit_signal,
            time,
            ..
        } => {
            let job = state.job(job_id)?;
            (
                job_id,
                JobMail::Ended {
                    run: run_time(job.start_time, time),
                    state: end,
                    exit_code: (exit_signal == 0).then_some(exit_code),
                },
            )
        }
        Event::JobRequeued { job_id, time, .. } => {
            let job = state.job(job_id)?;
            (
                job_id,
                JobMail::Requeued {
                    run: run_time(job.start_time, time),
                },
            )
        }
        _ => return None,
    };
    mail_for(state, state.job(job_id)?, mail)
}

/// The time-limit mails of the running jobs that reached 50, 80, 90 or 100% of their
/// limit after `since` and by `now`.
pub fn time_limits(state: &ClusterState, since: Time, now: Time) -> Vec<Effect> {
    let mut out = Vec::new();
    for job in state.running_jobs() {
        let (Some(limit), JobState::Running) = (job.time_limit_min, job.state) else {
            continue;
        };
        for (_, percent) in TIME_LIMIT_MAILS {
            let run = Time::from(limit) * 60 * Time::from(percent) / 100;
            let at = job.start_time + run;
            if since < at && at <= now {
                let mail = JobMail::ReachedTimeLimit {
                    percent,
                    run: run as u64,
                };
                out.extend(mail_for(state, job, mail));
            }
        }
    }
    out
}

/// `mail` about `job`, when the job asked for it.
fn mail_for(state: &ClusterState, job: &Job, mail: JobMail) -> Option<Effect> {
    let types = &job.spec.mail_types;
    let task_mail_unwanted = job.array_task_id.is_some() && !types.contains(&MailType::ArrayTasks);
    if !types.contains(&mail.wanted_by()) || task_mail_unwanted {
        return None;
    }
    let answers = |name: &str| {
        state
            .nodes
            .get(name)
            .is_some_and(|n| n.health == NodeHealth::Up)
    };
    let node = batch_node(job)
        .filter(|n| answers(n))
        .map(str::to_string)
        .or_else(|| {
            state
                .nodes
                .values()
                .find(|n| n.health == NodeHealth::Up)
                .map(|n| n.name.clone())
        })?;
    let user = if job.spec.mail_user.is_empty() {
        job.spec.user.clone()
    } else {
        job.spec.mail_user.clone()
    };
    Some(Effect::Mail {
        node,
        user,
        subject: mail.subject(job),
    })
}

/// Seconds from a start to `end`; `None` for a job that never started.
fn run_time(start: Time, end: Time) -> Option<u64> {
    (start != 0).then(|| end.saturating_sub(start).max(0) as u64)
}
