//! The daemon's table of the jobs on this node: launching a job's supervisor, signalling
//! and cancelling it, noticing its end and reporting it to the controller until the
//! controller acknowledges, and finding the jobs again after a restart of the daemon.
//!
//! A job stays in the table, and in the running list sent to the controller, from its
//! launch until its end is acknowledged; then its directory becomes `job.<id>.done`.
//! Supervisors started by this daemon are its children and are awaited; those found
//! after a restart are not, and are polled instead.

use crate::backoff::Backoff;
use crate::cgroup::JobCgroup;
use crate::launch::{CgroupPlacement, LaunchError, LaunchInfo};
use crate::procfs;
use crate::spool::{
    JobDir, NOTIFY, PGID, PID, SUPERVISOR_LOG, SUPERVISOR_PID, SUSPENDED, Spool, SpoolError,
};
use crate::status::{FinishKind, JobStatus};
use crate::unix_now;
use model::JobId;
use model::gpu_use::{DeviceSample, GpuUse};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use proto::v1::{JobOnNode, LaunchJobRequest};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::time::Instant;
use tonic::Code;
use tracing::{debug, info, warn};

/// How often a supervisor that is not our child is checked.
const ORPHAN_POLL: Duration = Duration::from_millis(100);
/// How long a launch waits for the previous run of the same job to be reported.
const RELAUNCH_WAIT: Duration = Duration::from_secs(2);
/// How long a signal waits for a just-launched script to have a pid.
const PID_WAIT: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum JobsError {
    #[error(transparent)]
    Launch(#[from] LaunchError),
    #[error(transparent)]
    Spool(#[from] SpoolError),
    /// The supervisor process could not be started (binary gone, no processes left).
    #[error("cannot start the supervisor of job {job_id}: {error}")]
    Supervisor {
        job_id: JobId,
        error: std::io::Error,
    },
    /// The end of this job's previous run is still being reported; retry shortly.
    #[error("job {0} is still finishing its previous run here")]
    Busy(JobId),
    /// Not a signal number of this system.
    #[error("unknown signal {0}")]
    BadSignal(i32),
    /// What an earlier run of the job left in its cgroups cannot be killed.
    #[error("processes of an earlier run of job {0} survive SIGKILL")]
    Leftover(JobId),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The directory is being written and the supervisor started.
    Starting,
    Running,
    /// Ended; the end is being reported.
    Reporting,
}

#[derive(Debug)]
struct Entry {
    dir: JobDir,
    phase: Phase,
    supervisor: Option<u32>,
    /// The supervisor is our child (its pid cannot be reused before we reap it).
    own_child: bool,
    cancel_requested: bool,
    /// The run this is (the job's restart count at launch).
    restart_count: u32,
    /// The UUIDs of the GPU devices it holds whole, which NVML samples
    /// (`gpu_sampler`).
    sampled_gpus: Vec<String>,
    /// What they did so far; `None` until the first sample.
    gpu_use: Option<GpuUse>,
}

/// The jobs of this node.
pub struct Jobs {
    node_name: String,
    spool: Spool,
    /// The binary that runs supervisors (`<exe> supervise <dir>`).
    exe: PathBuf,
    ctld: crate::control::Controller,
    table: Mutex<BTreeMap<JobId, Entry>>,
    /// Job ends are reported only once the node has registered, so that the controller
    /// hears of a node's jobs before it hears of their ends.
    registered: tokio::sync::watch::Sender<bool>,
    /// Pin jobs to their CPU ids (`affinity`): only when this node's CPUs are this
    /// host's, not a faked node's.
    pin_cpus: std::sync::atomic::AtomicBool,
    /// How jobs are confined (none until `set_confinement`).
    confinement: Mutex<Confinement>,
}

/// How this node confines its jobs.
#[derive(Debug, Clone, Default)]
pub struct Confinement {
    /// Where jobs' cgroups go; `None`: jobs run unconfined.
    pub cgroup: Option<CgroupPlacement>,
    /// The device file of each of the node's GPUs, by index.
    pub gpu_files: Vec<String>,
    /// The UUID of each of the node's GPUs, by index.
    pub gpu_uuids: Vec<String>,
    /// The NUMA node of each of the node's GPUs, by index.
    pub gpu_numa: Vec<u32>,
    /// The type of each of the node's GPU devices, by index.
    pub gpu_types: Vec<String>,
    /// The memory of each of the node's GPU devices in MB, by index (0: not known).
    pub gpu_memory_mb: Vec<u64>,
    /// The site's prolog and epilog; empty: none.
    pub prolog: String,
    pub epilog: String,
}

impl Jobs {
    pub fn new(
        node_name: String,
        spool: Spool,
        exe: PathBuf,
        ctld: crate::control::Controller,
    ) -> Arc<Jobs> {
        let registered = tokio::sync::watch::Sender::new(false);
        Arc::new(Jobs {
            node_name,
            spool,
            exe,
            ctld,
            table: Mutex::new(BTreeMap::new()),
            registered,
            pin_cpus: std::sync::atomic::AtomicBool::new(false),
            confinement: Mutex::new(Confinement::default()),
        })
    }

    /// Sets how jobs launched from now on are confined.
    pub fn set_confinement(&self, confinement: Confinement) {
        *self.confinement.lock().unwrap_or_else(|e| e.into_inner()) = confinement;
    }

    /// True when jobs are pinned to their CPU ids (this node's CPUs are the host's).
    pub fn pins_cpus(&self) -> bool {
        self.pin_cpus.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// This node's name in the cluster.
    pub fn node_name(&self) -> &str {
        &self.node_name
    }

    /// How jobs are confined now.
    pub fn confinement(&self) -> Confinement {
        self.confinement
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Turns pinning of jobs to their CPU ids on or off (off by default).
    pub fn set_cpu_pinning(&self, on: bool) {
        self.pin_cpus
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Called once the controller has accepted a registration.
    pub fn set_registered(&self) {
        self.registered.send_replace(true);
    }

    fn table(&self) -> MutexGuard<'_, BTreeMap<JobId, Entry>> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn spool(&self) -> &Spool {
        &self.spool
    }

    /// Whether the job's batch script is starting or running here: its supervisor may
    /// be making the job's cgroup on this node, or holds it. Once it has ended (its end
    /// being reported), the supervisor has let the cgroup go.
    pub fn runs_batch(&self, job_id: JobId) -> bool {
        self.table()
            .get(&job_id)
            .is_some_and(|e| e.phase != Phase::Reporting)
    }

    /// Jobs whose end the controller has not acknowledged yet, by id: what run each
    /// is, whether it is stopped, and whether it is being killed or has ended.
    pub fn on_node(&self) -> Vec<JobOnNode> {
        self.table()
            .iter()
            .map(|(&job_id, e)| JobOnNode {
                job_id,
                restart_count: e.restart_count,
                suspended: e.phase == Phase::Running && e.dir.file(SUSPENDED).exists(),
                ending: e.cancel_requested || e.phase == Phase::Reporting,
                gpu_use: e.gpu_use.as_ref().map(proto::convert::gpu_use_to_wire),
            })
            .collect()
    }

    /// The running jobs that hold GPUs NVML can sample, with those GPUs' UUIDs; a
    /// suspended job's GPUs are not sampled (they are idle by the admin's doing).
    pub fn gpu_jobs(&self) -> Vec<(JobId, Vec<String>)> {
        self.table()
            .iter()
            .filter(|(_, e)| {
                e.phase == Phase::Running
                    && !e.sampled_gpus.is_empty()
                    && !e.dir.file(SUSPENDED).exists()
            })
            .map(|(&id, e)| (id, e.sampled_gpus.clone()))
            .collect()
    }

    /// Adds one sample of a job's GPUs, taken `period_ms` after the one before.
    pub fn add_gpu_sample(&self, job_id: JobId, samples: &[DeviceSample], period_ms: u64) {
        if samples.is_empty() {
            return;
        }
        if let Some(e) = self.table().get_mut(&job_id)
            && e.phase == Phase::Running
        {
            e.gpu_use
                .get_or_insert_with(GpuUse::default)
                .add_sample(samples, period_ms);
        }
    }

    /// Starts a job: writes its directory, starts its supervisor, returns. A launch of
    /// a run already here, or reported from here, is acknowledged and ignored; one of
    /// another run waits a moment for that run to go.
    pub async fn launch(self: &Arc<Self>, req: LaunchJobRequest) -> Result<(), JobsError> {
        let job_id = req.job_id;
        let restart_count = req.restart_count;
        let deadline = Instant::now() + RELAUNCH_WAIT;
        loop {
            {
                let mut table = self.table();
                match table.get(&job_id).map(|e| (e.phase, e.restart_count)) {
                    // This very run ran here and was reported: a launch sent again
                    // (after a controller restart, or one that raced a heartbeat) is
                    // not a new run.
                    None if self.spool.reported_run(job_id) == Some(restart_count) => {
                        debug!(
                            job_id,
                            restart_count, "run already ran here; launch ignored"
                        );
                        return Ok(());
                    }
                    None => {
                        let entry = Entry {
                            dir: self.spool.job_dir(job_id),
                            phase: Phase::Starting,
                            supervisor: None,
                            own_child: true,
                            cancel_requested: false,
                            restart_count,
                            sampled_gpus: Vec::new(),
                            gpu_use: None,
                        };
                        table.insert(job_id, entry);
                        break;
                    }
                    Some((_, run)) if run == restart_count => {
                        debug!(job_id, restart_count, "run already here; launch ignored");
                        return Ok(());
                    }
                    // Another run of the job is still here (being killed, or its end
                    // being reported): wait for it to go.
                    Some(_) => {}
                }
            }
            if Instant::now() >= deadline {
                return Err(JobsError::Busy(job_id));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let (dir, mut child) = match self.start_supervisor(req) {
            Ok(started) => started,
            Err(e) => {
                self.table().remove(&job_id);
                return Err(e);
            }
        };
        let pid = child.id();
        let sampled_gpus = dir
            .read_launch()
            .map(|l| l.sampled_gpus())
            .unwrap_or_default();
        let cancel_now = {
            let mut table = self.table();
            let entry = table
                .get_mut(&job_id)
                .expect("a starting job stays in the table");
            entry.phase = Phase::Running;
            entry.supervisor = pid;
            entry.sampled_gpus = sampled_gpus;
            entry.cancel_requested
        };
        info!(job_id, supervisor = pid, dir = %dir.path().display(), "job launched");
        if let (true, Some(pid)) = (cancel_now, pid) {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
        }
        let jobs = Arc::clone(self);
        tokio::spawn(async move {
            let why = match child.wait().await {
                Ok(status) => status.to_string(),
                Err(e) => format!("cannot wait for it: {e}"),
            };
            jobs.supervisor_ended(job_id, &why);
        });
        Ok(())
    }

    fn start_supervisor(
        &self,
        req: LaunchJobRequest,
    ) -> Result<(JobDir, tokio::process::Child), JobsError> {
        let job_id = req.job_id;
        let (mut info, script) = LaunchInfo::from_request(req, &self.node_name, unix_now())?;
        if !self.pin_cpus.load(std::sync::atomic::Ordering::Relaxed) {
            info.cpu_ids.clear();
        }
        let confinement = self.confinement();
        // What an earlier run left (its supervisor killed) goes before this run starts
        // and before the controller hears it started: steps of this run come after.
        if let Some(placement) = &confinement.cgroup
            && let Ok(cg) = JobCgroup::new(
                &placement.hierarchy,
                &placement.prefix,
                &self.node_name,
                job_id,
            )
            && !cg.clear_earlier_run()
        {
            return Err(JobsError::Leftover(job_id));
        }
        info.cgroup = confinement.cgroup;
        info.gpu_files = confinement.gpu_files;
        info.gpu_uuids = confinement.gpu_uuids;
        info.gpu_types = confinement.gpu_types;
        info.gpu_memory_mb = confinement.gpu_memory_mb;
        info.prolog = confinement.prolog;
        info.epilog = confinement.epilog;
        let dir = self.spool.create_job(&info, &script)?;
        let err = |error| JobsError::Supervisor { job_id, error };
        let log = std::fs::File::create(dir.file(SUPERVISOR_LOG)).map_err(err)?;
        let child = tokio::process::Command::new(&self.exe)
            .arg("supervise")
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(err)?)
            .stderr(log)
            .kill_on_drop(false)
            .spawn()
            .map_err(err)?;
        Ok((dir, child))
    }

    /// Cancels a job: SIGTERM to its supervisor, which terminates the job. False when
    /// the job is not running here.
    pub fn cancel(&self, job_id: JobId) -> bool {
        let mut table = self.table();
        let Some(entry) = table.get_mut(&job_id) else {
            return false;
        };
        if entry.phase == Phase::Reporting {
            return false;
        }
        if std::mem::replace(&mut entry.cancel_requested, true) {
            // Already being killed: the supervisor escalates by itself.
            return true;
        }
        if let Some(pid) = entry.supervisor
            && (entry.own_child || procfs::is_supervisor_of(pid, entry.dir.path()))
        {
            info!(job_id, "cancelling job");
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGTERM);
        }
        true
    }

    /// Suspends (SIGUSR1 to its supervisor, which stops the job and its time limit) or
    /// resumes (SIGUSR2) a job. False when the job is not running here. A supervisor
    /// that just started is waited for until it takes its signals (it writes its pid
    /// file once they are blocked), so that SIGUSR1 cannot kill it.
    pub async fn suspend(&self, job_id: JobId, resume: bool) -> bool {
        let pid = match self.supervisor_pid(job_id).await {
            None => return false,
            Some(None) => {
                warn!(job_id, resume, "job has no supervisor to suspend it");
                return true;
            }
            Some(Some(pid)) => pid,
        };
        let signal = if resume {
            Signal::SIGUSR2
        } else {
            Signal::SIGUSR1
        };
        info!(job_id, resume, "suspending or resuming job");
        let _ = kill(Pid::from_raw(pid as i32), signal);
        true
    }

    /// The pid of the job's supervisor once it takes its signals (it writes its pid
    /// file once they are blocked, so that SIGUSR1 cannot kill it): `None` when the
    /// job is not running here, `Some(None)` when no supervisor of it answers in time.
    async fn supervisor_pid(&self, job_id: JobId) -> Option<Option<u32>> {
        let deadline = Instant::now() + PID_WAIT;
        loop {
            let (dir, pid, own_child) = {
                let table = self.table();
                match table.get(&job_id) {
                    Some(e) if e.phase != Phase::Reporting => {
                        (e.dir.clone(), e.supervisor, e.own_child)
                    }
                    _ => return None,
                }
            };
            if let Some(pid) = pid
                && dir.read_pid(SUPERVISOR_PID) == Some(pid)
                && (own_child || procfs::is_supervisor_of(pid, dir.path()))
            {
                return Some(Some(pid));
            }
            if Instant::now() >= deadline {
                return Some(None);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// `scontrol notify`: `message` on the batch script's stderr. It is appended to
    /// the job's `notify` spool file (one line), then the supervisor, told by SIGURG,
    /// writes it. False when the job is not running here.
    pub async fn notify(&self, job_id: JobId, message: &str) -> bool {
        let Some(dir) = self.table().get(&job_id).map(|e| e.dir.clone()) else {
            return false;
        };
        let line = format!("{}\n", message.replace('\n', " "));
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join(NOTIFY))
            .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()));
        if let Err(e) = appended {
            warn!(job_id, error = %e, "notice not kept");
            return true;
        }
        match self.supervisor_pid(job_id).await {
            None => false,
            Some(None) => {
                warn!(job_id, "job has no supervisor to write its notice");
                true
            }
            Some(Some(pid)) => {
                let _ = kill(Pid::from_raw(pid as i32), Signal::SIGURG);
                true
            }
        }
    }

    /// `scancel -s SIG`: 0 cancels; another signal goes to the job's steps, with
    /// `batch_only` to the batch shell alone, with `full` to every process of the
    /// batch script. Where jobs are confined in cgroups, the steps are the tasks in the
    /// job's step cgroups here, as Slurm's slurmstepd signals them: neither srun nor
    /// anything else the batch script runs (they are the batch step's). Without
    /// cgroups, every process of the batch script's group but the shell. False when
    /// the job neither runs here nor has a step here.
    pub async fn signal(
        &self,
        job_id: JobId,
        signal: i32,
        batch_only: bool,
        full: bool,
    ) -> Result<bool, JobsError> {
        if signal == 0 {
            return Ok(self.cancel(job_id));
        }
        let sig = Signal::try_from(signal).map_err(|_| JobsError::BadSignal(signal))?;
        if !batch_only
            && !full
            && let Some(cg) = self.job_cgroup(job_id)
        {
            // Each step's tasks, not what they forked (Slurm's proctrack/cgroup).
            let steps = cg.steps();
            let tasks: Vec<u32> = steps
                .iter()
                .filter(|s| s.as_str() != crate::cgroup::BATCH_STEP)
                .flat_map(|s| crate::procfs::tasks_among(&cg.step_processes(s)))
                .collect();
            info!(
                job_id,
                signal = sig.as_str(),
                tasks = tasks.len(),
                "signalling the job's steps"
            );
            kill_each(&tasks, sig);
            return Ok(!tasks.is_empty() || self.table().contains_key(&job_id));
        }
        let dir = match self.table().get(&job_id) {
            Some(e) if e.phase != Phase::Reporting => e.dir.clone(),
            _ => return Ok(false),
        };
        let file = if batch_only { PID } else { PGID };
        let deadline = Instant::now() + PID_WAIT;
        let pid = loop {
            if let Some(pid) = dir.read_pid(file) {
                break pid;
            }
            if Instant::now() >= deadline || matches!(dir.read_status(), Ok(Some(_))) {
                warn!(job_id, "job has no running script to signal");
                return Ok(true);
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        info!(
            job_id,
            signal = sig.as_str(),
            batch_only,
            full,
            "signalling job"
        );
        if full {
            // Every process of the job's group, the batch shell included.
            let _ = nix::sys::signal::killpg(Pid::from_raw(pid as i32), sig);
        } else if batch_only {
            let _ = kill(Pid::from_raw(pid as i32), sig);
        } else {
            crate::procfs::signal_steps(pid, sig);
        }
        Ok(true)
    }

    /// The job's cgroups here; `None` where the node confines no jobs in cgroups.
    fn job_cgroup(&self, job_id: JobId) -> Option<JobCgroup> {
        let placement = self.confinement().cgroup?;
        JobCgroup::new(
            &placement.hierarchy,
            &placement.prefix,
            &self.node_name,
            job_id,
        )
        .ok()
    }

    /// `scancel JOB.STEP`: `signal` (0: SIGKILL, the step's cancel) to the processes of
    /// the step's tasks here, found in the step's cgroup. False when none runs here (or
    /// the node confines no jobs in cgroups).
    pub fn signal_step(&self, job_id: JobId, step_id: u32, signal: i32) -> Result<bool, JobsError> {
        let sig = if signal == 0 {
            Signal::SIGKILL
        } else {
            Signal::try_from(signal).map_err(|_| JobsError::BadSignal(signal))?
        };
        let Some(cg) = self.job_cgroup(job_id) else {
            return Ok(false);
        };
        let mut procs = cg.step_processes(&format!("step_{step_id}"));
        // Every process of the step for SIGKILL, else its tasks (Slurm's
        // proctrack/cgroup).
        if sig != Signal::SIGKILL {
            procs = crate::procfs::tasks_among(&procs);
        }
        info!(
            job_id,
            step_id,
            signal = sig.as_str(),
            tasks = procs.len(),
            "signalling step"
        );
        kill_each(&procs, sig);
        Ok(!procs.is_empty())
    }

    /// Finds the jobs of an earlier daemon in the spool: live supervisors are watched,
    /// ended jobs reported. Returns how many jobs were found.
    pub fn recover(self: &Arc<Self>) -> Result<usize, SpoolError> {
        let found = self.spool.scan()?;
        for (job_id, dir) in &found {
            let status = dir.read_status().ok().flatten();
            let supervisor = if status.is_some() {
                None
            } else {
                dir.read_pid(SUPERVISOR_PID)
                    .filter(|pid| procfs::is_supervisor_of(*pid, dir.path()))
                    .or_else(|| procfs::find_supervisor(dir.path()))
            };
            let launch = dir.read_launch().ok();
            let entry = Entry {
                dir: dir.clone(),
                phase: Phase::Running,
                supervisor,
                own_child: false,
                cancel_requested: false,
                restart_count: launch.as_ref().map_or(0, |l| l.restart_count),
                sampled_gpus: launch
                    .as_ref()
                    .map(|l| l.sampled_gpus())
                    .unwrap_or_default(),
                gpu_use: None,
            };
            self.table().insert(*job_id, entry);
            match supervisor {
                Some(pid) => {
                    info!(
                        job_id,
                        supervisor = pid,
                        "job still running after a restart"
                    );
                    let jobs = Arc::clone(self);
                    tokio::spawn(jobs.watch_orphan(*job_id, pid));
                }
                None => self.supervisor_ended(
                    *job_id,
                    "supervisor not running after a restart of the daemon",
                ),
            }
        }
        Ok(found.len())
    }

    /// Polls a supervisor that is not our child until it has ended.
    async fn watch_orphan(self: Arc<Self>, job_id: JobId, pid: u32) {
        let Some(dir) = self.table().get(&job_id).map(|e| e.dir.clone()) else {
            return;
        };
        loop {
            tokio::time::sleep(ORPHAN_POLL).await;
            if matches!(dir.read_status(), Ok(Some(_)))
                || !procfs::is_supervisor_of(pid, dir.path())
            {
                break;
            }
        }
        self.supervisor_ended(job_id, "supervisor exited");
    }

    /// The supervisor of `job_id` is gone: take its status (or make one up) and report.
    fn supervisor_ended(self: &Arc<Self>, job_id: JobId, why: &str) {
        let (dir, cancelled, gpu_use) = {
            let mut table = self.table();
            let Some(entry) = table.get_mut(&job_id) else {
                return;
            };
            entry.phase = Phase::Reporting;
            (entry.dir.clone(), entry.cancel_requested, entry.gpu_use)
        };
        let (mut status, lost) = match dir.read_status() {
            Ok(Some(status)) => (status, false),
            Ok(None) => (lost_status(&dir, cancelled, why), true),
            Err(e) => {
                warn!(job_id, error = %e, "unreadable job status");
                (lost_status(&dir, cancelled, why), true)
            }
        };
        // The GPUs' figures go with the batch step's (the job's GPUs on this node).
        if let Some(used) = gpu_use {
            status.batch_usage.get_or_insert_with(Default::default).gpu = Some(used);
        }
        info!(job_id, kind = ?status.kind, exit_code = status.exit_code, exit_signal = status.exit_signal, "job ended");
        let restart_count = dir.read_launch().map(|l| l.restart_count).unwrap_or(0);
        let jobs = Arc::clone(self);
        tokio::spawn(async move {
            if lost {
                let job_dir = dir.clone();
                let _ = tokio::task::spawn_blocking(move || kill_lost_job(job_id, &job_dir)).await;
            }
            jobs.report(job_id, restart_count, status).await
        });
    }

    /// Sends a job's end to the controller until it is acknowledged, then retires the
    /// job's directory.
    async fn report(self: Arc<Self>, job_id: JobId, restart_count: u32, status: JobStatus) {
        let mut req = status.to_wire(&self.node_name, job_id);
        req.restart_count = restart_count;
        let _ = self
            .registered
            .subscribe()
            .wait_for(|registered| *registered)
            .await;
        let mut backoff = Backoff::default();
        let mut failures = 0u32;
        loop {
            match self.ctld.clone().job_finished(req.clone()).await {
                Ok(_) => break,
                Err(s) if refused_for_good(s.code()) => {
                    warn!(job_id, code = ?s.code(), error = s.message(), "controller refused the job end; dropping it");
                    break;
                }
                Err(s) => {
                    failures += 1;
                    if failures == 1 {
                        warn!(job_id, code = ?s.code(), error = s.message(), "cannot report job end; retrying");
                    }
                    tokio::time::sleep(backoff.next_delay()).await;
                }
            }
        }
        debug!(job_id, "job end acknowledged");
        // Retire the directory before leaving the table: a relaunch of the same job
        // waits for the table entry to go, and then creates `job.<id>` afresh.
        if let Err(e) = self.spool.mark_reported(job_id) {
            warn!(job_id, error = %e, "cannot retire the job directory");
        }
        self.table().remove(&job_id);
    }
}

/// Answers that retrying cannot change.
fn refused_for_good(code: Code) -> bool {
    matches!(
        code,
        Code::InvalidArgument | Code::NotFound | Code::FailedPrecondition | Code::PermissionDenied
    )
}

/// Kills what is left of a job whose supervisor is gone without a status (killed,
/// crashed), through its cgroup, which reaches every process of it. Without a cgroup
/// nothing is killed: the job's process group id may name someone else's group by now.
fn kill_lost_job(job_id: JobId, dir: &JobDir) {
    let launch = dir.read_launch().ok();
    if let Some(info) = &launch
        && let Some(placement) = &info.cgroup
    {
        match JobCgroup::new(
            &placement.hierarchy,
            &placement.prefix,
            &info.node_name,
            job_id,
        ) {
            Ok(cg) => {
                let left = cg.processes().len();
                if !cg.kill_and_wait(Duration::from_secs(10)) {
                    warn!(
                        job_id,
                        "processes of a job without supervisor survive SIGKILL"
                    );
                } else if left > 0 {
                    info!(
                        job_id,
                        killed = left,
                        "killed the processes of a job without supervisor"
                    );
                }
                if let Err(e) = cg.remove() {
                    warn!(job_id, error = %e, "cannot remove the job's cgroup");
                }
            }
            Err(e) => warn!(job_id, error = %e, "cannot find the job's cgroup"),
        }
    } else if dir.read_pid(PID).is_some() {
        warn!(
            job_id,
            "job not confined in a cgroup: processes it left may still run"
        );
    }
}

/// A status for a job whose supervisor ended without writing one (killed, crashed, or
/// gone with a reboot).
fn lost_status(dir: &JobDir, cancelled: bool, why: &str) -> JobStatus {
    let now = unix_now();
    let start_time = dir.read_launch().map(|l| l.start_time).unwrap_or(now);
    let started = dir.read_pid(PID).is_some();
    let (kind, exit_signal, message) = if cancelled {
        (
            FinishKind::Cancelled,
            Signal::SIGTERM as i32,
            format!("cancelled; supervisor ended without a status ({why})"),
        )
    } else if started {
        (
            FinishKind::Exited,
            Signal::SIGKILL as i32,
            format!("job supervisor ended without a status ({why})"),
        )
    } else {
        (
            FinishKind::LaunchFailed,
            0,
            format!("job supervisor ended before starting the script ({why})"),
        )
    };
    JobStatus {
        kind,
        exit_code: 0,
        exit_signal,
        start_time,
        end_time: now,
        message,
        drain_reason: String::new(),
        batch_usage: None,
    }
}

/// `sig` to each of `pids`; one that has gone since it was listed is skipped.
fn kill_each(pids: &[u32], sig: Signal) {
    for pid in pids {
        let _ = kill(Pid::from_raw(*pid as i32), sig);
    }
}
