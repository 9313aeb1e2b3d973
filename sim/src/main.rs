//! The `drover-sim` command line: `drover-sim TRACE [--trace swf|alibaba] [--policy
//! ...] [--procs N] [--json] [--limit N] [--compress F] [--plot FILE.svg]`, or
//! `drover-sim bench`.

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use sim::{SimPolicy, alibaba, bench, plot, replay, swf};
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "drover-sim",
    about = "Replay a workload trace (SWF, plain or .gz; or the Alibaba GPU pod CSV) \
             through Drover's scheduler in virtual time",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// The trace: a Standard Workload Format file, plain or gzipped (.gz), or an
    /// Alibaba GPU pod list (.csv).
    trace: Option<PathBuf>,
    /// The trace's format: swf or alibaba (default: alibaba for .csv, else swf).
    #[arg(long = "trace", value_name = "FORMAT")]
    format: Option<String>,
    /// Alibaba: the node list (default: the `..._node_list_gpu_node.csv` beside the
    /// pod list).
    #[arg(long)]
    nodes: Option<PathBuf>,
    /// fcfs, easy, conservative, or multifactor (Drover's production policy: the
    /// priority module's order with EASY backfill).
    #[arg(long, default_value = "easy")]
    policy: String,
    /// SWF: machine size in processors, instead of the trace header's MaxProcs.
    #[arg(long)]
    procs: Option<u32>,
    /// Print one JSON object instead of the report.
    #[arg(long)]
    json: bool,
    /// Replay only the first N jobs of the job set.
    #[arg(long)]
    limit: Option<usize>,
    /// Show a progress bar on stderr even when it is not a terminal (it is shown on
    /// a terminal anyway).
    #[arg(long)]
    progress: bool,
    /// No progress bar.
    #[arg(long, conflicts_with = "progress")]
    quiet: bool,
    /// Run a pass over the whole queue at every event time, even those that provably
    /// start nothing (slower; the figures are the same).
    #[arg(long)]
    every_event: bool,
    /// Check the cluster state's invariants at every event time and stop at the first
    /// one broken (slower).
    #[arg(long)]
    check: bool,
    /// Divide every submit time by this factor (run times unchanged): the same jobs
    /// arriving faster, for a heavier load than the trace recorded.
    #[arg(long, value_name = "FACTOR")]
    compress: Option<f64>,
    /// Write an SVG plot of the wait of the jobs started and the utilization over
    /// time.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Time full scheduling passes over synthetic clusters and queues.
    Bench(bench::Options),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if let Some(Command::Bench(options)) = &cli.command {
        print!("{}", bench::run(options));
        return Ok(());
    }
    let Some(path) = &cli.trace else {
        bail!("no trace given (drover-sim TRACE, or drover-sim bench)");
    };
    let Some(policy) = SimPolicy::parse(&cli.policy) else {
        bail!(
            "unknown policy `{}` (expected fcfs, easy, conservative or multifactor)",
            cli.policy
        );
    };
    let format = match cli.format.as_deref() {
        Some(f) => f.to_string(),
        None if path.extension().is_some_and(|e| e == "csv") => "alibaba".into(),
        None => "swf".into(),
    };
    let (machine, mut jobs, what) = match format.as_str() {
        "swf" => {
            let trace = swf::read(path, cli.procs).context("reading the trace")?;
            let procs = trace.max_procs.unwrap_or(1);
            (
                replay::Machine::pool(procs),
                trace.jobs,
                format!("{procs} processors"),
            )
        }
        "alibaba" => {
            let nodes = match &cli.nodes {
                Some(n) => n.clone(),
                None => alibaba::node_list_beside(path)
                    .context("no node list given (--nodes) and none beside the pod list")?,
            };
            let trace = alibaba::read(path, &nodes).context("reading the trace")?;
            let what = format!(
                "{} nodes, {} CPUs, {} GPUs; {} pods skipped, {} sharing a GPU given a whole one",
                trace.machine.state.nodes.len(),
                trace.machine.cpus,
                trace.gpus,
                trace.dropped,
                trace.shared_gpu
            );
            (trace.machine, trace.jobs, what)
        }
        other => bail!("unknown trace format `{other}` (expected swf or alibaba)"),
    };
    if let Some(n) = cli.limit {
        jobs.truncate(n);
    }
    if let Some(f) = cli.compress {
        if !(f.is_finite() && f > 0.0) {
            bail!("--compress takes a positive factor");
        }
        // Monotonic: the submit order is kept.
        for j in &mut jobs {
            j.submit = (j.submit as f64 / f).floor() as i64;
        }
    }
    let started = std::time::Instant::now();
    let show_bar = !cli.quiet && (cli.progress || std::io::stderr().is_terminal());
    let bar = show_bar.then(|| {
        let bar = indicatif::ProgressBar::new(jobs.len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:40}] {pos}/{len} jobs submitted ({eta} left)",
            )
            .expect("a valid template")
            .progress_chars("=> "),
        );
        bar
    });
    let mut tick = |submitted: usize| {
        if let Some(bar) = &bar {
            bar.set_position(submitted as u64);
        }
    };
    let progress: Option<replay::Progress> = if bar.is_some() { Some(&mut tick) } else { None };
    let machine = replay::Machine {
        check: cli.check,
        ..machine
    };
    let summary = replay::replay(&jobs, machine, policy, cli.every_event, progress);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    if let Some(file) = &cli.plot {
        std::fs::write(file, plot::svg(&jobs, &summary))
            .with_context(|| format!("writing {}", file.display()))?;
    }
    if cli.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        print!("{}", summary.render());
        eprintln!(
            "({} on {what}: {} passes, {} rerun over the whole queue, in {:.1} s)",
            policy.name(),
            summary.passes,
            summary.fallbacks,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
