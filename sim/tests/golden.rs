//! Golden replays of the traces in `../shared/traces/` (beside the repository):
//! - KTH-SP2: a window of its first 2,000 jobs with the figures and digests pinned,
//!   decisions compared one by one with an independent implementation of the
//!   reference rules of `shared/research/performance.md` §1b, and the full trace's
//!   EASY and FCFS figures against the reference (avg wait 6,859 s, bsld 91.04; FCFS
//!   bsld 7,522.4);
//! - RICC: a window where the predicted passes (`sim::pool`) are compared with full
//!   passes at every event time, and (in optimized builds) the full trace's EASY
//!   figures against the reference (avg wait 36,531 s, bsld 548.98);
//! - Alibaba GPU pods: a window with figures, GPU fragmentation and digest pinned.
//!
//! The traces are required: without them these tests fail and say where they were
//! looked for.

use sim::swf::{self, TraceJob};
use sim::{SimPolicy, replay};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::PathBuf;

fn kth() -> swf::Trace {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/traces/KTH-SP2-1996-2.1-cln.swf");
    assert!(
        path.exists(),
        "the KTH-SP2 trace is missing: expected it at {} (shared/traces/ beside the repository)",
        path.display()
    );
    swf::read(&path, None).expect("the KTH-SP2 trace parses")
}

/// The reference rules, written independently of `sched`: one pool of P processors;
/// at each time, ends, then submits, then one pass. FCFS starts from the head while
/// jobs fit; EASY then computes the head's shadow time and extra processors and
/// backfills jobs that fit now and end by the shadow or fit in the extra processors.
struct Reference<'a> {
    jobs: &'a [TraceJob],
    start: Vec<i64>,
    ends: BinaryHeap<Reverse<(i64, usize)>>,
    running: Vec<usize>,
    free: i64,
}

impl Reference<'_> {
    fn go(&mut self, k: usize, now: i64) {
        self.start[k] = now;
        self.free -= i64::from(self.jobs[k].procs);
        self.running.push(k);
        self.ends.push(Reverse((now + self.jobs[k].run, k)));
    }

    fn est_end(&self, k: usize) -> i64 {
        self.start[k] + self.jobs[k].estimate
    }
}

fn reference(jobs: &[TraceJob], p: i64, easy: bool) -> Vec<i64> {
    let mut r = Reference {
        jobs,
        start: vec![-1; jobs.len()],
        ends: BinaryHeap::new(),
        running: Vec::new(),
        free: p,
    };
    let mut queue: Vec<usize> = Vec::new();
    let mut next = 0;
    loop {
        let now = match (
            jobs.get(next).map(|j| j.submit),
            r.ends.peek().map(|e| e.0.0),
        ) {
            (None, None) => break,
            (a, b) => a.unwrap_or(i64::MAX).min(b.unwrap_or(i64::MAX)),
        };
        while r.ends.peek().is_some_and(|e| e.0.0 == now) {
            let Reverse((_, k)) = r.ends.pop().unwrap();
            r.free += i64::from(jobs[k].procs);
            r.running.retain(|x| *x != k);
        }
        while next < jobs.len() && jobs[next].submit == now {
            queue.push(next);
            next += 1;
        }
        while let Some(&k) = queue.first() {
            if i64::from(jobs[k].procs) > r.free {
                break;
            }
            queue.remove(0);
            r.go(k, now);
        }
        if !easy || queue.is_empty() {
            continue;
        }
        let need = i64::from(jobs[queue[0]].procs);
        let mut by_end = r.running.clone();
        by_end.sort_by_key(|&k| r.est_end(k));
        let mut f = r.free;
        let mut shadow = i64::MAX;
        for &k in &by_end {
            f += i64::from(jobs[k].procs);
            if f >= need {
                shadow = r.est_end(k);
                break;
            }
        }
        let mut extra = r.free
            + r.running
                .iter()
                .filter(|&&k| r.est_end(k) <= shadow)
                .map(|&k| i64::from(jobs[k].procs))
                .sum::<i64>()
            - need;
        let mut keep = vec![queue[0]];
        for &k in &queue[1..] {
            let procs = i64::from(jobs[k].procs);
            if procs <= r.free && now + jobs[k].estimate <= shadow {
                r.go(k, now);
            } else if procs <= r.free && procs <= extra {
                r.go(k, now);
                extra -= procs;
            } else {
                keep.push(k);
            }
        }
        queue = keep;
    }
    r.start
}

#[test]
fn kth_window_matches_the_reference_rules_job_by_job() {
    let trace = kth();
    let jobs = &trace.jobs[..2000];
    for (policy, easy) in [(SimPolicy::Easy, true), (SimPolicy::Fcfs, false)] {
        let summary = replay::run(jobs, 100, policy, false, None);
        let expected = reference(jobs, 100, easy);
        let differ: Vec<usize> = (0..jobs.len())
            .filter(|&i| summary.starts[i] != expected[i])
            .collect();
        assert!(
            differ.is_empty(),
            "{policy:?}: {} jobs start at other times than the reference, first job {} \
             (sched {}, reference {})",
            differ.len(),
            differ[0],
            summary.starts[differ[0]],
            expected[differ[0]]
        );
        assert_eq!(summary.fallbacks, 0, "{policy:?}: a prediction disagreed");
        // Skipping passes that start nothing changes nothing; every state on the way
        // keeps the invariants.
        let checked = replay::Machine {
            check: true,
            ..replay::Machine::pool(100)
        };
        let every = replay::replay(jobs, checked, policy, true, None);
        assert_eq!(every.digest, summary.digest, "{policy:?}");
        assert!(every.passes >= summary.passes);
    }
}

#[test]
fn kth_window_figures_are_pinned() {
    let trace = kth();
    let jobs = &trace.jobs[..2000];
    let easy = replay::run(jobs, 100, SimPolicy::Easy, false, None);
    let fcfs = replay::run(jobs, 100, SimPolicy::Fcfs, false, None);
    let conservative = replay::run(jobs, 100, SimPolicy::Conservative, false, None);
    let line = |s: &sim::Summary| {
        format!(
            "jobs {} wait {:.2} max {:.0} bsld {:.4} util {:.4} makespan {:.0} digest {}",
            s.jobs, s.avg_wait_s, s.max_wait_s, s.avg_bsld, s.utilization, s.makespan_s, s.digest
        )
    };
    assert_eq!(
        line(&easy),
        "jobs 2000 wait 5810.27 max 168085 bsld 88.4941 util 0.6171 makespan 2069601 \
         digest 8bdae3033e0dd164"
    );
    assert_eq!(
        line(&fcfs),
        "jobs 2000 wait 37917.68 max 141277 bsld 856.2076 util 0.6040 makespan 2114636 \
         digest f8152c68bede40ec"
    );
    assert_eq!(
        line(&conservative),
        "jobs 2000 wait 5209.93 max 109019 bsld 71.7676 util 0.6171 makespan 2069601 \
         digest 059f868473e4cd32"
    );
}

#[test]
fn full_kth_easy_and_fcfs_reproduce_the_reference() {
    let trace = kth();
    assert_eq!(trace.jobs.len(), 28_475);
    let s = replay::run(&trace.jobs, 100, SimPolicy::Easy, false, None);
    assert_eq!(format!("{:.1}", s.avg_wait_s), "6858.5", "avg wait");
    assert_eq!(format!("{:.2}", s.avg_bsld), "91.04", "avg bsld");
    assert_eq!(format!("{:.3}", s.utilization), "0.701", "utilization");
    assert_eq!(
        format!("{:.1}", s.max_wait_s / 3600.0),
        "72.8",
        "max wait (h)"
    );
    // FCFS: avg wait 390,083 s, bsld 7,522.4 (§1b).
    let s = replay::run(&trace.jobs, 100, SimPolicy::Fcfs, false, None);
    assert_eq!(s.fallbacks, 0);
    assert_eq!(format!("{:.1}", s.avg_wait_s), "390083.0", "fcfs avg wait");
    assert_eq!(format!("{:.2}", s.avg_bsld), "7522.37", "fcfs avg bsld");
    assert_eq!(
        format!("{:.1}", s.max_wait_s / 3600.0),
        "282.9",
        "fcfs max wait (h)"
    );
}

fn ricc_path() -> PathBuf {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces/RICC-2010-2.swf.gz");
    assert!(
        path.exists(),
        "the RICC trace is missing: expected it at {} (shared/traces/ beside the repository)",
        path.display()
    );
    path
}

#[cfg(not(debug_assertions))]
fn ricc() -> swf::Trace {
    swf::read(&ricc_path(), None).expect("the RICC trace parses")
}

/// The predicted passes (`sim::pool`: skipped passes, passes shown only the jobs that
/// matter, running jobs folded by end) start exactly the jobs that full passes over
/// the whole queue at every event time start, at the same times, on a window of RICC
/// deep enough for a queue of thousands.
#[test]
fn ricc_window_predicted_passes_equal_full_passes() {
    // The first lines of the file (the header and some 1,500 jobs): parsing all of
    // it is slow in a debug build.
    let mut text = String::new();
    let reader = std::io::BufReader::new(flate2::read::GzDecoder::new(
        std::fs::File::open(ricc_path()).expect("the RICC trace opens"),
    ));
    for line in std::io::BufRead::lines(reader).take(1600) {
        text.push_str(&line.expect("the RICC trace reads"));
        text.push('\n');
    }
    // A quarter of the machine, so that the queue runs deep with few running jobs.
    let trace = swf::parse(text.as_bytes(), "RICC", Some(2048)).expect("the window parses");
    let jobs = &trace.jobs[..1500];
    for policy in [SimPolicy::Easy, SimPolicy::Fcfs] {
        let fast = replay::run(jobs, 2048, policy, false, None);
        let full = replay::run(jobs, 2048, policy, true, None);
        // The window backfills: some job starts before one submitted earlier.
        let backfilled = (1..jobs.len()).any(|i| (0..i).any(|e| fast.starts[e] > fast.starts[i]));
        assert_eq!(backfilled, policy == SimPolicy::Easy, "{policy:?}");
        assert_eq!(fast.fallbacks, 0, "{policy:?}: a prediction disagreed");
        assert_eq!(fast.starts, full.starts, "{policy:?}");
        assert_eq!(fast.digest, full.digest, "{policy:?}");
        assert!(fast.passes < full.passes, "{policy:?}");
    }
}

/// The Alibaba GPU pod trace (`sim::alibaba`) on its GPU nodes: the first 1,000 pods,
/// figures, GPU fragmentation and digest pinned. The trace is light (at most 71 GPUs
/// busy at once as recorded), so nothing waits.
#[test]
fn alibaba_window_figures_are_pinned() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces");
    let pods = dir.join("alibaba-gpu-v2023-openb_pod_list_default.csv");
    assert!(
        pods.exists(),
        "the Alibaba trace is missing: expected it at {}",
        pods.display()
    );
    let nodes = sim::alibaba::node_list_beside(&pods).unwrap();
    let trace = sim::alibaba::read(&pods, &nodes).expect("the Alibaba trace parses");
    assert_eq!(trace.jobs.len(), 7255);
    assert_eq!((trace.dropped, trace.shared_gpu), (897, 2573));
    assert_eq!(trace.machine.state.nodes.len(), 1213);
    assert_eq!((trace.machine.cpus, trace.gpus), (107_018, 6212));
    let jobs = &trace.jobs[..1000];
    let machine = replay::Machine {
        check: true,
        ..trace.machine
    };
    let s = replay::replay(jobs, machine, SimPolicy::Easy, false, None);
    let line = format!(
        "jobs {} wait {:.2} max {:.0} bsld {:.4} util {:.6} makespan {:.0} frag {:.6} max {:.6} digest {}",
        s.jobs,
        s.avg_wait_s,
        s.max_wait_s,
        s.avg_bsld,
        s.utilization,
        s.makespan_s,
        s.gpu_fragmentation.unwrap(),
        s.gpu_fragmentation_max.unwrap(),
        s.digest
    );
    assert_eq!(
        line,
        "jobs 1000 wait 0.00 max 0 bsld 1.0000 util 0.001463 makespan 12902960 \
         frag 0.000155 max 0.000972 digest c9d95172ad955a4f"
    );
}

/// The full RICC trace under EASY reproduces the reference (§1b: avg wait 36,531 s,
/// bsld 548.98, utilization 0.872, max wait 135.6 h) to the printed digit. About 30 s
/// in a release build; a debug build would take some ten minutes, so the test exists
/// only in optimized builds: `cargo test --release -p sim`.
#[cfg(not(debug_assertions))]
#[test]
fn full_ricc_easy_reproduces_the_reference() {
    let trace = ricc();
    assert_eq!(trace.jobs.len(), 447_794);
    let s = replay::run(&trace.jobs, 8192, SimPolicy::Easy, false, None);
    assert_eq!(s.fallbacks, 0);
    assert_eq!(format!("{:.1}", s.avg_wait_s), "36530.7", "avg wait");
    assert_eq!(format!("{:.2}", s.avg_bsld), "548.98", "avg bsld");
    assert_eq!(format!("{:.3}", s.utilization), "0.872", "utilization");
    assert_eq!(
        format!("{:.2}", s.max_wait_s / 3600.0),
        "135.58",
        "max wait (h)"
    );
    assert_eq!(s.digest, "e0ad2e804a36a589");
}
