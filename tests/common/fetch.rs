//! `ladder calibrate --fetch`, as the tests of the export run it.

use std::path::Path;

/// `calibrate --fetch` over the accounts of `accounts`, with these coefficients and results.
pub fn fetch_args(accounts: &Path, coefficients: &Path, results: &Path) -> Vec<String> {
    let path = |p: &Path| p.to_str().unwrap().to_string();
    vec![
        "calibrate".into(),
        "--accounts".into(),
        path(accounts),
        "--coefficients".into(),
        path(coefficients),
        "--results".into(),
        path(results),
        "--fetch".into(),
    ]
}
