//! What the QUIC stack says about a run's HTTP/3 connections (issue 37): handshake times,
//! packets sent and lost, congestion, datagrams. The engine adds each connection's figures
//! when it closes ([`QuicTally::closed`]), so a run's totals cover every connection it
//! opened, whichever way it ended.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One closed connection's figures, as the QUIC stack counted them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct QuicConnection {
    /// From the first Initial packet to the handshake's end (1-RTT).
    pub handshake: Duration,
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

/// Connections' figures added up as they close; mergeable across workers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuicTally {
    connections: u64,
    handshake_total: Duration,
    handshake_min: Option<Duration>,
    handshake_max: Duration,
    rtt_total: Duration,
    cwnd_min: Option<u64>,
    cwnd_max: u64,
    sum: QuicConnection,
}

impl QuicTally {
    pub fn closed(&mut self, c: &QuicConnection) {
        self.connections += 1;
        self.handshake_total += c.handshake;
        self.handshake_min = Some(
            self.handshake_min
                .map_or(c.handshake, |m| m.min(c.handshake)),
        );
        self.handshake_max = self.handshake_max.max(c.handshake);
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
        Some(QuicFigures {
            connections: n,
            handshake_ms: HandshakeMs {
                min: ms(self.handshake_min.unwrap_or_default()),
                mean: ms(self.handshake_total) / n as f64,
                max: ms(self.handshake_max),
            },
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
        self.handshake_total += other.handshake_total;
        self.handshake_min = match (self.handshake_min, other.handshake_min) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.handshake_max = self.handshake_max.max(other.handshake_max);
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
    /// Connections whose handshake completed.
    pub connections: u64,
    /// QUIC handshake (1-RTT: TLS 1.3 inside QUIC), from the first packet sent to the
    /// handshake's end.
    pub handshake_ms: HandshakeMs,
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
    }
}
