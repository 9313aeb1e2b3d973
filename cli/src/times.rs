//! Times as the commands print them, and the two facts every command reads from the
//! machine: the clock and the local time zone (`TZ`, else the system's).
//!
//! Slurm's time syntax and timestamp format are `model::timespec`'s; this module only
//! supplies the zone and the words Slurm prints for a time that is not set.

use jiff::tz::TimeZone;
use model::timespec;

/// The local time zone (`model::timespec::local_zone`: `TZ` if set, else
/// `/etc/localtime`, else UTC), read once per process and only when a time is read or
/// printed: it reads one file, never the whole time zone database.
pub fn zone() -> &'static TimeZone {
    static ZONE: std::sync::OnceLock<TimeZone> = std::sync::OnceLock::new();
    ZONE.get_or_init(|| {
        let (tz, tzdir) = (std::env::var("TZ").ok(), std::env::var("TZDIR").ok());
        let read = |path: &str| std::fs::read(path).ok();
        timespec::local_zone(tz.as_deref(), tzdir.as_deref(), &read)
    })
}

/// The current Unix time, in seconds.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// A Unix time as Slurm prints it: `2026-11-30T04:32:41` (local time), or `none` for 0.
pub fn time_or(t: i64, none: &str) -> String {
    if t <= 0 {
        return none.to_string();
    }
    timespec::timestamp(t, zone())
}

/// A Unix time as Slurm prints it, `Unknown` for 0.
pub fn format_time(t: i64) -> String {
    time_or(t, "Unknown")
}

/// The date line `squeue -l` and `sinfo -l` print first: `Mon Nov 30 04:32:41 2026`.
pub fn ctime_line(t: i64) -> String {
    timespec::ctime(t, zone())
}

/// Seconds as squeue prints times used and left: `M:SS`, `H:MM:SS`, `D-HH:MM:SS`, or
/// `INVALID` when negative or over a year.
pub fn squeue_secs(secs: i64) -> String {
    if !(0..=365 * 86400).contains(&secs) {
        return "INVALID".into();
    }
    model::units::format_duration(secs as u64)
}

/// A time limit in minutes as squeue and sinfo print it (`1-00:00:00`, `30:00`), `zero`
/// for none.
pub fn minutes_text(min: u32, zero: &str) -> String {
    if min == 0 {
        zero.to_string()
    } else {
        model::units::format_duration(u64::from(min) * 60)
    }
}

/// A time limit in minutes as sacct and scontrol print it (`00:30:00`), `UNLIMITED` for
/// none.
pub fn elapsed_limit(min: u32) -> String {
    if min == 0 {
        "UNLIMITED".into()
    } else {
        model::units::format_elapsed(u64::from(min) * 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zone_name_is_read_from_the_system_database() {
        let paris = timespec::local_zone(Some(":Europe/Paris"), None, &|path| {
            std::fs::read(path).ok()
        });
        // 2026-01-15 12:00 UTC is 13:00 in Paris (winter), 2026-07-15 12:00 is 14:00.
        assert_eq!(
            timespec::timestamp(1_768_478_400, &paris),
            "2026-01-15T13:00:00"
        );
        assert_eq!(
            timespec::timestamp(1_784_116_800, &paris),
            "2026-07-15T14:00:00"
        );
    }

    #[test]
    fn times_and_limits() {
        let t = 1_800_000_000;
        assert_eq!(format_time(0), "Unknown");
        assert_eq!(time_or(-1, "N/A"), "N/A");
        assert_eq!(time_or(t, "N/A"), format_time(t));
        let text = format_time(t);
        assert_eq!(text.len(), 19);
        assert_eq!(&text[10..11], "T");
        assert_eq!(ctime_line(t).len(), 24);
        assert_eq!(minutes_text(0, "infinite"), "infinite");
        assert_eq!(minutes_text(90, "n/a"), "1:30:00");
        assert_eq!(minutes_text(1440, "n/a"), "1-00:00:00");
        assert_eq!(elapsed_limit(0), "UNLIMITED");
        assert_eq!(elapsed_limit(30), "00:30:00");
    }

    #[test]
    fn squeue_times() {
        assert_eq!(squeue_secs(0), "0:00");
        assert_eq!(squeue_secs(3725), "1:02:05");
        assert_eq!(squeue_secs(-1), "INVALID");
    }
}
