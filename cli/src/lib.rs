//! The command-line front end: Slurm-compatible commands over the controller's gRPC API.
//!
//! Each command lives in `commands/<name>.rs` and exposes `pub fn run(args: &[String]) ->
//! ExitCode`, where `args` holds the arguments after the command name. They share the
//! connection and config discovery of `client`.

/// `eprintln!` that never panics: srun and salloc go on (and end their step and their
/// allocation) when their terminal is gone, where a failed write to it would panic.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `eprint!` that never panics (`say!`).
#[macro_export]
macro_rules! say_raw {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}

pub mod args;
pub mod calls;
pub mod client;
pub mod commands;
pub mod connection;
pub mod exit;
pub mod fields;
pub mod format;
pub mod jobs;
pub mod nodes;
pub mod opts;
pub mod signals;
#[cfg(test)]
pub mod testkit;
pub mod times;
pub mod users;
pub mod words;

use std::process::ExitCode;

/// The commands this binary answers to.
pub const COMMANDS: &[&str] = &[
    "sbatch", "squeue", "sinfo", "scancel", "scontrol", "sacct", "sacctmgr", "sreport", "srun",
    "salloc", "sprio", "sshare", "sstat", "sbcast", "sattach", "sdiag", "strigger",
];

/// Dispatches on the program name (argv[0]) or the first argument.
pub fn run(args: Vec<String>) -> ExitCode {
    let program = args
        .first()
        .map(|a| a.rsplit('/').next().unwrap_or(a).to_string())
        .unwrap_or_default();
    if COMMANDS.contains(&program.as_str()) {
        return commands::dispatch(&program, &args[1..]);
    }
    match args.get(1).map(String::as_str) {
        Some(cmd) if COMMANDS.contains(&cmd) || commands::EXTRA.contains(&cmd) => {
            commands::dispatch(cmd, &args[2..])
        }
        Some("-h" | "--help") | None => {
            print!("{}", help());
            ExitCode::SUCCESS
        }
        Some("-V" | "--version") => {
            println!(
                "drover {} (Slurm {})",
                env!("CARGO_PKG_VERSION"),
                model::config::SLURM_VERSION
            );
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("drover: unknown command `{other}`");
            ExitCode::from(2)
        }
    }
}

/// Every command of `drover`, one line each: its own first, then Slurm's.
const SUMMARIES: &[(&str, &str)] = &[
    (
        "up",
        "start a local cluster (controller and node daemons) on this machine",
    ),
    (
        "why",
        "explain why a pending job does not start, or what a running one borrows",
    ),
    (
        "keygen",
        "make a new cluster key (the secret daemons sign with)",
    ),
    ("export", "write job records as CSV or JSON lines"),
    ("sbatch", "submit a batch script"),
    ("squeue", "list pending and running jobs"),
    ("sinfo", "list partitions and nodes"),
    ("scancel", "cancel or signal jobs"),
    (
        "scontrol",
        "show and change jobs, nodes, partitions, reservations; show the config",
    ),
    ("sacct", "list jobs, finished ones too"),
    ("sacctmgr", "view and change accounts, users and QOS"),
    (
        "sreport",
        "report usage per cluster, account and user, in TRES-minutes",
    ),
    ("srun", "run a command as a job step"),
    ("salloc", "take an allocation and run a command in it"),
    ("sprio", "show the priority factors of pending jobs"),
    ("sshare", "show fair-share shares and usage"),
    ("sstat", "show what running job steps have used so far"),
    ("sbcast", "copy a file to the nodes of a running job"),
    ("sattach", "join a running job step's input and output"),
    (
        "sdiag",
        "show the controller's job and scheduling statistics",
    ),
    (
        "strigger",
        "set, show and clear event triggers (not kept by this controller)",
    ),
];

/// `drover --help`.
fn help() -> String {
    let mut out = String::from(
        "usage: drover <command> [args...]\n\
         \x20      drover --version\n\
         A link to drover named after a Slurm command (sbatch, squeue, ...) is that \
         command.\n\ncommands:\n",
    );
    for (name, summary) in SUMMARIES {
        out.push_str(&format!("  {name:<9} {summary}\n"));
    }
    out.push_str("\n`drover <command> --help` shows the command's options.\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_every_command_once() {
        let text = help();
        for name in COMMANDS.iter().chain(commands::EXTRA) {
            let lines = text
                .lines()
                .filter(|l| l.trim_start().starts_with(&format!("{name} ")))
                .count();
            assert_eq!(lines, 1, "{name}:\n{text}");
        }
        assert_eq!(SUMMARIES.len(), COMMANDS.len() + commands::EXTRA.len());
    }
}
