//! Standard Workload Format traces (the Parallel Workloads Archive's `.swf`, plain or
//! gzipped), read into the job set a replay uses.
//!
//! The job set follows the rules of the reference replays
//! (`shared/research/performance.md` §1b):
//! - drop jobs with processors ≤ 0 or run time < 0;
//! - processors = field 5 (allocated), or field 8 (requested) when field 5 is
//!   missing, capped at the machine size;
//! - estimate = field 9 (requested time) when > 0, else the run time; then at least
//!   the run time;
//! - jobs sorted by submit time, ties kept in file order.
//!
//! Example: the line `7 100 5 60 4 -1 -1 4 300 -1 1 12 3 -1 1 1 -1 -1` is job 7,
//! submitted at 100, running 60 s on 4 processors with a 300 s estimate, user 12.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum SwfError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Parse {
        path: String,
        line: usize,
        message: String,
    },
    #[error("{path}: no machine size (no MaxProcs/MaxNodes header); pass --procs")]
    NoSize { path: String },
}

/// One job of the replay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceJob {
    /// The trace's job number (field 1).
    pub number: u64,
    pub submit: i64,
    /// Actual run time, seconds.
    pub run: i64,
    pub procs: u32,
    /// The user's estimate (requested time), seconds, at least `run`.
    pub estimate: i64,
    pub user: i64,
    pub group: i64,
    pub queue: i64,
    /// Memory on its node, MiB (0: none asked; SWF traces).
    pub mem_mb: u64,
    /// Whole GPUs on its node (0: none; SWF traces).
    pub gpus: u32,
}

#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// `; MaxProcs:` (or `; MaxNodes:`) from the header.
    pub max_procs: Option<u32>,
    pub jobs: Vec<TraceJob>,
    /// Records dropped by the job-set rules.
    pub dropped: usize,
}

/// Reads a trace file, gunzipping it when its name ends in `.gz`. `procs` overrides
/// the machine size of the header (and caps job sizes).
pub fn read(path: &Path, procs: Option<u32>) -> Result<Trace, SwfError> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| SwfError::Io {
        path: name.clone(),
        source,
    })?;
    let reader: Box<dyn Read> = if name.ends_with(".gz") {
        Box::new(flate2::read::GzDecoder::new(file))
    } else {
        Box::new(file)
    };
    parse(BufReader::with_capacity(1 << 16, reader), &name, procs)
}

/// Parses trace text; `name` only labels errors.
pub fn parse(reader: impl BufRead, name: &str, procs: Option<u32>) -> Result<Trace, SwfError> {
    let mut trace = Trace::default();
    let mut max_nodes = None;
    let mut raw: Vec<(TraceJob, i64)> = Vec::new();
    for (n, line) in reader.lines().enumerate() {
        let line = line.map_err(|source| SwfError::Io {
            path: name.to_string(),
            source,
        })?;
        let line = line.trim();
        if let Some(header) = line.strip_prefix(';') {
            if let Some((key, value)) = header.split_once(':') {
                let value = value.trim().parse::<u32>().ok();
                match key.trim() {
                    "MaxProcs" => trace.max_procs = value,
                    "MaxNodes" => max_nodes = value,
                    _ => {}
                }
            }
            continue;
        }
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 18 {
            return Err(SwfError::Parse {
                path: name.to_string(),
                line: n + 1,
                message: format!("expected 18 fields, found {}", fields.len()),
            });
        }
        let field = |i: usize| -> Result<i64, SwfError> {
            let text = fields[i - 1];
            text.parse::<i64>()
                .or_else(|_| text.parse::<f64>().map(|f| f as i64))
                .map_err(|_| SwfError::Parse {
                    path: name.to_string(),
                    line: n + 1,
                    message: format!("field {i} is not a number: `{text}`"),
                })
        };
        let run = field(4)?;
        let mut p = field(5)?;
        if p <= 0 {
            p = field(8)?;
        }
        if p <= 0 || run < 0 {
            trace.dropped += 1;
            continue;
        }
        let requested = field(9)?;
        let estimate = if requested > 0 { requested } else { run }.max(run);
        raw.push((
            TraceJob {
                number: field(1)?.max(0) as u64,
                submit: field(2)?,
                run,
                procs: p.min(i64::from(u32::MAX)) as u32,
                estimate,
                user: field(12)?,
                group: field(13)?,
                queue: field(15)?,
                ..TraceJob::default()
            },
            p,
        ));
    }
    if trace.max_procs.is_none() {
        trace.max_procs = max_nodes;
    }
    if let Some(p) = procs {
        trace.max_procs = Some(p);
    }
    let Some(cap) = trace.max_procs else {
        return Err(SwfError::NoSize {
            path: name.to_string(),
        });
    };
    trace.jobs = raw
        .into_iter()
        .map(|(mut j, _)| {
            j.procs = j.procs.min(cap);
            j
        })
        .collect();
    // Stable: equal submit times keep the file's order.
    trace.jobs.sort_by_key(|j| j.submit);
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "; MaxProcs: 8\n\
        ; comment\n\
        1 100 5 60 4 -1 -1 4 300 -1 1 12 3 -1 1 1 -1 -1\n\
        2 50 0 10 -1 -1 -1 16 -1 -1 1 13 3 -1 1 1 -1 -1\n\
        3 50 0 -1 2 -1 -1 2 100 -1 5 13 3 -1 1 1 -1 -1\n\
        4 70 0 90 -1 -1 -1 -1 60 -1 5 13 3 -1 1 1 -1 -1\n";

    #[test]
    fn job_set_rules() {
        let t = parse(TEXT.as_bytes(), "t.swf", None).unwrap();
        assert_eq!(t.max_procs, Some(8));
        assert_eq!(t.dropped, 2, "negative run time; no processors");
        let numbers: Vec<u64> = t.jobs.iter().map(|j| j.number).collect();
        assert_eq!(numbers, vec![2, 1], "sorted by submit time");
        assert_eq!(t.jobs[0].procs, 8, "requested processors, capped");
        assert_eq!(t.jobs[0].estimate, 10, "no estimate: the run time");
        assert_eq!(t.jobs[1].estimate, 300);
        let t = parse(TEXT.as_bytes(), "t.swf", Some(2)).unwrap();
        assert_eq!(t.jobs[1].procs, 2);
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("; MaxProcs: 8\n1 2 3\n".as_bytes(), "t.swf", None).unwrap_err();
        assert_eq!(e.to_string(), "t.swf:2: expected 18 fields, found 3");
        let e = parse(
            "1 0 0 1 1 -1 -1 1 1 -1 1 1 1 -1 1 1 -1 -1\n".as_bytes(),
            "t.swf",
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("--procs"), "{e}");
    }
}
