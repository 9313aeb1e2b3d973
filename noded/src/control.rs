//! The daemon's side of `NodeControl`: register with the controller (retrying with
//! backoff until it answers), heartbeat at the interval it asks for, register again when
//! it asks or after a failed heartbeat. Each registration and heartbeat reports the
//! jobs this node has, and is answered with the orders that make them match the
//! controller's durable state: jobs to kill, to suspend, to resume.

use crate::backoff::Backoff;
use crate::inventory::NodeResources;
use crate::jobs::Jobs;
use model::JobId;
use proto::v1::node_control_client::NodeControlClient;
use proto::v1::{HeartbeatRequest, NodeOrders, RegisterReply, RegisterRequest};
use std::sync::Arc;
use std::time::Duration;
use tonic::transport::Channel;
use tracing::{debug, info, warn};

/// The controller's `NodeControl` service, every call signed as this node's.
pub type Controller = NodeControlClient<auth::Signed<Channel>>;

/// What this node tells the controller at registration, besides its running jobs.
#[derive(Debug, Clone)]
pub struct Registration {
    pub node_name: String,
    /// host:port of this node's `NodeAgent` service.
    pub agent_addr: String,
    pub resources: NodeResources,
    pub boot_time: i64,
}

/// Registers and heartbeats forever.
pub async fn run(
    jobs: Arc<Jobs>,
    mut ctld: Controller,
    reg: Registration,
    default_interval: Duration,
    health: Arc<crate::health::Health>,
) {
    loop {
        let reply = register(&jobs, &mut ctld, &reg).await;
        obey(&jobs, reply.orders.unwrap_or_default()).await;
        let interval = match reply.heartbeat_interval_ms {
            0 => default_interval,
            ms => Duration::from_millis(u64::from(ms)),
        };
        loop {
            tokio::time::sleep(interval).await;
            let req = HeartbeatRequest {
                node_name: reg.node_name.clone(),
                jobs: jobs.on_node(),
                unhealthy: health.unhealthy(),
                load: crate::procfs::load().map(proto::convert::load_to_wire),
            };
            match ctld.heartbeat(req).await {
                Ok(reply) => {
                    let reply = reply.into_inner();
                    obey(&jobs, reply.orders.unwrap_or_default()).await;
                    if reply.register_again {
                        info!("controller asks this node to register again");
                        break;
                    }
                }
                Err(s) => {
                    warn!(code = ?s.code(), error = s.message(), "heartbeat failed; registering again");
                    break;
                }
            }
        }
    }
}

/// Registers, retrying with backoff until the controller answers.
async fn register(jobs: &Jobs, ctld: &mut Controller, reg: &Registration) -> RegisterReply {
    let mut backoff = Backoff::default();
    let mut failures = 0u32;
    loop {
        let report = jobs.on_node();
        let req = RegisterRequest {
            node_name: reg.node_name.clone(),
            agent_addr: reg.agent_addr.clone(),
            cpus: reg.resources.cpus,
            memory_mb: reg.resources.memory_mb,
            gpus: reg
                .resources
                .gpus
                .iter()
                .map(proto::convert::gpu_to_wire)
                .collect(),
            jobs: report.clone(),
            boot_time: reg.boot_time,
            features: reg.resources.features.clone(),
            numa_nodes: proto::convert::numa_cpus_to_wire(&reg.resources.numa_cpus),
            load: crate::procfs::load().map(proto::convert::load_to_wire),
        };
        match ctld.register(req).await {
            Ok(reply) => {
                let ids: Vec<JobId> = report.iter().map(|j| j.job_id).collect();
                info!(jobs = ?ids, agent_addr = %reg.agent_addr, "registered with the controller");
                jobs.set_registered();
                return reply.into_inner();
            }
            Err(s) => {
                failures += 1;
                if failures == 1 {
                    warn!(code = ?s.code(), error = s.message(), "cannot register with the controller; retrying");
                } else {
                    debug!(code = ?s.code(), failures, "registration failed");
                }
                tokio::time::sleep(backoff.next_delay()).await;
            }
        }
    }
}

/// Carries out the controller's orders.
async fn obey(jobs: &Jobs, orders: NodeOrders) {
    for job_id in orders.kill_jobs {
        if jobs.cancel(job_id) {
            info!(job_id, "controller asks to kill job");
        } else {
            debug!(job_id, "controller asks to kill a job not running here");
        }
    }
    for (ids, resume) in [(orders.suspend_jobs, false), (orders.resume_jobs, true)] {
        for job_id in ids {
            info!(job_id, resume, "controller asks to suspend or resume job");
            jobs.suspend(job_id, resume).await;
        }
    }
}
