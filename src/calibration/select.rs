//! Which logged games a calibration uses: filters by perf, source and coefficients version,
//! leaves out games that say nothing about strength, and counts every game left out.
//!
//! A game of a version outside the window still counts for its level when that level plays
//! exactly as it does in the current version ([`plays_alike`]: same evaluation, nodes, noise,
//! hash and endgame scaling): a new version that moves some levels must not throw away the games of the
//! levels it left alone.
//!
//! Games against people and games against bots are two samples, never one: on Lichess a bot's
//! rating runs about 250 below its strength against people (lila#13602, lila#19063; maia9 is
//! rated 1909 by people and 1496 by bots), so a level's rating among bots is another scale. The
//! opponents asked for ([`Opponents`], people by default) are the games the estimate and the
//! update use; the others are kept apart, to be estimated and reported on their own.

use std::collections::{BTreeMap, BTreeSet, HashMap};

pub use crate::levels::plays_alike;
use crate::levels::{Coefficients, level_key};
use crate::rating::{Observation, PROVISIONAL_RD, glicko_g};
use crate::results::{GameRecord, Source};

/// Which coefficients versions count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Versions {
    /// Versions `from..=to`.
    Range(u32, u32),
    /// The `n` most recent versions up to and including `current`.
    Window { current: u32, n: u32 },
}

impl Versions {
    pub fn contains(&self, v: u32) -> bool {
        match *self {
            Versions::Range(a, b) => (a..=b).contains(&v),
            Versions::Window { current, n } => v <= current && v + n > current,
        }
    }

    pub fn describe(&self) -> String {
        match *self {
            Versions::Range(a, b) if a == b => format!("version {a}"),
            Versions::Range(a, b) => format!("versions {a}..{b}"),
            Versions::Window { current, n } => {
                format!(
                    "versions {}..{current}",
                    current.saturating_sub(n.saturating_sub(1))
                )
            }
        }
    }

    /// Parses "3..5" or "4".
    pub fn parse_range(text: &str) -> Result<Versions, String> {
        let bad = || format!("`{text}` is not a version or a range like 3..5");
        match text.split_once("..") {
            Some((a, b)) => {
                let a: u32 = a.trim().parse().map_err(|_| bad())?;
                let b: u32 = b.trim().parse().map_err(|_| bad())?;
                if a > b {
                    return Err(format!("version range `{text}` is empty"));
                }
                Ok(Versions::Range(a, b))
            }
            None => {
                let v: u32 = text.trim().parse().map_err(|_| bad())?;
                Ok(Versions::Range(v, v))
            }
        }
    }
}

/// Which opponents a level's estimate is made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Opponents {
    /// People only (the live loop: the scale the targets are set in); bots' games apart.
    #[default]
    Humans,
    /// Bots only (arena anchors, other bots on Lichess); people's games apart.
    Bots,
    /// Everyone in one sample (the arena, whose opponents are all engines).
    All,
}

impl Opponents {
    /// Whether a game against an opponent flagged `bot` is in the sample asked for.
    pub fn admits(self, bot: bool) -> bool {
        match self {
            Opponents::Humans => !bot,
            Opponents::Bots => bot,
            Opponents::All => true,
        }
    }

    /// The opponents the estimate uses, as the report names them.
    pub fn describe(self) -> &'static str {
        match self {
            Opponents::Humans => "people",
            Opponents::Bots => "bots",
            Opponents::All => "people and bots together",
        }
    }

    /// The opponents kept apart, as the report names them (none with `All`).
    pub fn apart(self) -> Option<&'static str> {
        match self {
            Opponents::Humans => Some("bots"),
            Opponents::Bots => Some("people"),
            Opponents::All => None,
        }
    }
}

/// The filters of one calibration run.
#[derive(Clone, Debug)]
pub struct Filter {
    pub perf: String,
    /// Whose games the estimate uses; games against the others are kept apart.
    pub opponents: Opponents,
    pub versions: Versions,
    /// Sources to use; empty means all.
    pub sources: Vec<Source>,
    /// RD assumed for an opponent flagged provisional without a known RD.
    pub provisional_rd: f64,
}

impl Filter {
    /// RD assumed for a provisional opponent without one, unless `--provisional-rd` says.
    pub const UNKNOWN_PROVISIONAL_RD: f64 = 150.0;

    /// The games of `perf` and `versions` against `opponents`, from every source, with the
    /// default provisional RD: what `ladder calibrate` selects without further flags.
    pub fn new(perf: &str, opponents: Opponents, versions: Versions) -> Filter {
        Filter {
            perf: perf.to_string(),
            opponents,
            versions,
            sources: Vec::new(),
            provisional_rd: Filter::UNKNOWN_PROVISIONAL_RD,
        }
    }
}

/// Why games were left out, with counts. Excluded games are never estimated from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exclusions {
    /// Aborted or without a result.
    pub aborted: usize,
    /// Fewer than one move by each side.
    pub too_short: usize,
    /// Our own failure (`fault` set): lost on time with budget left, crash, disconnect.
    pub fault: usize,
    /// Another perf than the one calibrated.
    pub other_perf: usize,
    /// Played with coefficients versions outside the window.
    pub other_version: usize,
    /// Fetched from Lichess with no inferable coefficients version.
    pub unknown_version: usize,
    /// A source not asked for.
    pub other_source: usize,
    /// The opponent has no rating (anonymous, or an arena opponent without an anchor rating).
    pub unrated_opponent: usize,
}

impl Exclusions {
    pub fn total(&self) -> usize {
        self.aborted
            + self.too_short
            + self.fault
            + self.other_perf
            + self.other_version
            + self.unknown_version
            + self.other_source
            + self.unrated_opponent
    }

    /// (label, count) pairs for the report.
    pub fn rows(&self) -> Vec<(&'static str, usize)> {
        vec![
            ("aborted / no result", self.aborted),
            ("fewer than one move by each side", self.too_short),
            (
                "our own fault (time loss with budget, crash, disconnect)",
                self.fault,
            ),
            ("other perf", self.other_perf),
            ("other coefficients version", self.other_version),
            (
                "fetched, coefficients version not inferable",
                self.unknown_version,
            ),
            ("other source", self.other_source),
            ("opponent without rating", self.unrated_opponent),
        ]
    }
}

/// The games of one level that an estimate uses.
#[derive(Clone, Debug, Default)]
pub struct LevelGames {
    pub level: f64,
    pub accounts: BTreeSet<String>,
    pub sources: BTreeSet<&'static str>,
    /// The exponent x = L + o(L) the games were played at (mean if versions differ).
    pub exponent: f64,
    pub observations: Vec<Observation>,
    /// Observations whose opponent was down-weighted as provisional.
    pub provisional: usize,
    /// Observations whose opponent was far off the level (set by the estimate:
    /// [`crate::rating::FarOff`]), counting less.
    pub far_off: usize,
}

/// The selected games by level key, and what was left out.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// The games against the opponents asked for: what the estimate and the update use.
    pub levels: BTreeMap<String, LevelGames>,
    /// The games that passed every filter but are against the other kind of opponent
    /// ([`Opponents::apart`]): estimated and reported on their own, never mixed in.
    pub apart: BTreeMap<String, LevelGames>,
    pub excluded: Exclusions,
    /// Games in `levels`.
    pub used: usize,
    /// Games in `apart`.
    pub used_apart: usize,
    /// Of `used`: games of an older version whose level plays as it does in the current one.
    /// (`apart` may hold such games too; they are not counted here.)
    pub carried_over: usize,
}

/// The coefficients a calibration compares older games with: the current version, and the
/// older versions known (from the history directory) by number.
#[derive(Clone, Copy, Debug)]
pub struct Lineage<'a> {
    pub current: &'a Coefficients,
    pub older: &'a BTreeMap<u32, Coefficients>,
}

/// Marks a record whose engine parameters are unknown (fetched from Lichess, not logged by us):
/// `engine.nodes == 0`. Such a record carries an inferred coefficients version, or 0 when none
/// could be inferred.
pub fn is_fetched(record: &GameRecord) -> bool {
    record.header.engine.nodes == 0
}

pub fn source_name(source: Source) -> &'static str {
    match source {
        Source::Lichess => "lichess",
        Source::Sandbox => "sandbox",
        Source::Arena => "arena",
    }
}

/// Sorts `records` into per-level samples, leaving out and counting what must not be used.
pub fn select(records: &[GameRecord], filter: &Filter) -> Selection {
    select_with(records, filter, None)
}

/// [`select`], also counting the games of versions outside the window whose level plays as it
/// does in `lineage.current`.
pub fn select_with(
    records: &[GameRecord],
    filter: &Filter,
    lineage: Option<Lineage<'_>>,
) -> Selection {
    let mut out = Selection::default();
    let mut exponent_sums: BTreeMap<(bool, String), f64> = BTreeMap::new();
    let mut versions = VersionCheck {
        filter,
        lineage,
        alike: HashMap::new(),
    };
    for record in records {
        let Some(score) = usable_score(record, filter, &mut out.excluded) else {
            continue;
        };
        let Some((exponent, carried_over)) = versions.exponent(record) else {
            out.excluded.other_version += 1;
            continue;
        };
        let Some(opponent) = record.opponent.rating.filter(|r| r.is_finite()) else {
            out.excluded.unrated_opponent += 1;
            continue;
        };
        let asked = filter.opponents.admits(record.opponent.bot);
        out.add(record, asked, carried_over, opponent, score, filter);
        *exponent_sums
            .entry((asked, level_key(record.header.level)))
            .or_default() += exponent;
    }
    for (asked, sample) in [(true, &mut out.levels), (false, &mut out.apart)] {
        for (key, level) in sample.iter_mut() {
            level.exponent = exponent_sums[&(asked, key.clone())] / level.observations.len() as f64;
        }
    }
    out
}

/// The game's score when nothing but its version and opponent may still leave it out: a source
/// asked for, a result, a move by each side, no fault of ours, the perf, and a known version
/// for a fetched game. Otherwise None, the reason counted in `ex`.
fn usable_score(record: &GameRecord, filter: &Filter, ex: &mut Exclusions) -> Option<f64> {
    if !filter.sources.is_empty() && !filter.sources.contains(&record.header.source) {
        ex.other_source += 1;
        return None;
    }
    let Some(score) = record.result.score() else {
        ex.aborted += 1;
        return None;
    };
    if record.status == "aborted" {
        ex.aborted += 1;
        return None;
    }
    if record.moves.split_whitespace().count() < 2 {
        ex.too_short += 1;
        return None;
    }
    if record.fault.is_some() {
        ex.fault += 1;
        return None;
    }
    if record.perf != filter.perf.as_str() {
        ex.other_perf += 1;
        return None;
    }
    if is_fetched(record) && record.header.coefficients_version == 0 {
        ex.unknown_version += 1;
        return None;
    }
    Some(score)
}

/// Which games' versions count: those in the window, and older ones whose level plays as it
/// does now (remembered per version and level).
struct VersionCheck<'a> {
    filter: &'a Filter,
    lineage: Option<Lineage<'a>>,
    alike: HashMap<(u32, String), bool>,
}

impl VersionCheck<'_> {
    /// The exponent the game was played at, in the scale of the version it counts for, and
    /// whether it was carried over from an older version; None when its version does not count.
    fn exponent(&mut self, record: &GameRecord) -> Option<(f64, bool)> {
        if self
            .filter
            .versions
            .contains(record.header.coefficients_version)
        {
            return Some((record.header.level + record.header.offset, false));
        }
        let alike = &mut self.alike;
        let carried = self.lineage.is_some_and(|l| {
            let key = (
                record.header.coefficients_version,
                level_key(record.header.level),
            );
            *alike.entry(key).or_insert_with(|| {
                l.older
                    .get(&record.header.coefficients_version)
                    .is_some_and(|old| plays_alike(old, l.current, record.header.level))
            })
        });
        if !carried {
            return None;
        }
        let current = self.lineage.expect("carried games have a lineage").current;
        Some((
            record.header.level + current.offset(record.header.level),
            true,
        ))
    }
}

impl Selection {
    /// Adds a selected game to its level's sample: the one estimated when its opponent is of
    /// the kind `asked` for, else the one kept apart. A provisional opponent (flagged, or an
    /// RD of [`PROVISIONAL_RD`] or more) is down-weighted by g(RD).
    fn add(
        &mut self,
        record: &GameRecord,
        asked: bool,
        carried_over: bool,
        opponent: f64,
        score: f64,
        filter: &Filter,
    ) {
        let rd = match record.opponent.rd {
            Some(rd) if rd.is_finite() => Some(rd),
            _ if record.opponent.provisional => Some(filter.provisional_rd),
            _ => None,
        };
        let uncertain = rd.filter(|&rd| rd >= PROVISIONAL_RD || record.opponent.provisional);
        let (sample, count) = if asked {
            (&mut self.levels, &mut self.used)
        } else {
            (&mut self.apart, &mut self.used_apart)
        };
        *count += 1;
        if asked && carried_over {
            self.carried_over += 1;
        }
        let level = sample
            .entry(level_key(record.header.level))
            .or_insert_with(|| LevelGames {
                level: record.header.level,
                ..LevelGames::default()
            });
        level.accounts.insert(record.header.account.clone());
        level.sources.insert(source_name(record.header.source));
        level.observations.push(Observation {
            opponent,
            weight: uncertain.map_or(1.0, glicko_g),
            score,
            counts_as: 1.0,
        });
        if uncertain.is_some() {
            level.provisional += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::levels::LevelParams;
    use crate::lichess::Perf;
    use crate::results::{Outcome, sample_record};

    fn filter() -> Filter {
        Filter::new("blitz", Opponents::Humans, Versions::Range(1, 1))
    }

    #[test]
    fn every_left_out_game_is_counted_once() {
        let mut records = vec![sample_record("ok", Outcome::Win)];
        records.push(sample_record("aborted", Outcome::None));
        let mut short = sample_record("short", Outcome::Loss);
        short.moves = "e2e4".into();
        records.push(short);
        let mut fault = sample_record("fault", Outcome::Loss);
        fault.fault = Some("lost on time with 40 s of budget".into());
        records.push(fault);
        let mut rapid = sample_record("rapid", Outcome::Win);
        rapid.perf = Perf::Rapid.into();
        records.push(rapid);
        let mut old = sample_record("old", Outcome::Win);
        old.header.coefficients_version = 0;
        old.header.engine.nodes = 5;
        records.push(old);
        let mut fetched = sample_record("fetched", Outcome::Win);
        fetched.header.engine.nodes = 0;
        fetched.header.coefficients_version = 0;
        records.push(fetched);
        let mut anon = sample_record("anon", Outcome::Draw);
        anon.opponent.rating = None;
        records.push(anon);
        let mut prov = sample_record("prov", Outcome::Draw);
        prov.opponent.provisional = true;
        records.push(prov);

        let s = select(&records, &filter());
        assert_eq!(s.used, 2);
        assert_eq!(s.excluded.total(), records.len() - 2);
        assert_eq!(s.excluded.aborted, 1);
        assert_eq!(s.excluded.too_short, 1);
        assert_eq!(s.excluded.fault, 1);
        assert_eq!(s.excluded.other_perf, 1);
        assert_eq!(s.excluded.other_version, 1);
        assert_eq!(s.excluded.unknown_version, 1);
        assert_eq!(s.excluded.unrated_opponent, 1);
        let level = &s.levels["3"];
        assert_eq!(level.provisional, 1);
        assert!((level.observations[1].weight - glicko_g(150.0)).abs() < 1e-12);
        assert_eq!(level.observations[0].weight, 1.0);
    }

    #[test]
    fn people_and_bots_are_two_samples() {
        let mut records = Vec::new();
        for i in 0..5 {
            let mut r = sample_record(&format!("h{i}"), Outcome::Win);
            r.opponent.rating = Some(1000.0 + f64::from(i));
            records.push(r);
        }
        for i in 0..3 {
            let mut r = sample_record(&format!("b{i}"), Outcome::Loss);
            r.opponent.bot = true;
            r.opponent.rating = Some(2000.0 + f64::from(i));
            records.push(r);
        }
        let opponents = |s: &Selection, apart: bool| -> Vec<f64> {
            let sample = if apart { &s.apart } else { &s.levels };
            sample.get("3").map_or(Vec::new(), |l| {
                l.observations.iter().map(|o| o.opponent).collect()
            })
        };
        let (people, bots) = (
            vec![1000.0, 1001.0, 1002.0, 1003.0, 1004.0],
            vec![2000.0, 2001.0, 2002.0],
        );
        let humans = select(&records, &filter());
        assert_eq!((humans.used, humans.used_apart), (5, 3));
        assert_eq!(opponents(&humans, false), people);
        assert_eq!(opponents(&humans, true), bots);
        assert_eq!(
            humans.excluded.total(),
            0,
            "games kept apart are not left out"
        );

        let mut f = filter();
        f.opponents = Opponents::Bots;
        let only_bots = select(&records, &f);
        assert_eq!((only_bots.used, only_bots.used_apart), (3, 5));
        assert_eq!(opponents(&only_bots, false), bots);
        assert_eq!(opponents(&only_bots, true), people);

        f.opponents = Opponents::All;
        let all = select(&records, &f);
        assert_eq!((all.used, all.used_apart), (8, 0));
        assert!(all.apart.is_empty());
        assert_eq!(all.levels["3"].observations.len(), 8);
    }

    #[test]
    fn version_windows() {
        let w = Versions::Window { current: 5, n: 2 };
        assert!(w.contains(5) && w.contains(4) && !w.contains(3) && !w.contains(6));
        assert_eq!(Versions::parse_range("2..4"), Ok(Versions::Range(2, 4)));
        assert_eq!(Versions::parse_range("3"), Ok(Versions::Range(3, 3)));
        assert!(Versions::parse_range("4..2").is_err());
        assert!(Versions::parse_range("x").is_err());
    }

    #[test]
    fn games_of_an_older_version_count_where_the_level_plays_the_same() {
        let v1 = Coefficients::builtin();
        let mut v2 = v1.clone();
        v2.version = 2;
        v2.offsets.insert("4".into(), 0.5);
        let mut records = Vec::new();
        for (id, level, version) in [("same", 3.0, 1), ("moved", 4.0, 1), ("now", 4.0, 2)] {
            let mut r = sample_record(id, Outcome::Win);
            r.header.level = level;
            r.header.coefficients_version = version;
            records.push(r);
        }
        let mut f = filter();
        f.versions = Versions::Range(2, 2);
        // Without the older version's file, only the current version's game counts.
        let s = select(&records, &f);
        assert_eq!((s.used, s.excluded.other_version), (1, 2));
        let older = BTreeMap::from([(1, v1.clone())]);
        let lineage = Lineage {
            current: &v2,
            older: &older,
        };
        let s = select_with(&records, &f, Some(lineage));
        assert_eq!((s.used, s.carried_over), (2, 1));
        assert_eq!(
            s.excluded.other_version, 1,
            "level 4 moved: its v1 game is out"
        );
        assert_eq!(s.levels["3"].observations.len(), 1);
        assert_eq!(s.levels["4"].observations.len(), 1);
        // The endgame scaling is part of how a level plays.
        let mut v3 = v1.clone();
        v3.version = 3;
        v3.endgame_levels_per_halving += 0.5;
        assert!(plays_alike(&v1, &v1, 3.0));
        assert!(!plays_alike(&v1, &v3, 3.0));
        let mut v4 = v1.clone();
        v4.hash[0].mb = 2;
        assert!(!plays_alike(&v1, &v4, 3.0));
        // So is the evaluation: a retuned one plays every level differently at the same nodes.
        let mut v5 = v1.clone();
        v5.eval_weights = v1.eval_weights + 1;
        assert!(!plays_alike(&v1, &v5, 3.0));
    }

    #[test]
    fn a_new_node_cap_moves_only_the_levels_whose_budget_reaches_it() {
        let v1 = Coefficients::builtin();
        let deepest = |c: &Coefficients, level: f64| LevelParams::new(c, level).nodes_at(0.0);
        let (low, high) = (2.0, 10.0);
        let cap = (deepest(&v1, low) + deepest(&v1, high)) / 2;
        assert!(
            deepest(&v1, low) < cap && cap < deepest(&v1, high),
            "the shipped level 2 stays under the cap in the barest ending, level 10 reaches it"
        );
        let mut v2 = v1.clone();
        v2.version = 2;
        v2.max_nodes = cap;
        assert!(
            plays_alike(&v1, &v2, low),
            "a cap the level never reaches changes nothing it plays: its games still count"
        );
        assert!(
            !plays_alike(&v1, &v2, high),
            "a cap that cuts the level's endgame budget changes how it plays"
        );
    }

    #[test]
    fn a_retuned_top_keeps_the_games_of_levels_that_cannot_stumble() {
        let v1 = Coefficients::builtin();
        let mut v2 = v1.clone();
        v2.version = v1.version + 1;
        let stumble = v2
            .humane
            .as_mut()
            .and_then(|h| h.stumble.as_mut())
            .expect("the shipped model has the top's stumbles");
        stumble.top_from_rating = Some(2600.0);
        stumble.chance = 0.9;
        let model = |level: f64| LevelParams::new(&v1, level).humane.unwrap().1.errors;
        let chance = |level: f64| {
            let h = v1.humane.unwrap();
            h.stumble.unwrap().chance_at(model(level), h.flag_factor)
        };
        // Level 1 sits far below the stumbles' ramp: its games count under either table.
        assert!(
            chance(1.0) < crate::levels::NEVER_STUMBLES,
            "{}",
            chance(1.0)
        );
        assert!(plays_alike(&v1, &v2, 1.0));
        // Level 12 stumbles: another table is another player.
        assert!(chance(12.0) > 0.1);
        assert!(!plays_alike(&v1, &v2, 12.0));
        // The other knobs of the model still count everywhere.
        let mut v3 = v1.clone();
        v3.humane.as_mut().unwrap().notice_cp += 10.0;
        assert!(!plays_alike(&v1, &v3, 1.0));
    }

    #[test]
    fn a_notice_band_changes_only_the_levels_whose_rating_it_covers() {
        use crate::engine::humane::NoticeBand;
        // The shipped model without a band of its own.
        let mut v1 = Coefficients::builtin();
        v1.humane.as_mut().unwrap().notice = None;
        let model = |level: f64| LevelParams::new(&v1, level).humane.unwrap().1.errors;
        // A band around level 5's model rating, ending below level 7's.
        let (from, to) = (model(4.0) - 1.0, (model(6.0) + model(7.0)) / 2.0);
        assert!(model(3.0) < from && model(7.0) >= to, "{from}..{to}");
        let mut v2 = v1.clone();
        v2.version = v1.version + 1;
        v2.humane.as_mut().unwrap().notice = Some(NoticeBand {
            cp: 100.0,
            from_rating: from,
            to_rating: to,
        });
        for level in [1.0, 2.0, 3.0, 7.0, 9.0, 12.0] {
            assert!(plays_alike(&v1, &v2, level), "level {level}");
        }
        for level in [4.0, 5.0, 6.0] {
            assert!(!plays_alike(&v1, &v2, level), "level {level}");
        }
        // The band's start moved above level 4: level 4 notices as before the band, levels
        // 5 and 6 as in it, so only level 4 plays again.
        let mut v3 = v2.clone();
        v3.version = v2.version + 1;
        v3.humane
            .as_mut()
            .unwrap()
            .notice
            .as_mut()
            .unwrap()
            .from_rating = (model(4.0) + model(5.0)) / 2.0;
        assert!(plays_alike(&v1, &v3, 4.0));
        assert!(!plays_alike(&v2, &v3, 4.0));
        for level in [1.0, 2.0, 3.0, 5.0, 6.0, 7.0, 9.0, 12.0] {
            assert!(plays_alike(&v2, &v3, level), "level {level}");
        }
    }

    #[test]
    fn habits_at_the_target_replay_only_the_levels_whose_model_plays_below_it() {
        // The last recalibration's model: the line below level 4, the targets from there.
        let mut v1 = Coefficients::builtin();
        let h = v1.humane.as_mut().unwrap();
        h.rating_from = crate::engine::humane::ModelRating::Lower;
        h.target_from_level = Some(4.0);
        h.habits_at_target = false;
        let mut v2 = v1.clone();
        v2.version = v1.version + 1;
        v2.humane.as_mut().unwrap().habits_at_target = true;
        let played = |c: &Coefficients, level: f64| LevelParams::new(c, level).humane.unwrap().1;
        let target = |level: f64| v1.targets().target(level);
        let below = |level: f64| played(&v1, level).errors < target(level) - 1e-6;
        // The bottom plays the line, below its targets; the rest their targets.
        assert!(below(1.0) && below(3.0) && !below(4.0) && !below(12.0));
        for level in (1..=12).map(f64::from) {
            assert_eq!(plays_alike(&v1, &v2, level), !below(level), "level {level}");
            let (old, new) = (played(&v1, level), played(&v2, level));
            assert_eq!(
                new.errors, old.errors,
                "the errors' rating stays: level {level}"
            );
            assert_eq!(new.habits, old.errors.max(target(level)), "level {level}");
        }
    }
}
