//! The client's side: every request of a gRPC client gets a fresh credential in its
//! header, from the key (daemons) or from the host's agent (users' commands).

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
            } => key.issue(*issuer, 0, 0, host, crate::unix_now(), *ttl_s),
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
        let until = crate::credential::reuse_until(&cred).unwrap_or(now);
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
        match self.credential() {
            Ok(cred) => {
                // A binary header, encoded as gRPC's are (tonic's metadata does it).
                let headers = std::mem::take(req.headers_mut());
                let mut metadata = tonic::metadata::MetadataMap::from_headers(headers);
                metadata.insert_bin(
                    proto::CREDENTIAL_HEADER,
                    tonic::metadata::MetadataValue::from_bytes(&cred),
                );
                *req.headers_mut() = metadata.into_headers();
                let call = self.inner.call(req);
                Box::pin(async move { call.await.map_err(Into::into) })
            }
            Err(e) => Box::pin(async move { Err(BoxError::from(e)) }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AuthError, Verifier};
    use std::sync::Mutex;
    use tower_service::Service;

    /// A transport that keeps the headers of each request it is asked to send.
    #[derive(Clone, Default)]
    struct Keep(Arc<Mutex<Vec<http::HeaderMap>>>);

    impl Service<http::Request<()>> for Keep {
        type Response = ();
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<(), Self::Error>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }
        fn call(&mut self, req: http::Request<()>) -> Self::Future {
            self.0.lock().unwrap().push(req.headers().clone());
            std::future::ready(Ok(()))
        }
    }

    fn metadata(headers: &http::HeaderMap) -> tonic::metadata::MetadataMap {
        tonic::metadata::MetadataMap::from_headers(headers.clone())
    }

    #[test]
    fn the_header_a_signed_client_writes_is_the_one_the_verifier_reads() {
        let key = Key::from_bytes(&[1; 32]).unwrap();
        let v = Verifier::new(key.clone());
        let signer = Arc::new(Signer::Key {
            key,
            issuer: Issuer::Controller,
            host: "ctl".into(),
            ttl_s: 60,
        });
        let sent = Keep::default();
        let mut client = Signed::new(sent.clone(), signer);
        drop(client.call(http::Request::new(())));
        drop(client.call(http::Request::new(())));
        let now = crate::unix_now();
        let headers = sent.0.lock().unwrap().clone();
        for h in &headers {
            assert_eq!(
                v.verify_metadata(&metadata(h), now, None).map(|i| i.issuer),
                Ok(Issuer::Controller)
            );
        }
        // A daemon signs each request afresh.
        assert_ne!(headers[0], headers[1]);
        let empty = tonic::metadata::MetadataMap::new();
        assert_eq!(
            v.verify_metadata(&empty, now, None),
            Err(AuthError::Missing)
        );
    }

    #[tokio::test]
    async fn the_agents_credential_is_reused_on_its_transport_only() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("auth.sock");
        let key = Arc::new(Key::from_bytes(&[2; 32]).unwrap());
        let listener = crate::agent::bind(&socket).unwrap().unwrap();
        tokio::spawn(crate::agent::serve(listener, key, "login1".into(), 60));
        let signer = Arc::new(Signer::Agent { socket });
        let (one, other) = (Keep::default(), Keep::default());
        let (a, b) = (one.clone(), other.clone());
        let signer_b = signer.clone();
        tokio::task::spawn_blocking(move || {
            let mut first = Signed::new(a, signer);
            drop(first.call(http::Request::new(())));
            drop(first.clone().call(http::Request::new(())));
            drop(Signed::new(b, signer_b).call(http::Request::new(())));
        })
        .await
        .unwrap();
        let one = one.0.lock().unwrap().clone();
        let other = other.0.lock().unwrap().clone();
        assert_eq!(one.len(), 2);
        assert_eq!(one[0], one[1], "one transport reuses its credential");
        assert_ne!(one[0], other[0], "another transport asks for its own");
    }
}
