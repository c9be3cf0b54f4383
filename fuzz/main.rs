//! The AFL++ harness: `grace-fuzz TARGET` reads inputs from AFL++ (in
//! persistent mode) and runs them through one target of
//! [`targets`](targets.rs). Built and run by `scripts/fuzz`, which
//! instruments only this crate and `grace`; see README.md, "Fuzzing".

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
    afl::fuzz!(|data: &[u8]| {
        targets::run(&target, data);
    });
}
