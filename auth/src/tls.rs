//! TLS between the cluster's programs (`[tls]` of the config), with rustls: the
//! controller and the node daemons serve a certificate the cluster's CA signed, and
//! every client (daemons, commands) checks it against that CA and the host it dials.
//! The cluster key still authenticates each request; TLS adds privacy and a checked
//! server on networks the cluster does not trust. Off, everything is plain HTTP/2.
//!
//! Example: with `ca_file = "/etc/drover/tls/ca.pem"`, a node daemon dialing the
//! controller at `ctl1:6917` opens `https://ctl1:6917` and accepts only a certificate
//! for `ctl1` chained to that CA; the controller dialing `gpu7:6918` wants one for
//! `gpu7` (`drover keygen --tls DIR --hosts ctl1,gpu[1-8]` makes one for all).

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;

/// Why TLS cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {error}")]
    Read { path: String, error: String },
    #[error("{path} holds no {what}")]
    Empty { path: String, what: &'static str },
    #[error("TLS: {0}")]
    Rustls(#[from] rustls::Error),
}

/// What a program needs of `[tls]`: the CA, and for a server its certificate and key.
#[derive(Clone)]
pub struct Tls {
    ca_pem: Vec<u8>,
    roots: Arc<rustls::RootCertStore>,
    identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("serves", &self.identity.is_some())
            .finish_non_exhaustive()
    }
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::Read {
        path: path.display().to_string(),
        error: e.to_string(),
    })
}

impl Tls {
    /// A client's: the CA's certificates in `ca` (PEM).
    pub fn client(ca: &Path) -> Result<Tls, TlsError> {
        let ca_pem = read(ca)?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&ca_pem).flatten() {
            roots.add(cert)?;
        }
        if roots.is_empty() {
            return Err(TlsError::Empty {
                path: ca.display().to_string(),
                what: "certificate",
            });
        }
        Ok(Tls {
            ca_pem,
            roots: Arc::new(roots),
            identity: None,
        })
    }

    /// A server's (which is a client too): the CA, and the certificate chain and
    /// private key it serves (PEM), checked to be readable and to match.
    pub fn server(ca: &Path, cert: &Path, key: &Path) -> Result<Tls, TlsError> {
        let mut tls = Tls::client(ca)?;
        let (cert_pem, key_pem) = (read(cert)?, read(key)?);
        let chain: Vec<CertificateDer> = CertificateDer::pem_slice_iter(&cert_pem)
            .flatten()
            .collect();
        if chain.is_empty() {
            return Err(TlsError::Empty {
                path: cert.display().to_string(),
                what: "certificate",
            });
        }
        let private = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|_| TlsError::Empty {
            path: key.display().to_string(),
            what: "private key",
        })?;
        // The pair is checked here, once, rather than at the first connection.
        rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, private)?;
        tls.identity = Some((cert_pem, key_pem));
        Ok(tls)
    }

    /// What a server of the cluster (the controller, a node daemon) serves and dials
    /// with, as `[tls]` says; `None` with TLS off.
    pub fn for_server(config: &model::config::TlsConfig) -> Result<Option<Tls>, TlsError> {
        let path = |p: &String| std::path::PathBuf::from(p);
        config
            .enabled
            .then(|| {
                Tls::server(
                    &path(&config.ca_file),
                    &path(&config.cert_file),
                    &path(&config.key_file),
                )
            })
            .transpose()
    }

    /// What a command dials with, as `[tls]` says (the CA only); `None` with TLS off.
    pub fn for_client(config: &model::config::TlsConfig) -> Result<Option<Tls>, TlsError> {
        config
            .enabled
            .then(|| Tls::client(Path::new(&config.ca_file)))
            .transpose()
    }

    /// The scheme of URIs to the cluster's servers.
    pub fn scheme(tls: Option<&Tls>) -> &'static str {
        if tls.is_some() { "https" } else { "http" }
    }

    /// tonic's server side: the certificate and key this program serves.
    pub fn server_config(&self) -> Option<tonic::transport::ServerTlsConfig> {
        let (cert, key) = self.identity.as_ref()?;
        Some(
            tonic::transport::ServerTlsConfig::new()
                .identity(tonic::transport::Identity::from_pem(cert, key)),
        )
    }

    /// tonic's client side, for a server dialed at `addr` (`host:port`): the CA, and
    /// the host its certificate must name.
    pub fn client_config(&self, addr: &str) -> tonic::transport::ClientTlsConfig {
        tonic::transport::ClientTlsConfig::new()
            .ca_certificate(tonic::transport::Certificate::from_pem(&self.ca_pem))
            .domain_name(host_of(addr))
    }

    /// rustls's client side, for a command's own blocking connection.
    pub fn rustls_client(&self) -> Result<Arc<rustls::ClientConfig>, TlsError> {
        let mut config = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()?
            .with_root_certificates(Arc::clone(&self.roots))
            .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Arc::new(config))
    }
}

/// A tonic endpoint for the server at `addr` (`host:port`): plain HTTP/2 without
/// `tls`, else TLS checked against the cluster's CA and `addr`'s host.
pub fn endpoint(
    addr: &str,
    tls: Option<&Tls>,
) -> Result<tonic::transport::Endpoint, tonic::transport::Error> {
    let endpoint =
        tonic::transport::Endpoint::from_shared(format!("{}://{addr}", Tls::scheme(tls)))?;
    match tls {
        Some(tls) => endpoint.tls_config(tls.client_config(addr)),
        None => Ok(endpoint),
    }
}

/// The cryptography: ring's.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The host of `host:port` (`[v6]:port` too), as a certificate names it.
pub fn host_of(addr: &str) -> String {
    let host = match addr.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => addr,
    };
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_of_addresses() {
        assert_eq!(host_of("ctl1:6917"), "ctl1");
        assert_eq!(host_of("127.0.0.1:6917"), "127.0.0.1");
        assert_eq!(host_of("[::1]:6917"), "::1");
        assert_eq!(host_of("gpu7"), "gpu7");
    }

    #[test]
    fn missing_or_empty_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        let err = Tls::client(&ca).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("cannot read {}", ca.display())),
            "{err}"
        );
        std::fs::write(&ca, "not a certificate\n").unwrap();
        assert_eq!(
            Tls::client(&ca).unwrap_err().to_string(),
            format!("{} holds no certificate", ca.display())
        );
    }
}
