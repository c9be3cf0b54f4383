//! Man pages: the roff source Debian ships (`/usr/share/man/man1/ls.1.gz`,
//! gunzipped by the caller). `.SH` and `.SS` (mdoc's `.Sh` and `.Ss`) are
//! the headings, so NAME, SYNOPSIS and OPTIONS become sections; `.TH`
//! gives the title (`LS(1)`). Fonts, sizes and other requests are dropped,
//! escapes become characters, macro definitions and conditionals are
//! skipped, and `.so` never reads another file. One pass over the lines, no
//! macro expansion: the work is linear in the input.

use super::{Document, SectionBuilder};
use crate::text::blocks::DESCRIPTION;

/// Requests and macros whose arguments are not text.
const SILENT: &[&str] = &[
    "ad", "bp", "ce", "ds", "fi", "ft", "hy", "in", "ll", "na", "ne", "nf", "nh", "nr", "ns", "pl",
    "po", "ps", "rm", "rr", "so", "ta", "ti", "tr", "vs", "mso", "RS", "RE", "UE", "ME", "EX",
    "EE", "YS", "PD", "DT", "HP", "Dd", "Dt", "Os", "Bl", "El", "Bd", "Ed", "Ek", "Bk", "cs", "ss",
    "ch", "wh", "it", "em", "hw", "lf", "pc", "cc", "c2", "eo", "ec", "fc", "lc", "mk", "rt", "sv",
    "os", "tm", "ab", "ex", "pm", "fl", "nx", "rd", "sy", "pi", "cf", "do", "return",
];

/// Requests that end a paragraph.
const BREAKS: &[&str] = &["PP", "LP", "P", "sp", "Pp", "Lp", "br", "TQ"];

pub(super) fn load(text: &str) -> Document {
    let mut out = SectionBuilder::default();
    let mut title = None;
    let mut fill = true;
    // `.SH` with no argument: the next text line is the heading.
    let mut heading_next: Option<usize> = None;
    // `.TP`: the next text line is the tag of a tagged paragraph.
    let mut tag_next = false;
    // After a tag: the next text starts its description.
    let mut describe = false;
    // Inside `.de`/`.ig` … `..`: skipped.
    let mut skipping = false;
    for line in text.lines() {
        if skipping {
            skipping = line.trim_end() != "..";
            continue;
        }
        let Some(request) = line.strip_prefix(['.', '\'']) else {
            if let Some(level) = heading_next.take() {
                out.heading(level, &unescape(line));
            } else if tag_next {
                tag_next = false;
                out.paragraph_break();
                out.push_text(&unescape(line));
                out.push_text("\n");
                describe = true;
            } else if unescape(line).trim().is_empty() {
                out.paragraph_break();
                describe = false;
            } else {
                push_running(&mut out, &code_spans(line), fill, &mut describe);
            }
            continue;
        };
        let request = request.trim_start();
        if request.starts_with("\\\"") || request.is_empty() {
            continue;
        }
        let (name, rest) = request
            .split_once(|c: char| c.is_whitespace())
            .unwrap_or((request, ""));
        let args = arguments(rest);
        match name {
            "TH" | "Dt" if title.is_none() => {
                title = args.first().map(|n| match args.get(1) {
                    Some(sec) => format!("{}({sec})", unescape(n)),
                    None => unescape(n),
                });
            }
            "SH" | "Sh" | "SS" | "Ss" => {
                let level = if name.eq_ignore_ascii_case("sh") {
                    1
                } else {
                    2
                };
                if args.is_empty() {
                    heading_next = Some(level);
                } else {
                    out.heading(level, &unescape(&args.join(" ")));
                }
                tag_next = false;
                describe = false;
            }
            "TP" => {
                out.paragraph_break();
                tag_next = true;
                describe = false;
            }
            "IP" => {
                describe = false;
                match args.first().map(|t| unescape(t)) {
                    // A bullet or a number: an item of a list, on its own line.
                    Some(tag) if matches!(tag.trim(), "•" | "-" | "*" | "o") => {
                        out.line_break();
                        out.push_text("- ");
                    }
                    Some(tag) if is_item_number(&tag) => {
                        out.line_break();
                        out.push_text(&format!("{}. ", tag.trim().trim_end_matches(['.', ')'])));
                    }
                    Some(tag) if !tag.trim().is_empty() => {
                        out.paragraph_break();
                        out.push_text(&tag);
                        out.push_text("\n");
                        describe = true;
                    }
                    _ => out.paragraph_break(),
                }
            }
            "It" => {
                out.paragraph_break();
                describe = false;
                let tag = mdoc_words(&args);
                if !tag.is_empty() {
                    out.push_text(&unescape(&tag));
                    out.push_text("\n");
                    describe = true;
                }
            }
            "nf" | "EX" => fill = false,
            "fi" | "EE" => fill = true,
            "de" | "de1" | "am" | "ig" => skipping = true,
            "if" | "ie" | "el" | "while" => {}
            _ if BREAKS.contains(&name) => {
                out.paragraph_break();
                describe = false;
            }
            _ if SILENT.contains(&name) => {}
            // Font macros (`.B`, `.BR`, `.IR` …) alternate fonts without
            // spaces; others (mdoc's `.Nm`, `.Ar`, `.UR`) are words. A bold
            // line in running text is a command: code.
            "B" if !tag_next => {
                let words = unescape(&args.join(" "));
                let text = if words.trim().is_empty() {
                    words
                } else {
                    format!("`{}`", words.trim())
                };
                push_running(&mut out, &text, fill, &mut describe);
            }
            "B" | "I" | "SM" | "SB" => push_line(
                &mut out,
                &args.join(" "),
                fill,
                &mut tag_next,
                &mut describe,
            ),
            "BR" | "RB" | "BI" | "IB" | "RI" | "IR" => {
                push_line(&mut out, &args.concat(), fill, &mut tag_next, &mut describe)
            }
            "Fl" => push_line(&mut out, &flags(&args), fill, &mut tag_next, &mut describe),
            _ => push_line(
                &mut out,
                &mdoc_words(&args),
                fill,
                &mut tag_next,
                &mut describe,
            ),
        }
    }
    out.finish(title)
}

/// mdoc's inline macros that only set a style.
const MDOC_INLINE: &[&str] = &[
    "Ar", "Cm", "Dq", "Em", "Ic", "Li", "Nm", "No", "Ns", "Op", "Pa", "Pq", "Ql", "Qq", "Sq", "Sy",
    "Va", "Xr", "Ev", "Ft", "Fn", "Fa", "Ad", "Dv", "Er", "Ms", "Oo", "Oc",
];

/// `-a -b` for mdoc's `.Fl a b`.
fn flags(args: &[String]) -> String {
    args.iter()
        .map(|a| format!("-{a}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// An mdoc line's words: inline style macros dropped, `Fl x` as `-x`.
fn mdoc_words(args: &[String]) -> String {
    let mut words = Vec::with_capacity(args.len());
    let mut flag = false;
    for a in args {
        if a == "Fl" {
            flag = true;
        } else if MDOC_INLINE.contains(&a.as_str()) {
            flag = false;
        } else if std::mem::take(&mut flag) {
            words.push(format!("-{a}"));
        } else {
            words.push(a.clone());
        }
    }
    words.join(" ")
}

/// Text produced by a macro line: the tag of a tagged paragraph, or
/// running text.
fn push_line(
    out: &mut SectionBuilder,
    raw: &str,
    fill: bool,
    tag_next: &mut bool,
    describe: &mut bool,
) {
    let text = unescape(raw);
    if text.trim().is_empty() {
        return;
    }
    if std::mem::take(tag_next) {
        out.paragraph_break();
        out.push_text(&text);
        out.push_text("\n");
        *describe = true;
    } else {
        push_running(out, &text, fill, describe);
    }
}

/// Running text; the first after a tag starts its description line.
fn push_running(out: &mut SectionBuilder, text: &str, fill: bool, describe: &mut bool) {
    if text.trim().is_empty() {
        return;
    }
    if std::mem::take(describe) {
        out.line_break();
        out.push_text(DESCRIPTION);
    }
    out.push_text(text);
    out.push_text(if fill { " " } else { "\n" });
}

/// Whether an `.IP` tag numbers a list item (`1.`, `2)`, `3`).
fn is_item_number(tag: &str) -> bool {
    let t = tag.trim().trim_end_matches(['.', ')']);
    (1..=3).contains(&t.len()) && t.chars().all(|c| c.is_ascii_digit())
}

/// A text line with its bold and constant-width runs (`\fBorbit logs\fR`,
/// `\f(CWmake\fP`) as code spans: in a man page they are what the reader
/// types.
fn code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len() + 4);
    let mut rest = line;
    let mut open = false;
    while let Some(at) = rest.find("\\f") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let (font, len) = match after.chars().next() {
            Some('(') => (after.get(1..3).unwrap_or(""), 3),
            Some('[') => {
                let end = after.find(']').unwrap_or(after.len().saturating_sub(1));
                (&after[1..end], end + 1)
            }
            Some(c) => (&after[..c.len_utf8()], c.len_utf8()),
            None => ("", 0),
        };
        let code = matches!(font, "B" | "3" | "C" | "CW" | "CB" | "CR");
        if code && !open {
            out.push('`');
            open = true;
        } else if !code && open {
            out.push('`');
            open = false;
        }
        rest = after.get(len..).unwrap_or("");
    }
    out.push_str(rest);
    if open {
        out.push('`');
    }
    let text = unescape(&out);
    tidy_code(&text)
}

/// Code spans without blank or edge spaces: `` ` orbit` `` → `` `orbit` ``,
/// and an empty pair dropped.
fn tidy_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut parts = text.split('`');
    if let Some(first) = parts.next() {
        out.push_str(first);
    }
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i % 2 == 0 {
            // Inside a span.
            let inner = part.trim();
            if !inner.is_empty() {
                if part.starts_with(' ') {
                    out.push(' ');
                }
                out.push('`');
                out.push_str(inner);
                out.push('`');
                if part.ends_with(' ') {
                    out.push(' ');
                }
            } else {
                out.push_str(part);
            }
        } else {
            out.push_str(part);
        }
    }
    out
}

/// A request's arguments: split at spaces, `"…"` quoting (`""` inside is a
/// quote), a `\"` comment ending them.
fn arguments(rest: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let Some(&first) = chars.peek() else {
            return args;
        };
        let mut arg = String::new();
        if first == '"' {
            chars.next();
            while let Some(c) = chars.next() {
                if c == '"' {
                    if chars.next_if_eq(&'"').is_some() {
                        arg.push('"');
                        continue;
                    }
                    break;
                }
                arg.push(c);
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' && chars.peek() == Some(&'"') {
                    return args;
                }
                arg.push(c);
                if c == '\\'
                    && let Some(n) = chars.next()
                {
                    arg.push(n);
                }
            }
        }
        args.push(arg);
    }
}

/// Roff escapes to text: `\fB` and `\s-1` dropped, `\-` → `-`, `\(em` →
/// `—`, `\[u00E9]` → `é`, `\"` starts a comment.
fn unescape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else { break };
        match e {
            '"' | '#' => break,
            '-' | 'e' | '\\' => out.push(if e == '-' { '-' } else { '\\' }),
            ' ' | '~' | '0' => out.push(' '),
            '&' | '|' | '^' | '/' | ',' | ')' | '%' | ':' | 'c' | 'd' | 'u' | 'p' | 'r' | 't'
            | 'a' | 'z' | '{' | '}' => {}
            '(' => {
                let name: String = chars.by_ref().take(2).collect();
                out.push_str(special(&name));
            }
            '[' => {
                let name = bracketed(&mut chars);
                out.push_str(&named_char(&name));
            }
            '*' => {
                let name = register_name(&mut chars);
                out.push_str(match name.as_str() {
                    "R" => "®",
                    "Tm" => "™",
                    "lq" => "\u{201c}",
                    "rq" => "\u{201d}",
                    _ => "",
                });
            }
            'f' | 'F' | 'n' | 'g' | 'k' | 'm' | 'M' | 'V' | 'Y' | 'O' => {
                register_name(&mut chars);
            }
            's' => {
                chars.next_if(|c| *c == '+' || *c == '-');
                if chars.peek() == Some(&'(') || chars.peek() == Some(&'[') {
                    register_name(&mut chars);
                } else {
                    while chars.next_if(char::is_ascii_digit).is_some() {}
                }
            }
            'N' => {
                let arg = quoted(&mut chars);
                if let Some(c) = arg.parse::<u32>().ok().and_then(char::from_u32) {
                    out.push(c);
                }
            }
            'h' | 'v' | 'w' | 'l' | 'L' | 'o' | 'X' | 'Z' | 'D' | 'b' | 'x' | 'A' | 'B' | 'C'
            | 'R' | 'S' => {
                quoted(&mut chars);
            }
            other => out.push(other),
        }
    }
    out
}

/// The name after `\f`, `\*`, `\n`: one character, `(xx` or `[name]`.
fn register_name(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    match chars.next() {
        Some('(') => chars.by_ref().take(2).collect(),
        Some('[') => bracketed(chars),
        Some(c) => c.to_string(),
        None => String::new(),
    }
}

/// Up to the closing `]` (at most 64 characters).
fn bracketed(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    let mut name = String::new();
    for c in chars.by_ref() {
        if c == ']' || name.len() > 64 {
            break;
        }
        name.push(c);
    }
    name
}

/// A delimited argument (`'…'`, or any delimiter), at most 256 characters.
fn quoted(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    let Some(delim) = chars.next() else {
        return String::new();
    };
    let mut arg = String::new();
    for c in chars.by_ref() {
        if c == delim || arg.len() > 256 {
            break;
        }
        arg.push(c);
    }
    arg
}

/// `\[name]`: a two-letter special, or `u` and a code point.
fn named_char(name: &str) -> String {
    if let Some(hex) = name.strip_prefix('u')
        && let Some(c) = u32::from_str_radix(hex, 16).ok().and_then(char::from_u32)
    {
        return c.to_string();
    }
    special(name).to_string()
}

/// The common two-letter specials (`\(em`).
fn special(name: &str) -> &'static str {
    match name {
        "em" => "—",
        "en" => "–",
        "hy" | "mi" => "-",
        "aq" => "'",
        "dq" => "\"",
        "lq" => "\u{201c}",
        "rq" => "\u{201d}",
        "oq" => "\u{2018}",
        "cq" => "\u{2019}",
        "bu" => "•",
        "co" => "©",
        "rg" => "®",
        "tm" => "™",
        "mu" => "×",
        "de" => "°",
        ">=" => "≥",
        "<=" => "≤",
        "!=" => "≠",
        "->" => "→",
        "<-" => "←",
        "ti" => "~",
        "ha" => "^",
        "rs" => "\\",
        "sl" => "/",
        "ba" | "bv" | "or" => "|",
        "lB" => "[",
        "rB" => "]",
        "lC" => "{",
        "rC" => "}",
        "la" => "⟨",
        "ra" => "⟩",
        "sq" => "□",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::super::outline;
    use super::*;

    const LS: &str = r#".\" A comment
.TH LS "1" "March 2024" "GNU coreutils 9.4" "User Commands"
.de XX
.B never shown
..
.SH NAME
ls \- list directory contents
.SH SYNOPSIS
.B ls
[\fI\,OPTION\/\fR]... [\fI\,FILE\/\fR]...
.SH DESCRIPTION
.\" Add any additional description here
.PP
List information about the FILEs (the current directory by default).
.TP
\fB\-a\fR, \fB\-\-all\fR
do not ignore entries starting with .
.TP
.BR \-l " (long)"
use a long listing format \(em see \[u00E9]t\(aqe\s-1 below\s0.
.SS "Exit status:"
.nf
0  if OK,
1  if minor problems
.fi
.so /etc/passwd
"#;

    #[test]
    fn sections_options_and_escapes() {
        let doc = load(LS);
        assert_eq!(doc.title.as_deref(), Some("LS(1)"));
        let tidy = |d: Document| {
            let mut d = d;
            for s in &mut d.sections {
                s.text = super::super::tidy(&s.text);
            }
            d
        };
        let doc = tidy(doc);
        assert_eq!(
            outline(&doc),
            [
                (vec!["NAME"], "ls - list directory contents"),
                (vec!["SYNOPSIS"], "`ls` [OPTION]... [FILE]..."),
                (
                    vec!["DESCRIPTION"],
                    "List information about the FILEs (the current directory by default).\n\n-a, --all\n: do not ignore entries starting with .\n\n-l (long)\n: use a long listing format — see ét'e below."
                ),
                (
                    vec!["DESCRIPTION", "Exit status:"],
                    "0 if OK,\n1 if minor problems"
                ),
            ]
        );
    }

    #[test]
    fn tagged_paragraphs_are_terms_and_bold_is_code() {
        let doc = load(
            ".SH COMMANDS\n.TP\n.B promote\nCopy the release running on staging\nto production.\n.TP\n\\fB\\-\\-env\\fR \\fIname\\fR\nThe environment.\n.PP\nLook at the logs with \\fBorbit logs\\fR or run\n.B orbit status\nfirst.\n.IP \\(bu 2\nfirst point\n.IP 2. 4\nsecond step\n",
        );
        let text = super::super::tidy(&doc.sections[0].text);
        assert_eq!(
            text,
            "promote\n: Copy the release running on staging to production.\n\n--env name\n: The environment.\n\nLook at the logs with `orbit logs` or run `orbit status` first.\n- first point\n2. second step"
        );
        let blocks = crate::text::blocks::blocks(&text);
        assert_eq!(
            blocks[0].markdown,
            "**promote**: Copy the release running on staging to production."
        );
    }

    #[test]
    fn mdoc_headings_and_flags() {
        let doc = load(
            ".Dd May 1, 2024\n.Dt CAT 1\n.Sh NAME\n.Nm cat\n.Nd concatenate\n.Sh OPTIONS\n.It Fl n\nNumber lines.\n",
        );
        assert_eq!(doc.title.as_deref(), Some("CAT(1)"));
        assert_eq!(doc.sections[1].headings, ["OPTIONS"]);
        assert!(doc.sections[1].text.contains("Number lines."));
    }

    #[test]
    fn hostile_roff_stays_linear_and_in_bounds() {
        // Unterminated escapes, a macro definition that never ends, odd
        // quoting and multi-byte text at every cut.
        for text in [
            "\\",
            "\\(",
            "\\[u110000]\\[uZZ]\\N'99999999999'\\s(",
            ".B \"unterminated",
            ".TH",
            ".SH",
            "é\\fé\\*é\\(é",
            ".de X\nno end\n",
        ] {
            let _ = load(text);
        }
        let many = ".SH A\n".repeat(50_000) + &"\\fB".repeat(100_000);
        let doc = load(&many);
        assert!(doc.sections.is_empty());
    }
}
