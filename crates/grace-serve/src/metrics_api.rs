//! `GET /metrics`: what [`grace::telemetry`] recorded, in Prometheus's
//! text format, behind the same key as the rest of the API; and the
//! middleware that counts and times every request by its route.
//!
//! The recorder is `metrics-exporter-prometheus`'s, installed once per
//! process as the `metrics` facade's global recorder (no listener of its
//! own: the API's router serves it). A process that installed another
//! recorder first gets 501 here and keeps its own.

use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use utoipa::OpenApi;

use super::AppState;
use super::error::ApiError;
use grace::telemetry;

/// The process's recorder, installed on first use; `None` when another
/// recorder was installed first.
pub fn handle() -> Option<&'static PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE.get_or_init(install).as_ref()
}

fn install() -> Option<PrometheusHandle> {
    let full = |name: &str| Matcher::Full(name.to_string());
    let built = PrometheusBuilder::new()
        .set_buckets_for_metric(full(telemetry::HTTP_SECONDS), telemetry::SECONDS_BUCKETS)
        .and_then(|b| {
            b.set_buckets_for_metric(full(telemetry::PHASE_SECONDS), telemetry::SECONDS_BUCKETS)
        })
        .and_then(|b| {
            b.set_buckets_for_metric(full(telemetry::CONFIDENCE), telemetry::CONFIDENCE_BUCKETS)
        });
    let recorder = match built {
        Ok(builder) => builder.build_recorder(),
        Err(e) => {
            tracing::warn!(error = %e, "the metrics recorder cannot be built; /metrics is off");
            return None;
        }
    };
    let handle = recorder.handle();
    match metrics::set_global_recorder(recorder) {
        Ok(()) => {
            telemetry::describe();
            Some(handle)
        }
        Err(e) => {
            tracing::warn!(error = %e, "another metrics recorder is installed; /metrics is off");
            None
        }
    }
}

/// `GET /metrics` (documented in [`super::openapi`]): the metrics in
/// Prometheus's text exposition format (version 0.0.4).
pub async fn metrics(
    State(s): State<AppState>,
    axum::Extension(caller): axum::Extension<super::gate::Caller>,
) -> Response {
    // The server's own figures: the service's and the administrator's
    // (a principal reads documents, not the server).
    if let Err(refused) = super::gate::not_a_principal(
        &caller,
        "/metrics is for server.api_key and server.admin_api_key, not a principal's key",
    ) {
        return refused.into_response();
    }
    let Some(handle) = handle() else {
        return ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "not_implemented",
            "another metrics recorder is installed in this process, so GRACE's /metrics is off",
        )
        .into_response();
    };
    // Every knowledge base's queue, added up by status (no label names a
    // knowledge base).
    let queues: Vec<_> = s
        .kbs
        .handles()
        .map(|(_, g)| g.escalations().clone())
        .collect();
    let counted = tokio::task::spawn_blocking(move || {
        let mut all = std::collections::BTreeMap::new();
        for queue in queues {
            for (status, n) in queue.counts()? {
                *all.entry(status.as_str()).or_insert(0) += n;
            }
        }
        Ok::<_, grace::review::ReviewError>(all)
    })
    .await;
    match counted {
        Ok(Ok(counts)) => {
            for (status, n) in counts {
                telemetry::escalations(status, n);
            }
        }
        Ok(Err(e)) => return ApiError::from(e).into_response(),
        Err(e) => return ApiError::internal(e).into_response(),
    }
    handle.run_upkeep();
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        handle.render(),
    )
        .into_response()
}

/// Counts and times every request, refused ones included (401, 429, 503,
/// 504), by its route's template (`/v1/escalations/{id}`): labels come
/// from a fixed set, never from what a client sends. An event stream is
/// timed to its first byte.
pub async fn track(request: Request, next: Next) -> Response {
    let route = route_of(request.uri().path());
    let method = request.method().as_str().to_string();
    let started = Instant::now();
    let response = next.run(request).await;
    telemetry::request(route, method, response.status().as_u16(), started.elapsed());
    response
}

/// The route template `path` falls under: the documented paths (OpenAPI)
/// and the pages, a `{…}` segment matching any one segment, the template
/// with the most literal segments winning; `unmatched` for any other.
fn route_of(path: &str) -> &'static str {
    // Each template once, split into its segments.
    static TEMPLATES: OnceLock<Vec<(String, Vec<String>)>> = OnceLock::new();
    let templates = TEMPLATES.get_or_init(|| {
        let documented = super::openapi::ApiDoc::openapi().paths.paths.into_keys();
        documented
            .chain(super::ask_page::PATHS.map(String::from))
            .chain(super::review_page::PATHS.map(String::from))
            .chain(["/openapi.json"].map(String::from))
            .map(|t| {
                let parts = t.split('/').map(String::from).collect();
                (t, parts)
            })
            .collect()
    });
    // Counted without collecting: a hostile path of many segments costs
    // one pass.
    let segments = path.split('/').count();
    templates
        .iter()
        .filter(|(_, parts)| parts.len() == segments)
        .filter_map(|(t, parts)| {
            let mut literal = 0;
            for (p, s) in parts.iter().zip(path.split('/')) {
                if p.starts_with('{') && p.ends_with('}') && !s.is_empty() {
                    continue;
                }
                if p != s {
                    return None;
                }
                literal += 1;
            }
            Some((literal, t.as_str()))
        })
        .max_by_key(|(literal, _)| *literal)
        .map_or("unmatched", |(_, t)| t)
}

#[cfg(test)]
mod tests {
    use super::route_of;

    #[test]
    fn a_path_is_labelled_by_its_template_never_by_what_the_client_sent() {
        assert_eq!(route_of("/v1/ask"), "/v1/ask");
        assert_eq!(route_of("/v1/escalations/42"), "/v1/escalations/{id}");
        assert_eq!(route_of("/v1/review/me"), "/v1/review/me");
        assert_eq!(
            route_of("/v1/review/reviewers/ann/token"),
            "/v1/review/reviewers/{id}/token"
        );
        assert_eq!(route_of("/metrics"), "/metrics");
        assert_eq!(route_of("/"), "/");
        assert_eq!(route_of("/v1/escalations/"), "unmatched");
        assert_eq!(route_of("/v1/../../etc/passwd"), "unmatched");
        assert_eq!(route_of(&"/x".repeat(10_000)), "unmatched");
    }
}
