//! The Alibaba GPU trace (`cluster-trace-gpu-v2023`, "openb", ATC'23): its node list
//! becomes the machine and its pods the jobs of a replay.
//!
//! Nodes (`sn,cpu_milli,memory_mib,gpu,model`): one node each, `cpu_milli / 1000`
//! CPUs (rounded down), `memory_mib` MiB, `gpu` GPUs of type `model` (the default
//! topology: two NUMA halves), all in one partition (`batch`, as the SWF machine's).
//!
//! Pods (`name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,
//! creation_time,deletion_time,scheduled_time`), one single-node job each:
//! - CPUs = `cpu_milli / 1000` rounded up, at least 1; memory = `memory_mib`;
//! - GPUs = `num_gpu` whole GPUs; a pod sharing a GPU (`num_gpu = 1`,
//!   `gpu_milli < 1000`) asks for one whole GPU: Drover places whole GPUs (shards
//!   are out of the replay), so sharing pods are counted but not packed;
//! - submit = `creation_time`; run time = `deletion_time − scheduled_time` (the trace
//!   has no estimate: the time limit is the run time, an exact estimate);
//! - the QoS class (LS, BE, Burstable, Guaranteed) stands for the user;
//! - skipped: pods never scheduled (no `scheduled_time`: the Pending ones), pods with
//!   a missing or unparsable time, `deletion_time < scheduled_time` or
//!   `scheduled_time < creation_time`, and pods that fit on no node;
//! - jobs sorted by submit time, ties in file order.
//!
//! `gpu_spec` is empty throughout the published file; a non-empty one (a `|` list of
//! models) would be honoured when it names a single model.
//!
//! Example: the row `openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061`
//! is a job submitted at 427,061 s asking for 6 CPUs, 12,288 MiB and one GPU (it
//! shares 46% of one in the trace), running 12,475,899 s.

use crate::replay::{Machine, PARTITION};
use crate::swf::TraceJob;
use model::{ClusterState, GpuDevice, Node, NodeHealth, Partition};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum AlibabaError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Parse {
        path: String,
        line: usize,
        message: String,
    },
}

/// A pod trace read into a machine and a job set.
pub struct Trace {
    pub machine: Machine,
    pub jobs: Vec<TraceJob>,
    /// Pods skipped by the rules above.
    pub dropped: usize,
    /// Jobs that shared a GPU in the trace (asking for one whole GPU here).
    pub shared_gpu: usize,
    /// GPUs of the machine.
    pub gpus: u32,
}

/// The node list beside a pod list: `..._pod_list_default.csv` →
/// `..._node_list_gpu_node.csv`.
pub fn node_list_beside(pods: &Path) -> Option<PathBuf> {
    let name = pods.file_name()?.to_str()?;
    let (stem, _) = name.split_once("pod_list")?;
    Some(pods.with_file_name(format!("{stem}node_list_gpu_node.csv")))
}

/// Reads a pod list and a node list.
pub fn read(pods: &Path, nodes: &Path) -> Result<Trace, AlibabaError> {
    let open = |p: &Path| {
        std::fs::File::open(p)
            .map(BufReader::new)
            .map_err(|source| AlibabaError::Io {
                path: p.display().to_string(),
                source,
            })
    };
    parse(
        open(pods)?,
        &pods.display().to_string(),
        open(nodes)?,
        &nodes.display().to_string(),
    )
}

/// The rows of a CSV file with a header, as (line number, fields by header name).
fn rows(
    reader: impl BufRead,
    name: &str,
    want: &[&str],
) -> Result<Vec<(usize, Vec<String>)>, AlibabaError> {
    let mut lines = reader.lines().enumerate();
    let io = |source| AlibabaError::Io {
        path: name.to_string(),
        source,
    };
    let header = match lines.next() {
        Some((_, l)) => l.map_err(io)?,
        None => String::new(),
    };
    let columns: Vec<&str> = header.trim().split(',').collect();
    let mut index = Vec::with_capacity(want.len());
    for w in want {
        let Some(i) = columns.iter().position(|c| c == w) else {
            return Err(AlibabaError::Parse {
                path: name.to_string(),
                line: 1,
                message: format!("no column `{w}` in the header"),
            });
        };
        index.push(i);
    }
    let mut out = Vec::new();
    for (n, line) in lines {
        let line = line.map_err(io)?;
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.trim().split(',').collect();
        let picked = index
            .iter()
            .map(|&i| fields.get(i).map(|f| f.trim().to_string()))
            .collect::<Option<Vec<String>>>()
            .ok_or_else(|| AlibabaError::Parse {
                path: name.to_string(),
                line: n + 1,
                message: format!("expected {} fields, found {}", columns.len(), fields.len()),
            })?;
        out.push((n + 1, picked));
    }
    Ok(out)
}

/// Parses a pod list and a node list; the names only label errors.
pub fn parse(
    pods: impl BufRead,
    pods_name: &str,
    nodes: impl BufRead,
    nodes_name: &str,
) -> Result<Trace, AlibabaError> {
    let number = |name: &str, line: usize, text: &str| -> Result<u64, AlibabaError> {
        text.parse::<u64>().map_err(|_| AlibabaError::Parse {
            path: name.to_string(),
            line,
            message: format!("not a number: `{text}`"),
        })
    };
    let mut node_list = Vec::new();
    let mut gpus_total = 0u32;
    for (line, f) in rows(
        nodes,
        nodes_name,
        &["sn", "cpu_milli", "memory_mib", "gpu", "model"],
    )? {
        let cpus = (number(nodes_name, line, &f[1])? / 1000) as u32;
        let memory = number(nodes_name, line, &f[2])?;
        let count = number(nodes_name, line, &f[3])? as u32;
        let gpus = (0..count)
            .map(|i| GpuDevice::with_default_topology(i, count, &f[4]))
            .collect();
        gpus_total += count;
        let mut node = Node::from_config(&f[0], cpus, memory, gpus);
        node.health = NodeHealth::Up;
        node_list.push(node);
    }
    let mut trace_jobs = Vec::new();
    let mut dropped = 0;
    let mut shared_gpu = 0;
    let columns = [
        "cpu_milli",
        "memory_mib",
        "num_gpu",
        "gpu_milli",
        "gpu_spec",
        "qos",
        "creation_time",
        "deletion_time",
        "scheduled_time",
    ];
    for (n, (line, f)) in rows(pods, pods_name, &columns)?.into_iter().enumerate() {
        let times = (
            f[6].parse::<i64>(),
            f[7].parse::<i64>(),
            f[8].parse::<i64>(),
        );
        let (Ok(created), Ok(deleted), Ok(scheduled)) = times else {
            dropped += 1;
            continue;
        };
        if deleted < scheduled || scheduled < created {
            dropped += 1;
            continue;
        }
        let cpus = number(pods_name, line, &f[0])?.div_ceil(1000).max(1) as u32;
        let mem_mb = number(pods_name, line, &f[1])?;
        let gpus = number(pods_name, line, &f[2])? as u32;
        let gpu_milli = if f[3].is_empty() {
            0
        } else {
            number(pods_name, line, &f[3])?
        };
        let model = (!f[4].is_empty() && !f[4].contains('|')).then(|| f[4].clone());
        let fits = node_list.iter().any(|node: &Node| {
            node.cpus >= cpus
                && node.memory_mb >= mem_mb
                && node
                    .gpus
                    .iter()
                    .filter(|g| model.as_ref().is_none_or(|m| &g.gpu_type == m))
                    .count() as u32
                    >= gpus
        });
        if !fits {
            dropped += 1;
            continue;
        }
        if gpus == 1 && gpu_milli > 0 && gpu_milli < 1000 {
            shared_gpu += 1;
        }
        let user = match f[5].as_str() {
            "LS" => 1,
            "BE" => 2,
            "Burstable" => 3,
            "Guaranteed" => 4,
            _ => 0,
        };
        let run = deleted - scheduled;
        trace_jobs.push(TraceJob {
            number: n as u64,
            submit: created,
            run,
            procs: cpus,
            estimate: run,
            user,
            group: 0,
            queue: 0,
            mem_mb,
            gpus,
        });
    }
    trace_jobs.sort_by_key(|j| j.submit);
    let cpus: u32 = node_list.iter().map(|n| n.cpus).sum();
    let names: Vec<String> = node_list.iter().map(|n| n.name.clone()).collect();
    let partition = Partition::open(PARTITION, names, true);
    let machine = Machine {
        state: ClusterState::new(node_list, vec![partition]),
        cpus,
        pool: false,
        gpus: true,
        check: false,
    };
    Ok(Trace {
        machine,
        jobs: trace_jobs,
        dropped,
        shared_gpu,
        gpus: gpus_total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: &str = "sn,cpu_milli,memory_mib,gpu,model\n\
        n0,64000,262144,2,P100\n\
        n1,96000,393216,8,G2\n";
    const PODS: &str = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n\
        p0,12000,16384,1,1000,,LS,Running,0,100,0\n\
        p1,6000,12288,1,460,,BE,Running,50,300,60\n\
        p2,1500,1024,0,0,,BE,Succeeded,10,20,12\n\
        p3,11908,47104,1,1000,,BE,Pending,70,80,\n\
        p4,1000,1024,16,1000,,LS,Failed,0,10,5\n\
        p5,1000,1024,1,1000,,LS,Failed,40,30,35\n";

    #[test]
    fn mapping_rules() {
        let t = parse(PODS.as_bytes(), "pods", NODES.as_bytes(), "nodes").unwrap();
        assert_eq!(t.machine.cpus, 160);
        assert_eq!(t.gpus, 10);
        assert_eq!(
            t.dropped, 3,
            "never scheduled; 16 GPUs fit no node; deleted before scheduled"
        );
        assert_eq!(t.shared_gpu, 1);
        let brief: Vec<(u64, i64, i64, u32, u64, u32)> = t
            .jobs
            .iter()
            .map(|j| (j.number, j.submit, j.run, j.procs, j.mem_mb, j.gpus))
            .collect();
        assert_eq!(
            brief,
            [
                (0, 0, 100, 12, 16384, 1),
                (2, 10, 8, 2, 1024, 0),
                (1, 50, 240, 6, 12288, 1),
            ]
        );
        let n1 = t.machine.state.nodes.get("n1").unwrap();
        assert_eq!((n1.cpus, n1.gpus.len(), n1.gpu_type()), (96, 8, "G2"));
    }

    #[test]
    fn node_list_is_found_beside_the_pods() {
        let p = Path::new("t/alibaba-gpu-v2023-openb_pod_list_default.csv");
        assert_eq!(
            node_list_beside(p).unwrap(),
            Path::new("t/alibaba-gpu-v2023-openb_node_list_gpu_node.csv")
        );
    }
}
