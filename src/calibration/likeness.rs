//! Human-likeness measured live: for the people our levels played, grouped by rating band, how
//! often the level whose target fits the band would have played the person's move (top-1
//! match, the measure Maia reports: 46–53% for Maia at its rating against ~38% for a
//! depth-limited Stockfish), and the people's average centipawn loss per band when Stockfish
//! is installed.
//!
//! Each game is replayed from its record; at every move of the person, after the opening plies
//! (book-like, played from memory) and where more than one move is legal (a forced move says
//! nothing about style), the level's [`LevelPlayer`] — the current coefficients, a fixed seed,
//! one player per game as the daemon has — is asked for its move and compared. A band with no
//! such position is absent from the result, never shown as 0%.

use std::collections::BTreeMap;
use std::path::PathBuf;

use shakmaty::Color;

use crate::arena::judge::{Judge, Quality};
use crate::engine::{Game, NoStop};
use crate::levels::{Coefficients, LevelParams};
use crate::player::LevelPlayer;
use crate::results::{GameRecord, Source};

/// What to measure and how.
#[derive(Clone, Debug)]
pub struct LikenessSettings {
    /// Width of a rating band (Elo); bands are centred on multiples of it (…, 400–600,
    /// 600–800 for 200 would put targets on edges, so 500–700 holds 600).
    pub band_width: f64,
    /// Plies at the start of each game that are not compared (opening moves from memory).
    pub book_plies: usize,
    /// The most recent games to use (0: none).
    pub max_games: usize,
    /// The seed of every level player.
    pub seed: u64,
    /// The perf whose ratings the bands are in (the targets' pool).
    pub perf: String,
    /// Sources to use; empty means all.
    pub sources: Vec<Source>,
    /// Stockfish for the centipawn loss, with its fixed depth; `None`: not measured.
    pub judge: Option<(PathBuf, u32)>,
}

impl Default for LikenessSettings {
    fn default() -> LikenessSettings {
        LikenessSettings {
            band_width: 200.0,
            book_plies: 8,
            max_games: 100,
            seed: 1,
            perf: "blitz".to_string(),
            sources: Vec::new(),
            judge: None,
        }
    }
}

/// One rating band of people and the level that stands for it.
#[derive(Clone, Debug, PartialEq)]
pub struct Band {
    /// The band is `low <= rating < high`.
    pub low: f64,
    pub high: f64,
    /// The level whose target fits the band, and that target.
    pub level: f64,
    pub target: f64,
    /// Games with at least one compared move.
    pub games: usize,
    /// Positions where the person's move was compared.
    pub positions: usize,
    /// Of those, where the level would have played the same move.
    pub matches: usize,
    /// The people's moves as Stockfish judged them (all their moves after the opening plies).
    pub quality: Option<Quality>,
}

impl Band {
    /// The top-1 match rate in [0, 1].
    pub fn top1(&self) -> f64 {
        self.matches as f64 / self.positions.max(1) as f64
    }

    /// The 95% interval of the match rate ([`crate::rating::score_interval`]: Wilson's, so 0 or
    /// every move matched still has width), treating positions as independent (they are not
    /// quite: moves of one game are alike, so read it as a lower bound on the width).
    pub fn interval95(&self) -> (f64, f64) {
        let s = crate::rating::score_interval(self.matches as f64, self.positions as f64);
        (s.lo, s.hi)
    }
}

/// The measurement, with what was left out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Likeness {
    /// Bands with at least one compared position, by rating.
    pub bands: Vec<Band>,
    /// Games against rated people of the perf (before the --likeness-games limit).
    pub eligible: usize,
    /// Games whose moves were replayed (the most recent `max_games` of the eligible).
    pub replayed: usize,
    /// Of those, games in a band no level's target fits.
    pub no_level: usize,
    /// Of those, games whose FEN or moves do not replay (left out whole).
    pub unreadable: usize,
    /// How the centipawn loss was measured, or why it was not.
    pub judge_note: String,
}

/// The band (its centre) a rating falls in.
fn band_centre(rating: f64, width: f64) -> f64 {
    (rating / width).round() * width
}

/// The level whose target is nearest the band's centre, if that target lies within the band
/// (ties: the lower level).
fn level_for(centre: f64, width: f64, levels: &[(f64, f64)]) -> Option<(f64, f64)> {
    levels
        .iter()
        .copied()
        .filter(|&(_, target)| (target - centre).abs() <= width / 2.0)
        .min_by(|a, b| {
            (a.1 - centre)
                .abs()
                .total_cmp(&(b.1 - centre).abs())
                .then(a.0.total_cmp(&b.0))
        })
}

/// A person's game, replayed: the game, the person's colour and the band's centre.
struct HumanGame {
    game: Game,
    human: Color,
    centre: f64,
    level: f64,
    target: f64,
}

/// Counts, in one game, the person's compared moves and how many the level would have played:
/// (positions, matches). One player for the whole game, asked in order, as in a real game.
pub fn match_game(
    game: &Game,
    human: Color,
    params: &LevelParams,
    seed: u64,
    book_plies: usize,
) -> (usize, usize) {
    let mut player = LevelPlayer::new(params.clone(), seed);
    let mut replay = Game::from_position(game.initial_position().clone(), game.castling_mode());
    let (mut positions, mut matches) = (0, 0);
    for (ply, &played) in game.moves().iter().enumerate() {
        if ply >= book_plies && replay.turn() == human && replay.legal_moves().len() > 1 {
            positions += 1;
            if player.choose(&replay, &mut NoStop).best_move == Some(played) {
                matches += 1;
            }
        }
        replay.play(played);
    }
    (positions, matches)
}

/// Measures the levels' likeness to the people in `records`. `levels` holds each level of the
/// ladder with its target (in `settings.perf`); `coefficients` are the ones the levels play
/// with now.
pub fn measure(
    records: &[GameRecord],
    coefficients: &Coefficients,
    levels: &[(f64, f64)],
    settings: &LikenessSettings,
) -> Likeness {
    let mut out = Likeness::default();
    let recent = recent_games(records, settings, &mut out);
    let games = human_games(recent, levels, settings, &mut out);
    let (mut bands, counted) = compare_moves(&games, coefficients, settings);
    out.judge_note = judge_bands(&mut bands, &counted, settings);
    out.bands = bands.into_values().collect();
    out
}

/// The most recent `max_games` games against rated people of the perf and sources (the people
/// playing the ladder now); counts them and the eligible ones in `out`.
fn recent_games<'a>(
    records: &'a [GameRecord],
    settings: &LikenessSettings,
    out: &mut Likeness,
) -> Vec<&'a GameRecord> {
    let mut eligible: Vec<&GameRecord> = records
        .iter()
        .filter(|r| {
            !r.opponent.bot
                && r.perf == settings.perf.as_str()
                && (settings.sources.is_empty() || settings.sources.contains(&r.header.source))
                && r.opponent.rating.is_some_and(f64::is_finite)
        })
        .collect();
    out.eligible = eligible.len();
    eligible.sort_by_key(|r| std::cmp::Reverse(r.finished_at_ms));
    eligible.truncate(settings.max_games);
    out.replayed = eligible.len();
    eligible
}

/// The games replayed, each with the person's band and the level standing for it; counts in
/// `out` those in a band no level fits and those that do not replay.
fn human_games(
    records: Vec<&GameRecord>,
    levels: &[(f64, f64)],
    settings: &LikenessSettings,
    out: &mut Likeness,
) -> Vec<HumanGame> {
    let mut games = Vec::new();
    for record in records {
        let rating = record.opponent.rating.expect("filtered on a rating");
        let centre = band_centre(rating, settings.band_width);
        let Some((level, target)) = level_for(centre, settings.band_width, levels) else {
            out.no_level += 1;
            continue;
        };
        let Some(game) = record.replay() else {
            out.unreadable += 1;
            continue;
        };
        // The record's colour is the level's; the person has the other.
        let human = if record.color == "white" {
            Color::Black
        } else {
            Color::White
        };
        games.push(HumanGame {
            game,
            human,
            centre,
            level,
            target,
        });
    }
    games
}

/// Asks each game's level for the person's moves and adds the matches up by band (keyed by
/// its centre); returns the bands and the games with a compared move.
fn compare_moves<'a>(
    games: &'a [HumanGame],
    coefficients: &Coefficients,
    settings: &LikenessSettings,
) -> (BTreeMap<i64, Band>, Vec<&'a HumanGame>) {
    let mut bands: BTreeMap<i64, Band> = BTreeMap::new();
    let mut params: BTreeMap<i64, LevelParams> = BTreeMap::new();
    let mut counted = Vec::new();
    for g in games {
        let p = params
            .entry((g.level * 1000.0).round() as i64)
            .or_insert_with(|| LevelParams::new(coefficients, g.level));
        let (positions, matches) =
            match_game(&g.game, g.human, p, settings.seed, settings.book_plies);
        if positions == 0 {
            continue;
        }
        let half = settings.band_width / 2.0;
        let band = bands.entry(g.centre as i64).or_insert_with(|| Band {
            low: g.centre - half,
            high: g.centre + half,
            level: g.level,
            target: g.target,
            games: 0,
            positions: 0,
            matches: 0,
            quality: None,
        });
        band.games += 1;
        band.positions += positions;
        band.matches += matches;
        counted.push(g);
    }
    (bands, counted)
}

/// Judges the people's moves of the `counted` games with Stockfish, when it is asked for and
/// installed, into their bands' quality; returns how the centipawn loss was measured or why not.
fn judge_bands(
    bands: &mut BTreeMap<i64, Band>,
    counted: &[&HumanGame],
    settings: &LikenessSettings,
) -> String {
    match &settings.judge {
        None => "not measured (turned off)".to_string(),
        Some((program, _)) if !program.exists() => format!(
            "not measured: Stockfish is not installed at {} (apt-get install stockfish)",
            program.display()
        ),
        Some(_) if counted.is_empty() => "not measured: no move to judge".to_string(),
        Some((program, depth)) => match judge_games(program, *depth, counted, settings) {
            Ok((name, qualities)) => {
                for (g, q) in counted.iter().zip(qualities) {
                    let band = bands
                        .get_mut(&(g.centre as i64))
                        .expect("counted games have a band");
                    band.quality.get_or_insert_with(Quality::default).merge(&q);
                }
                format!("judged by {name} at depth {depth}")
            }
            Err(e) => format!("not measured: {e}"),
        },
    }
}

/// The people's moves of `games` judged by Stockfish, one quality per game, in order; with
/// the judge's name.
fn judge_games(
    program: &std::path::Path,
    depth: u32,
    games: &[&HumanGame],
    settings: &LikenessSettings,
) -> Result<(String, Vec<Quality>), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the judge's runtime: {e}"))?;
    runtime.block_on(async {
        let mut judge = Judge::start(program, depth).await?;
        let name = judge
            .id_name
            .clone()
            .unwrap_or_else(|| program.display().to_string());
        let mut out = Vec::with_capacity(games.len());
        for g in games {
            match judge.judge_game(&g.game, settings.book_plies).await {
                Ok((white, black)) => out.push(if g.human == Color::White {
                    white
                } else {
                    black
                }),
                Err(e) => {
                    judge.quit().await;
                    return Err(format!("the judge failed: {e}"));
                }
            }
        }
        judge.quit().await;
        Ok((name, out))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lichess::GameId;
    use crate::results::{Keyed, Outcome, sample_record};

    const LEVELS: [(f64, f64); 5] = [
        (1.0, 600.0),
        (2.0, 800.0),
        (3.0, 1000.0),
        (4.0, 1200.0),
        (5.0, 1400.0),
    ];
    const BOOK: [&str; 8] = [
        "e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "f8c5", "c2c3", "g8f6",
    ];
    const SEED: u64 = 1;

    /// A game whose person (of `human` colour) plays, after the book, the move `level`'s
    /// player chooses where `plan` says so and another move where it does not; the level's
    /// side plays the first legal move. The player is asked at the person's positions with more
    /// than one legal move, in order, as the measurement asks it. Returns the record's moves
    /// and, by hand, (positions, matches).
    fn planned_game(level: f64, human: Color, plan: &[bool]) -> (String, usize, usize) {
        let params = LevelParams::new(&Coefficients::builtin(), level);
        let mut player = LevelPlayer::new(params, SEED);
        let mut game = Game::startpos();
        for m in BOOK {
            game.play_uci(m).unwrap();
        }
        let (mut positions, mut matches) = (0, 0);
        let mut plan = plan.iter();
        while game.outcome().is_none() {
            let legal = game.legal_moves();
            let m = if game.turn() != human || legal.len() == 1 {
                legal[0]
            } else {
                let Some(&same) = plan.next() else { break };
                let choice = player.choose(&game, &mut NoStop).best_move.unwrap();
                positions += 1;
                if same {
                    matches += 1;
                    choice
                } else {
                    *legal.iter().find(|&&m| m != choice).unwrap()
                }
            };
            game.play(m);
        }
        let moves: Vec<String> = {
            let mut replay = Game::startpos();
            game.moves()
                .iter()
                .map(|&m| {
                    let uci = replay.to_uci(m);
                    replay.play(m);
                    uci
                })
                .collect()
        };
        (moves.join(" "), positions, matches)
    }

    fn record(id: &str, moves: &str, human: Color, rating: f64, finished: i64) -> GameRecord {
        let mut r = sample_record(id, Outcome::Draw);
        r.moves = moves.to_string();
        r.color = Keyed::parse(if human == Color::White {
            "black"
        } else {
            "white"
        });
        r.opponent.rating = Some(rating);
        r.finished_at_ms = finished;
        r
    }

    #[test]
    fn top1_match_is_the_hand_counted_share_and_empty_bands_are_absent() {
        // Two people near 1000 (level 3's band), one near 1400 (level 5's); none near 1200.
        let (a, a_pos, a_match) =
            planned_game(3.0, Color::Black, &[true, false, true, true, false, true]);
        let (b, b_pos, b_match) = planned_game(3.0, Color::White, &[false, false, true, false]);
        let (c, c_pos, c_match) = planned_game(5.0, Color::White, &[true, true, false]);
        assert_eq!((a_pos, a_match, b_pos, b_match), (6, 4, 4, 1));
        assert_eq!((c_pos, c_match), (3, 2));
        let mut records = vec![
            record("a", &a, Color::Black, 1010.0, 3),
            record("b", &b, Color::White, 960.0, 2),
            record("c", &c, Color::White, 1390.0, 1),
        ];
        // A bot's game, a game of another perf and an unrated person are not people's games
        // of the pool: they count nowhere.
        let mut bot = record("bot", &a, Color::Black, 1210.0, 4);
        bot.opponent.bot = true;
        let mut rapid = record("rapid", &a, Color::Black, 1210.0, 5);
        rapid.perf = Keyed::parse("rapid");
        let mut anonymous = record("anon", &a, Color::Black, 1210.0, 6);
        anonymous.opponent.rating = None;
        records.extend([bot, rapid, anonymous]);
        let settings = LikenessSettings::default();
        let l = measure(&records, &Coefficients::builtin(), &LEVELS, &settings);
        assert_eq!(
            (l.eligible, l.replayed, l.no_level, l.unreadable),
            (3, 3, 0, 0)
        );
        assert_eq!(l.judge_note, "not measured (turned off)");
        let bands: Vec<(f64, f64, usize, usize, usize)> = l
            .bands
            .iter()
            .map(|b| (b.low, b.level, b.games, b.positions, b.matches))
            .collect();
        assert_eq!(
            bands,
            [(900.0, 3.0, 2, 10, 5), (1300.0, 5.0, 1, 3, 2)],
            "band 1100–1300 has no game: absent, not 0%"
        );
        assert!((l.bands[0].top1() - 0.5).abs() < 1e-12);
        assert!((l.bands[1].top1() - 2.0 / 3.0).abs() < 1e-12);

        // The limit keeps the most recent games: with 2, game c (the oldest) is not replayed.
        let two = LikenessSettings {
            max_games: 2,
            ..LikenessSettings::default()
        };
        let l = measure(&records, &Coefficients::builtin(), &LEVELS, &two);
        assert_eq!((l.eligible, l.replayed), (3, 2));
        assert_eq!(l.bands.len(), 1);
        // A person whose band no target fits, and moves that do not replay, are counted.
        let mut far = record("far", &a, Color::Black, 2500.0, 7);
        far.game_id = GameId::new("far");
        let mut broken = record("broken", "e2e4 e2e4", Color::Black, 1000.0, 8);
        broken.game_id = GameId::new("broken");
        let l = measure(&[far, broken], &Coefficients::builtin(), &LEVELS, &settings);
        assert_eq!((l.no_level, l.unreadable), (1, 1));
        assert!(l.bands.is_empty());
    }

    #[test]
    fn people_moves_are_judged_when_stockfish_is_installed() {
        let Some(program) = Judge::installed_stockfish() else {
            return;
        };
        let (a, positions, _) = planned_game(3.0, Color::Black, &[true, false, true]);
        let records = [record("a", &a, Color::Black, 1000.0, 1)];
        let settings = LikenessSettings {
            judge: Some((program, 6)),
            ..LikenessSettings::default()
        };
        let l = measure(&records, &Coefficients::builtin(), &LEVELS, &settings);
        assert!(l.judge_note.starts_with("judged by"), "{}", l.judge_note);
        let q = l.bands[0].quality.expect("judged");
        // Every move of the person after the book, forced ones included.
        let human_moves = a
            .split_whitespace()
            .skip(BOOK.len())
            .skip(1)
            .step_by(2)
            .count();
        assert_eq!(q.moves as usize, human_moves);
        assert!(q.moves as usize >= positions);
        assert!(q.acpl() >= 0.0);
        let missing = LikenessSettings {
            judge: Some((PathBuf::from("/nonexistent/stockfish"), 6)),
            ..LikenessSettings::default()
        };
        let l = measure(&records, &Coefficients::builtin(), &LEVELS, &missing);
        assert!(l.judge_note.contains("not installed"), "{}", l.judge_note);
        assert_eq!(l.bands[0].quality, None);
    }

    #[test]
    fn bands_are_centred_so_each_target_has_one() {
        let levels = [(1.0, 600.0), (2.0, 800.0), (3.0, 1000.0)];
        assert_eq!(band_centre(690.0, 200.0), 600.0);
        assert_eq!(band_centre(710.0, 200.0), 800.0);
        assert_eq!(level_for(600.0, 200.0, &levels), Some((1.0, 600.0)));
        assert_eq!(level_for(1000.0, 200.0, &levels), Some((3.0, 1000.0)));
        // No level's target within a band far above the ladder.
        assert_eq!(level_for(1400.0, 200.0, &levels), None);
    }
}
