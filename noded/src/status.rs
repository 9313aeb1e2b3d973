//! How a job ended, as the supervisor writes it to `status.json` and the daemon reports
//! it to the controller (`NodeControl.JobFinished`).

use model::Time;
use proto::v1;
use serde::{Deserialize, Serialize};

/// Mirrors the wire `FinishKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum FinishKind {
    /// The script exited by itself; COMPLETED or FAILED by its status.
    Exited,
    Cancelled,
    Timeout,
    OutOfMemory,
    /// The node could not start the script (bad output path, exec failure, ...).
    LaunchFailed,
    /// The site's prolog failed: the script was not started.
    PrologFailed,
}

impl FinishKind {
    pub fn to_wire(self) -> v1::FinishKind {
        match self {
            FinishKind::Exited => v1::FinishKind::Exited,
            FinishKind::Cancelled => v1::FinishKind::Cancelled,
            FinishKind::Timeout => v1::FinishKind::Timeout,
            FinishKind::OutOfMemory => v1::FinishKind::OutOfMemory,
            FinishKind::LaunchFailed => v1::FinishKind::LaunchFailed,
            FinishKind::PrologFailed => v1::FinishKind::PrologFailed,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobStatus {
    pub kind: FinishKind,
    /// The script's exit status (0-255); 0 when a signal killed it.
    pub exit_code: i32,
    /// The signal that killed the script; 0 if none.
    pub exit_signal: i32,
    pub start_time: Time,
    pub end_time: Time,
    pub message: String,
    /// The node should be drained for this reason (`Prolog error`, `Epilog error`,
    /// `Kill task failed`); empty: it should not.
    #[serde(default)]
    pub drain_reason: String,
    /// What the batch step used, as its cgroup counted it; `None` without cgroups.
    #[serde(default)]
    pub batch_usage: Option<model::StepUsage>,
}

impl JobStatus {
    /// A job that never ran its script.
    pub fn launch_failed(at: Time, message: impl Into<String>) -> JobStatus {
        JobStatus {
            kind: FinishKind::LaunchFailed,
            exit_code: 0,
            exit_signal: 0,
            start_time: at,
            end_time: at,
            message: message.into(),
            drain_reason: String::new(),
            batch_usage: None,
        }
    }

    pub fn to_wire(&self, node_name: &str, job_id: u32) -> v1::JobFinishedRequest {
        v1::JobFinishedRequest {
            node_name: node_name.to_string(),
            job_id,
            kind: self.kind.to_wire() as i32,
            exit_code: self.exit_code,
            exit_signal: self.exit_signal,
            start_time: self.start_time,
            end_time: self.end_time,
            message: self.message.clone(),
            restart_count: 0,
            drain_reason: self.drain_reason.clone(),
            batch_usage: self.batch_usage.as_ref().map(proto::convert::usage_to_wire),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_written_in_upper_case_and_map_to_the_wire() {
        let s = JobStatus {
            kind: FinishKind::LaunchFailed,
            ..JobStatus::launch_failed(5, "x")
        };
        let json = serde_json::to_string(&s).unwrap();
        assert!(json.contains("\"LAUNCH_FAILED\""), "{json}");
        assert_eq!(serde_json::from_str::<JobStatus>(&json).unwrap(), s);
        let wire = s.to_wire("n1", 3);
        assert_eq!(wire.kind, v1::FinishKind::LaunchFailed as i32);
        assert_eq!((wire.job_id, wire.start_time, wire.end_time), (3, 5, 5));
    }
}
