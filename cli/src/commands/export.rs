//! `drover export csv|jsonl [SACCT OPTIONS]`: job records for other tools, selected as
//! `sacct` selects them (`-a`, `-u`, `-A`, `-S`/`-E`, `-s`, `-j`, `-X`, ...).
//!
//! `csv` writes RFC 4180 CSV (quoted where a value needs it): a header of the fields,
//! then a row per job and step. The fields are `--format`'s (`-o`), by default
//! [`FIELDS`]. `jsonl` writes one job a line, as `sacct --json` shapes a job (its steps
//! inside), for loading into a database or a notebook. With `--archive FILE`, the
//! records are those of an archive the controller wrote before a purge (`[controller]
//! archive_jobs`), all of them.
//!
//! ```text
//! $ drover export csv -a -S 2026-11-01 -o JobID,User,Account,State,ElapsedRaw,AllocTRES
//! JobID,User,Account,State,ElapsedRaw,AllocTRES
//! 17,alice,ml,COMPLETED,3600,"billing=4,cpu=4,gres/gpu=1,mem=8G,node=1"
//! ```

use crate::commands::sacct::{self, Export};
use crate::exit::Exit;
use std::process::ExitCode;

/// The fields of `drover export csv` without `--format`.
pub const FIELDS: &str = "JobID,JobName,User,UID,Account,Partition,QOS,State,ExitCode,\
Submit,Start,End,ElapsedRaw,TimelimitRaw,NNodes,NCPUS,NodeList,ReqTRES,AllocTRES,\
CPUTimeRAW,MaxRSS,WorkDir";

const USAGE: &str = "\
Usage: drover export csv|jsonl [--archive FILE] [SACCT OPTIONS]
  Writes the job records sacct would select: csv (a header, then a row per job and
  step; the fields of --format, by default the export fields), or jsonl (one job a
  line, as sacct --json shapes it). --archive FILE: every record of an archive file
  the controller wrote before a purge (archive_jobs), instead.
";

pub fn run(args: &[String]) -> ExitCode {
    let how = match args.first().map(String::as_str) {
        Some("csv") => Export::Csv,
        Some("jsonl") => Export::JsonLines,
        Some("-h" | "--help") => return Exit::info(USAGE).finish(),
        Some(other) => {
            return Exit::error(
                "drover export",
                format!("unknown format `{other}` (csv or jsonl)"),
            )
            .finish();
        }
        None => return Exit::error("drover export", "csv or jsonl?").finish(),
    };
    let mut rest = args[1..].to_vec();
    let archive = match rest.iter().position(|a| a == "--archive") {
        Some(at) if at + 1 < rest.len() => {
            let file = rest.remove(at + 1);
            rest.remove(at);
            Some(file)
        }
        Some(_) => {
            return Exit::error("drover export", "--archive needs a file").finish();
        }
        None => rest
            .iter()
            .position(|a| a.starts_with("--archive="))
            .map(|at| rest.remove(at)["--archive=".len()..].to_string()),
    };
    let selected = match &archive {
        Some(file) => sacct::select_archive("drover export", file, &rest),
        None => sacct::select("drover export", &rest),
    };
    let (mut opts, jobs, ctx) = match selected {
        Ok(selected) => selected,
        Err(code) => return code,
    };
    if !opts.fields_given {
        opts.fields = sacct::parse_fields(FIELDS).expect("the export fields are sacct's");
    }
    match sacct::export(&opts, &jobs, &ctx, how) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => Exit::error("drover export", &e).finish(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_fields_are_sacct_fields() {
        assert!(sacct::parse_fields(FIELDS).is_ok());
    }

    #[test]
    fn an_archive_file_is_read_whole_and_a_file_that_is_not_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let job = |id: u32, name: &str| proto::v1::JobInfo {
            job_id: id,
            state: proto::v1::JobState::Completed as i32,
            spec: Some(proto::v1::JobSpec {
                name: name.into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let archive = proto::v1::JobArchive {
            cluster_name: "gpu".into(),
            archived_at: 1_796_083_230,
            jobs: vec![job(17, "train"), job(18, "eval")],
        };
        let file = dir.path().join("gpu_job_table_archive");
        std::fs::write(&file, proto::encode(&archive)).unwrap();
        let file = file.display().to_string();
        let args: Vec<String> = ["-X", "-o", "JobID,JobName,Cluster"]
            .map(String::from)
            .into();
        let (opts, jobs, ctx) = sacct::select_archive("drover export", &file, &args).unwrap();
        assert_eq!(
            sacct::export(&opts, &jobs, &ctx, Export::Csv).unwrap(),
            "JobID,JobName,Cluster\n17,train,gpu\n18,eval,gpu\n"
        );
        let junk = dir.path().join("junk");
        std::fs::write(&junk, b"\xff\xff\xff").unwrap();
        assert!(
            sacct::select_archive("drover export", &junk.display().to_string(), &args).is_err()
        );
    }
}
