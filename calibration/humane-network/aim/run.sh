#!/usr/bin/env bash
# Aimed moves at the bottom (issue 33, docs/humane.md "Aimed moves"): version 54 as the loop
# has it, with rating_from = "target" and a [humane.aim] table, one file a trial, named
# l<level>-sight<look plies>-ord<ordinary_cp>-big<big_factor>.toml. Each plays 12 games
# against each of two anchors near the level (seed 47, fixed nodes) and is judged by
# Stockfish 15.1 at depth 8 into <name>.md; a trial with its report is skipped.
set -euo pipefail
cd "$(dirname "$0")"
LADDER=${LADDER:-../../../target/release/ladder}
for file in l*.toml; do
  name=${file%.toml}
  [ -s "$name.md" ] && continue
  level=${name:1:1}
  case $level in
    1) anchors=lichess-ai-1 ;;
    4) anchors=fsf-skill-3,lichess-ai-3 ;;
    6) anchors=lichess-ai-3,lichess-ai-4 ;;
  esac
  "$LADDER" arena --gauntlet --level "$level" --anchor "$anchors" --coefficients "$file" \
    --games-per-pairing 12 --seed 47 --concurrency 1 --judge-depth 8 \
    --results "$name.jsonl.part" --report "$name.md.part" > /dev/null
  mv "$name.jsonl.part" "$name.jsonl"
  mv "$name.md.part" "$name.md"
done
