//! The controller's durable state in sled: the only module that touches it.
//!
//! Trees: `jobs` (job id → job record), `payloads` (job id → script and environment,
//! written once at submit), `nodes` (name → node record), `reservations` (name →
//! reservation), `usage` (account `\0` user → decayed usage of that association). Keys
//! of jobs are big-endian ids, so a scan returns jobs in id order. Every record is
//! postcard-encoded behind a one-byte format version. The records one turn of the
//! state owner touched become durable with one `flush` (group commit): the caller
//! acknowledges nothing before `commit` returns.
//!
//! A turn is atomic without sled's transactions, which write a separate manifest (a
//! second device write and wait) before every batch. sled's log is one sequence: after
//! a crash it recovers a prefix of the writes made since the last flush, never a write
//! without the ones before it. So a commit writes, in this order:
//!
//! 1. the records that stand alone: the turn's payloads (a payload without its job is
//!    harmless, and `load` drops it), then the jobs of a turn that only took submits
//!    (any subset of new jobs is a state the cluster could have been in);
//! 2. when the turn changes more than one other record, the *journal*: one record that
//!    holds all of them;
//! 3. those records themselves, each in its tree.
//!
//! For example, a turn where job 7 ends and its run is charged to `ml`/`alice` writes
//! the journal `[jobs/7, usage/ml alice]`, then the two records. If the controller dies
//! after the journal is on disk but before the usage record, opening the store applies
//! the journal again, and both are as the turn left them: the run is charged exactly
//! once. If it dies before the journal, neither changed. The journal always holds the
//! last turn that wrote one, so applying it again never brings back an older value: a
//! later turn that changes at most one other record removes the journal first.

use model::usage::{AssocKey, AssocUsage};
use model::{Job, JobId, JobPayload, Node, Reservation};
use serde::{Serialize, de::DeserializeOwned};
use std::path::Path;
use std::sync::atomic::Ordering;

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
    /// Whether the journal key holds a turn (so a turn without a journal removes it).
    journal_written: std::sync::atomic::AtomicBool,
}

/// The key of the journal, in sled's default tree.
const JOURNAL_KEY: &[u8] = b"journal";

/// The trees a record can go to; the number is how the journal names them.
#[derive(Clone, Copy, Debug, PartialEq)]
enum TreeName {
    Jobs = 0,
    Payloads = 1,
    Nodes = 2,
    Reservations = 3,
    Usage = 4,
}

impl TreeName {
    fn from_number(n: u8) -> Option<TreeName> {
        [
            TreeName::Jobs,
            TreeName::Payloads,
            TreeName::Nodes,
            TreeName::Reservations,
            TreeName::Usage,
        ]
        .into_iter()
        .find(|t| *t as u8 == n)
    }
}

/// One record a commit writes: its tree, its key, and its encoded value (`None`
/// removes it). The journal holds these as they are.
type Put = (u8, Vec<u8>, Option<Vec<u8>>);

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

/// Writes collected during one turn of the state owner, made durable together.
#[derive(Default)]
pub struct WriteBatch {
    /// Records that stand alone: payloads, and the jobs of a turn of submits only.
    standalone: Vec<Put>,
    /// Every other record, in the order the turn touched them.
    records: Vec<Put>,
}

impl WriteBatch {
    pub fn len(&self) -> usize {
        self.standalone.len() + self.records.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn put(&mut self, tree: TreeName, key: Vec<u8>, value: Vec<u8>) {
        self.records.push((tree as u8, key, Some(value)));
    }
    pub fn put_job(&mut self, job: &Job) -> Result<(), StoreError> {
        self.put(TreeName::Jobs, job.id.to_be_bytes().to_vec(), encode(job)?);
        Ok(())
    }
    /// The record of a job submitted in a turn that did nothing else: the caller vouches
    /// that losing any subset of such records in a crash leaves a consistent state.
    pub fn put_submitted_job(&mut self, job: &Job) -> Result<(), StoreError> {
        self.standalone.push((
            TreeName::Jobs as u8,
            job.id.to_be_bytes().to_vec(),
            Some(encode(job)?),
        ));
        Ok(())
    }
    pub fn put_payload(&mut self, id: JobId, payload: &JobPayload) -> Result<(), StoreError> {
        self.standalone.push((
            TreeName::Payloads as u8,
            id.to_be_bytes().to_vec(),
            Some(encode(payload)?),
        ));
        Ok(())
    }
    pub fn put_node(&mut self, node: &Node) -> Result<(), StoreError> {
        self.put(
            TreeName::Nodes,
            node.name.as_bytes().to_vec(),
            encode(node)?,
        );
        Ok(())
    }
    pub fn put_reservation(&mut self, r: &Reservation) -> Result<(), StoreError> {
        self.put(
            TreeName::Reservations,
            r.name.as_bytes().to_vec(),
            encode(r)?,
        );
        Ok(())
    }
    /// The usage record of an association (account, user).
    pub fn put_usage(&mut self, key: &AssocKey, usage: &AssocUsage) -> Result<(), StoreError> {
        self.put(TreeName::Usage, usage_key(key), encode(usage)?);
        Ok(())
    }
    pub fn delete_reservation(&mut self, name: &str) {
        self.records
            .push((TreeName::Reservations as u8, name.as_bytes().to_vec(), None));
    }
}

impl Store {
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let db = sled::Config::new()
            .path(dir)
            .mode(sled::Mode::HighThroughput)
            .cache_capacity(16 << 20)
            .open()?;
        let store = Store {
            jobs: db.open_tree("jobs")?,
            payloads: db.open_tree("payloads")?,
            nodes: db.open_tree("nodes")?,
            reservations: db.open_tree("reservations")?,
            usage: db.open_tree("usage")?,
            journal_written: false.into(),
            db,
        };
        store.finish_interrupted_turn()?;
        Ok(store)
    }

    fn tree(&self, name: TreeName) -> &sled::Tree {
        match name {
            TreeName::Jobs => &self.jobs,
            TreeName::Payloads => &self.payloads,
            TreeName::Nodes => &self.nodes,
            TreeName::Reservations => &self.reservations,
            TreeName::Usage => &self.usage,
        }
    }

    fn apply(&self, puts: Vec<Put>) -> Result<(), StoreError> {
        for (tree, key, value) in puts {
            let tree = TreeName::from_number(tree).ok_or_else(|| StoreError::Decode {
                key: "journal".into(),
                reason: format!("unknown tree {tree}"),
            })?;
            match value {
                Some(value) => self.tree(tree).insert(key, value)?,
                None => self.tree(tree).remove(key)?,
            };
        }
        Ok(())
    }

    /// Applies the journal again: the last turn that wrote one may have been cut short
    /// by a crash (see the module's doc). Its records are the newest of their keys, so
    /// this is harmless when the turn had finished.
    fn finish_interrupted_turn(&self) -> Result<(), StoreError> {
        if let Some(journal) = self.db.get(JOURNAL_KEY)? {
            let puts: Vec<Put> = decode(|| "journal".into(), &journal)?;
            self.apply(puts)?;
            self.journal_written.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Reads everything back after a restart.
    pub fn load(&self) -> Result<Loaded, StoreError> {
        let jobs = self.load_jobs()?;
        // A payload above the last job is from a turn cut short before its job was
        // written: nothing refers to it.
        let unused = jobs.last().map_or(1, |j: &Job| j.id + 1);
        for key in self.payloads.range(unused.to_be_bytes()..).keys() {
            self.payloads.remove(key?)?;
        }
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

    /// Writes a turn's records and waits until they are on disk, in the order the
    /// module's doc gives. It blocks the calling thread for the disk's answer: the
    /// state owner has nothing else to do meanwhile (inputs that arrive form the next
    /// turn), and handing the flush to another thread and back cost more than the wait.
    pub fn commit(&self, batch: WriteBatch) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        self.apply(batch.standalone)?;
        if batch.records.len() > 1 {
            self.db.insert(JOURNAL_KEY, encode(&batch.records)?)?;
            self.journal_written.store(true, Ordering::Relaxed);
        } else if self.journal_written.swap(false, Ordering::Relaxed) {
            self.db.remove(JOURNAL_KEY)?;
        }
        self.apply(batch.records)?;
        self.db.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::{JobSpec, JobState};

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
            store.commit(batch).unwrap();
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
            store.commit(batch).unwrap();
            // A later record of the same association replaces the first.
            let mut batch = WriteBatch::default();
            let newer = AssocUsage {
                billing: 2000.0,
                ..record.clone()
            };
            batch.put_usage(&ml, &newer).unwrap();
            store.commit(batch).unwrap();
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
        store.commit(batch).unwrap();
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

    /// What a crash leaves when it cuts a turn short: the turn's payloads and journal
    /// (if it needs one) are on disk, and only its first `records_written` records.
    fn write_partial_turn(store: &Store, batch: WriteBatch, records_written: usize) {
        store.apply(batch.standalone).unwrap();
        if batch.records.len() > 1 {
            store
                .db
                .insert(JOURNAL_KEY, encode(&batch.records).unwrap())
                .unwrap();
        }
        store
            .apply(batch.records.into_iter().take(records_written).collect())
            .unwrap();
        store.db.flush().unwrap();
    }

    fn job_states(store: &Store) -> Vec<(JobId, JobState)> {
        let loaded = store.load().unwrap();
        loaded.jobs.iter().map(|j| (j.id, j.state)).collect()
    }

    fn job(id: JobId, state: JobState) -> Job {
        let mut job = Job::new(id, JobSpec::default(), 5, None);
        job.state = state;
        job
    }

    /// A batch that changes these jobs' records (not a turn of submits).
    fn updates(jobs: &[Job]) -> WriteBatch {
        let mut batch = WriteBatch::default();
        for job in jobs {
            batch.put_job(job).unwrap();
        }
        batch
    }

    #[tokio::test]
    async fn a_turn_cut_short_is_completed_from_its_journal() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            let pending = [job(1, JobState::Pending), job(2, JobState::Pending)];
            store.commit(updates(&pending)).unwrap();
            // Job 1 ends and job 2 starts on n1; the crash comes after job 1's record.
            let mut batch = updates(&[job(1, JobState::Completed), job(2, JobState::Running)]);
            batch
                .put_node(&Node::from_config("n1", 4, 100, vec![]))
                .unwrap();
            write_partial_turn(&store, batch, 1);
        }
        let store = reopen(dir.path()).await;
        assert_eq!(
            job_states(&store),
            vec![(1, JobState::Completed), (2, JobState::Running)]
        );
        assert_eq!(store.load().unwrap().nodes[0].name, "n1");
    }

    #[tokio::test]
    async fn the_journal_never_brings_back_an_older_value() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            let pending = [job(1, JobState::Pending), job(2, JobState::Pending)];
            store.commit(updates(&pending)).unwrap(); // written with a journal
            // One record: no journal.
            store
                .commit(updates(&[job(2, JobState::Cancelled)]))
                .unwrap();
        }
        let store = reopen(dir.path()).await;
        assert_eq!(
            job_states(&store),
            vec![(1, JobState::Pending), (2, JobState::Cancelled)]
        );
        assert!(store.db.get(JOURNAL_KEY).unwrap().is_none());
    }

    #[test]
    fn a_turn_of_submits_writes_no_journal_and_others_do() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let payload = JobPayload {
            script: "#!/bin/sh\n".into(),
            env: vec![],
        };
        let mut batch = WriteBatch::default();
        for id in [1, 2] {
            batch.put_payload(id, &payload).unwrap();
        }
        for id in [1, 2] {
            batch
                .put_submitted_job(&Job::new(id, JobSpec::default(), 5, None))
                .unwrap();
        }
        store.commit(batch).unwrap();
        assert!(store.db.get(JOURNAL_KEY).unwrap().is_none());
        assert_eq!(job_states(&store).len(), 2);
        let held = [job(1, JobState::Pending), job(2, JobState::Pending)];
        store.commit(updates(&held)).unwrap();
        assert!(store.db.get(JOURNAL_KEY).unwrap().is_some());
    }

    #[tokio::test]
    async fn a_payload_without_its_job_is_dropped_on_load() {
        let dir = tempfile::tempdir().unwrap();
        let payload = JobPayload {
            script: "#!/bin/sh\n".into(),
            env: vec![],
        };
        {
            let store = Store::open(dir.path()).unwrap();
            let mut batch = WriteBatch::default();
            batch.put_payload(1, &payload).unwrap();
            batch
                .put_job(&Job::new(1, JobSpec::default(), 5, None))
                .unwrap();
            store.commit(batch).unwrap();
            // The next submit's payload is written; the crash comes before its job.
            let mut batch = WriteBatch::default();
            batch.put_payload(2, &payload).unwrap();
            batch
                .put_job(&Job::new(2, JobSpec::default(), 5, None))
                .unwrap();
            write_partial_turn(&store, batch, 0);
        }
        let store = reopen(dir.path()).await;
        assert_eq!(job_states(&store), vec![(1, JobState::Pending)]);
        assert!(store.payload(1).unwrap().is_some());
        assert!(store.payload(2).unwrap().is_none());
    }

    #[test]
    fn rejects_unknown_versions() {
        assert!(decode::<Job>(|| "x".into(), &[9, 1, 2]).is_err());
        assert!(decode::<Job>(|| "x".into(), &[]).is_err());
    }
}
