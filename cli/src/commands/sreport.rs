//! `sreport`: usage reports over a period, as Slurm 22.05's sreport prints them, computed
//! from the job records the controller keeps (there is no accounting database).
//!
//! `sreport [-n] [-p|-P] [-t FORMAT] [-T TRES] REPORT_TYPE REPORT [CONDITIONS...]`, with
//! the reports `cluster Utilization`, `cluster AccountUtilizationByUser`, `cluster
//! UserUtilizationByAccount`, `user TopUsage` and `job SizesByAccount`. The period is
//! yesterday (local time) unless `start=`/`end=` say otherwise; both are rounded to the
//! nearest hour, the end is never later than now, and a period is at least an hour, as
//! Slurm's `slurmdb_report_set_start_end_time` does.
//!
//! A job counts the part of its run inside the period: each TRES it holds, times the
//! seconds of overlap. A cluster's capacity is its nodes' TRES times the period. Values
//! are printed in the `-t` unit (minutes by default, `%.0f` like Slurm), or as a share of
//! the cluster's capacity for that TRES (`-t percent`).
//!
//! Worked example: a period of one day (86 400 s) on a cluster of one 16-CPU node; alice
//! ran 4 CPUs for the first hour, bob 2 CPUs (and 2 GPUs) for 30 minutes.
//!
//! ```text
//! Allocated = 4 × 3600 + 2 × 1800           = 18 000 CPU-seconds =  300 CPU minutes
//! Reported  = 16 × 86 400                   = 1 382 400 s        = 23040 CPU minutes
//! Idle      = Reported - Allocated          = 22 740 minutes
//! -t hours:   300 / 60 = 5;  -t percent: 18 000 / 1 382 400 = 1.30%
//! ```
//!
//! The computation (`render`) is pure: job, node and account records in, text out.

use crate::args;
use crate::calls;
use crate::client;
use crate::exit::Exit;
use crate::format::{self, Parsable, TableField};
use crate::jobs;
use crate::opts::{OptSpec, flag, value};
use crate::times;
use crate::users::Names;
use crate::words::abbreviates as abbrev;
use crate::words::atoi;
use jiff::ToSpan;
use model::timespec::{self, LocalZone, Toward};
use proto::v1::{JobInfo, ListJobsRequest, ListNodesRequest, NodeInfo, ShowAccountingRequest};
use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

/// `-t` has no long name in Slurm; this key cannot be typed as one.
const TIME_KEY: &str = " time";

const SPECS: &[OptSpec] = &[
    flag("all_clusters", Some('a')),
    value("cluster", Some('M')),
    flag("help", Some('h')),
    flag("immediate", Some('i')),
    flag("noheader", Some('n')),
    flag("parsable", Some('p')),
    flag("parsable2", Some('P')),
    flag("quiet", Some('Q')),
    value("sort", Some('s')),
    value(TIME_KEY, Some('t')),
    value("tres", Some('T')),
    flag("usage", None),
    flag("verbose", Some('v')),
    flag("version", Some('V')),
];

const DASHES: &str =
    "--------------------------------------------------------------------------------";

/// `-t`: how usage is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeFormat {
    Secs,
    Mins,
    Hours,
    Percent,
    SecsPer,
    MinsPer,
    HoursPer,
}

impl TimeFormat {
    /// Slurm's `_set_time_format`: case-insensitive abbreviations, tried in its order.
    pub fn parse(text: &str) -> Option<TimeFormat> {
        [
            ("SecPer", 6, TimeFormat::SecsPer),
            ("MinPer", 6, TimeFormat::MinsPer),
            ("HourPer", 6, TimeFormat::HoursPer),
            ("Seconds", 1, TimeFormat::Secs),
            ("Minutes", 1, TimeFormat::Mins),
            ("Hours", 1, TimeFormat::Hours),
            ("Percent", 1, TimeFormat::Percent),
        ]
        .into_iter()
        .find(|(lit, min, _)| abbrev(text, lit, *min))
        .map(|(_, _, f)| f)
    }

    /// The words of the banner's `Usage reported in ...` line.
    pub fn words(self) -> &'static str {
        match self {
            TimeFormat::Secs => "Seconds",
            TimeFormat::Mins => "Minutes",
            TimeFormat::Hours => "Hours",
            TimeFormat::Percent => "Percentage of Total",
            TimeFormat::SecsPer => "Seconds/Percentage of Total",
            TimeFormat::MinsPer => "Minutes/Percentage of Total",
            TimeFormat::HoursPer => "Hours/Percentage of Total",
        }
    }

    /// Whether values carry a percentage after them (wider columns).
    fn per(self) -> bool {
        matches!(
            self,
            TimeFormat::SecsPer | TimeFormat::MinsPer | TimeFormat::HoursPer
        )
    }

    /// A usage of `secs` TRES-seconds out of `total`, as Slurm prints it.
    pub fn value(self, secs: u64, total: u64) -> String {
        let total = total.max(1) as f64;
        let v = secs as f64;
        let pct = v / total * 100.0;
        match self {
            TimeFormat::Secs => secs.to_string(),
            TimeFormat::Mins => format!("{:.0}", v / 60.0),
            TimeFormat::Hours => format!("{:.0}", v / 3600.0),
            TimeFormat::Percent => format!("{pct:.2}%"),
            TimeFormat::SecsPer => format!("{secs}({pct:.2}%)"),
            TimeFormat::MinsPer => format!("{:.0}({pct:.2}%)", v / 60.0),
            TimeFormat::HoursPer => format!("{:.0}({pct:.2}%)", v / 3600.0),
        }
    }

    /// The width Slurm gives a usage column whose largest value is `secs`
    /// (`sreport_set_usage_col_width`): 8, one more per digit past 8, and 9 more when a
    /// percentage follows.
    fn usage_width(self, secs: u64) -> i32 {
        // Slurm's bound, 10^8 × 10^17 as it wraps in 64 bits.
        const MAX_ORDER: u128 = 1_590_897_978_359_414_784;
        let mut len = 8;
        let mut order: u128 = 100_000_000;
        while order < MAX_ORDER && u128::from(secs) >= order {
            len += 1;
            order *= 10;
        }
        if self.per() { len + 9 } else { len }
    }
}

/// C's `strncasecmp(text, lit, n) == 0`.
fn strncase_eq(text: &str, lit: &str, n: usize) -> bool {
    let a = text.bytes().chain(std::iter::repeat(0)).take(n);
    let b = lit.bytes().chain(std::iter::repeat(0)).take(n);
    let mut a = a.map(|c| c.to_ascii_lowercase());
    let mut b = b.map(|c| c.to_ascii_lowercase());
    loop {
        match (a.next(), b.next()) {
            (Some(0), Some(0)) | (None, None) => return true,
            (Some(x), Some(y)) if x == y => continue,
            _ => return false,
        }
    }
}

/// The reports Drover makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    Utilization,
    AccountByUser,
    UserByAccount,
    TopUsage,
    JobSizes,
}

/// The command line: its options, and the report with its conditions.
#[derive(Debug, Clone)]
pub struct Command {
    pub mode: Parsable,
    pub header: bool,
    pub time: TimeFormat,
    /// `-T` (or `SREPORT_TRES`) as given.
    pub tres: Option<String>,
    pub report: Report,
    pub conds: Conds,
    /// What Slurm complains about but still reports (unknown conditions, a bad `-t`).
    pub warnings: String,
    /// Exit status 1 after the report.
    pub failed: bool,
}

/// The report's conditions (`start=`, `format=`, `accounts=`, ...).
#[derive(Debug, Clone, Default)]
pub struct Conds {
    pub start: Option<i64>,
    pub end: Option<i64>,
    pub format: Vec<String>,
    pub accounts: Vec<String>,
    pub users: Vec<String>,
    pub clusters: Vec<String>,
    pub partitions: Vec<String>,
    /// `topcount=`; `None`: every user (a negative count).
    pub top: Option<u32>,
    pub group: bool,
    pub tree: bool,
    pub grouping: Vec<String>,
    pub flat_view: bool,
    pub job_count: bool,
}

/// Appends the items of a comma-separated list that are not there yet (Slurm's
/// `slurm_addto_char_list`: quotes dropped, duplicates compared without case).
fn add_list(list: &mut Vec<String>, text: &str) {
    for item in text.split(',') {
        let item = item.trim_matches(|c| c == '"' || c == '\'');
        if !item.is_empty() && !list.iter().any(|x| x.eq_ignore_ascii_case(item)) {
            list.push(item.to_string());
        }
    }
}

/// Parses the command line. `tres_env` is `SREPORT_TRES`.
pub fn parse_args(
    args: &[String],
    tres_env: Option<String>,
    now: i64,
    zone: &dyn LocalZone,
) -> Result<Command, Exit> {
    let p = args::parse_command_line("sreport", args, SPECS, &[], HELP, HELP)?;
    let mut warnings = String::new();
    let mut time = TimeFormat::Mins;
    for t in p.all(TIME_KEY) {
        match TimeFormat::parse(t) {
            Some(f) => time = f,
            None => warnings.push_str(&format!("unknown time format {t}")),
        }
    }
    let tres = p.get("tres").map(String::from).or(tres_env);
    let mode = match p
        .opts
        .iter()
        .rev()
        .find(|(k, _)| *k == "parsable" || *k == "parsable2")
    {
        Some(("parsable", _)) => Parsable::Ending,
        Some(_) => Parsable::NoEnding,
        None => Parsable::No,
    };
    let (report, cond_words) = select_report(&p.positional)?;
    let mut cmd = Command {
        mode,
        header: !p.has("noheader"),
        time,
        tres,
        report,
        conds: Conds {
            top: Some(10),
            ..Default::default()
        },
        warnings,
        failed: false,
    };
    parse_conds(&mut cmd, cond_words, now, zone);
    Ok(cmd)
}

/// Picks the report the words name, with Slurm's words for one it does not know.
fn select_report(words: &[String]) -> Result<(Report, &[String]), Exit> {
    let Some(kind) = words.first() else {
        return Err(Exit::raw(
            "sreport: error: no report given (try \"sreport cluster utilization\")",
        ));
    };
    let too_few = || Exit::raw(format!("too few arguments for keyword:{kind}"));
    let unsupported = |what: &str| {
        Exit::error(
            "sreport",
            format!("the {what} report is not available: Drover keeps no such usage"),
        )
    };
    let rest = &words[1.min(words.len())..];
    let name = rest.first();
    let conds = &rest[1.min(rest.len())..];
    if abbrev(kind, "cluster", 2) {
        let Some(r) = name else { return Err(too_few()) };
        if strncase_eq(r, "AccountUtilizationByUser", 1) {
            Ok((Report::AccountByUser, conds))
        } else if strncase_eq(r, "UserUtilizationByAccount", 18) || strncase_eq(r, "UA", 2) {
            Ok((Report::UserByAccount, conds))
        } else if strncase_eq(r, "UserUtilizationByWckey", 18) || strncase_eq(r, "UW", 2) {
            Err(unsupported("UserUtilizationByWckey"))
        } else if strncase_eq(r, "Utilization", 2) {
            Ok((Report::Utilization, conds))
        } else if strncase_eq(r, "WCKeyUtilizationByUser", 1) {
            Err(unsupported("WCKeyUtilizationByUser"))
        } else {
            Err(Exit::raw(format!(
                "Not valid report {r}\nValid cluster reports are, \"AccountUtilizationByUser\", \
                 \"UserUtilizationByAccount\", \"UserUtilizationByWckey\", \"Utilization\", \
                 and \"WCKeyUtilizationByUser\""
            )))
        }
    } else if abbrev(kind, "job", 1) {
        let Some(r) = name else { return Err(too_few()) };
        if abbrev(r, "SizesByAccount", 1) {
            Ok((Report::JobSizes, conds))
        } else if abbrev(r, "SizesByWcKey", 8) || abbrev(r, "SizesByAccountAndWcKey", 15) {
            Err(unsupported(r))
        } else {
            Err(Exit::raw(format!(
                "Not valid report {r}\nValid job reports are, \"SizesByAccount, \
                 SizesByAccountAndWcKey, and  SizesByWckey\""
            )))
        }
    } else if abbrev(kind, "user", 1) {
        let Some(r) = name else { return Err(too_few()) };
        if strncase_eq(r, "Top", 1) {
            Ok((Report::TopUsage, conds))
        } else {
            Err(Exit::raw(format!(
                "Not valid report {r}\nValid user reports are, \"Top\""
            )))
        }
    } else if abbrev(kind, "reservation", 2) || abbrev(kind, "resv", 2) {
        Err(unsupported("reservation"))
    } else {
        Err(Exit::raw(format!("invalid keyword: {kind}")))
    }
}

/// Reads the conditions after the report's name, each as Slurm's `_set_*_cond` of that
/// report does: `key=value` with the key abbreviated, a bare word a user (cluster for
/// Utilization); anything else is warned about and the report still runs.
fn parse_conds(cmd: &mut Command, words: &[String], now: i64, zone: &dyn LocalZone) {
    let report = cmd.report;
    let c = &mut cmd.conds;
    let warnings = &mut cmd.warnings;
    let failed = &mut cmd.failed;
    for w in words {
        let (key, val, eq) = match w.split_once('=') {
            Some((k, v)) => (k, v, true),
            None => (w.as_str(), "", false),
        };
        let is = |lit: &str, min: usize| abbrev(key, lit, min);
        let bare = if eq { val } else { w.as_str() };
        let time = |slot: &mut Option<i64>, warnings: &mut String| match timespec::parse(
            val,
            now,
            Toward::Past,
            zone,
        ) {
            Ok(t) => *slot = Some(t),
            Err(e) => warnings.push_str(&format!("sreport: error: {e}\n")),
        };
        let mut unsupported = |what: &str| {
            warnings.push_str(&format!("sreport: error: {what} is not supported\n"));
            *failed = true;
        };
        match report {
            Report::Utilization => {
                if !eq && is("all_clusters", 1) {
                } else if !eq || is("Clusters", 1) {
                    add_list(&mut c.clusters, bare);
                } else if is("End", 1) {
                    time(&mut c.end, warnings);
                } else if is("Format", 1) {
                    add_list(&mut c.format, val);
                } else if is("Start", 1) {
                    time(&mut c.start, warnings);
                } else {
                    unknown_condition(warnings, failed, w);
                }
            }
            Report::AccountByUser | Report::UserByAccount | Report::TopUsage => {
                let top = report == Report::TopUsage;
                if !eq && is("all_clusters", 1) {
                } else if !eq && !top && is("Tree", 4) {
                    c.tree = true;
                } else if !eq && top && is("Group", 1) {
                    c.group = true;
                } else if !eq || is("Users", 1) {
                    add_list(&mut c.users, &bare.to_ascii_lowercase());
                } else if is("Accounts", 2) || is("Acct", 4) {
                    add_list(&mut c.accounts, val);
                } else if is("Clusters", 1) {
                    add_list(&mut c.clusters, val);
                } else if is("End", 1) {
                    time(&mut c.end, warnings);
                } else if is("Format", 1) {
                    add_list(&mut c.format, val);
                } else if is("Start", 1) {
                    time(&mut c.start, warnings);
                } else if top && is("TopCount", 1) {
                    match val.trim().parse::<i64>() {
                        Ok(n) if n < 0 => c.top = None,
                        Ok(n) => c.top = Some(u32::try_from(n).unwrap_or(u32::MAX)),
                        Err(_) => {
                            warnings.push_str(&format!(
                                "sreport: error: Invalid value for TopCount ({val})\n"
                            ));
                            *failed = true;
                        }
                    }
                } else if !top && is("QosLevel", 1) {
                    unsupported("QosLevel");
                } else {
                    unknown_condition(warnings, failed, w);
                }
            }
            Report::JobSizes => {
                if !eq && is("all_clusters", 1) {
                } else if !eq && is("PrintJobCount", 2) {
                    c.job_count = true;
                } else if !eq && is("FlatView", 2) {
                    c.flat_view = true;
                } else if !eq || is("Clusters", 1) {
                    add_list(&mut c.clusters, bare);
                } else if is("Accounts", 2) || is("Acct", 4) {
                    add_list(&mut c.accounts, val);
                } else if is("End", 1) {
                    time(&mut c.end, warnings);
                } else if is("Format", 2) {
                    add_list(&mut c.format, val);
                } else if is("grouping", 2) {
                    if abbrev(val, "individual", 1) {
                        unsupported("grouping=individual");
                    } else {
                        add_list(&mut c.grouping, val);
                    }
                } else if is("Partitions", 2) {
                    add_list(&mut c.partitions, val);
                } else if is("Start", 1) {
                    time(&mut c.start, warnings);
                } else if is("Users", 1) {
                    add_list(&mut c.users, val);
                } else if is("Associations", 2)
                    || is("Gid", 2)
                    || is("Jobs", 1)
                    || is("Nodes", 1)
                    || is("Wckeys", 2)
                {
                    unsupported(&format!("the condition {key}"));
                } else {
                    unknown_condition(warnings, failed, w);
                }
            }
        }
    }
}

/// Slurm's complaint about a condition it does not know; the others are still read.
fn unknown_condition(warnings: &mut String, failed: &mut bool, word: &str) {
    warnings.push_str(&format!(
        " Unknown condition: {word}\nUse keyword set to modify value\n"
    ));
    *failed = true;
}

/// The period a report covers, `[start, end)`: Slurm's `slurmdb_report_set_start_end_time`.
pub fn period(start: Option<i64>, end: Option<i64>, now: i64, zone: &dyn LocalZone) -> (i64, i64) {
    let today = timespec::start_of_day(now, zone);
    let end = match end.filter(|&e| e != 0) {
        None => today,
        Some(e) => round_hour(e.min(now), zone),
    };
    let start = match start.filter(|&s| s != 0) {
        None => timespec::start_of_day(today - 1, zone),
        Some(s) => round_hour(s, zone),
    };
    (
        start,
        if end - start < 3600 {
            start + 3600
        } else {
            end
        },
    )
}

/// A time rounded to the nearest hour, local time, as Slurm does it (seconds round the
/// minute first).
fn round_hour(t: i64, zone: &dyn LocalZone) -> i64 {
    let c = zone.civil(t);
    let minute = c.minute() + i8::from(c.second() >= 30);
    let hour = c.date().to_datetime(
        jiff::civil::Time::new(c.hour(), 0, 0, 0).unwrap_or(jiff::civil::Time::midnight()),
    );
    let hour = if minute >= 30 {
        hour.checked_add(1.hour()).unwrap_or(hour)
    } else {
        hour
    };
    zone.unix(hour)
}

/// The TRES sreport knows, in the order of Slurm's TRES table (its ids), then
/// `gres/gpuutil`: GPU time used, not only allocated (the busy GPU-seconds NVML
/// sampled, `model::gpu_use`), in the units of `gres/gpu`, so that `-T
/// gres/gpu,gres/gpuutil` reports allocated beside used GPU-hours.
const TRES_TABLE: &[&str] = &[
    "cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages", "gres/gpu", GPU_USED,
];

/// The TRES of used GPU time.
const GPU_USED: &str = "gres/gpuutil";

/// The TRES a report covers: `cpu` without `-T`, else those of the table `-T` names.
pub fn selected_tres(tres: Option<&str>) -> Vec<&'static str> {
    match tres {
        None => vec!["cpu"],
        Some(list) => TRES_TABLE
            .iter()
            .copied()
            .filter(|t| list.split(',').any(|x| x.trim().eq_ignore_ascii_case(t)))
            .collect(),
    }
}

/// Everything a report is computed from.
#[derive(Debug, Clone, Default)]
pub struct Data {
    pub jobs: Vec<JobInfo>,
    pub nodes: Vec<NodeInfo>,
    /// Every account and its parent (empty for root), parents first.
    pub accounts: Vec<(String, String)>,
    /// Users of each account, as the accounting records list them.
    pub account_users: Vec<(String, String)>,
    pub cluster: String,
    /// The controller's clock, for jobs still running.
    pub now: i64,
    pub names: Names,
    /// Login → the first field of its passwd GECOS (`Proper Name`).
    pub proper: BTreeMap<String, String>,
}

/// One job's usage in the period.
#[derive(Debug, Clone)]
struct Use {
    user: String,
    account: String,
    partition: String,
    /// TRES → its count × seconds in the period.
    secs: BTreeMap<String, u64>,
    /// TRES → the count the job holds.
    counts: BTreeMap<String, u64>,
}

/// The jobs' usage inside `[start, end)`; jobs that did not run in it are left out.
fn usage(data: &Data, start: i64, end: i64) -> Vec<Use> {
    let mut out = Vec::new();
    for j in &data.jobs {
        if j.start_time <= 0 || jobs::is_array_meta(j) {
            continue;
        }
        let stop = if j.end_time > 0 { j.end_time } else { data.now };
        let overlap = stop.min(end) - j.start_time.max(start);
        if overlap <= 0 {
            continue;
        }
        let counts = jobs::job_tres(j.num_cpus, j.mem_mb, j.num_nodes, j.num_gpus);
        let mut secs: BTreeMap<String, u64> = counts
            .iter()
            .map(|(t, n)| (t.clone(), n.saturating_mul(overlap as u64)))
            .collect();
        // Busy GPU time, spread evenly over the run: the part inside the period.
        let busy = jobs::busy_gpu_secs(j);
        let run = (stop - j.start_time).max(1) as u64;
        if busy > 0 {
            secs.insert(GPU_USED.into(), busy.saturating_mul(overlap as u64) / run);
        }
        let s = jobs::spec(j);
        out.push(Use {
            user: data.names.job_user(j),
            account: if s.account.is_empty() {
                "root".into()
            } else {
                s.account.clone()
            },
            partition: s.partition.clone(),
            secs,
            counts: counts.into_iter().collect(),
        });
    }
    out
}

/// The cluster's count of a TRES (its nodes' sum).
fn capacity(nodes: &[NodeInfo], tres: &str) -> u64 {
    nodes
        .iter()
        .map(|n| match tres {
            "cpu" | "billing" => u64::from(n.cpus),
            "mem" => n.memory_mb,
            "node" => 1,
            "gres/gpu" | GPU_USED => u64::from(n.gpus),
            _ => 0,
        })
        .sum()
}

/// What a column shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Cluster,
    TresName,
    TresCount,
    Alloc,
    Down,
    PlndDown,
    Idle,
    Planned,
    Over,
    Reported,
    Account,
    Login,
    Proper,
    Used,
    Energy,
    /// A field Slurm has that Drover leaves blank.
    Blank,
}

#[derive(Debug, Clone)]
struct Field {
    col: Col,
    name: &'static str,
    len: i32,
}

/// The fields of a `format=` list, Slurm's tables: the cluster reports' and the user
/// report's. Unknown names are warned about and skipped; `%N` sets a width.
fn fields(
    list: &[String],
    report: Report,
    time: TimeFormat,
    tree: bool,
    warnings: &mut String,
    failed: &mut bool,
) -> Vec<Field> {
    let per = time.per();
    let wide = |a: i32, b: i32| if per { b } else { a };
    let mut out = Vec::new();
    for item in list {
        let (name, newlen) = match item.split_once('%') {
            Some((n, w)) => (n, atoi(w)),
            None => (item.as_str(), 0),
        };
        let is = |lit: &str, min: usize| abbrev(name, lit, min);
        let f = |col, name, len| Some(Field { col, name, len });
        let found = if report == Report::TopUsage {
            if is("Accounts", 1) {
                f(Col::Account, "Account", 15)
            } else if is("Cluster", 1) {
                f(Col::Cluster, "Cluster", 9)
            } else if is("Energy", 1) {
                f(Col::Energy, "Energy", wide(10, 18))
            } else if is("Login", 1) {
                f(Col::Login, "Login", 9)
            } else if is("Proper", 1) {
                f(Col::Proper, "Proper Name", 15)
            } else if is("TresName", 5) {
                f(Col::TresName, "TRES Name", 14)
            } else if is("Used", 1) {
                f(Col::Used, "Used", wide(10, 18))
            } else {
                None
            }
        } else if is("Accounts", 2) {
            f(Col::Account, "Account", if tree { -20 } else { 15 })
        } else if is("allocated", 2) {
            f(Col::Alloc, "Allocated", wide(12, 20))
        } else if is("Cluster", 2) {
            f(Col::Cluster, "Cluster", 9)
        } else if is("down", 1) {
            f(Col::Down, "Down", wide(10, 18))
        } else if is("idle", 1) {
            f(Col::Idle, "Idle", wide(12, 20))
        } else if is("Login", 1) {
            f(Col::Login, "Login", 9)
        } else if is("overcommitted", 1) {
            f(Col::Over, "Over Comm", wide(9, 18))
        } else if is("PlannedDown", 2) {
            f(Col::PlndDown, "PLND Down", wide(10, 18))
        } else if is("Proper", 2) {
            f(Col::Proper, "Proper Name", 15)
        } else if is("reported", 3) {
            f(Col::Reported, "Reported", wide(12, 20))
        } else if is("reserved", 3) || is("planned", 4) {
            f(Col::Planned, "Planned", wide(9, 18))
        } else if is("TresCount", 5) || is("cpucount", 2) || is("count", 2) {
            f(Col::TresCount, "TRES Count", 10)
        } else if is("TresName", 5) {
            f(Col::TresName, "TRES Name", 14)
        } else if is("Used", 1) {
            f(Col::Used, "Used", wide(10, 18))
        } else if is("WCKey", 2) {
            f(Col::Blank, "WCKey", if tree { 20 } else { 15 })
        } else if is("Energy", 1) {
            f(Col::Energy, "Energy", wide(10, 18))
        } else {
            None
        };
        match found {
            Some(mut field) => {
                if newlen != 0 {
                    field.len = newlen;
                }
                out.push(field);
            }
            None => {
                warnings.push_str(&format!(" Unknown field '{name}'\n"));
                *failed = true;
            }
        }
    }
    out
}

/// The lines above a report: dashes, the title, the units, dashes.
fn banner(title: &str, units: &str) -> String {
    format!("{DASHES}\n{title}\n{units}\n{DASHES}\n")
}

/// `Usage reported in CPU Minutes` (`TRES` once `-T` is given; no unit for percent).
fn usage_line(cmd: &Command) -> String {
    match cmd.time {
        TimeFormat::Percent => format!("Usage reported in {}", cmd.time.words()),
        t => format!(
            "Usage reported in {} {}",
            if cmd.tres.is_some() { "TRES" } else { "CPU" },
            t.words()
        ),
    }
}

/// Renders one table with `print_fields`.
fn table(cmd: &Command, fields: &[Field], rows: &[Vec<String>]) -> String {
    let tf: Vec<TableField> = fields
        .iter()
        .map(|f| TableField {
            name: f.name.to_string(),
            len: f.len,
        })
        .collect();
    format::print_fields(&tf, rows, cmd.header, cmd.mode, "|")
}

/// The whole output of a report (and what goes to stderr, and the exit status).
pub fn render(cmd: &Command, data: &Data, zone: &dyn LocalZone) -> Exit {
    let (start, end) = period(cmd.conds.start, cmd.conds.end, data.now, zone);
    let mut out = Exit {
        code: u8::from(cmd.failed),
        stdout: String::new(),
        stderr: cmd.warnings.clone(),
    };
    let ours = cmd.conds.clusters.is_empty()
        || cmd
            .conds
            .clusters
            .iter()
            .any(|c| c.eq_ignore_ascii_case(&data.cluster));
    let mut uses = if ours {
        usage(data, start, end)
    } else {
        Vec::new()
    };
    if !cmd.conds.partitions.is_empty() {
        uses.retain(|u| cmd.conds.partitions.contains(&u.partition));
    }
    let stamp = |t: i64| timespec::timestamp(t, zone);
    let span = format!("{} - {}", stamp(start), stamp(end - 1));
    let secs = end - start;
    let tres = selected_tres(cmd.tres.as_deref());
    let nodes: &[NodeInfo] = if ours { &data.nodes } else { &[] };
    let total = |t: &str| capacity(nodes, t).saturating_mul(secs as u64);

    if cmd.report == Report::JobSizes {
        job_sizes(cmd, data, &uses, &span, secs, &mut out);
        return out;
    }
    let default = match (cmd.report, cmd.tres.is_some()) {
        (Report::Utilization, true) => "Cl,TresName,al,d,planned,i,res,rep",
        (Report::Utilization, false) => "Cl,al,d,planned,i,res,rep",
        (Report::AccountByUser, true) => "Cluster,Ac,Login,Proper,TresName,Used",
        (Report::AccountByUser, false) => "Cluster,Ac,Login,Proper,Used,Energy",
        (Report::UserByAccount, true) => "Cluster,Login,Proper,Ac,TresName,Used",
        (Report::UserByAccount, false) => "Cluster,Login,Proper,Ac,Used,Energy",
        (_, true) => "Cl,L,P,A,TresName,Used",
        (_, false) => "Cl,L,P,A,U,Energy",
    };
    let mut list = cmd.conds.format.clone();
    if list.is_empty() {
        add_list(&mut list, default);
    }
    let mut failed = false;
    let mut fields = fields(
        &list,
        cmd.report,
        cmd.time,
        cmd.conds.tree,
        &mut out.stderr,
        &mut failed,
    );
    if failed {
        out.code = 1;
    }

    if cmd.report == Report::Utilization {
        if cmd.header {
            out.stdout.push_str(&banner(
                &format!("Cluster Utilization {span}"),
                &usage_line(cmd),
            ));
        }
        // (tres, count, allocated, reported) of each TRES the cluster has.
        let rows: Vec<(&str, u64, u64, u64)> = tres
            .iter()
            .filter(|t| capacity(nodes, t) > 0)
            .map(|&t| {
                let reported = total(t);
                let alloc: u64 = uses
                    .iter()
                    .map(|u| u.secs.get(t).copied().unwrap_or(0))
                    .sum();
                (t, capacity(nodes, t), alloc.min(reported), reported)
            })
            .collect();
        let max_alloc = rows.iter().map(|r| r.2).max().unwrap_or(0);
        let max_idle = rows.iter().map(|r| r.3 - r.2).max().unwrap_or(0);
        let max_rep = rows.iter().map(|r| r.3).max().unwrap_or(0);
        for f in &mut fields {
            let widest = match f.col {
                Col::Alloc | Col::Energy => max_alloc,
                Col::Idle => max_idle,
                Col::Reported => max_rep,
                Col::Down | Col::PlndDown | Col::Planned | Col::Over => 0,
                _ => continue,
            };
            f.len = cmd.time.usage_width(widest);
        }
        let lines: Vec<Vec<String>> = rows
            .iter()
            .map(|&(t, count, alloc, reported)| {
                fields
                    .iter()
                    .map(|f| match f.col {
                        Col::Cluster => data.cluster.clone(),
                        Col::TresName => t.to_string(),
                        Col::TresCount => count.to_string(),
                        Col::Alloc => cmd.time.value(alloc, reported),
                        Col::Down | Col::PlndDown | Col::Planned | Col::Over => {
                            cmd.time.value(0, reported)
                        }
                        Col::Idle => cmd.time.value(reported - alloc, reported),
                        Col::Reported => cmd.time.value(reported, reported),
                        Col::Energy => cmd.time.value(0, 0),
                        _ => String::new(),
                    })
                    .collect()
            })
            .collect();
        out.stdout.push_str(&table(cmd, &fields, &lines));
        return out;
    }

    // The association reports: rows of (account, user or "", usage by TRES).
    let rows = match cmd.report {
        Report::AccountByUser => account_rows(cmd, data, &uses),
        _ => user_rows(cmd, &uses),
    };
    if cmd.header {
        let title = match cmd.report {
            Report::AccountByUser => {
                format!("Cluster/Account/User Utilization {span} ({secs} secs)")
            }
            Report::UserByAccount => {
                format!("Cluster/User/Account Utilization {span} ({secs} secs)")
            }
            _ => match cmd.conds.top {
                Some(n) => format!("Top {n} Users {span} ({secs} secs)"),
                None => format!("Top ALL Users {span} ({secs} secs)"),
            },
        };
        out.stdout.push_str(&banner(&title, &usage_line(cmd)));
    }
    let has_energy = fields.iter().any(|f| f.col == Col::Energy);
    let widest = rows.first().map_or(0, |r| {
        if has_energy {
            r.secs.get("cpu").copied().unwrap_or(0)
        } else {
            tres.iter()
                .map(|t| r.secs.get(*t).copied().unwrap_or(0))
                .max()
                .unwrap_or(0)
        }
    });
    for f in &mut fields {
        match f.col {
            Col::Used => f.len = cmd.time.usage_width(widest),
            Col::Energy => f.len = cmd.time.usage_width(0),
            _ => {}
        }
    }
    let mut lines = Vec::new();
    for r in &rows {
        for t in &tres {
            lines.push(
                fields
                    .iter()
                    .map(|f| match f.col {
                        Col::Cluster => data.cluster.clone(),
                        Col::Account => r.account.clone(),
                        Col::Login => r.user.clone(),
                        Col::Proper => data.proper.get(&r.user).cloned().unwrap_or_default(),
                        Col::TresName => t.to_string(),
                        Col::Used => cmd
                            .time
                            .value(r.secs.get(*t).copied().unwrap_or(0), total(t)),
                        Col::Energy => cmd.time.value(0, 0),
                        _ => String::new(),
                    })
                    .collect(),
            );
        }
    }
    out.stdout.push_str(&table(cmd, &fields, &lines));
    out
}

/// One row of an association report.
#[derive(Debug, Clone, Default)]
struct AssocRow {
    /// As printed (indented under `Tree`, joined with `, ` under `Group`).
    account: String,
    /// Empty for an account's own row.
    user: String,
    secs: BTreeMap<String, u64>,
}

fn add_secs(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (t, s) in from {
        *into.entry(t.clone()).or_default() += s;
    }
}

/// The account tree: every account's parent, jobs' accounts unknown to the records
/// under root.
fn parents(data: &Data, uses: &[Use]) -> BTreeMap<String, String> {
    let mut parent: BTreeMap<String, String> = data.accounts.iter().cloned().collect();
    parent.entry("root".into()).or_default();
    for u in uses {
        if !parent.contains_key(&u.account) {
            parent.insert(u.account.clone(), "root".into());
        }
    }
    parent
}

/// The accounts from `acct` up to root.
fn lineage(parent: &BTreeMap<String, String>, acct: &str) -> Vec<String> {
    let mut out = vec![acct.to_string()];
    let mut cur = acct;
    while let Some(p) = parent.get(cur).filter(|p| !p.is_empty()) {
        if out.contains(p) {
            break;
        }
        out.push(p.clone());
        cur = p;
    }
    out
}

/// AccountUtilizationByUser: root first, each account (its subtree's sum) followed by
/// its users, then its sub-accounts, alphabetically; only associations with usage.
/// `accounts=` keeps those accounts' subtrees; `users=` keeps those users' rows only.
fn account_rows(cmd: &Command, data: &Data, uses: &[Use]) -> Vec<AssocRow> {
    let parent = parents(data, uses);
    let mut acct_secs: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let mut user_secs: BTreeMap<(String, String), BTreeMap<String, u64>> = BTreeMap::new();
    for u in uses {
        add_secs(
            user_secs
                .entry((u.account.clone(), u.user.clone()))
                .or_default(),
            &u.secs,
        );
        for a in lineage(&parent, &u.account) {
            add_secs(acct_secs.entry(a).or_default(), &u.secs);
        }
    }
    let selected = |acct: &str| {
        cmd.conds.accounts.is_empty()
            || lineage(&parent, acct)
                .iter()
                .any(|a| cmd.conds.accounts.contains(a))
    };
    let mut children: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, p) in &parent {
        if !p.is_empty() && a != "root" {
            children.entry(p.as_str()).or_default().push(a.as_str());
        }
    }
    let mut out = Vec::new();
    let mut stack: Vec<(&str, usize)> = vec![("root", 0)];
    let mut seen = BTreeSet::new();
    while let Some((acct, depth)) = stack.pop() {
        if !seen.insert(acct) {
            continue;
        }
        let indent = |d: usize, name: &str| {
            if cmd.conds.tree {
                format!("{}{name}", " ".repeat(d))
            } else {
                name.to_string()
            }
        };
        if selected(acct) {
            if cmd.conds.users.is_empty()
                && let Some(s) = acct_secs.get(acct)
            {
                out.push(AssocRow {
                    account: indent(depth, acct),
                    user: String::new(),
                    secs: s.clone(),
                });
            }
            for ((a, user), s) in user_secs.range((acct.to_string(), String::new())..) {
                if a != acct {
                    break;
                }
                if cmd.conds.users.is_empty() || cmd.conds.users.contains(&user.to_lowercase()) {
                    out.push(AssocRow {
                        account: indent(depth + 1, acct),
                        user: user.clone(),
                        secs: s.clone(),
                    });
                }
            }
        }
        if let Some(kids) = children.get(acct) {
            for k in kids.iter().rev() {
                stack.push((k, depth + 1));
            }
        }
    }
    out
}

/// UserUtilizationByAccount and TopUsage: one row per user and account (per user with
/// `Group`), the largest CPU usage first, then by name.
fn user_rows(cmd: &Command, uses: &[Use]) -> Vec<AssocRow> {
    // (user, account or "" under Group) → (the accounts, usage by TRES).
    type Accts = (BTreeSet<String>, BTreeMap<String, u64>);
    let mut by: BTreeMap<(String, String), Accts> = BTreeMap::new();
    for u in uses {
        if !cmd.conds.accounts.is_empty() && !cmd.conds.accounts.contains(&u.account) {
            continue;
        }
        if !cmd.conds.users.is_empty() && !cmd.conds.users.contains(&u.user.to_lowercase()) {
            continue;
        }
        let key_acct = if cmd.conds.group {
            String::new()
        } else {
            u.account.clone()
        };
        let e = by.entry((u.user.clone(), key_acct)).or_default();
        e.0.insert(u.account.clone());
        add_secs(&mut e.1, &u.secs);
    }
    let mut rows: Vec<AssocRow> = by
        .into_iter()
        .map(|((user, _), (accts, secs))| AssocRow {
            account: accts.into_iter().collect::<Vec<_>>().join(", "),
            user,
            secs,
        })
        .collect();
    let cpu = |r: &AssocRow| r.secs.get("cpu").copied().unwrap_or(0);
    rows.sort_by(|a, b| {
        cpu(b)
            .cmp(&cpu(a))
            .then_with(|| a.user.cmp(&b.user))
            .then_with(|| a.account.cmp(&b.account))
    });
    if cmd.report == Report::TopUsage {
        // Slurm prints a row before it counts: `topcount=0` shows one.
        rows.truncate(cmd.conds.top.map_or(usize::MAX, |n| n.max(1) as usize));
    }
    rows
}

/// job SizesByAccount: per account one level below `accounts=` (root by default), its
/// jobs' TRES-time by job size (the TRES count), and its share of the cluster's.
fn job_sizes(cmd: &Command, data: &Data, uses: &[Use], span: &str, secs: i64, out: &mut Exit) {
    let tres = selected_tres(cmd.tres.as_deref());
    if tres.len() > 1 {
        out.stderr.push_str(
            " Job report only support a single --tres type.\n \
             Generate a separate report for each TRES type.\n",
        );
        out.code = 1;
        return;
    }
    let t = tres.first().copied().unwrap_or("cpu");
    let mut grouping = cmd.conds.grouping.clone();
    if grouping.is_empty() {
        add_list(&mut grouping, "50,250,500,1000");
    }
    let unit = match cmd.tres.as_deref() {
        None => "CPUs",
        Some(s) if s.eq_ignore_ascii_case("cpu") => "CPUs",
        Some(_) => "TRES",
    };
    // Bins [low, high], the last open-ended.
    let mut bins: Vec<(u64, u64, String)> = Vec::new();
    let mut last: u64 = 0;
    for g in &grouping {
        let size = u64::from(atoi(g).max(0).unsigned_abs());
        bins.push((
            last,
            size.saturating_sub(1),
            format!("{last}-{} {unit}", i64::try_from(size).unwrap_or(0) - 1),
        ));
        last = size;
    }
    if last > 0 {
        bins.push((last, u64::MAX, format!(">= {last} {unit}")));
    }
    let parent = parents(data, uses);
    let tops: Vec<String> = if cmd.conds.accounts.is_empty() {
        vec!["root".into()]
    } else {
        cmd.conds.accounts.clone()
    };
    // The row of a job's account: the account below one of `tops` it falls under.
    let row_of = |acct: &str| -> Option<String> {
        if cmd.conds.flat_view {
            return Some(acct.to_string());
        }
        let line = lineage(&parent, acct);
        if tops.iter().any(|t| t == acct) {
            return Some(acct.to_string());
        }
        line.windows(2)
            .find(|w| tops.contains(&w[1]))
            .map(|w| w[0].clone())
    };
    // account → (per-bin value, total), value being TRES-seconds or jobs.
    let mut rows: BTreeMap<String, (Vec<u64>, u64)> = BTreeMap::new();
    if !cmd.conds.flat_view {
        for (a, p) in &parent {
            if tops.contains(p) {
                rows.entry(a.clone()).or_insert((vec![0; bins.len()], 0));
            }
        }
        for (a, _) in &data.account_users {
            if tops.contains(a) {
                rows.entry(a.clone()).or_insert((vec![0; bins.len()], 0));
            }
        }
    }
    let mut cluster_total = 0u64;
    for u in uses {
        if !cmd.conds.users.is_empty() && !cmd.conds.users.contains(&u.user) {
            continue;
        }
        let Some(row) = row_of(&u.account) else {
            continue;
        };
        let count = u.counts.get(t).copied().unwrap_or(0);
        let value = if cmd.conds.job_count {
            1
        } else {
            u.secs.get(t).copied().unwrap_or(0)
        };
        let Some(bin) = bins.iter().position(|b| count >= b.0 && count <= b.1) else {
            continue;
        };
        let r = rows.entry(row).or_insert((vec![0; bins.len()], 0));
        r.0[bin] += value;
        r.1 += value;
        cluster_total += value;
    }
    if cmd.header {
        let mut b = format!("{DASHES}\nJob Sizes {span} ({secs} secs)\n");
        if let Some(s) = &cmd.tres {
            b.push_str(&format!("TRES type is {s}\n"));
        }
        if cmd.conds.job_count {
            b.push_str("Units are in number of jobs ran\n");
        } else {
            b.push_str(&format!("Time reported in {}\n", cmd.time.words()));
        }
        b.push_str(DASHES);
        b.push('\n');
        out.stdout.push_str(&b);
    }
    let mut list = cmd.conds.format.clone();
    if list.is_empty() {
        add_list(&mut list, "Cl,a");
    }
    let mut fields = Vec::new();
    for item in &list {
        let (name, newlen) = match item.split_once('%') {
            Some((n, w)) => (n, atoi(w)),
            None => (item.as_str(), 0),
        };
        let is = |lit: &str, min: usize| abbrev(name, lit, min);
        let found = if is("Account", 1) || is("Acct", 4) {
            Some((Col::Account, "Account", 9))
        } else if is("Cluster", 2) {
            Some((Col::Cluster, "Cluster", 9))
        } else if is("Duration", 1) {
            Some((Col::Blank, "Duration", 12))
        } else if is("JobCount", 2) {
            Some((Col::Blank, "Job Count", 9))
        } else if is("NodeCount", 2) {
            Some((Col::Blank, "Node Count", 9))
        } else if is("TresCount", 5) || is("CpuCount", 2) || is("count", 2) {
            Some((Col::Blank, "TRES Count", 10))
        } else if is("User", 1) {
            Some((Col::Blank, "User", 9))
        } else if is("Wckey", 1) {
            Some((Col::Blank, "Wckey", 9))
        } else {
            None
        };
        match found {
            Some((col, name, len)) => fields.push(Field {
                col,
                name,
                len: if newlen != 0 { newlen } else { len },
            }),
            None => {
                out.stderr.push_str(&format!(" Unknown field '{name}'\n"));
                out.code = 1;
            }
        }
    }
    let bin_len = if cmd.time.per() { 20 } else { 13 };
    let fixed = fields.len();
    let mut header: Vec<TableField> = fields
        .iter()
        .map(|f| TableField {
            name: f.name.to_string(),
            len: f.len,
        })
        .collect();
    for b in &bins {
        header.push(TableField {
            name: b.2.clone(),
            len: bin_len,
        });
    }
    header.push(TableField {
        name: "% of cluster".into(),
        len: 12,
    });
    let lines: Vec<Vec<String>> = rows
        .iter()
        .map(|(acct, (vals, total))| {
            let mut line: Vec<String> = fields[..fixed]
                .iter()
                .map(|f| match f.col {
                    Col::Cluster => data.cluster.clone(),
                    Col::Account => acct.clone(),
                    _ => String::new(),
                })
                .collect();
            for v in vals {
                line.push(if cmd.conds.job_count {
                    v.to_string()
                } else {
                    cmd.time.value(*v, *total)
                });
            }
            line.push(TimeFormat::Percent.value(*total, cluster_total));
            line
        })
        .collect();
    out.stdout.push_str(&format::print_fields(
        &header, &lines, cmd.header, cmd.mode, "|",
    ));
}

/// The first field of a user's GECOS, as Slurm shows `Proper Name`.
fn proper_name(login: &str) -> Option<String> {
    let user = nix::unistd::User::from_name(login).ok().flatten()?;
    let gecos = user.gecos.to_string_lossy().into_owned();
    Some(gecos.split(',').next().unwrap_or("").to_string())
}

pub fn run(args: &[String]) -> ExitCode {
    let now = times::now();
    let cmd = match parse_args(args, args::env_var("SREPORT_TRES"), now, times::zone()) {
        Ok(c) => c,
        Err(early) => return early.finish(),
    };
    let (start, end) = period(cmd.conds.start, cmd.conds.end, now, times::zone());
    let req = ListJobsRequest {
        include_finished: true,
        window_start: start,
        window_end: end,
        ..Default::default()
    };
    let reply = calls::query(&client::runtime(), "sreport", |mut c| async move {
        let jobs = c.list_jobs(req).await?.into_inner();
        let nodes = c
            .list_nodes(ListNodesRequest::default())
            .await?
            .into_inner();
        // Without accounting records every account hangs under root.
        let accounts = c
            .show_accounting(ShowAccountingRequest {})
            .await
            .ok()
            .map(|r| r.into_inner());
        Ok((jobs, nodes, accounts))
    });
    let (jobs, nodes, accounts) = match reply {
        Ok(r) => r,
        Err(code) => return code,
    };
    if let Err(e) = jobs::check_records("sreport", &jobs.jobs) {
        return e.finish();
    }
    let names = Names::resolve(jobs.jobs.iter().map(|j| jobs::spec(j).uid), []);
    let mut data = Data {
        now: if jobs.now > 0 { jobs.now } else { now },
        cluster: client::cluster_name(),
        names,
        ..Default::default()
    };
    if let Some(a) = accounts {
        data.accounts = a
            .accounts
            .iter()
            .map(|r| (r.name.clone(), r.parent.clone()))
            .collect();
        data.account_users = a
            .accounts
            .iter()
            .flat_map(|r| r.users.iter().map(|u| (r.name.clone(), u.clone())))
            .collect();
        if data.cluster.is_empty() {
            data.cluster = a.cluster_name;
        }
    }
    data.jobs = jobs.jobs;
    data.nodes = nodes.nodes;
    let logins: BTreeSet<String> = data.jobs.iter().map(|j| data.names.job_user(j)).collect();
    data.proper = logins
        .into_iter()
        .filter_map(|l| proper_name(&l).map(|p| (l, p)))
        .collect();
    render(&cmd, &data, times::zone()).finish()
}

const HELP: &str = "\
sreport [<OPTION>] <REPORT_TYPE> <REPORT> [<CONDITION>...]
    Options:
     -n, --noheader     no banner and no column header
     -p, --parsable     '|' after every field
     -P, --parsable2    '|' between fields
     -t <format>        Seconds, Minutes, Hours, Percent, SecPer, MinPer, HourPer
     -T, --tres=<list>  TRES to report (cpu by default), e.g. cpu,gres/gpu
     -h, --help         this text
     -V, --version      the Slurm version followed

    Reports:
     cluster Utilization | AccountUtilizationByUser | UserUtilizationByAccount
     user    TopUsage
     job     SizesByAccount

    Conditions:
     Start=<time> End=<time>   the period (default: yesterday, 00:00:00 to 23:59:59)
     Format=<field,...>        the columns (Field%N sets a width)
     Accounts=<list> Users=<list> Clusters=<list>
     TopCount=<n> Group        (user TopUsage)
     Tree                      (cluster AccountUtilizationByUser)
     Grouping=<n,...> FlatView PrintJobCount Partitions=<list>   (job SizesByAccount)
";

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::tz::TimeZone;
    use proto::v1::JobSpec;

    /// 2026-12-02 12:00:00 UTC: the default period is 2026-12-01.
    const NOW: i64 = 1_796_212_800;
    /// 2026-12-01 00:00:00 UTC.
    const DAY: i64 = 1_796_083_200;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn job(
        id: u32,
        user: &str,
        account: &str,
        cpus: u32,
        gpus: u32,
        start: i64,
        end: i64,
    ) -> JobInfo {
        JobInfo {
            job_id: id,
            state: proto::v1::JobState::Completed as i32,
            start_time: start,
            end_time: end,
            num_cpus: cpus,
            num_gpus: gpus,
            num_nodes: 1,
            spec: Some(JobSpec {
                user: user.into(),
                account: account.into(),
                partition: "debug".into(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// alice: 4 CPUs for an hour in ml; bob: 2 CPUs and 2 GPUs for 30 minutes in vision
    /// (under ml); carol: 8 CPUs from 23:00 the day before to 01:00, half inside, in
    /// physics. One node of 16 CPUs and 4 GPUs.
    fn data() -> Data {
        Data {
            jobs: vec![
                job(1, "alice", "ml", 4, 0, DAY + 3600, DAY + 7200),
                job(2, "bob", "vision", 2, 2, DAY + 7200, DAY + 9000),
                job(3, "carol", "physics", 8, 0, DAY - 3600, DAY + 3600),
                // Before the period: not counted.
                job(4, "alice", "ml", 16, 0, DAY - 7200, DAY - 3600),
            ],
            nodes: vec![NodeInfo {
                name: "n1".into(),
                cpus: 16,
                gpus: 4,
                memory_mb: 1000,
                ..Default::default()
            }],
            accounts: vec![
                ("root".into(), String::new()),
                ("ml".into(), "root".into()),
                ("vision".into(), "ml".into()),
                ("physics".into(), "root".into()),
                ("idle".into(), "root".into()),
            ],
            account_users: vec![],
            cluster: "drover".into(),
            now: NOW,
            names: Names::default(),
            proper: [("alice".to_string(), "Alice Liddell".to_string())].into(),
        }
    }

    fn run_with(args: &[&str]) -> Exit {
        match parse_args(&s(args), None, NOW, &TimeZone::UTC) {
            Ok(cmd) => render(&cmd, &data(), &TimeZone::UTC),
            Err(e) => e,
        }
    }

    fn out(args: &[&str]) -> String {
        let e = run_with(args);
        assert_eq!((e.code, e.stderr.as_str()), (0, ""), "{args:?}");
        e.stdout
    }

    #[test]
    fn the_default_period_is_yesterday_and_times_round_to_the_hour() {
        let z = TimeZone::UTC;
        assert_eq!(period(None, None, NOW, &z), (DAY, DAY + 86400));
        // 10:29:30 rounds up to 11:00, 10:29:29 down to 10:00; the end is at most now.
        assert_eq!(
            period(Some(DAY + 37770), Some(DAY + 37769 + 86400 * 5), NOW, &z),
            (DAY + 39600, DAY + 86400 + 43200)
        );
        // At least an hour.
        assert_eq!(
            period(Some(DAY), Some(DAY + 60), NOW, &z),
            (DAY, DAY + 3600)
        );
    }

    #[test]
    fn cluster_utilization() {
        // Allocated: 4×3600 + 2×1800 + 8×3600 = 46 800 s = 780 min; reported 16 × 1440.
        assert_eq!(
            out(&["cluster", "utilization"]),
            format!(
                "{DASHES}\n\
                 Cluster Utilization 2026-12-01T00:00:00 - 2026-12-01T23:59:59\n\
                 Usage reported in CPU Minutes\n\
                 {DASHES}\n  \
                 Cluster Allocate     Down PLND Dow     Idle  Planned Reported \n\
                 --------- -------- -------- -------- -------- -------- -------- \n   \
                 drover      780        0        0    22260        0    23040 \n"
            )
        );
        assert_eq!(
            out(&["-P", "-t", "hours", "cluster", "Utilization"])
                .lines()
                .skip(4)
                .collect::<Vec<_>>(),
            [
                "Cluster|Allocated|Down|PLND Down|Idle|Planned|Reported",
                "drover|13|0|0|371|0|384"
            ]
        );
        assert_eq!(
            out(&["-nP", "-t", "percent", "cluster", "utilization"]),
            "drover|3.39%|0.00%|0.00%|96.61%|0.00%|100.00%\n"
        );
        // GPU-hours: bob's 2 GPUs for half an hour, out of 4 GPUs × 24 h.
        assert_eq!(
            out(&[
                "-np",
                "-T",
                "cpu,gres/gpu",
                "-t",
                "hours",
                "cluster",
                "utilization"
            ]),
            "drover|cpu|13|0|0|371|0|384|\ndrover|gres/gpu|1|0|0|95|0|96|\n"
        );
        assert_eq!(
            out(&[
                "-nP",
                "-t",
                "hourper",
                "cluster",
                "utilization",
                "format=cl,al,count"
            ]),
            "drover|13(3.39%)|16\n"
        );
    }

    #[test]
    fn used_gpu_time_is_reported_beside_the_allocated() {
        let mut d = data();
        // bob's 2 GPUs for 30 minutes (60 GPU-minutes) were busy for 30 GPU-minutes.
        d.jobs[1].steps.push(proto::v1::StepInfo {
            step_id: "batch".into(),
            usage: Some(proto::v1::StepUsage {
                gpu: Some(proto::v1::GpuUse {
                    sampled_gpu_ms: 3_600_000,
                    busy_gpu_ms: 1_800_000,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
        let cmd = parse_args(
            &s(&[
                "-nP",
                "-T",
                "gres/gpu,gres/gpuutil",
                "cluster",
                "a",
                "accounts=vision",
            ]),
            None,
            NOW,
            &TimeZone::UTC,
        )
        .unwrap();
        assert_eq!(
            render(&cmd, &d, &TimeZone::UTC).stdout,
            "drover|vision|||gres/gpu|60\ndrover|vision|||gres/gpuutil|30\n\
             drover|vision|bob||gres/gpu|60\ndrover|vision|bob||gres/gpuutil|30\n"
        );
        // Of the cluster's 4 GPUs for a day (5760 GPU-minutes): 30 used.
        let cmd = parse_args(
            &s(&[
                "-nP",
                "-T",
                "gres/gpuutil",
                "cluster",
                "utilization",
                "format=al,reported",
            ]),
            None,
            NOW,
            &TimeZone::UTC,
        )
        .unwrap();
        assert_eq!(render(&cmd, &d, &TimeZone::UTC).stdout, "30|5760\n");
    }

    #[test]
    fn account_utilization_by_user() {
        assert_eq!(
            out(&["cluster", "AccountUtilizationByUser"]),
            format!(
                "{DASHES}\n\
                 Cluster/Account/User Utilization 2026-12-01T00:00:00 - 2026-12-01T23:59:59 (86400 secs)\n\
                 Usage reported in CPU Minutes\n\
                 {DASHES}\n  \
                 Cluster         Account     Login     Proper Name     Used   Energy \n\
                 --------- --------------- --------- --------------- -------- -------- \n   \
                 drover            root                                780        0 \n   \
                 drover              ml                                300        0 \n   \
                 drover              ml     alice   Alice Liddell      240        0 \n   \
                 drover          vision                                 60        0 \n   \
                 drover          vision       bob                       60        0 \n   \
                 drover         physics                                480        0 \n   \
                 drover         physics     carol                      480        0 \n"
            )
        );
        // accounts= keeps the subtree; GPU minutes of bob's job.
        assert_eq!(
            out(&["-nP", "-T", "gres/gpu", "cluster", "a", "accounts=vision"]),
            "drover|vision|||gres/gpu|60\ndrover|vision|bob||gres/gpu|60\n"
        );
        // users= (also a bare word) keeps only user rows.
        assert_eq!(
            out(&[
                "-nP",
                "cluster",
                "AccountUtilizationByUser",
                "carol",
                "format=login,used"
            ]),
            "carol|480\n"
        );
    }

    #[test]
    fn user_utilization_by_account_and_top_usage() {
        assert_eq!(
            out(&["-nP", "cluster", "UserUtilizationByAccount"]),
            "drover|carol||physics|480|0\n\
             drover|alice|Alice Liddell|ml|240|0\n\
             drover|bob||vision|60|0\n"
        );
        let top = out(&["-p", "user", "topusage", "topcount=2", "-t", "percent"]);
        assert_eq!(
            top.lines().collect::<Vec<_>>(),
            [
                DASHES,
                "Top 2 Users 2026-12-01T00:00:00 - 2026-12-01T23:59:59 (86400 secs)",
                "Usage reported in Percentage of Total",
                DASHES,
                "Cluster|Login|Proper Name|Account|Used|Energy|",
                "drover|carol||physics|2.08%|0.00%|",
                "drover|alice|Alice Liddell|ml|1.04%|0.00%|",
            ]
        );
        // Aligned, with TRES rows: Used is 8 wide (values under 10^8 seconds).
        assert_eq!(
            out(&["-n", "-T", "cpu,gres/gpu", "user", "top", "users=bob"]),
            "   drover       bob                          vision            cpu       60 \n   \
             drover       bob                          vision       gres/gpu       60 \n"
        );
    }

    #[test]
    fn job_sizes_by_account() {
        assert_eq!(
            out(&["job", "SizesByAccount"]),
            format!(
                "{DASHES}\n\
                 Job Sizes 2026-12-01T00:00:00 - 2026-12-01T23:59:59 (86400 secs)\n\
                 Time reported in Minutes\n\
                 {DASHES}\n  \
                 Cluster   Account     0-49 CPUs   50-249 CPUs  250-499 CPUs  500-999 CPUs  >= 1000 CPUs % of cluster \n\
                 --------- --------- ------------- ------------- ------------- ------------- ------------- ------------ \n   \
                 drover      idle             0             0             0             0             0        0.00% \n   \
                 drover        ml           300             0             0             0             0       38.46% \n   \
                 drover   physics           480             0             0             0             0       61.54% \n"
            )
        );
        assert_eq!(
            out(&["-nP", "job", "sizes", "grouping=4", "accounts=ml"]),
            "drover|ml|0|240|80.00%\ndrover|vision|60|0|20.00%\n"
        );
        assert_eq!(
            out(&[
                "-nP",
                "job",
                "sizes",
                "grouping=4",
                "accounts=ml",
                "PrintJobCount"
            ]),
            "drover|ml|0|1|50.00%\ndrover|vision|1|0|50.00%\n"
        );
        let e = run_with(&["-T", "cpu,gres/gpu", "job", "sizes"]);
        assert_eq!(e.code, 1);
        assert!(
            e.stderr.contains("only support a single --tres"),
            "{}",
            e.stderr
        );
    }

    #[test]
    fn bad_input_in_slurms_words() {
        let e = run_with(&["cluster", "bogus"]);
        assert_eq!(e.code, 1);
        assert_eq!(
            e.stderr,
            "Not valid report bogus\nValid cluster reports are, \"AccountUtilizationByUser\", \
             \"UserUtilizationByAccount\", \"UserUtilizationByWckey\", \"Utilization\", and \
             \"WCKeyUtilizationByUser\"\n"
        );
        assert_eq!(
            run_with(&["user", "x"]).stderr,
            "Not valid report x\nValid user reports are, \"Top\"\n"
        );
        assert_eq!(run_with(&["bogus"]).stderr, "invalid keyword: bogus\n");
        assert_eq!(run_with(&["-V"]).stdout, args::version_line());
        assert_eq!(run_with(&["--help"]).stdout, HELP);
        assert_eq!(
            run_with(&["cluster"]).stderr,
            "too few arguments for keyword:cluster\n"
        );
        assert_eq!(
            run_with(&["--bogus"]).stderr,
            "sreport: unrecognized option '--bogus'\nTry \"sreport --help\" for more information\n"
        );
        // An unknown condition or field is reported and the report still printed.
        let e = run_with(&["-nP", "cluster", "utilization", "bogus=1", "format=cl,nope"]);
        assert_eq!(e.code, 1);
        assert_eq!(
            e.stderr,
            " Unknown condition: bogus=1\nUse keyword set to modify value\n Unknown field 'nope'\n"
        );
        assert_eq!(e.stdout, "drover\n");
        // A cluster that is not this one has no rows.
        assert_eq!(
            out(&["-nP", "cluster", "utilization", "clusters=other"]),
            ""
        );
    }

    #[test]
    fn formats_and_abbreviations() {
        assert_eq!(TimeFormat::parse("h"), Some(TimeFormat::Hours));
        assert_eq!(TimeFormat::parse("MINPER"), Some(TimeFormat::MinsPer));
        assert_eq!(TimeFormat::parse("min"), Some(TimeFormat::Mins));
        assert_eq!(TimeFormat::parse("x"), None);
        // printf's %.0f rounds half to even, as Rust does.
        assert_eq!(TimeFormat::Mins.value(150, 0), "2");
        assert_eq!(TimeFormat::Mins.value(90, 0), "2");
        assert_eq!(TimeFormat::Percent.value(1, 3), "33.33%");
        assert_eq!(TimeFormat::Mins.usage_width(99_999_999), 8);
        assert_eq!(TimeFormat::Mins.usage_width(100_000_000), 9);
        assert_eq!(TimeFormat::MinsPer.usage_width(0), 17);
        assert!(abbrev("pl", "PlannedDown", 2) && !abbrev("p", "PlannedDown", 2));
        assert!(strncase_eq(
            "UserUtilizationByAccountX",
            "UserUtilizationByAccount",
            18
        ));
        assert!(!strncase_eq("UserUtil", "UserUtilizationByAccount", 18));
        // A field's %N width.
        assert_eq!(
            out(&["-n", "cluster", "utilization", "format=cluster%12"]),
            "      drover \n"
        );
    }
}
