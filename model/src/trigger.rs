//! Slurm's event triggers (`strigger`): what a trigger watches (a node set or a job),
//! the event it waits for, and the program it runs, with Slurm's words for each
//! (`strigger --get`'s RES_TYPE and TYPE columns). The controller keeps them and
//! decides when one fires (`ctld::rules::triggers`).
//!
//! Worked example: `strigger --set --jobid=12 --fini --program=/home/ada/done` by uid
//! 1000 is `Trigger { resource: Job(12), event: Fini, offset: 0, uid: 1000, .. }`;
//! `--get` shows it as `      1 job            12 fini          0 ada            /home/ada/done`.

use crate::JobId;
use serde::{Deserialize, Serialize};

/// What a trigger watches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TriggerResource {
    /// Nodes named by a hostlist expression; `None`: every node (`--node` alone).
    Nodes(Option<String>),
    Job(JobId),
}

impl TriggerResource {
    /// Slurm's RES_TYPE word.
    pub fn type_word(&self) -> &'static str {
        match self {
            TriggerResource::Nodes(_) => "node",
            TriggerResource::Job(_) => "job",
        }
    }

    /// Slurm's RES_ID: the node list (`*` for every node) or the job id.
    pub fn id_word(&self) -> String {
        match self {
            TriggerResource::Nodes(None) => "*".to_string(),
            TriggerResource::Nodes(Some(list)) => list.clone(),
            TriggerResource::Job(id) => id.to_string(),
        }
    }

    /// Does the resource name `node`? An expression that does not expand names none.
    pub fn names_node(&self, node: &str) -> bool {
        match self {
            TriggerResource::Nodes(None) => true,
            TriggerResource::Nodes(Some(list)) => {
                crate::hostlist::expand(list).is_ok_and(|names| names.iter().any(|n| n == node))
            }
            TriggerResource::Job(_) => false,
        }
    }
}

/// The events Drover's controller fires triggers on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TriggerEvent {
    /// A node goes DOWN.
    Down,
    /// A node returns to service from DOWN.
    Up,
    /// A node becomes DRAINED.
    Drained,
    /// A node stays IDLE for at least the offset (refused by Drover's controller,
    /// which does not keep how long a node has been idle).
    Idle,
    /// The job finishes.
    Fini,
    /// The job reaches its time limit (offset seconds after it; negative: before).
    Time,
}

impl TriggerEvent {
    pub const ALL: [TriggerEvent; 6] = [
        TriggerEvent::Down,
        TriggerEvent::Up,
        TriggerEvent::Drained,
        TriggerEvent::Idle,
        TriggerEvent::Fini,
        TriggerEvent::Time,
    ];

    /// Slurm's TYPE word, which is also the option that sets it (`--down`, ...).
    pub fn word(self) -> &'static str {
        match self {
            TriggerEvent::Down => "down",
            TriggerEvent::Up => "up",
            TriggerEvent::Drained => "drained",
            TriggerEvent::Idle => "idle",
            TriggerEvent::Fini => "fini",
            TriggerEvent::Time => "time",
        }
    }

    /// The event a word names; `None` for any other.
    pub fn from_word(word: &str) -> Option<TriggerEvent> {
        TriggerEvent::ALL.into_iter().find(|e| e.word() == word)
    }

    /// Is it an event of a job (`--fini`, `--time`), so that it needs `--jobid`?
    pub fn of_job(self) -> bool {
        matches!(self, TriggerEvent::Fini | TriggerEvent::Time)
    }
}

/// A trigger as `strigger --set` asked for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriggerSpec {
    pub resource: TriggerResource,
    pub event: TriggerEvent,
    /// Seconds from the event (within ±32000).
    pub offset: i32,
    /// The program's absolute path, run with the node list or job id as its argument.
    pub program: String,
    /// `--flags=perm`: kept after it fires.
    pub perm: bool,
}

/// A trigger the controller keeps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trigger {
    pub id: u32,
    pub spec: TriggerSpec,
    /// Whose it is: the program runs as this user.
    pub uid: u32,
    pub gid: u32,
    pub user: String,
}

/// The most an offset may be from its event, either way (Slurm's ±32000 s).
pub const MAX_OFFSET: i32 = 32000;

/// Which triggers `strigger --clear` removes; a trigger matches all the set filters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TriggerFilter {
    pub id: Option<u32>,
    pub job_id: Option<JobId>,
    pub uid: Option<u32>,
}

impl TriggerFilter {
    pub fn is_empty(&self) -> bool {
        self.id.is_none() && self.job_id.is_none() && self.uid.is_none()
    }

    pub fn matches(&self, trigger: &Trigger) -> bool {
        self.id.is_none_or(|id| trigger.id == id)
            && self
                .job_id
                .is_none_or(|job| trigger.spec.resource == TriggerResource::Job(job))
            && self.uid.is_none_or(|uid| trigger.uid == uid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trigger(id: u32, resource: TriggerResource, uid: u32) -> Trigger {
        Trigger {
            id,
            spec: TriggerSpec {
                resource,
                event: TriggerEvent::Down,
                offset: 0,
                program: "/bin/true".into(),
                perm: false,
            },
            uid,
            gid: uid,
            user: "u".into(),
        }
    }

    #[test]
    fn words_are_slurms() {
        for e in TriggerEvent::ALL {
            assert_eq!(TriggerEvent::from_word(e.word()), Some(e));
        }
        assert_eq!(TriggerEvent::from_word("reconfig"), None);
        assert_eq!(TriggerResource::Nodes(None).id_word(), "*");
        assert_eq!(TriggerResource::Job(7).type_word(), "job");
        assert_eq!(TriggerResource::Job(7).id_word(), "7");
    }

    #[test]
    fn node_lists_are_hostlists() {
        let r = TriggerResource::Nodes(Some("node[1-3]".into()));
        assert!(r.names_node("node2"));
        assert!(!r.names_node("node4"));
        assert!(TriggerResource::Nodes(None).names_node("node4"));
        assert!(!TriggerResource::Job(1).names_node("node1"));
    }

    #[test]
    fn a_filter_matches_all_it_sets() {
        let t = trigger(3, TriggerResource::Job(9), 1000);
        assert!(
            TriggerFilter {
                id: Some(3),
                ..Default::default()
            }
            .matches(&t)
        );
        assert!(
            !TriggerFilter {
                id: Some(4),
                ..Default::default()
            }
            .matches(&t)
        );
        assert!(
            TriggerFilter {
                job_id: Some(9),
                uid: Some(1000),
                id: None
            }
            .matches(&t)
        );
        assert!(
            !TriggerFilter {
                job_id: Some(9),
                uid: Some(0),
                id: None
            }
            .matches(&t)
        );
        let n = trigger(4, TriggerResource::Nodes(None), 1000);
        assert!(
            !TriggerFilter {
                job_id: Some(9),
                ..Default::default()
            }
            .matches(&n)
        );
    }
}
