//! `sdiag`: the controller's statistics, as Slurm 22.05's sdiag prints them: jobs
//! submitted, started and ended since the last reset, and the scheduling passes' times
//! (`GetDiagnostics`); `-r/--reset` sets the counters back to zero (operators only,
//! `ResetDiagnostics`).
//!
//! Drover's controller has one scheduler, which places and backfills in the same pass:
//! its passes are the main schedule statistics, and the backfill section shows no
//! cycles. It keeps no per-RPC counts, so those sections list nothing.
//!
//! ```text
//! sdiag      →  *******************************************************
//!               sdiag output at Sun Dec 06 01:19:36 2026 (1796519976)
//!               ...
//!               Jobs submitted: 3
//! sdiag -r   →  Reset scheduling statistics
//! ```

use crate::args;
use crate::calls;
use crate::client;
use crate::exit::Exit;
use crate::opts::{OptSpec, flag, optional, value};
use crate::times;
use proto::v1::{GetDiagnosticsReply, GetDiagnosticsRequest, ResetDiagnosticsRequest};
use std::fmt::Write;
use std::process::ExitCode;

const SPECS: &[OptSpec] = &[
    flag("all", Some('a')),
    value("cluster", Some('M')),
    value("clusters", None),
    flag("help", Some('h')),
    flag("sort-by-id", Some('i')),
    optional("json", None),
    flag("reset", Some('r')),
    flag("sort-by-time", Some('t')),
    flag("sort-by-time2", Some('T')),
    flag("usage", None),
    flag("version", Some('V')),
    optional("yaml", None),
];

const ALIASES: &[(&str, &str)] = &[("clusters", "cluster")];

const USAGE: &str = "Usage: sdiag [-M cluster] [-aritT]\n";

const HELP: &str = "\
Usage: sdiag [OPTIONS]
  -a, --all           all statistics
  -r, --reset         reset statistics
  -M, --cluster       direct the request to a specific cluster
  -i, --sort-by-id    sort RPCs by id
  -t, --sort-by-time  sort RPCs by total run time
  -T, --sort-by-time2 sort RPCs by average run time
  -V, --version       display current version number

Help options:
  --help          show this help message
  --usage         display brief usage message
";

/// What the command line asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Report,
    Reset,
}

pub fn parse_args(args: &[String]) -> Result<Mode, Exit> {
    let p = args::parse_command_line("sdiag", args, SPECS, ALIASES, HELP, USAGE)?;
    if p.has("json") || p.has("yaml") {
        return Err(Exit::error(
            "sdiag",
            "--json and --yaml are not supported by this controller",
        ));
    }
    if let Some(extra) = p.positional.first() {
        return Err(Exit::usage(
            "sdiag",
            format!("invalid argument -- '{extra}'"),
        ));
    }
    // The last of -a and -r wins, as getopt's loop leaves it in Slurm's.
    let mode = p
        .opts
        .iter()
        .filter_map(|(name, _)| match *name {
            "all" => Some(Mode::Report),
            "reset" => Some(Mode::Reset),
            _ => None,
        })
        .next_back()
        .unwrap_or(Mode::Report);
    Ok(mode)
}

pub fn run(args: &[String]) -> ExitCode {
    let mode = match parse_args(args) {
        Ok(m) => m,
        Err(early) => return early.finish(),
    };
    let rt = client::runtime();
    match mode {
        Mode::Reset => {
            let reset = rt.block_on(async {
                let mut c = calls::connect().await?;
                c.reset_diagnostics(ResetDiagnosticsRequest {})
                    .await
                    .map_err(|s| calls::status_text(&s))
            });
            match reset {
                Ok(_) => {
                    println!("Reset scheduling statistics");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("slurm_reset_statistics: {e}");
                    ExitCode::from(1)
                }
            }
        }
        Mode::Report => {
            let reply = rt.block_on(async {
                let mut c = calls::connect().await?;
                c.get_diagnostics(GetDiagnosticsRequest {})
                    .await
                    .map(|r| r.into_inner())
                    .map_err(|s| calls::status_text(&s))
            });
            match reply {
                Ok(reply) => {
                    print!("{}", render(&reply, &times::ctime_line));
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("slurm_get_statistics: {e}");
                    ExitCode::from(1)
                }
            }
        }
    }
}

/// The main scheduler's exit reasons, as Slurm names them (no counts kept for them).
const SCHEDULE_EXITS: &[&str] = &[
    "End of job queue",
    "Hit default_queue_depth",
    "Hit sched_max_job_start",
    "Blocked on licenses",
    "Hit max_rpc_cnt",
    "Timeout (max_sched_time)",
];

/// The backfill scheduler's exit reasons, as Slurm names them.
const BACKFILL_EXITS: &[&str] = &[
    "End of job queue",
    "Hit bf_max_job_start",
    "Hit bf_max_job_test",
    "System state changed",
    "Hit table size limit (bf_node_space_size)",
    "Timeout (bf_max_time)",
];

/// The report, as Slurm's `_print_stats` lays it out; `ctime` formats a Unix time.
pub fn render(d: &GetDiagnosticsReply, ctime: &dyn Fn(i64) -> String) -> String {
    let mut o = String::new();
    let stars = "*******************************************************";
    let _ = writeln!(o, "{stars}");
    let _ = writeln!(o, "sdiag output at {} ({})", ctime(d.now), d.now);
    let _ = writeln!(
        o,
        "Data since      {} ({})",
        ctime(d.data_since),
        d.data_since
    );
    let _ = writeln!(o, "{stars}");
    let _ = writeln!(o, "Server thread count:  {}", d.server_thread_count);
    let _ = writeln!(o, "Agent queue size:     0");
    let _ = writeln!(o, "Agent count:          0");
    let _ = writeln!(o, "Agent thread count:   0");
    let _ = writeln!(o, "DBD Agent queue size: 0\n");
    let _ = writeln!(o, "Jobs submitted: {}", d.jobs_submitted);
    let _ = writeln!(o, "Jobs started:   {}", d.jobs_started);
    let _ = writeln!(o, "Jobs completed: {}", d.jobs_completed);
    let _ = writeln!(o, "Jobs canceled:  {}", d.jobs_canceled);
    let _ = writeln!(o, "Jobs failed:    {}\n", d.jobs_failed);
    let _ = writeln!(o, "Job states ts:  {} ({})", ctime(d.now), d.now);
    let _ = writeln!(o, "Jobs pending:   {}", d.jobs_pending);
    let _ = writeln!(o, "Jobs running:   {}", d.jobs_running);
    let _ = writeln!(o, "\nMain schedule statistics (microseconds):");
    let _ = writeln!(o, "\tLast cycle:   {}", d.schedule_cycle_last_us);
    let _ = writeln!(o, "\tMax cycle:    {}", d.schedule_cycle_max_us);
    let _ = writeln!(o, "\tTotal cycles: {}", d.schedule_cycle_count);
    if let Some(mean) = d.schedule_cycle_sum_us.checked_div(d.schedule_cycle_count) {
        let _ = writeln!(o, "\tMean cycle:   {mean}");
        let _ = writeln!(o, "\tMean depth cycle:  {}", d.schedule_queue_length);
    }
    let elapsed = d.now - d.data_since;
    if elapsed > 60 {
        let per_minute = d.schedule_cycle_count / (elapsed as u64 / 60);
        let _ = writeln!(o, "\tCycles per minute: {per_minute}");
    }
    let _ = writeln!(o, "\tLast queue length: {}", d.schedule_queue_length);
    let _ = writeln!(o, "\nMain scheduler exit:");
    for reason in SCHEDULE_EXITS {
        let _ = writeln!(o, "\t{reason}:{:2}", 0);
    }
    let _ = writeln!(o, "\nBackfilling stats");
    let _ = writeln!(o, "\tTotal backfilled jobs (since last slurm start): 0");
    let _ = writeln!(
        o,
        "\tTotal backfilled jobs (since last stats cycle start): 0"
    );
    let _ = writeln!(o, "\tTotal backfilled heterogeneous job components: 0");
    let _ = writeln!(o, "\tTotal cycles: 0");
    let _ = writeln!(o, "\tLast cycle when: N/A");
    let _ = writeln!(o, "\tLast cycle: 0");
    let _ = writeln!(o, "\tMax cycle:  0");
    let _ = writeln!(o, "\tLast depth cycle: 0");
    let _ = writeln!(o, "\tLast depth cycle (try sched): 0");
    let _ = writeln!(o, "\tLast queue length: 0");
    let _ = writeln!(o, "\tLast table size: 0");
    let _ = writeln!(o, "\nBackfill exit");
    for reason in BACKFILL_EXITS {
        let _ = writeln!(o, "\t{reason}:{:2}", 0);
    }
    let _ = writeln!(
        o,
        "\nLatency for 1000 calls to gettimeofday(): 0 microseconds"
    );
    let _ = writeln!(o, "\nRemote Procedure Call statistics by message type");
    let _ = writeln!(o, "\nRemote Procedure Call statistics by user");
    let _ = writeln!(o, "\nPending RPC statistics");
    let _ = writeln!(o, "\tNo pending RPCs");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn the_last_of_all_and_reset_wins() {
        assert_eq!(parse_args(&s(&[])).unwrap(), Mode::Report);
        assert_eq!(parse_args(&s(&["-r"])).unwrap(), Mode::Reset);
        assert_eq!(parse_args(&s(&["--reset", "-a"])).unwrap(), Mode::Report);
        assert_eq!(parse_args(&s(&["-a", "--reset"])).unwrap(), Mode::Reset);
    }

    #[test]
    fn usage_help_and_bad_options_as_slurms() {
        let usage = parse_args(&s(&["--usage"])).unwrap_err();
        assert_eq!(usage.stdout, "Usage: sdiag [-M cluster] [-aritT]\n");
        let help = parse_args(&s(&["--help"])).unwrap_err();
        assert!(help.stdout.starts_with("Usage: sdiag [OPTIONS]\n"));
        assert!(help.stdout.contains("\nHelp options:\n"));
        let bad = parse_args(&s(&["-x"])).unwrap_err();
        assert_eq!(bad.code, 1);
        assert!(
            bad.stderr
                .ends_with("Try \"sdiag --help\" for more information\n")
        );
    }

    #[test]
    fn report_lays_out_counts_as_slurm() {
        let d = GetDiagnosticsReply {
            now: 1000,
            data_since: 880,
            server_thread_count: 4,
            jobs_submitted: 3,
            jobs_started: 2,
            jobs_completed: 1,
            jobs_canceled: 1,
            jobs_failed: 0,
            jobs_pending: 1,
            jobs_running: 0,
            schedule_cycle_last_us: 50,
            schedule_cycle_max_us: 90,
            schedule_cycle_count: 4,
            schedule_cycle_sum_us: 200,
            schedule_queue_length: 1,
            schedule_cycle_when: 990,
        };
        let text = render(&d, &|t| format!("T{t}"));
        for line in [
            "sdiag output at T1000 (1000)",
            "Data since      T880 (880)",
            "Server thread count:  4",
            "Jobs submitted: 3",
            "Jobs started:   2",
            "Jobs completed: 1",
            "Jobs canceled:  1",
            "Jobs failed:    0",
            "Jobs pending:   1",
            "\tMean cycle:   50",
            "\tCycles per minute: 2",
            "\tEnd of job queue: 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
        }
    }
}
