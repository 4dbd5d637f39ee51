//! What the sandbox reports about its games: the control API's `GameSummary` and the export
//! API's `GameJson` (SAN moves, clocks in seconds) or PGN — as Lichess does, PGN unless JSON
//! is asked for, and an ongoing game's moves lag [`ONGOING_LAG`] plies behind.

use tokio::time::Instant;

use super::game::Seat;
use super::world::World;
use crate::lichess::types::{
    ChatLine, Color, ExportClock, GameJson, GamePlayer, GamePlayers, GameStatus, LightUser,
};
use crate::lichess::{Clock, GameId, Speed};
use shakmaty::Position;
use shakmaty::san::SanPlus;

/// How many of an ongoing game's last plies the export leaves out (Lichess: "ongoing games
/// lag 3 moves", so the export cannot help anyone cheat).
pub const ONGOING_LAG: usize = 3;

/// A finished or running game as the control API reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct GameSummary {
    pub id: GameId,
    pub white: String,
    pub black: String,
    pub rated: bool,
    pub variant: String,
    pub speed: Speed,
    pub clock: Option<Clock>,
    pub moves: Vec<String>,
    pub status: GameStatus,
    pub winner: Option<Color>,
    pub wtime: u64,
    pub btime: u64,
    pub chat: Vec<ChatLine>,
}

impl GameSummary {
    pub fn is_over(&self) -> bool {
        !self.status.is_ongoing()
    }

    /// The color `username` played here, if any.
    pub fn color_of(&self, username: &str) -> Option<Color> {
        if self.white.eq_ignore_ascii_case(username) {
            Some(Color::White)
        } else if self.black.eq_ignore_ascii_case(username) {
            Some(Color::Black)
        } else {
            None
        }
    }
}

impl World {
    pub fn summary(&self, game_id: &GameId) -> Option<GameSummary> {
        let entry = self.games.get(game_id)?;
        let g = &entry.game;
        let now = Instant::now();
        Some(GameSummary {
            id: g.id.clone(),
            white: g.white.name.clone(),
            black: g.black.name.clone(),
            rated: g.rated,
            variant: g.variant.clone(),
            speed: g.speed,
            clock: g.clock(),
            moves: g.moves.clone(),
            status: g.status,
            winner: g.winner,
            wtime: g.remaining(Color::White, now),
            btime: g.remaining(Color::Black, now),
            chat: entry.chat.clone(),
        })
    }

    /// `GameJson` of a game (finished or not).
    pub fn game_json(&self, game_id: &GameId) -> Option<GameJson> {
        let entry = self.games.get(game_id)?;
        let g = &entry.game;
        let player = |s: &Seat| GamePlayer {
            user: Some(LightUser {
                id: s.id.clone(),
                name: s.name.clone(),
                title: s.title.clone(),
            }),
            rating: Some(s.rating),
            rating_diff: None,
            provisional: s.provisional,
            ai_level: None,
        };
        Some(GameJson {
            id: g.id.clone(),
            rated: g.rated,
            variant: g.variant.clone(),
            speed: g.speed,
            perf: g.perf,
            created_at: g.created_at_ms,
            last_move_at: g.last_move_at_ms,
            status: g.status,
            source: Some("friend".to_string()),
            players: GamePlayers {
                white: player(&g.white),
                black: player(&g.black),
            },
            initial_fen: (g.initial_fen != "startpos").then(|| g.initial_fen.clone()),
            winner: g.winner,
            moves: Some(san_moves(&g.board, lag(g))),
            clock: g.clock().map(|c| ExportClock {
                initial: c.initial_ms / 1000,
                increment: c.increment_ms / 1000,
                total_time: c.estimated_seconds(),
            }),
            days_per_turn: g.time_control.days_per_turn(),
        })
    }
}

impl World {
    /// The PGN export of a game (finished or not), what `/game/export/{id}` answers unless
    /// JSON is asked for.
    pub fn game_pgn(&self, game_id: &GameId) -> Option<String> {
        let g = &self.games.get(game_id)?.game;
        let result = match (g.is_over(), g.winner) {
            (false, _) => "*",
            (true, Some(Color::White)) => "1-0",
            (true, Some(Color::Black)) => "0-1",
            (true, None) => "1/2-1/2",
        };
        let time_control = g.clock().map_or_else(|| "-".to_string(), |c| c.to_string());
        let mut pgn = format!(
            "[Event \"{} {} game\"]\n[Site \"{}/{}\"]\n[White \"{}\"]\n[Black \"{}\"]\n\
             [Result \"{result}\"]\n[Variant \"{}\"]\n[TimeControl \"{time_control}\"]\n\
             [Termination \"{}\"]\n",
            if g.rated { "Rated" } else { "Casual" },
            g.speed.name(),
            self.base_url,
            g.id,
            g.white.name,
            g.black.name,
            g.variant,
            g.status.as_str(),
        );
        if g.initial_fen != "startpos" {
            pgn.push_str(&format!("[FEN \"{}\"]\n[SetUp \"1\"]\n", g.initial_fen));
        }
        pgn.push('\n');
        let white_first = g.board.initial_position().turn().is_white();
        for (i, san) in san_moves(&g.board, lag(g)).split_whitespace().enumerate() {
            let ply = i + usize::from(!white_first);
            if ply % 2 == 0 {
                pgn.push_str(&format!("{}. ", ply / 2 + 1));
            } else if i == 0 {
                pgn.push_str(&format!("{}... ", ply / 2 + 1));
            }
            pgn.push_str(san);
            pgn.push(' ');
        }
        pgn.push_str(result);
        pgn.push_str("\n\n");
        Some(pgn)
    }
}

/// Plies the export leaves out of this game.
fn lag(g: &super::game::SandboxGame) -> usize {
    if g.is_over() { 0 } else { ONGOING_LAG }
}

/// The moves of a game in SAN, as the export API writes them, without the last `lag` plies.
fn san_moves(game: &crate::engine::Game, lag: usize) -> String {
    let mut position = game.initial_position().clone();
    let shown = game.moves().len().saturating_sub(lag);
    let mut out = Vec::with_capacity(shown);
    for &m in &game.moves()[..shown] {
        out.push(SanPlus::from_move_and_play_unchecked(&mut position, m).to_string());
    }
    out.join(" ")
}
