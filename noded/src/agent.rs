//! The `NodeAgent` gRPC service: `LaunchJob`, `SignalJob` and `SuspendJob`, which the
//! controller calls, `RunTasks`, which `srun` calls (`tasks`), `StepStats`, which
//! `sstat` calls, `BroadcastFile`, which `sbcast` calls (`bcast`), `AttachStep`, which
//! `sattach` calls (`tasks`), and `SendMail`, the controller's mail about jobs (`mail`).
//!
//! Every call carries a credential (`auth::Authenticate` checks it first). The
//! controller's calls must be the controller's. A user's `RunTasks` runs only what the
//! controller's grant for this node says (job, step, user, tasks, CPUs, memory, GPUs);
//! `AttachStep` joins only the caller's own steps; `BroadcastFile` writes with the
//! caller's rights. Root may act for anyone.

use crate::jobs::{Jobs, JobsError};
use proto::v1;
use proto::v1::node_agent_server::NodeAgent;
use proto::v1::{AttachInput, TaskInput, attach_input, task_input};
use proto::v1::{
    BroadcastFileReply, FileChunk, LaunchJobReply, LaunchJobRequest, NotifyJobReply,
    NotifyJobRequest, SendMailReply, SendMailRequest, SignalJobReply, SignalJobRequest, StepStat,
    StepStatsReply, StepStatsRequest, SuspendJobReply, SuspendJobRequest,
};
use std::sync::Arc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};
use tracing::warn;

pub struct Agent {
    jobs: Arc<Jobs>,
    /// Opens the controller's step grants.
    key: Arc<auth::Key>,
    /// The site's MailProg.
    mail_prog: String,
    /// The steps running here, for sattach.
    attachable: crate::tasks::Attachable,
}

/// The job's cgroups here, for the job's owner (a user with a process of the job here)
/// and root only, as slurmd answers about a job's steps: `None`, no such job here;
/// `Some(Err)`, the caller may not see it.
fn owned_cgroup(
    placement: &crate::launch::CgroupPlacement,
    node: &str,
    job_id: u32,
    caller: u32,
) -> Option<Result<crate::cgroup::JobCgroup, ()>> {
    let cg = crate::cgroup::JobCgroup::new(&placement.hierarchy, &placement.prefix, node, job_id)
        .ok()?;
    if caller != 0
        && !cg
            .processes()
            .into_iter()
            .any(|pid| crate::procfs::owner(pid) == Some(caller))
    {
        return Some(Err(()));
    }
    Some(Ok(cg))
}

/// The processes of each of the job's steps here, as `scontrol listpids` lists them:
/// a task's processes with its place among the step's tasks here and its global id;
/// in the batch step, the first process (the shell) as task 0 and the others without.
fn job_processes(cg: &crate::cgroup::JobCgroup) -> Vec<v1::JobProcess> {
    let mut out = Vec::new();
    for dir in cg.steps() {
        let step_id = dir.strip_prefix("step_").unwrap_or(&dir).to_string();
        let batch = step_id == "batch";
        for (local, (task, pids)) in cg.task_processes(&dir).into_iter().enumerate() {
            for (i, pid) in pids.into_iter().enumerate() {
                let ids = match task {
                    Some(global) => Some((local as u32, global)),
                    None if batch && i == 0 => Some((0, 0)),
                    None => None,
                };
                out.push(v1::JobProcess {
                    pid,
                    step_id: step_id.clone(),
                    local_id: ids.map(|(l, _)| l),
                    global_id: ids.map(|(_, g)| g),
                });
            }
        }
    }
    out
}

impl Agent {
    /// A step past its own time limit, ended as Slurm's stepd ends it: the notice on
    /// its stderr, SIGTERM to its tasks, SIGKILL after `kill_wait_secs`.
    fn end_timed_out_step(
        &self,
        job_id: u32,
        step_id: u32,
        kill_wait_secs: u32,
    ) -> Result<bool, JobsError> {
        if let Some(step) = self.attachable.get(job_id, step_id) {
            step.tell(&crate::supervisor::time_limit_line(
                &format!("STEP {job_id}.{step_id}"),
                self.jobs.node_name(),
            ));
        }
        let found = self.jobs.signal_step(job_id, step_id, libc::SIGTERM)?;
        let jobs = self.jobs.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_secs(u64::from(kill_wait_secs))).await;
            let _ = jobs.signal_step(job_id, step_id, 0);
        });
        Ok(found)
    }

    pub fn new(jobs: Arc<Jobs>, mail_prog: String, key: Arc<auth::Key>) -> Agent {
        Agent {
            jobs,
            key,
            mail_prog,
            attachable: crate::tasks::Attachable::default(),
        }
    }
}

/// Refuses a call that is not the controller's.
fn from_controller<T>(request: &Request<T>) -> Result<(), Status> {
    auth::require(&auth::identity(request)?, auth::Issuer::Controller)
}

/// The launch as the controller's grant for this node allows it: its job, step, user,
/// tasks, CPUs, memory and GPUs are the grant's. A launch without a valid grant for
/// this node, after it expired, or by another user than the grant's (but root) is
/// refused.
fn granted(
    key: &auth::Key,
    node: &str,
    who: &auth::Identity,
    mut launch: v1::TaskLaunch,
    now: i64,
) -> Result<v1::TaskLaunch, Status> {
    let denied = |why: &str| Status::permission_denied(format!("step launch refused: {why}"));
    let body = key
        .open(auth::STEP_GRANT, &launch.grant)
        .map_err(|e| denied(&e.to_string()))?;
    let grant: v1::StepGrant = proto::decode(&body).ok_or_else(|| denied("malformed grant"))?;
    if grant.node != node {
        return Err(denied(&format!("the grant is for node {}", grant.node)));
    }
    if grant.expires_at <= now {
        return Err(denied("the grant has expired"));
    }
    if who.uid != 0 && who.uid != grant.uid {
        return Err(denied("the step is another user's"));
    }
    launch.job_id = grant.job_id;
    launch.step_id = grant.step_id;
    launch.uid = grant.uid;
    launch.gid = grant.gid;
    launch.task_ids = grant.task_ids;
    launch.cpu_ids = grant.cpu_ids;
    launch.mem_mb = grant.mem_mb;
    launch.gpu_indices = grant.gpu_indices;
    Ok(launch)
}

fn to_status(e: &JobsError) -> Status {
    match e {
        JobsError::Launch(_) | JobsError::BadSignal(_) => Status::invalid_argument(e.to_string()),
        JobsError::Busy(_) => Status::unavailable(e.to_string()),
        JobsError::Spool(_) | JobsError::Supervisor { .. } | JobsError::Leftover(_) => {
            Status::internal(e.to_string())
        }
    }
}

#[tonic::async_trait]
impl NodeAgent for Agent {
    type RunTasksStream = ReceiverStream<crate::tasks::Answer>;
    type AttachStepStream = ReceiverStream<crate::tasks::Answer>;

    async fn attach_step(
        &self,
        request: Request<Streaming<AttachInput>>,
    ) -> Result<Response<Self::AttachStepStream>, Status> {
        let who = auth::identity(&request)?;
        let mut input = request.into_inner();
        let target = match input.message().await? {
            Some(AttachInput {
                input: Some(attach_input::Input::Target(t)),
            }) => t,
            _ => {
                return Err(Status::invalid_argument(
                    "AttachStep must start with its step",
                ));
            }
        };
        let Some(attached) = self.attachable.get(target.job_id, target.step_id) else {
            return Err(Status::not_found(format!(
                "StepId={}.{} is not running on this node",
                target.job_id, target.step_id
            )));
        };
        if who.uid != 0 && who.uid != attached.uid {
            return Err(Status::permission_denied("Access/permission denied"));
        }
        // Only the step holds its outlet: the stream ends with the step. The latest
        // output comes first, as slurmstepd replays its cache to a new sattach.
        let (latest, mut output) = attached.output.subscribe();
        drop(attached.output);
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        tokio::spawn(async move {
            use tokio::sync::broadcast::error::RecvError;
            for msg in latest {
                if tx.send(Ok(msg)).await.is_err() {
                    return;
                }
            }
            loop {
                match output.recv().await {
                    Ok(msg) => {
                        if tx.send(Ok(msg)).await.is_err() {
                            return;
                        }
                    }
                    // Output this attachment was too slow for is lost to it alone.
                    Err(RecvError::Lagged(missed)) => {
                        warn!(missed, "sattach too slow: output dropped");
                    }
                    Err(RecvError::Closed) => return,
                }
            }
        });
        // Its input joins srun's; its end does not close the tasks' stdin (srun's does).
        let stdin = attached.stdin;
        tokio::spawn(async move {
            while let Ok(Some(AttachInput {
                input: Some(attach_input::Input::Stdin(data)),
            })) = input.message().await
            {
                if !data.is_empty() && stdin.send(data).await.is_err() {
                    return;
                }
            }
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn run_tasks(
        &self,
        request: Request<Streaming<TaskInput>>,
    ) -> Result<Response<Self::RunTasksStream>, Status> {
        let who = auth::identity(&request)?;
        let srun_addr = request.remote_addr();
        let mut input = request.into_inner();
        let launch = match input.message().await? {
            Some(TaskInput {
                input: Some(task_input::Input::Launch(launch)),
            }) => granted(
                &self.key,
                self.jobs.node_name(),
                &who,
                launch,
                auth::unix_now(),
            )?,
            _ => {
                return Err(Status::invalid_argument(
                    "RunTasks must start with a launch",
                ));
            }
        };
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        tokio::spawn(crate::tasks::run(
            launch,
            srun_addr,
            input,
            tx,
            self.jobs.clone(),
            self.attachable.clone(),
        ));
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn launch_job(
        &self,
        request: Request<LaunchJobRequest>,
    ) -> Result<Response<LaunchJobReply>, Status> {
        from_controller(&request)?;
        let req = request.into_inner();
        let job_id = req.job_id;
        self.jobs.launch(req).await.map_err(|e| {
            warn!(job_id, error = %e, "launch failed");
            to_status(&e)
        })?;
        Ok(Response::new(LaunchJobReply {}))
    }

    async fn signal_job(
        &self,
        request: Request<SignalJobRequest>,
    ) -> Result<Response<SignalJobReply>, Status> {
        from_controller(&request)?;
        let req = request.into_inner();
        let found = match req.step_id {
            Some(step_id) if req.step_time_limit => {
                self.end_timed_out_step(req.job_id, step_id, req.kill_wait_secs)
            }
            Some(step_id) => self.jobs.signal_step(req.job_id, step_id, req.signal),
            None => {
                self.jobs
                    .signal(req.job_id, req.signal, req.batch_only, req.full)
                    .await
            }
        }
        .map_err(|e| to_status(&e))?;
        Ok(Response::new(SignalJobReply { found }))
    }

    async fn step_stats(
        &self,
        request: Request<StepStatsRequest>,
    ) -> Result<Response<StepStatsReply>, Status> {
        let caller = auth::identity(&request)?.uid;
        let job_id = request.into_inner().job_id;
        let confinement = self.jobs.confinement();
        let node = self.jobs.node_name().to_string();
        let Some(placement) = confinement.cgroup else {
            return Err(Status::failed_precondition(
                "this node runs jobs without cgroups: it counts no usage",
            ));
        };
        // What the node saw of the running steps' tasks: their processes may be gone.
        let attachable = self.attachable.clone();
        let steps = tokio::task::spawn_blocking(move || {
            let cg = match owned_cgroup(&placement, &node, job_id, caller)? {
                Ok(cg) => cg,
                Err(()) => return Some(Err(())),
            };
            Some(Ok(cg
                .steps()
                .into_iter()
                .filter_map(|dir| {
                    let step_id = dir.strip_prefix("step_").unwrap_or(&dir).to_string();
                    let traced = step_id
                        .parse()
                        .ok()
                        .and_then(|id| attachable.get(job_id, id))
                        .map(|step| step.traces.snapshot())
                        .unwrap_or_default();
                    let usage = cg.step_usage(&dir, &node, &traced)?;
                    Some(StepStat {
                        step_id,
                        usage: Some(proto::convert::usage_to_wire(&usage)),
                        num_processes: cg.step_processes(&dir).len() as u32,
                    })
                })
                .collect::<Vec<_>>()))
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))?
        .unwrap_or(Ok(Vec::new()))
        .map_err(|()| Status::permission_denied("Access/permission denied"))?;
        Ok(Response::new(StepStatsReply { steps }))
    }

    async fn list_pids(
        &self,
        request: Request<v1::ListPidsRequest>,
    ) -> Result<Response<v1::ListPidsReply>, Status> {
        let caller = auth::identity(&request)?.uid;
        let job_id = request.into_inner().job_id;
        let node = self.jobs.node_name().to_string();
        // Without cgroups the node does not know a job's processes by step.
        let Some(placement) = self.jobs.confinement().cgroup else {
            return Ok(Response::new(v1::ListPidsReply::default()));
        };
        let processes = tokio::task::spawn_blocking(move || {
            let cg = match owned_cgroup(&placement, &node, job_id, caller)? {
                Ok(cg) => cg,
                Err(()) => return Some(Err(())),
            };
            Some(Ok(job_processes(&cg)))
        })
        .await
        .map_err(|e| Status::internal(e.to_string()))?
        .unwrap_or(Ok(Vec::new()))
        .map_err(|()| Status::permission_denied("Access/permission denied"))?;
        Ok(Response::new(v1::ListPidsReply { processes }))
    }

    async fn broadcast_file(
        &self,
        request: Request<Streaming<FileChunk>>,
    ) -> Result<Response<BroadcastFileReply>, Status> {
        let who = auth::identity(&request)?;
        let mut input = request.into_inner();
        let Some(FileChunk {
            header: Some(mut header),
            data: first,
        }) = input.message().await?
        else {
            return Err(Status::invalid_argument(
                "BroadcastFile must start with a header",
            ));
        };
        // Written with the caller's rights, whoever the header names (root: its user).
        if who.uid != 0 {
            header.uid = who.uid;
            header.gid = who.gid;
        }
        let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(8);
        let (job_id, path) = (header.job_id, header.path.clone());
        let writer = std::thread::spawn(move || crate::bcast::write(&header, rx));
        let mut chunk = first;
        loop {
            // A writer that stopped (an error) drops its end: its answer says why.
            if !chunk.is_empty() && tx.send(chunk).await.is_err() {
                break;
            }
            match input.message().await? {
                Some(next) => chunk = next.data,
                None => break,
            }
        }
        drop(tx);
        let written = tokio::task::spawn_blocking(move || writer.join())
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(|_| Status::internal("the file writer panicked"))?;
        match written {
            Ok(bytes) => {
                tracing::info!(job_id, path = %path, bytes, "sbcast file written");
                Ok(Response::new(BroadcastFileReply { bytes }))
            }
            Err(message) => Err(Status::failed_precondition(message)),
        }
    }

    async fn send_mail(
        &self,
        request: Request<SendMailRequest>,
    ) -> Result<Response<SendMailReply>, Status> {
        from_controller(&request)?;
        let req = request.into_inner();
        match crate::mail::send(&self.mail_prog, &req.user, &req.subject).await {
            Ok(()) => {
                tracing::info!(user = %req.user, subject = %req.subject, "mail sent");
                Ok(Response::new(SendMailReply {}))
            }
            Err(e) => {
                warn!(user = %req.user, subject = %req.subject, error = %e, "mail not sent");
                Err(Status::unavailable(e))
            }
        }
    }

    async fn run_trigger(
        &self,
        request: Request<v1::RunTriggerRequest>,
    ) -> Result<Response<v1::RunTriggerReply>, Status> {
        from_controller(&request)?;
        let req = request.into_inner();
        let user = crate::user::RunAs::for_job(req.uid, req.gid, &[])
            .map_err(|e| Status::failed_precondition(e.to_string()))?;
        // The program runs on after the answer: the controller does not wait for it.
        tokio::spawn(async move {
            let id = req.trigger_id;
            match crate::trigger::run(&req.program, &req.argument, user).await {
                Ok(()) => {
                    tracing::info!(trigger = id, program = %req.program, "trigger program ran")
                }
                Err(e) => warn!(trigger = id, error = %e, "trigger program failed"),
            }
        });
        Ok(Response::new(v1::RunTriggerReply {}))
    }

    async fn notify_job(
        &self,
        request: Request<NotifyJobRequest>,
    ) -> Result<Response<NotifyJobReply>, Status> {
        from_controller(&request)?;
        let req = request.into_inner();
        self.jobs.notify(req.job_id, &req.message).await;
        Ok(Response::new(NotifyJobReply {}))
    }

    async fn suspend_job(
        &self,
        request: Request<SuspendJobRequest>,
    ) -> Result<Response<SuspendJobReply>, Status> {
        from_controller(&request)?;
        let req = request.into_inner();
        let found = self.jobs.suspend(req.job_id, req.resume).await;
        Ok(Response::new(SuspendJobReply { found }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(key: &auth::Key, node: &str, expires_at: i64) -> Vec<u8> {
        let g = v1::StepGrant {
            job_id: 7,
            step_id: 2,
            node: node.into(),
            uid: 1000,
            gid: 100,
            task_ids: vec![3],
            cpu_ids: vec![4, 5],
            mem_mb: 512,
            gpu_indices: vec![1],
            expires_at,
        };
        key.seal(auth::STEP_GRANT, proto::encode(&g))
    }

    fn user(uid: u32) -> auth::Identity {
        auth::Identity {
            issuer: auth::Issuer::User,
            uid,
            gid: uid,
            host: "login1".into(),
        }
    }

    #[test]
    fn a_step_runs_only_as_the_controllers_grant_for_this_node_says() {
        let key = auth::Key::from_bytes(&[1; 32]).unwrap();
        // What srun claims is replaced by what the grant says.
        let claimed = v1::TaskLaunch {
            job_id: 7,
            uid: 0,
            cpu_ids: vec![0, 1, 2, 3],
            gpu_indices: vec![0, 1],
            mem_mb: 1 << 20,
            grant: grant(&key, "n1", 100),
            ..Default::default()
        };
        let l = granted(&key, "n1", &user(1000), claimed.clone(), 50).unwrap();
        assert_eq!(
            (
                l.job_id,
                l.step_id,
                l.uid,
                l.gid,
                l.task_ids,
                l.cpu_ids,
                l.mem_mb,
                l.gpu_indices
            ),
            (7, 2, 1000, 100, vec![3], vec![4, 5], 512, vec![1])
        );
        let refused = |node: &str, who: u32, now: i64, launch: v1::TaskLaunch| {
            granted(&key, node, &user(who), launch, now)
                .unwrap_err()
                .message()
                .to_string()
        };
        assert_eq!(
            refused("n2", 1000, 50, claimed.clone()),
            "step launch refused: the grant is for node n1"
        );
        assert_eq!(
            refused("n1", 1000, 100, claimed.clone()),
            "step launch refused: the grant has expired"
        );
        assert_eq!(
            refused("n1", 1001, 50, claimed.clone()),
            "step launch refused: the step is another user's"
        );
        // Root may launch anyone's; nobody launches without a grant of this key.
        assert!(granted(&key, "n1", &user(0), claimed.clone(), 50).is_ok());
        let forged = v1::TaskLaunch {
            grant: grant(&auth::Key::from_bytes(&[2; 32]).unwrap(), "n1", 100),
            ..claimed
        };
        assert_eq!(
            refused("n1", 1000, 50, forged),
            "step launch refused: the credential's signature is invalid"
        );
    }
}
