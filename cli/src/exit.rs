//! How a command stops before doing its work, or fails: what it prints on stdout and
//! stderr and its exit status, with Slurm's wording (`prog: error: ...`, getopt's
//! complaint and the `--help` hint). Every command returns one `Exit` for these.

use std::process::ExitCode;

/// What a command prints and returns when it stops early: help, version, or an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    pub code: u8,
    pub stdout: String,
    pub stderr: String,
}

impl Exit {
    /// Text for stdout, exit status 0 (`--help`, `--version`).
    pub fn info(text: impl Into<String>) -> Exit {
        Exit {
            code: 0,
            stdout: text.into(),
            stderr: String::new(),
        }
    }

    /// A bad option, reported as getopt does, then Slurm's hint; exit status 1.
    pub fn usage(command: &str, message: impl std::fmt::Display) -> Exit {
        Exit::raw(format!(
            "{command}: {message}\nTry \"{command} --help\" for more information"
        ))
    }

    /// `command: error: message`; exit status 1.
    pub fn error(command: &str, message: impl std::fmt::Display) -> Exit {
        Exit::raw(format!("{command}: error: {message}"))
    }

    /// Lines printed on stderr as they are; exit status 1.
    pub fn raw(lines: impl Into<String>) -> Exit {
        let mut stderr = lines.into();
        stderr.push('\n');
        Exit {
            code: 1,
            stdout: String::new(),
            stderr,
        }
    }

    pub fn with_code(mut self, code: u8) -> Exit {
        self.code = code;
        self
    }

    /// The stderr lines.
    pub fn lines(&self) -> Vec<String> {
        self.stderr.lines().map(String::from).collect()
    }

    /// Prints the texts and gives the exit status.
    pub fn finish(self) -> ExitCode {
        print!("{}", self.stdout);
        eprint!("{}", self.stderr);
        ExitCode::from(self.code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wording_and_status() {
        let e = Exit::usage("sbatch", "unrecognized option '--x'").with_code(255);
        assert_eq!(
            e.lines(),
            [
                "sbatch: unrecognized option '--x'",
                "Try \"sbatch --help\" for more information"
            ]
        );
        assert_eq!(e.code, 255);
        assert_eq!(Exit::error("sacct", "bad").stderr, "sacct: error: bad\n");
        assert_eq!((Exit::info("help\n").code, Exit::raw("x").code), (0, 1));
    }
}
