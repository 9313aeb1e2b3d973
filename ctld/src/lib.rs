//! drover-ctld, the controller: owns the cluster state, keeps it durable in sled,
//! schedules, tells node daemons what to run, and answers clients.
//!
//! `core` is the state owner's loop, `rules` the controller's decisions (pure
//! functions of the state, a domain command from `command`, and the time), `store` the
//! durable state behind a trait (the only code that touches sled), `service` the gRPC
//! front that turns the wire into commands, `dispatch` the RPCs to node daemons,
//! `validate` the submit checks, `reservations` the reservation changes.

pub mod command;
pub mod core;
pub mod dispatch;
pub mod reservations;
pub mod rules;
pub mod service;
pub mod store;
pub mod validate;

use anyhow::Context;
use model::{ClusterState, Config};
use std::path::PathBuf;
use std::sync::Arc;
use store::Store;
use tokio::sync::{mpsc, watch};

/// Opens the store, restores the state and serves until the process is stopped.
pub async fn run(config: Config) -> anyhow::Result<()> {
    let state_dir = PathBuf::from(&config.state_dir).join("ctld");
    std::fs::create_dir_all(&state_dir)
        .with_context(|| format!("cannot create state directory {}", state_dir.display()))?;
    let started = std::time::Instant::now();
    let store = Arc::new(store::SledStore::open(
        &state_dir.join("store"),
        u64::from(config.controller.state_min_free_mb) << 20,
    )?);
    let kept = store.load()?;
    let job_count = kept.jobs.len();
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
    let config = Arc::new(config);
    let (inbox_tx, inbox_rx) = mpsc::channel(65536);
    let (snap_tx, snap_rx) = watch::channel(Arc::new(state.clone()));
    let dispatcher = dispatch::Dispatcher::new(
        inbox_tx.downgrade(),
        config.cluster_name.clone(),
        config.controller.addr.clone(),
        config.controller.kill_wait_s,
    );
    let core = core::Core::new(state, config.clone(), store.clone(), snap_tx, dispatcher);
    let core_task = tokio::spawn(core.run(inbox_rx));
    let services = service::Services {
        inbox: inbox_tx,
        snapshot: snap_rx,
        store,
        config: config.clone(),
        sched_config: Arc::new(sched::SchedConfig::from_config(&config)),
        estimates: Arc::new(tokio::sync::Semaphore::new(1)),
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    tracing::info!(addr = %addr, serving_ms = started.elapsed().as_millis() as u64, "controller serving");
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let limit = 64 << 20;
    tonic::transport::Server::builder()
        .add_service(
            proto::v1::ctld_server::CtldServer::new(services.clone())
                .max_decoding_message_size(limit)
                .max_encoding_message_size(usize::MAX),
        )
        .add_service(proto::v1::node_control_server::NodeControlServer::new(
            services,
        ))
        .serve_with_incoming_shutdown(incoming, shutdown_signal())
        .await?;
    core_task.abort();
    Ok(())
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
