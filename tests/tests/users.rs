//! Jobs run as the user who submitted them, with that user's rights: real Unix users
//! made by `useradd` (the tests run as root), a real cluster on loopback, the CLI run
//! as those users.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tests::{Cluster, ClusterSpec};

const T: Duration = Duration::from_secs(30);

fn owner(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().uid()
}

#[test]
fn a_job_runs_as_its_user_with_the_users_groups_home_and_umask() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    let alice = c.user("drover-alice");
    // A supplementary group, which the job must have too.
    let _ = std::process::Command::new("groupadd")
        .arg("drover-team")
        .output();
    let added = std::process::Command::new("usermod")
        .args(["--append", "--groups", "drover-team", "drover-alice"])
        .status()
        .unwrap();
    assert!(added.success());
    let id = std::process::Command::new("id")
        .args(["-G", "drover-alice"])
        .output()
        .unwrap();
    let id = String::from_utf8_lossy(&id.stdout).into_owned();
    assert_eq!(id.split_whitespace().count(), 2, "{id}");
    // The umask at submit travels with the job as SLURM_UMASK.
    let job = c.sbatch_as(
        &alice,
        &["--export=NONE"],
        "echo \"uid=$(id -u) gid=$(id -g) groups=$(id -G) user=$USER home=$HOME\"\n\
         umask\ntouch made-by-job",
    );
    c.wait_state(job, "COMPLETED", T);
    let out_file = alice.dir.join(format!("slurm-{job}.out"));
    let out = std::fs::read_to_string(&out_file).unwrap();
    assert!(
        out.contains(&format!(
            "uid={} gid={} groups={} user=drover-alice home=/home/drover-alice",
            alice.uid,
            alice.gid,
            id.trim()
        )),
        "{out}"
    );
    assert_eq!(owner(&out_file), alice.uid);
    assert_eq!(owner(&alice.dir.join("made-by-job")), alice.uid);
    // sbatch ran with umask 027; the job's files are made under it.
    assert!(out.lines().any(|l| l.trim() == "0027"), "{out}");
    let mode = std::fs::metadata(alice.dir.join("made-by-job"))
        .unwrap()
        .mode();
    assert_eq!(mode & 0o777, 0o640);
}

#[test]
fn a_user_cannot_write_through_output_paths_or_into_others_files() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    let alice = c.user("drover-alice");
    let bob = c.user("drover-bob");
    let bobs_file = bob.dir.join("notes");
    std::fs::write(&bobs_file, "bob's\n").unwrap();
    std::os::unix::fs::chown(&bobs_file, Some(bob.uid), Some(bob.gid)).unwrap();

    // An output path into bob's directory, and one into /etc: the job cannot start.
    for target in [
        bob.dir.join("stolen.out"),
        PathBuf::from("/etc/drover-test-stolen"),
    ] {
        let path = target.display().to_string();
        let job = c.sbatch_as(&alice, &["-o", &path], "echo hi");
        c.wait_state(job, "FAILED", T);
        assert!(!target.exists(), "{path} was written");
    }
    // The relative form of the same escape.
    let job = c.sbatch_as(&alice, &["-o", "../../../etc/drover-test-rel"], "echo hi");
    c.wait_state(job, "FAILED", T);
    assert!(!Path::new("/etc/drover-test-rel").exists());

    // Inside the job, bob's file is bob's.
    let path = bobs_file.display().to_string();
    let job = c.sbatch_as(&alice, &[], &format!("echo mine > {path}"));
    c.wait_state(job, "FAILED", T);
    assert_eq!(std::fs::read_to_string(&bobs_file).unwrap(), "bob's\n");
}

#[test]
fn export_none_gives_the_job_the_users_login_environment() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    let carol = c.user("drover-carol");
    // What the user's login shell sets: the job gets it under --export=NONE only.
    let profile = Path::new("/home/drover-carol/.profile");
    std::fs::write(profile, "export DROVER_LOGIN_MARK=from-profile\n").unwrap();
    std::os::unix::fs::chown(profile, Some(carol.uid), Some(carol.gid)).unwrap();
    let show = "echo \"mark=$DROVER_LOGIN_MARK home=$HOME get=$SLURM_GET_USER_ENV\"";
    let none = c.sbatch_as(&carol, &["--export=NONE"], show);
    let all = c.sbatch_as(&carol, &[], show);
    for id in [none, all] {
        c.wait_state(id, "COMPLETED", T);
    }
    let out = |id: u32| std::fs::read_to_string(carol.dir.join(format!("slurm-{id}.out"))).unwrap();
    assert_eq!(
        out(none).trim(),
        "mark=from-profile home=/home/drover-carol get="
    );
    // --export=ALL (the default) carries the submit environment, not the login one.
    assert!(out(all).starts_with("mark= "), "{}", out(all));
}

#[test]
fn sbcast_copies_a_file_to_every_node_of_the_job_as_its_user() {
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        ..ClusterSpec::default()
    });
    let alice = c.user("drover-alice");
    // Both nodes of this cluster share the host's disk: the first copy needs -f on
    // the second node, and without -f a copy that exists is refused.
    let body = "printf 'payload\\n' > src.bin\nchmod 750 src.bin\ntouch -d 2020-01-02 src.bin\n\
                sbcast -f -p src.bin copy.bin && echo copied\n\
                sbcast src.bin copy.bin 2> again.err; echo again=$?\n\
                sbcast -f src.bin /etc/drover-sbcast-test 2> etc.err; echo etc=$?\n\
                head -c 3500000 /dev/urandom > big.bin\n\
                sbcast -f big.bin big.copy && cmp big.bin big.copy && echo same\n\
                echo done";
    let id = c.sbatch_as(&alice, &["-N", "2", "-o", "out.txt"], body);
    c.wait_state(id, "COMPLETED", T);
    let read = |name: &str| std::fs::read_to_string(alice.dir.join(name)).unwrap();
    // (The big file travels in several chunks.)
    assert_eq!(read("out.txt"), "copied\nagain=1\netc=1\nsame\ndone\n");
    let copy = alice.dir.join("copy.bin");
    assert_eq!(read("copy.bin"), "payload\n");
    let meta = std::fs::metadata(&copy).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o7777), (alice.uid, 0o750));
    let source = std::fs::metadata(alice.dir.join("src.bin")).unwrap();
    assert_eq!(meta.mtime(), source.mtime());
    assert_eq!(
        read("again.err"),
        "sbcast: error: REQUEST_FILE_BCAST(tn1): File exists\n"
    );
    assert_eq!(
        read("etc.err"),
        "sbcast: error: REQUEST_FILE_BCAST(tn1): Permission denied\n"
    );
    assert!(!Path::new("/etc/drover-sbcast-test").exists());
}
