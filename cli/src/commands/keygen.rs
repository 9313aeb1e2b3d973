//! `drover keygen [FILE]`: makes a new cluster key, the secret the controller, the node
//! daemons and their credential agents sign with (Slurm's sites make a munge key with
//! `mungekey`). It is written readable by its owner only (0600); copy it to every node
//! the same way. By default it goes where the config's `[auth] key_file` says.
//!
//! `drover keygen --tls DIR --hosts HOSTLIST` makes what `[tls]` needs instead: a
//! cluster CA (`ca.pem`, and its key `ca-key.pem`, kept to sign more later) and one
//! certificate for every host of the hostlist (`cert.pem`, its key `key.pem`), host
//! names and IP addresses as its subject alternative names. Keys are 0600; nothing
//! that exists is overwritten. Example: `drover keygen --tls /etc/drover/tls --hosts
//! ctl1,gpu[1-8],127.0.0.1`.

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: drover keygen [FILE]\n       drover keygen --tls DIR --hosts HOSTLIST\n\nWrites a new random cluster key to FILE (default: the config's [auth] key_file),\nreadable by its owner only. An existing key is never overwritten.\nWith --tls: a cluster CA (DIR/ca.pem, DIR/ca-key.pem) and a certificate for the\nhosts (DIR/cert.pem, DIR/key.pem), for the config's [tls].\n";

pub fn run(args: &[String]) -> ExitCode {
    if matches!(args, [a] if a == "-h" || a == "--help") {
        print!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    if args.first().is_some_and(|a| a == "--tls") {
        return match tls_args(&args[1..]).and_then(|(dir, hosts)| write_tls(&dir, &hosts)) {
            Ok(dir) => {
                println!(
                    "drover keygen: wrote ca.pem, ca-key.pem, cert.pem and key.pem to {}",
                    dir.display()
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("drover keygen: error: {e}");
                ExitCode::from(1)
            }
        };
    }
    let path = match args {
        [file] => PathBuf::from(file),
        [] => match crate::client::load_config() {
            Ok(c) => PathBuf::from(c.auth.key_file),
            Err(e) => {
                eprintln!("drover keygen: error: {e:#}");
                return ExitCode::from(1);
            }
        },
        _ => {
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match auth::Key::generate(&path) {
        Ok(_) => {
            println!(
                "drover keygen: wrote a new cluster key to {}",
                path.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("drover keygen: error: {e}");
            ExitCode::from(1)
        }
    }
}

/// `DIR --hosts HOSTLIST` (in either order), the hostlist expanded.
fn tls_args(args: &[String]) -> Result<(PathBuf, Vec<String>), String> {
    let (mut dir, mut hosts) = (None, None);
    let mut words = args.iter();
    while let Some(w) = words.next() {
        match w.as_str() {
            "--hosts" => hosts = words.next().cloned(),
            w if w.starts_with("--hosts=") => hosts = Some(w["--hosts=".len()..].to_string()),
            w if !w.starts_with('-') && dir.is_none() => dir = Some(PathBuf::from(w)),
            other => return Err(format!("unknown argument `{other}` (see --help)")),
        }
    }
    let dir = dir.ok_or("--tls needs a directory")?;
    let hosts = hosts.ok_or("--tls needs --hosts HOSTLIST (the hosts the daemons run on)")?;
    let hosts = model::hostlist::expand(&hosts).map_err(|e| format!("--hosts: {e}"))?;
    if hosts.is_empty() {
        return Err("--hosts names no host".into());
    }
    Ok((dir, hosts))
}

/// Writes the CA and the hosts' certificate into `dir` (made if missing).
fn write_tls(dir: &std::path::Path, hosts: &[String]) -> Result<PathBuf, String> {
    let err = |e: rcgen::Error| e.to_string();
    let ca_key = rcgen::KeyPair::generate().map_err(err)?;
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "Drover cluster CA");
    let ca = ca.self_signed(&ca_key).map_err(err)?;
    let key = rcgen::KeyPair::generate().map_err(err)?;
    let mut params = rcgen::CertificateParams::new(hosts.to_vec()).map_err(err)?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, hosts[0].as_str());
    let cert = params.signed_by(&key, &ca, &ca_key).map_err(err)?;
    let files = [
        ("ca.pem", ca.pem(), 0o644),
        ("ca-key.pem", ca_key.serialize_pem(), 0o600),
        ("cert.pem", cert.pem(), 0o644),
        ("key.pem", key.serialize_pem(), 0o600),
    ];
    if let Some((name, ..)) = files.iter().find(|(name, ..)| dir.join(name).exists()) {
        return Err(format!(
            "{} exists: not overwritten",
            dir.join(name).display()
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    for (name, text, mode) in files {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let path = dir.join(name);
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(dir.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_files_are_made_for_the_hosts_and_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let args: Vec<String> = ["--hosts", "ctl1,gpu[1-2],127.0.0.1"]
            .map(String::from)
            .into();
        let (_, hosts) =
            tls_args(&[vec![dir.path().display().to_string()], args].concat()).unwrap();
        assert_eq!(hosts, ["ctl1", "gpu1", "gpu2", "127.0.0.1"]);
        write_tls(dir.path(), &hosts).unwrap();
        // What the daemons load: the pair matches, the CA reads.
        let tls = auth::tls::Tls::server(
            &dir.path().join("ca.pem"),
            &dir.path().join("cert.pem"),
            &dir.path().join("key.pem"),
        )
        .unwrap();
        assert!(tls.server_config().is_some());
        let mode = |f: &str| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(dir.path().join(f))
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(
            (mode("key.pem"), mode("ca-key.pem"), mode("ca.pem")),
            (0o600, 0o600, 0o644)
        );
        let again = write_tls(dir.path(), &hosts).unwrap_err();
        assert!(again.ends_with("ca.pem exists: not overwritten"), "{again}");
        assert_eq!(
            tls_args(&[dir.path().display().to_string()]).unwrap_err(),
            "--tls needs --hosts HOSTLIST (the hosts the daemons run on)"
        );
    }
}
