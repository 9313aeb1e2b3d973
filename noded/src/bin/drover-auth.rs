//! drover-auth: the host's credential agent alone, for a login host that runs neither
//! the controller nor a node daemon (as a Slurm login node runs munge without slurmd).
//!
//! `drover-auth --config FILE [--host NAME]` reads the cluster config as drover-noded
//! does, loads the cluster key from `[auth] key_file` (the controller's, copied to this
//! host) and serves `auth::agent` at `[auth] socket`: each caller gets a credential for
//! the uid and gid the kernel names (`Issuer::User`, valid `[auth] credential_ttl_s`
//! seconds), which the controller takes exactly as one from a node daemon's agent. It
//! runs until SIGTERM or SIGINT. If a live agent already serves the socket (a daemon of
//! this host, or another drover-auth), it exits with an error rather than stand by.

use anyhow::Context;
use clap::Parser;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tracing::info;
use tracing_subscriber::EnvFilter;

#[derive(Debug, Parser)]
#[command(
    name = "drover-auth",
    version,
    about = "Drover credential agent for hosts that run no daemon (login hosts)"
)]
struct Cli {
    /// The cluster config (TOML).
    #[arg(long, default_value = "/etc/drover/drover.toml")]
    config: PathBuf,
    /// The host name credentials carry; default: the short host name.
    #[arg(long)]
    host: Option<String>,
}

fn main() {
    let cli = Cli::parse();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let ran = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")
        .and_then(|runtime| runtime.block_on(run(cli)));
    if let Err(e) = ran {
        // One line: the cause chain joined, as `{:#}` writes it.
        eprintln!("drover-auth: {e:#}");
        std::process::exit(1);
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let config_label = cli.config.display().to_string();
    let text = std::fs::read_to_string(&cli.config)
        .with_context(|| format!("reading config {config_label}"))?;
    let config = model::Config::parse(&text, &config_label)?;
    let host = match cli.host {
        Some(host) => host,
        None => noded::host::short_hostname().context("finding the host name (pass --host)")?,
    };
    let key = Arc::new(
        auth::Key::load(Path::new(&config.auth.key_file)).map_err(|e| {
            anyhow::anyhow!("{e} (the controller's cluster key, copied to this host)")
        })?,
    );
    let socket = Path::new(&config.auth.socket);
    let ttl_s = i64::from(config.auth.credential_ttl_s);
    let listener = auth::agent::bind(socket)
        .with_context(|| format!("cannot serve the credential agent at {}", socket.display()))?
        .with_context(|| {
            format!(
                "a credential agent already serves {} (a daemon of this host, or another \
                 drover-auth)",
                socket.display()
            )
        })?;
    info!(socket = %socket.display(), host = %host, ttl_s, "credential agent serving");
    tokio::select! {
        () = auth::agent::serve(listener, key, host, ttl_s) => {}
        () = noded::host::stop_requested() => {}
    }
    info!(socket = %socket.display(), "credential agent stopped");
    Ok(())
}
