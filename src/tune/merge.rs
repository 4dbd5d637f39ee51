//! `ladder tune merge`: the shard files of one data generation run joined into the file a single
//! process would have written.
//!
//! A set is merged only when it is one whole run: every file's header ([`RunHeader`]) agrees on
//! the settings, the weights and the binary; the shard indices are exactly 1..=N, none twice; and
//! every shard is finished (its games run from the first of its range to the last, no partial
//! game at the end). Anything else is refused with the file and the reason, and nothing is
//! written: a cluster that lost a pod, ran a shard twice or mixed two builds must not yield a
//! training set that silently lacks or doubles games.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::sample::RunHeader;
use crate::shard::Shard;

/// `ladder tune merge` options.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The merged file (replaced whole, only when the set is complete).
    #[arg(long)]
    pub out: PathBuf,
    /// The shard files, in any order.
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
}

/// What a merge wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeSummary {
    pub shards: u64,
    pub games: u64,
    pub positions: u64,
}

pub fn run(args: MergeArgs) -> anyhow::Result<()> {
    let summary = merge(&args.shards, &args.out)?;
    tracing::info!(
        "{}: {} shards merged, {} games, {} positions",
        args.out.display(),
        summary.shards,
        summary.games,
        summary.positions
    );
    Ok(())
}

/// Checks that `shards` are one complete run and writes them, in order and under one header, to
/// `out`; on any refusal `out` is left as it was.
pub fn merge(shards: &[PathBuf], out: &Path) -> anyhow::Result<MergeSummary> {
    let mut headers: Vec<(RunHeader, &PathBuf)> = Vec::new();
    for path in shards {
        if same_file(path, out) {
            bail!("{} is both a shard and --out", path.display());
        }
        let header = read_header(path)?;
        if let Some((first, first_path)) = headers.first() {
            first.same_run(&header).map_err(|e| {
                anyhow::anyhow!(
                    "{} is not of the run of {}: {e}",
                    path.display(),
                    first_path.display()
                )
            })?;
        }
        if let Some((_, twin)) = headers.iter().find(|(h, _)| h.shard == header.shard) {
            bail!(
                "overlapping shards: {} and {} both hold shard {}",
                twin.display(),
                path.display(),
                header.shard
            );
        }
        headers.push((header, path));
    }
    let Some(first) = headers.first().map(|(h, _)| h.clone()) else {
        bail!("no shard files given");
    };
    let count = first.shard.count;
    let missing: Vec<String> = (1..=count)
        .filter(|k| !headers.iter().any(|(h, _)| h.shard.index == *k))
        .map(|k| k.to_string())
        .collect();
    if !missing.is_empty() {
        bail!(
            "incomplete set: shard{} {} of {count} missing",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", ")
        );
    }
    headers.sort_by_key(|(h, _)| h.shard.index);
    let merged = RunHeader {
        shard: Shard::WHOLE,
        ..first
    };

    let dir = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let tmp = tempfile_beside(out);
    let written = (|| -> anyhow::Result<MergeSummary> {
        let file =
            File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
        let mut writer = BufWriter::new(file);
        writer.write_all(merged.line().as_bytes())?;
        let mut summary = MergeSummary {
            shards: count,
            games: 0,
            positions: 0,
        };
        for (header, path) in &headers {
            let (games, positions) = copy_body(path, header, &mut writer)?;
            summary.games += games;
            summary.positions += positions;
        }
        let file = writer
            .into_inner()
            .map_err(|e| anyhow::anyhow!("cannot write {}: {}", tmp.display(), e.error()))?;
        file.sync_all()?;
        Ok(summary)
    })();
    match written {
        Ok(summary) => {
            std::fs::rename(&tmp, out)
                .with_context(|| format!("cannot move the merged data to {}", out.display()))?;
            Ok(summary)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

fn tempfile_beside(out: &Path) -> PathBuf {
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "merged".into());
    out.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn read_header(path: &Path) -> anyhow::Result<RunHeader> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut line = String::new();
    BufReader::new(file)
        .read_line(&mut line)
        .with_context(|| format!("cannot read {}", path.display()))?;
    RunHeader::parse(&line).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// Copies the positions and game markers of one shard file, checking that its games are those
/// of its range, in order, all there: (games, positions).
fn copy_body(path: &Path, header: &RunHeader, out: &mut impl Write) -> anyhow::Result<(u64, u64)> {
    let range = header.shard.range(header.games);
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut reader = BufReader::new(file);
    let mut line = String::new();
    let mut next = range.start;
    let mut positions = 0u64;
    let mut pending_positions = 0u64;
    let mut first = true;
    loop {
        line.clear();
        let read = reader
            .read_line(&mut line)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if read == 0 {
            break;
        }
        if first {
            first = false;
            continue; // the header, checked already
        }
        if !line.ends_with('\n') {
            bail!(
                "{}: unfinished (a partial game at the end): resume its datagen first",
                path.display()
            );
        }
        if let Some(rest) = line.strip_prefix("#game ") {
            let index = rest.split_whitespace().next().and_then(|i| i.parse().ok());
            if index != Some(next) {
                bail!(
                    "{}: game marker {:?} where game {next} was expected",
                    path.display(),
                    line.trim()
                );
            }
            next += 1;
            positions += pending_positions;
            pending_positions = 0;
        } else if !line.starts_with('#') && !line.trim().is_empty() {
            pending_positions += 1;
        }
        out.write_all(line.as_bytes())?;
    }
    if next != range.end || pending_positions > 0 {
        bail!(
            "{}: unfinished: shard {} holds games {}..{} of {}..{}; resume its datagen first",
            path.display(),
            header.shard,
            range.start,
            next,
            range.start,
            range.end
        );
    }
    Ok((range.end - range.start, positions))
}
