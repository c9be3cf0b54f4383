//! Security review, fuzzing: replays the fuzzing seeds (`fuzz/seeds/`) and the
//! inputs the AFL++ campaigns found interesting or crashing
//! (`fuzz/corpus/`, written by `scripts/fuzz`) through the same targets
//! the campaigns ran (`fuzz/targets.rs`): config YAML with environment
//! overrides, the four loaders, the chunker, the lexical encoder, the plan
//! and answer parsers, and the HTTP request bodies. None may panic. The
//! long campaigns are not run here; see the book, "Fuzzing".

#[path = "../fuzz/targets.rs"]
mod targets;

use std::path::Path;

#[test]
fn every_committed_fuzz_input_runs_through_its_target_without_a_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut ran = 0;
    let mut failures = Vec::new();
    for target in targets::TARGETS {
        let mut per_target = 0;
        for folder in ["seeds", "corpus"] {
            let dir = root.join(folder).join(target);
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut files: Vec<_> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
            files.sort();
            for file in files {
                let data = std::fs::read(&file).unwrap();
                let outcome = std::panic::catch_unwind(|| targets::run(target, &data));
                match outcome {
                    Ok(true) => per_target += 1,
                    Ok(false) => panic!("unknown target {target}"),
                    Err(_) => failures.push(file.display().to_string()),
                }
            }
        }
        assert!(per_target > 0, "no inputs for target {target}");
        ran += per_target;
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} inputs panicked:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
