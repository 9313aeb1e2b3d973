//! The controller's vocabulary: the domain commands the gRPC front builds from the wire
//! (`service`), the answers the rules give, and why a command is refused.
//!
//! Nothing here is a wire type: the state owner and the rules never see `v1::*` or
//! `tonic::Status`. `Rejection` becomes a gRPC status in one place (`service`).

use model::filter::JobFilter;
use model::{JobId, JobPayload, JobSpec, Time};

/// A user id.
pub type Uid = u32;

/// Who asks: the uid the request's credential proved, the user's name and their
/// AdminLevel. Operators (and root) may act on any job and node; account coordinators
/// on their accounts' jobs (the rules ask the associations).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requester {
    pub uid: Uid,
    pub user: String,
    pub level: model::assoc::AdminLevel,
}

impl Requester {
    /// Root.
    pub fn root() -> Requester {
        Requester {
            uid: 0,
            user: "root".into(),
            level: model::assoc::AdminLevel::Administrator,
        }
    }

    /// A user without an AdminLevel.
    pub fn user(uid: Uid, user: &str) -> Requester {
        Requester {
            uid,
            user: user.to_string(),
            level: model::assoc::AdminLevel::None,
        }
    }

    /// An operator or administrator (root is one).
    pub fn is_operator(&self) -> bool {
        self.uid == 0 || self.level >= model::assoc::AdminLevel::Operator
    }

    /// May they act on `job` (cancel, hold, update it, read its script, see it under
    /// `private_data = ["jobs"]`): its owner, a coordinator of its account, or an
    /// operator.
    pub fn may_act_on(&self, assocs: &model::assoc::Associations, job: &model::Job) -> bool {
        self.is_operator()
            || job.spec.uid == self.uid
            || assocs.coordinates(&self.user, &job.spec.account)
    }
}

/// Why a command changed nothing, with the words Slurm prints.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// The request itself is wrong (a bad value, an impossible job).
    #[error("{0}")]
    Invalid(String),
    /// It names a job, node or step that does not exist.
    #[error("{0}")]
    NotFound(String),
    #[error("Access/permission denied")]
    PermissionDenied,
    /// Not now: the job or node is in the wrong state for it.
    #[error("{0}")]
    WrongState(String),
    /// Not yet: the job cannot take it while it waits or starts; asked again later,
    /// it may (Slurm's ESLURM_TRANSITION_STATE_NO_UPDATE, which scancel retries).
    #[error("Job can not be altered now, try again later")]
    NotYet,
    /// The state store has no room for the change: nothing was changed, and writes
    /// are refused until space is freed.
    #[error("state store full: {0}")]
    StoreFull(String),
    /// The controller is stopping.
    #[error("controller is shutting down")]
    ShuttingDown,
    /// Not now, for want of room: `max_job_count` live jobs are held (Slurm's EAGAIN).
    #[error("Resource temporarily unavailable")]
    Busy,
}

impl Rejection {
    pub fn invalid(text: impl Into<String>) -> Rejection {
        Rejection::Invalid(text.into())
    }
}

impl From<crate::validate::Rejected> for Rejection {
    fn from(e: crate::validate::Rejected) -> Rejection {
        Rejection::Invalid(e.0)
    }
}

/// `strigger --set`: a trigger, owned by the requester.
#[derive(Debug, Clone)]
pub struct SetTrigger {
    pub spec: model::trigger::TriggerSpec,
    pub requester: Requester,
    /// The requester's group, that the program runs with.
    pub gid: u32,
}

/// `strigger --clear`: which of the requester's triggers to remove.
#[derive(Debug, Clone)]
pub struct ClearTriggers {
    pub filter: model::trigger::TriggerFilter,
    pub requester: Requester,
}

/// `sacctmgr add|modify|delete`: a change to the accounts, users and QOS.
#[derive(Debug, Clone)]
pub struct ChangeAccounting {
    pub requester: Requester,
    pub change: model::assoc_change::AssocChange,
    /// Say what it would change; change nothing.
    pub dry_run: bool,
}

/// `sbatch`: a job to queue (or, with `--test-only`, to estimate without queueing:
/// `rules::jobs::estimate`).
#[derive(Debug, Clone)]
pub struct Submit {
    pub spec: JobSpec,
    pub payload: JobPayload,
    /// The Unix groups its user is a member of, by name, as the shell looked them up
    /// (for partitions' AllowGroups).
    pub user_groups: Vec<String>,
}

/// What a submit answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    pub job_id: JobId,
    /// `--test-only`: when and where it would start (0 and empty: not now).
    pub estimated_start: Time,
    pub estimated_nodes: String,
}

/// `scancel` (signal 0 cancels) and `scancel -s SIG`.
#[derive(Debug, Clone)]
pub struct SignalJobs {
    /// Slurm's id forms (`12`, `12_3`, `12_[1-3]`), each resolved on its own; empty:
    /// every live job the filter selects.
    pub job_ids: Vec<String>,
    /// The other parts of the selection (its `ids` are unused: see `job_ids`).
    pub filter: JobFilter,
    /// 0 cancels the job; any other signal is sent to its processes.
    pub signal: i32,
    /// Which of the job's processes a signal reaches.
    pub scope: SignalScope,
    pub requester: Requester,
}

/// Which of a job's processes `scancel -s SIG` reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalScope {
    /// The steps' tasks, on every node (Slurm's default).
    Steps,
    /// `--batch`: the batch shell alone.
    Batch,
    /// `--full`: the batch shell and every process of its group (the steps' sruns
    /// pass it on to their tasks).
    Full,
}

/// `scontrol hold|uhold|release|requeue|requeuehold|suspend|resume`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlOp {
    Hold,
    Uhold,
    Release,
    Requeue,
    RequeueHold,
    /// `requeuehold State=SpecialExit`: requeued and held in SPECIAL_EXIT.
    RequeueSpecialExit,
    Suspend,
    Resume,
    /// `scontrol top`: the jobs, in the order named, first among their user's
    /// pending jobs of the same partition, account and QOS.
    Top,
}

/// `scontrol notify JOB MESSAGE`.
#[derive(Debug, Clone)]
pub struct NotifyJob {
    pub job_id: JobId,
    pub message: String,
    pub requester: Requester,
}

#[derive(Debug, Clone)]
pub struct ControlJobs {
    pub op: ControlOp,
    pub job_ids: Vec<String>,
    /// `requeue incomplete`: only running or suspended jobs are requeued; the others
    /// are left as they are, without an error.
    pub incomplete: bool,
    pub requester: Requester,
}

/// `scontrol update job`: the changes, applied in order to each job named.
#[derive(Debug, Clone)]
pub struct UpdateJobs {
    pub job_ids: Vec<String>,
    pub changes: Vec<model::job_update::JobChange>,
    pub requester: Requester,
}

/// `sacctmgr modify job`: jobs' accounting records (comment, DerivedExitCode), in any
/// state.
#[derive(Debug, Clone)]
pub struct ModifyJobRecords {
    pub job_ids: Vec<String>,
    pub changes: Vec<model::job_update::JobChange>,
    pub requester: Requester,
}

/// One job id of a bulk command and what became of it (empty error: done).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobResult {
    /// The id as the user wrote it.
    pub job_id: String,
    pub error: Option<Rejection>,
}

/// What `scontrol update node State=...` asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeAction {
    Drain,
    Down,
    /// RESUME, IDLE or UNDRAIN.
    Resume,
}

#[derive(Debug, Clone)]
pub struct UpdateNodes {
    /// A hostlist expression.
    pub nodes: String,
    /// `None`: the state stays.
    pub action: Option<NodeAction>,
    pub reason: String,
    /// `AvailableFeatures=`/`ActiveFeatures=`: the nodes' features from now on.
    pub features: Option<Vec<String>>,
    pub requester: Requester,
}

/// `srun` inside an allocation starts a step.
#[derive(Debug, Clone)]
pub struct CreateStep {
    pub job_id: JobId,
    pub name: String,
    /// `-n`, `-N`, `--ntasks-per-node`, `-c`.
    pub request: model::step::StepRequest,
    /// `-w`: nodes of the job the step must run on; `-x`: nodes it must not.
    pub nodelist: Vec<String>,
    pub exclude: Vec<String>,
    /// `-r`: the step's nodes start at this one of the job's.
    pub relative: u32,
    /// `-m arbitrary`: the node of each task (`model::step::arbitrary_layout`); empty:
    /// the request's layout.
    pub task_nodes: Vec<String>,
    /// `-t`: the step's own time limit, in minutes.
    pub time_limit_min: Option<u32>,
    /// Its GPU options, as srun was given them.
    pub gpu_request: model::StepGpuRequest,
    pub requester: Requester,
}

/// `scontrol update StepId=JOB[.STEP] TimeLimit=`: the time limit of one running step
/// of a job, or (`step_id` `None`) of all of them.
#[derive(Debug, Clone)]
pub struct UpdateStep {
    pub job_id: JobId,
    pub step_id: Option<u32>,
    pub time_limit: model::job_update::TimeLimitChange,
    pub requester: Requester,
}

/// A step that started: its id and, node after node, the job's share of each node of
/// the step with the global ids of the tasks it runs there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartedStep {
    pub step_id: u32,
    pub nodes: Vec<(model::NodeAllocation, Vec<u32>)>,
}

#[derive(Debug, Clone)]
pub struct CompleteStep {
    pub job_id: JobId,
    pub step_id: u32,
    pub exit_code: i32,
    pub exit_signal: i32,
    /// What the step used on all its nodes; `None`: nothing counted it.
    pub usage: Option<model::StepUsage>,
    pub requester: Requester,
}

/// A job as a node daemon has it: the run it started (`restart_count`), whether the
/// job is stopped, whether it is being killed, and what its GPUs did so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobOnNode {
    pub job_id: JobId,
    pub restart_count: u32,
    pub suspended: bool,
    pub ending: bool,
    pub gpu_use: Option<model::gpu_use::GpuUse>,
}

/// A node daemon (re)registers: its resources and the jobs it has.
#[derive(Debug, Clone)]
pub struct Registration {
    pub node: String,
    /// host:port of its `NodeAgent` service.
    pub addr: String,
    pub cpus: u32,
    pub memory_mb: u64,
    pub gpus: Vec<model::GpuDevice>,
    /// The CPU ids of each NUMA node as the node found them (empty: not known).
    pub numa_cpus: Vec<Vec<u32>>,
    pub features: Vec<String>,
    pub boot_time: Time,
    pub jobs: Vec<JobOnNode>,
    /// Its free memory and load, when it said.
    pub load: Option<model::node::NodeLoad>,
}

/// A node daemon's heartbeat: the jobs it has, and what its health check said.
#[derive(Debug, Clone)]
pub struct Heartbeat {
    pub node: String,
    /// The health check failed: its output. Empty: healthy.
    pub unhealthy: String,
    pub jobs: Vec<JobOnNode>,
    /// Its free memory and load, when it said.
    pub load: Option<model::node::NodeLoad>,
}

/// What the controller tells a node that registers or heartbeats: the corrections
/// that make what it runs match the durable state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeOrders {
    /// The controller does not know the node (it should register).
    pub register_again: bool,
    pub kill: Vec<JobId>,
    pub suspend: Vec<JobId>,
    pub resume: Vec<JobId>,
}

/// How a job's run ended on its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndKind {
    /// The script exited by itself.
    Exited,
    Cancelled,
    Timeout,
    OutOfMemory,
    /// The node could not start it.
    LaunchFailed,
    /// The site's prolog failed there: the job did not start, and is requeued.
    PrologFailed,
}

/// A node reports the end of a job's run.
#[derive(Debug, Clone)]
pub struct JobEnd {
    pub node: String,
    pub job_id: JobId,
    pub restart_count: u32,
    pub kind: EndKind,
    pub exit_code: i32,
    pub exit_signal: i32,
    /// 0: the report's arrival.
    pub end_time: Time,
    pub message: String,
    /// The node asks to be drained for this reason (`Prolog error`, `Epilog error`,
    /// `Kill task failed`); empty: it does not.
    pub drain_reason: String,
    /// What the batch step used; `None`: nothing counted it.
    pub batch_usage: Option<model::StepUsage>,
}

/// `scontrol create|update|delete partition`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionOp {
    Create,
    Update,
    Delete,
}

/// A partition change: the partition's name and what to set (as scontrol parsed its
/// `PartitionName=x Key=Value...` words with `model::partition_change`).
#[derive(Debug, Clone)]
pub struct ChangePartition {
    pub op: PartitionOp,
    pub change: model::partition_change::PartitionChange,
    pub requester: Requester,
}

/// `scontrol create|update|delete reservation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReservationOp {
    Create,
    Update,
    Delete,
}

#[derive(Debug, Clone)]
pub struct ChangeReservation {
    pub op: ReservationOp,
    pub change: model::reservation_change::ReservationChange,
    pub requester: Requester,
}
