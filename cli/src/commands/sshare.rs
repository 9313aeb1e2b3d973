//! `sshare`: shares, usage and fair-share factors of the associations, as Slurm's sshare
//! prints them.
//!
//! The controller sends the whole fair-share tree (`GetShares`): root, then each account
//! followed by its users and its sub-accounts. This command picks the rows (accounts
//! always, users only the caller unless `-a`/`-u`; `-A` narrows to accounts, `-U` drops
//! account rows) and prints them with Slurm's field table: names indented by depth,
//! doubles as `%f` (in `%e` form when too wide), `-p`/`-P` parsable. Rendering
//! (`render`) is pure and unit-tested.
//!
//! ```text
//!              Account       User  RawShares  NormShares    RawUsage  EffectvUsage  FairShare
//! -------------------- ---------- ---------- ----------- ----------- ------------- ----------
//! root                                          1.000000       36000      1.000000
//!  ml                                      3    0.750000       36000      1.000000
//!   ml                      alice          1    1.000000       36000      1.000000   1.000000
//! ```

use crate::args;
use crate::calls;
use crate::client;
use crate::exit::Exit;
use crate::format::{self, Parsable, TableField};
use crate::opts::{OptSpec, flag, value};
use proto::v1::{GetSharesReply, ShareInfo};
use std::process::ExitCode;

const SPECS: &[OptSpec] = &[
    value("accounts", Some('A')),
    flag("all", Some('a')),
    value("clusters", Some('M')),
    value("cluster", None),
    flag("helpformat", Some('e')),
    flag("help", None),
    flag("long", Some('l')),
    flag("partition", Some('m')),
    flag("noheader", Some('n')),
    flag("h", Some('h')),
    value("format", Some('o')),
    flag("parsable", Some('p')),
    flag("parsable2", Some('P')),
    value("users", Some('u')),
    flag("Users", Some('U')),
    flag("usage", None),
    flag("verbose", Some('v')),
    flag("version", Some('V')),
];

const ALIASES: &[(&str, &str)] = &[("cluster", "clusters")];

/// How a value is laid out: text as it is, or a double as Slurm's
/// `print_fields_double` prints it in a column of its width.
pub struct Value<'a> {
    pub share: &'a ShareInfo,
    pub cluster: &'a str,
    width: usize,
    parsable: bool,
}

impl Value<'_> {
    fn double(&self, v: f64) -> String {
        double(v, self.width, self.parsable)
    }
}

/// A field of the output: its name (`--format` matches it as a prefix, in table
/// order), default width (negative: left-aligned) and value. A new field is one entry
/// of [`FIELDS`].
pub struct FieldDef {
    pub name: &'static str,
    pub width: i32,
    value: fn(&Value<'_>) -> String,
}

/// An sshare field.
pub type Field = &'static FieldDef;

impl std::fmt::Debug for FieldDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

const fn field(name: &'static str, width: i32, value: fn(&Value<'_>) -> String) -> FieldDef {
    FieldDef { name, width, value }
}

fn blank(_: &Value<'_>) -> String {
    String::new()
}

/// Slurm's field table.
pub static FIELDS: &[FieldDef] = &[
    field("Account", -20, |v| {
        format!("{}{}", " ".repeat(v.share.depth as usize), v.share.account)
    }),
    field("Cluster", 10, |v| v.cluster.to_string()),
    field("EffectvUsage", 13, |v| v.double(v.share.effective_usage)),
    field("FairShare", 10, |v| {
        v.share.fairshare.map(|f| v.double(f)).unwrap_or_default()
    }),
    field("GrpTRESMins", 30, |v| v.share.grp_tres_mins.clone()),
    // Past usage in TRES-minutes is not kept apart per TRES here.
    field("GrpTRESRaw", 30, blank),
    field("ID", 6, blank),
    field("LevelFS", 10, |v| {
        v.share.level_fs.map(|f| v.double(f)).unwrap_or_default()
    }),
    field("NormShares", 11, |v| v.double(v.share.norm_shares)),
    field("NormUsage", 11, |v| v.double(v.share.norm_usage)),
    field("Partition", 12, blank),
    field("RawShares", 10, |v| {
        v.share
            .raw_shares
            .map(|s| s.to_string())
            .unwrap_or_default()
    }),
    field("RawUsage", 11, |v| {
        (v.share.raw_usage.max(0.0) as u64).to_string()
    }),
    field("TRESRunMins", 30, |v| v.share.tres_run_mins.clone()),
    field("User", 10, |v| v.share.user.clone()),
];

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `-A`: only these accounts (and their users).
    pub accounts: Vec<String>,
    /// `-a` (or `-u -1`): every user's rows.
    pub all: bool,
    pub long: bool,
    pub noheader: bool,
    /// `-o/--format`: a comma-separated field list (`Account,User%12`).
    pub format: Option<String>,
    pub parsable: Option<Parsable>,
    /// `-u`: these users' rows (default: the caller's).
    pub users: Vec<String>,
    /// `-U`: user rows only.
    pub users_only: bool,
    pub verbose: bool,
}

/// What `-v` says first on stderr: the users and accounts asked for, as Slurm's sshare.
pub fn requested_lines(opts: &Options) -> String {
    let list = |items: &[String]| {
        if items.is_empty() {
            "\t: all\n".to_string()
        } else {
            items.iter().map(|i| format!("\t: {i}\n")).collect()
        }
    };
    format!(
        "Users requested:\n{}Accounts requested:\n{}",
        list(&opts.users),
        list(&opts.accounts)
    )
}

pub fn parse_args(args: &[String], me: &str) -> Result<Options, Exit> {
    let p = args::parse_command_line("sshare", args, SPECS, ALIASES, HELP, USAGE)?;
    if p.has("helpformat") {
        return Err(Exit::info(help_format()));
    }
    if let Some(extra) = p.positional.first() {
        return Err(Exit::usage(
            "sshare",
            format!("error: Unrecognized option: {extra}"),
        ));
    }
    let mut all = p.has("all");
    let mut users: Vec<String> = Vec::new();
    for u in p.all("users") {
        if u == "-1" {
            all = true;
            users.clear();
        } else {
            all = false;
            users.extend(args::split_list(u));
        }
    }
    if !all && users.is_empty() {
        users.push(me.to_string());
    }
    let format = {
        let parts: Vec<&str> = p.all("format");
        (!parts.is_empty()).then(|| parts.join(","))
    };
    let opts = Options {
        accounts: p
            .all("accounts")
            .into_iter()
            .flat_map(args::split_list)
            .collect(),
        all,
        long: p.has("long"),
        noheader: p.has("noheader") || p.has("h"),
        format,
        parsable: if p.has("parsable2") {
            Some(Parsable::NoEnding)
        } else if p.has("parsable") {
            Some(Parsable::Ending)
        } else {
            None
        },
        users: if all { Vec::new() } else { users },
        users_only: p.has("Users"),
        verbose: p.has("verbose"),
    };
    fields(&opts, "fair_tree").map_err(|e| Exit::error("sshare", &e))?;
    Ok(opts)
}

/// `--helpformat`: the field names, four to a line.
fn help_format() -> String {
    let mut out = String::new();
    for (i, name) in FIELDS.iter().map(|f| f.name).enumerate() {
        if i % 4 != 0 {
            out.push(' ');
        } else if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{name:<17}"));
    }
    out.push('\n');
    out
}

/// The columns: `--format`, or Slurm's default for the algorithm and `-l`.
pub fn fields(opts: &Options, algorithm: &str) -> Result<Vec<(TableField, Field)>, String> {
    let list = match &opts.format {
        Some(f) => f.clone(),
        None => {
            let long = match (opts.long, algorithm) {
                (false, _) => "",
                (true, "classic") => ",NormUsage,Eff,Fairshare,GrpTRESMins,TRESRunMins",
                (true, _) => ",NormUsage,Eff,Fairshare,LevelFS,GrpTRESMins,TRESRunMins",
            };
            if opts.long {
                format!("A,User,RawShares,NormShares,RawUsage{long}")
            } else {
                "A,User,RawShares,NormShares,RawUsage,Eff,Fairshare".into()
            }
        }
    };
    let mut out = Vec::new();
    for object in list.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        let (name, width) = match object.split_once('%') {
            Some((n, w)) => (n, w.parse::<i32>().ok().filter(|w| *w != 0)),
            None => (object, None),
        };
        let found = FIELDS.iter().find(|f| {
            f.name
                .to_ascii_lowercase()
                .starts_with(&name.to_ascii_lowercase())
        });
        match found {
            Some(f) if !name.is_empty() => out.push((
                TableField {
                    name: f.name.to_string(),
                    len: width.unwrap_or(f.width),
                },
                f,
            )),
            _ => return Err(format!("Invalid field requested: \"{name}\"")),
        }
    }
    Ok(out)
}

/// C's `%.*e`: `1.2346e+05`.
fn c_exp(v: f64, precision: usize) -> String {
    let s = format!("{v:.precision$e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let e: i32 = e.parse().unwrap_or(0);
            format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
        }
        None => s,
    }
}

/// A double as Slurm's `print_fields_double` prints it in a column: `%f`, or `%e` with
/// fewer digits when `%f` is wider than the column.
fn double(v: f64, width: usize, parsable: bool) -> String {
    let plain = format!("{v:.6}");
    if parsable || width == 0 || plain.len() <= width {
        return plain;
    }
    let long = c_exp(v, width);
    let precision = if long.len() > width {
        width.saturating_sub(long.len() - width)
    } else {
        width
    };
    c_exp(v, precision)
}

fn cell_value(
    share: &ShareInfo,
    field: Field,
    width: usize,
    parsable: bool,
    cluster: &str,
) -> String {
    (field.value)(&Value {
        share,
        cluster,
        width,
        parsable,
    })
}

/// Does a row pass the options' account and user selection?
fn selected(opts: &Options, share: &ShareInfo) -> bool {
    let is_user = !share.user.is_empty();
    if opts.users_only && !is_user {
        return false;
    }
    if !opts.accounts.is_empty() && !opts.accounts.contains(&share.account) {
        return false;
    }
    !is_user || opts.all || opts.users.contains(&share.user)
}

/// The text sshare prints for a reply.
pub fn render(opts: &Options, reply: &GetSharesReply, cluster: &str) -> Result<String, String> {
    let fields = fields(opts, &reply.algorithm)?;
    let parsable = opts.parsable.is_some();
    let rows: Vec<Vec<String>> = reply
        .shares
        .iter()
        .filter(|s| selected(opts, s))
        .map(|s| {
            fields
                .iter()
                .map(|(f, field)| {
                    cell_value(s, field, f.len.unsigned_abs() as usize, parsable, cluster)
                })
                .collect()
        })
        .collect();
    let table: Vec<TableField> = fields.into_iter().map(|(f, _)| f).collect();
    Ok(format::print_fields(
        &table,
        &rows,
        !opts.noheader,
        opts.parsable.unwrap_or(Parsable::No),
        "|",
    ))
}

pub fn run(args: &[String]) -> ExitCode {
    let (me, _, _) = client::current_user();
    let opts = match parse_args(args, &me) {
        Ok(o) => o,
        Err(early) => return early.finish(),
    };
    if opts.verbose {
        eprint!("{}", requested_lines(&opts));
    }
    let rt = client::runtime();
    let reply = match calls::query(&rt, "sshare", |mut c| async move {
        c.get_shares(proto::v1::GetSharesRequest {})
            .await
            .map(|r| r.into_inner())
    }) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match render(&opts, &reply, &client::cluster_name()) {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => Exit::error("sshare", &e).finish(),
    }
}

const USAGE: &str = "\
Usage:  sshare [OPTION]
  Valid OPTIONs are:
    -a or --all            list all users
    -A or --accounts=      display specific accounts (comma separated list)
    -e or --helpformat     Print a list of fields that can be specified
                           with the '--format' option
    -l or --long           include normalized usage in output
    -m or --partition      print the partition part of the association
    -M or --cluster=names  clusters to issue commands to.
    -n or --noheader       omit header from output
    -o or --format=        Comma separated list of fields (use
                           \"--helpformat\" for a list of available fields).
    -p or --parsable       '|' delimited output with a trailing '|'
    -P or --parsable2      '|' delimited output without a trailing '|'
    -u or --users=         display specific users (comma separated list)
    -U or --Users          display only user information
    -v or --verbose        display more information
    -V or --version        display tool version number
          --help           display this usage description
          --usage          display this usage description

";

const HELP: &str = USAGE;

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn share(account: &str, user: &str, depth: u32, shares: Option<u32>) -> ShareInfo {
        ShareInfo {
            account: account.into(),
            user: user.into(),
            depth,
            raw_shares: shares,
            ..Default::default()
        }
    }

    /// root → ml (3 shares) → {alice, bob}, physics (1) → {carol}, with usage.
    fn reply() -> GetSharesReply {
        let mut rows = vec![
            share("root", "", 0, None),
            share("ml", "", 1, Some(3)),
            share("ml", "alice", 2, Some(1)),
            share("ml", "bob", 2, Some(1)),
            share("physics", "", 1, Some(1)),
            share("physics", "carol", 2, Some(1)),
        ];
        let usage = [36000.0, 30000.0, 30000.0, 0.0, 6000.0, 6000.0];
        let effective = [1.0, 0.833333, 1.0, 0.0, 0.166667, 1.0];
        let norm = [1.0, 0.75, 0.5, 0.5, 0.25, 1.0];
        let level = [
            None,
            Some(0.9),
            Some(0.5),
            Some(f64::INFINITY),
            Some(1.5),
            Some(1.0),
        ];
        let fs = [
            None,
            None,
            Some(1.0 / 3.0),
            Some(2.0 / 3.0),
            None,
            Some(1.0),
        ];
        for (i, r) in rows.iter_mut().enumerate() {
            r.raw_usage = usage[i];
            r.norm_usage = usage[i] / 36000.0;
            r.effective_usage = effective[i];
            r.norm_shares = norm[i];
            r.level_fs = level[i];
            r.fairshare = fs[i];
        }
        rows[0].tres_run_mins = "cpu=600".into();
        rows[1].grp_tres_mins = "cpu=100000".into();
        GetSharesReply {
            algorithm: "fair_tree".into(),
            shares: rows,
        }
    }

    fn out(args: &[&str]) -> String {
        render(&parse_args(&s(args), "alice").unwrap(), &reply(), "drover").unwrap()
    }

    #[test]
    fn default_view_shows_accounts_and_my_rows() {
        assert_eq!(
            out(&[]),
            "             Account       User  RawShares  NormShares    RawUsage  EffectvUsage  FairShare \n\
             -------------------- ---------- ---------- ----------- ----------- ------------- ---------- \n\
             root                                          1.000000       36000      1.000000            \n\
             \x20ml                                      3    0.750000       30000      0.833333            \n\
             \x20\x20ml                      alice          1    0.500000       30000      1.000000   0.333333 \n\
             \x20physics                                 1    0.250000        6000      0.166667            \n"
        );
    }

    #[test]
    fn all_users_long_and_parsable() {
        let all = out(&["-a", "-P", "-n"]);
        assert_eq!(
            all,
            "root|||1.000000|36000|1.000000|\n\
             \x20ml||3|0.750000|30000|0.833333|\n\
             \x20\x20ml|alice|1|0.500000|30000|1.000000|0.333333\n\
             \x20\x20ml|bob|1|0.500000|0|0.000000|0.666667\n\
             \x20physics||1|0.250000|6000|0.166667|\n\
             \x20\x20physics|carol|1|1.000000|6000|1.000000|1.000000\n"
        );
        let long = out(&["-l", "-p", "-u", "bob"]);
        let lines: Vec<&str> = long.lines().collect();
        assert_eq!(
            lines[0],
            "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS|GrpTRESMins|TRESRunMins|"
        );
        assert_eq!(
            lines[1],
            "root|||1.000000|36000|1.000000|1.000000||||cpu=600|"
        );
        assert_eq!(
            lines[3],
            "  ml|bob|1|0.500000|0|0.000000|0.000000|0.666667|inf|||"
        );
        // -U: user rows only; -A: one account.
        assert_eq!(
            out(&["-a", "-U", "-A", "ml", "-P", "-n", "-o", "User,FairShare"]),
            "alice|0.333333\nbob|0.666667\n"
        );
        assert_eq!(
            out(&[
                "-n",
                "-A",
                "physics",
                "-u",
                "carol",
                "-o",
                "Account,User%6,Fair"
            ]),
            " physics                               \n  physics             carol   1.000000 \n"
        );
    }

    #[test]
    fn wide_values_use_exponents_and_errors() {
        assert_eq!(double(0.5, 10, false), "0.500000");
        assert_eq!(double(123456.123456, 10, false), "1.2346e+05");
        assert_eq!(double(f64::INFINITY, 10, false), "inf");
        assert_eq!(double(123456.123456, 10, true), "123456.123456");
        assert!(parse_args(&s(&["-o", "Bogus"]), "me").is_err());
        assert!(parse_args(&s(&["extra"]), "me").is_err());
        let help = parse_args(&s(&["--helpformat"]), "me").unwrap_err();
        assert!(
            help.stdout.starts_with("Account           Cluster"),
            "{}",
            help.stdout
        );
        let o = parse_args(&s(&["-u", "-1"]), "me").unwrap();
        assert!(o.all && o.users.is_empty());
        let o = parse_args(&s(&["-u", "x,y"]), "me").unwrap();
        assert_eq!(o.users, vec!["x", "y"]);
    }

    #[test]
    fn verbose_names_the_users_and_accounts_requested() {
        let opts = parse_args(&s(&["-v", "-A", "ml"]), "alice").unwrap();
        assert_eq!(
            requested_lines(&opts),
            "Users requested:\n\t: alice\nAccounts requested:\n\t: ml\n"
        );
        let all = parse_args(&s(&["-a"]), "alice").unwrap();
        assert!(!all.verbose);
        assert_eq!(
            requested_lines(&all),
            "Users requested:\n\t: all\nAccounts requested:\n\t: all\n"
        );
    }
}
