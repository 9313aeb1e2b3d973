//! `drover why JOBID`: why a job waits and when it should start — every blocker the
//! scheduler sees, with numbers, and the event expected to clear it.

use crate::calls;
use crate::client;
use crate::jobs;
use crate::times;
use proto::v1;
use std::process::ExitCode;

pub fn run(args: &[String]) -> ExitCode {
    const USAGE: &str = "usage: drover why JOBID\n\nWhy a pending job does not start: every blocker, with numbers, and\nwhen it is expected to clear.\n";
    if matches!(args, [a] if a == "-h" || a == "--help") {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let [id] = args else {
        eprint!("{USAGE}");
        return ExitCode::from(2);
    };
    let Ok(job_id) = id.parse::<u32>() else {
        eprintln!("drover why: invalid job id `{id}`");
        return ExitCode::from(2);
    };
    let rt = client::runtime();
    let reply = match calls::query(&rt, "drover why", |mut c| async move {
        Ok(c.explain_job(v1::ExplainJobRequest { job_id })
            .await?
            .into_inner())
    }) {
        Ok(r) => r,
        Err(code) => return code,
    };
    print!("{}", render(&reply));
    ExitCode::SUCCESS
}

/// The explanation as text: a headline, then one line a blocker.
pub fn render(reply: &v1::ExplainJobReply) -> String {
    let Some(job) = &reply.job else {
        return String::new();
    };
    let state = jobs::job_state(job);
    let mut out = format!("job {} is {}", job.job_id, state.name());
    if state == model::JobState::Pending {
        out.push_str(&format!(" ({})", job.reason));
    }
    out.push('\n');
    for b in &reply.blockers {
        // Unix times in the text read better as local times.
        let text = b.text.split(' ').map(|w| match w.parse::<i64>() {
            Ok(t) if t > 1_000_000_000 => times::format_time(t),
            _ => w.to_string(),
        });
        out.push_str(&format!("- {}\n", text.collect::<Vec<_>>().join(" ")));
    }
    if state == model::JobState::Pending && reply.blockers.is_empty() {
        out.push_str("- nothing blocks it: it should start at the next scheduling pass\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_blockers() {
        let reply = v1::ExplainJobReply {
            job: Some(v1::JobInfo {
                job_id: 7,
                reason: "Resources".into(),
                ..Default::default()
            }),
            blockers: vec![v1::Blocker {
                text: "needs 1 node(s) with 4 CPUs".into(),
                clears_at: 0,
            }],
        };
        assert_eq!(
            render(&reply),
            "job 7 is PENDING (Resources)\n- needs 1 node(s) with 4 CPUs\n"
        );
    }
}
