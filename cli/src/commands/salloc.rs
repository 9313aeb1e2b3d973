//! `salloc`: takes an allocation, runs a command in it here (the user's shell by
//! default) with the job's variables, and gives the allocation back when the command
//! exits, with its exit code, as Slurm's salloc does. `srun` outside an allocation takes
//! one the same way for the one step it runs.
//!
//! The allocation is a job whose batch script only holds it (`HOLD_SCRIPT`): it waits
//! until told to end, by SIGUSR1 (the command succeeded: COMPLETED) or SIGUSR2 (it
//! failed: FAILED). Steps run in it through the node daemons, as in any job.
//!
//! For example, `salloc -N 2 srun hostname` prints `salloc: Granted job allocation 7`,
//! the two nodes' names, and `salloc: Relinquishing job allocation 7`.

use super::sbatch::Submitter;
use super::submit_opts::{self, Command, Source, SubmitOpts, build_spec};
use crate::calls;
use crate::client::{self, Ctld};
use crate::exit::Exit;
use crate::opts;
use proto::v1;
use std::process::ExitCode;
use std::time::Duration;

const PROG: &str = "salloc";

/// How many times the end of an allocation is asked for, 2 s apart.
const RELINQUISH_TRIES: u32 = 15;

/// The batch script of an allocation: it holds the nodes until told to end.
pub const HOLD_SCRIPT: &str = "#!/bin/sh\n\
# This script was created by salloc: it holds the job's allocation.\n\
trap 'exit 0' USR1\n\
trap 'exit 1' USR2\n\
while :; do sleep 3600 & wait $!; done\n";

/// An allocation being held.
pub struct Allocation {
    pub ctld: Ctld,
    pub job: v1::JobInfo,
}

/// Submits a job holding an allocation of `o` and waits until it runs. `name` is the
/// job's name unless `-J` gives one. With `say`, tells the user as salloc does.
pub async fn allocate(
    prog: &str,
    o: &SubmitOpts,
    env: Vec<(String, String)>,
    name: &str,
    say: bool,
) -> Result<Allocation, Exit> {
    let mut o = o.clone();
    o.output = Some("/dev/null".into());
    o.error = Some("/dev/null".into());
    o.input = Some("/dev/null".into());
    let submitter = Submitter::here(env);
    let ctx = submitter.ctx();
    let mut spec = build_spec(&o, prog, &ctx, HOLD_SCRIPT.to_string(), Vec::new(), name)?;
    // An interactive allocation is not requeued (JobRequeue is for batch jobs).
    spec.requeue = false;
    let fail = |e: String| Exit::error(prog, format!("Job submit/allocate failed: {e}"));
    let mut ctld = calls::connect().await.map_err(fail)?;
    let reply = ctld
        .submit_job(v1::SubmitJobRequest {
            spec: Some(spec),
            test_only: false,
        })
        .await
        .map_err(|s| calls::refusal(prog, "Job submit/allocate failed", &s))?
        .into_inner();
    let job_id = reply.job_id;
    if say {
        eprintln!("{prog}: Pending job allocation {job_id}");
    }
    let mut told_waiting = false;
    let mut delay = Duration::from_millis(20);
    loop {
        let jobs = ctld
            .list_jobs(v1::ListJobsRequest {
                filter: Some(v1::JobFilter {
                    job_ids: vec![job_id.to_string()],
                    ..Default::default()
                }),
                include_finished: true,
                ..Default::default()
            })
            .await
            .map_err(|s| Exit::error(prog, calls::status_text(&s)))?
            .into_inner()
            .jobs;
        let Some(job) = jobs.into_iter().next() else {
            return Err(Exit::error(
                prog,
                format!("Job allocation {job_id} has been revoked."),
            ));
        };
        let state = crate::jobs::job_state(&job);
        if state == model::JobState::Running && !job.batch_host.is_empty() {
            if say {
                eprintln!("{prog}: Granted job allocation {job_id}");
            }
            return Ok(Allocation { ctld, job });
        }
        if state.is_final() {
            return Err(Exit::error(
                prog,
                format!("Job allocation {job_id} has been revoked."),
            ));
        }
        if say && !told_waiting {
            told_waiting = true;
            eprintln!("{prog}: job {job_id} queued and waiting for resources");
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_millis(500));
    }
}

impl Allocation {
    /// The variables a command run in the allocation gets (salloc(1), "OUTPUT
    /// ENVIRONMENT VARIABLES").
    pub fn env(&self, mut env: Vec<(String, String)>) -> Vec<(String, String)> {
        let job = &self.job;
        let spec = job.spec.clone().unwrap_or_default();
        let mut set = |k: &str, v: String| submit_opts::set_env(&mut env, k, v);
        set("SLURM_JOB_ID", job.job_id.to_string());
        set("SLURM_JOBID", job.job_id.to_string());
        set("SLURM_JOB_NODELIST", job.nodes.clone());
        set("SLURM_NODELIST", job.nodes.clone());
        set("SLURM_JOB_NUM_NODES", job.num_nodes.to_string());
        set("SLURM_NNODES", job.num_nodes.to_string());
        set("SLURM_NTASKS", spec.num_tasks.max(1).to_string());
        set("SLURM_NPROCS", spec.num_tasks.max(1).to_string());
        if spec.cpus_per_task > 0 {
            set("SLURM_CPUS_PER_TASK", spec.cpus_per_task.to_string());
        }
        if spec.ntasks_per_node > 0 {
            set("SLURM_NTASKS_PER_NODE", spec.ntasks_per_node.to_string());
        }
        set("SLURM_JOB_NAME", spec.name.clone());
        set("SLURM_JOB_PARTITION", spec.partition.clone());
        set("SLURM_SUBMIT_DIR", super::sbatch::current_dir());
        env
    }

    /// Ends the allocation: COMPLETED when `ok`, else FAILED. The signal is sent again
    /// until the job has ended: one that reaches the node before the holding script
    /// runs is lost.
    pub async fn relinquish(mut self, ok: bool) {
        let signal = if ok { libc::SIGUSR1 } else { libc::SIGUSR2 };
        let filter = v1::JobFilter {
            job_ids: vec![self.job.job_id.to_string()],
            ..Default::default()
        };
        for _ in 0..RELINQUISH_TRIES {
            let _ = self
                .ctld
                .signal_jobs(v1::SignalJobsRequest {
                    filter: Some(filter.clone()),
                    signal,
                    batch_only: true,
                })
                .await;
            let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
            while tokio::time::Instant::now() < deadline {
                let reply = self
                    .ctld
                    .list_jobs(v1::ListJobsRequest {
                        filter: Some(filter.clone()),
                        include_finished: true,
                        ..Default::default()
                    })
                    .await;
                let ended = match reply {
                    Ok(r) => r
                        .into_inner()
                        .jobs
                        .first()
                        .is_none_or(|j| crate::jobs::job_state(j).is_final()),
                    Err(_) => false,
                };
                if ended {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        eprintln!(
            "{PROG}: error: job {} did not end; cancel it with scancel",
            self.job.job_id
        );
    }
}

const HELP: &str = "Usage: salloc [OPTIONS(0)...] [command(0) [args(0)...]]

  Takes the sbatch options that shape a job (-N, -n, -c, --mem, -G, -t, -p, -J, ...),
  runs the command (default: $SHELL) here with SLURM_JOB_ID and the job's variables,
  and gives the allocation back when it exits, with its exit code.
  -h, --help                  show this help message
";

pub fn run(args: &[String]) -> ExitCode {
    let parsed = match opts::parse(submit_opts::specs(Command::Sbatch), args, true) {
        Ok(p) => p,
        Err(e) => return Exit::usage(PROG, &e).finish(),
    };
    let mut o = SubmitOpts::default();
    if let Err(e) = o.apply_all(Command::Sbatch, &parsed.opts, Source::Cli) {
        return e.finish();
    }
    if o.help || o.usage {
        print!("{HELP}");
        return ExitCode::SUCCESS;
    }
    if o.verbose > 0 {
        eprint!("{}", o.defined_options(PROG));
    }
    let command = if parsed.positional.is_empty() {
        vec![std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into())]
    } else {
        parsed.positional
    };
    let env = super::sbatch::environment();
    client::runtime_with_io().block_on(async move {
        let name = submit_opts::basename(&command[0]).to_string();
        let alloc = match allocate(PROG, &o, env.clone(), &name, true).await {
            Ok(a) => a,
            Err(e) => return e.finish(),
        };
        let job_id = alloc.job.job_id;
        let status = tokio::process::Command::new(&command[0])
            .args(&command[1..])
            .env_clear()
            .envs(alloc.env(env))
            .status()
            .await;
        let code = match status {
            Ok(s) => {
                use std::os::unix::process::ExitStatusExt;
                s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
            }
            Err(e) => {
                eprintln!("{PROG}: error: {}: {e}", command[0]);
                127
            }
        };
        eprintln!("{PROG}: Relinquishing job allocation {job_id}");
        alloc.relinquish(code == 0).await;
        ExitCode::from(code.clamp(0, 255) as u8)
    })
}
