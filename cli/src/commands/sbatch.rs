//! `sbatch`: submits a batch script.
//!
//! The script comes from a file argument, from stdin (no argument, or `/dev/stdin`), or
//! from `--wrap=CMD`; its text travels in the request, so the file may be deleted as soon
//! as sbatch returns. Options come from `#SBATCH` lines, then `SBATCH_*` variables, then
//! the command line, each overriding the one before. On success it prints
//! `Submitted batch job N` (or `N` with `--parsable`); `--wait` then follows the job to
//! its end and exits with its exit code; `--test-only` asks for an estimate and stores
//! nothing.
//!
//! `prepare` is the pure part (arguments, script text and environment in, request out);
//! `run` adds the files, the clock and the controller.

use super::submit_opts::{
    self, Command, Source, SubmitCtx, SubmitOpts, build_spec, directive_words,
};
use crate::args::Info;
use crate::calls;
use crate::exit::Exit;
use crate::jobs;
use crate::times;
use crate::{client, opts};
use proto::v1;
use std::io::Read;
use std::process::ExitCode;

const PROG: &str = "sbatch";

/// What the command line asks for.
#[derive(Debug)]
pub enum Prepared {
    Info(Info),
    Submit(Box<Submission>),
}

/// A request ready to send, with how to report it.
#[derive(Debug)]
pub struct Submission {
    pub spec: v1::JobSpec,
    /// A heterogeneous job's components after the first (`spec`).
    pub het_components: Vec<v1::JobSpec>,
    pub parsable: bool,
    pub wait: bool,
    pub test_only: bool,
    pub quiet: bool,
    pub clusters: Option<String>,
}

/// What a component of a heterogeneous job other than the first runs on its first
/// node: nothing but a wait, which holds its allocation until its leader ends.
pub(crate) const HET_COMPONENT_SCRIPT: &str = "#!/bin/sh\n# A component of a heterogeneous job: it holds its allocation.\nexec sleep infinity\n";

/// The `#SBATCH` words of each component of a heterogeneous job, parted by `hetjob`
/// (or its older name `packjob`); one component for a plain job.
fn het_components(words: Vec<String>) -> Vec<Vec<String>> {
    let mut components = vec![Vec::new()];
    for word in words {
        if word == "hetjob" || word == "packjob" {
            components.push(Vec::new());
        } else if let Some(last) = components.last_mut() {
            last.push(word);
        }
    }
    components
}

/// Options as given, by their long name.
type GivenOptions = Vec<(&'static str, String)>;

/// The command line of a heterogeneous job, `OPTIONS(0) : OPTIONS(1) ... script
/// args`: the parse of the last group (which names the script, and whose arguments may
/// hold a `:` of their own), and each group's options, the first's first. A plain
/// command line is one group.
fn command_line_components(args: &[String]) -> Result<(opts::Parsed, Vec<GivenOptions>), Exit> {
    let parse = |words: &[String]| {
        opts::parse(submit_opts::specs(Command::Sbatch), words, true)
            .map_err(|e| Exit::usage(PROG, &e).with_code(255))
    };
    let mut groups = Vec::new();
    let mut rest = args;
    loop {
        if let Some(cut) = rest.iter().position(|a| a == ":") {
            let group = parse(&rest[..cut])?;
            if group.positional.is_empty() {
                groups.push(group.opts);
                rest = &rest[cut + 1..];
                continue;
            }
        }
        let last = parse(rest)?;
        groups.push(last.opts.clone());
        return Ok((last, groups));
    }
}

/// One component's `#SBATCH` words as options; a stray word is refused.
fn directive_options(words: &[String]) -> Result<GivenOptions, Exit> {
    let parsed = opts::parse(submit_opts::specs(Command::Sbatch), words, false)
        .map_err(|e| Exit::usage(PROG, &e).with_code(255))?;
    if let Some(stray) = parsed.positional.first() {
        return Err(Exit::error(
            PROG,
            format!("Invalid directive found in batch script: {stray}"),
        )
        .with_code(255));
    }
    Ok(parsed.opts)
}

/// Checks a script as Slurm does before anything is sent.
pub fn check_script(script: &str) -> Result<(), Exit> {
    let err = |lines: &[&str]| {
        Exit::raw(
            lines
                .iter()
                .map(|l| format!("{PROG}: error: {l}"))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    };
    if script.is_empty() {
        return Err(err(&["Batch script is empty!"]));
    }
    if script.trim().is_empty() {
        return Err(err(&["Batch script contains only whitespace!"]));
    }
    if !script.starts_with("#!") {
        return Err(err(&[
            "This does not look like a batch script.  The first",
            "line must start with #! followed by the path to an interpreter.",
            "For instance: #!/bin/sh",
        ]));
    }
    if script.contains("\r\n") {
        return Err(err(&[
            "Batch script contains DOS line breaks (\\r\\n)",
            "instead of expected UNIX line breaks (\\n).",
        ]));
    }
    Ok(())
}

/// `--bbf`: the file's text put into the script after its `#!` line (ended by a line
/// break), as Slurm's sbatch does (`_add_bb_to_script`).
pub fn add_burst_buffer_file(script: &str, bbf: &str) -> String {
    if bbf.is_empty() {
        return script.to_string();
    }
    let mut bbf = bbf.to_string();
    if !bbf.ends_with('\n') {
        bbf.push('\n');
    }
    if !script.starts_with('#') {
        return format!("{bbf}{script}");
    }
    match script.split_once('\n') {
        Some((first, rest)) => format!("{first}\n{bbf}{rest}"),
        None => format!("{script}\n{bbf}"),
    }
}

/// The script `--wrap` stands for.
pub fn wrap_script(cmd: &str) -> String {
    format!("#!/bin/sh\n# This script was created by sbatch --wrap.\n\n{cmd}\n")
}

/// Arguments, script and environment → the request. `read_script` is given the script
/// path (`None`: stdin) and returns its text or the error to print.
pub fn prepare(
    args: &[String],
    ctx: &SubmitCtx,
    read_script: &mut dyn FnMut(Option<&str>) -> Result<String, Exit>,
) -> Result<Prepared, Exit> {
    let (cli, cli_groups) = command_line_components(args)?;
    if let Some(info) = Info::asked(&cli) {
        return Ok(Prepared::Info(info));
    }
    let wrap = cli.get("wrap").map(str::to_string);
    let (mut script, script_args, default_name) = match &wrap {
        Some(cmd) => {
            if !cli.positional.is_empty() {
                return Err(Exit::error(
                    PROG,
                    "Script arguments not permitted with --wrap option",
                ));
            }
            (wrap_script(cmd), Vec::new(), "wrap".to_string())
        }
        None => {
            let path = cli.positional.first().map(String::as_str);
            let text = read_script(path)?;
            let name = match path {
                Some(p) => submit_opts::basename(p).to_string(),
                None => "sbatch".to_string(),
            };
            (text, cli.positional.iter().skip(1).cloned().collect(), name)
        }
    };
    check_script(&script)?;

    let mut o = SubmitOpts::default();
    // `#SBATCH hetjob` lines part the directives of a heterogeneous job's components:
    // the first runs the script, the others hold their allocations beside it.
    let mut components: Vec<Vec<String>> = Vec::new();
    if wrap.is_none() {
        components = het_components(directive_words(&script));
        let words = components.remove(0);
        o.apply_all(Command::Sbatch, &directive_options(&words)?, Source::Script)?;
        // PBS's `#PBS` lines (unless `--ignore-pbs` or SBATCH_IGNORE_PBS says not)
        // and LSF's `#BSUB` lines after, as Slurm's sbatch reads them.
        let ignore_pbs = o.ignore_pbs
            || cli_groups[0].iter().any(|(k, _)| *k == "ignore-pbs")
            || ctx.env.iter().any(|(k, v)| {
                k == "SBATCH_IGNORE_PBS"
                    && !["0", "no", "false"]
                        .iter()
                        .any(|off| v.eq_ignore_ascii_case(off))
            });
        let mut foreign = Vec::new();
        if !ignore_pbs {
            foreign.extend(
                submit_opts::pbs_directive_words(&script)
                    .map_err(|e| Exit::error(PROG, e).with_code(255))?,
            );
        }
        foreign.extend(
            submit_opts::lsf_directive_words(&script)
                .map_err(|e| Exit::error(PROG, e).with_code(255))?,
        );
        let parsed = opts::parse(submit_opts::specs(Command::Sbatch), &foreign, false)
            .map_err(|e| Exit::usage(PROG, &e).with_code(255))?;
        o.apply_all(Command::Sbatch, &parsed.opts, Source::Script)?;
    }
    let env_opts = submit_opts::env_options(ctx.env);
    o.apply_all(Command::Sbatch, &env_opts, Source::Env)?;
    o.apply_all(Command::Sbatch, &cli_groups[0], Source::Cli)?;
    if o.verbose > 0 {
        eprint!("{}", o.defined_options(PROG));
    }
    // At debug level (-vvv), as Slurm's sbatch says what it adds to the job's
    // environment.
    if o.verbose >= 3
        && let Some((_, mask)) = ctx.env.iter().find(|(k, _)| k == "SLURM_UMASK")
    {
        eprintln!("{PROG}: debug:  propagating UMASK={mask}");
    }

    if o.output.is_none() {
        o.output = Some(
            if o.array.is_some() {
                "slurm-%A_%a.out"
            } else {
                "slurm-%j.out"
            }
            .into(),
        );
    }
    if let Some(path) = o.burst_buffer_file.clone() {
        let bbf = read_script(Some(&path)).map_err(|_| {
            Exit::raw(format!(
                "{PROG}: fatal: Could not open burst buffer specification file {path}"
            ))
        })?;
        script = add_burst_buffer_file(&script, &bbf);
    }
    let mut spec = build_spec(&o, PROG, ctx, script, script_args, &default_name)?;
    // The components after the first: the script's `hetjob` parts and the command
    // line's `:` groups, the i-th of each together.
    let count = components.len().max(cli_groups.len() - 1);
    // A heterogeneous job is no array, as in Slurm.
    if count > 0 && o.array.is_some() {
        return Err(submit_opts::submission_failed(
            PROG,
            "Invalid job array specification",
        ));
    }
    let mut het = Vec::with_capacity(count);
    for i in 0..count {
        let mut c = SubmitOpts::default();
        if let Some(words) = components.get(i) {
            c.apply_all(Command::Sbatch, &directive_options(words)?, Source::Script)?;
        }
        c.apply_all(Command::Sbatch, &env_opts, Source::Env)?;
        if let Some(group) = cli_groups.get(i + 1) {
            c.apply_all(Command::Sbatch, group, Source::Cli)?;
        }
        if c.array.is_some() {
            return Err(submit_opts::submission_failed(
                PROG,
                "Invalid job array specification",
            ));
        }
        // Components run no script, and write nothing.
        c.output = Some("/dev/null".into());
        c.error = Some("/dev/null".into());
        het.push(build_spec(
            &c,
            PROG,
            ctx,
            HET_COMPONENT_SCRIPT.into(),
            Vec::new(),
            &default_name,
        )?);
    }
    // The script file as Slurm's `Command` shows it: absolute, from where sbatch ran.
    if wrap.is_none()
        && let Some(path) = cli.positional.first().filter(|p| *p != "-")
    {
        spec.command = if path.starts_with('/') {
            path.clone()
        } else {
            format!("{}/{path}", ctx.cwd.trim_end_matches('/'))
        };
    }
    Ok(Prepared::Submit(Box::new(Submission {
        spec,
        het_components: het,
        parsable: o.parsable,
        wait: o.wait,
        test_only: o.test_only,
        quiet: o.quiet,
        clusters: o.clusters,
    })))
}

const HELP: &str = "Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) [args(0)...]

Parallel run options:
  -a, --array=indexes         job array index values
  -A, --account=name          charge job to specified account
  -b, --begin=time            defer job until HH:MM MM/DD/YY
      --comment=name          arbitrary comment
  -c, --cpus-per-task=ncpus   number of cpus required per task
  -d, --dependency=type:jobid[:time] defer job until condition on jobid is satisfied
  -D, --chdir=directory       set working directory for batch script
  -e, --error=err             file for batch script's standard error
      --export[=names]        specify environment variables to export
  -H, --hold                  submit job in held state
  -i, --input=in              file for batch script's standard input
  -J, --job-name=jobname      name of job
  -n, --ntasks=ntasks         number of tasks to run
      --nice[=value]          decrease scheduling priority by value
  -N, --nodes=N               number of nodes on which to run (N = min[-max])
  -o, --output=out            file for batch script's standard output
      --open-mode=append|truncate  how to open the output and error files
  -p, --partition=partition   partition requested
      --parsable              outputs only the jobid and cluster name (if present)
  -q, --qos=qos               quality of service
  -Q, --quiet                 quiet mode (suppress informational messages)
      --requeue               if set, permit the job to be requeued
      --signal=[R|B:]num[@time] send signal when time limit within time seconds
  -t, --time=minutes          time limit
      --test-only             validate the request and estimate the start, submit nothing
  -W, --wait                  wait for completion of submitted job
      --wrap[=command string] wrap command string in a sh script and submit

Constraint options:
  -C, --constraint=list       specify a list of constraints
      --mem=MB                minimum amount of real memory
      --mem-per-cpu=MB        maximum amount of real memory per allocated cpu
  -w, --nodelist=hosts...     request a specific list of hosts
  -x, --exclude=hosts...      exclude a specific list of hosts
      --exclusive             allocate nodes in exclusive mode

GPU scheduling options:
      --cpus-per-gpu=n        number of CPUs required per allocated GPU
  -G, --gpus=n                count of GPUs required for the job
      --gpus-per-node=n       number of GPUs required per allocated node
      --gpus-per-task=n       number of GPUs required per spawned task
      --gres=list             required generic resources
      --mem-per-gpu=n         real memory required per allocated GPU

Help options:
  -h, --help                  show this help message
      --usage                 display brief usage message

Other options:
  -V, --version               output version information and exit
";

const USAGE: &str = "Usage: sbatch [-N nnodes] [-n ntasks] [-c ncpus] [-p partition] [-A account]
              [-t minutes] [-J jobname] [-o out] [-e err] [-a array] [-d dependency]
              [--mem=MB] [--gpus=n] [--gres=list] [--export[=names]] [--wrap=cmd]
              [--parsable] [--wait] [--hold] executable [args...]
";

fn read_script(path: Option<&str>) -> Result<String, Exit> {
    let mut bytes = Vec::new();
    let res = match path {
        None | Some("-") => std::io::stdin().read_to_end(&mut bytes).map(|_| ()),
        Some(p) => std::fs::read(p).map(|b| bytes = b),
    };
    match res {
        Ok(()) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Err(_) => Err(Exit::error(
            PROG,
            format!("Unable to open file {}", path.unwrap_or("stdin")),
        )),
    }
}

/// The process environment as text, with `SLURM_UMASK` (the umask, as Slurm's sbatch
/// and srun add it, so that the job creates files as its submitter would).
pub fn environment() -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    if !env.iter().any(|(k, _)| k == "SLURM_UMASK") {
        // umask(2) cannot be read without setting it: set it and put it back.
        let mask = nix::sys::stat::umask(nix::sys::stat::Mode::empty());
        nix::sys::stat::umask(mask);
        env.push(("SLURM_UMASK".into(), format!("{:04o}", mask.bits())));
    }
    env
}

/// The current directory, as the shell names it when it can (`$PWD`), else resolved.
pub fn current_dir() -> String {
    let real = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "/".into());
    match std::env::var("PWD") {
        Ok(pwd)
            if pwd.starts_with('/')
                && std::fs::canonicalize(&pwd)
                    .ok()
                    .map(|p| p.display().to_string())
                    == std::fs::canonicalize(&real)
                        .ok()
                        .map(|p| p.display().to_string()) =>
        {
            pwd
        }
        _ => real,
    }
}

/// The largest array index + 1 the cluster takes, from the client's config.
/// The controller settings a submit reads (its defaults without a config).
fn controller_config() -> model::config::ControllerConfig {
    client::load_config()
        .map(|c| c.controller)
        .unwrap_or_default()
}

/// Who submits, and from where: what a `SubmitCtx` borrows, taken from this process
/// (`sbatch`, and `srun` outside an allocation).
pub struct Submitter {
    pub env: Vec<(String, String)>,
    pub cwd: String,
    pub user: String,
    pub uid: u32,
    pub gid: u32,
    pub host: String,
}

impl Submitter {
    /// The caller, the current directory and this host, with the environment `env`.
    pub fn here(env: Vec<(String, String)>) -> Submitter {
        let (user, uid, gid) = client::current_user();
        Submitter {
            env,
            cwd: current_dir(),
            user,
            uid,
            gid,
            host: submit_opts::hostname(),
        }
    }

    /// The context to build a job from, with the clock read now.
    pub fn ctx(&self) -> SubmitCtx<'_> {
        let controller = controller_config();
        SubmitCtx {
            env: &self.env,
            cwd: &self.cwd,
            user: &self.user,
            uid: self.uid,
            gid: self.gid,
            host: &self.host,
            now: times::now(),
            max_array_size: controller.max_array_size,
            job_requeue: controller.job_requeue,
            zone: times::zone(),
        }
    }
}

/// The job's environment: sbatch's, with its soft resource limits as Slurm's sbatch
/// passes them (`SLURM_RLIMIT_CORE=...`) for the node to set on the batch script.
fn job_environment() -> Vec<(String, String)> {
    let mut env = environment();
    for (r, soft) in super::step::soft_rlimits() {
        env.retain(|(k, _)| k != r.env_name());
        env.push((r.env_name().to_string(), soft.to_string()));
    }
    env
}

pub fn run(args: &[String]) -> ExitCode {
    let submitter = Submitter::here(job_environment());
    let ctx = submitter.ctx();
    let sub = match prepare(args, &ctx, &mut read_script) {
        Ok(Prepared::Info(info)) => {
            let help = format!("{HELP}{}", submit_opts::ignored_help(Command::Sbatch));
            return info.print(&help, USAGE);
        }
        Ok(Prepared::Submit(s)) => *s,
        Err(e) => return e.finish(),
    };
    client::runtime().block_on(submit(sub))
}

/// `--test-only`'s answer, as Slurm's: when, on how many processors and where the job
/// would start (`partition` empty: the default one).
pub async fn tell_will_run(
    prog: &str,
    client: &mut crate::client::Ctld,
    reply: &v1::SubmitJobReply,
    cpus: u32,
    mut partition: String,
) {
    if partition.is_empty()
        && let Ok(parts) = client.list_partitions(v1::ListPartitionsRequest {}).await
    {
        partition = parts
            .into_inner()
            .partitions
            .into_iter()
            .find(|p| p.is_default)
            .map(|p| p.name)
            .unwrap_or_default();
    }
    eprintln!(
        "{prog}: Job {} to start at {} using {} processors on nodes {} in partition {}",
        reply.job_id,
        times::format_time(reply.estimated_start),
        cpus,
        reply.estimated_nodes,
        partition
    );
}

async fn submit(sub: Submission) -> ExitCode {
    let failure = submit_opts::submit_failure(PROG);
    let fail = |msg: String| Exit::error(PROG, format!("{failure}: {msg}")).finish();
    let mut client = match calls::connect().await {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let cpus = jobs::req_cpus(&sub.spec);
    let partition = sub.spec.partition.clone();
    let req = v1::SubmitJobRequest {
        spec: Some(sub.spec),
        test_only: sub.test_only,
        het_components: sub.het_components,
    };
    let reply = match client.submit_job(req).await {
        Ok(r) => r.into_inner(),
        Err(s) => return calls::refusal(PROG, failure, &s).finish(),
    };
    if sub.test_only {
        tell_will_run(PROG, &mut client, &reply, cpus, partition).await;
        return ExitCode::SUCCESS;
    }
    let cluster = sub.clusters.as_ref().map(|c| {
        if reply.cluster_name.is_empty() {
            c.clone()
        } else {
            reply.cluster_name.clone()
        }
    });
    if sub.parsable {
        match &cluster {
            Some(c) => println!("{};{}", reply.job_id, c),
            None => println!("{}", reply.job_id),
        }
    } else if !sub.quiet {
        match &cluster {
            Some(c) => println!("Submitted batch job {} on cluster {}", reply.job_id, c),
            None => println!("Submitted batch job {}", reply.job_id),
        }
    }
    if !sub.wait {
        return ExitCode::SUCCESS;
    }
    use std::io::Write;
    let _ = std::io::stdout().flush();
    match super::wait::wait_for_job(PROG, &mut client, reply.job_id).await {
        Ok(jobs) if jobs.is_empty() => Exit::error(
            PROG,
            format!(
                "Job {} no longer found and exit code not found",
                reply.job_id
            ),
        )
        .finish(),
        Ok(jobs) => ExitCode::from(super::wait::wait_exit_code(&jobs).clamp(0, 255) as u8),
        Err(e) => e.finish(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::submit_opts::tests::NOW;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn env(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    /// ada submitting from her project directory on login1, with `env`.
    fn ada(env: &[(String, String)]) -> SubmitCtx<'_> {
        static UTC: jiff::tz::TimeZone = jiff::tz::TimeZone::UTC;
        SubmitCtx {
            env,
            cwd: "/home/ada/proj",
            user: "ada",
            uid: 1000,
            gid: 100,
            host: "login1",
            now: NOW,
            max_array_size: 1001,
            job_requeue: true,
            zone: &UTC,
        }
    }

    fn prep_env(args: &[&str], script: &str, vars: &[(&str, &str)]) -> Result<Submission, Exit> {
        let env = env(vars);
        let ctx = ada(&env);
        let script = script.to_string();
        let mut read = |p: Option<&str>| -> Result<String, Exit> {
            match p {
                Some("missing.sh") => Err(Exit::error(PROG, "Unable to open file missing.sh")),
                _ => Ok(script.clone()),
            }
        };
        match prepare(&s(args), &ctx, &mut read)? {
            Prepared::Submit(sub) => Ok(*sub),
            other => panic!("{other:?}"),
        }
    }

    /// Options, with and without their values, and values of every kind they take.
    const FLAGS: &[&str] = &[
        "-J",
        "--job-name=",
        "-t",
        "--time=",
        "--mem=",
        "--mem-per-cpu=",
        "-c",
        "-n",
        "-N",
        "--nodes=",
        "--gres=",
        "--gpus=",
        "--gpus-per-node=",
        "--array=",
        "-a",
        "-d",
        "--dependency=",
        "--begin=",
        "--export=",
        "-o",
        "-e",
        "--signal=",
        "-p",
        "-q",
        "--mail-type=",
        "--nice",
        "--nice=",
        "-w",
        "-x",
        "-C",
        "--wrap=",
        "--exclusive",
        "--hold",
        "--test-only",
        "--bogus",
        "-",
        "--",
        "--help",
        "--usage",
    ];
    const VALUES: &[&str] = &[
        "",
        "0",
        "1",
        "-1",
        "5",
        "99999999999",
        "1:00:00",
        "2-00:00:00",
        "UNLIMITED",
        "1G",
        "12Q",
        "gpu:2",
        "gpu:h100:1",
        "0-3%2",
        "1,3,5-7",
        "afterok:1",
        "now+1hour",
        "tomorrow",
        "NONE",
        "ALL,A=1",
        "USR2@90",
        "debug,gpu",
        "END,FAIL",
        "n[1-3]",
        "a&b|c",
        "%j.out",
        "[",
        "]",
        "\\",
        "'",
        "\"",
        "=",
        ",",
        "\u{e9}",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, ..Default::default() })]

        /// Any command line and any `#SBATCH` lines give a request or an error, never
        /// a panic.
        #[test]
        fn any_arguments_and_directives_give_a_request_or_an_error(
            args in proptest::collection::vec(
                (proptest::sample::select(FLAGS), proptest::sample::select(VALUES), proptest::bool::ANY), 0..6),
            directives in proptest::collection::vec(
                (proptest::sample::select(FLAGS), proptest::sample::select(VALUES), ".{0,12}"), 0..6),
        ) {
            let words: Vec<String> = args
                .iter()
                .flat_map(|(flag, value, joined)| {
                    if flag.ends_with('=') || *joined {
                        vec![format!("{flag}{value}")]
                    } else {
                        vec![flag.to_string(), value.to_string()]
                    }
                })
                .collect();
            let mut script = String::from("#!/bin/sh\n");
            for (flag, value, junk) in &directives {
                script.push_str(&format!("#SBATCH {flag}{value} {junk}\n"));
            }
            script.push_str("true\n");
            let env = env(&[("PATH", "/usr/bin")]);
            let ctx = ada(&env);
            let mut read = |_: Option<&str>| -> Result<String, Exit> { Ok(script.clone()) };
            let _ = prepare(&words, &ctx, &mut read);
        }
    }

    fn prep(args: &[&str], script: &str) -> Result<Submission, Exit> {
        prep_env(args, script, &[("PATH", "/usr/bin"), ("SLURM_CONF", "/x")])
    }

    fn err(args: &[&str], script: &str) -> Vec<String> {
        prep(args, script).unwrap_err().lines()
    }

    #[test]
    fn submitit_script() {
        let script = "#!/bin/bash\n\n# Parameters\n#SBATCH --array=0-3%2\n#SBATCH --cpus-per-task=1\n#SBATCH --error=/d/%A_%a_0_log.err\n#SBATCH --job-name=submitit\n#SBATCH --mem=1GB\n#SBATCH --nodes=1\n#SBATCH --open-mode=append\n#SBATCH --output=/d/%A_%a_0_log.out\n#SBATCH --partition=debug\n#SBATCH --signal=USR2@90\n#SBATCH --time=5\n#SBATCH --wckey=submitit\n\n# command\nexport SUBMITIT_EXECUTOR=slurm\nsrun --unbuffered --output /d/%j/%j_%t_log.out python -u -m submitit.core._submit /d\n";
        let sub = prep(&["/d/submission_file.sh"], script).unwrap();
        let sp = &sub.spec;
        assert_eq!(sp.name, "submitit");
        assert_eq!(sp.array.as_ref().unwrap().task_ids, vec![0, 1, 2, 3]);
        assert_eq!(sp.array.as_ref().unwrap().max_running, 2);
        assert_eq!((sp.cpus_per_task, sp.num_nodes, sp.num_tasks), (1, 1, 1));
        assert_eq!(sp.mem_per_node_mb, 1024);
        assert!(sp.open_mode_append);
        assert_eq!(sp.stdout_pattern, "/d/%A_%a_0_log.out");
        assert_eq!(sp.stderr_pattern, "/d/%A_%a_0_log.err");
        assert_eq!(sp.partition, "debug");
        let sig = sp.signal.unwrap();
        assert_eq!(
            (sig.signal, sig.seconds_before_end, sig.batch_only),
            (libc::SIGUSR2, 90, false)
        );
        assert_eq!(sp.time_limit_min, 5);
        assert_eq!(sp.wckey, "submitit");
        assert_eq!(sp.script, script);
        assert_eq!((sp.uid, sp.gid, sp.user.as_str()), (1000, 100, "ada"));
        assert_eq!(sp.submit_host, "login1");
        assert_eq!(sp.work_dir, "/home/ada/proj");
        assert!(
            sp.requeue,
            "JobRequeue=1, Slurm's default, requeues a lost job"
        );
        assert!(!sub.parsable && !sub.wait);
    }

    #[test]
    fn dask_script() {
        let script = "#!/usr/bin/env bash\n\n#SBATCH -J dask-worker\n#SBATCH -e /l/dask-worker-%J.err\n#SBATCH -o /l/dask-worker-%J.out\n#SBATCH -p debug\n#SBATCH -A acct\n#SBATCH -n 1\n#SBATCH --cpus-per-task=1\n#SBATCH --mem=954M\n#SBATCH -t 00:10:00\n\npython -m distributed.cli.dask_worker tcp://127.0.0.1:1234\n";
        let sp = prep(&["/var/tmp/tmpabc.sh"], script).unwrap().spec;
        assert_eq!(sp.name, "dask-worker");
        assert_eq!(
            (sp.account.as_str(), sp.partition.as_str()),
            ("acct", "debug")
        );
        assert_eq!(
            (
                sp.num_tasks,
                sp.cpus_per_task,
                sp.mem_per_node_mb,
                sp.time_limit_min
            ),
            (1, 1, 954, 10)
        );
        assert_eq!(sp.stdout_pattern, "/l/dask-worker-%J.out");
    }

    #[test]
    fn snakemake_wrap() {
        let args = [
            "--parsable",
            "--job-name",
            "uuid-1",
            "--output",
            "/w/%j.log",
            "--export=ALL",
            "--comment",
            "rule_make",
            "-p",
            "debug",
            "-t",
            "5",
            "--mem",
            "200",
            "--ntasks=1",
            "--cpus-per-task=1",
            "-D",
            "/w",
            "--wrap=python -m snakemake --executor slurm-jobstep",
        ];
        let sub = prep(&args, "").unwrap();
        assert!(sub.parsable);
        let sp = sub.spec;
        assert_eq!(
            sp.script,
            "#!/bin/sh\n# This script was created by sbatch --wrap.\n\npython -m snakemake --executor slurm-jobstep\n"
        );
        assert_eq!(sp.name, "uuid-1");
        assert_eq!((sp.time_limit_min, sp.mem_per_node_mb), (5, 200));
        assert_eq!(sp.work_dir, "/w");
        assert_eq!(sp.comment, "rule_make");
        // The environment, where sbatch ran, --cpus-per-task=1, --ntasks=1 and
        // --export=ALL.
        assert_eq!(sp.env.len(), 6);
        assert!(
            sp.env
                .iter()
                .any(|e| e.name == "SLURM_NTASKS" && e.value == "1")
        );
        assert!(
            sp.env
                .iter()
                .any(|e| e.name == "SLURM_EXPORT_ENV" && e.value == "ALL")
        );
        assert!(
            sp.env
                .iter()
                .any(|e| e.name == "SLURM_CPUS_PER_TASK" && e.value == "1")
        );
        // sbatch ran in /home/ada/proj; -D /w is where the job runs.
        assert!(
            sp.env
                .iter()
                .any(|e| e.name == "SLURM_SUBMIT_DIR" && e.value == "/home/ada/proj")
        );
        // --wrap has no script file: no Command.
        assert_eq!(sp.command, "");
        // --export=NONE asks the node for the user's login environment, as Slurm's.
        let none = prep(&["--export=NONE", "--wrap=true"], "").unwrap().spec;
        assert!(
            none.env
                .iter()
                .any(|e| e.name == "SLURM_GET_USER_ENV" && e.value == "1")
        );
        assert!(!sp.env.iter().any(|e| e.name == "SLURM_GET_USER_ENV"));
        // stdin variant
        let sub = prep(&["--parsable", "/dev/stdin"], "#!/bin/sh\ntrue\n").unwrap();
        assert_eq!(sub.spec.name, "stdin");
        let sub = prep(&[], "#!/bin/sh\ntrue\n").unwrap();
        assert_eq!(sub.spec.name, "sbatch");
        assert_eq!(sub.spec.stdout_pattern, "slurm-%j.out");
        assert_eq!(sub.spec.command, "");
        // A script file's path is Slurm's Command, made absolute.
        let sub = prep(&["jobs/run.sh"], "#!/bin/sh\ntrue\n").unwrap();
        assert_eq!(sub.spec.command, "/home/ada/proj/jobs/run.sh");
        let sub = prep(&["/opt/run.sh", "x"], "#!/bin/sh\ntrue\n").unwrap();
        assert_eq!(sub.spec.command, "/opt/run.sh");
    }

    #[test]
    fn command_line_beats_env_beats_directives() {
        let script = "#!/bin/sh\n#SBATCH -p fromscript -t 10 -J s --account=a1\ntrue\n";
        let vars = [
            ("SBATCH_PARTITION", "fromenv"),
            ("SBATCH_TIMELIMIT", "20"),
            ("SBATCH_JOB_NAME", "e"),
        ];
        let sp = prep_env(&["-p", "fromcli", "x.sh", "arg1", "-x"], script, &vars)
            .unwrap()
            .spec;
        assert_eq!(sp.partition, "fromcli");
        assert_eq!(sp.time_limit_min, 20);
        assert_eq!(sp.name, "e");
        assert_eq!(sp.account, "a1");
        assert_eq!(sp.script_args, ["arg1", "-x"]);
        let sp = prep_env(
            &["x.sh"],
            script,
            &[("SBATCH_EXPORT", "NONE"), ("SLURM_A", "1"), ("HOME", "/h")],
        )
        .unwrap()
        .spec;
        assert_eq!(
            sp.env.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
            [
                "SLURM_A",
                "SLURM_SUBMIT_DIR",
                "SLURM_GET_USER_ENV",
                "SLURM_EXPORT_ENV"
            ]
        );
    }

    #[test]
    fn hetjob_lines_part_the_components_of_a_heterogeneous_job() {
        let script = "#!/bin/sh\n#SBATCH -c 4 --mem-per-cpu=10\n#SBATCH hetjob\n\
                      #SBATCH -c 2 -t1\n#SBATCH packjob\n#SBATCH -c 1\nsleep 300\n";
        let sub = prep_env(&["-t1", "x.sh"], script, &[("SBATCH_ACCOUNT", "ml")]).unwrap();
        assert_eq!((sub.spec.cpus_per_task, sub.spec.time_limit_min), (4, 1));
        let parts: Vec<(u32, u32, &str, &str)> = sub
            .het_components
            .iter()
            .map(|c| {
                (
                    c.cpus_per_task,
                    c.time_limit_min,
                    c.account.as_str(),
                    c.stdout_pattern.as_str(),
                )
            })
            .collect();
        // The command line is the first component's; the variables are everyone's.
        assert_eq!(
            parts,
            [(2, 1, "ml", "/dev/null"), (1, 0, "ml", "/dev/null")]
        );
        assert!(sub.het_components[0].script.contains("sleep infinity"));
        assert_eq!(
            het_components(vec!["-c".into(), "1".into()]),
            [vec!["-c".to_string(), "1".to_string()]]
        );
    }

    #[test]
    fn a_heterogeneous_job_is_no_array() {
        let script = "#!/bin/sh\ntrue\n";
        for args in [
            &["-a", "0-1", "-N1", ":", "-N1", "x.sh"][..],
            &["-N1", ":", "-a", "0-1", "-N1", "x.sh"],
        ] {
            let e = prep_env(args, script, &[]).unwrap_err();
            assert_eq!(
                e.stderr,
                "sbatch: error: Batch job submission failed: Invalid job array specification\n"
            );
        }
    }

    #[test]
    fn colons_on_the_command_line_part_a_heterogeneous_jobs_components() {
        let script = "#!/bin/sh\n#SBATCH -J lead\n#SBATCH hetjob\n#SBATCH -n 3\ntrue\n";
        let args = [
            "-c", "4", ":", "-c", "2", ":", "-c", "1", "x.sh", "a", ":", "b",
        ];
        let sub = prep_env(&args, script, &[]).unwrap();
        assert_eq!(
            (sub.spec.cpus_per_task, sub.spec.name.as_str()),
            (4, "lead")
        );
        assert_eq!(sub.spec.script_args, ["a", ":", "b"]);
        let parts: Vec<(u32, u32)> = sub
            .het_components
            .iter()
            .map(|c| (c.cpus_per_task, c.num_tasks))
            .collect();
        // The script's second part and the second group make one component.
        assert_eq!(parts, [(2, 3), (1, 0)]);
        // A plain command line is one job, whatever its script's arguments hold.
        let sub = prep_env(&["x.sh", ":"], "#!/bin/sh\ntrue\n", &[]).unwrap();
        assert!(sub.het_components.is_empty());
        assert_eq!(sub.spec.script_args, [":"]);
    }

    #[test]
    fn pbs_directives_count_unless_ignored() {
        let script = "#!/bin/sh\n#SBATCH -t 5\n#PBS -N pbs -l walltime=10\ntrue\n";
        let name = |args: &[&str], vars: &[(&str, &str)]| {
            let sp = prep_env(args, script, vars).unwrap().spec;
            (sp.name, sp.time_limit_min)
        };
        assert_eq!(name(&["x.sh"], &[]), ("pbs".to_string(), 10));
        assert_eq!(
            name(&["x.sh"], &[("SBATCH_IGNORE_PBS", "0")]),
            ("pbs".to_string(), 10)
        );
        for (args, vars) in [
            (&["--ignore-pbs", "x.sh"][..], &[][..]),
            (&["x.sh"][..], &[("SBATCH_IGNORE_PBS", "1")][..]),
        ] {
            assert_eq!(name(args, vars), ("x.sh".to_string(), 5));
        }
    }

    #[test]
    fn options_in_the_job_environment() {
        let sp = prep(
            &[
                "--open-mode=append",
                "-d",
                "afterok:7",
                "--export=A=1",
                "x.sh",
            ],
            "#!/bin/sh\ntrue\n",
        )
        .unwrap()
        .spec;
        let get = |name: &str| {
            sp.env
                .iter()
                .find(|e| e.name == name)
                .map(|e| e.value.as_str())
        };
        assert_eq!(get("SLURM_OPEN_MODE"), Some("a"));
        assert_eq!(get("SLURM_JOB_DEPENDENCY"), Some("afterok:7"));
        assert_eq!(get("SLURM_EXPORT_ENV"), Some("A=1"));
        assert_eq!(get("A"), Some("1"));
    }

    #[test]
    fn gpu_options_checked_against_each_other_as_slurm_does() {
        let script = "#!/bin/sh\ntrue\n";
        let cases: &[(&[&str], &str)] = &[
            (
                &["--gpus-per-task=1", "--cpus-per-gpu=1", "-c2", "-N1"],
                "--cpus-per-gpu is mutually exclusive with --cpus-per-task",
            ),
            (
                &["--gpus-per-socket=1", "-N1"],
                "--gpus-per-socket option requires --sockets-per-node specification",
            ),
            (
                &[
                    "--gpus-per-task=1",
                    "--gpus-per-node=2",
                    "--ntasks-per-node=1",
                    "-N1",
                ],
                "Failed to validate job spec. Based on --gres=gpu/--gpus-per-node and \
                 --gpus-per-task requested number of tasks per node differ from \
                 --ntasks-per-node.",
            ),
            (
                &["--gres=gpu:2", "--gpus=1"],
                "Failed to ensure --gpus >= --gres=gpu/--gpus-per-node >= --gpus-per-socket",
            ),
            (
                &["--gpus-per-socket=2", "--sockets-per-node=1", "--gpus=1"],
                "Failed to ensure --gpus >= --gres=gpu/--gpus-per-node >= --gpus-per-socket",
            ),
            (
                &["--gpus-per-task=1", "-n2", "--gpus=1"],
                "Failed to validate job spec. Based on --gpus and --gpus-per-task number \
                 of requested tasks differ from -n/--ntasks.",
            ),
            (
                &["--gres=gpu:2", "--gpus=3"],
                "Failed to validate job spec, --gpus is not multiple of \
                 --gres=gpu/--gpus-per-node",
            ),
            (
                &[
                    "--gres=gpu:2",
                    "--gpus-per-socket=1",
                    "--sockets-per-node=1",
                ],
                "Failed to validate job spec. Based on --gres=gpu/--gpus-per-node and \
                 --gpus-per-socket required number of sockets differ from --sockets-per-node.",
            ),
            (
                &["--gres=gpu:2", "--gpus=4", "-N1"],
                "Failed to validate job spec. Based on --gpu and --gres=gpu/--gpus-per-node \
                 required nodes (2) doesn't fall between min_nodes (1) and max_nodes (1) \
                 boundaries.",
            ),
            (
                &["--gpus=3", "--gpus-per-task=2", "-N1"],
                "Failed to validate job spec, --gpus not multiple of --gpus-per-task",
            ),
            (
                &["--gpus=1", "-N2"],
                "Failed to validate job spec, --gpus < -N",
            ),
        ];
        for (args, want) in cases {
            let mut args = args.to_vec();
            args.push("x.sh");
            assert_eq!(
                prep(&args, script).unwrap_err().lines(),
                [format!("sbatch: error: {want}")],
                "{args:?}"
            );
        }
        for ok in [
            &[
                "--gpus=8",
                "--gpus-per-node=4",
                "--gpus-per-task=2",
                "-N2",
                "-n4",
            ][..],
            &["--gpus-per-task=1", "--gpus-per-node=1", "-n2", "-N1"],
            &["--cpus-per-gpu=2", "--gpus=2"],
        ] {
            let mut args = ok.to_vec();
            args.push("x.sh");
            assert!(prep(&args, script).is_ok(), "{args:?}");
        }
        let spec = |args: &[&str]| prep(args, script).unwrap().spec;
        let sp = spec(&["--gpus-per-node=4", "--gres=gpu:5", "-N1", "x.sh"]);
        assert_eq!(sp.gpus_per_node, 5);
        let sp = spec(&[
            "--gpus-per-task=1",
            "--gpus-per-node=1",
            "-n2",
            "-N1",
            "x.sh",
        ]);
        assert_eq!((sp.num_tasks, sp.num_nodes, sp.ntasks_per_node), (2, 1, 1));
        let sp = spec(&["--gpus-per-task=1", "--gpus-per-node=2", "-n4", "x.sh"]);
        assert_eq!((sp.num_tasks, sp.num_nodes, sp.ntasks_per_node), (4, 2, 2));
    }

    #[test]
    fn burst_buffer_file_follows_the_interpreter_line() {
        assert_eq!(
            add_burst_buffer_file("#!/bin/sh\necho s\n", "echo b\nexit 0"),
            "#!/bin/sh\necho b\nexit 0\necho s\n"
        );
        assert_eq!(add_burst_buffer_file("#!/bin/sh", "x\n"), "#!/bin/sh\nx\n");
        assert_eq!(add_burst_buffer_file("#!/bin/sh\n", ""), "#!/bin/sh\n");
    }

    #[test]
    fn deadline_checked_and_kept() {
        let script = "#!/bin/sh\ntrue\n";
        let sp = prep(
            &["--deadline", "now+600", "--time-min=5", "-t50", "x.sh"],
            script,
        )
        .unwrap()
        .spec;
        let details = sp.details.unwrap();
        assert_eq!(
            (sp.time_limit_min, details.deadline - NOW, details.time_min),
            (50, 600, 5)
        );
        let refused = |args: &[&str]| prep(args, script).unwrap_err().lines();
        let invalid = "sbatch: error: Batch job submission failed: \
             Requested time limit is invalid (missing or exceeds some limit)";
        assert_eq!(
            refused(&["--deadline", "2015-03-27T04:30:00", "-t1", "x.sh"]),
            [invalid]
        );
        assert_eq!(
            refused(&["--deadline", "now+1hour", "--time-min", "120", "x.sh"]),
            ["sbatch: error: Batch job submission failed: \
                 Invalid time-min specification (exceeds job's time or other limits)"]
        );
        assert_eq!(
            refused(&["--begin", "now+2hour", "--deadline", "now+1hour", "x.sh"]),
            ["sbatch: error: Incompatible begin and deadline time specification"]
        );
        assert_eq!(
            refused(&["-S", "1", "--thread-spec=1", "x.sh"]),
            ["sbatch: fatal: -S/--core-spec and --thred-spec options are mutually exclusive"]
        );
        // No license is known here.
        assert_eq!(
            refused(&["-L", "matlab:1", "x.sh"]),
            ["sbatch: error: Batch job submission failed: Invalid license specification"]
        );
    }

    #[test]
    fn gpus_and_resources() {
        let sp = prep(
            &[
                "--gres=gpu:a100:2",
                "-N",
                "2",
                "--ntasks-per-node=4",
                "--wrap=x",
            ],
            "",
        )
        .unwrap()
        .spec;
        assert_eq!(
            (
                sp.gpus_per_node,
                sp.gpu_type.as_str(),
                sp.num_nodes,
                sp.num_tasks
            ),
            (2, "a100", 2, 8)
        );
        let sp = prep(
            &[
                "--gpus-per-task=1",
                "-n",
                "3",
                "--cpus-per-gpu=4",
                "--wrap=x",
            ],
            "",
        )
        .unwrap()
        .spec;
        assert_eq!((sp.gpus, sp.cpus_per_task), (3, 4));
        let sp = prep(&["-G", "h100:4", "--mem-per-gpu=10G", "--wrap=x"], "")
            .unwrap()
            .spec;
        assert_eq!(
            (sp.gpus, sp.gpu_type.as_str(), sp.mem_per_node_mb),
            (4, "h100", 40960)
        );
        let sp = prep(
            &[
                "--mem-per-cpu=2G",
                "--exclusive",
                "--nice",
                "--hold",
                "-d",
                "afterok:3",
                "--wrap=x",
            ],
            "",
        )
        .unwrap()
        .spec;
        assert_eq!(
            (
                sp.mem_per_cpu_mb,
                sp.mem_per_node_mb,
                sp.exclusive,
                sp.nice,
                sp.hold
            ),
            (2048, 0, true, 100, true)
        );
        assert_eq!(sp.dependency, "afterok:3");
        let sp = prep(
            &[
                "--begin=now+1hour",
                "--no-requeue",
                "-o",
                "none",
                "--wrap=x",
            ],
            "",
        )
        .unwrap()
        .spec;
        assert_eq!(sp.begin_time, NOW + 3600);
        assert!(!sp.requeue);
        assert_eq!(sp.stdout_pattern, "/dev/null");
        let sp = prep(&["-D", "sub", "--wrap=x"], "").unwrap().spec;
        assert_eq!(sp.work_dir, "/home/ada/proj/sub");
    }

    #[test]
    fn script_errors() {
        assert_eq!(
            err(&["x.sh"], ""),
            ["sbatch: error: Batch script is empty!"]
        );
        assert_eq!(
            err(&["x.sh"], "  \n\n"),
            ["sbatch: error: Batch script contains only whitespace!"]
        );
        assert_eq!(
            err(&["x.sh"], "echo hi\n"),
            [
                "sbatch: error: This does not look like a batch script.  The first",
                "sbatch: error: line must start with #! followed by the path to an interpreter.",
                "sbatch: error: For instance: #!/bin/sh",
            ]
        );
        assert_eq!(err(&["x.sh"], "#!/bin/sh\r\ntrue\r\n").len(), 2);
        assert_eq!(
            err(&["missing.sh"], ""),
            ["sbatch: error: Unable to open file missing.sh"]
        );
        assert_eq!(
            err(&["x.sh"], "#!/bin/sh\n#SBATCH --bogus\ntrue\n"),
            [
                "sbatch: unrecognized option '--bogus'",
                "Try \"sbatch --help\" for more information"
            ]
        );
        let e = prep(&["x.sh"], "#!/bin/sh\n#SBATCH -J x extra\n").unwrap_err();
        assert_eq!(
            e.lines(),
            ["sbatch: error: Invalid directive found in batch script: extra"]
        );
        assert_eq!(e.code, 255);
        assert_eq!(
            err(&["--wrap=true", "x.sh"], ""),
            ["sbatch: error: Script arguments not permitted with --wrap option"]
        );
        let e = prep(&["--bogus", "x.sh"], "").unwrap_err();
        assert_eq!(e.lines()[0], "sbatch: unrecognized option '--bogus'");
        assert_eq!(e.code, 255);
        assert_eq!(err(&["-y", "x.sh"], "")[0], "sbatch: invalid option -- 'y'");
        assert_eq!(
            err(&["--array=0-2000", "--wrap=x"], ""),
            ["sbatch: error: Batch job submission failed: Invalid job array specification"]
        );
        assert_eq!(
            err(&["--array=x", "--wrap=x"], ""),
            ["sbatch: error: Batch job submission failed: Invalid job array specification"]
        );
        assert_eq!(
            err(&["-t", "abc", "--wrap=x"], ""),
            ["sbatch: error: Invalid --time specification"]
        );
        // A bad value in a directive is caught even when the command line overrides it.
        assert_eq!(
            err(&["-t", "5", "x.sh"], "#!/bin/sh\n#SBATCH -t bad\n"),
            ["sbatch: error: Invalid --time specification"]
        );
        assert_eq!(
            err(&["--mem=1G", "--mem-per-cpu=1G", "--wrap=x"], ""),
            ["sbatch: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."]
        );
    }

    #[test]
    fn flags_and_modes() {
        let sub = prep(&["-W", "--test-only", "-Q", "-M", "c1", "--wrap=x"], "").unwrap();
        assert!(sub.wait && sub.test_only && sub.quiet);
        assert_eq!(sub.clusters.as_deref(), Some("c1"));
        let sub = prep(&["--array=1,3", "--wrap=x"], "").unwrap();
        assert_eq!(sub.spec.stdout_pattern, "slurm-%A_%a.out");
        // Long-option prefixes and clustered short flags.
        let sub = prep(&["--part=gpu", "-HQ", "--wrap=x"], "").unwrap();
        assert_eq!(sub.spec.partition, "gpu");
        assert!(sub.spec.hold && sub.quiet);
    }
}
