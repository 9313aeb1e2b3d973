//! Drover's domain model: jobs, nodes, partitions and the cluster state machine, plus
//! the Slurm syntaxes every part shares (hostlists, times, memory sizes, filename
//! patterns). Pure: no IO, no clock, no randomness; time comes in as a parameter.

pub mod assoc;
pub mod assoc_change;
pub mod config;
pub mod constraint;
pub mod distribution;
pub mod factors;
pub mod filter;
pub mod gpu_use;
pub mod hostlist;
pub mod job;
pub mod job_id;
pub mod job_time;
pub mod job_update;
pub mod keyword;
pub mod log_level;
pub mod mail;
pub mod multi_prog;
pub mod node;
pub mod partition_change;
pub mod pattern;
pub mod reason;
pub mod reservation;
pub mod reservation_change;
pub mod state;
pub mod step;
pub mod timespec;
pub mod tres;
pub mod trigger;
pub mod units;
pub mod usage;

pub use config::{Config, ConfigError, Partition};
pub use job::{
    Allocation, ArraySpec, DiskIo, Job, JobId, JobPayload, JobSpec, JobState, KillCause,
    KillRequest, NodeAllocation, PreemptMode, Preemption, SignalSpec, Step, StepGpuRequest,
    StepUsage, TaskDisk, TaskPeak, TaskUsage, Time,
};
pub use node::{GpuDevice, Node, NodeAlloc, NodeHealth, NodeState, NodeWord};
pub use reason::Reason;
pub use reservation::{Reservation, ReservationFlag};
pub use state::{ClusterState, Event, NodeUsage, Restored};
