//! One module per command.

pub mod export;
pub mod keygen;
pub mod reservation;
pub mod sacct;
pub mod sacctmgr;
pub mod salloc;
pub mod sattach;
pub mod sbatch;
pub mod sbcast;
pub mod scancel;
pub mod scontrol;
pub mod sdiag;
pub mod sinfo;
pub mod sprio;
pub mod squeue;
pub mod sreport;
pub mod srun;
pub mod sshare;
pub mod sstat;
pub mod step;
pub mod strigger;
pub mod submit_opts;
pub mod up;
pub mod wait;
pub mod why;

use std::process::ExitCode;

/// Commands that only `drover` itself answers to.
pub const EXTRA: &[&str] = &["up", "why", "keygen", "export"];

pub fn dispatch(command: &str, args: &[String]) -> ExitCode {
    match command {
        "sbatch" => sbatch::run(args),
        "squeue" => squeue::run(args),
        "sinfo" => sinfo::run(args),
        "sprio" => sprio::run(args),
        "sshare" => sshare::run(args),
        "sstat" => sstat::run(args),
        "scancel" => scancel::run(args),
        "scontrol" => scontrol::run(args),
        "sacct" => sacct::run(args),
        "sacctmgr" => sacctmgr::run(args),
        "sreport" => sreport::run(args),
        "srun" => srun::run(args),
        "salloc" => salloc::run(args),
        "sbcast" => sbcast::run(args),
        "sattach" => sattach::run(args),
        "sdiag" => sdiag::run(args),
        "strigger" => strigger::run(args),
        "up" => up::run(args),
        "why" => why::run(args),
        "keygen" => keygen::run(args),
        "export" => export::run(args),
        _ => {
            eprintln!("drover: unknown command `{command}`");
            ExitCode::from(2)
        }
    }
}
