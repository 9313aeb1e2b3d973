//! The client's side: every request of a gRPC client gets a fresh credential in its
//! header, from the key (daemons) or from the host's agent (users' commands).

use crate::credential::header_value;
use crate::{AuthError, Issuer, Key};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// Where a client's credentials come from.
#[derive(Debug)]
pub enum Signer {
    /// A daemon signs its own with the cluster key.
    Key {
        key: Key,
        issuer: Issuer,
        /// The node's name, or the controller's host.
        host: String,
        ttl_s: i64,
    },
    /// A user's command asks the host's credential agent at this socket.
    Agent { socket: PathBuf },
}

impl Signer {
    /// A new credential, encoded.
    pub fn credential(&self) -> Result<Vec<u8>, AuthError> {
        match self {
            Signer::Key {
                key,
                issuer,
                host,
                ttl_s,
            } => Ok(key.issue(*issuer, 0, 0, host, crate::unix_now(), *ttl_s)),
            Signer::Agent { socket } => crate::agent::fetch(socket),
        }
    }
}

/// A gRPC transport whose every request carries a credential of `signer`'s. One from
/// the agent is kept for the transport's later requests, until half its life is
/// gone: the controller takes it again on the connection that first presented it
/// (`Verifier`), and a command's second call costs no trip to the agent.
#[derive(Debug, Clone)]
pub struct Signed<S> {
    inner: S,
    signer: Arc<Signer>,
    kept: Arc<std::sync::Mutex<Option<Kept>>>,
}

/// The agent's credential in use, and until when (Unix seconds) it is reused.
type Kept = (Vec<u8>, i64);

impl<S> Signed<S> {
    pub fn new(inner: S, signer: Arc<Signer>) -> Signed<S> {
        Signed {
            inner,
            signer,
            kept: Arc::default(),
        }
    }

    /// The credential for the next request.
    fn credential(&self) -> Result<Vec<u8>, AuthError> {
        if !matches!(*self.signer, Signer::Agent { .. }) {
            return self.signer.credential();
        }
        let now = crate::unix_now();
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((cred, until)) = kept.as_ref()
            && now < *until
        {
            return Ok(cred.clone());
        }
        let cred = self.signer.credential()?;
        let until = proto::decode::<proto::v1::Credential>(&cred)
            .and_then(|c| proto::decode::<proto::v1::CredentialBody>(&c.body))
            .map_or(now, |b| b.issued_at + (b.expires_at - b.issued_at) / 2);
        *kept = Some((cred.clone(), until));
        Ok(cred)
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<S, B> tower_service::Service<http::Request<B>> for Signed<S>
where
    S: tower_service::Service<http::Request<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut req: http::Request<B>) -> Self::Future {
        let value = self
            .credential()
            .map_err(BoxError::from)
            .and_then(|c| http::HeaderValue::from_str(&header_value(&c)).map_err(BoxError::from));
        match value {
            Ok(value) => {
                req.headers_mut().insert(proto::CREDENTIAL_HEADER, value);
                let call = self.inner.call(req);
                Box::pin(async move { call.await.map_err(Into::into) })
            }
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }
}
