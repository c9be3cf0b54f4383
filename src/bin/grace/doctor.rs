//! `grace doctor [--repair]`: prints what [`grace::doctor::doctor`] found
//! and did. Exit status 0 when nothing is left wrong, 1 otherwise.

use grace::Config;
use grace::doctor::{Finding, doctor};

/// Runs `grace doctor`.
pub fn run(config: &Config, repair: bool, json: bool) -> grace::Result<u8> {
    let report = doctor(config, repair)?;
    if json {
        crate::output::print_json(&report);
    } else {
        for c in &report.checks {
            let verdict = match c.finding {
                Finding::Ok => "ok",
                Finding::Problem => "PROBLEM",
                Finding::Repaired => "repaired",
            };
            println!("{verdict:<9}{} {}: {}", c.what, c.place, c.detail);
        }
        println!(
            "{} points in the store, {} sources in the manifest: {}",
            report.store_points,
            report.manifest_sources,
            if report.healthy {
                "healthy"
            } else if repair {
                "problems left (see above)"
            } else {
                "problems found; `grace doctor --repair` mends what it can"
            }
        );
    }
    Ok(if report.healthy {
        0
    } else {
        grace::EXIT_FAILURE
    })
}
