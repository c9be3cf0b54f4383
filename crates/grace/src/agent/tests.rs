use serde_json::json;

use super::*;
use crate::text::ellipsized as bounded;

#[test]
fn the_first_message_carries_the_conversation_and_both_forms() {
    let history = vec![(
        "What is Orbit?".to_string(),
        Some("A deployment service.".to_string()),
    )];
    let m = first_message("and on staging? (Orbit)", Some("and on staging?"), &history);
    assert!(
        m.contains("Q: What is Orbit?\nA: A deployment service."),
        "{m}"
    );
    assert!(m.contains("Question (as asked): and on staging?"), "{m}");
    assert!(
        m.contains("Question (standalone): and on staging? (Orbit)"),
        "{m}"
    );
    let m = first_message("What is Orbit?", None, &[]);
    assert_eq!(m, "Question: What is Orbit?\n");
}

#[test]
fn a_missing_reply_asks_the_model_to_state_its_assumption() {
    assert_eq!(
        reply_observation(Some(" staging ")),
        json!({"reply": "staging"})
    );
    let none = reply_observation(Some("   "));
    assert!(none["reply"].is_null());
    assert!(none["note"].as_str().unwrap().contains("assumption"));
}

#[test]
fn bounded_text_is_cut_on_a_character_boundary() {
    assert_eq!(bounded("ñandú", 2), "ña…");
    assert_eq!(bounded("ab", 2), "ab");
}
