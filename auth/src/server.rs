//! The server's side: an interceptor that checks every request's credential before its
//! handler runs, and hands the handler who sent it.

use crate::{AuthError, Identity, Issuer, Verifier};
use std::sync::Arc;
use tonic::{Request, Status};

/// Refuses a request without a valid credential (UNAUTHENTICATED, with the reason), or
/// from an issuer the service does not take (PERMISSION_DENIED); puts the proved
/// `Identity` in the request's extensions for its handler (`identity`).
#[derive(Debug, Clone)]
pub struct Authenticate {
    verifier: Arc<Verifier>,
    /// Only this issuer may call; `None`: anyone with a valid credential.
    only: Option<Issuer>,
}

impl Authenticate {
    /// Users' commands and daemons.
    pub fn anyone(verifier: Arc<Verifier>) -> Authenticate {
        Authenticate {
            verifier,
            only: None,
        }
    }

    /// Only credentials of `issuer`.
    pub fn only(verifier: Arc<Verifier>, issuer: Issuer) -> Authenticate {
        Authenticate {
            verifier,
            only: Some(issuer),
        }
    }
}

impl tonic::service::Interceptor for Authenticate {
    fn call(&mut self, mut req: Request<()>) -> Result<Request<()>, Status> {
        let who = self
            .verifier
            .verify_request(&req, crate::unix_now())
            .inspect_err(|e| tracing::warn!(reason = e.message(), "request refused"))?;
        if let Some(issuer) = self.only
            && who.issuer != issuer
        {
            tracing::warn!(uid = who.uid, host = %who.host, issuer = ?who.issuer, "request refused: wrong issuer");
            return Err(Status::permission_denied(format!(
                "only {} may call this",
                issuer.callers()
            )));
        }
        req.extensions_mut().insert(who);
        Ok(req)
    }
}

impl Issuer {
    /// Who signs with this issuer, for messages.
    fn callers(self) -> &'static str {
        match self {
            Issuer::User => "users' commands",
            Issuer::Node => "node daemons",
            Issuer::Controller => "the controller",
        }
    }
}

/// Who sent a request, as its credential proved (`Authenticate`).
pub fn identity<T>(req: &Request<T>) -> Result<Identity, Status> {
    req.extensions()
        .get::<Identity>()
        .cloned()
        .ok_or_else(|| Status::unauthenticated(AuthError::Missing.to_string()))
}

/// Refuses a request not from `issuer`.
pub fn require(who: &Identity, issuer: Issuer) -> Result<(), Status> {
    if who.issuer == issuer {
        Ok(())
    } else {
        Err(Status::permission_denied(format!(
            "only {} may call this",
            issuer.callers()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Key;
    use tonic::service::Interceptor;

    #[test]
    fn only_a_valid_credential_of_the_right_issuer_passes() {
        let key = Key::from_bytes(&[3; 32]).unwrap();
        let verifier = Arc::new(Verifier::new(key.clone()));
        let with = |cred: &[u8]| {
            let mut req = Request::new(());
            req.metadata_mut().insert_bin(
                proto::CREDENTIAL_HEADER,
                tonic::metadata::MetadataValue::from_bytes(cred),
            );
            req
        };
        let now = crate::unix_now();
        let mut anyone = Authenticate::anyone(verifier.clone());
        let mut nodes = Authenticate::only(verifier, Issuer::Node);
        let refused = anyone.call(Request::new(())).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::Unauthenticated);
        assert_eq!(refused.message(), "the request has no credential");
        let forged = Key::from_bytes(&[4; 32])
            .unwrap()
            .issue(Issuer::User, 0, 0, "evil", now, 60)
            .unwrap();
        let refused = anyone.call(with(&forged)).unwrap_err();
        assert_eq!(refused.message(), "the credential's signature is invalid");
        let alice = key
            .issue(Issuer::User, 1000, 1000, "login1", now, 60)
            .unwrap();
        let passed = anyone.call(with(&alice)).unwrap();
        assert_eq!(identity(&passed).unwrap().uid, 1000);
        let refused = anyone.call(with(&alice)).unwrap_err();
        assert_eq!(refused.message(), "the credential was replayed");
        let alice = key
            .issue(Issuer::User, 1000, 1000, "login1", now, 60)
            .unwrap();
        let refused = nodes.call(with(&alice)).unwrap_err();
        assert_eq!(refused.code(), tonic::Code::PermissionDenied);
        assert_eq!(refused.message(), "only node daemons may call this");
        let node = key.issue(Issuer::Node, 0, 0, "n1", now, 60).unwrap();
        let passed = nodes.call(with(&node)).unwrap();
        let who = identity(&passed).unwrap();
        assert!(require(&who, Issuer::Node).is_ok());
        assert!(require(&who, Issuer::Controller).is_err());
        assert!(identity(&Request::new(())).is_err());
    }
}
