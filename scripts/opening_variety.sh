#!/usr/bin/env bash
# Opening variety (issue 12): how many of N games of one level from the start position are still
# distinct after 10 and 20 plies, against an opponent that always answers the same position with
# the same move (Stockfish at a fixed node count, one thread, a new game each time), so every
# difference comes from the level. Usage: scripts/opening_variety.sh LEVEL [GAMES] [SEED]
# Needs Debian's stockfish. LADDER overrides the binary (default: a release build).
set -euo pipefail
LEVEL=${1:?usage: scripts/opening_variety.sh LEVEL [GAMES] [SEED]}
GAMES=${2:-100}
SEED=${3:-12}
LADDER=${LADDER:-target/release/ladder}
COEFFICIENTS=${COEFFICIENTS:-calibration/coefficients.toml}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq -" > "$dir/start.epd"
"$LADDER" arena --level "$LEVEL" --coefficients "$COEFFICIENTS" \
  --engine "name=sf-fixed,cmd=/usr/games/stockfish,nodes=5000" \
  --openings "$dir/start.epd" --games-per-pairing "$GAMES" --seed "$SEED" \
  --concurrency "${CONCURRENCY:-2}" --judge-depth 0 --results "$dir/games.jsonl" >/dev/null 2>&1
python3 - "$dir/games.jsonl" "$LEVEL" <<'PY'
import json, sys
games = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
games = [g for g in games if g.get("account", "").startswith("level-")]
for colour in ("white", "black", None):
    subset = [g["moves"].split() for g in games if colour is None or g["color"] == colour]
    cells = [f"{len({tuple(m[:p]) for m in subset})}/{len(subset)}" for p in (4, 10, 20)]
    print(f"level {sys.argv[2]} as {colour or 'either'}: distinct after 4/10/20 plies: {' '.join(cells)}")
PY
