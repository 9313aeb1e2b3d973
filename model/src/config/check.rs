//! The checks a parsed config passes before anything runs on it: numbers within their
//! ranges, Slurm's syntaxes (hostlists, times, memory sizes, TRES), names that exist,
//! and the combinations that cannot work together. A failure carries the key path of
//! the value at fault; `Config::parse` turns it into the file's line.
//!
//! ```toml
//! [controller]
//! heartbeat_interval_ms = 20000   # refused: more than half of node_timeout_s, so one
//! node_timeout_s = 30             # late heartbeat would take every node DOWN
//! ```

use super::locate::KeyPath;
use super::{
    Config, FAIRSHARE_ALGORITHMS, NodeConfig, OverSubscribe, PREEMPT_TYPES, PRIORITY_TYPES,
    PartitionConfig, PartitionState, SCHEDULER_POLICIES, parse_indices,
};
use crate::constraint::Constraint;
use crate::job::{MAX_ARRAY_SIZE, PreemptMode};
use crate::{assoc, hostlist, tres, units};
use std::collections::BTreeSet;
use std::ops::RangeInclusive;

/// A check that failed: what is wrong, and where. The first path the file sets is the
/// one named (a combination names whichever of its keys the file has).
#[derive(Debug)]
pub(super) struct Invalid {
    pub at: Vec<KeyPath>,
    pub message: String,
}

impl Invalid {
    fn new(at: &KeyPath, message: impl Into<String>) -> Invalid {
        Invalid {
            at: vec![at.clone()],
            message: message.into(),
        }
    }

    /// Names `other` when the file does not set the first path.
    fn or_at(mut self, other: &KeyPath) -> Invalid {
        self.at.push(other.clone());
        self
    }
}

type Checked<T = ()> = Result<T, Invalid>;

/// Slurm's largest value for most timeouts and factors (SlurmdTimeout, KillWait,
/// PriorityTier, PriorityJobFactor).
const SLURM_MAX: u32 = 65533;

/// A preempt mode `PreemptMode::parse` reads.
fn preempt_mode(at: &KeyPath, text: &str) -> Checked {
    match PreemptMode::parse(text) {
        Some(_) => Ok(()),
        None => Err(Invalid::new(
            at,
            format!("unknown preempt mode `{text}` (expected off, cancel, requeue or suspend)"),
        )),
    }
}

/// `value` within `range`, else "must be from A to B UNIT, not V".
fn within(at: &KeyPath, value: u32, range: RangeInclusive<u32>, unit: &str) -> Checked {
    if range.contains(&value) {
        return Ok(());
    }
    let unit = if unit.is_empty() {
        String::new()
    } else {
        format!(" {unit}")
    };
    Err(Invalid::new(
        at,
        format!(
            "must be from {} to {}{unit}, not {value}",
            range.start(),
            range.end()
        ),
    ))
}

/// A name of one word: no spaces, no commas (lists of names are comma-separated,
/// as in `-p debug,gpu`).
pub fn is_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(|c: char| c.is_whitespace() || c == ',')
}

/// `word` among `words`, else "unknown WHAT `word` (expected a, b or c)".
fn one_of(at: &KeyPath, word: &str, words: &[&str], what: &str) -> Checked {
    if words.contains(&word) {
        return Ok(());
    }
    let words: Vec<&str> = words.iter().copied().filter(|w| !w.is_empty()).collect();
    let (last, rest) = words.split_last().expect("a list of words");
    Err(Invalid::new(
        at,
        format!(
            "unknown {what} `{word}` (expected {} or {last})",
            rest.join(", ")
        ),
    ))
}

/// The toml crate's words for a value of the wrong kind, in an admin's words.
pub(super) fn plain_words(message: &str) -> String {
    let message = match message.find("expected struct ") {
        Some(at) => format!("{}expected a table", &message[..at]),
        None => message.to_string(),
    };
    message
        .replace(
            "expected u32",
            "expected a whole number from 0 to 4294967295",
        )
        .replace("expected i64", "expected a whole number")
        .replace("expected f64", "expected a number")
        .replace("expected a sequence", "expected a list `[...]`")
}

impl Config {
    /// Every check, section by section.
    pub(super) fn check(&self) -> Checked {
        let top = KeyPath::top();
        self.check_cluster(&top)?;
        self.check_controller(&top.key("controller"))?;
        let nodes = self.check_nodes(&top.key("nodes"))?;
        let max_connections = top.key("controller").key("max_connections");
        if self.controller.max_connections as usize <= nodes.len() {
            return Err(Invalid::new(
                &max_connections,
                format!(
                    "must be more than the {} nodes (their daemons hold a connection \
                     each), not {}",
                    nodes.len(),
                    self.controller.max_connections
                ),
            ));
        }
        self.check_scheduler(&top.key("scheduler"))?;
        self.check_cgroup(&top.key("cgroup"))?;
        self.check_node_daemon(&top.key("node_daemon"))?;
        self.check_auth(&top.key("auth"))?;
        self.check_tls(&top.key("tls"))?;
        self.check_priority(&top.key("priority"))?;
        let qos = self.check_qos(&top.key("qos"))?;
        self.check_accounts(&top.key("accounts"), &qos)?;
        self.check_partitions(&top.key("partitions"), &nodes, &qos)
    }

    fn check_cluster(&self, top: &KeyPath) -> Checked {
        if !is_name(&self.cluster_name) {
            return Err(Invalid::new(
                &top.key("cluster_name"),
                format!("invalid cluster name `{}` (one word)", self.cluster_name),
            ));
        }
        if !self.state_dir.starts_with('/') {
            return Err(Invalid::new(
                &top.key("state_dir"),
                format!(
                    "must be an absolute path (the directory of the controller's store \
                     and the node daemons' spool), not `{}`",
                    self.state_dir
                ),
            ));
        }
        Ok(())
    }

    fn check_controller(&self, at: &KeyPath) -> Checked {
        let c = &self.controller;
        for (key, value) in [
            ("purge_job_after", &c.purge_job_after),
            ("purge_step_after", &c.purge_step_after),
        ] {
            crate::units::PurgeAge::parse(value).map_err(|_| {
                Invalid::new(
                    &at.key(key),
                    format!(
                        "`{value}` is not an age (a number of months, or of hours, days or \
                         months: `12`, `30days`)"
                    ),
                )
            })?;
        }
        if c.return_to_service > 2 {
            return Err(Invalid::new(
                &at.key("return_to_service"),
                format!("must be 0, 1 or 2, not {}", c.return_to_service),
            ));
        }
        let port_ok = c.addr.rsplit_once(':').is_some_and(|(host, port)| {
            !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0)
        });
        if !port_ok {
            return Err(Invalid::new(
                &at.key("addr"),
                format!(
                    "expected host:port with a port from 1 to 65535, not `{}`",
                    c.addr
                ),
            ));
        }
        let heartbeat = at.key("heartbeat_interval_ms");
        let node_timeout = at.key("node_timeout_s");
        within(&heartbeat, c.heartbeat_interval_ms, 100..=600_000, "ms")?;
        within(&node_timeout, c.node_timeout_s, 1..=SLURM_MAX, "seconds")?;
        if u64::from(c.heartbeat_interval_ms) * 2 > u64::from(c.node_timeout_s) * 1000 {
            return Err(Invalid::new(
                &heartbeat,
                format!(
                    "heartbeat_interval_ms = {} and node_timeout_s = {}: heartbeats must \
                     come at least twice per node timeout (at most {} ms apart), or one \
                     late heartbeat takes a node DOWN",
                    c.heartbeat_interval_ms,
                    c.node_timeout_s,
                    u64::from(c.node_timeout_s) * 500
                ),
            )
            .or_at(&node_timeout));
        }
        within(
            &at.key("kill_wait_s"),
            c.kill_wait_s,
            0..=SLURM_MAX,
            "seconds",
        )?;
        within(
            &at.key("max_array_size"),
            c.max_array_size,
            0..=MAX_ARRAY_SIZE,
            "",
        )?;
        within(&at.key("max_job_count"), c.max_job_count, 1..=u32::MAX, "")?;
        let interval = at.key("sched_interval_ms");
        within(&interval, c.sched_interval_ms, 100..=3_600_000, "ms")?;
        let delay = at.key("sched_delay_ms");
        within(
            &delay,
            c.sched_delay_ms,
            0..=c.sched_interval_ms,
            "ms (sched_interval_ms)",
        )?;
        within(
            &at.key("max_connections"),
            c.max_connections,
            1..=1_000_000,
            "",
        )?;
        within(
            &at.key("max_streams_per_connection"),
            c.max_streams_per_connection,
            1..=10_000,
            "",
        )?;
        let idle = at.key("idle_timeout_s");
        within(&idle, c.idle_timeout_s, 1..=86_400, "seconds")?;
        if u64::from(c.idle_timeout_s) * 1000 <= u64::from(c.heartbeat_interval_ms) {
            return Err(Invalid::new(
                &idle,
                format!(
                    "must be longer than heartbeat_interval_ms = {} (node daemons' \
                     connections would close between heartbeats), not {} s",
                    c.heartbeat_interval_ms, c.idle_timeout_s
                ),
            )
            .or_at(&heartbeat));
        }
        for (key, value) in [
            ("request_timeout_s", c.request_timeout_s),
            ("client_read_timeout_s", c.client_read_timeout_s),
            ("keepalive_s", c.keepalive_s),
        ] {
            within(&at.key(key), value, 1..=3600, "seconds")?;
        }
        within(
            &at.key("state_min_free_mb"),
            c.state_min_free_mb,
            0..=1_048_576,
            "MB",
        )?;
        Ok(())
    }

    /// Checks `[[nodes]]`; returns every node name.
    fn check_nodes(&self, at: &KeyPath) -> Checked<BTreeSet<String>> {
        let mut names = BTreeSet::new();
        for (i, n) in self.nodes.iter().enumerate() {
            let at = at.index(i);
            let hosts = hostlist::expand(&n.names)
                .map_err(|e| Invalid::new(&at.key("names"), e.to_string()))?;
            if hosts.is_empty() {
                return Err(Invalid::new(&at.key("names"), "lists no node"));
            }
            if n.cpus == 0 {
                return Err(Invalid::new(&at.key("cpus"), "must be at least 1"));
            }
            match units::parse_memory_mb(&n.memory) {
                Ok(0) => return Err(Invalid::new(&at.key("memory"), "must be more than 0")),
                Ok(_) => {}
                Err(e) => return Err(Invalid::new(&at.key("memory"), e.to_string())),
            }
            if crate::node::is_share_type(&n.gpu_type) || crate::node::is_mig_profile(&n.gpu_type) {
                return Err(Invalid::new(
                    &at.key("gpu_type"),
                    format!(
                        "`{}` names shares or MIG instances, not whole GPUs (see \
                         shards_per_gpu, mps_per_gpu, mig_layout)",
                        n.gpu_type
                    ),
                ));
            }
            if !n.gpu_type.is_empty()
                && tres::canonical_name(&format!("gres/gpu:{}", n.gpu_type)).is_none()
            {
                return Err(Invalid::new(
                    &at.key("gpu_type"),
                    format!(
                        "invalid GPU type `{}` (letters, digits, `_`, `-` and `.`)",
                        n.gpu_type
                    ),
                ));
            }
            for (f, feature) in n.features.iter().enumerate() {
                check_feature(&at.key("features").index(f), feature)?;
            }
            check_socket_layout(n, &at)?;
            check_gpu_topology(n, &at)?;
            for h in hosts {
                if !names.insert(h.clone()) {
                    return Err(Invalid::new(
                        &at.key("names"),
                        format!("node {h} is defined twice"),
                    ));
                }
            }
        }
        Ok(names)
    }

    fn check_partitions(
        &self,
        at: &KeyPath,
        nodes: &BTreeSet<String>,
        qos: &BTreeSet<&str>,
    ) -> Checked {
        let mut seen = BTreeSet::new();
        let mut default: Option<&str> = None;
        for (i, p) in self.partitions.iter().enumerate() {
            let at = at.index(i);
            if !is_name(&p.name) {
                return Err(Invalid::new(
                    &at.key("name"),
                    format!("invalid partition name `{}` (one word)", p.name),
                ));
            }
            if !seen.insert(p.name.as_str()) {
                return Err(Invalid::new(
                    &at.key("name"),
                    format!("partition {} is defined twice", p.name),
                ));
            }
            if p.nodes != "ALL" {
                let hosts = hostlist::expand(&p.nodes)
                    .map_err(|e| Invalid::new(&at.key("nodes"), e.to_string()))?;
                if hosts.is_empty() {
                    return Err(Invalid::new(
                        &at.key("nodes"),
                        "lists no node (a hostlist, or ALL)",
                    ));
                }
                if let Some(h) = hosts.iter().find(|h| !nodes.contains(*h)) {
                    return Err(Invalid::new(&at.key("nodes"), format!("unknown node {h}")));
                }
            }
            let max_time = units::parse_time_limit(&p.max_time)
                .map_err(|e| Invalid::new(&at.key("max_time"), e.to_string()))?;
            if !p.default_time.is_empty() {
                let default_time = units::parse_time_limit(&p.default_time)
                    .map_err(|e| Invalid::new(&at.key("default_time"), e.to_string()))?;
                if let Some(max) = max_time
                    && default_time.is_none_or(|d| d > max)
                {
                    return Err(Invalid::new(
                        &at.key("default_time"),
                        format!(
                            "{} is longer than max_time ({})",
                            units::format_time_limit(default_time),
                            units::format_time_limit(Some(max))
                        ),
                    ));
                }
            }
            if PartitionState::parse(&p.state).is_none() {
                let names = PartitionState::ALL.map(PartitionState::name);
                one_of(&at.key("state"), &p.state, &names, "partition state")?;
            }
            within(
                &at.key("priority_job_factor"),
                p.priority_job_factor,
                0..=SLURM_MAX,
                "",
            )?;
            within(&at.key("priority_tier"), p.priority_tier, 0..=SLURM_MAX, "")?;
            if p.default {
                if let Some(first) = default {
                    return Err(Invalid::new(
                        &at.key("default"),
                        format!("more than one default partition ({first} and {})", p.name),
                    ));
                }
                default = Some(&p.name);
            }
            self.check_partition_access(p, &at, qos)?;
        }
        Ok(())
    }

    /// Checks a partition's `oversubscribe`, `allow_accounts`, `deny_accounts`,
    /// `allow_qos`, `deny_qos` and `allow_groups`: known accounts (when `[[accounts]]`
    /// lists any) and QOS, not both account lists nor both QOS lists, no empty group.
    fn check_partition_access(
        &self,
        p: &PartitionConfig,
        at: &KeyPath,
        qos: &BTreeSet<&str>,
    ) -> Checked {
        if OverSubscribe::parse(&p.oversubscribe).is_none() {
            return Err(Invalid::new(
                &at.key("oversubscribe"),
                format!(
                    "unknown OverSubscribe `{}` (expected NO, YES or EXCLUSIVE)",
                    p.oversubscribe
                ),
            ));
        }
        if !p.allow_accounts.is_empty() && !p.deny_accounts.is_empty() {
            return Err(Invalid::new(
                &at.key("deny_accounts"),
                "set allow_accounts or deny_accounts, not both",
            ));
        }
        let accounts: BTreeSet<&str> = self
            .accounts
            .iter()
            .map(|a| a.name.as_str())
            .chain([assoc::ROOT])
            .collect();
        for (key, list) in [
            ("allow_accounts", &p.allow_accounts),
            ("deny_accounts", &p.deny_accounts),
        ] {
            let unknown = |a: &String| {
                a.is_empty() || (!self.accounts.is_empty() && !accounts.contains(a.as_str()))
            };
            if let Some(i) = list.iter().position(unknown) {
                return Err(Invalid::new(
                    &at.key(key).index(i),
                    format!("unknown account `{}`", list[i]),
                ));
            }
        }
        if !p.allow_qos.is_empty() && !p.deny_qos.is_empty() {
            return Err(Invalid::new(
                &at.key("deny_qos"),
                "set allow_qos or deny_qos, not both",
            ));
        }
        for (key, list) in [("allow_qos", &p.allow_qos), ("deny_qos", &p.deny_qos)] {
            if let Some(i) = list.iter().position(|q| !qos.contains(q.as_str())) {
                return Err(Invalid::new(
                    &at.key(key).index(i),
                    format!("unknown QOS `{}`", list[i]),
                ));
            }
        }
        if let Some(i) = p.allow_groups.iter().position(String::is_empty) {
            return Err(Invalid::new(
                &at.key("allow_groups").index(i),
                "an empty group name",
            ));
        }
        Ok(())
    }

    fn check_auth(&self, at: &KeyPath) -> Checked {
        let a = &self.auth;
        for (key, path) in [("key_file", &a.key_file), ("socket", &a.socket)] {
            if !path.starts_with('/') {
                return Err(Invalid::new(
                    &at.key(key),
                    format!("must be an absolute path, not `{path}`"),
                ));
            }
        }
        // Slurm's AuthInfo ttl is at most a day; below 5 s a busy host's clock skew
        // refuses good credentials.
        within(
            &at.key("credential_ttl_s"),
            a.credential_ttl_s,
            5..=86_400,
            "s",
        )
    }

    /// With TLS on, its three files are named, by absolute paths.
    fn check_tls(&self, at: &KeyPath) -> Checked {
        let t = &self.tls;
        if !t.enabled {
            return Ok(());
        }
        for (key, path) in [
            ("ca_file", &t.ca_file),
            ("cert_file", &t.cert_file),
            ("key_file", &t.key_file),
        ] {
            if !path.starts_with('/') {
                return Err(Invalid::new(
                    &at.key(key),
                    format!("must be an absolute path with TLS enabled, not `{path}`"),
                ));
            }
        }
        Ok(())
    }

    fn check_node_daemon(&self, at: &KeyPath) -> Checked {
        let d = &self.node_daemon;
        for (key, path) in [
            ("prolog", &d.prolog),
            ("epilog", &d.epilog),
            ("health_check_program", &d.health_check_program),
        ] {
            if !path.is_empty() && !path.starts_with('/') {
                return Err(Invalid::new(
                    &at.key(key),
                    format!("must be an absolute path, not `{path}`"),
                ));
            }
        }
        if d.health_check_interval_s > 0 && d.health_check_program.is_empty() {
            return Err(Invalid::new(
                &at.key("health_check_interval_s"),
                "is set, but no health_check_program is",
            ));
        }
        Ok(())
    }

    fn check_cgroup(&self, at: &KeyPath) -> Checked {
        let prefix = &self.cgroup.prefix;
        let plain = |s: &str| !s.is_empty() && s != "." && s != ".." && is_name(s);
        if !prefix.split('/').all(plain) {
            return Err(Invalid::new(
                &at.key("prefix"),
                format!(
                    "must be a relative cgroup path of plain names (`drover`, \
                     `site/drover`), not `{prefix}`"
                ),
            ));
        }
        Ok(())
    }

    fn check_scheduler(&self, at: &KeyPath) -> Checked {
        let s = &self.scheduler;
        one_of(
            &at.key("policy"),
            &s.policy,
            &SCHEDULER_POLICIES,
            "scheduling policy",
        )?;
        one_of(
            &at.key("preempt_type"),
            &s.preempt_type,
            &PREEMPT_TYPES,
            "preempt type",
        )?;
        units::parse_duration_secs(&s.preempt_exempt_time)
            .map_err(|e| Invalid::new(&at.key("preempt_exempt_time"), e.to_string()))?;
        preempt_mode(&at.key("preempt_mode"), &s.preempt_mode)?;
        preempt_mode(&at.key("reclaim_mode"), &s.reclaim_mode)
    }

    fn check_priority(&self, at: &KeyPath) -> Checked {
        let p = &self.priority;
        one_of(&at.key("type"), &p.kind, &PRIORITY_TYPES, "priority type")?;
        one_of(
            &at.key("fairshare"),
            &p.fairshare,
            &FAIRSHARE_ALGORITHMS,
            "fair-share algorithm",
        )?;
        for (key, value) in [
            ("weight_tres", &p.weight_tres),
            ("billing_weights", &p.billing_weights),
        ] {
            tres::parse_weights(value).map_err(|e| Invalid::new(&at.key(key), e.to_string()))?;
        }
        for (key, value) in [
            ("max_age", &p.max_age),
            ("decay_half_life", &p.decay_half_life),
        ] {
            match units::parse_duration_secs(value) {
                Ok(Some(_)) => {}
                Ok(None) => {
                    return Err(Invalid::new(
                        &at.key(key),
                        "must be a duration (Slurm time syntax), not UNLIMITED",
                    ));
                }
                Err(e) => return Err(Invalid::new(&at.key(key), e.to_string())),
            }
        }
        let weights = [
            p.weight_age,
            p.weight_fairshare,
            p.weight_job_size,
            p.weight_partition,
            p.weight_qos,
            p.weight_assoc,
        ];
        let tres_weights: f64 = tres::parse_weights(&p.weight_tres)
            .map(|w| w.values().sum())
            .unwrap_or(0.0);
        let total = weights.iter().map(|w| f64::from(*w)).sum::<f64>() + tres_weights;
        if total > f64::from(u32::MAX) {
            return Err(Invalid::new(
                at,
                format!(
                    "the weights add up to {total}, more than 4294967295 (the largest \
                     priority)"
                ),
            ));
        }
        Ok(())
    }

    /// Checks `[[qos]]`; returns every QOS name, `normal` included.
    fn check_qos(&self, at: &KeyPath) -> Checked<BTreeSet<&str>> {
        let mut names = BTreeSet::from([assoc::DEFAULT_QOS]);
        let mut seen = BTreeSet::new();
        for (i, q) in self.qos.iter().enumerate() {
            let at = at.index(i);
            if !is_name(&q.name) {
                return Err(Invalid::new(
                    &at.key("name"),
                    format!("invalid QOS name `{}` (one word)", q.name),
                ));
            }
            if !seen.insert(q.name.as_str()) {
                return Err(Invalid::new(
                    &at.key("name"),
                    format!("QOS {} is defined twice", q.name),
                ));
            }
            names.insert(q.name.as_str());
            check_limits(
                &at,
                [
                    ("max_tres_per_user", &q.max_tres_per_user),
                    ("max_tres_per_job", &q.max_tres_per_job),
                    ("grp_tres", &q.grp_tres),
                    ("max_tres_mins", &q.max_tres_mins),
                    ("grp_tres_mins", &q.grp_tres_mins),
                ],
                &q.max_wall,
            )?;
            check_time(&at, "grp_wall", &q.grp_wall)?;
            // Empty: the cluster's mode.
            if !q.preempt_mode.is_empty() {
                preempt_mode(&at.key("preempt_mode"), &q.preempt_mode)?;
            }
            if !(0..=i64::from(u32::MAX)).contains(&q.grace_time) {
                return Err(Invalid::new(
                    &at.key("grace_time"),
                    format!(
                        "must be a number of seconds from 0 to 4294967295, not {}",
                        q.grace_time
                    ),
                ));
            }
            let idle = |key: &'static str, r: Result<(), crate::gpu_use::GpuIdleError>| {
                r.map_err(|e| Invalid::new(&at.key(key), e.to_string()))
            };
            idle(
                "gpu_idle_limit",
                crate::gpu_use::parse_limit(&q.gpu_idle_limit).map(drop),
            )?;
            idle(
                "gpu_idle_action",
                crate::gpu_use::parse_action(&q.gpu_idle_action).map(drop),
            )?;
            idle(
                "gpu_idle_grace",
                crate::gpu_use::parse_grace(&q.gpu_idle_grace).map(drop),
            )?;
            if !q.usage_factor.is_finite() || q.usage_factor < 0.0 {
                return Err(Invalid::new(
                    &at.key("usage_factor"),
                    format!("must be a number of at least 0, not {}", q.usage_factor),
                ));
            }
        }
        for (i, q) in self.qos.iter().enumerate() {
            let at = at.index(i).key("preempt");
            for (j, other) in q.preempt.iter().enumerate() {
                if !names.contains(other.as_str()) {
                    return Err(Invalid::new(&at.index(j), format!("unknown QOS {other}")));
                }
                if *other == q.name {
                    return Err(Invalid::new(
                        &at.index(j),
                        format!("QOS {other} cannot preempt itself"),
                    ));
                }
            }
        }
        Ok(names)
    }

    fn check_accounts(&self, at: &KeyPath, qos: &BTreeSet<&str>) -> Checked {
        let root = assoc::ROOT;
        let names: BTreeSet<&str> = self.accounts.iter().map(|a| a.name.as_str()).collect();
        let mut seen = BTreeSet::new();
        for (i, a) in self.accounts.iter().enumerate() {
            let at = at.index(i);
            if !is_name(&a.name) {
                return Err(Invalid::new(
                    &at.key("name"),
                    format!("invalid account name `{}`", a.name),
                ));
            }
            if !seen.insert(a.name.as_str()) {
                return Err(Invalid::new(
                    &at.key("name"),
                    format!("account {} is defined twice", a.name),
                ));
            }
            let parent = at.key("parent");
            if a.name == root && !(a.parent.is_empty() || a.parent == root) {
                return Err(Invalid::new(&parent, "root has no parent"));
            }
            if !a.parent.is_empty() && a.parent != root && !names.contains(a.parent.as_str()) {
                return Err(Invalid::new(
                    &parent,
                    format!("unknown parent account {}", a.parent),
                ));
            }
            if let Some(u) = a.users.iter().position(|u| !is_name(u)) {
                return Err(Invalid::new(
                    &at.key("users").index(u),
                    format!("invalid user name `{}`", a.users[u]),
                ));
            }
            check_limits(
                &at,
                [
                    ("grp_tres", &a.grp_tres),
                    ("grp_tres_mins", &a.grp_tres_mins),
                    ("guaranteed_tres", &a.guaranteed_tres),
                    ("borrowing_limit", &a.borrowing_limit),
                    ("lending_limit", &a.lending_limit),
                    ("max_tres_per_user", &a.max_tres_per_user),
                    ("max_tres_mins", &a.max_tres_mins),
                ],
                &a.max_wall,
            )?;
            check_time(&at, "grp_wall", &a.grp_wall)?;
            tres::parse_counts(&a.max_tres_per_job)
                .map_err(|e| Invalid::new(&at.key("max_tres_per_job"), e.to_string()))?;
            if let Some(q) = a.qos.iter().position(|q| !qos.contains(q.as_str())) {
                return Err(Invalid::new(
                    &at.key("qos").index(q),
                    format!("unknown QOS {}", a.qos[q]),
                ));
            }
            if !a.default_qos.is_empty() {
                if !qos.contains(a.default_qos.as_str()) {
                    return Err(Invalid::new(
                        &at.key("default_qos"),
                        format!("unknown QOS {}", a.default_qos),
                    ));
                }
                if !a.qos.is_empty() && !a.qos.contains(&a.default_qos) {
                    return Err(Invalid::new(
                        &at.key("default_qos"),
                        format!(
                            "{} is not among the account's qos ({})",
                            a.default_qos,
                            a.qos.join(", ")
                        ),
                    ));
                }
            }
            // Walking up must reach root: no cycles.
            let mut up = a;
            for _ in 0..=self.accounts.len() {
                match self
                    .accounts
                    .iter()
                    .find(|p| p.name == up.parent && up.name != root)
                {
                    Some(next) => up = next,
                    None => break,
                }
            }
            if up.name != root && !up.parent.is_empty() && up.parent != root {
                return Err(Invalid::new(
                    &parent,
                    format!("account {} is its own ancestor", a.name),
                ));
            }
        }
        Ok(())
    }
}

/// A node feature: one name that `--constraint` can ask for.
fn check_feature(at: &KeyPath, feature: &str) -> Checked {
    match Constraint::parse(feature) {
        Ok(c) if c.features().len() == 1 && c.features().contains(feature) => Ok(()),
        Ok(_) => Err(Invalid::new(
            at,
            format!("`{feature}` is an expression, not one feature name"),
        )),
        Err(e) => Err(Invalid::new(
            at,
            format!("invalid feature `{feature}`: {}", e.message),
        )),
    }
}

/// The TRES limits and the MaxWall of a QOS or an account.
fn check_limits<const N: usize>(
    at: &KeyPath,
    counts: [(&'static str, &String); N],
    wall: &str,
) -> Checked {
    for (key, value) in counts {
        tres::parse_counts(value).map_err(|e| Invalid::new(&at.key(key), e.to_string()))?;
    }
    check_time(at, "max_wall", wall)
}

/// A time limit in Slurm's syntax under `key` (empty: none).
fn check_time(at: &KeyPath, key: &'static str, value: &str) -> Checked {
    if !value.is_empty() {
        units::parse_time_limit(value).map_err(|e| Invalid::new(&at.key(key), e.to_string()))?;
    }
    Ok(())
}

/// The MIG keys of a `[[nodes]]` entry: a layout that fits one GPU, on some of the
/// entry's GPUs, and no more devices on a node than the scheduler counts.
fn check_mig(n: &NodeConfig, at: &KeyPath) -> Checked {
    if n.mig_layout.is_empty() {
        return match n.mig_gpus {
            Some(_) => Err(Invalid::new(
                &at.key("mig_gpus"),
                "needs a `mig_layout` (the instances each of those GPUs is split into)",
            )),
            None => Ok(()),
        };
    }
    crate::node::parse_mig_layout(&n.mig_layout)
        .map_err(|m| Invalid::new(&at.key("mig_layout"), m))?;
    let mig = n.mig_gpu_count();
    if mig == 0 || mig > n.gpus {
        return Err(Invalid::new(
            &at.key("mig_gpus"),
            format!("must be 1 to {} (the entry's `gpus`)", n.gpus),
        ));
    }
    Ok(())
}

/// One kind of shares of a `[[nodes]]` entry (`shards_per_gpu`/`shard_gpus`,
/// `mps_per_gpu`/`mps_gpus`): shared GPUs that the entry has, apart from those in MIG
/// mode or shared otherwise (`free` are left).
fn check_shares(
    at: &KeyPath,
    (per_gpu_key, gpus_key): (&str, &'static str),
    per_gpu: u32,
    gpus_set: Option<u32>,
    count: u32,
    free: u32,
) -> Checked {
    if per_gpu == 0 {
        return match gpus_set {
            Some(_) => Err(Invalid::new(
                &at.key(gpus_key),
                format!("needs `{per_gpu_key}` (how many shares each of those GPUs is)"),
            )),
            None => Ok(()),
        };
    }
    if count == 0 || count > free {
        return Err(Invalid::new(
            &at.key(gpus_key),
            format!(
                "must be 1 to {free} (the entry's GPUs neither in MIG mode nor shared otherwise)"
            ),
        ));
    }
    Ok(())
}

/// The processor layout keys of a `[[nodes]]` entry: counts of at least 1 whose product
/// is the entry's `cpus`.
fn check_socket_layout(n: &NodeConfig, at: &KeyPath) -> Checked {
    let declared = [
        ("sockets", n.sockets),
        ("cores_per_socket", n.cores_per_socket),
        ("threads_per_core", n.threads_per_core),
    ];
    if let Some((key, _)) = declared.iter().find(|(_, v)| *v == Some(0)) {
        return Err(Invalid::new(&at.key(key), "must be at least 1"));
    }
    let Some((key, _)) = declared.iter().find(|(_, v)| v.is_some()) else {
        return Ok(());
    };
    let layout = n.socket_layout();
    if layout.cpus() != n.cpus {
        return Err(Invalid::new(
            &at.key(key),
            format!(
                "{} sockets of {} cores of {} threads are {} CPUs, not the entry's {}",
                layout.sockets,
                layout.cores_per_socket,
                layout.threads_per_core,
                layout.cpus(),
                n.cpus
            ),
        ));
    }
    Ok(())
}

/// The most GPU devices (whole GPUs and MIG instances) of one node the scheduler counts.
const MAX_GPU_DEVICES: usize = 64;

/// The GPU topology keys of a `[[nodes]]` entry: one NUMA node and one device file per
/// GPU, every GPU in exactly one NVLink domain.
fn check_gpu_topology(n: &NodeConfig, at: &KeyPath) -> Checked {
    if !n.gpu_files.is_empty() {
        let files = hostlist::expand(&n.gpu_files)
            .map_err(|e| Invalid::new(&at.key("gpu_files"), e.to_string()))?;
        if files.len() != n.gpus as usize || files.iter().any(|f| !f.starts_with('/')) {
            return Err(Invalid::new(
                &at.key("gpu_files"),
                format!(
                    "names {} files for {} GPUs (one absolute path per GPU, as                      `/dev/nvidia[0-7]`)",
                    files.len(),
                    n.gpus
                ),
            ));
        }
    }
    if !n.gpu_numa.is_empty() && n.gpu_numa.len() != n.gpus as usize {
        return Err(Invalid::new(
            &at.key("gpu_numa"),
            format!(
                "lists {} NUMA nodes for {} GPUs (one entry per GPU)",
                n.gpu_numa.len(),
                n.gpus
            ),
        ));
    }
    check_numa_cpus(n, at)?;
    if !n.gpu_memory.is_empty() && crate::units::parse_memory_mb(&n.gpu_memory).is_err() {
        return Err(Invalid::new(
            &at.key("gpu_memory"),
            format!("invalid memory `{}` (as `80G`)", n.gpu_memory),
        ));
    }
    if !n.tmp_disk.is_empty() && crate::units::parse_memory_mb(&n.tmp_disk).is_err() {
        return Err(Invalid::new(
            &at.key("tmp_disk"),
            format!("invalid size `{}` (as `100G`)", n.tmp_disk),
        ));
    }
    check_mig(n, at)?;
    let mut taken = n.mig_gpu_count().min(n.gpus);
    for (per_gpu_key, gpus_key, per_gpu, gpus_set, count) in [
        (
            "shards_per_gpu",
            "shard_gpus",
            n.shards_per_gpu,
            n.shard_gpus,
            n.shard_gpu_count(),
        ),
        (
            "mps_per_gpu",
            "mps_gpus",
            n.mps_per_gpu,
            n.mps_gpus,
            n.mps_gpu_count(),
        ),
    ] {
        check_shares(
            at,
            (per_gpu_key, gpus_key),
            per_gpu,
            gpus_set,
            count,
            n.gpus - taken,
        )?;
        taken += count;
    }
    let devices = n.devices_on_gpus().len();
    if devices > MAX_GPU_DEVICES {
        return Err(Invalid::new(
            &at.key("gpus"),
            format!(
                "gives each node {devices} GPU devices (at most {MAX_GPU_DEVICES}: whole \
                 GPUs, MIG instances and shares together)"
            ),
        ));
    }
    if n.nvlink_domains.is_empty() {
        return Ok(());
    }
    each_once(
        at,
        "nvlink_domains",
        &n.nvlink_domains,
        (n.gpus, "GPU"),
        |i| format!("GPU {i} is in more than one NVLink domain"),
        |i| {
            format!(
                "GPU {i} is in no NVLink domain (list every GPU once; a GPU without \
                 NVLink is a domain of its own)"
            )
        },
    )
}

/// `key`'s index lists (`0-3,8`) of a node's `count` CPUs or GPUs (`what`) name each
/// one exactly once: `twice` and `missing` say which one does not.
fn each_once(
    at: &KeyPath,
    key: &'static str,
    groups: &[String],
    (count, what): (u32, &str),
    twice: impl Fn(u32) -> String,
    missing: impl Fn(u32) -> String,
) -> Checked {
    let mut seen = vec![false; count as usize];
    for (k, group) in groups.iter().enumerate() {
        let at = at.key(key).index(k);
        for i in parse_indices(group, count, what).map_err(|m| Invalid::new(&at, m))? {
            if std::mem::replace(&mut seen[i as usize], true) {
                return Err(Invalid::new(&at, twice(i)));
            }
        }
    }
    match seen.iter().position(|s| !s) {
        Some(i) => Err(Invalid::new(&at.key(key), missing(i as u32))),
        None => Ok(()),
    }
}

/// `numa_cpus`: every CPU of the node on exactly one NUMA node, and every GPU's NUMA
/// node (`gpu_numa`, or its default) among them.
fn check_numa_cpus(n: &NodeConfig, at: &KeyPath) -> Checked {
    if n.numa_cpus.is_empty() {
        return Ok(());
    }
    each_once(
        at,
        "numa_cpus",
        &n.numa_cpus,
        (n.cpus, "CPU"),
        |cpu| format!("CPU {cpu} is on more than one NUMA node"),
        |cpu| format!("CPU {cpu} is on no NUMA node (list every CPU once)"),
    )?;
    for g in 0..n.gpus {
        let numa = n
            .gpu_numa
            .get(g as usize)
            .copied()
            .unwrap_or_else(|| crate::node::default_gpu_numa(g, n.gpus));
        if numa as usize >= n.numa_cpus.len() {
            return Err(Invalid::new(
                &at.key("gpu_numa"),
                format!("GPU {g} is on NUMA node {numa}, which `numa_cpus` does not list"),
            ));
        }
    }
    Ok(())
}
