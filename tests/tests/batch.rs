//! Batch jobs end to end: real daemons on loopback, driven through the Slurm-named CLI.

use std::time::Duration;
use tests::{Cluster, ClusterSpec, wait_until};

const T: Duration = Duration::from_secs(30);

fn read(path: impl AsRef<std::path::Path>) -> String {
    std::fs::read_to_string(path.as_ref()).unwrap_or_default()
}

#[test]
fn submit_run_watch_and_account() {
    let c = Cluster::start(ClusterSpec::default());
    let id = c.sbatch(
        &["-J", "envcheck", "-c", "2", "--mem=100M"],
        "echo \"id=$SLURM_JOB_ID jobid=$SLURM_JOBID name=$SLURM_JOB_NAME\"\n\
         echo \"nodes=$SLURM_JOB_NODELIST n=$SLURM_NNODES $SLURM_JOB_NUM_NODES tasks=$SLURM_NTASKS\"\n\
         echo \"cpt=$SLURM_CPUS_PER_TASK con=$SLURM_CPUS_ON_NODE mem=$SLURM_MEM_PER_NODE\"\n\
         echo \"submitdir=$SLURM_SUBMIT_DIR cluster=$SLURM_CLUSTER_NAME part=$SLURM_JOB_PARTITION\"\n\
         echo \"procid=$SLURM_PROCID localid=$SLURM_LOCALID nodeid=$SLURM_NODEID pwd=$(pwd)\"",
    );
    c.wait_state(id, "COMPLETED", T);
    let out = read(c.work.join(format!("slurm-{id}.out")));
    assert!(
        out.contains(&format!("id={id} jobid={id} name=envcheck")),
        "{out}"
    );
    // No -n: no task count, as Slurm's sbatch.
    assert!(out.contains("n=1 1 tasks=\n"), "{out}");
    assert!(out.contains("cpt=2 con=2 mem=100"), "{out}");
    assert!(
        out.contains(&format!(
            "submitdir={} cluster=test part=debug",
            c.work.display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "procid=0 localid=0 nodeid=0 pwd={}",
            c.work.display()
        )),
        "{out}"
    );
    assert!(out.contains("nodes=tn"), "{out}");

    // Finished jobs leave the default squeue view but stay in `squeue -t all` and sacct.
    let q = c.ok(&["squeue", "-h", "-o", "%i"]);
    assert!(!q.lines().any(|l| l.trim() == id.to_string()), "{q}");
    let all = c.ok(&["squeue", "-h", "-t", "all", "-o", "%i|%T"]);
    assert!(
        all.lines().any(|l| l.trim() == format!("{id}|COMPLETED")),
        "{all}"
    );
    let acct = c.ok(&[
        "sacct",
        "-P",
        "-n",
        "-j",
        &id.to_string(),
        "-o",
        "JobID,JobName,State,ExitCode,AllocCPUS",
    ]);
    let rows: Vec<&str> = acct.lines().collect();
    assert_eq!(rows[0], format!("{id}|envcheck|COMPLETED|0:0|2"), "{acct}");
    assert!(
        rows.iter()
            .any(|r| r.starts_with(&format!("{id}.batch|batch|COMPLETED|0:0"))),
        "{acct}"
    );
    // The controller's statistics count the job from its submit to its end.
    let diag = c.ok(&["sdiag"]);
    for line in [
        "Jobs submitted: 1",
        "Jobs started:   1",
        "Jobs completed: 1",
    ] {
        assert!(diag.lines().any(|l| l == line), "{line:?} in\n{diag}");
    }
}

/// sbatch's soft resource limits reach the batch script (Slurm's default
/// PropagateResourceLimits=ALL, through `SLURM_RLIMIT_*`), and the variables do not.
#[test]
fn the_batch_script_starts_with_sbatchs_resource_limits() {
    use std::os::unix::process::CommandExt;
    let c = Cluster::start(ClusterSpec::default());
    let out = c.work.join("limits.out");
    let mut sbatch = c.command("sbatch");
    sbatch.args([
        "--parsable",
        "-o",
        out.to_str().unwrap(),
        "--wrap",
        "grep -E 'open files|core file' /proc/self/limits; env | grep -c SLURM_RLIMIT_; true",
    ]);
    // SAFETY: setrlimit is async-signal-safe; it only lowers the soft limits.
    unsafe {
        sbatch.pre_exec(|| {
            for (resource, soft) in [(libc::RLIMIT_NOFILE, 1016), (libc::RLIMIT_CORE, 965_632)] {
                let mut limit = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::getrlimit(resource, &mut limit);
                limit.rlim_cur = soft.min(limit.rlim_max);
                if libc::setrlimit(resource, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let submitted = sbatch.output().unwrap();
    assert!(submitted.status.success(), "{submitted:?}");
    let id: u32 = String::from_utf8_lossy(&submitted.stdout)
        .trim()
        .parse()
        .unwrap();
    c.wait_state(id, "COMPLETED", T);
    let text = read(&out);
    let soft = |what: &str| {
        text.lines()
            .find(|l| l.starts_with(what))
            .and_then(|l| l[what.len()..].split_whitespace().next())
            .map(str::to_string)
    };
    assert_eq!(soft("Max open files").as_deref(), Some("1016"), "{text}");
    assert_eq!(
        soft("Max core file size").as_deref(),
        Some("965632"),
        "{text}"
    );
    assert_eq!(text.lines().last(), Some("0"), "{text}");
}

#[test]
fn scripts_from_stdin_wrap_and_deleted_files() {
    let c = Cluster::start(ClusterSpec::default());
    let out = c.run_with_stdin(
        &["sbatch"],
        "#!/bin/sh\n#SBATCH -J fromstdin\necho stdin-ok\n",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.starts_with("Submitted batch job "), "{text}");
    let stdin_id: u32 = text.trim().rsplit(' ').next().unwrap().parse().unwrap();

    let wrap_id: u32 = c
        .ok(&["sbatch", "--parsable", "--wrap", "echo wrap-ok"])
        .trim()
        .parse()
        .unwrap();

    // The script file may vanish right after sbatch returns (dask-jobqueue does this).
    let script = c.work.join("gone.sh");
    std::fs::write(&script, "#!/bin/bash\necho deleted-ok\n").unwrap();
    let gone_id: u32 = c
        .ok(&["sbatch", "--parsable", "--hold", script.to_str().unwrap()])
        .trim()
        .parse()
        .unwrap();
    std::fs::remove_file(&script).unwrap();
    c.ok(&["scontrol", "release", &gone_id.to_string()]);

    for (id, want) in [
        (stdin_id, "stdin-ok"),
        (wrap_id, "wrap-ok"),
        (gone_id, "deleted-ok"),
    ] {
        c.wait_state(id, "COMPLETED", T);
        assert_eq!(read(c.work.join(format!("slurm-{id}.out"))).trim(), want);
    }
    let name = c.ok(&[
        "squeue",
        "-h",
        "-t",
        "all",
        "-j",
        &stdin_id.to_string(),
        "-o",
        "%j",
    ]);
    assert_eq!(name.trim(), "fromstdin");
}

#[test]
fn output_patterns_directives_and_append() {
    let c = Cluster::start(ClusterSpec::default());
    // Directives apply; the command line wins over them.
    let body = "#SBATCH -J fromdirective\n#SBATCH --output=out-%x-%j.txt\n#SBATCH -e err-%j.txt\n\
                echo to-out; echo to-err >&2; exit 3";
    let id = c.sbatch(&["-J", "cmdline"], body);
    c.wait_state(id, "FAILED", T);
    assert_eq!(
        read(c.work.join(format!("out-cmdline-{id}.txt"))).trim(),
        "to-out"
    );
    assert_eq!(read(c.work.join(format!("err-{id}.txt"))).trim(), "to-err");
    let code = c.field(id, "ExitCode");
    assert_eq!(code.trim(), "3:0");

    std::fs::write(c.work.join("log.txt"), "before\n").unwrap();
    let id = c.sbatch(&["--open-mode=append", "-o", "log.txt"], "echo after");
    c.wait_state(id, "COMPLETED", T);
    assert_eq!(read(c.work.join("log.txt")), "before\nafter\n");
    let id = c.sbatch(&["-o", "log.txt"], "echo truncated");
    c.wait_state(id, "COMPLETED", T);
    assert_eq!(read(c.work.join("log.txt")), "truncated\n");

    // LSF's directives, as Slurm's sbatch reads them: under the `#SBATCH` ones.
    let body = "#SBATCH -J fromsbatch\n#BSUB -J fromlsf -o lsf-%j.out -W 7 -M 2048\n\
                #BSUB -m \"tn2\" -x\necho ran on $SLURMD_NODENAME";
    let id = c.sbatch(&[], body);
    c.wait_state(id, "COMPLETED", T);
    assert_eq!(read(c.work.join(format!("lsf-{id}.out"))), "ran on tn2\n");
    let shown = c.ok(&["scontrol", "show", "job", &id.to_string()]);
    for field in [
        "JobName=fromlsf",
        "TimeLimit=00:07:00",
        "MinMemoryCPU=2M",
        "OverSubscribe=NO",
    ] {
        assert!(shown.contains(field), "{field} in {shown}");
    }
    let script = c.work.join("lsf-bad.sh");
    std::fs::write(&script, "#!/bin/sh\n#BSUB -Z 1\ntrue\n").unwrap();
    let bad = c.run(&["sbatch", script.to_str().unwrap()]);
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("Unrecognized command line parameter -Z"),
        "{bad:?}"
    );
}

#[test]
fn cancel_kills_the_whole_process_tree() {
    let c = Cluster::start(ClusterSpec::default());
    let pidfile = c.work.join("child.pid");
    let id = c.sbatch(
        &[],
        &format!("sleep 300 &\necho $! > {}\nwait", pidfile.display()),
    );
    c.wait_state(id, "RUNNING", T);
    assert!(wait_until(T, || pidfile.exists() && !read(&pidfile).trim().is_empty()));
    let child: i32 = read(&pidfile).trim().parse().unwrap();
    let q = c.ok(&["squeue", "-h", "-j", &id.to_string()]);
    assert!(q.contains(" R "), "{q}");
    c.ok(&["scancel", &id.to_string()]);
    c.wait_state(id, "CANCELLED", T);
    let state = c.field(id, "State");
    assert_eq!(state.trim(), "CANCELLED by 0");
    assert!(
        wait_until(T, || !std::path::Path::new(&format!("/proc/{child}"))
            .exists()),
        "the job's background child survived the cancel"
    );
    // As in Slurm, signalling an unknown job is an error.
    let again = c.run(&["scancel", "--signal=USR1", "999999"]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("Invalid job id specified"));
}

/// `scancel --full -s SIG`: the batch shell and what it started in the background get
/// it (Slurm's `--full`; without it the batch shell is left alone).
#[test]
fn a_full_signal_reaches_the_batch_shell_and_its_children() {
    let c = Cluster::start(ClusterSpec::default());
    let ready = c.work.join("child.ready");
    let out = c.work.join("full.out");
    let id = c.sbatch(
        &["-o", out.to_str().unwrap()],
        &format!(
            "trap 'echo script-signaled' USR1\n\
             (trap 'echo child-signaled; exit 0' USR1; touch {}; \
             while :; do sleep 0.1; done) &\n\
             child=$!\nwait $child\nwait $child",
            ready.display()
        ),
    );
    assert!(wait_until(T, || ready.exists()), "the child never started");
    c.ok(&["scancel", "--full", "-s", "USR1", &id.to_string()]);
    c.wait_state(id, "COMPLETED", T);
    let text = read(&out);
    assert!(text.contains("script-signaled"), "{text}");
    assert!(text.contains("child-signaled"), "{text}");
}

#[test]
fn time_limit_ends_in_timeout() {
    let c = Cluster::start(ClusterSpec::default());
    let id = c.sbatch(&["-t", "1"], "sleep 600");
    c.wait_state(id, "RUNNING", T);
    c.wait_state(id, "TIMEOUT", Duration::from_secs(100));
    let elapsed = c.field(id, "ElapsedRaw");
    let secs: i64 = elapsed.trim().parse().unwrap_or(0);
    assert!(
        (60..=75).contains(&secs),
        "ran {secs} s for a 1-minute limit"
    );
}

#[test]
fn arrays_with_throttle() {
    let c = Cluster::start(ClusterSpec::default());
    let id = c.sbatch(
        &["--array=0-4%2", "-o", "arr-%A_%a.out"],
        "echo \"task=$SLURM_ARRAY_TASK_ID of $SLURM_ARRAY_JOB_ID count=$SLURM_ARRAY_TASK_COUNT\"; sleep 1",
    );
    // While tasks wait, the array is one row with the pending remainder.
    let q = c.ok(&["squeue", "-h", "-t", "all", "-o", "%i %T"]);
    assert!(q.lines().any(|l| l.starts_with(&format!("{id}_["))), "{q}");
    let done = wait_until(Duration::from_secs(60), || {
        let out = c.ok(&[
            "sacct",
            "-n",
            "-X",
            "-P",
            "-j",
            &id.to_string(),
            "-o",
            "JobID,State",
        ]);
        out.lines().filter(|l| l.ends_with("|COMPLETED")).count() == 5
    });
    assert!(done, "{}", c.ok(&["sacct", "-j", &id.to_string()]));
    for task in 0..5 {
        let out = read(c.work.join(format!("arr-{id}_{task}.out")));
        assert_eq!(out.trim(), format!("task={task} of {id} count=5"));
    }
    let rows = c.ok(&[
        "sacct",
        "-n",
        "-X",
        "-P",
        "-o",
        "JobID",
        "-j",
        &id.to_string(),
    ]);
    let mut ids: Vec<&str> = rows.lines().collect();
    ids.sort();
    let want: Vec<String> = (0..5).map(|t| format!("{id}_{t}")).collect();
    assert_eq!(ids, want.iter().map(String::as_str).collect::<Vec<_>>());
}

#[test]
fn dependencies_hold_and_release() {
    let c = Cluster::start(ClusterSpec::default());
    let fail = c.sbatch(&[], "exit 1");
    let never = c.sbatch(&["--dependency", &format!("afterok:{fail}")], "true");
    let any = c.sbatch(&["-d", &format!("afterany:{fail}")], "true");
    c.wait_state(fail, "FAILED", T);
    c.wait_state(any, "COMPLETED", T);
    let reason = wait_until(T, || {
        c.ok(&["squeue", "-h", "-j", &never.to_string(), "-o", "%r"])
            .trim()
            == "DependencyNeverSatisfied"
    });
    assert!(reason);

    let held = c.sbatch(&["-H"], "true");
    assert!(wait_until(T, || c
        .ok(&["squeue", "-h", "-j", &held.to_string(), "-o", "%T %r"])
        .trim()
        == "PENDING JobHeldUser"));
    c.ok(&["scontrol", "release", &held.to_string()]);
    c.wait_state(held, "COMPLETED", T);
}

#[test]
fn requeue_runs_a_job_again() {
    let c = Cluster::start(ClusterSpec {
        // The requeued job runs again at once rather than after Slurm's delay.
        controller_extra: "requeue_delay_s = 0\n".into(),
        ..ClusterSpec::default()
    });
    let id = c.sbatch(
        &["-o", "rq.out", "--open-mode=append"],
        "echo run-$SLURM_RESTART_COUNT; sleep 300",
    );
    c.wait_state(id, "RUNNING", T);
    assert!(wait_until(T, || read(c.work.join("rq.out")).contains("run-")));
    c.ok(&["scontrol", "requeue", &id.to_string()]);
    assert!(
        wait_until(T, || read(c.work.join("rq.out")).contains("run-1")),
        "{}",
        read(c.work.join("rq.out"))
    );
    c.ok(&["scancel", &id.to_string()]);
    c.wait_state(id, "CANCELLED", T);
}

#[test]
fn gpus_are_bound_and_never_shared() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        gpus: 2,
        ..ClusterSpec::default()
    });
    let a = c.sbatch(
        &["--gpus=1", "-o", "a.out"],
        "echo gpus=$CUDA_VISIBLE_DEVICES; sleep 300",
    );
    let b = c.sbatch(
        &["--gres=gpu:h100:1", "-o", "b.out"],
        "echo gpus=$CUDA_VISIBLE_DEVICES; sleep 300",
    );
    let d = c.sbatch(&["--gpus-per-node=1"], "true");
    c.wait_state(a, "RUNNING", T);
    c.wait_state(b, "RUNNING", T);
    assert!(wait_until(T, || read(c.work.join("a.out"))
        .contains("gpus=")
        && read(c.work.join("b.out")).contains("gpus=")));
    let mut seen = vec![
        read(c.work.join("a.out")).trim().to_string(),
        read(c.work.join("b.out")).trim().to_string(),
    ];
    seen.sort();
    assert_eq!(seen, ["gpus=0", "gpus=1"]);
    assert!(wait_until(T, || c
        .ok(&["squeue", "-h", "-j", &d.to_string(), "-o", "%T %r"])
        .trim()
        == "PENDING Resources"));
    let why = c.ok(&["drover", "why", &d.to_string()]);
    assert!(
        why.starts_with(&format!("job {d} is PENDING (Resources)")),
        "{why}"
    );
    assert!(
        why.contains("1 of 1 nodes in partition debug could ever run it"),
        "{why}"
    );
    assert!(why.contains("first to free resources: job"), "{why}");
    c.ok(&["scancel", &a.to_string()]);
    c.wait_state(d, "COMPLETED", T);
    c.ok(&["scancel", &b.to_string()]);
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    let c = Cluster::start(ClusterSpec::default());
    let script = c.work.join("ok.sh");
    std::fs::write(&script, "#!/bin/sh\ntrue\n").unwrap();
    let s = script.to_str().unwrap();
    let plain = c.work.join("plain.sh");
    std::fs::write(&plain, "echo no shebang\n").unwrap();
    let p = plain.to_str().unwrap();
    // Slurm 22.05's sizes: 1,024 characters of a name or comment, 4,096 of a path.
    let long_name = format!("--job-name={}", "n".repeat(1025));
    let long_comment = format!("--comment={}", "c".repeat(100_000));
    let long_output = format!("--output=/tmp/{}", "o".repeat(4096));
    let too_long =
        "Batch job submission failed: Pathname of a file, directory or other parameter too long";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["sbatch", &long_name, s], too_long),
        (vec!["sbatch", &long_comment, s], too_long),
        (vec!["sbatch", &long_output, s], too_long),
        (vec!["sbatch", "--bogus", s], "unrecognized option"),
        (
            vec!["sbatch", "-t", "abc", s],
            "Invalid --time specification",
        ),
        (vec!["sbatch", "--mem=12Q", s], "mem"),
        (
            vec!["sbatch", "-p", "nosuch", s],
            "Invalid partition name specified",
        ),
        (
            vec!["sbatch", "-c", "64", s],
            "Requested node configuration is not available",
        ),
        (
            vec!["sbatch", "-N", "9", s],
            "Node count specification invalid",
        ),
        // Each node has 1G of TmpDisk.
        (
            vec!["sbatch", "--tmp=1025M", s],
            "Requested node configuration is not available",
        ),
        // Three nodes of two GPUs: five spread over three nodes, seven fit nowhere.
        (
            vec!["sbatch", "--gpus=7", s],
            "Requested node configuration is not available",
        ),
        (
            vec!["sbatch", "-t", "2:00:00", s],
            "Requested time limit is invalid",
        ),
        (vec!["sbatch", "--array=5-1", s], "array"),
        (
            vec!["sbatch", "-d", "afterok:424242", s],
            "Job dependency problem",
        ),
        (vec!["sbatch", p], "does not look like a batch script"),
        (vec!["sbatch", "/nonexistent/job.sh"], "Unable to open file"),
    ];
    for (argv, want) in cases {
        let out = c.run(&argv);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{argv:?} succeeded");
        assert!(
            err.to_lowercase().contains(&want.to_lowercase()),
            "{argv:?}: stderr `{err}`"
        );
    }
    let q = c.ok(&["squeue", "-h", "-t", "all"]);
    assert_eq!(q.trim(), "", "a refused submit left a job behind");
    let bad = c.run(&[
        "sacct",
        "-nu",
        "root",
        "-o",
        "Account%256",
        "|",
        "tail",
        "-1",
    ]);
    assert!(!bad.status.success(), "sacct must reject junk arguments");
}

#[test]
fn nodes_drain_and_resume() {
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        ..ClusterSpec::default()
    });
    let denied = c.run(&["scontrol", "update", "nodename=tn1", "state=drain"]);
    assert!(!denied.status.success());
    c.ok(&[
        "scontrol",
        "update",
        "NodeName=tn1",
        "State=DRAIN",
        "Reason=maintenance",
    ]);
    // The entry declares its cores per socket: one socket of all the CPUs.
    let cpus = ClusterSpec::default().cpus;
    let info = c.ok(&["sinfo", "-h", "-N", "-o", "%N %T %d %z"]);
    assert!(
        info.lines()
            .any(|l| l.trim() == format!("tn1 drained 1024 1:{cpus}:1")),
        "{info}"
    );
    let shown = c.ok(&["scontrol", "show", "node", "tn1"]);
    assert!(shown.contains(" TmpDisk=1024 "), "{shown}");
    assert!(shown.contains(" Sockets=1 Boards=1"), "{shown}");
    let reasons = c.ok(&["sinfo", "-R", "-h"]);
    assert!(reasons.contains("maintenance"), "{reasons}");
    let ids: Vec<u32> = (0..3).map(|_| c.sbatch(&["-c", "1"], "sleep 1")).collect();
    for id in &ids {
        c.wait_state(*id, "COMPLETED", T);
        let node = c.field(*id, "NodeList");
        assert_eq!(node.trim(), "tn2");
    }
    c.ok(&["scontrol", "update", "nodename=tn1", "state=resume"]);
    assert!(wait_until(T, || c
        .ok(&["sinfo", "-h", "-N", "-o", "%N %T"])
        .lines()
        .any(|l| l.trim() == "tn1 idle")));
}

#[test]
fn srun_inside_a_batch_job_and_config() {
    let c = Cluster::start(ClusterSpec::default());
    let id = c.sbatch(
        &["-o", "steps.out"],
        "srun echo step-says-hi\nsrun sh -c 'echo proc=$SLURM_PROCID step=$SLURM_STEP_ID'",
    );
    c.wait_state(id, "COMPLETED", T);
    let out = read(c.work.join("steps.out"));
    assert!(out.contains("step-says-hi"), "{out}");
    assert!(out.contains("proc=0 step=1"), "{out}");
    let acct = c.sacct_rows(id, "JobID,State");
    assert!(
        acct.lines().any(|l| l == format!("{id}.0|COMPLETED")),
        "{acct}"
    );
    let conf = c.ok(&["scontrol", "show", "config"]);
    assert!(
        conf.lines()
            .any(|l| l.starts_with("MinJobAge") && l.ends_with("= 300 sec")),
        "{conf}"
    );
    assert!(
        conf.lines()
            .any(|l| l.starts_with("MaxArraySize") && l.ends_with("= 1001")),
        "{conf}"
    );
    for (key, value) in [("AuthType", "auth/drover"), ("PrivateData", "none")] {
        assert!(
            conf.lines()
                .any(|l| l.starts_with(key) && l.ends_with(&format!("= {value}"))),
            "{conf}"
        );
    }
    let part = c.ok(&["sinfo", "-o", "%P"]);
    assert!(part.lines().any(|l| l.trim() == "debug*"), "{part}");
}

#[test]
fn scontrol_update_changes_jobs_in_the_controller() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    let id = c.sbatch(&["--hold", "-t", "10", "-J", "before"], "true");
    let job = id.to_string();
    let limit = || c.field(id, "Timelimit");
    assert_eq!(limit(), "00:10:00");
    // A relative limit moves the job's own, once per update.
    c.ok(&[
        "scontrol",
        "update",
        &format!("JobId={job}"),
        "TimeLimit=+30",
    ]);
    c.ok(&[
        "scontrol",
        "update",
        &format!("JobId={job}"),
        "TimeLimit=+30",
    ]);
    assert_eq!(limit(), "01:10:00");
    c.ok(&[
        "scontrol",
        "update",
        &format!("JobId={job}"),
        "TimeLimit=-10",
        "JobName=after",
    ]);
    assert_eq!(limit(), "01:00:00");
    assert_eq!(c.field(id, "JobName"), "after");
    // Refused changes change nothing, each in one line.
    let bad = c.run(&[
        "scontrol",
        "update",
        &format!("JobId={job}"),
        "Partition=nope",
    ]);
    assert_eq!(bad.status.code(), Some(1));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(
        err.trim(),
        format!("Invalid partition name specified for job {job}")
    );
    let bad = c.run(&[
        "scontrol",
        "update",
        &format!("JobId={job}"),
        "TimeLimit=-2:00:00",
    ]);
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("decrement larger than current time limit"),
        "{bad:?}"
    );
    assert_eq!(limit(), "01:00:00");
    let bad = c.run(&[
        "scontrol",
        "update",
        &format!("JobId={job}"),
        &format!("Comment={}", "c".repeat(2000)),
    ]);
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr).trim(),
        format!("Pathname of a file, directory or other parameter too long for job {job}")
    );
    assert_eq!(c.field(id, "Comment"), "");
    c.ok(&["scancel", &job]);
}

#[test]
fn notify_reaches_the_batch_scripts_stderr_and_the_sruns_terminal() {
    let c = Cluster::start(ClusterSpec::default());
    let (out, err) = (c.work.join("notify.out"), c.work.join("notify.err"));
    let id = c.sbatch(
        &[
            "-o",
            &out.display().to_string(),
            "-e",
            &err.display().to_string(),
        ],
        "echo started\nsleep 300",
    );
    assert!(wait_until(T, || read(&out).contains("started")));
    c.ok(&[
        "scontrol",
        "notify",
        &id.to_string(),
        "disk",
        "nearly",
        "full",
    ]);
    assert!(
        wait_until(T, || read(&err).contains("disk nearly full")),
        "{}",
        read(&err)
    );
    c.ok(&["scancel", &id.to_string()]);
    // An srun that holds its allocation prints the message as `srun: MESSAGE`.
    let srun_err = c.work.join("srun.err");
    let mut srun = c
        .command("srun")
        .args(["-J", "notified", "sleep", "60"])
        .stdin(std::process::Stdio::null())
        .stderr(std::fs::File::create(&srun_err).unwrap())
        .spawn()
        .unwrap();
    let running = || {
        c.ok(&["squeue", "-h", "-n", "notified", "-t", "R", "-o", "%A"])
            .trim()
            .parse::<u32>()
            .ok()
    };
    assert!(wait_until(T, || running().is_some()));
    let job = running().unwrap().to_string();
    c.ok(&["scontrol", "notify", &job, "checkpoint", "now"]);
    assert!(
        wait_until(T, || read(&srun_err).contains("srun: checkpoint now")),
        "{}",
        read(&srun_err)
    );
    c.ok(&["scancel", &job]);
    srun.wait().unwrap();
    // A finished job takes no message.
    let done = c.run(&["scontrol", "notify", &id.to_string(), "late"]);
    assert!(!done.status.success());
}
