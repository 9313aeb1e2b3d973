//! `sinfo`: partitions and nodes, as Slurm's sinfo prints them.
//!
//! Lines are groups of nodes: by default one per partition and node state, with the
//! node names folded into a hostlist (`gpu[01-03]`). Which nodes share a line follows
//! from the format: nodes go together when every per-node or per-partition field of the
//! format (state, CPUs, GRES, reason, ...) prints the same; counts and node lists
//! (`%D %N %C %F`) are summed over the group. `-N` gives a line per node and partition,
//! `-R` a line per reason. Rendering (`render`) is pure and unit-tested.
//!
//! ```text
//! PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST
//! gpu*         up 1-00:00:00      2    mix gpu[01-02]
//! ```

use crate::args::{self, split_list};
use crate::calls;
use crate::client;
use crate::exit::Exit;
use crate::format::{self, Cell, Format, Width};
use crate::jobs::Ctx;
use crate::nodes::{self, gres, gres_used};
use crate::opts::{OptSpec, flag, value};
use crate::times;
use crate::users::Names;
use model::{NodeState, NodeWord};
use proto::v1::{ListNodesRequest, ListPartitionsRequest, NodeInfo, PartitionInfo};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;

const SPECS: &[OptSpec] = &[
    flag("all", Some('a')),
    flag("dead", Some('d')),
    flag("exact", Some('e')),
    flag("federation", None),
    flag("future", Some('F')),
    flag("help", None),
    flag("hide", None),
    value("iterate", Some('i')),
    flag("json", None),
    flag("list-reasons", Some('R')),
    flag("local", None),
    flag("long", Some('l')),
    value("cluster", None),
    value("clusters", Some('M')),
    value("nodes", Some('n')),
    flag("noconvert", None),
    flag("Node", Some('N')),
    flag("noheader", Some('h')),
    value("format", Some('o')),
    value("Format", Some('O')),
    value("partition", Some('p')),
    flag("responding", Some('r')),
    flag("reservation", Some('T')),
    value("sort", Some('S')),
    flag("summarize", Some('s')),
    value("states", Some('t')),
    flag("usage", None),
    flag("verbose", Some('v')),
    flag("version", Some('V')),
];

const ALIASES: &[(&str, &str)] = &[("cluster", "clusters")];

const DEFAULT_FORMAT: &str = "%#P %.5a %.10l %.6D %.6t %N";
const SUMMARIZE_FORMAT: &str = "%#P %.5a %.10l %.16F  %N";
const LONG_FORMAT: &str = "%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N";
const NODE_FORMAT: &str = "%#N %.6D %#P %6t";
const NODE_LONG_FORMAT: &str = "%#N %.6D %#P %.11T %.4c %.8z %.6m %.8d %.6w %.8f %20E";
const REASONS_FORMAT: &str = "%20E %9u %19H %N";
const REASONS_LONG_FORMAT: &str = "%20E %12U %19H %6t %N";

/// Slurm's smallest width for `%#P` and `%#N` columns.
const MIN_AUTO_WIDTH: usize = 9;

/// Whether a field is computed over a line's nodes (and so does not split lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Aggregate,
    Grouping,
}

/// A field of an sinfo line: its `-o` letter, `-O` names, header and value. A new
/// field is one entry of [`NODE_FIELDS`].
pub struct NodeFieldDef {
    pub letter: Option<char>,
    /// The `-O` names, lower case.
    pub names: &'static [&'static str],
    pub header: &'static str,
    header_whole: bool,
    kind: Kind,
    /// Read from the line's partition (so lines split by partition).
    of_partition: bool,
    pub value: fn(&Line, &Ctx) -> Cell,
}

impl NodeFieldDef {
    pub fn header(&self) -> Cell {
        if self.header_whole {
            Cell::whole(self.header)
        } else {
            Cell::cut(self.header)
        }
    }

    /// The value for a line of nodes (all in its partition when it has one).
    pub fn value(&self, line: &Line, ctx: &Ctx) -> Cell {
        (self.value)(line, ctx)
    }
}

impl std::fmt::Debug for NodeFieldDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.header)
    }
}

impl PartialEq for NodeFieldDef {
    fn eq(&self, other: &NodeFieldDef) -> bool {
        std::ptr::eq(self, other)
    }
}

impl Eq for NodeFieldDef {}

/// An sinfo field.
pub type NodeField = &'static NodeFieldDef;

/// The field of a `-o` letter.
pub fn field_letter(c: char) -> Option<NodeField> {
    NODE_FIELDS.iter().find(|f| f.letter == Some(c))
}

/// The field of a `-O` name (any case).
pub fn field_name(name: &str) -> Option<NodeField> {
    let name = name.to_ascii_lowercase();
    NODE_FIELDS
        .iter()
        .find(|f| f.names.contains(&name.as_str()))
}

/// A field of the line's nodes that splits lines.
const fn node(
    letter: Option<char>,
    names: &'static [&'static str],
    header: &'static str,
    value: fn(&Line, &Ctx) -> Cell,
) -> NodeFieldDef {
    NodeFieldDef {
        letter,
        names,
        header,
        header_whole: false,
        kind: Kind::Grouping,
        of_partition: false,
        value,
    }
}

/// A field of the line's partition.
const fn partition(
    letter: Option<char>,
    names: &'static [&'static str],
    header: &'static str,
    value: fn(&Line, &Ctx) -> Cell,
) -> NodeFieldDef {
    NodeFieldDef {
        of_partition: true,
        ..node(letter, names, header, value)
    }
}

/// A field computed over all of a line's nodes.
const fn aggregate(
    letter: Option<char>,
    names: &'static [&'static str],
    header: &'static str,
    value: fn(&Line, &Ctx) -> Cell,
) -> NodeFieldDef {
    NodeFieldDef {
        kind: Kind::Aggregate,
        ..node(letter, names, header, value)
    }
}

impl NodeFieldDef {
    const fn whole_header(self) -> NodeFieldDef {
        NodeFieldDef {
            header_whole: true,
            ..self
        }
    }
}

/// A value of the line's first node, `0` without one.
fn on_node(line: &Line, f: impl Fn(&NodeInfo) -> String) -> Cell {
    node_or(line, "0", f)
}

/// A value of the line's partition, `none` without one.
fn on_part(line: &Line, none: &str, f: impl Fn(&PartitionInfo) -> String) -> Cell {
    Cell::cut(line.part.as_ref().map(f).unwrap_or_else(|| none.into()))
}

/// A value of the line's first node, `none` without one.
fn node_or(line: &Line, none: &str, f: impl Fn(&NodeInfo) -> String) -> Cell {
    Cell::cut(line.nodes.first().map(f).unwrap_or_else(|| none.into()))
}

fn node_names(line: &Line) -> Cell {
    Cell::whole(model::hostlist::fold(
        &line
            .nodes
            .iter()
            .map(|n| n.name.as_str())
            .collect::<Vec<_>>(),
    ))
}

/// Nodes allocated, idle and other (`%F`, `%A`).
fn node_counts(line: &Line) -> (usize, usize, usize) {
    let (mut a, mut i, mut o) = (0, 0, 0);
    for n in &line.nodes {
        match category(&nodes::node_state(n)) {
            Category::Alloc => a += 1,
            Category::Idle => i += 1,
            Category::Other => o += 1,
        }
    }
    (a, i, o)
}

/// A node's features, `(null)` when it has none.
fn features(line: &Line) -> Cell {
    node_or(line, "(null)", |n| {
        if n.features.is_empty() {
            "(null)".into()
        } else {
            n.features.join(",")
        }
    })
}

fn constant(text: &'static str) -> Cell {
    Cell::cut(text)
}

/// Every field of an sinfo line.
pub static NODE_FIELDS: &[NodeFieldDef] = &[
    partition(Some('P'), &["partition"], "PARTITION", |l, _| {
        on_part(l, "", |p| {
            if p.is_default {
                format!("{}*", p.name)
            } else {
                p.name.clone()
            }
        })
    }),
    partition(Some('R'), &["partitionname"], "PARTITION", |l, _| {
        on_part(l, "", |p| p.name.clone())
    }),
    partition(Some('a'), &["available"], "AVAIL", |l, _| {
        Cell::cut(l.part.as_ref().map(|p| avail(&p.state)).unwrap_or("n/a"))
    }),
    partition(Some('l'), &["time"], "TIMELIMIT", |l, _| {
        on_part(l, "n/a", |p| {
            times::minutes_text(p.max_time_min, "infinite")
        })
    }),
    partition(Some('L'), &["defaulttime"], "DEFAULTTIME", |l, _| {
        on_part(l, "n/a", |p| times::minutes_text(p.default_time_min, "n/a"))
    }),
    aggregate(Some('D'), &["nodes"], "NODES", |l, _| {
        Cell::cut(l.nodes.len().to_string())
    }),
    node(Some('t'), &["statecompact"], "STATE", |l, _| {
        node_or(l, "n/a", |n| nodes::node_state(n).compact())
    }),
    node(Some('T'), &["statelong"], "STATE", |l, _| {
        node_or(l, "n/a", |n| nodes::node_state(n).long())
    }),
    node(None, &["statecomplete"], "STATECOMPLETE", |l, _| {
        node_or(l, "n/a", |n| nodes::node_state(n).long())
    }),
    aggregate(Some('N'), &["nodelist"], "NODELIST", |l, _| node_names(l)).whole_header(),
    aggregate(Some('n'), &["nodehost"], "HOSTNAMES", |l, _| node_names(l)).whole_header(),
    aggregate(Some('o'), &["nodeaddr"], "NODE_ADDR", |l, _| {
        Cell::whole(
            l.nodes
                .iter()
                .map(nodes::node_addr)
                .collect::<Vec<_>>()
                .join(","),
        )
    })
    .whole_header(),
    aggregate(Some('C'), &["cpusstate"], "CPUS(A/I/O/T)", |l, _| {
        let (mut a, mut i, mut o, mut t) = (0, 0, 0, 0);
        for n in &l.nodes {
            let free = n.cpus.saturating_sub(n.cpus_alloc);
            a += n.cpus_alloc;
            if usable(&nodes::node_state(n)) {
                i += free;
            } else {
                o += free;
            }
            t += n.cpus;
        }
        Cell::cut(format!("{a}/{i}/{o}/{t}"))
    }),
    node(Some('c'), &["cpus"], "CPUS", |l, _| {
        on_node(l, |n| n.cpus.to_string())
    }),
    node(Some('m'), &["memory"], "MEMORY", |l, _| {
        on_node(l, |n| n.memory_mb.to_string())
    }),
    node(None, &["allocmem"], "ALLOCMEM", |l, _| {
        on_node(l, |n| n.memory_alloc_mb.to_string())
    }),
    node(Some('G'), &["gres"], "GRES", |l, _| {
        node_or(l, "(null)", gres)
    }),
    node(None, &["gresused"], "GRES_USED", |l, _| {
        node_or(l, "(null)", gres_used)
    }),
    node(Some('E'), &["reason"], "REASON", |l, _| {
        Cell::cut(
            l.nodes
                .first()
                .map(|n| n.reason.clone())
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| "none".into()),
        )
    }),
    node(Some('H'), &["timestamp"], "TIMESTAMP", |l, _| {
        node_or(l, "Unknown", |n| times::time_or(n.reason_time, "Unknown"))
    }),
    node(Some('u'), &["user"], "USER", |l, ctx| {
        Cell::cut(match l.nodes.first() {
            Some(n) if n.reason_time > 0 => ctx.names.user(n.reason_uid),
            _ => "Unknown".into(),
        })
    }),
    node(Some('U'), &["userlong"], "USER", |l, ctx| {
        Cell::cut(match l.nodes.first() {
            Some(n) if n.reason_time > 0 => {
                format!("{}({})", ctx.names.user(n.reason_uid), n.reason_uid)
            }
            _ => "Unknown".into(),
        })
    }),
    node(Some('e'), &["freemem"], "FREE_MEM", |l, _| {
        node_or(l, "N/A", nodes::free_mem)
    }),
    node(Some('O'), &["cpusload"], "CPU_LOAD", |l, _| {
        node_or(l, "N/A", nodes::cpu_load)
    }),
    // Features are static here: the active ones are the available ones.
    node(Some('f'), &["features"], "AVAIL_FEATURES", |l, _| {
        features(l)
    }),
    node(Some('b'), &["features_act"], "ACTIVE_FEATURES", |l, _| {
        features(l)
    }),
    node(Some('z'), &["socketcorethread"], "S:C:T", |l, _| {
        on_node(l, |n| {
            let (s, c, t) = nodes::socket_core_thread(n);
            format!("{s}:{c}:{t}")
        })
    }),
    node(Some('X'), &["sockets"], "SOCKETS", |l, _| {
        on_node(l, |n| nodes::socket_core_thread(n).0.to_string())
    }),
    node(Some('Y'), &["cores"], "CORES", |l, _| {
        node_or(l, "1", |n| nodes::socket_core_thread(n).1.to_string())
    }),
    node(Some('Z'), &["threads"], "THREADS", |l, _| {
        node_or(l, "1", |n| nodes::socket_core_thread(n).2.to_string())
    }),
    node(Some('d'), &["disk"], "TMP_DISK", |l, _| {
        on_node(l, |n| n.tmp_disk_mb.to_string())
    }),
    node(Some('w'), &["weight"], "WEIGHT", |_, _| constant("1")),
    partition(Some('s'), &["size"], "JOB_SIZE", |l, _| {
        Cell::cut(match l.part.as_ref().map(|p| p.max_nodes) {
            Some(0) | None => "1-infinite".to_string(),
            Some(1) => "1".to_string(),
            Some(m) => format!("1-{m}"),
        })
    }),
    partition(Some('g'), &["groups"], "GROUPS", |l, _| {
        Cell::cut(
            l.part
                .as_ref()
                .map(|p| p.allow_groups.as_str())
                .filter(|g| !g.is_empty())
                .unwrap_or("all"),
        )
    }),
    partition(Some('h'), &["oversubscribe"], "OVERSUBSCRIBE", |l, _| {
        Cell::cut(
            l.part
                .as_ref()
                .map(|p| p.oversubscribe.as_str())
                .filter(|o| !o.is_empty())
                .unwrap_or("NO"),
        )
    }),
    partition(Some('r'), &["root"], "ROOT", |_, _| constant("no")),
    partition(
        Some('p'),
        &["prioritytier", "priority"],
        "PRIO_TIER",
        |_, _| constant("1"),
    ),
    partition(
        Some('I'),
        &["priorityjobfactor"],
        "PRIO_JOB_FACTOR",
        |_, _| constant("1"),
    ),
    partition(Some('S'), &["allocnodes"], "ALLOCNODES", |_, _| {
        constant("all")
    }),
    partition(
        Some('B'),
        &["maxcpuspernode"],
        "MAX_CPUS_PER_NODE",
        |_, _| constant("UNLIMITED"),
    ),
    partition(Some('M'), &["preemptmode"], "PREEMPT_MODE", |_, _| {
        constant("OFF")
    }),
    node(Some('v'), &["version"], "VERSION", |l, _| {
        node_or(l, "N/A", |n| nodes::node_version(n).into())
    }),
    node(Some('V'), &["cluster"], "CLUSTER", |_, ctx| {
        Cell::cut(ctx.cluster.clone())
    }),
    node(Some('i'), &["reservation"], "RESERVATION", |_, _| {
        constant("")
    }),
    aggregate(Some('F'), &["nodeaiot"], "NODES(A/I/O/T)", |l, _| {
        let (a, i, o) = node_counts(l);
        Cell::cut(format!("{a}/{i}/{o}/{}", l.nodes.len()))
    }),
    aggregate(Some('A'), &["nodeai"], "NODES(A/I)", |l, _| {
        let (a, i, _) = node_counts(l);
        Cell::cut(format!("{a}/{i}"))
    }),
    node(None, &["comment"], "COMMENT", |_, _| constant("N/A")),
    node(None, &["extra"], "EXTRA", |_, _| constant("N/A")),
    node(None, &["port"], "PORT", |l, _| {
        on_node(l, |n| {
            n.addr
                .rsplit_once(':')
                .map(|(_, p)| p.to_string())
                .unwrap_or_else(|| "0".into())
        })
    }),
];

fn avail(state: &str) -> &'static str {
    match state.to_ascii_uppercase().as_str() {
        "UP" | "" => "up",
        "DOWN" => "down",
        "DRAIN" => "drain",
        "INACTIVE" => "inact",
        _ => "unk",
    }
}

/// How a node counts in `%F` and `%C`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Category {
    Alloc,
    Idle,
    Other,
}

/// Whether new work may start on a node.
fn usable(st: &NodeState) -> bool {
    st.responding
        && matches!(
            st.word(),
            NodeWord::Idle | NodeWord::Mixed | NodeWord::Allocated
        )
}

/// How a node counts in `%F` and `%C`.
fn category(st: &NodeState) -> Category {
    match st.word() {
        _ if !st.responding => Category::Other,
        NodeWord::Allocated | NodeWord::Mixed => Category::Alloc,
        NodeWord::Idle => Category::Idle,
        _ => Category::Other,
    }
}

/// Slurm's base-state order, for the default `-t` (descending) sort.
fn rank(st: &NodeState) -> i32 {
    match st.word() {
        NodeWord::Mixed | NodeWord::Draining => 5,
        NodeWord::Allocated => 3,
        NodeWord::Idle | NodeWord::Drained => 2,
        NodeWord::Down => 1,
        NodeWord::Unknown => 0,
    }
}

/// The `-t` words sinfo knows.
const STATE_WORDS: &[&str] = &[
    "ALLOC",
    "ALLOCATED",
    "CLOUD",
    "COMP",
    "COMPLETING",
    "DOWN",
    "DRAIN",
    "DRAINED",
    "DRAINING",
    "FAIL",
    "FUTURE",
    "FUTR",
    "IDLE",
    "MAINT",
    "MIX",
    "MIXED",
    "NO_RESPOND",
    "NPC",
    "PERFCTRS",
    "PLANNED",
    "POWER_DOWN",
    "POWERING_DOWN",
    "POWERED_DOWN",
    "POWERING_UP",
    "REBOOT_ISSUED",
    "REBOOT_REQUESTED",
    "RESV",
    "RESERVED",
    "UNK",
    "UNKNOWN",
    "RESPONDING",
];

/// A printed line: nodes that print alike, in one partition (none for `-R` lines and
/// partitions without nodes).
#[derive(Debug, Clone)]
pub struct Line {
    pub part: Option<PartitionInfo>,
    pub nodes: Vec<NodeInfo>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    Lines(Format<NodeField>),
    Json,
}

/// Everything the command line asked for.
#[derive(Debug, Clone)]
pub struct Options {
    pub layout: Layout,
    pub node_oriented: bool,
    pub noheader: bool,
    pub long: bool,
    pub partitions: Vec<String>,
    pub nodes: Vec<String>,
    /// `-t`: any of these lists, each needing all its words (`a&b`).
    pub states: Vec<Vec<String>>,
    pub responding: bool,
    pub dead: bool,
    pub reservations: bool,
    pub iterate: Option<u64>,
    /// `-v`: the options as Slurm 22.05's sinfo prints them first (`_print_options`).
    pub verbose_dump: Option<String>,
}

/// Parses the command line; `env` reads SINFO_FORMAT and friends.
pub fn parse_args(
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
) -> Result<Options, Exit> {
    if env("SINFO_ALL").is_some() && env("SINFO_PARTITION").is_some() {
        return Err(Exit::error(
            "sinfo",
            "Conflicting options, SINFO_ALL and SINFO_PARTITION, specified. \
             Please choose one or the other.",
        ));
    }
    let p = args::parse_command_line("sinfo", args, SPECS, ALIASES, HELP, USAGE)?;
    if p.has("all") && p.has("partition") {
        return Err(Exit::error(
            "sinfo",
            "Conflicting options, -a and -p, specified. Please choose one or the other.",
        ));
    }
    if let Some(extra) = p.positional.first() {
        return Err(Exit::usage(
            "sinfo",
            format!("error: Unrecognized option: {extra}"),
        ));
    }
    if p.has("format") && p.has("Format") {
        return Err(Exit::error(
            "sinfo",
            "-o (--format) is incompatible with -O (--Format)",
        ));
    }
    let node_oriented = p.has("Node");
    let long = p.has("long");
    let reasons = p.has("list-reasons");
    let mut format_text = None;
    let layout = if p.has("json") {
        Layout::Json
    } else if let Some(t) = p.get("Format").map(String::from).or_else(|| {
        if p.has("format") {
            None
        } else {
            env("SINFO_FORMAT2")
        }
    }) {
        let (fmt, bad) = format::parse_long(&t, field_name);
        for n in bad {
            warnings.push(format!(
                "sinfo: error: Invalid node format specification: {n}"
            ));
        }
        Layout::Lines(fmt)
    } else {
        let text = p
            .get("format")
            .map(String::from)
            .or_else(|| env("SINFO_FORMAT"))
            .unwrap_or_else(|| {
                match (reasons, node_oriented, long, p.has("summarize")) {
                    (true, _, false, _) => REASONS_FORMAT,
                    (true, _, true, _) => REASONS_LONG_FORMAT,
                    (false, true, false, _) => NODE_FORMAT,
                    (false, true, true, _) => NODE_LONG_FORMAT,
                    (false, false, _, true) => SUMMARIZE_FORMAT,
                    (false, false, true, false) => LONG_FORMAT,
                    (false, false, false, false) => DEFAULT_FORMAT,
                }
                .to_string()
            });
        format_text = Some(text.clone());
        let (mut fmt, bad) = format::parse_percent(&text, field_letter);
        for c in bad {
            warnings.push(format!(
                "sinfo: error: Invalid node format specification: {c}"
            ));
        }
        for col in &mut fmt.columns {
            if col.width == Width::Auto(0) {
                col.width = Width::Auto(MIN_AUTO_WIDTH);
            }
        }
        Layout::Lines(fmt)
    };
    let mut states = Vec::new();
    if let Some(t) = p.get("states") {
        for any in split_list(t) {
            let all: Vec<String> = any
                .split('&')
                .map(|w| w.trim().to_string())
                .filter(|w| !w.is_empty())
                .collect();
            for w in &all {
                if !STATE_WORDS.contains(&w.to_ascii_uppercase().as_str())
                    && !w.eq_ignore_ascii_case("all")
                {
                    return Err(Exit::error(
                        "sinfo",
                        format!("Invalid node state specified: {w}"),
                    ));
                }
            }
            if all.iter().any(|w| w.eq_ignore_ascii_case("all")) {
                states.clear();
                break;
            }
            states.push(all);
        }
    }
    if reasons && states.is_empty() {
        states = ["DOWN", "DRAIN", "FAIL", "NO_RESPOND"]
            .iter()
            .map(|w| vec![w.to_string()])
            .collect();
    }
    let nodes = match p.get("nodes") {
        None => Vec::new(),
        Some(n) => model::hostlist::expand(n)
            .map_err(|_| Exit::error("sinfo", format!("Invalid node name specified: {n}")))?,
    };
    let iterate = args::iterate_option("sinfo", &p)?;
    let verbose_dump = p.has("verbose").then(|| {
        let yes = |key: &str| if p.has(key) { "true" } else { "false" };
        let given = |v: Option<&str>| v.unwrap_or("(null)").to_string();
        let filtering = ["partition", "nodes", "states", "responding", "dead"]
            .iter()
            .any(|k| p.has(k));
        let lines = [
            ("dead", yes("dead").to_string()),
            ("exact", u8::from(p.has("exact")).to_string()),
            ("filtering", filtering.to_string()),
            ("format", given(format_text.as_deref())),
            ("iterate", iterate.unwrap_or(0).to_string()),
            ("long", yes("long").to_string()),
            ("no_header", yes("noheader").to_string()),
            ("node_field", p.has("Format").to_string()),
            ("node_format", yes("Node").to_string()),
            ("nodes", p.get("nodes").unwrap_or("n/a").to_string()),
            ("part_field", "false".to_string()),
            ("partition", p.get("partition").unwrap_or("n/a").to_string()),
            ("responding", yes("responding").to_string()),
            ("states", given(p.get("states"))),
            ("sort", given(p.get("sort"))),
            ("summarize", yes("summarize").to_string()),
            ("verbose", p.all("verbose").len().to_string()),
        ];
        crate::format::option_dump(&lines)
    });
    Ok(Options {
        layout,
        // A reason list groups by reason, whatever -N says.
        node_oriented: node_oriented && !reasons,
        noheader: p.has("noheader"),
        long,
        partitions: p
            .get("partition")
            .map(String::from)
            // -a shows every partition, SINFO_PARTITION's too.
            .or_else(|| env("SINFO_PARTITION").filter(|_| !p.has("all")))
            .map(|v| split_list(&v))
            .unwrap_or_default(),
        nodes,
        states,
        responding: p.has("responding"),
        dead: p.has("dead"),
        reservations: p.has("reservation"),
        iterate,
        verbose_dump,
    })
}

fn node_selected(opts: &Options, n: &NodeInfo) -> bool {
    let st = nodes::node_state(n);
    (opts.nodes.is_empty() || opts.nodes.contains(&n.name))
        && (!opts.responding || st.responding)
        && (!opts.dead || !st.responding)
        && (opts.states.is_empty()
            || opts
                .states
                .iter()
                .any(|all| all.iter().all(|w| st.matches(w) == Some(true))))
}

/// Orders node names with their numbers as numbers (`n2` before `n10`).
fn natural_key(name: &str) -> (String, u64, String) {
    let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
    let (prefix, num) = name.split_at(name.len() - digits);
    (
        prefix.to_string(),
        num.parse().unwrap_or(0),
        name.to_string(),
    )
}

/// Groups nodes into the lines `fmt` prints, in sinfo's order.
pub fn lines(
    opts: &Options,
    fmt: &Format<NodeField>,
    parts: &[PartitionInfo],
    nodes: &[NodeInfo],
    ctx: &Ctx,
) -> Vec<Line> {
    let mut sorted: Vec<&NodeInfo> = nodes.iter().filter(|n| node_selected(opts, n)).collect();
    sorted.sort_by_key(|n| natural_key(&n.name));
    let part_selected =
        |p: &PartitionInfo| opts.partitions.is_empty() || opts.partitions.contains(&p.name);
    let uses_partition = fmt.columns.iter().any(|c| c.key.of_partition);
    let filtering =
        !opts.nodes.is_empty() || !opts.states.is_empty() || opts.responding || opts.dead;

    // (partition index, line) in the order records are made.
    let mut records: Vec<(usize, Line)> = Vec::new();
    for (pi, p) in parts.iter().enumerate().filter(|(_, p)| part_selected(p)) {
        // Nodes name their partitions; should a controller leave that out, the
        // partition's own node list still counts.
        let listed = if sorted.iter().any(|n| n.partitions.is_empty()) {
            model::hostlist::expand(&p.nodes).unwrap_or_default()
        } else {
            Vec::new()
        };
        let members: Vec<&NodeInfo> = sorted
            .iter()
            .copied()
            .filter(|n| {
                n.partitions.contains(&p.name)
                    || (n.partitions.is_empty() && listed.contains(&n.name))
            })
            .collect();
        if members.is_empty() {
            if !filtering && !opts.node_oriented {
                records.push((
                    pi,
                    Line {
                        part: Some(p.clone()),
                        nodes: Vec::new(),
                    },
                ));
            }
            continue;
        }
        for n in members {
            records.push((
                pi,
                Line {
                    part: Some(p.clone()),
                    nodes: vec![n.clone()],
                },
            ));
        }
    }
    if opts.node_oriented {
        records.sort_by_key(|(pi, l)| (l.nodes.first().map(|n| natural_key(&n.name)), *pi));
        return records.into_iter().map(|(_, l)| l).collect();
    }

    // Merge records whose grouping fields print the same.
    let key_of = |l: &Line| -> Vec<String> {
        let mut k: Vec<String> = fmt
            .columns
            .iter()
            .filter(|c| c.key.kind == Kind::Grouping)
            .map(|c| c.key.value(l, ctx).text)
            .collect();
        if uses_partition {
            k.push(l.part.as_ref().map(|p| p.name.clone()).unwrap_or_default());
        }
        k
    };
    let mut groups: Vec<(usize, i32, Line)> = Vec::new();
    let mut index: BTreeMap<Vec<String>, usize> = BTreeMap::new();
    let mut members: Vec<BTreeSet<String>> = Vec::new();
    for (pi, rec) in records {
        let key = key_of(&rec);
        match index.get(&key) {
            Some(&g) => {
                for n in rec.nodes {
                    if members[g].insert(n.name.clone()) {
                        groups[g].2.nodes.push(n);
                    }
                }
            }
            None => {
                let rank = rec
                    .nodes
                    .first()
                    .map(|n| rank(&nodes::node_state(n)))
                    .unwrap_or(-1);
                let part = if uses_partition { rec.part } else { None };
                index.insert(key, groups.len());
                members.push(rec.nodes.iter().map(|n| n.name.clone()).collect());
                groups.push((
                    if uses_partition { pi } else { 0 },
                    rank,
                    Line {
                        part,
                        nodes: rec.nodes,
                    },
                ));
            }
        }
    }
    // "#P,-t": partitions as configured, then busier states first.
    groups.sort_by_key(|g| (g.0, -g.1));
    groups
        .into_iter()
        .map(|(_, _, mut l)| {
            l.nodes.sort_by_key(|n| natural_key(&n.name));
            l
        })
        .collect()
}

/// The whole output.
pub fn render(opts: &Options, parts: &[PartitionInfo], nodes: &[NodeInfo], ctx: &Ctx) -> String {
    let mut out = String::new();
    match &opts.layout {
        Layout::Json => {
            let doc = json_doc(opts, parts, nodes);
            out.push_str(&serde_json::to_string_pretty(&doc).unwrap_or_default());
            out.push('\n');
        }
        Layout::Lines(fmt) => {
            if opts.long && !opts.noheader {
                out.push_str(&times::ctime_line(ctx.now));
                out.push('\n');
            }
            let lines = lines(opts, fmt, parts, nodes, ctx);
            let head = |k: &NodeField| k.header();
            let header: Option<&dyn Fn(&NodeField) -> Cell> =
                if opts.noheader { None } else { Some(&head) };
            out.push_str(&format::render(
                fmt,
                &lines,
                header,
                &|l: &Line, k: &NodeField| k.value(l, ctx),
            ));
        }
    }
    out
}

fn json_doc(opts: &Options, parts: &[PartitionInfo], nodes: &[NodeInfo]) -> serde_json::Value {
    let nodes: Vec<serde_json::Value> = nodes
        .iter()
        .filter(|n| node_selected(opts, n))
        .filter(|n| {
            opts.partitions.is_empty() || n.partitions.iter().any(|p| opts.partitions.contains(p))
        })
        .map(|n| {
            let state = nodes::node_state(n).flags();
            json!({
                "name": n.name,
                "hostname": n.name,
                "address": n.addr,
                "state": state,
                "cpus": n.cpus,
                "alloc_cpus": n.cpus_alloc,
                "alloc_idle_cpus": n.cpus.saturating_sub(n.cpus_alloc),
                "real_memory": n.memory_mb,
                "alloc_memory": n.memory_alloc_mb,
                "gres": gres(n).replace("(null)", ""),
                "gres_used": gres_used(n).replace("(null)", ""),
                "partitions": n.partitions,
                "reason": n.reason,
                "reason_changed_at": n.reason_time,
                "reason_set_by_user": n.reason_uid,
                "boot_time": n.boot_time,
                "last_busy": n.last_heartbeat,
                "features": n.features,
            })
        })
        .collect();
    let partitions: Vec<serde_json::Value> = parts
        .iter()
        .filter(|p| opts.partitions.is_empty() || opts.partitions.contains(&p.name))
        .map(|p| {
            json!({
                "name": p.name,
                "nodes": { "configured": p.nodes, "total": p.total_nodes },
                "cpus": { "total": p.total_cpus },
                "default": p.is_default,
                "state": [p.state],
                "maximums": { "time": (p.max_time_min > 0).then_some(p.max_time_min), "nodes": p.max_nodes },
                "defaults": { "time": (p.default_time_min > 0).then_some(p.default_time_min) },
            })
        })
        .collect();
    json!({ "nodes": nodes, "partitions": partitions, "errors": [], "warnings": [] })
}

pub fn run(args: &[String]) -> ExitCode {
    let opts = match args::parse_printing_warnings(|w| parse_args(args, &args::env_var, w)) {
        Ok(o) => o,
        Err(code) => return code,
    };
    if let Some(dump) = &opts.verbose_dump {
        print!("{dump}");
    }
    let cluster = client::cluster_name();
    let rt = client::runtime();
    if opts.reservations {
        return match calls::query(&rt, "sinfo", |mut c| async move {
            Ok(c.list_reservations(proto::v1::ListReservationsRequest {})
                .await?
                .into_inner()
                .reservations)
        }) {
            Ok(list) => {
                print!(
                    "{}",
                    super::reservation::render_sinfo(&list, !opts.noheader)
                );
                ExitCode::SUCCESS
            }
            Err(code) => code,
        };
    }
    loop {
        let (parts, nodes) = match calls::query(&rt, "sinfo", |mut c| async move {
            let parts = c.list_partitions(ListPartitionsRequest {}).await?;
            let nodes = c.list_nodes(ListNodesRequest { names: Vec::new() }).await?;
            Ok((parts.into_inner().partitions, nodes.into_inner().nodes))
        }) {
            Ok(r) => r,
            Err(code) => return code,
        };
        if let Err(e) = nodes::check_node_states("sinfo", &nodes) {
            return e.finish();
        }
        let now = times::now();
        let names = Names::resolve(
            nodes
                .iter()
                .filter(|n| n.reason_time > 0)
                .map(|n| n.reason_uid),
            [],
        );
        let ctx = Ctx {
            now,
            names,
            cluster: cluster.clone(),
            partition_tiers: Default::default(),
            sizes: Default::default(),
        };
        let text = render(&opts, &parts, &nodes, &ctx);
        if !args::print_round(opts.iterate, opts.long, opts.noheader, now, &text) {
            return ExitCode::SUCCESS;
        }
    }
}

const USAGE: &str = "\
Usage: sinfo [-adelNRrsTv] [-i seconds] [-t states] [-p partition] [-n nodes]
             [-S fields] [-o format] [-O Format] [--json]
";

const HELP: &str = "\
Usage: sinfo [OPTIONS]
  -a, --all                  show all partitions (including hidden and those
                             not accessible)
  -d, --dead                 show only non-responding nodes
  -e, --exact                group nodes only on exact match of configuration
  -h, --noheader             no headers on output
  --hide                     do not show hidden or non-accessible partitions
  -i, --iterate=seconds      specify an iteration period
      --json                 produce JSON output
  -l, --long                 long output - displays more information
  -M, --clusters=names       clusters to issue commands to (ignored)
  -n, --nodes=NODES          report on specific node(s)
  -N, --Node                 Node-centric format
  -o, --format=format        format specification
  -O, --Format=format        long format specification
  -p, --partition=PARTITION  report on specific partition
  -r, --responding           report only responding nodes
  -R, --list-reasons         list reason nodes are down or drained
  -s, --summarize            report state summary only
  -S, --sort=fields          comma separated list of fields to sort on
  -t, --states=node_state    specify the what states of nodes to view
  -T, --reservation          show only reservation information
  -v, --verbose              verbosity level
  -V, --version              output version information and exit

Help options:
  --help                     show this help message
  --usage                    display brief usage message
";

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn parse(args: &[&str]) -> Result<Options, Exit> {
        parse_args(&s(args), &|_| None, &mut Vec::new())
    }

    fn node(name: &str, state: &str, alloc: u32, parts: &[&str]) -> NodeInfo {
        NodeInfo {
            name: name.into(),
            addr: format!("127.0.0.1:{}", 7000 + name.len()),
            health: proto::v1::NodeHealth::Up as i32,
            drain: state.starts_with("DRAIN"),
            responding: true,
            allocation: match (state, alloc) {
                (_, 0) => proto::v1::NodeAllocation::Idle,
                (_, 8) => proto::v1::NodeAllocation::Allocated,
                _ => proto::v1::NodeAllocation::Mixed,
            } as i32,
            cpus: 8,
            cpus_alloc: alloc,
            memory_mb: 32768,
            gpus: 4,
            gpus_alloc: alloc / 2,
            gpu_type: "h100".into(),
            gres: vec![proto::v1::GpuGres {
                gpu_type: "h100".into(),
                count: 4,
                alloc: alloc / 2,
            }],
            partitions: parts.iter().map(|p| p.to_string()).collect(),
            ..Default::default()
        }
    }

    fn part(name: &str, nodes: &str, default: bool, max: u32) -> PartitionInfo {
        PartitionInfo {
            name: name.into(),
            nodes: nodes.into(),
            is_default: default,
            max_time_min: max,
            state: "UP".into(),
            ..Default::default()
        }
    }

    fn cluster() -> (Vec<PartitionInfo>, Vec<NodeInfo>) {
        let parts = vec![
            part("gpu", "gpu[01-04]", true, 1440),
            part("debug", "gpu04", false, 0),
            part("empty", "", false, 30),
        ];
        let mut drained = node("gpu03", "DRAINED", 0, &["gpu"]);
        drained.reason = "bad fan".into();
        drained.reason_time = 1_700_000_000;
        drained.reason_uid = 0;
        let nodes = vec![
            node("gpu01", "MIXED", 4, &["gpu"]),
            node("gpu02", "MIXED", 2, &["gpu"]),
            drained,
            node("gpu04", "IDLE", 0, &["gpu", "debug"]),
        ];
        (parts, nodes)
    }

    fn ctx() -> Ctx {
        let mut names = Names::default();
        names.users.insert(0, "root".into());
        Ctx {
            now: 1_800_000_000,
            names,
            cluster: "drover".into(),
            partition_tiers: Default::default(),
            sizes: Default::default(),
        }
    }

    fn out(args: &[&str]) -> String {
        let (parts, nodes) = cluster();
        render(&parse(args).unwrap(), &parts, &nodes, &ctx())
    }

    #[test]
    fn default_output() {
        let want = [
            "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST",
            "gpu*         up 1-00:00:00      2    mix gpu[01-02]",
            "gpu*         up 1-00:00:00      1  drain gpu03",
            "gpu*         up 1-00:00:00      1   idle gpu04",
            "debug        up   infinite      1   idle gpu04",
            "empty        up      30:00      0    n/a ",
        ];
        assert_eq!(out(&[]), want.join("\n") + "\n");
    }

    #[test]
    fn snakemake_partition_query() {
        assert_eq!(out(&["-o", "%P"]), "PARTITION\ngpu*\ndebug\nempty\n");
        let (p, n) = cluster();
        let opts = parse(&["-o", "%P", "-p", "debug"]).unwrap();
        assert_eq!(render(&opts, &p, &n, &ctx()), "PARTITION\ndebug\n");
    }

    #[test]
    fn node_oriented() {
        let want = [
            "NODELIST   NODES PARTITION STATE ",
            "gpu01          1 gpu*      mix   ",
            "gpu02          1 gpu*      mix   ",
            "gpu03          1 gpu*      drain ",
            "gpu04          1 gpu*      idle  ",
            "gpu04          1 debug     idle  ",
        ];
        assert_eq!(out(&["-N"]), want.join("\n") + "\n");
        assert_eq!(
            out(&["-N", "-h", "-o", "%N %T %C %G", "-p", "gpu", "-t", "mix"]),
            "gpu01 mixed 4/4/0/8 gpu:h100:4\ngpu02 mixed 2/6/0/8 gpu:h100:4\n"
        );
        // S:C:T as `scontrol show node` counts them.
        assert_eq!(
            out(&["-N", "-h", "-n", "gpu01", "-o", "%z %X %Y %Z"]),
            "8:1:1 8 1 1\n"
        );
    }

    #[test]
    fn summarize_reasons_and_cpu_states() {
        let want = [
            "PARTITION AVAIL  TIMELIMIT   NODES(A/I/O/T)  NODELIST",
            "gpu*         up 1-00:00:00          2/1/1/4  gpu[01-04]",
            "debug        up   infinite          0/1/0/1  gpu04",
            "empty        up      30:00          0/0/0/0  ",
        ];
        assert_eq!(out(&["-s"]), want.join("\n") + "\n");
        let reasons = out(&["-R"]);
        let want = format!(
            "REASON               USER      TIMESTAMP           NODELIST\nbad fan              root      {:19} gpu03\n",
            times::format_time(1_700_000_000)
        );
        assert_eq!(reasons, want);
        assert_eq!(
            out(&["-h", "-o", "%P %C %F"]),
            "gpu* 6/18/8/32 2/1/1/4\ndebug 0/8/0/8 0/1/0/1\nempty 0/0/0/0 0/0/0/0\n"
        );
    }

    #[test]
    fn filters_states_and_gres() {
        assert_eq!(
            out(&["-h", "-o", "%R %t %D", "-t", "idle,drain"]),
            "gpu drain 1\ngpu idle 1\ndebug idle 1\n"
        );
        assert_eq!(
            out(&["-h", "-o", "%N", "-n", "gpu[03-04]", "-p", "gpu"]),
            "gpu[03-04]\n"
        );
        assert_eq!(
            out(&["-h", "-o", "%20P|%.6c|%m|%G|%E|%f", "-p", "debug"]),
            "debug               |     8|32768|gpu:h100:4|none|(null)\n"
        );
        let mut nodes = cluster().1;
        nodes[0].health = proto::v1::NodeHealth::Down as i32;
        nodes[0].responding = false;
        let opts = parse(&["-h", "-o", "%N %t %T", "-d"]).unwrap();
        assert_eq!(
            render(&opts, &cluster().0, &nodes, &ctx()),
            "gpu01 down* down*\n"
        );
        let e = parse(&["-t", "sleepy"]).unwrap_err();
        assert_eq!(
            (e.code, e.stderr.as_str()),
            (1, "sinfo: error: Invalid node state specified: sleepy\n")
        );
    }

    #[test]
    fn long_and_format_names() {
        let text = out(&["-l", "-p", "debug"]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(
            lines[1],
            "PARTITION AVAIL  TIMELIMIT   JOB_SIZE ROOT OVERSUBS     GROUPS  NODES       STATE NODELIST"
        );
        assert_eq!(
            lines[2],
            "debug        up   infinite 1-infinite   no       NO        all      1        idle gpu04"
        );
        assert_eq!(
            out(&[
                "-h",
                "-O",
                "PartitionName:8,Nodes:.4,StateLong:9,NodeList:0",
                "-p",
                "gpu"
            ]),
            "gpu        2mixed    gpu[01-02]\ngpu        1drained  gpu03\ngpu        1idle     gpu04\n"
        );
    }

    #[test]
    fn errors_and_json() {
        let e = parse(&["--bogus"]).unwrap_err();
        assert_eq!(
            e.stderr,
            "sinfo: unrecognized option '--bogus'\nTry \"sinfo --help\" for more information\n"
        );
        assert_eq!(parse(&["x"]).unwrap_err().code, 1);
        assert!(parse(&["-a", "-e", "--hide", "-M", "all", "-S", "P"]).is_ok());
        let text = out(&["--json"]);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["nodes"].as_array().unwrap().len(), 4);
        assert_eq!(v["nodes"][2]["state"], json!(["IDLE", "DRAIN"]));
        assert_eq!(v["partitions"][0]["default"], true);
    }

    #[test]
    fn verbose_prints_the_options_as_slurm_does() {
        let dump = parse(&["-v", "-p", "debug"]).unwrap().verbose_dump.unwrap();
        let lines: Vec<&str> = dump.lines().collect();
        assert_eq!(lines.first(), Some(&"-----------------------------"));
        for line in [
            "dead        = false",
            "filtering   = true",
            "format      = %#P %.5a %.10l %.6D %.6t %N",
            "iterate     = 0",
            "partition   = debug",
            "nodes       = n/a",
            "verbose     = 1",
        ] {
            assert!(lines.contains(&line), "{line:?} in\n{dump}");
        }
        assert_eq!(parse(&[]).unwrap().verbose_dump, None);
    }

    #[test]
    fn the_partition_comes_from_sinfo_partition_unless_given() {
        let env = |name: &str| (name == "SINFO_PARTITION").then(|| "gpu".to_string());
        let o = parse_args(&s(&[]), &env, &mut Vec::new()).unwrap();
        assert_eq!(o.partitions, ["gpu"]);
        let o = parse_args(&s(&["-p", "debug"]), &env, &mut Vec::new()).unwrap();
        assert_eq!(o.partitions, ["debug"]);
        let o = parse_args(&s(&["-a"]), &env, &mut Vec::new()).unwrap();
        assert!(o.partitions.is_empty());
    }

    #[test]
    fn all_and_a_partition_conflict_as_options_and_as_variables() {
        let none = |_: &str| None;
        let e = parse_args(&s(&["-a", "-p", "debug"]), &none, &mut Vec::new()).unwrap_err();
        assert!(
            format!("{e:?}").contains("Conflicting options, -a and -p"),
            "{e:?}"
        );
        let both =
            |name: &str| matches!(name, "SINFO_ALL" | "SINFO_PARTITION").then(|| "gpu".to_string());
        let e = parse_args(&s(&[]), &both, &mut Vec::new()).unwrap_err();
        assert!(
            format!("{e:?}").contains("Conflicting options, SINFO_ALL and SINFO_PARTITION"),
            "{e:?}"
        );
    }
}
