//! The scheduler's knobs, built from the cluster config.

/// Everything `schedule` needs besides the state and the time.
#[derive(Debug, Clone, Default)]
pub struct SchedConfig {
    /// How jobs are placed: `[scheduler]` in the config.
    pub backfill: BackfillConfig,
    /// The multifactor priority and fair share: `[priority]` in the config.
    pub priority: crate::priority::PriorityParams,
    /// Accounts, users and QOS with their limits: `[[accounts]]`, `[[qos]]`.
    pub assocs: std::sync::Arc<model::assoc::Associations>,
    /// Who may preempt whom and how: `[scheduler] preempt_type`, `preempt_mode`.
    pub preempt: crate::preempt::PreemptConfig,
}

impl SchedConfig {
    /// Does a pass look for jobs to stop: by PreemptType, or to reclaim an account's
    /// guaranteed quota?
    pub fn preempts(&self) -> bool {
        self.preempt.enabled() || crate::guarantee::any(&self.assocs)
    }

    pub fn from_config(config: &model::Config) -> SchedConfig {
        SchedConfig {
            backfill: BackfillConfig::from_config(&config.scheduler),
            priority: crate::priority::PriorityParams::from_config(&config.priority),
            assocs: std::sync::Arc::new(model::assoc::Associations::from_config(config)),
            preempt: crate::preempt::PreemptConfig::from_config(&config.scheduler),
        }
    }
}

/// The placement policy (`[scheduler] policy`). See `backfill` for the semantics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Policy {
    /// Start in queue order while jobs fit; the first that does not fit blocks its
    /// partition.
    Fcfs,
    /// Backfill: the first job of each partition that cannot start gets a reservation;
    /// later jobs start now only if they do not delay it. Slurm's default is backfill,
    /// so this is ours.
    #[default]
    Easy,
    /// Every pending job (or the first `max_reservations`) gets a reservation in queue
    /// order; a job starts now only if it delays none of them.
    Conservative,
}

impl Policy {
    /// Parses `fcfs`, `easy` or `conservative` (any case).
    pub fn parse(text: &str) -> Option<Policy> {
        match text.trim().to_ascii_lowercase().as_str() {
            "fcfs" => Some(Policy::Fcfs),
            "easy" => Some(Policy::Easy),
            "conservative" => Some(Policy::Conservative),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Policy::Fcfs => "fcfs",
            Policy::Easy => "easy",
            Policy::Conservative => "conservative",
        }
    }
}

/// `[scheduler]`: the policy and its limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackfillConfig {
    pub policy: Policy,
    /// Under `Conservative`, at most this many jobs get a reservation per pass; 0 is
    /// every pending job.
    pub max_reservations: u32,
}

impl Default for BackfillConfig {
    fn default() -> Self {
        BackfillConfig::from_config(&model::config::SchedulerConfig::default())
    }
}

impl BackfillConfig {
    /// The config was checked when parsed; an unknown policy falls back to `easy`.
    pub fn from_config(config: &model::config::SchedulerConfig) -> BackfillConfig {
        BackfillConfig {
            policy: Policy::parse(&config.policy).unwrap_or_default(),
            max_reservations: config.bf_max_reservations,
        }
    }

    pub fn with_policy(policy: Policy) -> BackfillConfig {
        BackfillConfig {
            policy,
            ..BackfillConfig::default()
        }
    }
}
