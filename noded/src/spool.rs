//! The spool: one directory per job on this node, the only channel between the daemon
//! and a job's supervisor besides signals.
//!
//! ```text
//! <spool>/job.<id>/        a job this node runs or has not yet reported
//!     script               the batch script (mode 0700)
//!     launch.json          the launch record (`LaunchInfo`), written by the daemon
//!     supervisor.pid       written by the supervisor when it starts
//!     supervisor.log       the supervisor's own log
//!     pid, pgid            the batch shell's pid and process group, once it runs
//!     status.json          how it ended (`JobStatus`), written last, atomically
//! <spool>/job.<id>.done/   reported to the controller; removed after a while
//! ```

use crate::launch::{LAUNCH_VERSION, LaunchInfo};
use crate::status::JobStatus;
use model::JobId;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

pub const SCRIPT: &str = "script";
pub const LAUNCH: &str = "launch.json";
pub const STATUS: &str = "status.json";
pub const PID: &str = "pid";
pub const PGID: &str = "pgid";
pub const SUPERVISOR_PID: &str = "supervisor.pid";
pub const SUPERVISOR_LOG: &str = "supervisor.log";
/// `scontrol notify`'s messages, one per line: the daemon appends, the supervisor
/// writes the new ones on the job's stderr (told by SIGURG).
pub const NOTIFY: &str = "notify";
/// Present while the supervisor holds the job stopped (`SuspendJob`); the daemon
/// reports it to the controller, after a restart too.
pub const SUSPENDED: &str = "suspended";

#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    /// A filesystem call failed; the spool may be full or unwritable.
    #[error("cannot {action} {}: {error}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        error: io::Error,
    },
    /// A record in a job directory cannot be read back.
    #[error("bad record {}: {message}", path.display())]
    BadRecord { path: PathBuf, message: String },
}

fn io_err<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> SpoolError + 'a {
    move |error| SpoolError::Io {
        action,
        path: path.to_path_buf(),
        error,
    }
}

/// Writes `bytes` to `path` through a temporary file and a rename, so that a reader sees
/// the old content or the whole new one.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), SpoolError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut file = fs::File::create(&tmp).map_err(io_err("create", &tmp))?;
    file.write_all(bytes).map_err(io_err("write", &tmp))?;
    drop(file);
    fs::rename(&tmp, path).map_err(io_err("rename", &tmp))
}

/// One job's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobDir {
    path: PathBuf,
}

impl JobDir {
    pub fn new(path: impl Into<PathBuf>) -> JobDir {
        JobDir { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Creates the directory at `path` with the script and the launch record. A stale
    /// directory of the same name is replaced.
    pub fn create(path: PathBuf, info: &LaunchInfo, script: &str) -> Result<JobDir, SpoolError> {
        match fs::create_dir(&path) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                fs::remove_dir_all(&path).map_err(io_err("remove", &path))?;
                fs::create_dir(&path).map_err(io_err("create", &path))?;
            }
            other => other.map_err(io_err("create", &path))?,
        }
        let dir = JobDir { path };
        let script_path = dir.file(SCRIPT);
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o700)
            .open(&script_path)
            .map_err(io_err("create", &script_path))?;
        file.write_all(script.as_bytes())
            .map_err(io_err("write", &script_path))?;
        // The job's user runs the script; nobody else reads it.
        if nix::unistd::geteuid().is_root() {
            std::os::unix::fs::fchown(&file, Some(info.spec.uid), Some(info.spec.gid))
                .map_err(io_err("hand over", &script_path))?;
        }
        let launch = dir.file(LAUNCH);
        let json = serde_json::to_vec(info).expect("launch records serialize");
        fs::write(&launch, json).map_err(io_err("write", &launch))?;
        Ok(dir)
    }

    pub fn read_launch(&self) -> Result<LaunchInfo, SpoolError> {
        let path = self.file(LAUNCH);
        let bytes = fs::read(&path).map_err(io_err("read", &path))?;
        let info: LaunchInfo =
            serde_json::from_slice(&bytes).map_err(|e| SpoolError::BadRecord {
                path: path.clone(),
                message: e.to_string(),
            })?;
        if info.version != LAUNCH_VERSION {
            let message = format!(
                "version {} (this build reads {LAUNCH_VERSION})",
                info.version
            );
            return Err(SpoolError::BadRecord { path, message });
        }
        Ok(info)
    }

    pub fn write_status(&self, status: &JobStatus) -> Result<(), SpoolError> {
        let json = serde_json::to_vec_pretty(status).expect("statuses serialize");
        write_atomic(&self.file(STATUS), &json)
    }

    /// The job's end, once the supervisor has written it.
    pub fn read_status(&self) -> Result<Option<JobStatus>, SpoolError> {
        let path = self.file(STATUS);
        match fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|e| SpoolError::BadRecord {
                        path,
                        message: e.to_string(),
                    })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(SpoolError::Io {
                action: "read",
                path,
                error: e,
            }),
        }
    }

    pub fn write_pid(&self, name: &str, pid: u32) -> Result<(), SpoolError> {
        write_atomic(&self.file(name), format!("{pid}\n").as_bytes())
    }

    /// A pid file's value; `None` when it is absent or unreadable.
    pub fn read_pid(&self, name: &str) -> Option<u32> {
        fs::read_to_string(self.file(name))
            .ok()?
            .trim()
            .parse()
            .ok()
            .filter(|p| *p > 0)
    }
}

/// The spool directory of this node.
#[derive(Debug, Clone)]
pub struct Spool {
    root: PathBuf,
}

impl Spool {
    /// Opens (creating it if needed) the spool at `root`, as an absolute path.
    pub fn open(root: &Path) -> Result<Spool, SpoolError> {
        fs::create_dir_all(root).map_err(io_err("create", root))?;
        let root = fs::canonicalize(root).map_err(io_err("resolve", root))?;
        Ok(Spool { root })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn job_dir(&self, id: JobId) -> JobDir {
        JobDir::new(self.root.join(format!("job.{id}")))
    }

    pub fn create_job(&self, info: &LaunchInfo, script: &str) -> Result<JobDir, SpoolError> {
        JobDir::create(self.job_dir(info.job_id).path, info, script)
    }

    /// Job directories not yet reported, by job id.
    pub fn scan(&self) -> Result<Vec<(JobId, JobDir)>, SpoolError> {
        let entries = fs::read_dir(&self.root).map_err(io_err("list", &self.root))?;
        let mut jobs: Vec<(JobId, JobDir)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name();
                let id = name.to_str()?.strip_prefix("job.")?.parse().ok()?;
                e.file_type()
                    .ok()?
                    .is_dir()
                    .then(|| (id, JobDir::new(e.path())))
            })
            .collect();
        jobs.sort_by_key(|(id, _)| *id);
        Ok(jobs)
    }

    /// Renames `job.<id>` to `job.<id>.done`, replacing an older one.
    pub fn mark_reported(&self, id: JobId) -> Result<(), SpoolError> {
        let from = self.job_dir(id).path;
        let to = self.root.join(format!("job.{id}.done"));
        if to.exists() {
            fs::remove_dir_all(&to).map_err(io_err("remove", &to))?;
        }
        fs::rename(&from, &to).map_err(io_err("rename", &from))
    }

    /// The run (restart count) of the job whose end was last reported here, while its
    /// directory is kept.
    pub fn reported_run(&self, id: JobId) -> Option<u32> {
        let done = JobDir::new(self.root.join(format!("job.{id}.done")));
        done.read_launch().ok().map(|l| l.restart_count)
    }

    /// Removes reported job directories older than `age`; returns how many.
    pub fn sweep_reported(&self, age: Duration) -> usize {
        let Ok(entries) = fs::read_dir(&self.root) else {
            return 0;
        };
        let now = SystemTime::now();
        let mut removed = 0;
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            let done = name
                .to_str()
                .is_some_and(|n| n.starts_with("job.") && n.ends_with(".done"));
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| now.duration_since(t).unwrap_or_default() >= age);
            if done && old && fs::remove_dir_all(entry.path()).is_ok() {
                removed += 1;
            }
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::FinishKind;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn job_dir_life() {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(&tmp.path().join("spool")).unwrap();
        let info = LaunchInfo::minimal(12, "n1", "/tmp");
        let dir = spool.create_job(&info, "#!/bin/sh\n").unwrap();
        let mode = fs::metadata(dir.file(SCRIPT)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(dir.read_launch().unwrap(), info);
        assert_eq!(dir.read_status().unwrap(), None);
        assert_eq!(dir.read_pid(PID), None);
        dir.write_pid(PID, 321).unwrap();
        assert_eq!(dir.read_pid(PID), Some(321));
        let status = JobStatus {
            kind: FinishKind::Exited,
            exit_code: 3,
            exit_signal: 0,
            start_time: 1,
            end_time: 2,
            message: String::new(),
            drain_reason: String::new(),
            batch_usage: Some(model::StepUsage {
                max_rss_bytes: 4096,
                max_rss_node: "n1".into(),
                total_cpu_us: 9,
                user_cpu_us: 5,
                system_cpu_us: 4,
                tasks: None,
                gpu: None,
            }),
        };
        dir.write_status(&status).unwrap();
        assert_eq!(dir.read_status().unwrap(), Some(status));
        assert_eq!(spool.scan().unwrap(), vec![(12, dir.clone())]);

        // Launching the same id again replaces the stale directory.
        let again = spool.create_job(&info, "#!/bin/sh\n").unwrap();
        assert_eq!(again.read_status().unwrap(), None);

        spool.mark_reported(12).unwrap();
        assert!(spool.scan().unwrap().is_empty());
        spool.create_job(&info, "#!/bin/sh\n").unwrap();
        spool.mark_reported(12).unwrap();
        assert_eq!(spool.sweep_reported(Duration::from_secs(3600)), 0);
        assert_eq!(spool.sweep_reported(Duration::ZERO), 1);
    }

    #[test]
    fn records_of_another_version_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::open(tmp.path()).unwrap();
        let mut info = LaunchInfo::minimal(1, "n1", "/tmp");
        info.version = 99;
        let dir = spool.create_job(&info, "").unwrap();
        let err = dir.read_launch().unwrap_err().to_string();
        assert!(err.contains("version 99"), "{err}");
    }
}
