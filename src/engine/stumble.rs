//! Stumbles: the big errors of a strong person, which a weakened engine does not make. A strong
//! player keeps its rating with deeper ideas and still, now and then, plays a natural-looking
//! move that loses to something beyond what it sees. The ladder's top levels keep theirs by
//! almost never erring (issue 33: levels 7–12 at 0.2–0.7× people's big losses per 100 moves),
//! the signature players complain of ("plays perfectly, then hangs its queen" is the other
//! half). This model adds what they lack, in the shape people err in:
//!
//! - **Only where a trap is** — a move that a look as deep as the player sees finds as good as
//!   any (within `plausible_cp` of its best) and that the level's own search finds losing
//!   (`trap_cp` or more below the move it chose). A position with several plausible moves of
//!   different value is what Anderson, Kleinberg and Mullainathan (KDD 2016) call difficult,
//!   where people of every rating blunder most; a position with one clearly best move has no
//!   other plausible move, so an easy position never holds a trap.
//! - **Beyond the player's sight** — Rodent's `Blunder()` (Pawel Koziol, `search/blunder.c`)
//!   lets no blunder through within 3 plies of the root from 1600, 4 from 1900, 5 from 2300
//!   ([`sight_plies`]; where the 5-ply look starts is the table's `five_plies_from_rating`):
//!   the shallow look is that deep, so the errors that pass are the quiet, deeper ones a master
//!   misses, never a piece hung in one move.
//! - **From the top's ratings on** — the chance ramps in around `from_rating` (a logistic of
//!   `width`): below it the weakened search already errs more than people do, and the humane
//!   model's second look is what shapes those errors.
//! - **Less where the headroom ends** — from `top_from_rating` up (optional) the chance moves to
//!   `top_chance`: each extra big loss per 100 moves costs a level about 150 Elo, which the
//!   top buys back with search, and the highest levels have less search above them to buy it
//!   with than their targets need (issue 33: "levels 11–12 as the headroom allows").
//! - **Less again at the summit** — from `[humane.stumble.summit]`'s `from_rating` (optional)
//!   the chance moves in a straight line to its `chance` at its `rating`: the highest level has
//!   no search left above it (version 119's level 12 at the 2M node cap played ~2575 against
//!   2760 with the top's chance of 0.5; version 114's, at 0.25, 2754). Straight rather than
//!   logistic so that below `from_rating` the chance is exactly the top's: the level beneath
//!   plays as it did and keeps its calibration games.
//! - **More in time trouble** — times the humane model's clock factor (Lichess's low-time alarm).
//! - **Never away from what the player does not forget** — a chosen recapture, pawn's capture,
//!   short capture, queen promotion or way out of check stands as far as Rodent's protections
//!   hold at the rating (the humane model's [`super::humane::Protected`]): a master who has
//!   seen the recapture plays it, whatever else looks as good.
//!
//! Pure logic over the engine: no I/O; the draw is the caller's (a function of the game's seed)
//! and the engine is cleared before every search, so a game replays exactly.

use serde::{Deserialize, Serialize};
use shakmaty::Move;

use super::look::{score_after_within, score_moves};
use super::ramp::ramp;
use super::{Engine, Game, Limits, SearchObserver, StopOnly};

/// The `[humane.stumble]` table of a coefficients file. Absent: the top never stumbles.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StumbleCoefficients {
    /// The chance, at full ramp and with time to spare, that a player falls for a trap the
    /// position holds (drawn before any look: most moves cost nothing).
    pub chance: f64,
    /// The rating where the ramp is half on.
    pub from_rating: f64,
    /// The ramp's width (rating points per e-fold).
    pub width: f64,
    /// A move looks playable when the shallow look scores it within this of its best.
    pub plausible_cp: f64,
    /// A plausible move is a trap when the level's own search scores it this far below the
    /// move the level chose (the judge's big loss is 200).
    pub trap_cp: f64,
    /// Where the chance turns from `chance` to `top_chance` (half way; the same `width`), and
    /// that chance (both or neither; absent: `chance` all the way up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_from_rating: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_chance: Option<f64>,
    /// The rating from which the look is 5 plies deep (absent: Rodent's 2300). Moved up, the
    /// levels between 2300 and it look 4 plies deep and meet the traps a 2000 player meets:
    /// the lever for one level's rate of big losses that leaves the levels above and below
    /// playing as they did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub five_plies_from_rating: Option<f64>,
    /// The fewest nodes a trap is checked with (absent: the level's own nodes, however few).
    /// Whether a plausible move loses is a fact of the position, not the level's opinion: at
    /// levels 7–9 the level's own search (256–4,000 nodes) calls most plausible moves losing
    /// that a strong search does not (`ladder tune errors --judge-nodes`: 5.6 stumbles per 100
    /// moves at level 8, 0.8 of them losing 200 cp at 500,000 nodes), so its stumbles were
    /// mostly a move of about the same value, not the master's deeper error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_nodes: Option<u64>,
    /// The chance at the summit (absent: the top's all the way up; a table, so last).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summit: Option<Summit>,
}

/// The `[humane.stumble.summit]` table: the chance moves in a straight line from what it is
/// at `from_rating` (the top's) to `chance` at `rating`, and stays there above.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summit {
    pub from_rating: f64,
    pub rating: f64,
    pub chance: f64,
}

impl Summit {
    /// `below` (the chance without the summit) at `rating`, moved toward the summit's chance;
    /// exactly `below` at `from_rating` and under it.
    fn blend(&self, rating: f64, below: f64) -> f64 {
        if rating <= self.from_rating {
            return below;
        }
        let along = ((rating - self.from_rating) / (self.rating - self.from_rating)).min(1.0);
        below + (self.chance - below) * along
    }

    fn problem(&self) -> Option<(&'static str, &'static str)> {
        if !self.from_rating.is_finite() {
            return Some(("humane.stumble.summit.from_rating", "must be a number"));
        }
        if !(self.rating.is_finite() && self.rating > self.from_rating) {
            return Some((
                "humane.stumble.summit.rating",
                "must be a number above humane.stumble.summit.from_rating",
            ));
        }
        if !(self.chance.is_finite() && (0.0..=1.0).contains(&self.chance)) {
            return Some(("humane.stumble.summit.chance", "must be in [0, 1]"));
        }
        None
    }
}

/// One move a level is about to play: what a stumble needs to know of it.
#[derive(Clone, Copy, Debug)]
pub struct Turn<'a> {
    pub game: &'a Game,
    /// The move the level's search (and the humane model) chose.
    pub chosen: Move,
    /// The player's rating (the humane model's).
    pub rating: f64,
    /// The size of the level's own search in this position, which checks a trap.
    pub nodes: u64,
    /// The humane model's clock factor (1 with time to spare).
    pub clock_factor: f64,
    /// The chance that the player forgets the chosen move (the humane model's
    /// [`super::humane::HumaneCoefficients::forgotten`]): 1 unless it is one of Rodent's
    /// protected kinds. A strong player who has seen the recapture, the pawn's capture or the
    /// way out of check plays it; no plausible other move talks it out of it.
    pub forgotten: f64,
}

/// The most plausible moves, best-looking first, checked for a trap by the level's own search
/// (each check costs a search of the level's size).
pub const MAX_TRAPS_CHECKED: usize = 3;

/// Where Rodent's `Blunder()` lets a player see 5 plies deep.
pub const RODENT_FIVE_PLIES_FROM: f64 = 2300.0;

/// The plies near the root within which a player of `rating` lets no blunder through (Rodent's
/// `Blunder()`: 3 from 1600, 4 from 1900, 5 from 2300; 2 below, a player's own reply).
pub fn sight_plies(rating: f64) -> u32 {
    sight_plies_with(rating, RODENT_FIVE_PLIES_FROM)
}

/// [`sight_plies`] with 5 plies from `five_from` (at least 1900: a 5-ply look never comes
/// before the 4-ply one).
fn sight_plies_with(rating: f64, five_from: f64) -> u32 {
    match rating {
        r if r >= five_from.max(1900.0) => 5,
        r if r >= 1900.0 => 4,
        r if r >= 1600.0 => 3,
        _ => 2,
    }
}

impl StumbleCoefficients {
    /// What is wrong with these knobs, as (key, problem), or `None`.
    pub fn problem(&self) -> Option<(&'static str, &'static str)> {
        let positive = |x: f64| x.is_finite() && x > 0.0;
        if !(self.chance.is_finite() && (0.0..=1.0).contains(&self.chance)) {
            return Some(("humane.stumble.chance", "must be in [0, 1]"));
        }
        if !self.from_rating.is_finite() {
            return Some(("humane.stumble.from_rating", "must be a number"));
        }
        match (self.top_from_rating, self.top_chance) {
            (Some(_), None) => {
                return Some((
                    "humane.stumble.top_from_rating",
                    "needs humane.stumble.top_chance beside it",
                ));
            }
            (None, Some(_)) => {
                return Some((
                    "humane.stumble.top_chance",
                    "needs humane.stumble.top_from_rating beside it",
                ));
            }
            (Some(from), _) if !from.is_finite() => {
                return Some(("humane.stumble.top_from_rating", "must be a number"));
            }
            (_, Some(top)) if !(top.is_finite() && (0.0..=1.0).contains(&top)) => {
                return Some(("humane.stumble.top_chance", "must be in [0, 1]"));
            }
            _ => {}
        }
        [
            ("humane.stumble.width", self.width),
            ("humane.stumble.plausible_cp", self.plausible_cp),
            ("humane.stumble.trap_cp", self.trap_cp),
        ]
        .into_iter()
        .find(|&(_, v)| !positive(v))
        .map(|(key, _)| (key, "must be a positive number"))
        .or_else(|| match self.five_plies_from_rating {
            Some(r) if !(r.is_finite() && r >= 1900.0) => Some((
                "humane.stumble.five_plies_from_rating",
                "must be a rating of 1900 or more (4 plies from 1900)",
            )),
            _ => None,
        })
        .or(match self.check_nodes {
            Some(0) => Some((
                "humane.stumble.check_nodes",
                "must be a positive number of nodes",
            )),
            _ => None,
        })
        .or_else(|| self.summit.and_then(|summit| summit.problem()))
    }

    /// The plies the look of a player rated `rating` sees ([`sight_plies`], with this table's
    /// `five_plies_from_rating`).
    pub fn sight_plies(&self, rating: f64) -> u32 {
        sight_plies_with(
            rating,
            self.five_plies_from_rating
                .unwrap_or(RODENT_FIVE_PLIES_FROM),
        )
    }

    /// The chance that a player rated `rating` falls for a trap the position holds, with the
    /// clock's factor `clock_factor` (the humane model's, 1 with time to spare); at most 1.
    pub fn chance_at(&self, rating: f64, clock_factor: f64) -> f64 {
        let chance = match self.top_from_rating.zip(self.top_chance) {
            Some((from, top)) => self.chance + (top - self.chance) * ramp(rating, from, self.width),
            None => self.chance,
        };
        let chance = self.summit.map_or(chance, |s| s.blend(rating, chance));
        (chance * ramp(rating, self.from_rating, self.width) * clock_factor).min(1.0)
    }

    /// The moves other than `chosen` that the look `scored` (best first) finds plausible,
    /// best-looking first.
    pub fn plausible(&self, scored: &[(Move, i32)], chosen: &Move) -> Vec<Move> {
        let Some(&(_, best_cp)) = scored.first() else {
            return Vec::new();
        };
        scored
            .iter()
            .take_while(|&&(_, cp)| f64::from(best_cp) - f64::from(cp) <= self.plausible_cp)
            .filter(|(m, _)| m != chosen)
            .map(|&(m, _)| m)
            .collect()
    }

    /// The move the player plays instead of `turn.chosen` when it stumbles, or `None` (no
    /// stumble drawn, or no trap within [`MAX_TRAPS_CHECKED`]): `u` is the caller's uniform
    /// draw in [0, 1), `look` a [`score_moves`] of the game already made and its depth (used
    /// when it is the player's sight, which saves making it again). The searches that check a
    /// trap stop when the move's own search must (`clock`: its observer, asked only whether to
    /// stop); a check the clock cut short decides nothing, and the chosen move stands: with no
    /// time for a second thought there is no stumble either, and the level never loses on time
    /// for a check (each costs a search of the level's size).
    pub fn stumble(
        &self,
        engine: &mut Engine,
        turn: Turn,
        u: f64,
        look: Option<(u32, &[(Move, i32)])>,
        clock: &mut dyn SearchObserver,
    ) -> Option<Move> {
        let Turn {
            game,
            chosen,
            rating,
            nodes,
            clock_factor,
            forgotten,
        } = turn;
        if u >= self.chance_at(rating, clock_factor) * forgotten {
            return None;
        }
        let sight = self.sight_plies(rating);
        let scored = match look {
            Some((depth, scored)) if depth == sight => scored.to_vec(),
            _ => score_moves(engine, game, sight),
        };
        let candidates = self.plausible(&scored, &chosen);
        if candidates.is_empty() {
            return None;
        }
        let limits = Limits {
            nodes: Some(nodes.max(self.check_nodes.unwrap_or(1)).max(1)),
            depth: None,
        };
        // Each search on a cleared table: the scores are a function of the game alone (unless
        // the clock cuts one, and then nothing is decided).
        let mut deep = |m: Move| {
            engine.new_game();
            let cp = score_after_within(engine, game, m, limits, &mut StopOnly(&mut *clock));
            (!clock.should_stop(0)).then_some(cp)
        };
        let chosen_cp = deep(chosen)?;
        for m in candidates.into_iter().take(MAX_TRAPS_CHECKED) {
            if f64::from(chosen_cp) - f64::from(deep(m)?) >= self.trap_cp {
                return Some(m);
            }
        }
        None
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Knobs for tests: a chance of 0.3 from 1600, no taper.
    pub(crate) fn knobs() -> StumbleCoefficients {
        StumbleCoefficients {
            chance: 0.3,
            from_rating: 1600.0,
            width: 60.0,
            plausible_cp: 60.0,
            trap_cp: 200.0,
            top_from_rating: None,
            top_chance: None,
            five_plies_from_rating: None,
            check_nodes: None,
            summit: None,
        }
    }

    #[test]
    fn sight_follows_rodents_root_protection() {
        assert_eq!(sight_plies(1200.0), 2);
        assert_eq!(sight_plies(1600.0), 3);
        assert_eq!(sight_plies(1899.0), 3);
        assert_eq!(sight_plies(1900.0), 4);
        assert_eq!(sight_plies(2300.0), 5);
        assert_eq!(sight_plies(2900.0), 5);
        // The table's own, with Rodent's when the key is absent.
        let k = knobs();
        assert_eq!(k.sight_plies(2340.0), 5);
        let later = StumbleCoefficients {
            five_plies_from_rating: Some(2400.0),
            ..k
        };
        assert_eq!(later.sight_plies(2130.0), 4);
        assert_eq!(later.sight_plies(2340.0), 4);
        assert_eq!(later.sight_plies(2400.0), 5);
        assert_eq!(later.sight_plies(1700.0), 3);
    }

    #[test]
    fn the_chance_ramps_in_at_the_top_and_grows_in_time_trouble() {
        let k = knobs();
        assert!(k.chance_at(1200.0, 1.0) < 0.01 * k.chance);
        assert!((k.chance_at(1600.0, 1.0) - k.chance / 2.0).abs() < 1e-9);
        assert!(k.chance_at(2300.0, 1.0) > 0.99 * k.chance);
        assert!(k.chance_at(2300.0, 2.5) > 2.0 * k.chance_at(2300.0, 1.0));
        assert!(k.chance_at(2300.0, 100.0) <= 1.0);
        let off = StumbleCoefficients { chance: 0.0, ..k };
        assert_eq!(off.chance_at(2800.0, 2.5), 0.0);
    }

    #[test]
    fn the_chance_turns_to_the_tops_own_where_the_headroom_ends() {
        let k = knobs();
        let tapered = StumbleCoefficients {
            top_from_rating: Some(2650.0),
            top_chance: Some(0.1),
            ..k
        };
        // Below the turn, as without it.
        assert!((tapered.chance_at(2300.0, 1.0) - k.chance_at(2300.0, 1.0)).abs() < 1e-3);
        // Half way at the turn, the top's own chance above it; the clock still counts.
        assert!((tapered.chance_at(2650.0, 1.0) - 0.2).abs() < 1e-6);
        assert!((tapered.chance_at(3000.0, 1.0) - 0.1).abs() < 1e-3);
        assert!(tapered.chance_at(3000.0, 2.5) > 2.0 * tapered.chance_at(3000.0, 1.0));
        // A top chance above the chance raises it instead.
        let raised = StumbleCoefficients {
            top_chance: Some(0.6),
            ..tapered
        };
        assert!(raised.chance_at(3000.0, 1.0) > 0.59);
    }

    #[test]
    fn the_chance_falls_again_at_the_summit_and_not_below_it() {
        let top = StumbleCoefficients {
            chance: 1.0,
            from_rating: 1700.0,
            top_from_rating: Some(2450.0),
            top_chance: Some(0.5),
            ..knobs()
        };
        let summit = StumbleCoefficients {
            summit: Some(Summit {
                from_rating: 2600.0,
                rating: 2760.0,
                chance: 0.2,
            }),
            ..top
        };
        // The level beneath the summit plays exactly as without it (its games still count).
        for rating in [1500.0, 2130.0, 2550.0, 2600.0] {
            assert_eq!(summit.chance_at(rating, 1.0), top.chance_at(rating, 1.0));
            assert_eq!(summit.chance_at(rating, 2.5), top.chance_at(rating, 2.5));
        }
        // Falling all the way to the summit's chance, and staying there.
        let at = |r: f64| summit.chance_at(r, 1.0);
        assert!(at(2650.0) < top.chance_at(2650.0, 1.0));
        assert!(at(2700.0) < at(2650.0) && at(2700.0) > 0.2);
        assert!((at(2760.0) - 0.2).abs() < 1e-3);
        assert!((at(3000.0) - 0.2).abs() < 1e-3);
        // The clock still counts at the summit.
        assert!(summit.chance_at(2760.0, 2.5) > 2.0 * at(2760.0));
    }

    #[test]
    fn bad_knobs_are_named() {
        let named = |k: StumbleCoefficients| k.problem().map(|(key, _)| key);
        assert_eq!(named(knobs()), None);
        let k = knobs();
        assert_eq!(
            named(StumbleCoefficients { chance: 1.5, ..k }),
            Some("humane.stumble.chance")
        );
        assert_eq!(
            named(StumbleCoefficients {
                from_rating: f64::NAN,
                ..k
            }),
            Some("humane.stumble.from_rating")
        );
        assert_eq!(
            named(StumbleCoefficients { width: 0.0, ..k }),
            Some("humane.stumble.width")
        );
        assert_eq!(
            named(StumbleCoefficients { trap_cp: -5.0, ..k }),
            Some("humane.stumble.trap_cp")
        );
        assert_eq!(
            named(StumbleCoefficients {
                top_from_rating: Some(2650.0),
                ..k
            }),
            Some("humane.stumble.top_from_rating")
        );
        assert_eq!(
            named(StumbleCoefficients {
                top_chance: Some(0.2),
                ..k
            }),
            Some("humane.stumble.top_chance")
        );
        assert_eq!(
            named(StumbleCoefficients {
                top_from_rating: Some(2650.0),
                top_chance: Some(-0.2),
                ..k
            }),
            Some("humane.stumble.top_chance")
        );
        for bad in [1800.0, f64::INFINITY, f64::NAN] {
            assert_eq!(
                named(StumbleCoefficients {
                    five_plies_from_rating: Some(bad),
                    ..k
                }),
                Some("humane.stumble.five_plies_from_rating")
            );
        }
        assert_eq!(
            named(StumbleCoefficients {
                check_nodes: Some(0),
                ..k
            }),
            Some("humane.stumble.check_nodes")
        );
        let summit = |from_rating: f64, rating: f64, chance: f64| StumbleCoefficients {
            summit: Some(Summit {
                from_rating,
                rating,
                chance,
            }),
            ..k
        };
        assert_eq!(named(summit(2600.0, 2760.0, 0.2)), None);
        assert_eq!(
            named(summit(f64::NAN, 2760.0, 0.2)),
            Some("humane.stumble.summit.from_rating")
        );
        assert_eq!(
            named(summit(2600.0, 2600.0, 0.2)),
            Some("humane.stumble.summit.rating")
        );
        assert_eq!(
            named(summit(2600.0, 2760.0, 1.2)),
            Some("humane.stumble.summit.chance")
        );
    }

    /// A level of a few hundred nodes calls moves losing that a real search does not; with
    /// `check_nodes` every trap is one that a search of that size finds losing.
    #[test]
    fn a_trap_is_checked_with_at_least_the_check_nodes() {
        const CHECK: u64 = 20_000;
        let weak = StumbleCoefficients {
            chance: 1.0,
            plausible_cp: 80.0,
            ..knobs()
        };
        let checked = StumbleCoefficients {
            check_nodes: Some(CHECK),
            ..weak
        };
        let mut engine = Engine::new(1);
        let mut trap_of = |k: StumbleCoefficients, game: &Game, chosen: Move| {
            let turn = Turn {
                game,
                chosen,
                rating: 2000.0,
                nodes: 300,
                clock_factor: 1.0,
                forgotten: 1.0,
            };
            k.stumble(&mut engine, turn, 0.0, None, &mut crate::engine::NoStop)
        };
        let mut judge = Engine::new(1);
        let mut loss_at_check = |game: &Game, chosen: Move, trap: Move| {
            let limits = Limits {
                nodes: Some(CHECK),
                depth: None,
            };
            let mut score = |m| {
                judge.new_game();
                crate::engine::look::score_after(&mut judge, game, m, limits)
            };
            score(chosen) - score(trap)
        };
        // The positions of a game played by the 3-ply look's best moves.
        let mut game = Game::startpos();
        let mut looker = Engine::new(1);
        let (mut weak_traps, mut mirages, mut checked_traps) = (0, 0, 0);
        for _ in 0..50 {
            let Some(&(chosen, _)) = score_moves(&mut looker, &game, 3).first() else {
                break;
            };
            if let Some(trap) = trap_of(weak, &game, chosen) {
                weak_traps += 1;
                mirages +=
                    usize::from(f64::from(loss_at_check(&game, chosen, trap)) < weak.trap_cp);
            }
            if let Some(trap) = trap_of(checked, &game, chosen) {
                checked_traps += 1;
                let loss = loss_at_check(&game, chosen, trap);
                assert!(
                    f64::from(loss) >= checked.trap_cp,
                    "{} loses only {loss} cp at {CHECK} nodes",
                    game.to_uci(trap)
                );
            }
            game.play(chosen);
        }
        assert!(
            mirages > 0,
            "{weak_traps} traps at 300 nodes, all real at {CHECK}"
        );
        // The checked traps are real ones, not none at all.
        assert!(
            checked_traps > 0,
            "no trap at {CHECK} nodes in 50 positions"
        );
    }

    #[test]
    fn only_moves_near_the_looks_best_are_plausible_and_never_the_chosen_one() {
        let game = Game::startpos();
        let moves = game.legal_moves();
        let scored: Vec<(Move, i32)> = vec![
            (moves[0], 40),
            (moves[1], 10),
            (moves[2], -20),
            (moves[3], -21),
            (moves[4], -300),
        ];
        let k = knobs();
        assert_eq!(k.plausible(&scored, &moves[4]), moves[..3].to_vec());
        assert_eq!(k.plausible(&scored, &moves[0]), moves[1..3].to_vec());
        assert!(k.plausible(&[], &moves[0]).is_empty());
    }

    #[test]
    fn no_stumble_drawn_no_look_and_none_in_a_forced_position() {
        let k = StumbleCoefficients {
            chance: 1.0,
            ..knobs()
        };
        let mut engine = Engine::new(1);
        // A player of 2400 (on the ramp's top) with the level's 2,000 nodes and time to spare.
        let mut stumble = |k: StumbleCoefficients, game: &Game, chosen: Move, u: f64| {
            let turn = Turn {
                game,
                chosen,
                rating: 2400.0,
                nodes: 2000,
                clock_factor: 1.0,
                forgotten: 1.0,
            };
            k.stumble(&mut engine, turn, u, None, &mut crate::engine::NoStop)
        };
        let game = Game::startpos();
        let chosen = game.legal_moves()[0];
        // A draw beyond the chance: nothing happens, whatever the position.
        assert_eq!(stumble(k, &game, chosen, 0.999_999), None);
        assert_eq!(
            stumble(StumbleCoefficients { chance: 0.0, ..k }, &game, chosen, 0.0),
            None
        );
        // One legal move (the king must take back): nothing else is plausible.
        let forced = Game::new(Some("7k/8/8/8/8/8/6q1/7K w - - 0 1"), false).expect("legal");
        let only = forced.legal_moves();
        assert_eq!(only.len(), 1);
        assert_eq!(stumble(k, &forced, only[0], 0.0), None);
    }
}
