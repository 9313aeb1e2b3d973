//! A getopt_long-style parser with Slurm's habits, shared by every command.
//!
//! Slurm's commands accept `--name=value`, `--name value`, `-n value`, `-nvalue`,
//! clustered short flags (`-nu root` is `-n -u root`) and unambiguous prefixes of long
//! names (`--part=debug`). clap cannot express all of these, so each command declares a
//! table of `OptSpec` and gets back the options in order plus the positional arguments.
//!
//! ```text
//! specs: [--job-name/-J value, --hold/-H flag]
//! args:  -J x --hold script.sh a b     → [(job-name, x), (hold, "")], positional [script.sh, a, b]
//! ```

/// One option a command accepts.
#[derive(Debug, Clone, Copy)]
pub struct OptSpec {
    /// The long name without dashes (`job-name`), also the key it is reported under.
    pub long: &'static str,
    /// The short letter, if any.
    pub short: Option<char>,
    pub arg: ArgKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// A flag without a value.
    None,
    /// A value is required (next word if not attached).
    Required,
    /// A value only when attached (`--opt=value`, `-ovalue`).
    Optional,
}

pub const fn flag(long: &'static str, short: Option<char>) -> OptSpec {
    OptSpec {
        long,
        short,
        arg: ArgKind::None,
    }
}
pub const fn value(long: &'static str, short: Option<char>) -> OptSpec {
    OptSpec {
        long,
        short,
        arg: ArgKind::Required,
    }
}
pub const fn optional(long: &'static str, short: Option<char>) -> OptSpec {
    OptSpec {
        long,
        short,
        arg: ArgKind::Optional,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptError {
    #[error("unrecognized option '{0}'")]
    Unknown(String),
    #[error("invalid option -- '{0}'")]
    UnknownShort(char),
    #[error("option '--{0}' requires an argument")]
    MissingValue(String),
    #[error("option requires an argument -- '{0}'")]
    MissingShortValue(char),
    #[error("option '--{0}' doesn't allow an argument")]
    UnexpectedValue(String),
    #[error("option '--{0}' is ambiguous")]
    Ambiguous(String),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    /// Options in the order given, keyed by their long name; flags have "".
    pub opts: Vec<(&'static str, String)>,
    pub positional: Vec<String>,
}

impl Parsed {
    /// The last value given for an option.
    pub fn get(&self, long: &str) -> Option<&str> {
        self.opts
            .iter()
            .rev()
            .find(|(k, _)| *k == long)
            .map(|(_, v)| v.as_str())
    }
    /// Every value given for an option, in order.
    pub fn all(&self, long: &str) -> Vec<&str> {
        self.opts
            .iter()
            .filter(|(k, _)| *k == long)
            .map(|(_, v)| v.as_str())
            .collect()
    }
    pub fn has(&self, long: &str) -> bool {
        self.opts.iter().any(|(k, _)| *k == long)
    }
}

/// Parses `args`. With `stop_at_positional`, the first positional argument ends option
/// parsing and everything after it is positional (sbatch's `script args...`, srun's
/// `command args...`).
pub fn parse(
    specs: &[OptSpec],
    args: &[String],
    stop_at_positional: bool,
) -> Result<Parsed, OptError> {
    let mut out = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "--" {
            out.positional.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(body) = arg.strip_prefix("--") {
            let (name, attached) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (body, None),
            };
            let spec = find_long(specs, name)?;
            let value = match (spec.arg, attached) {
                (ArgKind::None, Some(_)) => {
                    return Err(OptError::UnexpectedValue(spec.long.into()));
                }
                (ArgKind::None, None) => String::new(),
                (_, Some(v)) => v,
                (ArgKind::Optional, None) => String::new(),
                (ArgKind::Required, None) => {
                    let v = args
                        .get(i)
                        .ok_or_else(|| OptError::MissingValue(spec.long.into()))?;
                    i += 1;
                    v.clone()
                }
            };
            out.opts.push((spec.long, value));
        } else if arg.len() > 1 && arg.starts_with('-') {
            let chars: Vec<char> = arg[1..].chars().collect();
            let mut k = 0;
            while k < chars.len() {
                let c = chars[k];
                let spec = specs
                    .iter()
                    .find(|s| s.short == Some(c))
                    .ok_or(OptError::UnknownShort(c))?;
                k += 1;
                match spec.arg {
                    ArgKind::None => out.opts.push((spec.long, String::new())),
                    ArgKind::Optional => {
                        out.opts.push((spec.long, chars[k..].iter().collect()));
                        break;
                    }
                    ArgKind::Required => {
                        let rest: String = chars[k..].iter().collect();
                        let v = if !rest.is_empty() {
                            rest
                        } else {
                            let v = args.get(i).ok_or(OptError::MissingShortValue(c))?;
                            i += 1;
                            v.clone()
                        };
                        out.opts.push((spec.long, v));
                        break;
                    }
                }
            }
        } else {
            out.positional.push(arg.clone());
            if stop_at_positional {
                out.positional.extend(args[i..].iter().cloned());
                break;
            }
        }
    }
    Ok(out)
}

fn find_long(specs: &[OptSpec], name: &str) -> Result<OptSpec, OptError> {
    if let Some(s) = specs.iter().find(|s| s.long == name) {
        return Ok(*s);
    }
    let matches: Vec<&OptSpec> = specs.iter().filter(|s| s.long.starts_with(name)).collect();
    match matches.as_slice() {
        [one] if !name.is_empty() => Ok(**one),
        [] | [_] => Err(OptError::Unknown(format!("--{name}"))),
        _ => Err(OptError::Ambiguous(name.into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[OptSpec] = &[
        value("job-name", Some('J')),
        flag("noheader", Some('n')),
        value("user", Some('u')),
        flag("hold", Some('H')),
        optional("array", None),
        value("partition", Some('p')),
        flag("parsable", None),
        flag("parsable2", Some('P')),
    ];

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn long_short_clustered_and_positional() {
        let p = parse(
            SPECS,
            &s(&[
                "-J",
                "x",
                "--hold",
                "-nu",
                "root",
                "--part=debug",
                "run.sh",
                "-a",
            ]),
            true,
        )
        .unwrap();
        assert_eq!(p.get("job-name"), Some("x"));
        assert!(p.has("hold") && p.has("noheader"));
        assert_eq!(p.get("user"), Some("root"));
        assert_eq!(p.get("partition"), Some("debug"));
        assert_eq!(p.positional, s(&["run.sh", "-a"]));
        let p = parse(SPECS, &s(&["-Jname", "--job-name", "y"]), false).unwrap();
        assert_eq!(p.all("job-name"), vec!["name", "y"]);
        // An exact long name wins over a longer one it prefixes.
        assert!(
            parse(SPECS, &s(&["--parsable"]), false)
                .unwrap()
                .has("parsable")
        );
    }

    #[test]
    fn errors() {
        assert_eq!(
            parse(SPECS, &s(&["--bogus"]), false),
            Err(OptError::Unknown("--bogus".into()))
        );
        assert_eq!(
            parse(SPECS, &s(&["-1"]), false),
            Err(OptError::UnknownShort('1'))
        );
        assert_eq!(
            parse(SPECS, &s(&["-J"]), false),
            Err(OptError::MissingShortValue('J'))
        );
        assert_eq!(
            parse(SPECS, &s(&["--hold=1"]), false),
            Err(OptError::UnexpectedValue("hold".into()))
        );
        assert_eq!(
            parse(SPECS, &s(&["--pa"]), false),
            Err(OptError::Ambiguous("pa".into()))
        );
    }
}
