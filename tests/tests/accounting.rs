//! `sacctmgr` as admin scripts use it, against a real controller and node daemon on
//! loopback, with real Unix users: accounts, users and limits added and changed,
//! enforced at once with Slurm's reasons, kept across a controller restart, and
//! refused to anyone but operators and administrators.

use std::io::Write;
use std::time::Duration;
use tests::{Cluster, ClusterSpec, on_terminal, wait_until};

const T: Duration = Duration::from_secs(30);

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `sacctmgr -i ARGS` as root: it must succeed; its stdout.
fn admin(c: &Cluster, args: &[&str]) -> String {
    let mut argv = vec!["sacctmgr", "-i"];
    argv.extend_from_slice(args);
    c.ok(&argv)
}

/// `sacctmgr -n -P show ARGS`: its rows.
fn show(c: &Cluster, args: &[&str]) -> Vec<String> {
    let mut argv = vec!["sacctmgr", "-n", "-P", "show"];
    argv.extend_from_slice(args);
    c.ok(&argv).lines().map(str::to_string).collect()
}

/// Waits until the job's pending reason is `want`.
fn wait_reason(c: &Cluster, id: u32, want: &str) {
    let mut last = String::new();
    let ok = wait_until(T, || {
        last = c.squeue_field(id, "%r");
        last == want
    });
    assert!(ok, "job {id}: wanted reason {want}, last `{last}`");
}

#[test]
fn sacctmgr_changes_are_enforced_at_once_kept_across_a_restart_and_only_for_admins() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        extra: "[[accounts]]\nname = \"ml\"\nusers = [\"drover-alice\"]\n".into(),
        ..ClusterSpec::default()
    });
    c.wait_nodes_up();
    let alice = c.user("drover-alice");
    let bob = c.user("drover-bob");

    // The config's account seeds the associations.
    assert_eq!(
        show(&c, &["account", "format=account,descr,org"]),
        ["ml|ml|ml", "root|default root account|root"]
    );

    let added = admin(
        &c,
        &[
            "add",
            "account",
            "vision",
            "parent=ml",
            "description=Vision team",
            "fairshare=3",
        ],
    );
    assert!(
        added.starts_with(" Adding Account(s)\n  vision\n"),
        "{added}"
    );
    let added = admin(&c, &["add", "user", "drover-bob", "account=vision"]);
    assert!(
        added.starts_with(" Adding User(s)\n  drover-bob\n"),
        "{added}"
    );
    admin(
        &c,
        &[
            "modify",
            "user",
            "where",
            "name=drover-bob",
            "account=vision",
            "set",
            "MaxJobs=1",
        ],
    );
    assert_eq!(
        show(
            &c,
            &["user", "drover-bob", "format=user,defaultaccount,admin"]
        ),
        ["drover-bob|vision|None"]
    );
    assert!(
        show(&c, &["assoc", "format=account,user,share,maxjobs"])
            .contains(&"vision|drover-bob|1|1".to_string())
    );

    // Enforced at once: bob's second job pends on his association's MaxJobs.
    let gate = bob.dir.join("release");
    let body = format!("while [ ! -e {} ]; do sleep 0.1; done", gate.display());
    let first = c.sbatch_as(&bob, &[], &body);
    c.wait_state(first, "RUNNING", T);
    let second = c.sbatch_as(&bob, &[], "true");
    wait_reason(&c, second, "AssocMaxJobsLimit");
    // And so is membership: bob is not in ml.
    let refused = c.run_as(&bob, &["sbatch", "-A", "ml", "--wrap", "true"]);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("Invalid account"),
        "{}",
        text(&refused.stderr)
    );

    // Not an admin: refused, and nothing changed.
    let denied = c.run_as(&alice, &["sacctmgr", "-i", "add", "account", "evil"]);
    assert_eq!(denied.status.code(), Some(1));
    assert!(
        text(&denied.stderr).contains("privilege"),
        "{}",
        text(&denied.stderr)
    );
    assert!(show(&c, &["account", "evil"]).is_empty());

    // Without -i, sacctmgr asks; no keeps nothing.
    let asked = c.run_with_stdin(&["sacctmgr", "add", "qos", "high"], "n\n");
    assert!(
        text(&asked.stdout).contains("(N/y): ")
            && text(&asked.stdout).contains("Changes Discarded"),
        "{}",
        text(&asked.stdout)
    );
    assert!(show(&c, &["qos", "high", "format=name"]).is_empty());
    let asked = c.run_with_stdin(&["sacctmgr", "add", "qos", "high", "priority=10"], "y\n");
    assert!(asked.status.success(), "{}", text(&asked.stderr));
    assert_eq!(
        show(&c, &["qos", "high", "format=name,priority"]),
        ["high|10"]
    );

    // An administrator made with sacctmgr acts as one: alice may now change accounting.
    admin(
        &c,
        &[
            "modify",
            "user",
            "drover-alice",
            "set",
            "adminlevel=Operator",
        ],
    );
    let allowed = c.run_as(
        &alice,
        &[
            "sacctmgr",
            "-i",
            "modify",
            "account",
            "vision",
            "set",
            "GrpJobs=5",
            "GuaranteedTRES=gres/gpu=2",
            "BorrowingLimit=gres/gpu=1",
            "LendingLimit=gres/gpu=1",
        ],
    );
    assert!(allowed.status.success(), "{}", text(&allowed.stderr));

    // Everything survives a restart of the controller.
    c.kill_ctld();
    c.start_ctld();
    let assocs = show(&c, &["assoc", "format=account,user,share,maxjobs,grpjobs"]);
    assert!(assocs.contains(&"vision||3||5".to_string()), "{assocs:?}");
    assert!(
        assocs.contains(&"vision|drover-bob|1|1|".to_string()),
        "{assocs:?}"
    );
    let guarantee = show(
        &c,
        &[
            "assoc",
            "account=vision",
            "format=account,user,guaranteedtres,borrowinglimit,lendinglimit",
        ],
    );
    assert_eq!(
        guarantee[0], "vision||gres/gpu=2|gres/gpu=1|gres/gpu=1",
        "{guarantee:?}"
    );
    assert_eq!(
        show(&c, &["user", "drover-alice", "format=user,admin"]),
        ["drover-alice|Operator"]
    );
    wait_reason(&c, second, "AssocMaxJobsLimit");

    // A user with a live job cannot be deleted; once it ended, they can.
    let busy = c.run(&["sacctmgr", "-i", "delete", "user", "drover-bob"]);
    assert_eq!(busy.status.code(), Some(1));
    assert!(
        text(&busy.stderr).contains("Job(s) active"),
        "{}",
        text(&busy.stderr)
    );
    std::fs::write(&gate, "").unwrap();
    c.wait_state(first, "COMPLETED", T);
    c.wait_state(second, "COMPLETED", T);
    // The records, exported for other tools.
    let csv = c.ok(&[
        "drover",
        "export",
        "csv",
        "-a",
        "-X",
        "-o",
        "JobID,User,Account,State",
    ]);
    assert!(
        csv.starts_with("JobID,User,Account,State\n")
            && csv.contains(&format!("{first},drover-bob,vision,COMPLETED\n")),
        "{csv}"
    );
    let lines = c.ok(&["drover", "export", "jsonl", "-a", "-j", &second.to_string()]);
    assert_eq!(lines.lines().count(), 1, "{lines}");
    assert!(lines.contains("\"account\":\"vision\""), "{lines}");
    let deleted = admin(&c, &["delete", "user", "drover-bob"]);
    assert!(deleted.contains("drover-bob"), "{deleted}");
    let refused = c.run_as(&bob, &["sbatch", "--wrap", "true"]);
    assert!(!refused.status.success());

    // sreport reads the same controller (its figures are checked on a known workload
    // in its unit tests: a live run's jobs are in the current hour, which Slurm's
    // reports leave out).
    let report = c.ok(&["sreport", "-P", "cluster", "AccountUtilizationByUser"]);
    assert!(
        report.contains("Cluster/Account/User Utilization")
            && report.contains("Cluster|Account|Login|Proper Name|Used"),
        "{report}"
    );
}

/// MaxTRESMins per job and GrpWall (of an account and of a QOS) set with `sacctmgr`:
/// jobs wait with Slurm's reasons, the limits are listed and kept across a restart,
/// and clearing them (`-1`) lets the jobs run.
#[test]
fn max_tres_mins_and_grp_wall_hold_jobs_until_cleared() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        extra: "[[accounts]]\nname = \"ml\"\nusers = [\"drover-alice\"]\n".into(),
        ..ClusterSpec::default()
    });
    c.wait_nodes_up();
    let alice = c.user("drover-alice");

    // 2 CPUs for 10 minutes are 20 CPU-minutes: over MaxCPUMins=10.
    admin(&c, &["modify", "account", "ml", "set", "MaxCPUMins=10"]);
    let big = c.sbatch_as(&alice, &["-c", "2", "-t", "10"], "true");
    wait_reason(&c, big, "AssocMaxCpuMinutesPerJobLimit");
    let small = c.sbatch_as(&alice, &["-c", "1", "-t", "5"], "true");
    c.wait_state(small, "COMPLETED", T);

    // GrpWall=0: no more wall time for ml's jobs. On a cluster it is refused.
    admin(&c, &["modify", "account", "ml", "set", "GrpWall=0"]);
    let walled = c.sbatch_as(&alice, &["-t", "1"], "true");
    wait_reason(&c, walled, "AssocGrpWallLimit");
    let root = c.run(&["sacctmgr", "-i", "modify", "cluster", "set", "GrpWall=10"]);
    assert_eq!(root.status.code(), Some(1));
    assert!(
        text(&root.stderr).contains("GrpWall cannot be set on a cluster"),
        "{}",
        text(&root.stderr)
    );

    let listed = || {
        show(
            &c,
            &[
                "assoc",
                "account=ml",
                "format=account,user,grpwall,maxcpumins,maxtresmins",
            ],
        )
    };
    let want = ["ml||00:00:00|10|cpu=10", "ml|drover-alice||10|cpu=10"];
    assert_eq!(listed(), want);
    c.kill_ctld();
    c.start_ctld();
    assert_eq!(listed(), want, "kept across a restart");
    wait_reason(&c, walled, "AssocGrpWallLimit");
    // A QOS's GrpWall comes first, as Slurm checks the QOS before the association.
    admin(&c, &["modify", "qos", "normal", "set", "GrpWall=0"]);
    assert_eq!(
        show(&c, &["qos", "normal", "format=name,grpwall"]),
        ["normal|00:00:00"]
    );
    wait_reason(&c, walled, "QOSGrpWallLimit");

    admin(
        &c,
        &[
            "modify",
            "account",
            "ml",
            "set",
            "GrpWall=-1",
            "MaxCPUMins=-1",
        ],
    );
    wait_reason(&c, walled, "QOSGrpWallLimit");
    admin(&c, &["modify", "qos", "normal", "set", "GrpWall=-1"]);
    c.wait_state(big, "COMPLETED", T);
    c.wait_state(walled, "COMPLETED", T);
}

/// `sacctmgr modify job`: a finished job's accounting record takes a comment and a
/// DerivedExitCode (a wait status, as Slurm keeps it), from its owner or an operator,
/// kept across a restart.
#[test]
fn a_finished_jobs_record_takes_a_comment_and_a_derived_exit_code() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    c.wait_nodes_up();
    let alice = c.user("drover-alice");
    let bob = c.user("drover-bob");
    let id = c.sbatch_as(&alice, &[], "true");
    c.wait_state(id, "COMPLETED", T);
    let job = id.to_string();
    // The job's own row (its steps' follow).
    let record = || {
        c.sacct_rows(id, "ExitCode,DerivedExitCode,Comment")
            .lines()
            .next()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(record(), "0:0|0:0|");
    let refused = c.run_as(
        &bob,
        &[
            "sacctmgr",
            "-i",
            "modify",
            "job",
            &job,
            "set",
            "Comment=mine",
        ],
    );
    assert!(!refused.status.success());
    let done = c.run_as(
        &alice,
        &[
            "sacctmgr",
            "-i",
            "modify",
            "job",
            &format!("job={job}"),
            "set",
            "DerivedExitCode=22",
            "Comment=hello",
        ],
    );
    assert!(done.status.success(), "{}", text(&done.stderr));
    assert_eq!(text(&done.stdout), format!(" Modified jobs...\n  {job}\n"));
    assert_eq!(record(), "0:0|0:22|hello");
    c.kill_ctld();
    c.start_ctld();
    assert_eq!(record(), "0:0|0:22|hello", "kept across a restart");
}

/// A job waiting on a dependency is not eligible yet (sacct's Eligible is Unknown, and
/// `-s PD` leaves it out, as Slurm's); it becomes eligible once the dependency is met.
#[test]
fn a_job_is_eligible_once_its_dependency_is_met() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    c.wait_nodes_up();
    let gate = c.work.join("gate");
    let first = c.sbatch(
        &[],
        &format!("while [ ! -e {} ]; do sleep 0.1; done", gate.display()),
    );
    c.wait_state(first, "RUNNING", T);
    let waiting = c.sbatch(&[&format!("--dependency=afterany:{first}")], "true");
    wait_reason(&c, waiting, "Dependency");
    let eligible = || {
        c.ok(&[
            "sacct",
            "-n",
            "-P",
            "-X",
            "-j",
            &waiting.to_string(),
            "-o",
            "Eligible",
        ])
        .trim()
        .to_string()
    };
    assert_eq!(eligible(), "Unknown");
    let pending = c.ok(&["sacct", "-n", "-P", "-X", "-a", "-s", "PD", "-o", "JobID"]);
    assert!(
        !pending.lines().any(|l| l == waiting.to_string()),
        "{pending}"
    );
    std::fs::write(&gate, "").unwrap();
    c.wait_state(waiting, "COMPLETED", T);
    assert_ne!(eligible(), "Unknown");
}

/// sacctmgr's question answered from a terminal: one key answers, as Slurm's takes the
/// terminal out of line mode while it asks (Slurm's suite sends `N` without Enter).
#[test]
fn a_terminal_answers_the_commit_question_with_one_key() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    let ask = |account: &str, keys: &[u8]| {
        let mut sacctmgr = c.command("sacctmgr");
        sacctmgr.args(["add", "account", account]);
        let mut run = on_terminal(sacctmgr, None);
        let text = || String::from_utf8_lossy(&run.seen.lock().unwrap()).into_owned();
        assert!(wait_until(T, || text().contains("(N/y): ")), "{:?}", text());
        run.master.write_all(keys).unwrap();
        let status = run.child.wait().unwrap();
        drop(run.slave);
        run.reader.join().unwrap();
        assert!(status.success(), "{:?}", text());
        text()
    };
    let no = ask("keyno", b"xN");
    assert!(no.contains("Y or N please"), "{no:?}");
    assert!(no.ends_with(" Changes Discarded\r\n"), "{no:?}");
    assert!(!no.contains("timeout"), "{no:?}");
    ask("keyyes", b"y");
    assert_eq!(
        show(&c, &["account", "format=account"]),
        ["default", "keyyes", "root"]
    );
}

/// Another cluster's associations, as a site's shared slurmdbd keeps them: added with
/// `sacctmgr add cluster`, changed by `cluster=`, listed with their cluster, kept
/// across a restart, and never used here: an account only the other cluster has is
/// refused to this cluster's jobs.
#[test]
fn other_clusters_associations_are_kept_and_listed_but_not_scheduled() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        extra: "[[accounts]]\nname = \"ml\"\nusers = [\"drover-alice\"]\n".into(),
        ..ClusterSpec::default()
    });
    c.wait_nodes_up();
    let alice = c.user("drover-alice");
    let added = admin(&c, &["add", "cluster", "west", "GrpJobs=7", "Fairshare=30"]);
    assert!(
        added.starts_with(" Adding Cluster(s)\n  Name          = west\n"),
        "{added}"
    );
    let again = c.run(&["sacctmgr", "-i", "add", "cluster", "west"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(text(&again.stdout).contains("This cluster west already exists."));
    admin(&c, &["add", "account", "nlp", "cluster=west", "MaxJobs=3"]);
    let added = admin(
        &c,
        &["add", "user", "drover-alice", "account=nlp", "cluster=west"],
    );
    assert!(added.contains("C = west"), "{added}");
    let unknown = c.run(&["sacctmgr", "-i", "add", "account", "x", "cluster=east"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        text(&unknown.stderr).contains("This cluster 'east' doesn't exist."),
        "{}",
        text(&unknown.stderr)
    );

    let own = c.ok(&["sacctmgr", "-n", "-P", "show", "cluster", "format=cluster"]);
    let listed = |c: &Cluster| {
        (
            show(c, &["cluster", "format=cluster,share,grpjobs"]),
            show(
                c,
                &[
                    "assoc",
                    "cluster=west",
                    "format=cluster,account,user,maxjobs",
                ],
            ),
        )
    };
    let expected = (
        vec![
            format!("{}|1|", own.lines().next().unwrap()),
            "west|30|7".to_string(),
        ],
        vec![
            "west|root||".to_string(),
            "west|root|root|".to_string(),
            "west|nlp||3".to_string(),
            "west|nlp|drover-alice|3".to_string(),
        ],
    );
    let mut clusters = listed(&c);
    clusters.0.sort();
    assert_eq!(clusters, expected);
    // Not scheduled here: nlp is not this cluster's.
    let refused = c.run_as(&alice, &["sbatch", "-A", "nlp", "--wrap", "true"]);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("Invalid account"),
        "{}",
        text(&refused.stderr)
    );

    c.kill_ctld();
    c.start_ctld();
    let mut clusters = listed(&c);
    clusters.0.sort();
    assert_eq!(clusters, expected, "kept across a restart");
    let deleted = admin(&c, &["delete", "cluster", "west"]);
    assert!(
        deleted.starts_with(" Deleting clusters...\n  west\n"),
        "{deleted}"
    );
    assert!(show(&c, &["assoc", "cluster=west"]).is_empty());
    // alice keeps her own cluster's association.
    assert_eq!(
        show(&c, &["user", "drover-alice", "format=user"]),
        ["drover-alice"]
    );
}

/// `private_data = ["accounts", "users"]` (Slurm's PrivateData): a user's `sacctmgr
/// show` lists only their own accounts and themselves; an administrator sees all.
#[test]
fn private_accounting_shows_a_user_only_their_own() {
    // The users exist before the controller starts, as on a real cluster.
    for name in ["drover-alice", "drover-bob", "drover-carol"] {
        tests::test_user(name);
    }
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        controller_extra: "private_data = [\"accounts\", \"users\"]\n".into(),
        extra: "[[accounts]]\nname = \"ml\"\nusers = [\"drover-alice\", \"drover-carol\"]\n\
                [[accounts]]\nname = \"physics\"\nusers = [\"drover-bob\"]\n"
            .into(),
        ..ClusterSpec::default()
    });
    let alice = c.user("drover-alice");
    let rows = |out: std::process::Output| -> Vec<String> {
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout).lines().map(str::to_string).collect()
    };
    let seen = rows(c.run_as(
        &alice,
        &[
            "sacctmgr",
            "-n",
            "-P",
            "show",
            "assoc",
            "format=account,user",
        ],
    ));
    assert_eq!(seen, ["root|", "ml|", "ml|drover-alice"]);
    let users = rows(c.run_as(
        &alice,
        &["sacctmgr", "-n", "-P", "show", "user", "format=user"],
    ));
    assert_eq!(users, ["drover-alice"]);
    let all = show(&c, &["assoc", "format=account,user"]);
    assert!(
        all.contains(&"physics|drover-bob".to_string())
            && all.contains(&"ml|drover-carol".to_string()),
        "{all:?}"
    );
}

/// sacct over more records than one chunk of the streamed listing holds (2,048 full
/// records): every record arrives, once.
#[test]
fn sacct_lists_a_history_longer_than_one_chunk() {
    const JOBS: usize = 2100;
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..JOBS / 4 {
                    let out = c.run(&["sbatch", "-H", "--wrap", "true"]);
                    assert!(out.status.success(), "{}", text(&out.stderr));
                }
            });
        }
    });
    c.ok(&["scancel", "--state", "PENDING", "-u", "root"]);
    // Held, then cancelled: never eligible, so listed by their state (as Slurm's sacct
    // leaves jobs never eligible out of a window without -s).
    let out = c.ok(&[
        "sacct",
        "-a",
        "-X",
        "-n",
        "-P",
        "-s",
        "CA",
        "-S",
        "2000-01-01",
        "-o",
        "JobID,State",
    ]);
    let rows: Vec<&str> = out.lines().collect();
    assert_eq!(rows.len(), JOBS, "{}", &out[..out.len().min(2000)]);
    let ids: std::collections::BTreeSet<&str> =
        rows.iter().filter_map(|r| r.split('|').next()).collect();
    assert_eq!(ids.len(), JOBS);
    assert!(rows.iter().all(|r| r.ends_with("|CANCELLED by 0")), "{out}");
}
