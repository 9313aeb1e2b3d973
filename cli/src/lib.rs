//! The command-line front end: Slurm-compatible commands over the controller's gRPC API.
//!
//! Each command lives in `commands/<name>.rs` and exposes `pub fn run(args: &[String]) ->
//! ExitCode`, where `args` holds the arguments after the command name. They share the
//! connection and config discovery of `client`.

pub mod args;
pub mod calls;
pub mod client;
pub mod commands;
pub mod exit;
pub mod fields;
pub mod format;
pub mod hpack;
pub mod http2;
pub mod jobs;
pub mod nodes;
pub mod opts;
pub mod signals;
pub mod times;
pub mod users;
pub mod words;

use std::process::ExitCode;

/// The commands this binary answers to.
pub const COMMANDS: &[&str] = &[
    "sbatch", "squeue", "sinfo", "scancel", "scontrol", "sacct", "srun", "sprio", "sshare",
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
            println!(
                "usage: drover <command> [args...]\n\ncommands: up, {}",
                COMMANDS.join(", ")
            );
            ExitCode::SUCCESS
        }
        Some(other) => {
            eprintln!("drover: unknown command `{other}`");
            ExitCode::from(2)
        }
    }
}
