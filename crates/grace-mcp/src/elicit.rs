//! Questions back to the asker through MCP elicitation: a run that needs
//! the asker's input is put to the client's user as a form, and continued
//! with the reply.

use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{ElicitRequestParams, ElicitationAction, ElicitationSchema};
use rmcp::service::{ElicitationMode, Peer};
use serde_json::Value;

use super::McpServer;
use super::call::Failure;

/// Questions to the asker one `ask` call puts through MCP elicitation.
pub const MAX_ELICITATIONS: usize = 3;

/// Puts `request` to the client's user as a form with one `reply` field:
/// `Ok(None)` when the user declines, cancels or gives nothing; `Err` when
/// the request fails (the client does not answer within `wait`, or its
/// protocol forbids server requests).
async fn elicit(
    peer: &Peer<RoleServer>,
    request: &grace::tools::UserRequest,
    wait: Duration,
) -> std::result::Result<Option<String>, ()> {
    let mut message = format!("{}\n({})", request.question, request.reason);
    for (i, o) in request.options.iter().enumerate() {
        message.push_str(&format!("\n{}. {o}", i + 1));
    }
    let schema = ElicitationSchema::builder()
        .required_string_with("reply", |s| {
            s.description("your answer: an option's text or your own words")
        })
        .build()
        .map_err(|e| tracing::warn!(error = e, "cannot build the elicitation form"))?;
    let result = peer
        .create_elicitation_with_timeout(
            ElicitRequestParams::FormElicitationParams {
                meta: None,
                message,
                requested_schema: schema,
            },
            Some(wait),
        )
        .await;
    match result {
        Ok(r) if r.action == ElicitationAction::Accept => Ok(r
            .content
            .as_ref()
            .and_then(|c| c.get("reply"))
            .and_then(Value::as_str)
            .map(|s| grace::text::truncate_chars(s, grace::service::MAX_REPLY_CHARS).to_string())),
        Ok(_) => Ok(None),
        Err(e) => {
            tracing::warn!(error = %e, "MCP elicitation failed; the run_id goes back instead");
            Err(())
        }
    }
}

impl McpServer {
    /// A run that needs the asker's input: when the client supports MCP
    /// elicitation (form mode), the question is put to its user and the
    /// run continued with the reply (a declined or cancelled request
    /// continues it without one: the agent proceeds on its best
    /// assumption; a request that fails leaves the run waiting); at most
    /// [`MAX_ELICITATIONS`] times a call. Otherwise the outcome goes back
    /// as it is: `decision: needs_input`, the `clarification` and a
    /// `run_id` that `ask` with `run_id` and `reply` continues.
    pub(super) async fn clarify(
        &self,
        mut outcome: grace::service::AskOutcome,
        grace: &grace::service::Grace,
        peer: &Peer<RoleServer>,
    ) -> std::result::Result<grace::service::AskOutcome, Failure> {
        if !peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
        {
            return Ok(outcome);
        }
        let wait = Duration::from_secs_f64(grace.config().agent.reply_timeout_seconds);
        for _ in 0..MAX_ELICITATIONS {
            let (Some(run_id), Some(request)) =
                (outcome.run_id.clone(), outcome.report.clarification.clone())
            else {
                break;
            };
            // A client that cannot be asked after all (a protocol without
            // server requests): the run_id goes back instead.
            let Ok(reply) = elicit(peer, &request, wait).await else {
                break;
            };
            outcome =
                tokio::time::timeout(self.timeout, grace.reply(run_id, reply, self.scope.clone()))
                    .await
                    .map_err(|_| self.timed_out())??;
        }
        Ok(outcome)
    }
}
