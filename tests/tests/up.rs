//! `drover up` as a new user runs it: a cluster from the embedded config, Ctrl-C stops
//! it, and starting it again on the same directory recovers the jobs. Also: a broken
//! config file is refused with its file, line and key, and unknown options of `up` and
//! `drover-bench`, flags that disagree with the config in use, and a port that is
//! taken, all before anything starts; `drover --help` and `--version`.

use std::process::{Command, Stdio};
use std::time::Duration;
use tests::{bin_dir, kill_processes_under, wait_until};

const T: Duration = Duration::from_secs(30);

fn up(dir: &std::path::Path, port: u16) -> std::process::Child {
    Command::new(bin_dir().join("drover"))
        .args([
            "up",
            "--nodes",
            "2",
            "--dir",
            &dir.display().to_string(),
            "--port",
            &port.to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("drover up")
}

/// `drover up` on ports free when it checks them: ports found free may be taken by
/// another process before it starts, which it then refuses; it is started again on
/// others. Returns once the cluster is starting (its bin directory is written).
fn up_on_free_ports(dir: &std::path::Path, slot: u16) -> (std::process::Child, u16) {
    for attempt in 0..5 {
        let port = three_free_ports(slot + 8 * attempt);
        let mut child = up(dir, port);
        let starting = wait_until(T, || {
            dir.join("bin").join("sbatch").exists() || matches!(child.try_wait(), Ok(Some(_)))
        });
        assert!(starting, "drover up neither started nor stopped");
        if dir.join("bin").join("sbatch").exists() {
            return (child, port);
        }
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        assert!(err.contains("is in use"), "{err}");
    }
    panic!("no free ports for drover up");
}

fn cmd(dir: &std::path::Path, name: &str, args: &[&str]) -> String {
    // Only the bin directory on PATH: the commands find the cluster's config by
    // themselves, as after the README's `export PATH=...`.
    // Empty until `drover up` has made the bin directory.
    Command::new(dir.join("bin").join(name))
        .args(args)
        .current_dir(dir)
        .env_remove("DROVER_CONF")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_default()
}

/// Waits until `n` nodes of the cluster in `dir` are idle; false if they never are.
fn idle_nodes(dir: &std::path::Path, n: usize) -> bool {
    wait_until(T, || {
        cmd(dir, "sinfo", &["-h", "-N", "-o", "%T"])
            .split_whitespace()
            .filter(|s| *s == "idle")
            .count()
            == n
    })
}

/// Waits until `drover up` says the cluster is up, which it does once every daemon
/// listens: a daemon that dies before then makes it stop the cluster as one that
/// did not start. False if it exits first.
fn says_up(child: &mut std::process::Child) -> bool {
    use std::io::BufRead;
    // The pipe stays open (only the reader is dropped): `drover up` writes to it again
    // when it stops.
    let mut out = std::io::BufReader::new(child.stdout.as_mut().unwrap());
    let mut line = String::new();
    while out.read_line(&mut line).unwrap_or(0) > 0 {
        if line.contains("press Ctrl-C to stop") {
            return true;
        }
        line.clear();
    }
    false
}

/// Waits until job `id` of the cluster in `dir` is COMPLETED; false if it never is.
fn completes(dir: &std::path::Path, id: &str) -> bool {
    wait_until(T, || {
        cmd(dir, "sacct", &["-n", "-X", "-P", "-o", "State", "-j", id]).trim() == "COMPLETED"
    })
}

fn interrupt_and_wait(mut child: std::process::Child) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let stopped = wait_until(T, || matches!(child.try_wait(), Ok(Some(_))));
    assert!(stopped, "drover up did not stop on Ctrl-C");
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert!(out.contains("drover: stopped"), "{out}");
}

/// A base port for `drover up` (which uses it, +1 and +2) below the ephemeral range, so
/// that no outgoing connection (the CLI's own) can grab one before the daemons bind.
/// Tests in one process pass distinct `slot`s.
fn three_free_ports(slot: u16) -> u16 {
    let start = 20_000 + (std::process::id() % 500) as u16 * 20 + slot * 10;
    (start..32_000)
        .step_by(3)
        .find(|p| (0..=2).all(|i| std::net::TcpListener::bind(("127.0.0.1", p + i)).is_ok()))
        .expect("three free ports")
}

#[test]
fn up_runs_stops_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let (first, port) = up_on_free_ports(dir.path(), 0);
    assert!(idle_nodes(dir.path(), 2));
    let id = cmd(
        dir.path(),
        "sbatch",
        &["--parsable", "--wrap", "echo from-up"],
    );
    let id = id.trim().to_string();
    assert!(!id.is_empty());
    assert!(completes(dir.path(), &id));
    assert_eq!(
        std::fs::read_to_string(dir.path().join(format!("slurm-{id}.out")))
            .unwrap()
            .trim(),
        "from-up"
    );
    interrupt_and_wait(first);

    let second = up(dir.path(), port);
    assert!(completes(dir.path(), &id));
    let next = cmd(dir.path(), "sbatch", &["--parsable", "--wrap", "true"]);
    assert!(next.trim().parse::<u32>().unwrap() > id.parse::<u32>().unwrap());
    interrupt_and_wait(second);
    kill_processes_under(dir.path());
}

/// The node daemons `drover up` (process `up`) started, by pid.
fn node_daemons(up: u32) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // The parent pid is the second field after the command's closing parenthesis.
        let parent = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let cmdline = std::fs::read_to_string(entry.path().join("cmdline")).unwrap_or_default();
        if parent == Some(up) && cmdline.contains("drover-noded") {
            out.push(pid);
        }
    }
    out.sort_unstable();
    out
}

/// One node daemon of a local cluster dies: its node goes DOWN, as on a real cluster,
/// and the rest of the cluster (`drover up` itself, the controller, the other node)
/// goes on running jobs.
#[test]
fn a_node_daemon_that_dies_takes_down_its_node_only() {
    let dir = tempfile::tempdir().unwrap();
    let (mut up, _) = up_on_free_ports(dir.path(), 4);
    assert!(says_up(&mut up));
    assert!(idle_nodes(dir.path(), 2));
    let daemons = node_daemons(up.id());
    assert_eq!(daemons.len(), 2, "{daemons:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemons[0]),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    // The controller stops hearing from it: one node DOWN, the other still idle.
    let states = || {
        let mut s: Vec<String> = cmd(dir.path(), "sinfo", &["-h", "-N", "-o", "%T"])
            .split_whitespace()
            .map(str::to_string)
            .collect();
        s.sort();
        s
    };
    let mut last = Vec::new();
    let down = wait_until(Duration::from_secs(60), || {
        last = states();
        last.iter().any(|s| s.starts_with("down")) && last.iter().any(|s| s == "idle")
    });
    assert!(down, "node states {last:?}");
    assert!(matches!(up.try_wait(), Ok(None)), "drover up stopped");
    let id = cmd(dir.path(), "sbatch", &["--parsable", "--wrap", "true"]);
    assert!(
        completes(dir.path(), id.trim()),
        "job {id} did not complete"
    );
    interrupt_and_wait(up);
    kill_processes_under(dir.path());
}

#[test]
fn broken_config_names_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("bad.toml");
    std::fs::write(
        &conf,
        "cluster_name = \"x\"\n[[nodes]]\nnames = \"n[1-2]\"\ncpus = 4\nmemroy = \"1G\"\n",
    )
    .unwrap();
    let out = Command::new(bin_dir().join("drover-ctld"))
        .args(["--config", conf.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}:5:", conf.display())), "{err}");
    assert!(err.contains("memroy"), "{err}");
    assert!(!dir.path().join("state").exists());
}

#[test]
fn up_and_bench_refuse_unknown_options_before_starting_anything() {
    let dir = tempfile::tempdir().unwrap();
    let run = |program: &str, args: &[&str]| {
        Command::new(bin_dir().join(program))
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    for (program, args, says) in [
        (
            "drover-bench",
            &["--bogus"][..],
            "unrecognized option '--bogus'",
        ),
        (
            "drover-bench",
            &["extra"][..],
            "unexpected argument `extra`",
        ),
        (
            "drover-bench",
            &["--side-only", "--no-slurm"][..],
            "exclude each other",
        ),
        (
            "drover",
            &["up", "--nodes", "0"][..],
            "--nodes must be between 1 and 256",
        ),
    ] {
        let out = run(program, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(err.lines().next().unwrap().starts_with("drover"), "{err}");
    }
    let help = run("drover-bench", &["--help"]);
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).starts_with("usage: drover-bench"));
    // Nothing was started or written.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn ctrl_c_while_the_cluster_starts_stops_it_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    // The bin directory is written once `drover up` is starting the cluster.
    let (child, port) = up_on_free_ports(dir.path(), 1);
    interrupt_and_wait(child);
    // Nothing is left behind: the controller's port is free again.
    assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_ok());
    kill_processes_under(dir.path());
}

/// What `drover up --nodes 2 --port PORT` writes, as a config a user already has.
fn existing_config(dir: &std::path::Path, port: u16) -> String {
    format!(
        "cluster_name = \"drover\"\nstate_dir = \"{}\"\n[controller]\naddr = \"127.0.0.1:{port}\"\n\
         heartbeat_interval_ms = 1000\nnode_timeout_s = 10\n[[nodes]]\nnames = \"node[1-2]\"\n\
         cpus = 8\nmemory = \"16G\"\ngpus = 4\nconfig_overrides = true\n[[partitions]]\nname = \"debug\"\nnodes = \"ALL\"\n",
        dir.join("state").display()
    )
}

#[test]
fn up_refuses_flags_that_disagree_with_the_config_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let port = three_free_ports(2);
    let conf = dir.path().join("drover.toml");
    let text = existing_config(dir.path(), port);
    std::fs::write(&conf, &text).unwrap();
    let out = Command::new(bin_dir().join("drover"))
        .args(["up", "--dir", &dir.path().display().to_string()])
        .args([
            "--port",
            &(port + 3).to_string(),
            "--nodes",
            "3",
            "--cpus",
            "8",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with(&format!("drover up: error: {}", conf.display())),
        "{err}"
    );
    for says in [
        format!("--port {} (the file has {port})", port + 3),
        "--nodes 3 (the file has 2)".to_string(),
        "were not applied".to_string(),
    ] {
        assert!(err.contains(&says), "{says}: {err}");
    }
    // --cpus agrees with the file, so it is not named.
    assert!(!err.contains("--cpus"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // Nothing was started or written.
    assert_eq!(std::fs::read_to_string(&conf).unwrap(), text);
    assert!(!dir.path().join("log").exists() && !dir.path().join("bin").exists());
    assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_ok());
}

#[test]
fn up_names_a_taken_node_port_before_starting_anything() {
    let dir = tempfile::tempdir().unwrap();
    let port = three_free_ports(3);
    let _taken = std::net::TcpListener::bind(("127.0.0.1", port + 2)).unwrap();
    let out = Command::new(bin_dir().join("drover"))
        .args([
            "up",
            "--nodes",
            "2",
            "--dir",
            &dir.path().display().to_string(),
        ])
        .args(["--port", &port.to_string()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "port {} is in use (node node2 listens on",
            port + 2
        )),
        "{err}"
    );
    assert!(err.contains("choose other ports with --port"), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("is up"));
    // The controller never started, and nothing was written.
    assert!(std::net::TcpListener::bind(("127.0.0.1", port)).is_ok());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    // In a directory with a config, the advice is to edit that config.
    std::fs::write(
        dir.path().join("drover.toml"),
        existing_config(dir.path(), port),
    )
    .unwrap();
    let out = Command::new(bin_dir().join("drover"))
        .args(["up", "--dir", &dir.path().display().to_string()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("port {} is in use", port + 2)),
        "{err}"
    );
    assert!(err.contains("change [controller] addr in"), "{err}");
}

#[test]
fn drover_help_lists_every_command_and_version_names_slurms() {
    let out = Command::new(bin_dir().join("drover"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for name in [
        "up", "why", "export", "sbatch", "squeue", "sinfo", "scancel", "scontrol", "sacct",
        "sacctmgr", "sreport", "srun", "sprio", "sshare", "sstat", "sbcast", "sattach", "sdiag",
        "strigger",
    ] {
        let lines = help
            .lines()
            .filter(|l| l.starts_with(&format!("  {name} ")))
            .count();
        assert_eq!(lines, 1, "{name}:\n{help}");
    }
    let out = Command::new(bin_dir().join("drover"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let version = String::from_utf8_lossy(&out.stdout);
    assert!(version.starts_with("drover "), "{version}");
    assert!(version.trim_end().ends_with("(Slurm 22.05.8)"), "{version}");
    assert_eq!(version.lines().count(), 1, "{version}");
}
