//! `strigger` on a real cluster: a job-end trigger is listed by `--get`, runs its
//! program with the job's id once the job ends, and is gone after it fired; `--clear`
//! removes a trigger by id.

use std::time::Duration;
use tests::{Cluster, ClusterSpec, wait_until};

const T: Duration = Duration::from_secs(30);

#[test]
fn a_job_end_trigger_runs_its_program_with_the_job_id_and_goes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fired");
    let program = dir.path().join("on_fini");
    std::fs::write(
        &program,
        format!(
            "#!/bin/sh\necho \"$1\" > {}.tmp && mv {0}.tmp {0}\n",
            out.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &program,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let program = program.display().to_string();
    let c = Cluster::start(ClusterSpec::default());
    let id = c.sbatch(&["-H"], "true");
    let job = format!("--jobid={id}");
    c.ok(&[
        "strigger",
        "--set",
        "--fini",
        &job,
        &format!("--program={program}"),
    ]);
    c.ok(&[
        "strigger",
        "--set",
        "--down",
        "--node",
        &format!("--program={program}"),
    ]);
    let listing = c.ok(&["strigger", "--get"]);
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(
        lines[0],
        "TRIG_ID RES_TYPE   RES_ID TYPE                                OFFSET USER     FLAGS PROGRAM"
    );
    assert_eq!(
        lines[1],
        format!(
            "{:>7} {:<9} {:>7} {:<35} {:>6} {:<8} {:<5} {}",
            1, "job", id, "fini", 0, "root", "", program
        )
    );
    assert!(
        lines[2].starts_with("      2 node            * down"),
        "{listing}"
    );
    c.ok(&["strigger", "--clear", "--id=2"]);
    let cleared = c.run(&["strigger", "--clear", "--id=2"]);
    assert_eq!(
        String::from_utf8_lossy(&cleared.stderr).trim(),
        "slurm_clear_trigger: No such process"
    );
    assert_eq!(cleared.status.code(), Some(1));
    c.ok(&["scontrol", "release", &id.to_string()]);
    assert!(
        wait_until(T, || out.exists()),
        "the trigger did not fire; logs:\n{}",
        c.logs()
    );
    assert_eq!(
        std::fs::read_to_string(&out).unwrap().trim(),
        id.to_string()
    );
    assert_eq!(c.ok(&["strigger", "--get"]), "");
}
