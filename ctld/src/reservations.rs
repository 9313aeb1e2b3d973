//! `scontrol create|update|delete reservation`: turns Slurm's Key=Value fields into
//! the reservation event to apply, or Slurm's error for the request.
//!
//! Example: `ReservationName=maint StartTime=<t> Duration=120 Nodes=n[1-2]
//! Users=root Flags=MAINT,IGNORE_JOBS` creates `maint` over n1 and n2 from t for two
//! hours; without IGNORE_JOBS it is refused while a running job's time limit reaches
//! into the window ("Requested nodes are busy").

use crate::command::{ChangeReservation, ReservationOp};
use model::reservation::{Reservation, ReservationFlag};
use model::{ClusterState, Event, Time, hostlist, units};
use proto::v1;
use std::collections::BTreeMap;

/// The event for a change, or the error text to return.
pub fn change(state: &ClusterState, req: &ChangeReservation, now: Time) -> Result<Event, String> {
    if req.requester != 0 {
        return Err("Access/permission denied".into());
    }
    let fields: BTreeMap<String, String> = req
        .fields
        .iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), value.clone()))
        .collect();
    let op = req.op;
    let name = fields
        .get("reservationname")
        .or_else(|| fields.get("reservation"))
        .cloned();
    match op {
        ReservationOp::Delete => {
            let name = name.ok_or("Reservation name required")?;
            if !state.reservations.contains_key(&name) {
                return Err("Invalid reservation name".into());
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
                return Err(
                    "Reservation request overlaps with an existing reservation of the same name"
                        .into(),
                );
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
            let res = edit(state, base, &fields, now, true)?;
            Ok(Event::ReservationSet {
                reservation: Box::new(res),
            })
        }
        ReservationOp::Update => {
            let name = name.ok_or("Reservation name required")?;
            let current = state
                .reservations
                .get(&name)
                .cloned()
                .ok_or("Invalid reservation name")?;
            let res = edit(state, current, &fields, now, false)?;
            Ok(Event::ReservationSet {
                reservation: Box::new(res),
            })
        }
    }
}

/// `a,b`, `+c` (add) or `-a` (remove) applied to a list.
fn edit_list(current: &[String], value: &str) -> Vec<String> {
    let mut out = current.to_vec();
    if let Some(add) = value.strip_prefix('+') {
        out.extend(add.split(',').filter(|s| !s.is_empty()).map(str::to_string));
    } else if let Some(remove) = value.strip_prefix('-') {
        let gone: Vec<&str> = remove.split(',').collect();
        out.retain(|u| !gone.contains(&u.as_str()));
    } else {
        out = value
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
    }
    out.sort();
    out.dedup();
    out
}

fn edit(
    state: &ClusterState,
    mut res: Reservation,
    fields: &BTreeMap<String, String>,
    now: Time,
    creating: bool,
) -> Result<Reservation, String> {
    let time = |v: &str| {
        v.parse::<Time>()
            .map_err(|_| format!("Invalid time specification {v}"))
    };
    let duration = fields
        .get("duration")
        .map(|d| units::parse_duration_secs(d).map_err(|e| e.to_string()))
        .transpose()?;
    if let Some(v) = fields.get("starttime") {
        let length = res.end - res.start;
        res.start = time(v)?;
        if !creating && duration.is_none() && !fields.contains_key("endtime") {
            res.end = res.start + length;
        }
    }
    if let Some(v) = fields.get("endtime") {
        res.end = time(v)?;
    }
    if let Some(d) = duration {
        // UNLIMITED: a year, as far as scheduling is concerned.
        res.end = res.start + d.map_or(365 * 86_400, |s| s as Time);
    }
    if res.end <= res.start {
        return Err(
            "Reservation request has invalid time (Duration or EndTime needed, after StartTime)"
                .into(),
        );
    }
    if let Some(v) = fields.get("flags") {
        let mut flags = if v.starts_with(['+', '-']) {
            res.flags.clone()
        } else {
            Vec::new()
        };
        let (add, list) = match v.strip_prefix('-') {
            Some(rest) => (false, rest),
            None => (true, v.trim_start_matches('+')),
        };
        for word in list.split(',').filter(|w| !w.is_empty()) {
            let flag =
                ReservationFlag::parse(word).ok_or_else(|| format!("Invalid flag {word}"))?;
            if add {
                flags.push(flag);
            } else {
                flags.retain(|f| *f != flag);
            }
        }
        flags.sort();
        flags.dedup();
        res.flags = flags;
    }
    if let Some(v) = fields.get("users") {
        res.users = edit_list(&res.users, v);
    }
    if let Some(v) = fields.get("accounts") {
        res.accounts = edit_list(&res.accounts, v);
    }
    if let Some(p) = fields
        .get("partitionname")
        .or_else(|| fields.get("partition"))
    {
        if state.partition(p).is_none() {
            return Err("Invalid partition name specified".into());
        }
        res.partition = p.clone();
    }
    let candidates: Vec<String> = match state.partition(&res.partition) {
        Some(p) => p.nodes.clone(),
        None => state.nodes.keys().cloned().collect(),
    };
    if let Some(v) = fields.get("nodes") {
        res.nodes = if v.eq_ignore_ascii_case("ALL") {
            candidates.clone()
        } else {
            hostlist::expand(v).map_err(|e| e.to_string())?
        };
        if let Some(bad) = res.nodes.iter().find(|n| !state.nodes.contains_key(*n)) {
            return Err(format!("Invalid node name specified: {bad}"));
        }
    } else if let Some(v) = fields.get("nodecnt") {
        let count: usize = v.parse().map_err(|_| format!("Invalid node count {v}"))?;
        let usable: Vec<String> = candidates
            .iter()
            .filter(|n| !busy(state, &res, n, now))
            .cloned()
            .collect();
        if usable.len() < count {
            return Err("Requested nodes are busy".into());
        }
        res.nodes = usable.into_iter().take(count).collect();
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
            on_node && job_end > start && j.spec.reservation != res.name
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

/// A reservation as clients see it.
pub fn to_wire(state: &ClusterState, r: &Reservation, now: Time) -> v1::ReservationInfo {
    let (start, end) = r.window_at(now);
    v1::ReservationInfo {
        name: r.name.clone(),
        start_time: start,
        end_time: end,
        nodes: hostlist::fold(&r.nodes),
        node_count: r.nodes.len() as u32,
        core_count: r
            .nodes
            .iter()
            .filter_map(|n| state.nodes.get(n))
            .map(|n| n.cpus)
            .sum(),
        users: r.users.clone(),
        accounts: r.accounts.clone(),
        flags: r.flags_text(),
        state: r.state_at(now).to_string(),
        partition: r.partition.clone(),
    }
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

    fn req(op: ReservationOp, fields: &[(&str, &str)]) -> ChangeReservation {
        ChangeReservation {
            op,
            fields: fields
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            requester: 0,
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
        assert_eq!(to_wire(&s, r, 500).state, "INACTIVE");
        assert_eq!(
            change(&s, &create, 500).unwrap_err(),
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
            change(&s, &other, 500).unwrap_err(),
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
    fn refusals() {
        let mut s = state();
        let job = Job::new(
            1,
            JobSpec {
                partition: "p".into(),
                ..JobSpec::default()
            },
            0,
            Some(60),
        );
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
            time: 0,
            stdout_path: String::new(),
            stderr_path: String::new(),
        });
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
            change(&s, &busy, 0).unwrap_err(),
            "Requested nodes are busy"
        );
        let mut ignore = busy.clone();
        ignore.fields.push(("Flags".into(), "IGNORE_JOBS".into()));
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
                .contains("Users or Accounts")
        );
        let mut not_root = ignore.clone();
        not_root.requester = 1000;
        assert_eq!(
            change(&s, &not_root, 0).unwrap_err(),
            "Access/permission denied"
        );
        let bad_flag = req(
            ReservationOp::Create,
            &[
                ("Duration", "10"),
                ("Nodes", "n2"),
                ("Users", "a"),
                ("Flags", "BOGUS"),
            ],
        );
        assert!(
            change(&s, &bad_flag, 0)
                .unwrap_err()
                .contains("Invalid flag")
        );
    }
}
