//! Nobody acts as somebody else: real Unix users (made by `useradd`; the tests run as
//! root) on a real cluster, through the CLI and through hand-made gRPC requests, as a
//! user's own program would send them to the controller's and the node daemons' ports.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;
use tests::{Cluster, ClusterSpec, User};
use tonic::Request;

const T: Duration = Duration::from_secs(30);

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A credential for `u` from the cluster's credential agent, fetched by a program of
/// `u`'s own (Python's socket module), as any program of theirs could.
fn credential_of(c: &Cluster, u: &User) -> Vec<u8> {
    use std::os::unix::process::CommandExt;
    let fetch = "import socket, sys\n\
                 s = socket.socket(socket.AF_UNIX)\n\
                 s.connect(sys.argv[1])\n\
                 data = b''\n\
                 while True:\n    chunk = s.recv(4096)\n    if not chunk:\n        break\n    data += chunk\n\
                 sys.stdout.buffer.write(data)\n";
    let out = std::process::Command::new("python3")
        .args(["-c", fetch])
        .arg(c.path().join("auth.sock"))
        .uid(u.uid)
        .gid(u.gid)
        .output()
        .expect("python3");
    assert!(
        out.status.success() && !out.stdout.is_empty(),
        "{}",
        stderr(&out)
    );
    out.stdout
}

/// `msg` with `credential` in its header.
fn with<T>(msg: T, credential: &[u8]) -> Request<T> {
    let mut req = Request::new(msg);
    req.metadata_mut().insert_bin(
        proto::CREDENTIAL_HEADER,
        tonic::metadata::MetadataValue::from_bytes(credential),
    );
    req
}

#[test]
fn a_user_cancels_holds_updates_and_reads_only_their_own_jobs() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    let alice = c.user("drover-alice");
    let bob = c.user("drover-bob");
    let id = c.sbatch_as(&alice, &["--hold"], "echo alices-secret-step");
    let job = id.to_string();
    for argv in [
        vec!["scancel", job.as_str()],
        vec!["scontrol", "release", job.as_str()],
        vec!["scontrol", "update", &format!("JobId={id}"), "TimeLimit=5"],
    ] {
        let out = c.run_as(&bob, &argv);
        assert!(
            stderr(&out).contains("Access/permission denied"),
            "{argv:?}: {}",
            stderr(&out)
        );
    }
    let out = c.run_as(&bob, &["scontrol", "write", "batch_script", &job, "-"]);
    assert!(!out.status.success());
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("alices-secret-step"),
        "bob read alice's script"
    );
    assert_eq!(c.squeue_field(id, "%T %r"), "PENDING JobHeldUser");
    // Alice reads and releases her own; root may do anything.
    let out = c.run_as(&alice, &["scontrol", "write", "batch_script", &job, "-"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("alices-secret-step"),
        "{}",
        stderr(&out)
    );
    let out = c.run_as(&alice, &["scontrol", "release", &job]);
    assert!(out.status.success(), "{}", stderr(&out));
    c.wait_state(id, "COMPLETED", T);
    let held = c.sbatch_as(&alice, &["--hold"], "true");
    c.ok(&["scancel", &held.to_string()]);
    c.wait_state(held, "CANCELLED", T);
    // The job was alice's, as the controller named her from her uid.
    assert_eq!(c.field(id, "User"), "drover-alice");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hand_made_requests_without_a_valid_credential_change_nothing() {
    use proto::v1;
    use proto::v1::ctld_client::CtldClient;
    use proto::v1::node_agent_client::NodeAgentClient;
    use proto::v1::node_control_client::NodeControlClient;
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        ..ClusterSpec::default()
    });
    let alice = c.user("drover-alice");
    let bob = c.user("drover-bob");
    let id = c.sbatch_as(&bob, &["--hold"], "true");
    let addr = format!("http://{}", c.ctld_addr);
    let mut ctld = CtldClient::connect(addr.clone()).await.unwrap();
    let cancel = || v1::SignalJobsRequest {
        filter: Some(v1::JobFilter {
            job_ids: vec![id.to_string()],
            ..Default::default()
        }),
        signal: 0,
        batch_only: false,
        full: false,
    };
    let as_root = || v1::SubmitJobRequest {
        spec: Some(v1::JobSpec {
            uid: 0,
            gid: 0,
            user: "root".into(),
            script: "#!/bin/sh\ntouch /etc/drover-owned\n".into(),
            work_dir: "/tmp".into(),
            ..Default::default()
        }),
        test_only: false,
        het_components: Vec::new(),
    };

    // No credential: refused before anything is looked at.
    let refused = ctld.signal_jobs(Request::new(cancel())).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated, "{refused:?}");
    let refused = ctld.submit_job(Request::new(as_root())).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);

    // A credential signed with another key: forged.
    let mut forged = credential_of(&c, &alice);
    let last = forged.len() - 1;
    forged[last] ^= 1;
    let refused = ctld.signal_jobs(with(cancel(), &forged)).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
    assert_eq!(refused.message(), "the credential's signature is invalid");

    // Alice's own credential: her cancel of bob's job is refused, as is a job as root.
    let cred = credential_of(&c, &alice);
    let reply = ctld
        .signal_jobs(with(cancel(), &cred))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(reply.results[0].error, "Access/permission denied");
    // It is bound to the connection that presented it: taken again there, a replay on
    // any other.
    let again = ctld.signal_jobs(with(cancel(), &cred)).await.unwrap();
    assert_eq!(
        again.into_inner().results[0].error,
        "Access/permission denied"
    );
    let mut elsewhere = CtldClient::connect(addr.clone()).await.unwrap();
    let refused = elsewhere
        .signal_jobs(with(cancel(), &cred))
        .await
        .unwrap_err();
    assert_eq!(refused.message(), "the credential was replayed");
    let refused = ctld
        .submit_job(with(as_root(), &credential_of(&c, &alice)))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);

    // A node registration needs a node daemon's credential: a user's is refused.
    let mut nodes = NodeControlClient::connect(addr).await.unwrap();
    let fake = v1::RegisterRequest {
        node_name: "tn1".into(),
        agent_addr: "127.0.0.1:1".into(),
        cpus: 1,
        ..Default::default()
    };
    let refused = nodes
        .register(with(fake, &credential_of(&c, &alice)))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
    let refused = nodes
        .job_finished(Request::new(v1::JobFinishedRequest {
            node_name: "tn1".into(),
            job_id: id,
            kind: v1::FinishKind::Exited as i32,
            ..Default::default()
        }))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);

    // The node daemon launches only the controller's jobs, and a step only with the
    // controller's grant.
    // Its agent's host:port, as the controller lists it (`NodeAddr` is the host alone).
    let listed = ctld
        .list_nodes(with(
            v1::ListNodesRequest {
                names: vec!["tn1".into()],
            },
            &credential_of(&c, &alice),
        ))
        .await
        .unwrap()
        .into_inner();
    let agent_addr = listed
        .nodes
        .first()
        .map(|n| n.addr.clone())
        .unwrap_or_default();
    let mut agent = NodeAgentClient::connect(format!("http://{agent_addr}"))
        .await
        .unwrap();
    let launch = v1::LaunchJobRequest {
        job_id: 999,
        spec: as_root().spec,
        ..Default::default()
    };
    let refused = agent
        .launch_job(with(launch, &credential_of(&c, &alice)))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied);
    let step = v1::TaskInput {
        input: Some(v1::task_input::Input::Launch(v1::TaskLaunch {
            job_id: id,
            node_name: "tn1".into(),
            task_ids: vec![0],
            argv: vec!["/bin/touch".into(), "/etc/drover-owned".into()],
            uid: 0,
            ..Default::default()
        })),
    };
    let refused = agent
        .run_tasks(with(tokio_stream_once(step), &credential_of(&c, &alice)))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::PermissionDenied, "{refused:?}");
    assert!(!std::path::Path::new("/etc/drover-owned").exists());

    // Nothing changed: bob's job still waits, held.
    assert_eq!(c.squeue_field(id, "%T %r"), "PENDING JobHeldUser");
    // Secrets are private: the key and the controller's store.
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&c.path().join("cluster.key")), 0o600);
    assert_eq!(mode(&c.path().join("state").join("ctld")), 0o700);
}

/// A stream of one message, for a client-streaming call.
fn tokio_stream_once<T: Send + 'static>(
    item: T,
) -> impl tonic::codegen::tokio_stream::Stream<Item = T> {
    tonic::codegen::tokio_stream::iter([item])
}

#[test]
fn coordinators_and_operators_act_for_others_and_private_data_hides_the_rest() {
    let c = Cluster::start(ClusterSpec {
        nodes: 1,
        controller_extra: "private_data = [\"jobs\"]\n".into(),
        extra: "[[accounts]]\nname = \"ml\"\nusers = [\"drover-alice\", \"drover-bob\"]\n\
                coordinators = [\"drover-carol\"]\n\
                [[accounts]]\nname = \"physics\"\nusers = [\"drover-dave\"]\n"
            .into(),
        auth_extra: "operators = [\"drover-erin\"]\n".into(),
        ..ClusterSpec::default()
    });
    let [alice, bob, carol, dave, erin] = [
        "drover-alice",
        "drover-bob",
        "drover-carol",
        "drover-dave",
        "drover-erin",
    ]
    .map(|name| c.user(name));
    let ml = c.sbatch_as(&alice, &["--hold", "-A", "ml"], "true");
    let physics = c.sbatch_as(&dave, &["--hold", "-A", "physics"], "true");
    let listed = |u: &User| -> Vec<u32> {
        let out = c.run_as(u, &["squeue", "-h", "-o", "%i"]);
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(|id| id.parse().unwrap())
            .collect()
    };
    // Each sees their own; a coordinator their account's; an operator everything.
    assert_eq!(listed(&alice), [ml]);
    assert_eq!(listed(&bob), Vec::<u32>::new());
    assert_eq!(listed(&carol), [ml]);
    assert_eq!(listed(&erin), [ml, physics]);
    let out = c.run_as(&bob, &["scontrol", "show", "job", &ml.to_string()]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains(&format!("JobId={ml}")));
    // Bob may not cancel alice's job; carol, who coordinates ml, may; she may not
    // touch physics.
    let out = c.run_as(&bob, &["scancel", &ml.to_string()]);
    assert!(
        stderr(&out).contains("Access/permission denied"),
        "{}",
        stderr(&out)
    );
    let out = c.run_as(&carol, &["scancel", &physics.to_string()]);
    assert!(
        stderr(&out).contains("Access/permission denied"),
        "{}",
        stderr(&out)
    );
    let out = c.run_as(&carol, &["scancel", &ml.to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    c.wait_state(ml, "CANCELLED", T);
    // Erin operates: she releases dave's job and drains the node; dave may not drain.
    let out = c.run_as(
        &dave,
        &[
            "scontrol",
            "update",
            "NodeName=tn1",
            "State=DRAIN",
            "Reason=x",
        ],
    );
    assert!(!out.status.success());
    let out = c.run_as(&erin, &["scontrol", "release", &physics.to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = c.run_as(
        &erin,
        &[
            "scontrol",
            "update",
            "NodeName=tn1",
            "State=DRAIN",
            "Reason=maint",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        c.ok(&["sinfo", "-h", "-N", "-o", "%N %T"])
            .contains("drain")
    );
}
