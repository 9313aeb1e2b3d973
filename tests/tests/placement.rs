//! GPU placement, node features and partition access end to end: real daemons on
//! loopback with fake GPUs from the config (their NUMA nodes and NVLink domains
//! declared there), driven through `sbatch`, `squeue` and `scontrol`.

use std::time::Duration;
use tests::{Cluster, ClusterSpec, wait_until};

const T: Duration = Duration::from_secs(30);

/// tn1 and tn2: 8 GPUs each; tn2's NVLink domains are the even and the odd GPUs (so
/// the lowest free indices are never an NVLink-local pair), and so are its NUMA
/// nodes' CPUs. tn3: no GPUs.
const NODES: &str = r#"
[[nodes]]
names = "tn1"
cpus = 8
memory = "8G"
gpus = 8
gpu_type = "h100"
features = ["h100", "ib"]
config_overrides = true
[[nodes]]
names = "tn2"
cpus = 8
memory = "8G"
gpus = 8
gpu_type = "h100"
features = ["h100", "nvswitch"]
config_overrides = true
gpu_numa = [0, 1, 0, 1, 0, 1, 0, 1]
nvlink_domains = ["0,2,4,6", "1,3,5,7"]
numa_cpus = ["0,2,4,6", "1,3,5,7"]
[[nodes]]
names = "tn3"
cpus = 8
memory = "8G"
features = ["cpu"]
config_overrides = true
"#;

const PARTITIONS: &str = r#"
[[qos]]
name = "high"
[[partitions]]
name = "restricted"
nodes = "tn3"
deny_accounts = ["guests"]
allow_qos = ["high"]
[[partitions]]
name = "whole"
nodes = "tn3"
oversubscribe = "EXCLUSIVE"
"#;

fn nodes_of(c: &Cluster, id: u32) -> String {
    c.squeue_field(id, "%N")
}

/// The job's output file once it holds a line.
fn output(c: &Cluster, id: u32) -> String {
    let path = c.work.join(format!("slurm-{id}.out"));
    let mut text = String::new();
    let done = wait_until(T, || {
        text = std::fs::read_to_string(&path).unwrap_or_default();
        text.ends_with('\n')
    });
    assert!(done, "job {id} wrote no output; logs:\n{}", c.logs());
    text.trim().to_string()
}

#[test]
fn gpu_jobs_pack_nvlink_local_and_constraints_pick_nodes() {
    let c = Cluster::start(ClusterSpec {
        nodes: 3,
        node_entries: NODES.into(),
        extra: PARTITIONS.into(),
        ..ClusterSpec::default()
    });
    // A 2-GPU job pinned to tn2 takes an NVLink pair of its own: 0,2.
    let script = "echo $CUDA_VISIBLE_DEVICES\nsleep 60";
    let a = c.sbatch(&["--gpus=2", "-w", "tn2"], script);
    c.wait_state(a, "RUNNING", T);
    assert_eq!(output(&c, a), "0,2");
    // The next 2-GPU job packs onto tn2 (6 free) rather than the idle tn1 (8 free),
    // inside the domain that has just 2 left: 4,6.
    let b = c.sbatch(&["--gres=gpu:h100:2"], script);
    c.wait_state(b, "RUNNING", T);
    assert_eq!(nodes_of(&c, b), "tn2");
    assert_eq!(output(&c, b), "4,6");
    // Its CPU ids sit on the NUMA node of its GPUs (0 on tn2, CPUs 0,2,4,6 as
    // `numa_cpus` says), after job a's CPU 0.
    let detail = c.ok(&["scontrol", "-d", "show", "job", &b.to_string()]);
    assert!(
        detail.contains("JOB_GRES=gpu:2\n     Nodes=tn2 CPU_IDs=2 Mem=")
            && detail.contains("GRES=gpu:2(IDX:4,6)"),
        "{detail}"
    );
    // So tn1 is still whole for an 8-GPU job.
    let whole = c.sbatch(&["--gpus-per-node=8"], script);
    c.wait_state(whole, "RUNNING", T);
    assert_eq!(nodes_of(&c, whole), "tn1");
    assert_eq!(output(&c, whole), "0,1,2,3,4,5,6,7");
    // Another 8-GPU job waits; `drover why` says how fragmented the free GPUs are.
    let blocked = c.sbatch(&["--gpus=8", "-C", "h100"], "true");
    let mut why = String::new();
    let said = wait_until(T, || {
        why = c.ok(&["drover", "why", &blocked.to_string()]);
        why.contains(
            "GPU fragmentation index 1.00 (the share of free GPUs on partly used nodes); \
             the largest free block is 4 GPUs on tn2",
        )
    });
    assert!(said, "{why}");
    c.ok(&["scancel", &blocked.to_string()]);

    // Constraints, on the command line and in #SBATCH lines. The OR allows tn2 and
    // tn3; a CPU-only job prefers the node without free GPUs: tn3.
    let ib = c.sbatch(&[], "#SBATCH --constraint=ib&h100\nhostname");
    let cpu = c.sbatch(&["-C", "(cpu|nvswitch)"], "hostname");
    c.wait_state(ib, "COMPLETED", T);
    c.wait_state(cpu, "COMPLETED", T);
    assert_eq!(nodes_of(&c, ib), "tn1");
    assert_eq!(nodes_of(&c, cpu), "tn3");
    assert_eq!(c.squeue_field(ib, "%f"), "ib&h100");
    let node = c.ok(&["scontrol", "show", "node", "tn2"]);
    assert!(
        node.contains("AvailableFeatures=h100,nvswitch")
            && node.contains("ActiveFeatures=h100,nvswitch"),
        "{node}"
    );

    // Refused at submit with Slurm's messages, and nothing is queued.
    let before = c.ok(&["squeue", "-h", "-t", "all", "-o", "%i"]);
    for (args, want) in [
        (
            vec!["-C", "ib&nvswitch"],
            "Requested node configuration is not available",
        ),
        (vec!["-C", "v100"], "Invalid feature specification"),
        (vec!["-C", "(ib|"], "Invalid feature specification"),
        (
            vec!["-p", "restricted", "-C", "h100"],
            "Requested node configuration is not available",
        ),
        (
            vec!["-p", "restricted", "-A", "guests", "--qos=high"],
            "Invalid account or account/partition combination specified",
        ),
        (vec!["-p", "restricted"], "Invalid qos specification"),
    ] {
        let script = c.work.join("refused.sh");
        std::fs::write(&script, "#!/bin/sh\ntrue\n").unwrap();
        let mut argv = vec!["sbatch"];
        argv.extend(args.iter().copied());
        let path = script.display().to_string();
        argv.push(&path);
        let out = c.run(&argv);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{argv:?} was accepted");
        assert!(
            err.contains(&format!(
                "sbatch: error: Batch job submission failed: {want}"
            )),
            "{argv:?}: {err}"
        );
    }
    assert_eq!(c.ok(&["squeue", "-h", "-t", "all", "-o", "%i"]), before);
    let allowed = c.sbatch(&["-p", "restricted", "--qos=high"], "true");
    c.wait_state(allowed, "COMPLETED", T);

    // An exclusive partition gives the job the whole node.
    let excl = c.sbatch(&["-p", "whole", "-n", "1"], "true");
    c.wait_state(excl, "COMPLETED", T);
    assert_eq!(c.field(excl, "AllocCPUS"), "8");
    let part = c.ok(&["scontrol", "show", "partition", "restricted"]);
    assert!(part.contains("DenyAccounts=guests AllowQos=high"), "{part}");
    let part = c.ok(&["scontrol", "show", "partition", "whole"]);
    assert!(part.contains("OverSubscribe=EXCLUSIVE"), "{part}");
    for id in [a, b, whole] {
        c.ok(&["scancel", &id.to_string()]);
    }
}

#[test]
fn a_node_range_takes_as_many_nodes_as_are_free_at_its_start() {
    let c = Cluster::start(ClusterSpec::default());
    let script = "echo $SLURM_JOB_NUM_NODES $SLURM_JOB_NODELIST\nsleep 60";
    // An idle cluster of three: `-N 2-3` takes all three.
    let wide = c.sbatch(&["-N", "2-3"], script);
    c.wait_state(wide, "RUNNING", T);
    assert_eq!(output(&c, wide), "3 tn[1-3]");
    c.ok(&["scancel", &wide.to_string()]);
    c.wait_state(wide, "CANCELLED", T);
    // With tn1 taken whole, two.
    let whole = c.sbatch(&["-w", "tn1", "--exclusive"], "sleep 60");
    c.wait_state(whole, "RUNNING", T);
    let two = c.sbatch(&["-N", "2-3"], script);
    c.wait_state(two, "RUNNING", T);
    assert_eq!(output(&c, two), "2 tn[2-3]");
    // With every node taken, a ranged job waits and shows its range.
    let waits = c.sbatch(&["-N", "2-3", "--exclusive"], script);
    let mut detail = String::new();
    assert!(
        wait_until(T, || {
            detail = c.ok(&["scontrol", "show", "job", &waits.to_string()]);
            detail.contains("JobState=PENDING")
        }),
        "{detail}"
    );
    assert!(detail.contains("NumNodes=2-3 "), "{detail}");
}

#[test]
fn shards_and_mps_shares_of_shared_gpus_run_side_by_side() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        node_entries: "[[nodes]]\nnames = \"tn1\"\ncpus = 8\nmemory = \"8G\"\ngpus = 3\n\
                       gpu_type = \"h100\"\nshards_per_gpu = 4\nmps_per_gpu = 10\n\
                       gpu_memory = \"80G\"\n\
                       config_overrides = true\n"
            .into(),
        ..ClusterSpec::default()
    });
    // GPU 1 is whole or 4 shards, GPU 2 whole or 10 MPS shares, as in Slurm.
    let gres = c.ok(&["sinfo", "-h", "-N", "-o", "%N %G"]);
    assert_eq!(gres.trim(), "tn1 gpu:h100:3,shard:4,mps:10");
    // Half of GPU 2 through MPS: half its threads, half its 80 GB.
    let mps = c.sbatch(
        &["--gres=mps:5"],
        "echo $CUDA_VISIBLE_DEVICES $CUDA_MPS_ACTIVE_THREAD_PERCENTAGE \
         $CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
    );
    c.wait_state(mps, "COMPLETED", T);
    assert_eq!(output(&c, mps), "2 50 0=40960MB");
    // Two jobs of two shards each share GPU 1; a whole-GPU job gets GPU 0 beside them
    // (the one that cannot be shared).
    let script =
        "echo $CUDA_VISIBLE_DEVICES $SLURM_SHARDS_ON_NODE\nwhile [ ! -e go ]; do sleep 0.05; done";
    let a = c.sbatch(&["--gres=shard:2"], script);
    let b = c.sbatch(&["--gres=shard:2"], script);
    let whole = c.sbatch(&["--gpus=1"], script);
    for id in [a, b, whole] {
        c.wait_state(id, "RUNNING", T);
    }
    assert_eq!(output(&c, a), "1 2");
    assert_eq!(output(&c, b), "1 2");
    assert_eq!(output(&c, whole).split_whitespace().next(), Some("0"));
    let used = c.ok(&["sinfo", "-h", "-N", "-O", "GresUsed"]);
    assert!(used.contains("shard:4"), "{used}");
    // No shard is left: one more waits.
    let more = c.sbatch(&["--gres=shard:1"], "true");
    assert!(wait_until(T, || c.squeue_field(more, "%r") == "Resources"));
    // GPU 1 is shared, so a second whole-GPU job gets GPU 2, whose MPS shares are
    // then not given: an MPS job waits, though no MPS share is taken.
    let second = c.sbatch(&["--gpus=1"], script);
    c.wait_state(second, "RUNNING", T);
    assert_eq!(output(&c, second).split_whitespace().next(), Some("2"));
    let mps_waits = c.sbatch(&["--gres=mps:1"], "true");
    // (Priority: the shard job before it waits too, as Slurm names it.)
    assert!(wait_until(T, || c.squeue_field(mps_waits, "%r") == "Priority"));
    std::fs::write(c.work.join("go"), "").unwrap();
    c.wait_state(more, "COMPLETED", T);
    c.wait_state(mps_waits, "COMPLETED", T);
    let detail = c.ok(&["scontrol", "show", "node", "tn1"]);
    assert!(
        detail.contains("gres/gpu=3,gres/shard=4,gres/mps=10"),
        "{detail}"
    );
}
