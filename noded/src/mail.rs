//! Mail about jobs, as the controller asks for it (`NodeAgent.SendMail`): the site's
//! MailProg (`[node_daemon] mail_prog`, Slurm's MailProg; `/bin/mail` by default) run as
//! `MAILPROG -s SUBJECT USER`, with nothing on its stdin, as slurmctld runs it.
//!
//! For example `/bin/mail -s "Slurm Job_id=12 Name=train Began, Queued time 00:01:05"
//! ada`.

use std::time::Duration;

/// How long a MailProg may take before it is killed.
const MAIL_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `program -s subject user`; how it failed, if it did.
pub async fn send(program: &str, user: &str, subject: &str) -> Result<(), String> {
    let run = tokio::process::Command::new(program)
        .arg("-s")
        .arg(subject)
        .arg(user)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(MAIL_TIMEOUT, run).await {
        Err(_) => Err(format!("MailProg {program} timed out")),
        Ok(Err(e)) => Err(format!("cannot run MailProg {program}: {e}")),
        Ok(Ok(out)) if out.status.success() => Ok(()),
        Ok(Ok(out)) => Err(format!(
            "MailProg {program} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_program_gets_the_subject_and_the_user() {
        let dir = tempfile::tempdir().unwrap();
        let prog = dir.path().join("mail");
        let log = dir.path().join("log");
        std::fs::write(
            &prog,
            format!("#!/bin/sh\nprintf '%s|' \"$@\" > {}\n", log.display()),
        )
        .unwrap();
        std::fs::set_permissions(&prog, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        send(prog.to_str().unwrap(), "ada", "Slurm Job_id=1 Name=x Began")
            .await
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "-s|Slurm Job_id=1 Name=x Began|ada|"
        );
        let missing = send("/nonexistent/mail", "ada", "s").await.unwrap_err();
        assert!(
            missing.starts_with("cannot run MailProg /nonexistent/mail"),
            "{missing}"
        );
    }
}
