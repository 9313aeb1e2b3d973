//! `sstat`: what the running steps of a job have used so far, as Slurm 22.05's sstat
//! prints it. The controller says where the job runs; each of its node daemons reads
//! the steps' cgroup counters (`NodeAgent.StepStats`), and the figures of a step's
//! nodes are combined (`model::StepUsage::combine`). Columns come from sacct's field
//! table, limited to the fields sstat knows.
//!
//! `-j 12` shows the lowest running step of job 12 (numbered steps before `batch`),
//! `-a -j 12` all of them, `-j 12.batch` or `-j 12.0` that one:
//!
//! ```text
//! sstat -P -o JobID,MaxRSS,NTasks -j 12.batch   →  JobID|MaxRSS|NTasks
//!                                                  12.batch|52348K|1
//! ```

use super::sacct::{self, Row};
use crate::args;
use crate::client;
use crate::exit::Exit;
use crate::fields::Sacct;
use crate::format::Parsable;
use crate::jobs::{self, Ctx};
use crate::opts::{OptSpec, flag, value};
use crate::times;
use crate::users::Names;
use model::job_id::{JobIdSpec, StepId};
use proto::v1::{self, JobInfo, StepInfo};
use std::collections::BTreeMap;
use std::process::ExitCode;

const PROG: &str = "sstat";

const SPECS: &[OptSpec] = &[
    flag("allsteps", Some('a')),
    flag("helpformat", Some('e')),
    flag("help", Some('h')),
    value("jobs", Some('j')),
    flag("noheader", Some('n')),
    flag("noconvert", None),
    value("fields", None),
    value("format", Some('o')),
    flag("parsable", Some('p')),
    flag("parsable2", Some('P')),
    flag("usage", None),
    flag("verbose", Some('v')),
    flag("version", Some('V')),
];

const ALIASES: &[(&str, &str)] = &[("fields", "format")];

const USAGE: &str = "Usage: sstat [options] -j <job(.stepid)>\n\tUse --help for help\n";

/// The fields sstat prints, in the order `--helpformat` lists them.
const SSTAT_FIELDS: &[&str] = &[
    "AveCPU",
    "AveCPUFreq",
    "AveDiskRead",
    "AveDiskWrite",
    "AvePages",
    "AveRSS",
    "AveVMSize",
    "ConsumedEnergy",
    "ConsumedEnergyRaw",
    "JobID",
    "MaxDiskRead",
    "MaxDiskReadNode",
    "MaxDiskReadTask",
    "MaxDiskWrite",
    "MaxDiskWriteNode",
    "MaxDiskWriteTask",
    "MaxPages",
    "MaxPagesNode",
    "MaxPagesTask",
    "MaxRSS",
    "MaxRSSNode",
    "MaxRSSTask",
    "MaxVMSize",
    "MaxVMSizeNode",
    "MaxVMSizeTask",
    "MinCPU",
    "MinCPUNode",
    "MinCPUTask",
    "Nodelist",
    "NTasks",
    "ReqCPUFreq",
    "ReqCPUFreqMin",
    "ReqCPUFreqMax",
    "ReqCPUFreqGov",
    "TRESUsageInAve",
    "TRESUsageInMax",
    "TRESUsageInMaxNode",
    "TRESUsageInMaxTask",
    "TRESUsageInMin",
    "TRESUsageInMinNode",
    "TRESUsageInMinTask",
    "TRESUsageInTot",
    "TRESUsageOutAve",
    "TRESUsageOutMax",
    "TRESUsageOutMaxNode",
    "TRESUsageOutMaxTask",
    "TRESUsageOutMin",
    "TRESUsageOutMinNode",
    "TRESUsageOutMinTask",
    "TRESUsageOutTot",
];

const DEFAULT_FIELDS: &str = "JobID,MaxVMSize,MaxVMSizeNode,MaxVMSizeTask,AveVMSize,MaxRSS,\
MaxRSSNode,MaxRSSTask,AveRSS,MaxPages,MaxPagesNode,MaxPagesTask,AvePages,MinCPU,MinCPUNode,\
MinCPUTask,AveCPU,NTasks,AveCPUFreq,ReqCPUFreqMin,ReqCPUFreqMax,ReqCPUFreqGov,ConsumedEnergy,\
MaxDiskRead,MaxDiskReadNode,MaxDiskReadTask,AveDiskRead,MaxDiskWrite,MaxDiskWriteNode,\
MaxDiskWriteTask,AveDiskWrite,TRESUsageInAve,TRESUsageInMax,TRESUsageInMaxNode,\
TRESUsageInMaxTask,TRESUsageInMin,TRESUsageInMinNode,TRESUsageInMinTask,TRESUsageInTot,\
TRESUsageOutAve,TRESUsageOutMax,TRESUsageOutMaxNode,TRESUsageOutMaxTask,TRESUsageOutMin,\
TRESUsageOutMinNode,TRESUsageOutMinTask,TRESUsageOutTot";

#[derive(Debug, Clone)]
pub struct Options {
    pub fields: Vec<(&'static Sacct, i32)>,
    pub noheader: bool,
    pub mode: Parsable,
    pub all_steps: bool,
    pub jobs: Vec<JobIdSpec>,
    /// `--noconvert`: sizes in the units they are kept in.
    pub sizes: model::units::SizeConversion,
}

pub fn parse_args(args: &[String]) -> Result<Options, Exit> {
    let p = args::parse_command_line(PROG, args, SPECS, ALIASES, HELP, USAGE)?;
    if p.has("helpformat") {
        return Err(Exit::info(help_fields()));
    }
    let mut jobs = Vec::new();
    // Job ids are taken bare too, as sstat takes them.
    for text in p
        .all("jobs")
        .into_iter()
        .chain(p.positional.iter().map(String::as_str))
    {
        jobs.extend(JobIdSpec::parse_list(text).map_err(|e| Exit::error(PROG, e.to_string()))?);
    }
    if jobs.is_empty() {
        return Err(Exit::error(PROG, "You didn't give me any jobs to stat."));
    }
    let text: Vec<&str> = p.all("format");
    let text = if text.is_empty() {
        DEFAULT_FIELDS.to_string()
    } else {
        text.join(",")
    };
    let mut fields = Vec::new();
    for (field, width) in sacct::parse_fields(&text).map_err(|e| Exit::error(PROG, &e))? {
        // sstat spells sacct's NodeList as Nodelist; field names are read in any case.
        if !SSTAT_FIELDS
            .iter()
            .any(|name| name.eq_ignore_ascii_case(field.name))
        {
            return Err(Exit::error(
                PROG,
                format!("Invalid field requested: \"{}\"", field.name),
            ));
        }
        fields.push((field, width));
    }
    Ok(Options {
        sizes: sacct::size_conversion(&p, PROG)?,
        fields,
        noheader: p.has("noheader"),
        mode: if p.has("parsable2") {
            Parsable::NoEnding
        } else if p.has("parsable") {
            Parsable::Ending
        } else {
            Parsable::No
        },
        all_steps: p.has("allsteps"),
        jobs,
    })
}

fn help_fields() -> String {
    sacct::field_list(SSTAT_FIELDS.iter().copied())
}

/// The order sstat picks "the lowest step running" in: numbered steps, then the batch
/// step, then the extern step (Slurm's ids for those two are near `u32::MAX`).
fn step_rank(step: &str) -> (u8, u32) {
    match step.parse::<StepId>() {
        Ok(StepId::Numbered(n)) => (0, n),
        Ok(StepId::Batch) => (1, 0),
        Ok(StepId::Extern) => (2, 0),
        Err(()) => (3, 0),
    }
}

/// The running steps each job id names: `(job, step ids)` in the order given, or
/// Slurm's message for one that names nothing running.
pub fn select<'a>(
    opts: &Options,
    jobs: &'a [JobInfo],
) -> Vec<Result<(&'a JobInfo, Vec<String>), String>> {
    let mut out = Vec::new();
    for spec in &opts.jobs {
        let job = jobs.iter().find(|j| {
            jobs::select(&spec.without_step(), j).is_some()
                && jobs::job_state(j) == model::JobState::Running
        });
        let Some(job) = job else {
            out.push(Err(match spec.step() {
                Some(step) => format!("StepId={}.{step} not found running.", spec.job_id()),
                None => format!("No steps running for job {}", spec.job_id()),
            }));
            continue;
        };
        let mut running: Vec<&StepInfo> = job
            .steps
            .iter()
            .filter(|s| jobs::step_state(s) == model::JobState::Running)
            .collect();
        running.sort_by_key(|s| step_rank(&s.step_id));
        let picked: Vec<String> = match spec.step() {
            Some(step) => {
                let step = step.to_string();
                running
                    .iter()
                    .filter(|s| s.step_id == step)
                    .map(|s| s.step_id.clone())
                    .collect()
            }
            None if opts.all_steps => running.iter().map(|s| s.step_id.clone()).collect(),
            None => running.iter().take(1).map(|s| s.step_id.clone()).collect(),
        };
        if picked.is_empty() {
            out.push(Err(match spec.step() {
                Some(step) => format!("StepId={}.{step} not found running.", job.job_id),
                None => format!("No steps running for job {}", job.job_id),
            }));
        } else {
            out.push(Ok((job, picked)));
        }
    }
    out
}

/// The rows: each selected step of `job` with the usage its nodes reported so far
/// (`live`, by step id); a step no node reported has no usage.
pub fn render(
    opts: &Options,
    picked: &[(JobInfo, Vec<String>)],
    live: &[BTreeMap<String, model::StepUsage>],
    ctx: &Ctx,
) -> String {
    let shown: Vec<JobInfo> = picked
        .iter()
        .zip(live)
        .map(|((job, steps), live)| {
            let mut job = job.clone();
            job.steps = steps
                .iter()
                .filter_map(|id| job.steps.iter().find(|s| &s.step_id == id))
                .map(|s| StepInfo {
                    usage: live.get(&s.step_id).map(proto::convert::usage_to_wire),
                    ..s.clone()
                })
                .collect();
            job
        })
        .collect();
    let rows: Vec<Row> = shown
        .iter()
        .flat_map(|j| j.steps.iter().map(move |s| Row::Step(j, s)))
        .collect();
    sacct::Table {
        fields: &opts.fields,
        header: !opts.noheader,
        mode: opts.mode,
        delimiter: "|",
    }
    .render(&rows, ctx)
}

/// What every node of `job` reports of its steps, combined per step.
async fn gather(
    job: &JobInfo,
    agents: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, model::StepUsage>, String> {
    let nodes = model::hostlist::expand(&job.nodes).map_err(|e| e.to_string())?;
    let mut out: BTreeMap<String, model::StepUsage> = BTreeMap::new();
    for node in nodes {
        let reply = crate::calls::agent_of(agents, &node)
            .await?
            .step_stats(v1::StepStatsRequest { job_id: job.job_id })
            .await
            .map_err(|s| format!("{node}: {}", crate::calls::status_text(&s)))?
            .into_inner();
        for stat in reply.steps {
            let Some(usage) = stat.usage.map(proto::convert::usage_from_wire) else {
                continue;
            };
            let id = if stat.step_id == "batch" || stat.step_id.parse::<u32>().is_ok() {
                stat.step_id
            } else {
                continue;
            };
            let merged = match out.get(&id) {
                Some(seen) => seen.combine(&usage),
                None => usage,
            };
            out.insert(id, merged);
        }
    }
    Ok(out)
}

pub fn run(args: &[String]) -> ExitCode {
    let opts = match parse_args(args) {
        Ok(o) => o,
        Err(early) => return early.finish(),
    };
    let rt = client::runtime_with_io();
    let ids: Vec<JobIdSpec> = opts.jobs.iter().map(JobIdSpec::without_step).collect();
    let (reply, agents) = match rt.block_on(crate::calls::jobs_and_agents(&ids)) {
        Ok(r) => r,
        Err(e) => return Exit::error(PROG, &e).finish(),
    };
    let mut picked = Vec::new();
    let mut live = Vec::new();
    for selected in select(&opts, &reply.jobs) {
        match selected {
            Ok((job, steps)) => match rt.block_on(gather(job, &agents)) {
                Ok(usage) => {
                    picked.push((job.clone(), steps));
                    live.push(usage);
                }
                Err(e) => eprintln!("{PROG}: error: {e}"),
            },
            Err(e) => eprintln!("{PROG}: error: {e}"),
        }
    }
    let ctx = Ctx {
        now: if reply.now > 0 {
            reply.now
        } else {
            times::now()
        },
        names: Names::resolve(std::iter::empty(), std::iter::empty()),
        cluster: client::cluster_name(),
        partition_tiers: Default::default(),
        sizes: opts.sizes,
    };
    print!("{}", render(&opts, &picked, &live, &ctx));
    ExitCode::SUCCESS
}

const HELP: &str = "\
sstat [<OPTION>] -j <job(.stepid)>
    Valid <OPTION> values are:
     -a, --allsteps:
                   Print all steps for the given job(s) when no step is
                   specified.
     -e, --helpformat:
                   Print a list of fields that can be specified with the
                   '--format' option
     -h, --help:   Print this description of use.
     -j, --jobs:
                   Format is <job(.step)>. Stat this job step
                   or comma-separated list of job steps. This option is
                   required.  The step portion will default to the lowest
                   numbered (not batch, extern, etc) step running if not
                   specified, unless the --allsteps flag is set where not
                   specifying a step will result in all running steps
                   to be displayed.  A step id of 'batch' will display the
                   information about the batch step.
     --noconvert:
                   Don't convert units from their original type
                   (e.g. 2048M won't be converted to 2G).
     -n, --noheader:
                   No header will be added to the beginning of output.
                   The default is to print a header.
     -o, --format:
                   Comma separated list of fields. (use
                   \"--helpformat\" for a list of available fields).
     -p, --parsable: output will be '|' delimited with a '|' at the end
     -P, --parsable2: output will be '|' delimited without a '|' at the end
     --usage:      Display brief usage message.
     -v, --verbose:
                   Primarily for debugging purposes, report the state of
                   various variables during processing.
     -V, --version: Print version.

Drover reads each step's figures on its nodes: CPU time (AveCPU) from its
cgroups; task by task, where tasks have cgroups of their own, memory (MaxRSS,
AveRSS: the peak resident sets of their processes) and what they read and
wrote (MaxDiskRead, AveDiskWrite, ...: their read and write calls); else
memory from the step's cgroup (its high-water mark). Figures nothing counts
are blank.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn sv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    fn step(id: &str, state: v1::JobState, tasks: u32) -> StepInfo {
        StepInfo {
            step_id: id.into(),
            state: state as i32,
            num_tasks: tasks,
            nodes: "n1".into(),
            ..Default::default()
        }
    }

    fn running_job(id: u32, steps: Vec<StepInfo>) -> JobInfo {
        JobInfo {
            job_id: id,
            state: v1::JobState::Running as i32,
            nodes: "n1".into(),
            steps,
            spec: Some(v1::JobSpec::default()),
            ..Default::default()
        }
    }

    fn ctx() -> Ctx {
        Ctx {
            now: 100,
            names: Names::resolve(std::iter::empty(), std::iter::empty()),
            cluster: "c".into(),
            partition_tiers: Default::default(),
            sizes: Default::default(),
        }
    }

    #[test]
    fn a_job_is_required_and_fields_are_sstats() {
        let e = parse_args(&sv(&["-a"])).unwrap_err();
        assert_eq!(
            e.stderr,
            "sstat: error: You didn't give me any jobs to stat.\n"
        );
        assert_eq!(e.code, 1);
        let e = parse_args(&sv(&["-j", "5", "-o", "State"])).unwrap_err();
        assert!(
            e.stderr.contains("Invalid field requested: \"State\""),
            "{}",
            e.stderr
        );
        let o = parse_args(&sv(&["-j", "5.batch,6", "-o", "jobid,maxrss%12", "-P"])).unwrap();
        assert_eq!(o.jobs.len(), 2);
        assert_eq!(o.fields[1].0.name, "MaxRSS");
        assert_eq!(o.fields[1].1, 12);
        // A bare job id is a job too.
        assert_eq!(parse_args(&sv(&["7"])).unwrap().jobs.len(), 1);
        let e = parse_args(&sv(&["-e"])).unwrap_err();
        assert!(e.stdout.contains("MaxRSS") && !e.stdout.contains("State"));
        // Slurm 22.05's fields (Pids aside), Nodelist among them, a field to ask for.
        assert_eq!(e.stdout.split_whitespace().count(), 50);
        assert!(e.stdout.contains("Nodelist "));
        let o = parse_args(&sv(&["-j", "5", "-o", "Nodelist"])).unwrap();
        assert_eq!(o.fields[0].0.name, "NodeList");
    }

    #[test]
    fn the_lowest_running_step_is_shown_unless_all_or_one_is_named() {
        use v1::JobState::{Completed, Running};
        let jobs = vec![running_job(
            5,
            vec![
                step("batch", Running, 1),
                step("0", Completed, 2),
                step("1", Running, 2),
                step("2", Running, 4),
            ],
        )];
        let pick = |args: &[&str]| -> Vec<Result<Vec<String>, String>> {
            select(&parse_args(&sv(args)).unwrap(), &jobs)
                .into_iter()
                .map(|r| r.map(|(_, s)| s))
                .collect()
        };
        assert_eq!(pick(&["-j", "5"]), vec![Ok(vec!["1".to_string()])]);
        assert_eq!(
            pick(&["-a", "-j", "5"]),
            vec![Ok(vec!["1".to_string(), "2".into(), "batch".into()])]
        );
        assert_eq!(
            pick(&["-j", "5.batch"]),
            vec![Ok(vec!["batch".to_string()])]
        );
        assert_eq!(
            pick(&["-j", "5.0"]),
            vec![Err("StepId=5.0 not found running.".to_string())]
        );
        assert_eq!(
            pick(&["-j", "6"]),
            vec![Err("No steps running for job 6".to_string())]
        );
    }

    #[test]
    fn live_usage_prints_as_sacct_prints_a_steps() {
        use v1::JobState::Running;
        let job = running_job(5, vec![step("batch", Running, 1), step("0", Running, 2)]);
        let opts = parse_args(&sv(&[
            "-a",
            "-P",
            "-j",
            "5",
            "-o",
            "JobID,MaxRSS,MaxRSSNode,MaxRSSTask,AveCPU,NTasks",
        ]))
        .unwrap();
        let picked = vec![(job, vec!["0".to_string(), "batch".to_string()])];
        let live = vec![BTreeMap::from([(
            "0".to_string(),
            model::StepUsage {
                max_rss_bytes: 52_346_880,
                max_rss_node: "n1".into(),
                total_cpu_us: 4_000_000,
                user_cpu_us: 3_000_000,
                system_cpu_us: 1_000_000,
                tasks: None,
                gpu: None,
            },
        )])];
        assert_eq!(
            render(&opts, &picked, &live, &ctx()),
            "JobID|MaxRSS|MaxRSSNode|MaxRSSTask|AveCPU|NTasks\n\
             5.0|51120K|n1||00:00:02|2\n\
             5.batch|||||1\n"
        );
    }

    #[test]
    fn disk_figures_print_as_slurms_in_the_units_asked() {
        use v1::JobState::Running;
        let job = running_job(5, vec![step("0", Running, 3)]);
        let mb = |n: u64| n << 20;
        let io = |read_bytes, write_bytes| model::DiskIo {
            read_bytes,
            write_bytes,
        };
        // Task 0 holds 100 MB and reads 1 KB, task 1 writes 10 MB, task 2 on n2 reads
        // 10 MB.
        let task =
            |id, node, rss, io| model::TaskUsage::of_task(id, node, rss, 0).with_disk(id, node, io);
        let tasks = task(0, "n1", 105_377_792, io(1024, 0))
            .combine(&task(1, "n1", mb(1), io(0, mb(10))))
            .combine(&task(2, "n2", mb(1), io(mb(10), 0)));
        let live = vec![BTreeMap::from([(
            "0".to_string(),
            model::StepUsage {
                max_rss_bytes: mb(120),
                max_rss_node: "n1".into(),
                tasks: Some(tasks),
                ..Default::default()
            },
        )])];
        let picked = vec![(job, vec!["0".to_string()])];
        let shown = |extra: &[&str]| {
            let mut args = sv(&["-P", "-n", "-j", "5", "-o"]);
            args.push(
                "MaxRSS,AveRSS,MaxDiskWrite,AveDiskWrite,MaxDiskRead,AveDiskRead,\
                 MaxDiskWriteTask,MaxDiskReadTask,MaxDiskReadNode,TRESUsageOutTot"
                    .into(),
            );
            args.extend(sv(extra));
            let opts = parse_args(&args).unwrap();
            let ctx = Ctx {
                sizes: opts.sizes,
                ..ctx()
            };
            render(&opts, &picked, &live, &ctx)
        };
        assert_eq!(
            shown(&[]),
            "102908K|35824981|10M|3.33M|10M|3.33M|1|2|n2|fs/disk=10M\n"
        );
        // --noconvert: memory in bytes, disk figures in MB, as test12.2 reads them.
        assert_eq!(
            shown(&["--noconvert"]),
            "105377792|35824981|10M|3.33M|10M|3.33M|1|2|n2|fs/disk=10485760\n"
        );
    }
}
