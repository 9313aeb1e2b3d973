//! Runs the real daemon against a fake controller on loopback: registration with the
//! configured resources, launches, signals, cancels, `kill_jobs`, retried job-end
//! reports, `register_again`, a `kill -9` restart while jobs run, and suspend/resume.

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use noded::procfs::is_supervisor_of;
use noded::spool::{PGID, SUPERVISOR_PID, Spool};
use proto::v1::node_agent_client::NodeAgentClient;
use proto::v1::node_control_server::{NodeControl, NodeControlServer};
use proto::v1::{
    FinishKind, HeartbeatReply, HeartbeatRequest, JobFinishedReply, JobFinishedRequest, JobOnNode,
    JobSpec, LaunchJobRequest, NodeOrders, RegisterReply, RegisterRequest, SignalJobRequest,
    SuspendJobRequest,
};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

const NODED: &str = env!("CARGO_BIN_EXE_drover-noded");

/// The cluster key of the tests' clusters, written to each one's key file.
const KEY: [u8; 32] = [5; 32];

fn key() -> auth::Key {
    auth::Key::from_bytes(&KEY).unwrap()
}

/// A client that signs its calls as `issuer` does.
fn signed(
    channel: tonic::transport::Channel,
    issuer: auth::Issuer,
) -> auth::Signed<tonic::transport::Channel> {
    auth::Signed::new(
        channel,
        Arc::new(auth::Signer::Key {
            key: key(),
            issuer,
            host: "test".into(),
            ttl_s: 60,
        }),
    )
}

#[derive(Debug)]
enum Seen {
    Register(RegisterRequest),
    Finished(JobFinishedRequest),
}

#[derive(Default)]
struct Knobs {
    fail_finished: u32,
    register_again: bool,
    /// Orders for the next heartbeat's answer.
    orders: NodeOrders,
    /// The jobs the last heartbeat reported.
    heartbeat_jobs: Vec<JobOnNode>,
}

struct FakeCtld {
    seen: mpsc::UnboundedSender<Seen>,
    knobs: Arc<Mutex<Knobs>>,
}

#[tonic::async_trait]
impl NodeControl for FakeCtld {
    async fn register(
        &self,
        r: Request<RegisterRequest>,
    ) -> Result<Response<RegisterReply>, Status> {
        let _ = self.seen.send(Seen::Register(r.into_inner()));
        Ok(Response::new(RegisterReply {
            heartbeat_interval_ms: 50,
            orders: None,
        }))
    }

    async fn heartbeat(
        &self,
        r: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatReply>, Status> {
        let mut k = self.knobs.lock().unwrap();
        k.heartbeat_jobs = r.into_inner().jobs;
        let reply = HeartbeatReply {
            register_again: std::mem::take(&mut k.register_again),
            orders: Some(std::mem::take(&mut k.orders)),
        };
        Ok(Response::new(reply))
    }

    async fn job_finished(
        &self,
        r: Request<JobFinishedRequest>,
    ) -> Result<Response<JobFinishedReply>, Status> {
        let _ = self.seen.send(Seen::Finished(r.into_inner()));
        let mut k = self.knobs.lock().unwrap();
        if k.fail_finished > 0 {
            k.fail_finished -= 1;
            return Err(Status::unavailable("busy"));
        }
        Ok(Response::new(JobFinishedReply {}))
    }
}

struct Harness {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    ctld_addr: SocketAddr,
    seen: mpsc::UnboundedReceiver<Seen>,
    knobs: Arc<Mutex<Knobs>>,
    noded: Option<Child>,
    starts: u32,
}

impl Harness {
    async fn new() -> Harness {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("work")).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let ctld_addr = listener.local_addr().unwrap();
        let (tx, seen) = mpsc::unbounded_channel();
        let knobs = Arc::new(Mutex::new(Knobs::default()));
        let fake = FakeCtld {
            seen: tx,
            knobs: knobs.clone(),
        };
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(tonic::service::interceptor::InterceptedService::new(
                    NodeControlServer::new(fake),
                    auth::Authenticate::only(
                        Arc::new(auth::Verifier::new(key())),
                        auth::Issuer::Node,
                    ),
                ))
                .serve_with_incoming(TcpIncoming::from(listener)),
        );
        let config = format!(
            "cluster_name = \"t\"\nstate_dir = \"{}\"\n[[nodes]]\nnames = \"n[1-2]\"\ncpus = 1\nmemory = \"1G\"\ngpus = 2\ngpu_type = \"fake\"\nfeatures = [\"f1\"]\nconfig_overrides = true\n\
             [auth]\nkey_file = \"{0}/cluster.key\"\nsocket = \"{0}/auth.sock\"\n",
            root.display()
        );
        {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(root.join("cluster.key"))
                .and_then(|mut f| f.write_all(&KEY))
                .unwrap();
        }
        std::fs::write(root.join("drover.toml"), config).unwrap();
        Harness {
            _tmp: tmp,
            root,
            ctld_addr,
            seen,
            knobs,
            noded: None,
            starts: 0,
        }
    }

    fn spool(&self) -> PathBuf {
        // The default spool: <state_dir>/noded-<name>.
        self.root.join("noded-n1")
    }

    fn work(&self, name: &str) -> PathBuf {
        self.root.join("work").join(name)
    }

    fn start_noded(&mut self) {
        self.starts += 1;
        let log =
            std::fs::File::create(self.root.join(format!("noded-{}.log", self.starts))).unwrap();
        let child = Command::new(NODED)
            .arg("--config")
            .arg(self.root.join("drover.toml"))
            .args(["--name", "n1", "--listen", "127.0.0.1:0", "--ctld-addr"])
            .arg(self.ctld_addr.to_string())
            .env("RUST_LOG", "noded=debug,drover_noded=debug,info")
            .stdin(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.noded = Some(child);
    }

    fn kill_noded(&mut self) {
        if let Some(mut child) = self.noded.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    fn logs(&self) -> String {
        (1..=self.starts)
            .map(|i| {
                std::fs::read_to_string(self.root.join(format!("noded-{i}.log")))
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join("\n----\n")
    }

    /// The next message, which must be a registration.
    async fn next_register(&mut self) -> RegisterRequest {
        match self.next().await {
            Seen::Register(r) => r,
            Seen::Finished(f) => panic!("unexpected job end {f:?}"),
        }
    }

    /// The next job-end report.
    async fn next_finished(&mut self) -> JobFinishedRequest {
        loop {
            match self.next().await {
                Seen::Finished(f) => return f,
                Seen::Register(_) => {}
            }
        }
    }

    async fn next(&mut self) -> Seen {
        match tokio::time::timeout(Duration::from_secs(10), self.seen.recv()).await {
            Ok(Some(seen)) => seen,
            _ => panic!("nothing from noded in time; logs:\n{}", self.logs()),
        }
    }

    fn launch_request(&self, job_id: u32, script: &str) -> LaunchJobRequest {
        LaunchJobRequest {
            job_id,
            spec: Some(JobSpec {
                name: format!("j{job_id}"),
                script: script.to_string(),
                work_dir: self.root.join("work").display().to_string(),
                env: vec![proto::v1::EnvVar {
                    name: "PATH".into(),
                    value: std::env::var("PATH").unwrap(),
                }],
                num_tasks: 1,
                ..Default::default()
            }),
            cluster_name: "t".into(),
            nodes: "n1".into(),
            num_nodes: 1,
            cpus_on_node: 1,
            kill_wait_secs: 5,
            ctld_addr: self.ctld_addr.to_string(),
            ..Default::default()
        }
    }
}

impl Drop for Harness {
    /// Stops the daemon and, should a check have failed midway, every job it left.
    fn drop(&mut self) {
        self.kill_noded();
        let Ok(spool) = Spool::open(&self.spool()) else {
            return;
        };
        for (_, dir) in spool.scan().unwrap_or_default() {
            if let Some(pgid) = dir.read_pid(PGID) {
                let _ = killpg(Pid::from_raw(pgid as i32), Signal::SIGKILL);
            }
            if let Some(pid) = dir.read_pid(SUPERVISOR_PID)
                && is_supervisor_of(pid, dir.path())
            {
                let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
            }
        }
    }
}

async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The node daemon's agent service, called as the controller calls it.
async fn agent(addr: &str) -> NodeAgentClient<auth::Signed<tonic::transport::Channel>> {
    agent_as(addr, auth::Issuer::Controller).await
}

async fn agent_as(
    addr: &str,
    issuer: auth::Issuer,
) -> NodeAgentClient<auth::Signed<tonic::transport::Channel>> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    NodeAgentClient::new(signed(channel, issuer))
}

fn signal(job_id: u32, signal: i32) -> SignalJobRequest {
    SignalJobRequest {
        job_id,
        signal,
        batch_only: false,
        kill_wait_secs: 5,
        full: false,
        step_id: None,
        step_time_limit: false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_runs_reports_and_survives_restart() {
    let mut h = Harness::new().await;
    h.start_noded();

    // Registration carries the configured resources.
    let reg = h.next_register().await;
    assert_eq!(reg.node_name, "n1");
    assert_eq!((reg.cpus, reg.memory_mb), (1, 1024));
    let gpus: Vec<(u32, &str)> = reg
        .gpus
        .iter()
        .map(|g| (g.index, g.gpu_type.as_str()))
        .collect();
    assert_eq!(gpus, vec![(0, "fake"), (1, "fake")]);
    assert_eq!(reg.features, vec!["f1".to_string()]);
    assert!(reg.jobs.is_empty());
    assert!(
        reg.agent_addr.starts_with("127.0.0.1:"),
        "{}",
        reg.agent_addr
    );
    let mut client = agent(&reg.agent_addr).await;

    // A job runs, its end is reported again after the controller fails once, and its
    // directory is retired once acknowledged.
    h.knobs.lock().unwrap().fail_finished = 1;
    let mut req = h.launch_request(
        1,
        "#!/bin/sh\necho \"$SLURM_JOB_ID $CUDA_VISIBLE_DEVICES $DROVER_CTLD_ADDR $(awk '/Cpus_allowed_list/ {print $2}' /proc/self/status)\"\nexit 3\n",
    );
    req.gpu_indices = vec![1];
    // The job runs on exactly its CPU ids (CPU 0 exists on every host).
    req.cpu_ids = vec![0];
    let t = Instant::now();
    client.launch_job(req).await.unwrap();
    let launch_took = t.elapsed();
    eprintln!("launch rpc took {launch_took:?}");
    assert!(
        launch_took < Duration::from_secs(1),
        "launch took {launch_took:?}"
    );
    for attempt in 0..2 {
        let f = h.next_finished().await;
        assert_eq!(
            (f.job_id, f.kind, f.exit_code, f.exit_signal),
            (1, FinishKind::Exited as i32, 3, 0),
            "{attempt}"
        );
        assert_eq!(f.node_name, "n1");
    }
    let out = std::fs::read_to_string(h.work("slurm-1.out")).unwrap();
    assert_eq!(out, format!("1 1 {} 0\n", h.ctld_addr));
    let done = h.spool().join("job.1.done");
    wait_until("job.1.done", || done.is_dir()).await;
    assert!(!h.spool().join("job.1").exists());

    // A signal with `batch_only` reaches the batch shell without cancelling the job.
    let script = "#!/bin/sh\ntrap 'echo usr1; exit 0' USR1\necho ready > ready2\nwhile :; do sleep 0.05; done\n";
    client
        .launch_job(h.launch_request(2, script))
        .await
        .unwrap();
    let ready = h.work("ready2");
    wait_until("job 2 ready", || ready.exists()).await;
    let found = client
        .signal_job(SignalJobRequest {
            batch_only: true,
            ..signal(2, libc::SIGUSR1)
        })
        .await
        .unwrap()
        .into_inner()
        .found;
    assert!(found);
    let f = h.next_finished().await;
    assert_eq!(
        (f.job_id, f.kind, f.exit_code),
        (2, FinishKind::Exited as i32, 0)
    );
    assert!(
        std::fs::read_to_string(h.work("slurm-2.out"))
            .unwrap()
            .contains("usr1")
    );

    // Signal 0 cancels; an unknown job is not found.
    client
        .launch_job(h.launch_request(3, "#!/bin/sh\nsleep 100\n"))
        .await
        .unwrap();
    assert!(
        client
            .signal_job(signal(3, 0))
            .await
            .unwrap()
            .into_inner()
            .found
    );
    let f = h.next_finished().await;
    assert_eq!(
        (f.job_id, f.kind),
        (3, FinishKind::Cancelled as i32),
        "{f:?}"
    );
    assert!(
        !client
            .signal_job(signal(99, 0))
            .await
            .unwrap()
            .into_inner()
            .found
    );

    // The controller's kill orders cancel.
    client
        .launch_job(h.launch_request(4, "#!/bin/sh\nsleep 100\n"))
        .await
        .unwrap();
    h.knobs.lock().unwrap().orders.kill_jobs = vec![4];
    let f = h.next_finished().await;
    assert_eq!(
        (f.job_id, f.kind),
        (4, FinishKind::Cancelled as i32),
        "{f:?}"
    );

    // register_again makes the node register again.
    h.knobs.lock().unwrap().register_again = true;
    let again = h.next_register().await;
    assert!(again.jobs.is_empty(), "{again:?}");

    // kill -9 of the daemon: job 5 keeps running, job 6 ends while no daemon is there.
    let wait_for = |flag: &str, code: u32| {
        format!(
            "#!/bin/sh\necho started > {flag}.started\nwhile [ ! -e {flag} ]; do sleep 0.02; done\nexit {code}\n"
        )
    };
    client
        .launch_job(h.launch_request(5, &wait_for("go5", 5)))
        .await
        .unwrap();
    client
        .launch_job(h.launch_request(6, &wait_for("go6", 6)))
        .await
        .unwrap();
    let (s5, s6) = (h.work("go5.started"), h.work("go6.started"));
    wait_until("jobs 5 and 6 to start", || s5.exists() && s6.exists()).await;
    h.kill_noded();
    std::fs::write(h.work("go6"), "").unwrap();
    let status6 = h.spool().join("job.6/status.json");
    wait_until("job 6 to end", || status6.exists()).await;

    h.start_noded();
    let reg = h.next_register().await;
    let ids: Vec<u32> = reg.jobs.iter().map(|j| j.job_id).collect();
    assert_eq!(ids, vec![5, 6], "{reg:?}");
    let f = h.next_finished().await;
    assert_eq!(
        (f.job_id, f.kind, f.exit_code),
        (6, FinishKind::Exited as i32, 6),
        "{f:?}"
    );
    std::fs::write(h.work("go5"), "").unwrap();
    let f = h.next_finished().await;
    assert_eq!(
        (f.job_id, f.kind, f.exit_code),
        (5, FinishKind::Exited as i32, 5),
        "{f:?}"
    );
    assert_eq!(std::fs::read_to_string(h.work("slurm-5.out")).unwrap(), "");

    // The controller's orders suspend a job; the suspension is reported, after a
    // restart of the daemon too; the orders resume it; a recovered job can still be
    // cancelled.
    let mut client = agent(&reg.agent_addr).await;
    let mut seven = h.launch_request(7, "#!/bin/sh\nsleep 100\n");
    seven.restart_count = 2;
    client.launch_job(seven).await.unwrap();
    let reported = |h: &Harness, suspended: bool| {
        let k = h.knobs.lock().unwrap();
        k.heartbeat_jobs
            .iter()
            .any(|j| j.job_id == 7 && j.restart_count == 2 && j.suspended == suspended)
    };
    wait_until("job 7 to be reported running", || reported(&h, false)).await;
    h.knobs.lock().unwrap().orders.suspend_jobs = vec![7];
    wait_until("job 7 to be reported suspended", || reported(&h, true)).await;
    h.kill_noded();
    h.start_noded();
    let reg = h.next_register().await;
    assert_eq!(reg.jobs.len(), 1, "{reg:?}");
    assert_eq!(
        (
            reg.jobs[0].job_id,
            reg.jobs[0].restart_count,
            reg.jobs[0].suspended
        ),
        (7, 2, true)
    );
    h.knobs.lock().unwrap().orders.resume_jobs = vec![7];
    wait_until("job 7 to be reported resumed", || reported(&h, false)).await;
    let mut client = agent(&reg.agent_addr).await;
    assert!(
        client
            .signal_job(signal(7, 0))
            .await
            .unwrap()
            .into_inner()
            .found
    );
    let f = h.next_finished().await;
    assert_eq!(
        (f.job_id, f.kind),
        (7, FinishKind::Cancelled as i32),
        "{f:?}"
    );
}

/// The state letter of a process (`T`: stopped).
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspend_stops_the_job_and_resume_continues_it() {
    let mut h = Harness::new().await;
    h.start_noded();
    let reg = h.next_register().await;
    let mut client = agent(&reg.agent_addr).await;
    // A loop of builtins only: a shell stopped in the middle of a fork sits in `D`,
    // not `T`, waiting for its stopped child (vfork), which this check would miss.
    let script = "#!/bin/sh\nwhile [ ! -e go3 ]; do :; done\necho done\n";
    let mut req = h.launch_request(3, script);
    req.time_limit_secs = 600;
    // Suspending right at the launch waits for the supervisor to take its signals.
    client.launch_job(req).await.unwrap();
    let suspend = |resume| SuspendJobRequest { job_id: 3, resume };
    assert!(
        client
            .suspend_job(suspend(false))
            .await
            .unwrap()
            .into_inner()
            .found
    );
    // The supervisor names the job's process group (the shell leads it); the
    // script itself may be stopped before it runs a line.
    let pgid_file = h.spool().join("job.3").join("pgid");
    let read = || {
        std::fs::read_to_string(&pgid_file)
            .ok()?
            .trim()
            .parse::<u32>()
            .ok()
    };
    wait_until("job 3 started", || read().is_some()).await;
    let shell = read().unwrap();
    wait_until("job 3 stopped", || process_state(shell) == Some('T')).await;
    assert!(
        client
            .suspend_job(suspend(true))
            .await
            .unwrap()
            .into_inner()
            .found
    );
    wait_until("job 3 continued", || {
        process_state(shell).is_some_and(|s| s != 'T')
    })
    .await;
    std::fs::write(h.work("go3"), "").unwrap();
    let f = h.next_finished().await;
    assert_eq!(
        (f.job_id, f.kind, f.exit_code),
        (3, FinishKind::Exited as i32, 0)
    );
    // A job no longer here is not found.
    assert!(
        !client
            .suspend_job(suspend(false))
            .await
            .unwrap()
            .into_inner()
            .found
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_starts_once_however_often_its_launch_is_sent() {
    let mut h = Harness::new().await;
    h.start_noded();
    let reg = h.next_register().await;
    let mut client = agent(&reg.agent_addr).await;
    let runs = h.work("runs");
    let script = format!("#!/bin/sh\necho ran >> {}\n", runs.display());
    // Only the controller launches: a user's credential, or none, launches nothing.
    let mut as_user = agent_as(&reg.agent_addr, auth::Issuer::User).await;
    let refused = as_user
        .launch_job(h.launch_request(8, &script))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
    let mut unsigned = NodeAgentClient::connect(format!("http://{}", reg.agent_addr))
        .await
        .unwrap();
    let refused = unsigned
        .launch_job(h.launch_request(8, &script))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
    let refused = unsigned.signal_job(signal(8, 9)).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
    assert!(!runs.exists());
    // The end of run 0 is refused twice, so the run is still being reported when its
    // launch comes again: the launch is not a new run.
    h.knobs.lock().unwrap().fail_finished = 2;
    client
        .launch_job(h.launch_request(8, &script))
        .await
        .unwrap();
    let f = h.next_finished().await;
    assert_eq!((f.job_id, f.restart_count), (8, 0));
    client
        .launch_job(h.launch_request(8, &script))
        .await
        .unwrap();
    // Reported and retired: a launch of the same run still starts nothing.
    let done = h.spool().join("job.8.done");
    wait_until("run 0 of job 8 to be retired", || done.exists()).await;
    client
        .launch_job(h.launch_request(8, &script))
        .await
        .unwrap();
    // The next run does start.
    let mut next = h.launch_request(8, &script);
    next.restart_count = 1;
    client.launch_job(next).await.unwrap();
    loop {
        let f = h.next_finished().await;
        if f.restart_count == 1 {
            break;
        }
    }
    let text = std::fs::read_to_string(&runs).unwrap();
    assert_eq!(text.lines().count(), 2, "{text}");
}
