//! The scheduler's knobs, built from the cluster config.

/// Everything `schedule` needs besides the state and the time.
#[derive(Debug, Clone, Default)]
pub struct SchedConfig {}

impl SchedConfig {
    pub fn from_config(_config: &model::Config) -> SchedConfig {
        SchedConfig {}
    }
}
