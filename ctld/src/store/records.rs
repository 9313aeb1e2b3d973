//! The records the store keeps, format 14: types of their own, converted from and to
//! `model`, so that a change to a domain type never changes what is on disk by
//! accident (the golden-bytes tests below fail first). Each record is encoded with
//! postcard behind a one-byte format version.
//!
//! To change a record: copy the types of the current format into a module of their
//! own (as `v3` keeps format 3), or, to add fields to a record, append a struct of
//! them (as format 5 appended [`JobFields5`] to format 4's [`JobFields4`], and format
//! 6 [`JobFields6`], format 7 [`NodeFields7`] to a node, format 8 [`JobFields8`]
//! and [`AssociationsFields8`], format 9 [`JobFields9`], format 10
//! [`JobFields10`], format 11 [`JobFields11`], format 12 [`PartitionFields12`]
//! to a partition, format 13 [`JobFields13`] to a job, [`UsageFields13`] to
//! usage, [`AssociationsFields13`] and [`OtherClustersFields13`] to the associations,
//! and format 14 [`JobFields14`] to a job: postcard writes a struct
//! as its fields one after another, so an old record is a prefix of the new one); bump
//! [`FORMAT`], convert the old records in `migrate`, and pin the new bytes.
//!
//! A new record under a new key needs no new format (a store without the key has none
//! of it): other clusters' associations ([`OtherClustersRecord`]) came so.
//!
//! Reasons are kept as Slurm's spelling and read back with `Reason::parse`, which
//! refuses any word it does not know; every other enum is a record enum.

use super::StoreError;
use model::assoc::{
    Account, AccountTree, AdminLevel, Associations, Limits, Qos, User, UserAssoc,
    qos_list_from_parts, qos_list_parts,
};
use model::config::{OverSubscribe, Partition, PartitionState};
use model::gpu_use::{GpuIdleAction, GpuIdlePolicy, GpuUse};
use model::mail::MailType;
use model::trigger::{Trigger, TriggerEvent, TriggerResource, TriggerSpec};
use model::usage::AssocUsage;
use model::{
    Allocation, ArraySpec, Job, JobPayload, JobSpec, JobState, KillCause, KillRequest, Node,
    NodeAllocation, NodeHealth, PreemptMode, Preemption, Reason, Reservation, SignalSpec, Step,
};
use serde::{Deserialize, Serialize, de::DeserializeOwned};

/// The format every record is written in.
pub const FORMAT: u8 = 14;

/// `FORMAT` then the postcard bytes.
pub fn encode<T: Serialize>(record: &T) -> Result<Vec<u8>, StoreError> {
    let mut out = vec![FORMAT];
    out.extend(postcard::to_stdvec(record).map_err(StoreError::Encode)?);
    Ok(out)
}

/// Decodes postcard bytes of a record (after its version byte); `what` names it.
pub fn decode_body<T: DeserializeOwned>(
    what: &dyn Fn() -> String,
    body: &[u8],
) -> Result<T, StoreError> {
    postcard::from_bytes(body).map_err(|e| StoreError::Decode {
        key: what(),
        reason: e.to_string(),
    })
}

fn bad(what: &dyn Fn() -> String, reason: String) -> StoreError {
    StoreError::Decode {
        key: what(),
        reason,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobStateRecord {
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
    /// Appended: records of earlier formats never hold it, so their bytes are unchanged.
    SpecialExit,
}

impl From<JobState> for JobStateRecord {
    fn from(s: JobState) -> Self {
        use JobStateRecord as R;
        match s {
            JobState::Pending => R::Pending,
            JobState::Running => R::Running,
            JobState::Suspended => R::Suspended,
            JobState::Completing => R::Completing,
            JobState::Completed => R::Completed,
            JobState::Failed => R::Failed,
            JobState::Cancelled => R::Cancelled,
            JobState::Timeout => R::Timeout,
            JobState::NodeFail => R::NodeFail,
            JobState::OutOfMemory => R::OutOfMemory,
            JobState::Preempted => R::Preempted,
            JobState::Requeued => R::Requeued,
            JobState::BootFail => R::BootFail,
            JobState::Deadline => R::Deadline,
            JobState::SpecialExit => R::SpecialExit,
        }
    }
}

impl From<JobStateRecord> for JobState {
    fn from(s: JobStateRecord) -> Self {
        use JobStateRecord as R;
        match s {
            R::Pending => JobState::Pending,
            R::Running => JobState::Running,
            R::Suspended => JobState::Suspended,
            R::Completing => JobState::Completing,
            R::Completed => JobState::Completed,
            R::Failed => JobState::Failed,
            R::Cancelled => JobState::Cancelled,
            R::Timeout => JobState::Timeout,
            R::NodeFail => JobState::NodeFail,
            R::OutOfMemory => JobState::OutOfMemory,
            R::Preempted => JobState::Preempted,
            R::Requeued => JobState::Requeued,
            R::BootFail => JobState::BootFail,
            R::Deadline => JobState::Deadline,
            R::SpecialExit => JobState::SpecialExit,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PreemptModeRecord {
    Off,
    Cancel,
    Requeue,
    Suspend,
}

impl From<PreemptMode> for PreemptModeRecord {
    fn from(m: PreemptMode) -> Self {
        match m {
            PreemptMode::Off => PreemptModeRecord::Off,
            PreemptMode::Cancel => PreemptModeRecord::Cancel,
            PreemptMode::Requeue => PreemptModeRecord::Requeue,
            PreemptMode::Suspend => PreemptModeRecord::Suspend,
        }
    }
}

impl From<PreemptModeRecord> for PreemptMode {
    fn from(m: PreemptModeRecord) -> Self {
        match m {
            PreemptModeRecord::Off => PreemptMode::Off,
            PreemptModeRecord::Cancel => PreemptMode::Cancel,
            PreemptModeRecord::Requeue => PreemptMode::Requeue,
            PreemptModeRecord::Suspend => PreemptMode::Suspend,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArraySpecRecord {
    pub task_ids: Vec<u32>,
    pub max_running: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignalSpecRecord {
    pub signal: i32,
    pub seconds_before_end: u32,
    pub batch_only: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobSpecRecord {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub user: String,
    pub account: String,
    /// The job's partition, then the others a pending job may start in, as Slurm
    /// writes a partition list (`gpu,debug`): a job of one partition has the bytes of
    /// the formats before lists, which had no comma in a partition's name.
    pub partition: String,
    pub qos: String,
    pub script_args: Vec<String>,
    pub work_dir: String,
    pub stdout_pattern: String,
    pub stderr_pattern: String,
    pub stdin_path: String,
    pub open_mode_append: bool,
    pub num_nodes: u32,
    pub num_tasks: u32,
    pub cpus_per_task: u32,
    pub ntasks_per_node: u32,
    pub mem_per_node_mb: u64,
    pub mem_per_cpu_mb: u64,
    pub gpus: u32,
    pub gpus_per_node: u32,
    pub gpu_type: String,
    pub time_limit_min: Option<u32>,
    pub signal: Option<SignalSpecRecord>,
    pub requeue: bool,
    pub comment: String,
    pub wckey: String,
    pub begin_time: i64,
    pub hold: bool,
    pub dependency: String,
    pub array: Option<ArraySpecRecord>,
    pub submit_host: String,
    pub reservation: String,
    pub constraint: String,
    pub nodelist: String,
    pub exclude: String,
    pub exclusive: bool,
    pub nice: i32,
    pub kill_on_invalid_dep: bool,
    pub command: String,
}

impl From<&JobSpec> for JobSpecRecord {
    fn from(s: &JobSpec) -> Self {
        JobSpecRecord {
            name: s.name.clone(),
            uid: s.uid,
            gid: s.gid,
            user: s.user.clone(),
            account: s.account.clone(),
            partition: s.partition_list(),
            qos: s.qos.clone(),
            script_args: s.script_args.clone(),
            work_dir: s.work_dir.clone(),
            stdout_pattern: s.stdout_pattern.clone(),
            stderr_pattern: s.stderr_pattern.clone(),
            stdin_path: s.stdin_path.clone(),
            open_mode_append: s.open_mode_append,
            num_nodes: s.num_nodes,
            num_tasks: s.num_tasks,
            cpus_per_task: s.cpus_per_task,
            ntasks_per_node: s.ntasks_per_node,
            mem_per_node_mb: s.mem_per_node_mb,
            mem_per_cpu_mb: s.mem_per_cpu_mb,
            gpus: s.gpus,
            gpus_per_node: s.gpus_per_node,
            gpu_type: s.gpu_type.clone(),
            time_limit_min: s.time_limit_min,
            signal: s.signal.as_ref().map(|x| SignalSpecRecord {
                signal: x.signal,
                seconds_before_end: x.seconds_before_end,
                batch_only: x.batch_only,
            }),
            requeue: s.requeue,
            comment: s.comment.clone(),
            wckey: s.wckey.clone(),
            begin_time: s.begin_time,
            hold: s.hold,
            dependency: s.dependency.clone(),
            array: s.array.as_ref().map(|a| ArraySpecRecord {
                task_ids: a.task_ids.clone(),
                max_running: a.max_running,
            }),
            submit_host: s.submit_host.clone(),
            reservation: s.reservation.clone(),
            constraint: s.constraint.clone(),
            nodelist: s.nodelist.clone(),
            exclude: s.exclude.clone(),
            exclusive: s.exclusive,
            nice: s.nice,
            kill_on_invalid_dep: s.kill_on_invalid_dep,
            command: s.command.clone(),
        }
    }
}

impl From<JobSpecRecord> for JobSpec {
    fn from(s: JobSpecRecord) -> Self {
        let mut spec = JobSpec {
            name: s.name,
            uid: s.uid,
            gid: s.gid,
            user: s.user,
            account: s.account,
            partition: String::new(),
            more_partitions: Vec::new(),
            qos: s.qos,
            script_args: s.script_args,
            work_dir: s.work_dir,
            stdout_pattern: s.stdout_pattern,
            stderr_pattern: s.stderr_pattern,
            stdin_path: s.stdin_path,
            open_mode_append: s.open_mode_append,
            num_nodes: s.num_nodes,
            num_tasks: s.num_tasks,
            cpus_per_task: s.cpus_per_task,
            ntasks_per_node: s.ntasks_per_node,
            mem_per_node_mb: s.mem_per_node_mb,
            mem_per_cpu_mb: s.mem_per_cpu_mb,
            gpus: s.gpus,
            gpus_per_node: s.gpus_per_node,
            gpu_type: s.gpu_type,
            time_limit_min: s.time_limit_min,
            signal: s.signal.map(|x| SignalSpec {
                signal: x.signal,
                seconds_before_end: x.seconds_before_end,
                batch_only: x.batch_only,
            }),
            requeue: s.requeue,
            comment: s.comment,
            wckey: s.wckey,
            begin_time: s.begin_time,
            hold: s.hold,
            dependency: s.dependency,
            array: s.array.map(|a| ArraySpec {
                task_ids: a.task_ids,
                max_running: a.max_running,
            }),
            submit_host: s.submit_host,
            reservation: s.reservation,
            constraint: s.constraint,
            nodelist: s.nodelist,
            exclude: s.exclude,
            exclusive: s.exclusive,
            nice: s.nice,
            priority: None,
            site_factor: 0,
            interactive: false,
            kill_on_invalid_dep: s.kill_on_invalid_dep,
            command: s.command,
            // Formats 5, 6 and 9 keep them beside these fields (`JobFields5`,
            // `JobFields6`, `JobFields9`).
            mem_whole_node: false,
            max_nodes: 0,
            mail_types: Vec::new(),
            mail_user: String::new(),
            details: Default::default(),
        };
        spec.set_partition_list(&s.partition);
        spec
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeAllocationRecord {
    pub node: String,
    pub cpus: u32,
    pub mem_mb: u64,
    pub gpus: Vec<u32>,
    pub cpu_ids: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepRecord {
    pub id: Option<u32>,
    pub name: String,
    pub state: JobStateRecord,
    pub start_time: i64,
    pub end_time: i64,
    pub exit_code: i32,
    pub exit_signal: i32,
    pub num_tasks: u32,
}

impl From<&Step> for StepRecord {
    fn from(s: &Step) -> Self {
        StepRecord {
            id: s.id,
            name: s.name.clone(),
            state: s.state.into(),
            start_time: s.start_time,
            end_time: s.end_time,
            exit_code: s.exit_code,
            exit_signal: s.exit_signal,
            num_tasks: s.num_tasks,
        }
    }
}

impl From<StepRecord> for Step {
    fn from(s: StepRecord) -> Self {
        Step {
            id: s.id,
            name: s.name,
            state: s.state.into(),
            start_time: s.start_time,
            end_time: s.end_time,
            exit_code: s.exit_code,
            exit_signal: s.exit_signal,
            num_tasks: s.num_tasks,
            nodes: Vec::new(),
            cpus: 0,
            usage: None,
            time_limit_min: None,
            timed_out: false,
            gpu_request: Default::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreemptionRecord {
    pub preemptor: u32,
    pub mode: PreemptModeRecord,
    pub time: i64,
    pub grace_secs: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum KillCauseRecord {
    Cancel {
        by: u32,
    },
    Requeue {
        hold: bool,
    },
    Preempt,
    /// Appended: records of earlier formats never hold it, so their bytes are unchanged.
    RequeueSpecialExit,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KillRecord {
    pub cause: KillCauseRecord,
    pub time: i64,
}

/// A job: every field of format 4, then those formats 5, 6, 8, 9, 10, 11 and 12
/// added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    pub fields: JobFields4,
    pub added: JobFields5,
    pub added6: JobFields6,
    pub added8: JobFields8,
    pub added9: JobFields9,
    pub added10: JobFields10,
    pub added11: JobFields11,
    pub added12: JobFields12,
    pub added13: JobFields13,
    pub added14: JobFields14,
}

/// What format 14 added to a job: what each step's tasks read and wrote, one per step
/// of `JobFields4::steps` (`None`: not counted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct JobFields14 {
    pub step_disk: Vec<Option<TaskDiskRecord>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskDiskRecord {
    pub read: TaskPeakRecord,
    pub write: TaskPeakRecord,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskPeakRecord {
    pub max_bytes: u64,
    pub max_task: u32,
    pub max_node: String,
    pub sum_bytes: u64,
}

impl From<&model::TaskPeak> for TaskPeakRecord {
    fn from(p: &model::TaskPeak) -> Self {
        TaskPeakRecord {
            max_bytes: p.max_bytes,
            max_task: p.max_task,
            max_node: p.max_node.clone(),
            sum_bytes: p.sum_bytes,
        }
    }
}

impl From<TaskPeakRecord> for model::TaskPeak {
    fn from(p: TaskPeakRecord) -> Self {
        model::TaskPeak {
            max_bytes: p.max_bytes,
            max_task: p.max_task,
            max_node: p.max_node,
            sum_bytes: p.sum_bytes,
        }
    }
}

/// What format 13 added to a job: its DerivedExitCode as `sacctmgr modify job` set it,
/// and when it became eligible (`None` in a record from before: its submit or begin
/// time, as was shown then).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct JobFields13 {
    pub derived_exit_status: Option<i32>,
    pub eligible_time: Option<i64>,
}

/// What format 12 added to a job: the priority an operator fixed, its SiteFactor, and
/// whether it is an interactive allocation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct JobFields12 {
    pub priority: Option<u32>,
    pub site_factor: i32,
    pub interactive: bool,
}

/// A job as format 10 wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord10 {
    pub fields: JobFields4,
    pub added: JobFields5,
    pub added6: JobFields6,
    pub added8: JobFields8,
    pub added9: JobFields9,
    pub added10: JobFields10,
}

/// What format 11 added to a job: the heterogeneous job it is a component of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct JobFields11 {
    pub het: Option<HetJobRecord>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HetJobRecord {
    pub leader: u32,
    pub offset: u32,
    pub count: u32,
}

/// A job as format 9 wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord9 {
    pub fields: JobFields4,
    pub added: JobFields5,
    pub added6: JobFields6,
    pub added8: JobFields8,
    pub added9: JobFields9,
}

/// What format 10 added to a job: its steps' own time limits and GPU requests, one
/// per step in their order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct JobFields10 {
    pub steps: Vec<StepFields10>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepFields10 {
    pub time_limit_min: Option<u32>,
    pub timed_out: bool,
    pub gpu_request: StepGpuRequestRecord,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepGpuRequestRecord {
    pub gpu_type: String,
    pub gpus: u32,
    pub gpus_per_node: u32,
    pub gpus_per_socket: u32,
    pub gpus_per_task: u32,
    pub cpus_per_gpu: u32,
    pub mem_per_gpu_mb: u64,
    pub gpu_bind: String,
    pub gpu_freq: String,
}

impl From<&model::StepGpuRequest> for StepGpuRequestRecord {
    fn from(r: &model::StepGpuRequest) -> Self {
        StepGpuRequestRecord {
            gpu_type: r.gpu_type.clone(),
            gpus: r.gpus,
            gpus_per_node: r.gpus_per_node,
            gpus_per_socket: r.gpus_per_socket,
            gpus_per_task: r.gpus_per_task,
            cpus_per_gpu: r.cpus_per_gpu,
            mem_per_gpu_mb: r.mem_per_gpu_mb,
            gpu_bind: r.gpu_bind.clone(),
            gpu_freq: r.gpu_freq.clone(),
        }
    }
}

impl From<StepGpuRequestRecord> for model::StepGpuRequest {
    fn from(r: StepGpuRequestRecord) -> Self {
        model::StepGpuRequest {
            gpu_type: r.gpu_type,
            gpus: r.gpus,
            gpus_per_node: r.gpus_per_node,
            gpus_per_socket: r.gpus_per_socket,
            gpus_per_task: r.gpus_per_task,
            cpus_per_gpu: r.cpus_per_gpu,
            mem_per_gpu_mb: r.mem_per_gpu_mb,
            gpu_bind: r.gpu_bind,
            gpu_freq: r.gpu_freq,
        }
    }
}

/// A job as format 8 wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord8 {
    pub fields: JobFields4,
    pub added: JobFields5,
    pub added6: JobFields6,
    pub added8: JobFields8,
}

/// What format 9 added to a job: the options kept as given
/// (`model::job::RequestDetails`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct JobFields9 {
    pub min_cpus_node: u32,
    pub tmp_disk_mb: u64,
    pub oversubscribe: bool,
    pub contiguous: bool,
    pub gpus_per_job: u32,
    pub gpus_per_task: u32,
    pub gpus_per_socket: u32,
    pub cpus_per_gpu: u32,
    pub mem_per_gpu_mb: u64,
    pub gpu_bind: String,
    pub gpu_freq: String,
    pub deadline: i64,
    pub time_min: u32,
    pub overcommit: bool,
}

impl From<&model::job::RequestDetails> for JobFields9 {
    fn from(d: &model::job::RequestDetails) -> Self {
        JobFields9 {
            min_cpus_node: d.min_cpus_node,
            tmp_disk_mb: d.tmp_disk_mb,
            oversubscribe: d.oversubscribe,
            contiguous: d.contiguous,
            gpus_per_job: d.gpus_per_job,
            gpus_per_task: d.gpus_per_task,
            gpus_per_socket: d.gpus_per_socket,
            cpus_per_gpu: d.cpus_per_gpu,
            mem_per_gpu_mb: d.mem_per_gpu_mb,
            gpu_bind: d.gpu_bind.clone(),
            gpu_freq: d.gpu_freq.clone(),
            deadline: d.deadline,
            time_min: d.time_min,
            overcommit: d.overcommit,
        }
    }
}

impl From<JobFields9> for model::job::RequestDetails {
    fn from(d: JobFields9) -> Self {
        model::job::RequestDetails {
            min_cpus_node: d.min_cpus_node,
            tmp_disk_mb: d.tmp_disk_mb,
            oversubscribe: d.oversubscribe,
            contiguous: d.contiguous,
            gpus_per_job: d.gpus_per_job,
            gpus_per_task: d.gpus_per_task,
            gpus_per_socket: d.gpus_per_socket,
            cpus_per_gpu: d.cpus_per_gpu,
            mem_per_gpu_mb: d.mem_per_gpu_mb,
            gpu_bind: d.gpu_bind,
            gpu_freq: d.gpu_freq,
            deadline: d.deadline,
            time_min: d.time_min,
            overcommit: d.overcommit,
        }
    }
}

/// A job as formats 6 and 7 wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord7 {
    pub fields: JobFields4,
    pub added: JobFields5,
    pub added6: JobFields6,
}

/// What format 8 added to a job: its steps' GPU use (one per step, in their order),
/// and when its QOS's GPU idle policy flagged it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct JobFields8 {
    pub step_gpu: Vec<Option<GpuUseRecord>>,
    pub gpu_idle_flagged: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuUseRecord {
    pub sampled_gpu_ms: u64,
    pub busy_gpu_ms: u64,
    pub max_memory_bytes: u64,
    pub idle_ms: u64,
}

impl From<GpuUse> for GpuUseRecord {
    fn from(u: GpuUse) -> Self {
        GpuUseRecord {
            sampled_gpu_ms: u.sampled_gpu_ms,
            busy_gpu_ms: u.busy_gpu_ms,
            max_memory_bytes: u.max_memory_bytes,
            idle_ms: u.idle_ms,
        }
    }
}

impl From<GpuUseRecord> for GpuUse {
    fn from(u: GpuUseRecord) -> Self {
        GpuUse {
            sampled_gpu_ms: u.sampled_gpu_ms,
            busy_gpu_ms: u.busy_gpu_ms,
            max_memory_bytes: u.max_memory_bytes,
            idle_ms: u.idle_ms,
        }
    }
}

/// A job as format 5 wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord5 {
    pub fields: JobFields4,
    pub added: JobFields5,
}

/// What format 6 added to a job: the most nodes of `-N min-max`, `--mail-type` and
/// `--mail-user`, and its steps' usage task by task (one per step, in their order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct JobFields6 {
    pub max_nodes: u32,
    pub mail_types: Vec<MailTypeRecord>,
    pub mail_user: String,
    pub step_tasks: Vec<Option<TaskUsageRecord>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskUsageRecord {
    pub count: u32,
    pub max_rss_bytes: u64,
    pub max_rss_task: u32,
    pub max_rss_node: String,
    pub rss_sum_bytes: u64,
    pub min_cpu_us: u64,
    pub min_cpu_task: u32,
    pub min_cpu_node: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MailTypeRecord {
    Begin,
    End,
    Fail,
    Requeue,
    InvalidDepend,
    StageOut,
    TimeLimit,
    TimeLimit90,
    TimeLimit80,
    TimeLimit50,
    ArrayTasks,
}

impl From<MailType> for MailTypeRecord {
    fn from(t: MailType) -> Self {
        match t {
            MailType::Begin => MailTypeRecord::Begin,
            MailType::End => MailTypeRecord::End,
            MailType::Fail => MailTypeRecord::Fail,
            MailType::Requeue => MailTypeRecord::Requeue,
            MailType::InvalidDepend => MailTypeRecord::InvalidDepend,
            MailType::StageOut => MailTypeRecord::StageOut,
            MailType::TimeLimit => MailTypeRecord::TimeLimit,
            MailType::TimeLimit90 => MailTypeRecord::TimeLimit90,
            MailType::TimeLimit80 => MailTypeRecord::TimeLimit80,
            MailType::TimeLimit50 => MailTypeRecord::TimeLimit50,
            MailType::ArrayTasks => MailTypeRecord::ArrayTasks,
        }
    }
}

impl From<MailTypeRecord> for MailType {
    fn from(t: MailTypeRecord) -> Self {
        match t {
            MailTypeRecord::Begin => MailType::Begin,
            MailTypeRecord::End => MailType::End,
            MailTypeRecord::Fail => MailType::Fail,
            MailTypeRecord::Requeue => MailType::Requeue,
            MailTypeRecord::InvalidDepend => MailType::InvalidDepend,
            MailTypeRecord::StageOut => MailType::StageOut,
            MailTypeRecord::TimeLimit => MailType::TimeLimit,
            MailTypeRecord::TimeLimit90 => MailType::TimeLimit90,
            MailTypeRecord::TimeLimit80 => MailType::TimeLimit80,
            MailTypeRecord::TimeLimit50 => MailType::TimeLimit50,
            MailTypeRecord::ArrayTasks => MailType::ArrayTasks,
        }
    }
}

/// What format 5 added to a job: `--mem=0`, and each step's nodes, CPUs and usage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct JobFields5 {
    pub mem_whole_node: bool,
    /// One per step of `JobFields4::steps`, in their order.
    pub steps: Vec<StepFields5>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct StepFields5 {
    pub nodes: Vec<String>,
    pub cpus: u32,
    pub usage: Option<StepUsageRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepUsageRecord {
    pub max_rss_bytes: u64,
    pub max_rss_node: String,
    pub total_cpu_us: u64,
    pub user_cpu_us: u64,
    pub system_cpu_us: u64,
}

impl From<&Job> for JobRecord {
    fn from(j: &Job) -> Self {
        JobRecord {
            fields: j.into(),
            added: JobFields5 {
                mem_whole_node: j.spec.mem_whole_node,
                steps: j
                    .steps
                    .iter()
                    .map(|s| StepFields5 {
                        nodes: s.nodes.clone(),
                        cpus: s.cpus,
                        usage: s.usage.as_ref().map(|u| StepUsageRecord {
                            max_rss_bytes: u.max_rss_bytes,
                            max_rss_node: u.max_rss_node.clone(),
                            total_cpu_us: u.total_cpu_us,
                            user_cpu_us: u.user_cpu_us,
                            system_cpu_us: u.system_cpu_us,
                        }),
                    })
                    .collect(),
            },
            added6: JobFields6 {
                max_nodes: j.spec.max_nodes,
                mail_types: j.spec.mail_types.iter().map(|&t| t.into()).collect(),
                mail_user: j.spec.mail_user.clone(),
                step_tasks: j
                    .steps
                    .iter()
                    .map(|s| {
                        let t = s.usage.as_ref()?.tasks.as_ref()?;
                        Some(TaskUsageRecord {
                            count: t.count,
                            max_rss_bytes: t.max_rss_bytes,
                            max_rss_task: t.max_rss_task,
                            max_rss_node: t.max_rss_node.clone(),
                            rss_sum_bytes: t.rss_sum_bytes,
                            min_cpu_us: t.min_cpu_us,
                            min_cpu_task: t.min_cpu_task,
                            min_cpu_node: t.min_cpu_node.clone(),
                        })
                    })
                    .collect(),
            },
            added8: JobFields8 {
                step_gpu: j
                    .steps
                    .iter()
                    .map(|s| s.usage.as_ref()?.gpu.map(Into::into))
                    .collect(),
                gpu_idle_flagged: j.gpu_idle_flagged,
            },
            added9: JobFields9::from(&j.spec.details),
            added10: JobFields10 {
                steps: j
                    .steps
                    .iter()
                    .map(|s| StepFields10 {
                        time_limit_min: s.time_limit_min,
                        timed_out: s.timed_out,
                        gpu_request: (&s.gpu_request).into(),
                    })
                    .collect(),
            },
            added11: JobFields11 {
                het: j.het.map(|h| HetJobRecord {
                    leader: h.leader,
                    offset: h.offset,
                    count: h.count,
                }),
            },
            added12: JobFields12 {
                priority: j.spec.priority,
                site_factor: j.spec.site_factor,
                interactive: j.spec.interactive,
            },
            added13: JobFields13 {
                derived_exit_status: j.derived_exit_status,
                eligible_time: Some(j.eligible_time),
            },
            added14: JobFields14 {
                step_disk: j
                    .steps
                    .iter()
                    .map(|s| {
                        let d = s.usage.as_ref()?.tasks.as_ref()?.disk.as_ref()?;
                        Some(TaskDiskRecord {
                            read: (&d.read).into(),
                            write: (&d.write).into(),
                        })
                    })
                    .collect(),
            },
        }
    }
}

impl JobRecord {
    /// A job record of format 4: nothing of what formats 5 and 6 added was known then.
    pub fn from_format_4(fields: JobFields4) -> JobRecord {
        JobRecord::from_format_5(JobRecord5 {
            fields,
            added: JobFields5::default(),
        })
    }

    /// A job record of format 5: nothing of what formats 6 and 8 added was known then.
    pub fn from_format_5(old: JobRecord5) -> JobRecord {
        JobRecord::from_format_7(JobRecord7 {
            fields: old.fields,
            added: old.added,
            added6: JobFields6::default(),
        })
    }

    /// A job record of format 6 or 7: nothing of what formats 8 and 9 added was known
    /// then.
    pub fn from_format_7(old: JobRecord7) -> JobRecord {
        JobRecord::from_format_8(JobRecord8 {
            fields: old.fields,
            added: old.added,
            added6: old.added6,
            added8: JobFields8::default(),
        })
    }

    /// A job record of format 8: the options kept as given were not.
    pub fn from_format_8(old: JobRecord8) -> JobRecord {
        JobRecord::from_format_9(JobRecord9 {
            fields: old.fields,
            added: old.added,
            added6: old.added6,
            added8: old.added8,
            added9: JobFields9::default(),
        })
    }

    /// A job record of format 9: its steps had no time limits of their own.
    pub fn from_format_9(old: JobRecord9) -> JobRecord {
        JobRecord::from_format_10(JobRecord10 {
            fields: old.fields,
            added: old.added,
            added6: old.added6,
            added8: old.added8,
            added9: old.added9,
            added10: JobFields10::default(),
        })
    }

    /// A job record of format 10: no job was part of a heterogeneous one, nor had a
    /// fixed priority.
    pub fn from_format_10(old: JobRecord10) -> JobRecord {
        JobRecord {
            fields: old.fields,
            added: old.added,
            added6: old.added6,
            added8: old.added8,
            added9: old.added9,
            added10: old.added10,
            added11: JobFields11::default(),
            added12: JobFields12::default(),
            added13: JobFields13::default(),
            added14: JobFields14::default(),
        }
    }

    /// The job this record keeps; `what` names the record in an error.
    pub fn into_job(self, what: &dyn Fn() -> String) -> Result<Job, StoreError> {
        let mut job = self.fields.into_job(what)?;
        job.spec.mem_whole_node = self.added.mem_whole_node;
        job.spec.max_nodes = self.added6.max_nodes;
        job.spec.mail_types = self.added6.mail_types.into_iter().map(Into::into).collect();
        job.spec.mail_user = self.added6.mail_user;
        job.gpu_idle_flagged = self.added8.gpu_idle_flagged;
        job.spec.details = self.added9.into();
        job.spec.priority = self.added12.priority;
        job.spec.site_factor = self.added12.site_factor;
        job.spec.interactive = self.added12.interactive;
        job.derived_exit_status = self.added13.derived_exit_status;
        job.eligible_time = self
            .added13
            .eligible_time
            .unwrap_or(job.submit_time.max(job.spec.begin_time));
        job.het = self.added11.het.map(|h| model::job::HetJob {
            leader: h.leader,
            offset: h.offset,
            count: h.count,
        });
        let mut step_tasks = self.added6.step_tasks.into_iter();
        let mut step_disk = self.added14.step_disk.into_iter();
        let mut step_gpu = self.added8.step_gpu.into_iter();
        let mut steps10 = self.added10.steps.into_iter();
        for (step, added) in job.steps.iter_mut().zip(self.added.steps) {
            if let Some(added10) = steps10.next() {
                step.time_limit_min = added10.time_limit_min;
                step.timed_out = added10.timed_out;
                step.gpu_request = added10.gpu_request.into();
            }
            let gpu = step_gpu.next().flatten().map(Into::into);
            step.nodes = added.nodes;
            step.cpus = added.cpus;
            let tasks = step_tasks.next().flatten().map(|t| model::TaskUsage {
                count: t.count,
                max_rss_bytes: t.max_rss_bytes,
                max_rss_task: t.max_rss_task,
                max_rss_node: t.max_rss_node,
                rss_sum_bytes: t.rss_sum_bytes,
                min_cpu_us: t.min_cpu_us,
                min_cpu_task: t.min_cpu_task,
                min_cpu_node: t.min_cpu_node,
                disk: None,
            });
            let disk = step_disk.next().flatten().map(|d| model::TaskDisk {
                read: d.read.into(),
                write: d.write.into(),
            });
            let tasks = tasks.map(|t| model::TaskUsage { disk, ..t });
            step.usage = added.usage.map(|u| model::StepUsage {
                max_rss_bytes: u.max_rss_bytes,
                max_rss_node: u.max_rss_node,
                total_cpu_us: u.total_cpu_us,
                user_cpu_us: u.user_cpu_us,
                system_cpu_us: u.system_cpu_us,
                tasks,
                gpu,
            });
        }
        Ok(job)
    }
}

/// A job's fields as format 4 wrote them (in format 5, the first part of a job).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobFields4 {
    pub id: u32,
    pub array_job_id: u32,
    pub array_task_id: Option<u32>,
    pub pending_tasks: Vec<u32>,
    pub spec: JobSpecRecord,
    pub state: JobStateRecord,
    /// Slurm's spelling.
    pub reason: String,
    pub submit_time: i64,
    pub start_time: i64,
    pub end_time: i64,
    pub suspend_time: i64,
    pub alloc: Option<Vec<NodeAllocationRecord>>,
    pub exit_code: i32,
    pub exit_signal: i32,
    pub cancelled_by: Option<u32>,
    pub restart_count: u32,
    pub held: bool,
    pub time_limit_min: Option<u32>,
    pub time_limit_s: Option<u32>,
    pub steps: Vec<StepRecord>,
    pub next_step_id: u32,
    pub stdout_path: String,
    pub stderr_path: String,
    pub preemption: Option<PreemptionRecord>,
    pub suspended_secs: i64,
    pub kill: Option<KillRecord>,
    pub launched: bool,
}

impl From<&Job> for JobFields4 {
    fn from(j: &Job) -> Self {
        JobFields4 {
            id: j.id,
            array_job_id: j.array_job_id,
            array_task_id: j.array_task_id,
            pending_tasks: j.pending_tasks.iter().copied().collect(),
            spec: (&j.spec).into(),
            state: j.state.into(),
            reason: j.reason.name().to_string(),
            submit_time: j.submit_time,
            start_time: j.start_time,
            end_time: j.end_time,
            suspend_time: j.suspend_time,
            alloc: j.alloc.as_ref().map(|a| {
                a.nodes
                    .iter()
                    .map(|n| NodeAllocationRecord {
                        node: n.node.clone(),
                        cpus: n.cpus,
                        mem_mb: n.mem_mb,
                        gpus: n.gpus.clone(),
                        cpu_ids: n.cpu_ids.clone(),
                    })
                    .collect()
            }),
            exit_code: j.exit_code,
            exit_signal: j.exit_signal,
            cancelled_by: j.cancelled_by,
            restart_count: j.restart_count,
            held: j.held,
            time_limit_min: j.time_limit_min,
            time_limit_s: j.time_limit_s,
            steps: j.steps.iter().map(StepRecord::from).collect(),
            next_step_id: j.next_step_id,
            stdout_path: j.stdout_path.clone(),
            stderr_path: j.stderr_path.clone(),
            preemption: j.preemption.as_ref().map(|p| PreemptionRecord {
                preemptor: p.preemptor,
                mode: p.mode.into(),
                time: p.time,
                grace_secs: p.grace_secs,
            }),
            suspended_secs: j.suspended_secs,
            kill: j.kill.map(|k| KillRecord {
                cause: match k.cause {
                    KillCause::Cancel { by } => KillCauseRecord::Cancel { by },
                    KillCause::Requeue { hold } => KillCauseRecord::Requeue { hold },
                    KillCause::Preempt => KillCauseRecord::Preempt,
                    KillCause::RequeueSpecialExit => KillCauseRecord::RequeueSpecialExit,
                },
                time: k.time,
            }),
            launched: j.launched,
        }
    }
}

impl JobFields4 {
    /// The job these fields keep, with nothing format 5 added; `what` names the
    /// record in an error.
    fn into_job(self, what: &dyn Fn() -> String) -> Result<Job, StoreError> {
        let reason = Reason::parse(&self.reason)
            .ok_or_else(|| bad(what, format!("unknown reason `{}`", self.reason)))?;
        Ok(Job {
            id: self.id,
            array_job_id: self.array_job_id,
            array_task_id: self.array_task_id,
            pending_tasks: self.pending_tasks.into_iter().collect(),
            spec: self.spec.into(),
            state: self.state.into(),
            reason,
            submit_time: self.submit_time,
            start_time: self.start_time,
            end_time: self.end_time,
            suspend_time: self.suspend_time,
            alloc: self.alloc.map(|nodes| Allocation {
                nodes: nodes
                    .into_iter()
                    .map(|n| NodeAllocation {
                        node: n.node,
                        cpus: n.cpus,
                        mem_mb: n.mem_mb,
                        gpus: n.gpus,
                        cpu_ids: n.cpu_ids,
                    })
                    .collect(),
            }),
            exit_code: self.exit_code,
            exit_signal: self.exit_signal,
            cancelled_by: self.cancelled_by,
            restart_count: self.restart_count,
            held: self.held,
            time_limit_min: self.time_limit_min,
            steps: self.steps.into_iter().map(Step::from).collect(),
            next_step_id: self.next_step_id,
            stdout_path: self.stdout_path,
            stderr_path: self.stderr_path,
            planned_start: 0,
            planned_nodes: String::new(),
            time_limit_s: self.time_limit_s,
            preemption: self.preemption.map(|p| Preemption {
                preemptor: p.preemptor,
                mode: p.mode.into(),
                time: p.time,
                grace_secs: p.grace_secs,
            }),
            suspended_secs: self.suspended_secs,
            kill: self.kill.map(|k| KillRequest {
                cause: match k.cause {
                    KillCauseRecord::Cancel { by } => KillCause::Cancel { by },
                    KillCauseRecord::Requeue { hold } => KillCause::Requeue { hold },
                    KillCauseRecord::Preempt => KillCause::Preempt,
                    KillCauseRecord::RequeueSpecialExit => KillCause::RequeueSpecialExit,
                },
                time: k.time,
            }),
            launched: self.launched,
            gpu_idle_flagged: None,
            het: None,
            notices: Default::default(),
            // Format 13's (`JobFields13`).
            derived_exit_status: None,
            eligible_time: 0,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuRecord {
    pub index: u32,
    pub gpu_type: String,
    pub uuid: String,
    pub numa: u32,
    pub nvlink: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum NodeHealthRecord {
    Unknown,
    Up,
    Down,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRecord {
    pub name: String,
    pub addr: String,
    pub cpus: u32,
    pub memory_mb: u64,
    pub gpus: Vec<GpuRecord>,
    pub features: Vec<String>,
    pub health: NodeHealthRecord,
    pub drain: bool,
    pub reason: String,
    pub reason_time: i64,
    pub reason_uid: u32,
    pub boot_time: i64,
    pub last_heartbeat: i64,
    pub added7: NodeFields7,
}

/// What format 7 added to a node: the CPU ids of each NUMA node, and which GPU each
/// share is a share of when that GPU is given whole too (`GpuDevice::whole`), one per
/// GPU in `gpus` order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct NodeFields7 {
    pub numa_cpus: Vec<Vec<u32>>,
    pub gpu_wholes: Vec<Option<u32>>,
}

/// The body of a record of an older format in this format, where a later format
/// appended a struct `T` to the record: `T` empty after the old fields (postcard writes
/// a struct as its fields in order).
pub fn body_with_empty<T: Default + Serialize>(body: &[u8]) -> Result<Vec<u8>, StoreError> {
    let added = postcard::to_stdvec(&T::default()).map_err(StoreError::Encode)?;
    Ok([body, &added].concat())
}

impl From<&Node> for NodeRecord {
    fn from(n: &Node) -> Self {
        NodeRecord {
            name: n.name.clone(),
            addr: n.addr.clone(),
            cpus: n.cpus,
            memory_mb: n.memory_mb,
            gpus: n
                .gpus
                .iter()
                .map(|g| GpuRecord {
                    index: g.index,
                    gpu_type: g.gpu_type.clone(),
                    uuid: g.uuid.clone(),
                    numa: g.numa,
                    nvlink: g.nvlink,
                })
                .collect(),
            features: n.features.clone(),
            health: match n.health {
                NodeHealth::Unknown => NodeHealthRecord::Unknown,
                NodeHealth::Up => NodeHealthRecord::Up,
                NodeHealth::Down => NodeHealthRecord::Down,
            },
            drain: n.drain,
            reason: n.reason.clone(),
            reason_time: n.reason_time,
            reason_uid: n.reason_uid,
            boot_time: n.boot_time,
            last_heartbeat: n.last_heartbeat,
            added7: NodeFields7 {
                numa_cpus: n.numa_cpus.clone(),
                gpu_wholes: n.gpus.iter().map(|g| g.whole).collect(),
            },
        }
    }
}

impl From<NodeRecord> for Node {
    fn from(n: NodeRecord) -> Self {
        Node {
            name: n.name,
            addr: n.addr,
            cpus: n.cpus,
            memory_mb: n.memory_mb,
            gpus: n
                .gpus
                .into_iter()
                .enumerate()
                .map(|(k, g)| model::GpuDevice {
                    index: g.index,
                    gpu_type: g.gpu_type,
                    uuid: g.uuid,
                    numa: g.numa,
                    nvlink: g.nvlink,
                    whole: n.added7.gpu_wholes.get(k).copied().flatten(),
                })
                .collect(),
            numa_cpus: n.added7.numa_cpus,
            features: n.features,
            health: match n.health {
                NodeHealthRecord::Unknown => NodeHealth::Unknown,
                NodeHealthRecord::Up => NodeHealth::Up,
                NodeHealthRecord::Down => NodeHealth::Down,
            },
            drain: n.drain,
            reason: n.reason,
            reason_time: n.reason_time,
            reason_uid: n.reason_uid,
            boot_time: n.boot_time,
            last_heartbeat: n.last_heartbeat,
            // Not stored: the next heartbeat says it again.
            load: None,
        }
    }
}

/// A `strigger` trigger (tree `triggers`, big-endian id → record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerRecord {
    pub id: u32,
    /// `None`: a trigger on nodes (`node_list` then names them, empty for all).
    pub job_id: Option<u32>,
    pub node_list: Option<String>,
    pub event: TriggerEventRecord,
    pub offset: i32,
    pub program: String,
    pub perm: bool,
    pub uid: u32,
    pub gid: u32,
    pub user: String,
}

/// The id the next trigger gets (key `next_id` of the tree `triggers`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextTriggerRecord {
    pub id: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TriggerEventRecord {
    Down,
    Up,
    Drained,
    Idle,
    Fini,
    Time,
}

impl From<&Trigger> for TriggerRecord {
    fn from(t: &Trigger) -> Self {
        use TriggerEvent as E;
        use TriggerEventRecord as R;
        let (job_id, node_list) = match &t.spec.resource {
            TriggerResource::Job(id) => (Some(*id), None),
            TriggerResource::Nodes(list) => (None, list.clone()),
        };
        TriggerRecord {
            id: t.id,
            job_id,
            node_list,
            event: match t.spec.event {
                E::Down => R::Down,
                E::Up => R::Up,
                E::Drained => R::Drained,
                E::Idle => R::Idle,
                E::Fini => R::Fini,
                E::Time => R::Time,
            },
            offset: t.spec.offset,
            program: t.spec.program.clone(),
            perm: t.spec.perm,
            uid: t.uid,
            gid: t.gid,
            user: t.user.clone(),
        }
    }
}

impl From<TriggerRecord> for Trigger {
    fn from(r: TriggerRecord) -> Self {
        use TriggerEvent as E;
        use TriggerEventRecord as R;
        Trigger {
            id: r.id,
            spec: TriggerSpec {
                resource: match r.job_id {
                    Some(id) => TriggerResource::Job(id),
                    None => TriggerResource::Nodes(r.node_list),
                },
                event: match r.event {
                    R::Down => E::Down,
                    R::Up => E::Up,
                    R::Drained => E::Drained,
                    R::Idle => E::Idle,
                    R::Fini => E::Fini,
                    R::Time => E::Time,
                },
                offset: r.offset,
                program: r.program,
                perm: r.perm,
            },
            uid: r.uid,
            gid: r.gid,
            user: r.user,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReservationFlagRecord {
    Maint,
    IgnoreJobs,
    Flex,
    Daily,
    Weekly,
    Overlap,
    /// Appended in format 13: the bytes of the others are unchanged.
    Replace,
}

/// A partition's state, as the store keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PartitionStateRecord {
    Up,
    Down,
    Drain,
    Inactive,
}

/// A partition's OverSubscribe, as the store keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OverSubscribeRecord {
    No,
    Yes,
    Exclusive,
}

/// A partition made or changed at run time (`scontrol create|update partition`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionRecord {
    pub name: String,
    pub nodes: Vec<String>,
    pub is_default: bool,
    pub max_time_min: Option<u32>,
    pub default_time_min: Option<u32>,
    pub max_nodes: u32,
    pub state: PartitionStateRecord,
    pub priority_job_factor: u32,
    pub priority_tier: u32,
    pub allow_accounts: Vec<String>,
    pub deny_accounts: Vec<String>,
    pub allow_qos: Vec<String>,
    pub oversubscribe: OverSubscribeRecord,
    pub added12: PartitionFields12,
}

/// What format 12 added to a partition: its DenyQos and AllowGroups.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct PartitionFields12 {
    pub deny_qos: Vec<String>,
    pub allow_groups: Vec<String>,
}

impl From<&Partition> for PartitionRecord {
    fn from(p: &Partition) -> Self {
        use PartitionStateRecord as S;
        PartitionRecord {
            name: p.name.clone(),
            nodes: p.nodes.clone(),
            is_default: p.is_default,
            max_time_min: p.max_time_min,
            default_time_min: p.default_time_min,
            max_nodes: p.max_nodes,
            state: match p.state {
                PartitionState::Up => S::Up,
                PartitionState::Down => S::Down,
                PartitionState::Drain => S::Drain,
                PartitionState::Inactive => S::Inactive,
            },
            priority_job_factor: p.priority_job_factor,
            priority_tier: p.priority_tier,
            allow_accounts: p.allow_accounts.clone(),
            deny_accounts: p.deny_accounts.clone(),
            allow_qos: p.allow_qos.clone(),
            oversubscribe: match p.oversubscribe {
                OverSubscribe::No => OverSubscribeRecord::No,
                OverSubscribe::Yes => OverSubscribeRecord::Yes,
                OverSubscribe::Exclusive => OverSubscribeRecord::Exclusive,
            },
            added12: PartitionFields12 {
                deny_qos: p.deny_qos.clone(),
                allow_groups: p.allow_groups.clone(),
            },
        }
    }
}

impl From<PartitionRecord> for Partition {
    fn from(r: PartitionRecord) -> Self {
        use PartitionStateRecord as S;
        Partition {
            name: r.name,
            nodes: r.nodes,
            is_default: r.is_default,
            max_time_min: r.max_time_min,
            default_time_min: r.default_time_min,
            max_nodes: r.max_nodes,
            state: match r.state {
                S::Up => PartitionState::Up,
                S::Down => PartitionState::Down,
                S::Drain => PartitionState::Drain,
                S::Inactive => PartitionState::Inactive,
            },
            priority_job_factor: r.priority_job_factor,
            priority_tier: r.priority_tier,
            allow_accounts: r.allow_accounts,
            deny_accounts: r.deny_accounts,
            allow_qos: r.allow_qos,
            deny_qos: r.added12.deny_qos,
            allow_groups: r.added12.allow_groups,
            oversubscribe: match r.oversubscribe {
                OverSubscribeRecord::No => OverSubscribe::No,
                OverSubscribeRecord::Yes => OverSubscribe::Yes,
                OverSubscribeRecord::Exclusive => OverSubscribe::Exclusive,
            },
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReservationRecord {
    pub name: String,
    pub start: i64,
    pub end: i64,
    pub nodes: Vec<String>,
    pub users: Vec<String>,
    pub accounts: Vec<String>,
    pub flags: Vec<ReservationFlagRecord>,
    pub partition: String,
}

impl From<&Reservation> for ReservationRecord {
    fn from(r: &Reservation) -> Self {
        use ReservationFlagRecord as R;
        use model::ReservationFlag as F;
        ReservationRecord {
            name: r.name.clone(),
            start: r.start,
            end: r.end,
            nodes: r.nodes.clone(),
            users: r.users.clone(),
            accounts: r.accounts.clone(),
            flags: r
                .flags
                .iter()
                .map(|f| match f {
                    F::Maint => R::Maint,
                    F::IgnoreJobs => R::IgnoreJobs,
                    F::Flex => R::Flex,
                    F::Daily => R::Daily,
                    F::Weekly => R::Weekly,
                    F::Overlap => R::Overlap,
                    F::Replace => R::Replace,
                })
                .collect(),
            partition: r.partition.clone(),
        }
    }
}

impl From<ReservationRecord> for Reservation {
    fn from(r: ReservationRecord) -> Self {
        use ReservationFlagRecord as R;
        use model::ReservationFlag as F;
        Reservation {
            name: r.name,
            start: r.start,
            end: r.end,
            nodes: r.nodes,
            users: r.users,
            accounts: r.accounts,
            flags: r
                .flags
                .into_iter()
                .map(|f| match f {
                    R::Maint => F::Maint,
                    R::IgnoreJobs => F::IgnoreJobs,
                    R::Flex => F::Flex,
                    R::Daily => F::Daily,
                    R::Weekly => F::Weekly,
                    R::Overlap => F::Overlap,
                    R::Replace => F::Replace,
                })
                .collect(),
            partition: r.partition,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageRecord {
    pub billing: f64,
    pub tres: Vec<(String, f64)>,
    pub at: i64,
    pub added13: UsageFields13,
}

/// What format 13 added to usage: wall-clock seconds (for GrpWall).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct UsageFields13 {
    pub wall: f64,
}

impl From<&AssocUsage> for UsageRecord {
    fn from(u: &AssocUsage) -> Self {
        UsageRecord {
            billing: u.billing,
            tres: u.tres.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            at: u.at,
            added13: UsageFields13 { wall: u.wall },
        }
    }
}

impl From<UsageRecord> for AssocUsage {
    fn from(u: UsageRecord) -> Self {
        AssocUsage {
            billing: u.billing,
            tres: u.tres.into_iter().collect(),
            wall: u.added13.wall,
            at: u.at,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PayloadRecord {
    pub script: String,
    pub env: Vec<(String, String)>,
}

impl From<&JobPayload> for PayloadRecord {
    fn from(p: &JobPayload) -> Self {
        PayloadRecord {
            script: p.script.clone(),
            env: p.env.clone(),
        }
    }
}

impl From<PayloadRecord> for JobPayload {
    fn from(p: PayloadRecord) -> Self {
        JobPayload {
            script: p.script,
            env: p.env,
        }
    }
}

/// Limits of an association or a QOS; TRES counts as (name, count) pairs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitsRecord {
    pub grp_tres: Vec<(String, u64)>,
    pub grp_tres_mins: Vec<(String, u64)>,
    pub grp_tres_run_mins: Vec<(String, u64)>,
    pub grp_jobs: Option<u32>,
    pub grp_submit: Option<u32>,
    pub max_tres_per_user: Vec<(String, u64)>,
    pub max_tres_per_job: Vec<(String, u64)>,
    pub max_jobs: Option<u32>,
    pub max_submit: Option<u32>,
    pub max_wall_min: Option<u32>,
    pub guaranteed_tres: Vec<(String, u64)>,
}

fn pairs(m: &model::tres::TresCounts) -> Vec<(String, u64)> {
    m.iter().map(|(k, v)| (k.clone(), *v)).collect()
}

impl From<&Limits> for LimitsRecord {
    fn from(l: &Limits) -> Self {
        LimitsRecord {
            grp_tres: pairs(&l.grp_tres),
            grp_tres_mins: pairs(&l.grp_tres_mins),
            grp_tres_run_mins: pairs(&l.grp_tres_run_mins),
            grp_jobs: l.grp_jobs,
            grp_submit: l.grp_submit,
            max_tres_per_user: pairs(&l.max_tres_per_user),
            max_tres_per_job: pairs(&l.max_tres_per_job),
            max_jobs: l.max_jobs,
            max_submit: l.max_submit,
            max_wall_min: l.max_wall_min,
            guaranteed_tres: pairs(&l.guaranteed_tres),
        }
    }
}

impl From<LimitsRecord> for Limits {
    fn from(l: LimitsRecord) -> Self {
        Limits {
            grp_tres: l.grp_tres.into_iter().collect(),
            grp_tres_mins: l.grp_tres_mins.into_iter().collect(),
            grp_tres_run_mins: l.grp_tres_run_mins.into_iter().collect(),
            grp_jobs: l.grp_jobs,
            grp_submit: l.grp_submit,
            max_tres_per_user: l.max_tres_per_user.into_iter().collect(),
            max_tres_per_job: l.max_tres_per_job.into_iter().collect(),
            max_jobs: l.max_jobs,
            max_submit: l.max_submit,
            max_wall_min: l.max_wall_min,
            guaranteed_tres: l.guaranteed_tres.into_iter().collect(),
            // Kept beside the accounts (`AssociationsFields7`, `AssociationsFields13`).
            borrowing_limit: Default::default(),
            lending_limit: Default::default(),
            max_tres_mins_per_job: Default::default(),
            grp_wall_min: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AdminLevelRecord {
    None,
    Operator,
    Administrator,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccountRecord {
    pub name: String,
    pub parent: Option<String>,
    pub shares: u32,
    pub priority: u32,
    pub users: Vec<String>,
    pub user_limits: Vec<(String, LimitsRecord)>,
    pub description: String,
    pub organization: String,
    pub limits: LimitsRecord,
    pub qos: Vec<String>,
    pub default_qos: String,
    pub coordinators: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserRecord {
    pub name: String,
    pub default_account: String,
    pub admin_level: AdminLevelRecord,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QosRecord {
    pub name: String,
    pub priority: u32,
    pub limits: LimitsRecord,
    pub preempt: Vec<String>,
    pub preempt_mode: String,
    pub grace_time: u32,
    pub usage_factor: f64,
}

/// The associations `sacctmgr` keeps: one record, rewritten whole by each change
/// (a cluster's accounting is small beside its jobs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssociationsRecord {
    pub accounts: Vec<AccountRecord>,
    pub users: Vec<UserRecord>,
    pub qos: Vec<QosRecord>,
    pub enforced: bool,
    pub added7: AssociationsFields7,
    pub added8: AssociationsFields8,
    pub added13: AssociationsFields13,
}

/// What format 13 added to the associations: this cluster's (`TreeFields13`) and
/// each QOS's MaxTRESMinsPerJob and GrpWall (QOS that set one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct AssociationsFields13 {
    pub tree: TreeFields13,
    pub qos_limits: Vec<QosTimeLimitsRecord>,
}

/// What format 13 added to a cluster's accounts: MaxTRESMinsPerJob and GrpWall of
/// each association that sets one, and users' associations' own share and QOS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TreeFields13 {
    pub assoc_limits: Vec<TimeLimitsRecord>,
    pub user_assocs: Vec<UserAssocRecord>,
    /// Accounts whose QOS list is set to none (an empty list is otherwise inherited).
    pub no_qos: Vec<String>,
}

/// An association's MaxTRESMinsPerJob and GrpWall: an account's own (`user` empty) or
/// a user's in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeLimitsRecord {
    pub account: String,
    pub user: String,
    pub max_tres_mins_per_job: Vec<(String, u64)>,
    pub grp_wall_min: Option<u32>,
}

/// A user's association's own share and QOS in an account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserAssocRecord {
    pub account: String,
    pub user: String,
    pub shares: u32,
    pub priority: u32,
    pub qos: Vec<String>,
    /// Its QOS list is set to none.
    pub no_qos: bool,
    pub default_qos: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QosTimeLimitsRecord {
    pub qos: String,
    pub max_tres_mins_per_job: Vec<(String, u64)>,
    pub grp_wall_min: Option<u32>,
}

/// What format 13 added to other clusters' associations, cluster by cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct OtherClustersFields13 {
    pub clusters: Vec<ClusterFields13>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterFields13 {
    pub name: String,
    pub tree: TreeFields13,
}

/// What format 8 added to the associations: each QOS's GPU idle policy, by QOS (only
/// QOS with a limit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct AssociationsFields8 {
    pub qos_gpu_idle: Vec<QosGpuIdleRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QosGpuIdleRecord {
    pub qos: String,
    pub limit_s: u32,
    pub action: GpuIdleActionRecord,
    pub grace_s: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GpuIdleActionRecord {
    Warn,
    Requeue,
    Cancel,
}

/// What format 7 added to the associations: each account's BorrowingLimit and
/// LendingLimit, by account (only accounts with one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct AssociationsFields7 {
    pub quota_limits: Vec<QuotaLimitsRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuotaLimitsRecord {
    pub account: String,
    pub borrowing_limit: Vec<(String, u64)>,
    pub lending_limit: Vec<(String, u64)>,
}

/// Other clusters' associations (`Associations::other_clusters`), kept under a key of
/// their own beside the associations and written with them in the same turn (a store
/// from before they were kept has none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct OtherClustersRecord {
    pub clusters: Vec<ClusterRecord>,
    pub added13: OtherClustersFields13,
}

/// One other cluster's accounts, as the associations keep this cluster's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterRecord {
    pub name: String,
    pub accounts: Vec<AccountRecord>,
    pub quota_limits: Vec<QuotaLimitsRecord>,
}

fn account_records(tree: &AccountTree) -> Vec<AccountRecord> {
    let strings = |s: &std::collections::BTreeSet<String>| s.iter().cloned().collect();
    tree.values()
        .map(|acct| AccountRecord {
            name: acct.name.clone(),
            parent: acct.parent.clone(),
            shares: acct.shares,
            priority: acct.priority,
            users: strings(&acct.users),
            user_limits: acct
                .user_limits
                .iter()
                .map(|(u, l)| (u.clone(), l.into()))
                .collect(),
            description: acct.description.clone(),
            organization: acct.organization.clone(),
            limits: (&acct.limits).into(),
            qos: qos_list_parts(&acct.qos).0,
            default_qos: acct.default_qos.clone(),
            coordinators: strings(&acct.coordinators),
        })
        .collect()
}

/// BorrowingLimit and LendingLimit, kept apart since format 7 (accounts with one).
fn quota_limit_records(tree: &AccountTree) -> Vec<QuotaLimitsRecord> {
    tree.values()
        .filter(|acct| {
            !acct.limits.borrowing_limit.is_empty() || !acct.limits.lending_limit.is_empty()
        })
        .map(|acct| QuotaLimitsRecord {
            account: acct.name.clone(),
            borrowing_limit: pairs(&acct.limits.borrowing_limit),
            lending_limit: pairs(&acct.limits.lending_limit),
        })
        .collect()
}

/// What format 13 keeps of a cluster's accounts apart (associations that set some).
fn tree_fields_13(tree: &AccountTree) -> TreeFields13 {
    let limits = |account: &str, user: &str, l: &Limits| {
        (!l.max_tres_mins_per_job.is_empty() || l.grp_wall_min.is_some()).then(|| {
            TimeLimitsRecord {
                account: account.to_string(),
                user: user.to_string(),
                max_tres_mins_per_job: pairs(&l.max_tres_mins_per_job),
                grp_wall_min: l.grp_wall_min,
            }
        })
    };
    TreeFields13 {
        assoc_limits: tree
            .values()
            .flat_map(|acct| {
                std::iter::once(limits(&acct.name, "", &acct.limits)).chain(
                    acct.user_limits
                        .iter()
                        .map(|(user, l)| limits(&acct.name, user, l)),
                )
            })
            .flatten()
            .collect(),
        user_assocs: tree
            .values()
            .flat_map(|acct| {
                acct.user_assocs.iter().map(|(user, u)| UserAssocRecord {
                    account: acct.name.clone(),
                    user: user.clone(),
                    shares: u.shares,
                    priority: u.priority,
                    qos: qos_list_parts(&u.qos).0,
                    no_qos: qos_list_parts(&u.qos).1,
                    default_qos: u.default_qos.clone(),
                })
            })
            .collect(),
        no_qos: tree
            .values()
            .filter(|a| qos_list_parts(&a.qos).1)
            .map(|a| a.name.clone())
            .collect(),
    }
}

fn account_tree(
    accounts: Vec<AccountRecord>,
    quota_limits: Vec<QuotaLimitsRecord>,
    added13: TreeFields13,
) -> AccountTree {
    let mut tree = AccountTree::new();
    for a in accounts {
        let mut acct = Account::new(&a.name, a.parent.as_deref());
        acct.shares = a.shares;
        acct.priority = a.priority;
        acct.users = a.users.into_iter().collect();
        acct.user_limits = a
            .user_limits
            .into_iter()
            .map(|(u, l)| (u, l.into()))
            .collect();
        acct.description = a.description;
        acct.organization = a.organization;
        acct.limits = a.limits.into();
        acct.qos = qos_list_from_parts(a.qos, added13.no_qos.contains(&a.name));
        acct.default_qos = a.default_qos;
        acct.coordinators = a.coordinators.into_iter().collect();
        tree.insert(a.name, acct);
    }
    for q in quota_limits {
        if let Some(acct) = tree.get_mut(&q.account) {
            acct.limits.borrowing_limit = q.borrowing_limit.into_iter().collect();
            acct.limits.lending_limit = q.lending_limit.into_iter().collect();
        }
    }
    for t in added13.assoc_limits {
        let Some(acct) = tree.get_mut(&t.account) else {
            continue;
        };
        let limits = if t.user.is_empty() {
            &mut acct.limits
        } else {
            acct.user_limits.entry(t.user).or_default()
        };
        limits.max_tres_mins_per_job = t.max_tres_mins_per_job.into_iter().collect();
        limits.grp_wall_min = t.grp_wall_min;
    }
    for u in added13.user_assocs {
        if let Some(acct) = tree.get_mut(&u.account) {
            let settings = UserAssoc {
                shares: u.shares,
                priority: u.priority,
                qos: qos_list_from_parts(u.qos, u.no_qos),
                default_qos: u.default_qos,
            };
            acct.user_assocs.insert(u.user, settings);
        }
    }
    tree
}

impl From<&Associations> for OtherClustersRecord {
    fn from(a: &Associations) -> Self {
        OtherClustersRecord {
            clusters: a
                .other_clusters
                .iter()
                .map(|(name, tree)| ClusterRecord {
                    name: name.clone(),
                    accounts: account_records(tree),
                    quota_limits: quota_limit_records(tree),
                })
                .collect(),
            added13: OtherClustersFields13 {
                clusters: a
                    .other_clusters
                    .iter()
                    .map(|(name, tree)| ClusterFields13 {
                        name: name.clone(),
                        tree: tree_fields_13(tree),
                    })
                    .collect(),
            },
        }
    }
}

impl OtherClustersRecord {
    /// Puts the clusters into associations read from their own record.
    pub fn restore_into(self, assocs: &mut Associations) {
        let mut added13: std::collections::BTreeMap<String, TreeFields13> = self
            .added13
            .clusters
            .into_iter()
            .map(|c| (c.name, c.tree))
            .collect();
        assocs.other_clusters = self
            .clusters
            .into_iter()
            .map(|c| {
                let added = added13.remove(&c.name).unwrap_or_default();
                (c.name, account_tree(c.accounts, c.quota_limits, added))
            })
            .collect();
        assocs.relink();
    }
}

impl From<&Associations> for AssociationsRecord {
    fn from(a: &Associations) -> Self {
        AssociationsRecord {
            accounts: account_records(&a.accounts),
            users: a
                .users
                .iter()
                .map(|(name, u)| UserRecord {
                    name: name.clone(),
                    default_account: u.default_account.clone(),
                    admin_level: match u.admin_level {
                        AdminLevel::None => AdminLevelRecord::None,
                        AdminLevel::Operator => AdminLevelRecord::Operator,
                        AdminLevel::Administrator => AdminLevelRecord::Administrator,
                    },
                })
                .collect(),
            qos: a
                .qos
                .values()
                .map(|q| QosRecord {
                    name: q.name.clone(),
                    priority: q.priority,
                    limits: (&q.limits).into(),
                    preempt: q.preempt.clone(),
                    preempt_mode: q.preempt_mode.clone(),
                    grace_time: q.grace_time,
                    usage_factor: q.usage_factor,
                })
                .collect(),
            enforced: a.enforced,
            added7: AssociationsFields7 {
                quota_limits: quota_limit_records(&a.accounts),
            },
            added8: AssociationsFields8 {
                qos_gpu_idle: a
                    .qos
                    .values()
                    .filter_map(|q| {
                        Some(QosGpuIdleRecord {
                            qos: q.name.clone(),
                            limit_s: q.gpu_idle.limit_s?,
                            action: match q.gpu_idle.action {
                                GpuIdleAction::Warn => GpuIdleActionRecord::Warn,
                                GpuIdleAction::Requeue => GpuIdleActionRecord::Requeue,
                                GpuIdleAction::Cancel => GpuIdleActionRecord::Cancel,
                            },
                            grace_s: q.gpu_idle.grace_s,
                        })
                    })
                    .collect(),
            },
            added13: AssociationsFields13 {
                tree: tree_fields_13(&a.accounts),
                qos_limits: a
                    .qos
                    .values()
                    .filter(|q| {
                        !q.limits.max_tres_mins_per_job.is_empty()
                            || q.limits.grp_wall_min.is_some()
                    })
                    .map(|q| QosTimeLimitsRecord {
                        qos: q.name.clone(),
                        max_tres_mins_per_job: pairs(&q.limits.max_tres_mins_per_job),
                        grp_wall_min: q.limits.grp_wall_min,
                    })
                    .collect(),
            },
        }
    }
}

impl From<AssociationsRecord> for Associations {
    fn from(r: AssociationsRecord) -> Self {
        let mut out = Associations {
            accounts: account_tree(r.accounts, r.added7.quota_limits, r.added13.tree),
            qos: Default::default(),
            users: Default::default(),
            enforced: r.enforced,
            other_clusters: Default::default(),
        };
        for u in r.users {
            let admin_level = match u.admin_level {
                AdminLevelRecord::None => AdminLevel::None,
                AdminLevelRecord::Operator => AdminLevel::Operator,
                AdminLevelRecord::Administrator => AdminLevel::Administrator,
            };
            out.users.insert(
                u.name,
                User {
                    default_account: u.default_account,
                    admin_level,
                },
            );
        }
        for q in r.qos {
            let mut qos = Qos::new(&q.name);
            qos.priority = q.priority;
            qos.limits = q.limits.into();
            qos.preempt = q.preempt;
            qos.preempt_mode = q.preempt_mode;
            qos.grace_time = q.grace_time;
            qos.usage_factor = q.usage_factor;
            out.qos.insert(q.name, qos);
        }
        for q in r.added8.qos_gpu_idle {
            if let Some(qos) = out.qos.get_mut(&q.qos) {
                qos.gpu_idle = GpuIdlePolicy {
                    limit_s: Some(q.limit_s),
                    action: match q.action {
                        GpuIdleActionRecord::Warn => GpuIdleAction::Warn,
                        GpuIdleActionRecord::Requeue => GpuIdleAction::Requeue,
                        GpuIdleActionRecord::Cancel => GpuIdleAction::Cancel,
                    },
                    grace_s: q.grace_s,
                };
            }
        }
        for q in r.added13.qos_limits {
            if let Some(qos) = out.qos.get_mut(&q.qos) {
                qos.limits.max_tres_mins_per_job = q.max_tres_mins_per_job.into_iter().collect();
                qos.limits.grp_wall_min = q.grp_wall_min;
            }
        }
        out.relink();
        out
    }
}

#[cfg(test)]
mod tests {
    //! Golden bytes: the exact encoding of one record of each type. A failure here
    //! means the format changed; if that is intended, it is a new format (see the
    //! module's doc), not a new expectation.
    use super::*;
    use model::KillRequest;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn golden<T: Serialize>(record: &T) -> String {
        hex(&encode(record).unwrap())
    }

    fn sample_job() -> Job {
        let spec = JobSpec {
            name: "train".into(),
            uid: 1000,
            user: "alice".into(),
            account: "ml".into(),
            partition: "gpu".into(),
            num_tasks: 2,
            max_nodes: 3,
            mail_types: vec![MailType::Begin, MailType::Fail],
            mail_user: "al".into(),
            cpus_per_task: 4,
            gpus: 1,
            array: Some(ArraySpec {
                task_ids: vec![0, 1],
                max_running: 1,
            }),
            mem_whole_node: true,
            ..JobSpec::default()
        };
        let mut job = Job::new(7, spec, 100, Some(60));
        job.state = JobState::Running;
        job.start_time = 110;
        job.alloc = Some(Allocation {
            nodes: vec![NodeAllocation {
                node: "n1".into(),
                cpus: 8,
                mem_mb: 512,
                gpus: vec![3],
                cpu_ids: vec![0, 1],
            }],
        });
        job.reason = Reason::Resources;
        job.kill = Some(KillRequest {
            cause: KillCause::Requeue { hold: true },
            time: 120,
        });
        job.launched = true;
        job.steps.push(Step {
            num_tasks: 2,
            nodes: vec!["n1".into()],
            cpus: 8,
            time_limit_min: Some(5),
            timed_out: true,
            usage: Some(model::StepUsage {
                max_rss_bytes: 4096,
                max_rss_node: "n1".into(),
                total_cpu_us: 1000,
                user_cpu_us: 600,
                system_cpu_us: 400,
                tasks: Some(model::TaskUsage::of_task(0, "n1", 4096, 1000).with_disk(
                    0,
                    "n1",
                    model::DiskIo {
                        read_bytes: 2048,
                        write_bytes: 1024,
                    },
                )),
                gpu: Some(GpuUse {
                    sampled_gpu_ms: 60_000,
                    busy_gpu_ms: 15_000,
                    max_memory_bytes: 1 << 30,
                    idle_ms: 0,
                }),
            }),
            ..Step::started(Some(0), "s", 110)
        });
        job.gpu_idle_flagged = Some(130);
        job
    }

    #[test]
    fn appended_state_and_kill_variants_leave_the_earlier_ones_bytes() {
        // Only appended: every earlier variant keeps its index, so records written
        // before SPECIAL_EXIT existed read as they did.
        let state = |r: JobStateRecord| hex(&postcard::to_stdvec(&r).unwrap());
        let kill = |r: KillCauseRecord| hex(&postcard::to_stdvec(&r).unwrap());
        assert_eq!(state(JobStateRecord::Deadline), "0d");
        assert_eq!(state(JobStateRecord::SpecialExit), "0e");
        assert_eq!(kill(KillCauseRecord::Preempt), "02");
        assert_eq!(kill(KillCauseRecord::RequeueSpecialExit), "03");
        for state in JobState::ALL {
            assert_eq!(JobState::from(JobStateRecord::from(state)), state);
        }
    }

    #[test]
    fn a_job_record_keeps_its_bytes() {
        // Format, id 7, array 7, no task, tasks [0, 1], the spec ("train", uid 1000,
        // "alice", "ml", "gpu", ...), RUNNING, "Resources", times, the allocation on
        // n1, step 0 ("s", RUNNING, ...), ..., the kill (requeue, held, at 120) and the
        // launch; then what format 5 added: --mem=0, and step 0's node n1, 8 CPUs and
        // usage (4096 bytes on n1, 1000/600/400 us); then what format 6 added: at most
        // 3 nodes, mail on BEGIN and FAIL, to "al", and step 0's usage task by task
        // (one task, 0 on n1: 4096 bytes, 1000 us); then what format 8 added: step
        // 0's GPU use (60 000 GPU-ms sampled, 15 000 busy, 1 GiB, not idle) and the
        // GPU idle flag (at 130); then what format 9 added: the options kept as given
        // (none); then what format 10 added: step 0's own time limit (5 minutes), run
        // out, and its GPU request (none); then what format 11 added: no
        // heterogeneous job; then what format 12 added: no fixed priority, SiteFactor 0,
        // not interactive; then what format 13 added: no DerivedExitCode of its own,
        // eligible at 100; then what format 14 added: step 0's tasks read 2048 bytes
        // (task 0 on n1, 2048 in all) and wrote 1024 (task 0 on n1, 1024 in all).
        assert_eq!(
            golden(&JobRecord::from(&sample_job())),
            concat!(
                "0e07070002000105747261696ee8070005616c696365026d6c036770750000000000",
                "00000002040000000100000000000000000000010200010100000000000000000001",
                "095265736f7572636573c801dc0100000101026e3108800401030200010000000000",
                "013c00010100017301dc01000000020000000000010101f00101010101026e310801",
                "8020026e31e807d80490030302000202616c010101802000026e318020e80700026e31",
                "0101e0d4039875808080800400018402",
                "0000000000000000000000000000",
                "01010501",
                "000000000000000000",
                "00",
                "000000",
                "0001c801",
                "0101801000026e318010800800026e318008"
            )
        );
    }

    #[test]
    fn a_job_reads_back_as_it_was() {
        let job = sample_job();
        let back = JobRecord::from(&job).into_job(&|| "job 7".into()).unwrap();
        assert_eq!(
            back,
            Job {
                planned_start: 0,
                ..job
            }
        );
    }

    #[test]
    fn a_component_of_a_heterogeneous_job_reads_back_as_it_was() {
        let mut job = sample_job();
        job.het = Some(model::job::HetJob {
            leader: 7,
            offset: 0,
            count: 3,
        });
        let bytes = golden(&JobRecord::from(&job));
        // What format 11 added: Some, leader 7, offset 0, 3 components; then no
        // fixed priority, SiteFactor 0, not interactive, no DerivedExitCode, eligible at
        // 100, and step 0's reads and writes.
        assert!(
            bytes.ends_with(concat!(
                "010700030000000001c801",
                "0101801000026e318010800800026e318008"
            )),
            "{bytes}"
        );
        let back = JobRecord::from(&job).into_job(&|| "job 7".into()).unwrap();
        assert_eq!(back.het, job.het);
    }

    #[test]
    fn a_fixed_priority_reads_back() {
        let mut job = sample_job();
        job.spec.priority = Some(300);
        job.spec.site_factor = -1;
        let bytes = golden(&JobRecord::from(&job));
        // What format 12 added: Some(300), -1 (zigzag 1), not interactive; then format
        // 13's and 14's.
        assert!(
            bytes.ends_with(concat!(
                "01ac0201000001c801",
                "0101801000026e318010800800026e318008"
            )),
            "{bytes}"
        );
        let back = JobRecord::from(&job).into_job(&|| "job 7".into()).unwrap();
        assert_eq!((back.spec.priority, back.spec.site_factor), (Some(300), -1));
    }

    #[test]
    fn a_derived_exit_code_set_by_sacctmgr_reads_back() {
        let mut job = sample_job();
        job.derived_exit_status = Some(22);
        let bytes = golden(&JobRecord::from(&job));
        // What format 13 added: Some(22) (zigzag 44), eligible at 100; then format 14's.
        assert!(
            bytes.ends_with(concat!(
                "012c01c801",
                "0101801000026e318010800800026e318008"
            )),
            "{bytes}"
        );
        let back = JobRecord::from(&job).into_job(&|| "job 7".into()).unwrap();
        assert_eq!(back.derived_exit_status, Some(22));
    }

    #[test]
    fn a_pending_job_of_several_partitions_reads_back_with_its_list() {
        let mut job = sample_job();
        job.spec.more_partitions = vec!["debug".into(), "big".into()];
        let record = JobRecord::from(&job);
        assert_eq!(record.fields.spec.partition, "gpu,debug,big");
        let back = record.into_job(&|| "job 7".into()).unwrap();
        assert_eq!(
            back.spec.partitions().collect::<Vec<_>>(),
            ["gpu", "debug", "big"]
        );
    }

    #[test]
    fn a_job_of_format_4_is_the_first_part_of_one_of_format_5() {
        let record = JobRecord::from(&sample_job());
        let old = postcard::to_stdvec(&record.fields).unwrap();
        let new = postcard::to_stdvec(&record).unwrap();
        assert!(new.len() > old.len() && new.starts_with(&old));
        let back = JobRecord::from_format_4(decode_body(&|| "job 7".into(), &old).unwrap())
            .into_job(&|| "job 7".into())
            .unwrap();
        assert!(!back.spec.mem_whole_node && back.steps[0].usage.is_none());
        assert_eq!(back.steps[0].num_tasks, 2);
    }

    #[test]
    fn a_job_of_format_5_is_the_first_part_of_one_of_format_6() {
        let record = JobRecord::from(&sample_job());
        let old = postcard::to_stdvec(&JobRecord5 {
            fields: record.fields.clone(),
            added: record.added.clone(),
        })
        .unwrap();
        let new = postcard::to_stdvec(&record).unwrap();
        assert!(new.len() > old.len() && new.starts_with(&old));
        let back = JobRecord::from_format_5(decode_body(&|| "job 7".into(), &old).unwrap())
            .into_job(&|| "job 7".into())
            .unwrap();
        assert_eq!(back.spec.max_nodes, 0);
        assert!(back.spec.mem_whole_node && back.steps[0].usage.is_some());
    }

    #[test]
    fn an_unknown_reason_is_refused() {
        let mut record = JobRecord::from(&sample_job());
        record.fields.reason = "Bogus".into();
        let err = record.into_job(&|| "job 7".into()).unwrap_err().to_string();
        assert!(err.contains("job 7") && err.contains("Bogus"), "{err}");
    }

    #[test]
    fn a_trigger_record_keeps_its_bytes() {
        let t = Trigger {
            id: 3,
            spec: TriggerSpec {
                resource: TriggerResource::Job(12),
                event: TriggerEvent::Fini,
                offset: -5,
                program: "/bin/x".into(),
                perm: true,
            },
            uid: 1000,
            gid: 100,
            user: "ada".into(),
        };
        let bytes = golden(&TriggerRecord::from(&t));
        assert_eq!(bytes, "0e03010c000409062f62696e2f7801e8076403616461");
        let n = Trigger {
            spec: TriggerSpec {
                resource: TriggerResource::Nodes(Some("n[1-2]".into())),
                event: TriggerEvent::Down,
                ..t.spec.clone()
            },
            ..t.clone()
        };
        for t in [t, n] {
            assert_eq!(Trigger::from(TriggerRecord::from(&t)), t);
        }
        assert_eq!(golden(&NextTriggerRecord { id: 300 }), "0eac02");
    }

    #[test]
    fn node_reservation_usage_and_payload_records_keep_their_bytes() {
        let mut node = Node::from_config(
            "n1",
            4,
            1024,
            vec![model::GpuDevice::with_default_topology(0, 1, "h100")],
        );
        node.health = NodeHealth::Up;
        node.features = vec!["fast".into()];
        assert_eq!(
            golden(&NodeRecord::from(&node)),
            "0e026e3100048008010004683130300000000104666173740100000000000000\
             0100"
        );
        let r = Reservation {
            name: "maint".into(),
            start: 10,
            end: 20,
            nodes: vec!["n1".into()],
            users: vec!["root".into()],
            accounts: vec![],
            flags: vec![model::ReservationFlag::Maint, model::ReservationFlag::Daily],
            partition: String::new(),
        };
        assert_eq!(
            golden(&ReservationRecord::from(&r)),
            "0e056d61696e74142801026e310104726f6f740002000300"
        );
        let mut p = Partition::open("p1", vec!["n1".into()], true);
        p.max_time_min = Some(30);
        p.state = PartitionState::Down;
        let record = PartitionRecord::from(&p);
        assert_eq!(Partition::from(record.clone()), p);
        assert_eq!(
            golden(&record),
            "0e02703101026e3101011e0000010101000000000000"
        );
        let usage = AssocUsage {
            billing: 1.5,
            tres: [("cpu".to_string(), 2.0)].into(),
            wall: 4.0,
            at: 3,
        };
        assert_eq!(
            golden(&UsageRecord::from(&usage)),
            "0e000000000000f83f01036370750000000000000040060000000000001040"
        );
        let payload = JobPayload {
            script: "#!/bin/sh\n".into(),
            env: vec![("A".into(), "1".into())],
        };
        assert_eq!(
            golden(&PayloadRecord::from(&payload)),
            "0e0a23212f62696e2f73680a0101410131"
        );
    }

    #[test]
    fn other_clusters_keep_their_bytes_and_read_back_whole() {
        let mut a = Associations::default();
        let mut tree = Associations::new_cluster_tree();
        let mut ml = Account::new("ml", Some("root"));
        ml.users.insert("alice".into());
        ml.limits.max_jobs = Some(2);
        ml.limits.grp_wall_min = Some(45);
        ml.user_assocs.insert(
            "alice".into(),
            model::assoc::UserAssoc {
                shares: 4,
                ..Default::default()
            },
        );
        tree.insert("ml".into(), ml);
        a.other_clusters.insert("c2".into(), tree);
        a.relink();
        let record = OtherClustersRecord::from(&a);
        let mut back = Associations::default();
        record.clone().restore_into(&mut back);
        assert_eq!(back, a);
        assert_eq!(
            golden(&record),
            "0e0102633202026d6c0104726f6f7401000105616c69636500026d6c026d6c00\
             000000000000010200000000000004726f6f740001000104726f6f7400146465\
             6661756c7420726f6f74206163636f756e7404726f6f74000000000000000000\
             0000000000000102633201026d6c0000012d01026d6c05616c69636504000000\
             0000"
        );
    }

    #[test]
    fn associations_keep_their_bytes_and_read_back_whole() {
        let config = model::Config::parse(
            "[[nodes]]\nnames = \"n1\"\ncpus = 1\nmemory = \"1G\"\n\
             [[partitions]]\nname = \"p\"\nnodes = \"ALL\"\n\
             [[accounts]]\nname = \"ml\"\nusers = [\"alice\"]\n",
            "t",
        )
        .unwrap();
        let mut a = Associations::from_config(&config);
        let ml = a.accounts.get_mut("ml").unwrap();
        ml.limits.grp_tres = [("gres/gpu".to_string(), 4)].into();
        ml.limits.borrowing_limit = [("gres/gpu".to_string(), 2)].into();
        ml.limits.lending_limit = [("gres/gpu".to_string(), 1)].into();
        ml.user_limits.entry("alice".into()).or_default().max_jobs = Some(2);
        ml.limits.max_tres_mins_per_job = [("cpu".to_string(), 600)].into();
        ml.user_limits
            .entry("alice".into())
            .or_default()
            .grp_wall_min = Some(90);
        ml.user_assocs.insert(
            "alice".into(),
            model::assoc::UserAssoc {
                shares: 7,
                priority: 3,
                qos: Some(["normal".to_string()].into()),
                default_qos: "normal".into(),
            },
        );
        ml.coordinators.insert("alice".into());
        ml.qos = Some(Default::default());
        a.users.get_mut("alice").unwrap().admin_level = AdminLevel::Operator;
        a.qos.get_mut("normal").unwrap().limits.grp_submit = Some(9);
        a.qos
            .get_mut("normal")
            .unwrap()
            .limits
            .max_tres_mins_per_job = [("gres/gpu".to_string(), 60)].into();
        a.qos.get_mut("normal").unwrap().limits.grp_wall_min = Some(30);
        a.qos.get_mut("normal").unwrap().gpu_idle = GpuIdlePolicy {
            limit_s: Some(600),
            action: GpuIdleAction::Requeue,
            grace_s: 300,
        };
        let record = AssociationsRecord::from(&a);
        assert_eq!(Associations::from(record.clone()), a);
        assert_eq!(
            golden(&record),
            "0e02026d6c0104726f6f7401000105616c6963650105616c6963650000000000\
             00000102000000026d6c026d6c0108677265732f677075040000000000000000\
             000000000105616c69636504726f6f740001000104726f6f7400146465666175\
             6c7420726f6f74206163636f756e7404726f6f74000000000000000000000000\
             00000205616c696365026d6c0104726f6f7404726f6f740201066e6f726d616c\
             00000000000109000000000000000000000000000000f03f0101026d6c010867\
             7265732f677075020108677265732f6770750101066e6f726d616cd80401ac02\
             02026d6c000103637075d80400026d6c05616c69636500015a01026d6c05616c\
             696365070301066e6f726d616c00066e6f726d616c01026d6c01066e6f726d61\
             6c0108677265732f6770753c011e"
        );
    }
}
