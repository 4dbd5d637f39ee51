//! The search's tunable constants: pruning margins, depth limits and reduction formulas, as one
//! named set with the shipped values compiled in, and the text form the genetic tuner
//! (`ladder tune search`) reads and writes. The evaluation's weights are a separate set
//! ([`super::weights`]): Texel's method can fit those from positions, while only games can
//! judge these.

use std::sync::{Arc, LazyLock};

/// One tunable constant: its name in files, shipped value, the range the tuner may try, and
/// the size of one mutation step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tunable {
    pub name: &'static str,
    pub shipped: i32,
    pub min: i32,
    pub max: i32,
    pub step: i32,
}

const fn tunable(name: &'static str, shipped: i32, min: i32, max: i32, step: i32) -> Tunable {
    Tunable {
        name,
        shipped,
        min,
        max,
        step,
    }
}

/// Aspiration window half-width around the previous iteration's score, cp.
pub const ASPIRATION_WINDOW: usize = 0;
/// Reverse futility pruning: deepest remaining depth, and margin per ply, cp.
pub const RFP_MAX_DEPTH: usize = 1;
pub const RFP_MARGIN: usize = 2;
/// Null-move pruning: shallowest depth, and the reduction 3 + depth/4 + min((eval−beta)/200, 3).
pub const NMP_MIN_DEPTH: usize = 3;
pub const NMP_BASE_REDUCTION: usize = 4;
pub const NMP_DEPTH_DIVISOR: usize = 5;
pub const NMP_EVAL_DIVISOR: usize = 6;
/// Late-move reductions: shallowest depth, and the table base + ln(depth)·ln(index)/divisor,
/// both in hundredths.
pub const LMR_MIN_DEPTH: usize = 7;
pub const LMR_BASE_PERCENT: usize = 8;
pub const LMR_DIVISOR_PERCENT: usize = 9;
/// Late-move pruning: deepest depth, and quiet moves tried before it prunes: base + k·depth².
pub const LMP_MAX_DEPTH: usize = 10;
pub const LMP_BASE: usize = 11;
pub const LMP_PER_DEPTH_SQUARED: usize = 12;
/// Delta pruning margin in quiescence, cp.
pub const QS_DELTA: usize = 13;
/// Futility pruning of quiet moves: deepest remaining depth (0: off), and the margin
/// base + per_depth·depth above the static evaluation that must still fall short of alpha, cp.
pub const FP_MAX_DEPTH: usize = 14;
pub const FP_BASE: usize = 15;
pub const FP_PER_DEPTH: usize = 16;
/// Exchange (SEE) pruning: deepest remaining depth (0: off); a quiet move losing more than
/// quiet_margin·depth, or a capture losing more than capture_margin·depth², is skipped, cp.
pub const SEE_MAX_DEPTH: usize = 17;
pub const SEE_QUIET_MARGIN: usize = 18;
pub const SEE_CAPTURE_MARGIN: usize = 19;
/// Internal iterative reduction: plies taken off a node without a hash move (0: off).
pub const IIR_REDUCTION: usize = 20;
/// Whether reverse futility, late-move pruning and reductions depend on whether the static
/// evaluation is improving (1) or not (0).
pub const IMPROVING: usize = 21;
/// Whether quiet moves are ordered by continuation history too (1) or not (0).
pub const CONTINUATION_HISTORY: usize = 22;

/// Every tunable constant, in index order (the indices above).
pub const TUNABLES: [Tunable; 23] = [
    tunable("aspiration_window", 25, 8, 80, 5),
    tunable("rfp_max_depth", 6, 2, 10, 1),
    tunable("rfp_margin", 80, 30, 200, 10),
    tunable("nmp_min_depth", 3, 2, 5, 1),
    tunable("nmp_base_reduction", 3, 1, 5, 1),
    tunable("nmp_depth_divisor", 4, 2, 8, 1),
    tunable("nmp_eval_divisor", 200, 80, 400, 20),
    tunable("lmr_min_depth", 3, 2, 5, 1),
    tunable("lmr_base_percent", 75, 0, 150, 10),
    tunable("lmr_divisor_percent", 225, 150, 400, 15),
    tunable("lmp_max_depth", 4, 2, 8, 1),
    tunable("lmp_base", 4, 2, 10, 1),
    tunable("lmp_per_depth_squared", 3, 1, 6, 1),
    tunable("qs_delta", 200, 50, 400, 20),
    tunable("fp_max_depth", 6, 0, 10, 1),
    tunable("fp_base", 90, 0, 300, 15),
    tunable("fp_per_depth", 60, 20, 200, 10),
    tunable("see_max_depth", 6, 0, 10, 1),
    tunable("see_quiet_margin", 60, 0, 200, 10),
    tunable("see_capture_margin", 20, 0, 100, 5),
    tunable("iir_reduction", 1, 0, 2, 1),
    tunable("improving", 1, 0, 1, 1),
    tunable("continuation_history", 1, 0, 1, 1),
];

/// The search versions a coefficients file may name (`search = N`), the newest last. Each is
/// the shipped constants with the features it came before turned off, so a ladder calibrated
/// with an older search plays exactly as it was measured (same nodes for the same inputs).
/// Version 1: the first search (bench 1997878 with evaluation weights version 2). Version 2
/// added improving, futility and exchange pruning, internal iterative reduction and
/// continuation history.
pub const SHIPPED_SEARCH_VERSION: u32 = 2;

/// Constants version 2 added, and the value that turns each off.
const ADDED_IN_VERSION_2: [(usize, i32); 5] = [
    (FP_MAX_DEPTH, 0),
    (SEE_MAX_DEPTH, 0),
    (IIR_REDUCTION, 0),
    (IMPROVING, 0),
    (CONTINUATION_HISTORY, 0),
];

/// Late-move reduction in plies by [depth][move number].
pub type LmrTable = [[i32; 64]; 64];

/// A full set of search constants (every value within its tunable's range).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchConstants {
    values: [i32; TUNABLES.len()],
    lmr: Arc<LmrTable>,
}

static SHIPPED: LazyLock<SearchConstants> = LazyLock::new(|| {
    SearchConstants::from_values(TUNABLES.map(|t| t.shipped)).expect("shipped values in range")
});

impl Default for SearchConstants {
    fn default() -> SearchConstants {
        SearchConstants::shipped()
    }
}

impl SearchConstants {
    /// The constants the engine ships with.
    pub fn shipped() -> SearchConstants {
        SHIPPED.clone()
    }

    /// A set from values in [`TUNABLES`] order; an error names a value out of its range.
    pub fn from_values(values: [i32; TUNABLES.len()]) -> Result<SearchConstants, String> {
        for (t, &v) in TUNABLES.iter().zip(&values) {
            if v < t.min || v > t.max {
                return Err(format!("{}: {v} is outside {}..={}", t.name, t.min, t.max));
            }
        }
        Ok(SearchConstants {
            lmr: Arc::new(lmr_table(
                values[LMR_BASE_PERCENT],
                values[LMR_DIVISOR_PERCENT],
            )),
            values,
        })
    }

    /// The constants of search `version` (see [`SHIPPED_SEARCH_VERSION`]); `None` for a version
    /// this build does not know.
    pub fn of_version(version: u32) -> Option<SearchConstants> {
        match version {
            1 => {
                let mut values = SHIPPED.values;
                for (index, off) in ADDED_IN_VERSION_2 {
                    values[index] = off;
                }
                Some(SearchConstants::from_values(values).expect("version 1 values in range"))
            }
            SHIPPED_SEARCH_VERSION => Some(SearchConstants::shipped()),
            _ => None,
        }
    }

    /// [`Self::of_version`], or the error a file or command line that names an unknown version
    /// gets: which versions this build knows.
    pub fn of_known_version(version: u32) -> Result<SearchConstants, String> {
        SearchConstants::of_version(version).ok_or_else(|| {
            format!("no search of that version (known: 1 to {SHIPPED_SEARCH_VERSION})")
        })
    }

    pub fn values(&self) -> [i32; TUNABLES.len()] {
        self.values
    }

    /// The value of the constant at `index` (one of this module's index constants).
    #[inline]
    pub fn get(&self, index: usize) -> i32 {
        self.values[index]
    }

    #[inline]
    pub fn lmr(&self) -> &LmrTable {
        &self.lmr
    }

    /// The text form: a header of `#` lines, then `name = value` per constant.
    pub fn to_text(&self, header: &str) -> String {
        let mut text: String = header.lines().map(|l| format!("# {l}\n")).collect();
        for (t, v) in TUNABLES.iter().zip(self.values) {
            text.push_str(&format!("{} = {v}\n", t.name));
        }
        text
    }

    /// Reads the text form. Constants left out keep their shipped value; an unknown name, a
    /// value that is not an integer or out of range is an error naming its line.
    pub fn parse(text: &str) -> Result<SearchConstants, String> {
        let mut values = TUNABLES.map(|t| t.shipped);
        for (number, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let at = |problem: String| format!("line {}: {problem}", number + 1);
            let (name, value) = line
                .split_once('=')
                .ok_or_else(|| at(format!("expected `name = value`, found {line:?}")))?;
            let (name, value) = (name.trim(), value.trim());
            let index = TUNABLES
                .iter()
                .position(|t| t.name == name)
                .ok_or_else(|| at(format!("unknown search constant {name:?}")))?;
            values[index] = value
                .parse()
                .map_err(|_| at(format!("{name}: {value:?} is not an integer")))?;
        }
        SearchConstants::from_values(values)
    }
}

fn lmr_table(base_percent: i32, divisor_percent: i32) -> LmrTable {
    let base = f64::from(base_percent) / 100.0;
    let divisor = f64::from(divisor_percent) / 100.0;
    let mut table = [[0; 64]; 64];
    for (depth, row) in table.iter_mut().enumerate().skip(1) {
        for (index, r) in row.iter_mut().enumerate().skip(1) {
            *r = (base + (depth as f64).ln() * (index as f64).ln() / divisor) as i32;
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_form_round_trips_and_names_bad_lines() {
        let mut values = SearchConstants::shipped().values();
        values[RFP_MARGIN] = 100;
        values[LMR_DIVISOR_PERCENT] = 300;
        let set = SearchConstants::from_values(values).unwrap();
        let back = SearchConstants::parse(&set.to_text("tuned\nby a test")).unwrap();
        assert_eq!(back, set);
        assert_ne!(back.lmr(), SearchConstants::shipped().lmr());
        let e = SearchConstants::parse("rfp_margin = 90\nrfp_margn = 3\n").unwrap_err();
        assert!(e.starts_with("line 2:") && e.contains("rfp_margn"), "{e}");
        let e = SearchConstants::parse("qs_delta = 9000\n").unwrap_err();
        assert!(e.contains("qs_delta") && e.contains("outside"), "{e}");
        assert!(SearchConstants::parse("qs_delta = big").is_err());
    }

    #[test]
    fn every_shipped_value_lies_inside_its_range_with_room_to_move() {
        for t in TUNABLES {
            assert!(t.min < t.max && t.step > 0, "{}", t.name);
            assert!(t.min <= t.shipped && t.shipped <= t.max, "{}", t.name);
        }
    }

    #[test]
    fn the_first_search_version_is_the_shipped_one_with_the_later_features_off() {
        let first = SearchConstants::of_version(1).unwrap();
        let shipped = SearchConstants::shipped();
        for (index, off) in ADDED_IN_VERSION_2 {
            assert_eq!(first.get(index), off, "{}", TUNABLES[index].name);
            assert_ne!(shipped.get(index), off, "{} is on", TUNABLES[index].name);
        }
        let changed = (0..TUNABLES.len()).filter(|&i| first.get(i) != shipped.get(i));
        assert_eq!(changed.count(), ADDED_IN_VERSION_2.len());
        assert_eq!(
            SearchConstants::of_version(SHIPPED_SEARCH_VERSION),
            Some(shipped)
        );
        assert!(SearchConstants::of_version(0).is_none());
        assert!(SearchConstants::of_version(SHIPPED_SEARCH_VERSION + 1).is_none());
    }
}
