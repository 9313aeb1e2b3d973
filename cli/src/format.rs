//! Output formatting shared by the read commands (`squeue`, `sinfo`, `sacct`).
//!
//! Three layouts, each as Slurm prints it:
//!
//! - `-o/--format` strings of `%[.][size]type[suffix]` specifiers (squeue, sinfo). A size
//!   pads the value (left-aligned, `.` right-aligns, `-` is accepted as printf's
//!   left-alignment) and, for most fields, truncates it;
//!   text before the first `%` and after each type letter is printed as is. sinfo's `%#P`
//!   sizes a column to its widest value.
//! - `-O/--Format` lists of `Name[:[.][size][suffix]]` (squeue, sinfo); without a size a
//!   field is 20 wide.
//! - sacct's field tables (`Field%N`): right-aligned unless the default or a negative size
//!   says left, values longer than the column end in `+`, a header line and a dash line;
//!   `--parsable`/`--parsable2` print `|`-separated values instead.
//!
//! Around them: a read command's command line (getopt_long's acceptance of prefixes
//! shared by aliases of one option, `--part` for `--partition`/`--partitions`) and its
//! early exits (help, usage, version, errors in the arguments with Slurm's wording); what
//! the commands that show jobs (squeue, sacct, scontrol) need to present them: display
//! ids of array tasks and pending array remainders, job states, what `-j` ids select, user
//! and group names, and what Slurm prints for a field left empty; a node's GRES;
//! and the `--iterate` loop of squeue and sinfo (times are `crate::times`').

use crate::opts::{self, OptSpec, Parsed};
use model::JobState;
use model::job_id::{self, JobIdSpec, RecordIds, Selected};
use proto::v1::{JobInfo, JobSpec, NodeInfo, StepInfo};
use std::collections::BTreeMap;
use std::process::ExitCode;

// ---------------------------------------------------------------- -o / -O formats

/// How wide a column is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    /// As wide as the value.
    Natural,
    /// Padded to this many characters.
    Fixed(usize),
    /// sinfo's `#`: as wide as the widest value, at least this many characters.
    Auto(usize),
}

/// One field of a format: which value, how wide, aligned how, and the text after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column<K> {
    pub key: K,
    pub width: Width,
    pub right: bool,
    pub suffix: String,
}

/// A parsed format: literal text, then columns each followed by their suffix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format<K> {
    pub prefix: String,
    pub columns: Vec<Column<K>>,
}

/// A rendered value. `cut` says whether a fixed width truncates it (Slurm leaves node
/// lists and times whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub text: String,
    pub cut: bool,
}

impl Cell {
    /// A value a fixed width truncates.
    pub fn cut(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            cut: true,
        }
    }
    /// A value printed whole even when wider than its column.
    pub fn whole(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            cut: false,
        }
    }
}

/// Parses a `%[.][size]type[suffix]` format. `lookup` maps a type letter to a field;
/// unknown letters are kept as literal text (as Slurm does) and returned so the caller
/// can report them.
pub fn parse_percent<K>(fmt: &str, lookup: impl Fn(char) -> Option<K>) -> (Format<K>, Vec<char>) {
    let (prefix, rest) = match fmt.find('%') {
        Some(i) => (&fmt[..i], &fmt[i..]),
        None => (fmt, ""),
    };
    let mut format = Format {
        prefix: prefix.to_string(),
        columns: Vec::new(),
    };
    let mut invalid = Vec::new();
    // Like strtok: empty tokens ("%%") are skipped.
    for token in rest.split('%').filter(|t| !t.is_empty()) {
        let mut chars = token.chars().peekable();
        let mut right = chars.next_if_eq(&'.').is_some();
        // printf's `-` (left-aligned, the default anyway); Slurm itself would take it
        // for an unknown type letter.
        if chars.next_if_eq(&'-').is_some() {
            right = false;
        }
        let mut width = Width::Natural;
        if chars.next_if_eq(&'#').is_some() {
            width = Width::Auto(0);
        } else {
            let mut n: Option<usize> = None;
            while let Some(d) = chars.next_if(char::is_ascii_digit) {
                let digit = d.to_digit(10).unwrap_or(0) as usize;
                n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(digit));
            }
            if let Some(n) = n.filter(|n| *n > 0) {
                width = Width::Fixed(n);
            }
        }
        let Some(letter) = chars.next() else { continue };
        let suffix: String = chars.collect();
        match lookup(letter) {
            Some(key) => format.columns.push(Column {
                key,
                width,
                right,
                suffix,
            }),
            None => {
                invalid.push(letter);
                let literal = format!("%{token}");
                match format.columns.last_mut() {
                    Some(last) => last.suffix.push_str(&literal),
                    None => format.prefix.push_str(&literal),
                }
            }
        }
    }
    (format, invalid)
}

/// Parses an `-O` list: `Name[:[.][size][suffix]],...`. Names are matched without
/// regard to case; without a size a column is 20 wide, a size of 0 is natural width.
/// Unknown names are skipped and returned.
pub fn parse_long<K>(fmt: &str, lookup: impl Fn(&str) -> Option<K>) -> (Format<K>, Vec<String>) {
    let mut format = Format {
        prefix: String::new(),
        columns: Vec::new(),
    };
    let mut invalid = Vec::new();
    for token in fmt.split(',').filter(|t| !t.is_empty()) {
        let (name, spec) = match token.split_once(':') {
            Some((n, s)) => (n, Some(s)),
            None => (token, None),
        };
        let (width, right, suffix) = match spec {
            None => (Width::Fixed(20), false, String::new()),
            Some(s) => {
                let (right, s) = match s.strip_prefix('.') {
                    Some(r) => (true, r),
                    None => (false, s),
                };
                let digits = s.bytes().take_while(u8::is_ascii_digit).count();
                let n: usize = s[..digits].parse().unwrap_or(0);
                let width = if n == 0 {
                    Width::Natural
                } else {
                    Width::Fixed(n)
                };
                (width, right, s[digits..].to_string())
            }
        };
        match lookup(name.trim()) {
            Some(key) => format.columns.push(Column {
                key,
                width,
                right,
                suffix,
            }),
            None => invalid.push(name.to_string()),
        }
    }
    (format, invalid)
}

/// Pads (and, with `cut`, truncates) a value as Slurm's `_print_str` does, appending it
/// to `out`.
fn pad_into(out: &mut String, text: &str, cut: bool, width: usize, right: bool) {
    if width == 0 {
        out.push_str(text);
        return;
    }
    let len = char_count(text);
    if len >= width {
        match text.char_indices().nth(width) {
            Some((cut_at, _)) if cut => out.push_str(&text[..cut_at]),
            _ => out.push_str(text),
        }
        return;
    }
    let fill = width - len;
    if right {
        push_spaces(out, fill);
        out.push_str(text);
    } else {
        out.push_str(text);
        push_spaces(out, fill);
    }
}

/// Appends `n` spaces.
fn push_spaces(out: &mut String, mut n: usize) {
    const SPACES: &str = "                                ";
    while n > 0 {
        let k = n.min(SPACES.len());
        out.push_str(&SPACES[..k]);
        n -= k;
    }
}

/// Renders `rows` with `fmt`, one line each, after a header line when `header` gives
/// the column titles.
pub fn render<K, R>(
    fmt: &Format<K>,
    rows: &[R],
    header: Option<&dyn Fn(&K) -> Cell>,
    cell: &dyn Fn(&R, &K) -> Cell,
) -> String {
    let ncol = fmt.columns.len();
    let cells: Vec<Cell> = rows
        .iter()
        .flat_map(|r| fmt.columns.iter().map(move |c| cell(r, &c.key)))
        .collect();
    let widths: Vec<usize> = fmt
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| match c.width {
            Width::Natural => 0,
            Width::Fixed(n) => n,
            Width::Auto(min) => cells
                .iter()
                .skip(i)
                .step_by(ncol.max(1))
                .map(|c| c.text.chars().count())
                .max()
                .unwrap_or(0)
                .max(min),
        })
        .collect();
    let line = |out: &mut String, row: &[Cell]| push_line(fmt, &widths, out, row);
    let mut out = String::with_capacity(line_capacity(fmt, &widths) * (rows.len() + 1));
    if let Some(h) = header {
        let titles: Vec<Cell> = fmt.columns.iter().map(|c| h(&c.key)).collect();
        line(&mut out, &titles);
    }
    if ncol == 0 {
        for _ in rows {
            line(&mut out, &[]);
        }
    } else {
        for row in cells.chunks(ncol) {
            line(&mut out, row);
        }
    }
    out
}

/// Appends one line of cells, padded to `widths`.
fn push_line<K>(fmt: &Format<K>, widths: &[usize], out: &mut String, cells: &[Cell]) {
    out.push_str(&fmt.prefix);
    for ((c, w), v) in fmt.columns.iter().zip(widths).zip(cells) {
        pad_into(out, &v.text, v.cut, *w, c.right);
        out.push_str(&c.suffix);
    }
    out.push('\n');
}

/// About how long one line is, to reserve the output at once.
fn line_capacity<K>(fmt: &Format<K>, widths: &[usize]) -> usize {
    fmt.prefix.len()
        + fmt
            .columns
            .iter()
            .zip(widths)
            .map(|(c, w)| w + c.suffix.len() + 4)
            .sum::<usize>()
}

/// Where `render_stream`'s row callback hands a row's cells.
pub type LineSink<'a> = &'a mut dyn FnMut(&[Cell]);

/// `render` for formats without `#` (auto-sized) columns, one row at a time: `row(i,
/// line)` computes row `i`'s cells and hands them to `line`, which appends the line to
/// `out`. No row's cells outlive its line.
pub fn render_stream<K>(
    fmt: &Format<K>,
    count: usize,
    header: Option<&dyn Fn(&K) -> Cell>,
    out: &mut String,
    row: &mut dyn FnMut(usize, LineSink<'_>),
) {
    let widths: Vec<usize> = fmt
        .columns
        .iter()
        .map(|c| match c.width {
            Width::Natural => 0,
            Width::Fixed(n) | Width::Auto(n) => n,
        })
        .collect();
    let line = |out: &mut String, cells: &[Cell]| push_line(fmt, &widths, out, cells);
    out.reserve(line_capacity(fmt, &widths) * (count + 1));
    if let Some(h) = header {
        let titles: Vec<Cell> = fmt.columns.iter().map(|c| h(&c.key)).collect();
        line(out, &titles);
    }
    for i in 0..count {
        row(i, &mut |cells| line(out, cells));
    }
}

// ---------------------------------------------------------------- sacct-style tables

/// sacct's output modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsable {
    /// Aligned columns with a dash line under the header.
    No,
    /// `-p`: every value followed by the delimiter.
    Ending,
    /// `-P`: values separated by the delimiter, none after the last.
    NoEnding,
}

/// A sacct-style column: its title and Slurm's length (negative: left-aligned, 0:
/// natural width).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableField {
    pub name: String,
    pub len: i32,
}

/// Renders a table the way Slurm's `print_fields` does (sacct, and the other accounting
/// commands).
pub fn print_fields(
    fields: &[TableField],
    rows: &[Vec<String>],
    header: bool,
    mode: Parsable,
    delimiter: &str,
) -> String {
    let width = |f: &TableField| f.len.unsigned_abs() as usize;
    let mut out = String::with_capacity(
        (rows.len() + 2) * fields.iter().map(|f| width(f) + 2).sum::<usize>(),
    );
    // Appends one line; `aligned` writes a value in the aligned mode.
    let line = |out: &mut String,
                values: &mut dyn Iterator<Item = (&TableField, &str)>,
                aligned: &dyn Fn(&mut String, &TableField, &str)| {
        let mut first = true;
        for (f, v) in values {
            match mode {
                Parsable::No => {
                    aligned(out, f, v);
                    out.push(' ');
                }
                Parsable::Ending => {
                    out.push_str(v);
                    out.push_str(delimiter);
                }
                Parsable::NoEnding => {
                    if !first {
                        out.push_str(delimiter);
                    }
                    out.push_str(v);
                }
            }
            first = false;
        }
        out.push('\n');
    };
    if header {
        let titles = |out: &mut String, f: &TableField, v: &str| match width(f) {
            0 => out.push_str(v),
            w => pad_into(out, v, true, w, true),
        };
        line(
            &mut out,
            &mut fields.iter().map(|f| (f, f.name.as_str())),
            &titles,
        );
        if mode == Parsable::No {
            let dashes = |out: &mut String, f: &TableField, v: &str| {
                let n = match width(f) {
                    0 => v.chars().count(),
                    w => w,
                };
                out.extend(std::iter::repeat_n('-', n));
            };
            line(
                &mut out,
                &mut fields.iter().map(|f| (f, f.name.as_str())),
                &dashes,
            );
        }
    }
    let cell = |out: &mut String, f: &TableField, v: &str| sacct_cell(out, v, f.len);
    for row in rows {
        line(
            &mut out,
            &mut fields.iter().zip(row.iter().map(String::as_str)),
            &cell,
        );
    }
    out
}

/// One aligned sacct value: one longer than its column is cut to end in `+`, a shorter
/// one padded.
fn sacct_cell(out: &mut String, value: &str, len: i32) {
    let w = len.unsigned_abs() as usize;
    if w > 0 && char_count(value) > w {
        out.extend(value.chars().take(w - 1));
        out.push('+');
    } else {
        pad_into(out, value, false, w, len > 0);
    }
}

/// How many characters a text has (its length, for ASCII).
fn char_count(text: &str) -> usize {
    if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    }
}

// ---------------------------------------------------------------- command lines

/// Rewrites `--prefix` arguments that are ambiguous only between names of one option
/// (`--part` for `--partition`/`--partitions`) to that option's name, as getopt_long
/// accepts them. `aliases` maps alternative long names to the one the command reads.
fn resolve_aliases(
    args: &[String],
    specs: &[OptSpec],
    aliases: &[(&str, &'static str)],
) -> Vec<String> {
    let canonical = |long: &'static str| -> &'static str {
        aliases
            .iter()
            .find(|(from, _)| *from == long)
            .map(|(_, to)| *to)
            .unwrap_or(long)
    };
    let mut out = Vec::with_capacity(args.len());
    let mut rest = false;
    for arg in args {
        if rest || arg == "--" {
            rest = true;
            out.push(arg.clone());
            continue;
        }
        let Some(body) = arg.strip_prefix("--") else {
            out.push(arg.clone());
            continue;
        };
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        let candidates: Vec<&'static str> = specs
            .iter()
            .filter(|s| s.long.starts_with(name) && !name.is_empty())
            .map(|s| canonical(s.long))
            .collect();
        let exact = specs.iter().any(|s| s.long == name);
        match candidates.split_first() {
            Some((first, more))
                if !exact && !more.is_empty() && more.iter().all(|c| c == first) =>
            {
                out.push(match value {
                    Some(v) => format!("--{first}={v}"),
                    None => format!("--{first}"),
                });
            }
            _ => out.push(arg.clone()),
        }
    }
    out
}

/// Renames alternative long names in parsed options to the one the command reads.
fn apply_aliases(parsed: &mut Parsed, aliases: &[(&str, &'static str)]) {
    for (k, _) in parsed.opts.iter_mut() {
        if let Some(&(_, to)) = aliases.iter().find(|(from, _)| from == k) {
            *k = to;
        }
    }
}

/// Parses a read command's arguments: long-name aliases folded as `aliases` says, then
/// the early exits every one of them has (`--help`, `--usage`, `--version`, checked in
/// that order).
pub fn parse_command_line(
    command: &str,
    args: &[String],
    specs: &[OptSpec],
    aliases: &[(&str, &'static str)],
    help: &str,
    usage: &str,
) -> Result<Parsed, Early> {
    let args = resolve_aliases(args, specs, aliases);
    let mut p =
        opts::parse(specs, &args, false).map_err(|e| Early::usage(command, &e.to_string()))?;
    apply_aliases(&mut p, aliases);
    match Info::asked(&p) {
        Some(info) => Err(Early::info(info.text(help, usage))),
        None => Ok(p),
    }
}

/// A comma-separated list without blanks and empty items.
pub fn split_list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// `-i/--iterate=seconds`: a positive count of seconds, if given.
pub fn iterate_option(command: &str, p: &Parsed) -> Result<Option<u64>, Early> {
    p.get("iterate")
        .map(|v| {
            v.parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| Early::error(command, &format!("--iterate={v}")))
        })
        .transpose()
}

/// An environment variable that is set and not empty (how the read commands take
/// `SQUEUE_FORMAT` and friends).
pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

// ---------------------------------------------------------------- early exits

/// What a command prints and returns when it stops before doing its work: help,
/// version, or an error in its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Early {
    pub code: u8,
    pub stdout: String,
    pub stderr: String,
}

impl Early {
    /// Text for stdout, exit status 0 (`--help`, `--version`).
    pub fn info(text: impl Into<String>) -> Early {
        Early {
            code: 0,
            stdout: text.into(),
            stderr: String::new(),
        }
    }

    /// A bad option, reported as getopt does, then Slurm's hint; exit status 1.
    pub fn usage(command: &str, message: &str) -> Early {
        Early {
            code: 1,
            stdout: String::new(),
            stderr: format!(
                "{command}: {message}\nTry \"{command} --help\" for more information\n"
            ),
        }
    }

    /// `command: error: message`; exit status 1.
    pub fn error(command: &str, message: &str) -> Early {
        Early {
            code: 1,
            stdout: String::new(),
            stderr: format!("{command}: error: {message}\n"),
        }
    }

    /// Prints the texts and gives the exit status.
    pub fn finish(self) -> ExitCode {
        print!("{}", self.stdout);
        eprint!("{}", self.stderr);
        ExitCode::from(self.code)
    }
}

/// Runs a command-line parser that reports bad format letters as warnings: an early exit
/// is printed and its status given back; otherwise the warnings are printed on stderr.
pub fn parse_printing_warnings<T>(
    parse: impl FnOnce(&mut Vec<String>) -> Result<T, Early>,
) -> Result<T, ExitCode> {
    let mut warnings = Vec::new();
    let parsed = parse(&mut warnings).map_err(Early::finish)?;
    for w in &warnings {
        eprintln!("{w}");
    }
    Ok(parsed)
}

/// The version line every command prints for `-V/--version`: the Slurm release whose
/// interface Drover follows.
pub const VERSION_LINE: &str = "slurm 22.05.8\n";

/// What `--help`, `--usage` or `--version` asks a command to print instead of working.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Info {
    Help,
    Usage,
    Version,
}

impl Info {
    /// The first of `--help`, `--usage` and `--version` (in that order) on the command
    /// line.
    pub fn asked(p: &Parsed) -> Option<Info> {
        [
            ("help", Info::Help),
            ("usage", Info::Usage),
            ("version", Info::Version),
        ]
        .into_iter()
        .find_map(|(name, info)| p.has(name).then_some(info))
    }

    /// The command's text for it.
    pub fn text<'a>(self, help: &'a str, usage: &'a str) -> &'a str {
        match self {
            Info::Help => help,
            Info::Usage => usage,
            Info::Version => VERSION_LINE,
        }
    }

    /// Prints the text on stdout; exit status 0.
    pub fn print(self, help: &str, usage: &str) -> ExitCode {
        print!("{}", self.text(help, usage));
        ExitCode::SUCCESS
    }
}

// ---------------------------------------------------------------- jobs

static EMPTY_SPEC: std::sync::LazyLock<JobSpec> = std::sync::LazyLock::new(JobSpec::default);

/// The job's spec, or an empty one.
pub fn spec(job: &JobInfo) -> &JobSpec {
    job.spec.as_ref().unwrap_or(&EMPTY_SPEC)
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

/// True when the hostlist `nodes` (a job's or step's) names one of `wanted`.
pub fn on_any_node(wanted: &[String], nodes: &str) -> bool {
    model::hostlist::expand(nodes)
        .unwrap_or_default()
        .iter()
        .any(|n| wanted.contains(n))
}

/// The pending tasks of an array remainder without brackets: `3-9%2`.
pub fn task_str(job: &JobInfo) -> &str {
    let s = job.array_task_str.as_str();
    s.strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or(s)
}

/// `12`, `12_3`, or `12_[3-9%2]` for a pending array remainder.
pub fn display_id(job: &JobInfo) -> String {
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

/// Resolved user and group names, looked up once by the command so rendering stays
/// pure. Missing entries print as the number.
#[derive(Debug, Clone, Default)]
pub struct Names {
    pub users: BTreeMap<u32, String>,
    pub groups: BTreeMap<u32, String>,
}

impl Names {
    pub fn user(&self, uid: u32) -> String {
        self.users
            .get(&uid)
            .cloned()
            .unwrap_or_else(|| uid.to_string())
    }
    pub fn group(&self, gid: u32) -> String {
        self.groups
            .get(&gid)
            .cloned()
            .unwrap_or_else(|| gid.to_string())
    }

    /// Looks up the names of these ids on this machine.
    pub fn resolve(
        uids: impl IntoIterator<Item = u32>,
        gids: impl IntoIterator<Item = u32>,
    ) -> Names {
        let mut names = Names::default();
        for uid in uids {
            if let std::collections::btree_map::Entry::Vacant(e) = names.users.entry(uid)
                && let Some(name) = lookup_user(uid)
            {
                e.insert(name);
            }
        }
        for gid in gids {
            if let std::collections::btree_map::Entry::Vacant(e) = names.groups.entry(gid)
                && let Some(name) = lookup_group(gid)
            {
                e.insert(name);
            }
        }
        names
    }

    /// The job's user: the name it was submitted under, else its uid's.
    pub fn job_user(&self, job: &JobInfo) -> String {
        let s = spec(job);
        if s.user.is_empty() {
            self.user(s.uid)
        } else {
            s.user.clone()
        }
    }
}

/// The name of a user id on this machine.
pub fn lookup_user(uid: u32) -> Option<String> {
    nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map(|u| u.name)
}

/// The name of a group id on this machine.
pub fn lookup_group(gid: u32) -> Option<String> {
    nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
        .ok()
        .flatten()
        .map(|g| g.name)
}

/// What rendering needs besides the records: the clock, the names of the ids in them,
/// and the cluster's name.
#[derive(Debug, Clone, Default)]
pub struct Ctx {
    pub now: i64,
    pub names: Names,
    pub cluster: String,
}

/// A user given by name or number, as both forms: `root` → `["root", "0"]`.
pub fn user_forms(user: &str) -> Vec<String> {
    let mut out = vec![user.to_string()];
    if let Ok(uid) = user.parse::<u32>() {
        if let Some(name) = lookup_user(uid) {
            out.push(name);
        }
    } else if let Ok(Some(u)) = nix::unistd::User::from_name(user) {
        out.push(u.uid.as_raw().to_string());
    }
    out
}

/// True when the job belongs to one of `users` (names or uids).
pub fn user_matches(users: &[String], job: &JobInfo) -> bool {
    let s = spec(job);
    users
        .iter()
        .any(|u| *u == s.user || *u == s.uid.to_string())
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

/// A TRES string as sacct and squeue print it, by name:
/// `billing=4,cpu=4,gres/gpu=1,mem=16G,node=1`.
pub fn tres_string(cpus: u32, mem_mb: u64, nodes: u32, gpus: u32) -> String {
    model::tres::format_counts_by_name(&job_tres(cpus, mem_mb, nodes, gpus))
}

/// An exit code in Slurm's JSON shape: `{"status": ["SUCCESS"], "return_code": 0, ...}`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ExitJson {
    status: [&'static str; 1],
    return_code: i32,
    signal: SignalJson,
}

#[derive(Debug, Clone, serde::Serialize)]
struct SignalJson {
    id: i32,
}

impl ExitJson {
    /// `done`: the job or step has ended (else the status is `PENDING`).
    pub fn new(code: i32, signal: i32, done: bool) -> ExitJson {
        let status = if !done {
            "PENDING"
        } else if signal != 0 {
            "SIGNALED"
        } else if code != 0 {
            "ERROR"
        } else {
            "SUCCESS"
        };
        ExitJson {
            status: [status],
            return_code: code,
            signal: SignalJson { id: signal },
        }
    }
}

/// A JSON document as Slurm's `--json` prints it: `{"errors": [], KEY: ITEMS,
/// "warnings": []}`, pretty-printed, with a final newline.
pub fn json_doc<T: serde::Serialize>(key: &str, items: &T) -> String {
    let mut buf = Vec::with_capacity(1 << 16);
    let mut ser = serde_json::Serializer::pretty(&mut buf);
    let result = {
        use serde::ser::{SerializeMap, Serializer};
        (&mut ser).serialize_map(Some(3)).and_then(|mut m| {
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

// ---------------------------------------------------------------- nodes

/// A node's state from its wire parts. Replies are checked with `check_node_states`
/// when they arrive, so an unknown number cannot reach here; were one to, the node
/// would read as UNKNOWN.
pub fn node_state(n: &NodeInfo) -> model::NodeState {
    proto::convert::node_state_from_wire(n).unwrap_or(model::NodeState {
        health: model::NodeHealth::Unknown,
        drain: n.drain,
        responding: n.responding,
        alloc: model::NodeAlloc::Idle,
    })
}

/// Refuses a reply with a node state this command does not know (a newer controller).
pub fn check_node_states(command: &str, nodes: &[NodeInfo]) -> Result<(), Early> {
    for n in nodes {
        proto::convert::node_state_from_wire(n)
            .map_err(|e| Early::error(command, &e.to_string()))?;
    }
    Ok(())
}

/// A node's sockets, cores per socket and threads per core: its CPUs as sockets of one
/// core of one thread, as Slurm counts a node configured with CPUs alone. sinfo's
/// S:C:T and `scontrol show node` both read it.
pub fn socket_core_thread(n: &NodeInfo) -> (u32, u32, u32) {
    (n.cpus.max(1), 1, 1)
}

/// A node's GPUs as Slurm's GRES: `gpu:h100:4`, `gpu:4`, `(null)` for a node without
/// any; `count` is how many to show (all of them, or those in use).
pub fn gres(n: &NodeInfo, count: u32) -> String {
    if n.gpus == 0 {
        return "(null)".into();
    }
    match n.gpu_type.as_str() {
        "" => format!("gpu:{count}"),
        t => format!("gpu:{t}:{count}"),
    }
}

// ---------------------------------------------------------------- listings

/// Prints one listing of `squeue`/`sinfo`. With `-i/--iterate` a date line comes first
/// (unless `-l` put one in the text, or headers are off), and a blank line and the pause
/// after it; the answer says whether another round follows.
pub fn print_round(iterate: Option<u64>, long: bool, noheader: bool, now: i64, text: &str) -> bool {
    if iterate.is_some() && !long && !noheader {
        println!("{}", crate::times::ctime_line(now));
    }
    print!("{text}");
    match iterate {
        Some(secs) => {
            println!();
            std::thread::sleep(std::time::Duration::from_secs(secs));
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum F {
        Id,
        Name,
        State,
    }

    fn letters(c: char) -> Option<F> {
        match c {
            'i' => Some(F::Id),
            'j' => Some(F::Name),
            'T' => Some(F::State),
            _ => None,
        }
    }

    fn names(n: &str) -> Option<F> {
        match n.to_ascii_lowercase().as_str() {
            "jobid" => Some(F::Id),
            "name" => Some(F::Name),
            "state" => Some(F::State),
            _ => None,
        }
    }

    fn table(fmt: &Format<F>, rows: &[(&str, &str, &str)]) -> String {
        let head = |k: &F| {
            Cell::cut(match k {
                F::Id => "JOBID",
                F::Name => "NAME",
                F::State => "STATE",
            })
        };
        render(
            fmt,
            rows,
            Some(&head),
            &|r: &(&str, &str, &str), k: &F| match k {
                F::Id => Cell::cut(r.0),
                F::Name => Cell::cut(r.1),
                F::State => Cell::whole(r.2),
            },
        )
    }

    #[test]
    fn percent_specifiers_pad_align_truncate_and_keep_literals() {
        let (fmt, bad) = parse_percent("%.6i %4j|%T", letters);
        assert!(bad.is_empty());
        assert_eq!(fmt.columns.len(), 3);
        // `%-4j` is `%4j`: left-aligned.
        let (fmt2, bad2) = parse_percent("%-4j", letters);
        assert!(bad2.is_empty());
        assert_eq!(fmt2.columns[0].width, Width::Fixed(4));
        assert!(!fmt2.columns[0].right);
        let (fmt, _) = parse_percent("x%.6i %4j|%T", letters);
        let out = table(
            &fmt,
            &[
                ("12", "verylongname", "RUNNING"),
                ("1234567", "ab", "PENDING"),
            ],
        );
        assert_eq!(
            out,
            "x JOBID NAME|STATE\nx    12 very|RUNNING\nx123456 ab  |PENDING\n"
        );
    }

    #[test]
    fn natural_width_and_invalid_letters() {
        let (fmt, bad) = parse_percent("%i|%T %Q", letters);
        assert_eq!(bad, vec!['Q']);
        let out = table(&fmt, &[("5", "n", "COMPLETED")]);
        assert_eq!(out, "JOBID|STATE %Q\n5|COMPLETED %Q\n");
        let (fmt, _) = parse_percent("no fields", letters);
        assert_eq!(table(&fmt, &[("1", "a", "R")]), "no fields\nno fields\n");
    }

    #[test]
    fn auto_width_fits_widest_value() {
        let (mut fmt, _) = parse_percent("%#j %T", letters);
        if let Width::Auto(min) = &mut fmt.columns[0].width {
            *min = 3;
        }
        let out = table(&fmt, &[("1", "ab", "R"), ("2", "abcdef", "PD")]);
        assert_eq!(out, "NAME   STATE\nab     R\nabcdef PD\n");
    }

    #[test]
    fn long_format_fields() {
        let (fmt, bad) = parse_long("JobID:6,name:.5,State,bogus", names);
        assert_eq!(bad, vec!["bogus".to_string()]);
        assert_eq!(fmt.columns[0].width, Width::Fixed(6));
        assert!(fmt.columns[1].right);
        assert_eq!(fmt.columns[2].width, Width::Fixed(20));
        let out = table(&fmt, &[("42", "abcdefgh", "RUNNING")]);
        let want = format!(
            "JOBID  NAMESTATE{}\n42    abcdeRUNNING{}\n",
            " ".repeat(15),
            " ".repeat(13)
        );
        assert_eq!(out, want);
        let (fmt, _) = parse_long("jobid:|,state:0", names);
        assert_eq!(fmt.columns[0].suffix, "|");
        assert_eq!(
            table(&fmt, &[("7", "x", "PENDING")]).lines().nth(1),
            Some("7|PENDING")
        );
    }

    fn pad(cell: &Cell, width: usize, right: bool) -> String {
        let mut out = String::new();
        pad_into(&mut out, &cell.text, cell.cut, width, right);
        out
    }

    #[test]
    fn pad_rules() {
        assert_eq!(pad(&Cell::cut("abc"), 5, true), "  abc");
        assert_eq!(pad(&Cell::cut("abc"), 5, false), "abc  ");
        assert_eq!(pad(&Cell::cut("abcdef"), 4, true), "abcd");
        assert_eq!(pad(&Cell::whole("abcdef"), 4, true), "abcdef");
        assert_eq!(pad(&Cell::cut("abc"), 0, true), "abc");
    }

    fn fields(spec: &[(&str, i32)]) -> Vec<TableField> {
        spec.iter()
            .map(|(n, l)| TableField {
                name: n.to_string(),
                len: *l,
            })
            .collect()
    }

    #[test]
    fn sacct_tables() {
        let f = fields(&[("JobID", -12), ("JobName", 10), ("State", 10)]);
        let rows = vec![vec![
            "7".to_string(),
            "verylongname".to_string(),
            "COMPLETED".to_string(),
        ]];
        let out = print_fields(&f, &rows, true, Parsable::No, "|");
        assert_eq!(
            out,
            "       JobID    JobName      State \n\
             ------------ ---------- ---------- \n\
             7            verylongn+  COMPLETED \n"
        );
        assert_eq!(
            print_fields(&f, &rows, true, Parsable::NoEnding, "|"),
            "JobID|JobName|State\n7|verylongname|COMPLETED\n"
        );
        assert_eq!(
            print_fields(&f, &rows, false, Parsable::Ending, "|"),
            "7|verylongname|COMPLETED|\n"
        );
        let f = fields(&[("NodeList", -20)]);
        let rows = vec![vec!["node1".to_string()]];
        assert_eq!(
            print_fields(&f, &rows, false, Parsable::No, "|"),
            format!("node1{} \n", " ".repeat(15))
        );
    }

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
    fn sacct_cells_cut_and_pad() {
        let f = fields(&[("A", 5), ("B", -5), ("C", 0), ("D", 5)]);
        let row = |a: &str, b: &str| {
            vec![vec![
                a.to_string(),
                b.to_string(),
                "xyz".to_string(),
                "ééééééé".to_string(),
            ]]
        };
        assert_eq!(
            print_fields(&f, &row("abcde", "ab"), false, Parsable::No, "|"),
            "abcde ab    xyz éééé+ \n"
        );
        assert_eq!(
            print_fields(&f, &row("abcdefg", "abcdefg"), false, Parsable::No, "|"),
            "abcd+ abcd+ xyz éééé+ \n"
        );
        assert_eq!(
            print_fields(&f, &row("a", "a"), true, Parsable::No, "|"),
            "    A     B C     D \n----- ----- - ----- \n    a a     xyz éééé+ \n"
        );
    }

    #[test]
    fn command_line_early_exits() {
        let specs = [
            opts::flag("help", None),
            opts::flag("usage", None),
            opts::flag("version", Some('V')),
            opts::value("partition", Some('p')),
            opts::value("partitions", None),
            opts::value("iterate", Some('i')),
        ];
        let aliases = [("partitions", "partition")];
        let parse = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            parse_command_line("cmd", &args, &specs, &aliases, "HELP\n", "USAGE\n")
        };
        assert_eq!(parse(&["-V", "--usage"]).unwrap_err().stdout, "USAGE\n");
        assert_eq!(parse(&["-V", "--help"]).unwrap_err().stdout, "HELP\n");
        assert_eq!(parse(&["-V"]).unwrap_err().stdout, VERSION_LINE);
        let e = parse(&["--bogus"]).unwrap_err();
        assert_eq!(
            (e.code, e.stderr.as_str()),
            (
                1,
                "cmd: unrecognized option '--bogus'\nTry \"cmd --help\" for more information\n"
            )
        );
        // `--part` is a prefix of two names of one option.
        let p = parse(&["--part=a", "--partitions", "b"]).unwrap();
        assert_eq!(p.all("partition"), ["a", "b"]);
        assert_eq!(iterate_option("cmd", &p).unwrap(), None);
        let p = parse(&["-i", "5"]).unwrap();
        assert_eq!(iterate_option("cmd", &p).unwrap(), Some(5));
        let p = parse(&["-i", "0"]).unwrap();
        assert_eq!(
            iterate_option("cmd", &p).unwrap_err().stderr,
            "cmd: error: --iterate=0\n"
        );
        assert_eq!(split_list(" a, ,b,"), ["a", "b"]);
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
        let wanted = ["n2".to_string()];
        assert!(on_any_node(&wanted, "n[1-3]"));
        assert!(!on_any_node(&wanted, "n[3-4]"));
        assert!(!on_any_node(&wanted, "n[bad"));
    }

    #[test]
    fn node_gres() {
        let n = |gpus, ty: &str| NodeInfo {
            gpus,
            gpu_type: ty.into(),
            ..Default::default()
        };
        assert_eq!(gres(&n(0, "h100"), 0), "(null)");
        assert_eq!(gres(&n(4, ""), 2), "gpu:2");
        assert_eq!(gres(&n(4, "h100"), 4), "gpu:h100:4");
        let newer = NodeInfo {
            name: "n1".into(),
            allocation: 9,
            ..Default::default()
        };
        assert_eq!(
            check_node_states("sinfo", &[newer]).unwrap_err().stderr,
            "sinfo: error: node n1: unknown allocation 9 from the controller\n"
        );
    }
}
