//! Trigger programs, as the controller asks for them (`NodeAgent.RunTrigger`): a fired
//! `strigger` trigger's program run as the trigger's owner, with the node list or job
//! id as its one argument, nothing on its stdin and its output discarded, as
//! slurmctld runs it. It may run for at most a minute and is then killed.

use crate::user::RunAs;
use std::time::Duration;

/// How long a trigger program may take before it is killed.
const TRIGGER_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `program argument` as `user`; how it failed, if it did.
pub async fn run(program: &str, argument: &str, user: RunAs) -> Result<(), String> {
    let mut command = tokio::process::Command::new(program);
    command
        .arg(argument)
        .current_dir(if user.home.is_empty() {
            "/"
        } else {
            &user.home
        })
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    // SAFETY: the closure only makes the id system calls of `RunAs::enter`, which are
    // async-signal-safe, on memory allocated before the fork.
    unsafe {
        command.pre_exec(move || user.enter().map_err(std::io::Error::from));
    }
    let run = command.status();
    match tokio::time::timeout(TRIGGER_TIMEOUT, run).await {
        Err(_) => Err(format!("trigger program {program} timed out")),
        Ok(Err(e)) => Err(format!("cannot run trigger program {program}: {e}")),
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(format!("trigger program {program} failed ({status})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_program_gets_its_argument_as_the_daemons_user() {
        let dir = tempfile::tempdir().unwrap();
        let prog = dir.path().join("trig");
        let log = dir.path().join("log");
        std::fs::write(
            &prog,
            format!("#!/bin/sh\nprintf '%s|' \"$@\" > {}\n", log.display()),
        )
        .unwrap();
        std::fs::set_permissions(&prog, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let me = nix::unistd::Uid::effective().as_raw();
        let gid = nix::unistd::Gid::effective().as_raw();
        let user = RunAs::for_job(me, gid, &[]).unwrap();
        run(prog.to_str().unwrap(), "node[1-2]", user.clone())
            .await
            .unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "node[1-2]|");
        let missing = run("/nonexistent/trig", "1", user).await.unwrap_err();
        assert!(
            missing.starts_with("cannot run trigger program /nonexistent/trig"),
            "{missing}"
        );
    }
}
