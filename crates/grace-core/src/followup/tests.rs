use super::rule::MAX_INHERITED_TERMS;
use super::*;
use crate::llm::GenerateRequest;
#[test]
fn short_turns_with_pronouns_or_ellipsis_are_follow_ups() {
    for q in [
        "How do I remove them?",
        "and on sparc?",
        "What about testing?",
        "Is it free?",
        "why?",
        "Where can I get those?",
    ] {
        assert!(is_follow_up(q), "{q}");
    }
    for q in [
        "How do I install a package with dpkg?",
        "What is the Debian social contract?",
        "Which architectures does Debian support officially today and since when?",
    ] {
        assert!(!is_follow_up(q), "{q}");
    }
}

/// Questions that name their own subject stand alone, whatever pronoun
/// they hold; those that lean on the conversation still do not.
#[test]
fn a_question_that_names_its_own_subject_is_no_follow_up() {
    for q in [
        // The pronoun points into an earlier sentence or clause.
        "There's a binary /usr/bin/foo on my system. Which package owns it?",
        "I saw 'sid' mentioned on a Debian mailing list. What is it?",
        "record a sequence of keystrokes in bash and replay it",
        "iphone keeps dimming the screen by itself",
        // One word of its own, an identifier.
        "What does core.checkStat do?",
        // Japanese runs its words together.
        "ベランダでミニトマトを育てるコツは？",
        // Existential "there", a counting "one", a relative "that", a time.
        "How many Debian distributions are there?",
        "Are there logs of known bugs?",
        "example of using send and throw together on one generator",
        "More than one MPM loaded after I enabled mpm_event",
        "safe to uninstall the python that came with my mac?",
        "who's the platform on call person this week",
        // A leading "why" in a question of its own.
        "Why are Debian package file names so long?",
        "why no curly braces in python, why does whitespace decide the blocks",
    ] {
        assert!(!is_follow_up(q), "{q}");
    }
    for q in [
        "does it get security updates?",
        "any command that shows it?",
        "which package provides that?",
        "how do I undo that with apt?",
        "why is that?",
        "is there a newer one?",
        "what about m68k?",
        "can an individual user override it?",
        "how do I check which ones a given package has?",
        "and which package does that file belong to?",
    ] {
        assert!(is_follow_up(q), "{q}");
    }
}

#[test]
fn a_follow_up_inherits_the_previous_key_terms_and_identifiers() {
    let q = rewrite_by_rule("How do I remove them?", "What are Debian packages?").unwrap();
    assert_eq!(q, "How do I remove them? (Debian packages)");
    let q = rewrite_by_rule("and on sparc?", "How do I boot the installer on i386?").unwrap();
    assert!(q.starts_with("and on sparc? ("), "{q}");
    assert!(
        q.contains("i386") && q.contains("installer") && q.contains("boot"),
        "{q}"
    );
    // Identifiers come first and whole.
    let q = rewrite_by_rule("what does it do?", "Explain apt-get --purge").unwrap();
    assert!(q.contains("--purge"), "{q}");
    let q = rewrite_by_rule("how do I fix it?", "What does error ORB-2001 mean?").unwrap();
    assert_eq!(q, "how do I fix it? (ORB-2001 error)");
    // A question that stands alone is left alone.
    assert_eq!(
        rewrite_by_rule("How do I install a package with dpkg?", "What is apt?"),
        None
    );
}

#[test]
fn a_chain_of_follow_ups_inherits_from_the_last_standalone_question() {
    let history = [
        PriorTurn {
            question: "What is a Debian package?",
            standalone: "What is a Debian package?",
            answer: None,
        },
        PriorTurn {
            question: "Why are their names so long?",
            standalone: "Why are their names so long? (Debian package)",
            answer: None,
        },
    ];
    let r = resolve("and how do I hold one?", &history, None).unwrap();
    assert_eq!(r.question, "and how do I hold one? (Debian package)");
    assert_eq!(r.by, RewriteBy::Rule);
}

#[test]
fn a_follow_ups_own_terms_leave_out_what_it_asks_to_be_done() {
    assert_eq!(own_terms("how do I fix it?"), "");
    assert_eq!(own_terms("and Skype?"), "Skype");
    assert_eq!(own_terms("Are there logs of them?"), "logs");
    assert_eq!(
        own_terms("does it get security updates?"),
        "security updates"
    );
}

/// A model that answers every request with `reply`, and remembers
/// what it was sent.
struct Fixed {
    reply: crate::llm::Result<String>,
    sent: std::sync::Mutex<Vec<String>>,
}

impl LlmClient for Fixed {
    fn name(&self) -> &str {
        "fixed"
    }
    fn generate(&self, request: &GenerateRequest) -> crate::llm::Result<crate::llm::Generation> {
        self.sent
            .lock()
            .unwrap()
            .push(format!("{:?}", request.messages));
        self.reply.clone().map(|text| {
            crate::llm::Generation::plain(
                text,
                crate::llm::StopReason::Complete,
                Default::default(),
            )
        })
    }
}

fn history() -> Vec<PriorTurn<'static>> {
    vec![PriorTurn {
        question: "How do I roll back a deployment?",
        standalone: "How do I roll back a deployment?",
        answer: Some("Run orbit rollback api --env production."),
    }]
}

#[test]
fn a_model_rewrites_from_the_conversation_and_a_failing_one_falls_back_to_the_rule() {
    let model = Fixed {
        reply: Ok(r#"{"question": "How do I roll back a deployment on staging?"}"#.into()),
        sent: Default::default(),
    };
    let r = resolve("and on staging?", &history(), Some(&model)).unwrap();
    assert_eq!(r.question, "How do I roll back a deployment on staging?");
    assert_eq!(r.by, RewriteBy::Model);
    let sent = model.sent.lock().unwrap().join("");
    assert!(
        sent.contains("Q1: How do I roll back") && sent.contains("A1: Run orbit"),
        "{sent}"
    );
    // The model says it stands alone: no rewrite.
    let same = Fixed {
        reply: Ok(r#"{"question": "and on staging?"}"#.into()),
        sent: Default::default(),
    };
    assert_eq!(resolve("and on staging?", &history(), Some(&same)), None);
    // Down, or not JSON, or blank: the rule.
    for reply in [
        Err(crate::llm::LlmError::Transient {
            generator: "fixed".into(),
            message: "503".into(),
        }),
        Ok("not json".into()),
        Ok(r#"{"question": "  "}"#.into()),
    ] {
        let model = Fixed {
            reply,
            sent: Default::default(),
        };
        let r = resolve("and on staging?", &history(), Some(&model)).unwrap();
        assert_eq!(r.by, RewriteBy::Rule);
        assert_eq!(r.question, "and on staging? (roll back deployment)");
    }
}

#[test]
fn nothing_to_inherit_leaves_the_question_as_it_is() {
    assert_eq!(rewrite_by_rule("and that?", "what is it?"), None);
    assert_eq!(resolve("and that?", &[], None), None);
}

#[test]
fn terms_are_bounded_and_text_is_sliced_safely() {
    let long = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima";
    let q = rewrite_by_rule("and it?", long).unwrap();
    assert_eq!(q.matches(' ').count(), 2 + MAX_INHERITED_TERMS - 1);
    // Non-ASCII words and punctuation do not break the split.
    let q = rewrite_by_rule("and that one?", "Wie installiert man Pakete über ñandú?").unwrap();
    assert!(q.contains("ñandú"), "{q}");
}
