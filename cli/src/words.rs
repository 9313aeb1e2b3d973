//! A line split into words as Slurm splits `#SBATCH` directives and scontrol's
//! interactive lines: blanks separate, quotes group; and the prefix test of Slurm's
//! keywords, in any case.

// Slurm's keyword grammar lives in `model` (sacctmgr's change keys use it too).
pub use model::keyword::{abbreviated, abbreviates, starts_with_ci, strip_prefix_ci};

/// C's `atoi`: an optional sign and the leading digits, 0 for none (`%-12` is -12).
pub fn atoi(text: &str) -> i32 {
    let text = text.trim_start();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let n = digits
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0i32, |a, b| {
            a.saturating_mul(10).saturating_add(i32::from(b - b'0'))
        });
    if negative { -n } else { n }
}

/// Splits a line into words at blanks; double or single quotes group. With `directive`
/// (a `#SBATCH` line), a backslash also escapes the next character and an unquoted `#`
/// starts a comment.
pub fn split_words(line: &str, directive: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (c, quote) {
            ('\\', _) if directive => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                    in_word = true;
                }
            }
            (q, Some(open)) if q == open => quote = None,
            (c, Some(_)) => cur.push(c),
            ('"' | '\'', None) => {
                quote = Some(c);
                in_word = true;
            }
            ('#', None) if directive => break,
            (c, None) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (c, None) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_in_any_case_and_any_text() {
        assert_eq!(strip_prefix_ci("JobId=12", "jobid="), Some("12"));
        assert_eq!(strip_prefix_ci("jobid=", "jobid="), Some(""));
        assert_eq!(strip_prefix_ci("job=12", "jobid="), None);
        // A multi-byte character across the prefix's length is no match, not a panic.
        assert_eq!(strip_prefix_ci("aéé", "jobid="), None);
        assert_eq!(strip_prefix_ci("jobé=1", "jobid="), None);
        assert!(starts_with_ci("JobName", "jobn"));
        assert!(!starts_with_ci("Job", "jobn"));
    }

    #[test]
    fn the_first_keyword_abbreviated_wins() {
        let table = [("delete", 3, 1), ("default", 3, 2), ("down", 1, 3)];
        assert_eq!(abbreviated("DEL", &table), Some(1));
        assert_eq!(abbreviated("defa", &table), Some(2));
        assert_eq!(abbreviated("de", &table), None);
        assert_eq!(abbreviated("d", &table), Some(3));
        assert_eq!(abbreviated("up", &table), None);
    }

    #[test]
    fn words_plain_and_directive() {
        let line = r#"a "b c" 'd e'f \x # g"#;
        assert_eq!(
            split_words(line, false),
            ["a", "b c", "d ef", "\\x", "#", "g"]
        );
        assert_eq!(split_words(line, true), ["a", "b c", "d ef", "x"]);
        assert_eq!(split_words("  ", false), Vec::<String>::new());
        assert_eq!(split_words("''", false), [""]);
    }
}
