//! `sacct`: accounting of running and finished jobs, as Slurm's sacct prints it.
//!
//! The controller keeps finished jobs; sacct asks for them (`include_finished`) within a
//! time window (`-S`/`-E`, by default since midnight unless `-j` names jobs) and prints
//! one row per job followed by its steps (`N.batch`, `N.0`, ...) unless `-X`. Columns
//! come from Slurm's field table (`-o JobID,State%20`, case-insensitive prefixes), in
//! aligned (`+` marks cut values), `--parsable`, `--parsable2` or `--json` form.
//! Rendering (`render`) is pure and unit-tested.
//!
//! ```text
//! sacct -o JobID,State,NodeList --parsable2 -j 12    →  JobID|State|NodeList
//!                                                       12|COMPLETED|gpu01
//!                                                       12.batch|COMPLETED|gpu01
//! ```

use crate::args::{self, split_list};
use crate::calls;
use crate::client;
use crate::exit::Exit;
use crate::fields::{self, Sacct};
use crate::format::{self, Parsable, TableField};
use crate::jobs::{self, Ctx, JobRef};
use crate::opts::{OptSpec, flag, optional, value};
use crate::times;
use crate::users::{self, Names};
use crate::words::atoi;
use crate::words::starts_with_ci;
use model::JobState;
use model::job_id::JobIdSpec;
use model::timespec::{self, Toward};
use proto::v1::{JobFilter, JobInfo, ListJobsRequest, StepInfo};
use serde::Serialize;
use std::process::ExitCode;

const SPECS: &[OptSpec] = &[
    flag("allusers", Some('a')),
    value("accounts", Some('A')),
    flag("allocations", Some('X')),
    flag("t-allocations", Some('t')),
    flag("brief", Some('b')),
    flag("completion", Some('c')),
    value("constraints", Some('C')),
    value("delimiter", None),
    flag("duplicates", Some('D')),
    flag("federation", None),
    flag("helpformat", Some('e')),
    flag("help-fields", None),
    value("endtime", Some('E')),
    value("file", Some('f')),
    value("flags", Some('F')),
    value("gid", Some('g')),
    value("group", None),
    flag("help", Some('h')),
    flag("json", None),
    flag("local", None),
    flag("me", None),
    value("name", None),
    value("nnodes", Some('i')),
    value("ncpus", Some('I')),
    value("jobs", Some('j')),
    value("timelimit-min", Some('k')),
    value("timelimit-max", Some('K')),
    flag("long", Some('l')),
    flag("allclusters", Some('L')),
    value("cluster", None),
    value("clusters", Some('M')),
    value("nodelist", Some('N')),
    flag("noconvert", None),
    value("units", None),
    flag("noheader", Some('n')),
    value("fields", None),
    value("format", Some('o')),
    flag("parsable", Some('p')),
    flag("parsable2", Some('P')),
    value("qos", Some('q')),
    value("partition", Some('r')),
    value("reason", Some('R')),
    value("state", Some('s')),
    value("starttime", Some('S')),
    flag("truncate", Some('T')),
    value("uid", Some('u')),
    value("user", None),
    flag("usage", Some('U')),
    flag("verbose", Some('v')),
    flag("version", Some('V')),
    value("wckeys", Some('W')),
    optional("whole-hetjob", None),
    value("associations", Some('x')),
];

const ALIASES: &[(&str, &str)] = &[
    ("t-allocations", "allocations"),
    ("help-fields", "helpformat"),
    ("group", "gid"),
    ("cluster", "clusters"),
    ("fields", "format"),
    ("user", "uid"),
];

const USAGE: &str = "Usage: sacct [options]\n\tUse --help for help\n";

const DEFAULT_FIELDS: &str = "jobid,jobname,partition,account,alloccpus,state,exitcode";
const BRIEF_FIELDS: &str = "jobid,state,exitcode";
const LONG_FIELDS: &str = "jobid,jobidraw,jobname,partition,maxvmsize,maxvmsizenode,maxvmsizetask,\
avevmsize,maxrss,maxrssnode,maxrsstask,averss,maxpages,maxpagesnode,maxpagestask,avepages,mincpu,\
mincpunode,mincputask,avecpu,ntasks,alloccpus,elapsed,state,exitcode,avecpufreq,reqcpufreqmin,\
reqcpufreqmax,reqcpufreqgov,reqmem,consumedenergy,maxdiskread,maxdiskreadnode,maxdiskreadtask,\
avediskread,maxdiskwrite,maxdiskwritenode,maxdiskwritetask,avediskwrite,reqtres,alloctres,\
tresusageinave,tresusageinmax,tresusageinmaxnode,tresusageinmaxtask,tresusageinmin,\
tresusageinminnode,tresusageinmintask,tresusageintot,tresusageoutmax,tresusageoutmaxnode,\
tresusageoutmaxtask,tresusageoutave,tresusageouttot";

/// Parses a field list (`JobID,State%20,nodelist%-256`): names match the table without
/// regard to case, a prefix picks the first field it starts (`jobn` is JobName), `ALL`
/// takes every field; `%N` sets the width (negative: left-aligned).
pub fn parse_fields(list: &str) -> Result<Vec<(&'static Sacct, i32)>, String> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, width) = match item.split_once('%') {
            Some((n, w)) => (n, Some(atoi(w))),
            None => (item, None),
        };
        if !name.is_empty() && starts_with_ci("ALL", name) {
            out.extend(fields::sacct_fields().map(|f| (f, width.unwrap_or(f.width))));
            continue;
        }
        let found =
            fields::sacct_fields().find(|f| !name.is_empty() && starts_with_ci(f.name, name));
        match found {
            Some(f) => out.push((f, width.unwrap_or(f.width))),
            None => return Err(format!("Invalid field requested: \"{name}\"")),
        }
    }
    Ok(out)
}

/// Everything the command line asked for.
#[derive(Debug, Clone)]
pub struct Options {
    /// `-v`: say which accounting store answers, as Slurm's sacct does first.
    pub verbose: bool,
    pub fields: Vec<(&'static Sacct, i32)>,
    /// The command line chose the fields (`-o`, `-b`, `-l`), not SACCT_FORMAT or the
    /// default.
    pub fields_given: bool,
    pub noheader: bool,
    pub mode: Parsable,
    pub delimiter: String,
    pub json: bool,
    pub no_steps: bool,
    pub jobs: Option<Vec<JobIdSpec>>,
    /// Names and uids; empty: every user.
    pub users: Vec<String>,
    pub names: Vec<String>,
    pub accounts: Vec<String>,
    pub partitions: Vec<String>,
    pub states: Vec<JobState>,
    /// `-s` named only states Drover never enters: no job matches.
    pub no_state: bool,
    pub qos: Vec<String>,
    pub wckeys: Vec<String>,
    pub gids: Vec<u32>,
    pub nodes: Vec<String>,
    /// `-R`: pending or end reasons.
    pub reasons: Vec<String>,
    pub window_start: i64,
    /// 0: no end.
    pub window_end: i64,
    /// How the window picks jobs: by submit time with `-j`, by state with `-s`, else
    /// by eligibility (Slurm 22.05's sacct).
    pub window_rule: model::filter::WindowRule,
    /// How sizes print: `--units` over `--noconvert` over converting exactly.
    pub sizes: model::units::SizeConversion,
}

/// How sizes print as `--units` and `--noconvert` ask (sacct's and sstat's; a unit
/// overrides `--noconvert`, as in Slurm).
pub fn size_conversion(
    p: &crate::opts::Parsed,
    program: &str,
) -> Result<model::units::SizeConversion, Exit> {
    use model::units::{SizeConversion, SizeUnit};
    if let Some(unit) = p.get("units") {
        let unit = SizeUnit::parse(unit).map_err(|e| Exit::error(program, e.to_string()))?;
        return Ok(SizeConversion::To(unit));
    }
    Ok(if p.has("noconvert") {
        SizeConversion::Kept
    } else {
        SizeConversion::Exact
    })
}

/// Parses the command line. `now` is the current time, `uid`/`me` the caller.
pub fn parse_args(
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
    now: i64,
    uid: u32,
    me: &str,
) -> Result<Options, Exit> {
    let p = args::parse_command_line("sacct", args, SPECS, ALIASES, HELP, USAGE)?;
    if p.has("helpformat") {
        return Err(Exit::info(help_fields()));
    }
    if !p.positional.is_empty() {
        return Err(Exit::usage(
            "sacct",
            format!("error: Unknown arguments: {}", p.positional.join(" ")),
        ));
    }

    let mut jobs: Option<Vec<JobIdSpec>> = None;
    for text in p.all("jobs") {
        let sel = JobIdSpec::parse_list(text).map_err(|e| Exit::error("sacct", e.to_string()))?;
        jobs.get_or_insert_with(Vec::new).extend(sel);
    }
    let mut states = Vec::new();
    for text in p.all("state") {
        for s in split_list(text) {
            match JobState::parse(&s) {
                Some(st) => states.push(st),
                // States Drover never enters: accepted, match nothing.
                None if ["RS", "RESIZING", "RH"].contains(&s.to_ascii_uppercase().as_str()) => {}
                None => {
                    return Err(Exit {
                        code: 1,
                        stdout: String::new(),
                        stderr: format!("sacct: fatal: unrecognized job state value '{s}'\n"),
                    });
                }
            }
        }
    }
    let time = |key: &str| -> Result<Option<i64>, Exit> {
        match p.get(key) {
            None => Ok(None),
            Some(t) => timespec::parse(t, now, Toward::Past, times::zone())
                .map(Some)
                .map_err(|e| Exit::error("sacct", e.to_string())),
        }
    };
    // Slurm's defaults: no start for `-j`, now with `-s`, else midnight; with `-s` and
    // neither, the window ends now. A start after the end is refused.
    let mut window_start = time("starttime")?.unwrap_or(0);
    let mut window_end = time("endtime")?.unwrap_or(0);
    if window_start == 0 && jobs.is_none() {
        window_start = if states.is_empty() {
            timespec::start_of_day(now, times::zone())
        } else {
            now
        };
    }
    let window_rule = if !states.is_empty() {
        if window_start == 0 && window_end == 0 {
            window_end = now;
        }
        model::filter::WindowRule::InStates
    } else if jobs.is_some() {
        model::filter::WindowRule::Submitted
    } else {
        model::filter::WindowRule::Eligible
    };
    if window_end > 0 && window_start > window_end {
        return Err(Exit::error(
            "sacct",
            format!(
                "Start time ({}) requested is after end time ({}).",
                times::format_time(window_start),
                times::format_time(window_end)
            ),
        ));
    }

    let mut users = Vec::new();
    let mut all_users = p.has("allusers");
    for text in p.all("uid") {
        if text == "-1" {
            all_users = true;
            users.clear();
            continue;
        }
        all_users = false;
        for u in split_list(text) {
            users.extend(users::user_forms(&u));
        }
    }
    if p.has("me") {
        users.extend(users::user_forms(me));
    }
    if users.is_empty() && (jobs.is_some() || p.has("nodelist") || uid == 0) {
        all_users = true;
    }
    if all_users {
        users.clear();
    } else if users.is_empty() {
        users = users::user_forms(me);
        users.push(uid.to_string());
    }

    let mut field_text: Vec<String> = p.all("format").into_iter().map(String::from).collect();
    if p.has("brief") {
        field_text.push(BRIEF_FIELDS.into());
    }
    if p.has("long") {
        field_text.push(LONG_FIELDS.into());
    }
    let fields_given = !field_text.is_empty();
    if field_text.is_empty() {
        field_text.push(env("SACCT_FORMAT").unwrap_or_else(|| DEFAULT_FIELDS.into()));
    }
    let fields = parse_fields(&field_text.join(",")).map_err(|e| Exit::error("sacct", &e))?;

    let nodes = match p.get("nodelist") {
        None => Vec::new(),
        Some(n) => model::hostlist::expand(n)
            .map_err(|_| Exit::error("sacct", format!("Invalid node list: {n}")))?,
    };
    let all = |key: &str| {
        p.all(key)
            .into_iter()
            .flat_map(split_list)
            .collect::<Vec<_>>()
    };
    let sizes = size_conversion(&p, "sacct")?;
    Ok(Options {
        sizes,
        verbose: p.has("verbose"),
        fields,
        fields_given,
        noheader: p.has("noheader"),
        mode: if p.has("parsable2") {
            Parsable::NoEnding
        } else if p.has("parsable") {
            Parsable::Ending
        } else {
            Parsable::No
        },
        delimiter: p.get("delimiter").unwrap_or("|").to_string(),
        json: p.has("json"),
        no_steps: p.has("allocations"),
        jobs,
        users,
        names: all("name"),
        accounts: all("accounts"),
        partitions: all("partition"),
        no_state: p.has("state") && states.is_empty(),
        states,
        qos: all("qos"),
        wckeys: all("wckeys"),
        gids: all("gid")
            .iter()
            .map(|g| {
                users::group_id(g)
                    .ok_or_else(|| Exit::error("sacct", format!("Invalid group id: {g}")))
            })
            .collect::<Result<_, _>>()?,
        nodes,
        reasons: all("reason"),
        window_start,
        window_end,
        window_rule,
    })
}

fn help_fields() -> String {
    field_list(fields::sacct_fields().map(|f| f.name))
}

/// Field names four to a line, as `--helpformat` lists them.
pub fn field_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for (i, name) in names.enumerate() {
        if i % 4 != 0 {
            out.push(' ');
        } else if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{name:<19}"));
    }
    out.push('\n');
    out
}

/// The request that fetches what `opts` can show: the controller applies every filter.
pub fn request(opts: &Options) -> ListJobsRequest {
    ListJobsRequest {
        filter: Some(JobFilter {
            job_ids: jobs::selector_ids(opts.jobs.iter().flatten()),
            users: opts.users.clone(),
            names: opts.names.clone(),
            partitions: opts.partitions.clone(),
            states: opts
                .states
                .iter()
                .map(|&s| proto::convert::state_to_wire(s) as i32)
                .collect(),
            accounts: opts.accounts.clone(),
            qos: opts.qos.clone(),
            reservations: Vec::new(),
            nodes: opts.nodes.join(","),
            wckeys: opts.wckeys.clone(),
            reasons: opts.reasons.clone(),
            gids: opts.gids.clone(),
        }),
        include_finished: true,
        window_start: opts.window_start,
        window_end: opts.window_end,
        window_rule: proto::convert::window_rule_to_wire(opts.window_rule) as i32,
        ..Default::default()
    }
}

/// One printed row: a job, or one of its steps.
#[derive(Debug, Clone)]
pub enum Row<'a> {
    Job(JobRef<'a>),
    Step(&'a JobInfo, &'a StepInfo),
}

/// Filters the jobs and lays out the rows: each job then its steps.
pub fn rows<'a>(opts: &Options, jobs: &'a [JobInfo]) -> Vec<Row<'a>> {
    // (the job as shown, its record, the steps named when only steps were asked for)
    let mut selected: Vec<(JobRef<'a>, &'a JobInfo, Option<Vec<String>>)> = Vec::new();
    let whole: Vec<JobIdSpec> = opts
        .jobs
        .iter()
        .flatten()
        .filter(|s| s.step().is_none() || opts.no_steps)
        .map(JobIdSpec::without_step)
        .collect();
    // An empty state list would ask the controller for every state.
    let jobs = if opts.no_state { &[][..] } else { jobs };
    for job in jobs {
        let (shown, steps) = match &opts.jobs {
            None => (JobRef::Borrowed(job), None),
            Some(sel) => match jobs::select_ref(&whole, job) {
                Some(j) => (j, None),
                None => {
                    let steps: Vec<String> = sel
                        .iter()
                        .filter(|s| jobs::select(s, job).is_some())
                        .filter_map(|s| s.step().map(|step| step.to_string()))
                        .collect();
                    if steps.is_empty() {
                        continue;
                    }
                    (JobRef::Borrowed(job), Some(steps))
                }
            },
        };
        selected.push((shown, job, steps));
    }
    let key = |j: &JobInfo| {
        (
            jobs::base_id(j),
            !jobs::is_array_meta(j),
            j.array_task_id.unwrap_or(0),
            j.job_id,
        )
    };
    selected.sort_by_key(|(j, _, _)| key(j));
    let mut out = Vec::new();
    for (shown, job, only_steps) in selected {
        if only_steps.is_none() {
            out.push(Row::Job(shown));
        }
        if opts.no_steps {
            continue;
        }
        let mut steps: Vec<&StepInfo> = job
            .steps
            .iter()
            .filter(|s| {
                only_steps
                    .as_ref()
                    .is_none_or(|ids| ids.contains(&s.step_id))
            })
            .collect();
        steps.sort_by_key(|s| match s.step_id.as_str() {
            "batch" => (0, 0),
            "extern" => (1, 0),
            n => (2, n.parse::<i64>().unwrap_or(i64::MAX)),
        });
        out.extend(steps.into_iter().map(|s| Row::Step(job, s)));
    }
    out
}

/// The value of one field for one row.
pub fn field_value(field: &Sacct, row: &Row, ctx: &Ctx) -> String {
    match row {
        Row::Job(j) => field.job_value(j, ctx),
        Row::Step(j, st) => field.step_value(j, st, ctx),
    }
}

/// The value of the field named `name` (as the table spells it) for one row.
fn named_value(name: &str, row: &Row, ctx: &Ctx) -> String {
    fields::sacct_fields()
        .find(|f| f.name == name)
        .map(|f| field_value(f, row, ctx))
        .unwrap_or_default()
}

/// The whole output.
pub fn render(opts: &Options, jobs: &[JobInfo], ctx: &Ctx) -> String {
    let rows = rows(opts, jobs);
    if opts.json {
        return json_doc(&rows, ctx);
    }
    let table = Table {
        fields: &opts.fields,
        header: !opts.noheader,
        mode: opts.mode,
        delimiter: &opts.delimiter,
    };
    table.render(&rows, ctx)
}

/// How rows are printed: the fields with their widths, and the table's form.
pub struct Table<'a> {
    pub fields: &'a [(&'static Sacct, i32)],
    pub header: bool,
    pub mode: Parsable,
    pub delimiter: &'a str,
}

impl Table<'_> {
    pub fn render(&self, rows: &[Row], ctx: &Ctx) -> String {
        let fields: Vec<TableField> = self
            .fields
            .iter()
            .map(|(f, l)| TableField {
                name: f.name.to_string(),
                len: *l,
            })
            .collect();
        let values: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                self.fields
                    .iter()
                    .map(|(f, _)| field_value(f, r, ctx))
                    .collect()
            })
            .collect();
        format::print_fields(&fields, &values, self.header, self.mode, self.delimiter)
    }
}

/// One job in Slurm 22.05's `sacct --json` shape (the `openapi/dbv0.0.38` plugin's).
#[derive(Debug, Serialize)]
struct JobJson<'a> {
    account: &'a str,
    allocation_nodes: u32,
    array: ArrayJson<'a>,
    cluster: &'a str,
    comment: CommentJson<'a>,
    derived_exit_code: jobs::ExitJson,
    exit_code: jobs::ExitJson,
    group: String,
    job_id: u32,
    name: &'a str,
    nodes: String,
    partition: &'a str,
    priority: u32,
    qos: &'a str,
    required: RequiredJson,
    restart_cnt: u32,
    state: StateJson,
    steps: Vec<StepJson<'a>>,
    time: TimeJson,
    tres: TresJson,
    user: String,
    wckey: WckeyJson<'a>,
    working_directory: &'a str,
}

#[derive(Debug, Serialize)]
struct ArrayJson<'a> {
    job_id: u32,
    task: &'a str,
    task_id: Option<u32>,
}

#[derive(Debug, Serialize)]
struct CommentJson<'a> {
    job: &'a str,
}

#[derive(Debug, Serialize)]
struct WckeyJson<'a> {
    wckey: &'a str,
}

#[derive(Debug, Serialize)]
struct RequiredJson {
    #[serde(rename = "CPUs")]
    cpus: u32,
    memory: u64,
}

#[derive(Debug, Serialize)]
struct StateJson {
    current: &'static str,
    reason: String,
}

#[derive(Debug, Serialize)]
struct TimeJson {
    elapsed: i64,
    eligible: i64,
    end: i64,
    /// Minutes; `null` is UNLIMITED.
    limit: Option<u32>,
    start: i64,
    submission: i64,
}

#[derive(Debug, Serialize)]
struct TresJson {
    allocated: Vec<TresCountJson>,
    requested: Vec<TresCountJson>,
}

/// One TRES count: `{"type": "gres", "name": "gpu", "id": 1001, "count": 2}`.
#[derive(Debug, Serialize)]
struct TresCountJson {
    #[serde(rename = "type")]
    kind: String,
    name: String,
    id: u32,
    count: u64,
}

/// TRES counts as the accounting JSON lists them, with Slurm's ids (cpu 1, mem 2,
/// node 4, billing 5; the first GRES 1001).
fn tres_json(counts: &model::tres::TresCounts) -> Vec<TresCountJson> {
    counts
        .iter()
        .map(|(name, count)| {
            let (kind, name, id) = match name.split_once('/') {
                Some((kind, gres)) => (kind, gres, 1001),
                None => {
                    let id = match name.as_str() {
                        "cpu" => 1,
                        "mem" => 2,
                        "node" => 4,
                        "billing" => 5,
                        _ => 0,
                    };
                    (name.as_str(), "", id)
                }
            };
            TresCountJson {
                kind: kind.to_string(),
                name: name.to_string(),
                id,
                count: *count,
            }
        })
        .collect()
}

#[derive(Debug, Serialize)]
struct StepJson<'a> {
    exit_code: jobs::ExitJson,
    nodes: StepNodesJson<'a>,
    state: &'static str,
    step: StepIdJson<'a>,
    tasks: CountJson,
    time: StepTimeJson,
}

#[derive(Debug, Serialize)]
struct StepNodesJson<'a> {
    count: usize,
    range: &'a str,
}

#[derive(Debug, Serialize)]
struct StepIdJson<'a> {
    id: String,
    name: &'a str,
}

#[derive(Debug, Serialize)]
struct CountJson {
    count: u32,
}

#[derive(Debug, Serialize)]
struct StepTimeJson {
    elapsed: i64,
    end: i64,
    start: i64,
}

fn job_json<'a>(j: &'a JobInfo, row: &Row, ctx: &'a Ctx) -> JobJson<'a> {
    let s = jobs::spec(j);
    let st = jobs::job_state(j);
    JobJson {
        account: &s.account,
        allocation_nodes: j.num_nodes,
        array: ArrayJson {
            job_id: j.array_job_id,
            task: jobs::task_str(j),
            task_id: j.array_task_id,
        },
        cluster: &ctx.cluster,
        comment: CommentJson { job: &s.comment },
        derived_exit_code: {
            let (code, signal) = fields::derived_exit(j);
            jobs::ExitJson::new(code, signal, st.is_final())
        },
        exit_code: jobs::ExitJson::new(j.exit_code, j.exit_signal, st.is_final()),
        group: ctx.names.group(s.gid),
        job_id: j.job_id,
        name: &s.name,
        nodes: named_value("NodeList", row, ctx),
        partition: &s.partition,
        priority: j.priority,
        qos: jobs::qos(s),
        required: RequiredJson {
            cpus: jobs::req_cpus(s),
            memory: j.mem_mb,
        },
        restart_cnt: j.restart_count,
        state: StateJson {
            current: st.name(),
            reason: named_value("Reason", row, ctx),
        },
        steps: Vec::new(),
        time: TimeJson {
            elapsed: j.run_secs,
            eligible: j.eligible_time,
            end: j.end_time,
            limit: (s.time_limit_min > 0).then_some(s.time_limit_min),
            start: j.start_time,
            submission: j.submit_time,
        },
        tres: TresJson {
            allocated: if j.start_time > 0 && st != JobState::Pending {
                tres_json(&jobs::job_tres(
                    j.num_cpus,
                    j.mem_mb,
                    j.num_nodes,
                    j.num_gpus,
                ))
            } else {
                Vec::new()
            },
            requested: tres_json(&jobs::job_tres(
                jobs::req_cpus(s),
                j.mem_mb,
                s.num_nodes.max(1),
                j.num_gpus,
            )),
        },
        user: named_value("User", row, ctx),
        wckey: WckeyJson { wckey: &s.wckey },
        working_directory: &s.work_dir,
    }
}

fn step_json<'a>(j: &JobInfo, st: &'a StepInfo, now: i64) -> StepJson<'a> {
    let state = jobs::step_state(st);
    StepJson {
        exit_code: jobs::ExitJson::new(st.exit_code, st.exit_signal, state.is_final()),
        nodes: StepNodesJson {
            count: fields::step_node_count(st),
            range: &st.nodes,
        },
        state: state.name(),
        step: StepIdJson {
            id: format!("{}.{}", j.job_id, st.step_id),
            name: &st.name,
        },
        tasks: CountJson {
            count: st.num_tasks,
        },
        time: StepTimeJson {
            elapsed: fields::step_elapsed(j, st, now),
            end: st.end_time,
            start: st.start_time,
        },
    }
}

fn json_doc(rows: &[Row], ctx: &Ctx) -> String {
    jobs::json_doc(jobs::JsonPlugin::Db, "jobs", &job_docs(rows, ctx))
}

/// The rows as `--json` jobs: each job with its steps (a step alone, with its job).
fn job_docs<'a>(rows: &'a [Row], ctx: &'a Ctx) -> Vec<JobJson<'a>> {
    let mut jobs: Vec<JobJson> = Vec::new();
    for row in rows {
        match row {
            Row::Job(j) => jobs.push(job_json(j, row, ctx)),
            Row::Step(j, st) => {
                let step = step_json(j, st, ctx.now);
                match jobs.last_mut() {
                    Some(last) if last.job_id == j.job_id => last.steps.push(step),
                    _ => {
                        // Only steps were asked for: the job carries just its steps.
                        let mut job = job_json(j, &Row::Job(JobRef::Borrowed(j)), ctx);
                        job.steps.push(step);
                        jobs.push(job);
                    }
                }
            }
        }
    }
    jobs
}

/// How `drover export` writes job records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Export {
    /// RFC 4180 CSV: a header of the `--format` fields, then a row per job and step.
    Csv,
    /// JSON lines: one job a line, in `sacct --json`'s shape, its steps inside.
    JsonLines,
}

/// The records as `drover export` writes them.
pub fn export(opts: &Options, jobs: &[JobInfo], ctx: &Ctx, how: Export) -> Result<String, String> {
    let rows = rows(opts, jobs);
    match how {
        Export::JsonLines => {
            let mut out = String::new();
            for job in job_docs(&rows, ctx) {
                out.push_str(&serde_json::to_string(&job).map_err(|e| e.to_string())?);
                out.push('\n');
            }
            Ok(out)
        }
        Export::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            let bad = |e: csv::Error| e.to_string();
            if !opts.noheader {
                w.write_record(opts.fields.iter().map(|(f, _)| f.name))
                    .map_err(bad)?;
            }
            for row in &rows {
                w.write_record(opts.fields.iter().map(|(f, _)| field_value(f, row, ctx)))
                    .map_err(bad)?;
            }
            let bytes = w.into_inner().map_err(|e| e.to_string())?;
            String::from_utf8(bytes).map_err(|e| e.to_string())
        }
    }
}

/// The command line parsed as sacct's (`program` names the command in errors), and
/// the job records it selects, with what their fields are printed with.
pub fn select(program: &str, args: &[String]) -> Result<(Options, Vec<JobInfo>, Ctx), ExitCode> {
    let (opts, now) = options(args)?;
    let cluster = client::cluster_name();
    let req = request(&opts);
    let reply = calls::query(&client::runtime(), program, |c| calls::job_records(c, req))?;
    let ctx = context(
        program,
        &reply.jobs,
        if reply.now > 0 { reply.now } else { now },
        cluster,
        opts.sizes,
    )?;
    Ok((opts, reply.jobs, ctx))
}

/// The records of an archive file the controller wrote before a purge
/// (`[controller] archive_jobs`), all of them, with the options `args` give (the
/// fields; a selection is the controller's and does not apply to a file).
pub fn select_archive(
    program: &str,
    file: &str,
    args: &[String],
) -> Result<(Options, Vec<JobInfo>, Ctx), ExitCode> {
    let (opts, _) = options(args)?;
    let bytes = std::fs::read(file)
        .map_err(|e| Exit::error(program, format!("cannot read {file}: {e}")).finish())?;
    let archive: proto::v1::JobArchive = proto::decode(&bytes)
        .ok_or_else(|| Exit::error(program, format!("{file} is not a job archive")).finish())?;
    let ctx = context(
        program,
        &archive.jobs,
        archive.archived_at,
        archive.cluster_name,
        opts.sizes,
    )?;
    Ok((opts, archive.jobs, ctx))
}

/// The options of the command line, and the clock they were read at.
fn options(args: &[String]) -> Result<(Options, i64), ExitCode> {
    let (me, uid, _) = client::current_user();
    let now = times::now();
    let opts = parse_args(args, &args::env_var, now, uid, &me).map_err(Exit::finish)?;
    Ok((opts, now))
}

/// What the fields of `jobs` are printed with: their users' and groups' names, and how
/// sizes print.
fn context(
    program: &str,
    jobs: &[JobInfo],
    now: i64,
    cluster: String,
    sizes: model::units::SizeConversion,
) -> Result<Ctx, ExitCode> {
    jobs::check_records(program, jobs).map_err(Exit::finish)?;
    let names = Names::resolve(
        jobs.iter().map(|j| jobs::spec(j).uid),
        jobs.iter().map(|j| jobs::spec(j).gid),
    );
    Ok(Ctx {
        now,
        names,
        cluster,
        partition_tiers: Default::default(),
        sizes,
    })
}

pub fn run(args: &[String]) -> ExitCode {
    match select("sacct", args) {
        Ok((opts, jobs, ctx)) => {
            if opts.verbose {
                // The controller keeps the accounting records, standing in for the
                // slurmdbd that `scontrol show config`'s AccountingStorageType names.
                eprintln!(
                    "sacct: accounting_storage/slurmdbd: init: Accounting storage SLURMDBD plugin loaded"
                );
            }
            print!("{}", render(&opts, &jobs, &ctx));
            ExitCode::SUCCESS
        }
        Err(code) => code,
    }
}

const HELP: &str = "\
sacct [<OPTION>]
    Valid <OPTION> values are:
     -a, --allusers:
                   Display jobs for all users. By default, only the
                   current user's jobs are displayed.  If ran by user root
                   this is the default.
     -A, --accounts:
                   Use this comma separated list of accounts to select jobs
                   to display.  By default, all accounts are selected.
     -b, --brief:
                   Equivalent to '--format=jobstep,state,error'.
         --delimiter:
                   ASCII characters used to separate the fields when
                   specifying the  -p  or  -P options. The default delimiter
                   is a '|'. This options is ignored if -p or -P options
                   are not specified.
     -D, --duplicates:
                   Accepted; job ids are never reused.
     -e, --helpformat:
                   Print a list of fields that can be specified with the
                   '--format' option
     -E, --endtime:
                   Select jobs eligible before this time.
     -g, --gid, --group:
                   Use this comma separated list of gids or group names
                   to select jobs to display.
     -h, --help:   Print this description of use.
     -j, --jobs:
                   Format is <job(.step)>. Display information about this
                   job or comma-separated list of jobs. The default is all
                   jobs. Adding .step will display the specific job step of
                   that job. (A step id of 'batch' will display the
                   information about the batch step.)
         --json:   Produce JSON output.
     -l, --long:
                   Equivalent to specifying a long list of fields.
     -L, --allclusters, -M, --clusters:
                   Accepted and ignored: one cluster.
     -n, --noheader:
                   No header will be added to the beginning of output.
     -N, --nodelist:
                   Display jobs that ran on any of these nodes.
     --name:
                   Display jobs that have any of these name(s).
     -o, --format:
                   Comma separated list of fields. (use \"--helpformat\"
                   for a list of available fields).
     -p, --parsable: output will be '|' delimited with a '|' at the end
     -P, --parsable2: output will be '|' delimited without a '|' at the end
     -q, --qos:
                   Only send data about jobs using these qos.
     -r, --partition:
                   Comma separated list of partitions to select jobs and
                   job steps from. The default is all partitions.
     -s, --state:
                   Select jobs based on their state: running (r),
                   completed (cd), failed (f), timeout (to), cancelled (ca),
                   node_fail (nf), out_of_memory (oom), pending (pd).
     -S, --starttime:
                   Select jobs eligible after this time.  Default is
                   00:00:00 of the current day, unless '-s' is set then
                   the default is 'now'.
     -u, --uid, --user:
                   Use this comma separated list of uids or user names
                   to select jobs to display.  By default, the running
                   user's uid is used.
     --usage:      Display brief usage message.
     -V, --version: Print version.
     -W, --wckeys:
                   Only send data about these wckeys.
     -X, --allocations:
                   Only show statistics relevant to the job allocation
                   itself, not taking steps into consideration.

     Note, valid start/end time formats are...
                   HH:MM[:SS] [AM|PM]
                   MMDD[YY] or MM/DD[/YY] or MM.DD[.YY]
                   MM/DD[/YY]-HH:MM[:SS]
                   YYYY-MM-DD[THH:MM[:SS]]
                   now[{+|-}count[seconds|minutes|hours|days|weeks]]
";

#[cfg(test)]
mod tests {
    use super::*;
    use proto::v1::JobSpec;
    use proto::v1::JobState as W;
    use serde_json::json;

    const NOW: i64 = 1_800_000_000;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn parse(args: &[&str]) -> Result<Options, Exit> {
        parse_args(&s(args), &|_| None, NOW, 1000, "alice")
    }

    #[test]
    fn verbose_is_taken_in_its_short_and_long_forms() {
        assert!(!parse(&[]).unwrap().verbose);
        assert!(parse(&["-v"]).unwrap().verbose);
        assert!(parse(&["--verbose", "-X"]).unwrap().verbose);
    }

    #[test]
    fn units_and_noconvert_choose_how_sizes_print() {
        use model::units::{SizeConversion, SizeUnit};
        assert_eq!(parse(&[]).unwrap().sizes, SizeConversion::Exact);
        assert_eq!(parse(&["--noconvert"]).unwrap().sizes, SizeConversion::Kept);
        // A unit overrides --noconvert, as in Slurm; only its first letter is read.
        assert_eq!(
            parse(&["--noconvert", "--units=mb"]).unwrap().sizes,
            SizeConversion::To(SizeUnit::Mega)
        );
        let refused = parse(&["--units=x"]).unwrap_err();
        assert_eq!(
            refused.stderr,
            "sacct: error: Invalid unit type 'x'. Possible options are 'KMGTP'\n"
        );
    }

    fn ctx() -> Ctx {
        Ctx {
            now: NOW,
            names: Names::default(),
            cluster: "drover".into(),
            partition_tiers: Default::default(),
            sizes: Default::default(),
        }
    }

    /// What sacct prints for `args` when the controller holds `jobs`.
    fn out(args: &[&str], jobs: &[JobInfo]) -> String {
        let opts = parse(args).unwrap();
        let served = crate::testkit::served(&request(&opts), jobs);
        render(&opts, &served, &ctx())
    }

    fn step(id: &str, name: &str, state: W, nodes: &str, code: i32) -> StepInfo {
        StepInfo {
            step_id: id.into(),
            name: name.into(),
            state: state as i32,
            start_time: NOW - 60,
            end_time: if state == W::Running { 0 } else { NOW - 10 },
            exit_code: code,
            nodes: nodes.into(),
            num_tasks: 1,
            num_cpus: 2,
            ..Default::default()
        }
    }

    fn job(id: u32, name: &str, state: W) -> JobInfo {
        let finished = !matches!(state, W::Pending | W::Running);
        let started = state != W::Pending;
        JobInfo {
            job_id: id,
            state: state as i32,
            reason: "None".into(),
            submit_time: NOW - 100,
            eligible_time: NOW - 100,
            start_time: if started { NOW - 60 } else { 0 },
            end_time: if finished { NOW - 10 } else { 0 },
            run_secs: match (started, finished) {
                (false, _) => 0,
                (true, true) => 50,
                (true, false) => 60,
            },
            nodes: if started {
                "gpu01".into()
            } else {
                String::new()
            },
            num_nodes: 1,
            num_cpus: 2,
            mem_mb: 954,
            spec: Some(JobSpec {
                name: name.into(),
                user: "alice".into(),
                uid: 1000,
                gid: 1000,
                partition: "debug".into(),
                account: "proj".into(),
                time_limit_min: 5,
                num_tasks: 1,
                cpus_per_task: 2,
                ..Default::default()
            }),
            steps: if finished || started {
                vec![step(
                    "batch",
                    "batch",
                    if finished { state } else { W::Running },
                    "gpu01",
                    0,
                )]
            } else {
                Vec::new()
            },
            ..Default::default()
        }
    }

    fn sample() -> Vec<JobInfo> {
        let mut done = job(10, "wrap", W::Completed);
        done.steps
            .push(step("0", "python", W::Completed, "gpu01", 0));
        let mut failed = job(11, "verylongjobname", W::Failed);
        failed.exit_code = 3;
        failed.steps[0].exit_code = 3;
        let mut cancelled = job(12, "cancelme", W::Cancelled);
        cancelled.cancelled_by = Some(0);
        cancelled.start_time = 0;
        cancelled.run_secs = 0;
        cancelled.nodes.clear();
        cancelled.steps.clear();
        let mut meta = job(13, "arr", W::Pending);
        meta.array_job_id = 13;
        meta.array_task_str = "2-4%2".into();
        let mut t0 = job(14, "arr", W::Running);
        t0.array_job_id = 13;
        t0.array_task_id = Some(0);
        let mut t1 = job(15, "arr", W::Completed);
        t1.array_job_id = 13;
        t1.array_task_id = Some(1);
        vec![t1, t0, meta, cancelled, failed, done]
    }

    #[test]
    fn exports_quote_csv_values_and_write_a_job_a_line() {
        let mut jobs = sample();
        jobs[5].spec.as_mut().unwrap().name = "a, \"quoted\" name".into();
        let opts = parse(&["-j", "10,11", "-o", "JobID,JobName,State"]).unwrap();
        let served = crate::testkit::served(&request(&opts), &jobs);
        let csv = export(&opts, &served, &ctx(), Export::Csv).unwrap();
        assert_eq!(
            csv,
            "JobID,JobName,State\n\
             10,\"a, \"\"quoted\"\" name\",COMPLETED\n\
             10.batch,batch,COMPLETED\n\
             10.0,python,COMPLETED\n\
             11,verylongjobname,FAILED\n\
             11.batch,batch,FAILED\n"
        );
        assert!(opts.fields_given && !parse(&["-j", "10"]).unwrap().fields_given);
        let lines = export(&opts, &served, &ctx(), Export::JsonLines).unwrap();
        let docs: Vec<serde_json::Value> = lines
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0]["job_id"], 10);
        assert_eq!(docs[0]["name"], "a, \"quoted\" name");
        assert_eq!(docs[0]["steps"].as_array().unwrap().len(), 2);
        assert_eq!(docs[1]["state"]["current"], "FAILED");
    }

    #[test]
    fn default_table() {
        let text = out(&["-j", "10,11,12"], &sample());
        let want = [
            "       JobID    JobName  Partition    Account  AllocCPUS      State ExitCode ",
            "------------ ---------- ---------- ---------- ---------- ---------- -------- ",
            "10                 wrap      debug       proj          2  COMPLETED      0:0 ",
            "10.batch          batch                  proj          2  COMPLETED      0:0 ",
            "10.0             python                  proj          2  COMPLETED      0:0 ",
            "11           verylongj+      debug       proj          2     FAILED      3:0 ",
            "11.batch          batch                  proj          2     FAILED      3:0 ",
            "12             cancelme      debug       proj          2 CANCELLED+      0:0 ",
        ];
        assert_eq!(text, want.join("\n") + "\n");
    }

    #[test]
    fn submitit_query() {
        let text = out(
            &[
                "-o",
                "JobID,State,NodeList",
                "--parsable2",
                "-j",
                "13",
                "-j",
                "12",
            ],
            &sample(),
        );
        let want = [
            "JobID|State|NodeList",
            "12|CANCELLED by 0|None assigned",
            "13_[2-4%2]|PENDING|None assigned",
            "13_0|RUNNING|gpu01",
            "13_0.batch|RUNNING|gpu01",
            "13_1|COMPLETED|gpu01",
            "13_1.batch|COMPLETED|gpu01",
        ];
        assert_eq!(text, want.join("\n") + "\n");
    }

    #[test]
    fn snakemake_queries() {
        // The status query, with a time window and the run's name.
        let start = timespec::parse("2026-11-28T02:00", NOW, Toward::Past, times::zone()).unwrap();
        let args = [
            "-X",
            "--parsable2",
            "--clusters",
            "all",
            "--noheader",
            "--format=JobIdRaw,State",
            "--starttime",
            "2026-11-28T02:00",
            "--endtime",
            "now",
            "--name",
            "arr",
        ];
        let opts = parse(&args).unwrap();
        assert_eq!((opts.window_start, opts.window_end), (start, NOW));
        assert_eq!(
            out(&args, &sample()),
            "13|PENDING\n14|RUNNING\n15|COMPLETED\n"
        );
        let req = request(&opts);
        assert!(req.include_finished);
        assert_eq!((req.window_start, req.window_end), (start, NOW));
        // A window that ends before it starts is refused.
        let backwards = parse(&["-S", "now", "-E", "2026-11-28T02:00"]).unwrap_err();
        assert!(
            backwards.lines()[0].starts_with("sacct: error: Start time (")
                && backwards.lines()[0].ends_with(").")
                && backwards.lines()[0].contains(") requested is after end time ("),
            "{:?}",
            backwards.lines()
        );
        assert_eq!(req.filter.unwrap().names, vec!["arr"]);
        // Node list of one job, left-aligned 256 wide.
        let text = out(&["-j", "10", "-n", "-X", "-o", "nodelist%-256"], &sample());
        assert_eq!(text, format!("gpu01{} \n", " ".repeat(251)));
        // Reason of one step.
        assert_eq!(
            out(
                &["-j", "10.0", "--format=Reason,JobID", "--noheader", "-P"],
                &sample()
            ),
            "|10.0\n"
        );
        // The account probe passes `| tail -1` as arguments: sacct must fail.
        let e = parse(&["-nu", "root", "-o", "Account%256", "|", "tail", "-1"]).unwrap_err();
        assert_eq!(e.code, 1);
        assert_eq!(
            e.stderr,
            "sacct: invalid option -- '1'\nTry \"sacct --help\" for more information\n"
        );
        let e = parse(&["-nu", "root", "-o", "Account%256", "|", "tail"]).unwrap_err();
        assert_eq!(e.code, 1);
        assert!(
            e.stderr
                .starts_with("sacct: error: Unknown arguments: | tail\n"),
            "{}",
            e.stderr
        );
    }

    #[test]
    fn parsable_and_brief() {
        assert_eq!(
            out(&["-j", "11", "-b", "-p", "-n"], &sample()),
            "11|FAILED|3:0|\n11.batch|FAILED|3:0|\n"
        );
        assert_eq!(
            out(
                &[
                    "-j",
                    "11",
                    "-X",
                    "-P",
                    "-o",
                    "jobn,jobidr,exitc,elapsed,timelimit,nnodes,reqmem",
                    "--delimiter=,"
                ],
                &sample()
            ),
            "JobName,JobIDRaw,ExitCode,Elapsed,Timelimit,NNodes,ReqMem\nverylongjobname,11,3:0,00:00:50,00:05:00,1,954M\n"
        );
        assert_eq!(
            out(
                &["-j", "11", "-X", "-n", "-o", "JobID%4,State%-8,JobName%0"],
                &sample()
            ),
            "  11 FAILED   verylongjobname \n"
        );
    }

    #[test]
    fn selection_windows_and_users() {
        // Default window: since midnight; the caller's jobs only.
        let opts = parse(&[]).unwrap();
        assert!(opts.window_start > 0 && opts.window_start <= NOW);
        assert!(opts.users.contains(&"alice".to_string()));
        assert!(parse(&["-a"]).unwrap().users.is_empty());
        assert!(parse(&["-j", "5"]).unwrap().users.is_empty());
        assert_eq!(parse(&["-j", "5"]).unwrap().window_start, 0);
        // Slurm's window rules: by submit time with -j, by state with -s (from now, or
        // until now with -j), else by eligibility.
        use model::filter::WindowRule;
        let w = |args: &[&str]| {
            parse(args)
                .map(|o| (o.window_rule, o.window_start, o.window_end))
                .map_err(|e| e.lines()[0].to_string())
        };
        assert_eq!(w(&["-j", "5"]).unwrap().0, WindowRule::Submitted);
        assert_eq!(w(&[]).unwrap().0, WindowRule::Eligible);
        assert_eq!(w(&["-s", "PD"]), Ok((WindowRule::InStates, NOW, 0)));
        assert_eq!(
            w(&["-j", "5", "-s", "PD"]),
            Ok((WindowRule::InStates, 0, NOW))
        );
        assert!(
            w(&["-s", "R", "-E", "2026-11-28T02:00"])
                .unwrap_err()
                .starts_with("sacct: error: Start time (")
        );
        assert!(w(&["-j", "5", "-s", "R", "-E", "2026-11-28T02:00"]).is_ok());
        assert!(
            parse_args(&s(&[]), &|_| None, NOW, 0, "root")
                .unwrap()
                .users
                .is_empty()
        );
        let mut old = job(20, "old", W::Completed);
        old.end_time = NOW - 10 * 86400;
        old.submit_time = NOW - 11 * 86400;
        let jobs = vec![old, job(21, "new", W::Completed)];
        assert_eq!(
            out(&["-X", "-n", "-P", "-o", "jobid", "-S", "now-2days"], &jobs),
            "21\n"
        );
        assert_eq!(
            out(
                &[
                    "-X",
                    "-n",
                    "-P",
                    "-o",
                    "jobid",
                    "-S",
                    "now-20days",
                    "-E",
                    "now-3days"
                ],
                &jobs
            ),
            "20\n"
        );
        assert_eq!(
            out(
                &[
                    "-X",
                    "-n",
                    "-P",
                    "-o",
                    "jobid",
                    "-u",
                    "bob",
                    "-S",
                    "now-20days"
                ],
                &jobs
            ),
            ""
        );
        assert_eq!(
            out(
                &["-n", "-P", "-o", "jobid", "-s", "f,ca", "-j", "10,11,12"],
                &sample()
            ),
            "11\n11.batch\n12\n"
        );
        assert_eq!(
            out(&["-n", "-P", "-o", "jobid", "-j", "13_1"], &sample()),
            "13_1\n13_1.batch\n"
        );
        assert_eq!(
            out(&["-n", "-P", "-o", "jobid", "-j", "13_3"], &sample()),
            "13_3\n"
        );
        assert_eq!(
            out(&["-n", "-P", "-o", "jobid", "-j", "10.batch"], &sample()),
            "10.batch\n"
        );
        let mut pending = job(30, "p", W::Pending);
        pending.reason = "Dependency".into();
        let jobs = vec![pending, job(31, "q", W::Pending)];
        assert_eq!(
            out(
                &["-n", "-P", "-o", "jobid", "-a", "-R", "dependency"],
                &jobs
            ),
            "30\n"
        );
    }

    #[test]
    fn field_table_and_errors() {
        let named = |list: &str| -> Vec<(&str, i32)> {
            parse_fields(list)
                .unwrap()
                .into_iter()
                .map(|(f, w)| (f.name, w))
                .collect()
        };
        assert_eq!(
            named("jobid,JobIDRaw,nodelist%-256,state%20"),
            vec![
                ("JobID", -12),
                ("JobIDRaw", -12),
                ("NodeList", -256),
                ("State", 20)
            ]
        );
        assert_eq!(
            parse_fields("all").unwrap().len(),
            fields::sacct_fields().count()
        );
        let e = parse(&["-o", "JobID,Bogus"]).unwrap_err();
        assert_eq!(
            e.stderr,
            "sacct: error: Invalid field requested: \"Bogus\"\n"
        );
        let e = parse(&["--bogus"]).unwrap_err();
        assert_eq!(
            e.stderr,
            "sacct: unrecognized option '--bogus'\nTry \"sacct --help\" for more information\n"
        );
        assert_eq!(parse(&["-s", "sleepy"]).unwrap_err().code, 1);
        assert_eq!(
            parse(&["-s", "r,RQ,resizing,se"]).unwrap().states,
            [JobState::Running, JobState::Requeued, JobState::SpecialExit]
        );
        // Only states no job is ever in: no job, not every job.
        assert_eq!(
            out(&["-X", "-n", "-P", "-o", "jobid", "-s", "RS,SE"], &sample()),
            ""
        );
        // A field name longer than ALL, or with a multi-byte character, is no panic.
        assert!(parse(&["-o", "allx"]).is_err());
        assert!(parse(&["-o", "jé"]).is_err());
        assert!(
            parse(&["-S", "yesterdayish"])
                .unwrap_err()
                .stderr
                .contains("Invalid time specification")
        );
        assert!(parse(&["-L", "-D", "-M", "all", "--local", "-T"]).is_ok());
        let help = parse(&["-e"]).unwrap_err().stdout;
        assert!(
            help.starts_with(
                "Account             AdminComment        AllocCPUS           AllocNodes         \n"
            ),
            "{help}"
        );
    }

    #[test]
    fn more_fields() {
        let jobs = sample();
        let text = out(
            &[
                "-j",
                "10",
                "-P",
                "-n",
                "-o",
                "JobID,User,UID,Start,End,Submit,AllocTRES,ReqTRES,NNodes,NTasks,DerivedExitCode,Cluster,QOS,TimelimitRaw,ElapsedRaw,CPUTimeRAW",
            ],
            &jobs,
        );
        let t = |d: i64| times::format_time(NOW + d);
        // Steps: their CPUs, their job's memory on their nodes, no billing (Slurm's).
        let want = [
            format!(
                "10|alice|1000|{}|{}|{}|billing=2,cpu=2,mem=954M,node=1|billing=2,cpu=2,mem=954M,node=1|1||0:0|drover|normal|5|50|100",
                t(-60),
                t(-10),
                t(-100)
            ),
            format!(
                "10.batch|||{}|{}|{}|cpu=2,mem=954M,node=1||1|1||drover|||50|100",
                t(-60),
                t(-10),
                t(-60)
            ),
            format!(
                "10.0|||{}|{}|{}|cpu=2,mem=954M,node=1||1|1||drover|||50|100",
                t(-60),
                t(-10),
                t(-60)
            ),
        ];
        assert_eq!(text, want.join("\n") + "\n");
        let text = out(
            &[
                "-j",
                "13",
                "-X",
                "-P",
                "-n",
                "-o",
                "JobID,Start,End,Elapsed,AllocCPUS",
            ],
            &jobs,
        );
        assert!(
            text.starts_with("13_[2-4%2]|Unknown|Unknown|00:00:00|2\n13_0|"),
            "{text}"
        );
        assert!(
            text.contains("13_0|") && text.contains("|Unknown|00:01:00|2\n"),
            "{text}"
        );
    }

    #[test]
    fn json_output() {
        let text = out(&["--json", "-j", "10,12"], &sample());
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let jobs = v["jobs"].as_array().unwrap();
        assert_eq!(jobs.len(), 2);
        assert_eq!(jobs[0]["job_id"], 10);
        assert_eq!(jobs[0]["state"]["current"], "COMPLETED");
        assert_eq!(
            jobs[0]["exit_code"],
            json!({"status": "SUCCESS", "return_code": 0})
        );
        assert_eq!(
            jobs[0]["tres"]["allocated"][0],
            json!({"type": "billing", "name": "", "id": 5, "count": 2})
        );
        assert_eq!(v["meta"]["plugin"]["type"], "openapi/dbv0.0.38");
        assert_eq!(v["meta"]["Slurm"]["release"], "22.05.8");
        assert_eq!(jobs[0]["steps"].as_array().unwrap().len(), 2);
        assert_eq!(jobs[0]["steps"][0]["step"]["id"], "10.batch");
        assert_eq!(jobs[1]["nodes"], "None assigned");
    }

    #[test]
    fn times_resolve_toward_the_past() {
        let zone = times::zone();
        let midnight = timespec::start_of_day(NOW, zone);
        assert_eq!(parse(&[]).unwrap().window_start, midnight);
        // A time of day is today's even when it is still to come, as in Slurm's sacct.
        let late = parse(&["-S", "23:59"]).unwrap().window_start;
        assert_eq!(
            late,
            timespec::parse("23:59", NOW, Toward::Past, zone).unwrap()
        );
        assert!(late < midnight + 86400);
        assert_eq!(
            parse(&["-S", "now-1hours"]).unwrap().window_start,
            NOW - 3600
        );
        let e = parse(&["-S", "now*3"]).unwrap_err();
        assert_eq!(
            e.stderr,
            "sacct: error: Invalid time specification (pos=3): now*3\n"
        );
    }
}
