//! Telling node daemons what to do, after the decision is durable.
//!
//! Each effect becomes one RPC on its own task so the state owner never waits on a
//! node. Clients are cached per node address. A launch the node accepts comes back to
//! the state owner as `Input::Launched` (the node confirmed it), one that cannot be
//! delivered as `Input::LaunchFailed`. An order that cannot be delivered is tried a
//! few times. Beyond that, a kill, suspend or resume reaches the node in the answer to
//! its next heartbeat or registration, since the rules derive those orders from the
//! durable state; a signal (`scancel -s`, the SIGTERM that opens a preemption's grace
//! time) is not sent again: the grace time still ends in a durable kill. Mail is handed
//! to a node daemon once.

use crate::core::Input;
use crate::rules::{Effect, Order};
use crate::store::Store;
use model::{ClusterState, JobId};
use proto::v1;
use proto::v1::node_agent_client::NodeAgentClient;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tonic::transport::Channel;

/// How many times an RPC is sent before the dispatcher gives up on it.
const ATTEMPTS: u64 = 3;

/// A node daemon's agent service, every call signed by the controller.
type Agent = NodeAgentClient<auth::Signed<Channel>>;

pub struct Dispatcher {
    clients: BTreeMap<String, Agent>,
    /// Signs every call to a node daemon as the controller's.
    signer: Arc<auth::Signer>,
    /// How node daemons are dialed (`[tls]`); `None`: plain HTTP/2.
    tls: Option<Arc<auth::tls::Tls>>,
    inbox: mpsc::WeakSender<Input>,
    cluster_name: String,
    ctld_addr: String,
    kill_wait_secs: u32,
    /// Launches sent and not answered yet, by (job, run): a launch asked again
    /// meanwhile (a heartbeat that raced the first) is not sent twice.
    launching: Arc<Mutex<BTreeSet<(JobId, u32)>>>,
}

impl Dispatcher {
    pub fn new(
        inbox: mpsc::WeakSender<Input>,
        cluster_name: String,
        ctld_addr: String,
        kill_wait_secs: u32,
        signer: Arc<auth::Signer>,
        tls: Option<Arc<auth::tls::Tls>>,
    ) -> Dispatcher {
        Dispatcher {
            clients: BTreeMap::new(),
            signer,
            tls,
            inbox,
            cluster_name,
            ctld_addr,
            kill_wait_secs,
            launching: Arc::default(),
        }
    }

    /// Drops the cached connection to a node daemon, which restarted or failed: the
    /// next call dials it afresh instead of using a dead connection.
    pub fn forget(&mut self, addr: &str) {
        self.clients.remove(addr);
    }

    fn client(&mut self, addr: &str) -> Option<Agent> {
        if let Some(c) = self.clients.get(addr) {
            return Some(c.clone());
        }
        let client = fresh_client(addr, &self.signer, self.tls.as_deref())?;
        self.clients.insert(addr.to_string(), client.clone());
        Some(client)
    }

    /// The client of `node`'s daemon; `None` while the node has no address.
    fn node_client(&mut self, state: &ClusterState, node: &str) -> Option<Agent> {
        let addr = state.nodes.get(node).map(|n| n.addr.clone())?;
        if addr.is_empty() {
            return None;
        }
        self.client(&addr)
    }

    pub fn perform(&mut self, effect: Effect, state: &ClusterState, store: &dyn Store) {
        match effect {
            Effect::Launch { job_id } => self.launch(job_id, state, store),
            Effect::Order {
                job_id,
                node,
                order,
            } => self.order(job_id, &node, order, state),
            Effect::Mail {
                node,
                user,
                subject,
            } => self.mail(&node, user, subject, state),
            Effect::Notify {
                job_id,
                node,
                message,
            } => self.notify(job_id, &node, message, state),
            Effect::RunTrigger {
                node,
                trigger,
                argument,
            } => self.run_trigger(&node, &trigger, argument, state),
        }
    }

    /// Hands a mail to a node daemon, once: mail is not part of the durable state.
    fn mail(&mut self, node: &str, user: String, subject: String, state: &ClusterState) {
        let client = self.node_client(state, node);
        let Some(mut client) = client else {
            tracing::warn!(node, %subject, "mail not sent: the node has no address");
            return;
        };
        let node = node.to_string();
        tokio::spawn(async move {
            let req = v1::SendMailRequest {
                user,
                subject: subject.clone(),
            };
            if let Err(e) = client.send_mail(req).await {
                tracing::warn!(node = %node, %subject, error = %e.message(), "mail not sent");
            }
        });
    }

    /// Hands `scontrol notify`'s message to the node of the job's batch script, once.
    fn notify(&mut self, job_id: JobId, node: &str, message: String, state: &ClusterState) {
        let client = self.node_client(state, node);
        let Some(mut client) = client else {
            tracing::warn!(job_id, node, "notice not sent: the node has no address");
            return;
        };
        let node = node.to_string();
        tokio::spawn(async move {
            let req = v1::NotifyJobRequest { job_id, message };
            if let Err(e) = client.notify_job(req).await {
                tracing::warn!(job_id, node = %node, error = %e.message(), "notice not sent");
            }
        });
    }

    /// Hands a fired trigger's program to a node daemon, once.
    fn run_trigger(
        &mut self,
        node: &str,
        trigger: &model::trigger::Trigger,
        argument: String,
        state: &ClusterState,
    ) {
        let client = self.node_client(state, node);
        let Some(mut client) = client else {
            tracing::warn!(
                node,
                trigger = trigger.id,
                "trigger program not run: the node has no address"
            );
            return;
        };
        let node = node.to_string();
        let req = v1::RunTriggerRequest {
            trigger_id: trigger.id,
            program: trigger.spec.program.clone(),
            argument,
            uid: trigger.uid,
            gid: trigger.gid,
        };
        tokio::spawn(async move {
            let id = req.trigger_id;
            if let Err(e) = client.run_trigger(req).await {
                tracing::warn!(node = %node, trigger = id, error = %e.message(), "trigger program not run");
            }
        });
    }

    fn order(&mut self, job_id: JobId, node: &str, order: Order, state: &ClusterState) {
        let client = self.node_client(state, node);
        let Some(client) = client else {
            tracing::debug!(
                job_id,
                node,
                ?order,
                "order not sent: the node has no address"
            );
            return;
        };
        let kill_wait_secs = self.kill_wait_secs;
        let node = node.to_string();
        tokio::spawn(async move {
            for attempt in 0..ATTEMPTS {
                let mut client = client.clone();
                let sent = match order {
                    Order::Suspend | Order::Resume => {
                        let resume = order == Order::Resume;
                        let req = v1::SuspendJobRequest { job_id, resume };
                        client.suspend_job(req).await.map(|_| ())
                    }
                    Order::Kill
                    | Order::Signal { .. }
                    | Order::SignalAll { .. }
                    | Order::SignalStep { .. }
                    | Order::StepTimeLimit { .. } => {
                        let (signal, batch_only, full, step_id) = match order {
                            Order::Kill => (0, false, false, None),
                            Order::Signal { signal, batch_only } => {
                                (signal, batch_only, false, None)
                            }
                            Order::SignalAll { signal } => (signal, false, true, None),
                            Order::SignalStep { step_id, signal } => {
                                (signal, false, false, Some(step_id))
                            }
                            Order::StepTimeLimit { step_id } => (0, false, false, Some(step_id)),
                            Order::Suspend | Order::Resume => unreachable!(),
                        };
                        let req = v1::SignalJobRequest {
                            job_id,
                            signal,
                            batch_only,
                            kill_wait_secs,
                            full,
                            step_id,
                            step_time_limit: matches!(order, Order::StepTimeLimit { .. }),
                        };
                        client.signal_job(req).await.map(|_| ())
                    }
                };
                match sent {
                    Ok(()) => return,
                    Err(e) if attempt + 1 == ATTEMPTS => {
                        let then = if order.given_again() {
                            "the node's next heartbeat gets it"
                        } else {
                            "it is not sent again"
                        };
                        tracing::warn!(job_id, node = %node, ?order, error = %e.message(), "order not delivered; {then}");
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(100 * (attempt + 1))).await,
                }
            }
        });
    }

    fn launch(&mut self, job_id: JobId, state: &ClusterState, store: &dyn Store) {
        let Some(job) = state.job(job_id) else { return };
        let Some(alloc) = job.alloc.as_ref() else {
            return;
        };
        let Some(first) = alloc.nodes.first() else {
            return;
        };
        let run = (job_id, job.restart_count);
        if !self
            .launching
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(run)
        {
            return;
        }
        let node = first.node.clone();
        let addr = state
            .nodes
            .get(&node)
            .map(|n| n.addr.clone())
            .unwrap_or_default();
        let payload = match store.payload(job_id) {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(job_id, error = %e, "cannot read the job script");
                None
            }
        };
        // An array task's payload is stored under the array's id.
        let payload = payload.or_else(|| store.payload(job.array_job_id).ok().flatten());
        let (count, min, max) = match &job.spec.array {
            Some(a) => (
                a.task_ids.len() as u32,
                a.task_ids.first().copied().unwrap_or(0),
                a.task_ids.last().copied().unwrap_or(0),
            ),
            None => (0, 0, 0),
        };
        let req = v1::LaunchJobRequest {
            job_id,
            spec: Some(proto::convert::spec_to_wire(&job.spec, payload.as_ref())),
            cluster_name: self.cluster_name.clone(),
            partition: job.spec.partition.clone(),
            nodes: alloc.hostlist(),
            num_nodes: alloc.nodes.len() as u32,
            cpus_on_node: first.cpus,
            mem_on_node_mb: first.mem_mb,
            gpu_indices: first.gpus.clone(),
            cpu_ids: first.cpu_ids.clone(),
            time_limit_secs: job
                .time_limit_min
                .map(|m| m.saturating_mul(60))
                .unwrap_or(0),
            array_job_id: job.array_job_id,
            array_task_id: job.array_task_id,
            array_task_count: count,
            array_task_min: min,
            array_task_max: max,
            kill_wait_secs: self.kill_wait_secs,
            restart_count: job.restart_count,
            account: job.spec.account.clone(),
            qos: qos_of(job),
            ctld_addr: self.ctld_addr.clone(),
            het_groups: het_groups(job, state, store),
        };
        let inbox = self.inbox.clone();
        let client = self.client(&addr);
        let signer = Arc::clone(&self.signer);
        let tls = self.tls.clone();
        let launching = Arc::clone(&self.launching);
        tokio::spawn(async move {
            // A node daemon that restarted leaves a dead cached connection behind; the
            // request never reached it, so it is sent again on a fresh connection
            // (a launch of a job the node already runs is ignored there).
            let mut result = Err(format!("bad node address `{addr}`"));
            let mut client = client;
            for attempt in 0..ATTEMPTS {
                let Some(mut c) = client.take() else { break };
                result = c.launch_job(req.clone()).await.map(|_| ()).map_err(|e| {
                    use std::error::Error;
                    let cause = e.source().map(|c| format!(": {c}")).unwrap_or_default();
                    format!("{}{cause}", e.message())
                });
                if result.is_ok() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50 * (attempt + 1))).await;
                client = fresh_client(&addr, &signer, tls.as_deref());
            }
            launching
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&run);
            let Some(inbox) = inbox.upgrade() else { return };
            let input = match result {
                Ok(()) => Input::Launched {
                    job_id,
                    restart_count: run.1,
                },
                Err(message) => Input::LaunchFailed {
                    job_id,
                    restart_count: run.1,
                    node,
                    message,
                },
            };
            let _ = inbox.send(input).await;
        });
    }
}

/// The job's QOS, `normal` when it names none.
fn qos_of(job: &model::Job) -> String {
    if job.spec.qos.is_empty() {
        model::assoc::DEFAULT_QOS.into()
    } else {
        job.spec.qos.clone()
    }
}

/// For the leader of a heterogeneous job, every component (the leader first) as its
/// batch script sees it; empty for any other job.
fn het_groups(job: &model::Job, state: &ClusterState, store: &dyn Store) -> Vec<v1::HetGroup> {
    let Some(het) = job.het.filter(|h| h.leader == job.id) else {
        return Vec::new();
    };
    het.ids()
        .filter_map(|id| state.job(id))
        .map(|c| {
            let alloc = c.alloc.as_ref();
            let first = alloc.and_then(|a| a.nodes.first());
            // The component's submit environment (its script is not needed).
            let payload = store.payload(c.id).ok().flatten().map(|mut p| {
                p.script.clear();
                p
            });
            v1::HetGroup {
                job_id: c.id,
                spec: Some(proto::convert::spec_to_wire(&c.spec, payload.as_ref())),
                partition: c.spec.partition.clone(),
                nodes: alloc.map(|a| a.hostlist()).unwrap_or_default(),
                num_nodes: alloc.map_or(0, |a| a.nodes.len() as u32),
                cpus_on_node: first.map_or(0, |n| n.cpus),
                mem_on_node_mb: first.map_or(0, |n| n.mem_mb),
                account: c.spec.account.clone(),
                qos: qos_of(c),
            }
        })
        .collect()
}

/// A client on a new connection (made at the first call).
fn fresh_client(
    addr: &str,
    signer: &Arc<auth::Signer>,
    tls: Option<&auth::tls::Tls>,
) -> Option<Agent> {
    let endpoint = auth::tls::endpoint(addr, tls)
        .ok()?
        .connect_timeout(Duration::from_secs(2))
        .timeout(Duration::from_secs(10))
        .tcp_nodelay(true);
    Some(NodeAgentClient::new(auth::Signed::new(
        endpoint.connect_lazy(),
        Arc::clone(signer),
    )))
}
