//! What jobs use, measured by their cgroups on a real cluster (the tests run as root on
//! hosts with cgroups mounted): `sstat` of a running batch step, `sacct` MaxRSS and
//! TotalCPU of finished batch and `srun` steps, what their tasks read and wrote; and
//! `--mem=0`, which takes all of a node's memory.

use std::path::Path;
use std::time::Duration;
use tests::{Cluster, ClusterSpec, wait_until};

const T: Duration = Duration::from_secs(60);

fn one_node() -> Cluster {
    Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    })
}

fn wait_file(path: &Path) {
    assert!(
        wait_until(T, || path.exists()),
        "{} never written",
        path.display()
    );
}

/// A Python program that holds `mb` MB (every page touched), burns a little CPU,
/// writes `ready`, and returns once `go` exists.
fn hold_memory(mb: u32, ready: &str, go: &str) -> String {
    format!(
        "python3 -c \"\nimport os, time\nx = bytearray({mb} << 20)\nfor i in range(0, len(x), 4096): x[i] = 1\n\
         n = 0\nfor i in range(300000): n += i\nopen('{ready}', 'w').close()\n\
         while not os.path.exists('{go}'): time.sleep(0.05)\n\""
    )
}

/// Bytes of a sacct/sstat memory figure (`52348K`, `2G`, `1000`).
fn bytes(text: &str) -> u64 {
    let (digits, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: u64 = digits
        .parse()
        .unwrap_or_else(|_| panic!("not a figure: `{text}`"));
    n << match unit {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        other => panic!("unit {other} in `{text}`"),
    }
}

/// Microseconds of a TotalCPU figure (`00:01.250`, `00:00:03`, `01:02:03`).
fn cpu_us(text: &str) -> u64 {
    let (main, ms) = match text.split_once('.') {
        Some((m, f)) => (m, f.parse::<u64>().unwrap()),
        None => (text, 0),
    };
    let secs = main
        .split(':')
        .fold(0u64, |acc, part| acc * 60 + part.parse::<u64>().unwrap());
    secs * 1_000_000 + ms * 1000
}

fn sacct_step(c: &Cluster, step: &str, fields: &str) -> Vec<String> {
    let out = c.ok(&["sacct", "-n", "-P", "-o", fields, "-j", step]);
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("{step}|")))
        .unwrap_or_else(|| panic!("no row for {step} in:\n{out}"));
    line.split('|').map(String::from).collect()
}

#[test]
fn sstat_shows_a_running_batch_step_and_sacct_keeps_what_it_used() {
    let c = one_node();
    let ready = c.work.join("ready");
    // The script writes 8 MB through a child it reaps, then holds 80 MB.
    let id = c.sbatch(
        &[],
        &format!(
            "head -c 8388608 /dev/zero > written\n{}",
            hold_memory(80, "ready", "go")
        ),
    );
    wait_file(&ready);
    let step = format!("{id}.batch");
    let out = c.ok(&[
        "sstat",
        "-n",
        "-P",
        "-o",
        "JobID,MaxRSS,MaxRSSNode,NTasks",
        "-j",
        &step,
    ]);
    let row: Vec<&str> = out.trim().split('|').collect();
    assert_eq!(
        (row[0], row[2], row[3]),
        (step.as_str(), "tn1", "1"),
        "{out}"
    );
    assert!(bytes(row[1]) >= 80 << 20, "sstat MaxRSS {}", row[1]);
    // Without a step: the lowest running one, here the batch step.
    let out = c.ok(&["sstat", "-n", "-P", "-o", "JobID", "-j", &id.to_string()]);
    assert_eq!(out.trim(), step);
    // Another user is not told what root's job uses.
    let bob = c.user("drover-bob");
    let denied = c.run_as(&bob, &["sstat", "-n", "-P", "-j", &step]);
    assert!(denied.stdout.is_empty(), "{denied:?}");
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains("tn1: Access/permission denied"),
        "{denied:?}"
    );

    std::fs::write(c.work.join("go"), "").unwrap();
    c.wait_state(id, "COMPLETED", T);
    let row = sacct_step(
        &c,
        &step,
        "JobID,MaxRSS,MaxRSSNode,TotalCPU,UserCPU,MaxDiskWrite,MaxDiskWriteTask",
    );
    assert!(bytes(&row[1]) >= 80 << 20, "sacct MaxRSS {}", row[1]);
    assert_eq!(row[2], "tn1");
    assert!(cpu_us(&row[3]) > 0, "TotalCPU {}", row[3]);
    assert!(cpu_us(&row[4]) <= cpu_us(&row[3]) + 20_000, "{row:?}");
    // What the script wrote, its child's bytes included: the batch step is one task.
    assert!(
        (8.0..9.0).contains(&megabytes(&row[5])),
        "MaxDiskWrite {}",
        row[5]
    );
    assert_eq!(row[6], "0", "{row:?}");
    // The job's own line adds up its steps' CPU time; it has no MaxRSS of its own.
    let job = c.ok(&[
        "sacct",
        "-n",
        "-X",
        "-P",
        "-o",
        "MaxRSS,TotalCPU",
        "-j",
        &id.to_string(),
    ]);
    let job: Vec<&str> = job.trim().split('|').collect();
    assert_eq!(job[0], "");
    assert_eq!(job[1], row[3]);
    // A finished job has nothing running.
    let out = c.run(&["sstat", "-j", &id.to_string()]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("No steps running for job {id}")),
        "{out:?}"
    );
}

#[test]
fn an_srun_steps_usage_is_counted_task_by_task() {
    let c = one_node();
    // Task 1 touches 90 MB, task 0 30 MB; task 0 also spins a little on the CPU.
    let script = c.work.join("task.py");
    std::fs::write(
        &script,
        "import os\nrank = int(os.environ['SLURM_PROCID'])\n\
         x = bytearray((30 if rank == 0 else 90) << 20)\n\
         for i in range(0, len(x), 4096): x[i] = 1\n\
         n = sum(range(15_000_000)) if rank == 0 else 0\n",
    )
    .unwrap();
    let id = c.sbatch(
        &["-n", "2"],
        &format!("srun -n 2 python3 {}", script.display()),
    );
    c.wait_state(id, "COMPLETED", T);
    let row = sacct_step(
        &c,
        &format!("{id}.0"),
        "JobID,MaxRSS,MaxRSSNode,MaxRSSTask,AveRSS,NTasks,TotalCPU,MinCPUNode,MinCPUTask",
    );
    // MaxRSS is the larger task's, as Slurm's; AveRSS lies between the two tasks.
    let (max, ave) = (bytes(&row[1]), bytes(&row[4]));
    assert!(max >= 90 << 20, "MaxRSS {}", row[1]);
    assert_eq!((row[2].as_str(), row[3].as_str()), ("tn1", "1"), "{row:?}");
    assert!(
        ave >= 30 << 20 && ave < max,
        "AveRSS {} of MaxRSS {}",
        row[4],
        row[1]
    );
    assert_eq!(row[5], "2");
    assert!(cpu_us(&row[6]) > 0, "TotalCPU {}", row[6]);
    // The task that spun used more CPU: the least is task 1's.
    assert_eq!((row[7].as_str(), row[8].as_str()), ("tn1", "1"), "{row:?}");
}

/// Megabytes of a sacct/sstat disk figure (`64.02M`, `8M`, `0.50M`).
fn megabytes(text: &str) -> f64 {
    text.strip_suffix('M')
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a disk figure: `{text}`"))
}

#[test]
fn an_srun_steps_reads_and_writes_are_counted_task_by_task() {
    let c = one_node();
    // Task 0 holds 60 MB; task 1 writes 64 MB to a file (in the page cache, which its
    // memory figures leave out); task 2 reads 16 MB. Each then says so and waits.
    let input = c.work.join("input.bin");
    std::fs::write(&input, vec![7u8; 16 << 20]).unwrap();
    let (output, go) = (c.work.join("output.bin"), c.work.join("go"));
    let script = c.work.join("io.py");
    std::fs::write(
        &script,
        format!(
            "import os, time\nrank = int(os.environ['SLURM_PROCID'])\n\
             if rank == 0:\n    x = bytearray(60 << 20)\n    for i in range(0, len(x), 4096): x[i] = 1\n\
             if rank == 1:\n    chunk = b'x' * (1 << 20)\n    with open('{out}', 'wb') as o:\n        for _ in range(64): o.write(chunk)\n\
             if rank == 2:\n    with open('{inp}', 'rb') as i:\n        while i.read(1 << 20): pass\n\
             open('{dir}/ready.%d' % rank, 'w').close()\n\
             while not os.path.exists('{go}'): time.sleep(0.05)\n",
            out = output.display(),
            inp = input.display(),
            dir = c.work.display(),
            go = go.display(),
        ),
    )
    .unwrap();
    let id = c.sbatch(
        &["-n", "3"],
        &format!("srun -n 3 python3 {}", script.display()),
    );
    for rank in 0..3 {
        wait_file(&c.work.join(format!("ready.{rank}")));
    }
    // Live: the tasks' processes say what they read and wrote so far.
    let step = format!("{id}.0");
    let live = c.ok(&[
        "sstat",
        "-n",
        "-P",
        "--noconvert",
        "-o",
        "MaxDiskWriteTask,MaxDiskReadTask,MaxRSSTask,MaxDiskWrite",
        "-j",
        &step,
    ]);
    let live: Vec<&str> = live.trim().split('|').collect();
    assert_eq!(&live[..3], ["1", "2", "0"], "sstat {live:?}");
    assert!(megabytes(live[3]) >= 64.0, "sstat MaxDiskWrite {}", live[3]);
    std::fs::write(&go, "").unwrap();
    c.wait_state(id, "COMPLETED", T);
    // Kept: what each task read and wrote, read as it ended.
    let row = sacct_step(
        &c,
        &step,
        "JobID,MaxDiskWrite,MaxDiskWriteTask,MaxDiskWriteNode,AveDiskWrite,MaxDiskRead,\
         MaxDiskReadTask,AveDiskRead,MaxRSSTask,TRESUsageOutTot",
    );
    let (write, ave_write, read) = (megabytes(&row[1]), megabytes(&row[4]), megabytes(&row[5]));
    assert!((64.0..66.0).contains(&write), "MaxDiskWrite {}", row[1]);
    assert_eq!((row[2].as_str(), row[3].as_str()), ("1", "tn1"), "{row:?}");
    // The averages over three tasks, to the two decimals printed.
    assert!(
        ave_write * 3.0 > write - 0.05,
        "AveDiskWrite {} of {}",
        row[4],
        row[1]
    );
    assert!((16.0..18.0).contains(&read), "MaxDiskRead {}", row[5]);
    assert_eq!(row[6], "2", "{row:?}");
    assert!(
        megabytes(&row[7]) * 3.0 > read - 0.05,
        "AveDiskRead {}",
        row[7]
    );
    // The task that held memory has the most, though the writer's cgroup holds more
    // page cache.
    assert_eq!(row[8], "0", "{row:?}");
    assert!(row[9].starts_with("fs/disk="), "{row:?}");
}

#[test]
fn mem_zero_takes_all_of_the_nodes_memory() {
    let c = one_node();
    let first = c.sbatch(
        &["--mem=0"],
        "echo $SLURM_MEM_PER_NODE > mem.txt\nwhile [ ! -e go ]; do sleep 0.05; done",
    );
    wait_file(&c.work.join("mem.txt"));
    let mem = std::fs::read_to_string(c.work.join("mem.txt")).unwrap();
    assert_eq!(mem.trim(), "8192");
    assert!(
        c.field(first, "AllocTRES").contains("mem=8G"),
        "{}",
        c.field(first, "AllocTRES")
    );
    // Any memory more on the node waits for it.
    let second = c.sbatch(&["--mem=1M"], "true");
    assert!(
        wait_until(T, || c.squeue_field(second, "%r") == "Resources"),
        "second job: {}",
        c.squeue_field(second, "%T %r")
    );
    std::fs::write(c.work.join("go"), "").unwrap();
    c.wait_state(first, "COMPLETED", T);
    c.wait_state(second, "COMPLETED", T);
}
