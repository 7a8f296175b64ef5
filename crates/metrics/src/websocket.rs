//! [`WsStats`]: what a WebSocket run measures beyond round trips, mergeable by addition.
//!
//! A WebSocket run reuses the HTTP vocabulary where it means the same thing: a matched echo
//! or reply is a *response* whose *latency* is the round trip, the *connect* histogram holds
//! the whole handshake (TCP, TLS, upgrade), bytes read and written are every byte on the
//! wire, and failures are [`crate::ErrorKind`]s. What has no HTTP counterpart lives here.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::snapshot::{hist_base64, new_histogram};

/// Sessions, messages, pings and closes of a WebSocket run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WsStats {
    /// Upgrades answered 101 with the right `Sec-WebSocket-Accept`: sessions that opened.
    pub sessions_opened: u64,
    /// Sessions that loadmark ended itself (their duration or the run was over).
    pub sessions_completed: u64,
    /// Answers to the upgrade request by HTTP status: 101 passes the check, anything else
    /// fails it (and is a `handshake` error).
    pub upgrade_status: BTreeMap<u16, u64>,
    /// Data messages (text or binary) sent and received; control frames are not counted.
    pub messages_sent: u64,
    pub messages_received: u64,
    /// Payload bytes of those messages (frame headers are in the wire byte counts).
    pub payload_bytes_sent: u64,
    pub payload_bytes_received: u64,
    pub pings_sent: u64,
    pub pongs_received: u64,
    /// Close codes the server sent, by code (1005: a Close frame without a code).
    pub close_codes: BTreeMap<u16, u64>,
    /// Ping to matching pong, µs.
    #[serde(with = "hist_base64")]
    #[schemars(with = "String")]
    pub ping_rtt: Histogram<u64>,
    /// From the 101 to the end of the session, µs, for every session that ended.
    #[serde(with = "hist_base64")]
    #[schemars(with = "String")]
    pub session_duration: Histogram<u64>,
}

impl Default for WsStats {
    fn default() -> Self {
        WsStats {
            sessions_opened: 0,
            sessions_completed: 0,
            upgrade_status: BTreeMap::new(),
            messages_sent: 0,
            messages_received: 0,
            payload_bytes_sent: 0,
            payload_bytes_received: 0,
            pings_sent: 0,
            pongs_received: 0,
            close_codes: BTreeMap::new(),
            ping_rtt: new_histogram(),
            session_duration: new_histogram(),
        }
    }
}

impl WsStats {
    /// Upgrade answers that were 101.
    pub fn upgrades_passed(&self) -> u64 {
        self.upgrade_status.get(&101).copied().unwrap_or(0)
    }

    /// Upgrade answers that were not 101.
    pub fn upgrades_failed(&self) -> u64 {
        self.upgrade_status.values().sum::<u64>() - self.upgrades_passed()
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &WsStats) {
        self.sessions_opened += other.sessions_opened;
        self.sessions_completed += other.sessions_completed;
        for (code, n) in &other.upgrade_status {
            *self.upgrade_status.entry(*code).or_default() += n;
        }
        self.messages_sent += other.messages_sent;
        self.messages_received += other.messages_received;
        self.payload_bytes_sent += other.payload_bytes_sent;
        self.payload_bytes_received += other.payload_bytes_received;
        self.pings_sent += other.pings_sent;
        self.pongs_received += other.pongs_received;
        for (code, n) in &other.close_codes {
            *self.close_codes.entry(*code).or_default() += n;
        }
        self.ping_rtt
            .add(&other.ping_rtt)
            .expect("same histogram bounds");
        self.session_duration
            .add(&other.session_duration)
            .expect("same histogram bounds");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_exactly_and_round_trips_json() {
        let mut a = WsStats {
            sessions_opened: 2,
            messages_sent: 10,
            ..Default::default()
        };
        *a.upgrade_status.entry(101).or_default() += 2;
        *a.close_codes.entry(1001).or_default() += 1;
        a.ping_rtt.record(150).unwrap();
        let mut b = WsStats {
            messages_sent: 5,
            ..Default::default()
        };
        *b.upgrade_status.entry(200).or_default() += 1;
        *b.close_codes.entry(1001).or_default() += 2;
        b.ping_rtt.record(300).unwrap();
        a.merge(&b);
        assert_eq!(a.messages_sent, 15);
        assert_eq!((a.upgrades_passed(), a.upgrades_failed()), (2, 1));
        assert_eq!(a.close_codes[&1001], 3);
        assert_eq!(a.ping_rtt.len(), 2);
        let json = serde_json::to_string(&a).unwrap();
        let back: WsStats = serde_json::from_str(&json).unwrap();
        assert_eq!(back, a);
    }
}
