#!/usr/bin/env bash
# The recalibration of issue 19: the ladder for search version 2 and evaluation weights version 2
# (search = 2, eval_weights = 2 in calibration/next/coefficients.toml) with two master levels (11
# and 12, targets 2550 and 2760 on the same [targets] line), played offline against the anchors as
# calibration/arena/run.sh does, with the master-range anchors of run D (calibration/ANCHORS.md).
# It works on its own copy of the coefficients, so the shipped calibration/coefficients.toml
# (then version 17: search 1, evaluation version 0) stayed true until this run had the ladder's
# shape; its version 41 (4,833 games, calibration/next/report.md) is now the shipped file. The search-1 run that preceded it (versions
# 18-21, 1,067 games) is kept in calibration/next/search1/.
# Run from the repository root; stopped (Ctrl-C, crash, end of a session), the same command
# continues where it stopped. LADDER overrides the binary (default: a release build).
set -euo pipefail
LADDER=${LADDER:-target/release/ladder}
exec "$LADDER" calibrate --arena \
  --coefficients calibration/next/coefficients.toml \
  --history-dir calibration/history \
  --results calibration/next/games.jsonl \
  --report-dir calibration/next \
  --level 1..12 \
  --min-games 40 --final-games 200 --gap-games 400 --batch 12 --anchors-per-level 3 --max-anchor-se 150 \
  --gain-floor 0.5 --budget 8000 --seed 2027 --concurrency 2 "$@"
