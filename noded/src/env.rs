//! The environment of a batch script: what was captured at submit, with Slurm's output
//! variables on top (sbatch(1), "OUTPUT ENVIRONMENT VARIABLES"), so that scripts and
//! tools written for Slurm find their job id, nodes, GPUs and array index.
//!
//! `SLURM_TASK_PID` is the one variable missing here: only the forked child knows its
//! pid (see `spawn`).

use crate::launch::LaunchInfo;
use std::collections::BTreeSet;

/// The Slurm variables of the batch step of `req` on `node_name`, in a fixed order.
pub fn slurm_env(req: &LaunchInfo, node_name: &str) -> Vec<(String, String)> {
    let spec = &req.spec;
    let mut env = Vec::with_capacity(48);
    let mut set = |name: &str, value: String| env.push((name.to_string(), value));

    set("SLURM_JOB_ID", req.job_id.to_string());
    set("SLURM_JOBID", req.job_id.to_string());
    set("SLURM_JOB_NAME", spec.name.clone());
    let nodelist = if req.nodes.is_empty() {
        node_name
    } else {
        req.nodes.as_str()
    };
    set("SLURM_JOB_NODELIST", nodelist.to_string());
    set("SLURM_NODELIST", nodelist.to_string());
    let num_nodes = req.num_nodes.max(1);
    set("SLURM_NNODES", num_nodes.to_string());
    set("SLURM_JOB_NUM_NODES", num_nodes.to_string());
    let num_tasks = spec.num_tasks.max(1);
    // Only for a task count asked for (-n, --ntasks-per-node), which sbatch says in the
    // submit environment: `sbatch -N2` has none, and its `srun` runs a task a node.
    if get_var(&req.env, "SLURM_NTASKS").is_some() {
        set("SLURM_NTASKS", num_tasks.to_string());
        set("SLURM_NPROCS", num_tasks.to_string());
    }
    set(
        "SLURM_TASKS_PER_NODE",
        tasks_per_node(num_tasks, num_nodes, spec.ntasks_per_node),
    );
    if spec.ntasks_per_node > 0 {
        set("SLURM_NTASKS_PER_NODE", spec.ntasks_per_node.to_string());
    }
    // Only with -c, which sbatch says in the submit environment: the controller gives
    // every job at least one CPU per task, asked for or not.
    if let Some(cpt) = get_var(&req.env, "SLURM_CPUS_PER_TASK") {
        set("SLURM_CPUS_PER_TASK", cpt.to_string());
    }
    set("SLURM_CPUS_ON_NODE", req.cpus_on_node.to_string());
    // Only this node's share is known here; allocations are uniform across nodes.
    set(
        "SLURM_JOB_CPUS_PER_NODE",
        repeated(req.cpus_on_node, num_nodes),
    );
    if spec.mem_per_node_mb > 0 {
        set("SLURM_MEM_PER_NODE", spec.mem_per_node_mb.to_string());
    } else if spec.mem_whole_node {
        // --mem=0: what the job got, all of the node's memory.
        set("SLURM_MEM_PER_NODE", req.mem_on_node_mb.to_string());
    }
    if spec.mem_per_cpu_mb > 0 {
        set("SLURM_MEM_PER_CPU", spec.mem_per_cpu_mb.to_string());
    }
    // Where sbatch ran (it says so in the submit environment); else the working
    // directory, for a job submitted without it.
    let submit_dir = req
        .env
        .iter()
        .find(|(k, _)| k == "SLURM_SUBMIT_DIR")
        .map_or(spec.work_dir.as_str(), |(_, v)| v.as_str());
    set("SLURM_SUBMIT_DIR", submit_dir.to_string());
    if !spec.submit_host.is_empty() {
        set("SLURM_SUBMIT_HOST", spec.submit_host.clone());
    }
    set("SLURM_CLUSTER_NAME", req.cluster_name.clone());
    set(
        "SLURM_JOB_PARTITION",
        first_set(&req.partition, &spec.partition),
    );
    let account = first_set(&req.account, &spec.account);
    if !account.is_empty() {
        set("SLURM_JOB_ACCOUNT", account);
    }
    let qos = first_set(&req.qos, &spec.qos);
    if !qos.is_empty() {
        set("SLURM_JOB_QOS", qos);
    }
    if !spec.reservation.is_empty() {
        set("SLURM_JOB_RESERVATION", spec.reservation.clone());
    }
    set("SLURM_JOB_USER", spec.user.clone());
    set("SLURM_JOB_UID", spec.uid.to_string());
    set("SLURM_JOB_GID", spec.gid.to_string());
    set("SLURMD_NODENAME", node_name.to_string());
    set("SLURM_NODEID", "0".into());
    set("SLURM_PROCID", "0".into());
    set("SLURM_LOCALID", "0".into());
    set("SLURM_GTIDS", "0".into());
    if req.restart_count > 0 {
        set("SLURM_RESTART_COUNT", req.restart_count.to_string());
    }
    if let Some(task) = req.array_task_id {
        let ids = spec
            .array
            .as_ref()
            .map(|a| a.task_ids.as_slice())
            .unwrap_or(&[]);
        let count = if req.array_task_count > 0 {
            req.array_task_count
        } else {
            ids.len() as u32
        };
        let array_job_id = if req.array_job_id > 0 {
            req.array_job_id
        } else {
            req.job_id
        };
        set("SLURM_ARRAY_JOB_ID", array_job_id.to_string());
        set("SLURM_ARRAY_TASK_ID", task.to_string());
        set("SLURM_ARRAY_TASK_COUNT", count.max(1).to_string());
        set("SLURM_ARRAY_TASK_MIN", req.array_task_min.to_string());
        set("SLURM_ARRAY_TASK_MAX", req.array_task_max.to_string());
        set("SLURM_ARRAY_TASK_STEP", array_step(ids).to_string());
    }
    if !req.gpu_indices.is_empty() && model::node::is_share_type(&spec.gpu_type) {
        // Shares of shared GPUs (`--gres=shard:N`, `--gres=mps:N`): CUDA sees their
        // GPUs; a shard job is told its count, an MPS job its share of the GPU.
        if spec.gpu_type == model::node::MPS {
            set(
                "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                mps_percentage(req).to_string(),
            );
            if let Some(limit) = mps_pinned_memory(req) {
                set("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", limit);
            }
        } else {
            set("SLURM_SHARDS_ON_NODE", req.gpu_indices.len().to_string());
        }
        let visible = cuda_visible_devices(req, &req.gpu_indices);
        set("CUDA_VISIBLE_DEVICES", visible.clone());
        set("GPU_DEVICE_ORDINAL", visible);
    } else if !req.gpu_indices.is_empty() {
        let list = id_list(&req.gpu_indices);
        // As Slurm: SLURM_GPUS is the `--gpus` count, set only when it was asked for.
        if spec.gpus > 0 {
            set("SLURM_GPUS", spec.gpus.to_string());
        }
        if spec.gpus_per_node > 0 {
            set("SLURM_GPUS_PER_NODE", spec.gpus_per_node.to_string());
        }
        // Read again by the job's sruns, whose tasks then get that many each.
        if spec.details.gpus_per_task > 0 {
            set(
                "SLURM_GPUS_PER_TASK",
                spec.details.gpus_per_task.to_string(),
            );
        }
        set("SLURM_GPUS_ON_NODE", req.gpu_indices.len().to_string());
        set("SLURM_JOB_GPUS", list);
        let visible = cuda_visible_devices(req, &req.gpu_indices);
        set("CUDA_VISIBLE_DEVICES", visible.clone());
        set("GPU_DEVICE_ORDINAL", visible);
    }
    set("SLURM_JOB_START_TIME", req.start_time.to_string());
    if let Some(end) = req.end_time() {
        set("SLURM_JOB_END_TIME", end.to_string());
    }
    set("ENVIRONMENT", "BATCH".into());
    if !req.ctld_addr.is_empty() {
        set("DROVER_CTLD_ADDR", req.ctld_addr.clone());
    }
    env
}

/// Ids as Slurm's variables list them: `0,2,3`.
pub fn id_list(ids: &[u32]) -> String {
    ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}

/// Sets `name` to `value` in `env`, in place when it is there, else at the end.
/// The value of `name` in `env`, if set.
pub fn get_var<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

pub fn set_var(env: &mut Vec<(String, String)>, name: &str, value: String) {
    match env.iter_mut().find(|(n, _)| n == name) {
        Some(slot) => slot.1 = value,
        None => env.push((name.to_string(), value)),
    }
}

/// An MPS job's shares per GPU, in the order `CUDA_VISIBLE_DEVICES` names its GPUs:
/// a device of the GPU (its device file), the job's MPS shares on it and all the
/// GPU's MPS shares (a GPU given whole too has a device of its own on the file).
fn mps_shares_by_gpu(req: &LaunchInfo) -> Vec<(u32, u32, u32)> {
    let file = |g: u32| req.gpu_files.get(g as usize);
    let is_mps = |g: u32| {
        req.gpu_types
            .get(g as usize)
            .is_some_and(|t| t == model::node::MPS)
    };
    let mut out: Vec<(u32, u32, u32)> = Vec::new();
    for &g in &req.gpu_indices {
        match out.iter_mut().find(|(d, ..)| file(*d) == file(g)) {
            Some((_, mine, _)) => *mine += 1,
            None => {
                let all = (0..req.gpu_files.len() as u32)
                    .filter(|&d| file(d) == file(g) && is_mps(d))
                    .count() as u32;
                out.push((g, 1, all));
            }
        }
    }
    out
}

/// An MPS job's share of its GPU, in percent: its MPS shares on the GPU of its first
/// one, out of all that GPU's, as Slurm's gres/mps.
fn mps_percentage(req: &LaunchInfo) -> u32 {
    match mps_shares_by_gpu(req).first() {
        Some(&(_, mine, all)) => (100 * mine / all.max(1)).clamp(1, 100),
        None => 100,
    }
}

/// An MPS job's pinned device memory limit (`CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`): on
/// each of its GPUs, by CUDA's ordinal, its share of the GPU's memory, as MPS reads it
/// (`0=40960MB,1=8192MB`); `None` when a GPU's memory is not known.
fn mps_pinned_memory(req: &LaunchInfo) -> Option<String> {
    let limits: Option<Vec<String>> = mps_shares_by_gpu(req)
        .iter()
        .enumerate()
        .map(|(ordinal, &(g, mine, all))| {
            let memory = req
                .gpu_memory_mb
                .get(g as usize)
                .copied()
                .filter(|m| *m > 0)?;
            Some(format!(
                "{ordinal}={}MB",
                memory * u64::from(mine) / u64::from(all.max(1))
            ))
        })
        .collect();
    limits.filter(|l| !l.is_empty()).map(|l| l.join(","))
}

/// `CUDA_VISIBLE_DEVICES` for `gpus` (node indices) of the job on this node, as Slurm
/// sets it: a MIG instance by its UUID; a whole GPU by its index among the job's own
/// GPUs when the job's cgroup hides the node's others (CUDA then numbers the devices
/// it can open from 0: the job's GPUs 2 and 3 are `0,1`), else by the node's number of
/// the GPU (the place of its device file among the node's). A shard stands for the
/// GPU it is on (the one of its device file), named once, and so does a GPU given
/// either whole or as shards, whose device comes after the node's other GPUs.
/// `SLURM_JOB_GPUS` keeps the node's indices.
pub fn cuda_visible_devices(req: &LaunchInfo, gpus: &[u32]) -> String {
    let uuid = |g: u32| {
        req.gpu_uuids
            .get(g as usize)
            .filter(|u| u.starts_with("MIG-"))
    };
    let hidden = req
        .cgroup
        .as_ref()
        .is_some_and(|c| c.hierarchy.has(crate::cgroup::Controller::Devices))
        && !crate::isolation::job_limits(req).deny_devices.is_empty();
    let mut own: Vec<u32> = req
        .gpu_indices
        .iter()
        .copied()
        .filter(|g| uuid(*g).is_none())
        .collect();
    own.sort_unstable();
    // A physical GPU by its device file: the shards of one GPU share its file.
    let file = |g: u32| req.gpu_files.get(g as usize);
    let physical = |within: &[u32], g: u32| -> usize {
        let mut files: Vec<Option<&String>> = Vec::new();
        for &d in within {
            if !files.contains(&file(d)) {
                files.push(file(d));
            }
        }
        files.iter().position(|f| *f == file(g)).unwrap_or(0)
    };
    let node_devices: Vec<u32> = (0..req.gpu_files.len() as u32).collect();
    let shard = |g: u32| {
        req.gpu_types
            .get(g as usize)
            .is_some_and(|t| model::node::is_share_type(t))
    };
    let mut out: Vec<String> = Vec::new();
    for &g in gpus {
        let name = match uuid(g) {
            Some(u) => u.clone(),
            None if hidden && shard(g) => physical(&own, g).to_string(),
            None if hidden => own.iter().position(|o| *o == g).unwrap_or(0).to_string(),
            None if file(g).is_none() => g.to_string(),
            None => physical(&node_devices, g).to_string(),
        };
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out.join(",")
}

/// A heterogeneous job's batch script's `SLURM_HET_SIZE` and each component's
/// `_HET_GROUP_N` variables (the component seen as a job of its own); nothing for any
/// other job.
fn het_group_env(req: &LaunchInfo, node_name: &str) -> Vec<(String, String)> {
    if req.het_groups.is_empty() {
        return Vec::new();
    }
    let mut out = vec![(
        "SLURM_HET_SIZE".to_string(),
        req.het_groups.len().to_string(),
    )];
    for (n, g) in req.het_groups.iter().enumerate() {
        let component = LaunchInfo {
            job_id: g.job_id,
            spec: g.spec.clone(),
            env: g.env.clone(),
            partition: g.partition.clone(),
            nodes: g.nodes.clone(),
            num_nodes: g.num_nodes,
            cpus_on_node: g.cpus_on_node,
            mem_on_node_mb: g.mem_on_node_mb,
            account: g.account.clone(),
            qos: g.qos.clone(),
            het_groups: Vec::new(),
            ..req.clone()
        };
        out.extend(model::job::het_group_vars(
            slurm_env(&component, node_name),
            n,
        ));
    }
    out
}

/// The whole environment of the batch script: the submit-time environment, where every
/// variable that `slurm_env` sets is replaced by its value, followed by `slurm_env`
/// (and, for a heterogeneous job, its components' variables).
pub fn job_env(req: &LaunchInfo, node_name: &str) -> Vec<(String, String)> {
    let mut slurm = slurm_env(req, node_name);
    slurm.extend(het_group_env(req, node_name));
    let ours: BTreeSet<&str> = slurm.iter().map(|(k, _)| k.as_str()).collect();
    let mut env: Vec<(String, String)> = req
        .env
        .iter()
        .filter(|(k, _)| !ours.contains(k.as_str()))
        .cloned()
        .collect();
    env.extend(slurm);
    env
}

fn first_set(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        a.to_string()
    }
}

/// Slurm's compressed per-node list: `4(x3)` for three nodes of 4, `4` for one.
fn repeated(value: u32, times: u32) -> String {
    model::step::compressed_counts(&vec![value; times.max(1) as usize])
}

/// Tasks on each node, in Slurm's compressed form: 5 tasks on 2 nodes is `3,2`.
fn tasks_per_node(num_tasks: u32, num_nodes: u32, per_node: u32) -> String {
    let counts = model::step::even_counts(num_tasks, num_nodes, per_node);
    let counts: Vec<u32> = counts.into_iter().filter(|c| *c > 0).collect();
    if counts.is_empty() {
        return "1".into();
    }
    model::step::compressed_counts(&counts)
}

/// The step of an array's task ids when they form an arithmetic sequence, else 1.
fn array_step(ids: &[u32]) -> u32 {
    match ids {
        [a, b, rest @ ..] if b > a => {
            let step = b - a;
            let regular = rest
                .iter()
                .zip(ids[1..].iter())
                .all(|(next, prev)| next - prev == step);
            if regular { step } else { 1 }
        }
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::ArraySpec;

    fn get<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
        get_var(env, name)
    }

    fn sample() -> LaunchInfo {
        let mut info = LaunchInfo::minimal(42, "gpu01", "/home/ada/run");
        info.spec.name = "train".into();
        info.spec.user = "ada".into();
        info.spec.uid = 1000;
        info.spec.gid = 100;
        info.spec.submit_host = "login1".into();
        info.spec.account = "spec-account".into();
        info.cluster_name = "c1".into();
        info.partition = "gpu".into();
        info.account = "physics".into();
        info.qos = "normal".into();
        info.nodes = "gpu[01-02]".into();
        info.num_nodes = 2;
        info.cpus_on_node = 8;
        info.start_time = 1_000;
        info.ctld_addr = "10.0.0.1:6917".into();
        info
    }

    #[test]
    fn cuda_sees_mig_instances_by_uuid_and_whole_gpus_as_the_cgroup_numbers_them() {
        let mut info = sample();
        info.gpu_indices = vec![1, 3];
        info.gpu_uuids = vec![
            String::new(),
            String::new(),
            String::new(),
            "MIG-abc".into(),
        ];
        assert_eq!(cuda_visible_devices(&info, &[1, 3]), "1,MIG-abc");
        // The node's other GPUs hidden by the devices controller: counted from 0.
        info.gpu_indices = vec![1, 2];
        info.gpu_files = vec!["/dev/null".into(), "/dev/zero".into(), "/dev/full".into()];
        let mut mounts = std::collections::BTreeMap::new();
        mounts.insert(
            crate::cgroup::Controller::Devices,
            "/sys/fs/cgroup/devices".into(),
        );
        info.cgroup = Some(crate::launch::CgroupPlacement {
            hierarchy: crate::cgroup::Hierarchy::V1 { mounts },
            prefix: "drover".into(),
            max_tasks: 0,
        });
        assert_eq!(cuda_visible_devices(&info, &[1, 2]), "0,1");
        assert_eq!(cuda_visible_devices(&info, &[2]), "1");
        // Nothing hidden (no devices controller): the node's indices.
        info.cgroup = None;
        assert_eq!(cuda_visible_devices(&info, &[2]), "2");
    }

    /// The node's GPU devices: each one's device file and type.
    fn with_devices(info: &mut LaunchInfo, files: &[&str], types: &[&str]) {
        info.gpu_files = files.iter().map(|f| f.to_string()).collect();
        info.gpu_types = types.iter().map(|t| t.to_string()).collect();
    }

    #[test]
    fn shards_stand_for_their_gpu_in_cuda_and_count_in_slurm_shards_on_node() {
        let mut info = sample();
        // Device 0 a whole GPU; 1-3 shards of one GPU (one file), 4-5 of another.
        let files = [
            "/dev/null",
            "/dev/zero",
            "/dev/zero",
            "/dev/zero",
            "/dev/full",
            "/dev/full",
        ];
        with_devices(
            &mut info,
            &files,
            &["h100", "shard", "shard", "shard", "shard", "shard"],
        );
        info.spec.gpu_type = "shard".into();
        info.gpu_indices = vec![2, 3];
        // Nothing hidden: the GPU's place among the node's GPUs, once.
        assert_eq!(cuda_visible_devices(&info, &[2, 3]), "1");
        assert_eq!(cuda_visible_devices(&info, &[4]), "2");
        let env = slurm_env(&info, "gpu01");
        let get = |k: &str| get_var(&env, k);
        assert_eq!(get("SLURM_SHARDS_ON_NODE"), Some("2"));
        assert_eq!(get("CUDA_VISIBLE_DEVICES"), Some("1"));
        assert_eq!(get("SLURM_JOB_GPUS"), None);
        // MPS: 3 of a GPU's 4 shares are 75% of it.
        with_devices(
            &mut info,
            &files,
            &["h100", "mps", "mps", "mps", "mps", "mps"],
        );
        info.gpu_files[4] = "/dev/zero".into();
        info.spec.gpu_type = "mps".into();
        info.gpu_indices = vec![1, 2, 3];
        let env = slurm_env(&info, "gpu01");
        let get = |k: &str| get_var(&env, k);
        assert_eq!(get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), Some("75"));
        assert_eq!(get("CUDA_VISIBLE_DEVICES"), Some("1"));
        assert_eq!(get("SLURM_SHARDS_ON_NODE"), None);
    }

    #[test]
    fn a_gpu_given_whole_or_shared_is_one_gpu_to_cuda() {
        let mut info = sample();
        // GPUs 0 and 1; GPU 1 (`/dev/zero`) is device 1 whole and devices 2-5 as MPS.
        info.gpu_files = [
            "/dev/null",
            "/dev/zero",
            "/dev/zero",
            "/dev/zero",
            "/dev/zero",
            "/dev/zero",
        ]
        .map(String::from)
        .to_vec();
        info.gpu_types = ["h100", "h100", "mps", "mps", "mps", "mps"]
            .map(String::from)
            .to_vec();
        info.cgroup = None;
        info.spec.gpu_type = "mps".into();
        info.gpu_indices = vec![2, 3];
        let env = slurm_env(&info, "gpu01");
        let get = |k: &str| get_var(&env, k);
        // Two of its four MPS shares, not two of five devices on the file.
        assert_eq!(get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), Some("50"));
        assert_eq!(get("CUDA_VISIBLE_DEVICES"), Some("1"));
        // Taken whole, it is the node's GPU 1.
        assert_eq!(cuda_visible_devices(&info, &[1]), "1");
        // The GPU's memory is not known: no pinned memory limit.
        assert_eq!(get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), None);
        // 80 GB GPUs: half of one is 40 GB; with a share of GPU 0 too, its quarter.
        info.gpu_memory_mb = vec![81920; 6];
        let env = slurm_env(&info, "gpu01");
        assert_eq!(
            get_var(&env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"),
            Some("0=40960MB")
        );
        info.gpu_types[0] = "mps".into();
        info.gpu_types[1] = "mps".into();
        info.gpu_files[1] = "/dev/null".into();
        // Device 0 and 1 now MPS shares of GPU 0 (`/dev/null`), 2-5 of GPU 1.
        info.gpu_indices = vec![2, 3, 4, 0];
        let env = slurm_env(&info, "gpu01");
        assert_eq!(
            get_var(&env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"),
            Some("0=61440MB,1=40960MB")
        );
    }

    #[test]
    fn the_submit_dir_is_where_sbatch_ran_not_the_chdir() {
        let mut info = sample();
        info.env
            .push(("SLURM_SUBMIT_DIR".into(), "/home/ada/src".into()));
        let env = slurm_env(&info, "gpu01");
        let get = |k: &str| get_var(&env, k);
        assert_eq!(get("SLURM_SUBMIT_DIR"), Some("/home/ada/src"));
    }

    #[test]
    fn a_heterogeneous_jobs_script_gets_each_components_variables() {
        let mut info = sample();
        let component = |job_id: u32, cpus: u32, mem_per_cpu: u64, env: &[(&str, &str)]| {
            crate::launch::HetGroup {
                job_id,
                spec: model::JobSpec {
                    cpus_per_task: cpus,
                    mem_per_cpu_mb: mem_per_cpu,
                    num_tasks: 1,
                    ..info.spec.clone()
                },
                env: env
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                partition: "debug".into(),
                nodes: format!("n{job_id}"),
                num_nodes: 1,
                cpus_on_node: cpus,
                mem_on_node_mb: 0,
                account: "physics".into(),
                qos: "normal".into(),
            }
        };
        info.het_groups = vec![
            component(
                42,
                4,
                10,
                &[("SLURM_CPUS_PER_TASK", "4"), ("SLURM_NTASKS", "1")],
            ),
            component(43, 2, 2, &[("SLURM_CPUS_PER_TASK", "2")]),
        ];
        let env = job_env(&info, "gpu01");
        let get = |name: &str| get(&env, name);
        assert_eq!(get("SLURM_HET_SIZE"), Some("2"));
        assert_eq!(get("SLURM_JOB_ID_HET_GROUP_0"), Some("42"));
        assert_eq!(get("SLURM_JOB_ID_HET_GROUP_1"), Some("43"));
        assert_eq!(get("SLURM_CPUS_PER_TASK_HET_GROUP_1"), Some("2"));
        assert_eq!(get("SLURM_MEM_PER_CPU_HET_GROUP_0"), Some("10"));
        assert_eq!(get("SLURM_NTASKS_HET_GROUP_0"), Some("1"));
        // As asked: component 1 gave no task count.
        assert_eq!(get("SLURM_NTASKS_HET_GROUP_1"), None);
        assert_eq!(get("SLURM_JOB_NODELIST_HET_GROUP_1"), Some("n43"));
        assert_eq!(get("SLURM_JOB_PARTITION_HET_GROUP_0"), Some("debug"));
        // Not a heterogeneous job: none of them.
        let plain = job_env(&sample(), "gpu01");
        assert!(plain.iter().all(|(k, _)| !k.contains("HET")));
    }

    #[test]
    fn plain_job_gets_the_core_variables() {
        let env = slurm_env(&sample(), "gpu01");
        let expect = [
            ("SLURM_JOB_ID", "42"),
            ("SLURM_JOBID", "42"),
            ("SLURM_JOB_NAME", "train"),
            ("SLURM_JOB_NODELIST", "gpu[01-02]"),
            ("SLURM_NODELIST", "gpu[01-02]"),
            ("SLURM_NNODES", "2"),
            ("SLURM_JOB_NUM_NODES", "2"),
            ("SLURM_TASKS_PER_NODE", "1"),
            ("SLURM_CPUS_ON_NODE", "8"),
            ("SLURM_JOB_CPUS_PER_NODE", "8(x2)"),
            ("SLURM_SUBMIT_DIR", "/home/ada/run"),
            ("SLURM_SUBMIT_HOST", "login1"),
            ("SLURM_CLUSTER_NAME", "c1"),
            ("SLURM_JOB_PARTITION", "gpu"),
            ("SLURM_JOB_ACCOUNT", "physics"),
            ("SLURM_JOB_QOS", "normal"),
            ("SLURM_JOB_USER", "ada"),
            ("SLURM_JOB_UID", "1000"),
            ("SLURM_JOB_GID", "100"),
            ("SLURMD_NODENAME", "gpu01"),
            ("SLURM_NODEID", "0"),
            ("SLURM_PROCID", "0"),
            ("SLURM_LOCALID", "0"),
            ("SLURM_JOB_START_TIME", "1000"),
            ("ENVIRONMENT", "BATCH"),
            ("DROVER_CTLD_ADDR", "10.0.0.1:6917"),
        ];
        for (name, value) in expect {
            assert_eq!(get(&env, name), Some(value), "{name}");
        }
        // No task count asked for (`sbatch -N2`): none set, as Slurm's.
        for absent in [
            "SLURM_NTASKS",
            "SLURM_NPROCS",
            "SLURM_CPUS_PER_TASK",
            "SLURM_MEM_PER_NODE",
            "SLURM_MEM_PER_CPU",
            "SLURM_RESTART_COUNT",
            "SLURM_ARRAY_JOB_ID",
            "SLURM_ARRAY_TASK_ID",
            "CUDA_VISIBLE_DEVICES",
            "SLURM_JOB_GPUS",
            "SLURM_JOB_END_TIME",
            "SLURM_TASK_PID",
        ] {
            assert_eq!(get(&env, absent), None, "{absent}");
        }
        let names: BTreeSet<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names.len(), env.len(), "no variable is set twice");
    }

    #[test]
    fn optional_variables_appear_when_asked_for() {
        let mut info = sample();
        info.spec.cpus_per_task = 4;
        info.env.push(("SLURM_CPUS_PER_TASK".into(), "4".into()));
        info.spec.num_tasks = 5;
        info.env.push(("SLURM_NTASKS".into(), "5".into()));
        info.spec.mem_per_node_mb = 16_000;
        info.restart_count = 2;
        info.time_limit_secs = 600;
        info.gpu_indices = vec![1, 3];
        info.spec.gpus = 2;
        let env = slurm_env(&info, "gpu01");
        assert_eq!(get(&env, "SLURM_CPUS_PER_TASK"), Some("4"));
        assert_eq!(get(&env, "SLURM_NTASKS"), Some("5"));
        assert_eq!(get(&env, "SLURM_TASKS_PER_NODE"), Some("3,2"));
        assert_eq!(get(&env, "SLURM_MEM_PER_NODE"), Some("16000"));
        assert_eq!(get(&env, "SLURM_MEM_PER_CPU"), None);
        assert_eq!(get(&env, "SLURM_RESTART_COUNT"), Some("2"));
        assert_eq!(get(&env, "SLURM_JOB_END_TIME"), Some("1600"));
        assert_eq!(get(&env, "SLURM_GPUS"), Some("2"));
        assert_eq!(get(&env, "SLURM_GPUS_ON_NODE"), Some("2"));
        assert_eq!(get(&env, "SLURM_JOB_GPUS"), Some("1,3"));
        assert_eq!(get(&env, "CUDA_VISIBLE_DEVICES"), Some("1,3"));
        assert_eq!(get(&env, "GPU_DEVICE_ORDINAL"), Some("1,3"));

        info.spec.mem_per_node_mb = 0;
        info.spec.mem_per_cpu_mb = 2_000;
        info.spec.gpus = 0;
        info.spec.gpus_per_node = 2;
        let env = slurm_env(&info, "gpu01");
        assert_eq!(get(&env, "SLURM_MEM_PER_CPU"), Some("2000"));
        assert_eq!(get(&env, "SLURM_MEM_PER_NODE"), None);
        assert_eq!(get(&env, "SLURM_GPUS"), None, "only --gpus sets SLURM_GPUS");
        assert_eq!(get(&env, "SLURM_GPUS_PER_NODE"), Some("2"));
        assert_eq!(get(&env, "SLURM_GPUS_PER_TASK"), None);
        info.spec.details.gpus_per_task = 1;
        let env = slurm_env(&info, "gpu01");
        assert_eq!(get(&env, "SLURM_GPUS_PER_TASK"), Some("1"));
    }

    #[test]
    fn array_tasks_get_array_variables() {
        let mut info = sample();
        info.job_id = 57;
        info.array_job_id = 50;
        info.array_task_id = Some(7);
        info.array_task_count = 4;
        info.array_task_min = 1;
        info.array_task_max = 7;
        info.spec.array = Some(ArraySpec {
            task_ids: vec![1, 3, 5, 7],
            max_running: 0,
        });
        let env = slurm_env(&info, "gpu01");
        assert_eq!(get(&env, "SLURM_JOB_ID"), Some("57"));
        assert_eq!(get(&env, "SLURM_ARRAY_JOB_ID"), Some("50"));
        assert_eq!(get(&env, "SLURM_ARRAY_TASK_ID"), Some("7"));
        assert_eq!(get(&env, "SLURM_ARRAY_TASK_COUNT"), Some("4"));
        assert_eq!(get(&env, "SLURM_ARRAY_TASK_MIN"), Some("1"));
        assert_eq!(get(&env, "SLURM_ARRAY_TASK_MAX"), Some("7"));
        assert_eq!(get(&env, "SLURM_ARRAY_TASK_STEP"), Some("2"));
    }

    #[test]
    fn job_env_keeps_submit_env_and_overrides_stale_slurm_values() {
        let mut info = sample();
        info.env = vec![
            ("PATH".into(), "/usr/bin".into()),
            ("SLURM_JOB_ID".into(), "1".into()),
            ("HOME".into(), "/home/ada".into()),
        ];
        let env = job_env(&info, "gpu01");
        assert_eq!(&env[0], &("PATH".to_string(), "/usr/bin".to_string()));
        assert_eq!(&env[1], &("HOME".to_string(), "/home/ada".to_string()));
        assert_eq!(env.iter().filter(|(k, _)| k == "SLURM_JOB_ID").count(), 1);
        assert_eq!(get(&env, "SLURM_JOB_ID"), Some("42"));
    }

    #[test]
    fn compressed_counts() {
        assert_eq!(tasks_per_node(1, 1, 0), "1");
        assert_eq!(tasks_per_node(8, 4, 0), "2(x4)");
        assert_eq!(tasks_per_node(7, 3, 0), "3,2(x2)");
        assert_eq!(tasks_per_node(2, 4, 0), "1(x2)");
        assert_eq!(tasks_per_node(8, 2, 4), "4(x2)");
        assert_eq!(array_step(&[0, 10, 20]), 10);
        assert_eq!(array_step(&[1, 2, 5]), 1);
        assert_eq!(array_step(&[3]), 1);
    }
}
