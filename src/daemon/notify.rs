//! systemd's service notifications for `ladder run` (sd_notify(3), `Type=notify`): READY=1 once
//! every account has made its first connection attempt, STATUS= with the status line,
//! STOPPING=1 when the shutdown begins, and WATCHDOG=1 at half of `WATCHDOG_USEC`.
//!
//! The supervisor sends all of them from its own loop (supervisor.rs): a supervisor that hangs
//! stops the watchdog pings, and systemd (`WatchdogSec=`) kills and restarts the daemon. An
//! account that never finishes its first check cannot hold readiness back for longer than
//! [`READY_LIMIT`] (systemd gives up on a start after `TimeoutStartSec=`). Without
//! `NOTIFY_SOCKET` (not started by systemd, or tests in process) nothing is sent.

use std::time::Duration;

use sd_notify::NotifyState;

/// Readiness is announced at the latest this long after start, whatever the accounts are
/// doing: they keep retrying in the background; systemd must not fail the start for it.
pub const READY_LIMIT: Duration = Duration::from_secs(60);

/// How often STATUS= is refreshed for `systemctl status` when no watchdog asks for more.
const STATUS_REFRESH: Duration = Duration::from_secs(30);

/// The daemon's line to systemd; a no-op without `NOTIFY_SOCKET`.
#[derive(Debug)]
pub struct Notifier {
    enabled: bool,
    /// systemd's watchdog timeout (`WATCHDOG_USEC`, for this process).
    watchdog: Option<Duration>,
    /// The last STATUS= sent, so an unchanged status is not sent again.
    last_status: String,
    /// A failed send is reported once, then only at debug level.
    warned: bool,
}

impl Notifier {
    /// Reads `NOTIFY_SOCKET` and `WATCHDOG_USEC` (with `WATCHDOG_PID`, when set, naming us).
    pub fn from_env() -> Notifier {
        let enabled = std::env::var_os("NOTIFY_SOCKET").is_some_and(|s| !s.is_empty());
        Notifier {
            enabled,
            watchdog: sd_notify::watchdog_enabled().filter(|_| enabled),
            last_status: String::new(),
            warned: false,
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// How often the supervisor's systemd tick runs: half the watchdog timeout, as
    /// sd_watchdog_enabled(3) advises, or a STATUS= refresh now and then; `None` without
    /// `NOTIFY_SOCKET`.
    pub fn tick_every(&self) -> Option<Duration> {
        if !self.enabled {
            return None;
        }
        Some(match self.watchdog {
            Some(timeout) => (timeout / 2)
                .min(STATUS_REFRESH)
                .max(Duration::from_millis(10)),
            None => STATUS_REFRESH,
        })
    }

    /// The supervisor's periodic tick: WATCHDOG=1 (when systemd watches us) and the status
    /// line when it changed.
    pub fn tick(&mut self, status: &str) {
        let status = one_line(status);
        let mut states = Vec::with_capacity(2);
        if self.watchdog.is_some() {
            states.push(NotifyState::Watchdog);
        }
        if status != self.last_status {
            states.push(NotifyState::Status(&status));
        }
        if !states.is_empty() {
            self.send(&states);
        }
        self.last_status = status;
    }

    /// READY=1 with the status line.
    pub fn ready(&mut self, status: &str) {
        let status = one_line(status);
        self.send(&[NotifyState::Ready, NotifyState::Status(&status)]);
        self.last_status = status;
    }

    /// STATUS= alone (draining, reload).
    pub fn status(&mut self, status: &str) {
        let status = one_line(status);
        if status != self.last_status {
            self.send(&[NotifyState::Status(&status)]);
            self.last_status = status;
        }
    }

    /// STOPPING=1: the shutdown has begun (running games may still finish).
    pub fn stopping(&mut self, status: &str) {
        let status = one_line(status);
        self.send(&[NotifyState::Stopping, NotifyState::Status(&status)]);
        self.last_status = status;
    }

    fn send(&mut self, states: &[NotifyState]) {
        if !self.enabled {
            return;
        }
        if let Err(e) = sd_notify::notify(states) {
            if self.warned {
                tracing::debug!("cannot notify systemd: {e}");
            } else {
                self.warned = true;
                tracing::warn!(
                    "cannot notify systemd through NOTIFY_SOCKET: {e}; the daemon plays on"
                );
            }
        }
    }
}

/// A notification is `KEY=value` lines: a value must not contain a newline.
fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notifier(enabled: bool, watchdog: Option<Duration>) -> Notifier {
        Notifier {
            enabled,
            watchdog,
            last_status: String::new(),
            warned: false,
        }
    }

    #[test]
    fn pings_at_half_the_watchdog_timeout_and_only_with_a_socket() {
        let every = |n: &Notifier| n.tick_every();
        assert_eq!(
            every(&notifier(true, Some(Duration::from_secs(20)))),
            Some(Duration::from_secs(10))
        );
        // A long timeout still refreshes the status now and then.
        assert_eq!(
            every(&notifier(true, Some(Duration::from_secs(600)))),
            Some(STATUS_REFRESH)
        );
        assert_eq!(every(&notifier(true, None)), Some(STATUS_REFRESH));
        assert_eq!(every(&notifier(false, None)), None);
    }

    #[test]
    fn status_values_stay_on_one_line() {
        assert_eq!(one_line("a\nb\r\nc"), "a b  c");
    }
}
