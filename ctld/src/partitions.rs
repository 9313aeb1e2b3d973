//! `scontrol create|update|delete partition`: applies a change scontrol parsed
//! (`model::partition_change`) to the cluster's partitions, as the event to apply, or
//! Slurm's error for the request. Only operators change partitions; a partition that
//! still holds pending or running jobs is not deleted ("Partition is in use").
//! `scontrol reconfigure` puts the config's partitions back as the file defines them,
//! as Slurm's does without `ReconfigFlags=KeepPartInfo`; partitions made at run time
//! stay.

use crate::command::{ChangePartition, PartitionOp, Rejection};
use model::config::Partition;
use model::{ClusterState, Event};

/// The event for a change, or Slurm's error for it.
pub fn change(state: &ClusterState, req: &ChangePartition) -> Result<Event, Rejection> {
    if !req.requester.is_operator() {
        return Err(Rejection::PermissionDenied);
    }
    let invalid_name = || Rejection::NotFound("Invalid partition name specified".into());
    let change = &req.change;
    if !model::config::is_name(&change.name) {
        return Err(invalid_name());
    }
    let all_nodes: Vec<String> = state.nodes.keys().cloned().collect();
    let existing = state.partition(&change.name);
    match req.op {
        PartitionOp::Delete => {
            if existing.is_none() {
                return Err(invalid_name());
            }
            // A job cancelled or ended, still completing on its nodes, holds it no
            // longer, as in Slurm (its state is final there, completing a flag).
            let cancelled = |j: &model::Job| {
                matches!(
                    j.kill.map(|k| k.cause),
                    Some(model::job::KillCause::Cancel { .. })
                )
            };
            let in_use = state.jobs.values().any(|j| {
                !j.state.is_final()
                    && j.state != model::JobState::Completing
                    && !cancelled(j)
                    && j.in_partition(&change.name)
            });
            if in_use {
                return Err(Rejection::WrongState("Partition is in use".into()));
            }
            Ok(Event::PartitionDeleted {
                name: change.name.clone(),
            })
        }
        PartitionOp::Create | PartitionOp::Update => {
            let mut partition = match (req.op, existing) {
                (PartitionOp::Create, Some(_)) => return Err(invalid_name()),
                (PartitionOp::Update, None) => return Err(invalid_name()),
                (_, Some(p)) => p.clone(),
                (_, None) => Partition::open(&change.name, Vec::new(), false),
            };
            change
                .apply_to(&mut partition, &all_nodes)
                .map_err(|e| Rejection::Invalid(e.to_string()))?;
            if partition.default_time_min.is_none() {
                partition.default_time_min = partition.max_time_min;
            }
            Ok(Event::PartitionSet {
                partition: Box::new(partition),
            })
        }
    }
}

/// The events that put the config's partitions back as the file defines them: one for
/// each that a run-time change made different, or deleted.
pub fn restore(state: &ClusterState, config: &[Partition]) -> Vec<Event> {
    config
        .iter()
        .filter(|p| state.partition(&p.name) != Some(*p))
        .map(|p| Event::PartitionRestored {
            partition: Box::new(p.clone()),
        })
        .collect()
}
