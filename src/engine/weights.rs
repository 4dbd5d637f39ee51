//! The evaluation's parameter set: every weight [`super::eval`] uses, as tapered
//! (middlegame, endgame) pairs in one flat list of named terms.
//!
//! The list of [`TERMS`] drives everything that handles weights by name: printing and reading
//! the text form (`name[index] mg eg`, one pair a line), and the tuner, which sees the set as
//! one vector. The shipped set is `weights.txt` beside this file, compiled into the binary;
//! [`Weights::handwritten`] rebuilds the geometric rules the evaluation was first written
//! with, the tuner's starting point and the "untuned" side of a match.

use std::fmt::Write as _;
use std::sync::{Arc, LazyLock};

/// A (middlegame, endgame) pair of centipawn weights.
pub type Pair = [i32; 2];

/// One named term: `len` consecutive pairs.
#[derive(Clone, Copy, Debug)]
pub struct Term {
    pub name: &'static str,
    pub len: usize,
    /// Whether the evaluation is linear in this term's weights (counts times weights). The
    /// gradient tuner moves only linear terms; the particle swarm can move any.
    pub linear: bool,
    /// How an index is written: by square, by role, or as a number.
    pub index: IndexStyle,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexStyle {
    None,
    Number,
    Square,
    Role,
    Slider,
}

const ROLES: [&str; 6] = ["pawn", "knight", "bishop", "rook", "queen", "king"];
const SLIDERS: [&str; 4] = ["knight", "bishop", "rook", "queen"];

/// Highest king-zone attack weight with a weight of its own; heavier attacks use its value.
pub const KING_DANGER_MAX: usize = 39;

const fn term(name: &'static str, len: usize, index: IndexStyle) -> Term {
    Term {
        name,
        len,
        linear: true,
        index,
    }
}

/// Every term, in the order of the flat list.
pub const TERMS: [Term; 29] = [
    term("material", 6, IndexStyle::Role),
    term("pst_pawn", 64, IndexStyle::Square),
    term("pst_knight", 64, IndexStyle::Square),
    term("pst_bishop", 64, IndexStyle::Square),
    term("pst_rook", 64, IndexStyle::Square),
    term("pst_queen", 64, IndexStyle::Square),
    term("pst_king", 64, IndexStyle::Square),
    term("mobility_knight", 9, IndexStyle::Number),
    term("mobility_bishop", 14, IndexStyle::Number),
    term("mobility_rook", 15, IndexStyle::Number),
    term("mobility_queen", 28, IndexStyle::Number),
    term("passed", 8, IndexStyle::Number),
    term("passer_their_king", 8, IndexStyle::Number),
    term("passer_our_king", 8, IndexStyle::Number),
    term("pawn_faults", 2, IndexStyle::Number),
    term("rook_file", 2, IndexStyle::Number),
    term("bishop_pair", 1, IndexStyle::None),
    term("shield_pawn", 1, IndexStyle::None),
    term("king_danger", KING_DANGER_MAX + 1, IndexStyle::Number),
    Term {
        name: "king_attack_weight",
        len: 4,
        linear: false,
        index: IndexStyle::Slider,
    },
    term("tempo", 1, IndexStyle::None),
    term("threat_by_pawn", 6, IndexStyle::Role),
    term("threat_by_minor", 6, IndexStyle::Role),
    term("threat_by_rook", 6, IndexStyle::Role),
    term("connected_pawn", 8, IndexStyle::Number),
    term("backward_pawn", 1, IndexStyle::None),
    term("passer_blocked", 8, IndexStyle::Number),
    term("king_open_files", 4, IndexStyle::Number),
    term("outpost", 2, IndexStyle::Number),
];

const fn start_of(term: usize) -> usize {
    let mut sum = 0;
    let mut i = 0;
    while i < term {
        sum += TERMS[i].len;
        i += 1;
    }
    sum
}

/// Start of each term in the flat list.
pub const MATERIAL: usize = start_of(0);
/// Piece-square values of `role` (index `Role as usize - 1`) start at `PST + 64 * role`,
/// by square from White's side (Black uses the mirrored square).
pub const PST: usize = start_of(1);
/// Mobility by role (knight, bishop, rook, queen), by the number of squares reached.
pub const MOBILITY: [usize; 4] = [start_of(7), start_of(8), start_of(9), start_of(10)];
/// Passed pawn by relative rank.
pub const PASSED: usize = start_of(11);
/// Per square of distance between the defending king and the passer's stop square, by rank.
pub const PASSER_THEIR_KING: usize = start_of(12);
/// Per square of distance between our king and the passer's stop square, by rank.
pub const PASSER_OUR_KING: usize = start_of(13);
/// Per doubled pawn (`+ 0`) and per isolated pawn (`+ 1`).
pub const PAWN_FAULTS: usize = start_of(14);
/// Rook on an open file (`+ 0`) and on a half-open file (`+ 1`).
pub const ROOK_FILE: usize = start_of(15);
pub const BISHOP_PAIR: usize = start_of(16);
/// Per pawn (at most three) in front of a king on its first two ranks.
pub const SHIELD_PAWN: usize = start_of(17);
/// The king-danger bonus by total attack weight on the enemy king's zone (two attackers or
/// more), capped at [`KING_DANGER_MAX`].
pub const KING_DANGER: usize = start_of(18);
/// Attack weight of a knight, bishop, rook or queen per square of the enemy king's zone it
/// reaches (middlegame value; the endgame value is unused).
pub const KING_ATTACK_WEIGHT: usize = start_of(19);
pub const TEMPO: usize = start_of(20);
/// Enemy pieces attacked by our pawns, by the victim's role.
pub const THREAT_BY_PAWN: usize = start_of(21);
/// Enemy pieces attacked by our knights or bishops, by the victim's role.
pub const THREAT_BY_MINOR: usize = start_of(22);
/// Enemy pieces attacked by our rooks, by the victim's role.
pub const THREAT_BY_ROOK: usize = start_of(23);
/// A pawn defended by a pawn or beside one on its rank, by relative rank.
pub const CONNECTED_PAWN: usize = start_of(24);
/// A pawn no pawn of ours beside it can defend, whose stop square an enemy pawn attacks.
pub const BACKWARD_PAWN: usize = start_of(25);
/// A passed pawn whose stop square is occupied, by relative rank.
pub const PASSER_BLOCKED: usize = start_of(26);
/// The king's file and its neighbours without a pawn of ours, by how many (0 to 3).
pub const KING_OPEN_FILES: usize = start_of(27);
/// A knight (`+ 0`) or bishop (`+ 1`) on ranks 4–6, defended by a pawn, out of reach of
/// enemy pawns.
pub const OUTPOST: usize = start_of(28);
/// Pairs in the set.
pub const LEN: usize = start_of(TERMS.len());

/// The term a flat index belongs to, and the index inside it.
pub fn term_of(index: usize) -> Option<(&'static Term, usize)> {
    let mut start = 0;
    for term in &TERMS {
        if index < start + term.len {
            return Some((term, index - start));
        }
        start += term.len;
    }
    None
}

/// The name of one pair, as the text form writes it: `pst_knight[c3]`, `tempo`.
pub fn name_of(index: usize) -> String {
    let Some((term, i)) = term_of(index) else {
        return format!("#{index}");
    };
    match term.index {
        IndexStyle::None => term.name.to_string(),
        IndexStyle::Number => format!("{}[{i}]", term.name),
        IndexStyle::Square => format!(
            "{}[{}{}]",
            term.name,
            (b'a' + (i % 8) as u8) as char,
            i / 8 + 1
        ),
        IndexStyle::Role => format!("{}[{}]", term.name, ROLES[i]),
        IndexStyle::Slider => format!("{}[{}]", term.name, SLIDERS[i]),
    }
}

/// A complete set of evaluation weights, with the tables the evaluation reads derived.
#[derive(Clone, Debug, PartialEq)]
pub struct Weights {
    pairs: Vec<Pair>,
    /// Material plus piece-square value, White's view, by role and square: one lookup a piece.
    pub(crate) piece_square: [[Pair; 64]; 6],
}

/// The version of the shipped weights (`weights.txt`); version 0 is [`Weights::handwritten`],
/// and every version shipped before stays compiled in (`weights-v1.txt`, ...), because a level
/// plays the version its coefficients were calibrated with.
pub const SHIPPED_VERSION: u32 = 2;

static HANDWRITTEN: LazyLock<Arc<Weights>> = LazyLock::new(|| Arc::new(Weights::handwritten()));

static SHIPPED: LazyLock<Arc<Weights>> = LazyLock::new(|| built_in(include_str!("weights.txt")));

static VERSION_1: LazyLock<Arc<Weights>> =
    LazyLock::new(|| built_in(include_str!("weights-v1.txt")));

/// A weights file compiled into the binary; a broken one is a build mistake the tests catch.
fn built_in(text: &str) -> Arc<Weights> {
    Arc::new(Weights::parse(text).unwrap_or_else(|e| panic!("built-in weights: {e}")))
}

impl Weights {
    /// The weights the engine ships with.
    pub fn shipped() -> Arc<Weights> {
        SHIPPED.clone()
    }

    /// The weights of a version: 0 the hand-written ones, 1 the first tuned ones,
    /// [`SHIPPED_VERSION`] the shipped ones; `None` for any other.
    pub fn of_version(version: u32) -> Option<Arc<Weights>> {
        match version {
            0 => Some(HANDWRITTEN.clone()),
            1 => Some(VERSION_1.clone()),
            SHIPPED_VERSION => Some(Weights::shipped()),
            _ => None,
        }
    }

    /// A set from its flat list of pairs; `None` unless it has exactly [`LEN`] pairs.
    pub fn from_pairs(pairs: Vec<Pair>) -> Option<Weights> {
        if pairs.len() != LEN {
            return None;
        }
        let mut piece_square = [[[0; 2]; 64]; 6];
        for (role, table) in piece_square.iter_mut().enumerate() {
            for (sq, entry) in table.iter_mut().enumerate() {
                let m = pairs[MATERIAL + role];
                let p = pairs[PST + 64 * role + sq];
                *entry = [m[0] + p[0], m[1] + p[1]];
            }
        }
        Some(Weights {
            pairs,
            piece_square,
        })
    }

    pub fn pairs(&self) -> &[Pair] {
        &self.pairs
    }

    #[inline]
    pub fn get(&self, index: usize) -> Pair {
        self.pairs[index]
    }

    /// The text form: a header comment, then `name mg eg` per pair, term by term.
    pub fn to_text(&self, header: &str) -> String {
        let mut text = String::new();
        for line in header.lines() {
            let _ = writeln!(text, "# {line}");
        }
        for (index, [mg, eg]) in self.pairs.iter().enumerate() {
            let _ = writeln!(text, "{} {mg} {eg}", name_of(index));
        }
        text
    }

    /// Reads the text form. Every pair must be given exactly once; an error names the line.
    pub fn parse(text: &str) -> Result<Weights, String> {
        let names: std::collections::HashMap<String, usize> =
            (0..LEN).map(|i| (name_of(i), i)).collect();
        let mut pairs: Vec<Option<Pair>> = vec![None; LEN];
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [name, mg, eg] = fields[..] else {
                return Err(format!("line {}: expected `name mg eg`", number + 1));
            };
            let index = *names
                .get(name)
                .ok_or_else(|| format!("line {}: no weight is named {name:?}", number + 1))?;
            let value = |v: &str| {
                v.parse::<i32>()
                    .map_err(|_| format!("line {}: {v:?} is not a whole number", number + 1))
            };
            if pairs[index].replace([value(mg)?, value(eg)?]).is_some() {
                return Err(format!("line {}: {name} is given twice", number + 1));
            }
        }
        if let Some(missing) = pairs.iter().position(Option::is_none) {
            return Err(format!("{} is missing", name_of(missing)));
        }
        Ok(Weights::from_pairs(pairs.into_iter().flatten().collect()).expect("LEN pairs"))
    }

    /// The evaluation's first weights, written from geometric rules, not tuned.
    pub fn handwritten() -> Weights {
        let mut pairs = vec![[0, 0]; LEN];
        let material = [
            [85, 105],
            [320, 300],
            [335, 320],
            [470, 530],
            [980, 980],
            [0, 0],
        ];
        pairs[MATERIAL..MATERIAL + 6].copy_from_slice(&material);
        for role in 0..6 {
            for sq in 0..64 {
                pairs[PST + 64 * role + sq] = handwritten_pst(role, sq as i32);
            }
        }
        // Per reachable square beyond a typical count.
        let mobility = [(4, 4, 4), (5, 5, 6), (2, 4, 6), (1, 2, 12)];
        for (piece, &(mg, eg, typical)) in mobility.iter().enumerate() {
            let len = TERMS[7 + piece].len;
            for count in 0..len {
                let beyond = count as i32 - typical;
                pairs[MOBILITY[piece] + count] = [mg * beyond, eg * beyond];
            }
        }
        let passed_mg = [0, 5, 8, 12, 25, 45, 70, 0];
        let passed_eg = [0, 10, 15, 25, 45, 75, 120, 0];
        for rank in 0..8 {
            pairs[PASSED + rank] = [passed_mg[rank], passed_eg[rank]];
            let weight = rank as i32 - 1;
            pairs[PASSER_THEIR_KING + rank] = [0, 4 * weight];
            pairs[PASSER_OUR_KING + rank] = [0, -2 * weight];
        }
        pairs[PAWN_FAULTS] = [-10, -20];
        pairs[PAWN_FAULTS + 1] = [-12, -12];
        pairs[ROOK_FILE] = [20, 10];
        pairs[ROOK_FILE + 1] = [10, 5];
        pairs[BISHOP_PAIR] = [30, 50];
        pairs[SHIELD_PAWN] = [12, 0];
        for weight in 0..=KING_DANGER_MAX {
            let w = weight as i32;
            pairs[KING_DANGER + weight] = [(w * w / 2).min(500), 0];
        }
        for (piece, w) in [2, 2, 3, 5].into_iter().enumerate() {
            pairs[KING_ATTACK_WEIGHT + piece] = [w, 0];
        }
        pairs[TEMPO] = [12, 0];
        Weights::from_pairs(pairs).expect("LEN pairs")
    }
}

/// Distance of a file or rank index (0..8) from the two central ones.
const fn edge_distance(i: i32) -> i32 {
    if i < 4 { 3 - i } else { i - 4 }
}

/// The hand-written piece-square rules: (mg, eg) for a white piece of `role` on `sq`.
fn handwritten_pst(role: usize, sq: i32) -> Pair {
    let file = sq % 8;
    let rank = sq / 8;
    let center = edge_distance(file) + edge_distance(rank); // 0 in the centre, 6 in a corner
    match role {
        // Pawns: advance, and hold the centre early.
        0 => {
            let mg_rank = [0, 0, 2, 6, 12, 25, 45, 0][rank as usize];
            let eg_rank = [0, 0, 5, 10, 20, 35, 60, 0][rank as usize];
            let central = if (file == 3 || file == 4) && (rank == 3 || rank == 4) {
                15
            } else {
                0
            };
            [mg_rank + central, eg_rank]
        }
        // Knights: strongly central, bad on the rim.
        1 => [15 - 8 * center, 10 - 6 * center],
        // Bishops: mildly central.
        2 => [10 - 4 * center, 8 - 3 * center],
        // Rooks: the seventh rank, central files in the middlegame.
        3 => {
            let seventh = if rank == 6 { 20 } else { 0 };
            let central = if file == 3 || file == 4 { 5 } else { 0 };
            [seventh + central, if rank == 6 { 15 } else { 0 }]
        }
        // Queens: stay modest early, centralise late.
        4 => [-2 * center, 10 - 4 * center],
        // King: castled corner in the middlegame, the centre in the endgame.
        _ => {
            let mg = match rank {
                0 => [25, 35, 15, 0, 0, 10, 35, 25][file as usize],
                1 => [10, 10, -5, -15, -15, -5, 10, 10][file as usize],
                r => (-25 - 15 * (r - 2)).max(-70),
            };
            [mg, 30 - 10 * center]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_form_round_trips_and_names_bad_lines() {
        let weights = Weights::handwritten();
        let text = weights.to_text("hand-written");
        assert_eq!(Weights::parse(&text), Ok(weights));
        assert!(text.contains("pst_knight[c3] "));
        assert!(text.contains("material[queen] 980 980"));
        let broken = text.replacen("tempo 12 0", "tempo twelve 0", 1);
        let error = Weights::parse(&broken).unwrap_err();
        assert!(error.contains("twelve"), "{error}");
        let tempo_line = 2 + TEMPO; // after the one header line
        assert!(error.starts_with(&format!("line {tempo_line}:")), "{error}");
        let missing = text.replacen("bishop_pair 30 50\n", "", 1);
        assert_eq!(
            Weights::parse(&missing),
            Err("bishop_pair is missing".into())
        );
    }

    #[test]
    fn every_index_has_one_name() {
        let names: std::collections::HashSet<String> = (0..LEN).map(name_of).collect();
        assert_eq!(names.len(), LEN);
        assert!(term_of(LEN).is_none());
    }

    #[test]
    fn every_version_a_coefficients_file_may_name_is_built_in_and_its_own() {
        // Coefficients calibrated with any earlier version keep replaying it exactly.
        let versions: Vec<Arc<Weights>> = (0..=SHIPPED_VERSION)
            .map(|v| Weights::of_version(v).unwrap_or_else(|| panic!("version {v} is missing")))
            .collect();
        for (i, a) in versions.iter().enumerate() {
            for b in &versions[i + 1..] {
                assert_ne!(a, b, "two versions share their weights");
            }
        }
        assert_eq!(versions[SHIPPED_VERSION as usize], Weights::shipped());
        assert!(Weights::of_version(SHIPPED_VERSION + 1).is_none());
    }
}
