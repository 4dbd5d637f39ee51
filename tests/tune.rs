//! Training data and the tuner on small data: the same seed gives the same data whatever the
//! threads, a killed run resumes to the same file, shards concatenate into one run, and Texel's
//! loss falls on data the engine made.

use std::path::Path;

use ladder::engine::Weights;
use ladder::shard::Shard;
use ladder::tune::datagen::{DatagenSettings, generate};
use ladder::tune::dataset::{self, LoadOptions};
use ladder::tune::merge::merge;
use ladder::tune::sample::NodeBudget;
use ladder::tune::texel::{self, GradientSettings};
use ladder::tune::trace::theta_of;

fn settings() -> DatagenSettings {
    DatagenSettings {
        seed: 7,
        nodes: NodeBudget::Fixed(400),
        random_plies: 4,
        hash_mb: 1,
        weights: Weights::shipped(),
        network: 0,
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn datagen_is_deterministic_resumable_and_shardable() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole.txt");
    let summary = generate(&whole, &settings(), 6, Shard::WHOLE, 2).unwrap();
    assert_eq!(summary.games_played, 6);
    let text = read(&whole);
    assert_eq!(text.matches("#game ").count(), 6);
    assert!(text.starts_with("#run datagen "), "{}", &text[..80]);
    assert!(summary.positions_written > 50, "{summary:?}");

    // One thread instead of two: the same bytes.
    let single = dir.path().join("single.txt");
    generate(&single, &settings(), 6, Shard::WHOLE, 1).unwrap();
    assert_eq!(read(&single), text);

    // A run killed in the middle of its fourth game: the partial game is dropped and the run
    // goes on to the same bytes.
    let resumed = dir.path().join("resumed.txt");
    let third_marker = text.match_indices("#game 2 ").next().unwrap().0;
    let end_of_third = third_marker + text[third_marker..].find('\n').unwrap() + 1;
    let mut cut = text[..end_of_third].to_string();
    cut.push_str("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1;2");
    std::fs::write(&resumed, cut).unwrap();
    let summary = generate(&resumed, &settings(), 6, Shard::WHOLE, 1).unwrap();
    assert_eq!(summary.games_played, 3);
    assert_eq!(read(&resumed), text);

    // Shards 1/2 and 2/2, each from its own process's view, merge into the whole run.
    let (a, b) = (dir.path().join("a.txt"), dir.path().join("b.txt"));
    let halves = ["1/2", "2/2"].map(|s| s.parse::<Shard>().unwrap());
    generate(&b, &settings(), 6, halves[1], 1).unwrap();
    generate(&a, &settings(), 6, halves[0], 1).unwrap();
    let merged = dir.path().join("merged.txt");
    let summary = merge(&[b.clone(), a.clone()], &merged).unwrap();
    assert_eq!(summary.games, 6);
    assert_eq!(read(&merged), text);

    // A file of another shard or of another run is refused, not extended.
    assert!(generate(&b, &settings(), 6, halves[0], 1).is_err());
    let other_seed = DatagenSettings {
        seed: 8,
        ..settings()
    };
    assert!(generate(&b, &other_seed, 6, halves[1], 1).is_err());

    // The second generation: the shipped network plays both sides. Other games, a header
    // that names the network, and a run that neither extends nor merges with the first's.
    let network = DatagenSettings {
        network: ladder::engine::evaluator::SHIPPED_NETWORK,
        ..settings()
    };
    let second = dir.path().join("second.txt");
    generate(&second, &network, 6, Shard::WHOLE, 2).unwrap();
    let second_text = read(&second);
    let header = second_text.lines().next().unwrap();
    let named = format!(" network={} ", ladder::engine::evaluator::SHIPPED_NETWORK);
    assert!(header.contains(&named), "{header}");
    assert!(!text.lines().next().unwrap().contains("network="));
    assert_ne!(
        second_text.split_once('\n').unwrap().1,
        text.split_once('\n').unwrap().1
    );
    let again = dir.path().join("second-again.txt");
    generate(&again, &network, 6, Shard::WHOLE, 1).unwrap();
    assert_eq!(read(&again), second_text, "the network's games replay too");
    assert!(generate(&whole, &network, 6, Shard::WHOLE, 1).is_err());
    let second_half = dir.path().join("second-b.txt");
    generate(&second_half, &network, 6, halves[1], 1).unwrap();
    let mixed = merge(&[a.clone(), second_half], &dir.path().join("mixed.txt"));
    assert!(mixed.unwrap_err().to_string().contains("network"));
    // A network this binary lacks is refused before anything is written.
    let unknown = DatagenSettings {
        network: ladder::engine::evaluator::SHIPPED_NETWORK + 1,
        ..settings()
    };
    let nowhere = dir.path().join("unknown.txt");
    let e = generate(&nowhere, &unknown, 6, Shard::WHOLE, 1).unwrap_err();
    assert!(e.to_string().contains("--network"), "{e}");
    assert!(!nowhere.exists());
}

#[test]
fn texel_lowers_the_loss_on_self_play_data() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.txt");
    generate(&data, &settings(), 8, Shard::WHOLE, 2).unwrap();
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
