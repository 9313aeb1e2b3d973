//! Wiring of the daemon: config, resources, spool, the controller client, recovery of
//! the jobs of an earlier run, the `NodeAgent` server and the registration loop.

use anyhow::Context;
use noded::agent::Agent;
use noded::jobs::Jobs;
use noded::launch::CgroupPlacement;
use noded::spool::Spool;
use noded::{cgroup, control, inventory, procfs};
use proto::v1::node_agent_server::NodeAgentServer;
use proto::v1::node_control_client::NodeControlClient;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tracing::{info, warn};

/// Reported job directories are kept this long, for post-mortems.
const REPORTED_RETENTION: Duration = Duration::from_secs(600);

pub struct Options {
    pub config: PathBuf,
    pub name: Option<String>,
    pub listen: SocketAddr,
    pub spool: Option<PathBuf>,
    pub ctld_addr: Option<String>,
}

pub async fn run(opts: Options) -> anyhow::Result<()> {
    let config_label = opts.config.display().to_string();
    let text = std::fs::read_to_string(&opts.config)
        .with_context(|| format!("reading config {config_label}"))?;
    let config = model::Config::parse(&text, &config_label)?;
    let name = match opts.name {
        Some(name) => name,
        None => noded::host::short_hostname().context("finding the host name (pass --name)")?,
    };
    let declared = config.node_entry(&name).is_some_and(|e| e.config_overrides);
    let nvml = if declared {
        None
    } else {
        match noded::nvml::NvmlGpus::load() {
            Ok(gpus) => Some(Arc::new(gpus)),
            Err(why) => {
                info!(reason = %why, "no NVIDIA driver: this node has no GPUs to offer");
                None
            }
        }
    };
    let host_gpus: &dyn inventory::GpuInventory = match &nvml {
        Some(gpus) => gpus.as_ref(),
        None => &inventory::NoGpus,
    };
    let resources = inventory::node_resources(&config, &name, host_gpus)?;
    if resources.from_config {
        info!(node = %name, gpus = resources.gpus.len(), "config_overrides: offering what the config declares; GPUs not probed (fake)");
    } else if config.node_entry(&name).is_none() {
        warn!(node = %name, "node not in the config; offering the host's cpus and memory");
    } else {
        info!(node = %name, cpus = resources.cpus, memory_mb = resources.memory_mb, gpus = resources.gpus.len(), gpu_backend = host_gpus.backend(), "found on this host");
    }
    let spool_dir = opts
        .spool
        .unwrap_or_else(|| Path::new(&config.state_dir).join(format!("noded-{name}")));
    let spool = Spool::open(&spool_dir)?;
    let key = Arc::new(
        auth::Key::load(Path::new(&config.auth.key_file)).map_err(|e| {
            anyhow::anyhow!("{e} (the controller's cluster key, copied to this node)")
        })?,
    );
    let ttl_s = i64::from(config.auth.credential_ttl_s);
    auth::agent::start(Path::new(&config.auth.socket), &key, &name, ttl_s);
    let signer = Arc::new(auth::Signer::Key {
        key: (*key).clone(),
        issuer: auth::Issuer::Node,
        host: name.clone(),
        ttl_s,
    });
    let ctld_addr = opts
        .ctld_addr
        .unwrap_or_else(|| config.controller.addr.clone());
    let tls = auth::tls::Tls::for_server(&config.tls)?;
    let channel = auth::tls::endpoint(&ctld_addr, tls.as_ref())
        .with_context(|| format!("bad controller address {ctld_addr}"))?
        .connect_timeout(Duration::from_secs(1))
        .timeout(Duration::from_secs(10))
        .tcp_nodelay(true)
        .connect_lazy();
    let ctld = NodeControlClient::new(auth::Signed::new(channel, signer));

    let listener = tokio::net::TcpListener::bind(opts.listen)
        .await
        .with_context(|| format!("listening on {}", opts.listen))?;
    let local = listener.local_addr()?;
    let agent_addr = if local.ip().is_unspecified() {
        format!("{name}:{}", local.port())
    } else {
        local.to_string()
    };

    let exe = std::env::current_exe().context("finding this binary (for job supervisors)")?;
    let jobs = Jobs::new(name.clone(), spool, exe, ctld.clone());
    let pin = noded::affinity::node_fits_host(resources.cpus);
    if !pin {
        info!(node = %name, cpus = resources.cpus, "node has more cpus than this host; jobs are not pinned to cpu ids");
    }
    jobs.set_cpu_pinning(pin);
    jobs.set_confinement(noded::jobs::Confinement {
        cgroup: cgroup_placement(&config.cgroup),
        gpu_files: resources.gpu_files.clone(),
        gpu_uuids: resources.gpus.iter().map(|g| g.uuid.clone()).collect(),
        gpu_numa: resources.gpus.iter().map(|g| g.numa).collect(),
        gpu_types: resources.gpus.iter().map(|g| g.gpu_type.clone()).collect(),
        gpu_memory_mb: resources.gpu_memory_mb.clone(),
        prolog: config.node_daemon.prolog.clone(),
        epilog: config.node_daemon.epilog.clone(),
    });
    let recovered = jobs.recover()?;
    let registration = control::Registration {
        node_name: name.clone(),
        agent_addr: agent_addr.clone(),
        resources: resources.clone(),
        boot_time: procfs::boot_time().unwrap_or_else(noded::unix_now),
    };
    let default_interval =
        Duration::from_millis(u64::from(config.controller.heartbeat_interval_ms.max(1)));
    let health = Arc::new(noded::health::Health::default());
    let site = &config.node_daemon;
    if !site.health_check_program.is_empty() {
        // With no interval, only at start (as slurmd runs it before it registers).
        let every = (site.health_check_interval_s > 0)
            .then(|| Duration::from_secs(u64::from(site.health_check_interval_s)));
        tokio::spawn(noded::health::run(
            site.health_check_program.clone(),
            name.clone(),
            every,
            health.clone(),
        ));
    }
    tokio::spawn(control::run(
        jobs.clone(),
        ctld,
        registration,
        default_interval,
        health,
    ));
    if let Some(gpus) = nvml.clone()
        && site.gpu_sample_interval_s > 0
    {
        let every = Duration::from_secs(u64::from(site.gpu_sample_interval_s));
        info!(
            every_s = site.gpu_sample_interval_s,
            "sampling jobs' GPUs through NVML"
        );
        tokio::spawn(noded::gpu_sampler::run(jobs.clone(), gpus, every));
    }
    let sweeper_jobs = jobs.clone();
    tokio::spawn(async move {
        loop {
            let removed = sweeper_jobs.spool().sweep_reported(REPORTED_RETENTION);
            if removed > 0 {
                info!(removed, "removed reported job directories");
            }
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
    });

    info!(
        node = %name,
        addr = %agent_addr,
        controller = %ctld_addr,
        cpus = resources.cpus,
        memory_mb = resources.memory_mb,
        gpus = resources.gpus.len(),
        spool = %spool_dir.display(),
        recovered,
        "noded ready"
    );
    let verifier = Arc::new(auth::Verifier::new((*key).clone()));
    let mut server = Server::builder();
    if let Some(tls) = tls.as_ref().and_then(|t| t.server_config()) {
        server = server.tls_config(tls)?;
    }
    server
        .add_service(tonic::service::interceptor::InterceptedService::new(
            NodeAgentServer::new(Agent::new(
                jobs,
                config.node_daemon.mail_program().to_string(),
                key,
            )),
            auth::Authenticate::anyone(verifier),
        ))
        .serve_with_incoming_shutdown(
            TcpIncoming::from(listener).with_nodelay(Some(true)),
            noded::host::stop_requested(),
        )
        .await
        .context("serving NodeAgent")?;
    info!("noded stopped; jobs keep running under their supervisors");
    Ok(())
}

/// Where jobs' cgroups go, found once; says in one line what is not enforced.
fn cgroup_placement(config: &model::config::CgroupConfig) -> Option<CgroupPlacement> {
    let found = match config.mode {
        model::config::CgroupMode::Off => Err(cgroup::Unavailable::Off),
        model::config::CgroupMode::Auto => cgroup::Hierarchy::detect(),
    };
    match found {
        Ok(hierarchy) => {
            let missing: Vec<&str> = hierarchy.missing().iter().map(|c| c.enforces()).collect();
            if missing.is_empty() {
                info!(version = hierarchy.version(), prefix = %config.prefix, "jobs confined in cgroups");
            } else {
                warn!(
                    version = hierarchy.version(),
                    prefix = %config.prefix,
                    not_enforced = %missing.join(", "),
                    "jobs confined in cgroups, but some controllers are missing"
                );
            }
            Some(CgroupPlacement {
                hierarchy,
                prefix: config.prefix.clone(),
                max_tasks: config.max_tasks_per_job,
            })
        }
        Err(why) => {
            warn!(
                reason = %why,
                not_enforced = "CPU, memory and GPU device limits, out-of-memory detection; \
                                processes are tracked by process group",
                "jobs are not confined in cgroups"
            );
            None
        }
    }
}

/// `drover-noded inventory`: what this host offers, as found, in Slurm's words
/// (`slurmd -C`), then one line per GPU.
pub fn inventory_text(name: Option<String>) -> anyhow::Result<String> {
    let name = match name {
        Some(n) => n,
        None => noded::host::short_hostname()?,
    };
    let nvml = noded::nvml::NvmlGpus::load();
    let host_gpus: &dyn inventory::GpuInventory = match &nvml {
        Ok(gpus) => gpus,
        Err(_) => &inventory::NoGpus,
    };
    let empty = model::Config::parse("", "(none)")?;
    let r = inventory::node_resources(&empty, &name, host_gpus)?;
    let mut types: Vec<(String, usize)> = Vec::new();
    for g in &r.gpus {
        match types.iter_mut().find(|(t, _)| *t == g.gpu_type) {
            Some((_, n)) => *n += 1,
            None => types.push((g.gpu_type.clone(), 1)),
        }
    }
    let gres: Vec<String> = types.iter().map(|(t, n)| format!("gpu:{t}:{n}")).collect();
    let topology = noded::topology::discover();
    let layout = match &topology {
        Ok(t) => format!(" {}", t.slurmd_layout()),
        Err(_) => String::new(),
    };
    let mut out = format!(
        "NodeName={name} CPUs={}{layout} RealMemory={}{}\n",
        r.cpus,
        r.memory_mb,
        if gres.is_empty() {
            String::new()
        } else {
            format!(" Gres={}", gres.join(","))
        }
    );
    match &topology {
        Ok(t) => {
            for (node, cpus) in &t.numa_nodes {
                out.push_str(&format!(
                    "NUMA {node} cpus={}\n",
                    model::job::format_ranges(cpus)
                ));
            }
        }
        Err(why) => out.push_str(&format!("# no topology: {why}\n")),
    }
    if let Err(why) = &nvml {
        out.push_str(&format!("# no GPUs: {why}\n"));
    }
    for (g, file) in r.gpus.iter().zip(&r.gpu_files) {
        out.push_str(&format!(
            "GPU {} type={} uuid={} numa={} nvlink_domain={} file={file}\n",
            g.index, g.gpu_type, g.uuid, g.numa, g.nvlink
        ));
    }
    Ok(out)
}
