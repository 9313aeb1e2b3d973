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
    /// `-v`: say when the step is joined.
    pub verbose: bool,
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
        verbose: p.has("verbose"),
    })
}

pub fn run(args: &[String]) -> ExitCode {
    let opts = match parse_args(args) {
        Ok(o) => o,
        Err(early) => return early.finish(),
    };
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
    if opts.verbose {
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
    fn a_job_step_and_the_filters() {
        assert_eq!(
            parse(&["-l", "--output-filter=1", "12.3"]).unwrap(),
            Options {
                job_id: 12,
                step_id: 3,
                label: true,
                output_filter: Some(1),
                error_filter: None,
                verbose: false,
            }
        );
        assert!(parse(&["12"]).is_err(), "a job without its step");
        assert!(parse(&["12.batch"]).is_err());
        assert!(parse(&[]).is_err());
        assert!(parse(&["--output-filter=x", "12.0"]).is_err());
        assert!(parse(&["--input-filter=0", "12.0"]).is_err());
    }
}
