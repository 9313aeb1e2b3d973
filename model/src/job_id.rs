//! Job ids as users write them (Slurm's `unfmt_job_id_string`), for every command that
//! names jobs (`scancel`, `scontrol`, `squeue -j/-s`, `sacct -j`) and for the
//! controller that resolves them.
//!
//! | text | names |
//! |---|---|
//! | `12` | job 12, and every task of the array 12 starts |
//! | `12_*` | every task of array 12 |
//! | `12_3` | task 3 of array 12, whether split off into its own record or still pending in the array's record |
//! | `12_[1-3,7]`, `12_[0-15:4]` | those tasks |
//! | `12_[1-3%2]` | tasks 1-3, with a throttle of 2 (`scontrol update`) |
//! | `12+1` | component 1 of the heterogeneous job 12 (`12` names every component) |
//! | `12.batch`, `12.extern`, `12.0`, `12_3.batch` | a step of those (sacct, scontrol) |
//!
//! A server resolves a [`JobIdSpec`] from its parts: [`JobIdSpec::job_id`] (the base id,
//! an array's id for the task forms), [`JobIdSpec::tasks`] (`Tasks::Unnamed` for a
//! plain id, `Tasks::Every` for `_*`, or the listed ids and throttle) and
//! [`JobIdSpec::step`]. [`JobIdSpec::matches`] is the listing filter over
//! [`crate::Job`] records; [`JobIdSpec::select`] also tells which pending tasks of an
//! array's record were named, for a client that narrows that record.

use crate::job::{Job, JobId, MAX_ARRAY_SIZE, format_ranges, parse_array};
use std::fmt;

/// A text that is not a job id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid job id: {0}")]
pub struct JobIdError(pub String);

/// The array tasks a job id names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tasks {
    /// A plain id: the job itself, and every task of the array it starts.
    Unnamed,
    /// `_*`: every task of the array.
    Every,
    /// `_3`, `_[1-3,7%2]`: these tasks (sorted, unique), and the throttle given with
    /// them (0: none).
    Listed { ids: Vec<u32>, throttle: u32 },
    /// `+1`: this component of a heterogeneous job (not an array task).
    HetComponent(u32),
}

/// A step of a job: `batch`, `extern` or a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StepId {
    Batch,
    Extern,
    Numbered(u32),
}

impl fmt::Display for StepId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StepId::Batch => f.write_str("batch"),
            StepId::Extern => f.write_str("extern"),
            StepId::Numbered(n) => write!(f, "{n}"),
        }
    }
}

impl std::str::FromStr for StepId {
    type Err = ();
    fn from_str(text: &str) -> Result<StepId, ()> {
        match text {
            "batch" => Ok(StepId::Batch),
            "extern" => Ok(StepId::Extern),
            _ if digits(text) => text.parse().map(StepId::Numbered).map_err(|_| ()),
            _ => Err(()),
        }
    }
}

/// One job id as a user wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobIdSpec {
    job_id: JobId,
    tasks: Tasks,
    step: Option<StepId>,
}

/// How a [`JobIdSpec`] names a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selected {
    /// The whole record.
    Whole,
    /// Some of the pending tasks of an array's record (sorted): the record narrowed to
    /// them is what was named.
    Tasks(Vec<u32>),
}

/// What selection reads of a job record: its ids and, for an array's record of pending
/// tasks, those tasks.
#[derive(Debug, Clone, Copy)]
pub struct RecordIds<'a> {
    pub id: JobId,
    /// 0 when not part of an array.
    pub array_job_id: JobId,
    pub array_task_id: Option<u32>,
    /// The pending tasks of an array's record (sorted); empty otherwise.
    pub pending_tasks: &'a [u32],
    /// A component of a heterogeneous job: its leader's id and its offset.
    pub het: Option<(JobId, u32)>,
}

fn digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// Parses an array's task list: `1,3,5-7`, `0-15:4`, each with an optional `%N`
/// throttle, in brackets or not (`[3-9%2]`, as squeue prints a pending array).
pub fn parse_task_list(text: &str) -> Option<(Vec<u32>, u32)> {
    let list = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    if list.is_empty() || list.contains(char::is_whitespace) {
        return None;
    }
    let spec = parse_array(list, MAX_ARRAY_SIZE).ok()?;
    Some((spec.task_ids, spec.max_running))
}

impl JobIdSpec {
    /// A plain job id.
    pub fn job(job_id: JobId) -> JobIdSpec {
        JobIdSpec {
            job_id,
            tasks: Tasks::Unnamed,
            step: None,
        }
    }

    /// Parses one job id (no commas outside brackets).
    pub fn parse(text: &str) -> Result<JobIdSpec, JobIdError> {
        let bad = || JobIdError(text.to_string());
        let t = text.trim();
        // The step is after the last dot, unless that dot is inside brackets.
        let (job, step) = match t.rfind('.') {
            Some(i) if !t[i..].contains(']') => (&t[..i], Some(&t[i + 1..])),
            _ => (t, None),
        };
        let step = match step {
            Some(s) => Some(s.parse::<StepId>().map_err(|_| bad())?),
            None => None,
        };
        let (base, tasks) = match job.split_once('_') {
            None => match job.split_once('+') {
                Some((base, offset)) if digits(offset) => (
                    base,
                    Tasks::HetComponent(offset.parse().map_err(|_| bad())?),
                ),
                Some(_) => return Err(bad()),
                None => (job, Tasks::Unnamed),
            },
            Some((base, "*")) => (base, Tasks::Every),
            Some((base, list)) => {
                if !list.starts_with('[') && !digits(list) {
                    return Err(bad());
                }
                let (ids, throttle) = parse_task_list(list).ok_or_else(bad)?;
                (base, Tasks::Listed { ids, throttle })
            }
        };
        if !digits(base) {
            return Err(bad());
        }
        let job_id: JobId = base.parse().ok().filter(|n| *n > 0).ok_or_else(bad)?;
        Ok(JobIdSpec {
            job_id,
            tasks,
            step,
        })
    }

    /// Parses a comma list of job ids; brackets may hold commas (`12_[1,3],14`).
    /// Empty items are skipped; the first bad one is the error.
    pub fn parse_list(text: &str) -> Result<Vec<JobIdSpec>, JobIdError> {
        split_list(text)
            .into_iter()
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(JobIdSpec::parse)
            .collect()
    }

    /// The job's id, or the array's for the task forms.
    pub fn job_id(&self) -> JobId {
        self.job_id
    }

    /// The array tasks named.
    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    /// The step named, if any.
    pub fn step(&self) -> Option<StepId> {
        self.step
    }

    /// The same id without its step.
    pub fn without_step(&self) -> JobIdSpec {
        JobIdSpec {
            step: None,
            ..self.clone()
        }
    }

    /// Whether (and how) this id names a record; the step is not looked at.
    pub fn select(&self, r: RecordIds<'_>) -> Option<Selected> {
        self.select_in(
            r.id,
            r.array_job_id,
            r.array_task_id,
            r.pending_tasks.iter().copied(),
            r.het,
        )
    }

    /// [`JobIdSpec::select`] over a record's ids, its pending tasks (sorted) and its
    /// place in a heterogeneous job (leader, offset).
    fn select_in(
        &self,
        id: JobId,
        array_job_id: JobId,
        array_task_id: Option<u32>,
        pending_tasks: impl ExactSizeIterator<Item = u32>,
        het: Option<(JobId, u32)>,
    ) -> Option<Selected> {
        let in_array = array_job_id != 0 && array_job_id == self.job_id;
        let in_het = het.is_some_and(|(leader, _)| leader == self.job_id);
        match &self.tasks {
            Tasks::Unnamed => (id == self.job_id || in_array || in_het).then_some(Selected::Whole),
            Tasks::HetComponent(k) => (het == Some((self.job_id, *k))).then_some(Selected::Whole),
            Tasks::Every => in_array.then_some(Selected::Whole),
            Tasks::Listed { ids, .. } => {
                if !in_array {
                    return None;
                }
                match array_task_id {
                    Some(t) => ids.binary_search(&t).is_ok().then_some(Selected::Whole),
                    None => {
                        let pending = pending_tasks.len();
                        let hit: Vec<u32> = pending_tasks
                            .filter(|t| ids.binary_search(t).is_ok())
                            .collect();
                        match hit.len() {
                            0 => None,
                            n if n == pending => Some(Selected::Whole),
                            _ => Some(Selected::Tasks(hit)),
                        }
                    }
                }
            }
        }
    }

    /// Whether this id names the job (any of its pending tasks, for an array's record).
    pub fn matches(&self, job: &Job) -> bool {
        self.select_in(
            job.id,
            job.array_job_id,
            job.array_task_id,
            job.pending_tasks.iter().copied(),
            job.het.map(|h| (h.leader, h.offset)),
        )
        .is_some()
    }
}

impl fmt::Display for JobIdSpec {
    /// Slurm's spelling: `12`, `12_*`, `12_3`, `12_[1-3,7%2]`, each with `.step`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.job_id)?;
        match &self.tasks {
            Tasks::Unnamed => {}
            Tasks::HetComponent(k) => write!(f, "+{k}")?,
            Tasks::Every => f.write_str("_*")?,
            Tasks::Listed { ids, throttle: 0 } if ids.len() == 1 => write!(f, "_{}", ids[0])?,
            Tasks::Listed { ids, throttle } => {
                write!(f, "_[{}", format_ranges(ids))?;
                if *throttle > 0 {
                    write!(f, "%{throttle}")?;
                }
                f.write_str("]")?;
            }
        }
        if let Some(step) = self.step {
            write!(f, ".{step}")?;
        }
        Ok(())
    }
}

/// Splits a list of job ids at the commas outside brackets: `12_[1,3],14` is `12_[1,3]`
/// and `14`. Empty items are kept.
pub fn split_list(text: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&text[start..]);
    items
}

/// How Slurm shows a job record: `12`, `12_3` for a task, `12_[3-9%2]` for an array's
/// record of pending tasks (`pending_tasks` as `Job::pending_tasks_str` gives them,
/// with or without brackets).
pub fn record_id(
    id: JobId,
    array_job_id: JobId,
    array_task_id: Option<u32>,
    pending_tasks: &str,
) -> String {
    match (array_job_id, array_task_id) {
        (0, _) => id.to_string(),
        (a, Some(t)) => format!("{a}_{t}"),
        (a, None) => {
            let tasks = pending_tasks
                .strip_prefix('[')
                .and_then(|s| s.strip_suffix(']'))
                .unwrap_or(pending_tasks);
            format!("{a}_[{tasks}]")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{ArraySpec, JobSpec};

    #[test]
    fn every_form_parses_and_prints_back() {
        let cases: &[(&str, &str)] = &[
            ("12", "12"),
            ("12_3", "12_3"),
            ("12_*", "12_*"),
            ("12_[1-3,7]", "12_[1-3,7]"),
            ("12_[7,1-3]", "12_[1-3,7]"),
            ("12_[1-3%2]", "12_[1-3%2]"),
            ("12_[0-15:4]", "12_[0,4,8,12]"),
            ("12_[3]", "12_3"),
            ("12.batch", "12.batch"),
            ("12.extern", "12.extern"),
            ("12.0", "12.0"),
            ("12_3.batch", "12_3.batch"),
            ("12_[1,2].1", "12_[1-2].1"),
            (" 12 ", "12"),
        ];
        for (text, shown) in cases {
            let id = JobIdSpec::parse(text).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(id.to_string(), *shown, "{text}");
            assert_eq!(JobIdSpec::parse(shown).as_ref(), Ok(&id), "{shown}");
        }
        let id = JobIdSpec::parse("9_[1,3].batch").unwrap();
        assert_eq!(id.job_id(), 9);
        assert_eq!(
            id.tasks(),
            &Tasks::Listed {
                ids: vec![1, 3],
                throttle: 0
            }
        );
        assert_eq!(id.step(), Some(StepId::Batch));
        assert_eq!(id.without_step().to_string(), "9_[1,3]");
        assert_eq!(
            JobIdSpec::parse("12.4").unwrap().step(),
            Some(StepId::Numbered(4))
        );
    }

    #[test]
    fn anything_else_is_a_clear_error() {
        for bad in [
            "",
            "x",
            "12x",
            "0",
            "-1",
            "12_",
            "12_[]",
            "12_[a]",
            "12_a",
            "12.x",
            "12.",
            "12_3_4",
            "12_[1-3",
            "12_[5-1]",
            "_3",
            "12_[0-9999999]",
            "12_[4000001]",
            "12_[+3]",
            "12_[1-+3]",
            "12_ 3",
            "1.2.3",
        ] {
            assert_eq!(
                JobIdSpec::parse(bad),
                Err(JobIdError(bad.to_string())),
                "{bad}"
            );
        }
        assert_eq!(
            JobIdSpec::parse("12y").unwrap_err().to_string(),
            "Invalid job id: 12y"
        );
    }

    #[test]
    fn lists_split_outside_brackets() {
        let ids = JobIdSpec::parse_list("5,9_[1,3].batch,,12.0").unwrap();
        let shown: Vec<String> = ids.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["5", "9_[1,3].batch", "12.0"]);
        assert_eq!(JobIdSpec::parse_list("5,x"), Err(JobIdError("x".into())));
        assert_eq!(JobIdSpec::parse_list(""), Ok(vec![]));
        assert_eq!(split_list("12_[1,3],,14"), ["12_[1,3]", "", "14"]);
        assert_eq!(split_list(""), [""]);
    }

    fn array_record(id: JobId, pending: &[u32]) -> Job {
        let spec = JobSpec {
            array: Some(ArraySpec {
                task_ids: pending.to_vec(),
                max_running: 0,
            }),
            ..JobSpec::default()
        };
        Job::new(id, spec, 0, None)
    }

    fn task(id: JobId, array: JobId, task: u32) -> Job {
        let mut j = Job::new(id, JobSpec::default(), 0, None);
        j.array_job_id = array;
        j.array_task_id = Some(task);
        j
    }

    #[test]
    fn ids_match_jobs_tasks_and_pending_remainders() {
        let meta = array_record(5, &[3, 4, 5, 6]);
        let split = task(8, 5, 1);
        let plain = Job::new(9, JobSpec::default(), 0, None);
        let m = |text: &str, job: &Job| JobIdSpec::parse(text).unwrap().matches(job);
        // A plain id: the job, or the array it starts and all of its tasks.
        assert!(m("5", &meta) && m("5", &split) && m("9", &plain));
        assert!(!m("5", &plain) && !m("9", &meta));
        // A task's own id names it too.
        assert!(m("8", &split));
        // `_*`: the tasks of an array only.
        assert!(m("5_*", &meta) && m("5_*", &split) && !m("9_*", &plain));
        // One task, split off or still pending in the array's record.
        assert!(m("5_1", &split) && !m("5_1", &meta));
        assert!(m("5_4", &meta) && !m("5_4", &split));
        // Brackets: any of a set.
        assert!(m("5_[1,9]", &split) && m("5_[6-9]", &meta) && !m("5_[7-9]", &meta));
        // The step does not change which job is named.
        assert!(m("5_4.batch", &meta));
    }

    #[test]
    fn a_heterogeneous_jobs_id_names_every_component_and_plus_one_of_them() {
        let component = |id: JobId, offset: u32| {
            let mut j = Job::new(id, JobSpec::default(), 0, None);
            j.het = Some(crate::job::HetJob {
                leader: 7,
                offset,
                count: 3,
            });
            j
        };
        let (leader, second) = (component(7, 0), component(8, 1));
        let m = |text: &str, job: &Job| JobIdSpec::parse(text).unwrap().matches(job);
        assert!(m("7", &leader) && m("7", &second) && m("8", &second));
        assert!(m("7+1", &second) && !m("7+1", &leader) && m("7+0", &leader));
        assert!(!m("8+0", &second));
        let spec = JobIdSpec::parse("7+1.0").unwrap();
        assert_eq!(spec.tasks(), &Tasks::HetComponent(1));
        assert_eq!(spec.to_string(), "7+1.0");
        assert!(JobIdSpec::parse("7+x").is_err() && JobIdSpec::parse("7+").is_err());
    }

    #[test]
    fn selection_tells_which_pending_tasks_were_named() {
        let pending = [3, 4, 5, 6];
        let meta = RecordIds {
            id: 5,
            array_job_id: 5,
            array_task_id: None,
            pending_tasks: &pending,
            het: None,
        };
        let sel = |text: &str| JobIdSpec::parse(text).unwrap().select(meta);
        assert_eq!(sel("5"), Some(Selected::Whole));
        assert_eq!(sel("5_[3-6,9]"), Some(Selected::Whole));
        assert_eq!(sel("5_4"), Some(Selected::Tasks(vec![4])));
        assert_eq!(sel("5_[4-5]"), Some(Selected::Tasks(vec![4, 5])));
        assert_eq!(sel("5_9"), None);
        assert_eq!(sel("6"), None);
    }

    #[test]
    fn records_show_as_slurm_shows_them() {
        assert_eq!(record_id(5, 0, None, ""), "5");
        assert_eq!(record_id(7, 5, Some(2), ""), "5_2");
        assert_eq!(record_id(5, 5, None, "3-4%2"), "5_[3-4%2]");
        assert_eq!(record_id(5, 5, None, "[3-4%2]"), "5_[3-4%2]");
        let meta = array_record(5, &[3, 4]);
        assert_eq!(
            record_id(meta.id, meta.array_job_id, None, &meta.pending_tasks_str()),
            meta.display_id()
        );
        assert_eq!(parse_task_list("0-6:3,9%2"), Some((vec![0, 3, 6, 9], 2)));
        assert_eq!(parse_task_list("[3-4%2]"), Some((vec![3, 4], 2)));
        assert_eq!(parse_task_list(""), None);
    }
}
