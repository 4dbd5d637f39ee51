//! What the sandbox reports about its games: the control API's `GameSummary` and the export
//! API's `GameJson` (SAN moves, clocks in seconds).

use tokio::time::Instant;

use super::game::Seat;
use super::world::World;
use crate::lichess::types::{
    ChatLine, Color, ExportClock, GameJson, GamePlayer, GamePlayers, GameStatus, LightUser,
};
use crate::lichess::{Clock, GameId, Speed};
use shakmaty::san::SanPlus;

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
            clock: g.clock,
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
            moves: Some(san_moves(&g.board)),
            clock: g.clock.map(|c| ExportClock {
                initial: c.initial_ms / 1000,
                increment: c.increment_ms / 1000,
                total_time: c.estimated_seconds(),
            }),
            days_per_turn: g.days_per_turn,
        })
    }
}

/// The moves of a game in SAN, as the export API writes them.
fn san_moves(game: &crate::engine::Game) -> String {
    let mut position = game.initial_position().clone();
    let mut out = Vec::with_capacity(game.moves().len());
    for &m in game.moves() {
        out.push(SanPlus::from_move_and_play_unchecked(&mut position, m).to_string());
    }
    out.join(" ")
}
