//! Preemption end to end: real daemons on loopback, driven through the CLI. On a
//! one-node cluster a `low` QOS job fills the node, then a `high` QOS job (which may
//! preempt `low`) arrives: the low job is cancelled (PREEMPTED), requeued (back to
//! PENDING, then runs again), or suspended (SUSPENDED, then RUNNING again), and a
//! GraceTime gives it SIGTERM before the kill. `scontrol suspend/resume` stop and
//! continue a job by hand.
//!
//! Jobs that must be running at some point write `<name>.started` and wait for a
//! `<name>.gate` the test creates (`Gate`), so that no job has to outlast a window of
//! time on a busy machine: the preemptor of the suspend test, say, runs until the test
//! has seen the victim stopped and suspended for a second, then is let go. The one wait
//! on the clock is a lower bound: the grace time test watches its victim run on for
//! two seconds, which a slower machine only makes longer.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
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

/// A job's gate: the job writes its shell's pid to `<name>.started` once it runs, then
/// waits until the test creates `<name>.gate`. Waits are gated on these files, so no
/// job has to outlast a window of time on a busy machine.
struct Gate {
    started: PathBuf,
    gate: PathBuf,
}

impl Gate {
    fn new(c: &Cluster, name: &str) -> Gate {
        Gate {
            started: c.work.join(format!("{name}.started")),
            gate: c.work.join(format!("{name}.gate")),
        }
    }

    /// The script's lines that announce the start and wait for the gate.
    fn script(&self) -> String {
        format!(
            "echo $$ > {}\nwhile [ ! -e {} ]; do sleep 0.1; done",
            self.started.display(),
            self.gate.display()
        )
    }

    /// Waits until the job started; returns its batch shell's pid.
    fn wait_started(&self, c: &Cluster) -> u32 {
        let mut pid = None;
        let started = wait_until(T, || {
            pid = read_pid(&self.started);
            pid.is_some()
        });
        assert!(
            started,
            "{} is missing; logs:\n{}",
            self.started.display(),
            c.logs()
        );
        pid.unwrap()
    }

    fn open(&self) {
        std::fs::write(&self.gate, "").unwrap();
    }
}

fn read_pid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// A duration as sacct writes it (`Elapsed`, `Suspended`: `[hh:]mm:ss`), in seconds.
fn seconds(elapsed: &str) -> i64 {
    elapsed
        .split(':')
        .map(|p| p.parse::<i64>().unwrap())
        .fold(0, |acc, p| acc * 60 + p)
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
    let high_gate = Gate::new(&c, "high");
    let high = c.sbatch(&["--qos=high", "-c", "2"], &high_gate.script());
    // While the preemptor holds the node, the requeued victim waits.
    high_gate.wait_started(&c);
    c.wait_state(high, "RUNNING", T);
    assert_eq!(
        squeue_state(&c, low),
        "PENDING",
        "{}\n{}",
        c.ok(&["scontrol", "show", "job"]),
        c.logs()
    );
    high_gate.open();
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
    let low_gate = Gate::new(&c, "low");
    let low = c.sbatch(
        &["--qos=low", "-c", "2"],
        &format!("{}\necho low done", low_gate.script()),
    );
    let shell = low_gate.wait_started(&c);
    let high_gate = Gate::new(&c, "high");
    let high = c.sbatch(&["--qos=high", "-c", "2"], &high_gate.script());
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
    high_gate.wait_started(&c);
    c.wait_state(high, "RUNNING", T);
    assert_eq!(squeue_state(&c, low), "SUSPENDED");
    // sacct counts the suspension in progress: hold the preemptor until it is a second.
    assert!(wait_until(T, || seconds(&c.field(low, "Suspended")) >= 1));
    high_gate.open();
    c.wait_state(high, "COMPLETED", T);
    assert!(wait_until(T, || squeue_state(&c, low) == "RUNNING"));
    low_gate.open();
    c.wait_state(low, "COMPLETED", T);
    let out = std::fs::read_to_string(c.work.join(format!("slurm-{low}.out"))).unwrap();
    assert_eq!(out, "low done\n");
    // The time it spent stopped (at least a second) is not run time.
    let (suspended, elapsed) = (
        seconds(&c.field(low, "Suspended")),
        seconds(&c.field(low, "Elapsed")),
    );
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
fn grace_time_sends_sigterm_and_the_victim_runs_on_until_it_ends() {
    // A grace time no test run reaches: the victim ends by itself, when the test lets it.
    let c = cluster("grace_time = 300");
    let got_term = c.work.join("got-term");
    let low_gate = Gate::new(&c, "low");
    let low = c.sbatch(
        &["--qos=low", "-c", "2"],
        &format!(
            "trap 'echo term >> {}' TERM\n{}\necho ended by itself",
            got_term.display(),
            low_gate.script()
        ),
    );
    low_gate.wait_started(&c);
    let high = c.sbatch(&["--qos=high", "-c", "2"], "true");
    assert!(wait_until(T, || got_term.exists()), "{}", c.logs());
    // The script caught the notice and runs on through its grace time, while the
    // preemptor waits. Nothing else reaches it: two seconds later (two of the
    // controller's ticks, where a grace time over ends in a kill) it still runs and
    // has had one SIGTERM. A slower machine only watches longer.
    let noticed = Instant::now();
    assert!(wait_until(T, || {
        assert_eq!(squeue_state(&c, low), "RUNNING");
        assert_eq!(squeue_state(&c, high), "PENDING");
        noticed.elapsed() >= Duration::from_secs(2)
    }));
    assert_eq!(std::fs::read_to_string(&got_term).unwrap(), "term\n");
    low_gate.open();
    // Ending inside its grace time (not killed), the victim still ends preempted.
    c.wait_state(low, "PREEMPTED", T);
    let out = std::fs::read_to_string(c.work.join(format!("slurm-{low}.out"))).unwrap();
    assert!(out.ends_with("ended by itself\n"), "{out}");
    c.wait_state(high, "COMPLETED", T);
    assert!(c.field(high, "Start") >= c.field(low, "End"));
}

#[test]
fn a_victim_that_outlasts_its_grace_time_is_killed() {
    let c = cluster("grace_time = 1");
    let low_gate = Gate::new(&c, "low");
    // The script ignores SIGTERM and waits for a gate the test never opens.
    let low = c.sbatch(
        &["--qos=low", "-c", "2"],
        &format!("trap '' TERM\n{}", low_gate.script()),
    );
    low_gate.wait_started(&c);
    let high = c.sbatch(&["--qos=high", "-c", "2"], "true");
    c.wait_state(low, "PREEMPTED", T);
    c.wait_state(high, "COMPLETED", T);
    assert!(c.field(high, "Start") >= c.field(low, "End"));
}

#[test]
fn scontrol_suspends_and_resumes_a_job() {
    let c = cluster("");
    let gate = Gate::new(&c, "job");
    let job = c.sbatch(&[], &gate.script());
    let shell = gate.wait_started(&c);
    c.ok(&["scontrol", "suspend", &job.to_string()]);
    assert_eq!(squeue_state(&c, job), "SUSPENDED");
    assert!(wait_until(T, || job_stopped(shell)));
    // Suspending twice is refused.
    let again = c.run(&["scontrol", "suspend", &job.to_string()]);
    assert!(!again.status.success());
    c.ok(&["scontrol", "resume", &job.to_string()]);
    assert_eq!(squeue_state(&c, job), "RUNNING");
    gate.open();
    c.wait_state(job, "COMPLETED", T);
}

/// Guaranteed quota on a busy cluster: `owner` is guaranteed both GPUs of the node,
/// `guest` nothing. The guest's job borrows them while the owner is idle (and `drover
/// why` says so); the owner's job takes them back (the guest's job is requeued, no
/// PreemptType needed), and the guest's job runs again once the owner's has ended.
#[test]
fn an_accounts_guaranteed_gpus_are_lent_while_idle_and_reclaimed_for_its_jobs() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        cpus: 4,
        gpus: 2,
        extra:
            "[[accounts]]\nname = \"owner\"\nusers = [\"root\"]\nguaranteed_tres = \"gres/gpu=2\"\n\
                [[accounts]]\nname = \"guest\"\nusers = [\"root\"]\n"
                .into(),
        ..ClusterSpec::default()
    });
    // The first run waits; the run after the requeue finishes at once.
    let guest = c.sbatch(
        &["-A", "guest", "--gpus=2"],
        "echo run ${SLURM_RESTART_COUNT:-0}\n[ -z \"$SLURM_RESTART_COUNT\" ] && sleep 300\ntrue",
    );
    c.wait_state(guest, "RUNNING", T);
    let why = c.ok(&["drover", "why", &guest.to_string()]);
    assert!(
        why.contains("runs on borrowed gres/gpu") && why.contains("idle guaranteed quota of owner"),
        "{why}"
    );
    // scontrol and squeue mark it too.
    let detail = c.ok(&["scontrol", "show", "job", &guest.to_string()]);
    assert!(detail.contains("\n   Borrowed=gres/gpu=2\n"), "{detail}");
    let marked = c.ok(&[
        "squeue",
        "-h",
        "-j",
        &guest.to_string(),
        "-O",
        "jobid,borrowed",
    ]);
    assert_eq!(
        marked.split_whitespace().collect::<Vec<_>>(),
        [guest.to_string().as_str(), "gres/gpu=2"]
    );
    let owner_gate = Gate::new(&c, "owner");
    let owner = c.sbatch(&["-A", "owner", "--gpus=1"], &owner_gate.script());
    owner_gate.wait_started(&c);
    c.wait_state(owner, "RUNNING", T);
    // The guest waits while the owner holds a GPU its two-GPU job needs.
    assert_eq!(squeue_state(&c, guest), "PENDING", "{}", c.logs());
    owner_gate.open();
    c.wait_state(owner, "COMPLETED", T);
    c.wait_state(guest, "COMPLETED", T);
    let show = c.ok(&["scontrol", "show", "job", &guest.to_string()]);
    assert!(show.contains("Restarts=1"), "{show}");
}
