//! `drover up`: a working local cluster in one command.
//!
//! It writes a config (embedded defaults: N nodes with fake CPUs, memory and GPUs) into
//! a directory, makes a `bin/` there with the Slurm-named links to this binary, starts
//! `drover-ctld` and one `drover-noded` per node on loopback, prints how to use it, and
//! stops everything on Ctrl-C. Starting it again on the same directory recovers the
//! state.
//!
//! The config in use wins over the flags: the directory's own `drover.toml` when it has
//! one (or `--config FILE`). A flag that disagrees with it is refused, naming the flag
//! and the file's value, before anything starts; so is a port that is taken: the
//! controller listens on the config's port, node daemons on the ports after it.
//!
//! ```text
//! drover up [--nodes 4] [--dir ./drover-cluster] [--port 6917] [--config FILE]
//! ```

use crate::opts::{self, OptSpec, flag, value};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

const SPECS: &[OptSpec] = &[
    value("nodes", Some('n')),
    value("dir", Some('d')),
    value("port", Some('p')),
    value("config", Some('c')),
    value("cpus", None),
    value("memory", None),
    value("gpus", None),
    flag("help", Some('h')),
];

/// The embedded default config; `{…}` fields are filled in by `drover up`.
const TEMPLATE: &str = r#"# Written by `drover up`: a local cluster on loopback. Edit and restart to change it.
cluster_name = "drover"
state_dir = "{state_dir}"

[controller]
addr = "127.0.0.1:{port}"
heartbeat_interval_ms = 1000
node_timeout_s = 10
kill_wait_s = 5
min_job_age_s = 300
# A node daemon restarted after it was set DOWN for silence is back in service.
return_to_service = 1

[[nodes]]
names = "{nodes}"
cpus = {cpus}
memory = "{memory}"
gpus = {gpus}
gpu_type = "h100"
# The nodes are more than this host: they offer what is declared here, and their GPUs
# are not probed (fake).
config_overrides = true

[[partitions]]
name = "debug"
nodes = "ALL"
default = true
max_time = "UNLIMITED"
default_time = "1:00:00"

[auth]
# Made by `drover up` at the first start, readable by its owner only.
key_file = "{dir}/cluster.key"
# Commands get their credentials here, from the controller's credential agent.
socket = "{dir}/auth.sock"
"#;

pub struct Options {
    pub nodes: u32,
    pub dir: PathBuf,
    pub port: u16,
    pub config: Option<PathBuf>,
    pub cpus: u32,
    pub memory: String,
    pub gpus: u32,
    /// The cluster flags given on the command line (`port`, `nodes`, `cpus`,
    /// `memory`, `gpus`): a config that exists already must agree with them.
    pub given: Vec<&'static str>,
}

/// The flags that shape the config `drover up` writes.
const CLUSTER_FLAGS: [&str; 5] = ["nodes", "port", "cpus", "memory", "gpus"];

pub fn parse_args(args: &[String]) -> Result<Options> {
    let p = opts::parse(SPECS, args, false)?;
    if !p.positional.is_empty() {
        bail!("unexpected argument `{}`", p.positional[0]);
    }
    let num = |key: &str, default: u32| -> Result<u32> {
        p.get(key).map_or(Ok(default), |v| {
            v.parse().with_context(|| format!("invalid --{key} `{v}`"))
        })
    };
    let port = num("port", 6917)?;
    let dir = PathBuf::from(p.get("dir").unwrap_or("drover-cluster"));
    let dir = if dir.is_absolute() {
        dir
    } else {
        std::env::current_dir()?.join(dir)
    };
    let memory = p.get("memory").unwrap_or("16G").to_string();
    model::units::parse_memory_mb(&memory)?;
    let nodes = num("nodes", 4)?;
    if nodes == 0 || nodes > 256 {
        bail!("--nodes must be between 1 and 256");
    }
    Ok(Options {
        nodes,
        dir,
        port: u16::try_from(port).context("invalid --port")?,
        config: p.get("config").map(PathBuf::from),
        cpus: num("cpus", 8)?,
        memory,
        gpus: num("gpus", 4)?,
        given: CLUSTER_FLAGS
            .into_iter()
            .filter(|f| p.get(f).is_some())
            .collect(),
    })
}

/// The config text for a local cluster.
pub fn local_config(o: &Options) -> String {
    TEMPLATE
        .replace("{state_dir}", &o.dir.join("state").display().to_string())
        .replace("{dir}", &o.dir.display().to_string())
        .replace("{port}", &o.port.to_string())
        .replace("{nodes}", &format!("node[1-{}]", o.nodes))
        .replace("{cpus}", &o.cpus.to_string())
        .replace("{memory}", &o.memory)
        .replace("{gpus}", &o.gpus.to_string())
}

/// Finds a sibling binary of this one (cargo puts them side by side), else on PATH.
fn sibling(name: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join(name)))
        .filter(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// Where a config comes from, for what an error advises.
enum Source {
    /// Written now from the flags.
    Flags,
    /// The directory's own, or `--config FILE`.
    File,
}

/// Checks the config in use against the flags and the ports, then writes the directory
/// layout: config, bin/ with links, log/. Nothing is written when a check fails.
pub fn prepare(o: &Options) -> Result<PathBuf> {
    let conf = o.dir.join("drover.toml");
    let (text, label, source) = match &o.config {
        Some(src) => (
            std::fs::read_to_string(src)
                .with_context(|| format!("cannot read {}", src.display()))?,
            src.display().to_string(),
            Source::File,
        ),
        None if conf.exists() => (
            std::fs::read_to_string(&conf)?,
            conf.display().to_string(),
            Source::File,
        ),
        None => (local_config(o), conf.display().to_string(), Source::Flags),
    };
    let config = model::Config::parse(&text, &label)?;
    if let Source::File = source {
        check_flags_agree(o, &config, &label)?;
    }
    check_ports_free(&config, &label, &source)?;
    std::fs::create_dir_all(o.dir.join("bin"))?;
    std::fs::create_dir_all(o.dir.join("log"))?;
    if o.config.is_some() || !conf.exists() {
        std::fs::write(&conf, &text)?;
    }
    let key = Path::new(&config.auth.key_file);
    if !key.exists() {
        auth::Key::generate(key)?;
    }
    let exe = std::env::current_exe()?;
    for name in crate::COMMANDS.iter().chain(["drover"].iter()) {
        let link = o.dir.join("bin").join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&exe, &link)?;
    }
    Ok(conf)
}

/// Refuses flags that disagree with a config that exists already: it wins, and
/// starting a cluster other than the one asked for would surprise.
fn check_flags_agree(o: &Options, config: &model::Config, label: &str) -> Result<()> {
    let nodes = config.node_list();
    let port = controller_port(config);
    let memory_mb = model::units::parse_memory_mb(&o.memory)?;
    let first = nodes.first();
    let mut differ = Vec::new();
    for flag in &o.given {
        let (given, has) = match *flag {
            "port" => (o.port.to_string(), port.to_string()),
            "nodes" => (o.nodes.to_string(), nodes.len().to_string()),
            "cpus" => (o.cpus.to_string(), first.map_or(0, |n| n.cpus).to_string()),
            "memory" => (
                model::units::format_memory_mb(memory_mb),
                model::units::format_memory_mb(first.map_or(0, |n| n.memory_mb)),
            ),
            _ => (
                o.gpus.to_string(),
                first.map_or(0, |n| n.gpus.len()).to_string(),
            ),
        };
        let agrees = match *flag {
            "cpus" => nodes.iter().all(|n| n.cpus == o.cpus),
            "memory" => nodes.iter().all(|n| n.memory_mb == memory_mb),
            "gpus" => nodes.iter().all(|n| n.gpus.len() == o.gpus as usize),
            _ => given == has,
        };
        if !agrees {
            differ.push(format!("--{flag} {given} (the file has {has})"));
        }
    }
    if differ.is_empty() {
        return Ok(());
    }
    bail!(
        "{label} exists and is used as it is, so {} {} not applied; edit that file and \
         start again, or start another cluster with another --dir",
        differ.join(", "),
        if differ.len() == 1 { "was" } else { "were" }
    )
}

/// The controller's port, from its `host:port` address.
fn controller_port(config: &model::Config) -> u16 {
    config
        .controller
        .addr
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or(0)
}

/// Each node daemon's name and the loopback address it listens on: the ports after
/// the controller's.
fn node_addrs(config: &model::Config) -> Vec<(String, String)> {
    let port = u32::from(controller_port(config));
    config
        .node_list()
        .into_iter()
        .enumerate()
        .map(|(i, n)| (n.name, format!("127.0.0.1:{}", port + 1 + i as u32)))
        .collect()
}

/// Every port the cluster will listen on is free now: the first taken one is named
/// before anything starts.
fn check_ports_free(config: &model::Config, label: &str, source: &Source) -> Result<()> {
    let advice = match source {
        Source::Flags => "choose other ports with --port".to_string(),
        Source::File => format!(
            "stop what uses it, or change [controller] addr in {label} (node daemons \
             listen on the ports after it)"
        ),
    };
    let last = u32::from(controller_port(config)) + config.node_list().len() as u32;
    if last > u32::from(u16::MAX) {
        bail!("the cluster's ports would end at {last}, above 65535; {advice}");
    }
    let controller = ("the controller".to_string(), config.controller.addr.clone());
    let nodes = node_addrs(config)
        .into_iter()
        .map(|(n, a)| (format!("node {n}"), a));
    for (what, addr) in std::iter::once(controller).chain(nodes) {
        if let Err(e) = std::net::TcpListener::bind(addr.as_str()) {
            let port = addr.rsplit(':').next().unwrap_or(&addr);
            if e.kind() == std::io::ErrorKind::AddrInUse {
                bail!("port {port} is in use ({what} listens on {addr}); {advice}");
            }
            bail!("cannot listen on {addr} ({what}): {e}; {advice}");
        }
    }
    Ok(())
}

fn spawn(program: &Path, args: &[String], log: &Path) -> Result<Child> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .with_context(|| format!("cannot start {}", program.display()))
}

/// Waits until `addr` accepts connections; false when `child` exits first or the
/// deadline passes.
fn wait_for_port(addr: &str, child: &mut Child, deadline: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < deadline {
        if std::net::TcpStream::connect(addr).is_ok() {
            return true;
        }
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

pub fn run(args: &[String]) -> ExitCode {
    match up(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("drover up: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// A running local cluster: the controller and its node daemons.
pub struct LocalCluster {
    pub config: model::Config,
    pub conf_path: PathBuf,
    pub dir: PathBuf,
    children: Vec<(String, Child)>,
}

impl LocalCluster {
    /// Prepares the directory and starts the daemons; returns once the controller
    /// accepts connections.
    pub fn start(o: &Options) -> Result<LocalCluster> {
        let conf_path = prepare(o)?;
        let config = model::Config::parse(
            &std::fs::read_to_string(&conf_path)?,
            &conf_path.display().to_string(),
        )?;
        let conf = conf_path.display().to_string();
        let log = o.dir.join("log");
        let mut cluster = LocalCluster {
            config,
            conf_path: conf_path.clone(),
            dir: o.dir.clone(),
            children: Vec::new(),
        };
        cluster.start_ctld()?;
        let nodes = node_addrs(&cluster.config);
        for (name, listen) in &nodes {
            let args = vec![
                "--config".into(),
                conf.clone(),
                "--name".into(),
                name.clone(),
                "--listen".into(),
                listen.clone(),
            ];
            let child = spawn(
                &sibling("drover-noded"),
                &args,
                &log.join(format!("{name}.log")),
            )?;
            cluster.children.push((name.clone(), child));
        }
        // Up means every daemon listens.
        for (i, (name, listen)) in nodes.iter().enumerate() {
            let (_, child) = &mut cluster.children[i + 1];
            if !wait_for_port(listen, child, Duration::from_secs(60)) {
                cluster.stop();
                bail!(
                    "the node daemon of {name} did not start; see {}",
                    log.join(format!("{name}.log")).display()
                );
            }
        }
        Ok(cluster)
    }

    /// Starts the controller and waits until it accepts connections.
    pub fn start_ctld(&mut self) -> Result<()> {
        let log = self.dir.join("log").join("ctld.log");
        let args = ["--config".to_string(), self.conf_path.display().to_string()];
        let mut child = spawn(&sibling("drover-ctld"), &args, &log)?;
        let up = wait_for_port(
            &self.config.controller.addr,
            &mut child,
            Duration::from_secs(60),
        );
        self.children.insert(0, ("drover-ctld".into(), child));
        if !up {
            self.stop();
            bail!("the controller did not start; see {}", log.display());
        }
        Ok(())
    }

    /// `kill -9` the controller (for restart measurements).
    pub fn kill_ctld(&mut self) {
        if let Some(pos) = self.children.iter().position(|(n, _)| n == "drover-ctld") {
            let (_, mut child) = self.children.remove(pos);
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn ctld_pid(&self) -> Option<u32> {
        self.children
            .iter()
            .find(|(n, _)| n == "drover-ctld")
            .map(|(_, c)| c.id())
    }

    pub fn node_count(&self) -> usize {
        self.children
            .iter()
            .filter(|(n, _)| n != "drover-ctld")
            .count()
    }

    /// Stops the node daemons, then the controller.
    pub fn stop(&mut self) {
        stop(&mut self.children);
        self.children.clear();
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        self.stop();
    }
}

fn up(args: &[String]) -> Result<()> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!(
            "usage: drover up [--nodes N] [--dir DIR] [--port PORT] [--config FILE] [--cpus N] [--memory SIZE] [--gpus N]\n\
             DIR/drover.toml, once written (or FILE), is used as it is: flags must agree with it."
        );
        return Ok(());
    }
    let o = parse_args(args)?;
    catch_stop_signals();
    let mut cluster = LocalCluster::start(&o)?;
    let config = &cluster.config;
    let nodes = cluster.node_count();
    println!(
        "drover: local cluster `{}` is up: controller on {}, {nodes} node{}",
        config.cluster_name,
        config.controller.addr,
        if nodes == 1 { "" } else { "s" }
    );
    println!("drover: state and logs under {}", o.dir.display());
    println!(
        "drover: to use it, run:  export PATH={}:$PATH",
        o.dir.join("bin").display()
    );
    println!("drover: press Ctrl-C to stop");
    wait_for_stop(&mut cluster.children);
    cluster.stop();
    println!("drover: stopped");
    Ok(())
}

/// Set by SIGINT or SIGTERM once `catch_stop_signals` ran.
static STOP_ASKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn ask_stop(_: libc::c_int) {
    STOP_ASKED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// From here on, Ctrl-C (or SIGTERM) asks for a clean stop instead of killing `drover
/// up` at once: one that comes while the cluster is starting takes effect as soon as it
/// is up. The daemons start with the default handlers (an exec resets caught signals).
fn catch_stop_signals() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            libc::signal(signal, ask_stop as *const () as libc::sighandler_t);
        }
    }
}

/// Blocks until SIGINT/SIGTERM, or until the controller (the first child) dies. A node
/// daemon that dies is said once; its node goes DOWN when the controller stops hearing
/// from it, and the rest of the cluster goes on, as on a real one.
fn wait_for_stop(children: &mut [(String, Child)]) {
    let mut gone = vec![false; children.len()];
    while !STOP_ASKED.load(std::sync::atomic::Ordering::SeqCst) {
        for (i, (name, child)) in children.iter_mut().enumerate() {
            if gone[i] {
                continue;
            }
            if let Ok(Some(status)) = child.try_wait() {
                if i == 0 {
                    eprintln!("drover: {name} exited ({status}); stopping the cluster");
                    return;
                }
                gone[i] = true;
                eprintln!(
                    "drover: the node daemon of {name} exited ({status}); the node goes DOWN, \
                     the rest of the cluster goes on"
                );
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stop(children: &mut [(String, Child)]) {
    // Node daemons first, then the controller. A child that exited and was reaped is
    // left alone: its pid may belong to another process by now.
    for (_, child) in children.iter_mut().rev() {
        if matches!(child.try_wait(), Ok(Some(_))) {
            continue;
        }
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    for (_, child) in children.iter_mut() {
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_config_parses() {
        let o = parse_args(&["--nodes".into(), "3".into(), "--dir".into(), "/x".into()]).unwrap();
        let text = local_config(&o);
        let c = model::Config::parse(&text, "t").unwrap();
        assert_eq!(c.node_list().len(), 3);
        assert_eq!(c.state_dir, "/x/state");
        assert!(parse_args(&["--nodes".into(), "0".into()]).is_err());
        assert!(parse_args(&["--bogus".into()]).is_err());
    }
}
