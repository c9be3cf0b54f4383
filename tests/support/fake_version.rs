//! A gRPC endpoint that answers only Qdrant's health check, reporting a
//! version of the test's choosing: the one thing the real server in
//! `../shared/qdrant` (always 1.16.3) cannot do, needed to test the
//! version check. Every other Qdrant call answers UNIMPLEMENTED. (It
//! replaces the earlier gRPC harness over qdrant-edge: everything else
//! runs against the real server now.)

use std::time::Duration;

use qdrant_client::qdrant as pb;
use qdrant_client::qdrant::qdrant_server::{Qdrant, QdrantServer};
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

struct Version(String);

#[tonic::async_trait]
impl Qdrant for Version {
    async fn health_check(
        &self,
        _request: Request<pb::HealthCheckRequest>,
    ) -> Result<Response<pb::HealthCheckReply>, Status> {
        Ok(Response::new(pb::HealthCheckReply {
            title: "a test endpoint reporting a chosen version".into(),
            version: self.0.clone(),
            commit: None,
        }))
    }
}

/// The endpoint, on a free loopback port, on its own thread; stopped on drop.
pub struct FakeVersion {
    url: String,
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeVersion {
    /// Serves a health check that reports `version`.
    pub fn start(version: &str) -> Self {
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let version = version.to_string();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("runtime");
            let incoming = {
                let _entered = runtime.enter();
                TcpIncoming::bind("127.0.0.1:0".parse().expect("address")).expect("bind")
            };
            addr_tx
                .send(incoming.local_addr().expect("address"))
                .expect("report the address");
            let router = Server::builder().add_service(QdrantServer::new(Version(version)));
            runtime.spawn(router.serve_with_incoming(incoming));
            let _ = stop_rx.recv();
            runtime.shutdown_timeout(Duration::from_secs(2));
        });
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the endpoint did not start");
        Self {
            url: format!("http://{addr}"),
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// Its gRPC URL.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for FakeVersion {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
