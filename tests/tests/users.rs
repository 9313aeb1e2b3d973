//! Jobs run as the user who submitted them, with that user's rights: real Unix users
//! made by `useradd` (the tests run as root), a real cluster on loopback, the CLI run
//! as those users.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tests::{Cluster, ClusterSpec, test_user};

const T: Duration = Duration::from_secs(30);

struct User {
    uid: u32,
    gid: u32,
    /// A directory of the user's own in the cluster's directory.
    dir: PathBuf,
}

fn user(c: &Cluster, name: &str) -> User {
    let (uid, gid) = test_user(name);
    // The CLI, run as the user, reads the config and the command links in here.
    std::fs::set_permissions(c.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let dir = c.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    User { uid, gid, dir }
}

/// `sbatch --parsable ARGS` of `body` as `u`, from `u`'s directory.
fn sbatch_as(c: &Cluster, u: &User, args: &[&str], body: &str) -> u32 {
    let script = u.dir.join("job.sh");
    std::fs::write(&script, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::os::unix::fs::chown(&script, Some(u.uid), Some(u.gid)).unwrap();
    let mut command = c.command("sbatch");
    command
        .arg("--parsable")
        .args(args)
        .arg(&script)
        .current_dir(&u.dir)
        .env("HOME", &u.dir)
        .uid(u.uid)
        .gid(u.gid);
    // SAFETY: umask is async-signal-safe.
    unsafe {
        command.pre_exec(|| {
            libc::umask(0o027);
            Ok(())
        });
    }
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "sbatch as {}: {}",
        u.uid,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

fn owner(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().uid()
}

#[test]
fn a_job_runs_as_its_user_with_the_users_groups_home_and_umask() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    let alice = user(&c, "drover-alice");
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
    let job = sbatch_as(
        &c,
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
    let alice = user(&c, "drover-alice");
    let bob = user(&c, "drover-bob");
    let bobs_file = bob.dir.join("notes");
    std::fs::write(&bobs_file, "bob's\n").unwrap();
    std::os::unix::fs::chown(&bobs_file, Some(bob.uid), Some(bob.gid)).unwrap();

    // An output path into bob's directory, and one into /etc: the job cannot start.
    for target in [
        bob.dir.join("stolen.out"),
        PathBuf::from("/etc/drover-test-stolen"),
    ] {
        let path = target.display().to_string();
        let job = sbatch_as(&c, &alice, &["-o", &path], "echo hi");
        c.wait_state(job, "FAILED", T);
        assert!(!target.exists(), "{path} was written");
    }
    // The relative form of the same escape.
    let job = sbatch_as(
        &c,
        &alice,
        &["-o", "../../../etc/drover-test-rel"],
        "echo hi",
    );
    c.wait_state(job, "FAILED", T);
    assert!(!Path::new("/etc/drover-test-rel").exists());

    // Inside the job, bob's file is bob's.
    let path = bobs_file.display().to_string();
    let job = sbatch_as(&c, &alice, &[], &format!("echo mine > {path}"));
    c.wait_state(job, "FAILED", T);
    assert_eq!(std::fs::read_to_string(&bobs_file).unwrap(), "bob's\n");
}

#[test]
fn export_none_gives_the_job_the_users_login_environment() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    let carol = user(&c, "drover-carol");
    // What the user's login shell sets: the job gets it under --export=NONE only.
    let profile = Path::new("/home/drover-carol/.profile");
    std::fs::write(profile, "export DROVER_LOGIN_MARK=from-profile\n").unwrap();
    std::os::unix::fs::chown(profile, Some(carol.uid), Some(carol.gid)).unwrap();
    let show = "echo \"mark=$DROVER_LOGIN_MARK home=$HOME get=$SLURM_GET_USER_ENV\"";
    let none = sbatch_as(&c, &carol, &["--export=NONE"], show);
    let all = sbatch_as(&c, &carol, &[], show);
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
    let alice = user(&c, "drover-alice");
    // Both nodes of this cluster share the host's disk: the first copy needs -f on
    // the second node, and without -f a copy that exists is refused.
    let body = "printf 'payload\\n' > src.bin\nchmod 750 src.bin\ntouch -d 2020-01-02 src.bin\n\
                sbcast -f -p src.bin copy.bin && echo copied\n\
                sbcast src.bin copy.bin 2> again.err; echo again=$?\n\
                sbcast -f src.bin /etc/drover-sbcast-test 2> etc.err; echo etc=$?\n\
                head -c 3500000 /dev/urandom > big.bin\n\
                sbcast -f big.bin big.copy && cmp big.bin big.copy && echo same\n\
                echo done";
    let id = sbatch_as(&c, &alice, &["-N", "2", "-o", "out.txt"], body);
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
