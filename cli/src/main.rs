//! `drover`: one binary for every command. Invoked through a symlink named like a Slurm
//! command (`sbatch`, `squeue`, ...) it behaves as that command; `drover sbatch ...`
//! does the same. `drover up` starts a local cluster.
#![no_main]

use std::process::ExitCode;

/// The process entry, without the setup of Rust's own `main`: every command is a new
/// process, and that setup (finding the main thread's stack in `/proc/self/maps`, an
/// alternate signal stack for overflow reports) costs a short call more than it gives.
/// What of it matters is kept: a write to a closed pipe or socket is an error to report,
/// not a SIGPIPE that kills the command.
#[unsafe(no_mangle)]
extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    // SAFETY: setting a signal's disposition to ignore has no preconditions.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let args: Vec<String> = std::env::args().collect();
    let code = cli::run(args);
    // `ExitCode` keeps its number to itself on stable Rust: find it among the 256.
    let status = (0..=u8::MAX).find(|&n| ExitCode::from(n) == code);
    // `exit` flushes Rust's stdout, which returning to the C runtime would not.
    std::process::exit(status.map_or(1, i32::from))
}
