//! The conduct a person expects of an opponent, per account (accounts.toml): how many
//! takebacks a game grants, how draw offers are answered, and when a lost game is resigned.
//! Pure decisions; the tracker applies them and the game actor posts them.
//!
//! - Takebacks: up to `takebacks` per game (default 2 at levels ≤ 3, where beginners ask for
//!   them, 0 above), where the server lets an opponent propose one. Lichess does not today:
//!   `PrefApi.setBot` sets a bot's takeback preference to never, and `Takebacker` needs both
//!   players' preferences to allow it; the sandbox does.
//! - Draw offers (`accept_draws`, default on): answered from the level's own evaluation of the
//!   position (noise included: a weak level misjudges like a weak player) — accepted late in
//!   the game (from move [`LATE_MOVE`]) when the position is about equal or worse for us (the
//!   "about equal" band is wider at lower levels), accepted earlier only when clearly worse
//!   ([`WORSE_CP`]), declined when clearly better, and declined with nothing to judge by.
//! - Resignation (`resign`, default on at levels ≥ [`RESIGN_FROM_LEVEL`], refused below
//!   [`NEVER_RESIGN_BELOW`] where the opponent must learn to mate): after
//!   [`RESIGN_MOVES`] consecutive searches at [`RESIGN_CP`] or worse, or a mate against us.

use crate::engine::Score;

/// An account's conduct settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conduct {
    /// Takebacks granted per game.
    pub takebacks: u32,
    /// Answer draw offers from the evaluation (`false`: decline every one).
    pub accept_draws: bool,
    /// Resign clearly lost positions.
    pub resign: bool,
}

/// Levels at or below this grant takebacks by default.
pub const TAKEBACK_LEVELS: f64 = 3.0;
/// Takebacks per game at those levels by default.
pub const DEFAULT_TAKEBACKS: u32 = 2;
/// Levels from which resigning is on by default.
pub const RESIGN_FROM_LEVEL: f64 = 6.0;
/// Levels below this never resign (configuring it is an error).
pub const NEVER_RESIGN_BELOW: f64 = 3.0;
/// Resign at this evaluation or worse (centipawns, our view) ...
pub const RESIGN_CP: i32 = 600;
/// ... held over this many consecutive moves.
pub const RESIGN_MOVES: usize = 3;
/// From this move number on, a draw offer in an about-equal position is accepted.
pub const LATE_MOVE: u32 = 30;
/// Before that, a draw offer is accepted only at this evaluation or worse.
pub const WORSE_CP: i32 = -200;

impl Conduct {
    /// The defaults of a level.
    pub fn defaults_for(level: f64) -> Conduct {
        Conduct {
            takebacks: if level <= TAKEBACK_LEVELS {
                DEFAULT_TAKEBACKS
            } else {
                0
            },
            accept_draws: true,
            resign: level >= RESIGN_FROM_LEVEL,
        }
    }

    /// Declines every offer and never resigns (the daemon's behaviour before conduct existed;
    /// tests and tools that build a tracker directly).
    pub fn reserved() -> Conduct {
        Conduct {
            takebacks: 0,
            accept_draws: false,
            resign: false,
        }
    }
}

/// The evaluation band counted as "about equal" at a level: ±120 cp at level 1 down to ±30 cp
/// at level 10 (weaker players see fewer winning chances in a small edge).
pub fn equal_band_cp(level: f64) -> i32 {
    let l = if level.is_finite() {
        level.clamp(1.0, 10.0)
    } else {
        5.0
    };
    (30.0 + 10.0 * (10.0 - l)).round() as i32
}

/// Whether to accept a draw offer, given our latest evaluation (our point of view) and the
/// move number.
pub fn accept_draw(conduct: &Conduct, level: f64, fullmove: u32, score: Option<Score>) -> bool {
    if !conduct.accept_draws {
        return false;
    }
    match score {
        None => false,
        Some(Score::Mate(n)) => n < 0,
        Some(Score::Cp(cp)) if fullmove >= LATE_MOVE => cp <= equal_band_cp(level),
        Some(Score::Cp(cp)) => cp <= WORSE_CP,
    }
}

/// Follows our evaluations move by move and says when to resign.
#[derive(Clone, Copy, Debug, Default)]
pub struct ResignWatch {
    lost_in_a_row: usize,
}

impl ResignWatch {
    /// One more search's evaluation; `true` if the game should be resigned now.
    pub fn on_score(&mut self, conduct: &Conduct, score: Score) -> bool {
        let lost = match score {
            Score::Mate(n) => n < 0,
            Score::Cp(cp) => cp <= -RESIGN_CP,
        };
        self.lost_in_a_row = if lost { self.lost_in_a_row + 1 } else { 0 };
        conduct.resign
            && (self.lost_in_a_row >= RESIGN_MOVES || (lost && matches!(score, Score::Mate(_))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_grant_takebacks_low_and_resign_high() {
        assert_eq!(Conduct::defaults_for(1.0).takebacks, 2);
        assert_eq!(Conduct::defaults_for(3.0).takebacks, 2);
        assert_eq!(Conduct::defaults_for(4.0).takebacks, 0);
        assert!(!Conduct::defaults_for(1.0).resign);
        assert!(!Conduct::defaults_for(5.0).resign);
        assert!(Conduct::defaults_for(6.0).resign);
        assert!(Conduct::defaults_for(10.0).accept_draws);
    }

    #[test]
    fn draws_follow_the_evaluation_the_move_number_and_the_level() {
        let c = Conduct::defaults_for(5.0);
        // Clearly better: never.
        assert!(!accept_draw(&c, 5.0, 60, Some(Score::Cp(300))));
        assert!(!accept_draw(&c, 5.0, 60, Some(Score::Mate(4))));
        // About equal: late yes, early no.
        assert!(accept_draw(&c, 5.0, 40, Some(Score::Cp(20))));
        assert!(!accept_draw(&c, 5.0, 10, Some(Score::Cp(20))));
        // Clearly worse: at any time.
        assert!(accept_draw(&c, 5.0, 10, Some(Score::Cp(-250))));
        assert!(accept_draw(&c, 5.0, 10, Some(Score::Mate(-3))));
        // A small edge is "equal" to a weak level, not to a strong one.
        assert!(accept_draw(&c, 1.0, 40, Some(Score::Cp(100))));
        assert!(!accept_draw(&c, 10.0, 40, Some(Score::Cp(100))));
        // Nothing to judge by, or switched off: decline.
        assert!(!accept_draw(&c, 5.0, 40, None));
        let off = Conduct {
            accept_draws: false,
            ..c
        };
        assert!(!accept_draw(&off, 5.0, 40, Some(Score::Cp(-900))));
    }

    #[test]
    fn resigns_after_consecutive_lost_evaluations_only_when_allowed() {
        let on = Conduct::defaults_for(8.0);
        let mut w = ResignWatch::default();
        assert!(!w.on_score(&on, Score::Cp(-700)));
        assert!(!w.on_score(&on, Score::Cp(-700)));
        assert!(
            !w.on_score(&on, Score::Cp(-100)),
            "a better move resets the count"
        );
        assert!(!w.on_score(&on, Score::Cp(-700)));
        assert!(!w.on_score(&on, Score::Cp(-650)));
        assert!(w.on_score(&on, Score::Cp(-800)));
        let mut w = ResignWatch::default();
        assert!(w.on_score(&on, Score::Mate(-2)));
        let off = Conduct::defaults_for(1.0);
        let mut w = ResignWatch::default();
        for _ in 0..10 {
            assert!(!w.on_score(&off, Score::Mate(-1)));
        }
    }
}
