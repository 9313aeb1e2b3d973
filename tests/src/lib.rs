//! A harness that starts a real Drover cluster for a test: `drover-ctld` and several
//! `drover-noded` processes on loopback ports, with their state in a temporary
//! directory, and runs the real CLI (through Slurm-named links) against it.
//!
//! Waits poll with a deadline; nothing sleeps a fixed time to synchronize. On drop the
//! daemons and every job process started under the cluster's directory are killed.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The directory holding the built binaries (`target/debug`).
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let mut dir = exe.parent().expect("deps dir").to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    for name in ["drover", "drover-ctld", "drover-noded", "drover-auth"] {
        assert!(
            dir.join(name).exists(),
            "{} is missing: build the binaries first (cargo build --workspace --bins)",
            dir.join(name).display()
        );
    }
    dir
}

/// Ports nobody listens on right now, below the kernel's ephemeral range (32768 and
/// up by default): a port the kernel handed out for `127.0.0.1:0` may be given to an
/// outgoing connection (a client of the daemons the test starts) before the daemon
/// that is meant to listen on it binds it. Each call takes the next ports of one
/// sequence, which starts at a place of this process's own, so that tests running side
/// by side never pick the same ones.
pub fn free_ports(n: usize) -> Vec<u16> {
    use std::sync::atomic::{AtomicU32, Ordering};
    const FIRST: u32 = 10_000;
    const SPAN: u32 = 22_000;
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let _ = NEXT.compare_exchange(
        u32::MAX,
        (std::process::id() * 997) % SPAN,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    let mut ports = Vec::with_capacity(n);
    for _ in 0..SPAN {
        if ports.len() == n {
            break;
        }
        let port = (FIRST + NEXT.fetch_add(1, Ordering::SeqCst) % SPAN) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            ports.push(port);
        }
    }
    assert_eq!(
        ports.len(),
        n,
        "no {n} free ports below the ephemeral range"
    );
    ports
}

/// Polls `f` every 20 ms until it returns true or the deadline passes.
pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if f() {
            return true;
        }
        if start.elapsed() > timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[derive(Debug, Clone)]
pub struct ClusterSpec {
    pub nodes: usize,
    pub cpus: u32,
    pub memory: String,
    pub gpus: u32,
    pub node_timeout_s: u32,
    pub kill_wait_s: u32,
    pub min_job_age_s: u32,
    /// More TOML appended to the generated config (extra partitions, ...).
    pub extra: String,
    /// More keys of its `[controller]` table.
    pub controller_extra: String,
    /// `[[nodes]]` entries replacing the generated one (which gives every node
    /// `cpus`, `memory` and `gpus`, declared with `config_overrides`: the test nodes
    /// are more than their host): they must define exactly `tn1`..`tn{nodes}`.
    pub node_entries: String,
    /// More environment variables of each node daemon, by node index.
    pub node_env: Vec<Vec<(String, String)>>,
    /// More keys of its `[auth]` table (`operators`, `administrators`).
    pub auth_extra: String,
}

impl Default for ClusterSpec {
    fn default() -> Self {
        ClusterSpec {
            nodes: 3,
            cpus: 4,
            memory: "8G".into(),
            gpus: 2,
            node_timeout_s: 5,
            kill_wait_s: 2,
            min_job_age_s: 300,
            extra: String::new(),
            controller_extra: String::new(),
            node_entries: String::new(),
            node_env: Vec::new(),
            auth_extra: String::new(),
        }
    }
}

pub struct Cluster {
    pub dir: tempfile::TempDir,
    pub conf: PathBuf,
    /// Holds `sbatch`, `squeue`, ... links to the `drover` binary.
    pub bin: PathBuf,
    /// Where tests submit from and jobs write their output by default.
    pub work: PathBuf,
    pub ctld_addr: String,
    pub node_names: Vec<String>,
    node_ports: Vec<u16>,
    ctld: Mutex<Option<Child>>,
    nodes: Mutex<Vec<Option<Child>>>,
    node_env: Vec<Vec<(String, String)>>,
    binaries: PathBuf,
}

impl Cluster {
    pub fn start(spec: ClusterSpec) -> Cluster {
        let binaries = bin_dir();
        let dir = tempfile::Builder::new()
            .prefix("drover-test-")
            .tempdir()
            .expect("tempdir");
        let ports = free_ports(spec.nodes + 1);
        let node_names: Vec<String> = (1..=spec.nodes).map(|i| format!("tn{i}")).collect();
        let conf = dir.path().join("drover.toml");
        let node_entries = if spec.node_entries.is_empty() {
            format!(
                "[[nodes]]\nnames = \"tn[1-{n}]\"\ncpus = {cpus}\nmemory = \"{memory}\"\n\
                 gpus = {gpus}\ngpu_type = \"h100\"\nconfig_overrides = true\ntmp_disk = \"1G\"\n\
                 cores_per_socket = {cpus}\n",
                n = spec.nodes,
                cpus = spec.cpus,
                memory = spec.memory,
                gpus = spec.gpus,
            )
        } else {
            spec.node_entries.clone()
        };
        let text = format!(
            r#"cluster_name = "test"
state_dir = "{state}"
[controller]
addr = "127.0.0.1:{port}"
heartbeat_interval_ms = 500
node_timeout_s = {timeout}
kill_wait_s = {kill_wait}
min_job_age_s = {min_age}
{controller_extra}
{node_entries}
[cgroup]
prefix = "{cgroup_prefix}"
{auth}
[[partitions]]
name = "debug"
nodes = "ALL"
default = true
max_time = "1:00:00"
default_time = "10:00"
{extra}
"#,
            state = dir.path().join("state").display(),
            port = ports[0],
            timeout = spec.node_timeout_s,
            kill_wait = spec.kill_wait_s,
            min_age = spec.min_job_age_s,
            extra = spec.extra,
            controller_extra = spec.controller_extra,
            cgroup_prefix = cgroup_prefix(dir.path()),
            auth = auth_section(dir.path()) + &spec.auth_extra,
        );
        std::fs::write(&conf, text).unwrap();
        let bin = dir.path().join("bin");
        let work = dir.path().join("work");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(dir.path().join("log")).unwrap();
        for name in cli::COMMANDS.iter().chain(&["drover"]) {
            std::os::unix::fs::symlink(binaries.join("drover"), bin.join(name)).unwrap();
        }
        let cluster = Cluster {
            ctld_addr: format!("127.0.0.1:{}", ports[0]),
            node_ports: ports[1..].to_vec(),
            nodes: Mutex::new((0..spec.nodes).map(|_| None).collect()),
            node_env: spec.node_env.clone(),
            node_names,
            conf,
            bin,
            work,
            dir,
            ctld: Mutex::new(None),
            binaries,
        };
        cluster.start_ctld();
        for i in 0..spec.nodes {
            cluster.start_node(i);
        }
        cluster.wait_nodes_up();
        cluster
    }

    fn log_file(&self, name: &str) -> std::fs::File {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("log").join(format!("{name}.log")))
            .unwrap()
    }

    fn spawn_daemon(
        &self,
        program: &str,
        args: &[String],
        log: &str,
        env: &[(&str, &str)],
    ) -> Child {
        let out = self.log_file(log);
        Command::new(self.binaries.join(program))
            .args(args)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {program}: {e}"))
    }

    pub fn start_ctld(&self) {
        self.start_ctld_with(&[]);
    }

    /// Starts the controller with these environment variables: `FAILPOINTS` makes it
    /// crash at one of its fault points (`ctld::core`), as `kill -9` would.
    pub fn start_ctld_with(&self, env: &[(&str, &str)]) {
        let args = vec!["--config".to_string(), self.conf.display().to_string()];
        *self.ctld.lock().unwrap() = Some(self.spawn_daemon("drover-ctld", &args, "ctld", env));
        let addr = self.ctld_addr.clone();
        let up = wait_until(Duration::from_secs(30), || {
            std::net::TcpStream::connect(&addr).is_ok()
        });
        assert!(up, "controller did not start; logs:\n{}", self.logs());
    }

    pub fn start_node(&self, i: usize) {
        let args = vec![
            "--config".to_string(),
            self.conf.display().to_string(),
            "--name".to_string(),
            self.node_names[i].clone(),
            "--listen".to_string(),
            format!("127.0.0.1:{}", self.node_ports[i]),
        ];
        let name = self.node_names[i].clone();
        let env: Vec<(&str, &str)> = self
            .node_env
            .get(i)
            .map(|vars| vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect())
            .unwrap_or_default();
        let child = self.spawn_daemon("drover-noded", &args, &name, &env);
        self.nodes.lock().unwrap()[i] = Some(child);
    }

    /// `kill -9` the controller.
    pub fn kill_ctld(&self) {
        let child = self.ctld.lock().unwrap().take();
        if let Some(mut c) = child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Waits until the controller ended by itself (at a fault point); false if it still
    /// runs when the time is up.
    pub fn wait_ctld_exit(&self, timeout: Duration) -> bool {
        wait_until(timeout, || {
            let mut ctld = self.ctld.lock().unwrap();
            match ctld.as_mut().map(|c| c.try_wait()) {
                Some(Ok(Some(_))) | None => {
                    ctld.take();
                    true
                }
                _ => false,
            }
        })
    }

    /// Waits until every node is up again after a restart of the controller (each
    /// registered, so none is UNKNOWN or DOWN).
    pub fn wait_nodes_up(&self) {
        let n = self.node_names.len();
        let up = wait_until(Duration::from_secs(30), || {
            let out = self.run(&["sinfo", "-h", "-N", "-o", "%N %T"]);
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            out.status.success()
                && text
                    .lines()
                    .filter(|l| !l.contains("unk") && !l.contains("down"))
                    .map(|l| l.split(' ').next().unwrap_or("").to_string())
                    .collect::<std::collections::BTreeSet<_>>()
                    .len()
                    == n
        });
        assert!(
            up,
            "nodes did not come back; logs:
{}",
            self.logs()
        );
    }

    /// `kill -9` a node daemon (its jobs keep running under their supervisors).
    pub fn kill_node(&self, i: usize) {
        let child = self.nodes.lock().unwrap()[i].take();
        if let Some(mut c) = child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Runs a command (`sbatch`, `squeue`, ...) from the work directory.
    pub fn command(&self, name: &str) -> Command {
        let mut c = Command::new(self.bin.join(name));
        c.current_dir(&self.work).env("DROVER_CONF", &self.conf);
        c.env(
            "PATH",
            format!(
                "{}:{}",
                self.bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        );
        for (k, _) in std::env::vars() {
            if k.starts_with("SLURM_") || k.starts_with("SBATCH_") {
                c.env_remove(k);
            }
        }
        c
    }

    pub fn run(&self, argv: &[&str]) -> Output {
        self.command(argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .output()
            .expect("run command")
    }

    /// Runs a command with `input` on its stdin.
    pub fn run_with_stdin(&self, argv: &[&str], input: &str) -> Output {
        let mut child = self
            .command(argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }

    /// Runs a command that must succeed; returns its stdout.
    pub fn ok(&self, argv: &[&str]) -> String {
        let out = self.run(argv);
        assert!(
            out.status.success(),
            "{argv:?} failed ({}):\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Submits a script body (a `#!/bin/sh` line is added) with extra sbatch args.
    pub fn sbatch(&self, args: &[&str], body: &str) -> u32 {
        let script = self.work.join(format!("job-{}.sh", unique()));
        std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
        let mut argv = vec!["sbatch", "--parsable"];
        argv.extend_from_slice(args);
        let path = script.display().to_string();
        argv.push(&path);
        let out = self.ok(&argv);
        out.trim()
            .split(';')
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|_| panic!("sbatch printed `{out}`"))
    }

    /// One `sacct` field of a job's allocation row (`sacct -n -X -P -j ID -o FIELD`).
    pub fn field(&self, id: u32, field: &str) -> String {
        let out = self.ok(&[
            "sacct",
            "-n",
            "-X",
            "-P",
            "-o",
            field,
            "-j",
            &id.to_string(),
        ]);
        out.lines().next().unwrap_or("").trim().to_string()
    }

    /// A job's `sacct` rows, its steps' included (`sacct -n -P -j ID -o FIELDS`).
    pub fn sacct_rows(&self, id: u32, fields: &str) -> String {
        self.ok(&["sacct", "-n", "-P", "-j", &id.to_string(), "-o", fields])
    }

    /// One `squeue -o` field of a job (`%T`, `%r`, `%N`, ...), trimmed; empty once the
    /// job left the queue.
    pub fn squeue_field(&self, id: u32, spec: &str) -> String {
        self.ok(&[
            "squeue",
            "-h",
            "-t",
            "all",
            "-j",
            &id.to_string(),
            "-o",
            spec,
        ])
        .trim()
        .to_string()
    }

    /// The state of a job as `squeue -t all` (or `sacct` once gone) reports it.
    pub fn state(&self, id: u32) -> String {
        let out = self.ok(&[
            "sacct",
            "-n",
            "-X",
            "-P",
            "-o",
            "State",
            "-j",
            &id.to_string(),
        ]);
        out.lines().next().unwrap_or("").trim().to_string()
    }

    /// Waits until the job's state starts with `want`; panics with logs otherwise.
    pub fn wait_state(&self, id: u32, want: &str, timeout: Duration) {
        let mut last = String::new();
        let ok = wait_until(timeout, || {
            last = self.state(id);
            last.starts_with(want)
        });
        assert!(
            ok,
            "job {id}: wanted {want}, last state `{last}`; logs:\n{}",
            self.logs()
        );
    }

    /// All daemon logs, for failure messages.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        if let Ok(entries) = std::fs::read_dir(self.dir.path().join("log")) {
            let mut paths: Vec<PathBuf> =
                entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
            paths.sort();
            for p in paths {
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(40).collect();
                out.push_str(&format!("--- {}\n", p.display()));
                for l in tail.into_iter().rev() {
                    out.push_str(l);
                    out.push('\n');
                }
            }
        }
        out
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A Unix user of this cluster (`test_user`), with a directory of their own in the
    /// cluster's directory, which they may enter (the CLI, run as them, reads the
    /// config and the command links there).
    pub fn user(&self, name: &str) -> User {
        let (uid, gid) = test_user(name);
        std::fs::set_permissions(self.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let dir = self.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        User { uid, gid, dir }
    }

    /// A command run as `u`, from `u`'s directory, with umask 027.
    pub fn command_as(&self, u: &User, name: &str) -> Command {
        let mut command = self.command(name);
        command
            .current_dir(&u.dir)
            .env("HOME", &u.dir)
            .uid(u.uid)
            .gid(u.gid);
        // SAFETY: umask is async-signal-safe.
        unsafe {
            command.pre_exec(|| {
                libc::umask(0o027);
                Ok(())
            });
        }
        command
    }

    /// Runs `argv` as `u`.
    pub fn run_as(&self, u: &User, argv: &[&str]) -> Output {
        self.command_as(u, argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .output()
            .expect("run command")
    }

    /// `sbatch --parsable ARGS` of `body` as `u`, from `u`'s directory.
    pub fn sbatch_as(&self, u: &User, args: &[&str], body: &str) -> u32 {
        let script = u.dir.join(format!("job-{}.sh", unique()));
        std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::os::unix::fs::chown(&script, Some(u.uid), Some(u.gid)).unwrap();
        let mut argv = vec!["sbatch", "--parsable"];
        argv.extend_from_slice(args);
        let path = script.display().to_string();
        argv.push(&path);
        let out = self.run_as(u, &argv);
        assert!(
            out.status.success(),
            "sbatch as {}: {}",
            u.uid,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }
}

/// A test user of a cluster (`Cluster::user`).
pub struct User {
    pub uid: u32,
    pub gid: u32,
    /// A directory of the user's own in the cluster's directory.
    pub dir: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.kill_ctld();
        for i in 0..self.node_names.len() {
            self.kill_node(i);
        }
        kill_processes_under(self.dir.path());
        remove_cgroups(&cgroup_prefix(self.dir.path()));
    }
}

/// A command run on a terminal of its own: the terminal's two ends, and all that came
/// out of it so far (read until nothing holds the slave side).
pub struct OnTerminal {
    pub child: std::process::Child,
    pub slave: std::fs::File,
    pub master: std::fs::File,
    pub seen: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    pub reader: std::thread::JoinHandle<()>,
}

pub fn on_terminal(mut command: Command, size: Option<nix::pty::Winsize>) -> OnTerminal {
    use std::io::Read;
    let pty = nix::pty::openpty(size.as_ref(), None).unwrap();
    let slave = std::fs::File::from(pty.slave);
    let child = command
        .stdin(slave.try_clone().unwrap())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave.try_clone().unwrap())
        .spawn()
        .unwrap();
    let master = std::fs::File::from(pty.master);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
    let mut reading = master.try_clone().unwrap();
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // EIO once nothing holds the slave side: the command has exited and the
            // test let go.
            while let Ok(n) = reading.read(&mut buf) {
                if n == 0 {
                    break;
                }
                seen.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    OnTerminal {
        child,
        slave,
        master,
        seen,
        reader,
    }
}

/// The `[auth]` table of a cluster in `dir`: a new cluster key there, made as an admin
/// makes it (`drover keygen`), and the credential agent's socket beside it.
pub fn auth_section(dir: &Path) -> String {
    let key = dir.join("cluster.key");
    let keygen = Command::new(bin_dir().join("drover"))
        .arg("keygen")
        .arg(&key)
        .output()
        .expect("drover keygen");
    assert!(
        keygen.status.success(),
        "drover keygen: {}",
        String::from_utf8_lossy(&keygen.stderr)
    );
    format!(
        "[auth]\nkey_file = \"{}\"\nsocket = \"{}\"\n",
        key.display(),
        dir.join("auth.sock").display()
    )
}

/// A Unix user for tests, created with `useradd` (with a home and a group of its own)
/// unless it exists; returns its uid and gid.
pub fn test_user(name: &str) -> (u32, u32) {
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, name]).output().ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    if id("-u").is_none() {
        let out = Command::new("useradd")
            .args(["--create-home", "--user-group", "--shell", "/bin/sh", name])
            .output()
            .expect("useradd (the tests run as root)");
        // 9: made meanwhile by a test running beside this one.
        assert!(
            out.status.success() || out.status.code() == Some(9),
            "useradd {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    (id("-u").expect("uid"), id("-g").expect("gid"))
}

/// The cgroup prefix of a test cluster: its own, so that clusters of concurrent tests,
/// which reuse node names and job ids, never share a job's cgroup.
pub fn cgroup_prefix(dir: &Path) -> String {
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    format!("drover-test/{name}")
}

/// The directories of cgroup `rel` in every mounted hierarchy that has one.
pub fn cgroup_dirs(rel: &str) -> Vec<PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    let mut out: Vec<PathBuf> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join(rel))
        .collect();
    out.push(root.join(rel));
    out.retain(|d| d.is_dir());
    out
}

/// Kills every process in the cgroups under `rel` and removes them, deepest first.
pub fn remove_cgroups(rel: &str) {
    fn remove(dir: &Path) {
        if let Ok(entries) = std::fs::read_dir(dir) {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    remove(&e.path());
                }
            }
        }
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
            // SAFETY: a plain signal send to a process of this test's cgroups.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        wait_until(Duration::from_secs(5), || {
            std::fs::remove_dir(dir).is_ok() || !dir.exists()
        });
    }
    for dir in cgroup_dirs(rel) {
        remove(&dir);
    }
}

/// Kills every process whose command line mentions `dir` (job supervisors and the jobs
/// they run), with their process groups.
pub fn kill_processes_under(dir: &Path) {
    let needle = dir.display().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for e in entries.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&needle) && pid != std::process::id() as i32 {
            // SAFETY: plain signal sends to processes this test started.
            unsafe {
                let pgid = libc::getpgid(pid);
                if pgid > 1 && pgid != libc::getpgrp() {
                    libc::kill(-pgid, libc::SIGKILL);
                }
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}
