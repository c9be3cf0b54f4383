//! The book (`docs/`) cannot drift from the code or break its links.
//!
//! - The configuration chapter's tables are generated from the config's own
//!   doc comments (`crates/grace-core/src/config/*.rs`) and `Config::default()`: the test
//!   fails when they differ, and `GRACE_BLESS=1 cargo test --test it book::`
//!   writes them again.
//! - Every relative link and image in the book, README.md, README.ja.md,
//!   ARCHITECTURE.md and SECURITY.md points at a file that exists, and every
//!   `#anchor` at a heading there; every chapter is in SUMMARY.md.
//! - A section named in words instead of a link (`see "Security checks"`,
//!   `the book, "Evaluation"`, `"Load" above`, `see Evaluation`) is a
//!   heading or a bold paragraph title somewhere in the book: such a
//!   reference cannot outlive its section either.
//! - Every troubleshooting entry's message still exists in the code
//!   (`tests/troubleshooting_messages.txt`: a piece of each message and the
//!   file that prints it).
//! - Every `GRACE_…` variable the documents name is one GRACE reads: a
//!   `GRACE_<SECTION>__<KEY>` is a key of the configuration, any other is
//!   read by the code, a script or a test.

use crate::support::repo_files;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------------------
// Configuration tables

/// A named field of a config struct: its key, type and doc comment.
struct Field {
    name: String,
    ty: String,
    doc: String,
}

/// The structs with named fields in `crates/grace-core/src/config/*.rs`
/// (and its section folders, `config/tools/*.rs`), by name.
fn config_structs() -> BTreeMap<String, Vec<Field>> {
    let mut out = BTreeMap::new();
    let config = root().join("crates/grace-core/src/config");
    let entries = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect()
    };
    let mut files: Vec<PathBuf> = entries(&config)
        .into_iter()
        .flat_map(|p| if p.is_dir() { entries(&p) } else { vec![p] })
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let Some(name) = lines[i]
                .strip_prefix("pub struct ")
                .and_then(|r| r.strip_suffix(" {"))
            else {
                i += 1;
                continue;
            };
            let mut fields = Vec::new();
            let (mut doc, mut skip) = (Vec::new(), false);
            i += 1;
            while i < lines.len() && lines[i] != "}" {
                let line = lines[i].trim();
                if let Some(d) = line.strip_prefix("///") {
                    doc.push(d.trim().to_string());
                } else if line.starts_with("#[") {
                    skip |= line.contains("serde(skip)");
                } else if let Some(field) = line.strip_prefix("pub ") {
                    let (key, ty) = field.split_once(':').unwrap();
                    if !skip {
                        fields.push(Field {
                            name: key.trim().to_string(),
                            ty: ty.trim().trim_end_matches(',').to_string(),
                            doc: doc.join(" "),
                        });
                    }
                    (doc, skip) = (Vec::new(), false);
                }
                i += 1;
            }
            out.insert(name.to_string(), fields);
        }
    }
    out
}

/// A doc comment as one table cell: links reduced to their text, pipes
/// escaped.
fn cell(doc: &str) -> String {
    let mut out = String::new();
    let mut rest = doc;
    while let Some(start) = rest.find('[') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        match after.find(']') {
            Some(end) => {
                out.push_str(&after[..end]);
                rest = &after[end + 1..];
                // `[text](target)` or `[text]: …`: drop the target.
                if let Some(target) = rest.strip_prefix('(') {
                    rest = target.split_once(')').map_or("", |(_, r)| r);
                }
            }
            None => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.replace('|', "\\|")
}

fn default_cell(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) if s.is_empty() => "`\"\"`".into(),
        serde_json::Value::String(s) => format!("`{s}`"),
        serde_json::Value::Null => "none".into(),
        other => format!("`{}`", other.to_string().replace('|', "\\|")),
    }
}

/// The struct a field's type holds (`StorageConfig`, `Vec<McpServerConfig>`),
/// if it is one of the config's, and whether it is a list or a map of them.
fn nested<'a>(ty: &str, structs: &'a BTreeMap<String, Vec<Field>>) -> Option<(&'a str, &'a str)> {
    let words: Vec<&str> = ty
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .collect();
    let inner = words.iter().rev().find(|w| structs.contains_key(**w))?;
    let (name, _) = structs.get_key_value(*inner)?;
    let shape = match words.first() {
        Some(&"Vec") => "[]",
        Some(&"BTreeMap") | Some(&"HashMap") => ".<name>",
        _ => "",
    };
    Some((name.as_str(), shape))
}

fn rows(
    prefix: &str,
    fields: &[Field],
    defaults: Option<&serde_json::Value>,
    structs: &BTreeMap<String, Vec<Field>>,
    out: &mut Vec<String>,
) {
    for f in fields {
        let key = format!("{prefix}{}", f.name);
        let value = defaults.and_then(|d| d.get(&f.name));
        match nested(&f.ty, structs) {
            Some((inner, "")) => rows(&format!("{key}."), &structs[inner], value, structs, out),
            Some((inner, shape)) => {
                let default = value.map_or("—".into(), default_cell);
                out.push(format!("| `{key}` | {default} | {} |", cell(&f.doc)));
                rows(
                    &format!("{key}{shape}."),
                    &structs[inner],
                    None,
                    structs,
                    out,
                );
            }
            None => {
                let default = value.map_or("—".into(), default_cell);
                out.push(format!("| `{key}` | {default} | {} |", cell(&f.doc)));
            }
        }
    }
}

/// The generated part of the configuration chapter.
fn config_tables() -> String {
    let structs = config_structs();
    let defaults = serde_json::to_value(grace::Config::default()).unwrap();
    let mut out = vec![
        "<!-- Generated from crates/grace-core/src/config/*.rs by tests/book.rs: edit the doc comments there, then run GRACE_BLESS=1 cargo test --test it book::. -->".to_string(),
    ];
    for section in &structs["Config"] {
        let (inner, shape) = nested(&section.ty, &structs).expect("a section is a struct");
        out.push(String::new());
        out.push(format!("## `{}`", section.name));
        out.push(String::new());
        out.push(cell(&section.doc));
        out.push(String::new());
        out.push("| key | default | what it does |".into());
        out.push("| --- | --- | --- |".into());
        rows(
            &format!("{}{shape}.", section.name),
            &structs[inner],
            defaults.get(&section.name),
            &structs,
            &mut out,
        );
    }
    out.join("\n") + "\n"
}

const BEGIN: &str = "<!-- config-tables:begin -->\n";
const END: &str = "<!-- config-tables:end -->";

#[test]
fn the_configuration_chapter_is_the_configs_own_doc_comments() {
    let path = root().join("docs/src/configuration.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text.find(BEGIN).expect("the begin marker") + BEGIN.len();
    let end = text.find(END).expect("the end marker");
    let generated = config_tables();
    if std::env::var_os("GRACE_BLESS").is_some() {
        let updated = format!("{}{generated}{}", &text[..start], &text[end..]);
        std::fs::write(&path, updated).unwrap();
        return;
    }
    assert!(
        text[start..end] == generated,
        "docs/src/configuration.md's tables differ from crates/grace-core/src/config/*.rs: run \
         `GRACE_BLESS=1 cargo test --test it book::` and commit the result"
    );
    // Every key of the defaults has its row.
    for key in [
        "storage.data_dir",
        "confidence.thresholds.silent",
        "server.bind",
    ] {
        assert!(generated.contains(&format!("| `{key}` |")), "{key}");
    }
}

// ---------------------------------------------------------------------------
// Links

/// `text` without fenced code blocks and inline code.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push('\n');
            continue;
        }
        if fenced {
            out.push('\n');
            continue;
        }
        let mut inline = false;
        for c in line.chars() {
            if c == '`' {
                inline = !inline;
            } else if !inline {
                out.push(c);
            }
        }
        out.push('\n');
    }
    out
}

/// mdBook's (and GitHub's) anchor of a heading.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c),
            c if c.is_whitespace() => Some('-'),
            _ => None,
        })
        .collect()
}

/// A markdown file with its `{{#include …}}` lines expanded (one level: the
/// book includes whole files that include nothing).
fn read_markdown(path: &Path) -> String {
    let read = |p: &Path| {
        std::fs::read_to_string(p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
    };
    let mut out = String::new();
    for line in read(path).lines() {
        match line
            .trim()
            .strip_prefix("{{#include ")
            .and_then(|r| r.strip_suffix("}}"))
        {
            Some(included) => out.push_str(&read(&path.parent().unwrap().join(included))),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

fn anchors(path: &Path) -> BTreeSet<String> {
    let text = read_markdown(path);
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if !fenced && line.starts_with('#') {
            out.insert(slug(&line.trim_start_matches('#').replace('`', "")));
        }
    }
    out
}

/// The targets of `[text](target)` and `![alt](target)` in `text`.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("](") {
        let rest = &text[i + 2..];
        if let Some(end) = rest.find(')') {
            let target = rest[..end].split_whitespace().next().unwrap_or("");
            out.push(target.to_string());
        }
    }
    out
}

/// Broken links of `file`; `headings` keeps each linked file's anchors,
/// read once.
fn broken_links(file: &Path, headings: &mut BTreeMap<PathBuf, BTreeSet<String>>) -> Vec<String> {
    let text = prose(&read_markdown(file));
    let dir = file.parent().unwrap();
    let mut broken = Vec::new();
    for target in link_targets(&text) {
        if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
        let to = if path.is_empty() {
            file.to_path_buf()
        } else {
            dir.join(path)
        };
        if !to.exists() {
            broken.push(format!("{}: {target} (no such file)", file.display()));
            continue;
        }
        let markdown = to.extension().is_some_and(|e| e == "md");
        if !anchor.is_empty()
            && markdown
            && !headings
                .entry(to.clone())
                .or_insert_with(|| anchors(&to))
                .contains(anchor)
        {
            broken.push(format!("{}: {target} (no such heading)", file.display()));
        }
    }
    broken
}

/// The book's pages: `docs/src/*.md` and those in its folders
/// (`howto/`, `reference/`), sorted.
fn chapters() -> Vec<PathBuf> {
    let book = root().join("docs/src");
    let mut out = Vec::new();
    let mut dirs = vec![book];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_link_and_image_resolves_and_every_chapter_is_in_the_summary() {
    let book = root().join("docs/src");
    let chapters = chapters();
    assert!(chapters.len() >= 12, "{chapters:?}");
    let summary = std::fs::read_to_string(book.join("SUMMARY.md")).unwrap();
    for chapter in &chapters {
        let name = chapter
            .strip_prefix(&book)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            name == "SUMMARY.md" || summary.contains(&format!("]({name})")),
            "{name} is not in SUMMARY.md"
        );
    }
    let (mut broken, mut headings) = (Vec::new(), BTreeMap::new());
    for file in chapters.iter().cloned().chain(
        [
            "README.md",
            "README.ja.md",
            "ARCHITECTURE.md",
            "SECURITY.md",
        ]
        .iter()
        .map(|f| root().join(f)),
    ) {
        broken.extend(broken_links(&file, &mut headings));
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

// ---------------------------------------------------------------------------
// Sections named in words

/// A section name as compared: lowercase, without backticks, quotes and a
/// final full stop.
fn normal(name: &str) -> String {
    name.replace(['`', '"', '“', '”'], "")
        .trim()
        .trim_end_matches(['.', ':'])
        .trim()
        .to_lowercase()
}

/// Every heading and bold paragraph title (`**Hybrid search.** …`) of
/// `files`, as [`normal`] names.
fn section_names(files: &[PathBuf]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for file in files {
        let text = read_markdown(file);
        let mut fenced = false;
        for line in text.lines() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
            }
            if fenced {
                continue;
            }
            if line.starts_with('#') {
                out.insert(normal(line.trim_start_matches('#')));
            }
            let item = line
                .trim_start()
                .trim_start_matches(['-', '*', ' '])
                .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.')
                .trim_start();
            if let Some(bold) = item
                .strip_prefix("**")
                .or_else(|| line.trim_start().strip_prefix("**"))
                .and_then(|r| r.split_once("**"))
            {
                out.insert(normal(bold.0));
            }
        }
    }
    out
}

/// The sections `text` names in words: a quoted name after `see `, `the
/// book, `, `the book's ` or `the book: `, or before ` above` or ` below`;
/// and `see Name…` (a capital after `see`, up to the first punctuation),
/// which must begin with a section's name. Each as (name, whether only its
/// beginning must match).
fn named_sections(text: &str) -> Vec<(String, bool)> {
    let text = prose(text).replace('\n', " ");
    let mut out = Vec::new();
    let quotes = |s: &str| -> Option<(String, usize)> {
        let open = s.chars().next().filter(|c| *c == '"' || *c == '“')?;
        let close = if open == '"' { '"' } else { '”' };
        let body = &s[open.len_utf8()..];
        let end = body.find(close)?;
        Some((
            body[..end].to_string(),
            open.len_utf8() + end + close.len_utf8(),
        ))
    };
    // A file name or an acronym after `see` names no section.
    let not_a_name = |word: &str| {
        word.contains(['.', '/', '_'])
            || word.len() > 1 && word.chars().all(|c| c.is_uppercase() || c.is_ascii_digit())
    };
    for lead in ["see ", "See ", "the book, ", "the book's ", "the book: "] {
        for (i, _) in text.match_indices(lead) {
            // "foresee ", and a quoted example of a reference.
            if text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '"' || c == '“') {
                continue;
            }
            let after = &text[i + lead.len()..];
            if let Some((name, _)) = quotes(after) {
                out.push((name, false));
            } else if lead.eq_ignore_ascii_case("see ")
                && after.starts_with(char::is_uppercase)
                && !not_a_name(after.split_whitespace().next().unwrap_or(""))
            {
                let phrase: String = after
                    .chars()
                    .take_while(|c| !",.;:()[]".contains(*c))
                    .collect();
                out.push((phrase.trim().to_string(), true));
            }
        }
    }
    for (i, c) in text.char_indices() {
        if c != '"' && c != '“' {
            continue;
        }
        if let Some((name, len)) = quotes(&text[i..]) {
            let rest = &text[i + len..];
            if (rest.starts_with(" above") || rest.starts_with(" below"))
                && name.starts_with(|c: char| c.is_uppercase())
            {
                out.push((name, false));
            }
        }
    }
    out
}

/// The names in `file` that name no section of `names`.
fn unknown_sections(file: &Path, names: &BTreeSet<String>) -> Vec<String> {
    named_sections(&read_markdown(file))
        .into_iter()
        .filter(|(name, prefix)| {
            let n = normal(name);
            !if *prefix {
                names.iter().any(|s| {
                    n == *s
                        || n.strip_prefix(s.as_str())
                            .is_some_and(|r| r.starts_with(' '))
                })
            } else {
                names.contains(&n)
            }
        })
        .map(|(name, _)| format!("{}: \"{name}\" (no such section)", file.display()))
        .collect()
}

/// The book's chapters and the repository's top-level documents.
fn documents() -> Vec<PathBuf> {
    let mut files = chapters();
    files.extend(
        ["README.md", "ARCHITECTURE.md", "SECURITY.md"]
            .iter()
            .map(|f| root().join(f)),
    );
    files
}

#[test]
fn every_section_named_in_words_exists() {
    let files = documents();
    let names = section_names(&files);
    let unknown: Vec<String> = files
        .iter()
        .flat_map(|f| unknown_sections(f, &names))
        .collect();
    assert!(
        unknown.is_empty(),
        "references to no section:\n{}",
        unknown.join("\n")
    );
}

#[test]
fn the_section_check_finds_a_reference_to_no_section() {
    let dir = std::env::temp_dir().join(format!("grace-book-sections-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("a.md"),
        "# Real heading\n\n**Bold title.** Text.\n\nSee \"Real heading\", see \"Gone\", the \
         book, \"Bold title\"; see Real heading for more, see Settings, and \"Missing\" above. \
         `see \"in code\"` is code; see README.md is a file.\n",
    )
    .unwrap();
    let a = dir.join("a.md");
    let names = section_names(std::slice::from_ref(&a));
    let unknown = unknown_sections(&a, &names);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(unknown.len(), 3, "{unknown:?}");
    for gone in ["Gone", "Settings", "Missing"] {
        assert!(
            unknown.iter().any(|u| u.contains(gone)),
            "{gone}: {unknown:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// Environment variables

/// Variables the documents name only to say they are gone.
const REMOVED: &[&str] = &["GRACE_SERVER__REVIEWER_API_KEY"];

/// The `GRACE_…` names in `text`.
fn grace_variables(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices("GRACE_") {
        if text[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let name: String = text[i..]
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        let name = name.trim_end_matches('_');
        if name.len() > "GRACE_".len() && !name.ends_with("__") {
            out.insert(name.to_string());
        }
    }
    out
}

/// The text of every file under `dirs` (of the repository), for a search.
fn code_text(dirs: &[&str]) -> String {
    repo_files::read_tree(&root(), dirs)
        .into_iter()
        .map(|(_, text)| text)
        .collect()
}

#[test]
fn every_grace_variable_the_documents_name_is_read() {
    let config = serde_json::to_value(grace::Config::default()).unwrap();
    let code = code_text(&[
        "src", "crates", "scripts", "tests", "benches", "examples", ".ci",
    ]);
    let mut named = BTreeSet::new();
    for file in documents()
        .iter()
        .chain([root().join("README.ja.md")].iter())
    {
        named.extend(grace_variables(&read_markdown(file)));
    }
    assert!(named.len() >= 20, "{named:?}");
    let mut wrong = Vec::new();
    for var in &named {
        let rest = &var["GRACE_".len()..];
        if REMOVED.contains(&var.as_str()) {
            continue;
        }
        if rest.contains("__") {
            let mut at = &config;
            let found = rest
                .split("__")
                .all(|key| match at.get(key.to_lowercase()) {
                    Some(next) => {
                        at = next;
                        true
                    }
                    None => false,
                });
            if !found {
                wrong.push(format!("{var}: no such configuration key"));
            }
        } else if !code.contains(&format!("\"{var}\""))
            && !code.contains(&format!("{var}="))
            && !code.contains(&format!("${{{var}"))
            && !code.contains(&format!("${var}"))
        {
            wrong.push(format!("{var}: nothing reads it"));
        }
    }
    for var in REMOVED {
        let rest = &var["GRACE_".len()..].to_lowercase();
        let (section, key) = rest.split_once("__").unwrap();
        assert!(
            config[section].get(key).is_none(),
            "{var} is back: take it out of REMOVED"
        );
    }
    assert!(
        wrong.is_empty(),
        "variables the documents name:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_troubleshooting_message_is_still_printed_by_the_code() {
    let list = std::fs::read_to_string(root().join("tests/troubleshooting_messages.txt")).unwrap();
    let chapter = std::fs::read_to_string(root().join("docs/src/troubleshooting.md")).unwrap();
    let entries: Vec<(&str, &str)> = list
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_once('\t').expect("message<TAB>file"))
        .collect();
    assert!(entries.len() >= 15, "{} entries", entries.len());
    let mut gone = Vec::new();
    for (message, file) in &entries {
        let code = std::fs::read_to_string(root().join(file)).unwrap_or_default();
        if !code.contains(message) {
            gone.push(format!("{file}: {message}"));
        }
        // The chapter quotes it as printed (placeholders filled in), so a
        // piece of it is there too.
        let head: String = message.chars().take(15).collect();
        if !chapter.contains(&head) {
            gone.push(format!("troubleshooting.md does not quote: {message}"));
        }
    }
    assert!(
        gone.is_empty(),
        "messages no longer in the code:\n{}",
        gone.join("\n")
    );
}

#[test]
fn the_link_check_finds_a_broken_link() {
    let dir = std::env::temp_dir().join(format!("grace-book-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("b.md"), "# Real heading\n").unwrap();
    std::fs::write(
        dir.join("a.md"),
        "[ok](b.md#real-heading) [gone](c.md) [bad](b.md#nothing) `[code](x.md)`\n\
         ```\n[fenced](y.md)\n```\n[web](https://example.com)\n",
    )
    .unwrap();
    let broken = broken_links(&dir.join("a.md"), &mut BTreeMap::new());
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert!(broken[0].contains("c.md") && broken[1].contains("b.md#nothing"));
    assert_eq!(slug("What `grace mcp` returns"), "what-grace-mcp-returns");
}
