#!/usr/bin/env bash
# The human-likeness report of issue 33: the bottom levels with the humane error model off (the
# shipped coefficients) and on (calibration/humane/coefficients.toml), each against external
# opponents near its strength (levels 1-2: Lichess AI 1 and 2 emulated by Fairy-Stockfish and the
# greedy mover; levels 3-4: Lichess AI 2 and 3 and the greedy mover), every game judged by
# Stockfish at depth $DEPTH with 3 lines per position. Each report ends with the
# "Human-likeness of the errors" table (big losses per 100 moves, ACPL, clear recaptures missed,
# easy against hard, by clock left; people's figures beside them) and the scores against the
# anchors (the rating change the later recalibration must take back).
# Usage: scripts/humane_report.sh [GAMES_PER_PAIRING] [SEED]; LADDER overrides the binary
# (default: release), OUT the folder (default: calibration/humane), TC the clock (60+0), MODELS
# which runs ("off on").
# Needs Debian's stockfish and fairy-stockfish.
set -euo pipefail
GAMES=${1:-10}
SEED=${2:-33}
DEPTH=${DEPTH:-8}
TC=${TC:-60+0}
LADDER=${LADDER:-target/release/ladder}
OUT=${OUT:-calibration/humane}
mkdir -p "$OUT"
for model in ${MODELS:-off on}; do
  coefficients=calibration/coefficients.toml
  [ "$model" = on ] && coefficients=calibration/humane/coefficients.toml
  for group in "1,2 lichess-ai-1,greedy,lichess-ai-2" "3,4 lichess-ai-2,greedy,lichess-ai-3"; do
    set -- $group
    name="$OUT/levels-${1/,/-}-$model"
    rm -f "$name.jsonl"
    "$LADDER" arena --gauntlet --level "$1" --anchor "$2" --coefficients "$coefficients" \
      --games-per-pairing "$GAMES" --seed "$SEED" --tc "$TC" --judge-depth "$DEPTH" \
      --concurrency "${CONCURRENCY:-1}" --results "$name.jsonl" --report "$name.md" >/dev/null
    echo "## levels $1, model $model: $name.md"
    grep -A 20 '^## Human-likeness' "$name.md" | grep '^| level' || true
  done
done
