//! Calibration: the estimator against hand-computed cases, the loop converging in simulation,
//! and `ladder calibrate` end to end (bad input, duplicates, dry run, apply, report and plot).

/// Version 1 of the shipped coefficients (history files never change): the tests count versions from it.
const V1_TOML: &str = include_str!("../calibration/history/coefficients-v1.toml");

mod common {
    pub mod cli;
    pub mod fetch;
}

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use common::cli::{ladder_output, texts};
use common::fetch::fetch_args;

use ladder::calibration::pipeline::Settings;
use ladder::calibration::select::{Filter, Opponents, Versions};
use ladder::calibration::simulate::{SimConfig, Truth};
use ladder::levels::Coefficients;
use ladder::lichess::GameJson;
use ladder::rating::{Observation, Prior, Q, estimate, expected};
use ladder::results::from_lichess::{AccountRef, VersionTimeline, to_record};
use ladder::results::{Keyed, Outcome, sample_record};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/calibration");

fn games(opponent: f64, wins: usize, draws: usize, losses: usize) -> Vec<Observation> {
    let mut v = vec![Observation::new(opponent, 1.0); wins];
    v.extend(vec![Observation::new(opponent, 0.5); draws]);
    v.extend(vec![Observation::new(opponent, 0.0); losses]);
    v
}

/// The elements of an SVG document with the class `class`.
fn of_class<'a>(doc: &'a roxmltree::Document, class: &str) -> Vec<roxmltree::Node<'a, 'a>> {
    doc.descendants()
        .filter(|n| n.attribute("class") == Some(class))
        .collect()
}

/// Games against opponents rated `r` with score `s`, for each `(r, s)`.
fn observations(games: &[(f64, f64)]) -> Vec<Observation> {
    games.iter().map(|&(r, s)| Observation::new(r, s)).collect()
}

#[test]
fn even_score_against_equal_opponents_is_their_rating() {
    let e = estimate(&games(1500.0, 10, 6, 10), Prior::None).unwrap();
    assert!((e.rating - 1500.0).abs() < 1e-6, "{e:?}");
    assert_eq!((e.wins, e.draws, e.losses, e.games), (10, 6, 10, 26));
    assert!((e.score - 0.5).abs() < 1e-12);
}

#[test]
fn three_quarters_against_equal_opponents_is_190_8_above() {
    let e = estimate(&games(1200.0, 30, 0, 10), Prior::None).unwrap();
    let want = 1200.0 + 400.0 * 3f64.log10();
    assert!((e.rating - want).abs() < 1e-6, "{} vs {want}", e.rating);
    assert!((e.rating - 1390.8).abs() < 0.1);
    // Draws count ½: 20 wins + 20 draws is also 75%.
    let d = estimate(&games(1200.0, 20, 20, 0), Prior::None).unwrap();
    assert!((d.rating - want).abs() < 1e-6);
}

#[test]
fn standard_error_matches_the_formula() {
    let obs = observations(&[
        (1100.0, 1.0),
        (1300.0, 0.0),
        (1250.0, 0.5),
        (1400.0, 1.0),
        (900.0, 1.0),
        (1500.0, 0.0),
        (1200.0, 0.0),
    ]);
    let e = estimate(&obs, Prior::None).unwrap();
    let info: f64 = obs
        .iter()
        .map(|o| {
            let p = expected(e.rating, o.opponent);
            p * (1.0 - p)
        })
        .sum();
    let se = 1.0 / (Q * Q * info).sqrt();
    assert!((e.se - se).abs() < 1e-9, "{} vs {se}", e.se);
    assert!((e.ci95() - ladder::rating::Z95 * se).abs() < 1e-9);
    assert!((e.ci95() / se - 1.96).abs() < 1e-3);
    // 100 games at 50% against equals: SE = 1 / (q · sqrt(25)) ≈ 34.7.
    let e = estimate(&games(1500.0, 50, 0, 50), Prior::None).unwrap();
    assert!((e.se - 1.0 / (Q * 5.0)).abs() < 1e-9 && (e.se - 34.74).abs() < 0.01);
}

#[test]
fn all_wins_are_finite_with_the_prior_and_above_the_opponents() {
    let obs = games(1000.0, 12, 0, 0);
    assert!(estimate(&obs, Prior::None).is_err());
    let e = estimate(
        &obs,
        Prior::VirtualDraws {
            count: 2,
            center: 1000.0,
        },
    )
    .unwrap();
    assert!(e.rating.is_finite() && e.rating > 1000.0, "{e:?}");
    // 12 wins + 2 virtual draws vs 1000 = 13/14: the closed form for one opponent rating.
    let want = 1000.0 + 400.0 * (13.0f64 / 1.0).log10();
    assert!((e.rating - want).abs() < 1e-6, "{} vs {want}", e.rating);
    assert!(e.se.is_finite() && e.se > 0.0);
}

#[test]
fn mixed_opponents_match_a_brute_force_root() {
    let obs = observations(&[
        (800.0, 1.0),
        (950.0, 1.0),
        (1100.0, 0.5),
        (1200.0, 0.0),
        (1350.0, 1.0),
        (1500.0, 0.0),
        (1010.0, 0.5),
        (1700.0, 0.0),
        (600.0, 1.0),
    ]);
    let e = estimate(&obs, Prior::None).unwrap();
    // Brute force: scan R in 0.01 steps for the sign change of Σ E(R, r_j) − Σ s_j.
    let total: f64 = obs.iter().map(|o| o.score).sum();
    let f = |r: f64| obs.iter().map(|o| expected(r, o.opponent)).sum::<f64>() - total;
    let mut r = 0.0;
    while f(r) < 0.0 {
        r += 0.01;
    }
    assert!(
        (e.rating - r).abs() < 0.02,
        "{} vs brute force {r}",
        e.rating
    );
}

#[test]
fn provisional_opponents_count_less() {
    // A win against a strong provisional opponent moves the estimate less than the same win
    // against an established one.
    let mut base = games(1500.0, 10, 0, 10);
    let strong_win = |weight: f64| Observation {
        opponent: 2000.0,
        weight,
        score: 1.0,
        counts_as: 1.0,
    };
    base.push(strong_win(1.0));
    let established = estimate(&base, Prior::None).unwrap();
    base.pop();
    base.push(strong_win(ladder::rating::glicko_g(300.0)));
    let provisional = estimate(&base, Prior::None).unwrap();
    assert!(provisional.rating < established.rating);
    assert!(provisional.rating > 1500.0);
}

fn sim(seed: u64) -> SimConfig {
    SimConfig {
        truth: Truth::default(),
        levels: 10,
        target_from: 600.0,
        target_step: 200.0,
        games: 200,
        cycles: 4,
        seed,
        b_factor: 1.3,
        d_factor: 0.7,
        opponent_sd: 200.0,
        draw_rate: 0.3,
        provisional_share: 0.1,
        aborted_share: 0.01,
        settings: Settings::new(Filter::new(
            "blitz",
            Opponents::Humans,
            Versions::Range(1, 1),
        )),
    }
}

#[test]
fn simulation_converges_to_the_statistical_floor_in_four_cycles() {
    for seed in [1, 2, 3] {
        let stats = sim(seed).run(|_| {}).unwrap();
        assert_eq!(stats.len(), 4);
        let first = &stats[0];
        let last = &stats[3];
        // The start really is wrong, and the floor is what 200 games give (≈ 26–30 Elo).
        assert!(first.rms_before > 200.0, "{first:?}");
        assert!(last.floor > 20.0 && last.floor < 35.0, "{last:?}");
        assert!(
            last.rms_after <= 1.5 * last.floor,
            "seed {seed}: RMS {:.1} after 4 cycles vs floor {:.1}: {stats:?}",
            last.rms_after,
            last.floor
        );
        // Aborted games are played, logged and left out.
        assert!(first.games < 2000 && first.games > 1900);
        let gains: Vec<f64> = stats.iter().map(|s| s.gain).collect();
        assert_eq!(gains, [1.0, 0.5, 1.0 / 3.0, 0.25]);
    }
}

#[test]
fn exported_games_become_records_marked_as_fetched() {
    let text = fs::read_to_string(Path::new(FIXTURES).join("export.ndjson")).unwrap();
    let games: Vec<GameJson> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut logged = sample_record("logged", Outcome::Win);
    logged.started_at_ms = 1_700_000_000_000;
    logged.header.coefficients_version = 4;
    let timeline = VersionTimeline::new(&[logged], 4);
    let account = AccountRef {
        username: "Ladder-L3".into(),
        level: 3.0,
    };
    let records: Vec<_> = games
        .iter()
        .map(|g| to_record(g, &account, &timeline).unwrap())
        .collect();
    let lost = &records[0];
    assert_eq!(lost.result, Outcome::Loss);
    assert_eq!(lost.color, "black");
    assert_eq!(lost.opponent.rating, Some(1234.0));
    assert_eq!(lost.our_rating, Some(1100.0));
    assert_eq!(lost.moves, "e2e4 e7e5 d1h5 b8c6 f1c4 g8f6 h5f7");
    assert_eq!(lost.header.engine.nodes, 0, "fetched games are marked");
    assert_eq!(
        lost.header.coefficients_version, 4,
        "after the last logged v4 game"
    );
    assert_eq!(lost.clock.unwrap().initial_ms, 180_000);
    assert_eq!(records[1].result, Outcome::None);
    assert_eq!(records[2].result, Outcome::Draw);
    assert!(records[2].opponent.provisional);
    // A game the account did not play is not its record.
    let stranger = AccountRef {
        username: "someone".into(),
        level: 1.0,
    };
    assert!(to_record(&games[0], &stranger, &timeline).is_none());
    // Merging with the log counts each game id once.
    let mut log = vec![records[0].clone()];
    let (added, dup) = ladder::calibration::fetch::merge(&mut log, records.clone());
    assert_eq!((added, dup, log.len()), (2, 1, 3));
}

// ---------------------------------------------------------------- the command line

fn ladder(args: &[&str]) -> (bool, String, String) {
    texts(&ladder_output(args, &[("RUST_LOG", "warn")]))
}

/// `ladder calibrate --coefficients <coefficients> --results <results>` with `more`.
fn calibrate(coefficients: &Path, results: &Path, more: &[&str]) -> (bool, String, String) {
    let mut args = vec![
        "calibrate",
        "--coefficients",
        coefficients.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
    ];
    args.extend_from_slice(more);
    ladder(&args)
}

/// Simulated results (10 levels × `games`) and their coefficients in `dir`.
fn simulated(dir: &Path, games: usize) -> (PathBuf, PathBuf) {
    let results = dir.join("sim.jsonl");
    let (ok, out, err) = ladder(&[
        "calibrate",
        "--simulate",
        "--games",
        &games.to_string(),
        "--seed",
        "7",
        "--write-results",
        results.to_str().unwrap(),
    ]);
    assert!(ok, "{out}{err}");
    // The simulation starts from the shipped file, whose version follows calibration; these
    // tests count versions from 1, so the start and its games are renumbered to version 1.
    let coefficients = dir.join("sim.coefficients.toml");
    let mut start = Coefficients::load(&coefficients).unwrap();
    let shipped = start.version;
    start.version = 1;
    fs::write(&coefficients, start.to_toml()).unwrap();
    let text = fs::read_to_string(&results).unwrap().replace(
        &format!("\"coefficients_version\":{shipped},"),
        "\"coefficients_version\":1,",
    );
    fs::write(&results, text).unwrap();
    (results, coefficients)
}

fn files_under(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.insert(path.clone(), fs::read(&path).unwrap());
        }
    }
    out
}

/// The report table: level → (games, performance, ±95%, status).
fn table(markdown: &str) -> BTreeMap<String, (String, String, String, String)> {
    markdown
        .lines()
        .skip_while(|l| !l.starts_with("| level |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<String> = l.split('|').map(|c| c.trim().to_string()).collect();
            (
                cells[1].clone(),
                (
                    cells[3].clone(),
                    cells[6].clone(),
                    cells[7].clone(),
                    cells[13].clone(),
                ),
            )
        })
        .collect()
}

const TARGETS: [&str; 4] = ["--target-from", "600", "--target-step", "200"];

#[test]
fn duplicates_and_bad_lines_are_reported_and_nothing_is_counted_twice() {
    let dir = tempfile::tempdir().unwrap();
    let (results, coefficients) = simulated(dir.path(), 40);
    let text = fs::read_to_string(&results).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Two hosts' files overlapping by a third of the games, plus bad lines and a torn tail.
    let a = dir.path().join("a.jsonl");
    let b = dir.path().join("b.jsonl");
    let third = lines.len() / 3;
    fs::write(&a, lines[..2 * third].join("\n") + "\n").unwrap();
    let broken = fs::read_to_string(Path::new(FIXTURES).join("broken-lines.jsonl")).unwrap();
    let torn = fs::read_to_string(Path::new(FIXTURES).join("torn-tail.txt")).unwrap();
    fs::write(&b, lines[third..].join("\n") + "\n" + &broken + &torn).unwrap();

    let c = coefficients.to_str().unwrap();
    let mut args = vec!["calibrate", "--coefficients", c];
    args.extend(TARGETS);
    let mut whole = args.clone();
    whole.extend(["--results", results.to_str().unwrap()]);
    let (ok, clean, err) = ladder(&whole);
    assert!(ok, "{err}");
    let mut split = args.clone();
    split.extend([
        "--results",
        a.to_str().unwrap(),
        "--results",
        b.to_str().unwrap(),
    ]);
    let (ok, merged, err) = ladder(&split);
    assert!(ok, "{err}");

    let overlap = 2 * third - third;
    assert!(
        merged.contains(&format!("duplicate game ids ignored: {overlap};")),
        "{merged}"
    );
    assert!(merged.contains("unreadable lines: 4."), "{merged}");
    assert!(merged.contains("schema version 99 is newer"), "{merged}");
    assert!(merged.contains("torn last line"), "{merged}");
    // The same games give the same estimates, however they are split across files.
    assert_eq!(table(&clean), table(&merged));
    assert_eq!(table(&clean).len(), 10);
    let used = |report: &str| {
        report
            .lines()
            .find(|l| l.starts_with("Games used:"))
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(used(&clean), used(&merged));

    // A missing file is a clear error.
    let mut missing = args.clone();
    missing.extend(["--results", "/nonexistent/results.jsonl"]);
    let (ok, _, err) = ladder(&missing);
    assert!(!ok);
    assert!(err.contains("/nonexistent/results.jsonl"), "{err}");
}

#[test]
fn dry_run_writes_nothing_and_apply_keeps_history() {
    let dir = tempfile::tempdir().unwrap();
    let (results, coefficients) = simulated(dir.path(), 40);
    let before = files_under(dir.path());
    let c = coefficients.to_str().unwrap();
    let r = results.to_str().unwrap();
    let mut args = vec!["calibrate", "--coefficients", c, "--results", r];
    args.extend(TARGETS);

    let mut dry = args.clone();
    dry.push("--dry-run");
    let (ok, out, err) = ladder(&dry);
    assert!(ok, "{err}");
    assert!(out.contains("Dry run: nothing written"), "{out}");
    assert!(
        out.contains("version = 2"),
        "the proposal is printed: {out}"
    );
    assert_eq!(files_under(dir.path()), before, "a dry run writes nothing");

    let report_dir = dir.path().join("report");
    let history = dir.path().join("history");
    let mut apply = args.clone();
    apply.extend(["--apply", "--report-dir", report_dir.to_str().unwrap()]);
    let (ok, out, err) = ladder(&apply);
    assert!(ok, "{out}{err}");
    let old = Coefficients::parse(
        std::str::from_utf8(&before[&coefficients]).unwrap(),
        "before",
    )
    .unwrap();
    let new = Coefficients::load(&coefficients).unwrap();
    assert_eq!(new.version, old.version + 1);
    assert_eq!(new.calibration_cycle, 1);
    assert!(
        new.ratings_source.contains("calibrated"),
        "{}",
        new.ratings_source
    );
    let kept = history.join(format!("coefficients-v{}.toml", old.version));
    assert_eq!(fs::read(&kept).unwrap(), before[&coefficients]);

    // The report's table and the plot agree, and the measured ratings went into the file.
    let markdown = fs::read_to_string(report_dir.join("calibration.md")).unwrap();
    let rows = table(&markdown);
    let svg = fs::read_to_string(report_dir.join("calibration.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("the plot is well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
    assert!(texts.contains(&"level"));
    assert!(texts.iter().any(|t| t.contains("rating (Elo)")));
    let points = of_class(&doc, "level");
    assert_eq!(points.len(), rows.len());
    for p in points {
        let level = p.attribute("data-level").unwrap();
        let (_, perf, ci, status) = &rows[level];
        assert_eq!(
            p.attribute("data-rating"),
            Some(perf.as_str()),
            "level {level}"
        );
        assert_eq!(p.attribute("data-ci95"), Some(ci.as_str()), "level {level}");
        assert_eq!(new.ratings[level], perf.parse::<f64>().unwrap());
        assert!(
            ["moved", "converged"].contains(&status.as_str()),
            "{status}"
        );
    }
    for class in ["target", "fit"] {
        assert!(
            doc.descendants()
                .any(|n| n.attribute("class") == Some(class) && n.has_tag_name("polyline")),
            "{class} line"
        );
    }

    // Applying again uses the new version's games (none yet, and every level moved, so no
    // older game counts): every level is left alone, and a run that changes nothing writes no
    // version; the history keeps version 1 only.
    let (ok, out, err) = ladder(&apply);
    assert!(ok, "{out}{err}");
    assert!(out.contains("too few games"), "{out}");
    assert!(out.contains("No change"), "{out}");
    assert_eq!(Coefficients::load(&coefficients).unwrap(), new);
    assert!(!history.join("coefficients-v2.toml").exists());
}

/// `--apply` twice on the same games writes one version: the second run finds nothing to
/// change. Games of the replaced version still count for the levels it left alone.
#[test]
fn apply_twice_without_new_games_writes_one_version() {
    let dir = tempfile::tempdir().unwrap();
    let (results, coefficients) = simulated(dir.path(), 60);
    let report_dir = dir.path().join("report");
    let mut apply = vec!["--apply", "--report-dir", report_dir.to_str().unwrap()];
    apply.extend(TARGETS);
    let (ok, first, err) = calibrate(&coefficients, &results, &apply);
    assert!(ok, "{first}{err}");
    let v2 = Coefficients::load(&coefficients).unwrap();
    assert_eq!(v2.version, 2);
    let v2_text = fs::read(&coefficients).unwrap();
    let untouched: Vec<(String, String)> = table(&first)
        .into_iter()
        .filter(|(_, row)| row.3 != "moved")
        .map(|(level, row)| (level, row.0))
        .collect();
    assert!(
        !untouched.is_empty(),
        "seed 7 leaves a level alone: {first}"
    );

    for _ in 0..2 {
        let (ok, again, err) = calibrate(&coefficients, &results, &apply);
        assert!(ok, "{again}{err}");
        assert!(again.contains("No change"), "{again}");
        assert!(again.contains("coefficients v2, no change"), "{again}");
        assert_eq!(fs::read(&coefficients).unwrap(), v2_text, "no version 3");
        let history: Vec<_> = fs::read_dir(dir.path().join("history"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(history, ["coefficients-v1.toml"]);
        // Version 1's games still count for every level version 2 did not move.
        let rows = table(&again);
        for (level, games) in &untouched {
            assert_eq!(&rows[level].0, games, "level {level}: {again}");
        }
    }
}

/// An opponent rated 1e308 (a corrupted line) is skipped with its line named, never estimated
/// from, and the coefficients written hold only sane ratings.
#[test]
fn an_absurd_opponent_rating_never_reaches_the_estimate() {
    let dir = tempfile::tempdir().unwrap();
    let (results, coefficients) = simulated(dir.path(), 40);
    let text = fs::read_to_string(&results).unwrap();
    let first = text.lines().next().unwrap();
    let mut record: serde_json::Value = serde_json::from_str(first).unwrap();
    record["game_id"] = "poisoned".into();
    record["opponent"]["rating"] = serde_json::json!(1e308);
    let poisoned = format!("{text}{}\n", serde_json::to_string(&record).unwrap());
    let lines = poisoned.lines().count();
    fs::write(&results, poisoned).unwrap();
    let report_dir = dir.path().join("report");
    let mut args = vec!["--apply", "--report-dir", report_dir.to_str().unwrap()];
    args.extend(TARGETS);
    let (ok, out, err) = calibrate(&coefficients, &results, &args);
    assert!(ok, "{out}{err}");
    let named = format!("{}:{lines}: opponent.rating = 1e308", results.display());
    assert!(out.contains(&named), "{out}");
    assert!(err.contains(&named), "{err}");
    let written = Coefficients::load(&coefficients).unwrap();
    assert_eq!(written.version, 2);
    for (level, rating) in &written.ratings {
        assert!(
            rating.is_finite() && (-1000.0..=5000.0).contains(rating),
            "level {level}: {rating}"
        );
    }
}

/// `--fetch` and `--lichess-ratings` against a local stand-in for Lichess: the exported games
/// are merged with the log without counting the logged one twice, the aborted one is left out,
/// the export resumes after the newest logged game, and the account's rating is shown. The
/// export names the account in its User-Agent, as the daemon does.
#[test]
fn fetch_merges_exported_games_once_and_shows_the_lichess_rating() {
    use std::sync::{Arc, Mutex};

    use axum::extract::{Path as UrlPath, RawQuery};
    use axum::routing::get;

    let export = fs::read_to_string(Path::new(FIXTURES).join("export.ndjson")).unwrap();
    let queries: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = queries.clone();
    let app = axum::Router::new()
        .route(
            "/api/games/user/{name}",
            get(
                move |UrlPath(name): UrlPath<String>,
                      RawQuery(q): RawQuery,
                      headers: axum::http::HeaderMap| {
                    let agent = headers
                        .get("user-agent")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string();
                    seen.lock()
                        .unwrap()
                        .push(format!("{name}?{} agent={agent}", q.unwrap_or_default()));
                    let body = if name == "Ladder-L3" {
                        export.clone()
                    } else {
                        String::new()
                    };
                    async move { ([("content-type", "application/x-ndjson")], body) }
                },
            ),
        )
        .route(
            "/api/user/{name}",
            get(|UrlPath(name): UrlPath<String>| async move {
                axum::Json(serde_json::json!({
                    "id": name.to_lowercase(), "username": name,
                    "perfs": {"blitz": {"games": 37, "rating": 1105, "rd": 80, "prog": 12}}
                }))
            }),
        );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    runtime.spawn(async move { axum::serve(listener, app).await });

    let dir = tempfile::tempdir().unwrap();
    let accounts = dir.path().join("accounts.toml");
    fs::write(
        &accounts,
        format!(
            "[lichess]\nbase_url = \"http://127.0.0.1:{port}\"\n\n[[accounts]]\n\
             username = \"Ladder-L3\"\ntoken_env = \"CALIBRATION_TEST_TOKEN\"\nlevel = 3\n"
        ),
    )
    .unwrap();
    let coefficients = dir.path().join("coefficients.toml");
    fs::write(&coefficients, V1_TOML).unwrap();
    // 35 logged games, then the export's first game, also logged by the daemon.
    let results = dir.path().join("results.jsonl");
    let mut log = ladder::results::ResultsLog::open(&results).unwrap();
    for i in 0..35 {
        let mut r = sample_record(&format!("logged{i}"), Outcome::Draw);
        r.started_at_ms = 1_699_999_000_000 + i;
        log.append(&r).unwrap();
    }
    let mut same = sample_record("q7ZvsdUF", Outcome::Loss);
    same.started_at_ms = 1_700_000_500_000;
    log.append(&same).unwrap();
    drop(log);

    let mut args = fetch_args(&accounts, &coefficients, &results);
    args.push("--lichess-ratings".into());
    let (ok, stdout, stderr) = texts(&ladder_output(
        args,
        &[("CALIBRATION_TEST_TOKEN", "lip_secretTokenValue123")],
    ));
    assert!(ok, "{stdout}{stderr}");
    assert!(!stdout.contains("secretToken") && !stderr.contains("secretToken"));
    assert!(
        stdout.contains("3 games downloaded from 1 accounts, 2 new after deduplication"),
        "{stdout}"
    );
    assert!(
        stdout.contains("duplicate game ids ignored: 1;"),
        "{stdout}"
    );
    let rows = table(&stdout);
    // 35 + the logged export game + the fetched draw; the fetched aborted game is left out.
    assert_eq!(rows["3"].0, "37", "{stdout}");
    assert!(stdout.contains("| aborted / no result | 1 |"), "{stdout}");
    assert!(stdout.contains("1105 (RD 80)"), "{stdout}");
    let queries = queries.lock().unwrap();
    assert_eq!(queries.len(), 1, "{queries:?}");
    assert!(queries[0].contains("since=1700000500001"), "{queries:?}");
    assert!(queries[0].contains("perfType=blitz"), "{queries:?}");
    assert!(
        queries[0].ends_with(" user:Ladder-L3"),
        "the export does not name the account: {queries:?}"
    );
}

/// Games against people and against bots are estimated apart: by default the levels' table
/// holds the people's games only and the bots' games have their own table; `--opponents all`
/// mixes them, `--opponents bots` swaps the two.
#[test]
fn people_and_bots_are_estimated_apart_in_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let coefficients = dir.path().join("coefficients.toml");
    fs::write(&coefficients, V1_TOML).unwrap();
    let results = dir.path().join("results.jsonl");
    let mut log = ladder::results::ResultsLog::open(&results).unwrap();
    // Level 3 scores 50% against people rated 1000 and 25% against bots rated 1000.
    let game = |id: String, won: bool, bot: bool| {
        let mut r = sample_record(&id, if won { Outcome::Win } else { Outcome::Loss });
        r.opponent.rating = Some(1000.0);
        r.opponent.bot = bot;
        r
    };
    for i in 0..40 {
        log.append(&game(format!("h{i}"), i % 2 == 0, false))
            .unwrap();
        log.append(&game(format!("b{i}"), i % 4 == 0, true))
            .unwrap();
    }
    drop(log);
    let run = |opponents: &str| {
        let (ok, out, err) = calibrate(
            &coefficients,
            &results,
            &["--targets", "3=1000", "--opponents", opponents],
        );
        assert!(ok, "{out}{err}");
        out
    };
    let apart_row = |report: &str, title: &str| -> Vec<String> {
        let line = report
            .lines()
            .skip_while(|l| !l.starts_with(title))
            .find(|l| l.starts_with("| 3 |"))
            .unwrap_or_else(|| panic!("no row under {title}: {report}"))
            .to_string();
        line.split('|').map(|c| c.trim().to_string()).collect()
    };

    let humans = run("humans");
    let rows = table(&humans);
    assert_eq!(rows["3"].0, "40", "{humans}");
    assert_eq!(rows["3"].1, "1000", "50% against 1000: {humans}");
    let bots = apart_row(&humans, "## Against bots (estimated apart)");
    assert_eq!(bots[2], "40");
    assert_eq!(bots[3], "10/0/30");
    // 25% against 1000 with two virtual draws against the target: below 1000 by ~170.
    let vs_bots: f64 = bots[5].parse().unwrap();
    assert!((780.0..860.0).contains(&vs_bots), "{humans}");
    assert_eq!(bots[9], format!("{:+.0}", vs_bots - 1000.0));

    let swapped = run("bots");
    assert_eq!(table(&swapped)["3"].1, format!("{vs_bots:.0}"));
    let people = apart_row(&swapped, "## Against people (estimated apart)");
    assert_eq!(people[5], "1000");

    let all = run("all");
    assert_eq!(table(&all)["3"].0, "80");
    assert!(!all.contains("estimated apart"), "{all}");
}

/// Human-likeness through the command line: a results file with people's games (played here by
/// two level players, the "person" rated into a band), the report's table and likeness.svg
/// give the top-1 match counted by hand with the band's level player, and the band with no
/// person is absent.
#[test]
fn likeness_table_and_plot_match_a_hand_count() {
    use ladder::engine::{Game, NoStop};
    use ladder::levels::LevelParams;
    use ladder::player::LevelPlayer;
    use shakmaty::Color;

    let builtin = Coefficients::builtin();
    // A game of 30 plies: `person` plays one side, level 6 the other.
    let play = |person: f64, person_white: bool, seed: u64| -> Game {
        let mut people = LevelPlayer::new(LevelParams::new(&builtin, person), seed);
        let mut bot = LevelPlayer::new(LevelParams::new(&builtin, 6.0), seed);
        let mut game = Game::startpos();
        while game.moves().len() < 30 && game.outcome().is_none() {
            let people_move = (game.turn() == Color::White) == person_white;
            let player = if people_move { &mut people } else { &mut bot };
            let m = player.choose(&game, &mut NoStop).best_move.unwrap();
            game.play(m);
        }
        game
    };
    // By hand: the band's level (current coefficients, seed 1) asked at every move of the
    // person after ply 8 where more than one move is legal.
    let by_hand = |game: &Game, person_white: bool, level: f64| -> (usize, usize) {
        let human = if person_white {
            Color::White
        } else {
            Color::Black
        };
        let mut player = LevelPlayer::new(LevelParams::new(&builtin, level), 1);
        let mut replay = Game::startpos();
        let (mut n, mut same) = (0, 0);
        for (ply, &m) in game.moves().iter().enumerate() {
            if ply >= 8 && replay.turn() == human && replay.legal_moves().len() > 1 {
                n += 1;
                same += usize::from(player.choose(&replay, &mut NoStop).best_move == Some(m));
            }
            replay.play(m);
        }
        (n, same)
    };
    let dir = tempfile::tempdir().unwrap();
    let coefficients = dir.path().join("coefficients.toml");
    fs::write(&coefficients, Coefficients::DEFAULT_TOML).unwrap();
    let results = dir.path().join("results.jsonl");
    let mut log = ladder::results::ResultsLog::open(&results).unwrap();
    let mut expected_bands: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    // Two people near 800 (level 2's band), one near 1200 (level 4's); none near 1000.
    for (i, (person, rating, white, band, level)) in [
        (1.0, 790.0, true, "700–900", 2.0),
        (3.0, 850.0, false, "700–900", 2.0),
        (5.0, 1230.0, true, "1100–1300", 4.0),
    ]
    .into_iter()
    .enumerate()
    {
        let game = play(person, white, 10 + i as u64);
        let mut replay = Game::startpos();
        let moves: Vec<String> = game
            .moves()
            .iter()
            .map(|&m| {
                let uci = replay.to_uci(m);
                replay.play(m);
                uci
            })
            .collect();
        let mut r = sample_record(&format!("p{i}"), Outcome::Draw);
        r.header.level = 6.0;
        r.header.account = "ladder-l6".into();
        r.color = Keyed::parse(if white { "black" } else { "white" });
        r.opponent.rating = Some(rating);
        r.moves = moves.join(" ");
        log.append(&r).unwrap();
        let (n, same) = by_hand(&game, white, level);
        let e = expected_bands.entry(band.to_string()).or_default();
        e.0 += n;
        e.1 += same;
    }
    drop(log);
    let report_dir = dir.path().join("report");
    let (ok, out, err) = calibrate(
        &coefficients,
        &results,
        &[
            "--targets",
            "1=600,2=800,3=1000,4=1200,5=1400,6=1600",
            "--no-likeness-judge",
            "--report-dir",
            report_dir.to_str().unwrap(),
        ],
    );
    assert!(ok, "{out}{err}");
    let rows: BTreeMap<String, Vec<String>> = out
        .lines()
        .skip_while(|l| !l.starts_with("## Human-likeness"))
        .skip_while(|l| !l.starts_with("| band |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<String> = l.split('|').map(|c| c.trim().to_string()).collect();
            (cells[1].clone(), cells)
        })
        .collect();
    assert_eq!(
        rows.keys().collect::<Vec<_>>(),
        expected_bands.keys().collect::<Vec<_>>(),
        "the 900–1100 band has no person: absent. {out}"
    );
    for (band, (n, same)) in &expected_bands {
        let cells = &rows[band];
        assert_eq!(cells[4], n.to_string(), "{band}: {out}");
        assert_eq!(
            cells[5],
            format!("{:.1}%", 100.0 * *same as f64 / *n as f64),
            "{band}: {out}"
        );
        assert_eq!(cells[7], "-", "not judged");
    }
    assert_eq!(rows["700–900"][2], "2 (800)");
    assert_eq!(rows["700–900"][3], "2");
    assert!(out.contains("not measured (turned off)"), "{out}");

    let svg = fs::read_to_string(report_dir.join("likeness.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
    let points = of_class(&doc, "band");
    assert_eq!(points.len(), expected_bands.len());
    for p in points {
        let band = format!(
            "{}–{}",
            p.attribute("data-low").unwrap(),
            p.attribute("data-low").unwrap().parse::<f64>().unwrap() + 200.0
        );
        assert_eq!(
            Some(rows[&band][5].trim_end_matches('%')),
            p.attribute("data-top1"),
            "{band}"
        );
    }
}

/// Issue 22: `ladder calibrate` works from any directory. Without --coefficients it reads and
/// (with --apply) writes the file the accounts file's `daemon.coefficients` names, relative to
/// the accounts file as `ladder run` reads it, with that file's [targets]; --apply with neither
/// says what to give.
#[test]
fn calibrate_finds_the_coefficients_through_the_accounts_file_from_any_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (results, coefficients) = simulated(dir.path(), 40);
    let etc = dir.path().join("etc");
    let elsewhere = dir.path().join("elsewhere");
    fs::create_dir_all(&etc).unwrap();
    fs::create_dir_all(&elsewhere).unwrap();
    let installed = etc.join("coefficients.toml");
    fs::copy(&coefficients, &installed).unwrap();
    let before = Coefficients::load(&installed).unwrap();
    // The simulation's coefficients carry its own targets, not the shipped ones.
    assert_ne!(before.targets(), Coefficients::builtin().targets());
    let accounts = etc.join("accounts.toml");
    fs::write(
        &accounts,
        "[daemon]\ncoefficients = \"coefficients.toml\"\n\n[[accounts]]\nusername = \"ladder-l1\"\n\
         token_env = \"LADDER_TEST_UNUSED\"\nlevel = 1\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        texts(
            &std::process::Command::new(common::cli::LADDER)
                .current_dir(&elsewhere)
                .env("RUST_LOG", "warn")
                .args(args)
                .output()
                .unwrap(),
        )
    };
    let (ok, out, err) = run(&[
        "calibrate",
        "--accounts",
        accounts.to_str().unwrap(),
        "--results",
        results.to_str().unwrap(),
        "--likeness-games",
        "0",
        "--apply",
    ]);
    assert!(ok, "{out}{err}");
    let after = Coefficients::load(&installed).unwrap();
    assert_eq!(after.version, before.version + 1, "{out}");
    assert_eq!(after.targets, before.targets);
    assert!(out.contains(&installed.display().to_string()), "{out}");
    // The report's targets are the file's: level 3's is from + 2·step of its [targets].
    let t = before.targets();
    let level_3: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("| level |"))
        .find(|l| l.starts_with("| 3 |"))
        .unwrap_or_else(|| panic!("no level 3 row: {out}"))
        .split('|')
        .map(str::trim)
        .collect();
    assert_eq!(level_3[8], format!("{:.0}", t.target(3.0)), "{out}");
    assert!(
        out.contains(&format!("Targets: {} (the ladder's", t.describe())),
        "{out}"
    );
    assert!(!elsewhere.join("calibration").exists());
    // --apply without a file to write says what to give.
    let (ok, _, err) = run(&[
        "calibrate",
        "--results",
        results.to_str().unwrap(),
        "--apply",
    ]);
    assert!(!ok);
    assert!(
        err.contains("--apply writes the coefficients: give --coefficients FILE, or --accounts"),
        "{err}"
    );
}
