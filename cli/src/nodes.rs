//! What the commands that show nodes (sinfo, scontrol) need to present a node record:
//! its state (checked when a reply arrives), its S:C:T and its GRES.

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

/// A node's sockets, cores per socket and threads per core: its CPUs as sockets of one
/// core of one thread, as Slurm counts a node configured with CPUs alone. sinfo's
/// S:C:T and `scontrol show node` both read it.
pub fn socket_core_thread(n: &NodeInfo) -> (u32, u32, u32) {
    (n.cpus.max(1), 1, 1)
}

/// A node's GPUs as Slurm's GRES: `gpu:h100:4`, `gpu:4`, `(null)` for a node without
/// any; `count` is how many to show (all of them, or those in use).
pub fn gres(n: &NodeInfo, count: u32) -> String {
    if n.gpus == 0 {
        return "(null)".into();
    }
    match n.gpu_type.as_str() {
        "" => format!("gpu:{count}"),
        t => format!("gpu:{t}:{count}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_gres() {
        let n = |gpus, ty: &str| NodeInfo {
            gpus,
            gpu_type: ty.into(),
            ..Default::default()
        };
        assert_eq!(gres(&n(0, "h100"), 0), "(null)");
        assert_eq!(gres(&n(4, ""), 2), "gpu:2");
        assert_eq!(gres(&n(4, "h100"), 4), "gpu:h100:4");
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
}
