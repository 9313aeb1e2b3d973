//! What this node offers: CPUs, memory, GPUs and features. A node finds them on its
//! host (CPUs, memory from `/proc/meminfo`, GPUs from the host's `GpuInventory`: NVML,
//! `nvml`, or `NoGpus` without the driver) and registers what it found; the controller
//! compares that with the config and drains a node that lacks something. A node whose
//! `[[nodes]]` entry says `config_overrides` registers what the entry declares instead.
//!
//! Its GPUs then come from `ConfiguredGpus`, a fake inventory: nothing is probed. The
//! machines Drover is tested on have no GPUs, so the devices, their NUMA nodes and
//! NVLink domains are what the config says (indices `0..n` of its `gpu_type`, the
//! topology from `gpu_numa`/`nvlink_domains` or the default split), and jobs see those
//! indices in `CUDA_VISIBLE_DEVICES`.

use model::{Config, GpuDevice};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InventoryError {
    /// A GPU backend failed to list the devices; the node should not register GPUs.
    #[error("gpu discovery through {backend} failed: {message}")]
    Gpu {
        backend: &'static str,
        message: String,
    },
}

/// GPUs found: the devices by index, and the device file and memory of each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovered {
    pub gpus: Vec<GpuDevice>,
    pub files: Vec<String>,
    /// Each device's memory in MB (a share's is its GPU's); 0 or missing: not known.
    pub memory_mb: Vec<u64>,
}

/// A source of the node's GPU devices.
pub trait GpuInventory {
    /// For logs: where the devices come from.
    fn backend(&self) -> &'static str;
    /// The devices, by index.
    fn discover(&self) -> Result<Discovered, InventoryError>;
}

/// The GPUs the config declares, with the topology it declares (fake devices: no
/// hardware is probed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfiguredGpus {
    pub devices: Vec<GpuDevice>,
}

impl GpuInventory for ConfiguredGpus {
    fn backend(&self) -> &'static str {
        "config"
    }

    fn discover(&self) -> Result<Discovered, InventoryError> {
        Ok(Discovered {
            files: model::config::default_gpu_files(self.devices.len() as u32),
            gpus: self.devices.clone(),
            memory_mb: Vec::new(),
        })
    }
}

/// A host without GPUs (or without a way to find them).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoGpus;

impl GpuInventory for NoGpus {
    fn backend(&self) -> &'static str {
        "none"
    }

    fn discover(&self) -> Result<Discovered, InventoryError> {
        Ok(Discovered::default())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeResources {
    pub cpus: u32,
    pub memory_mb: u64,
    pub gpus: Vec<GpuDevice>,
    /// The CPU ids of each NUMA node, by NUMA node id (empty: not known).
    pub numa_cpus: Vec<Vec<u32>>,
    pub features: Vec<String>,
    /// The device file of each GPU, by index (`gpu_files`, else `/dev/nvidiaN`).
    pub gpu_files: Vec<String>,
    /// The memory of each GPU device in MB, by index (`gpu_memory` for a node that
    /// says `config_overrides`, else NVML's); 0: not known.
    pub gpu_memory_mb: Vec<u64>,
    /// False when the config does not list this node and the host was measured.
    pub from_config: bool,
}

/// The resources of node `name`: what its config entry declares when the entry says
/// `config_overrides`, else what the host has (CPUs, memory, GPUs from `host_gpus`),
/// with the entry's features and `gpu_files`.
pub fn node_resources(
    config: &Config,
    name: &str,
    host_gpus: &dyn GpuInventory,
) -> Result<NodeResources, InventoryError> {
    let entry = config.node_entry(name);
    if let Some(entry) = entry.filter(|e| e.config_overrides) {
        let node = config
            .node_list()
            .into_iter()
            .find(|n| n.name == name)
            .expect("an entry that names a node lists it");
        let found = ConfiguredGpus {
            devices: node.gpus.clone(),
        }
        .discover()?;
        return Ok(NodeResources {
            cpus: node.cpus,
            memory_mb: node.memory_mb,
            gpus: found.gpus,
            numa_cpus: node.numa_cpus,
            features: node.features,
            gpu_files: entry.gpu_file_list(),
            gpu_memory_mb: entry.gpu_memory_list(),
            from_config: true,
        });
    }
    let mut found = host_gpus.discover()?;
    if let Some(e) = entry.filter(|e| e.shared_gpus().iter().any(|s| s.1 > 0)) {
        // Shards then MPS shares, from the last whole GPUs: as the config lists a
        // node's devices.
        found = share_gpus(found, &e.shared_gpus(), e.whole_shared_gpus);
    }
    let gpu_files = match entry {
        Some(e) if !e.gpu_files.is_empty() => e.gpu_file_list(),
        _ => found.files,
    };
    Ok(NodeResources {
        cpus: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1),
        memory_mb: crate::procfs::memory_mb().unwrap_or(0),
        gpus: found.gpus,
        numa_cpus: crate::topology::numa_cpus(),
        features: entry.map(|e| e.features.clone()).unwrap_or_default(),
        gpu_memory_mb: found.memory_mb,
        gpu_files,
        from_config: false,
    })
}

/// The last whole GPUs found in shared use, as many as `shares` names: the first
/// `count` of them of its first kind of share (a shard or an MPS share), then of the
/// next. Each becomes `per_gpu` devices of its kind on its device file and NUMA node,
/// the shares of one GPU in an NVLink domain of their own, after every other device (as
/// the config lists a node's devices). With `whole`, the GPU stays a device too, placed
/// after the others and before the shares, which name it (`GpuDevice::whole`). The
/// devices are numbered again.
fn share_gpus(found: Discovered, shares: &[(&str, u32, u32)], whole: bool) -> Discovered {
    let wholes: Vec<usize> = (0..found.gpus.len())
        .filter(|&k| {
            let t = &found.gpus[k].gpu_type;
            !model::node::is_mig_profile(t) && !model::node::is_share_type(t)
        })
        .collect();
    let total: usize = shares.iter().map(|s| s.1 as usize).sum();
    let mut shared: Vec<(usize, &str, u32)> = Vec::new();
    let mut last = wholes[wholes.len().saturating_sub(total)..].iter();
    for &(kind, count, per_gpu) in shares {
        shared.extend(
            last.by_ref()
                .take(count as usize)
                .map(|&k| (k, kind, per_gpu)),
        );
    }
    let mut out = Discovered::default();
    let memory = |k: usize| found.memory_mb.get(k).copied().unwrap_or(0);
    let mut push = |gpu: GpuDevice, k: usize| {
        out.gpus.push(GpuDevice {
            index: out.gpus.len() as u32,
            ..gpu
        });
        out.files.extend(found.files.get(k).cloned());
        out.memory_mb.push(memory(k));
        out.gpus.len() as u32 - 1
    };
    for (k, gpu) in found.gpus.iter().enumerate() {
        if !shared.iter().any(|s| s.0 == k) {
            push(gpu.clone(), k);
        }
    }
    let whole_index: Vec<Option<u32>> = shared
        .iter()
        .map(|&(k, ..)| whole.then(|| push(found.gpus[k].clone(), k)))
        .collect();
    let first_domain = found
        .gpus
        .iter()
        .map(|g| g.nvlink)
        .max()
        .map_or(0, |d| d + 1);
    for ((domain, &(k, kind, per_gpu)), whole) in (first_domain..).zip(&shared).zip(whole_index) {
        for _ in 0..per_gpu {
            let share = GpuDevice {
                gpu_type: kind.to_string(),
                nvlink: domain,
                whole,
                ..found.gpus[k].clone()
            };
            push(share, k);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_gpus_become_shards_after_the_other_devices() {
        let gpu = |index: u32, gpu_type: &str, nvlink: u32| GpuDevice {
            index,
            gpu_type: gpu_type.into(),
            uuid: format!("GPU-{index}"),
            numa: index / 2,
            nvlink,
            whole: None,
        };
        let found = Discovered {
            gpus: vec![
                gpu(0, "h100", 0),
                gpu(1, "h100", 0),
                gpu(2, "h100", 1),
                gpu(3, "1g.10gb", 2),
            ],
            files: (0..3)
                .map(|i| format!("/dev/nvidia{i}"))
                .chain(["/dev/nvidia3".into()])
                .collect(),
            memory_mb: vec![81559, 81559, 81559, 9984],
        };
        let shared = share_gpus(found.clone(), &[("shard", 1, 3)], false);
        let kinds: Vec<(u32, &str, u32, &str)> = shared
            .gpus
            .iter()
            .zip(&shared.files)
            .map(|(g, f)| (g.index, g.gpu_type.as_str(), g.nvlink, f.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                (0, "h100", 0, "/dev/nvidia0"),
                (1, "h100", 0, "/dev/nvidia1"),
                (2, "1g.10gb", 2, "/dev/nvidia3"),
                (3, "shard", 3, "/dev/nvidia2"),
                (4, "shard", 3, "/dev/nvidia2"),
                (5, "shard", 3, "/dev/nvidia2"),
            ]
        );
        assert!(
            shared.gpus[3..]
                .iter()
                .all(|g| g.uuid == "GPU-2" && g.numa == 1 && g.whole.is_none())
        );
        // Given whole too: GPU 2 moves after the MIG instance, and its shards name it;
        // with MPS on GPU 1 as well, the shards come first, as the config lists them.
        let shared = share_gpus(found, &[("shard", 1, 2), ("mps", 1, 2)], true);
        let kinds: Vec<(u32, &str, Option<u32>, &str)> = shared
            .gpus
            .iter()
            .zip(&shared.files)
            .map(|(g, f)| (g.index, g.gpu_type.as_str(), g.whole, f.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                (0, "h100", None, "/dev/nvidia0"),
                (1, "1g.10gb", None, "/dev/nvidia3"),
                (2, "h100", None, "/dev/nvidia1"),
                (3, "h100", None, "/dev/nvidia2"),
                (4, "shard", Some(2), "/dev/nvidia1"),
                (5, "shard", Some(2), "/dev/nvidia1"),
                (6, "mps", Some(3), "/dev/nvidia2"),
                (7, "mps", Some(3), "/dev/nvidia2"),
            ]
        );
        // Each share has its GPU's memory.
        assert_eq!(
            shared.memory_mb,
            [81559, 9984, 81559, 81559, 81559, 81559, 81559, 81559]
        );
    }

    const CONFIG: &str = r#"
[[nodes]]
names = "gpu[01-02]"
cpus = 8
memory = "32G"
gpus = 2
gpu_type = "h100"
features = ["nvlink"]
config_overrides = true
"#;

    #[test]
    fn configured_node_gets_fake_gpus_of_its_type() {
        let config = Config::parse(CONFIG, "t.toml").unwrap();
        let r = node_resources(&config, "gpu02", &NoGpus).unwrap();
        assert!(r.from_config);
        assert_eq!((r.cpus, r.memory_mb), (8, 32 * 1024));
        assert_eq!(r.features, vec!["nvlink".to_string()]);
        let gpus: Vec<(u32, &str)> = r
            .gpus
            .iter()
            .map(|g| (g.index, g.gpu_type.as_str()))
            .collect();
        assert_eq!(gpus, vec![(0, "h100"), (1, "h100")]);
        assert_eq!(r.gpu_files, vec!["/dev/nvidia0", "/dev/nvidia1"]);
        let text = format!(
            "{CONFIG}\n[[nodes]]\nnames = \"g9\"\ncpus = 1\nmemory = \"1G\"\ngpus = 2\ngpu_files = \"/srv/fake/gpu[3-4]\"\nconfig_overrides = true\n"
        );
        let config = Config::parse(&text, "t.toml").unwrap();
        let r = node_resources(&config, "g9", &NoGpus).unwrap();
        assert_eq!(r.gpu_files, vec!["/srv/fake/gpu3", "/srv/fake/gpu4"]);
    }

    #[test]
    fn configured_gpus_carry_their_topology() {
        let text = format!(
            "{CONFIG}\n[[nodes]]\nnames = \"big\"\ncpus = 64\nmemory = \"512G\"\ngpus = 8\n\
             gpu_type = \"a100\"\ngpu_numa = [0, 0, 1, 1, 0, 0, 1, 1]\n\
             nvlink_domains = [\"0-1\", \"2-3\", \"4-7\"]\nconfig_overrides = true\n"
        );
        let config = Config::parse(&text, "t.toml").unwrap();
        let topo = |name: &str| -> Vec<(u32, u32, u32)> {
            node_resources(&config, name, &NoGpus)
                .unwrap()
                .gpus
                .iter()
                .map(|g| (g.index, g.numa, g.nvlink))
                .collect()
        };
        // The default: half the GPUs per NUMA node, one NVLink domain per NUMA node.
        assert_eq!(topo("gpu01"), vec![(0, 0, 0), (1, 1, 1)]);
        assert_eq!(
            topo("big"),
            vec![
                (0, 0, 0),
                (1, 0, 0),
                (2, 1, 1),
                (3, 1, 1),
                (4, 0, 2),
                (5, 0, 2),
                (6, 1, 2),
                (7, 1, 2)
            ]
        );
    }

    /// Two GPUs "found" on the host.
    struct TwoFound;

    impl GpuInventory for TwoFound {
        fn backend(&self) -> &'static str {
            "test"
        }
        fn discover(&self) -> Result<Discovered, InventoryError> {
            Ok(Discovered {
                gpus: (0..2)
                    .map(|i| GpuDevice::with_default_topology(i, 2, "h100_80gb_hbm3"))
                    .collect(),
                files: vec!["/dev/nvidia4".into(), "/dev/nvidia5".into()],
                memory_mb: Vec::new(),
            })
        }
    }

    #[test]
    fn a_node_without_config_overrides_reports_what_its_host_has() {
        let text = "[[nodes]]\nnames = \"real1\"\ncpus = 4096\nmemory = \"512T\"\ngpus = 8\n\
                    gpu_type = \"h100\"\nfeatures = [\"ib\"]\n";
        let config = Config::parse(text, "t.toml").unwrap();
        let r = node_resources(&config, "real1", &TwoFound).unwrap();
        assert!(!r.from_config);
        // The host's CPUs and memory, not the 4096 and 512T declared.
        assert!(r.cpus < 4096 && r.memory_mb > 0 && r.memory_mb < 512 << 20);
        assert_eq!(r.features, vec!["ib".to_string()]);
        assert_eq!(r.gpus.len(), 2);
        assert_eq!(r.gpu_files, vec!["/dev/nvidia4", "/dev/nvidia5"]);
    }

    #[test]
    fn unknown_node_measures_the_host() {
        let config = Config::parse(CONFIG, "t.toml").unwrap();
        let r = node_resources(&config, "elsewhere", &NoGpus).unwrap();
        assert!(!r.from_config);
        assert!(r.cpus >= 1 && r.memory_mb > 0);
        assert!(r.gpus.is_empty());
    }
}
