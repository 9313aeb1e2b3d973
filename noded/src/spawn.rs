//! Starting the batch shell: fork, prepare the child (its own process group, stdio and
//! no other descriptor it inherited, a clean signal state, the isolation hook, `SLURM_TASK_PID`) and exec. An exec failure
//! comes back through a close-on-exec pipe, as in `std::process`, so that the
//! supervisor can report LAUNCH_FAILED instead of a mysterious exit code.
//!
//! `std::process::Command` cannot be used: the environment must name the child's own pid,
//! which exists only after the fork. Everything is allocated before the fork; the child
//! makes only async-signal-safe calls.

use crate::isolation::Isolation;
use crate::user::RunAs;
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::wait::waitpid;
use nix::unistd::{ForkResult, Pid, fork, pipe2, setpgid};
use std::ffi::{CString, c_char};
use std::io::Read;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The interpreter of a script without a `#!` line.
pub const DEFAULT_SHELL: &str = "/bin/sh";

#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// An argument or the script path cannot be passed to exec.
    #[error("{0} contains a NUL byte")]
    Nul(String),
    /// The script file cannot be read.
    #[error("cannot read {path}: {error}")]
    Script { path: String, error: std::io::Error },
    /// A step of starting the child failed; the job cannot start.
    #[error("cannot {stage}: {errno}")]
    Failed { stage: &'static str, errno: Errno },
    /// The program itself could not be executed (missing, not executable, ...).
    #[error("cannot execute the script: {0}")]
    Exec(Errno),
}

/// What to exec: the path, the arguments and the environment, ready for `execve`.
#[derive(Debug)]
pub struct Program {
    path: CString,
    argv: Vec<CString>,
    env: Vec<CString>,
    /// Where the child goes before exec (as the job's user); `None`: stays.
    cwd: Option<CString>,
}

impl Program {
    /// Runs `script` with `args`: directly when it starts with `#!`, else with `/bin/sh`.
    /// Variables whose name or value holds a NUL byte are left out.
    pub fn for_script(
        script: &Path,
        args: &[String],
        env: &[(String, String)],
    ) -> Result<Program, SpawnError> {
        let mut head = [0u8; 2];
        let read = std::fs::File::open(script).and_then(|mut f| {
            let mut n = 0;
            while n < 2 {
                match f.read(&mut head[n..])? {
                    0 => break,
                    k => n += k,
                }
            }
            Ok(n)
        });
        let read = read.map_err(|error| SpawnError::Script {
            path: script.display().to_string(),
            error,
        })?;
        let script_c = CString::new(script.as_os_str().as_bytes())
            .map_err(|_| SpawnError::Nul(script.display().to_string()))?;
        let mut argv = Vec::with_capacity(args.len() + 2);
        let path = if read == 2 && &head == b"#!" {
            script_c.clone()
        } else {
            let shell = CString::new(DEFAULT_SHELL).expect("no NUL");
            argv.push(shell.clone());
            shell
        };
        argv.push(script_c);
        for a in args {
            argv.push(
                CString::new(a.as_str()).map_err(|_| SpawnError::Nul(format!("argument {a:?}")))?,
            );
        }
        Ok(Program {
            path,
            argv,
            env: env_strings(env),
            cwd: None,
        })
    }

    /// Runs `argv` (its first word found in the `PATH` of `env` unless it holds a
    /// slash, as execvp does) in `cwd`.
    pub fn for_command(
        argv: &[String],
        env: &[(String, String)],
        cwd: &str,
    ) -> Result<Program, SpawnError> {
        let first = argv
            .first()
            .ok_or_else(|| SpawnError::Nul("an empty command".into()))?;
        let path_var = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_str())
            .unwrap_or("/usr/local/bin:/usr/bin:/bin");
        let path = if first.contains('/') {
            first.clone()
        } else {
            path_var
                .split(':')
                .filter(|d| !d.is_empty())
                .map(|d| format!("{d}/{first}"))
                .find(|p| is_executable(Path::new(p)))
                .unwrap_or_else(|| first.clone())
        };
        let c = |s: &str| CString::new(s).map_err(|_| SpawnError::Nul(format!("{s:?}")));
        Ok(Program {
            path: c(&path)?,
            argv: argv.iter().map(|a| c(a)).collect::<Result<_, _>>()?,
            env: env_strings(env),
            cwd: (!cwd.is_empty()).then(|| c(cwd)).transpose()?,
        })
    }

    /// The argument vector, for logs.
    pub fn argv(&self) -> Vec<String> {
        self.argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }
}

/// `NAME=value` strings; variables whose name or value holds a NUL byte are left out.
fn env_strings(env: &[(String, String)]) -> Vec<CString> {
    env.iter()
        .filter_map(|(k, v)| CString::new(format!("{k}={v}")).ok())
        .collect()
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where the child's standard streams go. The descriptors must not be 0, 1 or 2.
pub struct Stdio<'a> {
    pub stdin: BorrowedFd<'a>,
    pub stdout: BorrowedFd<'a>,
    pub stderr: BorrowedFd<'a>,
    /// The streams are a pseudo-terminal's slave (`srun --pty`): the child leads a new
    /// session whose controlling terminal it is, instead of only a process group.
    pub terminal: bool,
}

/// The stage of `STAGES` that is the exec itself.
const EXEC_STAGE: u8 = 4;

// Stages the child reports back with its errno.
const STAGES: [&str; 8] = [
    "create the job's process group",
    "redirect the job's standard streams",
    "reset the job's signal state",
    "place the job in its container",
    "execute the script",
    "take the rights of the job's user",
    "enter the working directory",
    "take the terminal as the controlling one",
];

/// Starts `program` as the leader of a new process group. Returns its pid once it has
/// exec'd. The caller must be single-threaded or accept the usual fork caveats; the
/// child itself only makes async-signal-safe calls.
pub fn spawn(
    program: &Program,
    stdio: &Stdio,
    isolation: &dyn Isolation,
    user: &RunAs,
) -> Result<Pid, SpawnError> {
    let argv: Vec<*const c_char> = program
        .argv
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    // The variables, a slot for SLURM_TASK_PID, and the terminating null.
    let mut envp: Vec<*const c_char> = program.env.iter().map(|e| e.as_ptr()).collect();
    let pid_slot = envp.len();
    envp.push(std::ptr::null());
    envp.push(std::ptr::null());
    let (report_rd, report_wr) = pipe2(OFlag::O_CLOEXEC).map_err(|errno| SpawnError::Failed {
        stage: "create a pipe",
        errno,
    })?;

    // SAFETY: the child only makes async-signal-safe calls (see `exec_child`) before it
    // execs or exits, so forking a process with other threads would be sound as well.
    match unsafe { fork() } {
        Err(errno) => Err(SpawnError::Failed {
            stage: "fork",
            errno,
        }),
        Ok(ForkResult::Child) => {
            // SAFETY: we are the freshly forked child; the pointers point into memory
            // copied from the parent and stay valid until exec.
            unsafe {
                exec_child(
                    Target {
                        path: program.path.as_ptr(),
                        cwd: program.cwd.as_ref().map(|c| c.as_ptr()),
                        argv: &argv,
                    },
                    &mut envp,
                    pid_slot,
                    stdio,
                    Confinement { isolation, user },
                    report_wr.as_raw_fd(),
                )
            }
        }
        Ok(ForkResult::Parent { child }) => {
            drop(report_wr);
            // Also set here, so that the group exists whichever of the two runs first
            // (not for a session leader-to-be: a group leader cannot start a session).
            if !stdio.terminal {
                let _ = setpgid(child, child);
            }
            let mut report = std::fs::File::from(report_rd);
            let mut buf = [0u8; 5];
            let mut n = 0;
            while n < buf.len() {
                match report.read(&mut buf[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            if n == 0 {
                return Ok(child);
            }
            let _ = waitpid(child, None);
            let stage = STAGES
                .get(usize::from(buf[0]))
                .copied()
                .unwrap_or("start the job");
            let errno = Errno::from_raw(i32::from_le_bytes([buf[1], buf[2], buf[3], buf[4]]));
            if buf[0] == EXEC_STAGE {
                return Err(SpawnError::Exec(errno));
            }
            Err(SpawnError::Failed { stage, errno })
        }
    }
}

/// What the child execs, and where.
struct Target<'a> {
    path: *const c_char,
    cwd: Option<*const c_char>,
    argv: &'a [*const c_char],
}

/// What the child enters before exec: its container, then its user.
struct Confinement<'a> {
    isolation: &'a dyn Isolation,
    user: &'a RunAs,
}

/// The child's side: set up and exec, or report the failed stage and exit 127.
///
/// # Safety
/// Must run in a forked child. Only async-signal-safe functions are called.
unsafe fn exec_child(
    target: Target,
    envp: &mut [*const c_char],
    pid_slot: usize,
    stdio: &Stdio,
    confinement: Confinement,
    report: RawFd,
) -> ! {
    let Confinement { isolation, user } = confinement;
    let Target { path, cwd, argv } = target;
    let fail = |stage: u8, errno: i32| -> ! {
        let e = errno.to_le_bytes();
        let msg = [stage, e[0], e[1], e[2], e[3]];
        // SAFETY: write and _exit are async-signal-safe; msg outlives the call.
        unsafe {
            libc::write(report, msg.as_ptr().cast(), msg.len());
            libc::_exit(127)
        }
    };
    // SAFETY (whole block): plain libc calls on valid descriptors and local buffers.
    unsafe {
        let grouped = if stdio.terminal {
            libc::setsid() >= 0
        } else {
            libc::setpgid(0, 0) == 0
        };
        if !grouped {
            fail(0, Errno::last_raw());
        }
        for (from, to) in [(&stdio.stdin, 0), (&stdio.stdout, 1), (&stdio.stderr, 2)] {
            if libc::dup2(from.as_raw_fd(), to) < 0 {
                fail(1, Errno::last_raw());
            }
        }
        if stdio.terminal && libc::ioctl(0, libc::TIOCSCTTY, 0) != 0 {
            fail(7, Errno::last_raw());
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        if libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) != 0 {
            fail(2, Errno::last_raw());
        }
        // The Rust runtime ignores SIGPIPE; ignored signals survive exec.
        for sig in [
            libc::SIGPIPE,
            libc::SIGHUP,
            libc::SIGINT,
            libc::SIGQUIT,
            libc::SIGTERM,
        ] {
            libc::signal(sig, libc::SIG_DFL);
        }
        if let Err(errno) = isolation.enter_child() {
            fail(3, errno as i32);
        }
        if let Err(errno) = user.enter() {
            fail(5, errno as i32);
        }
        if let Some(dir) = cwd
            && libc::chdir(dir) != 0
        {
            fail(6, Errno::last_raw());
        }
        // Nothing of the daemon's but stdio reaches the program, whatever it inherited
        // without close-on-exec (as slurmstepd closes all): close-on-exec from fd 3 on,
        // so that the report pipe stays open until exec.
        if libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        ) != 0
        {
            for fd in 3..1024 {
                libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
            }
        }
        let mut var = [0u8; 40];
        write_pid_var(&mut var, libc::getpid());
        envp[pid_slot] = var.as_ptr().cast();
        // ETXTBSY: the script was written by the daemon, and a process it forked
        // at that moment may still hold the write descriptor until that process
        // execs; it goes away within moments, so try again for up to a second.
        for _ in 0..100 {
            libc::execve(path, argv.as_ptr(), envp.as_ptr());
            if Errno::last_raw() != libc::ETXTBSY {
                break;
            }
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: 10_000_000,
            };
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
        fail(EXEC_STAGE, Errno::last_raw())
    }
}

/// Writes `SLURM_TASK_PID=<pid>\0` into `buf` without allocating.
fn write_pid_var(buf: &mut [u8; 40], pid: libc::pid_t) {
    const PREFIX: &[u8] = b"SLURM_TASK_PID=";
    buf[..PREFIX.len()].copy_from_slice(PREFIX);
    let mut digits = [0u8; 12];
    let mut n = pid.unsigned_abs();
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let d = &digits[i..];
    buf[PREFIX.len()..PREFIX.len() + d.len()].copy_from_slice(d);
    buf[PREFIX.len() + d.len()] = 0;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_variable_is_formatted_without_allocation() {
        let mut buf = [0xffu8; 40];
        write_pid_var(&mut buf, 4_194_304);
        let s = std::ffi::CStr::from_bytes_until_nul(&buf).unwrap();
        assert_eq!(s.to_str().unwrap(), "SLURM_TASK_PID=4194304");
        write_pid_var(&mut buf, 7);
        let s = std::ffi::CStr::from_bytes_until_nul(&buf).unwrap();
        assert_eq!(s.to_str().unwrap(), "SLURM_TASK_PID=7");
    }

    #[test]
    fn the_program_gets_stdio_and_no_other_inherited_descriptor() {
        use std::os::fd::{AsFd, FromRawFd, OwnedFd};
        let tmp = tempfile::tempdir().unwrap();
        // A descriptor the daemon holds without close-on-exec, as one it inherited.
        let leaked = std::ffi::CString::new(tmp.path().to_str().unwrap()).unwrap();
        // SAFETY: open on a valid NUL-terminated path; the result is owned below.
        let fd = unsafe { libc::open(leaked.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) };
        assert!(fd > 2);
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let _leaked = unsafe { OwnedFd::from_raw_fd(fd) };
        let out = tmp.path().join("fds");
        let null = std::fs::File::open("/dev/null").unwrap();
        let file = std::fs::File::create(&out).unwrap();
        let argv = vec![
            "/bin/sh".to_string(),
            "-c".to_string(),
            "ls /proc/$$/fd".to_string(),
        ];
        let program = Program::for_command(&argv, &[], "/").unwrap();
        let stdio = Stdio {
            stdin: null.as_fd(),
            stdout: file.as_fd(),
            stderr: file.as_fd(),
            terminal: false,
        };
        let user = RunAs::for_job(
            nix::unistd::getuid().as_raw(),
            nix::unistd::getgid().as_raw(),
            &[],
        )
        .unwrap();
        let pid = spawn(
            &program,
            &stdio,
            &crate::isolation::NoIsolation::default(),
            &user,
        )
        .unwrap();
        nix::sys::wait::waitpid(pid, None).unwrap();
        let fds = std::fs::read_to_string(&out).unwrap();
        assert_eq!(
            fds.split_whitespace().collect::<Vec<_>>(),
            ["0", "1", "2"],
            "{fds}"
        );
    }

    #[test]
    fn scripts_without_shebang_run_with_sh() {
        let tmp = tempfile::tempdir().unwrap();
        let with = tmp.path().join("a");
        let without = tmp.path().join("b");
        std::fs::write(&with, "#!/bin/bash\n").unwrap();
        std::fs::write(&without, "echo hi\n").unwrap();
        let args = vec!["x".to_string()];
        let p = Program::for_script(&with, &args, &[]).unwrap();
        assert_eq!(p.argv(), vec![with.display().to_string(), "x".into()]);
        let p = Program::for_script(&without, &args, &[("A".into(), "1".into())]).unwrap();
        assert_eq!(
            p.argv(),
            vec![
                "/bin/sh".to_string(),
                without.display().to_string(),
                "x".into()
            ]
        );
        assert_eq!(p.env, vec![CString::new("A=1").unwrap()]);
    }
}
