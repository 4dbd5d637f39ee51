#!/usr/bin/env bash
# Keep the complete shards of a datagen run in git, compressed, so that a move to a fresh
# machine (which empties /work/data, as it did twice in two days) loses only the shards in play.
#
#   scripts/datakeep.sh RUN SHARD_FILE...      e.g. scripts/datakeep.sh net-gen2 /work/data/gen2-*/shard-*.txt
#
# Each shard with all 500 of its games (`#game` lines) is packed with `xz -6` into
# data/RUN/shard-K.txt.xz unless a packed copy is there already; a shard still in play is
# skipped. A complete shard is about 2.4 MB of text and 0.36 MB packed (8.6 bytes a position).
# Unpack for training or merging with `xz -dk data/RUN/*.xz`; `ladder tune merge` then checks
# the set as it checks any other.
set -euo pipefail
run=${1:?RUN (e.g. net-gen2)}; shift
case $run in '' | */* | .*) echo "RUN must be a plain name, not '$run'" >&2; exit 2 ;; esac
dir=$(cd "$(dirname "$0")/.." && pwd)/data/$run
mkdir -p "$dir"
kept=0; skipped=0
for shard in "$@"; do
  name=$(basename "$shard")
  if [ -e "$dir/$name.xz" ]; then continue; fi
  if [ ! -f "$shard" ]; then
    echo "$shard: no such shard file: not kept" >&2
    skipped=$((skipped + 1))
    continue
  fi
  games=$(grep -c '^#game ' "$shard" || true)
  if [ "$games" -ne 500 ]; then
    echo "$shard: $games of 500 games, still in play: not kept" >&2
    skipped=$((skipped + 1))
    continue
  fi
  # Packed beside the target and renamed, so an interrupted run leaves no half file.
  xz -6 -c "$shard" > "$dir/.$name.xz.part"
  mv "$dir/.$name.xz.part" "$dir/$name.xz"
  kept=$((kept + 1))
done
echo "$run: $kept shards packed into $dir, $skipped not kept (in play or missing)"
