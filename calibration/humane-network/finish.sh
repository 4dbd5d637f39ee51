#!/usr/bin/env bash
# What follows the one recalibration of issues 32 and 33 once its loop (run.sh) has ended:
#   1. ship it: the shipped version 41 is kept as calibration/history/coefficients-v41.toml
#      (committed already; history files never change) and the loop's last version becomes
#      calibration/coefficients.toml, the coefficients the daemon and `Coefficients::builtin()`
#      read (so rebuild after this step: the binary embeds the shipped file);
#   2. level 1 of the shipped ladder against the random mover and Lichess AI 1 (100 games each;
#      the issues ask 15-40% against Lichess AI 1) and its K+Q/K+R conversions against
#      Stockfish (the endgame test's full sample, 200 positions each);
#   3. the human-likeness report of issue 33, model on (the shipped version) and off (version
#      41): each judged on the last 50 games a level that its own loop played as it plays (the
#      shipped version's in calibration/humane-network/games.jsonl, version 41's in
#      calibration/next/games.jsonl: at least 200 a level against three anchors near its
#      strength), by Stockfish at depth $DEPTH (default 12); then, for the clock columns that
#      games at fixed nodes cannot fill, the shipped version at $CLOCK_TC (default 180+0) with
#      the levels paced as people (`--think human`; scripts/humane_report.sh, $CLOCK_GAMES games
#      a pairing, default 6 = 18 a level, seed 33);
#   4. the headroom above the top level (scripts/headroom.sh at 500k nodes a move: the same games
#      on a busy machine).
# Every step keeps what a stopped run finished (the arena resumes its results file, the report
# keeps its finished pairs, the headroom resumes its games); run the same command again to go
# on. It refuses while the loop's report says the loop has not ended ("interrupted" or "cycle"):
# FORCE=1 ships whatever version the loop holds (a rehearsal in a scratch clone, never on main).
# Run from the repository root. LADDER names the binary (default: a fresh release build after
# step 1). Then write the README's levels table from calibration/humane-network/report.md (the
# test `one_set_of_targets_everywhere` holds it to the shipped ratings) and the reports' numbers.
set -euo pipefail
cd "$(dirname "$0")/../.."
# LOOP: another loop's folder (calibration/final, the last recalibration), OUT its outputs.
# NEAR: judge only games between sides rated within NEAR (`--judge-near`). HEADROOM_BUDGET:
# the headroom's budget (e.g. `nodes=1165926,option.Network=4`, the top level's own).
loop=${LOOP:-calibration/humane-network}
out=${OUT:-calibration/shipped}
state=$(sed -n 's/^State: \([^.]*\)\..*/\1/p' "$loop/report.md" | head -1)
case $state in
  interrupted | cycle | "")
    if [ "${FORCE:-0}" != 1 ]; then
      echo "the loop has not ended ($loop/report.md says state '${state:-none}'):" \
        "run $loop/run.sh until it does, or FORCE=1 in a scratch clone" >&2
      exit 1
    fi
    echo "FORCE=1: shipping the loop's state '$state' anyway" >&2 ;;
esac

# 1. Ship.
[ -f calibration/history/coefficients-v41.toml ] || {
  echo "calibration/history/coefficients-v41.toml is missing: the model-off half of step 3 needs it" >&2
  exit 1
}
version=$(sed -n 's/^version = \([0-9]*\)$/\1/p' "$loop/coefficients.toml")
shipped=$(sed -n 's/^version = \([0-9]*\)$/\1/p' calibration/coefficients.toml)
if [ "$shipped" != "$version" ]; then
  cp "$loop/coefficients.toml" calibration/coefficients.toml
  echo "shipped version $version (was $shipped)"
fi
if [ -z "${LADDER:-}" ]; then
  cargo build --release --locked
  LADDER=target/release/ladder
fi
mkdir -p "$out"
# A copy, so a rebuild while the steps run does not change the player under test.
cp "$LADDER" "$out/ladder-v$version"
ladder="$out/ladder-v$version"

# 2. Level 1: beatable, and still converts won endings.
"$ladder" arena --level 1 --anchor random,lichess-ai-1 --gauntlet --games-per-pairing 100 \
  --seed 15 --judge-depth 0 --coefficients calibration/coefficients.toml --concurrency 2 \
  --results "$out/level1.jsonl" --report "$out/level1.md" >/dev/null
grep -A 8 '^## ' "$out/level1.md" | grep -i 'lichess-ai-1\|random' | head -4 || true
if [ ! -s "$out/endgame.txt" ]; then
  cargo test --release --locked --test endgame -- --ignored --nocapture lowest_level_mates_many_positions \
    2>&1 | grep 'mated in' > "$out/endgame.txt.part"
  mv "$out/endgame.txt.part" "$out/endgame.txt"
fi
cat "$out/endgame.txt"

# 3. The human-likeness report: each ladder judged on its own loop's games as it plays them,
# model on (shipped) and off (version 41), both at once; then the clock at 60+0.
judge_as() { # NAME RESULTS COEFFICIENTS
  [ -s "$out/likeness-$1.md" ] && return 0
  "$ladder" arena --from-results "$2" --judge-games 50 --judge-as-coefficients \
    --history-dir calibration/history --coefficients "$3" --judge-depth "${DEPTH:-12}" \
    ${NEAR:+--judge-near "$NEAR"} --report "$out/likeness-$1.md.part" >/dev/null
  mv "$out/likeness-$1.md.part" "$out/likeness-$1.md"
}
judge_as on "$loop/games.jsonl" calibration/coefficients.toml &
on_pid=$!
judge_as off calibration/next/games.jsonl calibration/history/coefficients-v41.toml &
off_pid=$!
wait "$on_pid"
wait "$off_pid"
for model in on off; do
  echo "## the model $model: $out/likeness-$model.md"
  grep -A 20 '^## Human-likeness' "$out/likeness-$model.md" | grep '^| level' || true
done
# The levels paced as people at 3+0 (charged a person's think time, never waited for), so they
# come under Lichess's low-time alarm as people do.
LADDER="$ladder" OUT="$out/humane" MODELS=on ON=calibration/coefficients.toml CONCURRENCY=2 \
  TC="${CLOCK_TC:-180+0}" THINK=human scripts/humane_report.sh "${CLOCK_GAMES:-6}" 33

# 4. The headroom above the top level.
LADDER="$ladder" scripts/headroom.sh "$out/headroom" 20 "${HEADROOM_BUDGET:-nodes=500000}" \
  calibration/coefficients.toml
