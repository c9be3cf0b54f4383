//! Feedback: askers' ratings of answers, kept durably beside what each
//! run was scored on, so that they (and reviewers' verdicts, which the
//! review queue keeps with each escalation's resolution, found through the
//! run's `review_id`) can become labels for the confidence model.
//!
//! A [`FeedbackStore`] is one SQLite file, `feedback.sqlite3`, in the data
//! folder (WAL, `synchronous=FULL`: an acknowledged rating survives a
//! crash), or its tables in PostgreSQL (`storage.state: postgres`), which
//! every server shares. Every finished run is recorded under an id (`ans_` and 32
//! random hex digits, [`ANSWER_ID_PATTERN`]) with its question, answer,
//! decision, the answer step's factors, the weights' version, the
//! collection and the cited documents ([`RecordedRun`]); a refit reads
//! these and never runs a question again.
//!
//! - **One rating per asker per answer.** The asker is the authenticated
//!   principal's name, or the session when the asker is anonymous
//!   ([`Asker`]). A run belongs to the asker who asked it: a rating from
//!   anyone else is refused as if the run did not exist. A second rating
//!   replaces the first.
//! - **Bounded.** A rating's text is at most [`MAX_RATING_TEXT_CHARS`]; an
//!   asker gives at most `feedback.max_ratings_per_hour`; at most
//!   `feedback.max_runs` runs are kept (the oldest runs nobody rated and
//!   that were not escalated go first).
//! - **What people did not get.** Each run keeps its question's embedding
//!   (quantised, [`crate::embed::quantise`]) so that [`FeedbackStore::unmet`] can hand
//!   the gap report ([`crate::gaps`]) the declined, escalated and
//!   down-rated questions without embedding anything again.

mod boost;
mod rating;
mod recorded;

pub use self::boost::{DocumentRating, MAX_BOOST_RATINGS, document_boosts, document_history};
pub use self::rating::{Asker, MAX_ASKER_CHARS, MAX_RATING_TEXT_CHARS, Rating, Reason, Vote};
pub use self::recorded::RecordedRun;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::config::{Config, FeedbackConfig, StateBackend};
use crate::state::{Conn, Schema, StateError, Store, params};
use crate::state::{now_ms, to_time};

/// The file name of the feedback database in the data folder.
pub const FEEDBACK_FILE: &str = "feedback.sqlite3";
/// Prefix of a recorded run's id.
pub const ANSWER_PREFIX: &str = "ans_";
/// The pattern of a recorded run's id, as the OpenAPI document publishes it.
pub const ANSWER_ID_PATTERN: &str = r"^ans_[0-9a-f]{32}$";
/// An hour, in the database's milliseconds (the rate limit's window).
const HOUR_MS: i64 = 3_600_000;

/// The feedback store's schema, at version 2.
const SCHEMA: Schema = Schema {
    name: "feedback",
    what: "feedback database",
    ddl: DDL,
    version: 2,
    migrations: &[],
    durable: true,
};
const DDL: &str = "
CREATE TABLE IF NOT EXISTS runs (
    id         TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,           -- Unix milliseconds
    asker      TEXT NOT NULL,              -- who may rate it: session:<id> | asker:<name>
    decision   TEXT NOT NULL,
    review_id  INTEGER,                    -- its escalation, when one was queued
    record     TEXT NOT NULL               -- JSON RecordedRun
);
CREATE INDEX IF NOT EXISTS runs_created ON runs(created_at);
CREATE INDEX IF NOT EXISTS runs_review ON runs(review_id);
CREATE TABLE IF NOT EXISTS ratings (
    run_id   TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    asker    TEXT NOT NULL,
    vote     TEXT NOT NULL,                -- up | down
    reason   TEXT,                         -- wrong | incomplete | not_what_i_asked | outdated | other
    text     TEXT,
    rated_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, asker)
);
-- Each rating given or changed, for the hourly limit (older rows are
-- removed by every rating).
CREATE TABLE IF NOT EXISTS rating_events (
    asker TEXT NOT NULL,
    at    INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS rating_events_asker ON rating_events(asker, at);
-- The question's embedding (version 2): the unit vector's components
-- times 127 as signed bytes, for the gap report.
CREATE TABLE IF NOT EXISTS run_vectors (
    run_id TEXT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    vector BLOB NOT NULL
);
";

/// Result of feedback operations.
pub type Result<T> = std::result::Result<T, FeedbackError>;

/// What went wrong with feedback.
#[derive(Debug, thiserror::Error)]
pub enum FeedbackError {
    /// No run under this id, or it belongs to another asker.
    #[error(
        "no answer {id} of yours to rate (the id is wrong, or the answer was given to someone else)"
    )]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// The run has no answer to rate (escalated, declined).
    #[error(
        "answer {id} was not given (GRACE decided to {decision}): there is nothing to rate; a reviewer's verdict labels it"
    )]
    NotAnswered {
        /// The run's id.
        id: String,
        /// What GRACE decided.
        decision: &'static str,
    },
    /// The rating or verdict is malformed.
    #[error("{0}")]
    Invalid(String),
    /// The rating's text is too long.
    #[error("the rating's text is {chars} characters, over the {max} allowed")]
    TooLong {
        /// Its length.
        chars: usize,
        /// The limit.
        max: usize,
    },
    /// The asker rated too much in the last hour.
    #[error(
        "{max} ratings in the last hour from this asker (feedback.max_ratings_per_hour); try again later"
    )]
    RateLimited {
        /// The limit.
        max: usize,
    },
    /// `feedback.enabled` is false.
    #[error("feedback is off (feedback.enabled: false): runs are not recorded and cannot be rated")]
    Disabled,
    /// The database failed (or PostgreSQL could not be reached).
    #[error(transparent)]
    State(#[from] StateError),
    /// The database holds something this GRACE cannot read.
    #[error("{place}: {message}")]
    Corrupt {
        /// The database's file or schema.
        place: String,
        /// What is wrong.
        message: String,
    },
    /// Creating the folder or reading the random source failed.
    #[error("cannot {action}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// A rating as stored: by whom, what, when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StoredRating {
    /// The rated run's id.
    pub answer_id: String,
    /// The rating.
    #[serde(flatten)]
    pub rating: Rating,
    /// When it was given (or last changed).
    pub rated_at: DateTime<Utc>,
    /// Whether it replaced an earlier rating by the same asker.
    pub replaced: bool,
    /// The escalation a "wrong" rating opened (`feedback.escalate_on_wrong`):
    /// a person checks the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<RatedEscalation>,
}

/// The escalation a "wrong" rating opened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RatedEscalation {
    /// Its id in the review queue.
    pub review_id: i64,
    /// The asker's handle on it: `GET /v1/escalations/{review_id}?handle=…`
    /// shows the reviewer's answer.
    pub review_handle: String,
}

/// A recorded run with its asker's rating.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Labelled {
    /// The run's id.
    pub id: String,
    /// Who asked.
    pub asker: String,
    /// The run as recorded.
    pub run: RecordedRun,
    /// The escalation it was queued as, if any (its resolution holds the
    /// reviewer's verdict).
    pub review_id: Option<i64>,
    /// The asker's rating, if any.
    pub rating: Option<Rating>,
}

/// The durable store of recorded runs and askers' ratings.
#[derive(Debug)]
pub struct FeedbackStore {
    store: Store,
    limits: FeedbackConfig,
}

impl FeedbackStore {
    /// Opens (creating if needed) the feedback of `config`'s knowledge
    /// base: `feedback.sqlite3` in its data folder, or PostgreSQL's tables.
    pub fn open(config: &Config) -> Result<Self> {
        let file = config.kb_dir().join(FEEDBACK_FILE);
        Ok(Self {
            store: Store::open(config, SCHEMA, &file)?,
            limits: config.feedback.clone(),
        })
    }

    /// The store when one was created (`None` when nothing was recorded on
    /// this machine yet: a reader creates no file; PostgreSQL's tables are
    /// always opened, since another server may have recorded runs).
    pub fn open_existing(config: &Config) -> Result<Option<Self>> {
        let file = config.kb_dir().join(FEEDBACK_FILE);
        match config.storage.state == StateBackend::Sqlite && !file.exists() {
            true => Ok(None),
            false => Self::open(config).map(Some),
        }
    }

    /// The database's file or schema, for messages and fits' provenance.
    pub fn place(&self) -> &str {
        self.store.place()
    }

    /// Records a finished run asked by `asker` (its escalation `review_id`
    /// when one was queued); the id it can be rated by. `None` when
    /// `feedback.enabled` is false. Past `feedback.max_runs`, the oldest
    /// runs nobody rated or judged are removed.
    pub fn record(
        &self,
        run: &RecordedRun,
        asker: &Asker,
        review_id: Option<i64>,
    ) -> Result<Option<String>> {
        self.record_asked(run, asker, review_id, None)
    }

    /// Records the finished run `report` of `config`'s knowledge base,
    /// scored by `scorer`, asked by
    /// `asker`, with its question's embedding for the gap report (the
    /// question as run, embedded by `embedder`: its search embedded it
    /// already, so the embedder's cache answers; when that fails the run
    /// is recorded without one). The id it can be rated by; `None` when
    /// `feedback.enabled` is false.
    pub fn record_run(
        &self,
        report: &crate::exec::RunReport,
        config: &crate::config::Config,
        scorer: &crate::confidence::Scorer,
        asker: &Asker,
        review_id: Option<i64>,
        embedder: &dyn crate::embed::Embedder,
    ) -> Result<Option<String>> {
        if !self.limits.enabled {
            return Ok(None);
        }
        let vector = embedder
            .embed_query(report.question_as_run())
            .map_err(|e| tracing::warn!(error = %e, "the question's embedding is not kept for the gap report"))
            .ok();
        self.record_asked(
            &RecordedRun::of(report, config, scorer),
            asker,
            review_id,
            vector.as_deref(),
        )
    }

    /// [`record`](Self::record), with the embedding of the question as run
    /// (kept for the gap report).
    pub fn record_asked(
        &self,
        run: &RecordedRun,
        asker: &Asker,
        review_id: Option<i64>,
        vector: Option<&[f32]>,
    ) -> Result<Option<String>> {
        if !self.limits.enabled {
            return Ok(None);
        }
        let text = serde_json::to_string(run)
            .map_err(|e| self.corrupt(format!("cannot store a run: {e}")))?;
        let id = crate::durable::random_id(ANSWER_PREFIX).map_err(|source| FeedbackError::Io {
            action: "read the random source",
            source,
        })?;
        let max = i64::try_from(self.limits.max_runs).unwrap_or(i64::MAX);
        self.write(|c| {
            c.execute(
                "INSERT INTO runs (id, created_at, asker, decision, review_id, record)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    id,
                    now_ms(),
                    asker.as_str(),
                    run.decision.as_str(),
                    review_id,
                    text
                ],
            )?;
            if let Some(vector) = vector {
                c.execute(
                    "INSERT INTO run_vectors (run_id, vector) VALUES (?1, ?2)",
                    params![id, crate::embed::quantise(vector)],
                )?;
            }
            let count: i64 = c
                .query_one("SELECT COUNT(*) FROM runs", params![])?
                .get(0)?;
            if count > max {
                c.execute(
                    "DELETE FROM runs WHERE id IN (
                         SELECT id FROM runs r
                         WHERE NOT EXISTS (SELECT 1 FROM ratings WHERE run_id = r.id)
                           AND r.review_id IS NULL
                         ORDER BY created_at LIMIT ?1)",
                    params![count - max],
                )?;
            }
            Ok(())
        })?;
        Ok(Some(id))
    }

    /// `asker`'s rating of run `id`, replacing any earlier one of theirs.
    /// Refused: a run that does not exist or is another asker's
    /// ([`FeedbackError::NotFound`]), one with no answer
    /// ([`FeedbackError::NotAnswered`]), a malformed rating, and more than
    /// `feedback.max_ratings_per_hour` from one asker.
    pub fn rate(&self, id: &str, asker: &Asker, rating: &Rating) -> Result<StoredRating> {
        if !self.limits.enabled {
            return Err(FeedbackError::Disabled);
        }
        rating.check()?;
        let not_found = || FeedbackError::NotFound {
            id: crate::text::shown_id(id),
        };
        if !crate::durable::is_random_id(id, ANSWER_PREFIX) {
            return Err(not_found());
        }
        let now = now_ms();
        let max = self.limits.max_ratings_per_hour;
        let replaced = self.write(|c| {
            let owner: Option<(String, String)> = c
                .query_opt(
                    "SELECT asker, decision FROM runs WHERE id = ?1",
                    params![id],
                )?
                .map(|r| Ok::<_, StateError>((r.get(0)?, r.get(1)?)))
                .transpose()?;
            let Some((owner, decision)) = owner.filter(|(owner, _)| owner == asker.as_str()) else {
                return Err(not_found());
            };
            if !matches!(decision.as_str(), "answer" | "caveat") {
                return Err(FeedbackError::NotAnswered {
                    id: id.to_string(),
                    decision: decided(&decision),
                });
            }
            c.execute(
                "DELETE FROM rating_events WHERE at <= ?1",
                params![now - HOUR_MS],
            )?;
            let recent: i64 = c
                .query_one(
                    "SELECT COUNT(*) FROM rating_events WHERE asker = ?1",
                    params![owner],
                )?
                .get(0)?;
            if usize::try_from(recent).unwrap_or(usize::MAX) >= max {
                return Err(FeedbackError::RateLimited { max });
            }
            c.execute(
                "INSERT INTO rating_events (asker, at) VALUES (?1, ?2)",
                params![owner, now],
            )?;
            let (vote, reason, text) = rating.columns();
            let replaced = c.execute(
                "UPDATE ratings SET vote = ?3, reason = ?4, text = ?5, rated_at = ?6
                 WHERE run_id = ?1 AND asker = ?2",
                params![id, owner, vote, reason, text, now],
            )? > 0;
            if !replaced {
                c.execute(
                    "INSERT INTO ratings (run_id, asker, vote, reason, text, rated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![id, owner, vote, reason, text, now],
                )?;
            }
            Ok(replaced)
        })?;
        Ok(StoredRating {
            answer_id: id.to_string(),
            rating: rating.clone(),
            rated_at: to_time(now),
            replaced,
            escalation: None,
        })
    }

    /// Labels given so far, as counted for `confidence.feedback_refit_every`:
    /// ratings, and runs put to a reviewer (each a verdict once answered).
    pub fn label_count(&self) -> Result<usize> {
        let count: i64 = self.store.read(|c| {
            c.query_one(
                "SELECT (SELECT COUNT(*) FROM ratings)
                      + (SELECT COUNT(*) FROM runs WHERE review_id IS NOT NULL)",
                params![],
            )?
            .get(0)
        })?;
        Ok(usize::try_from(count).unwrap_or(0))
    }

    /// The escalation run `id` was queued as, or linked to after a "wrong"
    /// rating ([`link_review`](Self::link_review)); `None` when it has none
    /// or there is no such run.
    pub fn review_of(&self, id: &str) -> Result<Option<i64>> {
        let review: Option<Option<i64>> = self.store.read(|c| {
            c.query_opt("SELECT review_id FROM runs WHERE id = ?1", params![id])?
                .map(|r| r.get(0))
                .transpose()
        })?;
        Ok(review.flatten())
    }

    /// Links run `id` to escalation `review_id`, opened because its asker
    /// rated the answer wrong: the reviewer's verdict then labels the run.
    /// False when the run already has an escalation (two ratings raced:
    /// the first one's stands).
    pub fn link_review(&self, id: &str, review_id: i64) -> Result<bool> {
        self.write(|c| {
            let linked = c.execute(
                "UPDATE runs SET review_id = ?2 WHERE id = ?1 AND review_id IS NULL",
                params![id, review_id],
            )?;
            Ok(linked == 1)
        })
    }

    /// The recorded run `id` (whoever asked it), `None` when there is none.
    pub fn run(&self, id: &str) -> Result<Option<RecordedRun>> {
        if !crate::durable::is_random_id(id, ANSWER_PREFIX) {
            return Ok(None);
        }
        let text: Option<String> = self.store.read(|c| {
            c.query_opt("SELECT record FROM runs WHERE id = ?1", params![id])?
                .map(|r| r.get(0))
                .transpose()
        })?;
        text.map(|t| self.parse(id, &t)).transpose()
    }

    /// Every recorded run that has a rating or was escalated, oldest
    /// first: what a refit reads (an escalated run's label is its
    /// reviewer's verdict, in the review queue).
    pub fn labelled(&self) -> Result<Vec<Labelled>> {
        let rows = self.store.read(|c| {
            c.query(
                "SELECT r.id, r.asker, r.record, g.vote, g.reason, g.text, r.review_id
                 FROM runs r
                 LEFT JOIN ratings g ON g.run_id = r.id
                 WHERE g.run_id IS NOT NULL OR r.review_id IS NOT NULL
                 ORDER BY r.created_at, r.id",
                params![],
            )
        })?;
        rows.into_iter()
            .map(|r| {
                let (id, asker, record): (String, String, String) =
                    (r.get(0)?, r.get(1)?, r.get(2)?);
                let (vote, reason, text): (Option<String>, Option<String>, Option<String>) =
                    (r.get(3)?, r.get(4)?, r.get(5)?);
                let review_id: Option<i64> = r.get(6)?;
                let run = self.parse(&id, &record)?;
                let rating = match &vote {
                    Some(vote) => Some(
                        Rating::from_columns(vote, reason.as_deref(), text).ok_or_else(|| {
                            self.corrupt(format!("run {id}: a rating it cannot read"))
                        })?,
                    ),
                    None => None,
                };
                Ok(Labelled {
                    id,
                    asker,
                    run,
                    review_id,
                    rating,
                })
            })
            .collect()
    }

    /// Each document's rating history now ([`document_history`]), from the
    /// newest [`MAX_BOOST_RATINGS`] ratings: what every answer citing it is
    /// scored with (the `document_history` factor), and what the document
    /// boost scales ([`document_boosts`]).
    pub fn document_history(&self) -> Result<std::collections::HashMap<String, f32>> {
        let ratings = self.document_ratings(MAX_BOOST_RATINGS)?;
        Ok(document_history(
            &ratings,
            chrono::Utc::now(),
            self.limits.document_boost_half_life_days,
        ))
    }

    /// The newest `max` ratings, one per document the rated answer cited,
    /// newest first: what the documents' history is made of
    /// ([`FeedbackStore::document_history`]).
    pub fn document_ratings(&self, max: usize) -> Result<Vec<DocumentRating>> {
        let rows = self.store.read(|c| {
            let sources = c.dialect().json_value("r.record", &["sources"]);
            c.query(
                &format!(
                    "SELECT g.run_id, g.asker, g.vote, g.rated_at, {sources}
                     FROM ratings g JOIN runs r ON r.id = g.run_id
                     ORDER BY g.rated_at DESC, g.run_id
                     LIMIT ?1"
                ),
                params![i64::try_from(max).unwrap_or(i64::MAX)],
            )
        })?;
        let mut out = Vec::new();
        for r in rows {
            let (id, asker, vote): (String, String, String) = (r.get(0)?, r.get(1)?, r.get(2)?);
            let (at, sources): (i64, Option<String>) = (r.get(3)?, r.get(4)?);
            let sources: Vec<String> = match sources {
                Some(json) => serde_json::from_str(&json)
                    .map_err(|e| self.corrupt(format!("run {id}: its sources: {e}")))?,
                None => Vec::new(),
            };
            let up = match Vote::parse(&vote) {
                Some(vote) => vote == Vote::Up,
                None => return Err(self.corrupt(format!("run {id}: a vote {vote:?}"))),
            };
            out.extend(sources.into_iter().map(|source| DocumentRating {
                asker: asker.clone(),
                source,
                up,
                at: to_time(at),
            }));
        }
        Ok(out)
    }

    /// The questions people did not get an answer to, asked since `since`:
    /// runs declined or escalated, and answers rated down, that have an
    /// embedding; newest first, at most `max`.
    pub fn unmet(&self, since: DateTime<Utc>, max: usize) -> Result<Vec<Unmet>> {
        let rows = self.store.read(|c| {
            let question = c.dialect().json_text("r.record", &["question"]);
            c.query(
                &format!(
                    "SELECT r.created_at, r.decision, {question}, v.vector
                     FROM runs r JOIN run_vectors v ON v.run_id = r.id
                     WHERE r.created_at >= ?1
                       AND (r.decision IN ('decline', 'escalate')
                            OR EXISTS (SELECT 1 FROM ratings g WHERE g.run_id = r.id AND g.vote = 'down'))
                     ORDER BY r.created_at DESC, r.id
                     LIMIT ?2"
                ),
                params![
                    since.timestamp_millis(),
                    i64::try_from(max).unwrap_or(i64::MAX)
                ],
            )
        })?;
        let rows = rows
            .iter()
            .map(|r| {
                Ok::<_, StateError>((
                    r.get::<i64>(0)?,
                    r.get::<String>(1)?,
                    r.get::<String>(2)?,
                    r.get::<Vec<u8>>(3)?,
                ))
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(rows
            .into_iter()
            .map(|(at, decision, question, vector)| Unmet {
                question,
                at: to_time(at),
                // The query lets through only these and down-rated answers.
                why: match decision.as_str() {
                    "decline" => Why::Declined,
                    "escalate" => Why::Escalated,
                    _ => Why::RatedDown,
                },
                vector: crate::embed::dequantise(&vector),
            })
            .collect())
    }

    fn parse(&self, id: &str, text: &str) -> Result<RecordedRun> {
        serde_json::from_str(text).map_err(|e| self.corrupt(format!("run {id}: {e}")))
    }

    fn corrupt(&self, message: String) -> FeedbackError {
        FeedbackError::Corrupt {
            place: self.place().to_string(),
            message,
        }
    }

    /// One write transaction, one writer at a time.
    fn write<T>(&self, f: impl FnOnce(&Conn<'_>) -> Result<T>) -> Result<T> {
        self.store.write(f)
    }
}

/// Why a question counts as one people did not get an answer to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// GRACE declined it.
    Declined,
    /// GRACE passed it to a reviewer.
    Escalated,
    /// GRACE answered and the asker rated the answer down.
    RatedDown,
}

/// A question people did not get an answer to ([`FeedbackStore::unmet`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Unmet {
    /// The question as the asker wrote it.
    pub question: String,
    /// When it was asked.
    pub at: DateTime<Utc>,
    /// Why it counts.
    pub why: Why,
    /// Its embedding, a unit vector.
    pub vector: Vec<f32>,
}

/// A stored decision as a static word for messages.
fn decided(decision: &str) -> &'static str {
    match decision {
        "escalate" => "escalate",
        "decline" => "decline",
        "needs_input" => "ask back",
        _ => "do something else",
    }
}

#[cfg(test)]
mod tests;
