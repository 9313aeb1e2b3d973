//! Slurm's `-m/--distribution`: how a step's tasks go over its nodes, and how they
//! would go over sockets and cores, as srun, sbatch and salloc read it and write it back
//! to `SLURM_DISTRIBUTION` (Slurm 22.05's `verify_dist_type`).
//!
//! Worked example: `-m '*:*'` is `block:cyclic` (a node part of `*` is block, a socket
//! part of `*` is cyclic, and a core part of `*` is the socket's); `-m block,pack` packs
//! the tasks onto the first nodes; `-m plane=4` deals the tasks out four at a time,
//! shown as `plane` with `SLURM_DIST_PLANESIZE=4`. Only the node part places tasks here:
//! Drover binds CPUs per task, not per socket, so the socket and core parts are kept and
//! shown, not used.

use std::fmt;

/// The node part of a distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeDistribution {
    /// Consecutive tasks share a node (Slurm's default).
    Block,
    /// Task `i` runs on node `i mod N`.
    Cyclic,
    /// Blocks of this many tasks, dealt out node by node.
    Plane(u32),
    /// Task by task as `-w` or `SLURM_HOSTFILE` lists the nodes
    /// (`step::arbitrary_layout`); without such a list, as `Block`.
    Arbitrary,
}

/// The socket or core part of a distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuDistribution {
    Block,
    Cyclic,
    Fcyclic,
}

impl CpuDistribution {
    fn parse(word: &str) -> Option<CpuDistribution> {
        match word {
            "block" => Some(CpuDistribution::Block),
            "cyclic" => Some(CpuDistribution::Cyclic),
            "fcyclic" => Some(CpuDistribution::Fcyclic),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            CpuDistribution::Block => "block",
            CpuDistribution::Cyclic => "cyclic",
            CpuDistribution::Fcyclic => "fcyclic",
        }
    }
}

/// A whole `-m` value, its `*`s resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Distribution {
    /// `None`: only `pack` or `nopack` was given.
    pub nodes: Option<NodeDistribution>,
    pub sockets: Option<CpuDistribution>,
    pub cores: Option<CpuDistribution>,
    /// `pack` (true) or `nopack` (false).
    pub pack: Option<bool>,
}

/// Slurm's words for a value it does not take.
pub const INVALID: &str = "Invalid --distribution specification";

impl Distribution {
    /// Reads a `-m` value: `NODES[:SOCKETS[:CORES]][,pack|,nopack]`, `plane=N`,
    /// `pack` or `nopack`; anything else is `INVALID`.
    pub fn parse(text: &str) -> Result<Distribution, &'static str> {
        let pack_word = |w: &str| match w {
            "pack" => Ok(true),
            "nopack" => Ok(false),
            _ => Err(INVALID),
        };
        let (layout, pack) = match text.split_once(',') {
            Some((layout, pack)) => (layout, Some(pack_word(pack)?)),
            None => match pack_word(text) {
                Ok(pack) => {
                    return Ok(Distribution {
                        nodes: None,
                        sockets: None,
                        cores: None,
                        pack: Some(pack),
                    });
                }
                Err(_) => (text, None),
            },
        };
        let parts: Vec<&str> = layout.split(':').collect();
        if parts.len() > 3 {
            return Err(INVALID);
        }
        let nodes = match parts[0] {
            "*" | "block" => NodeDistribution::Block,
            "cyclic" => NodeDistribution::Cyclic,
            "arbitrary" => NodeDistribution::Arbitrary,
            plane => {
                let size = plane
                    .strip_prefix("plane=")
                    .and_then(|n| n.parse::<u32>().ok())
                    .filter(|n| *n > 0)
                    .ok_or(INVALID)?;
                if parts.len() > 1 {
                    return Err(INVALID);
                }
                NodeDistribution::Plane(size)
            }
        };
        let sockets = match parts.get(1) {
            None => None,
            Some(&"*") => Some(CpuDistribution::Cyclic),
            Some(word) => Some(CpuDistribution::parse(word).ok_or(INVALID)?),
        };
        let cores = match parts.get(2) {
            None => None,
            Some(&"*") => sockets,
            Some(word) => Some(CpuDistribution::parse(word).ok_or(INVALID)?),
        };
        Ok(Distribution {
            nodes: Some(nodes),
            sockets,
            cores,
            pack,
        })
    }

    /// The plane size of `plane=N` (`SLURM_DIST_PLANESIZE`).
    pub fn plane_size(&self) -> Option<u32> {
        match self.nodes {
            Some(NodeDistribution::Plane(size)) => Some(size),
            _ => None,
        }
    }

    /// How the tasks go over the nodes: `pack` packs block-distributed tasks onto the
    /// first nodes; `nopack`, `arbitrary` and no node part are block.
    pub fn task_layout(&self) -> TaskLayout {
        match (self.nodes, self.pack) {
            (Some(NodeDistribution::Cyclic), _) => TaskLayout::Cyclic,
            (Some(NodeDistribution::Plane(size)), _) => TaskLayout::Plane(size),
            (_, Some(true)) => TaskLayout::Pack,
            _ => TaskLayout::Block,
        }
    }
}

/// The nodes a hostfile (`SLURM_HOSTFILE`) lists, one task each, in order: one or more
/// hostlist expressions a line, `#` starting a comment.
///
/// Example: `n3\nn1 # rank 1\nn[1-2]` lists `n3 n1 n1 n2`.
pub fn hostfile_nodes(text: &str) -> Result<Vec<String>, crate::hostlist::HostlistError> {
    let mut nodes = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("");
        for item in line.split_whitespace() {
            nodes.extend(crate::hostlist::expand(item)?);
        }
    }
    Ok(nodes)
}

/// `SLURM_DISTRIBUTION` as Slurm writes it: `block:cyclic`, `block,pack`, `plane`.
impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(nodes) = self.nodes {
            f.write_str(match nodes {
                NodeDistribution::Block => "block",
                NodeDistribution::Cyclic => "cyclic",
                NodeDistribution::Plane(_) => "plane",
                NodeDistribution::Arbitrary => "arbitrary",
            })?;
            for part in [self.sockets, self.cores].into_iter().flatten() {
                write!(f, ":{}", part.name())?;
            }
        }
        if let Some(pack) = self.pack {
            if self.nodes.is_some() {
                f.write_str(",")?;
            }
            f.write_str(if pack { "pack" } else { "nopack" })?;
        }
        Ok(())
    }
}

/// How a step's tasks are placed on its nodes (`model::step::layout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskLayout {
    /// An even share per node, numbered node after node.
    #[default]
    Block,
    /// An even share per node, task `i` on node `i mod N`.
    Cyclic,
    /// Blocks of this many tasks dealt out node by node.
    Plane(u32),
    /// As many tasks as the first nodes' CPUs hold, each later node keeping one.
    Pack,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostfile_lists_a_node_per_task() {
        assert_eq!(
            hostfile_nodes("n3\nn1 # rank 1\n\n# all\nn[1-2],n4\n").unwrap(),
            ["n3", "n1", "n1", "n2", "n4"]
        );
        assert!(hostfile_nodes("n[1-\n").is_err());
    }

    #[test]
    fn values_read_and_written_back_as_slurms() {
        let shown = |text: &str| Distribution::parse(text).unwrap().to_string();
        for (given, env) in [
            ("block", "block"),
            ("cyclic:fcyclic", "cyclic:fcyclic"),
            ("block:block:cyclic", "block:block:cyclic"),
            ("*", "block"),
            ("*:*", "block:cyclic"),
            ("*:*:*", "block:cyclic:cyclic"),
            ("*:block:*", "block:block:block"),
            ("pack", "pack"),
            ("nopack", "nopack"),
            ("*,pack", "block,pack"),
            ("block:block:block,nopack", "block:block:block,nopack"),
            ("plane=1", "plane"),
            ("arbitrary", "arbitrary"),
        ] {
            assert_eq!(shown(given), env, "{given}");
        }
        assert_eq!(
            Distribution::parse("plane=4").unwrap().plane_size(),
            Some(4)
        );
        for bad in [
            "blocker",
            "block:cyclicer",
            "block:cyclic:cyclicer",
            "**",
            "*:**",
            "*:*:**",
            ",",
            ",packer",
            ",nopacker",
            ",pack",
            ",nopack",
            "plane=0",
            "plane=2:block",
            "block:block:block:block",
            "",
        ] {
            assert_eq!(Distribution::parse(bad), Err(INVALID), "{bad:?}");
        }
    }

    #[test]
    fn the_node_part_and_pack_make_the_task_layout() {
        let layout = |text: &str| Distribution::parse(text).unwrap().task_layout();
        assert_eq!(layout("block"), TaskLayout::Block);
        assert_eq!(layout("pack"), TaskLayout::Pack);
        assert_eq!(layout("block,pack"), TaskLayout::Pack);
        assert_eq!(layout("block,nopack"), TaskLayout::Block);
        assert_eq!(layout("cyclic:block"), TaskLayout::Cyclic);
        assert_eq!(layout("plane=3"), TaskLayout::Plane(3));
        assert_eq!(layout("arbitrary"), TaskLayout::Block);
    }
}
