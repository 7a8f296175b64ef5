//! [`Proxy`]: the proxy a run goes through, chosen as curl chooses it: `-x URL`, else the
//! environment (`http_proxy`/`HTTP_PROXY` for http:// and ws://, `https_proxy`/`HTTPS_PROXY`
//! for https:// and wss://, then `all_proxy`/`ALL_PROXY`; lower case first), unless the
//! target's host is on `no_proxy`/`NO_PROXY`.
//!
//! Matching curl (7.88, checked against it): a proxy URL without a scheme is an HTTP proxy,
//! without a port port 1080; `-x ''` turns the environment's proxy off; NO_PROXY applies to
//! `-x` too; loopback is not exempt (a proxy set for everything also carries
//! http://127.0.0.1). One difference: curl ignores upper-case `HTTP_PROXY` (a CGI script's
//! environment may hold a client's `Proxy:` header under that name); loadmark reads it, as
//! hey and k6 (Go) do, since it never runs as CGI.

use std::net::IpAddr;

use crate::target::{Scheme, Target};
use crate::text::PlanError;

/// curl's default proxy port, whatever the proxy's kind.
pub const DEFAULT_PROXY_PORT: u16 = 1080;

/// What speaks on the proxy's port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyKind {
    /// An HTTP proxy: plain http:// requests are forwarded (absolute-form request target),
    /// everything else goes through a CONNECT tunnel.
    Http,
    /// SOCKS5, the target's name resolved here (curl's `socks5://`).
    Socks5,
    /// SOCKS5, the name handed to the proxy to resolve (curl's `socks5h://`).
    Socks5h,
}

/// A proxy to go through. Never serialized: its password must not reach a report, and a
/// proxy belongs to the machine that runs the load (as the environment it came from).
#[derive(Clone, PartialEq, Eq)]
pub struct Proxy {
    pub kind: ProxyKind,
    /// Without IPv6 brackets.
    pub host: String,
    pub port: u16,
    /// User and password, percent-decoded from the URL (HTTP: Basic Proxy-Authorization;
    /// SOCKS5: RFC 1929).
    pub credentials: Option<(String, String)>,
    /// Where it came from: `-x` or the environment variable's name.
    pub from: &'static str,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Proxy({} from {})", self, self.from)
    }
}

/// The URL without the password: what reports and error messages print.
impl std::fmt::Display for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = match self.kind {
            ProxyKind::Http => "http",
            ProxyKind::Socks5 => "socks5",
            ProxyKind::Socks5h => "socks5h",
        };
        write!(f, "{scheme}://")?;
        if let Some((user, _)) = &self.credentials {
            write!(f, "{user}:***@")?;
        }
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

const PROXY_FORM: &str =
    "a proxy URL: http://HOST:PORT, socks5://HOST:PORT or socks5h://HOST:PORT, \
     optionally with USER:PASSWORD@ before the host (no scheme: http://; no port: 1080)";

impl Proxy {
    /// Parses a proxy URL as curl reads `-x`; `from` names the flag or variable in errors.
    pub fn parse(text: &str, from: &'static str) -> Result<Proxy, PlanError> {
        let bad = |expected| PlanError::invalid(from, redact(text), expected);
        let text = text.trim();
        let full = if text.contains("://") {
            text.to_string()
        } else {
            format!("http://{text}")
        };
        let (scheme, _) = full.split_once("://").expect("has ://");
        let kind = match scheme.to_ascii_lowercase().as_str() {
            "http" => ProxyKind::Http,
            "socks5" => ProxyKind::Socks5,
            "socks5h" => ProxyKind::Socks5h,
            "https" => {
                return Err(bad(
                    "an http:// proxy (TLS to the proxy itself, https://, is not supported; \
                     https:// targets go through an http:// proxy's CONNECT tunnel)",
                ))
            }
            _ => return Err(bad(PROXY_FORM)),
        };
        let url = url::Url::parse(&full).map_err(|_| bad(PROXY_FORM))?;
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| bad(PROXY_FORM))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        if !matches!(url.path(), "" | "/") || url.query().is_some() {
            return Err(bad(PROXY_FORM));
        }
        let credentials = match (url.username(), url.password()) {
            ("", None) => None,
            (user, password) => Some((
                crate::percent_decode(user),
                crate::percent_decode(password.unwrap_or("")),
            )),
        };
        Ok(Proxy {
            kind,
            host,
            port: url.port().unwrap_or(DEFAULT_PROXY_PORT),
            credentials,
            from,
        })
    }

    /// The proxy for `plan`'s target, as [`Proxy::choose`] picks it; none with a Unix
    /// socket, which is reached directly (asking for both with `-x` is a conflict).
    pub fn for_plan(
        flag: Option<&str>,
        plan: &crate::plan::Plan,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Proxy>, PlanError> {
        if plan.protocol.unix_socket.is_some() {
            if flag.is_some_and(|f| !f.trim().is_empty()) {
                return Err(PlanError::Conflict {
                    first: "--proxy",
                    second: "--unix-socket",
                    why: "a Unix socket is reached directly, not through a proxy",
                });
            }
            return Ok(None);
        }
        Self::choose(flag, &plan.request.url, var)
    }

    /// The proxy for `target`: `-x` (`flag`; empty turns proxies off), else the environment
    /// as `var` reads it; none when the target's host is on NO_PROXY.
    pub fn choose(
        flag: Option<&str>,
        target: &Target,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Proxy>, PlanError> {
        let set = |name: &'static str| {
            var(name)
                .filter(|v| !v.trim().is_empty())
                .map(|v| (name, v))
        };
        let chosen = match flag {
            Some(text) if text.trim().is_empty() => return Ok(None),
            Some(text) => Some(("--proxy", text.to_string())),
            None => {
                let names: [&'static str; 2] = match target.scheme() {
                    Scheme::Http | Scheme::Ws => ["http_proxy", "HTTP_PROXY"],
                    Scheme::Https | Scheme::Wss => ["https_proxy", "HTTPS_PROXY"],
                };
                names
                    .into_iter()
                    .chain(["all_proxy", "ALL_PROXY"])
                    .find_map(set)
            }
        };
        let Some((from, text)) = chosen else {
            return Ok(None);
        };
        let proxy = Proxy::parse(&text, from)?;
        let exempt = ["no_proxy", "NO_PROXY"]
            .into_iter()
            .find_map(set)
            .is_some_and(|(_, list)| no_proxy_matches(&list, target.host()));
        Ok((!exempt).then_some(proxy))
    }
}

/// Whether curl's NO_PROXY list `list` exempts `host` (no brackets): `*` exempts every host;
/// a name matches itself and its subdomains (`example.com` and `.example.com` both match
/// `www.example.com`), any case; an IP address matches the same address or a CIDR range
/// (`10.0.0.0/8`), never a name's suffix. Ports in entries are not understood (curl neither).
pub fn no_proxy_matches(list: &str, host: &str) -> bool {
    let ip: Option<IpAddr> = host.parse().ok();
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    list.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|e| !e.is_empty())
        .any(|entry| {
            if entry == "*" {
                return true;
            }
            match ip {
                Some(ip) => in_range(entry, ip),
                None => {
                    let entry = entry.trim_start_matches('.').trim_end_matches('.');
                    let entry = entry.to_ascii_lowercase();
                    !entry.is_empty()
                        && (name == entry
                            || name
                                .strip_suffix(entry.as_str())
                                .is_some_and(|rest| rest.ends_with('.')))
                }
            }
        })
}

/// `entry` is `ip` itself or a CIDR range that holds it.
fn in_range(entry: &str, ip: IpAddr) -> bool {
    let (addr, bits) = match entry.split_once('/') {
        Some((a, b)) => match b.parse::<u32>() {
            Ok(bits) => (a, Some(bits)),
            Err(_) => return false,
        },
        None => (entry, None),
    };
    let Ok(net) = addr.parse::<IpAddr>() else {
        return false;
    };
    match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(i)) => prefix_eq(&n.octets(), &i.octets(), bits.unwrap_or(32)),
        (IpAddr::V6(n), IpAddr::V6(i)) => prefix_eq(&n.octets(), &i.octets(), bits.unwrap_or(128)),
        _ => false,
    }
}

fn prefix_eq(a: &[u8], b: &[u8], bits: u32) -> bool {
    if bits as usize > a.len() * 8 {
        return false;
    }
    let whole = bits as usize / 8;
    let rest = bits % 8;
    a[..whole] == b[..whole] && (rest == 0 || (a[whole] ^ b[whole]) >> (8 - rest) == 0)
}

/// The text with any password masked, for error messages.
fn redact(text: &str) -> String {
    let Some((scheme, rest)) = text.split_once("://") else {
        return redact(&format!("http://{text}"))
            .trim_start_matches("http://")
            .to_string();
    };
    match rest.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
            None => text.to_string(),
        },
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    fn chosen(url: &str, flag: Option<&str>, vars: &[(&str, &str)]) -> Option<String> {
        let target = if url.starts_with("ws") {
            Target::parse_ws(url).unwrap()
        } else {
            Target::parse(url).unwrap()
        };
        Proxy::choose(flag, &target, env(vars))
            .unwrap()
            .map(|p| format!("{p} from {}", p.from))
    }

    #[test]
    fn parses_proxy_urls_as_curl_does() {
        let p = Proxy::parse("127.0.0.1:3128", "-x").unwrap();
        assert_eq!(
            (p.kind, p.host.as_str(), p.port),
            (ProxyKind::Http, "127.0.0.1", 3128)
        );
        let p = Proxy::parse("socks5h://al%40ce:p%3Ass@[::1]", "-x").unwrap();
        assert_eq!(
            (p.kind, p.host.as_str(), p.port),
            (ProxyKind::Socks5h, "::1", 1080)
        );
        assert_eq!(
            p.credentials,
            Some(("al@ce".to_string(), "p:ss".to_string()))
        );
        assert_eq!(p.to_string(), "socks5h://al@ce:***@[::1]:1080");
        let p = Proxy::parse("socks5://h:1", "-x").unwrap();
        assert_eq!((p.kind, p.credentials), (ProxyKind::Socks5, None));
        for bad in [
            "https://h:1",
            "socks4://h:1",
            "http://h:1/path",
            "http://:1",
        ] {
            assert!(Proxy::parse(bad, "-x").is_err(), "{bad}");
        }
        let e = Proxy::parse("ftp://u:secret@h", "HTTPS_PROXY")
            .unwrap_err()
            .to_string();
        assert!(e.contains("HTTPS_PROXY") && !e.contains("secret"), "{e}");
    }

    #[test]
    fn picks_the_variable_of_the_targets_scheme_lower_case_first() {
        let vars = [
            ("http_proxy", "http://a:1"),
            ("HTTP_PROXY", "http://b:1"),
            ("HTTPS_PROXY", "http://c:1"),
            ("ALL_PROXY", "socks5://d:1"),
        ];
        assert_eq!(
            chosen("http://t/", None, &vars).unwrap(),
            "http://a:1 from http_proxy"
        );
        assert_eq!(
            chosen("ws://t/", None, &vars[1..]).unwrap(),
            "http://b:1 from HTTP_PROXY"
        );
        assert_eq!(
            chosen("https://t/", None, &vars).unwrap(),
            "http://c:1 from HTTPS_PROXY"
        );
        assert_eq!(
            chosen("wss://t/", None, &vars[3..]).unwrap(),
            "socks5://d:1 from ALL_PROXY"
        );
        assert_eq!(chosen("https://t/", None, &vars[..2]), None);
        // An empty variable is unset; -x wins, and -x '' turns the environment's off.
        assert_eq!(chosen("http://t/", None, &[("http_proxy", " ")]), None);
        assert_eq!(
            chosen("http://t/", Some("h:2"), &vars).unwrap(),
            "http://h:2 from --proxy"
        );
        assert_eq!(chosen("http://t/", Some(""), &vars), None);
    }

    #[test]
    fn no_proxy_exempts_as_curl_does_and_loopback_is_not_exempt() {
        let proxied = |url, list: &str| {
            chosen(
                url,
                Some("http://p:1"),
                &[("no_proxy", list), ("NO_PROXY", "other")],
            )
            .is_some()
        };
        assert!(proxied("http://127.0.0.1:8080/", ""));
        assert!(proxied("http://localhost:8080/", "other"));
        assert!(!proxied("http://localhost:8080/", " foo, LocalHost "));
        assert!(!proxied("http://a.localhost/", ".localhost"));
        assert!(!proxied("http://a.localhost/", "localhost"));
        assert!(proxied("http://alocalhost/", "localhost"));
        assert!(proxied("http://localhost/", "*.localhost"));
        assert!(!proxied("http://anything/", "*"));
        assert!(!proxied("http://127.0.0.1/", "127.0.0.1"));
        assert!(!proxied("http://127.0.0.9/", "127.0.0.0/8"));
        assert!(proxied("http://127.0.0.2/", "0.0.2"));
        assert!(proxied("http://127.0.0.1:8080/", "127.0.0.1:8080"));
        assert!(!proxied("http://[::1]:8080/", "::1"));
        assert!(proxied("http://[::1]:8080/", "[::1]"));
        assert!(!proxied("http://[fd00::5]/", "fd00::/8"));
        // no_proxy empty: NO_PROXY is read.
        assert!(!proxied("http://other/", ""));
    }
}
