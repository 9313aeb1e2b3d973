//! Checks a submitted job against the cluster before it is accepted, with Slurm's
//! error messages, and fills in what the controller decides (partition, time limit).
//! Impossible requests are refused here; "cannot run yet" is a pending reason later.

use model::{ClusterState, Config, JobPayload, JobSpec};

/// Largest batch script accepted, as Slurm's default `max_script_size`.
pub const MAX_SCRIPT_BYTES: usize = 4 << 20;

/// A submit refused, with the text Slurm prints after "Batch job submission failed: ".
/// Lines before the last are the details Slurm's controller sends with the refusal,
/// which the commands print first, each as an error line of its own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Rejected(pub String);

fn reject<T>(msg: &str) -> Result<T, Rejected> {
    Err(Rejected(msg.to_string()))
}

/// A refusal with a detail line before it.
fn reject_with_detail<T>(detail: &str, msg: &str) -> Result<T, Rejected> {
    Err(Rejected(format!("{detail}\n{msg}")))
}

/// The text Slurm prints for a job no node of its partition can hold.
const NODE_CONFIG_UNAVAILABLE: &str = "Requested node configuration is not available";

/// The text Slurm prints for a job asking more CPUs than its partition has.
const TOO_MANY_CPUS: &str = "More processors requested than permitted";

/// The text Slurm prints for a partition that does not exist.
const INVALID_PARTITION: &str = "Invalid partition name specified";

/// Validates and normalizes a spec; returns it with the partition resolved and the
/// time limit in force (minutes, `None` = unlimited).
pub fn check_submit(
    state: &ClusterState,
    config: &Config,
    mut spec: JobSpec,
    payload: &JobPayload,
) -> Result<(JobSpec, Option<u32>), Rejected> {
    if payload.script.len() > MAX_SCRIPT_BYTES {
        return reject("Batch script is too large");
    }
    if spec.oversized().is_some() {
        return reject(model::job::TOO_LONG);
    }
    if payload.env_oversized() {
        return reject("The job's environment is too large to start it with");
    }
    if !payload.script.starts_with("#!") {
        return reject("Batch script is not a script (it must start with #!)");
    }
    if spec.work_dir.is_empty() {
        return reject("Invalid working directory");
    }
    // `-p a,b` lists partitions, each of which must exist, as in Slurm's.
    let list = spec.partition_list();
    spec.set_partition_list(&list);
    if spec.partition.is_empty() {
        match state.default_partition() {
            Some(p) => spec.partition = p.name.clone(),
            None => return reject("No partition specified or system default partition"),
        }
    }
    let mut partitions = Vec::new();
    for name in spec.partitions() {
        match state.partition(name) {
            Some(p) => partitions.push(p),
            None => {
                return reject_with_detail(
                    &format!("invalid partition specified: {name}"),
                    INVALID_PARTITION,
                );
            }
        }
    }
    // The job takes the first partition that can hold it, and may also start in the
    // others that can (Slurm's EnforcePartLimits=ANY); when none can, the first one's
    // refusal is the answer.
    let mut fitted: Option<(JobSpec, Option<u32>)> = None;
    let mut more_partitions = Vec::new();
    let mut refusal = None;
    for partition in partitions {
        match check_in_partition(state, config, partition, spec.clone()) {
            Ok(fit) if fitted.is_none() => fitted = Some(fit),
            Ok(_) => more_partitions.push(partition.name.clone()),
            Err(e) => {
                refusal.get_or_insert(e);
            }
        }
    }
    match fitted {
        Some((mut spec, time_limit)) => {
            spec.more_partitions = more_partitions;
            Ok((spec, time_limit))
        }
        None => Err(refusal.unwrap_or_else(|| Rejected(INVALID_PARTITION.into()))),
    }
}

/// The checks of a submit against one of its partitions; the spec with that
/// partition, its node counts resolved, and the time limit in force.
fn check_in_partition(
    state: &ClusterState,
    config: &Config,
    partition: &model::config::Partition,
    mut spec: JobSpec,
) -> Result<(JobSpec, Option<u32>), Rejected> {
    if !partition.accepts_jobs() {
        return reject(NOT_ACCEPTING);
    }
    spec.partition = partition.name.clone();
    spec.num_tasks = spec.num_tasks.max(1);
    spec.cpus_per_task = spec.cpus_per_task.max(1);
    let nodes_given = spec.num_nodes > 0;
    if !nodes_given {
        // `--nodelist` without `-N`: every node it names, and more if the request
        // needs them (Slurm's "the job will contain all of these hosts").
        let listed = model::hostlist::expand(&spec.nodelist).map_or(0, |l| l.len() as u32);
        spec.num_nodes = fewest_nodes(state, partition, &spec).max(listed);
    }
    // More nodes than tasks: a task on each, as Slurm's default. Nodes taken only to
    // hold the CPUs of the job's GPUs (`--gpus=2 --cpus-per-gpu=8` on 8-CPU nodes)
    // hold those CPUs, not more tasks.
    if spec.num_nodes > spec.num_tasks
        && spec.ntasks_per_node == 0
        && (nodes_given || spec.details.cpus_per_gpu == 0)
    {
        spec.num_tasks = spec.num_nodes;
    }
    if spec.mem_per_cpu_mb > 0 && spec.mem_per_node_mb > 0 {
        return reject("--mem and --mem-per-cpu are mutually exclusive");
    }
    // Each node takes a CPU at least: more nodes than the partition has CPUs is
    // more processors than it permits, as Slurm says first.
    let partition_cpus: u64 = partition
        .nodes
        .iter()
        .filter_map(|n| state.nodes.get(n))
        .map(|n| u64::from(n.cpus))
        .sum();
    if u64::from(spec.num_nodes) > partition_cpus {
        return reject(TOO_MANY_CPUS);
    }
    check_node_count(partition, &spec)?;
    spec.max_nodes = most_nodes(partition, &spec);
    // `--mincpus`: some node of the partition must have that many.
    let most_cpus = partition
        .nodes
        .iter()
        .filter_map(|n| state.nodes.get(n))
        .map(|n| n.cpus)
        .max()
        .unwrap_or(0);
    if spec.details.min_cpus_node > most_cpus {
        return reject(NODE_CONFIG_UNAVAILABLE);
    }
    // `--tmp`: likewise, some node's TmpDisk; a node whose entry declares none may
    // have any.
    let most_tmp = partition
        .nodes
        .iter()
        .map(|n| config.node_entry(n).and_then(|e| e.tmp_disk_mb()))
        .try_fold(0, |most, tmp| tmp.map(|t| most.max(t)));
    if most_tmp.is_some_and(|most| spec.details.tmp_disk_mb > most) {
        return reject(NODE_CONFIG_UNAVAILABLE);
    }
    // More tasks than `--ntasks-per-node` lets the nodes hold.
    if spec.ntasks_per_node > 0
        && spec.num_tasks > spec.ntasks_per_node * spec.max_nodes.max(spec.num_nodes)
    {
        return reject(NODE_CONFIG_UNAVAILABLE);
    }
    if let Some(a) = &spec.array {
        if a.task_ids.is_empty() {
            return reject("Invalid job array specification");
        }
        if a.task_ids
            .iter()
            .any(|t| *t >= config.controller.max_array_size)
        {
            return reject("Invalid job array specification");
        }
    }
    let time_limit = match (spec.time_limit_min, partition.max_time_min) {
        (Some(t), Some(max)) if t > max => {
            return reject("Requested time limit is invalid (missing or exceeds some limit)");
        }
        (Some(0), _) => {
            return reject("Requested time limit is invalid (missing or exceeds some limit)");
        }
        (Some(t), _) => Some(t),
        (None, _) => partition.default_time_min,
    };
    if !spec.dependency.is_empty() {
        let dep = sched::dependency::parse(&spec.dependency)
            .map_err(|_| Rejected("Job dependency problem".into()))?;
        if !sched::dependency::unknown_jobs(state, &dep).is_empty() {
            return reject("Job dependency problem");
        }
    }
    if let Some(list) = (!spec.nodelist.is_empty()).then_some(&spec.nodelist) {
        let names = model::hostlist::expand(list).map_err(|e| Rejected(e.to_string()))?;
        // A name the cluster does not have is a bad name; a node of another
        // partition cannot serve this one.
        if names.iter().any(|n| !state.nodes.contains_key(n)) {
            return reject("Invalid node name specified");
        }
        if names.iter().any(|n| !partition.nodes.contains(n)) {
            return reject(NODE_CONFIG_UNAVAILABLE);
        }
    }
    model::hostlist::expand(&spec.exclude).map_err(|e| Rejected(e.to_string()))?;
    // Each of its reservations (`--reservation=a,b`) must exist and admit it.
    for name in spec.reservations() {
        let Some(r) = state.reservations.get(name) else {
            return reject("Requested reservation is invalid");
        };
        if !r.admits(&spec) {
            return reject("Access denied to requested reservation");
        }
    }
    if !spec.constraint.is_empty() {
        check_constraint(state, &spec.constraint)?;
    }
    if !partition_could_hold(state, partition, &spec) {
        return reject(NODE_CONFIG_UNAVAILABLE);
    }
    Ok((spec, time_limit))
}

/// Could the partition's nodes ever hold the job on its node count, every node it
/// lists among them?
fn partition_could_hold(
    state: &ClusterState,
    partition: &model::Partition,
    spec: &JobSpec,
) -> bool {
    let job = model::Job::new(0, spec.clone(), 0, None);
    let nodes = partition.nodes.iter().filter_map(|n| state.nodes.get(n));
    sched::backfill::NodeFilter::new(&job).could_hold(
        nodes,
        &sched::per_node_request(&job),
        spec.num_nodes,
    )
}

/// The text Slurm prints for a constraint it cannot read or naming a feature no node
/// has.
pub const INVALID_FEATURE: &str = "Invalid feature specification";

/// `--constraint`: Slurm's syntax, and every feature it names offered by some node of
/// the cluster (a feature no node has is a typo, as Slurm says). Whether the nodes of
/// the job's partition can satisfy it is the node-count check's business.
fn check_constraint(state: &ClusterState, text: &str) -> Result<(), Rejected> {
    let c =
        model::constraint::Constraint::parse(text).map_err(|_| Rejected(INVALID_FEATURE.into()))?;
    let known: std::collections::BTreeSet<&str> = state
        .nodes
        .values()
        .flat_map(|n| n.features.iter().map(String::as_str))
        .collect();
    if c.features().iter().any(|f| !known.contains(f)) {
        return reject(INVALID_FEATURE);
    }
    Ok(())
}

/// A job's node count against its partition's nodes and MaxNodes.
/// Without `-N`, as Slurm does: the fewest of the partition's nodes that can hold the
/// job's tasks and GPUs spread evenly over them (`-n 16` on 8-CPU nodes takes two,
/// `--gpus=5` on 4-GPU nodes two with 3 each). One when no count fits, which the
/// checks below then refuse.
fn fewest_nodes(state: &ClusterState, partition: &model::Partition, spec: &JobSpec) -> u32 {
    let mut trial = spec.clone();
    for n in 1..=partition.nodes.len().max(1) as u32 {
        trial.num_nodes = n;
        if trial.num_tasks < n && trial.gpus < n {
            break;
        }
        if partition_could_hold(state, partition, &trial) {
            return n;
        }
    }
    1
}

fn check_node_count(partition: &model::Partition, spec: &JobSpec) -> Result<(), Rejected> {
    if spec.num_nodes as usize > partition.nodes.len()
        || (partition.max_nodes > 0 && spec.num_nodes > partition.max_nodes)
    {
        return reject("Node count specification invalid");
    }
    Ok(())
}

/// The most nodes of `-N min-max` the partition can give (its nodes, its MaxNodes); 0
/// when that is no more than the least.
fn most_nodes(partition: &model::Partition, spec: &JobSpec) -> u32 {
    let mut most = spec.max_nodes.min(partition.nodes.len() as u32);
    if partition.max_nodes > 0 {
        most = most.min(partition.max_nodes);
    }
    if most > spec.num_nodes { most } else { 0 }
}

/// A pending job moved to another partition (`scontrol update Partition=`): the
/// partition must take jobs and the job's node count.
pub fn check_partition_move(state: &ClusterState, spec: &JobSpec) -> Result<(), Rejected> {
    for name in spec.partitions() {
        let Some(partition) = state.partition(name) else {
            return reject(INVALID_PARTITION);
        };
        if !partition.accepts_jobs() {
            return reject(NOT_ACCEPTING);
        }
        check_node_count(partition, spec)?;
    }
    Ok(())
}

/// The text Slurm prints for a partition that takes no jobs.
const NOT_ACCEPTING: &str = "Partition in use is not accepting jobs (state INACTIVE or DRAIN)";

/// The partition's AllowAccounts/DenyAccounts and AllowQos against a job whose
/// account and QOS are resolved (after `check_accounting`), with Slurm's messages.
/// A job of several partitions must be allowed in each.
pub fn check_partition_access(state: &ClusterState, spec: &JobSpec) -> Result<(), Rejected> {
    for partition in spec.partitions().filter_map(|name| state.partition(name)) {
        if !partition.allows_account(&spec.account) {
            return reject(INVALID_ACCOUNT);
        }
        if !partition.allows_qos(&spec.qos) {
            return reject(INVALID_QOS);
        }
    }
    Ok(())
}

/// The partitions' AllowGroups against the job's user, a member of `groups` (by
/// name), with Slurm's message. A job of several partitions must be allowed in each.
pub fn check_partition_groups(
    state: &ClusterState,
    spec: &JobSpec,
    groups: &[String],
) -> Result<(), Rejected> {
    let refused = spec
        .partitions()
        .filter_map(|name| state.partition(name))
        .any(|p| !p.allows_user(spec.uid, groups));
    if refused {
        return reject(GROUP_NOT_PERMITTED);
    }
    Ok(())
}

/// The text Slurm prints for a user outside a partition's AllowGroups.
pub const GROUP_NOT_PERMITTED: &str = "User's group not permitted to use this partition";

/// The text Slurm prints for a job naming an account its user does not belong to.
pub const INVALID_ACCOUNT: &str = "Invalid account or account/partition combination specified";
/// The text Slurm prints for an unknown (or, for the account, not allowed) QOS.
pub const INVALID_QOS: &str = "Invalid qos specification";

/// Resolves and checks a job's account and QOS: the account defaults to the user's
/// default account and must have the user among its users (when accounts are
/// configured); the QOS defaults to the account's default QOS (else `normal`), must
/// exist, and must be one the account allows.
pub fn check_accounting(
    assocs: &model::assoc::Associations,
    mut spec: JobSpec,
) -> Result<JobSpec, Rejected> {
    if spec.account.is_empty() {
        match assocs.default_account(&spec.user) {
            Some(a) => spec.account = a.to_string(),
            None => return reject(INVALID_ACCOUNT),
        }
    }
    if !assocs.is_member(&spec.account, &spec.user) {
        return reject(INVALID_ACCOUNT);
    }
    let qos = assocs.qos_of(&spec).to_string();
    if !assocs.qos.contains_key(&qos)
        || assocs
            .allowed_qos(&spec.account, &spec.user)
            .is_some_and(|allowed| !allowed.contains(&qos))
    {
        return reject(INVALID_QOS);
    }
    spec.qos = qos;
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> (ClusterState, Config) {
        let config = Config::parse(
            r#"
[[nodes]]
names = "n[1-2]"
cpus = 4
memory = "4G"
gpus = 2
gpu_type = "h100"
tmp_disk = "2G"
[[partitions]]
name = "debug"
nodes = "n[1-2]"
max_time = "1:00:00"
default_time = "10"
"#,
            "t",
        )
        .unwrap();
        (
            ClusterState::new(config.node_list(), config.partition_list()),
            config,
        )
    }

    fn spec() -> (JobSpec, JobPayload) {
        let spec = JobSpec {
            work_dir: "/tmp".into(),
            ..JobSpec::default()
        };
        (
            spec,
            JobPayload {
                script: "#!/bin/sh\ntrue\n".into(),
                env: vec![],
            },
        )
    }

    #[test]
    fn fills_defaults() {
        let (s, c) = state();
        let (sp, p) = spec();
        let (out, limit) = check_submit(&s, &c, sp, &p).unwrap();
        assert_eq!(out.partition, "debug");
        assert_eq!(limit, Some(10));
        assert_eq!(out.num_tasks, 1);
    }

    #[test]
    fn a_list_of_partitions_keeps_those_that_can_hold_the_job() {
        let (mut s, c) = state();
        // `small` has one node, `wide` both, and `half` takes at most one node.
        for (name, nodes, max_nodes) in [
            ("small", "n1", 0),
            ("wide", "n1,n2", 0),
            ("half", "n1,n2", 1),
        ] {
            let mut p = model::Partition::open(name, vec![], false);
            p.nodes = nodes.split(',').map(String::from).collect();
            p.max_nodes = max_nodes;
            s.apply(&model::Event::PartitionSet {
                partition: Box::new(p),
            });
        }
        let submit = |list: &str, nodes: u32| {
            let (mut sp, p) = spec();
            sp.partition = list.into();
            sp.num_nodes = nodes;
            check_submit(&s, &c, sp, &p).map(|(out, _)| out.partition_list())
        };
        assert_eq!(submit("small,wide,small", 1).unwrap(), "small,wide");
        // Two nodes: `small` and `half` cannot hold it, `wide` can.
        assert_eq!(submit("small,wide,half", 2).unwrap(), "wide");
        // None can: the first one's refusal.
        assert_eq!(
            submit("small,half", 2).unwrap_err().0,
            "Node count specification invalid"
        );
        assert_eq!(
            submit("wide,nope", 1).unwrap_err().0,
            "invalid partition specified: nope\nInvalid partition name specified"
        );
    }

    #[test]
    fn tasks_and_gpus_without_a_node_count_spread_over_the_fewest_nodes() {
        let (s, c) = state();
        let nodes_for = |change: &dyn Fn(&mut JobSpec)| {
            let (mut sp, p) = spec();
            change(&mut sp);
            check_submit(&s, &c, sp, &p).map(|(out, _)| out.num_nodes)
        };
        // Two nodes of 4 CPUs and 2 GPUs.
        assert_eq!(nodes_for(&|j| j.num_tasks = 4), Ok(1));
        assert_eq!(nodes_for(&|j| j.num_tasks = 8), Ok(2));
        assert_eq!(
            nodes_for(&|j| {
                j.num_tasks = 2;
                j.cpus_per_task = 4;
            }),
            Ok(2)
        );
        assert_eq!(nodes_for(&|j| j.gpus = 3), Ok(2));
        assert!(nodes_for(&|j| j.num_tasks = 9).is_err());
        assert!(nodes_for(&|j| j.gpus = 5).is_err());
        // A node count given stays.
        assert_eq!(
            nodes_for(&|j| {
                j.num_tasks = 2;
                j.num_nodes = 2;
            }),
            Ok(2)
        );
        // `--nodelist` without `-N`: every node it names.
        assert_eq!(nodes_for(&|j| j.nodelist = "n[1-2]".into()), Ok(2));
        // And more when the request needs them: `-w n1 --gpus=3` takes two nodes.
        assert_eq!(
            nodes_for(&|j| {
                j.nodelist = "n1".into();
                j.gpus = 3;
            }),
            Ok(2)
        );
        // `--gpus=2 --mem-per-gpu=3000`: 6000 MB of GPUs' memory is more than a node's
        // 4 GB, so one GPU on each of two nodes.
        assert_eq!(
            nodes_for(&|j| {
                j.gpus = 2;
                j.details.mem_per_gpu_mb = 3000;
            }),
            Ok(2)
        );
        assert!(
            nodes_for(&|j| {
                j.gpus = 2;
                j.details.mem_per_gpu_mb = 5000;
            })
            .is_err()
        );
        // `--gpus=2 --cpus-per-gpu=4`: one task of 8 CPUs, whose CPUs two nodes hold;
        // the nodes hold CPUs, not more tasks.
        let (mut sp, p) = spec();
        sp.gpus = 2;
        sp.cpus_per_task = 8;
        sp.details.cpus_per_gpu = 4;
        let (out, _) = check_submit(&s, &c, sp, &p).unwrap();
        assert_eq!(
            (out.num_nodes, out.num_tasks, out.per_node_cpus_mem().0),
            (2, 1, 4)
        );
    }

    #[test]
    fn a_node_range_is_kept_within_the_partition() {
        let (s, c) = state();
        let range_for = |least: u32, most: u32| {
            let (mut sp, p) = spec();
            sp.num_nodes = least;
            sp.max_nodes = most;
            check_submit(&s, &c, sp, &p).map(|(out, _)| (out.num_nodes, out.max_nodes))
        };
        // The partition has two nodes.
        assert_eq!(range_for(1, 2), Ok((1, 2)));
        assert_eq!(range_for(1, 8), Ok((1, 2)));
        assert_eq!(range_for(2, 8), Ok((2, 0)));
        assert!(range_for(3, 8).is_err());
    }

    #[test]
    fn accounts_and_qos() {
        let assocs = model::assoc::Associations::from_config(
            &Config::parse(
                r#"
[[qos]]
name = "high"
[[qos]]
name = "low"
[[accounts]]
name = "ml"
users = ["alice"]
default_qos = "high"
[[accounts]]
name = "physics"
users = ["bob", "alice"]
qos = ["normal", "low"]
"#,
                "t",
            )
            .unwrap(),
        );
        let spec = |user: &str, account: &str, qos: &str| JobSpec {
            user: user.into(),
            account: account.into(),
            qos: qos.into(),
            ..JobSpec::default()
        };
        let ok = check_accounting(&assocs, spec("alice", "", "")).unwrap();
        assert_eq!((ok.account.as_str(), ok.qos.as_str()), ("ml", "high"));
        let ok = check_accounting(&assocs, spec("alice", "physics", "low")).unwrap();
        assert_eq!((ok.account.as_str(), ok.qos.as_str()), ("physics", "low"));
        let ok = check_accounting(&assocs, spec("bob", "", "")).unwrap();
        assert_eq!(ok.qos, "normal");
        for (user, account, qos, want) in [
            ("bob", "ml", "", INVALID_ACCOUNT),
            ("carol", "", "", INVALID_ACCOUNT),
            ("bob", "nope", "", INVALID_ACCOUNT),
            ("alice", "", "nope", INVALID_QOS),
            ("bob", "physics", "high", INVALID_QOS),
        ] {
            let e = check_accounting(&assocs, spec(user, account, qos)).unwrap_err();
            assert_eq!(e.0, want, "{user} {account} {qos}");
        }
        // Without accounts anything goes, under `default` with QOS `normal`.
        let open = model::assoc::Associations::default();
        let ok = check_accounting(&open, spec("carol", "", "")).unwrap();
        assert_eq!(
            (ok.account.as_str(), ok.qos.as_str()),
            ("default", "normal")
        );
        assert!(check_accounting(&open, spec("carol", "anything", "")).is_ok());
        assert_eq!(
            check_accounting(&open, spec("carol", "", "gold"))
                .unwrap_err()
                .0,
            INVALID_QOS
        );
    }

    #[test]
    fn refuses_impossible_requests() {
        let (s, c) = state();
        type Change = Box<dyn Fn(&mut JobSpec)>;
        let cases: Vec<(Change, &str)> = vec![
            (
                Box::new(|j| j.partition = "nope".into()),
                "invalid partition specified: nope\nInvalid partition name specified",
            ),
            (
                Box::new(|j| j.partition = "debug,nope".into()),
                "invalid partition specified: nope\nInvalid partition name specified",
            ),
            (Box::new(|j| j.partition = "debug,debug".into()), ""),
            (
                Box::new(|j| j.time_limit_min = Some(61)),
                "Requested time limit is invalid",
            ),
            (Box::new(|j| j.cpus_per_task = 5), NODE_CONFIG_UNAVAILABLE),
            (
                Box::new(|j| j.mem_per_node_mb = 5000),
                NODE_CONFIG_UNAVAILABLE,
            ),
            (Box::new(|j| j.gpus_per_node = 3), NODE_CONFIG_UNAVAILABLE),
            (Box::new(|j| j.gpu_type = "a100".into()), ""),
            (
                Box::new(|j| {
                    (j.num_tasks, j.num_nodes, j.ntasks_per_node) = (2, 1, 1);
                }),
                NODE_CONFIG_UNAVAILABLE,
            ),
            (
                Box::new(|j| {
                    (j.num_tasks, j.num_nodes, j.ntasks_per_node) = (2, 2, 1);
                }),
                "",
            ),
            (
                Box::new(|j| j.details.min_cpus_node = 999_999),
                NODE_CONFIG_UNAVAILABLE,
            ),
            (Box::new(|j| j.details.min_cpus_node = 1), ""),
            (
                Box::new(|j| j.details.tmp_disk_mb = 2049),
                NODE_CONFIG_UNAVAILABLE,
            ),
            (Box::new(|j| j.details.tmp_disk_mb = 2048), ""),
            (
                Box::new(|j| j.num_nodes = 3),
                "Node count specification invalid",
            ),
            (
                // More nodes than the partition's 8 CPUs (`-N 1k`).
                Box::new(|j| j.num_nodes = 1024),
                TOO_MANY_CPUS,
            ),
            (
                Box::new(|j| j.dependency = "afterok:99".into()),
                "Job dependency problem",
            ),
            (
                Box::new(|j| j.dependency = "whenever".into()),
                "Job dependency problem",
            ),
            (
                Box::new(|j| j.nodelist = "DUMMY_HOSTNAME".into()),
                "Invalid node name specified",
            ),
            (Box::new(|j| j.nodelist = "n2".into()), ""),
            (
                Box::new(|j| j.name = "n".repeat(1025)),
                model::job::TOO_LONG,
            ),
            (Box::new(|j| j.name = "n".repeat(1024)), ""),
            (
                Box::new(|j| j.comment = "c".repeat(60 << 20)),
                model::job::TOO_LONG,
            ),
        ];
        for (change, want) in cases {
            let (mut sp, p) = spec();
            change(&mut sp);
            let got = check_submit(&s, &c, sp.clone(), &p);
            if want.is_empty() {
                assert!(got.is_ok(), "{sp:?}");
            } else {
                let e = got.unwrap_err();
                assert!(e.0.starts_with(want), "{e} for {sp:?}");
            }
        }
        let (sp, _) = spec();
        let bad = JobPayload {
            script: "echo hi\n".into(),
            env: vec![],
        };
        assert!(check_submit(&s, &c, sp.clone(), &bad).is_err());
        let (_, mut big) = spec();
        big.env = vec![("HUGE".into(), "x".repeat(200 << 10))];
        assert_eq!(
            check_submit(&s, &c, sp, &big).unwrap_err().0,
            "The job's environment is too large to start it with"
        );
        // A node whose entry declares no TmpDisk may have any: `--tmp` is not checked.
        let undeclared = Config::parse(
            "[[nodes]]\nnames = \"n1\"\ncpus = 4\nmemory = \"4G\"\n\
             [[partitions]]\nname = \"debug\"\nnodes = \"n1\"\n",
            "t",
        )
        .unwrap();
        let s = ClusterState::new(undeclared.node_list(), undeclared.partition_list());
        let (mut sp, p) = spec();
        sp.details.tmp_disk_mb = 999_999;
        assert!(check_submit(&s, &undeclared, sp, &p).is_ok());
    }

    #[test]
    fn constraints_and_partition_access() {
        let config = Config::parse(
            r#"
[[nodes]]
names = "a1"
cpus = 4
memory = "4G"
features = ["a100", "ib"]
[[nodes]]
names = "h1"
cpus = 4
memory = "4G"
features = ["h100"]
[[qos]]
name = "high"
[[accounts]]
name = "ml"
users = ["alice"]
[[accounts]]
name = "guests"
users = ["alice"]
[[partitions]]
name = "main"
nodes = "a1,h1"
default = true
deny_accounts = ["guests"]
[[partitions]]
name = "h"
nodes = "h1"
allow_accounts = ["ml"]
allow_qos = ["high"]
"#,
            "t",
        )
        .unwrap();
        let state = ClusterState::new(config.node_list(), config.partition_list());
        let assocs = model::assoc::Associations::from_config(&config);
        let submit = |partition: &str, constraint: &str, account: &str, qos: &str| {
            let (mut sp, p) = spec();
            sp.user = "alice".into();
            sp.partition = partition.into();
            sp.constraint = constraint.into();
            sp.account = account.into();
            sp.qos = qos.into();
            let (sp, _) = check_submit(&state, &config, sp, &p)?;
            let sp = check_accounting(&assocs, sp)?;
            check_partition_access(&state, &sp).map(|()| sp)
        };
        let not_available = NODE_CONFIG_UNAVAILABLE;
        for (partition, constraint, account, qos, want) in [
            ("", "a100&ib", "ml", "", ""),
            ("", "(a100|h100)", "ml", "", ""),
            ("", "a100&h100", "ml", "", not_available),
            ("h", "a100", "ml", "high", not_available),
            ("h", "h100", "ml", "high", ""),
            ("", "v100", "ml", "", INVALID_FEATURE),
            ("", "a100|", "ml", "", INVALID_FEATURE),
            ("", "", "guests", "", INVALID_ACCOUNT),
            ("h", "", "guests", "high", INVALID_ACCOUNT),
            ("h", "", "ml", "", INVALID_QOS),
            ("h", "", "ml", "normal", INVALID_QOS),
        ] {
            let got = submit(partition, constraint, account, qos);
            match (want, got) {
                ("", Ok(_)) => {}
                ("", Err(e)) => panic!("{partition} {constraint} {account}: {e}"),
                (want, Ok(_)) => panic!("{partition} {constraint} {account}: accepted, not {want}"),
                (want, Err(e)) => assert_eq!(e.0, want, "{partition} {constraint} {account}"),
            }
        }
    }
}
