#!/usr/bin/env bash
# A candidate network from the data kept in git, measured against the shipped network: the
# next network's trial, repeatable by any session as the kept data grows.
#
#   scripts/net_trial.sh WORKDIR [EXTRA_SHARD_FILE...]
#
# Unpacks the kept runs' shards (RUNS, default "net-gen2": data/RUN/*.xz) into WORKDIR/data or
# DATA_DIR (once), adds the extra shard files (complete or cut: the trainer takes whole games),
# trains network-3's recipe on them ((768 -> 128) x 2, mirror, 24 epochs, cosine from 0.001,
# wdl 0.1, seed 1; checkpoints in WORKDIR/ckpt, so a killed run resumes) into
# WORKDIR/candidate.nnue, and plays it against BASELINE (default net:4) at 5,000 nodes a move
# over 400 game pairs (openings of seed 2000001, as network 4's own trial).
# Both cores; on this VM about 4 minutes of training for 3M positions (N = 128) and 3 of games.
# LADDER: the binary (default target/release/ladder). EPOCHS, PAIRS, HIDDEN, WDL, LR: override
# the recipe; TRAIN_ARGS: more `ladder tune net` options (e.g. "--weight-decay 0.05").
# CLOCK_GAMES=N then plays N games at 20 ms a move against the baseline, both `ladder uci`
# (the candidate through the UCI option EvalFile, no build needed; about 5 minutes for 400),
# into WORKDIR/clock.md: the nodes a second count there, where fixed nodes hide them.
# EXTERNAL_GAMES=N then plays the candidate and the baseline each N games against Ethereal 12
# at fixed limits on the same openings and reads the difference pair by pair
# (scripts/net_external_ab.sh into WORKDIR/external; 800 games a network take about 11 minutes):
# the measure outside self-play that a network must pass before it is built in.
# TRAIN_ARGS="--output-buckets 8" trains with output buckets.
# Example, network 6's trial (at commit caff014's kept data):
#   RUNS="net-gen2 net-gen3" HIDDEN=256 WDL=0 BASELINE=net:5 EXTERNAL_GAMES=800 \
#     scripts/net_trial.sh /work/data/trial8a
set -euo pipefail
work=${1:?WORKDIR}; shift
ladder=${LADDER:-target/release/ladder}
epochs=${EPOCHS:-24}; pairs=${PAIRS:-400}; hidden=${HIDDEN:-128}; wdl=${WDL:-0.1}; lr=${LR:-0.001}
root=$(cd "$(dirname "$0")/.." && pwd)
data=${DATA_DIR:-$work/data}
mkdir -p "$data" "$work/ckpt"
files=()
for run in ${RUNS:-net-gen2}; do
  # Shard numbers repeat across runs (each run starts at 1 and 1000): one folder a run.
  mkdir -p "$data/$run"
  for packed in "$root/data/$run"/*.xz; do
    [ -e "$packed" ] || { echo "no kept shards in data/$run" >&2; exit 2; }
    plain="$data/$run/$(basename "$packed" .xz)"
    if [ ! -e "$plain" ]; then
      xz -dc "$packed" > "$plain.part"
      mv -f "$plain.part" "$plain"
    fi
    files+=("$plain")
  done
done
files+=("$@")
echo "training on ${#files[@]} files" >&2
# shellcheck disable=SC2086 # TRAIN_ARGS is a list of options
"$ladder" tune net --data "${files[@]}" --mirror --out "$work/candidate.nnue" --hidden "$hidden" \
  --epochs "$epochs" --lr "$lr" --wdl "$wdl" --seed 1 --threads 2 --checkpoint-dir "$work/ckpt" \
  ${TRAIN_ARGS:-} 2>&1 | tee "$work/train.log"
"$ladder" tune match --first "net:$work/candidate.nnue" --second "${BASELINE:-net:4}" \
  --pairs "$pairs" --nodes 5000 --threads 2 --seed 2000001 2>&1 | tee "$work/match.log"
if [ -n "${CLOCK_GAMES:-}" ]; then
  baseline=${BASELINE:-net:4}
  case $baseline in
    net:*[!0-9]* | net:) base_opt="option.EvalFile=${baseline#net:}" ;;
    net:*) base_opt="option.Network=${baseline#net:}" ;;
    *) echo "CLOCK_GAMES needs a network baseline (net:N or net:FILE), not $baseline" >&2; exit 2 ;;
  esac
  "$ladder" arena \
    --engine "name=candidate,cmd=$ladder,arg=uci,option.Hash=16,option.EvalFile=$work/candidate.nnue,movetime=20" \
    --engine "name=baseline,cmd=$ladder,arg=uci,option.Hash=16,$base_opt,movetime=20" \
    --round-robin --games-per-pairing "$CLOCK_GAMES" --concurrency 2 --seed 7 --judge-depth 0 \
    --results "$work/clock.jsonl" --report "$work/clock.md" > "$work/clock.log" 2>&1
  grep '^| candidate | baseline' "$work/clock.md"
fi
if [ -n "${EXTERNAL_GAMES:-}" ]; then
  baseline=${BASELINE:-net:4}
  case $baseline in
    net:?*) ;;
    *) echo "EXTERNAL_GAMES needs a network baseline (net:N or net:FILE), not $baseline" >&2; exit 2 ;;
  esac
  LADDER=$ladder "$root/scripts/net_external_ab.sh" "$work/external" "$work/candidate.nnue" \
    "${baseline#net:}" "$EXTERNAL_GAMES"
fi
