//! Test support: what the controller does to a listing before it reaches a command,
//! so that rendering tests can start from every job of a fixture (the filter is the
//! controller's own, `model::filter` through `proto::convert`; only the records are
//! turned back from the wire here), and a stand-in controller that answers gRPC calls
//! over loopback.

use proto::v1::{JobInfo, ListJobsRequest};
use std::net::TcpListener;
use std::sync::Arc;

/// A transport whose requests carry credentials of a test key, for stand-in
/// controllers (which do not check them).
pub fn signed<S>(inner: S) -> auth::Signed<S> {
    auth::Signed::new(
        inner,
        Arc::new(auth::Signer::Key {
            key: auth::Key::from_bytes(&[9; 32]).expect("a 32-byte key"),
            issuer: auth::Issuer::User,
            host: "test".into(),
            ttl_s: 60,
        }),
    )
}

/// A gRPC message as it travels: uncompressed flag, length, bytes.
pub fn grpc_message(bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![0];
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
    out
}

/// Closes the first `closed_first` connections as soon as they are accepted, then serves
/// the next with h2's server, whose windows are HTTP/2's defaults (64 KB): each
/// request's path and whole body go to `answer`, which gives the reply's messages.
/// Gives the address.
pub fn serve_h2(
    closed_first: usize,
    answer: impl Fn(&str, &[u8]) -> Vec<Vec<u8>> + Send + Sync + 'static,
) -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let answer = Arc::new(answer);
    let handle = std::thread::spawn(move || {
        for _ in 0..closed_first {
            drop(listener.accept().unwrap());
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            listener.set_nonblocking(true).unwrap();
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let (socket, _) = listener.accept().await.unwrap();
            let mut connection = h2::server::handshake(socket).await.unwrap();
            while let Some(Ok((request, mut respond))) = connection.accept().await {
                let answer = answer.clone();
                tokio::spawn(async move {
                    let path = request.uri().path().to_string();
                    let mut body = request.into_body();
                    let mut bytes = Vec::new();
                    while let Some(chunk) = body.data().await {
                        let chunk = chunk.unwrap();
                        body.flow_control().release_capacity(chunk.len()).unwrap();
                        bytes.extend_from_slice(&chunk);
                    }
                    let head = http::Response::builder()
                        .header("content-type", "application/grpc")
                        .body(())
                        .unwrap();
                    let mut send = respond.send_response(head, false).unwrap();
                    for message in answer(&path, &bytes) {
                        send.send_data(grpc_message(&message).into(), false)
                            .unwrap();
                    }
                    let mut trailers = http::HeaderMap::new();
                    trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
                    send.send_trailers(trailers).unwrap();
                });
            }
        });
    });
    (addr, handle)
}

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
    let (spec, _) = proto::convert::spec_from_wire(spec).expect("a fixture's spec");
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
