//! The store in sled, on the controller's disk.
//!
//! Trees: `jobs` (job id → job record), `payloads` (job id → script and environment,
//! written once at submit), `nodes` (name → node record), `reservations` (name →
//! reservation), `partitions` (name → a partition made or changed at run time), `usage`
//! (account `\0` user → decayed usage of that association), `qos-usage` (QOS name →
//! decayed usage of that QOS), `accounting`
//! (`associations` → the accounts, users and QOS `sacctmgr` keeps), `triggers`
//! (big-endian trigger id → `strigger`'s trigger; `next_id` → the id the next one
//! gets). Keys
//! of jobs are big-endian ids, so a scan returns jobs in id order. Every record is a
//! `records` type behind a one-byte format version; the default tree holds the
//! store's `format` and the journal. The records of one turn become durable with one
//! `flush` (group commit).
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
//!
//! A commit first checks the room left on the state's file system: with less than
//! `min_free_bytes` beside what it would write, it writes nothing and answers
//! `StoreError::Full`, so that sled never meets a full disk halfway through a turn.
//! Writes succeed again once space is freed. Any other error of a commit leaves the
//! engine in doubt; the caller stops, and a restart recovers what was flushed.

use super::records::{
    self, AssociationsRecord, JobFields4, JobRecord, JobRecord5, NextTriggerRecord, NodeRecord,
    OtherClustersRecord, PartitionRecord, PayloadRecord, ReservationRecord, TriggerRecord,
    UsageRecord,
};
use super::{Batch, Store, StoreError, v3};
use model::usage::AssocKey;
use model::{Job, JobId, JobPayload, Restored};
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

impl From<sled::Error> for StoreError {
    fn from(e: sled::Error) -> StoreError {
        StoreError::Engine(e.to_string())
    }
}

pub struct SledStore {
    db: sled::Db,
    dir: PathBuf,
    jobs: sled::Tree,
    payloads: sled::Tree,
    nodes: sled::Tree,
    reservations: sled::Tree,
    partitions: sled::Tree,
    usage: sled::Tree,
    qos_usage: sled::Tree,
    accounting: sled::Tree,
    triggers: sled::Tree,
    /// Whether the journal key holds a turn (so a turn without a journal removes it).
    journal_written: AtomicBool,
    /// Below this many free bytes on the state's file system, commits are refused.
    min_free_bytes: u64,
}

/// The key of the journal, in sled's default tree.
const JOURNAL_KEY: &[u8] = b"journal";
/// The key of the store's format, in sled's default tree (absent in format 3).
const FORMAT_KEY: &[u8] = b"format";

/// The trees a record can go to; the number is how the journal names them.
#[derive(Clone, Copy, Debug, PartialEq)]
enum TreeName {
    Jobs = 0,
    Payloads = 1,
    Nodes = 2,
    Reservations = 3,
    Usage = 4,
    Accounting = 5,
    Triggers = 6,
    Partitions = 7,
    QosUsage = 8,
}

/// The key of the next trigger id in the `triggers` tree (trigger ids are 4 bytes).
const NEXT_TRIGGER_KEY: &[u8] = b"next_id";

/// The key of the associations in the `accounting` tree.
const ASSOCIATIONS_KEY: &[u8] = b"associations";
/// The key of other clusters' associations in the `accounting` tree, beside them.
const OTHER_CLUSTERS_KEY: &[u8] = b"other-clusters";

impl TreeName {
    const ALL: [TreeName; 9] = [
        TreeName::Jobs,
        TreeName::Payloads,
        TreeName::Nodes,
        TreeName::Reservations,
        TreeName::Usage,
        TreeName::Accounting,
        TreeName::Triggers,
        TreeName::Partitions,
        TreeName::QosUsage,
    ];

    fn from_number(n: u8) -> Option<TreeName> {
        TreeName::ALL.into_iter().find(|t| *t as u8 == n)
    }
}

/// One record a commit writes: its tree, its key, and its encoded value (`None`
/// removes it). The journal holds these as they are.
type Put = (u8, Vec<u8>, Option<Vec<u8>>);

/// `account \0 user`: the key of a usage record.
fn usage_key(key: &AssocKey) -> Vec<u8> {
    let mut out = key.0.as_bytes().to_vec();
    out.push(0);
    out.extend(key.1.as_bytes());
    out
}

/// Format 4: the release before format 5, whose job records lack `JobFields5`.
const FORMAT_4: u8 = 4;
/// Format 5: the release before format 6, whose job records lack `JobFields6`.
const FORMAT_5: u8 = 5;
/// Format 6: the release before format 7, whose node records lack `NodeFields7`.
const FORMAT_6: u8 = 6;
/// Format 7 appended fields to nodes and the associations.
const FORMAT_7: u8 = 7;
/// Format 8 appended fields to jobs and the associations.
const FORMAT_8: u8 = 8;
/// Format 9 appended the options kept as given to jobs.
const FORMAT_9: u8 = 9;
/// Format 10 appended their own time limits and GPU requests to jobs' steps.
const FORMAT_10: u8 = 10;
/// Format 11 appended heterogeneous components to jobs.
const FORMAT_11: u8 = 11;
/// Format 12 appended fields to partitions and jobs.
const FORMAT_12: u8 = 12;
/// Format 13 appended fields to jobs, usage and the associations.
const FORMAT_13: u8 = 13;

/// The body of a record of the current format, or of formats 3 to 6 (which the store
/// migrates when it opens, but a journal may still carry).
fn split_version<'b>(
    what: &dyn Fn() -> String,
    bytes: &'b [u8],
) -> Result<(u8, &'b [u8]), StoreError> {
    match bytes.split_first() {
        Some((&v, body))
            if [
                v3::FORMAT,
                FORMAT_4,
                FORMAT_5,
                FORMAT_6,
                FORMAT_7,
                FORMAT_8,
                FORMAT_9,
                FORMAT_10,
                FORMAT_11,
                FORMAT_12,
                FORMAT_13,
                records::FORMAT,
            ]
            .contains(&v) =>
        {
            Ok((v, body))
        }
        Some((v, _)) => Err(StoreError::Decode {
            key: what(),
            reason: format!(
                "record format {v}, this controller reads formats {} to {}; \
                 start it on a new state directory",
                v3::FORMAT,
                records::FORMAT
            ),
        }),
        None => Err(StoreError::Decode {
            key: what(),
            reason: "empty".into(),
        }),
    }
}

/// Decodes a record whose layout is the same in formats 3 to 7.
fn decode<T: DeserializeOwned>(what: &dyn Fn() -> String, bytes: &[u8]) -> Result<T, StoreError> {
    let (_, body) = split_version(what, bytes)?;
    records::decode_body(what, body)
}

fn decode_job(what: &dyn Fn() -> String, bytes: &[u8]) -> Result<Job, StoreError> {
    match split_version(what, bytes)? {
        (v3::FORMAT, body) => v3::decode_job(what, body)?.into_job(what),
        (version, body) => job_record(what, version, body)?.into_job(what),
    }
}

/// A job record of format 4 to 6 in the current layout: what later formats added is
/// empty.
fn job_record(
    what: &dyn Fn() -> String,
    version: u8,
    body: &[u8],
) -> Result<JobRecord, StoreError> {
    match version {
        FORMAT_4 => Ok(JobRecord::from_format_4(
            records::decode_body::<JobFields4>(what, body)?,
        )),
        FORMAT_5 => Ok(JobRecord::from_format_5(
            records::decode_body::<JobRecord5>(what, body)?,
        )),
        FORMAT_6 | FORMAT_7 => Ok(JobRecord::from_format_7(records::decode_body::<
            records::JobRecord7,
        >(what, body)?)),
        FORMAT_8 => Ok(JobRecord::from_format_8(records::decode_body::<
            records::JobRecord8,
        >(what, body)?)),
        FORMAT_9 => Ok(JobRecord::from_format_9(records::decode_body::<
            records::JobRecord9,
        >(what, body)?)),
        FORMAT_10 => Ok(JobRecord::from_format_10(records::decode_body::<
            records::JobRecord10,
        >(what, body)?)),
        // Format 11 is format 12 without its last field, 12 is 13 without its, and 13
        // is 14 without its.
        FORMAT_11 | FORMAT_12 | FORMAT_13 => {
            let mut body = body.to_vec();
            if version < FORMAT_12 {
                body = records::body_with_empty::<records::JobFields12>(&body)?;
            }
            if version < FORMAT_13 {
                body = records::body_with_empty::<records::JobFields13>(&body)?;
            }
            records::decode_body(
                what,
                &records::body_with_empty::<records::JobFields14>(&body)?,
            )
        }
        _ => records::decode_body(what, body),
    }
}

/// A record of format 4 to 13, in the current format: a job, a node, usage, the
/// associations and a partition get what later formats added, empty; the other
/// records are the same bytes behind the new version.
fn migrate_format_4_to_13(
    tree: TreeName,
    key: &[u8],
    what: &dyn Fn() -> String,
    bytes: &[u8],
) -> Result<Vec<u8>, StoreError> {
    let version = bytes[0];
    let body = &bytes[1..];
    let new = |body: &[u8]| Ok([&[records::FORMAT][..], body].concat());
    match tree {
        TreeName::Jobs => records::encode(&job_record(what, version, body)?),
        TreeName::Nodes if version < FORMAT_7 => {
            new(&records::body_with_empty::<records::NodeFields7>(body)?)
        }
        TreeName::Accounting if key == ASSOCIATIONS_KEY => {
            let mut body = body.to_vec();
            if version < FORMAT_7 {
                body = records::body_with_empty::<records::AssociationsFields7>(&body)?;
            }
            if version < FORMAT_8 {
                body = records::body_with_empty::<records::AssociationsFields8>(&body)?;
            }
            if version < FORMAT_13 {
                body = records::body_with_empty::<records::AssociationsFields13>(&body)?;
            }
            new(&body)
        }
        TreeName::Accounting if key == OTHER_CLUSTERS_KEY && version < FORMAT_13 => new(
            &records::body_with_empty::<records::OtherClustersFields13>(body)?,
        ),
        TreeName::Usage if version < FORMAT_13 => {
            new(&records::body_with_empty::<records::UsageFields13>(body)?)
        }
        TreeName::Partitions if version < FORMAT_12 => new(&records::body_with_empty::<
            records::PartitionFields12,
        >(body)?),
        _ => new(body),
    }
}

/// Free bytes for unprivileged writers on the file system holding `dir`.
fn free_bytes(dir: &Path) -> nix::Result<u64> {
    let stat = nix::sys::statvfs::statvfs(dir)?;
    Ok((stat.blocks_available() as u64).saturating_mul(stat.fragment_size() as u64))
}

impl SledStore {
    /// Opens (or creates) the store in `dir`, finishes a turn a crash cut short, and
    /// migrates a store of format 3 to 6. Commits are refused while fewer than
    /// `min_free_bytes` are free on the file system.
    pub fn open(dir: &Path, min_free_bytes: u64) -> Result<SledStore, StoreError> {
        let db = sled::Config::new()
            .path(dir)
            .mode(sled::Mode::HighThroughput)
            .cache_capacity(16 << 20)
            .open()?;
        let store = SledStore {
            jobs: db.open_tree("jobs")?,
            payloads: db.open_tree("payloads")?,
            nodes: db.open_tree("nodes")?,
            reservations: db.open_tree("reservations")?,
            partitions: db.open_tree("partitions")?,
            usage: db.open_tree("usage")?,
            qos_usage: db.open_tree("qos-usage")?,
            accounting: db.open_tree("accounting")?,
            triggers: db.open_tree("triggers")?,
            journal_written: false.into(),
            dir: dir.to_path_buf(),
            min_free_bytes,
            db,
        };
        store.finish_interrupted_turn()?;
        store.migrate()?;
        Ok(store)
    }

    fn tree(&self, name: TreeName) -> &sled::Tree {
        match name {
            TreeName::Jobs => &self.jobs,
            TreeName::Payloads => &self.payloads,
            TreeName::Nodes => &self.nodes,
            TreeName::Reservations => &self.reservations,
            TreeName::Usage => &self.usage,
            TreeName::QosUsage => &self.qos_usage,
            TreeName::Accounting => &self.accounting,
            TreeName::Triggers => &self.triggers,
            TreeName::Partitions => &self.partitions,
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
            let puts: Vec<Put> = decode(&|| "journal".into(), &journal)?;
            self.apply(puts)?;
            self.journal_written.store(true, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Rewrites a store of format 4 or 5, or of format 3 (which kept no `format` key),
    /// in the current format, once; a new store gets the key at once. A store of any
    /// other format is refused, untouched.
    fn migrate(&self) -> Result<(), StoreError> {
        let from = match self.db.get(FORMAT_KEY)? {
            Some(format) if *format == [records::FORMAT] => return Ok(()),
            Some(format) if *format == [FORMAT_4] => FORMAT_4,
            Some(format) if *format == [FORMAT_5] => FORMAT_5,
            Some(format) if *format == [FORMAT_6] => FORMAT_6,
            Some(format) if *format == [FORMAT_7] => FORMAT_7,
            Some(format) if *format == [FORMAT_8] => FORMAT_8,
            Some(format) if *format == [FORMAT_9] => FORMAT_9,
            Some(format) if *format == [FORMAT_10] => FORMAT_10,
            Some(format) if *format == [FORMAT_11] => FORMAT_11,
            Some(format) if *format == [FORMAT_12] => FORMAT_12,
            Some(format) if *format == [FORMAT_13] => FORMAT_13,
            Some(format) => {
                return Err(StoreError::Format {
                    found: format.to_vec(),
                    reads: records::FORMAT,
                });
            }
            None => v3::FORMAT,
        };
        let mut rewritten = 0usize;
        for tree in TreeName::ALL {
            for item in self.tree(tree).iter() {
                let (key, value) = item?;
                let what = || format!("{tree:?} {}", String::from_utf8_lossy(&key));
                let new = match value.first() {
                    Some(&v) if v == v3::FORMAT => v3::migrate_record(tree as u8, &what, &value)?,
                    Some(
                        &(FORMAT_4 | FORMAT_5 | FORMAT_6 | FORMAT_7 | FORMAT_8 | FORMAT_9
                        | FORMAT_10 | FORMAT_11 | FORMAT_12 | FORMAT_13),
                    ) => migrate_format_4_to_13(tree, &key, &what, &value)?,
                    _ => continue,
                };
                self.tree(tree).insert(key, new)?;
                rewritten += 1;
            }
        }
        if let Some(journal) = self.db.get(JOURNAL_KEY)? {
            // Its records were applied and rewritten above: it has done its work.
            drop(journal);
            self.db.remove(JOURNAL_KEY)?;
            self.journal_written.store(false, Ordering::Relaxed);
        }
        self.db.insert(FORMAT_KEY, &[records::FORMAT])?;
        self.db.flush()?;
        if rewritten > 0 {
            tracing::info!(
                records = rewritten,
                from,
                to = records::FORMAT,
                "state store migrated"
            );
        }
        Ok(())
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
                        jobs.push(decode_job(&|| format!("job {}", id(&k)), &v)?);
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

    /// Refuses a commit of `bytes` while the state's file system is nearly full.
    fn check_room(&self, bytes: u64) -> Result<(), StoreError> {
        let free = free_bytes(&self.dir).map_err(|e| StoreError::Engine(e.to_string()))?;
        if free < self.min_free_bytes.saturating_add(bytes) {
            return Err(StoreError::Full(format!(
                "{} MB free on the state disk, under the {} MB kept free \
                 (state_min_free_mb); writes are refused until space is freed",
                free >> 20,
                self.min_free_bytes >> 20
            )));
        }
        Ok(())
    }
}

/// The puts of a batch: what stands alone, then the rest (see the module's doc).
fn puts(batch: &Batch) -> Result<(Vec<Put>, Vec<Put>), StoreError> {
    let job_put = |job: &Job| -> Result<Put, StoreError> {
        Ok((
            TreeName::Jobs as u8,
            job.id.to_be_bytes().to_vec(),
            Some(records::encode(&JobRecord::from(job))?),
        ))
    };
    let mut standalone = Vec::new();
    let mut others = Vec::new();
    for (id, payload) in &batch.payloads {
        standalone.push((
            TreeName::Payloads as u8,
            id.to_be_bytes().to_vec(),
            Some(records::encode(&PayloadRecord::from(payload))?),
        ));
    }
    for job in &batch.jobs {
        let put = job_put(job)?;
        if batch.only_submits {
            standalone.push(put);
        } else {
            others.push(put);
        }
    }
    for node in &batch.nodes {
        others.push((
            TreeName::Nodes as u8,
            node.name.as_bytes().to_vec(),
            Some(records::encode(&NodeRecord::from(node))?),
        ));
    }
    for (name, r) in &batch.reservations {
        let value = r
            .as_ref()
            .map(|r| records::encode(&ReservationRecord::from(r)))
            .transpose()?;
        others.push((
            TreeName::Reservations as u8,
            name.as_bytes().to_vec(),
            value,
        ));
    }
    for (name, p) in &batch.partitions {
        let value = p
            .as_ref()
            .map(|p| records::encode(&PartitionRecord::from(p)))
            .transpose()?;
        others.push((TreeName::Partitions as u8, name.as_bytes().to_vec(), value));
    }
    for (key, usage) in &batch.usage {
        others.push((
            TreeName::Usage as u8,
            usage_key(key),
            Some(records::encode(&UsageRecord::from(usage))?),
        ));
    }
    for (qos, usage) in &batch.qos_usage {
        others.push((
            TreeName::QosUsage as u8,
            qos.as_bytes().to_vec(),
            Some(records::encode(&UsageRecord::from(usage))?),
        ));
    }
    for id in &batch.purged {
        let key = id.to_be_bytes().to_vec();
        others.push((TreeName::Jobs as u8, key.clone(), None));
        others.push((TreeName::Payloads as u8, key, None));
    }
    for (id, trigger) in &batch.triggers {
        let value = trigger
            .as_ref()
            .map(|t| records::encode(&TriggerRecord::from(t)))
            .transpose()?;
        others.push((TreeName::Triggers as u8, id.to_be_bytes().to_vec(), value));
    }
    if let Some(next) = batch.next_trigger_id {
        others.push((
            TreeName::Triggers as u8,
            NEXT_TRIGGER_KEY.to_vec(),
            Some(records::encode(&NextTriggerRecord { id: next })?),
        ));
    }
    if let Some(assocs) = &batch.assocs {
        others.push((
            TreeName::Accounting as u8,
            ASSOCIATIONS_KEY.to_vec(),
            Some(records::encode(&AssociationsRecord::from(assocs.as_ref()))?),
        ));
        others.push((
            TreeName::Accounting as u8,
            OTHER_CLUSTERS_KEY.to_vec(),
            Some(records::encode(&OtherClustersRecord::from(
                assocs.as_ref(),
            ))?),
        ));
    }
    Ok((standalone, others))
}

impl Store for SledStore {
    fn load(&self) -> Result<Restored, StoreError> {
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
            let what = || format!("node {}", String::from_utf8_lossy(&k));
            nodes.push(decode::<NodeRecord>(&what, &v)?.into());
        }
        let mut reservations = Vec::new();
        for item in self.reservations.iter() {
            let (k, v) = item?;
            let what = || format!("reservation {}", String::from_utf8_lossy(&k));
            reservations.push(decode::<ReservationRecord>(&what, &v)?.into());
        }
        let mut triggers = Vec::new();
        let mut next_trigger_id = 0;
        for item in self.triggers.iter() {
            let (k, v) = item?;
            if k.as_ref() == NEXT_TRIGGER_KEY {
                next_trigger_id = decode::<NextTriggerRecord>(&|| "next trigger id".into(), &v)?.id;
                continue;
            }
            let what = || format!("trigger {}", String::from_utf8_lossy(&k));
            triggers.push(decode::<TriggerRecord>(&what, &v)?.into());
        }
        let mut partitions = Vec::new();
        for item in self.partitions.iter() {
            let (k, v) = item?;
            let what = || format!("partition {}", String::from_utf8_lossy(&k));
            partitions.push(decode::<PartitionRecord>(&what, &v)?.into());
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
            let what = || format!("usage {account}/{user}");
            let record: UsageRecord = decode(&what, &v)?;
            usage.push(((account.to_string(), user.to_string()), record.into()));
        }
        let mut qos_usage = Vec::new();
        for item in self.qos_usage.iter() {
            let (k, v) = item?;
            let qos = String::from_utf8_lossy(&k).into_owned();
            let record: UsageRecord = decode(&|| format!("QOS usage {qos}"), &v)?;
            qos_usage.push((qos, record.into()));
        }
        let mut assocs: Option<model::assoc::Associations> = match self
            .accounting
            .get(ASSOCIATIONS_KEY)?
        {
            Some(v) => Some(decode::<AssociationsRecord>(&|| "associations".into(), &v)?.into()),
            None => None,
        };
        if let (Some(a), Some(v)) = (&mut assocs, self.accounting.get(OTHER_CLUSTERS_KEY)?) {
            decode::<OtherClustersRecord>(&|| "other clusters".into(), &v)?.restore_into(a);
        }
        Ok(Restored {
            qos_usage,
            jobs,
            nodes,
            reservations,
            partitions,
            usage,
            assocs,
            triggers,
            next_trigger_id,
        })
    }

    fn payload(&self, id: JobId) -> Result<Option<JobPayload>, StoreError> {
        match self.payloads.get(id.to_be_bytes())? {
            Some(v) => {
                let record: PayloadRecord = decode(&|| format!("payload {id}"), &v)?;
                Ok(Some(record.into()))
            }
            None => Ok(None),
        }
    }

    /// Writes a turn's records and waits until they are on disk, in the order the
    /// module's doc gives. It blocks the calling thread for the disk's answer: the
    /// state owner has nothing else to do meanwhile (inputs that arrive form the next
    /// turn), and handing the flush to another thread and back cost more than the wait.
    fn commit(&self, batch: Batch) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        let (standalone, others) = puts(&batch)?;
        let bytes = standalone
            .iter()
            .chain(&others)
            .map(|(_, k, v)| k.len() + v.as_ref().map_or(0, Vec::len))
            .sum::<usize>();
        // Twice: the journal holds the other records a second time.
        self.check_room(2 * bytes as u64)?;
        self.apply(standalone)?;
        if others.len() > 1 {
            self.db.insert(JOURNAL_KEY, records::encode(&others)?)?;
            self.journal_written.store(true, Ordering::Relaxed);
        } else if self.journal_written.swap(false, Ordering::Relaxed) {
            self.db.remove(JOURNAL_KEY)?;
        }
        self.apply(others)?;
        self.db.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::usage::AssocUsage;
    use model::{JobSpec, JobState, Node};
    use std::sync::Arc;

    fn open(dir: &Path) -> SledStore {
        SledStore::open(dir, 0).unwrap()
    }

    /// Opens the store again in this process: sled's background flusher may hold the
    /// directory's lock a moment after the last handle is dropped.
    async fn reopen(dir: &Path) -> SledStore {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match SledStore::open(dir, 0) {
                Ok(s) => return s,
                Err(e) if std::time::Instant::now() > deadline => panic!("{e}"),
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            }
        }
    }

    fn payload() -> JobPayload {
        JobPayload {
            script: "#!/bin/sh\n".into(),
            env: vec![],
        }
    }

    fn job(id: JobId, state: JobState) -> Arc<Job> {
        let mut job = Job::new(id, JobSpec::default(), 5, None);
        job.state = state;
        Arc::new(job)
    }

    /// A batch that changes these jobs' records (not a turn of submits).
    fn updates(jobs: &[Arc<Job>]) -> Batch {
        Batch {
            jobs: jobs.to_vec(),
            ..Batch::default()
        }
    }

    fn job_states(store: &SledStore) -> Vec<(JobId, JobState)> {
        let loaded = store.load().unwrap();
        loaded.jobs.iter().map(|j| (j.id, j.state)).collect()
    }

    #[tokio::test]
    async fn records_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(dir.path());
            let mut batch = updates(&[3, 1, 2].map(|id| job(id, JobState::Pending)));
            batch.payloads.push((1, payload()));
            batch.nodes.push(Node::from_config("n1", 4, 100, vec![]));
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
    async fn run_time_partitions_survive_reopen_and_a_deleted_one_is_gone() {
        use model::config::Partition;
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(dir.path());
            let mut short = Partition::open("short", vec!["n1".into()], false);
            short.max_time_min = Some(30);
            let batch = Batch {
                partitions: vec![
                    ("short".into(), Some(short)),
                    ("gone".into(), Some(Partition::open("gone", vec![], false))),
                ],
                ..Batch::default()
            };
            store.commit(batch).unwrap();
            store
                .commit(Batch {
                    partitions: vec![("gone".into(), None)],
                    ..Batch::default()
                })
                .unwrap();
        }
        let store = reopen(dir.path()).await;
        let loaded = store.load().unwrap();
        assert_eq!(loaded.partitions.len(), 1);
        assert_eq!(loaded.partitions[0].name, "short");
        assert_eq!(loaded.partitions[0].max_time_min, Some(30));
        assert_eq!(loaded.partitions[0].nodes, ["n1"]);
    }

    #[tokio::test]
    async fn purged_jobs_and_their_payloads_are_gone_after_reopen() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(dir.path());
            let mut batch = updates(&[1, 2].map(|id| job(id, JobState::Completed)));
            batch.payloads.push((1, payload()));
            batch.payloads.push((2, payload()));
            store.commit(batch).unwrap();
            store
                .commit(Batch {
                    purged: vec![1],
                    ..Batch::default()
                })
                .unwrap();
        }
        let store = reopen(dir.path()).await;
        let ids: Vec<u32> = store.load().unwrap().jobs.iter().map(|j| j.id).collect();
        assert_eq!(ids, vec![2]);
        assert!(store.payload(1).unwrap().is_none());
        assert!(store.payload(2).unwrap().is_some());
    }

    #[tokio::test]
    async fn triggers_survive_reopen_and_a_cleared_one_is_gone() {
        use model::trigger::{Trigger, TriggerEvent, TriggerResource, TriggerSpec};
        let trigger = |id: u32| Trigger {
            id,
            spec: TriggerSpec {
                resource: TriggerResource::Nodes(None),
                event: TriggerEvent::Down,
                offset: 0,
                program: "/bin/true".into(),
                perm: false,
            },
            uid: 0,
            gid: 0,
            user: "root".into(),
        };
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(dir.path());
            let batch = Batch {
                triggers: vec![(1, Some(trigger(1))), (2, Some(trigger(2)))],
                ..Batch::default()
            };
            store.commit(batch).unwrap();
            let batch = Batch {
                triggers: vec![(1, None)],
                next_trigger_id: Some(5),
                ..Batch::default()
            };
            store.commit(batch).unwrap();
        }
        let store = reopen(dir.path()).await;
        let loaded = store.load().unwrap();
        assert_eq!(loaded.triggers, vec![trigger(2)]);
        assert_eq!(loaded.next_trigger_id, 5);
    }

    #[tokio::test]
    async fn usage_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let ml = ("ml".to_string(), "alice".to_string());
        let record = AssocUsage {
            billing: 1234.5,
            tres: [("cpu".to_string(), 1000.0), ("gres/gpu".to_string(), 250.0)].into(),
            wall: 600.0,
            at: 1_700_000_000,
        };
        {
            let store = open(dir.path());
            let batch = Batch {
                usage: vec![
                    (ml.clone(), record.clone()),
                    (("root".into(), "root".into()), AssocUsage::default()),
                ],
                qos_usage: vec![("normal".into(), record.clone())],
                ..Batch::default()
            };
            store.commit(batch).unwrap();
            // A later record of the same association replaces the first.
            let newer = AssocUsage {
                billing: 2000.0,
                ..record.clone()
            };
            let batch = Batch {
                usage: vec![(ml.clone(), newer)],
                ..Batch::default()
            };
            store.commit(batch).unwrap();
        }
        let store = reopen(dir.path()).await;
        let loaded = store.load().unwrap();
        assert_eq!(loaded.usage.len(), 2);
        assert_eq!(loaded.usage[0].0, ml);
        assert_eq!(loaded.usage[0].1.billing, 2000.0);
        assert_eq!(loaded.usage[0].1.tres, record.tres);
        assert_eq!(loaded.usage[0].1.wall, 600.0);
        assert_eq!(
            loaded.qos_usage,
            vec![("normal".to_string(), record.clone())]
        );
        assert_eq!(loaded.usage[1].0.0, "root");
    }

    #[tokio::test]
    async fn associations_survive_reopen_and_an_empty_store_has_none() {
        let dir = tempfile::tempdir().unwrap();
        let config = model::Config::parse(
            "[[nodes]]\nnames = \"n1\"\ncpus = 1\nmemory = \"1G\"\n\
             [[partitions]]\nname = \"p\"\nnodes = \"ALL\"\n\
             [[accounts]]\nname = \"ml\"\nusers = [\"alice\"]\n",
            "t",
        )
        .unwrap();
        let mut assocs = model::assoc::Associations::from_config(&config);
        {
            let store = open(dir.path());
            assert!(store.load().unwrap().assocs.is_none());
            assocs.accounts.get_mut("ml").unwrap().limits.grp_jobs = Some(3);
            // Another cluster's associations, with a limit kept apart since format 7.
            let mut other = model::assoc::Associations::new_cluster_tree();
            let mut physics = model::assoc::Account::new("physics", Some("root"));
            physics.users.insert("alice".into());
            physics.limits.borrowing_limit.insert("cpu".into(), 2);
            other.insert("physics".into(), physics);
            assocs.other_clusters.insert("c2".into(), other);
            assocs.relink();
            let batch = Batch {
                assocs: Some(Arc::new(assocs.clone())),
                ..Batch::default()
            };
            store.commit(batch).unwrap();
        }
        let store = reopen(dir.path()).await;
        assert_eq!(store.load().unwrap().assocs, Some(assocs));
    }

    #[tokio::test]
    async fn a_large_store_loads_in_id_order_and_a_bad_record_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let n = 2500; // more than two of the loader's batches
        let store = open(dir.path());
        let jobs: Vec<Arc<Job>> = (1..=n).rev().map(|id| job(id, JobState::Pending)).collect();
        store.commit(updates(&jobs)).unwrap();
        let ids: Vec<JobId> = store.load().unwrap().jobs.iter().map(|j| j.id).collect();
        assert_eq!(ids, (1..=n).collect::<Vec<_>>());
        // A record of another format, in the middle of the scan.
        store
            .jobs
            .insert(1500u32.to_be_bytes(), vec![records::FORMAT + 1, 9])
            .unwrap();
        let err = store.load().err().unwrap().to_string();
        assert!(err.contains("job 1500"), "{err}");
        let format = format!("record format {}", records::FORMAT + 1);
        assert!(err.contains(&format), "{err}");
    }

    /// What a crash leaves when it cuts a turn short: the turn's payloads and journal
    /// (if it needs one) are on disk, and only its first `records_written` records.
    fn write_partial_turn(store: &SledStore, batch: Batch, records_written: usize) {
        let (standalone, others) = puts(&batch).unwrap();
        store.apply(standalone).unwrap();
        if others.len() > 1 {
            store
                .db
                .insert(JOURNAL_KEY, records::encode(&others).unwrap())
                .unwrap();
        }
        store
            .apply(others.into_iter().take(records_written).collect())
            .unwrap();
        store.db.flush().unwrap();
    }

    #[tokio::test]
    async fn a_turn_cut_short_is_completed_from_its_journal() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(dir.path());
            let pending = [job(1, JobState::Pending), job(2, JobState::Pending)];
            store.commit(updates(&pending)).unwrap();
            // Job 1 ends and job 2 starts on n1; the crash comes after job 1's record.
            let mut batch = updates(&[job(1, JobState::Completed), job(2, JobState::Running)]);
            batch.nodes.push(Node::from_config("n1", 4, 100, vec![]));
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
            let store = open(dir.path());
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
        let store = open(dir.path());
        let batch = Batch {
            payloads: vec![(1, payload()), (2, payload())],
            jobs: vec![job(1, JobState::Pending), job(2, JobState::Pending)],
            only_submits: true,
            ..Batch::default()
        };
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
        {
            let store = open(dir.path());
            let mut batch = updates(&[job(1, JobState::Pending)]);
            batch.payloads.push((1, payload()));
            store.commit(batch).unwrap();
            // The next submit's payload is written; the crash comes before its job.
            let mut batch = updates(&[job(2, JobState::Pending)]);
            batch.payloads.push((2, payload()));
            write_partial_turn(&store, batch, 0);
        }
        let store = reopen(dir.path()).await;
        assert_eq!(job_states(&store), vec![(1, JobState::Pending)]);
        assert!(store.payload(1).unwrap().is_some());
        assert!(store.payload(2).unwrap().is_none());
    }

    #[test]
    fn rejects_unknown_versions() {
        let what = || "x".to_string();
        assert!(decode_job(&what, &[9, 1, 2]).is_err());
        assert!(decode_job(&what, &[]).is_err());
    }

    #[test]
    fn a_full_disk_refuses_the_commit_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = SledStore::open(dir.path(), u64::MAX / 4).unwrap();
        let err = store
            .commit(updates(&[job(1, JobState::Pending)]))
            .unwrap_err();
        assert!(matches!(err, StoreError::Full(_)), "{err}");
        assert!(
            err.to_string().contains("MB free on the state disk"),
            "{err}"
        );
        assert!(store.load().unwrap().jobs.is_empty());
        // Nothing to write needs no room.
        store.commit(Batch::default()).unwrap();
    }

    /// A copy of a fixture: a store written by the release of format 3
    /// (`store-v3`), that store as the release of format 4 migrated it (`store-v4`),
    /// and that as the release of format 5 migrated it, with a job more (`store-v5`).
    fn fixture(name: &str) -> tempfile::TempDir {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        let dir = tempfile::tempdir().unwrap();
        for entry in std::fs::read_dir(&fixture).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
        }
        dir
    }

    #[tokio::test]
    async fn a_store_of_format_3_is_migrated_and_loses_nothing() {
        let loaded = migrated_fixture_loses_nothing("store-v3").await;
        assert_eq!(loaded.jobs.len(), 12);
        what_format_5_added_is_empty(&loaded);
    }

    #[tokio::test]
    async fn a_store_of_format_4_is_migrated_and_loses_nothing() {
        let loaded = migrated_fixture_loses_nothing("store-v4").await;
        assert_eq!(loaded.jobs.len(), 12);
        what_format_5_added_is_empty(&loaded);
    }

    /// `store-v5`: `store-v4` as the release of format 5 migrated it, and a job with
    /// what format 5 added (`--mem=0`, a step's nodes, CPUs and usage).
    #[tokio::test]
    async fn a_store_of_format_5_is_migrated_and_loses_nothing() {
        let loaded = migrated_fixture_loses_nothing("store-v5").await;
        let whole = loaded.jobs.iter().find(|j| j.id == 13).unwrap();
        assert_eq!(
            (whole.spec.name.as_str(), whole.state, whole.spec.num_nodes),
            ("whole", JobState::Completed, 2)
        );
        assert!(whole.spec.mem_whole_node);
        let step = &whole.steps[0];
        assert_eq!((step.id, step.cpus, step.num_tasks), (Some(0), 2, 2));
        assert_eq!(step.nodes, ["fn1", "fn2"]);
        let usage = step.usage.as_ref().unwrap();
        assert_eq!(
            (usage.max_rss_bytes, usage.max_rss_node.as_str()),
            (4096, "fn2")
        );
        assert_eq!(
            (usage.total_cpu_us, usage.user_cpu_us, usage.system_cpu_us),
            (1500, 1000, 500)
        );
        // What format 6 added is empty.
        assert!(loaded.jobs.iter().all(|j| j.spec.max_nodes == 0));
    }

    fn what_format_5_added_is_empty(loaded: &Restored) {
        assert!(loaded.jobs.iter().all(|j| !j.spec.mem_whole_node));
        let long = loaded.jobs.iter().find(|j| j.id == 10).unwrap();
        let batch = &long.steps[0];
        assert_eq!((batch.id, batch.name.as_str()), (None, "batch"));
        assert!(batch.nodes.is_empty() && batch.usage.is_none());
    }

    /// Loads the fixture `name`, migrating it, and checks what every fixture holds.
    async fn migrated_fixture_loses_nothing(name: &str) -> Restored {
        let dir = fixture(name);
        let loaded = {
            let store = open(dir.path());
            store.load().unwrap()
        };
        // Every record is of the current format now, and reads back the same.
        let store = reopen(dir.path()).await;
        for tree in TreeName::ALL {
            for item in store.tree(tree).iter() {
                let (key, value) = item.unwrap();
                assert_eq!(value[0], records::FORMAT, "{tree:?} {key:?}");
            }
        }
        assert_eq!(
            store.db.get(FORMAT_KEY).unwrap().as_deref(),
            Some(&[records::FORMAT][..])
        );
        let again = store.load().unwrap();
        assert_eq!(again.jobs, loaded.jobs);
        let line = |j: &Job| {
            format!(
                "{} {} {} {} {}",
                j.display_id(),
                j.spec.name,
                j.state.name(),
                j.reason,
                j.spec.account
            )
        };
        let jobs: Vec<String> = loaded.jobs.iter().take(12).map(line).collect();
        assert_eq!(
            jobs,
            [
                "1 ok COMPLETED None ml",
                "2 bad FAILED NonZeroExitCode ml",
                "3_3 arr COMPLETED None ml",
                "3_0 arr COMPLETED None ml",
                "3_1 arr COMPLETED None ml",
                "3_2 arr COMPLETED None ml",
                "7 held CANCELLED None ml",
                "8 pend PENDING JobHeldAdmin ml",
                "9 cancelme PENDING BeginTime ml",
                "10 long RUNNING None ml",
                "11 dep PENDING None ml",
                "12_[1-5] arr2 PENDING JobHeldUser ml",
            ]
        );
        let long = loaded.jobs.iter().find(|j| j.id == 10).unwrap();
        assert!(long.launched && long.kill.is_none());
        assert_eq!(long.alloc.as_ref().unwrap().hostlist(), "fn1");
        assert_eq!(long.spec.comment, "fixture");
        assert!(long.spec.requeue);
        let cancelled = loaded.jobs.iter().find(|j| j.id == 7).unwrap();
        assert_eq!(cancelled.cancelled_by, Some(0));
        let nine = loaded.jobs.iter().find(|j| j.id == 9).unwrap();
        assert_eq!(nine.time_limit_min, Some(20));
        assert_eq!(loaded.nodes.len(), 2);
        assert_eq!(loaded.reservations.len(), 1);
        assert_eq!(loaded.reservations[0].name, "maint");
        assert_eq!(loaded.reservations[0].nodes, vec!["fn2".to_string()]);
        assert_eq!(loaded.usage.len(), 1);
        assert_eq!(loaded.usage[0].0, ("ml".to_string(), "root".to_string()));
        assert!(loaded.usage[0].1.at > 0);
        let script = store.payload(10).unwrap().unwrap().script;
        assert!(script.contains("sleep 1000"), "{script}");
        loaded
    }

    /// A node and the associations as format 6 wrote them (the golden bytes of that
    /// release) are read with what format 7 added empty, and keep the rest.
    #[tokio::test]
    async fn node_and_association_records_of_format_6_are_migrated_with_what_7_added_empty() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(dir.path());
            let old = hex("06026e31000480080100046831303000000001046661737401000000000000");
            store.nodes.insert(b"n1", old).unwrap();
            // The associations as format 6 wrote them: ml with GrpTRES=gres/gpu=4.
            let assocs = hex(
                "0602026d6c0104726f6f7401000105616c6963650105616c6963650000000000\
                 00000102000000026d6c026d6c0108677265732f677075040000000000000000\
                 000000000105616c69636504726f6f740001000104726f6f7400146465666175\
                 6c7420726f6f74206163636f756e7404726f6f74000000000000000000000000\
                 00000205616c696365026d6c0104726f6f7404726f6f740201066e6f726d616c\
                 00000000000109000000000000000000000000000000f03f01",
            );
            store.accounting.insert(ASSOCIATIONS_KEY, assocs).unwrap();
            store.db.insert(FORMAT_KEY, &[FORMAT_6]).unwrap();
            store.db.flush().unwrap();
        }
        let store = reopen(dir.path()).await;
        let loaded = store.load().unwrap();
        let n1 = &loaded.nodes[0];
        assert_eq!(
            (n1.name.as_str(), n1.cpus, n1.features.as_slice()),
            ("n1", 4, &["fast".to_string()][..])
        );
        assert_eq!((n1.gpus.len(), n1.gpus[0].whole), (1, None));
        assert!(n1.numa_cpus.is_empty());
        assert_eq!(store.nodes.get(b"n1").unwrap().unwrap()[0], records::FORMAT);
        let ml = &loaded.assocs.as_ref().unwrap().accounts["ml"];
        assert_eq!(ml.limits.grp_tres.get("gres/gpu"), Some(&4));
        assert!(ml.limits.borrowing_limit.is_empty() && ml.limits.lending_limit.is_empty());
    }

    #[tokio::test]
    async fn job_and_association_records_of_format_7_are_migrated_with_what_8_added_empty() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(dir.path());
            // Job 7 as format 7 wrote it (running on n1, step 0 with its usage).
            let job = hex(concat!(
                "0707070002000105747261696ee8070005616c696365026d6c036770750000000000",
                "00000002040000000100000000000000000000010200010100000000000000000001",
                "095265736f7572636573c801dc0100000101026e3108800401030200010000000000",
                "013c00010100017301dc01000000020000000000010101f00101010101026e310801",
                "8020026e31e807d80490030302000202616c010101802000026e318020e80700026e31"
            ));
            store.jobs.insert(7u32.to_be_bytes(), job).unwrap();
            // The associations as format 7 wrote them: ml with BorrowingLimit=2.
            let assocs = hex(
                "0702026d6c0104726f6f7401000105616c6963650105616c6963650000000000\
                 00000102000000026d6c026d6c0108677265732f677075040000000000000000\
                 000000000105616c69636504726f6f740001000104726f6f7400146465666175\
                 6c7420726f6f74206163636f756e7404726f6f74000000000000000000000000\
                 00000205616c696365026d6c0104726f6f7404726f6f740201066e6f726d616c\
                 00000000000109000000000000000000000000000000f03f01\
                 01026d6c0108677265732f677075020108677265732f67707501",
            );
            store.accounting.insert(ASSOCIATIONS_KEY, assocs).unwrap();
            store.db.insert(FORMAT_KEY, &[FORMAT_7]).unwrap();
            store.db.flush().unwrap();
        }
        let store = reopen(dir.path()).await;
        let loaded = store.load().unwrap();
        let job = &loaded.jobs[0];
        assert_eq!(
            (job.id, job.spec.name.as_str(), job.gpu_idle_flagged),
            (7, "train", None)
        );
        let usage = job.steps[0].usage.as_ref().unwrap();
        assert_eq!(
            (usage.max_rss_bytes, usage.total_cpu_us, usage.gpu),
            (4096, 1000, None)
        );
        assert_eq!(
            store.jobs.get(7u32.to_be_bytes()).unwrap().unwrap()[0],
            records::FORMAT
        );
        let assocs = loaded.assocs.as_ref().unwrap();
        assert_eq!(
            assocs.accounts["ml"].limits.borrowing_limit.get("gres/gpu"),
            Some(&2)
        );
        assert_eq!(assocs.qos["normal"].gpu_idle, Default::default());
    }

    #[tokio::test]
    async fn job_records_of_format_8_are_migrated_with_what_9_added_empty() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(dir.path());
            // Job 7 as format 8 wrote it (running on n1, step 0 with its usage and GPU
            // use, flagged idle at 130).
            let job = hex(concat!(
                "0807070002000105747261696ee8070005616c696365026d6c036770750000000000",
                "00000002040000000100000000000000000000010200010100000000000000000001",
                "095265736f7572636573c801dc0100000101026e3108800401030200010000000000",
                "013c00010100017301dc01000000020000000000010101f00101010101026e310801",
                "8020026e31e807d80490030302000202616c010101802000026e318020e80700026e31",
                "0101e0d4039875808080800400018402"
            ));
            store.jobs.insert(7u32.to_be_bytes(), job).unwrap();
            store.db.insert(FORMAT_KEY, &[FORMAT_8]).unwrap();
            store.db.flush().unwrap();
        }
        let store = reopen(dir.path()).await;
        let loaded = store.load().unwrap();
        let job = &loaded.jobs[0];
        assert_eq!(
            (job.id, job.spec.name.as_str(), job.gpu_idle_flagged),
            (7, "train", Some(130))
        );
        assert_eq!(job.spec.details, Default::default());
        assert_eq!(
            store.jobs.get(7u32.to_be_bytes()).unwrap().unwrap()[0],
            records::FORMAT
        );
    }

    #[tokio::test]
    async fn job_records_of_format_9_are_migrated_with_steps_of_no_limit_of_their_own() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(dir.path());
            // Job 7 as format 9 wrote it: format 8's bytes, then no options as given.
            let job = hex(concat!(
                "0907070002000105747261696ee8070005616c696365026d6c036770750000000000",
                "00000002040000000100000000000000000000010200010100000000000000000001",
                "095265736f7572636573c801dc0100000101026e3108800401030200010000000000",
                "013c00010100017301dc01000000020000000000010101f00101010101026e310801",
                "8020026e31e807d80490030302000202616c010101802000026e318020e80700026e31",
                "0101e0d4039875808080800400018402",
                "0000000000000000000000000000"
            ));
            store.jobs.insert(7u32.to_be_bytes(), job).unwrap();
            store.db.insert(FORMAT_KEY, &[FORMAT_9]).unwrap();
            store.db.flush().unwrap();
        }
        let store = reopen(dir.path()).await;
        let loaded = store.load().unwrap();
        let step = &loaded.jobs[0].steps[0];
        assert_eq!(
            (step.id, step.num_tasks, step.time_limit_min, step.timed_out),
            (Some(0), 2, None, false)
        );
        assert_eq!(
            store.jobs.get(7u32.to_be_bytes()).unwrap().unwrap()[0],
            records::FORMAT
        );
    }

    #[tokio::test]
    async fn job_records_of_format_10_are_migrated_as_no_heterogeneous_job() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(dir.path());
            // Job 7 as format 10 wrote it: format 9's bytes, then step 0's own time
            // limit, run out, and its GPU request.
            let job = hex(&format!("0a{JOB_7_BODY_10}"));
            store.jobs.insert(7u32.to_be_bytes(), job).unwrap();
            store.db.insert(FORMAT_KEY, &[FORMAT_10]).unwrap();
            store.db.flush().unwrap();
        }
        let store = reopen(dir.path()).await;
        let loaded = store.load().unwrap();
        let job = &loaded.jobs[0];
        assert_eq!(
            (job.id, job.het, job.steps[0].time_limit_min),
            (7, None, Some(5))
        );
        assert_eq!(
            store.jobs.get(7u32.to_be_bytes()).unwrap().unwrap()[0],
            records::FORMAT
        );
    }

    #[tokio::test]
    async fn partition_records_of_format_11_are_migrated_with_no_deny_qos_or_groups() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(dir.path());
            // Partition p1 as format 11 wrote it: nodes n1, default, MaxTime=30, DOWN.
            let partition = hex("0b02703101026e3101011e000001010100000000");
            store.partitions.insert("p1", partition).unwrap();
            store.db.insert(FORMAT_KEY, &[FORMAT_11]).unwrap();
            store.db.flush().unwrap();
        }
        let store = reopen(dir.path()).await;
        let loaded = store.load().unwrap();
        let p = &loaded.partitions[0];
        assert_eq!((p.name.as_str(), p.max_time_min), ("p1", Some(30)));
        assert!(p.deny_qos.is_empty() && p.allow_groups.is_empty());
        assert_eq!(
            store.partitions.get("p1").unwrap().unwrap()[0],
            records::FORMAT
        );
    }

    #[tokio::test]
    async fn jobs_usage_and_associations_of_format_12_are_migrated_with_what_13_added_empty() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(dir.path());
            // As format 12 wrote them: usage of ml/alice (billing 1.5, cpu 2.0, at 3);
            // the associations (ml with alice, a GrpTRES, quota limits, a user limit,
            // a coordinator; QOS normal with GrpSubmitJobs and a GPU idle policy);
            // another cluster c2 with ml and MaxJobs=2.
            let usage = hex("0c000000000000f83f0103637075000000000000004006");
            store.usage.insert(b"ml\0alice", usage).unwrap();
            let assocs = hex(concat!(
                "0c02026d6c0104726f6f7401000105616c6963650105616c6963650000000000",
                "00000102000000026d6c026d6c0108677265732f677075040000000000000000",
                "000000000105616c69636504726f6f740001000104726f6f7400146465666175",
                "6c7420726f6f74206163636f756e7404726f6f74000000000000000000000000",
                "00000205616c696365026d6c0104726f6f7404726f6f740201066e6f726d616c",
                "00000000000109000000000000000000000000000000f03f01",
                "01026d6c0108677265732f677075020108677265732f677075",
                "0101066e6f726d616cd80401ac02"
            ));
            store.accounting.insert(ASSOCIATIONS_KEY, assocs).unwrap();
            let others = hex(concat!(
                "0c0102633202026d6c0104726f6f7401000105616c69636500026d6c026d6c00",
                "000000000000010200000000000004726f6f740001000104726f6f7400146465",
                "6661756c7420726f6f74206163636f756e7404726f6f74000000000000000000",
                "000000000000"
            ));
            store.accounting.insert(OTHER_CLUSTERS_KEY, others).unwrap();
            // Job 7 as format 12 wrote it (the records' golden job).
            // Format 11 added "00" (no heterogeneous job), 12 "000000".
            let job = hex(&format!("0c{JOB_7_BODY_10}00000000"));
            store.jobs.insert(7u32.to_be_bytes(), job).unwrap();
            store.db.insert(FORMAT_KEY, &[FORMAT_12]).unwrap();
            store.db.flush().unwrap();
        }
        let store = reopen(dir.path()).await;
        let loaded = store.load().unwrap();
        let usage = &loaded.usage[0].1;
        assert_eq!((usage.billing, usage.wall, usage.at), (1.5, 0.0, 3));
        let assocs = loaded.assocs.unwrap();
        let ml = &assocs.accounts["ml"];
        assert_eq!(ml.limits.grp_tres["gres/gpu"], 4);
        assert_eq!(ml.limits.borrowing_limit["gres/gpu"], 2);
        assert_eq!(ml.user_limits["alice"].max_jobs, Some(2));
        assert!(ml.limits.max_tres_mins_per_job.is_empty() && ml.limits.grp_wall_min.is_none());
        assert_eq!(assocs.qos["normal"].gpu_idle.limit_s, Some(600));
        assert_eq!(assocs.other_clusters["c2"]["ml"].limits.max_jobs, Some(2));
        let job = &loaded.jobs[0];
        assert_eq!((job.id, job.derived_exit_status), (7, None));
        // Eligible when it could run by then: its submit (or begin) time.
        assert_eq!(job.eligible_time, job.submit_time.max(job.spec.begin_time));
        for (tree, key) in [
            (&store.usage, &b"ml\0alice"[..]),
            (&store.accounting, ASSOCIATIONS_KEY),
            (&store.accounting, OTHER_CLUSTERS_KEY),
        ] {
            assert_eq!(tree.get(key).unwrap().unwrap()[0], records::FORMAT);
        }
    }

    #[tokio::test]
    async fn jobs_of_format_13_are_migrated_with_what_14_added_empty_and_the_rest_kept() {
        let dir = tempfile::tempdir().unwrap();
        // Usage of ml/alice as format 13 wrote it: billing 1.5, cpu 2.0, at 3, then
        // what 13 added, 4 wall seconds.
        let usage_13 = "000000000000f83f01036370750000000000000040060000000000001040";
        {
            let store = open(dir.path());
            store
                .usage
                .insert(b"ml\0alice", hex(&format!("0d{usage_13}")))
                .unwrap();
            // Job 7 as format 13 wrote it: format 11 added "00", 12 "000000", 13 no
            // DerivedExitCode and eligible at 100.
            let job = hex(&format!("0d{JOB_7_BODY_10}000000000001c801"));
            store.jobs.insert(7u32.to_be_bytes(), job).unwrap();
            store.db.insert(FORMAT_KEY, &[FORMAT_13]).unwrap();
            store.db.flush().unwrap();
        }
        let store = reopen(dir.path()).await;
        let loaded = store.load().unwrap();
        let job = &loaded.jobs[0];
        assert_eq!((job.id, job.eligible_time), (7, 100));
        let tasks = job.steps[0].usage.as_ref().unwrap().tasks.as_ref().unwrap();
        assert_eq!((tasks.max_rss_bytes, tasks.disk.as_ref()), (4096, None));
        assert_eq!(loaded.usage[0].1.wall, 4.0);
        // Usage had nothing added: the same bytes behind the new version.
        assert_eq!(
            store.usage.get(b"ml\0alice").unwrap().unwrap().to_vec(),
            hex(&format!("{:02x}{usage_13}", records::FORMAT))
        );
    }

    /// Job 7's record as format 10 wrote it, after its version byte (the records'
    /// golden job of that format): format 9's bytes, then step 0's own time limit, run
    /// out, and its GPU request.
    const JOB_7_BODY_10: &str = concat!(
        "07070002000105747261696ee8070005616c696365026d6c036770750000000000",
        "00000002040000000100000000000000000000010200010100000000000000000001",
        "095265736f7572636573c801dc0100000101026e3108800401030200010000000000",
        "013c00010100017301dc01000000020000000000010101f00101010101026e310801",
        "8020026e31e807d80490030302000202616c010101802000026e318020e80700026e31",
        "0101e0d4039875808080800400018402",
        "0000000000000000000000000000",
        "01010501",
        "000000000000000000"
    );

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn a_store_of_a_newer_format_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = open(dir.path());
            store.commit(updates(&[job(1, JobState::Pending)])).unwrap();
            store.db.insert(FORMAT_KEY, &[records::FORMAT + 1]).unwrap();
            store.db.flush().unwrap();
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let refused = loop {
            match SledStore::open(dir.path(), 0) {
                Err(StoreError::Format { found, reads }) => break (found, reads),
                // sled's flusher may still hold the lock: try again.
                Err(_) if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                other => panic!("{:?}", other.map(|_| ())),
            }
        };
        assert_eq!(refused, (vec![records::FORMAT + 1], records::FORMAT));
        // Still the newer release's store.
        let db = sled::open(dir.path()).unwrap();
        assert_eq!(
            db.get(FORMAT_KEY).unwrap().as_deref(),
            Some(&[records::FORMAT + 1][..])
        );
    }
}
