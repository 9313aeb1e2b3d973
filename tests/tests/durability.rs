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
    // None ends NODE_FAIL: a launch the crash cut off is sent again.
    for id in &acked {
        let state = c.state(*id);
        assert_eq!(state, "COMPLETED", "job {id} after the restart");
        assert_eq!(
            runs.get(id),
            Some(&1),
            "job {id} ran {:?} times",
            runs.get(id)
        );
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
        // No --requeue: JobRequeue=1 (Slurm's default) requeues it.
        &["-o", "rq-%j.out", "--open-mode=append"],
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
    // Back, tn2 stays DOWN until an admin resumes it (ReturnToService=0, Slurm's
    // default): its daemon registers, but no job is placed there.
    c.start_node(1);
    let registered = c.path().join("log").join("tn2.log");
    assert!(wait_until(T, || std::fs::read_to_string(&registered)
        .unwrap_or_default()
        .matches("registered with the controller")
        .count()
        >= 2));
    let state = c.ok(&["sinfo", "-h", "-N", "-n", "tn2", "-o", "%T"]);
    assert!(state.trim().starts_with("down"), "{state}");
    c.ok(&["scontrol", "update", "nodename=tn2", "state=resume"]);
    assert!(wait_until(T, || c
        .ok(&["sinfo", "-h", "-N", "-n", "tn2", "-o", "%T"])
        .trim()
        == "idle"));
    // A job that said --no-requeue ends NODE_FAIL when its node vanishes.
    // Wait for the script itself to run: a node lost while the launch is still in
    // flight is a launch failure (requeued), not a node failure.
    let started = c.work.join("doomed.started");
    let doomed = c.sbatch(
        &["-w", "tn2", "--no-requeue"],
        &format!("touch {}; sleep 300", started.display()),
    );
    c.wait_state(doomed, "RUNNING", T);
    assert!(wait_until(T, || started.exists()));
    c.kill_node(1);
    tests::kill_processes_under(&c.path().join("state").join("noded-tn2"));
    c.wait_state(doomed, "NODE_FAIL", T);
    c.ok(&["scancel", &requeue.to_string()]);
}

/// What a job's script records of itself: a file `<id>.<run>.pid` holding its shell's
/// pid once it runs (`run` is `SLURM_RESTART_COUNT`, which Slurm sets from the first
/// restart on); it then runs until killed.
fn endless(dir: &std::path::Path) -> String {
    format!(
        "f={dir}/$SLURM_JOB_ID.${{SLURM_RESTART_COUNT:-0}}.pid; \
         echo $$ > $f.tmp; mv $f.tmp $f; \
         while :; do sleep 0.1; done",
        dir = dir.display()
    )
}

/// The pid of run `run` of job `id` once it runs (see `endless`).
fn pid_of(c: &Cluster, id: u32, run: u32) -> u32 {
    let file = c.work.join(format!("{id}.{run}.pid"));
    assert!(
        wait_until(T, || file.exists()),
        "run {run} of job {id} did not start; logs:\n{}",
        c.logs()
    );
    std::fs::read_to_string(&file)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// The state letter of a process (`T`: stopped), `None` once it is gone.
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let state = stat[stat.rfind(')')? + 1..].split_whitespace().next()?;
    state.chars().next().filter(|s| *s != 'Z')
}

/// Where the controller dies, relative to an order's commit.
#[derive(Debug, Clone, Copy)]
enum Crash {
    /// `kill -9` as soon as the command has its answer.
    KillAfterAnswer,
    /// A fault point: committed, not answered, nothing told to the node.
    AfterCommit,
    /// A fault point: committed and answered, nothing told to the node.
    AfterAck,
}

/// Runs `command` against a controller that crashes at `crash`, then starts a healthy
/// one and waits for the nodes to register with it.
fn with_crash(c: &Cluster, crash: Crash, command: &[&str]) {
    let point = match crash {
        Crash::KillAfterAnswer => None,
        Crash::AfterCommit => Some("after-commit"),
        Crash::AfterAck => Some("after-ack"),
    };
    if let Some(point) = point {
        c.kill_ctld();
        c.start_ctld_with(&[("FAILPOINTS", &format!("{point}=return"))]);
        c.wait_nodes_up();
    }
    let out = c.run(command);
    match crash {
        // Not answered: the command fails, but the change was made durable.
        Crash::AfterCommit => assert!(!out.status.success(), "{out:?}"),
        _ => assert!(out.status.success(), "{command:?}: {out:?}"),
    }
    match point {
        Some(_) => assert!(
            c.wait_ctld_exit(T),
            "the controller did not stop at {crash:?}; logs:\n{}",
            c.logs()
        ),
        None => c.kill_ctld(),
    }
    c.start_ctld();
    c.wait_nodes_up();
}

#[test]
fn acknowledged_cancels_and_requeues_survive_a_controller_crash_at_any_point() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        // The requeued job runs again at once rather than after Slurm's delay.
        controller_extra: "requeue_delay_s = 0\n".into(),
        ..ClusterSpec::default()
    });
    for crash in [Crash::KillAfterAnswer, Crash::AfterCommit, Crash::AfterAck] {
        // A cancel: the job is killed and ends CANCELLED.
        let id = c.sbatch(&["-o", "/dev/null"], &endless(&c.work));
        let pid = pid_of(&c, id, 0);
        with_crash(&c, crash, &["scancel", &id.to_string()]);
        c.wait_state(id, "CANCELLED", T);
        assert!(
            wait_until(T, || process_state(pid).is_none()),
            "{crash:?}: job {id} still runs after its cancel"
        );
        // A requeue: the run is killed and the job runs again.
        let id = c.sbatch(&["-o", "/dev/null"], &endless(&c.work));
        let first = pid_of(&c, id, 0);
        with_crash(&c, crash, &["scontrol", "requeue", &id.to_string()]);
        let second = pid_of(&c, id, 1);
        assert!(
            wait_until(T, || process_state(first).is_none()),
            "{crash:?}: the first run of job {id} still runs"
        );
        assert!(process_state(second).is_some());
        assert_eq!(c.field(id, "Restarts"), "1", "{crash:?}");
        c.ok(&["scancel", &id.to_string()]);
        c.wait_state(id, "CANCELLED", T);
    }
}

#[test]
fn a_panic_in_the_state_owner_stops_the_controller_and_loses_nothing_acknowledged() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    let kept = c.sbatch(&["--hold", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    c.kill_ctld();
    c.start_ctld_with(&[("FAILPOINTS", "submit-panics=return")]);
    c.wait_nodes_up();
    let out = c.run(&["sbatch", "--hold", "--wrap", "true"]);
    assert!(!out.status.success(), "{out:?}");
    // Not a controller that reads on and refuses every write: it is gone.
    assert!(
        c.wait_ctld_exit(T),
        "the controller still runs after its state owner panicked; logs:\n{}",
        c.logs()
    );
    let log = std::fs::read_to_string(c.path().join("log/ctld.log")).unwrap();
    assert!(log.contains("the state owner ended"), "{log}");
    c.start_ctld();
    c.wait_nodes_up();
    assert_eq!(c.state(kept), "PENDING");
    let next = c.sbatch(&["--hold", "-o", "/dev/null"], "#!/bin/sh\ntrue\n");
    assert_eq!(next, kept + 1, "the refused submit took no id");
}

#[test]
fn an_acknowledged_suspend_and_resume_reach_the_node_after_a_crash() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    let id = c.sbatch(&["-o", "/dev/null"], &endless(&c.work));
    let pid = pid_of(&c, id, 0);
    with_crash(
        &c,
        Crash::AfterAck,
        &["scontrol", "suspend", &id.to_string()],
    );
    assert!(
        wait_until(T, || process_state(pid) == Some('T')),
        "job {id} was not stopped; logs:\n{}",
        c.logs()
    );
    assert_eq!(c.state(id), "SUSPENDED");
    with_crash(
        &c,
        Crash::AfterAck,
        &["scontrol", "resume", &id.to_string()],
    );
    assert!(
        wait_until(T, || matches!(process_state(pid), Some('S' | 'R'))),
        "job {id} was not continued"
    );
    c.ok(&["scancel", &id.to_string()]);
    c.wait_state(id, "CANCELLED", T);
}

#[test]
fn a_launch_lost_with_a_crash_is_sent_again_and_the_job_runs_once() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    let ran = c.work.join("ran.log");
    c.kill_ctld();
    // The pass that starts the job is committed; the controller dies before the node
    // hears of it.
    c.start_ctld_with(&[("FAILPOINTS", "after-ack=return")]);
    c.wait_nodes_up();
    let id = c.sbatch(&[], &format!("echo $SLURM_JOB_ID >> {}", ran.display()));
    assert!(
        c.wait_ctld_exit(T),
        "no crash at the launch; logs:\n{}",
        c.logs()
    );
    c.start_ctld();
    c.wait_state(id, "COMPLETED", T);
    let text = std::fs::read_to_string(&ran).unwrap();
    assert_eq!(text.lines().collect::<Vec<_>>(), [id.to_string()]);
    assert!(
        c.logs()
            .contains("launch not confirmed by the node; sending it again"),
        "{}",
        c.logs()
    );
}

#[test]
fn a_full_state_disk_refuses_writes_serves_reads_and_loses_nothing() {
    // The controller's reserve is set 512 MB below the free space of the disk its state
    // is on; a 1 GB file then takes the room, and deleting it gives the room back.
    let probe = tempfile::tempdir().unwrap();
    let stat = nix::sys::statvfs::statvfs(probe.path()).unwrap();
    let free_mb = (stat.blocks_available() as u64 * stat.fragment_size() as u64) >> 20;
    assert!(free_mb > 2048, "the test needs 2 GB free, has {free_mb} MB");
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        controller_extra: format!("state_min_free_mb = {}", free_mb - 512),
        ..ClusterSpec::default()
    });
    let held = c.sbatch(&["--hold"], "true");
    let gate = c.work.join("gate");
    let running = c.sbatch(
        &[],
        &format!("while [ ! -e {} ]; do sleep 0.05; done", gate.display()),
    );
    c.wait_state(running, "RUNNING", T);

    let filler = c.path().join("filler");
    let file = std::fs::File::create(&filler).unwrap();
    nix::fcntl::posix_fallocate(&file, 0, 1 << 30).unwrap();
    // Writes are refused in clear words and change nothing...
    let refused = c.run(&["sbatch", "--wrap", "true"]);
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("state store full"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let cancel = c.run(&["scancel", &held.to_string()]);
    assert!(
        String::from_utf8_lossy(&cancel.stderr).contains("state store full"),
        "{cancel:?}"
    );
    // ...reads go on...
    assert_eq!(c.state(held), "PENDING");
    assert!(
        c.ok(&["squeue", "-h", "-o", "%i"])
            .contains(&running.to_string())
    );
    // ...and the end of a job while the disk is full is kept by its node until it can
    // be recorded.
    std::fs::write(&gate, "").unwrap();
    let end = c
        .path()
        .join("state/noded-tn1")
        .join(format!("job.{running}/status.json"));
    assert!(wait_until(T, || end.exists()), "{}", c.logs());
    assert_eq!(c.state(running), "RUNNING");

    drop(file);
    std::fs::remove_file(&filler).unwrap();
    let next = c.sbatch(&[], "true");
    assert_eq!(next, running + 1, "the refused submit took no id");
    c.wait_state(running, "COMPLETED", T);
    c.wait_state(next, "COMPLETED", T);
    c.ok(&["scancel", &held.to_string()]);
    // Nothing is lost across a crash either.
    c.kill_ctld();
    c.start_ctld();
    assert_eq!(c.state(running), "COMPLETED");
    assert_eq!(c.state(next), "COMPLETED");
    assert!(c.state(held).starts_with("CANCELLED"));
    assert_eq!(c.state(next + 1), "");
    assert!(c.logs().contains("state store full"));
}
