//! What the commands that show jobs (squeue, sacct, scontrol, scancel) need to present
//! a job record: its spec and state, Slurm's words for fields left empty, display ids of
//! array tasks and pending array remainders, which records `-j` ids select, the TRES
//! string, and the pieces of Slurm's JSON.

use crate::exit::Exit;
use crate::users::Names;
use model::JobState;
use model::job_id::{self, JobIdError, JobIdSpec, RecordIds, Selected};
use proto::v1::{JobInfo, JobSpec, StepInfo};

static EMPTY_SPEC: std::sync::LazyLock<JobSpec> = std::sync::LazyLock::new(JobSpec::default);

/// The job's spec. Replies are checked with [`check_records`] when they arrive, so a
/// record without one does not reach here from the controller (one built by hand reads
/// as an empty spec).
pub fn spec(job: &JobInfo) -> &JobSpec {
    job.spec.as_ref().unwrap_or(&EMPTY_SPEC)
}

/// Refuses a reply with a job record that lacks its spec, or whose state or a step's
/// is a number this version does not know, rather than printing defaults.
pub fn check_records(command: &str, jobs: &[JobInfo]) -> Result<(), Exit> {
    let known = |n: i32| proto::v1::JobState::try_from(n).is_ok();
    for j in jobs {
        if j.spec.is_none() {
            return Err(Exit::error(
                command,
                format!("job {} came without its spec from the controller", j.job_id),
            ));
        }
        let unknown = |what: String, state: i32| {
            Exit::error(
                command,
                format!("{what} came with a state this version does not know ({state})"),
            )
        };
        if !known(j.state) {
            return Err(unknown(format!("job {}", j.job_id), j.state));
        }
        if let Some(s) = j.steps.iter().find(|s| !known(s.state)) {
            return Err(unknown(format!("step {}.{}", j.job_id, s.step_id), s.state));
        }
    }
    Ok(())
}

/// The job's state in the domain model.
pub fn job_state(job: &JobInfo) -> JobState {
    proto::convert::state_from_wire(job.state())
}

/// A step's state in the domain model.
pub fn step_state(step: &StepInfo) -> JobState {
    proto::convert::state_from_wire(step.state())
}

/// True for the record that stands for several pending array tasks.
pub fn is_array_meta(job: &JobInfo) -> bool {
    job.array_job_id != 0 && job.array_task_id.is_none()
}

/// The id an array's records share (the array's), else the job's own.
pub fn base_id(job: &JobInfo) -> u32 {
    if job.array_job_id != 0 {
        job.array_job_id
    } else {
        job.job_id
    }
}

/// The job's QOS; none named is `normal`.
pub fn qos(s: &JobSpec) -> &str {
    if s.qos.is_empty() { "normal" } else { &s.qos }
}

/// Why the job is pending or ended; none is `None`.
pub fn reason(job: &JobInfo) -> &str {
    if job.reason.is_empty() {
        "None"
    } else {
        &job.reason
    }
}

/// The job's standard input; none given is `/dev/null`.
pub fn stdin_path(s: &JobSpec) -> &str {
    if s.stdin_path.is_empty() {
        "/dev/null"
    } else {
        &s.stdin_path
    }
}

/// The CPUs the job asked for: tasks times CPUs per task, each at least 1.
pub fn req_cpus(s: &JobSpec) -> u32 {
    s.num_tasks.max(1) * s.cpus_per_task.max(1)
}

/// `(null)` for an empty value, as Slurm prints unset strings.
pub fn or_null(s: &str) -> &str {
    if s.is_empty() { "(null)" } else { s }
}

/// The pending tasks of an array remainder without brackets: `3-9%2`.
pub fn task_str(job: &JobInfo) -> &str {
    let s = job.array_task_str.as_str();
    s.strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or(s)
}

/// `12`, `12_3`, or `12_[3-9%2]` for a pending array remainder; `7+1` for a
/// component of a heterogeneous job.
pub fn display_id(job: &JobInfo) -> String {
    if let Some(het) = job.het {
        return proto::convert::het_from_wire(het).name();
    }
    job_id::record_id(
        job.job_id,
        job.array_job_id,
        job.array_task_id,
        &job.array_task_str,
    )
}

/// The pending task ids of an array remainder.
pub fn pending_tasks(job: &JobInfo) -> Vec<u32> {
    job_id::parse_task_list(task_str(job))
        .map(|(ids, _)| ids)
        .unwrap_or_default()
}

/// A copy of an array remainder restricted to some of its tasks: one task becomes a
/// plain task record (`12_3`), several keep the remainder form without the throttle.
pub fn narrow_array(job: &JobInfo, tasks: &[u32]) -> JobInfo {
    let mut out = job.clone();
    if let [one] = tasks {
        out.array_task_id = Some(*one);
        out.array_task_str.clear();
    } else {
        out.array_task_str = model::job::format_ranges(tasks);
    }
    out
}

/// A job to print: a record of the reply, or one derived from it (an array remainder
/// narrowed to some tasks, or one task of it). Small, so that 100k rows sort and move
/// cheaply.
#[derive(Debug, Clone)]
pub enum JobRef<'a> {
    Borrowed(&'a JobInfo),
    Owned(Box<JobInfo>),
}

impl std::ops::Deref for JobRef<'_> {
    type Target = JobInfo;
    fn deref(&self) -> &JobInfo {
        match self {
            JobRef::Borrowed(j) => j,
            JobRef::Owned(j) => j,
        }
    }
}

/// How a job id names a wire record (ignoring any step).
pub fn select(id: &JobIdSpec, job: &JobInfo) -> Option<Selected> {
    let pending = if is_array_meta(job) {
        pending_tasks(job)
    } else {
        Vec::new()
    };
    id.select(record_ids(job, &pending))
}

fn record_ids<'a>(job: &JobInfo, pending: &'a [u32]) -> RecordIds<'a> {
    RecordIds {
        id: job.job_id,
        array_job_id: job.array_job_id,
        array_task_id: job.array_task_id,
        pending_tasks: pending,
        het: job.het.as_ref().map(|h| (h.leader, h.offset)),
    }
}

/// Applies job ids (without steps) to a record, borrowing it unless a remainder had to
/// be narrowed to the tasks they name.
pub fn select_ref<'a>(ids: &[JobIdSpec], job: &'a JobInfo) -> Option<JobRef<'a>> {
    let pending = if is_array_meta(job) {
        pending_tasks(job)
    } else {
        Vec::new()
    };
    let mut tasks: Vec<u32> = Vec::new();
    for id in ids {
        match id.select(record_ids(job, &pending)) {
            Some(Selected::Whole) => return Some(JobRef::Borrowed(job)),
            Some(Selected::Tasks(t)) => tasks.extend(t),
            None => {}
        }
    }
    if tasks.is_empty() {
        return None;
    }
    tasks.sort_unstable();
    tasks.dedup();
    if tasks == pending {
        return Some(JobRef::Borrowed(job));
    }
    Some(JobRef::Owned(Box::new(narrow_array(job, &tasks))))
}

/// The job ids to ask the controller for, sorted, each once: the jobs (or arrays) the
/// ids name.
pub fn selector_ids<'a>(ids: impl IntoIterator<Item = &'a JobIdSpec>) -> Vec<String> {
    let mut out: Vec<u32> = ids.into_iter().map(JobIdSpec::job_id).collect();
    out.sort_unstable();
    out.dedup();
    out.iter().map(u32::to_string).collect()
}

/// What rendering needs besides the records: the clock, the names of the ids in them,
/// and the cluster's name.
#[derive(Debug, Clone, Default)]
pub struct Ctx {
    pub now: i64,
    pub names: Names,
    pub cluster: String,
    /// `squeue --priority`: each partition's PriorityTier, which orders its rows
    /// before their jobs' priorities (empty otherwise).
    pub partition_tiers: std::collections::BTreeMap<String, u32>,
    /// How sizes print (sacct's and sstat's `--noconvert`, sacct's `--units`).
    pub sizes: model::units::SizeConversion,
}

/// A job's or step's TRES as the commands show them: `cpu`, `mem` (when known), `node`,
/// `billing` (its CPUs) and `gres/gpu` (when it has any).
pub fn job_tres(cpus: u32, mem_mb: u64, nodes: u32, gpus: u32) -> model::tres::TresCounts {
    let mut counts = model::tres::TresCounts::new();
    counts.insert("cpu".into(), u64::from(cpus));
    if mem_mb > 0 {
        counts.insert("mem".into(), mem_mb);
    }
    counts.insert("node".into(), u64::from(nodes));
    counts.insert("billing".into(), u64::from(cpus));
    if gpus > 0 {
        counts.insert("gres/gpu".into(), u64::from(gpus));
    }
    counts
}

/// A step's TRES as Slurm shows them (`scontrol show step`, sacct's AllocTRES): its
/// CPUs, its job's memory on its nodes (a step's own `--mem` is not kept), its nodes,
/// and the GPUs it asked for, else its job's on its nodes: `cpu=1,gres/gpu=1,mem=100M,
/// node=1`.
pub fn step_tres(j: &JobInfo, step: &StepInfo) -> model::tres::TresCounts {
    let step_nodes = model::hostlist::expand(&step.nodes).unwrap_or_default();
    let nodes = step_nodes.len() as u32;
    let share = |total: u64| total / u64::from(j.num_nodes.max(1)) * u64::from(nodes);
    // The job's GPUs on the step's nodes, spread over the job's as the scheduler does.
    let job_nodes = model::hostlist::expand(&j.nodes).unwrap_or_default();
    let job_gpus_here: u32 = job_nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| step_nodes.contains(n))
        .map(|(i, _)| model::job::spread_share(j.num_gpus, i as u32, job_nodes.len() as u32))
        .sum();
    let asked = proto::convert::step_gpu_request_from_wire(step.gpu_request.clone())
        .gpus_asked(nodes, step.num_tasks);
    let gpus = u64::from(if asked > 0 { asked } else { job_gpus_here });
    let mut counts = model::tres::TresCounts::new();
    counts.insert("cpu".into(), u64::from(step.num_cpus));
    if j.mem_mb > 0 {
        counts.insert("mem".into(), share(j.mem_mb));
    }
    counts.insert("node".into(), u64::from(nodes));
    if gpus > 0 {
        counts.insert("gres/gpu".into(), gpus);
    }
    counts
}

/// The GPU-seconds a job's GPUs were busy, as NVML sampled them on its nodes (its
/// steps' figures together); 0 where none were sampled.
pub fn busy_gpu_secs(j: &JobInfo) -> u64 {
    j.steps
        .iter()
        .filter_map(|s| s.usage.as_ref()?.gpu.as_ref())
        .map(|g| g.busy_gpu_ms / 1000)
        .sum()
}

/// A TRES string as sacct and squeue print it, by name:
/// `billing=4,cpu=4,gres/gpu=1,mem=16G,node=1`.
pub fn tres_string(cpus: u32, mem_mb: u64, nodes: u32, gpus: u32) -> String {
    model::tres::format_counts_by_name(&job_tres(cpus, mem_mb, nodes, gpus))
}

/// The JSON shape Drover's `--json` follows: Slurm 22.05's, the one its `--version`
/// names. squeue's is the `openapi/v0.0.38` plugin's, sacct's the `openapi/dbv0.0.38`
/// plugin's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonPlugin {
    /// squeue (and sinfo): the controller's records.
    Ctld,
    /// sacct: the accounting records.
    Db,
}

impl JsonPlugin {
    fn type_and_name(self) -> (&'static str, &'static str) {
        match self {
            JsonPlugin::Ctld => ("openapi/v0.0.38", "Slurm OpenAPI v0.0.38"),
            JsonPlugin::Db => ("openapi/dbv0.0.38", "Slurm OpenAPI DB v0.0.38"),
        }
    }
}

#[derive(Debug, serde::Serialize)]
struct MetaJson {
    plugin: PluginJson,
    #[serde(rename = "Slurm")]
    slurm: SlurmJson,
}

#[derive(Debug, serde::Serialize)]
struct PluginJson {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'static str,
}

#[derive(Debug, serde::Serialize)]
struct SlurmJson {
    version: VersionJson,
    release: &'static str,
}

#[derive(Debug, serde::Serialize)]
struct VersionJson {
    major: u32,
    micro: u32,
    minor: u32,
}

/// The parts of the Slurm release `--version` names (`22.05.8`: 22, 5, 8).
fn slurm_version() -> VersionJson {
    let mut parts = model::config::SLURM_VERSION
        .split('.')
        .map(|p| p.parse().unwrap_or(0));
    let (major, minor, micro) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    VersionJson {
        major,
        micro,
        minor,
    }
}

fn meta(plugin: JsonPlugin) -> MetaJson {
    let (kind, name) = plugin.type_and_name();
    MetaJson {
        plugin: PluginJson { kind, name },
        slurm: SlurmJson {
            version: slurm_version(),
            release: model::config::SLURM_VERSION,
        },
    }
}

/// A JSON document as Slurm 22.05's `--json` prints it: `{"meta": {...}, "errors": [],
/// KEY: ITEMS, "warnings": []}`, pretty-printed, with a final newline.
pub fn json_doc<T: serde::Serialize>(plugin: JsonPlugin, key: &str, items: &T) -> String {
    let mut buf = Vec::with_capacity(1 << 16);
    let mut ser = serde_json::Serializer::pretty(&mut buf);
    let result = {
        use serde::ser::{SerializeMap, Serializer};
        (&mut ser).serialize_map(Some(4)).and_then(|mut m| {
            m.serialize_entry("meta", &meta(plugin))?;
            m.serialize_entry("errors", &[(); 0])?;
            m.serialize_entry(key, items)?;
            m.serialize_entry("warnings", &[(); 0])?;
            m.end()
        })
    };
    if result.is_err() {
        return String::new();
    }
    let mut out = String::from_utf8(buf).unwrap_or_default();
    out.push('\n');
    out
}

/// An exit code in the accounting JSON shape (dbv0.0.38): `{"status": "SUCCESS",
/// "return_code": 0}`, `{"status": "ERROR", "return_code": 3}`, `{"status":
/// "SIGNALED", "signal": {"signal_id": 9, "name": "Killed"}}`, `{"status": "PENDING"}`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ExitJson {
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    return_code: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signal: Option<SignalJson>,
}

#[derive(Debug, Clone, serde::Serialize)]
struct SignalJson {
    signal_id: i32,
    name: String,
}

impl ExitJson {
    /// `done`: the job or step has ended (else the status is `PENDING`).
    pub fn new(code: i32, signal: i32, done: bool) -> ExitJson {
        let (status, return_code, signal) = if !done {
            ("PENDING", None, None)
        } else if signal != 0 {
            let name = nix::sys::signal::Signal::try_from(signal)
                .map(|s| s.as_str().trim_start_matches("SIG").to_string())
                .unwrap_or_else(|_| signal.to_string());
            (
                "SIGNALED",
                None,
                Some(SignalJson {
                    signal_id: signal,
                    name,
                }),
            )
        } else if code != 0 {
            ("ERROR", Some(code), None)
        } else {
            ("SUCCESS", Some(0), None)
        };
        ExitJson {
            status,
            return_code,
            signal,
        }
    }
}

/// A job's exit as squeue's JSON (v0.0.38) gives it: the wait status, `code << 8 |
/// signal`.
pub fn wait_status(code: i32, signal: i32) -> i32 {
    (code << 8) | (signal & 0x7f)
}

/// The (exit code, signal) of a wait status, as [`wait_status`] makes it (`22` is
/// `(0, 22)`, `768` is `(3, 0)`).
pub fn exit_of_wait_status(status: i32) -> (i32, i32) {
    ((status >> 8) & 0xff, status & 0x7f)
}

/// A job id argument: one or more ids separated by commas outside brackets (`12,13_[1,3]`
/// is `12` and `13_[1,3]`), in `model::job_id`'s forms. An empty argument or item is
/// refused like any other bad id, as Slurm's scancel refuses `12,` (its empty item is
/// no number); `JobIdSpec::parse_list`, squeue's and sacct's `-j`, skips empty items.
pub fn job_ids(arg: &str) -> Result<Vec<JobIdSpec>, JobIdError> {
    job_id::split_list(arg)
        .into_iter()
        .map(JobIdSpec::parse)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::v1::JobSpec;

    fn job(id: u32, array: u32, task: Option<u32>, tasks: &str) -> JobInfo {
        JobInfo {
            job_id: id,
            array_job_id: array,
            array_task_id: task,
            array_task_str: tasks.into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_steps_tres_are_its_share_of_its_jobs() {
        let job = JobInfo {
            nodes: "n[1-2]".into(),
            num_nodes: 2,
            num_gpus: 3,
            mem_mb: 200,
            ..Default::default()
        };
        let step = |nodes: &str| StepInfo {
            nodes: nodes.into(),
            num_cpus: 1,
            ..Default::default()
        };
        let text = |st: StepInfo| model::tres::format_counts_by_name(&step_tres(&job, &st));
        // The larger share of the GPUs on the first node, as the scheduler spreads them.
        assert_eq!(text(step("n1")), "cpu=1,gres/gpu=2,mem=100M,node=1");
        assert_eq!(text(step("n2")), "cpu=1,gres/gpu=1,mem=100M,node=1");
        // What the step asked for, when it did.
        let mut asked = step("n[1-2]");
        asked.gpu_request = Some(proto::v1::StepGpuRequest {
            gpus_per_node: 1,
            ..Default::default()
        });
        assert_eq!(text(asked), "cpu=1,gres/gpu=2,mem=200M,node=2");
    }

    #[test]
    fn ids_select_records() {
        assert_eq!(display_id(&job(5, 0, None, "")), "5");
        assert_eq!(display_id(&job(7, 5, Some(2), "")), "5_2");
        assert_eq!(display_id(&job(5, 5, None, "3-4%2")), "5_[3-4%2]");
        assert_eq!(display_id(&job(5, 5, None, "[3-4%2]")), "5_[3-4%2]");

        let ids = |text: &str| JobIdSpec::parse_list(text).unwrap();
        let meta = job(5, 5, None, "3-6%2");
        let task = job(8, 5, Some(1), "");
        let picked = |list: &str, j: &JobInfo| select_ref(&ids(list), j).map(|r| display_id(&r));
        assert_eq!(picked("5", &meta).as_deref(), Some("5_[3-6%2]"));
        assert_eq!(picked("5", &task).as_deref(), Some("5_1"));
        assert_eq!(picked("5_4", &meta).as_deref(), Some("5_4"));
        assert_eq!(picked("5_4", &task), None);
        assert_eq!(picked("5_[4-5],5_9", &meta).as_deref(), Some("5_[4-5]"));
        // A task's own raw id selects it.
        assert!(select(&ids("8")[0], &task).is_some());
        assert_eq!(selector_ids(&ids("12,3_[1,2],12.batch")), ["3", "12"]);
    }

    #[test]
    fn job_fields_with_slurm_defaults() {
        let mut j = job(7, 5, Some(2), "");
        // A state number the wire does not know reads as pending.
        j.state = 99;
        assert_eq!(job_state(&j), JobState::Pending);
        assert_eq!(base_id(&j), 5);
        assert_eq!(base_id(&job(7, 0, None, "")), 7);
        assert_eq!(qos(spec(&j)), "normal");
        assert_eq!(reason(&j), "None");
        assert_eq!(stdin_path(spec(&j)), "/dev/null");
        assert_eq!(req_cpus(spec(&j)), 1);
        assert_eq!(or_null(""), "(null)");
        assert_eq!(or_null("x"), "x");
        j.spec = Some(JobSpec {
            stdout_pattern: "out-%j".into(),
            stderr_pattern: "err-%j".into(),
            qos: "high".into(),
            user: String::new(),
            uid: 42,
            num_tasks: 3,
            cpus_per_task: 2,
            ..Default::default()
        });
        assert_eq!((qos(spec(&j)), req_cpus(spec(&j))), ("high", 6));
        let mut names = Names::default();
        assert_eq!(names.job_user(&j), "42");
        names.users.insert(42, "ada".into());
        assert_eq!(names.job_user(&j), "ada");
    }

    #[test]
    fn a_record_without_its_spec_is_refused() {
        let mut j = job(5, 0, None, "");
        assert_eq!(
            check_records("squeue", std::slice::from_ref(&j))
                .unwrap_err()
                .stderr,
            "squeue: error: job 5 came without its spec from the controller\n"
        );
        j.spec = Some(JobSpec::default());
        assert!(check_records("squeue", std::slice::from_ref(&j)).is_ok());
        // A state from a newer controller is refused, not read as PENDING.
        j.steps = vec![StepInfo {
            step_id: "batch".into(),
            state: 42,
            ..Default::default()
        }];
        assert_eq!(
            check_records("squeue", std::slice::from_ref(&j))
                .unwrap_err()
                .stderr,
            "squeue: error: step 5.batch came with a state this version does not know (42)\n"
        );
        j.state = 99;
        assert_eq!(
            check_records("squeue", &[j]).unwrap_err().stderr,
            "squeue: error: job 5 came with a state this version does not know (99)\n"
        );
    }

    #[test]
    fn job_id_arguments() {
        let shown = |arg: &str| -> Vec<String> {
            job_ids(arg)
                .unwrap()
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        assert_eq!(shown("12,13_3"), ["12", "13_3"]);
        assert_eq!(shown("12_[1,3],14"), ["12_[1,3]", "14"]);
        assert_eq!(shown("12_*"), ["12_*"]);
        for bad in ["", "12,", "12,,13", "12x"] {
            assert!(job_ids(bad).is_err(), "{bad}");
        }
    }
}
