//! Runs the real supervisor with real cgroups of this host (the tests run as root on
//! machines that mount cgroup v1 controllers or cgroup v2): a job gets exactly its CPUs,
//! memory and GPU device files, the kernel's OOM killer ends it OUT_OF_MEMORY, and
//! nothing it started outlives it. GPU device files are stand-ins made with `mknod`
//! (character devices 195:N, NVIDIA's numbers, that no driver serves here: opening one
//! the job may use fails with ENXIO, one it may not with EPERM).
//!
//! The device and kill tests run twice: under the host's hierarchy, and under cgroup v2
//! at the host's unified mount (mounted by the test where the host has none). A hybrid
//! host's unified mount offers no controllers, but v2's own parts work there: device
//! programs, `cgroup.kill`, `cgroup.procs`.

use noded::cgroup::{Hierarchy, JobCgroup};
use noded::launch::{CgroupPlacement, LaunchInfo};
use noded::spool::JobDir;
use noded::status::{FinishKind, JobStatus};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const NODED: &str = env!("CARGO_BIN_EXE_drover-noded");
const JOB_ID: u32 = 42;

fn hierarchy() -> Hierarchy {
    Hierarchy::detect().unwrap_or_else(|e| {
        panic!("these tests need root and mounted cgroups (as the build machines have): {e}")
    })
}

/// cgroup v2 at the host's unified mount, with the controllers it offers; where the host
/// mounts none, at a cgroup2 mount made here (it stays, as the host's would).
fn unified_hierarchy() -> Hierarchy {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let found = mountinfo.lines().find_map(|l| {
        let (head, tail) = l.split_once(" - ")?;
        let point = head.split_whitespace().nth(4)?;
        (tail.split_whitespace().next() == Some("cgroup2")).then(|| PathBuf::from(point))
    });
    let mount = found.unwrap_or_else(|| {
        let point = PathBuf::from("/run/drover-test-cgroup2");
        std::fs::create_dir_all(&point).unwrap();
        let status = Command::new("mount")
            .args(["-t", "cgroup2", "none"])
            .arg(&point)
            .status()
            .unwrap();
        assert!(status.success(), "this kernel cannot mount cgroup2");
        point
    });
    let offered = std::fs::read_to_string(mount.join("cgroup.controllers")).unwrap();
    Hierarchy::unified(mount, &offered.split_whitespace().collect())
}

struct ConfinedJob {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    work: PathBuf,
    dir: JobDir,
    cgroup: JobCgroup,
    prefix: String,
}

impl ConfinedJob {
    fn new(script: &str, edit: impl FnOnce(&mut LaunchInfo, &Path)) -> ConfinedJob {
        ConfinedJob::new_in(hierarchy(), script, edit)
    }

    fn new_in(
        hierarchy: Hierarchy,
        script: &str,
        edit: impl FnOnce(&mut LaunchInfo, &Path),
    ) -> ConfinedJob {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let work = root.join("work");
        std::fs::create_dir(&work).unwrap();
        let prefix = format!(
            "drover-test/{}",
            root.file_name().unwrap().to_string_lossy()
        );
        let mut info = LaunchInfo::minimal(JOB_ID, "n1", work.to_str().unwrap());
        info.start_time = noded::unix_now();
        info.kill_wait_secs = 2;
        info.env = vec![("PATH".into(), std::env::var("PATH").unwrap_or_default())];
        info.cgroup = Some(CgroupPlacement {
            hierarchy: hierarchy.clone(),
            prefix: prefix.clone(),
            max_tasks: 0,
        });
        edit(&mut info, &root);
        std::fs::create_dir(root.join("spool")).unwrap();
        let dir = JobDir::create(root.join("spool").join("job.42"), &info, script).unwrap();
        let cgroup = JobCgroup::new(&hierarchy, &prefix, "n1", JOB_ID).unwrap();
        ConfinedJob {
            _tmp: tmp,
            root,
            work,
            dir,
            cgroup,
            prefix,
        }
    }

    /// Starts the job's supervisor, its log in `supervisor.log`.
    fn start(&self) -> std::process::Child {
        Command::new(NODED)
            .arg("supervise")
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .stderr(std::fs::File::create(self.root.join("supervisor.log")).unwrap())
            .spawn()
            .unwrap()
    }

    /// Waits until the job has written something into `name` in its work directory.
    fn wait_for(&self, name: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::read_to_string(self.work.join(name)).map_or(true, |s| s.trim().is_empty()) {
            assert!(Instant::now() < deadline, "the job never wrote {name}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn run(&self) -> JobStatus {
        let code = self.start().wait().unwrap();
        let log = std::fs::read_to_string(self.root.join("supervisor.log")).unwrap_or_default();
        assert!(code.success(), "supervisor failed: {code}\n{log}");
        self.dir
            .read_status()
            .unwrap()
            .unwrap_or_else(|| panic!("no status\n{log}"))
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.work.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }
}

impl Drop for ConfinedJob {
    fn drop(&mut self) {
        self.cgroup.kill_and_wait(Duration::from_secs(5));
        let _ = self.cgroup.remove();
        for dir in self.cgroup.node_dirs() {
            let _ = std::fs::remove_dir(&dir);
            let _ = std::fs::remove_dir(dir.parent().unwrap());
        }
    }
}

#[test]
fn a_job_over_its_memory_ends_out_of_memory_with_slurms_message() {
    // `tail` keeps a line in memory until its end: 300 MB without a newline.
    let job = ConfinedJob::new(
        "#!/bin/sh\nhead -c 300000000 /dev/zero | tail -n 1 >/dev/null\necho after\n",
        |info, _| info.mem_on_node_mb = 64,
    );
    let s = job.run();
    assert_eq!(
        (s.kind, s.exit_code, s.exit_signal),
        (FinishKind::OutOfMemory, 0, 125),
        "{s:?}"
    );
    let out = job.read("slurm-42.out");
    assert!(
        out.contains("error: Detected 1 oom-kill event(s) in StepId=42.batch. Some of your processes may have been killed by the cgroup out-of-memory handler."),
        "{out}"
    );
    // A job within its limit is not touched.
    let job = ConfinedJob::new(
        "#!/bin/sh\nhead -c 20000000 /dev/zero | tail -n 1 >/dev/null\n",
        |info, _| info.mem_on_node_mb = 64,
    );
    let s = job.run();
    assert_eq!((s.kind, s.exit_code), (FinishKind::Exited, 0), "{s:?}");
}

#[test]
fn a_job_runs_on_exactly_its_cpus_and_cannot_widen_them() {
    let last = std::thread::available_parallelism().unwrap().get() as u32 - 1;
    let script = "#!/bin/sh\ngrep Cpus_allowed_list /proc/self/status\ncat /proc/self/cgroup\n\
                  taskset -pc 0-63 $$ >/dev/null 2>&1; grep Cpus_allowed_list /proc/self/status\n";
    let job = ConfinedJob::new(script, |info, _| info.cpu_ids = vec![last]);
    let s = job.run();
    assert_eq!((s.kind, s.exit_code), (FinishKind::Exited, 0), "{s:?}");
    let out = job.read("slurm-42.out");
    let allowed: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("Cpus_allowed_list"))
        .collect();
    let want = format!("Cpus_allowed_list:\t{last}");
    assert_eq!(allowed, vec![want.as_str(), want.as_str()], "{out}");
    assert!(
        out.contains(&format!("{}/n1/job_42/step_batch", job.prefix)),
        "{out}"
    );
}

#[test]
fn gpus_not_given_to_the_job_cannot_be_opened() {
    gpus_not_given_cannot_be_opened_under(hierarchy());
}

#[test]
fn gpus_not_given_to_the_job_cannot_be_opened_under_cgroup_v2() {
    gpus_not_given_cannot_be_opened_under(unified_hierarchy());
}

fn gpus_not_given_cannot_be_opened_under(hierarchy: Hierarchy) {
    let job = ConfinedJob::new_in(
        hierarchy,
        "#!/bin/sh\nfor g in 0 1 2; do echo x > ../gpu$g; done\n",
        |info, root| {
            let files: Vec<String> = (0..3)
                .map(|i| root.join(format!("gpu{i}")).display().to_string())
                .collect();
            for (i, f) in files.iter().enumerate() {
                let minor = i.to_string();
                let status = Command::new("mknod")
                    .args([f.as_str(), "c", "195", &minor])
                    .status()
                    .unwrap();
                assert!(status.success(), "mknod {f}");
                std::fs::set_permissions(f, std::os::unix::fs::PermissionsExt::from_mode(0o666))
                    .unwrap();
            }
            info.gpu_files = files;
            info.gpu_indices = vec![1];
        },
    );
    let s = job.run();
    assert_eq!(s.kind, FinishKind::Exited, "{s:?}");
    let out = job.read("slurm-42.out");
    // No driver serves 195:N here: a GPU the job may open answers "No such device".
    let verdicts: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("cannot create"))
        .filter_map(|l| l.rsplit("../").next())
        .collect();
    assert_eq!(
        verdicts,
        vec![
            "gpu0: Operation not permitted",
            "gpu1: No such device or address",
            "gpu2: Operation not permitted"
        ],
        "{out}"
    );
}

#[test]
fn a_daemonized_process_dies_with_the_job_and_the_cgroup_goes() {
    a_daemonized_process_dies_with_the_job_under(hierarchy());
}

#[test]
fn a_daemonized_process_dies_with_the_job_under_cgroup_v2() {
    a_daemonized_process_dies_with_the_job_under(unified_hierarchy());
}

fn a_daemonized_process_dies_with_the_job_under(hierarchy: Hierarchy) {
    // Double fork and a new session: out of the job's process group and session.
    let script = "#!/bin/sh\n(setsid sh -c 'sleep 300 & echo $! > bg.pid' &)\n\
                  while [ ! -s bg.pid ]; do sleep 0.05; done\necho started\n";
    let job = ConfinedJob::new_in(hierarchy, script, |_, _| {});
    let s = job.run();
    assert_eq!((s.kind, s.exit_code), (FinishKind::Exited, 0), "{s:?}");
    let pid: i32 = job.read("bg.pid").trim().parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !gone(pid) {
        assert!(
            Instant::now() < deadline,
            "daemonized process {pid} survived the job"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(job.cgroup.processes().is_empty());
    for dir in job.cgroup.node_dirs() {
        assert!(
            !dir.join("job_42").exists(),
            "{} left behind",
            dir.join("job_42").display()
        );
    }
}

#[test]
fn a_killed_supervisor_leaves_nothing_the_cgroup_cannot_reach() {
    let script = "#!/bin/sh\n(setsid sh -c 'sleep 300 & echo $! > bg.pid' &)\nsleep 300\n";
    let job = ConfinedJob::new(script, |_, _| {});
    let mut child = job.start();
    job.wait_for("bg.pid");
    child.kill().unwrap();
    child.wait().unwrap();
    let pid: i32 = job.read("bg.pid").trim().parse().unwrap();
    let procs = job.cgroup.processes();
    assert!(procs.contains(&(pid as u32)), "{pid} not in {procs:?}");
    assert!(job.cgroup.kill_and_wait(Duration::from_secs(5)));
    assert!(gone(pid), "{pid} survived");
}

/// True when `pid` has ended (a zombie waiting for its reaper has too).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => noded::procfs::parse_stat_state(&stat) == Some('Z'),
    }
}

#[test]
fn a_job_can_have_at_most_its_task_limit_of_processes() {
    let job = ConfinedJob::new(
        "#!/bin/sh\necho up > started\nwhile [ ! -e go ]; do sleep 0.05; done\n",
        |info, _| {
            if let Some(c) = info.cgroup.as_mut() {
                c.max_tasks = 20;
            }
        },
    );
    if !job.cgroup.hierarchy().has(noded::cgroup::Controller::Pids) {
        return;
    }
    let mut child = job.start();
    job.wait_for("started");
    let limits: Vec<String> = job
        .cgroup
        .node_dirs()
        .iter()
        .filter_map(|d| std::fs::read_to_string(d.join("job_42/pids.max")).ok())
        .map(|s| s.trim().to_string())
        .collect();
    std::fs::write(job.work.join("go"), "").unwrap();
    child.wait().unwrap();
    assert_eq!(limits, vec!["20".to_string()]);
}
