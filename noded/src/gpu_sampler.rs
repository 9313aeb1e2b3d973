//! Measures what jobs do with their GPUs, not only what they hold: every
//! `[node_daemon] gpu_sample_interval_s` the node daemon asks NVML for the utilization
//! and the memory in use of each GPU device a job of this node holds whole (a plain
//! GPU, or a MIG instance where NVML answers for it; a GPU shared out as shards or MPS
//! is not one job's to measure), and adds the sample to the job's figures
//! (`model::gpu_use::GpuUse`). Heartbeats carry the figures to the controller, which
//! applies the QOS's GPU idle policy; the job's end report carries the final ones,
//! kept with its batch step for `sacct` and `sreport`.
//!
//! Example: job 12 holds GPUs 0 and 1 and the interval is 30 s; at a tick GPU 0 is 80%
//! busy and GPU 1 idle: the job gains 60 000 sampled and 24 000 busy GPU-ms, and its
//! idle time starts over. Figures are kept in memory: a restart of the node daemon
//! starts a running job's over.

use crate::jobs::Jobs;
use model::gpu_use::DeviceSample;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Samples one GPU device, named by its UUID.
pub trait DeviceSampler: Send + Sync {
    /// `None`: the device is gone or does not say (a MIG instance's utilization).
    fn sample(&self, uuid: &str) -> Option<DeviceSample>;
}

/// Samples the GPUs of this node's jobs every `every`, for as long as the daemon runs.
pub async fn run(jobs: Arc<Jobs>, sampler: Arc<dyn DeviceSampler>, every: Duration) {
    let mut last = Instant::now();
    loop {
        tokio::time::sleep(every).await;
        let now = Instant::now();
        let period_ms = now.duration_since(last).as_millis() as u64;
        last = now;
        sample_once(&jobs, sampler.as_ref(), period_ms);
    }
}

/// One round: each job's devices sampled and added to its figures.
pub fn sample_once(jobs: &Jobs, sampler: &dyn DeviceSampler, period_ms: u64) {
    for (job_id, uuids) in jobs.gpu_jobs() {
        let samples: Vec<DeviceSample> = uuids.iter().filter_map(|u| sampler.sample(u)).collect();
        jobs.add_gpu_sample(job_id, &samples, period_ms);
    }
}
