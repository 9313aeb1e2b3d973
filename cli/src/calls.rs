//! A command's calls to the controller, with Slurm's words when one fails: connecting
//! (`Unable to contact slurm controller (connect failure)`, or the config's own error),
//! a read command's one exchange, the text of a failed call, and a node daemon's agent.

use crate::client::{self, ConnectError, Ctld};
use crate::exit::Exit;

/// The words of every command for a controller it cannot reach.
pub const CONNECT_FAILURE: &str = "Unable to contact slurm controller (connect failure)";

/// The filter of one job by its id as Slurm writes it (`12`, `12_3`, `12+1`).
pub fn job_filter(id: impl ToString) -> proto::v1::JobFilter {
    proto::v1::JobFilter {
        job_ids: vec![id.to_string()],
        ..Default::default()
    }
}

/// `ListJobs` of one job, whether it is live or has ended.
pub fn one_job(id: impl ToString) -> proto::v1::ListJobsRequest {
    proto::v1::ListJobsRequest {
        filter: Some(job_filter(id)),
        include_finished: true,
        ..Default::default()
    }
}

/// The controller, or why there is none: Slurm's words for not reaching it, or the
/// config's error (`drover.toml:5: ...`).
pub async fn connect() -> Result<Ctld, String> {
    client::connect().await.map_err(|e| connect_error_text(&e))
}

/// Makes `call` on `ctld`, and once more on a new connection (which then replaces it)
/// where the first was lost. A command that runs long (srun while its tasks run) makes
/// no call for minutes, and its connection answers no keepalive between calls
/// (`crate::connection`), so the controller closes it. Only for calls that may be made
/// twice (a query, or a report the controller takes once).
pub async fn again_if_lost<T, F, Fut>(ctld: &mut Ctld, mut call: F) -> Result<T, tonic::Status>
where
    F: FnMut(Ctld) -> Fut,
    Fut: std::future::Future<Output = Result<tonic::Response<T>, tonic::Status>>,
{
    match call(ctld.clone()).await {
        Err(lost) if lost.code() == tonic::Code::Unavailable => {
            *ctld = connect().await.map_err(|_| lost)?;
            call(ctld.clone()).await.map(tonic::Response::into_inner)
        }
        r => r.map(tonic::Response::into_inner),
    }
}

/// What a command prints for a failed connect.
fn connect_error_text(e: &ConnectError) -> String {
    match e {
        ConnectError::Unreachable(_) => CONNECT_FAILURE.to_string(),
        ConnectError::Config(_) => e.to_string(),
    }
}

/// A streamed listing's chunks as one reply.
pub async fn collect_chunks(
    mut stream: tonic::Streaming<proto::v1::ListJobsReply>,
) -> Result<proto::v1::ListJobsReply, tonic::Status> {
    let mut whole = proto::v1::ListJobsReply::default();
    while let Some(chunk) = stream.message().await? {
        whole.now = chunk.now;
        whole.jobs.extend(chunk.jobs);
        whole.summaries.extend(chunk.summaries);
        whole.strings.extend(chunk.strings);
    }
    Ok(whole)
}

/// Full job records, in chunks (`ListJobRecords`: a long history does not fit one
/// reply), or from a controller without that call in one `ListJobs` reply.
pub async fn job_records(
    mut c: Ctld,
    req: proto::v1::ListJobsRequest,
) -> Result<proto::v1::ListJobsReply, tonic::Status> {
    match c.list_job_records(req.clone()).await {
        Ok(stream) => return collect_chunks(stream.into_inner()).await,
        Err(s) if s.code() == tonic::Code::Unimplemented => {}
        Err(s) => return Err(s),
    }
    c.list_jobs(req).await.map(|r| r.into_inner())
}

/// A node daemon's agent service.
pub type NodeAgent =
    proto::v1::node_agent_client::NodeAgentClient<auth::Signed<tonic::transport::Channel>>;

/// The jobs `ids` name, as the controller lists them, and the agent address of every
/// node by name: what a command that talks to a job's node daemons starts from.
pub async fn jobs_and_agents(
    ids: &[model::job_id::JobIdSpec],
) -> Result<
    (
        proto::v1::ListJobsReply,
        std::collections::BTreeMap<String, String>,
    ),
    String,
> {
    let mut c = connect().await?;
    let req = proto::v1::ListJobsRequest {
        filter: Some(proto::v1::JobFilter {
            job_ids: crate::jobs::selector_ids(ids.iter()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let jobs = c
        .list_jobs(req)
        .await
        .map_err(|s| status_text(&s))?
        .into_inner();
    let nodes = c
        .list_nodes(proto::v1::ListNodesRequest::default())
        .await
        .map_err(|s| status_text(&s))?
        .into_inner();
    let agents = nodes.nodes.into_iter().map(|n| (n.name, n.addr)).collect();
    Ok((jobs, agents))
}

/// The agent of node `node`, found in `agents` (from `jobs_and_agents`).
pub async fn agent_of(
    agents: &std::collections::BTreeMap<String, String>,
    node: &str,
) -> Result<NodeAgent, String> {
    let addr = agents
        .get(node)
        .ok_or_else(|| format!("node {node} is not known"))?;
    node_agent(node, addr).await
}

/// The agent service of node `node`'s daemon at `addr`, or why it cannot be reached.
pub async fn node_agent(node: &str, addr: &str) -> Result<NodeAgent, String> {
    let tls = client::tls().map_err(|e| connect_error_text(&e))?;
    let channel = auth::tls::endpoint(addr, tls.as_deref())
        .map_err(|_| format!("bad address of node {node}: {addr}"))?
        .connect_timeout(std::time::Duration::from_secs(5))
        .connect()
        .await
        .map_err(|_| format!("Communication connection failure with node {node}"))?;
    let signer = client::signer().map_err(|e| connect_error_text(&e))?;
    Ok(NodeAgent::new(auth::Signed::new(channel, signer)))
}

/// A failed call's message, as Slurm would word it.
pub fn status_text(s: &tonic::Status) -> String {
    let tls = crate::connection::TLS_FAILURE;
    match s.code() {
        // A certificate refused says so after Slurm's words.
        tonic::Code::Unavailable if s.message().contains(tls) => {
            let why = &s.message()[s.message().find(tls).unwrap_or(0)..];
            format!("{CONNECT_FAILURE}: {why}")
        }
        tonic::Code::Unavailable => CONNECT_FAILURE.into(),
        _ if s.message().is_empty() => format!("{:?}", s.code()),
        // A refusal's last line is its reason; the lines before it are details
        // (`refusal`).
        _ => s.message().lines().last().unwrap_or_default().to_string(),
    }
}

/// A refused request as Slurm's commands print it: the controller's detail lines,
/// each as `prog: error: detail`, then `prog: error: what: reason`.
pub fn refusal(prog: &str, what: &str, s: &tonic::Status) -> Exit {
    let mut lines: Vec<String> = match s.code() {
        tonic::Code::Unavailable => Vec::new(),
        _ => {
            let all: Vec<&str> = s.message().lines().collect();
            let details = &all[..all.len().saturating_sub(1)];
            details
                .iter()
                .map(|d| format!("{prog}: error: {d}"))
                .collect()
        }
    };
    lines.push(format!("{prog}: error: {what}: {}", status_text(s)));
    Exit::raw(lines.join("\n"))
}

/// One exchange of a read command with the controller: connects, then runs `call`. A
/// failure is printed as `command: error: ...` and gives exit status 1.
pub fn query<T, F, Fut>(
    rt: &tokio::runtime::Runtime,
    command: &str,
    call: F,
) -> Result<T, std::process::ExitCode>
where
    F: FnOnce(Ctld) -> Fut,
    Fut: std::future::Future<Output = Result<T, tonic::Status>>,
{
    let reply = rt.block_on(async {
        let c = connect().await?;
        call(c).await.map_err(|s| status_text(&s))
    });
    reply.map_err(|e| {
        eprintln!("{command}: error: {e}");
        std::process::ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_calls_in_slurms_words() {
        assert_eq!(
            status_text(&tonic::Status::unavailable("connection refused")),
            CONNECT_FAILURE
        );
        assert_eq!(
            status_text(&tonic::Status::unavailable(
                "connection to the controller lost: TLS: invalid peer certificate: UnknownIssuer"
            )),
            format!("{CONNECT_FAILURE}: TLS: invalid peer certificate: UnknownIssuer")
        );
        assert_eq!(
            status_text(&tonic::Status::not_found("Invalid job id specified")),
            "Invalid job id specified"
        );
        assert_eq!(status_text(&tonic::Status::internal("")), "Internal");
    }

    #[test]
    fn a_bad_config_is_named_and_an_unreachable_controller_in_slurms_words() {
        let bad = model::Config::parse("[controller]\naddr = 5\n", "conf/drover.toml");
        let e = ConnectError::Config(bad.unwrap_err().into());
        let text = connect_error_text(&e);
        assert!(text.starts_with("conf/drover.toml:2:"), "{text}");
        let e = ConnectError::Unreachable(anyhow::anyhow!("connection refused"));
        assert_eq!(connect_error_text(&e), CONNECT_FAILURE);
    }
}
