#!/bin/sh
# Compares `ladder bench` with Debian's Ethereal bench, both by CPU (user) time, which a loaded
# machine disturbs far less than wall time. Runs each ROUNDS times alternately, keeps the best.
# Usage: scripts/nps_vs_ethereal.sh [rounds] (after `cargo build --release`).
set -eu
ROUNDS=${1:-3}
LADDER=${LADDER:-target/release/ladder}
ETHEREAL=${ETHEREAL:-/usr/games/ethereal-chess}
best_ours=""; best_theirs=""
i=0
while [ "$i" -lt "$ROUNDS" ]; do
  out=$( { /usr/bin/time -f "user %U" "$LADDER" bench; } 2>&1 )
  nodes=$(echo "$out" | sed -n 's/^bench: //p'); user=$(echo "$out" | sed -n 's/^user //p')
  ours=$(echo "$nodes $user" | awk '{printf "%.0f", $1 / $2}')
  echo "ladder   bench: $nodes nodes, user $user s, $ours nps (wall nps $(echo "$out" | sed -n 's/^nps *//p'))"
  out=$( { /usr/bin/time -f "user %U" "$ETHEREAL" bench; } 2>&1 )
  enodes=$(echo "$out" | sed -n 's/^Nodes *: //p'); euser=$(echo "$out" | sed -n 's/^user //p')
  theirs=$(echo "$enodes $euser" | awk '{printf "%.0f", $1 / $2}')
  echo "ethereal bench: $enodes nodes, user $euser s, $theirs nps (wall nps $(echo "$out" | sed -n 's/^NPS *: //p'))"
  best_ours=$(echo "$best_ours $ours" | awk '{print ($1 == "" || $2 > $1) ? $2 : $1}')
  best_theirs=$(echo "$best_theirs $theirs" | awk '{print ($1 == "" || $2 > $1) ? $2 : $1}')
  i=$((i + 1))
done
echo "best: ladder $best_ours nps, ethereal $best_theirs nps, ratio $(echo "$best_ours $best_theirs" | awk '{printf "%.2f", $1 / $2}')"
