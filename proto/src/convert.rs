//! The one mapping between wire messages and domain types.

use crate::v1;
use model::mail::MailType;
use model::{
    Allocation, ArraySpec, GpuDevice, Job, JobPayload, JobSpec, JobState, Node, NodeAlloc,
    NodeHealth, NodeState, SignalSpec, Time,
};

pub fn state_to_wire(s: JobState) -> v1::JobState {
    match s {
        JobState::Pending => v1::JobState::Pending,
        JobState::Running => v1::JobState::Running,
        JobState::Suspended => v1::JobState::Suspended,
        JobState::Completing => v1::JobState::Completing,
        JobState::Completed => v1::JobState::Completed,
        JobState::Failed => v1::JobState::Failed,
        JobState::Cancelled => v1::JobState::Cancelled,
        JobState::Timeout => v1::JobState::Timeout,
        JobState::NodeFail => v1::JobState::NodeFail,
        JobState::OutOfMemory => v1::JobState::OutOfMemory,
        JobState::Preempted => v1::JobState::Preempted,
        JobState::Requeued => v1::JobState::Requeued,
        JobState::BootFail => v1::JobState::BootFail,
        JobState::Deadline => v1::JobState::Deadline,
        JobState::SpecialExit => v1::JobState::SpecialExit,
    }
}

pub fn state_from_wire(s: v1::JobState) -> JobState {
    match s {
        v1::JobState::Pending => JobState::Pending,
        v1::JobState::Running => JobState::Running,
        v1::JobState::Suspended => JobState::Suspended,
        v1::JobState::Completing => JobState::Completing,
        v1::JobState::Completed => JobState::Completed,
        v1::JobState::Failed => JobState::Failed,
        v1::JobState::Cancelled => JobState::Cancelled,
        v1::JobState::Timeout => JobState::Timeout,
        v1::JobState::NodeFail => JobState::NodeFail,
        v1::JobState::OutOfMemory => JobState::OutOfMemory,
        v1::JobState::Preempted => JobState::Preempted,
        v1::JobState::Requeued => JobState::Requeued,
        v1::JobState::BootFail => JobState::BootFail,
        v1::JobState::Deadline => JobState::Deadline,
        v1::JobState::SpecialExit => JobState::SpecialExit,
    }
}

/// A mail type number this side does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mail type {0}")]
pub struct UnknownMailType(pub i32);

fn mail_type_from_wire(n: i32) -> Result<MailType, UnknownMailType> {
    use v1::MailType as W;
    Ok(match W::try_from(n).map_err(|_| UnknownMailType(n))? {
        W::Begin => MailType::Begin,
        W::End => MailType::End,
        W::Fail => MailType::Fail,
        W::Requeue => MailType::Requeue,
        W::InvalidDepend => MailType::InvalidDepend,
        W::StageOut => MailType::StageOut,
        W::TimeLimit => MailType::TimeLimit,
        W::TimeLimit90 => MailType::TimeLimit90,
        W::TimeLimit80 => MailType::TimeLimit80,
        W::TimeLimit50 => MailType::TimeLimit50,
        W::ArrayTasks => MailType::ArrayTasks,
    })
}

/// A mail type on the wire.
pub fn mail_type_to_wire(t: MailType) -> v1::MailType {
    use v1::MailType as W;
    match t {
        MailType::Begin => W::Begin,
        MailType::End => W::End,
        MailType::Fail => W::Fail,
        MailType::Requeue => W::Requeue,
        MailType::InvalidDepend => W::InvalidDepend,
        MailType::StageOut => W::StageOut,
        MailType::TimeLimit => W::TimeLimit,
        MailType::TimeLimit90 => W::TimeLimit90,
        MailType::TimeLimit80 => W::TimeLimit80,
        MailType::TimeLimit50 => W::TimeLimit50,
        MailType::ArrayTasks => W::ArrayTasks,
    }
}

/// A task resource limit on the wire.
pub fn rlimit_to_wire(r: model::step::Rlimit) -> v1::RlimitKind {
    use model::step::Rlimit as R;
    use v1::RlimitKind as W;
    match r {
        R::Cpu => W::Cpu,
        R::Fsize => W::Fsize,
        R::Data => W::Data,
        R::Stack => W::Stack,
        R::Core => W::Core,
        R::Rss => W::Rss,
        R::Nproc => W::Nproc,
        R::Nofile => W::Nofile,
        R::Memlock => W::Memlock,
        R::As => W::As,
    }
}

/// A task resource limit from the wire; `None` for one unset or unknown.
pub fn rlimit_from_wire(kind: i32) -> Option<model::step::Rlimit> {
    model::step::Rlimit::ALL
        .into_iter()
        .find(|r| rlimit_to_wire(*r) as i32 == kind)
}

/// Wire spec → domain spec and payload (script and environment); a mail type this
/// side does not know is refused.
pub fn spec_from_wire(w: v1::JobSpec) -> Result<(JobSpec, JobPayload), UnknownMailType> {
    let mut mail_types = w
        .mail_types
        .iter()
        .map(|&n| mail_type_from_wire(n))
        .collect::<Result<Vec<MailType>, _>>()?;
    mail_types.sort_unstable();
    mail_types.dedup();
    let payload = JobPayload {
        script: w.script,
        env: w.env.into_iter().map(|e| (e.name, e.value)).collect(),
    };
    let spec = JobSpec {
        name: w.name,
        uid: w.uid,
        gid: w.gid,
        user: w.user,
        account: w.account,
        partition: w.partition,
        more_partitions: w.more_partitions,
        qos: w.qos,
        script_args: w.script_args,
        work_dir: w.work_dir,
        stdout_pattern: w.stdout_pattern,
        stderr_pattern: w.stderr_pattern,
        stdin_path: w.stdin_path,
        open_mode_append: w.open_mode_append,
        num_nodes: w.num_nodes,
        max_nodes: w.max_nodes,
        num_tasks: w.num_tasks,
        cpus_per_task: w.cpus_per_task,
        ntasks_per_node: w.ntasks_per_node,
        mem_per_node_mb: w.mem_per_node_mb,
        mem_per_cpu_mb: w.mem_per_cpu_mb,
        mem_whole_node: w.mem_whole_node,
        gpus: w.gpus,
        gpus_per_node: w.gpus_per_node,
        gpu_type: w.gpu_type,
        time_limit_min: (w.time_limit_min > 0).then_some(w.time_limit_min),
        signal: w.signal.map(|s| SignalSpec {
            signal: s.signal,
            seconds_before_end: s.seconds_before_end,
            batch_only: s.batch_only,
        }),
        requeue: w.requeue,
        comment: w.comment,
        wckey: w.wckey,
        begin_time: w.begin_time,
        hold: w.hold,
        dependency: w.dependency,
        array: w.array.map(|a| ArraySpec {
            task_ids: a.task_ids,
            max_running: a.max_running,
        }),
        submit_host: w.submit_host,
        reservation: w.reservation,
        constraint: w.constraint,
        nodelist: w.nodelist,
        exclude: w.exclude,
        exclusive: w.exclusive,
        nice: w.nice,
        priority: w.priority,
        site_factor: w.site_factor,
        interactive: w.interactive,
        kill_on_invalid_dep: w.kill_on_invalid_dep,
        command: w.command,
        mail_types,
        mail_user: w.mail_user,
        details: w.details.map(details_from_wire).unwrap_or_default(),
    };
    Ok((spec, payload))
}

fn details_from_wire(d: v1::RequestDetails) -> model::job::RequestDetails {
    model::job::RequestDetails {
        min_cpus_node: d.min_cpus_node,
        tmp_disk_mb: d.tmp_disk_mb,
        oversubscribe: d.oversubscribe,
        contiguous: d.contiguous,
        gpus_per_job: d.gpus_per_job,
        gpus_per_task: d.gpus_per_task,
        gpus_per_socket: d.gpus_per_socket,
        cpus_per_gpu: d.cpus_per_gpu,
        mem_per_gpu_mb: d.mem_per_gpu_mb,
        gpu_bind: d.gpu_bind,
        gpu_freq: d.gpu_freq,
        deadline: d.deadline,
        time_min: d.time_min,
        overcommit: d.overcommit,
    }
}

fn details_to_wire(d: &model::job::RequestDetails) -> v1::RequestDetails {
    v1::RequestDetails {
        min_cpus_node: d.min_cpus_node,
        tmp_disk_mb: d.tmp_disk_mb,
        oversubscribe: d.oversubscribe,
        contiguous: d.contiguous,
        gpus_per_job: d.gpus_per_job,
        gpus_per_task: d.gpus_per_task,
        gpus_per_socket: d.gpus_per_socket,
        cpus_per_gpu: d.cpus_per_gpu,
        mem_per_gpu_mb: d.mem_per_gpu_mb,
        gpu_bind: d.gpu_bind.clone(),
        gpu_freq: d.gpu_freq.clone(),
        deadline: d.deadline,
        time_min: d.time_min,
        overcommit: d.overcommit,
    }
}

/// Domain spec (+ payload when known) → wire spec.
pub fn spec_to_wire(s: &JobSpec, payload: Option<&JobPayload>) -> v1::JobSpec {
    v1::JobSpec {
        name: s.name.clone(),
        uid: s.uid,
        gid: s.gid,
        user: s.user.clone(),
        account: s.account.clone(),
        partition: s.partition.clone(),
        more_partitions: s.more_partitions.clone(),
        qos: s.qos.clone(),
        script: payload.map(|p| p.script.clone()).unwrap_or_default(),
        script_args: s.script_args.clone(),
        work_dir: s.work_dir.clone(),
        env: payload
            .map(|p| {
                p.env
                    .iter()
                    .map(|(n, v)| v1::EnvVar {
                        name: n.clone(),
                        value: v.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        stdout_pattern: s.stdout_pattern.clone(),
        stderr_pattern: s.stderr_pattern.clone(),
        stdin_path: s.stdin_path.clone(),
        open_mode_append: s.open_mode_append,
        num_nodes: s.num_nodes,
        max_nodes: s.max_nodes,
        num_tasks: s.num_tasks,
        cpus_per_task: s.cpus_per_task,
        ntasks_per_node: s.ntasks_per_node,
        mem_per_node_mb: s.mem_per_node_mb,
        mem_per_cpu_mb: s.mem_per_cpu_mb,
        mem_whole_node: s.mem_whole_node,
        gpus: s.gpus,
        gpus_per_node: s.gpus_per_node,
        gpu_type: s.gpu_type.clone(),
        time_limit_min: s.time_limit_min.unwrap_or(0),
        signal: s.signal.as_ref().map(|g| v1::SignalSpec {
            signal: g.signal,
            seconds_before_end: g.seconds_before_end,
            batch_only: g.batch_only,
        }),
        requeue: s.requeue,
        comment: s.comment.clone(),
        wckey: s.wckey.clone(),
        begin_time: s.begin_time,
        hold: s.hold,
        dependency: s.dependency.clone(),
        array: s.array.as_ref().map(|a| v1::ArraySpec {
            task_ids: a.task_ids.clone(),
            max_running: a.max_running,
        }),
        submit_host: s.submit_host.clone(),
        reservation: s.reservation.clone(),
        constraint: s.constraint.clone(),
        nodelist: s.nodelist.clone(),
        exclude: s.exclude.clone(),
        exclusive: s.exclusive,
        nice: s.nice,
        priority: s.priority,
        site_factor: s.site_factor,
        interactive: s.interactive,
        kill_on_invalid_dep: s.kill_on_invalid_dep,
        command: s.command.clone(),
        mail_types: s
            .mail_types
            .iter()
            .map(|&t| mail_type_to_wire(t) as i32)
            .collect(),
        mail_user: s.mail_user.clone(),
        details: Some(details_to_wire(&s.details)),
    }
}

/// A job as clients see it at `now`.
pub fn job_to_wire(j: &Job, payload: Option<&JobPayload>, now: Time) -> v1::JobInfo {
    let alloc = j.alloc.as_ref();
    let spec = &j.spec;
    let (cpus, mem, gpus) = match alloc {
        Some(a) => (a.cpus(), a.mem_mb(), a.gpus()),
        None => {
            let cpus = spec.total_cpus();
            let mem = if spec.mem_per_cpu_mb > 0 {
                spec.mem_per_cpu_mb * u64::from(cpus)
            } else {
                spec.mem_per_node_mb * u64::from(spec.num_nodes.max(1))
            };
            (
                cpus,
                mem,
                spec.gpus.max(spec.gpus_per_node * spec.num_nodes.max(1)),
            )
        }
    };
    let mut wire_spec = spec_to_wire(spec, payload);
    wire_spec.time_limit_min = j.time_limit_min.unwrap_or(0);
    // What listings show: a pending job's every partition, as Slurm's list.
    if j.is_pending() && !spec.more_partitions.is_empty() {
        wire_spec.partition = j.partition_shown().into_owned();
        wire_spec.more_partitions.clear();
    }
    let batch_host = alloc
        .and_then(|a| a.nodes.first())
        .map(|n| n.node.as_str())
        .unwrap_or_default();
    // Resolved when the job started; until then, what its patterns would give.
    let (stdout_path, stderr_path) = if j.stdout_path.is_empty() {
        model::pattern::batch_output_paths(j, batch_host)
    } else {
        (j.stdout_path.clone(), j.stderr_path.clone())
    };
    v1::JobInfo {
        job_id: j.id,
        array_job_id: j.array_job_id,
        array_task_id: j.array_task_id,
        array_task_str: if j.is_array_meta() {
            j.pending_tasks_str()
        } else {
            String::new()
        },
        state: state_to_wire(j.shown_state()) as i32,
        reason: j.reason.name().to_string(),
        submit_time: j.submit_time,
        eligible_time: j.eligible_time,
        start_time: j.start_time,
        end_time: j.end_time,
        nodes: alloc.map(Allocation::hostlist).unwrap_or_default(),
        num_nodes: alloc
            .map(|a| a.nodes.len() as u32)
            .unwrap_or(spec.num_nodes.max(1)),
        num_cpus: cpus,
        mem_mb: mem,
        num_gpus: gpus,
        exit_code: j.exit_code,
        exit_signal: j.exit_signal,
        priority: 0,
        cancelled_by: j.cancelled_by,
        restart_count: j.restart_count,
        batch_host: batch_host.to_string(),
        planned_start: j.planned_start,
        stdout_path,
        stderr_path,
        spec: Some(wire_spec),
        steps: j
            .steps
            .iter()
            .map(|s| v1::StepInfo {
                step_id: s
                    .id
                    .map(|i| i.to_string())
                    .unwrap_or_else(|| "batch".into()),
                name: s.name.clone(),
                state: state_to_wire(s.state) as i32,
                start_time: s.start_time,
                end_time: s.end_time,
                exit_code: s.exit_code,
                exit_signal: s.exit_signal,
                // Steps recorded before they kept their own nodes and CPUs: the
                // batch step's node, or the allocation.
                nodes: if !s.nodes.is_empty() {
                    model::hostlist::fold(&s.nodes)
                } else if s.id.is_none() {
                    alloc
                        .and_then(|a| a.nodes.first())
                        .map(|n| n.node.clone())
                        .unwrap_or_default()
                } else {
                    alloc.map(Allocation::hostlist).unwrap_or_default()
                },
                num_tasks: s.num_tasks,
                num_cpus: if s.cpus > 0 {
                    s.cpus
                } else if s.id.is_none() {
                    alloc
                        .and_then(|a| a.nodes.first())
                        .map(|n| n.cpus)
                        .unwrap_or(0)
                } else {
                    cpus
                },
                usage: s.usage.as_ref().map(usage_to_wire),
                time_limit_min: s.time_limit_min,
                gpu_request: Some(step_gpu_request_to_wire(&s.gpu_request)),
            })
            .collect(),
        suspend_time: j.suspend_time,
        suspended_secs: j.suspended_secs,
        gres_detail: alloc
            .map(|a| {
                a.nodes
                    .iter()
                    .filter(|n| !n.gpus.is_empty())
                    .map(|n| {
                        let ids: Vec<u32> = n.gpus.clone();
                        format!(
                            "gpu:{}(IDX:{})",
                            n.gpus.len(),
                            model::job::format_ranges(&ids)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default(),
        planned_nodes: j.planned_nodes.clone(),
        node_detail: alloc.map(node_detail).unwrap_or_default(),
        run_secs: j.run_secs(now),
        time_left_secs: j.time_left(now),
        expected_end: j.expected_end().unwrap_or(0),
        // Set by the controller's listing, which knows the guarantees.
        borrowed: String::new(),
        gpu_idle_flagged: j.gpu_idle_flagged.unwrap_or(0),
        cancelling: matches!(
            j.kill,
            Some(model::KillRequest {
                cause: model::KillCause::Cancel { .. },
                ..
            })
        ),
        het: j.het.map(het_to_wire),
        notices: j.notices.latest.clone(),
        notice_count: j.notices.count,
        derived_exit_status: j.derived_exit_status,
    }
}

pub fn het_to_wire(h: model::job::HetJob) -> v1::HetJob {
    v1::HetJob {
        leader: h.leader,
        offset: h.offset,
        count: h.count,
    }
}

pub fn het_from_wire(h: v1::HetJob) -> model::job::HetJob {
    model::job::HetJob {
        leader: h.leader,
        offset: h.offset,
        count: h.count,
    }
}

/// `Nodes=n1 CPU_IDs=0-3 Mem=1024 GRES=gpu:2(IDX:0-1)` per node, as `scontrol -d`.
fn node_detail(alloc: &Allocation) -> String {
    alloc
        .nodes
        .iter()
        .map(|n| {
            let mut line = format!(
                "Nodes={} CPU_IDs={} Mem={}",
                n.node,
                model::job::format_ranges(&n.cpu_ids),
                n.mem_mb
            );
            if !n.gpus.is_empty() {
                line.push_str(&format!(
                    " GRES=gpu:{}(IDX:{})",
                    n.gpus.len(),
                    model::job::format_ranges(&n.gpus)
                ));
            }
            line
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The strings of a `ListJobsReply` in summary form, each kept once; summaries name
/// them by index.
#[derive(Debug, Default)]
pub struct StringTable<'a> {
    /// FxHash: short strings (names, users, partitions) hash in a few instructions,
    /// where the default SipHash dominated a 100k-job reply.
    index: rustc_hash::FxHashMap<&'a str, u32>,
    /// Strings met lately, in slots by length and first byte: a queue's jobs mostly
    /// repeat a few users, accounts, partitions and reasons, and a hit here costs one
    /// comparison instead of a hash and a probe.
    recent: [Option<(&'a str, u32)>; 16],
    /// Strings made for the reply rather than borrowed from the jobs (a pending job's
    /// partition list).
    owned: rustc_hash::FxHashMap<String, u32>,
    /// Strings interned since the last `take_new`.
    new: Vec<String>,
}

impl<'a> StringTable<'a> {
    /// The index of `s`, added on first use.
    pub fn intern(&mut self, s: &'a str) -> u32 {
        let slot = (s.len() + usize::from(s.as_bytes().first().copied().unwrap_or(0))) % 16;
        if let Some((seen, i)) = self.recent[slot]
            && seen == s
        {
            return i;
        }
        let i = match self.index.get(s) {
            Some(&i) => i,
            None => {
                let i = self.len();
                self.new.push(s.to_string());
                self.index.insert(s, i);
                i
            }
        };
        self.recent[slot] = Some((s, i));
        i
    }

    /// The index of `s`, borrowed or made for the reply, added on first use.
    pub fn intern_cow(&mut self, s: std::borrow::Cow<'a, str>) -> u32 {
        match s {
            std::borrow::Cow::Borrowed(s) => self.intern(s),
            std::borrow::Cow::Owned(s) => {
                if let Some(&i) = self.index.get(s.as_str()).or(self.owned.get(&s)) {
                    return i;
                }
                let i = self.len();
                self.new.push(s.clone());
                self.owned.insert(s, i);
                i
            }
        }
    }

    fn len(&self) -> u32 {
        (self.index.len() + self.owned.len()) as u32
    }

    /// The strings interned since the last call, in index order.
    pub fn take_new(&mut self) -> Vec<String> {
        std::mem::take(&mut self.new)
    }
}

/// A job as squeue's light view sees it (`JobSummary`) at `now`; `priority` is left 0.
pub fn job_to_summary<'a>(j: &'a Job, strings: &mut StringTable<'a>, now: Time) -> v1::JobSummary {
    let alloc = j.alloc.as_ref();
    let spec = &j.spec;
    v1::JobSummary {
        job_id: j.id,
        array_job_id: j.array_job_id,
        array_task_id: j.array_task_id,
        array_task_str: if j.is_array_meta() {
            j.pending_tasks_str()
        } else {
            String::new()
        },
        state: state_to_wire(j.shown_state()) as i32,
        reason: strings.intern(j.reason.name()),
        submit_time: j.submit_time,
        start_time: j.start_time,
        end_time: j.end_time,
        suspend_time: j.suspend_time,
        suspended_secs: j.suspended_secs,
        planned_start: j.planned_start,
        nodes: alloc.map(Allocation::hostlist).unwrap_or_default(),
        num_nodes: alloc
            .map(|a| a.nodes.len() as u32)
            .unwrap_or(spec.num_nodes.max(1)),
        num_cpus: alloc.map_or_else(|| spec.total_cpus(), Allocation::cpus),
        priority: 0,
        name: strings.intern(&spec.name),
        user: strings.intern(&spec.user),
        uid: spec.uid,
        gid: spec.gid,
        account: strings.intern(&spec.account),
        partition: strings.intern_cow(j.partition_shown()),
        qos: strings.intern(&spec.qos),
        time_limit_min: j.time_limit_min.unwrap_or(0),
        reservation: strings.intern(&spec.reservation),
        nice: spec.nice,
        planned_nodes: j.planned_nodes.clone(),
        run_secs: j.run_secs(now),
        time_left_secs: j.time_left(now),
        expected_end: j.expected_end().unwrap_or(0),
        het: j.het.map(het_to_wire),
    }
}

/// The filter of a listing: its filter's parts and the `sacct -S/-E` window.
pub fn listing_filter_from_wire(
    req: &v1::ListJobsRequest,
) -> Result<model::filter::JobFilter, String> {
    let mut filter = match &req.filter {
        Some(f) => filter_from_wire(f)?,
        None => model::filter::JobFilter::default(),
    };
    filter.window_start = req.window_start;
    filter.window_end = req.window_end;
    filter.window_rule = window_rule_from_wire(req.window_rule)?;
    Ok(filter)
}

pub fn window_rule_to_wire(r: model::filter::WindowRule) -> v1::WindowRule {
    use model::filter::WindowRule as R;
    match r {
        R::Submitted => v1::WindowRule::Submitted,
        R::Eligible => v1::WindowRule::Eligible,
        R::InStates => v1::WindowRule::InStates,
    }
}

/// A window rule's number; one this side does not know is refused.
pub fn window_rule_from_wire(n: i32) -> Result<model::filter::WindowRule, String> {
    use model::filter::WindowRule as R;
    match v1::WindowRule::try_from(n) {
        Ok(v1::WindowRule::Submitted) => Ok(R::Submitted),
        Ok(v1::WindowRule::Eligible) => Ok(R::Eligible),
        Ok(v1::WindowRule::InStates) => Ok(R::InStates),
        Err(_) => Err(format!("unknown window rule {n}")),
    }
}

/// A listing's or a bulk command's filter: ids that are no job id, state numbers this
/// side does not know and names that are no reason are refused.
pub fn filter_from_wire(f: &v1::JobFilter) -> Result<model::filter::JobFilter, String> {
    let ids = f
        .job_ids
        .iter()
        .map(|text| {
            model::job_id::JobIdSpec::parse(text)
                .map_err(|_| format!("Invalid job id specified: {text}"))
        })
        .collect::<Result<_, _>>()?;
    Ok(model::filter::JobFilter {
        ids,
        users: f.users.clone(),
        names: f.names.clone(),
        partitions: f.partitions.clone(),
        accounts: f.accounts.clone(),
        qos: f.qos.clone(),
        reservations: f.reservations.clone(),
        states: f
            .states
            .iter()
            .map(|&n| {
                v1::JobState::try_from(n)
                    .map(state_from_wire)
                    .map_err(|_| format!("Invalid job state specified: {n}"))
            })
            .collect::<Result<_, _>>()?,
        nodes: if f.nodes.is_empty() {
            Vec::new()
        } else {
            model::hostlist::expand(&f.nodes).map_err(|e| e.to_string())?
        },
        wckeys: f.wckeys.clone(),
        reasons: model::filter::JobFilter::parse_reasons(&f.reasons)?,
        gids: f.gids.clone(),
        ..Default::default()
    })
}

pub fn gpu_to_wire(g: &GpuDevice) -> v1::GpuDevice {
    v1::GpuDevice {
        index: g.index,
        gpu_type: g.gpu_type.clone(),
        uuid: g.uuid.clone(),
        numa: g.numa,
        nvlink: g.nvlink,
        whole: g.whole,
    }
}

pub fn gpu_from_wire(g: v1::GpuDevice) -> GpuDevice {
    GpuDevice {
        index: g.index,
        gpu_type: g.gpu_type,
        uuid: g.uuid,
        numa: g.numa,
        nvlink: g.nvlink,
        whole: g.whole,
    }
}

/// The CPU ids of each NUMA node (by NUMA node id) on the wire.
pub fn numa_cpus_to_wire(numa_cpus: &[Vec<u32>]) -> Vec<v1::NumaCpus> {
    (0u32..)
        .zip(numa_cpus)
        .filter(|(_, cpus)| !cpus.is_empty())
        .map(|(numa, cpus)| v1::NumaCpus {
            numa,
            cpus: cpus.clone(),
        })
        .collect()
}

/// The CPU ids of each NUMA node, by NUMA node id, sorted; refused when a CPU is on
/// two NUMA nodes or a NUMA id is absurd (at most 1,024, as Linux's `MAX_NUMNODES`).
pub fn numa_cpus_from_wire(nodes: Vec<v1::NumaCpus>) -> Result<Vec<Vec<u32>>, String> {
    const MAX_NUMA_NODES: u32 = 1024;
    let mut out: Vec<Vec<u32>> = Vec::new();
    for n in nodes {
        if n.numa >= MAX_NUMA_NODES {
            return Err(format!("NUMA node {} out of range", n.numa));
        }
        if out.len() <= n.numa as usize {
            out.resize(n.numa as usize + 1, Vec::new());
        }
        out[n.numa as usize].extend(n.cpus);
    }
    let mut seen = std::collections::BTreeSet::new();
    for cpus in &mut out {
        cpus.sort_unstable();
        cpus.dedup();
        if let Some(cpu) = cpus.iter().find(|c| !seen.insert(**c)) {
            return Err(format!("CPU {cpu} is on more than one NUMA node"));
        }
    }
    Ok(out)
}

fn health_to_wire(h: NodeHealth) -> v1::NodeHealth {
    match h {
        NodeHealth::Unknown => v1::NodeHealth::Unknown,
        NodeHealth::Up => v1::NodeHealth::Up,
        NodeHealth::Down => v1::NodeHealth::Down,
    }
}

fn alloc_to_wire(a: NodeAlloc) -> v1::NodeAllocation {
    match a {
        NodeAlloc::Idle => v1::NodeAllocation::Idle,
        NodeAlloc::Mixed => v1::NodeAllocation::Mixed,
        NodeAlloc::Allocated => v1::NodeAllocation::Allocated,
    }
}

/// A node state number this side does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("node {node}: unknown {what} {value} from the controller")]
pub struct UnknownNodeState {
    pub node: String,
    pub what: &'static str,
    pub value: i32,
}

/// A node's state from its wire parts; a number this side does not know is an error.
pub fn node_state_from_wire(n: &v1::NodeInfo) -> Result<NodeState, UnknownNodeState> {
    let unknown = |what, value| UnknownNodeState {
        node: n.name.clone(),
        what,
        value,
    };
    let health = match v1::NodeHealth::try_from(n.health) {
        Ok(v1::NodeHealth::Unknown) => NodeHealth::Unknown,
        Ok(v1::NodeHealth::Up) => NodeHealth::Up,
        Ok(v1::NodeHealth::Down) => NodeHealth::Down,
        Err(_) => return Err(unknown("health", n.health)),
    };
    let alloc = match v1::NodeAllocation::try_from(n.allocation) {
        Ok(v1::NodeAllocation::Idle) => NodeAlloc::Idle,
        Ok(v1::NodeAllocation::Mixed) => NodeAlloc::Mixed,
        Ok(v1::NodeAllocation::Allocated) => NodeAlloc::Allocated,
        Err(_) => return Err(unknown("allocation", n.allocation)),
    };
    Ok(NodeState {
        health,
        drain: n.drain,
        responding: n.responding,
        alloc,
    })
}

/// A node as clients see it, given what is allocated on it, its partitions and its
/// config entry's TmpDisk.
pub fn node_to_wire(
    n: &Node,
    usage: &model::NodeUsage,
    partitions: Vec<String>,
    declared: model::node::DeclaredHardware,
) -> v1::NodeInfo {
    let state = n.state(usage.cpus, usage.jobs);
    v1::NodeInfo {
        tmp_disk_mb: declared.tmp_disk_mb,
        layout: Some(layout_to_wire(declared.layout)),
        name: n.name.clone(),
        addr: n.addr.clone(),
        health: health_to_wire(state.health) as i32,
        drain: state.drain,
        responding: state.responding,
        allocation: alloc_to_wire(state.alloc) as i32,
        reason: n.reason.clone(),
        cpus: n.cpus,
        cpus_alloc: usage.cpus,
        memory_mb: n.memory_mb,
        memory_alloc_mb: usage.mem_mb,
        gpus: n.gpus.len() as u32,
        gpus_alloc: usage.gpus.len() as u32,
        gpu_type: n.gpu_type().to_string(),
        gres: n
            .gpus_by_type(&usage.gpus)
            .into_iter()
            .map(|(gpu_type, count, alloc)| v1::GpuGres {
                gpu_type: gpu_type.to_string(),
                count,
                alloc,
            })
            .collect(),
        partitions,
        boot_time: n.boot_time,
        last_heartbeat: n.last_heartbeat,
        reason_time: n.reason_time,
        reason_uid: n.reason_uid,
        features: n.features.clone(),
        load: n.load.map(load_to_wire),
    }
}

pub fn layout_to_wire(l: model::node::SocketLayout) -> v1::SocketLayout {
    v1::SocketLayout {
        sockets: l.sockets,
        cores_per_socket: l.cores_per_socket,
        threads_per_core: l.threads_per_core,
    }
}

/// A listed node's processor layout; its CPUs as one-core sockets where the reply has
/// none or an empty one.
pub fn layout_from_wire(n: &v1::NodeInfo) -> model::node::SocketLayout {
    match n.layout {
        Some(l) if l.sockets > 0 && l.cores_per_socket > 0 && l.threads_per_core > 0 => {
            model::node::SocketLayout {
                sockets: l.sockets,
                cores_per_socket: l.cores_per_socket,
                threads_per_core: l.threads_per_core,
            }
        }
        _ => model::node::SocketLayout::of_cpus(n.cpus),
    }
}

pub fn load_to_wire(l: model::node::NodeLoad) -> v1::NodeLoad {
    v1::NodeLoad {
        free_mem_mb: l.free_mem_mb,
        cpu_load_centi: l.cpu_load_centi,
    }
}

pub fn load_from_wire(l: v1::NodeLoad) -> model::node::NodeLoad {
    model::node::NodeLoad {
        free_mem_mb: l.free_mem_mb,
        cpu_load_centi: l.cpu_load_centi,
    }
}

/// The configured priority weights, as `sprio -w` shows them.
pub fn weights_to_wire(p: &model::config::PriorityConfig) -> v1::PriorityWeights {
    let weights = model::tres::parse_weights(&p.weight_tres).unwrap_or_default();
    v1::PriorityWeights {
        priority_type: p.kind.clone(),
        age: p.weight_age,
        fairshare: p.weight_fairshare,
        job_size: p.weight_job_size,
        partition: p.weight_partition,
        qos: p.weight_qos,
        assoc: p.weight_assoc,
        tres: p.weight_tres.clone(),
        tres_weights: model::tres::sorted_names(&weights)
            .into_iter()
            .map(|name| v1::TresValue {
                name: name.to_string(),
                value: weights[name],
            })
            .collect(),
    }
}

/// `scontrol show config`: the settings with Slurm's key names, in Slurm's order, and
/// the values as Slurm prints them (`SlurmdTimeout = 30 sec`, `PriorityMaxAge =
/// 7-00:00:00`, `SchedulerType = sched/backfill` for the backfilling policies).
pub fn config_to_wire(config: &model::Config) -> v1::GetConfigReply {
    let c = &config.controller;
    let p = &config.priority;
    // Slurm's secs2time_str: `00:05:00`, `7-00:00:00`.
    let duration = |text: &str, default: &str| match model::units::parse_duration_secs(text) {
        Ok(Some(s)) => model::units::format_elapsed(s),
        _ => default.to_string(),
    };
    let scheduler = if config.scheduler.policy == "fcfs" {
        "sched/builtin"
    } else {
        "sched/backfill"
    };
    let priority = if p.kind == "basic" {
        "priority/basic"
    } else {
        "priority/multifactor"
    };
    // Node daemons confine jobs in cgroups (where root and cgroups allow) unless off.
    let cgroups = config.cgroup.mode == model::config::CgroupMode::Auto;
    let entries = [
        // The controller keeps accounting itself, where Slurm has slurmdbd: tools
        // (and Slurm's own tests) ask this key whether accounting is there.
        (
            "AccountingStorageTRES",
            model::tres::tracked(&config.node_list()).join(","),
        ),
        (
            "AccountingStorageType",
            "accounting_storage/slurmdbd".into(),
        ),
        // No core or thread specialization: jobs cannot ask for spec resources.
        ("AllowSpecResourcesUsage", "No".into()),
        (
            "AuthInfo",
            format!(
                "socket={},ttl={}",
                config.auth.socket, config.auth.credential_ttl_s
            ),
        ),
        ("AuthType", "auth/drover".into()),
        ("ClusterName", config.cluster_name.clone()),
        // A job's and a step's usage comes from their cgroups (sacct, sstat).
        (
            "JobAcctGatherType",
            if cgroups {
                "jobacct_gather/cgroup"
            } else {
                "jobacct_gather/none"
            }
            .into(),
        ),
        ("KillWait", format!("{} sec", c.kill_wait_s)),
        // srun starts a step's tasks through the nodes' daemons itself.
        ("LaunchType", "launch/slurm".into()),
        ("MaxArraySize", c.max_array_size.to_string()),
        ("MaxJobCount", c.max_job_count.to_string()),
        // Slurm's default, reported for the tools that read it; a step's tasks per
        // node are not counted against it (docs/controller.md).
        ("MaxTasksPerNode", "512".into()),
        ("MinJobAge", format!("{} sec", c.min_job_age_s)),
        // Node features are set in the config or by scontrol; no plugin changes them.
        ("NodeFeaturesPlugins", "(null)".into()),
        // A job is killed at its time limit, never later.
        ("OverTimeLimit", "0 min".into()),
        (
            "PriorityDecayHalfLife",
            duration(&p.decay_half_life, "7-00:00:00"),
        ),
        ("PriorityMaxAge", duration(&p.max_age, "7-00:00:00")),
        ("PriorityType", priority.into()),
        ("PriorityWeightAge", p.weight_age.to_string()),
        ("PriorityWeightAssoc", p.weight_assoc.to_string()),
        ("PriorityWeightFairshare", p.weight_fairshare.to_string()),
        ("PriorityWeightJobSize", p.weight_job_size.to_string()),
        ("PriorityWeightPartition", p.weight_partition.to_string()),
        ("PriorityWeightQOS", p.weight_qos.to_string()),
        ("PriorityWeightTRES", p.weight_tres.clone()),
        ("PrivateData", private_data(&c.private_data)),
        // Node daemons find a job's processes through its cgroups (unless they are
        // turned off, when the tasks' process groups are what they signal).
        (
            "ProctrackType",
            if cgroups {
                "proctrack/cgroup"
            } else {
                "proctrack/pgid"
            }
            .into(),
        ),
        // Steps and batch scripts start with the submitting command's soft limits
        // (srun's launch, sbatch's SLURM_RLIMIT_* variables).
        ("PropagateResourceLimits", "ALL".into()),
        ("PropagateResourceLimitsExcept", "(null)".into()),
        ("SchedulerType", scheduler.into()),
        ("SelectType", "select/cons_tres".into()),
        // CPUs and memory are what jobs take of a node.
        ("SelectTypeParameters", "CR_CPU_MEMORY".into()),
        ("SlurmctldHost[0]", c.addr.clone()),
        ("SlurmdTimeout", format!("{} sec", c.node_timeout_s)),
        // The node daemon runs as root, to start jobs as their users.
        ("SlurmdUser", "root(0)".into()),
        ("SLURM_VERSION", model::config::SLURM_VERSION.into()),
        ("StateSaveLocation", config.state_dir.clone()),
        // No interconnect switch plugin.
        ("SwitchType", "switch/none".into()),
        // Nodes are not placed by a network topology.
        ("TopologyPlugin", "topology/none".into()),
    ];
    v1::GetConfigReply {
        cluster_name: config.cluster_name.clone(),
        entries: entries
            .into_iter()
            .map(|(key, value)| v1::ConfigEntry {
                key: key.into(),
                value,
            })
            .collect(),
        // The controller names the file it read.
        config_file: String::new(),
    }
}

/// `PrivateData` as Slurm prints it: its words joined, or `none`.
fn private_data(words: &[model::config::PrivateData]) -> String {
    if words.is_empty() {
        return "none".into();
    }
    let words: Vec<&str> = words.iter().map(|w| w.name()).collect();
    words.join(",")
}

/// A job's priority factors.
pub fn factors_to_wire(f: &model::factors::Factors) -> v1::PriorityFactors {
    v1::PriorityFactors {
        job_id: f.job_id,
        partition: f.partition.clone(),
        user: f.user.clone(),
        uid: f.uid,
        account: f.account.clone(),
        qos: f.qos.clone(),
        priority: f.priority,
        age: f.age,
        fairshare: f.fairshare,
        job_size: f.job_size,
        partition_factor: f.partition_factor,
        qos_factor: f.qos_factor,
        assoc: f.assoc,
        tres: f
            .tres
            .iter()
            .map(|(name, value)| v1::TresValue {
                name: name.clone(),
                value: *value,
            })
            .collect(),
        nice: f.nice,
        site: f.site,
        tier: f.tier,
    }
}

/// One row of the fair-share tree.
pub fn share_to_wire(r: &model::factors::ShareRow) -> v1::ShareInfo {
    v1::ShareInfo {
        account: r.account.clone(),
        user: r.user.clone().unwrap_or_default(),
        parent: r.parent.clone().unwrap_or_default(),
        depth: r.depth,
        raw_shares: r.raw_shares,
        norm_shares: r.norm_shares,
        raw_usage: r.raw_usage,
        norm_usage: r.norm_usage,
        effective_usage: r.effective_usage,
        level_fs: r.level_fs,
        fairshare: r.fairshare,
        grp_tres_mins: model::tres::format_counts_raw(&r.grp_tres_mins),
        tres_run_mins: model::tres::format_counts_raw(&r.tres_run_mins),
    }
}

/// A step's GPU request on the wire.
pub fn step_gpu_request_to_wire(r: &model::StepGpuRequest) -> v1::StepGpuRequest {
    v1::StepGpuRequest {
        gpu_type: r.gpu_type.clone(),
        gpus: r.gpus,
        gpus_per_node: r.gpus_per_node,
        gpus_per_socket: r.gpus_per_socket,
        gpus_per_task: r.gpus_per_task,
        cpus_per_gpu: r.cpus_per_gpu,
        mem_per_gpu_mb: r.mem_per_gpu_mb,
        gpu_bind: r.gpu_bind.clone(),
        gpu_freq: r.gpu_freq.clone(),
    }
}

/// A step's task layout on the wire: the layout and its plane size.
pub fn task_layout_to_wire(layout: model::distribution::TaskLayout) -> (v1::TaskLayout, u32) {
    use model::distribution::TaskLayout as L;
    match layout {
        L::Block => (v1::TaskLayout::Block, 0),
        L::Cyclic => (v1::TaskLayout::Cyclic, 0),
        L::Plane(size) => (v1::TaskLayout::Plane, size),
        L::Pack => (v1::TaskLayout::Pack, 0),
    }
}

/// A step's task layout from the wire; an unknown layout or a plane of no task is
/// refused.
pub fn task_layout_from_wire(
    layout: i32,
    plane_size: u32,
) -> Result<model::distribution::TaskLayout, String> {
    use model::distribution::TaskLayout as L;
    match v1::TaskLayout::try_from(layout) {
        Ok(v1::TaskLayout::Block) => Ok(L::Block),
        Ok(v1::TaskLayout::Cyclic) => Ok(L::Cyclic),
        Ok(v1::TaskLayout::Plane) if plane_size > 0 => Ok(L::Plane(plane_size)),
        Ok(v1::TaskLayout::Pack) => Ok(L::Pack),
        Ok(v1::TaskLayout::Plane) => Err(model::distribution::INVALID.to_string()),
        Err(_) => Err(format!("unknown task layout {layout}")),
    }
}

/// A step's GPU request from the wire (absent: none asked).
pub fn step_gpu_request_from_wire(r: Option<v1::StepGpuRequest>) -> model::StepGpuRequest {
    let r = r.unwrap_or_default();
    model::StepGpuRequest {
        gpu_type: r.gpu_type,
        gpus: r.gpus,
        gpus_per_node: r.gpus_per_node,
        gpus_per_socket: r.gpus_per_socket,
        gpus_per_task: r.gpus_per_task,
        cpus_per_gpu: r.cpus_per_gpu,
        mem_per_gpu_mb: r.mem_per_gpu_mb,
        gpu_bind: r.gpu_bind,
        gpu_freq: r.gpu_freq,
    }
}

/// `scontrol create|update|delete partition`'s change on the wire: its name, then the
/// fields it sets.
pub fn partition_change_to_wire(
    c: &model::partition_change::PartitionChange,
) -> (String, Vec<v1::PartitionField>) {
    use model::partition_change::PartitionField as F;
    use v1::partition_field::Field as W;
    let time = |t: Option<u32>| v1::PartitionTime {
        limit: Some(match t {
            Some(m) => v1::partition_time::Limit::Minutes(m),
            None => v1::partition_time::Limit::Unlimited(true),
        }),
    };
    let names = |l: &[String]| v1::NameList { names: l.to_vec() };
    let fields = c
        .fields
        .iter()
        .map(|f| v1::PartitionField {
            field: Some(match f {
                F::Nodes(v) => W::Nodes(v.clone()),
                F::MaxTime(t) => W::MaxTime(time(*t)),
                F::DefaultTime(t) => W::DefaultTime(time(*t)),
                F::MaxNodes(n) => W::MaxNodes(*n),
                F::State(v) => W::State(partition_state_to_wire(*v) as i32),
                F::Default(d) => W::IsDefault(*d),
                F::PriorityJobFactor(n) => W::PriorityJobFactor(*n),
                F::PriorityTier(n) => W::PriorityTier(*n),
                F::AllowAccounts(l) => W::AllowAccounts(names(l)),
                F::DenyAccounts(l) => W::DenyAccounts(names(l)),
                F::AllowQos(l) => W::AllowQos(names(l)),
                F::DenyQos(l) => W::DenyQos(names(l)),
                F::AllowGroups(l) => W::AllowGroups(names(l)),
                F::OverSubscribe(v) => W::Oversubscribe(oversubscribe_to_wire(*v) as i32),
            }),
        })
        .collect();
    (c.name.clone(), fields)
}

/// A partition change from the wire. An empty or unknown field, a time that is
/// neither minutes nor UNLIMITED, and a state or OverSubscribe value Slurm does not
/// know are refused.
pub fn partition_change_from_wire(
    name: String,
    fields: Vec<v1::PartitionField>,
) -> Result<model::partition_change::PartitionChange, String> {
    use model::partition_change::PartitionField as F;
    use v1::partition_field::Field as W;
    let time = |t: v1::PartitionTime| match t.limit {
        Some(v1::partition_time::Limit::Minutes(m)) => Ok(Some(m)),
        Some(v1::partition_time::Limit::Unlimited(true)) => Ok(None),
        _ => Err("unknown partition time limit".to_string()),
    };
    let fields = fields
        .into_iter()
        .map(|f| {
            Ok(match f.field.ok_or("unknown partition field")? {
                W::Nodes(v) => F::Nodes(v),
                W::MaxTime(t) => F::MaxTime(time(t)?),
                W::DefaultTime(t) => F::DefaultTime(time(t)?),
                W::MaxNodes(n) => F::MaxNodes(n),
                W::State(v) => F::State(partition_state_from_wire(v)?),
                W::IsDefault(d) => F::Default(d),
                W::PriorityJobFactor(n) => F::PriorityJobFactor(n),
                W::PriorityTier(n) => F::PriorityTier(n),
                W::AllowAccounts(l) => F::AllowAccounts(l.names),
                W::DenyAccounts(l) => F::DenyAccounts(l.names),
                W::AllowQos(l) => F::AllowQos(l.names),
                W::DenyQos(l) => F::DenyQos(l.names),
                W::AllowGroups(l) => F::AllowGroups(l.names),
                W::Oversubscribe(v) => F::OverSubscribe(oversubscribe_from_wire(v)?),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(model::partition_change::PartitionChange { name, fields })
}

pub fn partition_state_to_wire(s: model::config::PartitionState) -> v1::PartitionState {
    use model::config::PartitionState as S;
    match s {
        S::Up => v1::PartitionState::Up,
        S::Down => v1::PartitionState::Down,
        S::Drain => v1::PartitionState::Drain,
        S::Inactive => v1::PartitionState::Inactive,
    }
}

/// A partition state from the wire; an unknown or unset one is refused.
pub fn partition_state_from_wire(v: i32) -> Result<model::config::PartitionState, String> {
    use model::config::PartitionState as S;
    match v1::PartitionState::try_from(v) {
        Ok(v1::PartitionState::Up) => Ok(S::Up),
        Ok(v1::PartitionState::Down) => Ok(S::Down),
        Ok(v1::PartitionState::Drain) => Ok(S::Drain),
        Ok(v1::PartitionState::Inactive) => Ok(S::Inactive),
        _ => Err(format!("unknown partition state {v}")),
    }
}

pub fn oversubscribe_to_wire(o: model::config::OverSubscribe) -> v1::OverSubscribe {
    use model::config::OverSubscribe as O;
    match o {
        O::No => v1::OverSubscribe::No,
        O::Yes => v1::OverSubscribe::Yes,
        O::Exclusive => v1::OverSubscribe::Exclusive,
    }
}

/// An OverSubscribe from the wire; an unknown or unset one is refused.
pub fn oversubscribe_from_wire(v: i32) -> Result<model::config::OverSubscribe, String> {
    use model::config::OverSubscribe as O;
    match v1::OverSubscribe::try_from(v) {
        Ok(v1::OverSubscribe::No) => Ok(O::No),
        Ok(v1::OverSubscribe::Yes) => Ok(O::Yes),
        Ok(v1::OverSubscribe::Exclusive) => Ok(O::Exclusive),
        _ => Err(format!("unknown partition OverSubscribe {v}")),
    }
}

/// A new time limit (a job's or a step's) on the wire.
pub fn time_limit_change_to_wire(t: model::job_update::TimeLimitChange) -> v1::TimeLimitChange {
    use model::job_update::TimeLimitChange as T;
    use v1::time_limit_change::Limit as L;
    v1::TimeLimitChange {
        limit: Some(match t {
            T::Set(Some(m)) => L::Minutes(m),
            T::Set(None) => L::Unlimited(true),
            T::Add(m) => L::AddMinutes(m),
            T::Subtract(m) => L::SubtractMinutes(m),
        }),
    }
}

/// A new time limit from the wire; an empty or unknown one is refused.
pub fn time_limit_change_from_wire(
    t: Option<v1::TimeLimitChange>,
) -> Result<model::job_update::TimeLimitChange, String> {
    use model::job_update::TimeLimitChange as T;
    use v1::time_limit_change::Limit as L;
    let unknown = || "unknown time limit change".to_string();
    Ok(match t.and_then(|t| t.limit).ok_or_else(unknown)? {
        L::Minutes(m) => T::Set(Some(m)),
        L::Unlimited(true) => T::Set(None),
        L::Unlimited(false) => return Err(unknown()),
        L::AddMinutes(m) => T::Add(m),
        L::SubtractMinutes(m) => T::Subtract(m),
    })
}

/// `scontrol update job`'s changes on the wire.
pub fn job_change_to_wire(c: &model::job_update::JobChange) -> v1::JobChange {
    use model::job_update::JobChange as C;
    use v1::job_change::Change as W;
    let change = match c {
        C::TimeLimit(t) => W::TimeLimit(time_limit_change_to_wire(*t)),
        C::Name(v) => W::Name(v.clone()),
        C::Comment(v) => W::Comment(v.clone()),
        C::Partition(v) => W::Partition(v.clone()),
        C::Nice(n) => W::Nice(*n),
        C::NumCpus(n) => W::NumCpus(*n),
        C::CpusPerTask(n) => W::CpusPerTask(*n),
        C::NumTasks(n) => W::NumTasks(*n),
        C::NumNodes(n) => W::NumNodes(*n),
        C::MinMemoryNode(m) => W::MinMemoryNodeMb(*m),
        C::MinMemoryCpu(m) => W::MinMemoryCpuMb(*m),
        C::Dependency(v) => W::Dependency(v.clone()),
        C::BeginTime(t) => W::BeginTime(*t),
        C::WcKey(v) => W::Wckey(v.clone()),
        C::Account(v) => W::Account(v.clone()),
        C::Qos(v) => W::Qos(v.clone()),
        C::NodeList(v) => W::Nodelist(v.clone()),
        C::ExcNodeList(v) => W::Exclude(v.clone()),
        C::Features(v) => W::Features(v.clone()),
        C::Reservation(v) => W::Reservation(v.clone()),
        C::ArrayTaskThrottle(n) => W::ArrayTaskThrottle(*n),
        C::Requeue(on) => W::Requeue(*on),
        C::Priority(n) => W::Priority(*n),
        C::SiteFactor(n) => W::SiteFactor(*n),
        C::DerivedExitCode(n) => W::DerivedExitCode(*n),
    };
    v1::JobChange {
        change: Some(change),
    }
}

/// A change from the wire; one this version does not know (an empty or unknown
/// `oneof`) is refused.
pub fn job_change_from_wire(c: v1::JobChange) -> Result<model::job_update::JobChange, String> {
    use model::job_update::JobChange as C;
    use v1::job_change::Change as W;
    Ok(match c.change.ok_or("unknown job change")? {
        W::TimeLimit(t) => C::TimeLimit(time_limit_change_from_wire(Some(t))?),
        W::Name(v) => C::Name(v),
        W::Comment(v) => C::Comment(v),
        W::Partition(v) => C::Partition(v),
        W::Nice(n) => C::Nice(n),
        W::NumCpus(n) => C::NumCpus(n),
        W::CpusPerTask(n) => C::CpusPerTask(n),
        W::NumTasks(n) => C::NumTasks(n),
        W::NumNodes(n) => C::NumNodes(n),
        W::MinMemoryNodeMb(m) => C::MinMemoryNode(m),
        W::MinMemoryCpuMb(m) => C::MinMemoryCpu(m),
        W::Dependency(v) => C::Dependency(v),
        W::BeginTime(t) => C::BeginTime(t),
        W::Wckey(v) => C::WcKey(v),
        W::Account(v) => C::Account(v),
        W::Qos(v) => C::Qos(v),
        W::Nodelist(v) => C::NodeList(v),
        W::Exclude(v) => C::ExcNodeList(v),
        W::Features(v) => C::Features(v),
        W::Reservation(v) => C::Reservation(v),
        W::ArrayTaskThrottle(n) => C::ArrayTaskThrottle(n),
        W::Requeue(on) => C::Requeue(on),
        W::Priority(n) => C::Priority(n),
        W::SiteFactor(n) => C::SiteFactor(n),
        W::DerivedExitCode(n) => C::DerivedExitCode(n),
    })
}

type ListEdit<T> = model::reservation_change::ListEdit<T>;

/// A list edit on the wire: its kind and its items.
fn edit<T, W>(e: &ListEdit<T>, item: impl Fn(&T) -> W) -> (v1::EditKind, Vec<W>) {
    let (kind, items) = match e {
        ListEdit::Set(i) => (v1::EditKind::Set, i),
        ListEdit::Add(i) => (v1::EditKind::Add, i),
        ListEdit::Remove(i) => (v1::EditKind::Remove, i),
    };
    (kind, items.iter().map(item).collect())
}

fn strings_edit_to_wire(e: &ListEdit<String>) -> v1::StringsEdit {
    let (kind, items) = edit(e, String::clone);
    v1::StringsEdit {
        kind: kind as i32,
        items,
    }
}

/// A list edit from the wire; an unknown kind is refused.
fn edit_from_wire<T>(kind: i32, items: Vec<T>) -> Result<ListEdit<T>, String> {
    Ok(match v1::EditKind::try_from(kind) {
        Ok(v1::EditKind::Set) => ListEdit::Set(items),
        Ok(v1::EditKind::Add) => ListEdit::Add(items),
        Ok(v1::EditKind::Remove) => ListEdit::Remove(items),
        Ok(v1::EditKind::Unspecified) | Err(_) => {
            return Err(format!("unknown kind of list edit {kind}"));
        }
    })
}

/// `scontrol create|update|delete reservation`'s change on the wire.
pub fn reservation_change_to_wire(
    c: &model::reservation_change::ReservationChange,
) -> v1::ReservationChange {
    use model::reservation_change::NodeChoice;
    let strings = strings_edit_to_wire;
    v1::ReservationChange {
        name: c.name.clone(),
        start_time: c.start,
        end_time: c.end,
        duration: c.duration.map(|d| match d {
            Some(secs) => v1::reservation_change::Duration::DurationSecs(secs),
            None => v1::reservation_change::Duration::Unlimited(true),
        }),
        nodes: c.nodes.as_ref().map(|n| match n {
            NodeChoice::All => v1::reservation_change::Nodes::AllNodes(true),
            NodeChoice::Names(names) => v1::reservation_change::Nodes::NodeNames(v1::NodeNames {
                names: names.clone(),
            }),
            NodeChoice::Count(n) => v1::reservation_change::Nodes::NodeCount(*n),
        }),
        users: c.users.as_ref().map(strings),
        accounts: c.accounts.as_ref().map(strings),
        flags: c.flags.as_ref().map(|e| {
            let (kind, flags) = edit(e, |f| reservation_flag_to_wire(*f) as i32);
            v1::FlagsEdit {
                kind: kind as i32,
                flags,
            }
        }),
        partition: c.partition.clone(),
    }
}

fn reservation_flag_to_wire(f: model::ReservationFlag) -> v1::ReservationFlag {
    use model::ReservationFlag as F;
    match f {
        F::Maint => v1::ReservationFlag::Maint,
        F::IgnoreJobs => v1::ReservationFlag::IgnoreJobs,
        F::Flex => v1::ReservationFlag::Flex,
        F::Daily => v1::ReservationFlag::Daily,
        F::Weekly => v1::ReservationFlag::Weekly,
        F::Overlap => v1::ReservationFlag::Overlap,
        F::Replace => v1::ReservationFlag::Replace,
    }
}

/// A reservation change from the wire; unknown kinds of edit and flags are refused.
pub fn reservation_change_from_wire(
    c: v1::ReservationChange,
) -> Result<model::reservation_change::ReservationChange, String> {
    use model::ReservationFlag as F;
    use model::reservation_change::{NodeChoice, ReservationChange};
    let flag = |n: i32| -> Result<F, String> {
        Ok(match v1::ReservationFlag::try_from(n) {
            Ok(v1::ReservationFlag::Maint) => F::Maint,
            Ok(v1::ReservationFlag::IgnoreJobs) => F::IgnoreJobs,
            Ok(v1::ReservationFlag::Flex) => F::Flex,
            Ok(v1::ReservationFlag::Daily) => F::Daily,
            Ok(v1::ReservationFlag::Weekly) => F::Weekly,
            Ok(v1::ReservationFlag::Overlap) => F::Overlap,
            Ok(v1::ReservationFlag::Replace) => F::Replace,
            Ok(v1::ReservationFlag::Unspecified) | Err(_) => {
                return Err(format!("unknown reservation flag {n}"));
            }
        })
    };
    Ok(ReservationChange {
        name: c.name,
        start: c.start_time,
        end: c.end_time,
        duration: c
            .duration
            .map(|d| match d {
                v1::reservation_change::Duration::DurationSecs(s) => Ok(Some(s)),
                v1::reservation_change::Duration::Unlimited(true) => Ok(None),
                v1::reservation_change::Duration::Unlimited(false) => {
                    Err("unknown reservation duration".to_string())
                }
            })
            .transpose()?,
        nodes: c
            .nodes
            .map(|n| match n {
                v1::reservation_change::Nodes::AllNodes(true) => Ok(NodeChoice::All),
                v1::reservation_change::Nodes::AllNodes(false) => {
                    Err("unknown reservation nodes".to_string())
                }
                v1::reservation_change::Nodes::NodeNames(n) => Ok(NodeChoice::Names(n.names)),
                v1::reservation_change::Nodes::NodeCount(n) => Ok(NodeChoice::Count(n)),
            })
            .transpose()?,
        users: c
            .users
            .map(|e| edit_from_wire(e.kind, e.items))
            .transpose()?,
        accounts: c
            .accounts
            .map(|e| edit_from_wire(e.kind, e.items))
            .transpose()?,
        flags: c
            .flags
            .map(|e| {
                let flags = e.flags.into_iter().map(flag).collect::<Result<_, _>>()?;
                edit_from_wire(e.kind, flags)
            })
            .transpose()?,
        partition: c.partition,
    })
}

/// A reservation as clients see it, its window as it stands at `now`.
pub fn reservation_to_wire(
    state: &model::ClusterState,
    r: &model::Reservation,
    now: model::Time,
) -> v1::ReservationInfo {
    let (start, end) = r.window_at(now);
    v1::ReservationInfo {
        name: r.name.clone(),
        start_time: start,
        end_time: end,
        nodes: model::hostlist::fold(&r.nodes),
        node_count: r.nodes.len() as u32,
        core_count: r
            .nodes
            .iter()
            .filter_map(|n| state.nodes.get(n))
            .map(|n| n.cpus)
            .sum(),
        users: r.users.clone(),
        accounts: r.accounts.clone(),
        flags: r.flags_text(),
        state: r.state_at(now).to_string(),
        partition: r.partition.clone(),
    }
}

pub fn usage_to_wire(u: &model::StepUsage) -> v1::StepUsage {
    v1::StepUsage {
        max_rss_bytes: u.max_rss_bytes,
        max_rss_node: u.max_rss_node.clone(),
        total_cpu_us: u.total_cpu_us,
        user_cpu_us: u.user_cpu_us,
        system_cpu_us: u.system_cpu_us,
        tasks: u.tasks.as_ref().map(|t| v1::TaskUsage {
            count: t.count,
            max_rss_bytes: t.max_rss_bytes,
            max_rss_task: t.max_rss_task,
            max_rss_node: t.max_rss_node.clone(),
            rss_sum_bytes: t.rss_sum_bytes,
            min_cpu_us: t.min_cpu_us,
            min_cpu_task: t.min_cpu_task,
            min_cpu_node: t.min_cpu_node.clone(),
            disk: t.disk.as_ref().map(|d| v1::TaskDisk {
                read: Some(task_peak_to_wire(&d.read)),
                write: Some(task_peak_to_wire(&d.write)),
            }),
        }),
        gpu: u.gpu.as_ref().map(gpu_use_to_wire),
    }
}

pub fn gpu_use_to_wire(u: &model::gpu_use::GpuUse) -> v1::GpuUse {
    v1::GpuUse {
        sampled_gpu_ms: u.sampled_gpu_ms,
        busy_gpu_ms: u.busy_gpu_ms,
        max_memory_bytes: u.max_memory_bytes,
        idle_ms: u.idle_ms,
    }
}

pub fn gpu_use_from_wire(u: v1::GpuUse) -> model::gpu_use::GpuUse {
    model::gpu_use::GpuUse {
        sampled_gpu_ms: u.sampled_gpu_ms,
        busy_gpu_ms: u.busy_gpu_ms,
        max_memory_bytes: u.max_memory_bytes,
        idle_ms: u.idle_ms,
    }
}

fn gpu_idle_action_to_wire(a: GpuIdleAction) -> v1::GpuIdleAction {
    match a {
        GpuIdleAction::Warn => v1::GpuIdleAction::Warn,
        GpuIdleAction::Requeue => v1::GpuIdleAction::Requeue,
        GpuIdleAction::Cancel => v1::GpuIdleAction::Cancel,
    }
}

/// A GPU idle action from the wire; `None` for UNSPECIFIED, an unknown value refused.
fn gpu_idle_action_from_wire(a: i32) -> Result<Option<GpuIdleAction>, String> {
    match v1::GpuIdleAction::try_from(a) {
        Ok(v1::GpuIdleAction::Unspecified) => Ok(None),
        Ok(v1::GpuIdleAction::Warn) => Ok(Some(GpuIdleAction::Warn)),
        Ok(v1::GpuIdleAction::Requeue) => Ok(Some(GpuIdleAction::Requeue)),
        Ok(v1::GpuIdleAction::Cancel) => Ok(Some(GpuIdleAction::Cancel)),
        Err(_) => Err(format!("unknown GPU idle action {a}")),
    }
}

pub fn usage_from_wire(u: v1::StepUsage) -> model::StepUsage {
    model::StepUsage {
        max_rss_bytes: u.max_rss_bytes,
        max_rss_node: u.max_rss_node,
        total_cpu_us: u.total_cpu_us,
        user_cpu_us: u.user_cpu_us,
        system_cpu_us: u.system_cpu_us,
        tasks: u.tasks.map(|t| model::TaskUsage {
            count: t.count,
            max_rss_bytes: t.max_rss_bytes,
            max_rss_task: t.max_rss_task,
            max_rss_node: t.max_rss_node,
            rss_sum_bytes: t.rss_sum_bytes,
            min_cpu_us: t.min_cpu_us,
            min_cpu_task: t.min_cpu_task,
            min_cpu_node: t.min_cpu_node,
            disk: t.disk.map(|d| model::TaskDisk {
                read: d.read.map(task_peak_from_wire).unwrap_or_default(),
                write: d.write.map(task_peak_from_wire).unwrap_or_default(),
            }),
        }),
        gpu: u.gpu.map(gpu_use_from_wire),
    }
}

fn task_peak_to_wire(p: &model::TaskPeak) -> v1::TaskPeak {
    v1::TaskPeak {
        max_bytes: p.max_bytes,
        max_task: p.max_task,
        max_node: p.max_node.clone(),
        sum_bytes: p.sum_bytes,
    }
}

fn task_peak_from_wire(p: v1::TaskPeak) -> model::TaskPeak {
    model::TaskPeak {
        max_bytes: p.max_bytes,
        max_task: p.max_task,
        max_node: p.max_node,
        sum_bytes: p.sum_bytes,
    }
}

// ---------------------------------------------------------------- accounting (sacctmgr)

use model::assoc::{
    Account, AccountTree, AdminLevel, Associations, Limits, Qos, User, UserAssoc,
    qos_list_from_parts, qos_list_parts,
};
use model::assoc_change::{
    Action, AssocChange, AssocRef, Changed, Conditions, Entity, LimitKind, LimitValue, Settings,
};
use model::gpu_use::GpuIdleAction;

fn limits_to_wire(l: &Limits) -> v1::AccountingLimits {
    let map = |m: &model::tres::TresCounts| m.clone().into_iter().collect();
    v1::AccountingLimits {
        grp_tres: map(&l.grp_tres),
        grp_tres_mins: map(&l.grp_tres_mins),
        grp_tres_run_mins: map(&l.grp_tres_run_mins),
        grp_jobs: l.grp_jobs,
        grp_submit: l.grp_submit,
        max_tres_per_user: map(&l.max_tres_per_user),
        max_tres_per_job: map(&l.max_tres_per_job),
        max_jobs: l.max_jobs,
        max_submit: l.max_submit,
        max_wall_min: l.max_wall_min,
        max_tres_mins_per_job: map(&l.max_tres_mins_per_job),
        grp_wall_min: l.grp_wall_min,
        guaranteed_tres: map(&l.guaranteed_tres),
        borrowing_limit: map(&l.borrowing_limit),
        lending_limit: map(&l.lending_limit),
    }
}

fn limits_from_wire(l: Option<v1::AccountingLimits>) -> Limits {
    let l = l.unwrap_or_default();
    let map = |m: std::collections::HashMap<String, u64>| m.into_iter().collect();
    Limits {
        grp_tres: map(l.grp_tres),
        grp_tres_mins: map(l.grp_tres_mins),
        grp_tres_run_mins: map(l.grp_tres_run_mins),
        grp_jobs: l.grp_jobs,
        grp_submit: l.grp_submit,
        max_tres_per_user: map(l.max_tres_per_user),
        max_tres_per_job: map(l.max_tres_per_job),
        max_jobs: l.max_jobs,
        max_submit: l.max_submit,
        max_wall_min: l.max_wall_min,
        max_tres_mins_per_job: map(l.max_tres_mins_per_job),
        grp_wall_min: l.grp_wall_min,
        guaranteed_tres: map(l.guaranteed_tres),
        borrowing_limit: map(l.borrowing_limit),
        lending_limit: map(l.lending_limit),
    }
}

fn admin_level_to_wire(l: AdminLevel) -> v1::AdminLevel {
    match l {
        AdminLevel::None => v1::AdminLevel::None,
        AdminLevel::Operator => v1::AdminLevel::Operator,
        AdminLevel::Administrator => v1::AdminLevel::Administrator,
    }
}

fn admin_level_from_wire(n: i32) -> Result<AdminLevel, String> {
    Ok(match v1::AdminLevel::try_from(n) {
        Ok(v1::AdminLevel::None) => AdminLevel::None,
        Ok(v1::AdminLevel::Operator) => AdminLevel::Operator,
        Ok(v1::AdminLevel::Administrator) => AdminLevel::Administrator,
        Ok(v1::AdminLevel::Unspecified) | Err(_) => {
            return Err(format!("unknown admin level {n}"));
        }
    })
}

/// One cluster's accounts, parents first.
fn account_tree_to_wire(tree: &AccountTree) -> Vec<v1::AccountRecord> {
    let mut accounts = Vec::new();
    let mut todo = vec![model::assoc::ROOT.to_string()];
    while let Some(name) = todo.pop() {
        let Some(acct) = tree.get(&name) else {
            continue;
        };
        todo.extend(acct.children.iter().rev().cloned());
        accounts.push(v1::AccountRecord {
            name: acct.name.clone(),
            parent: acct.parent.clone().unwrap_or_default(),
            shares: acct.shares,
            priority: acct.priority,
            users: acct.users.iter().cloned().collect(),
            user_limits: acct
                .user_limits
                .iter()
                .map(|(user, l)| v1::UserAssocLimits {
                    user: user.clone(),
                    limits: Some(limits_to_wire(l)),
                })
                .collect(),
            description: acct.description.clone(),
            organization: acct.organization.clone(),
            limits: Some(limits_to_wire(&acct.limits)),
            qos: qos_list_parts(&acct.qos).0,
            no_qos: qos_list_parts(&acct.qos).1,
            default_qos: acct.default_qos.clone(),
            coordinators: acct.coordinators.iter().cloned().collect(),
            user_assocs: acct
                .user_assocs
                .iter()
                .map(|(user, u)| v1::UserAssocSettings {
                    user: user.clone(),
                    shares: u.shares,
                    qos: qos_list_parts(&u.qos).0,
                    no_qos: qos_list_parts(&u.qos).1,
                    default_qos: u.default_qos.clone(),
                    priority: u.priority,
                })
                .collect(),
        });
    }
    accounts
}

fn account_tree_from_wire(records: Vec<v1::AccountRecord>) -> AccountTree {
    let mut tree = AccountTree::new();
    for a in records {
        let parent = (!a.parent.is_empty()).then_some(a.parent.as_str());
        let mut acct = Account::new(&a.name, parent);
        acct.shares = a.shares;
        acct.priority = a.priority;
        acct.users = a.users.into_iter().collect();
        acct.user_limits = a
            .user_limits
            .into_iter()
            .map(|u| (u.user, limits_from_wire(u.limits)))
            .collect();
        acct.description = a.description;
        acct.organization = a.organization;
        acct.limits = limits_from_wire(a.limits);
        acct.qos = qos_list_from_parts(a.qos, a.no_qos);
        acct.default_qos = a.default_qos;
        acct.coordinators = a.coordinators.into_iter().collect();
        acct.user_assocs = a
            .user_assocs
            .into_iter()
            .map(|u| {
                let settings = UserAssoc {
                    shares: u.shares,
                    priority: u.priority,
                    qos: qos_list_from_parts(u.qos, u.no_qos),
                    default_qos: u.default_qos,
                };
                (u.user, settings)
            })
            .collect();
        tree.insert(a.name, acct);
    }
    tree
}

/// The associations as `sacctmgr show` reads them: accounts parents first.
pub fn associations_to_wire(a: &Associations, cluster_name: &str) -> v1::ShowAccountingReply {
    v1::ShowAccountingReply {
        cluster_name: cluster_name.to_string(),
        accounts: account_tree_to_wire(&a.accounts),
        users: a
            .users
            .iter()
            .map(|(name, u)| v1::AccountingUser {
                name: name.clone(),
                default_account: u.default_account.clone(),
                admin_level: admin_level_to_wire(u.admin_level) as i32,
            })
            .collect(),
        qos: a
            .qos
            .values()
            .map(|q| v1::QosRecord {
                name: q.name.clone(),
                priority: q.priority,
                limits: Some(limits_to_wire(&q.limits)),
                preempt: q.preempt.clone(),
                preempt_mode: q.preempt_mode.clone(),
                grace_time_s: q.grace_time,
                usage_factor: q.usage_factor,
                gpu_idle_limit_s: q.gpu_idle.limit_s,
                gpu_idle_action: gpu_idle_action_to_wire(q.gpu_idle.action) as i32,
                gpu_idle_grace_s: q.gpu_idle.grace_s,
            })
            .collect(),
        enforced: a.enforced,
        other_clusters: a
            .other_clusters
            .iter()
            .map(|(name, tree)| v1::ClusterAccounts {
                name: name.clone(),
                accounts: account_tree_to_wire(tree),
            })
            .collect(),
    }
}

/// The associations `sacctmgr show` was sent; an unknown admin level is refused.
pub fn associations_from_wire(r: v1::ShowAccountingReply) -> Result<Associations, String> {
    let mut out = Associations {
        accounts: account_tree_from_wire(r.accounts),
        qos: Default::default(),
        users: Default::default(),
        enforced: r.enforced,
        other_clusters: r
            .other_clusters
            .into_iter()
            .map(|c| (c.name, account_tree_from_wire(c.accounts)))
            .collect(),
    };
    for u in r.users {
        let level = admin_level_from_wire(u.admin_level)?;
        out.users.insert(
            u.name,
            User {
                default_account: u.default_account,
                admin_level: level,
            },
        );
    }
    for q in r.qos {
        let mut qos = Qos::new(&q.name);
        qos.priority = q.priority;
        qos.limits = limits_from_wire(q.limits);
        qos.preempt = q.preempt;
        qos.preempt_mode = q.preempt_mode;
        qos.grace_time = q.grace_time_s;
        qos.usage_factor = q.usage_factor;
        qos.gpu_idle = model::gpu_use::GpuIdlePolicy {
            limit_s: q.gpu_idle_limit_s,
            action: gpu_idle_action_from_wire(q.gpu_idle_action)?
                .ok_or_else(|| format!("QOS {} has no GPU idle action", q.name))?,
            grace_s: q.gpu_idle_grace_s,
        };
        out.qos.insert(q.name, qos);
    }
    out.relink();
    Ok(out)
}

fn limit_kind_to_wire(k: LimitKind) -> v1::LimitKind {
    use v1::LimitKind as W;
    match k {
        LimitKind::GrpTres => W::GrpTres,
        LimitKind::GrpTresMins => W::GrpTresMins,
        LimitKind::GrpTresRunMins => W::GrpTresRunMins,
        LimitKind::GrpJobs => W::GrpJobs,
        LimitKind::GrpSubmitJobs => W::GrpSubmitJobs,
        LimitKind::MaxTres => W::MaxTres,
        LimitKind::MaxTresPerUser => W::MaxTresPerUser,
        LimitKind::MaxJobs => W::MaxJobs,
        LimitKind::MaxSubmitJobs => W::MaxSubmitJobs,
        LimitKind::MaxWall => W::MaxWall,
        LimitKind::GuaranteedTres => W::GuaranteedTres,
        LimitKind::BorrowingLimit => W::BorrowingLimit,
        LimitKind::LendingLimit => W::LendingLimit,
        LimitKind::MaxTresMins => W::MaxTresMins,
        LimitKind::GrpWall => W::GrpWall,
    }
}

fn limit_kind_from_wire(n: i32) -> Result<LimitKind, String> {
    use v1::LimitKind as W;
    Ok(match W::try_from(n) {
        Ok(W::GrpTres) => LimitKind::GrpTres,
        Ok(W::GrpTresMins) => LimitKind::GrpTresMins,
        Ok(W::GrpTresRunMins) => LimitKind::GrpTresRunMins,
        Ok(W::GrpJobs) => LimitKind::GrpJobs,
        Ok(W::GrpSubmitJobs) => LimitKind::GrpSubmitJobs,
        Ok(W::MaxTres) => LimitKind::MaxTres,
        Ok(W::MaxTresPerUser) => LimitKind::MaxTresPerUser,
        Ok(W::MaxJobs) => LimitKind::MaxJobs,
        Ok(W::MaxSubmitJobs) => LimitKind::MaxSubmitJobs,
        Ok(W::MaxWall) => LimitKind::MaxWall,
        Ok(W::GuaranteedTres) => LimitKind::GuaranteedTres,
        Ok(W::BorrowingLimit) => LimitKind::BorrowingLimit,
        Ok(W::LendingLimit) => LimitKind::LendingLimit,
        Ok(W::MaxTresMins) => LimitKind::MaxTresMins,
        Ok(W::GrpWall) => LimitKind::GrpWall,
        Ok(W::Unspecified) | Err(_) => return Err(format!("unknown limit {n}")),
    })
}

/// `sacctmgr add|modify|delete`'s change on the wire.
pub fn assoc_change_to_wire(c: &AssocChange, dry_run: bool) -> v1::ChangeAccountingRequest {
    let s = &c.settings;
    let limits = s
        .limits
        .iter()
        .map(|(kind, value)| v1::LimitSetting {
            kind: limit_kind_to_wire(*kind) as i32,
            value: Some(match value {
                LimitValue::Tres(items) => v1::limit_setting::Value::Tres(v1::TresSettings {
                    items: items
                        .iter()
                        .map(|(name, count)| v1::TresSetting {
                            name: name.clone(),
                            count: *count,
                        })
                        .collect(),
                }),
                LimitValue::Count(value) => {
                    v1::limit_setting::Value::Count(v1::LimitCount { value: *value })
                }
            }),
        })
        .collect();
    v1::ChangeAccountingRequest {
        action: match c.action {
            Action::Add => v1::AccountingAction::Add,
            Action::Modify => v1::AccountingAction::Modify,
            Action::Delete => v1::AccountingAction::Delete,
        } as i32,
        entity: match c.entity {
            Entity::Account => v1::AccountingEntity::Account,
            Entity::User => v1::AccountingEntity::User,
            Entity::Qos => v1::AccountingEntity::Qos,
            Entity::Coordinator => v1::AccountingEntity::Coordinator,
            Entity::Cluster => v1::AccountingEntity::Cluster,
        } as i32,
        conditions: Some(v1::AccountingConditions {
            names: c.conditions.names.clone(),
            accounts: c.conditions.accounts.clone(),
            clusters: c.conditions.clusters.clone(),
        }),
        settings: Some(v1::AccountingSettings {
            parent: s.parent.clone(),
            description: s.description.clone(),
            organization: s.organization.clone(),
            fairshare: s.fairshare,
            priority: s.priority,
            default_account: s.default_account.clone(),
            admin_level: s.admin_level.map(|l| admin_level_to_wire(l) as i32),
            qos: s.qos.as_ref().map(strings_edit_to_wire),
            default_qos: s.default_qos.clone(),
            preempt: s.preempt.as_ref().map(strings_edit_to_wire),
            preempt_mode: s.preempt_mode.map(|m| match m {
                Some(mode) => mode.name().to_lowercase(),
                None => "cluster".into(),
            }),
            grace_time_s: s.grace_time_s,
            usage_factor: s.usage_factor,
            limits,
            gpu_idle_limit_s: s.gpu_idle_limit_s.map(|value| v1::LimitCount { value }),
            gpu_idle_action: s
                .gpu_idle_action
                .map_or(v1::GpuIdleAction::Unspecified, gpu_idle_action_to_wire)
                as i32,
            gpu_idle_grace_s: s.gpu_idle_grace_s,
        }),
        dry_run,
    }
}

/// A change from the wire and whether it is a dry run; unknown actions, entities,
/// limits, levels and edits are refused.
pub fn assoc_change_from_wire(
    r: v1::ChangeAccountingRequest,
) -> Result<(AssocChange, bool), String> {
    let action = match v1::AccountingAction::try_from(r.action) {
        Ok(v1::AccountingAction::Add) => Action::Add,
        Ok(v1::AccountingAction::Modify) => Action::Modify,
        Ok(v1::AccountingAction::Delete) => Action::Delete,
        Ok(v1::AccountingAction::Unspecified) | Err(_) => {
            return Err(format!("unknown accounting action {}", r.action));
        }
    };
    let entity = match v1::AccountingEntity::try_from(r.entity) {
        Ok(v1::AccountingEntity::Account) => Entity::Account,
        Ok(v1::AccountingEntity::User) => Entity::User,
        Ok(v1::AccountingEntity::Qos) => Entity::Qos,
        Ok(v1::AccountingEntity::Coordinator) => Entity::Coordinator,
        Ok(v1::AccountingEntity::Cluster) => Entity::Cluster,
        Ok(v1::AccountingEntity::Unspecified) | Err(_) => {
            return Err(format!("unknown accounting entity {}", r.entity));
        }
    };
    let c = r.conditions.unwrap_or_default();
    let s = r.settings.unwrap_or_default();
    let limits = s
        .limits
        .into_iter()
        .map(|l| {
            let kind = limit_kind_from_wire(l.kind)?;
            let value = match l.value {
                Some(v1::limit_setting::Value::Tres(t)) if kind.is_tres() => {
                    LimitValue::Tres(t.items.into_iter().map(|i| (i.name, i.count)).collect())
                }
                Some(v1::limit_setting::Value::Count(n)) if !kind.is_tres() => {
                    LimitValue::Count(n.value)
                }
                _ => return Err(format!("no value of the right kind for {}", kind.name())),
            };
            Ok((kind, value))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let settings = Settings {
        parent: s.parent,
        description: s.description,
        organization: s.organization,
        fairshare: s.fairshare,
        priority: s.priority,
        default_account: s.default_account,
        admin_level: s.admin_level.map(admin_level_from_wire).transpose()?,
        qos: s.qos.map(|e| edit_from_wire(e.kind, e.items)).transpose()?,
        default_qos: s.default_qos,
        preempt: s
            .preempt
            .map(|e| edit_from_wire(e.kind, e.items))
            .transpose()?,
        preempt_mode: s
            .preempt_mode
            .map(|word| {
                model::assoc_change::parse_preempt_mode(&word)
                    .ok_or_else(|| format!("unknown preempt mode `{word}`"))
            })
            .transpose()?,
        grace_time_s: s.grace_time_s,
        usage_factor: s.usage_factor,
        limits,
        gpu_idle_limit_s: s.gpu_idle_limit_s.map(|l| l.value),
        gpu_idle_action: gpu_idle_action_from_wire(s.gpu_idle_action)?,
        gpu_idle_grace_s: s.gpu_idle_grace_s,
    };
    let change = AssocChange {
        action,
        entity,
        conditions: Conditions {
            names: c.names,
            accounts: c.accounts,
            clusters: c.clusters,
        },
        settings,
    };
    Ok((change, r.dry_run))
}

pub fn changed_to_wire(c: &Changed) -> v1::ChangeAccountingReply {
    v1::ChangeAccountingReply {
        names: c.names.clone(),
        assocs: c
            .assocs
            .iter()
            .map(|a| v1::AssocRef {
                cluster: a.cluster.clone(),
                account: a.account.clone(),
                user: a.user.clone(),
                parent: a.parent.clone(),
            })
            .collect(),
        users_removed: c.users_removed.clone(),
    }
}

pub fn changed_from_wire(r: v1::ChangeAccountingReply) -> Changed {
    Changed {
        names: r.names,
        assocs: r
            .assocs
            .into_iter()
            .map(|a| AssocRef {
                cluster: a.cluster,
                account: a.account,
                user: a.user,
                parent: a.parent,
            })
            .collect(),
        users_removed: r.users_removed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_changes_go_over_the_wire_and_back_and_an_unknown_one_is_refused() {
        use model::job_update::{JobChange as C, TimeLimitChange as T};
        let changes = [
            C::TimeLimit(T::Set(Some(5))),
            C::TimeLimit(T::Set(None)),
            C::TimeLimit(T::Add(30)),
            C::TimeLimit(T::Subtract(1)),
            C::Name("n".into()),
            C::Comment("c".into()),
            C::Partition("p".into()),
            C::Nice(-5),
            C::NumCpus(8),
            C::CpusPerTask(2),
            C::NumTasks(4),
            C::NumNodes(2),
            C::MinMemoryNode(1024),
            C::MinMemoryCpu(512),
            C::Dependency("afterok:1".into()),
            C::BeginTime(99),
            C::WcKey("w".into()),
            C::Account("a".into()),
            C::Qos("q".into()),
            C::NodeList("n1".into()),
            C::ExcNodeList("n2".into()),
            C::Features("fast".into()),
            C::Reservation("r".into()),
            C::ArrayTaskThrottle(3),
            C::Requeue(true),
        ];
        for c in changes {
            assert_eq!(job_change_from_wire(job_change_to_wire(&c)), Ok(c));
        }
        assert!(job_change_from_wire(v1::JobChange { change: None }).is_err());
        // A marker set false says nothing: refused, not read as unlimited.
        let unset = v1::JobChange {
            change: Some(v1::job_change::Change::TimeLimit(v1::TimeLimitChange {
                limit: Some(v1::time_limit_change::Limit::Unlimited(false)),
            })),
        };
        assert!(job_change_from_wire(unset).is_err());
    }

    #[test]
    fn reservation_changes_round_trip_and_unset_kinds_and_markers_are_refused() {
        use model::reservation_change::{ListEdit, NodeChoice, ReservationChange};
        use v1::reservation_change::{Duration as D, Nodes as N};
        let change = ReservationChange {
            name: Some("maint".into()),
            duration: Some(None),
            nodes: Some(NodeChoice::All),
            users: Some(ListEdit::Set(vec!["alice".into()])),
            accounts: Some(ListEdit::Remove(vec!["ml".into()])),
            flags: Some(ListEdit::Add(vec![
                model::ReservationFlag::Maint,
                model::ReservationFlag::Overlap,
            ])),
            ..Default::default()
        };
        let wire = reservation_change_to_wire(&change);
        assert_eq!(reservation_change_from_wire(wire.clone()), Ok(change));
        let refused = |w: v1::ReservationChange| reservation_change_from_wire(w).is_err();
        assert!(refused(v1::ReservationChange {
            duration: Some(D::Unlimited(false)),
            ..wire.clone()
        }));
        assert!(refused(v1::ReservationChange {
            nodes: Some(N::AllNodes(false)),
            ..wire.clone()
        }));
        assert!(refused(v1::ReservationChange {
            users: Some(v1::StringsEdit {
                kind: v1::EditKind::Unspecified as i32,
                items: vec!["alice".into()],
            }),
            ..wire.clone()
        }));
        assert!(refused(v1::ReservationChange {
            flags: Some(v1::FlagsEdit {
                kind: v1::EditKind::Set as i32,
                flags: vec![v1::ReservationFlag::Unspecified as i32],
            }),
            ..wire
        }));
    }

    #[test]
    fn config_names_the_scheduler_and_prints_times_as_slurm() {
        let value = |text: &str, key: &str| {
            let config = model::Config::parse(text, "t.toml").unwrap();
            config_to_wire(&config)
                .entries
                .into_iter()
                .find(|e| e.key == key)
                .map(|e| e.value)
                .unwrap()
        };
        // Slurm 22.05: sched/backfill backfills, sched/builtin is first come first served.
        for (policy, scheduler) in [
            ("easy", "sched/backfill"),
            ("conservative", "sched/backfill"),
            ("fcfs", "sched/builtin"),
        ] {
            let text = format!("[scheduler]\npolicy = \"{policy}\"\n");
            assert_eq!(value(&text, "SchedulerType"), scheduler, "{policy}");
        }
        assert_eq!(value("", "SchedulerType"), "sched/backfill");
        assert_eq!(value("", "PriorityMaxAge"), "7-00:00:00");
        let text = "[priority]\ndecay_half_life = \"5:00\"\n";
        assert_eq!(value(text, "PriorityDecayHalfLife"), "00:05:00");
        assert_eq!(value("", "SlurmdTimeout"), "30 sec");
        // Process tracking and usage follow the cgroup mode.
        let off = "[cgroup]\nmode = \"off\"\n";
        assert_eq!(value("", "ProctrackType"), "proctrack/cgroup");
        assert_eq!(value("", "PropagateResourceLimits"), "ALL");
        assert_eq!(value("", "NodeFeaturesPlugins"), "(null)");
        assert_eq!(value(off, "ProctrackType"), "proctrack/pgid");
        assert_eq!(value("", "JobAcctGatherType"), "jobacct_gather/cgroup");
        assert_eq!(value(off, "JobAcctGatherType"), "jobacct_gather/none");
        assert_eq!(value("", "LaunchType"), "launch/slurm");
        assert_eq!(value("", "SLURM_VERSION"), model::config::SLURM_VERSION);
    }

    #[test]
    fn string_table_gives_one_index_per_distinct_string() {
        let words = [
            "",
            "a",
            "a\0",
            "abcdefg",
            "abcdefgh",
            "abcdefgi",
            "abcdefghi",
            "abcdefghj",
            "0123456789abcdef",
            "0123456789abcdeg",
            "0123456789abcdef0",
            "JobHeldUser",
        ];
        let copies: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        let mut table = StringTable::default();
        let first: Vec<u32> = words.iter().map(|w| table.intern(w)).collect();
        // Equal text in other allocations finds the same index.
        let again: Vec<u32> = copies.iter().map(|w| table.intern(w)).collect();
        assert_eq!(first, again);
        assert_eq!(first, (0..words.len() as u32).collect::<Vec<_>>());
        assert_eq!(table.take_new(), copies);
        assert!(table.take_new().is_empty());
    }

    #[test]
    fn spec_round_trips() {
        let spec = JobSpec {
            name: "x".into(),
            num_tasks: 2,
            time_limit_min: Some(5),
            array: Some(ArraySpec {
                task_ids: vec![1, 2],
                max_running: 1,
            }),
            signal: Some(SignalSpec {
                signal: 12,
                seconds_before_end: 90,
                batch_only: false,
            }),
            ..JobSpec::default()
        };
        let payload = JobPayload {
            script: "#!/bin/sh\n".into(),
            env: vec![("A".into(), "1".into())],
        };
        let (back, back_payload) = spec_from_wire(spec_to_wire(&spec, Some(&payload))).unwrap();
        assert_eq!(back, spec);
        assert_eq!(back_payload, payload);
        for s in JobState::ALL {
            assert_eq!(state_from_wire(state_to_wire(s)), s);
        }
    }

    #[test]
    fn task_layouts_round_trip_and_unknown_ones_are_refused() {
        use model::distribution::TaskLayout as L;
        for layout in [L::Block, L::Cyclic, L::Plane(3), L::Pack] {
            let (wire, size) = task_layout_to_wire(layout);
            assert_eq!(task_layout_from_wire(wire as i32, size), Ok(layout));
        }
        assert!(task_layout_from_wire(v1::TaskLayout::Plane as i32, 0).is_err());
        assert_eq!(
            task_layout_from_wire(9, 0),
            Err("unknown task layout 9".to_string())
        );
    }

    #[test]
    fn node_states_round_trip_and_unknown_numbers_are_refused() {
        let mut node = Node::from_config("n1", 4, 1024, Vec::new());
        node.health = NodeHealth::Up;
        node.drain = true;
        let usage = model::NodeUsage {
            cpus: 2,
            jobs: 1,
            ..Default::default()
        };
        let wire = node_to_wire(
            &node,
            &usage,
            Vec::new(),
            model::node::DeclaredHardware::of_cpus(node.cpus),
        );
        let state = node_state_from_wire(&wire).unwrap();
        assert_eq!(state, node.state(2, 1));
        assert_eq!(state.long(), "draining");
        let one_socket = model::node::SocketLayout {
            sockets: 1,
            cores_per_socket: 2,
            threads_per_core: 2,
        };
        let declared = model::node::DeclaredHardware {
            tmp_disk_mb: 5,
            layout: one_socket,
        };
        let listed = node_to_wire(&node, &usage, Vec::new(), declared);
        assert_eq!(layout_from_wire(&listed), one_socket);
        let unset = v1::NodeInfo {
            layout: None,
            ..listed
        };
        assert_eq!(
            layout_from_wire(&unset),
            model::node::SocketLayout::of_cpus(4)
        );
        let bad = v1::NodeInfo { health: 7, ..wire };
        assert_eq!(
            node_state_from_wire(&bad).unwrap_err().to_string(),
            "node n1: unknown health 7 from the controller"
        );
    }

    #[test]
    fn filters_carry_typed_states_and_refuse_unknown_states_and_reasons() {
        let wire = v1::JobFilter {
            states: vec![v1::JobState::Pending as i32, v1::JobState::Running as i32],
            reasons: vec!["resources".into(), "JobHeldUser".into()],
            ..Default::default()
        };
        let f = filter_from_wire(&wire).unwrap();
        assert_eq!(f.states, [JobState::Pending, JobState::Running]);
        assert_eq!(
            f.reasons,
            [model::Reason::Resources, model::Reason::JobHeldUser]
        );
        let bad = v1::JobFilter {
            states: vec![99],
            ..Default::default()
        };
        assert_eq!(
            filter_from_wire(&bad).unwrap_err(),
            "Invalid job state specified: 99"
        );
        let bad = v1::JobFilter {
            reasons: vec!["BOGUS".into()],
            ..Default::default()
        };
        assert_eq!(
            filter_from_wire(&bad).unwrap_err(),
            "Invalid reason specified: BOGUS"
        );
    }

    #[test]
    fn gpu_topology_round_trips() {
        let gpu = GpuDevice {
            index: 5,
            gpu_type: "h100".into(),
            uuid: "GPU-5".into(),
            numa: 1,
            nvlink: 3,
            whole: None,
        };
        assert_eq!(gpu_from_wire(gpu_to_wire(&gpu)), gpu);
        let shard = GpuDevice {
            gpu_type: "shard".into(),
            whole: Some(5),
            ..gpu
        };
        assert_eq!(gpu_from_wire(gpu_to_wire(&shard)), shard);
    }

    #[test]
    fn numa_cpus_round_trip_and_a_cpu_on_two_numa_nodes_is_refused() {
        let numa = vec![vec![0, 1, 8, 9], vec![], vec![2, 3]];
        let wire = numa_cpus_to_wire(&numa);
        assert_eq!(wire.len(), 2);
        assert_eq!(numa_cpus_from_wire(wire), Ok(numa));
        let twice = vec![
            v1::NumaCpus {
                numa: 0,
                cpus: vec![0, 1],
            },
            v1::NumaCpus {
                numa: 1,
                cpus: vec![1],
            },
        ];
        assert_eq!(
            numa_cpus_from_wire(twice).unwrap_err(),
            "CPU 1 is on more than one NUMA node"
        );
        let absurd = vec![v1::NumaCpus {
            numa: 1 << 30,
            cpus: vec![0],
        }];
        assert!(numa_cpus_from_wire(absurd).is_err());
    }

    #[test]
    fn accounting_changes_and_associations_cross_the_wire_whole() {
        use model::assoc_change::{Action, AssocChange, Entity};
        let words: Vec<String> = "where name=alice account=ml set MaxJobs=2 GrpTRES=gres/gpu=4,cpu=-1 adminlevel=Operator"
            .split_whitespace()
            .map(String::from)
            .collect();
        let change = AssocChange::parse(Action::Modify, Entity::User, &words).unwrap();
        let wire = assoc_change_to_wire(&change, true);
        assert_eq!(assoc_change_from_wire(wire.clone()), Ok((change, true)));
        // Unknown numbers are refused, never defaulted.
        let mut bad = wire.clone();
        bad.action = 9;
        assert!(assoc_change_from_wire(bad).is_err());
        let mut bad = wire.clone();
        bad.settings.as_mut().unwrap().admin_level = Some(7);
        assert!(assoc_change_from_wire(bad).is_err());
        let mut bad = wire;
        bad.settings.as_mut().unwrap().limits[0].kind = 0;
        assert!(assoc_change_from_wire(bad).is_err());

        let config = model::Config::parse(
            "[[nodes]]\nnames = \"n1\"\ncpus = 1\nmemory = \"1G\"\n\
             [[partitions]]\nname = \"p\"\nnodes = \"ALL\"\n\
             [[accounts]]\nname = \"ml\"\nusers = [\"alice\"]\nmax_jobs = 3\n\
             [[accounts]]\nname = \"vision\"\nparent = \"ml\"\nusers = [\"bob\"]\n",
            "t",
        )
        .unwrap();
        let a = Associations::from_config(&config);
        let reply = associations_to_wire(&a, "c");
        let names: Vec<&str> = reply.accounts.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["root", "ml", "vision"]);
        assert_eq!(associations_from_wire(reply), Ok(a));
    }
}

/// A trigger's spec for the wire.
pub fn trigger_spec_to_wire(s: &model::trigger::TriggerSpec) -> v1::TriggerSpec {
    use model::trigger::{TriggerEvent as E, TriggerResource as R};
    use v1::trigger_spec::Resource;
    v1::TriggerSpec {
        resource: Some(match &s.resource {
            R::Job(id) => Resource::JobId(*id),
            R::Nodes(list) => Resource::Nodes(v1::TriggerNodes { list: list.clone() }),
        }),
        event: match s.event {
            E::Down => v1::TriggerEvent::Down,
            E::Up => v1::TriggerEvent::Up,
            E::Drained => v1::TriggerEvent::Drained,
            E::Idle => v1::TriggerEvent::Idle,
            E::Fini => v1::TriggerEvent::Fini,
            E::Time => v1::TriggerEvent::Time,
        } as i32,
        offset: s.offset,
        program: s.program.clone(),
        perm: s.perm,
    }
}

/// A trigger's spec from the wire; an unknown or unset event, or no resource, is
/// refused.
pub fn trigger_spec_from_wire(w: v1::TriggerSpec) -> Result<model::trigger::TriggerSpec, String> {
    use model::trigger::{TriggerEvent as E, TriggerResource as R};
    use v1::trigger_spec::Resource;
    let resource = match w.resource {
        Some(Resource::JobId(id)) => R::Job(id),
        Some(Resource::Nodes(n)) => R::Nodes(n.list),
        None => return Err("a trigger needs a job or nodes".into()),
    };
    let event = match v1::TriggerEvent::try_from(w.event) {
        Ok(v1::TriggerEvent::Down) => E::Down,
        Ok(v1::TriggerEvent::Up) => E::Up,
        Ok(v1::TriggerEvent::Drained) => E::Drained,
        Ok(v1::TriggerEvent::Idle) => E::Idle,
        Ok(v1::TriggerEvent::Fini) => E::Fini,
        Ok(v1::TriggerEvent::Time) => E::Time,
        Ok(v1::TriggerEvent::Unspecified) | Err(_) => {
            return Err(format!("unknown trigger event {}", w.event));
        }
    };
    Ok(model::trigger::TriggerSpec {
        resource,
        event,
        offset: w.offset,
        program: w.program,
        perm: w.perm,
    })
}

/// A kept trigger for the wire.
pub fn trigger_to_wire(t: &model::trigger::Trigger) -> v1::TriggerInfo {
    v1::TriggerInfo {
        id: t.id,
        spec: Some(trigger_spec_to_wire(&t.spec)),
        uid: t.uid,
        user: t.user.clone(),
    }
}

#[cfg(test)]
mod trigger_tests {
    use super::*;
    use model::trigger::{TriggerEvent, TriggerResource, TriggerSpec};

    #[test]
    fn trigger_specs_go_and_come_back_and_unknown_events_are_refused() {
        for event in TriggerEvent::ALL {
            for resource in [
                TriggerResource::Job(4),
                TriggerResource::Nodes(None),
                TriggerResource::Nodes(Some("n[1-2]".into())),
            ] {
                let spec = TriggerSpec {
                    resource,
                    event,
                    offset: -60,
                    program: "/bin/true".into(),
                    perm: true,
                };
                assert_eq!(
                    trigger_spec_from_wire(trigger_spec_to_wire(&spec)),
                    Ok(spec)
                );
            }
        }
        let mut w = trigger_spec_to_wire(&TriggerSpec {
            resource: TriggerResource::Job(1),
            event: TriggerEvent::Fini,
            offset: 0,
            program: "/x".into(),
            perm: false,
        });
        w.event = 0;
        assert!(trigger_spec_from_wire(w.clone()).is_err());
        w.event = 99;
        assert!(trigger_spec_from_wire(w.clone()).is_err());
        w.event = v1::TriggerEvent::Fini as i32;
        w.resource = None;
        assert!(trigger_spec_from_wire(w).is_err());
    }

    #[test]
    fn partition_changes_cross_the_wire_typed_and_unknown_values_are_refused() {
        let words: Vec<String> = "PartitionName=p Nodes=n[1-2] MaxTime=30 DefaultTime=UNLIMITED \
             MaxNodes=2 State=DOWN Default=YES Priority=3 AllowAccounts=a,b DenyAccounts=c \
             AllowQos=q DenyQos=r AllowGroups=wheel OverSubscribe=EXCLUSIVE"
            .split_whitespace()
            .map(String::from)
            .collect();
        let change = model::partition_change::parse(&words).unwrap();
        let (name, fields) = partition_change_to_wire(&change);
        assert_eq!(fields.len(), change.fields.len());
        assert_eq!(partition_change_from_wire(name, fields).unwrap(), change);
        use v1::partition_field::Field as W;
        for bad in [
            None,
            Some(W::State(0)),
            Some(W::State(99)),
            Some(W::Oversubscribe(0)),
            Some(W::Oversubscribe(99)),
            Some(W::MaxTime(v1::PartitionTime { limit: None })),
            Some(W::MaxTime(v1::PartitionTime {
                limit: Some(v1::partition_time::Limit::Unlimited(false)),
            })),
        ] {
            let fields = vec![v1::PartitionField { field: bad.clone() }];
            assert!(
                partition_change_from_wire("p".into(), fields).is_err(),
                "{bad:?}"
            );
        }
    }
}
