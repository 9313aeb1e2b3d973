//! `scontrol create|update|delete reservation`: applies a typed change
//! (`model::reservation_change`) to the cluster's reservations, as the event to
//! apply, or Slurm's error for the request.
//!
//! Example: `ReservationName=maint StartTime=<t> Duration=120 Nodes=n[1-2]
//! Users=root Flags=MAINT,IGNORE_JOBS` creates `maint` over n1 and n2 from t for two
//! hours; without IGNORE_JOBS it is refused while a running job's time limit reaches
//! into the window ("Requested nodes are busy").

use crate::command::{ChangeReservation, Rejection, ReservationOp};
use model::reservation::{Reservation, ReservationFlag};
use model::reservation_change::{NodeChoice, ReservationChange};
use model::{ClusterState, Event, Time};

/// The event for a change, or Slurm's error for it: only operators change reservations,
/// and a name that is not there is not found.
pub fn change(
    state: &ClusterState,
    req: &ChangeReservation,
    now: Time,
) -> Result<Event, Rejection> {
    if !req.requester.is_operator() {
        return Err(Rejection::PermissionDenied);
    }
    let required = || Rejection::invalid("Reservation name required");
    let not_found = || Rejection::NotFound("Invalid reservation name".into());
    let change = &req.change;
    let name = change.name.clone();
    match req.op {
        ReservationOp::Delete => {
            let name = name.ok_or_else(required)?;
            if !state.reservations.contains_key(&name) {
                return Err(not_found());
            }
            Ok(Event::ReservationDeleted { name })
        }
        ReservationOp::Create => {
            let name = name.unwrap_or_else(|| {
                (1..)
                    .map(|i| format!("root_{i}"))
                    .find(|n| !state.reservations.contains_key(n))
                    .unwrap_or_default()
            });
            if state.reservations.contains_key(&name) {
                return Err(Rejection::invalid(
                    "Reservation request overlaps with an existing reservation of the same name",
                ));
            }
            let base = Reservation {
                name,
                start: now,
                end: 0,
                nodes: Vec::new(),
                users: Vec::new(),
                accounts: Vec::new(),
                flags: Vec::new(),
                partition: String::new(),
            };
            let res = edit(state, base, change, now, true).map_err(Rejection::Invalid)?;
            Ok(Event::ReservationSet {
                reservation: Box::new(res),
            })
        }
        ReservationOp::Update => {
            let name = name.ok_or_else(required)?;
            let current = state
                .reservations
                .get(&name)
                .cloned()
                .ok_or_else(not_found)?;
            let res = edit(state, current, change, now, false).map_err(Rejection::Invalid)?;
            Ok(Event::ReservationSet {
                reservation: Box::new(res),
            })
        }
    }
}

fn edit(
    state: &ClusterState,
    mut res: Reservation,
    change: &ReservationChange,
    now: Time,
    creating: bool,
) -> Result<Reservation, String> {
    if let Some(start) = change.start {
        // Times come from clients: no sum or difference of them may overflow.
        let length = res.end.saturating_sub(res.start);
        res.start = start;
        if !creating && change.duration.is_none() && change.end.is_none() {
            res.end = res.start.saturating_add(length);
        }
    }
    if let Some(end) = change.end {
        res.end = end;
    }
    if let Some(d) = change.duration {
        // UNLIMITED: a year, as far as scheduling is concerned.
        let secs = d.map_or(365 * 86_400, |s| Time::try_from(s).unwrap_or(Time::MAX));
        res.end = res.start.saturating_add(secs);
    }
    // Times are kept within what Slurm's time syntax can name.
    let latest = model::timespec::latest();
    res.end = res.end.min(latest);
    if res.start < 0 || res.start > latest {
        return Err("Invalid StartTime".into());
    }
    if res.end <= res.start {
        return Err(
            "Reservation request has invalid time (Duration or EndTime needed, after StartTime)"
                .into(),
        );
    }
    if let Some(flags) = &change.flags {
        res.flags = flags.apply(&res.flags);
    }
    if let Some(users) = &change.users {
        res.users = users.apply(&res.users);
    }
    if let Some(accounts) = &change.accounts {
        res.accounts = accounts.apply(&res.accounts);
    }
    if let Some(p) = &change.partition {
        if state.partition(p).is_none() {
            return Err("Invalid partition name specified".into());
        }
        res.partition = p.clone();
    }
    let candidates: Vec<String> = match state.partition(&res.partition) {
        Some(p) => p.nodes.clone(),
        None => state.nodes.keys().cloned().collect(),
    };
    match &change.nodes {
        Some(NodeChoice::All) => res.nodes = candidates.clone(),
        Some(NodeChoice::Names(names)) => {
            if let Some(bad) = names.iter().find(|n| !state.nodes.contains_key(*n)) {
                return Err(format!("Invalid node name specified: {bad}"));
            }
            res.nodes = names.clone();
        }
        Some(NodeChoice::Count(count)) => {
            let usable: Vec<String> = candidates
                .iter()
                .filter(|n| !busy(state, &res, n, now))
                .cloned()
                .collect();
            if usable.len() < *count as usize {
                return Err("Requested nodes are busy".into());
            }
            res.nodes = usable.into_iter().take(*count as usize).collect();
        }
        None => {}
    }
    if res.nodes.is_empty() {
        return Err("Nodes or NodeCnt must be specified".into());
    }
    if res.users.is_empty() && res.accounts.is_empty() {
        return Err("Either Users or Accounts must be specified".into());
    }
    if res.nodes.iter().any(|n| busy(state, &res, n, now)) {
        return Err("Requested nodes are busy".into());
    }
    Ok(res)
}

/// Slurm's REPLACE flag: each active REPLACE reservation's nodes that are down,
/// drained or allocated to jobs (its own too), replaced by idle nodes of its partition
/// (or of the cluster) that no other reservation holds, as far as there are some; the
/// changed reservations' events.
///
/// Example: `r` holds n1 and n2 with REPLACE, and a job of `r` starts on n1: `r` holds
/// n2 and n3 after it (n3 idle); the job runs on.
pub fn replacements(state: &ClusterState, now: Time) -> Vec<Event> {
    let replacing: Vec<&Reservation> = state
        .reservations
        .values()
        .filter(|r| r.has(ReservationFlag::Replace))
        .filter(|r| {
            let (start, end) = r.window_at(now);
            start <= now && now < end
        })
        .collect();
    if replacing.is_empty() {
        return Vec::new();
    }
    let allocated: std::collections::BTreeSet<&str> = state
        .running_jobs()
        .filter_map(|j| j.alloc.as_ref())
        .flat_map(|a| a.nodes.iter().map(|n| n.node.as_str()))
        .collect();
    let idle = |name: &str| {
        !allocated.contains(name) && state.nodes.get(name).is_some_and(|n| n.schedulable())
    };
    let mut taken: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for res in replacing {
        if res.nodes.iter().all(|n| idle(n)) {
            continue;
        }
        let candidates: Vec<String> = match state.partition(&res.partition) {
            Some(p) => p.nodes.clone(),
            None => state.nodes.keys().cloned().collect(),
        };
        let mut spare = candidates.iter().filter(|n| {
            !res.nodes.contains(n) && idle(n) && !taken.contains(*n) && !busy(state, res, n, now)
        });
        let mut nodes = res.nodes.clone();
        let mut changed = false;
        for node in nodes.iter_mut().filter(|n| !idle(n)) {
            let Some(new) = spare.next() else { break };
            *node = new.clone();
            changed = true;
        }
        if changed {
            // In the cluster's order of nodes.
            nodes.sort_by_key(|n| candidates.iter().position(|c| c == n));
            taken.extend(nodes.iter().cloned());
            tracing::info!(reservation = %res.name, nodes = %model::hostlist::fold(&nodes), "reservation nodes replaced");
            out.push(Event::ReservationSet {
                reservation: Box::new(Reservation {
                    nodes,
                    ..res.clone()
                }),
            });
        }
    }
    out
}

/// Is `node` taken during the reservation's window: by a running job whose time limit
/// reaches into it (unless IGNORE_JOBS), or by another reservation (unless OVERLAP)?
fn busy(state: &ClusterState, res: &Reservation, node: &str, now: Time) -> bool {
    let (start, end) = res.window_at(now);
    let jobs = !res.has(ReservationFlag::IgnoreJobs)
        && state.running_jobs().any(|j| {
            let on_node = j
                .alloc
                .as_ref()
                .is_some_and(|a| a.nodes.iter().any(|n| n.node == node));
            let job_end = j
                .time_limit_min
                .map_or(Time::MAX, |m| j.start_time + Time::from(m) * 60);
            on_node && job_end > start && !j.spec.may_use_reservation(&res.name)
        });
    let others = !res.has(ReservationFlag::Overlap)
        && state.reservations.values().any(|o| {
            let (os, oe) = o.window_at(now);
            o.name != res.name
                && !o.has(ReservationFlag::Overlap)
                && o.nodes.iter().any(|n| n == node)
                && os < end
                && oe > start
        });
    jobs || others
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::{Config, Job, JobSpec, NodeAllocation};

    fn state() -> ClusterState {
        let c = Config::parse(
            "[[nodes]]\nnames = \"n[1-3]\"\ncpus = 2\nmemory = \"1G\"\n[[partitions]]\nname = \"p\"\nnodes = \"ALL\"\n",
            "t",
        )
        .unwrap();
        ClusterState::new(c.node_list(), c.partition_list())
    }

    /// Job 1 (limit an hour, in `reservation` if not empty) started on n1 at `time`.
    fn run_on_n1(s: &mut ClusterState, reservation: &str, time: Time) {
        let spec = JobSpec {
            partition: "p".into(),
            reservation: reservation.into(),
            ..JobSpec::default()
        };
        let job = Job::new(1, spec, 0, Some(60));
        s.apply(&Event::JobSubmitted { job: Box::new(job) });
        let alloc = model::Allocation {
            nodes: vec![NodeAllocation {
                node: "n1".into(),
                cpus: 1,
                mem_mb: 0,
                gpus: vec![],
                cpu_ids: Vec::new(),
            }],
        };
        s.apply(&Event::JobStarted {
            job_id: 1,
            alloc,
            time,
            stdout_path: String::new(),
            stderr_path: String::new(),
        });
    }

    /// A request from scontrol's words; start and end times are seconds from 0.
    fn req(op: ReservationOp, fields: &[(&str, &str)]) -> ChangeReservation {
        let words: Vec<String> = fields
            .iter()
            .map(|(k, v)| match (*k, v.parse::<i64>()) {
                ("StartTime" | "EndTime", Ok(t)) => format!("{k}=now+{t}"),
                _ => format!("{k}={v}"),
            })
            .collect();
        ChangeReservation {
            op,
            change: ReservationChange::parse(&words, 0, &jiff::tz::TimeZone::UTC).unwrap(),
            requester: crate::command::Requester::root(),
        }
    }

    #[test]
    fn create_update_delete() {
        let mut s = state();
        let create = req(
            ReservationOp::Create,
            &[
                ("ReservationName", "maint"),
                ("StartTime", "1000"),
                ("Duration", "60"),
                ("Nodes", "n[1-2]"),
                ("Users", "root"),
                ("Flags", "MAINT"),
            ],
        );
        let ev = change(&s, &create, 500).unwrap();
        s.apply(&ev);
        let r = &s.reservations["maint"];
        assert_eq!((r.start, r.end, r.nodes.len()), (1000, 4600, 2));
        assert_eq!(
            proto::convert::reservation_to_wire(&s, r, 500).state,
            "INACTIVE"
        );
        assert_eq!(
            change(&s, &create, 500).unwrap_err().to_string(),
            "Reservation request overlaps with an existing reservation of the same name"
        );
        let other = req(
            ReservationOp::Create,
            &[
                ("StartTime", "2000"),
                ("Duration", "10"),
                ("Nodes", "n2"),
                ("Users", "bob"),
            ],
        );
        assert_eq!(
            change(&s, &other, 500).unwrap_err().to_string(),
            "Requested nodes are busy"
        );
        let update = req(
            ReservationOp::Update,
            &[
                ("ReservationName", "maint"),
                ("Users", "+bob"),
                ("Flags", "+IGNORE_JOBS"),
            ],
        );
        s.apply(&change(&s, &update, 500).unwrap());
        assert_eq!(s.reservations["maint"].users, vec!["bob", "root"]);
        assert_eq!(s.reservations["maint"].flags_text(), "MAINT,IGNORE_JOBS");
        let delete = req(ReservationOp::Delete, &[("ReservationName", "maint")]);
        s.apply(&change(&s, &delete, 500).unwrap());
        assert!(s.reservations.is_empty());
        assert!(change(&s, &delete, 500).is_err());
    }

    #[test]
    fn times_from_the_wire_cannot_overflow() {
        let mut s = state();
        let create = ChangeReservation {
            op: ReservationOp::Create,
            change: ReservationChange {
                name: Some("far".into()),
                start: Some(model::timespec::latest() - 10),
                duration: Some(Some(u64::MAX)),
                nodes: Some(model::reservation_change::NodeChoice::Count(1)),
                users: Some(model::reservation_change::ListEdit::Set(vec![
                    "root".into(),
                ])),
                ..ReservationChange::default()
            },
            requester: crate::command::Requester::root(),
        };
        s.apply(&change(&s, &create, 0).unwrap());
        assert_eq!(s.reservations["far"].end, model::timespec::latest());
        let moved = ChangeReservation {
            op: ReservationOp::Update,
            change: ReservationChange {
                name: Some("far".into()),
                start: Some(Time::MIN),
                ..ReservationChange::default()
            },
            requester: crate::command::Requester::root(),
        };
        assert_eq!(
            change(&s, &moved, 0).unwrap_err().to_string(),
            "Invalid StartTime"
        );
        let beyond = ChangeReservation {
            change: ReservationChange {
                start: Some(Time::MAX),
                ..moved.change.clone()
            },
            ..moved
        };
        assert_eq!(
            change(&s, &beyond, 0).unwrap_err().to_string(),
            "Invalid StartTime"
        );
    }

    #[test]
    fn refusals() {
        let mut s = state();
        run_on_n1(&mut s, "", 0);
        let busy = req(
            ReservationOp::Create,
            &[
                ("StartTime", "100"),
                ("Duration", "10"),
                ("Nodes", "n1"),
                ("Users", "root"),
            ],
        );
        assert_eq!(
            change(&s, &busy, 0).unwrap_err().to_string(),
            "Requested nodes are busy"
        );
        let mut ignore = busy.clone();
        ignore.change.flags = Some(model::reservation_change::ListEdit::Set(vec![
            ReservationFlag::IgnoreJobs,
        ]));
        assert!(change(&s, &ignore, 0).is_ok());
        let by_count = req(
            ReservationOp::Create,
            &[
                ("StartTime", "100"),
                ("Duration", "10"),
                ("NodeCnt", "2"),
                ("Users", "root"),
            ],
        );
        match change(&s, &by_count, 0).unwrap() {
            Event::ReservationSet { reservation } => {
                assert_eq!(reservation.nodes, vec!["n2", "n3"])
            }
            other => panic!("{other:?}"),
        }
        let no_users = req(
            ReservationOp::Create,
            &[("Duration", "10"), ("Nodes", "n2")],
        );
        assert!(
            change(&s, &no_users, 0)
                .unwrap_err()
                .to_string()
                .contains("Users or Accounts")
        );
        let mut not_root = ignore.clone();
        not_root.requester = crate::command::Requester::user(1000, "alice");
        assert_eq!(
            change(&s, &not_root, 0).unwrap_err(),
            Rejection::PermissionDenied
        );
        // An operator may.
        not_root.requester.level = model::assoc::AdminLevel::Operator;
        assert!(change(&s, &not_root, 0).is_ok());
        let gone = req(ReservationOp::Delete, &[("ReservationName", "gone")]);
        assert_eq!(
            change(&s, &gone, 0).unwrap_err(),
            Rejection::NotFound("Invalid reservation name".into())
        );
    }

    #[test]
    fn replace_swaps_taken_and_drained_nodes_for_idle_ones() {
        let mut s = state();
        for n in ["n1", "n2", "n3"] {
            s.nodes.get_mut(n).unwrap().health = model::NodeHealth::Up;
        }
        let create = req(
            ReservationOp::Create,
            &[
                ("ReservationName", "r"),
                ("StartTime", "0"),
                ("Duration", "60"),
                ("Nodes", "n[1-2]"),
                ("Users", "root"),
                ("Flags", "REPLACE"),
            ],
        );
        s.apply(&change(&s, &create, 0).unwrap());
        // Nothing taken: nothing to replace.
        assert!(replacements(&s, 10).is_empty());
        // A job on n1: n3 takes its place.
        run_on_n1(&mut s, "r", 10);
        let events = replacements(&s, 10);
        let [Event::ReservationSet { reservation }] = events.as_slice() else {
            panic!("{events:?}");
        };
        assert_eq!(reservation.nodes, ["n2", "n3"]);
        s.apply(&events[0]);
        // n3 drained while n1 is still taken: no idle node left, it stays.
        s.nodes.get_mut("n3").unwrap().drain = true;
        assert!(replacements(&s, 20).is_empty());
        // Past its window, nothing moves.
        assert!(replacements(&s, 7200).is_empty());
    }
}
