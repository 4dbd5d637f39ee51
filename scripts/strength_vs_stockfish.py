#!/usr/bin/env python3
"""Quick strength sanity check (a benchmark, not a test): ladder at full strength with a fixed
node budget per move against Stockfish with UCI_LimitStrength at a given UCI_Elo, alternating
colours over a few fixed openings. Needs python-chess and a `ladder` binary with `ladder uci`.

usage: scripts/strength_vs_stockfish.py LADDER_BIN NODES ELO GAMES
"""
import sys

import chess
import chess.engine

OPENINGS = [
    "e2e4 e7e5 g1f3 b8c6",
    "d2d4 d7d5 c2c4 e7e6",
    "e2e4 c7c5 g1f3 d7d6",
    "d2d4 g8f6 c2c4 g7g6",
    "c2c4 e7e5 b1c3 g8f6",
    "e2e4 c7c6 d2d4 d7d5",
    "g1f3 d7d5 g2g3 g8f6",
    "e2e4 e7e6 d2d4 d7d5",
]


def main():
    ladder_bin, nodes, elo, games = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    ladder = chess.engine.SimpleEngine.popen_uci([ladder_bin, "uci"])
    ladder.configure({"Hash": 16})
    sf = chess.engine.SimpleEngine.popen_uci("/usr/games/stockfish")
    sf.configure({"UCI_LimitStrength": True, "UCI_Elo": elo, "Threads": 1, "Hash": 16})
    score = 0.0
    for g in range(games):
        board = chess.Board()
        for uci in OPENINGS[(g // 2) % len(OPENINGS)].split():
            board.push_uci(uci)
        ladder_white = g % 2 == 0
        while not board.is_game_over(claim_draw=True) and board.ply() < 300:
            if (board.turn == chess.WHITE) == ladder_white:
                move = ladder.play(board, chess.engine.Limit(nodes=nodes)).move
            else:
                move = sf.play(board, chess.engine.Limit(time=0.05)).move
            board.push(move)
        result = board.result(claim_draw=True)
        if result == "1/2-1/2" or result == "*":
            score += 0.5
        elif (result == "1-0") == ladder_white:
            score += 1
        print(f"game {g + 1}: ladder {'white' if ladder_white else 'black'} {result}", flush=True)
    print(f"ladder ({nodes} nodes/move) vs stockfish UCI_Elo {elo}: {score}/{games}")
    ladder.quit()
    sf.quit()


if __name__ == "__main__":
    main()
