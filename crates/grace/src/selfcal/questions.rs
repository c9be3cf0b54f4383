//! Questions built from a section, by fixed patterns, without a language
//! model: the section's heading when it is a question; else one made from
//! the heading ("What is …?", "How do I …?", "What does `name` do?"); or
//! one made from the words of the section's first sentences, the way
//! people type a search ("configure proxy apt downloads?").

use crate::rng::Rng;
use crate::text::is_cjk;

/// Where a question came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The heading is itself a question.
    HeadingQuestion,
    /// Made from the heading by a pattern.
    Heading,
    /// Made from the section's first sentences.
    Text,
    /// Written by the configured language model
    /// ([`super::model_questions`]).
    Model,
}

/// Headings of sections that answer nothing a person asks.
const GENERIC_HEADINGS: &[&str] = &[
    "see also",
    "copyright",
    "license",
    "licence",
    "authors",
    "author",
    "contents",
    "table of contents",
    "index",
    "footnotes",
    "references",
    "acknowledgements",
    "acknowledgments",
    "colophon",
    "changelog",
    "reporting bugs",
    "navigation",
];

/// Words that carry no subject, left out of questions made from text.
const STOPWORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "all", "also", "an", "and", "any", "are", "as", "at",
    "be", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can",
    "could", "did", "do", "does", "doing", "down", "during", "each", "either", "else", "etc",
    "even", "every", "few", "for", "from", "further", "had", "has", "have", "having", "he", "her",
    "here", "hers", "him", "his", "how", "however", "i", "if", "in", "into", "is", "it", "its",
    "itself", "just", "may", "me", "might", "more", "most", "much", "must", "my", "no", "nor",
    "not", "now", "of", "off", "on", "once", "one", "only", "or", "other", "our", "out", "over",
    "own", "same", "shall", "she", "should", "so", "some", "such", "than", "that", "the", "their",
    "them", "then", "there", "these", "they", "this", "those", "through", "thus", "to", "too",
    "under", "until", "up", "upon", "us", "use", "used", "uses", "using", "very", "via", "was",
    "we", "well", "were", "what", "when", "where", "whether", "which", "while", "who", "whom",
    "why", "will", "with", "within", "without", "would", "yes", "yet", "you", "your",
];

/// Longest question built or accepted from a model (characters).
pub(super) const MAX_CHARS: usize = 200;

/// The last segment of a ` > ` heading path, without a leading number
/// ("2.3.1 Installing" → "Installing") or a "Q:" mark.
pub fn last_heading(path: &str) -> &str {
    let last = path.rsplit(" > ").next().unwrap_or("").trim();
    let unnumbered = last
        .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == ')')
        .trim_start();
    let unnumbered =
        if unnumbered.len() < last.len() && last.starts_with(|c: char| c.is_ascii_digit()) {
            unnumbered
        } else {
            last
        };
    unnumbered
        .strip_prefix("Q:")
        .or_else(|| unnumbered.strip_prefix("Q."))
        .map(str::trim_start)
        .unwrap_or(unnumbered)
}

/// Whether a heading answers nothing a person asks ("See also", "Index").
pub fn is_generic(heading: &str) -> bool {
    let h = heading.trim().trim_end_matches(':').to_lowercase();
    GENERIC_HEADINGS.contains(&h.as_str())
}

/// A question from the heading: the heading itself when it is a
/// question, else one made by a pattern; `None` for an empty or generic
/// heading.
pub fn from_heading(path: &str) -> Option<(String, Origin)> {
    let heading = last_heading(path);
    if heading.chars().count() < 3 || is_generic(heading) {
        return None;
    }
    if heading.ends_with('?') || heading.ends_with('？') {
        return Some((bounded(heading), Origin::HeadingQuestion));
    }
    let heading = heading.trim_end_matches(['.', ':']).trim();
    // Kana (Japanese) or Kanji alone: a Japanese-style question.
    if heading.chars().any(is_cjk) {
        return Some((bounded(&japanese_from_heading(heading)), Origin::Heading));
    }
    let words: Vec<&str> = heading.split_whitespace().collect();
    let first = words.first()?;
    let rest = words[1..].join(" ");
    let question = if words.len() == 1 && is_identifier(first) {
        format!("What does {first} do?")
    } else if let Some(how) = heading
        .strip_prefix("How to ")
        .or_else(|| heading.strip_prefix("how to "))
    {
        format!("How do I {how}?")
    } else if let Some(verb) = gerund_to_verb(first)
        && !rest.is_empty()
    {
        format!("How do I {verb} {rest}?")
    } else {
        format!("What is {}?", lower_first(heading))
    };
    Some((bounded(&question), Origin::Heading))
}

/// A terse question from the content words of one of the first sentences
/// of `text` (without the words of `heading`), the way people type into a
/// search box: three or four of them, in order, in one of a few shapes
/// ("how do i …?", "… ?"). `None` when no sentence has three content
/// words.
pub fn from_text(text: &str, heading: &str, rng: &mut Rng) -> Option<(String, Origin)> {
    if text.chars().take(400).filter(|c| is_cjk(*c)).count() >= 20 {
        return japanese_from_text(text, heading, rng);
    }
    let heading_words: Vec<String> = words(heading).map(|w| w.to_lowercase()).collect();
    let sentences: Vec<Vec<String>> = sentences(text)
        .take(4)
        .map(|s| content_words(s, &heading_words))
        .filter(|w| w.len() >= 3)
        .collect();
    let picked = pick_words(&sentences, 3, rng)?;
    let body = picked.join(" ");
    let question = match rng.below(4) {
        0 => format!("how do i {body}?"),
        1 => format!("what is {body}?"),
        2 => format!("{body} how?"),
        _ => format!("{body}?"),
    };
    Some((bounded(&question), Origin::Text))
}

/// One of `sentences` (each its content words, at least `fewest`) with
/// `fewest` or one more of its words kept, in order; `None` when there is
/// no sentence.
fn pick_words(sentences: &[Vec<String>], fewest: usize, rng: &mut Rng) -> Option<Vec<String>> {
    if sentences.is_empty() {
        return None;
    }
    let mut picked = sentences[rng.below(sentences.len())].clone();
    let keep = fewest + rng.below(2);
    while picked.len() > keep {
        picked.remove(rng.below(picked.len()));
    }
    Some(picked)
}

/// The content words of `text` (no stopwords, numbers, short words,
/// repeats or words of `skip`), in order; names keep their case.
pub fn content_words(text: &str, skip: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in words(text).take(200) {
        let lower = word.to_lowercase();
        if lower.chars().count() < 3
            || STOPWORDS.contains(&lower.as_str())
            || lower.chars().all(|c| c.is_ascii_digit())
            || skip.contains(&lower)
            || out.iter().any(|p| p.to_lowercase() == lower)
        {
            continue;
        }
        out.push(if is_identifier(word) {
            word.to_string()
        } else {
            lower
        });
    }
    out
}

/// Sentences of `text`: split after `.`, `!` or `?` followed by a space.
fn sentences(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let rest_trimmed = rest.trim_start();
        if rest_trimmed.is_empty() {
            return None;
        }
        let end = rest_trimmed
            .char_indices()
            .find(|(i, c)| {
                matches!(c, '.' | '!' | '?' | '。')
                    && rest_trimmed[i + c.len_utf8()..]
                        .chars()
                        .next()
                        .is_none_or(char::is_whitespace)
            })
            .map_or(rest_trimmed.len(), |(i, c)| i + c.len_utf8());
        let sentence = &rest_trimmed[..end];
        rest = &rest_trimmed[end..];
        Some(sentence)
    })
}

/// Words of `text`: runs of letters, digits and the characters names are
/// made of (`_ - . :`), trimmed of trailing punctuation.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':')))
        .map(|w| w.trim_matches(|c: char| matches!(c, '.' | ':' | '-')))
        .filter(|w| !w.is_empty())
}

/// Whether a word is a name in code or configuration (`core.editor`,
/// `max_file_bytes`, `--verbose`, `setRequestHeader`).
fn is_identifier(word: &str) -> bool {
    let inner = word.trim_start_matches('-');
    let has_letter = inner.chars().any(char::is_alphabetic);
    let dotted = inner.contains('.') && !inner.ends_with('.');
    let camel =
        inner.chars().skip(1).any(char::is_uppercase) && inner.chars().any(char::is_lowercase);
    has_letter
        && (word.starts_with("--")
            || inner.contains('_')
            || inner.contains("::")
            || dotted
            || camel)
}

/// "Installing" → "install", "Configuring" → "configure", "Running" →
/// "run"; `None` when the word is not an English gerund.
fn gerund_to_verb(word: &str) -> Option<String> {
    let lower = word.to_lowercase();
    let stem = lower.strip_suffix("ing")?;
    if stem.chars().count() < 3 || !stem.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let bytes = stem.as_bytes();
    let last = bytes[bytes.len() - 1];
    let before = bytes[bytes.len() - 2];
    let vowel = |b: u8| b"aeiou".contains(&b);
    Some(
        if last == before && !vowel(last) && !b"lsz".contains(&last) && bytes.len() > 3 {
            // running → run, setting → set (but adding → add)
            stem[..stem.len() - 1].to_string()
        } else if !vowel(last)
            && vowel(before)
            && !b"wxy".contains(&last)
            && bytes.len() >= 3
            && !vowel(bytes[bytes.len() - 3])
            && matches!(
                last,
                b'r' | b'v' | b'z' | b'c' | b'g' | b'k' | b'b' | b'd' | b't' | b's'
            )
            && !stem.ends_with("en")
            && !stem.ends_with("er")
            && !stem.ends_with("on")
        {
            // configuring → configure, using → use, saving → save
            format!("{stem}e")
        } else {
            stem.to_string()
        },
    )
}

/// `text` with its first letter in lower case, unless the first word is
/// an acronym or a name ("APT", "GnuPG").
fn lower_first(text: &str) -> String {
    let first = text.split_whitespace().next().unwrap_or("");
    let keep = first.chars().skip(1).any(char::is_uppercase) || is_identifier(first);
    if keep {
        return text.to_string();
    }
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Verbal nouns of documentation headings ("パッケージの削除"): with
/// する they make the verb of a how-to question.
const VERBAL_NOUNS: &[&str] = &[
    "削除",
    "設定",
    "更新",
    "インストール",
    "追加",
    "変更",
    "作成",
    "確認",
    "管理",
    "利用",
    "使用",
    "構築",
    "導入",
    "起動",
    "停止",
    "復元",
    "バックアップ",
    "実行",
    "編集",
    "登録",
    "接続",
    "移行",
    "アップグレード",
    "解除",
    "無効化",
    "有効化",
    "再起動",
    "検索",
    "保存",
    "共有",
    "暗号化",
    "署名",
    "翻訳",
    "監視",
    "記録",
    "表示",
    "選択",
    "入力",
    "出力",
];

/// A question from a Japanese heading: "パッケージの削除" →
/// "パッケージを削除するには？"; a heading ending in 方法 or 手順 → "…は？";
/// anything else → "…とは？".
fn japanese_from_heading(heading: &str) -> String {
    if let Some((object, noun)) = heading.rsplit_once('の')
        && !object.is_empty()
        && VERBAL_NOUNS.contains(&noun)
    {
        return format!("{object}を{noun}するには？");
    }
    if heading.ends_with("方法") || heading.ends_with("手順") {
        return format!("{heading}は？");
    }
    format!("{heading}とは？")
}

/// The content runs of Japanese text, in order: runs of Kanji, Katakana
/// or letters, digits and name characters (Hiragana is mostly particles
/// and endings), of two characters or more, without repeats or those of
/// `skip`.
fn japanese_content_runs(text: &str, skip: &[String]) -> Vec<String> {
    let content = |c: char| {
        matches!(c, '\u{4e00}'..='\u{9fff}' | '\u{3400}'..='\u{4dbf}' | '\u{30a1}'..='\u{30fa}' | 'ー')
            || c.is_ascii_alphanumeric()
            || matches!(c, '_' | '-' | '.' | '/')
    };
    let mut out: Vec<String> = Vec::new();
    for run in text.split(|c: char| !content(c)).take(200) {
        let run = run.trim_matches(['.', '-', '/']);
        if run.chars().count() < 2
            || run.chars().all(|c| c.is_ascii_digit())
            || skip.iter().any(|s| s == run)
            || out.iter().any(|o| o == run)
        {
            continue;
        }
        out.push(run.to_string());
    }
    out
}

/// A terse Japanese question from two or three content runs of one of the
/// first sentences, in order, in a few shapes ("パッケージ 削除 設定？",
/// "パッケージと削除について知りたい").
fn japanese_from_text(text: &str, heading: &str, rng: &mut Rng) -> Option<(String, Origin)> {
    let skip = japanese_content_runs(heading, &[]);
    let candidates: Vec<Vec<String>> = text
        .split("\n\n")
        .flat_map(crate::text::sentences)
        .take(4)
        .map(|s| japanese_content_runs(&s, &skip))
        .filter(|r| r.len() >= 2)
        .collect();
    let picked = pick_words(&candidates, 2, rng)?;
    let question = match rng.below(4) {
        0 => format!("{}？", picked.join(" ")),
        1 => format!("{}について知りたい", picked.join("と")),
        2 => format!("{} どうやる？", picked.join(" ")),
        _ => format!("{}は？", picked.join("の")),
    };
    Some((bounded(&question), Origin::Text))
}

/// `text` cut to [`MAX_CHARS`] characters.
fn bounded(text: &str) -> String {
    crate::text::truncate_chars(text.trim(), MAX_CHARS).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_heading_is_the_question() {
        let (q, o) = from_heading("Debian > 2.1 How do I install a package?").unwrap();
        assert_eq!(q, "How do I install a package?");
        assert_eq!(o, Origin::HeadingQuestion);
    }

    #[test]
    fn headings_become_questions_by_pattern() {
        let q = |h: &str| from_heading(h).unwrap().0;
        assert_eq!(
            q("Guide > Installing packages"),
            "How do I install packages?"
        );
        assert_eq!(q("Configuring the proxy"), "How do I configure the proxy?");
        assert_eq!(q("Running tests"), "How do I run tests?");
        assert_eq!(q("Adding a secret"), "How do I add a secret?");
        assert_eq!(q("Embedding models"), "How do I embed models?");
        assert_eq!(q("How to roll back"), "How do I roll back?");
        assert_eq!(q("Package priorities"), "What is package priorities?");
        assert_eq!(q("APT pinning"), "What is APT pinning?");
        assert_eq!(q("core.editor"), "What does core.editor do?");
        assert_eq!(q("3.2 Mirrors"), "What is mirrors?");
        assert!(from_heading("See also").is_none());
        assert!(from_heading("").is_none());
    }

    #[test]
    fn text_questions_take_a_few_content_words_in_order() {
        let text = "The proxy for apt downloads is set with Acquire::http::Proxy in a file under /etc/apt.";
        let words = content_words(text, &["proxy".to_string()]);
        assert_eq!(
            words,
            ["apt", "downloads", "set", "Acquire::http::Proxy", "file"]
        );
        for seed in 0..20 {
            let (q, o) = from_text(text, "Proxy", &mut Rng::new(seed)).unwrap();
            assert_eq!(o, Origin::Text);
            let used: Vec<&str> = words
                .iter()
                .map(String::as_str)
                .filter(|w| q.contains(w))
                .collect();
            assert!((3..=4).contains(&used.len()), "{q}");
            // In the text's order.
            let at: Vec<usize> = used.iter().map(|w| q.find(w).unwrap()).collect();
            assert!(at.windows(2).all(|p| p[0] < p[1]), "{q}");
        }
        assert!(from_text("It is so.", "", &mut Rng::new(1)).is_none());
    }

    #[test]
    fn japanese_sections_give_japanese_questions() {
        let q = |h: &str| from_heading(h).unwrap().0;
        assert_eq!(q("管理 > パッケージの削除"), "パッケージを削除するには？");
        assert_eq!(q("ネットワークの設定方法"), "ネットワークの設定方法は？");
        assert_eq!(q("名前解決"), "名前解決とは？");
        let text = "不要になったパッケージは apt remove で削除できます。設定ファイルも一緒に消したい場合は apt purge を使います。";
        let runs = japanese_content_runs(text, &["削除".to_string()]);
        assert_eq!(
            runs,
            [
                "不要",
                "パッケージ",
                "apt",
                "remove",
                "設定ファイル",
                "一緒",
                "場合",
                "purge"
            ]
        );
        for seed in 0..20 {
            let (q, o) = from_text(text, "パッケージの削除", &mut Rng::new(seed)).unwrap();
            assert_eq!(o, Origin::Text);
            assert!(q.chars().any(crate::text::sized_as_cjk), "{q}");
            assert!(!q.contains("削除"), "the heading's words stay out: {q}");
        }
    }

    #[test]
    fn hostile_text_is_bounded_and_char_safe() {
        let long = "ü".repeat(10_000);
        let (q, _) = from_heading(&format!("{long}?")).unwrap();
        assert!(q.chars().count() <= MAX_CHARS);
        let words = "日本語の文章 ".repeat(500);
        if let Some((q, _)) = from_text(&words, "", &mut Rng::new(1)) {
            assert!(q.chars().count() <= MAX_CHARS);
        }
        assert!(from_heading(" > > ").is_none());
    }
}
