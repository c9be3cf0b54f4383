//! Evaluation and calibration reports: `grace eval`, `grace calibrate`
//! (on a question set or `--self`).

use grace::confidence::calibration::Calibration;
use grace_eval::{EvalReport, Separation};

use super::{num, pct, print_json};

fn separation_line(name: &str, s: &Separation) {
    println!(
        "  {name:<22} AUROC {} (in-domain {}); unanswerable passing at 80% / 90% answerable kept: {} / {} (in-domain at 90%: {})",
        num(s.auroc),
        num(s.auroc_in_domain),
        pct(s.unanswerable_passing_at_80),
        pct(s.unanswerable_passing_at_90),
        pct(s.in_domain_passing_at_90)
    );
}

/// `grace eval --one-session N`: self-contained questions taken for
/// follow-ups.
pub fn one_session_report(r: &grace_eval::one_session::OneSessionReport, json: bool) {
    if json {
        print_json(r);
        return;
    }
    println!(
        "{}: {} questions asked one after another in one session; {} of the {} after the first rewritten as follow-ups ({})",
        r.set.display(),
        r.questions,
        r.rewritten,
        r.asked,
        pct(r.share)
    );
    for w in &r.rewrites {
        println!("  {} → {}", w.question, w.standalone);
    }
}

/// `grace eval --conversations`: follow-ups with and without their history.
pub fn conversation_report(r: &grace_eval::conversations::ConversationReport, json: bool) {
    if json {
        print_json(r);
        return;
    }
    println!(
        "{} over {}: {} conversations, {} turns, {} follow-ups ({} answerable, {} unanswerable); {} rewritten",
        r.conversations_file.display(),
        r.set.display(),
        r.conversations,
        r.turns,
        r.follow_ups,
        r.follow_ups_answerable,
        r.follow_ups_unanswerable,
        r.rewritten
    );
    println!("follow-ups            with history   asked alone");
    println!(
        "  recall@{:<2}              {:>8}      {:>8}",
        r.k,
        pct(r.recall_at_k_with_history),
        pct(r.recall_at_k_alone)
    );
    println!(
        "  answerable answered     {:>8}      {:>8}",
        pct(r.answered_with_history),
        pct(r.answered_alone)
    );
    println!(
        "  unanswerable answered   {:>8}      {:>8}   (the worst outcome)",
        pct(r.unanswerable_answered_with_history),
        pct(r.unanswerable_answered_alone)
    );
    println!(
        "first turns: recall@{} {}",
        r.k,
        pct(r.first_turn_recall_at_k)
    );
}

pub fn eval_report(r: &EvalReport, json: bool) {
    if json {
        print_json(r);
        return;
    }
    println!(
        "{}: {} questions ({} answerable, {} unanswerable in-domain, {} out-of-domain), {} chunks{}",
        r.set.display(),
        r.questions,
        r.answerable,
        r.unanswerable_in_domain,
        r.unanswerable_out_of_domain,
        r.chunks,
        if r.backend == "edge" {
            ""
        } else {
            " (on the Qdrant server)"
        }
    );
    println!(
        "retrieval: recall@1 {:.3}, recall@{} {:.3} (the dense ranking alone: {:.3}, {:.3})",
        r.recall_at_1, r.k, r.recall_at_k, r.dense_recall_at_1, r.dense_recall_at_k
    );
    println!(
        "answers: {} of questions answered; {} of answers right (answerable, gold source cited); {} of unanswerable questions answered ({} of {} in-domain, {} of {} out-of-domain)",
        pct(Some(r.answered)),
        pct(Some(r.answered_right)),
        pct(Some(r.unanswerable_answered)),
        r.unanswerable_answered_in_domain,
        r.unanswerable_in_domain,
        r.unanswerable_answered_out_of_domain,
        r.unanswerable_out_of_domain
    );
    answer_text_lines(&r.answer_text);
    println!("separating answerable from unanswerable questions:");
    separation_line("top-1 cosine", &r.top1_cosine);
    if let Some(reader) = &r.reader_top {
        separation_line("reader (best passage)", reader);
    }
    separation_line("answer confidence", &r.answer_confidence);
    println!(
        "calibration of the answer confidence: ECE {} (10 bins), Brier {}",
        num(r.ece),
        num(r.brier)
    );
    if let Some(s) = &r.self_calibration {
        println!(
            "self-calibrated first: {} questions built from the corpus ({} answerable, {} with their section withheld, {} general) in {:.0} s; out of fold on them ECE {}, AUROC {}",
            s.questions,
            s.answerable,
            s.in_domain,
            s.out_of_domain,
            s.seconds,
            num(s.cross_validated.ece),
            num(s.cross_validated.auroc)
        );
    }
    if !r.models.is_empty() {
        println!(
            "confidence models on the final answers (right = answerable and gold source cited):"
        );
        println!(
            "  {:<15} {:>6} {:>7} {:>6} {:>6} {:>8}  how",
            "model", "ECE", "chance", "Brier", "AUROC", "log loss"
        );
        for m in &r.models {
            println!(
                "  {:<15} {:>6} {:>7} {:>6} {:>6} {:>8}  {}",
                m.model,
                num(m.fare.ece),
                m.ece_floor.map_or("-".into(), |f| format!("≤{:.3}", f.p95)),
                num(m.fare.brier),
                num(m.fare.auroc),
                num(m.fare.log_loss),
                m.note
            );
        }
        println!(
            "  (chance: the ECE a perfectly calibrated model with these scores reaches by chance on this many questions, 95th percentile)"
        );
        println!("coverage / risk (share answered / share of answered wrong) by threshold:");
        print!("  {:<15}", "threshold");
        for t in [0.3, 0.5, 0.7, 0.8, 0.9] {
            print!(" {:>11}", format!("{t:.1}"));
        }
        println!();
        for m in &r.models {
            print!("  {:<15}", m.model);
            for t in [0.3, 0.5, 0.7, 0.8, 0.9] {
                match m
                    .coverage_risk
                    .iter()
                    .find(|p| (p.threshold - t).abs() < 1e-9)
                {
                    Some(p) => print!(" {:>11}", format!("{:.2}/{:.2}", p.coverage, p.risk)),
                    None => print!(" {:>11}", "-"),
                }
            }
            println!();
        }
    }
    if let Some(f) = &r.feedback {
        feedback_curve(f);
    }
    println!(
        "latency per question (whole ask): p50 {} ms, p95 {} ms",
        r.latency_p50_ms
            .map(|v| format!("{v:.1}"))
            .unwrap_or_else(|| "n/a".into()),
        r.latency_p95_ms
            .map(|v| format!("{v:.1}"))
            .unwrap_or_else(|| "n/a".into())
    );
}

/// What the answers of answerable questions are made of: one line per
/// decision, then the same per question style.
fn answer_text_lines(t: &grace_eval::answer_text::AnswerTextReport) {
    use grace_eval::answer_text::AnswerTextFigures;
    let cell = |f: &AnswerTextFigures| {
        format!(
            "{:>4} {:>9} {:>5} {:>6} {:>6}",
            f.count,
            num(f.precision),
            num(f.f1),
            pct(f.mixed_sources),
            f.words.map_or("-".into(), |w| format!("{w:.0}"))
        )
    };
    println!(
        "answer text (answerable questions; precision: share of sentences from a gold source; f1: tokens against the gold answer):"
    );
    println!(
        "  {:<22} {:>4} {:>9} {:>5} {:>6} {:>6}",
        "", "n", "precision", "f1", "mixed", "words"
    );
    for (name, figures) in [
        ("answers", &t.answer),
        ("caveats", &t.caveat),
        ("escalation drafts", &t.escalation),
    ] {
        println!("  {name:<22} {}", cell(figures));
    }
    for (style, by) in &t.by_style {
        for (name, figures) in [("answers", &by.answer), ("caveats", &by.caveat)] {
            println!("  {:<22} {}", format!("{style}: {name}"), cell(figures));
        }
    }
}

/// What `grace calibrate` fitted, and how to use it.
/// What `grace calibrate --self` did.
pub fn self_calibration(outcome: &grace::selfcal::Outcome, config: &grace::Config, json: bool) {
    use grace::selfcal::Outcome;
    match outcome {
        Outcome::Fitted {
            calibration, path, ..
        } => {
            calibration_figures(calibration, json);
            if !json {
                println!("written to {}", path.display());
                if config.confidence.calibration.is_some() {
                    println!(
                        "note: confidence.calibration names a labelled calibration, which is used instead"
                    );
                } else if config.confidence.self_calibration.mode
                    == grace::config::SelfCalibrationMode::Off
                {
                    println!(
                        "note: confidence.self_calibration.mode is off: this fit is used once it is auto"
                    );
                }
            }
        }
        Outcome::TooSmall { usable, min } => {
            if json {
                print_json(&serde_json::json!({
                    "fitted": false,
                    "usable_sections": usable,
                    "min_sections": min,
                }));
            } else {
                println!(
                    "too small to self-calibrate: {usable} sections to ask about, fewer than confidence.self_calibration.min_sections ({min}); the configured weights are kept"
                );
            }
        }
    }
}

/// One line on stderr after an ingest that fitted the knowledge base again.
pub fn self_calibration_note(outcome: &grace::selfcal::Outcome, quiet: bool) {
    use grace::selfcal::Outcome;
    if quiet {
        return;
    }
    match outcome {
        Outcome::Fitted {
            calibration, path, ..
        } => eprintln!(
            "grace: self-calibrated on {} of its own questions (out of fold: ECE {}, AUROC {}) in {:.0} s -> {}",
            calibration.fitted_on.questions,
            num(calibration.cross_validated.ece),
            num(calibration.cross_validated.auroc),
            calibration
                .self_calibration
                .as_ref()
                .map_or(0.0, |s| s.seconds),
            path.display()
        ),
        Outcome::TooSmall { usable, min } => eprintln!(
            "grace: too small to self-calibrate ({usable} sections, fewer than {min}); the configured confidence weights are kept"
        ),
    }
}

pub fn calibration(c: &Calibration, path: &std::path::Path, json: bool) {
    calibration_figures(c, json);
    if !json {
        println!(
            "wrote {}; to use it set `confidence.calibration: {}` in grace_config.yml (or GRACE_CONFIDENCE__CALIBRATION={})",
            path.display(),
            path.display(),
            path.display()
        );
    }
}

/// A calibration's provenance, folds and weights.
fn calibration_figures(c: &Calibration, json: bool) {
    if json {
        print_json(c);
        return;
    }
    let on = &c.fitted_on;
    if let Some(s) = &c.self_calibration {
        println!(
            "self-calibration: {} sections, seed {}; {} answerable questions ({} headings that are questions, {} made from headings, {} from text{}), {} with their section withheld, {} general; {:.0} s",
            s.sections,
            s.seed,
            s.answerable,
            s.from_heading_question,
            s.from_heading,
            s.from_text,
            if s.from_model > 0 {
                format!(", {} written by the model", s.from_model)
            } else {
                String::new()
            },
            s.in_domain,
            s.out_of_domain,
            s.seconds
        );
    }
    println!(
        "fitted on {}: {} questions, {} documents, collection `{}`, model `{}`, generator `{}`",
        on.set.display(),
        on.questions,
        on.sources.len(),
        on.collection,
        on.embedding_model,
        on.generator
    );
    println!(
        "cross-validation: {} stratified folds, L2 {} (lowest held-out log loss)",
        c.folds, c.l2
    );
    println!(
        "  {:<6} {:>4} {:>5} {:>6} {:>6} {:>6}",
        "fold", "n", "right", "ECE", "Brier", "AUROC"
    );
    for (i, f) in c.fold_figures.iter().enumerate() {
        println!(
            "  {:<6} {:>4} {:>5} {:>6} {:>6} {:>6}",
            i + 1,
            f.n,
            f.right,
            num(f.ece),
            num(f.brier),
            num(f.auroc)
        );
    }
    for (name, f) in [
        ("fitted, out of fold", &c.cross_validated),
        ("configured weights", &c.hand_set),
    ] {
        println!(
            "{name}: ECE {}, Brier {}, AUROC {}, log loss {}",
            num(f.ece),
            num(f.brier),
            num(f.auroc),
            num(f.log_loss)
        );
    }
    let w = &c.weights;
    println!("fitted weights: bias {:.3}", w.bias);
    for factor in grace::confidence::Factor::ALL {
        let weight = factor.weight(w);
        if weight.abs() >= 5e-4 {
            println!("  {:<18} {weight:>8.3}", format!("{factor:?}"));
        }
    }
}

/// The learning curve of `grace eval --feedback N`.
fn feedback_curve(f: &grace_eval::feedback_sim::FeedbackCurve) {
    println!(
        "learning from {} simulated ratings (seed {}, {} flipped{}), scored on the {} other questions:",
        f.ratings,
        f.seed,
        f.flipped,
        if f.flood > 0 {
            format!(", and {} false ones from one asker", f.flood)
        } else {
            String::new()
        },
        f.held_out
    );
    println!(
        "  {:>6} {:>6} {:>7} {:>6} {:>9} {:>9} {:>8} {:>10} {:>12}",
        "labels",
        "ECE",
        "chance",
        "AUROC",
        "in-domain",
        "cov@10%",
        "answered",
        "right/ans",
        "unans. ans."
    );
    let row = |labels: String, p: &grace_eval::feedback_sim::CurvePoint| {
        println!(
            "  {:>6} {:>6} {:>7} {:>6} {:>9} {:>9} {:>8} {:>10} {:>12}",
            labels,
            num(p.fare.ece),
            p.ece_floor.map_or("-".into(), |e| format!("≤{:.3}", e.p95)),
            num(p.fare.auroc),
            num(p.auroc_in_domain),
            format!("{:.3}", p.coverage_at_risk_10),
            pct(Some(p.answered)),
            pct(p.right_among_answered),
            pct(Some(p.unanswerable_answered))
        );
    };
    for p in &f.curve {
        row(p.labels.to_string(), p);
    }
    println!(
        "  against: every question of the set labelled ({} with an answer step), fitted out of fold:",
        f.reference.labels
    );
    row("all".into(), &f.reference);
    if let Some(b) = &f.document_boost {
        println!(
            "document boost {}: {} rated answers gave {} documents a boost; on the {} other answerable questions recall@1 {:.3} -> {:.3}, recall@k {:.3} -> {:.3}",
            b.boost,
            b.rated_answers,
            b.documents,
            b.questions,
            b.recall_at_1,
            b.boosted_recall_at_1,
            b.recall_at_k,
            b.boosted_recall_at_k
        );
    }
    if let Some(p) = &f.factors {
        println!(
            "feedback-only factors, with the refitted confidence, out of fold; means over {} draws of ratings, each holding out {:.1} questions with an answer step ({:.1} with a rated question near, {:.1} citing a document with a rating history):",
            p.draws, p.questions, p.with_rated_neighbours, p.with_rated_documents
        );
        println!(
            "  {:<28} {:>6} {:>9} {:>9} {:>14}",
            "", "AUROC", "in-domain", "cov@10%", "AUROC raised"
        );
        for (name, fare, candidate) in [
            ("confidence alone", &p.confidence, false),
            ("+ nearest rated questions", &p.nearest_rated, true),
            ("+ documents' rating history", &p.document_history, true),
            ("+ both", &p.both, true),
        ] {
            let raised = if candidate {
                format!("in {} of {}", fare.raised_auroc, p.draws)
            } else {
                "-".to_string()
            };
            factor_row(name, fare, raised);
        }
        println!("  the refit itself (its own scores, not out of fold), as GRACE scores it:");
        factor_row("without the history", &p.refit, "-".to_string());
        factor_row(
            "with document_history",
            &p.refit_with_history,
            format!("in {} of {}", p.refit_with_history.raised_auroc, p.draws),
        );
    }
}

/// One row of the feedback-only factors' table.
fn factor_row(name: &str, fare: &grace_eval::feedback_factors::ProbeFare, raised: String) {
    println!(
        "  {:<28} {:>6} {:>9} {:>9.3} {:>14}",
        name,
        num(fare.auroc),
        num(fare.auroc_in_domain),
        fare.coverage_at_risk_10,
        raised
    );
}

/// What `grace calibrate --from-feedback` fitted, and where it wrote it.
pub fn learned(l: &grace::learn::LearnedFit, file: &std::path::Path, json: bool) {
    if json {
        print_json(&serde_json::json!({"file": file, "fit": l}));
        return;
    }
    println!(
        "fitted on {} labels from {} askers and reviewers, starting from the weights in use",
        l.labels, l.givers
    );
    println!(
        "  out of fold: ECE {} (chance {}), AUROC {}, Brier {}",
        num(l.out_of_fold.ece),
        l.ece_floor.map_or("-".into(), |f| format!("≤{:.3}", f.p95)),
        num(l.out_of_fold.auroc),
        num(l.out_of_fold.brier)
    );
    println!(
        "  the weights in use on the same labels: ECE {}, AUROC {}, Brier {}",
        num(l.prior.ece),
        num(l.prior.auroc),
        num(l.prior.brier)
    );
    println!(
        "written to {}: set confidence.calibration to it to score with these weights",
        file.display()
    );
}
