//! The level model: calibrated coefficients -> per-game engine parameters.
//!
//! For level L with calibration offset o(L), x = L + o(L); nodes = n0·b^x, noise = s0·d^x,
//! hash fixed per level. With r = non-pawn material / its starting value (floored at r_min),
//! endgame scaling multiplies nodes by b^(-k·log2 r) and noise by d^(-k·log2 r): k levels more
//! per halving of material (k = `endgame_levels_per_halving`, 1 in the seed). See LEVELS.md and
//! calibration/coefficients.toml.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use shakmaty::Position;

use crate::engine::humane::{HumaneCoefficients, ModelRating, PlayedAs};
use crate::engine::noise::MAX_NOISE_CP;
use crate::engine::ramp::interpolate;
use crate::engine::stumble::StumbleCoefficients;
use crate::engine::{Blindness, Game, Limits, Noise, SearchParams};
use crate::results::{EngineRecord, GameHeader, Source};

pub use crate::engine::tt::MAX_HASH_MB;

pub mod table;
/// Offsets beyond this many levels are a broken calibration, not a correction.
pub const MAX_OFFSET: f64 = 100.0;

/// The living coefficients, as stored in calibration/coefficients.toml.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Coefficients {
    /// Incremented by every `ladder calibrate --apply`; every logged game records it.
    pub version: u32,
    /// Nodes at x = 0.
    pub n0: f64,
    /// Node growth per level (> 1).
    pub b: f64,
    /// Noise scale (centipawns, logistic law) at x = 0.
    pub s0: f64,
    /// Noise decay per level (0 < d < 1).
    pub d: f64,
    /// Floor of the material ratio in the endgame scaling.
    pub r_min: f64,
    /// Scale nodes up as material comes off.
    pub endgame_nodes: bool,
    /// Scale noise down as material comes off.
    pub endgame_noise: bool,
    /// Levels gained per halving of material in the endgame scaling (1 = the seed's "one level
    /// per halving"); nodes scale by b^(k·h) and noise by d^(k·h) for h halvings.
    #[serde(default = "default_levels_per_halving")]
    pub endgame_levels_per_halving: f64,
    /// Hard cap on nodes per move, whatever the level and material.
    #[serde(default = "default_max_nodes")]
    pub max_nodes: u64,
    /// Cap on the noise scale (cp). Below the level where s0·d^x reaches it, the weakness
    /// comes from missed threats (`blindness`) rather than ever wilder misjudgements, which
    /// look like a strong player throwing pieces away. None: no cap.
    #[serde(default)]
    pub max_noise_cp: Option<f64>,
    /// Missed threats at the bottom of the ladder (none when absent).
    #[serde(default)]
    pub blindness: Option<BlindnessCurve>,
    /// Levels whose noise draws are clipped (none when absent): see [`NoiseClip`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_clip: Option<NoiseClip>,
    /// The humane error model ([`crate::engine::humane`]): which of the search's errors a
    /// person of the level's target rating lets stand. Absent: off, the levels play as before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub humane: Option<HumaneCoefficients>,
    /// Hash size by level: each step applies from its `from_level` upwards.
    pub hash: Vec<HashStep>,
    /// Per-level offsets o(L) added to the level, keyed by level ("3", "3.5").
    #[serde(default)]
    pub offsets: BTreeMap<String, f64>,
    /// The rating of each level on the target perf (nominal until calibration measures it),
    /// keyed by level. `UCI_Elo` maps through this table.
    #[serde(default)]
    pub ratings: BTreeMap<String, f64>,
    /// Where the ratings come from ("nominal", "calibrated 2026-11-22 from 1830 games", …).
    #[serde(default)]
    pub ratings_source: String,
    /// The 95% half-width of each measured rating (1.96 standard errors), keyed like
    /// `ratings`; calibration writes it beside the rating (older files have none).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rating_intervals: BTreeMap<String, f64>,
    /// Calibration cycles applied since the gain schedule last restarted: the Robbins–Monro
    /// gain of the next cycle is 1/(cycle + 1) (with a floor). 0 until calibrated.
    #[serde(default)]
    pub calibration_cycle: u32,
    /// The version of the evaluation weights these coefficients were calibrated with (0, the
    /// default for older files: the hand-written weights). The levels play with that version,
    /// so a retuned evaluation moves no level until the ladder is recalibrated with it.
    #[serde(default)]
    pub eval_weights: u32,
    /// The built-in network these coefficients were calibrated with (0, the default: none, the
    /// hand-crafted evaluation with [`Coefficients::eval_weights`]). See
    /// [`crate::engine::Evaluator::of_versions`].
    #[serde(default, skip_serializing_if = "is_zero_version")]
    pub network: u32,
    /// The lowest level that plays [`Coefficients::network`] (0, the default: every level);
    /// the levels below play the hand-crafted evaluation. A level, not a strength coordinate:
    /// calibration moves offsets, never which evaluation a level plays.
    #[serde(default, skip_serializing_if = "is_zero_level")]
    pub network_from_level: f64,
    /// The version of the search these coefficients were calibrated with (1, the default for
    /// older files: the first search; [`crate::engine::constants::SHIPPED_SEARCH_VERSION`]).
    /// Like the weights, the levels play with that version until the ladder is recalibrated.
    #[serde(default = "first_search")]
    pub search: u32,
    /// The ladder's targets: the rating every level aims at, on one named scale. The one place
    /// they are written: accounts, `ladder check`, the sandbox, calibration and `ladder levels`
    /// all read them from here. A file without them (versions before 17's `[targets]`) has the
    /// shipped file's ([`Coefficients::targets`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<LadderTargets>,
}

/// The search of coefficients files written before the search had versions.
fn first_search() -> u32 {
    1
}

/// The ladder's targets: T(L) = from + step·(L − 1) on `scale`, for every level, fractional
/// ones included.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LadderTargets {
    /// The rating scale the targets (and the measured `ratings`) are on, e.g. "lichess-blitz":
    /// the anchors' scale of calibration/anchors.toml.
    pub scale: String,
    /// The Lichess perf (rating pool) of that scale: bullet, blitz, rapid or classical.
    pub perf: String,
    /// Level 1's target.
    pub from: f64,
    /// The target's step per level (> 0: every level above the one below).
    pub step: f64,
}

/// The perfs a target may be on.
pub const TARGET_PERFS: [&str; 4] = ["bullet", "blitz", "rapid", "classical"];

impl LadderTargets {
    /// The target of `level` (may be fractional).
    pub fn target(&self, level: f64) -> f64 {
        self.from + self.step * (level - 1.0)
    }

    /// "450 + 210·(L − 1) on lichess-blitz".
    pub fn describe(&self) -> String {
        format!("{} + {}·(L − 1) on {}", self.from, self.step, self.scale)
    }
}

fn default_levels_per_halving() -> f64 {
    1.0
}

fn default_max_nodes() -> u64 {
    50_000_000
}

/// The chance that a level judges a candidate move without looking at the opponent's replies:
/// p(x) = min + (max − min) / (1 + e^((x − mid)/width)), a smooth, decreasing function of the
/// level exponent x, so calibration can move a level anywhere and the weakness follows.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlindnessCurve {
    /// The chance far below `mid` (at most 1).
    pub max: f64,
    /// The exponent x where the chance is halfway from `max` to `min`.
    pub mid: f64,
    /// How many levels the fall from `max` to `min` takes, roughly a quarter of it per `width`.
    pub width: f64,
    /// The chance far above `mid`, at every level however strong (0 when absent): people of
    /// every rating overlook a reply now and then (5 big losses in 100 moves above 2200), where
    /// a level without it errs only by searching less.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min: f64,
}

/// A clip on the noise draws of some levels. The logistic noise has long tails: at a scale of a
/// few hundred centipawns one evaluation in five is off by more than a minor piece, and the
/// search gives material away for it, an error people of 1100–1500 rarely make where nothing
/// hides the loss. Clipped, the noise blurs the level's judgement of the position (where pieces
/// stand, which plan) and leaves the material to the search: the level errs where its search is
/// too short, as people err in hard positions.
///
/// Two forms, one per table:
/// - **by level** (`cp`, `from_level`, `to_level`): every draw of those levels clipped at ±`cp`
///   (the trials of docs/humane.md; a clip by level breaks the one axis x that orders the
///   levels, so calibration cannot use it);
/// - **by x** (`scales` or `cp`, `from_x`, `to_x`, `widen_x`): every draw clipped at `scales`
///   times the noise scale of the position, or at `cp`, from `from_x` to `to_x`, the clip
///   doubling every `widen_x` of x outside that span and gone where it reaches
///   [`NO_CLIP_SCALES`] scales or [`MAX_NOISE_CP`]. In scales it cuts the same share of draws
///   at every level; in centipawns it keeps the mirages under a piece where the noise is wide
///   (near the search's floor one scale is 400-800 cp, and only a clip of about 300 cp or less
///   lowered the big losses, docs/humane.md). A function of x, it
///   moves with calibration like the blindness curve, and it widens smoothly: a clip that began
///   with a step would make strength jump 100–250 Elo there, and a target inside the jump could
///   never be met.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoiseClip {
    /// The largest draw either way (cp): by level, or by x in its span.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cp: Option<f64>,
    /// By level: the lowest level clipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_level: Option<f64>,
    /// By level: the highest level clipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_level: Option<f64>,
    /// By x: the largest draw either way in noise scales (1: a quarter of the draws cut).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scales: Option<f64>,
    /// By x: the lowest exponent clipped at `scales`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_x: Option<f64>,
    /// By x: the highest exponent clipped at `scales`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_x: Option<f64>,
    /// By x: how much x outside `from_x..=to_x` doubles the clip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub widen_x: Option<f64>,
}

/// A clip of this many noise scales or more is no clip: the logistic law puts 2/(1 + e^8), 0.07%,
/// of its draws beyond it, fewer than a level's games or a likeness report can see, so the
/// levels outside a curve's reach keep their games.
pub const NO_CLIP_SCALES: f64 = 8.0;

impl NoiseClip {
    /// The clip (cp) of every draw of `level` at exponent `x`: `cp` in the form by level where
    /// the level is in its range, `cp` widened outside the span in the form by x in
    /// centipawns (None: no clip in cp).
    pub fn cp_at(&self, level: f64, x: f64) -> Option<i32> {
        let cp = self.cp?;
        if let (Some(from), Some(to)) = (self.from_level, self.to_level) {
            return (from..=to).contains(&level).then(|| cp.round() as i32);
        }
        let clip = (cp * self.widening(x)?).round();
        (clip < f64::from(MAX_NOISE_CP)).then_some(clip as i32)
    }

    /// The clip in noise scales at exponent `x`, in the form by x in scales (None: no clip).
    pub fn scales_at(&self, x: f64) -> Option<f64> {
        let scales = self.scales? * self.widening(x)?;
        (scales < NO_CLIP_SCALES).then_some(scales)
    }

    /// How much the form by x widens its clip at `x`: 1 in its span, doubling every
    /// `widen_x` outside.
    fn widening(&self, x: f64) -> Option<f64> {
        let (from, to, widen) = (self.from_x?, self.to_x?, self.widen_x?);
        let outside = (from - x).max(0.0) + (x - to).max(0.0);
        Some((outside / widen).exp2())
    }

    /// The exponent below which the form by x no longer clips.
    pub fn lowest_clipped_x(&self) -> Option<f64> {
        let (from, widen) = (self.from_x?, self.widen_x?);
        let doublings = match (self.scales, self.cp) {
            (Some(k), _) => (NO_CLIP_SCALES / k).log2(),
            (None, Some(cp)) => (f64::from(MAX_NOISE_CP) / cp).log2(),
            (None, None) => return None,
        };
        Some(from - widen * doublings.max(0.0))
    }

    /// The same clip with its exponents read on a new scale where x_old = p + q·x_new.
    pub fn rescaled(&self, p: f64, q: f64) -> NoiseClip {
        NoiseClip {
            from_x: self.from_x.map(|x| (x - p) / q),
            to_x: self.to_x.map(|x| (x - p) / q),
            widen_x: self.widen_x.map(|w| w / q),
            ..*self
        }
    }

    /// Whether the table is one form with every value it needs, or the key that is wrong.
    fn check(&self) -> Result<(), (&'static str, String)> {
        let finite = |v: Option<f64>| v.is_some_and(f64::is_finite);
        let by_level = self.from_level.is_some() || self.to_level.is_some();
        let by_x = self.from_x.is_some() || self.to_x.is_some() || self.widen_x.is_some();
        if by_level && by_x {
            let key = if self.from_x.is_some() {
                "noise_clip.from_x"
            } else if self.to_x.is_some() {
                "noise_clip.to_x"
            } else {
                "noise_clip.widen_x"
            };
            return Err((
                key,
                "belongs to the clip by x; this table clips by level (from_level, to_level)".into(),
            ));
        }
        if !by_level && !by_x {
            return Err((
                "noise_clip",
                "needs a span: from_level and to_level, or from_x, to_x and widen_x".into(),
            ));
        }
        let cp_ok = |cp: f64| cp.is_finite() && cp >= 1.0 && cp <= f64::from(MAX_NOISE_CP);
        let bad_cp = || {
            Err((
                "noise_clip.cp",
                format!("must be a number of centipawns from 1 to {MAX_NOISE_CP}"),
            ))
        };
        if by_level {
            if self.scales.is_some() {
                return Err((
                    "noise_clip.scales",
                    "belongs to the clip by x; a clip by level is in centipawns (cp)".into(),
                ));
            }
            if !self.cp.is_some_and(cp_ok) {
                return bad_cp();
            }
            if !finite(self.from_level) {
                return Err(("noise_clip.from_level", "must be a finite number".into()));
            }
            if !(finite(self.to_level) && self.to_level >= self.from_level) {
                return Err((
                    "noise_clip.to_level",
                    "must be a finite number at least noise_clip.from_level".into(),
                ));
            }
            return Ok(());
        }
        match (self.cp, self.scales) {
            (Some(_), Some(_)) => {
                return Err((
                    "noise_clip.scales",
                    "a clip is in centipawns (cp) or in noise scales (scales), not both".into(),
                ));
            }
            (None, None) => {
                return Err((
                    "noise_clip.scales",
                    "needed (or cp): the clip in noise scales (or centipawns) in the span".into(),
                ));
            }
            (Some(cp), None) if !cp_ok(cp) => return bad_cp(),
            (None, Some(k)) if !(k.is_finite() && k > 0.0) => {
                return Err(("noise_clip.scales", "must be a positive number".into()));
            }
            _ => {}
        }
        if !finite(self.from_x) {
            return Err(("noise_clip.from_x", "must be a finite number".into()));
        }
        if !(finite(self.to_x) && self.to_x >= self.from_x) {
            return Err((
                "noise_clip.to_x",
                "must be a finite number at least noise_clip.from_x".into(),
            ));
        }
        if !self.widen_x.is_some_and(|w| w.is_finite() && w > 0.0) {
            return Err(("noise_clip.widen_x", "must be a positive number".into()));
        }
        Ok(())
    }
}

fn is_zero_version(version: &u32) -> bool {
    *version == 0
}

fn is_zero_level(level: &f64) -> bool {
    *level == 0.0
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl BlindnessCurve {
    pub fn probability(&self, x: f64) -> f64 {
        self.min + (self.max - self.min) / (1.0 + ((x - self.mid) / self.width).exp())
    }
}

/// Nodes a level gets, at least, for beating a bare king: a won K+Q or K+R vs K ending is
/// converted cleanly at every level (a level that cannot mate turns a won game into a draw,
/// and Lichess draws a threefold repetition by itself); the weakest levels play the rest of
/// the game as weakly as ever.
pub const BARE_KING_NODES: u64 = 20_000;

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HashStep {
    pub from_level: f64,
    pub mb: usize,
}

/// A problem with a coefficients file.
pub type CoefficientsError = crate::toml_file::FileError;

/// What to do about a coefficients file that does not load from `path`.
pub fn coefficients_fix(e: &CoefficientsError, path: &Path) -> String {
    match e {
        CoefficientsError::Read { .. } => format!(
            "copy calibration/coefficients.toml from the repository to {} (or point \
             daemon.coefficients at it)",
            path.display()
        ),
        _ => "correct the file, or restore a good version from calibration/history/ (see \
              docs/operating.md, rolling back)"
            .to_string(),
    }
}

/// A value out of its range: the key and what is wrong with it.
type Problem = (String, String);

fn bad(key: impl Into<String>, problem: impl Into<String>) -> Result<(), Problem> {
    Err((key.into(), problem.into()))
}

impl Coefficients {
    /// The file that ships with the crate: the starting point of calibration.
    pub const DEFAULT_TOML: &'static str = include_str!("../calibration/coefficients.toml");

    pub fn builtin() -> Coefficients {
        Coefficients::parse(Self::DEFAULT_TOML, "built-in coefficients")
            .expect("the shipped coefficients file is valid")
    }

    /// The ladder's targets: this file's `[targets]`, or the shipped file's when it has none.
    pub fn targets(&self) -> LadderTargets {
        static SHIPPED: std::sync::OnceLock<LadderTargets> = std::sync::OnceLock::new();
        self.targets.clone().unwrap_or_else(|| {
            SHIPPED
                .get_or_init(|| {
                    Coefficients::builtin()
                        .targets
                        .expect("the shipped coefficients file has [targets]")
                })
                .clone()
        })
    }

    pub fn load(path: &Path) -> Result<Coefficients, CoefficientsError> {
        crate::toml_file::load(path, Coefficients::parse)
    }

    /// [`Coefficients::load`] for a command: `named_by` says where the path came from
    /// (`daemon.coefficients in accounts.toml`), and the error carries what to do about it.
    pub fn load_or_explain(path: &Path, named_by: &str) -> anyhow::Result<Coefficients> {
        Coefficients::load(path).map_err(|e| {
            let fix = coefficients_fix(&e, path);
            crate::exit::with_fix(format!("{e} ({named_by})"), fix)
        })
    }

    /// Parses and validates; `origin` names the file in error messages, which give the line
    /// and the key.
    pub fn parse(text: &str, origin: &str) -> Result<Coefficients, CoefficientsError> {
        let coefficients: Coefficients = crate::toml_file::parse_toml(text, origin)?;
        coefficients.validate(origin).map_err(|mut e| {
            if let CoefficientsError::Invalid { line, key, .. } = &mut e {
                *line = line_of_key(text, key);
            }
            e
        })?;
        Ok(coefficients)
    }

    pub fn to_toml(&self) -> String {
        toml::to_string_pretty(self).expect("coefficients serialize")
    }

    /// Every value in its range; the first that is not is refused by its key (the loader adds
    /// the key's line).
    fn validate(&self, origin: &str) -> Result<(), CoefficientsError> {
        self.check_growth()
            .and_then(|()| self.check_hash_and_weakening())
            .and_then(|()| self.check_targets())
            .and_then(|()| self.check_tables())
            .map_err(|(key, problem)| CoefficientsError::Invalid {
                path: origin.to_string(),
                line: 0,
                key,
                problem,
            })
    }

    /// The node and noise laws, the endgame scaling, the node cap and the evaluation weights.
    fn check_growth(&self) -> Result<(), Problem> {
        if !(self.n0.is_finite() && self.n0 > 0.0) {
            return bad("n0", "must be a positive number");
        }
        if !(self.b.is_finite() && self.b > 1.0) {
            return bad("b", "must be greater than 1 (nodes grow with the level)");
        }
        if !(self.s0.is_finite() && self.s0 >= 0.0) {
            return bad("s0", "must be zero or positive");
        }
        if !(self.d.is_finite() && self.d > 0.0 && self.d <= 1.0) {
            return bad("d", "must be in (0, 1] (noise decays with the level)");
        }
        if !(self.r_min > 0.0 && self.r_min <= 1.0) {
            return bad("r_min", "must be in (0, 1]");
        }
        if !(self.endgame_levels_per_halving.is_finite() && self.endgame_levels_per_halving >= 0.0)
        {
            return bad("endgame_levels_per_halving", "must be zero or positive");
        }
        // The results log's own range: a record above it is skipped by every reader.
        if self.max_nodes == 0 || self.max_nodes > crate::results::MAX_NODES {
            return bad("max_nodes", "must be between 1 and 10^10");
        }
        if let Err(unknown) = crate::engine::SearchConstants::of_known_version(self.search) {
            return bad("search", unknown);
        }
        if crate::engine::evaluator::network_of_version(self.network).is_none() && self.network != 0
        {
            return bad(
                "network",
                format!(
                    "no built-in network of that version (known: 0 = none, 1 to {})",
                    crate::engine::evaluator::SHIPPED_NETWORK
                ),
            );
        }
        if !(self.network_from_level.is_finite() && self.network_from_level >= 0.0) {
            return bad("network_from_level", "must be a level, zero or positive");
        }
        if self.network_from_level > 0.0 && self.network == 0 {
            return bad("network_from_level", "needs network beside it");
        }
        if crate::engine::Weights::of_version(self.eval_weights).is_none() {
            return bad(
                "eval_weights",
                format!(
                    "no evaluation weights of that version (known: 0 to {})",
                    crate::engine::weights::SHIPPED_VERSION
                ),
            );
        }
        Ok(())
    }

    /// The hash steps, the noise cap and the blindness curve.
    fn check_hash_and_weakening(&self) -> Result<(), Problem> {
        if self.hash.is_empty() {
            return bad("hash", "needs at least one step");
        }
        for (i, step) in self.hash.iter().enumerate() {
            if !(1..=MAX_HASH_MB).contains(&step.mb) {
                return bad(
                    format!("hash[{i}].mb"),
                    format!("must be between 1 and {MAX_HASH_MB} (MB of hash per game)"),
                );
            }
            if !step.from_level.is_finite() {
                return bad(format!("hash[{i}].from_level"), "must be a finite number");
            }
        }
        if let Some(cap) = self.max_noise_cp
            && !(cap.is_finite() && cap > 0.0)
        {
            return bad("max_noise_cp", "must be a positive number");
        }
        if let Some(clip) = self.noise_clip
            && let Err((key, why)) = clip.check()
        {
            return bad(key, why);
        }
        if let Some(curve) = self.blindness {
            if !(curve.max.is_finite() && (0.0..=1.0).contains(&curve.max)) {
                return bad("blindness.max", "must be in [0, 1]");
            }
            if !curve.mid.is_finite() {
                return bad("blindness.mid", "must be a number");
            }
            if !(curve.width.is_finite() && curve.width > 0.0) {
                return bad("blindness.width", "must be a positive number");
            }
            if !(curve.min.is_finite() && (0.0..=curve.max).contains(&curve.min)) {
                return bad("blindness.min", "must be in [0, blindness.max]");
            }
        }
        if let Some((key, problem)) = self.humane.and_then(|h| h.problem()) {
            return bad(key, problem);
        }
        Ok(())
    }

    /// The ladder's targets, when the file has them.
    fn check_targets(&self) -> Result<(), Problem> {
        if let Some(t) = &self.targets {
            if t.scale.trim().is_empty() {
                return bad(
                    "targets.scale",
                    "must name the rating scale (e.g. \"lichess-blitz\")",
                );
            }
            if !TARGET_PERFS.contains(&t.perf.as_str()) {
                return bad(
                    "targets.perf",
                    format!("must be one of {}", TARGET_PERFS.join(", ")),
                );
            }
            if !(t.from.is_finite() && crate::results::RATING_RANGE.contains(&t.from)) {
                return bad(
                    "targets.from",
                    format!(
                        "must be a rating between {} and {} (level 1's target)",
                        crate::results::RATING_RANGE.start(),
                        crate::results::RATING_RANGE.end()
                    ),
                );
            }
            if !(t.step.is_finite() && t.step > 0.0 && t.step <= 1000.0) {
                return bad(
                    "targets.step",
                    "must be a positive number of Elo per level, at most 1000",
                );
            }
        }
        Ok(())
    }

    /// The per-level tables: level numbers as keys, offsets and ratings in range.
    fn check_tables(&self) -> Result<(), Problem> {
        for (table, keys) in [("offsets", &self.offsets), ("ratings", &self.ratings)] {
            for key in keys.keys() {
                if !key.parse::<f64>().is_ok_and(f64::is_finite) {
                    return bad(format!("{table}.{key}"), "is not a level number");
                }
            }
        }
        for (key, offset) in &self.offsets {
            if !(offset.is_finite() && offset.abs() <= MAX_OFFSET) {
                return bad(
                    format!("offsets.\"{key}\""),
                    format!("must be a number between -{MAX_OFFSET} and {MAX_OFFSET}"),
                );
            }
        }
        for (key, half_width) in &self.rating_intervals {
            if !(half_width.is_finite() && *half_width >= 0.0) {
                return bad(
                    format!("rating_intervals.\"{key}\""),
                    "must be a non-negative number of rating points",
                );
            }
        }
        // A rating outside Lichess's range is a broken measurement, not a level: calibration
        // validates its proposal through here before writing it.
        for (key, rating) in &self.ratings {
            if !(rating.is_finite() && crate::results::RATING_RANGE.contains(rating)) {
                return bad(
                    format!("ratings.\"{key}\""),
                    format!(
                        "must be a rating between {} and {}",
                        crate::results::RATING_RANGE.start(),
                        crate::results::RATING_RANGE.end()
                    ),
                );
            }
        }
        Ok(())
    }

    /// The calibration offset of a level: its own when recorded (every whole level of a
    /// calibrated ladder); between two levels with offsets, interpolated linearly, so a
    /// fractional level (`UCI_Elo` 1000 is level 3.7) is as calibrated as its neighbours;
    /// beyond the first or last, theirs; 0 when none is recorded.
    pub fn offset(&self, level: f64) -> f64 {
        if let Some(offset) = self.offsets.get(&level_key(level)) {
            return *offset;
        }
        interpolate(&keyed(&self.offsets), level).unwrap_or(0.0)
    }

    /// The highest level with a calibrated offset: the top of the ladder this file describes
    /// (`None` before any calibration).
    pub fn top_calibrated_level(&self) -> Option<f64> {
        keyed(&self.offsets).last().map(|&(level, _)| level)
    }

    /// The top of the ladder for commands that cover it all by default (`ladder levels`,
    /// `calibrate --arena`): the top calibrated level, 10 (the first ladder's) before any.
    pub fn top_level(&self) -> f64 {
        self.top_calibrated_level().unwrap_or(10.0)
    }

    /// The 95% half-width of `level`'s measured rating, when calibration wrote one.
    pub fn rating_interval_of(&self, level: f64) -> Option<f64> {
        self.rating_intervals.get(&level_key(level)).copied()
    }

    /// The humane model's line, rating = a + s·x, as (a, s): its own when the `[humane]` table
    /// has one, else the targets' line (`from + step·(x − 1)`). `None` with the model off.
    pub fn humane_line(&self) -> Option<(f64, f64)> {
        let h = self.humane?;
        Some(match h.rating_at_x0.zip(h.rating_per_x) {
            Some(line) => line,
            None => {
                let t = self.targets();
                (t.from - t.step, t.step)
            }
        })
    }

    /// The rating the humane model plays at strength coordinate `x` (`None`: the model is off),
    /// by its line (see [`Coefficients::humane_rating_of`] for a level).
    pub fn humane_rating(&self, x: f64) -> Option<f64> {
        self.humane_line().map(|(a, s)| a + s * x)
    }

    /// The rating the humane model plays at `level`, whose strength coordinate is `x`: the line's
    /// at x, with `rating_from = "target"` the level's target, with `"lower"` the lower of the
    /// two (the target from `target_from_level` up) (`None`: the model is off).
    pub fn humane_rating_of(&self, level: f64, x: f64) -> Option<f64> {
        let h = self.humane?;
        let target = self.targets().target(level);
        Some(match h.rating_from {
            ModelRating::Strength => self.humane_rating(x)?,
            ModelRating::Target => target,
            ModelRating::Lower if h.target_from_level.is_some_and(|from| level >= from) => target,
            ModelRating::Lower => self.humane_rating(x)?.min(target),
        })
    }

    /// The ratings the humane model plays `level` at, whose strength coordinate is `x`: its
    /// errors at [`Self::humane_rating_of`], its habits there too, or with
    /// `habits_at_target` at the level's target where that is higher (`None`: the model is
    /// off).
    pub fn humane_played_as(&self, level: f64, x: f64) -> Option<PlayedAs> {
        let h = self.humane?;
        let errors = self.humane_rating_of(level, x)?;
        let habits = if h.habits_at_target {
            errors.max(self.targets().target(level))
        } else {
            errors
        };
        Some(PlayedAs { errors, habits })
    }

    /// The rating of a level: its recorded one, or interpolated linearly between the two
    /// rated levels around it (`None` outside the rated levels, or with no ratings).
    pub fn rating_of(&self, level: f64) -> Option<f64> {
        if let Some(rating) = self.ratings.get(&level_key(level)) {
            return Some(*rating);
        }
        let levels = self.rated_levels();
        let (first, last) = (levels.first()?, levels.last()?);
        (level >= first.0 && level <= last.0)
            .then(|| interpolate(&levels, level))
            .flatten()
    }

    /// Hash size for a level.
    pub fn hash_mb(&self, level: f64) -> usize {
        let mut mb = self.hash[0].mb;
        for step in &self.hash {
            if level >= step.from_level {
                mb = step.mb;
            }
        }
        mb
    }

    /// Levels with a recorded rating, sorted by level.
    pub fn rated_levels(&self) -> Vec<(f64, f64)> {
        keyed(&self.ratings)
    }

    /// The (fractional) level whose recorded rating is `elo`, interpolating linearly between
    /// rated levels and clamping at the ends. `None` when no ratings are recorded.
    pub fn level_for_rating(&self, elo: f64) -> Option<f64> {
        // The ratings curve read the other way: level as a function of rating.
        let by_rating: Vec<(f64, f64)> = self
            .rated_levels()
            .into_iter()
            .map(|(level, rating)| (rating, level))
            .collect();
        interpolate(&by_rating, elo)
    }
}

/// A table keyed by level ("3", "3.5") as (level, value) pairs sorted by level.
fn keyed(table: &BTreeMap<String, f64>) -> Vec<(f64, f64)> {
    let mut levels: Vec<(f64, f64)> = table
        .iter()
        .filter_map(|(k, v)| Some((k.parse().ok()?, *v)))
        .collect();
    levels.sort_by(|a, b| a.0.total_cmp(&b.0));
    levels
}

/// The line of the coefficients file that sets `key` as [`Coefficients::validate`] names it
/// (`b`, `hash[1].mb`, `ratings."3"`), 0 when it cannot be told (a key written inline).
fn line_of_key(text: &str, key: &str) -> usize {
    let bare = |l: &str| {
        l.split('=')
            .next()
            .unwrap_or("")
            .trim()
            .trim_matches('"')
            .to_string()
    };
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    // The leaf follows the last dot outside quotes: `humane.stumble.chance` is the key
    // `chance` of the table `[humane.stumble]`, `ratings."3.5"` the key "3.5" of `[ratings]`.
    let mut quoted = false;
    let last_dot = key.char_indices().rev().find_map(|(i, c)| {
        if c == '"' {
            quoted = !quoted;
        }
        (c == '.' && !quoted).then_some(i)
    });
    let split = last_dot.map(|i| (&key[..i], &key[i + 1..]));
    let (table, leaf, nth) = match split {
        None => (None, key.to_string(), 0),
        Some((table, leaf)) => match table.split_once('[') {
            Some((t, i)) => (
                Some(t),
                leaf.to_string(),
                i.trim_end_matches(']').parse().unwrap_or(0),
            ),
            None => (Some(table), leaf.trim_matches('"').to_string(), 0),
        },
    };
    // The top-level keys come before the first table header; a table's keys follow its
    // header (the `nth` one of an array of tables).
    let start = match table {
        None => 0,
        Some(t) => {
            let headers = [format!("[{t}]"), format!("[[{t}]]")];
            match lines
                .iter()
                .enumerate()
                .filter(|(_, l)| headers.iter().any(|h| h == *l))
                .nth(nth)
            {
                Some((i, _)) => i + 1,
                None => return 0,
            }
        }
    };
    lines[start..]
        .iter()
        .take_while(|l| table.is_some() || !l.starts_with('['))
        .position(|l| !l.starts_with('[') && l.contains('=') && bare(l) == leaf)
        .map_or(0, |i| start + i + 1)
}

/// The canonical key of a level in the coefficients tables: "3", "3.5".
pub fn level_key(level: f64) -> String {
    format!("{level}")
}

/// A level's engine parameters before the endgame scaling of one position.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelParams {
    pub level: f64,
    pub offset: f64,
    /// x = level + offset.
    pub exponent: f64,
    /// Nodes per move at full material.
    pub nodes: u64,
    /// Noise scale (cp) at full material.
    pub noise_cp: f64,
    pub hash_mb: usize,
    /// Chance of judging a root move blind at full material (0: never).
    pub blind_probability: f64,
    /// The largest noise draw either way ([`Coefficients::noise_clip`] by level;
    /// [`MAX_NOISE_CP`] where the level is not clipped so).
    pub noise_clip_cp: i32,
    /// The largest noise draw either way in noise scales of the position
    /// ([`Coefficients::noise_clip`] by x; infinite where the level is not clipped so).
    pub noise_clip_scales: f64,
    pub coefficients_version: u32,
    /// The evaluation weights the level plays with ([`Coefficients::eval_weights`]).
    pub eval_weights: u32,
    /// The network the level plays with, 0 for none ([`Coefficients::network`] from
    /// [`Coefficients::network_from_level`] up).
    pub network: u32,
    /// The search version the level plays with ([`Coefficients::search`]).
    pub search: u32,
    /// The humane error model and the rating it plays, when it is on: the target line's rating
    /// at the strength coordinate x, not at the level, so that calibration moves the model
    /// with the search (a level pushed below the bottom, where the search cannot get weaker,
    /// still gets weaker by missing more; x is the level's target where the offset is 0)
    /// (boxed: the parameters travel in enums and channels, mostly without it).
    pub humane: Option<Box<(HumaneCoefficients, PlayedAs)>>,
    blindness: Option<BlindnessCurve>,
    b: f64,
    d: f64,
    r_min: f64,
    levels_per_halving: f64,
    endgame_nodes: bool,
    endgame_noise: bool,
    max_nodes: u64,
}

impl LevelParams {
    /// The parameters of `level` (may be fractional, must be positive) under `coefficients`.
    pub fn new(coefficients: &Coefficients, level: f64) -> LevelParams {
        let offset = coefficients.offset(level);
        let exponent = level + offset;
        let max_nodes = coefficients.max_nodes;
        let nodes = (coefficients.n0 * coefficients.b.powf(exponent))
            .round()
            .clamp(1.0, max_nodes as f64) as u64;
        LevelParams {
            level,
            offset,
            exponent,
            nodes,
            // At most the results log's range (100,000 cp, far past any move's worth): a
            // record above it is skipped by every reader.
            noise_cp: (coefficients.s0 * coefficients.d.powf(exponent))
                .min(coefficients.max_noise_cp.unwrap_or(f64::INFINITY))
                .min(*crate::results::NOISE_RANGE.end()),
            hash_mb: coefficients.hash_mb(level),
            blind_probability: coefficients
                .blindness
                .map_or(0.0, |curve| curve.probability(exponent)),
            noise_clip_cp: coefficients
                .noise_clip
                .and_then(|clip| clip.cp_at(level, exponent))
                .unwrap_or(MAX_NOISE_CP),
            noise_clip_scales: coefficients
                .noise_clip
                .and_then(|clip| clip.scales_at(exponent))
                .unwrap_or(f64::INFINITY),
            coefficients_version: coefficients.version,
            eval_weights: coefficients.eval_weights,
            network: if level >= coefficients.network_from_level {
                coefficients.network
            } else {
                0
            },
            search: coefficients.search,
            humane: coefficients
                .humane
                .zip(coefficients.humane_played_as(level, exponent))
                .map(Box::new),
            blindness: coefficients.blindness,
            b: coefficients.b,
            d: coefficients.d,
            r_min: coefficients.r_min,
            levels_per_halving: coefficients.endgame_levels_per_halving,
            endgame_nodes: coefficients.endgame_nodes,
            endgame_noise: coefficients.endgame_noise,
            max_nodes,
        }
    }

    /// Levels gained at material ratio `r`: k · -log2(max(r, r_min)), 0 at full material.
    fn halvings(&self, material_ratio: f64) -> f64 {
        -material_ratio.clamp(self.r_min, 1.0).log2() * self.levels_per_halving
    }

    /// Multiplier applied to the node budget at material ratio `r`.
    pub fn node_multiplier(&self, material_ratio: f64) -> f64 {
        if self.endgame_nodes {
            self.b.powf(self.halvings(material_ratio))
        } else {
            1.0
        }
    }

    /// Multiplier applied to the noise scale at material ratio `r`.
    pub fn noise_multiplier(&self, material_ratio: f64) -> f64 {
        if self.endgame_noise {
            self.d.powf(self.halvings(material_ratio))
        } else {
            1.0
        }
    }

    pub fn nodes_at(&self, material_ratio: f64) -> u64 {
        ((self.nodes as f64) * self.node_multiplier(material_ratio))
            .round()
            .clamp(1.0, self.max_nodes as f64) as u64
    }

    pub fn noise_at(&self, material_ratio: f64) -> f64 {
        self.noise_cp * self.noise_multiplier(material_ratio)
    }

    /// Chance of judging a root move blind at material ratio `r`: the curve read k levels
    /// higher per halving of material, like the noise (with `endgame_noise`).
    pub fn blindness_at(&self, material_ratio: f64) -> f64 {
        let Some(curve) = self.blindness else {
            return 0.0;
        };
        let gained = if self.endgame_noise {
            self.halvings(material_ratio)
        } else {
            0.0
        };
        curve.probability(self.exponent + gained)
    }

    /// The largest draw either way (cp) of noise of scale `scale_cp`: the clip by level, or
    /// the clip by x in scales of it (at least 1 cp: a draw rounds to whole centipawns).
    pub fn noise_clip_at(&self, scale_cp: f64) -> i32 {
        // Unclipped (infinite scales) or without noise (0 · ∞ is NaN) the clip by level holds.
        let by_x = self.noise_clip_scales * scale_cp;
        if by_x.is_finite() && by_x.round().max(1.0) < f64::from(self.noise_clip_cp) {
            by_x.round().max(1.0) as i32
        } else {
            self.noise_clip_cp
        }
    }

    /// The search parameters for one move of a game played at this level with `seed`.
    pub fn search_params(&self, game: &Game, seed: u64) -> SearchParams {
        if opponent_has_bare_king(game) {
            return SearchParams {
                limits: Limits::nodes(self.nodes_at(0.0).max(BARE_KING_NODES).min(self.max_nodes)),
                noise: Noise::NONE,
                blindness: Blindness::NONE,
            };
        }
        let r = game.material_ratio();
        let scale_cp = self.noise_at(r).max(opening_noise_floor(game));
        SearchParams {
            limits: Limits::nodes(self.nodes_at(r)),
            noise: Noise {
                scale_cp,
                seed,
                clip_cp: self.noise_clip_at(scale_cp),
            },
            blindness: Blindness {
                probability: self.blindness_at(r),
                seed,
            },
        }
    }

    /// The header of a game `account` plays at this level with `seed`: what its open-games
    /// entry and its record keep of it.
    pub fn game_header(&self, source: Source, account: &str, seed: u64) -> GameHeader {
        GameHeader {
            source,
            account: account.to_string(),
            level: self.level,
            offset: self.offset,
            coefficients_version: self.coefficients_version,
            engine: EngineRecord {
                nodes: self.nodes,
                noise_cp: self.noise_cp,
                hash_mb: self.hash_mb,
            },
            seed,
        }
    }
}

/// A stumble chance a move below which a level plays as if it had no stumbles: where its model
/// rating is far below the stumbles' ramp (version 58's levels 1-3: at most 1.4e-8 a move, in
/// time trouble), a game differs once in tens of thousands of games at most, far below what a
/// rating or a likeness report can see; so a loop that retunes the top keeps the bottom's games.
pub const NEVER_STUMBLES: f64 = 1e-6;

/// Whether `level` plays the same under `a` and `b`: the same evaluation weights and search, the same
/// nodes and noise at full material, the same hash, and the same nodes (after the `max_nodes`
/// cap), noise and chance of a blind move at every material ratio of the endgame scaling. Equal
/// up to float dust (1e-8 relative, far below one node): a refit that leaves a level alone
/// computes its parameters through other, rounded numbers. A new cap only moves the levels whose
/// budget reaches it somewhere: the others keep their games.
pub fn plays_alike(a: &Coefficients, b: &Coefficients, level: f64) -> bool {
    let close = |x: f64, y: f64| (x - y).abs() <= 1e-8 * x.abs().max(y.abs()) + 1e-12;
    let raw_nodes = |c: &Coefficients| c.n0 * c.b.powf(level + c.offset(level));
    let (pa, pb) = (LevelParams::new(a, level), LevelParams::new(b, level));
    let capped_nodes = |c: &Coefficients, p: &LevelParams, r: f64| {
        (raw_nodes(c) * p.node_multiplier(r)).min(c.max_nodes as f64)
    };
    // A bare king's budget has its own floor under the cap (see `LevelParams::search_params`).
    let bare_king = |c: &Coefficients, p: &LevelParams| {
        capped_nodes(c, p, 0.0)
            .max(BARE_KING_NODES as f64)
            .min(c.max_nodes as f64)
    };
    // The humane model: the same knobs (its line, and where its rating comes from, aside) and
    // the same rating at the level; the top's stumbles only where the level may stumble, the
    // notice threshold the level plays by (a band's edges elsewhere change nothing here), the
    // chance of a stumble at its rating (not the ramps, taper and summit that make it: a
    // summit above the level leaves it alone), and the plies a stumbling level looks at its
    // rating, not where the 5-ply look starts.
    let knobs = |p: &LevelParams| {
        p.humane
            .as_deref()
            .map(|&(h, PlayedAs { errors: rating, .. })| {
                let stumble = h
                    .stumble
                    .filter(|s| s.chance_at(rating, h.flag_factor) >= NEVER_STUMBLES);
                let knobs = HumaneCoefficients {
                    rating_at_x0: None,
                    rating_per_x: None,
                    rating_from: ModelRating::Strength,
                    target_from_level: None,
                    // What it changes is the habits' rating, compared below.
                    habits_at_target: false,
                    stumble: stumble.map(|s| StumbleCoefficients {
                        chance: s.chance_at(rating, 1.0),
                        from_rating: 0.0,
                        width: 1.0,
                        top_from_rating: None,
                        top_chance: None,
                        five_plies_from_rating: None,
                        summit: None,
                        ..s
                    }),
                    notice_cp: h.notice_cp_at(rating),
                    notice: None,
                    ..h
                };
                (knobs, stumble.map(|s| s.sight_plies(rating)))
            })
    };
    let model_rating = |p: &LevelParams| p.humane.as_ref().map_or(0.0, |h| h.1.errors);
    let habits_rating = |p: &LevelParams| p.humane.as_ref().map_or(0.0, |h| h.1.habits);
    a.eval_weights == b.eval_weights
        && knobs(&pa) == knobs(&pb)
        && close(model_rating(&pa), model_rating(&pb))
        && close(habits_rating(&pa), habits_rating(&pb))
        && pa.network == pb.network
        && a.search == b.search
        && close(raw_nodes(a), raw_nodes(b))
        && close(bare_king(a, &pa), bare_king(b, &pb))
        && close(pa.noise_cp, pb.noise_cp)
        && pa.hash_mb == pb.hash_mb
        && (0..=64).all(|i| {
            let r = f64::from(i) / 64.0;
            close(capped_nodes(a, &pa, r), capped_nodes(b, &pb, r))
                && close(pa.noise_multiplier(r), pb.noise_multiplier(r))
                && close(pa.blindness_at(r), pb.blindness_at(r))
                // The clip a draw meets (a clip at MAX_NOISE_CP or beyond is none).
                && pa.noise_clip_at(pa.noise_at(r)) == pb.noise_clip_at(pb.noise_at(r))
        })
}

/// Where version `version` of a coefficients file is kept in `history_dir` (calibration keeps
/// every version it replaces there; the arena reads them back to judge a shipped version on
/// its own games).
pub fn history_path(history_dir: &Path, version: u32) -> PathBuf {
    history_dir.join(format!("coefficients-v{version}.toml"))
}

/// The coefficients `versions` as kept in `history_dir` ([`history_path`]). A version whose
/// file is missing is left out; one whose file is unreadable or holds another version too,
/// with a warning that its games are `lost` ("not compared", "not judged").
pub fn history_versions(
    history_dir: &Path,
    versions: impl IntoIterator<Item = u32>,
    lost: &str,
) -> BTreeMap<u32, Coefficients> {
    let mut out = BTreeMap::new();
    for version in versions {
        let path = history_path(history_dir, version);
        if !path.exists() {
            continue;
        }
        match Coefficients::load(&path) {
            Ok(c) if c.version == version => {
                out.insert(version, c);
            }
            Ok(c) => tracing::warn!(
                "{} holds version {}, not {version}: its games are {lost}",
                path.display(),
                c.version
            ),
            Err(e) => tracing::warn!("{e}: the games of version {version} are {lost}"),
        }
    }
    out
}

/// The least noise (cp) of a game's first moves: enough that the top levels, whose own noise is
/// a few centipawns, do not replay one opening game after game (levels 9 and 10 met a fixed
/// opponent with the same first 10 plies in a quarter of their games), small enough to choose
/// only among moves of about equal value. Full to move 6, gone from move 12 of a game from the
/// standard start (a game set up from a position has no opening); levels noisier than this
/// (1–8) are unchanged.
pub const OPENING_NOISE_CP: f64 = 30.0;

fn opening_noise_floor(game: &Game) -> f64 {
    if *game.initial_position() != shakmaty::Chess::default() {
        return 0.0;
    }
    let fullmove = (game.moves().len() / 2 + 1) as f64;
    OPENING_NOISE_CP * ((12.0 - fullmove) / 6.0).clamp(0.0, 1.0)
}

/// Whether the side not to move has nothing but its king while the side to move has more.
fn opponent_has_bare_king(game: &Game) -> bool {
    let position = game.position();
    let board = position.board();
    let them = board.by_color(!position.turn());
    let us = board.by_color(position.turn());
    them.count() == 1 && us.count() > 1
}

/// A bottom of the ladder for the tests of the levels and of calibration.
/// Parses a level list: `3`, `1..5` (inclusive), `1,3,5`, `2.5`.
pub fn parse_levels(text: &str) -> Result<Vec<f64>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim) {
        let number = |s: &str| -> Result<f64, String> {
            let v: f64 = s
                .trim()
                .parse()
                .map_err(|_| format!("level {s:?} is not a number"))?;
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("level {s:?} must be positive"));
            }
            Ok(v)
        };
        if let Some((a, b)) = part.split_once("..") {
            let (a, b) = (number(a)?, number(b)?);
            if b < a {
                return Err(format!("level range {part:?} is empty"));
            }
            let mut l = a;
            while l <= b + 1e-9 {
                out.push(l);
                l += 1.0;
            }
        } else {
            out.push(number(part)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
impl Coefficients {
    /// These coefficients with the noise capped at `max_noise_cp` and up to 60 % of threats
    /// missed at the bottom (half that at exponent 0.5).
    pub(crate) fn with_test_bottom(mut self, max_noise_cp: f64) -> Coefficients {
        self.max_noise_cp = Some(max_noise_cp);
        self.blindness = Some(BlindnessCurve {
            max: 0.6,
            mid: 0.5,
            width: 0.7,
            min: 0.0,
        });
        self
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Version 1 of the shipped file: history files never change, so tests that edit a known
    /// text do not follow calibration.
    const V1_TOML: &str = include_str!("../calibration/history/coefficients-v1.toml");

    /// The error of `text` read as the coefficients file `c.toml`.
    fn refusal(text: &str) -> String {
        Coefficients::parse(text, "c.toml").unwrap_err().to_string()
    }

    /// The line number (from 1) of the line `line` in `text`: where an error must point.
    fn line_of(text: &str, line: &str) -> usize {
        1 + text.lines().position(|l| l == line).unwrap()
    }

    #[test]
    fn builtin_coefficients_are_valid_and_grow_with_level() {
        let c = Coefficients::builtin();
        // Every shipped level is at least as strong as the one below: more nodes (or as many),
        // less noise (or as much), no more blindness.
        for level in 1..10 {
            let (a, b) = (
                LevelParams::new(&c, level as f64),
                LevelParams::new(&c, level as f64 + 1.0),
            );
            assert!(b.nodes >= a.nodes, "level {level}: {a:?} {b:?}");
            assert!(b.noise_cp <= a.noise_cp, "level {level}");
            assert!(b.blind_probability <= a.blind_probability, "level {level}");
            assert!(a.exponent < b.exponent, "level {level}");
        }
        // Without offsets, one level is a factor b in nodes.
        let v1 = Coefficients::parse(V1_TOML, "v1").unwrap();
        let p1 = LevelParams::new(&v1, 1.0);
        let p2 = LevelParams::new(&v1, 2.0);
        assert!((p2.nodes as f64 / p1.nodes as f64 - v1.b).abs() < 0.1 * v1.b);
    }

    #[test]
    fn endgame_scaling_adds_one_level_per_halving() {
        let c = Coefficients::builtin();
        let p = LevelParams::new(&c, 3.0);
        assert_eq!(p.node_multiplier(1.0), 1.0);
        let k = c.endgame_levels_per_halving;
        assert!((p.node_multiplier(0.5) - c.b.powf(k)).abs() < 1e-9);
        assert!((p.noise_multiplier(0.5) - c.d.powf(k)).abs() < 1e-9);
        // floored at r_min
        assert_eq!(p.node_multiplier(0.0), p.node_multiplier(c.r_min));
        let mut off = c.clone();
        off.endgame_nodes = false;
        off.endgame_noise = false;
        let p = LevelParams::new(&off, 3.0);
        assert_eq!(p.node_multiplier(0.25), 1.0);
        assert_eq!(p.noise_multiplier(0.25), 1.0);
    }

    #[test]
    fn bad_coefficients_name_the_key() {
        let text = Coefficients::DEFAULT_TOML.replace("\nb = ", "\nb = 0.5 #");
        let err = refusal(&text);
        let line = 1 + Coefficients::DEFAULT_TOML
            .lines()
            .position(|l| l.starts_with("b ="))
            .unwrap();
        assert!(
            err.starts_with(&format!("c.toml:{line}: b: must be greater")),
            "{err}"
        );
        let err = refusal("version = \"x\"");
        assert!(err.starts_with("c.toml:1: version: invalid type"), "{err}");
    }

    /// A version a level plays with: its key in the file, where the file's value goes and where
    /// the level's, the version a file without the key plays, the refusal of an unknown one.
    type Version = (
        &'static str,
        fn(&Coefficients) -> u32,
        fn(&LevelParams) -> u32,
        u32,
        &'static str,
    );

    /// Version 41, the last ladder without a network or the humane model: a fixture that
    /// never changes when a new version ships (history files are never rewritten).
    pub(crate) const VERSION_41: &str =
        include_str!("../calibration/history/coefficients-v41.toml");

    #[test]
    fn a_network_is_named_only_when_the_levels_play_with_one() {
        // Files without the key write none: they keep their bytes.
        let plain = Coefficients::parse(VERSION_41, "c.toml").unwrap();
        assert_eq!(plain.network, 0);
        assert_eq!(LevelParams::new(&plain, 5.0).network, 0);
        assert!(!toml::to_string(&plain).unwrap().contains("network"));
        let named = VERSION_41.replacen("\nsearch = ", "\nnetwork = 1\nsearch = ", 1);
        let with_network = Coefficients::parse(&named, "c.toml").unwrap();
        assert_eq!(LevelParams::new(&with_network, 3.0).network, 1);
        assert!(
            toml::to_string(&with_network)
                .unwrap()
                .contains("network = 1")
        );
        let err = refusal(&named.replace("network = 1", "network = 77"));
        assert!(err.contains("network: no built-in network"), "{err}");
    }

    /// Version 41's text with `network` played from `from_level` up.
    pub(crate) fn network_from(network: u32, from_level: u32) -> String {
        VERSION_41.replacen(
            "\nsearch = ",
            &format!("\nnetwork = {network}\nnetwork_from_level = {from_level}\nsearch = "),
            1,
        )
    }

    #[test]
    fn the_network_is_played_from_its_level_up_and_the_hand_crafted_evaluation_below() {
        let named = network_from(1, 7);
        let c = Coefficients::parse(&named, "c.toml").unwrap();
        let network_of = |level: f64| LevelParams::new(&c, level).network;
        assert_eq!(
            (
                network_of(1.0),
                network_of(6.99),
                network_of(7.0),
                network_of(12.0)
            ),
            (0, 0, 1, 1)
        );
        // Written back, the file keeps the split.
        let again = Coefficients::parse(&toml::to_string(&c).unwrap(), "c.toml").unwrap();
        assert_eq!(again.network_from_level, 7.0);
        // A split without a network, or a level that is no level, is refused by name.
        let err = refusal(&named.replace("network = 1\n", ""));
        assert!(err.contains("network_from_level: needs network"), "{err}");
        let err = refusal(&named.replace("network_from_level = 7", "network_from_level = -1"));
        assert!(err.contains("network_from_level: must be a level"), "{err}");
    }

    #[test]
    fn levels_play_with_the_evaluation_and_search_they_were_calibrated_with() {
        // A file without `eval_weights` predates the tuned weights: its levels keep version 0.
        // One without `search` predates search versions: its levels keep the first search.
        let versions: [Version; 2] = [
            (
                "eval_weights",
                |c| c.eval_weights,
                |p| p.eval_weights,
                0,
                "no evaluation weights",
            ),
            (
                "search",
                |c| c.search,
                |p| p.search,
                1,
                "no search of that version",
            ),
        ];
        let shipped = Coefficients::builtin();
        for (key, in_file, in_level, before, unknown) in versions {
            let line = format!("\n{key} = {}\n", in_file(&shipped));
            let text = Coefficients::DEFAULT_TOML.replace(&line, "\n");
            let old = Coefficients::parse(&text, "c.toml").unwrap();
            assert_eq!(in_level(&LevelParams::new(&old, 5.0)), before, "{key}");
            let level = LevelParams::new(&shipped, 5.0);
            assert_eq!(in_level(&level), in_file(&shipped), "{key}");
            let text = text.replacen("[blindness]", &format!("{key} = 99\n[blindness]"), 1);
            let err = refusal(&text);
            assert!(err.contains(&format!("{key}: {unknown}")), "{err}");
        }
    }

    /// What the daemon plays it records, and every reader of the results log reads it back:
    /// a node cap above the log's 10^10 is refused by key, and a noise past its 100,000 cp
    /// (a file without `max_noise_cp`, a level far below the line) is played and recorded at
    /// 100,000.
    #[test]
    fn a_level_plays_inside_what_the_results_log_records() {
        let huge_cap = V1_TOML.replace("max_nodes = 50000000", "max_nodes = 20000000000");
        let err = refusal(&huge_cap);
        let line = line_of(&huge_cap, "max_nodes = 20000000000");
        assert!(
            err.starts_with(&format!(
                "c.toml:{line}: max_nodes: must be between 1 and 10^10"
            )),
            "{err}"
        );
        let wild =
            Coefficients::parse(&V1_TOML.replace("s0 = 288.0", "s0 = 1e9"), "c.toml").unwrap();
        let p = LevelParams::new(&wild, 1.0);
        assert_eq!(p.noise_cp, *crate::results::NOISE_RANGE.end());
    }

    #[test]
    fn values_that_would_abort_or_poison_are_refused_by_key() {
        let huge_hash = V1_TOML.replacen("mb = 1\n", "mb = 100000000\n", 1);
        let err = refusal(&huge_hash);
        let line = line_of(&huge_hash, "mb = 100000000");
        assert!(
            err.starts_with(&format!(
                "c.toml:{line}: hash[0].mb: must be between 1 and 4096"
            )),
            "{err}"
        );
        let absurd = V1_TOML.replace("\"3\" = 1000.0", "\"3\" = 1e308");
        let err = refusal(&absurd);
        let line = line_of(&absurd, "\"3\" = 1e308");
        assert!(
            err.starts_with(&format!("c.toml:{line}: ratings.\"3\": must be a rating")),
            "{err}"
        );
        let mut c = Coefficients::parse(V1_TOML, "v1").unwrap();
        c.offsets.insert("2".into(), 1e300);
        let err = refusal(&c.to_toml());
        assert!(err.contains(": offsets.\"2\": must be a number"), "{err}");
    }

    #[test]
    fn type_and_missing_field_errors_name_the_key() {
        let text = V1_TOML.replace("\nn0 = 16.0", "\nn0 = \"sixteen\"");
        let err = refusal(&text);
        assert!(err.contains("n0: invalid type"), "{err}");
        let line = V1_TOML.lines().position(|l| l.starts_with("n0 =")).unwrap() + 1;
        assert!(err.starts_with(&format!("c.toml:{line}: n0: ")), "{err}");
        let text = V1_TOML.replace("\nb = 2.0", "");
        let err = refusal(&text);
        assert!(err.contains("b: missing"), "{err}");
        let text = V1_TOML.replacen("mb = 1\n", "mb = -1\n", 1);
        let err = refusal(&text);
        assert!(err.contains("hash[0].mb: invalid value"), "{err}");
    }

    #[test]
    fn the_bottom_weakens_smoothly_and_monotonely_below_level_one() {
        let c = Coefficients::builtin().with_test_bottom(300.0);
        let mut previous: Option<LevelParams> = None;
        let mut level = -4.0;
        while level <= 12.0 {
            let p = LevelParams::new(&c, level);
            assert!(p.noise_cp <= 300.0, "noise capped: {}", p.noise_cp);
            assert!((0.0..=0.6).contains(&p.blind_probability));
            if let Some(q) = &previous {
                // Monotone: never weaker one step up...
                assert!(p.nodes >= q.nodes && p.noise_cp <= q.noise_cp);
                assert!(p.blind_probability <= q.blind_probability);
                // ...and continuous: a small step moves the blindness a little.
                assert!(
                    (q.blind_probability - p.blind_probability) < 0.05,
                    "{level}"
                );
            }
            previous = Some(p);
            level += 0.05;
        }
        assert!(LevelParams::new(&c, -4.0).blind_probability > 0.55);
        assert!(LevelParams::new(&c, 6.0).blind_probability < 0.001);
    }

    #[test]
    fn a_blindness_floor_keeps_a_lapse_at_every_level_and_is_absent_by_default() {
        let mut c = Coefficients::builtin().with_test_bottom(300.0);
        c.blindness.as_mut().unwrap().min = 0.03;
        for level in [1.0, 6.0, 10.0, 12.0, 30.0] {
            let p = LevelParams::new(&c, level).blind_probability;
            assert!((0.03..=0.6).contains(&p), "level {level}: {p}");
        }
        assert!((LevelParams::new(&c, 30.0).blind_probability - 0.03).abs() < 1e-9);
        assert!(LevelParams::new(&c, -4.0).blind_probability > 0.55);
        // A file without the key (every version so far) has none, and says none when written.
        let shipped = Coefficients::builtin();
        assert_eq!(shipped.blindness.map(|b| b.min), Some(0.0));
        let written = shipped.to_toml();
        assert!(
            !written.lines().any(|l| l.trim_start().starts_with("min =")),
            "{written}"
        );
        // A floor above the curve's top is refused, naming the key.
        let text =
            Coefficients::DEFAULT_TOML.replacen("[blindness]\n", "[blindness]\nmin = 0.9\n", 1);
        let err = refusal(&text);
        assert!(err.contains("blindness.min"), "{err}");
    }

    /// The shipped coefficients without their noise clip, for the tests that set their own.
    fn unclipped_toml() -> String {
        let text = Coefficients::DEFAULT_TOML;
        let Some(start) = text.find("[noise_clip]") else {
            return text.to_string();
        };
        let end = text[start..]
            .find("\n[")
            .map_or(text.len(), |i| start + i + 1);
        format!("{}{}", &text[..start], &text[end..])
    }

    fn unclipped() -> Coefficients {
        Coefficients::parse(&unclipped_toml(), "unclipped").unwrap()
    }

    /// The shipped ladder unclipped, the same with levels 5 to 6 clipped by x (`unit`: the
    /// clip's line, "scales = 1.0" or "cp = 300.0"; widening every `widen` of x), and the text
    /// of the clipped one.
    fn clipped_5_to_6(unit: &str, widen: f64) -> (Coefficients, Coefficients, String) {
        let shipped = unclipped();
        let x = |level: f64| LevelParams::new(&shipped, level).exponent;
        let text = format!(
            "{}\n[noise_clip]\n{unit}\nfrom_x = {}\nto_x = {}\nwiden_x = {widen}\n",
            unclipped_toml(),
            x(5.0),
            x(6.0)
        );
        let clipped = Coefficients::parse(&text, "c.toml").unwrap();
        (shipped, clipped, text)
    }

    /// A summit above level 11's model rating (2550) lowers level 12's stumbles (2760) and
    /// leaves every other level playing as it did, keeping its games: `plays_alike` compares
    /// the chance a level plays by, not the tables that make it. Written back; a bad key is
    /// named with its line.
    #[test]
    fn a_summit_replays_only_the_levels_above_its_start() {
        const V117: &str = include_str!("../calibration/history/coefficients-v117.toml");
        let before = Coefficients::parse(V117, "v117").unwrap();
        let summit =
            "[humane.stumble.summit]\nfrom_rating = 2600.0\nrating = 2760.0\nchance = 0.2\n";
        let text = V117.replace("[humane.notice]", &format!("{summit}\n[humane.notice]"));
        let after = Coefficients::parse(&text, "after").unwrap();
        for level in (1..=12).map(f64::from) {
            assert_eq!(
                plays_alike(&before, &after, level),
                level != 12.0,
                "level {level}"
            );
        }
        let stumble = |c: &Coefficients| c.humane.unwrap().stumble.unwrap();
        let again = Coefficients::parse(&after.to_toml(), "again").unwrap();
        assert_eq!(stumble(&again), stumble(&after));
        assert!(stumble(&again).summit.is_some());
        let bad = text.replace("rating = 2760.0", "rating = 2500.0");
        let err = refusal(&bad);
        let line = line_of(&bad, "rating = 2500.0");
        assert!(
            err.starts_with(&format!("c.toml:{line}: humane.stumble.summit.rating:")),
            "{err}"
        );
    }

    /// A later 5-ply look moves only the levels whose model rating lies between Rodent's 2300
    /// and the new threshold: version 111's level 10 (2340) replays, the others keep their
    /// games; the key is written back and a bad one named.
    #[test]
    fn a_later_five_ply_look_replays_only_the_levels_it_reaches() {
        const V111: &str = include_str!("../calibration/history/coefficients-v111.toml");
        let shipped = Coefficients::parse(V111, "v111").unwrap();
        let text = V111.replace(
            "top_chance = 0.25\n",
            "top_chance = 0.25\nfive_plies_from_rating = 2400.0\n",
        );
        let later = Coefficients::parse(&text, "later").unwrap();
        let stumble = |c: &Coefficients| c.humane.unwrap().stumble.unwrap();
        assert_eq!(stumble(&later).five_plies_from_rating, Some(2400.0));
        for level in (1..=12).map(f64::from) {
            assert_eq!(
                plays_alike(&shipped, &later, level),
                level != 10.0,
                "level {level}"
            );
        }
        let again = Coefficients::parse(&later.to_toml(), "again").unwrap();
        assert_eq!(stumble(&again), stumble(&later));
        let err = refusal(&text.replace("= 2400.0", "= 1800.0"));
        assert!(
            err.contains("humane.stumble.five_plies_from_rating"),
            "{err}"
        );
    }

    /// `clipped` (parsed from `text`) is written and read back whole, and each (from, to, key)
    /// edit of `text` is refused naming `key`.
    fn assert_kept_whole_and_bad_clips_named(
        clipped: &Coefficients,
        text: &str,
        cases: &[(&str, &str, &str)],
    ) {
        let again = Coefficients::parse(&clipped.to_toml(), "again").unwrap();
        assert_eq!(again.noise_clip, clipped.noise_clip);
        for (from, to, key) in cases {
            let err = refusal(&text.replace(from, to));
            assert!(err.contains(key), "{from} -> {to}: {err}");
        }
    }

    /// The levels `gone` says the clip no longer reaches (given how far outside levels 5-6's
    /// span in x they are) play unclipped and keep their games; the others do not; at least
    /// four levels are that far.
    fn assert_far_levels_unclipped(
        shipped: &Coefficients,
        clipped: &Coefficients,
        gone: impl Fn(f64) -> bool,
    ) {
        let x = |level: f64| LevelParams::new(shipped, level).exponent;
        let mut far = 0;
        for level in (1..=12).map(f64::from) {
            let outside = (x(5.0) - x(level)).max(0.0) + (x(level) - x(6.0)).max(0.0);
            let p = LevelParams::new(clipped, level);
            let none = p.noise_clip_scales == f64::INFINITY && p.noise_clip_cp == MAX_NOISE_CP;
            assert_eq!(none, gone(outside), "level {level}: {p:?}");
            assert_eq!(plays_alike(shipped, clipped, level), none, "level {level}");
            far += usize::from(none);
        }
        assert!(far >= 4, "the test needs levels beyond the clip's reach");
    }

    #[test]
    fn a_noise_clip_by_x_cuts_the_tails_in_its_span_and_widens_smoothly_outside() {
        // One noise scale from level 5's x to level 6's, doubling every 0.2 of x outside.
        let (shipped, clipped, text) = clipped_5_to_6("scales = 1.0", 0.2);
        let x = |level: f64| LevelParams::new(&shipped, level).exponent;
        let game = Game::new(None, false).unwrap();
        for level in [5.0, 6.0] {
            let p = LevelParams::new(&clipped, level);
            let noise = p.search_params(&game, 7).noise;
            assert!((p.noise_clip_scales - 1.0).abs() < 1e-9, "level {level}");
            assert_eq!(
                noise.clip_cp,
                noise.scale_cp.round() as i32,
                "level {level}"
            );
            let keys = (0..4_000u64).map(|k| k.wrapping_mul(0x2545_f491_4f6c_dd1d));
            let cut = keys
                .filter(|&k| noise.draw_cp(k).abs() == noise.clip_cp)
                .count();
            // The logistic law puts 2/(1 + e) = 54% of its draws beyond one scale.
            assert!((1_900..2_400).contains(&cut), "level {level}: {cut}");
        }
        // Outside the span the clip widens without a step, and is gone far away.
        let mut last = 1.0;
        for i in 0..=40 {
            let level = 5.0 - f64::from(i) * 0.05;
            let scales = LevelParams::new(&clipped, level).noise_clip_scales;
            assert!(scales >= last, "level {level}: {scales} below {last}");
            if level < 5.0 && scales.is_finite() {
                // No step: the clip grows as 2^(Δx / 0.2), never faster.
                let step = scales / LevelParams::new(&clipped, level + 0.05).noise_clip_scales;
                let dx = x(level + 0.05) - x(level);
                assert!(
                    step <= (dx / 0.2).exp2() + 1e-9,
                    "level {level}: a step of {step}"
                );
            }
            last = scales;
        }
        // Three doublings past the span a clip of one scale reaches 8 scales and is gone: those
        // levels play as they did and keep their games.
        assert_far_levels_unclipped(&shipped, &clipped, |outside| outside >= 0.2 * 3.0);
        assert!(!plays_alike(&shipped, &clipped, 5.0));
        // In the endgame the clip follows the smaller noise: the same share of draws cut.
        let p = LevelParams::new(&clipped, 5.0);
        assert_eq!(
            p.noise_clip_at(p.noise_at(0.25)),
            p.noise_at(0.25).round() as i32
        );
        // Written and read back whole; bad values and mixed forms name their key.
        assert_kept_whole_and_bad_clips_named(
            &clipped,
            &text,
            &[
                ("scales = 1.0", "scales = -1.0", "noise_clip.scales"),
                ("widen_x = 0.2", "widen_x = 0.0", "noise_clip.widen_x"),
                (
                    "widen_x = 0.2",
                    "widen_x = 0.2\ncp = 150.0",
                    "noise_clip.scales",
                ),
                ("scales = 1.0\n", "", "noise_clip.scales"),
            ],
        );
        let err = refusal(&format!("{}\n[noise_clip]\n", unclipped_toml()));
        assert!(err.contains("noise_clip"), "{err}");
        let err = refusal(&text.replace(&format!("to_x = {}", x(6.0)), "to_x = 1.0"));
        assert!(err.contains("noise_clip.to_x"), "{err}");
    }

    #[test]
    fn a_noise_clip_by_x_in_centipawns_keeps_its_cp_in_the_span_and_widens_outside() {
        let (shipped, clipped, text) = clipped_5_to_6("cp = 300.0", 0.15);
        let x = |level: f64| LevelParams::new(&shipped, level).exponent;
        let game = Game::new(None, false).unwrap();
        // Level 5's noise is about one scale of 300 cp, level 6's less: the same clip for both,
        // and in the endgame too, where it no longer bites.
        for level in [5.0, 6.0] {
            let p = LevelParams::new(&clipped, level);
            assert_eq!(
                p.search_params(&game, 7).noise.clip_cp,
                300,
                "level {level}"
            );
            assert_eq!(p.noise_clip_at(p.noise_at(0.25)), 300, "level {level}");
        }
        // Below the span the clip grows as 2^(Δx / 0.15), without a step...
        let mut last = 300;
        for i in 1..=20 {
            let level = 5.0 - f64::from(i) * 0.05;
            let cp = LevelParams::new(&clipped, level).noise_clip_cp;
            let dx = x(level + 0.05) - x(level);
            assert!(
                cp >= last && f64::from(cp) <= f64::from(last) * (dx / 0.15).exp2() + 1.0,
                "{level}: {cp}"
            );
            last = cp;
        }
        // ...and is gone where it would pass MAX_NOISE_CP: those levels keep their games.
        assert_far_levels_unclipped(&shipped, &clipped, |outside| {
            300.0 * (outside / 0.15).exp2() >= f64::from(MAX_NOISE_CP)
        });
        let lowest = clipped.noise_clip.unwrap().lowest_clipped_x().unwrap();
        let want = x(5.0) - 0.15 * (f64::from(MAX_NOISE_CP) / 300.0).log2();
        assert!((lowest - want).abs() < 1e-9, "{lowest} vs {want}");
        assert_kept_whole_and_bad_clips_named(
            &clipped,
            &text,
            &[
                ("cp = 300.0", "cp = 0.5", "noise_clip.cp"),
                (
                    "cp = 300.0",
                    "cp = 300.0\nscales = 1.0",
                    "noise_clip.scales",
                ),
                (
                    "cp = 300.0",
                    "cp = 300.0\nfrom_level = 4.0",
                    "noise_clip.from_x",
                ),
            ],
        );
    }

    #[test]
    fn a_noise_clip_bounds_the_draws_of_its_levels_only() {
        let shipped = unclipped();
        let text = format!(
            "{}\n[noise_clip]\ncp = 150.0\nfrom_level = 4.0\nto_level = 6.0\n",
            unclipped_toml()
        );
        let clipped = Coefficients::parse(&text, "c.toml").unwrap();
        let game = Game::new(None, false).unwrap();
        for level in 1..=12 {
            let level = f64::from(level);
            let params = LevelParams::new(&clipped, level).search_params(&game, 7);
            let inside = (4.0..=6.0).contains(&level);
            assert_eq!(
                params.noise.clip_cp,
                if inside { 150 } else { MAX_NOISE_CP }
            );
            // Every draw of a clipped level within the clip; the others as before.
            let worst = (0..2_000u64)
                .map(|k| {
                    params
                        .noise
                        .draw_cp(k.wrapping_mul(0x2545_f491_4f6c_dd1d))
                        .abs()
                })
                .max()
                .unwrap();
            if inside {
                assert!(worst <= 150, "level {level}: {worst}");
            }
            // Only the clipped levels play differently: calibration keeps the others' games.
            assert_eq!(plays_alike(&shipped, &clipped, level), !inside, "{level}");
        }
        // The level whose noise is wildest reaches beyond the clip unclipped.
        let wild = LevelParams::new(&shipped, 4.0).search_params(&game, 7);
        assert!((0..2_000u64).any(|k| {
            wild.noise
                .draw_cp(k.wrapping_mul(0x2545_f491_4f6c_dd1d))
                .abs()
                > 150
        }));
        // Written and read back whole; bad values and mixed forms name their key.
        assert_kept_whole_and_bad_clips_named(
            &clipped,
            &text,
            &[
                ("cp = 150.0", "cp = 0.0", "noise_clip.cp"),
                ("to_level = 6.0", "to_level = 3.0", "noise_clip.to_level"),
                (
                    "from_level = 4.0",
                    "from_level = nan",
                    "noise_clip.from_level",
                ),
            ],
        );
    }

    #[test]
    fn blindness_fades_as_material_comes_off() {
        let c = Coefficients::builtin().with_test_bottom(300.0);
        let p = LevelParams::new(&c, 0.0);
        assert!(p.blindness_at(0.25) < p.blindness_at(0.5));
        assert!(p.blindness_at(0.5) < p.blindness_at(1.0));
        assert_eq!(p.blindness_at(1.0), p.blind_probability);
    }

    #[test]
    fn a_bare_king_is_beaten_at_full_strength_by_every_level() {
        let c = Coefficients::builtin().with_test_bottom(300.0);
        // White: king and rook; black: bare king.
        let game = Game::new(Some("8/8/8/3k4/8/8/8/R3K3 w - - 0 1"), false).unwrap();
        for level in [-3.0, 1.0, 4.0] {
            let p = LevelParams::new(&c, level);
            let attack = p.search_params(&game, 5);
            assert_eq!(attack.noise, Noise::NONE);
            assert_eq!(attack.blindness, Blindness::NONE);
            assert!(attack.limits.nodes.unwrap() >= BARE_KING_NODES);
        }
        // The side with the bare king plays as its level does.
        let game = Game::new(Some("8/8/8/3k4/8/8/8/R3K3 b - - 0 1"), false).unwrap();
        let defence = LevelParams::new(&c, 1.0).search_params(&game, 5);
        assert!(defence.noise.scale_cp > 0.0);
    }

    #[test]
    fn the_top_levels_vary_their_first_moves_and_no_other_moves() {
        let c = Coefficients::parse(V1_TOML, "v1").unwrap();
        let top = LevelParams::new(&c, 10.0);
        let low = LevelParams::new(&c, 1.0);
        let start = Game::startpos();
        assert!(top.noise_cp < OPENING_NOISE_CP);
        assert_eq!(
            top.search_params(&start, 1).noise.scale_cp,
            OPENING_NOISE_CP
        );
        assert_eq!(low.search_params(&start, 1).noise.scale_cp, low.noise_cp);
        // Move 12 of a game: the level's own noise again.
        let mut game = Game::startpos();
        for uci in ["g1f3", "g8f6", "f3g1", "f6g8"].iter().cycle().take(22) {
            game.play_uci(uci).unwrap();
        }
        assert_eq!(top.search_params(&game, 1).noise.scale_cp, top.noise_cp);
        // A game set up from a position has no opening.
        let fen = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3";
        let set_up = Game::new(Some(fen), false).unwrap();
        assert_eq!(top.search_params(&set_up, 1).noise.scale_cp, top.noise_cp);
    }

    #[test]
    fn a_fractional_level_is_as_calibrated_as_its_neighbours() {
        let c = Coefficients::builtin();
        // Whole levels play exactly as their own offsets say.
        for (key, offset) in &c.offsets {
            let level: f64 = key.parse().unwrap();
            let p = LevelParams::new(&c, level);
            assert_eq!(p.offset, *offset, "level {key}");
            assert_eq!(p.exponent, level + offset, "level {key}");
        }
        // Between two levels, strength lies between theirs: the offset is interpolated, so a
        // level like 3.5 does not fall back to offset 0 (3.5 was x = 3.5 while 3 and 4 are
        // x = 3.21 and 4.53; 9.5 was x = 9.5 while 9 and 10 are x = 8.87 and 10.39).
        let top = c.top_calibrated_level().unwrap();
        for whole in 1..top as i32 {
            let (lo, hi) = (
                LevelParams::new(&c, whole as f64),
                LevelParams::new(&c, whole as f64 + 1.0),
            );
            for frac in [0.1, 0.25, 0.5, 0.7, 0.9] {
                let level = whole as f64 + frac;
                let p = LevelParams::new(&c, level);
                assert!(
                    lo.exponent < p.exponent && p.exponent < hi.exponent,
                    "level {level}: x = {} not between {} and {}",
                    p.exponent,
                    lo.exponent,
                    hi.exponent
                );
                assert!(lo.nodes <= p.nodes && p.nodes <= hi.nodes, "level {level}");
                assert!(lo.noise_cp >= p.noise_cp && p.noise_cp >= hi.noise_cp);
                assert!(lo.blind_probability >= p.blind_probability);
                let expected = c.offset(whole as f64)
                    + frac * (c.offset(whole as f64 + 1.0) - c.offset(whole as f64));
                assert!((p.offset - expected).abs() < 1e-12, "level {level}");
            }
        }
        // UCI_Elo 1000 maps to a level between 3 and 4, played between them.
        let level = c.level_for_rating(1000.0).unwrap();
        assert!(level > 3.0 && level < 4.0, "{level}");
        let r = c.rating_of(level).unwrap();
        assert!((r - 1000.0).abs() < 1e-9, "{r}");
        // Beyond the calibrated levels the end's offset holds (continuous, no jump to 0).
        assert_eq!(c.offset(top + 0.5), c.offset(top));
        assert_eq!(c.offset(0.5), c.offset(1.0));
        // Without offsets, every level has offset 0.
        let v1 = Coefficients::parse(V1_TOML, "v1").unwrap();
        assert_eq!(LevelParams::new(&v1, 3.5).offset, 0.0);
    }

    #[test]
    fn the_targets_are_one_line_on_a_named_scale() {
        let c = Coefficients::builtin();
        let t = c.targets();
        assert!(!t.scale.is_empty() && TARGET_PERFS.contains(&t.perf.as_str()));
        for level in 1..10 {
            let (a, b) = (t.target(level as f64), t.target(level as f64 + 1.0));
            assert!((b - a - t.step).abs() < 1e-9 && t.step > 0.0);
        }
        // A file without [targets] (the history) has the shipped ones; a broken one is refused
        // by key and line.
        let v1 = Coefficients::parse(V1_TOML, "v1").unwrap();
        assert_eq!(v1.targets, None);
        assert_eq!(v1.targets(), t);
        let text = Coefficients::DEFAULT_TOML.replace("step = 210.0", "step = -5.0");
        let err = refusal(&text);
        let line = line_of(&text, "step = -5.0");
        assert!(
            err.starts_with(&format!("c.toml:{line}: targets.step: must be a positive")),
            "{err}"
        );
        // Written back, they survive.
        let again = Coefficients::parse(&c.to_toml(), "again").unwrap();
        assert_eq!(again.targets, c.targets);
    }

    #[test]
    fn rating_maps_to_interpolated_level() {
        let mut c = Coefficients::builtin();
        c.ratings = [("1", 600.0), ("2", 800.0), ("3", 1000.0)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        assert_eq!(c.level_for_rating(700.0), Some(1.5));
        assert_eq!(c.level_for_rating(100.0), Some(1.0));
        assert_eq!(c.level_for_rating(5000.0), Some(3.0));
    }

    #[test]
    fn a_level_list_reads_numbers_ranges_and_lists() {
        assert_eq!(parse_levels("1..3,5").unwrap(), [1.0, 2.0, 3.0, 5.0]);
        assert_eq!(parse_levels("2.5").unwrap(), [2.5]);
        assert!(parse_levels("0").is_err());
        assert!(parse_levels("4..2").is_err());
        assert!(parse_levels("x").is_err());
    }
}
