//! What the commands that show nodes (sinfo, scontrol) need to present a node record:
//! its state (checked when a reply arrives), its S:C:T, its GRES, its address and the
//! version its daemon answers as.

use crate::exit::Exit;
use proto::v1::NodeInfo;

/// A node's state from its wire parts. Replies are checked with `check_node_states`
/// when they arrive, so an unknown number cannot reach here; were one to, the node
/// would read as UNKNOWN.
pub fn node_state(n: &NodeInfo) -> model::NodeState {
    proto::convert::node_state_from_wire(n).unwrap_or(model::NodeState {
        health: model::NodeHealth::Unknown,
        drain: n.drain,
        responding: n.responding,
        alloc: model::NodeAlloc::Idle,
    })
}

/// Refuses a reply with a node state this command does not know (a newer controller).
pub fn check_node_states(command: &str, nodes: &[NodeInfo]) -> Result<(), Exit> {
    for n in nodes {
        proto::convert::node_state_from_wire(n).map_err(|e| Exit::error(command, e.to_string()))?;
    }
    Ok(())
}

/// A node's sockets, cores per socket and threads per core, as its config entry
/// declares them or Slurm infers them. sinfo's S:C:T and `scontrol show node` both
/// read it.
pub fn socket_core_thread(n: &NodeInfo) -> (u32, u32, u32) {
    let l = proto::convert::layout_from_wire(n);
    (l.sockets, l.cores_per_socket, l.threads_per_core)
}

/// A node's NodeAddr as Slurm's: the host its daemon answers on (the daemon's address
/// without its port), or its name before the daemon registered.
pub fn node_addr(n: &NodeInfo) -> String {
    match n.addr.rsplit_once(':') {
        Some((host, _)) if !host.is_empty() => host.to_string(),
        _ if !n.addr.is_empty() => n.addr.clone(),
        _ => n.name.clone(),
    }
}

/// The version a node's daemon answers as (Slurm's, `SLURM_VERSION`), `N/A` before it
/// registered.
pub fn node_version(n: &NodeInfo) -> &'static str {
    if n.addr.is_empty() {
        "N/A"
    } else {
        model::config::SLURM_VERSION
    }
}

/// A node's FreeMem as Slurm prints it: MB, `N/A` before its daemon said.
pub fn free_mem(n: &NodeInfo) -> String {
    n.load
        .map_or_else(|| "N/A".into(), |l| l.free_mem_mb.to_string())
}

/// A node's CPULoad as Slurm prints it: `1.25`, `N/A` before its daemon said.
pub fn cpu_load(n: &NodeInfo) -> String {
    n.load.map_or_else(
        || "N/A".into(),
        |l| format!("{}.{:02}", l.cpu_load_centi / 100, l.cpu_load_centi % 100),
    )
}

/// A node's GPUs as Slurm's GRES, one term per type: `gpu:h100:4`, `gpu:4`,
/// `gpu:h100:7,gpu:1g.10gb:7` (whole GPUs and MIG instances), `(null)` for a node
/// without any.
pub fn gres(n: &NodeInfo) -> String {
    gres_terms(n, |g| g.count)
}

/// The GPUs of a node in use, as `gres` writes them: `gpu:h100:2,gpu:1g.10gb:0`.
pub fn gres_used(n: &NodeInfo) -> String {
    gres_terms(n, |g| g.alloc)
}

fn gres_terms(n: &NodeInfo, count: impl Fn(&proto::v1::GpuGres) -> u32) -> String {
    if n.gres.is_empty() {
        return "(null)".into();
    }
    let terms: Vec<String> = n
        .gres
        .iter()
        .map(|g| match g.gpu_type.as_str() {
            "" => format!("gpu:{}", count(g)),
            t if model::node::is_share_type(t) => format!("{t}:{}", count(g)),
            t => format!("gpu:{t}:{}", count(g)),
        })
        .collect();
    terms.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_gres() {
        let n = |types: &[(&str, u32, u32)]| NodeInfo {
            gres: types
                .iter()
                .map(|&(t, count, alloc)| proto::v1::GpuGres {
                    gpu_type: t.into(),
                    count,
                    alloc,
                })
                .collect(),
            ..Default::default()
        };
        assert_eq!(gres(&n(&[])), "(null)");
        assert_eq!(gres_used(&n(&[])), "(null)");
        assert_eq!(gres_used(&n(&[("", 4, 2)])), "gpu:2");
        assert_eq!(gres(&n(&[("h100", 4, 0)])), "gpu:h100:4");
        let mixed = n(&[("h100", 7, 2), ("1g.10gb", 7, 0)]);
        assert_eq!(gres(&mixed), "gpu:h100:7,gpu:1g.10gb:7");
        assert_eq!(gres_used(&mixed), "gpu:h100:2,gpu:1g.10gb:0");
        let shared = n(&[("h100", 1, 0), ("shard", 8, 3)]);
        assert_eq!(gres(&shared), "gpu:h100:1,shard:8");
        assert_eq!(gres_used(&shared), "gpu:h100:0,shard:3");
        let newer = NodeInfo {
            name: "n1".into(),
            allocation: 9,
            ..Default::default()
        };
        assert_eq!(
            check_node_states("sinfo", &[newer]).unwrap_err().stderr,
            "sinfo: error: node n1: unknown allocation 9 from the controller\n"
        );
    }

    #[test]
    fn node_addr_is_the_host_without_the_port() {
        let mut n = NodeInfo {
            name: "node1".into(),
            ..NodeInfo::default()
        };
        assert_eq!((node_addr(&n).as_str(), node_version(&n)), ("node1", "N/A"));
        n.addr = "127.0.0.1:7811".into();
        assert_eq!(
            (node_addr(&n).as_str(), node_version(&n)),
            ("127.0.0.1", "22.05.8")
        );
        n.addr = "[::1]:7811".into();
        assert_eq!(node_addr(&n), "[::1]");
    }

    #[test]
    fn load_reads_as_slurm_prints_it() {
        let mut n = NodeInfo::default();
        assert_eq!(
            (free_mem(&n).as_str(), cpu_load(&n).as_str()),
            ("N/A", "N/A")
        );
        n.load = Some(proto::v1::NodeLoad {
            free_mem_mb: 15012,
            cpu_load_centi: 105,
        });
        assert_eq!(
            (free_mem(&n).as_str(), cpu_load(&n).as_str()),
            ("15012", "1.05")
        );
    }
}
