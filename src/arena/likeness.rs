//! Human-likeness of a player's errors, from the judge's evaluations: big losses per 100 moves,
//! the average centipawn loss, clear recaptures missed, big losses in easy positions (and in
//! their obvious and only-move parts) against hard ones, and big losses by clock left; each
//! rendered beside people's published figure and its source (the report's legend names them;
//! docs/humane.md keeps what was measured with them).
//!
//! The rules, stated in the report too:
//! - evaluations are the judge's, capped at ±[`CP_CEILING`] (a mate counts as the cap), as lila
//!   does; a move loses how much the capped evaluation falls for the mover: from the position's
//!   evaluation to the move's own line when the judge listed the move there (one search scores
//!   its lines alike), else to the next position's evaluation ([`move_value`]);
//! - a forced move (one legal move) is left out of every figure; the big losses and the ACPL
//!   are given over every other move (as people's figures are most likely counted: their
//!   method is unpublished) and over the moves made in play, where the position was not yet
//!   decided (the mover's evaluation before it within ±[`DECIDED_CP`]); the easy/hard split,
//!   the clear recaptures and the clock are counted in play only (in a decided position every
//!   move ties at the cap, so none is easy or hard);
//! - a position is easy when the judge's best move is [`EASY_GAP_CP`] or more above its second,
//!   hard otherwise (two or more moves within that of the best); the easy ones are split two
//!   ways by that best move. *Obvious*: it takes material that is there to take, a capture or
//!   promotion that does not lose by plain exchange (static exchange evaluation ≥ 0 by the
//!   engine's [`see`](crate::engine::see::see), a bishop for a knight counting as even:
//!   [`EVEN_EXCHANGE_CP`]), so also a recapture on the square the opponent just captured on
//!   that does not lose the exchange: the forced or obvious reply in which issue 33 wants
//!   people's errors almost never. *Only move*: it is quiet (no capture, no promotion), a
//!   defence or shot that alone holds, which Anderson, Kleinberg and Mullainathan's blunder
//!   potential calls difficult. A capture that loses by plain exchange (a sacrifice) is
//!   neither; the report says whether big losses are rarer in obvious positions than in hard
//!   ones;
//! - a clear recapture: the opponent's last move captured on a square, the judge's best move
//!   recaptures there, and every move that does not is at least [`EASY_GAP_CP`] worse; it is
//!   missed when the move played does not capture on that square.
//!
//! The big losses in obvious positions are also kept one by one ([`ObviousLoss`]) and listed
//! under the table, so that a reader can see what the judge counted against a level there:
//! a few dozen positions a level decide that column, and the judge's own horizon is among them.

use std::collections::BTreeMap;

use shakmaty::fen::Fen;
use shakmaty::{Chess, EnPassantMode, Move, Position};

use crate::engine::Game;
use crate::engine::humane::{ClockLeft, alarm_ms};
use crate::engine::people::{BIG_LOSS_CP, CP_CEILING, human_big_losses_per_100};
use crate::engine::see::see_at_least;

/// A move made where the mover's evaluation is at or beyond this (either way) is in a decided
/// position and left out.
pub const DECIDED_CP: f64 = 500.0;
/// One move clearly best: this many centipawns above the second (and the margin of a clear
/// recapture).
pub const EASY_GAP_CP: f64 = 150.0;
/// How many lines the judge reports per position (its `MultiPV`).
pub const JUDGE_LINES: usize = 3;
/// The last seconds of the clock, a bucket of its own.
pub const LAST_SECONDS_MS: u64 = 10_000;
/// An exchange that loses less than this by the engine's exchange values does not lose
/// material: they put a bishop 10 cp above a knight, so a bishop taking a knight that is
/// retaken (an even trade, a plain recapture) would otherwise count as a loss.
pub const EVEN_EXCHANGE_CP: i32 = 50;

/// What the judge saw in the position before one move: its best lines, best first (first move
/// in UCI, capped centipawns for the side to move), and the number of legal moves.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JudgedPosition {
    pub lines: Vec<(String, f64)>,
    pub legal_moves: usize,
}

/// Moves and big losses among them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count {
    pub moves: u64,
    pub big_losses: u64,
}

impl Count {
    fn add(&mut self, big: bool) {
        self.moves += 1;
        self.big_losses += u64::from(big);
    }

    fn merge(&mut self, other: &Count) {
        self.moves += other.moves;
        self.big_losses += other.big_losses;
    }

    /// Big losses per 100 moves; `None` without moves.
    pub fn per_100(&self) -> Option<f64> {
        (self.moves > 0).then(|| 100.0 * self.big_losses as f64 / self.moves as f64)
    }
}

/// The clock buckets: time to spare, below Lichess's low-time alarm, the last seconds.
pub const CLOCK_BUCKETS: [&str; 3] = ["above the alarm", "below the alarm", "last 10 s"];

/// A big loss in an obvious position: where, what was played, and what the judge saw.
#[derive(Clone, Debug, PartialEq)]
pub struct ObviousLoss {
    /// The position before the move (FEN).
    pub fen: String,
    /// The move played (UCI).
    pub played: String,
    /// How much the capped evaluation fell for the mover.
    pub loss_cp: f64,
    /// The judge's lines there, best first (first move in UCI, capped centipawns).
    pub lines: Vec<(String, f64)>,
}

/// How many of a player's [`ObviousLoss`]es the report lists (the first ones judged).
pub const OBVIOUS_LOSSES_LISTED: usize = 12;

/// One player's judged moves, summed, by the rules of the module.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Likeness {
    /// Every move but the forced ones, with their big losses and centipawns lost.
    pub all: Count,
    pub cp_loss: f64,
    /// The moves made in play (the position not yet decided).
    pub in_play: Count,
    pub cp_loss_in_play: f64,
    /// Left out of every figure: forced moves.
    pub forced: u64,
    pub clear_recaptures: u64,
    pub recaptures_missed: u64,
    pub easy: Count,
    /// Of `easy`: the positions whose clearly best move is quiet (an only move).
    pub easy_quiet: Count,
    /// Of `easy`: the positions whose clearly best move takes material that is there to take
    /// (a capture or promotion that does not lose by plain exchange).
    pub easy_obvious: Count,
    pub hard: Count,
    /// By the mover's clock ([`CLOCK_BUCKETS`]); moves without a clock are in none.
    pub clock: [Count; 3],
    /// The big losses of `easy_obvious`, one by one, in the order judged.
    pub obvious_losses: Vec<ObviousLoss>,
    /// Moves (not forced) that the next position's evaluation would make big losses but that
    /// the judge's own lines score within [`BIG_LOSS_CP`] of its best: its horizon, not counted.
    pub horizon_losses: u64,
}

impl Likeness {
    pub fn merge(&mut self, other: &Likeness) {
        self.all.merge(&other.all);
        self.cp_loss += other.cp_loss;
        self.in_play.merge(&other.in_play);
        self.cp_loss_in_play += other.cp_loss_in_play;
        self.forced += other.forced;
        self.clear_recaptures += other.clear_recaptures;
        self.recaptures_missed += other.recaptures_missed;
        self.easy.merge(&other.easy);
        self.easy_quiet.merge(&other.easy_quiet);
        self.easy_obvious.merge(&other.easy_obvious);
        self.hard.merge(&other.hard);
        for (mine, theirs) in self.clock.iter_mut().zip(&other.clock) {
            mine.merge(theirs);
        }
        self.obvious_losses
            .extend(other.obvious_losses.iter().cloned());
        self.horizon_losses += other.horizon_losses;
    }

    pub fn acpl(&self) -> Option<f64> {
        (self.all.moves > 0).then(|| self.cp_loss / self.all.moves as f64)
    }

    /// The share of clear recaptures not played; `None` without any.
    pub fn recaptures_missed_share(&self) -> Option<f64> {
        (self.clear_recaptures > 0)
            .then(|| self.recaptures_missed as f64 / self.clear_recaptures as f64)
    }
}

/// What the move `played` (UCI) is worth to its mover by the judge: its own line's score when
/// the judge listed it in the position before (`judged`), else `next`, the next position's
/// evaluation for the mover.
///
/// Within one search the judge's lines are scored alike, so a move it ranks among its best is
/// worth what it said; searching the next position afresh at the same depth sees a ply
/// further, and a jump there would count the judge's own best move as a big loss (stop 56 of
/// docs/humane.md read such a one: Kxb5 in K+B+P against K+B, the judge's best line, "lost"
/// 463 cp a ply later). lila's deep analysis, behind people's figures, seldom jumps so.
fn move_value(judged: &JudgedPosition, played: &str, next: f64) -> f64 {
    judged
        .lines
        .iter()
        .find(|(uci, _)| uci == played)
        .map_or(next, |(_, cp)| *cp)
}

/// The clock bucket of a mover's clock.
fn clock_bucket(clock: ClockLeft) -> usize {
    if clock.remaining_ms <= LAST_SECONDS_MS {
        2
    } else if clock.remaining_ms <= alarm_ms(clock.initial_ms) {
        1
    } else {
        0
    }
}

/// The legal move that `uci` (the judge's notation) names in `position`; `None` when it names
/// none.
fn legal_move(position: &Chess, uci: &str) -> Option<Move> {
    uci.parse::<shakmaty::uci::UciMove>()
        .ok()
        .and_then(|u| u.to_move(position).ok())
}

/// Whether the move `m` is quiet: no capture and no promotion.
fn is_quiet(m: &Move) -> bool {
    !m.is_capture() && !m.is_promotion()
}

/// Whether the legal move `m` in `position` is obvious: a capture or a promotion, and not
/// losing by plain exchange ([`see`](crate::engine::see::see) ≥ 0 within
/// [`EVEN_EXCHANGE_CP`]: the material that is there to take). A recapture on the square the
/// opponent just captured on is such a capture, obvious when it does not lose the exchange; a
/// capture the exchange loses (a sacrifice) is not.
fn is_obvious(position: &Chess, m: &Move) -> bool {
    (m.is_capture() || m.is_promotion())
        && see_at_least(position.board(), position.turn(), *m, 1 - EVEN_EXCHANGE_CP)
}

/// Whether `position` (after the opponent's `last`) holds a clear recapture by the judge's
/// `judged` lines: the square recaptured on.
fn clear_recapture(
    position: &Chess,
    last: Option<&Move>,
    judged: &JudgedPosition,
) -> Option<shakmaty::Square> {
    let last = last.filter(|m| m.is_capture())?;
    let square = last.to();
    let recaptures =
        |uci: &str| legal_move(position, uci).is_some_and(|m| m.is_capture() && m.to() == square);
    let (best, best_cp) = judged.lines.first()?;
    if !recaptures(best) {
        return None;
    }
    let clear = match judged.lines.iter().find(|(uci, _)| !recaptures(uci)) {
        Some((_, cp)) => best_cp - cp >= EASY_GAP_CP,
        // Every listed line recaptures: every other move is below the last of them, or there
        // is no other move.
        None => {
            judged.lines.len() >= judged.legal_moves
                || judged
                    .lines
                    .last()
                    .is_some_and(|(_, cp)| best_cp - cp >= EASY_GAP_CP)
        }
    };
    clear.then_some(square)
}

/// Each side's likeness in `game` from ply `first` on: `evals[k]` is the capped evaluation of
/// the position after `first + k` plies for the side to move there (as [`super::judge`] gives
/// it), `positions[k]` what the judge saw there, `clocks[k]` the mover's clock (empty: no
/// clock). Returns (white, black).
pub fn likeness_of_game(
    game: &Game,
    first: usize,
    evals: &[f64],
    positions: &[JudgedPosition],
    clocks: &[ClockLeft],
) -> (Likeness, Likeness) {
    let (mut white, mut black) = (Likeness::default(), Likeness::default());
    let mut replay = Game::from_position(game.initial_position().clone(), game.castling_mode());
    for m in &game.moves()[..first.min(game.moves().len())] {
        replay.play(*m);
    }
    for k in 0..evals.len().saturating_sub(1) {
        let Some(&played) = game.moves().get(first + k) else {
            break;
        };
        let side = if replay.turn().is_white() {
            &mut white
        } else {
            &mut black
        };
        let judged = positions.get(k).cloned().unwrap_or_default();
        let played_uci = replay.to_uci(played);
        // The next position's evaluation, for the mover.
        let next = -evals[k + 1];
        let before = evals[k];
        let loss = (before - move_value(&judged, &played_uci, next)).max(0.0);
        let big = loss >= BIG_LOSS_CP;
        if judged.legal_moves < 2 {
            side.forced += 1;
        } else {
            side.all.add(big);
            side.cp_loss += loss;
            side.horizon_losses += u64::from(!big && before - next >= BIG_LOSS_CP);
        }
        if judged.legal_moves >= 2 && before.abs() < DECIDED_CP {
            side.in_play.add(big);
            side.cp_loss_in_play += loss;
            let easy = match judged.lines.as_slice() {
                [(_, best), (_, second), ..] => best - second >= EASY_GAP_CP,
                _ => false,
            };
            if easy {
                side.easy.add(big);
                // The judge's best move, parsed once; one that is not legal here is neither.
                let best = judged
                    .lines
                    .first()
                    .and_then(|(uci, _)| legal_move(replay.position(), uci));
                if let Some(best) = best {
                    if is_quiet(&best) {
                        side.easy_quiet.add(big);
                    } else if is_obvious(replay.position(), &best) {
                        side.easy_obvious.add(big);
                        if big {
                            side.obvious_losses.push(ObviousLoss {
                                fen: Fen::from_position(replay.position(), EnPassantMode::Legal)
                                    .to_string(),
                                played: played_uci.clone(),
                                loss_cp: loss,
                                lines: judged.lines.clone(),
                            });
                        }
                    }
                }
            } else {
                side.hard.add(big);
            }
            if let Some(square) = clear_recapture(replay.position(), replay.moves().last(), &judged)
            {
                side.clear_recaptures += 1;
                if !(played.is_capture() && played.to() == square) {
                    side.recaptures_missed += 1;
                }
            }
            if let Some(&clock) = clocks.get(k) {
                side.clock[clock_bucket(clock)].add(big);
            }
        }
        replay.play(played);
    }
    (white, black)
}

/// People's average centipawn loss by rating (the vendor's "typical ranges", not a reported
/// measurement): the band the rating falls in.
pub fn human_acpl_band(rating: f64) -> (f64, f64) {
    const BANDS: [(f64, (f64, f64)); 9] = [
        (1000.0, (150.0, 250.0)),
        (1200.0, (90.0, 150.0)),
        (1400.0, (70.0, 90.0)),
        (1600.0, (55.0, 70.0)),
        (1800.0, (45.0, 55.0)),
        (2000.0, (40.0, 50.0)),
        (2200.0, (30.0, 40.0)),
        (2400.0, (25.0, 35.0)),
        (f64::INFINITY, (15.0, 25.0)),
    ];
    BANDS
        .iter()
        .find(|(below, _)| rating < *below)
        .map_or((15.0, 25.0), |(_, band)| *band)
}

/// The aim for clear recaptures missed at a rating (people above ~1000 almost never
/// miss one).
fn recapture_aim(rating: f64) -> &'static str {
    if rating >= 1500.0 {
        "≤ 3%"
    } else if rating >= 1080.0 {
        "≤ 10%"
    } else {
        "falling"
    }
}

fn per_100(count: &Count) -> String {
    count
        .per_100()
        .map_or_else(|| "–".to_string(), |r| format!("{r:.1} ({})", count.moves))
}

/// Whether big losses per 100 are rarer in `obvious` positions than in `hard` ones: "yes",
/// "no", or "–" when either has no moves.
fn rarer(obvious: &Count, hard: &Count) -> &'static str {
    match (obvious.per_100(), hard.per_100()) {
        (Some(o), Some(h)) if o < h => "yes",
        (Some(_), Some(_)) => "no",
        _ => "–",
    }
}

/// The human-likeness table: one row per player with counted moves; `claimed` is the rating
/// each player stands for (people's figures are read there); `describe` says how the games
/// were judged.
pub fn render_likeness(
    names: &[String],
    claimed: &[Option<f64>],
    likeness: &[Likeness],
    describe: &str,
) -> String {
    let mut text = String::from("## Human-likeness of the errors\n\n");
    text.push_str(&format!("{describe}.\n\n"));
    text.push_str(
        "| player | rating | moves | big losses /100 | people /100 | × people | in play: big /100 (moves) | ACPL | people ACPL | clear recaptures missed | aim | easy: big /100 (moves) | of which only moves | of which obvious | hard: big /100 (moves) | obvious < hard | above the alarm | below the alarm | last 10 s |\n",
    );
    text.push_str(
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (i, name) in names.iter().enumerate() {
        let Some(l) = likeness.get(i).filter(|l| l.all.moves > 0) else {
            continue;
        };
        let rating = claimed.get(i).copied().flatten();
        let big = l.all.per_100().unwrap_or(0.0);
        let (people, ratio, acpl_band, aim) = match rating {
            Some(r) => {
                let people = human_big_losses_per_100(r);
                let (lo, hi) = human_acpl_band(r);
                (
                    format!("{people:.1}"),
                    format!("{:.2}", big / people),
                    format!("{lo:.0}–{hi:.0}"),
                    recapture_aim(r).to_string(),
                )
            }
            None => ("–".into(), "–".into(), "–".into(), "–".into()),
        };
        let recaptures = l.recaptures_missed_share().map_or_else(
            || "– (0)".to_string(),
            |s| {
                format!(
                    "{:.0}% ({}/{})",
                    100.0 * s,
                    l.recaptures_missed,
                    l.clear_recaptures
                )
            },
        );
        text.push_str(&format!(
            "| {name} | {} | {} | {big:.1} | {people} | {ratio} | {} | {:.0} | {acpl_band} | {recaptures} | {aim} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            rating.map_or_else(|| "–".to_string(), |r| format!("{r:.0}")),
            l.all.moves,
            per_100(&l.in_play),
            l.acpl().unwrap_or(0.0),
            per_100(&l.easy),
            per_100(&l.easy_quiet),
            per_100(&l.easy_obvious),
            per_100(&l.hard),
            rarer(&l.easy_obvious, &l.hard),
            per_100(&l.clock[0]),
            per_100(&l.clock[1]),
            per_100(&l.clock[2]),
        ));
    }
    text.push_str(&format!(
        "\nRules: evaluations capped at ±{CP_CEILING:.0} cp (a mate counts as the cap); a move \
         loses how far the mover's evaluation falls, to the move's own line where the judge \
         listed it among its {JUDGE_LINES} lines, else to the next position's evaluation; forced moves \
         (one legal move) are left out. Big losses (a move losing {BIG_LOSS_CP:.0} cp or more) and \
         ACPL over every other move, beside people's; \"in play\": only the moves made where the \
         mover's evaluation was within ±{DECIDED_CP:.0} cp (the game not yet decided), the set the \
         clear recaptures, the easy/hard split and the clock columns count. Easy: the judge's best move is {EASY_GAP_CP:.0} cp or more above its second; hard: \
         the rest; \"of which only moves\": the easy positions whose best move is quiet (no \
         capture or promotion), a defence or shot that alone holds (difficult by Anderson et \
         al.'s blunder potential, not obvious); \"of which obvious\": the easy positions whose \
         best move takes material that is there to take, a capture or promotion that does not \
         lose by plain exchange (static exchange evaluation ≥ 0, a bishop for a knight counting \
         as even; so also a recapture that does not lose the exchange), the obvious reply; an easy position whose best move is a \
         capture the exchange loses (a sacrifice) is neither; \"obvious < hard\": whether big \
         losses per 100 are rarer in the obvious positions than in the hard ones (\"–\" when \
         either has no moves). A clear recapture: the opponent just captured on a square, the judge's best \
         move recaptures there and every other move is {EASY_GAP_CP:.0} cp or more worse. Clock: \
         the mover's before the move, against Lichess's low-time alarm (an eighth of the initial \
         time, 10–60 s); \"–\" without moves (no clock: none).\n\n\
         People: big losses per 100 moves by rating from Lichess games of all speeds (a vendor's \
         count over 60k games, all speeds; method unpublished); ACPL bands are the same vendor's \
         typical ranges; clear recaptures: people above ~1000 almost never miss one (Rodent's \
         Blunder() protects the recapture from 1000; the aims are issue 33's); easy against hard: \
         people err far less in easy positions (Anderson, Kleinberg, Mullainathan, KDD 2016: \
         difficulty predicts blunders), and issue 33 wants their errors almost never in a forced \
         or obvious reply; \
         clock: blunder rates climb in the last seconds, with a bump at the alarm (a study of \
         68M Lichess games, Antiochian's chess-blunders).\n",
    ));
    text.push_str(&render_horizon_losses(names, likeness));
    text.push_str(&render_obvious_losses(names, likeness));
    text
}

/// Each player's figures against each opponent it met (`by_opponent[(player, opponent)]`: the
/// player's moves in those games), for the players the main table shows that met two opponents
/// or more: a rate of big losses depends on who punishes them and which positions arise, so
/// the table says how much of a player's rate is its opponents'. Empty when no player qualifies.
pub fn render_by_opponent(
    names: &[String],
    claimed: &[Option<f64>],
    likeness: &[Likeness],
    by_opponent: &BTreeMap<(usize, usize), Likeness>,
) -> String {
    let rating = |i: usize| {
        claimed
            .get(i)
            .copied()
            .flatten()
            .map_or_else(|| "–".to_string(), |r| format!("{r:.0}"))
    };
    let mut rows = String::new();
    for (player, name) in names.iter().enumerate() {
        if likeness.get(player).is_none_or(|l| l.all.moves == 0) {
            continue;
        }
        let met: Vec<(usize, &Likeness)> = by_opponent
            .range((player, 0)..(player + 1, 0))
            .filter(|(_, l)| l.all.moves > 0)
            .map(|(&(_, opponent), l)| (opponent, l))
            .collect();
        if met.len() < 2 {
            continue;
        }
        let people = claimed
            .get(player)
            .copied()
            .flatten()
            .map(human_big_losses_per_100);
        for (opponent, l) in met {
            let big = l.all.per_100().unwrap_or(0.0);
            rows.push_str(&format!(
                "| {name} | {} | {} | {} | {big:.1} | {} | {:.0} | {} | {} |\n",
                names.get(opponent).map_or("?", String::as_str),
                rating(opponent),
                l.all.moves,
                people.map_or_else(|| "–".to_string(), |p| format!("{:.2}", big / p)),
                l.acpl().unwrap_or(0.0),
                per_100(&l.easy_obvious),
                per_100(&l.hard),
            ));
        }
    }
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "\n### By opponent\n\nThe same moves split by whom they were played against (players \
         that met two opponents or more); × people at the player's own rating.\n\n\
         | player | opponent | opponent's rating | moves | big losses /100 | × people | ACPL | \
         obvious: big /100 (moves) | hard: big /100 (moves) |\n\
         |---|---|---|---|---|---|---|---|---|\n{rows}"
    )
}

/// One sentence on the moves the judge's own lines cleared (its horizon): how many a player
/// would have had as big losses by the next position's evaluation alone. Empty when none.
fn render_horizon_losses(names: &[String], likeness: &[Likeness]) -> String {
    let counts: Vec<String> = names
        .iter()
        .zip(likeness)
        .filter(|(_, l)| l.horizon_losses > 0)
        .map(|(name, l)| format!("{name} {}", l.horizon_losses))
        .collect();
    if counts.is_empty() {
        return String::new();
    }
    format!(
        "\nNot counted as big losses, the judge's horizon (moves its own lines score within \
         {BIG_LOSS_CP:.0} cp of its best, whose next position it scores {BIG_LOSS_CP:.0} cp or \
         more lower): {}.\n",
        counts.join(", ")
    )
}

/// The big losses in obvious positions one by one (at most [`OBVIOUS_LOSSES_LISTED`] a
/// player): the position, the move played, what it lost and the judge's lines there. Empty
/// when no player has one.
fn render_obvious_losses(names: &[String], likeness: &[Likeness]) -> String {
    let mut text = String::new();
    for (name, l) in names.iter().zip(likeness) {
        if l.obvious_losses.is_empty() {
            continue;
        }
        if text.is_empty() {
            text.push_str(
                "\n### Big losses in obvious positions\n\nEach: the position before the move (FEN), \
                 the move played and what it lost, the judge's lines there (best first, \
                 centipawns for the mover).\n",
            );
        }
        let total = l.obvious_losses.len();
        text.push_str(&format!("\n{name} ({total}):\n\n"));
        for loss in l.obvious_losses.iter().take(OBVIOUS_LOSSES_LISTED) {
            let lines: Vec<String> = loss
                .lines
                .iter()
                .map(|(m, cp)| format!("{m} {cp:+.0}"))
                .collect();
            text.push_str(&format!(
                "- `{}`: {} lost {:.0}; judge: {}\n",
                loss.fen,
                loss.played,
                loss.loss_cp,
                lines.join(", ")
            ));
        }
        if total > OBVIOUS_LOSSES_LISTED {
            text.push_str(&format!("- and {} more\n", total - OBVIOUS_LOSSES_LISTED));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(lines: &[(&str, f64)], legal_moves: usize) -> JudgedPosition {
        JudgedPosition {
            lines: lines.iter().map(|(m, cp)| (m.to_string(), *cp)).collect(),
            legal_moves,
        }
    }

    /// A tiny hand-made judged game: 1. e4 d5 2. exd5 and then Black either recaptures with
    /// the queen or does not.
    fn game(last: &str) -> Game {
        Game::from_uci_moves(None, &["e2e4", "d7d5", "e4d5", last, "b1c3"], false).unwrap()
    }

    #[test]
    fn a_move_among_the_judges_lines_is_worth_its_line() {
        // 1. e4 (the judge's best, +30), 1... e5 (the judge's best, -20; the next position,
        // searched a ply deeper, says +480 for White: the horizon, no loss), 2. Nf3 (the third
        // line, 199 below the best: a loss of 199, not big), 2... a6 (not listed: -30 -> -400
        // by the next position, a big loss).
        let g = Game::from_uci_moves(None, &["e2e4", "e7e5", "g1f3", "a7a6"], false).unwrap();
        let evals = [30.0, -20.0, 480.0, -30.0, 400.0];
        let positions = [
            judged(&[("e2e4", 30.0), ("d2d4", 25.0), ("g1f3", 20.0)], 20),
            judged(&[("e7e5", -20.0), ("c7c5", -30.0), ("e7e6", -40.0)], 20),
            judged(&[("d2d4", 480.0), ("f1c4", 400.0), ("g1f3", 281.0)], 30),
            judged(&[("b8c6", -30.0), ("g8f6", -35.0), ("d7d6", -40.0)], 30),
        ];
        let (w, b) = likeness_of_game(&g, 0, &evals, &positions, &[]);
        assert_eq!(
            w.all,
            Count {
                moves: 2,
                big_losses: 0
            }
        );
        assert_eq!(w.cp_loss, 199.0);
        assert_eq!(
            b.all,
            Count {
                moves: 2,
                big_losses: 1
            }
        );
        assert_eq!(b.cp_loss, 370.0);
        // By the next positions alone e5 would have lost 460 and Nf3 450 (+480 to +30).
        assert_eq!((w.horizon_losses, b.horizon_losses), (1, 1));
        let names = ["white".to_string(), "black".to_string()];
        let report = render_likeness(&names, &[None, None], &[w, b], "judged");
        assert!(report.contains("the judge's horizon"), "{report}");
        assert!(report.contains("white 1, black 1"), "{report}");
    }

    /// The split by opponent: a row per opponent for a shown player that met two or more,
    /// with its rate, × people at the player's rating and ACPL; nothing for a player that met
    /// one (its row would repeat the main table) or that the main table does not show.
    #[test]
    fn the_split_by_opponent_shows_what_each_opponent_drew_out() {
        let counted = |moves, big_losses, cp_loss| Likeness {
            all: Count { moves, big_losses },
            cp_loss,
            ..Likeness::default()
        };
        let names = ["level-2", "ai-1", "ai-2", "greedy"].map(String::from);
        let claimed = [Some(705.0), Some(497.0), Some(735.0), None];
        let mut by_opponent = BTreeMap::new();
        by_opponent.insert((0, 1), counted(200, 40, 20_000.0));
        by_opponent.insert((0, 2), counted(100, 10, 8_000.0));
        by_opponent.insert((1, 0), counted(150, 30, 15_000.0));
        by_opponent.insert((3, 0), counted(50, 5, 1_000.0));
        by_opponent.insert((3, 1), counted(50, 5, 1_000.0));
        let mut totals = vec![Likeness::default(); 4];
        for (&(player, _), l) in &by_opponent {
            totals[player].merge(l);
        }
        // greedy is not shown in the main table (no moves counted there).
        totals[3] = Likeness::default();
        let table = render_by_opponent(&names, &claimed, &totals, &by_opponent);
        let people = human_big_losses_per_100(705.0);
        assert!(
            table.contains(&format!(
                "| level-2 | ai-1 | 497 | 200 | 20.0 | {:.2} | 100 |",
                20.0 / people
            )),
            "{table}"
        );
        assert!(
            table.contains(&format!(
                "| level-2 | ai-2 | 735 | 100 | 10.0 | {:.2} | 80 |",
                10.0 / people
            )),
            "{table}"
        );
        assert_eq!(
            table.matches("\n| ai-1 |").count(),
            0,
            "one opponent: no rows\n{table}"
        );
        assert!(!table.contains("| greedy |"), "{table}");
        // Nobody met two opponents: no table at all.
        by_opponent.remove(&(0, 2));
        assert_eq!(
            render_by_opponent(&names, &claimed, &totals, &by_opponent),
            ""
        );
    }

    #[test]
    fn a_tiny_judged_game_is_counted_by_the_rules() {
        // Judged from ply 0; evals for the side to move after each ply.
        let evals = [30.0, -40.0, 60.0, -80.0, 900.0, -880.0];
        let positions = [
            judged(&[("e2e4", 30.0), ("d2d4", 25.0), ("g1f3", 20.0)], 20),
            // Black to move: easy-looking? 1st -40, 2nd -200: easy.
            judged(&[("d7d5", -40.0), ("e7e5", -200.0), ("c7c5", -210.0)], 20),
            judged(&[("e4d5", 60.0), ("b1c3", 0.0), ("e4e5", -10.0)], 30),
            // After exd5 Black's queen recaptures clearly: the best non-recapture is 200 worse.
            judged(&[("d8d5", -80.0), ("g8f6", -280.0), ("c7c6", -300.0)], 30),
            judged(&[("b1c3", 900.0)], 30),
        ];
        // Black plays a7a6 instead of recapturing: White is +900 after it.
        let g = game("a7a6");
        let clocks = [
            ClockLeft {
                remaining_ms: 180_000,
                initial_ms: 180_000,
            },
            ClockLeft {
                remaining_ms: 180_000,
                initial_ms: 180_000,
            },
            ClockLeft {
                remaining_ms: 20_000,
                initial_ms: 180_000,
            },
            ClockLeft {
                remaining_ms: 5_000,
                initial_ms: 180_000,
            },
            ClockLeft {
                remaining_ms: 5_000,
                initial_ms: 180_000,
            },
        ];
        let (w, b) = likeness_of_game(&g, 0, &evals, &positions, &clocks);
        // White: e4, exd5 and b1c3 are each the judge's best line there, so none loses (by the
        // next positions b1c3 would have lost 20: +900 to +880); b1c3 is counted among all
        // moves, not in play (decided).
        assert_eq!(
            w.all,
            Count {
                moves: 3,
                big_losses: 0
            }
        );
        assert_eq!(w.cp_loss, 0.0);
        assert_eq!(
            w.in_play,
            Count {
                moves: 2,
                big_losses: 0
            }
        );
        assert_eq!(w.cp_loss_in_play, 0.0);
        assert_eq!(w.clear_recaptures, 0);
        // Black: d5 (the best line: nothing lost, though the next position says -60), a6 (not
        // among the lines: -80 -> -900 by the next position, 820 lost, a big loss in an easy
        // position, a clear recapture missed, in the last 10 s).
        assert_eq!(
            b.all,
            Count {
                moves: 2,
                big_losses: 1
            }
        );
        assert_eq!(b.in_play, b.all);
        assert_eq!(b.cp_loss, 820.0);
        assert_eq!((w.horizon_losses, b.horizon_losses), (0, 0));
        assert_eq!(
            b.easy,
            Count {
                moves: 2,
                big_losses: 1
            }
        );
        assert_eq!(b.hard, Count::default());
        // Of the two, d5 was a quiet only move (found), the queen's recapture a capture.
        assert_eq!(
            b.easy_quiet,
            Count {
                moves: 1,
                big_losses: 0
            }
        );
        // The queen's recapture on d5 (nothing of White's attacks d5) takes what is there to
        // take: obvious, and missed with a big loss.
        assert_eq!(
            b.easy_obvious,
            Count {
                moves: 1,
                big_losses: 1
            }
        );
        assert_eq!(w.easy_obvious, Count::default());
        // The missed recapture is kept to be read: where, what, how much, what the judge saw.
        assert_eq!(
            b.obvious_losses,
            vec![ObviousLoss {
                fen: "rnbqkbnr/ppp1pppp/8/3P4/8/8/PPPP1PPP/RNBQKBNR b KQkq - 0 2".to_string(),
                played: "a7a6".to_string(),
                loss_cp: 820.0,
                lines: positions[3].lines.clone(),
            }]
        );
        assert!(w.obvious_losses.is_empty());
        let mut twice = b.clone();
        twice.merge(&b);
        assert_eq!(
            twice.easy_obvious,
            Count {
                moves: 2,
                big_losses: 2
            }
        );
        assert_eq!(twice.obvious_losses.len(), 2);
        assert_eq!((b.clear_recaptures, b.recaptures_missed), (1, 1));
        assert_eq!(
            b.clock[0],
            Count {
                moves: 1,
                big_losses: 0
            }
        );
        assert_eq!(
            b.clock[2],
            Count {
                moves: 1,
                big_losses: 1
            }
        );
        // White's e4 and exd5 were in hard positions (30 vs 25, 60 vs 0: within 150); exd5 at
        // 20 s of a 3+0 game: below the alarm (22.5 s), above the last 10 s.
        assert_eq!(
            w.hard,
            Count {
                moves: 2,
                big_losses: 0
            }
        );
        assert_eq!(
            w.clock[0],
            Count {
                moves: 1,
                big_losses: 0
            }
        );
        assert_eq!(
            w.clock[1],
            Count {
                moves: 1,
                big_losses: 0
            }
        );

        // Recapturing instead: the clear recapture is played.
        let g = game("d8d5");
        let evals = [30.0, -40.0, 60.0, -80.0, 70.0, -60.0];
        let (_, b) = likeness_of_game(&g, 0, &evals, &positions, &[]);
        assert_eq!((b.clear_recaptures, b.recaptures_missed), (1, 0));
        assert_eq!(b.all.big_losses, 0);
        assert_eq!(b.clock, [Count::default(); 3]);

        // Not clear when a non-recapture is within 150 cp.
        let mut close = positions.clone();
        close[3] = judged(&[("d8d5", -80.0), ("g8f6", -150.0), ("c7c6", -300.0)], 30);
        let (_, b) = likeness_of_game(&g, 0, &evals, &close, &[]);
        assert_eq!(b.clear_recaptures, 0);
        assert_eq!(b.hard.moves, 1);

        // Summed over games.
        let mut total = Likeness::default();
        total.merge(&b);
        total.merge(&b);
        assert_eq!(total.all.moves, 2 * b.all.moves);
    }

    /// The Fried Liver: 1.e4 e5 2.Nf3 Nc6 3.Bc4 Nf6 4.Ng5 d5 5.exd5, then `rest`.
    fn fried_liver(rest: &[&str]) -> Game {
        let mut moves = vec![
            "e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6", "f3g5", "d7d5", "e4d5",
        ];
        moves.extend_from_slice(rest);
        Game::from_uci_moves(None, &moves, false).unwrap()
    }

    #[test]
    fn an_easy_position_is_obvious_when_its_best_move_takes_what_is_there_to_take() {
        // Judged from 5…Nxd5 on: Black's recapture on d5 (the knight takes the pawn; Bxd5 Qxd5
        // wins the bishop back) and White's 6.Nxf7 (the knight takes a pawn the king
        // defends: Kxf7 and the exchange loses a knight for a pawn), each the judge's clear
        // best.
        let g = fried_liver(&["f6d5", "g5f7"]);
        let evals = [-20.0, 30.0, -40.0];
        let positions = [
            judged(&[("f6d5", -20.0), ("c6a5", -190.0), ("d8e7", -230.0)], 38),
            judged(&[("g5f7", 30.0), ("d2d4", -150.0), ("d1f3", -170.0)], 40),
        ];
        let (w, b) = likeness_of_game(&g, 9, &evals, &positions, &[]);
        let one = Count {
            moves: 1,
            big_losses: 0,
        };
        // 5…Nxd5: a recapture that wins back the pawn: easy, obvious, no only move.
        assert_eq!(b.easy, one);
        assert_eq!(b.easy_obvious, one);
        assert_eq!(b.easy_quiet, Count::default());
        assert_eq!((b.clear_recaptures, b.recaptures_missed), (1, 0));
        // 6.Nxf7: a capture that loses by plain exchange (a sacrifice): easy, but neither
        // obvious nor an only move.
        assert_eq!(w.easy, one);
        assert_eq!(w.easy_obvious, Count::default());
        assert_eq!(w.easy_quiet, Count::default());

        // The same position with a quiet best move (6.d4 clearly best) is an only move.
        let g = fried_liver(&["f6d5", "d2d4"]);
        let positions = [
            positions[0].clone(),
            judged(&[("d2d4", 30.0), ("g5f7", -150.0)], 40),
        ];
        let (w, _) = likeness_of_game(&g, 9, &evals, &positions, &[]);
        assert_eq!(w.easy_quiet, one);
        assert_eq!(w.easy_obvious, Count::default());

        // A best move that is not legal there (the queen is behind the d-pawn) is neither;
        // 6.Bxd5 Qxd5 trades a bishop for a knight, 10 cp down by the exchange values but no
        // material lost: obvious.
        let position = fried_liver(&["f6d5"]);
        let bxd5 = legal_move(position.position(), "c4d5").unwrap();
        let board = position.position().board();
        assert_eq!(crate::engine::see::see(board, position.turn(), bxd5), -10);
        assert!(legal_move(position.position(), "d1d5").is_none());
        assert!(is_obvious(position.position(), &bxd5));
    }

    #[test]
    fn the_report_puts_each_figure_beside_peoples() {
        let g = game("a7a6");
        let evals = [30.0, -40.0, 60.0, -80.0, 900.0, -880.0];
        let positions = [
            judged(&[("e2e4", 30.0), ("d2d4", 25.0)], 20),
            judged(&[("d7d5", -40.0), ("e7e5", -200.0)], 20),
            judged(&[("e4d5", 60.0), ("b1c3", 0.0)], 30),
            judged(&[("d8d5", -80.0), ("g8f6", -280.0)], 30),
            judged(&[("b1c3", 900.0)], 30),
        ];
        let (w, b) = likeness_of_game(&g, 0, &evals, &positions, &[]);
        let text = render_likeness(
            &["level-1".to_string(), "level-9".to_string()],
            &[Some(460.0), Some(2100.0)],
            &[b, w],
            "2 games judged by Stockfish at depth 8",
        );
        assert!(text.contains("depth 8"), "{text}");
        // Level 1 (Black): 1 big loss in 2 moves = 50 per 100, people 11.9 under 1000.
        let row = text.lines().find(|l| l.starts_with("| level-1 ")).unwrap();
        assert!(row.contains("| 50.0 | 11.9 | 4.20 |"), "{row}");
        assert!(row.contains("100% (1/1)"), "{row}");
        assert!(row.contains("150–250"), "{row}");
        let row = text.lines().find(|l| l.starts_with("| level-9 ")).unwrap();
        assert!(row.contains("| 0.0 | 5.9 | 0.00 |"), "{row}");
        assert!(row.contains("≤ 3%"), "{row}");
        assert!(text.contains("±500 cp"));
        // No move was cleared by the judge's own lines: no sentence on its horizon.
        assert!(!text.contains("the judge's horizon"), "{text}");
        // Level 1's missed recapture is listed under the table, with the judge's lines;
        // level 9 has none and no entry.
        let listed = text
            .split("### Big losses in obvious positions")
            .nth(1)
            .expect("a list of the obvious positions' big losses");
        assert!(listed.contains("level-1 (1):"), "{listed}");
        assert!(
            listed.contains("a7a6 lost 820; judge: d8d5 -80, g8f6 -280"),
            "{listed}"
        );
        assert!(!listed.contains("level-9"), "{listed}");
    }

    #[test]
    fn the_obvious_positions_big_losses_are_listed_up_to_a_limit() {
        let loss = |i: usize| ObviousLoss {
            fen: format!("fen {i}"),
            played: "a7a6".to_string(),
            loss_cp: 300.0,
            lines: vec![("d8d5".to_string(), 10.0)],
        };
        let many = Likeness {
            obvious_losses: (0..OBVIOUS_LOSSES_LISTED + 3).map(loss).collect(),
            ..Likeness::default()
        };
        let text = render_obvious_losses(&["level-2".to_string()], std::slice::from_ref(&many));
        assert!(text.contains(&format!("level-2 ({}):", OBVIOUS_LOSSES_LISTED + 3)));
        assert_eq!(text.matches("a7a6 lost 300").count(), OBVIOUS_LOSSES_LISTED);
        assert!(text.contains("- and 3 more"), "{text}");
        // Nobody with one: no section at all.
        assert!(render_obvious_losses(&["level-2".to_string()], &[Likeness::default()]).is_empty());
    }

    #[test]
    fn the_report_says_whether_obvious_errors_are_rarer_than_hard_ones() {
        let with = |obvious: Count, hard: Count| Likeness {
            all: Count {
                moves: 200,
                big_losses: 20,
            },
            in_play: Count {
                moves: 150,
                big_losses: 15,
            },
            easy: Count {
                moves: 50,
                big_losses: 5,
            },
            easy_quiet: Count {
                moves: 5,
                big_losses: 3,
            },
            easy_obvious: obvious,
            hard,
            ..Likeness::default()
        };
        let hard = Count {
            moves: 100,
            big_losses: 10,
        };
        let likeness = [
            // 5 per 100 in obvious positions against 10 in hard ones.
            with(
                Count {
                    moves: 40,
                    big_losses: 2,
                },
                hard,
            ),
            // 20 against 10.
            with(
                Count {
                    moves: 40,
                    big_losses: 8,
                },
                hard,
            ),
            // As many: not rarer.
            with(
                Count {
                    moves: 40,
                    big_losses: 4,
                },
                hard,
            ),
            // No obvious positions.
            with(Count::default(), hard),
        ];
        let names = ["rarer", "more", "same", "none"].map(String::from);
        let text = render_likeness(&names, &[Some(1500.0); 4], &likeness, "4 players");
        let cells = |line: &str| -> Vec<String> {
            line.trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect()
        };
        let header = cells(text.lines().find(|l| l.starts_with("| player ")).unwrap());
        let column = |name: &str| {
            header
                .iter()
                .position(|c| c == name)
                .unwrap_or_else(|| panic!("no column {name}: {header:?}"))
        };
        let (quiet, obvious, hard, rarer) = (
            column("of which only moves"),
            column("of which obvious"),
            column("hard: big /100 (moves)"),
            column("obvious < hard"),
        );
        assert_eq!(column("easy: big /100 (moves)") + 1, quiet);
        assert_eq!(quiet + 1, obvious);
        assert_eq!(obvious + 1, hard);
        assert_eq!(hard + 1, rarer);
        let separator = text.lines().find(|l| l.starts_with("|---")).unwrap();
        assert_eq!(cells(separator).len(), header.len());
        for (name, obvious_cell, answer) in [
            ("rarer", "5.0 (40)", "yes"),
            ("more", "20.0 (40)", "no"),
            ("same", "10.0 (40)", "no"),
            ("none", "–", "–"),
        ] {
            let row = text
                .lines()
                .find(|l| l.starts_with(&format!("| {name} ")))
                .map(cells)
                .unwrap();
            assert_eq!(row.len(), header.len(), "{row:?}");
            assert_eq!(row[quiet], "60.0 (5)", "{row:?}");
            assert_eq!(row[obvious], obvious_cell, "{row:?}");
            assert_eq!(row[hard], "10.0 (100)", "{row:?}");
            assert_eq!(row[rarer], answer, "{row:?}");
        }
        assert!(text.contains("\"of which obvious\""), "{text}");
        assert!(text.contains("\"obvious < hard\""), "{text}");
    }
}
