//! Node feature constraints (`sbatch -C/--constraint`), in Slurm's syntax: features
//! joined by `&` (AND; `,` is accepted for AND too) and `|` (OR), grouped with
//! parentheses; `[...]` groups like parentheses.
//!
//! Worked example: nodes n1 `[a100, ib]`, n2 `[h100, ib]`, n3 `[h100]`.
//!
//! ```text
//!   -C h100             n2, n3
//!   -C "h100&ib"        n2
//!   -C "a100|h100"      n1, n2, n3
//!   -C "(a100|h100)&ib" n1, n2
//!   -C "a100&h100"      none: the submit is refused
//! ```
//!
//! `&` binds tighter than `|` (`a|b&c` is `a|(b&c)`); write parentheses when mixing
//! them. Slurm's node counts (`[a*2&b*4]`) and matching OR across the nodes of a
//! multi-node job are not supported: a bracket is a plain group, checked per node.

use std::collections::BTreeSet;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid constraint `{text}`: {message}")]
pub struct ConstraintError {
    pub text: String,
    pub message: String,
}

/// A parsed constraint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Constraint {
    Feature(String),
    And(Vec<Constraint>),
    Or(Vec<Constraint>),
}

impl Constraint {
    /// Parses `-C`'s text. An empty text is an error: the caller treats "no
    /// constraint" separately.
    pub fn parse(text: &str) -> Result<Constraint, ConstraintError> {
        let err = |message: String| ConstraintError {
            text: text.to_string(),
            message,
        };
        let tokens = tokenize(text).map_err(err)?;
        let mut parser = Parser { tokens, at: 0 };
        let c = parser.or().map_err(err)?;
        if parser.at != parser.tokens.len() {
            return Err(err(format!(
                "unexpected `{}`",
                parser.tokens[parser.at].text()
            )));
        }
        Ok(c)
    }

    /// Does a node with these features satisfy it?
    pub fn matches(&self, features: &[String]) -> bool {
        match self {
            Constraint::Feature(f) => features.iter().any(|n| n == f),
            Constraint::And(all) => all.iter().all(|c| c.matches(features)),
            Constraint::Or(any) => any.iter().any(|c| c.matches(features)),
        }
    }

    /// Whether `word` is one feature name (what a node may have), not an expression.
    pub fn is_feature_name(word: &str) -> bool {
        matches!(Constraint::parse(word), Ok(Constraint::Feature(f)) if f == word)
    }

    /// Every feature it names.
    pub fn features(&self) -> BTreeSet<&str> {
        let mut out = BTreeSet::new();
        self.collect(&mut out);
        out
    }

    fn collect<'a>(&'a self, out: &mut BTreeSet<&'a str>) {
        match self {
            Constraint::Feature(f) => {
                out.insert(f);
            }
            Constraint::And(v) | Constraint::Or(v) => v.iter().for_each(|c| c.collect(out)),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Name(String),
    And,
    Or,
    Open(char),
    Close(char),
}

impl Token {
    fn text(&self) -> String {
        match self {
            Token::Name(n) => n.clone(),
            Token::And => "&".into(),
            Token::Or => "|".into(),
            Token::Open(c) | Token::Close(c) => c.to_string(),
        }
    }
}

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut name = String::new();
    let flush = |name: &mut String, out: &mut Vec<Token>| {
        if !name.is_empty() {
            out.push(Token::Name(std::mem::take(name)));
        }
    };
    for c in text.chars() {
        match c {
            '&' | ',' => {
                flush(&mut name, &mut out);
                out.push(Token::And);
            }
            '|' => {
                flush(&mut name, &mut out);
                out.push(Token::Or);
            }
            '(' | '[' => {
                flush(&mut name, &mut out);
                out.push(Token::Open(c));
            }
            ')' | ']' => {
                flush(&mut name, &mut out);
                out.push(Token::Close(c));
            }
            '*' => return Err("feature counts (`feature*N`) are not supported".into()),
            c if c.is_whitespace() => {
                return Err("features may not contain spaces".into());
            }
            c if c.is_alphanumeric() || "_-.:+=/@".contains(c) => name.push(c),
            c => return Err(format!("unexpected `{c}`")),
        }
    }
    flush(&mut name, &mut out);
    if out.is_empty() {
        return Err("empty constraint".into());
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn or(&mut self) -> Result<Constraint, String> {
        let mut any = vec![self.and()?];
        while self.peek() == Some(&Token::Or) {
            self.at += 1;
            any.push(self.and()?);
        }
        Ok(if any.len() == 1 {
            any.remove(0)
        } else {
            Constraint::Or(any)
        })
    }

    fn and(&mut self) -> Result<Constraint, String> {
        let mut all = vec![self.atom()?];
        while self.peek() == Some(&Token::And) {
            self.at += 1;
            all.push(self.atom()?);
        }
        Ok(if all.len() == 1 {
            all.remove(0)
        } else {
            Constraint::And(all)
        })
    }

    fn atom(&mut self) -> Result<Constraint, String> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        match token {
            Some(Token::Name(n)) => Ok(Constraint::Feature(n)),
            Some(Token::Open(open)) => {
                let inner = self.or()?;
                let close = if open == '(' { ')' } else { ']' };
                match self.tokens.get(self.at) {
                    Some(Token::Close(c)) if *c == close => {
                        self.at += 1;
                        Ok(inner)
                    }
                    _ => Err(format!("missing `{close}`")),
                }
            }
            Some(t) => Err(format!("expected a feature before `{}`", t.text())),
            None => Err("expected a feature at the end".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feats(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_worked_example() {
        let nodes = [
            ("n1", feats(&["a100", "ib"])),
            ("n2", feats(&["h100", "ib"])),
            ("n3", feats(&["h100"])),
        ];
        let pick = |text: &str| -> Vec<&str> {
            let c = Constraint::parse(text).unwrap();
            nodes
                .iter()
                .filter(|(_, f)| c.matches(f))
                .map(|(n, _)| *n)
                .collect()
        };
        assert_eq!(pick("h100"), ["n2", "n3"]);
        assert_eq!(pick("h100&ib"), ["n2"]);
        assert_eq!(pick("h100,ib"), ["n2"]);
        assert_eq!(pick("a100|h100"), ["n1", "n2", "n3"]);
        assert_eq!(pick("(a100|h100)&ib"), ["n1", "n2"]);
        assert_eq!(pick("[a100|h100]&ib"), ["n1", "n2"]);
        assert_eq!(pick("a100|h100&ib"), ["n1", "n2"]);
        assert!(pick("a100&h100").is_empty());
    }

    #[test]
    fn features_named() {
        let c = Constraint::parse("(a|b)&c").unwrap();
        assert_eq!(
            c.features().into_iter().collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
    }

    #[test]
    fn bad_syntax_is_an_error() {
        for (text, want) in [
            ("", "empty"),
            ("a&", "at the end"),
            ("&a", "before `&`"),
            ("(a|b", "missing `)`"),
            ("[a|b)", "missing `]`"),
            ("a)", "unexpected `)`"),
            ("a*2", "counts"),
            ("a b", "spaces"),
            ("a;b", "unexpected `;`"),
        ] {
            let e = Constraint::parse(text).unwrap_err();
            assert!(e.message.contains(want), "{text}: {e}");
        }
    }
}
