//! The site's scripts on a real cluster (`[node_daemon]`): a prolog that fails requeues
//! the job and drains the node ("Prolog error"); prolog and epilog run as root with the
//! job's variables; a failing health check drains its node with what it said; the
//! MailProg mails about jobs as `--mail-type` asks.

use std::time::Duration;
use tests::{Cluster, ClusterSpec, wait_until};

const T: Duration = Duration::from_secs(30);

fn script(dir: &std::path::Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path.display().to_string()
}

#[test]
fn prolog_epilog_and_health_check_act_on_jobs_and_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let prolog = script(
        dir.path(),
        "prolog",
        &format!(
            "[ \"$SLURMD_NODENAME\" = tn1 ] && exit 1\n\
             echo \"$SLURM_SCRIPT_CONTEXT $SLURM_JOB_ID $SLURM_JOB_USER $(id -u)\" >> {d}/prolog.log"
        ),
    );
    let epilog = script(
        dir.path(),
        "epilog",
        &format!("echo \"$SLURM_SCRIPT_CONTEXT $SLURM_JOB_ID\" >> {d}/epilog.log"),
    );
    let check = script(
        dir.path(),
        "check",
        &format!(
            "[ \"$SLURMD_NODENAME\" = tn3 ] && [ -e {d}/broken ] && \
             {{ echo 'ERROR: /scratch is not mounted'; exit 1; }}\nexit 0"
        ),
    );
    let c = Cluster::start(ClusterSpec {
        extra: format!(
            "[node_daemon]\nprolog = \"{prolog}\"\nepilog = \"{epilog}\"\n\
             health_check_program = \"{check}\"\nhealth_check_interval_s = 1\n"
        ),
        ..ClusterSpec::default()
    });
    // tn1's prolog fails: the job is requeued and tn1 drained.
    let id = c.sbatch(&["-w", "tn1"], "echo ran");
    assert!(
        wait_until(T, || c
            .ok(&["sinfo", "-R", "-h", "-o", "%n|%E"])
            .contains("tn1|Prolog error")),
        "tn1 not drained; logs:\n{}",
        c.logs()
    );
    assert!(wait_until(T, || c.squeue_field(id, "%T") == "PENDING"));
    let show = c.ok(&["scontrol", "show", "job", &id.to_string()]);
    assert!(show.contains("Restarts=1"), "{show}");
    // On tn2 both scripts run, as root, with the job's variables.
    let ok = c.sbatch(&["-w", "tn2"], "echo ran");
    c.wait_state(ok, "COMPLETED", T);
    let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap_or_default();
    assert!(wait_until(T, || read("epilog.log")
        .contains(&format!("epilog_slurmd {ok}"))));
    assert!(
        read("prolog.log").contains(&format!("prolog_slurmd {ok} root 0")),
        "{}",
        read("prolog.log")
    );
    // tn3's health check starts failing: tn3 is drained with what it said.
    std::fs::write(dir.path().join("broken"), "").unwrap();
    assert!(
        wait_until(T, || c
            .ok(&["sinfo", "-R", "-h", "-o", "%n|%E"])
            .contains("tn3|ERROR: /scratch is not mounted")),
        "tn3 not drained; logs:\n{}",
        c.logs()
    );
}

#[test]
fn mail_types_run_the_sites_mail_prog_with_slurms_subjects() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    // One line per mail: its arguments.
    let mail = script(
        dir.path(),
        "mail",
        &format!("printf '%s|' \"$@\" >> {d}/mail.log\necho >> {d}/mail.log"),
    );
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        extra: format!("[node_daemon]\nmail_prog = \"{mail}\"\n"),
        ..ClusterSpec::default()
    });
    let ok = c.sbatch(
        &[
            "--mail-type=BEGIN,END",
            "--mail-user=ada@example.org",
            "-J",
            "train",
        ],
        "true",
    );
    c.wait_state(ok, "COMPLETED", T);
    let bad = c.sbatch(&["--mail-type=FAIL", "-J", "bad"], "exit 3");
    c.wait_state(bad, "FAILED", T);
    let quiet = c.sbatch(&["--mail-type=FAIL", "-J", "quiet"], "true");
    c.wait_state(quiet, "COMPLETED", T);
    let log = dir.path().join("mail.log");
    let mut lines = Vec::new();
    assert!(
        wait_until(T, || {
            lines = std::fs::read_to_string(&log)
                .unwrap_or_default()
                .lines()
                .map(String::from)
                .collect();
            lines.len() >= 3
        }),
        "{lines:?}; logs:\n{}",
        c.logs()
    );
    lines.sort();
    let user = std::env::var("USER").unwrap_or_else(|_| "root".into());
    let mut want = vec![
        format!("-s|Slurm Job_id={ok} Name=train Began, Queued time 00:00:00|ada@example.org|"),
        format!(
            "-s|Slurm Job_id={ok} Name=train Ended, Run time 00:00:00, COMPLETED, ExitCode 0|ada@example.org|"
        ),
        format!(
            "-s|Slurm Job_id={bad} Name=bad Failed, Run time 00:00:00, FAILED, ExitCode 3|{user}|"
        ),
    ];
    want.sort();
    // Times are whole seconds: a job may straddle one.
    let blur = |l: &str| l.replace("00:00:01", "00:00:00");
    assert_eq!(lines.iter().map(|l| blur(l)).collect::<Vec<_>>(), want);
    // A bad mail type is refused at submit, with Slurm's words.
    let out = c.run(&["sbatch", "--mail-type=BOGUS", "--wrap=true"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "sbatch: error: Invalid --mail-type specification\n"
    );
}
