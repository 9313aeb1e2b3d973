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

/// The default stdout pattern of a batch job, and of an array task.
pub const DEFAULT_STDOUT: &str = "slurm-%j.out";
pub const DEFAULT_ARRAY_STDOUT: &str = "slurm-%A_%a.out";

/// Where a batch script's stdout and stderr go: the spec's patterns (Slurm's defaults
/// when unset) expanded with `values`, relative ones under `work_dir`. Stderr is `None`
/// when it shares the stdout file.
pub fn output_paths(
    spec: &crate::JobSpec,
    values: &PatternValues,
    work_dir: &str,
) -> (String, Option<String>) {
    let resolve = |pattern: &str| {
        let p = expand_pattern(pattern, values);
        if p.starts_with('/') || work_dir.is_empty() {
            p
        } else {
            format!("{}/{p}", work_dir.trim_end_matches('/'))
        }
    };
    let stdout = match spec.stdout_pattern.as_str() {
        "" if values.array_job_id != 0 => resolve(DEFAULT_ARRAY_STDOUT),
        "" => resolve(DEFAULT_STDOUT),
        p => resolve(p),
    };
    let stderr = Some(spec.stderr_pattern.as_str())
        .filter(|p| !p.is_empty())
        .map(resolve)
        .filter(|p| *p != stdout);
    (stdout, stderr)
}

/// The stdout and stderr paths of a batch job started on `node`, as `scontrol show
/// job` reports them.
pub fn batch_output_paths(job: &crate::Job, node: &str) -> (String, String) {
    let values = PatternValues {
        job_id: job.id,
        array_job_id: job.array_job_id,
        array_task_id: job.array_task_id,
        job_name: &job.spec.name,
        user: &job.spec.user,
        node,
        node_index: 0,
        task_id: Some(0),
        step_id: None,
    };
    let (stdout, stderr) = output_paths(&job.spec, &values, &job.spec.work_dir);
    let stderr = stderr.unwrap_or_else(|| stdout.clone());
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
