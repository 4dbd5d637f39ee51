//! The anchors file and the anchor tournament: the shipped file loads and every anchor in it can
//! be built; a malformed file names the line and the key; a match of anchors by name writes
//! games between anchors that calibration skips and `--fit-anchors` rates, and resumes where it
//! stopped; the judge rates a known game's moves when Stockfish is installed, in a match and in
//! a report rebuilt from its results.

use clap::Parser;
use ladder::anchors::AnchorsFile;
use ladder::arena::anchor_fit::read_anchor_games;
use ladder::arena::judge::Judge;
use ladder::arena::options::ArenaOptions;
use ladder::arena::rebuild::{RebuiltJudging, report_from_results};
use ladder::arena::roster::PlayerSpec;
use ladder::arena::run_match;
use ladder::engine::Game;
use ladder::levels::Coefficients;
use ladder::player::seat::{MoverStyle, PlayerKind};
use ladder::results::read_results;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: ArenaOptions,
}

fn args(list: &[&str]) -> ArenaOptions {
    let argv = std::iter::once("arena").chain(list.iter().copied());
    Cli::try_parse_from(argv)
        .expect("valid arena arguments")
        .args
}

#[test]
fn the_shipped_anchors_file_loads_and_every_anchor_is_buildable() {
    let file = AnchorsFile::builtin();
    assert_eq!(file.scale, "lichess-blitz");
    let names: Vec<&str> = file.anchors.iter().map(|a| a.name.as_str()).collect();
    for expected in ["random", "greedy", "sf1500"]
        .into_iter()
        .chain((1..=8).map(|l| Box::leak(format!("lichess-ai-{l}").into_boxed_str()) as &str))
    {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    assert!(!file.pins.is_empty(), "the scale must be pinned somewhere");
    for pin in &file.pins {
        assert!(file.get(&pin.anchor).is_some());
        assert!(pin.sd > 0.0 && !pin.source.is_empty());
    }
    for a in &file.anchors {
        let player = PlayerSpec::from(a);
        assert_eq!(player.name, a.name);
        assert_eq!(player.rating, a.fitted.rating);
        if let PlayerKind::Uci { limits, .. } = &a.kind {
            assert!(!limits.is_empty(), "{} has no per-move limit", a.name);
        }
        if let (Some(rating), Some(se)) = (a.fitted.rating, a.fitted.se) {
            assert!(rating.is_finite() && se >= 0.0);
        }
    }
    // What the file says, it writes back unchanged.
    let again = AnchorsFile::parse(&file.to_toml(), "rewritten").unwrap();
    assert_eq!(again, file);
    // The selection by name: `all`, lists, unknown names.
    assert_eq!(
        file.select(&["all".to_string()]).unwrap().len(),
        file.anchors.len()
    );
    let two = file.select(&["greedy,random".to_string()]).unwrap();
    assert_eq!(two.len(), 2);
    assert_eq!(two[0].kind, PlayerKind::Mover(MoverStyle::Random));
    assert!(
        file.select(&["sf9999".to_string()])
            .unwrap_err()
            .contains("sf9999")
    );
}

const SMALL: &str = r#"scale = "lichess-blitz"

[[pin]]
anchor = "greedy"
rating = 500
sd = 200
source = "a test"

[[anchor]]
name = "random"
kind = "random"

[[anchor]]
name = "greedy"
kind = "greedy"
"#;

fn error_of(text: &str) -> String {
    AnchorsFile::parse(text, "anchors.toml")
        .expect_err("a malformed file")
        .to_string()
}

#[test]
fn a_malformed_anchors_file_names_the_line_and_the_key() {
    assert!(AnchorsFile::parse(SMALL, "anchors.toml").is_ok());
    // A bad value: line 16 of the file, key anchor[1].se.
    let bad = SMALL.replace(
        "name = \"greedy\"\nkind = \"greedy\"\n",
        "name = \"greedy\"\nkind = \"greedy\"\nrating = 400\nse = -3\n",
    );
    assert_eq!(
        error_of(&bad),
        "anchors.toml:17: anchor[1].se: must be zero or positive"
    );
    // A misspelt key: toml's own error, with the line and the key.
    let typo = SMALL.replace("kind = \"random\"", "kind = \"random\"\nratng = 3");
    let e = error_of(&typo);
    assert!(e.starts_with("anchors.toml:12: "), "{e}");
    assert!(e.contains("ratng"), "{e}");
    // A pin on an anchor the file does not have.
    let e = error_of(&SMALL.replace("anchor = \"greedy\"", "anchor = \"sf1\""));
    assert_eq!(
        e,
        "anchors.toml:4: pin[0].anchor: no anchor named \"sf1\" in this file"
    );
    // An engine without a per-move limit would take its strength from the match.
    let e = error_of(&format!(
        "{SMALL}\n[[anchor]]\nname = \"sf\"\nkind = \"uci\"\ncommand = \"/usr/games/stockfish\"\n"
    ));
    assert!(e.starts_with("anchors.toml:19: anchor[2].nodes: "), "{e}");
    // Syntax errors too.
    let e = error_of(&SMALL.replace("sd = 200", "sd = = 200"));
    assert!(e.starts_with("anchors.toml:6: "), "{e}");
}

#[test]
fn an_anchor_match_records_its_games_resumes_and_feeds_the_fit() {
    let dir = tempfile::tempdir().unwrap();
    let anchors = dir.path().join("anchors.toml");
    std::fs::write(&anchors, SMALL).unwrap();
    let results = dir.path().join("games.jsonl");
    let list = [
        "--anchors-file",
        anchors.to_str().unwrap(),
        "--anchor",
        "all",
        "--level",
        "1",
        "--neighbours",
        "2",
        "--games-per-pairing",
        "4",
        "--seed",
        "5",
        "--concurrency",
        "2",
        "--judge-depth",
        "0",
        "--results",
        results.to_str().unwrap(),
    ];
    let first = run_match(&args(&list)).unwrap();
    // Three players, each meets the two others: 3 pairings of 4 games.
    assert_eq!(first.games.len(), 12);
    assert!(first.report.contains("not judged (--judge-depth 0)"));
    // Anchor games are their own records, which calibration's reader skips.
    let (games, warnings) = read_anchor_games(std::slice::from_ref(&results)).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(games.len(), 4);
    for g in &games {
        let mut names = [g.white.as_str(), g.black.as_str()];
        names.sort();
        assert_eq!(names, ["greedy", "random"]);
        let moves: Vec<&str> = g.moves.split_whitespace().collect();
        let fen = (g.initial_fen != "startpos").then_some(g.initial_fen.as_str());
        let replay = Game::from_uci_moves(fen, &moves, false).unwrap();
        assert!(replay.outcome().is_some(), "{} did not end", g.game_id);
        assert!(g.white_score().is_some());
    }
    let read = read_results(std::slice::from_ref(&results)).unwrap();
    assert!(read.warnings.is_empty(), "{:?}", read.warnings);
    assert_eq!(read.other_records, 4);
    assert_eq!(
        read.records.len(),
        8,
        "level 1's games against both anchors"
    );
    // The same command again finds every game done and plays none.
    let again = run_match(&args(&list)).unwrap();
    assert_eq!(again.games.len(), 0);
    let lines = std::fs::read_to_string(&results).unwrap().lines().count();
    assert_eq!(lines, 12);

    // The fit: greedy pinned at 500, random below it; the file is rewritten with the ratings.
    let fit = ladder::arena::cli::ArenaArgs {
        options: Box::new(args(&[
            "--fit-anchors",
            "--update-anchors",
            "--anchors-file",
            anchors.to_str().unwrap(),
            "--from-results",
            results.to_str().unwrap(),
        ])),
    };
    ladder::arena::cli::run(fit).unwrap();
    let fitted = AnchorsFile::load(&anchors).unwrap();
    let greedy = fitted.get("greedy").unwrap();
    let random = fitted.get("random").unwrap();
    assert!(
        (greedy.fitted.rating.unwrap() - 500.0).abs() < 1e-6,
        "{greedy:?}"
    );
    assert!(random.fitted.rating.unwrap() < 500.0, "{random:?}");
    assert_eq!(random.fitted.games, Some(4));
    assert!(random.fitted.se.unwrap() > 0.0);
    assert_eq!(fitted.fit.as_ref().unwrap().games, 4);
    assert_eq!(fitted.scale_sd, Some(200.0));
}

#[test]
fn an_arena_report_judges_the_moves_of_every_player_when_stockfish_is_installed() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("r.jsonl");
    let summary = run_match(&args(&[
        "--level",
        "3",
        "--anchor",
        "greedy",
        "--games-per-pairing",
        "2",
        "--seed",
        "11",
        "--judge-depth",
        "6",
        "--results",
        results.to_str().unwrap(),
    ]))
    .unwrap();
    if Judge::installed_stockfish().is_none() {
        assert!(summary.report.contains("not judged"), "{}", summary.report);
        return;
    }
    assert!(
        summary
            .report
            .contains("## Move quality (2 games judged by Stockfish")
    );
    let names: Vec<&str> = summary.players.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["level-3", "greedy"]);
    let (level, greedy) = (&summary.quality[0], &summary.quality[1]);
    assert!(level.moves > 0 && greedy.moves > 0);
    // A searching engine loses fewer centipawns and blunders less than a material grabber.
    assert!(level.acpl() < greedy.acpl(), "{level:?} vs {greedy:?}");
    assert!(
        level.rate(level.blunders) < greedy.rate(greedy.blunders),
        "{level:?} vs {greedy:?}"
    );
    assert!(
        level.rate(level.big_losses) < greedy.rate(greedy.big_losses),
        "{level:?} vs {greedy:?}"
    );
    // Each row ends with the player's big losses per 100 moves and people's at its rating
    // (the level's from the coefficients, greedy's fitted one): both numbers.
    let section = summary.report.split("## Move quality").nth(1).unwrap();
    for name in names {
        let row = section
            .lines()
            .find(|l| l.starts_with(&format!("| {name} | ")))
            .unwrap_or_else(|| panic!("no row for {name}: {}", summary.report));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let people: f64 = cells[cells.len() - 2]
            .parse()
            .unwrap_or_else(|_| panic!("{row}"));
        assert!((5.0..=12.0).contains(&people), "{row}");
        let ours: f64 = cells[cells.len() - 3]
            .parse()
            .unwrap_or_else(|_| panic!("{row}"));
        assert!((0.0..=100.0).contains(&ours), "{row}");
    }

    // The human-likeness table: a row per player, with people's figure beside the level's,
    // the judge's depth stated, and the rules.
    let likeness = summary
        .report
        .split("## Human-likeness of the errors")
        .nth(1)
        .unwrap_or_else(|| panic!("no likeness table: {}", summary.report));
    assert!(likeness.contains("Stockfish"), "{likeness}");
    assert!(likeness.contains("at depth 6"), "{likeness}");
    assert!(likeness.contains("Rules: evaluations capped"), "{likeness}");
    let row = likeness
        .lines()
        .find(|l| l.starts_with("| level-3 | "))
        .unwrap_or_else(|| panic!("{likeness}"));
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    // The level's rating as shipped (level 3 aims at 870: under 1000, whatever the version).
    assert!(cells[2].parse::<f64>().unwrap() < 1000.0, "{row}");
    // moves, big losses per 100, people's per 100 under 1000 (11.9).
    assert!(cells[3].parse::<u64>().unwrap() > 0, "{row}");
    assert!(
        (0.0..=100.0).contains(&cells[4].parse::<f64>().unwrap()),
        "{row}"
    );
    assert_eq!(cells[5], "11.9", "{row}");

    // Judged again from the results file, the same games give the same rows (each game's
    // opening is in its record, so the same moves are judged); asked for one game a level,
    // only the last game is judged.
    let rows = |report: &str| -> Vec<String> {
        let section = report.split("## Move quality").nth(1).unwrap_or("");
        let section = section.split("## Human-likeness").next().unwrap_or("");
        section
            .lines()
            .filter(|l| l.starts_with("| level-3 |") || l.starts_with("| greedy |"))
            .map(str::to_string)
            .collect()
    };
    let rebuilt_as = |games_per_level, near, levels| {
        report_from_results(
            std::slice::from_ref(&results),
            Some(&RebuiltJudging {
                program: Judge::installed_stockfish().unwrap(),
                depth: 6,
                games_per_level,
                coefficients: Coefficients::builtin(),
                only_as_coefficients: None,
                near,
                levels,
            }),
        )
        .unwrap()
    };
    let rebuilt_near = |games_per_level, near| rebuilt_as(games_per_level, near, None);
    let rebuilt = |games_per_level| rebuilt_near(games_per_level, None);
    let both = rebuilt(2);
    // Only opponents near the level's strength: greedy's rating in the records against level
    // 3's in the coefficients decides whether its games are judged.
    let greedy: f64 = std::fs::read_to_string(&results)
        .unwrap()
        .lines()
        .find_map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).ok()?;
            record["opponent"]["rating"].as_f64()
        })
        .expect("the anchor's rating in the records");
    let gap = (Coefficients::builtin().rating_of(3.0).unwrap() - greedy).abs();
    let near = rebuilt_near(2, Some(gap + 1.0));
    assert!(near.contains("(2 games judged by Stockfish"), "{near}");
    assert!(
        near.contains("only games between sides rated within"),
        "{near}"
    );
    assert_eq!(rows(&near), rows(&both), "{near}");
    let far = rebuilt_near(2, Some((gap - 1.0).max(0.0)));
    assert!(far.contains("(0 games judged by"), "{far}");
    assert!(both.contains("(2 games judged by Stockfish"), "{both}");
    assert_eq!(rows(&both), rows(&summary.report), "{both}");
    assert_eq!(rows(&both).len(), 2);
    // `--level`: only the levels asked for are judged and shown.
    let only = |levels: Vec<f64>| rebuilt_as(2, None, Some(levels));
    let three = only(vec![3.0, 5.0]);
    assert_eq!(rows(&three), rows(&both), "{three}");
    assert!(three.contains("levels 3, 5 only"), "{three}");
    let other = only(vec![4.0]);
    assert!(other.contains("(0 games judged by"), "{other}");
    assert!(rows(&other).is_empty(), "{other}");
    let last = rebuilt(1);
    assert!(last.contains("(1 games judged by Stockfish"), "{last}");
    let moves_judged = |report: &str| -> u64 {
        let row = rows(report).into_iter().next().expect("the level's row");
        row.split('|')
            .map(str::trim)
            .nth(3)
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(moves_judged(&last) < moves_judged(&both), "{last}");

    // Judged as a set of coefficients plays: a game of another version counts only where that
    // version, kept in the history directory, plays the level alike (a calibration loop's
    // games from before a level's last move are left out).
    let now = Coefficients::builtin();
    let older = now.version - 1;
    let versions = dir.path().join("versions.jsonl");
    let mut first = true;
    let text: String = std::fs::read_to_string(&results)
        .unwrap()
        .lines()
        .map(|line| {
            let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
            if std::mem::take(&mut first) {
                record["coefficients_version"] = older.into();
            }
            format!("{record}\n")
        })
        .collect();
    std::fs::write(&versions, text).unwrap();
    let history = dir.path().join("history");
    std::fs::create_dir_all(&history).unwrap();
    let judged_as_now = |only_as_now: bool| {
        report_from_results(
            std::slice::from_ref(&versions),
            Some(&RebuiltJudging {
                program: Judge::installed_stockfish().unwrap(),
                depth: 6,
                games_per_level: 2,
                coefficients: now.clone(),
                only_as_coefficients: only_as_now.then(|| history.clone()),
                near: None,
                levels: None,
            }),
        )
        .unwrap()
    };
    let every = judged_as_now(false);
    assert!(every.contains("(2 games judged by Stockfish"), "{every}");
    assert!(!every.contains("only games a level played as"), "{every}");
    // The older version unknown: its game is not judged.
    let unknown = judged_as_now(true);
    assert!(
        unknown.contains("(1 games judged by Stockfish"),
        "{unknown}"
    );
    assert!(
        unknown.contains(&format!(
            "only games a level played as version {}",
            now.version
        )),
        "{unknown}"
    );
    // Kept, and level 3 plays alike under it (another level moved): both games count.
    let mut other = now.clone();
    other.offsets.insert("7".into(), now.offset(7.0) + 0.5);
    let keep = |offset_of_3: f64| {
        let mut old = other.clone();
        old.version = older;
        old.offsets.insert("3".into(), offset_of_3);
        std::fs::write(
            history.join(format!("coefficients-v{older}.toml")),
            old.to_toml(),
        )
        .unwrap();
    };
    keep(now.offset(3.0));
    let alike = judged_as_now(true);
    assert!(alike.contains("(2 games judged by Stockfish"), "{alike}");
    assert_eq!(rows(&alike), rows(&every), "{alike}");
    // Level 3 itself was elsewhere then: its older game is left out.
    keep(now.offset(3.0) - 0.5);
    let moved = judged_as_now(true);
    assert!(moved.contains("(1 games judged by Stockfish"), "{moved}");
    // Records written before the opening was kept are judged from their first ply, and the
    // report says so: more moves, the opening's included.
    let text = std::fs::read_to_string(&results).unwrap();
    let unmarked: String = text
        .lines()
        .map(|line| {
            let mut record: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(fields) = record.as_object_mut() {
                fields.remove("opening_plies");
            }
            format!("{record}\n")
        })
        .collect();
    std::fs::write(&results, unmarked).unwrap();
    let old = rebuilt(2);
    assert!(old.contains("2 of them from their first ply"), "{old}");
    assert!(moves_judged(&old) > moves_judged(&both), "{old}");
}

#[test]
fn the_judge_finds_the_blunder_of_fools_mate() {
    let Some(stockfish) = Judge::installed_stockfish() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut judge = Judge::start(&stockfish, 10).await.unwrap();
        // 1. f3 e5 2. g4?? Qh4#: White's second move allows mate in one.
        let game = Game::from_uci_moves(None, &["f2f3", "e7e5", "g2g4", "d8h4"], false).unwrap();
        let (white, black) = judge.judge_game(&game, 0).await.unwrap();
        judge.quit().await;
        assert_eq!((white.moves, black.moves), (2, 2));
        assert_eq!(white.blunders, 1, "{white:?}");
        // g4 throws away everything: from about even (capped) to being mated.
        assert!(white.cp_loss > 800.0, "{white:?}");
        // Black's mate loses nothing; e5 is a normal move.
        assert_eq!(black.blunders + black.mistakes, 0, "{black:?}");
        assert!(black.cp_loss < 100.0, "{black:?}");
        // Judging from ply 2 leaves the opening out.
        let mut judge = Judge::start(&stockfish, 10).await.unwrap();
        let (white, black) = judge.judge_game(&game, 2).await.unwrap();
        judge.quit().await;
        assert_eq!((white.moves, black.moves, white.blunders), (1, 1, 1));
    });
}
