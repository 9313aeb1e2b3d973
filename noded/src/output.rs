//! Where a batch script's stdin, stdout and stderr go, as Slurm decides it: patterns
//! (`slurm-%j.out`, `%A_%a`, ...) expanded with `model::pattern`, relative paths taken
//! from the working directory, stderr sharing the stdout file unless it names another.

use crate::launch::LaunchInfo;
use model::pattern::{PatternValues, expand_pattern, output_paths};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobIo {
    pub stdin: PathBuf,
    pub stdout: PathBuf,
    /// `None`: stderr goes to the stdout file, through the same open file.
    pub stderr: Option<PathBuf>,
}

/// Resolves the job's I/O paths against `work_dir` (the directory the script runs in).
pub fn resolve_io(info: &LaunchInfo, work_dir: &Path) -> JobIo {
    let spec = &info.spec;
    let values = PatternValues {
        job_id: info.job_id,
        array_job_id: if info.is_array_task() {
            info.array_job_id
        } else {
            0
        },
        array_task_id: info.array_task_id,
        job_name: &spec.name,
        user: &spec.user,
        node: &info.node_name,
        node_index: 0,
        task_id: Some(0),
        step_id: None,
    };
    let (stdout, stderr) = output_paths(spec, &values, &work_dir.display().to_string());
    let stdin = match spec.stdin_path.as_str() {
        "" => PathBuf::from("/dev/null"),
        p => work_dir.join(expand_pattern(p, &values)),
    };
    JobIo {
        stdin,
        stdout: PathBuf::from(stdout),
        stderr: stderr.map(PathBuf::from),
    }
}

/// Output files are appended to with `--open-mode=append`, and on a requeued run (as
/// Slurm does), so that earlier output survives.
pub fn appends(info: &LaunchInfo) -> bool {
    info.spec.open_mode_append || info.restart_count > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> LaunchInfo {
        let mut info = LaunchInfo::minimal(42, "n1", "/w");
        info.spec.name = "train".into();
        info.spec.user = "ada".into();
        info
    }

    #[test]
    fn defaults_to_slurm_jobid_out_with_stderr_shared() {
        let io = resolve_io(&info(), Path::new("/w"));
        assert_eq!(io.stdout, PathBuf::from("/w/slurm-42.out"));
        assert_eq!(io.stderr, None);
        assert_eq!(io.stdin, PathBuf::from("/dev/null"));
    }

    #[test]
    fn array_tasks_default_to_array_pattern() {
        let mut info = info();
        info.array_job_id = 40;
        info.array_task_id = Some(3);
        let io = resolve_io(&info, Path::new("/w"));
        assert_eq!(io.stdout, PathBuf::from("/w/slurm-40_3.out"));
    }

    #[test]
    fn patterns_expand_and_relative_paths_follow_the_work_dir() {
        let mut info = info();
        info.spec.stdout_pattern = "logs/%x-%j.out".into();
        info.spec.stderr_pattern = "/abs/%u-%N-%%.err".into();
        info.spec.stdin_path = "in.txt".into();
        let io = resolve_io(&info, Path::new("/tmp"));
        assert_eq!(io.stdout, PathBuf::from("/tmp/logs/train-42.out"));
        assert_eq!(io.stderr, Some(PathBuf::from("/abs/ada-n1-%.err")));
        assert_eq!(io.stdin, PathBuf::from("/tmp/in.txt"));
    }

    #[test]
    fn stderr_naming_the_stdout_file_shares_it() {
        let mut info = info();
        info.spec.stdout_pattern = "out-%j".into();
        info.spec.stderr_pattern = "out-42".into();
        assert_eq!(resolve_io(&info, Path::new("/w")).stderr, None);
    }

    #[test]
    fn requeued_runs_append() {
        let mut info = info();
        assert!(!appends(&info));
        info.restart_count = 1;
        assert!(appends(&info));
        info.restart_count = 0;
        info.spec.open_mode_append = true;
        assert!(appends(&info));
    }
}
