//! The language a question is asked in, and GRACE's own fixed texts in
//! it: one table per language, so that a Japanese question gets
//! "資料にはこの質問の答えがありません。" rather than the English sentence.
//! English and Japanese to start; a question in any other language gets
//! English texts (a language model is still asked to answer in the
//! question's language when it is one of these).

use serde::Serialize;

/// A language GRACE has texts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// English, and every language without a table of its own.
    #[default]
    En,
    /// Japanese.
    Ja,
}

/// GRACE's fixed texts for the asker, in one language. `{confidence}`,
/// `{step}`, `{error}` and `{list}` are filled in by [`fill`].
#[derive(Debug)]
pub struct Texts {
    /// An extractive answer when the sources do not answer.
    pub not_in_sources: &'static str,
    /// How a statement about what the sources lack begins: no claim from
    /// them, so groundedness counts it neither way.
    pub absence: &'static str,
    /// The identifiers of the question no source mentions (`{list}`).
    pub not_mentioned: &'static str,
    /// How `{list}` joins its last two items.
    pub and: &'static str,
    /// Before an answer given with a caveat.
    pub caveat: &'static str,
    /// When the question goes to a human reviewer.
    pub escalated: &'static str,
    /// Before the question passed on to the reviewer.
    pub question_for_reviewer: &'static str,
    /// Before the reason given for it.
    pub reason: &'static str,
    /// When the knowledge base does not answer.
    pub declined: &'static str,
    /// When a step failed (`{step}`, `{error}`).
    pub failed: &'static str,
    /// Before a clarifying question to the asker.
    pub needs_input: &'static str,
    /// Before the reason for a clarifying question.
    pub why: &'static str,
    /// Before the list of cited sources.
    pub sources: &'static str,
    /// Before a question the agent puts to the asker at the terminal.
    pub asks: &'static str,
    /// The asker's prompt for a choice or an answer.
    pub your_answer: &'static str,
}

const EN: Texts = Texts {
    not_in_sources: "The sources do not answer this question.",
    absence: "The sources do not ",
    not_mentioned: "The sources do not mention {list}.",
    and: " or ",
    caveat: "Note: moderate confidence ({confidence}); check the cited sources.",
    escalated: "GRACE is not confident enough to answer (confidence {confidence}).",
    question_for_reviewer: "Question for a reviewer: ",
    reason: "Reason: ",
    declined: "The knowledge base does not answer this question (confidence {confidence}).",
    failed: "GRACE could not answer: step `{step}` failed: {error}",
    needs_input: "GRACE needs to know more: ",
    why: "Why: ",
    sources: "Sources:",
    asks: "GRACE asks: ",
    your_answer: "Your answer (a number, your own words, or Enter to let GRACE assume): ",
};

const JA: Texts = Texts {
    not_in_sources: "資料にはこの質問の答えがありません。",
    absence: "資料には",
    not_mentioned: "資料には{list}についての記述がありません。",
    and: "や",
    caveat: "注意: 確信度は中程度です（{confidence}）。引用元をご確認ください。",
    escalated: "確信を持って答えられないため、担当者に確認を依頼しました（確信度 {confidence}）。",
    question_for_reviewer: "担当者への質問: ",
    reason: "理由: ",
    declined: "ナレッジベースにはこの質問の答えがありません（確信度 {confidence}）。",
    failed: "回答できませんでした: ステップ `{step}` が失敗しました: {error}",
    needs_input: "もう少し教えてください: ",
    why: "理由: ",
    sources: "出典:",
    asks: "GRACE からの質問: ",
    your_answer: "回答（番号か自由記述。Enter だけなら GRACE が推定して進めます）: ",
};

impl Lang {
    /// Every language with a table of texts.
    pub const ALL: [Lang; 2] = [Lang::En, Lang::Ja];

    /// The language of `text`: Japanese when it has Hiragana or Katakana
    /// (Chinese has neither; Japanese almost never goes a sentence
    /// without), English otherwise.
    pub fn of(text: &str) -> Lang {
        let kana = text
            .chars()
            .any(|c| matches!(c, '\u{3041}'..='\u{309f}' | '\u{30a1}'..='\u{30fa}' | '\u{ff66}'..='\u{ff9d}'));
        if kana { Lang::Ja } else { Lang::En }
    }

    /// The fixed texts in this language.
    pub const fn texts(self) -> &'static Texts {
        match self {
            Lang::En => &EN,
            Lang::Ja => &JA,
        }
    }

    /// The language's name in English, for a language model's prompt.
    pub fn name(self) -> &'static str {
        match self {
            Lang::En => "English",
            Lang::Ja => "Japanese",
        }
    }
}

/// Whether `sentence` states what the sources lack, in any language
/// ([`Texts::absence`]).
pub fn is_absence(sentence: &str) -> bool {
    Lang::ALL
        .iter()
        .any(|l| sentence.starts_with(l.texts().absence))
}

/// `template` with each `{name}` replaced by its value.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (name, value) in values {
        out = out.replace(&format!("{{{name}}}"), value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_language_follows_the_question() {
        assert_eq!(Lang::of("How do I remove a package?"), Lang::En);
        assert_eq!(Lang::of("パッケージを削除するには？"), Lang::Ja);
        assert_eq!(Lang::of("apt-get で削除できますか"), Lang::Ja);
        // Kanji alone are not enough to call it Japanese (Chinese).
        assert_eq!(Lang::of("如何删除软件包"), Lang::En);
        assert_eq!(Lang::of(""), Lang::En);
    }

    #[test]
    fn every_table_fills_the_same_placeholders() {
        for lang in Lang::ALL {
            let t = lang.texts();
            for (template, names) in [
                (t.caveat, &["confidence"][..]),
                (t.escalated, &["confidence"]),
                (t.declined, &["confidence"]),
                (t.failed, &["step", "error"]),
                (t.not_mentioned, &["list"]),
            ] {
                for name in names {
                    assert!(
                        template.contains(&format!("{{{name}}}")),
                        "{lang:?}: {template}"
                    );
                }
                let filled = fill(
                    template,
                    &names.iter().map(|n| (*n, "X")).collect::<Vec<_>>(),
                );
                assert!(!filled.contains('{'), "{lang:?}: {filled}");
            }
            assert!(t.not_mentioned.starts_with(t.absence));
            assert!(is_absence(&fill(t.not_mentioned, &[("list", "E0392")])));
            assert!(!is_absence(t.caveat));
        }
        assert_eq!(
            fill(Lang::Ja.texts().declined, &[("confidence", "0.12")]),
            "ナレッジベースにはこの質問の答えがありません（確信度 0.12）。"
        );
    }
}
