//! A local Lichess emulator (the bot API subset) with simulated challengers and fault injection.
