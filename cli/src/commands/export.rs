//! `drover export csv|jsonl [SACCT OPTIONS]`: job records for other tools, selected as
//! `sacct` selects them (`-a`, `-u`, `-A`, `-S`/`-E`, `-s`, `-j`, `-X`, ...).
//!
//! `csv` writes RFC 4180 CSV (quoted where a value needs it): a header of the fields,
//! then a row per job and step. The fields are `--format`'s (`-o`), by default
//! [`FIELDS`]. `jsonl` writes one job a line, as `sacct --json` shapes a job (its steps
//! inside), for loading into a database or a notebook.
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
Usage: drover export csv|jsonl [SACCT OPTIONS]
  Writes the job records sacct would select: csv (a header, then a row per job and
  step; the fields of --format, by default the export fields), or jsonl (one job a
  line, as sacct --json shapes it).
";

/// Does the command line choose the fields (`-o`, `--format`, `-b`, `-l`)?
fn chooses_fields(args: &[String]) -> bool {
    args.iter().any(|a| {
        a.starts_with("--format")
            || a.starts_with("--brief")
            || a.starts_with("--long")
            || (a.starts_with('-') && !a.starts_with("--") && a[1..].contains(['o', 'b', 'l']))
    })
}

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
    let mut sacct_args: Vec<String> = args[1..].to_vec();
    if how == Export::Csv && !chooses_fields(&sacct_args) {
        sacct_args.insert(0, format!("--format={FIELDS}"));
    }
    let (opts, jobs, ctx) = match sacct::select("drover export", &sacct_args) {
        Ok(selected) => selected,
        Err(code) => return code,
    };
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

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn fields_are_chosen_only_by_the_field_options() {
        assert!(chooses_fields(&s(&["-a", "--format=JobID"])));
        assert!(chooses_fields(&s(&["-ao", "JobID"])));
        assert!(chooses_fields(&s(&["-l"])));
        assert!(!chooses_fields(&s(&[
            "-a",
            "-S",
            "2026-01-01",
            "--units=M"
        ])));
        // Every default field is one sacct knows.
        assert!(sacct::parse_fields(FIELDS).is_ok());
    }
}
