//! `srun` inside an allocation: steps whose tasks run on several node daemons on
//! loopback, with their output, stdin, exit codes and task environment.

use std::time::Duration;
use tests::{Cluster, ClusterSpec, OnTerminal, on_terminal, wait_until};

const T: Duration = Duration::from_secs(30);

fn read(c: &Cluster, name: &str) -> String {
    std::fs::read_to_string(c.work.join(name)).unwrap_or_default()
}

fn sorted_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

#[test]
fn a_step_spreads_its_tasks_over_the_job_nodes_with_their_environment() {
    let c = Cluster::start(ClusterSpec::default());
    let id = c.sbatch(
        &["-N", "3", "-n", "6", "-o", "job.out"],
        "srun -l sh -c 'echo $SLURM_PROCID $SLURM_LOCALID $SLURM_NODEID $SLURMD_NODENAME \
         $SLURM_STEP_NUM_TASKS $SLURM_STEP_NUM_NODES $SLURM_STEP_NODELIST $SLURM_STEP_ID'\n\
         echo step0=$?\n\
         srun -n 2 -N 2 -o task-%t-%N.out sh -c 'echo I am $SLURM_PROCID'\n\
         echo hello | srun -n 2 cat\n\
         srun -n 3 sh -c 'exit $SLURM_PROCID'\n\
         echo step3=$?\n\
         srun -n 2 --mpi=pmi2 -o pmi-%t.out sh -c 'echo $PMI_RANK $PMI_SIZE $PMI_JOBID $SLURM_MPI_TYPE'",
    );
    c.wait_state(id, "COMPLETED", T);
    let out = read(&c, "job.out");
    let step0: Vec<String> = sorted_lines(&out)
        .into_iter()
        .filter(|l| l.contains(" tn[1-3] 0"))
        .collect();
    assert_eq!(
        step0,
        vec![
            "0: 0 0 0 tn1 6 3 tn[1-3] 0",
            "1: 1 1 0 tn1 6 3 tn[1-3] 0",
            "2: 2 0 1 tn2 6 3 tn[1-3] 0",
            "3: 3 1 1 tn2 6 3 tn[1-3] 0",
            "4: 4 0 2 tn3 6 3 tn[1-3] 0",
            "5: 5 1 2 tn3 6 3 tn[1-3] 0",
        ],
        "{out}"
    );
    assert!(out.contains("step0=0"), "{out}");
    assert_eq!(read(&c, "task-0-tn1.out"), "I am 0\n");
    assert_eq!(read(&c, "task-1-tn2.out"), "I am 1\n");
    assert_eq!(out.matches("hello\n").count(), 2, "{out}");
    assert!(
        out.contains("srun: error: tn2: task 1: Exited with exit code 1"),
        "{out}"
    );
    assert!(
        out.contains("srun: error: tn3: task 2: Exited with exit code 2"),
        "{out}"
    );
    assert!(out.contains("step3=2"), "{out}");
    assert_eq!(read(&c, "pmi-1.out"), format!("1 2 {id}.4 pmi2\n"));
    let acct = c.sacct_rows(id, "JobID,State,ExitCode");
    assert!(
        acct.lines().any(|l| l == format!("{id}.0|COMPLETED|0:0")),
        "{acct}"
    );
    assert!(
        acct.lines().any(|l| l == format!("{id}.3|FAILED|2:0")),
        "{acct}"
    );
}

#[test]
fn a_bad_exit_kills_the_step_and_a_cancel_reaches_every_node() {
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        ..ClusterSpec::default()
    });
    let id = c.sbatch(
        &["-N", "2", "-n", "2", "-o", "job.out"],
        "srun -K -n 2 sh -c 'if [ $SLURM_PROCID = 1 ]; then exit 3; fi; exec sleep 300'\n\
         echo killed=$?\n\
         srun -n 2 sh -c 'echo $$ > pid-$SLURM_PROCID; exec sleep 300'",
    );
    let pid = |task: u32| -> i32 {
        let mut pid = 0;
        assert!(
            wait_until(T, || {
                pid = read(&c, &format!("pid-{task}")).trim().parse().unwrap_or(0);
                pid > 0
            }),
            "task {task} never started; logs:\n{}",
            c.logs()
        );
        pid
    };
    let (p0, p1) = (pid(0), pid(1));
    let out = read(&c, "job.out");
    assert!(out.contains("killed=3"), "{out}");
    c.ok(&["scancel", &id.to_string()]);
    c.wait_state(id, "CANCELLED", T);
    let gone = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        })
    };
    assert!(
        wait_until(T, || gone(p0) && gone(p1)),
        "tasks survived the cancel"
    );
}

/// `srun -t` inside a job gives the step a time limit of its own, which `scontrol show
/// step` shows and `scontrol update StepId=` moves; a step that runs out is killed and
/// ends TIMEOUT, and its job goes on (what Slurm's test2.13 and test12.8 check).
#[test]
fn a_step_past_its_own_time_limit_ends_timeout_and_its_job_goes_on() {
    let c = Cluster::start(ClusterSpec::default());
    let id = c.sbatch(
        &["-t", "10", "-o", "job.out"],
        "srun -t 3 sh -c 'echo started > started; exec sleep 300'
         echo step=$? > after
",
    );
    assert!(
        wait_until(T, || read(&c, "started") == "started\n"),
        "the step never started; logs:\n{}",
        c.logs()
    );
    let step = format!("{id}.0");
    let limit = || {
        let shown = c.ok(&["scontrol", "show", "step", &step]);
        shown
            .split_whitespace()
            .find_map(|w| w.strip_prefix("TimeLimit="))
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(limit(), "00:03:00");
    // Without a step: every running step of the job; relative: from its own limit.
    c.ok(&[
        "scontrol",
        "update",
        &format!("StepId={id}"),
        "TimeLimit=-2",
    ]);
    assert_eq!(limit(), "00:01:00");
    let bad = c.run(&[
        "scontrol",
        "update",
        &format!("StepId={id}.x"),
        "TimeLimit=1",
    ]);
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("Invalid StepID parameter"),
        "{bad:?}"
    );
    assert!(
        wait_until(Duration::from_secs(120), || !read(&c, "after").is_empty()),
        "the step outlived its limit; logs:\n{}",
        c.logs()
    );
    assert_ne!(read(&c, "after"), "step=0\n");
    c.wait_state(id, "COMPLETED", T);
    let acct = c.sacct_rows(id, "JobID,State");
    assert!(
        acct.lines().any(|l| l == format!("{step}|TIMEOUT")),
        "{acct}\n{}",
        read(&c, "job.out")
    );
    // The node says why on the step's stderr, as Slurm's stepd, and ends the tasks
    // with SIGTERM first.
    let out = read(&c, "job.out");
    assert!(
        out.lines().any(|l| l.starts_with(&format!(
            "drover-noded: error: *** STEP {step} ON tn1 CANCELLED AT "
        )) && l.ends_with(" DUE TO TIME LIMIT ***")),
        "{out}"
    );
    assert!(
        out.contains("srun: error: tn1: task 0: Terminated"),
        "{out}"
    );
}

/// `scancel -s SIG` reaches each task of the job's running steps on every node once,
/// as Slurm's slurmstepd delivers it: neither srun (which would pass it on a second
/// time, or die of it before it is ready) nor the batch shell nor what the script runs
/// outside srun nor what a task forked gets it.
#[test]
fn a_signal_reaches_each_task_of_a_running_step_once() {
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        ..ClusterSpec::default()
    });
    let id = c.sbatch(
        &["-N", "2", "-n", "2", "-o", "job.out"],
        "trap 'echo shell >> shell-got' USR1\n\
         sh -c 'trap \"echo child >> child-got\" USR1; echo ready > child-ready; \
         while :; do sleep 0.1; done' &\n\
         srun sh -c 'trap \"echo got >> got-$SLURM_PROCID\" USR1; \
         (trap \"echo forked >> forked-$SLURM_PROCID\" USR1; \
         echo ready > forked-ready-$SLURM_PROCID; while :; do sleep 0.1; done) & \
         echo ready > ready-$SLURM_PROCID; while :; do sleep 0.1; done'\n",
    );
    assert!(
        wait_until(T, || [
            "ready-0",
            "ready-1",
            "forked-ready-0",
            "forked-ready-1"
        ]
        .iter()
        .all(|f| !read(&c, f).is_empty())
            && !read(&c, "child-ready").is_empty()),
        "the step never started; logs:\n{}",
        c.logs()
    );
    c.ok(&["scancel", "--signal=USR1", &id.to_string()]);
    assert!(
        wait_until(T, || read(&c, "got-0") == "got\n"
            && read(&c, "got-1") == "got\n"),
        "a task missed the signal: {:?} {:?}; {}",
        read(&c, "got-0"),
        read(&c, "got-1"),
        read(&c, "job.out")
    );
    c.ok(&["scancel", &id.to_string()]);
    c.wait_state(id, "CANCELLED", T);
    assert_eq!(
        (read(&c, "got-0"), read(&c, "got-1")),
        ("got\n".into(), "got\n".into())
    );
    // The batch script and what it runs outside srun are the batch step's; what a
    // task forked is not a task (Slurm's proctrack/cgroup).
    assert_eq!(read(&c, "shell-got"), "");
    assert_eq!(read(&c, "child-got"), "");
    assert_eq!(
        (read(&c, "forked-0"), read(&c, "forked-1")),
        (String::new(), String::new())
    );
}

#[test]
fn a_task_count_beyond_one_node_spreads_over_several() {
    // Three nodes of 4 CPUs and 2 GPUs.
    let c = Cluster::start(ClusterSpec::default());
    let id = c.sbatch(
        &["-n", "6", "-o", "spread.out"],
        "echo nodes=$SLURM_NNODES tasks=$SLURM_TASKS_PER_NODE cpt=${SLURM_CPUS_PER_TASK:-unset}\nsrun sh -c 'echo $SLURMD_NODENAME' | sort | uniq -c",
    );
    c.wait_state(id, "COMPLETED", T);
    let out = read(&c, "spread.out");
    // Without -c, no SLURM_CPUS_PER_TASK, as Slurm's.
    assert!(out.contains("nodes=2 tasks=3(x2) cpt=unset"), "{out}");
    let counts: Vec<String> = out
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(counts, vec!["3 tn1", "3 tn2"], "{out}");
    // -m cyclic deals the tasks out node by node; -m pack fills the first node (of
    // the whole nodes --exclusive takes).
    for (how, want) in [
        (
            "cyclic",
            [
                "0: tn1 cyclic",
                "1: tn2 cyclic",
                "2: tn1 cyclic",
                "3: tn2 cyclic",
            ],
        ),
        (
            "pack",
            ["0: tn1 pack", "1: tn1 pack", "2: tn1 pack", "3: tn2 pack"],
        ),
    ] {
        let out = c.ok(&[
            "srun",
            "--exclusive",
            "-N2",
            "-n4",
            "-m",
            how,
            "-l",
            "sh",
            "-c",
            "echo $SLURMD_NODENAME $SLURM_DISTRIBUTION",
        ]);
        assert_eq!(sorted_lines(&out), want, "{out}");
    }
    // -m arbitrary: task by task as -w names the nodes; SLURM_HOSTFILE alone does the
    // same, as many tasks as -n (else its whole list), and too short a list is refused.
    let out = c.ok(&[
        "srun",
        "-m",
        "arbitrary",
        "-w",
        "tn2,tn1,tn1",
        "-l",
        "sh",
        "-c",
        "echo $SLURMD_NODENAME",
    ]);
    assert_eq!(sorted_lines(&out), ["0: tn2", "1: tn1", "2: tn1"], "{out}");
    std::fs::write(c.path().join("hostfile"), "tn3\ntn1 # first\ntn[2-3]\n").unwrap();
    let hostfile = c.path().join("hostfile");
    let with_hostfile = |args: &[&str]| {
        c.command("srun")
            .args(args)
            .args(["-l", "sh", "-c", "echo $SLURMD_NODENAME"])
            .env("SLURM_HOSTFILE", &hostfile)
            .output()
            .unwrap()
    };
    let out = with_hostfile(&[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        sorted_lines(&text),
        ["0: tn3", "1: tn1", "2: tn2", "3: tn3"],
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = with_hostfile(&["-n2"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(sorted_lines(&text), ["0: tn3", "1: tn1"], "{text}");
    let out = with_hostfile(&["-n5"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "srun: error: Too few NodeNames in Slurm Hostfile\n\
         srun: error: Failure getting NodeNames from hostfile\n"
    );
    // --bcast=DIR/: the executable is copied to each node as Slurm names it there, and
    // run from that copy.
    let prog = c.path().join("prog.sh");
    std::fs::write(&prog, "#!/bin/sh\necho $0\n").unwrap();
    std::fs::set_permissions(&prog, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let dir = format!("{}/", c.path().display());
    let out = c.ok(&[
        "srun",
        "-N2",
        "-l",
        &format!("--bcast={dir}"),
        prog.to_str().unwrap(),
    ]);
    let lines = sorted_lines(&out);
    assert_eq!(lines.len(), 2, "{out}");
    for (line, node) in lines.iter().zip(["tn1", "tn2"]) {
        let path = line.split_once(": ").unwrap().1;
        assert!(
            path.starts_with(&format!("{dir}slurm_bcast_")) && path.ends_with(&format!("_{node}")),
            "{out}"
        );
        assert_eq!(std::fs::read(path).unwrap(), std::fs::read(&prog).unwrap());
    }
    let gpus = c.sbatch(&["--gpus=5"], "true");
    c.wait_state(gpus, "COMPLETED", T);
    assert_eq!(c.field(gpus, "NNodes"), "3");
}

#[test]
fn salloc_and_srun_outside_an_allocation_take_one_and_give_it_back() {
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        ..ClusterSpec::default()
    });
    let out = c.run(&[
        "salloc",
        "-N",
        "2",
        "sh",
        "-c",
        "echo job=$SLURM_JOB_ID nodes=$SLURM_NNODES; srun -l sh -c 'echo $SLURMD_NODENAME'",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let id: u32 = stderr
        .lines()
        .find_map(|l| l.strip_prefix("salloc: Granted job allocation "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(stdout.contains(&format!("job={id} nodes=2")), "{stdout}");
    assert_eq!(
        sorted_lines(&stdout)[..2],
        ["0: tn1".to_string(), "1: tn2".to_string()],
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!("salloc: Relinquishing job allocation {id}")),
        "{stderr}"
    );
    // `srun -N 1-10`: the job gets what is free, and the step a task on each of its
    // nodes.
    let out = c.ok(&[
        "srun",
        "-N",
        "1-10",
        "-l",
        "sh",
        "-c",
        "echo $SLURMD_NODENAME",
    ]);
    assert_eq!(sorted_lines(&out), ["0: tn1", "1: tn2"], "{out}");
    // `--spread-job`: two tasks on two nodes, where one node would hold them both.
    let out = c.ok(&[
        "srun",
        "-n2",
        "--spread-job",
        "-l",
        "sh",
        "-c",
        "echo $SLURMD_NODENAME",
    ]);
    assert_eq!(sorted_lines(&out), ["0: tn1", "1: tn2"], "{out}");
    c.wait_state(id, "COMPLETED", T);

    // The command's exit code is salloc's, and a failure fails the job.
    let out = c.run(&["salloc", "sh", "-c", "exit 3"]);
    assert_eq!(out.status.code(), Some(3));

    // A cancelled allocation is revoked: salloc says so, stops its command and gives
    // nothing back.
    let salloc = c
        .command("salloc")
        .args(["-J", "revoked", "sh", "-c", "sleep 60"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("salloc");
    let mut id = String::new();
    assert!(wait_until(T, || {
        id = c.ok(&["squeue", "-h", "-n", "revoked", "-t", "R", "-o", "%i"]);
        !id.trim().is_empty()
    }));
    let id = id.trim().to_string();
    c.ok(&["scancel", &id]);
    let out = salloc.wait_with_output().expect("salloc");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        stderr.contains(&format!("salloc: Job allocation {id} has been revoked.")),
        "{stderr}"
    );
    assert!(!stderr.contains("Relinquishing"), "{stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");

    // --test-only says when the job would start and runs nothing; what cannot start is
    // Slurm's `allocation failure`.
    let out = c.run(&["srun", "--test-only", "-N1", "touch", "ran"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.starts_with("srun: Job ") && stderr.contains(" to start at "),
        "{stderr}"
    );
    let out = c.run(&["srun", "--test-only", "-N99", "true"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success());
    assert!(stderr.starts_with("allocation failure: "), "{stderr}");
    assert!(!c.work.join("ran").exists(), "--test-only ran the command");

    // srun outside an allocation: the step's output as it comes, its exit code.
    let out = c.run(&["srun", "-N", "2", "-l", "sh", "-c", "echo $SLURMD_NODENAME"]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}\nlogs:\n{}",
        String::from_utf8_lossy(&out.stderr),
        c.logs()
    );
    assert_eq!(sorted_lines(&stdout), ["0: tn1", "1: tn2"]);
    // The step keeps what it asked of GPUs: `scontrol show step` shows it.
    let out = c.run(&[
        "srun",
        "--gpus=1",
        "--gpu-freq=medium",
        "sh",
        "-c",
        "scontrol show step $SLURM_JOB_ID.$SLURM_STEP_ID",
    ]);
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = shown.lines().map(str::trim).collect();
    assert!(lines.contains(&"TresFreq=gpu:medium"), "{shown}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("TresPerStep=cpu:") && l.ends_with(",gres:gpu:1")),
        "{shown}"
    );
    let out = c.run(&["srun", "sh", "-c", "exit 4"]);
    assert_eq!(out.status.code(), Some(4));
    // (sacct -s without -S looks at this very second, as Slurm's: not used here.)
    let mut jobs = String::new();
    assert!(
        wait_until(T, || {
            jobs = c.ok(&["sacct", "-n", "-X", "-P", "-o", "JobName,State"]);
            // salloc's job is `interactive`, srun's its command's, as Slurm names them.
            let count = |row: &str| jobs.lines().filter(|l| *l == row).count();
            count("interactive|FAILED") == 1 && count("sh|FAILED") == 1
        }),
        "{jobs}"
    );
}

#[test]
fn each_task_sees_its_own_gpus_with_gpus_per_task() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    let id = c.sbatch(
        &["-n", "2", "--gpus=2", "-o", "gpus.out"],
        "echo job=$SLURM_JOB_GPUS\n\
         srun -l --gpus-per-task=1 sh -c 'echo $CUDA_VISIBLE_DEVICES'\n\
         srun -l --gpu-bind=map_gpu:1 sh -c 'echo map=$CUDA_VISIBLE_DEVICES'\n\
         srun -l --gpu-bind=verbose,map_gpu:0 true\n\
         srun --gpu-bind=bogus true; echo bad=$?",
    );
    c.wait_state(id, "COMPLETED", T);
    let out = read(&c, "gpus.out");
    let job: Vec<String> = out
        .lines()
        .find_map(|l| l.strip_prefix("job="))
        .unwrap_or_else(|| panic!("{out}"))
        .split(',')
        .map(str::to_string)
        .collect();
    assert_eq!(job.len(), 2, "{out}");
    let lines = sorted_lines(&out);
    assert!(lines.contains(&format!("0: {}", job[0])), "{out}");
    assert!(lines.contains(&format!("1: {}", job[1])), "{out}");
    assert!(lines.contains(&format!("0: map={}", job[1])), "{out}");
    assert!(lines.contains(&format!("1: map={}", job[1])), "{out}");
    // `verbose`: each task says which of the step's GPUs it may use, as Slurm's do.
    for task in 0..2 {
        let said = format!(
            "{task}: gpu-bind: usable_gres=0x{:x}; bit_alloc=0x{:x}; local_inx=0; global_list={}; local_list=",
            1u32 << job[0].parse::<u32>().unwrap(),
            job.iter()
                .fold(0u32, |m, g| m | 1 << g.parse::<u32>().unwrap()),
            job[0]
        );
        assert!(
            lines.iter().any(|l| l.starts_with(&said)),
            "{said} in {out}"
        );
    }
    assert!(
        out.contains("Invalid --gpu-bind argument: gpu:bogus"),
        "{out}"
    );
    assert!(out.contains("bad=1"), "{out}");
    // --ntasks-per-gpu=2 with two GPUs: four tasks, two on each GPU, as Slurm's.
    let out = c.ok(&[
        "srun",
        "--gpus=2",
        "--ntasks-per-gpu=2",
        "-l",
        "sh",
        "-c",
        "echo $CUDA_VISIBLE_DEVICES",
    ]);
    let lines = sorted_lines(&out);
    assert_eq!(lines.len(), 4, "{out}");
    let gpu_of = |task: usize| lines[task].split_once(": ").unwrap().1.to_string();
    assert_eq!(gpu_of(0), gpu_of(1), "{out}");
    assert_eq!(gpu_of(2), gpu_of(3), "{out}");
    assert_ne!(gpu_of(0), gpu_of(2), "{out}");
    let bad = c.run(&["srun", "--ntasks-per-gpu=2", "--ntasks-per-node=2", "true"]);
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr),
        "srun: fatal: --ntasks-per-node is mutually exclusive with --ntasks-per-gpu and \
         SLURM_NTASKS_PER_GPU\n"
    );
}

#[test]
fn each_task_runs_on_its_own_cpus_unless_cpu_bind_says_none() {
    // One node of this host's two CPUs, so that jobs are pinned to their CPU ids.
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        cpus: 2,
        ..ClusterSpec::default()
    });
    let id = c.sbatch(
        &["-n", "2", "-o", "cpus.out"],
        "srun -l sh -c 'grep Cpus_allowed_list /proc/self/status'\n\
         srun -l --cpu-bind=none sh -c 'echo none $(grep Cpus_allowed_list /proc/self/status)'\n\
         srun --cpu-bind=mask_cpu:0x3 true; echo bad=$?",
    );
    c.wait_state(id, "COMPLETED", T);
    let out = read(&c, "cpus.out");
    let lines = sorted_lines(&out);
    let own: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains(": Cpus_allowed_list"))
        .collect();
    assert_eq!(own.len(), 2, "{out}");
    assert_ne!(
        own[0].rsplit('\t').next(),
        own[1].rsplit('\t').next(),
        "tasks share a CPU: {out}"
    );
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.ends_with("none Cpus_allowed_list: 0-1"))
            .count(),
        2,
        "{out}"
    );
    assert!(
        out.contains("Invalid --cpu-bind argument: mask_cpu:0x3"),
        "{out}"
    );
    assert!(out.contains("bad=1"), "{out}");
}

#[test]
fn srun_pty_runs_task_zero_in_a_terminal_of_sruns_size() {
    use nix::pty::Winsize;
    use nix::sys::termios::{LocalFlags, tcgetattr};
    use std::io::Write;
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        ..ClusterSpec::default()
    });
    // Without a terminal of srun's own: task 0 still gets one, 24x80; task 1's output
    // goes to /dev/null.
    let out = c.run(&[
        "srun",
        "--pty",
        "-n",
        "2",
        "-N",
        "2",
        "sh",
        "-c",
        "tty; stty size; true",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}");
    let lines: Vec<&str> = stdout.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 2, "{stdout:?}");
    assert!(lines[0].starts_with("/dev/pts/"), "{stdout:?}");
    assert_eq!(lines[1], "24 80");

    // An interactive shell from a terminal of 30x100: srun puts it in raw mode, the
    // shell reads the typed lines through its own terminal, and srun leaves it as it was.
    let size = Winsize {
        ws_row: 30,
        ws_col: 100,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let mut srun = c.command("srun");
    srun.args(["--pty", "bash", "--norc", "-i"]);
    let OnTerminal {
        mut child,
        slave,
        mut master,
        seen,
        reader,
    } = on_terminal(srun, Some(size));
    let text = || String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
    master
        .write_all(b"stty size; echo marker-$((6*7)); tty\n")
        .unwrap();
    assert!(
        wait_until(T, || text().contains("\r\nmarker-42\r\n")),
        "{:?}",
        text()
    );
    // srun's terminal grows to 40x120 (SIGWINCH, as a terminal sends it): the task's
    // follows, which `stty size` sees once srun has passed it on.
    let bigger = libc::winsize {
        ws_row: 40,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one winsize from a live descriptor.
    assert_eq!(
        unsafe {
            libc::ioctl(
                std::os::fd::AsRawFd::as_raw_fd(&master),
                libc::TIOCSWINSZ,
                &bigger,
            )
        },
        0
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGWINCH,
    )
    .unwrap();
    let resized = wait_until(T, || {
        master.write_all(b"stty size\n").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        text().contains("40 120\r\n")
    });
    assert!(resized, "{:?}", text());
    master.write_all(b"exit 5\n").unwrap();
    let status = child.wait().unwrap();
    assert!(
        tcgetattr(&slave)
            .unwrap()
            .local_flags
            .contains(LocalFlags::ICANON),
        "srun left its terminal in raw mode"
    );
    drop(slave);
    reader.join().unwrap();
    let seen = text();
    assert_eq!(status.code(), Some(5), "{seen}");
    assert!(seen.contains("30 100\r\n"), "{seen:?}");
    assert!(seen.contains("\r\n/dev/pts/"), "{seen:?}");
}

#[test]
fn a_task_epilog_that_fails_or_outlives_its_limit_is_reported() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    let epilog = c.path().join("epilog.sh");
    // The first task's epilog fails, the second's runs past slurmstepd's 5 seconds.
    std::fs::write(
        &epilog,
        "#!/bin/sh\n[ \"$SLURM_PROCID\" = 0 ] && exit 3\nexec sleep 60\n",
    )
    .unwrap();
    std::fs::set_permissions(&epilog, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = c.run(&[
        "srun",
        "-n2",
        &format!("--task-epilog={}", epilog.display()),
        "true",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let mut failed: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("drover-noded: error: TaskEpilog failed "))
        .collect();
    failed.sort();
    assert_eq!(
        failed,
        [
            "drover-noded: error: TaskEpilog failed status=3",
            "drover-noded: error: TaskEpilog failed status=9"
        ],
        "{stderr}"
    );
}

/// `scontrol listpids` and `pidinfo` in a job: its processes on its node, by step and
/// task, as the node daemon finds them in the job's cgroups.
#[test]
fn scontrol_lists_a_jobs_processes_on_its_node() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    let id = c.sbatch(
        &["-t", "5", "-o", "pids.out"],
        "srun sh -c 'echo up > up; exec sleep 30' &\n\
         while [ ! -s up ]; do sleep 0.1; done\n\
         scontrol listpids $SLURM_JOB_ID.0\n\
         scontrol listpids $SLURM_JOB_ID.10; echo missing=$?\n\
         scontrol pidinfo $$\n\
         scancel $SLURM_JOB_ID.0; wait",
    );
    c.wait_state(id, "COMPLETED", T);
    let out = read(&c, "pids.out");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0], "PID      JOBID    STEPID   LOCALID GLOBALID",
        "{out}"
    );
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(row[1..], [id.to_string().as_str(), "0", "0", "0"], "{out}");
    assert!(
        out.contains(&format!(
            "StepId={id}.10 does not exist on node tn1.\nmissing=1"
        )),
        "{out}"
    );
    assert!(out.contains(&format!("Slurm JobId={id} ends at ")), "{out}");
    assert!(out.contains("Job remaining time is "), "{out}");
    // A node the cluster does not have is said so.
    let bad = c.run(&["scontrol", "listpids", &id.to_string(), "tn9"]);
    assert!(!bad.status.success());
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr),
        "Invalid node name specified: tn9\n"
    );
}

#[test]
fn srun_in_the_background_or_without_its_terminal_goes_on() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    // In the background of an interactive shell (job control on): the task's output
    // comes while srun waits there, not once `fg` brings it back; srun does not read
    // its terminal, which would stop it.
    // `setsid -c`: a session whose controlling terminal is the test's, with srun's
    // environment (its PATH finds the cluster's commands).
    let base = c.command("srun");
    let mut shell = std::process::Command::new("setsid");
    shell.current_dir(base.get_current_dir().unwrap());
    for (k, v) in base.get_envs() {
        match v {
            Some(v) => shell.env(k, v),
            None => shell.env_remove(k),
        };
    }
    shell.args([
        "-c",
        "bash",
        "--norc",
        "-i",
        "-c",
        "set -m; srun -t1 sh -c 'echo first; sleep 1; echo second' & sleep 4; echo now-fg; fg 2>/dev/null; exit 0",
    ]);
    let mut run = on_terminal(shell, None);
    let status = run.child.wait().unwrap();
    drop(run.slave);
    run.reader.join().unwrap();
    let seen = String::from_utf8_lossy(&run.seen.lock().unwrap()).into_owned();
    assert!(status.success(), "{seen}");
    let second = seen.find("second\r\n");
    let fg = seen.find("now-fg");
    assert!(
        second.is_some() && fg.is_some() && second < fg,
        "srun's output waited for fg: {seen:?}"
    );
    // Its terminal gone while the task runs: srun still tells the controller how the
    // step and the job ended (a failed write to the terminal does not stop it).
    let mut srun = c.command("srun");
    srun.args(["-v", "-J", "orphan", "sh", "-c", "echo started; sleep 2"]);
    let mut run = on_terminal(srun, None);
    let seen = run.seen.clone();
    assert!(wait_until(T, || String::from_utf8_lossy(
        &seen.lock().unwrap()
    )
    .contains("started")));
    drop(run.master);
    drop(run.slave);
    run.child.wait().unwrap();
    let id: u32 = c
        .ok(&["squeue", "-h", "-t", "all", "-n", "orphan", "-o", "%i"])
        .trim()
        .parse()
        .unwrap();
    c.wait_state(id, "COMPLETED", T);
}

#[test]
fn sattach_joins_a_running_steps_output_and_input() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::process::Stdio;
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        ..ClusterSpec::default()
    });
    let work = c.work.display().to_string();
    // Each task says it runs, waits for `go`, then echoes a line of its stdin.
    let task = format!(
        "echo before-$SLURM_PROCID; touch {work}/started.$SLURM_PROCID; \
         while [ ! -e {work}/go ]; do sleep 0.05; done; \
         echo after-$SLURM_PROCID; read line; echo got-$SLURM_PROCID-$line"
    );
    // srun's stdin stays open (and silent): the tasks' stdin is sattach's to feed.
    let mut srun = c
        .command("srun")
        .args(["-N", "2", "-n", "2", "sh", "-c", &task])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    for rank in 0..2 {
        let started = c.work.join(format!("started.{rank}"));
        assert!(wait_until(T, || started.exists()), "logs:\n{}", c.logs());
    }
    let id = c.ok(&["squeue", "-h", "-o", "%i"]).trim().to_string();
    assert_eq!(
        c.ok(&["sattach", "--layout", &format!("{id}.0")]),
        "Job step layout:\n\t2 tasks, 2 nodes (tn[1-2])\n"
    );
    let mut sattach = c
        .command("sattach")
        .args(["-v", "-l", &format!("{id}.0")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    BufReader::new(sattach.stderr.take().unwrap())
        .read_line(&mut said)
        .unwrap();
    assert_eq!(
        said,
        format!("sattach: attached to StepId={id}.0 on 2 node(s)\n")
    );
    std::fs::write(c.work.join("go"), "").unwrap();
    sattach
        .stdin
        .as_mut()
        .unwrap()
        .write_all(b"hello\n")
        .unwrap();
    let mut seen = String::new();
    sattach
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut seen)
        .unwrap();
    assert!(sattach.wait().unwrap().success());
    // What the tasks wrote before it joined comes first, as slurmstepd replays it.
    assert_eq!(
        sorted_lines(&seen),
        [
            "0: after-0",
            "0: before-0",
            "0: got-0-hello",
            "1: after-1",
            "1: before-1",
            "1: got-1-hello"
        ]
    );
    drop(srun.stdin.take());
    let out = srun.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        sorted_lines(&String::from_utf8_lossy(&out.stdout)),
        [
            "after-0",
            "after-1",
            "before-0",
            "before-1",
            "got-0-hello",
            "got-1-hello"
        ]
    );
    // A step that does not run cannot be joined.
    let out = c.run(&["sattach", &format!("{id}.7")]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("sattach: error: Job step {id}.7 is not running\n")
    );
}

#[test]
fn a_running_job_shrinks_and_its_script_takes_the_new_size() {
    let c = Cluster::start(ClusterSpec::default());
    // As Slurm's test2.14: shrink from inside, source the script scontrol writes, and
    // a step then runs on the node left.
    let id = c.sbatch(
        &["-N", "2", "-o", "job.out"],
        "scontrol update JobId=$SLURM_JOB_ID NumNodes=3 || echo grow=refused\n\
         scontrol update JobId=$SLURM_JOB_ID NumNodes=1\n\
         . ./slurm_job_${SLURM_JOB_ID}_resize.sh\n\
         echo nodes=$SLURM_NNODES $SLURM_JOB_NODELIST\n\
         srun -l hostname >/dev/null && srun sh -c 'echo step on $SLURMD_NODENAME'",
    );
    c.wait_state(id, "COMPLETED", T);
    let out = read(&c, "job.out");
    assert!(out.contains("grow=refused"), "{out}");
    assert!(
        out.contains(&format!(
            "To reset Slurm environment variables, execute\n  For bash or sh shells:  . ./slurm_job_{id}_resize.sh\n"
        )),
        "{out}"
    );
    assert!(out.contains("nodes=1 tn1\n"), "{out}");
    assert!(out.contains("step on tn1\n"), "{out}");
    assert!(!out.contains("step on tn2"), "{out}");
    assert_eq!(c.field(id, "NNodes"), "1");
}
