//! Crash safety: what the controller acknowledged survives `kill -9`, jobs survive a
//! restart of their node daemon, and jobs on a node that vanished end as NODE_FAIL or
//! are requeued.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tests::{Cluster, ClusterSpec, wait_until};

const T: Duration = Duration::from_secs(30);

#[test]
fn acknowledged_submits_survive_controller_kill() {
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        cpus: 2,
        ..ClusterSpec::default()
    });
    let ran = c.work.join("ran.log");
    let script = c.work.join("storm.sh");
    // Each run appends its id once; a job that ran twice would show up twice.
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho $SLURM_JOB_ID >> {}\n", ran.display()),
    )
    .unwrap();
    let acked: Arc<Mutex<Vec<u32>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    std::thread::scope(|s| {
        for _ in 0..6 {
            let (acked, stop, c, script) = (acked.clone(), stop.clone(), &c, &script);
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let out = c.run(&["sbatch", "--parsable", script.to_str().unwrap()]);
                    if out.status.success() {
                        let id = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
                        acked.lock().unwrap().push(id);
                    }
                }
            });
        }
        assert!(wait_until(T, || acked.lock().unwrap().len() >= 40));
        // Kill while submits are in flight (the threads keep going).
        c.kill_ctld();
        stop.store(true, Ordering::Relaxed);
    });
    let acked = acked.lock().unwrap().clone();
    c.start_ctld();
    let last = *acked.iter().max().unwrap();
    for id in &acked {
        let script_text = c.ok(&["scontrol", "write", "batch_script", &id.to_string(), "-"]);
        assert!(
            script_text.contains("echo $SLURM_JOB_ID"),
            "job {id} lost its script: `{script_text}`"
        );
    }
    // Every acknowledged job completes, and none ran twice.
    let all_done = wait_until(Duration::from_secs(90), || {
        let out = c.ok(&["squeue", "-h", "-o", "%i"]);
        out.trim().is_empty()
    });
    assert!(all_done, "{}", c.ok(&["squeue"]));
    let mut runs: BTreeMap<u32, usize> = BTreeMap::new();
    for line in std::fs::read_to_string(&ran).unwrap().lines() {
        *runs.entry(line.trim().parse().unwrap()).or_default() += 1;
    }
    for id in &acked {
        let state = c.state(*id);
        assert!(
            state == "COMPLETED" || state == "NODE_FAIL",
            "job {id} ended {state} after the restart"
        );
        if state == "COMPLETED" {
            assert_eq!(
                runs.get(id),
                Some(&1),
                "job {id} ran {:?} times",
                runs.get(id)
            );
        }
    }
    assert!(runs.values().all(|n| *n == 1), "a job ran twice: {runs:?}");
    assert!(last >= acked.len() as u32);
}

#[test]
fn jobs_survive_a_node_daemon_restart() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    let gate = c.work.join("gate");
    let id = c.sbatch(
        &["-o", "survivor.out"],
        &format!(
            "touch {}.started; while [ ! -e {} ]; do sleep 0.1; done; echo finished",
            gate.display(),
            gate.display()
        ),
    );
    c.wait_state(id, "RUNNING", T);
    let started = c.work.join("gate.started");
    assert!(wait_until(T, || started.exists()));
    c.kill_node(0);
    c.start_node(0);
    assert!(
        wait_until(T, || c.ok(&["sinfo", "-h", "-N", "-o", "%T"]).trim()
            == "mixed"),
        "{}",
        c.logs()
    );
    std::fs::write(&gate, "").unwrap();
    c.wait_state(id, "COMPLETED", T);
    assert_eq!(
        std::fs::read_to_string(c.work.join("survivor.out"))
            .unwrap()
            .trim(),
        "finished"
    );
    // While the controller is down, commands fail in Slurm's words and submit nothing.
    c.kill_ctld();
    let down = c.run(&["sbatch", "--wrap", "true"]);
    assert_eq!(down.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&down.stderr).trim(),
        "sbatch: error: Batch job submission failed: \
         Unable to contact slurm controller (connect failure)"
    );
    let down = c.run(&["squeue"]);
    assert_eq!(down.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&down.stderr).trim(),
        "squeue: error: Unable to contact slurm controller (connect failure)"
    );
    // The controller restarting changes nothing for finished and new jobs.
    c.start_ctld();
    assert_eq!(c.state(id), "COMPLETED");
    let next = c.sbatch(&[], "true");
    assert!(next > id);
    c.wait_state(next, "COMPLETED", T);
}

#[test]
fn a_vanished_node_fails_or_requeues_its_jobs() {
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        cpus: 1,
        node_timeout_s: 2,
        ..ClusterSpec::default()
    });
    let plain = c.sbatch(&["-w", "tn1"], "sleep 300");
    let requeue = c.sbatch(
        &["--requeue", "-o", "rq-%j.out", "--open-mode=append"],
        "echo on-$SLURMD_NODENAME; sleep 300",
    );
    c.wait_state(plain, "RUNNING", T);
    c.wait_state(requeue, "RUNNING", T);
    let node_of = |id: u32| c.field(id, "NodeList").trim().to_string();
    assert_eq!(node_of(plain), "tn1");
    assert_eq!(node_of(requeue), "tn2");
    // tn2's daemon dies with its jobs.
    c.kill_node(1);
    tests::kill_processes_under(&c.path().join("state").join("noded-tn2"));
    assert!(wait_until(T, || c
        .ok(&["sinfo", "-h", "-N", "-n", "tn2", "-o", "%T"])
        .trim()
        .starts_with("down")));
    // The requeued job waits for a CPU (tn1 is busy), then runs there once it frees.
    assert!(
        wait_until(T, || c.state(requeue) == "PENDING"),
        "{}",
        c.state(requeue)
    );
    c.ok(&["scancel", &plain.to_string()]);
    c.wait_state(requeue, "RUNNING", T);
    assert_eq!(node_of(requeue), "tn1");
    let out = c.work.join(format!("rq-{requeue}.out"));
    assert!(wait_until(T, || std::fs::read_to_string(&out)
        .unwrap_or_default()
        .contains("on-tn1")));
    // A job that did not ask for requeue ends NODE_FAIL when its node vanishes.
    c.start_node(1);
    assert!(wait_until(T, || c
        .ok(&["sinfo", "-h", "-N", "-n", "tn2", "-o", "%T"])
        .trim()
        == "idle"));
    // Wait for the script itself to run: a node lost while the launch is still in
    // flight is a launch failure (requeued), not a node failure.
    let started = c.work.join("doomed.started");
    let doomed = c.sbatch(
        &["-w", "tn2"],
        &format!("touch {}; sleep 300", started.display()),
    );
    c.wait_state(doomed, "RUNNING", T);
    assert!(wait_until(T, || started.exists()));
    c.kill_node(1);
    tests::kill_processes_under(&c.path().join("state").join("noded-tn2"));
    c.wait_state(doomed, "NODE_FAIL", T);
    c.ok(&["scancel", &requeue.to_string()]);
}
