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
    let (mut opts, jobs, ctx) = match sacct::select("drover export", &args[1..]) {
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
}
