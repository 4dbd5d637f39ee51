#!/usr/bin/env bash
# Two networks measured against the same external engine at fixed limits (a benchmark, not a
# test): self-play between networks of one family overstates what reaches other engines, and
# 200 games at 10+0.1 (about an hour of both cores) tell only differences of ±55 Elo. At fixed
# limits (ours nodes, Ethereal's depth) a game takes seconds, and both networks meet Ethereal on the same openings with the same
# colours (the same seed and schedule: game i of one match is game i of the other), so the
# difference is read pair by pair, where the openings' own balance cancels.
#
# usage: scripts/net_external_ab.sh OUT_DIR CANDIDATE BASELINE [GAMES] [NODES] [ETHEREAL_LIMIT]
#   CANDIDATE, BASELINE: a network file `ladder tune net` wrote (UCI option EvalFile), or the
#   number of a built-in network (UCI option Network); GAMES per network (default 800, each
#   opening with both colours); NODES a move for ours (default 25000); ETHEREAL_LIMIT Ethereal
#   12's limit a move, as an arena engine key (default depth=10: near 50% against network 5 at
#   25,000 nodes; Debian's Ethereal 12 answers `go nodes N` after depth 1 whatever N, so its
#   nodes cannot be fixed). Two games at once; about 2,300 games an hour on this VM's two
#   cores. LADDER: the binary (default target/release/ladder, copied beside the results with
#   the network files, so a rebuild during the run changes nothing). Resumable: a results file
#   already holding a match's games is not played again.
# Prints each network's score against Ethereal and the paired difference (candidate minus
# baseline) with its 95% interval, in score and in Elo near the baseline's score; OUT_DIR/ab.md
# keeps them.
set -euo pipefail
out=${1:?usage: scripts/net_external_ab.sh OUT_DIR CANDIDATE BASELINE [GAMES] [NODES] [ETHEREAL_LIMIT]}
candidate=${2:?CANDIDATE}
baseline=${3:?BASELINE}
games=${4:-800}
nodes=${5:-25000}
opponent_limit=${6:-depth=10}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ ! -e "$out/ladder-under-test" ]; then
  cp "${LADDER:-$root/target/release/ladder}" "$out/ladder-under-test"
fi
ladder="$out/ladder-under-test"

# Openings: fixed limits on both sides make a game a function of its opening, so every pair of
# games needs its own (the built-in set holds 38). One a game of net-gen2 (kept in git): its
# first position from move 8 to 10 that the search scored within ±40 cp, the side to move
# either; each played with both colours.
openings="$out/openings.epd"
if [ ! -e "$openings" ]; then
  need=$(( (games + 1) / 2 ))
  shards=("$root"/data/net-gen2/shard-1.txt.xz "$root"/data/net-gen2/shard-2.txt.xz
    "$root"/data/net-gen2/shard-3.txt.xz "$root"/data/net-gen2/shard-4.txt.xz)
  xz -dc "${shards[@]}" |
    awk -F';' -v need="$need" '
      /^#game/ { taken = 0; next }
      /^#/ { next }
      !taken && n < need {
        split($1, fen, " ")
        if (fen[6] >= 8 && fen[6] <= 10 && $2 >= -40 && $2 <= 40) { print $1; taken = 1; n++ }
      }' > "$openings.part"
  found=$(wc -l < "$openings.part")
  [ "$found" -ge "$need" ] || { echo "only $found openings for $games games" >&2; exit 2; }
  mv "$openings.part" "$openings"
fi

# The UCI option that plays network $2 (a file, copied beside the results, or a number).
evaluation() {
  case $2 in
    '' | *[!0-9]*)
      [ -e "$out/$1.nnue" ] || cp "$2" "$out/$1.nnue"
      echo "option.EvalFile=$out/$1.nnue" ;;
    *) echo "option.Network=$2" ;;
  esac
}

for side in candidate baseline; do
  network=$candidate
  [ $side = baseline ] && network=$baseline
  "$ladder" arena \
    --engine "name=ladder,cmd=$ladder,arg=uci,option.Hash=16,$(evaluation $side "$network"),nodes=$nodes" \
    --engine "name=ethereal,cmd=/usr/games/ethereal-chess,option.Threads=1,option.Hash=16,$opponent_limit" \
    --round-robin --games-per-pairing "$games" --openings "$openings" --concurrency 2 \
    --seed 51 --judge-depth 0 \
    --results "$out/$side.jsonl" --report "$out/$side.md" > "$out/$side.log" 2>&1
done

# Game i's score for ours in each match, then the paired statistics.
scores() {
  sed -n 's/.*"game_id":"arena-[0-9a-f]*-\([0-9]*\)","white":"\([a-z]*\)","black":"[a-z]*","result":"\([0-9/-]*\)".*/\1 \2 \3/p' "$1" |
    awk '{ s = ($3 == "1-0") ? 1 : ($3 == "0-1") ? 0 : 0.5; if ($2 != "ladder") s = 1 - s; print $1, s }' |
    sort -n
}
join <(scores "$out/candidate.jsonl") <(scores "$out/baseline.jsonl") |
  awk -v c="$candidate" -v b="$baseline" -v n="$nodes" -v e="$opponent_limit" '
    { k++; sc += $2; sb += $3; d = $2 - $3; sd += d; sdd += d * d }
    END {
      if (k < 2) { print "fewer than two paired games"; exit 1 }
      pc = sc / k; pb = sb / k; md = sd / k
      se = sqrt((sdd / k - md * md) / (k - 1))
      elo = elo_of(pb + md) - elo_of(pb)
      printf "| network | games | score vs Ethereal 12 (%s; ours %s nodes) |\n|---|---:|---:|\n", e, n
      printf "| candidate (%s) | %d | %.1f%% |\n| baseline (%s) | %d | %.1f%% |\n", c, k, 100 * pc, b, k, 100 * pb
      printf "\npaired difference, candidate - baseline: %+.1f%% [%+.1f%%, %+.1f%%] of score, about %+.0f Elo [%+.0f, %+.0f]\n", \
        100 * md, 100 * (md - 1.96 * se), 100 * (md + 1.96 * se), elo, \
        elo_of(pb + md - 1.96 * se) - elo_of(pb), elo_of(pb + md + 1.96 * se) - elo_of(pb)
    }
    function elo_of(p) { if (p <= 0.001) p = 0.001; if (p >= 0.999) p = 0.999; return -400 * log(1 / p - 1) / log(10) }
  ' | tee "$out/ab.md"
