//! `--plot FILE.svg`: a hand-written SVG of a replay, two panels over the replay's
//! time (days from the first submit):
//! - the wait of the jobs, by the time they started: mean (line) and maximum (faint
//!   line) per bucket, hours;
//! - the utilization, busy CPUs over the machine's CPUs, time-averaged per bucket.
//!
//! The time span is cut into `BUCKETS` equal buckets, so the file stays small whatever
//! the trace's size.
//!
//! Example: jobs starting at day 1 with waits 1 h and 3 h give, in the bucket of day 1,
//! a mean of 2 h and a maximum of 3 h; 50 of 100 CPUs busy over the whole bucket plot
//! as 0.5.

use crate::metrics::Summary;
use crate::swf::TraceJob;
use model::Time;
use std::fmt::Write;

/// Buckets over the time span.
pub const BUCKETS: usize = 400;

const WIDTH: f64 = 900.0;
const PANEL: f64 = 220.0;
const LEFT: f64 = 70.0;
const TOP: f64 = 30.0;
const GAP: f64 = 60.0;

/// The plotted series over `[first, last]`.
pub struct Series {
    pub first: Time,
    pub last: Time,
    /// Per bucket of start times: (mean wait s, max wait s, jobs started).
    pub waits: Vec<(f64, f64, u64)>,
    /// Per bucket: the time-averaged busy fraction of the CPUs.
    pub busy: Vec<f64>,
}

pub fn series(jobs: &[TraceJob], summary: &Summary) -> Series {
    let first = jobs.iter().map(|j| j.submit).min().unwrap_or(0);
    let last = summary
        .busy
        .last()
        .map(|b| b.0)
        .unwrap_or(first)
        .max(first + 1);
    let span = (last - first) as f64;
    let bucket = |t: Time| (((t - first) as f64 / span * BUCKETS as f64) as usize).min(BUCKETS - 1);
    let mut waits = vec![(0.0, 0.0, 0u64); BUCKETS];
    for (j, &start) in jobs.iter().zip(&summary.starts) {
        if start < 0 {
            continue;
        }
        let w = (start - j.submit) as f64;
        let b = &mut waits[bucket(start)];
        b.0 += w;
        b.1 = f64::max(b.1, w);
        b.2 += 1;
    }
    for b in &mut waits {
        if b.2 > 0 {
            b.0 /= b.2 as f64;
        }
    }
    let width = span / BUCKETS as f64;
    let mut busy = vec![0.0; BUCKETS];
    let cpus = f64::from(summary.cpus.max(1));
    for (k, &(t, n)) in summary.busy.iter().enumerate() {
        let until = summary.busy.get(k + 1).map_or(last, |b| b.0);
        // Spread [t, until) over the buckets it covers.
        let (mut a, b) = ((t - first) as f64, (until - first) as f64);
        while a < b {
            let i = ((a / width) as usize).min(BUCKETS - 1);
            let end = (((i + 1) as f64) * width).min(b).max(a);
            let piece = if end > a { end - a } else { b - a };
            busy[i] += n as f64 / cpus * piece / width;
            a += piece;
        }
    }
    Series {
        first,
        last,
        waits,
        busy,
    }
}

/// The SVG document.
pub fn svg(jobs: &[TraceJob], summary: &Summary) -> String {
    let Series {
        first,
        last,
        waits,
        busy,
    } = series(jobs, summary);
    let days = (last - first) as f64 / 86_400.0;
    let height = TOP + 2.0 * PANEL + GAP + 40.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}" font-family="sans-serif" font-size="12">"#,
        w = WIDTH + LEFT + 20.0
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let max_wait = waits.iter().map(|w| w.1).fold(0.0, f64::max).max(1.0) / 3600.0;
    let x = |i: usize| LEFT + (i as f64 + 0.5) / BUCKETS as f64 * WIDTH;
    // Panel 1: waits.
    panel(
        &mut out,
        TOP,
        &format!(
            "wait of the jobs started (h): mean, and max (faint); avg {:.2} h",
            summary.avg_wait_s / 3600.0
        ),
        max_wait,
        days,
    );
    let y1 = |v: f64| TOP + PANEL - v / max_wait * PANEL;
    let line = |pts: Vec<(f64, f64)>, style: &str| {
        let d: Vec<String> = pts.iter().map(|(a, b)| format!("{a:.1},{b:.1}")).collect();
        format!(
            r#"<polyline fill="none" {style} points="{}"/>"#,
            d.join(" ")
        )
    };
    let maxes: Vec<(f64, f64)> = (0..BUCKETS)
        .filter(|&i| waits[i].2 > 0)
        .map(|i| (x(i), y1(waits[i].1 / 3600.0)))
        .collect();
    let means: Vec<(f64, f64)> = (0..BUCKETS)
        .filter(|&i| waits[i].2 > 0)
        .map(|i| (x(i), y1(waits[i].0 / 3600.0)))
        .collect();
    let _ = writeln!(
        out,
        "{}",
        line(maxes, r##"stroke="#9ecae1" stroke-width="1""##)
    );
    let _ = writeln!(
        out,
        "{}",
        line(means, r##"stroke="#08519c" stroke-width="1.5""##)
    );
    // Panel 2: utilization.
    let top2 = TOP + PANEL + GAP;
    panel(
        &mut out,
        top2,
        &format!(
            "utilization (busy CPUs / CPUs); overall {:.3}",
            summary.utilization
        ),
        1.0,
        days,
    );
    let pts: Vec<(f64, f64)> = busy
        .iter()
        .enumerate()
        .map(|(i, u)| (x(i), top2 + PANEL - u.min(1.0) * PANEL))
        .collect();
    let _ = writeln!(
        out,
        "{}",
        line(pts, r##"stroke="#a63603" stroke-width="1.5""##)
    );
    let _ = writeln!(out, "</svg>");
    out
}

/// A panel's frame, title, y scale (0 and `ymax`) and x scale (0 and `days`).
fn panel(out: &mut String, top: f64, title: &str, ymax: f64, days: f64) {
    let _ = writeln!(
        out,
        r##"<rect x="{LEFT}" y="{top}" width="{WIDTH}" height="{PANEL}" fill="none" stroke="#444"/>"##
    );
    let _ = writeln!(
        out,
        r#"<text x="{LEFT}" y="{}">{}</text>"#,
        top - 8.0,
        escape(title)
    );
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="end">{ymax:.2}</text>"#,
        LEFT - 6.0,
        top + 10.0
    );
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="end">0</text>"#,
        LEFT - 6.0,
        top + PANEL
    );
    let _ = writeln!(
        out,
        r#"<text x="{LEFT}" y="{}">0</text><text x="{}" y="{}" text-anchor="end">{days:.1} days</text>"#,
        top + PANEL + 16.0,
        LEFT + WIDTH,
        top + PANEL + 16.0
    );
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Digest;

    #[test]
    fn worked_example() {
        let job = |submit, run| TraceJob {
            submit,
            run,
            procs: 50,
            estimate: run,
            ..TraceJob::default()
        };
        let jobs = [job(0, 400), job(0, 400)];
        let mut s = Summary::new(&jobs, &[3600, 3 * 3600], 100, Digest::new(), 1);
        s.busy = vec![(0, 50), (4 * 3600, 0)];
        let Series {
            first,
            last,
            waits,
            busy,
        } = series(&jobs, &s);
        assert_eq!((first, last), (0, 4 * 3600));
        let started: Vec<&(f64, f64, u64)> = waits.iter().filter(|w| w.2 > 0).collect();
        assert_eq!(started.len(), 2);
        assert_eq!(started[0].0, 3600.0);
        assert!(busy.iter().all(|u| (u - 0.5).abs() < 1e-9), "{busy:?}");
        let svg = svg(&jobs, &s);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<polyline").count(), 3);
    }
}
