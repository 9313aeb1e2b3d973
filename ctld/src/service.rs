//! The gRPC services: `Ctld` for clients and `NodeControl` for node daemons.
//!
//! Writes become `Input`s for the state owner and wait for its answer, which comes
//! only after the change is durable. Reads are answered from the latest published
//! snapshot, without going through the state owner.

use crate::core::{Input, Reply, job_matches, unix_now};
use crate::store::Store;
use model::{ClusterState, Config};
use proto::v1;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, watch};
use tonic::{Request, Response, Status};

#[derive(Clone)]
pub struct Services {
    pub inbox: mpsc::Sender<Input>,
    pub snapshot: watch::Receiver<Arc<ClusterState>>,
    pub store: Arc<Store>,
    pub config: Arc<Config>,
    /// Priority weights and associations, for the priority and fair-share reads.
    pub sched_config: Arc<sched::SchedConfig>,
}

impl Services {
    async fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> Input) -> Result<T, Status> {
        let (tx, rx) = oneshot::channel();
        self.inbox
            .send(make(tx))
            .await
            .map_err(|_| Status::unavailable("controller is shutting down"))?;
        rx.await
            .map_err(|_| Status::unavailable("controller is shutting down"))?
    }

    fn snapshot(&self) -> Arc<ClusterState> {
        self.snapshot.borrow().clone()
    }
}

/// Does the job carry one of the ids of the filter (`12` also names array 12's tasks,
/// `12_3` one task)?
fn id_matches(job: &model::Job, ids: &[String]) -> bool {
    ids.is_empty()
        || ids.iter().any(|text| {
            let text = text.trim();
            match text.split_once('_') {
                None => text
                    .parse::<u32>()
                    .ok()
                    .is_some_and(|id| job.id == id || job.array_job_id == id),
                Some((base, task)) => {
                    let base: u32 = base.parse().unwrap_or(0);
                    job.array_job_id == base
                        && task.parse::<u32>().ok().is_some_and(|t| {
                            job.array_task_id == Some(t) || job.pending_tasks.contains(&t)
                        })
                }
            }
        })
}

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
        let test_only = req.test_only;
        self.ask(|reply| Input::Submit {
            spec: Box::new(spec),
            payload,
            test_only,
            reply,
        })
        .await
        .map(Response::new)
    }

    async fn signal_jobs(
        &self,
        req: Request<v1::SignalJobsRequest>,
    ) -> Result<Response<v1::SignalJobsReply>, Status> {
        let req = req.into_inner();
        let results = self.ask(|reply| Input::Signal { req, reply }).await?;
        Ok(Response::new(v1::SignalJobsReply { results }))
    }

    async fn control_jobs(
        &self,
        req: Request<v1::ControlJobsRequest>,
    ) -> Result<Response<v1::ControlJobsReply>, Status> {
        let req = req.into_inner();
        let results = self.ask(|reply| Input::Control { req, reply }).await?;
        Ok(Response::new(v1::ControlJobsReply { results }))
    }

    async fn update_job(
        &self,
        req: Request<v1::UpdateJobRequest>,
    ) -> Result<Response<v1::UpdateJobReply>, Status> {
        let req = req.into_inner();
        let results = self.ask(|reply| Input::Update { req, reply }).await?;
        Ok(Response::new(v1::UpdateJobReply { results }))
    }

    async fn list_jobs(
        &self,
        req: Request<v1::ListJobsRequest>,
    ) -> Result<Response<v1::ListJobsReply>, Status> {
        let req = req.into_inner();
        let filter = req.filter.unwrap_or_default();
        let snap = self.snapshot();
        let now = unix_now();
        let min_age = i64::from(self.config.controller.min_job_age_s);
        let mut jobs = Vec::new();
        // Built on the first live job: the fair-share tree is not free.
        let mut priorities: Option<sched::priority::Context> = None;
        for job in snap.jobs.values() {
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
            if !id_matches(job, &filter.job_ids) || !job_matches(job, &filter) {
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
            let mut info = proto::convert::job_to_wire(job, payload.as_ref());
            if !job.state.is_final() {
                info.priority = priorities
                    .get_or_insert_with(|| {
                        sched::priority::Context::new(&snap, now, &self.sched_config)
                    })
                    .rank(job)
                    .1;
            }
            jobs.push(info);
        }
        Ok(Response::new(v1::ListJobsReply { jobs, now }))
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
        self.ask(|reply| Input::UpdateNodes { req, reply }).await?;
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
            })
            .collect();
        Ok(Response::new(v1::ListPartitionsReply { partitions }))
    }

    async fn get_config(
        &self,
        _req: Request<v1::GetConfigRequest>,
    ) -> Result<Response<v1::GetConfigReply>, Status> {
        Ok(Response::new(v1::GetConfigReply {
            cluster_name: self.config.cluster_name.clone(),
            entries: crate::config_entries(&self.config)
                .into_iter()
                .map(|(name, value)| v1::EnvVar { name, value })
                .collect(),
        }))
    }

    async fn create_step(
        &self,
        req: Request<v1::CreateStepRequest>,
    ) -> Result<Response<v1::CreateStepReply>, Status> {
        let req = req.into_inner();
        let job_id = req.job_id;
        let step_id = self.ask(|reply| Input::CreateStep { req, reply }).await?;
        let job = self
            .snapshot()
            .job(job_id)
            .map(|j| proto::convert::job_to_wire(j, None));
        Ok(Response::new(v1::CreateStepReply { step_id, job }))
    }

    async fn change_reservation(
        &self,
        req: Request<v1::ChangeReservationRequest>,
    ) -> Result<Response<v1::ChangeReservationReply>, Status> {
        let req = req.into_inner();
        let name = self
            .ask(|reply| Input::ChangeReservation { req, reply })
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
            job: Some(proto::convert::job_to_wire(job, None)),
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
        self.ask(|reply| Input::CompleteStep { req, reply }).await?;
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
        self.ask(|reply| Input::Register { req, reply })
            .await
            .map(Response::new)
    }

    async fn heartbeat(
        &self,
        req: Request<v1::HeartbeatRequest>,
    ) -> Result<Response<v1::HeartbeatReply>, Status> {
        let req = req.into_inner();
        self.ask(|reply| Input::Heartbeat { req, reply })
            .await
            .map(Response::new)
    }

    async fn job_finished(
        &self,
        req: Request<v1::JobFinishedRequest>,
    ) -> Result<Response<v1::JobFinishedReply>, Status> {
        let req = req.into_inner();
        self.ask(|reply| Input::JobFinished { req, reply }).await?;
        Ok(Response::new(v1::JobFinishedReply {}))
    }
}
