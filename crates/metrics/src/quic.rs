//! What the QUIC stack says about a run's HTTP/3 connections (issue 37): handshake times,
//! packets sent and lost, congestion, datagrams. The engine adds each connection's figures
//! when it closes ([`QuicTally::closed`]), so a run's totals cover every connection it
//! opened, whichever way it ended.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One closed connection's figures, as the QUIC stack counted them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct QuicConnection {
    /// From the first Initial packet to the handshake's end.
    pub handshake: Duration,
    /// `--http3-0rtt`: None for a full (1-RTT) handshake; for a resumed session with early
    /// data, what the server did with the 0-RTT data.
    pub zero_rtt: Option<EarlyData>,
    /// Requests answered that were sent in 0-RTT (before the handshake ended).
    pub requests_early: u64,
    /// Requests sent in 0-RTT that the server rejected with it (not processed): sent again
    /// on a new connection.
    pub requests_rejected: u64,
    /// Requests never sent because the server was going away (GOAWAY): moved to a new
    /// connection, not retries (the server never saw them).
    pub requests_moved: u64,
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub bytes_lost: u64,
    pub congestion_events: u64,
    /// The congestion window when it closed, bytes.
    pub cwnd: u64,
    /// The smoothed round trip when it closed.
    pub rtt: Duration,
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    pub udp_bytes_sent: u64,
    pub udp_bytes_received: u64,
}

/// What a server did with a connection's 0-RTT data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EarlyData {
    Accepted,
    /// The server did a full handshake instead (it did not know the ticket, or refuses
    /// early data): what was sent early was not processed.
    Rejected,
    /// The connection ended before its handshake did.
    Unknown,
}

/// Connections' figures added up as they close; mergeable across workers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuicTally {
    connections: u64,
    /// Full (1-RTT) handshakes, and 0-RTT ones (accepted or rejected), apart.
    full: Handshakes,
    early: Handshakes,
    zero_rtt_accepted: u64,
    zero_rtt_rejected: u64,
    requests_early: u64,
    requests_rejected: u64,
    requests_moved: u64,
    rtt_total: Duration,
    cwnd_min: Option<u64>,
    cwnd_max: u64,
    sum: QuicConnection,
}

/// Handshake times of some connections: count, sum, extremes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Handshakes {
    count: u64,
    total: Duration,
    min: Option<Duration>,
    max: Duration,
}

impl Handshakes {
    fn add(&mut self, d: Duration) {
        self.count += 1;
        self.total += d;
        self.min = Some(self.min.map_or(d, |m| m.min(d)));
        self.max = self.max.max(d);
    }

    fn merge(&mut self, o: &Handshakes) {
        self.count += o.count;
        self.total += o.total;
        self.min = match (self.min, o.min) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.max = self.max.max(o.max);
    }

    fn ms(&self) -> Option<HandshakeMs> {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        (self.count > 0).then(|| HandshakeMs {
            min: ms(self.min.unwrap_or_default()),
            mean: ms(self.total) / self.count as f64,
            max: ms(self.max),
        })
    }
}

impl QuicTally {
    pub fn closed(&mut self, c: &QuicConnection) {
        self.connections += 1;
        match c.zero_rtt {
            None => self.full.add(c.handshake),
            Some(early) => {
                self.early.add(c.handshake);
                match early {
                    EarlyData::Accepted => self.zero_rtt_accepted += 1,
                    EarlyData::Rejected => self.zero_rtt_rejected += 1,
                    EarlyData::Unknown => {}
                }
            }
        }
        self.requests_early += c.requests_early;
        self.requests_rejected += c.requests_rejected;
        self.requests_moved += c.requests_moved;
        self.rtt_total += c.rtt;
        self.cwnd_min = Some(self.cwnd_min.map_or(c.cwnd, |m| m.min(c.cwnd)));
        self.cwnd_max = self.cwnd_max.max(c.cwnd);
        let s = &mut self.sum;
        s.packets_sent += c.packets_sent;
        s.packets_lost += c.packets_lost;
        s.bytes_lost += c.bytes_lost;
        s.congestion_events += c.congestion_events;
        s.datagrams_sent += c.datagrams_sent;
        s.datagrams_received += c.datagrams_received;
        s.udp_bytes_sent += c.udp_bytes_sent;
        s.udp_bytes_received += c.udp_bytes_received;
    }

    /// The run's figures; None when no connection completed its handshake.
    pub fn figures(&self) -> Option<QuicFigures> {
        let n = self.connections;
        if n == 0 {
            return None;
        }
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let s = &self.sum;
        let per = |bytes: u64, datagrams: u64| match datagrams {
            0 => 0.0,
            d => bytes as f64 / d as f64,
        };
        let zero_rtt = (self.early.count > 0).then(|| ZeroRttFigures {
            connections: self.early.count,
            accepted: self.zero_rtt_accepted,
            rejected: self.zero_rtt_rejected,
            handshake_ms: self.early.ms(),
            requests_early: self.requests_early,
            requests_rejected: self.requests_rejected,
        });
        Some(QuicFigures {
            connections: n,
            handshake_ms: self.full.ms().unwrap_or(HandshakeMs {
                min: 0.0,
                mean: 0.0,
                max: 0.0,
            }),
            zero_rtt,
            requests_moved_after_goaway: self.requests_moved,
            packets_sent: s.packets_sent,
            packets_lost: s.packets_lost,
            bytes_lost: s.bytes_lost,
            loss_ratio: match s.packets_sent {
                0 => 0.0,
                sent => s.packets_lost as f64 / sent as f64,
            },
            congestion_events: s.congestion_events,
            cwnd_min_bytes: self.cwnd_min.unwrap_or_default(),
            cwnd_max_bytes: self.cwnd_max,
            rtt_mean_ms: ms(self.rtt_total) / n as f64,
            datagrams_sent: s.datagrams_sent,
            datagrams_received: s.datagrams_received,
            datagram_mean_bytes_sent: per(s.udp_bytes_sent, s.datagrams_sent),
            datagram_mean_bytes_received: per(s.udp_bytes_received, s.datagrams_received),
        })
    }

    pub fn merge(&mut self, other: &QuicTally) {
        self.connections += other.connections;
        self.full.merge(&other.full);
        self.early.merge(&other.early);
        self.zero_rtt_accepted += other.zero_rtt_accepted;
        self.zero_rtt_rejected += other.zero_rtt_rejected;
        self.requests_early += other.requests_early;
        self.requests_rejected += other.requests_rejected;
        self.requests_moved += other.requests_moved;
        self.rtt_total += other.rtt_total;
        self.cwnd_min = match (self.cwnd_min, other.cwnd_min) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.cwnd_max = self.cwnd_max.max(other.cwnd_max);
        let mut sum = other.sum;
        sum.handshake = Duration::ZERO;
        sum.rtt = Duration::ZERO;
        sum.cwnd = 0;
        let s = &mut self.sum;
        s.packets_sent += sum.packets_sent;
        s.packets_lost += sum.packets_lost;
        s.bytes_lost += sum.bytes_lost;
        s.congestion_events += sum.congestion_events;
        s.datagrams_sent += sum.datagrams_sent;
        s.datagrams_received += sum.datagrams_received;
        s.udp_bytes_sent += sum.udp_bytes_sent;
        s.udp_bytes_received += sum.udp_bytes_received;
    }
}

/// Handshake times over a run's connections, milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HandshakeMs {
    pub min: f64,
    pub mean: f64,
    pub max: f64,
}

/// A run's QUIC figures over every HTTP/3 connection it opened (each counted when it
/// closed), as the report carries them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QuicFigures {
    /// Connections whose handshake completed (or, with 0-RTT, began carrying requests).
    pub connections: u64,
    /// Full QUIC handshakes (1-RTT: TLS 1.3 inside QUIC), from the first packet sent to the
    /// handshake's end. 0-RTT connections are in `zero_rtt`, apart.
    pub handshake_ms: HandshakeMs,
    /// `--http3-0rtt`: the connections that resumed a session and sent requests before
    /// their handshake ended (replayable, so counted apart). Absent without 0-RTT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zero_rtt: Option<ZeroRttFigures>,
    /// Requests never sent because their connection's server was going away (GOAWAY):
    /// moved to a new connection, so not retries (`retries` are requests the server saw).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub requests_moved_after_goaway: u64,
    /// Packets the client sent, and those its loss detection declared lost (QUIC resends
    /// lost data in new packets, so this is also what was retransmitted).
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub bytes_lost: u64,
    /// packets_lost / packets_sent.
    pub loss_ratio: f64,
    /// Times the congestion controller cut its window.
    pub congestion_events: u64,
    /// The congestion window at each connection's close: the smallest and the largest.
    pub cwnd_min_bytes: u64,
    pub cwnd_max_bytes: u64,
    /// The smoothed round trip at close, averaged over connections.
    pub rtt_mean_ms: f64,
    /// UDP datagrams both ways and their mean size.
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    pub datagram_mean_bytes_sent: f64,
    pub datagram_mean_bytes_received: f64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// 0-RTT resumption (`--http3-0rtt`, issue 37): connections that resumed a TLS session and
/// sent their first requests with the handshake's first flight. Early data can be replayed
/// by an attacker, so only safe methods (GET, HEAD, OPTIONS) go early; other requests wait
/// for the handshake to end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ZeroRttFigures {
    /// Connections that tried 0-RTT (a ticket from an earlier connection was at hand).
    pub connections: u64,
    /// Of them, those whose early data the server accepted, and rejected.
    pub accepted: u64,
    pub rejected: u64,
    /// From the first packet to the handshake's end (the early requests did not wait for
    /// it); absent when none ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handshake_ms: Option<HandshakeMs>,
    /// Requests answered that were sent in 0-RTT, before the handshake ended.
    pub requests_early: u64,
    /// Requests sent in 0-RTT that the server rejected with it (never processed): sent again
    /// on a new connection.
    pub requests_rejected: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(handshake_ms: u64, sent: u64, lost: u64, cwnd: u64) -> QuicConnection {
        QuicConnection {
            handshake: Duration::from_millis(handshake_ms),
            packets_sent: sent,
            packets_lost: lost,
            cwnd,
            datagrams_sent: sent,
            udp_bytes_sent: sent * 1200,
            ..Default::default()
        }
    }

    #[test]
    fn figures_add_every_connection_and_merge_across_workers_exactly() {
        let mut a = QuicTally::default();
        assert_eq!(a.figures(), None);
        a.closed(&conn(2, 100, 1, 12_000));
        a.closed(&conn(4, 300, 3, 40_000));
        let mut b = QuicTally::default();
        b.closed(&conn(6, 600, 0, 20_000));
        a.merge(&b);
        let f = a.figures().unwrap();
        assert_eq!(f.connections, 3);
        assert_eq!(f.packets_sent, 1000);
        assert_eq!(f.packets_lost, 4);
        assert!((f.loss_ratio - 0.004).abs() < 1e-12);
        assert!((f.handshake_ms.mean - 4.0).abs() < 1e-9);
        assert_eq!((f.handshake_ms.min, f.handshake_ms.max), (2.0, 6.0));
        assert_eq!((f.cwnd_min_bytes, f.cwnd_max_bytes), (12_000, 40_000));
        assert_eq!(f.datagram_mean_bytes_sent, 1200.0);
        assert_eq!(f.zero_rtt, None);
    }

    #[test]
    fn zero_rtt_connections_are_counted_apart_from_full_handshakes() {
        let mut a = QuicTally::default();
        a.closed(&conn(10, 10, 0, 1));
        a.closed(&QuicConnection {
            zero_rtt: Some(EarlyData::Accepted),
            requests_early: 3,
            requests_moved: 1,
            ..conn(2, 10, 0, 1)
        });
        let mut b = QuicTally::default();
        b.closed(&QuicConnection {
            zero_rtt: Some(EarlyData::Rejected),
            requests_rejected: 2,
            ..conn(4, 10, 0, 1)
        });
        a.merge(&b);
        let f = a.figures().unwrap();
        assert_eq!(f.connections, 3);
        assert_eq!((f.handshake_ms.min, f.handshake_ms.max), (10.0, 10.0));
        let z = f.zero_rtt.unwrap();
        assert_eq!((z.connections, z.accepted, z.rejected), (2, 1, 1));
        assert_eq!((z.requests_early, z.requests_rejected), (3, 2));
        assert_eq!(z.handshake_ms.unwrap().mean, 3.0);
        assert_eq!(f.requests_moved_after_goaway, 1);
    }
}
