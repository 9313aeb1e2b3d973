//! Trackable resources (TRES) as Slurm names them, for limits, weights and usage.
//!
//! Names: `cpu`, `mem` (counted in MB), `node`, `billing`, `gres/gpu`, and typed GPUs
//! `gres/gpu:h100`; `gpu` and `gpu:h100` are accepted for the last two. Counts are
//! written `cpu=64,mem=256G,gres/gpu=8`; weights `cpu=1,mem=0.25G,gres/gpu=10`, where a
//! memory weight with a unit is per that unit (`0.25G` is 0.25 per GB of memory).
//!
//! Example: a job of 2 nodes × 8 CPUs, `--mem=8G` and `--gpus-per-node=h100:2`
//! requests `cpu=16,mem=16G,node=2,gres/gpu=4,gres/gpu:h100=4`; with billing weights
//! `cpu=1,gres/gpu=10` it bills 16 + 4 × 10 = 56 per second (a typed count such as
//! `gres/gpu:h100` is billed only when it has a weight of its own).

use crate::job::{Allocation, JobSpec};
use crate::node::Node;
use std::collections::BTreeMap;

/// TRES counts by canonical name (`mem` in MB).
pub type TresCounts = BTreeMap<String, u64>;
/// TRES weights by canonical name (`mem` per MB).
pub type TresWeights = BTreeMap<String, f64>;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid TRES specification `{text}`: {reason}")]
pub struct TresError {
    pub text: String,
    pub reason: String,
}

/// The canonical name of a TRES as written by a user, or `None` if unknown.
pub fn canonical_name(name: &str) -> Option<String> {
    let n = name.trim().to_ascii_lowercase();
    match n.as_str() {
        "cpu" | "mem" | "node" | "billing" => Some(n),
        _ => {
            let gres = n.strip_prefix("gres/").unwrap_or(&n);
            let (kind, ty) = match gres.split_once(':') {
                Some((k, t)) => (k, Some(t)),
                None => (gres, None),
            };
            let ok = |s: &str| {
                !s.is_empty()
                    && s.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
            };
            if (n.starts_with("gres/") || kind == "gpu") && ok(kind) && ty.is_none_or(ok) {
                Some(format!("gres/{gres}"))
            } else {
                None
            }
        }
    }
}

fn pairs(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
}

/// Parses `cpu=64,mem=256G,gres/gpu=8`. Memory takes Slurm's units (MB without one).
pub fn parse_counts(text: &str) -> Result<TresCounts, TresError> {
    let err = |reason: String| TresError {
        text: text.to_string(),
        reason,
    };
    let mut out = TresCounts::new();
    for (name, value) in pairs(text) {
        let key = canonical_name(name).ok_or_else(|| err(format!("unknown TRES `{name}`")))?;
        let value = value.trim();
        let n = if key == "mem" {
            crate::units::parse_memory_mb(value).map_err(|e| err(e.to_string()))?
        } else {
            value
                .parse::<u64>()
                .map_err(|_| err(format!("`{value}` is not a count for {key}")))?
        };
        out.insert(key, n);
    }
    Ok(out)
}

/// Parses `cpu=1,mem=0.25G,gres/gpu=10`. A memory weight may carry a unit (K, M, G,
/// T): the weight is per that much memory.
pub fn parse_weights(text: &str) -> Result<TresWeights, TresError> {
    let err = |reason: String| TresError {
        text: text.to_string(),
        reason,
    };
    let mut out = TresWeights::new();
    for (name, value) in pairs(text) {
        let key = canonical_name(name).ok_or_else(|| err(format!("unknown TRES `{name}`")))?;
        let value = value.trim();
        let (number, per_mb) = match value.char_indices().last() {
            Some((i, c)) if key == "mem" && c.is_ascii_alphabetic() => {
                let per = match c.to_ascii_uppercase() {
                    'K' => 1.0 / 1024.0,
                    'M' => 1.0,
                    'G' => 1024.0,
                    'T' => 1024.0 * 1024.0,
                    _ => return Err(err(format!("unknown unit in `{value}`"))),
                };
                (&value[..i], per)
            }
            _ => (value, 1.0),
        };
        let w: f64 = number
            .parse()
            .ok()
            .filter(|w: &f64| w.is_finite() && *w >= 0.0)
            .ok_or_else(|| err(format!("`{value}` is not a weight for {key}")))?;
        out.insert(key, w / per_mb);
    }
    Ok(out)
}

/// Slurm's order of TRES in strings: cpu, mem, node, billing, then gres by name.
pub fn display_order(name: &str) -> (u8, &str) {
    match name {
        "cpu" => (0, name),
        "mem" => (1, name),
        "node" => (2, name),
        "billing" => (3, name),
        _ => (4, name),
    }
}

/// Names in display order.
pub fn sorted_names<V>(map: &BTreeMap<String, V>) -> Vec<&str> {
    let mut names: Vec<&str> = map.keys().map(String::as_str).collect();
    names.sort_by_key(|n| display_order(n));
    names
}

/// Formats counts as Slurm does: `cpu=4,mem=16G,node=1,gres/gpu=2`.
pub fn format_counts(counts: &TresCounts) -> String {
    sorted_names(counts)
        .into_iter()
        .map(|name| format_count(name, counts[name]))
        .collect::<Vec<_>>()
        .join(",")
}

/// Formats counts by name, as the accounting commands (sacct's AllocTRES, squeue's
/// tres-alloc) print them: `billing=4,cpu=4,gres/gpu=1,mem=16G,node=1`.
pub fn format_counts_by_name(counts: &TresCounts) -> String {
    counts
        .iter()
        .map(|(name, n)| format_count(name, *n))
        .collect::<Vec<_>>()
        .join(",")
}

fn format_count(name: &str, n: u64) -> String {
    if name == "mem" {
        format!("{name}={}", format_mem(n))
    } else {
        format!("{name}={n}")
    }
}

/// Formats counts with plain numbers (`mem` in MB): `cpu=600,mem=1024000`, as Slurm
/// prints TRES-minutes.
pub fn format_counts_raw(counts: &TresCounts) -> String {
    sorted_names(counts)
        .into_iter()
        .map(|name| format!("{name}={}", counts[name]))
        .collect::<Vec<_>>()
        .join(",")
}

fn format_mem(mb: u64) -> String {
    if mb >= 1024 * 1024 && mb.is_multiple_of(1024 * 1024) {
        format!("{}T", mb / (1024 * 1024))
    } else if mb >= 1024 && mb.is_multiple_of(1024) {
        format!("{}G", mb / 1024)
    } else {
        format!("{mb}M")
    }
}

/// Formats weights: `cpu=1,gres/gpu=1000` (memory per MB).
pub fn format_weights(weights: &TresWeights) -> String {
    sorted_names(weights)
        .into_iter()
        .map(|name| format!("{name}={}", weights[name]))
        .collect::<Vec<_>>()
        .join(",")
}

/// What a pending job asks for, the way the scheduler places it: CPUs and memory per
/// node times its nodes, GPUs over its nodes (also by type when it names one).
pub fn job_request(spec: &JobSpec) -> TresCounts {
    let nodes = spec.num_nodes.max(1);
    let (cpus_per_node, mem_per_node) = spec.per_node_cpus_mem();
    let mut out = TresCounts::new();
    out.insert("cpu".into(), u64::from(cpus_per_node) * u64::from(nodes));
    out.insert("node".into(), u64::from(nodes));
    if mem_per_node > 0 {
        out.insert("mem".into(), mem_per_node * u64::from(nodes));
    }
    let gpus = u64::from(spec.gpus_over(nodes));
    if gpus > 0 {
        for name in device_tres(&spec.gpu_type) {
            out.insert(name, gpus);
        }
    }
    out
}

/// The TRES one GPU device of type `gpu_type` counts in: `gres/gpu` and
/// `gres/gpu:TYPE`, or `gres/shard` for a shard.
pub fn device_tres(gpu_type: &str) -> Vec<String> {
    match gpu_type {
        crate::node::SHARD => vec!["gres/shard".to_string()],
        crate::node::MPS => vec!["gres/mps".to_string()],
        "" => vec!["gres/gpu".to_string()],
        t => vec!["gres/gpu".to_string(), format!("gres/gpu:{t}")],
    }
}

/// The TRES the cluster counts, as Slurm's `AccountingStorageTRES` lists them: `cpu`,
/// `mem`, `node`, `billing`, and those of its nodes' GPU devices (`gres/gpu`,
/// `gres/gpu:h100`, ...), in display order.
pub fn tracked(nodes: &[Node]) -> Vec<String> {
    let mut names: BTreeMap<String, ()> = ["cpu", "mem", "node", "billing"]
        .map(|n| (n.to_string(), ()))
        .into();
    for g in nodes.iter().flat_map(|n| &n.gpus) {
        for name in device_tres(&g.gpu_type) {
            names.insert(name, ());
        }
    }
    sorted_names(&names).into_iter().map(String::from).collect()
}

/// What a node offers: its CPUs, memory, itself, and its GPU devices by `device_tres`.
pub fn node_tres(node: &Node) -> TresCounts {
    let mut out = TresCounts::new();
    out.insert("cpu".into(), u64::from(node.cpus));
    out.insert("node".into(), 1);
    out.insert("mem".into(), node.memory_mb);
    for g in &node.gpus {
        for name in device_tres(&g.gpu_type) {
            *out.entry(name).or_default() += 1;
        }
    }
    out
}

/// What an allocation holds; GPU types come from the nodes' devices.
pub fn alloc_tres(alloc: &Allocation, nodes: &BTreeMap<String, Node>) -> TresCounts {
    let mut out = TresCounts::new();
    out.insert("cpu".into(), u64::from(alloc.cpus()));
    out.insert("node".into(), alloc.nodes.len() as u64);
    if alloc.mem_mb() > 0 {
        out.insert("mem".into(), alloc.mem_mb());
    }
    for na in &alloc.nodes {
        for index in &na.gpus {
            let ty = nodes
                .get(&na.node)
                .and_then(|n| n.gpus.iter().find(|g| g.index == *index))
                .map(|g| g.gpu_type.as_str())
                .unwrap_or("");
            for name in device_tres(ty) {
                *out.entry(name).or_default() += 1;
            }
        }
    }
    out
}

/// The billing value of some TRES: Σ weight × count, or the CPU count when no billing
/// weights are configured (Slurm's default).
pub fn billing(tres: &TresCounts, weights: &TresWeights) -> f64 {
    if weights.is_empty() {
        return tres.get("cpu").copied().unwrap_or(0) as f64;
    }
    weights
        .iter()
        .map(|(name, w)| w * tres.get(name).copied().unwrap_or(0) as f64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_counts_and_weights() {
        let c = parse_counts("cpu=64, mem=2G,gpu=8,gres/gpu:h100=4,node=2").unwrap();
        assert_eq!(
            format_counts(&c),
            "cpu=64,mem=2G,node=2,gres/gpu=8,gres/gpu:h100=4"
        );
        assert_eq!(c["mem"], 2048);
        assert!(parse_counts("cpus=4").is_err());
        assert!(parse_counts("cpu=x").is_err());
        let w = parse_weights("cpu=1,mem=0.25G,gres/gpu=2.5").unwrap();
        assert_eq!(w["mem"], 0.25 / 1024.0);
        assert_eq!(w["gres/gpu"], 2.5);
        assert!(parse_weights("mem=1Q").is_err());
        assert!(parse_weights("cpu=-1").is_err());
        assert_eq!(canonical_name("GPU:A100").as_deref(), Some("gres/gpu:a100"));
        assert_eq!(canonical_name("license/x"), None);
    }

    #[test]
    fn the_tracked_tres_are_the_base_ones_and_the_gpus_nodes_have() {
        let gpus = |t: &str| -> Vec<crate::node::GpuDevice> {
            (0..2)
                .map(|i| crate::node::GpuDevice::with_default_topology(i, 2, t))
                .collect()
        };
        let mut gpu_node = Node::from_config("g1", 8, 1024, gpus("h100"));
        gpu_node.gpus.extend(gpus(crate::node::SHARD));
        let cpu_node = Node::from_config("c1", 8, 1024, Vec::new());
        assert_eq!(
            tracked(std::slice::from_ref(&cpu_node)),
            ["cpu", "mem", "node", "billing"]
        );
        assert_eq!(
            tracked(&[cpu_node, gpu_node]).join(","),
            "cpu,mem,node,billing,gres/gpu,gres/gpu:h100,gres/shard"
        );
    }

    #[test]
    fn requests_and_billing() {
        let spec = JobSpec {
            num_nodes: 2,
            num_tasks: 2,
            cpus_per_task: 8,
            mem_per_node_mb: 8192,
            gpus_per_node: 2,
            gpu_type: "h100".into(),
            ..JobSpec::default()
        };
        let r = job_request(&spec);
        assert_eq!(
            format_counts(&r),
            "cpu=16,mem=16G,node=2,gres/gpu=4,gres/gpu:h100=4"
        );
        let w = parse_weights("cpu=1,gres/gpu=10").unwrap();
        assert_eq!(billing(&r, &w), 56.0);
        assert_eq!(billing(&r, &TresWeights::new()), 16.0);
    }
}
