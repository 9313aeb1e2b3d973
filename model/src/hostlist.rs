//! Slurm hostlist expressions, both ways.
//!
//! `gpu[01-03,07],login1` expands to `gpu01 gpu02 gpu03 gpu07 login1`, and folding
//! those names gives the expression back. Zero padding follows the lower bound's width
//! (`n[099-100]` is `n099 n100`); several bracket groups form a cartesian product
//! (`r[1-2]n[1-2]` is `r1n1 r1n2 r2n1 r2n2`), in Slurm's order with three or more.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostlistError {
    #[error("invalid hostlist `{0}`: unbalanced brackets")]
    Unbalanced(String),
    #[error("invalid hostlist `{0}`: bad range `{1}`")]
    BadRange(String, String),
    #[error("invalid hostlist `{0}`: more than {1} hosts")]
    TooLarge(String, usize),
}

const MAX_HOSTS: usize = 1 << 20;

/// Expands a hostlist expression into host names, in the order written.
pub fn expand(expr: &str) -> Result<Vec<String>, HostlistError> {
    let mut hosts = Vec::new();
    for item in split_top_level(expr)? {
        if item.is_empty() {
            continue;
        }
        // The item as text before each bracket, each bracket's values, and the tail.
        let mut prefixes = Vec::new();
        let mut brackets = Vec::new();
        let mut rest = item;
        while let Some(open) = rest.find('[') {
            let close = rest[open..]
                .find(']')
                .map(|i| i + open)
                .ok_or_else(|| HostlistError::Unbalanced(expr.to_string()))?;
            prefixes.push(&rest[..open]);
            brackets.push(expand_ranges(expr, &rest[open + 1..close])?);
            rest = &rest[close + 1..];
        }
        if rest.contains(']') {
            return Err(HostlistError::Unbalanced(expr.to_string()));
        }
        let count = brackets
            .iter()
            .try_fold(1usize, |n, values| n.checked_mul(values.len()))
            .filter(|n| hosts.len() + n <= MAX_HOSTS)
            .ok_or_else(|| HostlistError::TooLarge(expr.to_string(), MAX_HOSTS))?;
        // Slurm's order: the last bracket varies fastest; before it, the one before the
        // last varies slowest, then the ones before it in turn
        // (`a[1-2]b[3-4]c[5-6]` gives a1b3c5 a1b3c6 a2b3c5 a2b3c6 a1b4c5 ...).
        let mut loops: Vec<usize> = (0..brackets.len().saturating_sub(1)).rev().collect();
        loops.extend(brackets.len().checked_sub(1));
        let mut at = vec![0usize; brackets.len()];
        for _ in 0..count {
            let mut name = String::new();
            for (b, values) in brackets.iter().enumerate() {
                name.push_str(prefixes[b]);
                name.push_str(&values[at[b]]);
            }
            name.push_str(rest);
            hosts.push(name);
            for &b in loops.iter().rev() {
                at[b] += 1;
                if at[b] < brackets[b].len() {
                    break;
                }
                at[b] = 0;
            }
        }
    }
    Ok(hosts)
}

fn split_top_level(expr: &str) -> Result<Vec<&str>, HostlistError> {
    let mut items = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in expr.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' | ' ' if depth == 0 => {
                items.push(expr[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err(HostlistError::Unbalanced(expr.to_string()));
        }
    }
    if depth != 0 {
        return Err(HostlistError::Unbalanced(expr.to_string()));
    }
    items.push(expr[start..].trim());
    Ok(items)
}

fn expand_ranges(expr: &str, body: &str) -> Result<Vec<String>, HostlistError> {
    let bad = |r: &str| HostlistError::BadRange(expr.to_string(), r.to_string());
    let mut values = Vec::new();
    for range in body.split(',') {
        let (lo, hi) = range.split_once('-').unwrap_or((range, range));
        if lo.is_empty() || !lo.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad(range));
        }
        if hi.is_empty() || !hi.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad(range));
        }
        let width = lo.len();
        let lo_n: u64 = lo.parse().map_err(|_| bad(range))?;
        let hi_n: u64 = hi.parse().map_err(|_| bad(range))?;
        if hi_n < lo_n || hi_n - lo_n >= MAX_HOSTS as u64 {
            return Err(bad(range));
        }
        // Many ranges of one bracket add up: bounded before any is made.
        if values.len() as u64 + (hi_n - lo_n) >= MAX_HOSTS as u64 {
            return Err(HostlistError::TooLarge(expr.to_string(), MAX_HOSTS));
        }
        for n in lo_n..=hi_n {
            values.push(format!("{n:0width$}"));
        }
    }
    Ok(values)
}

/// Folds host names into the shortest usual expression: hosts that differ only in a
/// trailing number are grouped under their prefix, with consecutive numbers as ranges.
/// Groups appear in the order of their first host.
pub fn fold<S: AsRef<str>>(hosts: &[S]) -> String {
    // prefix -> (first position, numbers with their widths, suffix-less names)
    let mut order: Vec<(String, usize)> = Vec::new();
    let mut numbered: BTreeMap<(String, usize), Vec<u64>> = BTreeMap::new();
    let mut plain: Vec<String> = Vec::new();
    let mut seen_plain = std::collections::BTreeSet::new();
    let mut out: Vec<(usize, String)> = Vec::new();
    for (pos, host) in hosts.iter().enumerate() {
        let host = host.as_ref();
        let digits = host.bytes().rev().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 18 {
            if seen_plain.insert(host.to_string()) {
                plain.push(host.to_string());
                out.push((pos, host.to_string()));
            }
            continue;
        }
        let (prefix, num) = host.split_at(host.len() - digits);
        // A number written with leading zeros keeps its width; "7" and "07" differ.
        let width = if num.starts_with('0') && num.len() > 1 {
            num.len()
        } else {
            0
        };
        let key = (prefix.to_string(), width);
        let n: u64 = num.parse().unwrap_or(0);
        let entry = numbered.entry(key.clone()).or_default();
        if entry.is_empty() {
            order.push((format!("{}\u{0}{}", key.0, key.1), pos));
        }
        entry.push(n);
    }
    for ((prefix, width), mut nums) in numbered {
        nums.sort_unstable();
        nums.dedup();
        let pos = order
            .iter()
            .find(|(k, _)| *k == format!("{prefix}\u{0}{width}"))
            .map(|(_, p)| *p)
            .unwrap_or(0);
        let text = if nums.len() == 1 {
            format!("{prefix}{:0width$}", nums[0])
        } else {
            let mut ranges = Vec::new();
            let mut i = 0;
            while i < nums.len() {
                let mut j = i;
                while j + 1 < nums.len() && nums[j + 1] == nums[j] + 1 {
                    j += 1;
                }
                if i == j {
                    ranges.push(format!("{:0width$}", nums[i]));
                } else {
                    ranges.push(format!("{:0width$}-{:0width$}", nums[i], nums[j]));
                }
                i = j + 1;
            }
            format!("{prefix}[{}]", ranges.join(","))
        };
        out.push((pos, text));
    }
    out.sort_by_key(|(pos, _)| *pos);
    out.into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn expands_ranges_lists_and_products() {
        assert_eq!(
            expand("gpu[01-03,07]").unwrap(),
            ["gpu01", "gpu02", "gpu03", "gpu07"]
        );
        assert_eq!(expand("n[099-100]").unwrap(), ["n099", "n100"]);
        assert_eq!(
            expand("r[1-2]n[1-2]").unwrap(),
            ["r1n1", "r1n2", "r2n1", "r2n2"]
        );
        assert_eq!(
            expand("row[0,1]_rack[2-3]_blade[4,5]").unwrap(),
            [
                "row0_rack2_blade4",
                "row0_rack2_blade5",
                "row1_rack2_blade4",
                "row1_rack2_blade5",
                "row0_rack3_blade4",
                "row0_rack3_blade5",
                "row1_rack3_blade4",
                "row1_rack3_blade5",
            ]
        );
        assert_eq!(expand("x[1-2]y").unwrap(), ["x1y", "x2y"]);
        assert_eq!(expand("a,b[1-2],c").unwrap(), ["a", "b1", "b2", "c"]);
        assert_eq!(expand("").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn rejects_malformed() {
        assert!(expand("node[01-").is_err());
        assert!(expand("node[5-3]").is_err());
        assert!(expand("node]1[").is_err());
        assert!(expand("node[a-b]").is_err());
    }

    #[test]
    fn folds_like_slurm() {
        assert_eq!(fold(&["gpu01", "gpu02", "gpu03", "gpu07"]), "gpu[01-03,07]");
        assert_eq!(fold(&["node1"]), "node1");
        assert_eq!(fold(&["login", "n1", "n2"]), "login,n[1-2]");
        assert_eq!(fold::<&str>(&[]), "");
    }

    #[test]
    fn ranges_that_add_up_past_the_bound_are_refused_before_they_are_made() {
        let many = format!("n[{}]", vec!["0-999999"; 100].join(","));
        assert_eq!(
            expand(&many),
            Err(HostlistError::TooLarge(many.clone(), MAX_HOSTS))
        );
    }

    proptest! {
        #[test]
        fn fold_then_expand_round_trips(nums in proptest::collection::btree_set(0u32..300, 1..40), width in 1usize..4) {
            let hosts: Vec<String> = nums.iter().map(|n| format!("node{n:0width$}")).collect();
            // Only canonical names round-trip: with width w, numbers must not exceed it.
            let canonical: Vec<String> = hosts.into_iter().filter(|h| h.len() == 4 + width).collect();
            prop_assume!(!canonical.is_empty());
            let folded = fold(&canonical);
            let mut back = expand(&folded).unwrap();
            back.sort();
            let mut want = canonical.clone();
            want.sort();
            prop_assert_eq!(back, want);
        }
    }
}
