//! The daemon (`ladder run`): account actors, game actors, the search pool, shutdown and reload.
//!
//! - [`supervisor`]: start-up checks, the daemon's life (drain, stop, reload),
//! - [`daemon_lock`]: one daemon per results log and tokens (an exclusive lock naming its pid),
//! - [`account`]: one actor per account (event stream, challenges, limits, game actors),
//! - [`health`]: whether an account can play, and how soon to check again when it cannot,
//! - [`slots`]: the global cap on games (`daemon.max_games`),
//! - [`bot_limit`]: Lichess's daily limit on games between bots,
//! - [`game`]: one actor per game (game stream, searches, moves, chat, the record; what a level
//!   says and how it conducts itself are the player's: `player::chat`, `player::conduct`),
//! - [`tracker`]: the game actor's decisions as a pure state machine,
//! - [`policy`]: accept or decline a challenge,
//! - [`pool`]: the shared search threads (most urgent game first; each search stopped by the
//!   player's `Deadline`: the move's time limit, the game's cancel flag),
//! - [`reader`]: stream reading on its own task (idle timeouts survive `select!`),
//! - [`results_writer`]: the thread that owns the results log, the PGN log and the open games file,
//! - [`pgn_log`]: the PGN of every game beside the results,
//! - [`open_games`] and [`settle`]: the games open on Lichess, remembered across restarts and settled,
//! - [`shutdown`]: run states, OS signals, and how actors wait with an eye on shutdown,
//! - [`status`]: the periodic status line,
//! - [`notify`]: systemd's readiness, status, stopping and watchdog notifications,
//! - [`scoreboard`]: this run's games per level, from the results log (progress, exit summary),
//! - [`sandbox_view`]: what a sandbox run tells the person watching it,
//! - [`run`]: `ladder run` and `--sandbox`.

pub mod account;
pub mod bot_limit;
pub mod daemon_lock;
pub mod game;
pub mod health;
pub mod notify;
pub mod open_games;
pub mod pgn_log;
pub mod policy;
pub mod pool;
pub mod reader;
pub mod results_writer;
pub mod run;
pub mod sandbox_view;
pub mod scoreboard;
pub mod settle;
pub mod shutdown;
pub mod slots;
pub mod status;
pub mod supervisor;
pub mod tracker;
pub mod waiting;

pub use run::{RunArgs, run};
pub use supervisor::{DaemonHandle, DaemonSpec, Summary, start};
