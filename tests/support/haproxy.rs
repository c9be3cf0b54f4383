//! A real HAProxy (Debian's package, `scripts/setup --cluster`) in front
//! of GRACE servers for tests: started on a free loopback port with its
//! configuration in a temporary folder, round robin over the servers, each
//! health-checked on `/health` every 300 ms (with a loopback `Host`, as
//! a server without `server.api_key` requires) (out after 2 failures, back
//! after 1 success), a failed connection retried on another server. It is
//! killed when the fixture is dropped, and dies with the test process
//! (`setpriv --pdeathsig KILL`).

use super::free_port;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `haproxy` program: `GRACE_HAPROXY_BIN`, else Debian's.
pub fn binary() -> PathBuf {
    std::env::var_os("GRACE_HAPROXY_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/sbin/haproxy"))
}

/// A running HAProxy.
pub struct Haproxy {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Haproxy {
    /// Starts HAProxy on a free port in front of `servers` (their ports on
    /// 127.0.0.1), and waits until it listens.
    pub fn start(servers: &[u16]) -> Self {
        let binary = binary();
        assert!(
            binary.exists(),
            "no HAProxy at {}: run `scripts/setup --cluster` (Debian's haproxy) or set GRACE_HAPROXY_BIN",
            binary.display()
        );
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let backends: String = servers
            .iter()
            .enumerate()
            .map(|(i, p)| format!("  server s{i} 127.0.0.1:{p} check\n"))
            .collect();
        let config = format!(
            "global\n  maxconn 2000\n\
             defaults\n  mode http\n  timeout connect 2s\n  timeout client 120s\n  timeout server 120s\n  \
             retries 3\n  option redispatch\n  retry-on conn-failure empty-response 503\n\
             frontend grace\n  bind 127.0.0.1:{port}\n  default_backend servers\n\
             backend servers\n  balance roundrobin\n  http-request disable-l7-retry if METH_POST\n  option httpchk\n  \
             http-check send meth GET uri /health ver HTTP/1.1 hdr host 127.0.0.1\n  \
             http-check expect status 200\n  default-server inter 300ms fall 2 rise 1\n{backends}"
        );
        let file = dir.path().join("haproxy.cfg");
        std::fs::write(&file, config).unwrap();
        let child = Command::new("setpriv")
            .args(["--pdeathsig", "KILL", "--"])
            .arg(&binary)
            .args(["-db", "-f"])
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let haproxy = Self {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "HAProxy did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        haproxy
    }

    /// Its address: `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
