//! `drover keygen [FILE]`: makes a new cluster key, the secret the controller, the node
//! daemons and their credential agents sign with (Slurm's sites make a munge key with
//! `mungekey`). It is written readable by its owner only (0600); copy it to every node
//! the same way. By default it goes where the config's `[auth] key_file` says.

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: drover keygen [FILE]\n\nWrites a new random cluster key to FILE (default: the config's [auth] key_file),\nreadable by its owner only. An existing key is never overwritten.\n";

pub fn run(args: &[String]) -> ExitCode {
    if matches!(args, [a] if a == "-h" || a == "--help") {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let path = match args {
        [file] => PathBuf::from(file),
        [] => match crate::client::load_config() {
            Ok(c) => PathBuf::from(c.auth.key_file),
            Err(e) => {
                eprintln!("drover keygen: error: {e:#}");
                return ExitCode::from(1);
            }
        },
        _ => {
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match auth::Key::generate(&path) {
        Ok(_) => {
            println!(
                "drover keygen: wrote a new cluster key to {}",
                path.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("drover keygen: error: {e}");
            ExitCode::from(1)
        }
    }
}
