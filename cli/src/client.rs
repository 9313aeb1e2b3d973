//! Finding the controller and talking to it.
//!
//! The config file is found, in order, at `$DROVER_CONF`, `<dir of argv[0]>/../drover.toml`
//! (the layout `drover up` creates), or `/etc/drover/drover.toml`; without one, the
//! embedded defaults apply. `$DROVER_CTLD_ADDR` overrides the controller address.

use anyhow::{Context, Result};
use model::Config;
use proto::v1::ctld_client::CtldClient;
use std::path::PathBuf;

/// Candidate config paths, most specific first.
fn config_candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(p) = std::env::var("DROVER_CONF") {
        out.push(PathBuf::from(p));
    }
    if let Some(argv0) = std::env::args_os().next() {
        let argv0 = PathBuf::from(argv0);
        let resolved = if argv0.components().count() > 1 {
            Some(argv0)
        } else {
            // Found through PATH: look for it there without resolving symlinks.
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(&argv0))
                    .find(|p| p.exists())
            })
        };
        if let Some(dir) = resolved.as_ref().and_then(|p| p.parent()) {
            out.push(dir.join("..").join("drover.toml"));
        }
    }
    out.push(PathBuf::from("/etc/drover/drover.toml"));
    out
}

/// Loads the cluster config the command should use (read once per process).
pub fn load_config() -> Result<Config> {
    static LOADED: std::sync::OnceLock<Config> = std::sync::OnceLock::new();
    if let Some(config) = LOADED.get() {
        return Ok(config.clone());
    }
    let config = read_config()?;
    Ok(LOADED.get_or_init(|| config).clone())
}

fn read_config() -> Result<Config> {
    for path in config_candidates() {
        if path.is_file() {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            return Ok(Config::parse(&text, &path.display().to_string())?);
        }
    }
    Ok(Config::parse("", "<embedded>")?)
}

/// The controller's address.
pub fn ctld_addr(config: &Config) -> String {
    std::env::var("DROVER_CTLD_ADDR").unwrap_or_else(|_| config.controller.addr.clone())
}

/// A single-threaded runtime with timers: CLI calls are short and sequential, and the
/// connection's socket blocks (`crate::connection`), so no I/O driver is needed. With
/// one, a call took over a millisecond longer in an A/B run (see `docs/benchmarks.md`).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("tokio runtime")
}

/// A single-threaded runtime that also waits on child processes and signals (`srun`).
pub fn runtime_with_io() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// A client of the controller's API over one connection of its own
/// (`crate::connection`): lighter than tonic's `Channel`, which reconnects, balances and
/// queues calls through a worker task, when a command is a new process for one or two
/// calls.
pub type Ctld = CtldClient<auth::Signed<crate::connection::Connection>>;

/// Where this command's credentials come from: the host's credential agent, which
/// vouches for the uid and gid the kernel says this process has.
pub fn signer() -> Result<std::sync::Arc<auth::Signer>, ConnectError> {
    static SIGNER: std::sync::OnceLock<std::sync::Arc<auth::Signer>> = std::sync::OnceLock::new();
    if let Some(s) = SIGNER.get() {
        return Ok(s.clone());
    }
    let config = load_config().map_err(ConnectError::Config)?;
    let signer = std::sync::Arc::new(auth::Signer::Agent {
        socket: PathBuf::from(&config.auth.socket),
    });
    Ok(SIGNER.get_or_init(|| signer).clone())
}

/// How this command dials the controller and node daemons (`[tls]`): `None` for plain
/// HTTP/2.
pub fn tls() -> Result<Option<std::sync::Arc<auth::tls::Tls>>, ConnectError> {
    type Loaded = Option<std::sync::Arc<auth::tls::Tls>>;
    static TLS: std::sync::OnceLock<Loaded> = std::sync::OnceLock::new();
    if let Some(t) = TLS.get() {
        return Ok(t.clone());
    }
    let config = load_config().map_err(ConnectError::Config)?;
    let tls = auth::tls::Tls::for_client(&config.tls)
        .map_err(|e| ConnectError::Config(e.into()))?
        .map(std::sync::Arc::new);
    Ok(TLS.get_or_init(|| tls).clone())
}

/// Why a command has no connection to the controller.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The config cannot be read or is invalid (its message names `file:line`), or the
    /// controller's address is no address.
    #[error("{0:#}")]
    Config(anyhow::Error),
    /// Nothing at the controller's address accepted the connection.
    #[error("{0:#}")]
    Unreachable(anyhow::Error),
}

/// Connects to the controller, waiting at most 5 s; a call then fails once the
/// controller is silent for 60 s (`connection::Deadlines::COMMAND`).
pub async fn connect() -> Result<Ctld, ConnectError> {
    let config = load_config().map_err(ConnectError::Config)?;
    let addr = ctld_addr(&config);
    let tls = tls()?;
    let origin: http::Uri = format!("{}://{addr}", auth::tls::Tls::scheme(tls.as_deref()))
        .parse()
        .with_context(|| format!("bad controller address {addr:?}"))
        .map_err(ConnectError::Config)?;
    let conn = crate::connection::Connection::open(
        &addr,
        crate::connection::Deadlines::COMMAND,
        tls.as_deref(),
    )
    .await
    .with_context(|| format!("unable to contact the controller at {addr}"))
    .map_err(ConnectError::Unreachable)?;
    let conn = auth::Signed::new(conn, signer()?);
    Ok(CtldClient::with_origin(conn, origin).max_decoding_message_size(256 << 20))
}

/// The caller's user name and ids.
pub fn current_user() -> (String, u32, u32) {
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    let name = std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|text| passwd_name(&text, uid.as_raw()))
        .or_else(|| {
            nix::unistd::User::from_uid(uid)
                .ok()
                .flatten()
                .map(|u| u.name)
        })
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| uid.to_string());
    (name, uid.as_raw(), gid.as_raw())
}

/// The name of `uid` in a passwd file. The local file is read first, as the usual
/// `passwd: files ...` of nsswitch.conf does: parsing it costs a submit less than the
/// name service's setup. Users from a directory service (LDAP, sssd) are found
/// through the name service after it.
fn passwd_name(text: &str, uid: u32) -> Option<String> {
    let uid = uid.to_string();
    text.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let entry_uid = fields.nth(1)?;
        (entry_uid == uid && !name.is_empty() && !name.starts_with(['+', '-', '#']))
            .then(|| name.to_string())
    })
}

/// The cluster's name from the config; empty without one.
pub fn cluster_name() -> String {
    load_config().map(|c| c.cluster_name).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passwd_file_names_the_uid() {
        let text = "root:x:0:0:root:/root:/bin/bash\n\
                    # a comment:x:5:5\n\
                    +nis:x:7:7::/:\n\
                    alice:x:1000:1000:Alice:/home/alice:/bin/sh\n";
        assert_eq!(passwd_name(text, 0).as_deref(), Some("root"));
        assert_eq!(passwd_name(text, 1000).as_deref(), Some("alice"));
        assert_eq!(passwd_name(text, 7), None);
        assert_eq!(passwd_name(text, 5), None);
        assert_eq!(passwd_name(text, 42), None);
        assert_eq!(passwd_name("broken-line\n", 0), None);
    }
}
