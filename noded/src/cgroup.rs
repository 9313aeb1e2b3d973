//! cgroup confinement of jobs, under cgroup v1 (one hierarchy per controller) or v2 (one
//! unified hierarchy), whichever the host mounts: found once by the daemon (`detect`) and
//! handed to each supervisor in the launch record.
//!
//! A job gets a cgroup that holds its limits, `<prefix>/<node>/job_<id>`, and each step a
//! cgroup inside it that holds the step's processes (`step_batch` for the batch script).
//! Every process of the job is found through them, whatever it did to leave its process
//! group or session, and killed with the cgroup frozen so that nothing forks meanwhile.
//!
//! Worked example: job 42 on node `n1`, given CPUs 2-3, `--mem=4G` and GPU 1 of a node
//! whose GPUs are `/dev/nvidia0` (195:0) and `/dev/nvidia1` (195:1), under v1:
//!
//! ```text
//! cpuset/drover/n1/job_42/cpuset.cpus            2-3
//! memory/drover/n1/job_42/memory.limit_in_bytes  4294967296
//! devices/drover/n1/job_42/devices.deny          c 195:0 rwm
//! */drover/n1/job_42/step_batch/cgroup.procs      the batch shell writes "0" before exec
//! ```
//!
//! Under v2 the same limits are `cpuset.cpus`, `memory.max` (and `memory.swap.max` 0) of
//! `drover/n1/job_42`, with `+cpuset +memory +pids` enabled down the tree, and a BPF
//! device program attached to it that refuses 195:0 (`device_filter`): v2 has no device
//! files.

use crate::procfs;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The cgroup of a step that runs the batch script.
pub const BATCH_STEP: &str = "step_batch";

/// What the node saw of a task that its cgroup's counters do not keep, as Slurm's
/// jobacct_gather samples it: the most memory its processes held together when
/// sampled (their peak resident sets, page cache not counted), and, once it ended,
/// what it read and wrote (read before it was reaped: the processes are gone by the
/// time anyone asks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TaskTrace {
    pub rss_bytes: u64,
    pub io: Option<model::DiskIo>,
}

/// The name of task `task`'s cgroup inside its step's.
fn task_cgroup_name(task: u32) -> String {
    format!("task_{task}")
}

/// The controllers Drover uses, by what they enforce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Controller {
    Cpuset,
    Memory,
    Devices,
    Freezer,
    Pids,
    Cpuacct,
}

impl Controller {
    pub const ALL: [Controller; 6] = [
        Controller::Cpuset,
        Controller::Memory,
        Controller::Devices,
        Controller::Freezer,
        Controller::Pids,
        Controller::Cpuacct,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Controller::Cpuset => "cpuset",
            Controller::Memory => "memory",
            Controller::Devices => "devices",
            Controller::Freezer => "freezer",
            Controller::Pids => "pids",
            Controller::Cpuacct => "cpuacct",
        }
    }

    fn from_name(name: &str) -> Option<Controller> {
        Controller::ALL.into_iter().find(|c| c.name() == name)
    }

    /// What goes unenforced without it, for the daemon's log.
    pub fn enforces(self) -> &'static str {
        match self {
            Controller::Cpuset => "CPU confinement",
            Controller::Memory => "memory limits and out-of-memory detection",
            Controller::Devices => "GPU device confinement",
            Controller::Freezer => "freezing a job while it is killed",
            Controller::Pids => "task counting",
            Controller::Cpuacct => "CPU time accounting",
        }
    }
}

/// The host's cgroup hierarchy, as the daemon found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "version", rename_all = "lowercase")]
pub enum Hierarchy {
    /// One mount per controller.
    V1 {
        mounts: BTreeMap<Controller, PathBuf>,
    },
    /// One unified mount, with the controllers it offers (`freezer`, `cpuacct` and
    /// `devices` stand for v2's built-in `cgroup.freeze`, `cpu.stat` and BPF device
    /// programs).
    V2 {
        mount: PathBuf,
        controllers: BTreeSet<Controller>,
    },
}

/// Why jobs run unconfined.
#[derive(Debug, thiserror::Error)]
pub enum Unavailable {
    #[error("cgroups are turned off in the config")]
    Off,
    #[error("the node daemon does not run as root")]
    NotRoot,
    #[error("cannot read the mount table: {0}")]
    Mounts(io::Error),
    #[error("no cgroup controller is mounted")]
    NoControllers,
}

#[derive(Debug, thiserror::Error)]
pub enum CgroupError {
    #[error("cannot {what} {path}: {error}")]
    Io {
        what: &'static str,
        path: PathBuf,
        error: io::Error,
    },
    #[error("node name {0:?} cannot name a cgroup")]
    BadName(String),
}

fn io_err(what: &'static str, path: &Path) -> impl FnOnce(io::Error) -> CgroupError + use<> {
    let path = path.to_path_buf();
    move |error| CgroupError::Io { what, path, error }
}

/// One line of `/proc/self/mountinfo` that mounts a cgroup file system.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CgroupMount {
    point: PathBuf,
    v2: bool,
    /// v1: the controllers in the mount options.
    controllers: Vec<String>,
}

/// The cgroup mounts of a mount table (`/proc/self/mountinfo` text).
fn cgroup_mounts(mountinfo: &str) -> Vec<CgroupMount> {
    let mut out = Vec::new();
    for line in mountinfo.lines() {
        // id parent maj:min root point options [optional...] - fstype source superopts
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let point = left.split(' ').nth(4);
        let mut right = right.split(' ');
        let (Some(point), Some(fstype)) = (point, right.next()) else {
            continue;
        };
        let point = PathBuf::from(point.replace("\\040", " "));
        match fstype {
            "cgroup2" => out.push(CgroupMount {
                point,
                v2: true,
                controllers: Vec::new(),
            }),
            "cgroup" => {
                let options = right.nth(1).unwrap_or("");
                out.push(CgroupMount {
                    point,
                    v2: false,
                    controllers: options.split(',').map(str::to_string).collect(),
                });
            }
            _ => {}
        }
    }
    out
}

impl Hierarchy {
    /// The host's hierarchy: v2 where the unified mount offers the memory controller (a
    /// pure v2 host), else the v1 controllers that are mounted (a v1 or hybrid host).
    pub fn detect() -> Result<Hierarchy, Unavailable> {
        if !nix::unistd::geteuid().is_root() {
            return Err(Unavailable::NotRoot);
        }
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").map_err(Unavailable::Mounts)?;
        Hierarchy::from_mounts(&mountinfo, |p| {
            fs::read_to_string(p.join("cgroup.controllers")).ok()
        })
    }

    /// `detect` on a mount table, with `controllers_of` reading a v2 mount's
    /// `cgroup.controllers`.
    fn from_mounts(
        mountinfo: &str,
        controllers_of: impl Fn(&Path) -> Option<String>,
    ) -> Result<Hierarchy, Unavailable> {
        let mounts = cgroup_mounts(mountinfo);
        for m in mounts.iter().filter(|m| m.v2) {
            let offered = controllers_of(&m.point).unwrap_or_default();
            let offered: BTreeSet<&str> = offered.split_whitespace().collect();
            if offered.contains("memory") {
                return Ok(Hierarchy::unified(m.point.clone(), &offered));
            }
        }
        let mut found = BTreeMap::new();
        for m in mounts.iter().filter(|m| !m.v2) {
            for c in m
                .controllers
                .iter()
                .filter_map(|c| Controller::from_name(c))
            {
                found.entry(c).or_insert_with(|| m.point.clone());
            }
        }
        if found.is_empty() {
            return Err(Unavailable::NoControllers);
        }
        Ok(Hierarchy::V1 { mounts: found })
    }

    /// The v2 hierarchy at `mount`, with the controllers of its `cgroup.controllers`
    /// (`offered`) that Drover uses and v2's built-in ones.
    pub fn unified(mount: PathBuf, offered: &BTreeSet<&str>) -> Hierarchy {
        let mut controllers: BTreeSet<Controller> = [
            Controller::Freezer,
            Controller::Cpuacct,
            Controller::Devices,
        ]
        .into();
        for c in [Controller::Cpuset, Controller::Memory, Controller::Pids] {
            if offered.contains(c.name()) {
                controllers.insert(c);
            }
        }
        Hierarchy::V2 { mount, controllers }
    }

    pub fn version(&self) -> u8 {
        match self {
            Hierarchy::V1 { .. } => 1,
            Hierarchy::V2 { .. } => 2,
        }
    }

    pub fn has(&self, c: Controller) -> bool {
        match self {
            Hierarchy::V1 { mounts } => mounts.contains_key(&c),
            Hierarchy::V2 { controllers, .. } => controllers.contains(&c),
        }
    }

    /// What this hierarchy cannot enforce: the controllers it lacks.
    pub fn missing(&self) -> Vec<Controller> {
        Controller::ALL
            .into_iter()
            .filter(|c| !self.has(*c))
            .collect()
    }

    /// The directories of the cgroup at `rel` (relative to the roots), one per
    /// hierarchy: v1 one per controller (the controller it is for), v2 one.
    fn dirs(&self, rel: &Path) -> Vec<(Option<Controller>, PathBuf)> {
        match self {
            Hierarchy::V1 { mounts } => mounts
                .iter()
                .map(|(c, root)| (Some(*c), root.join(rel)))
                .collect(),
            Hierarchy::V2 { mount, .. } => vec![(None, mount.join(rel))],
        }
    }

    /// The directory of `rel` in the hierarchy that holds `c`'s files.
    fn dir_for(&self, c: Controller, rel: &Path) -> Option<PathBuf> {
        match self {
            Hierarchy::V1 { mounts } => mounts.get(&c).map(|root| root.join(rel)),
            Hierarchy::V2 {
                mount, controllers, ..
            } => controllers.contains(&c).then(|| mount.join(rel)),
        }
    }

    /// The directory whose `cgroup.procs` tree lists every process of a job.
    fn tracking_dir(&self, rel: &Path) -> Option<PathBuf> {
        match self {
            Hierarchy::V1 { mounts } => [
                Controller::Freezer,
                Controller::Pids,
                Controller::Memory,
                Controller::Cpuset,
                Controller::Cpuacct,
                Controller::Devices,
            ]
            .iter()
            .find_map(|c| mounts.get(c))
            .map(|root| root.join(rel)),
            Hierarchy::V2 { mount, .. } => Some(mount.join(rel)),
        }
    }
}

/// What a job may use on this node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Limits {
    /// CPU ids; empty: all of the node's.
    pub cpus: Vec<u32>,
    /// Bytes; `None`: no limit.
    pub memory: Option<u64>,
    /// Device numbers (major, minor) of character devices the job must not open: the
    /// node's GPUs it was not given.
    pub deny_devices: Vec<(u64, u64)>,
    /// The most processes and threads at once; `None`: no limit.
    pub max_tasks: Option<u32>,
}

/// The cgroup of one job on one node.
#[derive(Debug, Clone)]
pub struct JobCgroup {
    hierarchy: Hierarchy,
    /// `<prefix>/<node>`, shared by the node's jobs.
    node_rel: PathBuf,
    /// `<prefix>/<node>/job_<id>`.
    job_rel: PathBuf,
}

impl JobCgroup {
    /// The cgroup of job `job_id` on `node`, whether or not it exists yet.
    pub fn new(
        hierarchy: &Hierarchy,
        prefix: &str,
        node: &str,
        job_id: u32,
    ) -> Result<JobCgroup, CgroupError> {
        let plain = |s: &str| !s.is_empty() && s != "." && s != ".." && !s.contains('/');
        if !plain(node) {
            return Err(CgroupError::BadName(node.to_string()));
        }
        if !prefix.split('/').all(plain) {
            return Err(CgroupError::BadName(prefix.to_string()));
        }
        let node_rel = Path::new(prefix).join(node);
        Ok(JobCgroup {
            hierarchy: hierarchy.clone(),
            job_rel: node_rel.join(format!("job_{job_id}")),
            node_rel,
        })
    }

    pub fn hierarchy(&self) -> &Hierarchy {
        &self.hierarchy
    }

    /// Builds the job's cgroup with `limits` and the cgroup of step `step` inside it.
    /// Returns the step's `cgroup.procs` files, opened for a child to write "0" into.
    pub fn create(&self, limits: &Limits, step: &str) -> Result<Vec<OwnedFd>, CgroupError> {
        let step_rel = self.job_rel.join(step);
        match &self.hierarchy {
            Hierarchy::V1 { mounts } => {
                for (c, root) in mounts {
                    let cpuset = *c == Controller::Cpuset;
                    make_levels(root, &self.job_rel, cpuset)?;
                }
                self.write_limits(limits)?;
                for (c, root) in mounts {
                    make_levels(
                        &root.join(&self.job_rel),
                        Path::new(step),
                        *c == Controller::Cpuset,
                    )?;
                }
            }
            Hierarchy::V2 { mount, .. } => {
                let enable = v2_enable(&self.hierarchy);
                make_levels(mount, &self.job_rel, false)?;
                let mut dir = mount.clone();
                if !enable.is_empty() {
                    write_file(&dir.join("cgroup.subtree_control"), &enable)?;
                    for part in self.job_rel.components() {
                        dir.push(part);
                        write_file(&dir.join("cgroup.subtree_control"), &enable)?;
                    }
                }
                self.write_limits(limits)?;
                make_levels(&mount.join(&self.job_rel), Path::new(step), false)?;
            }
        }
        self.procs_files(&step_rel)
    }

    /// Writes the job's limits into its cgroup: the CPU ids, the memory limit (and no
    /// swap beyond it), the task limit, and the device denials (v1's `devices.deny`, or
    /// v2's device program).
    fn write_limits(&self, limits: &Limits) -> Result<(), CgroupError> {
        let h = &self.hierarchy;
        let v1 = matches!(h, Hierarchy::V1 { .. });
        if let (Some(dir), false) = (
            h.dir_for(Controller::Cpuset, &self.job_rel),
            limits.cpus.is_empty(),
        ) {
            write_file(
                &dir.join("cpuset.cpus"),
                &model::job::format_ranges(&limits.cpus),
            )?;
        }
        if let (Some(dir), Some(bytes)) =
            (h.dir_for(Controller::Memory, &self.job_rel), limits.memory)
        {
            // v1 limits memory and swap together (memsw, with swap accounting); v2
            // limits swap apart, to none.
            let (limit, swap, swap_value) = if v1 {
                (
                    "memory.limit_in_bytes",
                    "memory.memsw.limit_in_bytes",
                    bytes.to_string(),
                )
            } else {
                ("memory.max", "memory.swap.max", "0".to_string())
            };
            write_file(&dir.join(limit), &bytes.to_string())?;
            if dir.join(swap).exists() {
                write_file(&dir.join(swap), &swap_value)?;
            }
        }
        if let (Some(dir), Some(max)) =
            (h.dir_for(Controller::Pids, &self.job_rel), limits.max_tasks)
        {
            write_file(&dir.join("pids.max"), &max.to_string())?;
        }
        match h.dir_for(Controller::Devices, &self.job_rel) {
            Some(dir) if v1 => {
                for (major, minor) in &limits.deny_devices {
                    write_file(&dir.join("devices.deny"), &format!("c {major}:{minor} rwm"))?;
                }
            }
            Some(dir) if !limits.deny_devices.is_empty() => {
                crate::device_filter::attach(&dir, &limits.deny_devices)
                    .map_err(io_err("attach a device program to", &dir))?;
            }
            _ => {}
        }
        Ok(())
    }

    /// Every process of the job, in all its steps.
    pub fn processes(&self) -> Vec<u32> {
        let mut out = Vec::new();
        if let Some(dir) = self.hierarchy.tracking_dir(&self.job_rel) {
            collect_procs(&dir, &mut out);
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Sends `signal` to every process of the job. SIGKILL is sent with the job frozen,
    /// so that no process forks a child that escapes it.
    pub fn signal_all(&self, signal: nix::sys::signal::Signal) {
        use nix::sys::signal::{Signal, kill};
        let kill_all = |procs: Vec<u32>| {
            for pid in procs {
                let _ = kill(nix::unistd::Pid::from_raw(pid as i32), signal);
            }
        };
        if signal != Signal::SIGKILL {
            kill_all(self.processes());
            return;
        }
        match &self.hierarchy {
            Hierarchy::V2 { mount, .. } => {
                let dir = mount.join(&self.job_rel);
                if write_file(&dir.join("cgroup.kill"), "1").is_err() {
                    let _ = write_file(&dir.join("cgroup.freeze"), "1");
                    kill_all(self.processes());
                    let _ = write_file(&dir.join("cgroup.freeze"), "0");
                }
            }
            Hierarchy::V1 { .. } => {
                let freezer = self.hierarchy.dir_for(Controller::Freezer, &self.job_rel);
                let state = freezer.as_ref().map(|d| d.join("freezer.state"));
                if let Some(state) = &state
                    && write_file(state, "FROZEN").is_ok()
                {
                    // Frozen means every task stopped; a fork in flight settles first.
                    let deadline = Instant::now() + Duration::from_millis(500);
                    while fs::read_to_string(state).is_ok_and(|s| s.trim() != "FROZEN")
                        && Instant::now() < deadline
                    {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
                kill_all(self.processes());
                if let Some(state) = &state {
                    let _ = write_file(state, "THAWED");
                }
            }
        }
    }

    /// How many processes of the job the kernel killed for lack of memory.
    pub fn oom_kills(&self) -> u64 {
        let Some(dir) = self.hierarchy.dir_for(Controller::Memory, &self.job_rel) else {
            return 0;
        };
        let file = match self.hierarchy {
            Hierarchy::V1 { .. } => "memory.oom_control",
            Hierarchy::V2 { .. } => "memory.events",
        };
        // v1 counts a kill in the cgroup whose limit was hit: the job's, or a step's.
        let mut dirs = vec![dir.clone()];
        if let Ok(entries) = fs::read_dir(&dir) {
            dirs.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
        }
        let count = |d: &PathBuf| {
            fs::read_to_string(d.join(file))
                .ok()
                .and_then(|text| keyed_value(&text, "oom_kill"))
                .unwrap_or(0)
        };
        match self.hierarchy {
            // v2's counters are hierarchical already.
            Hierarchy::V2 { .. } => count(&dir),
            Hierarchy::V1 { .. } => dirs.iter().map(count).max().unwrap_or(0),
        }
    }

    /// What step `step` has used so far, from its cgroup's counters, its memory
    /// high-water mark named after `node`: v1's `memory.max_usage_in_bytes` (page
    /// cache included) and `cpuacct.usage`/`cpuacct.stat`, v2's `memory.peak` and
    /// `cpu.stat`. Task by task, where they have cgroups of their own, as Slurm's
    /// jobacct_gather counts them: the memory their processes held, page cache not
    /// counted (the most of `traced`'s samples, of their peaks now, and of the task
    /// cgroup's high-water mark less the page cache it holds now), and what they read
    /// and wrote (what `traced` kept of an ended task, and what its processes say
    /// now). `None` when neither memory nor CPU time is counted (the controllers are
    /// missing, or the cgroup is gone).
    pub fn step_usage(
        &self,
        step: &str,
        node: &str,
        traced: &BTreeMap<u32, TaskTrace>,
    ) -> Option<model::StepUsage> {
        let rel = self.job_rel.join(step);
        let (rss, total_us, user_us, system_us) = self.counters(&rel)?;
        // Task by task, from the tasks' own cgroups (`task_<id>`), where they have them;
        // the batch step's script is its one task, 0, in the step's cgroup.
        let mut task_dirs: Vec<(u32, PathBuf)> = self
            .task_cgroups(step)
            .into_iter()
            .map(|(task, dir)| (task, rel.join(dir)))
            .collect();
        if task_dirs.is_empty() && step == BATCH_STEP {
            task_dirs.push((0, rel.clone()));
        }
        let tasks = task_dirs
            .into_iter()
            .filter_map(|(task, rel)| {
                let (cgroup_peak, cpu, ..) = self.counters(&rel)?;
                let now = self.task_now(&rel);
                let before = traced.get(&task).copied().unwrap_or_default();
                let io = before.io.unwrap_or_default() + now.io.unwrap_or_default();
                let rss = before
                    .rss_bytes
                    .max(now.rss_bytes)
                    .max(cgroup_peak.saturating_sub(self.page_cache(&rel)));
                Some(model::TaskUsage::of_task(task, node, rss, cpu).with_disk(task, node, io))
            })
            .reduce(|a, b| a.combine(&b));
        Some(model::StepUsage {
            max_rss_bytes: rss,
            max_rss_node: node.to_string(),
            total_cpu_us: total_us,
            user_cpu_us: user_us,
            system_cpu_us: system_us,
            tasks,
            gpu: None,
        })
    }

    /// The page cache the cgroup at `rel` holds now, in bytes: v1's `total_cache`, v2's
    /// `file` of `memory.stat`.
    fn page_cache(&self, rel: &Path) -> u64 {
        let key = match self.hierarchy {
            Hierarchy::V1 { .. } => "total_cache",
            Hierarchy::V2 { .. } => "file",
        };
        self.hierarchy
            .dir_for(Controller::Memory, rel)
            .and_then(|d| fs::read_to_string(d.join("memory.stat")).ok())
            .and_then(|text| keyed_value(&text, key))
            .unwrap_or(0)
    }

    /// What the live processes of the task cgroup at `rel` say now: their peak
    /// resident sets together, and what they read and wrote.
    fn task_now(&self, rel: &Path) -> TaskTrace {
        let mut pids = Vec::new();
        if let Some(dir) = self.hierarchy.tracking_dir(rel) {
            collect_procs(&dir, &mut pids);
        }
        TaskTrace {
            rss_bytes: pids.iter().filter_map(|&p| procfs::peak_rss(p)).sum(),
            io: pids
                .iter()
                .filter_map(|&p| procfs::disk_io(p))
                .reduce(|a, b| a + b),
        }
    }

    /// The peak resident sets of the live processes of task `task` of step `step`,
    /// together: what a sample of the task keeps.
    pub fn task_rss_now(&self, step: &str, task: u32) -> u64 {
        self.task_now(&self.job_rel.join(step).join(task_cgroup_name(task)))
            .rss_bytes
    }

    /// The tasks with a cgroup of their own in step `step` (`task_<id>`): id and name.
    fn task_cgroups(&self, step: &str) -> Vec<(u32, String)> {
        let Some(dir) = self.hierarchy.tracking_dir(&self.job_rel.join(step)) else {
            return Vec::new();
        };
        let mut out: Vec<(u32, String)> = fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        let id = name.strip_prefix("task_")?.parse().ok()?;
                        Some((id, name))
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.sort_unstable();
        out
    }

    /// The memory high-water mark (bytes) and CPU time (all, user, system, in
    /// microseconds) the cgroup at `rel` counted; `None` when it counts neither.
    fn counters(&self, rel: &Path) -> Option<(u64, u64, u64, u64)> {
        let h = &self.hierarchy;
        let read = |c: Controller, file: &str| {
            h.dir_for(c, rel)
                .and_then(|d| fs::read_to_string(d.join(file)).ok())
        };
        let number = |text: String| text.trim().parse::<u64>().ok();
        let (rss, total_us, user_us, system_us) = match h {
            Hierarchy::V1 { .. } => {
                let stat = read(Controller::Cpuacct, "cpuacct.stat").unwrap_or_default();
                let tick_us = 1_000_000 / clock_ticks_per_second();
                (
                    read(Controller::Memory, "memory.max_usage_in_bytes").and_then(number),
                    read(Controller::Cpuacct, "cpuacct.usage")
                        .and_then(number)
                        .map(|ns| ns / 1000),
                    keyed_value(&stat, "user").map(|t| t * tick_us),
                    keyed_value(&stat, "system").map(|t| t * tick_us),
                )
            }
            Hierarchy::V2 { .. } => {
                let stat = read(Controller::Cpuacct, "cpu.stat").unwrap_or_default();
                (
                    read(Controller::Memory, "memory.peak").and_then(number),
                    keyed_value(&stat, "usage_usec"),
                    keyed_value(&stat, "user_usec"),
                    keyed_value(&stat, "system_usec"),
                )
            }
        };
        if rss.is_none() && total_us.is_none() {
            return None;
        }
        Some((
            rss.unwrap_or(0),
            total_us.unwrap_or(0),
            user_us.unwrap_or(0),
            system_us.unwrap_or(0),
        ))
    }

    /// Builds the cgroup of task `task` (its id in the step) inside step `step`'s, which
    /// `create` built. Returns its `cgroup.procs` files, for the task to join.
    pub fn create_task(&self, step: &str, task: u32) -> Result<Vec<OwnedFd>, CgroupError> {
        let step_rel = self.job_rel.join(step);
        let name = task_cgroup_name(task);
        match &self.hierarchy {
            Hierarchy::V1 { mounts } => {
                for (c, root) in mounts {
                    make_levels(
                        &root.join(&step_rel),
                        Path::new(&name),
                        *c == Controller::Cpuset,
                    )?;
                }
            }
            Hierarchy::V2 { mount, .. } => {
                // The step holds no process of its own: its controllers reach its tasks.
                let enable = v2_enable(&self.hierarchy);
                if !enable.is_empty() {
                    write_file(
                        &mount.join(&step_rel).join("cgroup.subtree_control"),
                        &enable,
                    )?;
                }
                make_levels(&mount.join(&step_rel), Path::new(&name), false)?;
            }
        }
        self.procs_files(&step_rel.join(&name))
    }

    /// The `cgroup.procs` files of the cgroup at `rel`, opened for a child to write "0".
    fn procs_files(&self, rel: &Path) -> Result<Vec<OwnedFd>, CgroupError> {
        self.hierarchy
            .dirs(rel)
            .into_iter()
            .map(|(_, dir)| {
                let path = dir.join("cgroup.procs");
                fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map(OwnedFd::from)
                    .map_err(io_err("open", &path))
            })
            .collect()
    }

    /// The steps with a cgroup of this job here (`step_batch`, `step_0`, ...).
    pub fn steps(&self) -> Vec<String> {
        let Some(dir) = self.hierarchy.tracking_dir(&self.job_rel) else {
            return Vec::new();
        };
        let mut out: Vec<String> = fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.starts_with("step_"))
            .collect();
        out.sort();
        out
    }

    /// Kills what is left of the job and waits, up to `timeout`, for it to be gone.
    /// True when no process of the job remains.
    pub fn kill_and_wait(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.processes().is_empty() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            self.signal_all(nix::sys::signal::Signal::SIGKILL);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills what an earlier run of the job left in its cgroups (a supervisor killed
    /// with its job's processes still there) and removes them; false if some survive
    /// SIGKILL.
    pub fn clear_earlier_run(&self) -> bool {
        let _layout = layout_lock();
        if !self.kill_and_wait(Duration::from_secs(5)) {
            return false;
        }
        let _ = self.remove();
        true
    }

    /// Removes the job's cgroups (steps first). A cgroup still holding processes stays.
    pub fn remove(&self) -> Result<(), CgroupError> {
        let mut first_error = None;
        for (_, dir) in self.hierarchy.dirs(&self.job_rel) {
            if let Err(e) = remove_tree(&dir) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The processes of step `step` by task: `(Some(global task id), pids)` for each
    /// task's cgroup (`task_<id>`), then `(None, pids)` for those outside any task's
    /// (the batch shell and what it forks). Pids in order.
    pub fn task_processes(&self, step: &str) -> Vec<(Option<u32>, Vec<u32>)> {
        let Some(dir) = self.hierarchy.tracking_dir(&self.job_rel.join(step)) else {
            return Vec::new();
        };
        let mut tasks: Vec<(Option<u32>, Vec<u32>)> = fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let task = name.strip_prefix("task_")?.parse::<u32>().ok()?;
                let mut pids = Vec::new();
                collect_procs(&e.path(), &mut pids);
                pids.sort_unstable();
                Some((Some(task), pids))
            })
            .collect();
        tasks.sort();
        let mut own = own_procs(&dir);
        own.sort_unstable();
        tasks.push((None, own));
        tasks
    }

    /// Every process of step `step`.
    pub fn step_processes(&self, step: &str) -> Vec<u32> {
        let mut out = Vec::new();
        if let Some(dir) = self.hierarchy.tracking_dir(&self.job_rel.join(step)) {
            collect_procs(&dir, &mut out);
        }
        out
    }

    /// Removes the cgroup of step `step`, and, unless `keep_job` (the node runs the
    /// job's batch script, whose supervisor may be making its own cgroup there), the
    /// job's when no other step is left in it.
    pub fn remove_step(&self, step: &str, keep_job: bool) -> Result<(), CgroupError> {
        let mut first_error = None;
        for (_, dir) in self.hierarchy.dirs(&self.job_rel) {
            if let Err(e) = remove_tree(&dir.join(step)) {
                first_error.get_or_insert(e);
            }
            if !keep_job {
                let _ = fs::remove_dir(&dir);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The node's cgroup (`<prefix>/<node>`), for tests and tools.
    pub fn node_dirs(&self) -> Vec<PathBuf> {
        self.hierarchy
            .dirs(&self.node_rel)
            .into_iter()
            .map(|(_, d)| d)
            .collect()
    }
}

/// Writes "0" (this process) into each `cgroup.procs` file: the calling process joins
/// those cgroups. Only `write` is called: safe between fork and exec.
pub fn join(procs: &[OwnedFd]) -> Result<(), nix::errno::Errno> {
    for fd in procs {
        // SAFETY: a plain write of a static buffer to an open descriptor.
        let n = unsafe { libc::write(fd.as_raw_fd(), b"0".as_ptr().cast(), 1) };
        if n < 0 {
            return Err(nix::errno::Errno::last());
        }
    }
    Ok(())
}

/// `oom_kill 3` in a `key value` file.
/// The kernel's clock ticks per second (`USER_HZ`), the unit of `cpuacct.stat`.
fn clock_ticks_per_second() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .and_then(|t| u64::try_from(t).ok())
        .filter(|t| *t > 0)
        .unwrap_or(100)
}

fn keyed_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok())?
    })
}

/// What a v2 cgroup's `cgroup.subtree_control` gets so that its children have the
/// controllers Drover uses: `+cpuset +memory +pids`, those the hierarchy offers.
fn v2_enable(h: &Hierarchy) -> String {
    let Hierarchy::V2 { controllers, .. } = h else {
        return String::new();
    };
    let enable: Vec<String> = [Controller::Cpuset, Controller::Memory, Controller::Pids]
        .into_iter()
        .filter(|c| controllers.contains(c))
        .map(|c| format!("+{}", c.name()))
        .collect();
    enable.join(" ")
}

/// Creates `rel` under `root` level by level; a new v1 cpuset level gets its parent's
/// CPUs and memory nodes (a cpuset without them cannot take a process).
/// This daemon's changes to the cgroup tree (a step's cgroups made, a step's or an
/// earlier run's removed) are made one at a time: a step that ends removes its job's
/// cgroup when it is empty, which must not fall between the levels another step of
/// the job is making.
pub fn layout_lock() -> std::sync::MutexGuard<'static, ()> {
    static LAYOUT: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LAYOUT.lock().unwrap_or_else(|e| e.into_inner())
}

fn make_levels(root: &Path, rel: &Path, cpuset: bool) -> Result<(), CgroupError> {
    let mut dir = root.to_path_buf();
    for part in rel.components() {
        let parent = dir.clone();
        dir.push(part);
        match fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_err("create", &dir)(e)),
        }
        if cpuset {
            for file in ["cpuset.cpus", "cpuset.mems"] {
                let own = fs::read_to_string(dir.join(file)).unwrap_or_default();
                if own.trim().is_empty() {
                    let from = parent.join(file);
                    let value = fs::read_to_string(&from).map_err(io_err("read", &from))?;
                    write_file(&dir.join(file), value.trim())?;
                }
            }
        }
    }
    Ok(())
}

fn write_file(path: &Path, value: &str) -> Result<(), CgroupError> {
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| f.write_all(value.as_bytes()))
        .map_err(io_err("write", path))
}

/// The processes of the cgroup at `dir` itself, not of those inside it.
fn own_procs(dir: &Path) -> Vec<u32> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn collect_procs(dir: &Path, out: &mut Vec<u32>) {
    out.extend(own_procs(dir));
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                collect_procs(&e.path(), out);
            }
        }
    }
}

/// Removes a cgroup and the cgroups inside it, deepest first. A cgroup whose last
/// process has just been reaped can stay busy for a moment; that is waited out briefly.
fn remove_tree(dir: &Path) -> Result<(), CgroupError> {
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove_tree(&e.path())?;
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(io_err("remove", dir)(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // This build machine's table: v1 controllers, and a unified mount with hugetlb only.
    const HYBRID: &str = "\
24 1 0:22 / /sys/fs/cgroup ro,nosuid,nodev,noexec - tmpfs tmpfs ro,mode=755
25 24 0:23 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw
26 24 0:24 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
27 24 0:25 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
28 24 0:26 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
29 24 0:27 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
30 24 0:28 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
";
    const PURE_V2: &str = "\
35 1 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate
";

    #[test]
    fn a_hybrid_host_uses_its_v1_controllers() {
        let h = Hierarchy::from_mounts(HYBRID, |_| Some("hugetlb\n".into())).unwrap();
        let Hierarchy::V1 { mounts } = &h else {
            panic!("{h:?}")
        };
        assert_eq!(
            mounts[&Controller::Memory],
            PathBuf::from("/sys/fs/cgroup/memory")
        );
        assert_eq!(
            mounts[&Controller::Cpuacct],
            PathBuf::from("/sys/fs/cgroup/cpu,cpuacct")
        );
        assert_eq!(h.missing(), vec![Controller::Freezer, Controller::Pids]);
        assert_eq!(h.version(), 1);
    }

    #[test]
    fn a_pure_v2_host_uses_the_unified_mount_with_device_programs() {
        let h = Hierarchy::from_mounts(PURE_V2, |p| {
            assert_eq!(p, Path::new("/sys/fs/cgroup"));
            Some("cpuset cpu io memory hugetlb pids rdma misc\n".into())
        })
        .unwrap();
        assert_eq!(h.version(), 2);
        assert_eq!(h.missing(), vec![]);
        let rel = Path::new("drover/n1/job_4");
        assert_eq!(
            h.dir_for(Controller::Memory, rel),
            Some(PathBuf::from("/sys/fs/cgroup/drover/n1/job_4"))
        );
    }

    #[test]
    fn no_cgroup_mount_means_no_confinement() {
        let table = "22 1 8:1 / / rw,relatime - ext4 /dev/vda rw\n";
        assert!(matches!(
            Hierarchy::from_mounts(table, |_| None),
            Err(Unavailable::NoControllers)
        ));
    }

    #[test]
    fn node_names_that_would_leave_the_prefix_are_refused() {
        let h = Hierarchy::from_mounts(PURE_V2, |_| Some("memory".into())).unwrap();
        assert!(JobCgroup::new(&h, "drover", "n1", 3).is_ok());
        for bad in ["", "..", "a/b"] {
            assert!(JobCgroup::new(&h, "drover", bad, 3).is_err(), "{bad:?}");
        }
        assert!(JobCgroup::new(&h, "../x", "n1", 3).is_err());
    }

    #[test]
    fn keyed_values_are_read_from_counter_files() {
        let text = "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n";
        assert_eq!(keyed_value(text, "oom_kill"), Some(2));
        assert_eq!(
            keyed_value("usage_usec 1500\nuser_usec 1000\n", "usage_usec"),
            Some(1500)
        );
        assert_eq!(keyed_value(text, "missing"), None);
    }
}
