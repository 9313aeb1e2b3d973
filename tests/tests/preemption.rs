//! Preemption end to end: real daemons on loopback, driven through the CLI. On a
//! one-node cluster a `low` QOS job fills the node, then a `high` QOS job (which may
//! preempt `low`) arrives: the low job is cancelled (PREEMPTED), requeued (back to
//! PENDING, then runs again), or suspended (SUSPENDED, then RUNNING again), and a
//! GraceTime gives it SIGTERM before the kill. `scontrol suspend/resume` stop and
//! continue a job by hand.

use std::path::Path;
use std::time::Duration;
use tests::{Cluster, ClusterSpec, wait_until};

const T: Duration = Duration::from_secs(30);

/// A one-node, two-CPU cluster with QOS preemption; `low` gets `low_extra` lines.
fn cluster(low_extra: &str) -> Cluster {
    Cluster::start(ClusterSpec {
        nodes: 1,
        cpus: 2,
        gpus: 0,
        extra: format!(
            r#"
[scheduler]
preempt_type = "qos"
preempt_mode = "cancel"

[[qos]]
name = "low"
{low_extra}

[[qos]]
name = "high"
priority = 100
preempt = ["low"]
"#
        ),
        ..ClusterSpec::default()
    })
}

/// `squeue`'s long state of a job (`%T`).
fn squeue_state(c: &Cluster, id: u32) -> String {
    c.squeue_field(id, "%T")
}

/// The state letters (`R`, `S`, `T` for stopped, ...) of the processes of group `pgid`.
fn group_states(pgid: u32) -> Vec<char> {
    let mut states = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some(tail) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        // state ppid pgrp ...
        let fields: Vec<&str> = tail.split_whitespace().take(3).collect();
        if fields.len() == 3 && fields[2].parse() == Ok(pgid) {
            states.extend(fields[0].chars().next());
        }
    }
    states
}

/// The job whose batch shell is `shell` (its group leader) is stopped. A shell
/// stopped in the middle of a fork waits in `D` for its stopped child, so the check
/// is on the group: some process stopped and none running.
fn job_stopped(shell: u32) -> bool {
    let states = group_states(shell);
    states.contains(&'T') && !states.contains(&'R')
}

fn read_pid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[test]
fn cancel_ends_the_victim_preempted_and_runs_the_preemptor() {
    let c = cluster("");
    let low = c.sbatch(&["--qos=low", "-c", "2"], "sleep 300");
    c.wait_state(low, "RUNNING", T);
    let high = c.sbatch(&["--qos=high", "-c", "2"], "echo high");
    c.wait_state(low, "PREEMPTED", T);
    c.wait_state(high, "COMPLETED", T);
    let out = std::fs::read_to_string(c.work.join(format!("slurm-{high}.out"))).unwrap();
    assert_eq!(out, "high\n");
    // The preemptor started only once the victim was gone.
    assert!(c.field(high, "Start") >= c.field(low, "End"));
}

#[test]
fn requeue_sends_the_victim_back_to_pending_and_it_runs_again() {
    let c = cluster("preempt_mode = \"requeue\"");
    // The first run waits; the run after the requeue (SLURM_RESTART_COUNT set, as in
    // Slurm only then) finishes at once.
    let low = c.sbatch(
        &["--qos=low", "-c", "2"],
        "echo run ${SLURM_RESTART_COUNT:-0}\n[ -z \"$SLURM_RESTART_COUNT\" ] && sleep 300\ntrue",
    );
    c.wait_state(low, "RUNNING", T);
    let high = c.sbatch(&["--qos=high", "-c", "2"], "sleep 1");
    c.wait_state(high, "RUNNING", T);
    assert_eq!(
        squeue_state(&c, low),
        "PENDING",
        "{}\n{}",
        c.ok(&["scontrol", "show", "job"]),
        c.logs()
    );
    c.wait_state(high, "COMPLETED", T);
    c.wait_state(low, "COMPLETED", T);
    let show = c.ok(&["scontrol", "show", "job", &low.to_string()]);
    assert!(show.contains("Restarts=1"), "{show}");
    let out = std::fs::read_to_string(c.work.join(format!("slurm-{low}.out"))).unwrap();
    assert!(out.ends_with("run 1\n"), "{out}");
}

#[test]
fn suspend_stops_the_victim_and_resumes_it_when_the_preemptor_ends() {
    let c = cluster("preempt_mode = \"suspend\"");
    let pid_file = c.work.join("low.pid");
    let low = c.sbatch(
        &["--qos=low", "-c", "2"],
        &format!(
            "echo $$ > {}\nfor i in $(seq 1 30); do sleep 0.1; done\necho low done",
            pid_file.display()
        ),
    );
    c.wait_state(low, "RUNNING", T);
    assert!(wait_until(T, || read_pid(&pid_file).is_some()));
    let shell = read_pid(&pid_file).unwrap();
    let high = c.sbatch(&["--qos=high", "-c", "2"], "sleep 1");
    assert!(
        wait_until(T, || squeue_state(&c, low) == "SUSPENDED"),
        "{}",
        c.logs()
    );
    // The victim's processes are stopped while the preemptor runs on its CPUs.
    assert!(
        wait_until(T, || job_stopped(shell)),
        "states {:?}",
        group_states(shell)
    );
    c.wait_state(high, "RUNNING", T);
    c.wait_state(high, "COMPLETED", T);
    assert!(wait_until(T, || squeue_state(&c, low) == "RUNNING"));
    c.wait_state(low, "COMPLETED", T);
    let out = std::fs::read_to_string(c.work.join(format!("slurm-{low}.out"))).unwrap();
    assert_eq!(out, "low done\n");
    // The time it spent stopped (at least the preemptor's second) is not run time.
    let secs = |field: &str| {
        let raw = c.field(low, field);
        let parts: Vec<i64> = raw.split(':').map(|p| p.parse().unwrap()).collect();
        parts.iter().fold(0, |acc, p| acc * 60 + p)
    };
    let (suspended, elapsed) = (secs("Suspended"), secs("Elapsed"));
    assert!(suspended >= 1, "suspended {suspended}");
    let epoch = |field: &str| -> i64 {
        let out = std::process::Command::new("date")
            .args(["-d", &c.field(low, field), "+%s"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    };
    assert_eq!(elapsed + suspended, epoch("End") - epoch("Start"));
}

#[test]
fn grace_time_sends_sigterm_before_the_kill() {
    let c = cluster("grace_time = 2");
    let got_term = c.work.join("got-term");
    let low = c.sbatch(
        &["--qos=low", "-c", "2"],
        &format!(
            "trap 'echo term > {}' TERM\nwhile :; do sleep 0.1; done",
            got_term.display()
        ),
    );
    c.wait_state(low, "RUNNING", T);
    let high = c.sbatch(&["--qos=high", "-c", "2"], "true");
    assert!(wait_until(T, || got_term.exists()), "{}", c.logs());
    // The script caught the notice and runs on through its grace time.
    assert_eq!(squeue_state(&c, low), "RUNNING");
    assert_eq!(squeue_state(&c, high), "PENDING");
    c.wait_state(low, "PREEMPTED", T);
    c.wait_state(high, "COMPLETED", T);
}

#[test]
fn scontrol_suspends_and_resumes_a_job() {
    let c = cluster("");
    let pid_file = c.work.join("job.pid");
    let job = c.sbatch(
        &[],
        &format!(
            "echo $$ > {}\nfor i in $(seq 1 10); do sleep 0.1; done",
            pid_file.display()
        ),
    );
    c.wait_state(job, "RUNNING", T);
    assert!(wait_until(T, || read_pid(&pid_file).is_some()));
    let shell = read_pid(&pid_file).unwrap();
    c.ok(&["scontrol", "suspend", &job.to_string()]);
    assert_eq!(squeue_state(&c, job), "SUSPENDED");
    assert!(wait_until(T, || job_stopped(shell)));
    // Suspending twice is refused.
    let again = c.run(&["scontrol", "suspend", &job.to_string()]);
    assert!(!again.status.success());
    c.ok(&["scontrol", "resume", &job.to_string()]);
    assert_eq!(squeue_state(&c, job), "RUNNING");
    c.wait_state(job, "COMPLETED", T);
}
