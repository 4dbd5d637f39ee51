//! The `ladder` command line: one binary for the daemon, the engine tools, the arena and
//! calibration.

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "ladder", version, about = "A ladder of leveled Lichess bots")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon: play for every account in accounts.toml (or against the local sandbox).
    Run(ladder::daemon::RunArgs),
    /// Validate the configuration, coefficients and tokens without playing.
    Check(ladder::check::CheckArgs),
    /// Turn a fresh Lichess account into a BOT account (irreversible).
    Upgrade(ladder::check::UpgradeArgs),
    /// Print the engine parameters of each level.
    Levels(ladder::levels::table::LevelsArgs),
    /// Speak UCI on stdin/stdout.
    Uci(ladder::uci::UciArgs),
    /// Search a fixed set of positions; print the node signature and speed.
    Bench(ladder::bench::BenchArgs),
    /// Count legal move paths to a depth.
    Perft(ladder::perft::PerftArgs),
    /// Play offline matches between levels and external UCI engines.
    Arena(ladder::arena::cli::ArenaArgs),
    /// Estimate each level's rating from the results and propose new coefficients.
    Calibrate(Box<ladder::calibration::cli::CalibrateArgs>),
    /// Tune the evaluation: make training data from self-play, fit the weights.
    #[command(subcommand)]
    Tune(ladder::tune::TuneCommand),
}

fn main() -> std::process::ExitCode {
    ladder::exit::quiet_on_broken_pipe();
    let cli = Cli::parse();
    // The UCI front end owns stdout and must stay quiet on stderr unless asked.
    let default_filter = match cli.command {
        Command::Uci(_) => "warn",
        _ => "info",
    };
    ladder::logging::init(default_filter);
    let result = match cli.command {
        Command::Run(args) => ladder::daemon::run(args),
        Command::Check(args) => ladder::check::run_check(args),
        Command::Upgrade(args) => ladder::check::run_upgrade(args),
        Command::Levels(args) => ladder::levels::table::run(args),
        Command::Uci(args) => ladder::uci::run(args),
        Command::Bench(args) => ladder::bench::run(args),
        Command::Perft(args) => ladder::perft::run(args),
        Command::Arena(args) => ladder::arena::cli::run(args),
        Command::Calibrate(args) => ladder::calibration::cli::run(*args),
        Command::Tune(command) => ladder::tune::run(command),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            // One headline with every cause once, then what to do; no backtrace.
            eprintln!("{}", ladder::exit::report(&e));
            std::process::ExitCode::FAILURE
        }
    }
}
