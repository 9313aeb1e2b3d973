//! Mail about jobs (`--mail-type`): the events of a turn that mail a job's user, and
//! the time-limit shares a tick passes, each an effect for a node daemon, which runs
//! the site's MailProg (`noded`'s `mail_prog`: only node daemons start processes). A
//! job's mail goes through its batch node while that node answers, else through the
//! first node that does. An array's tasks mail one by one with ARRAY_TASKS; without
//! it, as Slurm's, the array mails once when its first task begins and once when its
//! last one ends (`Slurm Array Summary Job_id=7_* (7) ...`).
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
    let job_id = match *event {
        Event::JobStarted { job_id, .. }
        | Event::JobEnded { job_id, .. }
        | Event::JobRequeued { job_id, .. } => job_id,
        _ => return None,
    };
    let job = state.job(job_id)?;
    let types = &job.spec.mail_types;
    if types.is_empty() {
        return None;
    }
    // An array task without ARRAY_TASKS mails only its array's summary; the array's
    // records are looked over only when it asked for one.
    let summarised = job.array_task_id.is_some() && !types.contains(&MailType::ArrayTasks);
    let asks = |wanted: &[MailType]| wanted.iter().any(|t| types.contains(t));
    let mail = match *event {
        Event::JobStarted { time, .. } if summarised => {
            if !asks(&[MailType::Begin]) {
                return None;
            }
            array_began(state, job, time)?
        }
        Event::JobEnded {
            state: end,
            exit_code,
            exit_signal,
            ..
        } if summarised => {
            if !asks(&[MailType::End, MailType::Fail]) {
                return None;
            }
            array_ended(state, job, end, exit_code, exit_signal)?
        }
        _ if summarised => return None,
        Event::JobStarted { time, .. } => JobMail::Began {
            queued: time.saturating_sub(job.submit_time).max(0) as u64,
        },
        Event::JobEnded {
            state: end,
            exit_code,
            exit_signal,
            time,
            ..
        } => JobMail::Ended {
            run: run_time(job.start_time, time),
            state: end,
            exit_code: (exit_signal == 0).then_some(exit_code),
        },
        Event::JobRequeued { time, .. } => JobMail::Requeued {
            run: run_time(job.start_time, time),
        },
        _ => return None,
    };
    mail_for(state, job, mail)
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

/// The other records of `task`'s array: its tasks and its pending rest.
fn array_mates<'s>(state: &'s ClusterState, task: &'s Job) -> impl Iterator<Item = &'s Job> {
    state
        .jobs
        .values()
        .map(|j| j.as_ref())
        .filter(move |j| j.array_job_id == task.array_job_id && j.id != task.id)
}

/// The array's summary mail for `task` starting at `time`: when no other task of it
/// began before (of tasks starting together, the lowest id's).
fn array_began(state: &ClusterState, task: &Job, time: Time) -> Option<JobMail> {
    let earlier = array_mates(state, task).any(|j| {
        j.start_time != 0 && (j.start_time < time || (j.start_time == time && j.id < task.id))
    });
    (!earlier).then_some(JobMail::ArrayBegan)
}

/// The array's summary mail for `task` ending in `end`: when none of it is left to
/// run, with the least and highest exit code of its tasks.
fn array_ended(
    state: &ClusterState,
    task: &Job,
    end: JobState,
    exit_code: i32,
    exit_signal: i32,
) -> Option<JobMail> {
    let mates: Vec<&Job> = array_mates(state, task).collect();
    let left = mates
        .iter()
        .any(|j| !j.state.is_final() || !j.pending_tasks.is_empty());
    if left {
        return None;
    }
    let ends = mates
        .iter()
        .filter(|j| j.array_task_id.is_some())
        .map(|j| (j.state, j.exit_code, j.exit_signal))
        .chain([(end, exit_code, exit_signal)]);
    let (mut exit_min, mut exit_max, mut failed) = (i32::MAX, i32::MIN, false);
    for (state, code, signal) in ends {
        failed |= !matches!(state, JobState::Completed | JobState::Cancelled);
        if signal == 0 {
            exit_min = exit_min.min(code);
            exit_max = exit_max.max(code);
        }
    }
    if exit_min > exit_max {
        (exit_min, exit_max) = (0, 0);
    }
    Some(JobMail::ArrayEnded {
        state: end,
        exit_min,
        exit_max,
        failed,
    })
}

/// `mail` about the job `job_id`, when it asked for it (as `mail_for`).
pub fn for_mail(state: &ClusterState, job_id: model::JobId, mail: JobMail) -> Option<Effect> {
    mail_for(state, state.job(job_id)?, mail)
}

/// `mail` about `job`, when the job asked for it: an array's tasks their own only with
/// ARRAY_TASKS, and the array's summary only without.
fn mail_for(state: &ClusterState, job: &Job, mail: JobMail) -> Option<Effect> {
    let types = &job.spec.mail_types;
    let summary = matches!(mail, JobMail::ArrayBegan | JobMail::ArrayEnded { .. });
    let per_task = job.array_task_id.is_some() && !summary;
    if !mail.asked_by(types) || (per_task && !types.contains(&MailType::ArrayTasks)) {
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
