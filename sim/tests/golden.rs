//! Golden replays of the KTH-SP2 trace (`../shared/traces/`, beside the repository):
//! a window of its first 2,000 jobs with the figures and digests pinned, decisions
//! compared one by one with an independent implementation of the reference rules of
//! `shared/research/performance.md` §1b, and the full trace's EASY figures against
//! the published reference (avg wait 6,859 s, bsld 91.04).
//!
//! The trace is required: without it these tests fail and say where it was looked for.

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
        // Skipping passes that start nothing changes nothing.
        let every = replay::run(jobs, 100, policy, true, None);
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
fn full_kth_easy_reproduces_the_reference() {
    let trace = kth();
    assert_eq!(trace.jobs.len(), 28_475);
    let s = replay::run(&trace.jobs, 100, SimPolicy::Easy, false, None);
    assert_eq!(format!("{:.0}", s.avg_wait_s), "6859", "avg wait");
    assert_eq!(format!("{:.2}", s.avg_bsld), "91.04", "avg bsld");
    assert_eq!(format!("{:.3}", s.utilization), "0.701", "utilization");
    assert_eq!(
        format!("{:.1}", s.max_wait_s / 3600.0),
        "72.8",
        "max wait (h)"
    );
}
