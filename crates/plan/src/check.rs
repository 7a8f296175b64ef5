//! Response checks (issue 17): a small expression language, parsed once and validated with the
//! column of the first mistake and what was expected there.
//!
//! ```text
//! check   := [NAME ':'] expr
//! expr    := 'status' numcmp
//!          | 'latency' cmp DURATION                 latency < 200ms
//!          | 'header' NAME ('exists' | 'absent' | strop)
//!          | 'body' strop | 'body' 'size' numcmp
//!          | 'json' POINTER ('exists' | 'absent' | ('=='|'!=') JSON | cmp NUMBER
//!                           | 'length' numcmp)
//!          | 'grpc-status' ('=='|'!=') CODE        grpc-status == OK (a name or a number)
//! numcmp  := cmp NUMBER | 'in' NUMBER '..' NUMBER   (both ends included)
//! strop   := 'contains' TEXT | 'matches' TEXT (a regex) | ('=='|'!=') TEXT
//! cmp     := '==' | '!=' | '<' | '<=' | '>' | '>='
//! TEXT    := "double quoted, \" and \\ escaped" | a word without spaces
//! ```
//!
//! The engine evaluates checks as pure functions over a response (status, headers, body); a
//! check that fails does not make the response an error: the response is recorded as usual
//! and the failure is counted by the check's name. Only checks on headers, the body or JSON
//! need the response to be buffered, so status and latency checks cost no copy.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Cmp {
    pub fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }
}

/// A test on a number.
#[derive(Debug, Clone, PartialEq)]
pub enum NumTest {
    Cmp(Cmp, f64),
    /// Both ends included.
    In(f64, f64),
}

impl NumTest {
    pub fn holds(&self, v: f64) -> bool {
        match *self {
            NumTest::Cmp(c, n) => c.holds(v, n),
            NumTest::In(lo, hi) => lo <= v && v <= hi,
        }
    }
}

/// A test on text.
#[derive(Debug, Clone, PartialEq)]
pub enum TextTest {
    Contains(String),
    /// A regular expression (validated when parsed).
    Matches(String),
    Eq(String),
    Ne(String),
}

/// A test on the value a JSON pointer selects.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonTest {
    Exists,
    Absent,
    Eq(serde_json::Value),
    Ne(serde_json::Value),
    /// A number compared with `<`, `<=`, `>`, `>=`.
    Num(Cmp, f64),
    /// Elements of an array, members of an object, characters of a string.
    Length(NumTest),
}

/// What a check looks at.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Status(NumTest),
    Latency(Cmp, Duration),
    /// Header name lower-cased; `None`: exists, `Some(None)`... kept simple: see [`HeaderTest`].
    Header(String, HeaderTest),
    Body(TextTest),
    BodySize(NumTest),
    /// An RFC 6901 pointer (`/items/0/id`; `""` is the whole document).
    Json(String, JsonTest),
    /// A gRPC step's status code (`grpc-status == OK`): `true` for `==`, `false` for `!=`.
    GrpcStatus(bool, u32),
}

/// A test on a header (first value of that name).
#[derive(Debug, Clone, PartialEq)]
pub enum HeaderTest {
    Exists,
    Absent,
    Text(TextTest),
}

impl Expr {
    /// True when the check reads headers or the body, so the response must be buffered.
    pub fn needs_response(&self) -> bool {
        !matches!(self, Expr::Status(_) | Expr::Latency(..))
    }

    /// True when a WebSocket reply can meet the check: a message has a body (text, size,
    /// JSON) and a round trip (latency), but no status line and no headers.
    pub fn applies_to_messages(&self) -> bool {
        !matches!(
            self,
            Expr::Status(_) | Expr::Header(..) | Expr::GrpcStatus(..)
        )
    }
}

/// One parsed check: its name (given as `NAME: expr`, else the expression's text), the text
/// as written, and the expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub name: String,
    pub text: String,
    pub expr: Expr,
}

/// A check that does not parse: where, and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("column {column}: expected {expected}, found {found}")]
pub struct CheckError {
    /// 1-based, in characters of the check's text.
    pub column: usize,
    pub expected: String,
    pub found: String,
}

/// The forms a check can take, for `--help` and errors.
pub const CHECK_FORMS: &str = "status == 200 | status in 200..299 | latency < 200ms | \
header NAME exists | header NAME contains TEXT | body contains TEXT | body matches REGEX | \
body size < 1024 | json /pointer exists | json /pointer == VALUE | json /pointer > 3 | \
json /pointer length > 0 | grpc-status == OK (gRPC steps) (optionally named: 'NAME: EXPR')";

/// gRPC's status codes by number (`grpc/status.proto`), for `grpc-status` checks.
const GRPC_CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// A gRPC status code's name (`UNAVAILABLE` for 14), or its number when gRPC names none.
pub fn grpc_code_text(code: u32) -> String {
    GRPC_CODES
        .get(code as usize)
        .map_or_else(|| code.to_string(), |n| (*n).to_string())
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Quoted(String),
    Op(&'static str),
}

struct Lexer {
    toks: Vec<(usize, Tok)>,
    pos: usize,
    end_column: usize,
}

fn lex(text: &str) -> Result<Lexer, CheckError> {
    let chars: Vec<char> = text.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let column = i + 1;
        if c.is_whitespace() {
            i += 1;
        } else if c == '"' {
            let mut s = String::new();
            i += 1;
            loop {
                match chars.get(i) {
                    None => {
                        return Err(CheckError {
                            column,
                            expected: "a closing \" for the text that starts here".into(),
                            found: "the end of the check".into(),
                        })
                    }
                    Some('"') => break,
                    Some('\\') if matches!(chars.get(i + 1), Some('"' | '\\')) => {
                        s.push(chars[i + 1]);
                        i += 2;
                        continue;
                    }
                    Some(&ch) => s.push(ch),
                }
                i += 1;
            }
            i += 1;
            toks.push((column, Tok::Quoted(s)));
        } else if let Some(op) = ["==", "!=", "<=", ">=", "<", ">"]
            .into_iter()
            .find(|op| chars[i..].starts_with(&op.chars().collect::<Vec<_>>()))
        {
            i += op.len();
            toks.push((column, Tok::Op(op)));
        } else {
            let start = i;
            while i < chars.len()
                && !chars[i].is_whitespace()
                && !matches!(chars[i], '=' | '!' | '<' | '>' | '"')
            {
                i += 1;
            }
            if i == start {
                return Err(CheckError {
                    column,
                    expected: "a comparison (==, !=, <, <=, >, >=)".into(),
                    found: format!("{c:?}"),
                });
            }
            toks.push((column, Tok::Word(chars[start..i].iter().collect())));
        }
    }
    Ok(Lexer {
        toks,
        pos: 0,
        end_column: chars.len() + 1,
    })
}

impl Lexer {
    fn column(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end_column, |t| t.0)
    }

    fn found(&self) -> String {
        match self.toks.get(self.pos) {
            None => "the end of the check".into(),
            Some((_, Tok::Word(w))) => format!("{w:?}"),
            Some((_, Tok::Quoted(q))) => format!("\"{q}\""),
            Some((_, Tok::Op(o))) => format!("{o:?}"),
        }
    }

    fn fail<T>(&self, expected: &str) -> Result<T, CheckError> {
        Err(CheckError {
            column: self.column(),
            expected: expected.into(),
            found: self.found(),
        })
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).map(|t| t.1.clone());
        self.pos += 1;
        t
    }

    fn word(&mut self, expected: &str) -> Result<String, CheckError> {
        match self.toks.get(self.pos) {
            Some((_, Tok::Word(w))) => {
                let w = w.clone();
                self.pos += 1;
                Ok(w)
            }
            _ => self.fail(expected),
        }
    }

    fn peek_word(&self, w: &str) -> bool {
        matches!(self.toks.get(self.pos), Some((_, Tok::Word(x))) if x.eq_ignore_ascii_case(w))
    }

    fn text(&mut self) -> Result<String, CheckError> {
        match self.toks.get(self.pos) {
            Some((_, Tok::Word(w) | Tok::Quoted(w))) => {
                let w = w.clone();
                self.pos += 1;
                Ok(w)
            }
            _ => self.fail("a text: a word or \"quoted text\""),
        }
    }

    fn cmp(&mut self) -> Option<Cmp> {
        let c = match self.toks.get(self.pos) {
            Some((_, Tok::Op(op))) => match *op {
                "==" => Cmp::Eq,
                "!=" => Cmp::Ne,
                "<" => Cmp::Lt,
                "<=" => Cmp::Le,
                ">" => Cmp::Gt,
                _ => Cmp::Ge,
            },
            _ => return None,
        };
        self.pos += 1;
        Some(c)
    }

    fn number(&mut self) -> Result<f64, CheckError> {
        if let Some((_, Tok::Word(w))) = self.toks.get(self.pos) {
            if let Ok(n) = w.parse::<f64>() {
                if n.is_finite() {
                    self.pos += 1;
                    return Ok(n);
                }
            }
        }
        self.fail("a number")
    }

    fn num_test(&mut self) -> Result<NumTest, CheckError> {
        if let Some(c) = self.cmp() {
            return Ok(NumTest::Cmp(c, self.number()?));
        }
        if self.peek_word("in") {
            self.pos += 1;
            let column = self.column();
            let range = self.word("a range LOW..HIGH, e.g. 200..299")?;
            let bad = |found: &str| CheckError {
                column,
                expected: "a range LOW..HIGH of numbers, e.g. 200..299".into(),
                found: format!("{found:?}"),
            };
            let (lo, hi) = range.split_once("..").ok_or_else(|| bad(&range))?;
            let (Ok(lo), Ok(hi)) = (lo.parse::<f64>(), hi.parse::<f64>()) else {
                return Err(bad(&range));
            };
            if lo > hi {
                return Err(bad(&range));
            }
            return Ok(NumTest::In(lo, hi));
        }
        self.fail("a comparison (==, !=, <, <=, >, >=) or 'in LOW..HIGH'")
    }

    fn text_test(&mut self) -> Result<TextTest, CheckError> {
        if self.peek_word("contains") {
            self.pos += 1;
            return Ok(TextTest::Contains(self.text()?));
        }
        if self.peek_word("matches") {
            self.pos += 1;
            let column = self.column();
            let re = self.text()?;
            if let Err(e) = regex::Regex::new(&re) {
                return Err(CheckError {
                    column,
                    expected: "a valid regular expression".into(),
                    found: format!("{re:?} ({})", e.to_string().lines().last().unwrap_or("")),
                });
            }
            return Ok(TextTest::Matches(re));
        }
        let at = self.pos;
        match self.cmp() {
            Some(Cmp::Eq) => Ok(TextTest::Eq(self.text()?)),
            Some(Cmp::Ne) => Ok(TextTest::Ne(self.text()?)),
            _ => {
                self.pos = at;
                self.fail("contains, matches, == or !=")
            }
        }
    }

    fn json_value(&mut self) -> Result<serde_json::Value, CheckError> {
        match self.next() {
            Some(Tok::Quoted(s)) => Ok(serde_json::Value::String(s)),
            Some(Tok::Word(w)) => {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&w) {
                    if !v.is_object() && !v.is_array() {
                        return Ok(v);
                    }
                }
                self.pos -= 1;
                self.fail("a JSON value: a number, true, false, null or \"text\"")
            }
            _ => {
                self.pos -= 1;
                self.fail("a JSON value: a number, true, false, null or \"text\"")
            }
        }
    }
}

impl Check {
    /// Parses `[NAME:] EXPR`.
    pub fn parse(text: &str) -> Result<Check, CheckError> {
        let mut lx = lex(text)?;
        let mut name = None;
        // `login_ok: status == 200`: a first word ending in ':' names the check.
        if let Some((_, Tok::Word(w))) = lx.toks.first() {
            if let Some(n) = w.strip_suffix(':') {
                if n.is_empty() {
                    return lx.fail("a check name before ':'");
                }
                name = Some(n.to_string());
                lx.pos = 1;
            }
        }
        let subject = lx.word("status, latency, header, body, json or grpc-status")?;
        let expr = match subject.to_ascii_lowercase().as_str() {
            "status" => Expr::Status(lx.num_test()?),
            "latency" => {
                let Some(c) = lx.cmp() else {
                    return lx.fail("a comparison (==, !=, <, <=, >, >=)");
                };
                let column = lx.column();
                let d = lx.word("a duration such as 200ms")?;
                let d = crate::text::parse_duration(&d).map_err(|_| CheckError {
                    column,
                    expected: "a duration such as 200ms, 1s or 1500us".into(),
                    found: format!("{d:?}"),
                })?;
                Expr::Latency(c, d)
            }
            "header" => {
                let name = lx.word("a header name")?.to_ascii_lowercase();
                let test = if lx.peek_word("exists") {
                    lx.pos += 1;
                    HeaderTest::Exists
                } else if lx.peek_word("absent") {
                    lx.pos += 1;
                    HeaderTest::Absent
                } else {
                    let at = lx.pos;
                    match lx.text_test() {
                        Ok(t) => HeaderTest::Text(t),
                        Err(_) if lx.pos == at => {
                            return lx.fail("exists, absent, contains, matches, == or !=")
                        }
                        Err(e) => return Err(e),
                    }
                };
                Expr::Header(name, test)
            }
            "body" => {
                if lx.peek_word("size") {
                    lx.pos += 1;
                    Expr::BodySize(lx.num_test()?)
                } else {
                    let at = lx.pos;
                    match lx.text_test() {
                        Ok(t) => Expr::Body(t),
                        Err(_) if lx.pos == at => {
                            return lx.fail("size, contains, matches, == or !=")
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
            "json" => {
                let column = lx.column();
                let pointer = match lx.next() {
                    Some(Tok::Word(p) | Tok::Quoted(p)) if p.is_empty() || p.starts_with('/') => p,
                    _ => {
                        lx.pos -= 1;
                        return Err(CheckError {
                            column,
                            expected: "a JSON pointer (RFC 6901) such as /items/0/id".into(),
                            found: lx.found(),
                        });
                    }
                };
                let test = if lx.peek_word("exists") {
                    lx.pos += 1;
                    JsonTest::Exists
                } else if lx.peek_word("absent") {
                    lx.pos += 1;
                    JsonTest::Absent
                } else if lx.peek_word("length") {
                    lx.pos += 1;
                    JsonTest::Length(lx.num_test()?)
                } else {
                    match lx.cmp() {
                        Some(Cmp::Eq) => JsonTest::Eq(lx.json_value()?),
                        Some(Cmp::Ne) => JsonTest::Ne(lx.json_value()?),
                        Some(c) => JsonTest::Num(c, lx.number()?),
                        None => return lx.fail("exists, absent, length, or a comparison"),
                    }
                };
                Expr::Json(pointer, test)
            }
            "grpc-status" | "grpc_status" => {
                let at = lx.pos;
                let eq = match lx.cmp() {
                    Some(Cmp::Eq) => true,
                    Some(Cmp::Ne) => false,
                    _ => {
                        lx.pos = at;
                        return lx.fail("== or != and a gRPC status, e.g. grpc-status == OK");
                    }
                };
                let column = lx.column();
                let code = lx.text()?;
                let known = GRPC_CODES
                    .iter()
                    .position(|n| n.eq_ignore_ascii_case(&code))
                    .map(|i| i as u32)
                    .or_else(|| code.parse::<u32>().ok());
                let Some(code) = known else {
                    return Err(CheckError {
                        column,
                        expected: "a gRPC status: a name (OK, UNAVAILABLE, ...) or a number".into(),
                        found: format!("{code:?}"),
                    });
                };
                Expr::GrpcStatus(eq, code)
            }
            _ => {
                lx.pos -= 1;
                return lx.fail("status, latency, header, body, json or grpc-status");
            }
        };
        if lx.pos < lx.toks.len() {
            return lx.fail("the end of the check");
        }
        let body_text = if name.is_some() {
            text.trim_start()
                .split_once(':')
                .map_or(text, |(_, rest)| rest)
                .trim()
        } else {
            text.trim()
        };
        Ok(Check {
            name: name.unwrap_or_else(|| body_text.to_string()),
            text: text.trim().to_string(),
            expr,
        })
    }

    pub fn needs_response(&self) -> bool {
        self.expr.needs_response()
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Check {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Check {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Check::parse(&text)
            .map_err(|e| serde::de::Error::custom(format!("check {text:?}: {e} ({CHECK_FORMS})")))
    }
}

impl schemars::JsonSchema for Check {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Check".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": format!("A response check: {CHECK_FORMS}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        let ok = |t: &str| Check::parse(t).unwrap_or_else(|e| panic!("{t}: {e}"));
        assert_eq!(
            ok("status == 200").expr,
            Expr::Status(NumTest::Cmp(Cmp::Eq, 200.0))
        );
        assert_eq!(
            ok("status in 200..299").expr,
            Expr::Status(NumTest::In(200.0, 299.0))
        );
        assert_eq!(
            ok("body contains \"ok\"").expr,
            Expr::Body(TextTest::Contains("ok".into()))
        );
        assert_eq!(
            ok("header Content-Type contains json").expr,
            Expr::Header(
                "content-type".into(),
                HeaderTest::Text(TextTest::Contains("json".into()))
            )
        );
        assert_eq!(
            ok("json /items/0/id exists").expr,
            Expr::Json("/items/0/id".into(), JsonTest::Exists)
        );
        assert_eq!(
            ok("json /items length > 0").expr,
            Expr::Json(
                "/items".into(),
                JsonTest::Length(NumTest::Cmp(Cmp::Gt, 0.0))
            )
        );
        assert_eq!(
            ok("json /ok == true").expr,
            Expr::Json("/ok".into(), JsonTest::Eq(serde_json::Value::Bool(true)))
        );
        assert_eq!(
            ok("json /name == \"a b\"").expr,
            Expr::Json("/name".into(), JsonTest::Eq("a b".into()))
        );
        assert_eq!(
            ok("body size < 1024").expr,
            Expr::BodySize(NumTest::Cmp(Cmp::Lt, 1024.0))
        );
        assert_eq!(
            ok("latency <= 200ms").expr,
            Expr::Latency(Cmp::Le, Duration::from_millis(200))
        );
        let named = ok("login_ok: status == 200");
        assert_eq!(named.name, "login_ok");
        assert_eq!(named.text, "login_ok: status == 200");
        assert_eq!(ok("  status == 200 ").name, "status == 200");
        assert!(!ok("status == 200").needs_response());
        assert!(ok("body matches \"^o.$\"").needs_response());
        assert_eq!(ok("grpc-status == OK").expr, Expr::GrpcStatus(true, 0));
        assert_eq!(
            ok("grpc-status != unavailable").expr,
            Expr::GrpcStatus(false, 14)
        );
        assert_eq!(ok("grpc_status == 3").expr, Expr::GrpcStatus(true, 3));
        assert!(ok("grpc-status == OK").needs_response());
    }

    #[test]
    fn errors_name_the_column_and_what_was_expected() {
        let err = |t: &str| Check::parse(t).unwrap_err();
        let e = err("status = 200");
        assert_eq!(e.column, 8, "{e}");
        assert!(e.expected.contains("comparison"), "{e}");
        let e = err("stauts == 200");
        assert_eq!((e.column, e.found.as_str()), (1, "\"stauts\""), "{e}");
        let e = err("status in 299..200");
        assert_eq!(e.column, 11, "{e}");
        let e = err("json items exists");
        assert_eq!(e.column, 6, "{e}");
        assert!(e.expected.contains("pointer"), "{e}");
        let e = err("body contains \"ok");
        assert_eq!(e.column, 15, "{e}");
        let e = err("status == 200 extra");
        assert_eq!((e.column, e.found.as_str()), (15, "\"extra\""), "{e}");
        let e = err("body matches \"(\"");
        assert!(e.expected.contains("regular expression"), "{e}");
        let e = err("grpc-status == FINE");
        assert_eq!((e.column, e.found.as_str()), (16, "\"FINE\""), "{e}");
        let e = err("grpc-status < 3");
        assert_eq!(e.column, 13, "{e}");
        let e = err("latency < soon");
        assert_eq!(e.column, 11, "{e}");
        let e = err("json /a ==");
        assert_eq!(
            (e.column, e.found.as_str()),
            (11, "the end of the check"),
            "{e}"
        );
    }

    #[test]
    fn round_trips_as_text() {
        let c = Check::parse("ok: json /ok == true").unwrap();
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, "\"ok: json /ok == true\"");
        let back: Check = serde_json::from_str(&json).unwrap();
        assert_eq!(back, c);
        let bad = serde_json::from_str::<Check>("\"status ~ 1\"").unwrap_err();
        assert!(bad.to_string().contains("column 8"), "{bad}");
    }
}
