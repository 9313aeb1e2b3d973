//! `drover`: one binary for every command. Invoked through a symlink named like a Slurm
//! command (`sbatch`, `squeue`, ...) it behaves as that command; `drover sbatch ...`
//! does the same. `drover up` starts a local cluster.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    cli::run(args)
}
