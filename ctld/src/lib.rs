//! drover-ctld, the controller: owns the cluster state, keeps it durable in sled,
//! schedules, tells node daemons what to run, and answers clients.
//!
//! `core` is the state owner's loop, `rules` the controller's decisions (pure
//! functions of the state, a domain command from `command`, and the time), `store` the
//! durable state behind a trait (the only code that touches sled), `service` the gRPC
//! front that turns the wire into commands, `connections` the accept loop and the
//! bounds on each client connection, `dispatch` the RPCs to node daemons, `validate`
//! the submit checks, `reservations` the reservation changes, `users` the names of the
//! uids requests' credentials prove.

pub mod archive;
pub mod command;
pub mod connections;
pub mod core;
pub mod dispatch;
pub mod partitions;
pub mod reservations;
pub mod rules;
pub mod service;
pub mod stats;
pub mod store;
pub mod users;
pub mod validate;

use anyhow::Context;
use model::{ClusterState, Config};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use store::Store;
use tokio::sync::{mpsc, watch};

/// The largest request a client may send: Slurm's largest batch script (4 MB, its
/// default `max_script_size`) with room for the job's environment. A larger one fails
/// as soon as its length is read, before its body is buffered.
pub const MAX_REQUEST_BYTES: usize = 8 << 20;

/// Open files kept apart from client connections: the store's files, the listening
/// socket, logs. The connections to node daemons, one per node, are counted apart.
const RESERVED_FILES: u64 = 256;

/// Opens the store, restores the state and serves until the process is stopped.
pub async fn run(config: Config, config_file: Option<service::ConfigFile>) -> anyhow::Result<()> {
    let state_dir = PathBuf::from(&config.state_dir).join("ctld");
    std::fs::create_dir_all(&state_dir)
        .with_context(|| format!("cannot create state directory {}", state_dir.display()))?;
    // Scripts and environments of every user are in the store: only its owner reads it.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&state_dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot make {} private", state_dir.display()))?;
    }
    let started = std::time::Instant::now();
    let store = Arc::new(store::SledStore::open(
        &state_dir.join("store"),
        u64::from(config.controller.state_min_free_mb) << 20,
    )?);
    let mut kept = store.load()?;
    let job_count = kept.jobs.len();
    let mut sched_config = sched::SchedConfig::from_config(&config);
    // The config's accounts and QOS seed the associations until `sacctmgr` first
    // changes them; from then on the store's are the ones in force.
    if let Some(assocs) = kept.assocs.take() {
        if !config.accounts.is_empty() || !config.qos.is_empty() {
            tracing::info!(
                "associations come from the state store (sacctmgr); \
                 [[accounts]] and [[qos]] of the config are not used"
            );
        }
        sched_config.assocs = Arc::new(assocs);
    }
    let state = ClusterState::restored(
        config.node_list(),
        config.partition_list(),
        kept,
        core::unix_now(),
    );
    tracing::info!(
        jobs = job_count,
        load_ms = started.elapsed().as_millis() as u64,
        "state restored"
    );

    let addr: std::net::SocketAddr = config
        .controller
        .addr
        .parse()
        .with_context(|| format!("bad controller address {}", config.controller.addr))?;
    let key = Arc::new(
        auth::Key::load(std::path::Path::new(&config.auth.key_file)).map_err(|e| {
            anyhow::anyhow!(
                "{e} (make one with `drover keygen {}`)",
                config.auth.key_file
            )
        })?,
    );
    let ttl_s = i64::from(config.auth.credential_ttl_s);
    let host = nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "controller".into());
    auth::agent::start(
        std::path::Path::new(&config.auth.socket),
        &key,
        &host,
        ttl_s,
    );
    let signer = Arc::new(auth::Signer::Key {
        key: (*key).clone(),
        issuer: auth::Issuer::Controller,
        host,
        ttl_s,
    });
    let verifier = Arc::new(auth::Verifier::new((*key).clone()));
    let tls = auth::tls::Tls::for_server(&config.tls)?.map(Arc::new);
    if tls.is_some() {
        tracing::info!(cert = %config.tls.cert_file, "TLS on every connection");
    }
    let config = Arc::new(config);
    let (inbox_tx, inbox_rx) = mpsc::channel(65536);
    let (snap_tx, snap_rx) = watch::channel(Arc::new(state.clone()));
    let dispatcher = dispatch::Dispatcher::new(
        inbox_tx.downgrade(),
        config.cluster_name.clone(),
        config.controller.addr.clone(),
        config.controller.kill_wait_s,
        signer,
        tls.clone(),
    );
    let (sched_tx, sched_config) = watch::channel(Arc::new(sched_config));
    let statistics = Arc::new(stats::Statistics::new(core::unix_now()));
    let core = core::Core::new(
        state,
        config.clone(),
        sched_tx,
        store.clone(),
        snap_tx,
        dispatcher,
    )
    .with_statistics(statistics.clone());
    let mut core_task = tokio::spawn(core.run(inbox_rx));
    let services = service::Services {
        inbox: inbox_tx,
        snapshot: snap_rx,
        store,
        config: config.clone(),
        config_file,
        sched_config,
        estimates: Arc::new(tokio::sync::Semaphore::new(1)),
        users: Arc::default(),
        key: key.clone(),
        grant_ttl_s: ttl_s,
        statistics,
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    tracing::info!(addr = %addr, serving_ms = started.elapsed().as_millis() as u64, "controller serving");
    let incoming = connections::incoming(listener, client_limits(&config));
    let c = &config.controller;
    let seconds = |s: u32| Duration::from_secs(u64::from(s));
    let mut server = tonic::transport::Server::builder();
    if let Some(tls) = tls.as_ref().and_then(|t| t.server_config()) {
        server = server.tls_config(tls)?;
    }
    let serve = server
        .max_concurrent_streams(c.max_streams_per_connection)
        .http2_keepalive_interval(Some(seconds(c.keepalive_s)))
        .http2_keepalive_timeout(Some(seconds(c.keepalive_s)))
        // A request's body must arrive, and its answer be ready, in this time: a
        // client that never finishes an upload holds its buffer no longer.
        .timeout(seconds(c.request_timeout_s))
        .layer(connections::WatchLayer)
        .add_service(tonic::service::interceptor::InterceptedService::new(
            proto::v1::ctld_server::CtldServer::new(services.clone())
                .max_decoding_message_size(MAX_REQUEST_BYTES)
                .max_encoding_message_size(usize::MAX),
            auth::Authenticate::anyone(verifier.clone()),
        ))
        .add_service(tonic::service::interceptor::InterceptedService::new(
            proto::v1::node_control_server::NodeControlServer::new(services)
                .max_decoding_message_size(MAX_REQUEST_BYTES),
            auth::Authenticate::only(verifier, auth::Issuer::Node),
        ))
        .serve_with_incoming_shutdown(incoming, shutdown_signal());
    // The state owner ends only by a panic (its inbox lives as long as the server):
    // then the controller stops instead of serving a frozen snapshot to readers and
    // "shutting down" to every writer. What was acknowledged is in the store.
    tokio::select! {
        served = serve => {
            core_task.abort();
            Ok(served?)
        }
        ended = &mut core_task => {
            let why = match ended {
                Err(e) if e.is_panic() => "panicked",
                _ => "stopped",
            };
            tracing::error!(why, "the state owner ended; the controller stops");
            anyhow::bail!("the state owner {why}")
        }
    }
}

/// The bounds on client connections, with the open-file limit raised to fit
/// `max_connections` (lowered, with a warning, where the hard limit does not allow).
fn client_limits(config: &Config) -> connections::Limits {
    let c = &config.controller;
    let nodes = config.node_list().len() as u64;
    let wanted = u64::from(c.max_connections);
    // At the limit, connections asked to close keep their file a moment: an eighth more.
    let needed = wanted + wanted.div_ceil(8) + nodes + RESERVED_FILES;
    let open_files = raise_open_file_limit(needed);
    let max_connections = if open_files >= needed {
        wanted
    } else {
        let fit = (open_files.saturating_sub(nodes + RESERVED_FILES) * 8 / 9).max(1);
        tracing::warn!(
            max_connections = wanted,
            open_files,
            lowered_to = fit,
            "the open-file limit does not fit max_connections; raise the hard limit \
             (ulimit -Hn, LimitNOFILE=) or lower max_connections"
        );
        fit
    };
    tracing::info!(max_connections, open_files, "client connections bounded");
    connections::Limits {
        max_connections: max_connections as usize,
        idle_timeout: Duration::from_secs(c.idle_timeout_s.into()),
        read_timeout: Duration::from_secs(c.client_read_timeout_s.into()),
    }
}

/// Raises the soft limit on open files to `wanted`, within the hard limit; returns the
/// soft limit in force.
fn raise_open_file_limit(wanted: u64) -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given, which lives through the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return wanted;
    }
    let current = limit.rlim_cur;
    if current >= wanted {
        return current;
    }
    let raised = libc::rlimit {
        rlim_cur: wanted.min(limit.rlim_max),
        rlim_max: limit.rlim_max,
    };
    // SAFETY: setrlimit only reads the struct it is given.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
        raised.rlim_cur
    } else {
        current
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("signal handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tracing::info!("controller stopping");
}
