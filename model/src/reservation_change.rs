//! `scontrol create|update|delete reservation`: the change Slurm's `Key=Value` words
//! ask for, parsed once (by the command, times in the user's zone) into typed fields
//! that go on the wire; the controller applies them to the cluster (nodes that exist
//! and are free, users or accounts given).
//!
//! Example: `ReservationName=maint StartTime=now+1hour Duration=2:00:00 Nodes=n[1-2]
//! Users=root Flags=MAINT` is a change naming `maint`, starting in an hour, lasting
//! two hours, on `n1` and `n2`, for root, with MAINT set. `Users=+bob` adds bob to the
//! users an update keeps; `Flags=-MAINT` removes that flag.

use crate::job::Time;
use crate::reservation::ReservationFlag;
use crate::timespec::{self, LocalZone, Toward};
use crate::units;

/// A new list, or items added to or removed from the current one (`a,b`, `+c`, `-a`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListEdit<T> {
    Set(Vec<T>),
    Add(Vec<T>),
    Remove(Vec<T>),
}

impl<T: Clone + Ord> ListEdit<T> {
    /// The list after the edit, sorted and without repeats.
    pub fn apply(&self, current: &[T]) -> Vec<T> {
        let mut out = match self {
            ListEdit::Set(items) => items.clone(),
            ListEdit::Add(items) => current.iter().chain(items).cloned().collect(),
            ListEdit::Remove(items) => current
                .iter()
                .filter(|c| !items.contains(c))
                .cloned()
                .collect(),
        };
        out.sort();
        out.dedup();
        out
    }

    pub(crate) fn parse(
        text: &str,
        item: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Self, String> {
        let items = |list: &str| {
            list.split(',')
                .filter(|s| !s.is_empty())
                .map(&item)
                .collect::<Result<Vec<T>, String>>()
        };
        Ok(if let Some(rest) = text.strip_prefix('+') {
            ListEdit::Add(items(rest)?)
        } else if let Some(rest) = text.strip_prefix('-') {
            ListEdit::Remove(items(rest)?)
        } else {
            ListEdit::Set(items(text)?)
        })
    }
}

/// Which nodes a reservation takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeChoice {
    /// `Nodes=ALL`: every node (of its partition, if it names one).
    All,
    /// `Nodes=n[1-2]`, expanded.
    Names(Vec<String>),
    /// `NodeCnt=2`: so many free nodes, chosen by the controller.
    Count(u32),
}

/// The fields a change sets; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReservationChange {
    pub name: Option<String>,
    pub start: Option<Time>,
    pub end: Option<Time>,
    /// Seconds; `Some(None)` is UNLIMITED.
    pub duration: Option<Option<u64>>,
    pub nodes: Option<NodeChoice>,
    pub users: Option<ListEdit<String>>,
    pub accounts: Option<ListEdit<String>>,
    pub flags: Option<ListEdit<ReservationFlag>>,
    pub partition: Option<String>,
}

impl ReservationChange {
    /// Parses `Key=Value` words (keys in any case, as scontrol takes them); times in
    /// every `--begin` form toward the future from `now` in `zone`, durations in
    /// Slurm's time syntax (minutes by default).
    pub fn parse(
        words: &[String],
        now: Time,
        zone: &dyn LocalZone,
    ) -> Result<ReservationChange, String> {
        let mut c = ReservationChange::default();
        for word in words {
            let (key, value) = word
                .split_once('=')
                .ok_or_else(|| format!("Invalid input: {word}"))?;
            let value = value.trim_matches('"');
            // `Users+=bob`, `Flags-=MAINT`: scontrol's spelling of `Users=+bob`.
            let signed;
            let (key, value) = match key.strip_suffix(['+', '-']) {
                Some(list) if LISTS.contains(&list.to_ascii_lowercase().as_str()) => {
                    signed = format!("{}{value}", &key[list.len()..]);
                    (list, signed.as_str())
                }
                Some(_) => return Err(format!("Invalid input: {word}")),
                None => (key, value),
            };
            let time = |v: &str| {
                timespec::parse(v, now, Toward::Future, zone)
                    .map_err(|_| format!("Invalid time specification: {v}"))
            };
            match key.to_ascii_lowercase().as_str() {
                "reservation" | "reservationname" | "resv" => c.name = Some(value.to_string()),
                "starttime" => c.start = Some(time(value)?),
                "endtime" => c.end = Some(time(value)?),
                "duration" => {
                    c.duration = Some(units::parse_duration_secs(value).map_err(|e| e.to_string())?)
                }
                "nodes" | "nodelist" if value.eq_ignore_ascii_case("ALL") => {
                    c.nodes = Some(NodeChoice::All)
                }
                "nodes" | "nodelist" => {
                    let names = crate::hostlist::expand(value).map_err(|e| e.to_string())?;
                    c.nodes = Some(NodeChoice::Names(names));
                }
                "nodecnt" | "nodecount" => {
                    let n = value
                        .parse()
                        .map_err(|_| format!("Invalid node count {value}"))?;
                    c.nodes = Some(NodeChoice::Count(n));
                }
                "users" | "user" => c.users = Some(ListEdit::parse(value, |u| Ok(u.to_string()))?),
                "accounts" | "account" => {
                    c.accounts = Some(ListEdit::parse(value, |a| Ok(a.to_string()))?)
                }
                "flags" => {
                    c.flags = Some(ListEdit::parse(value, |f| {
                        ReservationFlag::parse(f).ok_or_else(|| format!("Invalid flag {f}"))
                    })?)
                }
                "partition" | "partitionname" => c.partition = Some(value.to_string()),
                _ => return Err(format!("Invalid input: {word}")),
            }
        }
        Ok(c)
    }
}

/// The keys whose value is a list that `+=` adds to and `-=` removes from.
const LISTS: &[&str] = &["users", "user", "accounts", "account", "flags"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plus_and_minus_before_the_equal_sign_edit_a_list() {
        let c = parse(&["Users+=bob,al", "Accounts-=ml", "Flags+=FLEX"]).unwrap();
        assert_eq!(
            c.users,
            Some(ListEdit::Add(vec!["bob".into(), "al".into()]))
        );
        assert_eq!(c.accounts, Some(ListEdit::Remove(vec!["ml".into()])));
        assert_eq!(c.flags, Some(ListEdit::Add(vec![ReservationFlag::Flex])));
        assert!(parse(&["StartTime+=now"]).is_err());
    }

    fn parse(words: &[&str]) -> Result<ReservationChange, String> {
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        ReservationChange::parse(&words, 1_000_000, &jiff::tz::TimeZone::UTC)
    }

    #[test]
    fn words_parse_into_typed_fields() {
        let c = parse(&[
            "ReservationName=maint",
            "StartTime=now+1hour",
            "Duration=2:00:00",
            "Nodes=n[1-2]",
            "Users=root",
            "Flags=MAINT,ignore_jobs",
        ])
        .unwrap();
        assert_eq!(c.name.as_deref(), Some("maint"));
        assert_eq!(c.start, Some(1_003_600));
        assert_eq!(c.duration, Some(Some(7200)));
        assert_eq!(
            c.nodes,
            Some(NodeChoice::Names(vec!["n1".into(), "n2".into()]))
        );
        assert_eq!(
            c.flags,
            Some(ListEdit::Set(vec![
                ReservationFlag::Maint,
                ReservationFlag::IgnoreJobs
            ]))
        );
        let c = parse(&[
            "Users=+bob",
            "Flags=-MAINT",
            "NodeCnt=3",
            "Duration=UNLIMITED",
        ])
        .unwrap();
        assert_eq!(c.users, Some(ListEdit::Add(vec!["bob".into()])));
        assert_eq!(
            c.flags,
            Some(ListEdit::Remove(vec![ReservationFlag::Maint]))
        );
        assert_eq!(c.nodes, Some(NodeChoice::Count(3)));
        assert_eq!(c.duration, Some(None));
        for bad in [
            &["Flags=BOGUS"][..],
            &["Nodes=n[1-"],
            &["Foo=1"],
            &["StartTime=x"],
            &["Users"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn list_edits_set_add_and_remove() {
        let current = ["a".to_string(), "b".to_string()];
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(ListEdit::Set(s(&["c"])).apply(&current), s(&["c"]));
        assert_eq!(
            ListEdit::Add(s(&["c", "a"])).apply(&current),
            s(&["a", "b", "c"])
        );
        assert_eq!(ListEdit::Remove(s(&["a"])).apply(&current), s(&["b"]));
    }
}
