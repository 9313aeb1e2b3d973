//! Heterogeneous jobs through the real CLI: `#SBATCH hetjob` components start
//! together on their own nodes, are listed as Slurm lists them, end with their leader,
//! and are cancelled whole.

use std::time::Duration;
use tests::{Cluster, ClusterSpec};

const T: Duration = Duration::from_secs(30);

#[test]
fn components_start_together_show_as_slurms_and_end_with_their_leader() {
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        cpus: 2,
        ..ClusterSpec::default()
    });
    // Two components of two CPUs: one on each node. The leader's script waits for
    // the gate file.
    let gate = c.path().join("gate");
    let env = c.path().join("het.env");
    let leader = c.sbatch(
        &[],
        &format!(
            "#SBATCH -c 2\n#SBATCH hetjob\n#SBATCH -c 2 -J second\n\
             env > {}\nwhile [ ! -e {} ]; do sleep 0.1; done",
            env.display(),
            gate.display()
        ),
    );
    let other = leader + 1;
    c.wait_state(leader, "RUNNING", T);
    c.wait_state(other, "RUNNING", T);
    let rows = c.ok(&["squeue", "-h", "-o", "%i %j %T", "-S", "i"]);
    assert!(rows.contains(&format!("{leader}+0 ")), "{rows}");
    assert!(
        rows.contains(&format!("{leader}+1 second RUNNING")),
        "{rows}"
    );
    let show = c.ok(&["scontrol", "show", "job", &other.to_string()]);
    assert!(
        show.contains(&format!("JobId={other} HetJobId={leader} HetJobOffset=1 ")),
        "{show}"
    );
    assert!(
        show.contains(&format!("HetJobIdSet={leader}-{other}")),
        "{show}"
    );
    let nodes = |id: u32| c.squeue_field(id, "%N");
    assert_ne!(nodes(leader), nodes(other));
    // The script sees each component, as Slurm's `_HET_GROUP_N` variables.
    assert!(tests::wait_until(T, || std::fs::read_to_string(&env)
        .is_ok_and(|e| e.contains("SLURM_HET_SIZE=2"))));
    let env = std::fs::read_to_string(&env).unwrap();
    assert!(
        env.contains(&format!("SLURM_JOB_ID_HET_GROUP_1={other}\n")),
        "{env}"
    );
    assert!(
        env.contains(&format!(
            "SLURM_JOB_NODELIST_HET_GROUP_1={}\n",
            nodes(other)
        )),
        "{env}"
    );
    // `scontrol show job LEADER` shows every component, and `LEADER+1` the second.
    let all = c.ok(&["scontrol", "show", "job", &leader.to_string()]);
    assert_eq!(all.matches("HetJobOffset=").count(), 2, "{all}");
    let plus = c.ok(&["scontrol", "show", "job", &format!("{leader}+1")]);
    assert!(plus.contains(&format!("JobId={other} ")), "{plus}");
    // From outside, `--jobid=N --het-group=1` runs a step in the second component.
    let out = c.ok(&[
        "srun",
        &format!("--jobid={leader}"),
        "--het-group=1",
        "printenv",
        "SLURM_JOB_ID",
    ]);
    assert_eq!(out.trim(), other.to_string());

    std::fs::write(&gate, "").unwrap();
    c.wait_state(leader, "COMPLETED", T);
    c.wait_state(other, "COMPLETED", T);

    // A component no node can hold refuses the whole submission: no job is queued.
    let script = c.path().join("too-big.sh");
    std::fs::write(&script, "#!/bin/sh\n#SBATCH hetjob\n#SBATCH -c 3\ntrue\n").unwrap();
    let out = c.run(&["sbatch", &script.display().to_string()]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("Requested node configuration is not available"),
        "{out:?}"
    );
    let next = c.run(&["squeue", "-h", "-t", "all", "-j", &(other + 1).to_string()]);
    assert!(
        String::from_utf8_lossy(&next.stderr).contains("Invalid job id specified"),
        "{next:?}"
    );
}

#[test]
fn cancelling_a_component_cancels_the_whole_job() {
    let c = Cluster::start(ClusterSpec::default());
    let leader = c.sbatch(&["-H"], "#SBATCH hetjob\n#SBATCH -J part\ntrue");
    c.ok(&["scancel", &(leader + 1).to_string()]);
    c.wait_state(leader, "CANCELLED", T);
    c.wait_state(leader + 1, "CANCELLED", T);
}

#[test]
fn salloc_of_components_gives_its_command_each_ones_variables_and_no_batch_step() {
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        cpus: 2,
        ..ClusterSpec::default()
    });
    let env = c.path().join("salloc.env");
    let out = c.run(&[
        "salloc",
        "-c",
        "2",
        ":",
        "-c",
        "1",
        "sh",
        "-c",
        &format!("env > {}", env.display()),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let leader: u32 = stderr
        .lines()
        .find_map(|l| l.strip_prefix("salloc: Granted job allocation "))
        .and_then(|id| id.trim().parse().ok())
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        stderr.contains(&format!(
            "salloc: job {leader} has been allocated resources"
        )),
        "{stderr}"
    );
    let env = std::fs::read_to_string(&env).unwrap();
    assert!(env.contains("SLURM_HET_SIZE=2\n"), "{env}");
    assert!(env.contains("SLURM_CPUS_PER_TASK_HET_GROUP_0=2\n"), "{env}");
    assert!(env.contains("SLURM_CPUS_PER_TASK_HET_GROUP_1=1\n"), "{env}");
    assert!(
        env.contains(&format!("SLURM_JOB_ID_HET_GROUP_1={}\n", leader + 1)),
        "{env}"
    );
    // Both components, as N+0 and N+1, named `interactive`; an allocation has no
    // batch step, as in Slurm.
    let rows = c.ok(&[
        "sacct",
        "-n",
        "-P",
        "-o",
        "JobID,JobName",
        "-j",
        &leader.to_string(),
    ]);
    let rows: Vec<&str> = rows.lines().collect();
    assert_eq!(
        rows,
        [
            format!("{leader}+0|interactive"),
            format!("{leader}+1|interactive")
        ],
        "{rows:?}"
    );
}

#[test]
fn a_step_over_several_components_numbers_its_tasks_across_them() {
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        cpus: 2,
        ..ClusterSpec::default()
    });
    let out = c.run(&[
        "salloc",
        "-c",
        "1",
        ":",
        "-c",
        "1",
        "sh",
        "-c",
        "srun --label --het-group=0-1 printenv SLURM_JOB_ID; \
         srun -l -n1 echo a : -O -n2 echo b; \
         srun --het-group=1 printenv SLURM_JOB_ID; \
         srun -l --het-group=0,1 -o both.out echo x; \
         srun -l --het-group=1 echo B : --het-group=0 echo A; \
         srun --het-group=2 true",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let leader: u32 = stderr
        .lines()
        .find_map(|l| l.strip_prefix("salloc: Granted job allocation "))
        .and_then(|id| id.trim().parse().ok())
        .unwrap_or_else(|| panic!("{stderr}"));
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.sort_unstable();
    let second = (leader + 1).to_string();
    let first = format!("0: {leader}");
    let other = format!("1: {second}");
    let mut want = [
        first.as_str(),
        "0: a",
        other.as_str(),
        "1: b",
        "2: b",
        second.as_str(),
        "0: A",
        "1: B",
    ];
    want.sort_unstable();
    assert_eq!(lines, want, "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "srun: error: Attempt to run a job step with het group value of 2, \
             but the job allocation has maximum value of 1"
        ),
        "{stderr}"
    );
    // One file for the whole step holds both components' tasks.
    let mut both: Vec<String> = std::fs::read_to_string(c.work.join("both.out"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    both.sort();
    assert_eq!(both, ["0: x", "1: x"]);
}

#[test]
fn srun_of_components_outside_an_allocation_allocates_them_first() {
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        cpus: 2,
        ..ClusterSpec::default()
    });
    let out = c.run(&[
        "srun", "-l", "-n1", "-o", "both.out", "echo", "one", ":", "-n1", "echo", "two",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("has been allocated resources"), "{stderr}");
    // `-o` carries to the second component, which names none.
    let mut lines: Vec<String> = std::fs::read_to_string(c.work.join("both.out"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    assert_eq!(lines, ["0: one", "1: two"]);
    // Given back: both components ended.
    let rows = c.ok(&["sacct", "-n", "-X", "-P", "-o", "JobID,State"]);
    assert_eq!(rows.matches("COMPLETED").count(), 2, "{rows}");
}
