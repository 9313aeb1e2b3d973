//! Credentials: issuing one (`Key::issue`), and checking one (`Verifier`): its MAC,
//! its time, and its nonce, which is taken again only on the connection that first
//! presented it.

use crate::Key;
use proto::v1;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Mutex;

/// Why a request's credential was refused, or a key could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("the request has no credential")]
    Missing,
    #[error("the credential is malformed")]
    Malformed,
    #[error("the credential's signature is invalid")]
    BadSignature,
    #[error("the credential has expired")]
    Expired,
    #[error("the credential is not valid yet")]
    NotYetValid,
    #[error("the credential was replayed")]
    Replayed,
    #[error("{0}")]
    KeyFile(String),
    #[error("cannot get a credential from the agent at {path}: {why}")]
    NoAgent { path: String, why: String },
    #[error("no randomness for a credential's nonce: {0}")]
    NoRandomness(String),
}

/// Who signed a credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Issuer {
    /// A host's credential agent, for the user the kernel named.
    User,
    /// A node daemon.
    Node,
    /// The controller.
    Controller,
}

impl Issuer {
    fn to_wire(self) -> v1::Issuer {
        match self {
            Issuer::User => v1::Issuer::User,
            Issuer::Node => v1::Issuer::Node,
            Issuer::Controller => v1::Issuer::Controller,
        }
    }

    fn from_wire(value: i32) -> Option<Issuer> {
        match v1::Issuer::try_from(value).ok()? {
            v1::Issuer::User => Some(Issuer::User),
            v1::Issuer::Node => Some(Issuer::Node),
            v1::Issuer::Controller => Some(Issuer::Controller),
            v1::Issuer::Unspecified => None,
        }
    }
}

/// What a verified credential says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub issuer: Issuer,
    pub uid: u32,
    pub gid: u32,
    pub host: String,
}

/// How far ahead of the verifier's clock an issuer's may be, in seconds.
const CLOCK_SKEW_S: i64 = 10;

impl Key {
    /// A credential for `uid`/`gid` on `host`, valid `ttl_s` seconds from `now`, encoded
    /// as it travels (`proto::CREDENTIAL_HEADER`).
    pub fn issue(
        &self,
        issuer: Issuer,
        uid: u32,
        gid: u32,
        host: &str,
        now: i64,
        ttl_s: i64,
    ) -> Result<Vec<u8>, AuthError> {
        let mut nonce = vec![0u8; 16];
        getrandom::fill(&mut nonce).map_err(|e| AuthError::NoRandomness(e.to_string()))?;
        let body = v1::CredentialBody {
            issuer: issuer.to_wire() as i32,
            uid,
            gid,
            host: host.to_string(),
            issued_at: now,
            expires_at: now + ttl_s,
            nonce,
        };
        Ok(self.seal(CREDENTIAL, proto::encode(&body)))
    }

    /// `body` with its MAC under this key for `purpose`, encoded as a
    /// `v1::Credential`. The purpose is part of what is signed: what was sealed for one
    /// purpose does not open for another.
    pub fn seal(&self, purpose: &[u8], body: Vec<u8>) -> Vec<u8> {
        let mac = self.sign(&[purpose, b"\0", &body].concat());
        proto::encode(&v1::Credential { body, mac })
    }

    /// The body `encoded` holds, if this key sealed it for `purpose`.
    pub fn open(&self, purpose: &[u8], encoded: &[u8]) -> Result<Vec<u8>, AuthError> {
        let sealed: v1::Credential = proto::decode(encoded).ok_or(AuthError::Malformed)?;
        if !self.verify(&[purpose, b"\0", &sealed.body].concat(), &sealed.mac) {
            return Err(AuthError::BadSignature);
        }
        Ok(sealed.body)
    }
}

/// The purpose credentials are sealed for.
const CREDENTIAL: &[u8] = b"drover credential";

/// The purpose the controller seals a step's grant for (`v1::StepGrant`).
pub const STEP_GRANT: &[u8] = b"drover step grant";

/// Until when (Unix seconds) a client reuses an encoded credential: half its life.
pub(crate) fn reuse_until(encoded: &[u8]) -> Option<i64> {
    let sealed: v1::Credential = proto::decode(encoded)?;
    let body: v1::CredentialBody = proto::decode(&sealed.body)?;
    Some(body.issued_at + (body.expires_at - body.issued_at) / 2)
}

/// Checks credentials: MAC, time, and nonces seen until they expire. A credential is
/// bound to the connection that first presented it: it is taken again on that
/// connection (a command's later calls), and refused as a replay on any other, or
/// when the connection is not known.
#[derive(Debug)]
pub struct Verifier {
    key: Key,
    seen: Mutex<Seen>,
}

/// (expiry, nonce) of every credential accepted and not yet expired, and the
/// connection (peer address) that presented it.
type Seen = BTreeMap<(i64, Vec<u8>), Option<SocketAddr>>;

impl Verifier {
    pub fn new(key: Key) -> Verifier {
        Verifier {
            key,
            seen: Mutex::new(BTreeMap::new()),
        }
    }

    /// The identity an encoded credential proves at `now`, or why it proves none. An
    /// accepted credential is not accepted again.
    pub fn verify(&self, encoded: &[u8], now: i64) -> Result<Identity, AuthError> {
        self.verify_from(encoded, now, None)
    }

    /// `verify` for a credential that came on the connection from `peer`: accepted
    /// again from that same peer, never from another.
    pub fn verify_from(
        &self,
        encoded: &[u8],
        now: i64,
        peer: Option<SocketAddr>,
    ) -> Result<Identity, AuthError> {
        let body = self.key.open(CREDENTIAL, encoded)?;
        let body: v1::CredentialBody = proto::decode(&body).ok_or(AuthError::Malformed)?;
        let issuer = Issuer::from_wire(body.issuer).ok_or(AuthError::Malformed)?;
        if body.nonce.len() != 16 {
            return Err(AuthError::Malformed);
        }
        if body.expires_at <= now {
            return Err(AuthError::Expired);
        }
        if body.issued_at > now + CLOCK_SKEW_S {
            return Err(AuthError::NotYetValid);
        }
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        // Forget what has expired: it is refused as expired from now on.
        let live = seen.split_off(&(now + 1, Vec::new()));
        *seen = live;
        match seen.entry((body.expires_at, body.nonce)) {
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(peer);
            }
            std::collections::btree_map::Entry::Occupied(e) => {
                if peer.is_none() || *e.get() != peer {
                    return Err(AuthError::Replayed);
                }
            }
        }
        Ok(Identity {
            issuer,
            uid: body.uid,
            gid: body.gid,
            host: body.host,
        })
    }

    /// The identity a tonic request proves, as tonic's interceptors see it; a refused
    /// credential is UNAUTHENTICATED with its reason.
    pub fn verify_request<T>(
        &self,
        req: &tonic::Request<T>,
        now: i64,
    ) -> Result<Identity, tonic::Status> {
        self.verify_metadata(req.metadata(), now, req.remote_addr())
            .map_err(|e| tonic::Status::unauthenticated(e.to_string()))
    }

    /// The identity the credential header of `metadata` proves, from `peer`.
    pub(crate) fn verify_metadata(
        &self,
        metadata: &tonic::metadata::MetadataMap,
        now: i64,
        peer: Option<SocketAddr>,
    ) -> Result<Identity, AuthError> {
        let value = metadata
            .get_bin(proto::CREDENTIAL_HEADER)
            .ok_or(AuthError::Missing)?;
        let bytes = value.to_bytes().map_err(|_| AuthError::Malformed)?;
        self.verify_from(&bytes, now, peer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: u8) -> Key {
        Key::from_bytes(&[b; 32]).unwrap()
    }

    #[test]
    fn a_credential_proves_who_signed_it_once() {
        let v = Verifier::new(key(1));
        let c = key(1)
            .issue(Issuer::User, 1000, 100, "login1", 500, 60)
            .unwrap();
        let id = v.verify(&c, 510).unwrap();
        assert_eq!(
            id,
            Identity {
                issuer: Issuer::User,
                uid: 1000,
                gid: 100,
                host: "login1".into()
            }
        );
        assert_eq!(v.verify(&c, 511), Err(AuthError::Replayed));
        // Another credential for the same user is another nonce.
        let again = key(1)
            .issue(Issuer::User, 1000, 100, "login1", 500, 60)
            .unwrap();
        assert!(v.verify(&again, 511).is_ok());
    }

    #[test]
    fn forged_expired_early_and_malformed_credentials_are_refused() {
        let v = Verifier::new(key(1));
        let forged = key(2).issue(Issuer::User, 0, 0, "evil", 500, 60).unwrap();
        assert_eq!(v.verify(&forged, 510), Err(AuthError::BadSignature));
        let old = key(1).issue(Issuer::User, 1000, 100, "h", 500, 60).unwrap();
        assert_eq!(v.verify(&old, 560), Err(AuthError::Expired));
        let early = key(1).issue(Issuer::User, 1000, 100, "h", 600, 60).unwrap();
        assert_eq!(v.verify(&early, 500), Err(AuthError::NotYetValid));
        assert_eq!(v.verify(b"\xff\xff", 500), Err(AuthError::Malformed));
        // A body changed after signing: the MAC no longer matches.
        let good = key(1).issue(Issuer::User, 1000, 100, "h", 500, 60).unwrap();
        let mut cred: v1::Credential = proto::decode(&good).unwrap();
        let mut body: v1::CredentialBody = proto::decode(&cred.body).unwrap();
        body.uid = 0;
        cred.body = proto::encode(&body);
        assert_eq!(
            v.verify(&proto::encode(&cred), 510),
            Err(AuthError::BadSignature)
        );
    }

    #[test]
    fn what_is_sealed_for_one_purpose_opens_only_for_it() {
        let k = key(1);
        let sealed = k.seal(STEP_GRANT, b"grant".to_vec());
        assert_eq!(k.open(STEP_GRANT, &sealed), Ok(b"grant".to_vec()));
        assert_eq!(k.open(CREDENTIAL, &sealed), Err(AuthError::BadSignature));
        assert_eq!(
            key(2).open(STEP_GRANT, &sealed),
            Err(AuthError::BadSignature)
        );
        // A credential is not a grant either.
        let cred = k.issue(Issuer::User, 0, 0, "h", 500, 60).unwrap();
        assert_eq!(k.open(STEP_GRANT, &cred), Err(AuthError::BadSignature));
    }

    #[test]
    fn a_credential_is_taken_again_only_on_its_own_connection() {
        let v = Verifier::new(key(1));
        let c = key(1).issue(Issuer::User, 1000, 100, "h", 500, 60).unwrap();
        let mine: SocketAddr = "10.0.0.1:40000".parse().unwrap();
        let other: SocketAddr = "10.0.0.1:40001".parse().unwrap();
        assert!(v.verify_from(&c, 510, Some(mine)).is_ok());
        assert!(v.verify_from(&c, 520, Some(mine)).is_ok());
        assert_eq!(
            v.verify_from(&c, 520, Some(other)),
            Err(AuthError::Replayed)
        );
        assert_eq!(v.verify_from(&c, 520, None), Err(AuthError::Replayed));
        // Nor past its expiry, even on its connection.
        assert_eq!(v.verify_from(&c, 560, Some(mine)), Err(AuthError::Expired));
        // A credential first seen without a connection is taken once.
        let once = key(1).issue(Issuer::User, 1000, 100, "h", 500, 60).unwrap();
        assert!(v.verify_from(&once, 510, None).is_ok());
        assert_eq!(v.verify_from(&once, 510, None), Err(AuthError::Replayed));
    }

    #[test]
    fn seen_nonces_are_forgotten_once_expired() {
        let v = Verifier::new(key(1));
        for t in 0..100 {
            let c = key(1).issue(Issuer::Node, 0, 0, "n1", t, 10).unwrap();
            v.verify(&c, t).unwrap();
        }
        assert!(v.seen.lock().unwrap().len() <= 11);
    }
}
