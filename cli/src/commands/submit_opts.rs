//! The job options `sbatch` and `srun` share: their option tables, `#SBATCH` directives,
//! the `SBATCH_*` input variables, `--export`, and the one function that turns the options
//! into the `JobSpec` sent to the controller. Pure: the caller hands in the environment,
//! the working directory, the user, the host and the clock.
//!
//! Precedence is Slurm's: `#SBATCH` lines < input environment variables < command line,
//! by applying the three sources in that order (a later value replaces an earlier one).
//!
//! Where the wire has no word for something, the nearest one is sent: `--time=0` and
//! `--time=UNLIMITED` send 0 (the partition's default time, itself the partition's
//! maximum unless configured), `--mem=0` sends 0 (the partition's default), and unset
//! counts send 0 (unspecified; the model reads them as 1).

use super::util::{CliError, parse_signal, split_words};
use crate::opts::{ArgKind, OptSpec, flag, optional, value};
use model::timespec::{LocalZone, TimeSpec, Toward};
use model::units;
use proto::v1;
use std::sync::LazyLock;

/// Where an option came from; a later source wins.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Source {
    Script,
    Env,
    Cli,
}

/// Options both commands take. Most of the hardware-shaping ones are accepted and
/// ignored, as a cluster without the feature would.
const COMMON: &[OptSpec] = &[
    value("account", Some('A')),
    value("acctg-freq", None),
    value("begin", Some('b')),
    value("bb", None),
    value("bbf", None),
    value("chdir", Some('D')),
    value("cluster-constraint", None),
    value("clusters", Some('M')),
    value("cluster", None),
    value("comment", None),
    value("constraint", Some('C')),
    value("container", None),
    flag("contiguous", None),
    value("core-spec", Some('S')),
    value("cores-per-socket", None),
    value("cpu-freq", None),
    value("cpus-per-gpu", None),
    value("cpus-per-task", Some('c')),
    value("deadline", None),
    value("delay-boot", None),
    value("dependency", Some('d')),
    value("distribution", Some('m')),
    value("error", Some('e')),
    value("exclude", Some('x')),
    optional("exclusive", None),
    value("export", None),
    value("extra-node-info", Some('B')),
    optional("get-user-env", None),
    value("gpu-bind", None),
    value("gpu-freq", None),
    value("gpus", Some('G')),
    value("gpus-per-node", None),
    value("gpus-per-socket", None),
    value("gpus-per-task", None),
    value("gres", None),
    value("gres-flags", None),
    flag("help", Some('h')),
    value("hint", None),
    flag("hold", Some('H')),
    optional("immediate", Some('I')),
    value("input", Some('i')),
    value("job-name", Some('J')),
    value("kill-on-invalid-dep", None),
    value("licenses", Some('L')),
    value("mail-type", None),
    value("mail-user", None),
    value("mcs-label", None),
    value("mem", None),
    value("mem-bind", None),
    value("mem-per-cpu", None),
    value("mem-per-gpu", None),
    value("mincpus", None),
    value("network", None),
    optional("nice", None),
    optional("no-kill", Some('k')),
    flag("no-requeue", None),
    value("nodefile", Some('F')),
    value("nodelist", Some('w')),
    value("nodes", Some('N')),
    value("ntasks", Some('n')),
    value("ntasks-per-core", None),
    value("ntasks-per-gpu", None),
    value("ntasks-per-node", None),
    value("ntasks-per-socket", None),
    value("open-mode", None),
    value("output", Some('o')),
    flag("overcommit", Some('O')),
    flag("oversubscribe", Some('s')),
    value("partition", Some('p')),
    optional("power", None),
    value("prefer", None),
    value("priority", None),
    value("profile", None),
    optional("propagate", None),
    value("qos", Some('q')),
    flag("quiet", Some('Q')),
    flag("reboot", None),
    flag("requeue", None),
    value("reservation", None),
    value("signal", None),
    value("sockets-per-node", None),
    flag("spread-job", None),
    value("switches", None),
    flag("test-only", None),
    value("thread-spec", None),
    value("threads-per-core", None),
    value("time", Some('t')),
    value("time-min", None),
    value("tmp", None),
    value("tres-per-task", None),
    flag("usage", None),
    flag("use-min-nodes", None),
    flag("verbose", Some('v')),
    flag("version", Some('V')),
    value("wait-all-nodes", None),
    value("wckey", None),
];

const SBATCH_ONLY: &[OptSpec] = &[
    value("array", Some('a')),
    value("batch", None),
    value("export-file", None),
    flag("ignore-pbs", None),
    flag("parsable", None),
    flag("wait", Some('W')),
    value("wrap", None),
];

const SRUN_ONLY: &[OptSpec] = &[
    value("accel-bind", None),
    optional("bcast", None),
    optional("compress", None),
    value("cpu-bind", None),
    flag("disable-status", Some('X')),
    value("epilog", None),
    flag("exact", None),
    value("het-group", None),
    value("jobid", None),
    optional("kill-on-bad-exit", Some('K')),
    flag("label", Some('l')),
    value("mpi", None),
    flag("multi-prog", None),
    flag("no-allocate", Some('Z')),
    flag("overlap", None),
    optional("preserve-env", Some('E')),
    value("prolog", None),
    flag("pty", None),
    value("relative", Some('r')),
    optional("send-libs", None),
    value("slurmd-debug", None),
    value("task-epilog", None),
    value("task-prolog", None),
    value("threads", Some('T')),
    flag("unbuffered", Some('u')),
    value("wait", Some('W')),
];

/// Every option `sbatch` takes.
pub static SBATCH_OPTS: LazyLock<Vec<OptSpec>> = LazyLock::new(|| [COMMON, SBATCH_ONLY].concat());
/// Every option `srun` takes.
pub static SRUN_OPTS: LazyLock<Vec<OptSpec>> = LazyLock::new(|| [COMMON, SRUN_ONLY].concat());

/// `sbatch`'s input environment variables and the options they stand for.
pub const SBATCH_ENV: &[(&str, &str)] = &[
    ("SBATCH_ACCOUNT", "account"),
    ("SBATCH_ARRAY_INX", "array"),
    ("SBATCH_CLUSTERS", "clusters"),
    ("SBATCH_CONSTRAINT", "constraint"),
    ("SBATCH_CPUS_PER_GPU", "cpus-per-gpu"),
    ("SBATCH_EXCLUSIVE", "exclusive"),
    ("SBATCH_EXPORT", "export"),
    ("SBATCH_GPUS", "gpus"),
    ("SBATCH_GPUS_PER_NODE", "gpus-per-node"),
    ("SBATCH_GPUS_PER_TASK", "gpus-per-task"),
    ("SBATCH_GRES", "gres"),
    ("SBATCH_JOB_NAME", "job-name"),
    ("SBATCH_MEM_PER_CPU", "mem-per-cpu"),
    ("SBATCH_MEM_PER_GPU", "mem-per-gpu"),
    ("SBATCH_MEM_PER_NODE", "mem"),
    ("SBATCH_NO_REQUEUE", "no-requeue"),
    ("SBATCH_OPEN_MODE", "open-mode"),
    ("SBATCH_PARTITION", "partition"),
    ("SBATCH_QOS", "qos"),
    ("SBATCH_REQUEUE", "requeue"),
    ("SBATCH_RESERVATION", "reservation"),
    ("SBATCH_SIGNAL", "signal"),
    ("SBATCH_TIMELIMIT", "time"),
    ("SBATCH_WAIT", "wait"),
    ("SBATCH_WCKEY", "wckey"),
];

/// The options named by input environment variables, in table order. A flag option is
/// set by its variable being present.
pub fn env_options(
    env: &[(String, String)],
    table: &[(&str, &'static str)],
    specs: &[OptSpec],
) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for (var, opt) in table {
        if let Some((_, v)) = env.iter().find(|(k, _)| k == var) {
            let is_flag = specs
                .iter()
                .any(|s| s.long == *opt && s.arg == ArgKind::None);
            out.push((*opt, if is_flag { String::new() } else { v.clone() }));
        }
    }
    out
}

/// GPUs asked for: `[type:]count`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Gpu {
    pub gpu_type: String,
    pub count: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MemKind {
    Node,
    Cpu,
    Gpu,
}

/// The options as typed values, after every source has been applied.
#[derive(Debug, Clone, Default)]
pub struct SubmitOpts {
    pub job_name: Option<String>,
    pub output: Option<String>,
    pub error: Option<String>,
    pub input: Option<String>,
    pub chdir: Option<String>,
    pub partition: Option<String>,
    pub account: Option<String>,
    pub qos: Option<String>,
    /// `Some(None)`: UNLIMITED.
    pub time_limit: Option<Option<u32>>,
    pub cpus_per_task: Option<u32>,
    pub ntasks: Option<u32>,
    pub nodes: Option<u32>,
    pub ntasks_per_node: Option<u32>,
    mem: Vec<(MemKind, u64, Source)>,
    pub gpus: Option<Gpu>,
    pub gpus_per_node: Option<Gpu>,
    pub gpus_per_task: Option<Gpu>,
    /// `Some(None)`: `--gres=none`.
    pub gres: Option<Option<Gpu>>,
    pub cpus_per_gpu: Option<u32>,
    pub array: Option<String>,
    pub dependency: Option<String>,
    pub hold: bool,
    pub export: Option<String>,
    pub open_mode_append: Option<bool>,
    pub signal: Option<v1::SignalSpec>,
    pub requeue: Option<bool>,
    pub comment: Option<String>,
    pub wckey: Option<String>,
    pub begin: Option<String>,
    pub constraint: Option<String>,
    pub nodelist: Option<String>,
    pub exclude: Option<String>,
    pub reservation: Option<String>,
    pub exclusive: bool,
    pub nice: Option<i32>,
    pub kill_on_invalid_dep: Option<bool>,
    pub quiet: bool,
    pub verbose: u32,
    pub clusters: Option<String>,
    pub help: bool,
    pub usage: bool,
    pub version: bool,
    // sbatch
    pub parsable: bool,
    pub wait: bool,
    pub test_only: bool,
    pub wrap: Option<String>,
    // srun
    pub unbuffered: bool,
    pub label: bool,
    pub jobid: Option<String>,
    pub cpu_bind: Option<String>,
}

fn positive(prog: &str, name: &str, val: &str) -> Result<u32, CliError> {
    match val.trim().parse::<i64>() {
        Ok(n) if n > 0 && n <= i64::from(u32::MAX) => Ok(n as u32),
        _ => Err(CliError::error(
            prog,
            format!("Invalid numeric value \"{val}\" for {name}."),
        )),
    }
}

fn gres_error(prog: &str) -> CliError {
    CliError::error(prog, "Invalid generic resource (gres) specification")
}

impl SubmitOpts {
    /// Applies options in order from one source.
    pub fn apply_all(
        &mut self,
        prog: &str,
        opts: &[(&'static str, String)],
        source: Source,
    ) -> Result<(), CliError> {
        for (k, v) in opts {
            self.apply(prog, k, v, source)?;
        }
        Ok(())
    }

    /// Applies one option; a bad value is Slurm's error line.
    pub fn apply(
        &mut self,
        prog: &str,
        key: &str,
        val: &str,
        source: Source,
    ) -> Result<(), CliError> {
        let s = || Some(val.to_string());
        let bad = |what: &str| {
            CliError::error(prog, format!("Invalid --{what} specification")).with_code(255)
        };
        match key {
            "job-name" => self.job_name = s(),
            "output" => self.output = s(),
            "error" => self.error = s(),
            "input" => self.input = s(),
            "chdir" => self.chdir = s(),
            "partition" => self.partition = s(),
            "account" => self.account = s(),
            "qos" => self.qos = s(),
            "time" => {
                let t = units::parse_time_limit(val).map_err(|_| bad("time"))?;
                // Slurm reads a limit of 0 as no limit.
                self.time_limit = Some(t.filter(|m| *m > 0));
            }
            "cpus-per-task" => self.cpus_per_task = Some(positive(prog, "--cpus-per-task", val)?),
            "ntasks" => self.ntasks = Some(positive(prog, "--ntasks", val)?),
            "ntasks-per-node" => {
                self.ntasks_per_node = Some(positive(prog, "--ntasks-per-node", val)?)
            }
            "cpus-per-gpu" => self.cpus_per_gpu = Some(positive(prog, "--cpus-per-gpu", val)?),
            "nodes" => self.nodes = Some(parse_node_count(prog, val)?),
            "mem" | "mem-per-cpu" | "mem-per-gpu" => {
                let mb = units::parse_memory_mb(val).map_err(|_| bad(key))?;
                let kind = match key {
                    "mem" => MemKind::Node,
                    "mem-per-cpu" => MemKind::Cpu,
                    _ => MemKind::Gpu,
                };
                self.mem.push((kind, mb, source));
            }
            "gpus" => self.gpus = Some(parse_gpu_count(val).ok_or_else(|| gres_error(prog))?),
            "gpus-per-node" => {
                self.gpus_per_node = Some(parse_gpu_count(val).ok_or_else(|| gres_error(prog))?)
            }
            "gpus-per-task" => {
                self.gpus_per_task = Some(parse_gpu_count(val).ok_or_else(|| gres_error(prog))?)
            }
            "gres" => self.gres = Some(parse_gres(val).ok_or_else(|| gres_error(prog))?),
            "array" => self.array = s(),
            "dependency" => self.dependency = s(),
            "hold" => self.hold = true,
            "export" => self.export = s(),
            "open-mode" => {
                self.open_mode_append = Some(match val.chars().next() {
                    Some('a' | 'A') => true,
                    Some('t' | 'T') => false,
                    _ => return Err(bad("open-mode")),
                })
            }
            "signal" => self.signal = Some(parse_signal_spec(val).ok_or_else(|| bad("signal"))?),
            "requeue" => self.requeue = Some(true),
            "no-requeue" => self.requeue = Some(false),
            "comment" => self.comment = s(),
            "wckey" => self.wckey = s(),
            "begin" => {
                TimeSpec::parse(val).map_err(|_| bad("begin"))?;
                self.begin = s();
            }
            "constraint" => self.constraint = s(),
            "nodelist" => self.nodelist = s(),
            "exclude" => self.exclude = s(),
            "reservation" => self.reservation = s(),
            "exclusive" => self.exclusive = true,
            // Slurm reads a bare --nice as 100 and a non-number as 0.
            "nice" => {
                self.nice = Some(if val.is_empty() {
                    100
                } else {
                    val.trim().parse().unwrap_or(0)
                })
            }
            "kill-on-invalid-dep" => {
                self.kill_on_invalid_dep = Some(match val.to_ascii_lowercase().as_str() {
                    "yes" | "y" | "1" => true,
                    "no" | "n" | "0" => false,
                    _ => return Err(bad("kill-on-invalid-dep")),
                })
            }
            "quiet" => self.quiet = true,
            "verbose" => self.verbose += 1,
            "clusters" | "cluster" => self.clusters = s(),
            "help" => self.help = true,
            "usage" => self.usage = true,
            "version" => self.version = true,
            "parsable" => self.parsable = true,
            // sbatch's --wait is a flag; srun's takes seconds.
            "wait" if val.is_empty() => self.wait = true,
            "test-only" => self.test_only = true,
            "wrap" => self.wrap = s(),
            "unbuffered" => self.unbuffered = true,
            "label" => self.label = true,
            "jobid" => self.jobid = s(),
            "cpu-bind" => self.cpu_bind = s(),
            _ => {}
        }
        Ok(())
    }

    /// The memory request in force: the one from the strongest source; two kinds on the
    /// command line are an error, as in Slurm.
    fn memory(&self, prog: &str) -> Result<Option<(MemKind, u64)>, CliError> {
        let cli_kinds: Vec<MemKind> = self
            .mem
            .iter()
            .filter(|m| m.2 == Source::Cli)
            .map(|m| m.0)
            .collect();
        if cli_kinds.iter().any(|k| *k != cli_kinds[0]) {
            return Err(CliError::raw(format!(
                "{prog}: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."
            )));
        }
        let best = self
            .mem
            .iter()
            .enumerate()
            .max_by_key(|(i, m)| (m.2, *i))
            .map(|(_, m)| (m.0, m.1));
        Ok(best)
    }
}

/// `N` or `min-max` (the minimum is used).
fn parse_node_count(prog: &str, val: &str) -> Result<u32, CliError> {
    let min = val.split_once('-').map_or(val, |(lo, _)| lo).trim();
    let invalid =
        || CliError::error(prog, format!("\"{val}\" is not a valid node count")).with_code(255);
    let n: u32 = min.parse().map_err(|_| invalid())?;
    if let Some((_, hi)) = val.split_once('-') {
        let hi: u32 = hi.trim().parse().map_err(|_| invalid())?;
        if hi < n {
            return Err(invalid());
        }
    }
    if n == 0 {
        return Err(CliError::error(
            prog,
            "Batch job submission failed: Node count specification invalid",
        ));
    }
    Ok(n)
}

/// `--gpus`-style counts: `2`, `a100:2`.
pub fn parse_gpu_count(text: &str) -> Option<Gpu> {
    let parts: Vec<&str> = text.trim().split(':').collect();
    let (ty, n) = match parts.as_slice() {
        [n] => ("", *n),
        [ty, n] if !ty.is_empty() => (*ty, *n),
        _ => return None,
    };
    let count = n.parse::<u32>().ok()?;
    Some(Gpu {
        gpu_type: ty.to_string(),
        count,
    })
}

/// `--gres`: `gpu`, `gpu:2`, `gpu:a100:1`, with an optional `gres:`/`gres/` prefix, or
/// `none`. Only GPUs exist here; any other resource is an error.
pub fn parse_gres(text: &str) -> Option<Option<Gpu>> {
    if text.trim().eq_ignore_ascii_case("none") {
        return Some(None);
    }
    let mut found: Option<Gpu> = None;
    for item in text.split(',') {
        let item = item.trim();
        let item = item
            .strip_prefix("gres:")
            .or_else(|| item.strip_prefix("gres/"))
            .unwrap_or(item);
        let parts: Vec<&str> = item.split(':').collect();
        let gpu = match parts.as_slice() {
            ["gpu"] => Gpu {
                gpu_type: String::new(),
                count: 1,
            },
            ["gpu", n] if n.parse::<u32>().is_ok() => Gpu {
                gpu_type: String::new(),
                count: n.parse().ok()?,
            },
            ["gpu", ty] => Gpu {
                gpu_type: ty.to_string(),
                count: 1,
            },
            ["gpu", ty, n] if !ty.is_empty() => Gpu {
                gpu_type: ty.to_string(),
                count: n.parse().ok()?,
            },
            _ => return None,
        };
        if found.replace(gpu).is_some() {
            return None;
        }
    }
    found.map(Some)
}

/// `--signal=[{R|B}:]sig[@seconds]`; the time defaults to 60 s.
pub fn parse_signal_spec(text: &str) -> Option<v1::SignalSpec> {
    let (flags, rest) = match text.split_once(':') {
        Some((f, r)) if !f.is_empty() && f.chars().all(|c| matches!(c, 'R' | 'B' | 'r' | 'b')) => {
            (f, r)
        }
        Some(_) => return None,
        None => ("", text),
    };
    let (sig, secs) = match rest.split_once('@') {
        Some((s, t)) => (s, t.trim().parse::<u32>().ok().filter(|t| *t <= 0xffff)?),
        None => (rest, 60),
    };
    Some(v1::SignalSpec {
        signal: parse_signal(sig)?,
        seconds_before_end: secs,
        batch_only: flags.contains(['B', 'b']),
    })
}

/// The environment a job gets under `--export`: `ALL` (the default) is everything;
/// `NONE` only `SLURM_*` variables; `ALL,A=1,B` everything plus the listed settings;
/// `A,B=x` only `SLURM_*` plus the listed names (taken from here) and settings.
pub fn export_env(spec: Option<&str>, env: &[(String, String)]) -> Vec<(String, String)> {
    let slurm_only = || {
        env.iter()
            .filter(|(k, _)| k.starts_with("SLURM_"))
            .cloned()
            .collect::<Vec<_>>()
    };
    let Some(spec) = spec.map(str::trim).filter(|s| !s.is_empty()) else {
        return env.to_vec();
    };
    let mut tokens: Vec<&str> = spec.split(',').filter(|t| !t.is_empty()).collect();
    let mut out = match tokens.first().map(|t| t.to_ascii_uppercase()) {
        Some(t) if t == "ALL" => {
            tokens.remove(0);
            env.to_vec()
        }
        Some(t) if t == "NONE" || t == "NIL" => {
            tokens.remove(0);
            slurm_only()
        }
        _ => slurm_only(),
    };
    for tok in tokens {
        let (name, val) = match tok.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (tok.to_string(), None),
        };
        let val = match val {
            Some(v) => v,
            None => match env.iter().find(|(k, _)| *k == name) {
                Some((_, v)) => v.clone(),
                None => continue,
            },
        };
        match out.iter_mut().find(|(k, _)| *k == name) {
            Some(slot) => slot.1 = val,
            None => out.push((name, val)),
        }
    }
    out
}

/// The `#SBATCH` words of a script: from lines that start with `#SBATCH` before the first
/// line that is neither blank nor a comment. Words split at blanks; double or single
/// quotes group, a backslash escapes, and an unquoted `#` starts a comment.
pub fn directive_words(script: &str) -> Vec<String> {
    let mut words = Vec::new();
    for line in script.lines() {
        if let Some(rest) = line.strip_prefix("#SBATCH") {
            words.extend(split_words(rest, true));
            continue;
        }
        let t = line.trim_start();
        if !t.is_empty() && !t.starts_with('#') {
            break;
        }
    }
    words
}

/// What the request is built from besides the options.
pub struct SubmitCtx<'a> {
    pub env: &'a [(String, String)],
    pub cwd: &'a str,
    pub user: &'a str,
    pub uid: u32,
    pub gid: u32,
    pub host: &'a str,
    pub now: i64,
    pub max_array_size: u32,
    /// The local calendar `--begin` is read in.
    pub zone: &'a dyn LocalZone,
}

/// `none` is /dev/null, as in Slurm.
fn io_path(p: &Option<String>) -> String {
    match p.as_deref() {
        Some(p) if p.eq_ignore_ascii_case("none") => "/dev/null".into(),
        Some(p) => p.to_string(),
        None => String::new(),
    }
}

/// Builds the job description from the applied options.
pub fn build_spec(
    o: &SubmitOpts,
    prog: &str,
    ctx: &SubmitCtx,
    script: String,
    script_args: Vec<String>,
    default_name: &str,
) -> Result<v1::JobSpec, CliError> {
    let work_dir = match o.chdir.as_deref() {
        Some(d) if d.starts_with('/') => d.to_string(),
        Some(d) => format!("{}/{}", ctx.cwd.trim_end_matches('/'), d),
        None => ctx.cwd.to_string(),
    };
    let array = match o.array.as_deref() {
        Some(a) => Some(model::job::parse_array(a, ctx.max_array_size).map_err(|_| {
            CliError::error(
                prog,
                "Batch job submission failed: Invalid job array specification",
            )
        })?),
        None => None,
    };
    let begin_time = match o.begin.as_deref() {
        Some(b) => {
            let b = TimeSpec::parse(b).map_err(|_| {
                CliError::error(prog, "Invalid --begin specification").with_code(255)
            })?;
            b.resolve(ctx.now, Toward::Future, ctx.zone)
        }
        None => 0,
    };
    let num_nodes = o
        .nodes
        .unwrap_or_else(|| match (o.ntasks, o.ntasks_per_node) {
            (Some(n), Some(per)) => n.div_ceil(per),
            _ => 0,
        });
    let num_tasks = o
        .ntasks
        .or_else(|| o.ntasks_per_node.map(|p| p * num_nodes.max(1)))
        .or(o.nodes)
        .unwrap_or(0);
    let gres = o.gres.clone().flatten();
    let gpu_type = [&o.gpus, &o.gpus_per_node, &o.gpus_per_task, &gres]
        .into_iter()
        .flatten()
        .map(|g| g.gpu_type.clone())
        .find(|t| !t.is_empty())
        .unwrap_or_default();
    let gpus = match (&o.gpus, &o.gpus_per_task) {
        (Some(g), _) => g.count,
        (None, Some(g)) => g.count * num_tasks.max(1),
        _ => 0,
    };
    let gpus_per_node = o
        .gpus_per_node
        .as_ref()
        .or(gres.as_ref())
        .map(|g| g.count)
        .unwrap_or(0);
    let gpus_each_node = if gpus_per_node > 0 {
        gpus_per_node
    } else {
        gpus.div_ceil(num_nodes.max(1))
    };
    let total_gpus = gpus.max(gpus_per_node * num_nodes.max(1));
    let cpus_per_task = match (o.cpus_per_task, o.cpus_per_gpu) {
        (Some(c), _) => c,
        (None, Some(per_gpu)) if total_gpus > 0 => {
            (per_gpu * total_gpus).div_ceil(num_tasks.max(1))
        }
        _ => 0,
    };
    let (mem_per_node_mb, mem_per_cpu_mb) = match o.memory(prog)? {
        Some((MemKind::Node, mb)) => (mb, 0),
        Some((MemKind::Cpu, mb)) => (0, mb),
        Some((MemKind::Gpu, mb)) => (mb * u64::from(gpus_each_node.max(1)), 0),
        None => (0, 0),
    };
    let env = export_env(o.export.as_deref(), ctx.env)
        .into_iter()
        .map(|(name, value)| v1::EnvVar { name, value })
        .collect();
    Ok(v1::JobSpec {
        name: o
            .job_name
            .clone()
            .unwrap_or_else(|| default_name.to_string()),
        uid: ctx.uid,
        gid: ctx.gid,
        user: ctx.user.to_string(),
        account: o.account.clone().unwrap_or_default(),
        partition: o.partition.clone().unwrap_or_default(),
        qos: o.qos.clone().unwrap_or_default(),
        script,
        script_args,
        work_dir,
        env,
        stdout_pattern: io_path(&o.output),
        stderr_pattern: io_path(&o.error),
        stdin_path: io_path(&o.input),
        open_mode_append: o.open_mode_append.unwrap_or(false),
        num_nodes,
        num_tasks,
        cpus_per_task,
        ntasks_per_node: o.ntasks_per_node.unwrap_or(0),
        mem_per_node_mb,
        mem_per_cpu_mb,
        gpus,
        gpus_per_node,
        gpu_type,
        time_limit_min: o.time_limit.flatten().unwrap_or(0),
        signal: o.signal,
        requeue: o.requeue.unwrap_or(false),
        comment: o.comment.clone().unwrap_or_default(),
        wckey: o.wckey.clone().unwrap_or_default(),
        begin_time,
        hold: o.hold,
        dependency: o.dependency.clone().unwrap_or_default(),
        array: array.map(|a| v1::ArraySpec {
            task_ids: a.task_ids,
            max_running: a.max_running,
        }),
        submit_host: ctx.host.to_string(),
        reservation: o.reservation.clone().unwrap_or_default(),
        constraint: o.constraint.clone().unwrap_or_default(),
        nodelist: o.nodelist.clone().unwrap_or_default(),
        exclude: o.exclude.clone().unwrap_or_default(),
        exclusive: o.exclusive,
        nice: o.nice.unwrap_or(0),
        kill_on_invalid_dep: o.kill_on_invalid_dep.unwrap_or(false),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    // 2026-11-30T04:50:16Z
    pub const NOW: i64 = 1_796_014_216;

    fn begin(text: &str) -> i64 {
        TimeSpec::parse(text)
            .unwrap()
            .resolve(NOW, Toward::Future, &jiff::tz::TimeZone::UTC)
    }

    fn at(y: i16, mo: i8, d: i8, h: i8, mi: i8, s: i8) -> i64 {
        jiff::tz::TimeZone::UTC.unix(jiff::civil::date(y, mo, d).at(h, mi, s, 0))
    }

    #[test]
    fn begin_forms() {
        assert_eq!(begin("now"), NOW);
        assert_eq!(begin("now+60"), NOW + 60);
        assert_eq!(begin("now+1hour"), NOW + 3600);
        assert_eq!(begin("now+10minutes"), NOW + 600);
        assert_eq!(begin("now+2days"), NOW + 2 * 86400);
        assert_eq!(begin("now+1week"), NOW + 7 * 86400);
        assert_eq!(begin("16:00"), at(2026, 11, 30, 16, 0, 0));
        // Already past today: tomorrow.
        assert_eq!(begin("04:00"), at(2026, 12, 1, 4, 0, 0));
        assert_eq!(begin("4:30PM"), at(2026, 11, 30, 16, 30, 0));
        assert_eq!(begin("2026-12-01"), at(2026, 12, 1, 0, 0, 0));
        assert_eq!(begin("2026-12-01T10:00"), at(2026, 12, 1, 10, 0, 0));
        assert_eq!(begin("2026-12-01T10:00:05"), at(2026, 12, 1, 10, 0, 5));
        assert_eq!(begin("tomorrow"), at(2026, 12, 1, 0, 0, 0));
        assert_eq!(begin("midnight"), at(2026, 12, 1, 0, 0, 0));
        assert_eq!(begin("teatime"), at(2026, 11, 30, 16, 0, 0));
        assert_eq!(begin("noon"), at(2026, 11, 30, 12, 0, 0));
        assert_eq!(begin("12/01"), at(2026, 12, 1, 0, 0, 0));
        assert_eq!(begin("1201"), at(2026, 12, 1, 0, 0, 0));
        assert_eq!(begin("12/24/27"), at(2027, 12, 24, 0, 0, 0));
        for bad in [
            "garbage",
            "now+",
            "now+5parsecs",
            "25:00",
            "2026-13-01",
            "2026-12-01Tx",
            "",
        ] {
            assert!(TimeSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn signal_specs() {
        let s = parse_signal_spec("USR2@90").unwrap();
        assert_eq!(
            (s.signal, s.seconds_before_end, s.batch_only),
            (libc::SIGUSR2, 90, false)
        );
        let s = parse_signal_spec("B:SIGTERM").unwrap();
        assert_eq!(
            (s.signal, s.seconds_before_end, s.batch_only),
            (libc::SIGTERM, 60, true)
        );
        let s = parse_signal_spec("R:10@5").unwrap();
        assert_eq!(
            (s.signal, s.seconds_before_end, s.batch_only),
            (10, 5, false)
        );
        for bad in ["FOO", "USR2@x", "X:USR2", "USR2@70000", "", "@5"] {
            assert!(parse_signal_spec(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn gpu_forms() {
        assert_eq!(
            parse_gpu_count("2"),
            Some(Gpu {
                gpu_type: "".into(),
                count: 2
            })
        );
        assert_eq!(
            parse_gpu_count("a100:4"),
            Some(Gpu {
                gpu_type: "a100".into(),
                count: 4
            })
        );
        assert_eq!(parse_gpu_count("x:y:z"), None);
        assert_eq!(parse_gpu_count("two"), None);
        assert_eq!(
            parse_gres("gpu:2"),
            Some(Some(Gpu {
                gpu_type: "".into(),
                count: 2
            }))
        );
        assert_eq!(
            parse_gres("gpu:a100:1"),
            Some(Some(Gpu {
                gpu_type: "a100".into(),
                count: 1
            }))
        );
        assert_eq!(
            parse_gres("gpu"),
            Some(Some(Gpu {
                gpu_type: "".into(),
                count: 1
            }))
        );
        assert_eq!(
            parse_gres("gres:gpu:3"),
            Some(Some(Gpu {
                gpu_type: "".into(),
                count: 3
            }))
        );
        assert_eq!(parse_gres("none"), Some(None));
        assert_eq!(parse_gres("foo:1"), None);
        assert_eq!(parse_gres("gpu:a100:x"), None);
        assert_eq!(parse_gres("gpu:1,gpu:2"), None);
    }

    #[test]
    fn export_forms() {
        let env: Vec<(String, String)> = [("HOME", "/h"), ("PATH", "/bin"), ("SLURM_X", "1")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let names = |v: Vec<(String, String)>| {
            v.into_iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(export_env(None, &env)),
            ["HOME=/h", "PATH=/bin", "SLURM_X=1"]
        );
        assert_eq!(
            names(export_env(Some("ALL"), &env)),
            ["HOME=/h", "PATH=/bin", "SLURM_X=1"]
        );
        assert_eq!(names(export_env(Some("NONE"), &env)), ["SLURM_X=1"]);
        assert_eq!(
            names(export_env(Some("ALL,HOME=/x,NEW=1"), &env)),
            ["HOME=/x", "PATH=/bin", "SLURM_X=1", "NEW=1"]
        );
        assert_eq!(
            names(export_env(Some("PATH,FOO=bar,MISSING"), &env)),
            ["SLURM_X=1", "PATH=/bin", "FOO=bar"]
        );
    }

    #[test]
    fn constraint_directives_keep_slurm_operators() {
        let script = "#!/bin/sh\n#SBATCH -C \"(a100|h100)&ib\" # GPU nodes\n#SBATCH --constraint=x,y\ntrue\n";
        assert_eq!(
            directive_words(script),
            ["-C", "(a100|h100)&ib", "--constraint=x,y"]
        );
    }

    #[test]
    fn directive_words_stop_at_the_first_command() {
        let script = "#!/bin/bash\n#SBATCH -J dask-worker\n#SBATCH --mem=954M # a comment\n\n# plain comment\n#SBATCH --comment=\"two words\" -t 00:10:00\necho hi\n#SBATCH --late\n";
        assert_eq!(
            directive_words(script),
            [
                "-J",
                "dask-worker",
                "--mem=954M",
                "--comment=two words",
                "-t",
                "00:10:00"
            ]
        );
        assert_eq!(
            directive_words("#!/bin/sh\n  #SBATCH -p x\n"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn option_values_and_errors() {
        let mut o = SubmitOpts::default();
        let e = |o: &mut SubmitOpts, k: &str, v: &str| {
            o.apply("sbatch", k, v, Source::Cli).unwrap_err().lines
        };
        assert_eq!(
            e(&mut o, "time", "abc"),
            ["sbatch: error: Invalid --time specification"]
        );
        assert_eq!(
            e(&mut o, "mem", "1X"),
            ["sbatch: error: Invalid --mem specification"]
        );
        assert_eq!(
            e(&mut o, "mem-per-cpu", "x"),
            ["sbatch: error: Invalid --mem-per-cpu specification"]
        );
        assert_eq!(
            e(&mut o, "ntasks", "0"),
            ["sbatch: error: Invalid numeric value \"0\" for --ntasks."]
        );
        assert_eq!(
            e(&mut o, "ntasks", "-1"),
            ["sbatch: error: Invalid numeric value \"-1\" for --ntasks."]
        );
        assert_eq!(
            e(&mut o, "cpus-per-task", "x"),
            ["sbatch: error: Invalid numeric value \"x\" for --cpus-per-task."]
        );
        assert_eq!(
            e(&mut o, "nodes", "x"),
            ["sbatch: error: \"x\" is not a valid node count"]
        );
        assert_eq!(
            e(&mut o, "gpus", "x:y:z"),
            ["sbatch: error: Invalid generic resource (gres) specification"]
        );
        assert_eq!(
            e(&mut o, "gres", "foo:1"),
            ["sbatch: error: Invalid generic resource (gres) specification"]
        );
        assert_eq!(
            e(&mut o, "signal", "FOO"),
            ["sbatch: error: Invalid --signal specification"]
        );
        assert_eq!(
            e(&mut o, "begin", "garbage"),
            ["sbatch: error: Invalid --begin specification"]
        );
        assert_eq!(
            e(&mut o, "open-mode", "x"),
            ["sbatch: error: Invalid --open-mode specification"]
        );
        assert_eq!(
            e(&mut o, "kill-on-invalid-dep", "maybe"),
            ["sbatch: error: Invalid --kill-on-invalid-dep specification"]
        );
        assert_eq!(
            o.apply("sbatch", "time", "abc", Source::Cli)
                .unwrap_err()
                .code,
            255
        );
        assert_eq!(
            o.apply("sbatch", "ntasks", "x", Source::Cli)
                .unwrap_err()
                .code,
            1
        );
        o.apply("sbatch", "time", "5", Source::Cli).unwrap();
        assert_eq!(o.time_limit, Some(Some(5)));
        o.apply("sbatch", "time", "0", Source::Cli).unwrap();
        assert_eq!(o.time_limit, Some(None));
        o.apply("sbatch", "nodes", "2-4", Source::Cli).unwrap();
        assert_eq!(o.nodes, Some(2));
        o.apply("sbatch", "nice", "", Source::Cli).unwrap();
        assert_eq!(o.nice, Some(100));
    }

    #[test]
    fn memory_precedence() {
        let mut o = SubmitOpts::default();
        o.apply("sbatch", "mem-per-cpu", "100", Source::Script)
            .unwrap();
        o.apply("sbatch", "mem", "1G", Source::Cli).unwrap();
        assert_eq!(o.memory("sbatch").unwrap(), Some((MemKind::Node, 1024)));
        o.apply("sbatch", "mem-per-cpu", "1G", Source::Cli).unwrap();
        assert_eq!(
            o.memory("sbatch").unwrap_err().lines,
            ["sbatch: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."]
        );
    }
}
