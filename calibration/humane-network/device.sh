#!/usr/bin/env bash
# The recalibration played for a few minutes on a lent 16-core machine (the device tool of this
# workplace), from the state of this folder, with several levels' batches at once
# (--parallel-levels): the same games as run.sh would play, sooner. The machine is bare, so the
# binaries travel packed in $PACK (ladder as built here, /usr/games/stockfish and
# fairy-stockfish, each xz-compressed); what the loop wrote comes back as $OUT/recal.tgz and
# replaces calibration/humane-network/ and calibration/history/ here, after which run.sh goes on.
# LOOP names another loop's folder with its own run.sh (e.g. LOOP=calibration/final, the last
# recalibration); its folder comes back instead.
# Packing, here: echo /.dev/ >> .git/info/exclude; mkdir -p .dev; for f in target/release/ladder
# /usr/games/stockfish /usr/games/fairy-stockfish; do xz -6 -c "$f" > ".dev/$(basename "$f").xz"; done
# (about 26 MB); the call: `PLAY_SECONDS=420 KILL_AFTER=130 bash calibration/humane-network/device.sh`
# with carry [".dev"] and timeout_s 600 (2026-11-27: 213 games in a 432 s call).
# PLAY_SECONDS: when the loop is asked to stop (Ctrl-C: the games in progress finish, for at
# most KILL_AFTER seconds more).
set -uo pipefail
PACK=${PACK:-.dev}
PLAY_SECONDS=${PLAY_SECONDS:-430}
KILL_AFTER=${KILL_AFTER:-110}
BIN=$(mktemp -d)
mkdir -p /usr/games
for engine in stockfish fairy-stockfish; do
  if [ ! -x "/usr/games/$engine" ]; then
    xz -dc "$PACK/$engine.xz" > "/usr/games/$engine" && chmod +x "/usr/games/$engine"
  fi
done
xz -dc "$PACK/ladder.xz" > "$BIN/ladder" && chmod +x "$BIN/ladder"
echo "cores: $(nproc)"
"$BIN/ladder" bench 2>&1 | tail -1
# run.sh holds the loop's settings; here only the binary and how many games play at once differ.
LADDER="$BIN/ladder" CONCURRENCY="${CONCURRENCY:-6}" timeout -s INT -k "$KILL_AFTER" "$PLAY_SECONDS" \
  "${LOOP:-calibration/humane-network}/run.sh" --parallel-levels "${PARALLEL_LEVELS:-12}" \
  2> "$OUT/recal.log"
echo "loop exit: $?"
grep -v "INFO game" "$OUT/recal.log" | tail -40
tar czf "$OUT/recal.tgz" "${LOOP:-calibration/humane-network}" calibration/history
ls -la "$OUT"
