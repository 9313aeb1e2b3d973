//! The cluster key: random bytes in a file only its owner reads, shared by the
//! controller and every node daemon (and their hosts' credential agents).

use crate::credential::AuthError;
use hmac::{KeyInit, Mac};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The fewest bytes a key file may hold.
const MIN_KEY_BYTES: usize = 32;
/// The bytes `generate` writes.
const NEW_KEY_BYTES: usize = 64;

pub(crate) type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// The cluster key.
#[derive(Clone)]
pub struct Key {
    bytes: Vec<u8>,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

impl Key {
    /// A key of these bytes (at least 32).
    pub fn from_bytes(bytes: &[u8]) -> Result<Key, AuthError> {
        if bytes.len() < MIN_KEY_BYTES {
            return Err(AuthError::KeyFile(format!(
                "the key is {} bytes, fewer than {MIN_KEY_BYTES}",
                bytes.len()
            )));
        }
        Ok(Key {
            bytes: bytes.to_vec(),
        })
    }

    /// Reads the key at `path`. As munge does, a key that others than its owner may
    /// read or write is refused: it would let them sign as anyone.
    pub fn load(path: &Path) -> Result<Key, AuthError> {
        let shown = path.display();
        let meta = std::fs::metadata(path)
            .map_err(|e| AuthError::KeyFile(format!("cannot read the cluster key {shown}: {e}")))?;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(AuthError::KeyFile(format!(
                "the cluster key {shown} is readable or writable by others (mode {:o}): \
                 chmod 600 it",
                meta.permissions().mode() & 0o777
            )));
        }
        let bytes = std::fs::read(path)
            .map_err(|e| AuthError::KeyFile(format!("cannot read the cluster key {shown}: {e}")))?;
        Key::from_bytes(&bytes)
            .map_err(|e| AuthError::KeyFile(format!("the cluster key {shown}: {e}")))
    }

    /// Writes a new random key to `path` (mode 0600; an existing file is kept and
    /// refused) and returns it.
    pub fn generate(path: &Path) -> Result<Key, AuthError> {
        let shown = path.display();
        let mut bytes = vec![0u8; NEW_KEY_BYTES];
        getrandom::fill(&mut bytes)
            .map_err(|e| AuthError::KeyFile(format!("no randomness for a key: {e}")))?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| AuthError::KeyFile(format!("cannot create {shown}: {e}")))?;
        file.write_all(&bytes)
            .and_then(|()| file.sync_all())
            .map_err(|e| AuthError::KeyFile(format!("cannot write {shown}: {e}")))?;
        Key::from_bytes(&bytes)
    }

    /// An HMAC-SHA256 under this key.
    pub(crate) fn mac(&self) -> HmacSha256 {
        <HmacSha256 as KeyInit>::new_from_slice(&self.bytes).expect("HMAC takes keys of any size")
    }

    /// The MAC of `data`, as bytes.
    pub(crate) fn sign(&self, data: &[u8]) -> Vec<u8> {
        let mut mac = self.mac();
        mac.update(data);
        mac.finalize().into_bytes().to_vec()
    }

    /// Whether `tag` is the MAC of `data` (compared in constant time).
    pub(crate) fn verify(&self, data: &[u8], tag: &[u8]) -> bool {
        let mut mac = self.mac();
        mac.update(data);
        mac.verify_slice(tag).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_is_private_and_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cluster.key");
        let key = Key::generate(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let loaded = Key::load(&path).unwrap();
        assert!(loaded.verify(b"x", &key.sign(b"x")));
        // An existing key is never overwritten.
        assert!(Key::generate(&path).is_err());
    }

    #[test]
    fn a_key_others_may_read_or_a_short_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cluster.key");
        Key::generate(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = Key::load(&path).unwrap_err().to_string();
        assert!(
            e.contains("readable or writable by others (mode 644)"),
            "{e}"
        );
        let short = dir.path().join("short.key");
        std::fs::write(&short, b"secret").unwrap();
        std::fs::set_permissions(&short, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = Key::load(&short).unwrap_err().to_string();
        assert!(e.contains("6 bytes, fewer than 32"), "{e}");
        assert!(Key::load(&dir.path().join("none")).is_err());
    }

    #[test]
    fn a_mac_checks_its_data_and_key() {
        let a = Key::from_bytes(&[1; 32]).unwrap();
        let b = Key::from_bytes(&[2; 32]).unwrap();
        let tag = a.sign(b"uid=1000");
        assert!(a.verify(b"uid=1000", &tag));
        assert!(!a.verify(b"uid=0", &tag));
        assert!(!b.verify(b"uid=1000", &tag));
    }
}
