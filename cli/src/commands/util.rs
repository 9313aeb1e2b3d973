//! Helpers the job commands (`sbatch`, `scancel`, `scontrol`, `srun`) share: Slurm-style
//! error lines with their exit status, the controller connection with Slurm's wording of
//! its failures, signal names, the job id syntax, quoted words, and waiting for a job to
//! finish (`sbatch --wait`, `srun` outside an allocation).

use crate::client::{CONNECT_FAILURE, Ctld};
use crate::format::job_state;
use crate::opts::OptError;
use model::job_id::{self, JobIdError, JobIdSpec};
use proto::v1;
use std::process::ExitCode;

/// An error that ends a command: the lines to print on stderr and the exit status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliError {
    pub lines: Vec<String>,
    pub code: u8,
}

impl CliError {
    /// `prog: error: MSG`, exit status 1.
    pub fn error(prog: &str, msg: impl std::fmt::Display) -> CliError {
        CliError {
            lines: vec![format!("{prog}: error: {msg}")],
            code: 1,
        }
    }

    /// A line printed as is, exit status 1.
    pub fn raw(msg: impl Into<String>) -> CliError {
        CliError {
            lines: vec![msg.into()],
            code: 1,
        }
    }

    /// getopt's complaint about the command line, as Slurm prints it (exit status 255).
    pub fn usage(prog: &str, e: &OptError) -> CliError {
        CliError {
            lines: vec![
                format!("{prog}: {e}"),
                format!("Try \"{prog} --help\" for more information"),
            ],
            code: 255,
        }
    }

    pub fn with_code(mut self, code: u8) -> CliError {
        self.code = code;
        self
    }

    /// Prints the lines and gives the exit status.
    pub fn report(&self) -> ExitCode {
        for line in &self.lines {
            eprintln!("{line}");
        }
        ExitCode::from(self.code)
    }
}

/// The controller, or Slurm's words for not reaching it.
pub async fn connect() -> Result<Ctld, String> {
    crate::client::connect()
        .await
        .map_err(|_| CONNECT_FAILURE.to_string())
}

/// A failed call's message, as Slurm would word it.
pub fn status_text(s: &tonic::Status) -> String {
    match s.code() {
        tonic::Code::Unavailable => CONNECT_FAILURE.into(),
        _ if s.message().is_empty() => format!("{:?}", s.code()),
        _ => s.message().to_string(),
    }
}

const SIGNALS: &[(&str, i32)] = &[
    ("HUP", libc::SIGHUP),
    ("INT", libc::SIGINT),
    ("QUIT", libc::SIGQUIT),
    ("ILL", libc::SIGILL),
    ("TRAP", libc::SIGTRAP),
    ("ABRT", libc::SIGABRT),
    ("BUS", libc::SIGBUS),
    ("FPE", libc::SIGFPE),
    ("KILL", libc::SIGKILL),
    ("USR1", libc::SIGUSR1),
    ("SEGV", libc::SIGSEGV),
    ("USR2", libc::SIGUSR2),
    ("PIPE", libc::SIGPIPE),
    ("ALRM", libc::SIGALRM),
    ("TERM", libc::SIGTERM),
    ("CHLD", libc::SIGCHLD),
    ("CONT", libc::SIGCONT),
    ("STOP", libc::SIGSTOP),
    ("TSTP", libc::SIGTSTP),
    ("TTIN", libc::SIGTTIN),
    ("TTOU", libc::SIGTTOU),
    ("URG", libc::SIGURG),
    ("XCPU", libc::SIGXCPU),
    ("XFSZ", libc::SIGXFSZ),
    ("VTALRM", libc::SIGVTALRM),
    ("PROF", libc::SIGPROF),
    ("WINCH", libc::SIGWINCH),
    ("IO", libc::SIGIO),
    ("PWR", libc::SIGPWR),
    ("SYS", libc::SIGSYS),
];

/// A signal by name (`USR2`, `SIGUSR2`, any case) or number (1-64).
pub fn parse_signal(text: &str) -> Option<i32> {
    let t = text.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse::<i32>().ok().filter(|n| (1..=64).contains(n));
    }
    let up = t.to_ascii_uppercase();
    let name = up.strip_prefix("SIG").unwrap_or(&up);
    SIGNALS.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// A job id argument: one or more ids separated by commas outside brackets (`12,13_[1,3]`
/// is `12` and `13_[1,3]`), in `model::job_id`'s forms. An empty argument or item is
/// refused like any other bad id.
pub fn job_ids(arg: &str) -> Result<Vec<JobIdSpec>, JobIdError> {
    job_id::split_list(arg)
        .into_iter()
        .map(JobIdSpec::parse)
        .collect()
}

/// Splits a line into words at blanks; double or single quotes group. With `directive`
/// (a `#SBATCH` line), a backslash also escapes the next character and an unquoted `#`
/// starts a comment.
pub fn split_words(line: &str, directive: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (c, quote) {
            ('\\', _) if directive => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                    in_word = true;
                }
            }
            (q, Some(open)) if q == open => quote = None,
            (c, Some(_)) => cur.push(c),
            ('"' | '\'', None) => {
                quote = Some(c);
                in_word = true;
            }
            ('#', None) if directive => break,
            (c, None) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (c, None) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

/// This machine's host name.
pub fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "localhost".into())
}

/// Polls the controller until the job (every task of an array) is final; gives the final
/// records. A job that vanished gives what was last seen.
pub async fn wait_for_job(client: &mut Ctld, job_id: u32) -> Result<Vec<v1::JobInfo>, String> {
    let mut delay_ms = 20u64;
    let mut last = Vec::new();
    loop {
        let req = v1::ListJobsRequest {
            filter: Some(v1::JobFilter {
                job_ids: vec![job_id.to_string()],
                ..Default::default()
            }),
            include_finished: true,
            ..Default::default()
        };
        match client.list_jobs(req).await {
            Ok(reply) => {
                let jobs = reply.into_inner().jobs;
                if jobs.is_empty() {
                    return Ok(last);
                }
                if jobs.iter().all(|j| job_state(j).is_final()) {
                    return Ok(jobs);
                }
                last = jobs;
            }
            Err(s) if s.code() == tonic::Code::Unavailable => {}
            Err(s) => return Err(status_text(&s)),
        }
        tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
        delay_ms = (delay_ms * 2).min(1000);
    }
}

/// `sbatch --wait`'s exit status: the highest over the job's records of the script's exit
/// code, 1 for one killed by a signal, and 1 for one that ended other than COMPLETED
/// without an exit code (cancelled while pending, node failure).
pub fn wait_exit_code(jobs: &[v1::JobInfo]) -> i32 {
    jobs.iter()
        .map(|j| {
            if j.exit_signal != 0 {
                1
            } else if j.exit_code != 0 {
                j.exit_code
            } else if job_state(j) == model::JobState::Completed {
                0
            } else {
                1
            }
        })
        .max()
        .unwrap_or(1)
}

/// The last path component.
pub fn basename(path: &str) -> &str {
    path.trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_by_name_and_number() {
        assert_eq!(parse_signal("USR2"), Some(libc::SIGUSR2));
        assert_eq!(parse_signal("SIGUSR2"), Some(libc::SIGUSR2));
        assert_eq!(parse_signal("sigterm"), Some(libc::SIGTERM));
        assert_eq!(parse_signal("9"), Some(9));
        assert_eq!(parse_signal("0"), None);
        assert_eq!(parse_signal("65"), None);
        assert_eq!(parse_signal("FOO"), None);
        assert_eq!(parse_signal(""), None);
    }

    #[test]
    fn job_id_arguments() {
        let shown = |arg: &str| -> Vec<String> {
            job_ids(arg)
                .unwrap()
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        assert_eq!(shown("12,13_3"), ["12", "13_3"]);
        assert_eq!(shown("12_[1,3],14"), ["12_[1,3]", "14"]);
        assert_eq!(shown("12_*"), ["12_*"]);
        for bad in ["", "12,", "12,,13", "12x"] {
            assert!(job_ids(bad).is_err(), "{bad}");
        }
    }

    fn info(state: v1::JobState, code: i32, sig: i32) -> v1::JobInfo {
        v1::JobInfo {
            state: state as i32,
            exit_code: code,
            exit_signal: sig,
            ..Default::default()
        }
    }

    #[test]
    fn wait_exit_codes_follow_sbatch() {
        assert_eq!(wait_exit_code(&[info(v1::JobState::Completed, 0, 0)]), 0);
        assert_eq!(wait_exit_code(&[info(v1::JobState::Failed, 7, 0)]), 7);
        assert_eq!(wait_exit_code(&[info(v1::JobState::Cancelled, 0, 9)]), 1);
        assert_eq!(wait_exit_code(&[info(v1::JobState::Cancelled, 0, 0)]), 1);
        let array = [
            info(v1::JobState::Completed, 0, 0),
            info(v1::JobState::Failed, 1, 0),
            info(v1::JobState::Failed, 2, 0),
        ];
        assert_eq!(wait_exit_code(&array), 2);
    }

    #[test]
    fn words_plain_and_directive() {
        let line = r#"a "b c" 'd e'f \x # g"#;
        assert_eq!(
            split_words(line, false),
            ["a", "b c", "d ef", "\\x", "#", "g"]
        );
        assert_eq!(split_words(line, true), ["a", "b c", "d ef", "x"]);
        assert_eq!(split_words("  ", false), Vec::<String>::new());
        assert_eq!(split_words("''", false), [""]);
    }

    #[test]
    fn basenames() {
        assert_eq!(basename("/a/b/run.sh"), "run.sh");
        assert_eq!(basename("run.sh"), "run.sh");
    }
}
