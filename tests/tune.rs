//! Training data and the tuner on small data: the same seed gives the same data whatever the
//! threads, a killed run resumes to the same file, shards concatenate into one run, and Texel's
//! loss falls on data the engine made.

use std::path::Path;

use ladder::engine::Weights;
use ladder::tune::datagen::{DatagenSettings, Shard, generate};
use ladder::tune::dataset::{self, LoadOptions};
use ladder::tune::texel::{self, GradientSettings};
use ladder::tune::trace::theta_of;

fn settings() -> DatagenSettings {
    DatagenSettings {
        seed: 7,
        nodes: 400,
        random_plies: 4,
        hash_mb: 1,
        weights: Weights::shipped(),
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn datagen_is_deterministic_resumable_and_shardable() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole.txt");
    let summary = generate(&whole, &settings(), Shard::WHOLE.range(6), 2).unwrap();
    assert_eq!(summary.games_played, 6);
    let text = read(&whole);
    assert_eq!(text.matches("#game ").count(), 6);
    assert!(summary.positions_written > 50, "{summary:?}");

    // One thread instead of two: the same bytes.
    let single = dir.path().join("single.txt");
    generate(&single, &settings(), 0..6, 1).unwrap();
    assert_eq!(read(&single), text);

    // A run killed in the middle of a game: the partial game is dropped and the run goes on.
    let resumed = dir.path().join("resumed.txt");
    generate(&resumed, &settings(), 0..3, 1).unwrap();
    let mut cut = read(&resumed);
    cut.push_str("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1;2");
    std::fs::write(&resumed, cut).unwrap();
    let summary = generate(&resumed, &settings(), 0..6, 1).unwrap();
    assert_eq!(summary.games_played, 3);
    assert_eq!(read(&resumed), text);

    // Shards 1/2 and 2/2 concatenate into the whole run.
    let (a, b) = (dir.path().join("a.txt"), dir.path().join("b.txt"));
    let halves = ["1/2", "2/2"].map(|s| s.parse::<Shard>().unwrap().range(6));
    generate(&a, &settings(), halves[0].clone(), 1).unwrap();
    generate(&b, &settings(), halves[1].clone(), 1).unwrap();
    assert_eq!(read(&a) + &read(&b), text);

    // A file of another shard is refused, not extended.
    assert!(generate(&b, &settings(), 0..3, 1).is_err());
}

#[test]
fn texel_lowers_the_loss_on_self_play_data() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.txt");
    generate(&data, &settings(), 0..8, 2).unwrap();
    let start = Weights::handwritten();
    let split = dataset::load(
        &[data],
        &start,
        LoadOptions {
            holdout_every: 0,
            max_positions: usize::MAX,
            keep_positions: false,
        },
    )
    .unwrap();
    assert_eq!(split.games, 8);
    let theta = theta_of(&start);
    let k = texel::fit_k(&split.train, &theta, 2);
    assert!(k > 0.0 && k < 0.1, "K = {k}");
    let before = texel::loss(&split.train, &theta, k, 1.0, 2);
    let settings = GradientSettings {
        epochs: 100,
        learning_rate: 1.0,
        lambda: 1.0,
        threads: 2,
        min_positions: 1,
    };
    let (tuned, _) = texel::descend(&split, theta, k, settings, |_| {});
    let after = texel::loss(&split.train, &tuned, k, 1.0, 2);
    assert!(after < before, "loss {before} -> {after}");
}
