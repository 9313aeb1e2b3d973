//! `scancel` (not yet written).

use std::process::ExitCode;

pub fn run(_args: &[String]) -> ExitCode {
    eprintln!("scancel: not implemented yet");
    ExitCode::from(1)
}
