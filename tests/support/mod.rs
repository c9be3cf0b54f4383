//! Servers, fakes and checks some test modules need.

pub mod browser;
pub mod common;
pub mod fake_version;
pub mod haproxy;
pub mod mcp_fixture;
pub mod mock_llm;
pub mod postgres_server;
pub mod qdrant_server;
pub mod repo_files;
pub mod skip;

/// A free loopback port: bound, read and let go, for a server the test
/// starts next.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}
