//! What a reviewer may not read of an escalation, taken out before they
//! see it.
//!
//! An escalation carries the asker's run: the passages its searches found,
//! the draft made of them, the steps' inputs. The asker may read documents
//! the reviewer may not. Each passage of a document the reviewer may not
//! read is removed; a draft, a step input or an earlier turn that draws on
//! one is withheld whole (its text is made of that document). The count
//! goes with the escalation, so the reviewer knows something was held back
//! and can hand it to someone who may read it.

use serde_json::Value;

use super::queue::Escalation;
use crate::access::ReadScope;
use crate::exec::RunReport;
use crate::ingest::manifest::Manifest;
use crate::tools::ToolOutput;

/// Withholds from each of `escalations` what `scope` may not read, by the
/// readers `manifest` records for each source. A source the manifest does
/// not hold (its document since removed) is withheld too, but a web page's
/// (`http://`, `https://`), which no one restricts.
pub fn for_scope(escalations: &mut [Escalation], scope: &ReadScope, manifest: Option<&Manifest>) {
    if *scope == ReadScope::All {
        return;
    }
    let may_read = readable(scope, manifest);
    for e in escalations {
        withhold(e, &may_read);
    }
}

/// Whether `scope` may read a source, by the readers `manifest` records.
pub fn readable<'a>(
    scope: &'a ReadScope,
    manifest: Option<&'a Manifest>,
) -> impl Fn(&str) -> bool + 'a {
    move |source: &str| match manifest.and_then(|m| m.sources.get(source)) {
        Some(entry) => scope.may_read(&entry.readers),
        None => source.starts_with("http://") || source.starts_with("https://"),
    }
}

/// What a document's reader may not see stands in its place as this.
const WITHHELD: &str = "(withheld: it quotes documents you may not read)";

/// Removes from `e` what comes from a document `may_read` refuses; returns
/// how many passages, drafts and inputs were withheld.
pub fn withhold(e: &mut Escalation, may_read: &dyn Fn(&str) -> bool) -> usize {
    let mut texts = Vec::new();
    let mut withheld = from_report_quoting(&mut e.run, may_read, &mut texts);
    if let Some(report) = e.resolution.as_mut().and_then(|r| r.report.as_mut()) {
        withheld += from_report_quoting(report, may_read, &mut texts);
    }
    scrub_request(&mut e.request, &texts);
    e.withheld += withheld;
    withheld
}

/// [`withhold`] for one run's report.
pub fn from_report(run: &mut RunReport, may_read: &dyn Fn(&str) -> bool) -> usize {
    from_report_quoting(run, may_read, &mut Vec::new())
}

/// [`from_report`], adding to `texts` the drafts withheld (a question for
/// a person may quote one in its options).
fn from_report_quoting(
    run: &mut RunReport,
    may_read: &dyn Fn(&str) -> bool,
    texts: &mut Vec<String>,
) -> usize {
    let mut withheld = 0;
    let unreadable = |a: &crate::tools::Answer| {
        a.citations
            .iter()
            .filter_map(|c| c.source.as_deref())
            .any(|s| !may_read(s))
    };
    let take = |a: &mut crate::tools::Answer, texts: &mut Vec<String>| {
        texts.push(std::mem::take(&mut a.text));
        a.citations.clear();
    };
    for step in &mut run.steps {
        let mut touched = false;
        let result = &mut step.result;
        match &mut result.output {
            ToolOutput::Passages(passages) => {
                let before = passages.len();
                passages.retain(|p| may_read(&p.source));
                touched = passages.len() < before;
                withheld += before - passages.len();
            }
            ToolOutput::Answer(a) if unreadable(a) => {
                take(a, texts);
                touched = true;
                withheld += 1;
            }
            // A run-time tool's or another server's data may carry passages.
            ToolOutput::Data(v) if mentions_unreadable(v, may_read) => {
                *v = Value::String(WITHHELD.into());
                touched = true;
                withheld += 1;
            }
            _ => {}
        }
        result.sources.retain(|s| may_read(s));
        // A step's input may quote passages (a reasoning step's sources).
        if mentions_unreadable(&step.input, may_read) {
            step.input = Value::String(WITHHELD.into());
            touched = true;
            withheld += 1;
        }
        // The factors were measured on what is withheld.
        if touched {
            result.factors = Default::default();
            step.factors = Default::default();
            step.confidence.contributions.clear();
        }
    }
    if let Some(a) = &mut run.answer
        && unreadable(a)
    {
        take(a, texts);
        withheld += 1;
    }
    // Earlier turns' answers, the agent's thoughts and a follow-up's
    // rewrite are made of what the asker could read: with anything
    // withheld, they go too.
    if withheld > 0 {
        for turn in &mut run.conversation {
            if turn.answer.take().is_some() {
                withheld += 1;
            }
        }
        if run.agent.take().is_some() {
            withheld += 1;
        }
        if run.rewrite.take().is_some() {
            withheld += 1;
        }
    }
    if let Some(request) = &mut run.escalation {
        scrub_request(request, texts);
    }
    withheld
}

/// A question for a person whose options quote a withheld draft: those
/// options say so instead.
fn scrub_request(request: &mut crate::tools::UserRequest, texts: &[String]) {
    let quotes = |option: &str| {
        texts.iter().filter(|t| !t.trim().is_empty()).any(|t| {
            option.contains(t.trim()) || first_words(t).is_some_and(|w| option.contains(w))
        })
    };
    for option in &mut request.options {
        if quotes(option) {
            *option = WITHHELD.to_string();
        }
    }
}

/// The first 60 characters of `text` (an option may quote a draft cut
/// short, or with its markers moved).
fn first_words(text: &str) -> Option<&str> {
    let text = text.trim();
    (text.chars().count() > 60).then(|| crate::text::truncate_chars(text, 60))
}

/// Whether any `source` string inside `v` names a document `may_read`
/// refuses (passages in a step's input carry theirs).
fn mentions_unreadable(v: &Value, may_read: &dyn Fn(&str) -> bool) -> bool {
    let mut pending = vec![v];
    while let Some(v) = pending.pop() {
        match v {
            Value::Object(map) => {
                if let Some(Value::String(s)) = map.get("source")
                    && !may_read(s)
                {
                    return true;
                }
                pending.extend(map.values());
            }
            Value::Array(items) => pending.extend(items),
            _ => {}
        }
    }
    false
}
