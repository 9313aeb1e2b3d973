//! The cluster configuration: one TOML file, parsed here from text (the caller reads
//! the file). Errors name the file, the line and the key.
//!
//! ```toml
//! cluster_name = "drover"
//! [[nodes]]
//! names = "gpu[01-04]"
//! cpus = 8
//! memory = "32G"
//! gpus = 4
//! gpu_type = "h100"
//! [[partitions]]
//! name = "gpu"
//! nodes = "gpu[01-04]"
//! default = true
//! max_time = "1-00:00:00"
//! ```

use crate::hostlist;
use crate::node::{GpuDevice, Node};
use crate::units;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct ConfigError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default = "default_cluster_name")]
    pub cluster_name: String,
    /// Where the controller keeps its store and node daemons their spool.
    #[serde(default = "default_state_dir")]
    pub state_dir: String,
    #[serde(default)]
    pub controller: ControllerConfig,
    #[serde(default)]
    pub nodes: Vec<NodeConfig>,
    #[serde(default)]
    pub partitions: Vec<PartitionConfig>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ControllerConfig {
    /// host:port the controller listens on and everyone dials.
    pub addr: String,
    pub heartbeat_interval_ms: u32,
    /// A node that has not been heard from for this long goes DOWN.
    pub node_timeout_s: u32,
    /// Between SIGTERM and SIGKILL when a job is cancelled or times out.
    pub kill_wait_s: u32,
    /// Finished jobs stay visible in `squeue -t all` this long.
    pub min_job_age_s: u32,
    pub max_array_size: u32,
    pub max_job_count: u32,
    /// Debounce of scheduling passes after an event.
    pub sched_delay_ms: u32,
    /// A full scheduling pass at least this often.
    pub sched_interval_ms: u32,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            addr: "127.0.0.1:6917".into(),
            heartbeat_interval_ms: 2000,
            node_timeout_s: 30,
            kill_wait_s: 30,
            min_job_age_s: 300,
            max_array_size: 1001,
            max_job_count: 1_000_000,
            sched_delay_ms: 2,
            sched_interval_ms: 1000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// A hostlist expression: `gpu[01-16]`.
    pub names: String,
    pub cpus: u32,
    /// `32G`, `64000` (MB).
    pub memory: String,
    #[serde(default)]
    pub gpus: u32,
    #[serde(default)]
    pub gpu_type: String,
    #[serde(default)]
    pub features: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionConfig {
    pub name: String,
    /// A hostlist expression, or `ALL`.
    pub nodes: String,
    #[serde(default)]
    pub default: bool,
    /// Slurm time syntax or `UNLIMITED`.
    #[serde(default = "unlimited")]
    pub max_time: String,
    /// Used when a job gives no `--time`; defaults to `max_time`.
    #[serde(default)]
    pub default_time: String,
    #[serde(default)]
    pub max_nodes: u32,
    /// UP, DOWN, DRAIN or INACTIVE.
    #[serde(default = "up")]
    pub state: String,
}

fn default_cluster_name() -> String {
    "drover".into()
}
fn default_state_dir() -> String {
    "/var/lib/drover".into()
}
fn unlimited() -> String {
    "UNLIMITED".into()
}
fn up() -> String {
    "UP".into()
}

/// A partition with its node names expanded and times parsed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partition {
    pub name: String,
    pub nodes: Vec<String>,
    pub is_default: bool,
    /// Minutes; `None` is UNLIMITED.
    pub max_time_min: Option<u32>,
    pub default_time_min: Option<u32>,
    pub max_nodes: u32,
    pub state: String,
}

impl Partition {
    pub fn accepts_jobs(&self) -> bool {
        self.state == "UP" || self.state == "DOWN"
    }
    pub fn schedules_jobs(&self) -> bool {
        self.state == "UP" || self.state == "DRAIN"
    }
}

impl Config {
    /// Parses and checks a config file's text. `file` only labels errors.
    pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(0);
            ConfigError {
                file: file.to_string(),
                line,
                message: e.message().to_string(),
            }
        })?;
        config.check(text, file)?;
        Ok(config)
    }

    fn check(&self, text: &str, file: &str) -> Result<(), ConfigError> {
        let err = |key: &str, value: &str, message: String| ConfigError {
            file: file.to_string(),
            line: find_line(text, key, value),
            message: format!("{key}: {message}"),
        };
        let mut names = BTreeSet::new();
        for n in &self.nodes {
            let hosts =
                hostlist::expand(&n.names).map_err(|e| err("names", &n.names, e.to_string()))?;
            units::parse_memory_mb(&n.memory)
                .map_err(|e| err("memory", &n.memory, e.to_string()))?;
            if n.cpus == 0 {
                return Err(err("cpus", &n.names, "must be at least 1".into()));
            }
            for h in hosts {
                if !names.insert(h.clone()) {
                    return Err(err("names", &n.names, format!("node {h} is defined twice")));
                }
            }
        }
        let mut parts = BTreeSet::new();
        for p in &self.partitions {
            if !parts.insert(p.name.clone()) {
                return Err(err(
                    "name",
                    &p.name,
                    format!("partition {} is defined twice", p.name),
                ));
            }
            if p.nodes != "ALL" {
                let hosts = hostlist::expand(&p.nodes)
                    .map_err(|e| err("nodes", &p.nodes, e.to_string()))?;
                if let Some(h) = hosts.iter().find(|h| !names.contains(*h)) {
                    return Err(err("nodes", &p.nodes, format!("unknown node {h}")));
                }
            }
            units::parse_time_limit(&p.max_time)
                .map_err(|e| err("max_time", &p.max_time, e.to_string()))?;
            if !p.default_time.is_empty() {
                units::parse_time_limit(&p.default_time)
                    .map_err(|e| err("default_time", &p.default_time, e.to_string()))?;
            }
            if !["UP", "DOWN", "DRAIN", "INACTIVE"].contains(&p.state.as_str()) {
                return Err(err(
                    "state",
                    &p.state,
                    format!("unknown partition state {}", p.state),
                ));
            }
        }
        if self.partitions.iter().filter(|p| p.default).count() > 1 {
            return Err(err(
                "default",
                "true",
                "more than one default partition".into(),
            ));
        }
        if self
            .controller
            .addr
            .parse::<std::net::SocketAddr>()
            .is_err()
            && !self.controller.addr.contains(':')
        {
            return Err(err(
                "addr",
                &self.controller.addr,
                "expected host:port".into(),
            ));
        }
        Ok(())
    }

    /// The nodes of the config, expanded, in name order of their definition.
    pub fn node_list(&self) -> Vec<Node> {
        let mut out = Vec::new();
        for n in &self.nodes {
            let mem = units::parse_memory_mb(&n.memory).unwrap_or(0);
            for host in hostlist::expand(&n.names).unwrap_or_default() {
                let gpus = (0..n.gpus)
                    .map(|i| GpuDevice {
                        index: i,
                        gpu_type: n.gpu_type.clone(),
                        uuid: String::new(),
                    })
                    .collect();
                let mut node = Node::from_config(&host, n.cpus, mem, gpus);
                node.features = n.features.clone();
                out.push(node);
            }
        }
        out
    }

    /// The partitions, expanded; the first one is the default when none says so.
    pub fn partition_list(&self) -> Vec<Partition> {
        let all: Vec<String> = self.node_list().into_iter().map(|n| n.name).collect();
        let any_default = self.partitions.iter().any(|p| p.default);
        self.partitions
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let max = units::parse_time_limit(&p.max_time).unwrap_or(None);
                let default_time = if p.default_time.is_empty() {
                    max
                } else {
                    units::parse_time_limit(&p.default_time).unwrap_or(max)
                };
                Partition {
                    name: p.name.clone(),
                    nodes: if p.nodes == "ALL" {
                        all.clone()
                    } else {
                        hostlist::expand(&p.nodes).unwrap_or_default()
                    },
                    is_default: p.default || (!any_default && i == 0),
                    max_time_min: max,
                    default_time_min: default_time,
                    max_nodes: p.max_nodes,
                    state: p.state.clone(),
                }
            })
            .collect()
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The line where `key` is set to something containing `value` (best effort).
fn find_line(text: &str, key: &str, value: &str) -> usize {
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            l.starts_with(key) && l.contains(value)
        })
        .or_else(|| text.lines().position(|l| l.trim_start().starts_with(key)))
        .map(|i| i + 1)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
cluster_name = "test"
[[nodes]]
names = "n[1-2]"
cpus = 4
memory = "8G"
gpus = 2
gpu_type = "h100"

[[partitions]]
name = "debug"
nodes = "n[1-2]"
max_time = "1:00:00"
"#;

    #[test]
    fn parses_sample() {
        let c = Config::parse(SAMPLE, "t.toml").unwrap();
        let nodes = c.node_list();
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[1].memory_mb, 8192);
        assert_eq!(nodes[0].gpus.len(), 2);
        let parts = c.partition_list();
        assert!(parts[0].is_default);
        assert_eq!(parts[0].max_time_min, Some(60));
        assert_eq!(parts[0].default_time_min, Some(60));
    }

    #[test]
    fn errors_name_file_line_and_key() {
        let bad = SAMPLE.replace("cpus = 4", "cpu = 4");
        let e = Config::parse(&bad, "t.toml").unwrap_err();
        assert_eq!(e.line, 5, "{e}");
        assert!(e.to_string().starts_with("t.toml:5:"), "{e}");
        assert!(e.message.contains("cpu"), "{e}");

        let bad = SAMPLE.replace("memory = \"8G\"", "memory = \"8Q\"");
        let e = Config::parse(&bad, "t.toml").unwrap_err();
        assert_eq!(e.line, 6, "{e}");
        assert!(e.message.starts_with("memory:"), "{e}");

        let bad = SAMPLE.replace("nodes = \"n[1-2]\"", "nodes = \"n[1-3]\"");
        let e = Config::parse(&bad, "t.toml").unwrap_err();
        assert!(e.message.contains("unknown node n3"), "{e}");
    }
}

#[cfg(test)]
mod sample_tests {
    use super::*;

    /// Every sample config in `conf/` parses and describes a usable cluster.
    #[test]
    fn samples_parse() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../conf");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "toml") {
                let text = std::fs::read_to_string(&path).unwrap();
                let c = Config::parse(&text, &path.display().to_string()).unwrap();
                assert!(!c.node_list().is_empty(), "{}", path.display());
                assert_eq!(
                    c.partition_list().iter().filter(|p| p.is_default).count(),
                    1
                );
                seen += 1;
            }
        }
        assert!(seen >= 1);
    }
}
