//! GPU discovery through NVML (`nvml-wrapper`, which loads `libnvidia-ml.so.1` at run
//! time): each GPU's index, UUID, model, memory, NUMA node, device file and NVLink
//! peers, and the MIG instances of a GPU in MIG mode, each a device of its own whose
//! type is its profile.
//!
//! Worked example, on the 8-GPU node of the tests' fake NVML (`fakes/nvml`): GPUs 0-6
//! are whole H100s, typed `h100_80gb_hbm3` (the model name in lower case, without
//! "NVIDIA", spaces as `_`, as Slurm's AutoDetect=nvml names types), GPUs 0-3 on NUMA
//! node 0 and 4-6 on NUMA node 1; NVLink joins 0-1, 2-3 and 4-5, so they form NVLink
//! domains 0, 1 and 2, and GPU 6, whose partner is in MIG mode, domain 3. GPU 7 is in MIG
//! mode: its seven instances come next as devices 7-13 of type `1g.10gb`, on NUMA node
//! 1, each a domain of its own, all behind the device file `/dev/nvidia7`.

use crate::inventory::{Discovered, GpuInventory, InventoryError};
use model::GpuDevice;
use nvml_wrapper::Nvml;
use std::collections::BTreeMap;

/// NVML's NVML_NVLINK_MAX_LINKS: the links a GPU may have.
const NVLINK_MAX_LINKS: u32 = 18;

/// The GPUs of this host, as NVML sees them.
pub struct NvmlGpus {
    nvml: Nvml,
}

impl NvmlGpus {
    /// Loads NVML (`libnvidia-ml.so.1` from the loader's path); an error says why it
    /// cannot, e.g. on a host without the NVIDIA driver.
    pub fn load() -> Result<NvmlGpus, String> {
        Nvml::init()
            .map(|nvml| NvmlGpus { nvml })
            .map_err(|e| e.to_string())
    }

    /// Loads NVML from `path`.
    pub fn load_from(path: &std::path::Path) -> Result<NvmlGpus, String> {
        Nvml::builder()
            .lib_path(path.as_os_str())
            .init()
            .map(|nvml| NvmlGpus { nvml })
            .map_err(|e| e.to_string())
    }
}

impl crate::gpu_sampler::DeviceSampler for NvmlGpus {
    fn sample(&self, uuid: &str) -> Option<model::gpu_use::DeviceSample> {
        let dev = self.nvml.device_by_uuid(uuid).ok()?;
        let utilization = dev.utilization_rates().ok()?;
        Some(model::gpu_use::DeviceSample {
            utilization_percent: utilization.gpu,
            memory_used_bytes: dev.memory_info().map_or(0, |m| m.used),
        })
    }
}

/// Slurm's AutoDetect=nvml type of a model name: `NVIDIA H100 80GB HBM3` is
/// `h100_80gb_hbm3`.
pub fn type_of_model(name: &str) -> String {
    let lower = name.trim().to_lowercase();
    let bare = lower.strip_prefix("nvidia ").unwrap_or(&lower);
    bare.split_whitespace().collect::<Vec<_>>().join("_")
}

/// The profile of a MIG instance from its name: `NVIDIA H100 80GB HBM3 MIG 1g.10gb` is
/// `1g.10gb`.
pub fn mig_profile(name: &str) -> Option<String> {
    let (_, profile) = name.rsplit_once(" MIG ")?;
    Some(profile.trim().to_string())
}

/// NVLink domains from the links between GPUs: the connected groups, numbered in the
/// order of their first GPU. `links[i]` lists the GPUs GPU `i` has an active link to.
pub fn nvlink_domains(links: &[Vec<usize>]) -> Vec<u32> {
    let mut domain: Vec<Option<u32>> = vec![None; links.len()];
    let mut next = 0;
    for start in 0..links.len() {
        if domain[start].is_some() {
            continue;
        }
        let mut stack = vec![start];
        while let Some(g) = stack.pop() {
            if domain[g].is_some() {
                continue;
            }
            domain[g] = Some(next);
            stack.extend(links[g].iter().copied().filter(|p| *p < links.len()));
            // Links are symmetric in NVML; walk the reverse ones too.
            stack.extend((0..links.len()).filter(|o| links[*o].contains(&g)));
        }
        next += 1;
    }
    domain.into_iter().map(|d| d.unwrap_or(0)).collect()
}

impl GpuInventory for NvmlGpus {
    fn backend(&self) -> &'static str {
        "nvml"
    }

    fn discover(&self) -> Result<Discovered, InventoryError> {
        let err = |e: nvml_wrapper::error::NvmlError| InventoryError::Gpu {
            backend: "nvml",
            message: e.to_string(),
        };
        let count = self.nvml.device_count().map_err(err)?;
        struct Whole {
            name: String,
            uuid: String,
            memory_mb: u64,
            numa: u32,
            file: String,
            bus_id: String,
            peers: Vec<String>,
            migs: Vec<(String, String, u64)>,
        }
        const MB: u64 = 1 << 20;
        let mut wholes = Vec::new();
        for i in 0..count {
            let dev = self.nvml.device_by_index(i).map_err(err)?;
            let bus_id = dev.pci_info().map(|p| p.bus_id).unwrap_or_default();
            let numa = dev
                .numa_node_id()
                .ok()
                .or_else(|| {
                    crate::topology::host()
                        .and_then(|t| t.locality_of(&bus_id))
                        .and_then(|l| l.numa)
                })
                .or_else(|| numa_from_sysfs(&bus_id))
                .unwrap_or(0);
            let minor = dev.minor_number().unwrap_or(i);
            let in_mig = dev.mig_mode().is_ok_and(|m| m.current == 1);
            let mut migs = Vec::new();
            if in_mig {
                for j in 0..dev.mig_device_count().unwrap_or(0) {
                    // Slots without an instance answer an error: skipped.
                    let Ok(mig) = dev.mig_device_by_index(j) else {
                        continue;
                    };
                    let profile = mig.name().ok().and_then(|n| mig_profile(&n));
                    if let (Some(profile), Ok(uuid)) = (profile, mig.uuid()) {
                        let memory = mig.memory_info().map_or(0, |m| m.total / MB);
                        migs.push((profile, uuid, memory));
                    }
                }
            }
            let mut peers = Vec::new();
            if !in_mig {
                for link in 0..NVLINK_MAX_LINKS {
                    let l = dev.link_wrapper_for(link);
                    if l.is_active().unwrap_or(false)
                        && let Ok(remote) = l.remote_pci_info()
                    {
                        peers.push(remote.bus_id);
                    }
                }
            }
            wholes.push(Whole {
                name: dev.name().map_err(err)?,
                uuid: dev.uuid().map_err(err)?,
                memory_mb: dev.memory_info().map_or(0, |m| m.total / MB),
                numa,
                file: format!("/dev/nvidia{minor}"),
                bus_id,
                peers,
                migs,
            });
        }
        // NVLink domains of the whole GPUs not in MIG mode, by bus id.
        let plain: Vec<&Whole> = wholes.iter().filter(|w| w.migs.is_empty()).collect();
        let by_bus: BTreeMap<&str, usize> = plain
            .iter()
            .enumerate()
            .map(|(k, w)| (w.bus_id.as_str(), k))
            .collect();
        let links: Vec<Vec<usize>> = plain
            .iter()
            .map(|w| {
                w.peers
                    .iter()
                    .filter_map(|b| by_bus.get(b.as_str()).copied())
                    .collect()
            })
            .collect();
        let domains = nvlink_domains(&links);
        let mut next_domain = domains.iter().max().map_or(0, |d| d + 1);
        let mut out = Discovered::default();
        for (k, w) in plain.iter().enumerate() {
            out.gpus.push(GpuDevice {
                index: out.gpus.len() as u32,
                gpu_type: type_of_model(&w.name),
                uuid: w.uuid.clone(),
                numa: w.numa,
                nvlink: domains[k],
                whole: None,
            });
            out.files.push(w.file.clone());
            out.memory_mb.push(w.memory_mb);
        }
        for w in wholes.iter().filter(|w| !w.migs.is_empty()) {
            for (profile, uuid, memory_mb) in &w.migs {
                out.gpus.push(GpuDevice {
                    index: out.gpus.len() as u32,
                    gpu_type: profile.clone(),
                    uuid: uuid.clone(),
                    numa: w.numa,
                    nvlink: next_domain,
                    whole: None,
                });
                next_domain += 1;
                out.files.push(w.file.clone());
                out.memory_mb.push(*memory_mb);
            }
        }
        Ok(out)
    }
}

/// The NUMA node of a PCI device from sysfs, for drivers whose NVML lacks the call.
fn numa_from_sysfs(bus_id: &str) -> Option<u32> {
    // NVML writes 8 hex digits of domain, sysfs 4: 00000000:18:00.0 is 0000:18:00.0.
    let short = bus_id.get(4..)?.to_lowercase();
    let text = std::fs::read_to_string(format!("/sys/bus/pci/devices/{short}/numa_node")).ok()?;
    text.trim()
        .parse::<i32>()
        .ok()
        .and_then(|n| u32::try_from(n).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_named_as_slurm_names_them() {
        assert_eq!(type_of_model("NVIDIA H100 80GB HBM3"), "h100_80gb_hbm3");
        assert_eq!(
            type_of_model("Tesla V100-SXM2-16GB"),
            "tesla_v100-sxm2-16gb"
        );
        assert_eq!(
            mig_profile("NVIDIA H100 80GB HBM3 MIG 1g.10gb").as_deref(),
            Some("1g.10gb")
        );
        assert_eq!(mig_profile("NVIDIA H100"), None);
    }

    #[test]
    fn nvlink_domains_are_the_connected_groups() {
        // 0-1 linked one way, 2-3 both ways, 4 alone, 5-6-7 a chain.
        let links = vec![
            vec![1],
            vec![],
            vec![3],
            vec![2],
            vec![],
            vec![6],
            vec![7],
            vec![],
        ];
        assert_eq!(nvlink_domains(&links), vec![0, 0, 1, 1, 2, 3, 3, 3]);
    }
}
