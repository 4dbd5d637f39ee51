#!/usr/bin/env bash
# The anchor tournament of calibration/anchors.toml (see calibration/ANCHORS.md): two runs on one
# worker, each resumable (run the same command again: games already in its results file are
# skipped), each stopped by SIGINT at its time budget (the games in progress finish; the
# schedule goes round by round, so every pairing has the same number of games, ±1).
#   A: the bottom and middle of the scale, cheap games, many of them;
#   B: the top, where one game costs 30-80 s on this machine, fewer.
# Lichess AI 7 and 8 and sf2850 are not played: a game costs a minute or more here.
# Then the joint fit of both, pinned, written into calibration/anchors.toml.
set -euo pipefail
cd "$(dirname "$0")/../.."
LADDER=${LADDER:-target/release/ladder}
BUDGET_A=${BUDGET_A:-2000}
BUDGET_B=${BUDGET_B:-1400}
A="$LADDER arena --anchors-file calibration/anchors.toml \
  --anchor random,greedy,lichess-ai-1,lichess-ai-2,lichess-ai-3,sf1350,sf1500,lichess-ai-4,sf1800,lichess-ai-5,sf2000,lichess-ai-6 \
  --neighbours 2 --games-per-pairing 40 --seed 9001 --concurrency 1 --judge-depth 0 \
  --results calibration/anchors/games-a.jsonl --report calibration/anchors/report-a.md"
B="$LADDER arena --anchors-file calibration/anchors.toml \
  --anchor sf2000,lichess-ai-6,sf2200,sf2400 \
  --neighbours 2 --games-per-pairing 40 --seed 9002 --concurrency 1 --judge-depth 0 \
  --results calibration/anchors/games-b.jsonl --report calibration/anchors/report-b.md"
echo "A: $A"
timeout -s INT -k 300 "$BUDGET_A" $A > /dev/null || true
echo "B: $B"
timeout -s INT -k 300 "$BUDGET_B" $B > /dev/null || true
