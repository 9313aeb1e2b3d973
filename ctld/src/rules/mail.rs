//! Mail about jobs (`--mail-type`): the events of a turn that mail a job's user, each
//! an effect for a node daemon, which runs the site's MailProg (`noded`'s `mail_prog`:
//! only node daemons start processes). A job's mail goes through its batch node while
//! that node answers, else through the first node that does.
//!
//! Worked example: job 12 (`--mail-type=BEGIN,END`, user ada) submitted at 100 starts
//! on n1 at 165: `JobStarted` gives `Mail { n1, ada, "Slurm Job_id=12 Name=train Began,
//! Queued time 00:01:05" }`; it completes at 168: `JobEnded` gives `Mail { n1, ada,
//! "Slurm Job_id=12 Name=train Ended, Run time 00:00:03, COMPLETED, ExitCode 0" }`.

use super::{Effect, batch_node};
use model::mail::JobMail;
use model::{ClusterState, Event, NodeHealth};

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
    let job = state.job(job_id)?;
    if !job.spec.mail_types.contains(&mail.wanted_by()) {
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
        subject: mail.subject(&job.display_id(), &job.spec.name),
    })
}

/// Seconds from a start (0: it never started) to `end`.
fn run_time(start: model::Time, end: model::Time) -> u64 {
    if start == 0 {
        0
    } else {
        end.saturating_sub(start).max(0) as u64
    }
}
