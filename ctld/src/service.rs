//! The gRPC services: `Ctld` for clients and `NodeControl` for node daemons.
//!
//! Writes become domain commands (`command`) for the state owner and wait for its
//! answer, which comes only after the change is durable. Wire values this controller
//! does not know (an operation, a kind of job end, a state name) are refused here.
//! Reads, and `sbatch --test-only`, are answered from the latest published snapshot,
//! without going through the state owner.

use crate::command::{self, Rejection};
use crate::core::{Input, Reply, unix_now};
use crate::store::Store;
use model::filter::JobFilter;
use model::{ClusterState, Config};
use proto::v1;
use std::sync::Arc;
use tokio::sync::{Semaphore, mpsc, oneshot, watch};
use tonic::{Request, Response, Status};

#[derive(Clone)]
pub struct Services {
    pub inbox: mpsc::Sender<Input>,
    pub snapshot: watch::Receiver<Arc<ClusterState>>,
    pub store: Arc<dyn Store>,
    pub config: Arc<Config>,
    /// Priority weights and associations, for the priority and fair-share reads.
    pub sched_config: Arc<sched::SchedConfig>,
    /// `--test-only` estimates run one at a time, off the state owner.
    pub estimates: Arc<Semaphore>,
}

/// A refusal as a gRPC status, the one place where that mapping is made.
pub fn status(r: Rejection) -> Status {
    let text = r.to_string();
    match r {
        Rejection::Invalid(_) => Status::invalid_argument(text),
        Rejection::NotFound(_) => Status::not_found(text),
        Rejection::PermissionDenied => Status::permission_denied(text),
        Rejection::WrongState(_) => Status::failed_precondition(text),
        Rejection::StoreFull(_) => Status::resource_exhausted(text),
        Rejection::ShuttingDown => Status::unavailable(text),
    }
}

fn results_to_wire(results: Vec<command::JobResult>) -> Vec<v1::JobResult> {
    results
        .into_iter()
        .map(|r| v1::JobResult {
            job_id: r.job_id,
            error: r.error.map(|e| e.to_string()).unwrap_or_default(),
        })
        .collect()
}

fn orders_to_wire(o: command::NodeOrders) -> Option<v1::NodeOrders> {
    Some(v1::NodeOrders {
        kill_jobs: o.kill,
        suspend_jobs: o.suspend,
        resume_jobs: o.resume,
    })
}

fn jobs_from_wire(jobs: Vec<v1::JobOnNode>) -> Vec<command::JobOnNode> {
    jobs.into_iter()
        .map(|j| command::JobOnNode {
            job_id: j.job_id,
            restart_count: j.restart_count,
            suspended: j.suspended,
            ending: j.ending,
        })
        .collect()
}

fn invalid(text: String) -> Status {
    Status::invalid_argument(text)
}

impl Services {
    /// Hands a command to the state owner and waits for its answer.
    async fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> Input) -> Result<T, Status> {
        let (tx, rx) = oneshot::channel();
        let gone = || status(Rejection::ShuttingDown);
        self.inbox.send(make(tx)).await.map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?.map_err(status)
    }

    fn snapshot(&self) -> Arc<ClusterState> {
        self.snapshot.borrow().clone()
    }
}

impl Services {
    /// The answer to `ListJobs`, from the latest snapshot: full records, or with
    /// `summary` squeue's light view (`JobSummary`) whose repeated strings are sent once.
    fn jobs_reply(&self, req: &v1::ListJobsRequest, filter: &JobFilter) -> v1::ListJobsReply {
        let mut whole = None;
        self.walk_jobs(req, filter, usize::MAX, &mut |reply| {
            whole = Some(reply);
            true
        });
        whole.unwrap_or_default()
    }

    /// Builds the answer to a job listing in chunks of at most `chunk` records, handing
    /// each to `emit` (which says whether to go on); at least one chunk is emitted.
    fn walk_jobs(
        &self,
        req: &v1::ListJobsRequest,
        job_filter: &JobFilter,
        chunk: usize,
        emit: &mut dyn FnMut(v1::ListJobsReply) -> bool,
    ) {
        let snap = self.snapshot();
        let now = unix_now();
        let min_age = i64::from(self.config.controller.min_job_age_s);
        // Without finished jobs, the walk starts at the oldest live job: it skips the
        // (older) finished jobs kept for sacct without a lookup per live job.
        let first = if req.include_finished {
            0
        } else {
            let oldest = |j: Option<&model::Job>| j.map_or(model::JobId::MAX, |j| j.id);
            oldest(snap.pending_jobs().next()).min(oldest(snap.running_jobs().next()))
        };
        let candidates = snap.jobs.range(first..).map(|(_, j)| j.as_ref());
        let mut reply = v1::ListJobsReply {
            now,
            ..Default::default()
        };
        let mut strings = proto::convert::StringTable::default();
        // Built on the first live job: the fair-share tree is not free.
        let mut priorities: Option<sched::priority::Context> = None;
        for job in candidates {
            if job.state.is_final() {
                if !req.include_finished {
                    continue;
                }
                if req.recent_finished_only && job.end_time < now - min_age {
                    continue;
                }
            }
            if req.window_start > 0 && job.end_time != 0 && job.end_time < req.window_start {
                continue;
            }
            if req.window_end > 0 && job.submit_time > req.window_end {
                continue;
            }
            if !job_filter.matches(job) {
                continue;
            }
            let priority = if job.state.is_final() {
                0
            } else {
                priorities
                    .get_or_insert_with(|| {
                        sched::priority::Context::new(&snap, now, &self.sched_config)
                    })
                    .rank(job)
                    .1
            };
            if reply.summaries.len() + reply.jobs.len() >= chunk {
                reply.strings = strings.take_new();
                let next = v1::ListJobsReply {
                    now,
                    ..Default::default()
                };
                if !emit(std::mem::replace(&mut reply, next)) {
                    return;
                }
            }
            if req.summary {
                let mut summary = proto::convert::job_to_summary(job, &mut strings, now);
                summary.priority = priority;
                reply.summaries.push(summary);
                continue;
            }
            let payload = if req.with_script || req.with_env {
                let own = self.store.payload(job.id).ok().flatten();
                let mut p = own
                    .or_else(|| self.store.payload(job.array_job_id).ok().flatten())
                    .unwrap_or_default();
                if !req.with_script {
                    p.script.clear();
                }
                if !req.with_env {
                    p.env.clear();
                }
                Some(p)
            } else {
                None
            };
            let mut info = proto::convert::job_to_wire(job, payload.as_ref(), now);
            info.priority = priority;
            reply.jobs.push(info);
        }
        reply.strings = strings.take_new();
        emit(reply);
    }
}

/// The filter of a listing, its ids and state names checked.
fn listing_filter(req: &v1::ListJobsRequest) -> Result<JobFilter, Status> {
    req.filter
        .as_ref()
        .map(proto::convert::filter_from_wire)
        .transpose()
        .map(Option::unwrap_or_default)
        .map_err(invalid)
}

/// Records per chunk of `ListJobSummaries`.
const SUMMARY_CHUNK: usize = 8192;

#[tonic::async_trait]
impl v1::ctld_server::Ctld for Services {
    async fn submit_job(
        &self,
        req: Request<v1::SubmitJobRequest>,
    ) -> Result<Response<v1::SubmitJobReply>, Status> {
        let req = req.into_inner();
        let spec = req
            .spec
            .ok_or_else(|| Status::invalid_argument("missing job spec"))?;
        let (spec, payload) = proto::convert::spec_from_wire(spec);
        let submit = command::Submit { spec, payload };
        let submitted = if req.test_only {
            // Off the state owner's turn: a pass over a copy of the snapshot, one
            // estimate at a time.
            let _turn = self
                .estimates
                .acquire()
                .await
                .map_err(|_| status(Rejection::ShuttingDown))?;
            let this = self.clone();
            tokio::task::spawn_blocking(move || {
                let snap = this.snapshot();
                crate::rules::jobs::estimate(
                    &snap,
                    &this.config,
                    &this.sched_config,
                    submit,
                    unix_now(),
                )
            })
            .await
            .map_err(|e| Status::internal(format!("estimate failed: {e}")))?
            .map_err(status)?
        } else {
            self.ask(|reply| Input::Submit(Box::new(submit), reply))
                .await?
        };
        Ok(Response::new(v1::SubmitJobReply {
            job_id: submitted.job_id,
            estimated_start: submitted.estimated_start,
            estimated_nodes: submitted.estimated_nodes,
            cluster_name: self.config.cluster_name.clone(),
        }))
    }

    async fn signal_jobs(
        &self,
        req: Request<v1::SignalJobsRequest>,
    ) -> Result<Response<v1::SignalJobsReply>, Status> {
        let req = req.into_inner();
        let mut wire_filter = req.filter.unwrap_or_default();
        // The ids are resolved one by one (each has its own result); the filter is
        // the rest.
        let job_ids = std::mem::take(&mut wire_filter.job_ids);
        let cmd = command::SignalJobs {
            filter: proto::convert::filter_from_wire(&wire_filter).map_err(invalid)?,
            job_ids,
            signal: req.signal,
            batch_only: req.batch_only,
            requester: req.requester_uid,
        };
        let results = self.ask(|reply| Input::Signal(cmd, reply)).await?;
        Ok(Response::new(v1::SignalJobsReply {
            results: results_to_wire(results),
        }))
    }

    async fn control_jobs(
        &self,
        req: Request<v1::ControlJobsRequest>,
    ) -> Result<Response<v1::ControlJobsReply>, Status> {
        use command::ControlOp as Op;
        let req = req.into_inner();
        let op = match v1::ControlOp::try_from(req.op) {
            Ok(v1::ControlOp::Hold) => Op::Hold,
            Ok(v1::ControlOp::Uhold) => Op::Uhold,
            Ok(v1::ControlOp::Release) => Op::Release,
            Ok(v1::ControlOp::Requeue) => Op::Requeue,
            Ok(v1::ControlOp::RequeueHold) => Op::RequeueHold,
            Ok(v1::ControlOp::Suspend) => Op::Suspend,
            Ok(v1::ControlOp::Resume) => Op::Resume,
            Err(_) => return Err(invalid(format!("unknown job operation {}", req.op))),
        };
        let cmd = command::ControlJobs {
            op,
            job_ids: req.job_ids,
            requester: req.requester_uid,
        };
        let results = self.ask(|reply| Input::Control(cmd, reply)).await?;
        Ok(Response::new(v1::ControlJobsReply {
            results: results_to_wire(results),
        }))
    }

    async fn update_job(
        &self,
        req: Request<v1::UpdateJobRequest>,
    ) -> Result<Response<v1::UpdateJobReply>, Status> {
        let req = req.into_inner();
        let cmd = command::UpdateJobs {
            job_ids: req.job_ids,
            fields: req.fields.into_iter().map(|f| (f.name, f.value)).collect(),
            requester: req.requester_uid,
        };
        let results = self.ask(|reply| Input::Update(cmd, reply)).await?;
        Ok(Response::new(v1::UpdateJobReply {
            results: results_to_wire(results),
        }))
    }

    async fn list_jobs(
        &self,
        req: Request<v1::ListJobsRequest>,
    ) -> Result<Response<v1::ListJobsReply>, Status> {
        let req = req.into_inner();
        let filter = listing_filter(&req)?;
        // A large queue takes a while to walk: off the async workers, so that submits
        // and node reports keep flowing meanwhile.
        let this = self.clone();
        tokio::task::spawn_blocking(move || this.jobs_reply(&req, &filter))
            .await
            .map(Response::new)
            .map_err(|e| Status::internal(format!("listing jobs failed: {e}")))
    }

    type ListJobSummariesStream =
        tonic::codegen::tokio_stream::wrappers::ReceiverStream<Result<v1::ListJobsReply, Status>>;

    async fn list_job_summaries(
        &self,
        req: Request<v1::ListJobsRequest>,
    ) -> Result<Response<Self::ListJobSummariesStream>, Status> {
        let mut req = req.into_inner();
        req.summary = true;
        let filter = listing_filter(&req)?;
        // Built off the async workers; a few chunks ahead of the network at most.
        let (tx, rx) = mpsc::channel(4);
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            this.walk_jobs(&req, &filter, SUMMARY_CHUNK, &mut |chunk| {
                tx.blocking_send(Ok(chunk)).is_ok()
            });
        });
        Ok(Response::new(
            tonic::codegen::tokio_stream::wrappers::ReceiverStream::new(rx),
        ))
    }

    async fn list_nodes(
        &self,
        req: Request<v1::ListNodesRequest>,
    ) -> Result<Response<v1::ListNodesReply>, Status> {
        let req = req.into_inner();
        let snap = self.snapshot();
        let usage = snap.node_usage();
        let empty = model::NodeUsage::default();
        let nodes = snap
            .nodes
            .values()
            .filter(|n| req.names.is_empty() || req.names.contains(&n.name))
            .map(|n| {
                let parts = snap
                    .partitions
                    .iter()
                    .filter(|p| p.nodes.contains(&n.name))
                    .map(|p| p.name.clone())
                    .collect();
                proto::convert::node_to_wire(n, usage.get(&n.name).unwrap_or(&empty), parts)
            })
            .collect();
        Ok(Response::new(v1::ListNodesReply { nodes }))
    }

    async fn update_nodes(
        &self,
        req: Request<v1::UpdateNodesRequest>,
    ) -> Result<Response<v1::UpdateNodesReply>, Status> {
        let req = req.into_inner();
        let action = match req.state.to_ascii_uppercase().as_str() {
            "DRAIN" => command::NodeAction::Drain,
            "DOWN" => command::NodeAction::Down,
            "RESUME" | "IDLE" | "UNDRAIN" => command::NodeAction::Resume,
            other => return Err(invalid(format!("Invalid node state specified: {other}"))),
        };
        let cmd = command::UpdateNodes {
            nodes: req.nodes,
            action,
            reason: req.reason,
            requester: req.requester_uid,
        };
        self.ask(|reply| Input::UpdateNodes(cmd, reply)).await?;
        Ok(Response::new(v1::UpdateNodesReply {}))
    }

    async fn list_partitions(
        &self,
        _req: Request<v1::ListPartitionsRequest>,
    ) -> Result<Response<v1::ListPartitionsReply>, Status> {
        let snap = self.snapshot();
        let partitions = snap
            .partitions
            .iter()
            .map(|p| v1::PartitionInfo {
                name: p.name.clone(),
                nodes: model::hostlist::fold(&p.nodes),
                is_default: p.is_default,
                max_time_min: p.max_time_min.unwrap_or(0),
                default_time_min: p.default_time_min.unwrap_or(0),
                state: p.state.clone(),
                total_cpus: p
                    .nodes
                    .iter()
                    .filter_map(|n| snap.nodes.get(n))
                    .map(|n| n.cpus)
                    .sum(),
                total_nodes: p.nodes.len() as u32,
                max_nodes: p.max_nodes,
                priority_job_factor: p.priority_job_factor,
                priority_tier: p.priority_tier,
                allow_accounts: p.allow_accounts.join(","),
                deny_accounts: p.deny_accounts.join(","),
                allow_qos: p.allow_qos.join(","),
                oversubscribe: p.oversubscribe.clone(),
            })
            .collect();
        Ok(Response::new(v1::ListPartitionsReply { partitions }))
    }

    async fn get_config(
        &self,
        _req: Request<v1::GetConfigRequest>,
    ) -> Result<Response<v1::GetConfigReply>, Status> {
        Ok(Response::new(proto::convert::config_to_wire(&self.config)))
    }

    async fn create_step(
        &self,
        req: Request<v1::CreateStepRequest>,
    ) -> Result<Response<v1::CreateStepReply>, Status> {
        let req = req.into_inner();
        let job_id = req.job_id;
        let cmd = command::CreateStep {
            job_id,
            name: req.name,
            num_tasks: req.num_tasks,
            requester: req.requester_uid,
        };
        let step_id = self.ask(|reply| Input::CreateStep(cmd, reply)).await?;
        let job = self
            .snapshot()
            .job(job_id)
            .map(|j| proto::convert::job_to_wire(j, None, unix_now()));
        Ok(Response::new(v1::CreateStepReply { step_id, job }))
    }

    async fn change_reservation(
        &self,
        req: Request<v1::ChangeReservationRequest>,
    ) -> Result<Response<v1::ChangeReservationReply>, Status> {
        let req = req.into_inner();
        let op = match v1::ReservationOp::try_from(req.op) {
            Ok(v1::ReservationOp::Create) => command::ReservationOp::Create,
            Ok(v1::ReservationOp::Update) => command::ReservationOp::Update,
            Ok(v1::ReservationOp::Delete) => command::ReservationOp::Delete,
            Err(_) => return Err(invalid(format!("unknown reservation operation {}", req.op))),
        };
        let cmd = command::ChangeReservation {
            op,
            fields: req.fields.into_iter().map(|f| (f.name, f.value)).collect(),
            requester: req.requester_uid,
        };
        let name = self
            .ask(|reply| Input::ChangeReservation(cmd, reply))
            .await?;
        Ok(Response::new(v1::ChangeReservationReply { name }))
    }

    async fn explain_job(
        &self,
        req: Request<v1::ExplainJobRequest>,
    ) -> Result<Response<v1::ExplainJobReply>, Status> {
        let id = req.into_inner().job_id;
        let snap = self.snapshot();
        let job = snap
            .job(id)
            .ok_or_else(|| Status::not_found("Invalid job id specified"))?;
        let blockers = sched::explain::explain(&snap, unix_now(), &self.sched_config, id)
            .into_iter()
            .map(|b| v1::Blocker {
                text: b.text,
                clears_at: b.clears_at,
            })
            .collect();
        Ok(Response::new(v1::ExplainJobReply {
            job: Some(proto::convert::job_to_wire(job, None, unix_now())),
            blockers,
        }))
    }

    async fn list_reservations(
        &self,
        _req: Request<v1::ListReservationsRequest>,
    ) -> Result<Response<v1::ListReservationsReply>, Status> {
        let snap = self.snapshot();
        let now = unix_now();
        let reservations = snap
            .reservations
            .values()
            .map(|r| crate::reservations::to_wire(&snap, r, now))
            .collect();
        Ok(Response::new(v1::ListReservationsReply { reservations }))
    }

    async fn get_priorities(
        &self,
        req: Request<v1::GetPrioritiesRequest>,
    ) -> Result<Response<v1::GetPrioritiesReply>, Status> {
        let req = req.into_inner();
        let snap = self.snapshot();
        let now = unix_now();
        let jobs = sched::priority::pending_factors(&snap, now, &self.sched_config)
            .iter()
            .filter(|f| req.job_ids.is_empty() || req.job_ids.contains(&f.job_id))
            .filter(|f| {
                req.users.is_empty()
                    || req
                        .users
                        .iter()
                        .any(|u| *u == f.user || u.parse::<u32>().ok() == Some(f.uid))
            })
            .filter(|f| req.partitions.is_empty() || req.partitions.contains(&f.partition))
            .map(proto::convert::factors_to_wire)
            .collect();
        Ok(Response::new(v1::GetPrioritiesReply {
            weights: Some(proto::convert::weights_to_wire(&self.config.priority)),
            jobs,
        }))
    }

    async fn get_shares(
        &self,
        _req: Request<v1::GetSharesRequest>,
    ) -> Result<Response<v1::GetSharesReply>, Status> {
        let snap = self.snapshot();
        let tree = sched::fairshare::ShareTree::compute(&snap, unix_now(), &self.sched_config);
        Ok(Response::new(v1::GetSharesReply {
            algorithm: tree.algorithm.name().to_string(),
            shares: tree
                .rows
                .iter()
                .map(proto::convert::share_to_wire)
                .collect(),
        }))
    }

    async fn complete_step(
        &self,
        req: Request<v1::CompleteStepRequest>,
    ) -> Result<Response<v1::CompleteStepReply>, Status> {
        let req = req.into_inner();
        let cmd = command::CompleteStep {
            job_id: req.job_id,
            step_id: req.step_id,
            exit_code: req.exit_code,
            exit_signal: req.exit_signal,
        };
        self.ask(|reply| Input::CompleteStep(cmd, reply)).await?;
        Ok(Response::new(v1::CompleteStepReply {}))
    }
}

#[tonic::async_trait]
impl v1::node_control_server::NodeControl for Services {
    async fn register(
        &self,
        req: Request<v1::RegisterRequest>,
    ) -> Result<Response<v1::RegisterReply>, Status> {
        let req = req.into_inner();
        let reg = command::Registration {
            node: req.node_name,
            addr: req.agent_addr,
            cpus: req.cpus,
            memory_mb: req.memory_mb,
            gpus: req
                .gpus
                .into_iter()
                .map(proto::convert::gpu_from_wire)
                .collect(),
            features: req.features,
            boot_time: req.boot_time,
            jobs: jobs_from_wire(req.jobs),
        };
        let orders = self.ask(|reply| Input::Register(reg, reply)).await?;
        Ok(Response::new(v1::RegisterReply {
            heartbeat_interval_ms: self.config.controller.heartbeat_interval_ms,
            orders: orders_to_wire(orders),
        }))
    }

    async fn heartbeat(
        &self,
        req: Request<v1::HeartbeatRequest>,
    ) -> Result<Response<v1::HeartbeatReply>, Status> {
        let req = req.into_inner();
        let hb = command::Heartbeat {
            node: req.node_name,
            jobs: jobs_from_wire(req.jobs),
        };
        let orders = self.ask(|reply| Input::Heartbeat(hb, reply)).await?;
        Ok(Response::new(v1::HeartbeatReply {
            register_again: orders.register_again,
            orders: orders_to_wire(orders),
        }))
    }

    async fn job_finished(
        &self,
        req: Request<v1::JobFinishedRequest>,
    ) -> Result<Response<v1::JobFinishedReply>, Status> {
        use command::EndKind;
        let req = req.into_inner();
        let kind = match v1::FinishKind::try_from(req.kind) {
            Ok(v1::FinishKind::Exited) => EndKind::Exited,
            Ok(v1::FinishKind::Cancelled) => EndKind::Cancelled,
            Ok(v1::FinishKind::Timeout) => EndKind::Timeout,
            Ok(v1::FinishKind::OutOfMemory) => EndKind::OutOfMemory,
            Ok(v1::FinishKind::LaunchFailed) => EndKind::LaunchFailed,
            Err(_) => return Err(invalid(format!("unknown kind of job end {}", req.kind))),
        };
        let end = command::JobEnd {
            node: req.node_name,
            job_id: req.job_id,
            restart_count: req.restart_count,
            kind,
            exit_code: req.exit_code,
            exit_signal: req.exit_signal,
            end_time: req.end_time,
            message: req.message,
        };
        self.ask(|reply| Input::JobFinished(end, reply)).await?;
        Ok(Response::new(v1::JobFinishedReply {}))
    }
}

#[cfg(test)]
mod tests {
    //! The front's conversions, in process: a snapshot to read, a store that keeps
    //! nothing, and an inbox nobody reads (a refused request never reaches it).
    use super::*;
    use crate::store::{Batch, StoreError};
    use model::{Job, JobPayload, JobSpec, Restored};
    use v1::ctld_server::Ctld;
    use v1::node_control_server::NodeControl;

    struct NoStore;

    impl Store for NoStore {
        fn load(&self) -> Result<Restored, StoreError> {
            Ok(Restored::default())
        }
        fn payload(&self, _: model::JobId) -> Result<Option<JobPayload>, StoreError> {
            Ok(None)
        }
        fn commit(&self, _: Batch) -> Result<(), StoreError> {
            Ok(())
        }
    }

    /// Services over a state of an array 12 (tasks 1 and 2 split off, 3-5 pending) and
    /// a job 20; the inbox's receiver, to see what reached the state owner.
    fn services() -> (Services, mpsc::Receiver<Input>) {
        let config = Config::parse("", "t.toml").unwrap();
        let mut state = ClusterState::new(vec![], vec![]);
        let spec = JobSpec {
            array: Some(model::job::parse_array("1-5", 100).unwrap()),
            ..JobSpec::default()
        };
        state.apply(&model::Event::JobSubmitted {
            job: Box::new(Job::new(12, spec, 1, None)),
        });
        for (task, new_id) in [(1, 13), (2, 14)] {
            state.apply(&model::Event::ArrayTaskSplit {
                array_id: 12,
                task_id: task,
                new_id,
            });
        }
        state.apply(&model::Event::JobSubmitted {
            job: Box::new(Job::new(20, JobSpec::default(), 1, None)),
        });
        let (inbox, rx) = mpsc::channel(8);
        let (_, snapshot) = watch::channel(Arc::new(state));
        let services = Services {
            inbox,
            snapshot,
            store: Arc::new(NoStore),
            sched_config: Arc::new(sched::SchedConfig::from_config(&config)),
            config: Arc::new(config),
            estimates: Arc::new(Semaphore::new(1)),
        };
        (services, rx)
    }

    async fn listed(s: &Services, ids: &[&str]) -> Result<Vec<String>, Status> {
        let req = v1::ListJobsRequest {
            filter: Some(v1::JobFilter {
                job_ids: ids.iter().map(|i| i.to_string()).collect(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let reply = s.list_jobs(Request::new(req)).await?.into_inner();
        Ok(reply
            .jobs
            .iter()
            .map(|j| match j.array_task_id {
                Some(t) => format!("{}_{t}", j.array_job_id),
                None if j.array_job_id != 0 => format!("{}_[{}]", j.array_job_id, j.array_task_str),
                None => j.job_id.to_string(),
            })
            .collect())
    }

    #[tokio::test]
    async fn the_listing_filter_knows_every_job_id_form() {
        let (s, _rx) = services();
        assert_eq!(
            listed(&s, &["12_[1-3]"]).await.unwrap(),
            ["12_[3-5]", "12_1", "12_2"]
        );
        assert_eq!(listed(&s, &["12_2"]).await.unwrap(), ["12_2"]);
        assert_eq!(
            listed(&s, &["12_4", "20"]).await.unwrap(),
            ["12_[3-5]", "20"]
        );
        assert_eq!(listed(&s, &["12"]).await.unwrap().len(), 3);
        assert_eq!(listed(&s, &["12_*"]).await.unwrap().len(), 3);
        let bad = listed(&s, &["12_x"]).await.unwrap_err();
        assert_eq!(bad.code(), tonic::Code::InvalidArgument);
        let states = v1::ListJobsRequest {
            filter: Some(v1::JobFilter {
                states: vec!["BOGUS".into()],
                ..Default::default()
            }),
            ..Default::default()
        };
        let bad = s.list_jobs(Request::new(states)).await.unwrap_err();
        assert_eq!(bad.code(), tonic::Code::InvalidArgument);
    }

    #[tokio::test]
    async fn unknown_operations_and_kinds_of_job_end_are_refused() {
        let (s, mut rx) = services();
        let hold = v1::ControlJobsRequest {
            op: 99,
            job_ids: vec!["20".into()],
            requester_uid: 0,
        };
        let refused = s.control_jobs(Request::new(hold)).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument);
        let end = v1::JobFinishedRequest {
            node_name: "n1".into(),
            job_id: 20,
            kind: 99,
            ..Default::default()
        };
        let refused = s.job_finished(Request::new(end)).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument);
        let reservation = v1::ChangeReservationRequest {
            op: 7,
            ..Default::default()
        };
        let refused = s
            .change_reservation(Request::new(reservation))
            .await
            .unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument);
        // None of them reached the state owner.
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn refusals_map_to_grpc_codes() {
        let code = |r| status(r).code();
        assert_eq!(code(Rejection::invalid("x")), tonic::Code::InvalidArgument);
        assert_eq!(
            code(Rejection::PermissionDenied),
            tonic::Code::PermissionDenied
        );
        assert_eq!(
            code(Rejection::StoreFull("1 MB free".into())),
            tonic::Code::ResourceExhausted
        );
        assert!(
            status(Rejection::StoreFull("1 MB free".into()))
                .message()
                .starts_with("state store full")
        );
    }
}
