//! [`Target`]: a parsed, checked URL to load.

use serde::{Deserialize, Serialize};
use std::fmt;

use crate::text::PlanError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    Http,
    Https,
    /// WebSocket over plain TCP (`loadmark ws`).
    Ws,
    /// WebSocket over TLS.
    Wss,
}

impl Scheme {
    /// True when the bytes go through TLS.
    pub fn is_tls(self) -> bool {
        matches!(self, Scheme::Https | Scheme::Wss)
    }
    /// True for ws:// and wss://.
    pub fn is_websocket(self) -> bool {
        matches!(self, Scheme::Ws | Scheme::Wss)
    }
}

/// A URL that loadmark can send HTTP/1.1 requests (or WebSocket upgrades) to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    url: String,
    scheme: Scheme,
    /// Host for DNS and TLS SNI, without IPv6 brackets.
    host: String,
    port: u16,
    /// Value of the Host header: host, with brackets for IPv6, and the port unless default.
    host_header: String,
    path_and_query: String,
}

const URL_FORM: &str =
    "an absolute http:// or https:// URL with a host, e.g. http://127.0.0.1:8080/path";
const WS_URL_FORM: &str =
    "an absolute ws:// or wss:// URL with a host, e.g. ws://127.0.0.1:8080/ws/echo";

impl Target {
    /// Parses an http:// or https:// URL (`loadmark run`).
    pub fn parse(text: &str) -> Result<Target, PlanError> {
        let target = Self::parse_any(text, URL_FORM)?;
        if target.scheme.is_websocket() {
            return Err(PlanError::invalid(
                "URL",
                text,
                "scheme http:// or https:// (ws:// and wss:// belong to `loadmark ws`)",
            ));
        }
        Ok(target)
    }

    /// Parses a ws:// or wss:// URL (`loadmark ws`).
    pub fn parse_ws(text: &str) -> Result<Target, PlanError> {
        let target = Self::parse_any(text, WS_URL_FORM)?;
        if !target.scheme.is_websocket() {
            return Err(PlanError::invalid(
                "URL",
                text,
                "scheme ws:// or wss:// (http:// and https:// belong to `loadmark run`)",
            ));
        }
        Ok(target)
    }

    fn parse_any(text: &str, form: &'static str) -> Result<Target, PlanError> {
        let bad = || PlanError::invalid("URL", text, form);
        // The URL standard forgives `http:/host` and `http:host` as `http://host/`; a user who
        // typed that made a typo, and a load test should not guess what they meant.
        let after_scheme = text.split_once(':').map_or("", |(_, rest)| rest);
        if !after_scheme.starts_with("//") {
            return Err(PlanError::invalid(
                "URL",
                text,
                "a well-formed URL: scheme, then '://', then the host, e.g. http://127.0.0.1:8080/path",
            ));
        }
        let url = url::Url::parse(text).map_err(|e| match e {
            url::ParseError::InvalidPort => {
                PlanError::invalid("URL", text, "a valid port: port out of range (1-65535)")
            }
            _ => bad(),
        })?;
        let scheme = match url.scheme() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            "ws" => Scheme::Ws,
            "wss" => Scheme::Wss,
            _ => {
                return Err(PlanError::invalid(
                    "URL",
                    text,
                    "scheme http://, https:// (loadmark run) or ws://, wss:// (loadmark ws)",
                ))
            }
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(PlanError::invalid(
                "URL",
                text,
                "no user:password@ in the URL; send credentials with -H 'Authorization: ...'",
            ));
        }
        let host_text = url.host_str().ok_or_else(bad)?;
        let host = host_text
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = url.port_or_known_default().ok_or_else(bad)?;
        if port == 0 {
            return Err(PlanError::invalid(
                "URL",
                text,
                "a valid port: port out of range (1-65535)",
            ));
        }
        let host_header = match url.port() {
            Some(p) => format!("{host_text}:{p}"),
            None => host_text.to_string(),
        };
        let mut path_and_query = url.path().to_string();
        if let Some(q) = url.query() {
            path_and_query.push('?');
            path_and_query.push_str(q);
        }
        Ok(Target {
            url: url.to_string(),
            scheme,
            host,
            port,
            host_header,
            path_and_query,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.url
    }
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }
    pub fn host(&self) -> &str {
        &self.host
    }
    pub fn port(&self) -> u16 {
        self.port
    }
    pub fn host_header(&self) -> &str {
        &self.host_header
    }
    pub fn path_and_query(&self) -> &str {
        &self.path_and_query
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url)
    }
}

/// A URL string (http, https, ws or wss).
impl schemars::JsonSchema for Target {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Target".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^(https?|wss?)://",
            "description": "The URL loaded: http, https, ws or wss."
        })
    }
}

impl Serialize for Target {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.url)
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        // A saved report may hold either kind; the command that made it already chose.
        Target::parse_any(&text, URL_FORM).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_parts_a_request_needs() {
        let t = Target::parse("http://127.0.0.1:8000/nas?arch=x86_64&build=24922").unwrap();
        assert_eq!((t.host(), t.port()), ("127.0.0.1", 8000));
        assert_eq!(t.path_and_query(), "/nas?arch=x86_64&build=24922");
        let t = Target::parse("https://example.test").unwrap();
        assert_eq!(
            (t.scheme(), t.port(), t.path_and_query()),
            (Scheme::Https, 443, "/")
        );
        assert_eq!(t.host_header(), "example.test");
        let t = Target::parse("http://[::1]:9000/x").unwrap();
        assert_eq!((t.host(), t.host_header()), ("::1", "[::1]:9000"));
    }

    #[test]
    fn rejects_what_it_cannot_load() {
        for bad in [
            "",
            "127.0.0.1:8080",
            "ftp://h/",
            "ws://h/",
            "http://",
            "http://u:p@h/",
        ] {
            let err = Target::parse(bad).unwrap_err().to_string();
            assert!(err.starts_with("URL: invalid value"), "{bad}: {err}");
        }
        for typo in ["http:/127.0.0.1:8080/", "http:127.0.0.1/", "https:/h/"] {
            let err = Target::parse(typo).unwrap_err().to_string();
            assert!(err.contains("then '://'"), "{typo}: {err}");
        }
        assert!(Target::parse_ws("ws:/h/").is_err());
        for port in ["99999", "65536", "0"] {
            let url = format!("http://127.0.0.1:{port}/");
            let err = Target::parse(&url).unwrap_err().to_string();
            assert!(err.contains("port out of range (1-65535)"), "{url}: {err}");
            let ws = format!("ws://127.0.0.1:{port}/");
            let err = Target::parse_ws(&ws).unwrap_err().to_string();
            assert!(err.contains("port out of range (1-65535)"), "{ws}: {err}");
        }
        assert_eq!(Target::parse("http://h:65535/").unwrap().port(), 65535);
    }
}
