//! Waiting for a job to finish (`sbatch --wait`, `srun` outside an allocation), and the
//! exit status `sbatch --wait` gives.
//!
//! A controller that restarts or closes the connection (GOAWAY) leaves the command's
//! connection failed for good (`crate::connection`), so the wait connects again, and
//! gives up once the controller has been unreachable for [`PATIENCE`] in a row.

use crate::calls::{self, CONNECT_FAILURE, status_text};
use crate::client::Ctld;
use crate::exit::Exit;
use crate::jobs::{check_records, job_state};
use proto::v1;
use std::future::Future;
use std::time::Duration;

/// How long the controller may stay unreachable, in a row, before the wait gives up.
pub const PATIENCE: Duration = Duration::from_secs(300);

/// Polls the controller until the job (every task of an array) is final; gives the final
/// records. A job that vanished gives what was last seen. Failures are `command`'s.
pub async fn wait_for_job(
    command: &str,
    client: &mut Ctld,
    job_id: u32,
) -> Result<Vec<v1::JobInfo>, Exit> {
    wait_reconnecting(command, client, job_id, PATIENCE, calls::connect).await
}

/// [`wait_for_job`], connecting again with `reconnect` after a call fails as
/// unavailable, for at most `patience` without an answer.
async fn wait_reconnecting<F, Fut>(
    command: &str,
    client: &mut Ctld,
    job_id: u32,
    patience: Duration,
    mut reconnect: F,
) -> Result<Vec<v1::JobInfo>, Exit>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Ctld, String>>,
{
    let mut delay_ms = 20u64;
    let mut last = Vec::new();
    let mut unreachable_since = None;
    loop {
        let req = calls::one_job(job_id);
        match client.list_jobs(req).await {
            Ok(reply) => {
                unreachable_since = None;
                let jobs = reply.into_inner().jobs;
                check_records(command, &jobs)?;
                if jobs.is_empty() {
                    return Ok(last);
                }
                if jobs.iter().all(|j| job_state(j).is_final()) {
                    return Ok(jobs);
                }
                last = jobs;
            }
            Err(s) if s.code() == tonic::Code::Unavailable => {
                let since = *unreachable_since.get_or_insert_with(tokio::time::Instant::now);
                if since.elapsed() >= patience {
                    return Err(Exit::error(
                        command,
                        format!(
                            "{CONNECT_FAILURE}: gave up waiting for job {job_id} after {} s",
                            patience.as_secs()
                        ),
                    ));
                }
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                delay_ms = (delay_ms * 2).min(1000);
                // A failed connect leaves the old client, whose next call fails at once.
                if let Ok(fresh) = reconnect().await {
                    *client = fresh;
                }
                continue;
            }
            Err(s) => return Err(Exit::error(command, status_text(&s))),
        }
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
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
    use crate::connection::{Connection, Deadlines};
    use crate::testkit::serve_h2;
    use prost::Message;
    use proto::v1::ctld_client::CtldClient;
    use std::sync::atomic::{AtomicUsize, Ordering};

    async fn open(addr: &str) -> Result<Ctld, String> {
        let connection = Connection::open(addr, Deadlines::COMMAND, None)
            .await
            .map_err(|e| e.to_string())?;
        Ok(CtldClient::with_origin(
            crate::testkit::signed(connection),
            "http://controller".parse().unwrap(),
        ))
    }

    #[test]
    fn a_closed_connection_is_opened_again() {
        // The first connection is closed at once, as by a restarting controller.
        let (addr, server) = serve_h2(1, |path, _| {
            assert_eq!(path, "/drover.v1.Ctld/ListJobs");
            let done = v1::JobInfo {
                job_id: 12,
                spec: Some(v1::JobSpec::default()),
                ..info(v1::JobState::Failed, 3, 0)
            };
            vec![
                v1::ListJobsReply {
                    jobs: vec![done],
                    ..Default::default()
                }
                .encode_to_vec(),
            ]
        });
        let connects = AtomicUsize::new(0);
        let jobs = crate::client::runtime().block_on(async {
            let mut client = open(&addr).await.unwrap();
            wait_reconnecting("sbatch", &mut client, 12, PATIENCE, || {
                connects.fetch_add(1, Ordering::Relaxed);
                open(&addr)
            })
            .await
        });
        let jobs = jobs.unwrap();
        assert_eq!(connects.load(Ordering::Relaxed), 1);
        assert_eq!((jobs.len(), wait_exit_code(&jobs)), (1, 3));
        server.join().unwrap();
    }

    #[test]
    fn an_unreachable_controller_is_given_up_in_one_line() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        // Accepted and closed at once; nothing listens after it.
        let server = std::thread::spawn(move || drop(listener.accept().unwrap()));
        let connects = AtomicUsize::new(0);
        let patience = Duration::from_millis(100);
        let e = crate::client::runtime().block_on(async {
            let mut client = open(&addr).await.unwrap();
            wait_reconnecting("sbatch", &mut client, 12, patience, || {
                connects.fetch_add(1, Ordering::Relaxed);
                async { Err("refused".to_string()) }
            })
            .await
            .unwrap_err()
        });
        assert!(connects.load(Ordering::Relaxed) >= 1);
        assert_eq!(
            e.lines(),
            [format!(
                "sbatch: error: {CONNECT_FAILURE}: gave up waiting for job 12 after 0 s"
            )]
        );
        server.join().unwrap();
    }

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
