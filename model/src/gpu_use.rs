//! GPU use measured, not only allocated: what a job's GPUs did while it held them, as
//! the node daemon samples them through NVML, and the QOS policy for jobs that hold
//! GPUs idle.
//!
//! Worked example: a job holds GPUs 2 and 3; the node samples every 30 s. At the first
//! sample GPU 2 is 100% busy and GPU 3 0%, with 20 and 2 GiB in use; at the second both
//! are 0%, with 1 GiB each. The job then has 2 × 60 s = 120 GPU-seconds sampled, of
//! which 30 were busy (100% of 30 s on GPU 2), at most 22 GiB of GPU memory in use at
//! once, and its GPUs have all been idle for the last 30 s. With a QOS
//! `gpu_idle_limit = "10:00"`, `gpu_idle_action = "requeue"` and
//! `gpu_idle_grace = "5:00"`, the job is flagged (and its user told) once every GPU of
//! it has been idle for 10 minutes, and requeued if they stay idle 5 minutes more.

use crate::units::{self, UnitError};
use serde::{Deserialize, Serialize};

/// What one GPU device was doing at one sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeviceSample {
    /// NVML's GPU utilization: the percentage of the last sample period in which a
    /// kernel ran (0-100).
    pub utilization_percent: u32,
    /// Device memory in use, bytes.
    pub memory_used_bytes: u64,
}

/// A job's GPU use so far on one node (or, summed, on all its nodes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GpuUse {
    /// GPU-milliseconds sampled: each sample's period times the GPUs it measured.
    pub sampled_gpu_ms: u64,
    /// GPU-milliseconds busy: each sample's period times each GPU's utilization.
    pub busy_gpu_ms: u64,
    /// The most device memory the job's GPUs had in use at one sample, bytes.
    pub max_memory_bytes: u64,
    /// For how long every GPU of the job has been idle (0% utilization), up to the
    /// last sample; 0 once one was busy.
    pub idle_ms: u64,
}

impl GpuUse {
    /// Adds one sample of the job's GPUs, taken `period_ms` after the one before (or
    /// after the job started). No devices measured: nothing changes.
    pub fn add_sample(&mut self, devices: &[DeviceSample], period_ms: u64) {
        if devices.is_empty() {
            return;
        }
        self.sampled_gpu_ms += period_ms * devices.len() as u64;
        self.busy_gpu_ms += devices
            .iter()
            .map(|d| period_ms * u64::from(d.utilization_percent.min(100)) / 100)
            .sum::<u64>();
        let memory = devices.iter().map(|d| d.memory_used_bytes).sum::<u64>();
        self.max_memory_bytes = self.max_memory_bytes.max(memory);
        if devices.iter().all(|d| d.utilization_percent == 0) {
            self.idle_ms += period_ms;
        } else {
            self.idle_ms = 0;
        }
    }

    /// The use of a job on several nodes: sampled and busy time add up, memory peaks
    /// add up (each node's peak: an upper bound), and the job is idle for as long as
    /// its least idle node.
    pub fn merge(&self, other: &GpuUse) -> GpuUse {
        GpuUse {
            sampled_gpu_ms: self.sampled_gpu_ms + other.sampled_gpu_ms,
            busy_gpu_ms: self.busy_gpu_ms + other.busy_gpu_ms,
            max_memory_bytes: self.max_memory_bytes + other.max_memory_bytes,
            idle_ms: self.idle_ms.min(other.idle_ms),
        }
    }

    /// The average utilization of the sampled GPU time, percent (Slurm's
    /// `gres/gpuutil`); 0 when nothing was sampled.
    pub fn utilization_percent(&self) -> u64 {
        (self.busy_gpu_ms * 100)
            .checked_div(self.sampled_gpu_ms)
            .unwrap_or(0)
    }

    /// Busy GPU-seconds: the used GPU time that `sacct` and `sreport` report beside
    /// the allocated GPU time.
    pub fn busy_gpu_secs(&self) -> u64 {
        self.busy_gpu_ms / 1000
    }
}

/// What becomes of a job whose GPUs stay idle past its QOS's limit and grace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum GpuIdleAction {
    /// Flag the job and tell its user; nothing more.
    #[default]
    Warn,
    /// Flag it, then requeue it after the grace time.
    Requeue,
    /// Flag it, then cancel it after the grace time.
    Cancel,
}

impl GpuIdleAction {
    pub const WORDS: [&'static str; 3] = ["warn", "requeue", "cancel"];

    /// The action a word names, in any case; unknown words are refused.
    pub fn parse(word: &str) -> Option<GpuIdleAction> {
        match word.to_ascii_lowercase().as_str() {
            "warn" => Some(GpuIdleAction::Warn),
            "requeue" => Some(GpuIdleAction::Requeue),
            "cancel" => Some(GpuIdleAction::Cancel),
            _ => None,
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            GpuIdleAction::Warn => "warn",
            GpuIdleAction::Requeue => "requeue",
            GpuIdleAction::Cancel => "cancel",
        }
    }
}

/// A QOS's rule for jobs that hold GPUs idle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GpuIdlePolicy {
    /// How long every GPU of a job may stay idle before the job is flagged, seconds;
    /// `None`: never flagged.
    pub limit_s: Option<u32>,
    pub action: GpuIdleAction,
    /// How much longer, after the flag, before the action, seconds.
    pub grace_s: u32,
}

/// What the policy says to do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuIdleVerdict {
    /// Flag the job and tell its user.
    Flag,
    /// Requeue or cancel it.
    Act(GpuIdleAction),
}

impl GpuIdlePolicy {
    /// The next thing to do for a job whose GPUs have been idle for `idle_ms`, and
    /// which was flagged already or not. A warning policy only flags.
    pub fn verdict(&self, idle_ms: u64, flagged: bool) -> Option<GpuIdleVerdict> {
        let limit_ms = u64::from(self.limit_s?) * 1000;
        if idle_ms < limit_ms {
            return None;
        }
        if !flagged {
            return Some(GpuIdleVerdict::Flag);
        }
        let act = self.action != GpuIdleAction::Warn
            && idle_ms >= limit_ms + u64::from(self.grace_s) * 1000;
        act.then_some(GpuIdleVerdict::Act(self.action))
    }

    /// Reads the policy's three settings as the config and `sacctmgr` give them:
    /// Slurm time syntax for the limit (`-1`, `unlimited` or empty: none) and grace
    /// (empty: 0), a word for the action (empty: warn).
    pub fn parse(limit: &str, action: &str, grace: &str) -> Result<GpuIdlePolicy, GpuIdleError> {
        Ok(GpuIdlePolicy {
            limit_s: parse_limit(limit)?,
            action: parse_action(action)?,
            grace_s: parse_grace(grace)?,
        })
    }

    /// `10:00 requeue after 5:00` (or `none`), for `sacctmgr show qos` and
    /// `scontrol show job`.
    pub fn describe(&self) -> String {
        match self.limit_s {
            None => "none".into(),
            Some(l) if self.action == GpuIdleAction::Warn => {
                format!("{} warn", units::format_duration(u64::from(l)))
            }
            Some(l) => format!(
                "{} {} after {}",
                units::format_duration(u64::from(l)),
                self.action.word(),
                units::format_duration(u64::from(self.grace_s))
            ),
        }
    }
}

/// A GPU idle setting that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuIdleError {
    #[error("{0}")]
    Time(#[from] UnitError),
    #[error("must be one of warn, requeue, cancel, not {0:?}")]
    Action(String),
    #[error("must be under 136 years, not {0:?}")]
    TooLong(String),
}

/// GpuIdleLimit: a duration; `-1`, `unlimited` or empty: none.
pub fn parse_limit(text: &str) -> Result<Option<u32>, GpuIdleError> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    units::parse_duration_secs(text)?
        .map(|s| u32::try_from(s).map_err(|_| GpuIdleError::TooLong(text.into())))
        .transpose()
}

/// GpuIdleGrace: a duration; empty: 0.
pub fn parse_grace(text: &str) -> Result<u32, GpuIdleError> {
    Ok(parse_limit(text)?.unwrap_or(0))
}

/// GpuIdleAction: `warn`, `requeue` or `cancel`; empty: warn.
pub fn parse_action(text: &str) -> Result<GpuIdleAction, GpuIdleError> {
    if text.trim().is_empty() {
        return Ok(GpuIdleAction::Warn);
    }
    GpuIdleAction::parse(text.trim()).ok_or_else(|| GpuIdleError::Action(text.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn sample(util: u32, gib: u64) -> DeviceSample {
        DeviceSample {
            utilization_percent: util,
            memory_used_bytes: gib * GIB,
        }
    }

    #[test]
    fn the_worked_example_adds_up() {
        let mut u = GpuUse::default();
        u.add_sample(&[sample(100, 20), sample(0, 2)], 30_000);
        assert_eq!(u.idle_ms, 0);
        u.add_sample(&[sample(0, 1), sample(0, 1)], 30_000);
        assert_eq!(
            u,
            GpuUse {
                sampled_gpu_ms: 120_000,
                busy_gpu_ms: 30_000,
                max_memory_bytes: 22 * GIB,
                idle_ms: 30_000,
            }
        );
        assert_eq!(u.utilization_percent(), 25);
        assert_eq!(u.busy_gpu_secs(), 30);
        // Busy again: the idle time starts over.
        u.add_sample(&[sample(0, 1), sample(5, 1)], 30_000);
        assert_eq!(u.idle_ms, 0);
        // No GPU measured (none whole, or NVML without an answer): nothing changes.
        let before = u;
        u.add_sample(&[], 30_000);
        assert_eq!(u, before);
    }

    #[test]
    fn nodes_merge_into_one_job_figure() {
        let a = GpuUse {
            sampled_gpu_ms: 10,
            busy_gpu_ms: 5,
            max_memory_bytes: 3,
            idle_ms: 7,
        };
        let b = GpuUse {
            sampled_gpu_ms: 20,
            busy_gpu_ms: 1,
            max_memory_bytes: 4,
            idle_ms: 2,
        };
        assert_eq!(
            a.merge(&b),
            GpuUse {
                sampled_gpu_ms: 30,
                busy_gpu_ms: 6,
                max_memory_bytes: 7,
                idle_ms: 2,
            }
        );
        assert_eq!(GpuUse::default().utilization_percent(), 0);
    }

    #[test]
    fn the_policy_flags_then_acts_after_the_grace() {
        let p = GpuIdlePolicy::parse("10:00", "requeue", "5:00").unwrap();
        assert_eq!(p.describe(), "10:00 requeue after 5:00");
        let min = 60_000;
        assert_eq!(p.verdict(9 * min, false), None);
        assert_eq!(p.verdict(10 * min, false), Some(GpuIdleVerdict::Flag));
        assert_eq!(p.verdict(14 * min, true), None);
        assert_eq!(
            p.verdict(15 * min, true),
            Some(GpuIdleVerdict::Act(GpuIdleAction::Requeue))
        );
        // A warning policy flags once and does nothing more.
        let warn = GpuIdlePolicy::parse("1", "", "").unwrap();
        assert_eq!(warn.describe(), "1:00 warn");
        assert_eq!(warn.verdict(min, false), Some(GpuIdleVerdict::Flag));
        assert_eq!(warn.verdict(100 * min, true), None);
        // No limit: never.
        let none = GpuIdlePolicy::parse("", "cancel", "").unwrap();
        assert_eq!(
            (none.verdict(u64::MAX / 2, false), none.describe()),
            (None, "none".into())
        );
        assert_eq!(GpuIdlePolicy::parse("-1", "", "").unwrap().limit_s, None);
    }

    #[test]
    fn bad_settings_are_refused() {
        assert_eq!(
            parse_action("kill").unwrap_err().to_string(),
            "must be one of warn, requeue, cancel, not \"kill\""
        );
        assert!(matches!(parse_limit("ten"), Err(GpuIdleError::Time(_))));
        assert!(matches!(
            parse_limit("999999999-0"),
            Err(GpuIdleError::TooLong(_))
        ));
        assert_eq!(GpuIdleAction::parse("CANCEL"), Some(GpuIdleAction::Cancel));
        for w in GpuIdleAction::WORDS {
            assert_eq!(GpuIdleAction::parse(w).unwrap().word(), w);
        }
    }
}
