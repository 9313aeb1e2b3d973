//! Planned starts end to end: a job that waits for busy nodes gets a planned start and
//! the nodes it is planned on, and `squeue --start`, `squeue -o %Y` and
//! `scontrol show job` show them as Slurm does (SCHEDNODES, SchedNodeList).

use std::time::Duration;
use tests::{Cluster, ClusterSpec, wait_until};

const T: Duration = Duration::from_secs(30);

#[test]
fn a_waiting_job_shows_its_planned_nodes() {
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        cpus: 1,
        gpus: 0,
        ..ClusterSpec::default()
    });
    let busy = c.sbatch(&["-t", "5"], "sleep 60");
    c.wait_state(busy, "RUNNING", T);
    // Two nodes: it waits for the busy one, and is planned on both.
    let wide = c.sbatch(&["-N", "2", "-t", "1"], "true");
    let wide_id = wide.to_string();
    let sched_nodes = || c.ok(&["squeue", "-h", "-j", &wide_id, "-o", "%Y"]);
    assert!(
        wait_until(T, || sched_nodes().trim() == "tn[1-2]"),
        "SCHEDNODES `{}`",
        sched_nodes().trim()
    );

    let start = c.ok(&["squeue", "--start"]);
    let lines: Vec<&str> = start.lines().collect();
    assert_eq!(lines.len(), 2, "{start}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        [
            "JOBID",
            "PARTITION",
            "NAME",
            "USER",
            "ST",
            "START_TIME",
            "NODES",
            "SCHEDNODES",
            "NODELIST(REASON)"
        ],
        "{start}"
    );
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(row[0], wide_id, "{start}");
    assert_eq!(row[4], "PD", "{start}");
    assert_ne!(row[5], "N/A", "a planned start: {start}");
    assert_eq!(&row[6..], ["2", "tn[1-2]", "(Resources)"], "{start}");

    let show = c.ok(&["scontrol", "show", "job", &wide_id]);
    assert!(show.contains(" SchedNodeList=tn[1-2]"), "{show}");

    // Once it runs, nothing is planned any more.
    c.ok(&["scancel", &busy.to_string()]);
    c.wait_state(wide, "COMPLETED", T);
    let show = c.ok(&["scontrol", "show", "job", &wide_id]);
    assert!(!show.contains("SchedNodeList"), "{show}");
}

#[test]
fn sbatch_test_only_on_a_busy_cluster_names_the_planned_start_and_nodes() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        cpus: 1,
        gpus: 0,
        ..ClusterSpec::default()
    });
    let busy = c.sbatch(&["-t", "5"], "sleep 60");
    c.wait_state(busy, "RUNNING", T);
    let out = c.run(&["sbatch", "--test-only", "-t", "1", "--wrap", "true"]);
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    // "sbatch: Job 2 to start at 2026-12-02T10:40:00 using 1 processors on nodes tn1
    // in partition debug": five minutes after the busy job started, not "Unknown".
    assert!(said.starts_with("sbatch: Job "), "{said}");
    assert!(!said.contains("Unknown"), "{said}");
    assert!(said.contains(" on nodes tn1 in partition "), "{said}");
    let start = c.ok(&["squeue", "-h", "-j", &busy.to_string(), "-o", "%S"]);
    let limit_end = c.ok(&["squeue", "-h", "-j", &busy.to_string(), "-o", "%e"]);
    assert!(
        said.contains(&format!("to start at {} ", limit_end.trim())),
        "{said} (busy job started {}, ends {})",
        start.trim(),
        limit_end.trim()
    );
    // Nothing was queued.
    assert_eq!(c.ok(&["squeue", "-h", "-o", "%i"]).trim(), busy.to_string());
}
