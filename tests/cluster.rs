//! Data generation on a cluster, run as an operator would: two processes of the real binary take
//! their shard from a batch system's environment (a Kubernetes Indexed Job's index in one, a
//! Slurm array's task id in the other), `ladder tune merge` joins them into exactly the file one
//! process writes, and refuses a set that is incomplete, overlapping, unfinished or of another
//! run.

use std::path::{Path, PathBuf};
use std::process::Command;

const LADDER: &str = env!("CARGO_BIN_EXE_ladder");

/// `ladder tune datagen` with small settings, `env` added to a clean batch-system environment.
fn datagen(out: &Path, shard: &str, env: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(LADDER);
    command
        .args(["tune", "datagen", "--games", "4", "--seed", "5"])
        .args(["--soft-nodes", "300", "--hard-nodes", "3000"])
        .args(["--random-plies", "4", "--hash-mb", "1", "--shard", shard])
        .arg("--out")
        .arg(out);
    for var in [
        "JOB_COMPLETION_INDEX",
        "SLURM_ARRAY_TASK_ID",
        "SLURM_ARRAY_TASK_MIN",
        "SLURM_ARRAY_TASK_COUNT",
    ] {
        command.env_remove(var);
    }
    command.envs(env.iter().copied());
    command.output().unwrap()
}

fn merge(out: &Path, shards: &[&PathBuf]) -> std::process::Output {
    Command::new(LADDER)
        .args(["tune", "merge", "--out"])
        .arg(out)
        .args(shards)
        .output()
        .unwrap()
}

fn ok(output: std::process::Output) -> std::process::Output {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn refused(output: std::process::Output, why: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "accepted, expected {why:?}");
    assert!(stderr.contains(why), "expected {why:?} in: {stderr}");
}

#[test]
fn shards_from_the_batch_environment_merge_into_the_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name);

    ok(datagen(&path("whole.txt"), "1/1", &[]));
    ok(datagen(
        &path("k8s-0.txt"),
        "env/2",
        &[("JOB_COMPLETION_INDEX", "0")],
    ));
    ok(datagen(
        &path("slurm-2.txt"),
        "env",
        &[
            ("SLURM_ARRAY_TASK_ID", "2"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "2"),
        ],
    ));
    let first = std::fs::read_to_string(path("k8s-0.txt")).unwrap();
    assert!(
        first.contains(" shard=1/2 "),
        "{}",
        first.lines().next().unwrap()
    );

    ok(merge(
        &path("merged.txt"),
        &[&path("slurm-2.txt"), &path("k8s-0.txt")],
    ));
    assert_eq!(
        std::fs::read_to_string(path("merged.txt")).unwrap(),
        std::fs::read_to_string(path("whole.txt")).unwrap()
    );

    // Incomplete: the second shard is missing.
    refused(
        merge(&path("bad.txt"), &[&path("k8s-0.txt")]),
        "shard 2 of 2 missing",
    );
    // Overlapping: the first shard twice (a copy, as a retried pod leaves).
    std::fs::copy(path("k8s-0.txt"), path("k8s-0-again.txt")).unwrap();
    refused(
        merge(
            &path("bad.txt"),
            &[
                &path("k8s-0.txt"),
                &path("k8s-0-again.txt"),
                &path("slurm-2.txt"),
            ],
        ),
        "overlapping shards",
    );
    // Made by another build: the header's binary fingerprint differs.
    let other_build = std::fs::read_to_string(path("slurm-2.txt"))
        .unwrap()
        .replacen(" binary=", " binary=0", 1);
    std::fs::write(path("other-build.txt"), other_build).unwrap();
    refused(
        merge(
            &path("bad.txt"),
            &[&path("k8s-0.txt"), &path("other-build.txt")],
        ),
        "another build of ladder",
    );
    // Unfinished: a shard cut by a kill in the middle of its last game.
    let text = std::fs::read_to_string(path("slurm-2.txt")).unwrap();
    let last_marker = text.rfind("#game ").unwrap();
    std::fs::write(path("cut.txt"), &text[..last_marker]).unwrap();
    refused(
        merge(&path("bad.txt"), &[&path("k8s-0.txt"), &path("cut.txt")]),
        "unfinished",
    );
    assert!(!path("bad.txt").exists(), "a refused merge writes nothing");

    // The batch index is checked against the count.
    refused(
        datagen(
            &path("too-far.txt"),
            "env/2",
            &[("JOB_COMPLETION_INDEX", "2")],
        ),
        "shard 3 of 2",
    );
    refused(
        datagen(&path("no-batch.txt"), "env/2", &[]),
        "JOB_COMPLETION_INDEX",
    );
}
