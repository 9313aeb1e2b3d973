//! The controller's durable state, behind one trait: the only module that touches a
//! storage engine. `SledStore` keeps it in sled on the controller's disk; another
//! backend (a replicated store for failover) implements the same trait, and the state
//! owner does not change.
//!
//! What is kept: job records, their payloads (script and environment, written once at
//! submit), node records, reservations, the decayed usage of each association, and
//! the associations themselves (accounts, users, QOS: what `sacctmgr` changes) and
//! `strigger`'s triggers, as
//! the record types of `records` (format 7; stores of formats 3 to 6 are migrated
//! when opened, see `v3` and `sled`). A commit takes the records one turn of the state owner changed
//! and returns once they survive a crash of the controller; the caller acknowledges
//! nothing before that. A commit is atomic: after a crash a turn is there whole or not
//! at all.

mod records;
mod sled;
mod v3;

pub use self::sled::SledStore;

use model::assoc::Associations;
use model::trigger::Trigger;
use model::usage::{AssocKey, AssocUsage};
use model::{Job, JobId, JobPayload, Node, Reservation, Restored};
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Too little room on the state disk: the commit wrote nothing. It may succeed
    /// once space is freed.
    #[error("{0}")]
    Full(String),
    #[error("state store: {0}")]
    Engine(String),
    #[error("state store: cannot encode a record: {0}")]
    Encode(postcard::Error),
    #[error("state store: record {key} is corrupt or of an unknown version: {reason}")]
    Decode { key: String, reason: String },
    /// A store written by a newer release (or not a store of ours): left untouched.
    #[error("state store: format {found:?} is not one this release reads (format {reads})")]
    Format { found: Vec<u8>, reads: u8 },
}

/// The records one turn changed, to be made durable together.
#[derive(Debug, Default)]
pub struct Batch {
    /// Scripts and environments of new jobs.
    pub payloads: Vec<(JobId, JobPayload)>,
    pub jobs: Vec<Arc<Job>>,
    /// The turn only submitted new jobs: each of them stands alone (after a crash, any
    /// subset of them is a state the cluster could have been in).
    pub only_submits: bool,
    pub nodes: Vec<Node>,
    /// A reservation as it now stands, or `None`: deleted.
    pub reservations: Vec<(String, Option<Reservation>)>,
    /// A run-time partition as it now stands, or `None`: deleted.
    pub partitions: Vec<(String, Option<model::config::Partition>)>,
    pub usage: Vec<(AssocKey, AssocUsage)>,
    /// Usage per QOS, as jobs' runs were charged.
    pub qos_usage: Vec<(String, AssocUsage)>,
    /// The associations as a `sacctmgr` change left them.
    pub assocs: Option<Arc<Associations>>,
    /// Finished jobs purged (`purge_job_after`): their records and payloads go.
    pub purged: Vec<JobId>,
    /// A trigger as it now stands, or `None`: cleared or fired.
    pub triggers: Vec<(u32, Option<Trigger>)>,
    /// The id the next trigger gets, when the turn set one.
    pub next_trigger_id: Option<u32>,
}

impl Batch {
    pub fn is_empty(&self) -> bool {
        self.payloads.is_empty()
            && self.jobs.is_empty()
            && self.nodes.is_empty()
            && self.reservations.is_empty()
            && self.partitions.is_empty()
            && self.usage.is_empty()
            && self.qos_usage.is_empty()
            && self.assocs.is_none()
            && self.purged.is_empty()
            && self.triggers.is_empty()
            && self.next_trigger_id.is_none()
    }
}

/// A durable home for the controller's state.
pub trait Store: Send + Sync {
    /// Everything a restart needs, jobs in id order.
    fn load(&self) -> Result<Restored, StoreError>;
    /// The script and environment of a job (an array's tasks share their array's).
    fn payload(&self, id: JobId) -> Result<Option<JobPayload>, StoreError>;
    /// Makes a turn's records durable, atomically; returns once they survive a crash.
    /// On an error nothing of the batch counts as written.
    fn commit(&self, batch: Batch) -> Result<(), StoreError>;
}

/// For tests of the shell and the front: a store that commits everything and keeps
/// nothing.
#[cfg(test)]
pub struct NoStore;

#[cfg(test)]
impl Store for NoStore {
    fn load(&self) -> Result<Restored, StoreError> {
        Ok(Restored::default())
    }
    fn payload(&self, _: JobId) -> Result<Option<JobPayload>, StoreError> {
        Ok(None)
    }
    fn commit(&self, _: Batch) -> Result<(), StoreError> {
        Ok(())
    }
}
