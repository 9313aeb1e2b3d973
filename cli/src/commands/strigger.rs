//! `strigger`: Slurm's event triggers. This command takes Slurm 22.05's options and
//! checks them with Slurm's words (`--set` needs an event and an absolute `--program`
//! that exists, `--fini` and `--time` a `--jobid`, `--offset` stays within ±32000),
//! and answers `--help`, `--usage` and `--version`. Drover's controller keeps no
//! triggers yet: a valid `--set`, `--get` or `--clear` says so and fails
//! (`docs/slurm-compat.md`).

use crate::args;
use crate::exit::Exit;
use crate::opts::{OptSpec, flag, optional, value};
use std::process::ExitCode;

const SPECS: &[OptSpec] = &[
    flag("primary_slurmctld_failure", Some('a')),
    flag("primary_slurmctld_resumed_operation", Some('A')),
    flag("primary_slurmctld_resumed_control", Some('b')),
    flag("backup_slurmctld_failure", Some('B')),
    flag("backup_slurmctld_resumed_operation", Some('c')),
    flag("backup_slurmctld_assumed_control", Some('C')),
    flag("down", Some('d')),
    flag("drained", Some('D')),
    flag("primary_slurmctld_acct_buffer_full", Some('e')),
    flag("fini", Some('f')),
    flag("fail", Some('F')),
    flag("primary_slurmdbd_failure", Some('g')),
    flag("primary_slurmdbd_resumed_operation", Some('G')),
    flag("primary_database_failure", Some('h')),
    flag("primary_database_resumed_operation", Some('H')),
    value("id", Some('i')),
    flag("idle", Some('I')),
    value("jobid", Some('j')),
    value("cluster", Some('M')),
    value("clusters", None),
    optional("node", Some('n')),
    flag("noheader", Some('N')),
    value("offset", Some('o')),
    value("program", Some('p')),
    flag("quiet", Some('Q')),
    flag("reconfig", Some('r')),
    flag("time", Some('t')),
    flag("up", Some('u')),
    flag("verbose", Some('v')),
    flag("version", Some('V')),
    flag("block_err", None),
    flag("burst_buffer", None),
    flag("clear", None),
    value("flags", None),
    flag("front_end", None),
    flag("get", None),
    flag("help", None),
    flag("set", None),
    flag("usage", None),
    value("user", None),
];

const ALIASES: &[(&str, &str)] = &[("clusters", "cluster")];

/// The events a trigger may be set on (at least one is needed for `--set`).
const EVENTS: &[&str] = &[
    "primary_slurmctld_failure",
    "primary_slurmctld_resumed_operation",
    "primary_slurmctld_resumed_control",
    "backup_slurmctld_failure",
    "backup_slurmctld_resumed_operation",
    "backup_slurmctld_assumed_control",
    "down",
    "drained",
    "primary_slurmctld_acct_buffer_full",
    "fini",
    "fail",
    "primary_slurmdbd_failure",
    "primary_slurmdbd_resumed_operation",
    "primary_database_failure",
    "primary_database_resumed_operation",
    "idle",
    "reconfig",
    "time",
    "up",
    "block_err",
    "burst_buffer",
    "front_end",
];

const USAGE: &str =
    "Usage: strigger [--set | --get | --clear | --version] [-aAbBcCdDefFgGhHiIjnNopQrtuv]\n";

const HELP: &str = "\
Usage: strigger [--set | --get | --clear] [OPTIONS]
      --set           create a trigger
      --get           get trigger information
      --clear         delete a trigger

      --block_err     trigger event on BlueGene block error
      --burst_buffer  trigger event on burst buffer error
      --front_end     trigger event on FrontEnd node state changes
  -a, --primary_slurmctld_failure
                      trigger event when primary slurmctld fails
  -A, --primary_slurmctld_resumed_operation
                      trigger event on primary slurmctld resumed operation
                      after failure
  -b, --primary_slurmctld_resumed_control
                      trigger event on primary slurmctld resumed control
  -B, --backup_slurmctld_failure
                      trigger event when backup slurmctld fails
  -c, --backup_slurmctld_resumed_operation
                      trigger event when backup slurmctld resumed operation
                      after failure
  -C, --backup_slurmctld_assumed_control
                      trigger event when backup slurmctld assumed control
  -d, --down          trigger event when node goes DOWN
  -D, --drained       trigger event when node becomes DRAINED
  -e, --primary_slurmctld_acct_buffer_full
                      trigger event when primary slurmctld acct buffer full
  -F, --fail          trigger event when node is expected to FAIL
  -f, --fini          trigger event when job finishes
      --flags=perm    trigger event flag (perm = permanent)

  -g, --primary_slurmdbd_failure
                      trigger when primary slurmdbd fails
  -G, --primary_slurmdbd_resumed_operation
                      trigger when primary slurmdbd resumed operation after
                      failure
  -h, --primary_database_failure
                      trigger when primary database fails
  -H, --primary_database_resumed_operation
                      trigger when primary database resumed operation after
                      failure
  -i, --id=#          a trigger's ID number
  -I, --idle          trigger event when node remains IDLE
  -j, --jobid=#       trigger related to specific jobid
  -M, --cluster=name  cluster to issue commands to.  Default is
                      current cluster.  cluster with no name will
                      reset to default.
                      NOTE: SlurmDBD must up.
  -n, --node[=host]   trigger related to specific node, all nodes by default
  -N, --noheader      Do not print the message header
  -o, --offset=#      trigger's offset time from event, negative to precede
  -p, --program=path  pathname of program to execute when triggered
  -Q, --quiet         quiet mode (suppress informational messages)
  -r, --reconfig      trigger event on configuration changes
  -t, --time          trigger event on job's time limit
  -u, --up            trigger event when node returned to service from DOWN 
                      state
      --user          a user name or ID to filter triggers by
  -v, --verbose       print detailed event logging
  -V, --version       print version information and exit

Help options:
  --help              show this help message
  --usage             display brief usage message
";

/// What the command line asks of the controller's triggers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Set,
    Get,
    Clear,
}

/// Parses and checks the command line as Slurm's strigger does; `program_exists` says
/// whether `--program`'s file (without its arguments) is a regular file.
pub fn parse_args(args: &[String], program_exists: &dyn Fn(&str) -> bool) -> Result<Mode, Exit> {
    let p = args::parse_command_line("strigger", args, SPECS, ALIASES, HELP, USAGE)?;
    if let Some(extra) = p.positional.first() {
        return Err(Exit::usage(
            "strigger",
            format!("Invalid argument: {extra}"),
        ));
    }
    let modes: Vec<Mode> = p
        .opts
        .iter()
        .filter_map(|(name, _)| match *name {
            "set" => Some(Mode::Set),
            "get" => Some(Mode::Get),
            "clear" => Some(Mode::Clear),
            _ => None,
        })
        .collect();
    let [mode] = modes.as_slice() else {
        return Err(Exit::error(
            "strigger",
            "You must use exactly one of the following options: --set, --get or --clear",
        ));
    };
    let mode = *mode;
    if let Some(id) = p.get("id")
        && id.parse::<u32>().is_err()
    {
        return Err(Exit::error("strigger", format!("Invalid trigger id: {id}")));
    }
    let job_id = match p.get("jobid") {
        Some(j) => match j.parse::<u32>() {
            Ok(n) if n > 0 => Some(n),
            _ => return Err(Exit::error("strigger", format!("Invalid job id: {j}"))),
        },
        None => None,
    };
    let offset = match p.get("offset") {
        Some(o) => o
            .parse::<i64>()
            .map_err(|_| Exit::error("strigger", format!("Invalid offset value: {o}")))?,
        None => 0,
    };
    if mode == Mode::Clear && p.get("id").is_none() && job_id.is_none() && !p.has("user") {
        return Err(Exit::error(
            "strigger",
            "You must specify a --id, --jobid, or --user to clear",
        ));
    }
    if mode == Mode::Set {
        if !EVENTS.iter().any(|e| p.has(e)) {
            return Err(Exit::error(
                "strigger",
                "You must specify a trigger (--block_err, --down, --up, --reconfig, --time, \
                 --fini, --burst_buffer,\n--primary_slurmctld_failure,\n\
                 --primary_slurmctld_resumed_operation,\n--primary_slurmctld_resumed_control,\n\
                 --primary_slurmctld_acct_buffer_full,\n--backup_slurmctld_failure,\n\
                 --backup_slurmctld_resumed_operation,\n--backup_slurmctld_as_ctrl,\n\
                 --primary_slurmdbd_failure,\n--primary_slurmdbd_resumed_operation,\n\
                 --primary_database_failure, or \n--primary_database_resumed_operation)",
            ));
        }
        let Some(program) = p.get("program") else {
            return Err(Exit::error(
                "strigger",
                "You must specify a --program value",
            ));
        };
        if (p.has("fini") || p.has("time")) && job_id.is_none() {
            return Err(Exit::error("strigger", "You must specify a --jobid value"));
        }
        if !program.starts_with('/') {
            return Err(Exit::error(
                "strigger",
                "The --program value must start with \"/\"",
            ));
        }
        let file = program.split_whitespace().next().unwrap_or(program);
        if !program_exists(file) {
            return Err(Exit::error(
                "strigger",
                "Invalid --program value, file not found",
            ));
        }
    }
    if !(-32000..=32000).contains(&offset) {
        return Err(Exit::error(
            "strigger",
            "The --offset parameter must be between +/-32000",
        ));
    }
    Ok(mode)
}

pub fn run(args: &[String]) -> ExitCode {
    let is_file = |path: &str| std::fs::metadata(path).is_ok_and(|m| m.is_file());
    let mode = match parse_args(args, &is_file) {
        Ok(m) => m,
        Err(early) => return early.finish(),
    };
    let call = match mode {
        Mode::Set => "slurm_set_trigger",
        Mode::Get => "slurm_get_triggers",
        Mode::Clear => "slurm_clear_trigger",
    };
    eprintln!("{call}: Triggers are not supported by this controller");
    ExitCode::from(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &[&str]) -> Result<Mode, Exit> {
        let args: Vec<String> = v.iter().map(|x| x.to_string()).collect();
        parse_args(&args, &|p| p == "/bin/true")
    }

    fn error(v: &[&str]) -> String {
        parse(v).unwrap_err().stderr
    }

    #[test]
    fn help_and_usage_as_slurms() {
        let help = parse(&["--help"]).unwrap_err().stdout;
        assert!(help.starts_with("Usage: strigger [--set | --get | --clear] [OPTIONS]\n"));
        assert!(help.contains("  -n, --node[=host]   trigger related"));
        assert!(help.contains("\nHelp options:\n"));
        let usage = parse(&["--usage"]).unwrap_err().stdout;
        assert!(usage.starts_with("Usage: strigger [--set"));
    }

    #[test]
    fn a_trigger_is_checked_with_slurms_words() {
        assert_eq!(
            parse(&["--set", "--down", "--program=/bin/true"]).unwrap(),
            Mode::Set
        );
        assert_eq!(parse(&["--get", "-n"]).unwrap(), Mode::Get);
        assert_eq!(parse(&["--clear", "--id=3"]).unwrap(), Mode::Clear);
        assert!(error(&[]).contains("exactly one of the following options"));
        assert!(error(&["--get", "--set"]).contains("exactly one of the following options"));
        assert!(error(&["--set", "--program=/bin/true"]).contains("You must specify a trigger"));
        assert!(error(&["--set", "--down"]).contains("You must specify a --program value"));
        assert!(
            error(&["--set", "--fini", "--program=/bin/true"])
                .contains("You must specify a --jobid value")
        );
        assert!(error(&["--set", "--down", "--program=true"]).contains("must start with \"/\""));
        assert!(error(&["--set", "--down", "--program=/no/such"]).contains("file not found"));
        assert!(
            error(&["--set", "--up", "-o", "40000", "-p", "/bin/true"])
                .contains("between +/-32000")
        );
        assert!(error(&["--clear"]).contains("--id, --jobid, or --user"));
    }
}
