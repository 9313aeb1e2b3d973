//! The site's health check (`[node_daemon] health_check_program`, Slurm's
//! HealthCheckProgram): run as root when the daemon starts and every
//! `health_check_interval_s`; while it fails, every heartbeat carries what it said, and
//! the controller drains the node with that as the reason (`sinfo -R`). A check that
//! succeeds again clears the verdict; the drain stays until an admin resumes the node,
//! as Slurm's does.
//!
//! For example, a check that prints `ERROR: /scratch is not mounted` and exits 1 drains
//! the node with the reason `ERROR: /scratch is not mounted`.

use std::sync::Mutex;
use std::time::Duration;
use tracing::{info, warn};

/// How long one check may run before it counts as failed.
const CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// The latest verdict: empty while healthy (or never checked).
#[derive(Debug, Default)]
pub struct Health {
    unhealthy: Mutex<String>,
}

impl Health {
    /// What the failing check said; empty when healthy.
    pub fn unhealthy(&self) -> String {
        self.unhealthy
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn set(&self, verdict: String) {
        *self.unhealthy.lock().unwrap_or_else(|e| e.into_inner()) = verdict;
    }
}

/// Runs the check now and then every `interval` (`None`: only now), with
/// `SLURMD_NODENAME` set to this node's name.
pub async fn run(
    program: String,
    node: String,
    interval: Option<Duration>,
    health: std::sync::Arc<Health>,
) {
    loop {
        let verdict = check(&program, &node).await;
        if verdict.is_empty() {
            if !health.unhealthy().is_empty() {
                info!(program, "health check passes again");
            }
        } else {
            warn!(program, %verdict, "health check failed");
        }
        health.set(verdict);
        match interval {
            Some(every) => tokio::time::sleep(every).await,
            None => return,
        }
    }
}

/// One run of the check: empty when it succeeds, else what it said (its first line of
/// output), or how it failed.
pub async fn check(program: &str, node: &str) -> String {
    let run = tokio::process::Command::new(program)
        .env("SLURMD_NODENAME", node)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(CHECK_TIMEOUT, run).await {
        Err(_) => format!("health check {program} timed out"),
        Ok(Err(e)) => format!("cannot run health check {program}: {e}"),
        Ok(Ok(out)) if out.status.success() => String::new(),
        Ok(Ok(out)) => {
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            text.lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(str::to_string)
                .unwrap_or_else(|| format!("health check {program} failed: {}", out.status))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_failing_check_says_its_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad");
        std::fs::write(
            &bad,
            "#!/bin/sh\necho\necho 'ERROR: /scratch is not mounted'\nexit 1\n",
        )
        .unwrap();
        let good = dir.path().join("good");
        std::fs::write(&good, "#!/bin/sh\necho all fine\n").unwrap();
        for p in [&bad, &good] {
            std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o755))
                .unwrap();
        }
        assert_eq!(
            check(bad.to_str().unwrap(), "n1").await,
            "ERROR: /scratch is not mounted"
        );
        assert_eq!(check(good.to_str().unwrap(), "n1").await, "");
        assert!(
            check("/nonexistent/nhc", "n1")
                .await
                .starts_with("cannot run health check")
        );
    }
}
