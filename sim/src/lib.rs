//! `drover-sim`: replays workload traces through Drover's real scheduler (`model` +
//! `sched`) in virtual time, and benchmarks single scheduling passes.
//!
//! - `alibaba`: the Alibaba GPU pod trace (CSV) into a GPU machine and a job set;
//! - `swf`: Standard Workload Format traces, plain or gzipped, into a job set;
//! - `replay`: the event loop (ends, submits, one `sched::schedule` pass per event
//!   time);
//! - `pool`: the single processor pool of an SWF replay and a prediction of what a
//!   FCFS or EASY pass starts, so that passes see only the jobs that matter;
//! - `metrics`: waits, bounded slowdown, utilization, makespan and the event digest;
//! - `plot`: `--plot FILE.svg`, waits and utilization over time;
//! - `bench`: synthetic clusters and queues, milliseconds per full pass.
//!
//! Example: `drover-sim ../shared/traces/KTH-SP2-1996-2.1-cln.swf --policy easy` prints
//! the figures of the EASY replay of KTH-SP2 on its 100 processors.

pub mod alibaba;
pub mod bench;
pub mod metrics;
pub mod plot;
pub mod pool;
pub mod replay;
pub mod swf;

pub use metrics::Summary;
pub use replay::SimPolicy;
