#!/usr/bin/env bash
# Full strength against external engines at a clock (a benchmark, not a test): the ladder's
# engine over UCI (no Level: full strength, the shipped evaluation weights) against Stockfish
# with UCI_LimitStrength at several UCI_Elo and against Ethereal, each in its own arena match
# with the built-in balanced openings, both colours, results and a report per opponent.
#
# usage: scripts/strength_external.sh OUT_DIR [GAMES] [TC] [CONCURRENCY] [OPPONENTS...]
#   OPPONENTS: sf2400 sf2600 sf2850 ethereal (default: sf2850 ethereal sf2600 sf2400)
# Resumable: an arena results file already holding a pairing's games is not played again.
# NETWORK=N plays the ladder's engine with built-in network N (UCI option Network) instead of
# the hand-crafted evaluation; EVAL_FILE=FILE with a network file `ladder tune net` wrote (UCI
# option EvalFile: a candidate before it is built in; copied beside the results, so the file
# under test cannot change during the run).
set -euo pipefail
out=${1:?usage: scripts/strength_external.sh OUT_DIR [GAMES] [TC] [CONCURRENCY] [OPPONENTS...]}
games=${2:-60}
tc=${3:-10+0.1}
concurrency=${4:-1}
shift $(( $# < 4 ? $# : 4 ))
opponents=("$@")
[ ${#opponents[@]} -gt 0 ] || opponents=(sf2850 ethereal sf2600 sf2400)
cd "$(dirname "$0")/.."
cargo build --release --locked
mkdir -p "$out"
# A copy, so a rebuild during the run does not change the engine under test.
cp target/release/ladder "$out/ladder-under-test"
ladder="$out/ladder-under-test"
evaluation=${NETWORK:+,option.Network=$NETWORK}
if [ -n "${EVAL_FILE:-}" ]; then
  cp "$EVAL_FILE" "$out/network-under-test.nnue"
  evaluation=",option.EvalFile=$(cd "$out" && pwd)/network-under-test.nnue"
fi
for opponent in "${opponents[@]}"; do
  case $opponent in
    sf*) spec="name=$opponent,cmd=/usr/games/stockfish,option.UCI_LimitStrength=true,option.UCI_Elo=${opponent#sf},option.Threads=1,option.Hash=16" ;;
    ethereal) spec="name=ethereal,cmd=/usr/games/ethereal-chess,option.Threads=1,option.Hash=16" ;;
    *) echo "unknown opponent $opponent" >&2; exit 2 ;;
  esac
  "$ladder" arena --engine "name=ladder,cmd=$ladder,arg=uci,option.Hash=16$evaluation" --engine "$spec" \
    --round-robin --tc "$tc" --games-per-pairing "$games" --concurrency "$concurrency" \
    --seed 41 --judge-depth 0 --results "$out/$opponent.jsonl" --report "$out/$opponent.md"
done
