//! Jobs: what was asked for (`JobSpec`), what it got (`Allocation`) and where it is in
//! its life (`JobState`).
//!
//! A job starts PENDING, becomes RUNNING when the scheduler gives it an allocation, and
//! ends in one final state. A requeued job goes back to PENDING with its restart count
//! raised. A pending job array is one record whose `pending_tasks` shrink as tasks are
//! split off into their own records; the last task to start keeps the array's id.

use crate::reason::Reason;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Unix time in seconds.
pub type Time = i64;
pub type JobId = u32;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum JobState {
    Pending,
    Running,
    Suspended,
    Completing,
    Completed,
    Failed,
    Cancelled,
    Timeout,
    NodeFail,
    OutOfMemory,
    Preempted,
    Requeued,
    BootFail,
    Deadline,
    /// Requeued and held by `scontrol requeuehold State=SpecialExit` (Slurm's
    /// JOB_SPECIAL_EXIT): it waits, as a held pending job, until `scontrol release`.
    SpecialExit,
}

impl JobState {
    pub const ALL: [JobState; 15] = [
        JobState::Pending,
        JobState::Running,
        JobState::Suspended,
        JobState::Completing,
        JobState::Completed,
        JobState::Failed,
        JobState::Cancelled,
        JobState::Timeout,
        JobState::NodeFail,
        JobState::OutOfMemory,
        JobState::Preempted,
        JobState::Requeued,
        JobState::BootFail,
        JobState::Deadline,
        JobState::SpecialExit,
    ];

    pub fn is_final(self) -> bool {
        !matches!(
            self,
            JobState::Pending
                | JobState::Running
                | JobState::Suspended
                | JobState::Completing
                | JobState::SpecialExit
        )
    }

    /// Waiting to run: pending, or held in SPECIAL_EXIT.
    pub fn is_waiting(self) -> bool {
        matches!(self, JobState::Pending | JobState::SpecialExit)
    }

    /// Slurm's long name (`squeue %T`, `sacct State`).
    pub fn name(self) -> &'static str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Running => "RUNNING",
            JobState::Suspended => "SUSPENDED",
            JobState::Completing => "COMPLETING",
            JobState::Completed => "COMPLETED",
            JobState::Failed => "FAILED",
            JobState::Cancelled => "CANCELLED",
            JobState::Timeout => "TIMEOUT",
            JobState::NodeFail => "NODE_FAIL",
            JobState::OutOfMemory => "OUT_OF_MEMORY",
            JobState::Preempted => "PREEMPTED",
            JobState::Requeued => "REQUEUED",
            JobState::BootFail => "BOOT_FAIL",
            JobState::Deadline => "DEADLINE",
            JobState::SpecialExit => "SPECIAL_EXIT",
        }
    }

    /// Slurm's compact code (`squeue %t`).
    pub fn short_name(self) -> &'static str {
        match self {
            JobState::Pending => "PD",
            JobState::Running => "R",
            JobState::Suspended => "S",
            JobState::Completing => "CG",
            JobState::Completed => "CD",
            JobState::Failed => "F",
            JobState::Cancelled => "CA",
            JobState::Timeout => "TO",
            JobState::NodeFail => "NF",
            JobState::OutOfMemory => "OOM",
            JobState::Preempted => "PR",
            JobState::Requeued => "RQ",
            JobState::BootFail => "BF",
            JobState::Deadline => "DL",
            JobState::SpecialExit => "SE",
        }
    }

    /// Parses a long or compact name, in any case (`squeue -t pd,running`).
    pub fn parse(text: &str) -> Option<JobState> {
        let up = text.trim().to_ascii_uppercase();
        JobState::ALL
            .into_iter()
            .find(|s| s.name() == up || s.short_name() == up)
    }
}

/// How a preempted job is stopped (Slurm's `PreemptMode`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
pub enum PreemptMode {
    /// Never preempted.
    #[default]
    Off,
    /// Terminated (SIGTERM, SIGKILL after GraceTime); it ends PREEMPTED.
    Cancel,
    /// Terminated like `Cancel`, then back to PENDING to run again.
    Requeue,
    /// Stopped (SIGSTOP) with its memory held, resumed when the room is free again.
    Suspend,
}

impl PreemptMode {
    /// Parses `off`, `cancel`, `requeue` or `suspend` (any case).
    pub fn parse(text: &str) -> Option<PreemptMode> {
        match text.trim().to_ascii_lowercase().as_str() {
            "off" => Some(PreemptMode::Off),
            "cancel" => Some(PreemptMode::Cancel),
            "requeue" => Some(PreemptMode::Requeue),
            "suspend" => Some(PreemptMode::Suspend),
            _ => None,
        }
    }

    /// Slurm's upper-case name.
    pub fn name(self) -> &'static str {
        match self {
            PreemptMode::Off => "OFF",
            PreemptMode::Cancel => "CANCEL",
            PreemptMode::Requeue => "REQUEUE",
            PreemptMode::Suspend => "SUSPEND",
        }
    }
}

/// A job chosen for preemption: by whom, how, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preemption {
    /// The pending job it makes room for.
    pub preemptor: JobId,
    pub mode: PreemptMode,
    /// When it was chosen; with `grace_secs`, when it is killed.
    pub time: Time,
    /// Slurm's GraceTime: SIGTERM at `time`, the kill at `time + grace_secs`.
    pub grace_secs: u32,
}

/// Why an acknowledged request ends a job's run: the node is told to kill it until it
/// reports the end, and the end is then recorded as the request says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum KillCause {
    /// `scancel` by this uid: the job ends CANCELLED.
    Cancel { by: u32 },
    /// `scontrol requeue` (`hold`: `requeuehold`): the job goes back to PENDING.
    Requeue { hold: bool },
    /// Its preemption's grace time is over (the job's `preemption` says how it ends).
    Preempt,
    /// `scontrol requeuehold State=SpecialExit`: the job goes back held in SPECIAL_EXIT.
    RequeueSpecialExit,
}

/// An acknowledged kill of a running job, kept in the job's record so that it survives
/// a restart of the controller (Slurm keeps the canceller and the completing flag in
/// the job record the same way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct KillRequest {
    pub cause: KillCause,
    /// When it was acknowledged.
    pub time: Time,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ArraySpec {
    /// Task ids, sorted and unique.
    pub task_ids: Vec<u32>,
    /// `%N`: at most this many tasks run at once; 0 is unlimited.
    pub max_running: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignalSpec {
    pub signal: i32,
    pub seconds_before_end: u32,
    pub batch_only: bool,
}

/// Slurm's notice of a job or step (`what`: `JOB 5`, `STEP 5.1`) cancelled on `node` at
/// `at` (a local timestamp), for its time limit or not: `error: *** STEP 5.1 ON n1
/// CANCELLED AT 2024-05-01T12:00:00 DUE TO TIME LIMIT ***`.
pub fn cancelled_line(what: &str, node: &str, at: &str, time_limit: bool) -> String {
    let cause = if time_limit { " DUE TO TIME LIMIT" } else { "" };
    format!("error: *** {what} ON {node} CANCELLED AT {at}{cause} ***")
}

/// The variable that gives a heterogeneous job's component count to its batch script
/// and its salloc's command.
pub const HET_SIZE_VAR: &str = "SLURM_HET_SIZE";

/// The variables a heterogeneous job's batch script (or salloc's command) gets again
/// for each component N, as `NAME_HET_GROUP_N` (Slurm's env_array_for_job).
const HET_GROUP_VARS: [&str; 17] = [
    "SLURM_JOB_ID",
    "SLURM_JOB_NAME",
    "SLURM_JOB_NODELIST",
    "SLURM_NODELIST",
    "SLURM_JOB_NUM_NODES",
    "SLURM_NNODES",
    "SLURM_NTASKS",
    "SLURM_NPROCS",
    "SLURM_TASKS_PER_NODE",
    "SLURM_NTASKS_PER_NODE",
    "SLURM_CPUS_PER_TASK",
    "SLURM_JOB_CPUS_PER_NODE",
    "SLURM_MEM_PER_NODE",
    "SLURM_MEM_PER_CPU",
    "SLURM_JOB_PARTITION",
    "SLURM_JOB_ACCOUNT",
    "SLURM_JOB_QOS",
];

/// Of the variables component `n` of a heterogeneous job would get as a job of its
/// own, those Slurm gives again, named `NAME_HET_GROUP_N`.
pub fn het_group_vars(
    vars: Vec<(String, String)>,
    n: usize,
) -> impl Iterator<Item = (String, String)> {
    vars.into_iter()
        .filter(|(name, _)| HET_GROUP_VARS.contains(&name.as_str()))
        .map(move |(name, value)| (format!("{name}_HET_GROUP_{n}"), value))
}

/// The environment of a heterogeneous allocation as component `n` sees it: each
/// `NAME_HET_GROUP_N` given as `NAME` too (`srun --het-group=N`).
pub fn het_component_env(env: &[(String, String)], n: u32) -> Vec<(String, String)> {
    let suffix = format!("_HET_GROUP_{n}");
    let mut out = env.to_vec();
    for (name, value) in env {
        if let Some(base) = name.strip_suffix(&suffix) {
            match out.iter_mut().find(|(k, _)| k == base) {
                Some(kv) => kv.1.clone_from(value),
                None => out.push((base.to_string(), value.clone())),
            }
        }
    }
    out
}

/// `--priority=TOP`: the highest priority an operator may fix (Slurm's `NO_VAL - 1`).
pub const TOP_PRIORITY: u32 = 0xFFFF_FFFD;

/// What the user asked for. The script and environment are kept apart (`JobPayload`):
/// they can be large and only the node that runs the job needs them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct JobSpec {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub user: String,
    pub account: String,
    /// The partition the job runs (or ran) in; while it is pending, the first of the
    /// partitions it may start in.
    pub partition: String,
    /// `-p a,b,c`: the other partitions a pending job may start in, in the order
    /// given. Starting in one of them makes it `partition`, and the list keeps the
    /// rest (`ClusterState::apply`'s `JobPartitionChosen`).
    pub more_partitions: Vec<String>,
    pub qos: String,
    pub script_args: Vec<String>,
    pub work_dir: String,
    pub stdout_pattern: String,
    pub stderr_pattern: String,
    pub stdin_path: String,
    pub open_mode_append: bool,
    pub num_nodes: u32,
    /// `-N min-max`: the most nodes the job takes when they are free at its start
    /// (`num_nodes` is the least); 0 without a range.
    pub max_nodes: u32,
    pub num_tasks: u32,
    pub cpus_per_task: u32,
    pub ntasks_per_node: u32,
    pub mem_per_node_mb: u64,
    pub mem_per_cpu_mb: u64,
    /// `--mem=0`: all the memory of each node the job gets (`mem_per_node_mb` is 0).
    pub mem_whole_node: bool,
    pub gpus: u32,
    pub gpus_per_node: u32,
    pub gpu_type: String,
    /// Minutes; `None` means the partition's default.
    pub time_limit_min: Option<u32>,
    pub signal: Option<SignalSpec>,
    pub requeue: bool,
    pub comment: String,
    pub wckey: String,
    pub begin_time: Time,
    pub hold: bool,
    pub dependency: String,
    pub array: Option<ArraySpec>,
    pub submit_host: String,
    /// `--reservation`: a reservation, or several (`a,b,c`) the job may start in any
    /// one of, tried in that order (Slurm 22.05); kept as given.
    pub reservation: String,
    pub constraint: String,
    pub nodelist: String,
    pub exclude: String,
    pub exclusive: bool,
    pub nice: i32,
    /// A priority an operator fixed (`sbatch --priority`, `scontrol update
    /// Priority=`): the job's priority in place of the multifactor one, until the job
    /// is held and released, as in Slurm.
    pub priority: Option<u32>,
    /// Slurm's SiteFactor, an operator's (`scontrol update SiteFactor=`): added to the
    /// multifactor priority.
    pub site_factor: i32,
    /// An allocation salloc or srun holds: its script only holds the nodes, and as in
    /// Slurm the job has no batch step (BatchFlag=0).
    pub interactive: bool,
    pub kill_on_invalid_dep: bool,
    /// The batch script's path as submitted, made absolute (Slurm's `Command`); empty
    /// for a script from stdin or `--wrap`.
    pub command: String,
    /// `--mail-type`: what the user is mailed about, sorted.
    pub mail_types: Vec<crate::mail::MailType>,
    /// `--mail-user`; empty: the job's user.
    pub mail_user: String,
    /// What was asked as given, for `scontrol show job`.
    pub details: RequestDetails,
}

/// Options of a request kept as the user gave them (Slurm's job details): the node
/// constraints and the GPU options `scontrol show job` shows (`MinCPUsNode`,
/// `MinTmpDiskNode`, `OverSubscribe`, `Contiguous`, `TresPerJob`, `CpusPerTres`, ...).
/// The counts the scheduler works with are `JobSpec`'s.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct RequestDetails {
    /// `--mincpus`; 0: not given.
    pub min_cpus_node: u32,
    /// `--tmp`, MB.
    pub tmp_disk_mb: u64,
    /// `--oversubscribe`.
    pub oversubscribe: bool,
    /// `--contiguous`.
    pub contiguous: bool,
    /// `--gpus`, `--gpus-per-task`, `--gpus-per-socket`; 0: not given.
    pub gpus_per_job: u32,
    pub gpus_per_task: u32,
    pub gpus_per_socket: u32,
    /// `--cpus-per-gpu`, `--mem-per-gpu` (MB); 0: not given.
    pub cpus_per_gpu: u32,
    pub mem_per_gpu_mb: u64,
    /// `--gpu-bind`, `--gpu-freq`, as given.
    pub gpu_bind: String,
    pub gpu_freq: String,
    /// `--deadline`; 0: none. A pending job that can no longer run by then ends
    /// DEADLINE, and a job's time limit is cut at its start to end by then.
    pub deadline: Time,
    /// `--time-min`, minutes; 0: not given.
    pub time_min: u32,
    /// `--overcommit`: `-c` CPUs on each node, whatever the task count, and steps may
    /// run more tasks than the job's CPUs.
    pub overcommit: bool,
}

/// The most characters of a job's name, account, comment and other words (Slurm
/// 22.05 refuses longer ones).
pub const MAX_WORD_CHARS: usize = 1024;
/// The most characters of a job's paths: its working directory and its output, error
/// and input files (Slurm's MAXPATHLEN).
pub const MAX_PATH_CHARS: usize = 4096;
/// The most characters of a job's lists: dependencies, node lists, its command and
/// arguments.
pub const MAX_LIST_CHARS: usize = 64 << 10;
/// The most bytes of one variable of a job's environment (`NAME=value`) and of all
/// of them: what the kernel's execve takes (MAX_ARG_STRLEN, and a quarter of the usual
/// 8 MB stack).
pub const MAX_ENV_VAR_BYTES: usize = 128 << 10;
pub const MAX_ENV_BYTES: usize = 2 << 20;
/// Slurm's words for a value over its size (ESLURM_PATHNAME_TOO_LONG).
pub const TOO_LONG: &str = "Pathname of a file, directory or other parameter too long";

/// The separator of a partition list (`-p a,b`), in Slurm's syntax.
pub const PARTITION_LIST_SEPARATOR: char = ',';

/// The names of a reservation list as `--reservation` takes it (`a,b`, Slurm's
/// partition list syntax).
pub fn reservation_names(list: &str) -> impl Iterator<Item = &str> + Clone {
    list.split(PARTITION_LIST_SEPARATOR)
        .filter(|r| !r.is_empty())
}

impl JobSpec {
    /// Every partition the job may run in: `partition`, then `more_partitions`.
    pub fn partitions(&self) -> impl Iterator<Item = &str> + Clone {
        std::iter::once(self.partition.as_str())
            .chain(self.more_partitions.iter().map(String::as_str))
    }

    /// The reservations the job may start in (`--reservation=a,b`), in its order;
    /// none without `--reservation`. A job runs in one of them.
    pub fn reservations(&self) -> impl Iterator<Item = &str> + Clone {
        reservation_names(&self.reservation)
    }

    /// Does the job name more than one reservation (`--reservation=a,b`)?
    pub fn has_several_reservations(&self) -> bool {
        self.reservations().nth(1).is_some()
    }

    /// Is `name` one of the reservations the job may start in?
    pub fn may_use_reservation(&self, name: &str) -> bool {
        self.reservations().any(|r| r == name)
    }

    /// The partitions as Slurm writes a list of them: `debug,gpu`.
    pub fn partition_list(&self) -> String {
        let mut list = self.partition.clone();
        for p in &self.more_partitions {
            list.push(PARTITION_LIST_SEPARATOR);
            list.push_str(p);
        }
        list
    }

    /// Sets `partition` and `more_partitions` from a list as Slurm writes it
    /// (`debug,gpu`); empty names are dropped, and a name given twice counts once.
    ///
    /// Example: `"gpu,,debug,gpu"` gives `partition` gpu and `more_partitions`
    /// `[debug]`; `""` gives an empty `partition` (the cluster's default).
    pub fn set_partition_list(&mut self, list: &str) {
        let mut names: Vec<String> = Vec::new();
        for name in list
            .split(PARTITION_LIST_SEPARATOR)
            .filter(|n| !n.is_empty())
        {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
        let mut names = names.into_iter();
        self.partition = names.next().unwrap_or_default();
        self.more_partitions = names.collect();
    }

    /// The first field longer than its limit (`MAX_WORD_CHARS`, `MAX_PATH_CHARS`,
    /// `MAX_LIST_CHARS`), by its Slurm name; `None` when every one fits.
    ///
    /// Example: a 1,100-character `--job-name` gives `Some("JobName")`; a 4,000
    /// character `--chdir` fits.
    pub fn oversized(&self) -> Option<&'static str> {
        let words = [
            ("JobName", &self.name),
            ("UserId", &self.user),
            ("Account", &self.account),
            ("Partition", &self.partition),
            ("QOS", &self.qos),
            ("GresType", &self.gpu_type),
            ("Comment", &self.comment),
            ("WCKey", &self.wckey),
            ("AllocNode", &self.submit_host),
            ("Reservation", &self.reservation),
            ("Features", &self.constraint),
            ("MailUser", &self.mail_user),
            ("TresBind", &self.details.gpu_bind),
            ("TresFreq", &self.details.gpu_freq),
        ];
        let paths = [
            ("WorkDir", &self.work_dir),
            ("StdOut", &self.stdout_pattern),
            ("StdErr", &self.stderr_pattern),
            ("StdIn", &self.stdin_path),
            ("Command", &self.command),
        ];
        let lists = [
            ("Dependency", &self.dependency),
            ("ReqNodeList", &self.nodelist),
            ("ExcNodeList", &self.exclude),
        ];
        let over = |limit: usize| {
            move |(name, text): &(&'static str, &String)| {
                (text.chars().count() > limit).then_some(*name)
            }
        };
        let args: usize = self.script_args.iter().map(|a| a.chars().count() + 1).sum();
        words
            .iter()
            .find_map(over(MAX_WORD_CHARS))
            .or_else(|| paths.iter().find_map(over(MAX_PATH_CHARS)))
            .or_else(|| lists.iter().find_map(over(MAX_LIST_CHARS)))
            .or_else(|| (args > MAX_LIST_CHARS).then_some("Arguments"))
    }

    /// CPUs the whole job needs: tasks × cpus per task.
    pub fn total_cpus(&self) -> u32 {
        if self.details.overcommit {
            return self.num_nodes.max(1) * self.cpus_per_task.max(1);
        }
        self.num_tasks.max(1) * self.cpus_per_task.max(1)
    }

    /// CPUs and memory (MB) needed on each node: tasks per node (or all tasks spread
    /// evenly) times CPUs per task, and `--mem`, or `--mem-per-cpu` times those CPUs.
    pub fn per_node_cpus_mem(&self) -> (u32, u64) {
        self.per_node_cpus_mem_on(self.num_nodes)
    }

    /// `per_node_cpus_mem` on `nodes` nodes (a count in the `-N min-max` range). With
    /// `--mem-per-gpu`, the memory of the node taking the most GPUs (each node then
    /// gets it for the GPUs it is given: [`mem_for_gpus`]).
    pub fn per_node_cpus_mem_on(&self, nodes: u32) -> (u32, u64) {
        let cpus = if self.details.overcommit {
            // sbatch(1): "allocated as if only one task per node is requested".
            self.cpus_per_task.max(1)
        } else if self.ntasks_per_node > 0 {
            self.ntasks_per_node * self.cpus_per_task.max(1)
        } else {
            self.total_cpus().div_ceil(nodes.max(1))
        };
        let mem = if self.mem_per_cpu_mb > 0 {
            self.mem_per_cpu_mb * u64::from(cpus)
        } else if self.details.mem_per_gpu_mb > 0 {
            mem_for_gpus(self.details.mem_per_gpu_mb, self.gpus_on_each_of(nodes))
        } else {
            self.mem_per_node_mb
        };
        (cpus, mem)
    }

    /// GPUs needed on each node of the allocation.
    pub fn gpus_on_each_node(&self) -> u32 {
        self.gpus_on_each_of(self.num_nodes)
    }

    /// `gpus_on_each_node` on `nodes` nodes: the most any one of them takes.
    pub fn gpus_on_each_of(&self, nodes: u32) -> u32 {
        self.gpus_on_node(0, nodes)
    }

    /// GPUs on all of `nodes` nodes together (`gpus_on_node` summed).
    pub fn gpus_over(&self, nodes: u32) -> u32 {
        if self.gpus_per_node > 0 {
            self.gpus_per_node * nodes.max(1)
        } else {
            self.gpus
        }
    }

    /// GPUs on the `i`-th of `nodes` nodes: `--gpus-per-node`, else `--gpus` spread
    /// with the larger shares first, as Slurm's cons_tres spreads them.
    ///
    /// Example: `--gpus=7 -N2` takes 4 and 3; `--gpus=5 -N4` takes 2, 1, 1 and 1.
    pub fn gpus_on_node(&self, i: u32, nodes: u32) -> u32 {
        if self.gpus_per_node > 0 {
            return self.gpus_per_node;
        }
        spread_share(self.gpus, i, nodes)
    }

    /// The node counts the job may start on, most first: `max_nodes` down to
    /// `num_nodes` with `-N min-max`, else `num_nodes` alone.
    pub fn node_counts(&self) -> impl Iterator<Item = u32> {
        let least = self.num_nodes.max(1);
        (least..=self.max_nodes.max(least)).rev()
    }
}

/// The large, rarely read part of a job: the script and the captured environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct JobPayload {
    pub script: String,
    pub env: Vec<(String, String)>,
}

impl JobPayload {
    /// Whether the environment is more than a job's processes could be started with
    /// (`MAX_ENV_VAR_BYTES` a variable, `MAX_ENV_BYTES` in all).
    pub fn env_oversized(&self) -> bool {
        let sizes = self.env.iter().map(|(k, v)| k.len() + v.len() + 2);
        let mut total = 0;
        for size in sizes {
            if size > MAX_ENV_VAR_BYTES {
                return true;
            }
            total += size;
        }
        total > MAX_ENV_BYTES
    }
}

/// What one node gives a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeAllocation {
    pub node: String,
    pub cpus: u32,
    pub mem_mb: u64,
    pub gpus: Vec<u32>,
    /// The CPU ids the job is pinned to, `cpus` of them (`sched::cpus`).
    pub cpu_ids: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Allocation {
    pub nodes: Vec<NodeAllocation>,
}

impl Allocation {
    pub fn node_names(&self) -> Vec<&str> {
        self.nodes.iter().map(|n| n.node.as_str()).collect()
    }
    pub fn hostlist(&self) -> String {
        crate::hostlist::fold(&self.node_names())
    }
    pub fn cpus(&self) -> u32 {
        self.nodes.iter().map(|n| n.cpus).sum()
    }
    pub fn mem_mb(&self) -> u64 {
        self.nodes.iter().map(|n| n.mem_mb).sum()
    }
    pub fn gpus(&self) -> u32 {
        self.nodes.iter().map(|n| n.gpus.len() as u32).sum()
    }

    /// The allocation shrunk to its first `n` nodes, the batch host (the first) kept,
    /// and the names of the nodes given up, as Slurm shrinks a running job.
    ///
    /// ```
    /// # use model::{Allocation, NodeAllocation};
    /// let node = |name: &str| NodeAllocation {
    ///     node: name.into(), cpus: 1, mem_mb: 0, gpus: vec![], cpu_ids: vec![],
    /// };
    /// let a = Allocation { nodes: vec![node("n1"), node("n2"), node("n3")] };
    /// let (kept, given_up) = a.shrunk_to(1);
    /// assert_eq!((kept.hostlist(), given_up), ("n1".to_string(), vec!["n2".to_string(), "n3".to_string()]));
    /// ```
    pub fn shrunk_to(&self, n: usize) -> (Allocation, Vec<String>) {
        let n = n.max(1).min(self.nodes.len());
        let kept = Allocation {
            nodes: self.nodes[..n].to_vec(),
        };
        let given_up = self.nodes[n..].iter().map(|a| a.node.clone()).collect();
        (kept, given_up)
    }
}

/// `--mem-per-gpu`: the memory (MB) a node gives a job for the `gpus` of its GPUs it
/// holds, as Slurm's cons_tres counts it: `--gpus=5 --mem-per-gpu=13` on two nodes
/// with 3 and 2 GPUs takes 39 and 26 MB, 65 in all; an exclusive job's node counts
/// every GPU it has.
///
/// ```
/// assert_eq!(model::job::mem_for_gpus(13, 3), 39);
/// assert_eq!(model::job::mem_for_gpus(13, 0), 13);
/// ```
pub fn mem_for_gpus(mem_per_gpu_mb: u64, gpus: u32) -> u64 {
    mem_per_gpu_mb * u64::from(gpus.max(1))
}

/// The `i`-th of `nodes` shares of `total`, the larger shares first, as Slurm's
/// cons_tres spreads a job's GPUs: 7 over 2 is 4 and 3; 5 over 4 is 2, 1, 1 and 1.
pub fn spread_share(total: u32, i: u32, nodes: u32) -> u32 {
    let nodes = nodes.max(1);
    total / nodes + u32::from(i < total % nodes)
}

/// A step run inside a job's allocation (`N.batch`, `N.0`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// `None` for the batch step.
    pub id: Option<u32>,
    pub name: String,
    pub state: JobState,
    pub start_time: Time,
    pub end_time: Time,
    pub exit_code: i32,
    pub exit_signal: i32,
    pub num_tasks: u32,
    /// The nodes it ran on, in order (the batch step: the job's first node).
    pub nodes: Vec<String>,
    /// The CPUs it was given on those nodes together.
    pub cpus: u32,
    /// What it used, as the nodes' cgroups counted it; `None` until it ended on
    /// nodes that count (cgroups off: never).
    pub usage: Option<StepUsage>,
    /// Its own time limit in minutes (`srun -t` inside an allocation, `scontrol update
    /// StepId=`); `None`: only its job's limit bounds it. As in Slurm, it may be
    /// longer than the job's.
    pub time_limit_min: Option<u32>,
    /// It ran past its own limit and was killed for it: it ends TIMEOUT.
    pub timed_out: bool,
    /// What it asked of GPUs, as srun was given it.
    pub gpu_request: StepGpuRequest,
}

/// What a step asked of GPUs, as srun was given it: `scontrol show step`'s
/// `CpusPerTres`, `MemPerTres`, `TresBind`, `TresFreq`, `TresPerStep`, `TresPerNode`,
/// `TresPerSocket` and `TresPerTask`. Zero or empty: not asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct StepGpuRequest {
    pub gpu_type: String,
    /// `--gpus`, for the whole step.
    pub gpus: u32,
    pub gpus_per_node: u32,
    pub gpus_per_socket: u32,
    pub gpus_per_task: u32,
    pub cpus_per_gpu: u32,
    pub mem_per_gpu_mb: u64,
    pub gpu_bind: String,
    pub gpu_freq: String,
}

impl StepGpuRequest {
    /// The GPUs the step asked for over `nodes` nodes and `tasks` tasks: `--gpus`, else
    /// `--gpus-per-node` (`--gres=gpu:N`) on each node, else `--gpus-per-task` for each
    /// task; 0: it asked for none (it has its job's).
    pub fn gpus_asked(&self, nodes: u32, tasks: u32) -> u32 {
        if self.gpus > 0 {
            self.gpus
        } else if self.gpus_per_node > 0 {
            self.gpus_per_node * nodes
        } else {
            self.gpus_per_task * tasks
        }
    }
}

impl Step {
    /// Has this running step (not the batch step) run past its own time limit at
    /// `now`, not yet killed for it? A limit of 0 minutes is none, as Slurm reads it.
    ///
    /// ```
    /// # use model::{JobState, Step};
    /// let mut s = Step::started(Some(0), "sleep", 100);
    /// s.time_limit_min = Some(1);
    /// assert!(!s.time_limit_reached(159));
    /// assert!(s.time_limit_reached(160));
    /// s.timed_out = true;
    /// assert!(!s.time_limit_reached(200));
    /// ```
    pub fn time_limit_reached(&self, now: Time) -> bool {
        self.id.is_some()
            && self.state == JobState::Running
            && !self.timed_out
            && self
                .time_limit_min
                .is_some_and(|m| m > 0 && now >= self.start_time + i64::from(m) * 60)
    }

    /// A step that starts at `start_time`, running, with nothing else known yet.
    pub fn started(id: Option<u32>, name: &str, start_time: Time) -> Step {
        Step {
            id,
            name: name.to_string(),
            state: JobState::Running,
            start_time,
            end_time: 0,
            exit_code: 0,
            exit_signal: 0,
            num_tasks: 0,
            nodes: Vec::new(),
            cpus: 0,
            usage: None,
            time_limit_min: None,
            timed_out: false,
            gpu_request: StepGpuRequest::default(),
        }
    }
}

/// What a step used (sacct's MaxRSS, MaxRSSNode, TotalCPU, UserCPU, SystemCPU; sstat's
/// live figures): on each node the step's cgroup counts its tasks together, so the
/// high-water mark is that of the step's busiest node, and CPU time is summed. Where
/// each task has a cgroup of its own, `tasks` holds the figures task by task.
///
/// ```
/// # use model::StepUsage;
/// let a = StepUsage { max_rss_bytes: 4096, max_rss_node: "n1".into(), total_cpu_us: 10, user_cpu_us: 6, system_cpu_us: 4, tasks: None, gpu: None };
/// let b = StepUsage { max_rss_bytes: 8192, max_rss_node: "n2".into(), total_cpu_us: 5, user_cpu_us: 5, system_cpu_us: 0, tasks: None, gpu: None };
/// let both = a.combine(&b);
/// assert_eq!((both.max_rss_bytes, both.max_rss_node.as_str(), both.total_cpu_us), (8192, "n2", 15));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct StepUsage {
    /// The highest memory use of the step on one node, in bytes, and that node.
    pub max_rss_bytes: u64,
    pub max_rss_node: String,
    /// CPU time of all its processes, in microseconds: all, in user mode, in the kernel.
    pub total_cpu_us: u64,
    pub user_cpu_us: u64,
    pub system_cpu_us: u64,
    /// Task by task, from the tasks' own cgroups; `None` where they have none.
    #[serde(default)]
    pub tasks: Option<TaskUsage>,
    /// What its GPUs did, as NVML sampled them (the batch step: the job's GPUs on
    /// its batch node); `None` where nothing was sampled.
    #[serde(default)]
    pub gpu: Option<crate::gpu_use::GpuUse>,
}

/// What the tasks of a step used one by one (sacct's AveRSS, MaxRSSTask, MinCPU,
/// MinCPUNode, MinCPUTask): the highest memory use of one task, the sum of all of
/// theirs (AveRSS is that over `count`), and the least CPU time of one task.
///
/// Example: tasks 0 and 1 on n1 peak at 10 and 30 MB, task 2 on n2 at 20 MB; their CPU
/// times are 4, 6 and 2 s: max 30 MB (task 1 on n1), AveRSS 20 MB, MinCPU 2 s (task 2
/// on n2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TaskUsage {
    pub count: u32,
    pub max_rss_bytes: u64,
    pub max_rss_task: u32,
    pub max_rss_node: String,
    pub rss_sum_bytes: u64,
    pub min_cpu_us: u64,
    pub min_cpu_task: u32,
    pub min_cpu_node: String,
    /// What the tasks read and wrote (sacct's MaxDiskRead, AveDiskRead, ...); `None`
    /// where it was not counted.
    #[serde(default)]
    pub disk: Option<TaskDisk>,
}

/// What one task read and wrote, in bytes, as Slurm's jobacct_gather counts it: the
/// bytes its processes passed through read and write calls, from the page cache or
/// not (`rchar` and `wchar` of Linux's `/proc/PID/io`), those of the children it
/// reaped included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct DiskIo {
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// The bytes of two together.
impl std::ops::Add for DiskIo {
    type Output = DiskIo;

    fn add(self, other: DiskIo) -> DiskIo {
        DiskIo {
            read_bytes: self.read_bytes + other.read_bytes,
            write_bytes: self.write_bytes + other.write_bytes,
        }
    }
}

/// The tasks' reads and writes: for each, the most of one task (which task, on which
/// node) and the sum (AveDiskRead is that over the tasks' count).
///
/// Example: task 1 on n1 writes 10 MB, task 2 on n2 reads 10 MB, task 0 on n1 reads
/// 1 KB: MaxDiskWrite 10 MB (task 1, n1), MaxDiskRead 10 MB (task 2, n2), AveDiskRead
/// (10 MB + 1 KB) / 3.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TaskDisk {
    pub read: TaskPeak,
    pub write: TaskPeak,
}

/// One figure of a step's tasks: the highest of one task, that task and its node, and
/// the sum over the tasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TaskPeak {
    pub max_bytes: u64,
    pub max_task: u32,
    pub max_node: String,
    pub sum_bytes: u64,
}

impl TaskPeak {
    fn of_task(task: u32, node: &str, bytes: u64) -> TaskPeak {
        TaskPeak {
            max_bytes: bytes,
            max_task: task,
            max_node: node.to_string(),
            sum_bytes: bytes,
        }
    }

    /// The figure of the tasks of `self` and of `other` together (the first task of
    /// the highest, on a tie).
    fn combine(&self, other: &TaskPeak) -> TaskPeak {
        let max = if other.max_bytes > self.max_bytes {
            other
        } else {
            self
        };
        TaskPeak {
            sum_bytes: self.sum_bytes + other.sum_bytes,
            ..max.clone()
        }
    }
}

impl TaskDisk {
    /// One task's reads and writes.
    pub fn of_task(task: u32, node: &str, io: DiskIo) -> TaskDisk {
        TaskDisk {
            read: TaskPeak::of_task(task, node, io.read_bytes),
            write: TaskPeak::of_task(task, node, io.write_bytes),
        }
    }

    /// The reads and writes of the tasks of `self` and of `other` together.
    pub fn combine(&self, other: &TaskDisk) -> TaskDisk {
        TaskDisk {
            read: self.read.combine(&other.read),
            write: self.write.combine(&other.write),
        }
    }
}

impl TaskUsage {
    /// One task's figures.
    pub fn of_task(task: u32, node: &str, max_rss_bytes: u64, cpu_us: u64) -> TaskUsage {
        TaskUsage {
            count: 1,
            max_rss_bytes,
            max_rss_task: task,
            max_rss_node: node.to_string(),
            rss_sum_bytes: max_rss_bytes,
            min_cpu_us: cpu_us,
            min_cpu_task: task,
            min_cpu_node: node.to_string(),
            disk: None,
        }
    }

    /// These figures, with what the task read and wrote.
    pub fn with_disk(self, task: u32, node: &str, io: DiskIo) -> TaskUsage {
        TaskUsage {
            disk: Some(TaskDisk::of_task(task, node, io)),
            ..self
        }
    }

    /// The figures of the tasks of `self` and of `other` together.
    pub fn combine(&self, other: &TaskUsage) -> TaskUsage {
        let max = if other.max_rss_bytes > self.max_rss_bytes {
            other
        } else {
            self
        };
        let min = if other.min_cpu_us < self.min_cpu_us {
            other
        } else {
            self
        };
        TaskUsage {
            count: self.count + other.count,
            max_rss_bytes: max.max_rss_bytes,
            max_rss_task: max.max_rss_task,
            max_rss_node: max.max_rss_node.clone(),
            rss_sum_bytes: self.rss_sum_bytes + other.rss_sum_bytes,
            min_cpu_us: min.min_cpu_us,
            min_cpu_task: min.min_cpu_task,
            min_cpu_node: min.min_cpu_node.clone(),
            disk: match (&self.disk, &other.disk) {
                (Some(a), Some(b)) => Some(a.combine(b)),
                (a, b) => a.clone().or_else(|| b.clone()),
            },
        }
    }

    /// AveRSS: the tasks' highest memory uses, on average.
    pub fn ave_rss_bytes(&self) -> u64 {
        self.rss_sum_bytes / u64::from(self.count.max(1))
    }
}

impl StepUsage {
    /// The usage of a step that ran on the nodes of `self` and of `other`.
    pub fn combine(&self, other: &StepUsage) -> StepUsage {
        let (max_rss_bytes, max_rss_node) = if other.max_rss_bytes > self.max_rss_bytes {
            (other.max_rss_bytes, other.max_rss_node.clone())
        } else {
            (self.max_rss_bytes, self.max_rss_node.clone())
        };
        StepUsage {
            max_rss_bytes,
            max_rss_node,
            total_cpu_us: self.total_cpu_us + other.total_cpu_us,
            user_cpu_us: self.user_cpu_us + other.user_cpu_us,
            system_cpu_us: self.system_cpu_us + other.system_cpu_us,
            tasks: match (&self.tasks, &other.tasks) {
                (Some(a), Some(b)) => Some(a.combine(b)),
                (a, b) => a.clone().or_else(|| b.clone()),
            },
            gpu: match (self.gpu, other.gpu) {
                (Some(a), Some(b)) => Some(a.merge(&b)),
                (a, b) => a.or(b),
            },
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Job {
    pub id: JobId,
    /// The array's id (the first task's job id); 0 when not part of an array.
    pub array_job_id: JobId,
    /// Set once this record is a single task.
    pub array_task_id: Option<u32>,
    /// Tasks still pending in this record (the array's meta record only).
    pub pending_tasks: BTreeSet<u32>,
    pub spec: JobSpec,
    pub state: JobState,
    /// Slurm's reason code while pending, or why it ended.
    pub reason: Reason,
    pub submit_time: Time,
    pub start_time: Time,
    pub end_time: Time,
    pub suspend_time: Time,
    pub alloc: Option<Allocation>,
    pub exit_code: i32,
    pub exit_signal: i32,
    pub cancelled_by: Option<u32>,
    pub restart_count: u32,
    /// Held by user or admin (`--hold`, `scontrol hold`).
    pub held: bool,
    /// The time limit in force (the spec's or the partition default), minutes.
    pub time_limit_min: Option<u32>,
    pub steps: Vec<Step>,
    pub next_step_id: u32,
    /// Output paths resolved when the job started.
    pub stdout_path: String,
    pub stderr_path: String,
    pub planned_start: Time,
    /// The nodes of the planned start (hostlist; empty: none planned). Derived by the
    /// scheduler like the reason, so not persisted.
    pub planned_nodes: String,
    /// The time limit in force in seconds, when it is finer than whole minutes (the
    /// simulator replays traces whose estimates are in seconds). `None`: the limit is
    /// `time_limit_min`. Use [`Job::time_limit_secs`].
    pub time_limit_s: Option<u32>,
    /// Set while the job is being preempted (terminated, or suspended for another
    /// job); `None` otherwise.
    pub preemption: Option<Preemption>,
    /// Seconds spent suspended during this run (they do not count against the time
    /// limit); `suspend_time` is the last suspend or resume.
    pub suspended_secs: Time,
    /// Set while an acknowledged kill of this run waits for the node's report of its end.
    pub kill: Option<KillRequest>,
    /// The node confirmed it started this run. A run the controller cannot find on its
    /// node after a restart is launched again when this is false, and lost when true.
    pub launched: bool,
    /// When its QOS's GPU idle policy flagged it: every GPU of it had been idle for
    /// the QOS's `gpu_idle_limit` (`model::gpu_use`). Kept once set, for `sacct`.
    pub gpu_idle_flagged: Option<Time>,
    /// Set for a component of a heterogeneous job.
    pub het: Option<HetJob>,
    /// What `scontrol notify` sent it, for its srun or salloc (not stored).
    pub notices: Notices,
    /// Its DerivedExitCode as `sacctmgr modify job` set it: a wait status, as Slurm
    /// keeps it (22 reads `0:22`); `None`: derived from its steps.
    pub derived_exit_status: Option<i32>,
    /// When it first became eligible to run (no dependency, begin time or hold left):
    /// Slurm's `time_eligible`; 0: not yet.
    pub eligible_time: Time,
}

/// The messages `scontrol notify` sent a job, for the srun or salloc that holds its
/// allocation: the latest [`Notices::KEPT`], and how many were ever sent, so that a
/// client that polls prints each once. The controller keeps them while it runs; they
/// are not stored.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Notices {
    pub latest: Vec<String>,
    pub count: u32,
}

impl Notices {
    /// How many messages are kept.
    pub const KEPT: usize = 16;
    /// The longest message taken, in bytes.
    pub const MAX_LEN: usize = 4096;

    /// Adds `message`, forgetting the oldest beyond [`Notices::KEPT`].
    pub fn push(&mut self, message: &str) {
        if self.latest.len() == Self::KEPT {
            self.latest.remove(0);
        }
        self.latest.push(message.to_string());
        self.count += 1;
    }

    /// The messages after the first `seen` ever sent (those still kept).
    pub fn after(&self, seen: u32) -> &[String] {
        let first_kept = self.count - self.latest.len() as u32;
        let skip = seen.saturating_sub(first_kept) as usize;
        self.latest.get(skip..).unwrap_or_default()
    }
}

/// A component of a heterogeneous job (`sbatch` with `#SBATCH hetjob` lines): the jobs
/// `leader` to `leader + count - 1` of one submission start together, the leader
/// (offset 0) runs the batch script, and the others end with it.
///
/// Example: a script of three components submitted as job 7 gives jobs 7, 8 and 9,
/// which Slurm names `7+0`, `7+1` and `7+2`, each with HetJobIdSet `7-9`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HetJob {
    pub leader: JobId,
    pub offset: u32,
    pub count: u32,
}

impl HetJob {
    /// The ids of every component, the leader first.
    pub fn ids(&self) -> std::ops::Range<JobId> {
        self.leader..self.leader + self.count
    }

    /// Slurm's HetJobIdSet: the components' ids as a range (`7-9`).
    pub fn id_set(&self) -> String {
        let last = self.leader + self.count.max(1) - 1;
        if last == self.leader {
            self.leader.to_string()
        } else {
            format!("{}-{last}", self.leader)
        }
    }

    /// The component's name in Slurm's listings: `7+1`.
    pub fn name(&self) -> String {
        format!("{}+{}", self.leader, self.offset)
    }
}

impl Job {
    /// The job as if it asked for exactly `nodes` nodes (a count of its `-N min-max`),
    /// for what its limits say of that count.
    pub fn on_nodes(&self, nodes: u32) -> Job {
        let mut job = self.clone();
        job.spec.num_nodes = nodes;
        job.spec.max_nodes = 0;
        job
    }

    pub fn new(id: JobId, spec: JobSpec, submit_time: Time, time_limit_min: Option<u32>) -> Job {
        let (array_job_id, pending_tasks) = match &spec.array {
            Some(a) => (id, a.task_ids.iter().copied().collect()),
            None => (0, BTreeSet::new()),
        };
        let held = spec.hold;
        Job {
            id,
            array_job_id,
            array_task_id: None,
            pending_tasks,
            state: JobState::Pending,
            reason: if held {
                Reason::JobHeldUser
            } else {
                Reason::None
            },
            submit_time,
            start_time: 0,
            end_time: 0,
            suspend_time: 0,
            alloc: None,
            exit_code: 0,
            exit_signal: 0,
            cancelled_by: None,
            restart_count: 0,
            held,
            time_limit_min,
            steps: Vec::new(),
            next_step_id: 0,
            stdout_path: String::new(),
            stderr_path: String::new(),
            planned_start: 0,
            planned_nodes: String::new(),
            time_limit_s: None,
            preemption: None,
            suspended_secs: 0,
            kill: None,
            launched: false,
            gpu_idle_flagged: None,
            het: None,
            notices: Notices::default(),
            derived_exit_status: None,
            // Eligible at once unless it waits on a dependency, a begin time or a hold.
            eligible_time: if held || !spec.dependency.is_empty() || spec.begin_time > submit_time {
                0
            } else {
                submit_time
            },
            spec,
        }
    }

    /// The time limit in force in seconds; `None` is UNLIMITED.
    pub fn time_limit_secs(&self) -> Option<Time> {
        match self.time_limit_s {
            Some(s) => Some(Time::from(s)),
            None => self.time_limit_min.map(|m| Time::from(m) * 60),
        }
    }

    /// `--deadline`: whether the job, not started at `now`, can still run by then:
    /// its `--time-min` (else a minute) must fit before it. A job without one can.
    ///
    /// Example: deadline at 1000 and `--time-min=10` can run at 400, not at 401.
    pub fn could_finish_by_deadline(&self, now: Time) -> bool {
        let deadline = self.spec.details.deadline;
        deadline == 0 || deadline - now >= Time::from(self.spec.details.time_min.max(1)) * 60
    }

    /// At its start at `now`: the time limit cut to end by the `--deadline`, in whole
    /// minutes, as Slurm cuts it.
    pub fn cut_limit_to_deadline(&mut self, now: Time) {
        let deadline = self.spec.details.deadline;
        if deadline != 0 {
            self.cut_limit_to(deadline, now);
        }
    }

    /// At its start at `now`: the time limit cut to end by `end` (a minute at least).
    pub fn cut_limit_to(&mut self, end: Time, now: Time) {
        let left = u32::try_from(((end - now) / 60).max(1)).unwrap_or(u32::MAX);
        self.time_limit_min = Some(self.time_limit_min.map_or(left, |l| l.min(left)));
        if let Some(s) = self.time_limit_s {
            self.time_limit_s = Some(s.min(left.saturating_mul(60)));
        }
    }

    /// True for the record that still stands for several pending array tasks.
    pub fn is_array_meta(&self) -> bool {
        self.array_job_id != 0 && self.array_task_id.is_none()
    }

    /// `12`, `12_3`, or `12_[3-9%2]` for a pending array remainder.
    pub fn display_id(&self) -> String {
        let pending = if self.is_array_meta() {
            self.pending_tasks_str()
        } else {
            String::new()
        };
        crate::job_id::record_id(self.id, self.array_job_id, self.array_task_id, &pending)
    }

    /// The pending task ids as Slurm prints them: `3-9%2` or `1,4,7-8`.
    pub fn pending_tasks_str(&self) -> String {
        let ids: Vec<u32> = self.pending_tasks.iter().copied().collect();
        let mut out = format_ranges(&ids);
        if let Some(a) = &self.spec.array
            && a.max_running > 0
        {
            out.push_str(&format!("%{}", a.max_running));
        }
        out
    }

    pub fn is_pending(&self) -> bool {
        self.state == JobState::Pending
    }

    /// The partition listings show (Slurm's `Partition`): every partition a pending
    /// job may start in (`debug,gpu`), else the one it runs or ran in.
    pub fn partition_shown(&self) -> std::borrow::Cow<'_, str> {
        if self.is_pending() && !self.spec.more_partitions.is_empty() {
            self.spec.partition_list().into()
        } else {
            self.spec.partition.as_str().into()
        }
    }

    /// Is `name` one of the partitions the job is in: the one it runs in, or while it
    /// is pending, any it may start in (`squeue -p`, `scontrol show partition`'s
    /// counts)?
    pub fn in_partition(&self, name: &str) -> bool {
        if self.is_pending() {
            self.spec.partitions().any(|p| p == name)
        } else {
            self.spec.partition == name
        }
    }

    /// The state listings show: a running job whose requeue was acknowledged is
    /// COMPLETING until its node reports its end (Slurm's PENDING|COMPLETING), never
    /// RUNNING again before it is requeued.
    pub fn shown_state(&self) -> JobState {
        match self.kill.map(|k| k.cause) {
            Some(KillCause::Requeue { .. } | KillCause::RequeueSpecialExit)
                if !self.state.is_final() =>
            {
                JobState::Completing
            }
            _ => self.state,
        }
    }

    /// The `JobState` text as sacct prints it: `CANCELLED by 0`.
    pub fn sacct_state(&self) -> String {
        match (self.state, self.cancelled_by) {
            (JobState::Cancelled, Some(uid)) => format!("CANCELLED by {uid}"),
            (s, _) => s.name().to_string(),
        }
    }
}

/// `1,2,3,5` → `1-3,5`.
pub fn format_ranges(ids: &[u32]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        if i == j {
            parts.push(ids[i].to_string());
        } else {
            parts.push(format!("{}-{}", ids[i], ids[j]));
        }
        i = j + 1;
    }
    parts.join(",")
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArrayError {
    #[error("invalid job array specification `{0}`")]
    Invalid(String),
    #[error("job array index {index} exceeds the maximum ({max})")]
    TooLarge { index: u64, max: u32 },
}

/// Slurm's largest `MaxArraySize`: every task id is below it.
pub const MAX_ARRAY_SIZE: u32 = 4_000_001;

/// Parses `--array`: `0-99`, `1,3,5-7`, `0-15:4` (step), with an optional `%N`.
/// Indexes must be below `max_array_size`; every number is digits alone (no sign).
pub fn parse_array(text: &str, max_array_size: u32) -> Result<ArraySpec, ArrayError> {
    let invalid = || ArrayError::Invalid(text.to_string());
    let number = |t: &str| -> Result<u64, ArrayError> {
        let t = t.trim();
        if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
        t.parse().map_err(|_| invalid())
    };
    let (list, throttle) = match text.split_once('%') {
        Some((l, t)) => (l, u32::try_from(number(t)?).map_err(|_| invalid())?),
        None => (text, 0),
    };
    let mut ids = BTreeSet::new();
    for part in list.split(',') {
        let (range, step) = match part.split_once(':') {
            Some((r, s)) => (r, number(s)?),
            None => (part, 1),
        };
        if step == 0 {
            return Err(invalid());
        }
        let (lo, hi) = range.split_once('-').unwrap_or((range, range));
        let lo = number(lo)?;
        let hi = number(hi)?;
        if hi < lo {
            return Err(invalid());
        }
        if hi >= u64::from(max_array_size) {
            return Err(ArrayError::TooLarge {
                index: hi,
                max: max_array_size,
            });
        }
        let mut n = lo;
        while n <= hi {
            ids.insert(n as u32);
            n += step;
        }
    }
    if ids.is_empty() {
        return Err(invalid());
    }
    Ok(ArraySpec {
        task_ids: ids.into_iter().collect(),
        max_running: throttle,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_component_sees_its_own_variables_under_the_plain_names() {
        let kv = |k: &str, v: &str| (k.to_string(), v.to_string());
        let env = [
            kv("SLURM_JOB_ID", "7"),
            kv("SLURM_JOB_ID_HET_GROUP_0", "7"),
            kv("SLURM_JOB_ID_HET_GROUP_1", "8"),
            kv("SLURM_JOB_NODELIST_HET_GROUP_1", "n2"),
        ];
        let one = het_component_env(&env, 1);
        let get = |k: &str| one.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("SLURM_JOB_ID"), Some("8"));
        assert_eq!(get("SLURM_JOB_NODELIST"), Some("n2"));
        assert_eq!(get("SLURM_JOB_ID_HET_GROUP_0"), Some("7"));
        let vars: Vec<_> =
            het_group_vars(vec![kv("SLURM_JOB_ID", "8"), kv("HOME", "/")], 1).collect();
        assert_eq!(vars, [kv("SLURM_JOB_ID_HET_GROUP_1", "8")]);
    }

    #[test]
    fn cancelled_lines_are_slurms() {
        assert_eq!(
            cancelled_line("STEP 5.1", "n1", "2024-05-01T12:00:00", true),
            "error: *** STEP 5.1 ON n1 CANCELLED AT 2024-05-01T12:00:00 DUE TO TIME LIMIT ***"
        );
        assert_eq!(
            cancelled_line("JOB 5", "n1", "2024-05-01T12:00:00", false),
            "error: *** JOB 5 ON n1 CANCELLED AT 2024-05-01T12:00:00 ***"
        );
    }

    #[test]
    fn notices_keep_the_latest_and_say_what_came_after_a_count() {
        let mut n = Notices::default();
        for i in 0..20 {
            n.push(&format!("m{i}"));
        }
        assert_eq!((n.latest.len(), n.count), (Notices::KEPT, 20));
        assert_eq!(n.after(18), ["m18", "m19"]);
        assert_eq!(n.after(20), [] as [String; 0]);
        // Older than the kept ones: what is kept.
        assert_eq!(n.after(0).first().map(String::as_str), Some("m4"));
    }

    use super::*;

    #[test]
    fn a_step_asks_for_gpus_by_step_node_or_task() {
        let asked = |gpus, per_node, per_task| StepGpuRequest {
            gpus,
            gpus_per_node: per_node,
            gpus_per_task: per_task,
            ..Default::default()
        };
        assert_eq!(asked(3, 2, 1).gpus_asked(2, 4), 3);
        assert_eq!(asked(0, 2, 1).gpus_asked(2, 4), 4);
        assert_eq!(asked(0, 0, 1).gpus_asked(2, 4), 4);
        assert_eq!(asked(0, 0, 0).gpus_asked(2, 4), 0);
        assert_eq!((spread_share(3, 0, 2), spread_share(3, 1, 2)), (2, 1));
    }

    #[test]
    fn gpus_spread_over_nodes_with_the_larger_shares_first() {
        let spec = |gpus, gpus_per_node| JobSpec {
            gpus,
            gpus_per_node,
            ..JobSpec::default()
        };
        let shares = |s: &JobSpec, nodes| {
            (0..nodes)
                .map(|i| s.gpus_on_node(i, nodes))
                .collect::<Vec<_>>()
        };
        assert_eq!(shares(&spec(7, 0), 2), [4, 3]);
        assert_eq!(shares(&spec(5, 0), 4), [2, 1, 1, 1]);
        assert_eq!(shares(&spec(8, 0), 2), [4, 4]);
        assert_eq!(shares(&spec(0, 3), 2), [3, 3]);
        assert_eq!(spec(7, 0).gpus_on_each_of(2), 4);
        for (s, nodes) in [(spec(7, 0), 2), (spec(5, 0), 4), (spec(0, 3), 2)] {
            assert_eq!(s.gpus_over(nodes), shares(&s, nodes).iter().sum::<u32>());
        }
    }

    #[test]
    fn partition_lists_as_slurm_writes_them() {
        let mut spec = JobSpec::default();
        spec.set_partition_list("gpu,,debug,gpu");
        assert_eq!(spec.partition, "gpu");
        assert_eq!(spec.more_partitions, ["debug"]);
        assert_eq!(spec.partition_list(), "gpu,debug");
        assert_eq!(spec.partitions().collect::<Vec<_>>(), ["gpu", "debug"]);
        spec.set_partition_list("debug");
        assert_eq!(
            (spec.partition.as_str(), spec.more_partitions.len()),
            ("debug", 0)
        );
        spec.set_partition_list("");
        assert_eq!(spec.partition_list(), "");
    }

    #[test]
    fn overcommit_asks_cpus_per_task_on_each_node() {
        let mut spec = JobSpec {
            num_tasks: 10,
            num_nodes: 2,
            cpus_per_task: 2,
            ..JobSpec::default()
        };
        assert_eq!((spec.total_cpus(), spec.per_node_cpus_mem().0), (20, 10));
        spec.details.overcommit = true;
        assert_eq!((spec.total_cpus(), spec.per_node_cpus_mem().0), (4, 2));
    }

    #[test]
    fn a_deadline_ends_pending_jobs_and_cuts_limits() {
        let mut spec = JobSpec::default();
        spec.details.deadline = 1000;
        spec.details.time_min = 10;
        let job = Job::new(1, spec.clone(), 0, Some(30));
        assert!(job.could_finish_by_deadline(400));
        assert!(!job.could_finish_by_deadline(401));
        let mut started = job.clone();
        started.cut_limit_to_deadline(400);
        assert_eq!(started.time_limit_min, Some(10));
        let mut unlimited = Job::new(2, spec, 0, None);
        unlimited.cut_limit_to_deadline(0);
        assert_eq!(unlimited.time_limit_min, Some(16));
        let mut free = Job::new(3, JobSpec::default(), 0, Some(5));
        assert!(free.could_finish_by_deadline(i64::MAX / 2));
        free.cut_limit_to_deadline(100);
        assert_eq!(free.time_limit_min, Some(5));
    }

    #[test]
    fn a_running_job_being_requeued_shows_completing() {
        let mut job = Job::new(1, JobSpec::default(), 0, None);
        job.state = JobState::Running;
        assert_eq!(job.shown_state(), JobState::Running);
        for cause in [
            KillCause::Requeue { hold: false },
            KillCause::RequeueSpecialExit,
        ] {
            job.kill = Some(KillRequest { cause, time: 5 });
            assert_eq!(job.shown_state(), JobState::Completing);
        }
        job.kill = Some(KillRequest {
            cause: KillCause::Cancel { by: 0 },
            time: 5,
        });
        assert_eq!(job.shown_state(), JobState::Running);
    }

    #[test]
    fn fields_over_slurms_sizes_are_named() {
        type Set = fn(&mut JobSpec, String);
        let cases: [(Set, usize, Option<&str>); 7] = [
            (|s, v| s.name = v, MAX_WORD_CHARS, None),
            (|s, v| s.name = v, MAX_WORD_CHARS + 1, Some("JobName")),
            (|s, v| s.comment = v, MAX_WORD_CHARS + 1, Some("Comment")),
            (|s, v| s.work_dir = v, MAX_PATH_CHARS, None),
            (
                |s, v| s.stdout_pattern = v,
                MAX_PATH_CHARS + 1,
                Some("StdOut"),
            ),
            (
                |s, v| s.dependency = v,
                MAX_LIST_CHARS + 1,
                Some("Dependency"),
            ),
            (
                |s, v| s.script_args = vec![v],
                MAX_LIST_CHARS,
                Some("Arguments"),
            ),
        ];
        for (set, len, want) in cases {
            let mut spec = JobSpec::default();
            // Characters, not bytes: a name of 1024 'é' fits.
            set(&mut spec, "é".repeat(len));
            assert_eq!(spec.oversized(), want, "{len}");
        }
    }

    #[test]
    fn an_environment_the_kernel_would_not_take_is_oversized() {
        let env = |vars: Vec<(String, String)>| JobPayload {
            script: String::new(),
            env: vars,
        };
        let var = |n: usize, len: usize| (format!("V{n}"), "x".repeat(len));
        assert!(!env(vec![var(0, 1000)]).env_oversized());
        assert!(env(vec![var(0, MAX_ENV_VAR_BYTES)]).env_oversized());
        let many: Vec<_> = (0..40).map(|n| var(n, 60 << 10)).collect();
        assert!(env(many).env_oversized());
    }

    #[test]
    fn task_usage_combines_as_its_example_says() {
        let mb = |n: u64| n << 20;
        let t0 = TaskUsage::of_task(0, "n1", mb(10), 4_000_000);
        let t1 = TaskUsage::of_task(1, "n1", mb(30), 6_000_000);
        let t2 = TaskUsage::of_task(2, "n2", mb(20), 2_000_000);
        let all = t0.combine(&t1).combine(&t2);
        assert_eq!(all.count, 3);
        assert_eq!(
            (
                all.max_rss_bytes,
                all.max_rss_task,
                all.max_rss_node.as_str()
            ),
            (mb(30), 1, "n1")
        );
        assert_eq!(all.ave_rss_bytes(), mb(20));
        assert_eq!(
            (all.min_cpu_us, all.min_cpu_task, all.min_cpu_node.as_str()),
            (2_000_000, 2, "n2")
        );
        // A step's usage keeps the task figures of whichever side has them.
        let step = |tasks| StepUsage {
            tasks,
            ..StepUsage::default()
        };
        assert_eq!(step(Some(t0.clone())).combine(&step(None)).tasks, Some(t0));
    }

    #[test]
    fn task_disk_figures_combine_as_their_example_says() {
        let mb = |n: u64| n << 20;
        let io = |read_bytes, write_bytes| DiskIo {
            read_bytes,
            write_bytes,
        };
        let task = |id, node, io| TaskUsage::of_task(id, node, 0, 0).with_disk(id, node, io);
        let all = task(0, "n1", io(1024, 0))
            .combine(&task(1, "n1", io(0, mb(10))))
            .combine(&task(2, "n2", io(mb(10), 0)));
        let disk = all.disk.unwrap();
        let peak = |p: &TaskPeak| (p.max_bytes, p.max_task, p.max_node.clone(), p.sum_bytes);
        assert_eq!(peak(&disk.write), (mb(10), 1, "n1".into(), mb(10)));
        assert_eq!(peak(&disk.read), (mb(10), 2, "n2".into(), mb(10) + 1024));
        // A tie keeps the first task; tasks counted without figures add none.
        let tie = task(0, "n1", io(5, 5)).combine(&task(1, "n2", io(5, 5)));
        assert_eq!(tie.disk.as_ref().unwrap().read.max_task, 0);
        let without = TaskUsage::of_task(3, "n3", 0, 0);
        assert_eq!(tie.combine(&without).disk, tie.disk);
        assert_eq!(io(1, 2) + io(3, 4), io(4, 6));
    }

    #[test]
    fn array_specs() {
        let a = parse_array("0-4%2", 1001).unwrap();
        assert_eq!(a.task_ids, vec![0, 1, 2, 3, 4]);
        assert_eq!(a.max_running, 2);
        assert_eq!(
            parse_array("1,3,5-7", 1001).unwrap().task_ids,
            vec![1, 3, 5, 6, 7]
        );
        assert_eq!(
            parse_array("0-15:4", 1001).unwrap().task_ids,
            vec![0, 4, 8, 12]
        );
        assert!(parse_array("5-1", 1001).is_err());
        assert!(parse_array("x", 1001).is_err());
        for signed in ["+3", "1-+3", "0-8:+2", "0-4%+2", "-3", " +3"] {
            assert!(parse_array(signed, 1001).is_err(), "{signed}");
        }
        assert!(matches!(
            parse_array("0-1001", 1001),
            Err(ArrayError::TooLarge { .. })
        ));
    }

    #[test]
    fn display_ids() {
        let spec = JobSpec {
            array: Some(parse_array("0-4%2", 1001).unwrap()),
            ..JobSpec::default()
        };
        let job = Job::new(7, spec, 0, None);
        assert_eq!(job.display_id(), "7_[0-4%2]");
        let plain = Job::new(8, JobSpec::default(), 0, None);
        assert_eq!(plain.display_id(), "8");
    }

    #[test]
    fn state_names_round_trip() {
        for s in JobState::ALL {
            assert_eq!(JobState::parse(s.name()), Some(s));
            assert_eq!(JobState::parse(&s.short_name().to_lowercase()), Some(s));
        }
        assert_eq!(JobState::parse("bogus"), None);
    }
}
