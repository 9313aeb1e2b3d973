//! The cluster configuration: one TOML file, parsed here from text (the caller reads
//! the file). Errors name the file, the line and the key, on one line:
//! `drover.toml:12: node_timeout_s: must be from 1 to 65533 seconds, not 0`. The rules
//! are in `check`; `locate` finds a key's line from the toml crate's spans.
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

mod check;
pub use check::is_name;
mod locate;
#[cfg(test)]
mod refused;

use crate::hostlist;
use crate::node::{self, GpuDevice, Node};
use crate::units;
use locate::Located;
use serde::{Deserialize, Serialize};

/// The Slurm release whose commands, formats and settings Drover follows (what
/// `scontrol show config` calls SLURM_VERSION).
pub const SLURM_VERSION: &str = "22.05.8";

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
    #[serde(default)]
    pub scheduler: SchedulerConfig,
    /// `[priority]`: multifactor weights, fair share and usage decay.
    #[serde(default)]
    pub priority: PriorityConfig,
    /// `[[accounts]]`: the account tree with shares, users and limits.
    #[serde(default)]
    pub accounts: Vec<AccountConfig>,
    /// `[[qos]]`: qualities of service with priorities and limits.
    #[serde(default)]
    pub qos: Vec<QosConfig>,
    /// `[cgroup]`: how node daemons confine jobs.
    #[serde(default)]
    pub cgroup: CgroupConfig,
    /// `[node_daemon]`: the site's scripts node daemons run.
    #[serde(default)]
    pub node_daemon: NodeDaemonConfig,
    /// `[auth]`: the cluster key and the credential agent's socket.
    #[serde(default)]
    pub auth: AuthConfig,
    /// `[tls]`: TLS on every connection to the controller and the node daemons.
    #[serde(default)]
    pub tls: TlsConfig,
}

/// `[tls]`: TLS (rustls) on every connection to the controller and the node daemons,
/// for networks the cluster does not trust; off by default, as the cluster key already
/// authenticates every request. The daemons serve `cert_file` and `key_file`; every
/// client (daemons, commands) checks the server's certificate against `ca_file` and the
/// host name or address it dials. `drover keygen --tls DIR --hosts LIST` makes them.
///
/// ```toml
/// [tls]
/// enabled = true
/// ca_file = "/etc/drover/tls/ca.pem"      # readable by everyone: commands check with it
/// cert_file = "/etc/drover/tls/cert.pem"  # the daemons' certificate, for every host
/// key_file = "/etc/drover/tls/key.pem"    # its private key: root only
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlsConfig {
    pub enabled: bool,
    pub ca_file: String,
    pub cert_file: String,
    pub key_file: String,
}

/// `[auth]`: how requests prove who sends them (Slurm's AuthType=auth/munge, with the
/// key munge keeps in /etc/munge/munge.key).
///
/// ```toml
/// [auth]
/// key_file = "/etc/drover/cluster.key"  # only root reads it: `drover keygen` makes one
/// socket = "/run/drover/auth.sock"      # the host's credential agent, for commands
/// credential_ttl_s = 60                 # how long a credential is valid
/// operators = ["ops1"]                  # AdminLevel=Operator: every job, node, reservation
/// administrators = ["hpcadmin"]         # AdminLevel=Administrator
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    pub key_file: String,
    pub socket: String,
    pub credential_ttl_s: u32,
    /// Users of Slurm's AdminLevel=Operator: they act on every job and node and on
    /// reservations. Root always may.
    pub operators: Vec<String>,
    /// AdminLevel=Administrator: an operator, and more as the admin commands come.
    pub administrators: Vec<String>,
}

impl AuthConfig {
    /// A user's AdminLevel.
    pub fn admin_level(&self, user: &str) -> crate::assoc::AdminLevel {
        use crate::assoc::AdminLevel;
        let listed = |names: &[String]| names.iter().any(|n| n == user);
        if user == "root" || listed(&self.administrators) {
            AdminLevel::Administrator
        } else if listed(&self.operators) {
            AdminLevel::Operator
        } else {
            AdminLevel::None
        }
    }
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            key_file: "/etc/drover/cluster.key".into(),
            socket: "/run/drover/auth.sock".into(),
            credential_ttl_s: 60,
            operators: Vec::new(),
            administrators: Vec::new(),
        }
    }
}

/// `[node_daemon]`: the site's scripts, run as root by every node daemon (Slurm's
/// Prolog, Epilog, HealthCheckProgram and HealthCheckInterval).
///
/// ```toml
/// [node_daemon]
/// prolog = "/etc/drover/prolog"    # before each job on its node; failing: requeue, drain
/// epilog = "/etc/drover/epilog"    # after each job; failing: drain
/// health_check_program = "/usr/sbin/nhc"
/// health_check_interval_s = 300    # 0: never
/// mail_prog = "/usr/bin/mail"      # run as `mail_prog -s SUBJECT USER` (--mail-type)
/// gpu_sample_interval_s = 30       # how often NVML samples jobs' GPUs; 0: never
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NodeDaemonConfig {
    pub prolog: String,
    pub epilog: String,
    pub health_check_program: String,
    pub health_check_interval_s: u32,
    /// Slurm's MailProg; empty: `/bin/mail`, Slurm's default.
    pub mail_prog: String,
    /// How often the node daemon samples its jobs' GPUs through NVML (utilization and
    /// memory, `model::gpu_use`), seconds; 0: never (Slurm's JobAcctGatherFrequency).
    pub gpu_sample_interval_s: u32,
}

impl Default for NodeDaemonConfig {
    fn default() -> Self {
        NodeDaemonConfig {
            prolog: String::new(),
            epilog: String::new(),
            health_check_program: String::new(),
            health_check_interval_s: 0,
            mail_prog: String::new(),
            gpu_sample_interval_s: 30,
        }
    }
}

impl NodeDaemonConfig {
    /// The program that mails users about their jobs.
    pub fn mail_program(&self) -> &str {
        if self.mail_prog.is_empty() {
            "/bin/mail"
        } else {
            &self.mail_prog
        }
    }
}

/// `[cgroup]`: how node daemons confine jobs (Slurm's cgroup.conf).
///
/// ```toml
/// [cgroup]
/// mode = "auto"      # "auto" (default): v2 where its controllers are, else v1; "off"
/// prefix = "drover"  # jobs go in <prefix>/<node>/job_<id> of each hierarchy
/// max_tasks_per_job = 0  # pids.max of a job's cgroup; 0: no limit
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CgroupConfig {
    pub mode: CgroupMode,
    /// The cgroup, relative to each hierarchy's root, that holds the nodes' jobs.
    pub prefix: String,
    /// The most processes and threads one job may have on a node at once (the pids
    /// controller's `pids.max`); 0: no limit. A fork beyond fails with EAGAIN.
    pub max_tasks_per_job: u32,
}

impl Default for CgroupConfig {
    fn default() -> Self {
        CgroupConfig {
            mode: CgroupMode::Auto,
            prefix: "drover".into(),
            max_tasks_per_job: 0,
        }
    }
}

/// Whether node daemons confine jobs in cgroups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupMode {
    /// Confine when the daemon runs as root and cgroups are mounted; say so otherwise.
    Auto,
    /// Never confine (another tool does it, or a test wants plain processes).
    Off,
}

/// `[scheduler]`: how pending jobs are placed.
///
/// ```toml
/// [scheduler]
/// policy = "easy"            # "easy" (default), "conservative" or "fcfs"
/// bf_max_reservations = 500  # conservative: reserve for at most this many jobs (0: all)
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerConfig {
    /// `easy`: backfill behind one reservation per partition (Slurm's default
    /// sched/backfill behaves so for the top job); `conservative`: every pending job (or
    /// the first `bf_max_reservations`) gets a reservation no later job may delay;
    /// `fcfs`: no backfill, the first job that does not fit blocks its partition.
    pub policy: String,
    /// Under `conservative`, how many pending jobs get a reservation each pass; 0 is
    /// all of them. Later jobs still start when they delay none of the reservations.
    pub bf_max_reservations: u32,
    /// Slurm's PreemptType: `none` (default), `qos` (a QOS preempts the QOS in its
    /// `preempt` list) or `partition_prio` (a job of a higher PriorityTier partition
    /// preempts jobs of lower-tier partitions on the nodes they share).
    pub preempt_type: String,
    /// Slurm's PreemptMode, the cluster default: `cancel` (default), `requeue`,
    /// `suspend` or `off`. A QOS's `preempt_mode` overrides it for its jobs.
    pub preempt_mode: String,
    /// Slurm's PreemptExemptTime: a job that has run less than this (Slurm time
    /// syntax; "0" or "-1": no minimum) is not preempted.
    pub preempt_exempt_time: String,
    /// How a job running on another account's idle guaranteed TRES (`[[accounts]]
    /// guaranteed_tres`) is stopped when that account's jobs take it back: `requeue`
    /// (default), `suspend` or `cancel`, after its QOS's GraceTime.
    pub reclaim_mode: String,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            policy: "easy".into(),
            bf_max_reservations: 500,
            preempt_type: "none".into(),
            preempt_mode: "cancel".into(),
            preempt_exempt_time: "0".into(),
            reclaim_mode: "requeue".into(),
        }
    }
}

/// `[scheduler] preempt_type` values.
pub const PREEMPT_TYPES: [&str; 3] = ["none", "qos", "partition_prio"];

/// The scheduling policies `[scheduler] policy` accepts.
pub const SCHEDULER_POLICIES: [&str; 3] = ["easy", "conservative", "fcfs"];

/// `[controller]`: where the controller listens, how it watches nodes, and how it
/// bounds its clients.
///
/// ```toml
/// [controller]
/// addr = "10.0.0.1:6917"
/// heartbeat_interval_ms = 2000   # at least twice per node_timeout_s
/// node_timeout_s = 30
/// max_connections = 1024         # more than the nodes, whose daemons hold one each
/// idle_timeout_s = 300
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ControllerConfig {
    /// host:port the controller listens on and everyone dials.
    pub addr: String,
    /// How often node daemons heartbeat; at least twice within `node_timeout_s`.
    pub heartbeat_interval_ms: u32,
    /// A node that has not been heard from for this long goes DOWN (SlurmdTimeout).
    pub node_timeout_s: u32,
    /// Between SIGTERM and SIGKILL when a job is cancelled or times out.
    pub kill_wait_s: u32,
    /// Finished jobs stay visible in `squeue -t all` this long.
    pub min_job_age_s: u32,
    /// Slurm's PurgeJobAfter (of slurmdbd.conf): finished jobs are dropped from the
    /// controller and its store this long after they ended: months (`12`), or `hours`,
    /// `days`, `months` (`30days`). Empty (the default): kept for ever.
    pub purge_job_after: String,
    /// Slurm's PurgeStepAfter: the steps of finished jobs (`N.batch`, `N.0`, ...) are
    /// dropped this long after their job ended, the job's own record kept (same
    /// syntax as `purge_job_after`). Empty (the default): kept as long as the job.
    pub purge_step_after: String,
    /// Slurm's ArchiveJobs (and ArchiveSteps): records a purge drops are first written
    /// whole, steps included, to a file in `archive_dir` (`drover export --archive`
    /// reads it); a purge whose archive cannot be written waits.
    pub archive_jobs: bool,
    /// Slurm's ArchiveDir; empty: `<state_dir>/archive`.
    pub archive_dir: String,
    pub max_array_size: u32,
    pub max_job_count: u32,
    /// Debounce of scheduling passes after an event.
    pub sched_delay_ms: u32,
    /// A full scheduling pass at least this often.
    pub sched_interval_ms: u32,
    /// Client connections held at once (node daemons hold one each). At the limit, a
    /// new connection closes the one idle longest, or is refused when none is idle.
    pub max_connections: u32,
    /// Requests in flight on one connection (HTTP/2 concurrent streams).
    pub max_streams_per_connection: u32,
    /// A connection with no request in flight for this long is closed.
    pub idle_timeout_s: u32,
    /// A request whose body has not arrived, or whose answer is not ready, after this
    /// long fails (CANCELLED, "Timeout expired").
    pub request_timeout_s: u32,
    /// A reply or listing its client does not read for this long is dropped, and the
    /// client's connection closed.
    pub client_read_timeout_s: u32,
    /// Connections quiet for this long are pinged (HTTP/2 PING); one that does not
    /// answer within as long again is closed.
    pub keepalive_s: u32,
    /// With less free space than this on the state disk (MB), the controller refuses
    /// writes ("state store full") and keeps serving reads until space is freed.
    pub state_min_free_mb: u32,
    /// Slurm's ReturnToService: whether a DOWN node is back in service when its daemon
    /// registers again. 0 (the default, as Slurm's): only when an admin resumes it; 1:
    /// when it was DOWN for not responding; 2: whatever made it DOWN.
    pub return_to_service: u8,
    /// Slurm's JobRequeue: whether a batch job that says neither `--requeue` nor
    /// `--no-requeue` is requeued when its node fails. True by default, as Slurm's
    /// (JobRequeue=1).
    pub job_requeue: bool,
    /// A job requeued by `scontrol requeue` (`requeuehold`, or for holding idle GPUs)
    /// may start again only this long after its requeue finished: its begin time moves
    /// there (Slurm's batch requeue delay, 121 s). Requeues by preemption or node
    /// failure start at once.
    pub requeue_delay_s: u32,
    /// Slurm's PrivateData: what users see only of their own (and, as coordinators,
    /// their accounts'; operators see all): `jobs` (squeue, sacct, scontrol show job),
    /// `usage` (sshare's other users' rows).
    pub private_data: Vec<PrivateData>,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            addr: "127.0.0.1:6917".into(),
            heartbeat_interval_ms: 2000,
            node_timeout_s: 30,
            kill_wait_s: 30,
            min_job_age_s: 300,
            purge_job_after: String::new(),
            purge_step_after: String::new(),
            archive_jobs: false,
            archive_dir: String::new(),
            max_array_size: 1001,
            max_job_count: 1_000_000,
            sched_delay_ms: 2,
            sched_interval_ms: 1000,
            max_connections: 1024,
            max_streams_per_connection: 32,
            idle_timeout_s: 300,
            request_timeout_s: 60,
            client_read_timeout_s: 30,
            keepalive_s: 30,
            state_min_free_mb: 64,
            return_to_service: 0,
            job_requeue: true,
            requeue_delay_s: 121,
            private_data: Vec::new(),
        }
    }
}

/// One word of `private_data` (Slurm's PrivateData); other words are refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PrivateData {
    Jobs,
    Usage,
    /// `sacctmgr show`: only the accounts a user belongs to or coordinates.
    Accounts,
    /// `sacctmgr show`: only the user themselves (and their accounts' users, for a
    /// coordinator).
    Users,
}

impl PrivateData {
    /// Slurm's word, as the config writes it and `scontrol show config` prints it.
    pub fn name(self) -> &'static str {
        match self {
            PrivateData::Jobs => "jobs",
            PrivateData::Usage => "usage",
            PrivateData::Accounts => "accounts",
            PrivateData::Users => "users",
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
    /// The NUMA node of each GPU in index order, one entry per GPU:
    /// `[0, 0, 0, 0, 1, 1, 1, 1]`. Default: the first half of the GPUs on NUMA 0, the
    /// rest on NUMA 1.
    #[serde(default)]
    pub gpu_numa: Vec<u32>,
    /// The CPU ids of each NUMA node, by NUMA node id, every CPU in exactly one:
    /// `["0-7,16-23", "8-15,24-31"]`. Jobs get CPUs on the NUMA nodes of their GPUs by
    /// these until the node daemon reports what it found (hwloc), and always on nodes
    /// whose entry says `config_overrides`. Default: the CPUs split evenly over the
    /// NUMA nodes of the GPUs.
    #[serde(default)]
    pub numa_cpus: Vec<String>,
    /// The NVLink domains, each a list of GPU indices (`"0-3"`, `"0,2,4-5"`), every
    /// GPU in exactly one; a GPU without NVLink is a domain of its own. Default: one
    /// domain per NUMA node.
    #[serde(default)]
    pub nvlink_domains: Vec<String>,
    /// The device file of each GPU, in index order, as a hostlist-style expression
    /// (Slurm's gres.conf `File=`): `/dev/nvidia[0-7]`, the default. Jobs cannot open
    /// the files of GPUs they were not given.
    #[serde(default)]
    pub gpu_files: String,
    /// The memory of each GPU (`80G`), for nodes whose entry says `config_overrides`
    /// (NVML tells it otherwise): an MPS job's share of it is its pinned device memory
    /// limit (`CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`). Default: not known, no limit.
    #[serde(default)]
    pub gpu_memory: String,
    /// Slurm's `TmpDisk`: the temporary disk space of each node of the entry (`100G`,
    /// MB without a unit); jobs that ask `--tmp` for more than any node of their
    /// partition has are refused. Default: not declared, shown as 0, and `--tmp` is
    /// not checked against it.
    #[serde(default)]
    pub tmp_disk: String,
    /// Slurm's `Sockets`: the processor sockets of each node. Default: the CPUs over
    /// `cores_per_socket` × `threads_per_core`, as Slurm infers it (a node of CPUs
    /// alone is that many one-core sockets). Sockets × cores × threads must be `cpus`.
    #[serde(default)]
    pub sockets: Option<u32>,
    /// Slurm's `CoresPerSocket`. Default: 1.
    #[serde(default)]
    pub cores_per_socket: Option<u32>,
    /// Slurm's `ThreadsPerCore`. Default: 1.
    #[serde(default)]
    pub threads_per_core: Option<u32>,
    /// The node daemons of this entry report what it declares instead of what they
    /// find on their host (Slurm's `SlurmdParameters=config_overrides`): for emulated
    /// and test clusters, whose nodes are more than their host. Their GPUs are then the
    /// declared ones, not probed. Otherwise a node that finds less than declared is
    /// drained, with what it lacks as the reason.
    #[serde(default)]
    pub config_overrides: bool,
    /// The MIG instances each of this entry's GPUs in MIG mode is split into, as the
    /// admin created them (`nvidia-smi mig`): `7x1g.10gb`, `1x3g.40gb,2x2g.20gb`. Each
    /// instance is a GPU of its own to the scheduler, typed by its profile
    /// (`--gpus=1g.10gb:1`); discovery checks the node has them.
    #[serde(default)]
    pub mig_layout: String,
    /// How many of the `gpus` are in MIG mode, the last ones by index: 1 by default
    /// with a `mig_layout`.
    #[serde(default)]
    pub mig_gpus: Option<u32>,
    /// `gres/shard`: each of the entry's GPUs in shared use is `shards_per_gpu` shards
    /// (`--gres=shard:N`), which jobs share; such a GPU is given whole too while none
    /// of its shards is taken, unless `whole_shared_gpus = false`.
    #[serde(default)]
    pub shards_per_gpu: u32,
    /// How many of the `gpus` are in shared use, the last ones by index (after those in
    /// MIG mode): 1 by default with `shards_per_gpu`.
    #[serde(default)]
    pub shard_gpus: Option<u32>,
    /// `gres/mps`: each of the entry's GPUs shared through MPS is `mps_per_gpu` shares
    /// (`--gres=mps:N` gets N of them: `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE` is N out of
    /// `mps_per_gpu`); such a GPU is given whole too while none of its shares is taken,
    /// unless `whole_shared_gpus = false`.
    #[serde(default)]
    pub mps_per_gpu: u32,
    /// How many of the `gpus` are shared through MPS, the last ones by index (after the
    /// shard ones): 1 by default with `mps_per_gpu`.
    #[serde(default)]
    pub mps_gpus: Option<u32>,
    /// Whether the GPUs in shared use (`shards_per_gpu`, `mps_per_gpu`) are also given
    /// whole while none of their shares is taken, as Slurm gives such a GPU either as
    /// `gres/gpu` or as shares (the default); `false` keeps them for shares only.
    #[serde(default = "yes")]
    pub whole_shared_gpus: bool,
}

impl NodeConfig {
    /// How many of the entry's GPUs are shared as shards.
    pub fn shard_gpu_count(&self) -> u32 {
        match (self.shards_per_gpu, self.shard_gpus) {
            (0, _) => 0,
            (_, n) => n.unwrap_or(1),
        }
    }

    /// How many of the entry's GPUs are shared through MPS.
    pub fn mps_gpu_count(&self) -> u32 {
        match (self.mps_per_gpu, self.mps_gpus) {
            (0, _) => 0,
            (_, n) => n.unwrap_or(1),
        }
    }

    /// The entry's GPUs in shared use, in the order of their devices: each kind of
    /// share, how many GPUs, and how many shares each is.
    pub fn shared_gpus(&self) -> [(&'static str, u32, u32); 2] {
        [
            (node::SHARD, self.shard_gpu_count(), self.shards_per_gpu),
            (node::MPS, self.mps_gpu_count(), self.mps_per_gpu),
        ]
    }

    /// The CPU ids of each NUMA node, by NUMA node id (assumes `check` passed).
    pub fn numa_cpu_ids(&self) -> Vec<Vec<u32>> {
        self.numa_cpus
            .iter()
            .map(|ids| parse_indices(ids, self.cpus, "CPU").unwrap_or_default())
            .collect()
    }

    /// How many of the entry's GPUs are in MIG mode.
    pub fn mig_gpu_count(&self) -> u32 {
        match (self.mig_layout.is_empty(), self.mig_gpus) {
            (true, _) => 0,
            (false, n) => n.unwrap_or(1),
        }
    }

    /// The devices of one node of this entry, by index, each with the physical GPU it
    /// is on: the whole GPUs, the MIG instances of each GPU in MIG mode, the GPUs in
    /// shared use whole (with `whole_shared_gpus`), then the shares of each GPU in
    /// shared use (shards, then MPS shares).
    fn devices_on_gpus(&self) -> Vec<(u32, String)> {
        let shared: u32 = self.shared_gpus().iter().map(|(_, n, _)| n).sum();
        let shared = shared.min(self.gpus);
        let mig = self.mig_gpu_count().min(self.gpus - shared);
        let whole = self.gpus - mig - shared;
        let layout = node::parse_mig_layout(&self.mig_layout).unwrap_or_default();
        let mut out: Vec<(u32, String)> = (0..whole).map(|g| (g, self.gpu_type.clone())).collect();
        for g in whole..whole + mig {
            out.extend(layout.iter().map(|profile| (g, profile.clone())));
        }
        if self.whole_shared_gpus {
            out.extend((whole + mig..self.gpus).map(|g| (g, self.gpu_type.clone())));
        }
        let mut g = whole + mig;
        for (kind, gpus, per_gpu) in self.shared_gpus() {
            for _ in 0..gpus {
                if g < self.gpus {
                    out.extend((0..per_gpu).map(|_| (g, kind.to_string())));
                }
                g += 1;
            }
        }
        out
    }

    /// The device file of each GPU of one node of this entry, by device index: a MIG
    /// instance has its GPU's (assumes `check` passed).
    pub fn gpu_file_list(&self) -> Vec<String> {
        let files = if self.gpu_files.is_empty() {
            default_gpu_files(self.gpus)
        } else {
            hostlist::expand(&self.gpu_files).unwrap_or_default()
        };
        self.devices_on_gpus()
            .into_iter()
            .filter_map(|(g, _)| files.get(g as usize).cloned())
            .collect()
    }

    /// `tmp_disk` in MB; `None` where the entry declares none (assumes `check`
    /// passed).
    pub fn tmp_disk_mb(&self) -> Option<u64> {
        units::parse_memory_mb(&self.tmp_disk).ok()
    }

    /// The processor layout of each node of the entry: what it declares, the rest
    /// inferred as Slurm infers it (assumes `check` passed).
    pub fn socket_layout(&self) -> node::SocketLayout {
        let cores_per_socket = self.cores_per_socket.unwrap_or(1).max(1);
        let threads_per_core = self.threads_per_core.unwrap_or(1).max(1);
        node::SocketLayout {
            sockets: self
                .sockets
                .unwrap_or(self.cpus / cores_per_socket.saturating_mul(threads_per_core))
                .max(1),
            cores_per_socket,
            threads_per_core,
        }
    }

    /// What the entry declares of a node that has `cpus` CPUs: the declared layout
    /// where it holds that many CPUs (a node daemon may have found another count),
    /// else the CPUs alone.
    pub fn declared_hardware(&self, cpus: u32) -> node::DeclaredHardware {
        let layout = self.socket_layout();
        node::DeclaredHardware {
            tmp_disk_mb: self.tmp_disk_mb().unwrap_or(0),
            layout: if layout.cpus() == cpus {
                layout
            } else {
                node::SocketLayout::of_cpus(cpus)
            },
        }
    }

    /// The memory of each GPU device of one node of this entry in MB, by device index
    /// (`gpu_memory`; a share's is its GPU's, a MIG instance's not known: 0); empty
    /// without `gpu_memory` (assumes `check` passed).
    pub fn gpu_memory_list(&self) -> Vec<u64> {
        let Ok(memory) = units::parse_memory_mb(&self.gpu_memory) else {
            return Vec::new();
        };
        self.devices_on_gpus()
            .iter()
            .map(|(_, t)| if node::is_mig_profile(t) { 0 } else { memory })
            .collect()
    }

    /// The GPUs of one node of this entry with their topology (assumes `check` passed):
    /// a MIG instance is on its GPU's NUMA node, in an NVLink domain of its own (as
    /// discovery finds them); the shards of a GPU share a domain of their own, so that a
    /// job's shards come from one GPU where one has enough, and name its whole device
    /// when it is given whole too (`GpuDevice::whole`).
    pub fn gpu_devices(&self) -> Vec<GpuDevice> {
        let domains: Vec<Vec<u32>> = self
            .nvlink_domains
            .iter()
            .map(|d| parse_gpu_indices(d, self.gpus).unwrap_or_default())
            .collect();
        let mut next_domain = self.gpus.max(domains.len() as u32);
        let mut shard_domains: std::collections::BTreeMap<u32, u32> = Default::default();
        let devices = self.devices_on_gpus();
        let whole_device = |g: u32| {
            devices
                .iter()
                .position(|(d, t)| *d == g && *t == self.gpu_type)
                .map(|k| k as u32)
        };
        devices
            .iter()
            .enumerate()
            .map(|(index, (g, gpu_type))| {
                let (g, gpu_type) = (*g, gpu_type.as_str());
                let mut gpu = GpuDevice::with_default_topology(g, self.gpus, gpu_type);
                gpu.index = index as u32;
                if gpu.is_share() {
                    gpu.whole = whole_device(g);
                }
                if let Some(&numa) = self.gpu_numa.get(g as usize) {
                    gpu.numa = numa;
                }
                gpu.nvlink = if gpu.is_share() {
                    *shard_domains.entry(g).or_insert_with(|| {
                        next_domain += 1;
                        next_domain - 1
                    })
                } else if node::is_mig_profile(gpu_type) {
                    next_domain += 1;
                    next_domain - 1
                } else if domains.is_empty() {
                    gpu.numa
                } else {
                    domains.iter().position(|d| d.contains(&g)).unwrap_or(0) as u32
                };
                gpu
            })
            .collect()
    }
}

/// `/dev/nvidia0` .. `/dev/nvidia<count-1>`: NVIDIA's device files.
pub fn default_gpu_files(count: u32) -> Vec<String> {
    (0..count).map(|i| format!("/dev/nvidia{i}")).collect()
}

/// GPU indices `0-3`, `0,2,4-5` of a node with `count` GPUs, sorted.
pub fn parse_gpu_indices(text: &str, count: u32) -> Result<Vec<u32>, String> {
    parse_indices(text, count, "GPU")
}

/// Indices `0-3`, `0,2,4-5` of a node's `count` CPUs or GPUs (`what`), sorted.
pub fn parse_indices(text: &str, count: u32, what: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        let num = |s: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| format!("invalid {what} index list `{text}`"))
        };
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => (num(part)?, num(part)?),
        };
        if lo > hi {
            return Err(format!("invalid {what} index range `{part}`"));
        }
        if hi >= count {
            return Err(format!(
                "{what} index {hi} out of range (the node has {count} {what}s)"
            ));
        }
        out.extend(lo..=hi);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
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
    /// The partition factor of the multifactor priority (normalized by the largest).
    #[serde(default = "one")]
    pub priority_job_factor: u32,
    /// Jobs of partitions with a higher tier are considered first, whatever their
    /// priority.
    #[serde(default = "one")]
    pub priority_tier: u32,
    /// Slurm's AllowAccounts: only jobs of these accounts may use the partition;
    /// empty: all accounts.
    #[serde(default)]
    pub allow_accounts: Vec<String>,
    /// Slurm's DenyAccounts: jobs of these accounts may not use the partition. Not
    /// together with `allow_accounts`.
    #[serde(default)]
    pub deny_accounts: Vec<String>,
    /// Slurm's AllowQos: only jobs of these QOS may use the partition; empty: all.
    #[serde(default)]
    pub allow_qos: Vec<String>,
    /// Slurm's DenyQos: jobs of these QOS may not use the partition. Not together
    /// with `allow_qos`.
    #[serde(default)]
    pub deny_qos: Vec<String>,
    /// Slurm's AllowGroups: only users of these Unix groups (and root) may use the
    /// partition; empty: all.
    #[serde(default)]
    pub allow_groups: Vec<String>,
    /// Slurm's OverSubscribe: `NO` (default: jobs share nodes, never CPUs),
    /// `EXCLUSIVE` (every job gets whole nodes) or `YES` (as `NO`: Drover never
    /// shares CPUs).
    #[serde(default = "no")]
    pub oversubscribe: String,
}

/// A partition's state (Slurm's `State=`): whether it takes jobs and schedules them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum PartitionState {
    /// Takes jobs and starts them.
    #[default]
    Up,
    /// Takes jobs, starts none.
    Down,
    /// Takes no new jobs, starts those it has.
    Drain,
    /// Takes no jobs and starts none.
    Inactive,
}

impl PartitionState {
    pub const ALL: [PartitionState; 4] = [Self::Up, Self::Down, Self::Drain, Self::Inactive];

    /// Slurm's word for it: `UP`, `DOWN`, `DRAIN` or `INACTIVE`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Up => "UP",
            Self::Down => "DOWN",
            Self::Drain => "DRAIN",
            Self::Inactive => "INACTIVE",
        }
    }

    /// A state by its word, in any case; `None` for a word that names none.
    pub fn parse(word: &str) -> Option<PartitionState> {
        Self::ALL
            .into_iter()
            .find(|s| s.name().eq_ignore_ascii_case(word))
    }

    pub fn accepts_jobs(self) -> bool {
        matches!(self, Self::Up | Self::Down)
    }

    pub fn schedules_jobs(self) -> bool {
        matches!(self, Self::Up | Self::Drain)
    }
}

/// A partition's OverSubscribe: whether its jobs share nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum OverSubscribe {
    /// Jobs share nodes, never CPUs (Slurm's default).
    #[default]
    No,
    /// As `No`: Drover never shares CPUs.
    Yes,
    /// Every job gets whole nodes.
    Exclusive,
}

impl OverSubscribe {
    pub const ALL: [OverSubscribe; 3] = [Self::No, Self::Yes, Self::Exclusive];

    /// Slurm's word for it: `NO`, `YES` or `EXCLUSIVE`.
    pub fn name(self) -> &'static str {
        match self {
            Self::No => "NO",
            Self::Yes => "YES",
            Self::Exclusive => "EXCLUSIVE",
        }
    }

    /// A value by its word, in any case; `None` for a word that names none.
    pub fn parse(word: &str) -> Option<OverSubscribe> {
        Self::ALL
            .into_iter()
            .find(|o| o.name().eq_ignore_ascii_case(word))
    }
}

fn no() -> String {
    "NO".into()
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
fn yes() -> bool {
    true
}
fn one() -> u32 {
    1
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
    pub state: PartitionState,
    pub priority_job_factor: u32,
    pub priority_tier: u32,
    /// AllowAccounts; empty: all.
    pub allow_accounts: Vec<String>,
    /// DenyAccounts.
    pub deny_accounts: Vec<String>,
    /// AllowQos; empty: all.
    pub allow_qos: Vec<String>,
    /// DenyQos.
    pub deny_qos: Vec<String>,
    /// AllowGroups (Unix group names); empty: all.
    pub allow_groups: Vec<String>,
    pub oversubscribe: OverSubscribe,
}

impl Partition {
    /// An UP partition over `nodes` with every default of the config file: no time
    /// or node limits, factor and tier 1, open to every account and QOS.
    pub fn open(name: &str, nodes: Vec<String>, is_default: bool) -> Partition {
        Partition {
            name: name.into(),
            nodes,
            is_default,
            max_time_min: None,
            default_time_min: None,
            max_nodes: 0,
            state: PartitionState::Up,
            priority_job_factor: 1,
            priority_tier: 1,
            allow_accounts: Vec::new(),
            deny_accounts: Vec::new(),
            allow_qos: Vec::new(),
            deny_qos: Vec::new(),
            allow_groups: Vec::new(),
            oversubscribe: OverSubscribe::No,
        }
    }

    /// OverSubscribe=EXCLUSIVE: every job gets whole nodes.
    pub fn exclusive(&self) -> bool {
        self.oversubscribe == OverSubscribe::Exclusive
    }

    /// May jobs of this account use the partition (AllowAccounts, DenyAccounts)?
    pub fn allows_account(&self, account: &str) -> bool {
        if !self.allow_accounts.is_empty() {
            return self.allow_accounts.iter().any(|a| a == account);
        }
        !self.deny_accounts.iter().any(|a| a == account)
    }

    /// May jobs of this QOS use the partition (AllowQos, DenyQos)?
    pub fn allows_qos(&self, qos: &str) -> bool {
        if !self.allow_qos.is_empty() {
            return self.allow_qos.iter().any(|q| q == qos);
        }
        !self.deny_qos.iter().any(|q| q == qos)
    }

    /// May user `uid`, a member of the Unix groups `groups` (by name), use the
    /// partition (AllowGroups)? Root always may, as in Slurm.
    pub fn allows_user(&self, uid: u32, groups: &[String]) -> bool {
        uid == 0
            || self.allow_groups.is_empty()
            || self.allow_groups.iter().any(|g| groups.contains(g))
    }

    pub fn accepts_jobs(&self) -> bool {
        self.state.accepts_jobs()
    }
    pub fn schedules_jobs(&self) -> bool {
        self.state.schedules_jobs()
    }
}

impl Config {
    /// Where purged job records are archived (`[controller] archive_jobs`); `None`:
    /// they are not.
    pub fn archive_dir(&self) -> Option<String> {
        let c = &self.controller;
        c.archive_jobs.then(|| {
            if c.archive_dir.is_empty() {
                format!("{}/archive", self.state_dir.trim_end_matches('/'))
            } else {
                c.archive_dir.clone()
            }
        })
    }

    /// Parses and checks a config file's text. `file` only labels errors, which name
    /// the file, the line and the key: `drover.toml:12: node_timeout_s: must be ...`.
    pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
        let error = |line: usize, message: String| ConfigError {
            file: file.to_string(),
            line,
            message: message.replace('\n', " "),
        };
        let config: Config = toml::from_str(text).map_err(|e| {
            let at = Located::new(text);
            let offset = e.span().map_or(0, |s| s.start);
            let message = check::plain_words(e.message());
            let message = match at.key_of_value_at(offset) {
                Some(key) if e.span().is_some() => format!("{key}: {message}"),
                _ => message,
            };
            error(at.line_at(offset), message)
        })?;
        config.check().map_err(|invalid| {
            let at = Located::new(text);
            let path = invalid
                .at
                .iter()
                .find(|p| at.has(p))
                .unwrap_or(&invalid.at[0]);
            let message = match path.last_key() {
                Some(key) => format!("{key}: {}", invalid.message),
                None => invalid.message,
            };
            error(at.line_of(path), message)
        })?;
        Ok(config)
    }

    /// The nodes of the config, expanded, in name order of their definition.
    /// The `[[nodes]]` entry that defines node `name`.
    pub fn node_entry(&self, name: &str) -> Option<&NodeConfig> {
        self.nodes
            .iter()
            .find(|n| hostlist::expand(&n.names).is_ok_and(|hosts| hosts.iter().any(|h| h == name)))
    }

    pub fn node_list(&self) -> Vec<Node> {
        let mut out = Vec::new();
        for n in &self.nodes {
            let mem = units::parse_memory_mb(&n.memory).unwrap_or(0);
            for host in hostlist::expand(&n.names).unwrap_or_default() {
                let mut node = Node::from_config(&host, n.cpus, mem, n.gpu_devices());
                node.features = n.features.clone();
                node.numa_cpus = n.numa_cpu_ids();
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
                    // A checked config names a known state and OverSubscribe.
                    state: PartitionState::parse(&p.state).unwrap_or_default(),
                    priority_job_factor: p.priority_job_factor,
                    priority_tier: p.priority_tier,
                    allow_accounts: p.allow_accounts.clone(),
                    deny_accounts: p.deny_accounts.clone(),
                    allow_qos: p.allow_qos.clone(),
                    deny_qos: p.deny_qos.clone(),
                    allow_groups: p.allow_groups.clone(),
                    oversubscribe: OverSubscribe::parse(&p.oversubscribe).unwrap_or_default(),
                }
            })
            .collect()
    }
}

// ---------------------------------------------------------------- priority, accounts, QOS

/// `[priority]`: how pending jobs are ordered (Slurm's PriorityType and
/// PriorityWeight*), how usage is billed and how fast it is forgotten.
///
/// ```toml
/// [priority]
/// type = "multifactor"          # or "basic": first come, first served
/// weight_age = 1000
/// weight_fairshare = 10000
/// weight_tres = "gres/gpu=1000"
/// max_age = "7-0"
/// decay_half_life = "7-0"
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PriorityConfig {
    /// `multifactor` (Slurm's priority/multifactor) or `basic` (submit order).
    #[serde(rename = "type")]
    pub kind: String,
    pub weight_age: u32,
    pub weight_fairshare: u32,
    pub weight_job_size: u32,
    pub weight_partition: u32,
    pub weight_qos: u32,
    pub weight_assoc: u32,
    /// Per-TRES weights: `cpu=1,gres/gpu=1000`.
    pub weight_tres: String,
    /// The age factor reaches 1 after this long (Slurm time syntax).
    pub max_age: String,
    /// Favor small jobs (few nodes and CPUs) instead of large ones.
    pub favor_small: bool,
    /// Past usage loses half its weight over this; `0` turns decay off.
    pub decay_half_life: String,
    /// `fair_tree` (Slurm's default) or `classic` (`2^(-U/S)`).
    pub fairshare: String,
    /// What a second of a job costs in usage: `cpu=1,mem=0.25G,gres/gpu=10`. Empty: its
    /// CPUs (Slurm's default without TRESBillingWeights).
    pub billing_weights: String,
}

impl Default for PriorityConfig {
    fn default() -> Self {
        PriorityConfig {
            kind: "multifactor".into(),
            weight_age: 0,
            weight_fairshare: 0,
            weight_job_size: 0,
            weight_partition: 0,
            weight_qos: 0,
            weight_assoc: 0,
            weight_tres: String::new(),
            max_age: "7-0".into(),
            favor_small: false,
            decay_half_life: "7-0".into(),
            fairshare: "fair_tree".into(),
            billing_weights: String::new(),
        }
    }
}

/// One `[[accounts]]` entry: a node of the account tree. `Max*` limits apply to each
/// user of the account (and are inherited by sub-accounts that set none); `Grp*`
/// limits to the account with everything below it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountConfig {
    pub name: String,
    /// The parent account; empty (or `root`) hangs it under `root`.
    #[serde(default)]
    pub parent: String,
    /// Fair-share shares among its siblings (Slurm's Fairshare).
    #[serde(default = "one", alias = "fairshare")]
    pub shares: u32,
    /// The association factor of the multifactor priority.
    #[serde(default)]
    pub priority: u32,
    /// Users of this account, each an association with 1 share. A user's default
    /// account is the first account listing them.
    #[serde(default)]
    pub users: Vec<String>,
    /// QOS its jobs may use; empty: inherited from the parent (at the top: all).
    #[serde(default)]
    pub qos: Vec<String>,
    /// QOS of jobs that name none; empty: inherited (at the top: `normal`).
    #[serde(default)]
    pub default_qos: String,
    /// GrpTRES: what all running jobs below this account may hold together.
    #[serde(default)]
    pub grp_tres: String,
    /// GrpTRESMins: TRES-minutes of past (decayed), running and new jobs together.
    #[serde(default)]
    pub grp_tres_mins: String,
    /// GuaranteedTRES: what the account (with everything below it) is guaranteed; lent
    /// to others while idle, taken back when its jobs need it.
    #[serde(default)]
    pub guaranteed_tres: String,
    /// BorrowingLimit (Kueue's `borrowingLimit`): the most the account may hold beyond
    /// its guarantee (`gres/gpu=2`).
    #[serde(default)]
    pub borrowing_limit: String,
    /// LendingLimit (Kueue's `lendingLimit`): the most of its idle guarantee others may
    /// borrow (`gres/gpu=2`); the rest stays free for the account's own jobs.
    #[serde(default)]
    pub lending_limit: String,
    /// GrpJobs: running jobs below this account.
    #[serde(default)]
    pub grp_jobs: Option<u32>,
    /// What the running jobs of one user of the account may hold together.
    #[serde(default)]
    pub max_tres_per_user: String,
    /// MaxTRES: what one job may hold.
    #[serde(default)]
    pub max_tres_per_job: String,
    /// MaxJobs: running jobs per user.
    #[serde(default)]
    pub max_jobs: Option<u32>,
    /// MaxSubmitJobs: pending and running jobs per user, checked at submit.
    #[serde(default)]
    pub max_submit: Option<u32>,
    /// MaxWall: the longest time limit a job may have (Slurm time syntax).
    #[serde(default)]
    pub max_wall: String,
    /// MaxTRESMinsPerJob: TRES-minutes one job may ask for (`cpu=6000`).
    #[serde(default)]
    pub max_tres_mins: String,
    /// GrpWall: wall-clock time the jobs below this account may run together, past
    /// (decayed) and running (Slurm time syntax).
    #[serde(default)]
    pub grp_wall: String,
    /// Account coordinators: users who may act on the jobs of this account and of the
    /// accounts below it as their owners may (Slurm's `sacctmgr add coordinator`).
    #[serde(default)]
    pub coordinators: Vec<String>,
}

/// One `[[qos]]` entry. `normal` (priority 0, no limits) exists even when not listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QosConfig {
    pub name: String,
    /// The QOS factor of the multifactor priority (normalized by the largest).
    #[serde(default)]
    pub priority: u32,
    /// MaxTRESPerUser: what one user's running jobs in this QOS may hold together.
    #[serde(default)]
    pub max_tres_per_user: String,
    /// MaxTRESPerJob.
    #[serde(default)]
    pub max_tres_per_job: String,
    /// MaxJobsPerUser: running jobs per user.
    #[serde(default)]
    pub max_jobs_per_user: Option<u32>,
    /// MaxSubmitJobsPerUser: pending and running jobs per user, checked at submit.
    #[serde(default)]
    pub max_submit_jobs_per_user: Option<u32>,
    /// MaxWall (Slurm time syntax).
    #[serde(default)]
    pub max_wall: String,
    /// MaxTRESMinsPerJob: TRES-minutes one job may ask for (`cpu=6000`).
    #[serde(default)]
    pub max_tres_mins: String,
    /// GrpTRESMins: TRES-minutes of this QOS's past (decayed), running and new jobs.
    #[serde(default)]
    pub grp_tres_mins: String,
    /// GrpWall: wall-clock time this QOS's jobs may run together, past (decayed) and
    /// running (Slurm time syntax).
    #[serde(default)]
    pub grp_wall: String,
    /// GrpTRES: what all running jobs of this QOS may hold together.
    #[serde(default)]
    pub grp_tres: String,
    /// GrpJobs: running jobs of this QOS.
    #[serde(default)]
    pub grp_jobs: Option<u32>,
    /// QOS whose jobs this one may preempt (stored for the preemption step).
    #[serde(default)]
    pub preempt: Vec<String>,
    /// `cancel`, `requeue`, `suspend` or `off`; empty: the cluster's default.
    #[serde(default)]
    pub preempt_mode: String,
    /// Slurm's GraceTime, seconds: a preempted job of this QOS gets SIGTERM and is
    /// killed this long after (0: at once). CANCEL and REQUEUE only.
    #[serde(default)]
    pub grace_time: i64,
    /// Usage of its jobs is multiplied by this (Slurm's UsageFactor).
    #[serde(default = "one_f64")]
    pub usage_factor: f64,
    /// Drover's GPU idle policy (`model::gpu_use`): a job all of whose GPUs stay idle
    /// this long (Slurm time syntax; empty: never) is flagged and its user told;
    /// `gpu_idle_action` (`warn`, the default, `requeue` or `cancel`) then happens
    /// `gpu_idle_grace` later if they stay idle.
    #[serde(default)]
    pub gpu_idle_limit: String,
    #[serde(default)]
    pub gpu_idle_action: String,
    #[serde(default)]
    pub gpu_idle_grace: String,
}

fn one_f64() -> f64 {
    1.0
}

/// `[priority] type` values.
pub const PRIORITY_TYPES: [&str; 2] = ["multifactor", "basic"];
/// `[priority] fairshare` values.
pub const FAIRSHARE_ALGORITHMS: [&str; 2] = ["fair_tree", "classic"];

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
    fn private_data_words_are_slurms_both_ways() {
        let c = Config::parse(
            "[controller]\nprivate_data = [\"jobs\", \"usage\"]\n",
            "t.toml",
        )
        .unwrap();
        let words: Vec<&str> = c.controller.private_data.iter().map(|w| w.name()).collect();
        assert_eq!(words, ["jobs", "usage"]);
    }

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
    fn scheduler_section() {
        let c = Config::parse(SAMPLE, "t.toml").unwrap();
        assert_eq!(c.scheduler, SchedulerConfig::default());
        assert_eq!(c.scheduler.policy, "easy");
        let text =
            format!("{SAMPLE}\n[scheduler]\npolicy = \"conservative\"\nbf_max_reservations = 0\n");
        let c = Config::parse(&text, "t.toml").unwrap();
        assert_eq!(c.scheduler.policy, "conservative");
        assert_eq!(c.scheduler.bf_max_reservations, 0);
        let bad = format!("{SAMPLE}\n[scheduler]\npolicy = \"lottery\"\n");
        let e = Config::parse(&bad, "t.toml").unwrap_err();
        assert!(
            e.message
                .starts_with("policy: unknown scheduling policy `lottery`"),
            "{e}"
        );
        assert_eq!(e.line, bad.lines().count(), "{e}");
    }

    #[test]
    fn preemption_keys() {
        let c = Config::parse(SAMPLE, "t.toml").unwrap();
        assert_eq!(c.scheduler.preempt_type, "none");
        assert_eq!(c.scheduler.preempt_mode, "cancel");
        let text = format!(
            "{SAMPLE}\n[scheduler]\npreempt_type = \"qos\"\npreempt_mode = \"suspend\"\n\n\
             [[qos]]\nname = \"low\"\ngrace_time = 30\npreempt_mode = \"requeue\"\n"
        );
        let c = Config::parse(&text, "t.toml").unwrap();
        assert_eq!(c.scheduler.preempt_type, "qos");
        assert_eq!(c.scheduler.preempt_mode, "suspend");
        assert_eq!(c.qos[0].grace_time, 30);
        for (bad, message, key_line) in [
            (
                "[scheduler]\npreempt_type = \"lottery\"\n",
                "preempt_type: unknown preempt type `lottery`",
                "preempt_type",
            ),
            (
                "[scheduler]\npreempt_mode = \"kill\"\n",
                "preempt_mode: unknown preempt mode `kill`",
                "preempt_mode",
            ),
            (
                "[[qos]]\nname = \"low\"\ngrace_time = -1\n",
                "grace_time",
                "grace_time",
            ),
            (
                "[scheduler]\npreempt_exempt_time = \"soon\"\n",
                "preempt_exempt_time: ",
                "preempt_exempt_time",
            ),
        ] {
            let text = format!("{SAMPLE}\n{bad}");
            let e = Config::parse(&text, "t.toml").unwrap_err();
            assert!(e.message.contains(message), "{e}");
            let line = text.lines().position(|l| l.starts_with(key_line)).unwrap() + 1;
            assert_eq!(e.line, line, "{e}");
        }
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
    #[allow(
        clippy::disallowed_methods,
        reason = "test code: reads the sample configs of conf/"
    )]
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

#[cfg(test)]
mod accounting_tests {
    use super::*;

    const BASE: &str = r#"
[[nodes]]
names = "n1"
cpus = 4
memory = "8G"
[[partitions]]
name = "p"
nodes = "n1"
"#;

    #[allow(
        clippy::disallowed_methods,
        reason = "test code: reads the sample configs of conf/"
    )]
    #[test]
    fn sample_accounting_parses() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../conf/drover.toml");
        let c = Config::parse(&std::fs::read_to_string(dir).unwrap(), "drover.toml").unwrap();
        assert_eq!(c.priority.weight_fairshare, 10000);
        assert_eq!(c.priority.fairshare, "fair_tree");
        let a = crate::assoc::Associations::from_config(&c);
        assert!(a.enforced);
        assert_eq!(a.default_account("alice"), Some("ml"));
        assert_eq!(a.accounts["vision"].parent.as_deref(), Some("ml"));
        assert_eq!(a.qos["high"].preempt, vec!["low".to_string()]);
        assert_eq!(c.scheduler.preempt_type, "qos");
        assert_eq!(a.qos["low"].preempt_mode, "requeue");
        assert_eq!(a.qos["low"].grace_time, 60);
        assert_eq!(a.qos["normal"].limits.max_submit, Some(1000));
        let tiers: Vec<u32> = c.partition_list().iter().map(|p| p.priority_tier).collect();
        assert_eq!(tiers, vec![1, 1, 1, 2]);
    }

    #[test]
    fn accounting_errors_name_file_line_and_key() {
        let cases = [
            (
                "[priority]\ntype = \"fancy\"\n",
                10,
                "type: unknown priority type",
            ),
            (
                "[priority]\nfairshare = \"fifo\"\n",
                10,
                "fairshare: unknown fair-share",
            ),
            (
                "[priority]\nweight_tres = \"cpus=1\"\n",
                10,
                "weight_tres: invalid TRES",
            ),
            (
                "[priority]\nmax_age = \"soon\"\n",
                10,
                "max_age: invalid time",
            ),
            ("[priority]\nweight_age = -1\n", 10, "invalid value"),
            ("[priority]\nbogus = 1\n", 10, "unknown field"),
            (
                "[[accounts]]\nname = \"a\"\nparent = \"nope\"\n",
                11,
                "parent: unknown parent account nope",
            ),
            (
                "[[accounts]]\nname = \"a\"\n[[accounts]]\nname = \"a\"\n",
                12,
                "name: account a is defined twice",
            ),
            (
                "[[accounts]]\nname = \"a\"\nparent = \"b\"\n[[accounts]]\nname = \"b\"\nparent = \"a\"\n",
                11,
                "its own ancestor",
            ),
            (
                "[[accounts]]\nname = \"a\"\ngrp_tres = \"gpu=x\"\n",
                11,
                "grp_tres: invalid TRES",
            ),
            (
                "[[accounts]]\nname = \"a\"\nqos = [\"gold\"]\n",
                11,
                "qos: unknown QOS gold",
            ),
            (
                "[[accounts]]\nname = \"a\"\nmax_wall = \"forever\"\n",
                11,
                "max_wall: invalid time",
            ),
            (
                "[[qos]]\nname = \"high\"\npreempt = [\"nobody\"]\n",
                11,
                "preempt: unknown QOS nobody",
            ),
            (
                "[[qos]]\nname = \"high\"\npreempt_mode = \"kill\"\n",
                11,
                "preempt_mode: unknown preempt mode",
            ),
            (
                "[[qos]]\nname = \"high\"\nmax_tres_per_user = \"cpu=1,mem=lots\"\n",
                11,
                "max_tres_per_user: invalid TRES",
            ),
        ];
        for (extra, line, want) in cases {
            let text = format!("{BASE}{extra}");
            let e = Config::parse(&text, "t.toml").unwrap_err();
            assert_eq!(e.file, "t.toml");
            assert_eq!(e.line, line, "{extra}: {e}");
            assert!(e.message.contains(want), "{extra}: {e}");
        }
        let ok = Config::parse(
            &format!(
                "{BASE}[[partitions]]\nname = \"q\"\nnodes = \"n1\"\npriority_tier = 3\n\
                 [[accounts]]\nname = \"root\"\nusers = [\"ops\"]\n\
                 [[accounts]]\nname = \"a\"\nfairshare = 5\n"
            ),
            "t.toml",
        )
        .unwrap();
        assert_eq!(ok.accounts[1].shares, 5);
        assert_eq!(ok.partition_list()[1].priority_tier, 3);
        assert_eq!(ok.partition_list()[0].priority_job_factor, 1);
    }
}

#[cfg(test)]
mod placement_config_tests {
    use super::*;

    const BASE: &str = r#"
[[nodes]]
names = "c1"
cpus = 4
memory = "8G"
[[nodes]]
names = "g[1-2]"
cpus = 16
memory = "64G"
gpus = 8
gpu_type = "h100"
"#;

    fn topo(c: &Config, name: &str) -> Vec<(u32, u32)> {
        c.node_list()
            .into_iter()
            .find(|n| n.name == name)
            .unwrap()
            .gpus
            .iter()
            .map(|g| (g.numa, g.nvlink))
            .collect()
    }

    #[test]
    fn socket_layout_is_declared_or_inferred_as_slurm_infers_it() {
        use crate::node::SocketLayout;
        let layout = |extra: &str, cpus: u32| {
            let c = Config::parse(&format!("{BASE}{extra}"), "t.toml").unwrap();
            c.node_entry("g1").unwrap().declared_hardware(cpus).layout
        };
        let of = |sockets, cores_per_socket, threads_per_core| SocketLayout {
            sockets,
            cores_per_socket,
            threads_per_core,
        };
        // CPUs alone: one-core sockets.
        assert_eq!(layout("", 16), of(16, 1, 1));
        assert_eq!(
            layout("sockets = 1\ncores_per_socket = 16\n", 16),
            of(1, 16, 1)
        );
        // Sockets inferred from cores and threads.
        assert_eq!(
            layout("cores_per_socket = 4\nthreads_per_core = 2\n", 16),
            of(2, 4, 2)
        );
        // A daemon that found another CPU count: its CPUs alone.
        assert_eq!(
            layout("sockets = 2\ncores_per_socket = 8\n", 12),
            of(12, 1, 1)
        );
        let c = Config::parse(&format!("{BASE}tmp_disk = \"1G\"\n"), "t.toml").unwrap();
        assert_eq!(
            c.node_entry("g2")
                .unwrap()
                .declared_hardware(16)
                .tmp_disk_mb,
            1024
        );
    }

    #[test]
    fn gpu_topology_defaults_and_keys() {
        let c = Config::parse(BASE, "t.toml").unwrap();
        let half: Vec<(u32, u32)> = (0..8).map(|i| (i / 4, i / 4)).collect();
        assert_eq!(topo(&c, "g2"), half);
        let text = format!(
            "{BASE}gpu_numa = [0, 0, 0, 0, 1, 1, 1, 1]\nnvlink_domains = [\"0-1\", \"2,3\", \"4-7\"]\n"
        );
        let c = Config::parse(&text, "t.toml").unwrap();
        let domains = [0, 0, 1, 1, 2, 2, 2, 2];
        let want: Vec<(u32, u32)> = (0..8).map(|i| (i / 4, domains[i as usize])).collect();
        assert_eq!(topo(&c, "g1"), want);
        // Only NUMA given: one NVLink domain per NUMA node.
        let text = format!("{BASE}gpu_numa = [1, 1, 1, 1, 0, 0, 0, 0]\n");
        let c = Config::parse(&text, "t.toml").unwrap();
        assert_eq!(topo(&c, "g1")[0], (1, 1));
        assert_eq!(topo(&c, "g1")[7], (0, 0));
        // Odd counts: the first half rounded up on NUMA 0; one GPU on NUMA 0.
        assert_eq!(crate::node::default_gpu_numa(1, 3), 0);
        assert_eq!(crate::node::default_gpu_numa(2, 3), 1);
        assert_eq!(crate::node::default_gpu_numa(0, 1), 0);
    }

    /// The config `text` and its node g1.
    fn node_g1(text: &str) -> (Config, Node) {
        let c = Config::parse(text, "t.toml").unwrap();
        let node = c.node_list().into_iter().find(|n| n.name == "g1").unwrap();
        (c, node)
    }

    fn gpu_types(node: &Node) -> Vec<&str> {
        node.gpus.iter().map(|g| g.gpu_type.as_str()).collect()
    }

    #[test]
    fn a_mig_layout_makes_each_instance_a_gpu_of_its_own() {
        let text = format!(
            "{BASE}gpu_files = \"/dev/nvidia[10-17]\"\nmig_layout = \"1x3g.40gb,2x2g.20gb\"\n\
             mig_gpus = 2\n"
        );
        let (c, node) = node_g1(&text);
        let types = gpu_types(&node);
        let mut want = vec!["h100"; 6];
        want.extend(["3g.40gb", "2g.20gb", "2g.20gb"].repeat(2));
        assert_eq!(types, want);
        let indices: Vec<u32> = node.gpus.iter().map(|g| g.index).collect();
        assert_eq!(indices, (0..12).collect::<Vec<u32>>());
        // The instances are on their GPUs' NUMA node, each in an NVLink domain apart.
        let topology: Vec<(u32, u32)> = node.gpus[5..].iter().map(|g| (g.numa, g.nvlink)).collect();
        assert_eq!(
            topology,
            vec![(1, 1), (1, 8), (1, 9), (1, 10), (1, 11), (1, 12), (1, 13)]
        );
        let files = c.node_entry("g1").unwrap().gpu_file_list();
        assert_eq!(files.len(), 12);
        assert_eq!(files[5], "/dev/nvidia15");
        assert_eq!(&files[6..9], ["/dev/nvidia16"; 3]);
        assert_eq!(&files[9..], ["/dev/nvidia17"; 3]);
        // One GPU in MIG mode by default.
        let c = Config::parse(&format!("{BASE}mig_layout = \"7x1g.10gb\"\n"), "t.toml").unwrap();
        let node = c.node_list().into_iter().find(|n| n.name == "g2").unwrap();
        assert_eq!(node.gpus.len(), 14);
        assert_eq!(node.gpus[7].gpu_type, "1g.10gb");
        assert_eq!(node.gpus[6].gpu_type, "h100");
    }

    #[test]
    fn shared_gpus_are_shards_of_their_own_kind() {
        const SHARES_ONLY: &str = "whole_shared_gpus = false\n";
        let text = format!("{BASE}{SHARES_ONLY}shards_per_gpu = 4\nshard_gpus = 2\n");
        let (c, node) = node_g1(&text);
        let types = gpu_types(&node);
        let mut want = vec!["h100"; 6];
        want.extend(["shard"; 8]);
        assert_eq!(types, want);
        // One NVLink domain per shared GPU, apart from the whole GPUs' ones.
        let domains: Vec<u32> = node.gpus[6..].iter().map(|g| g.nvlink).collect();
        assert_eq!(domains, [8, 8, 8, 8, 9, 9, 9, 9]);
        let files = c.node_entry("g1").unwrap().gpu_file_list();
        assert_eq!(&files[6..10], ["/dev/nvidia6"; 4]);
        assert_eq!(&files[10..], ["/dev/nvidia7"; 4]);
        // With MIG: whole GPUs, then MIG instances, then shards.
        let text = format!("{BASE}{SHARES_ONLY}mig_layout = \"7x1g.10gb\"\nshards_per_gpu = 2\n");
        let (_, node) = node_g1(&text);
        let types = gpu_types(&node);
        let mut want = vec!["h100"; 6];
        want.extend(["1g.10gb"; 7]);
        want.extend(["shard"; 2]);
        assert_eq!(types, want);
        // Shards and MPS shares on GPUs of their own, after the whole ones.
        let text =
            format!("{BASE}{SHARES_ONLY}shards_per_gpu = 2\nmps_per_gpu = 10\nmps_gpus = 2\n");
        let (c, node) = node_g1(&text);
        let types = gpu_types(&node);
        let mut want = vec!["h100"; 5];
        want.extend(["shard"; 2]);
        want.extend(["mps"; 20]);
        assert_eq!(types, want);
        let files = c.node_entry("g1").unwrap().gpu_file_list();
        assert_eq!(
            (files[5].as_str(), files[7].as_str(), files[26].as_str()),
            ("/dev/nvidia5", "/dev/nvidia6", "/dev/nvidia7")
        );
        for (extra, message) in [
            ("mps_gpus = 1\n", "mps_gpus: needs `mps_per_gpu`"),
            (
                "shards_per_gpu = 2\nshard_gpus = 7\nmps_per_gpu = 4\nmps_gpus = 2\n",
                "mps_gpus: must be 1 to 1",
            ),
            ("shard_gpus = 1\n", "shard_gpus: needs `shards_per_gpu`"),
            (
                "shards_per_gpu = 4\nshard_gpus = 9\n",
                "shard_gpus: must be 1 to 8",
            ),
            (
                "mig_layout = \"7x1g.10gb\"\nshards_per_gpu = 4\nshard_gpus = 8\n",
                "shard_gpus: must be 1 to 7",
            ),
            (
                "shards_per_gpu = 64\nshard_gpus = 2\n",
                "gpus: gives each node 136 GPU devices",
            ),
        ] {
            let e = Config::parse(&format!("{BASE}{extra}"), "t.toml").unwrap_err();
            assert!(e.message.contains(message), "{extra}: {e}");
        }
    }

    #[test]
    fn shared_gpus_are_whole_gpus_too_and_their_shares_name_them() {
        let text =
            format!("{BASE}mig_layout = \"7x1g.10gb\"\nshards_per_gpu = 2\nshard_gpus = 2\n");
        let (c, node) = node_g1(&text);
        let types = gpu_types(&node);
        // Plain GPUs 0-4, the MIG instances of GPU 5, GPUs 6-7 whole, their shards.
        let mut want = vec!["h100"; 5];
        want.extend(["1g.10gb"; 7]);
        want.extend(["h100"; 2]);
        want.extend(["shard"; 4]);
        assert_eq!(types, want);
        let wholes: Vec<Option<u32>> = node.gpus.iter().map(|g| g.whole).collect();
        let mut want = vec![None; 14];
        want.extend([Some(12), Some(12), Some(13), Some(13)]);
        assert_eq!(wholes, want);
        let files = c.node_entry("g1").unwrap().gpu_file_list();
        assert_eq!(
            (files[12].as_str(), files[15].as_str(), files[16].as_str()),
            ("/dev/nvidia6", "/dev/nvidia6", "/dev/nvidia7")
        );
        // The whole devices keep their GPUs' topology: GPUs 6 and 7 are on NUMA 1.
        assert_eq!((node.gpus[12].numa, node.gpus[13].numa), (1, 1));
    }

    #[test]
    fn numa_cpus_name_each_numa_nodes_cpus_once() {
        let text = format!("{BASE}numa_cpus = [\"0-3,8-11\", \"4-7,12-15\"]\n");
        let (_, node) = node_g1(&text);
        assert_eq!(
            node.numa_cpus,
            [
                vec![0, 1, 2, 3, 8, 9, 10, 11],
                vec![4, 5, 6, 7, 12, 13, 14, 15]
            ]
        );
        for (extra, message) in [
            (
                "numa_cpus = [\"0-7\", \"8-16\"]\n",
                "numa_cpus: CPU index 16 out of range",
            ),
            (
                "numa_cpus = [\"0-8\", \"8-15\"]\n",
                "numa_cpus: CPU 8 is on more than one NUMA node",
            ),
            (
                "numa_cpus = [\"0-7\", \"9-15\"]\n",
                "numa_cpus: CPU 8 is on no NUMA node",
            ),
            (
                "numa_cpus = [\"0-15\"]\n",
                "gpu_numa: GPU 4 is on NUMA node 1, which `numa_cpus` does not list",
            ),
        ] {
            let e = Config::parse(&format!("{BASE}{extra}"), "t.toml").unwrap_err();
            assert!(e.message.contains(message), "{extra}: {e}");
        }
    }

    #[test]
    fn mig_errors_name_the_key() {
        let cases = [
            (
                "mig_layout = \"8x1g.10gb\"\n",
                "mig_layout: MIG layout `8x1g.10gb` takes 8 slices",
            ),
            (
                "mig_layout = \"7xh100\"\n",
                "mig_layout: invalid MIG layout term `7xh100`",
            ),
            ("mig_gpus = 1\n", "mig_gpus: needs a `mig_layout`"),
            (
                "mig_layout = \"7x1g.10gb\"\nmig_gpus = 9\n",
                "mig_gpus: must be 1 to 8",
            ),
            (
                "mig_layout = \"7x1g.10gb\"\nmig_gpus = 0\n",
                "mig_gpus: must be 1 to 8",
            ),
        ];
        for (extra, want) in cases {
            let e = Config::parse(&format!("{BASE}{extra}"), "t.toml").unwrap_err();
            assert!(e.message.contains(want), "{extra}: {e}");
        }
        let text = BASE.replace("gpus = 8", "gpus = 65");
        let e = Config::parse(&text, "t.toml").unwrap_err();
        assert!(
            e.message.contains("gpus: gives each node 65 GPU devices"),
            "{e}"
        );
        // Whole GPUs' type cannot be a kind of share or a MIG profile.
        for reserved in ["shard", "mps", "1g.10gb"] {
            let text = BASE.replace("gpu_type = \"h100\"", &format!("gpu_type = \"{reserved}\""));
            let e = Config::parse(&text, "t.toml").unwrap_err();
            assert!(
                e.message.contains("names shares or MIG instances"),
                "{reserved}: {e}"
            );
        }
    }

    #[test]
    fn gpu_topology_errors_name_file_line_and_key() {
        let cases = [
            (
                "gpu_numa = [0, 1]\n",
                12,
                "gpu_numa: lists 2 NUMA nodes for 8 GPUs",
            ),
            (
                "nvlink_domains = [\"0-3\", \"4-8\"]\n",
                12,
                "nvlink_domains: GPU index 8 out of range",
            ),
            (
                "nvlink_domains = [\"0-4\", \"4-7\"]\n",
                12,
                "nvlink_domains: GPU 4 is in more than one NVLink domain",
            ),
            (
                "nvlink_domains = [\"0-3\", \"5-7\"]\n",
                12,
                "nvlink_domains: GPU 4 is in no NVLink domain",
            ),
            (
                "nvlink_domains = [\"0-3\", \"x\"]\n",
                12,
                "nvlink_domains: invalid GPU index list `x`",
            ),
            ("gpu_numa = \"0,1\"\n", 12, "invalid type"),
        ];
        for (extra, line, want) in cases {
            let text = format!("{BASE}{extra}");
            let e = Config::parse(&text, "t.toml").unwrap_err();
            assert_eq!((e.file.as_str(), e.line), ("t.toml", line), "{extra}: {e}");
            assert!(e.message.contains(want), "{extra}: {e}");
        }
        // The line of the right [[nodes]] entry when several set the key.
        let text = format!(
            "{BASE}gpu_numa = [0, 0, 0, 0, 1, 1, 1, 1]\n[[nodes]]\nnames = \"g3\"\ncpus = 1\n\
             memory = \"1G\"\ngpus = 2\ngpu_numa = [0, 0, 0, 0, 1, 1, 1, 1]\n"
        );
        let e = Config::parse(&text, "t.toml").unwrap_err();
        assert_eq!(e.line, 18, "{e}");
    }

    #[test]
    fn partition_access_keys() {
        let text = format!(
            "{BASE}[[qos]]\nname = \"high\"\n[[accounts]]\nname = \"ml\"\n[[accounts]]\nname = \"guests\"\n\
             [[partitions]]\nname = \"gpu\"\nnodes = \"g[1-2]\"\nallow_accounts = [\"ml\"]\n\
             allow_qos = [\"high\", \"normal\"]\noversubscribe = \"exclusive\"\n\
             [[partitions]]\nname = \"cpu\"\nnodes = \"c1\"\ndeny_accounts = [\"guests\"]\n"
        );
        let c = Config::parse(&text, "t.toml").unwrap();
        let parts = c.partition_list();
        assert!(parts[0].exclusive() && !parts[1].exclusive());
        assert_eq!(parts[1].oversubscribe, OverSubscribe::No);
        assert!(parts[0].allows_account("ml") && !parts[0].allows_account("guests"));
        assert!(parts[1].allows_account("ml") && !parts[1].allows_account("guests"));
        assert!(parts[0].allows_qos("high") && !parts[0].allows_qos("low"));
        assert!(parts[1].allows_qos("anything"));

        let part = "[[partitions]]\nname = \"p\"\nnodes = \"ALL\"\n";
        let accounts = "[[accounts]]\nname = \"ml\"\n";
        let cases = [
            (
                "oversubscribe = \"FORCE\"\n",
                "",
                "oversubscribe: unknown OverSubscribe `FORCE`",
            ),
            (
                "allow_accounts = [\"ml\"]\ndeny_accounts = [\"ml\"]\n",
                "",
                "deny_accounts: set allow_accounts or deny_accounts, not both",
            ),
            (
                "allow_accounts = [\"nobody\"]\n",
                accounts,
                "allow_accounts: unknown account `nobody`",
            ),
            (
                "deny_accounts = [\"nobody\"]\n",
                accounts,
                "deny_accounts: unknown account `nobody`",
            ),
            (
                "allow_qos = [\"gold\"]\n",
                "",
                "allow_qos: unknown QOS `gold`",
            ),
        ];
        for (extra, before, want) in cases {
            let text = format!("{BASE}{before}{part}{extra}");
            let e = Config::parse(&text, "t.toml").unwrap_err();
            let line = text.lines().count() - extra.lines().count() + 1;
            let line = if want.starts_with("deny_accounts: set") {
                line + 1
            } else {
                line
            };
            assert_eq!(e.line, line, "{extra}: {e}");
            assert!(e.message.contains(want), "{extra}: {e}");
        }
        // Without [[accounts]], any account name is accepted (Slurm does not check).
        let text = format!("{BASE}{part}allow_accounts = [\"anyone\"]\n");
        assert!(Config::parse(&text, "t.toml").is_ok());
    }
}

#[cfg(test)]
mod placement_sample_tests {
    use super::*;

    /// The commented placement keys of `conf/drover.toml` parse and say what the
    /// defaults are.
    #[allow(
        clippy::disallowed_methods,
        reason = "test code: reads the sample configs of conf/"
    )]
    #[test]
    fn commented_placement_keys_of_the_sample_parse() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../conf/drover.toml");
        let text = std::fs::read_to_string(path).unwrap();
        let keys = [
            "gpu_numa",
            "nvlink_domains",
            "whole_shared_gpus",
            "allow_accounts",
            "deny_accounts",
            "allow_qos",
            "oversubscribe",
        ];
        let mut found = 0;
        let uncommented: Vec<String> = text
            .lines()
            .map(|l| match l.strip_prefix("# ") {
                Some(rest) if keys.iter().any(|k| rest.starts_with(&format!("{k} ="))) => {
                    found += 1;
                    rest.to_string()
                }
                _ => l.to_string(),
            })
            .collect();
        assert_eq!(found, keys.len());
        let with = Config::parse(&uncommented.join("\n"), "drover.toml").unwrap();
        let without = Config::parse(&text, "drover.toml").unwrap();
        assert_eq!(with.node_list(), without.node_list());
        assert_eq!(with.partition_list(), without.partition_list());
    }

    /// The commented time limits of the sample's accounts and QOS parse and are what
    /// they say.
    #[allow(
        clippy::disallowed_methods,
        reason = "test code: reads the sample configs of conf/"
    )]
    #[test]
    fn commented_time_limits_of_the_sample_parse() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../conf/drover.toml");
        let text = std::fs::read_to_string(path).unwrap();
        let keys = ["max_tres_mins", "grp_wall", "grp_tres_mins"];
        let uncommented: Vec<&str> = text
            .lines()
            .map(|l| match l.strip_prefix("# ") {
                Some(rest) if keys.iter().any(|k| rest.starts_with(&format!("{k} ="))) => rest,
                _ => l,
            })
            .collect();
        let config = Config::parse(&uncommented.join("\n"), "drover.toml").unwrap();
        let a = crate::assoc::Associations::from_config(&config);
        let ml = &a.accounts["ml"].limits;
        assert_eq!(ml.max_tres_mins_per_job["cpu"], 600_000);
        assert_eq!(ml.grp_wall_min, Some(30 * 24 * 60));
        assert!(a.qos["normal"].limits.grp_wall_min.is_none());
    }

    /// The commented client bounds of `[controller]` in `conf/drover.toml` parse and
    /// are the defaults.
    #[allow(
        clippy::disallowed_methods,
        reason = "test code: reads the sample configs of conf/"
    )]
    #[test]
    fn commented_controller_keys_of_the_sample_are_the_defaults() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../conf/drover.toml");
        let text = std::fs::read_to_string(path).unwrap();
        let keys = [
            "max_connections",
            "max_streams_per_connection",
            "idle_timeout_s",
            "request_timeout_s",
            "client_read_timeout_s",
            "keepalive_s",
            "state_min_free_mb",
        ];
        let mut found = 0;
        let uncommented: Vec<&str> = text
            .lines()
            .map(|l| match l.strip_prefix("# ") {
                Some(rest) if keys.iter().any(|k| rest.starts_with(&format!("{k} ="))) => {
                    found += 1;
                    rest
                }
                _ => l,
            })
            .collect();
        assert_eq!(found, keys.len());
        let with = Config::parse(&uncommented.join("\n"), "drover.toml").unwrap();
        let without = Config::parse(&text, "drover.toml").unwrap();
        assert_eq!(with.controller, without.controller);
        assert_eq!(
            with.controller.max_connections,
            ControllerConfig::default().max_connections
        );
    }
}
