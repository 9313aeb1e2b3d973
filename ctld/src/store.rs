//! The controller's durable state in sled: the only module that touches it.
//!
//! Trees: `jobs` (job id → job record), `payloads` (job id → script and environment,
//! written once at submit), `nodes` (name → node record), `reservations` (name →
//! reservation), `usage` (account `\0` user → decayed usage of that association). Keys
//! of jobs are big-endian ids, so a scan returns jobs in id order. Every record is
//! postcard-encoded behind a one-byte format version. A batch of writes is applied as
//! one transaction and becomes durable with one `flush` (group commit): the caller
//! acknowledges nothing before `commit` returns.

use model::usage::{AssocKey, AssocUsage};
use model::{Job, JobId, JobPayload, Node, Reservation};
use serde::{Serialize, de::DeserializeOwned};
use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, TransactionError};
use std::path::Path;

/// Format version of every record; bump it when a record's layout changes.
const RECORD_VERSION: u8 = 3;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("state store: {0}")]
    Sled(#[from] sled::Error),
    #[error("state store: cannot encode a record: {0}")]
    Encode(postcard::Error),
    #[error("state store: record {key} is corrupt or of an unknown version: {reason}")]
    Decode { key: String, reason: String },
}

pub struct Store {
    db: sled::Db,
    jobs: sled::Tree,
    payloads: sled::Tree,
    nodes: sled::Tree,
    reservations: sled::Tree,
    usage: sled::Tree,
}

/// What a restart loads.
pub struct Loaded {
    pub jobs: Vec<Job>,
    pub nodes: Vec<Node>,
    pub reservations: Vec<Reservation>,
    /// Decayed usage per (account, user).
    pub usage: Vec<(AssocKey, AssocUsage)>,
}

/// `account \0 user`: the key of a usage record.
fn usage_key(key: &AssocKey) -> Vec<u8> {
    let mut out = key.0.as_bytes().to_vec();
    out.push(0);
    out.extend(key.1.as_bytes());
    out
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    let mut out = vec![RECORD_VERSION];
    out.extend(postcard::to_stdvec(value).map_err(StoreError::Encode)?);
    Ok(out)
}

/// Decodes a record; `key` names it in an error.
fn decode<T: DeserializeOwned>(
    key: impl FnOnce() -> String,
    bytes: &[u8],
) -> Result<T, StoreError> {
    match bytes.split_first() {
        Some((&RECORD_VERSION, body)) => {
            postcard::from_bytes(body).map_err(|e| StoreError::Decode {
                key: key(),
                reason: e.to_string(),
            })
        }
        Some((v, _)) => Err(StoreError::Decode {
            key: key(),
            reason: format!(
                "record format {v}, this controller reads format {RECORD_VERSION}; \
                 start it on a new state directory"
            ),
        }),
        None => Err(StoreError::Decode {
            key: key(),
            reason: "empty".into(),
        }),
    }
}

/// Writes collected during one batch of inputs, made durable together.
#[derive(Default)]
pub struct WriteBatch {
    jobs: sled::Batch,
    payloads: sled::Batch,
    nodes: sled::Batch,
    reservations: sled::Batch,
    usage: sled::Batch,
    pub len: usize,
}

impl WriteBatch {
    pub fn put_job(&mut self, job: &Job) -> Result<(), StoreError> {
        self.jobs.insert(&job.id.to_be_bytes(), encode(job)?);
        self.len += 1;
        Ok(())
    }
    pub fn put_payload(&mut self, id: JobId, payload: &JobPayload) -> Result<(), StoreError> {
        self.payloads.insert(&id.to_be_bytes(), encode(payload)?);
        self.len += 1;
        Ok(())
    }
    pub fn put_node(&mut self, node: &Node) -> Result<(), StoreError> {
        self.nodes.insert(node.name.as_bytes(), encode(node)?);
        self.len += 1;
        Ok(())
    }
    pub fn put_reservation(&mut self, r: &Reservation) -> Result<(), StoreError> {
        self.reservations.insert(r.name.as_bytes(), encode(r)?);
        self.len += 1;
        Ok(())
    }
    /// The usage record of an association (account, user).
    pub fn put_usage(&mut self, key: &AssocKey, usage: &AssocUsage) -> Result<(), StoreError> {
        self.usage.insert(usage_key(key), encode(usage)?);
        self.len += 1;
        Ok(())
    }
    pub fn delete_reservation(&mut self, name: &str) {
        self.reservations.remove(name.as_bytes());
        self.len += 1;
    }
}

impl Store {
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let db = sled::Config::new()
            .path(dir)
            .mode(sled::Mode::HighThroughput)
            .cache_capacity(16 << 20)
            .open()?;
        Ok(Store {
            jobs: db.open_tree("jobs")?,
            payloads: db.open_tree("payloads")?,
            nodes: db.open_tree("nodes")?,
            reservations: db.open_tree("reservations")?,
            usage: db.open_tree("usage")?,
            db,
        })
    }

    /// Reads everything back after a restart.
    pub fn load(&self) -> Result<Loaded, StoreError> {
        let jobs = self.load_jobs()?;
        let mut nodes = Vec::new();
        for item in self.nodes.iter() {
            let (k, v) = item?;
            nodes.push(decode(
                || format!("node {}", String::from_utf8_lossy(&k)),
                &v,
            )?);
        }
        let mut reservations = Vec::new();
        for item in self.reservations.iter() {
            let (k, v) = item?;
            reservations.push(decode(
                || format!("reservation {}", String::from_utf8_lossy(&k)),
                &v,
            )?);
        }
        let mut usage = Vec::new();
        for item in self.usage.iter() {
            let (k, v) = item?;
            let key = String::from_utf8_lossy(&k).into_owned();
            let Some((account, user)) = key.split_once('\0') else {
                return Err(StoreError::Decode {
                    key: format!("usage {key}"),
                    reason: "bad key".into(),
                });
            };
            let record = decode(|| format!("usage {account}/{user}"), &v)?;
            usage.push(((account.to_string(), user.to_string()), record));
        }
        Ok(Loaded {
            jobs,
            nodes,
            reservations,
            usage,
        })
    }

    /// Every job record, in id order. sled's scan and the decoding of the records run
    /// on two threads, handing batches from one to the other: each takes about half of
    /// a restart with 100k jobs.
    fn load_jobs(&self) -> Result<Vec<Job>, StoreError> {
        const BATCH: usize = 1024;
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<(sled::IVec, sled::IVec)>>(16);
        std::thread::scope(|scope| {
            let decoder = scope.spawn(move || {
                let id = |k: &[u8]| u32::from_be_bytes(k.try_into().unwrap_or_default());
                let mut jobs = Vec::new();
                for batch in rx {
                    for (k, v) in batch {
                        jobs.push(decode(|| format!("job {}", id(&k)), &v)?);
                    }
                }
                Ok::<_, StoreError>(jobs)
            });
            let mut batch = Vec::with_capacity(BATCH);
            let mut scanned = Ok(());
            for item in self.jobs.iter() {
                match item {
                    Ok(kv) => batch.push(kv),
                    Err(e) => {
                        scanned = Err(e.into());
                        break;
                    }
                }
                // The decoder stops at a bad record; its error is the answer.
                if batch.len() == BATCH && tx.send(std::mem::take(&mut batch)).is_err() {
                    break;
                }
            }
            let _ = tx.send(batch);
            drop(tx);
            let decoded = decoder
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e));
            scanned.and(decoded)
        })
    }

    pub fn payload(&self, id: JobId) -> Result<Option<JobPayload>, StoreError> {
        match self.payloads.get(id.to_be_bytes())? {
            Some(v) => Ok(Some(decode(|| format!("payload {id}"), &v)?)),
            None => Ok(None),
        }
    }

    /// Applies a batch and waits until it is on disk.
    pub async fn commit(&self, batch: WriteBatch) -> Result<(), StoreError> {
        if batch.len == 0 {
            return Ok(());
        }
        // One transaction over the trees: sled logs it as one atomic batch (the writes,
        // then a small manifest that seals them), so a crash never keeps a job without
        // its payload.
        let trees = (
            &self.jobs,
            &self.payloads,
            &self.nodes,
            &self.reservations,
            &self.usage,
        );
        trees
            .transaction(|(jobs, payloads, nodes, reservations, usage)| {
                jobs.apply_batch(&batch.jobs)?;
                payloads.apply_batch(&batch.payloads)?;
                nodes.apply_batch(&batch.nodes)?;
                reservations.apply_batch(&batch.reservations)?;
                usage.apply_batch(&batch.usage)?;
                Ok::<_, ConflictableTransactionError<std::convert::Infallible>>(())
            })
            .map_err(|e| match e {
                TransactionError::Storage(e) => StoreError::Sled(e),
                TransactionError::Abort(never) => match never {},
            })?;
        self.db.flush_async().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::JobSpec;

    /// Opens the store again in this process: sled's background flusher may hold the
    /// directory's lock a moment after the last handle is dropped.
    async fn reopen(dir: &Path) -> Store {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match Store::open(dir) {
                Ok(s) => return s,
                Err(e) if std::time::Instant::now() > deadline => panic!("{e}"),
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            }
        }
    }

    #[tokio::test]
    async fn records_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            let mut batch = WriteBatch::default();
            for id in [3, 1, 2] {
                batch
                    .put_job(&Job::new(id, JobSpec::default(), 5, None))
                    .unwrap();
            }
            batch
                .put_payload(
                    1,
                    &JobPayload {
                        script: "#!/bin/sh\n".into(),
                        env: vec![],
                    },
                )
                .unwrap();
            batch
                .put_node(&Node::from_config("n1", 4, 100, vec![]))
                .unwrap();
            store.commit(batch).await.unwrap();
        }
        let store = reopen(dir.path()).await;
        let loaded = store.load().unwrap();
        let ids: Vec<u32> = loaded.jobs.iter().map(|j| j.id).collect();
        assert_eq!(ids, vec![1, 2, 3]);
        assert_eq!(loaded.nodes[0].name, "n1");
        assert_eq!(store.payload(1).unwrap().unwrap().script, "#!/bin/sh\n");
        assert!(store.payload(2).unwrap().is_none());
    }

    #[tokio::test]
    async fn usage_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let ml = ("ml".to_string(), "alice".to_string());
        let record = AssocUsage {
            billing: 1234.5,
            tres: [("cpu".to_string(), 1000.0), ("gres/gpu".to_string(), 250.0)].into(),
            at: 1_700_000_000,
        };
        {
            let store = Store::open(dir.path()).unwrap();
            let mut batch = WriteBatch::default();
            batch.put_usage(&ml, &record).unwrap();
            batch
                .put_usage(
                    &("root".to_string(), "root".to_string()),
                    &AssocUsage::default(),
                )
                .unwrap();
            store.commit(batch).await.unwrap();
            // A later record of the same association replaces the first.
            let mut batch = WriteBatch::default();
            let newer = AssocUsage {
                billing: 2000.0,
                ..record.clone()
            };
            batch.put_usage(&ml, &newer).unwrap();
            store.commit(batch).await.unwrap();
        }
        let store = reopen(dir.path()).await;
        let loaded = store.load().unwrap();
        assert_eq!(loaded.usage.len(), 2);
        assert_eq!(loaded.usage[0].0, ml);
        assert_eq!(loaded.usage[0].1.billing, 2000.0);
        assert_eq!(loaded.usage[0].1.tres, record.tres);
        assert_eq!(loaded.usage[1].0.0, "root");
    }

    #[tokio::test]
    async fn a_large_store_loads_in_id_order_and_a_bad_record_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let n = 2500; // more than two of the loader's batches
        let store = Store::open(dir.path()).unwrap();
        let mut batch = WriteBatch::default();
        for id in (1..=n).rev() {
            batch
                .put_job(&Job::new(id, JobSpec::default(), 5, None))
                .unwrap();
        }
        store.commit(batch).await.unwrap();
        let ids: Vec<JobId> = store.load().unwrap().jobs.iter().map(|j| j.id).collect();
        assert_eq!(ids, (1..=n).collect::<Vec<_>>());
        // A record of another format, in the middle of the scan.
        store
            .jobs
            .insert(1500u32.to_be_bytes(), vec![9, 9])
            .unwrap();
        let err = store.load().err().unwrap().to_string();
        assert!(err.contains("job 1500"), "{err}");
        assert!(err.contains("record format 9"), "{err}");
    }

    #[test]
    fn rejects_unknown_versions() {
        assert!(decode::<Job>(|| "x".into(), &[9, 1, 2]).is_err());
        assert!(decode::<Job>(|| "x".into(), &[]).is_err());
    }
}
