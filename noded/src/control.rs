//! The daemon's side of `NodeControl`: register with the controller (retrying with
//! backoff until it answers), heartbeat at the interval it asks for, register again when
//! it asks or after a failed heartbeat, and cancel the jobs it lists in `kill_jobs`.

use crate::backoff::Backoff;
use crate::inventory::NodeResources;
use crate::jobs::Jobs;
use model::JobId;
use proto::v1::node_control_client::NodeControlClient;
use proto::v1::{HeartbeatRequest, RegisterReply, RegisterRequest};
use std::sync::Arc;
use std::time::Duration;
use tonic::transport::Channel;
use tracing::{debug, info, warn};

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
    mut ctld: NodeControlClient<Channel>,
    reg: Registration,
    default_interval: Duration,
) {
    loop {
        let reply = register(&jobs, &mut ctld, &reg).await;
        kill_jobs(&jobs, &reply.kill_jobs);
        let interval = match reply.heartbeat_interval_ms {
            0 => default_interval,
            ms => Duration::from_millis(u64::from(ms)),
        };
        loop {
            tokio::time::sleep(interval).await;
            let req = HeartbeatRequest {
                node_name: reg.node_name.clone(),
                running_jobs: jobs.running(),
            };
            match ctld.heartbeat(req).await {
                Ok(reply) => {
                    let reply = reply.into_inner();
                    kill_jobs(&jobs, &reply.kill_jobs);
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
async fn register(
    jobs: &Jobs,
    ctld: &mut NodeControlClient<Channel>,
    reg: &Registration,
) -> RegisterReply {
    let mut backoff = Backoff::default();
    let mut failures = 0u32;
    loop {
        let running = jobs.running();
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
            running_jobs: running.clone(),
            boot_time: reg.boot_time,
            features: reg.resources.features.clone(),
        };
        match ctld.register(req).await {
            Ok(reply) => {
                info!(running_jobs = ?running, agent_addr = %reg.agent_addr, "registered with the controller");
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

fn kill_jobs(jobs: &Jobs, ids: &[JobId]) {
    for &job_id in ids {
        if jobs.cancel(job_id) {
            info!(job_id, "controller asks to kill job");
        } else {
            debug!(job_id, "controller asks to kill a job not running here");
        }
    }
}
