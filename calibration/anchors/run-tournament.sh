#!/usr/bin/env bash
# The anchor tournament of calibration/anchors.toml (see calibration/ANCHORS.md), in three runs on
# one worker, each stopped by SIGINT at its time budget (the schedule goes round by round, so every
# pairing has the same number of games, ±1; the game in progress when the budget ends is recorded
# as a fault, because the signal reaches the engines too, and left out of the fit). Each run is
# resumable: the same command again skips the games already in its results file.
#   A: the bottom and middle of the scale, cheap games, many of them;
#   B: the top, where one game costs 15-80 s on this machine, fewer;
#   C: a player between Lichess AI 2 and 3, which A showed never score against each other;
#   D: the master range (issue 19): sf2100 and sf2600 added between and above B's players, so
#      levels above 2340 have fitted anchors on both sides.
# Lichess AI 7 and 8 and sf2850 are not played: a game costs a minute or more here.
# Usage: run-tournament.sh [A] [B] [C] [D]   (default: all four), then the fit (ANCHORS.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
LADDER=${LADDER:-target/release/ladder}
RUNS=${*:-A B C D}
A="$LADDER arena --anchors-file calibration/anchors.toml \
  --anchor random,greedy,lichess-ai-1,lichess-ai-2,lichess-ai-3,sf1350,sf1500,lichess-ai-4,sf1800,lichess-ai-5,sf2000,lichess-ai-6 \
  --neighbours 2 --games-per-pairing 40 --seed 9001 --concurrency 1 --judge-depth 0 \
  --results calibration/anchors/games-a.jsonl --report calibration/anchors/report-a.md"
B="$LADDER arena --anchors-file calibration/anchors.toml \
  --anchor sf2000,lichess-ai-6,sf2200,sf2400 \
  --neighbours 2 --games-per-pairing 40 --seed 9002 --concurrency 1 --judge-depth 0 \
  --results calibration/anchors/games-b.jsonl --report calibration/anchors/report-b.md"
C="$LADDER arena --anchors-file calibration/anchors.toml \
  --anchor greedy,lichess-ai-2,fsf-skill-3,lichess-ai-3 \
  --neighbours 2 --games-per-pairing 30 --seed 9003 --concurrency 1 --judge-depth 0 \
  --results calibration/anchors/games-c.jsonl --report calibration/anchors/report-c.md"
D="$LADDER arena --anchors-file calibration/anchors.toml \
  --anchor lichess-ai-6,sf2000,sf2100,sf2200,sf2400,sf2600 \
  --neighbours 2 --games-per-pairing 30 --seed 9004 --concurrency 1 --judge-depth 0 \
  --results calibration/anchors/games-d.jsonl --report calibration/anchors/report-d.md"
for run in $RUNS; do
  case $run in
    A) cmd=$A budget=${BUDGET_A:-2000} ;;
    B) cmd=$B budget=${BUDGET_B:-1400} ;;
    C) cmd=$C budget=${BUDGET_C:-600} ;;
    D) cmd=$D budget=${BUDGET_D:-5400} ;;
    *) echo "unknown run $run (A, B, C or D)" >&2; exit 2 ;;
  esac
  echo "$run: $cmd"
  timeout -s INT -k 300 "$budget" $cmd > /dev/null || true
done
