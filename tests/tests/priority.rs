//! Priority, fair share and limits end to end: real daemons on loopback, driven through
//! the CLI (`sbatch`, `squeue`, `drover sprio`, `drover sshare`).

use std::time::Duration;
use tests::{Cluster, ClusterSpec, wait_until};

const T: Duration = Duration::from_secs(30);

/// `squeue`'s reason for a job (empty once it left the queue).
fn reason(c: &Cluster, id: u32) -> String {
    c.squeue_field(id, "%r")
}

#[test]
fn limits_hold_jobs_with_their_reason_and_bad_accounts_are_refused() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        extra: r#"
[[qos]]
name = "normal"
max_jobs_per_user = 1
[[qos]]
name = "wide"
[[accounts]]
name = "ml"
users = ["root"]
qos = ["normal", "wide"]
[[accounts]]
name = "physics"
users = ["nobody-here"]
"#
        .into(),
        ..ClusterSpec::default()
    });
    let first = c.sbatch(&["-J", "first"], "sleep 30");
    c.wait_state(first, "RUNNING", T);
    let second = c.sbatch(&["-J", "second"], "true");
    assert!(
        wait_until(T, || reason(&c, second) == "QOSMaxJobsPerUserLimit"),
        "reason `{}`",
        reason(&c, second)
    );
    // The job got the user's default account and QOS.
    let acct = c.ok(&["squeue", "-h", "-j", &second.to_string(), "-o", "%a %q"]);
    assert_eq!(acct.trim(), "ml normal");
    // Another QOS without the limit is not held.
    let wide = c.sbatch(&["--qos=wide"], "true");
    c.wait_state(wide, "COMPLETED", T);
    c.ok(&["scancel", &first.to_string()]);
    c.wait_state(second, "COMPLETED", T);

    for (args, want) in [
        (
            vec!["-A", "physics"],
            "Invalid account or account/partition combination specified",
        ),
        (vec!["-A", "nope"], "Invalid account"),
        (vec!["--qos=gold"], "Invalid qos specification"),
    ] {
        let script = c.work.join("refused.sh");
        std::fs::write(&script, "#!/bin/sh\ntrue\n").unwrap();
        let mut argv = vec!["sbatch"];
        argv.extend(args.iter().copied());
        let path = script.display().to_string();
        argv.push(&path);
        let out = c.run(&argv);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{argv:?}");
        assert!(err.contains(want), "{argv:?}: {err}");
    }
}

#[test]
fn fair_share_orders_the_queue_and_usage_survives_a_restart() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        cpus: 1,
        extra: r#"
[priority]
weight_fairshare = 10000
[[accounts]]
name = "a"
users = ["root"]
[[accounts]]
name = "b"
users = ["root"]
"#
        .into(),
        ..ClusterSpec::default()
    });
    // Account a uses the only CPU; then one job of each account waits.
    let busy = c.sbatch(&["-A", "a", "-J", "busy"], "sleep 4");
    c.wait_state(busy, "RUNNING", T);
    let from_a = c.sbatch(&["-A", "a"], "sleep 2");
    let from_b = c.sbatch(&["-A", "b"], "sleep 2");
    // b has used nothing: its job ranks first although submitted last (once a's usage,
    // counted in whole seconds, is above 0).
    let mut prio = String::new();
    wait_until(T, || {
        prio = c.ok(&["drover", "sprio", "-h", "-o", "%i %Y %F"]);
        prio.contains(" 5000 ")
    });
    let lines: Vec<Vec<&str>> = prio
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines.len(), 2, "{prio}");
    assert_eq!(
        lines[0],
        vec![from_a.to_string().as_str(), "5000", "5000"],
        "{prio}"
    );
    assert_eq!(
        lines[1],
        vec![from_b.to_string().as_str(), "10000", "10000"],
        "{prio}"
    );
    let q = c.ok(&["squeue", "-h", "-t", "pd", "-o", "%i %Q"]);
    assert!(q.contains(&format!("{from_b} 10000")), "{q}");
    let weights = c.ok(&["drover", "sprio", "-w", "-h"]);
    assert!(
        weights.contains("Weights") && weights.contains("10000"),
        "{weights}"
    );

    c.wait_state(from_a, "COMPLETED", T);
    let start = |id: u32| {
        c.ok(&[
            "sacct",
            "-n",
            "-X",
            "-P",
            "-o",
            "Start",
            "-j",
            &id.to_string(),
        ])
        .trim()
        .to_string()
    };
    assert!(
        start(from_b) < start(from_a),
        "b {} a {}",
        start(from_b),
        start(from_a)
    );

    // Usage was charged to both associations; it is kept over a restart.
    let usage = |c: &Cluster| -> Vec<(String, String, u64)> {
        c.ok(&[
            "drover",
            "sshare",
            "-a",
            "-n",
            "-P",
            "-o",
            "Account,User,RawUsage",
        ])
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            (
                f[0].trim().to_string(),
                f[1].to_string(),
                f[2].parse().unwrap_or(0),
            )
        })
        .collect()
    };
    let before = usage(&c);
    let used = |rows: &[(String, String, u64)], account: &str| {
        rows.iter()
            .find(|(a, u, _)| a == account && u == "root")
            .map(|r| r.2)
            .unwrap_or(0)
    };
    assert!(used(&before, "a") >= 4, "{before:?}");
    assert!(used(&before, "b") >= 1, "{before:?}");
    c.kill_ctld();
    c.start_ctld();
    let mut after = Vec::new();
    assert!(wait_until(T, || {
        let out = c.run(&[
            "drover",
            "sshare",
            "-a",
            "-n",
            "-P",
            "-o",
            "Account,User,RawUsage",
        ]);
        if !out.status.success() {
            return false;
        }
        after = usage(&c);
        true
    }));
    assert_eq!(used(&after, "a"), used(&before, "a"), "{after:?}");
}
