//! Advance reservations through the real CLI: created, shown, used with
//! `--reservation`, kept free of other jobs, and deleted.

use std::time::Duration;
use tests::{Cluster, ClusterSpec, wait_until};

const T: Duration = Duration::from_secs(30);

#[test]
fn reservations_keep_nodes_for_their_users() {
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        cpus: 1,
        ..ClusterSpec::default()
    });
    // `reservation=NAME`: the name's key shortened, as Slurm's scontrol takes it.
    let created = c.ok(&[
        "scontrol",
        "create",
        "reservation=maint",
        "StartTime=now",
        "Duration=60",
        "Nodes=tn1",
        "Users=root",
        "Flags=MAINT",
    ]);
    assert_eq!(created.trim(), "Reservation created: maint");
    let show = c.ok(&["scontrol", "show", "reservation"]);
    assert!(show.starts_with("ReservationName=maint "), "{show}");
    assert!(
        show.contains("Nodes=tn1 NodeCnt=1") && show.contains("State=ACTIVE"),
        "{show}"
    );
    let t = c.ok(&["sinfo", "-T"]);
    assert!(
        t.lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("maint") && l.trim_end().ends_with("tn1")),
        "{t}"
    );

    // Jobs outside the reservation only get tn2; inside it, only tn1.
    let outside: Vec<u32> = (0..2).map(|_| c.sbatch(&[], "sleep 1")).collect();
    let inside = c.sbatch(&["--reservation=maint"], "true");
    c.wait_state(inside, "COMPLETED", T);
    for id in outside {
        c.wait_state(id, "COMPLETED", T);
        let node = c.field(id, "NodeList");
        assert_eq!(node.trim(), "tn2");
    }
    let node = c.field(inside, "NodeList");
    assert_eq!(node.trim(), "tn1");

    // Several reservations: the job runs in one of them and keeps the list; one
    // unknown name refuses it.
    c.ok(&[
        "scontrol",
        "create",
        "reservation=spare",
        "StartTime=now",
        "Duration=60",
        "Nodes=tn2",
        "Users=root",
    ]);
    let either = c.sbatch(&["--reservation=maint,spare"], "true");
    c.wait_state(either, "COMPLETED", T);
    assert_eq!(c.field(either, "Reservation").trim(), "maint,spare");
    let bad = c.run(&["sbatch", "--reservation=maint,nope", "--wrap", "true"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("Requested reservation is invalid"));
    c.ok(&["scontrol", "delete", "ReservationName=spare"]);

    // Refusals: unknown reservation, busy nodes, no users.
    let bad = c.run(&["sbatch", "--reservation=nope", "--wrap", "true"]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("Requested reservation is invalid"));
    let busy = c.run(&[
        "scontrol",
        "create",
        "reservation",
        "StartTime=now",
        "Duration=10",
        "Nodes=tn1",
        "Users=root",
    ]);
    assert!(!busy.status.success());
    assert!(String::from_utf8_lossy(&busy.stderr).contains("Requested nodes are busy"));

    c.ok(&["scontrol", "delete", "ReservationName=maint"]);
    assert!(wait_until(T, || c
        .ok(&["scontrol", "show", "reservation"])
        .trim()
        == "No reservations in the system"));

    // REPLACE: the node its job takes is replaced by an idle one.
    c.ok(&[
        "scontrol",
        "create",
        "reservation=swap",
        "StartTime=now",
        "Duration=60",
        "NodeCnt=1",
        "Users=root",
        "Flags=REPLACE",
    ]);
    let nodes = || {
        let show = c.ok(&["scontrol", "show", "reservation=swap"]);
        assert!(show.contains("Flags=REPLACE"), "{show}");
        show.split_whitespace()
            .find_map(|w| w.strip_prefix("Nodes="))
            .unwrap_or_default()
            .to_string()
    };
    let before = nodes();
    let id = c.sbatch(&["--reservation=swap"], "sleep 60");
    c.wait_state(id, "RUNNING", T);
    assert_eq!(c.field(id, "NodeList").trim(), before);
    assert!(wait_until(T, || nodes() != before), "{}", nodes());
    c.ok(&["scancel", &id.to_string()]);
    c.ok(&["scontrol", "delete", "ReservationName=swap"]);
}
