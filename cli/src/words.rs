//! A line split into words as Slurm splits `#SBATCH` directives and scontrol's
//! interactive lines: blanks separate, quotes group.

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
