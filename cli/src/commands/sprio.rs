//! `sprio`: the factors that make up pending jobs' priorities, as Slurm's sprio prints
//! them.
//!
//! The controller sends each pending job's normalized factors and the configured
//! weights (`GetPriorities`); this command weighs them (`%A` = age × weight, rounded
//! like `%.0f`), or shows them normalized (`-n`, `%a`: `%.7f`), and prints the columns
//! of the factors whose weight is not 0. Rendering (`render`) is pure and unit-tested.
//!
//! ```text
//! sprio            →            JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE
//!                                  12 gpu            10500          0        500      10000
//! sprio -w         →          Weights                                1       1000      10000
//! ```

use crate::args;
use crate::calls;
use crate::client;
use crate::exit::Exit;
use crate::format::{self, Cell, Format};
use crate::opts::{OptSpec, flag, optional, value};
use proto::v1::{GetPrioritiesReply, GetPrioritiesRequest, PriorityFactors, PriorityWeights};
use std::process::ExitCode;

const SPECS: &[OptSpec] = &[
    value("clusters", Some('M')),
    value("cluster", None),
    flag("federation", None),
    flag("help", None),
    optional("jobs", Some('j')),
    flag("local", None),
    flag("long", Some('l')),
    flag("noheader", Some('h')),
    flag("norm", Some('n')),
    value("format", Some('o')),
    value("partition", Some('p')),
    flag("sibling", None),
    value("sort", Some('S')),
    flag("usage", None),
    value("user", Some('u')),
    value("users", None),
    flag("verbose", Some('v')),
    flag("version", Some('V')),
    flag("weights", Some('w')),
];

const ALIASES: &[(&str, &str)] = &[("cluster", "clusters"), ("users", "user")];

/// A column of `sprio -o`: its letter, header, and value on a job's line and on the
/// `-w` line of weights. A new column is one entry of [`FIELDS`].
pub struct FieldDef {
    pub letter: char,
    pub header: &'static str,
    job: fn(&PriorityFactors, &PriorityWeights, &str) -> String,
    weights: fn(&PriorityWeights, &str) -> String,
}

impl std::fmt::Debug for FieldDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "%{}", self.letter)
    }
}

impl PartialEq for FieldDef {
    fn eq(&self, other: &FieldDef) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for FieldDef {}

/// An sprio column.
pub type Field = &'static FieldDef;

/// The column of a `-o` letter.
pub fn field_letter(c: char) -> Option<Field> {
    FIELDS.iter().find(|f| f.letter == c)
}

/// Nothing on the weights line.
fn no_weight(_: &PriorityWeights, _: &str) -> String {
    String::new()
}

const fn field(
    letter: char,
    header: &'static str,
    job: fn(&PriorityFactors, &PriorityWeights, &str) -> String,
    weights: fn(&PriorityWeights, &str) -> String,
) -> FieldDef {
    FieldDef {
        letter,
        header,
        job,
        weights,
    }
}

/// The TRES factors of a job: weighted (`%T`) or as they are (`%t`).
fn tres_factors(job: &PriorityFactors, w: &PriorityWeights, weighted: bool) -> String {
    job.tres
        .iter()
        .filter(|t| t.value > 0.0)
        .map(|t| {
            if weighted {
                format!("{}={:.0}", t.name, t.value * tres_weight(w, &t.name))
            } else {
                format!("{}={:.2}", t.name, t.value)
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Every column of sprio.
pub static FIELDS: &[FieldDef] = &[
    field(
        'a',
        "AGE",
        |j, w, _| norm(j.age, w.age),
        |w, _| w.age.to_string(),
    ),
    field(
        'A',
        "AGE",
        |j, w, _| weighted(j.age, w.age),
        |w, _| w.age.to_string(),
    ),
    field(
        'b',
        "ASSOC",
        |j, w, _| norm(j.assoc, w.assoc),
        |w, _| w.assoc.to_string(),
    ),
    field(
        'B',
        "ASSOC",
        |j, w, _| weighted(j.assoc, w.assoc),
        |w, _| w.assoc.to_string(),
    ),
    field(
        'c',
        "CLUSTER",
        |_, _, c| c.to_string(),
        |_, c| c.to_string(),
    ),
    field(
        'f',
        "FAIRSHARE",
        |j, w, _| norm(j.fairshare, w.fairshare),
        |w, _| w.fairshare.to_string(),
    ),
    field(
        'F',
        "FAIRSHARE",
        |j, w, _| weighted(j.fairshare, w.fairshare),
        |w, _| w.fairshare.to_string(),
    ),
    field(
        'i',
        "JOBID",
        |j, _, _| j.job_id.to_string(),
        |_, _| "Weights".into(),
    ),
    field(
        'j',
        "JOBSIZE",
        |j, w, _| norm(j.job_size, w.job_size),
        |w, _| w.job_size.to_string(),
    ),
    field(
        'J',
        "JOBSIZE",
        |j, w, _| weighted(j.job_size, w.job_size),
        |w, _| w.job_size.to_string(),
    ),
    field('n', "QOSNAME", |j, _, _| j.qos.clone(), no_weight),
    field('N', "NICE", |j, _, _| j.nice.to_string(), no_weight),
    field('o', "ACCOUNT", |j, _, _| j.account.clone(), no_weight),
    field(
        'p',
        "PARTITION",
        |j, w, _| norm(j.partition_factor, w.partition),
        |w, _| w.partition.to_string(),
    ),
    field(
        'P',
        "PARTITION",
        |j, w, _| weighted(j.partition_factor, w.partition),
        |w, _| w.partition.to_string(),
    ),
    field(
        'q',
        "QOS",
        |j, w, _| norm(j.qos_factor, w.qos),
        |w, _| w.qos.to_string(),
    ),
    field(
        'Q',
        "QOS",
        |j, w, _| weighted(j.qos_factor, w.qos),
        |w, _| w.qos.to_string(),
    ),
    field('r', "PARTITION", |j, _, _| j.partition.clone(), no_weight),
    field('S', "SITE", |j, _, _| j.site.to_string(), |_, _| "1".into()),
    field(
        't',
        "TRES",
        |j, w, _| tres_factors(j, w, false),
        |w, _| w.tres.clone(),
    ),
    field(
        'T',
        "TRES",
        |j, w, _| tres_factors(j, w, true),
        |w, _| w.tres.clone(),
    ),
    field('u', "USER", |j, _, _| j.user.clone(), no_weight),
    field('Y', "PRIORITY", |j, _, _| j.priority.to_string(), no_weight),
    field(
        'y',
        "PRIORITY",
        |j, _, _| format!("{:16.14}", f64::from(j.priority) / f64::from(u32::MAX)),
        no_weight,
    ),
];

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    pub noheader: bool,
    /// `-j`: these job ids only.
    pub jobs: Option<Vec<u32>>,
    pub long: bool,
    pub norm: bool,
    pub format: Option<String>,
    pub partitions: Vec<String>,
    pub sort: Option<String>,
    pub users: Vec<String>,
    pub weights: bool,
    /// `-v`: the options as Slurm 22.05's sprio prints them first (`_print_options`).
    pub verbose_dump: Option<String>,
}

pub fn parse_args(args: &[String]) -> Result<Options, Exit> {
    let p = args::parse_command_line("sprio", args, SPECS, ALIASES, HELP, USAGE)?;
    let mut positional = p.positional.clone().into_iter();
    let jobs_text = if p.has("jobs") {
        let v = p.all("jobs").into_iter().rfind(|v| !v.is_empty());
        Some(
            v.map(String::from)
                .or_else(|| positional.next())
                .unwrap_or_default(),
        )
    } else {
        None
    };
    if let Some(extra) = positional.next() {
        return Err(Exit::usage(
            "sprio",
            format!("error: Unrecognized option: {extra}"),
        ));
    }
    let jobs = match &jobs_text {
        None => None,
        Some(text) => {
            let mut ids = Vec::new();
            for id in args::split_list(text) {
                match id.parse::<u32>() {
                    Ok(n) if n > 0 => ids.push(n),
                    _ => return Err(Exit::error("sprio", format!("Invalid job id: {id}"))),
                }
            }
            // `-j` without a list means every job.
            (!ids.is_empty()).then_some(ids)
        }
    };
    if let Some(sort) = p.get("sort")
        && let Some(bad) = sort
            .chars()
            .find(|c| !matches!(c, ',' | '-' | '+') && !"cinNoruaAfFjJpPqQtTyY".contains(*c))
    {
        return Err(Exit::error(
            "sprio",
            format!("Invalid sort specification: {bad}"),
        ));
    }
    let verbose_dump = p.has("verbose").then(|| {
        let given = |v: Option<String>| v.unwrap_or_else(|| "(null)".to_string());
        let joined = |name: &str| {
            let all = p.all(name);
            (!all.is_empty()).then(|| all.join(","))
        };
        let lines = [
            ("format", given(p.get("format").map(String::from))),
            (
                "job_flag",
                u8::from(jobs.is_some() || p.has("jobs")).to_string(),
            ),
            ("jobs", given(jobs_text.clone().filter(|t| !t.is_empty()))),
            ("partition", given(joined("partition"))),
            ("users", given(joined("user"))),
            ("verbose", p.all("verbose").len().to_string()),
        ];
        crate::format::option_dump(&lines) + "\n"
    });
    Ok(Options {
        verbose_dump,
        noheader: p.has("noheader"),
        jobs,
        long: p.has("long"),
        norm: p.has("norm"),
        format: p.get("format").map(String::from),
        partitions: p
            .all("partition")
            .into_iter()
            .flat_map(args::split_list)
            .collect(),
        sort: p.get("sort").map(String::from),
        users: p
            .all("user")
            .into_iter()
            .flat_map(args::split_list)
            .collect(),
        weights: p.has("weights"),
    })
}

pub fn request(opts: &Options) -> GetPrioritiesRequest {
    GetPrioritiesRequest {
        job_ids: opts.jobs.clone().unwrap_or_default(),
        users: opts.users.clone(),
        partitions: opts.partitions.clone(),
    }
}

/// Slurm's default format for the options and the configured weights: only factors
/// with a weight get a column (all of them with `-l`).
pub fn default_format(opts: &Options, w: &PriorityWeights) -> String {
    if opts.long {
        return if opts.norm {
            "%.15i %9r %.8u %10y %10a %10b %10f %10j %10p %10q %20t".into()
        } else {
            "%.15i %9r %.8u %.10Y %.10S %.10A %.10B %.10F %.10J %.10P %.10Q %.11N %.20T".into()
        };
    }
    let mut f = String::from("%.15i %9r");
    if !opts.users.is_empty() {
        f.push_str(" %.8u");
    }
    let columns = [
        (w.age, 'a'),
        (w.assoc, 'b'),
        (w.fairshare, 'f'),
        (w.job_size, 'j'),
        (w.partition, 'p'),
        (w.qos, 'q'),
    ];
    if opts.norm {
        f.push_str(" %10y");
        for (weight, letter) in columns {
            if weight > 0 {
                f.push_str(&format!(" %10{letter}"));
            }
        }
        if !w.tres.is_empty() {
            f.push_str(" %20t");
        }
    } else {
        f.push_str(" %.10Y %.10S");
        for (weight, letter) in columns {
            if weight > 0 {
                f.push_str(&format!(" %.10{}", letter.to_ascii_uppercase()));
            }
        }
        if !w.tres.is_empty() {
            f.push_str(" %.20T");
        }
    }
    f
}

/// A line of output: a job, or the weights (`-w`).
enum Row<'a> {
    Job(&'a PriorityFactors),
    Weights,
}

fn weighted(factor: f64, weight: u32) -> String {
    format!("{:.0}", factor * f64::from(weight))
}

fn norm(factor: f64, weight: u32) -> String {
    // Slurm prints the weighted value over the weight: 0 when the weight is 0.
    let v = if weight > 0 { factor } else { 0.0 };
    format!("{v:.7}")
}

fn tres_weight(w: &PriorityWeights, name: &str) -> f64 {
    w.tres_weights
        .iter()
        .find(|t| t.name == name)
        .map(|t| t.value)
        .unwrap_or(0.0)
}

fn cell(row: &Row, field: Field, w: &PriorityWeights, cluster: &str) -> Cell {
    Cell::cut(match row {
        Row::Weights => (field.weights)(w, cluster),
        Row::Job(j) => (field.job)(j, w, cluster),
    })
}

/// Sorts the jobs by `-S` (default: job id), keys applied last to first as Slurm does.
fn sort(jobs: &mut [&PriorityFactors], spec: &str, w: &PriorityWeights) {
    let chars: Vec<char> = spec.chars().collect();
    for i in (0..chars.len()).rev() {
        let c = chars[i];
        if matches!(c, ',' | '-' | '+') {
            continue;
        }
        let descend = i > 0 && chars[i - 1] == '-';
        let key = |j: &PriorityFactors| -> f64 {
            match c {
                'a' | 'A' => j.age * f64::from(w.age),
                'f' | 'F' => j.fairshare * f64::from(w.fairshare),
                'j' | 'J' => j.job_size * f64::from(w.job_size),
                'p' | 'P' => j.partition_factor * f64::from(w.partition),
                'q' | 'Q' => j.qos_factor * f64::from(w.qos),
                't' | 'T' => j
                    .tres
                    .iter()
                    .map(|t| t.value * tres_weight(w, &t.name))
                    .sum(),
                'y' | 'Y' => f64::from(j.priority),
                'N' => j.nice as f64,
                _ => f64::from(j.job_id),
            }
        };
        jobs.sort_by(|a, b| {
            let o = match c {
                'u' => a.user.cmp(&b.user),
                'o' => a.account.cmp(&b.account),
                'n' => a.qos.cmp(&b.qos),
                'r' => a.partition.cmp(&b.partition),
                'c' => std::cmp::Ordering::Equal,
                _ => key(a).total_cmp(&key(b)),
            };
            if descend { o.reverse() } else { o }
        });
    }
}

/// The text sprio prints for a reply.
pub fn render(opts: &Options, reply: &GetPrioritiesReply, cluster: &str) -> String {
    let w = reply.weights.clone().unwrap_or_default();
    let fmt_text = opts
        .format
        .clone()
        .unwrap_or_else(|| default_format(opts, &w));
    let (fmt, _invalid): (Format<Field>, _) = format::parse_percent(&fmt_text, field_letter);
    let header = |f: &Field| Cell::cut(f.header);
    let header: Option<&dyn Fn(&Field) -> Cell> = (!opts.noheader).then_some(&header);
    if opts.weights {
        return format::render(&fmt, &[Row::Weights], header, &|r, f| {
            cell(r, f, &w, cluster)
        });
    }
    if opts.jobs.is_some() && reply.jobs.is_empty() {
        return "Unable to find jobs matching user/id(s) specified\n".into();
    }
    let mut jobs: Vec<&PriorityFactors> = reply.jobs.iter().collect();
    sort(&mut jobs, opts.sort.as_deref().unwrap_or("i"), &w);
    let rows: Vec<Row> = jobs.into_iter().map(Row::Job).collect();
    format::render(&fmt, &rows, header, &|r, f| cell(r, f, &w, cluster))
}

pub fn run(args: &[String]) -> ExitCode {
    let opts = match parse_args(args) {
        Ok(o) => o,
        Err(early) => return early.finish(),
    };
    if let Some(f) = &opts.format {
        let (_, invalid) = format::parse_percent(f, field_letter);
        for c in invalid {
            eprintln!("sprio: error: Invalid job format specification: {c}");
        }
    }
    if let Some(dump) = &opts.verbose_dump {
        print!("{dump}");
    }
    let rt = client::runtime();
    let req = request(&opts);
    let reply = match calls::query(&rt, "sprio", |mut c| async move {
        c.get_priorities(req).await.map(|r| r.into_inner())
    }) {
        Ok(r) => r,
        Err(code) => return code,
    };
    if reply
        .weights
        .as_ref()
        .is_some_and(|w| w.priority_type == "basic")
    {
        eprintln!(
            "You are not running a supported priority plugin\n(priority/basic).\n\
             Only 'priority/multifactor' is supported."
        );
        return ExitCode::from(1);
    }
    print!("{}", render(&opts, &reply, &client::cluster_name()));
    ExitCode::SUCCESS
}

const USAGE: &str = "\
Usage: sprio [-j jid[s]] [-u user_name[s]] [-o format] [-p partitions]
   [--federation] [--local] [--sibling] [--usage] [-hlnvVw]
";

const HELP: &str = "\
Usage: sprio [OPTIONS]
  -h, --noheader                  no headers on output
  -j, --jobs                      comma separated list of jobs
                                  to view, default is all
  -l, --long                      long report
  -M, --cluster=cluster_name      cluster to issue commands to (ignored)
  -n, --norm                      display normalized values
  -o, --format=format             format specification
  -p, --partition=partition_name  comma separated list of partitions
  -S, --sort=sort_list            comma separated list of fields to sort on
  -u, --user=user_name            comma separated list of users to view
  -v, --verbose                   verbosity level
  -V, --version                   output version information and exit
  -w, --weights                   show the weights for each priority factor

Help options:
  --help                          show this help message
  --usage                         display a brief summary of sprio options
";

#[cfg(test)]
mod tests {
    use super::*;
    use proto::v1::TresValue;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn weights() -> PriorityWeights {
        PriorityWeights {
            priority_type: "multifactor".into(),
            age: 1000,
            fairshare: 10000,
            job_size: 0,
            partition: 1000,
            qos: 2000,
            assoc: 0,
            tres: "gres/gpu=1000".into(),
            tres_weights: vec![TresValue {
                name: "gres/gpu".into(),
                value: 1000.0,
            }],
        }
    }

    fn job(id: u32, user: &str, age: f64, fs: f64, qos: f64, gpus: f64) -> PriorityFactors {
        let priority = (1000.0 * age + 10000.0 * fs + 1000.0 + 2000.0 * qos + 1000.0 * gpus) as u32;
        PriorityFactors {
            job_id: id,
            partition: "gpu".into(),
            user: user.into(),
            uid: 1000,
            account: "ml".into(),
            qos: "normal".into(),
            priority,
            age,
            fairshare: fs,
            partition_factor: 1.0,
            qos_factor: qos,
            tres: if gpus > 0.0 {
                vec![TresValue {
                    name: "gres/gpu".into(),
                    value: gpus,
                }]
            } else {
                vec![]
            },
            ..Default::default()
        }
    }

    fn reply() -> GetPrioritiesReply {
        GetPrioritiesReply {
            weights: Some(weights()),
            jobs: vec![
                job(12, "alice", 0.5, 1.0, 0.0, 0.25),
                job(7, "bob", 1.0, 0.333333, 1.0, 0.0),
            ],
        }
    }

    fn out(args: &[&str]) -> String {
        render(&parse_args(&s(args)).unwrap(), &reply(), "drover")
    }

    #[test]
    fn default_columns_follow_the_weights() {
        assert_eq!(
            out(&[]),
            "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE  PARTITION        QOS                 TRES\n\
             \x20             7 gpu             7333          0       1000       3333       1000       2000                     \n\
             \x20            12 gpu            11750          0        500      10000       1000          0         gres/gpu=250\n"
        );
        // With -u the user is shown; -h drops the header.
        let lines = out(&["-h", "-u", "alice,bob"]);
        assert!(
            lines.starts_with("              7 gpu            bob       7333"),
            "{lines}"
        );
    }

    #[test]
    fn normalized_weights_long_and_formats() {
        let n = out(&["-n", "-o", "%i %y %a %f %q %t"]);
        assert_eq!(
            n,
            "JOBID PRIORITY AGE FAIRSHARE QOS TRES\n\
             7 0.00000170734711 1.0000000 0.3333330 1.0000000 \n\
             12 0.00000273576006 0.5000000 1.0000000 0.0000000 gres/gpu=0.25\n"
        );
        assert_eq!(
            out(&["-w"]),
            "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE  PARTITION        QOS                 TRES\n\
             \x20       Weights                               1       1000      10000       1000       2000        gres/gpu=1000\n"
        );
        let long = out(&["-l"]);
        assert!(
            long.contains(
                "             12 gpu          alice      11750          0        500          0      10000          0       1000          0           0         gres/gpu=250\n"
            ),
            "{long}"
        );
        assert!(
            long.starts_with(
                "          JOBID PARTITION     USER   PRIORITY       SITE        AGE      ASSOC  FAIRSHARE    JOBSIZE  PARTITION        QOS        NICE                 TRES\n"
            ),
            "{long}"
        );
        // Sorting: by priority, highest first.
        let sorted = out(&["-h", "-S", "-y", "-o", "%i"]);
        assert_eq!(sorted, "12\n7\n");
    }

    #[test]
    fn job_selection_and_errors() {
        let opts = parse_args(&s(&["-j", "12,7"])).unwrap();
        assert_eq!(opts.jobs, Some(vec![12, 7]));
        assert_eq!(request(&opts).job_ids, vec![12, 7]);
        let opts = parse_args(&s(&["--jobs=3"])).unwrap();
        let empty = GetPrioritiesReply {
            weights: Some(weights()),
            jobs: vec![],
        };
        assert_eq!(
            render(&opts, &empty, "c"),
            "Unable to find jobs matching user/id(s) specified\n"
        );
        assert!(parse_args(&s(&["-j", "x"])).is_err());
        assert!(parse_args(&s(&["-S", "z"])).is_err());
        assert!(parse_args(&s(&["--bogus"])).is_err());
        assert!(parse_args(&s(&["extra"])).is_err());
        let help = parse_args(&s(&["--help"])).unwrap_err();
        assert!(help.stdout.starts_with("Usage: sprio"));
        let opts = parse_args(&s(&["-p", "gpu", "--user=alice"])).unwrap();
        assert_eq!(request(&opts).partitions, vec!["gpu"]);
        assert_eq!(request(&opts).users, vec!["alice"]);
    }

    #[test]
    fn verbose_prints_the_options_as_slurm_does() {
        let dump = parse_args(&s(&["-v", "-j", "12"]))
            .unwrap()
            .verbose_dump
            .unwrap();
        for line in [
            "format      = (null)",
            "job_flag    = 1",
            "jobs        = 12",
            "partition   = (null)",
            "users       = (null)",
            "verbose     = 1",
        ] {
            assert!(dump.lines().any(|l| l == line), "{line:?} in\n{dump}");
        }
        assert_eq!(parse_args(&s(&[])).unwrap().verbose_dump, None);
    }
}
