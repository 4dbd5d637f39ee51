//! Filling gaps in the results log from Lichess: the accounts' finished games from the export
//! API (through the lichess client), turned into [`GameRecord`]s by
//! [`crate::results::from_lichess`] (which also says how a fetched game's coefficients version
//! is inferred), and the accounts' current ratings from `GET /api/user/{name}`.
//! [`FetchProgress`] shows the download account by account: a bar with the ETA on a terminal,
//! a plain line per account under systemd or in a pipe.

use std::collections::{BTreeMap, HashSet};

use crate::lichess::{Client, ExportQuery, GameId, LichessError, Perf};
use crate::logging::Progress;
use crate::results::GameRecord;
use crate::results::from_lichess::{AccountRef, VersionTimeline, to_record};

/// What a fetch brought in.
#[derive(Clone, Debug, Default)]
pub struct Fetched {
    pub records: Vec<GameRecord>,
    /// Per account, games downloaded (before the merge dedupes them against the log).
    pub per_account: BTreeMap<String, usize>,
    /// Accounts whose fetch failed, with why (no secret in it).
    pub failures: Vec<(String, String)>,
}

/// Downloads each account's finished games of `perf` since its newest logged game.
pub async fn fetch_games(
    client: &Client,
    accounts: &[AccountRef],
    perf: Perf,
    timeline: &VersionTimeline,
) -> Fetched {
    let mut out = Fetched::default();
    for account in accounts {
        // Without a logged game no fetched game's version can be inferred: downloading the
        // account's whole history would only fill the "version not inferable" count.
        let Some(newest) = timeline.newest(&account.username) else {
            out.failures.push((
                account.username.clone(),
                "no logged games, so no version can be inferred; not fetched".to_string(),
            ));
            continue;
        };
        let query = ExportQuery {
            since: Some(newest + 1),
            perf_type: vec![perf],
            ..ExportQuery::default()
        };
        match client.export_games(&account.username, &query).await {
            Ok(games) => {
                out.per_account
                    .insert(account.username.clone(), games.len());
                out.records
                    .extend(games.iter().filter_map(|g| to_record(g, account, timeline)));
            }
            Err(e) => out.failures.push((account.username.clone(), e.to_string())),
        }
    }
    out
}

/// The progress of a fetch over the accounts (each account's export is one long download).
pub struct FetchProgress {
    bar: Progress,
    total: usize,
    done: usize,
}

impl FetchProgress {
    /// A fetch of `accounts` accounts (0: nothing to show).
    pub fn start(accounts: usize) -> FetchProgress {
        FetchProgress {
            bar: Progress::new(accounts as u64, "accounts"),
            total: accounts,
            done: 0,
        }
    }

    /// The account being downloaded now.
    pub fn fetching(&self, username: &str) {
        self.bar
            .set_message(format!("downloading {username}'s games"));
    }

    /// One account done: `got` is what [`fetch_games`] brought for it.
    pub fn done(&mut self, username: &str, got: &Fetched) {
        self.done += 1;
        self.bar.inc();
        if self.bar.is_bar() {
            return;
        }
        let what = match (got.per_account.get(username), got.failures.first()) {
            (Some(n), _) => format!("{n} games downloaded"),
            (None, Some((_, why))) => format!("not fetched: {why}"),
            (None, None) => "nothing to fetch".to_string(),
        };
        tracing::info!("fetch {}/{}: {username}: {what}", self.done, self.total);
    }

    pub fn finish(&self) {
        self.bar.finish();
    }
}

/// An account's current rating on a perf: (rating, RD, provisional).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LichessRating {
    pub rating: f64,
    pub rd: Option<f64>,
    pub provisional: bool,
    pub games: Option<u32>,
}

/// `GET /api/user/{name}` → the account's rating on `perf`, if it has one.
pub async fn lichess_rating(
    client: &Client,
    username: &str,
    perf: Perf,
) -> Result<Option<LichessRating>, LichessError> {
    let user = client.user(username).await?;
    Ok(user.perfs.get(perf.key()).and_then(|p| {
        Some(LichessRating {
            rating: f64::from(p.rating?),
            rd: p.rd.map(f64::from),
            provisional: p.prov,
            games: p.games,
        })
    }))
}

/// Appends the `fetched` records whose game id is not already in `records`; returns how many
/// were added and how many were duplicates.
pub fn merge(records: &mut Vec<GameRecord>, fetched: Vec<GameRecord>) -> (usize, usize) {
    let mut seen: HashSet<GameId> = records.iter().map(|r| r.game_id.clone()).collect();
    let (mut added, mut duplicates) = (0, 0);
    for r in fetched {
        if seen.insert(r.game_id.clone()) {
            records.push(r);
            added += 1;
        } else {
            duplicates += 1;
        }
    }
    (added, duplicates)
}
