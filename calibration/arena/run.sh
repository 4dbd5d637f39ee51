#!/usr/bin/env bash
# The command that produced coefficients version 2 onwards (issue 9): the calibration loop played
# offline against the anchors. Run from the repository root; it appends to
# calibration/arena/games.jsonl and applies each cycle to calibration/coefficients.toml (old
# versions in calibration/history/). Stopped (Ctrl-C, crash, end of a session), the same command
# continues where it stopped. LADDER overrides the binary (default: a release build).
# Targets: the ladder's, [targets] of calibration/coefficients.toml (450 + 210 (L - 1) on
# lichess-blitz; until issue 22 given here as --target-from 450 --target-step 210). Level 1 sits where the weakest play the engine allows measures
# (463 +- 58 at version 14, with the opening book); until version 14 they were 400 + 215 (L - 1),
# which level 1 could not reach, leaving the gap between levels 1 and 2 short.
set -euo pipefail
LADDER=${LADDER:-target/release/ladder}
exec "$LADDER" calibrate --arena \
  --coefficients calibration/coefficients.toml \
  --results calibration/arena/games.jsonl \
  --report-dir calibration/arena \
  --level 1..10 \
  --min-games 40 --final-games 200 --gap-games 400 --batch 12 --anchors-per-level 3 --max-anchor-se 150 \
  --gain-floor 0.5 --budget 6000 --seed 2026 --concurrency 2 "$@"
