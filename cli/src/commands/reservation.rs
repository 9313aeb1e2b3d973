//! Advance reservations from the command line: `scontrol create|update|delete
//! reservation`, `scontrol show reservation` and `sinfo -T`.
//!
//! `scontrol create reservation ReservationName=maint StartTime=now+1hour
//! Duration=120 Nodes=n[1-2] Users=root Flags=MAINT` prints `Reservation created:
//! maint`; the words are parsed here (`model::reservation_change`, times in the user's
//! time zone) and sent as a typed change.

use crate::times;
use model::reservation_change::ReservationChange;
use model::units::format_elapsed;
use proto::v1;

/// Builds the request from `Key=Value` words; `StartTime`/`EndTime` in Slurm's forms.
pub fn request(
    op: v1::ReservationOp,
    words: &[String],
    now: i64,
) -> Result<v1::ChangeReservationRequest, String> {
    let change = ReservationChange::parse(words, now, times::zone())?;
    Ok(v1::ChangeReservationRequest {
        op: op as i32,
        change: Some(proto::convert::reservation_change_to_wire(&change)),
    })
}

fn list_or_null(v: &[String]) -> String {
    if v.is_empty() {
        "(null)".into()
    } else {
        v.join(",")
    }
}

/// `scontrol show reservation`: Slurm's record layout, a blank line between records.
pub fn render_show(reservations: &[v1::ReservationInfo], one_liner: bool) -> String {
    if reservations.is_empty() {
        return "No reservations in the system\n".into();
    }
    let mut out = String::new();
    for r in reservations {
        let parts = [
            format!(
                "ReservationName={} StartTime={} EndTime={} Duration={}",
                r.name,
                times::format_time(r.start_time),
                times::format_time(r.end_time),
                format_elapsed((r.end_time - r.start_time).max(0) as u64)
            ),
            format!(
                "Nodes={} NodeCnt={} CoreCnt={} Features=(null) PartitionName={} Flags={}",
                r.nodes,
                r.node_count,
                r.core_count,
                if r.partition.is_empty() {
                    "(null)"
                } else {
                    &r.partition
                },
                r.flags
            ),
            format!("TRES=cpu={}", r.core_count),
            format!(
                "Users={} Groups=(null) Accounts={} Licenses=(null) State={} BurstBuffer=(null) Watts=n/a",
                list_or_null(&r.users),
                list_or_null(&r.accounts),
                r.state
            ),
            "MaxStartDelay=(null)".to_string(),
        ];
        out.push_str(&parts.join(if one_liner { " " } else { "\n   " }));
        out.push('\n');
        if !one_liner {
            out.push('\n');
        }
    }
    out
}

/// `sinfo -T`: one line a reservation.
pub fn render_sinfo(reservations: &[v1::ReservationInfo], header: bool) -> String {
    let mut out = String::new();
    let line = |a: &str, b: &str, c: &str, d: &str, e: &str, f: &str| {
        format!("{a:<13} {b:<6} {c:>19}  {d:>19}  {e:>11}  {f}\n")
    };
    if header {
        out.push_str(&line(
            "RESV_NAME",
            "STATE",
            "START_TIME",
            "END_TIME",
            "DURATION",
            "NODELIST",
        ));
    }
    for r in reservations {
        out.push_str(&line(
            &r.name,
            &r.state,
            &times::format_time(r.start_time),
            &times::format_time(r.end_time),
            &format_elapsed((r.end_time - r.start_time).max(0) as u64),
            &r.nodes,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info() -> v1::ReservationInfo {
        v1::ReservationInfo {
            name: "maint".into(),
            start_time: 0,
            end_time: 7200,
            nodes: "n[1-2]".into(),
            node_count: 2,
            core_count: 8,
            users: vec!["root".into()],
            accounts: vec![],
            flags: "MAINT".into(),
            state: "ACTIVE".into(),
            partition: String::new(),
        }
    }

    #[test]
    fn builds_requests() {
        let words: Vec<String> = [
            "ReservationName=maint",
            "StartTime=now+60",
            "duration=120",
            "nodes=n1",
            "users=root",
            "flags=maint",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let r = request(v1::ReservationOp::Create, &words, 1000).unwrap();
        let change = r.change.unwrap();
        assert_eq!(change.name.as_deref(), Some("maint"));
        assert_eq!(change.start_time, Some(1060));
        assert_eq!(
            change.duration,
            Some(v1::reservation_change::Duration::DurationSecs(7200))
        );
        assert_eq!(
            change.nodes,
            Some(v1::reservation_change::Nodes::NodeNames(v1::NodeNames {
                names: vec!["n1".into()]
            }))
        );
        let flags = change.flags.unwrap();
        assert_eq!(flags.flags, vec![v1::ReservationFlag::Maint as i32]);
        assert!(request(v1::ReservationOp::Create, &["Bogus=1".to_string()], 0).is_err());
        assert!(
            request(
                v1::ReservationOp::Create,
                &["StartTime=whenever".to_string()],
                0
            )
            .is_err()
        );
    }

    #[test]
    fn renders() {
        let show = render_show(&[info()], false);
        assert!(
            show.starts_with("ReservationName=maint StartTime="),
            "{show}"
        );
        assert!(
            show.contains("Duration=02:00:00\n   Nodes=n[1-2] NodeCnt=2 CoreCnt=8"),
            "{show}"
        );
        assert!(
            show.contains("Users=root Groups=(null) Accounts=(null)"),
            "{show}"
        );
        assert_eq!(render_show(&[], false), "No reservations in the system\n");
        let t = render_sinfo(&[info()], true);
        assert!(t.starts_with("RESV_NAME"), "{t}");
        assert!(t.starts_with("RESV_NAME     STATE           START_TIME             END_TIME     DURATION  NODELIST\n"), "{t}");
        assert!(
            t.lines()
                .nth(1)
                .unwrap()
                .starts_with("maint         ACTIVE "),
            "{t}"
        );
        assert!(t.trim_end().ends_with("02:00:00  n[1-2]"), "{t}");
    }
}
