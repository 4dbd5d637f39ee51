//! `ladder tune net` end to end through the real binary on data `datagen` made: each epoch's
//! losses and throughput are printed, the network file it writes is one the engine reads, a
//! rerun on the finished checkpoints writes the same bytes, and bad input is a clear error.

mod common {
    pub mod cli;
}

use common::cli::{ladder_output, texts};
use ladder::engine::Weights;
use ladder::engine::nnue::Network;
use ladder::shard::Shard;
use ladder::tune::datagen::{DatagenSettings, generate};
use ladder::tune::sample::NodeBudget;
use shakmaty::{Chess, Position};

#[test]
fn the_trainer_writes_a_network_the_engine_reads() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.txt");
    let settings = DatagenSettings {
        seed: 3,
        nodes: NodeBudget::Fixed(300),
        random_plies: 4,
        hash_mb: 1,
        weights: Weights::shipped(),
        network: 0,
    };
    generate(&data, &settings, 6, Shard::WHOLE, 2).unwrap();
    let out = dir.path().join("net.bin");
    let checkpoints = dir.path().join("checkpoints");
    let args = |out: &std::path::Path| {
        vec![
            "tune".into(),
            "net".into(),
            "--data".into(),
            data.display().to_string(),
            "--out".into(),
            out.display().to_string(),
            "--hidden".into(),
            "16".into(),
            "--epochs".into(),
            "3".into(),
            "--batch-size".into(),
            "64".into(),
            "--holdout-every".into(),
            "3".into(),
            "--checkpoint-dir".into(),
            checkpoints.display().to_string(),
        ]
    };
    let (ok, stdout, stderr) = texts(&ladder_output(args(&out), &[]));
    assert!(ok, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("held-out positions from 6 games"),
        "{stdout}"
    );
    for epoch in 1..=3 {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("epoch {epoch:>3}")))
            .unwrap_or_else(|| panic!("no line for epoch {epoch}: {stdout}"));
        assert!(line.contains("validation loss 0."), "{line}");
        assert!(line.contains("positions/s"), "{line}");
    }
    let bytes = std::fs::read(&out).unwrap();
    let network = Network::from_bytes(&bytes).unwrap();
    assert_eq!(network.hidden(), 16);
    let start = Chess::default();
    let eval =
        ladder::engine::nnue::accumulator::evaluate_board(&network, start.board(), start.turn());
    assert!(eval.abs() < 2000, "start position {eval} cp");

    // Every epoch is checkpointed: a rerun trains nothing and writes the same network.
    let again = dir.path().join("again.bin");
    let (ok, stdout, stderr) = texts(&ladder_output(args(&again), &[]));
    assert!(ok, "{stdout}\n{stderr}");
    assert!(!stdout.contains("epoch   1"), "{stdout}");
    assert_eq!(std::fs::read(&again).unwrap(), bytes);
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.txt");
    let out = dir.path().join("net.bin");
    let (ok, _, stderr) = texts(&ladder_output(
        [
            "tune",
            "net",
            "--data",
            missing.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    ));
    assert!(!ok);
    assert!(stderr.contains("missing.txt"), "{stderr}");
    assert!(!out.exists());

    let not_a_net = dir.path().join("weights.txt");
    std::fs::write(&not_a_net, "# weights\nmaterial 100 100\n").unwrap();
    let (ok, _, stderr) = texts(&ladder_output(
        ["tune", "net-speed", "--net", not_a_net.to_str().unwrap()],
        &[],
    ));
    assert!(!ok);
    assert!(stderr.contains("not a network file"), "{stderr}");
}
