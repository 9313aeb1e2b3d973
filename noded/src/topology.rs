//! The host's processor topology: sockets, cores, hardware threads, NUMA nodes with
//! their CPU ids, and the NUMA node and CPU ids nearest each PCI device (a GPU's
//! locality), found by hwloc through `hwlocality` when the node daemon is built with
//! the `hwloc` feature (`scripts/build.sh` turns it on where the system's hwloc is
//! installed). Without it, `discover` says so and the daemon counts CPUs from its
//! scheduler affinity, as before.
//!
//! ```text
//! 2 sockets × 8 cores × 2 threads: cpus 32, cores 16, sockets 2
//!   → "Boards=1 SocketsPerBoard=2 CoresPerSocket=8 ThreadsPerCore=2" (slurmd -C)
//! GPU at PCI 0000:3b:00.0 under NUMA node 0 (cpus 0-7,16-23) → numa 0
//! ```

use std::collections::BTreeMap;

/// A PCI address: domain, bus, device, function.
pub type PciAddress = (u32, u8, u8, u8);

/// Where a PCI device sits: its nearest NUMA node and CPU ids.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PciLocality {
    pub numa: Option<u32>,
    pub cpus: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Topology {
    pub sockets: u32,
    pub cores: u32,
    /// Hardware threads (hwloc's processing units).
    pub cpus: u32,
    /// NUMA nodes by OS index, with their CPU ids.
    pub numa_nodes: Vec<(u32, Vec<u32>)>,
    pub pci: BTreeMap<PciAddress, PciLocality>,
}

impl Topology {
    /// Slurm's node layout words, as `slurmd -C` prints them.
    pub fn slurmd_layout(&self) -> String {
        let sockets = self.sockets.max(1);
        let cores = self.cores.max(1);
        format!(
            "Boards=1 SocketsPerBoard={sockets} CoresPerSocket={} ThreadsPerCore={}",
            cores / sockets,
            (self.cpus / cores).max(1)
        )
    }

    /// The locality of the PCI device at `bus_id` (NVML's `00000000:3B:00.0`, or
    /// sysfs's `0000:3b:00.0`).
    pub fn locality_of(&self, bus_id: &str) -> Option<&PciLocality> {
        self.pci.get(&parse_bus_id(bus_id)?)
    }
}

/// Parses a PCI bus id `DOMAIN:BUS:DEVICE.FUNCTION` (hexadecimal, any width).
pub fn parse_bus_id(text: &str) -> Option<PciAddress> {
    let mut parts = text.trim().split(':');
    let (domain, bus, rest) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let (device, function) = rest.split_once('.')?;
    let hex8 = |s: &str| u8::from_str_radix(s, 16).ok();
    Some((
        u32::from_str_radix(domain, 16).ok()?,
        hex8(bus)?,
        hex8(device)?,
        hex8(function)?,
    ))
}

/// The CPU ids of each of the host's NUMA nodes, by NUMA node id: hwloc's, else the
/// kernel's (`/sys/devices/system/node/node*/cpulist`); empty when neither says.
pub fn numa_cpus() -> Vec<Vec<u32>> {
    let found: Vec<(u32, Vec<u32>)> = match host() {
        Some(t) => t.numa_nodes.clone(),
        None => sysfs_numa_nodes(std::path::Path::new("/sys/devices/system/node")),
    };
    let mut out: Vec<Vec<u32>> = Vec::new();
    for (numa, mut cpus) in found {
        // Linux numbers at most 1,024 NUMA nodes (MAX_NUMNODES).
        if numa >= 1024 {
            continue;
        }
        if out.len() <= numa as usize {
            out.resize(numa as usize + 1, Vec::new());
        }
        cpus.sort_unstable();
        out[numa as usize] = cpus;
    }
    out
}

/// The NUMA nodes under `dir` (sysfs's `node0`, `node1`, ...) with the CPU ids of
/// their `cpulist` (`0-7,16-23`).
fn sysfs_numa_nodes(dir: &std::path::Path) -> Vec<(u32, Vec<u32>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(numa) = name
            .to_str()
            .and_then(|n| n.strip_prefix("node"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(list) = std::fs::read_to_string(entry.path().join("cpulist")) else {
            continue;
        };
        let list = list.trim();
        let cpus = if list.is_empty() {
            Vec::new()
        } else {
            match model::config::parse_indices(list, u32::MAX, "CPU") {
                Ok(cpus) => cpus,
                Err(_) => continue,
            }
        };
        out.push((numa, cpus));
    }
    out.sort_unstable();
    out
}

/// The host's topology, found once per process; `None` without hwloc.
pub fn host() -> Option<&'static Topology> {
    static HOST: std::sync::OnceLock<Option<Topology>> = std::sync::OnceLock::new();
    HOST.get_or_init(|| match discover() {
        Ok(t) => Some(t),
        Err(why) => {
            tracing::info!(%why, "no processor topology from hwloc");
            None
        }
    })
    .as_ref()
}

#[cfg(not(feature = "hwloc"))]
pub fn discover() -> Result<Topology, String> {
    Err("the node daemon was built without hwloc (feature `hwloc`)".into())
}

#[cfg(feature = "hwloc")]
pub fn discover() -> Result<Topology, String> {
    use hwlocality::Topology as Hwloc;
    use hwlocality::object::TopologyObject;
    use hwlocality::object::attributes::ObjectAttributes;
    use hwlocality::object::types::ObjectType;
    use hwlocality::topology::builder::TypeFilter;

    let topo = Hwloc::builder()
        .with_io_type_filter(TypeFilter::KeepAll)
        .map_err(|e| e.to_string())?
        .build()
        .map_err(|e| e.to_string())?;
    let cpu_ids = |o: &TopologyObject| -> Vec<u32> {
        o.cpuset()
            .map(|set| set.iter_set().map(|i| usize::from(i) as u32).collect())
            .unwrap_or_default()
    };
    let numa_nodes: Vec<(u32, Vec<u32>)> = topo
        .objects_with_type(ObjectType::NUMANode)
        .filter_map(|n| Some((n.os_index()? as u32, cpu_ids(n))))
        .collect();
    let mut pci = BTreeMap::new();
    for dev in topo.pci_devices() {
        let Some(ObjectAttributes::PCIDevice(attr)) = dev.attributes() else {
            continue;
        };
        let address = (
            u32::from(attr.domain()),
            attr.bus_id(),
            attr.bus_device(),
            attr.function(),
        );
        let near = dev.first_non_io_ancestor();
        let nodes: Vec<u32> = near
            .and_then(|a| a.nodeset())
            .map(|set| set.iter_set().map(|i| usize::from(i) as u32).collect())
            .unwrap_or_default();
        pci.insert(
            address,
            PciLocality {
                // A device under one NUMA node is local to it; under several, to none.
                numa: (nodes.len() == 1).then(|| nodes[0]),
                cpus: near.map(cpu_ids).unwrap_or_default(),
            },
        );
    }
    Ok(Topology {
        sockets: topo.objects_with_type(ObjectType::Package).count() as u32,
        cores: topo.objects_with_type(ObjectType::Core).count() as u32,
        cpus: topo.objects_with_type(ObjectType::PU).count() as u32,
        numa_nodes,
        pci,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_numa_nodes_read_their_cpulists() {
        let dir = tempfile::tempdir().unwrap();
        for (node, list) in [
            ("node1", "4-7,12-15\n"),
            ("node0", "0-3,8-11\n"),
            ("node2", "\n"),
        ] {
            std::fs::create_dir(dir.path().join(node)).unwrap();
            std::fs::write(dir.path().join(node).join("cpulist"), list).unwrap();
        }
        std::fs::create_dir(dir.path().join("possible")).unwrap();
        assert_eq!(
            sysfs_numa_nodes(dir.path()),
            [
                (0, vec![0, 1, 2, 3, 8, 9, 10, 11]),
                (1, vec![4, 5, 6, 7, 12, 13, 14, 15]),
                (2, vec![]),
            ]
        );
        assert!(sysfs_numa_nodes(&dir.path().join("absent")).is_empty());
    }

    #[test]
    fn bus_ids_of_nvml_and_sysfs_name_the_same_device() {
        assert_eq!(parse_bus_id("00000000:3B:00.0"), Some((0, 0x3b, 0, 0)));
        assert_eq!(parse_bus_id("0000:3b:00.0"), Some((0, 0x3b, 0, 0)));
        assert_eq!(parse_bus_id("0001:c1:1f.7"), Some((1, 0xc1, 0x1f, 7)));
        for bad in ["", "3b:00.0", "0000:3b:00", "0000:zz:00.0", "0:0:0:0.0"] {
            assert_eq!(parse_bus_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_layout_reads_as_slurmd_prints_it() {
        let t = Topology {
            sockets: 2,
            cores: 16,
            cpus: 32,
            ..Topology::default()
        };
        assert_eq!(
            t.slurmd_layout(),
            "Boards=1 SocketsPerBoard=2 CoresPerSocket=8 ThreadsPerCore=2"
        );
        let mut t = t;
        t.pci.insert(
            (0, 0x3b, 0, 0),
            PciLocality {
                numa: Some(1),
                cpus: vec![8, 9],
            },
        );
        assert_eq!(t.locality_of("00000000:3B:00.0").unwrap().numa, Some(1));
        assert!(t.locality_of("0000:3c:00.0").is_none());
    }

    /// The real hwloc on this host: its threads are the CPUs this process may use
    /// (hwloc leaves out the disallowed ones), in whole cores and sockets.
    #[cfg(feature = "hwloc")]
    #[test]
    fn hwloc_counts_the_hosts_cpus_in_cores_and_sockets() {
        let t = discover().unwrap();
        let allowed = std::thread::available_parallelism().unwrap().get() as u32;
        assert_eq!(t.cpus, allowed);
        assert!(
            t.sockets >= 1 && t.cores >= t.sockets && t.cpus >= t.cores,
            "{t:?}"
        );
        assert_eq!(t.cpus % t.cores, 0, "{t:?}");
        assert!(!t.numa_nodes.is_empty());
        let in_nodes: usize = t.numa_nodes.iter().map(|(_, c)| c.len()).sum();
        assert_eq!(in_nodes as u32, t.cpus, "{t:?}");
    }
}
