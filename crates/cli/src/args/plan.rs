//! The flags turned into a [`Plan`]: defaults filled in, other tools' spellings folded into
//! loadmark's, and what cannot go together refused.

use super::values::base64;
use std::path::PathBuf;

use loadmark_plan::{
    Plan, PlanError, Proxy, RequestSpec, Settings, Target, WsMode, WsPayload, WsSpec,
    DEFAULT_TIMEOUT,
};

use super::{RunArgs, WsArgs};

impl RunArgs {
    /// The file the body comes from: `--body-file`/`-p`, or `-b @FILE` (curl's spelling).
    pub fn body_path(&self) -> Option<PathBuf> {
        self.body_file.clone().or_else(|| {
            self.body
                .as_deref()
                .and_then(|b| b.strip_prefix('@'))
                .map(PathBuf::from)
        })
    }

    /// Headers from -H, then the ones other tools' flags stand for (-T, -A, --cookie) unless
    /// -H already set them.
    fn all_headers(&self) -> Vec<(String, String)> {
        let mut headers = self.headers.clone();
        let has = |headers: &[(String, String)], name: &str| {
            headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        if let Some(t) = &self.content_type {
            if !has(&headers, "Content-Type") {
                headers.push(("Content-Type".into(), t.clone()));
            }
        }
        if let Some(auth) = &self.basic_auth {
            if !has(&headers, "Authorization") {
                headers.push((
                    "Authorization".into(),
                    format!("Basic {}", base64(auth.as_bytes())),
                ));
            }
        }
        if !self.cookies.is_empty() && !has(&headers, "Cookie") {
            headers.push(("Cookie".into(), self.cookies.join("; ")));
        }
        headers
    }

    /// Flags into a [`Plan`], through the same [`Settings`] normalization as plan files.
    pub fn to_plan(&self, body_from_file: Option<Vec<u8>>) -> Result<Plan, PlanError> {
        let url = Target::parse(&self.url)?;
        let has_body = self.body.is_some() || self.body_file.is_some();
        let body = body_from_file
            .or_else(|| {
                self.body
                    .as_ref()
                    .filter(|b| !b.starts_with('@'))
                    .map(|b| b.as_bytes().to_vec())
            })
            .unwrap_or_default();
        let method = self
            .method
            .clone()
            .unwrap_or_else(|| if has_body { "POST" } else { "GET" }.to_string())
            .to_ascii_uppercase();
        let request = RequestSpec {
            method,
            url,
            headers: self.all_headers(),
            body,
            keep_alive: true,
        };
        let settings = Settings {
            connections: self.connections,
            rate: self.rate,
            stages: self.stages.clone(),
            max_connections: self.max_connections,
            threads: self.threads,
            duration: self.duration,
            requests: self.requests,
            keep_alive: Some(!self.no_keepalive),
            timeout: Some(self.timeout),
            connect_timeout: self.connect_timeout,
            warmup: self.warmup,
            insecure: self.insecure,
            http2: self.http2,
            http3: self.http3,
            http3_0rtt: self.http3_0rtt,
            streams: self.streams,
            http2_fallback: self.http2_fallback,
            unix_socket: self.unix_socket.clone(),
            pipeline: self.pipeline,
        };
        let cores = loadmark_engine::usable_cpus();
        let mut plan = settings.to_plan(request, cores)?;
        plan.tls = self.tls.policy(self.insecure)?;
        plan.checks.clone_from(&self.checks);
        if self.http3 {
            // QUIC goes straight to the server: a proxy from the environment is not used.
            if self.proxy.is_some() {
                return Err(PlanError::Conflict {
                    first: "--http3",
                    second: "-x/--proxy",
                    why: "HTTP/3 (QUIC over UDP) does not go through a proxy here",
                });
            }
            // Checks arrive after the settings were validated: the plan's rules again.
            plan.validate()?;
        } else {
            plan.protocol.proxy = Proxy::for_plan(self.proxy.as_deref(), &plan, env_var)?;
        }
        Ok(plan)
    }
}

/// The environment as proxies are chosen from it (`*_PROXY`, `NO_PROXY`).
fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

impl WsArgs {
    /// Flags into a WebSocket [`Plan`], through the same [`Settings`] as `run`.
    pub fn to_plan(&self) -> Result<Plan, PlanError> {
        let url = Target::parse_ws(&self.url)?;
        let payload = match (&self.message, &self.payload) {
            (Some(text), _) => WsPayload::Message(text.clone()),
            (None, Some(range)) => WsPayload::parse_range(range)?,
            (None, None) => WsPayload::Random { min: 128, max: 128 },
        };
        // A message rate is an interval per session: the sessions share it evenly.
        let sessions = self.sessions.unwrap_or(loadmark_plan::DEFAULT_CONNECTIONS);
        let interval = match self.rate {
            Some(rate) => {
                if self.stages.is_some() {
                    return Err(PlanError::Conflict {
                        first: "--rate",
                        second: "--stages",
                        why: "a message rate is split over a fixed number of sessions (-c)",
                    });
                }
                Some(std::time::Duration::from_secs_f64(sessions as f64 / rate))
            }
            None => self.interval,
        };
        let mode = self.mode.unwrap_or(if interval.is_some() {
            WsMode::Echo
        } else {
            WsMode::Request
        });
        if self.rate.is_some() && matches!(mode, WsMode::Request | WsMode::Receive) {
            return Err(PlanError::Conflict {
                first: "--rate",
                second: "--mode request/receive",
                why: "a rate sends on a schedule (echo or send mode); request mode waits for each reply",
            });
        }
        let spec = WsSpec {
            mode,
            payload,
            binary: self.binary,
            interval,
            session_duration: self.session_duration,
            ping: self.ping,
            reply_match: self.reply_match.clone(),
        };
        let request = RequestSpec {
            method: "GET".to_string(),
            url,
            headers: self.headers.clone(),
            body: Vec::new(),
            keep_alive: true,
        };
        let settings = Settings {
            // Stages ramp the sessions, from -c or none.
            connections: self.sessions.or(self.stages.as_ref().map(|_| 0)),
            stages: self.stages.clone(),
            threads: self.threads,
            duration: self.duration,
            requests: self.requests,
            timeout: Some(self.timeout),
            connect_timeout: self.connect_timeout,
            warmup: self.warmup,
            insecure: self.insecure,
            ..Default::default()
        };
        let cores = loadmark_engine::usable_cpus();
        let mut plan = settings.to_ws_plan(request, spec, cores)?;
        plan.tls = self.tls.policy(self.insecure)?;
        plan.checks.clone_from(&self.checks);
        plan.protocol.proxy = Proxy::for_plan(self.proxy.as_deref(), &plan, env_var)?;
        plan.validate()?;
        Ok(plan)
    }
}

// Keep the default visible to `--help` readers and the plan crate in agreement.
const _: () = assert!(DEFAULT_TIMEOUT.as_secs() == 10);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{Cli, Command};
    use clap::Parser;
    use loadmark_plan::{Load, Stop};
    use std::time::Duration;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("loadmark").chain(args.iter().copied()))
    }

    fn plan(args: &[&str]) -> Result<Plan, PlanError> {
        match parse(args).unwrap().command {
            Command::Run(r) => r.to_plan(None),
            _ => unreachable!(),
        }
    }

    #[test]
    fn wrk_style_flags_become_a_plan() {
        let p = plan(&[
            "run",
            "http://127.0.0.1:8080/api/features",
            "-c",
            "1000",
            "-t",
            "2",
            "-d",
            "30s",
            "--timeout",
            "10s",
            "-H",
            "Client-Id: x",
            "--latency",
        ])
        .unwrap();
        assert_eq!(
            p.load,
            Load::Closed {
                connections: 1000,
                threads: 2
            }
        );
        assert_eq!(p.stop, Stop::Duration(Duration::from_secs(30)));
        let open = plan(&["run", "http://h/", "-R", "2000", "-d", "5s", "-t", "2"]).unwrap();
        match open.load {
            Load::Open {
                rate,
                max_connections,
                threads,
                ..
            } => {
                assert_eq!(rate.total_requests(), 10_000);
                assert_eq!((max_connections, threads), (1000, 2));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(open.stop, Stop::Duration(Duration::from_secs(5)));
        let conns = plan(&["run", "http://h/", "-c", "50", "--stages", "30s:1->200"]).unwrap();
        match conns.load {
            Load::Ramp { connections, .. } => assert_eq!(connections.peak(), 200.0),
            other => panic!("{other:?}"),
        }
        let ramp = plan(&[
            "run",
            "http://h/",
            "--stages",
            "10s:0->5000,40s:5000,10s:5000->0",
        ])
        .unwrap();
        assert_eq!(ramp.stop, Stop::Duration(Duration::from_secs(60)));
        assert_eq!(
            p.request.headers,
            vec![("Client-Id".to_string(), "x".to_string())]
        );
        assert_eq!(p.request.method, "GET");
    }

    #[test]
    fn body_implies_post_and_count_mode() {
        let p = plan(&["run", "http://h/x", "-b", "{}", "-n", "2000", "-c", "20"]).unwrap();
        assert_eq!(
            (p.request.method.as_str(), p.stop),
            ("POST", Stop::Requests(2000))
        );
    }

    #[test]
    fn bad_input_is_refused_with_the_flag_named() {
        let e = parse(&["run", "http://h/", "-n", "5", "-d", "1s"]).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("--duration"), "{e}");
        let e = parse(&["run", "http://h/", "-d", "10x"]).unwrap_err();
        assert!(e.to_string().contains("expected a duration"), "{e}");
        let e = parse(&["run", "http://h/", "-H", "nocolon"]).unwrap_err();
        assert!(e.to_string().contains("'Name: value'"), "{e}");
        let e = plan(&["run", "not a url"]).unwrap_err();
        assert!(e.to_string().starts_with("URL: invalid value"), "{e}");
        let e = parse(&["run", "http://h/", "-R", "10", "-n", "5", "-d", "2s"]).unwrap_err();
        assert!(e.to_string().contains("--requests"), "{e}");
        let e = plan(&["run", "http://h/", "-R", "0"]).unwrap_err();
        assert!(e.to_string().starts_with("--rate"), "{e}");
        let e = plan(&["run", "http://h/", "--stages", "10s:fast"]).unwrap_err();
        assert!(e.to_string().starts_with("--stages"), "{e}");
        let e = plan(&["run", "http://h/", "-c", "2", "-t", "4"]).unwrap_err();
        assert!(e.to_string().contains("--threads"), "{e}");
    }
}
