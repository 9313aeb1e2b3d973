//! `srun` inside an allocation: a step's tasks, run on the job's nodes through their node
//! daemons (`NodeAgent.RunTasks`), as Slurm's srun runs them through slurmstepd.
//!
//! The controller lays the tasks out (`CreateStep`, `model::step`); srun opens one stream
//! to each node of the step, sends the command, the environment and the node's tasks,
//! then passes its stdin (to every task) and the signals it gets (to every task), and
//! writes what comes back: each task's output, to srun's own stdout and stderr or to the
//! `-o`/`-e` files (`%t`, `%n`, `%N` name a task's and node's files), with `--label`
//! prefixing each line with the task id. When every task has ended it reports the step's
//! end (`CompleteStep`) and exits with the worst exit code; `--kill-on-bad-exit` kills
//! the step when a task fails.
//!
//! For example, `srun -n 3 -l hostname` in a job on `n[1-2]` prints `0: n1`, `1: n1` and
//! `2: n2` (in the order they come) and exits 0.
//!
//! `--pty` (`srun --pty bash`): task 0 runs in a pseudo-terminal of the size of srun's
//! own terminal, which srun puts in raw mode while the step runs, so that every key,
//! ^C included, reaches the task's terminal; size changes follow (SIGWINCH). The other
//! tasks' output goes to /dev/null, as Slurm's.

use super::srun::{Request, step_path, task_env};
use crate::calls;
use crate::client;
use crate::exit::Exit;
use proto::v1::{self, TaskInput, task_input, task_output};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::process::ExitCode;
use tokio::sync::mpsc;

const PROG: &str = "srun";

/// What srun (or sattach) writes where: its own streams, or files by path.
pub(crate) struct Sinks {
    label: bool,
    /// Added to task numbers in labels (a component's tasks in a heterogeneous step).
    label_offset: u32,
    /// Whole lines only, as Slurm's srun writes its tasks' output unless `-u`, so that
    /// the lines of tasks never mix (`--label` implies it).
    line_buffered: bool,
    /// Per task and stream: the file it goes to (`None`: srun's own stream).
    dest: BTreeMap<(u32, bool), Option<String>>,
    files: BTreeMap<String, File>,
    /// Partial lines per task and stream, while line-buffered.
    partial: BTreeMap<(u32, bool), Vec<u8>>,
}

impl Sinks {
    /// Everything to this process's own streams, each line after `task: ` with `label`,
    /// whole lines at a time with `line_buffered`.
    pub(crate) fn own_streams(label: bool, line_buffered: bool) -> Sinks {
        Sinks {
            label,
            label_offset: 0,
            line_buffered: line_buffered || label,
            dest: BTreeMap::new(),
            files: BTreeMap::new(),
            partial: BTreeMap::new(),
        }
    }

    pub(crate) fn write(&mut self, task: u32, stderr: bool, data: &[u8]) {
        let mut bytes = data.to_vec();
        if self.line_buffered {
            let buf = self.partial.entry((task, stderr)).or_default();
            buf.extend_from_slice(data);
            let Some(end) = buf.iter().rposition(|b| *b == b'\n') else {
                return;
            };
            bytes = buf.drain(..=end).collect();
        }
        self.emit_lines(task, stderr, &bytes);
    }

    /// Writes out what is left of a task's last lines.
    pub(crate) fn flush(&mut self, task: u32) {
        for stderr in [false, true] {
            if let Some(rest) = self.partial.remove(&(task, stderr))
                && !rest.is_empty()
            {
                self.emit_lines(task, stderr, &rest);
            }
        }
    }

    /// `bytes` of a task's output, labelled with `--label`.
    fn emit_lines(&mut self, task: u32, stderr: bool, bytes: &[u8]) {
        if self.label {
            let bytes = labelled(task + self.label_offset, bytes);
            self.emit(task, stderr, &bytes);
        } else {
            self.emit(task, stderr, bytes);
        }
    }

    fn emit(&mut self, task: u32, stderr: bool, bytes: &[u8]) {
        let dest = self.dest.get(&(task, stderr)).cloned().flatten();
        match dest.and_then(|p| self.files.get_mut(&p)) {
            Some(f) => {
                let _ = f.write_all(bytes);
            }
            None if stderr => {
                let _ = std::io::stderr().write_all(bytes);
            }
            None => {
                let mut out = std::io::stdout();
                let _ = out.write_all(bytes);
                let _ = out.flush();
            }
        }
    }
}

/// `task: ` before every line of `lines`.
fn labelled(task: u32, lines: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(lines.len() + 8);
    for line in lines.split_inclusive(|b| *b == b'\n') {
        out.extend_from_slice(format!("{task}: ").as_bytes());
        out.extend_from_slice(line);
    }
    out
}

/// What srun sends to one node's stream.
type NodeLink = mpsc::Sender<TaskInput>;

/// What comes back from the nodes, merged.
enum Event {
    Data(v1::TaskData),
    Exit(String, v1::TaskExit),
    Failed(String, Vec<u32>, String),
    /// What the step used on one node.
    Usage(Box<v1::StepUsage>),
}

pub async fn in_allocation(req: Request, env: Vec<(String, String)>, job_id: u32) -> ExitCode {
    let o = &req.opts;
    let fail = |e: String| {
        Exit::error(PROG, format!("Unable to create step for job {job_id}: {e}")).finish()
    };
    let mut ctld = match calls::connect().await {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let (_, uid, gid) = client::current_user();
    let name = o
        .job_name
        .clone()
        .unwrap_or_else(|| super::submit_opts::basename(&req.command[0]).to_string());
    let (num_tasks, num_nodes, ntasks_per_node, cpus_per_task) = step_shape(o, &env);
    // `-r N` with `-N M` past the job's nodes, refused before asking, as Slurm's srun.
    let job_nodes = env
        .iter()
        .find(|(k, _)| k == "SLURM_JOB_NUM_NODES")
        .and_then(|(_, v)| v.parse::<u32>().ok());
    if let (Some(relative), Some(job_nodes)) = (o.relative, job_nodes)
        && relative.saturating_add(num_nodes.max(1)) > job_nodes
    {
        return Exit::error(
            PROG,
            format!(
                "--relative and --nodes option incompatible with count of allocated nodes \
                 ({relative}+{}>{job_nodes})",
                num_nodes.max(1)
            ),
        )
        .finish();
    }
    // `-w` and `-x` name nodes of the job, as hostlists.
    let hosts = |list: &Option<String>| match list.as_deref() {
        None | Some("") => Ok(Vec::new()),
        Some(l) => model::hostlist::expand(l).map_err(|e| e.to_string()),
    };
    let (nodelist, exclude) = match (hosts(&o.nodelist), hosts(&o.exclude)) {
        (Ok(n), Ok(x)) => (n, x),
        (Err(e), _) | (_, Err(e)) => return fail(e),
    };
    let (layout, plane_size) = proto::convert::task_layout_to_wire(
        o.distribution.map(|d| d.task_layout()).unwrap_or_default(),
    );
    let ask = v1::CreateStepRequest {
        job_id,
        name,
        num_tasks,
        num_nodes,
        ntasks_per_node,
        cpus_per_task,
        overcommit: o.overcommit,
        exclusive: o.exclusive,
        time_limit_min: o.time_limit.flatten(),
        gpu_request: Some(super::submit_opts::step_gpu_request(o, PROG)),
        layout: layout as i32,
        plane_size,
        nodelist,
        exclude,
        relative: o.relative.unwrap_or(0),
        task_nodes: req.task_nodes.clone(),
    };
    // Nodes that have not started the job yet are busy: asked again until they have,
    // as Slurm's srun does. A batch script's srun may ask before the controller has
    // heard that its node started the script: that wait is short, and said only when
    // it lasts.
    let mut wait = std::time::Duration::from_millis(20);
    let asked = std::time::Instant::now();
    let mut waited = false;
    let reply = loop {
        match ctld.create_step(ask.clone()).await {
            Ok(r) => break r.into_inner(),
            Err(s) if s.message() == model::step::NODES_BUSY => {
                // `--immediate[=secs]`: no longer than that.
                if o.immediate
                    .is_some_and(|secs| asked.elapsed().as_secs() >= u64::from(secs.max(1)))
                {
                    return fail(model::step::NODES_BUSY.to_string());
                }
                if !waited && asked.elapsed() >= std::time::Duration::from_secs(1) {
                    crate::say!(
                        "{PROG}: Job {job_id} step creation temporarily disabled, retrying ({})",
                        model::step::NODES_BUSY
                    );
                    waited = true;
                }
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(std::time::Duration::from_secs(1));
            }
            Err(s) => return fail(calls::status_text(&s)),
        }
    };
    if waited {
        crate::say!("{PROG}: Step created for StepId={job_id}.{}", reply.step_id);
    }
    let step_id = reply.step_id;
    let job = reply.job.unwrap_or(v1::JobInfo {
        job_id,
        ..Default::default()
    });
    let nodes = reply.nodes;
    // A step without its own `--gpu-bind` binds as its job asked, as Slurm's steps
    // inherit the job's.
    let gpu_bind = o.gpu_bind.clone().unwrap_or_else(|| {
        job.spec
            .as_ref()
            .and_then(|s| s.details.as_ref())
            .map(|d| d.gpu_bind.clone())
            .unwrap_or_default()
    });
    if o.verbose > 0 {
        crate::say_raw!("{}", verbose_launch(&job, step_id, &nodes));
    }
    if o.debugger_test {
        crate::say_raw!("{}", task_table(&req, &nodes));
        let _ = ctld
            .complete_step(v1::CompleteStepRequest {
                job_id,
                step_id,
                ..Default::default()
            })
            .await;
        return ExitCode::SUCCESS;
    }
    let base_env = task_env(o, &env, &job, step_id, &nodes);
    let work_dir = o.chdir.clone().unwrap_or_else(super::sbatch::current_dir);
    // `--bcast`: the executable is copied to each node, and run from there.
    let argv_on = |node: &str| {
        let mut argv = req.command.clone();
        if let Some(dest) = &o.bcast {
            argv[0] = bcast_path(dest, &work_dir, job_id, step_id, node);
        }
        argv
    };
    if o.bcast.is_some() {
        let targets: Vec<(String, String)> = nodes
            .iter()
            .map(|n| (n.name.clone(), n.agent_addr.clone()))
            .collect();
        let source = executable(&req.command[0], &env);
        if let Err(e) = super::sbcast::send_file(
            &job,
            &targets,
            &source,
            |n| argv_on(n)[0].clone(),
            true,
            false,
        )
        .await
        {
            crate::say!("{PROG}: error: --bcast: {e}");
            let _ = ctld
                .complete_step(v1::CompleteStepRequest {
                    job_id,
                    step_id,
                    exit_code: 1,
                    ..Default::default()
                })
                .await;
            return ExitCode::FAILURE;
        }
    }
    let mut sinks = match sinks(&req, &job, step_id, &nodes, &env) {
        Ok(s) => s,
        Err(e) => return e.finish(),
    };
    let window = o.pty.then(|| terminal_size().unwrap_or_default());
    // Watched before the tasks start, so that no change after they do is missed.
    let mut resized = window_changes(o.pty);

    let (events_tx, mut events) = mpsc::channel::<Event>(256);
    let mut links = Vec::new();
    for (index, node) in nodes.iter().enumerate() {
        let (input_tx, input_rx) = mpsc::channel::<TaskInput>(64);
        let launch = v1::TaskLaunch {
            job_id,
            step_id,
            node_index: index as u32,
            task_ids: node.task_ids.clone(),
            argv: argv_on(&node.name),
            env: base_env
                .iter()
                .map(|(name, value)| v1::EnvVar {
                    name: name.clone(),
                    value: value.clone(),
                })
                .collect(),
            work_dir: work_dir.clone(),
            uid,
            gid,
            cpu_ids: node.cpu_ids.clone(),
            mem_mb: node.mem_mb,
            gpu_indices: node.gpu_indices.clone(),
            node_name: node.name.clone(),
            gpus_per_task: o.gpus_per_task.as_ref().map_or(0, |g| g.count),
            gpu_bind: gpu_bind.clone(),
            cpu_bind: o.cpu_bind.clone().unwrap_or_default(),
            cpus_per_task,
            pty: window.filter(|_| node.task_ids.contains(&0)),
            grant: node.grant.clone(),
            task_prolog: o.task_prolog.clone().unwrap_or_default(),
            task_epilog: o.task_epilog.clone().unwrap_or_default(),
            slurmd_debug: o.slurmd_debug.map_or(0, |l| l.number()),
            stdin_task: selected_task(&o.input),
            rlimits: own_rlimits(),
            multi_prog: req
                .multi_prog
                .as_ref()
                .map(|(text, _)| text.clone())
                .unwrap_or_default(),
        };
        let _ = input_tx
            .send(TaskInput {
                input: Some(task_input::Input::Launch(launch)),
            })
            .await;
        tokio::spawn(drive_node(node.clone(), input_rx, events_tx.clone()));
        links.push(input_tx);
    }
    drop(events_tx);
    // Task 0's node, whose terminal follows srun's size.
    let terminal_link = nodes
        .iter()
        .position(|n| n.task_ids.contains(&0))
        .filter(|_| o.pty)
        .map(|i| links[i].clone());
    let raw = terminal_link.as_ref().and_then(|_| RawTerminal::enter());
    forward_stdin(&links, &req, &job, step_id, &nodes);
    let mut signals = signal_stream();

    let total: usize = nodes.iter().map(|n| n.task_ids.len()).sum();
    let all_tasks: Vec<u32> = nodes.iter().flat_map(|n| n.task_ids.clone()).collect();
    let mut exits: Vec<(String, v1::TaskExit)> = Vec::new();
    let kill_on_bad_exit = o.kill_on_bad_exit;
    let mut killed = false;
    // `-W`: once the first task has ended, the others have that long.
    let mut max_wait: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
    // ^C, as Slurm's srun takes it: the time of the last one.
    let mut last_interrupt: Option<std::time::Instant> = None;
    // srun ended the step itself (^C twice, or --quit-on-interrupt): the tasks it
    // killed are told of only with -v.
    let mut cancelled = false;
    // Whether the controller was asked why a task was killed.
    let mut asked_why = false;
    // With -K, the task whose failure ended the step gives srun's exit status.
    let mut first_bad: Option<(i32, i32)> = None;
    let mut usage: Option<model::StepUsage> = None;
    while exits.len() < total {
        tokio::select! {
            ev = events.recv() => match ev {
                Some(Event::Data(d)) => sinks.write(d.task_id, d.stderr, &d.data),
                Some(Event::Usage(u)) => {
                    let u = proto::convert::usage_from_wire(*u);
                    usage = Some(match usage {
                        Some(all) => all.combine(&u),
                        None => u,
                    });
                }
                Some(Event::Exit(node, exit)) => {
                    sinks.flush(exit.task_id);
                    if exits.is_empty() && o.max_wait > 0 && exits.len() + 1 < total {
                        let wait = std::time::Duration::from_secs(u64::from(o.max_wait));
                        max_wait = Some(Box::pin(tokio::time::sleep(wait)));
                    }
                    // A task killed by no doing of srun's: the step is aborted when its
                    // job was cancelled.
                    if exit.exit_signal != 0 && !killed && !cancelled && !asked_why {
                        asked_why = true;
                        if let Some((wait, state)) = job_ended_wait(&mut ctld, job_id).await {
                            crate::say!("{PROG}: Job step aborted: Waiting up to {wait} seconds for job step to finish.");
                            cancelled = true;
                            // The job's time limit ended the step: its node's notice,
                            // as Slurm's srun relays slurmstepd's.
                            if state == model::JobState::Timeout {
                                let what = format!("STEP {job_id}.{step_id}");
                                let at = crate::times::format_time(crate::times::now());
                                let line = model::job::cancelled_line(&what, &node, &at, true);
                                crate::say!("drover-noded: {line}");
                            }
                        }
                    }
                    let bad = exit.exit_code != 0 || exit.exit_signal != 0;
                    if bad && kill_on_bad_exit && !killed {
                        killed = true;
                        first_bad = Some((exit.exit_code, exit.exit_signal));
                        crate::say!("{PROG}: Terminating StepId={job_id}.{step_id}");
                        broadcast(&links, task_input::Input::Signal(libc::SIGKILL)).await;
                    }
                    exits.push((node, exit));
                }
                Some(Event::Failed(node, tasks, message)) => {
                    crate::say!("{PROG}: error: Task launch for StepId={job_id}.{step_id} failed on node {node}: {message}");
                    for task_id in tasks {
                        exits.push((node.clone(), v1::TaskExit { task_id, exit_code: 2, exit_signal: 0 }));
                    }
                    if !killed {
                        killed = true;
                        broadcast(&links, task_input::Input::Signal(libc::SIGKILL)).await;
                    }
                }
                None => break,
            },
            Some(sig) = signals.recv() => {
                if sig != libc::SIGINT || o.pty {
                    broadcast(&links, task_input::Input::Signal(sig)).await;
                    continue;
                }
                let again = last_interrupt.is_some_and(|t| t.elapsed() < std::time::Duration::from_secs(1));
                if o.quit_on_interrupt || again || o.disable_status {
                    crate::say!("{PROG}: sending Ctrl-C to StepId={job_id}.{step_id}");
                    broadcast(&links, task_input::Input::Signal(libc::SIGINT)).await;
                    if !o.disable_status || again {
                        crate::say!("{PROG}: forcing job termination");
                        cancelled = true;
                        broadcast(&links, task_input::Input::Signal(libc::SIGKILL)).await;
                    }
                } else {
                    crate::say!("{PROG}: interrupt (one more within 1 sec to abort)");
                    crate::say_raw!("{}", step_status(job_id, step_id, &all_tasks, &exits));
                }
                last_interrupt = Some(std::time::Instant::now());
            }
            () = async { max_wait.as_mut().expect("armed").await }, if max_wait.is_some() => {
                max_wait = None;
                crate::say!("{PROG}: First task exited {}s ago", o.max_wait);
                crate::say_raw!("{}", step_status(job_id, step_id, &all_tasks, &exits));
                killed = true;
                broadcast(&links, task_input::Input::Signal(libc::SIGKILL)).await;
            }
            Some(()) = resized.recv() => {
                if let (Some(link), Some(size)) = (&terminal_link, terminal_size()) {
                    let _ = link.send(TaskInput { input: Some(task_input::Input::Window(size)) }).await;
                }
            }
        }
    }
    drop(raw);
    exits.sort_by_key(|(_, e)| e.task_id);
    crate::say_raw!("{}", exit_report(&exits, cancelled, o.verbose > 0));
    let mut worst: Option<(i32, i32, u8)> = None;
    for (_, e) in &exits {
        let rank = exit_rank(e.exit_code, e.exit_signal);
        if rank > 0 && worst.is_none_or(|(_, _, r)| rank > r) {
            worst = Some((e.exit_code, e.exit_signal, rank));
        }
    }
    let (exit_code, exit_signal, rank) = match first_bad {
        Some((code, signal)) => (code, signal, exit_rank(code, signal)),
        None => worst.unwrap_or((0, 0, 0)),
    };
    let end = v1::CompleteStepRequest {
        job_id,
        step_id,
        exit_code,
        exit_signal,
        usage: usage.as_ref().map(proto::convert::usage_to_wire),
    };
    // Told twice, the controller keeps the first report.
    let _ = calls::again_if_lost(&mut ctld, |mut c| {
        let end = end.clone();
        async move { c.complete_step(end).await }
    })
    .await;
    ExitCode::from(rank)
}

/// What `srun -v` says of the job and the step's launch, as Slurm's srun does
/// (`jobid 7: nodes(1):`node1', cpu counts: 8(x1)`, then `launching StepId=7.0 on host
/// node1, 2 tasks: [0-1]` for each node).
fn verbose_launch(job: &v1::JobInfo, step_id: u32, nodes: &[v1::StepNode]) -> String {
    let num_nodes = job.num_nodes.max(1);
    let mut out = format!(
        "{PROG}: jobid {}: nodes({num_nodes}):`{}', cpu counts: {}(x{num_nodes})\n",
        job.job_id,
        job.nodes,
        job.num_cpus / num_nodes,
    );
    for node in nodes {
        let ids: Vec<String> = node.task_ids.iter().map(u32::to_string).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        out.push_str(&format!(
            "{PROG}: launching StepId={}.{step_id} on host {}, {} tasks: {}\n",
            job.job_id,
            node.name,
            node.task_ids.len(),
            model::hostlist::fold(&ids),
        ));
    }
    out
}

/// `--debugger-test`: the step's tasks as a parallel debugger's table lists them (Slurm's
/// MPIR table), each task's host and program; no task runs, so no pid is known (0).
fn task_table(req: &Request, nodes: &[v1::StepNode]) -> String {
    let mut out = String::new();
    for node in nodes {
        for &task in &node.task_ids {
            let program = match &req.multi_prog {
                Some((_, programs)) => programs.get(task as usize).cloned().unwrap_or_default(),
                None => req.command[0].clone(),
            };
            out.push_str(&format!(
                "{PROG}: task:{task}, host:{}, pid:0, executable:{program}\n",
                node.name
            ));
        }
    }
    out
}

/// How long srun waits for a step whose job was cancelled (Slurm's KillWait plus 2 s),
/// and the job's state, when its job ends within a moment of a task's being killed;
/// `None` while it runs.
async fn job_ended_wait(
    ctld: &mut crate::client::Ctld,
    job_id: u32,
) -> Option<(u64, model::JobState)> {
    let ask = calls::one_job(job_id);
    let mut ended = None;
    for _ in 0..JOB_END_POLLS {
        let jobs = calls::again_if_lost(ctld, |mut c| {
            let ask = ask.clone();
            async move { c.list_jobs(ask).await }
        })
        .await
        .ok()?
        .jobs;
        let job = jobs.first()?;
        let state = crate::jobs::job_state(job);
        if state != model::JobState::Running || job.cancelled_by.is_some() {
            ended = Some(state);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let state = ended?;
    let config = ctld
        .get_config(v1::GetConfigRequest {})
        .await
        .ok()?
        .into_inner();
    let kill_wait = config
        .entries
        .iter()
        .find(|e| e.key == "KillWait")
        .and_then(|e| e.value.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap_or(30);
    Some((kill_wait + 2, state))
}

/// How many times, 100 ms apart, srun looks whether a killed task's job has ended.
const JOB_END_POLLS: u32 = 30;

/// Task ids as Slurm writes a set of them: ranges, `0,2-9`.
fn task_list(ids: &[u32]) -> String {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            ids[i].to_string()
        } else {
            format!("{}-{}", ids[i], ids[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// `task 3` or `tasks 0,2-9`.
fn tasks_named(ids: &[u32]) -> String {
    let s = if ids.len() == 1 { "" } else { "s" };
    format!("task{s} {}", task_list(ids))
}

/// The step's tasks by state, as Slurm's srun prints them on ^C and at `-W`'s end
/// (`StepId=7.0 tasks 0,2-9: running`, then those that exited abnormally, then those
/// that exited).
fn step_status(
    job_id: u32,
    step_id: u32,
    all_tasks: &[u32],
    exits: &[(String, v1::TaskExit)],
) -> String {
    let ended: BTreeMap<u32, &v1::TaskExit> = exits.iter().map(|(_, e)| (e.task_id, e)).collect();
    let running: Vec<u32> = all_tasks
        .iter()
        .copied()
        .filter(|t| !ended.contains_key(t))
        .collect();
    let (normal, abnormal): (Vec<&v1::TaskExit>, Vec<&v1::TaskExit>) = ended
        .values()
        .partition(|e| e.exit_code == 0 && e.exit_signal == 0);
    let ids = |v: &[&v1::TaskExit]| v.iter().map(|e| e.task_id).collect::<Vec<_>>();
    let mut out = String::new();
    for (tasks, what) in [
        (running, "running"),
        (ids(&abnormal), "exited abnormally"),
        (ids(&normal), "exited"),
    ] {
        if !tasks.is_empty() {
            out.push_str(&format!(
                "{PROG}: StepId={job_id}.{step_id} {}: {what}\n",
                tasks_named(&tasks)
            ));
        }
    }
    out
}

/// Where `srun --bcast[=DEST]` puts the executable on `node`, as Slurm 22.05's: DEST
/// (in the working directory `work_dir` when relative); a DEST ending in `/`, or none,
/// is a directory (none: `work_dir`) for `slurm_bcast_JOB.STEP_NODE`.
///
/// ```text
/// --bcast=/tmp/prog  →  /tmp/prog
/// --bcast=/tmp/      →  /tmp/slurm_bcast_7.0_node1
/// --bcast            →  WORKDIR/slurm_bcast_7.0_node1
/// ```
fn bcast_path(dest: &str, work_dir: &str, job_id: u32, step_id: u32, node: &str) -> String {
    let dest = if dest.is_empty() || dest.ends_with('/') {
        let dir = if dest.is_empty() { work_dir } else { dest };
        format!(
            "{}/slurm_bcast_{job_id}.{step_id}_{node}",
            dir.trim_end_matches('/')
        )
    } else {
        dest.to_string()
    };
    if dest.starts_with('/') {
        dest
    } else {
        format!("{}/{dest}", work_dir.trim_end_matches('/'))
    }
}

/// The file `command` runs: itself when it names a path, else the first executable of
/// that name in `PATH` (of srun's environment `env`).
fn executable(command: &str, env: &[(String, String)]) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    if command.contains('/') {
        return command.into();
    }
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map_or("", |(_, v)| v.as_str());
    path.split(':')
        .map(|dir| std::path::Path::new(dir).join(command))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .unwrap_or_else(|| command.into())
}

/// A signal's name as strsignal gives it (`Killed`).
fn signal_text(sig: i32) -> String {
    // SAFETY: strsignal returns a pointer to a static or thread-local string.
    let p = unsafe { libc::strsignal(sig) };
    if p.is_null() {
        return format!("Signal {sig}");
    }
    // SAFETY: non-null, NUL-terminated by contract.
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned()
}

/// The lines srun prints of its tasks' ends, one per node and way of ending, as Slurm's
/// (`srun: error: node1: tasks 0,2-9: Killed`, `... task 1: Exited with exit code 3`).
/// Tasks that completed are told of only when `verbose`, and so are those killed once
/// the step was `cancelled`.
fn exit_report(exits: &[(String, v1::TaskExit)], cancelled: bool, verbose: bool) -> String {
    let mut groups: Vec<(&str, i32, i32, Vec<u32>)> = Vec::new();
    for (node, e) in exits {
        match groups
            .iter_mut()
            .find(|g| g.0 == node && g.1 == e.exit_code && g.2 == e.exit_signal)
        {
            Some(g) => g.3.push(e.task_id),
            None => groups.push((node, e.exit_code, e.exit_signal, vec![e.task_id])),
        }
    }
    let mut out = String::new();
    for (node, code, signal, tasks) in groups {
        let tasks = tasks_named(&tasks);
        if signal != 0 {
            let what = signal_text(signal);
            if !cancelled {
                out.push_str(&format!("{PROG}: error: {node}: {tasks}: {what}\n"));
            } else if verbose {
                out.push_str(&format!("{PROG}: {node}: {tasks}: {what}\n"));
            }
        } else if code != 0 {
            out.push_str(&format!(
                "{PROG}: error: {node}: {tasks}: Exited with exit code {code}\n"
            ));
        } else if verbose {
            out.push_str(&format!("{PROG}: {node}: {tasks}: Completed\n"));
        }
    }
    out
}

/// srun's exit status for a task's end: 128+signal when killed, else its exit code.
fn exit_rank(code: i32, signal: i32) -> u8 {
    if signal != 0 {
        (128 + signal).clamp(0, 255) as u8
    } else {
        code.clamp(0, 255) as u8
    }
}

/// The step's `-n`, `-N`, `--ntasks-per-node` and `-c`: from the command line, else from
/// the job's environment (`SLURM_NTASKS`, `SLURM_NNODES`, `SLURM_NTASKS_PER_NODE`,
/// `SLURM_CPUS_PER_TASK`), as srun reads them, so that a plain `srun cmd` in a job of
/// `-n 4` runs four tasks. A node count from the environment shrinks to the task count
/// given on the command line (`srun -n 1` in a three-node job runs on one node).
pub(crate) fn step_shape(
    o: &super::submit_opts::SubmitOpts,
    env: &[(String, String)],
) -> (u32, u32, u32, u32) {
    let var = |k: &str| {
        env.iter()
            .find(|(n, _)| n == k)
            .and_then(|(_, v)| v.parse::<u32>().ok())
    };
    // `--ntasks-per-node` without `-n` makes the count: per node times the nodes.
    let tasks = match (o.ntasks, o.ntasks_per_node) {
        (Some(n), _) => n,
        (None, Some(_)) => 0,
        (None, None) => var("SLURM_NTASKS").unwrap_or(0),
    };
    let nodes = match o.nodes {
        Some(n) => n,
        None => {
            // Fewer tasks than the allocation's nodes (`-n`, or SLURM_NTASKS from
            // an allocation whose nodes hold CPUs for its GPUs) run on as many nodes.
            let n = var("SLURM_NNODES").unwrap_or(0);
            if tasks > 0 { n.min(tasks) } else { n }
        }
    };
    let per_node = match o.ntasks_per_node {
        Some(n) => n,
        None if o.ntasks.is_none() && o.nodes.is_none() => {
            var("SLURM_NTASKS_PER_NODE").unwrap_or(0)
        }
        None => 0,
    };
    let cpus = o
        .cpus_per_task
        .or_else(|| var("SLURM_CPUS_PER_TASK"))
        .unwrap_or(0);
    (tasks, nodes, per_node, cpus)
}

/// Sends `input` to every node of the step.
async fn broadcast(links: &[NodeLink], input: task_input::Input) {
    for link in links {
        let _ = link
            .send(TaskInput {
                input: Some(input.clone()),
            })
            .await;
    }
}

/// Runs one node's stream: its output and exits become events.
async fn drive_node(
    node: v1::StepNode,
    input: mpsc::Receiver<TaskInput>,
    events: mpsc::Sender<Event>,
) {
    let fail = |message: String| Event::Failed(node.name.clone(), node.task_ids.clone(), message);
    let mut client = match calls::node_agent(&node.name, &node.agent_addr).await {
        Ok(c) => c,
        Err(e) => {
            let _ = events.send(fail(e)).await;
            return;
        }
    };
    let stream = tokio_stream::wrappers::ReceiverStream::new(input);
    let mut answers = match client.run_tasks(stream).await {
        Ok(r) => r.into_inner(),
        Err(s) => {
            let _ = events.send(fail(calls::status_text(&s))).await;
            return;
        }
    };
    let mut ended = 0;
    loop {
        match answers.message().await {
            Ok(Some(v1::TaskOutput { output: Some(out) })) => {
                let ev = match out {
                    task_output::Output::Data(d) => Event::Data(d),
                    task_output::Output::Exit(e) => {
                        ended += 1;
                        Event::Exit(node.name.clone(), e)
                    }
                    task_output::Output::LaunchError(message) => fail(message),
                    task_output::Output::Usage(u) => Event::Usage(Box::new(u)),
                };
                if events.send(ev).await.is_err() {
                    return;
                }
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => {
                if ended < node.task_ids.len() {
                    let left: Vec<u32> = node.task_ids[ended..].to_vec();
                    let _ = events
                        .send(Event::Failed(
                            node.name.clone(),
                            left,
                            "Lost connection to the node".into(),
                        ))
                        .await;
                }
                return;
            }
        }
    }
}

/// Where each task's output goes: `-o`/`-e` files (opened here, once per distinct
/// path) or srun's own streams.
fn sinks(
    req: &Request,
    job: &v1::JobInfo,
    step_id: u32,
    nodes: &[v1::StepNode],
    env: &[(String, String)],
) -> Result<Sinks, Exit> {
    let o = &req.opts;
    let spec = job.spec.clone().unwrap_or_default();
    let append = o.open_mode_append.unwrap_or_else(|| {
        match env
            .iter()
            .find(|(k, _)| k == "SLURM_OPEN_MODE")
            .map(|(_, v)| v.as_str())
        {
            Some(v) => v.starts_with(['a', 'A']),
            None => spec.open_mode_append,
        }
    });
    // Line by line unless -u, or --pty (a terminal's prompt ends no line).
    let mut s = Sinks::own_streams(o.label, !o.unbuffered && !o.pty);
    s.label_offset = req.task_offset;
    for (index, node) in nodes.iter().enumerate() {
        for &task in &node.task_ids {
            // A task's number: that task's stream is srun's, the others' go nowhere.
            let path = |p: &Option<String>| match selected_task(p) {
                Some(t) if t == task => None,
                Some(_) => Some("/dev/null".to_string()),
                None => p
                    .as_deref()
                    .map(|p| step_path(p, job, step_id, &node.name, index as u32, task)),
            };
            // With --pty only task 0's output is shown, as Slurm's.
            let quiet = (o.pty && task != 0).then(|| "/dev/null".to_string());
            let out = quiet.clone().or_else(|| path(&o.output));
            let err = quiet.or_else(|| path(&o.error)).or_else(|| out.clone());
            for (stderr, p) in [(false, out), (true, err)] {
                if let Some(p) = &p
                    && !s.files.contains_key(p)
                {
                    let f = std::fs::OpenOptions::new()
                        .create(true)
                        .write(true)
                        .append(append)
                        .truncate(!append)
                        .open(p)
                        .map_err(|e| {
                            Exit::error(PROG, format!("Could not open output file {p}: {e}"))
                        })?;
                    s.files.insert(p.clone(), f);
                }
                s.dest.insert((task, stderr), p);
            }
        }
    }
    Ok(s)
}

/// This process's soft resource limits, which its tasks or batch script start with
/// (Slurm's default PropagateResourceLimits=ALL).
pub fn soft_rlimits() -> Vec<(model::step::Rlimit, u64)> {
    model::step::Rlimit::ALL
        .into_iter()
        .filter_map(|r| {
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: getrlimit writes one rlimit, which `limit` is.
            let got = unsafe { libc::getrlimit(r.linux_resource() as _, &mut limit) };
            (got == 0).then_some((r, limit.rlim_cur))
        })
        .collect()
}

/// srun's soft resource limits, as the step's launch carries them.
fn own_rlimits() -> Vec<v1::TaskRlimit> {
    soft_rlimits()
        .into_iter()
        .map(|(r, soft)| v1::TaskRlimit {
            kind: proto::convert::rlimit_to_wire(r) as i32,
            soft,
        })
        .collect()
}

/// The task `-i`, `-o` or `-e` names by number, as Slurm's srun reads `--output=4`.
fn selected_task(p: &Option<String>) -> Option<u32> {
    p.as_deref()
        .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|p| p.parse().ok())
}

/// Reads srun's stdin (or `-i FILE`) on a thread of its own and sends it to every task;
/// an empty chunk says it ended.
fn forward_stdin(
    links: &[NodeLink],
    req: &Request,
    job: &v1::JobInfo,
    step_id: u32,
    nodes: &[v1::StepNode],
) {
    let senders: Vec<NodeLink> = links.to_vec();
    let file = req
        .opts
        .input
        .as_deref()
        .filter(|_| selected_task(&req.opts.input).is_none());
    let input = file.map(|p| {
        let node = nodes.first().map(|n| n.name.as_str()).unwrap_or("");
        step_path(p, job, step_id, node, 0, 0)
    });
    std::thread::spawn(move || {
        let terminal = input.is_none();
        let mut source: Box<dyn std::io::Read> = match input {
            Some(p) => match File::open(&p) {
                Ok(f) => Box::new(f),
                Err(_) => Box::new(std::io::empty()),
            },
            None => Box::new(std::io::stdin()),
        };
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            // In the background of its shell (`srun ... &`), srun reads its terminal
            // only once brought to the foreground, as Slurm's: a read there would stop
            // it (SIGTTIN) and its tasks' output with it.
            if terminal {
                while in_background() {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
            }
            let n = match source.read(&mut buf) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => 0,
            };
            for s in &senders {
                let _ = s.blocking_send(TaskInput {
                    input: Some(task_input::Input::Stdin(buf[..n].to_vec())),
                });
            }
            if n == 0 {
                return;
            }
        }
    });
}

/// Is srun's stdin a terminal whose foreground is another process group?
fn in_background() -> bool {
    let stdin = std::io::stdin();
    nix::unistd::isatty(&stdin).unwrap_or(false)
        && nix::unistd::tcgetpgrp(&stdin).is_ok_and(|fg| fg != nix::unistd::getpgrp())
}

/// srun's terminal (its stdin), put in raw mode for `--pty`; back as it was on drop.
struct RawTerminal(nix::sys::termios::Termios);

impl RawTerminal {
    /// Raw mode on srun's stdin, when that is a terminal.
    fn enter() -> Option<RawTerminal> {
        use nix::sys::termios::{SetArg, cfmakeraw, tcgetattr, tcsetattr};
        let stdin = std::io::stdin();
        let saved = tcgetattr(&stdin).ok()?;
        let mut raw = saved.clone();
        cfmakeraw(&mut raw);
        tcsetattr(&stdin, SetArg::TCSANOW, &raw).ok()?;
        Some(RawTerminal(saved))
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        use nix::sys::termios::{SetArg, tcsetattr};
        let _ = tcsetattr(std::io::stdin(), SetArg::TCSANOW, &self.0);
    }
}

/// The size of srun's terminal (its stdin), when it has one.
fn terminal_size() -> Option<v1::WindowSize> {
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one winsize, which `ws` is.
    let r = unsafe { libc::ioctl(libc::STDIN_FILENO, libc::TIOCGWINSZ, &mut ws) };
    (r == 0 && ws.ws_row > 0).then(|| v1::WindowSize {
        rows: u32::from(ws.ws_row),
        cols: u32::from(ws.ws_col),
    })
}

/// srun's terminal size changes (SIGWINCH), when `wanted`.
fn window_changes(wanted: bool) -> mpsc::UnboundedReceiver<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let (tx, rx) = mpsc::unbounded_channel();
    if wanted && let Ok(mut s) = signal(SignalKind::window_change()) {
        tokio::spawn(async move {
            while s.recv().await.is_some() {
                if tx.send(()).is_err() {
                    break;
                }
            }
        });
    }
    rx
}

/// The signals srun passes on to its tasks.
fn signal_stream() -> mpsc::UnboundedReceiver<i32> {
    use tokio::signal::unix::{SignalKind, signal};
    let (tx, rx) = mpsc::unbounded_channel();
    for (kind, num) in [
        (SignalKind::interrupt(), libc::SIGINT),
        (SignalKind::terminate(), libc::SIGTERM),
        (SignalKind::hangup(), libc::SIGHUP),
        (SignalKind::quit(), libc::SIGQUIT),
        (SignalKind::user_defined1(), libc::SIGUSR1),
        (SignalKind::user_defined2(), libc::SIGUSR2),
    ] {
        if let Ok(mut s) = signal(kind) {
            let tx = tx.clone();
            tokio::spawn(async move {
                while s.recv().await.is_some() {
                    if tx.send(num).is_err() {
                        break;
                    }
                }
            });
        }
    }
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two tasks' output into one file, in the chunks given.
    fn written(line_buffered: bool, label: bool, chunks: &[(u32, &str)]) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out").display().to_string();
        let mut sinks = Sinks::own_streams(label, line_buffered);
        sinks
            .files
            .insert(path.clone(), File::create(&path).unwrap());
        for task in [0, 1] {
            sinks.dest.insert((task, false), Some(path.clone()));
        }
        for (task, text) in chunks {
            sinks.write(*task, false, text.as_bytes());
        }
        for task in [0, 1] {
            sinks.flush(task);
        }
        std::fs::read_to_string(&path).unwrap()
    }

    #[test]
    fn bcast_puts_the_executable_where_slurm_does() {
        assert_eq!(bcast_path("/tmp/prog", "/w", 7, 0, "n1"), "/tmp/prog");
        assert_eq!(bcast_path("prog", "/w", 7, 0, "n1"), "/w/prog");
        assert_eq!(
            bcast_path("/tmp/", "/w", 7, 0, "n1"),
            "/tmp/slurm_bcast_7.0_n1"
        );
        assert_eq!(bcast_path("", "/w/", 7, 2, "n2"), "/w/slurm_bcast_7.2_n2");
        let env = vec![("PATH".to_string(), "/nonexistent:/bin:/usr/bin".to_string())];
        assert!(executable("sh", &env).is_absolute());
        assert_eq!(executable("./x", &env), std::path::PathBuf::from("./x"));
    }

    #[test]
    fn the_steps_shape_from_the_command_line_then_the_jobs_variables() {
        let env: Vec<(String, String)> = [("SLURM_NTASKS", "1"), ("SLURM_NNODES", "3")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let opts = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            super::super::srun::parse(&args, &[]).unwrap().opts
        };
        // One task of the job's: on one of its nodes (as in a job whose nodes hold
        // the CPUs of its GPUs).
        assert_eq!(step_shape(&opts(&["true"]), &env), (1, 1, 0, 0));
        assert_eq!(step_shape(&opts(&["-N3", "true"]), &env), (1, 3, 0, 0));
        assert_eq!(step_shape(&opts(&["-n2", "true"]), &env), (2, 2, 0, 0));
        // Per node times the nodes, not the job's task count.
        assert_eq!(
            step_shape(&opts(&["-N1", "--ntasks-per-node=2", "true"]), &env),
            (0, 1, 2, 0)
        );
    }

    fn exit(task_id: u32, exit_code: i32, exit_signal: i32) -> v1::TaskExit {
        v1::TaskExit {
            task_id,
            exit_code,
            exit_signal,
        }
    }

    #[test]
    fn task_ends_are_told_per_node_and_way_of_ending() {
        assert_eq!(task_list(&[9, 0, 2, 3, 4, 5, 6, 7, 8]), "0,2-9");
        assert_eq!(tasks_named(&[1]), "task 1");
        let n = |s: &str| s.to_string();
        let mut exits = vec![(n("node1"), exit(1, 0, 0))];
        for t in [0, 2, 3] {
            exits.push((n("node1"), exit(t, 0, libc::SIGKILL)));
        }
        exits.push((n("node2"), exit(4, 3, 0)));
        exits.push((n("node2"), exit(5, 4, 0)));
        assert_eq!(
            exit_report(&exits, false, false),
            "srun: error: node1: tasks 0,2-3: Killed\n\
             srun: error: node2: task 4: Exited with exit code 3\n\
             srun: error: node2: task 5: Exited with exit code 4\n"
        );
        // Killed by srun's own abort: said only with -v, as is a task's completion.
        assert_eq!(
            exit_report(&exits[..4], true, true),
            "srun: node1: task 1: Completed\nsrun: node1: tasks 0,2-3: Killed\n"
        );
        assert_eq!(exit_report(&exits[..4], true, false), "");
    }

    #[test]
    fn the_steps_status_names_running_and_ended_tasks() {
        let exits = vec![
            ("node1".to_string(), exit(1, 0, 0)),
            ("node1".to_string(), exit(3, 2, 0)),
        ];
        assert_eq!(
            step_status(7, 0, &[0, 1, 2, 3, 4], &exits),
            "srun: StepId=7.0 tasks 0,2,4: running\n\
             srun: StepId=7.0 task 3: exited abnormally\n\
             srun: StepId=7.0 task 1: exited\n"
        );
    }

    #[test]
    fn a_task_number_for_output_shows_that_tasks_alone() {
        assert_eq!(selected_task(&Some("4".into())), Some(4));
        assert_eq!(selected_task(&Some("out-%t".into())), None);
        let args: Vec<String> = ["-o", "1", "-n2", "env"]
            .iter()
            .map(|a| a.to_string())
            .collect();
        let req = super::super::srun::parse(&args, &[]).unwrap();
        let node = v1::StepNode {
            name: "n1".into(),
            task_ids: vec![0, 1],
            ..Default::default()
        };
        let s = sinks(&req, &v1::JobInfo::default(), 0, &[node], &[]).unwrap();
        let null = Some("/dev/null".to_string());
        assert_eq!(s.dest[&(0, false)], null);
        assert_eq!(s.dest[&(0, true)], null);
        assert_eq!(s.dest[&(1, false)], None);
        assert_eq!(s.dest[&(1, true)], None);
    }

    #[test]
    fn srun_passes_on_its_soft_limits_by_linuxs_numbers() {
        use model::step::Rlimit;
        let linux = [
            (Rlimit::Cpu, libc::RLIMIT_CPU),
            (Rlimit::Fsize, libc::RLIMIT_FSIZE),
            (Rlimit::Data, libc::RLIMIT_DATA),
            (Rlimit::Stack, libc::RLIMIT_STACK),
            (Rlimit::Core, libc::RLIMIT_CORE),
            (Rlimit::Rss, libc::RLIMIT_RSS),
            (Rlimit::Nproc, libc::RLIMIT_NPROC),
            (Rlimit::Nofile, libc::RLIMIT_NOFILE),
            (Rlimit::Memlock, libc::RLIMIT_MEMLOCK),
            (Rlimit::As, libc::RLIMIT_AS),
        ];
        for (r, number) in linux {
            assert_eq!(r.linux_resource(), number, "{r:?}");
            let wire = proto::convert::rlimit_to_wire(r) as i32;
            assert_eq!(proto::convert::rlimit_from_wire(wire), Some(r));
        }
        assert_eq!(proto::convert::rlimit_from_wire(0), None);
        assert_eq!(own_rlimits().len(), Rlimit::ALL.len());
    }

    #[test]
    fn verbose_names_the_job_and_each_nodes_launch() {
        let job = v1::JobInfo {
            job_id: 7,
            nodes: "node[1-2]".into(),
            num_nodes: 2,
            num_cpus: 16,
            ..Default::default()
        };
        let node = |name: &str, task_ids: Vec<u32>| v1::StepNode {
            name: name.into(),
            task_ids,
            ..Default::default()
        };
        assert_eq!(
            verbose_launch(
                &job,
                0,
                &[node("node1", vec![0, 1, 2]), node("node2", vec![3])]
            ),
            "srun: jobid 7: nodes(2):`node[1-2]', cpu counts: 8(x2)\n\
             srun: launching StepId=7.0 on host node1, 3 tasks: [0-2]\n\
             srun: launching StepId=7.0 on host node2, 1 tasks: 3\n"
        );
    }

    #[test]
    fn tasks_lines_never_mix_unless_unbuffered() {
        let chunks = [(0, "rank=0"), (1, "rank=1\n"), (0, "\nlast"), (1, "x")];
        assert_eq!(written(true, false, &chunks), "rank=1\nrank=0\nlastx");
        assert_eq!(
            written(true, true, &chunks),
            "1: rank=1\n0: rank=0\n0: last1: x"
        );
        // -u: as the bytes come.
        assert_eq!(written(false, false, &chunks), "rank=0rank=1\n\nlastx");
    }
}
