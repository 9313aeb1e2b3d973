//! Where a config value is written: the line of a key path in the file, from the spans
//! the toml crate keeps while parsing, so that every error names `file:line`.
//!
//! ```text
//! 1  [[nodes]]
//! 2  names = "n1"
//! 3  [[nodes]]
//! 4  names = "n[2-x]"     <- nodes[1].names is line 4
//! 5  cpus = 0             <- nodes[1].cpus is line 5; nodes[1].memory, not set, is
//!                            the entry's `[[nodes]]` header, line 3
//! ```

use std::ops::Range;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// One step from the top of the file: a key of a table or an index of an array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Key(&'static str),
    Index(usize),
}

/// A value's place in the config: `nodes[1].memory` is `KeyPath::top().key("nodes")
/// .index(1).key("memory")`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct KeyPath(Vec<Step>);

impl KeyPath {
    /// The file itself.
    pub fn top() -> KeyPath {
        KeyPath::default()
    }

    pub fn key(&self, key: &'static str) -> KeyPath {
        let mut next = self.clone();
        next.0.push(Step::Key(key));
        next
    }

    pub fn index(&self, index: usize) -> KeyPath {
        let mut next = self.clone();
        next.0.push(Step::Index(index));
        next
    }

    /// The last key on the path: what an error names (`memory`, `preempt`).
    pub fn last_key(&self) -> Option<&'static str> {
        self.0.iter().rev().find_map(|s| match s {
            Step::Key(k) => Some(*k),
            Step::Index(_) => None,
        })
    }
}

/// The parsed file with its spans.
pub(super) struct Located<'a> {
    text: &'a str,
    doc: Option<Spanned<DeTable<'a>>>,
}

impl<'a> Located<'a> {
    pub fn new(text: &'a str) -> Located<'a> {
        Located {
            text,
            doc: DeTable::parse(text).ok(),
        }
    }

    /// The line a byte offset is on (1-based).
    pub fn line_at(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1
    }

    /// How far `path` is present: the number of its steps the file has, and the span of
    /// the deepest of them (the whole file when none is).
    fn reach(&self, path: &KeyPath) -> (usize, Range<usize>) {
        let Some(doc) = &self.doc else {
            return (0, 0..0);
        };
        let mut span = doc.span();
        let mut table = Some(doc.get_ref());
        let mut value: Option<&DeValue> = None;
        for (depth, step) in path.0.iter().enumerate() {
            let next = match (step, table, value) {
                (Step::Key(k), Some(t), _) => t.get(*k),
                (_, None, Some(v)) => match step {
                    Step::Key(k) => v.get(*k),
                    Step::Index(i) => v.get(*i),
                },
                _ => None,
            };
            let Some(next) = next else {
                return (depth, span);
            };
            span = next.span();
            table = None;
            value = Some(next.get_ref());
        }
        (path.0.len(), span)
    }

    /// Is every step of `path` in the file?
    pub fn has(&self, path: &KeyPath) -> bool {
        self.reach(path).0 == path.0.len()
    }

    /// The line of `path`'s value, or of the deepest table on it that the file has
    /// (an entry's `[[nodes]]` header for a key the entry leaves out); 1 when the file
    /// has none of it.
    pub fn line_of(&self, path: &KeyPath) -> usize {
        self.line_at(self.reach(path).1.start)
    }

    /// The key whose value starts at `offset`, for the toml crate's own errors, which
    /// point at a value without naming its key.
    pub fn key_of_value_at(&self, offset: usize) -> Option<String> {
        fn search(value: &Spanned<DeValue>, key: Option<&str>, offset: usize) -> Option<String> {
            match value.get_ref() {
                DeValue::Table(t) => t
                    .iter()
                    .find_map(|(k, v)| search(v, Some(k.get_ref()), offset)),
                DeValue::Array(a) if value.span().start != offset => {
                    a.iter().find_map(|v| search(v, key, offset)).or_else(|| {
                        key.filter(|_| value.span().contains(&offset))
                            .map(String::from)
                    })
                }
                _ => key
                    .filter(|_| value.span().start == offset)
                    .map(String::from),
            }
        }
        let doc = self.doc.as_ref()?;
        doc.get_ref()
            .iter()
            .find_map(|(k, v)| search(v, Some(k.get_ref()), offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "cluster_name = \"x\"\n[[nodes]]\nnames = \"n1\"\n[[nodes]]\n\
                        names = \"n2\"\nfeatures = [\n  \"a\",\n  \"b\",\n]\n[controller]\n";

    #[test]
    fn lines_of_paths() {
        let at = Located::new(TEXT);
        let nodes = KeyPath::top().key("nodes");
        assert_eq!(at.line_of(&KeyPath::top().key("cluster_name")), 1);
        assert_eq!(at.line_of(&nodes.index(0).key("names")), 3);
        assert_eq!(at.line_of(&nodes.index(1).key("names")), 5);
        assert_eq!(at.line_of(&nodes.index(1).key("features").index(1)), 8);
        // Not set: the entry's header; the section's header; the file's first line.
        assert_eq!(at.line_of(&nodes.index(1).key("cpus")), 4);
        assert_eq!(
            at.line_of(&KeyPath::top().key("controller").key("addr")),
            10
        );
        assert_eq!(
            at.line_of(&KeyPath::top().key("scheduler").key("policy")),
            1
        );
        assert!(at.has(&nodes.index(1).key("features")));
        assert!(!at.has(&nodes.index(2)));
        assert_eq!(
            nodes.index(1).key("features").index(0).last_key(),
            Some("features")
        );
    }

    #[test]
    fn key_of_a_value() {
        let at = Located::new(TEXT);
        let offset = |s: &str| TEXT.find(s).unwrap();
        assert_eq!(
            at.key_of_value_at(offset("\"x\"")).as_deref(),
            Some("cluster_name")
        );
        assert_eq!(
            at.key_of_value_at(offset("\"n2\"")).as_deref(),
            Some("names")
        );
        assert_eq!(
            at.key_of_value_at(offset("\"b\"")).as_deref(),
            Some("features")
        );
        assert_eq!(
            at.key_of_value_at(offset("[\n")).as_deref(),
            Some("features")
        );
    }
}
