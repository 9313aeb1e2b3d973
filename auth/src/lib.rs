//! Who is asking: Drover's credentials, as munge and Slurm's auth/slurm give them.
//!
//! Every request carries a short-lived credential (`proto::v1::Credential`) in the
//! `proto::CREDENTIAL_HEADER` header: who (uid, gid), which host, until when, a nonce,
//! and an HMAC-SHA256 over all of it under the cluster key, a file only root reads.
//! Daemons sign their own with the key (`Issuer::Node`, `Issuer::Controller`). A user's
//! command cannot read the key: it asks the host's credential agent (`agent`), which
//! reads the caller's uid and gid from the kernel (SO_PEERCRED on its Unix socket) and
//! signs for exactly those. The receiver (`Verifier`) checks the MAC and the expiry,
//! and binds each credential to the connection that first presents it, so a credential
//! is neither forged, nor kept for later, nor replayed on another connection. A client
//! reuses the agent's credential on its own connection (`Signed`).
//!
//! Example: alice (uid 1000) runs `scancel 7`. The command connects to the agent's
//! socket; the kernel says the peer is uid 1000, gid 1000; the agent answers a
//! credential {User, 1000, 1000, "login1", now, now + 60 s, nonce} with its MAC. The
//! controller verifies it and cancels job 7 only if alice owns it. A hand-made request
//! that claims uid 0 has no valid MAC, and is refused.

pub mod agent;
mod credential;
mod key;
mod server;
mod signed;
pub mod tls;

pub use credential::{AuthError, Identity, Issuer, STEP_GRANT, Verifier};
pub use key::Key;
pub use server::{Authenticate, identity, require};
pub use signed::{Signed, Signer};

/// Unix seconds now.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
