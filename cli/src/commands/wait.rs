//! Waiting for a job to finish (`sbatch --wait`, `srun` outside an allocation), and the
//! exit status `sbatch --wait` gives.

use crate::calls::status_text;
use crate::client::Ctld;
use crate::jobs::job_state;
use proto::v1;

/// Polls the controller until the job (every task of an array) is final; gives the final
/// records. A job that vanished gives what was last seen.
pub async fn wait_for_job(client: &mut Ctld, job_id: u32) -> Result<Vec<v1::JobInfo>, String> {
    let mut delay_ms = 20u64;
    let mut last = Vec::new();
    loop {
        let req = v1::ListJobsRequest {
            filter: Some(v1::JobFilter {
                job_ids: vec![job_id.to_string()],
                ..Default::default()
            }),
            include_finished: true,
            ..Default::default()
        };
        match client.list_jobs(req).await {
            Ok(reply) => {
                let jobs = reply.into_inner().jobs;
                if let Some(j) = jobs.iter().find(|j| j.spec.is_none()) {
                    return Err(format!(
                        "job {} came without its spec from the controller",
                        j.job_id
                    ));
                }
                if jobs.is_empty() {
                    return Ok(last);
                }
                if jobs.iter().all(|j| job_state(j).is_final()) {
                    return Ok(jobs);
                }
                last = jobs;
            }
            Err(s) if s.code() == tonic::Code::Unavailable => {}
            Err(s) => return Err(status_text(&s)),
        }
        tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
        delay_ms = (delay_ms * 2).min(1000);
    }
}

/// `sbatch --wait`'s exit status: the highest over the job's records of the script's exit
/// code, 1 for one killed by a signal, and 1 for one that ended other than COMPLETED
/// without an exit code (cancelled while pending, node failure).
pub fn wait_exit_code(jobs: &[v1::JobInfo]) -> i32 {
    jobs.iter()
        .map(|j| {
            if j.exit_signal != 0 {
                1
            } else if j.exit_code != 0 {
                j.exit_code
            } else if job_state(j) == model::JobState::Completed {
                0
            } else {
                1
            }
        })
        .max()
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(state: v1::JobState, code: i32, sig: i32) -> v1::JobInfo {
        v1::JobInfo {
            state: state as i32,
            exit_code: code,
            exit_signal: sig,
            ..Default::default()
        }
    }

    #[test]
    fn wait_exit_codes_follow_sbatch() {
        assert_eq!(wait_exit_code(&[info(v1::JobState::Completed, 0, 0)]), 0);
        assert_eq!(wait_exit_code(&[info(v1::JobState::Failed, 7, 0)]), 7);
        assert_eq!(wait_exit_code(&[info(v1::JobState::Cancelled, 0, 9)]), 1);
        assert_eq!(wait_exit_code(&[info(v1::JobState::Cancelled, 0, 0)]), 1);
        let array = [
            info(v1::JobState::Completed, 0, 0),
            info(v1::JobState::Failed, 1, 0),
            info(v1::JobState::Failed, 2, 0),
        ];
        assert_eq!(wait_exit_code(&array), 2);
    }
}
