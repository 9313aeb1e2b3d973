//! `strigger`: Slurm's event triggers. This command takes Slurm 22.05's options and
//! checks them with Slurm's words (`--set` needs an event and an absolute `--program`
//! that exists, `--fini` and `--time` a `--jobid`, `--offset` stays within ±32000),
//! and answers `--help`, `--usage` and `--version`. `--set` asks the controller for a
//! trigger on nodes (`--down`, `--up`, `--drained`, `--idle`) or on a job (`--fini`,
//! `--time`), one per event given; `--get` lists the controller's triggers in Slurm's
//! table, filtered as Slurm's strigger filters them; `--clear` removes them by
//! `--id`, `--jobid` or `--user`. Slurm's other events (the controllers', the
//! database's, `--reconfig`, `--fail`, ...) are refused.

use crate::exit::Exit;
use crate::opts::{OptSpec, flag, optional, value};
use crate::{args, calls, client};
use model::trigger::{
    MAX_OFFSET, Trigger, TriggerEvent, TriggerFilter, TriggerResource, TriggerSpec,
};
use proto::v1;
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// One trigger for each event asked for.
    Set(Vec<TriggerSpec>),
    Get(Listing),
    Clear(TriggerFilter),
}

/// `--get`'s filters and header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    pub filter: TriggerFilter,
    /// Only triggers of these events (none given: all).
    pub events: Vec<TriggerEvent>,
    /// `--node`: only triggers on nodes.
    pub nodes_only: bool,
    pub no_header: bool,
}

/// A checked command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub request: Request,
    pub verbose: bool,
    pub quiet: bool,
}

/// Parses and checks the command line as Slurm's strigger does; `program_exists` says
/// whether `--program`'s file (without its arguments) is a regular file, and
/// `user_id` resolves a user name or id.
pub fn parse_args(
    args: &[String],
    program_exists: &dyn Fn(&str) -> bool,
    user_id: &dyn Fn(&str) -> Option<u32>,
) -> Result<Command, Exit> {
    let p = args::parse_command_line("strigger", args, SPECS, ALIASES, HELP, USAGE)?;
    if let Some(extra) = p.positional.first() {
        return Err(Exit::usage(
            "strigger",
            format!("Invalid argument: {extra}"),
        ));
    }
    let modes: Vec<&str> = p
        .opts
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| matches!(*name, "set" | "get" | "clear"))
        .collect();
    let [mode] = modes.as_slice() else {
        return Err(Exit::error(
            "strigger",
            "You must use exactly one of the following options: --set, --get or --clear",
        ));
    };
    let id = match p.get("id") {
        Some(id) => Some(
            id.parse::<u32>()
                .map_err(|_| Exit::error("strigger", format!("Invalid trigger id: {id}")))?,
        ),
        None => None,
    };
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
    let perm = match p.get("flags") {
        Some(f) if f.len() >= 4 && f[..4].eq_ignore_ascii_case("perm") => true,
        Some(f) => return Err(Exit::error("strigger", format!("Invalid flags {f}"))),
        None => false,
    };
    let uid = match p.get("user") {
        Some(u) => {
            Some(user_id(u).ok_or_else(|| Exit::error("strigger", format!("Invalid user {u}")))?)
        }
        None => None,
    };
    if *mode == "clear" && id.is_none() && job_id.is_none() && uid.is_none() {
        return Err(Exit::error(
            "strigger",
            "You must specify a --id, --jobid, or --user to clear",
        ));
    }
    let mut program = String::new();
    if *mode == "set" {
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
        let Some(given) = p.get("program") else {
            return Err(Exit::error(
                "strigger",
                "You must specify a --program value",
            ));
        };
        if (p.has("fini") || p.has("time")) && job_id.is_none() {
            return Err(Exit::error("strigger", "You must specify a --jobid value"));
        }
        if !given.starts_with('/') {
            return Err(Exit::error(
                "strigger",
                "The --program value must start with \"/\"",
            ));
        }
        let file = given.split_whitespace().next().unwrap_or(given);
        if !program_exists(file) {
            return Err(Exit::error(
                "strigger",
                "Invalid --program value, file not found",
            ));
        }
        program = given.to_string();
    }
    if !(-i64::from(MAX_OFFSET)..=i64::from(MAX_OFFSET)).contains(&offset) {
        return Err(Exit::error(
            "strigger",
            "The --offset parameter must be between +/-32000",
        ));
    }
    let events: Vec<TriggerEvent> = TriggerEvent::ALL
        .into_iter()
        .filter(|e| p.has(e.word()))
        .collect();
    let request = match *mode {
        "set" => {
            if let Some(other) = EVENTS
                .iter()
                .find(|e| p.has(e) && TriggerEvent::from_word(e).is_none())
            {
                return Err(Exit::error(
                    "strigger",
                    format!("--{other} triggers are not supported by this controller"),
                ));
            }
            let resource = match (job_id, p.get("node")) {
                (Some(job), _) => TriggerResource::Job(job),
                (None, Some(list)) if !list.is_empty() => {
                    TriggerResource::Nodes(Some(list.to_string()))
                }
                (None, _) => TriggerResource::Nodes(None),
            };
            Request::Set(
                events
                    .into_iter()
                    .map(|event| TriggerSpec {
                        resource: resource.clone(),
                        event,
                        offset: offset as i32,
                        program: program.clone(),
                        perm,
                    })
                    .collect(),
            )
        }
        "get" => Request::Get(Listing {
            filter: TriggerFilter { id, job_id, uid },
            events,
            nodes_only: p.has("node"),
            no_header: p.has("noheader"),
        }),
        _ => Request::Clear(TriggerFilter { id, job_id, uid }),
    };
    Ok(Command {
        request,
        verbose: p.has("verbose"),
        quiet: p.has("quiet"),
    })
}

/// `--get`'s header, as Slurm's strigger prints it.
pub const HEADER: &str =
    "TRIG_ID RES_TYPE   RES_ID TYPE                                OFFSET USER     FLAGS PROGRAM";

/// One `--get` line.
pub fn listing_line(t: &Trigger) -> String {
    format!(
        "{:>7} {:<9} {:>7} {:<35} {:>6} {:<8} {:<5} {}",
        t.id,
        t.spec.resource.type_word(),
        t.spec.resource.id_word(),
        t.spec.event.word(),
        t.spec.offset,
        t.user,
        if t.spec.perm { "PERM" } else { "" },
        t.spec.program
    )
}

/// The `--get` listing of the triggers `listing` selects (nothing at all when none).
pub fn render(triggers: &[Trigger], listing: &Listing) -> String {
    let mut out = String::new();
    let chosen = triggers.iter().filter(|t| {
        listing.filter.matches(t)
            && (listing.events.is_empty() || listing.events.contains(&t.spec.event))
            && (!listing.nodes_only || matches!(t.spec.resource, TriggerResource::Nodes(_)))
    });
    for (n, t) in chosen.enumerate() {
        if n == 0 && !listing.no_header {
            out.push_str(HEADER);
            out.push('\n');
        }
        out.push_str(&listing_line(t));
        out.push('\n');
    }
    out
}

fn user_id(user: &str) -> Option<u32> {
    match user.parse::<u32>() {
        Ok(uid) => Some(uid),
        Err(_) => nix::unistd::User::from_name(user)
            .ok()
            .flatten()
            .map(|u| u.uid.as_raw()),
    }
}

pub fn run(args: &[String]) -> ExitCode {
    let is_file = |path: &str| std::fs::metadata(path).is_ok_and(|m| m.is_file());
    let cmd = match parse_args(args, &is_file, &user_id) {
        Ok(c) => c,
        Err(early) => return early.finish(),
    };
    let rt = client::runtime();
    let (call, reply) = match &cmd.request {
        Request::Set(specs) => (
            "slurm_set_trigger",
            rt.block_on(async {
                let mut c = calls::connect().await?;
                for spec in specs {
                    let req = v1::SetTriggerRequest {
                        spec: Some(proto::convert::trigger_spec_to_wire(spec)),
                    };
                    c.set_trigger(req)
                        .await
                        .map_err(|s| calls::status_text(&s))?;
                }
                Ok::<String, String>(String::new())
            }),
        ),
        Request::Get(listing) => (
            "slurm_get_triggers",
            rt.block_on(async {
                let mut c = calls::connect().await?;
                let reply = c
                    .get_triggers(v1::GetTriggersRequest {})
                    .await
                    .map_err(|s| calls::status_text(&s))?
                    .into_inner();
                let triggers = reply
                    .triggers
                    .into_iter()
                    .map(trigger_from_wire)
                    .collect::<Result<Vec<_>, String>>()?;
                Ok::<String, String>(render(&triggers, listing))
            }),
        ),
        Request::Clear(filter) => (
            "slurm_clear_trigger",
            rt.block_on(async {
                let mut c = calls::connect().await?;
                let req = v1::ClearTriggersRequest {
                    id: filter.id,
                    job_id: filter.job_id,
                    uid: filter.uid,
                };
                c.clear_triggers(req)
                    .await
                    .map_err(|s| calls::status_text(&s))?;
                Ok::<String, String>(String::new())
            }),
        ),
    };
    match reply {
        Ok(out) => {
            print!("{out}");
            if cmd.verbose {
                match &cmd.request {
                    Request::Set(_) => eprintln!("strigger: trigger set"),
                    Request::Clear(f) => match (f.job_id, f.uid) {
                        (Some(job), _) => eprintln!("strigger: triggers for job {job} cleared"),
                        (None, Some(uid)) => {
                            eprintln!("strigger: triggers for user {uid} cleared")
                        }
                        (None, None) => {
                            eprintln!("strigger: trigger {} cleared", f.id.unwrap_or_default())
                        }
                    },
                    Request::Get(_) => {}
                }
            }
            ExitCode::SUCCESS
        }
        // Slurm's strigger says nothing of a failed clear with --quiet.
        Err(_) if cmd.quiet && matches!(cmd.request, Request::Clear(_)) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{call}: {e}");
            ExitCode::from(1)
        }
    }
}

/// A kept trigger from the controller's answer.
fn trigger_from_wire(w: v1::TriggerInfo) -> Result<Trigger, String> {
    let spec = w
        .spec
        .ok_or_else(|| "a trigger without a spec".to_string())?;
    Ok(Trigger {
        id: w.id,
        spec: proto::convert::trigger_spec_from_wire(spec)?,
        uid: w.uid,
        gid: 0,
        user: w.user,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &[&str]) -> Result<Command, Exit> {
        let args: Vec<String> = v.iter().map(|x| x.to_string()).collect();
        let users = |u: &str| match u {
            "ada" => Some(1000),
            _ => u.parse().ok(),
        };
        parse_args(&args, &|p| p == "/bin/true", &users)
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
        assert!(matches!(
            parse(&["--set", "--down", "--program=/bin/true"])
                .unwrap()
                .request,
            Request::Set(_)
        ));
        assert!(matches!(
            parse(&["--get", "-n"]).unwrap().request,
            Request::Get(_)
        ));
        assert!(matches!(
            parse(&["--clear", "--id=3"]).unwrap().request,
            Request::Clear(_)
        ));
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
        assert!(error(&["--get", "--user=nobody_here"]).contains("Invalid user nobody_here"));
        assert!(
            error(&["--set", "--up", "--flags=x", "-p", "/bin/true"]).contains("Invalid flags x")
        );
        assert!(
            error(&["--set", "--reconfig", "-p", "/bin/true"])
                .contains("--reconfig triggers are not supported")
        );
    }

    #[test]
    fn set_makes_one_trigger_per_event_on_the_job_or_the_nodes() {
        let Request::Set(specs) = parse(&[
            "--set",
            "--node=n[1-2]",
            "--down",
            "--drained",
            "--flags=PERM",
            "-p",
            "/bin/true",
        ])
        .unwrap()
        .request
        else {
            panic!()
        };
        let events: Vec<TriggerEvent> = specs.iter().map(|s| s.event).collect();
        assert_eq!(events, [TriggerEvent::Down, TriggerEvent::Drained]);
        assert!(
            specs
                .iter()
                .all(|s| s.perm && s.resource == TriggerResource::Nodes(Some("n[1-2]".into())))
        );
        let Request::Set(specs) = parse(&["--set", "-n", "--idle", "-o", "600", "-p", "/bin/true"])
            .unwrap()
            .request
        else {
            panic!()
        };
        assert_eq!(specs[0].resource, TriggerResource::Nodes(None));
        assert_eq!(specs[0].offset, 600);
        let Request::Set(specs) = parse(&[
            "--set",
            "--jobid=7",
            "--time",
            "--offset=-90",
            "-p",
            "/bin/true",
        ])
        .unwrap()
        .request
        else {
            panic!()
        };
        assert_eq!(
            specs,
            [TriggerSpec {
                resource: TriggerResource::Job(7),
                event: TriggerEvent::Time,
                offset: -90,
                program: "/bin/true".into(),
                perm: false,
            }]
        );
        let Request::Clear(filter) = parse(&["--clear", "--user=ada"]).unwrap().request else {
            panic!()
        };
        assert_eq!(filter.uid, Some(1000));
    }

    #[test]
    fn get_lists_in_slurms_table_only_what_its_filters_select() {
        let trigger = |id, resource, event, perm| Trigger {
            id,
            spec: TriggerSpec {
                resource,
                event,
                offset: -90,
                program: "/home/ada/t".into(),
                perm,
            },
            uid: 1000,
            gid: 1000,
            user: "ada".into(),
        };
        let all = [
            trigger(1, TriggerResource::Job(12), TriggerEvent::Time, false),
            trigger(2, TriggerResource::Nodes(None), TriggerEvent::Down, true),
        ];
        let Request::Get(listing) = parse(&["--get"]).unwrap().request else {
            panic!()
        };
        assert_eq!(
            render(&all, &listing),
            "TRIG_ID RES_TYPE   RES_ID TYPE                                OFFSET USER     FLAGS PROGRAM\n\
             \x20     1 job            12 time                                   -90 ada            /home/ada/t\n\
             \x20     2 node            * down                                   -90 ada      PERM  /home/ada/t\n"
        );
        let Request::Get(listing) = parse(&["--get", "--down", "-N"]).unwrap().request else {
            panic!()
        };
        assert_eq!(render(&all, &listing).lines().count(), 1);
        let Request::Get(listing) = parse(&["--get", "--jobid=13"]).unwrap().request else {
            panic!()
        };
        assert_eq!(render(&all, &listing), "");
    }
}
