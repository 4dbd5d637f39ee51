//! The level player's second look: where the humane error model
//! ([`crate::engine::humane`]) meets the game. After the level's own search has chosen a move,
//! a clean shallow search scores every legal move, and the model decides, by the position, the
//! level's target rating and the clock, whether the player notices that the chosen move loses
//! material and plays the look's best instead; at the top, whether the player stumbles into a
//! trap ([`crate::engine::stumble`]) where it chose well; at the bottom, whether the move is
//! aimed at a loss drawn as people's are ([`crate::engine::aim`]) instead. Its draws are functions of the game's
//! seed and ply, and the look's engine is cleared before every look, so a game replays exactly
//! from its seed; the level's own engine (and its table) is never touched.

use shakmaty::Move;

use crate::engine::humane::{ClockLeft, HumaneCoefficients, PlayedAs};
use crate::engine::look::score_moves;
use crate::engine::stumble::Turn;
use crate::engine::{Engine, Evaluator, Game, SearchConstants, SearchObserver};
use crate::seed::mix64;

/// The look's table (MB): a few thousand nodes per move need no more.
const LOOK_HASH_MB: usize = 1;

/// The second look of one level in one game.
pub struct SecondLook {
    engine: Engine,
    model: HumaneCoefficients,
    /// The ratings the model plays the level at ([`PlayedAs`]).
    rating: PlayedAs,
    /// What the last review decided.
    last: Verdict,
}

/// What the second look made of the search's move: the rule that decided the move played (a
/// census of a level's errors counts them, `ladder tune errors`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The search's move stands.
    Kept,
    /// The player noticed that the search's move loses material and played another.
    Noticed,
    /// The player stumbled into a trap beyond its sight, instead of the search's move.
    Stumbled { instead_of: Move },
    /// The move was aimed at a drawn loss (which may be the search's move itself).
    Aimed,
}

impl SecondLook {
    /// A look with the level's own evaluation and search (what its coefficients pin), at full
    /// strength.
    pub fn new(
        model: HumaneCoefficients,
        rating: PlayedAs,
        evaluator: Evaluator,
        constants: SearchConstants,
    ) -> SecondLook {
        let mut engine = Engine::with_evaluator(LOOK_HASH_MB, evaluator);
        engine.set_search_constants(constants);
        SecondLook {
            engine,
            model,
            rating,
            last: Verdict::Kept,
        }
    }

    /// What the last [`Self::review`] decided.
    pub fn last_verdict(&self) -> Verdict {
        self.last
    }

    /// The move played where the level's search chose `chosen` in `game` (`seed`: the game's;
    /// `nodes`: the size of the level's search there, which checks a stumble's trap).
    pub fn review(
        &mut self,
        game: &Game,
        chosen: Move,
        seed: u64,
        clock: Option<ClockLeft>,
        nodes: u64,
        observer: &mut dyn SearchObserver,
    ) -> Move {
        self.last = Verdict::Kept;
        if game.legal_moves().len() < 2 {
            return chosen;
        }
        let ply = game.moves().len();
        // At the bottom a move may be aimed instead, by its own look and draws.
        if let Some(aim) = self.model.aim {
            let [aimed, draws @ ..] = AIM_SALTS.map(|salt| draw(seed ^ salt, ply));
            if aimed < aim.share(self.rating.errors) {
                let sight = score_moves(&mut self.engine, game, aim.look_depth);
                self.last = Verdict::Aimed;
                return self
                    .model
                    .aim(self.rating, game, &sight, clock, draws)
                    .unwrap_or(chosen);
            }
        }
        let scored = score_moves(&mut self.engine, game, self.model.look_depth);
        // Independent draws: whether the error stands, which move replaces it, whether the
        // player stumbles.
        let draws = (draw(seed, ply), draw(seed ^ 0x9e37_79b9_7f4a_7c15, ply));
        let played = self
            .model
            .decide(self.rating, game, &scored, chosen, clock, draws);
        if played != chosen {
            self.last = Verdict::Noticed;
            return played;
        }
        let Some(stumble) = self.model.stumble else {
            return chosen;
        };
        let turn = Turn {
            game,
            chosen,
            rating: self.rating.errors,
            nodes,
            clock_factor: self.model.clock_factor(clock),
            forgotten: self.model.forgotten(self.rating.habits, game, &chosen),
        };
        let trap = stumble.stumble(
            &mut self.engine,
            turn,
            draw(seed ^ 0x5851_f42d_4c95_7f2d, ply),
            Some((self.model.look_depth, &scored)),
            observer,
        );
        match trap {
            Some(trap) => {
                self.last = Verdict::Stumbled { instead_of: chosen };
                trap
            }
            None => chosen,
        }
    }
}

/// What makes the aimed move's four draws (whether aimed, protected, big, how big) differ from
/// each other and from the model's other draws.
const AIM_SALTS: [u64; 4] = [
    0x510e_527f_ade6_82d1,
    0x9b05_688c_2b3e_6c1f,
    0x1f83_d9ab_fb41_bd6b,
    0x5be0_cd19_137e_2179,
];

/// The uniform draw in [0, 1) of the move at `ply` of the game with `seed`.
fn draw(seed: u64, ply: usize) -> f64 {
    let bits = mix64(
        mix64(seed ^ 0x3c6e_f372_fe94_f82b) ^ (ply as u64).wrapping_mul(0xa54f_f53a_5f1d_36f1),
    );
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::humane::Protected;
    use crate::engine::look::score_after;
    use crate::engine::stumble::{StumbleCoefficients, sight_plies};
    use crate::engine::{Limits, NoStop};
    use crate::levels::{Coefficients, LevelParams};
    use crate::player::LevelPlayer;
    use crate::player::tests::self_play;

    /// The candidate coefficients with the model on (the measurements' file).
    const CANDIDATE: &str = include_str!("../../calibration/humane/coefficients.toml");

    fn candidate() -> Coefficients {
        Coefficients::parse(CANDIDATE, "calibration/humane/coefficients.toml").unwrap()
    }

    /// The candidate was version 41 with the model on; the recalibration that ships the model
    /// starts from it, so the shipped file may have the model on or off.
    #[test]
    fn the_candidate_is_version_41_with_the_model_on() {
        let mut c = candidate();
        assert!(c.humane.is_some());
        let v41 = Coefficients::parse(crate::levels::tests::VERSION_41, "v41").unwrap();
        assert!(v41.humane.is_none(), "version 41 has it off");
        c.humane = None;
        assert_eq!(c, v41);
    }

    #[test]
    fn a_bad_humane_knob_is_refused_by_its_key_and_line() {
        let refusal = |text: &str| Coefficients::parse(text, "c.toml").unwrap_err().to_string();
        // Refused, naming `key` and the line that starts with `line_start`.
        let refused_at = |text: &str, key: &str, line_start: &str| {
            let e = refusal(text);
            assert!(e.contains(key), "{e}");
            let line = text
                .lines()
                .position(|l| l.starts_with(line_start))
                .unwrap()
                + 1;
            assert!(e.contains(&format!(":{line}")), "{e}");
            e
        };
        // Read, and read back the same from what it writes.
        let reads_back = |text: &str| {
            let parsed = Coefficients::parse(text, "c.toml").unwrap();
            assert_eq!(
                Coefficients::parse(&parsed.to_toml(), "again.toml").unwrap(),
                parsed
            );
            parsed
        };
        let text = CANDIDATE.replace("easy_factor = 0.1", "easy_factor = 1.5");
        let e = refused_at(&text, "humane.easy_factor", "easy_factor");
        assert!(e.contains("[0, 1]"), "{e}");
        let e = refusal(&CANDIDATE.replace("look_depth = 5", "look_depth = 0"));
        assert!(e.contains("humane.look_depth"), "{e}");
        // The model's own line comes whole.
        let e =
            refusal(&CANDIDATE.replace("look_depth = 5", "look_depth = 5\nrating_per_x = 200.0"));
        assert!(e.contains("humane.rating_per_x"), "{e}");
        assert!(e.contains("rating_at_x0"), "{e}");
        let text = CANDIDATE.replace(
            "look_depth = 5",
            "look_depth = 5\nrating_per_x = 200.0\nrating_at_x0 = 100.0",
        );
        let line = Coefficients::parse(&text, "c.toml").unwrap();
        let level3 = LevelParams::new(&line, 3.0);
        let want = 100.0 + 200.0 * level3.exponent;
        assert!((level3.humane.unwrap().1.errors - want).abs() < 1e-9);
        // A model that plays the targets has no line: a line beside it is refused by name,
        // and an unknown source is refused by its key.
        let e = refusal(&CANDIDATE.replace(
            "look_depth = 5",
            "look_depth = 5\nrating_from = \"target\"\nrating_at_x0 = 100.0\nrating_per_x = 200.0",
        ));
        assert!(
            e.contains("humane.rating_at_x0") && e.contains("target"),
            "{e}"
        );
        let e = refusal(
            &CANDIDATE.replace("look_depth = 5", "look_depth = 5\ntarget_from_level = 4.0"),
        );
        assert!(
            e.contains("humane.target_from_level") && e.contains("lower"),
            "{e}"
        );
        let e =
            refusal(&CANDIDATE.replace("look_depth = 5", "look_depth = 5\nrating_from = \"x\""));
        assert!(e.contains("rating_from"), "{e}");
        let targets = Coefficients::parse(
            &CANDIDATE.replace("look_depth = 5", "look_depth = 5\nrating_from = \"target\""),
            "t",
        )
        .unwrap();
        for level in [1.0, 6.0, 10.0] {
            let model = LevelParams::new(&targets, level).humane.unwrap().1.errors;
            assert_eq!(model, targets.targets().target(level), "level {level}");
        }
        let text = CANDIDATE.replace("notice_cp = 150.0", "notise_cp = 150.0");
        assert!(Coefficients::parse(&text, "c.toml").is_err());
        // The stumbles' table, nested in [humane], is named down to its key and line.
        let with = CANDIDATE.replace("chance = 1.0", "chance = 0.5");
        let parsed = reads_back(&with);
        assert_eq!(parsed.humane.unwrap().stumble.unwrap().chance, 0.5);
        let text = with.replace("trap_cp = 200.0", "trap_cp = 0.0");
        refused_at(&text, "humane.stumble.trap_cp", "trap_cp");
        // So is the notice band: it reads back, and a bad key is named with its line.
        let band = "[humane.notice]\ncp = 100.0\nfrom_rating = 1000.0\nto_rating = 1600.0\n\n";
        let with = with.replacen(
            "\n[humane.stumble]",
            &format!("\n{band}[humane.stumble]"),
            1,
        );
        let parsed = reads_back(&with);
        assert_eq!(parsed.humane.unwrap().notice_cp_at(1300.0), 100.0);
        let text = with.replace("to_rating = 1600.0", "to_rating = 900.0");
        refused_at(&text, "humane.notice.to_rating", "to_rating");
    }

    #[test]
    fn with_the_model_on_a_game_replays_from_its_seed() {
        let c = candidate();
        let game = self_play(&c, 1.0, 7, 40);
        assert_eq!(game, self_play(&c, 1.0, 7, 40));
        assert_ne!(game, self_play(&c, 1.0, 8, 40));
    }

    #[test]
    fn the_bottom_keeps_its_material_more_often_with_the_model_on() {
        // White's knight has just taken the d5 pawn; e6xd5 wins it back. A move keeps the
        // material when a clean look scores it within the notice threshold of its best.
        let game = Game::from_uci_moves(
            Some("rnbqkb1r/pp3ppp/4p3/3p4/3P4/2N5/PPP1PPPP/R1BQKBNR w KQkq - 0 4"),
            &["c3d5"],
            false,
        )
        .unwrap();
        let on = candidate();
        let notice_cp = on.humane.expect("the model is on").notice_cp;
        let scored = score_moves(&mut Engine::new(1), &game, 3);
        let sound = |m: Move| {
            let cp = scored
                .iter()
                .find(|(s, _)| *s == m)
                .map_or(i32::MIN, |s| s.1);
            f64::from(scored[0].1) - f64::from(cp) < notice_cp
        };
        let kept = |coefficients: &Coefficients, level: f64| {
            (0..40u64)
                .filter(|&seed| {
                    let mut player = LevelPlayer::new(LevelParams::new(coefficients, level), seed);
                    sound(player.choose(&game, &mut NoStop).best_move.unwrap())
                })
                .count()
        };
        let off = Coefficients::parse(crate::levels::tests::VERSION_41, "v41").unwrap();
        let level1 = (kept(&off, 1.0), kept(&on, 1.0));
        assert!(level1.1 > level1.0, "level 1 off/on: {level1:?}");
        // Calibration pushing level 1 further down, where its search is already as weak as
        // the noise cap allows, still weakens it: the model plays the rating of its x.
        let mut below = on.clone();
        below.offsets.insert("1".into(), -4.0);
        let params = (LevelParams::new(&on, 1.0), LevelParams::new(&below, 1.0));
        assert_eq!(params.0.nodes, params.1.nodes);
        assert_eq!(params.0.noise_cp, params.1.noise_cp);
        let rating = |p: &LevelParams| p.humane.as_ref().expect("on").1.errors;
        assert!(rating(&params.1) < rating(&params.0) - 500.0);
        let pushed = kept(&below, 1.0);
        assert!(
            pushed < level1.1,
            "level 1 at its offset/pushed down: {level1:?} {pushed}"
        );
        // From the recapture's Rodent rating (1000, level 4 is 1080) it is hardly ever lost.
        let level4 = kept(&on, 4.0);
        assert!(level4 >= 38, "level 4 with the model: {level4}/40");
    }

    /// The candidate with the top's stumbles on at full chance.
    fn stumbling() -> Coefficients {
        let mut c = candidate();
        let h = c.humane.as_mut().expect("the model is on");
        h.stumble = Some(StumbleCoefficients {
            chance: 1.0,
            ..crate::engine::stumble::tests::knobs()
        });
        c
    }

    /// A clock that lets the first search run to its end and stops every later one (a search
    /// starts again from few nodes).
    #[derive(Default)]
    struct OutAfterFirstSearch {
        last_nodes: u64,
        out: bool,
    }

    impl SearchObserver for OutAfterFirstSearch {
        fn should_stop(&mut self, nodes: u64) -> bool {
            self.out |= nodes < self.last_nodes;
            self.last_nodes = nodes;
            self.out
        }
    }

    #[test]
    fn the_top_stumbles_into_traps_deeper_than_it_sees_and_nowhere_else() {
        let mut off = candidate();
        off.humane.as_mut().expect("the model is on").stumble = None;
        let on = stumbling();
        let level = 10.0;
        let rating = LevelParams::new(&on, level).humane.expect("on").1.errors;
        let stumble = on.humane.unwrap().stumble.unwrap();
        // The positions of a game level 10 plays against itself without stumbles.
        let seed = 3;
        let moves = self_play(&off, level, seed, 70);
        let mut game = Game::startpos();
        let (mut stumbles, mut judged) = (0, 0);
        let mut judge = Engine::new(16);
        for m in &moves {
            let player = |c: &Coefficients| {
                let mut p = LevelPlayer::new(LevelParams::new(c, level), seed);
                p.choose(&game, &mut NoStop).best_move.unwrap()
            };
            let (calm, stumbled) = (player(&off), player(&on));
            if calm != stumbled {
                stumbles += 1;
                // Never away from a recapture, a pawn's capture, a way out of check...: a
                // player of this rating does not forget those (Rodent's protections).
                assert!(
                    Protected::kinds(game.position(), game.moves().last(), &calm).is_empty(),
                    "stumbled away from {}, a protected move",
                    game.to_uci(calm)
                );
                let level_nodes = LevelParams::new(&on, level)
                    .search_params(&game, seed)
                    .limits
                    .nodes
                    .unwrap();
                let trap = |forgotten: f64| {
                    let turn = Turn {
                        game: &game,
                        chosen: calm,
                        rating,
                        nodes: level_nodes,
                        clock_factor: 1.0,
                        forgotten,
                    };
                    stumble.stumble(&mut Engine::new(1), turn, 0.0, None, &mut NoStop)
                };
                // The same trap is there for a move the player could forget, and none for
                // one it never forgets.
                assert_eq!(trap(1.0), Some(stumbled));
                assert_eq!(trap(0.0), None);
                // With the clock out once the move's own search is done, no check decides and
                // the calm move stands.
                let mut hurried = LevelPlayer::new(LevelParams::new(&on, level), seed);
                let mut clock = OutAfterFirstSearch::default();
                assert_eq!(hurried.choose(&game, &mut clock).best_move, Some(calm));
                assert!(clock.out, "the stumble's checks asked the clock");
                // Plausible within the player's sight...
                let shallow = score_moves(&mut Engine::new(1), &game, sight_plies(rating));
                assert!(
                    stumble.plausible(&shallow, &calm).contains(&stumbled),
                    "{} looks bad at {} plies",
                    game.to_uci(stumbled),
                    sight_plies(rating)
                );
                // ...and losing to a judge searching 20 times deeper than the level.
                let nodes = 20
                    * LevelParams::new(&on, level)
                        .search_params(&game, seed)
                        .limits
                        .nodes
                        .unwrap();
                let limits = Limits {
                    nodes: Some(nodes),
                    depth: None,
                };
                let mut judged_cp = |m| {
                    judge.new_game();
                    score_after(&mut judge, &game, m, limits)
                };
                let loss = judged_cp(calm) - judged_cp(stumbled);
                if loss >= 100 {
                    judged += 1;
                }
            }
            game.play_uci(m).unwrap();
        }
        assert!(
            stumbles >= 2,
            "{stumbles} stumbles in {} plies",
            moves.len()
        );
        assert!(
            judged * 4 >= stumbles * 3,
            "{judged} of {stumbles} stumbles lose 100 cp or more to the deeper judge"
        );
        // Well below the ramp (level 4, 1080) nobody stumbles.
        let low = (
            self_play(&off, 4.0, seed, 40),
            self_play(&on, 4.0, seed, 40),
        );
        assert_eq!(low.0, low.1);
    }

    #[test]
    fn aimed_moves_replay_from_the_seed_and_only_below_their_rating() {
        let with_aim = |below_rating: f64| {
            let mut c = candidate();
            c.humane.as_mut().expect("the model is on").aim =
                Some(crate::engine::aim::AimCoefficients {
                    below_rating,
                    ..crate::engine::aim::tests::knobs()
                });
            c
        };
        let plain = self_play(&candidate(), 2.0, 5, 40);
        // Aimed everywhere: other moves than the search's, the same ones from the same seed.
        let aimed = self_play(&with_aim(10_000.0), 2.0, 5, 40);
        assert_ne!(aimed, plain);
        assert_eq!(aimed, self_play(&with_aim(10_000.0), 2.0, 5, 40));
        assert_ne!(aimed, self_play(&with_aim(10_000.0), 2.0, 6, 40));
        // Far above the level's rating nothing is aimed: the game is the plain one.
        assert_eq!(self_play(&with_aim(-10_000.0), 2.0, 5, 40), plain);
    }

    #[test]
    fn draws_are_uniform_and_differ_by_seed_and_ply() {
        let n = 20_000;
        let below = (0..n).filter(|&ply| draw(7, ply) < 0.3).count() as f64 / n as f64;
        assert!((below - 0.3).abs() < 0.02, "{below}");
        assert_eq!(draw(7, 12), draw(7, 12));
        assert_ne!(draw(7, 12), draw(8, 12));
        assert_ne!(draw(7, 12), draw(7, 13));
    }
}
