//! Small helpers for text from outside: two checks kept in step with the
//! patterns the OpenAPI document publishes for them (`NOT_BLANK`,
//! `PLAIN_ID`), so that what a client's schema check accepts the server
//! accepts too; cutting text on a character boundary; splitting a
//! paragraph into sentences (chunking, answering and grading share it);
//! and what a "word" is in scripts written without spaces (Japanese,
//! Chinese; Korean spaces its words but is bigrammed the same way).
//! [`blocks`] reads the structure loaders keep in a text (terms with their
//! descriptions, numbered lists, code) back into quotable blocks;
//! [`references`] takes the titles out of a manual's cross-references.

pub mod blocks;
pub mod references;

/// The published pattern of a text that must not be blank: at least one
/// character that is neither white space nor a control character.
pub const NOT_BLANK: &str = r"[^\s\x00-\x1f\x7f-\x9f]";

/// The published pattern of an id (a reviewer's): no white space or
/// control characters at all.
pub const PLAIN_ID: &str = r"^[^\s\x00-\x1f\x7f-\x9f]+$";

/// The characters that make a word, as ranges: Latin letters, and the
/// letters of other scripts (Latin-1's letters on, Greek, Cyrillic, the
/// scripts of India and Asia, kana, CJK, Hangul, full-width letters),
/// leaving out the blocks of signs (general and CJK punctuation, symbols,
/// arrows, full-width signs). What [`WORD`] publishes.
const WORD_RANGES: [(char, char); 11] = [
    ('A', 'Z'),
    ('a', 'z'),
    ('\u{00C0}', '\u{1FFF}'),
    ('\u{2C00}', '\u{2DFF}'),
    ('\u{2E80}', '\u{2FFF}'),
    ('\u{3040}', '\u{D7FF}'),
    ('\u{F900}', '\u{FDFF}'),
    ('\u{FE70}', '\u{FEFF}'),
    ('\u{FF21}', '\u{FF3A}'),
    ('\u{FF41}', '\u{FF5A}'),
    ('\u{FF66}', '\u{FFDC}'),
];

/// The published pattern of a question: at least one character of a word
/// ([`has_word`]): a question of only signs or digits asks nothing.
pub const WORD: &str = r"[A-Za-z\u00C0-\u1FFF\u2C00-\u2DFF\u2E80-\u2FFF\u3040-\uD7FF\uF900-\uFDFF\uFE70-\uFEFF\uFF21-\uFF3A\uFF41-\uFF5A\uFF66-\uFFDC]";

/// Whether `text` has a character of a word ([`WORD`]).
pub fn has_word(text: &str) -> bool {
    text.chars()
        .any(|c| WORD_RANGES.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c)))
}

fn invisible(c: char) -> bool {
    c.is_whitespace() || c.is_control()
}

/// Whether `text` has nothing but white space and control characters.
pub fn is_blank(text: &str) -> bool {
    text.chars().all(invisible)
}

/// Whether `id` is non-empty and has no white space or control characters.
pub fn is_plain_id(id: &str) -> bool {
    !id.is_empty() && !id.chars().any(invisible)
}

/// `text` cut to at most `max` characters on a character boundary, with
/// `…` when it was cut (for quoting outside text in messages and traces).
pub fn ellipsized(text: &str, max: usize) -> String {
    let cut = truncate_chars(text, max);
    if cut.len() < text.len() {
        format!("{cut}…")
    } else {
        cut.to_string()
    }
}

/// An id someone sent, as it may appear in an error message: bounded (40
/// characters) and printable.
pub fn shown_id(id: &str) -> String {
    ellipsized(id, 40)
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// The first `max` characters of `text` (all of it when shorter), cut on a
/// character boundary.
pub fn truncate_chars(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

/// A text's words as compared (answers' token F1, a reviewer's answer
/// against the draft): lowercased runs of letters and digits (with `_`, so
/// `asn1_der_decoding` is one), and each CJK character alone.
pub fn word_tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if is_cjk(c) {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            out.push(c.to_string());
        } else if c.is_alphanumeric() || c == '_' {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// Whether `c` belongs to a script written without spaces between words,
/// or is bigrammed as one (Lucene's CJK analyser's set): Han ideographs
/// (with their extensions and compatibility forms), Hiragana, Katakana
/// (with the prolonged sound mark and the half-width forms) and Hangul.
pub fn is_cjk(c: char) -> bool {
    matches!(c,
        '\u{3040}'..='\u{30ff}'     // Hiragana, Katakana (and ー)
        | '\u{31f0}'..='\u{31ff}'   // Katakana phonetic extensions
        | '\u{3400}'..='\u{4dbf}'   // Han extension A
        | '\u{4e00}'..='\u{9fff}'   // Han
        | '\u{f900}'..='\u{faff}'   // Han compatibility
        | '\u{ff66}'..='\u{ff9f}'   // half-width Katakana
        | '\u{1100}'..='\u{11ff}'   // Hangul Jamo
        | '\u{3130}'..='\u{318f}'   // Hangul compatibility Jamo
        | '\u{ac00}'..='\u{d7af}'   // Hangul syllables
        | '\u{20000}'..='\u{2ebef}' // Han extensions B to F
        | '\u{30000}'..='\u{3134f}' // Han extension G
    ) && c != '\u{30fb}' // the Katakana middle dot separates words
}

/// Characters of a script without spaces that make one word, for sizes
/// counted in words: a 200-word chunk holds about 400 Japanese characters.
pub const CJK_CHARS_PER_WORD: usize = 2;

/// How many words `text` holds: white space separates words, and inside a
/// token a run of CJK characters (with their punctuation, `、` `。`) counts
/// one word per [`CJK_CHARS_PER_WORD`] characters, rounded up, while every
/// other run counts one: `apt-getで削除する` is 1 + 3 words.
pub fn word_count(text: &str) -> usize {
    text.split_whitespace()
        .flat_map(runs)
        .map(|(run, cjk)| {
            if cjk {
                run.chars().count().div_ceil(CJK_CHARS_PER_WORD)
            } else {
                1
            }
        })
        .sum()
}

/// Whether `c` is sized as a CJK character: one of [`is_cjk`] or CJK
/// punctuation.
pub fn sized_as_cjk(c: char) -> bool {
    is_cjk(c) || is_cjk_punctuation(c)
}

/// The maximal runs of `token` that are all [`sized_as_cjk`] or all not,
/// each with which it is, in order; together they spell `token`.
pub fn runs(token: &str) -> impl Iterator<Item = (&str, bool)> {
    let mut rest = token;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let cjk = sized_as_cjk(first);
        let end = rest
            .char_indices()
            .find(|&(_, c)| sized_as_cjk(c) != cjk)
            .map_or(rest.len(), |(i, _)| i);
        let (run, tail) = rest.split_at(end);
        rest = tail;
        Some((run, cjk))
    })
}

/// Punctuation of CJK text: the ideographic full stop, comma and brackets,
/// the full-width marks and the Katakana middle dot.
pub fn is_cjk_punctuation(c: char) -> bool {
    matches!(c,
        '\u{3000}'..='\u{303f}'
        | '\u{ff01}'..='\u{ff0f}'
        | '\u{ff1a}'..='\u{ff20}'
        | '\u{ff3b}'..='\u{ff40}'
        | '\u{ff5b}'..='\u{ff65}'
        | '\u{30fb}'
    )
}

/// Abbreviations that end in a full stop without ending the sentence
/// ("e.g. Debian", "cf. RFC 822"), lowercased.
const ABBREVIATIONS: &[&str] = &[
    "e.g.", "i.e.", "cf.", "vs.", "viz.", "approx.", "incl.", "resp.", "esp.", "ca.", "fig.",
    "figs.", "eq.", "sec.", "ch.", "vol.", "pp.", "p.", "no.", "nos.", "mr.", "mrs.", "ms.", "dr.",
    "prof.", "st.", "jr.", "sr.", "inc.", "ltd.", "co.", "corp.", "u.s.", "a.k.a.",
];

/// The longest word [`abbreviation`] reads back (an abbreviation and the
/// quote or bracket before it): a run without spaces ("a.a.a.…") costs
/// this much at each of its full stops, not its whole length.
const MAX_ABBREVIATION_CHARS: usize = 12;

/// Whether the word that ends `upto` (ending in its full stop) is an
/// abbreviation that does not end a sentence.
fn abbreviation(upto: &[char]) -> bool {
    let whole = upto.len() <= MAX_ABBREVIATION_CHARS + 1;
    let upto = &upto[upto.len().saturating_sub(MAX_ABBREVIATION_CHARS + 1)..];
    let word_start = match upto.iter().rposition(|c| c.is_whitespace()) {
        Some(space) => space + 1,
        // The sentence's first word.
        None if whole => 0,
        // No space within reach: a word this long is no abbreviation.
        None => return false,
    };
    let word: String = upto[word_start..]
        .iter()
        .skip_while(|c| matches!(c, '(' | '[' | '"' | '\'' | '“' | '‘'))
        .flat_map(|c| c.to_lowercase())
        .collect();
    ABBREVIATIONS.contains(&word.as_str())
}

/// The longest Japanese quotation that holds its sentence together, in
/// characters: beyond it an unclosed `「` no longer does.
const MAX_QUOTE_CHARS: usize = 200;

/// Splits a paragraph after `.`, `!` or `?` (optionally followed by a
/// closing quote or bracket) when whitespace and an upper-case letter, a
/// digit, an opening quote, a code span or CJK text follow, except after an
/// abbreviation ("e.g.", "i.e.", "cf.") and inside a `` `code span` ``
/// (a path, a URL or a version has no space after its dots, so it never
/// ends one); after `。`, `！`, `？` or `．` (and a closing
/// bracket) whatever follows, since Japanese and Chinese sentences run on
/// without spaces, unless inside a `「…」` or `『…』` quote; and at a line
/// break. A `“…”` quotation holds its sentence together too (a quoted
/// title: "see Section 14.3, “… a "vertical market". Can I use …?” for
/// more information"), unless the mark closes it ("called “fast.” Then").
/// Linear in the paragraph's length.
pub fn sentences(paragraph: &str) -> Vec<String> {
    let chars: Vec<char> = paragraph.chars().collect();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    // Where the innermost open Japanese quote (「 or 『) opened: a full stop
    // inside a quote ends the quote's sentence, not the one around it.
    let mut quotes: Vec<usize> = Vec::new();
    // Inside a `code span` opened in this sentence: its full stops end
    // nothing (kept as the walk goes, so a long paragraph costs one pass).
    let mut in_code = false;
    // Where an open `“` opened, the same way.
    let mut quoted: Option<usize> = None;
    while i < chars.len() {
        let c = chars[i];
        let mut end = None;
        if c == '`' {
            in_code = !in_code;
        }
        match c {
            '「' | '『' => quotes.push(i),
            '」' | '』' => {
                quotes.pop();
            }
            '“' => quoted = Some(i),
            '”' => quoted = None,
            _ => {}
        }
        // An unclosed quote stops holding sentences together after a while.
        quotes.retain(|&at| i - at <= MAX_QUOTE_CHARS);
        quoted = quoted.filter(|&at| i - at <= MAX_QUOTE_CHARS);
        if matches!(c, '。' | '！' | '？' | '．') && quotes.is_empty() {
            let mut j = i + 1;
            while j < chars.len()
                && matches!(
                    chars[j],
                    '」' | '』'
                        | '）'
                        | '】'
                        | '〕'
                        | '〉'
                        | '》'
                        | '”'
                        | '’'
                        | ')'
                        | '"'
                        | '！'
                        | '？'
                )
            {
                j += 1;
            }
            // A citation marker after the mark (`…使います。 [2]`) belongs
            // to the sentence before it.
            let mut k = j;
            while k < chars.len() && chars[k].is_whitespace() {
                k += 1;
            }
            let marker =
                chars.get(k) == Some(&'[') && chars.get(k + 1).is_some_and(char::is_ascii_digit);
            if !marker {
                end = Some(j);
            }
        } else if matches!(c, '.' | '!' | '?') && !in_code && !abbreviation(&chars[start..=i]) {
            let mut j = i + 1;
            while j < chars.len() && matches!(chars[j], '"' | '\'' | ')' | ']' | '”' | '’') {
                j += 1;
            }
            // Inside a quotation only a mark that closes it may end the sentence.
            let held = quoted.is_some() && !chars[i + 1..j].contains(&'”');
            if !held && j < chars.len() && chars[j].is_whitespace() {
                let mut k = j;
                while k < chars.len() && chars[k].is_whitespace() {
                    k += 1;
                }
                if k == chars.len()
                    || chars[k].is_uppercase()
                    || sized_as_cjk(chars[k])
                    || chars[k].is_ascii_digit()
                    || matches!(chars[k], '"' | '“' | '(' | '*' | '-' | '`')
                {
                    end = Some(j);
                }
            }
        } else if c == '\n' {
            end = Some(i);
        }
        if let Some(e) = end {
            let s: String = chars[start..e].iter().collect();
            if !s.trim().is_empty() {
                out.push(s.trim().to_string());
            }
            start = e;
            i = e;
            // No quotation outlives its sentence.
            quoted = None;
            // The walk goes on after `e`: a span it opens is open.
            in_code = chars.get(e) == Some(&'`');
        }
        i += 1;
    }
    let s: String = chars[start.min(chars.len())..].iter().collect();
    if !s.trim().is_empty() {
        out.push(s.trim().to_string());
    }
    out
}

/// `seconds` as a person says it: "2 min", "3 h", "2 days".
pub fn duration_words(seconds: f64) -> String {
    match seconds {
        s if s < 90.0 => format!("{:.0} s", s.max(1.0)),
        s if s < 5_400.0 => format!("{:.0} min", s / 60.0),
        s if s < 129_600.0 => format!("{:.0} h", s / 3_600.0),
        s => format!("{:.0} days", s / 86_400.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_pattern_is_the_ranges_the_check_reads() {
        let class: String = WORD_RANGES
            .iter()
            .map(|(lo, hi)| {
                let at = |c: &char| {
                    if c.is_ascii_alphabetic() {
                        c.to_string()
                    } else {
                        format!("\\u{:04X}", u32::from(*c))
                    }
                };
                if lo == hi {
                    at(lo)
                } else {
                    format!("{}-{}", at(lo), at(hi))
                }
            })
            .collect();
        assert_eq!(WORD, format!("[{class}]"));
        for question in ["How?", "ORB-2001", "デプロイ", "Ünïcode", "к"] {
            assert!(has_word(question), "{question:?}");
        }
        for signs in [
            "?",
            "?!…",
            "1",
            "42.",
            "¿?",
            "\u{3000}？",
            "€ → ±",
            "😀",
            "　",
        ] {
            assert!(!has_word(signs), "{signs:?}");
        }
    }

    #[test]
    fn blank_means_only_white_space_and_controls() {
        for blank in [
            "",
            " ",
            "\t\n",
            "\u{1c}\u{1f}",
            "\u{85}\u{a0}\u{3000}",
            "\0\u{7f}",
        ] {
            assert!(is_blank(blank), "{blank:?}");
        }
        for text in ["a", " x ", "\u{feff}", "日本", "é"] {
            assert!(!is_blank(text), "{text:?}");
        }
        assert!(is_plain_id("alice") && is_plain_id("ops-team_2"));
        for bad in ["", "a b", "a\u{c}b", "a\u{1c}", "x\u{3000}"] {
            assert!(!is_plain_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn japanese_sentences_end_at_their_own_marks_without_spaces() {
        let p = "パッケージを削除します。設定も消すには「--purge」を使います！本当ですか？はい（確認済み）。";
        assert_eq!(
            sentences(p),
            vec![
                "パッケージを削除します。",
                "設定も消すには「--purge」を使います！",
                "本当ですか？",
                "はい（確認済み）。"
            ]
        );
        // A full stop inside a quotation does not end the sentence around
        // it; a closing bracket after the mark stays with its sentence.
        assert_eq!(
            sentences("彼は「分かった。」と言った。（注記。）次へ"),
            vec!["彼は「分かった。」と言った。", "（注記。）", "次へ"]
        );
        // A citation marker stays with the sentence it follows.
        assert_eq!(
            sentences("削除します。 [2] 次の文です。[3]"),
            vec!["削除します。 [2] 次の文です。[3]"]
        );
        // An unclosed quote holds sentences together for a while only.
        let long = format!("「{}。後の文。", "あ".repeat(300));
        assert_eq!(sentences(&long).len(), 2);
        // English rules are unchanged beside it.
        assert_eq!(
            sentences("Run apt-get. 次に再起動します。Then reboot."),
            vec!["Run apt-get.", "次に再起動します。", "Then reboot."]
        );
    }

    #[test]
    fn real_documentation_keeps_its_sentences_whole() {
        let cases: &[(&str, &[&str])] = &[
            // A command at the end of a sentence keeps its full stop, and a
            // code span may start the next.
            (
                "To roll back, run `orbit rollback api --env production`. Orbit keeps 10 releases.",
                &[
                    "To roll back, run `orbit rollback api --env production`.",
                    "Orbit keeps 10 releases.",
                ],
            ),
            (
                "Then run apt-get clean. `apt-get autoclean` removes only old files.",
                &[
                    "Then run apt-get clean.",
                    "`apt-get autoclean` removes only old files.",
                ],
            ),
            // Abbreviations.
            (
                "Use a mirror, e.g. Debian's own. Others work too, i.e. Any CDN. See cf. RFC 822.",
                &[
                    "Use a mirror, e.g. Debian's own.",
                    "Others work too, i.e. Any CDN.",
                    "See cf. RFC 822.",
                ],
            ),
            (
                "Tools (e.g. Apt and Aptitude) differ. They agree.",
                &["Tools (e.g. Apt and Aptitude) differ.", "They agree."],
            ),
            // Versions, paths and URLs have no space after their dots.
            (
                "Python 3.11.2 is current. Edit /etc/apt/sources.list.d/x.list. Read https://www.debian.org/doc/. Then reboot.",
                &[
                    "Python 3.11.2 is current.",
                    "Edit /etc/apt/sources.list.d/x.list.",
                    "Read https://www.debian.org/doc/.",
                    "Then reboot.",
                ],
            ),
            (
                "Upgrade to version 2.4. It fixes the bug in ~/.bashrc handling.",
                &[
                    "Upgrade to version 2.4.",
                    "It fixes the bug in ~/.bashrc handling.",
                ],
            ),
            // A full stop inside a code span ends nothing.
            (
                "Type `echo done. Exit` and press Enter. It prints.",
                &["Type `echo done. Exit` and press Enter.", "It prints."],
            ),
        ];
        for (paragraph, want) in cases {
            assert_eq!(sentences(paragraph), *want, "{paragraph}");
        }
        // A quoted title holds its sentence together; a quotation whose
        // last sentence ends inside it ends the sentence too.
        assert_eq!(
            sentences(
                "See Section 14.3, “I make a \"vertical market\". Can I use Debian?” for more. Then go."
            ),
            [
                "See Section 14.3, “I make a \"vertical market\". Can I use Debian?” for more.",
                "Then go."
            ]
        );
        assert_eq!(
            sentences("The option is called “fast.” Then it runs. “Quoted?” It is."),
            [
                "The option is called “fast.”",
                "Then it runs.",
                "“Quoted?”",
                "It is."
            ]
        );
        assert_eq!(
            sentences("E.g. Debian works. Done."),
            ["E.g. Debian works.", "Done."]
        );
    }

    #[test]
    fn hostile_paragraphs_are_split_in_one_pass() {
        // Full stops without spaces, open code spans and abbreviations by
        // the hundred thousand: each would cost a scan back to the
        // sentence's start if the splitter looked back.
        let dots = "a.".repeat(200_000);
        assert_eq!(sentences(&dots).len(), 1);
        let code = format!("`{}", "x. Y ".repeat(100_000));
        assert_eq!(sentences(&code).len(), 1);
        // An unclosed quotation holds sentences for a while, not forever.
        let unclosed = format!("“{}", "Go. ".repeat(1_000));
        assert!(sentences(&unclosed).len() > 900);
        let abbreviations = "e.g. X ".repeat(100_000);
        assert_eq!(sentences(&abbreviations).len(), 1);
    }

    #[test]
    fn words_count_characters_where_there_are_no_spaces() {
        assert_eq!(word_count("two words"), 2);
        assert_eq!(word_count("削除する"), 2);
        assert_eq!(word_count("削除します"), 3);
        assert_eq!(word_count("apt-getで削除する"), 1 + 3);
        assert_eq!(word_count("パッケージ、削除"), 4);
        assert_eq!(word_count("「apt」を"), 1 + 1 + 1);
        assert_eq!(word_count("- --"), 2);
        assert_eq!(word_count("한국어 문장입니다"), 2 + 3);
        assert_eq!(word_count(""), 0);
        assert_eq!(word_count(&"日".repeat(400)), 200);
        for c in ['日', 'ひ', 'カ', 'ー', '한', 'ｶ', '\u{20b9f}'] {
            assert!(is_cjk(c), "{c}");
        }
        for c in ['a', '。', '、', '・', 'é', '1', '！'] {
            assert!(!is_cjk(c), "{c}");
        }
    }

    #[test]
    fn truncation_cuts_on_character_boundaries() {
        assert_eq!(truncate_chars("ñandú", 2), "ña");
        assert_eq!(truncate_chars("ab", 5), "ab");
        assert_eq!(truncate_chars("", 0), "");
    }
}
