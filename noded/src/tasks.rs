//! The tasks of a job step on this node, as `srun` asks for them through `RunTasks`:
//! started as the job's user, in the step's cgroup (`<job>/step_<id>`, under the job's
//! limits on this node), each with its task variables; their output streamed back as
//! it comes, stdin and signals passed in, their exits reported last. When `srun` goes
//! away the tasks are killed, and when they are done whatever they left in the step's
//! cgroup is.
//!
//! Worked example: `srun -n 3 -N 2 hostname` in job 7 on `n1,n2`. srun gets the layout
//! from the controller (`model::step`): n1 runs tasks 0 and 1, n2 task 2. It opens one
//! `RunTasks` stream to each node; n1's daemon starts two `hostname` processes with
//! `SLURM_PROCID` 0 and 1, `SLURM_LOCALID` 0 and 1 and `SLURM_NODEID` 0, sends back
//! `TaskData{task 0, "n1\n"}`, ..., then `TaskExit{task 0, 0}` and `TaskExit{task 1, 0}`
//! and ends the stream.
//!
//! With `srun --pty`, task 0 runs in a pseudo-terminal (`open_terminal`): it leads a
//! session whose controlling terminal is the slave side, its output comes from the
//! master as stdout, srun's input goes into the master, and srun's window size changes
//! reach it (`TIOCSWINSZ`, which sends the task SIGWINCH).
//!
//! While a step runs, `sattach` may join it (`Attachable`): it gets the tasks' output
//! from then on and their exits, as srun does, and its input goes to their stdin.

use crate::cgroup::{self, JobCgroup, TaskTrace};
use crate::isolation::{Isolation, IsolationError, NoIsolation};
use crate::jobs::{Confinement, Jobs};
use crate::launch::LaunchInfo;
use crate::spawn::{Program, Stdio, spawn};
use crate::user::RunAs;
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid, waitpid};
use nix::unistd::{Pid, pipe2};
use proto::v1::{self, TaskInput, TaskOutput, task_input, task_output};
use std::collections::BTreeMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{broadcast, mpsc};
use tonic::Status;
use tracing::{info, warn};

/// What the answer stream carries.
pub type Answer = Result<TaskOutput, Status>;

/// The steps running on this node that `sattach` can join, by (job, step).
#[derive(Clone, Default)]
pub struct Attachable(Arc<Mutex<BTreeMap<(u32, u32), Attached>>>);

/// How many of a step's latest output messages a joining `sattach` is given first, as
/// slurmstepd replays its cache of them (STDIO_MAX_MSG_CACHE).
const REPLAYED: usize = 128;

/// The tasks' output for whoever attaches: the latest messages, kept for those who
/// join later, and the stream of those to come.
#[derive(Clone)]
pub struct OutputTap {
    stream: broadcast::Sender<TaskOutput>,
    latest: Arc<Mutex<std::collections::VecDeque<TaskOutput>>>,
}

impl OutputTap {
    fn new() -> OutputTap {
        OutputTap {
            stream: broadcast::channel(1024).0,
            latest: Arc::default(),
        }
    }

    /// Sends `msg` to whoever is attached, and keeps it (data only) for who joins next.
    fn send(&self, msg: TaskOutput) {
        let mut latest = self.latest.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(msg.output, Some(task_output::Output::Data(_))) {
            if latest.len() == REPLAYED {
                latest.pop_front();
            }
            latest.push_back(msg.clone());
        }
        let _ = self.stream.send(msg);
    }

    /// The latest messages, then the stream of those to come: none lost or repeated
    /// between the two.
    pub fn subscribe(&self) -> (Vec<TaskOutput>, broadcast::Receiver<TaskOutput>) {
        let latest = self.latest.lock().unwrap_or_else(|e| e.into_inner());
        (latest.iter().cloned().collect(), self.stream.subscribe())
    }
}

/// A running step as `sattach` joins it.
#[derive(Clone)]
pub struct Attached {
    /// The tasks' output and, last, their exits.
    pub output: OutputTap,
    /// Input for the tasks' stdin.
    pub stdin: mpsc::Sender<Vec<u8>>,
    /// The user the tasks run as: only they (or root) may join.
    pub uid: u32,
    /// srun's stream, for what the node itself tells the step (`tell`).
    srun: mpsc::Sender<Answer>,
    /// The first of the step's tasks here, whose stderr carries what the node tells.
    first_task: u32,
    /// What the node saw of the step's tasks, by task id.
    pub traces: TaskTraces,
}

/// The traces of a step's tasks, by task id.
#[derive(Clone, Default)]
pub struct TaskTraces(Arc<Mutex<BTreeMap<u32, TaskTrace>>>);

impl TaskTraces {
    /// A copy of what they hold.
    pub fn snapshot(&self) -> BTreeMap<u32, TaskTrace> {
        self.table().clone()
    }

    /// Keeps `rss_bytes` as task `task`'s sample, where it is more than the last.
    fn sampled(&self, task: u32, rss_bytes: u64) {
        let mut table = self.table();
        let trace = table.entry(task).or_default();
        trace.rss_bytes = trace.rss_bytes.max(rss_bytes);
    }

    /// Keeps what ended task `task` read and wrote.
    fn ended(&self, task: u32, io: model::DiskIo) {
        self.table().entry(task).or_default().io = Some(io);
    }

    fn table(&self) -> std::sync::MutexGuard<'_, BTreeMap<u32, TaskTrace>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// How often the memory of a step's tasks is sampled, for the figures of tasks whose
/// processes have ended (Slurm's JobAcctGatherFrequency, 30 s there; a query of a
/// running step reads the live processes' peaks at once).
const SAMPLE_EVERY: Duration = Duration::from_secs(2);

impl Attached {
    /// Writes `line` on the step's stderr, from the node (`drover-noded: LINE`), to srun
    /// and to whoever is attached.
    pub fn tell(&self, line: &str) {
        let msg = data_message(
            self.first_task,
            true,
            format!("drover-noded: {line}\n").as_bytes(),
        );
        self.output.send(msg.clone());
        let _ = self.srun.try_send(Ok(msg));
    }
}

impl Attachable {
    /// The running step `step` of job `job`, if it runs here.
    pub fn get(&self, job: u32, step: u32) -> Option<Attached> {
        self.table().get(&(job, step)).cloned()
    }

    fn table(&self) -> std::sync::MutexGuard<'_, BTreeMap<(u32, u32), Attached>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A step's place in `Attachable`, for as long as it runs.
struct Joinable<'a> {
    attachable: &'a Attachable,
    key: (u32, u32),
}

impl Drop for Joinable<'_> {
    fn drop(&mut self) {
        self.attachable.table().remove(&self.key);
    }
}

/// Where the tasks' output goes: srun's stream, and every attached sattach.
#[derive(Clone)]
struct Outlet {
    srun: mpsc::Sender<Answer>,
    attached: OutputTap,
}

impl Outlet {
    /// Sends `msg` to srun and to the attached; false once srun is gone.
    async fn send(&self, msg: TaskOutput) -> bool {
        self.attached.send(msg.clone());
        self.srun.send(Ok(msg)).await.is_ok()
    }

    /// `send`, from a thread outside the runtime.
    fn blocking_send(&self, msg: TaskOutput) -> bool {
        self.attached.send(msg.clone());
        self.srun.blocking_send(Ok(msg)).is_ok()
    }
}

/// Runs the tasks of `launch` until they are done, taking stdin and signals from
/// `input` (and stdin from whoever attaches, through `attachable`) and sending their
/// output and exits to `out`.
pub async fn run(
    launch: v1::TaskLaunch,
    srun_addr: Option<std::net::SocketAddr>,
    mut input: tonic::Streaming<TaskInput>,
    out: mpsc::Sender<Answer>,
    jobs: Arc<Jobs>,
    attachable: Attachable,
) {
    let job_id = launch.job_id;
    let confinement = jobs.confinement();
    let pin_cpus = jobs.pins_cpus();
    let step = format!("step_{}", launch.step_id);
    // Joinable before any task runs: what a task does shows the step can be joined.
    let attached = OutputTap::new();
    let (attach_stdin, mut attached_input) = mpsc::channel::<Vec<u8>>(64);
    let traces = TaskTraces::default();
    let key = (job_id, launch.step_id);
    attachable.table().insert(
        key,
        Attached {
            output: attached.clone(),
            stdin: attach_stdin,
            uid: launch.uid,
            srun: out.clone(),
            first_task: launch.task_ids.first().copied().unwrap_or(0),
            traces: traces.clone(),
        },
    );
    let joinable = Joinable {
        attachable: &attachable,
        key,
    };
    let prepared = {
        let launch = launch.clone();
        let confinement = confinement.clone();
        let step = step.clone();
        let batch_here = jobs.runs_batch(job_id);
        tokio::task::spawn_blocking(move || {
            start(
                &launch,
                srun_addr,
                &confinement,
                &step,
                pin_cpus,
                batch_here,
            )
        })
        .await
    };
    let started = match prepared {
        Ok(Ok(started)) => started,
        Ok(Err(message)) => {
            warn!(job_id, step = %step, %message, "step launch failed");
            let levels = step_debug_levels(&launch);
            if let (false, Some(first)) = (levels.is_empty(), launch.task_ids.first()) {
                let _ = out
                    .send(Ok(data_message(*first, true, levels.as_bytes())))
                    .await;
            }
            let _ = out
                .send(Ok(TaskOutput {
                    output: Some(task_output::Output::LaunchError(message)),
                }))
                .await;
            return;
        }
        Err(e) => {
            let _ = out
                .send(Ok(TaskOutput {
                    output: Some(task_output::Output::LaunchError(e.to_string())),
                }))
                .await;
            return;
        }
    };
    info!(job_id, step = %step, tasks = ?launch.task_ids, "step tasks started");
    let outlet = Outlet {
        srun: out,
        attached,
    };
    let log = step_log(&launch, &started.tasks);
    if let (false, Some(first)) = (log.is_empty(), launch.task_ids.first()) {
        outlet
            .send(data_message(*first, true, log.as_bytes()))
            .await;
    }
    let pgids: Vec<Pid> = started.tasks.iter().map(|t| t.pid).collect();
    let mut stdins = Vec::new();
    let mut terminal: Option<std::fs::File> = None;
    // Each task's end, as it comes.
    let (ended_tx, mut ended) = mpsc::channel::<v1::TaskExit>(pgids.len().max(1));
    let mut left = pgids.len();
    for task in started.tasks {
        if !task.printed.is_empty() {
            outlet
                .send(data_message(task.task_id, false, &task.printed))
                .await;
        }
        if !task.reported.is_empty() {
            outlet
                .send(data_message(task.task_id, true, &task.reported))
                .await;
        }
        let output = match task.streams {
            TaskStreams::Pipes {
                stdin,
                stdout,
                stderr,
            } => {
                // srun -i N: the other tasks read end-of-file at once.
                if launch.stdin_task.is_none_or(|t| t == task.task_id) {
                    match tokio::net::unix::pipe::Sender::from_owned_fd(stdin) {
                        Ok(s) => stdins.push(Stdin::Pipe(s)),
                        Err(e) => warn!(error = %e, "cannot write a task's stdin"),
                    }
                }
                Output::Pipes(stdout, stderr)
            }
            TaskStreams::Terminal(master) => {
                let master = std::fs::File::from(master);
                match (master.try_clone(), master.try_clone()) {
                    (Ok(writer), Ok(sizer)) => {
                        stdins.push(Stdin::terminal(writer));
                        terminal = Some(sizer);
                    }
                    (Err(e), _) | (_, Err(e)) => {
                        warn!(error = %e, "cannot write a task's terminal")
                    }
                }
                Output::Terminal(master)
            }
        };
        let watched = watch_task(task.task_id, task.pid, output, outlet.clone(), task.epilog);
        let ended_tx = ended_tx.clone();
        let traces = traces.clone();
        tokio::spawn(async move {
            let (exit, io) = watched.await;
            if let Some(io) = io {
                traces.ended(exit.task_id, io);
            }
            let _ = ended_tx.send(exit).await;
        });
    }
    drop(ended_tx);
    // The tasks' memory, sampled while they run: their cgroups' high-water marks count
    // the page cache too.
    let sampler = started.cgroup.clone().map(|cg| {
        let (traces, step, tasks) = (traces.clone(), step.clone(), launch.task_ids.clone());
        tokio::spawn(async move {
            let mut every = tokio::time::interval(SAMPLE_EVERY);
            // A slow sample delays the next ones rather than bunching them.
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                let (cg, step, tasks, traces) =
                    (cg.clone(), step.clone(), tasks.clone(), traces.clone());
                let _ = tokio::task::spawn_blocking(move || {
                    for task in tasks {
                        traces.sampled(task, cg.task_rss_now(&step, task));
                    }
                })
                .await;
            }
        })
    });
    let mut srun_gone = false;
    while left > 0 {
        tokio::select! {
            exit = ended.recv() => {
                let Some(exit) = exit else { break };
                left -= 1;
                // What the step used here, before the last exit, which ends srun's wait.
                if left == 0
                    && let Some(cg) = &started.cgroup
                    && let Some(usage) = cg.step_usage(&step, &launch.node_name, &traces.snapshot())
                {
                    let usage = proto::convert::usage_to_wire(&usage);
                    let _ = outlet.srun.send(Ok(TaskOutput { output: Some(task_output::Output::Usage(usage)) })).await;
                }
                outlet.send(TaskOutput { output: Some(task_output::Output::Exit(exit)) }).await;
            }
            Some(data) = attached_input.recv() => {
                for s in &mut stdins {
                    s.write(&data).await;
                }
            }
            msg = input.message(), if !srun_gone => match msg {
                Ok(Some(TaskInput { input: Some(task_input::Input::Stdin(data)) })) => {
                    if data.is_empty() {
                        for s in stdins.drain(..) {
                            s.close();
                        }
                    } else {
                        for s in &mut stdins {
                            s.write(&data).await;
                        }
                    }
                }
                Ok(Some(TaskInput { input: Some(task_input::Input::Window(size)) })) => {
                    if let Some(t) = &terminal {
                        let _ = set_window_size(t, &size);
                    }
                }
                Ok(Some(TaskInput { input: Some(task_input::Input::Signal(sig)) })) => {
                    if let Ok(sig) = Signal::try_from(sig) {
                        info!(job_id, step = %step, signal = sig.as_str(), "signalling step tasks");
                        // In cgroups, the tasks themselves, not what they forked, as
                        // Slurm's proctrack/cgroup (but for SIGKILL); else each task's
                        // process group, as its proctrack/pgid.
                        let tasks_only = started.cgroup.is_some() && sig != Signal::SIGKILL;
                        for pgid in &pgids {
                            let _ = if tasks_only {
                                nix::sys::signal::kill(*pgid, sig)
                            } else {
                                killpg(*pgid, sig)
                            };
                        }
                    }
                }
                Ok(Some(_)) => {}
                // srun is gone: nobody waits for these tasks any more.
                Ok(None) | Err(_) => {
                    srun_gone = true;
                    stdins.clear();
                    info!(job_id, step = %step, "srun went away; killing the step's tasks");
                    for pgid in &pgids {
                        let _ = killpg(*pgid, Signal::SIGKILL);
                    }
                    if let Some(cg) = &started.cgroup {
                        let cg = cg.clone();
                        let step = step.clone();
                        let _ = tokio::task::spawn_blocking(move || kill_step(&cg, &step)).await;
                    }
                }
            },
        }
    }
    if let Some(sampler) = sampler {
        sampler.abort();
    }
    // Gone from the table, the step's outlet closes: attached sattachs see the end.
    drop(joinable);
    drop(outlet);
    if let Some(cg) = started.cgroup {
        // Asked now: a batch script that ended meanwhile has let the job's cgroup go.
        let batch_here = jobs.runs_batch(job_id);
        let _ = tokio::task::spawn_blocking(move || {
            kill_step(&cg, &step);
            let _layout = crate::cgroup::layout_lock();
            if let Err(e) = cg.remove_step(&step, batch_here) {
                warn!(job_id, error = %e, "cannot remove the step's cgroup");
            }
        })
        .await;
    }
}

/// What `srun --slurmd-debug` asks the node to write of the step to its stderr, as
/// Slurm's step daemon logs there: its levels from `verbose`, each task's start from
/// `debug`, the step's shape from `debug2`.
fn step_log(launch: &v1::TaskLaunch, tasks: &[StartedTask]) -> String {
    use model::log_level::LogLevel;
    let mut out = step_debug_levels(launch);
    if launch.slurmd_debug == 0 {
        return out;
    }
    let level = LogLevel::from_number(launch.slurmd_debug).step_stderr();
    if level >= LogLevel::Debug2 {
        out.push_str(&format!(
            "slurmstepd: debug2: StepId={}.{} runs {} tasks on {}\n",
            launch.job_id,
            launch.step_id,
            tasks.len(),
            launch.node_name
        ));
    }
    if level >= LogLevel::Debug {
        for t in tasks {
            out.push_str(&format!(
                "slurmstepd: debug:  task {} started, pid {}\n",
                t.task_id, t.pid
            ));
        }
    }
    out
}

/// The first line `srun --slurmd-debug` gets of the step, from `verbose` on: the step's
/// log levels, written before any task starts (so also when none could).
fn step_debug_levels(launch: &v1::TaskLaunch) -> String {
    use model::log_level::LogLevel;
    let level = LogLevel::from_number(launch.slurmd_debug).step_stderr();
    if launch.slurmd_debug == 0 || level < LogLevel::Verbose {
        return String::new();
    }
    format!(
        "slurmstepd: debug levels are stderr='{}', logfile='info', syslog='quiet'\n",
        level.name()
    )
}

/// Kills what is left in a step's cgroup.
fn kill_step(cg: &JobCgroup, step: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let procs = cg.step_processes(step);
        if procs.is_empty() || std::time::Instant::now() >= deadline {
            return;
        }
        for pid in procs {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Where a task's input goes.
enum Stdin {
    Pipe(tokio::net::unix::pipe::Sender),
    /// A terminal's master, written by a thread of its own (a terminal whose task does
    /// not read fills up and blocks).
    Terminal(std::sync::mpsc::Sender<Vec<u8>>),
}

impl Stdin {
    fn terminal(mut master: std::fs::File) -> Stdin {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        std::thread::spawn(move || {
            use std::io::Write;
            while let Ok(data) = rx.recv() {
                if master.write_all(&data).is_err() {
                    return;
                }
            }
        });
        Stdin::Terminal(tx)
    }

    async fn write(&mut self, data: &[u8]) {
        match self {
            Stdin::Pipe(p) => {
                let _ = p.write_all(data).await;
            }
            Stdin::Terminal(t) => {
                let _ = t.send(data.to_vec());
            }
        }
    }

    /// srun's input ended: a pipe closes; a terminal reads end-of-file (^D), as a
    /// terminal's user would type it.
    fn close(self) {
        if let Stdin::Terminal(t) = self {
            let _ = t.send(vec![END_OF_FILE]);
        }
    }
}

/// The terminal's end-of-file character in its default settings (^D, VEOF).
const END_OF_FILE: u8 = 4;

/// What a task's output comes through.
enum Output {
    Pipes(OwnedFd, OwnedFd),
    Terminal(std::fs::File),
}

/// One chunk of a task's output, as the answer stream carries it.
fn data_message(task_id: u32, stderr: bool, data: &[u8]) -> TaskOutput {
    let data = v1::TaskData {
        task_id,
        stderr,
        data: data.to_vec(),
    };
    TaskOutput {
        output: Some(task_output::Output::Data(data)),
    }
}

/// Streams a task's output and waits for it; gives its exit, and what it read and
/// wrote.
async fn watch_task(
    task_id: u32,
    pid: Pid,
    output: Output,
    out: Outlet,
    epilog: Option<TaskScript>,
) -> (v1::TaskExit, Option<model::DiskIo>) {
    let readers: Vec<tokio::task::JoinHandle<()>> = match output {
        Output::Pipes(stdout, stderr) => [(stdout, false), (stderr, true)]
            .map(|(fd, is_err)| {
                let out = out.clone();
                tokio::spawn(async move {
                    let Ok(mut rx) = tokio::net::unix::pipe::Receiver::from_owned_fd(fd) else {
                        return;
                    };
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        match rx.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => {
                                if !out.send(data_message(task_id, is_err, &buf[..n])).await {
                                    return;
                                }
                            }
                        }
                    }
                })
            })
            .into(),
        // The master reads EIO once no process holds the slave side any more.
        Output::Terminal(mut master) => {
            let out = out.clone();
            vec![tokio::task::spawn_blocking(move || {
                use std::io::Read;
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    match master.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if !out.blocking_send(data_message(task_id, false, &buf[..n])) {
                                return;
                            }
                        }
                    }
                }
            })]
        }
    };
    let (status, io) = tokio::task::spawn_blocking(move || {
        // What it read and wrote, read while it is a zombie (as slurmstepd does): once
        // reaped, its figures, and those of the children it reaped, are gone.
        let io = loop {
            match waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
                Err(Errno::EINTR) => {}
                Ok(_) => break crate::procfs::disk_io(pid.as_raw() as u32),
                Err(_) => break None,
            }
        };
        let status = loop {
            match waitpid(pid, None) {
                Ok(WaitStatus::Exited(_, code)) => break (code, 0),
                Ok(WaitStatus::Signaled(_, sig, _)) => break (0, sig as i32),
                Err(Errno::EINTR) | Ok(_) => {}
                Err(_) => break (0, Signal::SIGKILL as i32),
            }
        };
        (status, io)
    })
    .await
    .unwrap_or(((0, Signal::SIGKILL as i32), None));
    // Its epilog, before its end is told, as slurmstepd runs it.
    if let Some(epilog) = epilog {
        let ran = tokio::task::spawn_blocking(move || {
            epilog.run(&NoIsolation::default(), Some(EPILOG_LIMIT))
        })
        .await;
        let failed = match ran {
            Ok(Ok((_, 0))) => None,
            // Killed at its limit (9), or its exit code, as slurmstepd says it.
            Ok(Ok((_, status))) => Some(format!("status={status}")),
            Ok(Err(e)) => Some(e),
            Err(e) => Some(e.to_string()),
        };
        if let Some(why) = failed {
            warn!(task_id, error = %why, "task epilog failed");
            let line = format!("drover-noded: error: TaskEpilog failed {why}\n");
            out.send(data_message(task_id, true, line.as_bytes())).await;
        }
    }
    // The output of a task that left children holding its pipes ends when they do, or
    // when the step is cleared.
    for r in readers {
        let _ = r.await;
    }
    let exit = v1::TaskExit {
        task_id,
        exit_code: status.0,
        exit_signal: status.1,
    };
    (exit, io)
}

struct StartedTask {
    task_id: u32,
    pid: Pid,
    streams: TaskStreams,
    /// What its prolog's `print` lines wrote: the start of its output.
    printed: Vec<u8>,
    /// What it says first on its standard error (`--gpu-bind=verbose`'s line).
    reported: Vec<u8>,
    /// Its epilog, run once it has ended.
    epilog: Option<TaskScript>,
}

/// How long a task's `--task-epilog` may run before it is killed, as slurmstepd's.
const EPILOG_LIMIT: Duration = Duration::from_secs(5);

/// A task's `--task-prolog` or `--task-epilog`: a program run as the task's user, in its
/// environment and working directory; what it leaves in its process group is killed
/// when it ends.
#[derive(Clone)]
struct TaskScript {
    path: String,
    env: Vec<(String, String)>,
    work_dir: String,
    user: RunAs,
}

impl TaskScript {
    /// Runs it to its end (or `limit`), then kills its process group; its standard output
    /// and how it ended: 0, its exit code, or the signal that killed it (9 at `limit`).
    fn run(
        &self,
        isolation: &dyn Isolation,
        limit: Option<Duration>,
    ) -> Result<(Vec<u8>, i32), String> {
        use std::io::Read;
        let program =
            Program::for_command(std::slice::from_ref(&self.path), &self.env, &self.work_dir)
                .map_err(|e| e.to_string())?;
        let null = std::fs::File::open("/dev/null").map_err(|e| e.to_string())?;
        let (out_rd, out_wr) =
            pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("cannot create a pipe: {e}"))?;
        let pid = spawn(
            &program,
            &Stdio {
                stdin: null.as_fd(),
                stdout: out_wr.as_fd(),
                stderr: null.as_fd(),
                terminal: false,
            },
            isolation,
            &self.user,
        )
        .map_err(|e| format!("{}: {e}", self.path))?;
        drop(out_wr);
        let reader = std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = std::fs::File::from(out_rd).read_to_end(&mut text);
            text
        });
        let deadline = limit.map(|l| std::time::Instant::now() + l);
        let status = loop {
            let flags = deadline.map(|_| nix::sys::wait::WaitPidFlag::WNOHANG);
            match waitpid(pid, flags) {
                Ok(WaitStatus::StillAlive) => {
                    if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                        let _ = killpg(pid, Signal::SIGKILL);
                        let _ = waitpid(pid, None);
                        break Signal::SIGKILL as i32;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(Errno::EINTR) => {}
                Ok(WaitStatus::Exited(_, code)) => break code,
                Ok(WaitStatus::Signaled(_, sig, _)) => break sig as i32,
                Err(_) => break 0,
                Ok(_) => {}
            }
        };
        let _ = killpg(pid, Signal::SIGKILL);
        Ok((reader.join().unwrap_or_default(), status))
    }
}

/// Applies a task prolog's output to the task's environment, as slurmstepd reads it:
/// `export NAME=value` sets, `unset NAME` removes, `print text` is written to the task's
/// output; other lines mean nothing. Gives what `print` wrote.
fn apply_prolog_output(text: &[u8], env: &mut Vec<(String, String)>) -> Vec<u8> {
    let mut printed = Vec::new();
    for line in String::from_utf8_lossy(text).lines() {
        if let Some(rest) = line.strip_prefix("print ") {
            printed.extend_from_slice(rest.as_bytes());
            printed.push(b'\n');
        } else if let Some(rest) = line.strip_prefix("export ") {
            if let Some((name, value)) = rest.trim_start().split_once('=')
                && !name.is_empty()
            {
                crate::env::set_var(env, name, value.to_string());
            }
        } else if let Some(rest) = line.strip_prefix("unset ") {
            let name = rest.trim();
            env.retain(|(k, _)| k != name);
        }
    }
    printed
}

/// A started task's standard streams, as the daemon holds them.
enum TaskStreams {
    /// Pipes: its stdin to write, its stdout and stderr to read.
    Pipes {
        stdin: OwnedFd,
        stdout: OwnedFd,
        stderr: OwnedFd,
    },
    /// A pseudo-terminal's master: its input and all its output.
    Terminal(OwnedFd),
}

/// A pseudo-terminal of `size` (24x80 when none is given): its master and slave, both
/// closed on exec (the task gets the slave as its standard streams).
fn open_terminal(size: Option<&v1::WindowSize>) -> Result<(OwnedFd, OwnedFd), String> {
    use nix::pty::{grantpt, posix_openpt, ptsname_r, unlockpt};
    use std::os::unix::fs::OpenOptionsExt;
    let failed = |e: nix::Error| format!("cannot open a pseudo-terminal: {e}");
    let master =
        posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC).map_err(failed)?;
    grantpt(&master).map_err(failed)?;
    unlockpt(&master).map_err(failed)?;
    let name = ptsname_r(&master).map_err(failed)?;
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(&name)
        .map_err(|e| format!("cannot open {name}: {e}"))?;
    let default = v1::WindowSize { rows: 24, cols: 80 };
    let size = size
        .filter(|s| s.rows > 0 && s.cols > 0)
        .unwrap_or(&default);
    let master = OwnedFd::from(master);
    set_window_size(&master, size).map_err(|e| format!("cannot size {name}: {e}"))?;
    Ok((master, slave.into()))
}

/// Gives the terminal whose master is `master` the size `size`.
fn set_window_size(master: &impl AsFd, size: &v1::WindowSize) -> Result<(), Errno> {
    use std::os::fd::AsRawFd;
    let ws = libc::winsize {
        ws_row: size.rows.min(u32::from(u16::MAX)) as u16,
        ws_col: size.cols.min(u32::from(u16::MAX)) as u16,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one winsize, which `ws` is, from a live descriptor.
    let r = unsafe { libc::ioctl(master.as_fd().as_raw_fd(), libc::TIOCSWINSZ, &ws) };
    Errno::result(r).map(|_| ())
}

struct Started {
    tasks: Vec<StartedTask>,
    cgroup: Option<JobCgroup>,
}

/// The step's processes join its cgroup before exec.
struct StepPlacement {
    procs: Vec<OwnedFd>,
}

impl Isolation for StepPlacement {
    fn name(&self) -> &'static str {
        "cgroup step"
    }
    fn prepare(&mut self, _job: &LaunchInfo) -> Result<(), IsolationError> {
        Ok(())
    }
    fn enter_child(&self) -> Result<(), Errno> {
        cgroup::join(&self.procs)
    }
    fn started(&mut self, _pid: Pid) {}
    fn signal_all(&self, _signal: Signal) -> Result<(), IsolationError> {
        Ok(())
    }
}

/// One task's placement: its own cgroup inside the step's (else the step's), and its
/// own CPUs (`--cpu-bind`).
struct TaskPlacement<'a> {
    step: &'a dyn Isolation,
    /// The `cgroup.procs` files of the task's cgroup.
    own: Option<Vec<OwnedFd>>,
    cpus: Option<nix::sched::CpuSet>,
    /// srun's soft resource limits: (Linux resource, limit).
    rlimits: &'a [(u32, u64)],
}

impl Isolation for TaskPlacement<'_> {
    fn name(&self) -> &'static str {
        self.step.name()
    }
    fn prepare(&mut self, _job: &LaunchInfo) -> Result<(), IsolationError> {
        Ok(())
    }
    fn enter_child(&self) -> Result<(), Errno> {
        match &self.own {
            Some(procs) => cgroup::join(procs)?,
            None => self.step.enter_child()?,
        }
        crate::isolation::set_rlimits(self.rlimits);
        match &self.cpus {
            Some(set) => nix::sched::sched_setaffinity(Pid::from_raw(0), set),
            None => Ok(()),
        }
    }
    fn started(&mut self, _pid: Pid) {}
    fn signal_all(&self, _signal: Signal) -> Result<(), IsolationError> {
        Ok(())
    }
}

/// The CPU set of task `local`, as `--cpu-bind` says; `None`: not bound (or the node's
/// CPU ids are not this host's).
fn task_cpu_set(
    launch: &v1::TaskLaunch,
    local: u32,
    pin: bool,
    bind: &model::step::CpuBind,
) -> Option<nix::sched::CpuSet> {
    if !pin {
        return None;
    }
    let ids = model::step::task_cpus(&launch.cpu_ids, local, launch.cpus_per_task, bind);
    if ids.is_empty() {
        return None;
    }
    let mut set = nix::sched::CpuSet::new();
    for id in ids {
        set.set(id as usize).ok()?;
    }
    Some(set)
}

/// The NUMA nodes of task `local`'s CPUs, as the host's topology (hwloc) places them;
/// empty when the CPUs are not the host's or the topology is not known.
fn task_numa_nodes(
    launch: &v1::TaskLaunch,
    local: u32,
    pin: bool,
    bind: &model::step::CpuBind,
) -> Vec<u32> {
    let (true, Some(topology)) = (pin, crate::topology::host()) else {
        return Vec::new();
    };
    let cpus = model::step::task_cpus(&launch.cpu_ids, local, launch.cpus_per_task, bind);
    topology
        .numa_nodes
        .iter()
        .filter(|(_, numa_cpus)| cpus.iter().any(|c| numa_cpus.contains(c)))
        .map(|(numa, _)| *numa)
        .collect()
}

/// Builds the step's cgroup and starts every task (blocking: it forks).
fn start(
    launch: &v1::TaskLaunch,
    srun_addr: Option<std::net::SocketAddr>,
    confinement: &Confinement,
    step: &str,
    pin_cpus: bool,
    batch_here: bool,
) -> Result<Started, String> {
    if launch.argv.is_empty() {
        return Err("no command to run".into());
    }
    let env: Vec<(String, String)> = launch
        .env
        .iter()
        .map(|v| (v.name.clone(), v.value.clone()))
        .collect();
    let user = RunAs::for_job(launch.uid, launch.gid, &env).map_err(|e| e.to_string())?;
    let mut info = LaunchInfo::minimal(launch.job_id, &launch.node_name, &launch.work_dir);
    info.cpu_ids = if pin_cpus {
        launch.cpu_ids.clone()
    } else {
        Vec::new()
    };
    info.mem_on_node_mb = launch.mem_mb;
    info.gpu_indices = launch.gpu_indices.clone();
    info.gpu_files = confinement.gpu_files.clone();
    info.gpu_uuids = confinement.gpu_uuids.clone();
    info.gpu_types = confinement.gpu_types.clone();
    info.gpu_memory_mb = confinement.gpu_memory_mb.clone();
    info.cgroup = confinement.cgroup.clone();
    let bind = if launch.gpu_bind.is_empty() {
        model::step::GpuBind::None
    } else {
        model::step::GpuBind::parse(&launch.gpu_bind)?
    };
    let cpu_bind = if launch.cpu_bind.is_empty() {
        model::step::CpuBind::Own
    } else {
        model::step::CpuBind::parse(&launch.cpu_bind)?
    };
    let (cgroup, isolation): (Option<JobCgroup>, Box<dyn Isolation>) = match &confinement.cgroup {
        Some(placement) => {
            let cg = JobCgroup::new(
                &placement.hierarchy,
                &placement.prefix,
                &launch.node_name,
                launch.job_id,
            )
            .map_err(|e| e.to_string())?;
            let procs = {
                let _layout = crate::cgroup::layout_lock();
                cg.create(&crate::isolation::job_limits(&info), step)
                    .map_err(|e| format!("cannot set up the step's cgroup: {e}"))?
            };
            (Some(cg), Box::new(StepPlacement { procs }))
        }
        None => (None, Box::new(NoIsolation::default())),
    };
    let local_ids = launch.task_ids.iter().enumerate();
    let gtids = crate::env::id_list(&launch.task_ids);
    // srun names the step's MPI type and task count in the step's environment.
    let mpi = crate::env::get_var(&env, "SLURM_MPI_TYPE")
        .map(model::step::MpiType::parse)
        .transpose()?
        .unwrap_or_default();
    let step_tasks = crate::env::get_var(&env, "SLURM_STEP_NUM_TASKS")
        .and_then(|n| n.parse().ok())
        .unwrap_or(launch.task_ids.len() as u32);
    let rlimits: Vec<(u32, u64)> = launch
        .rlimits
        .iter()
        .filter_map(|l| {
            proto::convert::rlimit_from_wire(l.kind).map(|r| (r.linux_resource(), l.soft))
        })
        .collect();
    let mut tasks = Vec::new();
    let mut failure = None;
    for (local, &task_id) in local_ids {
        let mut task_env = env.clone();
        let mut reported = Vec::new();
        let mut set = |k: &str, v: String| crate::env::set_var(&mut task_env, k, v);
        set("SLURM_PROCID", task_id.to_string());
        set("SLURM_LOCALID", local.to_string());
        set("SLURM_NODEID", launch.node_index.to_string());
        set("SLURMD_NODENAME", launch.node_name.clone());
        set("SLURM_GTIDS", gtids.clone());
        // Where srun talks to this node from, as slurmd tells its tasks.
        if let Some(addr) = srun_addr {
            set("SLURM_LAUNCH_NODE_IPADDR", addr.ip().to_string());
            set("SLURM_SRUN_COMM_PORT", addr.port().to_string());
        }
        // Without a topology, Slurm's address of a node is its name.
        set("SLURM_TOPOLOGY_ADDR", launch.node_name.clone());
        set("SLURM_TOPOLOGY_ADDR_PATTERN", "node".into());
        for (name, value) in mpi.task_vars(launch.job_id, launch.step_id, task_id, step_tasks) {
            set(name, value);
        }
        if !launch.gpu_indices.is_empty() {
            set("SLURM_STEP_GPUS", crate::env::id_list(&launch.gpu_indices));
            set("SLURM_GPUS_ON_NODE", launch.gpu_indices.len().to_string());
            let mine = match bind {
                model::step::GpuBind::Closest => model::step::closest_gpus(
                    &launch.gpu_indices,
                    local as u32,
                    &task_numa_nodes(launch, local as u32, pin_cpus, &cpu_bind),
                    |g| confinement.gpu_numa.get(g as usize).copied(),
                ),
                _ => model::step::task_gpus(
                    &launch.gpu_indices,
                    local as u32,
                    launch.gpus_per_task,
                    &bind,
                ),
            };
            let visible = crate::env::cuda_visible_devices(&info, &mine);
            if model::step::gpu_bind_verbose(&launch.gpu_bind) {
                reported =
                    model::step::gpu_bind_report(&launch.gpu_indices, &mine, &visible).into_bytes();
            }
            set("CUDA_VISIBLE_DEVICES", visible.clone());
            set("GPU_DEVICE_ORDINAL", visible);
        }
        for (name, value) in user.login_env() {
            if !task_env.iter().any(|(k, _)| k == name) {
                task_env.push((name.to_string(), value));
            }
        }
        // Each task counts in a cgroup of its own (`task_<id>`), for per-task usage.
        let own = match cgroup.as_ref().map(|cg| cg.create_task(step, task_id)) {
            Some(Err(e)) => {
                failure = Some(format!("cannot set up the task's cgroup: {e}"));
                break;
            }
            Some(Ok(procs)) => Some(procs),
            None => None,
        };
        let placement = TaskPlacement {
            step: &*isolation,
            own,
            cpus: task_cpu_set(launch, local as u32, pin_cpus, &cpu_bind),
            rlimits: &rlimits,
        };
        let script = |path: &str, env: &[(String, String)]| TaskScript {
            path: path.to_string(),
            env: env.to_vec(),
            work_dir: launch.work_dir.clone(),
            user: user.clone(),
        };
        let mut printed = Vec::new();
        if !launch.task_prolog.is_empty() {
            match script(&launch.task_prolog, &task_env).run(&placement, None) {
                Ok((text, _)) => printed = apply_prolog_output(&text, &mut task_env),
                Err(e) => {
                    failure = Some(format!("task prolog failed: {e}"));
                    break;
                }
            }
        }
        let epilog =
            (!launch.task_epilog.is_empty()).then(|| script(&launch.task_epilog, &task_env));
        match start_task(launch, &task_env, &placement, &user, task_id) {
            Ok(mut t) => {
                t.printed = printed;
                if model::step::cpu_bind_verbose(&launch.cpu_bind) {
                    let bound = placement.cpus.is_some();
                    let cpus = if bound {
                        model::step::task_cpus(
                            &launch.cpu_ids,
                            local as u32,
                            launch.cpus_per_task,
                            &cpu_bind,
                        )
                    } else {
                        launch.cpu_ids.clone()
                    };
                    let line = model::step::cpu_bind_report(
                        bound,
                        &launch.node_name,
                        task_id,
                        local as u32,
                        t.pid.as_raw(),
                        &cpus,
                    );
                    reported.splice(0..0, line.into_bytes());
                }
                t.reported = reported;
                t.epilog = epilog;
                tasks.push(t)
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    if let Some(message) = failure {
        for t in &tasks {
            let _ = killpg(t.pid, Signal::SIGKILL);
            let _ = waitpid(t.pid, None);
        }
        if let Some(cg) = &cgroup {
            kill_step(cg, step);
            let _layout = crate::cgroup::layout_lock();
            let _ = cg.remove_step(step, batch_here);
        }
        return Err(message);
    }
    Ok(Started { tasks, cgroup })
}

fn start_task(
    launch: &v1::TaskLaunch,
    env: &[(String, String)],
    isolation: &dyn Isolation,
    user: &RunAs,
    task_id: u32,
) -> Result<StartedTask, String> {
    // With --multi-prog, the task's line of the configuration, then srun's other words.
    let argv = if launch.multi_prog.is_empty() {
        launch.argv.clone()
    } else {
        model::multi_prog::task_argv(&launch.multi_prog, task_id, &launch.argv[1..])?
    };
    let program = Program::for_command(&argv, env, &launch.work_dir).map_err(|e| e.to_string())?;
    let spawned = |stdio: &Stdio| {
        spawn(&program, stdio, isolation, user).map_err(|e| match e {
            crate::spawn::SpawnError::Exec(errno) => {
                format!("execve(): {}: {}", argv[0], errno.desc())
            }
            e => e.to_string(),
        })
    };
    if launch.pty.is_some() && task_id == 0 {
        let (master, slave) = open_terminal(launch.pty.as_ref())?;
        let pid = spawned(&Stdio {
            stdin: slave.as_fd(),
            stdout: slave.as_fd(),
            stderr: slave.as_fd(),
            terminal: true,
        })?;
        return Ok(StartedTask {
            task_id,
            pid,
            streams: TaskStreams::Terminal(master),
            printed: Vec::new(),
            reported: Vec::new(),
            epilog: None,
        });
    }
    let pipe = || pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("cannot create a pipe: {e}"));
    let (in_rd, in_wr) = pipe()?;
    let (out_rd, out_wr) = pipe()?;
    let (err_rd, err_wr) = pipe()?;
    let pid = spawned(&Stdio {
        stdin: in_rd.as_fd(),
        stdout: out_wr.as_fd(),
        stderr: err_wr.as_fd(),
        terminal: false,
    })?;
    Ok(StartedTask {
        task_id,
        pid,
        streams: TaskStreams::Pipes {
            stdin: in_wr,
            stdout: out_rd,
            stderr: err_rd,
        },
        printed: Vec::new(),
        reported: Vec::new(),
        epilog: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_prologs_lines_shape_the_tasks_environment_and_output() {
        let mut env = vec![
            ("DISPLAY".to_string(), ":0".to_string()),
            ("TEST".to_string(), "old".to_string()),
        ];
        let printed = apply_prolog_output(
            b"print HEADER\nexport TEST=prolog_qa\nunset DISPLAY\nexport A=b=c\nnoise\n",
            &mut env,
        );
        assert_eq!(printed, b"HEADER\n");
        assert_eq!(
            env,
            [
                ("TEST".to_string(), "prolog_qa".to_string()),
                ("A".to_string(), "b=c".to_string())
            ]
        );
    }

    #[test]
    fn slurmd_debug_shows_the_steps_levels_from_verbose_on() {
        use model::log_level::LogLevel;
        let levels = |level: LogLevel| {
            step_debug_levels(&v1::TaskLaunch {
                slurmd_debug: level.number(),
                ..Default::default()
            })
        };
        // `--slurmd-debug=error` raises the step's stderr from error by error's number.
        assert_eq!(
            levels(LogLevel::Error),
            "slurmstepd: debug levels are stderr='verbose', logfile='info', syslog='quiet'\n"
        );
        assert_eq!(levels(LogLevel::Quiet), "");
        let no_tasks = step_log(
            &v1::TaskLaunch {
                slurmd_debug: LogLevel::Error.number(),
                ..Default::default()
            },
            &[],
        );
        assert_eq!(no_tasks, levels(LogLevel::Error));
    }
}
