//! `drover bench`: measures a local cluster on this machine and prints the figures.
//!
//! It starts its own cluster (as `drover up` does, in a temporary directory) and
//! reports: durable submits/s through the API with 1 and 64 concurrent clients,
//! sequential `sbatch` calls/s, submit-to-running latency, trivial jobs end to end,
//! `squeue` latency with large queues, controller memory per pending job, and restart
//! time with a large store. `--quick` uses smaller counts.

use super::up::{LocalCluster, parse_args};
use anyhow::{Context, Result, bail};
use proto::v1::{self, ctld_client::CtldClient};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};
use tonic::transport::Channel;

pub fn run(args: &[String]) -> ExitCode {
    match bench(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("drover bench: error: {e:#}");
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
}

fn bench(args: &[String]) -> Result<()> {
    let quick = args.iter().any(|a| a == "--quick");
    let counts = if quick {
        Counts {
            api_jobs: 2000,
            sbatch_calls: 100,
            latency_jobs: 50,
            e2e_jobs: 200,
            queue_sizes: vec![1000, 10_000],
        }
    } else {
        Counts {
            api_jobs: 20_000,
            sbatch_calls: 500,
            latency_jobs: 200,
            e2e_jobs: 500,
            queue_sizes: vec![10_000, 100_000],
        }
    };
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
    let bin = options.dir.join("bin");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work)?;
    wait_nodes_idle(&bin, 4)?;
    println!(
        "drover bench ({}; {} cores)",
        if quick { "quick" } else { "full" },
        num_cpus()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;

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
        "sbatch_calls_per_s sequential calls={} rate={rate:.0} (target >= 300; Slurm here 31-54)",
        counts.sbatch_calls
    );
    cancel_all(&bin)?;

    // 3. Submit-to-running latency on an idle cluster: the job itself stamps its start.
    let lat = rt.block_on(submit_to_running(&addr, &work, counts.latency_jobs))?;
    println!(
        "submit_to_running_ms jobs={} p50={:.1} p99={:.1} (target p50 < 20; Slurm ~1000)",
        counts.latency_jobs,
        percentile(&lat, 0.5),
        percentile(&lat, 0.99)
    );

    // 4. Trivial jobs from first submit to all completed.
    let secs = rt.block_on(end_to_end(&addr, &work, counts.e2e_jobs))?;
    println!(
        "trivial_jobs_end_to_end jobs={} seconds={secs:.2} rate={:.0}/s (Slurm here: 500 jobs in ~130 s)",
        counts.e2e_jobs,
        counts.e2e_jobs as f64 / secs
    );

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
            "squeue_ms queued={size} p50={:.0} p99={:.0} (target < 300 at 100k; Slurm at 500 jobs: ~40)",
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

    // 6. Restart with the large store: kill -9, start, time to the first answered query.
    cluster.kill_ctld();
    let t = Instant::now();
    cluster.start_ctld()?;
    let serving = t.elapsed();
    let n = rt.block_on(count_jobs(&addr))?;
    println!(
        "restart_ms jobs_in_store={n} to_listening={} to_first_query={} (target < 2000)",
        serving.as_millis(),
        t.elapsed().as_millis()
    );
    cluster.stop();
    Ok(())
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

fn cancel_all(bin: &std::path::Path) -> Result<()> {
    let user = crate::client::current_user().0;
    Command::new(bin.join("scancel"))
        .args(["-u", &user])
        .status()
        .context("scancel")?;
    Ok(())
}

async fn connect(addr: &str) -> Result<CtldClient<Channel>> {
    let channel = Channel::from_shared(format!("http://{addr}"))?
        .tcp_nodelay(true)
        .connect()
        .await?;
    Ok(CtldClient::new(channel).max_decoding_message_size(1 << 30))
}

fn spec(work: &std::path::Path, script: &str, hold: bool) -> v1::JobSpec {
    let (user, uid, gid) = crate::client::current_user();
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
            })
            .await?;
        let acked = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos() as i128;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(text) = std::fs::read_to_string(&stamp)
                && let Ok(ns) = text.trim().parse::<i128>()
            {
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
        if done == n {
            return Ok(started.elapsed().as_secs_f64());
        }
        if Instant::now() > deadline {
            bail!("only {done} of {n} jobs completed");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn count_jobs(addr: &str) -> Result<usize> {
    let mut client = connect(addr).await?;
    let req = v1::ListJobsRequest {
        include_finished: true,
        ..Default::default()
    };
    Ok(client.list_jobs(req).await?.into_inner().jobs.len())
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

fn percentile(values: &[f64], q: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return 0.0;
    }
    v[((v.len() - 1) as f64 * q).round() as usize]
}
