//! `drover-bench`: measures a local cluster on this machine and prints the figures.
//!
//! It starts its own cluster (as `drover up` does, in a temporary directory, with the
//! `drover`, `drover-ctld` and `drover-noded` beside this binary) and reports: durable
//! submits/s through the API with 1 and 64 concurrent clients, sequential `sbatch`
//! calls/s, submit-to-running latency, trivial jobs end to end, `squeue` latency with
//! large queues, controller memory per pending job, restart time with a large store, and
//! `sacct` over a long history (`--records N` finished jobs, a million by default).
//! `--quick` uses smaller counts.
//!
//! When a real Slurm answers on this machine (its `sinfo` first on `PATH`, or the
//! directory of its commands given by `--slurm-bin DIR` or `$DROVER_BENCH_SLURM_BIN`),
//! the same command-line workloads (sequential `sbatch`, submit-to-running, trivial jobs
//! to completion, `squeue` with a queue of held jobs) also run against it, and the
//! figures are printed side by side with their ratios. `--no-slurm` skips that part;
//! `--side-only` runs only that part.

use anyhow::{Context, Result, bail};
use cli::commands::up::{LocalCluster, parse_args};
use cli::opts::{self, OptSpec, flag, value};
use proto::v1::{self, ctld_client::CtldClient};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};
use tonic::transport::Channel;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match bench(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("drover-bench: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

struct Counts {
    api_jobs: usize,
    sbatch_calls: usize,
    latency_jobs: usize,
    e2e_jobs: usize,
    queue_sizes: Vec<usize>,
    /// Finished job records the controller keeps for the sacct figures.
    records: usize,
}

const SPECS: &[OptSpec] = &[
    flag("quick", None),
    flag("no-slurm", None),
    flag("side-only", None),
    value("slurm-bin", None),
    value("records", None),
    flag("help", Some('h')),
];

const USAGE: &str =
    "usage: drover-bench [--quick] [--no-slurm | --side-only] [--slurm-bin DIR] [--records N]";

fn bench(args: &[String]) -> Result<()> {
    let opts = opts::parse(SPECS, args, false)?;
    if let Some(extra) = opts.positional.first() {
        bail!("unexpected argument `{extra}`\n{USAGE}");
    }
    if opts.has("help") {
        println!("{USAGE}");
        return Ok(());
    }
    let quick = opts.has("quick");
    // Only the side-by-side comparison with a real Slurm.
    let side_only = opts.has("side-only");
    if side_only && opts.has("no-slurm") {
        bail!("--side-only and --no-slurm exclude each other");
    }
    let slurm = if opts.has("no-slurm") {
        None
    } else {
        let dir = opts
            .get("slurm-bin")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("DROVER_BENCH_SLURM_BIN").map(PathBuf::from));
        real_slurm(dir)
    };
    let counts = if quick {
        Counts {
            api_jobs: 2000,
            sbatch_calls: 100,
            latency_jobs: 50,
            e2e_jobs: 200,
            queue_sizes: vec![1000, 10_000],
            records: 20_000,
        }
    } else {
        Counts {
            api_jobs: 20_000,
            sbatch_calls: 500,
            latency_jobs: 200,
            e2e_jobs: 500,
            queue_sizes: vec![10_000, 100_000],
            records: 1_000_000,
        }
    };
    let counts = match opts.get("records") {
        Some(n) => Counts {
            records: n
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .with_context(|| format!("--records: not a count: `{n}`"))?,
            ..counts
        },
        None => counts,
    };
    let drover = drover()?;
    let dir = tempfile::Builder::new().prefix("drover-bench-").tempdir()?;
    let port = free_base_port(5)?;
    let up_args: Vec<String> = [
        "--dir",
        &dir.path().join("cluster").display().to_string(),
        "--port",
        &port.to_string(),
        "--nodes",
        "4",
        "--cpus",
        "8",
        "--memory",
        "64G",
        "--gpus",
        "0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let options = parse_args(&up_args)?;
    let mut cluster = LocalCluster::start(&options)?;
    let addr = cluster.config.controller.addr.clone();
    let _ = SIGNER.set(std::sync::Arc::new(auth::Signer::Agent {
        socket: cluster.config.auth.socket.clone().into(),
    }));
    let bin = options.dir.join("bin");
    link_commands(&bin, &drover)?;
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work)?;
    wait_nodes_idle(&bin, 4)?;
    println!(
        "drover-bench ({}; {} cores)",
        if quick { "quick" } else { "full" },
        num_cpus()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;

    if !side_only {
        // 1. API submits, held so that nothing runs: the durable submit path alone.
        for clients in [1usize, 64] {
            let n = counts.api_jobs / if clients == 1 { 4 } else { 1 };
            let rate = rt.block_on(api_submits(&addr, &work, n, clients, true))?;
            println!("api_submit_per_s clients={clients} jobs={n} rate={rate:.0} (target >= 5000)");
        }
        cancel_all(&bin)?;

        // 2. Sequential sbatch processes.
        let script = work.join("true.sh");
        std::fs::write(&script, "#!/bin/sh\ntrue\n")?;
        let started = Instant::now();
        for _ in 0..counts.sbatch_calls {
            let out = Command::new(bin.join("sbatch"))
                .args(["--hold", "--parsable", &script.display().to_string()])
                .current_dir(&work)
                .output()?;
            if !out.status.success() {
                bail!("sbatch failed: {}", String::from_utf8_lossy(&out.stderr));
            }
        }
        let rate = counts.sbatch_calls as f64 / started.elapsed().as_secs_f64();
        println!(
            "sbatch_calls_per_s sequential calls={} rate={rate:.0} (target >= 300)",
            counts.sbatch_calls
        );
        cancel_all(&bin)?;
        // What a process costs on this machine at the moment, the floor under a call.
        let true_ms = spawn_ms(Command::new("true").current_dir(&work), counts.sbatch_calls)?;
        let version_ms = spawn_ms(
            Command::new(bin.join("sbatch")).arg("--version"),
            counts.sbatch_calls,
        )?;
        println!(
            "process_start_ms true_p50={true_ms:.2} sbatch_version_p50={version_ms:.2} \
             (a sequential sbatch call at {:.2} ms includes one process start)",
            1000.0 / rate
        );

        // 3. Submit-to-running latency on an idle cluster: the job itself stamps its start.
        let lat = rt.block_on(submit_to_running(&addr, &work, counts.latency_jobs))?;
        println!(
            "submit_to_running_ms jobs={} p50={:.1} p99={:.1} (target p50 < 20)",
            counts.latency_jobs,
            percentile(&lat, 0.5),
            percentile(&lat, 0.99)
        );

        // 4. Trivial jobs from first submit to all completed.
        let secs = rt.block_on(end_to_end(&addr, &work, counts.e2e_jobs))?;
        println!(
            "trivial_jobs_end_to_end jobs={} seconds={secs:.2} rate={:.0}/s",
            counts.e2e_jobs,
            counts.e2e_jobs as f64 / secs
        );
    }

    // Side by side with a real Slurm: the same command-line workloads on both.
    if let Some(slurm_bin) = &slurm {
        cancel_all(&bin)?;
        let sizes = if quick {
            SideSizes {
                sbatch_calls: 100,
                latency_jobs: 5,
                e2e_jobs: 100,
                queue: 1000,
            }
        } else {
            SideSizes {
                sbatch_calls: 500,
                latency_jobs: 10,
                e2e_jobs: 500,
                queue: 10_000,
            }
        };
        let mut ours = side_workloads("drover", &bin, &work, &sizes)?;
        // Drover's sinfo answers --version as Slurm's does; name it.
        ours.version = format!("drover {}", env!("CARGO_PKG_VERSION"));
        let theirs = side_workloads("slurm", slurm_bin, &work, &sizes)?;
        print_side_by_side(&ours, &theirs, &sizes, slurm_bin);
    } else if side_only {
        println!("side_by_side skipped: no real Slurm answers here");
    }
    if side_only {
        cluster.stop();
        return Ok(());
    }

    // 5. squeue latency and memory with large queues of held jobs.
    let rss_before = rss_kb(cluster.ctld_pid());
    let mut queued = 0;
    for size in &counts.queue_sizes {
        rt.block_on(api_submits(&addr, &work, size - queued, 64, true))?;
        queued = *size;
        let mut times = Vec::new();
        for _ in 0..10 {
            let t = Instant::now();
            let out = Command::new(bin.join("squeue"))
                .current_dir(&work)
                .stdout(Stdio::null())
                .status()?;
            if !out.success() {
                bail!("squeue failed");
            }
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        println!(
            "squeue_ms queued={size} p50={:.0} p99={:.0} (target < 300 at 100k)",
            percentile(&times, 0.5),
            percentile(&times, 0.99)
        );
    }
    let rss_after = rss_kb(cluster.ctld_pid());
    if let (Some(a), Some(b)) = (rss_before, rss_after) {
        let per_job = (b.saturating_sub(a)) as f64 * 1024.0 / queued as f64;
        println!(
            "ctld_rss_bytes_per_pending_job jobs={queued} bytes={per_job:.0} (target <= 2048)"
        );
    }

    // 6. Restart with the large store: kill -9, start, time to listening and to the
    // first listing of every job.
    cluster.kill_ctld();
    let t = Instant::now();
    cluster.start_ctld()?;
    let serving = t.elapsed();
    let n = rt.block_on(count_jobs(&addr))?;
    println!(
        "restart_ms jobs_in_store={n} to_listening={} to_first_listing={} (target < 2000)",
        serving.as_millis(),
        t.elapsed().as_millis()
    );

    // 7. sacct over a long history.
    accounting_history(&rt, &addr, &bin, &work, counts.records)?;
    cluster.stop();
    Ok(())
}

/// `sacct` with `records` finished jobs kept: every job of the run so far is cancelled,
/// then held jobs are submitted and cancelled in batches until there are that many;
/// then sacct lists every record, one job, and a user with none, and the controller's
/// memory is read.
fn accounting_history(
    rt: &tokio::runtime::Runtime,
    addr: &str,
    bin: &Path,
    work: &Path,
    records: usize,
) -> Result<()> {
    cancel_all(bin)?;
    let mut have = rt.block_on(count_jobs(addr))?;
    let filled = Instant::now();
    while have < records {
        let batch = (records - have).min(100_000);
        rt.block_on(api_submits(addr, work, batch, 64, true))?;
        cancel_all(bin)?;
        have += batch;
    }
    let have = rt.block_on(count_jobs(addr))?;
    println!(
        "sacct_history records={have} filled_s={:.0}",
        filled.elapsed().as_secs_f64()
    );
    let since = ["-S", "2000-01-01", "-X", "-n", "-P"];
    let queries: [(&str, Vec<&str>, usize); 3] = [
        ("all", vec!["-a", "-o", "JobID,State,Elapsed"], 3),
        ("one_job", vec!["-a", "-j", "1000"], 10),
        ("no_match", vec!["-u", "nobody"], 10),
    ];
    for (what, args, runs) in queries {
        let mut times = Vec::new();
        let mut rows = 0;
        for _ in 0..runs {
            let t = Instant::now();
            let out = Command::new(bin.join("sacct"))
                .args(since)
                .args(&args)
                .current_dir(work)
                .output()?;
            if !out.status.success() {
                bail!("sacct {what}: {}", String::from_utf8_lossy(&out.stderr));
            }
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            rows = out.stdout.iter().filter(|b| **b == b'\n').count();
        }
        println!(
            "sacct_ms records={have} query={what} rows={rows} p50={:.0} max={:.0}",
            percentile(&times, 0.5),
            percentile(&times, 1.0)
        );
    }
    Ok(())
}

/// Now, in nanoseconds since the epoch (what the latency jobs write with `date +%s%N`).
fn unix_nanos() -> Result<i128> {
    Ok(std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos() as i128)
}

/// The start time a latency job wrote (it renames the file into place whole).
fn read_stamp(stamp: &std::path::Path) -> Option<i128> {
    std::fs::read_to_string(stamp).ok()?.trim().parse().ok()
}

fn num_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

fn free_base_port(count: u16) -> Result<u16> {
    for base in (30000..60000u16).step_by(97) {
        let all_free =
            (base..=base + count).all(|p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok());
        if all_free {
            return Ok(base);
        }
    }
    bail!("no free ports")
}

fn wait_nodes_idle(bin: &std::path::Path, n: usize) -> Result<()> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        let out = Command::new(bin.join("sinfo"))
            .args(["-h", "-N", "-o", "%T"])
            .output()?;
        if String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter(|s| *s == "idle")
            .count()
            == n
        {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("nodes did not come up")
}

/// The `drover` beside this binary, which the cluster's commands run.
fn drover() -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let drover = exe.with_file_name("drover");
    if !drover.is_file() {
        bail!(
            "{} is missing: build it first (scripts/build.sh)",
            drover.display()
        );
    }
    Ok(drover)
}

/// Points the cluster's command links at `drover`: `drover up`'s directory links them
/// to the binary that started it, here this one.
fn link_commands(bin: &Path, drover: &Path) -> Result<()> {
    for name in cli::COMMANDS.iter().chain(["drover"].iter()) {
        let link = bin.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(drover, &link)
            .with_context(|| format!("cannot link {}", link.display()))?;
    }
    Ok(())
}

fn cancel_all(bin: &std::path::Path) -> Result<()> {
    let user = cli::client::current_user().0;
    Command::new(bin.join("scancel"))
        .args(["-u", &user])
        .status()
        .context("scancel")?;
    Ok(())
}

/// Where the API clients' credentials come from: the local cluster's credential agent,
/// as any program's on its host.
static SIGNER: std::sync::OnceLock<std::sync::Arc<auth::Signer>> = std::sync::OnceLock::new();

async fn connect(addr: &str) -> Result<CtldClient<auth::Signed<Channel>>> {
    let channel = Channel::from_shared(format!("http://{addr}"))?
        .tcp_nodelay(true)
        .connect()
        .await?;
    let signer = SIGNER
        .get()
        .context("no credential agent known yet")?
        .clone();
    Ok(CtldClient::new(auth::Signed::new(channel, signer)).max_decoding_message_size(1 << 30))
}

fn spec(work: &std::path::Path, script: &str, hold: bool) -> v1::JobSpec {
    let (user, uid, gid) = cli::client::current_user();
    v1::JobSpec {
        name: "bench".into(),
        uid,
        gid,
        user,
        script: script.into(),
        work_dir: work.display().to_string(),
        stdout_pattern: "/dev/null".into(),
        num_tasks: 1,
        cpus_per_task: 1,
        hold,
        env: vec![v1::EnvVar {
            name: "PATH".into(),
            value: std::env::var("PATH").unwrap_or_default(),
        }],
        ..Default::default()
    }
}

/// Submits `n` jobs from `clients` concurrent connections; returns jobs/s.
async fn api_submits(
    addr: &str,
    work: &std::path::Path,
    n: usize,
    clients: usize,
    hold: bool,
) -> Result<f64> {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let mut client = connect(addr).await?;
        let share = n / clients + usize::from(c < n % clients);
        let spec = spec(work, "#!/bin/sh\ntrue\n", hold);
        tasks.push(tokio::spawn(async move {
            for _ in 0..share {
                let req = v1::SubmitJobRequest {
                    spec: Some(spec.clone()),
                    test_only: false,
                    het_components: Vec::new(),
                };
                client.submit_job(req).await?;
            }
            Ok::<_, tonic::Status>(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(n as f64 / started.elapsed().as_secs_f64())
}

async fn submit_to_running(addr: &str, work: &std::path::Path, n: usize) -> Result<Vec<f64>> {
    let mut client = connect(addr).await?;
    let mut lat = Vec::new();
    for i in 0..n {
        let stamp = work.join(format!("stamp-{i}"));
        let script = format!(
            "#!/bin/sh\ndate +%s%N > {}.tmp && mv {0}.tmp {0}\n",
            stamp.display()
        );
        client
            .submit_job(v1::SubmitJobRequest {
                spec: Some(spec(work, &script, false)),
                test_only: false,
                het_components: Vec::new(),
            })
            .await?;
        let acked = unix_nanos()?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(ns) = read_stamp(&stamp) {
                lat.push((ns - acked) as f64 / 1e6);
                break;
            }
            if Instant::now() > deadline {
                bail!("job {i} did not start within 10 s");
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
    }
    Ok(lat)
}

async fn end_to_end(addr: &str, work: &std::path::Path, n: usize) -> Result<f64> {
    let mut client = connect(addr).await?;
    let started = Instant::now();
    let mut ids = Vec::new();
    for _ in 0..n {
        let r = client
            .submit_job(v1::SubmitJobRequest {
                spec: Some(spec(work, "#!/bin/sh\ntrue\n", false)),
                test_only: false,
                het_components: Vec::new(),
            })
            .await?;
        ids.push(r.into_inner().job_id.to_string());
    }
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let req = v1::ListJobsRequest {
            filter: Some(v1::JobFilter {
                job_ids: ids.clone(),
                ..Default::default()
            }),
            include_finished: true,
            ..Default::default()
        };
        let jobs = client.list_jobs(req).await?.into_inner().jobs;
        let done = jobs
            .iter()
            .filter(|j| j.state == v1::JobState::Completed as i32)
            .count();
        let ended_otherwise: Vec<String> = jobs
            .iter()
            .filter(|j| {
                let state = proto::convert::state_from_wire(j.state());
                state.is_final() && state != model::JobState::Completed
            })
            .map(|j| format!("{} {} ({})", j.job_id, j.state().as_str_name(), j.reason))
            .collect();
        if done + ended_otherwise.len() == n {
            if !ended_otherwise.is_empty() {
                eprintln!(
                    "drover-bench: {} of {n} trivial jobs did not complete: {}",
                    ended_otherwise.len(),
                    ended_otherwise.join(", ")
                );
            }
            return Ok(started.elapsed().as_secs_f64());
        }
        if Instant::now() > deadline {
            bail!(
                "only {done} of {n} jobs completed; ended otherwise: {}",
                ended_otherwise.join(", ")
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every job the controller holds, finished ones included, counted from the light
/// listing `squeue` uses: the first answer after a restart shows the whole state
/// loaded, without timing the serialization of 100k full records.
async fn count_jobs(addr: &str) -> Result<usize> {
    let mut client = connect(addr).await?;
    let req = v1::ListJobsRequest {
        include_finished: true,
        summary: true,
        ..Default::default()
    };
    let mut stream = client.list_job_summaries(req).await?.into_inner();
    let mut n = 0;
    while let Some(chunk) = stream.message().await? {
        n += chunk.summaries.len() + chunk.jobs.len();
    }
    Ok(n)
}

fn rss_kb(pid: Option<u32>) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid?)).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The p50 in milliseconds of running `cmd` to completion, `n` times in a row.
fn spawn_ms(cmd: &mut Command, n: usize) -> Result<f64> {
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let out = cmd.output()?;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        if !out.status.success() {
            bail!("{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    Ok(percentile(&times, 0.5))
}

fn percentile(values: &[f64], q: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return 0.0;
    }
    v[((v.len() - 1) as f64 * q).round() as usize]
}

// ---------------------------------------------------------------- side by side with Slurm

/// The directory of a real Slurm's commands, when one answers: `dir` if given, else
/// the directory of the `sinfo` first on `PATH` that is not Drover's.
fn real_slurm(dir: Option<PathBuf>) -> Option<PathBuf> {
    let dir = dir.or_else(|| {
        let paths = std::env::var_os("PATH")?;
        std::env::split_paths(&paths)
            .find(|d| d.join("sinfo").is_file())
            .filter(|d| {
                let real = std::fs::canonicalize(d.join("sinfo")).ok();
                let ours = drover().ok().and_then(|d| std::fs::canonicalize(d).ok());
                real.is_some() && real != ours
            })
    })?;
    let version = Command::new(dir.join("sinfo"))
        .arg("--version")
        .output()
        .ok()?;
    let answers = Command::new(dir.join("sinfo"))
        .args(["-h", "-o", "%a"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let version = String::from_utf8_lossy(&version.stdout);
    // "slurm 22.05.8", or "slurm-wlm 22.05.8" from Debian's packages.
    (answers && version.starts_with("slurm")).then_some(dir)
}

struct SideSizes {
    sbatch_calls: usize,
    latency_jobs: usize,
    e2e_jobs: usize,
    queue: usize,
}

/// What one system did in the command-line workloads.
struct SideFigures {
    version: String,
    sbatch_per_s: f64,
    submit_to_running_ms: f64,
    e2e_secs: f64,
    e2e_done: usize,
    queue: usize,
    squeue_ms: f64,
}

/// Runs `bin/<command> args`, failing on a non-zero status; gives stdout.
fn cli(bin: &Path, command: &str, args: &[&str], work: &Path) -> Result<String> {
    let out = Command::new(bin.join(command))
        .args(args)
        .current_dir(work)
        .output()
        .with_context(|| command.to_string())?;
    if !out.status.success() {
        bail!(
            "{command} {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `sbatch --parsable ...`: the job id.
fn sbatch(bin: &Path, args: &[&str], work: &Path) -> Result<String> {
    let out = cli(bin, "sbatch", args, work)?;
    Ok(out.trim().split(';').next().unwrap_or("").to_string())
}

/// The ids of `ids` still pending, running or completing.
fn active_ids(bin: &Path, ids: &std::collections::BTreeSet<String>, work: &Path) -> Result<usize> {
    let out = cli(bin, "squeue", &["-h", "-o", "%i"], work)?;
    Ok(out.lines().filter(|l| ids.contains(l.trim())).count())
}

/// The command-line workloads, through the commands in `bin` (Drover's links or a real
/// Slurm's).
fn side_workloads(name: &str, bin: &Path, work: &Path, n: &SideSizes) -> Result<SideFigures> {
    let user = cli::client::current_user().0;
    let work = work.join(format!("side-{name}"));
    std::fs::create_dir_all(&work)?;
    let version = cli(bin, "sinfo", &["--version"], &work)
        .map(|v| v.trim().to_string())
        .unwrap_or_default();
    eprintln!("drover-bench: side by side: {name} ({version})");
    let script = work.join("true.sh");
    std::fs::write(&script, "#!/bin/sh\ntrue\n")?;
    let script = script.display().to_string();
    let quiet = ["--parsable", "-o", "/dev/null", "-e", "/dev/null"];

    // Sequential sbatch calls, held so that nothing runs.
    let started = Instant::now();
    for _ in 0..n.sbatch_calls {
        let mut args = vec!["--hold"];
        args.extend(quiet);
        args.push(&script);
        sbatch(bin, &args, &work)?;
    }
    let sbatch_per_s = n.sbatch_calls as f64 / started.elapsed().as_secs_f64();
    cli(bin, "scancel", &["-u", &user], &work)?;
    std::thread::sleep(Duration::from_secs(1));

    // Submit to running: the job stamps its start; timed from sbatch's return.
    let mut lat = Vec::new();
    for i in 0..n.latency_jobs {
        let stamp = work.join(format!("stamp-{i}"));
        let job = work.join(format!("stamp-{i}.sh"));
        std::fs::write(
            &job,
            format!(
                "#!/bin/sh\ndate +%s%N > {0}.tmp && mv {0}.tmp {0}\n",
                stamp.display()
            ),
        )?;
        let mut args = quiet.to_vec();
        let job = job.display().to_string();
        args.push(&job);
        sbatch(bin, &args, &work)?;
        let acked = unix_nanos()?;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(ns) = read_stamp(&stamp) {
                lat.push((ns - acked) as f64 / 1e6);
                break;
            }
            if Instant::now() > deadline {
                bail!("{name}: job {i} did not start within 60 s");
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let submit_to_running_ms = percentile(&lat, 0.5);

    // Trivial jobs, submitted one by one, until all are done.
    let started = Instant::now();
    let mut ids = std::collections::BTreeSet::new();
    for _ in 0..n.e2e_jobs {
        let mut args = quiet.to_vec();
        args.push(&script);
        ids.insert(sbatch(bin, &args, &work)?);
    }
    let deadline = Instant::now() + Duration::from_secs(900);
    let mut left = ids.len();
    while left > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        left = active_ids(bin, &ids, &work)?;
    }
    let e2e_secs = started.elapsed().as_secs_f64();

    // squeue with a queue of held jobs, submitted by 8 concurrent sbatch loops.
    std::thread::scope(|scope| -> Result<()> {
        let tasks: Vec<_> = (0..8)
            .map(|t| {
                let (script, work) = (&script, &work);
                scope.spawn(move || -> Result<()> {
                    for _ in (t..n.queue).step_by(8) {
                        let mut args = vec!["--hold"];
                        args.extend(quiet);
                        args.push(script);
                        sbatch(bin, &args, work)?;
                    }
                    Ok(())
                })
            })
            .collect();
        for t in tasks {
            t.join()
                .map_err(|_| anyhow::anyhow!("a submitter panicked"))??;
        }
        Ok(())
    })?;
    let queued = cli(bin, "squeue", &["-h", "-t", "PD", "-o", "%i"], &work)?
        .lines()
        .count();
    let mut times = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        cli(bin, "squeue", &[], &work)?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    cli(bin, "scancel", &["-u", &user], &work)?;
    Ok(SideFigures {
        version,
        sbatch_per_s,
        submit_to_running_ms,
        e2e_secs,
        e2e_done: n.e2e_jobs - left,
        queue: queued,
        squeue_ms: percentile(&times, 0.5),
    })
}

fn print_side_by_side(ours: &SideFigures, theirs: &SideFigures, n: &SideSizes, slurm: &Path) {
    println!(
        "side_by_side drover=({}) slurm=({}, commands in {}); same command-line workloads, run one after the other",
        ours.version,
        theirs.version,
        slurm.display()
    );
    let row = |name: &str, unit: &str, a: f64, b: f64, higher_better: bool| {
        let ratio = if higher_better { a / b } else { b / a };
        println!(
            "  {name:<36} drover={a:>9.1}{unit:<3} slurm={b:>9.1}{unit:<3} drover_advantage={ratio:.1}x"
        );
    };
    row(
        &format!("sbatch_calls_per_s calls={}", n.sbatch_calls),
        "/s",
        ours.sbatch_per_s,
        theirs.sbatch_per_s,
        true,
    );
    row(
        &format!("submit_to_running_ms_p50 jobs={}", n.latency_jobs),
        "ms",
        ours.submit_to_running_ms,
        theirs.submit_to_running_ms,
        false,
    );
    row(
        &format!("trivial_jobs_to_completion_s jobs={}", n.e2e_jobs),
        "s",
        ours.e2e_secs,
        theirs.e2e_secs,
        false,
    );
    row(
        &format!("squeue_ms_p50 queued={}/{}", ours.queue, theirs.queue),
        "ms",
        ours.squeue_ms,
        theirs.squeue_ms,
        false,
    );
    if ours.e2e_done < n.e2e_jobs || theirs.e2e_done < n.e2e_jobs {
        println!(
            "  (jobs done in time: drover {} slurm {} of {})",
            ours.e2e_done, theirs.e2e_done, n.e2e_jobs
        );
    }
}
