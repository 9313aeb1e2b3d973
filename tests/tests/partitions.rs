//! Partitions made at run time through the real CLI: created, used by a job,
//! refused deletion while a job is in it, kept over a controller restart, and
//! deleted for good; a config partition put back by `scontrol reconfigure`; srun's
//! words for a job that waits in a partition that is down.

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

    // `scontrol reconfigure` puts the config's partition back as the file defines it,
    // and a restart then finds no run-time record of it.
    let default_time = || {
        let show = c.ok(&["scontrol", "show", "partition", "debug"]);
        let field = show
            .split_whitespace()
            .find(|w| w.starts_with("DefaultTime="));
        field.unwrap_or_default().to_string()
    };
    c.ok(&["scontrol", "update", "PartitionName=debug", "DefaultTime=5"]);
    assert_eq!(default_time(), "DefaultTime=00:05:00");
    c.ok(&["scontrol", "reconfigure"]);
    assert_eq!(default_time(), "DefaultTime=00:10:00");
    c.kill_ctld();
    c.start_ctld();
    assert!(wait_until(T, || c
        .run(&["scontrol", "ping"])
        .status
        .success()));
    assert_eq!(default_time(), "DefaultTime=00:10:00");
}

#[test]
fn a_job_of_two_partitions_runs_in_the_one_with_room_and_a_pending_one_lists_both() {
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        cpus: 1,
        ..ClusterSpec::default()
    });
    c.ok(&[
        "scontrol",
        "create",
        "partition=one",
        "Nodes=tn1",
        "Priority=1",
    ]);
    c.ok(&[
        "scontrol",
        "create",
        "partition=two",
        "Nodes=tn2",
        "Priority=2",
    ]);
    // tn1 is busy until the gate file exists.
    let gate = c.path().join("gate");
    let blocker = c.sbatch(
        &["-p", "one"],
        &format!("while [ ! -e {} ]; do sleep 0.1; done", gate.display()),
    );
    c.wait_state(blocker, "RUNNING", T);

    let both = c.sbatch(&["-p", "one,two"], "true");
    c.wait_state(both, "COMPLETED", T);
    assert_eq!(c.field(both, "NodeList"), "tn2");
    assert_eq!(c.field(both, "Partition"), "two");

    // Held, it waits in either: listings show both, `squeue -P` one row for each,
    // in the order of their tiers, and the list outlives a restart.
    let held = c.sbatch(&["-p", "two,one", "-H"], "true");
    let id = held.to_string();
    assert_eq!(c.squeue_field(held, "%P"), "two,one");
    let show = c.ok(&["scontrol", "show", "job", &id]);
    assert!(show.contains("Partition=two,one "), "{show}");
    let rows = c.ok(&["squeue", "-P", "-S", "p", "-h", "-j", &id, "-o", "%P"]);
    assert_eq!(rows, "one\ntwo\n");
    let in_one = c.ok(&["squeue", "-h", "-p", "one", "-t", "PD", "-o", "%i"]);
    assert_eq!(in_one.trim(), id);
    c.kill_ctld();
    c.start_ctld();
    assert!(wait_until(T, || c
        .run(&["squeue", "-h", "-j", &id, "-o", "%P"])
        .stdout
        == b"two,one\n"));
    // Released while tn1 is still busy, it starts in `two`, its first.
    c.ok(&["scontrol", "release", &id]);
    c.wait_state(held, "COMPLETED", T);
    assert_eq!(c.field(held, "Partition"), "two");
    std::fs::write(&gate, "").unwrap();
    c.wait_state(blocker, "COMPLETED", T);
}

/// srun into a partition that is down says so and that its job waits, as Slurm's; once
/// the partition is up, that the job got its allocation.
#[test]
fn srun_in_a_down_partition_says_why_it_waits_and_when_it_got_its_allocation() {
    use std::io::Read;
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    c.ok(&["scontrol", "update", "PartitionName=debug", "State=DOWN"]);
    let mut srun = c
        .command("srun")
        .args(["-p", "debug", "true"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("srun");
    // Its stderr as it comes, read on a thread of its own.
    let said = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let mut pipe = srun.stderr.take().expect("stderr");
    let reader = {
        let said = said.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 256];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                said.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        })
    };
    let waiting = |text: &str| text.contains("queued and waiting for resources");
    assert!(
        wait_until(T, || waiting(&said.lock().unwrap())),
        "{}",
        said.lock().unwrap()
    );
    c.ok(&["scontrol", "update", "PartitionName=debug", "State=UP"]);
    let mut status = None;
    assert!(
        wait_until(T, || {
            status = srun.try_wait().expect("srun");
            status.is_some()
        }),
        "srun did not end: {}",
        said.lock().unwrap()
    );
    reader.join().unwrap();
    let said = said.lock().unwrap().clone();
    assert!(status.is_some_and(|s| s.success()), "{said}");
    let lines: Vec<&str> = said.lines().collect();
    let at = |line: &str| lines.iter().position(|l| l.ends_with(line));
    let (down, queued, allocated) = (
        at("srun: Partition in DOWN state"),
        at("queued and waiting for resources"),
        at("has been allocated resources"),
    );
    assert!(
        down.is_some() && down < queued && queued < allocated,
        "{said}"
    );
    assert!(
        !said.contains("Pending job allocation"),
        "salloc's word: {said}"
    );
}
