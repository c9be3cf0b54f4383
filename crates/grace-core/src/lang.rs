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
    /// Before what the asker of an escalated question may do at a
    /// terminal.
    pub asker_choose: &'static str,
    /// What they may do, in this order: see GRACE's draft (marked
    /// unconfirmed), rephrase, ask a person.
    pub asker_options: [&'static str; 3],
    /// The prompt for it (Enter asks a person).
    pub asker_prompt: &'static str,
    /// Above GRACE's draft, shown to its asker.
    pub unconfirmed_draft: &'static str,
    /// Asks for the question in other words.
    pub rephrase: &'static str,
    /// A reply that is none of the options (`{reply}`).
    pub not_an_option: &'static str,
    /// Under the options in a conversation, where other text is a new
    /// question.
    pub chat_choice: &'static str,
    /// When a new question leaves the escalated one with no one.
    pub not_sent: &'static str,
    /// When leaving a conversation sends the escalated question to a
    /// person.
    pub sent_on_leaving: &'static str,
    /// A bare reply (`{reply}`: "yes", "ok") in a conversation where GRACE
    /// asked nothing.
    pub nothing_asked: &'static str,
    /// Where every score starts before any factor (`{value}`: the
    /// weights' intercept).
    pub starts_at: &'static str,
    /// Before the factors that raised a score.
    pub raised: &'static str,
    /// Before the factors that lowered it.
    pub lowered: &'static str,
    /// Before the factors that lowered a declined question's score.
    pub missing: &'static str,
    /// The sum shown (`{logit}`) and the step's confidence it makes
    /// (`{score}`).
    pub total: &'static str,
    /// When the run's confidence (`{confidence}`) combines several steps'.
    pub combined: &'static str,
    /// A factor nobody wrote words for (`{factor}`): raised it, lowered it.
    pub factor_other: [&'static str; 2],
    /// Each confidence factor in plain words (by its name as the API
    /// writes it): when it raised the score, when it lowered it.
    pub factors: &'static [(&'static str, &'static str, &'static str)],
    /// Words that only reply to a question ("yes", "ok"), lower case: a
    /// question of one of them alone asks nothing.
    pub bare_replies: &'static [&'static str],
}

impl Texts {
    /// Factor `name` in plain words, as it `raised` the score or lowered it.
    pub fn factor(&self, name: &str, raised: bool) -> String {
        match self.factors.iter().find(|(n, _, _)| *n == name) {
            Some((_, up, down)) => if raised { up } else { down }.to_string(),
            None => fill(
                self.factor_other[usize::from(!raised)],
                &[("factor", &name.replace('_', " "))],
            ),
        }
    }
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
    asker_choose: "What would you like to do?",
    asker_options: [
        "See GRACE's draft (unconfirmed: no person has checked it)",
        "Rephrase your question",
        "Ask a person",
    ],
    asker_prompt: "Your choice (1-3; Enter asks a person): ",
    unconfirmed_draft: "GRACE's draft, UNCONFIRMED (no person has checked it; do not rely on it yet):",
    rephrase: "Your question in other words: ",
    not_an_option: "\"{reply}\" is not one of the options: type 1, 2 or 3 (Enter asks a person)",
    chat_choice: "(type 1, 2 or 3; Enter asks a person; or ask something else)",
    not_sent: "(your last question was not sent to a person)",
    sent_on_leaving: "(your last question goes to a person, as Enter would have sent it)",
    nothing_asked: "\"{reply}\" answers a question, and GRACE asked none: ask your question in words",
    starts_at: "Every answer starts at {value}; from there:",
    raised: "What raised it:",
    lowered: "What lowered it:",
    missing: "What was missing:",
    total: "= {logit}: confidence {score}",
    combined: "(the run's confidence, {confidence}, is not this step's alone: it weighs every step, confidence.aggregation, and is 0 when a step failed)",
    factor_other: ["{factor} raised it", "{factor} lowered it"],
    bare_replies: &[
        "yes",
        "y",
        "yeah",
        "yep",
        "no",
        "n",
        "nope",
        "ok",
        "okay",
        "sure",
        "thanks",
        "thank you",
    ],
    factors: &[
        (
            "max_score",
            "The passage the answer cites matches the question closely",
            "The passage the answer cites does not match the question closely",
        ),
        (
            "mean_score",
            "The passages found are close to the question overall",
            "The passages found are mostly far from the question",
        ),
        (
            "min_score",
            "Even the weakest passage found is related",
            "Some passages found are barely related",
        ),
        (
            "score_variance",
            "The passages found match the question evenly",
            "The passages found match the question very unevenly",
        ),
        (
            "margin",
            "The best passage stands out from the others",
            "Several passages compete and none stands out",
        ),
        (
            "result_count",
            "Enough passages were found",
            "Few passages were found",
        ),
        (
            "neighbour_score",
            "The best passage is specific to this question",
            "The best passage is generic: many others look like it",
        ),
        (
            "query_coverage",
            "The passages contain the question's words",
            "Words of the question are missing from the passages",
        ),
        (
            "groundedness",
            "The answer's words come from the passages",
            "The answer says things the passages do not",
        ),
        (
            "citation_validity",
            "The answer cites passages that were found",
            "Some of the answer's citations point at nothing found",
        ),
        (
            "self_assessment",
            "The answering model was sure of its answer",
            "The answering model was unsure of its answer",
        ),
        (
            "abstained",
            "The answerer found something to answer with",
            "The answerer found nothing to answer with",
        ),
        (
            "reader",
            "A reading model found the answer in a passage",
            "A reading model found no answer in the passages",
        ),
        (
            "reader_margin",
            "One passage answers clearly better than the rest",
            "No passage answers clearly better than the rest",
        ),
        (
            "identifier_coverage",
            "The passages hold the codes and names the question uses",
            "A code or name in the question is missing from the passages",
        ),
        (
            "follow_up_coverage",
            "The passages hold the follow-up's own words",
            "The follow-up's own words are missing from the passages",
        ),
        (
            "document_history",
            "Askers rated earlier answers from these documents up",
            "Askers rated earlier answers from these documents down",
        ),
    ],
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
    asker_choose: "どうしますか？",
    asker_options: [
        "GRACE の下書きを見る（未確認: まだ誰も確認していません）",
        "質問を言い換える",
        "担当者に聞く",
    ],
    asker_prompt: "番号を選んでください（1〜3、Enter で担当者に聞きます）: ",
    unconfirmed_draft: "GRACE の下書き（未確認: まだ誰も確認していません。このまま頼らないでください）:",
    rephrase: "別の言い方で質問してください: ",
    not_an_option: "「{reply}」は選択肢にありません: 1、2、3 のいずれかを入力してください（Enter で担当者に聞きます）",
    chat_choice: "（1、2、3 を入力。Enter で担当者に聞きます。別の質問もできます）",
    not_sent: "（前の質問は担当者に送られていません）",
    sent_on_leaving: "（前の質問は Enter と同じく担当者に送られます）",
    nothing_asked: "「{reply}」は質問への返事ですが、GRACE は何も質問していません。質問を言葉で書いてください",
    starts_at: "どの回答も {value} から始まり、そこから:",
    raised: "上げた要因:",
    lowered: "下げた要因:",
    missing: "足りなかったもの:",
    total: "= {logit}: 確信度 {score}",
    combined: "（全体の確信度 {confidence} はこのステップだけのものではありません。各ステップを重み付けし（confidence.aggregation）、失敗したステップがあれば 0 です）",
    factor_other: ["{factor} が上げました", "{factor} が下げました"],
    bare_replies: &[
        "はい",
        "いいえ",
        "うん",
        "ううん",
        "ええ",
        "了解",
        "ありがとう",
    ],
    factors: &[
        (
            "max_score",
            "回答が引用した箇所が質問とよく一致しています",
            "回答が引用した箇所は質問とあまり一致していません",
        ),
        (
            "mean_score",
            "見つかった箇所が全体として質問に近いです",
            "見つかった箇所の多くが質問から離れています",
        ),
        (
            "min_score",
            "最も弱い箇所でも質問に関係しています",
            "ほとんど関係のない箇所が含まれています",
        ),
        (
            "score_variance",
            "見つかった箇所が質問に均等に一致しています",
            "見つかった箇所の一致度に大きなばらつきがあります",
        ),
        (
            "margin",
            "最も近い箇所が他より際立っています",
            "複数の箇所が競合し、際立つものがありません",
        ),
        (
            "result_count",
            "十分な数の箇所が見つかりました",
            "見つかった箇所が少ないです",
        ),
        (
            "neighbour_score",
            "最も近い箇所はこの質問に特有のものです",
            "最も近い箇所は一般的で、似た箇所が多くあります",
        ),
        (
            "query_coverage",
            "見つかった箇所に質問の語が含まれています",
            "質問の語が見つかった箇所にありません",
        ),
        (
            "groundedness",
            "回答の言葉は見つかった箇所に基づいています",
            "回答には見つかった箇所にない内容が含まれています",
        ),
        (
            "citation_validity",
            "回答は見つかった箇所を引用しています",
            "回答の引用の一部が見つかった箇所を指していません",
        ),
        (
            "self_assessment",
            "回答したモデルは自信を持っていました",
            "回答したモデルは自信がありませんでした",
        ),
        (
            "abstained",
            "回答に使える内容が見つかりました",
            "回答に使える内容が見つかりませんでした",
        ),
        (
            "reader",
            "読解モデルが箇所の中に答えを見つけました",
            "読解モデルは答えを見つけられませんでした",
        ),
        (
            "reader_margin",
            "一つの箇所が明らかに他より良く答えています",
            "明らかに良く答えている箇所がありません",
        ),
        (
            "identifier_coverage",
            "質問のコードや名前が見つかった箇所にあります",
            "質問のコードや名前が見つかった箇所にありません",
        ),
        (
            "follow_up_coverage",
            "追加質問の語が見つかった箇所にあります",
            "追加質問の語が見つかった箇所にありません",
        ),
        (
            "document_history",
            "これらの文書からの以前の回答は高く評価されました",
            "これらの文書からの以前の回答は低く評価されました",
        ),
    ],
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

    /// Its code as the API and the pages write it (`en`, `ja`).
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Ja => "ja",
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

/// Whether `text` is only a reply word of some language ("Yes!", "はい"),
/// whatever its case and the signs around it.
pub fn is_bare_reply(text: &str) -> bool {
    let word = text
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    Lang::ALL
        .iter()
        .any(|l| l.texts().bare_replies.contains(&word.as_str()))
}

/// Every language's factor words as one JSON object, for the pages:
/// `{"en": {"factors": {"max_score": [raised, lowered], …}, "other":
/// ["{factor} raised it", "{factor} lowered it"]}, "ja": …}`. The words
/// are written once, here; the pages read them from the server.
pub fn factor_words_json() -> serde_json::Value {
    let mut all = serde_json::Map::new();
    for lang in Lang::ALL {
        let texts = lang.texts();
        let factors: serde_json::Map<String, serde_json::Value> = texts
            .factors
            .iter()
            .map(|(name, up, down)| (name.to_string(), serde_json::json!([up, down])))
            .collect();
        all.insert(
            lang.code().to_string(),
            serde_json::json!({"factors": factors, "other": texts.factor_other}),
        );
    }
    serde_json::Value::Object(all)
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

    #[test]
    fn a_reply_word_alone_is_no_question() {
        for reply in ["yes", "Yes!", " OK. ", "thank you", "はい", "いいえ。"] {
            assert!(is_bare_reply(reply), "{reply:?}");
        }
        for question in [
            "yes or no?",
            "no-op mode",
            "okay to deploy on Friday?",
            "はいの意味",
        ] {
            assert!(!is_bare_reply(question), "{question:?}");
        }
    }

    #[test]
    fn every_factor_has_words_in_every_language() {
        let words = factor_words_json();
        for lang in Lang::ALL {
            for factor in crate::confidence::Factor::ALL {
                let pair = &words[lang.code()]["factors"][factor.name()];
                assert!(
                    pair[0].as_str().is_some_and(|w| !w.is_empty())
                        && pair[1].as_str().is_some_and(|w| !w.is_empty()),
                    "{} has no words for {}",
                    lang.code(),
                    factor.name()
                );
            }
        }
    }
}
