//! The manual's reference pages (`docs/src/reference/`) are made from the
//! code, and this test fails when one differs (`GRACE_BLESS=1 cargo test
//! --test it reference::` writes them again):
//!
//! - `cli.md`, `exit-codes.md`, `http.md`: what `grace reference TOPIC`
//!   prints (clap's description of the command line, `grace::EXIT_CODES`,
//!   the OpenAPI document);
//! - `files.md`: the data folder's files, each path from the function or
//!   constant the code opens it by; a new path function or `*_FILE`
//!   constant fails the test until it is listed here;
//! - `environment.md` is written by hand and checked: every `GRACE_…`
//!   variable the code reads is in it, and `tests/book.rs` checks that
//!   every variable it names is read.
//! - `http-errors.md` is written by hand and checked: every error type the
//!   server sends is in it, and every type in it is sent.

use crate::support::repo_files;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use grace::Config;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn reference(page: &str) -> PathBuf {
    root().join("docs/src/reference").join(page)
}

/// Compares `made` with the page, or writes it under `GRACE_BLESS=1`.
fn check(page: &str, made: &str) {
    let path = reference(page);
    if std::env::var_os("GRACE_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, made).unwrap();
        return;
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        written == made,
        "{} differs from what the code makes: run GRACE_BLESS=1 cargo test --test it reference::",
        path.display()
    );
}

fn grace_reference(topic: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_grace"))
        .args(["reference", topic])
        // Made from the code alone: no configuration file is read.
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_commands_exit_statuses_and_routes_pages_are_the_codes() {
    for (topic, page) in [
        ("cli", "cli.md"),
        ("exit-codes", "exit-codes.md"),
        ("http", "http.md"),
    ] {
        check(page, &grace_reference(topic));
    }
}

#[test]
fn the_commands_page_has_every_command_and_its_defaults() {
    let page = grace_reference("cli");
    for expected in [
        "## `grace ingest`",
        "## `grace review list`",
        "`--kb <NAME>`",
        "`GRACE_KB`",
        "`default`",
    ] {
        assert!(page.contains(expected), "{expected}");
    }
    assert!(
        !page.contains("## `grace reference"),
        "the hidden command is not listed"
    );
}

// ---------------------------------------------------------------------------
// The data folder's files

/// Every file or folder GRACE keeps in the data folder, as the code names
/// it, for a knowledge base `<kb>` other than `default` too.
fn files() -> Vec<(String, String, &'static str)> {
    let mut c = Config::default();
    c.storage.data_dir = PathBuf::from("DATA");
    c.collection.name = "COLLECTION".into();
    let show = |p: PathBuf| {
        format!(
            "`{}`",
            p.display()
                .to_string()
                .replace("DATA", "<data_dir>")
                .replace("COLLECTION", "<collection>")
        )
    };
    let data = c.storage.data_dir.clone();
    let kb = c.kb_dir();
    let store = c.collection_dir();
    vec![
        (
            "kb_dir".into(),
            show(data.join("kbs/<kb>")),
            "A knowledge base's own folder when it is not `default` (whose files are in the data folder itself): everything below marked *per knowledge base* is there.",
        ),
        (
            "collection_dir".into(),
            show(store.clone()),
            "The embedded store's collection (qdrant-edge segments, its settings in `edge_config.json`); per knowledge base.",
        ),
        (
            "the store's lock".into(),
            show(store.with_extension("lock")),
            "Held by the process that has the collection open for writing: one writer at a time.",
        ),
        (
            "manifest_path".into(),
            show(c.manifest_path()),
            "What the store holds, source by source (hash, chunks, readers, state); `grace doctor --repair` rebuilds it from the store. Under `manifests/qdrant/<host>_<port>/` for a Qdrant server.",
        ),
        (
            "review_db_path".into(),
            show(c.review_db_path()),
            "The review queue (SQLite): escalations, reviewers and their tokens, messages; per knowledge base.",
        ),
        (
            "SESSIONS_FILE".into(),
            show(kb.join(grace::session::SESSIONS_FILE)),
            "Conversations and runs waiting for a reply (SQLite); per knowledge base.",
        ),
        (
            "FEEDBACK_FILE".into(),
            show(kb.join(grace::feedback::FEEDBACK_FILE)),
            "Recorded runs and askers' ratings (SQLite); per knowledge base.",
        ),
        (
            "tool_stats_path".into(),
            show(c.tool_stats_path()),
            "Each tool's calls, failures and timings (SQLite); per knowledge base.",
        ),
        (
            "runtime_tools_path".into(),
            show(c.runtime_tools_path()),
            "Tools created at run time, their versions and audit (SQLite); per knowledge base.",
        ),
        (
            "ASKER_KEY_EXTENSION".into(),
            show(
                c.review_db_path()
                    .with_extension(grace::review::ASKER_KEY_EXTENSION),
            ),
            "The secret the askers' handles on escalations are made with (mode 0600): without it the handles given out stop working; per knowledge base.",
        ),
        (
            "PRINCIPALS_FILE".into(),
            show(data.join(grace::auth::PRINCIPALS_FILE)),
            "Principals and their API keys (hashes only), shared by every knowledge base (SQLite).",
        ),
        (
            "AUDIT_FILE".into(),
            show(data.join(grace::audit::AUDIT_FILE)),
            "The audit log (JSON lines, rotated), shared by every knowledge base.",
        ),
        (
            "uploads_dir".into(),
            show(c.uploads_dir()),
            "Files uploaded to `POST /v1/ingest`; per knowledge base.",
        ),
        (
            "reviewed_dir".into(),
            show(c.reviewed_dir()),
            "Reviewed answers promoted to knowledge, one Markdown file each, ingested like any document; per knowledge base.",
        ),
        (
            "self_calibration_path".into(),
            show(c.self_calibration_path()),
            "The self-calibration fit (`grace calibrate --self`); per knowledge base.",
        ),
        (
            "feedback_calibration_path".into(),
            show(c.feedback_calibration_path()),
            "The fit on people's feedback that scores runs (`confidence.feedback_calibration: auto`); per knowledge base.",
        ),
        (
            "feedback_fits_path".into(),
            show(c.feedback_fits_path()),
            "Every fit on people's feedback, kept or not, with its figures; per knowledge base.",
        ),
        (
            "vector_cache_path".into(),
            show(c.vector_cache_path()),
            "Sentence vectors `grace serve` saves every 30 s and at stop and loads before it listens; safe to delete (the cache then starts empty).",
        ),
    ]
}

/// The names the code gives the data folder's paths: `Config`'s path
/// functions and the `*_FILE` constants of the stores in it.
fn path_names_in_code() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for file in [
        "crates/grace-core/src/config/mod.rs",
        "crates/grace-core/src/config/kbs.rs",
    ] {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        for line in text.lines() {
            if let Some(rest) = line.trim().strip_prefix("pub fn ")
                && rest.contains("(&self) -> PathBuf")
            {
                names.insert(rest.split('(').next().unwrap().to_string());
            }
        }
    }
    for file in [
        "crates/grace/src/session/mod.rs",
        "crates/grace/src/feedback/mod.rs",
        "crates/grace-core/src/auth/mod.rs",
        "crates/grace-core/src/audit.rs",
        "crates/grace/src/review/handle.rs",
    ] {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        for line in text.lines() {
            if let Some(rest) = line.trim().strip_prefix("pub const ")
                && let Some((name, _)) = rest.split_once(':')
                && (name.ends_with("_FILE") || name.ends_with("_EXTENSION"))
            {
                names.insert(name.to_string());
            }
        }
    }
    // Where the collection lives for people (a folder or a server URL),
    // not a file of its own.
    names.remove("collection_location");
    names
}

#[test]
fn the_data_folder_page_lists_every_file_the_code_names() {
    let files = files();
    let listed: BTreeSet<String> = files.iter().map(|(name, _, _)| name.clone()).collect();
    let missing: Vec<String> = path_names_in_code()
        .into_iter()
        .filter(|n| !listed.contains(n))
        .collect();
    assert!(
        missing.is_empty(),
        "paths the code names and tests/reference.rs does not list: {missing:?}"
    );
    let mut page = String::from(
        "# The data folder\n\n<!-- Made by tests/reference.rs from the paths the code opens (GRACE_BLESS=1 writes it again). -->\n\nWhat GRACE keeps in `storage.data_dir` (`.grace` by default; `--data-dir`, `GRACE_STORAGE__DATA_DIR`), for the default knowledge base `default` and the collection `collection.name`. With `storage.state: postgres` the SQLite files' contents are in PostgreSQL instead ([Running several servers](../several-servers.md)). Back it up whole, with the server stopped, or see [Back up and restore](../howto/backup-restore.md).\n\n| path | what it holds |\n| --- | --- |\n",
    );
    for (_, path, what) in &files {
        page.push_str(&format!("| {path} | {what} |\n"));
    }
    page.push_str(&format!(
        "\nOutside the data folder, in GRACE's cache folder (`$CACHE_DIRECTORY`, else `$XDG_CACHE_HOME/grace`, else `~/.cache/grace`; [Environment variables](environment.md)), `models/<key>/` holds the embedding model prepared on first use for fast, small sessions: `{}` (the graph), `{}` (its weights as floats: about 90 MB for MiniLM) and `{}` (what it was made from, the checksums checked before each use); the key changes with the model file and the runtime. Safe to delete while no GRACE process runs: it is made again.\n",
        grace::embed::PREPARED_FILES[0], grace::embed::PREPARED_FILES[1], grace::embed::PREPARED_FILES[2]
    ));
    check("files.md", &page);
}

// ---------------------------------------------------------------------------
// Checked pages

/// Every Rust file's text under `dir` of the repository.
fn texts(dir: &str) -> Vec<(PathBuf, String)> {
    repo_files::read_tree(&root(), &[dir])
        .into_iter()
        .filter(|(path, _)| path.extension().is_some_and(|e| e == "rs"))
        .collect()
}

/// The `"GRACE_…"` string literals of `text` that name a variable of their
/// own (not a `GRACE_<SECTION>__<KEY>` override, not a prefix).
fn variables_read(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices("\"GRACE_") {
        let name: String = text[i + 1..]
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if text[i + 1 + name.len()..].starts_with('"')
            && !name.contains("__")
            && !name.ends_with('_')
        {
            out.insert(name);
        }
    }
    out
}

#[test]
fn the_environment_page_has_every_variable_the_program_reads() {
    let page = std::fs::read_to_string(reference("environment.md")).unwrap();
    let mut read = BTreeSet::new();
    for (_, text) in texts("src").into_iter().chain(texts("crates")) {
        read.extend(variables_read(&text));
    }
    assert!(read.len() >= 5, "{read:?}");
    let missing: Vec<&String> = read
        .iter()
        .filter(|v| !page.contains(&format!("`{v}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "variables the program reads that docs/src/reference/environment.md does not list: {missing:?}"
    );
}

/// The string literal at the start of `s` (after `"`), if it is a kind:
/// lowercase letters and underscores.
fn kind_at(s: &str) -> Option<String> {
    let kind: String = s
        .chars()
        .take_while(|c| c.is_ascii_lowercase() || *c == '_')
        .collect();
    (!kind.is_empty() && s[kind.len()..].starts_with('"')).then_some(kind)
}

/// The error types the server sends: the kind beside a status
/// (`StatusCode::X, "kind"` or `StatusCode::X => "kind"`), the reason of
/// a refused key (`unauthorized_because("kind"`) and of a refused token
/// (`JwtError::code`).
fn error_types_sent() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (path, text) in texts("crates/grace-serve/src")
        .into_iter()
        .chain(texts("crates/grace-core/src/auth"))
    {
        let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
        for (i, _) in flat.match_indices("StatusCode::") {
            let rest = &flat[i + "StatusCode::".len()..];
            let name_len = rest
                .find(|c: char| !(c.is_ascii_uppercase() || c == '_'))
                .unwrap_or(rest.len());
            let after = &rest[name_len..];
            if let Some(kind) = after
                .strip_prefix(", \"")
                .or_else(|| after.strip_prefix(" => \""))
                .and_then(kind_at)
            {
                out.insert(kind);
            }
        }
        for (i, _) in flat.match_indices("unauthorized_because( \"") {
            out.extend(kind_at(&flat[i + "unauthorized_because( \"".len()..]));
        }
        for (i, _) in flat.match_indices("unauthorized_because(\"") {
            out.extend(kind_at(&flat[i + "unauthorized_because(\"".len()..]));
        }
        if path.ends_with("auth/jwt.rs")
            && let Some(body) = flat.split("pub fn code(&self)").nth(1)
        {
            let body = body.split("} }").next().unwrap_or("");
            for (i, _) in body.match_indices("=> \"") {
                out.extend(kind_at(&body[i + 4..]));
            }
        }
    }
    out
}

#[test]
fn the_http_errors_page_has_every_error_type_the_server_sends() {
    let page = std::fs::read_to_string(reference("http-errors.md")).unwrap();
    let sent = error_types_sent();
    for expected in [
        "invalid_request",
        "not_found",
        "too_many_requests",
        "busy",
        "unknown_key",
        "expired",
        "payload_too_large",
    ] {
        assert!(
            sent.contains(expected),
            "{expected} not found in crates/grace-serve/src: {sent:?}"
        );
    }
    let missing: Vec<&String> = sent
        .iter()
        .filter(|k| !page.contains(&format!("`{k}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "error types the server sends that docs/src/reference/http-errors.md does not list: {missing:?}"
    );
    // And every type the page lists is sent somewhere.
    let code: String = texts("crates/grace-serve/src")
        .into_iter()
        .chain(texts("crates/grace-core/src/auth"))
        .map(|(_, t)| t)
        .collect();
    for line in page.lines().filter(|l| l.starts_with("| `")) {
        let kind = line[3..].split('`').next().unwrap();
        assert!(
            code.contains(&format!("\"{kind}\"")),
            "http-errors.md lists `{kind}`, which the server never sends"
        );
    }
}

#[test]
fn variables_read_finds_names_and_skips_overrides() {
    let found = variables_read(
        r#"env::var("GRACE_HOME"); env = "GRACE_KB"; "GRACE_STORAGE__DATA_DIR"; "GRACE_" "#,
    );
    assert_eq!(
        found,
        ["GRACE_HOME", "GRACE_KB"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    );
}
