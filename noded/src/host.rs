//! What the daemons of a node or login host ask of the system: the host's short name
//! (a node's name by default) and the signal that stops them.

use tracing::{info, warn};

/// The host name up to its first dot: `gpu7` of `gpu7.cluster.example`.
pub fn short_hostname() -> nix::Result<String> {
    let host = nix::unistd::gethostname()?;
    let host = host.to_string_lossy();
    Ok(host.split('.').next().unwrap_or_default().to_string())
}

/// Returns once SIGTERM or SIGINT arrives (only SIGINT where SIGTERM cannot be
/// watched).
pub async fn stop_requested() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(e) => {
            warn!(error = %e, "cannot watch SIGTERM");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    info!("shutting down");
}
