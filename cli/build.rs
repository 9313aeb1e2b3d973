//! Links the `drover` binary as a position-dependent executable: each `sbatch` or
//! `squeue` call is a new process, and without PIE the loader has no relocations to
//! apply to it at every start (about 10,000 of them), nor pages to copy for them.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
