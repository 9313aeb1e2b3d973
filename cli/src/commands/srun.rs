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
use crate::{client, opts};
use model::pattern::{PatternValues, expand_pattern};
use proto::v1;
use std::process::ExitCode;

const PROG: &str = "srun";

/// What the command line asks for.
#[derive(Debug)]
pub struct Request {
    pub opts: SubmitOpts,
    pub command: Vec<String>,
}

pub fn parse(args: &[String]) -> Result<Option<Request>, Exit> {
    let p = opts::parse(submit_opts::specs(Command::Srun), args, true)
        .map_err(|e| Exit::usage(PROG, &e))?;
    let mut o = SubmitOpts::default();
    o.apply_all(Command::Srun, &p.opts, Source::Cli)?;
    if o.help || o.usage || o.version {
        return Ok(None);
    }
    if o.verbose > 0 {
        eprint!("{}", o.defined_options(PROG));
    }
    if p.positional.is_empty() {
        return Err(Exit::raw(format!(
            "{PROG}: fatal: No command given to execute."
        )));
    }
    Ok(Some(Request {
        opts: o,
        command: p.positional,
    }))
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
    set("SLURM_NTASKS", num_tasks.to_string());
    set("SLURM_NPROCS", num_tasks.to_string());
    set("SLURM_STEP_NUM_TASKS", num_tasks.to_string());
    set("SLURM_STEP_NUM_NODES", step_nodes.len().max(1).to_string());
    set("SLURM_STEP_TASKS_PER_NODE", per_node.clone());
    set("SLURM_TASKS_PER_NODE", per_node);
    set("SLURM_STEP_NODELIST", step_nodelist);
    set("SLURM_JOB_NODELIST", nodes.clone());
    set("SLURM_NODELIST", nodes);
    set("SLURM_JOB_NUM_NODES", num_nodes.to_string());
    set("SLURM_NNODES", num_nodes.to_string());
    set("SLURM_CPUS_ON_NODE", cpus_on_node.to_string());
    set("SLURM_SRUN_COMM_HOST", submit_opts::hostname());
    if let Some(c) = o.cpus_per_task {
        set("SLURM_CPUS_PER_TASK", c.to_string());
    }
    if let Some(t) = o.mpi {
        set("SLURM_MPI_TYPE", t.name().to_string());
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

const HELP: &str = "Usage: srun [OPTIONS(0)...] executable(0) [args(0)...]

  -c, --cpus-per-task=ncpus   number of cpus required per task
      --cpu-bind=...          task to cpu binding (accepted)
  -D, --chdir=path            change remote current working directory
  -e, --error=err             location of stderr redirection
      --export=env_vars|NONE  environment passed to the task
  -i, --input=in              location of stdin redirection
  -J, --job-name=jobname      name of job
      --jobid=id              run under already allocated job
  -n, --ntasks=ntasks         number of tasks to run
  -N, --nodes=N               number of nodes on which to run
      --ntasks-per-node=n     number of tasks to invoke on each node
  -K, --kill-on-bad-exit      kill the job if any task terminates with a
                              non-zero exit code
  -l, --label                 prepend task number to lines of stdout/err
      --mpi=type              type of MPI being used (none, pmi2; list)
      --pty                   run task zero in pseudo terminal mode
  -o, --output=out            location of stdout redirection
  -p, --partition=partition   partition requested (outside an allocation)
  -t, --time=minutes          time limit (outside an allocation)
  -u, --unbuffered            do not line-buffer stdout/err
      --mem=MB                minimum amount of real memory
      --gres=list, -G, --gpus=n  generic resources (accepted)
  -h, --help                  show this help message
";

pub fn run(args: &[String]) -> ExitCode {
    let mut req = match parse(args) {
        Ok(Some(r)) => r,
        Ok(None) => {
            if args.iter().any(|a| a == "-V" || a == "--version") {
                print!("{}", args::version_line());
            } else {
                print!("{HELP}{}", submit_opts::ignored_help(Command::Srun));
            }
            return ExitCode::SUCCESS;
        }
        Err(e) => return e.finish(),
    };
    let env = super::sbatch::environment();
    if req.opts.mpi.is_none()
        && let Some((_, t)) = env.iter().find(|(k, _)| k == "SLURM_MPI_TYPE")
    {
        match model::step::MpiType::parse(t) {
            Ok(t) => req.opts.mpi = Some(t),
            Err(m) => return Exit::error(PROG, m).finish(),
        }
    }
    match allocation(&req.opts, &env) {
        Some(job) => match job.split('.').next().unwrap_or("").parse::<u32>() {
            Ok(id) if id > 0 => {
                client::runtime_with_io().block_on(super::step::in_allocation(req, env, id))
            }
            _ => Exit::error(PROG, format!("Invalid job id specified: {job}")).finish(),
        },
        None => client::runtime_with_io().block_on(outside_allocation(req, env)),
    }
}

fn signal_text(sig: i32) -> String {
    // SAFETY: strsignal returns a pointer to a static or thread-local string.
    let p = unsafe { libc::strsignal(sig) };
    if p.is_null() {
        return format!("Signal {sig}");
    }
    // SAFETY: non-null, NUL-terminated by contract.
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned()
}

/// Reports a task that failed (`srun: error: HOST: task N: ...`) and gives srun's exit
/// status for it: 128+signal when killed, else its exit code. `None`: it exited with 0.
pub fn task_failure(host: &str, task: u32, code: i32, signal: i32) -> Option<u8> {
    if signal != 0 {
        eprintln!(
            "{PROG}: error: {host}: task {task}: {}",
            signal_text(signal)
        );
        return Some((128 + signal).clamp(0, 255) as u8);
    }
    if code != 0 {
        eprintln!("{PROG}: error: {host}: task {task}: Exited with exit code {code}");
        return Some(code.clamp(0, 255) as u8);
    }
    None
}

/// Outside an allocation, as Slurm's srun: takes one for the step (with srun's options:
/// `-N`, `-n`, `-c`, `--mem`, `-t`, `-p`, ...), runs the step in it, with its output live,
/// and gives it back: the job ends COMPLETED, or FAILED with a failed step.
async fn outside_allocation(req: Request, env: Vec<(String, String)>) -> ExitCode {
    let name = req
        .opts
        .job_name
        .clone()
        .unwrap_or_else(|| submit_opts::basename(&req.command[0]).to_string());
    let alloc = match super::salloc::allocate(PROG, &req.opts, env.clone(), &name, false).await {
        Ok(a) => a,
        Err(e) => return e.finish(),
    };
    let job_id = alloc.job.job_id;
    if req.opts.verbose > 0 {
        eprintln!("{}", allocation_line(&alloc.job));
    }
    let env = alloc.env(env);
    let code = super::step::in_allocation(req, env, job_id).await;
    alloc.relinquish(code == ExitCode::SUCCESS).await;
    code
}

/// What `srun -v` says of the allocation it got, as Slurm's srun does:
/// ``jobid 7: nodes(2):`n[1-2]', cpu counts: 4(x2)``.
fn allocation_line(job: &v1::JobInfo) -> String {
    let nodes = job.num_nodes.max(1);
    let counts = if job.num_cpus.is_multiple_of(nodes) {
        format!("{}(x{nodes})", job.num_cpus / nodes)
    } else {
        job.num_cpus.to_string()
    };
    format!(
        "{PROG}: jobid {}: nodes({}):`{}', cpu counts: {counts}",
        job.job_id, job.num_nodes, job.nodes
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbose_names_the_allocation() {
        assert_eq!(
            allocation_line(&job()),
            "srun: jobid 41: nodes(2):`gpu[01-02]', cpu counts: 4(x2)"
        );
    }

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
        let r = parse(&s(&[
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
        ]))
        .unwrap()
        .unwrap();
        assert!(r.opts.unbuffered);
        assert_eq!(r.opts.output.as_deref(), Some("/d/%j/%j_%t_log.out"));
        assert_eq!(
            r.command,
            ["python", "-u", "-m", "submitit.core._submit", "/d/%j"]
        );
        let r = parse(&s(&[
            "-n1",
            "--cpu-bind=q",
            "--cpus-per-task=1",
            "--nodes=1",
            "python",
            "-m",
            "snakemake",
            "-n",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            (r.opts.ntasks, r.opts.cpus_per_task, r.opts.nodes),
            (Some(1), Some(1), Some(1))
        );
        assert_eq!(r.opts.cpu_bind.as_deref(), Some("q"));
        assert_eq!(r.command, ["python", "-m", "snakemake", "-n"]);
        assert_eq!(
            parse(&s(&["-n", "1"])).unwrap_err().lines(),
            ["srun: fatal: No command given to execute."]
        );
        let r = parse(&s(&["-n", "4", "-l", "-K", "hostname"]))
            .unwrap()
            .unwrap();
        assert_eq!(r.opts.ntasks, Some(4));
        assert!(r.opts.label && r.opts.kill_on_bad_exit);
        assert!(parse(&s(&["--help"])).unwrap().is_none());
    }

    #[test]
    fn mpi_types_are_listed_and_checked_as_slurm_does() {
        let list = parse(&s(&["--mpi=list", "true"])).unwrap_err();
        assert_eq!(
            (list.code, list.stdout.as_str()),
            (0, "MPI plugin types are...\n\tnone\n\tpmi2\n")
        );
        assert_eq!(
            parse(&s(&["--mpi=pmix", "true"])).unwrap_err().lines(),
            ["srun: error: Invalid MPI type 'pmix', --mpi=list for acceptable types"]
        );
        let r = parse(&s(&["--mpi=pmi2", "true"])).unwrap().unwrap();
        assert_eq!(r.opts.mpi, Some(model::step::MpiType::Pmi2));
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
