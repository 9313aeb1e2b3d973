//! A login host that runs no daemon: `drover-auth` alone serves the credential agent, at
//! a socket of its own (a second "host" on this machine) with the cluster key, and a
//! real user's commands that ask it are taken by the controller as that user. Without
//! it those commands fail and say why; without the key it does not start.

use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Output, Stdio};
use std::time::Duration;
use tests::{Cluster, ClusterSpec, User, wait_until};

const T: Duration = Duration::from_secs(30);

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The cluster's config as a login host has it: `[auth] socket` at `socket` (and
/// `key_file` at `key`, where given), the rest the same.
fn login_config(c: &Cluster, name: &str, socket: &Path, key: Option<&Path>) -> PathBuf {
    let text = std::fs::read_to_string(&c.conf).unwrap();
    let cluster_socket = format!("socket = \"{}\"", c.path().join("auth.sock").display());
    assert!(text.contains(&cluster_socket), "{text}");
    let mut text = text.replace(
        &cluster_socket,
        &format!("socket = \"{}\"", socket.display()),
    );
    if let Some(key) = key {
        let cluster_key = format!("key_file = \"{}\"", c.path().join("cluster.key").display());
        assert!(text.contains(&cluster_key), "{text}");
        text = text.replace(&cluster_key, &format!("key_file = \"{}\"", key.display()));
    }
    let path = c.path().join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// `drover-auth --config CONF --host login1`, its stderr piped or in the cluster's log.
fn drover_auth(c: &Cluster, conf: &Path, log: Option<&str>) -> Child {
    let mut command = std::process::Command::new(tests::bin_dir().join("drover-auth"));
    command
        .args(["--config", &conf.display().to_string(), "--host", "login1"])
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    match log {
        Some(name) => {
            let file =
                std::fs::File::create(c.path().join("log").join(format!("{name}.log"))).unwrap();
            command.stderr(file);
        }
        None => {
            command.stderr(Stdio::piped());
        }
    }
    command.spawn().expect("start drover-auth")
}

/// How `child` exited, if it did within `timeout`; killed otherwise.
fn exit_within(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let mut status = None;
    wait_until(timeout, || {
        status = child.try_wait().unwrap();
        status.is_some()
    });
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    status
}

/// `argv` as `u` on the login host: its config, so its agent.
fn run_on_login(c: &Cluster, u: &User, conf: &Path, argv: &[&str]) -> Output {
    c.command_as(u, argv[0])
        .env("DROVER_CONF", conf)
        .args(&argv[1..])
        .stdin(Stdio::null())
        .output()
        .expect("run command")
}

#[test]
fn a_login_host_agent_vouches_for_its_users_and_nothing_else_does_there() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    let carol = c.user("drover-carol");
    let socket = c.path().join("login").join("auth.sock");
    let conf = login_config(&c, "login", &socket, None);
    let script = carol.dir.join("held.sh");
    std::fs::write(&script, "#!/bin/sh\ntrue\n").unwrap();
    std::os::unix::fs::chown(&script, Some(carol.uid), Some(carol.gid)).unwrap();
    let script = script.display().to_string();

    // No agent at the login host's socket: the command says which socket, and fails.
    let out = run_on_login(
        &c,
        &carol,
        &conf,
        &["sbatch", "--parsable", "--hold", &script],
    );
    assert!(!out.status.success(), "submitted without an agent");
    let expected = format!(
        "cannot get a credential from the agent at {}",
        socket.display()
    );
    assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
    assert!(
        c.ok(&["squeue", "-h", "-t", "all", "-o", "%i"])
            .trim()
            .is_empty(),
        "a job was queued"
    );

    let mut agent = drover_auth(&c, &conf, Some("login1"));
    let mut early = None;
    let up = wait_until(T, || {
        early = agent.try_wait().unwrap();
        early.is_none() && std::os::unix::net::UnixStream::connect(&socket).is_ok()
    });
    assert!(
        up,
        "drover-auth did not serve ({early:?}); logs:\n{}",
        c.logs()
    );

    // Carol submits from the login host and the controller takes the job as hers.
    let out = run_on_login(
        &c,
        &carol,
        &conf,
        &["sbatch", "--parsable", "--hold", &script],
    );
    assert!(out.status.success(), "sbatch: {}", stderr(&out));
    let id: u32 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("sbatch printed {:?}", out.stdout));
    let job = id.to_string();
    let out = run_on_login(
        &c,
        &carol,
        &conf,
        &["squeue", "-h", "-j", &job, "-o", "%u %U %T"],
    );
    assert!(out.status.success(), "squeue: {}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("drover-carol {} PENDING", carol.uid)
    );
    // As seen through the cluster's own agent too, and hers to cancel from the login host.
    assert_eq!(c.squeue_field(id, "%u"), "drover-carol");
    let out = run_on_login(&c, &carol, &conf, &["scancel", &job]);
    assert!(out.status.success(), "scancel: {}", stderr(&out));
    c.wait_state(id, "CANCELLED", T);

    // A second drover-auth on the same socket does not stand by: it says who serves it.
    let mut second = drover_auth(&c, &conf, None);
    let status = exit_within(&mut second, T).expect("a second drover-auth kept running");
    assert!(!status.success());
    let mut said = String::new();
    std::io::Read::read_to_string(&mut second.stderr.take().unwrap(), &mut said).unwrap();
    assert!(
        said.contains(&format!(
            "a credential agent already serves {}",
            socket.display()
        )),
        "{said}"
    );

    // SIGTERM stops the agent cleanly; the login host's commands then fail again.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(agent.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = exit_within(&mut agent, T).expect("drover-auth ignored SIGTERM");
    assert!(
        status.success(),
        "drover-auth: {status}; logs:\n{}",
        c.logs()
    );
    let out = run_on_login(&c, &carol, &conf, &["squeue", "-h"]);
    assert!(!out.status.success(), "squeue without an agent succeeded");
    assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
}

#[test]
fn drover_auth_without_the_cluster_key_names_the_file_and_exits() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    let socket = c.path().join("keyless").join("auth.sock");
    let missing = c.path().join("no-such-dir").join("cluster.key");
    let conf = login_config(&c, "keyless", &socket, Some(&missing));
    let mut agent = drover_auth(&c, &conf, None);
    let status = exit_within(&mut agent, T).expect("drover-auth without a key kept running");
    assert!(!status.success());
    let mut said = String::new();
    std::io::Read::read_to_string(&mut agent.stderr.take().unwrap(), &mut said).unwrap();
    let lines: Vec<&str> = said.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{said}");
    assert!(
        lines[0].contains(&format!(
            "cannot read the cluster key {}",
            missing.display()
        )) && lines[0].contains("copied to this host"),
        "{said}"
    );
    assert!(
        std::os::unix::net::UnixStream::connect(&socket).is_err(),
        "something serves the keyless host's socket"
    );
}
