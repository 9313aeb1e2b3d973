//! Test support: what the controller does to a listing before it reaches a command,
//! so that rendering tests can start from every job of a fixture. The filter is the
//! controller's own (`model::filter`, through `proto::convert`); only the records are
//! turned back from the wire here.

use proto::v1::{JobInfo, ListJobsRequest};

/// The records of `jobs` the controller would send for `req`.
pub fn served(req: &ListJobsRequest, jobs: &[JobInfo]) -> Vec<JobInfo> {
    let filter = proto::convert::listing_filter_from_wire(req).expect("a valid filter");
    jobs.iter()
        .filter(|j| {
            let job = as_model(j);
            (req.include_finished || !job.state.is_final()) && filter.matches(&job)
        })
        .cloned()
        .collect()
}

/// What the filter reads of a job, back from its wire record.
fn as_model(j: &JobInfo) -> model::Job {
    let spec = j.spec.clone().unwrap_or_default();
    let (spec, _) = proto::convert::spec_from_wire(spec);
    let mut job = model::Job::new(j.job_id, spec, j.submit_time, None);
    job.array_job_id = j.array_job_id;
    job.array_task_id = j.array_task_id;
    job.pending_tasks = if j.array_job_id != 0 && j.array_task_id.is_none() {
        model::job_id::parse_task_list(&j.array_task_str)
            .map(|(ids, _)| ids.into_iter().collect())
            .unwrap_or_default()
    } else {
        Default::default()
    };
    job.state = crate::jobs::job_state(j);
    job.reason = model::Reason::parse(&j.reason).unwrap_or_default();
    job.end_time = j.end_time;
    if !j.nodes.is_empty() {
        let nodes = model::hostlist::expand(&j.nodes).unwrap_or_default();
        job.alloc = Some(model::Allocation {
            nodes: nodes
                .into_iter()
                .map(|node| model::NodeAllocation {
                    node,
                    cpus: 0,
                    mem_mb: 0,
                    gpus: vec![],
                    cpu_ids: vec![],
                })
                .collect(),
        });
    }
    job
}
