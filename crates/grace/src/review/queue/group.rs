//! Near-repeat escalations: a question asked again, or nearly so, while
//! an escalation of it is open joins that one (its lead). Reviewers see
//! one escalation with every asker's words, answer it once, and each
//! asker gets the answer.
//!
//! Joining compares the questions' embeddings (`review.group_similarity`,
//! on GRACE's similarity scale), within one knowledge base and one set of
//! allowed reviewers, with two guards an embedding does not keep: the
//! same identifiers (`ORB-2001` is not `ORB-2002`) and the same names
//! (capitalised words: "the London office" is not "the Paris office",
//! though MiniLM puts the two questions at 0.83). What they still let
//! through ("sick days" for "vacation days", 0.82) a reviewer sees among
//! the askers' words and detaches ([`ReviewQueue::detach`]); an asker
//! whose words differ from the question answered is told which question
//! it was ([`Resolution::for_question`]).

use crate::access::ReadScope;

use super::types::{AlsoAsked, Escalation, Resolution, Status, Viewer};
use super::{ReviewQueue, conflict};
use crate::embed::{cosine, dequantise};
use crate::review::Result;
use crate::review::db::to_time;
use crate::state::{Conn, ToValue, params};
use std::collections::HashMap;

/// The open escalations a new one is compared with, newest first: a
/// bound on the work of one escalation, whatever the queue holds.
pub const MAX_CANDIDATES: i64 = 1_000;
/// The joined escalations an escalation shows (all are settled with it).
pub const MAX_SHOWN: i64 = 200;
/// [`MAX_SHOWN`] as a count.
const MAX_SHOWN_COUNT: usize = MAX_SHOWN as usize;
/// Escalations whose groups are read in one query (its parameters).
const GROUP_BATCH: usize = 500;

/// Whether two questions name the same things: the same identifiers, and
/// each one's names (capitalised words past a sentence's first) among the
/// other's words, ignoring case and inner punctuation ("Wi-Fi" is
/// "wifi").
pub fn same_subjects(a: &str, b: &str) -> bool {
    let ids = |q: &str| {
        let mut ids = crate::lexical::identifiers(q);
        ids.sort();
        ids.dedup();
        ids
    };
    if ids(a) != ids(b) {
        return false;
    }
    let (words_a, words_b) = (words(a), words(b));
    names(a).iter().all(|n| words_b.contains(n)) && names(b).iter().all(|n| words_a.contains(n))
}

/// One word of a question (see [`tokens`]).
struct Token {
    /// Lowercased, without punctuation ("Wi-Fi" → "wifi").
    word: String,
    /// Its part before an apostrophe, lowercased ("What's" → "what").
    head: String,
    /// Whether it starts a sentence.
    first: bool,
    /// Whether it was capitalised.
    capital: bool,
}

/// A question's words (see [`Token`]).
fn tokens(question: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut first = true;
    for raw in question.split_whitespace() {
        let lower = |s: &str| -> String {
            s.chars()
                .filter(|c| c.is_alphanumeric())
                .flat_map(char::to_lowercase)
                .collect()
        };
        let word = lower(raw);
        let head = lower(raw.split(['\'', '’']).next().unwrap_or(raw));
        let capital = raw
            .chars()
            .find(|c| c.is_alphanumeric())
            .is_some_and(char::is_uppercase);
        if !word.is_empty() {
            out.push(Token {
                word,
                head,
                first,
                capital,
            });
            first = false;
        }
        if raw.ends_with(['.', '?', '!', ':', ';']) {
            first = true;
        }
    }
    out
}

fn words(question: &str) -> Vec<String> {
    tokens(question).into_iter().map(|t| t.word).collect()
}

/// Capitalised words longer than one letter ("I" is no name): past a
/// sentence's first word, or a first word that carries a subject ("London
/// office wifi password?"; not "What", "What's", "Is", "Can").
fn names(question: &str) -> Vec<String> {
    tokens(question)
        .into_iter()
        .filter(|t| {
            t.capital
                && t.word.chars().count() > 1
                && (!t.first || crate::followup::is_key_term(&t.head))
        })
        .map(|t| t.word)
        .collect()
}

impl ReviewQueue {
    /// The open escalation a new one asking `question` (embedded as
    /// `vector`, already quantised and read back) joins: the most alike
    /// of the newest [`MAX_CANDIDATES`] open leads of `collection` for the
    /// same reviewers (`allowed` as stored), if it is alike enough and
    /// names the same things.
    pub(super) fn lead_for(
        &self,
        tx: &Conn<'_>,
        collection: &str,
        allowed: Option<&str>,
        question: &str,
        vector: &[f32],
        scope: &ReadScope,
    ) -> Result<Option<i64>> {
        let sql = tx.dialect();
        let candidates = tx
            .query(
                &format!(
                    "SELECT e.id, COALESCE({}, e.question), v.vector, {} \
                     FROM escalations e \
                     JOIN escalation_vectors v ON v.escalation_id = e.id \
                     WHERE e.status IN ('pending', 'claimed') AND e.collection = ?1 \
                       AND e.allowed IS NOT DISTINCT FROM ?2 \
                       AND NOT EXISTS (SELECT 1 FROM escalation_groups g \
                            JOIN escalations l ON l.id = g.lead_id \
                            WHERE g.escalation_id = e.id AND l.status IN ('pending', 'claimed')) \
                     ORDER BY e.id DESC LIMIT ?3",
                    sql.json_text("e.run", &["rewrite", "question"]),
                    sql.json_value("e.run", &["scope"]),
                ),
                params![collection, allowed, MAX_CANDIDATES],
            )?
            .iter()
            .map(|r| {
                Ok((
                    r.get::<i64>(0)?,
                    r.get::<String>(1)?,
                    r.get::<Vec<u8>>(2)?,
                    r.get::<Option<String>>(3)?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        // The same question quantises to the same bytes: a cosine of 1
        // within rounding.
        let threshold = self.group_cosine - 1e-5;
        // Only an escalation asked within the same scope: its answer may
        // draw on what this asker may not read, or the other way round.
        let same_scope = |stored: &Option<String>| {
            let theirs = match stored {
                None => ReadScope::All,
                Some(text) => serde_json::from_str(text).unwrap_or_else(|_| ReadScope::public()),
            };
            theirs == *scope
        };
        let best = candidates
            .into_iter()
            .filter(|(_, _, _, s)| same_scope(s))
            .map(|(id, q, v, _)| (id, q, v))
            .filter(|(_, _, v)| v.len() == vector.len())
            .map(|(id, q, v)| (id, q, cosine(vector, &dequantise(&v))))
            .filter(|(_, q, c)| *c >= threshold && same_subjects(question, q))
            .max_by(|a, b| a.2.total_cmp(&b.2));
        Ok(best.map(|(id, _, _)| id))
    }

    /// The open escalations that joined `lead`, oldest first, at most
    /// `limit`.
    pub(super) fn also_asked(
        &self,
        conn: &Conn<'_>,
        lead: i64,
        limit: i64,
    ) -> Result<Vec<AlsoAsked>> {
        conn.query(
            "SELECT e.id, e.question, e.asker, e.created_at FROM escalation_groups g \
             JOIN escalations e ON e.id = g.escalation_id \
             WHERE g.lead_id = ?1 AND e.status IN ('pending', 'claimed') ORDER BY e.id LIMIT ?2",
            params![lead, limit],
        )?
        .iter()
        .map(|r| {
            Ok(AlsoAsked {
                id: r.get(0)?,
                question: r.get(1)?,
                asker: r.get(2)?,
                created_at: to_time(r.get(3)?),
            })
        })
        .collect()
    }

    /// `e` with its group: the open lead it joined, or those that joined it
    /// (at most [`MAX_SHOWN`]).
    pub(super) fn with_group(&self, conn: &Conn<'_>, e: Escalation) -> Result<Escalation> {
        let mut one = self.with_groups(conn, vec![e])?;
        Ok(one.remove(0))
    }

    /// Each of `list` with its group, as [`Self::with_group`], in two
    /// queries per [`GROUP_BATCH`] escalations rather than two each (a
    /// round trip each on PostgreSQL).
    pub(super) fn with_groups(
        &self,
        conn: &Conn<'_>,
        mut list: Vec<Escalation>,
    ) -> Result<Vec<Escalation>> {
        for batch in list.chunks_mut(GROUP_BATCH) {
            let ids: Vec<i64> = batch.iter().map(|e| e.id).collect();
            let marks = (1..=ids.len())
                .map(|i| format!("?{i}"))
                .collect::<Vec<_>>()
                .join(", ");
            let params: Vec<&dyn ToValue> = ids.iter().map(|id| id as &dyn ToValue).collect();
            let mut joined: HashMap<i64, i64> = HashMap::new();
            for r in conn.query(
                &format!(
                    "SELECT g.escalation_id, g.lead_id FROM escalation_groups g \
                     JOIN escalations l ON l.id = g.lead_id \
                     WHERE g.escalation_id IN ({marks}) AND l.status IN ('pending', 'claimed')"
                ),
                &params,
            )? {
                joined.insert(r.get(0)?, r.get(1)?);
            }
            let mut asked: HashMap<i64, Vec<AlsoAsked>> = HashMap::new();
            for r in conn.query(
                &format!(
                    "SELECT g.lead_id, e.id, e.question, e.asker, e.created_at FROM escalation_groups g \
                     JOIN escalations e ON e.id = g.escalation_id \
                     WHERE g.lead_id IN ({marks}) AND e.status IN ('pending', 'claimed') \
                     ORDER BY g.lead_id, e.id"
                ),
                &params,
            )? {
                let shown = asked.entry(r.get(0)?).or_default();
                if shown.len() < MAX_SHOWN_COUNT {
                    shown.push(AlsoAsked {
                        id: r.get(1)?,
                        question: r.get(2)?,
                        asker: r.get(3)?,
                        created_at: to_time(r.get(4)?),
                    });
                }
            }
            for e in batch.iter_mut() {
                e.joined_to = joined.get(&e.id).copied();
                e.also_asked = asked.remove(&e.id).unwrap_or_default();
            }
        }
        Ok(list)
    }

    /// Settles every open escalation that joined `lead` as the lead was
    /// settled (`to`, by `actor`): each asker gets the lead's answer (or
    /// its rejection), told which question it answers when theirs was
    /// worded otherwise. Their drafts were not judged: no verdict.
    pub(super) fn settle_joined(
        &self,
        tx: &Conn<'_>,
        lead: &Escalation,
        to: Status,
        resolution: &Resolution,
        actor: &str,
        action: &str,
    ) -> Result<()> {
        for joined in self.also_asked(tx, lead.id, i64::MAX)? {
            let e = self.load(tx, joined.id, Viewer::Asker)?;
            let mut settled = resolution.clone();
            settled.verdict = None;
            settled.promoted = None;
            // Compared and shown as run (a follow-up's rewrite, not "and
            // on staging?").
            let answered_for = lead.run.question_as_run();
            settled.for_question = (e.run.question_as_run().trim() != answered_for.trim())
                .then(|| answered_for.to_string());
            if let Some(answered) = &resolution.report {
                let mut report = e.run.clone();
                report.answer = answered.answer.clone();
                report.decision = answered.decision;
                report.confidence = answered.confidence;
                report.level = answered.level;
                report.decided_by = answered.decided_by.clone();
                report.escalation = None;
                settled.report = Some(report);
            }
            let detail = format!("with #{}", lead.id);
            self.set_status(tx, &e, to, Some(&settled), actor, action, &detail)?;
        }
        Ok(())
    }

    /// A reviewer takes escalation `id` out of the group it joined: it
    /// asks something else, and stands alone from now on.
    pub fn detach(&self, id: i64, reviewer: &str) -> Result<Escalation> {
        self.write(|tx| {
            self.require_reviewer(tx, reviewer)?;
            let e = self.load(tx, id, Viewer::Reviewer(reviewer))?;
            let Some(lead) = e.joined_to else {
                return Err(conflict(id, "joined no other escalation".into()));
            };
            if !e.status.is_open() {
                return Err(conflict(id, format!("is already {}", e.status)));
            }
            tx.execute(
                "DELETE FROM escalation_groups WHERE escalation_id = ?1",
                params![id],
            )?;
            self.audit(
                tx,
                id,
                reviewer,
                "detached",
                Some(e.status),
                Some(e.status),
                &format!("from #{lead}"),
            )?;
            self.load(tx, id, Viewer::Reviewer(reviewer))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::same_subjects;

    #[test]
    fn names_and_identifiers_keep_near_questions_apart() {
        // Paraphrases name the same things.
        assert!(same_subjects(
            "What is the Wi-Fi password for the London office?",
            "london office wifi password?"
        ));
        assert!(same_subjects(
            "Is it possible to deploy Orbit services on Azure?",
            "does orbit deploy to azure"
        ));
        assert!(same_subjects(
            "I can't log in. What do I do?",
            "What do I do when I can't log in?"
        ));
        assert!(same_subjects(
            "Can I deploy on Fridays?",
            "Is deploying on Fridays allowed?"
        ));
        // Another name, another identifier: another question.
        assert!(!same_subjects(
            "What is the Wi-Fi password for the London office?",
            "What is the Wi-Fi password for the Paris office?"
        ));
        assert!(!same_subjects(
            "London office wifi password?",
            "Paris office wifi password?"
        ));
        assert!(!same_subjects(
            "What does ORB-2001 mean?",
            "What does ORB-2002 mean?"
        ));
        assert!(!same_subjects(
            "Can I deploy Orbit services to Azure?",
            "Can I deploy Orbit services to AWS?"
        ));
    }

    #[test]
    fn hostile_questions_are_compared_without_panicking() {
        for q in [
            "",
            "   ",
            "?!.",
            "Ünïcödé Straße — 東京 ＡＢＣ",
            &"Word ".repeat(5_000),
        ] {
            assert!(same_subjects(q, q), "{q:?}");
        }
        assert!(!same_subjects("東京 Tokyo office", "大阪 Osaka office"));
    }
}
