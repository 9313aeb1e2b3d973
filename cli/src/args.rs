//! A read command's command line and its early exits: getopt_long's acceptance of
//! prefixes shared by aliases of one option (`--part` for `--partition`/`--partitions`),
//! `--help`/`--usage`/`--version`, Slurm's wording of errors in the arguments, the
//! `SQUEUE_FORMAT`-style variables, and the `--iterate` loop of squeue and sinfo.

use crate::exit::Exit;
use crate::opts::{self, OptSpec, Parsed};
use crate::times;
use std::process::ExitCode;

/// Rewrites `--prefix` arguments that are ambiguous only between names of one option
/// (`--part` for `--partition`/`--partitions`) to that option's name, as getopt_long
/// accepts them. `aliases` maps alternative long names to the one the command reads.
fn resolve_aliases(
    args: &[String],
    specs: &[OptSpec],
    aliases: &[(&str, &'static str)],
) -> Vec<String> {
    let canonical = |long: &'static str| -> &'static str {
        aliases
            .iter()
            .find(|(from, _)| *from == long)
            .map(|(_, to)| *to)
            .unwrap_or(long)
    };
    let mut out = Vec::with_capacity(args.len());
    let mut rest = false;
    for arg in args {
        if rest || arg == "--" {
            rest = true;
            out.push(arg.clone());
            continue;
        }
        let Some(body) = arg.strip_prefix("--") else {
            out.push(arg.clone());
            continue;
        };
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (body, None),
        };
        let candidates: Vec<&'static str> = specs
            .iter()
            .filter(|s| s.long.starts_with(name) && !name.is_empty())
            .map(|s| canonical(s.long))
            .collect();
        let exact = specs.iter().any(|s| s.long == name);
        match candidates.split_first() {
            Some((first, more))
                if !exact && !more.is_empty() && more.iter().all(|c| c == first) =>
            {
                out.push(match value {
                    Some(v) => format!("--{first}={v}"),
                    None => format!("--{first}"),
                });
            }
            _ => out.push(arg.clone()),
        }
    }
    out
}

/// Renames alternative long names in parsed options to the one the command reads.
fn apply_aliases(parsed: &mut Parsed, aliases: &[(&str, &'static str)]) {
    for (k, _) in parsed.opts.iter_mut() {
        if let Some(&(_, to)) = aliases.iter().find(|(from, _)| from == k) {
            *k = to;
        }
    }
}

/// Parses a read command's arguments: long-name aliases folded as `aliases` says, then
/// the early exits every one of them has (`--help`, `--usage`, `--version`, checked in
/// that order).
pub fn parse_command_line(
    command: &str,
    args: &[String],
    specs: &[OptSpec],
    aliases: &[(&str, &'static str)],
    help: &str,
    usage: &str,
) -> Result<Parsed, Exit> {
    let args = resolve_aliases(args, specs, aliases);
    let mut p =
        opts::parse(specs, &args, false).map_err(|e| Exit::usage(command, e.to_string()))?;
    apply_aliases(&mut p, aliases);
    match Info::asked(&p) {
        Some(info) => Err(Exit::info(info.text(help, usage))),
        None => Ok(p),
    }
}

/// A comma-separated list without blanks and empty items.
pub fn split_list(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// `-i/--iterate=seconds`: a positive count of seconds, if given.
pub fn iterate_option(command: &str, p: &Parsed) -> Result<Option<u64>, Exit> {
    p.get("iterate")
        .map(|v| {
            v.parse::<u64>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| Exit::error(command, format!("--iterate={v}")))
        })
        .transpose()
}

/// An environment variable that is set and not empty (how the read commands take
/// `SQUEUE_FORMAT` and friends).
pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Runs a command-line parser that reports bad format letters as warnings: an early exit
/// is printed and its status given back; otherwise the warnings are printed on stderr.
pub fn parse_printing_warnings<T>(
    parse: impl FnOnce(&mut Vec<String>) -> Result<T, Exit>,
) -> Result<T, ExitCode> {
    let mut warnings = Vec::new();
    let parsed = parse(&mut warnings).map_err(Exit::finish)?;
    for w in &warnings {
        eprintln!("{w}");
    }
    Ok(parsed)
}

/// The version line every command prints for `-V/--version`: the Slurm release whose
/// interface Drover follows.
pub fn version_line() -> String {
    format!("slurm {}\n", model::config::SLURM_VERSION)
}

/// What `--help`, `--usage` or `--version` asks a command to print instead of working.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Info {
    Help,
    Usage,
    Version,
}

impl Info {
    /// The first of `--help`, `--usage` and `--version` (in that order) on the command
    /// line.
    pub fn asked(p: &Parsed) -> Option<Info> {
        [
            ("help", Info::Help),
            ("usage", Info::Usage),
            ("version", Info::Version),
        ]
        .into_iter()
        .find_map(|(name, info)| p.has(name).then_some(info))
    }

    /// The command's text for it.
    pub fn text(self, help: &str, usage: &str) -> String {
        match self {
            Info::Help => help.to_string(),
            Info::Usage => usage.to_string(),
            Info::Version => version_line(),
        }
    }

    /// Prints the text on stdout; exit status 0.
    pub fn print(self, help: &str, usage: &str) -> ExitCode {
        print!("{}", self.text(help, usage));
        ExitCode::SUCCESS
    }
}

/// Prints one listing of `squeue`/`sinfo`. With `-i/--iterate` a date line comes first
/// (unless `-l` put one in the text, or headers are off), and a blank line and the pause
/// after it; the answer says whether another round follows.
pub fn print_round(iterate: Option<u64>, long: bool, noheader: bool, now: i64, text: &str) -> bool {
    if iterate.is_some() && !long && !noheader {
        println!("{}", times::ctime_line(now));
    }
    print!("{text}");
    match iterate {
        Some(secs) => {
            println!();
            std::thread::sleep(std::time::Duration::from_secs(secs));
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_early_exits() {
        let specs = [
            opts::flag("help", None),
            opts::flag("usage", None),
            opts::flag("version", Some('V')),
            opts::value("partition", Some('p')),
            opts::value("partitions", None),
            opts::value("iterate", Some('i')),
        ];
        let aliases = [("partitions", "partition")];
        let parse = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            parse_command_line("cmd", &args, &specs, &aliases, "HELP\n", "USAGE\n")
        };
        assert_eq!(parse(&["-V", "--usage"]).unwrap_err().stdout, "USAGE\n");
        assert_eq!(parse(&["-V", "--help"]).unwrap_err().stdout, "HELP\n");
        assert_eq!(parse(&["-V"]).unwrap_err().stdout, version_line());
        let e = parse(&["--bogus"]).unwrap_err();
        assert_eq!(
            (e.code, e.stderr.as_str()),
            (
                1,
                "cmd: unrecognized option '--bogus'\nTry \"cmd --help\" for more information\n"
            )
        );
        // `--part` is a prefix of two names of one option.
        let p = parse(&["--part=a", "--partitions", "b"]).unwrap();
        assert_eq!(p.all("partition"), ["a", "b"]);
        assert_eq!(iterate_option("cmd", &p).unwrap(), None);
        let p = parse(&["-i", "5"]).unwrap();
        assert_eq!(iterate_option("cmd", &p).unwrap(), Some(5));
        let p = parse(&["-i", "0"]).unwrap();
        assert_eq!(
            iterate_option("cmd", &p).unwrap_err().stderr,
            "cmd: error: --iterate=0\n"
        );
        assert_eq!(split_list(" a, ,b,"), ["a", "b"]);
    }
}
