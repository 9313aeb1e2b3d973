//! The single pool of processors of an SWF replay, as the scheduler's profile sees it,
//! and a prediction of what one FCFS or EASY pass over it starts: the replay shows
//! `sched::schedule` only the pending jobs that matter to that pass, and skips a pass
//! that provably starts nothing. `sched` still decides every start; the prediction only
//! chooses what it is shown, and is checked against its plan after every pass (a
//! disagreement falls back to a pass over the whole queue and is counted).
//!
//! Why this is exact: on one node with CPUs only, and jobs in submit order, a pass
//! first starts jobs from the head of the queue while they fit in the CPUs free now
//! (the prefix). The first job that does not fit (the head) blocks: under FCFS nothing
//! after it starts, so the pass needs only the prefix and the head. Under EASY the head
//! is reserved at the shadow time S, the first estimated end at which enough CPUs are
//! free, and X = (CPUs free at S) − (the head's CPUs) are extra. A later job then
//! starts if and only if it fits in the CPUs free now and either ends by S or fits in
//! what is left of X (the profile falls only at S). Jobs that do neither can neither
//! start nor change anything the pass decides, so the pass is shown the prefix, the
//! head and the jobs that backfill. Free CPUs only shrink during a pass, so the scan
//! stops when none is left.
//!
//! Worked example: P = 10; running: a (4 CPUs, estimated end 100), b (4 CPUs, end
//! 300); free now 2; now = 0. Queue: j1 (2 CPUs, 1000 s), j2 (6 CPUs), j3 (1 CPU,
//! 500 s), j4 (2 CPUs, 80 s). Prefix: j1 starts and leaves no CPU free, so j2 is the
//! head and the scan stops: the pass sees {j1, j2}. Had j1 asked for 1 CPU (1 left):
//! j2 is the head; at 100 the free CPUs are 1 + 4 = 5 < 6, at 300 9 ≥ 6, so S = 300
//! and X = 9 − 6 = 3; j3 fits now (1 ≤ 1) and, running past S, fits in X (1 ≤ 3):
//! it starts (free 0, X 2), and the scan stops; the pass sees {j1, j2, j3} and j4
//! stays out of it.

use model::Time;
use std::collections::BTreeMap;

/// What the scheduler's profile knows of the pool: its free CPUs now and when the
/// running jobs' CPUs come back by their time limits.
#[derive(Debug, Clone)]
pub struct Pool {
    free: i64,
    /// Estimated end (start + time limit) → CPUs released then.
    ends: BTreeMap<Time, i64>,
}

/// The pass a prediction expects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prediction {
    /// Jobs that start, in queue order.
    pub starts: Vec<usize>,
    /// The first job that does not fit now.
    pub head: Option<usize>,
    /// EASY: the head's reserved start, when the pass needed it (CPUs were left).
    pub shadow: Option<Time>,
}

impl Prediction {
    /// The jobs the pass must be shown: the starts and the head, in queue order.
    pub fn visible(&self) -> Vec<usize> {
        let mut v = self.starts.clone();
        if let Some(h) = self.head {
            v.push(h);
            v.sort_unstable();
        }
        v
    }
}

impl Pool {
    pub fn new(procs: u32) -> Pool {
        Pool {
            free: i64::from(procs),
            ends: BTreeMap::new(),
        }
    }

    pub fn free(&self) -> i64 {
        self.free
    }

    /// A job started: it holds `procs` until `estimated_end` as far as planning goes.
    pub fn start(&mut self, estimated_end: Time, procs: u32) {
        self.free -= i64::from(procs);
        *self.ends.entry(estimated_end).or_default() += i64::from(procs);
    }

    /// A job that started with this estimated end ended.
    pub fn end(&mut self, estimated_end: Time, procs: u32) {
        self.free += i64::from(procs);
        if let Some(n) = self.ends.get_mut(&estimated_end) {
            *n -= i64::from(procs);
            if *n <= 0 {
                self.ends.remove(&estimated_end);
            }
        }
    }

    /// The pass at `now` over `queue` (pending jobs in queue order); `job(k)` gives a
    /// job's CPUs and planning duration (its time limit, at least 1 s).
    pub fn predict(
        &self,
        queue: &[usize],
        job: impl Fn(usize) -> (i64, Time),
        now: Time,
        easy: bool,
    ) -> Prediction {
        let mut out = Prediction::default();
        let mut free = self.free;
        // Ends of the jobs the prefix starts, in queue order (sorted below).
        let mut prefix_ends: Vec<(Time, i64)> = Vec::new();
        let mut rest = queue.iter().enumerate();
        for (_, &k) in rest.by_ref() {
            let (procs, dur) = job(k);
            if procs <= free {
                free -= procs;
                prefix_ends.push((now.saturating_add(dur), procs));
                out.starts.push(k);
            } else {
                out.head = Some(k);
                break;
            }
        }
        let Some(head) = out.head else {
            return out;
        };
        if !easy || free <= 0 {
            return out;
        }
        // The shadow time: the first estimated end at which the head fits, counting
        // every release at that time.
        let need = job(head).0;
        prefix_ends.sort_unstable();
        let mut running = self.ends.iter().map(|(t, n)| (*t, *n)).peekable();
        let mut started = prefix_ends.iter().copied().peekable();
        let mut acc = free;
        let mut shadow = None;
        loop {
            let next = match (running.peek(), started.peek()) {
                (None, None) => break,
                (Some(a), None) => a.0,
                (None, Some(b)) => b.0,
                (Some(a), Some(b)) => a.0.min(b.0),
            };
            if shadow.is_some_and(|s| next > s) {
                break;
            }
            while running.peek().is_some_and(|e| e.0 == next) {
                acc += running.next().map_or(0, |e| e.1);
            }
            while started.peek().is_some_and(|e| e.0 == next) {
                acc += started.next().map_or(0, |e| e.1);
            }
            if shadow.is_none() && acc >= need {
                shadow = Some(next);
            }
        }
        let Some(s) = shadow else {
            // The head never fits: the pass reserves nothing; show it everything
            // that fits now (never the case on a pool that holds every job).
            for (_, &k) in rest {
                if job(k).0 <= free {
                    out.starts.push(k);
                }
            }
            return out;
        };
        out.shadow = Some(s);
        let mut extra = acc - need;
        for (_, &k) in rest {
            if free <= 0 {
                break;
            }
            let (procs, dur) = job(k);
            if procs > free {
                continue;
            }
            let past_shadow = now.saturating_add(dur) > s;
            if past_shadow && procs > extra {
                continue;
            }
            free -= procs;
            if past_shadow {
                extra -= procs;
            }
            out.starts.push(k);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example() {
        let mut pool = Pool::new(10);
        pool.start(100, 4);
        pool.start(300, 4);
        // j1..j4 are 1..4; CPUs and durations.
        let spec = |j1: i64| {
            move |k: usize| match k {
                1 => (j1, 1000),
                2 => (6, 1000),
                3 => (1, 500),
                _ => (2, 80),
            }
        };
        let p = pool.predict(&[1, 2, 3, 4], spec(2), 0, true);
        assert_eq!(p.starts, [1]);
        assert_eq!(p.head, Some(2));
        assert_eq!(p.visible(), [1, 2]);
        let p = pool.predict(&[1, 2, 3, 4], spec(1), 0, true);
        assert_eq!((p.starts.clone(), p.shadow), (vec![1, 3], Some(300)));
        assert_eq!(p.visible(), [1, 2, 3]);
        // FCFS stops at the head.
        let p = pool.predict(&[1, 2, 3, 4], spec(1), 0, false);
        assert_eq!(p.visible(), [1, 2]);
        pool.end(100, 4);
        assert_eq!(pool.free(), 6);
        let p = pool.predict(&[2, 3], spec(1), 50, true);
        assert_eq!((p.starts.clone(), p.head), (vec![2], Some(3)));
        let p = pool.predict(&[3], spec(1), 50, true);
        assert_eq!((p.starts.clone(), p.head), (vec![3], None));
    }

    #[test]
    fn backfill_by_the_shadow_or_the_extra_cpus() {
        // P = 4: one job of 2 CPUs runs until 100. Head 4 CPUs: S = 100, X = 0.
        let mut pool = Pool::new(4);
        pool.start(100, 2);
        let job = |k: usize| match k {
            0 => (4, 10),
            1 => (2, 100), // ends at S: backfills
            _ => (1, 101),
        };
        let p = pool.predict(&[0, 1, 2], job, 0, true);
        assert_eq!(p.shadow, Some(100));
        assert_eq!(p.starts, [1]);
        let p = pool.predict(&[0, 2], job, 0, true);
        assert_eq!(p.starts, Vec::<usize>::new(), "runs past S, no extra CPU");
    }
}
