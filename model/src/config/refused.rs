//! Broken configs, one a row: each is refused with `file:line: message` on one line,
//! the line of the value at fault, and words an admin can act on.
//!
//! A row's text comes first in the file, followed by a valid `BASE` (four nodes
//! `n[1-4]`, one partition), so its line is the line within the row's text.

use crate::Config;

const BASE: &str = r#"
[[nodes]]
names = "n[1-4]"
cpus = 8
memory = "16G"
gpus = 2
gpu_type = "h100"
[[partitions]]
name = "batch"
nodes = "ALL"
"#;

/// One node entry of four GPUs for the node rows, followed by the row's own keys.
const NODE: &str = "[[nodes]]\nnames = \"g1\"\ncpus = 4\nmemory = \"8G\"\ngpus = 4\n";

/// A row: the text, the line the error must name, and words it must carry.
struct Row {
    text: String,
    line: usize,
    words: &'static [&'static str],
}

fn row(text: &str, line: usize, words: &'static [&'static str]) -> Row {
    Row {
        text: text.to_string(),
        line,
        words,
    }
}

/// A row of a `[[nodes]]` entry: `extra` starts on line 6.
fn node_row(extra: &str, line: usize, words: &'static [&'static str]) -> Row {
    row(&format!("{NODE}{extra}"), line, words)
}

fn rows() -> Vec<Row> {
    vec![
        // ------------------------------------------------ the top of the file
        row(
            "cluster_name = \"\"\n",
            1,
            &["cluster_name: invalid cluster name ``"],
        ),
        row(
            "cluster_name = \"my cluster\"\n",
            1,
            &["cluster_name", "one word"],
        ),
        row(
            "state_dir = \"\"\n",
            1,
            &["state_dir: must be an absolute path"],
        ),
        row(
            "state_dir = \"var/drover\"\n",
            1,
            &["state_dir", "`var/drover`"],
        ),
        row("clustername = \"x\"\n", 1, &["unknown field `clustername`"]),
        row(
            "cluster_name = 5\n",
            1,
            &["cluster_name: invalid type: integer"],
        ),
        row("cluster_name = \"x\n", 1, &["string"]),
        row(
            "cluster_name = \"a\"\ncluster_name = \"b\"\n",
            2,
            &["duplicate key"],
        ),
        // ------------------------------------------------ [controller]
        row(
            "[controller]\nnode_timeout_s = 0\n",
            2,
            &["node_timeout_s: must be from 1 to 65533 seconds, not 0"],
        ),
        row(
            "[controller]\nnode_timeout_s = 100000\n",
            2,
            &["node_timeout_s", "65533", "100000"],
        ),
        row(
            "[controller]\nheartbeat_interval_ms = 30000\nnode_timeout_s = 30\n",
            2,
            &[
                "heartbeat_interval_ms: heartbeat_interval_ms = 30000 and node_timeout_s = 30",
                "at most 15000 ms apart",
            ],
        ),
        row(
            "[controller]\nnode_timeout_s = 3\n",
            2,
            &[
                "node_timeout_s: heartbeat_interval_ms = 2000 and node_timeout_s = 3",
                "DOWN",
            ],
        ),
        row(
            "[controller]\nheartbeat_interval_ms = 0\n",
            2,
            &["heartbeat_interval_ms", "from 100 to 600000 ms"],
        ),
        row(
            "[controller]\nstate_min_free_mb = 2000000\n",
            2,
            &["state_min_free_mb", "from 0 to 1048576 MB"],
        ),
        row(
            "[controller]\nkill_wait_s = 70000\n",
            2,
            &["kill_wait_s", "from 0 to 65533 seconds"],
        ),
        row(
            "[controller]\nmax_array_size = 5000000\n",
            2,
            &["max_array_size", "4000001"],
        ),
        row(
            "[controller]\nmax_job_count = 0\n",
            2,
            &["max_job_count", "from 1"],
        ),
        row(
            "[controller]\nsched_interval_ms = 0\n",
            2,
            &["sched_interval_ms", "from 100"],
        ),
        row(
            "[controller]\nsched_interval_ms = 500\nsched_delay_ms = 5000\n",
            3,
            &["sched_delay_ms", "from 0 to 500 ms"],
        ),
        row(
            "[controller]\naddr = \"localhost\"\n",
            2,
            &["addr: expected host:port", "`localhost`"],
        ),
        row(
            "[controller]\naddr = \"127.0.0.1:0\"\n",
            2,
            &["addr", "from 1 to 65535"],
        ),
        row(
            "[controller]\naddr = \"127.0.0.1:70000\"\n",
            2,
            &["addr", "from 1 to 65535"],
        ),
        row(
            "[controller]\nnode_timeout_s = -5\n",
            2,
            &["node_timeout_s", "from 0 to 4294967295"],
        ),
        row(
            "[controller]\nrequeue_delay_s = -1\n",
            2,
            &["requeue_delay_s", "from 0 to 4294967295"],
        ),
        row(
            "[controller]\nnode_timeout_s = \"30s\"\n",
            2,
            &["node_timeout_s: invalid type: string"],
        ),
        row(
            "[controller]\nmax_connections = 0\n",
            2,
            &["max_connections", "from 1 to 1000000"],
        ),
        row(
            "[controller]\nmax_connections = 4\n",
            2,
            &["max_connections: must be more than the 4 nodes", "not 4"],
        ),
        row(
            "[controller]\nidle_timeout_s = 1\n",
            2,
            &[
                "idle_timeout_s: must be longer than heartbeat_interval_ms = 2000",
                "not 1 s",
            ],
        ),
        row(
            "[controller]\nrequest_timeout_s = 0\n",
            2,
            &["request_timeout_s", "from 1 to 3600 seconds"],
        ),
        row(
            "[controller]\nclient_read_timeout_s = 100000\n",
            2,
            &["client_read_timeout_s", "3600"],
        ),
        row(
            "[controller]\nmax_streams_per_connection = 0\n",
            2,
            &["max_streams_per_connection", "from 1"],
        ),
        row(
            "[controller]\nkeepalive_s = 0\n",
            2,
            &["keepalive_s", "from 1 to 3600"],
        ),
        row(
            "[controller]\n\nbogus = 1\n",
            3,
            &["unknown field `bogus`", "node_timeout_s"],
        ),
        row(
            "controller = 5\n",
            1,
            &["controller: invalid type: integer `5`, expected a table"],
        ),
        // ------------------------------------------------ [[nodes]]
        row(
            "[[nodes]]\nnames = \"g[1-2\"\ncpus = 4\nmemory = \"8G\"\n",
            2,
            &["names", "unbalanced brackets"],
        ),
        row(
            "[[nodes]]\nnames = \"\"\ncpus = 4\nmemory = \"8G\"\n",
            2,
            &["names: lists no node"],
        ),
        row(
            "[[nodes]]\nnames = \"g1\"\ncpus = 0\nmemory = \"8G\"\n",
            3,
            &["cpus: must be at least 1"],
        ),
        row(
            "[[nodes]]\nnames = \"g1\"\ncpus = 2.5\nmemory = \"8G\"\n",
            3,
            &["cpus: invalid type: floating point"],
        ),
        row(
            "[[nodes]]\nnames = \"g1\"\ncpus = 4\nmemory = \"8Q\"\n",
            4,
            &["memory: invalid memory specification `8Q`"],
        ),
        row(
            "[[nodes]]\nnames = \"g1\"\ncpus = 4\nmemory = \"8G\"\ntmp_disk = \"lots\"\n",
            5,
            &["tmp_disk: invalid size `lots` (as `100G`)"],
        ),
        row(
            "[[nodes]]\nnames = \"g1\"\ncpus = 4\nmemory = \"0\"\n",
            4,
            &["memory: must be more than 0"],
        ),
        row(
            "[[nodes]]\nnames = \"g1\"\ncpus = 4\n",
            1,
            &["missing field `memory`"],
        ),
        row(
            "[[nodes]]\nnames = \"g1\"\ncpus = 4\nmemory = \"8G\"\n\
             [[nodes]]\nnames = \"g[0-2]\"\ncpus = 4\nmemory = \"8G\"\n",
            6,
            &["names: node g1 is defined twice"],
        ),
        row(
            "[[nodes]]\nnames = \"g1\"\ncpus = 4\nmemory = \"8G\"\ncpus = 8\n",
            5,
            &["duplicate key"],
        ),
        node_row(
            "sockets = 2\ncores_per_socket = 4\n",
            6,
            &["sockets: 2 sockets of 4 cores of 1 threads are 8 CPUs, not the entry's 4"],
        ),
        node_row(
            "threads_per_core = 3\n",
            6,
            &["threads_per_core", "not the entry's 4"],
        ),
        node_row(
            "sockets = 4000000000\ncores_per_socket = 4000000000\n",
            6,
            &["sockets:", "not the entry's 4"],
        ),
        node_row(
            "cores_per_socket = 0\n",
            6,
            &["cores_per_socket: must be at least 1"],
        ),
        node_row(
            "features = [\"ib\", \"a&b\"]\n",
            6,
            &["features", "`a&b` is an expression"],
        ),
        node_row(
            "features = [\n  \"ib\",\n  \"has space\",\n]\n",
            8,
            &["features: invalid feature `has space`", "spaces"],
        ),
        node_row(
            "gpu_type = \"h100:80g\"\n",
            6,
            &["gpu_type: invalid GPU type `h100:80g`"],
        ),
        node_row(
            "gpu_numa = [0, 1]\n",
            6,
            &["gpu_numa: lists 2 NUMA nodes for 4 GPUs"],
        ),
        node_row(
            "nvlink_domains = [\"0-1\", \"1-3\"]\n",
            6,
            &["nvlink_domains: GPU 1 is in more than one NVLink domain"],
        ),
        node_row(
            "gpu_files = \"/dev/nvidia[0-2]\"\n",
            6,
            &["gpu_files: names 3 files for 4 GPUs"],
        ),
        node_row(
            "gpu_files = \"nvidia[0-3]\"\n",
            6,
            &["gpu_files", "one absolute path per GPU"],
        ),
        node_row(
            "nvlink_domains = [\"0-4\"]\n",
            6,
            &["nvlink_domains", "GPU index 4 out of range"],
        ),
        // ------------------------------------------------ [[partitions]]
        row(
            "[[partitions]]\nname = \"gpu\"\nnodes = \"n[1-9]\"\n",
            3,
            &["nodes: unknown node n5"],
        ),
        row(
            "[[partitions]]\nname = \"gpu\"\nnodes = \"\"\n",
            3,
            &["nodes: lists no node"],
        ),
        row(
            "[[partitions]]\nname = \"gpu\"\n",
            1,
            &["missing field `nodes`"],
        ),
        row(
            "[[partitions]]\nname = \"gpu\"\nnodes = \"n1\"\nmax_time = \"1:00:00\"\n\
             default_time = \"2:00:00\"\n",
            5,
            &["default_time: 2:00:00 is longer than max_time (1:00:00)"],
        ),
        row(
            "[[partitions]]\nname = \"gpu\"\nnodes = \"n1\"\nmax_time = \"1:00:00\"\n\
             default_time = \"UNLIMITED\"\n",
            5,
            &["default_time: UNLIMITED is longer than max_time"],
        ),
        row(
            "[[partitions]]\nname = \"gpu\"\nnodes = \"n1\"\nmax_time = \"forever\"\n",
            4,
            &["max_time: invalid time specification `forever`"],
        ),
        row(
            "[[partitions]]\nname = \"gpu\"\nnodes = \"n1\"\n\
             [[partitions]]\nname = \"gpu\"\nnodes = \"n2\"\n",
            5,
            &["name: partition gpu is defined twice"],
        ),
        row(
            "[[partitions]]\nname = \"a\"\nnodes = \"n1\"\ndefault = true\n\
             [[partitions]]\nname = \"b\"\nnodes = \"n2\"\ndefault = true\n",
            8,
            &["default: more than one default partition (a and b)"],
        ),
        row(
            "[[partitions]]\nname = \"gpu\"\nnodes = \"n1\"\nstate = \"OPEN\"\n",
            4,
            &["state: unknown partition state `OPEN` (expected UP, DOWN, DRAIN or INACTIVE)"],
        ),
        row(
            "[[partitions]]\nname = \"gpu\"\nnodes = \"n1\"\npriority_tier = 70000\n",
            4,
            &["priority_tier: must be from 0 to 65533"],
        ),
        row(
            "[[partitions]]\nname = \"gpu\"\nnodes = \"n1\"\noversubscribe = \"FORCE\"\n",
            4,
            &[
                "oversubscribe: unknown OverSubscribe `FORCE`",
                "NO, YES or EXCLUSIVE",
            ],
        ),
        row(
            "[[partitions]]\nname = \"gpu\"\nnodes = \"n1\"\nallow_qos = [\n  \"normal\",\n  \"gold\",\n]\n",
            6,
            &["allow_qos: unknown QOS `gold`"],
        ),
        row(
            "[[partitions]]\nname = \"gpu\"\nnodes = \"n1\"\nallow_accounts = [\"a\"]\n\
             deny_accounts = [\"b\"]\n",
            5,
            &["deny_accounts: set allow_accounts or deny_accounts, not both"],
        ),
        row(
            "[[partitions]]\nname = \"gpu\"\nnodes = \"n1\"\ndeny_qos = [\"gold\"]\n",
            4,
            &["deny_qos: unknown QOS `gold`"],
        ),
        row(
            "[[partitions]]\nname = \"gpu\"\nnodes = \"n1\"\nallow_qos = [\"normal\"]\n\
             deny_qos = [\"normal\"]\n",
            5,
            &["deny_qos: set allow_qos or deny_qos, not both"],
        ),
        row(
            "[[partitions]]\nname = \"gpu nodes\"\nnodes = \"n1\"\n",
            2,
            &["name: invalid partition name `gpu nodes`"],
        ),
        row(
            "[controller]\naddr = \"h:1\"\npurge_job_after = \"12weeks\"\n",
            3,
            &["purge_job_after: `12weeks` is not an age"],
        ),
        row(
            "[controller]\naddr = \"h:1\"\npurge_step_after = \"0days\"\n",
            3,
            &["purge_step_after: `0days` is not an age"],
        ),
        row(
            "[controller]\naddr = \"h:1\"\nreturn_to_service = 3\n",
            3,
            &["return_to_service: must be 0, 1 or 2, not 3"],
        ),
        row(
            "[controller]\nprivate_data = [\"jobs\", \"nodes\"]\n",
            2,
            &["private_data", "unknown variant `nodes`"],
        ),
        // ------------------------------------------------ [node_daemon]
        row(
            "[node_daemon]\nprolog = \"prolog.sh\"\n",
            2,
            &["prolog: must be an absolute path, not `prolog.sh`"],
        ),
        row(
            "[node_daemon]\nhealth_check_interval_s = 60\n",
            2,
            &["health_check_interval_s: is set, but no health_check_program is"],
        ),
        // ------------------------------------------------ [auth]
        row(
            "[auth]\nkey_file = \"cluster.key\"\n",
            2,
            &["key_file: must be an absolute path, not `cluster.key`"],
        ),
        row(
            "[auth]\ncredential_ttl_s = 0\n",
            2,
            &["credential_ttl_s: must be from 5 to 86400 s, not 0"],
        ),
        // ------------------------------------------------ [cgroup]
        row(
            "[cgroup]\nmode = \"v3\"\n",
            2,
            &["mode", "unknown variant `v3`"],
        ),
        row(
            "[cgroup]\nprefix = \"../escape\"\n",
            2,
            &["prefix: must be a relative cgroup path", "`../escape`"],
        ),
        row("[cgroup]\nprefix = \"/abs\"\n", 2, &["prefix"]),
        // ------------------------------------------------ [scheduler]
        row(
            "[scheduler]\npolicy = \"lottery\"\n",
            2,
            &["policy: unknown scheduling policy `lottery` (expected easy, conservative or fcfs)"],
        ),
        row(
            "[scheduler]\npreempt_type = \"preempt/qos\"\n",
            2,
            &[
                "preempt_type: unknown preempt type",
                "none, qos or partition_prio",
            ],
        ),
        row(
            "[scheduler]\npreempt_mode = \"kill\"\n",
            2,
            &["preempt_mode: unknown preempt mode `kill`"],
        ),
        row(
            "[scheduler]\npreempt_exempt_time = \"soon\"\n",
            2,
            &["preempt_exempt_time: invalid time"],
        ),
        row(
            "[scheduler]\nbf_max_reservations = -1\n",
            2,
            &["bf_max_reservations", "whole number"],
        ),
        // ------------------------------------------------ [priority]
        row(
            "[priority]\ntype = \"fancy\"\n",
            2,
            &["type: unknown priority type `fancy` (expected multifactor or basic)"],
        ),
        row(
            "[priority]\nweight_age = 4000000000\nweight_fairshare = 4000000000\n",
            1,
            &["priority: the weights add up to 8000000000"],
        ),
        row(
            "[priority]\ndecay_half_life = \"UNLIMITED\"\n",
            2,
            &["decay_half_life", "not UNLIMITED"],
        ),
        row(
            "[priority]\nweight_tres = \"cpus=1\"\n",
            2,
            &["weight_tres: invalid TRES"],
        ),
        row(
            "[priority]\nfavor_small = \"yes\"\n",
            2,
            &["favor_small: invalid type: string"],
        ),
        // ------------------------------------------------ [[qos]]
        row(
            "[[qos]]\nname = \"high\"\npreempt = [\"low\"]\n",
            3,
            &["preempt: unknown QOS low"],
        ),
        row(
            "[[qos]]\nname = \"high\"\npreempt = [\"high\"]\n",
            3,
            &["QOS high cannot preempt itself"],
        ),
        row(
            "[[qos]]\nname = \"a\"\n[[qos]]\nname = \"a\"\n",
            4,
            &["name: QOS a is defined twice"],
        ),
        row(
            "[[qos]]\nname = \"low\"\nusage_factor = -1.0\n",
            3,
            &["usage_factor: must be a number of at least 0"],
        ),
        row(
            "[[qos]]\nname = \"low\"\ngrace_time = -1\n",
            3,
            &["grace_time: must be a number of seconds"],
        ),
        row(
            "[[qos]]\nname = \"low\"\ngpu_idle_action = \"kill\"\n",
            3,
            &["gpu_idle_action: must be one of warn, requeue, cancel, not \"kill\""],
        ),
        row(
            "[[qos]]\nname = \"low\"\ngpu_idle_limit = \"an hour\"\n",
            3,
            &["gpu_idle_limit: invalid time"],
        ),
        row(
            "[[qos]]\nname = \"low\"\ngpu_idle_grace = \"1:2:3:4\"\n",
            3,
            &["gpu_idle_grace: invalid time"],
        ),
        row("[[qos]]\nname = \"\"\n", 2, &["name: invalid QOS name ``"]),
        row(
            "[tls]\nenabled = true\nca_file = \"/ca.pem\"\ncert_file = \"cert.pem\"\n",
            4,
            &["cert_file: must be an absolute path with TLS enabled, not `cert.pem`"],
        ),
        row(
            "[[qos]]\nname = \"low\"\nmax_wall = \"forever\"\n",
            3,
            &["max_wall: invalid time"],
        ),
        row(
            "[[qos]]\nname = \"low\"\ngrp_jobs = -3\n",
            3,
            &["grp_jobs", "whole number"],
        ),
        // ------------------------------------------------ [[accounts]]
        row(
            "[[accounts]]\nname = \"a\"\nparent = \"b\"\n[[accounts]]\nname = \"b\"\nparent = \"a\"\n",
            3,
            &["parent: account a is its own ancestor"],
        ),
        row(
            "[[accounts]]\nname = \"a\"\nparent = \"nope\"\n",
            3,
            &["parent: unknown parent account nope"],
        ),
        row(
            "[[accounts]]\nname = \"a\"\n[[accounts]]\nname = \"a\"\n",
            4,
            &["name: account a is defined twice"],
        ),
        row(
            "[[accounts]]\nname = \"a\"\nqos = [\"gold\"]\n",
            3,
            &["qos: unknown QOS gold"],
        ),
        row(
            "[[qos]]\nname = \"high\"\n[[accounts]]\nname = \"ml\"\nqos = [\"high\"]\ndefault_qos = \"normal\"\n",
            6,
            &["default_qos: normal is not among the account's qos (high)"],
        ),
        row(
            "[[accounts]]\nname = \"a\"\nusers = [\"al ice\"]\n",
            3,
            &["users: invalid user name `al ice`"],
        ),
        row(
            "[[accounts]]\nname = \"root\"\nparent = \"a\"\n[[accounts]]\nname = \"a\"\n",
            3,
            &["parent: root has no parent"],
        ),
        row(
            "[[accounts]]\nname = \"a\"\ngrp_tres = \"gpu=x\"\n",
            3,
            &["grp_tres: invalid TRES"],
        ),
        row(
            "[[accounts]]\nname = \"a\"\nshares = 0.5\n",
            3,
            &["shares: invalid type: floating point"],
        ),
    ]
}

#[test]
fn the_base_is_valid() {
    let c = Config::parse(BASE, "drover.toml").unwrap();
    assert_eq!(c.node_list().len(), 4);
    Config::parse(&format!("{NODE}{BASE}"), "drover.toml").unwrap();
}

#[test]
fn every_broken_config_is_refused_with_its_line() {
    let rows = rows();
    assert!(rows.len() >= 43, "{} rows", rows.len());
    let mut failures = Vec::new();
    for r in &rows {
        let text = format!("{}{BASE}", r.text);
        let shown = match Config::parse(&text, "/etc/drover/drover.toml") {
            Ok(_) => {
                failures.push(format!("accepted:\n{}", r.text));
                continue;
            }
            Err(e) => e.to_string(),
        };
        let prefix = format!("/etc/drover/drover.toml:{}: ", r.line);
        if !shown.starts_with(&prefix)
            || shown.contains('\n')
            || r.words.iter().any(|w| !shown.contains(w))
        {
            failures.push(format!(
                "{}\n  wanted {prefix}... with {:?}\n  got    {shown}",
                r.text, r.words
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
