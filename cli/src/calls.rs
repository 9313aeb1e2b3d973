//! A command's calls to the controller, with Slurm's words when one fails: connecting
//! (`Unable to contact slurm controller (connect failure)`), a read command's one
//! exchange, and the text of a failed call.

use crate::client::{self, Ctld};

/// The words of every command for a controller it cannot reach.
pub const CONNECT_FAILURE: &str = "Unable to contact slurm controller (connect failure)";

/// The controller, or Slurm's words for not reaching it.
pub async fn connect() -> Result<Ctld, String> {
    client::connect()
        .await
        .map_err(|_| CONNECT_FAILURE.to_string())
}

/// A failed call's message, as Slurm would word it.
pub fn status_text(s: &tonic::Status) -> String {
    match s.code() {
        tonic::Code::Unavailable => CONNECT_FAILURE.into(),
        _ if s.message().is_empty() => format!("{:?}", s.code()),
        _ => s.message().to_string(),
    }
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
            status_text(&tonic::Status::not_found("Invalid job id specified")),
            "Invalid job id specified"
        );
        assert_eq!(status_text(&tonic::Status::internal("")), "Internal");
    }
}
