//! `srun`: runs a command as a job step.
//!
//! Inside an allocation (`SLURM_JOB_ID` or `SLURM_JOBID` set, or `--jobid`; nothing else
//! of the job's environment is needed, as Snakemake strips it) it asks the controller for
//! a step (`CreateStep`), runs the command here as the step's one task (srun runs on the
//! job's batch node) with the Slurm task environment, writes `--output/--error/--input`
//! with their filename patterns (`%j %J %t %N %A %a %s %u %x`), forwards SIGINT, SIGTERM,
//! SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to the task, reports the exit status
//! (`CompleteStep`) and exits with the task's code (128+signal when killed).
//!
//! Outside an allocation it submits the command as a batch job (like `sbatch --wrap`),
//! waits for it, copies its output (kept meanwhile in hidden files in the current
//! directory, which must be shared with the node) to stdout and stderr, and exits with
//! its code; Ctrl-C cancels the job. Interactive streaming of output and stdin, and steps
//! with several tasks or nodes, come in a later version.

use super::sbatch::Submitter;
use super::submit_opts::{self, Command, Source, SubmitOpts, build_spec};
use crate::args;
use crate::calls;
use crate::exit::Exit;
use crate::jobs;
use crate::times;
use crate::{client, opts};
use model::pattern::{PatternValues, expand_pattern};
use proto::v1;
use std::fs::File;
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
    if p.positional.is_empty() {
        return Err(Exit::raw(format!(
            "{PROG}: fatal: No command given to execute."
        )));
    }
    if o.ntasks.is_some_and(|n| n > 1) || o.nodes.is_some_and(|n| n > 1) {
        return Err(Exit::error(
            PROG,
            "steps with more than one task or node are not supported yet",
        ));
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

/// The task's environment: the exported environment plus the step's variables.
pub fn task_env(
    o: &SubmitOpts,
    env: &[(String, String)],
    job: &v1::JobInfo,
    step_id: u32,
    node: &str,
) -> Vec<(String, String)> {
    let mut out = submit_opts::export_env(o.export.as_deref(), env);
    let nodes = if job.nodes.is_empty() {
        node.to_string()
    } else {
        job.nodes.clone()
    };
    let num_nodes = job.num_nodes.max(1);
    let cpus_on_node = (job.num_cpus / num_nodes).max(1);
    let spec = job.spec.clone().unwrap_or_default();
    let mut set = |k: &str, v: String| match out.iter_mut().find(|(n, _)| n == k) {
        Some(slot) => slot.1 = v,
        None => out.push((k.to_string(), v)),
    };
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
    set("SLURM_PROCID", "0".into());
    set("SLURM_LOCALID", "0".into());
    set("SLURM_NODEID", "0".into());
    set("SLURM_GTIDS", "0".into());
    set("SLURM_NTASKS", "1".into());
    set("SLURM_NPROCS", "1".into());
    set("SLURM_STEP_NUM_TASKS", "1".into());
    set("SLURM_STEP_NUM_NODES", "1".into());
    set("SLURM_STEP_TASKS_PER_NODE", "1".into());
    set("SLURM_TASKS_PER_NODE", "1".into());
    set("SLURM_STEP_NODELIST", node.to_string());
    set("SLURMD_NODENAME", node.to_string());
    set("SLURM_JOB_NODELIST", nodes.clone());
    set("SLURM_NODELIST", nodes);
    set("SLURM_JOB_NUM_NODES", num_nodes.to_string());
    set("SLURM_NNODES", num_nodes.to_string());
    set("SLURM_CPUS_ON_NODE", cpus_on_node.to_string());
    if let Some(c) = o.cpus_per_task {
        set("SLURM_CPUS_PER_TASK", c.to_string());
    }
    if o.unbuffered {
        set("PYTHONUNBUFFERED", "1".into());
    }
    out
}

/// An output/input file name with the step's values put in.
pub fn step_path(pattern: &str, job: &v1::JobInfo, step_id: u32, host: &str) -> String {
    let spec = job.spec.clone().unwrap_or_default();
    let v = PatternValues {
        job_id: job.job_id,
        array_job_id: job.array_job_id,
        array_task_id: job.array_task_id,
        job_name: &spec.name,
        user: &spec.user,
        node: host,
        node_index: 0,
        task_id: Some(0),
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
  -n, --ntasks=ntasks         number of tasks to run (1 in this version)
  -N, --nodes=N               number of nodes on which to run (1 in this version)
  -o, --output=out            location of stdout redirection
  -p, --partition=partition   partition requested (outside an allocation)
  -t, --time=minutes          time limit (outside an allocation)
  -u, --unbuffered            do not line-buffer stdout/err
      --mem=MB                minimum amount of real memory
      --gres=list, -G, --gpus=n  generic resources (accepted)
  -h, --help                  show this help message
";

pub fn run(args: &[String]) -> ExitCode {
    let req = match parse(args) {
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
    match allocation(&req.opts, &env) {
        Some(job) => match job.split('.').next().unwrap_or("").parse::<u32>() {
            Ok(id) if id > 0 => client::runtime_with_io().block_on(in_allocation(req, env, id)),
            _ => Exit::error(PROG, format!("Invalid job id specified: {job}")).finish(),
        },
        None => client::runtime_with_io().block_on(as_job(req, env)),
    }
}

fn open_out(path: &str, append: bool) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(path)
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

async fn in_allocation(req: Request, env: Vec<(String, String)>, job_id: u32) -> ExitCode {
    let o = &req.opts;
    let host = submit_opts::hostname();
    let fail = |e: String| {
        Exit::error(PROG, format!("Unable to create step for job {job_id}: {e}")).finish()
    };
    let mut client = match calls::connect().await {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let (_, uid, _) = client::current_user();
    let name = o
        .job_name
        .clone()
        .unwrap_or_else(|| submit_opts::basename(&req.command[0]).to_string());
    let reply = match client
        .create_step(v1::CreateStepRequest {
            job_id,
            name,
            num_tasks: 1,
            requester_uid: uid,
        })
        .await
    {
        Ok(r) => r.into_inner(),
        Err(s) => return fail(calls::status_text(&s)),
    };
    let step_id = reply.step_id;
    let job = reply.job.unwrap_or(v1::JobInfo {
        job_id,
        ..Default::default()
    });
    // The task runs here, on the job's batch node: name it as the cluster does.
    let host = if job.batch_host.is_empty() {
        env.iter()
            .find(|(k, _)| k == "SLURMD_NODENAME")
            .map(|(_, v)| v.clone())
            .unwrap_or(host)
    } else {
        job.batch_host.clone()
    };
    let spec = job.spec.clone().unwrap_or_default();
    let append = o.open_mode_append.unwrap_or_else(|| {
        match env
            .iter()
            .find(|(k, _)| k == "SLURM_OPEN_MODE")
            .map(|(_, v)| v.as_str())
        {
            Some(v) => v.starts_with(['a', 'A']),
            None => spec.open_mode_append,
        }
    });

    let mut cmd = tokio::process::Command::new(&req.command[0]);
    cmd.args(&req.command[1..])
        .env_clear()
        .envs(task_env(o, &env, &job, step_id, &host));
    if let Some(dir) = &o.chdir {
        cmd.current_dir(dir);
    }
    let fail_io = |what: &str, path: &str, e: std::io::Error| {
        Exit::error(PROG, format!("Could not open {what} file {path}: {e}")).finish()
    };
    let out_path = o
        .output
        .as_deref()
        .map(|p| step_path(p, &job, step_id, &host));
    let err_path = o
        .error
        .as_deref()
        .map(|p| step_path(p, &job, step_id, &host));
    let mut out_file = None;
    if let Some(p) = &out_path {
        match open_out(p, append) {
            Ok(f) => out_file = Some(f),
            Err(e) => return fail_io("output", p, e),
        }
    }
    match (&err_path, &out_file) {
        (Some(p), _) if Some(p) != out_path.as_ref() => match open_out(p, append) {
            Ok(f) => {
                cmd.stderr(f);
            }
            Err(e) => return fail_io("error", p, e),
        },
        (_, Some(f)) => {
            if let Ok(f2) = f.try_clone() {
                cmd.stderr(f2);
            }
        }
        _ => {}
    }
    if let Some(f) = out_file {
        cmd.stdout(f);
    }
    if let Some(p) = o
        .input
        .as_deref()
        .map(|p| step_path(p, &job, step_id, &host))
    {
        match File::open(&p) {
            Ok(f) => {
                cmd.stdin(f);
            }
            Err(e) => return fail_io("input", &p, e),
        }
    }
    // Without a terminal the task gets its own process group, so that a signal srun
    // receives reaches it once, through srun; at a terminal it stays in the foreground
    // group, which the terminal signals directly.
    // The task dies with srun, so that killing srun (the node daemon kills the batch
    // script's process group) cannot leave it running outside that group.
    let tty = nix::unistd::isatty(std::io::stdin()).unwrap_or(false);
    if !tty {
        cmd.process_group(0);
    }
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let status = match cmd.spawn() {
        Ok(child) => wait_forwarding(child, tty).await,
        Err(e) => {
            let code = e.raw_os_error().unwrap_or(1);
            eprintln!(
                "slurmstepd-{host}: error: execve(): {}: {}",
                req.command[0],
                io_error_text(&e)
            );
            Err(code)
        }
    };
    let (exit_code, exit_signal) = match status {
        Ok((code, sig)) => (code, sig),
        Err(code) => (code, 0),
    };
    let _ = client
        .complete_step(v1::CompleteStepRequest {
            job_id,
            step_id,
            exit_code,
            exit_signal,
        })
        .await;
    task_failure(&host, exit_code, exit_signal).unwrap_or(ExitCode::SUCCESS)
}

/// Reports a task that failed (`srun: error: HOST: task 0: ...`) and gives srun's exit
/// status for it: 128+signal when killed, else its exit code. `None`: it exited with 0.
fn task_failure(host: &str, code: i32, signal: i32) -> Option<ExitCode> {
    if signal != 0 {
        eprintln!("{PROG}: error: {host}: task 0: {}", signal_text(signal));
        return Some(ExitCode::from((128 + signal).clamp(0, 255) as u8));
    }
    if code != 0 {
        eprintln!("{PROG}: error: {host}: task 0: Exited with exit code {code}");
        return Some(ExitCode::from(code.clamp(0, 255) as u8));
    }
    None
}

fn io_error_text(e: &std::io::Error) -> String {
    let s = e.to_string();
    s.split(" (os error").next().unwrap_or(&s).to_string()
}

/// Waits for the task, passing on the signals srun gets. Gives (exit code, signal).
async fn wait_forwarding(mut child: tokio::process::Child, tty: bool) -> Result<(i32, i32), i32> {
    use tokio::signal::unix::{SignalKind, signal};
    let pid = child.id().map(|p| p as i32);
    let kinds = [
        (SignalKind::interrupt(), libc::SIGINT),
        (SignalKind::terminate(), libc::SIGTERM),
        (SignalKind::hangup(), libc::SIGHUP),
        (SignalKind::quit(), libc::SIGQUIT),
        (SignalKind::user_defined1(), libc::SIGUSR1),
        (SignalKind::user_defined2(), libc::SIGUSR2),
    ];
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<i32>();
    for (kind, num) in kinds {
        if let Ok(mut s) = signal(kind) {
            let tx = tx.clone();
            tokio::spawn(async move {
                while s.recv().await.is_some() {
                    if tx.send(num).is_err() {
                        break;
                    }
                }
            });
        }
    }
    drop(tx);
    loop {
        tokio::select! {
            st = child.wait() => {
                use std::os::unix::process::ExitStatusExt;
                return match st {
                    Ok(st) => Ok((st.code().unwrap_or(0), st.signal().unwrap_or(0))),
                    Err(_) => Err(1),
                };
            }
            Some(sig) = rx.recv() => {
                // At a terminal, the terminal already sent INT and QUIT to the task.
                if tty && (sig == libc::SIGINT || sig == libc::SIGQUIT) {
                    continue;
                }
                if let Some(pid) = pid {
                    let target = if tty { pid } else { -pid };
                    // SAFETY: plain kill(2) on our child (or its process group).
                    unsafe { libc::kill(target, sig) };
                }
            }
        }
    }
}

/// The batch script that runs the command: each word single-quoted.
pub fn command_script(command: &[String]) -> String {
    let quoted: Vec<String> = command
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
        .collect();
    format!(
        "#!/bin/sh\n# This script was created by srun.\n\n{}\n",
        quoted.join(" ")
    )
}

async fn as_job(req: Request, env: Vec<(String, String)>) -> ExitCode {
    let mut o = req.opts.clone();
    let submitter = Submitter::here(env);
    let uid = submitter.uid;
    let tag = format!(
        "{}/.drover-srun-{}-{}",
        submitter.cwd.trim_end_matches('/'),
        std::process::id(),
        times::now()
    );
    let own_out = o.output.is_none();
    let own_err = o.error.is_none() && own_out;
    if own_out {
        o.output = Some(format!("{tag}.out"));
    }
    if own_err {
        o.error = Some(format!("{tag}.err"));
    }
    if o.input.is_none() {
        o.input = Some("/dev/null".into());
    }
    let ctx = submitter.ctx();
    let name = submit_opts::basename(&req.command[0]).to_string();
    let spec = match build_spec(
        &o,
        PROG,
        &ctx,
        command_script(&req.command),
        Vec::new(),
        &name,
    ) {
        Ok(s) => s,
        Err(e) => return e.finish(),
    };
    let fail = |e: String| Exit::error(PROG, format!("Unable to allocate resources: {e}")).finish();
    let mut client = match calls::connect().await {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let reply = match client
        .submit_job(v1::SubmitJobRequest {
            spec: Some(spec),
            test_only: false,
        })
        .await
    {
        Ok(r) => r.into_inner(),
        Err(s) => return fail(calls::status_text(&s)),
    };
    let job_id = reply.job_id;
    let outcome = tokio::select! {
        r = super::wait::wait_for_job(PROG, &mut client, job_id) => Some(r),
        _ = tokio::signal::ctrl_c() => None,
    };
    let cleanup = || {
        if own_out {
            let _ = std::fs::remove_file(format!("{tag}.out"));
        }
        if own_err {
            let _ = std::fs::remove_file(format!("{tag}.err"));
        }
    };
    let jobs = match outcome {
        Some(Ok(jobs)) => jobs,
        Some(Err(e)) => {
            cleanup();
            return e.finish();
        }
        None => {
            let req = v1::SignalJobsRequest {
                filter: Some(v1::JobFilter {
                    job_ids: vec![job_id.to_string()],
                    ..Default::default()
                }),
                signal: 0,
                requester_uid: uid,
                batch_only: false,
            };
            let _ = client.signal_jobs(req).await;
            eprintln!("{PROG}: Force Terminated JobId={job_id}");
            cleanup();
            return ExitCode::from(130);
        }
    };
    use std::io::Write;
    if own_out && let Ok(bytes) = std::fs::read(format!("{tag}.out")) {
        let _ = std::io::stdout().write_all(&bytes);
        let _ = std::io::stdout().flush();
    }
    if own_err && let Ok(bytes) = std::fs::read(format!("{tag}.err")) {
        let _ = std::io::stderr().write_all(&bytes);
    }
    cleanup();
    let Some(j) = jobs.first() else {
        return Exit::error(PROG, format!("Job {job_id} no longer found")).finish();
    };
    if let Some(code) = task_failure(&j.batch_host, j.exit_code, j.exit_signal) {
        return code;
    }
    let state = jobs::job_state(j);
    if state != model::JobState::Completed {
        eprintln!("{PROG}: error: job {job_id} ended {}", state.name());
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
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
        assert!(parse(&s(&["-n", "4", "hostname"])).is_err());
        assert!(parse(&s(&["--help"])).unwrap().is_none());
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
        let got = task_env(&o, &env, &job(), 3, "gpu01");
        let get = |k: &str| got.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("PATH"), Some("/bin"));
        assert_eq!(get("SLURM_STEP_ID"), Some("3"));
        assert_eq!(get("SLURM_STEPID"), Some("3"));
        assert_eq!(get("SLURM_PROCID"), Some("0"));
        assert_eq!(get("SLURM_LOCALID"), Some("0"));
        assert_eq!(get("SLURM_NODEID"), Some("0"));
        assert_eq!(get("SLURM_NTASKS"), Some("1"));
        assert_eq!(get("SLURM_NPROCS"), Some("1"));
        assert_eq!(get("SLURM_STEP_NUM_TASKS"), Some("1"));
        assert_eq!(get("SLURM_JOB_NODELIST"), Some("gpu[01-02]"));
        assert_eq!(get("SLURM_NODELIST"), Some("gpu[01-02]"));
        assert_eq!(get("SLURM_JOB_NUM_NODES"), Some("2"));
        assert_eq!(get("SLURM_NNODES"), Some("2"));
        assert_eq!(get("SLURM_CPUS_ON_NODE"), Some("4"));
        assert_eq!(get("SLURM_CPUS_PER_TASK"), Some("2"));
        assert_eq!(get("SLURM_ARRAY_JOB_ID"), Some("40"));
        assert_eq!(get("SLURM_ARRAY_TASK_ID"), Some("1"));
        assert_eq!(get("SLURM_STEP_NODELIST"), Some("gpu01"));
        assert_eq!(get("SLURMD_NODENAME"), Some("gpu01"));
        assert_eq!(got.iter().filter(|(k, _)| k == "SLURM_JOB_ID").count(), 1);
        // --export=NONE keeps only SLURM_* variables.
        let o = opts_with(&[("export", "NONE")]);
        assert!(
            task_env(&o, &env, &job(), 0, "gpu01")
                .iter()
                .all(|(k, _)| k.starts_with("SLURM"))
        );
    }

    #[test]
    fn output_patterns() {
        assert_eq!(
            step_path("/d/%j/%j_%t_log.out", &job(), 0, "gpu01"),
            "/d/41/41_0_log.out"
        );
        assert_eq!(
            step_path("%A_%a-%N-%s-%J-%x-%u", &job(), 2, "gpu01"),
            "40_1-gpu01-2-41.2-train-ada"
        );
        assert_eq!(step_path("none", &job(), 0, "h"), "/dev/null");
    }

    #[test]
    fn wrapped_command_is_quoted() {
        assert_eq!(
            command_script(&s(&["echo", "a b", "it's"])),
            "#!/bin/sh\n# This script was created by srun.\n\n'echo' 'a b' 'it'\\''s'\n"
        );
    }
}
