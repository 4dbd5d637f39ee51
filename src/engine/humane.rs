//! Humane errors: which of a weakened search's mistakes a person of the level's rating would let
//! stand. The ladder's weakening (nodes, noise, blindness, endgame scaling) still makes the
//! errors; this model takes a second, clean look at the move the search chose and decides, by
//! the position, the rating and the clock, whether the player notices that it loses material.
//! Pure logic over the engine: no I/O, and every draw is the caller's (a function of the game's
//! seed), so a game replays exactly.
//!
//! What it is made of (no human game database is reachable here; published findings only):
//! - **What people do not forget** — Rodent's `Blunder()` (Pawel Koziol, `search/blunder.c`):
//!   from about 1000 a player always recaptures the piece that just moved, from 1200 never
//!   misses a capture by a pawn, from 1300 a short capture, from 1400 a queen promotion, from
//!   1500 a check evasion (and from 1600/1900/2300 nothing within 3/4/5 plies of the root: the
//!   top's business, not modelled yet). Each is a ramp here ([`protection`]): protected at its
//!   rating, half protected [`PROTECTION_WIDTHS`] widths below.
//! - **Where people err** — Anderson, Kleinberg and Mullainathan, "Assessing human error against
//!   a benchmark of perfection" (KDD 2016): the difficulty of the position predicts a blunder
//!   better than skill or time; in easy positions even weak players rarely blunder. An error in
//!   a position with one clearly best move (the look's best is `easy_gap_cp` above the second)
//!   is missed as by a player `miss_width · ln(1/easy_factor)` points stronger: about
//!   `easy_factor` times as often where misses are rare, nearly always at the very bottom.
//! - **The clock** — blunder rates climb in the last seconds, with a bump where Lichess's
//!   low-time alarm sounds (Antiochian's study of 68M Lichess games, chess-blunders on GitHub):
//!   from the alarm ([`alarm_ms`], lila's threshold) the miss chance is multiplied by
//!   `alarm_factor`, rising linearly to `flag_factor` at zero.
//! - **What replaces a noticed error** — the look's best move (`replacement = "best"`), or any
//!   move the look finds sound, drawn evenly (`"safe"`): a beginner who sees that a move hangs a
//!   piece plays another sound move, rarely the best, so the level keeps its own weakness.
//! - **What kind** — the look is shallow (`look_depth` plies and quiescence), so what it catches
//!   are hung pieces and missed captures, the beginner's errors; as the rating rises it catches
//!   more of them and the errors that survive are the ones it cannot see: quiet, deeper ones.
//!   Lichess's local bots likewise "always recapture the last moved piece when it is the
//!   favourite" (lila `ui/local/src/bot.ts`).
//! - **Aimed moves at the bottom** (optional, [`super::aim`]): instead of the noisy search's
//!   choice, the move whose loss is closest to one drawn as people's are, big ones at people's
//!   rate; the same protections guard the look's best move first.

use serde::{Deserialize, Serialize};
use shakmaty::{Chess, Move, Position, Role};

use super::Game;
use super::aim::{AimCoefficients, closest};
use super::ramp::logistic;
use super::stumble::StumbleCoefficients;

/// The `[humane]` table of a coefficients file: the error model's knobs. Absent: the model is
/// off and the levels play exactly as without it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HumaneCoefficients {
    /// Plies of the second look (a clean, full-strength search of every move, quiescence below).
    pub look_depth: u32,
    /// A chosen move the look finds this many centipawns below its best is an error the player
    /// may notice (and then plays the look's best instead).
    pub notice_cp: f64,
    /// A position is easy when the look's best move is this many centipawns above the second.
    pub easy_gap_cp: f64,
    /// The rating at which half the noticed errors of a hard position are let stand.
    pub miss_mid: f64,
    /// The width (rating points per e-fold) of the miss chance's logistic fall with rating.
    pub miss_width: f64,
    /// In an easy position a player misses as a player rated `miss_width · ln(1/easy_factor)`
    /// higher does in a hard one: where errors are rarely missed, this multiplies the miss
    /// chance by about `easy_factor`; far below `miss_mid`, where nearly everything is missed,
    /// easy errors are missed nearly always too, so a level pushed below the bottom keeps
    /// getting weaker (< 1: easy errors are caught more).
    pub easy_factor: f64,
    /// Width (rating points) of the protection ramps below each Rodent rating.
    pub protect_width: f64,
    /// Multiplies the miss chance once the clock is at Lichess's low-time alarm...
    pub alarm_factor: f64,
    /// ...rising linearly to this at zero.
    pub flag_factor: f64,
    /// What the player plays once it notices an error (absent: `best`).
    #[serde(default)]
    pub replacement: Replacement,
    /// Which rating the model plays at a level (absent: `strength`, the line over x).
    #[serde(default, skip_serializing_if = "ModelRating::is_strength")]
    pub rating_from: ModelRating,
    /// With `rating_from = "strength"` or `"lower"`: the model's rating at the strength
    /// coordinate x = 0, and its rise per unit of x (both or neither; absent: the targets'
    /// line, the level's target where its offset is 0). Calibration writes them when it
    /// rescales x, so a level it leaves alone keeps its model rating, as it keeps its nodes,
    /// noise and blindness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating_at_x0: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rating_per_x: Option<f64>,
    /// With `rating_from = "lower"`: from this level up the model plays the level's target
    /// even where the line is lower (absent: the lower of the two everywhere). The line is
    /// needed only where the search is at its floor (version 58: levels 1–3 at 1–3 nodes, the
    /// noise near its cap); above, it made levels 4–6 err as players 200–235 points below
    /// their targets, and the search can weaken them instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_from_level: Option<f64>,
    /// Whether Rodent's protections (what a person of a rating does not forget: the
    /// recapture, a pawn's capture, ...) are judged at the level's target where the model's
    /// rating is below it (absent: false, at the model's rating). The line that weakens the
    /// bottom (`"lower"`) is no person's rating: version 58's level 1 played as −600 and left
    /// 65–73% of clear recaptures on the board, which beginners do not. The line still
    /// weakens everything else ([`PlayedAs`]); the easy positions stay on it, for at the
    /// search's floor a level's rating rests on them (docs/humane.md, "Habits at the target").
    #[serde(default, skip_serializing_if = "is_false")]
    pub habits_at_target: bool,
    /// The top's stumbles (`[humane.stumble]`, [`super::stumble`]); absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stumble: Option<StumbleCoefficients>,
    /// The bottom's aimed moves (`[humane.aim]`, [`super::aim`]); absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aim: Option<AimCoefficients>,
    /// A notice threshold of its own over a band of ratings (`[humane.notice]`); absent:
    /// `notice_cp` everywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notice: Option<NoticeBand>,
}

/// `[humane.notice]`: from `from_rating` up to (not including) `to_rating` the player notices
/// an error `cp` below the look's best instead of `notice_cp`. Why a band: with the model
/// playing the levels' targets, levels 4-6 (1080-1500) still made 1.1-1.5 times people's big
/// losses while levels 7-9 stood at 0.9-1.0 (docs/humane.md, "Noticing more from 1000"); about
/// a quarter of level 5's big losses by the judge were moves the 5-ply look found 100-150 cp
/// below its best, under `notice_cp`. A player from about 1000 sees a pawn's loss that a
/// beginner does not (Rodent's protections start there); above the band the levels err near
/// people's rate already, and noticing more would take them under it. Where the search is near
/// its floor (level 4 of the last recalibration), the loop buys the band's strength back with
/// noise and the level errs more, not less: that recalibration's band starts at 1200.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoticeBand {
    pub cp: f64,
    pub from_rating: f64,
    pub to_rating: f64,
}

impl NoticeBand {
    /// Whether a player rated `rating` notices by this band.
    pub fn covers(&self, rating: f64) -> bool {
        (self.from_rating..self.to_rating).contains(&rating)
    }
}

/// Which rating the model plays at a level: what it misses, what it protects, where it
/// stumbles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelRating {
    /// The line over the level's strength coordinate x, which calibration moves: a level
    /// given more search also errs less. Over a recalibration that moved the levels far and
    /// rescaled x (version 42 → 50), the line stretched to 344 points a level: the model
    /// played levels 4–6 about 200 below their ratings (too many errors) and levels 10–12
    /// 340–950 above (too few stumbles) (docs/humane.md).
    #[default]
    Strength,
    /// The level's target on the ladder's scale, whatever its x: a level errs like a person of
    /// the rating it is calibrated to, and calibration buys that rating with search alone.
    Target,
    /// The lower of the two: the line where it is below the target, the target above. At the
    /// bottom the search is at its floor (version 58's levels 1–2 play one node at the noise
    /// cap and differ only by the line's model rating), so only the line weakens them further;
    /// at the top the line overshoots the targets (version 58: levels 9–12 at 2320–3630 for
    /// targets 2130–2760), which shortens their sight and tapers their stumbles away.
    Lower,
}

impl ModelRating {
    fn is_strength(&self) -> bool {
        *self == ModelRating::Strength
    }

    /// Whether the model's rating follows the line over x somewhere (and so calibration
    /// rewrites the line when it rescales x, and the line sets the floor under x).
    pub fn uses_line(self) -> bool {
        matches!(self, ModelRating::Strength | ModelRating::Lower)
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The ratings the model plays a level at: `errors` decides how often a noticed error is let
/// stand (in hard and easy positions), the top's stumbles and aimed moves; `habits` how often
/// a person of the level's rating keeps Rodent's protected moves. The two differ only at the
/// bottom, where the line weakens a level whose search is at its floor
/// ([`HumaneCoefficients::habits_at_target`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlayedAs {
    pub errors: f64,
    pub habits: f64,
}

impl PlayedAs {
    /// One rating for both.
    pub fn one(rating: f64) -> PlayedAs {
        PlayedAs {
            errors: rating,
            habits: rating,
        }
    }
}

/// The move played instead of a noticed error.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Replacement {
    /// The look's best move: every noticed error becomes the clean 3-ply choice, which makes
    /// the bottom levels several hundred Elo stronger than their weakened search.
    #[default]
    Best,
    /// Any move the look finds no error in (within `notice_cp` of its best), drawn evenly: a
    /// beginner who sees that a move hangs a piece plays some other sound move, not the best
    /// one, so the level keeps the weakness of its own choices and loses only the blunder. In
    /// an easy position (one clearly best move) the clearly best move: every other is worse by
    /// `easy_gap_cp` or more, which the judge counts as a blunder of its own.
    Safe,
}

impl HumaneCoefficients {
    /// What is wrong with these knobs, as (key, problem), or `None`.
    pub fn problem(&self) -> Option<(&'static str, &'static str)> {
        let positive = |x: f64| x.is_finite() && x > 0.0;
        if !(1..=6).contains(&self.look_depth) {
            return Some(("humane.look_depth", "must be 1 to 6"));
        }
        if let Some(level) = self.target_from_level {
            if self.rating_from != ModelRating::Lower {
                return Some((
                    "humane.target_from_level",
                    "needs humane.rating_from = \"lower\" beside it",
                ));
            }
            if !level.is_finite() {
                return Some(("humane.target_from_level", "must be a number"));
            }
        }
        if self.rating_from == ModelRating::Target && self.rating_at_x0.is_some() {
            return Some((
                "humane.rating_at_x0",
                "has no use with humane.rating_from = \"target\" (remove it)",
            ));
        }
        match (self.rating_at_x0, self.rating_per_x) {
            (Some(_), None) => {
                return Some(("humane.rating_at_x0", "needs humane.rating_per_x beside it"));
            }
            (None, Some(_)) => {
                return Some(("humane.rating_per_x", "needs humane.rating_at_x0 beside it"));
            }
            (Some(at), _) if !at.is_finite() => {
                return Some(("humane.rating_at_x0", "must be a number"));
            }
            (_, Some(per)) if !positive(per) => {
                return Some(("humane.rating_per_x", "must be a positive number"));
            }
            _ => {}
        }
        let checks = [
            ("humane.notice_cp", positive(self.notice_cp)),
            ("humane.easy_gap_cp", positive(self.easy_gap_cp)),
            ("humane.miss_mid", self.miss_mid.is_finite()),
            ("humane.miss_width", positive(self.miss_width)),
            (
                "humane.easy_factor",
                self.easy_factor.is_finite() && (0.0..=1.0).contains(&self.easy_factor),
            ),
            ("humane.protect_width", positive(self.protect_width)),
            (
                "humane.alarm_factor",
                self.alarm_factor.is_finite() && self.alarm_factor >= 1.0,
            ),
            (
                "humane.flag_factor",
                self.flag_factor.is_finite() && self.flag_factor >= self.alarm_factor,
            ),
        ];
        let own = checks.into_iter().find(|(_, ok)| !ok).map(|(key, _)| {
            (
                key,
                match key {
                    "humane.easy_factor" => "must be in [0, 1]",
                    "humane.alarm_factor" => "must be at least 1",
                    "humane.flag_factor" => "must be at least humane.alarm_factor",
                    "humane.miss_mid" => "must be a number",
                    _ => "must be a positive number",
                },
            )
        });
        // The band's keys, each named by itself: a bad one is refused before the others.
        let band = self.notice.and_then(|n| {
            [
                (
                    "humane.notice.cp",
                    positive(n.cp),
                    "must be a positive number",
                ),
                (
                    "humane.notice.from_rating",
                    n.from_rating.is_finite(),
                    "must be a number",
                ),
                (
                    "humane.notice.to_rating",
                    n.to_rating.is_finite() && n.to_rating > n.from_rating,
                    "must be a number above humane.notice.from_rating",
                ),
            ]
            .into_iter()
            .find(|&(_, ok, _)| !ok)
            .map(|(key, _, problem)| (key, problem))
        });
        own.or(band)
            .or_else(|| self.stumble.and_then(|s| s.problem()))
            .or_else(|| self.aim.and_then(|a| a.problem()))
    }
}

/// A move people stop forgetting from a rating on (Rodent's `Blunder()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Protected {
    /// Recapturing on the square where the opponent's last move captured.
    Recapture,
    /// A capture made by a pawn.
    PawnCapture,
    /// A capture by a piece that travels at most two squares (king distance).
    ShortCapture,
    /// Promoting to a queen.
    QueenPromotion,
    /// Any move out of check.
    CheckEvasion,
}

impl Protected {
    /// The rating from which Rodent never forgets such a move.
    pub fn from_rating(self) -> f64 {
        match self {
            Protected::Recapture => 1000.0,
            Protected::PawnCapture => 1200.0,
            Protected::ShortCapture => 1300.0,
            Protected::QueenPromotion => 1400.0,
            Protected::CheckEvasion => 1500.0,
        }
    }

    /// The kinds `m` is in `pos` (after `last`, the opponent's move that led there), the most
    /// widely protected (lowest rating) first.
    pub fn kinds(pos: &Chess, last: Option<&Move>, m: &Move) -> Vec<Protected> {
        let mut kinds = Vec::new();
        if m.is_capture() {
            if last.is_some_and(|l| l.is_capture() && l.to() == m.to()) {
                kinds.push(Protected::Recapture);
            }
            if m.role() == Role::Pawn {
                kinds.push(Protected::PawnCapture);
            }
            if m.from().is_some_and(|from| from.distance(m.to()) <= 2) {
                kinds.push(Protected::ShortCapture);
            }
        }
        if m.promotion() == Some(Role::Queen) {
            kinds.push(Protected::QueenPromotion);
        }
        if pos.is_check() {
            kinds.push(Protected::CheckEvasion);
        }
        kinds
    }
}

/// How many protection-ramp widths below its Rodent rating a kind is protected half the time;
/// at the rating itself it is then protected 97% of the time (ln(0.97/0.03) = 3.48).
pub const PROTECTION_WIDTHS: f64 = 3.476;

/// The chance that a person rated `rating` does not forget a move of `kind`.
pub fn protection(kind: Protected, rating: f64, width: f64) -> f64 {
    logistic((rating - kind.from_rating()) / width + PROTECTION_WIDTHS)
}

/// A player's clock before a move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockLeft {
    pub remaining_ms: u64,
    /// The game's initial time (the low-time alarm depends on it).
    pub initial_ms: u64,
}

/// Where Lichess's low-time alarm sounds for a game of `initial_ms`: an eighth of the initial
/// time, at least 10 s and at most 60 s (lila's clock; about 20 s at 3+0, 40 s at 5+0, 60 s at
/// 10+0).
pub fn alarm_ms(initial_ms: u64) -> u64 {
    (initial_ms / 8).clamp(10_000, 60_000)
}

/// Where the look's best move stands against the move the search chose.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Look {
    /// The look's best move and its score (centipawns, the mover's view).
    pub best: Move,
    pub best_cp: i32,
    /// The second-best move's score; `None` with one legal move.
    pub second_cp: Option<i32>,
    /// The chosen move's score.
    pub chosen_cp: i32,
}

/// The look at `chosen` among `scored` (from [`super::look::score_moves`]); `None` when it is
/// not there.
pub fn look_at(scored: &[(Move, i32)], chosen: &Move) -> Option<Look> {
    let &(best, best_cp) = scored.first()?;
    let chosen_cp = scored.iter().find(|(m, _)| m == chosen)?.1;
    Some(Look {
        best,
        best_cp,
        second_cp: scored.get(1).map(|&(_, cp)| cp),
        chosen_cp,
    })
}

impl HumaneCoefficients {
    /// How far below the look's best a chosen move must be for a person rated `rating` to
    /// notice it: the `[humane.notice]` band's where it covers the rating, else `notice_cp`.
    pub fn notice_cp_at(&self, rating: f64) -> f64 {
        self.notice
            .filter(|n| n.covers(rating))
            .map_or(self.notice_cp, |n| n.cp)
    }

    /// The chance that a person played as `rating` lets the error the look found stand: a
    /// logistic fall with the errors' rating (in an easy position, that of a player
    /// [`Self::easy_shift`] higher), times what the Rodent protections of the look's best move
    /// leave at the habits' rating, times the clock's factor; at most 1.
    pub fn miss_chance(
        &self,
        rating: PlayedAs,
        easy: bool,
        kinds: &[Protected],
        clock: Option<ClockLeft>,
    ) -> f64 {
        let seen_as = rating.errors + if easy { self.easy_shift() } else { 0.0 };
        let mut miss = 1.0 - logistic((seen_as - self.miss_mid) / self.miss_width);
        for &kind in kinds {
            miss *= 1.0 - protection(kind, rating.habits, self.protect_width);
        }
        (miss * self.clock_factor(clock)).min(1.0)
    }

    /// The rating points an easy position adds: `miss_width · ln(1/easy_factor)`, so that
    /// where misses are rare (the logistic's tail) an easy one is `easy_factor` times as likely.
    /// Infinite for an `easy_factor` of 0 (an easy error is never missed).
    pub fn easy_shift(&self) -> f64 {
        if self.easy_factor <= 0.0 {
            return f64::INFINITY;
        }
        self.miss_width * (1.0 / self.easy_factor).ln()
    }

    /// The rating below which even an easy error is missed 99 times in 100 (before the Rodent
    /// protections, which are all but gone that far down): the model can get no weaker.
    /// `None` when easy errors are never missed (`easy_factor` 0).
    pub fn weakest_rating(&self) -> Option<f64> {
        let shift = self.easy_shift();
        shift
            .is_finite()
            .then(|| self.miss_mid - shift - self.miss_width * 99f64.ln())
    }

    /// The chance that a person rated `rating` forgets the move `m` in `game`: 1 unless it is
    /// one of Rodent's protected kinds, each of which it then forgets only as far as that
    /// kind's protection at the rating leaves it.
    pub fn forgotten(&self, rating: f64, game: &Game, m: &Move) -> f64 {
        Protected::kinds(game.position(), game.moves().last(), m)
            .into_iter()
            .map(|kind| 1.0 - protection(kind, rating, self.protect_width))
            .product()
    }

    /// 1 with time to spare; from Lichess's alarm `alarm_factor`, rising to `flag_factor` at 0.
    pub fn clock_factor(&self, clock: Option<ClockLeft>) -> f64 {
        let Some(clock) = clock else {
            return 1.0;
        };
        let alarm = alarm_ms(clock.initial_ms);
        if clock.remaining_ms > alarm {
            return 1.0;
        }
        let used = 1.0 - clock.remaining_ms as f64 / alarm as f64;
        self.alarm_factor + (self.flag_factor - self.alarm_factor) * used
    }

    /// The move a person played as `rating` plays where the search chose `chosen`, given the
    /// look's moves `scored` (from [`super::look::score_moves`], best first): when `chosen` is at
    /// least [`Self::notice_cp_at`] below the best and the draw `u` (uniform in [0, 1), the
    /// caller's, from the game's seed) falls beyond the miss chance, the [`Replacement`] (drawn
    /// by `v` when there is a choice); else `chosen`.
    pub fn decide(
        &self,
        rating: PlayedAs,
        game: &Game,
        scored: &[(Move, i32)],
        chosen: Move,
        clock: Option<ClockLeft>,
        (u, v): (f64, f64),
    ) -> Move {
        let Some(look) = look_at(scored, &chosen) else {
            return chosen;
        };
        let notice_cp = self.notice_cp_at(rating.errors);
        if f64::from(look.best_cp - look.chosen_cp) < notice_cp {
            return chosen;
        }
        let easy = look
            .second_cp
            .is_none_or(|second| f64::from(look.best_cp - second) >= self.easy_gap_cp);
        let kinds = Protected::kinds(game.position(), game.moves().last(), &look.best);
        if u < self.miss_chance(rating, easy, &kinds, clock) {
            return chosen;
        }
        match self.replacement {
            // Noticed in an easy position, the error gives way to the one clearly best move:
            // the others are, by definition, clearly worse.
            Replacement::Best => look.best,
            Replacement::Safe if easy => look.best,
            Replacement::Safe => {
                let safe: Vec<Move> = scored
                    .iter()
                    .take_while(|&&(_, cp)| f64::from(look.best_cp - cp) < notice_cp)
                    .map(|&(m, _)| m)
                    .collect();
                // The best is always safe, so the list is never empty.
                let index = ((v * safe.len() as f64) as usize).min(safe.len().saturating_sub(1));
                safe.get(index).copied().unwrap_or(look.best)
            }
        }
    }

    /// The aimed move of a person playing `as` ([`super::aim`]), given the moves `scored` by
    /// the aim's own look (best first); `None` without `[humane.aim]` or moves. The look's best
    /// move stands when a Rodent protection of it holds at the habits' rating (draw
    /// `draws[0]`), as in [`Self::decide`]; else a big loss (at the errors' rating) is
    /// aimed at with its chance (`draws[1]`) and the move whose loss is closest to the aim
    /// (sized by `draws[2]`) is played. Whether the move is aimed at all is
    /// [`AimCoefficients::share`]'s.
    pub fn aim(
        &self,
        played_as: PlayedAs,
        game: &Game,
        scored: &[(Move, i32)],
        clock: Option<ClockLeft>,
        draws: [f64; 3],
    ) -> Option<Move> {
        let aim = self.aim?;
        let &(best, best_cp) = scored.first()?;
        if draws[0] >= self.forgotten(played_as.habits, game, &best) {
            return Some(best);
        }
        let easy = scored
            .get(1)
            .is_none_or(|&(_, second)| f64::from(best_cp - second) >= self.easy_gap_cp);
        let rating = played_as.errors;
        let big_chance = aim.big_chance(
            rating,
            self.clock_factor(clock),
            easy.then_some(self.easy_factor),
        );
        let target = aim.target_loss(rating, draws[1] < big_chance, draws[2]);
        closest(scored, target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use crate::engine::look::score_moves;

    pub(crate) fn knobs() -> HumaneCoefficients {
        HumaneCoefficients {
            look_depth: 3,
            notice_cp: 150.0,
            easy_gap_cp: 150.0,
            miss_mid: 700.0,
            miss_width: 200.0,
            easy_factor: 0.5,
            protect_width: 150.0,
            alarm_factor: 1.5,
            replacement: Replacement::Best,
            flag_factor: 2.5,
            rating_from: ModelRating::Strength,
            rating_at_x0: None,
            rating_per_x: None,
            target_from_level: None,
            habits_at_target: false,
            stumble: None,
            aim: None,
            notice: None,
        }
    }

    fn game(fen: &str, moves: &[&str]) -> Game {
        Game::from_uci_moves(Some(fen), moves, false).unwrap()
    }

    fn uci(game: &Game, m: &str) -> Move {
        let mut g = game.clone();
        g.play_uci(m).unwrap()
    }

    #[test]
    fn an_aimed_move_keeps_a_protected_recapture_and_otherwise_loses_what_it_aims_at() {
        // White's knight has just taken on d5; e6xd5 retakes (a recapture, Rodent's from 1000).
        let g = game(
            "rnbqkb1r/pp3ppp/4p3/3p4/3P4/2N5/PPP1PPPP/R1BQKBNR w KQkq - 0 4",
            &["c3d5"],
        );
        let scored = score_moves(&mut Engine::new(1), &g, 2);
        let best = scored[0].0;
        assert!(
            Protected::kinds(g.position(), g.moves().last(), &best).contains(&Protected::Recapture)
        );
        let always_big = HumaneCoefficients {
            aim: Some(crate::engine::aim::AimCoefficients {
                big_factor: 100.0,
                ..crate::engine::aim::tests::knobs()
            }),
            ..knobs()
        };
        let loss = |m: Move| scored[0].1 - scored.iter().find(|s| s.0 == m).unwrap().1;
        let aimed = |rating: f64, draws| {
            always_big
                .aim(PlayedAs::one(rating), &g, &scored, None, draws)
                .unwrap()
        };
        // A player of 1600 keeps the recapture whatever the big-loss draw says.
        for u in [0.01, 0.5, 0.99] {
            assert_eq!(aimed(1600.0, [u, 0.0, 0.5]), best);
        }
        // At 200 the recapture is protected 13% of the time: past that draw, every draw aims
        // at a big loss, and the move played loses one by the look.
        let played = aimed(200.0, [0.5, 0.0, 0.5]);
        assert!(
            loss(played) >= 200,
            "{} loses {}",
            g.to_uci(played),
            loss(played)
        );
        // Habits of 1600 with the errors of 200 (`habits_at_target`): the recapture is kept.
        let habits = PlayedAs {
            errors: 200.0,
            habits: 1600.0,
        };
        assert_eq!(
            always_big.aim(habits, &g, &scored, None, [0.5, 0.0, 0.5]),
            Some(best)
        );
        // Without the table nothing is aimed.
        assert_eq!(
            knobs().aim(PlayedAs::one(200.0), &g, &scored, None, [0.99, 0.0, 0.5]),
            None
        );
        // An ordinary aim well below the big loss (up to about 90 cp here) plays a small loss.
        let calm = HumaneCoefficients {
            aim: Some(crate::engine::aim::AimCoefficients {
                big_factor: 0.0,
                ..crate::engine::aim::tests::knobs()
            }),
            ..knobs()
        };
        for u in [0.0, 0.3, 0.6] {
            let m = calm
                .aim(PlayedAs::one(200.0), &g, &scored, None, [0.5, 0.5, u])
                .unwrap();
            assert!(loss(m) < 200, "{} loses {}", g.to_uci(m), loss(m));
        }
    }

    #[test]
    fn protected_kinds_follow_rodent() {
        // White's knight has just taken on d5: Black retakes with the e-pawn (a recapture, a
        // pawn capture and a short one) or with the queen from d8 (a recapture, not short).
        let g = game(
            "rnbqkb1r/pp3ppp/4p3/3p4/3P4/2N5/PPP1PPPP/R1BQKBNR w KQkq - 0 4",
            &["c3d5"],
        );
        let pawn_takes = uci(&g, "e6d5");
        let queen_takes = uci(&g, "d8d5");
        let kinds = Protected::kinds(g.position(), g.moves().last(), &pawn_takes);
        assert_eq!(
            kinds,
            vec![
                Protected::Recapture,
                Protected::PawnCapture,
                Protected::ShortCapture
            ]
        );
        let kinds = Protected::kinds(g.position(), g.moves().last(), &queen_takes);
        assert_eq!(kinds, vec![Protected::Recapture]);
        // A quiet move is no kind; a move out of check is an evasion.
        assert!(Protected::kinds(g.position(), None, &uci(&g, "a7a6")).is_empty());
        let in_check = game("4k3/8/8/8/8/8/8/4R1K1 b - - 0 1", &[]);
        let out = uci(&in_check, "e8d7");
        assert_eq!(
            Protected::kinds(in_check.position(), None, &out),
            vec![Protected::CheckEvasion]
        );
        // A queen promotion.
        let promo = game("8/4P3/8/8/8/8/k7/4K3 w - - 0 1", &[]);
        assert_eq!(
            Protected::kinds(promo.position(), None, &uci(&promo, "e7e8q")),
            vec![Protected::QueenPromotion]
        );
    }

    #[test]
    fn each_protection_is_near_full_from_its_rodent_rating_and_weak_well_below() {
        for kind in [
            Protected::Recapture,
            Protected::PawnCapture,
            Protected::ShortCapture,
            Protected::QueenPromotion,
            Protected::CheckEvasion,
        ] {
            let at = protection(kind, kind.from_rating(), 150.0);
            assert!((at - 0.97).abs() < 0.001, "{kind:?}: {at}");
            assert!(protection(kind, kind.from_rating() - 600.0, 150.0) < 0.4);
            assert!(protection(kind, kind.from_rating() + 200.0, 150.0) > 0.99);
        }
        // The recapture is protected first: at 1000 it is, a check evasion not yet.
        assert!(
            protection(Protected::Recapture, 1000.0, 150.0)
                > protection(Protected::CheckEvasion, 1000.0, 150.0) + 0.4
        );
    }

    #[test]
    fn errors_are_missed_less_with_rating_in_easy_positions_and_more_in_time_trouble() {
        let k = knobs();
        let miss = |rating, easy, clock| k.miss_chance(PlayedAs::one(rating), easy, &[], clock);
        let mut last = 1.0;
        for rating in [400.0, 700.0, 1000.0, 1500.0, 2000.0] {
            let m = miss(rating, false, None);
            assert!(m < last, "{rating}: {m}");
            last = m;
            assert!(miss(rating, true, None) < m);
        }
        assert!((miss(700.0, false, None) - 0.5).abs() < 1e-9);
        // Easy: as a player ln(2)·200 = 139 points higher in a hard position; about half as
        // often where misses are rare, nearly always where nearly everything is missed.
        let shift = 200.0 * 2f64.ln();
        assert!((k.easy_shift() - shift).abs() < 1e-9);
        assert!((miss(700.0, true, None) - miss(700.0 + shift, false, None)).abs() < 1e-9);
        let tail = miss(2000.0, true, None) / miss(2000.0, false, None);
        assert!((tail - 0.5).abs() < 0.01, "{tail}");
        assert!(miss(-1000.0, true, None) > 0.99);
        let never = HumaneCoefficients {
            easy_factor: 0.0,
            ..k
        };
        assert_eq!(
            never.miss_chance(PlayedAs::one(-1000.0), true, &[], None),
            0.0
        );
        // 3+0: the alarm at 22.5 s. Above it nothing changes; at it 1.5 times; at 0 2.5 times.
        let clock = |ms| {
            Some(ClockLeft {
                remaining_ms: ms,
                initial_ms: 180_000,
            })
        };
        assert_eq!(alarm_ms(180_000), 22_500);
        assert_eq!(alarm_ms(600_000), 60_000);
        assert_eq!(alarm_ms(30_000), 10_000);
        let base = miss(1200.0, false, None);
        assert_eq!(miss(1200.0, false, clock(60_000)), base);
        assert!((miss(1200.0, false, clock(22_500)) - 1.5 * base).abs() < 1e-9);
        assert!((miss(1200.0, false, clock(0)) - 2.5 * base).abs() < 1e-9);
        assert!(miss(1200.0, false, clock(5_000)) > miss(1200.0, false, clock(15_000)));
        // Never above 1.
        assert!(miss(0.0, false, clock(0)) <= 1.0);
    }

    #[test]
    fn habits_keep_protected_moves_and_leave_every_other_error_to_the_errors_rating() {
        let k = knobs();
        let split = PlayedAs {
            errors: -600.0,
            habits: 900.0,
        };
        let floor = PlayedAs::one(-600.0);
        for kind in [Protected::Recapture, Protected::PawnCapture] {
            let kinds = [kind];
            let want = k.miss_chance(floor, false, &[], None)
                * (1.0 - protection(kind, 900.0, k.protect_width));
            assert!((k.miss_chance(split, false, &kinds, None) - want).abs() < 1e-12);
            assert!(
                k.miss_chance(split, false, &kinds, None)
                    < k.miss_chance(floor, false, &kinds, None),
                "{kind:?}"
            );
        }
        // Unprotected, an error is missed as at the errors' rating, easy or hard.
        for easy in [false, true] {
            assert_eq!(
                k.miss_chance(split, easy, &[], None),
                k.miss_chance(floor, easy, &[], None)
            );
        }
    }

    #[test]
    fn a_clear_recapture_is_played_from_1000_and_often_missed_well_below() {
        // White's knight has just taken on d5; retaking it (with the pawn or the queen) keeps
        // Black's material, every other move loses a piece.
        let g = game(
            "rnbqkb1r/pp3ppp/4p3/3p4/3P4/2N5/PPP1PPPP/R1BQKBNR w KQkq - 0 4",
            &["c3d5"],
        );
        let mut engine = Engine::new(1);
        let scored = score_moves(&mut engine, &g, 3);
        let recapture = scored[0].0;
        assert!(
            recapture.is_capture() && recapture.to() == shakmaty::Square::D5,
            "{scored:?}"
        );
        let kinds = Protected::kinds(g.position(), g.moves().last(), &recapture);
        assert_eq!(kinds.first(), Some(&Protected::Recapture));
        // The search chose a quiet move that leaves the knight.
        let quiet = uci(&g, "a7a6");
        let look = look_at(&scored, &quiet).unwrap();
        assert!(look.best_cp - look.chosen_cp >= 150, "{look:?}");
        let k = knobs();
        // Over many draws: the share of games in which the quiet move stands.
        let stands_as = |played: PlayedAs| {
            (0..1000)
                .filter(|i| {
                    let u = (*i as f64 + 0.5) / 1000.0;
                    k.decide(played, &g, &scored, quiet, None, (u, 0.5)) == quiet
                })
                .count() as f64
                / 1000.0
        };
        let stands = |rating: f64| stands_as(PlayedAs::one(rating));
        assert!(stands(1100.0) < 0.01, "{}", stands(1100.0));
        let low = stands(450.0);
        assert!(low > 0.1 && low < 0.6, "{low}");
        assert!(stands(700.0) < low);
        // A level weakened below people's ratings (errors as at -600) still recaptures as a
        // person of its target does, where its habits are kept there.
        let floor = stands(-600.0);
        assert!(floor > 0.95, "{floor}");
        let kept = stands_as(PlayedAs {
            errors: -600.0,
            habits: 1000.0,
        });
        assert!(kept < 0.1, "{kept}");
        // A move as good as the best is never replaced, whatever the draw.
        assert_eq!(
            k.decide(
                PlayedAs::one(450.0),
                &g,
                &scored,
                recapture,
                None,
                (0.99, 0.5)
            ),
            recapture
        );
        // Noticed, the error gives way to the look's best, or with `safe` to any move the
        // look finds sound, drawn by the second draw: never a move that loses the knight.
        let noticed = |k: &HumaneCoefficients, v: f64| {
            k.decide(PlayedAs::one(450.0), &g, &scored, quiet, None, (0.999, v))
        };
        assert_eq!(noticed(&k, 0.3), recapture);
        let safe = HumaneCoefficients {
            replacement: Replacement::Safe,
            ..k
        };
        let played: std::collections::BTreeSet<String> = (0..20)
            .map(|i| g.to_uci(noticed(&safe, f64::from(i) / 20.0)))
            .collect();
        let best_cp = scored[0].1;
        for m in &played {
            let cp = scored.iter().find(|(s, _)| g.to_uci(*s) == *m).unwrap().1;
            assert!(
                f64::from(best_cp - cp) < safe.notice_cp,
                "{m} loses {}",
                best_cp - cp
            );
        }
        assert!(played.len() >= 2, "{played:?}");
    }

    #[test]
    fn a_notice_band_notices_smaller_errors_only_at_the_ratings_it_covers() {
        // A move the look finds 100-150 cp below its best: under `notice_cp` (150), over the
        // band's 100.
        let mut engine = Engine::new(1);
        let (g, scored, chosen) = [
            "r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R b KQkq - 3 3",
            "r1bqk2r/pppp1ppp/2n2n2/2b1p3/2B1P3/3P1N2/PPP2PPP/RNBQK2R w KQkq - 1 5",
            "rnbqkb1r/ppp2ppp/4pn2/3p4/2PP4/2N5/PP2PPPP/R1BQKBNR w KQkq - 0 4",
        ]
        .into_iter()
        .find_map(|fen| {
            let g = game(fen, &[]);
            let scored = score_moves(&mut engine, &g, 3);
            let best = scored[0].1;
            let chosen = scored
                .iter()
                .find(|&&(_, cp)| (100..150).contains(&(best - cp)))?
                .0;
            Some((g, scored, chosen))
        })
        .expect("a position with a move 100-150 cp below the best");
        let banded = HumaneCoefficients {
            replacement: Replacement::Safe,
            notice: Some(NoticeBand {
                cp: 100.0,
                from_rating: 1000.0,
                to_rating: 1600.0,
            }),
            ..knobs()
        };
        assert_eq!(banded.notice_cp_at(1300.0), 100.0);
        assert_eq!(banded.notice_cp_at(1600.0), banded.notice_cp);
        assert_eq!(banded.notice_cp_at(999.0), banded.notice_cp);
        // A draw beyond any miss chance: noticed inside the band, below notice_cp outside it.
        let best_cp = scored[0].1;
        for i in 0..10 {
            let v = f64::from(i) / 10.0;
            let inside = banded.decide(
                PlayedAs::one(1300.0),
                &g,
                &scored,
                chosen,
                None,
                (0.9999, v),
            );
            assert_ne!(inside, chosen);
            let cp = scored.iter().find(|(m, _)| *m == inside).unwrap().1;
            assert!(
                best_cp - cp < 100,
                "{} loses {}",
                g.to_uci(inside),
                best_cp - cp
            );
            assert_eq!(
                banded.decide(
                    PlayedAs::one(1700.0),
                    &g,
                    &scored,
                    chosen,
                    None,
                    (0.9999, v)
                ),
                chosen
            );
        }
        // A band that ends where it starts is refused by its key.
        let empty = HumaneCoefficients {
            notice: Some(NoticeBand {
                cp: 100.0,
                from_rating: 1600.0,
                to_rating: 1600.0,
            }),
            ..knobs()
        };
        assert_eq!(
            empty.problem().map(|(key, _)| key),
            Some("humane.notice.to_rating")
        );
    }

    #[test]
    fn noticed_in_an_easy_position_the_error_gives_way_to_the_one_clearly_best_move() {
        // Black's queen hangs to the rook: taking it is clearly best, everything else far worse.
        let g = game("4k3/8/8/3q4/8/8/8/3RK3 w - - 0 1", &[]);
        let mut engine = Engine::new(1);
        let scored = score_moves(&mut engine, &g, 3);
        let take = uci(&g, "d1d5");
        assert_eq!(scored[0].0, take, "{scored:?}");
        let safe = HumaneCoefficients {
            replacement: Replacement::Safe,
            ..knobs()
        };
        let error = uci(&g, "e1f2");
        for i in 0..10 {
            let v = f64::from(i) / 10.0;
            assert_eq!(
                safe.decide(PlayedAs::one(450.0), &g, &scored, error, None, (0.999, v)),
                take
            );
        }
    }
}
