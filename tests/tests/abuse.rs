//! Hostile and broken clients against a real controller with a queue of 3,000 jobs:
//! hundreds of `ListJobSummaries` streams nobody reads, uploads that never finish, idle
//! sockets, and more connections than `max_connections`, all at once. Meanwhile
//! `squeue` of another client answers every call, each in under 2 s; every abusive
//! connection is closed by the controller; the controller's memory grows by less than
//! 200 MB (each unread listing holds its one built chunk until its connection is
//! closed: about 0.6 MB here, 120 MB for the 200), less than 80 MB of which it keeps
//! once they are closed; and its open files stay within `max_connections` and an
//! eighth more (those asked to close keep theirs a moment) above what it had before.
//!
//! The abusers speak HTTP/2 by hand over plain sockets (frames and literal HPACK
//! headers), so that they can misbehave as no library would: announce a flow-control
//! window of 0 and never open it, answer pings to look alive, stop an upload midway.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tests::{Cluster, ClusterSpec, wait_until};

/// The bounds under test, small so that the test is short.
const LIMITS: &str = "max_connections = 64\nmax_streams_per_connection = 16\n\
                      idle_timeout_s = 5\nrequest_timeout_s = 5\nclient_read_timeout_s = 5\n\
                      keepalive_s = 2\n";
const MAX_CONNECTIONS: usize = 64;
const JOBS: usize = 3000;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const END_STREAM: u8 = 1;
const ACK: u8 = 1;
const END_HEADERS: u8 = 4;
/// SETTINGS_INITIAL_WINDOW_SIZE.
const INITIAL_WINDOW_SIZE: u16 = 4;

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A request's header block: literal fields without indexing, no Huffman coding.
fn request_headers(path: &str) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", path),
        (":authority", "127.0.0.1"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ] {
        block.push(0);
        for s in [name, value] {
            assert!(s.len() < 127);
            block.push(s.len() as u8);
            block.extend_from_slice(s.as_bytes());
        }
    }
    block
}

/// A gRPC message's 5-byte prefix for `len` bytes of protobuf.
fn grpc_prefix(len: u32) -> Vec<u8> {
    let mut p = vec![0];
    p.extend_from_slice(&len.to_be_bytes());
    p
}

/// One raw connection to the controller. A thread reads everything it is sent,
/// answers SETTINGS and PING when `alive` (so that keep-alive never closes it), never
/// opens a flow-control window, and notes when the controller closes the connection.
struct Raw {
    /// Writes of the test and of the reader, one whole frame sequence at a time.
    socket: Arc<Mutex<TcpStream>>,
    closed: Arc<AtomicBool>,
    /// Streams the controller answered with HEADERS.
    answered: Arc<Mutex<Vec<u32>>>,
}

impl Raw {
    /// Connects and sends `hello` before anything else, then starts the reader.
    fn open(addr: &str, hello: &[u8], alive: bool) -> Raw {
        let mut socket = TcpStream::connect(addr).expect("connect");
        socket.write_all(hello).unwrap();
        let closed = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(Mutex::new(Vec::new()));
        let mut reader = socket.try_clone().unwrap();
        let socket = Arc::new(Mutex::new(socket));
        let writer = socket.clone();
        let (closed_flag, answers) = (closed.clone(), answered.clone());
        std::thread::spawn(move || {
            let mut head = [0u8; 9];
            loop {
                if reader.read_exact(&mut head).is_err() {
                    break;
                }
                let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
                let (kind, flags) = (head[3], head[4]);
                let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & !(1 << 31);
                let mut payload = vec![0; len];
                if reader.read_exact(&mut payload).is_err() {
                    break;
                }
                let reply = match (kind, flags & ACK) {
                    (SETTINGS, 0) if alive => frame(SETTINGS, ACK, 0, &[]),
                    (PING, 0) if alive => frame(PING, ACK, 0, &payload),
                    (HEADERS, _) => {
                        answers.lock().unwrap().push(stream);
                        continue;
                    }
                    _ => continue,
                };
                if writer.lock().unwrap().write_all(&reply).is_err() {
                    break;
                }
            }
            closed_flag.store(true, Ordering::SeqCst);
        });
        Raw {
            socket,
            closed,
            answered,
        }
    }

    /// Opens an HTTP/2 connection. With `window` 0 the controller may send headers on
    /// it, never data; with the default (64 KB) it may send that much, never more.
    fn http2(addr: &str, window: Option<u32>) -> Raw {
        let mut hello = PREFACE.to_vec();
        let mut settings = Vec::new();
        if let Some(window) = window {
            settings.extend_from_slice(&INITIAL_WINDOW_SIZE.to_be_bytes());
            settings.extend_from_slice(&window.to_be_bytes());
        }
        hello.extend(frame(SETTINGS, 0, 0, &settings));
        Raw::open(addr, &hello, true)
    }

    /// Asks for the config on `stream`: once answered, every request sent before it on
    /// the connection is in the controller's hands.
    fn get_config(&self, stream: u32) {
        let mut out = frame(
            HEADERS,
            END_HEADERS,
            stream,
            &request_headers("/drover.v1.Ctld/GetConfig"),
        );
        out.extend(frame(DATA, END_STREAM, stream, &grpc_prefix(0)));
        self.send(&out);
    }

    /// Asks for squeue's listing on `stream`, and never reads it.
    fn unread_listing(&self, stream: u32) {
        let mut out = frame(
            HEADERS,
            END_HEADERS,
            stream,
            &request_headers("/drover.v1.Ctld/ListJobSummaries"),
        );
        out.extend(frame(DATA, END_STREAM, stream, &grpc_prefix(0)));
        self.send(&out);
    }

    /// Starts a 2 MB submit on `stream` and sends 15 KB of it, no more (within the
    /// 64 KB a connection may send before the controller's first window update).
    fn unfinished_upload(&self, stream: u32) {
        let mut out = frame(
            HEADERS,
            END_HEADERS,
            stream,
            &request_headers("/drover.v1.Ctld/SubmitJob"),
        );
        let mut body = grpc_prefix(2 << 20);
        body.resize(15 << 10, b'x');
        out.extend(frame(DATA, 0, stream, &body));
        self.send(&out);
    }

    fn send(&self, bytes: &[u8]) {
        self.socket.lock().unwrap().write_all(bytes).unwrap();
    }

    fn answered(&self) -> usize {
        self.answered.lock().unwrap().len()
    }

    fn answered_on(&self, stream: u32) -> bool {
        self.answered.lock().unwrap().contains(&stream)
    }

    fn closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

/// The controller's process id, found by its config's path on its command line.
fn ctld_pid(c: &Cluster) -> u32 {
    let conf = c.conf.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .find(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline);
            cmdline.contains("drover-ctld") && cmdline.contains(&conf)
        })
        .expect("the controller's process")
}

/// Resident memory in KB and open files of a process.
fn usage(pid: u32) -> (u64, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss_kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let files = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    (rss_kb, files)
}

fn squeue_lines(c: &Cluster) -> usize {
    c.ok(&["squeue", "-h", "-o", "%i"]).lines().count()
}

#[test]
fn hostile_clients_are_bounded_and_squeue_stays_fast() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    // The same controller, with small bounds.
    c.kill_ctld();
    let text = std::fs::read_to_string(&c.conf).unwrap();
    let text = text.replace("[controller]\n", &format!("[controller]\n{LIMITS}"));
    std::fs::write(&c.conf, text).unwrap();
    c.start_ctld();

    // A 2 MB script is within the request bound.
    let script = c.work.join("big.sh");
    let filler = "# filler line of a large script\n".repeat((2 << 20) / 32);
    std::fs::write(&script, format!("#!/bin/sh\n{filler}true\n")).unwrap();
    let big = c.ok(&["sbatch", "--parsable", "-H", &script.display().to_string()]);
    assert!(big.trim().parse::<u32>().is_ok(), "{big}");

    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..(JOBS - 1) / 4 {
                    c.ok(&["sbatch", "--parsable", "-H", "--wrap", "true"]);
                }
            });
        }
    });
    let queued = 1 + (JOBS - 1) / 4 * 4;
    assert_eq!(squeue_lines(&c), queued);

    let pid = ctld_pid(&c);
    let (rss_before, files_before) = usage(pid);
    let addr = c.ctld_addr.as_str();

    // 200 listings nobody reads: 20 connections of 10 streams each, whose window is
    // 0. Every listing was taken once its answer's headers came.
    let listings: Vec<Raw> = (0..20).map(|_| Raw::http2(addr, Some(0))).collect();
    for raw in &listings {
        for i in 0..10 {
            raw.unread_listing(1 + 2 * i);
        }
    }
    let taken = wait_until(Duration::from_secs(30), || {
        listings.iter().all(|r| r.answered() == 10)
    });
    let answered: Vec<usize> = listings.iter().map(Raw::answered).collect();
    assert!(
        taken,
        "answers per connection: {answered:?}; logs:\n{}",
        c.logs()
    );
    // 40 uploads that never finish: 10 connections of 4, each followed by a request
    // whose answer says the uploads were taken.
    let uploads: Vec<Raw> = (0..10).map(|_| Raw::http2(addr, None)).collect();
    for raw in &uploads {
        for i in 0..4 {
            raw.unfinished_upload(1 + 2 * i);
        }
        raw.get_config(9);
    }
    assert!(wait_until(Duration::from_secs(30), || uploads
        .iter()
        .all(|r| r.answered_on(9))));
    // Idle connections: 10 that speak HTTP/2 and answer pings, 20 that say nothing.
    // With the others and the node daemon's, within max_connections.
    let mut idle: Vec<Raw> = (0..10).map(|_| Raw::http2(addr, None)).collect();
    idle.extend((0..20).map(|_| Raw::open(addr, &[], false)));
    // More connections than max_connections, silent: each closes the connection idle
    // longest, or waits for room.
    let crowd: Vec<Raw> = (0..MAX_CONNECTIONS + 36)
        .map(|_| Raw::open(addr, &[], false))
        .collect();

    let peak = Arc::new(Mutex::new((rss_before, files_before)));
    let watching = Arc::new(AtomicBool::new(true));
    let watcher = {
        let (peak, watching) = (peak.clone(), watching.clone());
        std::thread::spawn(move || {
            while watching.load(Ordering::SeqCst) {
                let (rss, files) = usage(pid);
                let mut p = peak.lock().unwrap();
                *p = (p.0.max(rss), p.1.max(files));
                drop(p);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };

    let mut slowest = Duration::ZERO;
    for _ in 0..5 {
        let started = Instant::now();
        assert_eq!(squeue_lines(&c), queued);
        let took = started.elapsed();
        assert!(took < Duration::from_secs(2), "squeue took {took:?}");
        slowest = slowest.max(took);
    }

    // Every abusive connection is closed by the controller.
    let all: Vec<&Raw> = listings
        .iter()
        .chain(&uploads)
        .chain(&idle)
        .chain(&crowd)
        .collect();
    let closed = wait_until(Duration::from_secs(60), || all.iter().all(|r| r.closed()));
    let open = all.iter().filter(|r| !r.closed()).count();
    assert!(
        closed,
        "{open} abusive connections still open; logs:\n{}",
        c.logs()
    );
    // The unfinished uploads were answered (cancelled) before their connections went.
    for raw in &uploads {
        let answered = raw.answered.lock().unwrap().clone();
        assert!(
            (1..8).step_by(2).all(|s| answered.contains(&s)),
            "an upload connection answered only streams {answered:?}; logs:\n{}",
            c.logs()
        );
    }
    watching.store(false, Ordering::SeqCst);
    watcher.join().unwrap();

    let (rss_peak, files_peak) = *peak.lock().unwrap();
    let grew_mb = rss_peak.saturating_sub(rss_before) / 1024;
    assert!(grew_mb < 200, "the controller grew by {grew_mb} MB");
    // Client connections: at most max_connections and an eighth; a few more for a
    // socket accepted and waiting for room, and the controller's own connection to the
    // node daemon, dialled again if the daemon's connection was the one closed.
    let bound = files_before + MAX_CONNECTIONS + MAX_CONNECTIONS / 8 + 4;
    assert!(
        files_peak <= bound,
        "the controller held {files_peak} files, more than {bound}"
    );
    // And it still serves.
    assert_eq!(squeue_lines(&c), queued);
    // What the abuse held is given back, most of it.
    let (rss_after, files_after) = usage(pid);
    let kept_mb = rss_after.saturating_sub(rss_before) / 1024;
    assert!(kept_mb < 80, "the controller kept {kept_mb} MB");
    eprintln!(
        "abuse: slowest squeue {slowest:?}; rss {} MB -> peak {} MB; files {files_before} \
         -> peak {files_peak}; after: rss {} MB, files {files_after}",
        rss_before / 1024,
        rss_peak / 1024,
        rss_after / 1024
    );
}

/// Starts `drover-ctld` alone with open-file limits `soft` and `hard`; returns it, its
/// log and its config once it serves.
fn ctld_with_file_limit(
    dir: &std::path::Path,
    soft: u64,
    hard: u64,
) -> (std::process::Child, std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::process::CommandExt;
    let port = tests::free_ports(1)[0];
    let conf = dir.join("drover.toml");
    std::fs::write(
        &conf,
        format!(
            "state_dir = \"{}\"\n[controller]\naddr = \"127.0.0.1:{port}\"\n{}",
            dir.join("state").display(),
            tests::auth_section(dir)
        ),
    )
    .unwrap();
    let log = dir.join("ctld.log");
    let mut command = std::process::Command::new(tests::bin_dir().join("drover-ctld"));
    command
        .args(["--config", &conf.display().to_string()])
        .stderr(std::fs::File::create(&log).unwrap());
    // SAFETY: only setrlimit runs in the child between fork and exec, which is
    // async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let child = command.spawn().unwrap();
    let addr = format!("127.0.0.1:{port}");
    assert!(wait_until(Duration::from_secs(30), || TcpStream::connect(
        &addr
    )
    .is_ok()));
    (child, log, conf)
}

/// The controller's log once it says how many connections it takes, without colours.
fn bounded_log(log: &std::path::Path) -> String {
    let mut text = String::new();
    let said = wait_until(Duration::from_secs(30), || {
        text = std::fs::read_to_string(log).unwrap_or_default();
        text.contains("client connections bounded")
    });
    assert!(said, "{text}");
    let mut plain = String::new();
    let mut chars = text.chars();
    while let Some(ch) = chars.next() {
        if ch == '\x1b' {
            chars.by_ref().find(|c| *c == 'm');
        } else {
            plain.push(ch);
        }
    }
    plain
}

/// The open-file limit of a process, as the kernel reports it.
fn max_open_files(pid: u32) -> String {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    line.split_whitespace().nth(3).unwrap().to_string()
}

#[test]
fn the_controller_raises_its_file_limit_or_lowers_max_connections() {
    let squeue = |conf: &std::path::Path| {
        std::process::Command::new(tests::bin_dir().join("drover"))
            .arg("squeue")
            .env("DROVER_CONF", conf)
            .output()
            .unwrap()
            .status
            .success()
    };
    // Room under the hard limit: the soft limit is raised to fit the default 1024
    // connections, an eighth more and 256 files of its own.
    let dir = tempfile::tempdir().unwrap();
    let (mut child, log, conf) = ctld_with_file_limit(dir.path(), 300, 4096);
    let text = bounded_log(&log);
    assert!(
        text.contains("max_connections=1024 open_files=1408"),
        "{text}"
    );
    assert_eq!(max_open_files(child.id()), "1408");
    assert!(squeue(&conf));
    child.kill().unwrap();
    child.wait().unwrap();

    // No room: max_connections is lowered to what fits, (300 - 256) * 8 / 9, with a
    // warning, and the controller serves.
    let dir = tempfile::tempdir().unwrap();
    let (mut child, log, conf) = ctld_with_file_limit(dir.path(), 300, 300);
    let text = bounded_log(&log);
    assert!(text.contains("lowered_to=39"), "{text}");
    assert!(text.contains("max_connections=39 open_files=300"), "{text}");
    assert_eq!(max_open_files(child.id()), "300");
    assert!(squeue(&conf));
    child.kill().unwrap();
    child.wait().unwrap();
}
