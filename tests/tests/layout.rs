//! The layout's invariants (`docs/ARCHITECTURE.md`, "Invariants"), enforced over
//! `cargo metadata` and over the sources:
//!
//! - `model` and `sched` reach, through normal dependencies, no crate that does IO
//!   (`IO_CRATES`) and no other crate of the workspace (`sched` may use `model`);
//! - only `proto` depends on prost and the code generators, and only `proto` defines
//!   wire types: no other crate derives prost's traits or names prost outside its tests;
//! - only `ctld` depends on sled, and only `ctld/src/store/` names it.
//!
//! A failure names the crate and the way the dependency came in, or the file and line.
//! Were `model` to depend on a crate `foo` that depends on `tokio`, the first test
//! would fail with `model -> foo -> tokio`. Clocks, files, processes, the environment
//! and hashed collections inside `model` and `sched` are clippy's to refuse
//! (`model/clippy.toml`, which `sched/clippy.toml` links to).

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Crates that do IO, read the clock or the system's randomness, or make system calls:
/// none may be reached from `model` or `sched` through normal dependencies.
const IO_CRATES: &[&str] = &[
    "tokio",
    "tonic",
    "tonic-prost",
    "prost",
    "sled",
    "hyper",
    "h2",
    "mio",
    "socket2",
    "libc",
    "nix",
    "rustix",
    "getrandom",
    "tempfile",
    "memmap2",
    "tracing-subscriber",
];

/// The wire format's crates: only `proto` may depend on them. Other crates' tests may
/// take `prost` as a dev-dependency, to encode and decode `proto`'s messages by hand.
const WIRE_CRATES: &[&str] = &[
    "prost",
    "prost-build",
    "tonic-prost",
    "tonic-prost-build",
    "protox",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum DepKind {
    Normal,
    Dev,
    Build,
}

impl DepKind {
    fn name(self) -> &'static str {
        match self {
            DepKind::Normal => "normal",
            DepKind::Dev => "dev",
            DepKind::Build => "build",
        }
    }
}

/// The resolved dependency graph of the workspace (`cargo metadata`'s `resolve`),
/// keyed by package id.
struct Graph {
    root: PathBuf,
    names: BTreeMap<String, String>,
    /// The workspace's crates: name → directory.
    members: BTreeMap<String, PathBuf>,
    member_ids: BTreeMap<String, String>,
    edges: BTreeMap<String, Vec<(String, BTreeSet<DepKind>)>>,
}

impl Graph {
    /// The workspace's graph, from `cargo metadata` (run once for all the tests).
    fn workspace() -> &'static Graph {
        static GRAPH: OnceLock<Graph> = OnceLock::new();
        GRAPH.get_or_init(Graph::load)
    }

    fn load() -> Graph {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let out = std::process::Command::new(cargo)
            .args(["metadata", "--format-version", "1", "--manifest-path"])
            .arg(&manifest)
            .output()
            .expect("run cargo metadata");
        assert!(
            out.status.success(),
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Graph::from_metadata(&serde_json::from_slice(&out.stdout).expect("metadata is JSON"))
    }

    fn from_metadata(metadata: &Value) -> Graph {
        let text = |v: &Value| v.as_str().expect("a string").to_string();
        let mut names = BTreeMap::new();
        let mut dirs = BTreeMap::new();
        for package in metadata["packages"].as_array().expect("packages") {
            let id = text(&package["id"]);
            let manifest = PathBuf::from(text(&package["manifest_path"]));
            dirs.insert(id.clone(), manifest.parent().unwrap().to_path_buf());
            names.insert(id, text(&package["name"]));
        }
        let mut members = BTreeMap::new();
        let mut member_ids = BTreeMap::new();
        for id in metadata["workspace_members"].as_array().expect("members") {
            let id = text(id);
            members.insert(names[&id].clone(), dirs[&id].clone());
            member_ids.insert(names[&id].clone(), id);
        }
        let mut edges = BTreeMap::new();
        for node in metadata["resolve"]["nodes"].as_array().expect("resolve") {
            let deps = node["deps"].as_array().expect("deps");
            let deps = deps.iter().map(|dep| {
                let kinds = dep["dep_kinds"].as_array().expect("dep_kinds").iter();
                let kinds = kinds.map(|k| match k["kind"].as_str() {
                    None => DepKind::Normal,
                    Some("dev") => DepKind::Dev,
                    Some("build") => DepKind::Build,
                    Some(other) => panic!("unknown dependency kind `{other}`"),
                });
                (text(&dep["pkg"]), kinds.collect())
            });
            edges.insert(text(&node["id"]), deps.collect());
        }
        Graph {
            root: PathBuf::from(text(&metadata["workspace_root"])),
            names,
            members,
            member_ids,
            edges,
        }
    }

    /// Every package `member` reaches through normal dependencies, each with the
    /// shortest chain of crate names leading to it (`model -> imbl -> ...`).
    fn normal_closure(&self, member: &str) -> BTreeMap<String, Vec<String>> {
        let start = &self.member_ids[member];
        let mut chains = BTreeMap::from([(start.clone(), vec![member.to_string()])]);
        let mut queue = VecDeque::from([start.clone()]);
        while let Some(id) = queue.pop_front() {
            for (dep, kinds) in self.edges.get(&id).into_iter().flatten() {
                if kinds.contains(&DepKind::Normal) && !chains.contains_key(dep) {
                    let mut chain = chains[&id].clone();
                    chain.push(self.names[dep].clone());
                    chains.insert(dep.clone(), chain);
                    queue.push_back(dep.clone());
                }
            }
        }
        chains.remove(start);
        chains
    }

    /// The IO crates and the workspace's crates (but `allowed`) that `member` reaches.
    fn impurities(&self, member: &str, allowed: &[&str]) -> Vec<String> {
        let workspace: BTreeSet<&String> = self.member_ids.values().collect();
        self.normal_closure(member)
            .into_iter()
            .filter(|(id, _)| {
                let name = self.names[id].as_str();
                IO_CRATES.contains(&name) || (workspace.contains(id) && !allowed.contains(&name))
            })
            .map(|(_, chain)| chain.join(" -> "))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// Direct dependencies on any of `crates` by workspace crates other than `owner`,
    /// leaving out the dev-dependencies `dev_allowed` names.
    fn dependents(&self, crates: &[&str], owner: &str, dev_allowed: &[&str]) -> Vec<String> {
        let mut found = Vec::new();
        for (member, id) in &self.member_ids {
            if member == owner {
                continue;
            }
            for (dep, kinds) in &self.edges[id] {
                let name = self.names[dep].as_str();
                let kinds: Vec<&str> = kinds
                    .iter()
                    .filter(|k| !(**k == DepKind::Dev && dev_allowed.contains(&name)))
                    .map(|k| k.name())
                    .collect();
                if crates.contains(&name) && !kinds.is_empty() {
                    found.push(format!("{member} depends on {name} ({})", kinds.join(", ")));
                }
            }
        }
        found
    }
}

/// One `.rs` file of a workspace crate.
struct Source {
    krate: String,
    /// Relative to the workspace root.
    path: PathBuf,
    /// Relative to the crate's directory.
    in_crate: PathBuf,
    text: String,
}

/// Every `.rs` file of the workspace's crates but this one (whose patterns would match
/// themselves), outside `target/` and hidden directories.
fn sources(graph: &Graph) -> Vec<Source> {
    fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("directory entry").path())
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().unwrap().to_string_lossy();
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    walk(&path, files);
                }
            } else if name.ends_with(".rs") {
                files.push(path);
            }
        }
    }
    let this_file = graph.root.join(file!());
    let mut found = Vec::new();
    for (krate, dir) in &graph.members {
        let mut files = Vec::new();
        walk(dir, &mut files);
        for path in files.into_iter().filter(|p| *p != this_file) {
            found.push(Source {
                krate: krate.clone(),
                text: std::fs::read_to_string(&path).expect("read source"),
                in_crate: path.strip_prefix(dir).unwrap().to_path_buf(),
                path: path.strip_prefix(&graph.root).unwrap().to_path_buf(),
            });
        }
    }
    assert!(found.len() > 50, "found only {} sources", found.len());
    found
}

/// A line of code (comment lines left out): its number, text, and whether it is test
/// code. Test code is a file under `tests/`, `benches/` or `examples/`, a `tests.rs` or
/// `*_tests.rs`, or a `#[cfg(test)] mod name {` block, up to the `}` that closes it in
/// column 0 (as rustfmt writes it).
fn code_lines<'a>(in_crate: &Path, text: &'a str) -> Vec<(usize, &'a str, bool)> {
    let test_file = in_crate.components().any(|c| {
        matches!(
            c.as_os_str().to_str(),
            Some("tests" | "benches" | "examples")
        )
    }) || in_crate
        .file_stem()
        .is_some_and(|s| s == "tests" || s.to_string_lossy().ends_with("_tests"));
    let (mut after_cfg_test, mut in_test_module) = (false, false);
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line == "#[cfg(test)]" {
            after_cfg_test = true;
        } else if after_cfg_test && !line.starts_with("#[") {
            in_test_module = line.starts_with("mod ") && line.ends_with('{');
            after_cfg_test = false;
        }
        if !line.trim_start().starts_with("//") {
            lines.push((i + 1, line, test_file || after_cfg_test || in_test_module));
        }
        if in_test_module && line == "}" {
            in_test_module = false;
        }
    }
    lines
}

/// Whether `line` has the path segment `word::` (not the end of a longer name).
fn names_path(line: &str, word: &str) -> bool {
    let pattern = format!("{word}::");
    line.match_indices(&pattern).any(|(at, _)| {
        !line[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// Lines that touch sled outside `ctld/src/store/`.
fn sled_outside_the_store(source: &Source) -> Vec<String> {
    if source.path.starts_with("ctld/src/store") {
        return Vec::new();
    }
    code_lines(&source.in_crate, &source.text)
        .into_iter()
        .filter(|(_, line, _)| {
            let t = line.trim_start();
            names_path(line, "sled") || t.starts_with("use sled") || t.contains("crate sled")
        })
        .map(|(n, line, _)| format!("{}:{n}: {}", source.path.display(), line.trim()))
        .collect()
}

/// Lines outside `proto` that define a wire type (prost's derives, its field
/// attributes, an impl of its `Message`), or that name prost outside test code.
fn wire_types_outside_proto(source: &Source) -> Vec<String> {
    if source.krate == "proto" {
        return Vec::new();
    }
    let mut found = Vec::new();
    // A derive list rustfmt spread over several lines is read up to its `)]`.
    let mut derive: Option<(usize, String)> = None;
    for (n, line, test) in code_lines(&source.in_crate, &source.text) {
        let t = line.trim_start();
        if t.starts_with("#[derive(") {
            derive = Some((n, String::new()));
        }
        if let Some((start, list)) = &mut derive {
            list.push_str(t);
            if list.contains(")]") {
                let prost = ["prost", "Message", "Oneof", "Enumeration"];
                if prost.iter().any(|w| list.contains(w)) {
                    found.push(format!("{}:{start}: {list}", source.path.display()));
                }
                derive = None;
            }
            continue;
        }
        let defines =
            t.starts_with("#[prost(") || (t.starts_with("impl") && t.contains("Message for"));
        if defines || (!test && names_path(line, "prost")) {
            found.push(format!("{}:{n}: {}", source.path.display(), t));
        }
    }
    found
}

fn assert_none(what: &str, found: Vec<String>) {
    assert!(found.is_empty(), "{what}:\n  {}", found.join("\n  "));
}

#[test]
fn model_and_sched_reach_no_io_crate_and_no_other_workspace_crate() {
    let graph = Graph::workspace();
    let mut found = graph.impurities("model", &[]);
    found.extend(graph.impurities("sched", &["model"]));
    assert_none(
        "the pure crates reach these through normal dependencies",
        found,
    );
}

#[test]
fn only_proto_depends_on_the_wire_format_crates() {
    let graph = Graph::workspace();
    assert_none(
        "wire types are proto's alone",
        graph.dependents(WIRE_CRATES, "proto", &["prost"]),
    );
}

#[test]
fn only_ctld_depends_on_sled() {
    let graph = Graph::workspace();
    assert_none(
        "sled is ctld's store's alone",
        graph.dependents(&["sled"], "ctld", &[]),
    );
}

#[test]
fn only_the_store_names_sled() {
    let sources = sources(Graph::workspace());
    assert_none(
        "sled outside ctld/src/store/",
        sources.iter().flat_map(sled_outside_the_store).collect(),
    );
}

#[test]
fn only_proto_defines_wire_types() {
    let sources = sources(Graph::workspace());
    assert_none(
        "prost outside proto",
        sources.iter().flat_map(wire_types_outside_proto).collect(),
    );
}

/// The checks find what they look for, in a made-up workspace.
#[test]
fn the_checks_see_violations() {
    let id = |name: &str| format!("{name}#0.0.0");
    let package = |name: &str| {
        let manifest = format!("/w/{name}/Cargo.toml");
        serde_json::json!({"id": id(name), "name": name, "manifest_path": manifest})
    };
    let dep = |name: &str, kind: Option<&str>| {
        let kinds = serde_json::json!([{"kind": kind, "target": null}]);
        serde_json::json!({"name": name, "pkg": id(name), "dep_kinds": kinds})
    };
    let node = |name: &str, deps: Vec<Value>| serde_json::json!({"id": id(name), "deps": deps});
    let names = [
        "model", "sched", "proto", "cli", "noded", "foo", "tokio", "prost", "sled",
    ];
    let members = ["model", "sched", "proto", "cli", "noded"];
    let metadata = serde_json::json!({
        "workspace_root": "/w",
        "workspace_members": members.map(id),
        "packages": names.map(package),
        "resolve": {"nodes": [
            node("model", vec![dep("foo", None), dep("tokio", Some("dev"))]),
            node("sched", vec![dep("model", None), dep("cli", None)]),
            node("proto", vec![dep("prost", None)]),
            node("cli", vec![dep("prost", Some("dev")), dep("proto", None)]),
            node("noded", vec![dep("prost", None), dep("sled", Some("dev"))]),
            node("foo", vec![dep("tokio", None)]),
            node("tokio", vec![]),
            node("prost", vec![]),
            node("sled", vec![]),
        ]},
    });
    let graph = Graph::from_metadata(&metadata);
    assert_eq!(graph.impurities("model", &[]), ["model -> foo -> tokio"]);
    assert_eq!(
        graph.impurities("sched", &["model"]),
        [
            "sched -> cli",
            "sched -> cli -> proto",
            "sched -> cli -> proto -> prost",
            "sched -> model -> foo -> tokio",
        ]
    );
    assert_eq!(
        graph.dependents(WIRE_CRATES, "proto", &["prost"]),
        ["noded depends on prost (normal)"]
    );
    assert_eq!(
        graph.dependents(&["sled"], "ctld", &[]),
        ["noded depends on sled (dev)"]
    );

    let source = |krate: &str, in_crate: &str, text: &str| Source {
        krate: krate.to_string(),
        path: Path::new(krate).join(in_crate),
        in_crate: PathBuf::from(in_crate),
        text: text.to_string(),
    };
    let store = source("ctld", "src/store/sled.rs", "fn f(db: sled::Db) {}");
    assert!(sled_outside_the_store(&store).is_empty());
    let core = "use crate::store;\n// sled::Db is the store's\nfn f(t: &sled::Tree) {}\n";
    assert_eq!(
        sled_outside_the_store(&source("ctld", "src/core.rs", core)),
        ["ctld/src/core.rs:3: fn f(t: &sled::Tree) {}"]
    );
    let wire = "#[derive(\n    Clone,\n    prost::Message,\n)]\nstruct M {\n    #[prost(uint32, tag = \"1\")]\n    id: u32,\n}\n";
    assert_eq!(
        wire_types_outside_proto(&source("model", "src/job.rs", wire)),
        [
            "model/src/job.rs:1: #[derive(Clone,prost::Message,)]",
            "model/src/job.rs:6: #[prost(uint32, tag = \"1\")]",
        ]
    );
    let uses =
        "fn f() {}\n\n#[cfg(test)]\nmod tests {\n    use prost::Message;\n}\nuse prost::Message;\n";
    assert_eq!(
        wire_types_outside_proto(&source("cli", "src/connection.rs", uses)),
        ["cli/src/connection.rs:7: use prost::Message;"]
    );
    assert!(wire_types_outside_proto(&source("cli", "tests/wire.rs", uses)).is_empty());
    assert!(wire_types_outside_proto(&source("proto", "src/lib.rs", wire)).is_empty());
    assert!(!names_path("tonic_prost::ProstCodec", "prost"));
}
