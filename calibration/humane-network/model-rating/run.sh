#!/usr/bin/env bash
# Line (v54 as the loop has it) against rating_from = "target" (the same file otherwise),
# levels 4-6 against the loop's anchors for them, 12 games a pairing, judged at depth 8.
set -euo pipefail
cd "$(dirname "$0")"
LADDER=${LADDER:-../../../target/release/ladder}
for level in 4 5 6; do
  case $level in
    4) anchors=fsf-skill-3,lichess-ai-3,greedy ;;
    5) anchors=fsf-skill-3,lichess-ai-3,lichess-ai-4 ;;
    6) anchors=lichess-ai-4,lichess-ai-3,sf1350 ;;
  esac
  for model in line target; do
    [ -s "l$level-$model.md" ] && continue
    "$LADDER" arena --gauntlet --level $level --anchor $anchors --coefficients v54-$model.toml \
      --games-per-pairing 12 --seed 45 --judge-depth 8 --concurrency 1 \
      --results l$level-$model.jsonl --report l$level-$model.md.part > /dev/null
    mv l$level-$model.md.part l$level-$model.md
  done
done
