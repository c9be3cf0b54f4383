//! Layers point one way.
//!
//! - No module of the library (`crates/grace/src/` and
//!   `crates/grace-core/src/`, read as one tree), of a front door's crate
//!   (`crates/grace-eval/src/`, `crates/grace-mcp/src/`,
//!   `crates/grace-serve/src/`, each a tree of its own) or of the `grace`
//!   binary (`src/bin/grace/`) reaches itself through what it uses. A module is a
//!   file (a folder's `mod.rs`); its dependencies are the `crate::…` and
//!   `super::…` paths its code names (tests and comments aside), each
//!   resolved to the module that *defines* the name: a `pub use`
//!   re-export is followed to its source.
//! - Inside the library no module takes a name from the crate root's
//!   re-exports (`crate::Config`): those are the public face for users.
//! - The layers the top-level modules form (each one above everything it
//!   uses) are the ones ARCHITECTURE.md lists; a new edge that changes them
//!   fails here until the table (and the thought behind it) changes too.
//! - In the binary, `output` imports none of the commands.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The library's error sum: `error::Error` wraps every layer's own error
/// enum (`ConfigError`, `StoreError`, `ToolError`, …) so that callers match
/// one type. It names the layers' error types only to wrap them, while the
/// knowledge base, the tool registry and the modules above return it: the
/// checks set its own edges aside (edges *to* it stay), and ARCHITECTURE.md
/// says so.
const ERROR_SUM: &str = "error";

/// The modules of the tree at `src` (not descending into `skip`), by path.
fn modules(src: &Path, skip: &str) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut pending = vec![src.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != skip) {
                    pending.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.iter().any(|p| p == "tests") {
                continue;
            }
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            // The root: `lib.rs` or the binary's `main.rs`.
            if parts == ["lib"] || parts == ["main"] {
                parts.clear();
            }
            out.insert(parts.join("::"), path);
        }
    }
    out
}

/// The code of a module without comments and without what only tests
/// compile (`#[cfg(test)]` and the item after it, a block to its end).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("//") {
            continue;
        }
        if trimmed.starts_with("#[cfg(test)]") {
            // Skip the next item: one line, or up to its closing brace.
            let mut depth = 0i32;
            for next in lines.by_ref() {
                depth += next.matches('{').count() as i32 - next.matches('}').count() as i32;
                if depth <= 0 && (next.trim_end().ends_with(';') || next.trim_end().ends_with('}'))
                {
                    break;
                }
            }
            continue;
        }
        out.push(line);
    }
    out.join("\n")
}

/// Every path a use-tree names, from `text` just after its prefix:
/// `a::b::C` → [`a::b::C`]; `a::{b::C, d::{E, F}}` → [`a::b::C`,
/// `a::d::E`, `a::d::F`].
fn use_tree(text: &str) -> Vec<String> {
    fn tree(chars: &[char], i: &mut usize, base: &str, out: &mut Vec<String>) {
        let ident = |c: char| c.is_alphanumeric() || c == '_' || c == ':';
        let skip_ws = |i: &mut usize| {
            while *i < chars.len() && chars[*i].is_whitespace() {
                *i += 1;
            }
        };
        skip_ws(i);
        let start = *i;
        while *i < chars.len() && ident(chars[*i]) {
            *i += 1;
        }
        let segment: String = chars[start..*i].iter().collect();
        let path = match (base.is_empty(), segment.trim_end_matches(':')) {
            (_, "") => base.to_string(),
            (true, s) => s.to_string(),
            (false, s) => format!("{base}::{s}"),
        };
        if *i < chars.len() && chars[*i] == '{' {
            *i += 1;
            loop {
                skip_ws(i);
                if *i >= chars.len() || chars[*i] == '}' {
                    *i += 1;
                    break;
                }
                tree(chars, i, &path, out);
                skip_ws(i);
                // An alias (`X as Y`) or a glob names nothing new.
                while *i < chars.len() && !matches!(chars[*i], ',' | '}') {
                    *i += 1;
                }
                if *i < chars.len() && chars[*i] == ',' {
                    *i += 1;
                }
            }
        } else if !path.is_empty() {
            out.push(path);
        }
    }
    let chars: Vec<char> = text.chars().take(4000).collect();
    let mut out = Vec::new();
    tree(&chars, &mut 0, "", &mut out);
    out
}

/// Paths after each `prefix` (`crate::`, `super::`) in `text`.
fn paths_after(text: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices(prefix) {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        out.extend(use_tree(&text[i + prefix.len()..]));
    }
    out
}

/// A tree of modules with the names each re-exports.
struct Tree {
    modules: BTreeMap<String, PathBuf>,
    /// Each module's code, read once ([`code`]).
    code: BTreeMap<String, String>,
    /// (module, name) → the path it re-exports, absolute in the tree.
    reexports: BTreeMap<(String, String), String>,
}

fn parent_of(module: &str) -> String {
    let mut parts: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
    parts.pop();
    parts.join("::")
}

fn join(base: &str, rest: &str) -> String {
    match (base.is_empty(), rest.is_empty()) {
        (true, _) => rest.to_string(),
        (_, true) => base.to_string(),
        _ => format!("{base}::{rest}"),
    }
}

impl Tree {
    /// The modules of the trees at `roots` (each `(src, skip)`) as one
    /// tree: the library's crates re-export each other's modules under the
    /// same names, so `crate::config` in `grace` is `grace-core`'s
    /// `config`. The first root's crate root is the tree's.
    fn new(roots: &[(PathBuf, &str)]) -> Tree {
        let mut modules = BTreeMap::new();
        for (src, skip) in roots {
            for (name, path) in self::modules(src, skip) {
                modules.entry(name).or_insert(path);
            }
        }
        let code: BTreeMap<String, String> =
            modules.iter().map(|(m, p)| (m.clone(), code(p))).collect();
        let mut reexports = BTreeMap::new();
        for (name, text) in &code {
            for (at, _) in text.match_indices("use ") {
                let head = text[..at].trim_end();
                if !(head.ends_with("pub") || head.ends_with(')')) {
                    continue;
                }
                let rest = &text[at + 4..];
                let (base, rest) = if let Some(r) = rest.strip_prefix("crate::") {
                    (String::new(), r)
                } else if let Some(r) = rest.strip_prefix("super::") {
                    (parent_of(name), r)
                } else if let Some(r) = rest.strip_prefix("self::") {
                    (name.clone(), r)
                } else {
                    (name.clone(), rest)
                };
                for p in use_tree(rest) {
                    let last = p.rsplit("::").next().unwrap_or(&p).to_string();
                    reexports.insert((name.clone(), last), join(&base, &p));
                }
            }
        }
        Tree {
            modules,
            code,
            reexports,
        }
    }

    /// The module that defines what `path` (absolute) names.
    fn resolve(&self, path: &str) -> Option<String> {
        let mut path = path.to_string();
        for _ in 0..8 {
            let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
            let n = (0..=segments.len())
                .rev()
                .find(|n| self.modules.contains_key(&segments[..*n].join("::")))?;
            let module = segments[..n].join("::");
            let Some(next) = segments.get(n) else {
                return Some(module);
            };
            match self.reexports.get(&(module.clone(), next.to_string())) {
                Some(target) if *target != path => {
                    path = join(target, &segments[n + 1..].join("::"));
                }
                _ => return Some(module),
            }
        }
        None
    }

    /// Each module's dependencies within the tree.
    fn graph(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut graph = BTreeMap::new();
        for (name, text) in &self.code {
            let mut deps = BTreeSet::new();
            for p in paths_after(text, "crate::") {
                deps.extend(self.resolve(&p));
            }
            for p in paths_after(text, "super::") {
                deps.extend(self.resolve(&join(&parent_of(name), &p)));
            }
            deps.remove(name);
            if name == ERROR_SUM {
                deps.clear();
            }
            graph.insert(name.clone(), deps);
        }
        graph
    }
}

/// The library's tree, read once for every test here.
fn library() -> &'static Tree {
    static LIBRARY: std::sync::OnceLock<Tree> = std::sync::OnceLock::new();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    LIBRARY.get_or_init(|| {
        Tree::new(&[
            (repo.join("crates/grace/src"), ""),
            (repo.join("crates/grace-core/src"), ""),
        ])
    })
}

/// The front doors' crates, each above the library: cargo keeps them there
/// (`grace` cannot depend on them), these checks keep their insides.
const FRONT_DOORS: [&str; 3] = [
    "crates/grace-eval/src",
    "crates/grace-mcp/src",
    "crates/grace-serve/src",
];

fn binary() -> Tree {
    Tree::new(&[(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bin/grace"),
        "",
    )])
}

/// Strongly connected components with more than one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        let graph = s.graph;
        for w in graph[v].iter().map(String::as_str) {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

fn assert_acyclic(what: &str, graph: &BTreeMap<String, BTreeSet<String>>) {
    let found = cycles(graph);
    let report: Vec<String> = found
        .iter()
        .map(|c| {
            let edges: Vec<String> = c
                .iter()
                .map(|m| {
                    let to: Vec<&String> = graph[m].iter().filter(|d| c.contains(d)).collect();
                    format!("  {m} -> {to:?}")
                })
                .collect();
            format!("cycle {c:?}:\n{}", edges.join("\n"))
        })
        .collect();
    assert!(found.is_empty(), "{what}:\n{}", report.join("\n"));
}

/// Top-level modules and the top-level modules they use (the root and
/// the error sum aside).
fn top_level(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, BTreeSet<String>> {
    let top = |m: &str| m.split("::").next().unwrap_or("").to_string();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, deps) in graph {
        let from = top(m);
        if from.is_empty() || from == ERROR_SUM {
            continue;
        }
        let entry = out.entry(from.clone()).or_default();
        for d in deps {
            let to = top(d);
            if !to.is_empty() && to != from && to != ERROR_SUM {
                entry.insert(to);
            }
        }
    }
    out
}

/// Each top-level module's layer: 0 when it uses none of the others, else
/// one above the highest it uses.
fn layers(top: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<usize, Vec<String>> {
    fn layer(
        m: &str,
        top: &BTreeMap<String, BTreeSet<String>>,
        memo: &mut BTreeMap<String, usize>,
    ) -> usize {
        if let Some(l) = memo.get(m) {
            return *l;
        }
        let l = top
            .get(m)
            .into_iter()
            .flatten()
            .map(|d| layer(d, top, memo) + 1)
            .max()
            .unwrap_or(0);
        memo.insert(m.to_string(), l);
        l
    }
    let mut memo = BTreeMap::new();
    let mut out: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for m in top.keys() {
        let l = layer(m, top, &mut memo);
        out.entry(l).or_default().push(m.clone());
    }
    out
}

/// The layer table ARCHITECTURE.md holds between its `layers` markers:
/// rows `| 3 | `search`, `ingest` | … |`.
fn documented_layers() -> BTreeMap<usize, Vec<String>> {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
            .unwrap();
    let start = text
        .find("<!-- layers:begin -->")
        .expect("layers:begin marker");
    let end = text.find("<!-- layers:end -->").expect("layers:end marker");
    let mut out = BTreeMap::new();
    for row in text[start..end].lines() {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let Some(layer) = cells.get(1).and_then(|c| c.parse::<usize>().ok()) else {
            continue;
        };
        let mut names: Vec<String> = cells[2]
            .split(',')
            .map(|n| n.trim().trim_matches('`').to_string())
            .filter(|n| !n.is_empty())
            .collect();
        names.sort();
        out.insert(layer, names);
    }
    out
}

#[test]
fn no_library_module_reaches_itself() {
    let graph = library().graph();
    assert!(graph.len() > 100, "the modules were found: {}", graph.len());
    assert_acyclic("the library", &graph);
    for src in FRONT_DOORS {
        let graph = Tree::new(&[(Path::new(env!("CARGO_MANIFEST_DIR")).join(src), "")]).graph();
        assert!(
            graph.len() > 4,
            "{src}: the modules were found: {}",
            graph.len()
        );
        assert_acyclic(src, &graph);
    }
}

#[test]
fn no_module_of_the_binary_reaches_itself_and_output_imports_no_command() {
    let graph = binary().graph();
    for m in ["", "cli", "ask", "output", "output::run"] {
        assert!(graph.contains_key(m), "the binary's module {m:?} was found");
    }
    assert_acyclic("the grace binary", &graph);
    for (m, deps) in &graph {
        if m == "output" || m.starts_with("output::") {
            let outside: Vec<&String> = deps
                .iter()
                .filter(|d| *d != "output" && !d.starts_with("output::"))
                .collect();
            assert!(outside.is_empty(), "{m} imports {outside:?}");
        }
    }
}

#[test]
fn inside_the_library_names_come_from_their_defining_module() {
    let tree = library();
    let root: BTreeSet<String> = tree
        .reexports
        .keys()
        .filter(|(m, _)| m.is_empty())
        .map(|(_, name)| name.clone())
        // `grace` re-exports `grace-core`'s modules under their own names:
        // `crate::config` is the module's home in either crate.
        .filter(|name| !tree.modules.contains_key(name))
        .collect();
    assert!(
        root.contains("Config") && root.contains("Grace"),
        "{root:?}"
    );
    let mut found = Vec::new();
    for (name, path) in &tree.modules {
        if name.is_empty() {
            continue;
        }
        let text = &tree.code[name];
        let mut paths = paths_after(text, "crate::");
        if !name.contains("::") {
            paths.extend(paths_after(text, "super::"));
        }
        for p in paths {
            if root.contains(p.split("::").next().unwrap_or("")) {
                found.push(format!("{}: crate::{p}", path.display()));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_layers_are_the_ones_architecture_md_lists() {
    let top = top_level(&library().graph());
    assert_acyclic("the top-level modules (the error sum aside)", &top);
    let found = layers(&top);
    let table: Vec<String> = found
        .iter()
        .map(|(l, ms)| {
            let names: Vec<String> = ms.iter().map(|m| format!("`{m}`")).collect();
            format!("| {l} | {} |", names.join(", "))
        })
        .collect();
    assert_eq!(
        documented_layers(),
        found,
        "ARCHITECTURE.md's layer table differs from the modules' imports; \
         the layers found are (first two columns):\n{}",
        table.join("\n")
    );
    // The ends the design fixes: config at the bottom, the facade on top
    // (the front doors are crates above it: FRONT_DOORS).
    assert_eq!(
        found.get(&0).map(|m| m.contains(&"config".into())),
        Some(true)
    );
    assert_eq!(found.values().last(), Some(&vec!["service".to_string()]));
}

#[test]
fn the_checks_find_what_they_look_for() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    graph.insert("a".into(), ["b".to_string()].into());
    graph.insert("b".into(), ["c".to_string()].into());
    graph.insert("c".into(), ["a".to_string()].into());
    graph.insert("d".into(), ["a".to_string()].into());
    assert_eq!(cycles(&graph), vec![vec!["a", "b", "c"]]);
    assert_eq!(
        use_tree("{config::Config, kb::{KnowledgeBase, OpenMode as O}, x::*};"),
        ["config::Config", "kb::KnowledgeBase", "kb::OpenMode", "x"]
    );
    let review = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/grace/src/review/mod.rs");
    assert!(
        code(&review).contains("pub use"),
        "a `mod tests;` near the top hides nothing after it"
    );
    // Re-exports resolve to the defining module, and the real graph has
    // the edges it should.
    let tree = library();
    assert_eq!(
        tree.resolve("review::ReviewQueue").as_deref(),
        Some("review::queue")
    );
    assert_eq!(tree.resolve("Config").as_deref(), Some("config"));
    let real = tree.graph();
    assert!(real["config"].is_empty(), "{:?}", real["config"]);
    assert!(real["agent"].iter().any(|d| d.starts_with("tools")));
    assert!(real["exec"].iter().any(|d| d.starts_with("agent")));
}
