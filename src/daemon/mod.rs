//! The daemon (`ladder run`): account actors, game actors, the search pool, shutdown and reload.
//!
//! - [`supervisor`]: start-up checks, the daemon's life (drain, stop, reload),
//! - [`account`]: one actor per account (event stream, challenges, limits, game actors),
//! - [`health`]: whether an account can play, and how soon to check again when it cannot,
//! - [`slots`]: the global cap on games (`daemon.max_games`),
//! - [`bot_limit`]: Lichess's daily limit on games between bots,
//! - [`game`]: one actor per game (game stream, searches, moves, chat, the record),
//! - [`tracker`]: the game actor's decisions as a pure state machine,
//! - [`policy`]: accept or decline a challenge,
//! - [`pool`]: the shared search threads (most urgent game first),
//! - [`clock`]: time management,
//! - [`reader`]: stream reading on its own task (idle timeouts survive `select!`),
//! - [`results_writer`]: the thread that owns the results log,
//! - [`shutdown`]: run states and OS signals,
//! - [`run`]: `ladder run` and `--sandbox`.

pub mod account;
pub mod bot_limit;
pub mod game;
pub mod health;
pub mod policy;
pub mod pool;
pub mod reader;
pub mod results_writer;
pub mod run;
pub mod shutdown;
pub mod slots;
pub mod supervisor;
pub mod tracker;

pub use run::{RunArgs, run};
pub use supervisor::{DaemonHandle, DaemonSpec, Summary, start};
