//! Security review: documents nested deeper than a thread's stack.
//! The HTML loader walked the DOM recursively: about 100,000 nested
//! `<div>`s (half a megabyte, well under `ingest.max_file_bytes`) overflowed
//! the stack of the thread that loaded them, an abort that took the whole
//! process (the CLI, or `grace serve` with it) down; and html5ever's work
//! per block start tag grows with the depth, so 100,000 of them took about
//! 40 s to parse (a 10 MB file, hours). The walk now keeps its own stack,
//! and a page nested deeper than 2,000 elements is read by a linear tag
//! stripper (10 MB: about 1.4 s in a dev build). Each loader reads such a
//! document on a thread with the 2 MiB stack that tokio's blocking threads
//! and Rust's spawned threads get.

use crate::support::common;

use grace::ingest::load::{Format, Limits, load};

const DEPTH: usize = 100_000;
const STACK: usize = 2 * 1024 * 1024;

/// Loads `text` as `format` on a thread with a 2 MiB stack and returns all
/// its sections' text.
fn load_on_small_stack(text: String, format: Format) -> String {
    std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(move || {
            let doc =
                load(text.as_bytes(), format, &Limits::default()).expect("the document loads");
            doc.sections
                .iter()
                .map(|s| s.text.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap()
        .join()
        .expect("the loader's thread did not panic")
}

#[test]
fn html_nested_100000_deep_loads_without_overflowing_the_stack() {
    let html = format!(
        "<html><body>{}<p>the deepest paragraph</p>{}<p>after it</p></body></html>",
        "<div>".repeat(DEPTH),
        "</div>".repeat(DEPTH)
    );
    let text = load_on_small_stack(html, Format::Html);
    assert!(text.contains("the deepest paragraph"), "{text}");
    assert!(text.contains("after it"), "{text}");
    // Unclosed, mixed and inline elements too.
    let html = format!(
        "<body>{}deep text",
        "<div><span><b><section><li>".repeat(DEPTH / 5)
    );
    assert!(load_on_small_stack(html, Format::Html).contains("deep text"));
}

#[test]
fn markdown_and_rst_nested_100000_deep_load_without_overflowing_the_stack() {
    // Block quotes and lists inside each other, as deep as one line allows.
    let md = format!("# Deep\n\n{} the deepest quote\n", ">".repeat(DEPTH));
    assert!(load_on_small_stack(md, Format::Markdown).contains("the deepest quote"));
    let mut md = String::from("# Lists\n\n");
    for i in 0..2_000 {
        md.push_str(&" ".repeat(i * 2));
        md.push_str("- item\n");
    }
    md.push_str("\nthe end of the list\n");
    assert!(load_on_small_stack(md, Format::Markdown).contains("the end of the list"));
    let rst = format!("Deep\n====\n\n{}the deepest line\n", "   ".repeat(DEPTH));
    assert!(load_on_small_stack(rst, Format::ReStructuredText).contains("the deepest line"));
}

#[test]
fn a_deep_html_page_is_ingested_and_searchable_end_to_end() {
    let docs = tempfile::tempdir().unwrap();
    let page = docs.path().join("deep.html");
    std::fs::write(
        &page,
        format!(
            "<html><body>{}<p>The quarterly zephyr calibration uses a brass anemometer.</p></body></html>",
            "<div>".repeat(DEPTH)
        ),
    )
    .unwrap();
    let data = tempfile::tempdir().unwrap();
    let kb = std::sync::Arc::new(common::open(common::config(data.path())));
    // Ingest on a thread with the stack `grace serve` gives blocking work.
    let kb2 = kb.clone();
    let dir = docs.path().to_path_buf();
    let report = std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(move || kb2.ingest(&[dir], &Default::default(), &mut |_| {}))
        .unwrap()
        .join()
        .expect("ingest did not panic")
        .unwrap();
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert_eq!(report.added, 1);
    let hits = kb
        .search("zephyr calibration anemometer", Some(1), None)
        .unwrap();
    assert!(
        hits[0].text.contains("brass anemometer"),
        "{:?}",
        hits[0].text
    );
}
