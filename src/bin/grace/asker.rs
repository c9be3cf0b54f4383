//! What the asker of an escalated question decides at a terminal, before
//! anyone else is asked: see GRACE's draft (marked unconfirmed), rephrase,
//! or ask a person — the original's proceed / modify / escalate, put to
//! the person who asked. They are never asked to confirm an answer to
//! their own question. A number is read against the options shown.

use std::io::BufRead;

use grace::exec::RunReport;
use grace::lang::Texts;

/// Longest line read as one question or choice (bytes); longer input is
/// refused.
pub const MAX_LINE_BYTES: usize = 16 * 1024;

/// What the asker typed at the options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Option 1: see GRACE's draft, marked unconfirmed.
    Draft,
    /// Option 2: ask it in other words.
    Rephrase,
    /// Option 3, or Enter: put it to a person.
    Person,
    /// A number that is no option, or a bare "yes": not an answer to
    /// "what would you like to do?".
    NotAnOption(String),
    /// Anything else: a question in other words.
    Question(String),
}

impl Choice {
    /// `line` read against the options shown (1 to 3, or the option's
    /// first word in English); an empty line asks a person.
    pub fn of(line: &str) -> Choice {
        let line = line.trim();
        match line.to_lowercase().trim_end_matches(['.', ')']) {
            "" | "3" | "person" | "ask" | "ask a person" => Choice::Person,
            "1" | "draft" | "see" => Choice::Draft,
            "2" | "rephrase" => Choice::Rephrase,
            n if n.chars().all(|c| c.is_ascii_digit()) || grace::lang::is_bare_reply(n) => {
                Choice::NotAnOption(line.to_string())
            }
            _ => Choice::Question(line.to_string()),
        }
    }
}

/// The options, numbered, under their heading.
pub fn show_options(texts: &Texts) {
    println!("\n{}", texts.asker_choose);
    for (i, option) in texts.asker_options.iter().enumerate() {
        println!("  {}. {option}", i + 1);
    }
}

/// GRACE's draft of `report`, marked unconfirmed, with its sources; a run
/// without one says so.
pub fn show_draft(report: &RunReport, texts: &Texts) {
    match report.answer.as_ref().filter(|a| !a.abstained) {
        Some(draft) => {
            println!("\n{}", texts.unconfirmed_draft);
            println!("{}", draft.text);
            crate::output::print_citations(draft);
        }
        None => println!("\n{}", texts.not_in_sources),
    }
}

/// The message for a reply that is no option.
pub fn not_an_option(reply: &str, texts: &Texts) -> String {
    grace::lang::fill(texts.not_an_option, &[("reply", reply)])
}

/// What one read of the input gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// A line (its end of line kept).
    Line(String),
    /// A line longer than [`MAX_LINE_BYTES`], skipped whole (said on
    /// stderr): neither a question nor a choice.
    TooLong,
    /// The end of the input.
    End,
}

/// One line of input, at most [`MAX_LINE_BYTES`]; the rest of an
/// over-long line is skipped without being kept.
pub fn read_line(input: &mut impl BufRead) -> grace::Result<Read> {
    let cannot =
        |e: std::io::Error| grace::Error::InvalidInput(format!("cannot read the input: {e}"));
    let mut bytes = Vec::new();
    let read = std::io::Read::take(&mut *input, MAX_LINE_BYTES as u64 + 1)
        .read_until(b'\n', &mut bytes)
        .map_err(cannot)?;
    if read == 0 {
        return Ok(Read::End);
    }
    if bytes.len() > MAX_LINE_BYTES && !bytes.ends_with(b"\n") {
        input.skip_until(b'\n').map_err(cannot)?;
        eprintln!("That line is longer than {MAX_LINE_BYTES} bytes; ask a shorter question.");
        return Ok(Read::TooLong);
    }
    Ok(Read::Line(String::from_utf8_lossy(&bytes).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_is_read_against_the_options_shown() {
        assert_eq!(Choice::of("1"), Choice::Draft);
        assert_eq!(Choice::of(" 2. "), Choice::Rephrase);
        assert_eq!(Choice::of("3"), Choice::Person);
        assert_eq!(Choice::of(""), Choice::Person);
        assert_eq!(Choice::of("Draft"), Choice::Draft);
        assert_eq!(Choice::of("7"), Choice::NotAnOption("7".into()));
        assert_eq!(Choice::of("yes"), Choice::NotAnOption("yes".into()));
        // Words are a question in other words, never a confirmation.
        assert_eq!(
            Choice::of("how do I rotate keys?"),
            Choice::Question("how do I rotate keys?".into())
        );
    }

    #[test]
    fn every_language_offers_three_options() {
        for lang in grace::lang::Lang::ALL {
            let texts = lang.texts();
            assert!(texts.asker_options.iter().all(|o| !o.is_empty()));
            assert!(texts.asker_prompt.contains('3'));
        }
    }

    #[test]
    fn an_over_long_line_is_skipped_whole() {
        let long = format!("{}\nnext\n", "x".repeat(MAX_LINE_BYTES + 10));
        let mut input = std::io::Cursor::new(long.into_bytes());
        assert_eq!(read_line(&mut input).unwrap(), Read::TooLong);
        assert_eq!(read_line(&mut input).unwrap(), Read::Line("next\n".into()));
        assert_eq!(read_line(&mut input).unwrap(), Read::End);
    }
}
