//! [`Settings`]: the load settings a user can state, by flag or in a plan file, and the one
//! normalization from them to a validated [`Plan`].

use std::time::Duration;

use crate::plan::{
    Http2, Http3, Load, Plan, Protocol, RequestSpec, Stop, Timeouts, TlsPolicy, DEFAULT_TIMEOUT,
};
use crate::schedule::Profile;
use crate::text::PlanError;
use crate::websocket::{WsMode, WsSpec};

/// Run length when neither a duration nor a count is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// Closed-loop connections when none are given.
pub const DEFAULT_CONNECTIONS: usize = 50;
/// Open-loop connection cap when none is given.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1000;

/// What a user may say about load; `None` means "the default".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    pub connections: Option<usize>,
    pub rate: Option<f64>,
    pub stages: Option<String>,
    pub max_connections: Option<usize>,
    pub threads: Option<usize>,
    pub duration: Option<Duration>,
    pub requests: Option<u64>,
    pub keep_alive: Option<bool>,
    pub timeout: Option<Duration>,
    pub connect_timeout: Option<Duration>,
    pub warmup: Option<Duration>,
    pub insecure: bool,
    /// `--http2`: HTTP/2 (ALPN over TLS, prior knowledge over http://).
    pub http2: bool,
    /// `--streams N`: concurrent streams per HTTP/2 connection (default 1, as h2load's -m).
    pub streams: Option<usize>,
    /// `--http2-fallback`: HTTP/1.1 when a TLS server does not offer h2 (needs `--http2`).
    pub http2_fallback: bool,
    /// `--http3`: HTTP/3 over QUIC (https:// only).
    pub http3: bool,
    /// `--http3-0rtt`: 0-RTT resumption on HTTP/3 connections after the first.
    pub http3_0rtt: bool,
    /// `--unix-socket PATH`.
    pub unix_socket: Option<std::path::PathBuf>,
    /// `--pipeline P`: HTTP/1.1 requests written together per connection.
    pub pipeline: Option<usize>,
}

fn conflict(first: &'static str, second: &'static str, why: &'static str) -> PlanError {
    PlanError::Conflict { first, second, why }
}

impl Settings {
    fn protocol(&self) -> Result<Protocol, PlanError> {
        if self.streams.is_some() && !self.http2 && !self.http3 {
            return Err(conflict(
                "--streams",
                "HTTP/1.1",
                "streams are HTTP/2's and HTTP/3's; add --http2 or --http3",
            ));
        }
        if self.http2_fallback && !self.http2 {
            return Err(conflict(
                "--http2-fallback",
                "HTTP/1.1",
                "it says what --http2 does when a TLS server does not offer h2; add --http2",
            ));
        }
        if self.http3_0rtt && !self.http3 {
            return Err(conflict(
                "--http3-0rtt",
                "TCP",
                "0-RTT resumption is QUIC's; add --http3",
            ));
        }
        Ok(Protocol {
            http3: self.http3.then(|| Http3 {
                streams: self.streams.unwrap_or(1),
                zero_rtt: self.http3_0rtt,
            }),
            http2: self.http2.then(|| Http2 {
                streams: self.streams.unwrap_or(1),
                fallback: self.http2_fallback,
            }),
            unix_socket: self.unix_socket.clone(),
            pipeline: self.pipeline,
            proxy: None,
            grpc: None,
            grpc_max_receive: None,
            tls_server_name: None,
        })
    }

    /// Builds and validates the plan for `request` (its `keep_alive` is set from here).
    /// `cores` is the default thread count.
    pub fn to_plan(&self, request: RequestSpec, cores: usize) -> Result<Plan, PlanError> {
        self.build(request, None, cores)
    }

    /// Builds and validates a WebSocket run: connections are its sessions, and a count
    /// (`requests`) counts messages sent.
    pub fn to_ws_plan(
        &self,
        request: RequestSpec,
        spec: WsSpec,
        cores: usize,
    ) -> Result<Plan, PlanError> {
        let open = self.rate.is_some() || (self.stages.is_some() && self.connections.is_none());
        if open || self.max_connections.is_some() {
            return Err(conflict(
                "--rate/--max-connections",
                "loadmark ws",
                "each WebSocket session sends on its own --interval; set the session count with --sessions, or ramp it with --stages",
            ));
        }
        if spec.mode == WsMode::Receive && self.requests.is_some() {
            return Err(conflict(
                "--requests",
                "--mode receive",
                "a receive-only run sends nothing to count; give a --duration",
            ));
        }
        self.build(request, Some(spec), cores)
    }

    fn build(
        &self,
        mut request: RequestSpec,
        websocket: Option<WsSpec>,
        cores: usize,
    ) -> Result<Plan, PlanError> {
        let open = self.rate.is_some() || (self.stages.is_some() && self.connections.is_none());
        if self.duration.is_some() && self.requests.is_some() {
            return Err(conflict(
                "--requests",
                "--duration",
                "a run stops after a count or after a time; give one",
            ));
        }
        if self.stages.is_some() && self.duration.is_some() {
            return Err(conflict(
                "--stages",
                "--duration",
                "the stages set how long the run lasts",
            ));
        }
        if open && self.requests.is_some() && (self.stages.is_some() || self.duration.is_some()) {
            return Err(conflict(
                "--requests",
                if self.stages.is_some() {
                    "--stages"
                } else {
                    "--duration"
                },
                "with --rate, --requests N sends exactly N requests at that rate (as vegeta \
                 does); a schedule or a duration would say otherwise",
            ));
        }
        let threads_for =
            |connections: usize| self.threads.unwrap_or(cores.min(connections.max(1)));
        let (load, stop) =
            if let (Some(text), Some(start), false) = (&self.stages, self.connections, open) {
                // Connections with stages: the stages are connection counts, starting from them.
                let connections = Profile::parse(text, start as f64, "--stages")?;
                let threads = threads_for(connections.peak().ceil() as usize);
                let stop = Stop::Duration(connections.duration());
                (
                    Load::Ramp {
                        connections,
                        threads,
                    },
                    stop,
                )
            } else if open {
                let rate = match (&self.stages, self.rate) {
                    (Some(text), start) => Profile::parse(text, start.unwrap_or(0.0), "--stages")?,
                    (None, Some(rate)) if rate.is_finite() && rate > 0.0 => {
                        let duration = match self.requests {
                            // Request k is due at k/R: the last of N at (N-1)/R, so a schedule
                            // of (N-0.5)/R holds exactly N, clear of rounding at either end.
                            Some(n) => Duration::from_secs_f64((n as f64 - 0.5).max(0.5) / rate),
                            None => self.duration.unwrap_or(DEFAULT_DURATION),
                        };
                        Profile::constant(rate, duration)
                    }
                    (None, rate) => {
                        return Err(PlanError::invalid(
                            "--rate",
                            format!("{}", rate.unwrap_or(0.0)),
                            "requests per second above zero, e.g. 1000 or 2.5",
                        ))
                    }
                };
                // `-c` with `-R` (wrk2's spelling) opens that many connections up front; the
                // pool may still grow to the cap, which is at least as large.
                let max_connections = self
                    .max_connections
                    .unwrap_or(DEFAULT_MAX_CONNECTIONS.max(self.connections.unwrap_or(0)));
                let stop = match self.requests {
                    Some(n) => Stop::Requests(n),
                    None => Stop::Duration(rate.duration()),
                };
                let threads = threads_for(max_connections);
                (
                    Load::Open {
                        rate,
                        max_connections,
                        threads,
                        connections: self.connections,
                    },
                    stop,
                )
            } else {
                let connections = self.connections.unwrap_or(DEFAULT_CONNECTIONS);
                let stop = match (self.duration, self.requests) {
                    (_, Some(n)) => Stop::Requests(n),
                    (Some(d), None) => Stop::Duration(d),
                    (None, None) => Stop::Duration(DEFAULT_DURATION),
                };
                let threads = threads_for(connections);
                (
                    Load::Closed {
                        connections,
                        threads,
                    },
                    stop,
                )
            };
        // A `Connection: close` header (any case, as wrk users write it) is the same promise
        // as --no-keepalive: no second request on that connection (RFC 9112 §9.6).
        request.keep_alive = self.keep_alive.unwrap_or(true) && !request.says_close();
        let timeout = self.timeout.unwrap_or(DEFAULT_TIMEOUT);
        let plan = Plan {
            request,
            load,
            stop,
            timeouts: Timeouts {
                request: timeout,
                connect: self.connect_timeout.unwrap_or(timeout),
            },
            warmup: self.warmup.unwrap_or(Duration::ZERO),
            tls: if self.insecure {
                TlsPolicy::Insecure
            } else {
                TlsPolicy::Verify
            },
            mix: Default::default(),
            websocket: websocket.clone(),
            protocol: self.protocol()?,
            script: None,
            checks: Vec::new(),
            scenario: None,
            scenarios: Vec::new(),
            cookies: false,
        };
        plan.validate()?;
        Ok(plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Target;

    #[test]
    fn http3_takes_streams_needs_https_and_speaks_alone() {
        let h3 = |url: &str, more: Settings| {
            let mut req = request();
            req.url = Target::parse(url).unwrap();
            Settings {
                http3: true,
                ..more
            }
            .to_plan(req, 2)
        };
        let streams = Settings {
            streams: Some(8),
            ..Default::default()
        };
        let p = h3("https://127.0.0.1:8443/", streams).unwrap();
        assert_eq!((p.protocol.name(), p.protocol.streams()), ("HTTP/3", 8));
        let e = h3("http://127.0.0.1:8080/", Settings::default()).unwrap_err();
        assert!(e.to_string().contains("HTTP/3 needs https://"), "{e}");
        let both = Settings {
            http2: true,
            ..Default::default()
        };
        let e = h3("https://127.0.0.1:8443/", both).unwrap_err();
        assert!(
            e.to_string().contains("--http2 and --http3")
                || e.to_string().contains("--http3 and --http2"),
            "{e}"
        );
        // --no-keepalive is a connection per request over HTTP/3 too.
        let close = Settings {
            keep_alive: Some(false),
            ..Default::default()
        };
        assert!(
            !h3("https://127.0.0.1:8443/", close)
                .unwrap()
                .request
                .keep_alive
        );
        // --http3-0rtt needs --http3.
        let early = Settings {
            http3_0rtt: true,
            ..Default::default()
        };
        let mut req = request();
        req.url = Target::parse("https://127.0.0.1:8443/").unwrap();
        let e = early.to_plan(req, 2).unwrap_err();
        assert!(e.to_string().contains("--http3-0rtt"), "{e}");
    }

    #[test]
    fn rate_with_a_count_schedules_exactly_that_many_requests() {
        for (rate, n) in [
            (500.0, 1000),
            (300.0, 1000),
            (7.0, 3),
            (1.0, 1),
            (33.3, 101),
        ] {
            let p = Settings {
                rate: Some(rate),
                requests: Some(n),
                ..Default::default()
            }
            .to_plan(request(), 2)
            .unwrap();
            assert_eq!(p.stop, Stop::Requests(n), "-R {rate} -n {n}");
            match &p.load {
                Load::Open { rate: profile, .. } => {
                    assert_eq!(profile.total_requests(), n, "-R {rate} -n {n}")
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn rate_with_connections_opens_them_up_front_and_the_cap_covers_them() {
        let with_c = |c: usize, cap: Option<usize>| {
            Settings {
                rate: Some(2000.0),
                connections: Some(c),
                max_connections: cap,
                ..Default::default()
            }
            .to_plan(request(), 2)
            .unwrap()
            .load
        };
        let load = with_c(100, None);
        assert_eq!(load.preopen(), 100);
        assert_eq!(load.max_connections(), 1000);
        assert_eq!(with_c(1500, None).max_connections(), 1500);
        assert_eq!(with_c(100, Some(40)).preopen(), 40, "never past the cap");
        // Without -c: sized from the rate, 50 µs of requests (a loopback service).
        let guessed = |rate: f64| {
            Settings {
                rate: Some(rate),
                ..Default::default()
            }
            .to_plan(request(), 2)
            .unwrap()
            .load
            .preopen()
        };
        assert_eq!(
            (guessed(40_000.0), guessed(2000.0), guessed(5.0)),
            (2, 1, 1)
        );
    }

    fn request() -> RequestSpec {
        RequestSpec {
            method: "GET".into(),
            url: Target::parse("http://127.0.0.1:8080/").unwrap(),
            headers: Vec::new(),
            body: Vec::new(),
            keep_alive: true,
        }
    }

    #[test]
    fn defaults_are_a_closed_loop_of_50_for_10s() {
        let p = Settings::default().to_plan(request(), 2).unwrap();
        assert_eq!(
            p.load,
            Load::Closed {
                connections: 50,
                threads: 2
            }
        );
        assert_eq!(p.stop, Stop::Duration(DEFAULT_DURATION));
    }

    #[test]
    fn rate_stages_and_connection_stages() {
        let open = Settings {
            rate: Some(100.0),
            duration: Some(Duration::from_secs(3)),
            ..Default::default()
        };
        let p = open.to_plan(request(), 2).unwrap();
        assert!(matches!(
            p.load,
            Load::Open {
                max_connections: 1000,
                ..
            }
        ));
        let ramp = Settings {
            connections: Some(1),
            stages: Some("30s:200".into()),
            ..Default::default()
        };
        let p = ramp.to_plan(request(), 2).unwrap();
        assert!(matches!(p.load, Load::Ramp { .. }));
        assert_eq!(p.stop, Stop::Duration(Duration::from_secs(30)));
    }

    #[test]
    fn conflicts_are_named() {
        let cases = [
            Settings {
                rate: Some(5.0),
                requests: Some(3),
                duration: Some(Duration::from_secs(1)),
                ..Default::default()
            },
            Settings {
                stages: Some("1s:5".into()),
                requests: Some(3),
                ..Default::default()
            },
            Settings {
                requests: Some(3),
                duration: Some(Duration::from_secs(1)),
                ..Default::default()
            },
            Settings {
                stages: Some("1s:5".into()),
                duration: Some(Duration::from_secs(1)),
                ..Default::default()
            },
        ];
        for s in cases {
            let err = s.to_plan(request(), 1).unwrap_err();
            assert!(matches!(err, PlanError::Conflict { .. }), "{s:?}: {err}");
        }
    }
}
