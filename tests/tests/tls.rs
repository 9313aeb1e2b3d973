//! `[tls]`: TLS on every connection to the controller and the node daemons, with the
//! certificates `drover keygen --tls` makes. A batch job (controller to node daemon and
//! back), a multi-node `srun` (command to node daemons) and the commands' own calls all
//! go over it; a plain HTTP/2 client gets no answer, and a command that trusts another
//! CA refuses the controller's certificate.

use std::path::Path;
use std::time::Duration;
use tests::{Cluster, ClusterSpec};

const T: Duration = Duration::from_secs(30);

/// `drover keygen --tls DIR --hosts 127.0.0.1` (the tests' daemons listen there).
fn keygen_tls(dir: &Path) {
    let out = std::process::Command::new(tests::bin_dir().join("drover"))
        .args(["keygen", "--tls"])
        .arg(dir)
        .args(["--hosts", "127.0.0.1,localhost"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn tls_section(dir: &Path) -> String {
    let file = |name: &str| dir.join(name).display().to_string();
    format!(
        "[tls]\nenabled = true\nca_file = \"{}\"\ncert_file = \"{}\"\nkey_file = \"{}\"\n",
        file("ca.pem"),
        file("cert.pem"),
        file("key.pem")
    )
}

#[test]
fn every_connection_carries_tls_and_a_plain_or_untrusting_client_gets_nothing() {
    let certs = tempfile::tempdir().unwrap();
    keygen_tls(certs.path());
    let c = Cluster::start(ClusterSpec {
        nodes: 2,
        extra: tls_section(certs.path()),
        ..ClusterSpec::default()
    });
    // The controller tells a node daemon to launch, which reports the end back.
    let id = c.sbatch(&["-N", "1"], "echo batch ran");
    c.wait_state(id, "COMPLETED", T);
    let out = std::fs::read_to_string(c.work.join(format!("slurm-{id}.out"))).unwrap();
    assert_eq!(out.trim(), "batch ran");
    // srun talks to both node daemons itself.
    let ran = c.ok(&[
        "srun",
        "-N",
        "2",
        "-n",
        "2",
        "sh",
        "-c",
        "echo $SLURM_NODEID",
    ]);
    let mut ids: Vec<&str> = ran.lines().collect();
    ids.sort_unstable();
    assert_eq!(ids, ["0", "1"], "{ran}");

    // A plain HTTP/2 client: no answer from the controller.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let plain = runtime.block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", c.ctld_addr))
            .unwrap()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(5))
            .connect()
            .await?;
        proto::v1::ctld_client::CtldClient::new(channel)
            .get_config(proto::v1::GetConfigRequest::default())
            .await
            .map(drop)
            .map_err(|e| Box::new(e) as Box<dyn std::error::Error>)?;
        Ok::<(), Box<dyn std::error::Error>>(())
    });
    assert!(plain.is_err(), "a plain client was answered");

    // A command that trusts another cluster's CA refuses this controller's certificate.
    let other = tempfile::tempdir().unwrap();
    keygen_tls(other.path());
    let text = std::fs::read_to_string(&c.conf).unwrap().replace(
        &certs.path().join("ca.pem").display().to_string(),
        &other.path().join("ca.pem").display().to_string(),
    );
    let untrusting = c.path().join("untrusting.toml");
    std::fs::write(&untrusting, text).unwrap();
    let out = c
        .command("squeue")
        .env("DROVER_CONF", &untrusting)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "squeue trusted another CA: {stderr}");
    assert!(stderr.contains("certificate"), "{stderr}");
}
