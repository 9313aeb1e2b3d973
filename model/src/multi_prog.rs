//! srun's `--multi-prog` configuration (Slurm's MPMD file): which program each task of a
//! step runs, with which arguments.
//!
//! Each line is a task range and a command: `0-1 echo task:%t`, `2,5 hostname`, `* date`
//! (every task; last). `%t` is the task's id and `%o` its offset within the line's
//! tasks; a single quote keeps what it quotes as one argument, a backslash escapes the
//! next character or, last on a line, continues the command on the next line. Lines
//! that start with `#` and blank lines mean nothing.
//!
//! Worked example: with `1-2 echo task:%t:offset:%o` and `0,3 echo task:%t:offset:%o`,
//! task 2 runs `echo task:2:offset:1` and task 3 `echo task:3:offset:1`.
//! [`check`] is srun's reading of the file (every task has a command; Slurm's error
//! lines otherwise), [`task_argv`] the node's, for one task.

/// The command task `task` runs, as slurmstepd reads the configuration, followed by
/// `extra` (the words after the file's name on srun's command line).
pub fn task_argv(config: &str, task: u32, extra: &[String]) -> Result<Vec<String>, String> {
    let lines: Vec<&str> = config.split('\n').filter(|l| !l.is_empty()).collect();
    let mut next = 0;
    let mut continued = false;
    while next < lines.len() {
        let line = lines[next];
        let line_num = next + 1;
        next += 1;
        let breaks = line.ends_with('\\');
        if std::mem::replace(&mut continued, breaks) {
            continue;
        }
        let p = line.trim_start();
        if p.is_empty() || p.starts_with('#') {
            continue;
        }
        let Some((spec, rest)) = p.split_once(|c: char| c.is_ascii_whitespace()) else {
            return Err(format!("Invalid MPMD configuration line {line_num}"));
        };
        let Some(offset) = offset_in(task, spec) else {
            continue;
        };
        let mut argv = Vec::new();
        let mut word: Option<String> = None;
        let mut chars: Vec<char> = rest.trim_start().chars().collect();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            k += 1;
            match c {
                '%' => {
                    let w = word.get_or_insert_with(String::new);
                    match chars.get(k) {
                        Some('t') => w.push_str(&task.to_string()),
                        Some('o') => w.push_str(&offset.to_string()),
                        _ => {}
                    }
                    k += 1;
                }
                '\\' => {
                    let w = word.get_or_insert_with(String::new);
                    match chars.get(k) {
                        Some(&escaped) => {
                            w.push(escaped);
                            k += 1;
                        }
                        None => match lines.get(next) {
                            Some(more) => {
                                next += 1;
                                chars = more.chars().collect();
                                k = 0;
                            }
                            None => break,
                        },
                    }
                }
                '\'' => {
                    let Some(len) = chars[k..].iter().position(|c| *c == '\'') else {
                        return Err(format!(
                            "Program arguments specification format invalid: {}.",
                            argv.last().map_or("", String::as_str)
                        ));
                    };
                    let w = word.get_or_insert_with(String::new);
                    w.extend(&chars[k..k + len]);
                    k += len + 1;
                }
                c if c.is_ascii_whitespace() => argv.extend(word.take()),
                c => word.get_or_insert_with(String::new).push(c),
            }
        }
        argv.extend(word.take());
        argv.extend(extra.iter().cloned());
        return Ok(argv);
    }
    Err(format!("Program for task rank {task} not specified."))
}

/// Task `task`'s offset among the tasks of a line's range (`*`, `3`, `0-2,5`), when the
/// range holds it.
fn offset_in(task: u32, spec: &str) -> Option<u32> {
    if spec == "*" {
        return Some(task);
    }
    let mut passed = 0;
    for range in spec.split(',').filter(|r| !r.is_empty()) {
        match parse_range(range) {
            Some((low, high)) if (low..=high).contains(&task) => {
                return Some(passed + task - low);
            }
            Some((low, high)) => passed += high.saturating_sub(low) + 1,
            None => {}
        }
    }
    None
}

/// `3` or `0-2`.
fn parse_range(range: &str) -> Option<(u32, u32)> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match range.split_once('-') {
        None if digits(range) => range.parse().ok().map(|n| (n, n)),
        Some((low, high)) if digits(low) && digits(high) => {
            Some((low.parse().ok()?, high.parse().ok()?))
        }
        _ => None,
    }
}

/// What srun checks of the file `name` before it runs anything: every line names tasks
/// and a program, no task twice, and every task of the step has a line. `ntasks` is
/// `-n`; without it the step has as many tasks as the file names. Gives the step's task
/// count and each task's program, or Slurm's error lines.
pub fn check(config: &str, name: &str, ntasks: Option<u32>) -> Result<Checked, Vec<String>> {
    let invalid = |line: usize, why: String| {
        vec![
            why,
            format!("Line {line} of configuration file {name} invalid"),
        ]
    };
    if let Some(n) = ntasks
        && n > MAX_TASKS
    {
        return Err(vec![format!("Invalid task count {n}")]);
    }
    let mut programs: std::collections::BTreeMap<u32, String> = Default::default();
    let mut continued = false;
    let mut asterisk = None;
    for (index, line) in config.split_inclusive('\n').enumerate() {
        let line_num = index + 1;
        let breaks = line.trim_end_matches('\n').ends_with('\\');
        if std::mem::replace(&mut continued, breaks) {
            continue;
        }
        let p = line.trim_start();
        if p.is_empty() || p.starts_with('#') {
            continue;
        }
        let mut words = p.split_ascii_whitespace();
        let (Some(ranks), Some(program)) = (words.next(), words.next()) else {
            return Err(vec![format!(
                "Line {line_num} of configuration file {name} invalid"
            )]);
        };
        if asterisk.is_some() {
            return Err(invalid(
                line_num,
                "Task range specification with asterisk must be last".into(),
            ));
        }
        if ranks == "*" {
            asterisk = Some(program.to_string());
            continue;
        }
        for range in ranks.split(',').filter(|r| !r.is_empty()) {
            let Some((low, high)) = parse_range(range) else {
                return Err(invalid(
                    line_num,
                    format!("Invalid task range specification ({range})"),
                ));
            };
            if low > high {
                return Err(invalid(
                    line_num,
                    format!("Invalid task range, {low}-{high}"),
                ));
            }
            if high >= ntasks.unwrap_or(MAX_TASKS) {
                return Err(invalid(
                    line_num,
                    format!("Invalid task id, {high} >= ntasks"),
                ));
            }
            if let Some((&task, _)) = programs.range(low..=high).next() {
                return Err(invalid(
                    line_num,
                    format!("Duplicate record for task {task}"),
                ));
            }
            for task in low..=high {
                programs.insert(task, program.to_string());
            }
        }
    }
    let ntasks = ntasks.unwrap_or_else(|| programs.keys().next_back().map_or(1, |t| t + 1));
    let mut out = Vec::with_capacity(ntasks as usize);
    for task in 0..ntasks {
        match programs.get(&task) {
            Some(p) => out.push(p.clone()),
            None => match &asterisk {
                Some(p) => out.push(p.clone()),
                None => {
                    return Err(vec![format!(
                        "Configuration file {name} invalid, no record for task id {task}"
                    )]);
                }
            },
        }
    }
    Ok(Checked {
        ntasks,
        programs: out,
    })
}

/// The most tasks a configuration may name.
pub const MAX_TASKS: u32 = 1 << 16;

/// A configuration srun has checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The step's task count.
    pub ntasks: u32,
    /// Each task's program, by task id.
    pub programs: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(config: &str, task: u32) -> Vec<String> {
        task_argv(config, task, &[]).unwrap()
    }

    #[test]
    fn each_task_runs_its_lines_command_with_its_id_and_offset() {
        let config = "1-2   echo task:%t:offset:%o\n0,3   echo task:%t:offset:%o";
        assert_eq!(argv(config, 0), ["echo", "task:0:offset:0"]);
        assert_eq!(argv(config, 2), ["echo", "task:2:offset:1"]);
        assert_eq!(argv(config, 3), ["echo", "task:3:offset:1"]);
        assert_eq!(
            task_argv(config, 4, &[]).unwrap_err(),
            "Program for task rank 4 not specified."
        );
        let extra = ["x".to_string()];
        assert_eq!(
            task_argv("* hostname", 9, &extra).unwrap(),
            ["hostname", "x"]
        );
    }

    #[test]
    fn quotes_escapes_comments_and_continued_lines() {
        let config = "# a comment\n\n1-2   hostname\n0,3   echo aaaa \\\ntask:%t:offset:%o bbbb";
        assert_eq!(argv(config, 0), ["echo", "aaaa", "task:0:offset:0", "bbbb"]);
        assert_eq!(argv(config, 3), ["echo", "aaaa", "task:3:offset:1", "bbbb"]);
        assert_eq!(argv(config, 1), ["hostname"]);
        assert_eq!(argv("0 printf 'a b' c\\ d", 0), ["printf", "a b", "c d"]);
        assert!(task_argv("0 echo 'open", 0, &[]).is_err());
        assert_eq!(
            task_argv("0", 0, &[]).unwrap_err(),
            "Invalid MPMD configuration line 1"
        );
    }

    #[test]
    fn srun_checks_that_every_task_has_one_program() {
        let config = "1-2   hostname\n0,3   date\n";
        let checked = check(config, "f", Some(4)).unwrap();
        assert_eq!(checked.programs, ["date", "hostname", "hostname", "date"]);
        assert_eq!(check(config, "f", None).unwrap().ntasks, 4);
        assert_eq!(
            check(config, "f", Some(5)).unwrap_err(),
            ["Configuration file f invalid, no record for task id 4"]
        );
        assert_eq!(
            check(config, "f", Some(3)).unwrap_err(),
            [
                "Invalid task id, 3 >= ntasks",
                "Line 2 of configuration file f invalid"
            ]
        );
        assert_eq!(
            check("0 a\n0 b\n", "f", None).unwrap_err()[0],
            "Duplicate record for task 0"
        );
        assert_eq!(
            check("0-1 a\n* b\n", "f", Some(4)).unwrap().programs,
            ["a", "a", "b", "b"]
        );
        assert_eq!(
            check("0 a \\\n  more\n1 b\n", "f", None).unwrap().programs,
            ["a", "b"]
        );
        assert_eq!(
            check("0\n", "f", None).unwrap_err(),
            ["Line 1 of configuration file f invalid"]
        );
    }
}
