#!/usr/bin/env bash
# The one recalibration of issues 32 and 33: version 41's ladder with the humane error model
# on (the bottom's second look, the top's stumbles with their taper) and network 4 from level
# 10 up (calibration/humane-network/coefficients.toml, version 42 onward), played offline
# against the anchors as calibration/next/run.sh did for issue 19 (the same loop, shape and
# anchors; calibration/arena/README.md explains it). It works on its own copy of the
# coefficients: the shipped calibration/coefficients.toml (version 41) stays true until this
# run has the ladder's shape, and is then replaced by its last version.
# Run from the repository root; stopped (Ctrl-C, crash, end of a session), the same command
# continues where it stopped. LADDER overrides the binary (default: a release build); the
# binary must play as the one that began the run (`ladder bench` 514395, `--network 4`
# 501239, the humane model of the commit that added this file), or the games are not alike.
# CONCURRENCY sets the games of one batch played at once (default 2); further arguments go to
# the loop (e.g. --parallel-levels 2).
set -euo pipefail
LADDER=${LADDER:-target/release/ladder}
exec "$LADDER" calibrate --arena \
  --coefficients calibration/humane-network/coefficients.toml \
  --history-dir calibration/history \
  --results calibration/humane-network/games.jsonl \
  --report-dir calibration/humane-network \
  --level 1..12 \
  --min-games 40 --final-games 200 --gap-games 400 --batch 12 --anchors-per-level 3 --max-anchor-se 150 \
  --gain-floor 0.5 --budget 8000 --seed 3233 --concurrency "${CONCURRENCY:-2}" "$@"
