//! Layers point one way: no module of `src/` (a file; a folder's
//! `mod.rs`) reaches itself through what it uses. Each module's
//! dependencies are the `crate::…` and `super::…` paths its code names
//! (tests and comments aside), resolved to the longest module path that
//! exists; a cycle fails with the modules in it and their edges.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Root re-exports (`grace::Config`, …) and the modules they come from.
const ROOT_ALIASES: &[(&str, &str)] = &[
    ("Config", "config"),
    ("KnowledgeBase", "kb"),
    ("OpenMode", "kb"),
    ("Status", "kb"),
    ("status", "kb"),
    ("Passage", "search"),
    ("Error", "error"),
    ("Result", "error"),
    ("AskOptions", "service"),
    ("AskOutcome", "service"),
    ("Grace", "service"),
    ("GraceBuilder", "service"),
    ("RunCounts", "service"),
    ("RunEvent", "service"),
    ("RunStream", "service"),
];

fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut pending = vec![src.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "bin") {
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
            if parts == ["lib"] || parts.last().is_some_and(|p| p == "tests") {
                continue;
            }
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            out.insert(parts.join("::"), path);
        }
    }
    out
}

/// The code of a module without its tests and comments.
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap();
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Paths after `prefix` in `text` (`crate::a::b::C`, and each item of
/// `crate::{a::B, c}`).
fn paths_after(text: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == ':';
    for (i, _) in text.match_indices(prefix) {
        let rest = &text[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let item: String = item.trim().chars().take_while(|c| ident(*c)).collect();
                if !item.is_empty() {
                    out.push(item);
                }
            }
        } else {
            let path: String = rest.chars().take_while(|c| ident(*c)).collect();
            out.push(path.trim_end_matches(':').to_string());
        }
    }
    out
}

fn resolve(path: &str, modules: &BTreeMap<String, PathBuf>) -> Option<String> {
    let mut segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    if let Some((_, module)) = ROOT_ALIASES
        .iter()
        .find(|(a, _)| segments.first() == Some(a))
    {
        segments = vec![module];
    }
    (1..=segments.len())
        .rev()
        .map(|n| segments[..n].join("::"))
        .find(|m| modules.contains_key(m))
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = modules(&src);
    let mut graph = BTreeMap::new();
    for (name, path) in &modules {
        let text = code(path);
        // `super` is the parent module: of `a::b` (a/b.rs), `a`; of `a`
        // (a/mod.rs or a.rs), the crate root.
        let mut parent: Vec<&str> = name.split("::").collect();
        parent.pop();
        let mut deps = BTreeSet::new();
        for p in paths_after(&text, "crate::") {
            deps.extend(resolve(&p, &modules));
        }
        for p in paths_after(&text, "super::") {
            let full = parent
                .iter()
                .map(|s| s.to_string())
                .chain([p])
                .collect::<Vec<_>>()
                .join("::");
            deps.extend(resolve(&full, &modules));
        }
        deps.remove(name);
        graph.insert(name.clone(), deps);
    }
    graph
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

#[test]
fn no_module_reaches_itself() {
    let graph = graph();
    assert!(graph.len() > 40, "the modules were found: {}", graph.len());
    let found = cycles(&graph);
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
    assert!(found.is_empty(), "{}", report.join("\n"));
}

#[test]
fn the_check_finds_a_cycle_when_there_is_one() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    graph.insert("a".into(), ["b".to_string()].into());
    graph.insert("b".into(), ["c".to_string()].into());
    graph.insert("c".into(), ["a".to_string()].into());
    graph.insert("d".into(), ["a".to_string()].into());
    assert_eq!(cycles(&graph), vec![vec!["a", "b", "c"]]);
    // And the real graph has the edges it should: config at the bottom.
    let real = self::graph();
    assert!(real["config"].is_empty(), "{:?}", real["config"]);
    assert!(real["agent"].contains("tools"));
    assert!(real["exec"].contains("agent"));
}
