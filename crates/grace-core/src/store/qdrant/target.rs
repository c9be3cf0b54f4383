//! Where a server collection is, and how a client error becomes a
//! [`StoreError`] that names the server.

use std::path::PathBuf;

use qdrant_client::QdrantError;

use crate::store::StoreError;

/// Where a server collection is and how to reach it.
#[derive(Debug, Clone)]
pub(super) struct Target {
    pub(super) url: String,
    pub(super) collection: String,
}

impl Target {
    pub(super) fn location(&self) -> PathBuf {
        PathBuf::from(format!(
            "{}/collections/{}",
            self.url.trim_end_matches('/'),
            self.collection
        ))
    }

    /// Turns a client error into a [`StoreError`] that names the server.
    pub(super) fn error(&self, e: QdrantError) -> StoreError {
        use tonic::Code;
        match &e {
            QdrantError::ResponseError { status }
            | QdrantError::ResourceExhaustedError { status, .. } => {
                let message = format!("{:?}: {}", status.code(), status.message());
                match status.code() {
                    Code::Unavailable
                    | Code::DeadlineExceeded
                    | Code::ResourceExhausted
                    | Code::Cancelled
                    | Code::Aborted => StoreError::Unavailable {
                        url: self.url.clone(),
                        message,
                    },
                    Code::Unauthenticated | Code::PermissionDenied => StoreError::Unauthorized {
                        url: self.url.clone(),
                        message,
                    },
                    // The client reports a refused connection this way.
                    Code::Internal if status.message().starts_with("Failed to connect") => {
                        StoreError::Unavailable {
                            url: self.url.clone(),
                            message: self.explain_tls(message),
                        }
                    }
                    // A cluster whose shard has no live replica left.
                    Code::Internal
                        if status.message().contains("operations failed")
                            && status.message().contains("Unavailable") =>
                    {
                        StoreError::Unavailable {
                            url: self.url.clone(),
                            message: format!(
                                "a shard of `{}` has no replica the cluster can reach (more nodes lost than \
                                 the collection's replication factor allows?); {message}",
                                self.collection
                            ),
                        }
                    }
                    Code::NotFound => StoreError::CollectionNotFound {
                        url: self.url.clone(),
                        collection: self.collection.clone(),
                    },
                    _ => self.server(message),
                }
            }
            QdrantError::InvalidUri(_) => StoreError::Unavailable {
                url: self.url.clone(),
                message: e.to_string(),
            },
            _ => self.server(e.to_string()),
        }
    }

    /// A connection that failed in the TLS handshake says so: `https://`
    /// to a server without TLS, or a certificate the client does not trust.
    fn explain_tls(&self, message: String) -> String {
        let m = message.to_ascii_lowercase();
        let tls = [
            "invalidcontenttype",
            "invalidmessage",
            "certificate",
            "tls",
            "handshake",
        ];
        if self.url.starts_with("https://") && tls.iter().any(|t| m.contains(t)) {
            format!(
                "the TLS handshake failed: the server does not answer TLS on this port (use http:// for a \
                 server without TLS) or its certificate is not trusted; {message}"
            )
        } else {
            message
        }
    }

    pub(super) fn server(&self, message: impl Into<String>) -> StoreError {
        StoreError::Server {
            url: self.url.clone(),
            collection: self.collection.clone(),
            message: message.into(),
        }
    }
}
