//! Slurm's time and memory syntaxes, parsed and printed.
//!
//! Time limits: `5` is 5 minutes, `5:30` is 5 min 30 s, `1:00:00` one hour,
//! `2-12` two days twelve hours, `1-00:30:00`, `UNLIMITED`/`infinite`.
//! Memory: `200` is 200 MB, `1GB`/`1G` is 1024 MB, `954M`, `2T`, `512K` (rounded up).

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    #[error("invalid time specification `{0}`")]
    Time(String),
    #[error("invalid memory specification `{0}`")]
    Memory(String),
    #[error("Invalid unit type '{0}'. Possible options are 'KMGTP'")]
    Unit(String),
}

/// An age after which records are purged: Slurm's `PurgeJobAfter` of slurmdbd.conf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurgeAge {
    Hours(u32),
    Days(u32),
    /// Calendar months (UTC).
    Months(u32),
}

impl PurgeAge {
    /// Parses Slurm's forms: a number of months (`12`), or a number followed by
    /// `hours`, `days` or `months` (`12hours`, `30days`, `6months`; singular and any case
    /// too). Empty: never purge. At least 1.
    pub fn parse(text: &str) -> Result<Option<PurgeAge>, UnitError> {
        let t = text.trim().to_ascii_lowercase();
        if t.is_empty() {
            return Ok(None);
        }
        let err = || UnitError::Time(text.to_string());
        let digits = t.bytes().take_while(u8::is_ascii_digit).count();
        let n: u32 = t[..digits].parse().map_err(|_| err())?;
        if n == 0 {
            return Err(err());
        }
        Ok(Some(match &t[digits..] {
            "" | "month" | "months" => PurgeAge::Months(n),
            "day" | "days" => PurgeAge::Days(n),
            "hour" | "hours" => PurgeAge::Hours(n),
            _ => return Err(err()),
        }))
    }

    /// The time before which records are purged at `now` (Unix seconds).
    ///
    /// Example: `Months(1)` at 2026-03-31T12:00:00Z is 2026-02-28T12:00:00Z.
    pub fn cutoff(self, now: i64) -> i64 {
        match self {
            PurgeAge::Hours(n) => now - i64::from(n) * 3600,
            PurgeAge::Days(n) => now - i64::from(n) * 86_400,
            PurgeAge::Months(n) => {
                let utc = jiff::tz::TimeZone::UTC;
                jiff::Timestamp::from_second(now)
                    .ok()
                    .and_then(|t| {
                        utc.to_datetime(t)
                            .checked_sub(jiff::Span::new().months(i64::from(n)))
                            .ok()
                    })
                    .and_then(|d| utc.to_timestamp(d).ok())
                    .map_or(i64::MIN, |t| t.as_second())
            }
        }
    }
}

/// A time limit in minutes; `None` means UNLIMITED. Seconds round up to whole minutes.
pub fn parse_time_limit(text: &str) -> Result<Option<u32>, UnitError> {
    parse_duration_secs(text).map(|s| s.map(|s| s.div_ceil(60) as u32))
}

/// A duration in seconds in Slurm's time-limit syntax; `None` means UNLIMITED.
pub fn parse_duration_secs(text: &str) -> Result<Option<u64>, UnitError> {
    let t = text.trim();
    let err = || UnitError::Time(text.to_string());
    if t.eq_ignore_ascii_case("unlimited") || t.eq_ignore_ascii_case("infinite") || t == "-1" {
        return Ok(None);
    }
    if t.is_empty() {
        return Err(err());
    }
    let num = |s: &str| -> Result<u64, UnitError> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.len() > 9 {
            return Err(err());
        }
        s.parse().map_err(|_| err())
    };
    let (days, rest) = match t.split_once('-') {
        Some((d, r)) => (Some(num(d)?), r),
        None => (None, t),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    let secs = match (days, parts.as_slice()) {
        // minutes | minutes:seconds | hours:minutes:seconds
        (None, [m]) => num(m)? * 60,
        (None, [m, s]) => num(m)? * 60 + num(s)?,
        (None, [h, m, s]) => num(h)? * 3600 + num(m)? * 60 + num(s)?,
        // days-hours | days-hours:minutes | days-hours:minutes:seconds
        (Some(d), [h]) => d * 86400 + num(h)? * 3600,
        (Some(d), [h, m]) => d * 86400 + num(h)? * 3600 + num(m)? * 60,
        (Some(d), [h, m, s]) => d * 86400 + num(h)? * 3600 + num(m)? * 60 + num(s)?,
        _ => return Err(err()),
    };
    Ok(Some(secs))
}

/// Formats seconds as Slurm prints times: `M:SS`, `H:MM:SS` or `D-HH:MM:SS`.
pub fn format_duration(secs: u64) -> String {
    let (d, rem) = (secs / 86400, secs % 86400);
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// Formats a time limit in minutes as Slurm's squeue does; `None` is `UNLIMITED`.
pub fn format_time_limit(minutes: Option<u32>) -> String {
    match minutes {
        None => "UNLIMITED".to_string(),
        Some(m) => format_duration(u64::from(m) * 60),
    }
}

/// Formats a duration always with hours, as sacct's Elapsed (`00:00:05`, `1-02:03:04`).
pub fn format_elapsed(secs: u64) -> String {
    let (d, rem) = (secs / 86400, secs % 86400);
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// Formats a CPU time in microseconds as sacct's TotalCPU, UserCPU and SystemCPU
/// (Slurm 22.05's `_elapsed_time`): `MM:SS.mmm` under an hour when there are
/// milliseconds, else `00:MM:SS`, `HH:MM:SS` or `D-HH:MM:SS`.
pub fn format_cpu_time(us: u64) -> String {
    let (secs, ms) = (us / 1_000_000, us % 1_000_000 / 1000);
    let (d, h, m, s) = (
        secs / 86400,
        secs % 86400 / 3600,
        secs % 3600 / 60,
        secs % 60,
    );
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else if h > 0 {
        format!("{h:02}:{m:02}:{s:02}")
    } else if ms > 0 {
        format!("{m:02}:{s:02}.{ms:03}")
    } else {
        format!("00:{m:02}:{s:02}")
    }
}

/// The units Slurm prints sizes in, each 1024 of the one before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SizeUnit {
    None,
    Kilo,
    Mega,
    Giga,
    Tera,
    Peta,
}

impl SizeUnit {
    /// sacct's `--units=`: its first letter, one of `K`, `M`, `G`, `T`, `P` in any
    /// case, as Slurm reads it.
    pub fn parse(text: &str) -> Result<SizeUnit, UnitError> {
        let first = text.chars().next().unwrap_or_default();
        match first.to_ascii_uppercase() {
            'K' => Ok(SizeUnit::Kilo),
            'M' => Ok(SizeUnit::Mega),
            'G' => Ok(SizeUnit::Giga),
            'T' => Ok(SizeUnit::Tera),
            'P' => Ok(SizeUnit::Peta),
            _ => Err(UnitError::Unit(first.to_string())),
        }
    }
}

/// How sacct and sstat print a size (Slurm's `convert_num_unit` and its flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SizeConversion {
    /// Into larger units as long as the figure stays exact, halves counting as exact
    /// (`CONVERT_NUM_UNIT_EXACT`, the default): `1523412K`, `2G`, `1.50K`.
    #[default]
    Exact,
    /// In the unit it is kept in (`--noconvert`): bytes for MaxRSS, MB for MaxDiskRead.
    Kept,
    /// In this unit (`--units=M`).
    To(SizeUnit),
}

/// Prints `num`, counted in `unit`, as Slurm's `convert_num_unit` does: a whole
/// number as one (`1523412K`), else with two decimals (`10.00M`), then the unit's
/// letter; 0 as `0`.
pub fn convert_size(num: f64, unit: SizeUnit, how: SizeConversion) -> String {
    const LETTERS: [&str; 7] = ["", "K", "M", "G", "T", "P", "?"];
    if num as i64 == 0 {
        return "0".into();
    }
    let (mut num, mut unit) = (num, unit as usize);
    match how {
        SizeConversion::Kept => {}
        SizeConversion::To(to) => {
            let to = to as usize;
            while to < unit {
                num *= 1024.0;
                unit -= 1;
            }
            while to > unit {
                num /= 1024.0;
                unit += 1;
            }
        }
        SizeConversion::Exact => {
            while num >= 1024.0 && (num as u64).is_multiple_of(512) {
                num /= 1024.0;
                unit += 1;
            }
        }
    }
    let letter = LETTERS[unit.min(LETTERS.len() - 1)];
    let whole = num as u64;
    if whole as f64 == num {
        format!("{whole}{letter}")
    } else {
        format!("{num:.2}{letter}")
    }
}

/// Formats bytes as sacct and sstat print memory figures (MaxRSS, AveRSS, TRES):
/// `1523412K`, `2G`, `0` by default.
pub fn format_bytes(bytes: u64, how: SizeConversion) -> String {
    convert_size(bytes as f64, SizeUnit::None, how)
}

/// Formats bytes read or written as sacct and sstat print MaxDiskRead and the like:
/// in MB, with two decimals where not whole (`10.00M`), under 1 MB always so
/// (`0.50M`), none as `0`.
pub fn format_disk_bytes(bytes: u64, how: SizeConversion) -> String {
    let mb = bytes as f64 / f64::from(1u32 << 20);
    if mb > 1.0 {
        convert_size(mb, SizeUnit::Mega, how)
    } else if mb > 0.0 {
        format!("{mb:.2}M")
    } else {
        "0".into()
    }
}

/// Memory in megabytes (MiB, as Slurm counts). A bare number is MB.
pub fn parse_memory_mb(text: &str) -> Result<u64, UnitError> {
    let t = text.trim();
    let err = || UnitError::Memory(text.to_string());
    let t = t.strip_suffix(['B', 'b']).unwrap_or(t);
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    if digits.is_empty() || digits.len() > 15 {
        return Err(err());
    }
    let n: u64 = digits.parse().map_err(|_| err())?;
    let kb = match unit.to_ascii_uppercase().as_str() {
        "" | "M" => n.checked_mul(1024),
        "K" => Some(n),
        "G" => n.checked_mul(1024 * 1024),
        "T" => n.checked_mul(1024 * 1024 * 1024),
        _ => return Err(err()),
    }
    .ok_or_else(err)?;
    Ok(kb.div_ceil(1024))
}

/// Formats megabytes as Slurm does in `scontrol` (`954M`, `4G`).
pub fn format_memory_mb(mb: u64) -> String {
    if mb > 0 && mb.is_multiple_of(1024 * 1024) {
        format!("{}T", mb / (1024 * 1024))
    } else if mb > 0 && mb.is_multiple_of(1024) {
        format!("{}G", mb / 1024)
    } else {
        format!("{mb}M")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purge_ages_read_as_slurmdbd_reads_them() {
        assert_eq!(PurgeAge::parse(""), Ok(None));
        assert_eq!(PurgeAge::parse("12"), Ok(Some(PurgeAge::Months(12))));
        assert_eq!(PurgeAge::parse("12hours"), Ok(Some(PurgeAge::Hours(12))));
        assert_eq!(PurgeAge::parse("30Days"), Ok(Some(PurgeAge::Days(30))));
        assert_eq!(PurgeAge::parse("1month"), Ok(Some(PurgeAge::Months(1))));
        for bad in ["0", "days", "12weeks", "-3", "1.5days"] {
            assert!(PurgeAge::parse(bad).is_err(), "{bad}");
        }
        // 2026-03-31T12:00:00Z less a month is the end of February; less 2 days.
        let now = 1_774_958_400;
        assert_eq!(PurgeAge::Months(1).cutoff(now), 1_772_280_000);
        assert_eq!(PurgeAge::Days(2).cutoff(now), now - 172_800);
        assert_eq!(PurgeAge::Hours(1).cutoff(now), now - 3600);
    }

    #[test]
    fn cpu_times_and_memory_figures_print_as_sacct_prints_them() {
        assert_eq!(format_cpu_time(0), "00:00:00");
        assert_eq!(format_cpu_time(4_000), "00:00.004");
        assert_eq!(format_cpu_time(75_250_000), "01:15.250");
        assert_eq!(format_cpu_time(75_000_000), "00:01:15");
        assert_eq!(format_cpu_time(3_723_500_000), "01:02:03");
        assert_eq!(format_cpu_time(90_061_000_000), "1-01:01:01");
        let exact = |b| format_bytes(b, SizeConversion::Exact);
        assert_eq!(exact(0), "0");
        assert_eq!(exact(1000), "1000");
        assert_eq!(exact(1_559_973_888), "1523412K");
        assert_eq!(exact(2 << 30), "2G");
        assert_eq!(exact(3 << 20), "3M");
        // Halves are exact too, as Slurm's EXACT flag has it.
        assert_eq!(exact(1536), "1.50K");
    }

    #[test]
    fn sizes_convert_as_the_flags_of_sacct_ask() {
        let rss = 105_377_792; // 102908K
        assert_eq!(format_bytes(rss, SizeConversion::Exact), "102908K");
        assert_eq!(format_bytes(rss, SizeConversion::Kept), "105377792");
        assert_eq!(
            format_bytes(rss, SizeConversion::To(SizeUnit::Mega)),
            "100.50M"
        );
        assert_eq!(
            format_bytes(rss, SizeConversion::To(SizeUnit::Kilo)),
            "102908K"
        );
        assert_eq!(
            convert_size(3.0, SizeUnit::Giga, SizeConversion::To(SizeUnit::Mega)),
            "3072M"
        );
        // Disk figures are kept in MB.
        let ten_mb = 10 << 20;
        assert_eq!(format_disk_bytes(ten_mb, SizeConversion::Exact), "10M");
        assert_eq!(
            format_disk_bytes(ten_mb + 1200, SizeConversion::Kept),
            "10.00M"
        );
        assert_eq!(format_disk_bytes(3_495_253, SizeConversion::Exact), "3.33M");
        assert_eq!(format_disk_bytes(2048 << 20, SizeConversion::Exact), "2G");
        assert_eq!(format_disk_bytes(2048 << 20, SizeConversion::Kept), "2048M");
        assert_eq!(format_disk_bytes(512 << 10, SizeConversion::Exact), "0.50M");
        assert_eq!(format_disk_bytes(0, SizeConversion::Exact), "0");
        assert_eq!(SizeUnit::parse("g"), Ok(SizeUnit::Giga));
        assert_eq!(SizeUnit::parse("Mx"), Ok(SizeUnit::Mega));
        assert_eq!(
            SizeUnit::parse("X").unwrap_err().to_string(),
            "Invalid unit type 'X'. Possible options are 'KMGTP'"
        );
    }

    #[test]
    fn time_forms() {
        assert_eq!(parse_time_limit("5").unwrap(), Some(5));
        assert_eq!(parse_time_limit("5:30").unwrap(), Some(6));
        assert_eq!(parse_time_limit("00:10:00").unwrap(), Some(10));
        assert_eq!(parse_time_limit("2-12").unwrap(), Some(3600));
        assert_eq!(parse_time_limit("1-00:30").unwrap(), Some(1470));
        assert_eq!(parse_time_limit("1-00:30:00").unwrap(), Some(1470));
        assert_eq!(parse_time_limit("UNLIMITED").unwrap(), None);
        for bad in ["", "abc", "1:2:3:4", "-5", "5m", "1-", "1-2-3"] {
            assert!(parse_time_limit(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn time_printing() {
        assert_eq!(format_duration(65), "1:05");
        assert_eq!(format_duration(3600), "1:00:00");
        assert_eq!(format_duration(86400 + 61), "1-00:01:01");
        assert_eq!(format_elapsed(5), "00:00:05");
        assert_eq!(format_time_limit(None), "UNLIMITED");
    }

    #[test]
    fn memory_forms() {
        assert_eq!(parse_memory_mb("200").unwrap(), 200);
        assert_eq!(parse_memory_mb("954M").unwrap(), 954);
        assert_eq!(parse_memory_mb("1GB").unwrap(), 1024);
        assert_eq!(parse_memory_mb("1G").unwrap(), 1024);
        assert_eq!(parse_memory_mb("2t").unwrap(), 2 * 1024 * 1024);
        assert_eq!(parse_memory_mb("1500K").unwrap(), 2);
        for bad in ["", "G", "1X", "1.5G", "-1", "99999999999999999999"] {
            assert!(parse_memory_mb(bad).is_err(), "{bad}");
        }
        assert_eq!(format_memory_mb(954), "954M");
        assert_eq!(format_memory_mb(4096), "4G");
    }
}
