//! Partitions made at run time through the real CLI: created, used by a job,
//! refused deletion while a job is in it, kept over a controller restart, and
//! deleted for good.

use std::time::Duration;
use tests::{Cluster, ClusterSpec, wait_until};

const T: Duration = Duration::from_secs(30);

#[test]
fn a_partition_made_at_run_time_runs_jobs_and_outlives_a_restart_until_deleted() {
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        cpus: 1,
        ..ClusterSpec::default()
    });
    c.ok(&[
        "scontrol",
        "create",
        "partition=extra",
        "Nodes=tn2",
        "MaxTime=30",
    ]);
    let show = c.ok(&["scontrol", "show", "partition", "extra"]);
    assert!(show.starts_with("PartitionName=extra"), "{show}");
    assert!(show.contains("Nodes=tn2"), "{show}");
    let sinfo = c.ok(&["sinfo", "-h", "-p", "extra", "-o", "%P %N"]);
    assert_eq!(sinfo.trim(), "extra tn2");

    let bad = c.run(&["scontrol", "create", "PartitionName=extra", "Nodes=tn1"]);
    assert!(!bad.status.success());
    let bad = c.run(&["scontrol", "update", "PartitionName=extra", "Color=red"]);
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr).lines().next(),
        Some("Update of this parameter is not supported: Color=red")
    );

    let done = c.sbatch(&["-p", "extra"], "true");
    c.wait_state(done, "COMPLETED", T);
    assert_eq!(c.field(done, "NodeList").trim(), "tn2");

    // A job in it holds it.
    let held = c.sbatch(&["-p", "extra", "-H"], "true");
    let busy = c.run(&["scontrol", "delete", "partition=extra"]);
    assert!(!busy.status.success());
    assert!(
        String::from_utf8_lossy(&busy.stderr).contains("Partition is in use"),
        "{busy:?}"
    );
    c.ok(&["scancel", &held.to_string()]);
    c.wait_state(held, "CANCELLED", T);

    c.kill_ctld();
    c.start_ctld();
    assert!(wait_until(T, || c
        .run(&["scontrol", "show", "partition", "extra"])
        .status
        .success()));

    c.ok(&["scontrol", "delete", "partition=extra"]);
    c.kill_ctld();
    c.start_ctld();
    assert!(wait_until(T, || {
        let out = c.run(&["scontrol", "show", "partition", "extra"]);
        String::from_utf8_lossy(&out.stdout).contains("Partition extra not found")
    }));
}
