//! The cluster state and the only way it changes: `ClusterState::apply(&Event)`.
//!
//! The controller, the simulator and tests all drive the state through the same events,
//! so what the controller persists and what the simulator replays mean the same thing.
//! Jobs live in a persistent ordered map, so a read snapshot is a cheap clone.
//!
//! Example: `JobSubmitted{job 1}` then `JobStarted{1, alloc on n1}` then
//! `JobEnded{1, COMPLETED}` leaves job 1 final with its allocation and times kept for
//! `sacct`.

use crate::config::Partition;
use crate::job::{
    Allocation, Job, JobId, JobSpec, JobState, KillRequest, PreemptMode, Preemption, Step,
    StepUsage, Time,
};
use crate::node::{GpuDevice, NOT_RESPONDING, Node, NodeHealth};
use crate::reason::Reason;
use crate::reservation::Reservation;
use crate::usage::{AssocKey, AssocUsage};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Event {
    /// A new job (or a whole array) enters the queue. The payload is stored apart.
    JobSubmitted {
        job: Box<Job>,
    },
    /// One pending task of an array becomes its own pending record with a new id.
    ArrayTaskSplit {
        array_id: JobId,
        task_id: u32,
        new_id: JobId,
    },
    /// A pending task still in its array's record is cancelled: it leaves the array's
    /// pending set and keeps no record of its own (as Slurm clears its bit).
    ArrayTaskCancelled {
        array_id: JobId,
        task_id: u32,
    },
    /// A job of several partitions (`-p a,b`) starts in `partition`, one of them: it
    /// becomes the job's partition, and the others stay in their order (a requeued
    /// job may start in any of them again).
    JobPartitionChosen {
        job_id: JobId,
        partition: String,
    },
    JobStarted {
        job_id: JobId,
        alloc: Allocation,
        time: Time,
        stdout_path: String,
        stderr_path: String,
    },
    /// The job reached a final state.
    JobEnded {
        job_id: JobId,
        state: JobState,
        exit_code: i32,
        exit_signal: i32,
        time: Time,
        reason: Reason,
        cancelled_by: Option<u32>,
    },
    /// The node confirmed it started this run of the job (`restart_count` names the run).
    JobLaunched {
        job_id: JobId,
        restart_count: u32,
    },
    /// A kill of the running job was acknowledged (scancel, requeue, the end of a
    /// preemption's grace time): its node is told until it reports the end.
    JobKillRequested {
        job_id: JobId,
        request: KillRequest,
    },
    JobRequeued {
        job_id: JobId,
        time: Time,
        hold: bool,
        /// `requeuehold State=SpecialExit`: the job waits held in SPECIAL_EXIT.
        special_exit: bool,
        /// It may not start before this time (`scontrol requeue`'s delay).
        not_before: Option<Time>,
    },
    /// The scheduler chose a running job to make room for `preemptor` (CANCEL or
    /// REQUEUE): it is being terminated, and its end (`JobEnded` PREEMPTED or
    /// `JobRequeued`) follows when its node reports it.
    JobPreempted {
        job_id: JobId,
        preemptor: JobId,
        mode: PreemptMode,
        time: Time,
        grace_secs: u32,
    },
    /// The job is stopped: by an admin (`scontrol suspend`, no preemptor) or to make
    /// room for `preemptor` (SUSPEND). A job already suspended only changes preemptor.
    JobSuspended {
        job_id: JobId,
        time: Time,
        preemptor: Option<JobId>,
    },
    /// A suspended job runs again; its suspended time does not count against its limit.
    JobResumed {
        job_id: JobId,
        time: Time,
    },
    JobHeld {
        job_id: JobId,
        held: bool,
        reason: Reason,
    },
    /// `scontrol notify`: a message for the job's srun or salloc (not stored).
    JobNotified {
        job_id: JobId,
        message: String,
    },
    /// The job's request changed (`scontrol update`).
    JobUpdated {
        job_id: JobId,
        spec: Box<JobSpec>,
        time_limit_min: Option<u32>,
    },
    /// A running job shrunk (`scontrol update JobId= NumNodes=`): the allocation it
    /// keeps; the nodes it gave up are free.
    JobResized {
        job_id: JobId,
        alloc: Allocation,
    },
    /// A pending job became eligible to run (its dependency, begin time or hold is
    /// gone): Slurm's `time_eligible`, kept once set.
    JobEligible {
        job_id: JobId,
        time: Time,
    },
    /// `sacctmgr modify job`: the job's accounting record's comment and DerivedExitCode
    /// (a wait status; `None`: derived from its steps), in any state.
    JobRecordModified {
        job_id: JobId,
        comment: String,
        derived_exit_status: Option<i32>,
    },
    /// Finished jobs older than the retention (`purge_job_after`) leave the state and
    /// the store.
    JobsPurged {
        job_ids: Vec<JobId>,
    },
    /// The steps of finished jobs older than `purge_step_after` leave them; the jobs'
    /// own records stay.
    StepsPurged {
        job_ids: Vec<JobId>,
    },
    /// The scheduler's reason and planned start for a pending job.
    JobPendingReason {
        job_id: JobId,
        reason: Reason,
        planned_start: Time,
        /// The nodes of the planned start (hostlist; empty: none planned).
        planned_nodes: String,
    },
    StepStarted {
        job_id: JobId,
        step: Step,
    },
    StepEnded {
        job_id: JobId,
        step_id: u32,
        exit_code: i32,
        exit_signal: i32,
        time: Time,
    },
    /// `scontrol update StepId=`: a running step's own time limit (`None`: only the
    /// job's).
    StepTimeLimitSet {
        job_id: JobId,
        step_id: u32,
        time_limit_min: Option<u32>,
    },
    /// A step ran past its own time limit and is killed: it ends TIMEOUT.
    StepTimedOut {
        job_id: JobId,
        step_id: u32,
    },
    /// Every GPU of the job had been idle for its QOS's `gpu_idle_limit`: the job is
    /// flagged (`model::gpu_use`).
    JobGpuIdleFlagged {
        job_id: JobId,
        time: Time,
    },
    /// What a step used, as its nodes counted it (`step_id` `None`: the batch step).
    StepUsageMeasured {
        job_id: JobId,
        step_id: Option<u32>,
        usage: StepUsage,
    },
    /// A job's run was charged to its association and its QOS: `usage` is the
    /// association's new record (the old one decayed to the job's end, plus the job's
    /// usage), `qos_usage` the QOS's.
    UsageCharged {
        job_id: JobId,
        account: String,
        user: String,
        usage: AssocUsage,
        qos: String,
        qos_usage: AssocUsage,
    },
    NodeRegistered {
        name: String,
        addr: String,
        cpus: u32,
        memory_mb: u64,
        gpus: Vec<GpuDevice>,
        /// The CPU ids of each NUMA node, by NUMA node id (empty: not known).
        numa_cpus: Vec<Vec<u32>>,
        features: Vec<String>,
        boot_time: Time,
        time: Time,
        /// A DOWN node is back in service (ReturnToService allows it); otherwise it
        /// stays DOWN, with its reason.
        returns_to_service: bool,
    },
    NodeHeartbeat {
        name: String,
        time: Time,
        /// Its free memory and load, when its daemon said.
        load: Option<crate::node::NodeLoad>,
    },
    NodeDown {
        name: String,
        reason: String,
        time: Time,
    },
    /// `scontrol create|update reservation`: the reservation as it now stands.
    ReservationSet {
        reservation: Box<Reservation>,
    },
    ReservationDeleted {
        name: String,
    },
    /// `strigger --set`: a new trigger (its id is below `next_trigger_id` after).
    TriggerSet {
        trigger: Box<crate::trigger::Trigger>,
    },
    /// `strigger --clear`, or triggers that fired and are not permanent.
    TriggersRemoved {
        ids: Vec<u32>,
    },
    /// `scontrol create|update partition`: the partition as it now stands (made or
    /// changed at run time, kept by the store over the config's).
    PartitionSet {
        partition: Box<Partition>,
    },
    /// `scontrol delete partition`.
    PartitionDeleted {
        name: String,
    },
    /// `scontrol reconfigure`: a partition of the config as its file defines it again,
    /// its run-time changes dropped (Slurm's reconfigure without
    /// `ReconfigFlags=KeepPartInfo`); the store forgets its run-time record.
    PartitionRestored {
        partition: Box<Partition>,
    },
    /// An admin drains, resumes or downs a node.
    NodeAdmin {
        name: String,
        drain: bool,
        down: bool,
        reason: String,
        uid: u32,
        time: Time,
    },
    /// `scontrol update NodeName=... AvailableFeatures=...`: the node's features until
    /// it registers again.
    NodeFeaturesSet {
        name: String,
        features: Vec<String>,
    },
}

impl Event {
    /// The job record this event changes, if any.
    pub fn job_id(&self) -> Option<JobId> {
        match self {
            Event::JobSubmitted { job } => Some(job.id),
            Event::ArrayTaskSplit { new_id, .. } => Some(*new_id),
            Event::ArrayTaskCancelled { array_id, .. } => Some(*array_id),
            Event::JobStarted { job_id, .. }
            | Event::JobPartitionChosen { job_id, .. }
            | Event::JobEnded { job_id, .. }
            | Event::JobLaunched { job_id, .. }
            | Event::JobKillRequested { job_id, .. }
            | Event::JobRequeued { job_id, .. }
            | Event::JobPreempted { job_id, .. }
            | Event::JobSuspended { job_id, .. }
            | Event::JobResumed { job_id, .. }
            | Event::JobHeld { job_id, .. }
            | Event::JobNotified { job_id, .. }
            | Event::JobUpdated { job_id, .. }
            | Event::JobResized { job_id, .. }
            | Event::JobRecordModified { job_id, .. }
            | Event::JobEligible { job_id, .. }
            | Event::JobPendingReason { job_id, .. }
            | Event::StepStarted { job_id, .. }
            | Event::StepEnded { job_id, .. }
            | Event::StepTimeLimitSet { job_id, .. }
            | Event::StepTimedOut { job_id, .. }
            | Event::StepUsageMeasured { job_id, .. }
            | Event::JobGpuIdleFlagged { job_id, .. } => Some(*job_id),
            _ => None,
        }
    }

    /// Does the store keep what this event changes? Heartbeat times and the
    /// scheduler's pending reasons are derived again after a restart.
    pub fn persisted(&self) -> bool {
        !matches!(
            self,
            Event::NodeHeartbeat { .. }
                | Event::JobPendingReason { .. }
                | Event::JobNotified { .. }
        )
    }

    /// The reservation this event changes, if any.
    pub fn reservation_name(&self) -> Option<&str> {
        match self {
            Event::ReservationSet { reservation } => Some(&reservation.name),
            Event::ReservationDeleted { name } => Some(name),
            _ => None,
        }
    }

    /// The trigger records this event changes (set, or removed).
    pub fn trigger_ids(&self) -> Vec<u32> {
        match self {
            Event::TriggerSet { trigger } => vec![trigger.id],
            Event::TriggersRemoved { ids } => ids.clone(),
            _ => Vec::new(),
        }
    }

    /// The run-time partition this event changes, if any.
    pub fn partition_name(&self) -> Option<&str> {
        match self {
            Event::PartitionSet { partition } | Event::PartitionRestored { partition } => {
                Some(&partition.name)
            }
            Event::PartitionDeleted { name } => Some(name),
            _ => None,
        }
    }

    /// The node record this event changes, if any.
    pub fn node_name(&self) -> Option<&str> {
        match self {
            Event::NodeRegistered { name, .. }
            | Event::NodeHeartbeat { name, .. }
            | Event::NodeDown { name, .. }
            | Event::NodeAdmin { name, .. }
            | Event::NodeFeaturesSet { name, .. } => Some(name),
            _ => None,
        }
    }
}

/// What a restart loads from the store, before it becomes a [`ClusterState`].
#[derive(Debug, Clone, Default)]
pub struct Restored {
    pub jobs: Vec<Job>,
    pub nodes: Vec<Node>,
    pub reservations: Vec<Reservation>,
    /// Partitions made or changed at run time (`scontrol create|update partition`).
    pub partitions: Vec<Partition>,
    /// Decayed usage per (account, user).
    pub usage: Vec<(AssocKey, AssocUsage)>,
    /// Decayed usage per QOS.
    pub qos_usage: Vec<(String, AssocUsage)>,
    /// The associations kept since `sacctmgr` first changed them (none: the config's
    /// seed them).
    pub assocs: Option<crate::assoc::Associations>,
    /// The triggers `strigger --set` left, by id.
    pub triggers: Vec<crate::trigger::Trigger>,
    /// The id the next trigger gets (0: not kept; then above the kept ones).
    pub next_trigger_id: u32,
}

/// Resources in use on a node, derived from the running jobs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeUsage {
    pub cpus: u32,
    pub mem_mb: u64,
    pub gpus: Vec<u32>,
    pub jobs: usize,
}

#[derive(Debug, Clone, Default)]
pub struct ClusterState {
    pub jobs: imbl::OrdMap<JobId, Arc<Job>>,
    pub nodes: BTreeMap<String, Node>,
    pub partitions: Vec<Partition>,
    pub reservations: BTreeMap<String, Reservation>,
    pub next_job_id: JobId,
    /// Decayed usage per association, charged as jobs end (`UsageCharged`).
    pub usage: BTreeMap<AssocKey, AssocUsage>,
    /// Decayed usage per QOS, charged with the associations' (for QOS GrpTRESMins and
    /// GrpWall).
    pub qos_usage: BTreeMap<String, AssocUsage>,
    /// `strigger`'s triggers, by id.
    pub triggers: BTreeMap<u32, crate::trigger::Trigger>,
    /// The id the next trigger gets.
    pub next_trigger_id: u32,
    /// Ids of pending and of allocated jobs, so that a scheduling pass does not walk
    /// every finished job kept for `sacct`. Kept by `apply`, `insert_job` and
    /// `remove_job`; persistent sets, so snapshots stay cheap.
    pending_ids: imbl::OrdSet<JobId>,
    /// The pending jobs that are not held: what a pass may start.
    queued_ids: imbl::OrdSet<JobId>,
    running_ids: imbl::OrdSet<JobId>,
}

impl ClusterState {
    pub fn new(nodes: Vec<Node>, partitions: Vec<Partition>) -> ClusterState {
        ClusterState {
            jobs: imbl::OrdMap::new(),
            nodes: nodes.into_iter().map(|n| (n.name.clone(), n)).collect(),
            partitions,
            reservations: BTreeMap::new(),
            next_job_id: 1,
            usage: BTreeMap::new(),
            qos_usage: BTreeMap::new(),
            triggers: BTreeMap::new(),
            next_trigger_id: 1,
            pending_ids: imbl::OrdSet::new(),
            queued_ids: imbl::OrdSet::new(),
            running_ids: imbl::OrdSet::new(),
        }
    }

    /// Files a job under pending or running by its state.
    fn reindex(&mut self, id: JobId) {
        let state = self.jobs.get(&id).map(|j| (j.state, j.held));
        self.pending_ids.remove(&id);
        self.queued_ids.remove(&id);
        self.running_ids.remove(&id);
        match state.map(|(s, _)| s) {
            Some(JobState::Pending) => {
                self.pending_ids.insert(id);
                if state.is_some_and(|(_, held)| !held) {
                    self.queued_ids.insert(id);
                }
            }
            Some(JobState::Running | JobState::Suspended | JobState::Completing) => {
                self.running_ids.insert(id);
            }
            _ => {}
        }
    }

    /// Inserts or replaces a job record directly (loading, tests, the simulator).
    pub fn insert_job(&mut self, job: Job) {
        let id = job.id;
        self.next_job_id = self.next_job_id.max(id + 1);
        self.jobs.insert(id, Arc::new(job));
        self.reindex(id);
    }

    /// Forgets a job record entirely (the simulator drops finished jobs).
    pub fn remove_job(&mut self, id: JobId) {
        self.jobs.remove(&id);
        self.reindex(id);
    }

    pub fn job(&self, id: JobId) -> Option<&Job> {
        self.jobs.get(&id).map(|j| j.as_ref())
    }

    pub fn default_partition(&self) -> Option<&Partition> {
        self.partitions.iter().find(|p| p.is_default)
    }

    pub fn partition(&self, name: &str) -> Option<&Partition> {
        self.partitions.iter().find(|p| p.name == name)
    }

    fn job_mut(&mut self, id: JobId) -> Option<&mut Job> {
        self.jobs.get_mut(&id).map(Arc::make_mut)
    }

    fn step_mut(&mut self, job_id: JobId, step_id: u32) -> Option<&mut Step> {
        let job = self.job_mut(job_id)?;
        job.steps.iter_mut().find(|s| s.id == Some(step_id))
    }

    /// Applies one event. Events that refer to unknown jobs or nodes change nothing.
    pub fn apply(&mut self, event: &Event) {
        self.apply_inner(event);
        if let Some(id) = event.job_id() {
            self.reindex(id);
        }
        if let Event::ArrayTaskSplit { array_id, .. } = event {
            self.reindex(*array_id);
        }
    }

    fn apply_inner(&mut self, event: &Event) {
        match event {
            Event::JobSubmitted { job } => {
                self.next_job_id = self.next_job_id.max(job.id + 1);
                self.jobs.insert(job.id, Arc::new(job.as_ref().clone()));
            }
            Event::ArrayTaskSplit {
                array_id,
                task_id,
                new_id,
            } => {
                let Some(meta) = self.job_mut(*array_id) else {
                    return;
                };
                meta.pending_tasks.remove(task_id);
                let mut task = meta.clone();
                task.id = *new_id;
                task.array_task_id = Some(*task_id);
                task.pending_tasks.clear();
                self.next_job_id = self.next_job_id.max(new_id + 1);
                self.jobs.insert(*new_id, Arc::new(task));
            }
            Event::ArrayTaskCancelled { array_id, task_id } => {
                let Some(meta) = self.job_mut(*array_id) else {
                    return;
                };
                // The last pending task stays: it is the array's record itself.
                if meta.pending_tasks.len() > 1 {
                    meta.pending_tasks.remove(task_id);
                }
            }
            Event::JobPartitionChosen { job_id, partition } => {
                let Some(job) = self.job_mut(*job_id) else {
                    return;
                };
                let spec = &mut job.spec;
                if spec.partition != *partition
                    && let Some(i) = spec.more_partitions.iter().position(|p| p == partition)
                {
                    let before = std::mem::replace(&mut spec.partition, partition.clone());
                    spec.more_partitions.remove(i);
                    spec.more_partitions.insert(0, before);
                }
            }
            Event::JobStarted {
                job_id,
                alloc,
                time,
                stdout_path,
                stderr_path,
            } => {
                // Within one of its reservations (the one holding its first node), a
                // job ends by the reservation's end.
                let reservation_end = self.job(*job_id).and_then(|job| {
                    let first = &alloc.nodes.first()?.node;
                    job.spec
                        .reservations()
                        .filter_map(|r| self.reservations.get(r))
                        .find(|r| r.nodes.contains(first))?
                        .ends_jobs_at(*time)
                });
                let Some(job) = self.job_mut(*job_id) else {
                    return;
                };
                if job.is_array_meta() {
                    // The last pending task of an array keeps the array's record.
                    job.array_task_id = job.pending_tasks.pop_first();
                }
                job.state = JobState::Running;
                job.reason = Reason::None;
                job.alloc = Some(alloc.clone());
                job.kill = None;
                job.launched = false;
                job.start_time = *time;
                if job.eligible_time == 0 {
                    job.eligible_time = *time;
                }
                job.cut_limit_to_deadline(*time);
                if let Some(end) = reservation_end {
                    job.cut_limit_to(end, *time);
                }
                job.end_time = 0;
                job.planned_start = 0;
                job.planned_nodes.clear();
                job.preemption = None;
                job.suspend_time = 0;
                job.suspended_secs = 0;
                job.stdout_path = stdout_path.clone();
                job.stderr_path = stderr_path.clone();
                job.steps
                    .retain(|s| s.id.is_some() && s.start_time >= *time);
                let first = alloc.nodes.first();
                // salloc's and srun's allocations have no batch step, as in Slurm.
                if !job.spec.interactive {
                    job.steps.push(Step {
                        num_tasks: 1,
                        nodes: first.map(|n| n.node.clone()).into_iter().collect(),
                        cpus: first.map_or(0, |n| n.cpus),
                        ..Step::started(None, "batch", *time)
                    });
                }
            }
            Event::JobEnded {
                job_id,
                state,
                exit_code,
                exit_signal,
                time,
                reason,
                cancelled_by,
            } => {
                let Some(job) = self.job_mut(*job_id) else {
                    return;
                };
                job.state = *state;
                job.exit_code = *exit_code;
                job.exit_signal = *exit_signal;
                job.end_time = *time;
                job.reason = *reason;
                job.cancelled_by = *cancelled_by;
                job.kill = None;
                if job.start_time == 0 {
                    job.start_time = *time;
                }
                for step in job.steps.iter_mut().filter(|s| !s.state.is_final()) {
                    step.state = if step.id.is_none() {
                        *state
                    } else {
                        JobState::Cancelled
                    };
                    step.end_time = *time;
                    if step.id.is_none() {
                        step.exit_code = *exit_code;
                        step.exit_signal = *exit_signal;
                    }
                }
            }
            Event::JobRequeued {
                job_id,
                time,
                hold,
                special_exit,
                not_before,
            } => {
                let Some(job) = self.job_mut(*job_id) else {
                    return;
                };
                let hold = &(*hold || *special_exit);
                job.state = if *special_exit {
                    JobState::SpecialExit
                } else {
                    JobState::Pending
                };
                if let Some(t) = not_before {
                    job.spec.begin_time = job.spec.begin_time.max(*t);
                }
                job.restart_count += 1;
                job.alloc = None;
                job.submit_time = *time;
                job.start_time = 0;
                job.end_time = 0;
                job.exit_code = 0;
                job.exit_signal = 0;
                job.cancelled_by = None;
                job.held = *hold;
                job.reason = if *hold {
                    Reason::JobHeldUser
                } else {
                    Reason::BeginTime
                };
                job.kill = None;
                job.launched = false;
                // A job requeued by preemption remembers its preemptor, which goes
                // first into the room it left.
                job.preemption = job
                    .preemption
                    .take()
                    .filter(|p| p.mode == PreemptMode::Requeue);
                job.suspend_time = 0;
                job.suspended_secs = 0;
                for step in job.steps.iter_mut().filter(|s| !s.state.is_final()) {
                    step.state = JobState::Requeued;
                    step.end_time = *time;
                }
            }
            Event::JobLaunched {
                job_id,
                restart_count,
            } => {
                let Some(job) = self.job_mut(*job_id) else {
                    return;
                };
                if job.restart_count == *restart_count && job.alloc.is_some() {
                    job.launched = true;
                }
            }
            Event::JobGpuIdleFlagged { job_id, time } => {
                if let Some(job) = self.job_mut(*job_id) {
                    job.gpu_idle_flagged.get_or_insert(*time);
                }
            }
            Event::JobKillRequested { job_id, request } => {
                let Some(job) = self.job_mut(*job_id) else {
                    return;
                };
                if job.alloc.is_some() && !job.state.is_final() {
                    job.kill = Some(*request);
                }
            }
            Event::JobPreempted {
                job_id,
                preemptor,
                mode,
                time,
                grace_secs,
            } => {
                let Some(job) = self.job_mut(*job_id) else {
                    return;
                };
                job.preemption = Some(Preemption {
                    preemptor: *preemptor,
                    mode: *mode,
                    time: *time,
                    grace_secs: *grace_secs,
                });
            }
            Event::JobSuspended {
                job_id,
                time,
                preemptor,
            } => {
                let Some(job) = self.job_mut(*job_id) else {
                    return;
                };
                if !matches!(job.state, JobState::Running | JobState::Suspended) {
                    return;
                }
                if job.state == JobState::Running {
                    job.state = JobState::Suspended;
                    job.suspend_time = *time;
                }
                job.preemption = preemptor.map(|p| Preemption {
                    preemptor: p,
                    mode: PreemptMode::Suspend,
                    time: *time,
                    grace_secs: 0,
                });
            }
            Event::JobResumed { job_id, time } => {
                let Some(job) = self.job_mut(*job_id) else {
                    return;
                };
                if job.state != JobState::Suspended {
                    return;
                }
                job.state = JobState::Running;
                job.suspended_secs += (*time - job.suspend_time).max(0);
                job.suspend_time = *time;
                job.preemption = None;
            }
            Event::JobHeld {
                job_id,
                held,
                reason,
            } => {
                let Some(job) = self.job_mut(*job_id) else {
                    return;
                };
                job.held = *held;
                job.reason = *reason;
                if !*held {
                    // Held and released, a job's priority is computed again (Slurm's
                    // way back from a fixed `Priority=`).
                    job.spec.priority = None;
                }
                if !*held && job.state == JobState::SpecialExit {
                    // `scontrol release` lets a job held in SPECIAL_EXIT run again.
                    job.state = JobState::Pending;
                }
                if *held {
                    // Passes skip held jobs: drop the plan they had.
                    job.planned_start = 0;
                    job.planned_nodes.clear();
                }
            }
            Event::JobNotified { job_id, message } => {
                if let Some(job) = self.job_mut(*job_id) {
                    job.notices.push(message);
                }
            }
            Event::JobUpdated {
                job_id,
                spec,
                time_limit_min,
            } => {
                let Some(job) = self.job_mut(*job_id) else {
                    return;
                };
                job.spec = spec.as_ref().clone();
                job.time_limit_min = *time_limit_min;
                job.time_limit_s = None;
            }
            Event::JobResized { job_id, alloc } => {
                if let Some(job) = self.job_mut(*job_id) {
                    job.spec.num_nodes = alloc.nodes.len() as u32;
                    job.alloc = Some(alloc.clone());
                }
            }
            Event::JobEligible { job_id, time } => {
                if let Some(job) = self.job_mut(*job_id)
                    && job.eligible_time == 0
                {
                    job.eligible_time = *time;
                }
            }
            Event::JobRecordModified {
                job_id,
                comment,
                derived_exit_status,
            } => {
                let Some(job) = self.job_mut(*job_id) else {
                    return;
                };
                job.spec.comment.clone_from(comment);
                job.derived_exit_status = *derived_exit_status;
            }
            Event::JobPendingReason {
                job_id,
                reason,
                planned_start,
                planned_nodes,
            } => {
                let Some(job) = self.job_mut(*job_id) else {
                    return;
                };
                job.reason = *reason;
                job.planned_start = *planned_start;
                job.planned_nodes.clone_from(planned_nodes);
            }
            Event::StepStarted { job_id, step } => {
                let Some(job) = self.job_mut(*job_id) else {
                    return;
                };
                if let Some(id) = step.id {
                    job.next_step_id = job.next_step_id.max(id + 1);
                }
                job.steps.push(step.clone());
            }
            Event::StepUsageMeasured {
                job_id,
                step_id,
                usage,
            } => {
                let Some(job) = self.job_mut(*job_id) else {
                    return;
                };
                if let Some(step) = job.steps.iter_mut().find(|s| s.id == *step_id) {
                    step.usage = Some(usage.clone());
                }
            }
            Event::StepEnded {
                job_id,
                step_id,
                exit_code,
                exit_signal,
                time,
            } => {
                let Some(job) = self.job_mut(*job_id) else {
                    return;
                };
                if let Some(step) = job.steps.iter_mut().find(|s| s.id == Some(*step_id)) {
                    step.state = if step.timed_out {
                        JobState::Timeout
                    } else if *exit_code == 0 && *exit_signal == 0 {
                        JobState::Completed
                    } else if *exit_signal != 0 {
                        JobState::Cancelled
                    } else {
                        JobState::Failed
                    };
                    step.exit_code = *exit_code;
                    step.exit_signal = *exit_signal;
                    step.end_time = *time;
                }
            }
            Event::StepTimeLimitSet {
                job_id,
                step_id,
                time_limit_min,
            } => {
                if let Some(step) = self.step_mut(*job_id, *step_id) {
                    step.time_limit_min = *time_limit_min;
                }
            }
            Event::StepTimedOut { job_id, step_id } => {
                if let Some(step) = self.step_mut(*job_id, *step_id) {
                    step.timed_out = true;
                }
            }
            Event::UsageCharged {
                account,
                user,
                usage,
                qos,
                qos_usage,
                ..
            } => {
                self.usage
                    .insert((account.clone(), user.clone()), usage.clone());
                self.qos_usage.insert(qos.clone(), qos_usage.clone());
            }
            Event::NodeRegistered {
                name,
                addr,
                cpus,
                memory_mb,
                gpus,
                numa_cpus,
                features,
                boot_time,
                time,
                returns_to_service,
            } => {
                let node = self
                    .nodes
                    .entry(name.clone())
                    .or_insert_with(|| Node::from_config(name, *cpus, *memory_mb, gpus.clone()));
                node.addr = addr.clone();
                node.cpus = *cpus;
                node.memory_mb = *memory_mb;
                node.numa_cpus = numa_cpus.clone();
                node.gpus = gpus.clone();
                if !features.is_empty() {
                    node.features = features.clone();
                }
                node.boot_time = *boot_time;
                node.last_heartbeat = *time;
                if node.health != NodeHealth::Down {
                    node.health = NodeHealth::Up;
                } else if *returns_to_service {
                    node.health = NodeHealth::Up;
                    node.reason.clear();
                }
            }
            Event::NodeHeartbeat { name, time, load } => {
                if let Some(node) = self.nodes.get_mut(name) {
                    node.last_heartbeat = *time;
                    if load.is_some() {
                        node.load = *load;
                    }
                }
            }
            Event::NodeDown { name, reason, time } => {
                if let Some(node) = self.nodes.get_mut(name) {
                    node.health = NodeHealth::Down;
                    node.reason = reason.clone();
                    node.reason_time = *time;
                }
            }
            Event::ReservationSet { reservation } => {
                self.reservations
                    .insert(reservation.name.clone(), reservation.as_ref().clone());
            }
            Event::ReservationDeleted { name } => {
                self.reservations.remove(name);
            }
            Event::TriggerSet { trigger } => {
                self.next_trigger_id = self.next_trigger_id.max(trigger.id + 1);
                self.triggers.insert(trigger.id, trigger.as_ref().clone());
            }
            Event::TriggersRemoved { ids } => {
                for id in ids {
                    self.triggers.remove(id);
                }
            }
            Event::PartitionSet { partition } | Event::PartitionRestored { partition } => {
                if partition.is_default {
                    for p in &mut self.partitions {
                        p.is_default = false;
                    }
                }
                match self
                    .partitions
                    .iter_mut()
                    .find(|p| p.name == partition.name)
                {
                    Some(p) => *p = partition.as_ref().clone(),
                    None => self.partitions.push(partition.as_ref().clone()),
                }
            }
            Event::PartitionDeleted { name } => {
                self.partitions.retain(|p| &p.name != name);
            }
            Event::JobsPurged { job_ids } => {
                for id in job_ids {
                    if self.job(*id).is_some_and(|j| j.state.is_final()) {
                        self.remove_job(*id);
                    }
                }
            }
            Event::StepsPurged { job_ids } => {
                for id in job_ids {
                    if let Some(job) = self.job(*id).filter(|j| j.state.is_final()) {
                        let mut job = job.clone();
                        job.steps.clear();
                        self.insert_job(job);
                    }
                }
            }
            Event::NodeFeaturesSet { name, features } => {
                if let Some(node) = self.nodes.get_mut(name) {
                    node.features.clone_from(features);
                }
            }
            Event::NodeAdmin {
                name,
                drain,
                down,
                reason,
                uid,
                time,
            } => {
                if let Some(node) = self.nodes.get_mut(name) {
                    node.drain = *drain;
                    if *down {
                        node.health = NodeHealth::Down;
                    } else if node.health == NodeHealth::Down && !node.addr.is_empty() {
                        node.health = NodeHealth::Up;
                    }
                    node.reason = reason.clone();
                    node.reason_time = if reason.is_empty() { 0 } else { *time };
                    node.reason_uid = *uid;
                }
            }
        }
    }

    /// The state after a restart: the configured nodes and partitions, with the records
    /// the store kept. A node stays UNKNOWN until its daemon registers again (a DOWN an
    /// admin set stays DOWN), and its silence is timed from `now`; a node keeps the
    /// larger of its configured and its last reported CPU count.
    pub fn restored(
        nodes: Vec<Node>,
        partitions: Vec<Partition>,
        kept: Restored,
        now: Time,
    ) -> ClusterState {
        let mut state = ClusterState::new(nodes, partitions);
        // A partition changed at run time wins over the config's of its name.
        for partition in kept.partitions {
            state.apply(&Event::PartitionSet {
                partition: Box::new(partition),
            });
        }
        for mut node in kept.nodes {
            node.health = if node.health == NodeHealth::Down && node.reason != NOT_RESPONDING {
                NodeHealth::Down
            } else {
                NodeHealth::Unknown
            };
            if let Some(configured) = state.nodes.get(&node.name) {
                node.cpus = configured.cpus.max(node.cpus);
            }
            state.nodes.insert(node.name.clone(), node);
        }
        for node in state.nodes.values_mut() {
            node.last_heartbeat = now;
        }
        state.reservations = kept
            .reservations
            .into_iter()
            .map(|r| (r.name.clone(), r))
            .collect();
        state.usage = kept.usage.into_iter().collect();
        state.qos_usage = kept.qos_usage.into_iter().collect();
        state.next_trigger_id = kept.next_trigger_id.max(1);
        for trigger in kept.triggers {
            state.next_trigger_id = state.next_trigger_id.max(trigger.id + 1);
            state.triggers.insert(trigger.id, trigger);
        }
        for job in kept.jobs {
            state.insert_job(job);
        }
        state
    }

    /// Checks what every change must keep true, and says what broke: the pending and
    /// running indexes match the jobs, ids stay below `next_job_id`, a pending job has
    /// no allocation and a running, suspended or completing one has one (ended jobs
    /// keep theirs, for the accounting), only those holding one have a kill request or
    /// an unfinished launch, an array's record is pending with tasks still to start or
    /// has ended (a cancel of the whole array ends it with its pending tasks) and every
    /// other record has no pending tasks, and no node gives more CPUs, GPUs or memory
    /// than it has, nor a GPU index beyond its count (suspended jobs lend their CPUs
    /// and GPUs, not their memory). Tests and the simulator run it after every change.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut pending = imbl::OrdSet::new();
        let mut queued = imbl::OrdSet::new();
        let mut running = imbl::OrdSet::new();
        for (id, job) in &self.jobs {
            if job.id != *id {
                return Err(format!("job {} is filed under {id}", job.id));
            }
            if *id >= self.next_job_id {
                return Err(format!(
                    "job {id} is not below next_job_id {}",
                    self.next_job_id
                ));
            }
            let holds = matches!(
                job.state,
                JobState::Running | JobState::Suspended | JobState::Completing
            );
            match job.state {
                JobState::Pending => {
                    pending.insert(*id);
                    if !job.held {
                        queued.insert(*id);
                    }
                }
                _ if holds => {
                    running.insert(*id);
                }
                _ => {}
            }
            if job.state == JobState::Pending && job.alloc.is_some() {
                return Err(format!("pending job {id} has an allocation"));
            }
            if holds && job.alloc.as_ref().is_none_or(|a| a.nodes.is_empty()) {
                return Err(format!("{} job {id} has no allocation", job.state.name()));
            }
            if !holds && (job.kill.is_some() || job.launched && !job.state.is_final()) {
                return Err(format!(
                    "{} job {id} has a kill request or a launch",
                    job.state.name()
                ));
            }
            if job.is_array_meta() {
                if job.state == JobState::Pending && job.pending_tasks.is_empty() {
                    return Err(format!("pending array record {id} has no pending tasks"));
                }
                if job.state != JobState::Pending && !job.state.is_final() {
                    return Err(format!("array record {id} is {}", job.state.name()));
                }
            } else if !job.pending_tasks.is_empty() {
                return Err(format!(
                    "job {id} is not an array's record but has pending tasks"
                ));
            }
        }
        if pending != self.pending_ids || queued != self.queued_ids || running != self.running_ids {
            return Err("the pending, queued or running index does not match the jobs".into());
        }
        let mut used: BTreeMap<&str, (u32, u64, Vec<u32>)> = BTreeMap::new();
        for job in self.running_jobs() {
            let lends = job.state == JobState::Suspended;
            for na in job.alloc.iter().flat_map(|a| &a.nodes) {
                let Some(node) = self.nodes.get(&na.node) else {
                    return Err(format!("job {} runs on unknown node {}", job.id, na.node));
                };
                if let Some(gpu) = na.gpus.iter().find(|g| **g as usize >= node.gpus.len()) {
                    return Err(format!(
                        "job {} has GPU {gpu} of node {}, which has {}",
                        job.id,
                        node.name,
                        node.gpus.len()
                    ));
                }
                let u = used.entry(node.name.as_str()).or_default();
                u.1 += na.mem_mb;
                if !lends {
                    u.0 += na.cpus;
                    u.2.extend(&na.gpus);
                }
                if u.0 > node.cpus || u.1 > node.memory_mb {
                    return Err(format!(
                        "node {} gives more CPUs or memory than it has",
                        node.name
                    ));
                }
            }
        }
        for (name, (_, _, gpus)) in &used {
            let mut sorted = gpus.clone();
            sorted.sort_unstable();
            sorted.dedup();
            if sorted.len() != gpus.len() {
                return Err(format!("node {name} gives one GPU to two running jobs"));
            }
        }
        Ok(())
    }

    /// What the running jobs use on each node.
    pub fn node_usage(&self) -> BTreeMap<String, NodeUsage> {
        let mut usage: BTreeMap<String, NodeUsage> = BTreeMap::new();
        for job in self.running_jobs() {
            for na in job.alloc.iter().flat_map(|a| &a.nodes) {
                let u = usage.entry(na.node.clone()).or_default();
                u.cpus += na.cpus;
                u.mem_mb += na.mem_mb;
                u.gpus.extend(&na.gpus);
                u.jobs += 1;
            }
        }
        usage
    }

    /// Job records not yet ended (pending, running, suspended or completing), as
    /// Slurm's MaxJobCount counts them: a pending array is one record until its tasks
    /// are split off.
    pub fn live_records(&self) -> usize {
        self.pending_ids.len() + self.running_ids.len()
    }

    /// Pending job records that are not held (what a scheduling pass considers).
    pub fn queued_records(&self) -> usize {
        self.queued_ids.len()
    }

    /// Jobs holding an allocation (running, suspended or completing).
    pub fn running_jobs(&self) -> impl Iterator<Item = &Job> {
        self.running_ids
            .iter()
            .filter_map(|id| self.job(*id))
            .filter(|j| {
                matches!(
                    j.state,
                    JobState::Running | JobState::Suspended | JobState::Completing
                )
            })
    }

    pub fn pending_jobs(&self) -> impl Iterator<Item = &Job> {
        self.pending_ids
            .iter()
            .filter_map(|id| self.job(*id))
            .filter(|j| j.state == JobState::Pending)
    }

    /// The pending jobs that are not held.
    pub fn queued_jobs(&self) -> impl Iterator<Item = &Job> {
        self.queued_ids
            .iter()
            .filter_map(|id| self.job(*id))
            .filter(|j| j.state == JobState::Pending && !j.held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::NodeAllocation;

    fn alloc(node: &str, cpus: u32) -> Allocation {
        Allocation {
            nodes: vec![NodeAllocation {
                node: node.into(),
                cpus,
                mem_mb: 100,
                gpus: vec![0],
                cpu_ids: Vec::new(),
            }],
        }
    }

    #[test]
    fn job_life_cycle() {
        let mut s = ClusterState::new(vec![Node::from_config("n1", 4, 1000, vec![])], vec![]);
        let job = Job::new(1, JobSpec::default(), 10, Some(5));
        s.apply(&Event::JobSubmitted { job: Box::new(job) });
        assert_eq!(s.next_job_id, 2);
        s.apply(&Event::JobStarted {
            job_id: 1,
            alloc: alloc("n1", 2),
            time: 11,
            stdout_path: "o".into(),
            stderr_path: "e".into(),
        });
        assert_eq!(s.node_usage()["n1"].cpus, 2);
        s.apply(&Event::JobEnded {
            job_id: 1,
            state: JobState::Completed,
            exit_code: 0,
            exit_signal: 0,
            time: 12,
            reason: Reason::None,
            cancelled_by: None,
        });
        let j = s.job(1).unwrap();
        assert_eq!(j.state, JobState::Completed);
        assert_eq!(j.steps[0].state, JobState::Completed);
        assert!(s.node_usage().is_empty());
    }

    #[test]
    fn held_jobs_leave_the_queue_and_their_plan() {
        let mut s = ClusterState::default();
        let held = JobSpec {
            hold: true,
            ..JobSpec::default()
        };
        s.apply(&Event::JobSubmitted {
            job: Box::new(Job::new(1, held, 10, None)),
        });
        s.apply(&Event::JobSubmitted {
            job: Box::new(Job::new(2, JobSpec::default(), 10, None)),
        });
        let queued = |s: &ClusterState| s.queued_jobs().map(|j| j.id).collect::<Vec<_>>();
        assert_eq!(queued(&s), vec![2]);
        assert_eq!(s.pending_jobs().count(), 2);
        s.apply(&Event::JobPendingReason {
            job_id: 2,
            reason: Reason::Resources,
            planned_start: 50,
            planned_nodes: "n1".into(),
        });
        for (id, held) in [(1, false), (2, true)] {
            s.apply(&Event::JobHeld {
                job_id: id,
                held,
                reason: if held {
                    Reason::JobHeldUser
                } else {
                    Reason::None
                },
            });
        }
        assert_eq!(queued(&s), vec![1]);
        let j = s.job(2).unwrap();
        assert_eq!((j.planned_start, j.planned_nodes.as_str()), (0, ""));
    }

    #[test]
    fn suspension_and_preemption_marks() {
        let mut s = ClusterState::new(vec![Node::from_config("n1", 4, 1000, vec![])], vec![]);
        s.apply(&Event::JobSubmitted {
            job: Box::new(Job::new(1, JobSpec::default(), 10, Some(5))),
        });
        s.apply(&Event::JobStarted {
            job_id: 1,
            alloc: alloc("n1", 2),
            time: 11,
            stdout_path: String::new(),
            stderr_path: String::new(),
        });
        s.apply(&Event::JobSuspended {
            job_id: 1,
            time: 20,
            preemptor: Some(7),
        });
        let j = s.job(1).unwrap();
        assert_eq!((j.state, j.suspend_time), (JobState::Suspended, 20));
        assert_eq!(j.preemption.as_ref().unwrap().preemptor, 7);
        // Still holding its allocation.
        assert_eq!(s.running_jobs().count(), 1);
        // Another preemptor claims it: the suspension keeps its start.
        s.apply(&Event::JobSuspended {
            job_id: 1,
            time: 25,
            preemptor: Some(8),
        });
        let j = s.job(1).unwrap();
        assert_eq!(
            (j.suspend_time, j.preemption.as_ref().unwrap().preemptor),
            (20, 8)
        );
        s.apply(&Event::JobResumed {
            job_id: 1,
            time: 30,
        });
        let j = s.job(1).unwrap();
        assert_eq!((j.state, j.suspended_secs), (JobState::Running, 10));
        assert!(j.preemption.is_none());
        // Preempted with REQUEUE: the mark stays on the requeued job (its preemptor
        // goes first), and a new start clears it.
        s.apply(&Event::JobPreempted {
            job_id: 1,
            preemptor: 9,
            mode: PreemptMode::Requeue,
            time: 40,
            grace_secs: 5,
        });
        assert_eq!(s.job(1).unwrap().preemption.as_ref().unwrap().grace_secs, 5);
        s.apply(&Event::JobRequeued {
            job_id: 1,
            time: 41,
            hold: false,
            special_exit: false,
            not_before: None,
        });
        let j = s.job(1).unwrap();
        assert_eq!(
            (j.state, j.restart_count, j.suspended_secs),
            (JobState::Pending, 1, 0)
        );
        assert_eq!(j.preemption.as_ref().unwrap().preemptor, 9);
        s.apply(&Event::JobStarted {
            job_id: 1,
            alloc: alloc("n1", 2),
            time: 50,
            stdout_path: String::new(),
            stderr_path: String::new(),
        });
        assert!(s.job(1).unwrap().preemption.is_none());
    }

    #[test]
    fn array_tasks_split_and_last_keeps_the_id() {
        let mut s = ClusterState::default();
        let spec = JobSpec {
            array: Some(crate::job::parse_array("0-1", 10).unwrap()),
            ..JobSpec::default()
        };
        s.apply(&Event::JobSubmitted {
            job: Box::new(Job::new(5, spec, 0, None)),
        });
        s.apply(&Event::ArrayTaskSplit {
            array_id: 5,
            task_id: 0,
            new_id: 6,
        });
        assert_eq!(s.job(6).unwrap().display_id(), "5_0");
        assert_eq!(s.job(5).unwrap().display_id(), "5_[1]");
        s.apply(&Event::JobStarted {
            job_id: 5,
            alloc: alloc("n1", 1),
            time: 1,
            stdout_path: String::new(),
            stderr_path: String::new(),
        });
        assert_eq!(s.job(5).unwrap().display_id(), "5_1");
        assert_eq!(s.next_job_id, 7);
    }

    /// `scancel 5` of a pending array ends the array's record, which still holds the
    /// tasks that never started (`5_[1-2]` CANCELLED in the accounting).
    #[test]
    fn a_cancelled_pending_array_keeps_a_valid_state() {
        let mut s = ClusterState::new(vec![Node::from_config("n1", 4, 1000, vec![])], vec![]);
        let spec = JobSpec {
            array: Some(crate::job::parse_array("0-2", 10).unwrap()),
            ..JobSpec::default()
        };
        s.apply(&Event::JobSubmitted {
            job: Box::new(Job::new(5, spec, 0, None)),
        });
        s.apply(&Event::ArrayTaskSplit {
            array_id: 5,
            task_id: 0,
            new_id: 6,
        });
        s.check_invariants().unwrap();
        s.apply(&Event::JobEnded {
            job_id: 5,
            state: JobState::Cancelled,
            exit_code: 0,
            exit_signal: 0,
            time: 3,
            reason: Reason::None,
            cancelled_by: Some(0),
        });
        assert_eq!(s.job(5).unwrap().display_id(), "5_[1-2]");
        assert_eq!(s.check_invariants(), Ok(()));
    }

    #[test]
    fn array_records_keep_their_pending_tasks_where_they_belong() {
        let mut s = ClusterState::default();
        let spec = JobSpec {
            array: Some(crate::job::parse_array("0-1", 10).unwrap()),
            ..JobSpec::default()
        };
        s.apply(&Event::JobSubmitted {
            job: Box::new(Job::new(5, spec, 0, None)),
        });
        s.check_invariants().unwrap();
        let mut empty = s.job(5).unwrap().clone();
        empty.pending_tasks.clear();
        let mut broken = s.clone();
        broken.insert_job(empty);
        assert!(
            broken
                .check_invariants()
                .unwrap_err()
                .contains("no pending tasks")
        );
        let mut task = s.job(5).unwrap().clone();
        task.array_task_id = Some(0);
        let mut broken = s.clone();
        broken.insert_job(task);
        assert!(
            broken
                .check_invariants()
                .unwrap_err()
                .contains("pending tasks")
        );
    }

    #[test]
    fn a_gpu_index_beyond_the_node_is_refused() {
        let gpus = (0..2)
            .map(|i| crate::GpuDevice::with_default_topology(i, 2, "h100"))
            .collect();
        let mut s = ClusterState::new(vec![Node::from_config("n1", 4, 1000, gpus)], vec![]);
        s.apply(&Event::JobSubmitted {
            job: Box::new(Job::new(1, JobSpec::default(), 0, None)),
        });
        let mut a = alloc("n1", 1);
        a.nodes[0].gpus = vec![1];
        let mut ok = s.clone();
        ok.apply(&Event::JobStarted {
            job_id: 1,
            alloc: a.clone(),
            time: 1,
            stdout_path: String::new(),
            stderr_path: String::new(),
        });
        assert_eq!(ok.check_invariants(), Ok(()));
        a.nodes[0].gpus = vec![2];
        s.apply(&Event::JobStarted {
            job_id: 1,
            alloc: a,
            time: 1,
            stdout_path: String::new(),
            stderr_path: String::new(),
        });
        assert_eq!(
            s.check_invariants(),
            Err("job 1 has GPU 2 of node n1, which has 2".into())
        );
    }
}
