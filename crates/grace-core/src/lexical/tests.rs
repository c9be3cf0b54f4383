//! Identifiers, sparse vectors of English, Japanese, Chinese and Korean
//! text, term ids, and hostile input.

use super::identifiers::is_identifier;
use super::*;

#[test]
fn finds_identifiers_and_not_words() {
    let text = "Error E0382 (use of moved value) appears; run `apt-get install --no-install-recommends foo_bar` \
                or call apt_pkg.init() with ORT 1.24.4 and camelCase. A plain sentence, e.g. this one.";
    let ids = identifiers(text);
    for want in [
        "e0382",
        "--no-install-recommends",
        "foo_bar",
        "apt_pkg.init()",
        "1.24.4",
        "camelcase",
    ] {
        assert!(
            ids.contains(&want.to_string()),
            "{want} missing from {ids:?}"
        );
    }
    for not in ["error", "appears", "plain", "sentence", "e.g", "one"] {
        assert!(!ids.contains(&not.to_string()), "{not} wrongly in {ids:?}");
    }
}

#[test]
fn identifiers_are_found_whole_and_case_blind() {
    let wanted = distinct_identifiers("Why does the compiler report E0392 for fetch.prune?");
    assert_eq!(wanted, vec!["e0392".to_string(), "fetch.prune".to_string()]);
    assert_eq!(
        identifiers_found(&wanted, "error[E0392]: parameter is never used"),
        1
    );
    assert_eq!(
        identifiers_found(&wanted, "See fetch.pruneTags and E03921."),
        0
    );
    assert_eq!(
        identifiers_found(&["libfoo.so".into()], "libfoo.so.6 is here"),
        0
    );
    assert_eq!(
        identifiers_found(&["x11".into()], "in /etc/X11/app-defaults/"),
        1
    );
    assert_eq!(
        distinct_identifiers("Where is VoIP software?"),
        Vec::<String>::new()
    );
    assert_eq!(
        distinct_identifiers("the --purge flag, é.x"),
        vec!["--purge"]
    );
    assert_eq!(
        identifiers_found(&wanted, "fetch.prune=true; E0392 again"),
        2
    );
    assert_eq!(identifiers_found(&[], "E0392"), 0);
}

#[test]
fn a_call_after_a_non_ascii_letter_does_not_split_a_character() {
    // `é.()` used to slice inside `é` and panic, in a query (search
    // answered 500) and in a document (ingest died half way).
    for text in [
        "é.()",
        "x é.() y",
        "ü.init()",
        "日本.()",
        "(é.init()",
        "é()",
    ] {
        let _ = identifiers(text);
        let _ = identifiers_found(&distinct_identifiers(text), text);
    }
    assert_eq!(
        identifiers("call apt_pkg.init() now"),
        vec!["apt_pkg.init()"]
    );
    assert_eq!(identifiers("(foo_bar()"), vec!["foo_bar()"]);
}

#[test]
fn hostile_text_never_panics_and_stays_bounded() {
    // Seeded generator over characters that break byte-offset code:
    // CJK, combining marks, right-to-left, emoji, NUL, identifier
    // punctuation and ASCII.
    const POOL: &[char] = &[
        'a',
        'Z',
        '0',
        '9',
        '_',
        '.',
        '-',
        ':',
        '/',
        '#',
        '+',
        '(',
        ')',
        ',',
        ' ',
        '\n',
        '\0',
        'é',
        'ß',
        'İ',
        '\u{301}',
        '\u{200f}',
        'ש',
        'ع',
        '日',
        '本',
        '😀',
        '\u{1f3fd}',
        'ǅ',
    ];
    let enc = LexicalEncoder::new().unwrap();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..3000 {
        let len = (next() % 40) as usize;
        let text: String = (0..len)
            .map(|_| POOL[(next() % POOL.len() as u64) as usize])
            .collect();
        let wanted = distinct_identifiers(&text);
        assert!(identifiers_found(&wanted, &text) <= wanted.len());
        let _ = enc.encode_query(&text);
        let _ = enc.encode_document(&text);
    }
    // One megabyte without a space: no identifier longer than 80
    // characters, and the search for one ends (found once: only the
    // last `ab1.ab1` is not continued by `.ab1`, its `.` ends the text).
    let long = "ab1.".repeat(250_000);
    assert!(identifiers(&long).is_empty());
    assert_eq!(identifiers_found(&["ab1.ab1".into()], &long), 1);
}

#[test]
fn one_letter_options_and_quantities_name_nothing_exactly() {
    let ids = distinct_identifiers(
        "grep -r with make -j8 at 3am on a 2GB, 64-bit box: --delete, core.autocrlf, E0382, 1.24 or x86_64?",
    );
    assert_eq!(
        ids,
        ["--delete", "1.24", "core.autocrlf", "e0382", "x86_64"],
        "{ids:?}"
    );
    // The lexical ranking still matches them whole.
    for vague in ["-r", "-j8", "3am", "2gb", "64-bit"] {
        assert!(identifiers("grep -r, make -j8, 3am, 2GB, 64-bit").contains(&vague.to_string()));
    }
}

#[test]
fn apt_get_is_not_an_identifier_but_a_flag_is() {
    assert!(!is_identifier("apt-get"));
    assert!(is_identifier("-y"));
    assert!(is_identifier("--purge"));
    assert!(!is_identifier("-"));
    assert!(!is_identifier("--"));
}

#[test]
fn sparse_vectors_have_unique_sorted_ids() {
    let enc = LexicalEncoder::new().unwrap();
    let v =
        enc.encode_document("The E0382 error, again E0382; moved values and more moved values.");
    assert!(!v.is_empty());
    assert!(v.indices.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(v.indices.len(), v.values.len());
}

#[test]
fn query_and_document_share_identifier_terms() {
    let enc = LexicalEncoder::new().unwrap();
    let d = enc.encode_document("Pass --purge to remove configuration files.");
    let q = enc.encode_query("what does --purge do");
    let shared = q.indices.iter().filter(|i| d.indices.contains(i)).count();
    // "purge" as a word (stemmed) and "--purge" as an identifier
    assert!(shared >= 2, "shared {shared}: {q:?} vs {d:?}");
    let other = enc.encode_document("Purge the cache.");
    let shared_other = q
        .indices
        .iter()
        .filter(|i| other.indices.contains(i))
        .count();
    assert!(shared_other < shared);
}

fn shared(q: &SparseVector, d: &SparseVector) -> usize {
    q.indices.iter().filter(|i| d.indices.contains(i)).count()
}

#[test]
fn japanese_is_bigrammed_and_matches_without_spaces() {
    let enc = LexicalEncoder::new().unwrap();
    // 削除 除す する: three bigrams, a lone character its own term.
    assert_eq!(cjk_terms("削除する").len(), 3);
    assert_eq!(cjk_terms("本").len(), 1);
    assert_eq!(cjk_terms("本、日").len(), 2);
    assert_eq!(cjk_terms("apt で削除").len(), 1 + 1);
    assert!(cjk_terms("no CJK here").is_empty());
    let d = enc.encode_document("不要になったパッケージの削除には apt-get autoremove を使います。");
    let q = enc.encode_query("パッケージを削除したい");
    // パッ ッケ ケー ージ 削除: five shared bigrams.
    assert!(shared(&q, &d) >= 5, "{q:?} vs {d:?}");
    let other = enc.encode_document("カーネルを更新するには再起動が必要です。");
    assert!(shared(&q, &other) < shared(&q, &d));
    // Document weights count a repeated bigram more, up to saturation.
    let once = enc.encode_document("削除");
    let thrice = enc.encode_document("削除。削除。削除。");
    let w = |v: &SparseVector| {
        v.values[v
            .indices
            .iter()
            .position(|&i| i == cjk_terms("削除")[0])
            .unwrap()]
    };
    assert!(w(&thrice) > w(&once) && w(&thrice) < 3.0 * w(&once));
}

#[test]
fn identifiers_and_english_inside_japanese_still_count() {
    let enc = LexicalEncoder::new().unwrap();
    assert_eq!(
        identifiers("/etc/apt/sources.listを編集して E0392が出たら--purgeを付ける"),
        vec!["/etc/apt/sources.list", "e0392", "--purge"]
    );
    assert_eq!(identifiers_found(&["e0392".into()], "エラーE0392が出る"), 1);
    // English words in a Japanese sentence reach the English tokenizer.
    let d = enc.encode_document("firewallの設定を変更する");
    let q = enc.encode_query("firewall");
    assert_eq!(shared(&q, &d), 1, "{q:?} vs {d:?}");
    // Full-width Latin as input methods type it is folded to ASCII.
    assert_eq!(
        enc.encode_query("ａｐｔ－ｇｅｔ　ｉｎｓｔａｌｌ　－－ｐｕｒｇｅ"),
        enc.encode_query("apt-get install --purge")
    );
}

#[test]
fn term_ids_are_fnv_of_the_namespaced_text_as_stored_collections_hold_them() {
    let fnv = |key: &str| namespaced_term(b"", key.bytes());
    assert_eq!(fnv(""), 0x811c_9dc5);
    assert_eq!(cjk_term(&['削', '除']), fnv("cjk:削除"));
    assert_eq!(cjk_term(&['本']), fnv("cjk:本"));
    assert_eq!(cjk_term(&['\u{20b9f}', 'ア']), fnv("cjk:\u{20b9f}ア"));
    assert_eq!(identifier_term("e0392"), fnv("id:e0392"));
}

#[test]
fn chinese_and_korean_are_bigrammed_too() {
    let enc = LexicalEncoder::new().unwrap();
    let d = enc.encode_document("如何删除软件包？使用 apt remove 命令。");
    assert!(shared(&enc.encode_query("删除软件包"), &d) >= 4);
    let d = enc.encode_document("패키지를 삭제하려면 apt remove 를 사용합니다.");
    assert!(shared(&enc.encode_query("패키지 삭제"), &d) >= 3);
}

#[test]
fn stop_word_query_is_empty() {
    let enc = LexicalEncoder::new().unwrap();
    assert!(enc.encode_query("the of and").is_empty());
}

#[test]
fn two_words_of_a_question_are_found_written_as_one() {
    let enc = LexicalEncoder::new().unwrap();
    let query = "How do I roll back a production deployment?";
    let compounds = enc.compounds(query);
    let rollback = enc.encode_document("rollback").indices[0];
    assert!(
        compounds.iter().any(|c| c.whole == rollback),
        "{compounds:?}"
    );
    let terms = enc.encode_query(query);
    let passage: std::collections::HashSet<u32> = enc
        .encode_document("To return to the previous release, run orbit rollback in production.")
        .indices
        .into_iter()
        .collect();
    let plain = term_coverage(&terms, &passage).unwrap();
    let joined = coverage_with_compounds(&terms, &compounds, &passage).unwrap();
    assert!(joined > plain, "{plain} → {joined}");
    // "set up" is "setup" though "up" is a stop word; CJK and one letter
    // make none.
    let setup = enc.encode_document("setup").indices[0];
    assert!(
        enc.compounds("how to set up ssh")
            .iter()
            .any(|c| c.whole == setup)
    );
    assert!(enc.compounds("a b 設定する").is_empty());
    assert_eq!(
        coverage_with_compounds(&enc.encode_query("the"), &[], &passage),
        None
    );
}
