//! The arena's quickest real match, for tests that need one played to its end.

/// Four games between levels 1 and 2 (seed 7, two at a time).
pub const QUICK_MATCH: [&str; 8] = [
    "--level",
    "1..2",
    "--games-per-pairing",
    "4",
    "--seed",
    "7",
    "--concurrency",
    "2",
];
