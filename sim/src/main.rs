//! The `drover-sim` command line: `drover-sim TRACE [--policy ...] [--procs N]
//! [--json] [--limit N] [--progress]`, or `drover-sim bench`.

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use sim::{SimPolicy, bench, replay, swf};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "drover-sim",
    about = "Replay a workload trace (SWF, plain or .gz) through Drover's scheduler in virtual time",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// The trace: a Standard Workload Format file, plain or gzipped (.gz).
    trace: Option<PathBuf>,
    /// fcfs, easy, conservative, or multifactor (Drover's production policy: the
    /// priority module's order with EASY backfill).
    #[arg(long, default_value = "easy")]
    policy: String,
    /// Machine size in processors, instead of the trace header's MaxProcs.
    #[arg(long)]
    procs: Option<u32>,
    /// Print one JSON object instead of the report.
    #[arg(long)]
    json: bool,
    /// Replay only the first N jobs of the job set.
    #[arg(long)]
    limit: Option<usize>,
    /// Show a progress bar on stderr (when it is a terminal).
    #[arg(long)]
    progress: bool,
    /// Run a scheduling pass at every event time, even those that provably start
    /// nothing (slower; the figures are the same).
    #[arg(long)]
    every_event: bool,
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
    let trace = swf::read(path, cli.procs).with_context(|| "reading the trace".to_string())?;
    let procs = trace.max_procs.unwrap_or(1);
    let mut jobs = trace.jobs;
    if let Some(n) = cli.limit {
        jobs.truncate(n);
    }
    let started = std::time::Instant::now();
    let bar = cli.progress.then(|| {
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
    let summary = replay::run(&jobs, procs, policy, cli.every_event, progress);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    if cli.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        print!("{}", summary.render());
        eprintln!(
            "({} on {procs} processors, {} passes in {:.1} s)",
            policy.name(),
            summary.passes,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
