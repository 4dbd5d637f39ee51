#!/usr/bin/env bash
# How far full strength stands above the top level (a benchmark, not a test): the ladder's engine
# over UCI at full strength (no level: no noise, no blindness, the shipped evaluation weights and
# search) on a clock or at a node budget against the strongest anchors, which keep their own node
# budgets, rated on the anchors'
# scale by the arena's fit with the anchors fixed; then that rating minus the top level's rating
# in the coefficients file. Both ratings are on the same scale, so the anchors' common offset
# cancels.
#
# usage: scripts/headroom.sh OUT_DIR [GAMES_PER_ANCHOR] [BUDGET] [COEFFICIENTS] [ANCHORS]
#   BUDGET: a clock, `10+0.1` (the default), or `nodes=N` per move. A clock measures what a
#   player meets but needs an otherwise idle machine; a node budget gives the same games on a
#   busy one (500000 nodes is about what full strength searches a move at 10+0.1 here, idle).
#   defaults: 20 games per anchor, 10+0.1, calibration/coefficients.toml, sf2200,sf2400,sf2600
# Resumable: the same command skips the games its results file already holds. LADDER names a
# binary to test instead of a fresh release build.
set -euo pipefail
out=${1:?usage: scripts/headroom.sh OUT_DIR [GAMES_PER_ANCHOR] [TC] [COEFFICIENTS] [ANCHORS]}
games=${2:-20}
budget=${3:-10+0.1}
coefficients=${4:-calibration/coefficients.toml}
anchors=${5:-sf2200,sf2400,sf2600}
cd "$(dirname "$0")/.."
mkdir -p "$out"
if [ -z "${LADDER:-}" ]; then
  cargo build --release --locked
  LADDER=target/release/ladder
fi
# A copy, so a rebuild during the run does not change the engine under test.
cp "$LADDER" "$out/ladder-under-test"
ladder="$out/ladder-under-test"
case $budget in
  nodes=*) limit=(--engine "name=full-strength,cmd=$ladder,arg=uci,option.Hash=16,$budget") ;;
  *) limit=(--engine "name=full-strength,cmd=$ladder,arg=uci,option.Hash=16" --tc "$budget") ;;
esac
"$ladder" arena "${limit[@]}" \
  --anchor "$anchors" --gauntlet --games-per-pairing "$games" --concurrency 1 \
  --seed 43 --judge-depth 0 --results "$out/headroom.jsonl" --report "$out/headroom.md"

# The full-strength row of the report's ratings table: | full-strength | rating | ±ci | ... |
full=$(awk -F'|' '$2 ~ /^ full-strength $/ && $3 ~ /^ *-?[0-9]+ *$/ { gsub(/ /, "", $3); gsub(/[ ±]/, "", $4); print $3, $4; exit }' "$out/headroom.md")
[ -n "$full" ] || { echo "no rating for full-strength in $out/headroom.md" >&2; exit 1; }
read -r full_rating full_ci <<<"$full"
# The top level and its rating: the highest key of the coefficients' [ratings] table.
top=$(awk '/^\[/ { in_ratings = ($0 == "[ratings]") ; next }
           in_ratings && /^[0-9]+ *=/ { gsub(/[ "]/, ""); split($0, kv, "=");
             if (kv[1] + 0 > best) { best = kv[1] + 0; rating = kv[2] + 0 } }
           END { if (best) print best, rating }' "$coefficients")
[ -n "$top" ] || { echo "no [ratings] in $coefficients" >&2; exit 1; }
read -r top_level top_rating <<<"$top"
summary="full strength at $budget: $full_rating ±$full_ci on the anchors' scale; top level $top_level ($coefficients): $top_rating; headroom $((full_rating - ${top_rating%.*})) Elo"
echo "$summary"
printf '\n## Headroom\n\n%s\n' "$summary" >>"$out/headroom.md"
