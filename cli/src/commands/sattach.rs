//! `sattach JOB.STEP`: joins a running step, as Slurm 22.05's sattach does: the output
//! its tasks write from then on (`-l` labels each line with its task; `--output-filter`
//! and `--error-filter` keep one task's), and sattach's input goes to the tasks'
//! stdin, beside srun's. It ends when the step does. The controller says which nodes
//! run the step; each of their node daemons streams its tasks (`NodeAgent.AttachStep`).
//! With `-v` it says on stderr once every node has it attached.
//!
//! ```text
//! sattach -l 12.0   →  0: epoch 3 loss 0.41
//!                      1: epoch 3 loss 0.39
//! ```

use super::step::Sinks;
use crate::args;
use crate::client;
use crate::exit::Exit;
use crate::jobs;
use crate::opts::{OptSpec, flag, value};
use model::job_id::{JobIdSpec, StepId};
use proto::v1::{self, AttachInput, AttachTarget, attach_input, task_output};
use std::io::Read;
use std::process::ExitCode;
use tokio::sync::mpsc;

const PROG: &str = "sattach";

const SPECS: &[OptSpec] = &[
    value("error-filter", None),
    flag("help", Some('h')),
    flag("label", Some('l')),
    flag("layout", None),
    value("output-filter", None),
    flag("quiet", Some('Q')),
    flag("usage", Some('u')),
    flag("verbose", Some('v')),
    flag("version", Some('V')),
];

const USAGE: &str = "Usage: sattach [options] <jobid.stepid>\n";

const HELP: &str = "\
Usage: sattach [options] <jobid.stepid>
      --error-filter=taskid  only print stderr from the specified task
      --output-filter=taskid only print stdout from the specified task
  -l, --label                prepend task number to lines of stdout & stderr
      --layout               print task layout info and exit (does not attach to tasks)
  -Q, --quiet                quiet mode (suppress informational messages)
  -v, --verbose              verbose mode (multiple -v's increase verbosity)
  -V, --version              print the Slurm version

Help options:
  -h, --help                 print this help message
  -u, --usage                print a brief usage message
";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub job_id: u32,
    pub step_id: u32,
    pub label: bool,
    pub output_filter: Option<u32>,
    pub error_filter: Option<u32>,
    /// `-v`: say when the step is joined; `-vv`, also the options first.
    pub verbose: usize,
    /// `--layout`: say how many tasks on which nodes, and attach to nothing.
    pub layout: bool,
}

pub fn parse_args(args: &[String]) -> Result<Options, Exit> {
    let p = args::parse_command_line(PROG, args, SPECS, &[], HELP, USAGE)?;
    let [id] = p.positional.as_slice() else {
        return Err(Exit::usage(PROG, "you must provide a job step id"));
    };
    let spec = JobIdSpec::parse(id).map_err(|e| Exit::error(PROG, e.to_string()))?;
    let Some(StepId::Numbered(step_id)) = spec.step() else {
        return Err(Exit::error(
            PROG,
            format!("{id}: give a job step, as JOBID.STEPID (a step srun started)"),
        ));
    };
    let filter = |name: &str| -> Result<Option<u32>, Exit> {
        p.get(name)
            .map(|v| {
                v.parse::<u32>()
                    .map_err(|_| Exit::error(PROG, format!("Invalid --{name} value: {v}")))
            })
            .transpose()
    };
    Ok(Options {
        job_id: spec.job_id(),
        step_id,
        label: p.has("label"),
        output_filter: filter("output-filter")?,
        error_filter: filter("error-filter")?,
        verbose: p.all("verbose").len(),
        layout: p.has("layout"),
    })
}

pub fn run(args: &[String]) -> ExitCode {
    let opts = match parse_args(args) {
        Ok(o) => o,
        Err(early) => return early.finish(),
    };
    if opts.verbose > 1 {
        let (user, uid, gid) = client::current_user();
        eprint!("{}", defined_options(&opts, &user, uid, gid));
    }
    let rt = client::runtime_with_io();
    match rt.block_on(attach(&opts)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => Exit::error(PROG, e).finish(),
    }
}

/// Joins the step on each of its nodes and writes what they send until it ends.
async fn attach(opts: &Options) -> Result<(), String> {
    let job = JobIdSpec::parse(&opts.job_id.to_string()).map_err(|e| e.to_string())?;
    let (listing, agents) = crate::calls::jobs_and_agents(&[job]).await?;
    let not_running = || format!("Job step {}.{} is not running", opts.job_id, opts.step_id);
    let step = listing
        .jobs
        .iter()
        .find(|j| j.job_id == opts.job_id)
        .and_then(|j| {
            j.steps
                .iter()
                .find(|s| s.step_id == opts.step_id.to_string())
        })
        .filter(|s| jobs::step_state(s) == model::JobState::Running)
        .ok_or_else(not_running)?;
    if opts.layout {
        print!("{}", layout_text(step));
        return Ok(());
    }
    let (events_tx, mut events) = mpsc::channel::<Result<v1::TaskOutput, String>>(256);
    let mut inputs = Vec::new();
    for node in model::hostlist::expand(&step.nodes).map_err(|e| e.to_string())? {
        let mut agent = crate::calls::agent_of(&agents, &node).await?;
        let (input_tx, input_rx) = mpsc::channel::<AttachInput>(64);
        let target = AttachTarget {
            job_id: opts.job_id,
            step_id: opts.step_id,
        };
        let _ = input_tx
            .send(AttachInput {
                input: Some(attach_input::Input::Target(target)),
            })
            .await;
        let mut answers = agent
            .attach_step(tokio_stream::wrappers::ReceiverStream::new(input_rx))
            .await
            .map_err(|s| format!("{node}: {}", crate::calls::status_text(&s)))?
            .into_inner();
        let events = events_tx.clone();
        tokio::spawn(async move {
            loop {
                let next = match answers.message().await {
                    Ok(Some(out)) => Ok(out),
                    Ok(None) => return,
                    Err(s) => Err(format!("{node}: {}", crate::calls::status_text(&s))),
                };
                let failed = next.is_err();
                if events.send(next).await.is_err() || failed {
                    return;
                }
            }
        });
        inputs.push(input_tx);
    }
    drop(events_tx);
    if opts.verbose > 0 {
        eprintln!(
            "{PROG}: attached to StepId={}.{} on {} node(s)",
            opts.job_id,
            opts.step_id,
            inputs.len()
        );
    }
    forward_stdin(inputs);
    let mut sinks = Sinks::own_streams(opts.label, true);
    while let Some(event) = events.recv().await {
        match event?.output {
            Some(task_output::Output::Data(d)) => {
                let filter = if d.stderr {
                    opts.error_filter
                } else {
                    opts.output_filter
                };
                if filter.is_none_or(|t| t == d.task_id) {
                    sinks.write(d.task_id, d.stderr, &d.data);
                }
            }
            Some(task_output::Output::Exit(e)) => sinks.flush(e.task_id),
            _ => {}
        }
    }
    Ok(())
}

/// What `sattach -vv` says first, as Slurm's: the step and who joins it.
fn defined_options(opts: &Options, user: &str, uid: u32, gid: u32) -> String {
    let rows = [
        ("job ID", opts.job_id.to_string()),
        ("step ID", opts.step_id.to_string()),
        ("user", format!("`{user}'")),
        ("uid", uid.to_string()),
        ("gid", gid.to_string()),
        ("verbose", opts.verbose.to_string()),
    ];
    let mut out = format!(
        "{PROG}: defined options for program `{PROG}'\n{PROG}: --------------- ---------------------\n"
    );
    for (k, v) in rows {
        out.push_str(&format!("{PROG}: {k:<15}: {v}\n"));
    }
    out
}

/// `--layout`'s lines, as Slurm's begin them: the step's task and node counts and its
/// nodes (the tasks of each node are not known here, and not told).
fn layout_text(step: &v1::StepInfo) -> String {
    let nodes = model::hostlist::expand(&step.nodes).map_or(0, |n| n.len());
    format!(
        "Job step layout:\n\t{} tasks, {nodes} nodes ({})\n",
        step.num_tasks, step.nodes
    )
}

/// Reads sattach's stdin on a thread of its own and sends it to every node of the step.
fn forward_stdin(inputs: Vec<mpsc::Sender<AttachInput>>) {
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match stdin.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            for input in &inputs {
                let _ = input.blocking_send(AttachInput {
                    input: Some(attach_input::Input::Stdin(buf[..n].to_vec())),
                });
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, Exit> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        parse_args(&args)
    }

    #[test]
    fn layout_says_tasks_and_nodes() {
        let step = v1::StepInfo {
            nodes: "n[1-4]".into(),
            num_tasks: 8,
            ..Default::default()
        };
        assert_eq!(
            layout_text(&step),
            "Job step layout:\n\t8 tasks, 4 nodes (n[1-4])\n"
        );
        assert!(parse(&["--layout", "3.0"]).unwrap().layout);
        let o = parse(&["-vv", "3.0"]).unwrap();
        assert_eq!(o.verbose, 2);
        let said = defined_options(&o, "ada", 1000, 100);
        assert!(said.starts_with("sattach: defined options for program `sattach'\n"));
        assert!(said.contains("sattach: user           : `ada'\n"), "{said}");
        assert!(said.ends_with("sattach: verbose        : 2\n"), "{said}");
    }

    #[test]
    fn a_job_step_and_the_filters() {
        assert_eq!(
            parse(&["-l", "--output-filter=1", "12.3"]).unwrap(),
            Options {
                job_id: 12,
                step_id: 3,
                label: true,
                output_filter: Some(1),
                error_filter: None,
                verbose: 0,
                layout: false,
            }
        );
        assert!(parse(&["12"]).is_err(), "a job without its step");
        assert!(parse(&["12.batch"]).is_err());
        assert!(parse(&[]).is_err());
        assert!(parse(&["--output-filter=x", "12.0"]).is_err());
        assert!(parse(&["--input-filter=0", "12.0"]).is_err());
    }
}
