//! Node daemons that find their resources instead of taking them from the config: their
//! GPUs through NVML, here the fake `libnvidia-ml.so.1` of `fakes/nvml` (8 H100s, one
//! in MIG mode) put on the loader's path; the controller drains a node that finds less
//! than it is configured with, the difference as the reason, and schedules the MIG
//! instances of a declared `mig_layout` as GPUs typed by their profile. The fake NVML
//! also says how busy each GPU is (`FAKE_NVML_UTILIZATION`): the node daemon samples
//! jobs' GPUs, `sacct` shows the use, and a QOS's GPU idle policy cancels
//! a job that holds its GPU idle.

use std::time::Duration;
use tests::{Cluster, ClusterSpec, wait_until};

const T: Duration = Duration::from_secs(30);

#[test]
fn a_node_that_finds_fewer_gpus_than_configured_is_drained_with_the_difference() {
    let (_lib, path) = fake_nvml();
    // Both nodes declare the 7 whole GPUs of the fake node; tn2's NVML shows only 4.
    let entry = |name: &str| {
        format!(
            "[[nodes]]\nnames = \"{name}\"\ncpus = 1\nmemory = \"64M\"\ngpus = 7\n\
             gpu_type = \"h100\"\n"
        )
    };
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        node_entries: format!("{}{}", entry("tn1"), entry("tn2")),
        node_env: vec![
            vec![path.clone()],
            vec![path, ("FAKE_NVML_GPUS".into(), "4".into())],
        ],
        ..ClusterSpec::default()
    });
    let reasons = drain_reasons(&c);
    assert_eq!(
        reasons.trim(),
        "tn2|gres/gpu:h100 count reported lower than configured (4 < 7)"
    );
    let states = c.ok(&["sinfo", "-h", "-N", "-o", "%N %T"]);
    assert!(states.lines().any(|l| l == "tn1 idle"), "{states}");
    // tn1's GPUs are the ones NVML found, under the declared type.
    let id = c.sbatch(
        &["--gpus=h100:2", "-w", "tn1"],
        "echo gpus=$CUDA_VISIBLE_DEVICES",
    );
    c.wait_state(id, "COMPLETED", T);
    let out = std::fs::read_to_string(c.work.join(format!("slurm-{id}.out"))).unwrap();
    assert!(out.starts_with("gpus="), "{out}");
    let detail = c.ok(&["scontrol", "show", "node", "tn1"]);
    assert!(detail.contains("gpu:h100:7"), "{detail}");
}

#[test]
fn mig_instances_of_a_declared_layout_are_gpus_of_their_own() {
    let (_lib, path) = fake_nvml();
    // The fake node's GPU 7 is split into seven 1g.10gb: tn1 declares that layout (and
    // GPU 6 shared as four shards), tn2 one the admin did not apply.
    let entry = |name: &str, layout: &str| {
        format!(
            "[[nodes]]\nnames = \"{name}\"\ncpus = 2\nmemory = \"64M\"\ngpus = 8\n\
             gpu_type = \"h100\"\nmig_layout = \"{layout}\"\nshards_per_gpu = 4\n"
        )
    };
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        node_entries: format!("{}{}", entry("tn1", "7x1g.10gb"), entry("tn2", "3x2g.20gb")),
        node_env: vec![vec![path.clone()], vec![path]],
        ..ClusterSpec::default()
    });
    let reasons = drain_reasons(&c);
    assert_eq!(
        reasons.trim(),
        "tn2|gres/gpu:2g.20gb count reported lower than configured (0 < 3)"
    );
    let gres = c.ok(&["sinfo", "-h", "-N", "-n", "tn1", "-o", "%N %T %G"]);
    // GPU 6 counts whole too: it is given whole or as shards.
    assert_eq!(gres.trim(), "tn1 idle gpu:h100:7,gpu:1g.10gb:7,shard:4");
    // Two instances for one job, a whole GPU for another, side by side.
    let slices = c.sbatch(
        &["--gpus=1g.10gb:2", "-w", "tn1", "-c", "1"],
        "echo gpus=$CUDA_VISIBLE_DEVICES jobgpus=$SLURM_JOB_GPUS",
    );
    let whole = c.sbatch(
        &["--gpus=h100:1", "-w", "tn1", "-c", "1"],
        "echo gpus=$CUDA_VISIBLE_DEVICES",
    );
    c.wait_state(slices, "COMPLETED", T);
    c.wait_state(whole, "COMPLETED", T);
    let out = std::fs::read_to_string(c.work.join(format!("slurm-{slices}.out"))).unwrap();
    let line = out.trim();
    let (gpus, job_gpus) = line
        .strip_prefix("gpus=")
        .and_then(|l| l.split_once(" jobgpus="))
        .unwrap_or_else(|| panic!("{out}"));
    let uuids: Vec<&str> = gpus.split(',').collect();
    assert_eq!(uuids.len(), 2, "{out}");
    assert!(uuids.iter().all(|u| u.starts_with("MIG-")), "{out}");
    // Node indices 6-12 are the instances (0-5 the whole GPUs, 13 the shared GPU whole,
    // 14-17 its shards).
    assert!(
        job_gpus
            .split(',')
            .all(|i| i.parse::<u32>().is_ok_and(|i| (6..13).contains(&i))),
        "{out}"
    );
    let out = std::fs::read_to_string(c.work.join(format!("slurm-{whole}.out"))).unwrap();
    assert!(!out.contains("MIG-"), "{out}");
}

#[test]
fn gpu_use_is_measured_and_a_job_holding_an_idle_gpu_is_flagged_then_cancelled() {
    let (_lib, path) = fake_nvml();
    // Each GPU's utilization and memory in use, as the fake NVML reads them: all busy
    // until the busy job has its GPU.
    let activity = tempfile::tempdir().unwrap();
    let set = |gpu: u32, text: &str| {
        std::fs::write(activity.path().join(gpu.to_string()), text).unwrap();
    };
    for gpu in 0..8 {
        set(gpu, "100 2048");
    }
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        node_entries: "[[nodes]]\nnames = \"tn1\"\ncpus = 2\nmemory = \"64M\"\ngpus = 7\n\
                       gpu_type = \"h100\"\n"
            .into(),
        node_env: vec![vec![
            path,
            (
                "FAKE_NVML_UTILIZATION".into(),
                activity.path().display().to_string(),
            ),
        ]],
        extra: "[node_daemon]\ngpu_sample_interval_s = 1\n\
                [[qos]]\nname = \"normal\"\ngpu_idle_limit = \"0:03\"\n\
                gpu_idle_action = \"cancel\"\ngpu_idle_grace = \"0:02\"\n"
            .into(),
        ..ClusterSpec::default()
    });
    let policy = c.ok(&[
        "sacctmgr",
        "-nP",
        "show",
        "qos",
        "normal",
        "format=name,gpuidlelimit,gpuidleaction,gpuidlegrace",
    ]);
    assert_eq!(policy.trim(), "normal|00:00:03|cancel|00:00:02");
    let stop = c.work.join("busy.stop");
    let busy = c.sbatch(
        &["--gpus=h100:1", "-c", "1"],
        &format!(
            "echo $CUDA_VISIBLE_DEVICES > busy.gpu\nwhile [ ! -f {} ]; do sleep 0.1; done",
            stop.display()
        ),
    );
    let gpu_file = c.work.join("busy.gpu");
    assert!(
        wait_until(T, || gpu_file.exists()),
        "the busy job did not start"
    );
    let busy_gpu: u32 = std::fs::read_to_string(&gpu_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Every other GPU goes idle, with nothing in its memory.
    for gpu in (0..8).filter(|g| *g != busy_gpu) {
        set(gpu, "0 0");
    }
    let idle = c.sbatch(&["--gpus=h100:1", "-c", "1"], "sleep 120");
    c.wait_state(idle, "CANCELLED", T);
    let shown = c.ok(&["scontrol", "show", "job", &idle.to_string()]);
    assert!(shown.contains("GpuIdleFlagged="), "{shown}");
    // The busy job, busy all along, is neither flagged nor cancelled.
    let shown = c.ok(&["scontrol", "show", "job", &busy.to_string()]);
    assert!(shown.contains("JobState=RUNNING"), "{shown}");
    assert!(!shown.contains("GpuIdleFlagged"), "{shown}");
    std::fs::write(&stop, "").unwrap();
    c.wait_state(busy, "COMPLETED", T);
    // Its batch step's use: 2 GiB of GPU memory at most, 100% busy.
    let usage = c.ok(&[
        "sacct",
        "-nP",
        "-j",
        &format!("{busy}.batch"),
        "-o",
        "TRESUsageInTot",
    ]);
    assert!(
        usage.trim().ends_with(",gres/gpumem=2G,gres/gpuutil=100"),
        "{usage}"
    );
    let usage = c.ok(&[
        "sacct",
        "-nP",
        "-j",
        &format!("{idle}.batch"),
        "-o",
        "State,TRESUsageInTot",
    ]);
    assert!(
        usage.trim().ends_with(",gres/gpumem=0,gres/gpuutil=0"),
        "{usage}"
    );
    // (sreport's sums of these figures are checked on a known workload in its unit
    // tests: its hour-rounded periods make a run of seconds here an empty report.)
}

/// A directory holding the fake NVML library as `libnvidia-ml.so.1`, and the
/// `LD_LIBRARY_PATH` setting that makes a node daemon load it.
fn fake_nvml() -> (tempfile::TempDir, (String, String)) {
    let lib = tempfile::tempdir().unwrap();
    let built = tests::bin_dir().join("libnvidia_ml.so");
    assert!(
        built.exists(),
        "{} is missing: run scripts/build.sh",
        built.display()
    );
    std::fs::copy(&built, lib.path().join("libnvidia-ml.so.1")).unwrap();
    let path = lib.path().display().to_string();
    (lib, ("LD_LIBRARY_PATH".to_string(), path))
}

/// `sinfo -R` once some node is drained: `node|reason` lines.
fn drain_reasons(c: &Cluster) -> String {
    let mut reasons = String::new();
    assert!(
        wait_until(T, || {
            reasons = c.ok(&["sinfo", "-R", "-h", "-o", "%n|%E"]);
            !reasons.trim().is_empty()
        }),
        "no node drained; logs:\n{}",
        c.logs()
    );
    reasons
}
