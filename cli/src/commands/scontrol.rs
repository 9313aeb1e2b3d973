//! `scontrol`: looks at and changes jobs, nodes and the configuration.
//!
//! `show job|step|node|partition|config|slurmd|hostnames|hostlist|hostlistsorted`, `hold`,
//! `uhold`, `release`, `requeue`, `requeuehold`, `suspend`, `resume`, `update JobId=…`/
//! `update NodeName=…`, `completing`, `reconfigure`, `write batch_script|config`,
//! `listpids`, `pidinfo`, `ping`, `version`. Keywords are
//! case-insensitive and may be shortened as in Slurm (`scontrol sh jo 12`). The record
//! layouts and error lines follow Slurm 22.05; `-o/--oneliner` prints one record a line,
//! `-v` opens each `show` with `last_update_time=…`. Without a command, commands are read
//! from stdin after Slurm's `scontrol: ` prompt, `!!` repeating the last.

use crate::args;
use crate::calls;
use crate::client;
use crate::exit::Exit;
use crate::jobs::{self, or_null};
use crate::nodes;
use crate::opts::{self, OptSpec, flag, value};
use crate::times::{self, elapsed_limit, format_time};
use crate::users;
use crate::words;
use crate::words::abbreviates as kw;
use model::job_update::{JobChange, UpdateError};
use model::units;
use proto::v1;
use std::io::BufRead;
use std::process::ExitCode;

const PROG: &str = "scontrol";

const SPECS: &[OptSpec] = &[
    flag("all", Some('a')),
    value("cluster", None),
    value("clusters", Some('M')),
    flag("details", Some('d')),
    flag("federation", None),
    flag("future", Some('F')),
    flag("help", Some('h')),
    flag("hide", None),
    flag("local", None),
    flag("oneliner", Some('o')),
    flag("quiet", Some('Q')),
    flag("sibling", None),
    value("uid", Some('u')),
    flag("usage", None),
    flag("verbose", Some('v')),
    flag("version", Some('V')),
];

/// Output settings and the exit status so far.
struct Session {
    one_liner: bool,
    /// `-d`/`details`: per-node CPU ids, memory and GPUs of running jobs.
    details: bool,
    quiet: bool,
    /// `-v`/`verbose`: each `show` of jobs, nodes, partitions or reservations opens with
    /// `last_update_time=…, records=N`, as Slurm's does.
    verbose: bool,
    failed: bool,
    out: Vec<String>,
    err: Vec<String>,
}

impl Session {
    fn fail(&mut self, line: impl Into<String>) {
        self.failed = true;
        if !self.quiet {
            self.err.push(line.into());
        }
    }
    /// `show` found nothing: `Node x not found` (or `No nodes in the system`), on stdout
    /// as in Slurm, and a failure.
    fn none_found(&mut self, what: &str, name: Option<String>) {
        self.failed = true;
        self.out.push(match name {
            Some(n) => format!("{what} {n} not found\n"),
            None => format!("No {}s in the system\n", what.to_ascii_lowercase()),
        });
    }
    /// Under `-v`, the line Slurm's `show` opens with: when the records were read and
    /// how many came.
    fn records_read(&mut self, records: usize) {
        if self.verbose {
            self.out.push(format!(
                "last_update_time={}, records={records}\n",
                format_time(times::now())
            ));
        }
    }
    fn flush(&mut self) {
        use std::io::Write;
        let mut so = std::io::stdout().lock();
        for l in self.out.drain(..) {
            let _ = so.write_all(l.as_bytes());
        }
        let _ = so.flush();
        for l in self.err.drain(..) {
            eprintln!("{l}");
        }
    }
}

/// Joins a record's lines as Slurm does: one per line indented by three spaces, or all on
/// one line; a blank line ends a multi-line record. (A job record's last line is empty,
/// which gives Slurm's `   ` line and, on one line, its trailing blank.)
pub fn render(lines: &[String], one_liner: bool) -> String {
    if one_liner {
        format!("{}\n", lines.join(" "))
    } else {
        format!("{}\n\n", lines.join("\n   "))
    }
}

fn user_name(uid: u32) -> String {
    users::lookup_user(uid).unwrap_or_else(|| uid.to_string())
}

fn group_name(gid: u32) -> String {
    users::lookup_group(gid).unwrap_or_else(|| gid.to_string())
}

/// `scontrol -d show job`: after the `ExitCode=` line, the worst exit of the job's steps
/// (`DerivedExitCode=`); after the `Socks/Node` line, the job's GPUs and one `Nodes=`
/// line per node (indented two more, as Slurm's).
fn add_node_detail(lines: &mut Vec<String>, j: &v1::JobInfo) {
    if let Some(at) = lines.iter().position(|l| l.contains(" ExitCode=")) {
        lines.insert(
            at + 1,
            format!("DerivedExitCode={}", crate::fields::derived_exit_code(j)),
        );
    }
    if j.node_detail.is_empty() {
        return;
    }
    let gpus: usize = j
        .node_detail
        .lines()
        .filter_map(|l| l.split(" GRES=gpu:").nth(1))
        .filter_map(|g| g.split('(').next()?.parse::<usize>().ok())
        .sum();
    let at = lines
        .iter()
        .position(|l| l.starts_with("Socks/Node="))
        .map_or(lines.len(), |i| i + 1);
    let mut detail = vec![if gpus > 0 {
        format!("JOB_GRES=gpu:{gpus}")
    } else {
        "JOB_GRES=(null)".to_string()
    }];
    detail.extend(j.node_detail.lines().map(|l| format!("  {l}")));
    lines.splice(at..at, detail);
}

/// The lines of `scontrol show job` for one record.
pub fn job_lines(j: &v1::JobInfo, names: &dyn Fn(u32, u32) -> (String, String)) -> Vec<String> {
    let spec = j.spec.clone().unwrap_or_default();
    let details = spec.details.clone().unwrap_or_default();
    let state = jobs::job_state(j);
    let mut first = format!("JobId={}", j.job_id);
    if j.array_job_id != 0 {
        match j.array_task_id {
            Some(t) => first.push_str(&format!(" ArrayJobId={} ArrayTaskId={t}", j.array_job_id)),
            None => {
                let tasks = j.array_task_str.trim_matches(['[', ']']);
                first.push_str(&format!(
                    " ArrayJobId={} ArrayTaskId={tasks}",
                    j.array_job_id
                ));
                if let Some(a) = spec.array.as_ref().filter(|a| a.max_running > 0) {
                    first.push_str(&format!(" ArrayTaskThrottle={}", a.max_running));
                }
            }
        }
    }
    let het = j.het.map(proto::convert::het_from_wire);
    if let Some(h) = het {
        first.push_str(&format!(" HetJobId={} HetJobOffset={}", h.leader, h.offset));
    }
    first.push_str(&format!(" JobName={}", spec.name));
    let (uname, gname) = names(spec.uid, spec.gid);
    // Started, planned, or (a pending job waiting for its `--begin`) no sooner than
    // that, as Slurm shows it.
    let start_time = match (j.start_time, j.planned_start) {
        (started, _) if started > 0 => started,
        (_, planned) if planned > 0 => planned,
        _ if state == model::JobState::Pending => spec.begin_time,
        _ => 0,
    };
    let reason = jobs::reason(j);
    // scontrol's order (cpu, mem, node, billing, gres), sacct's is by name.
    let tres = model::tres::format_counts(&jobs::job_tres(
        j.num_cpus,
        j.mem_mb,
        j.num_nodes.max(1),
        j.num_gpus,
    ));
    let mem_line = if spec.mem_per_cpu_mb > 0 {
        format!("MinMemoryCPU={}M", spec.mem_per_cpu_mb)
    } else {
        format!("MinMemoryNode={}M", spec.mem_per_node_mb)
    };
    let stdin = jobs::stdin_path(&spec);
    let fmt = format_time;
    let mut lines = vec![
        first,
        format!(
            "UserId={uname}({}) GroupId={gname}({}) MCS_label=N/A",
            spec.uid, spec.gid
        ),
        format!(
            "Priority={} Nice={} Account={} QOS={}",
            j.priority,
            spec.nice,
            or_null(&spec.account),
            jobs::qos(&spec)
        ),
        format!(
            "JobState={} Reason={reason} Dependency={}",
            state.name(),
            or_null(&spec.dependency)
        ),
        format!(
            "Requeue={} Restarts={} BatchFlag={} Reboot=0 ExitCode={}:{}",
            u8::from(spec.requeue),
            j.restart_count,
            u8::from(!spec.interactive),
            j.exit_code,
            j.exit_signal
        ),
        format!(
            "RunTime={} TimeLimit={} TimeMin={}",
            units::format_elapsed(j.run_secs.max(0) as u64),
            elapsed_limit(spec.time_limit_min),
            match details.time_min {
                0 => "N/A".to_string(),
                m => elapsed_limit(m),
            }
        ),
        format!(
            "SubmitTime={} EligibleTime={}",
            fmt(j.submit_time),
            fmt(j.eligible_time)
        ),
        format!("AccrueTime={}", fmt(j.eligible_time)),
        format!(
            "StartTime={} EndTime={} Deadline={}",
            fmt(start_time),
            fmt(j.expected_end),
            match details.deadline {
                0 => "N/A".to_string(),
                t => fmt(t),
            }
        ),
        format!(
            "SuspendTime={} SecsPreSuspend=0 LastSchedEval={} Scheduler=Main",
            if j.suspend_time > 0 {
                fmt(j.suspend_time)
            } else {
                "None".into()
            },
            fmt(j.submit_time)
        ),
        format!(
            "Partition={} AllocNode:Sid={}:0",
            spec.partition, spec.submit_host
        ),
        format!(
            "ReqNodeList={} ExcNodeList={}",
            or_null(&spec.nodelist),
            or_null(&spec.exclude)
        ),
        if j.planned_nodes.is_empty() {
            format!("NodeList={}", j.nodes)
        } else {
            format!("NodeList={} SchedNodeList={}", j.nodes, j.planned_nodes)
        },
    ];
    // Slurm's HetJobIdSet line, after the first.
    if let Some(h) = het {
        lines.insert(1, format!("HetJobIdSet={}", h.id_set()));
    }
    if !j.batch_host.is_empty() {
        lines.push(format!("BatchHost={}", j.batch_host));
    }
    // A pending `-N min-max` job shows its range, as Slurm's.
    let num_nodes = if spec.max_nodes > 0 && j.nodes.is_empty() {
        format!("{}-{}", spec.num_nodes, spec.max_nodes)
    } else {
        j.num_nodes.max(1).to_string()
    };
    lines.extend([
        format!(
            "NumNodes={num_nodes} NumCPUs={} NumTasks={} CPUs/Task={} ReqB:S:C:T=0:0:*:*",
            j.num_cpus,
            spec.num_tasks.max(1),
            spec.cpus_per_task.max(1)
        ),
        format!("TRES={tres}"),
    ]);
    // Drover's: a job on other accounts' idle guaranteed quota, and what it borrows.
    if !j.borrowed.is_empty() {
        lines.push(format!("Borrowed={}", j.borrowed));
    }
    // Drover's: when its QOS's GPU idle policy flagged it (its GPUs all idle).
    if j.gpu_idle_flagged > 0 {
        lines.push(format!("GpuIdleFlagged={}", fmt(j.gpu_idle_flagged)));
    }
    lines.extend([
        format!(
            "Socks/Node=* NtasksPerN:B:S:C={}:0:*:* CoreSpec=*",
            spec.ntasks_per_node
        ),
        format!(
            "MinCPUsNode={} {mem_line} MinTmpDiskNode={}",
            spec.cpus_per_task.max(details.min_cpus_node).max(1),
            match details.tmp_disk_mb {
                0 => "0".to_string(),
                mb => units::format_memory_mb(mb),
            }
        ),
        format!("Features={} DelayBoot=00:00:00", or_null(&spec.constraint)),
    ]);
    if !spec.reservation.is_empty() {
        lines.push(format!("Reservation={}", spec.reservation));
    }
    lines.extend([
        format!(
            "OverSubscribe={} Contiguous={} Licenses=(null) Network=(null)",
            match (spec.exclusive, details.oversubscribe) {
                (true, _) => "NO",
                (false, true) => "YES",
                (false, false) => "OK",
            },
            u8::from(details.contiguous)
        ),
        format!("Command={}", or_null(&spec.command)),
        format!("WorkDir={}", spec.work_dir),
    ]);
    if !spec.comment.is_empty() {
        lines.push(format!("Comment={} ", spec.comment));
    }
    lines.extend([
        format!("StdErr={}", j.stderr_path),
        format!("StdIn={stdin}"),
        format!("StdOut={}", j.stdout_path),
        "Power=".into(),
    ]);
    lines.extend(gpu_request_lines(&spec, &details));
    lines.push(String::new());
    lines
}

/// The GPU request as Slurm 22.05 shows it, each line when asked for: `CpusPerTres`,
/// `MemPerTres`, `TresBind`, `TresFreq`, `TresPerJob`, `TresPerNode`,
/// `TresPerSocket`, `TresPerTask`.
fn gpu_request_lines(spec: &v1::JobSpec, d: &v1::RequestDetails) -> Vec<String> {
    // A job recorded before the options were kept shows its whole count per job.
    let per_job = if d.gpus_per_job > 0 {
        d.gpus_per_job
    } else if spec.gpus_per_node == 0 && d.gpus_per_task == 0 {
        spec.gpus
    } else {
        0
    };
    let ty = gres_type(&spec.gpu_type);
    asked_lines(&GpuAsked {
        gpu_type: &spec.gpu_type,
        cpus_per_gpu: d.cpus_per_gpu,
        mem_per_gpu_mb: d.mem_per_gpu_mb,
        gpu_bind: &d.gpu_bind,
        gpu_freq: &d.gpu_freq,
        whole: (per_job > 0).then(|| format!("TresPerJob=gres:gpu:{ty}{per_job}")),
        gpus_per_node: spec.gpus_per_node,
        gpus_per_socket: d.gpus_per_socket,
        gpus_per_task: d.gpus_per_task,
    })
}

/// A step's GPU request, as its `scontrol show step` lines: those of a job's, with
/// `TresPerStep=cpu:N,gres:gpu:M` for the whole step.
fn step_gpu_request_lines(step: &v1::StepInfo) -> Vec<String> {
    let r = step.gpu_request.clone().unwrap_or_default();
    let ty = gres_type(&r.gpu_type);
    asked_lines(&GpuAsked {
        gpu_type: &r.gpu_type,
        cpus_per_gpu: r.cpus_per_gpu,
        mem_per_gpu_mb: r.mem_per_gpu_mb,
        gpu_bind: &r.gpu_bind,
        gpu_freq: &r.gpu_freq,
        whole: (r.gpus > 0)
            .then(|| format!("TresPerStep=cpu:{},gres:gpu:{ty}{}", step.num_cpus, r.gpus)),
        gpus_per_node: r.gpus_per_node,
        gpus_per_socket: r.gpus_per_socket,
        gpus_per_task: r.gpus_per_task,
    })
}

/// After a job's node count changed from inside it: `slurm_job_ID_resize.sh` and
/// `.csh` in the working directory, which set the variables of the job's environment
/// that the change made wrong (those the environment has) and unset the task counts,
/// and Slurm's words saying how to use them.
async fn write_resize_scripts(s: &mut Session, c: &client::Ctld, id: &str) {
    let req = v1::ListJobsRequest {
        filter: Some(v1::JobFilter {
            job_ids: vec![id.to_string()],
            ..Default::default()
        }),
        ..Default::default()
    };
    let Some(job) = c
        .clone()
        .list_jobs(req)
        .await
        .ok()
        .and_then(|r| r.into_inner().jobs.into_iter().next())
    else {
        s.fail(format!(
            "{PROG}: error: slurm_allocation_lookup: Invalid job id specified"
        ));
        return;
    };
    let (cpus, _) = super::salloc::per_node_counts(&job);
    let (sh, csh) = resize_scripts(
        &job.nodes,
        job.num_nodes,
        &model::step::compressed_counts(&cpus),
        &|name| std::env::var_os(name).is_some(),
    );
    let (fname_sh, fname_csh) = (
        format!("slurm_job_{}_resize.sh", job.job_id),
        format!("slurm_job_{}_resize.csh", job.job_id),
    );
    for (name, text) in [(&fname_csh, csh), (&fname_sh, sh)] {
        use std::os::unix::fs::PermissionsExt;
        let written = std::fs::write(name, text)
            .and_then(|()| std::fs::set_permissions(name, std::fs::Permissions::from_mode(0o700)));
        if let Err(e) = written {
            s.fail(format!("Could not create file {name}: {e}"));
            return;
        }
    }
    s.out.push(format!(
        "To reset Slurm environment variables, execute\n  For bash or sh shells:  . ./{fname_sh}\n  For csh shells:         source ./{fname_csh}\n"
    ));
}

/// The sh and csh scripts of a resized job: each variable `set` says the environment
/// has, with the allocation's new value.
fn resize_scripts(
    nodes: &str,
    num_nodes: u32,
    cpus_per_node: &str,
    set: &dyn Fn(&str) -> bool,
) -> (String, String) {
    let (mut sh, mut csh) = (String::new(), String::new());
    let quoted = format!("\"{nodes}\"");
    let cpus = format!("\"{cpus_per_node}\"");
    let count = num_nodes.to_string();
    for (name, value) in [
        ("SLURM_NODELIST", &quoted),
        ("SLURM_JOB_NODELIST", &quoted),
        ("SLURM_NNODES", &count),
        ("SLURM_JOB_NUM_NODES", &count),
        ("SLURM_JOB_CPUS_PER_NODE", &cpus),
    ] {
        if set(name) {
            sh.push_str(&format!("export {name}={value}\n"));
            csh.push_str(&format!("setenv {name} {value}\n"));
        }
    }
    // Slurm's: "We don't have sufficient information to recreate these".
    if set("SLURM_TASKS_PER_NODE") {
        for name in ["SLURM_NPROCS", "SLURM_NTASKS", "SLURM_TASKS_PER_NODE"] {
            sh.push_str(&format!("unset {name}\n"));
            csh.push_str(&format!("unsetenv {name}\n"));
        }
    }
    (sh, csh)
}

/// `TYPE:` of a GPU type in a TRES word; nothing for none.
fn gres_type(gpu_type: &str) -> String {
    if gpu_type.is_empty() {
        String::new()
    } else {
        format!("{gpu_type}:")
    }
}

/// What a job or a step asked of GPUs, as `scontrol show` prints it.
struct GpuAsked<'a> {
    gpu_type: &'a str,
    cpus_per_gpu: u32,
    mem_per_gpu_mb: u64,
    gpu_bind: &'a str,
    gpu_freq: &'a str,
    /// The whole request's line (`TresPerJob=...`, `TresPerStep=...`), if asked.
    whole: Option<String>,
    gpus_per_node: u32,
    gpus_per_socket: u32,
    gpus_per_task: u32,
}

/// Each asked field on a line of its own, in Slurm's order.
fn asked_lines(a: &GpuAsked) -> Vec<String> {
    let ty = gres_type(a.gpu_type);
    let given = |name: &str, value: String, n: u64| (n > 0).then(|| format!("{name}={value}"));
    [
        given(
            "CpusPerTres",
            format!("gres:gpu:{}", a.cpus_per_gpu),
            a.cpus_per_gpu.into(),
        ),
        given(
            "MemPerTres",
            format!("gres:gpu:{}", a.mem_per_gpu_mb),
            a.mem_per_gpu_mb,
        ),
        (!a.gpu_bind.is_empty()).then(|| format!("TresBind=gpu:{}", a.gpu_bind)),
        (!a.gpu_freq.is_empty()).then(|| format!("TresFreq=gpu:{}", a.gpu_freq)),
        a.whole.clone(),
        given(
            "TresPerNode",
            format!("gres:gpu:{ty}{}", a.gpus_per_node),
            a.gpus_per_node.into(),
        ),
        given(
            "TresPerSocket",
            format!("gres:gpu:{ty}{}", a.gpus_per_socket),
            a.gpus_per_socket.into(),
        ),
        given(
            "TresPerTask",
            format!("gres:gpu:{ty}{}", a.gpus_per_task),
            a.gpus_per_task.into(),
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The lines of `scontrol show node` for one node.
pub fn node_lines(n: &v1::NodeInfo) -> Vec<String> {
    let features = if n.features.is_empty() {
        "(null)".to_string()
    } else {
        n.features.join(",")
    };
    let gres = nodes::gres(n);
    let mut cfg = format!("cpu={},mem={}M,billing={}", n.cpus, n.memory_mb, n.cpus);
    let mut alloc = String::new();
    if n.cpus_alloc > 0 || n.memory_alloc_mb > 0 {
        alloc = format!(
            "cpu={},mem={}",
            n.cpus_alloc,
            units::format_memory_mb(n.memory_alloc_mb)
        );
    }
    // GPUs and their shares apart, as Slurm's gres/gpu, gres/shard and gres/mps.
    for (name, kind) in [
        ("gres/gpu", None),
        ("gres/shard", Some(model::node::SHARD)),
        ("gres/mps", Some(model::node::MPS)),
    ] {
        let of_kind = || {
            n.gres.iter().filter(move |g| match kind {
                Some(k) => g.gpu_type == k,
                None => !model::node::is_share_type(&g.gpu_type),
            })
        };
        let (count, used): (u32, u32) = (
            of_kind().map(|g| g.count).sum(),
            of_kind().map(|g| g.alloc).sum(),
        );
        if count > 0 {
            cfg.push_str(&format!(",{name}={count}"));
            if used > 0 {
                alloc.push_str(&format!(",{name}={used}"));
            }
        }
    }
    let (sockets, cores, threads) = nodes::socket_core_thread(n);
    let mut lines = vec![
        format!("NodeName={} Arch=x86_64 CoresPerSocket={cores} ", n.name),
        format!(
            "CPUAlloc={} CPUEfctv={} CPUTot={} CPULoad={}",
            n.cpus_alloc,
            n.cpus,
            n.cpus,
            nodes::cpu_load(n)
        ),
        format!("AvailableFeatures={features}"),
        format!("ActiveFeatures={features}"),
        format!("Gres={gres}"),
        format!(
            "NodeAddr={} NodeHostName={} Version={}",
            nodes::node_addr(n),
            n.name,
            nodes::node_version(n)
        ),
        format!(
            "RealMemory={} AllocMem={} FreeMem={} Sockets={sockets} Boards=1",
            n.memory_mb,
            n.memory_alloc_mb,
            nodes::free_mem(n)
        ),
        format!(
            "State={} ThreadsPerCore={threads} TmpDisk={} Weight=1 Owner=N/A MCS_label=N/A",
            nodes::node_state(n).flags().join("+"),
            n.tmp_disk_mb
        ),
        format!("Partitions={} ", n.partitions.join(",")),
        format!(
            "BootTime={} SlurmdStartTime={}",
            format_time(n.boot_time),
            format_time(n.boot_time)
        ),
        format!("LastBusyTime={}", format_time(n.last_heartbeat)),
        format!("CfgTRES={cfg}"),
        format!("AllocTRES={alloc}"),
        "CapWatts=n/a".into(),
        "CurrentWatts=0 AveWatts=0".into(),
        "ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s".into(),
    ];
    if !n.reason.is_empty() {
        lines.push(format!(
            "Reason={} [{}@{}]",
            n.reason,
            user_name(n.reason_uid),
            format_time(n.reason_time)
        ));
    }
    lines
}

/// The lines of `scontrol show partition` for one partition; `mem_mb` is the memory of
/// its nodes.
pub fn partition_lines(p: &v1::PartitionInfo, mem_mb: u64) -> Vec<String> {
    let max_time = elapsed_limit(p.max_time_min);
    let def_time = if p.default_time_min == 0 {
        "NONE".into()
    } else {
        elapsed_limit(p.default_time_min)
    };
    let max_nodes = if p.max_nodes == 0 {
        "UNLIMITED".into()
    } else {
        p.max_nodes.to_string()
    };
    vec![
        format!("PartitionName={}", p.name),
        format!(
            "AllowGroups={} {} {}",
            if p.allow_groups.is_empty() {
                "ALL"
            } else {
                &p.allow_groups
            },
            if !p.allow_accounts.is_empty() {
                format!("AllowAccounts={}", p.allow_accounts)
            } else if !p.deny_accounts.is_empty() {
                format!("DenyAccounts={}", p.deny_accounts)
            } else {
                "AllowAccounts=ALL".into()
            },
            if !p.allow_qos.is_empty() {
                format!("AllowQos={}", p.allow_qos)
            } else if !p.deny_qos.is_empty() {
                format!("DenyQos={}", p.deny_qos)
            } else {
                "AllowQos=ALL".into()
            }
        ),
        format!(
            "AllocNodes=ALL Default={} QoS=N/A",
            if p.is_default { "YES" } else { "NO" }
        ),
        format!("DefaultTime={def_time} DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO"),
        format!(
            "MaxNodes={max_nodes} MaxTime={max_time} MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED"
        ),
        format!("Nodes={}", p.nodes),
        format!(
            "PriorityJobFactor={} PriorityTier={} RootOnly=NO ReqResv=NO OverSubscribe={}",
            p.priority_job_factor.max(1),
            p.priority_tier.max(1),
            if p.oversubscribe.is_empty() {
                "NO"
            } else {
                &p.oversubscribe
            }
        ),
        "OverTimeLimit=NONE PreemptMode=OFF".into(),
        format!(
            "State={} TotalCPUs={} TotalNodes={} SelectTypeParameters=NONE",
            if p.state.is_empty() { "UP" } else { &p.state },
            p.total_cpus,
            p.total_nodes
        ),
        "JobDefaults=(null)".into(),
        "DefMemPerNode=UNLIMITED MaxMemPerNode=UNLIMITED".into(),
        format!(
            "TRES=cpu={},mem={mem_mb}M,node={},billing={}",
            p.total_cpus, p.total_nodes, p.total_cpus
        ),
    ]
}

/// `scontrol show config`: a header, `Key = Value` with the key in 23 columns, a blank
/// line. The cluster name is added when the controller's list lacks it, and
/// `SLURM_CONF` before `SLURM_VERSION`, as Slurm lists them: the file named by the
/// client's `SLURM_CONF` (`slurm_conf_env`) when set, as Slurm's clients find their
/// config, else the controller's config file.
pub fn config_text(
    reply: &v1::GetConfigReply,
    now: i64,
    only: Option<&str>,
    slurm_conf_env: Option<&str>,
) -> String {
    let mut entries: Vec<(String, String)> = reply
        .entries
        .iter()
        .map(|e| (e.key.clone(), e.value.clone()))
        .collect();
    if !entries.iter().any(|(k, _)| k == "SLURM_CONF") {
        let file =
            slurm_conf_env
                .filter(|f| !f.is_empty())
                .unwrap_or(if reply.config_file.is_empty() {
                    "(null)"
                } else {
                    &reply.config_file
                });
        let at = entries
            .iter()
            .position(|(k, _)| k == "SLURM_VERSION")
            .unwrap_or(entries.len());
        entries.insert(at, ("SLURM_CONF".into(), file.to_string()));
    }
    if !entries.iter().any(|(k, _)| k == "ClusterName") {
        let at = entries
            .iter()
            .position(|(k, _)| k.as_str() > "ClusterName")
            .unwrap_or(entries.len());
        entries.insert(at, ("ClusterName".into(), reply.cluster_name.clone()));
    }
    let mut out = format!("Configuration data as of {}\n", format_time(now));
    for (k, v) in entries {
        if only.is_some_and(|o| !k.eq_ignore_ascii_case(o)) {
            continue;
        }
        out.push_str(&format!("{k:<23} = {v}\n"));
    }
    out.push('\n');
    out
}

/// A job id argument of hold, release, requeue, suspend and update: `12`, `12_3`,
/// `JobId=12`, `12,13`.
fn job_id_args(arg: &str) -> Result<Vec<String>, String> {
    let a = ["jobid=", "job="]
        .iter()
        .find_map(|p| words::strip_prefix_ci(arg, p))
        .filter(|rest| !rest.is_empty())
        .unwrap_or(arg);
    jobs::job_ids(a)
        .map(|ids| ids.iter().map(ToString::to_string).collect())
        .map_err(|_| a.to_string())
}

/// Canonical `scontrol update` job keys and the shortest prefix Slurm takes for each.
const JOB_KEYS: &[(&str, usize)] = &[
    ("AdminComment", 3),
    ("ArrayTaskThrottle", 10),
    ("Comment", 3),
    ("TimeLimit", 5),
    ("TimeMin", 5),
    ("Priority", 2),
    ("SiteFactor", 4),
    ("Nice", 2),
    ("CPUsPerTask", 6),
    ("NumCPUs", 6),
    ("NumTasks", 8),
    ("Requeue", 4),
    ("NumNodes", 8),
    ("ReqNodes", 8),
    ("MinCPUsNode", 4),
    ("MinMemoryNode", 10),
    ("MinMemoryCPU", 10),
    ("Partition", 2),
    ("QOS", 2),
    ("ReservationName", 3),
    ("Name", 2),
    ("JobName", 4),
    ("WCKey", 1),
    ("StdOut", 6),
    ("ExcNodeList", 3),
    ("NodeList", 8),
    ("ReqNodeList", 8),
    ("Features", 1),
    ("Gres", 2),
    ("Account", 1),
    ("Dependency", 1),
    ("Licenses", 1),
    ("EligibleTime", 2),
    ("StartTime", 2),
    ("Deadline", 3),
];

/// A parsed `scontrol update JobId=…` request.
#[derive(Debug, Default, PartialEq)]
pub struct JobUpdate {
    pub ids: Vec<String>,
    pub name: Option<String>,
    /// `UserID=`: with `JobName=` and no job id, the jobs of that name are this user's
    /// (else the caller's).
    pub user_id: Option<u32>,
    /// In the order given; the controller applies them to each job as it stands.
    pub changes: Vec<JobChange>,
}

/// Slurm's answer to a key `scontrol update` cannot change.
fn unsupported(key: &str, value: &str) -> Exit {
    Exit::raw(
        [
            format!("Update of this parameter is not supported: {key}={value}"),
            "Request aborted".into(),
        ]
        .join("\n"),
    )
}

/// `Key=Value` words (or `Key Value`) → pairs.
fn pairs(args: &[String]) -> Result<Vec<(String, String)>, Exit> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if let Some((k, v)) = a.split_once('=') {
            out.push((k.to_string(), v.to_string()));
        } else if a.eq_ignore_ascii_case("nice") || (a.len() >= 2 && kw(a, "Nice", 2)) {
            out.push(("Nice".into(), String::new()));
        } else if i + 1 < args.len() {
            out.push((a.clone(), args[i + 1].clone()));
            i += 1;
        } else {
            return Err(Exit::raw(
                [format!("Invalid input: {a}"), "Request aborted".into()].join("\n"),
            ));
        }
        i += 1;
    }
    Ok(out)
}

/// Validates a job update and puts keys in their canonical spelling. `StartTime` (any
/// `--begin` form) is sent as Unix seconds; a `TimeLimit` of `+N`/`-N` is resolved against
/// the job's current limit before sending.
pub fn parse_job_update(args: &[String], now: i64) -> Result<JobUpdate, Exit> {
    let mut u = JobUpdate::default();
    for (k, v) in pairs(args)? {
        if kw(&k, "JobId", 3) {
            for id in v.split(' ') {
                let ids = job_id_args(id)
                    .map_err(|b| Exit::raw(format!("Invalid job id specified for job {b}")))?;
                u.ids.extend(ids);
            }
            continue;
        }
        if kw(&k, "UserID", 3) {
            let uid = v
                .parse::<u32>()
                .ok()
                .or_else(|| {
                    let user = nix::unistd::User::from_name(&v).ok().flatten()?;
                    Some(user.uid.as_raw())
                })
                .ok_or_else(|| Exit::error(PROG, format!("Invalid UserID: {v}")))?;
            u.user_id = Some(uid);
            continue;
        }
        let Some((key, _)) = JOB_KEYS.iter().find(|(name, min)| kw(&k, name, *min)) else {
            return Err(unsupported(&k, &v));
        };
        let key = match *key {
            "Name" => "JobName",
            "ReqNodes" => "NumNodes",
            "ReqNodeList" => "NodeList",
            "EligibleTime" => "StartTime",
            other => other,
        };
        if key == "JobName" {
            u.name = Some(v.clone());
        }
        let change = JobChange::parse(key, &v, now, times::zone()).map_err(|e| match e {
            UpdateError::Unsupported(_) => unsupported(&k, &v),
            e => Exit::error(PROG, e.to_string()),
        })?;
        u.changes.push(change);
    }
    if u.changes.is_empty() {
        return Err(Exit::raw("No changes specified"));
    }
    if u.ids.is_empty() && u.name.is_none() {
        return Err(Exit::error(PROG, "No job ID specified"));
    }
    Ok(u)
}

/// A parsed `scontrol update NodeName=…` request.
#[derive(Debug, Default, PartialEq)]
pub struct NodeUpdate {
    pub nodes: String,
    pub state: Option<v1::NodeStateChange>,
    pub reason: String,
    /// `AvailableFeatures=` (`Features=`) and `ActiveFeatures=`, which must agree:
    /// Drover's nodes have one list.
    pub features: Option<Vec<String>>,
}

pub fn parse_node_update(args: &[String]) -> Result<NodeUpdate, Exit> {
    let mut u = NodeUpdate::default();
    let mut active: Option<Vec<String>> = None;
    let list = |v: &str| -> Vec<String> {
        v.split(',')
            .filter(|f| !f.is_empty())
            .map(str::to_string)
            .collect()
    };
    for (k, v) in pairs(args)? {
        if kw(&k, "AvailableFeatures", 5) || kw(&k, "Features", 3) {
            u.features = Some(list(&v));
            continue;
        }
        if kw(&k, "ActiveFeatures", 3) {
            active = Some(list(&v));
            continue;
        }
        if kw(&k, "Gres", 4) {
            // A node's GPUs are the ones its daemon finds: not changed by hand.
            return Err(Exit::raw(
                "slurm_update error: Invalid generic resource (gres) specification",
            ));
        }
        if kw(&k, "NodeName", 3) {
            u.nodes = v;
        } else if kw(&k, "State", 3) {
            use v1::NodeStateChange as C;
            let up = v.to_ascii_uppercase();
            let known = [
                ("DOWN", C::Down),
                ("DRAIN", C::Drain),
                ("RESUME", C::Resume),
                ("UNDRAIN", C::Undrain),
                ("IDLE", C::Idle),
            ];
            match known
                .iter()
                .find(|(s, _)| up.len() >= 2 && s.starts_with(&up))
            {
                Some((_, change)) => u.state = Some(*change),
                None => {
                    return Err(Exit::raw(
                        [
                            format!("Invalid input: {k}={v}"),
                            "Request aborted".into(),
                            "Valid states are: DOWN DRAIN RESUME UNDRAIN IDLE".into(),
                        ]
                        .join("\n"),
                    ));
                }
            }
        } else if kw(&k, "Reason", 3) {
            u.reason = v;
        } else {
            return Err(unsupported(&k, &v));
        }
    }
    if matches!(
        u.state,
        Some(v1::NodeStateChange::Down | v1::NodeStateChange::Drain)
    ) && u.reason.trim().is_empty()
    {
        return Err(Exit::raw(
            "You must specify a reason when DOWNING or DRAINING a node. Request denied",
        ));
    }
    match (&u.features, active) {
        (Some(available), Some(active)) if *available != active => {
            return Err(Exit::raw(
                "slurm_update error: ActiveFeatures must be the same as AvailableFeatures \
                 (Drover's nodes have one feature list)",
            ));
        }
        (None, Some(active)) => u.features = Some(active),
        _ => {}
    }
    if u.state.is_none() && u.reason.is_empty() && u.features.is_none() {
        return Err(Exit::raw("No changes specified"));
    }
    Ok(u)
}

const HELP: &str = "scontrol [<OPTION>] [<COMMAND>]
    Valid <OPTION> values are:
     -a, --all      Equivalent to \"all\" command
     -d, --details  Equivalent to \"details\" command
     -h, --help     Equivalent to \"help\" command
     -o, --oneliner Equivalent to \"oneliner\" command
     -Q, --quiet    Equivalent to \"quiet\" command
     -v, --verbose  Equivalent to \"verbose\" command
     -V, --version  Equivalent to \"version\" command

    Valid <COMMAND> values are:
     completing               display jobs in completing state along with
                              their completing or down nodes
     exit                     terminate scontrol
     help                     print this description of use.
     hold <job_list>          prevent specified job from starting.
     listpids <job_id<.step>> List pids associated with the given jobid, or
                              all jobs if no id is given (This will only
                              display the processes on the node which the
                              scontrol is ran on, and only for those
                              processes spawned by Slurm and their
                              descendants)
     notify <job_id> msg      send message to specified job
     oneliner                 report output one record per line.
     pidinfo <pid>            return slurm job information for given pid.
     ping                     print status of slurmctld daemons.
     quiet                    print no messages other than error messages.
     quit                     terminate this command.
     reconfigure              re-read configuration files.
     release <job_list>       permit specified job to start (see hold).
     requeue <job_id>         re-queue a batch job.
     requeuehold <job_id>     re-queue and hold a batch job.
     resume <job_list>        resume previously suspended job (see suspend).
     show <ENTITY> [<ID>]     display state of identified entity, default is all records.
     suspend <job_list>       susend specified job (see resume).
     top <job_list>           Put specified job first in queue for user.
     uhold <job_list>         place user hold on specified job (see hold).
     update <SPECIFICATIONS>  update job or node configuration.
     verbose                  enable detailed logging.
     version                  display tool version number.
     write batch_script <job_id> <optional filename>
                              Write the batch script for a given job to a
                              local file. Default is slurm-<job_id>.sh if
                              the (optional) filename is not given.
     write config <optional filename>
                              Write the current configuration to a file
                              with the naming convention of
                              slurm.conf.<datetime> in the same directory
                              as the original slurm.conf.
                              If a filename is given that file location
                              with a .<datetime> suffix is created.
     !!                       Repeat the last command entered.

  <ENTITY> may be \"config\", \"hostnames\", \"hostlist\", \"hostlistsorted\", \"job\",
       \"node\", \"partition\", \"reservation\" or \"step\".
";

pub fn run(args: &[String]) -> ExitCode {
    let p = match opts::parse(SPECS, args, false) {
        Ok(p) => p,
        Err(e) => return Exit::usage(PROG, &e).finish(),
    };
    if let Some(info) = args::Info::asked(&p) {
        // `--usage` prints the help, as Slurm's scontrol does.
        return info.print(HELP, HELP);
    }
    let mut s = Session {
        one_liner: p.has("oneliner"),
        details: p.has("details"),
        quiet: p.has("quiet"),
        verbose: p.has("verbose"),
        failed: false,
        out: Vec::new(),
        err: Vec::new(),
    };
    // `listpids` and `pidinfo` ask a node's daemon, over a connection of tonic's.
    let rt = client::runtime_with_io();
    let mut conn: Option<client::Ctld> = None;
    if !p.positional.is_empty() {
        rt.block_on(command(&mut s, &mut conn, &p.positional));
        s.flush();
    } else {
        interactive(&mut s, &rt, &mut conn);
    }
    if s.failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Commands read from stdin after the `scontrol: ` prompt, as Slurm's scontrol does
/// without a command on its line: `!!` repeats the last line, `exit`/`quit` or the end
/// of input stop (the end of input after a newline).
fn interactive(s: &mut Session, rt: &tokio::runtime::Runtime, conn: &mut Option<client::Ctld>) {
    use std::io::Write;
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut last: Option<String> = None;
    loop {
        {
            let mut so = std::io::stdout().lock();
            let _ = so.write_all(b"scontrol: ");
            let _ = so.flush();
        }
        let mut line = String::new();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => {
                println!();
                break;
            }
            Ok(_) => {}
        }
        let line = line.trim_end_matches(['\n', '\r']).to_string();
        let line = if line == "!!" {
            last.clone().unwrap_or_default()
        } else {
            last = Some(line.clone());
            line
        };
        let words = words::split_words(&line, false);
        if words.is_empty() {
            continue;
        }
        if kw(&words[0], "exit", 2) || kw(&words[0], "quit", 4) {
            break;
        }
        rt.block_on(command(s, conn, &words));
        s.flush();
    }
}

async fn get_client<'a>(
    s: &mut Session,
    conn: &'a mut Option<client::Ctld>,
    what: &str,
) -> Option<&'a mut client::Ctld> {
    if conn.is_none() {
        match calls::connect().await {
            Ok(c) => *conn = Some(c),
            Err(e) => {
                s.fail(format!("{what}: {e}"));
                return None;
            }
        }
    }
    conn.as_mut()
}

async fn command(s: &mut Session, conn: &mut Option<client::Ctld>, words: &[String]) {
    let tag = words[0].as_str();
    let rest = &words[1..];
    if kw(tag, "show", 3) {
        show(s, conn, words).await;
    } else if kw(tag, "hold", 4)
        || kw(tag, "holdu", 5)
        || kw(tag, "uhold", 5)
        || kw(tag, "release", 3)
    {
        let op = if kw(tag, "release", 3) {
            v1::ControlOp::Release
        } else if tag.len() >= 5 && (kw(tag, "uhold", 5) || kw(tag, "holdu", 5)) {
            v1::ControlOp::Uhold
        } else {
            v1::ControlOp::Hold
        };
        control(s, conn, tag, op, rest, true, false).await;
    } else if kw(tag, "requeuehold", 11) || kw(tag, "requeue", 3) {
        match requeue_request(kw(tag, "requeuehold", 11), rest) {
            Ok((op, ids, only_incomplete)) => {
                control(s, conn, tag, op, &ids, false, only_incomplete).await
            }
            Err(e) => s.fail(e),
        }
    } else if kw(tag, "suspend", 2) {
        control(s, conn, tag, v1::ControlOp::Suspend, rest, false, false).await;
    } else if kw(tag, "notify", 3) {
        notify(s, conn, rest).await;
    } else if kw(tag, "top", 3) {
        // One list, in order, however it is split over the words.
        let list = [rest.join(",")];
        let list = if rest.is_empty() { &[][..] } else { &list[..] };
        control(s, conn, tag, v1::ControlOp::Top, list, false, false).await;
    } else if kw(tag, "resume", 3) {
        control(s, conn, tag, v1::ControlOp::Resume, rest, false, false).await;
    } else if kw(tag, "update", 1) {
        if rest.is_empty() {
            s.fail(format!("too few arguments for {tag} keyword"));
            return;
        }
        update(s, conn, rest).await;
    } else if kw(tag, "ping", 3) {
        ping(s, conn).await;
    } else if kw(tag, "reconfigure", 3) {
        let Some(c) = get_client(s, conn, "slurm_reconfigure error").await else {
            return;
        };
        if let Err(st) = c.reconfigure(v1::ReconfigureRequest {}).await {
            s.fail(format!(
                "slurm_reconfigure error: {}",
                calls::status_text(&st)
            ));
        }
    } else if kw(tag, "completing", 2) {
        completing(s, conn).await;
    } else if kw(tag, "listpids", 5) {
        list_pids(s, conn, rest).await;
    } else if kw(tag, "pidinfo", 3) {
        pid_info(s, conn, rest).await;
    } else if (kw(tag, "create", 2) || kw(tag, "delete", 3)) && names_partition(rest) {
        partition_change(s, conn, tag, rest).await;
    } else if kw(tag, "create", 2) || kw(tag, "delete", 3) {
        reservation_change(s, conn, tag, rest).await;
    } else if kw(tag, "write", 2) {
        if rest.first().is_some_and(|w| kw(w, "config", 1)) {
            write_config(s, conn, &rest[1..]).await;
        } else {
            write_batch_script(s, conn, rest).await;
        }
    } else if kw(tag, "version", 4) {
        s.out.push(args::version_line());
    } else if kw(tag, "help", 2) {
        s.out.push(HELP.into());
    } else if kw(tag, "oneliner", 1) {
        s.one_liner = true;
    } else if kw(tag, "quiet", 4) {
        s.quiet = true;
    } else if kw(tag, "details", 1) {
        s.details = true;
    } else if kw(tag, "verbose", 4) {
        s.verbose = true;
    } else if kw(tag, "all", 2) || kw(tag, "hide", 2) {
    } else {
        s.fail(format!("invalid keyword: {tag}"));
    }
}

/// `requeue` and `requeuehold`'s words: the operation, the job ids and whether only
/// incomplete jobs are requeued. Slurm's flags: `incomplete` (any prefix of it) and
/// `State=SpecialExit` (`requeuehold` only: the job is held in SPECIAL_EXIT).
fn requeue_request(
    hold: bool,
    args: &[String],
) -> Result<(v1::ControlOp, Vec<String>, bool), String> {
    let mut op = if hold {
        v1::ControlOp::RequeueHold
    } else {
        v1::ControlOp::Requeue
    };
    let incomplete = |a: &str| !a.is_empty() && "incomplete".starts_with(&a.to_ascii_lowercase());
    let mut ids = Vec::new();
    let mut only_incomplete = false;
    for arg in args {
        match arg.split_once('=') {
            Some((key, state)) if key.eq_ignore_ascii_case("state") => {
                if !state.eq_ignore_ascii_case("specialexit") {
                    return Err(format!("Invalid state specification {state}"));
                }
                if hold {
                    op = v1::ControlOp::RequeueSpecialExit;
                }
            }
            _ if incomplete(arg) => only_incomplete = true,
            _ => ids.push(arg.clone()),
        }
    }
    Ok((op, ids, only_incomplete))
}

/// `notify JOB MESSAGE...`: the words after the id are the message.
async fn notify(s: &mut Session, conn: &mut Option<client::Ctld>, args: &[String]) {
    if args.len() < 2 {
        s.fail("too few arguments for keyword:notify");
        return;
    }
    let Ok(job_id) = args[0].parse::<u32>() else {
        s.fail(format!("Invalid job_id {}", args[0]));
        return;
    };
    let Some(c) = get_client(s, conn, "slurm_notify_job error").await else {
        return;
    };
    let req = v1::NotifyJobRequest {
        job_id,
        message: args[1..].join(" "),
    };
    if let Err(st) = c.notify_job(req).await {
        s.fail(format!(
            "slurm_notify_job error: {}",
            calls::status_text(&st)
        ));
    }
}

async fn control(
    s: &mut Session,
    conn: &mut Option<client::Ctld>,
    tag: &str,
    op: v1::ControlOp,
    args: &[String],
    hold_style: bool,
    incomplete: bool,
) {
    if args.is_empty() {
        s.fail(format!("too few arguments for keyword:{tag}"));
        return;
    }
    for arg in args {
        let ids = match job_id_args(arg) {
            Ok(ids) => ids,
            Err(bad) => {
                s.fail(format!("Invalid job id specified for job {bad}"));
                if hold_style {
                    s.fail("slurm_suspend error: Invalid job id specified");
                }
                continue;
            }
        };
        let Some(c) = get_client(s, conn, "slurm_update error").await else {
            return;
        };
        let req = v1::ControlJobsRequest {
            op: op as i32,
            job_ids: ids.clone(),
            incomplete,
        };
        let results = match c.control_jobs(req).await {
            Ok(r) => r.into_inner().results,
            Err(st) => {
                let msg = calls::status_text(&st);
                for id in &ids {
                    s.fail(format!("{msg} for job {id}"));
                }
                continue;
            }
        };
        let mut last_err = None;
        for r in results.iter().filter(|r| !r.error.is_empty()) {
            s.fail(format!("{} for job {}", r.error, r.job_id));
            last_err = Some(r.error.clone());
        }
        if hold_style && let Some(e) = last_err {
            s.fail(format!("slurm_suspend error: {e}"));
        }
    }
}

async fn update(s: &mut Session, conn: &mut Option<client::Ctld>, args: &[String]) {
    let is = |name: &str, min: usize| {
        args.iter().any(|a| {
            let k = a.split_once('=').map_or(a.as_str(), |(k, _)| k);
            kw(k, name, min)
        })
    };
    if is("ReservationName", 3) {
        return reservation_change(s, conn, "update", args).await;
    }
    if args.first().is_some_and(|a| {
        kw(
            a.split_once('=').map_or(a.as_str(), |(k, _)| k),
            "PartitionName",
            3,
        )
    }) {
        return partition_change(s, conn, "update", args).await;
    }
    if is("StepId", 4) {
        return step_update(s, conn, args).await;
    }
    if is("JobId", 3) || is("JobName", 3) {
        let u = match parse_job_update(args, times::now()) {
            Ok(u) => u,
            Err(e) => {
                s.failed = true;
                s.err.extend(e.lines());
                return;
            }
        };
        let Some(c) = get_client(s, conn, "slurm_update error").await else {
            return;
        };
        let mut ids = u.ids.clone();
        if ids.is_empty() {
            let name = u.name.clone().unwrap_or_default();
            let user = match u.user_id {
                Some(uid) => crate::users::lookup_user(uid).unwrap_or_else(|| uid.to_string()),
                None => client::current_user().0,
            };
            let req = v1::ListJobsRequest {
                filter: Some(v1::JobFilter {
                    names: vec![name.clone()],
                    users: vec![user],
                    ..Default::default()
                }),
                ..Default::default()
            };
            match c.list_jobs(req).await {
                Ok(r) => {
                    ids = r.into_inner().jobs.iter().map(jobs::display_id).collect();
                }
                Err(st) => {
                    s.fail(format!(
                        "{PROG}: error: Could not load state information: {}",
                        calls::status_text(&st)
                    ));
                    return;
                }
            }
            if ids.is_empty() {
                s.fail(match u.user_id {
                    Some(uid) => {
                        format!("{PROG}: error: No jobs with user ID {uid} and name '{name}'")
                    }
                    None => format!("{PROG}: error: No jobs with name '{name}'"),
                });
                return;
            }
        }
        let req = v1::UpdateJobRequest {
            job_ids: ids.clone(),
            changes: u
                .changes
                .iter()
                .map(proto::convert::job_change_to_wire)
                .collect(),
            record: false,
        };
        match c.update_job(req).await {
            Ok(r) => {
                let results = r.into_inner().results;
                for r in results.iter().filter(|r| !r.error.is_empty()) {
                    s.fail(format!("{} for job {}", r.error, r.job_id));
                }
                // A node count changed from inside a job: scripts that set its
                // environment again, as Slurm's scontrol writes them.
                let resized = u
                    .changes
                    .iter()
                    .any(|c| matches!(c, JobChange::NumNodes(_)));
                if resized
                    && !s.failed
                    && let [id] = ids.as_slice()
                    && std::env::var_os("SLURM_JOBID").is_some()
                {
                    write_resize_scripts(s, c, id).await;
                }
            }
            Err(st) => {
                let msg = calls::status_text(&st);
                for id in &ids {
                    s.fail(format!("{msg} for job {id}"));
                }
            }
        }
    } else if is("NodeName", 3) {
        let u = match parse_node_update(args) {
            Ok(u) => u,
            Err(e) => {
                s.failed = true;
                s.err.extend(e.lines());
                return;
            }
        };
        if let Err(e) = model::hostlist::expand(&u.nodes) {
            s.fail(format!(
                "slurm_update error: Invalid node name specified ({e})"
            ));
            return;
        }
        let Some(c) = get_client(s, conn, "slurm_update error").await else {
            return;
        };
        let req = v1::UpdateNodesRequest {
            nodes: u.nodes,
            state: u.state.unwrap_or_default() as i32,
            reason: u.reason,
            features: u.features.map(|names| v1::NameList { names }),
        };
        if let Err(st) = c.update_nodes(req).await {
            s.fail(format!("slurm_update error: {}", calls::status_text(&st)));
        }
    } else {
        s.failed = true;
        s.err.extend([
            "No valid entity in update command".to_string(),
            "Input line must include \"NodeName\", \"PartitionName\", \"Reservation\", \"JobId\", or \"SlurmctldDebug\"".to_string(),
        ]);
    }
}

/// What `update StepId=JOB[.STEP] TimeLimit=...` asks: the job, the step (none: every
/// running step of the job) and the new limit; or the lines Slurm's scontrol prints
/// when it refuses the words.
fn parse_step_update(
    args: &[String],
) -> Result<(u32, Option<u32>, model::job_update::TimeLimitChange), Vec<String>> {
    let aborted = |line: String| vec![line, "Request aborted".to_string()];
    let (mut ids, mut limit) = (None, None);
    for a in args {
        let Some((k, v)) = a.split_once('=') else {
            return Err(aborted(format!("Invalid input: {a}")));
        };
        if kw(k, "StepId", 4) {
            let (job, step) = v.split_once('.').map_or((v, None), |(j, s)| (j, Some(s)));
            let job = job.parse::<u32>().ok().filter(|j| *j > 0);
            let step = step.map(|s| s.parse::<u32>().ok());
            match (job, step) {
                (Some(job), None) => ids = Some((job, None)),
                (Some(job), Some(Some(step))) => ids = Some((job, Some(step))),
                _ => return Err(aborted(format!("Invalid StepID parameter: {a}"))),
            }
        } else if kw(k, "TimeLimit", 2) {
            match model::job_update::JobChange::parse("TimeLimit", v, 0, times::zone()) {
                Ok(model::job_update::JobChange::TimeLimit(t)) => limit = Some(t),
                _ => return Err(vec![format!("{PROG}: error: Invalid TimeLimit value")]),
            }
        } else {
            return Err(aborted(format!(
                "Update of this parameter is not supported: {a}"
            )));
        }
    }
    match (ids, limit) {
        (Some((job, step)), Some(limit)) => Ok((job, step, limit)),
        (None, _) => Err(aborted("StepId must be specified".to_string())),
        (Some(_), None) => Err(aborted("No changes specified".to_string())),
    }
}

/// `update StepId=...`: a running step's own time limit, as Slurm's `scontrol update
/// step` sets it (a relative limit moves the step's current one, which is its job's
/// until it has one of its own).
async fn step_update(s: &mut Session, conn: &mut Option<client::Ctld>, args: &[String]) {
    let (job_id, step_id, limit) = match parse_step_update(args) {
        Ok(u) => u,
        Err(lines) => {
            s.failed = true;
            s.err.extend(lines);
            return;
        }
    };
    let Some(c) = get_client(s, conn, "slurm_update error").await else {
        return;
    };
    let req = v1::UpdateStepRequest {
        job_id,
        step_id,
        time_limit: Some(proto::convert::time_limit_change_to_wire(limit)),
    };
    if let Err(st) = c.update_step(req).await {
        s.fail(format!("slurm_update error: {}", calls::status_text(&st)));
    }
}

fn ctld_host() -> String {
    let config = client::load_config().ok();
    let addr = config
        .as_ref()
        .map(client::ctld_addr)
        .unwrap_or_else(|| "localhost".into());
    match addr.rsplit_once(':') {
        Some((h, _)) => h.trim_matches(['[', ']']).to_string(),
        None => addr,
    }
}

/// `write config [FILE]`: the configuration as `scontrol show config` gives it, in
/// slurm.conf's `Key=Value` lines, to FILE (by default the client's `SLURM_CONF`, else
/// `slurm.conf` beside the controller's file) with `.YYYYMMDDTHHMMSS` appended, as
/// Slurm's; it says where.
async fn write_config(s: &mut Session, conn: &mut Option<client::Ctld>, args: &[String]) {
    let Some(c) = get_client(s, conn, "slurm_load_ctl_conf error").await else {
        return;
    };
    let reply = match c.get_config(v1::GetConfigRequest {}).await {
        Ok(r) => r.into_inner(),
        Err(st) => {
            s.fail(format!(
                "slurm_load_ctl_conf error: {}",
                calls::status_text(&st)
            ));
            return;
        }
    };
    let base = args
        .first()
        .cloned()
        .or_else(|| args::env_var("SLURM_CONF").filter(|f| !f.is_empty()))
        .unwrap_or_else(|| {
            let dir = std::path::Path::new(&reply.config_file)
                .parent()
                .map(|d| d.display().to_string())
                .filter(|d| !d.is_empty())
                .unwrap_or_else(|| ".".into());
            format!("{dir}/slurm.conf")
        });
    let stamp: String = format_time(times::now())
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    let path = format!("{base}.{stamp}");
    match std::fs::write(&path, slurm_conf_lines(&reply)) {
        Ok(()) => s.out.push(format!("Slurm config saved to {path}\n")),
        Err(e) => s.fail(format!("Could not write {path}: {e}")),
    }
}

/// The configuration as slurm.conf lines: `KillWait=5` (a time's unit dropped), and
/// `#Key=` for what is not set; the client-side keys (`SLURM_CONF`, `SLURM_VERSION`)
/// left out.
fn slurm_conf_lines(reply: &v1::GetConfigReply) -> String {
    let mut out = format!("# slurm.conf of cluster {}\n", reply.cluster_name);
    for e in &reply.entries {
        if e.key.starts_with("SLURM_") {
            continue;
        }
        if e.value == "(null)" || e.value.is_empty() {
            out.push_str(&format!("#{}=\n", e.key));
            continue;
        }
        let value = e
            .value
            .strip_suffix(" sec")
            .or_else(|| e.value.strip_suffix(" min"))
            .filter(|v| v.chars().all(|c| c.is_ascii_digit()))
            .unwrap_or(&e.value);
        out.push_str(&format!("{}={value}\n", e.key));
    }
    out
}

/// `write batch_script JOBID [FILE]`: the script as submitted, to `slurm-JOBID.sh` by
/// default or to stdout with `-`.
async fn write_batch_script(s: &mut Session, conn: &mut Option<client::Ctld>, args: &[String]) {
    let (Some(what), Some(id)) = (args.first(), args.get(1)) else {
        s.fail("too few arguments for keyword:write");
        return;
    };
    if !kw(what, "batch_script", 5) {
        s.fail(format!("invalid write option: {what}"));
        return;
    }
    let Some(c) = get_client(s, conn, "slurm_job_batch_script error").await else {
        return;
    };
    let req = v1::ListJobsRequest {
        filter: Some(calls::job_filter(id)),
        include_finished: true,
        with_script: true,
        ..Default::default()
    };
    let script = match c.list_jobs(req).await {
        Ok(r) => r
            .into_inner()
            .jobs
            .into_iter()
            .find_map(|j| j.spec.map(|sp| sp.script)),
        Err(e) => {
            s.fail(format!(
                "slurm_job_batch_script error: {}",
                calls::status_text(&e)
            ));
            return;
        }
    };
    let Some(script) = script.filter(|t| !t.is_empty()) else {
        s.fail("slurm_job_batch_script error: Invalid job id specified");
        return;
    };
    match args.get(2).map(String::as_str) {
        Some("-") => s.out.push(script),
        target => {
            let path = target
                .map(str::to_string)
                .unwrap_or_else(|| format!("slurm-{id}.sh"));
            match std::fs::write(&path, script) {
                Ok(()) => s
                    .out
                    .push(format!("batch script for job {id} written to {path}\n")),
                Err(e) => s.fail(format!("failed to write {path}: {e}")),
            }
        }
    }
}

/// `completing`: each job still completing, since when, and on which nodes.
async fn completing(s: &mut Session, conn: &mut Option<client::Ctld>) {
    let Some(c) = get_client(s, conn, "slurm_load_jobs error").await else {
        return;
    };
    let jobs = match c.list_jobs(v1::ListJobsRequest::default()).await {
        Ok(r) => r.into_inner().jobs,
        Err(st) => {
            s.fail(format!(
                "slurm_load_jobs error: {}",
                calls::status_text(&st)
            ));
            return;
        }
    };
    let now = times::now();
    for j in jobs
        .iter()
        .filter(|j| jobs::job_state(j) == model::JobState::Completing)
    {
        let mut line = format!(
            "JobId={} EndTime={} CompletingTime={} ",
            j.job_id,
            format_time(j.expected_end),
            units::format_elapsed((now - j.expected_end).max(0) as u64)
        );
        if !j.nodes.is_empty() {
            line.push_str(&format!("Nodes(COMPLETING)={} ", j.nodes));
        }
        line.push('\n');
        s.out.push(line);
    }
}

async fn ping(s: &mut Session, conn: &mut Option<client::Ctld>) {
    let host = ctld_host();
    let up = match calls::connect().await {
        Ok(mut c) => {
            let ok = c.get_config(v1::GetConfigRequest {}).await.is_ok();
            *conn = Some(c);
            ok
        }
        Err(_) => false,
    };
    s.out.push(format!(
        "Slurmctld(primary) at {host} is {}\n",
        if up { "UP" } else { "DOWN" }
    ));
    if !up {
        s.failed = true;
    }
}

/// The node `scontrol` speaks for when none is named: `SLURMD_NODENAME` in a job, else
/// the host's name.
fn this_node() -> String {
    args::env_var("SLURMD_NODENAME").unwrap_or_else(super::submit_opts::hostname)
}

/// The processes of jobs on `node` (`job`, or every job running there), as its node
/// daemon finds them in their cgroups; `None` after saying why not.
async fn node_processes(
    s: &mut Session,
    conn: &mut Option<client::Ctld>,
    node: &str,
    job: Option<u32>,
) -> Option<Vec<(u32, v1::JobProcess)>> {
    let c = get_client(s, conn, "slurm_load_node").await?;
    let addr = match c
        .list_nodes(v1::ListNodesRequest {
            names: vec![node.to_string()],
        })
        .await
    {
        Ok(r) => match r.into_inner().nodes.into_iter().find(|n| n.name == node) {
            Some(n) => n.addr,
            None => {
                s.fail(format!("Invalid node name specified: {node}"));
                return None;
            }
        },
        Err(st) => {
            s.fail(format!("slurm_load_node: {}", calls::status_text(&st)));
            return None;
        }
    };
    let jobs = match job {
        Some(id) => vec![id],
        None => {
            let req = v1::ListJobsRequest {
                filter: Some(v1::JobFilter {
                    nodes: node.to_string(),
                    states: vec![v1::JobState::Running as i32],
                    ..Default::default()
                }),
                ..Default::default()
            };
            match c.list_jobs(req).await {
                Ok(r) => r.into_inner().jobs.iter().map(|j| j.job_id).collect(),
                Err(_) => Vec::new(),
            }
        }
    };
    let mut agent = match calls::node_agent(node, &addr).await {
        Ok(a) => a,
        Err(e) => {
            s.fail(format!("{PROG}: error: {e}"));
            return None;
        }
    };
    let mut out = Vec::new();
    for job_id in jobs {
        if let Ok(r) = agent.list_pids(v1::ListPidsRequest { job_id }).await {
            out.extend(r.into_inner().processes.into_iter().map(|p| (job_id, p)));
        }
    }
    Some(out)
}

/// `listpids [JOBID[.STEPID]] [NODE]`: the processes of the job (or of every job) on
/// the node, in Slurm's table.
async fn list_pids(s: &mut Session, conn: &mut Option<client::Ctld>, args: &[String]) {
    let (job, step) = match args.first() {
        None => (None, None),
        Some(id) => match id.split_once('.') {
            None => match id.parse::<u32>() {
                Ok(j) => (Some(j), None),
                Err(_) => {
                    s.fail(format!("\"{id}\" does not look like a jobid"));
                    return;
                }
            },
            Some((j, st)) => match (j.parse::<u32>(), st.parse::<u32>()) {
                (Ok(j), Ok(st)) => (Some(j), Some(st.to_string())),
                _ => {
                    s.fail(format!("\"{id}\" does not look like a stepid"));
                    return;
                }
            },
        },
    };
    let node = args.get(1).cloned().unwrap_or_else(this_node);
    let Some(found) = node_processes(s, conn, &node, job).await else {
        return;
    };
    let rows: Vec<&(u32, v1::JobProcess)> = found
        .iter()
        .filter(|(_, p)| step.as_ref().is_none_or(|st| p.step_id == *st))
        .collect();
    match (job, &step) {
        (Some(j), Some(st)) if rows.is_empty() => {
            s.fail(format!("StepId={j}.{st} does not exist on node {node}."));
            return;
        }
        (Some(j), None) if rows.is_empty() => {
            s.fail(format!("JobId={j} does not exist on node {node}."));
            return;
        }
        _ => {}
    }
    s.out.push(pid_table(&rows));
}

/// `listpids`' table: `PID      JOBID    STEPID   LOCALID GLOBALID`, a row a process,
/// `-` for a process outside the step's tasks.
fn pid_table(rows: &[&(u32, v1::JobProcess)]) -> String {
    let id = |v: Option<u32>| v.map_or("-".to_string(), |v| v.to_string());
    let mut out = format!(
        "{:<8} {:<8} {:<8} {:<7} {:<8}\n",
        "PID", "JOBID", "STEPID", "LOCALID", "GLOBALID"
    );
    for (job, p) in rows {
        out.push_str(&format!(
            "{:<8} {:<8} {:<8} {:<7} {:<8}\n",
            p.pid,
            job,
            p.step_id,
            id(p.local_id),
            id(p.global_id)
        ));
    }
    out
}

/// `pidinfo PID`: the job the process belongs to on this node, when it ends and the
/// seconds it has left, as Slurm's.
async fn pid_info(s: &mut Session, conn: &mut Option<client::Ctld>, args: &[String]) {
    let Some(pid) = args.first().and_then(|p| p.parse::<u32>().ok()) else {
        s.fail("too few arguments for keyword:pidinfo");
        return;
    };
    let node = this_node();
    let Some(found) = node_processes(s, conn, &node, None).await else {
        return;
    };
    let Some((job_id, _)) = found.iter().find(|(_, p)| p.pid == pid) else {
        s.fail("Failed to locate job for requested pid");
        return;
    };
    let Some(c) = get_client(s, conn, "slurm_load_job").await else {
        return;
    };
    let req = v1::ListJobsRequest {
        filter: Some(calls::job_filter(job_id)),
        ..Default::default()
    };
    let job = match c.list_jobs(req).await {
        Ok(r) => r
            .into_inner()
            .jobs
            .into_iter()
            .find(|j| j.job_id == *job_id),
        Err(_) => None,
    };
    let end = job.map_or(0, |j| {
        let limit = j.spec.map_or(0, |sp| sp.time_limit_min);
        if limit == 0 {
            0
        } else {
            j.start_time + i64::from(limit) * 60
        }
    });
    s.out.push(pid_info_lines(*job_id, end, times::now()));
}

/// `pidinfo`'s lines for job `job_id` ending at `end` (0: never), at `now`.
fn pid_info_lines(job_id: u32, end: i64, now: i64) -> String {
    if end == 0 {
        return format!("Slurm JobId={job_id} ends at Unknown\nJob remaining time is UNLIMITED\n");
    }
    format!(
        "Slurm JobId={job_id} ends at {}\nJob remaining time is {} seconds\n",
        times::ctime_line(end),
        (end - now).max(0)
    )
}

/// `show slurmd [NODE]`: the node daemon of this node (`SLURMD_NODENAME` in a job, else
/// the host's name) as the controller knows it, in Slurm's layout: its running steps,
/// its hardware, its boot time.
async fn show_slurmd(s: &mut Session, conn: &mut Option<client::Ctld>, node: Option<String>) {
    let node = node.unwrap_or_else(this_node);
    let Some(c) = get_client(s, conn, "slurm_load_slurmd_status").await else {
        return;
    };
    let nodes = c
        .list_nodes(v1::ListNodesRequest {
            names: vec![node.clone()],
        })
        .await;
    let info = match nodes.map(|r| r.into_inner().nodes) {
        Ok(nodes) => nodes.into_iter().find(|n| n.name == node),
        Err(st) => {
            s.fail(format!(
                "slurm_load_slurmd_status: {}",
                calls::status_text(&st)
            ));
            return;
        }
    };
    let Some(info) = info else {
        s.fail(format!(
            "slurm_load_slurmd_status: Invalid node name specified: {node}"
        ));
        return;
    };
    let req = v1::ListJobsRequest {
        filter: Some(v1::JobFilter {
            nodes: node.clone(),
            states: vec![v1::JobState::Running as i32],
            ..Default::default()
        }),
        ..Default::default()
    };
    let running = match c.list_jobs(req).await {
        Ok(r) => r.into_inner().jobs,
        Err(_) => Vec::new(),
    };
    let steps: Vec<String> = running
        .iter()
        .flat_map(|j| {
            j.steps
                .iter()
                .filter(|st| {
                    jobs::step_state(st) == model::JobState::Running
                        && model::hostlist::expand(&st.nodes).is_ok_and(|n| n.contains(&node))
                })
                .map(move |st| format!("{}.{}", j.job_id, st.step_id))
        })
        .collect();
    s.out.push(slurmd_lines(&info, &steps));
}

/// `show slurmd`'s lines for `node` running `steps` (`12.0`, `12.batch`).
fn slurmd_lines(node: &v1::NodeInfo, steps: &[String]) -> String {
    let layout = node.layout.unwrap_or_default();
    let rows = [
        (
            "Active Steps",
            if steps.is_empty() {
                "NONE".to_string()
            } else {
                steps.join(",")
            },
        ),
        ("Actual CPUs", node.cpus.to_string()),
        ("Actual Boards", "1".to_string()),
        ("Actual sockets", layout.sockets.max(1).to_string()),
        (
            "Actual cores",
            (layout.sockets.max(1) * layout.cores_per_socket.max(1)).to_string(),
        ),
        (
            "Actual threads per core",
            layout.threads_per_core.max(1).to_string(),
        ),
        ("Actual real memory", format!("{} MB", node.memory_mb)),
        ("Actual temp disk space", format!("{} MB", node.tmp_disk_mb)),
        ("Boot time", format_time(node.boot_time)),
        ("Hostname", node.name.clone()),
        ("Last slurmctld msg time", format_time(node.last_heartbeat)),
        ("Version", model::config::SLURM_VERSION.to_string()),
    ];
    rows.iter()
        .map(|(k, v)| format!("{k:<25}= {v}\n"))
        .collect()
}

async fn show(s: &mut Session, conn: &mut Option<client::Ctld>, words: &[String]) {
    if words.len() < 2 {
        s.fail(format!("too few arguments for keyword:{}", words[0]));
        return;
    }
    if words.len() > 3 {
        s.fail(format!("too many arguments for keyword:{}", words[0]));
        return;
    }
    let (tag, val) = match words[1].split_once('=') {
        Some((t, v)) => (t.to_string(), Some(v.to_string())),
        None => (words[1].clone(), words.get(2).cloned()),
    };
    let tag = tag.as_str();
    if kw(tag, "config", 1) {
        let Some(c) = get_client(s, conn, "slurm_load_ctl_conf error").await else {
            return;
        };
        match c.get_config(v1::GetConfigRequest {}).await {
            Ok(r) => {
                s.out.push(config_text(
                    &r.into_inner(),
                    times::now(),
                    val.as_deref(),
                    args::env_var("SLURM_CONF").as_deref(),
                ));
                s.out
                    .push(format!("Slurmctld(primary) at {} is UP\n", ctld_host()));
            }
            Err(st) => s.fail(format!(
                "slurm_load_ctl_conf error: {}",
                calls::status_text(&st)
            )),
        }
    } else if kw(tag, "slurmd", 2) {
        show_slurmd(s, conn, val).await;
    } else if kw(tag, "federation", 3) {
        // A Drover cluster is never part of a Slurm federation.
        s.out.push("Not part of a federation.\n".into());
    } else if kw(tag, "hostnames", 5) {
        let expr = val
            .or_else(|| std::env::var("SLURM_JOB_NODELIST").ok())
            .or_else(|| std::env::var("SLURM_NODELIST").ok())
            .unwrap_or_default();
        match model::hostlist::expand(&expr) {
            Ok(hosts) => s.out.extend(hosts.into_iter().map(|h| format!("{h}\n"))),
            Err(_) => s.fail(format!("Invalid hostlist: {expr}")),
        }
    } else if kw(tag, "hostlistsorted", 9) || kw(tag, "hostlist", 5) {
        let Some(v) = val else {
            s.fail("invalid encode argument");
            return;
        };
        let sorted = tag.len() >= 9 && kw(tag, "hostlistsorted", 9);
        match model::hostlist::expand(&v) {
            Ok(mut hosts) => {
                if sorted {
                    hosts.sort();
                }
                s.out.push(format!("{}\n", model::hostlist::fold(&hosts)));
            }
            Err(_) => s.fail(format!("Invalid hostlist: {v}")),
        }
    } else if kw(tag, "jobs", 1) || kw(tag, "jobid", 1) {
        show_jobs(s, conn, val).await;
    } else if kw(tag, "nodes", 1) {
        show_nodes(s, conn, val).await;
    } else if kw(tag, "steps", 2) {
        show_steps(s, conn, val).await;
    } else if kw(tag, "reservations", 3) || kw(tag, "reservationname", 3) {
        show_reservations(s, conn, val).await;
    } else if kw(tag, "partitions", 2) || kw(tag, "partitionname", 2) {
        show_partitions(s, conn, val).await;
    } else {
        s.fail(format!("invalid entity:{tag} for keyword:{} ", words[0]));
    }
}

async fn show_jobs(s: &mut Session, conn: &mut Option<client::Ctld>, id: Option<String>) {
    // Job id 0 reads every job, as Slurm's scontrol does: `show job 0_3` shows every
    // array's task 3. What follows the 0 is kept, to be read after each job's own id.
    let any_job: Option<String> = id.as_deref().and_then(|i| {
        let (base, rest) = i.find('_').map_or((i, ""), |at| i.split_at(at));
        (!base.is_empty() && base.bytes().all(|b| b == b'0')).then(|| rest.to_string())
    });
    let ids: Vec<String> = match (&id, &any_job) {
        (Some(i), None) => match jobs::job_ids(i) {
            Ok(ids) => ids.iter().map(ToString::to_string).collect(),
            Err(_) => {
                s.fail("slurm_load_jobs error: Invalid job id specified");
                return;
            }
        },
        _ => Vec::new(),
    };
    let Some(c) = get_client(s, conn, "slurm_load_jobs error").await else {
        return;
    };
    let req = v1::ListJobsRequest {
        filter: Some(v1::JobFilter {
            job_ids: ids,
            ..Default::default()
        }),
        include_finished: true,
        recent_finished_only: true,
        ..Default::default()
    };
    let reply = match c.list_jobs(req).await {
        Ok(r) => r.into_inner(),
        Err(st) => {
            s.fail(format!(
                "slurm_load_jobs error: {}",
                calls::status_text(&st)
            ));
            return;
        }
    };
    if let Err(e) = jobs::check_records(PROG, &reply.jobs) {
        s.fail(e.stderr.trim_end());
        return;
    }
    let mut reply = reply;
    if let Some(rest) = &any_job {
        reply.jobs.retain(|j| {
            model::job_id::JobIdSpec::parse(&format!("{}{rest}", jobs::base_id(j)))
                .is_ok_and(|sp| jobs::select(&sp, j).is_some())
        });
        if reply.jobs.is_empty() {
            s.failed = true;
            s.out.push(format!(
                "Job {} not found\n",
                id.as_deref().unwrap_or_default()
            ));
            return;
        }
    }
    if reply.jobs.is_empty() {
        if id.is_some() {
            s.fail("slurm_load_jobs error: Invalid job id specified");
        } else {
            s.out.push("No jobs in the system\n".into());
        }
        return;
    }
    s.records_read(reply.jobs.len());
    let names = |uid: u32, gid: u32| (user_name(uid), group_name(gid));
    // `show job 6_2` of tasks still pending in their array's record shows that record as
    // task 2's, as Slurm's scontrol does.
    let asked_task = id
        .as_deref()
        .and_then(|i| i.split_once('_'))
        .and_then(|(_, t)| t.parse::<u32>().ok());
    for j in &reply.jobs {
        let mut j = j.clone();
        if let Some(t) = asked_task
            && j.array_job_id != 0
            && j.array_task_id.is_none()
        {
            j.array_task_id = Some(t);
        }
        let j = &j;
        let mut lines = job_lines(j, &names);
        if s.details {
            add_node_detail(&mut lines, j);
        }
        s.out.push(render(&lines, s.one_liner));
    }
}

/// A step's record as Slurm's `scontrol show step` prints it: `TimeLimit` is the step's
/// own, or its job's where it has none.
pub fn step_lines(j: &v1::JobInfo, step: &v1::StepInfo) -> Vec<String> {
    let spec = j.spec.clone().unwrap_or_default();
    let id = if j.array_job_id != 0
        && let Some(t) = j.array_task_id
    {
        format!("{}_{t}.{}", j.array_job_id, step.step_id)
    } else {
        format!("{}.{}", j.job_id, step.step_id)
    };
    let nodes = model::hostlist::expand(&step.nodes).map_or(0, |n| n.len());
    vec![
        format!(
            "StepId={id} UserId={} StartTime={} TimeLimit={}",
            spec.uid,
            format_time(step.start_time),
            elapsed_limit(step.time_limit_min.unwrap_or(spec.time_limit_min))
        ),
        format!(
            "State={} Partition={} NodeList={}",
            jobs::step_state(step).name(),
            spec.partition,
            step.nodes
        ),
        format!(
            "Nodes={nodes} CPUs={} Tasks={} Name={} Network=(null)",
            step.num_cpus, step.num_tasks, step.name
        ),
        format!(
            "TRES={}",
            model::tres::format_counts_by_name(&jobs::step_tres(j, step))
        ),
        "ResvPorts=(null)".to_string(),
        "CPUFreqReq=Default Dist=Block".to_string(),
        format!("SrunHost:Pid={}:0", spec.submit_host),
    ]
    .into_iter()
    .chain(step_gpu_request_lines(step))
    .chain([String::new()])
    .collect()
}

/// `show step [JOBID[_TASK][.STEP]]`: the running steps of running jobs.
async fn show_steps(s: &mut Session, conn: &mut Option<client::Ctld>, id: Option<String>) {
    let (job, step) = match id.as_deref().map(|i| i.split_once('.').unwrap_or((i, ""))) {
        Some((j, st)) => (
            Some(j.to_string()),
            Some(st.to_string()).filter(|s| !s.is_empty()),
        ),
        None => (None, None),
    };
    if let Some(j) = &job
        && jobs::job_ids(j).is_err()
    {
        s.fail("slurm_get_job_steps error: Invalid job id specified");
        return;
    }
    let Some(c) = get_client(s, conn, "slurm_get_job_steps error").await else {
        return;
    };
    let req = v1::ListJobsRequest {
        filter: Some(v1::JobFilter {
            job_ids: job.iter().cloned().collect(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let reply = match c.list_jobs(req).await {
        Ok(r) => r.into_inner(),
        Err(st) => {
            s.fail(format!(
                "slurm_get_job_steps error: {}",
                calls::status_text(&st)
            ));
            return;
        }
    };
    if job.is_some() && reply.jobs.is_empty() {
        s.fail("slurm_get_job_steps error: Invalid job id specified");
        return;
    }
    let running: Vec<(&v1::JobInfo, &v1::StepInfo)> = reply
        .jobs
        .iter()
        .filter(|j| jobs::job_state(j) == model::JobState::Running)
        .flat_map(|j| j.steps.iter().map(move |st| (j, st)))
        .filter(|(_, st)| jobs::step_state(st) == model::JobState::Running)
        .filter(|(_, st)| step.as_ref().is_none_or(|want| &st.step_id == want))
        .collect();
    s.records_read(running.len());
    if running.is_empty() {
        match (&job, &step) {
            (Some(j), Some(st)) => {
                s.failed = true;
                s.out.push(format!("Job step {j}.{st} not found\n"));
            }
            (Some(j), None) => {
                s.failed = true;
                s.out.push(format!("Job step {j} not found\n"));
            }
            _ => s.out.push("No job steps in the system\n".into()),
        }
        return;
    }
    for (j, st) in running {
        s.out.push(render(&step_lines(j, st), s.one_liner));
    }
}

async fn show_nodes(s: &mut Session, conn: &mut Option<client::Ctld>, name: Option<String>) {
    let names = match &name {
        Some(n) => match model::hostlist::expand(n) {
            Ok(v) => v,
            Err(_) => {
                s.fail(format!("Node {n} not found"));
                return;
            }
        },
        None => Vec::new(),
    };
    let Some(c) = get_client(s, conn, "slurm_load_node error").await else {
        return;
    };
    let nodes = match c
        .list_nodes(v1::ListNodesRequest {
            names: names.clone(),
        })
        .await
    {
        Ok(r) => r.into_inner().nodes,
        Err(st) => {
            s.fail(format!(
                "slurm_load_node error: {}",
                calls::status_text(&st)
            ));
            return;
        }
    };
    if let Err(e) = nodes::check_node_states(PROG, &nodes) {
        s.fail(e.stderr.trim_end());
        return;
    }
    let nodes: Vec<_> = nodes
        .into_iter()
        .filter(|n| names.is_empty() || names.contains(&n.name))
        .collect();
    if nodes.is_empty() {
        s.none_found("Node", name);
        return;
    }
    s.records_read(nodes.len());
    for n in &nodes {
        s.out.push(render(&node_lines(n), s.one_liner));
    }
}

/// Whether the words after `create` or `delete` name a partition: `partition=x`,
/// `PartitionName=x`, or `partition x`.
fn names_partition(rest: &[String]) -> bool {
    rest.first().is_some_and(|w| {
        let k = w.split_once('=').map_or(w.as_str(), |(k, _)| k);
        k.eq_ignore_ascii_case("partition") || k.eq_ignore_ascii_case("partitionname")
    })
}

/// `create partition=x K=V...` (or `PartitionName=x`), `update PartitionName=x K=V...`
/// (routed here by `update`), `delete partition=x` (or `delete partition x`). The
/// words are checked here with the controller's grammar, for scontrol's own errors.
async fn partition_change(
    s: &mut Session,
    conn: &mut Option<client::Ctld>,
    tag: &str,
    rest: &[String],
) {
    let op = if kw(tag, "create", 2) {
        v1::PartitionOp::Create
    } else if kw(tag, "update", 1) {
        v1::PartitionOp::Update
    } else {
        v1::PartitionOp::Delete
    };
    let words = match rest {
        [what, name] if op == v1::PartitionOp::Delete && !what.contains('=') => {
            vec![format!("PartitionName={name}")]
        }
        other => other.to_vec(),
    };
    let change = match model::partition_change::parse(&words) {
        Ok(change) => change,
        Err(model::partition_change::PartitionChangeError::NoName) => {
            s.fail("PartitionName must be given.");
            return;
        }
        Err(e) => {
            s.fail(format!("{e}"));
            s.fail("Request aborted");
            return;
        }
    };
    let Some(c) = get_client(s, conn, "slurm_update error").await else {
        return;
    };
    let (name, fields) = proto::convert::partition_change_to_wire(&change);
    if let Err(e) = c
        .change_partition(v1::ChangePartitionRequest {
            op: op as i32,
            name: name.clone(),
            fields,
        })
        .await
    {
        let text = calls::status_text(&e);
        s.fail(match op {
            v1::PartitionOp::Create => format!("Error creating the partition: {text}"),
            v1::PartitionOp::Delete => format!("delete_partition {name}: {text}"),
            _ => format!("slurm_update error: {text}"),
        });
    }
}

/// `create reservation K=V...`, `update ReservationName=... K=V...` (routed here by
/// `update`), `delete ReservationName=name`.
async fn reservation_change(
    s: &mut Session,
    conn: &mut Option<client::Ctld>,
    tag: &str,
    rest: &[String],
) {
    use super::reservation;
    let creating = kw(tag, "create", 2);
    let (op, words) = if creating {
        match rest.split_first() {
            Some((what, words)) if kw(what, "reservation", 3) || kw(what, "reservationname", 3) => {
                (v1::ReservationOp::Create, words.to_vec())
            }
            // `create reservation=NAME ...`: the name's key shortened, as Slurm takes it.
            Some((what, words))
                if what
                    .split_once('=')
                    .is_some_and(|(k, _)| kw(k, "ReservationName", 3)) =>
            {
                (
                    v1::ReservationOp::Create,
                    [std::slice::from_ref(what), words].concat(),
                )
            }
            _ => {
                s.fail(format!(
                    "invalid keyword: {}",
                    rest.first().map(String::as_str).unwrap_or(tag)
                ));
                return;
            }
        }
    } else if kw(tag, "update", 1) {
        (v1::ReservationOp::Update, rest.to_vec())
    } else {
        // `delete ReservationName=x` or `delete reservation x`.
        let words = match rest {
            [what, name] if kw(what, "reservation", 3) => vec![format!("ReservationName={name}")],
            other => other.to_vec(),
        };
        (v1::ReservationOp::Delete, words)
    };
    let verb = match op {
        v1::ReservationOp::Create => "creating",
        v1::ReservationOp::Update => "updating",
        v1::ReservationOp::Delete => "deleting",
        v1::ReservationOp::Unspecified => unreachable!("the command names its operation"),
    };
    let req = match reservation::request(op, &words, times::now()) {
        Ok(r) => r,
        Err(e) => {
            s.fail(format!("Error {verb} the reservation: {e}"));
            return;
        }
    };
    let Some(c) = get_client(s, conn, "slurm_reservation error").await else {
        return;
    };
    match c.change_reservation(req).await {
        Ok(r) => match op {
            v1::ReservationOp::Create => s
                .out
                .push(format!("Reservation created: {}\n", r.into_inner().name)),
            v1::ReservationOp::Update => s.out.push("Reservation updated.\n".into()),
            v1::ReservationOp::Delete | v1::ReservationOp::Unspecified => {}
        },
        Err(e) => s.fail(format!(
            "Error {verb} the reservation: {}",
            calls::status_text(&e)
        )),
    }
}

async fn show_reservations(s: &mut Session, conn: &mut Option<client::Ctld>, name: Option<String>) {
    let Some(c) = get_client(s, conn, "slurm_load_reservations error").await else {
        return;
    };
    match c.list_reservations(v1::ListReservationsRequest {}).await {
        Ok(r) => {
            let mut list = r.into_inner().reservations;
            if let Some(name) = &name {
                list.retain(|r| &r.name == name);
                if list.is_empty() {
                    s.fail(format!("Reservation {name} not found"));
                    return;
                }
            }
            s.records_read(list.len());
            s.out
                .push(super::reservation::render_show(&list, s.one_liner));
        }
        Err(e) => s.fail(format!(
            "slurm_load_reservations error: {}",
            calls::status_text(&e)
        )),
    }
}

async fn show_partitions(s: &mut Session, conn: &mut Option<client::Ctld>, name: Option<String>) {
    let Some(c) = get_client(s, conn, "slurm_load_partitions error").await else {
        return;
    };
    let parts = match c.list_partitions(v1::ListPartitionsRequest {}).await {
        Ok(r) => r.into_inner().partitions,
        Err(st) => {
            s.fail(format!(
                "slurm_load_partitions error: {}",
                calls::status_text(&st)
            ));
            return;
        }
    };
    let nodes = c
        .list_nodes(v1::ListNodesRequest { names: vec![] })
        .await
        .map(|r| r.into_inner().nodes)
        .unwrap_or_default();
    let chosen: Vec<_> = parts
        .iter()
        .filter(|p| name.as_ref().is_none_or(|n| p.name == *n))
        .collect();
    s.records_read(parts.len());
    if chosen.is_empty() {
        s.none_found("Partition", name);
        return;
    }
    for p in chosen {
        let mem: u64 = nodes
            .iter()
            .filter(|n| n.partitions.contains(&p.name))
            .map(|n| n.memory_mb)
            .sum();
        s.out.push(render(&partition_lines(p, mem), s.one_liner));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_request_shown_as_given() {
        let spec = v1::JobSpec {
            gpus: 8,
            gpus_per_node: 4,
            ..Default::default()
        };
        let details = v1::RequestDetails {
            gpus_per_job: 8,
            gpus_per_task: 2,
            cpus_per_gpu: 1,
            mem_per_gpu_mb: 10,
            gpu_bind: "closest".into(),
            gpu_freq: "medium".into(),
            ..Default::default()
        };
        assert_eq!(
            gpu_request_lines(&spec, &details),
            [
                "CpusPerTres=gres:gpu:1",
                "MemPerTres=gres:gpu:10",
                "TresBind=gpu:closest",
                "TresFreq=gpu:medium",
                "TresPerJob=gres:gpu:8",
                "TresPerNode=gres:gpu:4",
                "TresPerTask=gres:gpu:2",
            ]
        );
        // A job recorded before the options were kept: its count per job.
        let old = v1::JobSpec {
            gpus: 2,
            gpu_type: "h100".into(),
            ..Default::default()
        };
        assert_eq!(
            gpu_request_lines(&old, &Default::default()),
            ["TresPerJob=gres:gpu:h100:2"]
        );
    }

    fn sv(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn keywords_match_like_slurm() {
        assert!(kw("show", "show", 3));
        assert!(kw("sho", "show", 3));
        assert!(!kw("sh", "show", 3));
        assert!(kw("SHOW", "show", 3));
        assert!(kw("j", "jobs", 1));
        assert!(kw("job", "jobs", 1));
        assert!(!kw("jobsx", "jobs", 1));
        assert!(kw("part", "partitions", 2));
        assert!(!kw("p", "partitions", 2));
    }

    fn sample_job() -> v1::JobInfo {
        v1::JobInfo {
            job_id: 1,
            state: v1::JobState::Running as i32,
            reason: "None".into(),
            submit_time: 1000,
            eligible_time: 1000,
            start_time: 1001,
            run_secs: 1,
            stdout_path: "/home/ada/run/out-1.txt".into(),
            stderr_path: "/home/ada/run/out-1.txt".into(),
            nodes: "vm".into(),
            num_nodes: 1,
            num_cpus: 1,
            mem_mb: 100,
            priority: 1056,
            batch_host: "vm".into(),
            spec: Some(v1::JobSpec {
                name: "myname".into(),
                uid: 0,
                gid: 0,
                user: "root".into(),
                partition: "debug".into(),
                work_dir: "/home/ada/run".into(),
                stdout_pattern: "/home/ada/run/out-%j.txt".into(),
                comment: "hello".into(),
                mem_per_cpu_mb: 100,
                num_tasks: 1,
                cpus_per_task: 1,
                requeue: true,
                submit_host: "localhost".into(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn resize_scripts_set_what_the_environment_has() {
        let has = |name: &str| name != "SLURM_NODELIST";
        let (sh, csh) = resize_scripts("n1", 1, "8", &has);
        assert_eq!(
            sh,
            "export SLURM_JOB_NODELIST=\"n1\"\nexport SLURM_NNODES=1\n\
             export SLURM_JOB_NUM_NODES=1\nexport SLURM_JOB_CPUS_PER_NODE=\"8\"\n\
             unset SLURM_NPROCS\nunset SLURM_NTASKS\nunset SLURM_TASKS_PER_NODE\n"
        );
        assert!(csh.starts_with("setenv SLURM_JOB_NODELIST \"n1\"\nsetenv SLURM_NNODES 1\n"));
        assert!(csh.ends_with("unsetenv SLURM_TASKS_PER_NODE\n"));
        assert_eq!(
            resize_scripts("n1", 1, "8", &|_| false),
            (String::new(), String::new())
        );
    }

    #[test]
    fn request_details_shown_as_slurm_does() {
        let names = |_: u32, _: u32| ("root".to_string(), "root".to_string());
        let mut job = sample_job();
        let spec = job.spec.as_mut().unwrap();
        spec.details = Some(v1::RequestDetails {
            time_min: 5,
            min_cpus_node: 4,
            tmp_disk_mb: 2,
            oversubscribe: true,
            contiguous: true,
            ..Default::default()
        });
        spec.reservation = "r1,r2".into();
        let text = render(&job_lines(&job, &names), false);
        for want in [
            "TimeMin=00:05:00\n",
            "MinCPUsNode=4 ",
            "MinTmpDiskNode=2M\n",
            "DelayBoot=00:00:00\n   Reservation=r1,r2\n   OverSubscribe=YES Contiguous=1 ",
        ] {
            assert!(text.contains(want), "{want} in {text}");
        }
    }

    #[test]
    fn job_record_layout() {
        let names = |_: u32, _: u32| ("root".to_string(), "root".to_string());
        let lines = job_lines(&sample_job(), &names);
        let text = render(&lines, false);
        let expect_start = "JobId=1 JobName=myname\n   UserId=root(0) GroupId=root(0) MCS_label=N/A\n   Priority=1056 Nice=0 Account=(null) QOS=normal\n   JobState=RUNNING Reason=None Dependency=(null)\n   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0\n   RunTime=00:00:01 TimeLimit=UNLIMITED TimeMin=N/A\n";
        assert!(text.starts_with(expect_start), "{text}");
        assert!(text.contains("\n   NodeList=vm\n   BatchHost=vm\n   NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:*\n   TRES=cpu=1,mem=100M,node=1,billing=1\n"));
        assert!(text.contains("\n   MinCPUsNode=1 MinMemoryCPU=100M MinTmpDiskNode=0\n"));
        assert!(text.ends_with(
            "   Command=(null)\n   WorkDir=/home/ada/run\n   Comment=hello \n   StdErr=/home/ada/run/out-1.txt\n   StdIn=/dev/null\n   StdOut=/home/ada/run/out-1.txt\n   Power=\n   \n\n"
        ), "{text}");
        let one = render(&lines, true);
        assert!(one.starts_with(
            "JobId=1 JobName=myname UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=1056"
        ));
        assert!(one.contains(
            " WorkDir=/home/ada/run Comment=hello  StdErr=/home/ada/run/out-1.txt StdIn=/dev/null"
        ));
        assert!(
            one.ends_with("StdOut=/home/ada/run/out-1.txt Power= \n"),
            "{one}"
        );
        assert_eq!(one.matches('\n').count(), 1);
    }

    #[test]
    fn run_time_leaves_out_suspended_time_as_squeue_and_sacct_do() {
        // Started at 1000 with a 10-minute limit, suspended from 1100 to 1400 and again
        // since 1500: at 1600, 600 s elapsed less 400 s suspended.
        let mut job = model::Job::new(1, model::JobSpec::default(), 900, Some(10));
        job.state = model::JobState::Suspended;
        job.start_time = 1000;
        job.suspended_secs = 300;
        job.suspend_time = 1500;
        let wire = proto::convert::job_to_wire(&job, None, 1600);
        let names = |_: u32, _: u32| ("root".to_string(), "root".to_string());
        let text = render(&job_lines(&wire, &names), false);
        assert!(
            text.contains("RunTime=00:03:20 TimeLimit=00:10:00"),
            "{text}"
        );
        // The expected end moves on by the time suspended before the current suspension.
        let end = times::format_time(1000 + 300 + 600);
        assert!(text.contains(&format!("EndTime={end} ")), "{text}");
    }

    #[test]
    fn details_name_cpu_ids_memory_and_gpus_per_node() {
        let mut j = sample_job();
        j.node_detail = "Nodes=vm CPU_IDs=8-11 Mem=100 GRES=gpu:2(IDX:4-5)".into();
        j.steps = vec![
            v1::StepInfo {
                step_id: "0".into(),
                exit_code: 123,
                ..Default::default()
            },
            v1::StepInfo {
                step_id: "batch".into(),
                exit_code: 200,
                ..Default::default()
            },
        ];
        let names = |_: u32, _: u32| ("root".to_string(), "root".to_string());
        let mut lines = job_lines(&j, &names);
        add_node_detail(&mut lines, &j);
        let text = render(&lines, false);
        // The worst step's exit, the batch step's aside.
        assert!(
            text.contains(" ExitCode=0:0\n   DerivedExitCode=123:0\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "CoreSpec=*\n   JOB_GRES=gpu:2\n     Nodes=vm CPU_IDs=8-11 Mem=100 GRES=gpu:2(IDX:4-5)\n   MinCPUsNode=1"
            ),
            "{text}"
        );
    }

    #[test]
    fn array_and_pending_records() {
        let spec = model::JobSpec {
            name: "myname".into(),
            user: "root".into(),
            work_dir: "/home/ada/run".into(),
            stdout_pattern: "slurm-%A_%a.out".into(),
            array: Some(model::ArraySpec {
                task_ids: vec![0, 1, 2, 3, 4],
                max_running: 2,
            }),
            hold: true,
            ..Default::default()
        };
        let job = model::Job::new(1, spec, 1000, Some(10));
        let j = proto::convert::job_to_wire(&job, None, 1002);
        let names = |_: u32, _: u32| ("root".to_string(), "root".to_string());
        let text = render(&job_lines(&j, &names), false);
        assert!(
            text.starts_with(
                "JobId=1 ArrayJobId=1 ArrayTaskId=0-4%2 ArrayTaskThrottle=2 JobName=myname\n"
            ),
            "{text}"
        );
        assert!(text.contains("JobState=PENDING Reason=JobHeldUser"));
        assert!(text.contains("RunTime=00:00:00 TimeLimit=00:10:00"));
        assert!(text.contains("StartTime=Unknown EndTime=Unknown"));
        assert!(text.contains("\n   NodeList=\n   NumNodes=1"));
        // Waiting for its --begin: it starts no sooner.
        let mut later = j.clone();
        if let Some(spec) = later.spec.as_mut() {
            spec.begin_time = 5000;
        }
        let text = render(&job_lines(&later, &names), false);
        let begin = times::format_time(5000);
        assert!(
            text.contains(&format!("StartTime={begin} EndTime=Unknown")),
            "{text}"
        );
        // The pattern as the controller expands it before the job starts.
        assert!(
            text.contains("StdOut=/home/ada/run/slurm-1_4294967294.out"),
            "{text}"
        );
    }

    #[test]
    fn listpids_table_and_pidinfo_lines() {
        let p = |pid, step: &str, ids: Option<(u32, u32)>| {
            (
                7,
                v1::JobProcess {
                    pid,
                    step_id: step.into(),
                    local_id: ids.map(|i| i.0),
                    global_id: ids.map(|i| i.1),
                },
            )
        };
        let rows = [p(2403, "0", Some((0, 0))), p(2391, "batch", None)];
        let rows: Vec<&(u32, v1::JobProcess)> = rows.iter().collect();
        assert_eq!(
            pid_table(&rows),
            "PID      JOBID    STEPID   LOCALID GLOBALID\n\
             2403     7        0        0       0       \n\
             2391     7        batch    -       -       \n"
        );
        let lines = pid_info_lines(7, 1_000_060, 1_000_000);
        assert!(lines.starts_with("Slurm JobId=7 ends at "), "{lines}");
        assert!(
            lines.ends_with("\nJob remaining time is 60 seconds\n"),
            "{lines}"
        );
    }

    #[test]
    fn show_slurmd_lines() {
        let node = v1::NodeInfo {
            name: "n1".into(),
            cpus: 8,
            memory_mb: 16000,
            tmp_disk_mb: 100,
            layout: Some(v1::SocketLayout {
                sockets: 2,
                cores_per_socket: 4,
                threads_per_core: 1,
            }),
            ..Default::default()
        };
        let text = slurmd_lines(&node, &["5.0".into(), "5.batch".into()]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Active Steps             = 5.0,5.batch");
        assert_eq!(lines[3], "Actual sockets           = 2");
        assert_eq!(lines[4], "Actual cores             = 8");
        assert_eq!(lines[6], "Actual real memory       = 16000 MB");
        assert_eq!(lines[9], "Hostname                 = n1");
        assert_eq!(lines.last(), Some(&"Version                  = 22.05.8"));
        assert!(slurmd_lines(&node, &[]).starts_with("Active Steps             = NONE\n"));
    }

    #[test]
    fn write_config_gives_slurm_conf_lines() {
        let reply = v1::GetConfigReply {
            cluster_name: "c1".into(),
            entries: [
                ("KillWait", "30 sec"),
                ("OverTimeLimit", "0 min"),
                ("PriorityMaxAge", "7-00:00:00"),
                ("SwitchType", "switch/none"),
                ("PropagateResourceLimitsExcept", "(null)"),
                ("SLURM_VERSION", "22.05.8"),
            ]
            .iter()
            .map(|(k, v)| v1::ConfigEntry {
                key: k.to_string(),
                value: v.to_string(),
            })
            .collect(),
            config_file: String::new(),
        };
        assert_eq!(
            slurm_conf_lines(&reply),
            "# slurm.conf of cluster c1\nKillWait=30\nOverTimeLimit=0\n\
             PriorityMaxAge=7-00:00:00\nSwitchType=switch/none\n\
             #PropagateResourceLimitsExcept=\n"
        );
    }

    #[test]
    fn config_layout() {
        let reply = v1::GetConfigReply {
            cluster_name: "drover".into(),
            entries: vec![
                v1::ConfigEntry {
                    key: "AccountingStorageType".into(),
                    value: "none".into(),
                },
                v1::ConfigEntry {
                    key: "MaxArraySize".into(),
                    value: "1001".into(),
                },
                v1::ConfigEntry {
                    key: "MinJobAge".into(),
                    value: "300 sec".into(),
                },
            ],
            config_file: "/etc/drover.toml".into(),
        };
        let text = config_text(&reply, 0, None, None);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Configuration data as of Unknown");
        assert_eq!(lines[1], "AccountingStorageType   = none");
        assert_eq!(lines[2], "ClusterName             = drover");
        assert_eq!(lines[3], "MaxArraySize            = 1001");
        assert_eq!(lines[4], "MinJobAge               = 300 sec");
        assert_eq!(lines[5], "SLURM_CONF              = /etc/drover.toml");
        assert_eq!(lines[6], "");
        // The client's SLURM_CONF names the file it reads.
        assert!(
            config_text(&reply, 0, None, Some("/etc/slurm/slurm.conf"))
                .contains("\nSLURM_CONF              = /etc/slurm/slurm.conf\n")
        );
        assert_eq!(
            config_text(&reply, 0, Some("minjobage"), None)
                .lines()
                .nth(1),
            Some("MinJobAge               = 300 sec")
        );
    }

    #[test]
    fn node_and_partition_layout() {
        let n = v1::NodeInfo {
            name: "gpu01".into(),
            addr: "127.0.0.1:7000".into(),
            health: v1::NodeHealth::Up as i32,
            drain: true,
            responding: true,
            reason: "maint".into(),
            cpus: 8,
            memory_mb: 16000,
            gpus: 4,
            gpu_type: "h100".into(),
            gres: vec![v1::GpuGres {
                gpu_type: "h100".into(),
                count: 4,
                alloc: 0,
            }],
            partitions: vec!["debug".into(), "gpu".into()],
            ..Default::default()
        };
        let text = render(&node_lines(&n), false);
        assert!(text.starts_with(
            "NodeName=gpu01 Arch=x86_64 CoresPerSocket=1 \n   CPUAlloc=0 CPUEfctv=8 CPUTot=8"
        ));
        assert!(text.contains("\n   Gres=gpu:h100:4\n"));
        assert!(text.contains("\n   State=IDLE+DRAIN ThreadsPerCore=1"));
        // S:C:T as sinfo -N -l shows it (8:1:1).
        assert!(text.contains(" Sockets=8 Boards=1"), "{text}");
        // A declared layout: one socket of 4 cores of 2 threads.
        let declared = v1::NodeInfo {
            layout: Some(v1::SocketLayout {
                sockets: 1,
                cores_per_socket: 4,
                threads_per_core: 2,
            }),
            ..n.clone()
        };
        let declared = render(&node_lines(&declared), false);
        assert!(declared.starts_with("NodeName=gpu01 Arch=x86_64 CoresPerSocket=4 \n"));
        assert!(declared.contains(" Sockets=1 Boards=1"), "{declared}");
        assert!(declared.contains("\n   State=IDLE+DRAIN ThreadsPerCore=2"));
        assert!(text.contains("\n   Partitions=debug,gpu \n"));
        assert!(text.contains("\n   CfgTRES=cpu=8,mem=16000M,billing=8,gres/gpu=4\n"));
        assert!(text.contains("\n   Reason=maint ["));
        let p = v1::PartitionInfo {
            name: "debug".into(),
            nodes: "gpu[01-02]".into(),
            is_default: true,
            max_time_min: 1440,
            state: "UP".into(),
            total_cpus: 16,
            total_nodes: 2,
            ..Default::default()
        };
        let lines = partition_lines(&p, 32000);
        assert_eq!(lines[0], "PartitionName=debug");
        assert_eq!(lines[2], "AllocNodes=ALL Default=YES QoS=N/A");
        assert_eq!(
            lines[3],
            "DefaultTime=NONE DisableRootJobs=NO ExclusiveUser=NO GraceTime=0 Hidden=NO"
        );
        assert_eq!(
            lines[4],
            "MaxNodes=UNLIMITED MaxTime=1-00:00:00 MinNodes=0 LLN=NO MaxCPUsPerNode=UNLIMITED"
        );
        assert_eq!(
            lines[8],
            "State=UP TotalCPUs=16 TotalNodes=2 SelectTypeParameters=NONE"
        );
        assert_eq!(lines[11], "TRES=cpu=16,mem=32000M,node=2,billing=16");
        assert_eq!(lines[1], "AllowGroups=ALL AllowAccounts=ALL AllowQos=ALL");
        assert!(lines[6].ends_with(" OverSubscribe=NO"), "{}", lines[6]);
        let restricted = v1::PartitionInfo {
            allow_accounts: "ml,vision".into(),
            allow_qos: "high".into(),
            oversubscribe: "EXCLUSIVE".into(),
            ..p.clone()
        };
        let lines = partition_lines(&restricted, 32000);
        assert_eq!(
            lines[1],
            "AllowGroups=ALL AllowAccounts=ml,vision AllowQos=high"
        );
        assert!(lines[6].ends_with(" OverSubscribe=EXCLUSIVE"), "{lines:?}");
        let denied = v1::PartitionInfo {
            deny_accounts: "guests".into(),
            ..p.clone()
        };
        assert_eq!(
            partition_lines(&denied, 32000)[1],
            "AllowGroups=ALL DenyAccounts=guests AllowQos=ALL"
        );
        let grouped = v1::PartitionInfo {
            allow_groups: "wheel,ml".into(),
            deny_qos: "low".into(),
            ..p
        };
        assert_eq!(
            partition_lines(&grouped, 32000)[1],
            "AllowGroups=wheel,ml AllowAccounts=ALL DenyQos=low"
        );
    }

    #[test]
    fn job_updates() {
        use model::job_update::TimeLimitChange;
        let u = parse_job_update(
            &sv(&[
                "JobId=12",
                "timelimit=10",
                "Name=x",
                "Comment=c d",
                "nice",
                "MinMemoryNode=2G",
            ]),
            0,
        )
        .unwrap();
        assert_eq!(u.ids, ["12"]);
        assert_eq!(
            u.changes,
            [
                JobChange::TimeLimit(TimeLimitChange::Set(Some(10))),
                JobChange::Name("x".into()),
                JobChange::Comment("c d".into()),
                JobChange::Nice(100),
                JobChange::MinMemoryNode(2048),
            ]
        );
        let u = parse_job_update(
            &sv(&["jobid=3_1,4", "Partition", "gpu", "TimeLimit=+30"]),
            0,
        )
        .unwrap();
        assert_eq!(u.ids, ["3_1", "4"]);
        // A relative limit goes as it is: the controller moves the job's own.
        assert_eq!(
            u.changes,
            [
                JobChange::Partition("gpu".into()),
                JobChange::TimeLimit(TimeLimitChange::Add(30))
            ]
        );
        let e = |a: &[&str]| parse_job_update(&sv(a), 0).unwrap_err().lines();
        assert_eq!(
            e(&["JobId=1", "Foo=1"]),
            [
                "Update of this parameter is not supported: Foo=1",
                "Request aborted"
            ]
        );
        assert_eq!(
            e(&["JobId=1", "TimeMin=5"]),
            [
                "Update of this parameter is not supported: TimeMin=5",
                "Request aborted"
            ]
        );
        assert_eq!(
            e(&["JobId=1", "TimeLimit=abc"]),
            ["scontrol: error: Invalid TimeLimit value"]
        );
        assert_eq!(e(&["JobId=1"]), ["No changes specified"]);
        assert_eq!(
            e(&["JobId=1x", "Comment=a"]),
            ["Invalid job id specified for job 1x"]
        );
        assert_eq!(
            e(&["JobId=1", "NumCPUs=0"]),
            ["scontrol: error: Invalid NumCPUs value: 0"]
        );
        let u = parse_job_update(&sv(&["JobId=1", "StartTime=now+60"]), 1_000_000).unwrap();
        assert_eq!(u.changes, [JobChange::BeginTime(1_000_060)]);
        // The jobs of a name and a user (by number or by name).
        let u = parse_job_update(&sv(&["JobName=x", "UserID=7", "TimeLimit=5"]), 0).unwrap();
        assert_eq!((u.name.as_deref(), u.user_id), (Some("x"), Some(7)));
        let u = parse_job_update(&sv(&["JobName=x", "UserID=root", "TimeLimit=5"]), 0).unwrap();
        assert_eq!(u.user_id, Some(0));
        assert_eq!(
            e(&["JobName=x", "UserID=no-such-user", "TimeLimit=5"]),
            ["scontrol: error: Invalid UserID: no-such-user"]
        );
    }

    #[test]
    fn node_updates() {
        let u = parse_node_update(&sv(&[
            "NodeName=gpu[01-02]",
            "State=drain",
            "Reason=disk swap",
        ]))
        .unwrap();
        assert_eq!(
            u,
            NodeUpdate {
                nodes: "gpu[01-02]".into(),
                state: Some(v1::NodeStateChange::Drain),
                reason: "disk swap".into(),
                features: None,
            }
        );
        let u = parse_node_update(&sv(&[
            "NodeName=n1",
            "AvailableFeatures=a,b",
            "ActiveFeatures=a,b",
        ]))
        .unwrap();
        assert_eq!(u.features, Some(vec!["a".to_string(), "b".into()]));
        let cleared = parse_node_update(&sv(&["NodeName=n1", "Features="])).unwrap();
        assert_eq!(cleared.features, Some(vec![]));
        let u = parse_node_update(&sv(&["nodename=n1", "state=RESUME"])).unwrap();
        assert_eq!(u.state, Some(v1::NodeStateChange::Resume));
        let u = parse_node_update(&sv(&["nodename=n1", "state=undr"])).unwrap();
        assert_eq!(u.state, Some(v1::NodeStateChange::Undrain));
        let e = |a: &[&str]| parse_node_update(&sv(a)).unwrap_err().lines();
        assert_eq!(
            e(&["NodeName=n1", "State=DRAIN"]),
            ["You must specify a reason when DOWNING or DRAINING a node. Request denied"]
        );
        assert_eq!(
            e(&["NodeName=n1", "State=down", "Reason="]),
            ["You must specify a reason when DOWNING or DRAINING a node. Request denied"]
        );
        assert_eq!(
            e(&["NodeName=n1", "State=bogus"])[0],
            "Invalid input: State=bogus"
        );
        // FAIL is a state the controller does not set.
        assert_eq!(
            e(&["NodeName=n1", "State=FAIL", "Reason=x"])[0],
            "Invalid input: State=FAIL"
        );
        assert_eq!(
            e(&["NodeName=n1", "Weight=3"]),
            [
                "Update of this parameter is not supported: Weight=3",
                "Request aborted"
            ]
        );
        assert_eq!(e(&["NodeName=n1"]), ["No changes specified"]);
        assert_eq!(
            e(&["NodeName=n1", "Gres=gpu:1"]),
            ["slurm_update error: Invalid generic resource (gres) specification"]
        );
        assert!(
            e(&["NodeName=n1", "AvailableFeatures=a", "ActiveFeatures=b"])[0]
                .contains("ActiveFeatures must be the same")
        );
    }

    #[test]
    fn step_record_layout() {
        let mut j = sample_job();
        let step = v1::StepInfo {
            step_id: "0".into(),
            name: "sleep".into(),
            state: v1::JobState::Running as i32,
            start_time: 0,
            nodes: "node[1-2]".into(),
            num_tasks: 2,
            num_cpus: 4,
            ..Default::default()
        };
        let lines = step_lines(&j, &step);
        assert!(lines[0].starts_with(&format!("StepId={}.0 UserId=", j.job_id)));
        assert_eq!(lines[2], "Nodes=2 CPUs=4 Tasks=2 Name=sleep Network=(null)");
        // The job's memory on the step's nodes; no GPUs.
        assert_eq!(lines[3], "TRES=cpu=4,mem=200M,node=2");
        j.array_job_id = 7;
        j.array_task_id = Some(3);
        assert!(step_lines(&j, &step)[0].starts_with("StepId=7_3.0 "));
        // Its GPU request, each field on a line of its own after SrunHost, as Slurm's.
        assert_eq!(
            lines[lines.len() - 2],
            format!("SrunHost:Pid={}:0", j.spec.as_ref().unwrap().submit_host)
        );
        let step = v1::StepInfo {
            gpu_request: Some(v1::StepGpuRequest {
                gpus: 8,
                gpus_per_node: 4,
                gpus_per_task: 2,
                cpus_per_gpu: 1,
                mem_per_gpu_mb: 10,
                gpu_bind: "closest".into(),
                gpu_freq: "medium".into(),
                ..Default::default()
            }),
            ..step
        };
        let lines = step_lines(&j, &step);
        // The GPUs it asked for, as Slurm's (`--gpus` first).
        assert_eq!(lines[3], "TRES=cpu=4,gres/gpu=8,mem=200M,node=2");
        let at = lines
            .iter()
            .position(|l| l.starts_with("SrunHost"))
            .unwrap();
        assert_eq!(
            lines[at + 1..],
            [
                "CpusPerTres=gres:gpu:1",
                "MemPerTres=gres:gpu:10",
                "TresBind=gpu:closest",
                "TresFreq=gpu:medium",
                "TresPerStep=cpu:4,gres:gpu:8",
                "TresPerNode=gres:gpu:4",
                "TresPerTask=gres:gpu:2",
                "",
            ]
        );
    }

    #[test]
    fn requeue_words_name_the_operation_and_the_jobs() {
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            requeue_request(true, &words(&["State=SpecialExit", "7"])),
            Ok((v1::ControlOp::RequeueSpecialExit, words(&["7"]), false))
        );
        assert_eq!(
            requeue_request(false, &words(&["inc", "7", "8_1"])),
            Ok((v1::ControlOp::Requeue, words(&["7", "8_1"]), true))
        );
        assert_eq!(
            requeue_request(true, &words(&["7"])),
            Ok((v1::ControlOp::RequeueHold, words(&["7"]), false))
        );
        assert_eq!(
            requeue_request(true, &words(&["state=Bogus", "7"])),
            Err("Invalid state specification Bogus".to_string())
        );
    }

    #[test]
    fn interactive_words() {
        assert_eq!(
            words::split_words("update NodeName=n1 Reason=\"a b\"", false),
            ["update", "NodeName=n1", "Reason=a b"]
        );
        assert_eq!(job_id_args("JobId=12").unwrap(), ["12"]);
        assert_eq!(job_id_args("12,13").unwrap(), ["12", "13"]);
        assert_eq!(job_id_args("1x").unwrap_err(), "1x");
        assert_eq!(job_id_args("job=7_2").unwrap(), ["7_2"]);
        // Multi-byte characters are a bad id, not a panic.
        assert_eq!(job_id_args("aéé").unwrap_err(), "aéé");
        assert_eq!(job_id_args("jobé=1").unwrap_err(), "jobé=1");
        assert!(!kw("jé", "jobs", 1));
    }
}
