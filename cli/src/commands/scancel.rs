//! `scancel`: cancels jobs, or sends them a signal (`-s`), chosen by id and/or filters.
//!
//! Ids are `12`, `12_3`, `12_[1-3]`, several arguments or comma-separated; the filters
//! `-u`, `-n`, `-p`, `-t`, `-A`, `-q`, `-w`, `-R` and `--wckey` are sent to the
//! controller, which applies them (`model::filter`). Errors follow Slurm 22.05: with only ids (a
//! plain cancel), a job that is unknown or already finished is no error (said only with
//! `-v`); with a signal or filters, such an id is reported as an invalid job id and the
//! exit status is 1. `-M/--clusters` is accepted and ignored (one cluster).

use crate::args::Info;
use crate::calls;
use crate::client;
use crate::exit::Exit;
use crate::jobs;
use crate::opts::{self, OptSpec, flag, value};
use crate::signals;
use proto::v1;
use std::io::{BufRead, Write};
use std::process::ExitCode;

const PROG: &str = "scancel";

const SPECS: &[OptSpec] = &[
    value("account", Some('A')),
    flag("batch", Some('b')),
    value("clusters", Some('M')),
    value("cluster", None),
    flag("ctld", None),
    flag("full", Some('f')),
    flag("help", Some('h')),
    flag("hurry", Some('H')),
    flag("interactive", Some('i')),
    value("name", Some('n')),
    value("jobname", None),
    value("nodelist", Some('w')),
    value("partition", Some('p')),
    value("qos", Some('q')),
    flag("quiet", Some('Q')),
    value("reservation", Some('R')),
    flag("sibling", None),
    value("signal", Some('s')),
    value("state", Some('t')),
    flag("usage", None),
    value("user", Some('u')),
    flag("verbose", Some('v')),
    flag("version", Some('V')),
    value("wckey", None),
];

/// What the command line asks for.
#[derive(Debug, Default, PartialEq)]
pub struct Request {
    pub filter: v1::JobFilter,
    /// 0: cancel.
    pub signal: i32,
    pub batch: bool,
    /// `--full`: the batch shell and all of its group.
    pub full: bool,
    pub quiet: bool,
    pub verbose: bool,
    pub interactive: bool,
}

impl Request {
    /// Slurm's plain path: only ids, no signal, no filter.
    pub fn ids_only(&self) -> bool {
        self.signal == 0 && !self.batch && !self.interactive && !self.filtered()
    }

    /// Whether a filter narrows the jobs.
    fn filtered(&self) -> bool {
        let f = &self.filter;
        !(f.users.is_empty()
            && f.names.is_empty()
            && f.partitions.is_empty()
            && f.states.is_empty()
            && f.accounts.is_empty()
            && f.qos.is_empty()
            && f.reservations.is_empty()
            && f.nodes.is_empty()
            && f.wckeys.is_empty())
    }
}

#[derive(Debug)]
pub enum Parsed {
    Info(Info),
    Cancel(Box<Request>),
}

/// The command line → the request.
pub fn parse(args: &[String]) -> Result<Parsed, Exit> {
    let p = opts::parse(SPECS, args, false).map_err(|e| Exit::usage(PROG, &e))?;
    if let Some(info) = Info::asked(&p) {
        return Ok(Parsed::Info(info));
    }
    let mut r = Request::default();
    for arg in &p.positional {
        let ids = jobs::job_ids(arg)
            .map_err(|bad| Exit::error(PROG, format!("Invalid job id {}", bad.0)))?;
        r.filter.job_ids.extend(ids.iter().map(ToString::to_string));
    }
    for (k, v) in &p.opts {
        match *k {
            "account" => r.filter.accounts.push(v.clone()),
            "batch" => r.batch = true,
            "full" => r.full = true,
            "interactive" => r.interactive = true,
            "name" | "jobname" => r.filter.names.push(v.clone()),
            "nodelist" => {
                model::hostlist::expand(v)
                    .map_err(|_| Exit::error(PROG, format!("Invalid node list: {v}")))?;
                r.filter.nodes = v.clone();
            }
            "partition" => r.filter.partitions.push(v.clone()),
            "qos" => r.filter.qos = vec![v.clone()],
            "quiet" => r.quiet = true,
            "reservation" => r.filter.reservations = vec![v.clone()],
            "signal" => {
                r.signal = signals::parse_signal(v)
                    .ok_or_else(|| Exit::raw(format!("Unknown job signal: {v}")))?
            }
            "state" => {
                for s in v.split(',') {
                    match model::JobState::parse(s) {
                        Some(
                            st @ (model::JobState::Pending
                            | model::JobState::Running
                            | model::JobState::Suspended),
                        ) => r
                            .filter
                            .states
                            .push(proto::convert::state_to_wire(st) as i32),
                        _ => {
                            return Err(Exit::raw(
[format!("{PROG}: error: Invalid job state specified: {s}"),
                                    format!(
                                        "{PROG}: error: Valid job states are PENDING, RUNNING, and SUSPENDED"
                                    )]
.join("\n")));
                        }
                    }
                }
            }
            "user" => r.filter.users.push(v.clone()),
            "verbose" => r.verbose = true,
            "wckey" => r.filter.wckeys = vec![v.clone()],
            _ => {}
        }
    }
    if r.filter.job_ids.is_empty() && !r.filtered() {
        return Err(Exit::error(PROG, "No job identification provided"));
    }
    Ok(Parsed::Cancel(Box::new(r)))
}

/// Errors that mean the job is gone rather than that the request failed.
/// How many times scancel asks for a job in a transitional state (Slurm's
/// MAX_CANCEL_RETRY).
const MAX_CANCEL_RETRY: u64 = 10;

/// Asks again (`ask`, with their ids) for the jobs whose answer said they cannot take
/// the signal yet (waiting, or starting), after `wait`ing 5, 6, ... seconds, as
/// Slurm's scancel does, until every answer is final or `MAX_CANCEL_RETRY` tries were
/// made; the answers, the last one for each job.
async fn ask_again_while_transitional<Ask, AskFut, Wait, WaitFut>(
    mut results: Vec<v1::JobResult>,
    mut ask: Ask,
    mut wait: Wait,
) -> Result<Vec<v1::JobResult>, tonic::Status>
where
    Ask: FnMut(Vec<String>) -> AskFut,
    AskFut: std::future::Future<Output = Result<Vec<v1::JobResult>, tonic::Status>>,
    Wait: FnMut(std::time::Duration) -> WaitFut,
    WaitFut: std::future::Future<Output = ()>,
{
    for attempt in 0..MAX_CANCEL_RETRY - 1 {
        let mut again: Vec<String> = Vec::new();
        for res in results.iter().filter(|res| res.try_again) {
            if !again.contains(&res.job_id) {
                again.push(res.job_id.clone());
            }
        }
        if again.is_empty() {
            break;
        }
        wait(std::time::Duration::from_secs(5 + attempt)).await;
        let answers = ask(again).await?;
        results.retain(|res| !res.try_again);
        results.extend(answers);
    }
    Ok(results)
}

fn job_gone(err: &str) -> bool {
    err == "Invalid job id specified" || err.contains("already completing or completed")
}

/// The lines to print for the controller's answer, and the exit status.
pub fn report(r: &Request, results: &[v1::JobResult]) -> (Vec<String>, u8) {
    let mut lines = Vec::new();
    let mut code = 0;
    for res in results {
        if res.error.is_empty() {
            if r.verbose {
                let what = if res.job_id.contains('.') {
                    "step"
                } else {
                    "job"
                };
                lines.push(if r.signal == 0 {
                    format!("{PROG}: Terminating {what} {}", res.job_id)
                } else if r.batch {
                    format!("{PROG}: Signal {} to batch job {}", r.signal, res.job_id)
                } else {
                    format!("{PROG}: Signal {} to {what} {}", r.signal, res.job_id)
                });
            }
            continue;
        }
        if job_gone(&res.error) {
            if r.ids_only() {
                if r.verbose {
                    lines.push(format!("{PROG}: Terminating job {}", res.job_id));
                    lines.push(format!(
                        "{PROG}: error: Kill job error on job id {}: {}",
                        res.job_id, res.error
                    ));
                }
            } else if r.filter.job_ids.contains(&res.job_id) {
                code = 1;
                if !r.quiet {
                    lines.push(format!(
                        "{PROG}: error: Kill job error on job id {}: Invalid job id specified",
                        res.job_id
                    ));
                }
            } else if r.signal != 0 {
                code = 1;
            }
            continue;
        }
        code = 1;
        if !r.quiet {
            lines.push(format!(
                "{PROG}: error: Kill job error on job id {}: {}",
                res.job_id, res.error
            ));
        }
    }
    (lines, code)
}

const HELP: &str = "Usage: scancel [OPTIONS] [job_id[_array_id][.step_id]]
  -A, --account=account           act only on jobs charging this account
  -b, --batch                     signal batch shell for specified job
  -f, --full                      signal batch shell and all steps for specified job
  -i, --interactive               require response from user for each job
  -M, --clusters                  clusters to issue commands to
  -n, --name=job_name             act only on jobs with this name
  -p, --partition=partition       act only on jobs in this partition
  -Q, --quiet                     disable warnings
  -q, --qos=qos                   act only on jobs with this quality of service
  -R, --reservation=reservation   act only on jobs with this reservation
  -s, --signal=name | integer     signal to send to job, default is SIGKILL
  -t, --state=states              act only on jobs in this state.  Valid job
                                  states are PENDING, RUNNING and SUSPENDED
  -u, --user=user_name            act only on jobs of this user
  -V, --version                   output version information and exit
  -v, --verbose                   verbosity level
  -w, --nodelist                  act only on jobs on these nodes
      --wckey=wckey               act only on jobs with this workload
                                  charactization key

Help options:
  --help                          show this help message
  --usage                         display brief usage message
";

const USAGE: &str = "Usage: scancel [-A account] [--batch] [--interactive] [-n job_name] [-p partition] [-Q] [-q qos] [-R reservation] [-s signal | integer] [-t PENDING | RUNNING | SUSPENDED] [--usage] [-u user_name] [-V] [-v] [-w hosts...] [--wckey=wckey] [job_id[_array_id][.step_id]]\n";

pub fn run(args: &[String]) -> ExitCode {
    let r = match parse(args) {
        Ok(Parsed::Info(info)) => return info.print(HELP, USAGE),
        Ok(Parsed::Cancel(r)) => *r,
        Err(e) => return e.finish(),
    };
    client::runtime().block_on(cancel(r))
}

async fn cancel(mut r: Request) -> ExitCode {
    let mut client = match calls::connect().await {
        Ok(c) => c,
        Err(e) => return Exit::error(PROG, e).finish(),
    };
    if r.interactive {
        // Ask about each job, then cancel exactly those chosen.
        let reply = match client
            .list_jobs(v1::ListJobsRequest {
                filter: Some(r.filter.clone()),
                ..Default::default()
            })
            .await
        {
            Ok(rep) => rep.into_inner(),
            Err(s) => {
                return Exit::raw(format!("slurm_load_jobs error: {}", calls::status_text(&s)))
                    .finish();
            }
        };
        if let Err(e) = jobs::check_records(PROG, &reply.jobs) {
            return e.finish();
        }
        // Only live jobs are asked about; a job named that has ended, is being
        // cancelled (Slurm's CANCELLED+COMPLETING) or was never there is an error, as
        // Slurm's check of the ids before asking.
        let live: Vec<&v1::JobInfo> = reply
            .jobs
            .iter()
            .filter(|j| !jobs::job_state(j).is_final() && !j.cancelling)
            .collect();
        let mut code = 0;
        for id in &r.filter.job_ids {
            let job_part = id.split('.').next().unwrap_or(id);
            if !live.iter().any(|j| names_job(j, job_part)) {
                code = 1;
                if !r.quiet {
                    eprintln!(
                        "{PROG}: error: Kill job error on job id {id}: Invalid job id specified"
                    );
                }
            }
        }
        let mut chosen = Vec::new();
        for j in live {
            // Each id named (a step, `N.S`, is asked about as a step), or the job
            // itself when the jobs were picked by filters.
            let named: Vec<&String> = r
                .filter
                .job_ids
                .iter()
                .filter(|id| names_job(j, id.split('.').next().unwrap_or(id)))
                .collect();
            if named.is_empty() {
                let id = cancel_id(j);
                if confirm("job_id", &id, j) {
                    chosen.push(id);
                }
            }
            for id in named {
                let what = if id.contains('.') {
                    "step_id"
                } else {
                    "job_id"
                };
                if confirm(what, id, j) {
                    chosen.push(id.clone());
                }
            }
        }
        if chosen.is_empty() {
            return ExitCode::from(code);
        }
        r.filter = v1::JobFilter {
            job_ids: chosen,
            ..Default::default()
        };
    }
    let req = v1::SignalJobsRequest {
        filter: Some(r.filter.clone()),
        signal: r.signal,
        batch_only: r.batch,
        full: r.full,
    };
    let results = match client.signal_jobs(req.clone()).await {
        Ok(rep) => rep.into_inner().results,
        Err(s) => return Exit::error(PROG, calls::status_text(&s)).finish(),
    };
    let verbose = r.verbose;
    let results = match ask_again_while_transitional(
        results,
        |again| {
            let retry = v1::SignalJobsRequest {
                filter: Some(v1::JobFilter {
                    job_ids: again,
                    ..Default::default()
                }),
                ..req.clone()
            };
            // A new connection for each ask, when the idle one was closed meanwhile.
            let mut client = client.clone();
            async move {
                calls::again_if_lost(&mut client, |mut c| {
                    let retry = retry.clone();
                    async move { c.signal_jobs(retry).await }
                })
                .await
                .map(|rep| rep.results)
            }
        },
        |wait| {
            if verbose {
                // Slurm's words, spelling included.
                eprintln!("{PROG}: Job is in transistional state, retrying");
            }
            tokio::time::sleep(wait)
        },
    )
    .await
    {
        Ok(results) => results,
        Err(s) => return Exit::error(PROG, calls::status_text(&s)).finish(),
    };
    if results.is_empty()
        && r.verbose
        && let Some(line) = no_match_line(&r)
    {
        eprintln!("{line}");
    }
    let (lines, code) = report(&r, &results);
    for l in lines {
        eprintln!("{l}");
    }
    ExitCode::from(code)
}

/// What `-v` says when the filters matched no live job, naming them as Slurm does.
pub fn no_match_line(r: &Request) -> Option<String> {
    let f = &r.filter;
    let states: Vec<String> = f
        .states
        .iter()
        .filter_map(|s| v1::JobState::try_from(*s).ok())
        .map(|s| proto::convert::state_from_wire(s).name().to_string())
        .collect();
    let filters = [
        ("account", f.accounts.join(",")),
        ("job_name", f.names.join(",")),
        ("nodelist", f.nodes.clone()),
        ("partition", f.partitions.join(",")),
        ("qos", f.qos.join(",")),
        ("reservation", f.reservations.join(",")),
        ("state", states.join(",")),
        ("user_name", f.users.join(",")),
        ("wckey", f.wckeys.join(",")),
    ];
    let named: String = filters
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={v} "))
        .collect();
    (!named.is_empty())
        .then(|| format!("{PROG}: error: No active jobs match ALL job filters, including: {named}"))
}

/// The id to cancel a listed job by: its display id, or the raw id of an array
/// remainder without pending tasks.
fn cancel_id(j: &v1::JobInfo) -> String {
    if jobs::is_array_meta(j) && j.array_task_str.is_empty() {
        j.job_id.to_string()
    } else {
        jobs::display_id(j)
    }
}

/// Does `id` (a job id, an array's id, or `N_T`) name listed job `j`?
fn names_job(j: &v1::JobInfo, id: &str) -> bool {
    id == j.job_id.to_string()
        || id == jobs::base_id(j).to_string()
        || id == cancel_id(j)
        || id == jobs::display_id(j)
        || id
            .split_once("_[")
            .is_some_and(|(array, _)| array == jobs::base_id(j).to_string())
}

/// Asks `Cancel job_id=...` (or `step_id=`, as `what` says) until the answer is yes or no.
fn confirm(what: &str, id: &str, j: &v1::JobInfo) -> bool {
    let spec = jobs::spec(j);
    loop {
        print!(
            "Cancel {what}={id} name={} partition={} [y/n]? ",
            spec.name, spec.partition
        );
        let _ = std::io::stdout().flush();
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => return false,
            Ok(_) => {}
        }
        match line.trim_start().chars().next() {
            Some('y' | 'Y') => return true,
            Some('n' | 'N') => return false,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn req(args: &[&str]) -> Request {
        match parse(&s(args)).unwrap() {
            Parsed::Cancel(r) => *r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn jobs_in_a_transitional_state_are_asked_again_after_five_six_seconds() {
        let not_yet = |id: &str| v1::JobResult {
            try_again: true,
            ..res(id, "Job can not be altered now, try again later")
        };
        let mut asked: Vec<Vec<String>> = Vec::new();
        let mut waited = Vec::new();
        // Job 7 takes it at the second retry, job 8 at once, job 9 never.
        let mut answers = vec![
            vec![not_yet("7"), not_yet("9")],
            vec![res("7", ""), not_yet("9")],
        ]
        .into_iter();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let results = rt
            .block_on(ask_again_while_transitional(
                vec![not_yet("7"), res("8", ""), not_yet("9")],
                |ids| {
                    asked.push(ids.clone());
                    let answer = answers
                        .next()
                        .unwrap_or_else(|| ids.iter().map(|id| not_yet(id)).collect());
                    async move { Ok(answer) }
                },
                |d| {
                    waited.push(d.as_secs());
                    async {}
                },
            ))
            .unwrap();
        assert_eq!(waited, (5..14).collect::<Vec<u64>>());
        assert_eq!(asked[0], ["7", "9"]);
        assert_eq!(asked[2], ["9"]);
        let last = |id: &str| results.iter().find(|r| r.job_id == id).unwrap().clone();
        assert!(last("7").error.is_empty() && last("8").error.is_empty());
        assert!(last("9").try_again);
        assert_eq!(results.len(), 3);
    }

    fn res(id: &str, err: &str) -> v1::JobResult {
        v1::JobResult {
            job_id: id.into(),
            error: err.into(),
            try_again: false,
        }
    }

    #[test]
    fn ids_and_filters() {
        let r = req(&["12", "13_3,14_[1-3]", "--clusters=all"]);
        assert_eq!(r.filter.job_ids, ["12", "13_3", "14_[1-3]"]);
        assert!(r.ids_only());
        let r = req(&["12", "--signal", "USR2"]);
        assert_eq!(r.signal, libc::SIGUSR2);
        assert!(!r.ids_only());
        let r = req(&[
            "-u", "ada", "-n", "x", "-p", "gpu", "-t", "pd,r", "-A", "acct", "-b",
        ]);
        assert_eq!(r.filter.users, ["ada"]);
        assert_eq!(r.filter.names, ["x"]);
        assert_eq!(r.filter.partitions, ["gpu"]);
        assert_eq!(
            r.filter.states,
            [v1::JobState::Pending as i32, v1::JobState::Running as i32]
        );
        assert_eq!(r.filter.accounts, ["acct"]);
        assert!(r.batch && !r.full);
        assert!(req(&["-f", "-s", "USR1", "7"]).full);
        let r = req(&["--jobname=y", "-s", "9", "-q", "high"]);
        assert_eq!(
            (r.filter.names.clone(), r.signal, r.filter.qos.clone()),
            (vec!["y".to_string()], 9, vec!["high".to_string()])
        );
        // QOS, reservation, nodes and WCKey go to the controller's filter too.
        let r = req(&["-q", "low", "-R", "maint", "-w", "gpu[01-02]", "--wckey=ml"]);
        assert!(r.filtered() && !r.ids_only());
        assert_eq!(
            (
                r.filter.qos.clone(),
                r.filter.reservations.clone(),
                r.filter.nodes.clone(),
                r.filter.wckeys.clone()
            ),
            (
                s(&["low"]),
                s(&["maint"]),
                "gpu[01-02]".to_string(),
                s(&["ml"])
            )
        );
        let filter = proto::convert::filter_from_wire(&r.filter).unwrap();
        assert_eq!(filter.nodes, ["gpu01", "gpu02"]);
        assert_eq!(filter.reservations, ["maint"]);
    }

    #[test]
    fn parse_errors() {
        let e = |a: &[&str]| parse(&s(a)).unwrap_err();
        assert_eq!(e(&["12x"]).lines(), ["scancel: error: Invalid job id 12x"]);
        // As in Slurm, an empty item of a list is a bad id.
        assert_eq!(e(&["12,"]).lines(), ["scancel: error: Invalid job id "]);
        assert_eq!(
            e(&[]).lines(),
            ["scancel: error: No job identification provided"]
        );
        assert_eq!(
            e(&["-v"]).lines(),
            ["scancel: error: No job identification provided"]
        );
        assert_eq!(e(&["-s", "FOO", "1"]).lines(), ["Unknown job signal: FOO"]);
        assert_eq!(
            e(&["-w", "gpu[01-"]).lines(),
            ["scancel: error: Invalid node list: gpu[01-"]
        );
        assert_eq!(
            e(&["--bogus", "1"]).lines()[0],
            "scancel: unrecognized option '--bogus'"
        );
        assert!(
            e(&["-t", "completed", "-u", "x"]).lines()[0]
                .starts_with("scancel: error: Invalid job state specified: completed")
        );
        assert!(matches!(
            parse(&s(&["--help"])).unwrap(),
            Parsed::Info(Info::Help)
        ));
    }

    #[test]
    fn ids_of_listed_jobs() {
        let job = |id, array, task, tasks: &str| v1::JobInfo {
            job_id: id,
            array_job_id: array,
            array_task_id: task,
            array_task_str: tasks.into(),
            ..Default::default()
        };
        assert_eq!(cancel_id(&job(5, 0, None, "")), "5");
        assert_eq!(cancel_id(&job(7, 5, Some(2), "")), "5_2");
        assert_eq!(cancel_id(&job(5, 5, None, "3-4%2")), "5_[3-4%2]");
        // An array remainder without pending tasks goes by its own id.
        assert_eq!(cancel_id(&job(5, 5, None, "")), "5");
    }

    #[test]
    fn gone_jobs_are_silent_on_a_plain_cancel() {
        let r = req(&["99", "98", "97"]);
        let results = [
            res("99", "Invalid job id specified"),
            res("98", "Job/step already completing or completed"),
            res("97", ""),
        ];
        assert_eq!(report(&r, &results), (vec![], 0));
        let r = req(&["-v", "99"]);
        assert_eq!(
            report(&r, &[res("99", "Invalid job id specified")]),
            (
                vec![
                    "scancel: Terminating job 99".to_string(),
                    "scancel: error: Kill job error on job id 99: Invalid job id specified"
                        .to_string()
                ],
                0
            )
        );
        let r = req(&["99"]);
        assert_eq!(
            report(&r, &[res("99", "Access/permission denied")]),
            (
                vec![
                    "scancel: error: Kill job error on job id 99: Access/permission denied"
                        .to_string()
                ],
                1
            )
        );
    }

    #[test]
    fn gone_jobs_are_errors_with_a_signal_or_filter() {
        let r = req(&["99", "--signal", "USR2"]);
        let expect = vec![
            "scancel: error: Kill job error on job id 99: Invalid job id specified".to_string(),
        ];
        assert_eq!(
            report(&r, &[res("99", "Job/step already completing or completed")]),
            (expect.clone(), 1)
        );
        let r = req(&["-u", "ada", "99"]);
        assert_eq!(
            report(&r, &[res("99", "Invalid job id specified")]),
            (expect, 1)
        );
        let r = req(&["-Q", "-s", "1", "99"]);
        assert_eq!(
            report(&r, &[res("99", "Invalid job id specified")]),
            (vec![], 1)
        );
        // A filter that matched a job finishing meanwhile: no error on cancel.
        let r = req(&["-u", "ada"]);
        assert_eq!(
            report(&r, &[res("5", "Job/step already completing or completed")]),
            (vec![], 0)
        );
    }

    #[test]
    fn filters_that_match_nothing_are_named_as_slurm_does() {
        let r = req(&["--name=INVALID", "--qos=INVALID", "-t", "PD", "--verbose"]);
        assert_eq!(
            no_match_line(&r).unwrap(),
            "scancel: error: No active jobs match ALL job filters, including: \
             job_name=INVALID qos=INVALID state=PENDING "
        );
        assert_eq!(no_match_line(&req(&["12"])), None);
    }

    #[test]
    fn verbose_names_a_signal_to_the_batch_shell() {
        let r = req(&["--batch", "--signal=STOP", "-v", "7"]);
        let (lines, code) = report(&r, &[res("7", "")]);
        assert_eq!(lines, vec!["scancel: Signal 19 to batch job 7"]);
        assert_eq!(code, 0);
    }
}
