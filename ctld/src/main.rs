//! `drover-ctld`: starts the controller with a config file.

use anyhow::Context;
use clap::Parser;
use std::sync::Arc;

/// mimalloc, not glibc's malloc: after storms of submits glibc's heap is fragmented, and
/// every later request (a connection's buffers, a job's records) pays for searching it.
/// In the benchmark's sequence this makes submits and listings faster; `docs/benchmarks.md`
/// has the figures.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` (its place in mimalloc's `mi_option_e`): how long freed pages
/// wait before they go back to the system. mimalloc's default, a second, left a storm's
/// garbage in the controller's memory: in the bench, up to 0.7 KB more per pending job.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

#[derive(Parser)]
#[command(name = "drover-ctld", about = "Drover's controller")]
struct Args {
    /// The cluster config (TOML).
    #[arg(
        short,
        long,
        env = "DROVER_CONF",
        default_value = "/etc/drover/drover.toml"
    )]
    config: String,
    /// Overrides the config's state_dir.
    #[arg(long)]
    state_dir: Option<String>,
    /// Overrides the config's controller address (host:port).
    #[arg(long)]
    listen: Option<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // SAFETY: sets one of mimalloc's options, which it reads on each purge; no memory
    // is passed.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    // Fault injection for tests: the points `FAILPOINTS` names (none by default).
    let _faults = fail::FailScenario::setup();
    let args = Args::parse();
    // Named as an absolute path, as Slurm names its config file.
    let path = std::fs::canonicalize(&args.config)
        .map_or_else(|_| args.config.clone(), |p| p.display().to_string());
    let read = move || -> anyhow::Result<model::Config> {
        let text = std::fs::read_to_string(&args.config)
            .with_context(|| format!("cannot read {}", args.config))?;
        let mut config = model::Config::parse(&text, &args.config)?;
        if let Some(dir) = &args.state_dir {
            config.state_dir = dir.clone();
        }
        if let Some(addr) = &args.listen {
            config.controller.addr = addr.clone();
        }
        Ok(config)
    };
    let config = read()?;
    // `scontrol reconfigure` reads the file again, with the same overrides.
    let file = ctld::service::ConfigFile {
        path,
        read: Arc::new(move || read().map_err(|e| format!("{e:#}"))),
    };
    ctld::run(config, Some(file)).await
}
