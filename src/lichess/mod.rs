//! The Lichess HTTP client: wire types, NDJSON streams with idle timeouts, rate limits.
