#!/usr/bin/env bash
# Human-likeness against a stand-in for people (issue 12): each level's top-1 match with the
# moves of the level two steps weaker and two steps stronger, measured by `ladder calibrate`'s
# own human-likeness code. Levels play their neighbours two steps away in the arena; each game
# is then relabelled as if the opponent were a person rated at the level's own target, so the
# likeness report asks exactly that level to predict the other's moves.
# Usage: scripts/likeness_stand_in.sh [GAMES_PER_PAIRING] [SEED]; needs python3, and Debian's
# stockfish for the centipawn-loss column. LADDER overrides the binary (default: release).
set -euo pipefail
GAMES=${1:-10}
SEED=${2:-7}
LADDER=${LADDER:-target/release/ladder}
COEFFICIENTS=${COEFFICIENTS:-calibration/coefficients.toml}
FROM=400
STEP=215
dir=${KEEP_DIR:-$(mktemp -d)}
echo "games and reports in $dir"
"$LADDER" arena --level 1..10 --neighbours 2 --coefficients "$COEFFICIENTS" \
  --games-per-pairing "$GAMES" --seed "$SEED" --judge-depth 0 \
  --concurrency "${CONCURRENCY:-2}" --results "$dir/games.jsonl" >/dev/null 2>&1
python3 - "$dir" "$FROM" "$STEP" <<'PY'
import json, sys
d, start, step = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
out = {"stronger": open(f"{d}/stronger.jsonl", "w"), "weaker": open(f"{d}/weaker.jsonl", "w")}
for line in open(f"{d}/games.jsonl"):
    g = json.loads(line)
    name = g["opponent"]["name"]
    if not (g["account"].startswith("level-") and name.startswith("level-")):
        continue
    mine, theirs = g["level"], float(name.split("-", 1)[1])
    if abs(theirs - mine) != 2:
        continue
    g["opponent"].update(bot=False, title=None, rating=start + step * (mine - 1))
    out["stronger" if theirs > mine else "weaker"].write(json.dumps(g) + "\n")
PY
for side in stronger weaker; do
  echo "## Each level against the moves of the level two steps $side"
  "$LADDER" calibrate --results "$dir/$side.jsonl" --coefficients "$COEFFICIENTS" \
    --target-from "$FROM" --target-step "$STEP" --likeness-games 100000 \
    --report-dir "$dir/$side" >/dev/null 2>&1 || true
  sed -n '/^## Human-likeness/,$p' "$dir/$side/calibration.md" | grep '^|' || echo "(no likeness table: see $dir/$side)"
done
