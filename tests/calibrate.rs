//! Calibration as a user runs it: `grace calibrate` on the debian-faq set, then
//! `grace eval` with the calibration configured reports the fitted weights
//! cross-validated (never scored on the questions they were fitted on) with
//! a lower ECE than the hand-set ones, the original formula beside them, a
//! coverage/risk table and plot; and GRACE warns when the calibration is
//! applied to another knowledge base.

use crate::support::common;

use common::{grace, grace_cmd, output_text};

#[test]
fn calibrate_then_eval_reports_a_lower_cross_validated_ece_and_warns_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let set = common::eval_sets().join("debian-faq");
    let set = set.to_str().unwrap();
    let file = dir.path().join("cal/calibration.json");

    let out = grace(
        dir.path(),
        &["calibrate", set, "--out", file.to_str().unwrap(), "--json"],
    );
    assert!(out.status.success(), "{}", output_text(&out));
    let calibration: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(calibration["folds"], 5);
    assert_eq!(calibration["fold_figures"].as_array().unwrap().len(), 5);
    assert_eq!(calibration["fitted_on"]["questions"], 130);
    let on_file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(on_file, calibration, "the file holds what was printed");

    let plot = dir.path().join("curve.png");
    let out = grace_cmd(
        dir.path(),
        &["eval", set, "--json", "--plot", plot.to_str().unwrap()],
    )
    .env("GRACE_CONFIDENCE__CALIBRATION", &file)
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", output_text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let model = |name: &str| {
        report["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["model"] == name)
            .unwrap_or_else(|| panic!("no {name} in {}", report["models"]))
            .clone()
    };
    let (hand, v1, fitted) = (model("hand_set"), model("grace_v1"), model("fitted"));
    assert!(
        fitted["note"].as_str().unwrap().contains("cross-validated"),
        "{fitted}"
    );
    let ece = |m: &serde_json::Value| m["fare"]["ece"].as_f64().unwrap();
    assert!(
        ece(&fitted) < ece(&hand),
        "fitted ECE {} must be below hand-set {}",
        ece(&fitted),
        ece(&hand)
    );
    assert!(ece(&v1) > 0.0);
    // Every model says what ECE perfect calibration would show by chance
    // on this many questions, beside its own.
    for m in report["models"].as_array().unwrap() {
        let floor = &m["ece_floor"];
        let (median, p95) = (
            floor["median"].as_f64().unwrap(),
            floor["p95"].as_f64().unwrap(),
        );
        assert!(0.0 < median && median <= p95 && p95 < 0.5, "{m}");
    }
    let curve = fitted["coverage_risk"].as_array().unwrap();
    assert_eq!(curve.len(), 21);
    assert_eq!(curve[0]["coverage"], 1.0, "threshold 0 answers everything");
    let png = std::fs::read(&plot).unwrap();
    assert_eq!(&png[..4], b"\x89PNG");

    // The same calibration on the bundled sample: another knowledge base.
    let kb = common::repo().join("examples/kb");
    let out = grace(dir.path(), &["ingest", kb.to_str().unwrap(), "-q"]);
    assert!(out.status.success(), "{}", output_text(&out));
    let out = grace_cmd(
        dir.path(),
        &["ask", "How do I rotate an API key?", "--json"],
    )
    .env("GRACE_CONFIDENCE__CALIBRATION", &file)
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("calibration was fitted on") && stderr.contains("grace calibrate"),
        "{stderr}"
    );
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let bias = calibration["weights"]["bias"].as_f64().unwrap();
    assert_eq!(
        run["steps"][1]["confidence"]["bias"].as_f64().unwrap(),
        bias,
        "the fitted weights are the ones used"
    );
}

#[test]
fn a_missing_or_broken_calibration_file_is_a_config_error_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let out = grace_cmd(dir.path(), &["status"])
        .env(
            "GRACE_CONFIDENCE__CALIBRATION",
            dir.path().join("nope.json"),
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", output_text(&out));
    let text = output_text(&out);
    assert!(
        text.contains("confidence.calibration") && text.contains("nope.json"),
        "{text}"
    );
}
