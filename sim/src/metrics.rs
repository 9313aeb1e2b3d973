//! What a replay reports: waits, bounded slowdown, utilization, makespan, and a
//! digest of the start events that changes whenever any decision changes.
//!
//! - wait = start − submit; bounded slowdown = max(1, (wait + run) / max(run, τ)) with
//!   τ = 10 s;
//! - utilization = Σ run × procs / (P × (last end − first submit));
//! - makespan = last end − first submit;
//! - digest: 64-bit FNV-1a over every start event (job id, time, nodes and CPUs) in
//!   the order the replay applied them, printed as 16 hex digits.
//!
//! Example: P=4; job 1 (4 procs, run 10) submitted at 0, started at 0; job 2 (1 proc,
//! run 5) submitted at 0, started at 10: waits 0 and 10 (average 5), slowdowns 1 and
//! (10+5)/10 = 1.5, utilization (40+5)/(4×15) = 0.75, makespan 15.

use crate::swf::TraceJob;
use model::{Allocation, JobId, Time};
use serde::Serialize;

/// The bound τ of the bounded slowdown, seconds.
pub const TAU: f64 = 10.0;

/// FNV-1a, 64 bits, over the start events.
#[derive(Debug, Clone, Copy)]
pub struct Digest(u64);

impl Default for Digest {
    fn default() -> Self {
        Digest::new()
    }
}

impl Digest {
    pub fn new() -> Digest {
        Digest(0xcbf2_9ce4_8422_2325)
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// One start event.
    pub fn start(&mut self, job: JobId, time: Time, alloc: &Allocation) {
        self.bytes(&job.to_le_bytes());
        self.bytes(&time.to_le_bytes());
        for n in &alloc.nodes {
            self.bytes(n.node.as_bytes());
            self.bytes(&n.cpus.to_le_bytes());
        }
    }

    pub fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

/// The figures of one replay; `--json` prints exactly these keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub jobs: usize,
    pub avg_wait_s: f64,
    pub max_wait_s: f64,
    pub avg_bsld: f64,
    pub utilization: f64,
    pub makespan_s: f64,
    pub digest: String,
    /// GPU machines: the time average of the GPU fragmentation index
    /// (`sched::fragmentation`) from the first event to the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_fragmentation: Option<f64>,
    /// Its maximum after any event time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_fragmentation_max: Option<f64>,
    /// Its value at the end (every job ended: 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_fragmentation_final: Option<f64>,
    /// Scheduling passes run (not printed in JSON).
    #[serde(skip)]
    pub passes: u64,
    /// Predicted passes whose plan differed from the prediction and were run again
    /// over the whole queue (should be none).
    #[serde(skip)]
    pub fallbacks: u64,
    /// Busy CPUs over time: (time, busy CPUs from then on), at every change.
    #[serde(skip)]
    pub busy: Vec<(Time, i64)>,
    /// The machine's CPUs.
    #[serde(skip)]
    pub cpus: u32,
    /// Jobs that never started (should be none).
    #[serde(skip)]
    pub never_started: usize,
    /// Each job's start time (-1: never started), in job-set order.
    #[serde(skip)]
    pub starts: Vec<Time>,
}

impl Summary {
    /// `starts[i]` is job i's start time, or -1 if it never started.
    pub fn new(
        jobs: &[TraceJob],
        starts: &[Time],
        procs: u32,
        digest: Digest,
        passes: u64,
    ) -> Summary {
        let mut total_wait = 0.0;
        let mut max_wait: f64 = 0.0;
        let mut total_bsld = 0.0;
        let mut work = 0.0;
        let mut last_end = Time::MIN;
        let mut never_started = 0;
        let first_submit = jobs.iter().map(|j| j.submit).min().unwrap_or(0);
        for (j, &start) in jobs.iter().zip(starts) {
            if start < 0 {
                never_started += 1;
                continue;
            }
            let wait = (start - j.submit) as f64;
            let run = j.run as f64;
            total_wait += wait;
            max_wait = max_wait.max(wait);
            total_bsld += ((wait + run) / run.max(TAU)).max(1.0);
            work += run * f64::from(j.procs);
            last_end = last_end.max(start + j.run);
        }
        let n = jobs.len() - never_started;
        let makespan = if n == 0 {
            0.0
        } else {
            (last_end - first_submit) as f64
        };
        let avg = |x: f64| if n == 0 { 0.0 } else { x / n as f64 };
        Summary {
            jobs: jobs.len(),
            avg_wait_s: avg(total_wait),
            max_wait_s: max_wait,
            avg_bsld: avg(total_bsld),
            utilization: if makespan > 0.0 {
                work / (f64::from(procs) * makespan)
            } else {
                0.0
            },
            makespan_s: makespan,
            digest: digest.hex(),
            gpu_fragmentation: None,
            gpu_fragmentation_max: None,
            gpu_fragmentation_final: None,
            passes,
            fallbacks: 0,
            busy: Vec::new(),
            cpus: procs,
            never_started,
            starts: starts.to_vec(),
        }
    }

    /// Records the GPU fragmentation index: (time average, maximum, final).
    pub fn set_fragmentation(&mut self, (avg, max, last): (f64, f64, f64)) {
        self.gpu_fragmentation = Some(avg);
        self.gpu_fragmentation_max = Some(max);
        self.gpu_fragmentation_final = Some(last);
    }

    /// The human-readable report.
    pub fn render(&self) -> String {
        let hours = |s: f64| s / 3600.0;
        let mut out = format!(
            "jobs          {}\n\
             avg wait      {:.1} s ({:.2} h)\n\
             max wait      {:.0} s ({:.2} h)\n\
             avg bsld      {:.2} (tau = {TAU} s)\n\
             utilization   {:.3}\n\
             makespan      {:.0} s ({:.2} days)\n\
             digest        {}\n",
            self.jobs,
            self.avg_wait_s,
            hours(self.avg_wait_s),
            self.max_wait_s,
            hours(self.max_wait_s),
            self.avg_bsld,
            self.utilization,
            self.makespan_s,
            self.makespan_s / 86_400.0,
            self.digest,
        );
        if let (Some(avg), Some(max), Some(last)) = (
            self.gpu_fragmentation,
            self.gpu_fragmentation_max,
            self.gpu_fragmentation_final,
        ) {
            out.push_str(&format!(
                "gpu frag      {avg:.5} (time average; max {max:.5}, final {last:.5})\n"
            ));
        }
        if self.never_started > 0 {
            out.push_str(&format!("never started {}\n", self.never_started));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example() {
        let job = |run, procs| TraceJob {
            number: 0,
            submit: 0,
            run,
            procs,
            estimate: run,
            user: 1,
            group: 1,
            queue: 1,
            ..TraceJob::default()
        };
        let s = Summary::new(&[job(10, 4), job(5, 1)], &[0, 10], 4, Digest::new(), 2);
        assert_eq!(s.avg_wait_s, 5.0);
        assert_eq!(s.max_wait_s, 10.0);
        assert_eq!(s.avg_bsld, 1.25);
        assert_eq!(s.utilization, 0.75);
        assert_eq!(s.makespan_s, 15.0);
        let json = serde_json::to_value(&s).unwrap();
        let mut keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "avg_bsld",
                "avg_wait_s",
                "digest",
                "jobs",
                "makespan_s",
                "max_wait_s",
                "utilization"
            ]
        );
    }

    #[test]
    fn digest_is_fnv1a() {
        let mut d = Digest::new();
        d.bytes(b"a");
        assert_eq!(d.hex(), "af63dc4c8601ec8c");
    }
}
