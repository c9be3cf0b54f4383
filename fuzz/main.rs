//! The AFL++ harness: `grace-fuzz TARGET` reads inputs from AFL++ (in
//! persistent mode) and runs them through one target of
//! [`targets`](targets.rs). Built and run by `scripts/fuzz`, which
//! instruments only this crate and `grace`; see the book, "Fuzzing".

#[path = "targets.rs"]
mod targets;

fn main() {
    let target = std::env::args().nth(1).unwrap_or_default();
    if !targets::TARGETS.contains(&target.as_str()) {
        eprintln!(
            "usage: grace-fuzz TARGET (one of {})",
            targets::TARGETS.join(", ")
        );
        std::process::exit(2);
    }
    // `fuzz_nohook`: a panic that GRACE itself catches (the PDF parser's,
    // in `ingest::load::pdf`) is a skipped file, as in the product, not a
    // crash; any other panic still aborts and is reported.
    afl::fuzz_nohook!(|data: &[u8]| {
        targets::run(&target, data);
    });
}
