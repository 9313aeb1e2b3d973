//! `sacctmgr`: view and change the accounts, users and QOS the controller keeps, in
//! Slurm 22.05's words.
//!
//! `show|list account|user|qos|association|cluster [withassoc] [withcoord] [where]
//! [name=..] [account=..] [user=..] [format=A,B%12]` reads the associations
//! (`ShowAccounting`) and prints Slurm's column tables ([`render_show`], pure): values
//! right-aligned and cut to end in `+`, `-p`/`-P` parsable, `-n` without the header.
//!
//! Besides its own cluster's, the controller keeps other clusters' associations that
//! `add cluster` made (as one slurmdbd serves a site's clusters): listings go cluster
//! by cluster, and `cluster=` picks the clusters a change goes to.
//!
//! `add|modify|delete account|user|qos|coordinator|cluster ...` parses the words with
//! `model::assoc_change`, asks the controller what the change would do (a dry run),
//! prints Slurm's summary ([`summary`], pure) and commits it when the answer to
//! Slurm's question is `y` ([`commit`]); `-i` commits at once.
//!
//! ```text
//! $ sacctmgr show account
//!    Account                Descr                  Org
//! ---------- -------------------- --------------------
//!         ml                   ml                   ml
//!       root default root account                 root
//! $ sacctmgr -i add user bob account=ml
//!  Adding User(s)
//!   bob
//!  Associations =
//!   U = bob       A = ml         C = drover
//! ```

use crate::args;
use crate::calls;
use crate::client;
use crate::exit::Exit;
use crate::format::{self, Parsable, TableField};
use crate::opts::{OptSpec, flag, value};
use crate::times;
use crate::words::atoi;
use crate::words::{abbreviated, abbreviates as keyword};
use model::assoc::{Account, Associations, DEFAULT_QOS, Limits, Qos, ROOT};
use model::assoc_change::{
    Action, AssocChange, Changed, Entity, LimitKind, LimitValue, Settings, admin_level_name,
};
use model::job_update::JobChange;
use model::reservation_change::ListEdit;
use model::{tres, units};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::process::ExitCode;

const SPECS: &[OptSpec] = &[
    flag("help", Some('h')),
    flag("immediate", Some('i')),
    value("cluster", Some('M')),
    flag("noheader", Some('n')),
    flag("oneliner", Some('o')),
    flag("parsable", Some('p')),
    flag("parsable2", Some('P')),
    flag("quiet", Some('Q')),
    flag("readonly", Some('r')),
    flag("associations", Some('s')),
    flag("usage", None),
    flag("verbose", Some('v')),
    flag("version", Some('V')),
];

/// The RPC version `show cluster` prints: Slurm 22.05's protocol (38 << 8).
pub const RPC_VERSION: u32 = 9728;

/// Slurm 22.05's words for a change the caller may not make.
pub const NO_PRIVILEGE: &str = " Your user doesn't have privilege to perform this action";

/// The command-line flags before (or among) the words.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `-i`: commit without asking.
    pub immediate: bool,
    pub noheader: bool,
    pub parsable: Option<Parsable>,
    /// `-r`: refuse changes.
    pub readonly: bool,
    /// `-s`: `show account|user` as with `withassoc`.
    pub associations: bool,
}

/// What `show` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    Account,
    User,
    Qos,
    Assoc,
    Cluster,
}

/// `show`'s conditions; empty lists select everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filters {
    /// Plain words and `name=`: accounts, users, QOS or clusters by the listing.
    pub names: Vec<String>,
    pub accounts: Vec<String>,
    pub users: Vec<String>,
    pub clusters: Vec<String>,
    pub parents: Vec<String>,
}

/// A `show` command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Show {
    pub what: Listing,
    /// `format=` items (`Account`, `User%12`); empty: Slurm's default columns.
    pub format: Vec<String>,
    pub with_assoc: bool,
    pub with_coord: bool,
    pub filters: Filters,
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Show(Show),
    Change(Box<AssocChange>),
    /// `modify job [where] JobID=N[,M] set Comment=... DerivedExitCode=...`: jobs'
    /// accounting records.
    ModifyJob {
        job_ids: Vec<String>,
        changes: Vec<JobChange>,
    },
    /// `show configuration`: the accounting settings, and the accounting store's.
    ShowConfig,
}

/// The cluster as `show cluster` prints it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterInfo {
    pub name: String,
    pub host: String,
    pub port: String,
}

impl ClusterInfo {
    /// The cluster `name` whose controller listens at `addr` (`host:port`).
    pub fn new(name: &str, addr: &str) -> ClusterInfo {
        let (host, port) = addr.rsplit_once(':').unwrap_or((addr, ""));
        ClusterInfo {
            name: name.to_string(),
            host: host.trim_matches(['[', ']']).to_string(),
            port: port.to_string(),
        }
    }
}

/// A list value as Slurm's sacctmgr reads one (`slurm_addto_char_list`): a quote that
/// opens it is dropped with everything from its closing quote, so `format="User,Account"`
/// (a script's quotes that reached the command) is `User` and `Account`.
fn list_value(value: &str) -> Vec<String> {
    let unquoted = match value.chars().next() {
        Some(quote @ ('"' | '\'')) => value[1..].split(quote).next().unwrap_or_default(),
        _ => value,
    };
    args::split_list(unquoted)
}

fn names(value: &str, lower: bool) -> Vec<String> {
    list_value(value)
        .into_iter()
        .map(|n| if lower { n.to_lowercase() } else { n })
        .collect()
}

/// Slurm's wording of a refusal: its messages start with a space.
fn slurm_line(message: &str) -> String {
    if message.starts_with(' ') {
        message.to_string()
    } else {
        format!(" {message}")
    }
}

/// The entity `show`/`list` names, abbreviated as Slurm's sacctmgr takes it (`acc`,
/// `assoc`, `cl`, `q`, `u`); the first keyword that matches wins, in Slurm's order.
fn listing(word: &str) -> Option<Listing> {
    abbreviated(
        word,
        &[
            ("accounts", 1, Some(Listing::Account)),
            ("acct", 4, Some(Listing::Account)),
            ("associations", 2, Some(Listing::Assoc)),
            ("clusters", 2, Some(Listing::Cluster)),
            ("coordinators", 2, None),
            ("qos", 1, Some(Listing::Qos)),
            ("users", 1, Some(Listing::User)),
        ],
    )
    .flatten()
}

/// The entity `add`/`modify`/`delete` names, abbreviated as Slurm's sacctmgr takes it.
fn entity(word: &str) -> Option<Entity> {
    abbreviated(
        word,
        &[
            ("accounts", 1, Entity::Account),
            ("acct", 4, Entity::Account),
            ("clusters", 2, Entity::Cluster),
            ("coordinators", 2, Entity::Coordinator),
            ("qos", 1, Entity::Qos),
            ("users", 1, Entity::User),
        ],
    )
}

/// The verb, abbreviated as Slurm's sacctmgr takes it (`mod`, `del`, `cre`).
fn action(word: &str) -> Option<Action> {
    abbreviated(
        word,
        &[
            ("add", 3, Action::Add),
            ("create", 3, Action::Add),
            ("modify", 1, Action::Modify),
            ("update", 1, Action::Modify),
            ("delete", 3, Action::Delete),
            ("remove", 3, Action::Delete),
        ],
    )
}

/// Parses `show`'s words.
pub fn parse_show(what: Listing, words: &[String], opts: &Options) -> Result<Show, String> {
    let mut show = Show {
        what,
        format: Vec::new(),
        with_assoc: opts.associations,
        with_coord: false,
        filters: Filters::default(),
    };
    let lower = matches!(what, Listing::Account | Listing::Qos | Listing::Assoc);
    let f = &mut show.filters;
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            if keyword(word, "where", 5) || keyword(word, "tree", 4) {
                continue;
            } else if keyword(word, "withassoc", 5) {
                show.with_assoc = true;
            } else if keyword(word, "withcoordinators", 5) {
                show.with_coord = true;
            } else {
                f.names.extend(names(word, lower));
            }
            continue;
        };
        if keyword(key, "format", 1) {
            show.format.extend(list_value(value));
        } else if keyword(key, "names", 1) {
            f.names.extend(names(value, lower));
        } else if keyword(key, "accounts", 2) || keyword(key, "acct", 4) {
            f.accounts.extend(names(value, true));
        } else if keyword(key, "users", 1) {
            f.users.extend(names(value, false));
        } else if keyword(key, "clusters", 1) {
            f.clusters.extend(names(value, true));
        } else if keyword(key, "parent", 3) {
            f.parents.extend(names(value, true));
        } else {
            return Err(format!(
                " Unknown condition: {word}\n Use keyword 'set' to modify value"
            ));
        }
    }
    fields(&show)?;
    Ok(show)
}

/// Parses the command line: the flags, then `ACTION ENTITY words...`.
pub fn parse_args(args: &[String]) -> Result<(Options, Command), Exit> {
    // Slurm's sacctmgr prints its help for --usage too.
    let p = args::parse_command_line("sacctmgr", args, SPECS, &[], HELP, HELP)?;
    let opts = Options {
        immediate: p.has("immediate"),
        noheader: p.has("noheader"),
        parsable: if p.has("parsable2") {
            Some(Parsable::NoEnding)
        } else if p.has("parsable") {
            Some(Parsable::Ending)
        } else {
            None
        },
        readonly: p.has("readonly"),
        associations: p.has("associations"),
    };
    let words = &p.positional;
    let Some(verb) = words.first() else {
        return Err(Exit::error(
            "sacctmgr",
            "no command given (sacctmgr has no interactive mode here)",
        ));
    };
    match verb.to_ascii_lowercase().as_str() {
        "help" => return Err(Exit::info(HELP)),
        "version" => return Err(Exit::info(args::version_line())),
        _ => {}
    }
    let show = keyword(verb, "show", 3) || keyword(verb, "list", 3);
    let action = action(verb);
    if !show && action.is_none() {
        return Err(Exit::raw(format!("invalid keyword: {verb}")));
    }
    let Some(entity) = words.get(1) else {
        return Err(Exit::raw(format!("Too few arguments for keyword:{verb}")));
    };
    let rest = &words[2..];
    if show && keyword(entity, "configuration", 4) {
        return Ok((opts, Command::ShowConfig));
    }
    if show {
        let Some(what) = listing(entity) else {
            return Err(Exit::raw(format!(
                "No valid entity in list command: {entity} (Account, Association, Cluster, QOS or User)"
            )));
        };
        let show = parse_show(what, rest, &opts).map_err(Exit::raw)?;
        return Ok((opts, Command::Show(show)));
    }
    let action = action.expect("checked above");
    if opts.readonly {
        return Err(Exit::raw("Can't run this command in readonly mode."));
    }
    if action == Action::Modify && keyword(entity, "job", 1) {
        let (job_ids, changes) = parse_job_record(rest).map_err(Exit::raw)?;
        return Ok((opts, Command::ModifyJob { job_ids, changes }));
    }
    let verb_name = match action {
        Action::Add => "add",
        Action::Modify => "modify",
        Action::Delete => "delete",
    };
    let Some(entity) = self::entity(entity) else {
        return Err(Exit::raw(format!(
            "No valid entity in {verb_name} command: {entity} (Account, Cluster, Coordinator, QOS or User)"
        )));
    };
    let change = AssocChange::parse(action, entity, rest).map_err(|e| Exit::raw(slurm_line(&e)))?;
    if action == Action::Modify && change.settings == Settings::default() {
        return Err(Exit::raw(" You didn't give me anything to set"));
    }
    if action == Action::Delete
        && change.conditions.names.is_empty()
        && change.conditions.accounts.is_empty()
    {
        return Err(Exit::raw(" No conditions given to remove, not executing."));
    }
    Ok((opts, Command::Change(Box::new(change))))
}

/// The words of `modify job`, as Slurm's sacctmgr reads them: before `set` (or after
/// `where`), job ids (`JobID=4,5` or bare); after it, `Comment=` and
/// `DerivedExitCode=` (a number).
fn parse_job_record(words: &[String]) -> Result<(Vec<String>, Vec<JobChange>), String> {
    let mut ids = Vec::new();
    let mut changes = Vec::new();
    let mut setting = false;
    for word in words {
        if keyword(word, "where", 5) {
            setting = false;
            continue;
        }
        if keyword(word, "set", 3) {
            setting = true;
            continue;
        }
        let (key, value) = match word.split_once('=') {
            Some((k, v)) => (k, model::keyword::unquoted(v)),
            None if !setting => ("jobid", word.as_str()),
            None => return Err(format!(" Unknown option: {word}")),
        };
        if !setting && keyword(key, "jobid", 1) {
            ids.extend(
                value
                    .split(',')
                    .filter(|v| !v.is_empty())
                    .map(str::to_string),
            );
        } else if !setting && keyword(key, "cluster", 1) {
            // Only this cluster's jobs are kept here.
        } else if setting && keyword(key, "comment", 1) {
            changes.push(JobChange::Comment(value.to_string()));
        } else if setting && keyword(key, "derivedexitcode", 12) {
            let status = value
                .parse()
                .map_err(|_| format!(" Invalid value for DerivedExitCode ({value})"))?;
            changes.push(JobChange::DerivedExitCode(status));
        } else {
            return Err(format!(
                " Unknown option: {word}\n Use keyword 'where' to modify condition"
            ));
        }
    }
    if ids.is_empty() {
        return Err(" No job ids given to modify".into());
    }
    if changes.is_empty() {
        return Err(" You didn't give me anything to set".into());
    }
    Ok((ids, changes))
}

/// Modifies jobs' accounting records, as Slurm's sacctmgr: without `immediate`, asks
/// first; then `Modified jobs...` and each job changed. A job it could not change is
/// named on stderr (exit 1).
fn run_modify_job(
    rt: &tokio::runtime::Runtime,
    job_ids: Vec<String>,
    changes: &[JobChange],
    opts: &Options,
) -> ExitCode {
    if !opts.immediate {
        print!("{QUESTION}");
        let _ = std::io::stdout().flush();
        match ask_stdin() {
            Answer::Line(line) if line.starts_with(['y', 'Y']) => println!(),
            Answer::TimedOut => {
                println!("timeout\n Changes Discarded");
                return ExitCode::SUCCESS;
            }
            _ => {
                println!("\n Changes Discarded");
                return ExitCode::SUCCESS;
            }
        }
    }
    let req = proto::v1::UpdateJobRequest {
        job_ids,
        changes: changes
            .iter()
            .map(proto::convert::job_change_to_wire)
            .collect(),
        record: true,
    };
    let results = match calls::query(rt, "sacctmgr", |mut c| {
        let req = req.clone();
        async move { c.update_job(req).await.map(|r| r.into_inner().results) }
    }) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let (done, failed): (Vec<_>, Vec<_>) = results.into_iter().partition(|r| r.error.is_empty());
    if !done.is_empty() {
        println!(" Modified jobs...");
        for r in &done {
            println!("  {}", r.job_id);
        }
    }
    for r in &failed {
        eprintln!(" Error with request: {}: {}", r.job_id, r.error);
    }
    if failed.is_empty() && !done.is_empty() {
        ExitCode::SUCCESS
    } else {
        if done.is_empty() && failed.is_empty() {
            println!(" Nothing modified");
        }
        ExitCode::from(1)
    }
}

// ------------------------------------------------------------------- show tables

/// One line of a `show` table: an account's association (`user` empty), a user's
/// association, a user record (`account` empty), a QOS or the cluster.
pub struct Row<'a> {
    kind: Listing,
    db: &'a Associations,
    cluster: &'a ClusterInfo,
    account: Option<&'a Account>,
    user: Option<&'a str>,
    qos: Option<&'a Qos>,
}

impl Row<'_> {
    /// The row's limits: a QOS's own; an association's Grp limits as set on it, its
    /// Max limits as in force (inherited, as Slurm's listing fills them in).
    fn limits(&self) -> Limits {
        if let Some(q) = self.qos {
            return q.limits.clone();
        }
        let Some(a) = self.account else {
            return Limits::default();
        };
        let own = match self.user {
            Some(u) => a.user_limits.get(u).cloned().unwrap_or_default(),
            None => a.limits.clone(),
        };
        let max = self.db.user_limits(&a.name, self.user.unwrap_or(""));
        Limits {
            max_tres_per_user: max.max_tres_per_user,
            max_tres_per_job: max.max_tres_per_job,
            max_tres_mins_per_job: max.max_tres_mins_per_job,
            max_jobs: max.max_jobs,
            max_submit: max.max_submit,
            max_wall_min: max.max_wall_min,
            ..own
        }
    }

    fn limit(&self, kind: LimitKind) -> String {
        let mut l = self.limits();
        match kind.count_mut(&mut l) {
            Some(Some(m)) if kind.is_time() => units::format_elapsed(u64::from(*m) * 60),
            _ => kind.show(&l),
        }
    }

    /// One TRES of a TRES limit, as the legacy columns (`GrpCPUs`) print it.
    fn one_tres(&self, pick: fn(&Limits) -> &tres::TresCounts, name: &str) -> String {
        pick(&self.limits())
            .get(name)
            .map(|n| n.to_string())
            .unwrap_or_default()
    }

    fn assoc_account(&self) -> Option<&Account> {
        self.account.filter(|_| self.qos.is_none())
    }

    fn user_record(&self) -> Option<&model::assoc::User> {
        self.user.and_then(|u| self.db.users.get(u))
    }
}

/// A column of a `show` table: its title, Slurm's width (negative: left-aligned), the
/// words `format=` knows it by (each with the fewest letters Slurm accepts) and its
/// value. A new column is one entry of [`FIELDS`].
pub struct FieldDef {
    pub name: &'static str,
    pub width: i32,
    keys: &'static [(&'static str, usize)],
    value: fn(&Row<'_>) -> String,
}

impl std::fmt::Debug for FieldDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

const fn field(
    name: &'static str,
    width: i32,
    keys: &'static [(&'static str, usize)],
    value: fn(&Row<'_>) -> String,
) -> FieldDef {
    FieldDef {
        name,
        width,
        keys,
        value,
    }
}

fn blank(_: &Row<'_>) -> String {
    String::new()
}

fn join<'a>(items: impl IntoIterator<Item = &'a String>) -> String {
    items
        .into_iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(",")
}

fn share(r: &Row<'_>) -> String {
    match (r.kind, r.assoc_account(), r.user) {
        (_, Some(a), Some(user)) => r.db.user_shares(&a.name, user).to_string(),
        (_, Some(a), None) => a.shares.to_string(),
        _ => String::new(),
    }
}

fn priority(r: &Row<'_>) -> String {
    if let Some(q) = r.qos {
        return q.priority.to_string();
    }
    match r
        .assoc_account()
        .map(|a| r.db.assoc_priority(&a.name, r.user.unwrap_or("")))
    {
        Some(p) if p > 0 => p.to_string(),
        _ => String::new(),
    }
}

fn qos_level(r: &Row<'_>) -> String {
    match r.assoc_account() {
        Some(a) => {
            r.db.allowed_qos(&a.name, r.user.unwrap_or(""))
                .map(join)
                .unwrap_or_else(|| DEFAULT_QOS.to_string())
        }
        None => String::new(),
    }
}

fn default_qos(r: &Row<'_>) -> String {
    r.assoc_account()
        .and_then(|a| r.db.default_qos(&a.name, r.user.unwrap_or("")))
        .unwrap_or_default()
        .to_string()
}

fn coordinators(r: &Row<'_>) -> String {
    if r.kind == Listing::User {
        let user = r.user.unwrap_or("");
        let mine: Vec<&String> =
            r.db.accounts
                .keys()
                .filter(|a| r.db.coordinates(user, a))
                .collect();
        return join(mine);
    }
    r.assoc_account()
        .map(|a| join(&a.coordinators))
        .unwrap_or_default()
}

fn name(r: &Row<'_>) -> String {
    if let Some(q) = r.qos {
        return q.name.clone();
    }
    if r.kind == Listing::Cluster {
        return r.cluster.name.clone();
    }
    match (r.user, r.account) {
        (Some(u), _) => u.to_string(),
        (None, Some(a)) => a.name.clone(),
        _ => String::new(),
    }
}

fn cluster_only(r: &Row<'_>, v: &str) -> String {
    if r.kind == Listing::Cluster {
        v.to_string()
    } else {
        String::new()
    }
}

/// Slurm's columns, in the order sacctmgr matches `format=` words against them.
pub static FIELDS: &[FieldDef] = &[
    field("Account", 10, &[("account", 3), ("acct", 4)], |r| {
        r.assoc_account()
            .filter(|_| r.kind != Listing::Cluster)
            .map(|a| a.name.clone())
            .unwrap_or_default()
    }),
    field("Admin", 9, &[("adminlevel", 2)], |r| {
        r.user_record()
            .map(|u| admin_level_name(u.admin_level).to_string())
            .unwrap_or_default()
    }),
    field("Cluster", 10, &[("clusters", 2)], |r| {
        r.cluster.name.clone()
    }),
    field("Coord Accounts", 20, &[("coordinators", 3)], coordinators),
    field("ControlHost", 15, &[("controlhost", 8)], |r| {
        cluster_only(r, &r.cluster.host)
    }),
    field("ControlPort", 12, &[("controlport", 8)], |r| {
        cluster_only(r, &r.cluster.port)
    }),
    field("Def Acct", 10, &[("defaultaccount", 8)], |r| {
        r.user_record()
            .map(|u| u.default_account.clone())
            .unwrap_or_default()
    }),
    field(
        "Def QOS",
        9,
        &[("defaultqos", 8), ("defqos", 6)],
        default_qos,
    ),
    field("Descr", 20, &[("description", 3)], |r| {
        r.assoc_account()
            .map(|a| a.description.clone())
            .unwrap_or_default()
    }),
    field("Flags", 20, &[("flags", 2)], blank),
    // Drover's GPU idle policy (`model::gpu_use`), as `set GpuIdleLimit=` gives it.
    field("GpuIdleLimit", 12, &[("gpuidlelimit", 8)], |r| {
        r.qos
            .and_then(|q| q.gpu_idle.limit_s)
            .map(|l| units::format_elapsed(u64::from(l)))
            .unwrap_or_default()
    }),
    field("GpuIdleAction", 13, &[("gpuidleaction", 8)], |r| {
        r.qos
            .filter(|q| q.gpu_idle.limit_s.is_some())
            .map(|q| q.gpu_idle.action.word().to_string())
            .unwrap_or_default()
    }),
    field("GpuIdleGrace", 12, &[("gpuidlegrace", 8)], |r| {
        r.qos
            .filter(|q| q.gpu_idle.limit_s.is_some())
            .map(|q| units::format_elapsed(u64::from(q.gpu_idle.grace_s)))
            .unwrap_or_default()
    }),
    field("GraceTime", 10, &[("gracetime", 3)], |r| {
        r.qos
            .map(|q| units::format_elapsed(u64::from(q.grace_time)))
            .unwrap_or_default()
    }),
    field("GrpCPUs", 8, &[("grpcpus", 6)], |r| {
        r.one_tres(|l| &l.grp_tres, "cpu")
    }),
    field("GrpCPUMins", 11, &[("grpcpumins", 7)], |r| {
        r.one_tres(|l| &l.grp_tres_mins, "cpu")
    }),
    field("GrpCPURunMins", 13, &[("grpcpurunmins", 7)], |r| {
        r.one_tres(|l| &l.grp_tres_run_mins, "cpu")
    }),
    field("GrpTRES", 13, &[("grptres", 7)], |r| {
        r.limit(LimitKind::GrpTres)
    }),
    field("GrpTRESMins", 13, &[("grptresmins", 7)], |r| {
        r.limit(LimitKind::GrpTresMins)
    }),
    field("GrpTRESRunMins", 13, &[("grptresrunmins", 7)], |r| {
        r.limit(LimitKind::GrpTresRunMins)
    }),
    field("GrpJobs", 7, &[("grpjobs", 4)], |r| {
        r.limit(LimitKind::GrpJobs)
    }),
    // Drover's: what an account is guaranteed (see `docs/accounting.md`).
    field("GuaranteedTRES", 14, &[("guaranteedtres", 4)], |r| {
        r.limit(LimitKind::GuaranteedTres)
    }),
    // Drover's, as Kueue's borrowingLimit and lendingLimit.
    field("BorrowingLimit", 14, &[("borrowinglimit", 3)], |r| {
        r.limit(LimitKind::BorrowingLimit)
    }),
    field("LendingLimit", 14, &[("lendinglimit", 3)], |r| {
        r.limit(LimitKind::LendingLimit)
    }),
    field("GrpMem", 7, &[("grpmemory", 4)], |r| {
        r.one_tres(|l| &l.grp_tres, "mem")
    }),
    field("GrpNodes", 8, &[("grpnodes", 4)], |r| {
        r.one_tres(|l| &l.grp_tres, "node")
    }),
    field("GrpSubmit", 9, &[("grpsubmitjobs", 4)], |r| {
        r.limit(LimitKind::GrpSubmitJobs)
    }),
    field("GrpWall", 11, &[("grpwall", 4)], |r| {
        r.limit(LimitKind::GrpWall)
    }),
    field("MaxCPUMins", 11, &[("maxcpuminsperjob", 7)], |r| {
        r.one_tres(|l| &l.max_tres_mins_per_job, "cpu")
    }),
    field("MaxCPUs", 8, &[("maxcpusperjob", 7)], |r| {
        r.one_tres(|l| &l.max_tres_per_job, "cpu")
    }),
    field(
        "MaxTRES",
        13,
        &[("maxtres", 7), ("maxtresperjob", 11)],
        |r| r.limit(LimitKind::MaxTres),
    ),
    field("MaxTRESPerNode", 14, &[("maxtrespernode", 11)], blank),
    field("MaxTRESMins", 13, &[("maxtresminsperjob", 8)], |r| {
        r.limit(LimitKind::MaxTresMins)
    }),
    field(
        "MaxTRESPA",
        13,
        &[
            ("maxtresperaccount", 11),
            ("maxtresperacct", 11),
            ("maxtrespa", 9),
        ],
        blank,
    ),
    field(
        "MaxTRESPU",
        13,
        &[("maxtresperuser", 11), ("maxtrespu", 9)],
        |r| r.limit(LimitKind::MaxTresPerUser),
    ),
    field("MaxJobs", 7, &[("maxjobs", 4)], |r| {
        r.limit(LimitKind::MaxJobs)
    }),
    field(
        "MaxJobsPA",
        9,
        &[
            ("maxjobsperaccount", 11),
            ("maxjobsperacct", 11),
            ("maxjobspa", 9),
        ],
        blank,
    ),
    field(
        "MaxJobsPU",
        9,
        &[("maxjobsperuser", 11), ("maxjobspu", 9)],
        |r| r.limit(LimitKind::MaxJobs),
    ),
    field("MaxNodes", 8, &[("maxnodesperjob", 4)], |r| {
        r.one_tres(|l| &l.max_tres_per_job, "node")
    }),
    field("MaxSubmit", 9, &[("maxsubmitjobs", 4)], |r| {
        r.limit(LimitKind::MaxSubmitJobs)
    }),
    field(
        "MaxSubmitPA",
        11,
        &[
            ("maxsubmitjobsperaccount", 17),
            ("maxsubmitjobsperacct", 17),
            ("maxsubmitjobspa", 15),
            ("maxsubmitpa", 11),
        ],
        blank,
    ),
    field(
        "MaxSubmitPU",
        11,
        &[
            ("maxsubmitjobsperuser", 10),
            ("maxsubmitjobspu", 10),
            ("maxsubmitpu", 6),
        ],
        |r| r.limit(LimitKind::MaxSubmitJobs),
    ),
    field("MaxWall", 11, &[("maxwalldurationperjob", 4)], |r| {
        r.limit(LimitKind::MaxWall)
    }),
    field("MinTRES", 13, &[("mintresperjob", 7)], blank),
    field("Name", 10, &[("name", 2)], name),
    field("Org", 20, &[("organization", 1)], |r| {
        r.assoc_account()
            .map(|a| a.organization.clone())
            .unwrap_or_default()
    }),
    field("Par Name", 10, &[("parentname", 7)], |r| {
        match (r.assoc_account(), r.user, r.kind) {
            (Some(a), None, k) if k != Listing::Cluster => a.parent.clone().unwrap_or_default(),
            _ => String::new(),
        }
    }),
    field("Partition", 10, &[("partition", 4)], blank),
    field("PreemptMode", 11, &[("preemptmode", 8)], |r| {
        r.qos
            .map(|q| {
                if q.preempt_mode.is_empty() {
                    "cluster".to_string()
                } else {
                    q.preempt_mode.to_lowercase()
                }
            })
            .unwrap_or_default()
    }),
    field("Preempt", 10, &[("preempt", 7)], |r| {
        r.qos.map(|q| join(&q.preempt)).unwrap_or_default()
    }),
    field("PreemptExemptTime", 19, &[("preemptexempttime", 8)], blank),
    field("Priority", 10, &[("priority", 3)], priority),
    field("QOS", 20, &[("qoslevel", 3)], qos_level),
    field("RPC", 5, &[("rpc", 1)], |r| {
        cluster_only(r, &RPC_VERSION.to_string())
    }),
    field("Share", 9, &[("share", 1), ("fairshare", 2)], share),
    field("UsageFactor", 11, &[("usagefactor", 6)], |r| {
        r.qos
            .map(|q| format!("{:.6}", q.usage_factor))
            .unwrap_or_default()
    }),
    field("UsageThres", 10, &[("usagethreshold", 6)], blank),
    field("User", 10, &[("user", 1)], |r| {
        r.user.unwrap_or("").to_string()
    }),
];

/// Slurm's default columns of a listing.
fn default_format(show: &Show) -> String {
    match show.what {
        Listing::Account => {
            let mut f = String::from("Acc,Des,O");
            if show.with_assoc {
                f.push_str(
                    ",Cl,ParentN,U,Share,Priority,GrpJ,GrpN,GrpCPUs,GrpMEM,GrpS,GrpWall,\
                     GrpCPUMins,MaxJ,MaxN,MaxCPUs,MaxS,MaxW,MaxCPUMins,QOS,DefaultQOS",
                );
            }
            if show.with_coord {
                f.push_str(",Coord");
            }
            f
        }
        Listing::User => {
            let mut f = String::from("U,DefaultA,Ad");
            if show.with_assoc {
                f.push_str(
                    ",Cl,Acc,Part,Share,Priority,MaxJ,MaxN,MaxCPUs,MaxS,MaxW,MaxCPUMins,\
                     QOS,DefaultQOS",
                );
            }
            if show.with_coord {
                f.push_str(",Coord");
            }
            f
        }
        Listing::Qos => "Name,Prio,GraceTime,Preempt,PreemptExemptTime,PreemptMode,Flags%40,\
                         UsageThres,UsageFactor,GrpTRES,GrpTRESMins,GrpTRESRunMins,GrpJobs,\
                         GrpSubmit,GrpWall,MaxTRES,MaxTRESPerNode,MaxTRESMins,MaxWall,MaxTRESPU,\
                         MaxJobsPU,MaxSubmitPU,MaxTRESPA,MaxJobsPA,MaxSubmitPA,MinTRES"
            .into(),
        Listing::Assoc => "Cluster,Account,User,Part,Share,Priority,GrpJ,GrpTRES,GrpS,GrpWall,\
                           GrpTRESMins,MaxJ,MaxTRES,MaxTRESPerNode,MaxS,MaxW,MaxTRESMins,QOS,\
                           DefQOS,GrpTRESRunMins"
            .into(),
        Listing::Cluster => "Cl,Controlh,Controlp,RPC,Share,GrpJ,GrpTRES,GrpS,MaxJ,MaxTRES,\
                             MaxS,MaxW,QOS,DefaultQOS"
            .into(),
    }
}

/// The columns of a listing: `format=` or Slurm's default.
pub fn fields(show: &Show) -> Result<Vec<(TableField, &'static FieldDef)>, String> {
    let items: Vec<String> = if show.format.is_empty() {
        args::split_list(&default_format(show))
    } else {
        show.format.clone()
    };
    items
        .iter()
        .map(|item| {
            let (object, width) = match item.split_once('%') {
                Some((o, w)) => (o, atoi(w)),
                None => (item.as_str(), 0),
            };
            let def = FIELDS
                .iter()
                .find(|f| f.keys.iter().any(|(k, min)| keyword(object, k, *min)))
                .ok_or_else(|| format!("Unknown field '{object}'"))?;
            let len = if width != 0 { width } else { def.width };
            Ok((
                TableField {
                    name: def.name.to_string(),
                    len,
                },
                def,
            ))
        })
        .collect()
}

fn wanted(list: &[String], item: &str) -> bool {
    list.is_empty() || list.iter().any(|l| l == item)
}

/// Each cluster the listing is about, by name (Slurm's order), with its associations:
/// this cluster (`local`) as its controller reports it, the others as accounting keeps
/// them (no controller: port 0).
pub fn cluster_views(
    show: &Show,
    db: &Associations,
    local: &ClusterInfo,
) -> Vec<(ClusterInfo, Associations)> {
    let f = &show.filters;
    let mut names: Vec<&str> = db.cluster_names(&local.name);
    names.sort_unstable();
    // Cluster names match in any case: Slurm keeps them in lower case.
    let named = |list: &[String], n: &str| {
        list.is_empty() || list.iter().any(|l| l.eq_ignore_ascii_case(n))
    };
    names
        .into_iter()
        .filter(|n| named(&f.clusters, n))
        .filter(|n| show.what != Listing::Cluster || named(&f.names, n))
        .filter_map(|n| {
            let info = if n == local.name {
                local.clone()
            } else {
                ClusterInfo {
                    name: n.to_string(),
                    host: String::new(),
                    port: "0".into(),
                }
            };
            Some((info, db.of_cluster(n, &local.name)?))
        })
        .collect()
}

/// The rows of a listing, in Slurm's order: cluster by cluster for associations, name
/// by name for users and accounts with theirs.
fn rows<'a>(show: &Show, views: &'a [(ClusterInfo, Associations)]) -> Vec<Row<'a>> {
    let f = &show.filters;
    let mut out = Vec::new();
    let row = |view: &'a (ClusterInfo, Associations),
               account: Option<&'a Account>,
               user: Option<&'a str>,
               qos: Option<&'a Qos>| Row {
        kind: show.what,
        db: &view.1,
        cluster: &view.0,
        account,
        user,
        qos,
    };
    let accounts: Vec<String> = f.names.iter().chain(&f.accounts).cloned().collect();
    // Records shared by every cluster (QOS, users, accounts without their
    // associations) are listed once.
    let mut listed: BTreeSet<&str> = BTreeSet::new();
    for view in views {
        let db = &view.1;
        match show.what {
            Listing::Account => {
                for a in db.accounts.values() {
                    let parent = a.parent.as_deref().unwrap_or("");
                    if !wanted(&accounts, &a.name) || !wanted(&f.parents, parent) {
                        continue;
                    }
                    if !show.with_assoc {
                        if listed.insert(&a.name) {
                            out.push(row(view, Some(a), None, None));
                        }
                        continue;
                    }
                    if f.users.is_empty() {
                        out.push(row(view, Some(a), None, None));
                    }
                    for u in a.users.iter().filter(|u| wanted(&f.users, u)) {
                        out.push(row(view, Some(a), Some(u.as_str()), None));
                    }
                }
            }
            Listing::User => {
                let users: Vec<String> = f.names.iter().chain(&f.users).cloned().collect();
                for name in db.users.keys().filter(|u| wanted(&users, u)) {
                    let assocs: Vec<&Account> = db
                        .accounts
                        .values()
                        .filter(|a| a.users.contains(name) && wanted(&f.accounts, &a.name))
                        .collect();
                    if !f.accounts.is_empty() && assocs.is_empty() {
                        continue;
                    }
                    if show.with_assoc {
                        for a in assocs {
                            out.push(row(view, Some(a), Some(name.as_str()), None));
                        }
                    } else if listed.insert(name) {
                        out.push(row(view, None, Some(name.as_str()), None));
                    }
                }
            }
            Listing::Qos => {
                for q in db.qos.values().filter(|q| wanted(&f.names, &q.name)) {
                    if listed.insert(&q.name) {
                        out.push(row(view, None, None, Some(q)));
                    }
                }
            }
            Listing::Assoc => {
                // Depth first from root: an account, its users, then its sub-accounts.
                let mut todo = vec![ROOT.to_string()];
                let mut seen = 0;
                while let Some(name) = todo.pop() {
                    let Some(a) = db.accounts.get(&name) else {
                        continue;
                    };
                    seen += 1;
                    if seen > db.accounts.len() {
                        break;
                    }
                    todo.extend(a.children.iter().rev().cloned());
                    if !wanted(&accounts, &a.name) {
                        continue;
                    }
                    let parent = a.parent.as_deref().unwrap_or("");
                    if f.users.is_empty() && wanted(&f.parents, parent) {
                        out.push(row(view, Some(a), None, None));
                    }
                    if !f.parents.is_empty() {
                        continue;
                    }
                    for u in a.users.iter().filter(|u| wanted(&f.users, u)) {
                        out.push(row(view, Some(a), Some(u.as_str()), None));
                    }
                }
            }
            Listing::Cluster => out.push(row(view, db.accounts.get(ROOT), None, None)),
        }
    }
    // Slurm lists a user's (an account's) associations together, cluster by cluster:
    // a stable sort keeps the clusters' order under each name.
    if show.with_assoc {
        match show.what {
            Listing::User => out.sort_by_key(|r| r.user),
            Listing::Account => out.sort_by_key(|r| r.account.map(|a| a.name.as_str())),
            _ => {}
        }
    }
    out
}

/// The text `sacctmgr show ...` prints for the associations accounting keeps, this
/// cluster being `cluster`.
pub fn render_show(
    show: &Show,
    db: &Associations,
    cluster: &ClusterInfo,
    opts: &Options,
) -> Result<String, String> {
    let fields = fields(show)?;
    let views = cluster_views(show, db, cluster);
    let cells: Vec<Vec<String>> = rows(show, &views)
        .iter()
        .map(|r| fields.iter().map(|(_, def)| (def.value)(r)).collect())
        .collect();
    let table: Vec<TableField> = fields.into_iter().map(|(f, _)| f).collect();
    Ok(format::print_fields(
        &table,
        &cells,
        !opts.noheader,
        opts.parsable.unwrap_or(Parsable::No),
        "|",
    ))
}

// ---------------------------------------------------------------------- summaries

/// The order sacctmgr prints limits in (`sacctmgr_print_assoc_limits`).
const LIMIT_ORDER: [LimitKind; 15] = [
    LimitKind::GrpJobs,
    LimitKind::GrpSubmitJobs,
    LimitKind::GrpTres,
    LimitKind::GrpTresMins,
    LimitKind::GrpTresRunMins,
    LimitKind::GrpWall,
    LimitKind::MaxJobs,
    LimitKind::MaxSubmitJobs,
    LimitKind::MaxTres,
    LimitKind::MaxTresPerUser,
    LimitKind::MaxTresMins,
    LimitKind::MaxWall,
    LimitKind::GuaranteedTres,
    LimitKind::BorrowingLimit,
    LimitKind::LendingLimit,
];

/// The limits a change sets, by kind: a later word wins, TRES items merge by name.
fn limit_texts(s: &Settings) -> Vec<(LimitKind, String)> {
    let mut merged: BTreeMap<LimitKind, LimitValue> = BTreeMap::new();
    for (kind, v) in &s.limits {
        match (merged.get_mut(kind), v) {
            (Some(LimitValue::Tres(have)), LimitValue::Tres(new)) => {
                for (name, count) in new {
                    have.retain(|(n, _)| n != name);
                    have.push((name.clone(), *count));
                }
            }
            _ => {
                merged.insert(*kind, v.clone());
            }
        }
    }
    LIMIT_ORDER
        .iter()
        .filter_map(|kind| merged.get(kind).map(|v| (*kind, limit_text(*kind, v))))
        .collect()
}

/// A limit's new value as sacctmgr prints it; a cleared one (`-1`) is `NONE`.
fn limit_text(kind: LimitKind, v: &LimitValue) -> String {
    match v {
        LimitValue::Count(None) => "NONE".into(),
        LimitValue::Count(Some(m)) if kind.is_time() => units::format_elapsed(u64::from(*m) * 60),
        LimitValue::Count(Some(n)) => n.to_string(),
        LimitValue::Tres(items) => {
            let mut items = items.clone();
            items.sort_by(|a, b| tres::display_order(&a.0).cmp(&tres::display_order(&b.0)));
            items
                .iter()
                .map(|(name, count)| match count {
                    Some(n) => tres::format_counts(&tres::TresCounts::from([(name.clone(), *n)])),
                    None => format!("{name}=NONE"),
                })
                .collect::<Vec<_>>()
                .join(",")
        }
    }
}

fn edit_text(edit: &ListEdit<String>) -> String {
    let (mark, items) = match edit {
        ListEdit::Set(v) => ("", v),
        ListEdit::Add(v) => ("+", v),
        ListEdit::Remove(v) => ("-", v),
    };
    items
        .iter()
        .map(|i| format!("{mark}{i}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// An association setting line: `  MaxJobs       = 2`.
fn assoc_line(out: &mut String, label: &str, value: &str) {
    out.push_str(&format!("  {label:<14}= {value}\n"));
}

/// What a change sets on associations, as `sacctmgr_print_assoc_limits` prints it.
fn assoc_settings(s: &Settings, parent: Option<&str>) -> String {
    let mut out = String::new();
    if let Some(f) = s.fairshare {
        assoc_line(&mut out, "Fairshare", &f.to_string());
    }
    for (kind, text) in limit_texts(s) {
        assoc_line(&mut out, kind.name(), &text);
    }
    if let Some(p) = parent {
        assoc_line(&mut out, "Parent", p);
    }
    if let Some(p) = s.priority {
        assoc_line(&mut out, "Priority", &p.to_string());
    }
    if let Some(q) = &s.qos {
        assoc_line(&mut out, "QOS", &edit_text(q));
    }
    if let Some(d) = &s.default_qos {
        assoc_line(&mut out, "DefQOS", d);
    }
    out
}

/// The name sacctmgr gives a QOS limit in a summary.
fn qos_label(kind: LimitKind) -> &'static str {
    match kind {
        LimitKind::MaxJobs => "MaxJobsPerUser",
        LimitKind::MaxSubmitJobs => "MaxSubmitJobsPerUser",
        LimitKind::MaxTres => "MaxTRESPerJob",
        k => k.name(),
    }
}

/// What a change sets on a QOS, as `sacctmgr_print_qos_limits` prints it.
fn qos_settings(s: &Settings) -> String {
    let mut out = String::new();
    let line = |out: &mut String, label: &str, value: &str| {
        out.push_str(&format!("  {label:<25}= {value}\n"))
    };
    if let Some(limit) = s.gpu_idle_limit_s {
        let text = limit.map_or("-1".to_string(), |l| units::format_elapsed(u64::from(l)));
        line(&mut out, "GpuIdleLimit", &text);
    }
    if let Some(a) = s.gpu_idle_action {
        line(&mut out, "GpuIdleAction", a.word());
    }
    if let Some(g) = s.gpu_idle_grace_s {
        line(
            &mut out,
            "GpuIdleGrace",
            &units::format_elapsed(u64::from(g)),
        );
    }
    if let Some(g) = s.grace_time_s {
        line(&mut out, "GraceTime", &g.to_string());
    }
    for (kind, text) in limit_texts(s) {
        if kind == LimitKind::MaxJobs {
            // Slurm prints this one without the padding.
            out.push_str(&format!("  MaxJobsPerUser = {text}\n"));
        } else {
            line(&mut out, qos_label(kind), &text);
        }
    }
    if let Some(p) = &s.preempt {
        line(&mut out, "Preempt", &edit_text(p));
    }
    if let Some(Some(m)) = s.preempt_mode {
        line(&mut out, "PreemptMode", m.name());
    }
    if let Some(p) = s.priority {
        line(&mut out, "Priority", &p.to_string());
    }
    if let Some(f) = s.usage_factor {
        line(&mut out, "UsageFactor", &format!("{f:.4}"));
    }
    out
}

fn list_lines(out: &mut String, title: &str, items: &[String]) {
    out.push_str(title);
    for i in items {
        out.push_str(&format!("  {i}\n"));
    }
}

/// `  C = ref        A = ml                   U = alice    ` as the controller's
/// database words a modified association.
fn modified_assoc(cluster: &str, account: &str, user: &str) -> String {
    let mut s = format!("  C = {cluster:<10} A = {account:<20}");
    if !user.is_empty() {
        s.push_str(&format!(" U = {user:<9}"));
    }
    s.push('\n');
    s
}

/// What sacctmgr prints when a change matched nothing.
pub fn nothing(action: Action) -> &'static str {
    match action {
        Action::Add => " Nothing new added.\n",
        Action::Modify => " Nothing modified\n",
        Action::Delete => " Nothing deleted\n",
    }
}

/// The summary sacctmgr prints of a change the controller made (or would make);
/// [`nothing`] when `changed` is empty.
pub fn summary(change: &AssocChange, changed: &Changed) -> String {
    if change.entity == Entity::Cluster {
        return cluster_summary(change, changed);
    }
    if changed.is_empty() {
        return nothing(change.action).to_string();
    }
    let s = &change.settings;
    let mut out = String::new();
    match (change.action, change.entity) {
        (Action::Add, Entity::Account) => {
            if !changed.names.is_empty() {
                list_lines(&mut out, " Adding Account(s)\n", &changed.names);
                out.push_str(" Settings\n");
                let descr = s.description.as_deref().unwrap_or("Account Name");
                out.push_str(&format!("  Description     = {descr}\n"));
                let org = s.organization.as_deref().unwrap_or("Parent/Account Name");
                out.push_str(&format!("  Organization    = {org}\n"));
            }
            out.push_str(" Associations\n");
            for a in &changed.assocs {
                out.push_str(&format!(
                    "  A = {:<10.10} C = {:<10.10}\n",
                    a.account, a.cluster
                ));
            }
            if *s != Settings::default() {
                out.push_str(" Settings\n");
                let parent = s.parent.as_deref().unwrap_or(ROOT);
                out.push_str(&assoc_settings(s, Some(parent)));
            }
        }
        (Action::Add, Entity::User) => {
            if !changed.names.is_empty() {
                list_lines(&mut out, " Adding User(s)\n", &changed.names);
                if s.default_account.is_some() || s.admin_level.is_some() {
                    out.push_str(" Settings =\n");
                }
                if let Some(d) = &s.default_account {
                    out.push_str(&format!("  Default Account = {d}\n"));
                }
                if let Some(level) = s.admin_level {
                    out.push_str(&format!(
                        "  Admin Level     = {}\n",
                        admin_level_name(level)
                    ));
                }
            }
            if !changed.assocs.is_empty() {
                out.push_str(" Associations =\n");
                for a in &changed.assocs {
                    out.push_str(&format!(
                        "  U = {:<9.9} A = {:<10.10} C = {:<10.10}\n",
                        a.user, a.account, a.cluster
                    ));
                }
            }
            let limits = assoc_settings(s, None);
            if !limits.is_empty() {
                out.push_str(" Non Default Settings\n");
                out.push_str(&limits);
            }
        }
        (Action::Add, Entity::Qos) => {
            list_lines(&mut out, " Adding QOS(s)\n", &changed.names);
            out.push_str(" Settings\n");
            let descr = s
                .description
                .clone()
                .or_else(|| changed.names.last().cloned())
                .unwrap_or_default();
            out.push_str(&format!("  Description    = {descr}\n"));
            out.push_str(&qos_settings(s));
        }
        (Action::Add, Entity::Coordinator) => {
            list_lines(&mut out, " Adding Coordinator User(s)\n", &changed.names);
            let mut accounts: Vec<String> = Vec::new();
            for a in &changed.assocs {
                if !accounts.contains(&a.account) {
                    accounts.push(a.account.clone());
                }
            }
            list_lines(&mut out, " To Account(s) and all sub-accounts\n", &accounts);
        }
        (Action::Modify, Entity::Account) => {
            let record = s.description.is_some() || s.organization.is_some();
            let assoc = Settings {
                description: None,
                organization: None,
                ..s.clone()
            } != Settings::default();
            if (record || !assoc) && !changed.names.is_empty() {
                list_lines(&mut out, " Modified accounts...\n", &changed.names);
            }
            if assoc && !changed.assocs.is_empty() {
                out.push_str(" Modified account associations...\n");
                for a in &changed.assocs {
                    out.push_str(&modified_assoc(&a.cluster, &a.account, &a.user));
                }
            }
        }
        (Action::Modify, Entity::User) => {
            if !changed.names.is_empty() {
                list_lines(&mut out, " Modified users...\n", &changed.names);
            }
            if !changed.assocs.is_empty() {
                out.push_str(" Modified user associations...\n");
                for a in &changed.assocs {
                    out.push_str(&modified_assoc(&a.cluster, &a.account, &a.user));
                }
            }
        }
        (Action::Modify, _) => list_lines(&mut out, " Modified qos...\n", &changed.names),
        (Action::Delete, Entity::Account) => {
            list_lines(&mut out, " Deleting accounts...\n", &changed.names)
        }
        (Action::Delete, Entity::User) => {
            if changed.assocs.is_empty() {
                list_lines(&mut out, " Deleting users...\n", &changed.names);
            } else {
                out.push_str(" Deleting user associations...\n");
                for a in &changed.assocs {
                    out.push_str(&format!(
                        "  C = {:<10} A = {:<10} U = {:<9}\n",
                        a.cluster, a.account, a.user
                    ));
                }
                if !changed.users_removed.is_empty() {
                    list_lines(
                        &mut out,
                        " Deleting users (No Associations)...\n",
                        &changed.users_removed,
                    );
                }
            }
        }
        (Action::Delete, Entity::Qos) => {
            list_lines(&mut out, " Deleting QOS(s)...\n", &changed.names)
        }
        (Action::Delete, Entity::Coordinator) => {
            list_lines(&mut out, " Removed Coordinator User(s)\n", &changed.names)
        }
        (_, Entity::Cluster) => unreachable!("clusters are summarized above"),
    }
    out
}

/// What sacctmgr prints of a change to clusters: each existing one named when adding,
/// the clusters added, modified or deleted and the root association's settings.
fn cluster_summary(change: &AssocChange, changed: &Changed) -> String {
    let mut out = String::new();
    let s = &change.settings;
    if change.action == Action::Add {
        for name in change.conditions.names.iter() {
            if !changed.names.contains(name) {
                out.push_str(&format!(
                    " This cluster {name} already exists.  Not adding.\n"
                ));
            }
        }
    }
    if changed.is_empty() {
        out.push_str(nothing(change.action));
        return out;
    }
    match change.action {
        Action::Add => {
            out.push_str(" Adding Cluster(s)\n");
            for name in &changed.names {
                out.push_str(&format!("  Name          = {name}\n"));
            }
            let settings = assoc_settings(s, None);
            if !settings.is_empty() {
                out.push_str(" Setting\n  Default Limits:\n");
                out.push_str(&settings);
            }
        }
        Action::Modify => {
            out.push_str(" Setting\n  Default Limits:\n");
            out.push_str(&assoc_settings(s, None));
            list_lines(
                &mut out,
                " Modified cluster defaults for associations...\n",
                &changed.names,
            );
        }
        Action::Delete => list_lines(&mut out, " Deleting clusters...\n", &changed.names),
    }
    out
}

// ------------------------------------------------------------------------ commit

/// The answer to Slurm's question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Line(String),
    /// Standard input ended.
    Closed,
    /// No answer in 30 seconds.
    TimedOut,
}

/// Slurm's question before a change is committed.
pub const QUESTION: &str =
    "Would you like to commit changes? (You have 30 seconds to decide)\n(N/y): ";

/// Makes a change as sacctmgr does, step by step (`AssocChange::steps`): without
/// `immediate`, a dry run of each step (`send(step, true)`) and its summary, the
/// question, and the steps themselves (`send(step, false)`) when the answer starts with
/// `y`; with it, each step and its summary as it is made. Writes to `out` and gives
/// the exit status; a refusal comes back as the `Exit` to print.
pub fn commit(
    change: &AssocChange,
    immediate: bool,
    send: &mut dyn FnMut(&AssocChange, bool) -> Result<Changed, Exit>,
    ask: &mut dyn FnMut() -> Answer,
    out: &mut dyn Write,
) -> Result<u8, Exit> {
    let write = |out: &mut dyn Write, text: &str| {
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    };
    let steps = change.steps();
    let mut nothing = true;
    for (i, step) in steps.iter().enumerate() {
        let changed = send(step, !immediate)?;
        // A step that changed nothing says so only when none did.
        let last = i + 1 == steps.len();
        if !changed.is_empty() || (last && nothing) {
            write(out, &summary(step, &changed));
        }
        nothing &= changed.is_empty();
    }
    if nothing {
        return Ok(1);
    }
    if immediate {
        return Ok(0);
    }
    write(out, QUESTION);
    let yes = match ask() {
        Answer::Line(line) => {
            write(out, "\n");
            line.starts_with(['y', 'Y'])
        }
        Answer::Closed => {
            write(out, "\n");
            false
        }
        Answer::TimedOut => {
            write(out, "timeout\n");
            false
        }
    };
    if yes {
        for step in &steps {
            send(step, false)?;
        }
    } else {
        write(out, " Changes Discarded\n");
    }
    Ok(0)
}

/// A refused call as sacctmgr words it.
fn refusal(s: &tonic::Status) -> Exit {
    match s.code() {
        tonic::Code::PermissionDenied => Exit::raw(NO_PRIVILEGE),
        tonic::Code::Unavailable => Exit::error("sacctmgr", calls::status_text(s)),
        _ => Exit::raw(slurm_line(&calls::status_text(s))),
    }
}

/// The answer on standard input, or none within 30 seconds. From a terminal, one key
/// answers, as Slurm's sacctmgr takes the terminal out of line mode while it asks:
/// `y`, `n` or Enter, any other key asked again; otherwise a line.
fn ask_stdin() -> Answer {
    use nix::sys::termios::{self, LocalFlags, SetArg, SpecialCharacterIndices};
    let stdin = std::io::stdin();
    let saved = termios::tcgetattr(&stdin).ok();
    if let Some(mut keys) = saved.clone() {
        keys.local_flags.remove(LocalFlags::ICANON);
        keys.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
        let _ = termios::tcsetattr(&stdin, SetArg::TCSANOW, &keys);
    }
    let by_key = saved.is_some();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let answer = if by_key { read_key() } else { read_line() };
        let _ = tx.send(answer);
    });
    let answer = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .unwrap_or(Answer::TimedOut);
    if let Some(t) = saved {
        let _ = termios::tcsetattr(&stdin, SetArg::TCSANOW, &t);
    }
    answer
}

fn read_line() -> Answer {
    let mut line = String::new();
    match std::io::stdin().read_line(&mut line) {
        Ok(0) | Err(_) => Answer::Closed,
        Ok(_) => Answer::Line(line),
    }
}

/// Keys until `y`, `n` or Enter, as Slurm's `commit_check` reads them.
fn read_key() -> Answer {
    use std::io::Read;
    let mut key = [0u8; 1];
    loop {
        match std::io::stdin().read(&mut key) {
            Ok(0) | Err(_) => return Answer::Closed,
            Ok(_) if matches!(key[0], b'y' | b'Y' | b'n' | b'N' | b'\n') => {
                return Answer::Line(char::from(key[0]).to_string());
            }
            Ok(_) => {
                let mut out = std::io::stdout();
                let _ = out.write_all(b"\nY or N please\n(N/y): ");
                let _ = out.flush();
            }
        }
    }
}

fn run_change(rt: &tokio::runtime::Runtime, change: &AssocChange, opts: &Options) -> ExitCode {
    let mut send = |change: &AssocChange, dry_run: bool| -> Result<Changed, Exit> {
        let req = proto::convert::assoc_change_to_wire(change, dry_run);
        rt.block_on(async {
            let mut c = calls::connect()
                .await
                .map_err(|e| Exit::error("sacctmgr", e))?;
            c.change_accounting(req)
                .await
                .map(|r| proto::convert::changed_from_wire(r.into_inner()))
                .map_err(|s| refusal(&s))
        })
    };
    let mut stdout = std::io::stdout();
    match commit(
        change,
        opts.immediate,
        &mut send,
        &mut ask_stdin,
        &mut stdout,
    ) {
        Ok(code) => ExitCode::from(code),
        Err(e) => e.finish(),
    }
}

pub fn run(args: &[String]) -> ExitCode {
    let (opts, command) = match parse_args(args) {
        Ok(parsed) => parsed,
        Err(early) => return early.finish(),
    };
    let rt = client::runtime();
    match command {
        Command::Change(change) => run_change(&rt, &change, &opts),
        Command::ModifyJob { job_ids, changes } => run_modify_job(&rt, job_ids, &changes, &opts),
        Command::ShowConfig => {
            let reply = match calls::query(&rt, "sacctmgr", |mut c| async move {
                c.get_config(proto::v1::GetConfigRequest {})
                    .await
                    .map(|r| r.into_inner())
            }) {
                Ok(r) => r,
                Err(code) => return code,
            };
            let addr = client::load_config()
                .map(|c| client::ctld_addr(&c))
                .unwrap_or_default();
            let cluster = ClusterInfo::new(&reply.cluster_name, &addr);
            let slurm_conf = args::env_var("SLURM_CONF");
            print!(
                "{}",
                render_config(
                    &reply.entries,
                    &cluster,
                    slurm_conf.as_deref(),
                    &times::format_time(times::now())
                )
            );
            ExitCode::SUCCESS
        }
        Command::Show(show) => {
            let reply = match calls::query(&rt, "sacctmgr", |mut c| async move {
                c.show_accounting(proto::v1::ShowAccountingRequest {})
                    .await
                    .map(|r| r.into_inner())
            }) {
                Ok(r) => r,
                Err(code) => return code,
            };
            let addr = client::load_config()
                .map(|c| client::ctld_addr(&c))
                .unwrap_or_default();
            let cluster = ClusterInfo::new(&reply.cluster_name, &addr);
            let db = match proto::convert::associations_from_wire(reply) {
                Ok(db) => db,
                Err(e) => return Exit::error("sacctmgr", e).finish(),
            };
            match render_show(&show, &db, &cluster, &opts) {
                Ok(text) => {
                    print!("{text}");
                    ExitCode::SUCCESS
                }
                Err(e) => Exit::raw(e).finish(),
            }
        }
    }
}

/// `show configuration`, laid out as Slurm's sacctmgr prints it: the accounting keys of
/// the controller's config, then the accounting store's own section. The store is the
/// controller's: its host and port are the controller's.
pub fn render_config(
    entries: &[proto::v1::ConfigEntry],
    cluster: &ClusterInfo,
    slurm_conf: Option<&str>,
    now: &str,
) -> String {
    let value = |key: &str| {
        entries
            .iter()
            .find(|e| e.key == key)
            .map_or("(null)".to_string(), |e| e.value.clone())
    };
    let port = if cluster.port.is_empty() {
        "(null)".to_string()
    } else {
        cluster.port.clone()
    };
    let mut out = format!("Configuration data as of {now}\n");
    let lines = [
        ("AccountingStorageBackupHost", "(null)".to_string()),
        ("AccountingStorageHost", cluster.host.clone()),
        ("AccountingStoragePort", port.clone()),
        ("AccountingStorageType", value("AccountingStorageType")),
        ("AuthType", value("AuthType")),
        ("PrivateData", value("PrivateData")),
        ("SLURM_CONF", slurm_conf.unwrap_or("(null)").to_string()),
        ("SLURM_VERSION", value("SLURM_VERSION")),
        ("TrackWCKey", "No".to_string()),
    ];
    for (key, v) in lines {
        out.push_str(&format!("{key:<22} = {v}\n"));
    }
    out.push_str("\nSlurmDBD configuration:\n");
    let dbd = [
        ("DbdHost", cluster.host.clone()),
        ("DbdPort", port),
        ("SLURMDBD_CONF", "(null)".to_string()),
        ("StorageType", "accounting_storage/drover".to_string()),
    ];
    for (key, v) in dbd {
        out.push_str(&format!("{key:<22} = {v}\n"));
    }
    out
}

/// The help `-h`, `--help`, `--usage` and `help` print: Slurm's first lines, then what
/// this sacctmgr takes.
const HELP: &str = "\
sacctmgr [<OPTION>] [<COMMAND>]
    Valid <OPTION> values are:
     -h or --help: equivalent to \"help\" command
     -i or --immediate: commit changes immediately without asking for
                        confirmation
     -n or --noheader: no header will be added to the beginning of output
     -p or --parsable: output will be '|' delimited with a '|' at the end
     -P or --parsable2: output will be '|' delimited without a '|' at the end
     -Q or --quiet: equivalent to \"quiet\" command
     -r or --readonly: equivalent to \"readonly\" command
     -s or --associations: equivalent to \"associations\" command
     -v or --verbose: equivalent to \"verbose\" command
     -V or --version: equivalent to \"version\" command

  Valid <COMMAND> values are:
     add <ENTITY> <SPECS>     add entity
     delete <ENTITY> where <SPECS>
                              delete the specified entity(s)
     help                     show this help text
     list <ENTITY> [<SPECS>]  display info of identified entity, default
                              is display all.
     modify <ENTITY> where <SPECS> set <SPECS>
                              modify entity
     show                     same as list
     version                  display tool version number.

  <ENTITY> may be \"account\", \"association\", \"cluster\", \"configuration\",
                  \"coordinator\", \"qos\" or \"user\"

  <SPECS> are different for each command entity pair.
  list account       - Descriptions=, Format=, Names=, Organizations=,
                       Parent=, Users=, WithAssoc, WithCoordinators
  list associations  - Accounts=, Clusters=, Format=, Parent=, Users=
  list cluster       - Format=, Names=
  add cluster        - Fairshare=, the limits of add account, Names=,
                       QosLevel=, DefaultQOS= (another cluster of the
                       site: its associations are kept, not scheduled)
  modify cluster     - (set options) the add options but Names=; (where
                       options) Names=
  delete cluster     - Names= (not the controller's own)
  list configuration - (no options): the accounting settings
  list qos           - Format=, Names=
  list user          - Accounts=, Format=, Names=, WithAssoc,
                       WithCoordinators

  add account        - Clusters=, DefaultQOS=, Description=, Fairshare=,
                       GrpJobs=, GrpSubmitJobs=, GrpTRES=, GrpTRESMins=,
                       GrpTRESRunMins=, GrpWall=, MaxJobs=, MaxSubmitJobs=,
                       MaxTRES=, MaxTRESMins=, MaxTRESPerUser=, MaxWall=,
                       Names=, Organization=, Parent=, Priority=, QosLevel=
  modify account     - (set options) the add options but Names= and
                       Clusters=; (where options) Names=, Clusters=
  delete account     - Names=
  add user           - Accounts=, AdminLevel=, DefaultAccount=, DefaultQOS=,
                       Fairshare=, the limits of add account, Names=,
                       Priority=, QosLevel=
  modify user        - (set options) AdminLevel=, DefaultAccount=,
                       DefaultQOS=, Fairshare=, the limits, Priority=,
                       QosLevel=; (where options) Accounts=, Names=
  delete user        - Accounts=, Names=
  add qos            - Description=, GraceTime=, GrpJobs=, GrpSubmitJobs=,
                       GrpTRES=, GrpTRESMins=, GrpTRESRunMins=, GrpWall=,
                       MaxJobsPerUser=, MaxSubmitJobsPerUser=,
                       MaxTRESMins=, MaxTRESPerJob=, MaxTRESPerUser=,
                       MaxWall=, Names=,
                       Preempt=, PreemptMode=, Priority=, UsageFactor=
  modify qos         - (set options) the add options but Names=; (where
                       options) Names=
  delete qos         - Names=
  add coordinator    - Accounts=, Names=
  delete coordinator - Accounts=, Names=

  A limit of -1 clears it. All commands are case insensitive.
";

#[cfg(test)]
mod tests {
    use super::*;
    use model::assoc_change::Context;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    const CONFIG: &str = r#"
[[qos]]
name = "high"
priority = 10
max_jobs_per_user = 2
max_tres_per_user = "gres/gpu=4"
preempt = ["normal"]
preempt_mode = "requeue"
grace_time = 120
[[accounts]]
name = "ml"
shares = 3
users = ["alice", "bob"]
max_jobs = 4
grp_tres = "cpu=8,gres/gpu=4"
coordinators = ["bob"]
[[accounts]]
name = "vision"
parent = "ml"
users = ["alice"]
max_wall = "1-0"
[[accounts]]
name = "physics"
users = ["carol"]
qos = ["normal", "high"]
default_qos = "high"
"#;

    fn db() -> Associations {
        Associations::from_config(&model::Config::parse(CONFIG, "t").unwrap())
    }

    fn cluster() -> ClusterInfo {
        ClusterInfo::new("ref", "10.0.0.1:6917")
    }

    fn show(args: &[&str]) -> Result<String, String> {
        let (opts, cmd) = parse_args(&s(args)).map_err(|e| e.stderr)?;
        let Command::Show(show) = cmd else {
            panic!("not a show: {args:?}");
        };
        render_show(&show, &db(), &cluster(), &opts)
    }

    fn change(words: &[&str]) -> AssocChange {
        match parse_args(&s(words)).unwrap().1 {
            Command::Change(c) => *c,
            other => panic!("not a change: {other:?}"),
        }
    }

    /// The change the words ask for and what it does to the fixture.
    fn applied(words: &[&str]) -> (AssocChange, Changed) {
        let c = change(words);
        let (busy_assoc, busy_qos) = (|_: &str, _: &str| false, |_: &str| false);
        let ctx = Context {
            cluster: "ref",
            busy_assoc: &busy_assoc,
            busy_qos: &busy_qos,
        };
        let (_, changed) = model::assoc_change::apply(&db(), &c, &ctx).unwrap();
        (c, changed)
    }

    fn summarized(words: &[&str]) -> String {
        let (c, changed) = applied(words);
        summary(&c, &changed)
    }

    fn error(args: &[&str]) -> String {
        parse_args(&s(args)).unwrap_err().stderr
    }

    #[test]
    fn show_account_as_a_table_and_parsable() {
        assert_eq!(
            show(&["show", "account"]).unwrap(),
            "   Account                Descr                  Org \n\
             ---------- -------------------- -------------------- \n\
             \x20       ml                   ml                   ml \n\
             \x20  physics              physics              physics \n\
             \x20     root default root account                 root \n\
             \x20   vision               vision                   ml \n"
        );
        assert_eq!(
            show(&["list", "accounts", "-P"]).unwrap(),
            "Account|Descr|Org\nml|ml|ml\nphysics|physics|physics\n\
             root|default root account|root\nvision|vision|ml\n"
        );
        assert_eq!(
            show(&["-n", "-p", "show", "account", "where", "name=ml,Vision"]).unwrap(),
            "ml|ml|ml|\nvision|vision|ml|\n"
        );
        let with = show(&["show", "account", "withassoc", "withcoord"]).unwrap();
        let lines: Vec<&str> = with.lines().collect();
        assert_eq!(
            lines[0],
            "   Account                Descr                  Org    Cluster   Par Name       \
             User     Share   Priority GrpJobs GrpNodes  GrpCPUs  GrpMem GrpSubmit     GrpWall  \
             GrpCPUMins MaxJobs MaxNodes  MaxCPUs MaxSubmit     MaxWall  MaxCPUMins                  \
             QOS   Def QOS       Coord Accounts "
        );
        // One row per association: the account's, then its users'.
        assert_eq!(lines.len(), 2 + 9);
        let parsable = show(&[
            "show",
            "account",
            "ml",
            "-s",
            "-P",
            "-n",
            "format=acc,parentn,user,share,grpcpus,maxj,qos,coord",
        ])
        .unwrap();
        assert_eq!(
            parsable,
            "ml|root||3|8|4|normal|bob\nml||alice|1||4|normal|bob\nml||bob|1||4|normal|bob\n"
        );
        assert_eq!(
            show(&["show", "account", "parent=ml", "-nP", "format=account"]).unwrap(),
            "vision\n"
        );
    }

    #[test]
    fn show_user_cuts_the_admin_level_and_lists_associations() {
        assert_eq!(
            show(&["show", "user"]).unwrap(),
            "      User   Def Acct     Admin \n\
             ---------- ---------- --------- \n\
             \x20    alice         ml      None \n\
             \x20      bob         ml      None \n\
             \x20    carol    physics      None \n\
             \x20     root       root Administ+ \n"
        );
        let with = show(&["show", "user", "withassoc", "alice"]).unwrap();
        assert_eq!(
            with,
            "      User   Def Acct     Admin    Cluster    Account  Partition     Share   \
             Priority MaxJobs MaxNodes  MaxCPUs MaxSubmit     MaxWall  MaxCPUMins                  \
             QOS   Def QOS \n\
             ---------- ---------- --------- ---------- ---------- ---------- --------- \
             ---------- ------- -------- -------- --------- ----------- ----------- \
             -------------------- --------- \n\
             \x20    alice         ml      None        ref         ml                    1            \
             \x20     4                                                                   normal           \n\
             \x20    alice         ml      None        ref     vision                    1            \
             \x20     4                              1-00:00:00                           normal           \n"
        );
        assert_eq!(
            show(&["show", "user", "account=physics", "withcoord", "-nP"]).unwrap(),
            "carol|physics|None|\n"
        );
        assert_eq!(
            show(&["show", "user", "bob", "withcoord", "-nP"]).unwrap(),
            "bob|ml|None|ml,vision\n",
            "a coordinator coordinates the sub-accounts too"
        );
    }

    #[test]
    fn show_assoc_goes_depth_first_with_inherited_limits() {
        let table = show(&["show", "assoc"]).unwrap();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0],
            "   Cluster    Account       User  Partition     Share   Priority GrpJobs       \
             GrpTRES GrpSubmit     GrpWall   GrpTRESMins MaxJobs       MaxTRES MaxTRESPerNode \
             MaxSubmit     MaxWall   MaxTRESMins                  QOS   Def QOS GrpTRESRunMin "
        );
        let cols = [
            "ref", "ml", "alice", "", "1", "", "", "", "", "", "", "4", "", "", "", "", "",
            "normal", "", "",
        ];
        let widths = [
            10, 10, 10, 10, 9, 10, 7, 13, 9, 11, 13, 7, 13, 14, 9, 11, 13, 20, 9, 13,
        ];
        let want: String = cols
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:>w$} "))
            .collect();
        assert_eq!(lines[5], want);
        assert!(lines[4].contains(" cpu=8,gres/g+ "), "{}", lines[3]);
        assert_eq!(
            show(&[
                "show",
                "assoc",
                "-nP",
                "format=account,user,share,grptres,maxjobs,maxwall,qos,defqos"
            ])
            .unwrap(),
            "root||1||||normal|\n\
             root|root|1||||normal|\n\
             ml||3|cpu=8,gres/gpu=4|4||normal|\n\
             ml|alice|1||4||normal|\n\
             ml|bob|1||4||normal|\n\
             vision||1||4|1-00:00:00|normal|\n\
             vision|alice|1||4|1-00:00:00|normal|\n\
             physics||1||||high,normal|high\n\
             physics|carol|1||||high,normal|high\n"
        );
        assert_eq!(
            show(&["show", "assoc", "user=alice", "-nP", "format=account,user"]).unwrap(),
            "ml|alice\nvision|alice\n"
        );
        assert_eq!(show(&["show", "assoc", "cluster=other", "-n"]).unwrap(), "");
    }

    #[test]
    fn time_limits_are_listed_as_slurm_prints_them() {
        let mut db = db();
        let ml = db.accounts.get_mut("ml").unwrap();
        ml.limits.grp_wall_min = Some(45);
        ml.limits.max_tres_mins_per_job = tres::parse_counts("cpu=600,gres/gpu=60").unwrap();
        let words = [
            "show",
            "assoc",
            "account=ml",
            "-nP",
            "format=account,user,grpwall,maxcpumins,maxtresmins",
        ];
        let (opts, cmd) = parse_args(&s(&words)).unwrap();
        let Command::Show(show) = cmd else {
            panic!("not a show");
        };
        // GrpWall is the account's own; MaxTRESMins goes down to its users.
        assert_eq!(
            render_show(&show, &db, &cluster(), &opts).unwrap(),
            "ml||00:45:00|600|cpu=600,gres/gpu=60\n\
             ml|alice||600|cpu=600,gres/gpu=60\n\
             ml|bob||600|cpu=600,gres/gpu=60\n"
        );
        let added = summarized(&["add", "account", "x", "GrpWall=45", "MaxCPUMins=600"]);
        assert!(
            added.ends_with(
                " Settings\n  GrpWall       = 00:45:00\n  MaxTRESMins   = cpu=600\n  \
                 Parent        = root\n"
            ),
            "{added}"
        );
    }

    #[test]
    fn show_qos_and_cluster() {
        let qos = show(&["show", "qos"]).unwrap();
        let lines: Vec<&str> = qos.lines().collect();
        assert_eq!(
            lines[0],
            "      Name   Priority  GraceTime    Preempt   PreemptExemptTime PreemptMode \
             \x20                                  Flags UsageThres UsageFactor       GrpTRES \
             \x20 GrpTRESMins GrpTRESRunMin GrpJobs GrpSubmit     GrpWall       MaxTRES \
             MaxTRESPerNode   MaxTRESMins     MaxWall     MaxTRESPU MaxJobsPU MaxSubmitPU \
             \x20   MaxTRESPA MaxJobsPA MaxSubmitPA       MinTRES "
        );
        assert_eq!(
            show(&["show", "qos", "-P", "-n"]).unwrap(),
            "high|10|00:02:00|normal||requeue|||1.000000|||||||||||gres/gpu=4|2|||||\n\
             normal|0|00:00:00|||cluster|||1.000000|||||||||||||||||\n"
        );
        let cols = [
            "ref", "10.0.0.1", "6917", "9728", "1", "", "", "", "", "", "", "", "normal", "",
        ];
        let widths = [10, 15, 12, 5, 9, 7, 13, 9, 7, 13, 9, 11, 20, 9];
        let row: String = cols
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:>w$} "))
            .collect();
        assert_eq!(
            show(&["show", "cluster"]).unwrap(),
            format!(
                "   Cluster     ControlHost  ControlPort   RPC     Share GrpJobs       GrpTRES \
                 GrpSubmit MaxJobs       MaxTRES MaxSubmit     MaxWall                  QOS   Def QOS \n\
                 ---------- --------------- ------------ ----- --------- ------- ------------- \
                 --------- ------- ------------- --------- ----------- -------------------- --------- \n\
                 {row}\n"
            )
        );
        assert_eq!(show(&["show", "cluster", "other", "-n"]).unwrap(), "");
        // A cluster named in any case.
        let upper = show(&["show", "cluster", "REF", "-n", "-P", "format=cluster"]);
        assert_eq!(upper.unwrap(), "ref\n");
        let upper = show(&["show", "assoc", "cluster=REF", "-n", "-P", "format=cluster"]);
        assert!(upper.unwrap().starts_with("ref\n"));
    }

    #[test]
    fn other_clusters_are_listed_by_name_with_their_associations() {
        let base = db();
        let mut db = base.clone();
        for words in [
            "add cluster c2 GrpJobs=7 fairshare=30",
            "add account nlp cluster=c2 maxjobs=3",
            "add user carol account=nlp cluster=c2",
        ] {
            let c = change(&words.split(' ').collect::<Vec<_>>());
            let ctx = Context {
                cluster: "ref",
                busy_assoc: &|_, _| false,
                busy_qos: &|_| false,
            };
            db = model::assoc_change::apply(&db, &c, &ctx).unwrap().0;
        }
        let render = |args: &[&str]| {
            let (opts, cmd) = parse_args(&s(args)).unwrap();
            let Command::Show(show) = cmd else {
                panic!("not a show")
            };
            render_show(&show, &db, &cluster(), &opts).unwrap()
        };
        assert_eq!(
            render(&[
                "list",
                "cluster",
                "-Pn",
                "format=cluster,controlport,share,grpjobs"
            ]),
            "c2|0|30|7\nref|6917|1|\n"
        );
        assert_eq!(
            render(&[
                "list",
                "assoc",
                "-Pn",
                "format=cluster,account,user,maxjobs",
                "cluster=c2"
            ]),
            "c2|root||\nc2|root|root|\nc2|nlp||3\nc2|nlp|carol|3\n"
        );
        // Records every cluster shares are listed once.
        assert_eq!(
            render(&["list", "user", "-Pn", "format=user", "carol"]),
            "carol\n"
        );
        assert_eq!(
            render(&[
                "list",
                "user",
                "-Pn",
                "withassoc",
                "format=user,cluster,account",
                "carol"
            ]),
            "carol|c2|nlp\ncarol|ref|physics\n"
        );
        // With their associations, a user's (an account's) rows come together,
        // cluster by cluster, as Slurm's.
        assert_eq!(
            render(&[
                "list",
                "user",
                "-Pn",
                "withassoc",
                "format=user,cluster,account",
                "carol,alice"
            ]),
            "alice|ref|ml\nalice|ref|vision\ncarol|c2|nlp\ncarol|ref|physics\n"
        );
        assert_eq!(
            render(&[
                "list",
                "account",
                "-Pn",
                "withassoc",
                "format=account,cluster,user",
                "root"
            ]),
            "root|c2|\nroot|c2|root\nroot|ref|\nroot|ref|root\n"
        );
        let accounts = render(&["list", "account", "-Pn", "format=account"]);
        assert_eq!(accounts.matches("root").count(), 1, "{accounts}");
    }

    #[test]
    fn format_widths_and_unknown_words() {
        assert_eq!(
            show(&["show", "account", "root", "format=account%-12,Descr%5"]).unwrap(),
            "     Account Descr \n------------ ----- \nroot         defa+ \n"
        );
        assert_eq!(
            error(&["show", "account", "format=Bogus"]),
            "Unknown field 'Bogus'\n"
        );
        assert_eq!(error(&["show", "qos", "format=A"]), "Unknown field 'A'\n");
        // Quotes that reach the command are Slurm's to drop.
        assert_eq!(
            show(&[
                "show",
                "account",
                "name='root'",
                "-nP",
                "format=\"Account,Descr\""
            ])
            .unwrap(),
            show(&[
                "show",
                "account",
                "name=root",
                "-nP",
                "format=Account,Descr"
            ])
            .unwrap(),
        );
        assert_eq!(list_value("'a,b'c"), ["a", "b"]);
        assert_eq!(list_value("\"\""), Vec::<String>::new());
        assert_eq!(
            error(&["show", "account", "bogus=1"]),
            " Unknown condition: bogus=1\n Use keyword 'set' to modify value\n"
        );
        assert!(keyword("Acc", "account", 3) && keyword("ACCOUNT", "account", 3));
        assert!(!keyword("Ac", "account", 3) && !keyword("accounts", "account", 3));
        assert!(
            keyword("rpc", "rpc", 5),
            "the whole keyword is always enough"
        );
    }

    #[test]
    fn command_line_errors_in_slurms_words() {
        assert_eq!(error(&["bogus", "account"]), "invalid keyword: bogus\n");
        assert_eq!(error(&["add"]), "Too few arguments for keyword:add\n");
        assert!(error(&["show", "bogus"]).starts_with("No valid entity in list command"));
        assert!(error(&["add", "bogus", "x"]).starts_with("No valid entity in add command"));
        assert!(error(&["show", "coordinator"]).starts_with("No valid entity in list"));
        assert_eq!(
            error(&["--bogus", "show", "account"]),
            "sacctmgr: unrecognized option '--bogus'\nTry \"sacctmgr --help\" for more information\n"
        );
        assert_eq!(
            error(&["modify", "account", "ml"]),
            " You didn't give me anything to set\n"
        );
        assert_eq!(
            error(&["delete", "account"]),
            " No conditions given to remove, not executing.\n"
        );
        assert_eq!(
            error(&["add", "account", "x", "badkey=1"]),
            " Unknown option: badkey=1\n Use keyword 'where' to modify condition\n"
        );
        assert_eq!(
            error(&["-r", "add", "account", "x"]),
            "Can't run this command in readonly mode.\n"
        );
        assert_eq!(
            error(&["modify", "cluster", "ref"]),
            " You didn't give me anything to set\n"
        );
        assert!(error(&[]).starts_with("sacctmgr: error: "));
        let help = parse_args(&s(&["--help"])).unwrap_err();
        assert!(help.stdout.starts_with("sacctmgr [<OPTION>]") && help.code == 0);
        assert_eq!(parse_args(&s(&["help"])).unwrap_err().stdout, HELP);
        assert_eq!(
            parse_args(&s(&["-V"])).unwrap_err().stdout,
            args::version_line()
        );
        let (opts, _) = parse_args(&s(&["-i", "add", "account", "x"])).unwrap();
        assert!(opts.immediate);
        let (opts, _) = parse_args(&s(&["show", "qos", "-Pn"])).unwrap();
        assert_eq!(
            (opts.parsable, opts.noheader),
            (Some(Parsable::NoEnding), true)
        );
        match parse_args(&s(&["add", "cluster", "Ref"])).unwrap().1 {
            Command::Change(c) => {
                assert_eq!(
                    (c.entity, c.conditions.names.clone()),
                    (Entity::Cluster, s(&["ref"]))
                )
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn summaries_of_adds() {
        assert_eq!(
            summarized(&[
                "add",
                "account",
                "nlp",
                "parent=ml",
                "description=NLP",
                "fairshare=2",
                "maxjobs=5",
                "grptres=cpu=-1",
            ]),
            " Adding Account(s)\n  nlp\n Settings\n  Description     = NLP\n  \
             Organization    = Parent/Account Name\n Associations\n  A = nlp        C = ref       \n \
             Settings\n  Fairshare     = 2\n  GrpTRES       = cpu=NONE\n  MaxJobs       = 5\n  \
             Parent        = ml\n"
        );
        assert_eq!(
            summarized(&["add", "account", "averyverylongname"]),
            " Adding Account(s)\n  averyverylongname\n Settings\n  Description     = Account Name\n  \
             Organization    = Parent/Account Name\n Associations\n  A = averyveryl C = ref       \n"
        );
        assert_eq!(
            summarized(&[
                "add",
                "user",
                "dave",
                "account=ml,physics",
                "defaultaccount=physics",
                "maxjobs=2",
                "maxwall=90",
            ]),
            " Adding User(s)\n  dave\n Settings =\n  Default Account = physics\n Associations =\n  \
             U = dave      A = ml         C = ref       \n  \
             U = dave      A = physics    C = ref       \n Non Default Settings\n  \
             MaxJobs       = 2\n  MaxWall       = 01:30:00\n"
        );
        assert_eq!(
            summarized(&["add", "user", "carol", "account=ml"]),
            " Associations =\n  U = carol     A = ml         C = ref       \n",
            "a known user gets an association only"
        );
        assert_eq!(
            summarized(&[
                "add",
                "qos",
                "low",
                "priority=1",
                "maxwall=2:00:00",
                "maxjobsperuser=3",
                "grptres=cpu=16,mem=2G",
                "preemptmode=cancel",
                "gracetime=0:30",
                "usagefactor=0.5",
            ]),
            " Adding QOS(s)\n  low\n Settings\n  Description    = low\n  \
             GraceTime                = 30\n  GrpTRES                  = cpu=16,mem=2G\n  \
             MaxJobsPerUser = 3\n  MaxWall                  = 02:00:00\n  \
             PreemptMode              = CANCEL\n  Priority                 = 1\n  \
             UsageFactor              = 0.5000\n"
        );
        assert_eq!(
            summarized(&[
                "add",
                "qos",
                "gpu",
                "gpuidlelimit=30:00",
                "gpuidleaction=cancel",
                "gpuidlegrace=5",
            ]),
            " Adding QOS(s)\n  gpu\n Settings\n  Description    = gpu\n  \
             GpuIdleLimit             = 00:30:00\n  GpuIdleAction            = cancel\n  \
             GpuIdleGrace             = 00:05:00\n"
        );
        assert_eq!(
            summarized(&["add", "coordinator", "account=physics", "names=alice"]),
            " Adding Coordinator User(s)\n  alice\n To Account(s) and all sub-accounts\n  physics\n"
        );
        assert_eq!(
            summarized(&["add", "account", "ml"]),
            " Nothing new added.\n"
        );
    }

    #[test]
    fn summaries_of_modifies_and_deletes() {
        assert_eq!(
            summarized(&["modify", "account", "where", "name=ml", "set", "maxjobs=10"]),
            " Modified account associations...\n  C = ref        A = ml                  \n  \
             C = ref        A = ml                   U = alice    \n  \
             C = ref        A = ml                   U = bob      \n"
        );
        assert_eq!(
            summarized(&["modify", "account", "ml", "set", "description=Machine"]),
            " Modified accounts...\n  ml\n"
        );
        assert_eq!(
            summarized(&["modify", "user", "alice", "set", "adminlevel=operator"]),
            " Modified users...\n  alice\n"
        );
        assert_eq!(
            summarized(&[
                "modify",
                "user",
                "where",
                "name=alice",
                "account=vision",
                "set",
                "maxjobs=1"
            ]),
            " Modified user associations...\n  C = ref        A = vision               U = alice    \n"
        );
        assert_eq!(
            summarized(&["update", "qos", "high", "set", "priority=3"]),
            " Modified qos...\n  high\n"
        );
        assert_eq!(
            summarized(&["modify", "qos", "nosuch", "set", "priority=3"]),
            " Nothing modified\n"
        );
        assert_eq!(
            summarized(&["delete", "account", "vision"]),
            " Deleting accounts...\n  vision\n"
        );
        assert_eq!(
            summarized(&["remove", "user", "carol"]),
            " Deleting users...\n  carol\n"
        );
        assert_eq!(
            summarized(&["delete", "user", "where", "name=alice", "account=vision"]),
            " Deleting user associations...\n  C = ref        A = vision     U = alice    \n"
        );
        assert_eq!(
            summarized(&["delete", "user", "where", "name=carol", "account=physics"]),
            " Deleting user associations...\n  C = ref        A = physics    U = carol    \n \
             Deleting users (No Associations)...\n  carol\n"
        );
        assert_eq!(
            summarized(&["delete", "qos", "high"]),
            " Deleting QOS(s)...\n  high\n"
        );
        assert_eq!(
            summarized(&["delete", "coordinator", "account=ml", "names=bob"]),
            " Removed Coordinator User(s)\n  bob\n"
        );
        assert_eq!(
            summarized(&["delete", "qos", "nosuch"]),
            " Nothing deleted\n"
        );
    }

    /// Runs [`commit`] with a stand-in controller that answers `changed` and records the
    /// dry-run flag of each call: (status, stdout, calls).
    fn session(
        words: &[&str],
        immediate: bool,
        changed: Changed,
        answer: Answer,
    ) -> (Result<u8, Exit>, String, Vec<bool>) {
        let c = change(words);
        let mut calls = Vec::new();
        let mut out = Vec::new();
        let rc = commit(
            &c,
            immediate,
            &mut |_, dry| {
                calls.push(dry);
                Ok(changed.clone())
            },
            &mut || answer.clone(),
            &mut out,
        );
        (rc, String::from_utf8(out).unwrap(), calls)
    }

    #[test]
    fn a_user_s_record_and_associations_are_changed_and_reported_one_after_the_other() {
        let words = [
            "modify",
            "user",
            "alice",
            "set",
            "defaultaccount=vision",
            "maxjobs=3",
        ];
        let c = change(&words);
        let (busy_assoc, busy_qos) = (|_: &str, _: &str| false, |_: &str| false);
        let ctx = Context {
            cluster: "ref",
            busy_assoc: &busy_assoc,
            busy_qos: &busy_qos,
        };
        let mut sent = Vec::new();
        let mut out = Vec::new();
        let rc = commit(
            &c,
            true,
            &mut |step, dry| {
                sent.push((step.settings.default_account.clone(), dry));
                Ok(model::assoc_change::apply(&db(), step, &ctx).unwrap().1)
            },
            &mut || Answer::Closed,
            &mut out,
        );
        assert_eq!(rc.unwrap(), 0);
        assert_eq!(sent, [(Some("vision".to_string()), false), (None, false)]);
        let out = String::from_utf8(out).unwrap();
        assert!(
            out.starts_with(" Modified users...\n  alice\n Modified user associations...\n"),
            "{out}"
        );
    }

    #[test]
    fn modify_job_takes_ids_a_comment_and_a_derived_exit_code() {
        let parsed = |words: &[&str]| parse_args(&s(words)).map(|(_, c)| c);
        let Ok(Command::ModifyJob { job_ids, changes }) = parsed(&[
            "-i",
            "modify",
            "job",
            "job=7,8",
            "set",
            "DerivedExitCode=22",
            "Comment='hello'",
        ]) else {
            panic!("not a job change");
        };
        assert_eq!(job_ids, ["7", "8"]);
        assert_eq!(
            changes,
            [
                JobChange::DerivedExitCode(22),
                JobChange::Comment("hello".into())
            ]
        );
        let refused = |words: &[&str]| parsed(words).unwrap_err().stderr;
        assert!(
            refused(&["mod", "job", "where", "jobid=7", "set", "nice=3"])
                .starts_with(" Unknown option: nice=3")
        );
        assert_eq!(
            refused(&["modify", "job", "set", "comment=x"]),
            " No job ids given to modify\n"
        );
        assert_eq!(
            refused(&["modify", "job", "7", "set", "DerivedExitCode=x"]),
            " Invalid value for DerivedExitCode (x)\n"
        );
    }

    #[test]
    fn commit_asks_before_it_commits() {
        let words = ["add", "qos", "low"];
        let changed = applied(&words).1;
        let said = summary(&change(&words), &changed);
        let (rc, out, calls) = session(&words, false, changed.clone(), Answer::Line("y\n".into()));
        assert_eq!((rc.unwrap(), calls), (0, vec![true, false]));
        assert_eq!(out, format!("{said}{QUESTION}\n"));
        let (rc, out, calls) = session(&words, false, changed.clone(), Answer::Line("n\n".into()));
        assert_eq!((rc.unwrap(), calls), (0, vec![true]));
        assert_eq!(out, format!("{said}{QUESTION}\n Changes Discarded\n"));
        let (_, out, calls) = session(&words, false, changed.clone(), Answer::Closed);
        assert_eq!(calls, vec![true]);
        assert!(out.ends_with("(N/y): \n Changes Discarded\n"), "{out}");
        let (_, out, _) = session(&words, false, changed.clone(), Answer::TimedOut);
        assert!(
            out.ends_with("(N/y): timeout\n Changes Discarded\n"),
            "{out}"
        );
        let (rc, out, calls) = session(&words, true, changed, Answer::Closed);
        assert_eq!((rc.unwrap(), calls), (0, vec![false]));
        assert_eq!(out, said);
        let (rc, out, calls) = session(&words, false, Changed::default(), Answer::Closed);
        assert_eq!((rc.unwrap(), calls), (1, vec![true]));
        assert_eq!(out, " Nothing new added.\n");
        // Refusals as sacctmgr words them.
        let c = change(&words);
        let refuse = |status: tonic::Status| {
            let mut out = Vec::new();
            commit(
                &c,
                true,
                &mut |_, _| Err(refusal(&status)),
                &mut || Answer::Closed,
                &mut out,
            )
            .unwrap_err()
        };
        assert_eq!(
            refuse(tonic::Status::permission_denied("no")).stderr,
            format!("{NO_PRIVILEGE}\n")
        );
        let e = refuse(tonic::Status::invalid_argument(
            "This account 'nosuch' doesn't exist.",
        ));
        assert_eq!(
            (e.code, e.stderr.as_str()),
            (1, " This account 'nosuch' doesn't exist.\n")
        );
        assert_eq!(
            refuse(tonic::Status::unavailable("down")).stderr,
            format!("sacctmgr: error: {}\n", calls::CONNECT_FAILURE)
        );
    }

    #[test]
    fn entities_and_verbs_abbreviate_as_slurms() {
        assert_eq!(listing("acc"), Some(Listing::Account));
        assert_eq!(listing("assoc"), Some(Listing::Assoc));
        assert_eq!(listing("as"), Some(Listing::Assoc));
        assert_eq!(listing("cl"), Some(Listing::Cluster));
        assert_eq!(listing("q"), Some(Listing::Qos));
        assert_eq!(listing("u"), Some(Listing::User));
        assert_eq!(listing("c"), None);
        assert_eq!(entity("coord"), Some(Entity::Coordinator));
        assert_eq!(entity("acct"), Some(Entity::Account));
        assert_eq!(entity("a"), Some(Entity::Account));
        assert_eq!(entity("co"), Some(Entity::Coordinator));
        assert_eq!(action("mod"), Some(Action::Modify));
        assert_eq!(action("cre"), Some(Action::Add));
        assert_eq!(action("del"), Some(Action::Delete));
        assert_eq!(action("de"), None);
        let parsed = parse_args(&s(&["-i", "mod", "qos", "normal", "set", "priority=5"]));
        assert!(parsed.is_ok(), "{parsed:?}");
    }

    #[test]
    fn show_config_names_the_accounting_settings_and_store() {
        assert!(matches!(
            parse_args(&s(&["show", "config"])).unwrap().1,
            Command::ShowConfig
        ));
        let entries = vec![proto::v1::ConfigEntry {
            key: "AccountingStorageType".into(),
            value: "accounting_storage/slurmdbd".into(),
        }];
        let text = render_config(
            &entries,
            &ClusterInfo::new("c", "ctl:6817"),
            Some("/etc/slurm.conf"),
            "NOW",
        );
        for line in [
            "Configuration data as of NOW",
            "AccountingStorageType  = accounting_storage/slurmdbd",
            "SLURM_CONF             = /etc/slurm.conf",
            "SlurmDBD configuration:",
            "DbdHost                = ctl",
            "DbdPort                = 6817",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
        }
    }
}
