//! The launch record: what the controller asked this node to run, as the daemon writes it
//! to `launch.json` in the job directory and the supervisor reads it back. Proto types do
//! not derive serde, so a `LaunchJobRequest` is converted once, here, into `LaunchInfo`.
//! The script travels apart, in its own file.

use model::{JobId, JobSpec, Time};
use proto::v1::LaunchJobRequest;
use serde::{Deserialize, Serialize};

/// Version of the `launch.json` layout; a supervisor refuses a record it does not know.
pub const LAUNCH_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchInfo {
    pub version: u32,
    pub job_id: JobId,
    /// The node running the batch step (this node).
    pub node_name: String,
    /// When this node accepted the launch: the job's start time.
    pub start_time: Time,
    pub spec: JobSpec,
    /// The environment captured at submit, already filtered by `--export`.
    pub env: Vec<(String, String)>,
    pub cluster_name: String,
    pub partition: String,
    /// All nodes of the allocation as a hostlist expression, and their count.
    pub nodes: String,
    pub num_nodes: u32,
    pub cpus_on_node: u32,
    pub mem_on_node_mb: u64,
    pub gpu_indices: Vec<u32>,
    /// The CPU ids the job is pinned to (empty: not pinned).
    #[serde(default)]
    pub cpu_ids: Vec<u32>,
    /// 0: unlimited.
    pub time_limit_secs: u32,
    pub array_job_id: JobId,
    pub array_task_id: Option<u32>,
    pub array_task_count: u32,
    pub array_task_min: u32,
    pub array_task_max: u32,
    pub kill_wait_secs: u32,
    pub restart_count: u32,
    pub account: String,
    pub qos: String,
    /// host:port of the controller, for `srun`/`scontrol` inside the job.
    pub ctld_addr: String,
    /// Where the job's cgroups go; `None`: the job runs unconfined.
    #[serde(default)]
    pub cgroup: Option<CgroupPlacement>,
    /// The device file of each of the node's GPUs, by index.
    #[serde(default)]
    pub gpu_files: Vec<String>,
    /// The UUID of each of the node's GPUs, by index (empty when not probed).
    #[serde(default)]
    pub gpu_uuids: Vec<String>,
    /// The type of each of the node's GPU devices, by index (a shard's is `shard`).
    #[serde(default)]
    pub gpu_types: Vec<String>,
    /// The memory of each of the node's GPU devices in MB, by index (a share's is its
    /// GPU's; 0: not known).
    #[serde(default)]
    pub gpu_memory_mb: Vec<u64>,
    /// The site's prolog and epilog (`[node_daemon]`); empty: none.
    #[serde(default)]
    pub prolog: String,
    #[serde(default)]
    pub epilog: String,
    /// The components of the heterogeneous job this batch step leads (itself first);
    /// empty for any other job.
    #[serde(default)]
    pub het_groups: Vec<HetGroup>,
}

/// A component of a heterogeneous job, as its leader's batch script sees it
/// (`SLURM_*_HET_GROUP_N`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HetGroup {
    pub job_id: JobId,
    pub spec: JobSpec,
    /// Its submit environment, which says what was asked (`-n`, `-c`).
    pub env: Vec<(String, String)>,
    pub partition: String,
    pub nodes: String,
    pub num_nodes: u32,
    pub cpus_on_node: u32,
    pub mem_on_node_mb: u64,
    pub account: String,
    pub qos: String,
}

/// The node's cgroup hierarchy, the prefix its jobs go under and the limits every job
/// gets (`[cgroup]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupPlacement {
    pub hierarchy: crate::cgroup::Hierarchy,
    pub prefix: String,
    /// `pids.max` of each job; 0: no limit.
    #[serde(default)]
    pub max_tasks: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// The controller sent a launch without a job spec; retrying will not help.
    #[error("launch of job {0} carries no job spec")]
    MissingSpec(JobId),
    /// The spec holds a value this daemon does not know.
    #[error("launch of job {0}: {1}")]
    BadSpec(JobId, proto::convert::UnknownMailType),
}

impl LaunchInfo {
    /// The UUIDs of the devices the job holds whole, which NVML samples
    /// (`gpu_sampler`): its GPUs and MIG instances, not shares of a GPU (`shard`,
    /// `mps`), which other jobs use too.
    pub fn sampled_gpus(&self) -> Vec<String> {
        self.gpu_indices
            .iter()
            .filter_map(|&i| {
                let i = i as usize;
                let shared = self
                    .gpu_types
                    .get(i)
                    .is_some_and(|t| model::node::is_share_type(t));
                self.gpu_uuids
                    .get(i)
                    .filter(|u| !u.is_empty() && !shared)
                    .cloned()
            })
            .collect()
    }

    /// Splits a launch request into the launch record and the script text.
    pub fn from_request(
        req: LaunchJobRequest,
        node_name: &str,
        start_time: Time,
    ) -> Result<(LaunchInfo, String), LaunchError> {
        let wire_spec = req.spec.ok_or(LaunchError::MissingSpec(req.job_id))?;
        let (spec, payload) = proto::convert::spec_from_wire(wire_spec)
            .map_err(|e| LaunchError::BadSpec(req.job_id, e))?;
        let het_groups = req
            .het_groups
            .into_iter()
            .map(|g| {
                let wire = g.spec.ok_or(LaunchError::MissingSpec(g.job_id))?;
                let (spec, payload) = proto::convert::spec_from_wire(wire)
                    .map_err(|e| LaunchError::BadSpec(g.job_id, e))?;
                Ok(HetGroup {
                    job_id: g.job_id,
                    spec,
                    env: payload.env,
                    partition: g.partition,
                    nodes: g.nodes,
                    num_nodes: g.num_nodes,
                    cpus_on_node: g.cpus_on_node,
                    mem_on_node_mb: g.mem_on_node_mb,
                    account: g.account,
                    qos: g.qos,
                })
            })
            .collect::<Result<Vec<_>, LaunchError>>()?;
        let info = LaunchInfo {
            version: LAUNCH_VERSION,
            job_id: req.job_id,
            node_name: node_name.to_string(),
            start_time,
            spec,
            env: payload.env,
            cluster_name: req.cluster_name,
            partition: req.partition,
            nodes: req.nodes,
            num_nodes: req.num_nodes,
            cpus_on_node: req.cpus_on_node,
            mem_on_node_mb: req.mem_on_node_mb,
            gpu_indices: req.gpu_indices,
            cpu_ids: req.cpu_ids,
            time_limit_secs: req.time_limit_secs,
            array_job_id: req.array_job_id,
            array_task_id: req.array_task_id,
            array_task_count: req.array_task_count,
            array_task_min: req.array_task_min,
            array_task_max: req.array_task_max,
            kill_wait_secs: req.kill_wait_secs,
            restart_count: req.restart_count,
            account: req.account,
            qos: req.qos,
            ctld_addr: req.ctld_addr,
            cgroup: None,
            gpu_files: Vec::new(),
            gpu_uuids: Vec::new(),
            gpu_types: Vec::new(),
            gpu_memory_mb: Vec::new(),
            prolog: String::new(),
            epilog: String::new(),
            het_groups,
        };
        Ok((info, payload.script))
    }

    /// True for a task of a job array.
    pub fn is_array_task(&self) -> bool {
        self.array_task_id.is_some()
    }

    /// When the time limit runs out, if there is one.
    pub fn end_time(&self) -> Option<Time> {
        (self.time_limit_secs > 0).then(|| self.start_time + i64::from(self.time_limit_secs))
    }

    /// A minimal record for tests and tools: job `job_id` running `work_dir` on `node`.
    pub fn minimal(job_id: JobId, node: &str, work_dir: &str) -> LaunchInfo {
        LaunchInfo {
            version: LAUNCH_VERSION,
            job_id,
            node_name: node.to_string(),
            start_time: 0,
            spec: JobSpec {
                name: "job".into(),
                work_dir: work_dir.to_string(),
                num_nodes: 1,
                num_tasks: 1,
                ..JobSpec::default()
            },
            env: Vec::new(),
            cluster_name: "drover".into(),
            partition: "debug".into(),
            nodes: node.to_string(),
            num_nodes: 1,
            cpus_on_node: 1,
            mem_on_node_mb: 0,
            gpu_indices: Vec::new(),
            cpu_ids: Vec::new(),
            time_limit_secs: 0,
            array_job_id: 0,
            array_task_id: None,
            array_task_count: 0,
            array_task_min: 0,
            array_task_max: 0,
            kill_wait_secs: 30,
            restart_count: 0,
            account: String::new(),
            qos: String::new(),
            ctld_addr: String::new(),
            cgroup: None,
            gpu_files: Vec::new(),
            gpu_uuids: Vec::new(),
            gpu_types: Vec::new(),
            gpu_memory_mb: Vec::new(),
            prolog: String::new(),
            epilog: String::new(),
            het_groups: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::v1;

    #[test]
    fn request_converts_and_round_trips_through_json() {
        let req = LaunchJobRequest {
            job_id: 7,
            spec: Some(v1::JobSpec {
                name: "train".into(),
                script: "#!/bin/sh\necho hi\n".into(),
                env: vec![v1::EnvVar {
                    name: "A".into(),
                    value: "1".into(),
                }],
                time_limit_min: 5,
                ..Default::default()
            }),
            cluster_name: "c".into(),
            gpu_indices: vec![1, 3],
            array_task_id: Some(4),
            time_limit_secs: 300,
            ..Default::default()
        };
        let (info, script) = LaunchInfo::from_request(req, "n1", 1000).unwrap();
        assert_eq!(script, "#!/bin/sh\necho hi\n");
        assert_eq!(info.env, vec![("A".to_string(), "1".to_string())]);
        assert_eq!(info.spec.time_limit_min, Some(5));
        assert_eq!(info.end_time(), Some(1300));
        assert!(info.is_array_task());
        let json = serde_json::to_string(&info).unwrap();
        let back: LaunchInfo = serde_json::from_str(&json).unwrap();
        assert_eq!(back, info);
    }

    #[test]
    fn only_devices_held_whole_are_sampled() {
        let req = LaunchJobRequest {
            job_id: 7,
            spec: Some(v1::JobSpec::default()),
            gpu_indices: vec![0, 2, 3],
            ..Default::default()
        };
        let (mut info, _) = LaunchInfo::from_request(req, "n1", 1000).unwrap();
        info.gpu_uuids = ["GPU-a", "GPU-b", "MIG-c", "GPU-b"]
            .map(String::from)
            .to_vec();
        info.gpu_types = ["h100", "h100", "1g.10gb", "shard"]
            .map(String::from)
            .to_vec();
        // GPU 0 and MIG instance 2 are the job's alone; shard 3 is a share of GPU 1.
        assert_eq!(info.sampled_gpus(), ["GPU-a", "MIG-c"]);
        // Not probed (config-declared GPUs): nothing to sample.
        info.gpu_uuids.clear();
        assert!(info.sampled_gpus().is_empty());
    }

    #[test]
    fn request_without_spec_is_refused() {
        let req = LaunchJobRequest {
            job_id: 9,
            ..Default::default()
        };
        assert_eq!(
            LaunchInfo::from_request(req, "n1", 0).unwrap_err(),
            LaunchError::MissingSpec(9)
        );
    }
}
