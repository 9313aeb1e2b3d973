//! Runs the real supervisor (`drover-noded supervise <dir>`) on tiny scripts in a
//! temporary directory and checks what it records and what it leaves behind.

use model::SignalSpec;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use noded::launch::LaunchInfo;
use noded::spool::{JobDir, PGID, PID};
use noded::status::{FinishKind, JobStatus};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NODED: &str = env!("CARGO_BIN_EXE_drover-noded");
const JOB_ID: u32 = 42;

struct TestJob {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    work: PathBuf,
    dir: JobDir,
}

impl TestJob {
    /// A job directory for `script`, with the launch record adjusted by `edit`.
    fn new(script: &str, edit: impl FnOnce(&mut LaunchInfo, &Path)) -> TestJob {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let work = root.join("work");
        std::fs::create_dir(&work).unwrap();
        let mut info = LaunchInfo::minimal(JOB_ID, "n1", work.to_str().unwrap());
        info.start_time = noded::unix_now();
        info.kill_wait_secs = 5;
        info.env = vec![("PATH".into(), std::env::var("PATH").unwrap_or_default())];
        edit(&mut info, &root);
        std::fs::create_dir(root.join("spool")).unwrap();
        let dir = JobDir::create(root.join("spool").join("job.42"), &info, script).unwrap();
        TestJob {
            _tmp: tmp,
            root,
            work,
            dir,
        }
    }

    fn start(&self) -> Child {
        Command::new(NODED)
            .arg("supervise")
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .stderr(std::fs::File::create(self.root.join("supervisor.log")).unwrap())
            .spawn()
            .unwrap()
    }

    /// Waits for the supervisor to exit and returns the status it wrote.
    fn finish(&self, mut child: Child) -> JobStatus {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(code) = child.try_wait().unwrap() {
                let log =
                    std::fs::read_to_string(self.root.join("supervisor.log")).unwrap_or_default();
                assert!(code.success(), "supervisor failed: {code}\n{log}");
                return self
                    .dir
                    .read_status()
                    .unwrap()
                    .unwrap_or_else(|| panic!("no status\n{log}"));
            }
            assert!(Instant::now() < deadline, "supervisor still running");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn run(&self) -> JobStatus {
        self.finish(self.start())
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.work.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// Waits until `path` exists.
    fn wait_for(&self, path: &Path) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !path.exists() {
            assert!(
                Instant::now() < deadline,
                "{} never appeared",
                path.display()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The pid the script wrote to `bg.pid` (the file may exist a moment before the
    /// shell has written it).
    fn background_pid(&self) -> Pid {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(pid) = self.read("bg.pid").trim().parse() {
                return Pid::from_raw(pid);
            }
            assert!(Instant::now() < deadline, "bg.pid stayed empty");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for TestJob {
    /// Should a check have failed midway, nothing of the job outlives the test.
    fn drop(&mut self) {
        let ended = matches!(self.dir.read_status(), Ok(Some(_)));
        if let (false, Some(pgid)) = (ended, self.dir.read_pid(PGID)) {
            let _ = killpg(Pid::from_raw(pgid as i32), Signal::SIGKILL);
        }
    }
}

fn alive(pid: Pid) -> bool {
    kill(pid, None).is_ok()
}

#[test]
fn records_exit_status_into_default_output_file() {
    let job = TestJob::new("#!/bin/sh\necho out\necho err >&2\nexit 7\n", |_, _| {});
    let s = job.run();
    assert_eq!(
        (s.kind, s.exit_code, s.exit_signal),
        (FinishKind::Exited, 7, 0),
        "{s:?}"
    );
    assert!(s.start_time > 0 && s.start_time <= s.end_time, "{s:?}");
    assert_eq!(job.read("slurm-42.out"), "out\nerr\n");
    assert_eq!(job.dir.read_pid(PID), job.dir.read_pid("pgid"));
}

#[test]
fn environment_is_the_submit_env_plus_slurm_variables() {
    let script = r#"#!/bin/sh
echo "$SLURM_JOB_ID $SLURMD_NODENAME $ENVIRONMENT $CUSTOM $CUDA_VISIBLE_DEVICES"
[ "$SLURM_TASK_PID" = "$$" ] && echo task-pid-ok
[ -z "$NOT_EXPORTED" ] && echo clean
pwd
"#;
    let job = TestJob::new(script, |info, _| {
        info.env.push(("CUSTOM".into(), "x y".into()));
        info.gpu_indices = vec![2, 3];
    });
    let s = job.run();
    assert_eq!(s.kind, FinishKind::Exited);
    let out = job.read("slurm-42.out");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "42 n1 BATCH x y 2,3");
    assert_eq!(lines[1], "task-pid-ok");
    assert_eq!(lines[2], "clean");
    assert_eq!(lines[3], job.work.to_str().unwrap());
}

#[test]
fn output_patterns_name_separate_files() {
    let job = TestJob::new("#!/bin/sh\necho out\necho err >&2\n", |info, _| {
        info.spec.name = "train".into();
        info.spec.stdout_pattern = "%x-%j.out".into();
        info.spec.stderr_pattern = "%x-%j.err".into();
    });
    job.run();
    assert_eq!(job.read("train-42.out"), "out\n");
    assert_eq!(job.read("train-42.err"), "err\n");
}

#[test]
fn open_mode_append_keeps_earlier_output() {
    for (append, expect) in [(true, "old\nnew\n"), (false, "new\n")] {
        let job = TestJob::new("#!/bin/sh\necho new\n", |info, _| {
            info.spec.open_mode_append = append
        });
        std::fs::write(job.work.join("slurm-42.out"), "old\n").unwrap();
        job.run();
        assert_eq!(job.read("slurm-42.out"), expect, "append={append}");
    }
}

#[test]
fn missing_work_dir_falls_back_to_tmp_and_says_so() {
    let job = TestJob::new("#!/bin/sh\npwd\n", |info, root| {
        info.spec.work_dir = root.join("missing").to_str().unwrap().into();
        info.spec.stdout_pattern = root.join("work/out.txt").to_str().unwrap().into();
    });
    let s = job.run();
    assert_eq!((s.kind, s.exit_code), (FinishKind::Exited, 0));
    let out = job.read("out.txt");
    assert!(out.contains("couldn't chdir to `"), "{out}");
    assert!(
        out.contains("No such file or directory: going to /tmp instead"),
        "{out}"
    );
    assert_eq!(out.lines().last(), Some("/tmp"));
}

#[test]
fn script_without_shebang_runs_with_sh_and_gets_its_args() {
    let job = TestJob::new("echo \"args: $1|$2\"\n", |info, _| {
        info.spec.script_args = vec!["a".into(), "b c".into()];
    });
    let s = job.run();
    assert_eq!((s.kind, s.exit_code), (FinishKind::Exited, 0));
    assert_eq!(job.read("slurm-42.out"), "args: a|b c\n");
}

#[test]
fn stdin_comes_from_the_input_file() {
    let job = TestJob::new("#!/bin/sh\ncat\n", |info, _| {
        info.spec.stdin_path = "in.txt".into()
    });
    std::fs::write(job.work.join("in.txt"), "hello from stdin\n").unwrap();
    job.run();
    assert_eq!(job.read("slurm-42.out"), "hello from stdin\n");
}

#[test]
fn a_signal_death_is_recorded_as_exit_signal() {
    let job = TestJob::new("#!/bin/sh\nkill -9 $$\n", |_, _| {});
    let s = job.run();
    assert_eq!(
        (s.kind, s.exit_code, s.exit_signal),
        (FinishKind::Exited, 0, 9),
        "{s:?}"
    );
}

#[test]
fn leftovers_die_when_the_script_ends() {
    let job = TestJob::new(
        "#!/bin/sh\nsleep 100 &\necho $! > bg.pid\nexit 0\n",
        |_, _| {},
    );
    let s = job.run();
    assert_eq!((s.kind, s.exit_code), (FinishKind::Exited, 0));
    assert!(
        !alive(job.background_pid()),
        "background sleep survived the job"
    );
}

#[test]
fn time_limit_kills_the_whole_process_group() {
    // The shell and its child ignore SIGTERM, so only SIGKILL after KillWait ends them.
    let script = "#!/bin/sh\ntrap '' TERM\nsleep 100 &\necho $! > bg.pid\nwait\nwait\n";
    let job = TestJob::new(script, |info, _| {
        info.time_limit_secs = 1;
        info.kill_wait_secs = 1;
    });
    let started = Instant::now();
    let s = job.run();
    let took = started.elapsed();
    assert_eq!((s.kind, s.exit_signal), (FinishKind::Timeout, 9), "{s:?}");
    assert!(
        took >= Duration::from_millis(1900),
        "killed before KillWait: {took:?}"
    );
    assert!(
        !alive(job.background_pid()),
        "background sleep survived the time limit"
    );
    let out = job.read("slurm-42.out");
    assert!(
        out.contains("*** JOB 42 ON n1 CANCELLED AT ") && out.contains(" DUE TO TIME LIMIT ***"),
        "{out}"
    );
}

#[test]
fn time_limit_sigterm_is_enough_for_a_plain_script() {
    let job = TestJob::new(
        "#!/bin/sh\nsleep 100 &\necho $! > bg.pid\nwait\n",
        |info, _| {
            info.time_limit_secs = 1;
            info.kill_wait_secs = 30;
        },
    );
    let started = Instant::now();
    let s = job.run();
    assert_eq!((s.kind, s.exit_signal), (FinishKind::Timeout, 15), "{s:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "waited for KillWait needlessly"
    );
    assert!(!alive(job.background_pid()));
}

#[test]
fn sigterm_to_the_supervisor_cancels_the_job() {
    let job = TestJob::new(
        "#!/bin/sh\nsleep 100 &\necho $! > bg.pid\nwait\n",
        |_, _| {},
    );
    let child = job.start();
    job.wait_for(&job.work.join("bg.pid"));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let s = job.finish(child);
    assert_eq!(
        (s.kind, s.exit_signal),
        (FinishKind::Cancelled, 15),
        "{s:?}"
    );
    assert!(!alive(job.background_pid()));
    let out = job.read("slurm-42.out");
    assert!(out.contains("*** JOB 42 ON n1 CANCELLED AT "), "{out}");
}

#[test]
fn warning_signal_reaches_the_batch_shell_before_the_limit() {
    let script = "#!/bin/sh\ntrap 'echo got-usr1; exit 0' USR1\nsleep 100 &\nwait\n";
    let job = TestJob::new(script, |info, _| {
        // The warning comes 1 s after the start, once the trap is set.
        info.time_limit_secs = 30;
        info.spec.signal = Some(SignalSpec {
            signal: Signal::SIGUSR1 as i32,
            seconds_before_end: 29,
            batch_only: true,
        });
    });
    let s = job.run();
    assert_eq!(
        (s.kind, s.exit_code, s.exit_signal),
        (FinishKind::Exited, 0, 0),
        "{s:?}"
    );
    assert_eq!(job.read("slurm-42.out"), "got-usr1\n");
}

#[test]
fn unopenable_output_is_a_launch_failure() {
    let job = TestJob::new("#!/bin/sh\necho never\n", |info, root| {
        info.spec.stdout_pattern = root.join("no-such-dir/out").to_str().unwrap().into();
    });
    let s = job.run();
    assert_eq!(s.kind, FinishKind::LaunchFailed, "{s:?}");
    assert!(
        s.message.contains("cannot open output file") && s.message.contains("no-such-dir/out"),
        "{s:?}"
    );
    assert_eq!(job.dir.read_pid(PID), None, "the script never ran");
}

#[test]
fn missing_interpreter_is_a_launch_failure_noted_in_the_output() {
    let job = TestJob::new("#!/no/such/interpreter\n", |_, _| {});
    let s = job.run();
    assert_eq!(s.kind, FinishKind::LaunchFailed, "{s:?}");
    assert!(s.message.contains("execute the script"), "{s:?}");
    assert!(job.read("slurm-42.out").contains("execute the script"));
}

#[test]
fn unreadable_launch_record_is_a_launch_failure() {
    let job = TestJob::new("#!/bin/sh\n", |_, _| {});
    std::fs::write(job.dir.file("launch.json"), "{").unwrap();
    let s = job.run();
    assert_eq!(s.kind, FinishKind::LaunchFailed, "{s:?}");
    assert!(s.message.contains("launch.json"), "{s:?}");
}
