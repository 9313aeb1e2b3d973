//! `squeue`: the jobs in the queue, as Slurm's squeue prints them.
//!
//! The command line becomes `Options` (`parse_args`), the options a `ListJobsRequest`
//! (`request`), and the reply a text (`render`): filtering, array rows, sorting and the
//! `-o`/`-O`/`--json` formats all happen in `render`, which is pure and unit-tested.
//!
//! ```text
//! squeue --format=%i|%T --states=all --noheader --name X   →  12|COMPLETED
//! squeue                                                    →  JOBID PARTITION NAME USER ST TIME NODES NODELIST(REASON)
//! ```

use crate::args::{self, split_list};
use crate::calls;
use crate::client;
use crate::exit::Exit;
use crate::fields::{self, JobField, SortKey, StepField};
use crate::format::{self, Cell, Format};
use crate::jobs::{self, Ctx, JobRef};
use crate::opts::{OptSpec, flag, optional, value};
use crate::times;
use crate::users::{self, Names};
use model::JobState;
use model::job_id::JobIdSpec;
use proto::v1::{JobFilter, JobInfo, JobSummary, ListJobsRequest};
use serde::Serialize;
use std::process::ExitCode;

const SPECS: &[OptSpec] = &[
    value("accounts", Some('A')),
    value("account", None),
    value("U", Some('U')),
    flag("all", Some('a')),
    flag("array", Some('r')),
    flag("array-unique", None),
    value("Format", Some('O')),
    value("format", Some('o')),
    flag("federation", None),
    flag("help", None),
    flag("hide", None),
    value("iterate", Some('i')),
    optional("jobs", Some('j')),
    optional("job", None),
    flag("json", None),
    flag("local", None),
    flag("long", Some('l')),
    value("licenses", Some('L')),
    value("cluster", None),
    value("clusters", Some('M')),
    flag("me", None),
    value("name", Some('n')),
    flag("noconvert", None),
    value("node", None),
    value("nodes", None),
    value("nodelist", Some('w')),
    flag("noheader", Some('h')),
    value("partitions", None),
    value("partition", Some('p')),
    flag("priority", Some('P')),
    value("qos", Some('q')),
    value("reservation", Some('R')),
    flag("sib", None),
    flag("sibling", None),
    value("sort", Some('S')),
    flag("start", None),
    optional("steps", Some('s')),
    optional("step", None),
    value("states", Some('t')),
    flag("usage", None),
    value("user", None),
    value("users", Some('u')),
    flag("verbose", Some('v')),
    flag("version", Some('V')),
];

/// Long names that mean the same option; the first is the one read.
const ALIASES: &[(&str, &str)] = &[
    ("account", "accounts"),
    ("U", "accounts"),
    ("job", "jobs"),
    ("cluster", "clusters"),
    ("node", "nodelist"),
    ("nodes", "nodelist"),
    ("partitions", "partition"),
    ("sib", "sibling"),
    ("step", "steps"),
    ("user", "users"),
];

const DEFAULT_FORMAT: &str = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R";
const LONG_FORMAT: &str = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R";
const START_FORMAT: &str = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R";
const STEP_FORMAT: &str = "%.15i %.8j %.9P %.8u %.9M %N";
const DEFAULT_SORT: &str = "P,t,-p";

/// Which states to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum States {
    /// Pending, running, suspended, completing.
    Active,
    All,
    List(Vec<JobState>),
}

impl States {
    fn matches(&self, s: JobState) -> bool {
        match self {
            States::Active => !s.is_final(),
            States::All => true,
            States::List(l) => l.contains(&s),
        }
    }
    fn wants_finished(&self) -> bool {
        match self {
            States::Active => false,
            States::All => true,
            States::List(l) => l.iter().any(|s| s.is_final()),
        }
    }
}

/// How the lines look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    Jobs(Format<JobField>),
    Steps(Format<StepField>),
    Json,
}

/// Everything the command line asked for.
#[derive(Debug, Clone)]
pub struct Options {
    pub jobs: Option<Vec<JobIdSpec>>,
    pub steps: Option<Vec<JobIdSpec>>,
    pub users: Vec<String>,
    pub names: Vec<String>,
    pub partitions: Vec<String>,
    pub accounts: Vec<String>,
    pub qos: Vec<String>,
    pub reservation: Option<String>,
    pub nodes: Vec<String>,
    pub states: States,
    pub array: bool,
    pub layout: Layout,
    pub noheader: bool,
    pub long: bool,
    /// `-S`: (field, descending).
    pub sort: Vec<(JobField, bool)>,
    pub iterate: Option<u64>,
    /// `-v`: the options as Slurm 22.05's squeue prints them first (`_print_options`).
    pub verbose_dump: Option<String>,
    /// `-P`: a pending job of several partitions gets a row for each, and a sort by
    /// priority orders rows by their partition's PriorityTier first.
    pub priority: bool,
}

/// Parses the command line. `env` reads the environment (SQUEUE_FORMAT, ...); `me` is
/// the caller's user name. Warnings (bad format letters) go to `warnings`.
pub fn parse_args(
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
    me: &str,
    warnings: &mut Vec<String>,
) -> Result<Options, Exit> {
    let p = args::parse_command_line("squeue", args, SPECS, ALIASES, HELP, USAGE)?;
    if p.has("format") && p.has("Format") {
        return Err(Exit::error(
            "squeue",
            "-o (--format) is incompatible with -O (--Format)",
        ));
    }
    if p.has("long") && p.has("format") {
        return Err(Exit::error(
            "squeue",
            "Options -o(--format) and -l(--long) are mutually exclusive. Please remove one and retry.",
        ));
    }
    // `-j 12` and `-s 12.0`: the optional value comes as the next word (Slurm takes the
    // first leftover argument).
    let mut positional = p.positional.clone().into_iter();
    let mut optional_list = |key: &str| -> Option<String> {
        if !p.has(key) {
            return None;
        }
        let v = p
            .all(key)
            .into_iter()
            .rfind(|v| !v.is_empty())
            .map(String::from);
        Some(v.or_else(|| positional.next()).unwrap_or_default())
    };
    let jobs_text = optional_list("jobs");
    let steps_text = optional_list("steps");
    if let Some(extra) = positional.next() {
        return Err(Exit::usage(
            "squeue",
            format!("error: Unrecognized option: {extra}"),
        ));
    }
    let jobs = match jobs_text.as_deref() {
        Some("") | None => None,
        Some(t) => {
            Some(JobIdSpec::parse_list(t).map_err(|e| Exit::error("squeue", e.to_string()))?)
        }
    };
    let steps_view = steps_text.is_some();
    let steps = match steps_text.as_deref() {
        Some("") | None => None,
        Some(t) => {
            Some(JobIdSpec::parse_list(t).map_err(|e| Exit::error("squeue", e.to_string()))?)
        }
    };

    let mut users = Vec::new();
    let user_text = p
        .get("users")
        .map(String::from)
        .or_else(|| env("SQUEUE_USERS"));
    for u in user_text.as_deref().map(split_list).unwrap_or_default() {
        users.extend(users::user_forms(&u));
    }
    if p.has("me") {
        users.extend(users::user_forms(me));
    }
    let states_text = p
        .get("states")
        .map(String::from)
        .or_else(|| env("SQUEUE_STATES"));
    let start = p.has("start");
    let mut states = match states_text.as_deref() {
        None => States::Active,
        Some(t) => parse_states(t)?,
    };
    if start && states_text.is_none() {
        states = States::List(vec![JobState::Pending]);
    }
    let nodes = match p.get("nodelist") {
        None => Vec::new(),
        Some(n) => model::hostlist::expand(n)
            .map_err(|_| Exit::error("squeue", format!("'{n}' invalid entry for --nodelist")))?,
    };

    let layout = if p.has("json") {
        Layout::Json
    } else if steps_view {
        let text = p.get("format").unwrap_or(STEP_FORMAT);
        let (fmt, bad) = format::parse_percent(text, fields::step_letter);
        for c in bad {
            warnings.push(format!(
                "squeue: error: Invalid job step format specification: {c}"
            ));
        }
        Layout::Steps(fmt)
    } else {
        let env_format = if p.has("long") || start {
            None
        } else {
            env("SQUEUE_FORMAT")
        };
        let env_format2 = if p.has("long") || start {
            None
        } else {
            env("SQUEUE_FORMAT2")
        };
        let long_text =
            p.get("Format")
                .map(String::from)
                .or(if p.has("format") { None } else { env_format2 });
        match long_text {
            Some(t) if env_format.is_none() || p.has("Format") => {
                let (fmt, bad) = format::parse_long(&t, fields::squeue_name);
                for n in bad {
                    warnings.push(format!(
                        "squeue: error: Invalid job format specification: {n}"
                    ));
                }
                Layout::Jobs(fmt)
            }
            _ => {
                let text = p
                    .get("format")
                    .map(String::from)
                    .or(env_format)
                    .unwrap_or_else(|| {
                        if p.has("long") {
                            LONG_FORMAT.into()
                        } else if start {
                            START_FORMAT.into()
                        } else {
                            DEFAULT_FORMAT.into()
                        }
                    });
                let text = if text.eq_ignore_ascii_case("%all") {
                    all_format()
                } else {
                    text
                };
                let (fmt, bad) = format::parse_percent(&text, fields::squeue_letter);
                for c in bad {
                    warnings.push(format!(
                        "squeue: error: Invalid job format specification: {c}"
                    ));
                }
                Layout::Jobs(fmt)
            }
        }
    };

    let sort_text = p
        .get("sort")
        .map(String::from)
        .or_else(|| env("SQUEUE_SORT"))
        .unwrap_or_else(|| {
            if start {
                "S".into()
            } else {
                DEFAULT_SORT.into()
            }
        });
    let sort = sort_text
        .split(',')
        .filter_map(|k| {
            let (desc, k) = match k.trim() {
                k if k.starts_with('-') => (true, &k[1..]),
                k => (false, k.strip_prefix('+').unwrap_or(k)),
            };
            let mut chars = k.chars();
            let c = chars.next()?;
            chars.next().is_none().then_some(())?;
            fields::squeue_letter(c).map(|f| (f, desc))
        })
        .collect();
    let iterate = args::iterate_option("squeue", &p)?;
    let verbose_dump = p.has("verbose").then(|| {
        let given = |v: Option<&str>| v.unwrap_or("(null)").to_string();
        let yes = |key: &str| if p.has(key) { "true" } else { "false" };
        let format = p
            .get("format")
            .map(String::from)
            .or_else(|| env("SQUEUE_FORMAT"));
        let lines = [
            ("all", yes("all").to_string()),
            ("array", yes("array").to_string()),
            ("federation", yes("federation").to_string()),
            ("format", given(format.as_deref())),
            ("iterate", iterate.unwrap_or(0).to_string()),
            ("job_flag", u8::from(jobs_text.is_some()).to_string()),
            (
                "jobs",
                given(jobs_text.as_deref().filter(|t| !t.is_empty())),
            ),
            ("licenses", given(p.get("licenses"))),
            ("local", yes("local").to_string()),
            ("names", given(p.get("name"))),
            ("nodes", model::hostlist::fold(&nodes)),
            ("partitions", given(p.get("partition"))),
            ("priority", yes("priority").to_string()),
            ("reservation", given(p.get("reservation"))),
            // Slurm's line has one space more.
            ("sibling     ", yes("sibling").to_string()),
            ("sort", given(p.get("sort"))),
            ("start_flag", u8::from(start).to_string()),
            ("states", given(states_text.as_deref())),
            ("step_flag", u8::from(steps_view).to_string()),
            (
                "steps",
                given(steps_text.as_deref().filter(|t| !t.is_empty())),
            ),
            ("users", given(user_text.as_deref())),
            ("verbose", p.all("verbose").len().to_string()),
        ];
        crate::format::option_dump(&lines) + "\n\n"
    });

    let given_or_env = |option: &str, var: &str| {
        p.get(option)
            .map(String::from)
            .or_else(|| env(var))
            .map(|v| split_list(&v))
            .unwrap_or_default()
    };
    Ok(Options {
        jobs,
        steps,
        users,
        // The command line wins over SQUEUE_NAMES, SQUEUE_PARTITION, SQUEUE_ACCOUNT
        // and SQUEUE_QOS.
        names: given_or_env("name", "SQUEUE_NAMES"),
        partitions: given_or_env("partition", "SQUEUE_PARTITION"),
        accounts: given_or_env("accounts", "SQUEUE_ACCOUNT"),
        qos: given_or_env("qos", "SQUEUE_QOS"),
        reservation: p.get("reservation").map(String::from),
        nodes,
        states,
        array: p.has("array") || env("SQUEUE_ARRAY").is_some(),
        layout,
        noheader: p.has("noheader"),
        long: p.has("long"),
        sort,
        iterate,
        verbose_dump,
        priority: p.has("priority") || env("SQUEUE_PRIORITY").is_some(),
    })
}

fn parse_states(text: &str) -> Result<States, Exit> {
    if text.trim().eq_ignore_ascii_case("all") {
        return Ok(States::All);
    }
    let mut out = Vec::new();
    for s in split_list(text) {
        match JobState::parse(&s) {
            Some(state) => out.push(state),
            // States Drover never enters: accepted, match nothing.
            None if [
                "CF",
                "CONFIGURING",
                "SO",
                "STAGE_OUT",
                "RS",
                "RESIZING",
                "ST",
                "STOPPED",
                "SI",
                "SIGNALING",
                "RV",
                "REVOKED",
                "RH",
                "REQUEUE_HOLD",
                "RF",
                "REQUEUE_FED",
                "RD",
                "RESV_DEL_HOLD",
            ]
            .contains(&s.to_ascii_uppercase().as_str()) => {}
            None => {
                let valid: Vec<&str> = JobState::ALL.iter().map(|s| s.name()).collect();
                return Err(Exit {
                    code: 1,
                    stdout: String::new(),
                    stderr: format!(
                        "squeue: error: Invalid job state specified: {s}\nsqueue: error: Valid job states include: {}\n",
                        valid.join(",")
                    ),
                });
            }
        }
    }
    Ok(States::List(out))
}

/// `%all`: every letter, `|`-separated.
fn all_format() -> String {
    ('a'..='z')
        .chain('A'..='Z')
        .filter(|c| fields::squeue_letter(*c).is_some())
        .map(|c| format!("%{c}"))
        .collect::<Vec<_>>()
        .join("|")
}

/// True when the light view of the jobs (`JobSummary`) holds every field the format
/// shows and the sort reads.
pub fn summary_view(opts: &Options) -> bool {
    match &opts.layout {
        Layout::Jobs(fmt) => {
            fmt.columns.iter().all(|c| c.key.in_summary())
                && opts.sort.iter().all(|(f, _)| f.in_summary())
        }
        Layout::Steps(_) | Layout::Json => false,
    }
}

/// The request that fetches what `opts` can show.
pub fn request(opts: &Options) -> ListJobsRequest {
    // One job by id: fetch it in whatever state, to tell "unknown job" from "filtered".
    let single = single_job(opts);
    let states = match &opts.states {
        States::List(l) if !single => l
            .iter()
            .map(|&s| proto::convert::state_to_wire(s) as i32)
            .collect(),
        _ => Vec::new(),
    };
    ListJobsRequest {
        filter: Some(JobFilter {
            job_ids: jobs::selector_ids(opts.jobs.iter().chain(opts.steps.iter()).flatten()),
            users: opts.users.clone(),
            names: opts.names.clone(),
            partitions: opts.partitions.clone(),
            states,
            accounts: opts.accounts.clone(),
            qos: opts.qos.clone(),
            reservations: opts.reservation.iter().cloned().collect(),
            nodes: opts.nodes.join(","),
            ..Default::default()
        }),
        include_finished: single || opts.states.wants_finished(),
        recent_finished_only: true,
        summary: summary_view(opts),
        ..Default::default()
    }
}

/// Fills `job` with what a summary says, reusing its buffers.
pub fn expand_summary(s: &JobSummary, strings: &[String], job: &mut JobInfo) {
    fn set(dst: &mut String, src: &str) {
        dst.clear();
        dst.push_str(src);
    }
    let text = |i: u32| strings.get(i as usize).map_or("", String::as_str);
    job.job_id = s.job_id;
    job.array_job_id = s.array_job_id;
    job.array_task_id = s.array_task_id;
    set(&mut job.array_task_str, &s.array_task_str);
    job.state = s.state;
    set(&mut job.reason, text(s.reason));
    job.submit_time = s.submit_time;
    job.eligible_time = s.submit_time;
    job.start_time = s.start_time;
    job.end_time = s.end_time;
    job.suspend_time = s.suspend_time;
    job.suspended_secs = s.suspended_secs;
    job.planned_start = s.planned_start;
    job.run_secs = s.run_secs;
    job.time_left_secs = s.time_left_secs;
    job.expected_end = s.expected_end;
    job.het = s.het;
    set(&mut job.nodes, &s.nodes);
    job.num_nodes = s.num_nodes;
    job.num_cpus = s.num_cpus;
    job.priority = s.priority;
    set(&mut job.planned_nodes, &s.planned_nodes);
    let spec = job.spec.get_or_insert_with(Default::default);
    set(&mut spec.name, text(s.name));
    set(&mut spec.user, text(s.user));
    spec.uid = s.uid;
    spec.gid = s.gid;
    set(&mut spec.account, text(s.account));
    set(&mut spec.partition, text(s.partition));
    set(&mut spec.qos, text(s.qos));
    spec.time_limit_min = s.time_limit_min;
    set(&mut spec.reservation, text(s.reservation));
    spec.nice = s.nice;
}

/// Full records from summaries (for the paths that keep rows, such as `-j` and `-r`).
pub fn expand_summaries(summaries: &[JobSummary], strings: &[String]) -> Vec<JobInfo> {
    summaries
        .iter()
        .map(|s| {
            let mut job = JobInfo::default();
            expand_summary(s, strings, &mut job);
            job
        })
        .collect()
}

/// `render` for a reply in the light view: rows are expanded one at a time into one
/// reused record, for the sort keys and again for the line, so that a queue of 100k
/// jobs never exists as 100k full records.
pub fn render_summaries(
    opts: &Options,
    summaries: &[JobSummary],
    strings: &[String],
    ctx: &Ctx,
) -> String {
    let fmt = match &opts.layout {
        Layout::Jobs(fmt)
            if opts.jobs.is_none()
                && !opts.array
                && !opts.priority
                && !fmt
                    .columns
                    .iter()
                    .any(|c| matches!(c.width, format::Width::Auto(_))) =>
        {
            fmt
        }
        _ => return render(opts, &expand_summaries(summaries, strings), ctx),
    };
    let mut job = JobInfo::default();
    // The sort keys of every kept row in one flat array (`nkeys` per row), the id
    // order that breaks ties, and the index of each row's summary.
    let nkeys = opts.sort.len();
    let mut keys: Vec<SortKey> = Vec::new();
    let mut kept: Vec<(Tie, usize)> = Vec::new();
    for (i, s) in summaries.iter().enumerate() {
        expand_summary(s, strings, &mut job);
        if filter(opts, &job).is_none() {
            continue;
        }
        keys.extend(opts.sort.iter().map(|(f, _)| f.sort_key(&job, ctx)));
        kept.push((tie_order(&job), i));
    }
    let mut order: Vec<usize> = (0..kept.len()).collect();
    // Ties end in distinct ids: an unstable sort gives the one order.
    order.sort_unstable_by(|&a, &b| {
        let row = |r: usize| (&keys[r * nkeys..(r + 1) * nkeys], &kept[r].0);
        compare_rows(&opts.sort, row(a), row(b))
    });
    drop(keys);
    let mut out = String::new();
    if opts.long && !opts.noheader {
        out.push_str(&times::ctime_line(ctx.now));
        out.push('\n');
    }
    let head = |k: &JobField| k.header();
    let header: Option<&dyn Fn(&JobField) -> Cell> = if opts.noheader { None } else { Some(&head) };
    // The lines of rows `range`, after the header when one is given.
    let lines = |range: std::ops::Range<usize>,
                 header: Option<&dyn Fn(&JobField) -> Cell>,
                 out: &mut String| {
        let mut job = JobInfo::default();
        let mut cells = Vec::with_capacity(fmt.columns.len());
        format::render_stream(fmt, range.len(), header, out, &mut |row, line| {
            expand_summary(
                &summaries[kept[order[range.start + row]].1],
                strings,
                &mut job,
            );
            cells.clear();
            cells.extend(fmt.columns.iter().map(|c| c.key.value(&job, ctx)));
            line(&cells);
        });
    };
    // A large listing is formatted in parts, one per core, joined in order.
    let parts = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(order.len() / PARALLEL_ROWS)
        .max(1);
    if parts == 1 {
        lines(0..order.len(), header, &mut out);
        return out;
    }
    let per_part = order.len().div_ceil(parts);
    let rest: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..parts)
            .map(|k| {
                let range = k * per_part..((k + 1) * per_part).min(order.len());
                scope.spawn(move || {
                    let mut part = String::new();
                    lines(range, None, &mut part);
                    part
                })
            })
            .collect();
        lines(0..per_part, header, &mut out);
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    for part in rest {
        out.push_str(&part);
    }
    out
}

/// Rows per part below which a listing is formatted on one thread.
const PARALLEL_ROWS: usize = 20_000;

/// True when `-j` names exactly one job (Slurm then asks for that job alone).
fn single_job(opts: &Options) -> bool {
    opts.jobs.as_ref().is_some_and(|j| j.len() == 1) && opts.steps.is_none()
}

/// True when `-j` named a single job the controller does not know (or has forgotten):
/// Slurm's squeue then fails with `slurm_load_jobs error: Invalid job id specified`.
pub fn unknown_single_job(opts: &Options, jobs: &[JobInfo]) -> bool {
    match &opts.jobs {
        Some(sel) if single_job(opts) => !jobs.iter().any(|j| jobs::select_ref(sel, j).is_some()),
        _ => false,
    }
}

/// Narrows one record to the tasks `-j` named (an array's pending remainder).
fn filter<'a>(opts: &Options, job: &'a JobInfo) -> Option<JobRef<'a>> {
    let job = match &opts.jobs {
        Some(sel) => jobs::select_ref(sel, job)?,
        None => JobRef::Borrowed(job),
    };
    // The controller applied every filter; only a single job asked by id came in
    // whatever state, to tell an unknown job from a filtered one. States Drover never
    // enters (`-t CF`) leave an empty list, which the controller reads as no filter.
    let no_state = matches!(&opts.states, States::List(l) if l.is_empty());
    (!no_state && (!single_job(opts) || opts.states.matches(jobs::job_state(&job)))).then_some(job)
}

/// The rows to print: filtered, arrays expanded with `-r`, sorted (`-S`, then by id).
/// What breaks a tie of the `-S` keys: the id order, then the raw job id.
type Tie = ((u32, i64), u32);

fn tie_order(j: &JobInfo) -> Tie {
    (fields::id_order(j), j.job_id)
}

/// The order of two rows: their `-S` keys (each ascending or, with `-`, descending), then
/// their ids.
fn compare_rows(
    sort: &[(JobField, bool)],
    (keys_a, tie_a): (&[SortKey], &Tie),
    (keys_b, tie_b): (&[SortKey], &Tie),
) -> std::cmp::Ordering {
    sort.iter()
        .zip(keys_a.iter().zip(keys_b))
        .map(|((_, desc), (a, b))| if *desc { b.cmp(a) } else { a.cmp(b) })
        .find(|ord| ord.is_ne())
        .unwrap_or_else(|| tie_a.cmp(tie_b))
}

pub fn rows<'a>(opts: &Options, jobs: &'a [JobInfo], ctx: &Ctx) -> Vec<JobRef<'a>> {
    let mut out: Vec<JobRef<'a>> = Vec::new();
    for job in jobs.iter().filter_map(|j| filter(opts, j)) {
        let list = &jobs::spec(&job).partition;
        if opts.priority && list.contains(model::job::PARTITION_LIST_SEPARATOR) {
            // `-P`: a row for each partition of a pending job's list (those `-p`
            // asked for, when it did).
            for name in list.split(model::job::PARTITION_LIST_SEPARATOR) {
                if opts.partitions.is_empty() || opts.partitions.iter().any(|p| p == name) {
                    let mut row = JobInfo::clone(&job);
                    row.spec.get_or_insert_default().partition = name.to_string();
                    out.push(JobRef::Owned(Box::new(row)));
                }
            }
        } else if opts.array && jobs::is_array_meta(&job) {
            for t in jobs::pending_tasks(&job) {
                out.push(JobRef::Owned(Box::new(jobs::narrow_array(&job, &[t]))));
            }
        } else {
            out.push(job);
        }
    }
    // Keys are computed once per row, and indices sorted rather than the (large) rows.
    let keys: Vec<(Vec<SortKey>, Tie)> = out
        .iter()
        .map(|j| {
            let keys = opts.sort.iter().map(|(f, _)| f.sort_key(j, ctx)).collect();
            (keys, tie_order(j))
        })
        .collect();
    let mut order: Vec<usize> = (0..out.len()).collect();
    order.sort_by(|&a, &b| {
        let row = |r: usize| (keys[r].0.as_slice(), &keys[r].1);
        compare_rows(&opts.sort, row(a), row(b))
    });
    let mut slots: Vec<Option<JobRef<'a>>> = out.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// The whole output for one reply.
pub fn render(opts: &Options, jobs: &[JobInfo], ctx: &Ctx) -> String {
    let mut out = String::new();
    if opts.long && !opts.noheader && opts.layout != Layout::Json {
        out.push_str(&times::ctime_line(ctx.now));
        out.push('\n');
    }
    match &opts.layout {
        Layout::Json => {
            let rows = rows(opts, jobs, ctx);
            let list: Vec<JobJson> = rows.iter().map(|j| job_json(j, ctx)).collect();
            out.push_str(&jobs::json_doc(jobs::JsonPlugin::Ctld, "jobs", &list));
        }
        Layout::Jobs(fmt) => {
            let rows = rows(opts, jobs, ctx);
            let head = |k: &JobField| k.header();
            let header: Option<&dyn Fn(&JobField) -> Cell> =
                if opts.noheader { None } else { Some(&head) };
            out.push_str(&format::render(
                fmt,
                &rows,
                header,
                &|j: &JobRef, k: &JobField| k.value(j, ctx),
            ));
        }
        Layout::Steps(fmt) => {
            let mut step_rows = Vec::new();
            let job_opts = Options {
                jobs: None,
                states: States::Active,
                ..opts.clone()
            };
            for job in jobs.iter().filter_map(|j| filter(&job_opts, j)) {
                for step in &job.steps {
                    if jobs::step_state(step) != JobState::Running {
                        continue;
                    }
                    let wanted = |sel: &Option<Vec<JobIdSpec>>, need_step: bool| {
                        sel.as_ref().is_none_or(|list| {
                            list.iter().any(|s| {
                                jobs::select(s, &job).is_some()
                                    && (!need_step
                                        || s.step().is_none_or(|id| id.to_string() == step.step_id))
                            })
                        })
                    };
                    if wanted(&opts.jobs, false) && wanted(&opts.steps, true) {
                        step_rows.push(((*job).clone(), step.clone()));
                    }
                }
            }
            step_rows.sort_by_key(|(j, s)| {
                (
                    jobs::spec(j).partition.clone(),
                    j.job_id,
                    s.step_id.parse::<i64>().unwrap_or(-1),
                )
            });
            let head = |k: &StepField| k.header();
            let header: Option<&dyn Fn(&StepField) -> Cell> =
                if opts.noheader { None } else { Some(&head) };
            out.push_str(&format::render(
                fmt,
                &step_rows,
                header,
                &|r: &(JobInfo, proto::v1::StepInfo), k: &StepField| (k.value)(&r.0, &r.1, ctx),
            ));
        }
    }
    out
}

/// One job in Slurm's `squeue --json` shape (keys as Slurm's data_parser names them).
#[derive(Debug, Serialize)]
pub struct JobJson<'a> {
    account: &'a str,
    array_job_id: u32,
    array_task_id: Option<u32>,
    array_task_string: &'a str,
    batch_host: &'a str,
    cluster: &'a str,
    comment: &'a str,
    cpus: u32,
    cpus_per_task: u32,
    current_working_directory: &'a str,
    dependency: &'a str,
    eligible_time: i64,
    end_time: i64,
    /// The wait status (`code << 8 | signal`).
    exit_code: i32,
    group_id: u32,
    group_name: String,
    job_id: u32,
    job_state: &'static str,
    memory_per_cpu: u64,
    memory_per_node: u64,
    name: &'a str,
    nice: i32,
    node_count: u32,
    nodes: &'a str,
    partition: &'a str,
    priority: u32,
    qos: &'a str,
    requeue: bool,
    restart_cnt: u32,
    standard_error: &'a str,
    standard_input: &'a str,
    standard_output: &'a str,
    start_time: i64,
    state_reason: &'a str,
    submit_time: i64,
    tasks: u32,
    /// Minutes; `null` is UNLIMITED.
    time_limit: Option<u32>,
    tres_alloc_str: String,
    user_id: u32,
    user_name: String,
    wckey: &'a str,
}

/// One job for `--json`.
pub fn job_json<'a>(j: &'a JobInfo, ctx: &'a Ctx) -> JobJson<'a> {
    let s = jobs::spec(j);
    let st = jobs::job_state(j);
    JobJson {
        account: &s.account,
        array_job_id: j.array_job_id,
        array_task_id: j.array_task_id,
        array_task_string: jobs::task_str(j),
        batch_host: &j.batch_host,
        cluster: &ctx.cluster,
        comment: &s.comment,
        cpus: j.num_cpus,
        cpus_per_task: s.cpus_per_task.max(1),
        current_working_directory: &s.work_dir,
        dependency: &s.dependency,
        eligible_time: j.eligible_time,
        end_time: j.end_time,
        exit_code: jobs::wait_status(j.exit_code, j.exit_signal),
        group_id: s.gid,
        group_name: ctx.names.group(s.gid),
        job_id: j.job_id,
        job_state: st.name(),
        memory_per_cpu: s.mem_per_cpu_mb,
        memory_per_node: s.mem_per_node_mb,
        name: &s.name,
        nice: s.nice,
        node_count: j.num_nodes,
        nodes: &j.nodes,
        partition: &s.partition,
        priority: j.priority,
        qos: jobs::qos(s),
        requeue: s.requeue,
        restart_cnt: j.restart_count,
        standard_error: &j.stderr_path,
        standard_input: jobs::stdin_path(s),
        standard_output: &j.stdout_path,
        start_time: if st == JobState::Pending {
            j.planned_start
        } else {
            j.start_time
        },
        state_reason: jobs::reason(j),
        submit_time: j.submit_time,
        tasks: s.num_tasks.max(1),
        time_limit: (s.time_limit_min > 0).then_some(s.time_limit_min),
        tres_alloc_str: jobs::tres_string(j.num_cpus, j.mem_mb, j.num_nodes, j.num_gpus),
        user_id: s.uid,
        user_name: ctx.names.job_user(j),
        wckey: &s.wckey,
    }
}

/// The first name of `-w` that is no node of the cluster.
fn unknown_node<'a>(asked: &'a [String], known: &[proto::v1::NodeInfo]) -> Option<&'a str> {
    asked
        .iter()
        .find(|name| !known.iter().any(|n| n.name == **name))
        .map(String::as_str)
}

pub fn run(args: &[String]) -> ExitCode {
    let (me, uid, _) = client::current_user();
    let opts = match args::parse_printing_warnings(|w| parse_args(args, &args::env_var, &me, w)) {
        Ok(o) => o,
        Err(code) => return code,
    };
    if let Some(dump) = &opts.verbose_dump {
        print!("{dump}");
    }
    let cluster = client::cluster_name();
    let rt = client::runtime();
    if !opts.nodes.is_empty() {
        let known = match calls::query(&rt, "squeue", |mut c| async move {
            c.list_nodes(proto::v1::ListNodesRequest { names: Vec::new() })
                .await
                .map(|r| r.into_inner().nodes)
        }) {
            Ok(nodes) => nodes,
            Err(code) => return code,
        };
        if let Some(unknown) = unknown_node(&opts.nodes, &known) {
            eprintln!("squeue: error: Invalid node name {unknown}");
            return ExitCode::from(1);
        }
    }
    // `-P`: the partitions' tiers, which order the rows of a sort by priority.
    let mut partition_tiers = std::collections::BTreeMap::new();
    if opts.priority {
        match calls::query(&rt, "squeue", |mut c| async move {
            c.list_partitions(proto::v1::ListPartitionsRequest {})
                .await
                .map(|r| r.into_inner().partitions)
        }) {
            Ok(parts) => {
                partition_tiers = parts
                    .into_iter()
                    .map(|p| (p.name, p.priority_tier))
                    .collect()
            }
            Err(code) => return code,
        }
    }
    loop {
        let req = request(&opts);
        let mut reply = match calls::query(&rt, "squeue", |mut c| async move {
            if req.summary {
                // Chunks, decoded while the controller builds the next ones; a
                // controller without the call answers the plain request below.
                match c.list_job_summaries(req.clone()).await {
                    Ok(stream) => return calls::collect_chunks(stream.into_inner()).await,
                    Err(s) if s.code() == tonic::Code::Unimplemented => {}
                    Err(s) => return Err(s),
                }
            }
            c.list_jobs(req).await.map(|r| r.into_inner())
        }) {
            Ok(r) => r,
            Err(code) => return code,
        };
        if opts.jobs.is_some() {
            // Few rows: the full records serve the id checks below.
            reply
                .jobs
                .extend(expand_summaries(&reply.summaries, &reply.strings));
            reply.summaries.clear();
        }
        if let Err(e) = jobs::check_records("squeue", &reply.jobs) {
            return e.finish();
        }
        if unknown_single_job(&opts, &reply.jobs) {
            eprintln!("slurm_load_jobs error: Invalid job id specified");
            return ExitCode::from(1);
        }
        // Runs of one id are common in a large queue: each run is looked up once.
        let distinct = |ids: &mut dyn Iterator<Item = u32>| {
            let mut last = None;
            ids.filter(|id| last.replace(*id) != Some(*id))
                .collect::<Vec<u32>>()
        };
        let names = Names::resolve(
            distinct(
                &mut reply
                    .jobs
                    .iter()
                    .map(|j| jobs::spec(j).uid)
                    .chain(reply.summaries.iter().map(|s| s.uid))
                    .chain([uid]),
            ),
            distinct(
                &mut reply
                    .jobs
                    .iter()
                    .map(|j| jobs::spec(j).gid)
                    .chain(reply.summaries.iter().map(|s| s.gid)),
            ),
        );
        let ctx = Ctx {
            now: if reply.now > 0 {
                reply.now
            } else {
                times::now()
            },
            names,
            cluster: cluster.clone(),
            partition_tiers: partition_tiers.clone(),
            sizes: Default::default(),
        };
        let text = if reply.summaries.is_empty() {
            render(&opts, &reply.jobs, &ctx)
        } else {
            render_summaries(&opts, &reply.summaries, &reply.strings, &ctx)
        };
        if !args::print_round(opts.iterate, opts.long, opts.noheader, ctx.now, &text) {
            return ExitCode::SUCCESS;
        }
    }
}

/// The chunks of a streamed listing as one reply.
const USAGE: &str = "\
Usage: squeue [-A account] [--clusters names] [-i seconds] [--job jobid]
              [-n name] [-o format] [-p partitions] [--qos qos]
              [--reservation reservation] [--sort fields] [--start]
              [--step step_id] [-t states] [-u user_name] [--usage]
              [-L licenses] [-w nodes] [--federation] [--local] [--sibling]
              [--json] [-ahjlrsv]
";

const HELP: &str = "\
Usage: squeue [OPTIONS]
  -A, --account=account(s)        comma separated list of accounts
                                  to view, default is all accounts
  -a, --all                       display jobs in hidden partitions
  -h, --noheader                  no headers on output
  -i, --iterate=seconds           specify an interation period
  -j, --job=job(s)                comma separated list of jobs IDs
                                  to view, default is all
      --json                      produce JSON output
  -l, --long                      long report
  -M, --clusters=cluster_name     cluster to issue commands to (ignored)
      --me                        equivalent to --user=<my username>
  -n, --name=job_name(s)          comma separated list of job names to view
  -o, --format=format             format specification
  -O, --Format=format             format specification
  -p, --partition=partition(s)    comma separated list of partitions
                                  to view, default is all partitions
  -q, --qos=qos(s)                comma separated list of qos's
                                  to view, default is all qos's
  -R, --reservation=name          reservation to view, default is all
  -r, --array                     display one job array element per line
  -s, --step=step(s)              comma separated list of job steps
                                  to view, default is all
  -S, --sort=fields               comma separated list of fields to sort on
      --start                     print expected start times of pending jobs
  -t, --states=states             comma separated list of states to view,
                                  default is pending and running,
                                  '--states=all' reports all states
  -u, --user=user_name(s)         comma separated list of users to view
  -v, --verbose                   verbosity level
  -V, --version                   output version information and exit
  -w, --nodelist=hostlist         list of nodes to view, default is
                                  all nodes

Help options:
  --help                          show this help message
  --usage                         display a brief summary of squeue options
";

#[cfg(test)]
mod tests {
    use super::*;
    use proto::v1::JobState as W;
    use proto::v1::{JobSpec, StepInfo};
    use serde_json::json;

    const NOW: i64 = 1_800_000_000;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn parse(args: &[&str]) -> Result<Options, Exit> {
        let mut w = Vec::new();
        parse_args(&s(args), &|_| None, "alice", &mut w)
    }

    #[test]
    fn verbose_prints_the_options_as_slurm_does() {
        let o = parse(&["-vv", "-u", "bob", "-p", "debug", "-t", "PD", "--start"]).unwrap();
        let dump = o.verbose_dump.unwrap();
        let lines: Vec<&str> = dump.lines().collect();
        assert_eq!(lines[0], "-----------------------------");
        assert!(lines.contains(&"all         = false"), "{dump}");
        assert!(lines.contains(&"format      = (null)"), "{dump}");
        assert!(lines.contains(&"partitions  = debug"), "{dump}");
        assert!(lines.contains(&"sibling      = false"), "{dump}");
        assert!(lines.contains(&"start_flag  = 1"), "{dump}");
        assert!(lines.contains(&"states      = PD"), "{dump}");
        assert!(lines.contains(&"users       = bob"), "{dump}");
        assert!(lines.contains(&"verbose     = 2"), "{dump}");
        assert!(dump.ends_with("-----------------------------\n\n\n"));
        assert!(parse(&[]).unwrap().verbose_dump.is_none());
    }

    fn job(id: u32, name: &str, state: W) -> JobInfo {
        JobInfo {
            job_id: id,
            state: state as i32,
            reason: "None".into(),
            submit_time: NOW - 100,
            eligible_time: NOW - 100,
            num_nodes: 1,
            num_cpus: 1,
            priority: 1000 - id,
            time_left_secs: Some(300),
            spec: Some(JobSpec {
                name: name.into(),
                user: "alice".into(),
                uid: 1000,
                gid: 1000,
                partition: "debug".into(),
                account: "proj".into(),
                time_limit_min: 5,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn running(id: u32, name: &str, started: i64, nodes: &str) -> JobInfo {
        JobInfo {
            start_time: NOW - started,
            run_secs: started,
            time_left_secs: Some(300 - started),
            expected_end: NOW - started + 300,
            nodes: nodes.into(),
            batch_host: nodes.into(),
            ..job(id, name, W::Running)
        }
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

    #[test]
    fn priority_lists_a_pending_job_once_per_partition_in_tier_order() {
        let mut multi = job(5, "multi", W::Pending);
        multi.spec.as_mut().unwrap().partition = "high,low".into();
        let jobs = [multi, running(6, "run", 10, "n1")];
        let mut ctx = ctx();
        ctx.partition_tiers = [("low".to_string(), 1), ("high".to_string(), 2)].into();
        let show = |args: &[&str]| render(&parse(args).unwrap(), &jobs, &ctx);
        assert_eq!(
            show(&["-P", "-S", "p,i", "-h", "-o", "%i %P"]),
            "6 debug\n5 low\n5 high\n"
        );
        // The controller sent the jobs of `-p low`; the rows are that partition's.
        let opts = parse(&["-P", "-h", "-o", "%i %P", "-p", "low"]).unwrap();
        assert_eq!(render(&opts, &jobs[..1], &ctx), "5 low\n");
        // Without -P: one row, every partition.
        assert_eq!(
            show(&["-S", "i", "-h", "-o", "%i %P"]),
            "5 high,low\n6 debug\n"
        );
    }

    /// What squeue prints for `args` when the controller holds `jobs`.
    fn out(args: &[&str], jobs: &[JobInfo]) -> String {
        let opts = parse(args).unwrap();
        let served = crate::testkit::served(&request(&opts), jobs);
        render(&opts, &served, &ctx())
    }

    fn sample() -> Vec<JobInfo> {
        let mut pending = job(3, "train", W::Pending);
        pending.reason = "Resources".into();
        let mut array = job(4, "sweep", W::Pending);
        array.array_job_id = 4;
        array.array_task_str = "2-4%2".into();
        array.reason = "JobArrayTaskLimit".into();
        let mut task = running(7, "sweep", 65, "gpu02");
        task.array_job_id = 4;
        task.array_task_id = Some(0);
        let done = JobInfo {
            end_time: NOW - 5,
            run_secs: 45,
            time_left_secs: Some(255),
            expected_end: NOW - 5,
            ..running(2, "old", 50, "gpu01")
        };
        let done = JobInfo {
            state: W::Completed as i32,
            ..done
        };
        vec![
            running(1, "verylongjobname", 3725, "gpu[01-02]"),
            pending,
            array,
            task,
            done,
        ]
    }

    #[test]
    fn default_output() {
        let text = out(&[], &sample());
        let want = [
            "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)",
            "                 3     debug    train    alice PD       0:00      1 (Resources)",
            "         4_[2-4%2]     debug    sweep    alice PD       0:00      1 (JobArrayTaskLimit)",
            "                 1     debug verylong    alice  R    1:02:05      1 gpu[01-02]",
            "               4_0     debug    sweep    alice  R       1:05      1 gpu02",
        ];
        assert_eq!(text, want.join("\n") + "\n");
    }

    #[test]
    fn snakemake_status_query() {
        let text = out(
            &[
                "--format=%i|%T",
                "--states=all",
                "--noheader",
                "--name",
                "old",
            ],
            &sample(),
        );
        assert_eq!(text, "2|COMPLETED\n");
        let text = out(&["--format=%i|%T", "--states=all", "--noheader"], &sample());
        assert!(
            text.contains("4_[2-4%2]|PENDING\n") && text.contains("4_0|RUNNING\n"),
            "{text}"
        );
        let req = request(&parse(&["--states=all", "--name", "x"]).unwrap());
        assert!(req.include_finished && req.recent_finished_only);
        assert_eq!(req.filter.unwrap().names, vec!["x"]);
        assert!(!request(&parse(&[]).unwrap()).include_finished);
        assert!(request(&parse(&["-t", "CD"]).unwrap()).include_finished);
    }

    #[test]
    fn array_rows_with_r_and_job_selection() {
        let text = out(&["-r", "-h", "-o", "%i %t"], &sample());
        assert_eq!(text, "3 PD\n4_2 PD\n4_3 PD\n4_4 PD\n1 R\n4_0 R\n");
        let text = out(&["-h", "-o", "%i", "-j", "4"], &sample());
        assert_eq!(text, "4_[2-4%2]\n4_0\n");
        let text = out(&["-h", "-o", "%i", "-j4_3,1"], &sample());
        assert_eq!(text, "4_3\n1\n");
        // `-j 4_3` with a space: the value is the next word.
        let text = out(&["-h", "-o", "%i %A %F %K", "-j", "4_3"], &sample());
        assert_eq!(text, "4_3 4 4 3\n");
        let text = out(&["-h", "-o", "%i %A %F %K", "-j", "7"], &sample());
        assert_eq!(text, "4_0 7 4 0\n");
    }

    #[test]
    fn states_users_and_filters() {
        assert_eq!(
            out(&["-h", "-o", "%i", "-t", "pd"], &sample()),
            "3\n4_[2-4%2]\n"
        );
        assert_eq!(
            out(&["-h", "-o", "%i", "-t", "R,CD"], &sample()),
            "1\n4_0\n2\n"
        );
        assert_eq!(out(&["-h", "-o", "%i", "-u", "bob"], &sample()), "");
        // Only states no job is ever in: no job, as in Slurm.
        assert_eq!(out(&["-h", "-o", "%i", "-t", "CF,SO"], &sample()), "");
        assert_eq!(
            out(&["-h", "-o", "%i", "--me", "-w", "gpu02"], &sample()),
            "1\n4_0\n"
        );
        assert_eq!(out(&["-h", "-o", "%i", "-p", "other"], &sample()), "");
        // Accounts are matched in any case, job names exactly (as Slurm does).
        assert_eq!(
            out(&["-h", "-o", "%i", "-A", "PROJ", "-n", "train"], &sample()),
            "3\n"
        );
        assert_eq!(out(&["-h", "-o", "%i", "-n", "TRAIN"], &sample()), "");
        let e = parse(&["-t", "bogus"]).unwrap_err();
        assert_eq!(e.code, 1);
        assert!(
            e.stderr
                .starts_with("squeue: error: Invalid job state specified: bogus\n")
        );
    }

    /// Jobs of every kind with every field set, as the controller's model holds them.
    fn model_jobs() -> Vec<model::Job> {
        let spec = model::JobSpec {
            name: "train".into(),
            uid: 1000,
            gid: 100,
            user: "alice".into(),
            account: "ml".into(),
            partition: "gpu".into(),
            qos: "high".into(),
            work_dir: "/home/alice/run".into(),
            stdout_pattern: "out-%j.txt".into(),
            stderr_pattern: "err-%j.txt".into(),
            stdin_path: "/home/alice/in".into(),
            num_nodes: 2,
            num_tasks: 4,
            cpus_per_task: 2,
            ntasks_per_node: 2,
            mem_per_cpu_mb: 1024,
            gpus: 4,
            gpus_per_node: 2,
            gpu_type: "h100".into(),
            time_limit_min: Some(60),
            requeue: true,
            comment: "a comment".into(),
            wckey: "wk".into(),
            dependency: "afterok:1".into(),
            submit_host: "login1".into(),
            reservation: "maint".into(),
            constraint: "a100|h100".into(),
            nodelist: "gpu[01-02]".into(),
            exclude: "gpu03".into(),
            exclusive: true,
            nice: 10,
            ..Default::default()
        };
        let node = |name: &str| model::NodeAllocation {
            node: name.into(),
            cpus: 4,
            mem_mb: 4096,
            gpus: vec![0, 1],
            cpu_ids: vec![0, 1, 2, 3],
        };
        let step = |id: Option<u32>, state| model::Step {
            state,
            exit_code: 3,
            num_tasks: 4,
            ..model::Step::started(id, "python", NOW - 50)
        };
        let mut running = model::Job::new(21, spec.clone(), NOW - 500, Some(60));
        running.state = JobState::Running;
        running.start_time = NOW - 400;
        running.alloc = Some(model::Allocation {
            nodes: vec![node("gpu01"), node("gpu02")],
        });
        running.steps = vec![
            step(None, JobState::Running),
            step(Some(0), JobState::Running),
        ];
        running.stdout_path = "/home/alice/run/out-21.txt".into();
        running.stderr_path = "/home/alice/run/err-21.txt".into();
        running.suspended_secs = 30;
        running.restart_count = 1;
        let mut suspended = running.clone();
        suspended.id = 22;
        suspended.state = JobState::Suspended;
        suspended.suspend_time = NOW - 20;
        let mut done = running.clone();
        done.id = 23;
        done.state = JobState::Completed;
        done.end_time = NOW - 5;
        done.exit_code = 2;
        let mut array_spec = spec.clone();
        array_spec.array = Some(model::ArraySpec {
            task_ids: vec![1, 2, 3, 5],
            max_running: 2,
        });
        array_spec.begin_time = NOW + 900;
        let mut array = model::Job::new(30, array_spec, NOW - 100, Some(60));
        array.reason = model::Reason::Resources;
        array.planned_start = NOW + 900;
        array.planned_nodes = "gpu[01-02]".into();
        let mut task = running.clone();
        task.id = 34;
        task.array_job_id = 30;
        task.array_task_id = Some(0);
        let mut held = model::Job::new(40, model::JobSpec { hold: true, ..spec }, NOW - 9, None);
        held.held = true;
        vec![running, suspended, done, array, task, held]
    }

    /// The full records and the light view the controller sends for `jobs` at NOW.
    fn wire(jobs: &[model::Job]) -> (Vec<JobInfo>, Vec<JobSummary>, Vec<String>) {
        let full = jobs
            .iter()
            .map(|j| proto::convert::job_to_wire(j, None, NOW))
            .collect();
        let mut table = proto::convert::StringTable::default();
        let light = jobs
            .iter()
            .map(|j| proto::convert::job_to_summary(j, &mut table, NOW))
            .collect();
        (full, light, table.take_new())
    }

    #[test]
    fn every_light_field_prints_as_with_the_full_record() {
        let jobs = model_jobs();
        let (full, light, strings) = wire(&jobs);
        let ctx = ctx();
        let mut light_fields = 0;
        for field in fields::squeue_fields().filter(|f| f.in_summary()) {
            light_fields += 1;
            for (info, summary) in full.iter().zip(&light) {
                let expanded = expand_summaries(std::slice::from_ref(summary), &strings);
                let seen = &expanded[0];
                assert_eq!(
                    field.value(seen, &ctx),
                    field.value(info, &ctx),
                    "{field:?} of job {}",
                    info.job_id
                );
                assert_eq!(
                    field.sort_key(seen, &ctx),
                    field.sort_key(info, &ctx),
                    "{field:?} of job {}",
                    info.job_id
                );
            }
        }
        assert!(light_fields > 30, "{light_fields}");
        // The light view does lack what the full fields read.
        let expanded = expand_summaries(&light, &strings);
        let comment = fields::squeue_name("comment").unwrap();
        assert!(!comment.in_summary());
        assert_ne!(
            comment.value(&expanded[0], &ctx),
            comment.value(&full[0], &ctx)
        );
    }

    #[test]
    fn light_view_renders_as_full_records() {
        let (jobs, summaries, strings) = wire(&model_jobs());
        for args in [
            &[][..],
            &["-l"],
            &["--start"],
            &["-h", "-t", "all", "-S", "-i"],
            &[
                "-o",
                "%.10i %j %u %T %M %l %L %D %C %P %q %p %Q %r %S %e %V %Y %N",
            ],
            &["-O", "JobID,Name:30,State,TimeLeft,SchedNodes,Reason:.12"],
            &["-r", "-o", "%i %K %F"],
            &["-j", "30_3", "-o", "%i %T"],
            &["-u", "alice", "-p", "gpu", "-t", "PD,R"],
            &["-o", "%#P %i"],
        ] {
            let opts = parse(args).unwrap();
            assert!(summary_view(&opts), "{args:?}");
            let text = render(&opts, &jobs, &ctx());
            assert!(text.lines().count() > 1, "{args:?}: {text}");
            assert_eq!(
                render_summaries(&opts, &summaries, &strings, &ctx()),
                text,
                "{args:?}"
            );
        }
        for args in [&["--json"][..], &["-o", "%B %i"], &["-S", "m"], &["-s"]] {
            assert!(!summary_view(&parse(args).unwrap()), "{args:?}");
        }
    }

    #[test]
    fn a_large_listing_formatted_in_parts_reads_as_one() {
        // Enough rows for two parts: the lines must come out whole and in order.
        let base = model_jobs();
        let many: Vec<model::Job> = (0..2 * PARALLEL_ROWS as u32 + 7)
            .map(|i| {
                let mut j = base[i as usize % base.len()].clone();
                j.id = 1000 + i;
                j.array_job_id = 0;
                j.array_task_id = None;
                j.pending_tasks.clear();
                j
            })
            .collect();
        let (jobs, summaries, strings) = wire(&many);
        for (args, header) in [
            (&["-t", "all"][..], 1),
            (&["-h", "-t", "all", "-o", "%i %j %T"], 0),
        ] {
            let opts = parse(args).unwrap();
            let text = render_summaries(&opts, &summaries, &strings, &ctx());
            assert_eq!(text, render(&opts, &jobs, &ctx()), "{args:?}");
            assert_eq!(text.lines().count(), jobs.len() + header);
        }
    }

    #[test]
    fn start_shows_planned_nodes() {
        let mut jobs = sample();
        jobs[1].planned_start = NOW + 600;
        jobs[1].planned_nodes = "gpu[01-02]".into();
        let text = out(&["--start"], &jobs);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains(" SCHEDNODES "), "{text}");
        assert!(lines[1].contains(" gpu[01-02] "), "{text}");
        assert!(lines[2].contains(" (null) "), "{text}");
        assert_eq!(out(&["-h", "-j", "3", "-o", "%Y"], &jobs), "gpu[01-02]\n");
    }

    #[test]
    fn long_start_and_format_letters() {
        let text = out(&["-l", "-j", "1"], &sample());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[1],
            "             JOBID PARTITION     NAME     USER    STATE       TIME TIME_LIMI  NODES NODELIST(REASON)"
        );
        assert_eq!(
            lines[2],
            "                 1     debug verylong    alice  RUNNING    1:02:05      5:00      1 gpu[01-02]"
        );
        let mut jobs = sample();
        jobs[1].planned_start = NOW + 600;
        let text = out(&["--start", "-h"], &jobs);
        assert_eq!(text.lines().count(), 2, "{text}");
        let first = text.lines().next().unwrap();
        assert!(first.contains(&times::format_time(NOW + 600)), "{first}");
        assert!(text.lines().nth(1).unwrap().contains("N/A"));
        let text = out(
            &[
                "-h",
                "-o",
                "%a %u %U %G %P %q %l %L %D %C %m %h %k %E %y %Z %B %b %Q",
                "-j",
                "1",
            ],
            &sample(),
        );
        assert_eq!(
            text,
            "proj alice 1000 1000 debug normal 5:00 INVALID 1 1 0 OK (null) (null) 0  gpu[01-02] N/A 999\n"
        );
    }

    #[test]
    fn long_format_names() {
        let text = out(
            &[
                "-h",
                "-O",
                "JobID:6,JobArrayID:12,State:.10,ArrayJobID:4,ArrayTaskID:3,UserName:0",
            ],
            &sample()[3..4],
        );
        assert_eq!(text, "7     4_0            RUNNING4   0  alice\n");
        let mut w = Vec::new();
        let o = parse_args(&s(&["-O", "JobID,Bogus"]), &|_| None, "a", &mut w).unwrap();
        assert_eq!(
            w,
            vec!["squeue: error: Invalid job format specification: Bogus"]
        );
        assert!(matches!(o.layout, Layout::Jobs(ref f) if f.columns.len() == 1));
        // A heterogeneous job's component, and any other job.
        let mut jobs = sample()[3..4].to_vec();
        let plain = out(
            &["-h", "-O", "HetJobId:6,HetJobOffset:6,HetJobIdSet:6"],
            &jobs,
        );
        assert_eq!(plain, "N/A   N/A   N/A   \n");
        jobs[0].het = Some(proto::v1::HetJob {
            leader: 6,
            offset: 1,
            count: 2,
        });
        let het = out(
            &["-h", "-O", "HetJobId:6,HetJobOffset:6,HetJobIdSet:6"],
            &jobs,
        );
        assert_eq!(het, "6     1     6-7   \n");
    }

    #[test]
    fn sort_option() {
        assert_eq!(
            out(&["-h", "-o", "%i", "-S", "-i", "-t", "all"], &sample()),
            "4_0\n4_[2-4%2]\n3\n2\n1\n"
        );
        assert_eq!(
            out(&["-h", "-o", "%i", "-S", "M"], &sample()),
            "3\n4_[2-4%2]\n4_0\n1\n"
        );
        // END_TIME sorts on what it prints, the expected end of a running job.
        assert_eq!(
            out(&["-h", "-o", "%i %e", "-t", "R", "-S", "-e"], &sample()),
            format!(
                "4_0 {}\n1 {}\n",
                times::format_time(NOW + 235),
                times::format_time(NOW - 3425)
            )
        );
        // A large task id stays with its array, before the next job.
        let mut task = running(8, "sweep", 10, "gpu01");
        task.array_job_id = 5;
        task.array_task_id = Some(1_000_000);
        let next = job(6, "next", W::Pending);
        assert_eq!(
            out(
                &["-h", "-o", "%i", "-S", "i"],
                &[next.clone(), task.clone()]
            ),
            "5_1000000\n6\n"
        );
        assert_eq!(
            out(&["-h", "-o", "%i", "-S", "-F"], &[task, next]),
            "6\n5_1000000\n"
        );
    }

    #[test]
    fn single_job_requests() {
        let o = parse(&["-j", "3", "-t", "R"]).unwrap();
        let req = request(&o);
        assert!(req.include_finished);
        assert!(req.filter.unwrap().states.is_empty());
        assert!(!unknown_single_job(&o, &sample()));
        assert!(unknown_single_job(&o, &sample()[3..]));
        assert_eq!(render(&o, &sample(), &ctx()).lines().count(), 1);
        let two = parse(&["-j", "3,99"]).unwrap();
        assert!(!unknown_single_job(&two, &[]));
        assert!(!request(&two).include_finished);
    }

    #[test]
    fn errors_and_help() {
        let e = parse(&["--x"]).unwrap_err();
        assert_eq!(
            (e.code, e.stderr.as_str()),
            (
                1,
                "squeue: unrecognized option '--x'\nTry \"squeue --help\" for more information\n"
            )
        );
        let e = parse(&["-Z"]).unwrap_err();
        assert!(e.stderr.starts_with("squeue: invalid option -- 'Z'\n"));
        let e = parse(&["stray"]).unwrap_err();
        assert!(
            e.stderr
                .starts_with("squeue: error: Unrecognized option: stray\n")
        );
        let e = parse(&["-o", "%i", "-O", "JobID"]).unwrap_err();
        assert_eq!(e.code, 1);
        assert_eq!(parse(&["--help"]).unwrap_err().code, 0);
        assert_eq!(parse(&["-V"]).unwrap_err().stdout, "slurm 22.05.8\n");
        // Long-name prefixes and attached short values.
        assert!(parse(&["--noh", "-tpd,r", "--part=debug"]).is_ok());
    }

    #[test]
    fn json_output() {
        let text = out(&["--json", "-t", "all"], &sample());
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let jobs = v["jobs"].as_array().unwrap();
        assert_eq!(jobs.len(), 5);
        let first = &jobs[0];
        assert_eq!(first["job_id"], 3);
        assert_eq!(first["job_state"], "PENDING");
        assert_eq!(first["state_reason"], "Resources");
        assert_eq!(first["time_limit"], 5);
        let done = jobs.iter().find(|j| j["job_id"] == 2).unwrap();
        assert_eq!(done["exit_code"], 0);
        // Slurm 22.05's (data_parser v0.0.38) top level.
        assert_eq!(v["meta"]["plugin"]["type"], "openapi/v0.0.38");
        assert_eq!(v["meta"]["Slurm"]["release"], "22.05.8");
        assert_eq!(
            v["meta"]["Slurm"]["version"],
            json!({"major": 22, "micro": 8, "minor": 5})
        );
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["errors", "jobs", "meta", "warnings"]);
        assert_eq!(jobs::wait_status(3, 0), 768);
        assert_eq!(jobs::wait_status(0, 9), 9);
        assert_eq!(jobs::exit_of_wait_status(768), (3, 0));
        assert_eq!(jobs::exit_of_wait_status(22), (0, 22));
    }

    #[test]
    fn steps_view() {
        let mut j = running(1, "mpi", 100, "gpu[01-02]");
        j.steps = vec![
            StepInfo {
                step_id: "batch".into(),
                name: "batch".into(),
                state: W::Running as i32,
                start_time: NOW - 100,
                nodes: "gpu01".into(),
                ..Default::default()
            },
            StepInfo {
                step_id: "0".into(),
                name: "python".into(),
                state: W::Running as i32,
                start_time: NOW - 30,
                nodes: "gpu[01-02]".into(),
                ..Default::default()
            },
        ];
        let text = out(&["-s"], std::slice::from_ref(&j));
        assert_eq!(
            text,
            "         STEPID     NAME PARTITION     USER      TIME NODELIST\n        1.batch    batch     debug    alice      1:40 gpu01\n            1.0   python     debug    alice      0:30 gpu[01-02]\n"
        );
        assert_eq!(
            out(&["-h", "-s", "1.0", "-o", "%i"], std::slice::from_ref(&j)),
            "1.0\n"
        );
    }

    #[test]
    fn a_nodelist_names_only_the_clusters_nodes() {
        let known: Vec<proto::v1::NodeInfo> = ["node1", "node2"]
            .iter()
            .map(|n| proto::v1::NodeInfo {
                name: n.to_string(),
                ..Default::default()
            })
            .collect();
        let asked = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(unknown_node(&asked(&["node1", "node2"]), &known), None);
        assert_eq!(
            unknown_node(&asked(&["node1", "dummy_name"]), &known),
            Some("dummy_name")
        );
    }

    #[test]
    fn filters_come_from_squeue_variables_unless_given() {
        let env = |name: &str| match name {
            "SQUEUE_PARTITION" => Some("gpu".to_string()),
            "SQUEUE_ACCOUNT" => Some("ml,cv".to_string()),
            "SQUEUE_QOS" => Some("high".to_string()),
            "SQUEUE_NAMES" => Some("train".to_string()),
            _ => None,
        };
        let mut w = Vec::new();
        let o = parse_args(&s(&[]), &env, "alice", &mut w).unwrap();
        assert_eq!(o.partitions, ["gpu"]);
        assert_eq!(o.accounts, ["ml", "cv"]);
        assert_eq!(o.qos, ["high"]);
        assert_eq!(o.names, ["train"]);
        let o = parse_args(&s(&["-p", "debug"]), &env, "alice", &mut w).unwrap();
        assert_eq!(o.partitions, ["debug"]);
    }
}
