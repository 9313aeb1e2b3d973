//! Slurm's keyword abbreviation, as its commands read their words: a keyword may be
//! shortened to any prefix of at least a minimum length, in any case, and a table of
//! keywords is tried in order.
//!
//! Example: with `("maxnodesperjob", 4)`, `MaxNodes`, `maxn` and `MAXNODESPERJOB` name
//! it; `max` does not (too short), nor does `maxnodes2` (not a prefix).

/// A value without the quotes around it (`'ml'`, `"a b"`), as Slurm's commands take
/// a value a script quoted.
pub fn unquoted(value: &str) -> &str {
    for quote in ['\'', '"'] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

/// `text` without `prefix` when it starts with it in any ASCII case (`JobId=12` less
/// `jobid=` is `12`); safe for any text, whatever its characters.
pub fn strip_prefix_ci<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// Whether `text` starts with `prefix` in any ASCII case.
pub fn starts_with_ci(text: &str, prefix: &str) -> bool {
    strip_prefix_ci(text, prefix).is_some()
}

/// Slurm's keyword abbreviation, `strncasecmp(text, keyword, MAX(strlen(text), min))
/// == 0`: `text` begins `keyword`, in any case, and is at least `min` long unless it is
/// all of it (`sho` is `show` with 3, `p` is not `partitions` with 2).
pub fn abbreviates(text: &str, keyword: &str, min: usize) -> bool {
    text.len() >= min.min(keyword.len()) && starts_with_ci(keyword, text)
}

/// The value of the first `(keyword, min, value)` of `table` that `text` abbreviates
/// (`abbreviates`): Slurm's commands try their keywords in order.
pub fn abbreviated<T: Copy>(text: &str, table: &[(&str, usize, T)]) -> Option<T> {
    table
        .iter()
        .find(|(keyword, min, _)| abbreviates(text, keyword, *min))
        .map(|(_, _, value)| *value)
}
