//! Slurm's time syntax (`parse_time` of its common code), used by every command that
//! takes a point in time (`sbatch --begin`, `sacct -S/-E`, `scontrol update
//! StartTime=`, reservations), and Slurm's way of printing one.
//!
//! Worked example, at Mon 2026-11-30 04:50:16 local time:
//!
//! | text | `Toward::Future` (sbatch) | `Toward::Past` (sacct) |
//! |---|---|---|
//! | `now+1hour` | 05:50:16 today | the same |
//! | `16:00` | today 16:00 | today 16:00 |
//! | `04:00` | tomorrow 04:00 (already past) | today 04:00 |
//! | `midnight` | tomorrow 00:00 | today 00:00 |
//! | `12/24` | 2026-12-24 | 2025-12-24 (a later month is last year) |
//! | `2010-01-20T12:34:00` | that instant | the same |
//!
//! The forms, as Slurm 22.05's man pages list them (case does not matter for words,
//! `Today` and `TOMORROW` included, which Slurm's parser refuses because it takes their
//! `T` for the separator of an ISO date and time):
//! `now[{+|-}count[seconds|minutes|hours|days|weeks]]` (seconds by default, units
//! spelled out, singular or plural), `today`, `tomorrow`, `midnight`, `noon`,
//! `elevenses` (11:00), `fika` (15:00), `teatime` (16:00), `HH:MM[:SS] [AM|PM]`,
//! `MMDD[YY]`, `MM/DD[/YY]`, `MM.DD[.YY]`, `MM/DD[/YY]-HH:MM[:SS]` and
//! `YYYY-MM-DD[THH:MM[:SS]]`. As in Slurm, the pieces are read left to right and a later
//! one replaces an earlier one (`tomorrow noon`); a time of day without a date is today
//! or tomorrow, a date without a time is at 00:00:00, and a date without a year is this
//! year or the next (or the last, toward the past). A day past the month's end rolls
//! over into the next month, as `mktime` does.
//!
//! The local calendar comes in as a [`LocalZone`]; model never reads the system's zone.
//! [`jiff::tz::TimeZone`] implements it, so a caller passes `TimeZone::system()` (or a
//! fixed zone in tests).

use crate::job::Time;
use jiff::civil::{Date, DateTime, Time as ClockTime};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};

/// The local calendar: a Unix time's local date and time, and back.
pub trait LocalZone {
    /// The local date and time at Unix time `t`.
    fn civil(&self, t: Time) -> DateTime;
    /// The Unix time of a local date and time. A time the zone skips (a DST gap) or
    /// repeats (a DST fold) resolves as `mktime` does with `tm_isdst = -1`: the
    /// offset in force before the transition.
    fn unix(&self, local: DateTime) -> Time;
}

/// Where the time zone database lives unless `TZDIR` says otherwise.
const TZDIR: &str = "/usr/share/zoneinfo";

/// The zone a process's local time is in, as libc takes it: `TZ` when it is set (empty
/// is UTC; `:NAME` or `NAME` a TZif file under `tzdir`, or an absolute path to one; else
/// a POSIX TZ string such as `EST5EDT,M3.2.0,M11.1.0`), else the TZif file
/// `/etc/localtime`, else UTC; `tzdir` is `TZDIR`, `/usr/share/zoneinfo` when unset.
/// Pure: `read` reads a file (the caller's IO), and only the one file named is read,
/// never the whole time zone database.
pub fn local_zone(
    tz: Option<&str>,
    tzdir: Option<&str>,
    read: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> TimeZone {
    let tzif = |path: &str| read(path).and_then(|data| TimeZone::tzif("local", &data).ok());
    match tz {
        None => tzif("/etc/localtime").unwrap_or(TimeZone::UTC),
        Some("") => TimeZone::UTC,
        Some(spec) => {
            let name = spec.strip_prefix(':').unwrap_or(spec);
            let path = if name.starts_with('/') {
                name.to_string()
            } else {
                format!("{}/{name}", tzdir.unwrap_or(TZDIR).trim_end_matches('/'))
            };
            // A name must not climb out of the database.
            let file = (!name.split('/').any(|part| part == "..")).then(|| tzif(&path));
            file.flatten()
                .or_else(|| TimeZone::posix(name).ok())
                .unwrap_or(TimeZone::UTC)
        }
    }
}

/// The latest time a time of Slurm's syntax can name (late on 9999-12-30, UTC): times
/// beyond it are clamped to it.
pub fn latest() -> Time {
    Timestamp::MAX.as_second()
}

impl LocalZone for TimeZone {
    fn civil(&self, t: Time) -> DateTime {
        let t = t.clamp(Timestamp::MIN.as_second(), latest());
        let ts = Timestamp::from_second(t).unwrap_or(Timestamp::UNIX_EPOCH);
        self.to_datetime(ts)
    }

    fn unix(&self, local: DateTime) -> Time {
        match self.to_ambiguous_timestamp(local).compatible() {
            Ok(ts) => ts.as_second(),
            // Beyond jiff's range (years past 9999): the nearest end.
            Err(_) if local.year() > 0 => latest(),
            Err(_) => Timestamp::MIN.as_second(),
        }
    }
}

/// Which way an ambiguous time of day or date resolves: Slurm's `past` flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Toward {
    /// The next such time: `sbatch --begin`, `scontrol update StartTime`.
    Future,
    /// The last such time (a time of day is today, a month after this one last year):
    /// `sacct -S/-E`.
    Past,
}

/// A text that is not a Slurm time, with the byte where reading stopped (Slurm's
/// `pos`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid time specification (pos={pos}): {text}")]
pub struct TimeSpecError {
    pub text: String,
    pub pos: usize,
}

/// The day a time names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Day {
    Today,
    Tomorrow,
    /// The day of `now` plus this many seconds.
    FromNow(i64),
    /// A calendar date; without a year, the nearest one toward the future or the past.
    Calendar {
        year: Option<i16>,
        month: i8,
        day: i8,
    },
}

/// The time of day a time names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Clock {
    At {
        hour: i8,
        minute: i8,
        second: i8,
    },
    /// The time of day of `now` plus this many seconds.
    FromNow(i64),
}

/// A parsed time, before the clock is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeSpec {
    day: Option<Day>,
    clock: Option<Clock>,
}

/// Parses `text` and resolves it at `now`: the one call most commands need.
pub fn parse(
    text: &str,
    now: Time,
    toward: Toward,
    zone: &dyn LocalZone,
) -> Result<Time, TimeSpecError> {
    Ok(TimeSpec::parse(text)?.resolve(now, toward, zone))
}

/// The units `now+N` takes, longest spelling first.
const UNITS: [(&str, i64); 10] = [
    ("seconds", 1),
    ("second", 1),
    ("minutes", 60),
    ("minute", 60),
    ("hours", 3600),
    ("hour", 3600),
    ("days", 86400),
    ("day", 86400),
    ("weeks", 7 * 86400),
    ("week", 7 * 86400),
];

/// A word names a day or a time of day.
#[derive(Debug, Clone, Copy)]
enum Word {
    Day(Day),
    Clock(Clock),
}

const fn at(hour: i8) -> Word {
    Word::Clock(Clock::At {
        hour,
        minute: 0,
        second: 0,
    })
}

/// Words for a day or a time of day.
const WORDS: [(&str, Word); 7] = [
    ("today", Word::Day(Day::Today)),
    ("tomorrow", Word::Day(Day::Tomorrow)),
    ("midnight", at(0)),
    ("noon", at(12)),
    ("elevenses", at(11)),
    ("fika", at(15)),
    ("teatime", at(16)),
];

/// Reads a time text byte by byte, as Slurm's parser does.
struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn at(&self, i: usize) -> u8 {
        self.bytes.get(i).copied().unwrap_or(0)
    }

    fn starts_with_word(&self, word: &str) -> bool {
        self.bytes
            .get(self.pos..self.pos + word.len())
            .is_some_and(|b| b.eq_ignore_ascii_case(word.as_bytes()))
    }

    fn fail(&self) -> TimeSpecError {
        TimeSpecError {
            text: self.text.to_string(),
            pos: self.pos,
        }
    }

    fn digit(&mut self) -> Result<i64, TimeSpecError> {
        match self.at(self.pos) {
            b @ b'0'..=b'9' => {
                self.pos += 1;
                Ok(i64::from(b - b'0'))
            }
            _ => Err(self.fail()),
        }
    }

    /// One or two digits.
    fn one_or_two(&mut self) -> Result<i64, TimeSpecError> {
        let first = self.digit()?;
        match self.at(self.pos) {
            b'0'..=b'9' => Ok(first * 10 + self.digit()?),
            _ => Ok(first),
        }
    }

    fn two(&mut self) -> Result<i64, TimeSpecError> {
        Ok(self.digit()? * 10 + self.digit()?)
    }

    /// `[{+|-}count[unit]]` after `now`: the offset in seconds.
    fn now_offset(&mut self) -> Result<i64, TimeSpecError> {
        while matches!(self.at(self.pos), b' ' | b'\t') {
            self.pos += 1;
        }
        let sign = match self.at(self.pos) {
            0 | b'\n' => return Ok(0),
            b'+' => 1,
            b'-' => -1,
            _ => return Err(self.fail()),
        };
        self.pos += 1;
        let mut count: i64 = 0;
        let mut digits = 0;
        while !matches!(self.at(self.pos), 0 | b'\n') {
            let b = self.at(self.pos);
            if b.is_ascii_whitespace() {
                self.pos += 1;
                continue;
            }
            if let Some((word, mult)) = UNITS.iter().find(|(w, _)| self.starts_with_word(w)) {
                self.pos += word.len();
                count = count.saturating_mul(*mult);
                break;
            }
            if b.is_ascii_digit() {
                count = count.saturating_mul(10).saturating_add(i64::from(b - b'0'));
                digits += 1;
                self.pos += 1;
                continue;
            }
            return Err(self.fail());
        }
        if digits == 0 {
            return Err(self.fail());
        }
        Ok(sign * count)
    }

    /// `HH:MM[:SS] [AM|PM]`.
    fn clock(&mut self) -> Result<Clock, TimeSpecError> {
        let mut hour = self.one_or_two()?;
        if hour > 23 || self.at(self.pos) != b':' {
            return Err(self.fail());
        }
        self.pos += 1;
        let minute = self.two()?;
        if minute > 59 {
            return Err(self.fail());
        }
        let mut second = 0;
        if self.at(self.pos) == b':' {
            self.pos += 1;
            second = self.two()?;
            if second > 59 {
                return Err(self.fail());
            }
        }
        while self.at(self.pos).is_ascii_whitespace() {
            self.pos += 1;
        }
        if self.starts_with_word("pm") {
            hour += 12;
            match hour {
                24 => hour = 12,
                25.. => return Err(self.fail()),
                _ => {}
            }
            self.pos += 2;
        } else if self.starts_with_word("am") {
            match hour {
                12 => hour = 0,
                13.. => return Err(self.fail()),
                _ => {}
            }
            self.pos += 2;
        }
        Ok(Clock::At {
            hour: hour as i8,
            minute: minute as i8,
            second: second as i8,
        })
    }

    /// `YYYY-MM-DD`, or `MMDD[YY]`, `MM/DD[/YY]`, `MM.DD[.YY]`.
    fn date(&mut self) -> Result<Day, TimeSpecError> {
        let iso = self.at(self.pos + 4) == b'-' && self.at(self.pos + 7) == b'-';
        let mut year = None;
        if iso {
            year = Some(self.digit()? * 1000 + self.digit()? * 100 + self.two()?);
            self.pos += 1;
        }
        let month = self.one_or_two()?;
        if !(1..=12).contains(&month) {
            return Err(self.fail());
        }
        let separators: &[u8] = if iso { b"-" } else { b"./" };
        if separators.contains(&self.at(self.pos)) {
            self.pos += 1;
        }
        let day = self.one_or_two()?;
        if !(1..=31).contains(&day) {
            return Err(self.fail());
        }
        if !iso {
            if matches!(self.at(self.pos), b'.' | b'/') {
                self.pos += 1;
            }
            // A two-digit year, 20YY; Slurm reads `00` as no year.
            if self.at(self.pos).is_ascii_digit() {
                let yy = self.two()?;
                year = (yy > 0).then_some(2000 + yy);
            }
        }
        Ok(Day::Calendar {
            year: year.map(|y| y as i16),
            month: month as i8,
            day: day as i8,
        })
    }
}

impl TimeSpec {
    /// Parses a Slurm time without reading the clock.
    pub fn parse(text: &str) -> Result<TimeSpec, TimeSpecError> {
        let mut r = Reader {
            text,
            bytes: text.as_bytes(),
            pos: 0,
        };
        let mut spec = TimeSpec {
            day: None,
            clock: None,
        };
        'read: while !matches!(r.at(r.pos), 0 | b'\n') {
            let b = r.at(r.pos);
            // Words first, so that the `T` of `Today` or `TOMORROW` is not taken for
            // the separator of an ISO date and time (Slurm's parser does, and refuses
            // them).
            for (text, word) in WORDS {
                if r.starts_with_word(text) {
                    r.pos += text.len();
                    match word {
                        Word::Day(d) => spec.day = Some(d),
                        Word::Clock(c) => spec.clock = Some(c),
                    }
                    continue 'read;
                }
            }
            if r.starts_with_word("now") {
                r.pos += 3;
                let offset = r.now_offset()?;
                spec.day = Some(Day::FromNow(offset));
                spec.clock = Some(Clock::FromNow(offset));
                continue;
            }
            if matches!(b, b' ' | b'\t' | b'-' | b'T') {
                r.pos += 1;
                continue;
            }
            if !b.is_ascii_digit() {
                return Err(r.fail());
            }
            if r.at(r.pos + 1) == b':' || r.at(r.pos + 2) == b':' {
                spec.clock = Some(r.clock()?);
            } else {
                spec.day = Some(r.date()?);
            }
        }
        if spec.day.is_none() && spec.clock.is_none() {
            return Err(r.fail());
        }
        Ok(spec)
    }

    /// The Unix time this stands for at `now`, in `zone`'s calendar.
    pub fn resolve(&self, now: Time, toward: Toward, zone: &dyn LocalZone) -> Time {
        if let (Some(Day::FromNow(a)), Some(Clock::FromNow(b))) = (self.day, self.clock)
            && a == b
        {
            return now.saturating_add(a);
        }
        let today = zone.civil(now);
        let (hour, minute, second) = match self.clock {
            Some(Clock::At {
                hour,
                minute,
                second,
            }) => (hour, minute, second),
            Some(Clock::FromNow(offset)) => {
                let t = zone.civil(now.saturating_add(offset));
                (t.hour(), t.minute(), t.second())
            }
            None => (0, 0, 0),
        };
        let clock_after_now = (hour, minute) > (today.hour(), today.minute());
        let day_of = |t: Time| zone.civil(t).date();
        let tomorrow = || day_of(now.saturating_add(86400));
        let (year, month, day) = match self.day {
            Some(Day::Today) => ymd(today.date()),
            Some(Day::Tomorrow) => ymd(tomorrow()),
            Some(Day::FromNow(offset)) => ymd(day_of(now.saturating_add(offset))),
            None if toward == Toward::Past || clock_after_now => ymd(today.date()),
            None => ymd(tomorrow()),
            Some(Day::Calendar {
                year: Some(year),
                month,
                day,
            }) => (year, month, day),
            Some(Day::Calendar {
                year: None,
                month,
                day,
            }) => {
                let this = today.year();
                let year = match toward {
                    Toward::Past if month > today.month() => this - 1,
                    Toward::Past => this,
                    Toward::Future
                        if (month, day, hour, minute)
                            > (today.month(), today.day(), today.hour(), today.minute()) =>
                    {
                        this
                    }
                    Toward::Future => this + 1,
                };
                (year, month, day)
            }
        };
        zone.unix(civil(year, month, day, hour, minute, second))
    }
}

fn ymd(d: Date) -> (i16, i8, i8) {
    (d.year(), d.month(), d.day())
}

/// A local date and time, a day past the month's end rolling over into the next month.
fn civil(year: i16, month: i8, day: i8, hour: i8, minute: i8, second: i8) -> DateTime {
    let year = year.clamp(Date::MIN.year(), Date::MAX.year() - 1);
    let first = Date::new(year, month.clamp(1, 12), 1).unwrap_or(Date::MIN);
    let date = first
        .checked_add((i32::from(day) - 1).days())
        .unwrap_or(first);
    let clock = ClockTime::new(hour, minute, second, 0).unwrap_or(ClockTime::midnight());
    date.to_datetime(clock)
}

/// The start (00:00:00) of the local day `t` falls in: sacct's default start.
pub fn start_of_day(t: Time, zone: &dyn LocalZone) -> Time {
    zone.unix(zone.civil(t).date().to_datetime(ClockTime::midnight()))
}

/// A Unix time as Slurm prints one: `2026-12-01T21:29:19`, local time.
pub fn timestamp(t: Time, zone: &dyn LocalZone) -> String {
    let d = zone.civil(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        d.year(),
        d.month(),
        d.day(),
        d.hour(),
        d.minute(),
        d.second()
    )
}

/// A Unix time as Slurm's `slurm_ctime2` prints one (`%a %b %d %T %Y`, the day of
/// the month in two digits): the date line of `squeue -l` and `sinfo -l`, salloc's
/// time limit warning. `Mon Nov 30 04:32:41 2026`, `Sun Dec 06 04:50:16 2026`.
pub fn ctime(t: Time, zone: &dyn LocalZone) -> String {
    const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let d = zone.civil(t);
    format!(
        "{} {} {:02} {:02}:{:02}:{:02} {}",
        DAYS[d.weekday().to_monday_zero_offset() as usize],
        MONTHS[(d.month() - 1) as usize],
        d.day(),
        d.hour(),
        d.minute(),
        d.second(),
        d.year()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_zone_follows_tz_then_etc_localtime() {
        let none = |_: &str| None;
        let noon = 1_800_000_000 - 1_800_000_000 % 86_400 + 12 * 3600;
        let hour = |z: &TimeZone| z.civil(noon).hour();
        // No TZ and no /etc/localtime, an empty TZ, a name that is no file: UTC.
        assert_eq!(hour(&local_zone(None, Some("/z"), &none)), 12);
        assert_eq!(hour(&local_zone(Some(""), Some("/z"), &none)), 12);
        // A POSIX TZ string, with or without a colon.
        assert_eq!(hour(&local_zone(Some("EST5"), Some("/z"), &none)), 7);
        assert_eq!(hour(&local_zone(Some(":JST-9"), Some("/z"), &none)), 21);
        // A name is looked for in the database, and never outside it.
        let asked = std::cell::RefCell::new(Vec::new());
        let record = |p: &str| {
            asked.borrow_mut().push(p.to_string());
            None
        };
        local_zone(Some(":Europe/Paris"), Some("/z/"), &record);
        local_zone(Some("../../etc/shadow"), Some("/z"), &record);
        local_zone(None, Some("/z"), &record);
        assert_eq!(*asked.borrow(), ["/z/Europe/Paris", "/etc/localtime"]);
    }

    /// Mon 2026-11-30 04:50:16 UTC.
    const NOW: Time = 1_796_014_216;

    fn utc(y: i16, mo: i8, d: i8, h: i8, mi: i8, s: i8) -> Time {
        TimeZone::UTC.unix(civil(y, mo, d, h, mi, s))
    }

    #[test]
    fn the_clock_constant_is_what_it_says() {
        assert_eq!(timestamp(NOW, &TimeZone::UTC), "2026-11-30T04:50:16");
        assert_eq!(ctime(NOW, &TimeZone::UTC), "Mon Nov 30 04:50:16 2026");
        assert_eq!(
            ctime(NOW + 6 * 86400, &TimeZone::UTC),
            "Sun Dec 06 04:50:16 2026"
        );
    }

    #[test]
    fn forms_resolve_as_slurm_does() {
        use Toward::{Future, Past};
        let cases: &[(&str, Toward, Time)] = &[
            // The man pages' examples (sbatch --begin).
            ("16:00", Future, utc(2026, 11, 30, 16, 0, 0)),
            ("now+1hour", Future, NOW + 3600),
            ("now+60", Future, NOW + 60),
            ("2010-01-20T12:34:00", Future, utc(2010, 1, 20, 12, 34, 0)),
            // now and its units, spelled out, singular or plural, any case.
            ("now", Future, NOW),
            ("NOW+2Days", Future, NOW + 2 * 86400),
            ("now+10minutes", Future, NOW + 600),
            ("now+1week", Future, NOW + 7 * 86400),
            ("now-2days", Past, NOW - 2 * 86400),
            ("now-1hours", Past, NOW - 3600),
            ("now + 30 seconds", Past, NOW + 30),
            // Words.
            ("today", Future, utc(2026, 11, 30, 0, 0, 0)),
            ("tomorrow", Future, utc(2026, 12, 1, 0, 0, 0)),
            ("midnight", Future, utc(2026, 12, 1, 0, 0, 0)),
            ("midnight", Past, utc(2026, 11, 30, 0, 0, 0)),
            ("noon", Future, utc(2026, 11, 30, 12, 0, 0)),
            ("elevenses", Future, utc(2026, 11, 30, 11, 0, 0)),
            ("fika", Future, utc(2026, 11, 30, 15, 0, 0)),
            ("teatime", Future, utc(2026, 11, 30, 16, 0, 0)),
            ("tomorrow noon", Future, utc(2026, 12, 1, 12, 0, 0)),
            // In any case, a leading `T` included.
            ("Today", Future, utc(2026, 11, 30, 0, 0, 0)),
            ("TOMORROW", Future, utc(2026, 12, 1, 0, 0, 0)),
            ("Tomorrow Noon", Future, utc(2026, 12, 1, 12, 0, 0)),
            ("TeaTime", Future, utc(2026, 11, 30, 16, 0, 0)),
            ("MIDNIGHT", Past, utc(2026, 11, 30, 0, 0, 0)),
            ("today 01:00", Future, utc(2026, 11, 30, 1, 0, 0)),
            // A time of day: the next one, or today toward the past.
            ("04:00", Future, utc(2026, 12, 1, 4, 0, 0)),
            ("04:51", Future, utc(2026, 11, 30, 4, 51, 0)),
            ("04:50", Future, utc(2026, 12, 1, 4, 50, 0)),
            ("04:00", Past, utc(2026, 11, 30, 4, 0, 0)),
            ("23:00", Past, utc(2026, 11, 30, 23, 0, 0)),
            ("1:30pm", Past, utc(2026, 11, 30, 13, 30, 0)),
            ("4:30 PM", Future, utc(2026, 11, 30, 16, 30, 0)),
            ("12:15am", Future, utc(2026, 12, 1, 0, 15, 0)),
            ("12:15pm", Future, utc(2026, 11, 30, 12, 15, 0)),
            ("10:00:05", Future, utc(2026, 11, 30, 10, 0, 5)),
            // Dates without a year: this year or the next; the last toward the past.
            ("12/01", Future, utc(2026, 12, 1, 0, 0, 0)),
            ("1201", Future, utc(2026, 12, 1, 0, 0, 0)),
            ("11/30", Future, utc(2027, 11, 30, 0, 0, 0)),
            ("11.30", Past, utc(2026, 11, 30, 0, 0, 0)),
            ("12/24", Past, utc(2025, 12, 24, 0, 0, 0)),
            ("0115", Future, utc(2027, 1, 15, 0, 0, 0)),
            // With a two-digit year, and a time after a dash.
            ("12/24/27", Future, utc(2027, 12, 24, 0, 0, 0)),
            ("122427", Future, utc(2027, 12, 24, 0, 0, 0)),
            ("12.24.27", Past, utc(2027, 12, 24, 0, 0, 0)),
            ("11/30/26-01:00", Past, utc(2026, 11, 30, 1, 0, 0)),
            ("11/30-22:00:30", Future, utc(2026, 11, 30, 22, 0, 30)),
            // ISO dates.
            ("2026-12-01", Future, utc(2026, 12, 1, 0, 0, 0)),
            ("2026-12-01T10:00", Future, utc(2026, 12, 1, 10, 0, 0)),
            ("2026-11-28T02:00", Past, utc(2026, 11, 28, 2, 0, 0)),
            // A day past the month's end rolls over, as mktime does.
            ("2027-02-31", Future, utc(2027, 3, 3, 0, 0, 0)),
        ];
        for (text, toward, want) in cases {
            let got = parse(text, NOW, *toward, &TimeZone::UTC);
            assert_eq!(got, Ok(*want), "{text} {toward:?}");
        }
    }

    #[test]
    fn anything_else_is_refused_with_the_position() {
        for bad in [
            "",
            "garbage",
            "now+",
            "now+5parsecs",
            "now+1h",
            "now16:00",
            "25:00",
            "12:5",
            "12:60",
            "13:00pm",
            "2026-13-01",
            "2026-12-01Tx",
            "13/01",
            "12/32",
            "5",
            "t",
        ] {
            let e = TimeSpec::parse(bad).unwrap_err();
            assert_eq!(e.text, bad);
            assert!(e.pos <= bad.len(), "{bad}");
        }
        let e = TimeSpec::parse("now+5parsecs").unwrap_err();
        assert_eq!(
            e.to_string(),
            "Invalid time specification (pos=5): now+5parsecs"
        );
    }

    #[test]
    fn local_time_follows_the_zone_across_dst() {
        // Central European time: +1, +2 from the last Sunday of March.
        let cet = TimeZone::posix("CET-1CEST,M3.5.0,M10.5.0/3").unwrap();
        // 2026-03-28 12:00 UTC is 13:00 CET; tomorrow is the switch to summer time.
        let now = utc(2026, 3, 28, 12, 0, 0);
        assert_eq!(
            parse("tomorrow noon", now, Toward::Future, &cet),
            Ok(utc(2026, 3, 29, 10, 0, 0))
        );
        assert_eq!(
            parse("midnight", now, Toward::Past, &cet),
            Ok(utc(2026, 3, 27, 23, 0, 0))
        );
        assert_eq!(start_of_day(now, &cet), utc(2026, 3, 27, 23, 0, 0));
        assert_eq!(timestamp(now, &cet), "2026-03-28T13:00:00");
        // 02:30 does not exist on the 29th: the offset before the gap applies.
        assert_eq!(
            parse("2026-03-29T02:30", now, Toward::Future, &cet),
            Ok(utc(2026, 3, 29, 1, 30, 0))
        );
        // `now` keeps its exact offset whatever the calendar does.
        assert_eq!(
            parse("now+1day", now, Toward::Future, &cet),
            Ok(now + 86400)
        );
    }
}
