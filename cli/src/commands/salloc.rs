//! `salloc`: takes an allocation, runs a command in it here (the user's shell by
//! default) with the job's variables, and gives the allocation back when the command
//! exits, with its exit code, as Slurm's salloc does. `srun` outside an allocation takes
//! one the same way for the one step it runs.
//!
//! The allocation is a job whose batch script only holds it (`HOLD_SCRIPT`): it waits
//! until told to end, by SIGUSR1 (the command succeeded: COMPLETED) or SIGUSR2 (it
//! failed: FAILED). Steps run in it through the node daemons, as in any job.
//!
//! While the command runs, salloc looks at the job every second: when it ends first
//! (cancelled, out of time) salloc says the allocation was revoked, in Slurm's words,
//! and signals the command's process group (`--kill-command`, else SIGHUP from a
//! terminal and SIGTERM otherwise). salloc's input variables are sbatch's with
//! `SALLOC_` for `SBATCH_`, and `SALLOC_DEBUG` (the verbosity).
//!
//! For example, `salloc -N 2 srun hostname` prints `salloc: Granted job allocation 7`,
//! the two nodes' names, and `salloc: Relinquishing job allocation 7`.

use super::sbatch::Submitter;
use super::submit_opts::{self, Command, Source, SubmitOpts, build_spec};
use crate::args::Info;
use crate::calls;
use crate::client::{self, Ctld};
use crate::exit::Exit;
use crate::opts;
use proto::v1;
use std::io::{IsTerminal, Write};
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
    allocate_het(prog, o, &[], env, name, say).await
}

/// [`allocate`] of a heterogeneous job: `o`'s component first, then `more`'s.
pub async fn allocate_het(
    prog: &str,
    o: &SubmitOpts,
    more: &[SubmitOpts],
    env: Vec<(String, String)>,
    name: &str,
    say: bool,
) -> Result<Allocation, Exit> {
    let (mut ctld, job_id) = submit_het(prog, o, more, env, name).await?;
    let mut waiting = Waiting::new(prog, job_id, say, !more.is_empty());
    match waiting
        .wait_for_start_within(&mut ctld, o.immediate)
        .await?
    {
        Started::Granted(job) => Ok(Allocation { ctld, job: *job }),
        Started::Ended => Err(Exit::raw(revoked_line(prog, job_id))),
    }
}

/// Whether salloc and srun say that a job waits and when it got its allocation: unless
/// `-Q`, or `-I` alone (the controller starts the job now or not at all).
pub fn tells_waits(o: &SubmitOpts) -> bool {
    o.immediate != Some(1) && !o.quiet
}

/// `--test-only` of salloc and srun: when and where the job would start, nothing
/// submitted; a refusal is printed as Slurm's `slurm_perror` prints it,
/// `allocation failure: WHY`.
pub async fn will_run(
    prog: &str,
    o: &SubmitOpts,
    env: Vec<(String, String)>,
    name: &str,
) -> ExitCode {
    let spec = match hold_spec(prog, o, env, name) {
        Ok(spec) => spec,
        Err(e) => return e.finish(),
    };
    let cpus = crate::jobs::req_cpus(&spec);
    let partition = spec.partition.clone();
    let mut ctld = match calls::connect().await {
        Ok(c) => c,
        Err(e) => return Exit::raw(format!("allocation failure: {e}")).finish(),
    };
    let asked = ctld
        .submit_job(v1::SubmitJobRequest {
            spec: Some(spec),
            test_only: true,
            het_components: Vec::new(),
        })
        .await;
    match asked {
        Ok(reply) => {
            let reply = reply.into_inner();
            super::sbatch::tell_will_run(prog, &mut ctld, &reply, cpus, partition).await;
            ExitCode::SUCCESS
        }
        Err(s) => Exit::raw(format!("allocation failure: {}", calls::status_text(&s))).finish(),
    }
}

/// The job description of an allocation of `o`: a script that holds it, no output.
fn hold_spec(
    prog: &str,
    o: &SubmitOpts,
    env: Vec<(String, String)>,
    name: &str,
) -> Result<v1::JobSpec, Exit> {
    let mut o = o.clone();
    o.output = Some("/dev/null".into());
    o.error = Some("/dev/null".into());
    o.input = Some("/dev/null".into());
    let submitter = Submitter::here(env);
    let ctx = submitter.ctx();
    let mut spec = build_spec(&o, prog, &ctx, HOLD_SCRIPT.to_string(), Vec::new(), name)?;
    // An interactive allocation is not requeued (JobRequeue is for batch jobs), and has
    // no batch step.
    spec.requeue = false;
    spec.interactive = true;
    Ok(spec)
}

/// Submits the job holding an allocation of `o` and, after it, the other components
/// `more` of a heterogeneous job (`salloc A : B : C`), which hold theirs until it
/// ends; the leader's id.
async fn submit_het(
    prog: &str,
    o: &SubmitOpts,
    more: &[SubmitOpts],
    env: Vec<(String, String)>,
    name: &str,
) -> Result<(Ctld, u32), Exit> {
    let spec = hold_spec(prog, o, env.clone(), name)?;
    let het_components = more
        .iter()
        .map(|c| {
            let mut spec = hold_spec(prog, c, env.clone(), name)?;
            spec.script = super::sbatch::HET_COMPONENT_SCRIPT.into();
            Ok(spec)
        })
        .collect::<Result<Vec<_>, Exit>>()?;
    let failure = submit_opts::submit_failure(prog);
    let fail = |e: String| Exit::error(prog, format!("{failure}: {e}"));
    let mut ctld = calls::connect().await.map_err(fail)?;
    let reply = ctld
        .submit_job(v1::SubmitJobRequest {
            spec: Some(spec),
            test_only: false,
            het_components,
        })
        .await
        .map_err(|s| calls::refusal(prog, failure, &s))?
        .into_inner();
    Ok((ctld, reply.job_id))
}

/// `prog: Job allocation N has been revoked.`
fn revoked_line(prog: &str, job_id: u32) -> String {
    format!("{prog}: Job allocation {job_id} has been revoked.")
}

/// How the wait for an allocation ended.
enum Started {
    /// The job runs on its nodes.
    Granted(Box<v1::JobInfo>),
    /// The job ended before it started (cancelled, deadline, refused dependency).
    Ended,
}

/// The wait of a submitted job for its start, and what the user was told of it.
struct Waiting<'a> {
    prog: &'a str,
    job_id: u32,
    say: bool,
    /// Whether "Pending job allocation" was said.
    told_pending: bool,
    since: tokio::time::Instant,
}

impl<'a> Waiting<'a> {
    /// The wait of job `job_id`. A heterogeneous job's (`het`) is said at once: Slurm's
    /// controller never starts one at its submit, so its salloc or srun always waits
    /// for the scheduler's pass.
    fn new(prog: &'a str, job_id: u32, say: bool, het: bool) -> Self {
        let mut waiting = Waiting {
            prog,
            job_id,
            say,
            told_pending: false,
            since: tokio::time::Instant::now(),
        };
        if het {
            waiting.tell_pending("");
        }
        waiting
    }

    /// The job's record, `None` once the controller no longer has it.
    async fn job(&self, ctld: &mut Ctld) -> Result<Option<v1::JobInfo>, Exit> {
        Ok(ctld
            .list_jobs(calls::one_job(self.job_id))
            .await
            .map_err(|s| Exit::error(self.prog, calls::status_text(&s)))?
            .into_inner()
            .jobs
            .into_iter()
            // A heterogeneous job's id lists every component: this one is the leader.
            .find(|j| j.job_id == self.job_id))
    }

    /// Says that the job waits, as Slurm's salloc does when the controller does not
    /// start it at once: at once when it waits for a reason of its own (held, a begin
    /// time, a dependency), else after the first scheduling pass had its chance.
    fn tell_pending(&mut self, reason: &str) {
        if self.say && !self.told_pending {
            self.told_pending = true;
            // What Slurm's controller answers a job it queued in a partition that is
            // down (ESLURM_PARTITION_DOWN), which the allocation call prints.
            if model::reason::Reason::parse(reason) == Some(model::reason::Reason::PartitionDown) {
                crate::say!("{}: Partition in DOWN state", self.prog);
            }
            // salloc's own word; the next is Slurm's allocation call's, srun's too.
            if self.prog == PROG {
                crate::say!("{}: Pending job allocation {}", self.prog, self.job_id);
            }
            crate::say!(
                "{}: job {} queued and waiting for resources",
                self.prog,
                self.job_id
            );
        }
    }

    /// `wait_for_start` bounded by `--immediate`'s seconds: past them the job is
    /// cancelled and the command fails with Slurm's words.
    async fn wait_for_start_within(
        &mut self,
        ctld: &mut Ctld,
        immediate: Option<u32>,
    ) -> Result<Started, Exit> {
        let Some(secs) = immediate else {
            return self.wait_for_start(ctld).await;
        };
        let limit = Duration::from_secs(u64::from(secs.max(1)));
        match tokio::time::timeout(limit, self.wait_for_start(ctld)).await {
            Ok(started) => started,
            Err(_) => {
                cancel(ctld, self.job_id).await;
                let why = if secs == 1 {
                    "Requested nodes are busy"
                } else {
                    "Connection timed out"
                };
                Err(
                    Exit::error(self.prog, format!("Unable to allocate resources: {why}"))
                        .with_code(ERROR_EXIT),
                )
            }
        }
    }

    /// Polls until the job runs on its nodes or ends.
    async fn wait_for_start(&mut self, ctld: &mut Ctld) -> Result<Started, Exit> {
        let mut delay = Duration::from_millis(20);
        loop {
            let Some(job) = self.job(ctld).await? else {
                return Ok(Started::Ended);
            };
            let state = crate::jobs::job_state(&job);
            if state == model::JobState::Running && !job.batch_host.is_empty() {
                if self.told_pending {
                    crate::say!(
                        "{}: job {} has been allocated resources",
                        self.prog,
                        self.job_id
                    );
                }
                return Ok(Started::Granted(Box::new(job)));
            }
            if state.is_final() {
                return Ok(Started::Ended);
            }
            // A reason means a scheduling pass has seen the job and left it waiting.
            let evaluated = !matches!(job.reason.as_str(), "" | "None");
            if evaluated || self.since.elapsed() >= PENDING_GRACE {
                self.tell_pending(&job.reason);
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_millis(500));
        }
    }
}

/// The variables a command run in the allocation of `job` gets (salloc(1), "OUTPUT
/// ENVIRONMENT VARIABLES"), set in `env`.
fn allocation_env(job: &v1::JobInfo, mut env: Vec<(String, String)>) -> Vec<(String, String)> {
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
    // `--mem` and `--mem-per-cpu`, as asked (salloc(1)).
    if spec.mem_per_node_mb > 0 {
        set("SLURM_MEM_PER_NODE", spec.mem_per_node_mb.to_string());
    }
    if spec.mem_per_cpu_mb > 0 {
        set("SLURM_MEM_PER_CPU", spec.mem_per_cpu_mb.to_string());
    }
    let (cpus, tasks) = per_node_counts(job);
    set(
        "SLURM_JOB_CPUS_PER_NODE",
        model::step::compressed_counts(&cpus),
    );
    set(
        "SLURM_TASKS_PER_NODE",
        model::step::compressed_counts(&tasks),
    );
    set("SLURM_JOB_NAME", spec.name.clone());
    set("SLURM_JOB_PARTITION", spec.partition.clone());
    if !spec.account.is_empty() {
        set("SLURM_JOB_ACCOUNT", spec.account.clone());
    }
    if !spec.qos.is_empty() {
        set("SLURM_JOB_QOS", spec.qos.clone());
    }
    set("SLURM_SUBMIT_DIR", super::sbatch::current_dir());
    set("SLURM_SUBMIT_HOST", submit_opts::hostname());
    let cluster = client::cluster_name();
    if !cluster.is_empty() {
        set("SLURM_CLUSTER_NAME", cluster);
    }
    env
}

impl Allocation {
    /// The id that names this job alone: `N+K` for a component of a heterogeneous job
    /// (whose plain id names every component).
    fn own_id(&self) -> String {
        match &self.job.het {
            Some(h) => format!("{}+{}", h.leader, h.offset),
            None => self.job.job_id.to_string(),
        }
    }

    /// The variables a command run in the allocation gets (salloc(1), "OUTPUT
    /// ENVIRONMENT VARIABLES").
    pub fn env(&self, env: Vec<(String, String)>) -> Vec<(String, String)> {
        allocation_env(&self.job, env)
    }

    /// For a heterogeneous job, its `SLURM_HET_SIZE` and each component's variables as
    /// `NAME_HET_GROUP_N` (Slurm's), added to `env`; `env` as it is for any other job.
    pub async fn with_het_env(&mut self, mut env: Vec<(String, String)>) -> Vec<(String, String)> {
        let Some(het) = self.job.het else {
            return env;
        };
        let ask = calls::one_job(het.leader);
        let Ok(reply) = calls::again_if_lost(&mut self.ctld, |mut c| {
            let ask = ask.clone();
            async move { c.list_jobs(ask).await }
        })
        .await
        else {
            return env;
        };
        let mut components = reply.jobs;
        components.sort_by_key(|j| j.het.as_ref().map_or(0, |h| h.offset));
        submit_opts::set_env(
            &mut env,
            model::job::HET_SIZE_VAR,
            components.len().to_string(),
        );
        for (n, c) in components.iter().enumerate() {
            for (k, v) in model::job::het_group_vars(allocation_env(c, Vec::new()), n) {
                submit_opts::set_env(&mut env, &k, v);
            }
        }
        env
    }

    /// The job's state now and when it is expected to end (0: not known), and the
    /// messages `scontrol notify` sent it since the last look (`self.job`'s
    /// `notice_count` moves on); `None` when it cannot be read, and `Completed` once
    /// the controller no longer has the job.
    pub async fn current(&mut self) -> Option<(model::JobState, i64, Vec<String>)> {
        let ask = calls::one_job(self.own_id());
        let reply = calls::again_if_lost(&mut self.ctld, |mut c| {
            let ask = ask.clone();
            async move { c.list_jobs(ask).await }
        })
        .await
        .ok()?;
        let Some(job) = reply.jobs.first() else {
            return Some((model::JobState::Completed, 0, Vec::new()));
        };
        let notices = model::job::Notices {
            latest: job.notices.clone(),
            count: job.notice_count,
        };
        let new = notices.after(self.job.notice_count).to_vec();
        self.job.notice_count = job.notice_count;
        Some((crate::jobs::job_state(job), job.expected_end, new))
    }

    /// Prints what `scontrol notify` sent the job since the last look, as
    /// `prog: MESSAGE` lines (Slurm's srun and salloc print them so).
    pub async fn tell_notices(&mut self, prog: &str) {
        if let Some((_, _, notices)) = self.current().await {
            for message in notices {
                crate::say!("{prog}: {message}");
            }
        }
    }

    /// Asks once for the allocation's end: COMPLETED when `ok`, else FAILED.
    async fn end_now(&mut self, ok: bool) {
        let filter = calls::job_filter(self.own_id());
        self.ask_end(&filter, ok).await;
    }

    /// The signal that ends the holding script: SIGUSR1 for COMPLETED, SIGUSR2 for
    /// FAILED. salloc may have made no call for as long as its command ran: a lost
    /// connection is replaced.
    async fn ask_end(&mut self, filter: &v1::JobFilter, ok: bool) {
        let ask = v1::SignalJobsRequest {
            filter: Some(filter.clone()),
            signal: if ok { libc::SIGUSR1 } else { libc::SIGUSR2 },
            batch_only: true,
            full: false,
        };
        let _ = calls::again_if_lost(&mut self.ctld, |mut c| {
            let ask = ask.clone();
            async move { c.signal_jobs(ask).await }
        })
        .await;
    }

    /// Ends the allocation: COMPLETED when `ok`, else FAILED. The signal is sent again
    /// until the job has ended: one that reaches the node before the holding script
    /// runs is lost.
    pub async fn relinquish(mut self, ok: bool) {
        let filter = calls::job_filter(self.own_id());
        for _ in 0..RELINQUISH_TRIES {
            self.ask_end(&filter, ok).await;
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
        crate::say!(
            "{PROG}: error: job {} did not end; cancel it with scancel",
            self.job.job_id
        );
    }
}

/// Each node's CPUs and tasks in an allocation (nodes get even shares of the job's
/// CPUs): the tasks asked for spread as srun lays them out, or without `-n` as many
/// as the CPUs hold (`-c` each).
pub(crate) fn per_node_counts(job: &v1::JobInfo) -> (Vec<u32>, Vec<u32>) {
    let spec = job.spec.clone().unwrap_or_default();
    let nodes = job.num_nodes.max(1);
    let cpus_per_node = (job.num_cpus / nodes).max(1);
    let tasks = if spec.num_tasks > 0 {
        model::step::even_counts(spec.num_tasks, nodes, spec.ntasks_per_node)
    } else {
        vec![(cpus_per_node / spec.cpus_per_task.max(1)).max(1); nodes as usize]
    };
    (vec![cpus_per_node; nodes as usize], tasks)
}

const HELP: &str = "Usage: salloc [OPTIONS(0)...] [command(0) [args(0)...]]

Parallel run options:
  -A, --account=name          charge job to specified account
  -b, --begin=time            defer job until HH:MM MM/DD/YY
      --bell                  ring the terminal bell when the job is allocated
  -c, --cpus-per-task=ncpus   number of cpus required per task
      --comment=name          arbitrary comment
  -d, --dependency=type:jobid[:time] defer job until condition on jobid is satisfied
  -D, --chdir=path            change working directory
      --gres=list             required generic resources
  -H, --hold                  submit job in held state
  -I, --immediate[=secs]      exit if resources not available in \"secs\"
  -J, --job-name=jobname      name of job
  -K, --kill-command[=signal] signal to send terminating job
  -M, --clusters=names        Comma separated list of clusters to issue
                              commands to.  Default is current cluster.
      --mail-type=type        notify on state change: BEGIN, END, FAIL or ALL
      --mail-user=user        who to send email notification for job state
                              changes
  -n, --ntasks=N              number of processors required
      --nice[=value]          decrease scheduling priority by value
      --no-bell               do NOT ring the terminal bell
      --no-shell              exit once the allocation is granted, without
                              running a command
      --ntasks-per-node=n     number of tasks to invoke on each node
  -N, --nodes=N               number of nodes on which to run (N = min[-max])
  -p, --partition=partition   partition requested
  -q, --qos=qos               quality of service
  -Q, --quiet                 quiet mode (suppress informational messages)
      --signal=[R:]num[@time] send signal when time limit within time seconds
  -t, --time=minutes          time limit
  -v, --verbose               verbose mode (multiple -v's increase verbosity)
      --wckey=wckey           wckey to run job under

Constraint options:
  -C, --constraint=list       specify a list of constraints
      --mem=MB                minimum amount of real memory
      --reservation=name      allocate resources from named reservation
  -w, --nodelist=hosts...     request a specific list of hosts
  -x, --exclude=hosts...      exclude a specific list of hosts

Consumable resources related options:
      --exclusive             allocate nodes in exclusive mode
      --mem-per-cpu=MB        maximum amount of real memory per allocated
                              cpu required by the job.
                              --mem >= --mem-per-cpu if --mem is specified.

GPU scheduling options:
      --cpus-per-gpu=n        number of CPUs required per allocated GPU
  -G, --gpus=n                count of GPUs required for the job
      --gpus-per-node=n       number of GPUs required per allocated node
      --gpus-per-task=n       number of GPUs required per spawned task
      --mem-per-gpu=n         real memory required per allocated GPU

Help options:
  -h, --help                  show this help message
      --usage                 display brief usage message

Other options:
  -V, --version               output version information and exit
";

const USAGE: &str = "Usage: salloc [-N numnodes|[min nodes]-[max nodes]] [-n num-processors]
              [-c cpus-per-node] [-p partition] [--hold] [-t minutes]
              [--immediate[=secs]] [-D path] [-J jobname] [--verbose]
              [--clusters=cluster_names] [--mem=MB] [-C list]
              [--account=name] [--dependency=type:jobid[+time]] [--comment=name]
              [--mail-type=type] [--mail-user=user] [--nice[=value]]
              [--bell] [--no-bell] [--kill-command[=signal]] [--no-shell]
              [--nodelist=hosts] [--exclude=hosts] [--mem-per-cpu=MB] [--qos=qos]
              [--reservation=name] [--gres=list] [--exclusive]
              [--cpus-per-gpu=n] [--gpus=n] [--gpus-per-node=n] [--gpus-per-task=n]
              [--mem-per-gpu=MB]
              [command [args...]]
";

/// How long a new job may wait for the controller's first scheduling pass before
/// salloc says it is pending.
const PENDING_GRACE: Duration = Duration::from_secs(1);
/// After a wait this long the terminal bell rings at the grant (Slurm's
/// DEFAULT_BELL_DELAY), unless `--bell`/`--no-bell` say otherwise.
const BELL_DELAY: Duration = Duration::from_secs(10);
/// How long before its time limit a job's salloc hears of it, with `-v` (Slurm's
/// controller tells it from twice its 30 s period before).
const TIME_LIMIT_WARNING: i64 = 60;
/// How often the job is looked at while the command runs.
pub(crate) const WATCH_INTERVAL: Duration = Duration::from_secs(1);
/// Slurm's exit status for a failure of salloc itself (SLURM_EXIT_ERROR), and for an
/// `--immediate` allocation not granted in time (SLURM_EXIT_IMMEDIATE).
const ERROR_EXIT: u8 = 1;

/// The signals that end a wait for an allocation (Slurm's list) and, once it runs,
/// that salloc handles rather than dies of.
const HANDLED_SIGNALS: [i32; 7] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGPIPE,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// What salloc's words ask: the options of each component (one, or those of a
/// heterogeneous job), the command, or `--help`/`--usage`/`--version`.
type Asked = (Vec<SubmitOpts>, Vec<String>, Option<Info>);

/// The options salloc's input variables and command line give, in Slurm's order of
/// precedence (`SALLOC_DEBUG` is the verbosity), for each component: one, or those of
/// a heterogeneous job, `salloc A : B : C command` (the `:` words before the command
/// part them); then the command.
fn options(args: &[String], env: &[(String, String)]) -> Result<Asked, Exit> {
    let mut components = Vec::new();
    let mut rest = args.to_vec();
    loop {
        let parsed = opts::parse(submit_opts::specs(Command::Salloc), &rest, true)
            .map_err(|e| Exit::usage(PROG, &e))?;
        if let Some(info) = Info::asked(&parsed) {
            return Ok((Vec::new(), Vec::new(), Some(info)));
        }
        let mut o = SubmitOpts::default();
        for (name, value) in submit_opts::input_env_options(Command::Salloc, env) {
            o.apply(Command::Salloc, name, &value, Source::Env)?;
        }
        if let Some((_, level)) = env.iter().find(|(k, _)| k == "SALLOC_DEBUG") {
            o.verbose = level.trim().parse().unwrap_or(0);
        }
        o.apply_all(Command::Salloc, &parsed.opts, Source::Cli)?;
        components.push(o);
        match parsed.positional.split_first() {
            Some((colon, next)) if colon == ":" => rest = next.to_vec(),
            _ => return Ok((components, parsed.positional, None)),
        }
    }
}

pub fn run(args: &[String]) -> ExitCode {
    let env = super::sbatch::environment();
    let (components, positional, info) = match options(args, &env) {
        Ok(x) => x,
        Err(e) => return e.finish(),
    };
    if let Some(info) = info {
        let help = format!("{HELP}{}", submit_opts::ignored_help(Command::Salloc));
        return info.print(&help, USAGE);
    }
    let (o, more) = components.split_first().expect("one component at least");
    if o.verbose > 0 {
        crate::say_raw!("{}", o.defined_options(PROG));
    }
    let command = if positional.is_empty() {
        vec![std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".into())]
    } else {
        positional
    };
    client::runtime_with_io().block_on(session(o.clone(), more, command, env))
}

/// One salloc: the allocation (of a heterogeneous job, with the components `more`),
/// the command in it, and its end.
async fn session(
    o: SubmitOpts,
    more: &[SubmitOpts],
    command: Vec<String>,
    env: Vec<(String, String)>,
) -> ExitCode {
    let mut signals = match Signals::handle() {
        Ok(s) => s,
        Err(e) => return Exit::error(PROG, e).finish(),
    };
    if o.verbose >= 2 {
        // The watch on the allocation (Slurm's allocation message thread) starts here.
        crate::say!("{PROG}: debug:  Entering _msg_thr_internal");
    }
    // Slurm's salloc names its job `interactive` (`no-shell` with --no-shell).
    let name = o.job_name.clone().unwrap_or_else(|| {
        if o.no_shell {
            "no-shell"
        } else {
            "interactive"
        }
        .to_string()
    });
    if o.test_only {
        return will_run(PROG, &o, env, &name).await;
    }
    let (mut ctld, job_id) = match submit_het(PROG, &o, more, env.clone(), &name).await {
        Ok(x) => x,
        Err(e) => return e.finish(),
    };
    let mut waiting = Waiting::new(PROG, job_id, tells_waits(&o), !more.is_empty());
    let started = {
        tokio::select! {
            r = waiting.wait_for_start_within(&mut ctld, o.immediate) => r,
            _ = signals.next() => {
                cancel(&mut ctld, job_id).await;
                info(o.quiet, revoked_line(PROG, job_id));
                info(o.quiet, format!("{PROG}: Job aborted due to signal"));
                return ExitCode::from(ERROR_EXIT);
            }
        }
    };
    let job = match started {
        Ok(Started::Granted(job)) => job,
        Ok(Started::Ended) => {
            info(o.quiet, revoked_line(PROG, job_id));
            return ExitCode::from(ERROR_EXIT);
        }
        Err(e) => return e.finish(),
    };
    info(o.quiet, format!("{PROG}: Granted job allocation {job_id}"));
    let waited = waiting.since.elapsed();
    if o.bell.unwrap_or(waited > BELL_DELAY) && std::io::stdout().is_terminal() {
        print!("\x07");
        let _ = std::io::stdout().flush();
    }
    if o.no_shell {
        return ExitCode::SUCCESS;
    }
    let mut alloc = Allocation { ctld, job: *job };
    let cmd_env = alloc.env(env);
    let mut cmd_env = alloc.with_het_env(cmd_env).await;
    set_allocation_extras(&mut cmd_env, &o);
    run_command(alloc, &o, &command, cmd_env, &mut signals).await
}

/// salloc's own additions to the job's variables (Slurm's salloc sets these from its
/// options).
fn set_allocation_extras(env: &mut Vec<(String, String)>, o: &SubmitOpts) {
    // The task count only when one was asked for: srun in the allocation then runs
    // one task per node.
    if o.ntasks.is_none() {
        env.retain(|(k, _)| k != "SLURM_NTASKS" && k != "SLURM_NPROCS");
    }
    let mut set = |k: &str, v: String| submit_opts::set_env(env, k, v);
    if let Some(n) = o.ntasks {
        set("SLURM_NTASKS", n.to_string());
        set("SLURM_NPROCS", n.to_string());
    }
    if let Some(c) = o.cpus_per_task.filter(|c| *c > 1) {
        set("SLURM_CPUS_PER_TASK", c.to_string());
    }
    if o.overcommit {
        set("SLURM_OVERCOMMIT", "1".to_string());
    }
}

/// Runs the command in the allocation and waits for it, watching the job meanwhile:
/// when the job ends first (cancelled, out of time), salloc says so and signals the
/// command, as Slurm's does. Gives the allocation back after a command that ended by
/// itself, and exits with its status.
async fn run_command(
    mut alloc: Allocation,
    o: &SubmitOpts,
    command: &[String],
    env: Vec<(String, String)>,
    signals: &mut Signals,
) -> ExitCode {
    let job_id = alloc.job.job_id;
    let terminal = Terminal::claim();
    let mut child_cmd = tokio::process::Command::new(&command[0]);
    child_cmd.args(&command[1..]).env_clear().envs(env);
    terminal.prepare(&mut child_cmd);
    let mut child = match child_cmd.spawn() {
        Ok(c) => c,
        Err(_) => {
            terminal.restore();
            crate::say!("{PROG}: error: Unable to exec command \"{}\"", command[0]);
            info(
                o.quiet,
                format!("{PROG}: Relinquishing job allocation {job_id}"),
            );
            alloc.relinquish(false).await;
            return ExitCode::from(ERROR_EXIT);
        }
    };
    let pid = child.id().map(|p| p as i32);
    let mut revoked = false;
    let mut told_end = 0;
    let mut watch = tokio::time::interval(WATCH_INTERVAL);
    let status = loop {
        tokio::select! {
            s = child.wait() => break s.ok(),
            signo = signals.next() => {
                if signo == libc::SIGHUP {
                    // Slurm forwards a hangup to the command and ends its wait.
                    signal_group(pid, libc::SIGHUP);
                    break None;
                }
                // Any other handled signal gives the allocation up; the watch then
                // sees the job end and stops the command.
                alloc.end_now(true).await;
            }
            _ = watch.tick(), if !revoked => {
                let now = alloc.current().await;
                for message in now.iter().flat_map(|(_, _, notices)| notices) {
                    crate::say!("{PROG}: {message}");
                }
                if let Some((_, end, _)) = now.as_ref().filter(|(state, _, _)| !state.is_final()) {
                    let end = *end;
                    // Slurm's controller warns salloc within a minute of the time limit.
                    if o.verbose > 0 && end > 0 && end <= crate::times::now() + TIME_LIMIT_WARNING && told_end != end {
                        told_end = end;
                        crate::say!("{PROG}: Job allocation time limit to be reached at {}", crate::times::ctime_line(end));
                    }
                }
                let ended = now.and_then(|(state, _, _)| state.is_final().then_some(state));
                if let Some(state) = ended {
                    revoked = true;
                    if state == model::JobState::Timeout {
                        info(o.quiet, format!("{PROG}: Job {job_id} has exceeded its time limit and its allocation has been revoked."));
                    } else {
                        info(o.quiet, revoked_line(PROG, job_id));
                    }
                    let signo = o.kill_command.unwrap_or(if terminal.interactive { libc::SIGHUP } else { libc::SIGTERM });
                    if o.verbose > 0 {
                        crate::say!("{PROG}: Sending signal {signo} to command \"{}\", pid {}", command[0], pid.unwrap_or(0));
                    }
                    terminal.hang_up_foreground(pid);
                    signal_group(pid, signo);
                }
            }
        }
    };
    terminal.restore();
    let code = match status {
        Some(s) => {
            use std::os::unix::process::ExitStatusExt;
            match (s.code(), s.signal()) {
                (Some(c), _) => c,
                (None, Some(sig)) => {
                    if o.verbose > 0 {
                        crate::say!(
                            "{PROG}: Command \"{}\" was terminated by signal {sig}",
                            command[0]
                        );
                    }
                    // Slurm reads these as the user's doing: a normal end.
                    match sig {
                        libc::SIGHUP | libc::SIGINT | libc::SIGQUIT | libc::SIGKILL => 0,
                        _ => 1,
                    }
                }
                (None, None) => 1,
            }
        }
        None => 1,
    };
    if !revoked {
        info(
            o.quiet,
            format!("{PROG}: Relinquishing job allocation {job_id}"),
        );
        alloc.relinquish(code == 0).await;
    }
    ExitCode::from(code.clamp(0, 255) as u8)
}

/// One of salloc's informational lines, which `-Q` silences.
fn info(quiet: bool, line: String) {
    if !quiet {
        crate::say!("{line}");
    }
}

/// Cancels a job that has not started.
async fn cancel(ctld: &mut Ctld, job_id: u32) {
    let _ = ctld
        .signal_jobs(v1::SignalJobsRequest {
            filter: Some(calls::job_filter(job_id)),
            signal: 0,
            batch_only: false,
            full: false,
        })
        .await;
}

/// Sends a signal to the command's process group (it leads its own).
fn signal_group(pid: Option<i32>, signo: i32) {
    if let Some(pid) = pid {
        // SAFETY: killpg has no memory effects.
        unsafe {
            libc::killpg(pid, signo);
        }
    }
}

/// The signals salloc handles, as one stream.
struct Signals {
    rx: tokio::sync::mpsc::UnboundedReceiver<i32>,
}

impl Signals {
    fn handle() -> Result<Signals, String> {
        use tokio::signal::unix::{SignalKind, signal};
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        for signo in HANDLED_SIGNALS {
            let mut stream = signal(SignalKind::from_raw(signo)).map_err(|e| e.to_string())?;
            let tx = tx.clone();
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    if tx.send(signo).is_err() {
                        break;
                    }
                }
            });
        }
        Ok(Signals { rx })
    }

    /// The next signal received.
    async fn next(&mut self) -> i32 {
        match self.rx.recv().await {
            Some(s) => s,
            None => std::future::pending().await,
        }
    }
}

/// The controlling terminal, when salloc runs in its foreground (Slurm's interactive
/// salloc): the command gets a process group of its own and the terminal's foreground
/// while it runs, and salloc takes the foreground back after it.
struct Terminal {
    interactive: bool,
}

impl Terminal {
    fn claim() -> Terminal {
        // SAFETY: plain queries of this process and its standard input.
        let interactive = unsafe {
            libc::isatty(libc::STDIN_FILENO) == 1
                && libc::tcgetpgrp(libc::STDIN_FILENO) == libc::getpgrp()
        };
        if interactive {
            // SAFETY: job-control signals ignored, as Slurm's salloc ignores them, so
            // that it may hand the terminal over and take it back.
            unsafe {
                libc::signal(libc::SIGTSTP, libc::SIG_IGN);
                libc::signal(libc::SIGTTIN, libc::SIG_IGN);
                libc::signal(libc::SIGTTOU, libc::SIG_IGN);
            }
        }
        Terminal { interactive }
    }

    /// The command leads a process group of its own, in the terminal's foreground
    /// when salloc is interactive.
    fn prepare(&self, cmd: &mut tokio::process::Command) {
        cmd.process_group(0);
        if self.interactive {
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                cmd.pre_exec(|| {
                    libc::tcsetpgrp(libc::STDIN_FILENO, libc::getpid());
                    libc::signal(libc::SIGTTIN, libc::SIG_DFL);
                    libc::signal(libc::SIGTTOU, libc::SIG_DFL);
                    Ok(())
                });
            }
        }
    }

    /// When the command started further process groups (a shell's jobs) and one of
    /// them holds the terminal, it is hung up, as Slurm does before ending the command.
    fn hang_up_foreground(&self, command: Option<i32>) {
        if !self.interactive {
            return;
        }
        // SAFETY: plain queries and a signal.
        unsafe {
            let fg = libc::tcgetpgrp(libc::STDIN_FILENO);
            if fg > 0 && Some(fg) != command && fg != libc::getpgrp() {
                libc::killpg(fg, libc::SIGHUP);
            }
        }
    }

    /// Takes the terminal's foreground back.
    fn restore(&self) {
        if self.interactive {
            // SAFETY: SIGTTOU is ignored, so this returns.
            unsafe {
                libc::tcsetpgrp(libc::STDIN_FILENO, libc::getpgrp());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn env(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn salloc_options_and_their_input_variables() {
        let (mut o, command, info) = options(
            &s(&["--bell", "-K", "-N1", "--no-shell", "id"]),
            &env(&[("SALLOC_ACCOUNT", "acct"), ("SALLOC_TIMELIMIT", "2")]),
        )
        .unwrap();
        assert!(info.is_none());
        let o = o.remove(0);
        assert_eq!(o.bell, Some(true));
        assert_eq!(o.kill_command, Some(libc::SIGTERM));
        assert!(o.no_shell);
        assert_eq!(o.account.as_deref(), Some("acct"));
        assert_eq!(o.time_limit, Some(Some(2)));
        assert_eq!(command, ["id"]);

        let first = |args: &[&str], vars: &[(&str, &str)]| {
            options(&s(args), &env(vars)).unwrap().0.remove(0)
        };
        let o = first(
            &["--kill-command=KILL", "--no-bell", "-I", "true"],
            &[("SALLOC_BELL", "1"), ("SALLOC_DEBUG", "2")],
        );
        // The command line wins over the variables.
        assert_eq!(o.bell, Some(false));
        assert_eq!(o.kill_command, Some(libc::SIGKILL));
        assert_eq!(o.immediate, Some(1));
        assert_eq!(o.verbose, 2);
        let o = first(&["--immediate=0", "true"], &[]);
        assert_eq!(o.immediate, None);
        // sbatch's variables are not salloc's.
        let o = first(&["true"], &[("SBATCH_ACCOUNT", "x")]);
        assert_eq!(o.account, None);
        // `A : B command`: the components of a heterogeneous job, then the command,
        // whose own `:` words are its own.
        let (het, command, _) = options(&s(&["-N1", "-c2", ":", "-c4", "echo", ":"]), &[]).unwrap();
        assert_eq!(het.len(), 2);
        assert_eq!(
            (het[0].cpus_per_task, het[1].cpus_per_task),
            (Some(2), Some(4))
        );
        assert_eq!(command, ["echo", ":"]);
    }

    #[test]
    fn bad_options_in_salloc_words() {
        let e = options(&s(&["--kill-command=NOPE", "true"]), &[]).unwrap_err();
        assert_eq!(
            e.lines(),
            ["salloc: error: Invalid --kill-command specification"]
        );
        let e = options(&s(&["--wrap=x"]), &[]).unwrap_err();
        assert_eq!(e.lines()[0], "salloc: unrecognized option '--wrap'");
    }

    #[test]
    fn help_usage_and_version_come_first() {
        for (arg, info) in [
            ("--help", Info::Help),
            ("--usage", Info::Usage),
            ("-V", Info::Version),
        ] {
            let (_, _, asked) = options(&s(&[arg, "-N1", "id"]), &[]).unwrap();
            assert_eq!(asked, Some(info));
        }
        assert!(HELP.contains("Consumable resources"));
        assert!(USAGE.starts_with("Usage: salloc [-N"));
        assert!(USAGE.trim_end().ends_with("[command [args...]]"));
    }

    #[test]
    fn per_node_cpus_and_tasks() {
        let job = |num_tasks: u32, cpus_per_task: u32| v1::JobInfo {
            num_nodes: 2,
            num_cpus: 8,
            spec: Some(v1::JobSpec {
                num_tasks,
                cpus_per_task,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(per_node_counts(&job(3, 0)), (vec![4, 4], vec![2, 1]));
        assert_eq!(per_node_counts(&job(0, 2)), (vec![4, 4], vec![2, 2]));
        assert_eq!(per_node_counts(&job(0, 0)), (vec![4, 4], vec![4, 4]));
    }

    #[test]
    fn extras_follow_the_options_given() {
        let mut o = SubmitOpts::default();
        let mut env = vec![("SLURM_NTASKS".to_string(), "1".to_string())];
        set_allocation_extras(&mut env, &o);
        assert!(env.is_empty());
        o.ntasks = Some(10);
        o.cpus_per_task = Some(2);
        o.overcommit = true;
        set_allocation_extras(&mut env, &o);
        assert_eq!(
            env,
            [
                ("SLURM_NTASKS".to_string(), "10".to_string()),
                ("SLURM_NPROCS".to_string(), "10".to_string()),
                ("SLURM_CPUS_PER_TASK".to_string(), "2".to_string()),
                ("SLURM_OVERCOMMIT".to_string(), "1".to_string()),
            ]
        );
    }
}
