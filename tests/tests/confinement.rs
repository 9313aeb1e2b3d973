//! Jobs confined in real cgroups on a real cluster (the tests run as root on hosts with
//! cgroups mounted): out-of-memory ends, and no process of a job outliving its cancel,
//! or its supervisor's `kill -9`.

use std::path::Path;
use std::time::Duration;
use tests::{Cluster, ClusterSpec, wait_until};

const T: Duration = Duration::from_secs(30);

fn one_node() -> Cluster {
    Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    })
}

/// True when `pid` has ended (a zombie waiting for its reaper has too).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn wait_pid_file(path: &Path) -> i32 {
    let mut pid = None;
    assert!(
        wait_until(T, || {
            pid = std::fs::read_to_string(path)
                .ok()
                .and_then(|s| s.trim().parse().ok());
            pid.is_some()
        }),
        "{} never written",
        path.display()
    );
    pid.unwrap()
}

// Double fork and a new session: out of the job's process group and session.
const DAEMONIZE: &str = "(setsid sh -c 'sleep 300 & echo $! > daemon.pid' &)";

#[test]
fn a_job_over_its_memory_is_out_of_memory_in_sacct() {
    let c = one_node();
    let id = c.sbatch(
        &["--mem=64M"],
        "head -c 300000000 /dev/zero | tail -n 1 > /dev/null",
    );
    c.wait_state(id, "OUT_OF_MEMORY", T);
    assert_eq!(c.field(id, "ExitCode"), "0:125");
    let out = std::fs::read_to_string(c.work.join(format!("slurm-{id}.out"))).unwrap();
    assert!(
        out.contains(&format!("oom-kill event(s) in StepId={id}.batch")),
        "{out}"
    );
}

#[test]
fn nothing_of_a_cancelled_job_survives() {
    let c = one_node();
    let id = c.sbatch(&[], &format!("{DAEMONIZE}\nsleep 300"));
    let pid = wait_pid_file(&c.work.join("daemon.pid"));
    c.ok(&["scancel", &id.to_string()]);
    c.wait_state(id, "CANCELLED", T);
    assert!(
        wait_until(T, || gone(pid)),
        "daemonized {pid} survived scancel"
    );
}

#[test]
fn a_killed_supervisors_job_is_killed_through_its_cgroup() {
    let c = one_node();
    let id = c.sbatch(&[], &format!("{DAEMONIZE}\nsleep 300"));
    let pid = wait_pid_file(&c.work.join("daemon.pid"));
    let job_dir = c.path().join(format!("state/noded-tn1/job.{id}"));
    let supervisor = wait_pid_file(&job_dir.join("supervisor.pid"));
    // SAFETY: a plain signal send to the supervisor this test's cluster started.
    unsafe { libc::kill(supervisor, libc::SIGKILL) };
    c.wait_state(id, "FAILED", T);
    assert!(
        wait_until(T, || gone(pid)),
        "daemonized {pid} survived its supervisor; logs:\n{}",
        c.logs()
    );
    let cgroups = tests::cgroup_dirs(&format!("{}/tn1/job_{id}", tests::cgroup_prefix(c.path())));
    assert!(cgroups.is_empty(), "left behind: {cgroups:?}");
}
