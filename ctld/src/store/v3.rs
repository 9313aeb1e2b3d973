//! Format 3, the format of the release before records had types of their own: each
//! record was postcard of the domain type itself. It is read here only to migrate a
//! store to the current format (`SledStore::open` rewrites every record once).
//!
//! A format-3 job becomes a format-4 one (`JobFields4`), then a current record.
//!
//! Format 3 differs from format 4 only in the job record: it kept the planned start,
//! and had neither the kill request nor the launch confirmation, nor the script's
//! path in the job's request. Every other record of format 3 has exactly the bytes of
//! its format-4 record type, so those are decoded with them; the migration test (a
//! store written by the format-3 release) checks both.

use super::StoreError;
use super::records::{
    self, ArraySpecRecord, JobFields4, JobRecord, JobSpecRecord, JobStateRecord,
    NodeAllocationRecord, NodeRecord, PayloadRecord, PreemptionRecord, ReservationRecord,
    SignalSpecRecord, StepRecord, UsageRecord,
};
use serde::Deserialize;

pub const FORMAT: u8 = 3;

/// The request of a job in format 3: format 4's without `command`.
#[derive(Debug, Deserialize)]
pub struct JobSpecV3 {
    name: String,
    uid: u32,
    gid: u32,
    user: String,
    account: String,
    partition: String,
    qos: String,
    script_args: Vec<String>,
    work_dir: String,
    stdout_pattern: String,
    stderr_pattern: String,
    stdin_path: String,
    open_mode_append: bool,
    num_nodes: u32,
    num_tasks: u32,
    cpus_per_task: u32,
    ntasks_per_node: u32,
    mem_per_node_mb: u64,
    mem_per_cpu_mb: u64,
    gpus: u32,
    gpus_per_node: u32,
    gpu_type: String,
    time_limit_min: Option<u32>,
    signal: Option<SignalSpecRecord>,
    requeue: bool,
    comment: String,
    wckey: String,
    begin_time: i64,
    hold: bool,
    dependency: String,
    array: Option<ArraySpecRecord>,
    submit_host: String,
    reservation: String,
    constraint: String,
    nodelist: String,
    exclude: String,
    exclusive: bool,
    nice: i32,
    kill_on_invalid_dep: bool,
}

impl From<JobSpecV3> for JobSpecRecord {
    fn from(s: JobSpecV3) -> JobSpecRecord {
        JobSpecRecord {
            name: s.name,
            uid: s.uid,
            gid: s.gid,
            user: s.user,
            account: s.account,
            partition: s.partition,
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
            signal: s.signal,
            requeue: s.requeue,
            comment: s.comment,
            wckey: s.wckey,
            begin_time: s.begin_time,
            hold: s.hold,
            dependency: s.dependency,
            array: s.array,
            submit_host: s.submit_host,
            reservation: s.reservation,
            constraint: s.constraint,
            nodelist: s.nodelist,
            exclude: s.exclude,
            exclusive: s.exclusive,
            nice: s.nice,
            kill_on_invalid_dep: s.kill_on_invalid_dep,
            command: String::new(),
        }
    }
}

/// A job record of format 3, field for field.
#[derive(Debug, Deserialize)]
pub struct JobRecordV3 {
    id: u32,
    array_job_id: u32,
    array_task_id: Option<u32>,
    pending_tasks: Vec<u32>,
    spec: JobSpecV3,
    state: JobStateRecord,
    reason: String,
    submit_time: i64,
    start_time: i64,
    end_time: i64,
    suspend_time: i64,
    alloc: Option<Vec<NodeAllocationRecord>>,
    exit_code: i32,
    exit_signal: i32,
    cancelled_by: Option<u32>,
    restart_count: u32,
    held: bool,
    time_limit_min: Option<u32>,
    steps: Vec<StepRecord>,
    next_step_id: u32,
    stdout_path: String,
    stderr_path: String,
    /// Derived by the scheduler; not kept from format 4 on.
    _planned_start: i64,
    time_limit_s: Option<u32>,
    preemption: Option<PreemptionRecord>,
    suspended_secs: i64,
}

impl From<JobRecordV3> for JobFields4 {
    /// A job of format 3 had no kill request. A running one is taken as launched, as
    /// the release that wrote it took every started job: if its node no longer has
    /// it, it was lost.
    fn from(j: JobRecordV3) -> JobFields4 {
        let launched = j.alloc.is_some()
            && matches!(
                j.state,
                JobStateRecord::Running | JobStateRecord::Suspended | JobStateRecord::Completing
            );
        JobFields4 {
            id: j.id,
            array_job_id: j.array_job_id,
            array_task_id: j.array_task_id,
            pending_tasks: j.pending_tasks,
            spec: j.spec.into(),
            state: j.state,
            reason: j.reason,
            submit_time: j.submit_time,
            start_time: j.start_time,
            end_time: j.end_time,
            suspend_time: j.suspend_time,
            alloc: j.alloc,
            exit_code: j.exit_code,
            exit_signal: j.exit_signal,
            cancelled_by: j.cancelled_by,
            restart_count: j.restart_count,
            held: j.held,
            time_limit_min: j.time_limit_min,
            time_limit_s: j.time_limit_s,
            steps: j.steps,
            next_step_id: j.next_step_id,
            stdout_path: j.stdout_path,
            stderr_path: j.stderr_path,
            preemption: j.preemption,
            suspended_secs: j.suspended_secs,
            kill: None,
            launched,
        }
    }
}

/// A job record of format 3 (the bytes after its version), as a current record.
pub fn decode_job(what: &dyn Fn() -> String, body: &[u8]) -> Result<JobRecord, StoreError> {
    Ok(JobRecord::from_format_4(
        records::decode_body::<JobRecordV3>(what, body)?.into(),
    ))
}

/// A record of format 3 of the tree numbered `tree` (the store's `TreeName`), encoded
/// in the current format.
pub fn migrate_record(
    tree: u8,
    what: &dyn Fn() -> String,
    bytes: &[u8],
) -> Result<Vec<u8>, StoreError> {
    let body = &bytes[1..];
    match tree {
        0 => records::encode(&decode_job(what, body)?),
        1 => records::encode(&records::decode_body::<PayloadRecord>(what, body)?),
        2 => records::encode(&records::decode_body::<NodeRecord>(
            what,
            &records::body_with_empty::<records::NodeFields7>(body)?,
        )?),
        3 => records::encode(&records::decode_body::<ReservationRecord>(what, body)?),
        4 => records::encode(&records::decode_body::<UsageRecord>(
            what,
            &records::body_with_empty::<records::UsageFields13>(body)?,
        )?),
        other => Err(StoreError::Decode {
            key: what(),
            reason: format!("unknown tree {other}"),
        }),
    }
}
