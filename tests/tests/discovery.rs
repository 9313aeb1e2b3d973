//! Node daemons that find their resources instead of taking them from the config: their
//! GPUs through NVML, here the fake `libnvidia-ml.so.1` of `fakes/nvml` (8 H100s, one
//! in MIG mode) put on the loader's path; the controller drains a node that finds less
//! than it is configured with, the difference as the reason.

use std::time::Duration;
use tests::{Cluster, ClusterSpec, wait_until};

const T: Duration = Duration::from_secs(30);

#[test]
fn a_node_that_finds_fewer_gpus_than_configured_is_drained_with_the_difference() {
    let lib = tempfile::tempdir().unwrap();
    let built = tests::bin_dir().join("libnvidia_ml.so");
    assert!(
        built.exists(),
        "{} is missing: run scripts/build.sh",
        built.display()
    );
    std::fs::copy(&built, lib.path().join("libnvidia-ml.so.1")).unwrap();
    let path = (
        "LD_LIBRARY_PATH".to_string(),
        lib.path().display().to_string(),
    );
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
    let mut reasons = String::new();
    assert!(
        wait_until(T, || {
            reasons = c.ok(&["sinfo", "-R", "-h", "-o", "%n|%E"]);
            !reasons.trim().is_empty()
        }),
        "no node drained; logs:\n{}",
        c.logs()
    );
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
