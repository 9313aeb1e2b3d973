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
    /// The config file the controller read (`scontrol reconfigure` reads it again);
    /// none: the config came from no file.
    pub config_file: Option<ConfigFile>,
    /// Priority weights and associations (as the last `sacctmgr` change left them),
    /// for the priority, fair-share and accounting reads.
    pub sched_config: watch::Receiver<Arc<sched::SchedConfig>>,
    /// `--test-only` estimates run one at a time, off the state owner.
    pub estimates: Arc<Semaphore>,
    /// The names of the users whose credentials requests carry.
    pub users: Arc<crate::users::UserNames>,
    /// Seals the steps' grants to their nodes (`v1::StepGrant`), valid this long.
    pub key: Arc<auth::Key>,
    pub grant_ttl_s: i64,
    /// What `sdiag` reports (`GetDiagnostics`), counted by the state owner.
    pub statistics: Arc<crate::stats::Statistics>,
}

/// The controller's config as its file says now, with the command line's overrides.
pub type ConfigSource = Arc<dyn Fn() -> Result<Config, String> + Send + Sync>;

/// The controller's config file: its path, which `scontrol show config` names
/// (Slurm's `SLURM_CONF`), and how to read it again.
#[derive(Clone)]
pub struct ConfigFile {
    pub path: String,
    pub read: ConfigSource,
}

/// A refusal as a gRPC status, the one place where that mapping is made.
pub fn status(r: Rejection) -> Status {
    let text = r.to_string();
    match r {
        Rejection::Invalid(_) => Status::invalid_argument(text),
        Rejection::NotFound(_) => Status::not_found(text),
        Rejection::PermissionDenied => Status::permission_denied(text),
        Rejection::WrongState(_) | Rejection::NotYet => Status::failed_precondition(text),
        Rejection::StoreFull(_) | Rejection::Busy => Status::resource_exhausted(text),
        Rejection::ShuttingDown => Status::unavailable(text),
    }
}

fn results_to_wire(results: Vec<command::JobResult>) -> Vec<v1::JobResult> {
    results
        .into_iter()
        .map(|r| v1::JobResult {
            job_id: r.job_id,
            try_again: matches!(r.error, Some(Rejection::NotYet)),
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
            gpu_use: j.gpu_use.map(proto::convert::gpu_use_from_wire),
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

    /// The scheduler's config with the associations in force.
    fn sched(&self) -> Arc<sched::SchedConfig> {
        self.sched_config.borrow().clone()
    }

    /// Whether `what` is private (`[controller] private_data`).
    fn private(&self, what: model::config::PrivateData) -> bool {
        self.config.controller.private_data.contains(&what)
    }

    /// Who a request acts as: the uid its credential proved, that user's name, and
    /// their AdminLevel (`[auth] operators`, `administrators`).
    fn requester<T>(&self, req: &Request<T>) -> Result<command::Requester, Status> {
        let uid = auth::identity(req)?.uid;
        let user = self.users.name(uid);
        let level = self
            .config
            .auth
            .admin_level(&user)
            .max(self.sched().assocs.admin_level(&user));
        Ok(command::Requester { uid, user, level })
    }
}

impl Services {
    /// The answer to `ListJobs`, from the latest snapshot: full records, or with
    /// `summary` squeue's light view (`JobSummary`) whose repeated strings are sent once.
    fn jobs_reply(
        &self,
        req: &v1::ListJobsRequest,
        viewer: command::Requester,
        filter: &JobFilter,
    ) -> v1::ListJobsReply {
        let (snap, sched) = (self.snapshot(), self.sched());
        JobWalk::new(self, &sched, req, viewer, &snap, filter).next_chunk(usize::MAX)
    }
}

/// A job listing built chunk by chunk from one snapshot. The strings sent so far and
/// the priority context live as long as the listing, so one that waits for its client
/// between chunks holds neither a thread nor a turn to build.
struct JobWalk<'s> {
    services: &'s Services,
    /// The associations and priority weights the listing uses throughout.
    sched: &'s sched::SchedConfig,
    req: &'s v1::ListJobsRequest,
    /// Who lists: scripts and environments only of the jobs they may act on, and with
    /// `private_data = ["jobs"]` only those jobs.
    viewer: command::Requester,
    private_jobs: bool,
    filter: &'s JobFilter,
    snap: &'s ClusterState,
    now: i64,
    min_age: i64,
    candidates: Box<dyn Iterator<Item = &'s model::Job> + Send + 's>,
    /// A job that matched when the last chunk was full: the first of the next.
    held: Option<&'s model::Job>,
    strings: proto::convert::StringTable<'s>,
    /// Built on the first live job: the fair-share tree is not free.
    priorities: Option<sched::priority::Context<'s>>,
    /// Built on the first running job of a full listing: what jobs borrow.
    borrowed: Option<std::collections::BTreeMap<model::JobId, model::tres::TresCounts>>,
    done: bool,
}

impl<'s> JobWalk<'s> {
    fn new(
        services: &'s Services,
        sched: &'s sched::SchedConfig,
        req: &'s v1::ListJobsRequest,
        viewer: command::Requester,
        snap: &'s ClusterState,
        filter: &'s JobFilter,
    ) -> JobWalk<'s> {
        // Without finished jobs, the walk starts at the oldest live job: it skips the
        // (older) finished jobs kept for sacct without a lookup per live job.
        let first = if req.include_finished {
            0
        } else {
            let oldest = |j: Option<&model::Job>| j.map_or(model::JobId::MAX, |j| j.id);
            oldest(snap.pending_jobs().next()).min(oldest(snap.running_jobs().next()))
        };
        JobWalk {
            sched,
            services,
            req,
            viewer,
            private_jobs: services.private(model::config::PrivateData::Jobs),
            filter,
            snap,
            now: unix_now(),
            min_age: i64::from(services.config.controller.min_job_age_s),
            candidates: Box::new(snap.jobs.range(first..).map(|(_, j)| j.as_ref())),
            held: None,
            strings: proto::convert::StringTable::default(),
            priorities: None,
            borrowed: None,
            done: false,
        }
    }

    /// Is the job in the listing?
    fn wanted(&self, job: &model::Job) -> bool {
        let (req, now) = (self.req, self.now);
        if job.state.is_final() {
            if !req.include_finished {
                return false;
            }
            if req.recent_finished_only && job.end_time < now - self.min_age {
                return false;
            }
        }
        if self.private_jobs && !self.viewer.may_act_on(&self.sched.assocs, job) {
            return false;
        }
        self.filter.matches(job)
    }

    /// The next chunk of at most `chunk` records; after the last one (which may be
    /// empty), `done` is set.
    fn next_chunk(&mut self, chunk: usize) -> v1::ListJobsReply {
        let mut reply = v1::ListJobsReply {
            now: self.now,
            ..Default::default()
        };
        loop {
            let job = match self.held.take() {
                Some(job) => job,
                None => match self.candidates.next() {
                    Some(job) if self.wanted(job) => job,
                    Some(_) => continue,
                    None => {
                        self.done = true;
                        break;
                    }
                },
            };
            if reply.summaries.len() + reply.jobs.len() >= chunk {
                self.held = Some(job);
                break;
            }
            self.add(job, &mut reply);
        }
        reply.strings = self.strings.take_new();
        reply
    }

    fn add(&mut self, job: &'s model::Job, reply: &mut v1::ListJobsReply) {
        let priority = if job.state.is_final() {
            0
        } else {
            let (snap, now, config) = (self.snap, self.now, self.sched);
            self.priorities
                .get_or_insert_with(|| sched::priority::Context::new(snap, now, config))
                .rank(job)
                .1
        };
        let req = self.req;
        if req.summary {
            let mut summary = proto::convert::job_to_summary(job, &mut self.strings, self.now);
            summary.priority = priority;
            reply.summaries.push(summary);
            return;
        }
        let may_read = self.viewer.may_act_on(&self.sched.assocs, job);
        let payload = if (req.with_script || req.with_env) && may_read {
            let store = &self.services.store;
            let own = store.payload(job.id).ok().flatten();
            let mut p = own
                .or_else(|| store.payload(job.array_job_id).ok().flatten())
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
        let mut info = proto::convert::job_to_wire(job, payload.as_ref(), self.now);
        info.priority = priority;
        if job.alloc.is_some() && !job.state.is_final() {
            let (snap, assocs) = (self.snap, &self.sched.assocs);
            if let Some(b) = self
                .borrowed
                .get_or_insert_with(|| sched::guarantee::borrowed_by_job(snap, assocs))
                .get(&job.id)
            {
                info.borrowed = model::tres::format_counts(b);
            }
        }
        reply.jobs.push(info);
    }
}

impl Services {
    /// A job listing in chunks of `chunk` jobs (summaries, or full records). Two chunks
    /// ahead of the client at most. Each chunk is built in a listing turn, off the async
    /// workers; between chunks the listing waits for its client without a thread, and
    /// is dropped when the client does not read in time.
    fn listing_stream(
        &self,
        req: Request<v1::ListJobsRequest>,
        summary: bool,
        chunk: usize,
    ) -> Result<Response<ListingStream>, Status> {
        let listing = count_listing(&req);
        let viewer = self.requester(&req)?;
        let mut req = req.into_inner();
        req.summary = summary;
        let filter = listing_filter(&req)?;
        let (tx, chunks) = mpsc::channel(2);
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let read_timeout =
            std::time::Duration::from_secs(self.config.controller.client_read_timeout_s.into());
        let this = self.clone();
        let dropped_flag = dropped.clone();
        tokio::spawn(async move {
            let (snap, sched) = (this.snapshot(), this.sched());
            let mut walk = JobWalk::new(&this, &sched, &req, viewer, &snap, &filter);
            while !walk.done {
                let rank = listing.as_ref().map_or(1, |l| l.rank());
                let Ok(turn) = TURNS.take(rank).await else {
                    return;
                };
                let next = tokio::task::block_in_place(|| walk.next_chunk(chunk));
                drop(turn);
                match tx.send_timeout(next, read_timeout).await {
                    Ok(()) => {}
                    Err(mpsc::error::SendTimeoutError::Timeout(_)) => {
                        dropped_flag.store(true, std::sync::atomic::Ordering::Relaxed);
                        tracing::info!(
                            timeout_s = read_timeout.as_secs(),
                            "listing dropped: its client did not read it"
                        );
                        return;
                    }
                    Err(mpsc::error::SendTimeoutError::Closed(_)) => return,
                }
            }
        });
        Ok(Response::new(ListingStream { chunks, dropped }))
    }
}

/// Turns to build listings: one per core, so that building listings never takes every
/// blocking thread, and a listing never holds one while it waits for its client. A
/// turn goes first to the listing whose connection has the fewest listings in
/// progress, then in the order asked: one client's hundred listings wait behind
/// another client's one.
///
/// Example: two turns, both taken; connection A asks for its 5th and 6th listings,
/// then `squeue` on connection B for its 1st. The next free turn goes to B, then A's.
struct Turns {
    state: std::sync::Mutex<TurnsState>,
}

struct TurnsState {
    free: usize,
    /// By (listings in progress on the connection, order of asking).
    waiting: std::collections::BTreeMap<(usize, u64), tokio::sync::oneshot::Sender<Turn>>,
    asked: u64,
}

/// A turn to build a listing; the next waiter gets it when it is dropped.
struct Turn {
    turns: &'static Turns,
}

static TURNS: std::sync::LazyLock<Turns> = std::sync::LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    Turns::new(cores.max(2))
});

impl Turns {
    fn new(turns: usize) -> Turns {
        Turns {
            state: std::sync::Mutex::new(TurnsState {
                free: turns,
                waiting: std::collections::BTreeMap::new(),
                asked: 0,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, TurnsState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A turn for a listing whose connection has `rank` listings in progress.
    async fn take(&'static self, rank: usize) -> Result<Turn, Status> {
        let waiting = {
            let mut s = self.state();
            if s.free > 0 && s.waiting.is_empty() {
                s.free -= 1;
                return Ok(Turn { turns: self });
            }
            let (tx, rx) = tokio::sync::oneshot::channel();
            s.asked += 1;
            let key = (rank, s.asked);
            s.waiting.insert(key, tx);
            rx
        };
        waiting.await.map_err(|_| status(Rejection::ShuttingDown))
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut s = self.turns.state();
        // To the first waiter still waiting; a waiter gone after the hand-over drops
        // the turn with its channel, which passes it on again.
        while let Some((_, next)) = s.waiting.pop_first() {
            match next.send(Turn { turns: self.turns }) {
                Ok(()) => return,
                // Not dropped here: that would take the lock held now.
                Err(turn) => std::mem::forget(turn),
            }
        }
        s.free += 1;
    }
}

/// How many listings the request's connection has in progress, this one included,
/// for as long as the guard lives.
fn count_listing<T>(req: &Request<T>) -> Option<crate::connections::ListingCount> {
    req.extensions()
        .get::<crate::connections::ConnInfo>()
        .map(crate::connections::ConnInfo::listing)
}

/// The chunks of a `ListJobSummaries` answer. When its client did not take a chunk in
/// time, the listing was dropped: after the chunks already queued comes an error, never
/// a silent end that would read as a complete, shorter listing.
pub struct ListingStream {
    chunks: mpsc::Receiver<v1::ListJobsReply>,
    dropped: Arc<std::sync::atomic::AtomicBool>,
}

impl tonic::codegen::tokio_stream::Stream for ListingStream {
    type Item = Result<v1::ListJobsReply, Status>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::sync::atomic::Ordering;
        match self.chunks.poll_recv(cx) {
            std::task::Poll::Ready(None) if self.dropped.swap(false, Ordering::Relaxed) => {
                std::task::Poll::Ready(Some(Err(Status::deadline_exceeded(
                    "the listing was dropped: its chunks were not read in time",
                ))))
            }
            other => other.map(|chunk| chunk.map(Ok)),
        }
    }
}

/// The filter of a listing, its ids and state names checked.
fn listing_filter(req: &v1::ListJobsRequest) -> Result<JobFilter, Status> {
    proto::convert::listing_filter_from_wire(req).map_err(invalid)
}

/// Records per chunk of `ListJobSummaries`.
const SUMMARY_CHUNK: usize = 8192;
/// Full records per chunk of `ListJobRecords` (a record is several times a summary).
const RECORD_CHUNK: usize = 2048;

#[tonic::async_trait]
impl v1::ctld_server::Ctld for Services {
    async fn submit_job(
        &self,
        req: Request<v1::SubmitJobRequest>,
    ) -> Result<Response<v1::SubmitJobReply>, Status> {
        let who = auth::identity(&req)?;
        let operator = self.requester(&req)?.is_operator();
        let req = req.into_inner();
        let spec = req
            .spec
            .ok_or_else(|| Status::invalid_argument("missing job spec"))?;
        let submit_of = |spec: v1::JobSpec| -> Result<command::Submit, Status> {
            let (mut spec, payload) = proto::convert::spec_from_wire(spec)
                .map_err(|e| Status::invalid_argument(e.to_string()))?;
            // Only an operator fixes a job's priority (`--priority`), as in Slurm.
            if spec.priority.is_some() && !operator {
                return Err(status(Rejection::PermissionDenied));
            }
            // A job runs as who submitted it; only root submits for another user.
            if who.uid != 0 {
                if spec.uid != who.uid {
                    return Err(status(Rejection::PermissionDenied));
                }
                spec.gid = who.gid;
                spec.user = self.users.name(who.uid);
            }
            // Looked up only while some partition has AllowGroups.
            let user_groups = if self
                .snapshot()
                .partitions
                .iter()
                .any(|p| !p.allow_groups.is_empty())
            {
                self.users.groups(spec.uid, spec.gid)
            } else {
                Vec::new()
            };
            Ok(command::Submit {
                spec,
                payload,
                user_groups,
            })
        };
        let submit = submit_of(spec)?;
        if !req.het_components.is_empty() && !req.test_only {
            let mut components = vec![submit];
            for spec in req.het_components {
                components.push(submit_of(spec)?);
            }
            let submitted = self
                .ask(|reply| Input::SubmitHet(components, reply))
                .await?;
            return Ok(Response::new(v1::SubmitJobReply {
                job_id: submitted.job_id,
                estimated_start: 0,
                estimated_nodes: String::new(),
                cluster_name: self.config.cluster_name.clone(),
            }));
        }
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
                crate::rules::jobs::estimate(&snap, &this.config, &this.sched(), submit, unix_now())
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
        let requester = self.requester(&req)?;
        let req = req.into_inner();
        let mut wire_filter = req.filter.unwrap_or_default();
        // The ids are resolved one by one (each has its own result); the filter is
        // the rest.
        let job_ids = std::mem::take(&mut wire_filter.job_ids);
        let cmd = command::SignalJobs {
            filter: proto::convert::filter_from_wire(&wire_filter).map_err(invalid)?,
            job_ids,
            signal: req.signal,
            // Slurm's scancel: `--full` over `--batch`.
            scope: if req.full {
                command::SignalScope::Full
            } else if req.batch_only {
                command::SignalScope::Batch
            } else {
                command::SignalScope::Steps
            },
            requester,
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
        let requester = self.requester(&req)?;
        let req = req.into_inner();
        let op = match v1::ControlOp::try_from(req.op) {
            Ok(v1::ControlOp::Hold) => Op::Hold,
            Ok(v1::ControlOp::Uhold) => Op::Uhold,
            Ok(v1::ControlOp::Release) => Op::Release,
            Ok(v1::ControlOp::Requeue) => Op::Requeue,
            Ok(v1::ControlOp::RequeueHold) => Op::RequeueHold,
            Ok(v1::ControlOp::RequeueSpecialExit) => Op::RequeueSpecialExit,
            Ok(v1::ControlOp::Suspend) => Op::Suspend,
            Ok(v1::ControlOp::Resume) => Op::Resume,
            Ok(v1::ControlOp::Top) => Op::Top,
            Ok(v1::ControlOp::Unspecified) | Err(_) => {
                return Err(invalid(format!("unknown job operation {}", req.op)));
            }
        };
        let cmd = command::ControlJobs {
            op,
            job_ids: req.job_ids,
            incomplete: req.incomplete,
            requester,
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
        let requester = self.requester(&req)?;
        let req = req.into_inner();
        let changes = req
            .changes
            .into_iter()
            .map(proto::convert::job_change_from_wire)
            .collect::<Result<_, _>>()
            .map_err(invalid)?;
        let results = if req.record {
            let cmd = command::ModifyJobRecords {
                job_ids: req.job_ids,
                changes,
                requester,
            };
            self.ask(|reply| Input::ModifyRecords(cmd, reply)).await?
        } else {
            let cmd = command::UpdateJobs {
                job_ids: req.job_ids,
                changes,
                requester,
            };
            self.ask(|reply| Input::Update(cmd, reply)).await?
        };
        Ok(Response::new(v1::UpdateJobReply {
            results: results_to_wire(results),
        }))
    }

    async fn list_jobs(
        &self,
        req: Request<v1::ListJobsRequest>,
    ) -> Result<Response<v1::ListJobsReply>, Status> {
        let listing = count_listing(&req);
        let viewer = self.requester(&req)?;
        let req = req.into_inner();
        let filter = listing_filter(&req)?;
        // A large queue takes a while to walk: off the async workers, so that submits
        // and node reports keep flowing meanwhile, and in a listing turn.
        let turn = TURNS.take(listing.as_ref().map_or(1, |l| l.rank())).await?;
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            let _turn = turn;
            this.jobs_reply(&req, viewer, &filter)
        })
        .await
        .map(Response::new)
        .map_err(|e| Status::internal(format!("listing jobs failed: {e}")))
    }

    type ListJobSummariesStream = ListingStream;

    async fn list_job_summaries(
        &self,
        req: Request<v1::ListJobsRequest>,
    ) -> Result<Response<Self::ListJobSummariesStream>, Status> {
        self.listing_stream(req, true, SUMMARY_CHUNK)
    }

    type ListJobRecordsStream = ListingStream;

    async fn list_job_records(
        &self,
        req: Request<v1::ListJobsRequest>,
    ) -> Result<Response<Self::ListJobRecordsStream>, Status> {
        self.listing_stream(req, false, RECORD_CHUNK)
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
                let declared = self.config.node_entry(&n.name).map_or_else(
                    || model::node::DeclaredHardware::of_cpus(n.cpus),
                    |e| e.declared_hardware(n.cpus),
                );
                proto::convert::node_to_wire(
                    n,
                    usage.get(&n.name).unwrap_or(&empty),
                    parts,
                    declared,
                )
            })
            .collect();
        Ok(Response::new(v1::ListNodesReply { nodes }))
    }

    async fn update_nodes(
        &self,
        req: Request<v1::UpdateNodesRequest>,
    ) -> Result<Response<v1::UpdateNodesReply>, Status> {
        let requester = self.requester(&req)?;
        let req = req.into_inner();
        use v1::NodeStateChange as C;
        let action = match C::try_from(req.state) {
            Ok(C::Drain) => Some(command::NodeAction::Drain),
            Ok(C::Down) => Some(command::NodeAction::Down),
            Ok(C::Resume | C::Idle | C::Undrain) => Some(command::NodeAction::Resume),
            Ok(C::Unspecified) if req.features.is_some() => None,
            Ok(C::Unspecified) | Err(_) => {
                return Err(invalid(format!(
                    "Invalid node state specified: {}",
                    req.state
                )));
            }
        };
        let cmd = command::UpdateNodes {
            nodes: req.nodes,
            action,
            reason: req.reason,
            features: req.features.map(|l| l.names),
            requester,
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
                state: p.state.name().to_string(),
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
                deny_qos: p.deny_qos.join(","),
                allow_groups: p.allow_groups.join(","),
                oversubscribe: p.oversubscribe.name().to_string(),
            })
            .collect();
        Ok(Response::new(v1::ListPartitionsReply { partitions }))
    }

    async fn get_config(
        &self,
        _req: Request<v1::GetConfigRequest>,
    ) -> Result<Response<v1::GetConfigReply>, Status> {
        let mut reply = proto::convert::config_to_wire(&self.config);
        // Accounting is enforced (associations, their limits and QOS) once an account
        // besides root exists: Slurm's AccountingStorageEnforce says which it is now.
        let enforce = if self.sched().assocs.enforced {
            "associations,limits,qos"
        } else {
            "none"
        };
        let at = reply
            .entries
            .iter()
            .position(|e| e.key.as_str() > "AccountingStorageEnforce")
            .unwrap_or(reply.entries.len());
        reply.entries.insert(
            at,
            v1::ConfigEntry {
                key: "AccountingStorageEnforce".into(),
                value: enforce.into(),
            },
        );
        reply.config_file = self
            .config_file
            .as_ref()
            .map(|f| f.path.clone())
            .unwrap_or_default();
        Ok(Response::new(reply))
    }

    /// `scontrol reconfigure`, for root and administrators: the config file is read
    /// and checked again, and the config's partitions are put back as it defines them
    /// (their `scontrol update` changes dropped, as Slurm's reconfigure does). The
    /// controller runs with the config it started with, so a file that now says
    /// something else is refused until the controller restarts (`docs/controller.md`).
    async fn reconfigure(
        &self,
        req: Request<v1::ReconfigureRequest>,
    ) -> Result<Response<v1::ReconfigureReply>, Status> {
        let who = self.requester(&req)?;
        if who.uid != 0 && who.level < model::assoc::AdminLevel::Administrator {
            return Err(status(Rejection::PermissionDenied));
        }
        let Some(file) = &self.config_file else {
            return Ok(Response::new(v1::ReconfigureReply {}));
        };
        let config = (file.read)().map_err(Status::invalid_argument)?;
        if config != *self.config {
            return Err(Status::failed_precondition(
                "the configuration file changed: its changes take effect when the controller restarts",
            ));
        }
        tracing::info!("reconfigure: the configuration file is unchanged");
        let partitions = self.config.partition_list();
        self.ask(|reply| Input::RestorePartitions(partitions, reply))
            .await?;
        Ok(Response::new(v1::ReconfigureReply {}))
    }

    async fn create_step(
        &self,
        req: Request<v1::CreateStepRequest>,
    ) -> Result<Response<v1::CreateStepReply>, Status> {
        let requester = self.requester(&req)?;
        let req = req.into_inner();
        let job_id = req.job_id;
        let cmd = command::CreateStep {
            job_id,
            name: req.name,
            request: model::step::StepRequest {
                num_tasks: req.num_tasks,
                num_nodes: req.num_nodes,
                ntasks_per_node: req.ntasks_per_node,
                cpus_per_task: req.cpus_per_task,
                overcommit: req.overcommit,
                exclusive: req.exclusive,
                layout: proto::convert::task_layout_from_wire(req.layout, req.plane_size)
                    .map_err(invalid)?,
            },
            nodelist: req.nodelist,
            exclude: req.exclude,
            relative: req.relative,
            task_nodes: req.task_nodes,
            time_limit_min: req.time_limit_min,
            gpu_request: proto::convert::step_gpu_request_from_wire(req.gpu_request),
            requester,
        };
        let started = self.ask(|reply| Input::CreateStep(cmd, reply)).await?;
        let snapshot = self.snapshot();
        let now = unix_now();
        let job = snapshot.job(job_id);
        let (uid, gid) = job.map_or((0, 0), |j| (j.spec.uid, j.spec.gid));
        let job = job.map(|j| proto::convert::job_to_wire(j, None, now));
        let nodes = started
            .nodes
            .into_iter()
            .map(|(share, task_ids)| {
                let grant = v1::StepGrant {
                    job_id,
                    step_id: started.step_id,
                    node: share.node.clone(),
                    uid,
                    gid,
                    task_ids: task_ids.clone(),
                    cpu_ids: share.cpu_ids.clone(),
                    mem_mb: share.mem_mb,
                    gpu_indices: share.gpus.clone(),
                    expires_at: now + self.grant_ttl_s,
                };
                v1::StepNode {
                    agent_addr: snapshot
                        .nodes
                        .get(&share.node)
                        .map(|n| n.addr.clone())
                        .unwrap_or_default(),
                    name: share.node,
                    task_ids,
                    cpus: share.cpus,
                    cpu_ids: share.cpu_ids,
                    mem_mb: share.mem_mb,
                    gpu_indices: share.gpus,
                    grant: self.key.seal(auth::STEP_GRANT, proto::encode(&grant)),
                }
            })
            .collect();
        Ok(Response::new(v1::CreateStepReply {
            step_id: started.step_id,
            job,
            nodes,
        }))
    }

    async fn change_partition(
        &self,
        req: Request<v1::ChangePartitionRequest>,
    ) -> Result<Response<v1::ChangePartitionReply>, Status> {
        let requester = self.requester(&req)?;
        let req = req.into_inner();
        let op = match v1::PartitionOp::try_from(req.op) {
            Ok(v1::PartitionOp::Create) => command::PartitionOp::Create,
            Ok(v1::PartitionOp::Update) => command::PartitionOp::Update,
            Ok(v1::PartitionOp::Delete) => command::PartitionOp::Delete,
            Ok(v1::PartitionOp::Unspecified) | Err(_) => {
                return Err(invalid(format!("unknown partition operation {}", req.op)));
            }
        };
        let change =
            proto::convert::partition_change_from_wire(req.name, req.fields).map_err(invalid)?;
        let cmd = command::ChangePartition {
            op,
            change,
            requester,
        };
        let name = self.ask(|reply| Input::ChangePartition(cmd, reply)).await?;
        Ok(Response::new(v1::ChangePartitionReply { name }))
    }

    async fn change_reservation(
        &self,
        req: Request<v1::ChangeReservationRequest>,
    ) -> Result<Response<v1::ChangeReservationReply>, Status> {
        let requester = self.requester(&req)?;
        let req = req.into_inner();
        let op = match v1::ReservationOp::try_from(req.op) {
            Ok(v1::ReservationOp::Create) => command::ReservationOp::Create,
            Ok(v1::ReservationOp::Update) => command::ReservationOp::Update,
            Ok(v1::ReservationOp::Delete) => command::ReservationOp::Delete,
            Ok(v1::ReservationOp::Unspecified) | Err(_) => {
                return Err(invalid(format!("unknown reservation operation {}", req.op)));
            }
        };
        let change = proto::convert::reservation_change_from_wire(req.change.unwrap_or_default())
            .map_err(invalid)?;
        let cmd = command::ChangeReservation {
            op,
            change,
            requester,
        };
        let name = self
            .ask(|reply| Input::ChangeReservation(cmd, reply))
            .await?;
        Ok(Response::new(v1::ChangeReservationReply { name }))
    }

    async fn show_accounting(
        &self,
        req: Request<v1::ShowAccountingRequest>,
    ) -> Result<Response<v1::ShowAccountingReply>, Status> {
        let viewer = self.requester(&req)?;
        let sched = self.sched();
        let (accounts, users) = (
            self.private(model::config::PrivateData::Accounts),
            self.private(model::config::PrivateData::Users),
        );
        let visible = if viewer.is_operator() || !(accounts || users) {
            proto::convert::associations_to_wire(&sched.assocs, &self.config.cluster_name)
        } else {
            let own = sched.assocs.visible_to(&viewer.user, accounts, users);
            proto::convert::associations_to_wire(&own, &self.config.cluster_name)
        };
        Ok(Response::new(visible))
    }

    async fn change_accounting(
        &self,
        req: Request<v1::ChangeAccountingRequest>,
    ) -> Result<Response<v1::ChangeAccountingReply>, Status> {
        let requester = self.requester(&req)?;
        let (change, dry_run) =
            proto::convert::assoc_change_from_wire(req.into_inner()).map_err(invalid)?;
        let cmd = command::ChangeAccounting {
            requester,
            change,
            dry_run,
        };
        let changed = self
            .ask(|reply| Input::ChangeAccounting(cmd, reply))
            .await?;
        Ok(Response::new(proto::convert::changed_to_wire(&changed)))
    }

    async fn set_trigger(
        &self,
        req: Request<v1::SetTriggerRequest>,
    ) -> Result<Response<v1::SetTriggerReply>, Status> {
        let requester = self.requester(&req)?;
        let gid = auth::identity(&req)?.gid;
        let spec = req
            .into_inner()
            .spec
            .ok_or_else(|| invalid("a trigger needs a spec".into()))?;
        let spec = proto::convert::trigger_spec_from_wire(spec).map_err(invalid)?;
        let cmd = command::SetTrigger {
            spec,
            requester,
            gid,
        };
        let id = self.ask(|reply| Input::SetTrigger(cmd, reply)).await?;
        Ok(Response::new(v1::SetTriggerReply { id }))
    }

    async fn get_triggers(
        &self,
        _req: Request<v1::GetTriggersRequest>,
    ) -> Result<Response<v1::GetTriggersReply>, Status> {
        let snap = self.snapshot();
        let triggers = snap
            .triggers
            .values()
            .map(proto::convert::trigger_to_wire)
            .collect();
        Ok(Response::new(v1::GetTriggersReply { triggers }))
    }

    async fn clear_triggers(
        &self,
        req: Request<v1::ClearTriggersRequest>,
    ) -> Result<Response<v1::ClearTriggersReply>, Status> {
        let requester = self.requester(&req)?;
        let w = req.into_inner();
        let cmd = command::ClearTriggers {
            filter: model::trigger::TriggerFilter {
                id: w.id,
                job_id: w.job_id,
                uid: w.uid,
            },
            requester,
        };
        self.ask(|reply| Input::ClearTriggers(cmd, reply)).await?;
        Ok(Response::new(v1::ClearTriggersReply {}))
    }

    async fn notify_job(
        &self,
        req: Request<v1::NotifyJobRequest>,
    ) -> Result<Response<v1::NotifyJobReply>, Status> {
        let requester = self.requester(&req)?;
        let w = req.into_inner();
        let cmd = command::NotifyJob {
            job_id: w.job_id,
            message: w.message,
            requester,
        };
        self.ask(|reply| Input::Notify(cmd, reply)).await?;
        Ok(Response::new(v1::NotifyJobReply {}))
    }

    async fn get_diagnostics(
        &self,
        _req: Request<v1::GetDiagnosticsRequest>,
    ) -> Result<Response<v1::GetDiagnosticsReply>, Status> {
        let c = self.statistics.read();
        let snap = self.snapshot();
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let workers =
            tokio::runtime::Handle::try_current().map_or(1, |h| h.metrics().num_workers());
        Ok(Response::new(v1::GetDiagnosticsReply {
            now: unix_now(),
            data_since: c.since,
            server_thread_count: count(workers),
            jobs_submitted: c.submitted,
            jobs_started: c.started,
            jobs_completed: c.completed,
            jobs_canceled: c.canceled,
            jobs_failed: c.failed,
            jobs_pending: count(snap.pending_jobs().count()),
            jobs_running: count(snap.running_jobs().count()),
            schedule_cycle_last_us: c.cycle_last_us,
            schedule_cycle_max_us: c.cycle_max_us,
            schedule_cycle_count: c.cycles,
            schedule_cycle_sum_us: c.cycle_sum_us,
            schedule_queue_length: c.queue_length,
            schedule_cycle_when: c.cycle_when,
        }))
    }

    async fn reset_diagnostics(
        &self,
        req: Request<v1::ResetDiagnosticsRequest>,
    ) -> Result<Response<v1::ResetDiagnosticsReply>, Status> {
        if !self.requester(&req)?.is_operator() {
            return Err(status(Rejection::PermissionDenied));
        }
        self.statistics.reset(unix_now());
        Ok(Response::new(v1::ResetDiagnosticsReply {}))
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
        let blockers = sched::explain::explain(&snap, unix_now(), &self.sched(), id)
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
            .map(|r| proto::convert::reservation_to_wire(&snap, r, now))
            .collect();
        Ok(Response::new(v1::ListReservationsReply { reservations }))
    }

    async fn get_priorities(
        &self,
        req: Request<v1::GetPrioritiesRequest>,
    ) -> Result<Response<v1::GetPrioritiesReply>, Status> {
        let viewer = self.requester(&req)?;
        let req = req.into_inner();
        let snap = self.snapshot();
        let now = unix_now();
        let private = self.private(model::config::PrivateData::Jobs);
        let sched = self.sched();
        let assocs = &sched.assocs;
        let jobs = sched::priority::pending_factors(&snap, now, &sched)
            .iter()
            .filter(|f| {
                !private
                    || snap
                        .job(f.job_id)
                        .is_some_and(|j| viewer.may_act_on(assocs, j))
            })
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
        req: Request<v1::GetSharesRequest>,
    ) -> Result<Response<v1::GetSharesReply>, Status> {
        let viewer = self.requester(&req)?;
        let snap = self.snapshot();
        let sched = self.sched();
        let tree = sched::fairshare::ShareTree::compute(&snap, unix_now(), &sched);
        // With `private_data = ["usage"]`, a user sees the accounts and their own rows,
        // a coordinator their accounts' users too.
        let private = self.private(model::config::PrivateData::Usage);
        let assocs = &sched.assocs;
        let visible = |row: &&model::factors::ShareRow| match &row.user {
            Some(user) if private && !viewer.is_operator() => {
                *user == viewer.user || assocs.coordinates(&viewer.user, &row.account)
            }
            _ => true,
        };
        Ok(Response::new(v1::GetSharesReply {
            algorithm: tree.algorithm.name().to_string(),
            shares: tree
                .rows
                .iter()
                .filter(visible)
                .map(proto::convert::share_to_wire)
                .collect(),
        }))
    }

    async fn complete_step(
        &self,
        req: Request<v1::CompleteStepRequest>,
    ) -> Result<Response<v1::CompleteStepReply>, Status> {
        let requester = self.requester(&req)?;
        let req = req.into_inner();
        let cmd = command::CompleteStep {
            job_id: req.job_id,
            step_id: req.step_id,
            exit_code: req.exit_code,
            exit_signal: req.exit_signal,
            usage: req.usage.map(proto::convert::usage_from_wire),
            requester,
        };
        self.ask(|reply| Input::CompleteStep(cmd, reply)).await?;
        Ok(Response::new(v1::CompleteStepReply {}))
    }

    async fn update_step(
        &self,
        req: Request<v1::UpdateStepRequest>,
    ) -> Result<Response<v1::UpdateStepReply>, Status> {
        let requester = self.requester(&req)?;
        let req = req.into_inner();
        let cmd = command::UpdateStep {
            job_id: req.job_id,
            step_id: req.step_id,
            time_limit: proto::convert::time_limit_change_from_wire(req.time_limit)
                .map_err(Status::invalid_argument)?,
            requester,
        };
        self.ask(|reply| Input::UpdateStep(cmd, reply)).await?;
        Ok(Response::new(v1::UpdateStepReply {}))
    }
}

#[tonic::async_trait]
impl v1::node_control_server::NodeControl for Services {
    async fn register(
        &self,
        req: Request<v1::RegisterRequest>,
    ) -> Result<Response<v1::RegisterReply>, Status> {
        let req = req.into_inner();
        let numa_cpus = proto::convert::numa_cpus_from_wire(req.numa_nodes)
            .map_err(Status::invalid_argument)?;
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
            numa_cpus,
            features: req.features,
            boot_time: req.boot_time,
            jobs: jobs_from_wire(req.jobs),
            load: req.load.map(proto::convert::load_from_wire),
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
            unhealthy: req.unhealthy,
            jobs: jobs_from_wire(req.jobs),
            load: req.load.map(proto::convert::load_from_wire),
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
            Ok(v1::FinishKind::PrologFailed) => EndKind::PrologFailed,
            Ok(v1::FinishKind::Unspecified) | Err(_) => {
                return Err(invalid(format!("unknown kind of job end {}", req.kind)));
            }
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
            drain_reason: req.drain_reason,
            batch_usage: req.batch_usage.map(proto::convert::usage_from_wire),
        };
        self.ask(|reply| Input::JobFinished(end, reply)).await?;
        Ok(Response::new(v1::JobFinishedReply {}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn until_waiting(turns: &Turns, n: usize) {
        while turns.state().waiting.len() < n {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn a_dropped_listing_ends_in_an_error_after_its_queued_chunks() {
        use tonic::codegen::tokio_stream::StreamExt;
        let (tx, chunks) = mpsc::channel(2);
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut stream = ListingStream {
            chunks,
            dropped: dropped.clone(),
        };
        tx.send(v1::ListJobsReply::default()).await.unwrap();
        dropped.store(true, std::sync::atomic::Ordering::Relaxed);
        drop(tx);
        assert!(stream.next().await.unwrap().is_ok());
        let end = stream.next().await.unwrap().unwrap_err();
        assert_eq!(end.code(), tonic::Code::DeadlineExceeded);
        assert!(stream.next().await.is_none());
    }

    #[tokio::test]
    async fn a_turn_goes_first_to_the_connection_with_the_fewest_listings() {
        let turns: &'static Turns = Box::leak(Box::new(Turns::new(1)));
        let held = turns.take(1).await.unwrap();
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        // Connection A asks for its 5th and 6th listings, then B for its 1st.
        let mut tasks = Vec::new();
        for (name, rank) in [("a5", 5), ("a6", 6), ("b1", 1)] {
            let order = order.clone();
            tasks.push(tokio::spawn(async move {
                let _turn = turns.take(rank).await.unwrap();
                order.lock().unwrap().push(name);
            }));
            until_waiting(turns, tasks.len()).await;
        }
        drop(held);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), ["b1", "a5", "a6"]);

        // A waiter that gave up does not keep the turn it is handed.
        let held = turns.take(1).await.unwrap();
        let gone = tokio::spawn(async move { turns.take(1).await.map(|_| ()) });
        until_waiting(turns, 1).await;
        gone.abort();
        let _ = gone.await;
        drop(held);
        let again = turns.take(1).await.unwrap();
        assert_eq!(turns.state().free, 0);
        drop(again);
        assert_eq!(turns.state().free, 1);
    }
}

#[cfg(test)]
mod command_tests {
    //! The front's conversions, in process: a snapshot to read, a store that keeps
    //! nothing, and an inbox nobody reads (a refused request never reaches it).
    use super::*;
    use crate::store::NoStore;
    use model::{Job, JobSpec};
    use v1::ctld_server::Ctld;
    use v1::node_control_server::NodeControl;

    /// A request as the interceptor hands it on for `uid`.
    fn as_user<T>(uid: u32, msg: T) -> Request<T> {
        let mut req = Request::new(msg);
        req.extensions_mut().insert(auth::Identity {
            issuer: auth::Issuer::User,
            uid,
            gid: uid,
            host: "login1".into(),
        });
        req
    }

    fn as_root<T>(msg: T) -> Request<T> {
        as_user(0, msg)
    }

    #[tokio::test]
    async fn a_user_submits_only_as_themselves() {
        let (s, mut rx) = services();
        let submit = |uid| v1::SubmitJobRequest {
            spec: Some(v1::JobSpec {
                uid,
                script: "#!/bin/sh\ntrue\n".into(),
                ..Default::default()
            }),
            test_only: false,
            het_components: Vec::new(),
        };
        let refused = s.submit_job(as_user(1000, submit(0))).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::PermissionDenied);
        assert!(rx.try_recv().is_err());
        // Nor is anything done without a credential's identity.
        let refused = s.submit_job(Request::new(submit(0))).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::Unauthenticated);
        assert!(rx.try_recv().is_err());
    }

    #[tokio::test]
    async fn show_config_says_whether_accounting_is_enforced_and_names_the_file() {
        let (s, _rx) = services();
        let reply = s
            .get_config(Request::new(v1::GetConfigRequest {}))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            (
                reply.entries[0].key.as_str(),
                reply.entries[0].value.as_str()
            ),
            ("AccountingStorageEnforce", "none")
        );
        let keys: Vec<&str> = reply.entries[1..3].iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["AccountingStorageTRES", "AccountingStorageType"]);
        // A config of no node counts no GPU.
        assert_eq!(reply.entries[1].value, "cpu,mem,node,billing");
        assert_eq!(reply.config_file, "");
    }

    #[tokio::test]
    async fn reconfigure_takes_an_unchanged_file_and_refuses_others() {
        let (mut s, mut rx) = services();
        // The state owner: it is asked to put the config's partitions back.
        let owner = tokio::spawn(async move {
            let mut asked = 0;
            while let Some(input) = rx.recv().await {
                if let Input::RestorePartitions(partitions, reply) = input {
                    assert!(partitions.is_empty(), "the config has none");
                    asked += 1;
                    reply.send(Ok(())).unwrap();
                }
            }
            asked
        });
        let file = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let read = file.clone();
        s.config_file = Some(ConfigFile {
            path: "t.toml".into(),
            read: Arc::new(move || {
                Config::parse(&read.lock().unwrap(), "t.toml").map_err(|e| e.to_string())
            }),
        });
        let ask = |uid| as_user(uid, v1::ReconfigureRequest {});
        s.reconfigure(ask(0)).await.unwrap();
        let refused = s.reconfigure(ask(1000)).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::PermissionDenied);
        *file.lock().unwrap() = "cluster_name = \"other\"".into();
        let refused = s.reconfigure(ask(0)).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::FailedPrecondition);
        *file.lock().unwrap() = "no_such_key = 1".into();
        let refused = s.reconfigure(ask(0)).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument);
        drop(s);
        assert_eq!(
            owner.await.unwrap(),
            1,
            "only the accepted reconfigure restores"
        );
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
            sched_config: watch::channel(Arc::new(sched::SchedConfig::from_config(&config))).1,
            config: Arc::new(config),
            config_file: None,
            estimates: Arc::new(Semaphore::new(1)),
            users: Arc::default(),
            key: Arc::new(auth::Key::from_bytes(&[0; 32]).unwrap()),
            grant_ttl_s: 60,
            statistics: Arc::new(crate::stats::Statistics::new(0)),
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
        let reply = s.list_jobs(as_root(req)).await?.into_inner();
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
                states: vec![99],
                ..Default::default()
            }),
            ..Default::default()
        };
        let bad = s.list_jobs(as_root(states)).await.unwrap_err();
        assert_eq!(bad.code(), tonic::Code::InvalidArgument);
        let reasons = v1::ListJobsRequest {
            filter: Some(v1::JobFilter {
                reasons: vec!["BOGUS".into()],
                ..Default::default()
            }),
            ..Default::default()
        };
        let bad = s.list_jobs(as_root(reasons)).await.unwrap_err();
        assert_eq!(bad.code(), tonic::Code::InvalidArgument);
        assert_eq!(bad.message(), "Invalid reason specified: BOGUS");
    }

    #[tokio::test]
    async fn unknown_operations_and_kinds_of_job_end_are_refused() {
        let (s, mut rx) = services();
        // An unset value (0) is refused as an unknown one is, never read as an operation.
        for unknown in [0, 99] {
            let hold = v1::ControlJobsRequest {
                op: unknown,
                job_ids: vec!["20".into()],
                incomplete: false,
            };
            let refused = s.control_jobs(as_root(hold)).await.unwrap_err();
            assert_eq!(refused.code(), tonic::Code::InvalidArgument);
            let end = v1::JobFinishedRequest {
                node_name: "n1".into(),
                job_id: 20,
                kind: unknown,
                ..Default::default()
            };
            let refused = s.job_finished(as_root(end)).await.unwrap_err();
            assert_eq!(refused.code(), tonic::Code::InvalidArgument);
            let reservation = v1::ChangeReservationRequest {
                op: unknown,
                ..Default::default()
            };
            let refused = s
                .change_reservation(as_root(reservation))
                .await
                .unwrap_err();
            assert_eq!(refused.code(), tonic::Code::InvalidArgument);
        }
        for state in [v1::NodeStateChange::Unspecified as i32, 99] {
            let update = v1::UpdateNodesRequest {
                nodes: "n1".into(),
                state,
                reason: "x".into(),
                features: None,
            };
            let refused = s.update_nodes(as_root(update)).await.unwrap_err();
            assert_eq!(refused.code(), tonic::Code::InvalidArgument);
        }
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
