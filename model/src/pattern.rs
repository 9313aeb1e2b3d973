//! Slurm's output filename patterns: `%j` job id, `%J` job id (`.step` inside steps),
//! `%A` array job id, `%a` array task id, `%x` job name, `%u` user, `%N` first node,
//! `%n` node index, `%t` task id, `%s` step id, `%%` a percent sign. A number after
//! `%` pads with zeros: `%4a` of task 7 is `0007`.
//!
//! `slurm-%A_%a.out` for task 3 of array 40 is `slurm-40_3.out`.

/// What the placeholders stand for.
#[derive(Debug, Clone, Default)]
pub struct PatternValues<'a> {
    pub job_id: u32,
    pub array_job_id: u32,
    pub array_task_id: Option<u32>,
    pub job_name: &'a str,
    pub user: &'a str,
    pub node: &'a str,
    pub node_index: u32,
    pub task_id: Option<u32>,
    pub step_id: Option<String>,
}

/// Expands a pattern. Unknown placeholders are kept as written, as Slurm does.
pub fn expand_pattern(pattern: &str, v: &PatternValues) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut width = String::new();
        while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
            width.push(*d);
            chars.next();
        }
        let w: usize = width.parse().unwrap_or(0).min(10);
        let num = |n: u32| format!("{n:0w$}");
        match chars.next() {
            Some('%') => out.push('%'),
            Some('j') => out.push_str(&num(v.job_id)),
            Some('J') => {
                out.push_str(&num(v.job_id));
                if let Some(s) = &v.step_id {
                    out.push('.');
                    out.push_str(s);
                }
            }
            Some('A') => out.push_str(&num(if v.array_job_id != 0 {
                v.array_job_id
            } else {
                v.job_id
            })),
            Some('a') => out.push_str(&num(v.array_task_id.unwrap_or(4294967294))),
            Some('x') => out.push_str(v.job_name),
            Some('u') => out.push_str(v.user),
            Some('N') => out.push_str(v.node),
            Some('n') => out.push_str(&num(v.node_index)),
            Some('t') => out.push_str(&num(v.task_id.unwrap_or(0))),
            Some('s') => out.push_str(v.step_id.as_deref().unwrap_or("batch")),
            Some(other) => {
                out.push('%');
                out.push_str(&width);
                out.push(other);
            }
            None => {
                out.push('%');
                out.push_str(&width);
            }
        }
    }
    out
}

/// The paths a batch job's stdout and stderr go to, absolute when the work dir is:
/// the patterns expanded, relative ones under the work dir, Slurm's defaults
/// (`slurm-%j.out`, arrays `slurm-%A_%a.out`; stderr joins stdout) when unset.
pub fn batch_output_paths(job: &crate::Job, node: &str) -> (String, String) {
    let spec = &job.spec;
    let values = PatternValues {
        job_id: job.id,
        array_job_id: job.array_job_id,
        array_task_id: job.array_task_id,
        job_name: &spec.name,
        user: &spec.user,
        node,
        node_index: 0,
        task_id: Some(0),
        step_id: None,
    };
    let default = if job.array_job_id != 0 {
        "slurm-%A_%a.out"
    } else {
        "slurm-%j.out"
    };
    let resolve = |pattern: &str| {
        let p = expand_pattern(pattern, &values);
        if p.starts_with('/') || spec.work_dir.is_empty() {
            p
        } else {
            format!("{}/{p}", spec.work_dir.trim_end_matches('/'))
        }
    };
    let out_pattern = if spec.stdout_pattern.is_empty() {
        default
    } else {
        &spec.stdout_pattern
    };
    let stdout = resolve(out_pattern);
    let stderr = if spec.stderr_pattern.is_empty() {
        stdout.clone()
    } else {
        resolve(&spec.stderr_pattern)
    };
    (stdout, stderr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_slurm_placeholders() {
        let v = PatternValues {
            job_id: 42,
            array_job_id: 40,
            array_task_id: Some(3),
            job_name: "train",
            user: "ada",
            node: "gpu01",
            task_id: Some(1),
            ..Default::default()
        };
        assert_eq!(expand_pattern("slurm-%A_%a.out", &v), "slurm-40_3.out");
        assert_eq!(
            expand_pattern("%x-%j-%u-%N-%t-%%.log", &v),
            "train-42-ada-gpu01-1-%.log"
        );
        assert_eq!(expand_pattern("%4a|%J|%q", &v), "0003|42|%q");
        let plain = PatternValues {
            job_id: 7,
            ..Default::default()
        };
        assert_eq!(
            expand_pattern("slurm-%A_%a.out", &plain),
            "slurm-7_4294967294.out"
        );
    }
}
