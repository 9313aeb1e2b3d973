//! drover-noded: the node daemon. `drover-noded --config FILE --name NODE` serves the
//! controller's `NodeAgent` calls and registers with it; `drover-noded supervise DIR`
//! (hidden) is the per-job supervisor the daemon starts.

mod daemon;

use clap::{Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use tracing_subscriber::EnvFilter;

#[derive(Debug, Parser)]
#[command(
    name = "drover-noded",
    version,
    about = "Drover node daemon: runs batch jobs for the controller"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// The cluster config (TOML).
    #[arg(long, default_value = "/etc/drover/drover.toml")]
    config: PathBuf,
    /// This node's name in the config; default: the short host name.
    #[arg(long)]
    name: Option<String>,
    /// Address of the NodeAgent service. With an unspecified IP, the controller is told
    /// `<name>:<port>`.
    #[arg(long, default_value = "0.0.0.0:6918")]
    listen: SocketAddr,
    /// Job spool directory; default: `<state_dir>/noded-<name>`.
    #[arg(long)]
    spool: Option<PathBuf>,
    /// The controller's host:port; default: `controller.addr` of the config.
    #[arg(long)]
    ctld_addr: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Supervise one batch job (started by the daemon).
    #[command(hide = true)]
    Supervise { dir: PathBuf },
    /// Print what this host offers, as found (like `slurmd -C`): CPUs, memory, and the
    /// GPUs NVML lists, one line each.
    Inventory,
}

fn init_logging(ansi: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .init();
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Inventory) => {
            init_logging(false);
            print!("{}", daemon::inventory_text(cli.name)?);
            Ok(())
        }
        Some(Command::Supervise { dir }) => {
            // Single-threaded on purpose: no runtime, no threads (see `supervisor`).
            init_logging(false);
            std::process::exit(noded::supervisor::main(&dir));
        }
        None => {
            init_logging(std::io::IsTerminal::is_terminal(&std::io::stderr()));
            let options = daemon::Options {
                config: cli.config,
                name: cli.name,
                listen: cli.listen,
                spool: cli.spool,
                ctld_addr: cli.ctld_addr,
            };
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            runtime.block_on(daemon::run(options))
        }
    }
}
