//! Carrying out a plan: the events that turn a [`Plan`] into state, for the controller
//! and the simulator alike.
//!
//! Each event is applied to the state as it is made, so that the next one sees it: an
//! array's task that starts is split off into a record of its own first (with the next
//! free id), unless it is the array's last pending task, which keeps the array's
//! record. Example: array 5 with pending tasks {0, 1} and a plan starting task 0 gives
//! `ArrayTaskSplit { array 5, task 0, new id 6 }`, then `JobStarted { 6 }`; a later
//! plan starting task 1 gives `JobStarted { 5 }` (5 becomes `5_1`).
//!
//! Preemption: a SUSPEND victim is suspended; a CANCEL or REQUEUE victim is marked
//! preempted, and without a grace time its kill is requested at once (with one, the
//! controller requests it when the grace time is over). Pending reasons are separate
//! ([`Plan::pending_reason_events`]): the simulator does not keep them.

use crate::Plan;
use model::{ClusterState, Event, JobState, KillCause, KillRequest, PreemptMode, Time};

impl Plan {
    /// Applies the plan's starts, cancels, resumes and preemptions to `state` as
    /// events, and returns them in the order applied.
    pub fn apply(&self, state: &mut ClusterState, now: Time) -> Vec<Event> {
        let mut events = Vec::new();
        let mut emit = |state: &mut ClusterState, event: Event| {
            state.apply(&event);
            events.push(event);
        };
        for start in &self.starts {
            let mut id = start.job_id;
            if let Some(task) = start.array_task
                && state
                    .job(id)
                    .is_some_and(|j| j.is_array_meta() && j.pending_tasks.len() > 1)
            {
                let new_id = state.next_job_id;
                emit(
                    state,
                    Event::ArrayTaskSplit {
                        array_id: id,
                        task_id: task,
                        new_id,
                    },
                );
                id = new_id;
            }
            if let Some(partition) = &start.partition {
                emit(
                    state,
                    Event::JobPartitionChosen {
                        job_id: id,
                        partition: partition.clone(),
                    },
                );
            }
            let Some(job) = state.job(id) else {
                continue;
            };
            let node = start
                .alloc
                .nodes
                .first()
                .map(|n| n.node.as_str())
                .unwrap_or("");
            let (stdout_path, stderr_path) = if job.is_array_meta() {
                // The last pending task keeps the array's record: its paths are the task's.
                let mut task = job.clone();
                task.array_task_id = task.pending_tasks.first().copied();
                model::pattern::batch_output_paths(&task, node)
            } else {
                model::pattern::batch_output_paths(job, node)
            };
            emit(
                state,
                Event::JobStarted {
                    job_id: id,
                    alloc: start.alloc.clone(),
                    time: now,
                    stdout_path,
                    stderr_path,
                },
            );
        }
        for cancel in &self.cancels {
            emit(
                state,
                Event::JobEnded {
                    job_id: cancel.job_id,
                    // A job past its deadline ends DEADLINE, as Slurm's.
                    state: if cancel.reason == model::Reason::DeadLine {
                        JobState::Deadline
                    } else {
                        JobState::Cancelled
                    },
                    exit_code: 0,
                    exit_signal: 0,
                    time: now,
                    reason: cancel.reason,
                    cancelled_by: None,
                },
            );
        }
        for &job_id in &self.resumes {
            emit(state, Event::JobResumed { job_id, time: now });
        }
        for p in &self.preempts {
            let Some(victim) = state.job(p.job_id).map(|j| j.state) else {
                continue;
            };
            match p.mode {
                PreemptMode::Suspend => emit(
                    state,
                    Event::JobSuspended {
                        job_id: p.job_id,
                        time: now,
                        preemptor: Some(p.preemptor),
                    },
                ),
                PreemptMode::Cancel | PreemptMode::Requeue if victim == JobState::Running => {
                    emit(
                        state,
                        Event::JobPreempted {
                            job_id: p.job_id,
                            preemptor: p.preemptor,
                            mode: p.mode,
                            time: now,
                            grace_secs: p.grace_secs,
                        },
                    );
                    if p.grace_secs == 0 {
                        emit(
                            state,
                            Event::JobKillRequested {
                                job_id: p.job_id,
                                request: KillRequest {
                                    cause: KillCause::Preempt,
                                    time: now,
                                },
                            },
                        );
                    }
                }
                _ => {}
            }
        }
        events
    }

    /// The scheduler's reason, planned start and nodes of every pending job whose
    /// record says otherwise; and the eligibility of each job not yet recorded as
    /// eligible that is now, at the time the priority's age counts from
    /// (`priority::eligible_since`).
    pub fn pending_reason_events(&self, state: &ClusterState, now: Time) -> Vec<Event> {
        let eligible = self.pending.keys().filter_map(|id| {
            let job = state.job(*id).filter(|j| j.eligible_time == 0)?;
            let time = crate::priority::eligible_since(state, job, now)?;
            Some(Event::JobEligible { job_id: *id, time })
        });
        let reasons: Vec<Event> = self
            .pending
            .iter()
            .filter(|(id, pending)| {
                state.job(**id).is_some_and(|j| {
                    j.reason != pending.reason
                        || j.planned_start != pending.planned_start
                        || j.planned_nodes != pending.planned_nodes
                })
            })
            .map(|(id, pending)| Event::JobPendingReason {
                job_id: *id,
                reason: pending.reason,
                planned_start: pending.planned_start,
                planned_nodes: pending.planned_nodes.clone(),
            })
            .collect();
        eligible.chain(reasons).collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::submit;
    use crate::{Plan, Start};
    use model::{Allocation, ClusterState, Event, NodeAllocation};

    fn on(node: &str) -> Allocation {
        Allocation {
            nodes: vec![NodeAllocation {
                node: node.into(),
                cpus: 1,
                mem_mb: 0,
                gpus: vec![],
                cpu_ids: vec![],
            }],
        }
    }

    #[test]
    fn a_job_becomes_eligible_when_its_dependency_is_met() {
        let mut state = ClusterState::new(vec![], vec![]);
        submit(&mut state, 4, |_| {});
        submit(&mut state, 5, |spec| spec.dependency = "afterok:4".into());
        assert_eq!(state.job(4).unwrap().eligible_time, 4);
        assert_eq!(state.job(5).unwrap().eligible_time, 0);
        let waiting = Plan {
            pending: [(
                5,
                crate::Pending {
                    reason: model::Reason::Dependency,
                    planned_start: 0,
                    planned_nodes: String::new(),
                },
            )]
            .into(),
            ..Plan::default()
        };
        let eligible = |state: &ClusterState, now| {
            waiting
                .pending_reason_events(state, now)
                .into_iter()
                .filter(|e| matches!(e, Event::JobEligible { .. }))
                .collect::<Vec<_>>()
        };
        assert!(eligible(&state, 50).is_empty());
        state.apply(&Event::JobStarted {
            job_id: 4,
            alloc: on("n1"),
            time: 20,
            stdout_path: String::new(),
            stderr_path: String::new(),
        });
        state.apply(&Event::JobEnded {
            job_id: 4,
            state: model::JobState::Completed,
            exit_code: 0,
            exit_signal: 0,
            time: 40,
            reason: model::Reason::None,
            cancelled_by: None,
        });
        // Eligible since the dependency was met (job 4 ended at 40), as the
        // priority's age counts it, whenever the pass sees it.
        let events = eligible(&state, 60);
        assert_eq!(
            events,
            [Event::JobEligible {
                job_id: 5,
                time: 40
            }]
        );
        state.apply(&events[0]);
        assert_eq!(state.job(5).unwrap().eligible_time, 40);
        // Once set, kept.
        assert!(eligible(&state, 70).is_empty());
    }

    #[test]
    fn array_tasks_are_split_off_and_the_last_keeps_the_record() {
        let mut state = ClusterState::new(
            vec![model::Node::from_config("n1", 4, 1000, vec![])],
            vec![],
        );
        submit(&mut state, 5, |spec| {
            spec.array = Some(model::job::parse_array("0-1", 10).unwrap());
            spec.stdout_pattern = "out-%A_%a".into();
        });
        let start = |task| Plan {
            starts: vec![Start {
                partition: None,
                job_id: 5,
                array_task: Some(task),
                alloc: on("n1"),
            }],
            ..Plan::default()
        };
        let events = start(0).apply(&mut state, 10);
        assert!(matches!(
            events[0],
            Event::ArrayTaskSplit {
                array_id: 5,
                task_id: 0,
                new_id: 6
            }
        ));
        assert!(
            matches!(&events[1], Event::JobStarted { job_id: 6, stdout_path, .. } if stdout_path == "out-5_0")
        );
        let events = start(1).apply(&mut state, 11);
        assert_eq!(events.len(), 1);
        assert!(
            matches!(&events[0], Event::JobStarted { job_id: 5, stdout_path, .. } if stdout_path == "out-5_1")
        );
        assert_eq!(state.job(5).unwrap().display_id(), "5_1");
        state.check_invariants().unwrap();
    }
}
