//! A real PostgreSQL server for tests, from Debian's `postgresql` package
//! (`scripts/setup --postgres` installs it; `GRACE_PG_BIN` names another
//! folder of its programs): a fresh cluster in a temporary folder, on a
//! free loopback port. Its user `grace` needs no password (the library's
//! tests cannot set a process's environment safely); its user `secure`
//! needs [`PASSWORD`] (SCRAM), for the tests that run `grace` with the
//! variable set. It is stopped when the fixture is dropped, also when a
//! test fails, and it dies with the test process (`setpriv --pdeathsig`).
//!
//! PostgreSQL refuses to run as root: as root, the cluster belongs to the
//! package's `postgres` user and its programs run as that user.

use super::free_port;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The password of the test cluster's user `secure`.
pub const PASSWORD: &str = "grace-test-password";

/// How long the server may take to accept connections.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// The folder of PostgreSQL's server programs.
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("GRACE_PG_BIN").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").is_file())
        .collect();
    found.sort_by_key(|p| {
        p.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found.pop().unwrap_or_else(|| {
        panic!("no PostgreSQL server in /usr/lib/postgresql/*/bin: run `bash scripts/setup --postgres` (scripts/test does), or set GRACE_PG_BIN")
    })
}

/// One PostgreSQL server.
pub struct PostgresServer {
    dir: Option<tempfile::TempDir>,
    port: u16,
    child: Option<Child>,
    /// `Some(uid)` when running as root: the cluster's owner.
    run_as: Option<String>,
}

impl PostgresServer {
    /// A new cluster, started.
    pub fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("grace-pg-")
            .tempdir()
            .expect("temporary folder");
        let run_as = (unsafe { libc::geteuid() } == 0).then(|| "postgres".to_string());
        if run_as.is_some() {
            // The owner must reach its folder.
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        let mut server = Self {
            port: free_port(),
            dir: Some(dir),
            child: None,
            run_as,
        };
        let data = server.data_dir();
        let out = server
            .command("initdb")
            .args([
                "-D",
                data.to_str().unwrap(),
                "-U",
                "grace",
                "-E",
                "UTF8",
                "--no-sync",
            ])
            .args(["--auth=trust"])
            .output()
            .expect("initdb runs");
        assert!(
            out.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(
            data.join("pg_hba.conf"),
            "local all all trust\nhost all secure 127.0.0.1/32 scram-sha-256\nhost all all 127.0.0.1/32 trust\n",
        )
        .unwrap();
        server.spawn();
        server.psql(&format!(
            "CREATE ROLE secure LOGIN PASSWORD '{PASSWORD}'; GRANT CREATE ON DATABASE postgres TO secure;"
        ));
        server
    }

    /// Runs `sql` as the user `grace` in the database `postgres`; panics
    /// with psql's message when it fails.
    pub fn psql(&self, sql: &str) {
        let out = self
            .command("psql")
            .arg("-h")
            .arg(self.folder())
            .args([
                "-p",
                &self.port.to_string(),
                "-U",
                "grace",
                "-d",
                "postgres",
                "-q",
                "-c",
            ])
            .arg(sql)
            .output()
            .expect("psql runs");
        assert!(
            out.status.success(),
            "psql failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `postgres://secure@127.0.0.1:PORT/postgres`: its password is [`PASSWORD`].
    pub fn secure_url(&self) -> String {
        format!("postgres://secure@127.0.0.1:{}/postgres", self.port)
    }

    /// `postgres://grace@127.0.0.1:PORT/postgres` (no password).
    pub fn url(&self) -> String {
        format!("postgres://grace@127.0.0.1:{}/postgres", self.port)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    fn folder(&self) -> &Path {
        self.dir.as_ref().expect("the server's folder").path()
    }

    fn data_dir(&self) -> PathBuf {
        self.folder().join("data")
    }

    fn log(&self) -> PathBuf {
        self.folder().join("postgres.log")
    }

    /// One of the server's programs, as the cluster's owner.
    fn command(&self, program: &str) -> Command {
        let path = bin_dir().join(program);
        let mut c = Command::new("setpriv");
        if let Some(user) = &self.run_as {
            c.args(["--reuid", user, "--regid", user, "--init-groups"]);
        }
        c.args(["--pdeathsig", "KILL", "--"]).arg(path);
        c
    }

    /// Starts the server on its port and data, and waits until it takes
    /// a query.
    pub fn spawn(&mut self) {
        assert!(self.child.is_none(), "already running");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log())
            .expect("log file");
        if self.run_as.is_some() {
            std::fs::set_permissions(self.log(), std::fs::Permissions::from_mode(0o666)).unwrap();
        }
        let child = self
            .command("postgres")
            .arg("-D")
            .arg(self.data_dir())
            .args(["-p", &self.port.to_string()])
            .arg("-k")
            .arg(self.folder())
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .args(["-c", "max_connections=200"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("postgres starts");
        self.child = Some(child);
        let started = Instant::now();
        loop {
            let ready = self
                .command("pg_isready")
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-q"])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return;
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("postgres exited ({status}): {}", self.log_tail());
            }
            assert!(
                started.elapsed() < READY_TIMEOUT,
                "postgres not ready after {READY_TIMEOUT:?}: {}",
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops the server (fast shutdown) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            unsafe {
                libc::kill(child.id() as i32, libc::SIGINT);
            }
            let _ = child.wait();
        }
    }

    /// The end of the server's log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.log()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("postgres log:\n{}", self.log_tail());
        }
        self.stop();
    }
}
