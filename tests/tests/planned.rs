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
