//! The fields the commands print, one table per record type, as Slurm organises them
//! (`fmt_data_job[]` in squeue, `fields[]` in sacct).
//!
//! [`JOB_FIELDS`] holds every field of a job once: what squeue calls it (its `-o`
//! letter, `-O` names, header, value, sort key, and whether the light `JobSummary`
//! view carries what it reads) and what sacct calls it (its name, default width, and
//! its value on a job line and on a step line). A field shown by one command only has
//! the other side empty. Adding a squeue field is one entry here; adding one that reads
//! new data also needs the wire (`JobInfo`, and `JobSummary` when it is light).
//!
//! ```text
//! squeue -o %i   → JOB_FIELDS row with letter 'i'  → "12_3"
//! sacct -o jobid → the same row's sacct side "JobID" → "12_3", "12_3.batch"
//! ```
//!
//! [`STEP_FIELDS`] are the fields of `squeue -s` lines.

use crate::format::Cell;
use crate::jobs::{self, Ctx};
use crate::times;
use model::JobState;
use model::units::{
    format_bytes, format_cpu_time, format_disk_bytes, format_elapsed, format_memory_mb,
};
use proto::v1::{self as v1, JobInfo, JobSpec, StepInfo};

/// What a squeue field reads: the light view of a job (`JobSummary`, expanded into a
/// `JobInfo` by `squeue::expand_summary`) or only the full record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    Summary,
    Full,
}

/// A key squeue's `-S` sorts on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum SortKey {
    Num(i64),
    /// The id order ([`id_order`]).
    Id(u32, i64),
    Text(String),
}

/// How a squeue field sorts.
#[derive(Clone, Copy)]
pub enum Sort {
    /// By its printed value.
    ByText,
    By(fn(&JobInfo, &Ctx) -> i64),
    /// By [`id_order`].
    ById,
}

/// A job field as squeue shows it.
pub struct Squeue {
    /// The `-o` type letter.
    pub letter: Option<char>,
    /// The `-O` names, lower case (matched without regard to case).
    pub names: &'static [&'static str],
    pub header: &'static str,
    /// A header a fixed width does not cut (Slurm leaves node lists whole).
    pub header_whole: bool,
    pub value: fn(&JobInfo, &Ctx) -> Cell,
    pub sort: Sort,
    pub needs: Needs,
}

/// A job field as sacct shows it.
pub struct Sacct {
    pub name: &'static str,
    /// Slurm's default width; negative is left-aligned.
    pub width: i32,
    pub job: fn(&JobInfo, &Ctx) -> String,
    /// Its value on a step's line; `None`: empty there, as in Slurm for a field of the
    /// job alone.
    pub step: Option<fn(&JobInfo, &StepInfo, &Ctx) -> String>,
}

/// One field of a job, as each command that shows it shows it.
pub struct JobFieldDef {
    pub squeue: Option<Squeue>,
    pub sacct: Option<Sacct>,
}

impl Squeue {
    /// The column title.
    pub fn header(&self) -> Cell {
        if self.header_whole {
            Cell::whole(self.header)
        } else {
            Cell::cut(self.header)
        }
    }

    /// The value for one job.
    pub fn value(&self, j: &JobInfo, ctx: &Ctx) -> Cell {
        (self.value)(j, ctx)
    }

    /// The key `-S` sorts on.
    pub fn sort_key(&self, j: &JobInfo, ctx: &Ctx) -> SortKey {
        match self.sort {
            Sort::ByText => SortKey::Text((self.value)(j, ctx).text),
            Sort::By(key) => SortKey::Num(key(j, ctx)),
            Sort::ById => {
                let (base, task) = id_order(j);
                SortKey::Id(base, task)
            }
        }
    }

    /// True when the light view carries what this field shows and sorts on.
    pub fn in_summary(&self) -> bool {
        self.needs == Needs::Summary
    }
}

impl std::fmt::Debug for Squeue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.header)
    }
}

impl PartialEq for Squeue {
    fn eq(&self, other: &Squeue) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for Squeue {}

impl std::fmt::Debug for Sacct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

impl Sacct {
    /// The value on a job's line.
    pub fn job_value(&self, j: &JobInfo, ctx: &Ctx) -> String {
        (self.job)(j, ctx)
    }

    /// The value on a step's line.
    pub fn step_value(&self, j: &JobInfo, st: &StepInfo, ctx: &Ctx) -> String {
        self.step.map(|f| f(j, st, ctx)).unwrap_or_default()
    }
}

/// A squeue field, by its `-o` letter.
pub type JobField = &'static Squeue;

/// The squeue field of a `-o` type letter.
pub fn squeue_letter(c: char) -> Option<JobField> {
    squeue_fields().find(|f| f.letter == Some(c))
}

/// The squeue field of a `-O` name (any case).
pub fn squeue_name(name: &str) -> Option<JobField> {
    let name = name.to_ascii_lowercase();
    squeue_fields().find(|f| f.names.contains(&name.as_str()))
}

/// Every squeue field.
pub fn squeue_fields() -> impl Iterator<Item = JobField> {
    JOB_FIELDS.iter().filter_map(|f| f.squeue.as_ref())
}

/// Every sacct field, in Slurm's order (the order prefixes are tried in).
pub fn sacct_fields() -> impl Iterator<Item = &'static Sacct> {
    JOB_FIELDS.iter().filter_map(|f| f.sacct.as_ref())
}

const fn sq(
    letter: Option<char>,
    names: &'static [&'static str],
    header: &'static str,
    needs: Needs,
    value: fn(&JobInfo, &Ctx) -> Cell,
) -> Squeue {
    Squeue {
        letter,
        names,
        header,
        header_whole: false,
        value,
        sort: Sort::ByText,
        needs,
    }
}

impl Squeue {
    const fn sorted(self, key: fn(&JobInfo, &Ctx) -> i64) -> Squeue {
        Squeue {
            sort: Sort::By(key),
            ..self
        }
    }

    const fn sorted_by_id(self) -> Squeue {
        Squeue {
            sort: Sort::ById,
            ..self
        }
    }

    const fn whole_header(self) -> Squeue {
        Squeue {
            header_whole: true,
            ..self
        }
    }
}

const fn sa(name: &'static str, width: i32, job: fn(&JobInfo, &Ctx) -> String) -> Sacct {
    Sacct {
        name,
        width,
        job,
        step: None,
    }
}

impl Sacct {
    const fn steps(self, step: fn(&JobInfo, &StepInfo, &Ctx) -> String) -> Sacct {
        Sacct {
            step: Some(step),
            ..self
        }
    }
}

const fn both(squeue: Squeue, sacct: Sacct) -> JobFieldDef {
    JobFieldDef {
        squeue: Some(squeue),
        sacct: Some(sacct),
    }
}

const fn squeue(squeue: Squeue) -> JobFieldDef {
    JobFieldDef {
        squeue: Some(squeue),
        sacct: None,
    }
}

const fn sacct(sacct: Sacct) -> JobFieldDef {
    JobFieldDef {
        squeue: None,
        sacct: Some(sacct),
    }
}

use Needs::{Full, Summary};

/// The order of a sort by priority: the row's partition's PriorityTier (with
/// `squeue -P`), then the job's priority.
fn priority_order(j: &JobInfo, ctx: &Ctx) -> i64 {
    let tier = ctx
        .partition_tiers
        .get(&spec(j).partition)
        .copied()
        .unwrap_or(0);
    (i64::from(tier) << 32) | i64::from(j.priority)
}

fn spec(j: &JobInfo) -> &JobSpec {
    jobs::spec(j)
}

fn state(j: &JobInfo) -> JobState {
    jobs::job_state(j)
}

/// `(null)` for an empty text, cut to its column.
fn null_cell(v: &str) -> Cell {
    Cell::cut(jobs::or_null(v))
}

/// What sacct prints for something Drover does not record (energy, usage samples, ...):
/// nothing, as Slurm's sacct without the gathering plugin.
fn not_recorded(_: &JobInfo, _: &Ctx) -> String {
    String::new()
}

fn zero(_: &JobInfo, _: &Ctx) -> String {
    "0".into()
}

fn step_zero(_: &JobInfo, _: &StepInfo, _: &Ctx) -> String {
    "0".into()
}

fn unknown(_: &JobInfo, _: &Ctx) -> String {
    "Unknown".into()
}

fn step_unknown(_: &JobInfo, _: &StepInfo, _: &Ctx) -> String {
    "Unknown".into()
}

/// A CPU time of a job: the sum of what its steps' cgroups counted (`pick` chooses
/// all, user or system time), as sacct adds up its steps' (`00:00:00` for none).
fn job_cpu_time(j: &JobInfo, pick: fn(&v1::StepUsage) -> u64) -> String {
    let us = j
        .steps
        .iter()
        .filter_map(|st| st.usage.as_ref())
        .map(pick)
        .sum();
    format_cpu_time(us)
}

/// A CPU time of a step, as its cgroups counted it on all its nodes.
fn step_cpu_time(st: &StepInfo, pick: fn(&v1::StepUsage) -> u64) -> String {
    format_cpu_time(st.usage.as_ref().map_or(0, pick))
}

/// A step's memory high-water mark (`pick` chooses the figure or the node); blank
/// where nothing counted it, and on the job's own line, as sacct prints them.
fn step_rss(st: &StepInfo, pick: impl Fn(&v1::StepUsage) -> String) -> String {
    st.usage.as_ref().map(pick).unwrap_or_default()
}

/// Which of a step's disk figures: what its tasks read, or what they wrote.
#[derive(Clone, Copy)]
enum Disk {
    Read,
    Write,
}

/// A disk figure of a step's tasks (`show` gets the figure and the tasks' count);
/// blank where their reads and writes were not counted (the batch step, a node
/// without task cgroups, a record from before they were).
fn step_disk(st: &StepInfo, which: Disk, show: impl Fn(&v1::TaskPeak, u32) -> String) -> String {
    let Some(tasks) = st.usage.as_ref().and_then(|u| u.tasks.as_ref()) else {
        return String::new();
    };
    let peak = tasks.disk.as_ref().and_then(|d| match which {
        Disk::Read => d.read.as_ref(),
        Disk::Write => d.write.as_ref(),
    });
    peak.map(|p| show(p, tasks.count)).unwrap_or_default()
}

/// MaxDiskRead, MaxDiskWrite: the most one task read or wrote.
fn disk_max(st: &StepInfo, which: Disk, ctx: &Ctx) -> String {
    step_disk(st, which, |p, _| format_disk_bytes(p.max_bytes, ctx.sizes))
}

/// MaxDiskReadNode, MaxDiskWriteNode: the node of the task that read or wrote most.
fn disk_node(st: &StepInfo, which: Disk) -> String {
    step_disk(st, which, |p, _| p.max_node.clone())
}

/// MaxDiskReadTask, MaxDiskWriteTask: the task that read or wrote most.
fn disk_task(st: &StepInfo, which: Disk) -> String {
    step_disk(st, which, |p, _| p.max_task.to_string())
}

/// AveDiskRead, AveDiskWrite: what the tasks read or wrote, on average.
fn disk_ave(st: &StepInfo, which: Disk, ctx: &Ctx) -> String {
    step_disk(st, which, |p, count| {
        format_disk_bytes(p.sum_bytes / u64::from(count.max(1)), ctx.sizes)
    })
}

/// A figure of a step's usage task by task (its tasks' own cgroups); for a step of one
/// task without them (the batch step), `whole` of the step's usage.
fn step_task_figure(
    st: &StepInfo,
    per_task: impl Fn(&v1::TaskUsage) -> String,
    whole: impl Fn(&v1::StepUsage) -> String,
) -> String {
    match st.usage.as_ref() {
        Some(u) => match &u.tasks {
            Some(t) => per_task(t),
            None if st.num_tasks <= 1 => whole(u),
            None => String::new(),
        },
        None => String::new(),
    }
}

/// CPU time in whole seconds, as AveCPU and MinCPU print it.
fn whole_seconds_cpu(us: u64) -> String {
    format_cpu_time(us / 1_000_000 * 1_000_000)
}

/// A step's TRESUsageInTot: its CPU time and memory (all tasks'), what its tasks read
/// (where counted) and, where NVML sampled its GPUs, their peak memory and average
/// utilization, in the order of Slurm's TRES ids, with Slurm 23.02's names:
/// `cpu=00:00:02,mem=1052K,fs/disk=10486784,gres/gpumem=2048M,gres/gpuutil=50`.
fn step_usage_tres(st: &StepInfo, ctx: &Ctx) -> String {
    let Some(u) = st.usage.as_ref() else {
        return String::new();
    };
    let mem = u
        .tasks
        .as_ref()
        .map_or(u.max_rss_bytes, |t| t.rss_sum_bytes);
    let mut out = format!(
        "cpu={},mem={}",
        whole_seconds_cpu(u.total_cpu_us),
        format_bytes(mem, ctx.sizes)
    );
    let read = step_disk(st, Disk::Read, |p, _| format_bytes(p.sum_bytes, ctx.sizes));
    if !read.is_empty() {
        out.push_str(&format!(",fs/disk={read}"));
    }
    if let Some(g) = &u.gpu {
        let used = proto::convert::gpu_use_from_wire(*g);
        out.push_str(&format!(
            ",gres/gpumem={},gres/gpuutil={}",
            format_bytes(used.max_memory_bytes, ctx.sizes),
            used.utilization_percent()
        ));
    }
    out
}

/// A step's TRESUsageOutTot: what its tasks wrote, where counted (`fs/disk=1024`).
fn step_usage_tres_out(st: &StepInfo, ctx: &Ctx) -> String {
    let written = step_disk(st, Disk::Write, |p, _| format_bytes(p.sum_bytes, ctx.sizes));
    if written.is_empty() {
        written
    } else {
        format!("fs/disk={written}")
    }
}

fn step_no_cpu_time(_: &JobInfo, _: &StepInfo, _: &Ctx) -> String {
    "00:00:00".into()
}

fn step_account(j: &JobInfo, _: &StepInfo, _: &Ctx) -> String {
    spec(j).account.clone()
}

fn step_cluster(_: &JobInfo, _: &StepInfo, ctx: &Ctx) -> String {
    ctx.cluster.clone()
}

fn step_cpus(_: &JobInfo, st: &StepInfo, _: &Ctx) -> String {
    st.num_cpus.to_string()
}

fn step_nodes(_: &JobInfo, st: &StepInfo, _: &Ctx) -> String {
    step_node_count(st).to_string()
}

fn step_start(_: &JobInfo, st: &StepInfo, _: &Ctx) -> String {
    times::time_or(st.start_time, "Unknown")
}

/// A field of a heterogeneous job's component, `N/A` for any other job.
fn het_cell(j: &JobInfo, f: impl Fn(&model::job::HetJob) -> String) -> Cell {
    Cell::cut(
        j.het
            .map(|h| f(&proto::convert::het_from_wire(h)))
            .unwrap_or_else(|| "N/A".into()),
    )
}

/// Whether the job got its allocation.
fn started(j: &JobInfo) -> bool {
    j.start_time > 0 && state(j) != JobState::Pending
}

/// Seconds a step ran (still running: until now).
pub fn step_elapsed(j: &JobInfo, st: &StepInfo, now: i64) -> i64 {
    if st.start_time <= 0 {
        return 0;
    }
    let end = match step_end(j, st) {
        0 => now,
        end => end,
    };
    (end - st.start_time).max(0)
}

/// When a step ended: its own end, else (still running, or not recorded) the job's.
fn step_end(j: &JobInfo, st: &StepInfo) -> i64 {
    if st.end_time > 0 {
        st.end_time
    } else {
        j.end_time
    }
}

/// How many nodes a step ran on.
pub fn step_node_count(st: &StepInfo) -> usize {
    model::hostlist::expand(&st.nodes)
        .map(|v| v.len())
        .unwrap_or(0)
}

/// Seconds the job spent suspended, the current suspension included.
fn suspended(j: &JobInfo, now: i64) -> i64 {
    let current = if state(j) == JobState::Suspended && j.suspend_time > 0 {
        (now - j.suspend_time).max(0)
    } else {
        0
    };
    j.suspended_secs + current
}

/// sacct's State text: `CANCELLED by 0` when someone cancelled the job.
pub fn state_text(j: &JobInfo) -> String {
    match (state(j), j.cancelled_by) {
        (JobState::Cancelled, Some(uid)) => format!("CANCELLED by {uid}"),
        (s, _) => s.name().to_string(),
    }
}

/// The worst exit (code, signal) of the job's steps other than the batch and extern
/// ones: Slurm's derived exit code; or the wait status `sacctmgr modify job` set, read
/// as Slurm reads it (22 is `0:22`).
pub fn derived_exit(j: &JobInfo) -> (i32, i32) {
    if let Some(status) = j.derived_exit_status {
        return crate::jobs::exit_of_wait_status(status);
    }
    j.steps
        .iter()
        .filter(|s| s.step_id != "batch" && s.step_id != "extern")
        .map(|s| (s.exit_code, s.exit_signal))
        .max()
        .unwrap_or((0, 0))
}

/// The derived exit code as sacct prints it: `2:0`.
pub fn derived_exit_code(j: &JobInfo) -> String {
    let (code, signal) = derived_exit(j);
    format!("{code}:{signal}")
}

/// Seconds between eligibility and the start (or now): sacct's Planned; 0 for a job
/// never eligible.
fn planned_wait(j: &JobInfo, now: i64) -> i64 {
    if j.eligible_time == 0 {
        0
    } else if started(j) {
        j.start_time - j.eligible_time
    } else {
        now - j.eligible_time
    }
    .max(0)
}

/// A time limit in minutes as squeue prints it, `UNLIMITED` for none.
pub fn limit_text(minutes: u32) -> String {
    times::minutes_text(minutes, "UNLIMITED")
}

fn tres_per_node(s: &JobSpec) -> String {
    if s.gpus_per_node == 0 {
        return "N/A".into();
    }
    match s.gpu_type.as_str() {
        "" => format!("gres/gpu:{}", s.gpus_per_node),
        t => format!("gres/gpu:{t}:{}", s.gpus_per_node),
    }
}

/// END_TIME: the actual end, or the expected one from the time limit; `NONE` for a
/// running job without a limit.
fn end_time(j: &JobInfo) -> String {
    match (state(j), j.expected_end) {
        (JobState::Running | JobState::Suspended | JobState::Completing, 0) => "NONE".into(),
        (_, end) => times::time_or(end, "N/A"),
    }
}

/// START_TIME: the start, or the planned one while pending.
fn start_or_planned(j: &JobInfo) -> i64 {
    if state(j) == JobState::Pending {
        j.planned_start
    } else {
        j.start_time
    }
}

/// The id order: an array's records together, the pending remainder (-1) first, then
/// the tasks by id.
pub fn id_order(j: &JobInfo) -> (u32, i64) {
    (
        jobs::base_id(j),
        j.array_task_id.map(i64::from).unwrap_or(-1),
    )
}

/// Slurm's numeric order of job states (`-S t`).
fn state_rank(j: &JobInfo, _: &Ctx) -> i64 {
    match state(j) {
        JobState::Pending | JobState::Requeued | JobState::SpecialExit => 0,
        JobState::Running => 1,
        JobState::Suspended => 2,
        JobState::Completed | JobState::Completing => 3,
        JobState::Cancelled => 4,
        JobState::Failed => 5,
        JobState::Timeout => 6,
        JobState::NodeFail => 7,
        JobState::Preempted => 8,
        JobState::BootFail => 9,
        JobState::Deadline => 10,
        JobState::OutOfMemory => 11,
    }
}

/// Every field of a job, in sacct's order, then the fields only squeue shows.
pub static JOB_FIELDS: &[JobFieldDef] = &[
    both(
        sq(Some('a'), &["account"], "ACCOUNT", Summary, |j, _| {
            null_cell(&spec(j).account)
        }),
        sa("Account", 10, |j, _| spec(j).account.clone()).steps(step_account),
    ),
    sacct(sa("AdminComment", 15, not_recorded)),
    both(
        sq(Some('C'), &["numcpus"], "CPUS", Summary, |j, _| {
            Cell::cut(j.num_cpus.to_string())
        })
        .sorted(|j, _| i64::from(j.num_cpus)),
        sa("AllocCPUS", 10, |j, _| j.num_cpus.to_string()).steps(step_cpus),
    ),
    sacct(
        sa("AllocNodes", 10, |j, _| {
            if started(j) { j.num_nodes } else { 0 }.to_string()
        })
        .steps(step_nodes),
    ),
    both(
        sq(None, &["tres-alloc"], "TRES_ALLOC", Full, |j, _| {
            Cell::cut(jobs::tres_string(
                j.num_cpus,
                j.mem_mb,
                j.num_nodes,
                j.num_gpus,
            ))
        }),
        sa("AllocTRES", 10, |j, _| {
            if started(j) {
                jobs::tres_string(j.num_cpus, j.mem_mb, j.num_nodes, j.num_gpus)
            } else {
                String::new()
            }
        })
        .steps(|j, st, _| model::tres::format_counts_by_name(&jobs::step_tres(j, st))),
    ),
    sacct(sa("AssocID", 7, zero)),
    // The step's CPU time per task, in whole seconds.
    sacct(sa("AveCPU", 10, not_recorded).steps(|_, st, _| {
        st.usage.as_ref().map_or_else(String::new, |u| {
            whole_seconds_cpu(u.total_cpu_us / u64::from(st.num_tasks.max(1)))
        })
    })),
    sacct(sa("AveCPUFreq", 10, not_recorded)),
    sacct(sa("AveDiskRead", 14, not_recorded).steps(|_, st, ctx| disk_ave(st, Disk::Read, ctx))),
    sacct(sa("AveDiskWrite", 14, not_recorded).steps(|_, st, ctx| disk_ave(st, Disk::Write, ctx))),
    sacct(sa("AvePages", 10, not_recorded)),
    // The tasks' memory high-water marks, on average.
    sacct(sa("AveRSS", 10, not_recorded).steps(|_, st, ctx| {
        step_task_figure(
            st,
            |t| format_bytes(t.rss_sum_bytes / u64::from(t.count.max(1)), ctx.sizes),
            |u| format_bytes(u.max_rss_bytes, ctx.sizes),
        )
    })),
    sacct(sa("AveVMSize", 10, not_recorded)),
    sacct(sa("BlockID", 16, not_recorded)),
    both(
        sq(None, &["cluster"], "CLUSTER", Summary, |_, ctx| {
            Cell::cut(ctx.cluster.clone())
        }),
        sa("Cluster", 10, |_, ctx| ctx.cluster.clone()).steps(step_cluster),
    ),
    both(
        sq(Some('k'), &["comment"], "COMMENT", Full, |j, _| {
            null_cell(&spec(j).comment)
        }),
        sa("Comment", 14, |j, _| spec(j).comment.clone()),
    ),
    both(
        sq(Some('f'), &["feature"], "FEATURES", Full, |j, _| {
            null_cell(&spec(j).constraint)
        }),
        sa("Constraints", 19, |j, _| spec(j).constraint.clone()),
    ),
    sacct(sa("ConsumedEnergy", 14, zero).steps(step_zero)),
    sacct(sa("ConsumedEnergyRaw", 17, zero).steps(step_zero)),
    sacct(sa("Container", 19, not_recorded)),
    sacct(
        sa("CPUTime", 10, |j, _| {
            format_elapsed((j.run_secs * i64::from(j.num_cpus)).max(0) as u64)
        })
        .steps(|j, st, ctx| {
            format_elapsed((step_elapsed(j, st, ctx.now) * i64::from(st.num_cpus)) as u64)
        }),
    ),
    sacct(
        sa("CPUTimeRAW", 10, |j, _| {
            (j.run_secs * i64::from(j.num_cpus)).to_string()
        })
        .steps(|j, st, ctx| (step_elapsed(j, st, ctx.now) * i64::from(st.num_cpus)).to_string()),
    ),
    sacct(sa("DBIndex", -21, not_recorded)),
    both(
        sq(None, &["derivedec"], "DERIVED_EC", Full, |j, _| {
            Cell::cut(derived_exit_code(j))
        }),
        sa("DerivedExitCode", 15, |j, _| derived_exit_code(j)),
    ),
    both(
        sq(Some('M'), &["timeused"], "TIME", Summary, |j, _| {
            Cell::whole(times::squeue_secs(j.run_secs))
        })
        .sorted(|j, _| j.run_secs),
        sa("Elapsed", 10, |j, _| {
            format_elapsed(j.run_secs.max(0) as u64)
        })
        .steps(|j, st, ctx| format_elapsed(step_elapsed(j, st, ctx.now) as u64)),
    ),
    sacct(
        sa("ElapsedRaw", 10, |j, _| j.run_secs.to_string())
            .steps(|j, st, ctx| step_elapsed(j, st, ctx.now).to_string()),
    ),
    both(
        sq(None, &["eligibletime"], "ELIGIBLE_TIME", Full, |j, _| {
            Cell::cut(times::time_or(j.eligible_time, "N/A"))
        }),
        sa("Eligible", 19, |j, _| {
            times::time_or(j.eligible_time, "Unknown")
        })
        .steps(step_start),
    ),
    both(
        sq(Some('e'), &["endtime"], "END_TIME", Summary, |j, _| {
            Cell::cut(end_time(j))
        })
        .sorted(|j, _| j.expected_end),
        sa("End", 19, |j, _| times::time_or(j.end_time, "Unknown"))
            .steps(|j, st, _| times::time_or(step_end(j, st), "Unknown")),
    ),
    both(
        sq(None, &["exit_code"], "EXIT_CODE", Full, |j, _| {
            Cell::cut(format!("{}:{}", j.exit_code, j.exit_signal))
        }),
        sa("ExitCode", 8, |j, _| {
            format!("{}:{}", j.exit_code, j.exit_signal)
        })
        .steps(|_, st, _| format!("{}:{}", st.exit_code, st.exit_signal)),
    ),
    sacct(sa("Extra", 14, not_recorded)),
    sacct(sa("FailedNode", 8, not_recorded)),
    sacct(sa("Flags", 19, not_recorded)),
    both(
        sq(Some('G'), &["groupid"], "GROUP", Summary, |j, _| {
            Cell::cut(spec(j).gid.to_string())
        }),
        sa("GID", 6, |j, _| spec(j).gid.to_string()),
    ),
    both(
        sq(Some('g'), &["groupname"], "GROUP", Summary, |j, ctx| {
            Cell::cut(ctx.names.group(spec(j).gid))
        }),
        sa("Group", 9, |j, ctx| ctx.names.group(spec(j).gid)),
    ),
    both(
        sq(Some('i'), &["jobarrayid"], "JOBID", Summary, |j, _| {
            Cell::cut(jobs::display_id(j))
        })
        .sorted_by_id(),
        sa("JobID", -12, |j, _| jobs::display_id(j))
            .steps(|j, st, _| format!("{}.{}", jobs::display_id(j), st.step_id)),
    ),
    both(
        sq(Some('A'), &["jobid"], "JOBID", Summary, |j, _| {
            Cell::cut(j.job_id.to_string())
        })
        .sorted_by_id(),
        sa("JobIDRaw", -12, |j, _| j.job_id.to_string())
            .steps(|j, st, _| format!("{}.{}", j.job_id, st.step_id)),
    ),
    both(
        sq(Some('j'), &["name"], "NAME", Summary, |j, _| {
            Cell::cut(spec(j).name.clone())
        }),
        sa("JobName", 10, |j, _| spec(j).name.clone()).steps(|_, st, _| st.name.clone()),
    ),
    sacct(sa("Layout", 9, not_recorded)),
    both(
        sq(Some('W'), &["licenses"], "LICENSES", Summary, |_, _| {
            Cell::cut("(null)")
        }),
        sa("Licenses", 10, not_recorded),
    ),
    sacct(sa("MaxDiskRead", 12, not_recorded).steps(|_, st, ctx| disk_max(st, Disk::Read, ctx))),
    sacct(sa("MaxDiskReadNode", 15, not_recorded).steps(|_, st, _| disk_node(st, Disk::Read))),
    sacct(sa("MaxDiskReadTask", 15, not_recorded).steps(|_, st, _| disk_task(st, Disk::Read))),
    sacct(sa("MaxDiskWrite", 12, not_recorded).steps(|_, st, ctx| disk_max(st, Disk::Write, ctx))),
    sacct(sa("MaxDiskWriteNode", 16, not_recorded).steps(|_, st, _| disk_node(st, Disk::Write))),
    sacct(sa("MaxDiskWriteTask", 16, not_recorded).steps(|_, st, _| disk_task(st, Disk::Write))),
    sacct(sa("MaxPages", 8, not_recorded)),
    sacct(sa("MaxPagesNode", 12, not_recorded)),
    sacct(sa("MaxPagesTask", 14, not_recorded)),
    // The highest of one task, where the tasks have cgroups of their own; else the
    // step's cgroup on its busiest node.
    sacct(sa("MaxRSS", 10, not_recorded).steps(|_, st, ctx| {
        step_rss(st, |u| {
            format_bytes(
                u.tasks
                    .as_ref()
                    .map_or(u.max_rss_bytes, |t| t.max_rss_bytes),
                ctx.sizes,
            )
        })
    })),
    sacct(sa("MaxRSSNode", 10, not_recorded).steps(|_, st, _| {
        step_rss(st, |u| {
            u.tasks
                .as_ref()
                .map_or_else(|| u.max_rss_node.clone(), |t| t.max_rss_node.clone())
        })
    })),
    sacct(
        sa("MaxRSSTask", 10, not_recorded)
            .steps(|_, st, _| step_task_figure(st, |t| t.max_rss_task.to_string(), |_| "0".into())),
    ),
    sacct(sa("MaxVMSize", 10, not_recorded)),
    sacct(sa("MaxVMSizeNode", 14, not_recorded)),
    sacct(sa("MaxVMSizeTask", 14, not_recorded)),
    sacct(sa("McsLabel", 12, not_recorded)),
    sacct(sa("MinCPU", 10, not_recorded).steps(|_, st, _| {
        step_task_figure(
            st,
            |t| whole_seconds_cpu(t.min_cpu_us),
            |u| whole_seconds_cpu(u.total_cpu_us),
        )
    })),
    sacct(sa("MinCPUNode", 10, not_recorded).steps(|_, st, _| {
        step_task_figure(st, |t| t.min_cpu_node.clone(), |u| u.max_rss_node.clone())
    })),
    sacct(
        sa("MinCPUTask", 10, not_recorded)
            .steps(|_, st, _| step_task_figure(st, |t| t.min_cpu_task.to_string(), |_| "0".into())),
    ),
    sacct(sa("NCPUS", 10, |j, _| j.num_cpus.to_string()).steps(step_cpus)),
    both(
        sq(Some('D'), &["numnodes"], "NODES", Summary, |j, _| {
            Cell::cut(j.num_nodes.to_string())
        })
        .sorted(|j, _| i64::from(j.num_nodes)),
        sa("NNodes", 8, |j, _| j.num_nodes.to_string()).steps(step_nodes),
    ),
    both(
        sq(Some('N'), &["nodelist"], "NODELIST", Summary, |j, _| {
            Cell::whole(j.nodes.clone())
        })
        .whole_header(),
        sa("NodeList", 15, |j, _| {
            if j.nodes.is_empty() {
                "None assigned".into()
            } else {
                j.nodes.clone()
            }
        })
        .steps(|_, st, _| st.nodes.clone()),
    ),
    both(
        sq(None, &["numtasks"], "TASKS", Full, |j, _| {
            Cell::cut(spec(j).num_tasks.max(1).to_string())
        }),
        sa("NTasks", 8, not_recorded).steps(|_, st, _| st.num_tasks.to_string()),
    ),
    both(
        sq(Some('P'), &["partition"], "PARTITION", Summary, |j, _| {
            Cell::cut(spec(j).partition.clone())
        }),
        sa("Partition", 10, |j, _| spec(j).partition.clone()),
    ),
    sacct(sa("Planned", 10, |j, ctx| {
        format_elapsed(planned_wait(j, ctx.now) as u64)
    })),
    sacct(sa("PlannedCPU", 10, |j, ctx| {
        format_elapsed((planned_wait(j, ctx.now) * i64::from(j.num_cpus)) as u64)
    })),
    sacct(sa("PlannedCPURAW", 13, |j, ctx| {
        (planned_wait(j, ctx.now) * i64::from(j.num_cpus)).to_string()
    })),
    both(
        sq(Some('Q'), &["prioritylong"], "PRIORITY", Summary, |j, _| {
            Cell::cut(j.priority.to_string())
        })
        .sorted(priority_order),
        sa("Priority", 10, |j, _| j.priority.to_string()),
    ),
    both(
        sq(Some('q'), &["qos"], "QOS", Summary, |j, _| {
            Cell::cut(jobs::qos(spec(j)))
        }),
        sa("QOS", 10, |j, _| jobs::qos(spec(j)).to_string()),
    ),
    sacct(sa("QOSRAW", 6, |_, _| "1".into())),
    sacct(sa("QOSREQ", 10, not_recorded)),
    both(
        sq(Some('r'), &["reason"], "REASON", Summary, |j, _| {
            Cell::cut(jobs::reason(j))
        }),
        sa("Reason", 22, |j, _| jobs::reason(j).to_string()),
    ),
    sacct(sa("ReqCPUFreq", 10, unknown).steps(step_unknown)),
    sacct(sa("ReqCPUFreqGov", 13, unknown).steps(step_unknown)),
    sacct(sa("ReqCPUFreqMax", 13, unknown).steps(step_unknown)),
    sacct(sa("ReqCPUFreqMin", 13, unknown).steps(step_unknown)),
    sacct(sa("ReqCPUS", 8, |j, _| jobs::req_cpus(spec(j)).to_string()).steps(step_cpus)),
    sacct(sa("ReqMem", 10, |j, _| {
        if j.mem_mb == 0 {
            "0".into()
        } else {
            format_memory_mb(j.mem_mb)
        }
    })),
    sacct(sa("ReqNodes", 8, |j, _| {
        spec(j).num_nodes.max(1).to_string()
    })),
    sacct(sa("ReqTRES", 10, |j, _| {
        let s = spec(j);
        jobs::tres_string(jobs::req_cpus(s), j.mem_mb, s.num_nodes.max(1), j.num_gpus)
    })),
    both(
        sq(
            Some('v'),
            &["reservation"],
            "RESERVATION",
            Summary,
            |j, _| null_cell(&spec(j).reservation),
        ),
        sa("Reservation", 20, |j, _| spec(j).reservation.clone()),
    ),
    sacct(sa("ReservationId", 8, not_recorded)),
    both(
        sq(None, &["restartcnt"], "RESTARTCNT", Full, |j, _| {
            Cell::cut(j.restart_count.to_string())
        }),
        sa("Restarts", 8, |j, _| j.restart_count.to_string()),
    ),
    both(
        sq(Some('S'), &["starttime"], "START_TIME", Summary, |j, _| {
            Cell::cut(times::time_or(start_or_planned(j), "N/A"))
        })
        .sorted(|j, _| match (state(j), j.planned_start) {
            (JobState::Pending, 0) => i64::MAX,
            _ => start_or_planned(j),
        }),
        sa("Start", 19, |j, _| {
            times::time_or(if started(j) { j.start_time } else { 0 }, "Unknown")
        })
        .steps(step_start),
    ),
    both(
        sq(Some('T'), &["state"], "STATE", Summary, |j, _| {
            Cell::cut(state(j).name())
        })
        .sorted(state_rank),
        sa("State", 10, |j, _| state_text(j))
            .steps(|_, st, _| jobs::step_state(st).name().to_string()),
    ),
    both(
        sq(None, &["stderr"], "STDERR", Full, |j, _| {
            Cell::cut(j.stderr_path.as_str())
        }),
        sa("StdErr", 20, |j, _| j.stderr_path.clone()),
    ),
    both(
        sq(None, &["stdin"], "STDIN", Full, |j, _| {
            Cell::cut(jobs::stdin_path(spec(j)))
        }),
        sa("StdIn", 20, |j, _| jobs::stdin_path(spec(j)).to_string()),
    ),
    both(
        sq(None, &["stdout"], "STDOUT", Full, |j, _| {
            Cell::cut(j.stdout_path.as_str())
        }),
        sa("StdOut", 20, |j, _| j.stdout_path.clone()),
    ),
    both(
        sq(
            Some('V'),
            &["submittime"],
            "SUBMIT_TIME",
            Summary,
            |j, _| Cell::cut(times::time_or(j.submit_time, "N/A")),
        )
        .sorted(|j, _| j.submit_time),
        sa("Submit", 19, |j, _| {
            times::time_or(j.submit_time, "Unknown")
        })
        .steps(step_start),
    ),
    sacct(sa("SubmitLine", 20, not_recorded)),
    sacct(
        sa("Suspended", 10, |j, ctx| {
            format_elapsed(suspended(j, ctx.now) as u64)
        })
        .steps(step_no_cpu_time),
    ),
    sacct(sa("SystemComment", 15, not_recorded)),
    sacct(
        sa("SystemCPU", 10, |j, _| job_cpu_time(j, |u| u.system_cpu_us))
            .steps(|_, st, _| step_cpu_time(st, |u| u.system_cpu_us)),
    ),
    both(
        sq(Some('l'), &["timelimit"], "TIME_LIMIT", Summary, |j, _| {
            Cell::whole(limit_text(spec(j).time_limit_min))
        })
        .sorted(|j, _| i64::from(spec(j).time_limit_min)),
        sa("Timelimit", 10, |j, _| {
            times::elapsed_limit(spec(j).time_limit_min)
        }),
    ),
    sacct(sa("TimelimitRaw", 10, |j, _| {
        match spec(j).time_limit_min {
            0 => "UNLIMITED".into(),
            limit => limit.to_string(),
        }
    })),
    sacct(
        sa("TotalCPU", 10, |j, _| job_cpu_time(j, |u| u.total_cpu_us))
            .steps(|_, st, _| step_cpu_time(st, |u| u.total_cpu_us)),
    ),
    sacct(sa("TRESUsageInAve", 14, not_recorded)),
    sacct(sa("TRESUsageInMax", 14, not_recorded)),
    sacct(sa("TRESUsageInMaxNode", 18, not_recorded)),
    sacct(sa("TRESUsageInMaxTask", 18, not_recorded)),
    sacct(sa("TRESUsageInMin", 14, not_recorded)),
    sacct(sa("TRESUsageInMinNode", 18, not_recorded)),
    sacct(sa("TRESUsageInMinTask", 18, not_recorded)),
    sacct(sa("TRESUsageInTot", 14, not_recorded).steps(|_, st, ctx| step_usage_tres(st, ctx))),
    sacct(sa("TRESUsageOutAve", 15, not_recorded)),
    sacct(sa("TRESUsageOutMax", 15, not_recorded)),
    sacct(sa("TRESUsageOutMaxNode", 19, not_recorded)),
    sacct(sa("TRESUsageOutMaxTask", 19, not_recorded)),
    sacct(sa("TRESUsageOutMin", 15, not_recorded)),
    sacct(sa("TRESUsageOutMinNode", 19, not_recorded)),
    sacct(sa("TRESUsageOutMinTask", 19, not_recorded)),
    sacct(sa("TRESUsageOutTot", 15, not_recorded).steps(|_, st, ctx| step_usage_tres_out(st, ctx))),
    both(
        sq(Some('U'), &["userid"], "UID", Summary, |j, _| {
            Cell::cut(spec(j).uid.to_string())
        })
        .sorted(|j, _| i64::from(spec(j).uid)),
        sa("UID", 6, |j, _| spec(j).uid.to_string()),
    ),
    both(
        sq(Some('u'), &["username"], "USER", Summary, |j, ctx| {
            Cell::cut(ctx.names.job_user(j))
        }),
        sa("User", 9, |j, ctx| ctx.names.job_user(j)),
    ),
    sacct(
        sa("UserCPU", 10, |j, _| job_cpu_time(j, |u| u.user_cpu_us))
            .steps(|_, st, _| step_cpu_time(st, |u| u.user_cpu_us)),
    ),
    both(
        sq(Some('w'), &["wckey"], "WCKEY", Full, |j, _| {
            null_cell(&spec(j).wckey)
        }),
        sa("WCKey", 10, |j, _| spec(j).wckey.clone()),
    ),
    sacct(sa("WCKeyID", 10, zero)),
    both(
        sq(Some('Z'), &["workdir"], "WORK_DIR", Full, |j, _| {
            Cell::cut(spec(j).work_dir.clone())
        }),
        sa("WorkDir", 20, |j, _| spec(j).work_dir.clone()),
    ),
    // squeue only.
    // A heterogeneous job's component: its leader's id, its offset and every
    // component's id (N/A for any other job).
    squeue(sq(None, &["hetjobid"], "HET_JOB_ID", Summary, |j, _| {
        het_cell(j, |h| h.leader.to_string())
    })),
    squeue(sq(
        None,
        &["hetjoboffset"],
        "HET_JOB_OFFSET",
        Summary,
        |j, _| het_cell(j, |h| h.offset.to_string()),
    )),
    squeue(sq(
        None,
        &["hetjobidset"],
        "HET_JOB_ID_SET",
        Summary,
        |j, _| het_cell(j, |h| h.id_set()),
    )),
    squeue(sq(
        Some('b'),
        &["tres-per-node"],
        "TRES_PER_NODE",
        Full,
        |j, _| Cell::cut(tres_per_node(spec(j))),
    )),
    squeue(sq(Some('B'), &["batchhost"], "EXEC_HOST", Full, |j, _| {
        Cell::cut(if j.batch_host.is_empty() {
            "n/a"
        } else {
            &j.batch_host
        })
    })),
    squeue(sq(Some('c'), &["mincpus"], "MIN_CPUS", Full, |j, _| {
        let s = spec(j);
        Cell::cut((s.cpus_per_task.max(1) * s.ntasks_per_node.max(1)).to_string())
    })),
    squeue(sq(
        Some('d'),
        &["mintmpdisk"],
        "MIN_TMP_DISK",
        Summary,
        |_, _| Cell::cut("0"),
    )),
    squeue(sq(
        Some('E'),
        &["dependency"],
        "DEPENDENCY",
        Full,
        |j, _| null_cell(&spec(j).dependency),
    )),
    squeue(
        sq(
            Some('F'),
            &["arrayjobid"],
            "ARRAY_JOB_ID",
            Summary,
            |j, _| Cell::cut(jobs::base_id(j).to_string()),
        )
        .sorted_by_id(),
    ),
    squeue(sq(
        Some('h'),
        &["oversubscribe"],
        "OVER_SUBSCRIBE",
        Full,
        |j, _| Cell::cut(if spec(j).exclusive { "NO" } else { "OK" }),
    )),
    squeue(sq(
        Some('H'),
        &["sockets"],
        "SOCKETS_PER_NODE",
        Summary,
        |_, _| Cell::cut("*"),
    )),
    squeue(sq(
        Some('I'),
        &["cores"],
        "CORES_PER_SOCKET",
        Summary,
        |_, _| Cell::cut("*"),
    )),
    squeue(sq(
        Some('J'),
        &["threads"],
        "THREADS_PER_CORE",
        Summary,
        |_, _| Cell::cut("*"),
    )),
    squeue(sq(
        Some('K'),
        &["arraytaskid"],
        "ARRAY_TASK_ID",
        Summary,
        |j, _| {
            Cell::cut(match j.array_task_id {
                _ if jobs::is_array_meta(j) => jobs::task_str(j).to_string(),
                Some(t) => t.to_string(),
                None => "N/A".into(),
            })
        },
    )),
    squeue(sq(
        Some('L'),
        &["timeleft"],
        "TIME_LEFT",
        Summary,
        |j, _| {
            Cell::whole(match j.time_left_secs {
                None => "UNLIMITED".into(),
                Some(left) => times::squeue_secs(left),
            })
        },
    )),
    squeue(sq(Some('m'), &["minmemory"], "MIN_MEMORY", Full, |j, _| {
        let s = spec(j);
        Cell::cut(match (s.mem_per_node_mb, s.mem_per_cpu_mb) {
            (0, 0) => "0".to_string(),
            (0, c) => format_memory_mb(c),
            (n, _) => format_memory_mb(n),
        })
    })),
    squeue(sq(Some('n'), &["reqnodes"], "REQ_NODES", Full, |j, _| {
        Cell::cut(spec(j).nodelist.clone())
    })),
    squeue(sq(Some('o'), &["command"], "COMMAND", Full, |j, _| {
        Cell::cut(jobs::or_null(&spec(j).command).to_string())
    })),
    squeue(sq(
        Some('O'),
        &["contiguous"],
        "CONTIGUOUS",
        Summary,
        |_, _| Cell::cut("0"),
    )),
    squeue(
        sq(Some('p'), &["priority"], "PRIORITY", Summary, |j, _| {
            Cell::cut(format!(
                "{:16.14}",
                f64::from(j.priority) / f64::from(u32::MAX)
            ))
        })
        .sorted(priority_order),
    ),
    squeue(
        sq(
            Some('R'),
            &["reasonlist"],
            "NODELIST(REASON)",
            Summary,
            |j, _| {
                if matches!(
                    state(j),
                    JobState::Pending
                        | JobState::Requeued
                        | JobState::Timeout
                        | JobState::OutOfMemory
                        | JobState::Deadline
                        | JobState::SpecialExit
                        | JobState::Failed
                ) {
                    Cell::cut(format!("({})", jobs::reason(j)))
                } else {
                    Cell::whole(j.nodes.clone())
                }
            },
        )
        .whole_header(),
    ),
    squeue(sq(
        Some('s'),
        &["selectjobinfo"],
        "SELECT_JOBINFO",
        Summary,
        |_, _| Cell::cut("N/A"),
    )),
    squeue(
        sq(Some('t'), &["statecompact"], "ST", Summary, |j, _| {
            Cell::cut(state(j).short_name())
        })
        .sorted(state_rank),
    ),
    squeue(sq(
        Some('x'),
        &["excnodes", "exc_nodes"],
        "EXC_NODES",
        Full,
        |j, _| Cell::cut(spec(j).exclude.clone()),
    )),
    squeue(sq(
        Some('X'),
        &["corespec"],
        "CORE_SPEC",
        Summary,
        |_, _| Cell::cut("N/A"),
    )),
    squeue(
        sq(Some('y'), &["nice"], "NICE", Summary, |j, _| {
            Cell::cut(spec(j).nice.to_string())
        })
        .sorted(|j, _| i64::from(spec(j).nice)),
    ),
    squeue(
        sq(Some('Y'), &["schednodes"], "SCHEDNODES", Summary, |j, _| {
            Cell::whole(jobs::or_null(&j.planned_nodes))
        })
        .whole_header(),
    ),
    squeue(sq(Some('z'), &["sct"], "S:C:T", Summary, |_, _| {
        Cell::cut("*:*:*")
    })),
    squeue(sq(None, &["accruetime"], "ACCRUE_TIME", Full, |j, _| {
        Cell::cut(times::time_or(j.eligible_time, "N/A"))
    })),
    squeue(sq(None, &["allocnodes"], "ALLOC_NODES", Full, |j, _| {
        null_cell(&spec(j).submit_host)
    })),
    squeue(sq(None, &["batchflag"], "BATCH_FLAG", Summary, |_, _| {
        Cell::cut("1")
    })),
    // Drover's: what a running job borrows of other accounts' idle guaranteed quota.
    squeue(sq(None, &["borrowed"], "BORROWED", Full, |j, _| {
        null_cell(&j.borrowed)
    })),
    squeue(sq(
        None,
        &["cpus-per-task"],
        "CPUS_PER_TASK",
        Full,
        |j, _| Cell::cut(spec(j).cpus_per_task.max(1).to_string()),
    )),
    squeue(sq(
        None,
        &["pendingtime"],
        "PENDING_TIME",
        Summary,
        |j, ctx| {
            Cell::cut(
                if j.start_time > 0 {
                    j.start_time - j.submit_time
                } else {
                    ctx.now - j.submit_time
                }
                .max(0)
                .to_string(),
            )
        },
    )),
    squeue(sq(None, &["requeue"], "REQUEUE", Full, |j, _| {
        Cell::cut(if spec(j).requeue { "1" } else { "0" })
    })),
    squeue(sq(None, &["tres-per-job"], "TRES_PER_JOB", Full, |j, _| {
        let gpus = spec(j).gpus;
        Cell::cut(if gpus > 0 {
            format!("gres/gpu:{gpus}")
        } else {
            "N/A".into()
        })
    })),
];

/// A field of a step line (`squeue -s`).
pub struct StepFieldDef {
    pub letter: char,
    pub header: &'static str,
    pub header_whole: bool,
    pub value: fn(&JobInfo, &StepInfo, &Ctx) -> Cell,
}

impl StepFieldDef {
    pub fn header(&self) -> Cell {
        if self.header_whole {
            Cell::whole(self.header)
        } else {
            Cell::cut(self.header)
        }
    }
}

impl std::fmt::Debug for StepFieldDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.header)
    }
}

impl PartialEq for StepFieldDef {
    fn eq(&self, other: &StepFieldDef) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for StepFieldDef {}

/// A step field, by its `-o` letter.
pub type StepField = &'static StepFieldDef;

/// The step field of a `-o` type letter.
pub fn step_letter(c: char) -> Option<StepField> {
    STEP_FIELDS.iter().find(|f| f.letter == c)
}

const fn step(
    letter: char,
    header: &'static str,
    value: fn(&JobInfo, &StepInfo, &Ctx) -> Cell,
) -> StepFieldDef {
    StepFieldDef {
        letter,
        header,
        header_whole: false,
        value,
    }
}

/// The fields of `squeue -s` lines.
pub static STEP_FIELDS: &[StepFieldDef] = &[
    step('i', "STEPID", |j, st, _| {
        Cell::cut(format!("{}.{}", jobs::display_id(j), st.step_id))
    }),
    step('j', "NAME", |_, st, _| Cell::cut(st.name.clone())),
    step('P', "PARTITION", |j, _, _| {
        Cell::cut(spec(j).partition.clone())
    }),
    step('u', "USER", |j, _, ctx| Cell::cut(ctx.names.job_user(j))),
    step('U', "UID", |j, _, _| Cell::cut(spec(j).uid.to_string())),
    step('M', "TIME", |_, st, ctx| {
        Cell::whole(times::squeue_secs(if st.start_time > 0 {
            ctx.now - st.start_time
        } else {
            0
        }))
    }),
    StepFieldDef {
        header_whole: true,
        ..step('N', "NODELIST", |_, st, _| Cell::whole(st.nodes.clone()))
    },
    step('S', "START_TIME", |_, st, _| {
        Cell::cut(times::time_or(st.start_time, "N/A"))
    }),
    step('l', "TIME_LIMIT", |j, _, _| {
        Cell::whole(limit_text(spec(j).time_limit_min))
    }),
    step('A', "TASKS", |_, st, _| Cell::cut(st.num_tasks.to_string())),
    step('C', "CPUS", |_, st, _| Cell::cut(st.num_cpus.to_string())),
    step('T', "STATE", |_, st, _| {
        Cell::cut(jobs::step_state(st).name())
    }),
];
