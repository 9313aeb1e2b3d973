//! The job supervisor: `drover-noded supervise <job-dir>`, one process per batch job,
//! started by the daemon in a session of its own so that the job outlives a restart of
//! the daemon (Slurm's slurmstepd).
//!
//! It reads `launch.json`, opens the output files, enters the working directory, starts
//! the script as the leader of its own process group (`spawn`), then waits for it while
//! it enforces the time limit (SIGCONT+SIGTERM, SIGKILL after KillWait: TIMEOUT), sends
//! the `--signal` warning, and treats its own SIGTERM as a cancel (same escalation:
//! CANCELLED). When the script ends, whatever it left behind is killed: the supervisor
//! is a child subreaper, so orphans of the job become its children and are reaped before
//! `status.json` is written. The supervisor is single-threaded; its signals are blocked
//! and taken synchronously with `sigtimedwait`. SIGUSR1 suspends the job (SIGSTOP to
//! all of it; its time limit stops running), SIGUSR2 resumes it (SIGCONT), SIGURG
//! writes the messages `scontrol notify` left in the job's `notify` file on its stderr.

use crate::affinity::Pinning;
use crate::env::job_env;
use crate::isolation::Isolation;
use crate::launch::LaunchInfo;
use crate::output::{appends, resolve_io};
use crate::procfs;
use crate::spawn::{Program, Stdio, spawn};
use crate::spool::{JobDir, NOTIFY, PGID, PID, SCRIPT, SUPERVISOR_PID};
use crate::status::{FinishKind, JobStatus};
use crate::unix_now;
use crate::user::RunAs;
use model::Time;
use nix::errno::Errno;
use nix::sys::signal::{SigHandler, SigSet, Signal, kill, signal};
use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
use nix::unistd::Pid;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tracing::{debug, error, info, warn};

/// Where a job runs when its working directory cannot be entered.
pub const FALLBACK_WORK_DIR: &str = "/tmp";

/// The "signal" of a step the kernel's OOM killer ended, as Slurm reports it (its
/// SIG_OOM, 253, seen through the 7 bits of a termination signal).
pub const OOM_EXIT_SIGNAL: i32 = 125;

/// How long leftovers of a job may survive SIGKILL before the supervisor gives up on them.
const KILL_GIVE_UP: Duration = Duration::from_secs(10);
/// Set by sbatch for `--export=NONE`: load the user's login environment on the node
/// (Slurm's variable of the same name, which its `--get-user-env` sets too).
const GET_USER_ENV: &str = "SLURM_GET_USER_ENV";
/// How long the user's login shell may take to say its environment (Slurm's default
/// `--get-user-env` timeout).
const LOGIN_ENV_TIMEOUT: Duration = Duration::from_secs(8);

/// Runs the supervisor of the job in `dir`; returns the process exit code.
pub fn main(dir: &Path) -> i32 {
    // Our own session: a signal to the daemon's group or terminal does not reach us.
    let _ = nix::unistd::setsid();
    ensure_standard_fds();
    // The zone is read before the job starts, not in the middle of ending it.
    zone();
    // An inherited SIG_IGN for SIGCHLD would make the kernel reap the script for us and
    // lose its exit status.
    // SAFETY: installs the default disposition; no handler code is involved.
    let _ = unsafe { signal(Signal::SIGCHLD, SigHandler::SigDfl) };
    let signals = supervisor_signals();
    if let Err(e) = signals.thread_block() {
        error!(error = %e, "cannot block signals");
    }
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        warn!(error = %e, "cannot become a child subreaper; orphans of the job may survive it");
    }
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let job_dir = JobDir::new(dir);
    if let Err(e) = job_dir.write_pid(SUPERVISOR_PID, std::process::id()) {
        warn!(error = %e, "cannot write the supervisor pid file");
    }
    let status = match job_dir.read_launch() {
        Ok(info) => {
            let span = tracing::info_span!("step", job_id = info.job_id, step_id = "batch");
            let _enter = span.enter();
            let mut isolation = crate::isolation::for_job(&info);
            Supervisor {
                info,
                dir: job_dir.clone(),
                isolation: &mut *isolation,
                signals,
                notes: None,
                notices_written: 0,
                script_io: None,
            }
            .run()
        }
        Err(e) => {
            error!(error = %e, "cannot read the launch record");
            JobStatus::launch_failed(unix_now(), e.to_string())
        }
    };
    match job_dir.write_status(&status) {
        Ok(()) => 0,
        Err(e) => {
            error!(error = %e, "cannot write the job status");
            1
        }
    }
}

/// The signals the supervisor takes synchronously.
fn supervisor_signals() -> SigSet {
    let mut set = SigSet::empty();
    for s in [
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGCHLD,
        Signal::SIGUSR1,
        Signal::SIGUSR2,
        Signal::SIGURG,
    ] {
        set.add(s);
    }
    set
}

/// Opens /dev/null on any of fds 0-2 that is closed, so that files opened later never
/// land there (the child's streams are dup'ed onto 0-2).
fn ensure_standard_fds() {
    for fd in 0..3 {
        // SAFETY: fcntl(F_GETFD) only queries a descriptor number.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            // Takes the lowest free descriptor, `fd`; deliberately leaked.
            if let Ok(f) = File::options().read(true).write(true).open("/dev/null") {
                std::mem::forget(f);
            }
        }
    }
}

struct Started {
    pid: Pid,
    start_time: Time,
    started_at: Instant,
}

struct Supervisor<'a> {
    info: LaunchInfo,
    dir: JobDir,
    isolation: &'a mut dyn Isolation,
    signals: SigSet,
    /// The job's stderr file, for the lines Slurm writes there itself.
    notes: Option<File>,
    /// How much of the job's `notify` file is on its stderr already.
    notices_written: usize,
    /// What the script read and wrote, read as it ended.
    script_io: Option<model::DiskIo>,
}

impl Supervisor<'_> {
    fn run(&mut self) -> JobStatus {
        if let Err(message) = self.site_script(&self.info.prolog, "prolog") {
            warn!(%message, "prolog failed; the job is requeued and the node drained");
            return JobStatus {
                kind: FinishKind::PrologFailed,
                drain_reason: "Prolog error".into(),
                ..JobStatus::launch_failed(unix_now(), message)
            };
        }
        let mut status = match self.start() {
            Ok(started) => self.watch(started),
            Err(message) => {
                warn!(%message, "job launch failed");
                JobStatus::launch_failed(unix_now(), message)
            }
        };
        self.isolation.release();
        if let Err(message) = self.site_script(&self.info.epilog, "epilog") {
            warn!(%message, "epilog failed; the node is drained");
            if status.drain_reason.is_empty() {
                status.drain_reason = "Epilog error".into();
            }
        }
        info!(kind = ?status.kind, exit_code = status.exit_code, exit_signal = status.exit_signal, "job ended");
        status
    }

    /// Opens the job's files, enters its working directory and starts the script.
    fn start(&mut self) -> Result<Started, String> {
        let user = RunAs::for_job(self.info.spec.uid, self.info.spec.gid, &self.info.env)
            .map_err(|e| e.to_string())?;
        let (stdin, stdout, stderr) = {
            // The working directory is entered and the files opened with the user's
            // rights: `-o` cannot write where the user could not.
            let _as_user = user.access().map_err(|e| e.to_string())?;
            self.open_files()?
        };
        let stderr = stderr.as_ref().unwrap_or(&stdout);
        self.notes = stderr.try_clone().ok();
        self.isolation
            .prepare(&self.info)
            .map_err(|e| self.failed(e.to_string()))?;
        let mut env = job_env(&self.info, &self.info.node_name);
        // `--export=NONE`: the user's login environment under the job's own
        // variables, as slurmd loads it.
        let get_user_env = env.iter().any(|(k, v)| k == GET_USER_ENV && v == "1");
        env.retain(|(k, _)| k != GET_USER_ENV);
        if get_user_env {
            match user.login_environment(LOGIN_ENV_TIMEOUT) {
                Ok(login) => {
                    for (name, value) in login {
                        if !env.iter().any(|(k, _)| *k == name) {
                            env.push((name, value));
                        }
                    }
                }
                Err(why) => {
                    warn!(%why, "cannot load the user's login environment");
                    self.note(&format!(
                        "error: Unable to get user's local environment: {why}"
                    ));
                }
            }
        }
        for (name, value) in user.login_env() {
            if !env.iter().any(|(k, _)| k == name) {
                env.push((name.to_string(), value));
            }
        }
        // sbatch's resource limits, for the script to start with (Slurm's
        // PropagateResourceLimits=ALL).
        let rlimits: Vec<(u32, u64)> = model::step::Rlimit::take_from_env(&mut env)
            .into_iter()
            .map(|(r, soft)| (r.linux_resource(), soft))
            .collect();
        let program =
            Program::for_script(&self.dir.file(SCRIPT), &self.info.spec.script_args, &env)
                .map_err(|e| self.failed(e.to_string()))?;
        let stdio = Stdio {
            stdin: stdin.as_fd(),
            stdout: stdout.as_fd(),
            stderr: stderr.as_fd(),
            terminal: false,
        };
        match crate::affinity::pin(&self.info.cpu_ids) {
            Pinning::Pinned(ids) => {
                debug!(cpus = %model::job::format_ranges(&ids), "pinned to cpus")
            }
            Pinning::NotAsked => {}
            Pinning::Unavailable(id) => {
                debug!(cpu = id, "cpu id not usable on this host; job not pinned")
            }
            Pinning::Failed(errno) => warn!(%errno, "cannot pin the job to its cpus"),
        }
        let start_time = unix_now();
        let started_at = Instant::now();
        let confined = crate::isolation::WithRlimits {
            inner: &*self.isolation,
            rlimits: &rlimits,
        };
        let pid =
            spawn(&program, &stdio, &confined, &user).map_err(|e| self.failed(e.to_string()))?;
        self.isolation.started(pid);
        let pid_u32 = pid.as_raw() as u32;
        for name in [PID, PGID] {
            if let Err(e) = self.dir.write_pid(name, pid_u32) {
                warn!(error = %e, "cannot write a pid file");
            }
        }
        info!(pid = pid_u32, isolation = self.isolation.name(), argv = ?program.argv(), "script started");
        Ok(Started {
            pid,
            start_time,
            started_at,
        })
    }

    /// Enters the job's working directory and opens its input, output and error files
    /// (no error file: errors go to the output file).
    fn open_files(&mut self) -> Result<(File, File, Option<File>), String> {
        let (work_dir, chdir_error) = enter_work_dir(&self.info.spec.work_dir);
        let io = resolve_io(&self.info, &work_dir);
        let append = appends(&self.info);
        let stdout = open_output(&io.stdout, append).map_err(|e| {
            format!(
                "cannot open output file {}: {}",
                io.stdout.display(),
                reason(&e)
            )
        })?;
        let stderr = match &io.stderr {
            Some(path) => Some(open_output(path, append).map_err(|e| {
                format!("cannot open error file {}: {}", path.display(), reason(&e))
            })?),
            None => None,
        };
        if let Some(message) = chdir_error {
            warn!(%message, "working directory unusable");
            let mut notes = stderr.as_ref().unwrap_or(&stdout);
            let _ = writeln!(notes, "drover-noded: error: {message}");
        }
        let stdin = File::open(&io.stdin).map_err(|e| {
            format!(
                "cannot open input file {}: {}",
                io.stdin.display(),
                reason(&e)
            )
        })?;
        Ok((stdin, stdout, stderr))
    }

    /// Runs the site's prolog or epilog (`[node_daemon]`), as root, with the job's
    /// Slurm variables and `SLURM_SCRIPT_CONTEXT` (`prolog_slurmd`, `epilog_slurmd`).
    /// Its output goes to the supervisor's log. No script is success.
    fn site_script(&self, path: &str, what: &str) -> Result<(), String> {
        if path.is_empty() {
            return Ok(());
        }
        let mut env = crate::env::slurm_env(&self.info, &self.info.node_name);
        env.push(("SLURM_SCRIPT_CONTEXT".into(), format!("{what}_slurmd")));
        env.push(("PATH".into(), "/usr/sbin:/usr/bin:/sbin:/bin".into()));
        let out = std::process::Command::new(path)
            .env_clear()
            .envs(env)
            .current_dir("/")
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {what} {path}: {}", reason(&e)))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        if !text.trim().is_empty() {
            info!(script = path, output = %text.trim(), "{what} said");
        }
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("{what} {path} failed: {}", out.status))
        }
    }

    /// Notes a launch failure in the job's stderr and passes the message on.
    fn failed(&mut self, message: String) -> String {
        self.note(&format!("error: {message}"));
        message
    }

    /// Writes a line of the supervisor's own into the job's stderr file.
    fn note(&mut self, line: &str) {
        if let Some(f) = self.notes.as_mut() {
            let _ = writeln!(f, "drover-noded: {line}");
        }
    }

    /// Writes the messages `scontrol notify` added to the job's `notify` file since the
    /// last time on its stderr, one line each.
    fn write_notices(&mut self) {
        let Ok(all) = std::fs::read_to_string(self.dir.path().join(NOTIFY)) else {
            return;
        };
        let Some(new) = all.get(self.notices_written..) else {
            return;
        };
        // Whole lines only: one being appended is taken at the next signal.
        let Some(end) = new.rfind('\n').map(|i| i + 1) else {
            return;
        };
        let lines: Vec<String> = new[..end].lines().map(str::to_string).collect();
        self.notices_written += end;
        for line in lines {
            self.note(&line);
        }
    }

    /// Waits for the script, enforcing time limit, warning signal and cancel; then
    /// clears the job's leftovers. Returns how it ended.
    fn watch(&mut self, s: Started) -> JobStatus {
        let kill_wait = Duration::from_secs(u64::from(self.info.kill_wait_secs));
        let limit = (self.info.time_limit_secs > 0)
            .then(|| Duration::from_secs(u64::from(self.info.time_limit_secs)));
        let mut timeout_at = limit.map(|l| s.started_at + l);
        let mut warn_at = match (&self.info.spec.signal, limit) {
            (Some(sig), Some(l)) => Some(
                s.started_at
                    + l.saturating_sub(Duration::from_secs(u64::from(sig.seconds_before_end))),
            ),
            _ => None,
        };
        let mut ending: Option<FinishKind> = None;
        let mut kill_at: Option<Instant> = None;
        let mut exit: Option<(i32, i32)> = None;
        // While suspended: since when, and the time its paused timers had left.
        let mut suspended: Option<(Instant, Option<Duration>, Option<Duration>)> = None;
        loop {
            self.reap(s.pid, &mut exit);
            if exit.is_some() {
                break;
            }
            let now = Instant::now();
            if warn_at.is_some_and(|t| t <= now) {
                warn_at = None;
                self.send_warning(s.pid);
            }
            if timeout_at.is_some_and(|t| t <= now) {
                timeout_at = None;
                warn_at = None;
                ending = Some(FinishKind::Timeout);
                info!(limit_secs = self.info.time_limit_secs, "time limit reached");
                let line =
                    time_limit_line(&format!("JOB {}", self.info.job_id), &self.info.node_name);
                self.note(&line);
                self.terminate();
                kill_at = Some(now + kill_wait);
            }
            if kill_at.is_some_and(|t| t <= now) {
                kill_at = None;
                self.signal_job(Signal::SIGKILL);
            }
            let next = [warn_at, timeout_at, kill_at].into_iter().flatten().min();
            let got = self.wait_signal(next.map(|t| t.saturating_duration_since(now)));
            match got {
                Some(Signal::SIGUSR1) if suspended.is_none() && ending.is_none() => {
                    let now = Instant::now();
                    let left = |t: Option<Instant>| t.map(|t| t.saturating_duration_since(now));
                    suspended = Some((now, left(timeout_at), left(warn_at)));
                    timeout_at = None;
                    warn_at = None;
                    self.signal_job(Signal::SIGSTOP);
                    self.mark_suspended(true);
                    info!("job suspended");
                }
                Some(Signal::SIGURG) => self.write_notices(),
                Some(Signal::SIGUSR2) => {
                    if let Some((since, timeout_left, warn_left)) = suspended.take() {
                        let now = Instant::now();
                        timeout_at = timeout_left.map(|d| now + d);
                        warn_at = warn_left.map(|d| now + d);
                        self.signal_job(Signal::SIGCONT);
                        self.mark_suspended(false);
                        info!(
                            suspended_ms = since.elapsed().as_millis() as u64,
                            "job resumed"
                        );
                    }
                }
                _ => {}
            }
            if matches!(got, Some(Signal::SIGTERM | Signal::SIGINT)) && ending.is_none() {
                // A suspended job is continued by `terminate` (SIGCONT first).
                if suspended.take().is_some() {
                    self.mark_suspended(false);
                }
                timeout_at = None;
                warn_at = None;
                ending = Some(FinishKind::Cancelled);
                info!("job cancelled");
                let line = model::job::cancelled_line(
                    &format!("JOB {}", self.info.job_id),
                    &self.info.node_name,
                    &local_timestamp(unix_now()),
                    false,
                );
                self.note(&line);
                self.terminate();
                kill_at = Some(Instant::now() + kill_wait);
            }
        }
        // The script is gone. Leftovers get the rest of the grace period when the job is
        // being terminated, none when the script ended by itself.
        let now = Instant::now();
        let kill_leftovers_at = if ending.is_some() {
            kill_at.unwrap_or(now)
        } else {
            now
        };
        let mut killed = self.clear_leftovers(kill_leftovers_at);
        // Processes that are no children of ours (none should be) are found in the
        // job's cgroup.
        if !self.isolation.kill_rest(KILL_GIVE_UP) {
            warn!("processes of the job's cgroup survive SIGKILL");
            killed = false;
        }

        let (mut exit_code, mut exit_signal) = exit.unwrap_or_default();
        let oom_kills = self.isolation.oom_kills();
        let kind = match ending {
            Some(kind) => kind,
            None if oom_kills > 0 => {
                self.note(&format!(
                    "error: Detected {oom_kills} oom-kill event(s) in StepId={}.batch. Some of \
                     your processes may have been killed by the cgroup out-of-memory handler.",
                    self.info.job_id
                ));
                // As Slurm: the step ends with its OOM marker, shown as ExitCode 0:125.
                (exit_code, exit_signal) = (0, OOM_EXIT_SIGNAL);
                FinishKind::OutOfMemory
            }
            None => FinishKind::Exited,
        };
        let message = match kind {
            FinishKind::Timeout => format!("time limit of {} s reached", self.info.time_limit_secs),
            FinishKind::Cancelled => "cancelled".to_string(),
            FinishKind::OutOfMemory => "out of memory".to_string(),
            FinishKind::Exited | FinishKind::LaunchFailed | FinishKind::PrologFailed => {
                String::new()
            }
        };
        JobStatus {
            kind,
            exit_code,
            exit_signal,
            start_time: s.start_time,
            end_time: unix_now(),
            message,
            batch_usage: self
                .isolation
                .batch_usage(&self.info.node_name, self.script_io),
            // As slurmd: a job that cannot be killed takes its node out of service.
            drain_reason: if killed {
                String::new()
            } else {
                "Kill task failed".into()
            },
        }
    }

    /// Reaps every child that has ended; records the script's end in `exit`, and
    /// what it read and wrote in `self.script_io`, read before it is reaped (the
    /// figures, with those of the children it reaped, go with it). Returns false when
    /// no child is left.
    fn reap(&mut self, main: Pid, exit: &mut Option<(i32, i32)>) -> bool {
        let ended = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG;
        loop {
            // Which child ended, left a zombie for now.
            let pid = match waitid(Id::All, ended | WaitPidFlag::WNOWAIT) {
                Ok(WaitStatus::StillAlive) => return true,
                Ok(status) => status.pid(),
                Err(Errno::EINTR) => continue,
                Err(Errno::ECHILD) => return false,
                Err(e) => {
                    error!(error = %e, "waitid failed");
                    return false;
                }
            };
            let Some(pid) = pid else { return true };
            if pid == main {
                self.script_io = procfs::disk_io(pid.as_raw() as u32);
            }
            match waitid(Id::Pid(pid), ended) {
                Ok(WaitStatus::Exited(pid, code)) if pid == main => *exit = Some((code, 0)),
                Ok(WaitStatus::Signaled(pid, sig, _)) if pid == main => {
                    *exit = Some((0, sig as i32))
                }
                Ok(_) | Err(Errno::EINTR) => {}
                Err(Errno::ECHILD) => return false,
                Err(e) => {
                    error!(error = %e, "waitid failed");
                    return false;
                }
            }
        }
    }

    /// Kills what the job left behind and reaps it, from `kill_at` on. False when some
    /// of it survives SIGKILL.
    fn clear_leftovers(&mut self, kill_at: Instant) -> bool {
        let give_up = kill_at + KILL_GIVE_UP;
        let mut next_kill = kill_at;
        let mut ignored = None;
        while self.reap(Pid::from_raw(0), &mut ignored) {
            let now = Instant::now();
            if now >= give_up {
                warn!("processes of the job survive SIGKILL; leaving them");
                return false;
            }
            if now >= next_kill {
                self.signal_job(Signal::SIGKILL);
                // Orphans that left the process group are our children (subreaper).
                for child in procfs::children_of(std::process::id()) {
                    let _ = kill(Pid::from_raw(child as i32), Signal::SIGKILL);
                }
                next_kill = now + Duration::from_millis(200);
            }
            let _ = self.wait_signal(Some(next_kill.min(give_up).saturating_duration_since(now)));
        }
        true
    }

    /// Says in the job's directory whether the job is held stopped.
    fn mark_suspended(&self, on: bool) {
        let path = self.dir.file(crate::spool::SUSPENDED);
        let done = if on {
            std::fs::write(&path, b"")
        } else {
            std::fs::remove_file(&path).or_else(|e| {
                if e.kind() == io::ErrorKind::NotFound {
                    Ok(())
                } else {
                    Err(e)
                }
            })
        };
        if let Err(e) = done {
            warn!(error = %e, on, "cannot mark the job's suspension in its directory");
        }
    }

    /// SIGCONT then SIGTERM to every process of the job.
    fn terminate(&mut self) {
        self.signal_job(Signal::SIGCONT);
        self.signal_job(Signal::SIGTERM);
    }

    fn signal_job(&self, signal: Signal) {
        if let Err(e) = self.isolation.signal_all(signal) {
            warn!(error = %e, signal = signal.as_str(), "cannot signal the job");
        }
    }

    /// `--signal=[B:]SIG@secs`: the warning before the time limit.
    fn send_warning(&self, pid: Pid) {
        let Some(spec) = &self.info.spec.signal else {
            return;
        };
        let Ok(signal) = Signal::try_from(spec.signal) else {
            warn!(signal = spec.signal, "unknown warning signal");
            return;
        };
        info!(
            signal = signal.as_str(),
            batch_only = spec.batch_only,
            "sending warning signal"
        );
        if spec.batch_only {
            let _ = kill(pid, signal);
        } else {
            // Without `B:` the steps get it, not the batch shell (the group leader).
            crate::procfs::signal_steps(pid.as_raw() as u32, signal);
        }
    }

    /// Waits up to `timeout` (long when `None`) for one of the supervisor's signals.
    fn wait_signal(&self, timeout: Option<Duration>) -> Option<Signal> {
        let timeout = timeout.unwrap_or(Duration::from_secs(3600));
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: valid signal set and timespec; no siginfo is asked for.
        let n = unsafe { libc::sigtimedwait(self.signals.as_ref(), std::ptr::null_mut(), &ts) };
        Signal::try_from(n).ok()
    }
}

/// Enters the job's working directory; when it cannot, enters /tmp, as Slurm does, and
/// says why.
fn enter_work_dir(dir: &str) -> (PathBuf, Option<String>) {
    let fallback = || {
        let _ = std::env::set_current_dir(FALLBACK_WORK_DIR);
        PathBuf::from(FALLBACK_WORK_DIR)
    };
    if dir.is_empty() {
        return (
            fallback(),
            Some(format!(
                "no working directory given: going to {FALLBACK_WORK_DIR} instead"
            )),
        );
    }
    match std::env::set_current_dir(dir) {
        Ok(()) => (PathBuf::from(dir), None),
        Err(e) => (
            fallback(),
            Some(format!(
                "couldn't chdir to `{dir}': {}: going to {FALLBACK_WORK_DIR} instead",
                reason(&e)
            )),
        ),
    }
}

fn open_output(path: &Path, append: bool) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .append(append)
        .truncate(!append)
        .mode(0o644)
        .open(path)
}

/// An I/O error as `strerror` words, without Rust's "(os error N)".
fn reason(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(n) => Errno::from_raw(n).desc().to_string(),
        None => e.to_string(),
    }
}

/// The local time zone (`TZ`, else the system's; UTC when neither can be read), read
/// once when the supervisor starts.
static ZONE: std::sync::OnceLock<jiff::tz::TimeZone> = std::sync::OnceLock::new();

fn zone() -> &'static jiff::tz::TimeZone {
    ZONE.get_or_init(|| {
        let (tz, tzdir) = (std::env::var("TZ").ok(), std::env::var("TZDIR").ok());
        let read = |path: &str| std::fs::read(path).ok();
        model::timespec::local_zone(tz.as_deref(), tzdir.as_deref(), &read)
    })
}

/// `2024-05-01T12:00:00` in local time, as Slurm prints it.
fn local_timestamp(t: Time) -> String {
    model::timespec::timestamp(t, zone())
}

/// Slurm's notice of a job or step (`what`: `JOB 5`, `STEP 5.1`) ended on `node` for
/// its time limit, now: `error: *** STEP 5.1 ON n1 CANCELLED AT 2024-05-01T12:00:00
/// DUE TO TIME LIMIT ***`.
pub(crate) fn time_limit_line(what: &str, node: &str) -> String {
    model::job::cancelled_line(what, node, &local_timestamp(unix_now()), true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_look_like_slurms() {
        let s = local_timestamp(1_700_000_000);
        assert_eq!(s.len(), 19, "{s}");
        assert_eq!(&s[4..5], "-");
        assert_eq!(&s[10..11], "T");
    }

    #[test]
    fn errors_read_like_strerror() {
        let e = io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(reason(&e), "No such file or directory");
    }
}
