#!/usr/bin/env bash
# Network training data on one many-core machine for a fixed time: one process a core, each
# playing its own shards of the run `net-gen1` in turn until the time is up, then every shard file
# packed for the trip home.
#
#   scripts/datagen_many.sh OUTDIR SECONDS PROCESSES FIRST_SHARD [LADDER]
#
# The run: seed 11, soft 5,000 / hard 100,000 nodes a move, 8 random plies after the book line,
# 4,096,000 games in 8,192 shards of 500 (shard k of 8192 is games 500(k-1) .. 500k). Process p
# plays shards FIRST_SHARD + p, + PROCESSES, ... A shard cut by the time limit keeps its whole
# games (`ladder tune datagen` resumes it later; `ladder tune merge` refuses it until then).
# Any machine can continue the same run with other shard numbers; files of one binary merge.
# The second generation, `net-gen2` (network 3 plays both sides, seed 12, otherwise the same):
# NETWORK=3 SEED=12 scripts/datagen_many.sh ...
# KEPT=data/net-gen2 skips the shards kept packed in git (scripts/datakeep.sh), so a fresh machine
# goes on where the kept data ends.
set -euo pipefail
seed=${SEED:-11}; network=${NETWORK:-0}
out=${1:?OUTDIR}; seconds=${2:?SECONDS}; procs=${3:?PROCESSES}; first=${4:?FIRST_SHARD}
ladder=${5:-target/release/ladder}
# Arguments in the wrong order (a first shard of 1000 given as PROCESSES) would start a thousand
# searches on a two-core machine: refuse what no machine here runs.
cores=$(nproc)
case $procs in '' | *[!0-9]*) echo "PROCESSES must be a number, not '$procs'" >&2; exit 2 ;; esac
case $first in '' | *[!0-9]*) echo "FIRST_SHARD must be a number, not '$first'" >&2; exit 2 ;; esac
if [ "$procs" -lt 1 ] || [ "$procs" -gt $((4 * cores)) ]; then
  echo "PROCESSES is $procs: one a core is the plan, at most $((4 * cores)) on this machine's $cores cores" >&2
  exit 2
fi
if [ "$first" -lt 1 ] || [ "$first" -gt 8192 ]; then
  echo "FIRST_SHARD is $first: the run has shards 1 to 8192" >&2
  exit 2
fi
mkdir -p "$out"
deadline=$(( $(date +%s) + seconds ))
for p in $(seq 0 $((procs - 1))); do
  (
    k=$((first + p))
    while [ "$(date +%s)" -lt "$deadline" ] && [ "$k" -le 8192 ]; do
      # A shard already kept in git (KEPT=data/net-gen2, scripts/datakeep.sh) is not played
      # again on a fresh machine.
      if [ -n "${KEPT:-}" ] && [ -e "$KEPT/shard-$k.txt.xz" ]; then
        k=$((k + procs))
        continue
      fi
      left=$(( deadline - $(date +%s) ))
      timeout --signal=KILL "$left" "$ladder" tune datagen --games 4096000 --seed "$seed" --network "$network" \
        --soft-nodes 5000 --hard-nodes 100000 --random-plies 8 --hash-mb 8 \
        --shard "$k/8192" --out "$out/shard-$k.txt" 2>>"$out/log-$p.txt" || true
      k=$((k + procs))
    done
  ) &
done
wait
echo "positions: $(cat "$out"/shard-*.txt | grep -vc '^#')  games: $(cat "$out"/shard-*.txt | grep -c '^#game ')"
