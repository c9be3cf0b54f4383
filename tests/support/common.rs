//! Shared helpers for the integration tests: a configuration that uses the
//! real local model (installed by `scripts/setup`) and a temporary data dir.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use grace::embed::{Embedder, FastEmbedder};
use grace::{Config, KnowledgeBase, OpenMode};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Defaults, with the model from the repository's `models/` and the data in `data_dir`.
///
/// With `GRACE_TEST_POSTGRES_URL` set (a database the tests may fill), the
/// state goes there instead of SQLite files (`storage.state: postgres`),
/// in a schema of its own per data folder: the same tests then check the
/// shared state (run by hand; CI runs them on the default).
pub fn config(data_dir: &Path) -> Config {
    let mut c = Config::default();
    c.storage.data_dir = data_dir.to_path_buf();
    c.embedding.model_dir = repo().join("models/minilm");
    c.embedding.runtime_path = repo().join("models/libonnxruntime.so");
    c.reader.model_dir = repo().join("models/reader");
    if let Ok(url) = std::env::var("GRACE_TEST_POSTGRES_URL") {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        data_dir.hash(&mut h);
        c.storage.state = grace::config::StateBackend::Postgres;
        c.storage.postgres.url = url;
        c.storage.postgres.schema = format!("t{:016x}", h.finish());
    }
    c
}

/// The confidence weights GRACE shipped before its defaults were fitted
/// (`config/hand-set-weights.yml`): for tests of mechanisms (the agent
/// loop, parking and resuming a run) written against that scale, where a
/// grounded answer on the sample knowledge base reaches `notify`.
pub fn hand_set_weights() -> grace::config::Weights {
    Config::load(Some(&repo().join("config/hand-set-weights.yml")))
        .expect("config/hand-set-weights.yml")
        .confidence
        .weights
}

/// [`hand_set_weights`] as `GRACE_CONFIDENCE__WEIGHTS__*` variables, for a
/// `grace` process.
pub fn hand_set_weight_env() -> Vec<(String, String)> {
    let weights = serde_json::to_value(hand_set_weights()).unwrap();
    weights
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            (
                format!("GRACE_CONFIDENCE__WEIGHTS__{}", k.to_ascii_uppercase()),
                v.to_string(),
            )
        })
        .collect()
}

/// The source of an answer's first citation (panics when it has none).
pub fn first_cited(citations: &[grace::tools::Citation]) -> &str {
    citations[0]
        .source
        .as_deref()
        .expect("the first citation names a source")
}

/// One embedder for all tests of a binary (the model loads once).
pub fn embedder() -> Arc<dyn Embedder> {
    static E: OnceLock<Arc<dyn Embedder>> = OnceLock::new();
    E.get_or_init(|| {
        let c = config(Path::new("unused"));
        Arc::new(FastEmbedder::new(&c.embedding).unwrap_or_else(|e| {
            panic!("{e}\n(the integration tests need the real model: run scripts/setup)")
        }))
    })
    .clone()
}

pub fn open(config: Config) -> KnowledgeBase {
    KnowledgeBase::with_embedder(config, embedder(), OpenMode::Create).unwrap()
}

/// The ingest manifest of the collection `config` names.
pub fn manifest(config: &Config) -> grace::ingest::manifest::Manifest {
    grace::ingest::manifest::Manifest::load_for(config)
        .unwrap()
        .expect("the ingest's manifest")
}

/// The knowledge base already in `data` and its ingest manifest.
pub fn open_existing(data: &Path) -> (KnowledgeBase, grace::ingest::manifest::Manifest) {
    let kb = KnowledgeBase::with_embedder(config(data), embedder(), OpenMode::Existing).unwrap();
    let manifest = manifest(kb.config());
    (kb, manifest)
}

pub fn eval_sets() -> PathBuf {
    repo().join("eval")
}

/// Registers reviewer `id` (named `name`) in `queue` and returns their
/// bearer token.
pub fn reviewer(queue: &grace::review::ReviewQueue, id: &str, name: &str) -> String {
    queue
        .register_reviewer(&grace::review::Reviewer {
            id: id.into(),
            name: name.into(),
            description: String::new(),
        })
        .unwrap();
    queue.issue_token(id).unwrap()
}

/// A knowledge base in `data` holding the bundled sample (`examples/kb`).
pub fn open_sample(data: &Path) -> Arc<KnowledgeBase> {
    let kb = open(config(data));
    ingest_sample(&kb);
    Arc::new(kb)
}

/// Ingests the bundled sample (`examples/kb`) into `kb`, default options.
pub fn ingest_sample(kb: &KnowledgeBase) -> grace::ingest::IngestReport {
    kb.ingest(
        &[repo().join("examples/kb")],
        &grace::ingest::IngestOptions::default(),
        &mut |_| {},
    )
    .unwrap()
}

/// Every point id the ingest manifest records for the collection `config`
/// names (on its backend), sorted.
pub fn manifest_ids(config: &Config) -> Vec<u64> {
    let manifest = manifest(config);
    let mut ids: Vec<u64> = manifest
        .sources
        .values()
        .flat_map(|e| e.point_ids.iter().copied())
        .collect();
    ids.sort_unstable();
    ids
}

/// The `grace` binary, run in `dir` with the repository's model and no
/// outside configuration (`GRACE_CONFIG`, `GRACE_REVIEWER` unset).
pub fn grace_cmd(dir: &Path, args: &[&str]) -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_grace"));
    c.args(args)
        .current_dir(dir)
        .env_remove("GRACE_CONFIG")
        .env_remove("GRACE_REVIEWER")
        .env("GRACE_EMBEDDING__MODEL_DIR", repo().join("models/minilm"))
        .env(
            "GRACE_EMBEDDING__RUNTIME_PATH",
            repo().join("models/libonnxruntime.so"),
        )
        .env("GRACE_READER__MODEL_DIR", repo().join("models/reader"));
    c
}

/// Runs `grace` in `dir` (see [`grace_cmd`]) and waits for it.
pub fn grace(dir: &Path, args: &[&str]) -> std::process::Output {
    grace_cmd(dir, args).output().unwrap()
}

/// A command's stdout and stderr together, for assertion messages.
pub fn output_text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A planner model that always answers with the same text (a plan's JSON).
pub struct FixedPlanner(pub String);

impl grace::llm::LlmClient for FixedPlanner {
    fn name(&self) -> &str {
        "fixed-planner"
    }
    fn can_plan(&self) -> bool {
        true
    }
    fn generate(
        &self,
        _: &grace::llm::GenerateRequest,
    ) -> grace::llm::Result<grace::llm::Generation> {
        Ok(grace::llm::Generation::plain(
            self.0.clone(),
            grace::llm::StopReason::Complete,
            Default::default(),
        ))
    }
}

/// A `Grace` service on `config`, with the shared local model.
pub fn service(config: Config) -> grace::Grace {
    grace::Grace::builder(config)
        .embedder(embedder())
        .build()
        .unwrap()
}

/// A `Grace` service in `data` with the sample knowledge base ingested.
pub async fn sample_service(config: Config) -> grace::Grace {
    let grace = service(config);
    grace
        .ingest(vec![repo().join("examples/kb")], Default::default())
        .await
        .unwrap();
    grace
}

/// `grace serve` for `grace` on a free loopback port.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The port.
    pub port: u16,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<grace::Result<()>>,
}

/// Starts serving `grace` (stop it with [`TestServer::stop`]).
pub async fn serve(grace: grace::Grace) -> TestServer {
    serve_state(grace_serve::AppState::new(grace).unwrap()).await
}

/// Starts serving `state`, for a test that prepares the state first (holds
/// one of its permits, say). Dropping the server begins its shutdown.
pub async fn serve_state(state: grace_serve::AppState) -> TestServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(grace_serve::run(listener, state, async move {
        let _ = rx.await;
    }));
    TestServer {
        base: format!("http://127.0.0.1:{port}"),
        port,
        stop,
        task,
    }
}

impl TestServer {
    /// Shuts the server down and waits for it (the store is flushed).
    pub async fn stop(self) {
        self.begin_stop().await.unwrap().unwrap();
    }

    /// Signals the shutdown and returns at once; the task it gives back
    /// ends when the server has stopped.
    pub fn begin_stop(self) -> tokio::task::JoinHandle<grace::Result<()>> {
        let _ = self.stop.send(());
        self.task
    }
}

/// Runs `cmd` with `input` on its stdin and waits for it.
pub fn with_input(mut cmd: std::process::Command, input: &str) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// `cmd` (its program, arguments, folder and environment) run under a
/// pseudo-terminal by `script`, so that stdin and stdout are terminals;
/// `input` is typed into it.
pub fn at_a_terminal(cmd: &std::process::Command, input: &str) -> std::process::Output {
    let quote = |s: &std::ffi::OsStr| format!("'{}'", s.to_string_lossy().replace('\'', r"'\''"));
    let line: Vec<String> = std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(quote)
        .collect();
    let mut script = std::process::Command::new("script");
    script
        .args(["-qefc", &line.join(" "), "/dev/null"])
        .env("TERM", "dumb");
    if let Some(dir) = cmd.get_current_dir() {
        script.current_dir(dir);
    }
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => script.env(k, v),
            None => script.env_remove(k),
        };
    }
    with_input(script, input)
}

/// Every point of `store`, read `page` at a time with `scroll` (each page
/// checked to hold at most `page`).
pub fn read_all(
    store: &dyn grace::store::VectorStore,
    page: usize,
) -> Vec<grace::store::ChunkPoint> {
    let mut all = Vec::new();
    let mut offset = None;
    loop {
        let p = store.scroll(offset, page).unwrap();
        assert!(p.points.len() <= page);
        all.extend(p.points);
        match p.next {
            Some(n) => offset = Some(n),
            None => return all,
        }
    }
}

/// Committed and pending sources in the manifest at `data` (read directly:
/// the store is not opened; none yet: `(0, 0)`).
pub fn manifest_progress(data: &Path) -> (usize, usize) {
    use grace::ingest::manifest::{EntryState, Manifest};
    match Manifest::load_for(&config(data)) {
        Ok(Some(m)) => {
            let pending = m
                .sources
                .values()
                .filter(|e| e.state == EntryState::Pending)
                .count();
            (m.sources.len() - pending, pending)
        }
        _ => (0, 0),
    }
}

/// Copies the folder `from` to `to`, subfolders included (the sample has
/// one: `finance/`, with its `.grace-access.yml`).
pub fn copy_tree(from: &Path, to: &Path) {
    let mut pending = vec![(from.to_path_buf(), to.to_path_buf())];
    while let Some((src, dst)) = pending.pop() {
        std::fs::create_dir_all(&dst).unwrap();
        for entry in std::fs::read_dir(&src).unwrap() {
            let path = entry.unwrap().path();
            let target = dst.join(path.file_name().unwrap());
            if path.is_dir() {
                pending.push((path, target));
            } else {
                std::fs::copy(&path, &target).unwrap();
            }
        }
    }
}

/// An escalated run of `question` with nothing else in it: for tests of
/// the review queue that need one to put in it.
pub fn escalated(question: &str) -> grace::exec::RunReport {
    serde_json::from_value(serde_json::json!({
        "question": question,
        "confidence": 0.3,
        "level": "escalate",
        "decision": "escalate",
        "plan": {"by": "default"},
        "escalation": {
            "question": question,
            "reason": "confidence 0.30 is below 0.70 (notify)",
            "options": ["The knowledge base does not answer this"],
            "urgency": "blocking",
            "awaiting_response": true
        },
        "steps": [],
        "recovered": false
    }))
    .expect("a run report")
}
