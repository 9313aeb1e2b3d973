//! The host's credential agent: a Unix socket anyone may connect to. For each
//! connection it reads the peer's uid and gid from the kernel (SO_PEERCRED), writes
//! back a credential for exactly them, and closes. A daemon that holds the cluster key
//! serves it (`serve`); a command asks it (`fetch`).

use crate::{AuthError, Issuer, Key};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// How long a command waits for the agent.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest credential a command reads.
const MAX_CREDENTIAL_BYTES: u64 = 4096;

/// Binds the agent's socket at `path`, unless a live agent already serves it (another
/// daemon on this host): then returns None. A socket file nobody answers on is
/// replaced. The socket is open to every user (mode 0666): what it answers depends
/// only on who the kernel says is asking.
pub fn bind(path: &Path) -> std::io::Result<Option<tokio::net::UnixListener>> {
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Ok(None);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let _ = std::fs::remove_file(path);
    let listener = tokio::net::UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))?;
    Ok(Some(listener))
}

/// Serves the host's credential agent at `path` on the current runtime, unless another
/// daemon of this host does already; says which in one log line.
pub fn start(path: &Path, key: &Arc<Key>, host: &str, ttl_s: i64) {
    match bind(path) {
        Ok(Some(listener)) => {
            tracing::info!(socket = %path.display(), "credential agent serving");
            tokio::spawn(serve(listener, key.clone(), host.to_string(), ttl_s));
        }
        Ok(None) => {
            tracing::info!(socket = %path.display(), "credential agent served by another daemon");
        }
        Err(e) => tracing::warn!(
            socket = %path.display(),
            error = %e,
            "no credential agent: commands on this host cannot authenticate"
        ),
    }
}

/// Answers every connection with a credential for its peer, signed by `key` as from
/// `host`, valid `ttl_s` seconds. Runs until the listener fails.
pub async fn serve(listener: tokio::net::UnixListener, key: Arc<Key>, host: String, ttl_s: i64) {
    use tokio::io::AsyncWriteExt;
    loop {
        let (mut stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "credential agent: accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let issued = stream
            .peer_cred()
            .map_err(|e| e.to_string())
            .and_then(|peer| {
                key.issue(
                    Issuer::User,
                    peer.uid(),
                    peer.gid(),
                    &host,
                    crate::unix_now(),
                    ttl_s,
                )
                .map_err(|e| e.to_string())
            });
        let cred = match issued {
            Ok(cred) => cred,
            Err(e) => {
                tracing::warn!(error = %e, "credential agent: no credential for a caller");
                continue;
            }
        };
        tokio::spawn(async move {
            let _ = tokio::time::timeout(FETCH_TIMEOUT, stream.write_all(&cred)).await;
        });
    }
}

/// A credential for the calling process from the agent at `socket`.
pub fn fetch(socket: &Path) -> Result<Vec<u8>, AuthError> {
    let fail = |why: String| AuthError::NoAgent {
        path: socket.display().to_string(),
        why,
    };
    let stream =
        std::os::unix::net::UnixStream::connect(socket).map_err(|e| fail(e.to_string()))?;
    stream
        .set_read_timeout(Some(FETCH_TIMEOUT))
        .map_err(|e| fail(e.to_string()))?;
    let mut cred = Vec::new();
    stream
        .take(MAX_CREDENTIAL_BYTES)
        .read_to_end(&mut cred)
        .map_err(|e| fail(e.to_string()))?;
    if cred.is_empty() {
        return Err(fail("no answer".into()));
    }
    Ok(cred)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Verifier;

    #[tokio::test]
    async fn the_agent_vouches_for_the_uid_the_kernel_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.sock");
        let key = Key::from_bytes(&[7; 32]).unwrap();
        let listener = bind(&path).unwrap().expect("nobody serves it yet");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o666);
        tokio::spawn(serve(listener, Arc::new(key.clone()), "login1".into(), 60));
        // A second daemon on the host leaves it to the first.
        assert!(bind(&path).unwrap().is_none());
        let fetched = {
            let path = path.clone();
            tokio::task::spawn_blocking(move || fetch(&path))
                .await
                .unwrap()
        };
        let id = Verifier::new(key)
            .verify(&fetched.unwrap(), crate::unix_now())
            .unwrap();
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        assert_eq!(
            (id.issuer, id.uid, id.gid, id.host.as_str()),
            (Issuer::User, uid, gid, "login1")
        );
    }

    #[test]
    fn a_socket_nobody_serves_is_no_credential() {
        let dir = tempfile::tempdir().unwrap();
        let e = fetch(&dir.path().join("none.sock"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("cannot get a credential from the agent at"),
            "{e}"
        );
    }
}
