//! Headings from a PDF's outline (bookmarks), read with limits: every
//! object once, named destinations looked up, pages found in the page
//! tree.

use std::collections::{HashMap, HashSet};

use pdf_oxide::PdfDocument;
use pdf_oxide::object::{Object, ObjectRef};
use pdf_oxide::optional_content::decode_pdf_text_string;

use super::{MAX_LEVEL, MAX_OUTLINE, Mark};

/// The outline's entries that point at a page, in document order, with
/// their depth. Read here rather than with pdf_oxide's `get_outline`, which
/// recurses without a limit and follows `/Next` cycles for ever (found by
/// fuzzing): every object is visited once, at most `MAX_OUTLINE` of them.
pub(super) fn outline_marks(doc: &PdfDocument, pages: usize) -> Vec<Mark> {
    let Some(catalog) = doc.catalog().ok() else {
        return Vec::new();
    };
    let Some(outlines) = catalog.as_dict().and_then(|d| d.get("Outlines")) else {
        return Vec::new();
    };
    let Some(first) = resolve(doc, outlines)
        .as_ref()
        .and_then(|o| o.as_dict()?.get("First")?.as_reference())
    else {
        return Vec::new();
    };
    let pages_by_ref = page_refs(doc, &catalog, pages);
    let mut names = None; // the named destinations, read on first need
    let mut marks = Vec::new();
    let mut seen = HashSet::new();
    // Depth first: a node's children before its next sibling.
    let mut stack = vec![(1usize, first)];
    while let Some((level, node_ref)) = stack.pop() {
        if !seen.insert(node_ref) || seen.len() > MAX_OUTLINE {
            continue;
        }
        let Ok(node) = doc.load_object(node_ref) else {
            continue;
        };
        let Some(dict) = node.as_dict() else {
            continue;
        };
        if let Some(next) = dict.get("Next").and_then(Object::as_reference) {
            stack.push((level, next));
        }
        if let Some(child) = dict.get("First").and_then(Object::as_reference) {
            stack.push((level + 1, child));
        }
        let title = dict
            .get("Title")
            .and_then(|t| resolve(doc, t))
            .and_then(|t| t.as_string().map(decode_pdf_text_string))
            .unwrap_or_default();
        let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
        let dest = dict.get("Dest").cloned().or_else(|| {
            let action = resolve(doc, dict.get("A")?)?;
            action.as_dict()?.get("D").cloned()
        });
        let page =
            dest.and_then(|d| destination_page(doc, &catalog, &d, &pages_by_ref, &mut names));
        if let Some(page) = page
            && !title.is_empty()
        {
            marks.push(Mark {
                page,
                level: level.min(MAX_LEVEL),
                title,
            });
        }
    }
    // Outlines are not always in page order; a stable sort keeps the order
    // of entries on the same page.
    marks.sort_by_key(|m| m.page);
    marks
}

/// `object`, or the object it refers to.
fn resolve(doc: &PdfDocument, object: &Object) -> Option<Object> {
    match object {
        Object::Reference(r) => doc.load_object(*r).ok(),
        other => Some(other.clone()),
    }
}

/// Page object → page index, from the page tree (each node once, at most
/// `pages` leaves).
fn page_refs(doc: &PdfDocument, catalog: &Object, pages: usize) -> HashMap<ObjectRef, usize> {
    let mut found = HashMap::new();
    let Some(root) = catalog
        .as_dict()
        .and_then(|d| d.get("Pages"))
        .and_then(Object::as_reference)
    else {
        return found;
    };
    let mut seen = HashSet::new();
    let mut stack = vec![root];
    while let Some(r) = stack.pop() {
        if found.len() >= pages || !seen.insert(r) || seen.len() > MAX_OUTLINE + pages {
            continue;
        }
        let Ok(node) = doc.load_object(r) else {
            continue;
        };
        match node
            .as_dict()
            .and_then(|d| d.get("Kids"))
            .and_then(|k| resolve(doc, k))
        {
            Some(Object::Array(kids)) => {
                stack.extend(kids.iter().rev().filter_map(Object::as_reference));
            }
            _ => {
                let index = found.len();
                found.insert(r, index);
            }
        }
    }
    found
}

/// The page a destination points at: an array whose first element is a
/// page, a dictionary with `/D`, or a name looked up in the catalog's
/// `/Dests` or `/Names /Dests` tree.
fn destination_page(
    doc: &PdfDocument,
    catalog: &Object,
    dest: &Object,
    pages: &HashMap<ObjectRef, usize>,
    names: &mut Option<HashMap<Vec<u8>, Object>>,
) -> Option<usize> {
    let mut dest = resolve(doc, dest)?;
    // A name → its destination → perhaps a dictionary with /D → an array.
    for _ in 0..4 {
        dest = match dest {
            Object::Array(items) => {
                return items
                    .first()?
                    .as_reference()
                    .and_then(|r| pages.get(&r).copied());
            }
            Object::Dictionary(d) => resolve(doc, d.get("D")?)?,
            Object::String(name) => {
                let names = names.get_or_insert_with(|| named_destinations(doc, catalog));
                resolve(doc, names.get(&name)?)?
            }
            Object::Name(name) => {
                let names = names.get_or_insert_with(|| named_destinations(doc, catalog));
                resolve(doc, names.get(name.as_bytes())?)?
            }
            _ => return None,
        };
    }
    None
}

/// Every named destination: the catalog's `/Dests` dictionary and the
/// `/Names /Dests` name tree (each node once, at most `MAX_OUTLINE` × 10
/// names).
fn named_destinations(doc: &PdfDocument, catalog: &Object) -> HashMap<Vec<u8>, Object> {
    let limit = MAX_OUTLINE * 10;
    let mut out = HashMap::new();
    let Some(catalog) = catalog.as_dict() else {
        return out;
    };
    if let Some(Object::Dictionary(dests)) = catalog.get("Dests").and_then(|d| resolve(doc, d)) {
        for (k, v) in dests.into_iter().take(limit) {
            out.insert(k.into_bytes(), v);
        }
    }
    let tree = catalog
        .get("Names")
        .and_then(|n| resolve(doc, n))
        .and_then(|n| n.as_dict()?.get("Dests").cloned());
    let mut stack: Vec<Object> = tree.into_iter().collect();
    let mut seen = HashSet::new();
    while let Some(node) = stack.pop() {
        if out.len() >= limit || seen.len() > limit {
            break;
        }
        if let Object::Reference(r) = node
            && !seen.insert(r)
        {
            continue;
        }
        let Some(node) = resolve(doc, &node) else {
            continue;
        };
        let Some(dict) = node.as_dict() else {
            continue;
        };
        if let Some(Object::Array(pairs)) = dict.get("Names").and_then(|n| resolve(doc, n)) {
            for pair in pairs.chunks(2) {
                if let [Object::String(k), v] = pair {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        if let Some(Object::Array(kids)) = dict.get("Kids").and_then(|k| resolve(doc, k)) {
            stack.extend(
                kids.into_iter()
                    .filter(|k| matches!(k, Object::Reference(_))),
            );
        }
    }
    out
}
