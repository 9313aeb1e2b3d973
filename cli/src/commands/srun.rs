//! `srun`: runs a command as a job step.
//!
//! Inside an allocation (`SLURM_JOB_ID` or `SLURM_JOBID` set, or `--jobid`; nothing else
//! of the job's environment is needed, as Snakemake strips it) it asks the controller for
//! a step and runs its tasks on the job's nodes through their node daemons (`step`),
//! with the step's environment (`task_env`) and `--output/--error/--input` filename
//! patterns (`%j %J %t %n %N %A %a %s %u %x`, `step_path`).
//!
//! Outside an allocation it takes one for the step (`salloc::allocate`), runs the step
//! in it as above, with its output live, and gives it back (`outside_allocation`).
//! `--pty` runs task 0 in a pseudo-terminal on its node, srun's own terminal in raw
//! mode meanwhile (`step`).

use super::submit_opts::{self, Command, Source, SubmitOpts};
use crate::args;
use crate::exit::Exit;
use crate::{calls, client, opts};
use model::pattern::{PatternValues, expand_pattern};
use proto::v1;
use std::process::ExitCode;

const PROG: &str = "srun";

/// What the command line asks for.
#[derive(Debug)]
pub struct Request {
    pub opts: SubmitOpts,
    pub command: Vec<String>,
    /// `--multi-prog`: the configuration's text and each task's program.
    pub multi_prog: Option<(String, Vec<String>)>,
    /// `-m arbitrary`: the node of each task (`arbitrary_tasks`); empty: `-m`'s layout.
    pub task_nodes: Vec<String>,
    /// `srun A cmd : B cmd`: the options and command of the components after the first.
    pub more: Vec<(SubmitOpts, Vec<String>)>,
    /// In a step over several components of a heterogeneous job: the number of this
    /// component's first task in the whole step (its labels count from there).
    pub task_offset: u32,
}

/// srun's input environment variables and the options they set, as Slurm 22.05's
/// srun reads them (the command line wins). `SLURM_MPI_TYPE` and `SLURM_OPEN_MODE` are
/// read where they are used.
const INPUT_ENV: &[(&str, &str)] = &[
    ("SLURM_ACCOUNT", "account"),
    ("SLURM_CONSTRAINT", "constraint"),
    ("SLURM_CPU_BIND", "cpu-bind"),
    ("SLURM_DEBUG", "verbose"),
    ("SLURM_DEPENDENCY", "dependency"),
    ("SLURM_DISTRIBUTION", "distribution"),
    ("SLURM_EXPORT_ENV", "export"),
    ("SRUN_EXPORT_ENV", "export"),
    ("SLURM_GPU_BIND", "gpu-bind"),
    ("SLURM_GPUS_PER_TASK", "gpus-per-task"),
    ("SLURM_KILL_BAD_EXIT", "kill-on-bad-exit"),
    ("SLURM_LABELIO", "label"),
    ("SLURM_OVERCOMMIT", "overcommit"),
    ("SLURM_PARTITION", "partition"),
    ("SLURM_QOS", "qos"),
    ("SLURM_RESERVATION", "reservation"),
    ("SLURM_STDERRMODE", "error"),
    ("SLURM_STDINMODE", "input"),
    ("SLURM_STDOUTMODE", "output"),
    ("SLURM_TASK_EPILOG", "task-epilog"),
    ("SLURM_TASK_PROLOG", "task-prolog"),
    ("SLURM_TIMELIMIT", "time"),
    ("SLURM_UNBUFFEREDIO", "unbuffered"),
    ("SLURM_WAIT", "wait"),
    ("SLURM_WORKING_DIR", "chdir"),
    ("SLURMD_DEBUG", "slurmd-debug"),
];

/// The input variables of the step's shape, read as options only outside an
/// allocation: inside one they are the job's, which `step::step_shape` reads.
const INPUT_ENV_SHAPE: &[(&str, &str)] = &[
    ("SLURM_NPROCS", "ntasks"),
    ("SLURM_NTASKS", "ntasks"),
    ("SLURM_JOB_NUM_NODES", "nodes"),
    ("SLURM_NNODES", "nodes"),
    ("SLURM_NTASKS_PER_NODE", "ntasks-per-node"),
    ("SLURM_NTASKS_PER_GPU", "ntasks-per-gpu"),
    ("SLURM_NTASKS_PER_TRES", "ntasks-per-tres"),
    ("SRUN_CPUS_PER_TASK", "cpus-per-task"),
];

/// The options srun's input environment variables set, in the table's order.
fn env_options(env: &[(String, String)]) -> Vec<(&'static str, String)> {
    let var = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let in_job = var("SLURM_JOB_ID").or_else(|| var("SLURM_JOBID")).is_some();
    let shape = if in_job { &[][..] } else { INPUT_ENV_SHAPE };
    INPUT_ENV
        .iter()
        .chain(shape)
        .filter_map(|(k, name)| var(k).map(|v| (*name, v)))
        .collect()
}

/// The request, or an early exit: a bad option, or `--help`, `--usage`, `--version`'s
/// text. `env` is srun's environment, whose input variables come before the command
/// line.
pub fn parse(args: &[String], env: &[(String, String)]) -> Result<Request, Exit> {
    // `A [cmd] : B [cmd] : C cmd`: the components of a heterogeneous step, each with
    // its options and command (one without a command runs the next one's).
    let mut groups = Vec::new();
    for words in args.split(|w| w == ":") {
        let p = opts::parse(submit_opts::specs(Command::Srun), words, true)
            .map_err(|e| Exit::usage(PROG, &e))?;
        let mut o = SubmitOpts::default();
        o.apply_all(Command::Srun, &env_options(env), Source::Env)?;
        o.apply_all(Command::Srun, &p.opts, Source::Cli)?;
        groups.push((o, p.positional));
    }
    for i in (0..groups.len().saturating_sub(1)).rev() {
        if groups[i].1.is_empty() {
            groups[i].1 = groups[i + 1].1.clone();
        }
    }
    let mut groups = groups.into_iter();
    let (o, command) = groups.next().unwrap_or_default();
    let more: Vec<(SubmitOpts, Vec<String>)> = groups.collect();
    if o.help {
        let help = format!(
            "{}\n{}",
            HELP.trim_end(),
            submit_opts::ignored_help(Command::Srun)
        );
        return Err(Exit::info(help));
    }
    if o.usage {
        return Err(Exit::info(USAGE));
    }
    if o.version {
        return Err(Exit::info(args::version_line()));
    }
    if o.verbose > 0 {
        crate::say_raw!("{}", o.defined_options(PROG));
    }
    if command.is_empty() || more.iter().any(|(_, c)| c.is_empty()) {
        return Err(Exit::raw(format!(
            "{PROG}: fatal: No command given to execute."
        )));
    }
    Ok(Request {
        opts: o,
        command,
        multi_prog: None,
        task_nodes: Vec::new(),
        more,
        task_offset: 0,
    })
}

/// A component's options with the first's that apply to the whole step, as Slurm's
/// srun takes them (`--label`, `-u`, `--mpi`, `-K`, `-W`, `-v`, `-Q`, and where the
/// component names none, `-o`, `-e`, `-i` and `--open-mode`).
fn with_step_wide_options(o: &SubmitOpts, first: &SubmitOpts) -> SubmitOpts {
    let mut o = o.clone();
    o.output = o.output.or_else(|| first.output.clone());
    o.error = o.error.or_else(|| first.error.clone());
    o.input = o.input.or_else(|| first.input.clone());
    o.open_mode_append = o.open_mode_append.or(first.open_mode_append);
    o.label |= first.label;
    o.unbuffered |= first.unbuffered;
    o.kill_on_bad_exit |= first.kill_on_bad_exit;
    o.quiet |= first.quiet;
    o.verbose = o.verbose.max(first.verbose);
    o.mpi = o.mpi.or(first.mpi);
    if o.max_wait == 0 {
        o.max_wait = first.max_wait;
    }
    o
}

/// The component count of the heterogeneous allocation srun runs in (its
/// `SLURM_HET_SIZE`); `None` outside one.
fn het_size(env: &[(String, String)]) -> Option<u32> {
    env.iter()
        .find(|(k, _)| k == model::job::HET_SIZE_VAR)
        .and_then(|(_, v)| v.parse().ok())
}

/// One component of a heterogeneous step: its het group, options and command.
type HetPart = (u32, SubmitOpts, Vec<String>);

/// Slurm's refusal of `--het-group=K` past an allocation of `size` components.
fn het_group_beyond(k: u32, size: u32) -> String {
    format!(
        "Attempt to run a job step with het group value of {k}, but the job allocation has maximum value of {}",
        size.saturating_sub(1)
    )
}

/// The components of a heterogeneous allocation a step runs in, each with its
/// options, when it runs in several (`A : B : C`, or `--het-group` of several);
/// `None` for a step in one.
fn het_step_components(
    req: &Request,
    env: &[(String, String)],
) -> Option<Result<Vec<HetPart>, Exit>> {
    let components: Vec<HetPart> = if !req.more.is_empty() {
        // Each part runs in the het groups its --het-group names, else in the one of
        // its place; the step's tasks are numbered in het group order.
        let first = (req.opts.clone(), req.command.clone());
        let mut parts: Vec<HetPart> = Vec::new();
        for (k, (o, command)) in std::iter::once(&first).chain(&req.more).enumerate() {
            let groups = o.het_group.clone().unwrap_or_else(|| vec![k as u32]);
            let o = with_step_wide_options(o, &req.opts);
            parts.extend(groups.into_iter().map(|g| (g, o.clone(), command.clone())));
        }
        let mut seen = std::collections::BTreeSet::new();
        if parts.iter().any(|(g, _, _)| !seen.insert(*g)) {
            return Some(Err(Exit::raw(format!(
                "{PROG}: fatal: Duplicate het groups in single srun not supported"
            ))));
        }
        parts.sort_by_key(|(g, _, _)| *g);
        parts
    } else {
        match &req.opts.het_group {
            Some(groups) if groups.len() > 1 => groups
                .iter()
                .map(|&k| (k, req.opts.clone(), req.command.clone()))
                .collect(),
            _ => return None,
        }
    };
    let Some(size) = het_size(env) else {
        return Some(Err(Exit::error(
            PROG,
            "a heterogeneous step runs in a heterogeneous allocation (salloc or sbatch with components)",
        )));
    };
    if let Some((k, _, _)) = components.iter().find(|(k, _, _)| *k >= size) {
        return Some(Err(Exit::error(PROG, het_group_beyond(*k, size))));
    }
    Some(Ok(components))
}

/// `srun A cmd : B cmd` outside an allocation: a heterogeneous job of `A` and `B`,
/// the step over its components in it, and the job given back, as Slurm's srun.
async fn het_outside_allocation(req: Request, env: Vec<(String, String)>) -> ExitCode {
    let name = req
        .opts
        .job_name
        .clone()
        .unwrap_or_else(|| submit_opts::basename(&req.command[0]).to_string());
    let more: Vec<SubmitOpts> = req.more.iter().map(|(o, _)| o.clone()).collect();
    let say = super::salloc::tells_waits(&req.opts);
    let mut alloc =
        match super::salloc::allocate_het(PROG, &req.opts, &more, env.clone(), &name, say).await {
            Ok(a) => a,
            Err(e) => return e.finish(),
        };
    let env = alloc.env(env);
    let env = alloc.with_het_env(env).await;
    let code = match het_step_components(&req, &env) {
        Some(Ok(components)) => het_step(env, components).await,
        Some(Err(e)) => e.finish(),
        None => ExitCode::FAILURE,
    };
    alloc.relinquish(code == ExitCode::SUCCESS).await;
    code
}

/// A step in several components of a heterogeneous allocation: a step in each, run at
/// once, its tasks numbered on from the components before it (`--label` shows the
/// step's numbers); srun's status is the worst of theirs.
async fn het_step(env: Vec<(String, String)>, components: Vec<HetPart>) -> ExitCode {
    // One file named for the whole step (`-o out`: no pattern, not `none` nor a task
    // number) gets every component's tasks: emptied once here (unless appended to),
    // then each component appends.
    let shared_files = |o: &SubmitOpts| -> Vec<String> {
        [&o.output, &o.error]
            .into_iter()
            .flatten()
            .filter(|p| !p.contains('%') && *p != "none" && p.parse::<u32>().is_err())
            .cloned()
            .collect()
    };
    for (_, o, _) in &components {
        if o.open_mode_append != Some(true) {
            for path in shared_files(o) {
                let _ = std::fs::File::create(path);
            }
        }
    }
    let mut runs = tokio::task::JoinSet::new();
    let mut offset = 0;
    for (i, (k, mut o, command)) in components.into_iter().enumerate() {
        if !shared_files(&o).is_empty() {
            o.open_mode_append = Some(true);
        }
        let env = model::job::het_component_env(&env, k);
        let Some(job_id) =
            allocation(&SubmitOpts::default(), &env).and_then(|id| id.parse::<u32>().ok())
        else {
            return Exit::error(PROG, format!("no job id for het group {k}")).finish();
        };
        // Only the step's first task reads srun's input.
        if i > 0 && o.input.is_none() {
            o.input = Some("none".into());
        }
        let tasks = super::step::step_shape(&o, &env).0.max(1);
        let part = Request {
            opts: o,
            command,
            multi_prog: None,
            task_nodes: Vec::new(),
            more: Vec::new(),
            task_offset: offset,
        };
        offset += tasks;
        runs.spawn(super::step::in_allocation(part, env, job_id));
    }
    let mut status = ExitCode::SUCCESS;
    while let Some(done) = runs.join_next().await {
        match done {
            Ok(code) if code != ExitCode::SUCCESS => status = code,
            Ok(_) => {}
            Err(_) => status = ExitCode::FAILURE,
        }
    }
    status
}

/// With `--het-group=N`, the allocation's environment as its component N sees it (its
/// job id and nodes, ...); the environment as it is otherwise. A step in several
/// components at once is refused: Drover runs one srun per component.
fn het_group_env(
    o: &SubmitOpts,
    env: Vec<(String, String)>,
) -> Result<Vec<(String, String)>, Exit> {
    let Some(groups) = &o.het_group else {
        return Ok(env);
    };
    // Not inside a heterogeneous allocation: outside any, Slurm's srun takes no notice
    // of --het-group; with --jobid=N it names a component of job N (`job_number`).
    let Some(size) = het_size(&env) else {
        return Ok(env);
    };
    match groups.as_slice() {
        [n] if *n < size => Ok(model::job::het_component_env(&env, *n)),
        [n] => Err(Exit::error(PROG, het_group_beyond(*n, size))),
        _ => Err(Exit::error(
            PROG,
            "a step in several components of a heterogeneous job at once is not supported: run an srun for each --het-group",
        )),
    }
}

/// The job srun runs in, if any.
pub fn allocation(o: &SubmitOpts, env: &[(String, String)]) -> Option<String> {
    let var = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    o.jobid
        .clone()
        .or_else(|| var("SLURM_JOB_ID"))
        .or_else(|| var("SLURM_JOBID"))
        .filter(|v| !v.is_empty())
}

/// The environment of the step's tasks: the exported environment plus the job's and
/// the step's variables. Each node daemon adds each task's own (`SLURM_PROCID`,
/// `SLURM_LOCALID`, `SLURM_NODEID`, `SLURMD_NODENAME`, `SLURM_TASK_PID`).
pub fn task_env(
    o: &SubmitOpts,
    env: &[(String, String)],
    job: &v1::JobInfo,
    step_id: u32,
    step_nodes: &[v1::StepNode],
) -> Vec<(String, String)> {
    let mut out = submit_opts::export_env(o.export.as_deref(), env);
    let names: Vec<&str> = step_nodes.iter().map(|n| n.name.as_str()).collect();
    let step_nodelist = model::hostlist::fold(&names);
    let nodes = if job.nodes.is_empty() {
        step_nodelist.clone()
    } else {
        job.nodes.clone()
    };
    let num_nodes = job.num_nodes.max(1);
    let cpus_on_node = (job.num_cpus / num_nodes).max(1);
    let counts: Vec<u32> = step_nodes.iter().map(|n| n.task_ids.len() as u32).collect();
    let num_tasks: u32 = counts.iter().sum::<u32>().max(1);
    let per_node = model::step::compressed_counts(&counts);
    let spec = job.spec.clone().unwrap_or_default();
    let mut set = |k: &str, v: String| submit_opts::set_env(&mut out, k, v);
    set("SLURM_JOB_ID", job.job_id.to_string());
    set("SLURM_JOBID", job.job_id.to_string());
    if !spec.name.is_empty() {
        set("SLURM_JOB_NAME", spec.name.clone());
    }
    if !spec.partition.is_empty() {
        set("SLURM_JOB_PARTITION", spec.partition.clone());
    }
    if job.array_job_id != 0
        && let Some(t) = job.array_task_id
    {
        set("SLURM_ARRAY_JOB_ID", job.array_job_id.to_string());
        set("SLURM_ARRAY_TASK_ID", t.to_string());
    }
    set("SLURM_STEP_ID", step_id.to_string());
    set("SLURM_STEPID", step_id.to_string());
    // The step's counts, or with -E the environment's where it has them.
    let kept = |k: &str| o.preserve_env && env.iter().any(|(n, _)| n == k);
    for k in ["SLURM_NTASKS", "SLURM_NPROCS"] {
        if !kept(k) {
            set(k, num_tasks.to_string());
        }
    }
    set("SLURM_STEP_NUM_TASKS", num_tasks.to_string());
    set("SLURM_STEP_NUM_NODES", step_nodes.len().max(1).to_string());
    set("SLURM_STEP_TASKS_PER_NODE", per_node.clone());
    set("SLURM_TASKS_PER_NODE", per_node);
    set("SLURM_STEP_NODELIST", step_nodelist);
    set("SLURM_JOB_NODELIST", nodes.clone());
    set("SLURM_NODELIST", nodes);
    set("SLURM_JOB_NUM_NODES", num_nodes.to_string());
    if !kept("SLURM_NNODES") {
        set("SLURM_NNODES", step_nodes.len().max(1).to_string());
    }
    set("SLURM_CPUS_ON_NODE", cpus_on_node.to_string());
    set("SLURM_SRUN_COMM_HOST", submit_opts::hostname());
    if let Some(c) = o.cpus_per_task {
        set("SLURM_CPUS_PER_TASK", c.to_string());
    }
    if let Some(t) = o.mpi {
        set("SLURM_MPI_TYPE", t.name().to_string());
    }
    for (k, v) in submit_opts::distribution_env(o) {
        set(&k, v);
    }
    if o.unbuffered {
        set("PYTHONUNBUFFERED", "1".into());
    }
    out
}

/// An output/input file name with the step's values put in: `%N` is the task's node,
/// `%n` its index in the step, `%t` the task.
pub fn step_path(
    pattern: &str,
    job: &v1::JobInfo,
    step_id: u32,
    host: &str,
    node_index: u32,
    task_id: u32,
) -> String {
    let spec = job.spec.clone().unwrap_or_default();
    let v = PatternValues {
        job_id: job.job_id,
        array_job_id: job.array_job_id,
        array_task_id: job.array_task_id,
        job_name: &spec.name,
        user: &spec.user,
        node: host,
        node_index,
        task_id: Some(task_id),
        step_id: Some(step_id.to_string()),
    };
    let p = expand_pattern(pattern, &v);
    if p.eq_ignore_ascii_case("none") {
        "/dev/null".into()
    } else {
        p
    }
}

/// `srun --help`, as Slurm 22.05's (its task plugins bind CPUs, not memory); the
/// options accepted and ignored are listed after it.
const HELP: &str = r#"Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]] [ : [OPTIONS(N)...]] executable(N) [args(N)...]

Parallel run options:
  -A, --account=name          charge job to specified account
      --acctg-freq=<datatype>=<interval> accounting and profiling sampling
                              intervals. Supported datatypes:
                              task=<interval> energy=<interval>
                              network=<interval> filesystem=<interval>
      --bb=<spec>             burst buffer specifications
      --bbf=<file_name>       burst buffer specification file
      --bcast=<dest_path>     Copy executable file to compute nodes
      --bcast-exclude=<paths> Shared object directory paths to exclude
  -b, --begin=time            defer job until HH:MM MM/DD/YY
  -c, --cpus-per-task=ncpus   number of cpus required per task
      --comment=name          arbitrary comment
      --compress[=library]    data compression library used with --bcast
      --container             Path to OCI container bundle
      --cpu-freq=min[-max[:gov]] requested cpu frequency (and governor)
  -d, --dependency=type:jobid[:time] defer job until condition on jobid is satisfied
      --deadline=time         remove the job if no ending possible before
                              this deadline (start > (deadline - time[-min]))
      --delay-boot=mins       delay boot for desired node features
  -D, --chdir=path            change remote current working directory
      --export=env_vars|NONE  environment variables passed to launcher with
                              optional values or NONE (pass no variables)
  -e, --error=err             location of stderr redirection
      --epilog=program        run "program" after launching job step
  -E, --preserve-env          env vars for node and task counts override
                              command-line flags
      --gres=list             required generic resources
      --gres-flags=opts       flags related to GRES management
  -H, --hold                  submit job in held state
  -i, --input=in              location of stdin redirection
  -I, --immediate[=secs]      exit if resources not available in "secs"
      --jobid=id              run under already allocated job
  -J, --job-name=jobname      name of job
  -k, --no-kill               do not kill job on node failure
  -K, --kill-on-bad-exit      kill the job if any task terminates with a
                              non-zero exit code
  -l, --label                 prepend task number to lines of stdout/err
  -L, --licenses=names        required license, comma separated
  -M, --clusters=names        Comma separated list of clusters to issue
                              commands to.  Default is current cluster.
                              Name of 'all' will submit to run on all clusters.
                              NOTE: SlurmDBD must up.
  -m, --distribution=type     distribution method for processes to nodes
                              (type = block|cyclic|arbitrary)
      --mail-type=type        notify on state change: BEGIN, END, FAIL or ALL
      --mail-user=user        who to send email notification for job state
                              changes
      --mcs-label=mcs         mcs label if mcs plugin mcs/group is used
      --mpi=type              type of MPI being used
      --multi-prog            if set the program name specified is the
                              configuration specification for multiple programs
  -n, --ntasks=ntasks         number of tasks to run
      --nice[=value]          decrease scheduling priority by value
      --ntasks-per-node=n     number of tasks to invoke on each node
  -N, --nodes=N               number of nodes on which to run (N = min[-max])
  -o, --output=out            location of stdout redirection
  -O, --overcommit            overcommit resources
      --overlap               Allow other steps to overlap this step
      --het-group=value       hetjob component allocation(s) in which to launch
                              application
  -p, --partition=partition   partition requested
      --power=flags           power management options
      --priority=value        set the priority of the job to value
      --prolog=program        run "program" before launching job step
      --profile=value         enable acct_gather_profile for detailed data
                              value is all or none or any combination of
                              energy, lustre, network or task
      --propagate[=rlimits]   propagate all [or specific list of] rlimits
      --pty                   run task zero in pseudo terminal
      --quit-on-interrupt     quit on single Ctrl-C
  -q, --qos=qos               quality of service
  -Q, --quiet                 quiet mode (suppress informational messages)
      --reboot                reboot block before starting job
  -r, --relative=n            run job step relative to node n of allocation
  -s, --oversubscribe         over-subscribe resources with other jobs
  -S, --core-spec=cores       count of reserved cores
      --send-libs[=yes|no]    autodetect and broadcast shared objects
      --signal=[R:]num[@time] send signal when time limit within time seconds
      --slurmd-debug=level    slurmd debug level
      --spread-job            spread job across as many nodes as possible
      --switches=max-switches{@max-time-to-wait}
                              Optimum switches and max time to wait for optimum
      --task-epilog=program   run "program" after launching task
      --task-prolog=program   run "program" before launching task
      --thread-spec=threads   count of reserved threads
  -T, --threads=threads       set srun launch fanout
  -t, --time=minutes          time limit
      --time-min=minutes      minimum time limit (if distinct)
  -u, --unbuffered            do not line-buffer stdout/err
      --use-min-nodes         if a range of node counts is given, prefer the
                              smaller count
  -v, --verbose               verbose mode (multiple -v's increase verbosity)
  -W, --wait=sec              seconds to wait after first task exits
                              before killing job
      --wckey=wckey           wckey to run job under
  -X, --disable-status        Disable Ctrl-C status feature

Constraint options:
      --cluster-constraint=list specify a list of cluster-constraints
      --contiguous            demand a contiguous range of nodes
  -C, --constraint=list       specify a list of constraints
      --mem=MB                minimum amount of real memory
      --mincpus=n             minimum number of logical processors (threads)
                              per node
      --reservation=name      allocate resources from named reservation
      --tmp=MB                minimum amount of temporary disk
  -w, --nodelist=hosts...     request a specific list of hosts
  -x, --exclude=hosts...      exclude a specific list of hosts
  -Z, --no-allocate           don't allocate nodes (must supply -w)

Consumable resources related options:
      --exact                 use only the resources requested for the step
                              (by default, all non-gres resources on each node
                              in the allocation will be used in the step)
      --exclusive[=user]      for job allocation, this allocates nodes in
                              in exclusive mode
                              for job steps, this is equivalent to --exact
      --exclusive[=mcs]       allocate nodes in exclusive mode when
                              cpu consumable resource is enabled
                              and mcs plugin is enabled (--exact implied)
                              or don't share CPUs for job steps
      --mem-per-cpu=MB        maximum amount of real memory per allocated
                              cpu required by the job.
                              --mem >= --mem-per-cpu if --mem is specified.
      --resv-ports            reserve communication ports

Affinity/Multi-core options: (when the task/affinity plugin is enabled)
                              For the following 4 options, you are
                              specifying the minimum resources available for
                              the node(s) allocated to the job.
      --sockets-per-node=S    number of sockets per node to allocate
      --cores-per-socket=C    number of cores per socket to allocate
      --threads-per-core=T    number of threads per core to allocate
  -B  --extra-node-info=S[:C[:T]]  combine request of sockets per node,
                              cores per socket and threads per core.
                              Specify an asterisk (*) as a placeholder,
                              a minimum value, or a min-max range.

      --ntasks-per-core=n     number of tasks to invoke on each core
      --ntasks-per-socket=n   number of tasks to invoke on each socket
      --cpu-bind=             Bind tasks to CPUs
                              (see "--cpu-bind=help" for options)
      --hint=                 Bind tasks according to application hints
                              (see "--hint=help" for options)

GPU scheduling options:
      --cpus-per-gpu=n        number of CPUs required per allocated GPU
  -G, --gpus=n                count of GPUs required for the job
      --gpu-bind=...          task to gpu binding options
      --gpu-freq=...          frequency and voltage of GPUs
      --gpus-per-node=n       number of GPUs required per allocated node
      --gpus-per-socket=n     number of GPUs required per allocated socket
      --gpus-per-task=n       number of GPUs required per spawned task
      --mem-per-gpu=n         real memory required per allocated GPU

Help options:
  -h, --help                  show this help message
      --usage                 display brief usage message

Other options:
  -V, --version               output version information and exit

"#;

/// `srun --usage`, as Slurm 22.05's.
const USAGE: &str = r#"Usage: srun [-N nnodes] [-n ntasks] [-i in] [-o out] [-e err]
            [-c ncpus] [-r n] [-p partition] [--hold] [-t minutes]
            [-D path] [--immediate[=secs]] [--overcommit] [--overlap] [--no-kill]
            [--oversubscribe] [--label] [--unbuffered] [-m dist] [-J jobname]
            [--jobid=id] [--verbose] [--slurmd_debug=#] [--gres=list]
            [-T threads] [-W sec] [--gres-flags=opts]
            [--licenses=names] [--clusters=cluster_names]
            [--qos=qos] [--time-min=minutes]
            [--contiguous] [--mincpus=n] [--mem=MB] [--tmp=MB] [-C list]
            [--mpi=type] [--account=name] [--dependency=type:jobid[+time]]
            [--kill-on-bad-exit] [--propagate[=rlimits] [--comment=name]
            [--cpu-bind=...] [--mem-bind=...] [--network=type]
            [--ntasks-per-node=n] [--ntasks-per-socket=n] [reservation=name]
            [--ntasks-per-core=n] [--mem-per-cpu=MB] [--preserve-env]
            [--profile=...] [--exact]
            [--mail-type=type] [--mail-user=user] [--nice[=value]]
            [--prolog=fname] [--epilog=fname]
            [--task-prolog=fname] [--task-epilog=fname]
            [--ctrl-comm-ifhn=addr] [--multi-prog] [--mcs-label=mcs]
            [--cpu-freq=min[-max[:gov]]] [--power=flags] [--spread-job]
            [--switches=max-switches{@max-time-to-wait}] [--reboot]
            [--core-spec=cores] [--thread-spec=threads]
            [--bb=burst_buffer_spec] [--bbf=burst_buffer_file]
            [--bcast=<dest_path>] [--bcast-exclude=<NONE|path1,...,pathN>]
            [--send-libs[=y|n]] [--compress[=library]]
            [--acctg-freq=<datatype>=<interval>] [--delay-boot=mins]
            [-w hosts...] [-x hosts...] [--use-min-nodes]
            [--mpi-combine=yes|no] [--het-group=value]
            [--cpus-per-gpu=n] [--gpus=n] [--gpu-bind=...] [--gpu-freq=...]
            [--gpus-per-node=n] [--gpus-per-socket=n] [--gpus-per-task=n]
            [--mem-per-gpu=MB]
            executable [args...]
"#;

pub fn run(args: &[String]) -> ExitCode {
    let env = super::sbatch::environment();
    let mut req = match parse(args, &env) {
        Ok(r) => r,
        Err(e) => return e.finish(),
    };
    if req.opts.multi_prog
        && let Err(e) = read_multi_prog(&mut req)
    {
        return e.finish();
    }
    match arbitrary_tasks(&mut req.opts, &env) {
        Ok(nodes) => req.task_nodes = nodes,
        Err(e) => return e.finish(),
    }
    if req.opts.mpi.is_none()
        && let Some((_, t)) = env.iter().find(|(k, _)| k == "SLURM_MPI_TYPE")
    {
        match model::step::MpiType::parse(t) {
            Ok(t) => req.opts.mpi = Some(t),
            Err(m) => return Exit::error(PROG, m).finish(),
        }
    }
    // A step over several components of a heterogeneous allocation: one step in each,
    // at once.
    // Outside any allocation, `srun A cmd : B cmd` allocates a heterogeneous job first.
    if !req.more.is_empty() && allocation(&req.opts, &env).is_none() {
        return client::runtime_with_io().block_on(het_outside_allocation(req, env));
    }
    if let Some(components) = het_step_components(&req, &env) {
        return match components {
            Ok(components) => client::runtime_with_io().block_on(het_step(env, components)),
            Err(e) => e.finish(),
        };
    }
    // `--het-group=N`: the step runs in component N of the heterogeneous allocation,
    // which its variables are taken from.
    let inside_het = het_size(&env).is_some();
    let env = match het_group_env(&req.opts, env) {
        Ok(env) => env,
        Err(e) => return e.finish(),
    };
    // `--jobid=N --het-group=K` from outside the allocation: component K of job N.
    let target = match (allocation(&req.opts, &env), req.opts.het_group.as_deref()) {
        (Some(job), Some([k])) if !inside_het && req.opts.jobid.is_some() => {
            Some(format!("{}+{k}", job.split('.').next().unwrap_or_default()))
        }
        (job, _) => job,
    };
    match target {
        Some(job) => client::runtime_with_io().block_on(async move {
            match job_number(&job).await {
                Ok(id) => super::step::in_allocation(req, env, id).await,
                Err(e) => e.finish(),
            }
        }),
        None => client::runtime_with_io().block_on(outside_allocation(req, env)),
    }
}

/// The number of the job `text` names: `N` (a step's `.S` left aside), or `N+K`, a
/// component of the heterogeneous job N, which the controller is asked for.
async fn job_number(text: &str) -> Result<u32, Exit> {
    let job = text.split('.').next().unwrap_or_default();
    let invalid = || Exit::error(PROG, format!("Invalid job id specified: {text}"));
    if let Ok(id) = job.parse::<u32>() {
        return if id > 0 { Ok(id) } else { Err(invalid()) };
    }
    if !job.contains('+') || model::job_id::JobIdSpec::parse(job).is_err() {
        return Err(invalid());
    }
    let mut ctld = calls::connect().await.map_err(|e| Exit::error(PROG, e))?;
    let ask = calls::one_job(job);
    let reply = ctld
        .list_jobs(ask)
        .await
        .map_err(|s| Exit::error(PROG, calls::status_text(&s)))?;
    reply
        .into_inner()
        .jobs
        .first()
        .map(|j| j.job_id)
        .ok_or_else(invalid)
}

/// The node of each task, as Slurm 22.05's srun takes them: from `-w` with
/// `-m arbitrary` (`-n` must then count as many), or from the hostfile
/// `SLURM_HOSTFILE` names when `-w` is not given (`-m` then defaults to arbitrary). The
/// hostfile gives as many tasks as `-n`, else `-N` (the allocation's inside one), else
/// its whole list. The job's and the step's nodes are those named, once each. Empty:
/// neither applies.
fn arbitrary_tasks(o: &mut SubmitOpts, env: &[(String, String)]) -> Result<Vec<String>, Exit> {
    use model::distribution::{Distribution, NodeDistribution};
    let var = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let node_part = o.distribution.and_then(|d| d.nodes);
    let arbitrary = node_part == Some(NodeDistribution::Arbitrary);
    let bad_list = |e: model::hostlist::HostlistError| Exit::error(PROG, e.to_string());
    let nodes = match (o.nodelist.as_deref(), var("SLURM_HOSTFILE")) {
        (Some(list), _) if arbitrary && !list.is_empty() => {
            let nodes = model::hostlist::expand(list).map_err(bad_list)?;
            if let Some(n) = o.ntasks
                && n as usize != nodes.len()
            {
                return Err(Exit::error(
                    PROG,
                    format!(
                        "--ntasks={n} does not match the {} nodes of --nodelist for \
                         --distribution=arbitrary",
                        nodes.len()
                    ),
                ));
            }
            nodes
        }
        (None, Some(path)) if !path.is_empty() && (node_part.is_none() || arbitrary) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                Exit::error(PROG, format!("Unable to open SLURM_HOSTFILE {path}: {e}"))
            })?;
            let mut nodes = model::distribution::hostfile_nodes(&text).map_err(bad_list)?;
            let count = o
                .ntasks
                .or(o.nodes)
                .or_else(|| var("SLURM_NNODES").and_then(|n| n.parse().ok()));
            if let Some(count) = count {
                if nodes.len() < count as usize {
                    return Err(Exit::raw(format!(
                        "{PROG}: error: Too few NodeNames in Slurm Hostfile\n\
                         {PROG}: error: Failure getting NodeNames from hostfile"
                    )));
                }
                nodes.truncate(count as usize);
            }
            if nodes.is_empty() {
                return Err(Exit::error(PROG, "Failure getting NodeNames from hostfile"));
            }
            if o.distribution.is_none() {
                o.distribution = Some(Distribution {
                    nodes: Some(NodeDistribution::Arbitrary),
                    sockets: None,
                    cores: None,
                    pack: None,
                });
            }
            nodes
        }
        _ => return Ok(Vec::new()),
    };
    let mut distinct: Vec<&String> = Vec::new();
    for node in &nodes {
        if !distinct.contains(&node) {
            distinct.push(node);
        }
    }
    o.nodelist = Some(model::hostlist::fold(&distinct));
    o.nodes = Some(distinct.len() as u32);
    o.ntasks = Some(nodes.len() as u32);
    Ok(nodes)
}

/// `--multi-prog`: reads and checks the configuration the command names, as Slurm's srun
/// does before anything runs; without `-n` the step has as many tasks as it names.
fn read_multi_prog(req: &mut Request) -> Result<(), Exit> {
    let name = req.command[0].clone();
    let text = std::fs::read_to_string(&name).map_err(|_| {
        Exit::error(
            PROG,
            format!("Could not open multi_prog config file {name}"),
        )
    })?;
    let checked = model::multi_prog::check(&text, &name, req.opts.ntasks).map_err(|lines| {
        Exit::raw(
            lines
                .iter()
                .map(|l| format!("{PROG}: error: {l}"))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    })?;
    req.opts.ntasks = Some(checked.ntasks);
    req.multi_prog = Some((text, checked.programs));
    Ok(())
}

/// Outside an allocation, as Slurm's srun: takes one for the step (with srun's options:
/// `-N`, `-n`, `-c`, `--mem`, `-t`, `-p`, ...), runs the step in it, with its output live,
/// and gives it back: the job ends COMPLETED, or FAILED with a failed step.
async fn outside_allocation(mut req: Request, env: Vec<(String, String)>) -> ExitCode {
    let name = req
        .opts
        .job_name
        .clone()
        .unwrap_or_else(|| submit_opts::basename(&req.command[0]).to_string());
    if req.opts.test_only {
        return super::salloc::will_run(PROG, &req.opts, env, &name).await;
    }
    let mut alloc = match super::salloc::allocate(
        PROG,
        &req.opts,
        env.clone(),
        &name,
        super::salloc::tells_waits(&req.opts),
    )
    .await
    {
        Ok(a) => a,
        Err(e) => return e.finish(),
    };
    // `-v` names the allocation once, with the step's launch (`step::in_allocation`).
    let job_id = alloc.job.job_id;
    // `-N MIN-MAX` (or `--spread-job`): the step runs on every node the job got
    // (without `-n`, a task on each), as Slurm's.
    if req.opts.most_nodes() > 0 {
        let nodes = alloc.job.num_nodes.max(1);
        req.opts.nodes = Some(nodes);
        req.opts.max_nodes = None;
        if req.opts.ntasks.is_none() && req.opts.ntasks_per_node.is_none() {
            req.opts.ntasks = Some(nodes);
        }
    }
    // `--exclusive -c N` without `-n`: as many tasks as the whole nodes' CPUs hold.
    if let (None, true, Some(per_task)) =
        (req.opts.ntasks, req.opts.exclusive, req.opts.cpus_per_task)
    {
        req.opts.ntasks = Some((alloc.job.num_cpus / per_task.max(1)).max(1));
    }
    let env = alloc.env(env);
    // The step runs while srun, holding the allocation, prints what `scontrol notify`
    // sends the job.
    let step = super::step::in_allocation(req, env, job_id);
    tokio::pin!(step);
    let mut watch = tokio::time::interval(super::salloc::WATCH_INTERVAL);
    let code = loop {
        tokio::select! {
            code = &mut step => break code,
            _ = watch.tick() => alloc.tell_notices(PROG).await,
        }
    };
    alloc.relinquish(code == ExitCode::SUCCESS).await;
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn opts_with(kv: &[(&str, &str)]) -> SubmitOpts {
        let mut o = SubmitOpts::default();
        for (k, v) in kv {
            o.apply(Command::Srun, k, v, Source::Cli).unwrap();
        }
        o
    }

    fn job() -> v1::JobInfo {
        v1::JobInfo {
            job_id: 41,
            array_job_id: 40,
            array_task_id: Some(1),
            nodes: "gpu[01-02]".into(),
            num_nodes: 2,
            num_cpus: 8,
            spec: Some(v1::JobSpec {
                name: "train".into(),
                user: "ada".into(),
                partition: "gpu".into(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn client_command_lines() {
        let r = parse(
            &s(&[
                "--unbuffered",
                "--output",
                "/d/%j/%j_%t_log.out",
                "--error",
                "/d/%j/%j_%t_log.err",
                "python",
                "-u",
                "-m",
                "submitit.core._submit",
                "/d/%j",
            ]),
            &[],
        )
        .unwrap();
        assert!(r.opts.unbuffered);
        assert_eq!(r.opts.output.as_deref(), Some("/d/%j/%j_%t_log.out"));
        assert_eq!(
            r.command,
            ["python", "-u", "-m", "submitit.core._submit", "/d/%j"]
        );
        let r = parse(
            &s(&[
                "-n1",
                "--cpu-bind=q",
                "--cpus-per-task=1",
                "--nodes=1",
                "python",
                "-m",
                "snakemake",
                "-n",
            ]),
            &[],
        )
        .unwrap();
        assert_eq!(
            (r.opts.ntasks, r.opts.cpus_per_task, r.opts.nodes),
            (Some(1), Some(1), Some(1))
        );
        assert_eq!(r.opts.cpu_bind.as_deref(), Some("q"));
        assert_eq!(r.command, ["python", "-m", "snakemake", "-n"]);
        assert_eq!(
            parse(&s(&["-n", "1"]), &[]).unwrap_err().lines(),
            ["srun: fatal: No command given to execute."]
        );
        let r = parse(&s(&["-n", "4", "-l", "-K", "hostname"]), &[]).unwrap();
        assert_eq!(r.opts.ntasks, Some(4));
        assert!(r.opts.label && r.opts.kill_on_bad_exit);
        let help = parse(&s(&["--help"]), &[]).unwrap_err();
        assert_eq!(help.code, 0);
        assert!(help.stdout.starts_with("Usage: srun [OPTIONS(0)..."));
        assert!(help.stdout.contains("\nParallel run options:\n"));
        assert!(help.stdout.contains("\n  -N, --nodes=N "));
        let usage = parse(&s(&["--usage"]), &[]).unwrap_err();
        assert!(usage.stdout.ends_with("            executable [args...]\n"));
    }

    #[test]
    fn mpi_types_are_listed_and_checked_as_slurm_does() {
        let list = parse(&s(&["--mpi=list", "true"]), &[]).unwrap_err();
        assert_eq!(
            (list.code, list.stdout.as_str()),
            (0, "MPI plugin types are...\n\tnone\n\tpmi2\n")
        );
        assert_eq!(
            parse(&s(&["--mpi=pmix", "true"]), &[]).unwrap_err().lines(),
            ["srun: error: Invalid MPI type 'pmix', --mpi=list for acceptable types"]
        );
        let r = parse(&s(&["--mpi=pmi2", "true"]), &[]).unwrap();
        assert_eq!(r.opts.mpi, Some(model::step::MpiType::Pmi2));
    }

    #[test]
    fn input_variables_come_before_the_command_line() {
        let env = |kv: &[(&str, &str)]| -> Vec<(String, String)> {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let outside = env(&[
            ("SLURM_NPROCS", "5"),
            ("SLURM_NNODES", "1-2"),
            ("SLURM_STDOUTMODE", "/tmp/out"),
            ("SLURM_OVERCOMMIT", "1"),
            ("SLURM_DEBUG", "1"),
        ]);
        let r = parse(&s(&["true"]), &outside).unwrap();
        assert_eq!(r.opts.ntasks, Some(5));
        assert_eq!((r.opts.nodes, r.opts.max_nodes), (Some(1), Some(2)));
        assert_eq!(r.opts.verbose, 1);
        assert_eq!(r.opts.output.as_deref(), Some("/tmp/out"));
        assert!(r.opts.overcommit);
        let r = parse(&s(&["-n2", "-o", "x", "true"]), &outside).unwrap();
        assert_eq!(
            (r.opts.ntasks, r.opts.output.as_deref()),
            (Some(2), Some("x"))
        );
        // In a job, the job's counts are the step's defaults, read as the step is shaped.
        let inside = env(&[("SLURM_JOB_ID", "4"), ("SLURM_NTASKS", "3")]);
        assert_eq!(parse(&s(&["true"]), &inside).unwrap().opts.ntasks, None);
    }

    #[test]
    fn finds_the_allocation_from_the_job_id_alone() {
        let o = SubmitOpts::default();
        let env = vec![("SLURM_JOB_ID".to_string(), "41".to_string())];
        assert_eq!(allocation(&o, &env).as_deref(), Some("41"));
        let env = vec![("SLURM_JOBID".to_string(), "42".to_string())];
        assert_eq!(allocation(&o, &env).as_deref(), Some("42"));
        assert_eq!(allocation(&o, &[]), None);
        let o = opts_with(&[("jobid", "7")]);
        assert_eq!(allocation(&o, &env).as_deref(), Some("7"));
    }

    #[test]
    fn task_environment() {
        let env = vec![
            ("SLURM_JOB_ID".to_string(), "41".to_string()),
            ("PATH".to_string(), "/bin".to_string()),
        ];
        let o = opts_with(&[("cpus-per-task", "2")]);
        let nodes = [
            v1::StepNode {
                name: "gpu01".into(),
                task_ids: vec![0, 1],
                ..Default::default()
            },
            v1::StepNode {
                name: "gpu02".into(),
                task_ids: vec![2],
                ..Default::default()
            },
        ];
        let got = task_env(&o, &env, &job(), 3, &nodes);
        let get = |k: &str| got.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("PATH"), Some("/bin"));
        assert_eq!(get("SLURM_STEP_ID"), Some("3"));
        assert_eq!(get("SLURM_STEPID"), Some("3"));
        // Each task's own variables are the node daemon's to set.
        assert_eq!(get("SLURM_PROCID"), None);
        assert_eq!(get("SLURM_NTASKS"), Some("3"));
        assert_eq!(get("SLURM_NPROCS"), Some("3"));
        assert_eq!(get("SLURM_STEP_NUM_TASKS"), Some("3"));
        assert_eq!(get("SLURM_STEP_NUM_NODES"), Some("2"));
        assert_eq!(get("SLURM_STEP_TASKS_PER_NODE"), Some("2,1"));
        assert_eq!(get("SLURM_JOB_NODELIST"), Some("gpu[01-02]"));
        assert_eq!(get("SLURM_NODELIST"), Some("gpu[01-02]"));
        assert_eq!(get("SLURM_JOB_NUM_NODES"), Some("2"));
        assert_eq!(get("SLURM_NNODES"), Some("2"));
        assert_eq!(get("SLURM_CPUS_ON_NODE"), Some("4"));
        assert_eq!(get("SLURM_CPUS_PER_TASK"), Some("2"));
        assert_eq!(get("SLURM_ARRAY_JOB_ID"), Some("40"));
        assert_eq!(get("SLURM_ARRAY_TASK_ID"), Some("1"));
        assert_eq!(get("SLURM_STEP_NODELIST"), Some("gpu[01-02]"));
        assert_eq!(got.iter().filter(|(k, _)| k == "SLURM_JOB_ID").count(), 1);
        assert_eq!(get("SLURM_DISTRIBUTION"), None, "only with -m");
        // A step of one node of the job's two: SLURM_NNODES is the step's, unless -E
        // keeps the environment's counts.
        let batch_env = [
            env.clone(),
            vec![
                ("SLURM_NNODES".to_string(), "2".to_string()),
                ("SLURM_NTASKS".to_string(), "6".to_string()),
            ],
        ]
        .concat();
        let counts = |o: &SubmitOpts| {
            let got = task_env(o, &batch_env, &job(), 3, &nodes[..1]);
            ["SLURM_NNODES", "SLURM_NTASKS", "SLURM_JOB_NUM_NODES"].map(|k| {
                got.iter()
                    .find(|(n, _)| n == k)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default()
            })
        };
        assert_eq!(counts(&SubmitOpts::default()), ["1", "2", "2"]);
        assert_eq!(counts(&opts_with(&[("preserve-env", "")])), ["2", "6", "2"]);
        let planes = task_env(
            &opts_with(&[("distribution", "plane=2")]),
            &env,
            &job(),
            3,
            &nodes,
        );
        let planes: Vec<&(String, String)> = planes
            .iter()
            .filter(|(k, _)| k.starts_with("SLURM_DIST"))
            .collect();
        assert_eq!(
            planes,
            [
                &("SLURM_DISTRIBUTION".to_string(), "plane".to_string()),
                &("SLURM_DIST_PLANESIZE".to_string(), "2".to_string())
            ]
        );
        // --export=NONE keeps only SLURM_* variables.
        let o = opts_with(&[("export", "NONE")]);
        assert!(
            task_env(&o, &env, &job(), 0, &nodes)
                .iter()
                .all(|(k, _)| k.starts_with("SLURM"))
        );
    }

    #[test]
    fn output_patterns() {
        assert_eq!(
            step_path("/d/%j/%j_%t_log.out", &job(), 0, "gpu01", 0, 0),
            "/d/41/41_0_log.out"
        );
        assert_eq!(
            step_path("%A_%a-%N-%s-%J-%x-%u", &job(), 2, "gpu01", 0, 0),
            "40_1-gpu01-2-41.2-train-ada"
        );
        assert_eq!(
            step_path("out-%t-%n-%N", &job(), 0, "gpu02", 1, 5),
            "out-5-1-gpu02"
        );
        assert_eq!(step_path("none", &job(), 0, "h", 0, 0), "/dev/null");
    }
}
