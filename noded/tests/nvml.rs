//! GPU discovery through the real NVML bindings (`nvml-wrapper`) against the fake
//! `libnvidia-ml.so.1` of `fakes/nvml` (this machine has no GPU): its declared 8-GPU
//! node with two NUMA nodes, NVLink pairs and one GPU in MIG mode.

use noded::inventory::GpuInventory;
use noded::nvml::NvmlGpus;
use std::path::PathBuf;

/// The fake library, installed under the name NVML's users load.
fn fake_nvml() -> (tempfile::TempDir, PathBuf) {
    let exe = std::env::current_exe().unwrap();
    let target = exe.parent().unwrap().parent().unwrap();
    let built = target.join("libnvidia_ml.so");
    assert!(
        built.exists(),
        "{} is missing: build it first (scripts/build.sh, or cargo build -p fake-nvml)",
        built.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("libnvidia-ml.so.1");
    std::fs::copy(&built, &lib).unwrap();
    (dir, lib)
}

#[test]
fn the_fake_topology_is_found_with_its_numa_nodes_nvlink_domains_and_mig_instances() {
    let (_dir, lib) = fake_nvml();
    let gpus = NvmlGpus::load_from(&lib).unwrap();
    assert_eq!(gpus.backend(), "nvml");
    let found = gpus.discover().unwrap();
    let summary: Vec<(u32, &str, u32, u32)> = found
        .gpus
        .iter()
        .map(|g| (g.index, g.gpu_type.as_str(), g.numa, g.nvlink))
        .collect();
    let h100 = "h100_80gb_hbm3";
    let mig = "1g.10gb";
    assert_eq!(
        summary,
        vec![
            (0, h100, 0, 0),
            (1, h100, 0, 0),
            (2, h100, 0, 1),
            (3, h100, 0, 1),
            (4, h100, 1, 2),
            (5, h100, 1, 2),
            // Its NVLink partner is in MIG mode.
            (6, h100, 1, 3),
            (7, mig, 1, 4),
            (8, mig, 1, 5),
            (9, mig, 1, 6),
            (10, mig, 1, 7),
            (11, mig, 1, 8),
            (12, mig, 1, 9),
            (13, mig, 1, 10),
        ]
    );
    assert_eq!(
        found.gpus[0].uuid,
        "GPU-fa4e0000-0000-0000-0000-000000000000"
    );
    assert!(
        found.gpus[7].uuid.starts_with("MIG-"),
        "{:?}",
        found.gpus[7]
    );
    assert_eq!(found.files[0], "/dev/nvidia0");
    assert_eq!(found.files[6], "/dev/nvidia6");
    assert!(found.files[7..].iter().all(|f| f == "/dev/nvidia7"));
    // NVML's memory: 80 GiB per H100, 10 GiB per 1g.10gb instance.
    let mut memory = vec![81920; 7];
    memory.extend([10240; 7]);
    assert_eq!(found.memory_mb, memory);
}

#[test]
fn a_host_without_the_driver_says_why() {
    let missing = std::path::Path::new("/nonexistent/libnvidia-ml.so.1");
    let err = NvmlGpus::load_from(missing).err().unwrap();
    assert!(!err.is_empty());
}

#[test]
fn the_inventory_command_prints_what_the_host_offers_as_slurmd_c_does() {
    let (dir, _lib) = fake_nvml();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_drover-noded"))
        .args(["--name", "g1", "inventory"])
        .env("LD_LIBRARY_PATH", dir.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let first = text.lines().next().unwrap_or("");
    assert!(first.starts_with("NodeName=g1 CPUs="), "{text}");
    assert!(
        first.ends_with(" Gres=gpu:h100_80gb_hbm3:7,gpu:1g.10gb:7"),
        "{text}"
    );
    assert_eq!(
        text.lines().filter(|l| l.starts_with("GPU ")).count(),
        14,
        "{text}"
    );
    // The processor layout from hwloc, as slurmd -C words it, and each NUMA node's
    // CPUs; a daemon built without hwloc says it has none.
    if cfg!(feature = "hwloc") {
        assert!(first.contains(" Boards=1 SocketsPerBoard="), "{text}");
        assert!(first.contains(" ThreadsPerCore="), "{text}");
        assert!(
            text.lines().any(|l| l.starts_with("NUMA 0 cpus=")),
            "{text}"
        );
    } else {
        assert!(text.contains("# no topology: "), "{text}");
    }
}
