//! curl command lines (as browsers' "Copy as cURL" and people write them) into the request
//! curl would send, and into a single-request plan.
//!
//! The request is what curl puts on the wire, less curl's own defaults (`User-Agent: curl/…`,
//! `Accept: */*`): method, path and query as curl normalizes them, the headers the options
//! imply (`-d`'s form type, `--json`'s two, `-u`'s Basic credentials, `-b`'s Cookie,
//! `--compressed`'s Accept-Encoding) and the body bytes. An option that is not known is an
//! error naming it: a silently ignored `--proxy` or `--data-urlencode` would load something
//! else than the user meant.

use base64::Engine as _;

use crate::plan::{PlanBody, PlanDoc, RequestDoc};
use crate::secrets::{is_secret_header, Secrets};
use crate::{ImportError, Imported, Options};

mod words;
pub use words::split;

/// One piece of a `-d`-style body, before files are read.
#[derive(Debug, Clone, PartialEq)]
pub enum Data {
    /// Text as given.
    Text(String),
    /// A file's bytes: `strip` removes CR and LF as `-d @FILE` does (`--data-binary` not).
    File { path: String, strip: bool },
    /// `--data-urlencode`: `name` (may be empty) and the text or file to percent-encode.
    UrlEncode {
        name: Option<String>,
        value: Box<Data>,
    },
}

/// One `-F` part.
#[derive(Debug, Clone, PartialEq)]
pub enum FormPart {
    Text {
        name: String,
        value: String,
    },
    /// `name=@FILE`: the file as an upload (with its name and a guessed type).
    File {
        name: String,
        path: String,
    },
}

/// What the body is made of.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum BodySource {
    #[default]
    None,
    /// `-d`/`--data*` pieces, joined with `&`.
    Data(Vec<Data>),
    /// `--json` pieces, concatenated.
    Json(Vec<Data>),
    /// `-F` parts, as multipart/form-data.
    Form(Vec<FormPart>),
}

/// The request a curl command sends, and the connection options that shape it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CurlRequest {
    pub method: String,
    /// The URL as curl normalizes it (`..` squashed, fragment dropped).
    pub url: String,
    /// Headers in curl's order, `Content-Type` last when the body implies it.
    pub headers: Vec<(String, String)>,
    pub body: BodySource,
    pub insecure: bool,
    pub http2: bool,
    pub cacert: Option<String>,
    pub cert: Option<String>,
    pub key: Option<String>,
    /// `-L`: loadmark does not follow redirects; said in a warning.
    pub follow: bool,
    /// Options that change nothing on the wire (`-s`, `-v`, `-o FILE`), for the warnings.
    pub ignored: Vec<String>,
}

/// The boundary of `-F` bodies: fixed, so a plan's body is the same every run (curl draws a
/// random one, 16 hex digits after 24 dashes: this one has the same length, so the
/// Content-Length is curl's too).
pub const BOUNDARY: &str = "------------------------loadmark00000000";

/// Options taking a value.
const WITH_VALUE: &[&str] = &[
    "-X",
    "--request",
    "-H",
    "--header",
    "-d",
    "--data",
    "--data-ascii",
    "--data-raw",
    "--data-binary",
    "--data-urlencode",
    "--json",
    "-u",
    "--user",
    "-b",
    "--cookie",
    "-F",
    "--form",
    "--form-string",
    "-A",
    "--user-agent",
    "-e",
    "--referer",
    "--url",
    "--cacert",
    "--cert",
    "--key",
    "-E",
    "-o",
    "--output",
    "-w",
    "--write-out",
    "-m",
    "--max-time",
    "--connect-timeout",
    "--retry",
    "--retry-delay",
    "--retry-max-time",
];

/// Options without a value that only change what curl prints or how it waits.
const QUIET: &[&str] = &[
    "-s",
    "--silent",
    "-S",
    "--show-error",
    "-v",
    "--verbose",
    "-i",
    "--include",
    "-f",
    "--fail",
    "--fail-with-body",
    "-N",
    "--no-buffer",
    "-#",
    "--progress-bar",
    "-g",
    "--globoff",
    "--path-as-is",
    "--http1.1",
    "-O",
    "--remote-name",
    "-n",
    "--netrc",
    "--no-progress-meter",
];

/// Parses a command line (`curl URL -H ...`), as one string.
pub fn parse_command(command: &str) -> Result<CurlRequest, ImportError> {
    parse(&split(command)?)
}

/// Parses curl's arguments (the leading `curl` may be there or not).
pub fn parse(words: &[String]) -> Result<CurlRequest, ImportError> {
    let words = match words.first() {
        Some(w) if w == "curl" || w.ends_with("/curl") || w == "curl.exe" => &words[1..],
        _ => words,
    };
    let mut st = State::default();
    let mut i = 0;
    while i < words.len() {
        let word = &words[i];
        i += 1;
        if !word.starts_with('-') || word == "-" {
            st.set_url(word)?;
            continue;
        }
        for (opt, attached) in expand(word) {
            let value = if WITH_VALUE.contains(&opt.as_str()) {
                match attached {
                    Some(v) => Some(v),
                    None => {
                        let v = words
                            .get(i)
                            .cloned()
                            .ok_or_else(|| ImportError::Curl(format!("{opt} needs a value")))?;
                        i += 1;
                        Some(v)
                    }
                }
            } else {
                None
            };
            st.option(&opt, value)?;
        }
    }
    st.finish()
}

/// One word as options: `--long`, `-X`, `-XPOST` (value attached) or `-sSL` (flags).
fn expand(word: &str) -> Vec<(String, Option<String>)> {
    if word.starts_with("--") {
        return vec![(word.to_string(), None)];
    }
    let mut out = Vec::new();
    let chars: Vec<char> = word.chars().skip(1).collect();
    for (k, c) in chars.iter().enumerate() {
        let opt = format!("-{c}");
        if WITH_VALUE.contains(&opt.as_str()) {
            let rest: String = chars[k + 1..].iter().collect();
            out.push((opt, (!rest.is_empty()).then_some(rest)));
            return out;
        }
        out.push((opt, None));
    }
    out
}

#[derive(Default)]
struct State {
    req: CurlRequest,
    url: Option<String>,
    explicit_method: Option<String>,
    get: bool,
    head: bool,
    /// Headers from -H, in order; `None` value removes a default (`-H 'Accept:'`).
    user_headers: Vec<(String, Option<String>)>,
    implied: Vec<(String, String)>,
}

impl State {
    fn set_url(&mut self, url: &str) -> Result<(), ImportError> {
        if self.url.is_some() {
            return Err(ImportError::Curl(format!(
                "a second URL {url:?}: loadmark loads one URL per command"
            )));
        }
        self.url = Some(url.to_string());
        Ok(())
    }

    fn option(&mut self, opt: &str, value: Option<String>) -> Result<(), ImportError> {
        let v = value.unwrap_or_default();
        match opt {
            "-X" | "--request" => self.explicit_method = Some(v),
            "-H" | "--header" => self.header(&v)?,
            "-d" | "--data" | "--data-ascii" => self.data(data_arg(&v, true)),
            "--data-raw" => self.data(Data::Text(v)),
            "--data-binary" => self.data(data_arg(&v, false)),
            "--data-urlencode" => self.data(urlencode_arg(&v)),
            "--json" => self.json(data_arg(&v, false))?,
            "-F" | "--form" => self.form(&v, true)?,
            "--form-string" => self.form(&v, false)?,
            "-u" | "--user" => self.user(&v)?,
            "-b" | "--cookie" => self.cookie(&v)?,
            "-A" | "--user-agent" => self.implied.push(("User-Agent".into(), v)),
            "-e" | "--referer" => self.implied.push(("Referer".into(), v)),
            "--url" => self.set_url(&v)?,
            "-G" | "--get" => self.get = true,
            "-I" | "--head" => self.head = true,
            "-k" | "--insecure" => self.req.insecure = true,
            "--http2" | "--http2-prior-knowledge" => self.req.http2 = true,
            "--compressed" => self
                .implied
                .push(("Accept-Encoding".into(), "deflate, gzip, br, zstd".into())),
            "--cacert" => self.req.cacert = Some(v),
            "--cert" | "-E" => self.req.cert = Some(cert_path(&v)),
            "--key" => self.req.key = Some(v),
            "-L" | "--location" => self.req.follow = true,
            "-o" | "--output" | "-w" | "--write-out" | "-m" | "--max-time"
            | "--connect-timeout" | "--retry" | "--retry-delay" | "--retry-max-time" => {
                self.req.ignored.push(format!("{opt} {v}"))
            }
            _ if QUIET.contains(&opt) => self.req.ignored.push(opt.to_string()),
            _ => {
                return Err(ImportError::Curl(format!(
                    "unknown option {opt}: loadmark does not know what it would change in the \
                     request, so it refuses it rather than ignore it"
                )))
            }
        }
        Ok(())
    }

    fn header(&mut self, v: &str) -> Result<(), ImportError> {
        if v.starts_with('@') {
            return Err(ImportError::Curl(format!(
                "-H {v}: headers from a file are not read; give each with -H"
            )));
        }
        if let Some(name) = v.strip_suffix(';').filter(|n| !n.contains(':')) {
            // `-H 'Name;'` sends the header with an empty value.
            self.user_headers
                .push((name.trim().to_string(), Some(String::new())));
            return Ok(());
        }
        let (name, value) = v
            .split_once(':')
            .ok_or_else(|| ImportError::Curl(format!("-H {v:?}: expected 'Name: value'")))?;
        let value = value.trim();
        // `-H 'Name:'` removes a header curl would add.
        let value = (!value.is_empty()).then(|| value.to_string());
        self.user_headers.push((name.trim().to_string(), value));
        Ok(())
    }

    fn data(&mut self, d: Data) {
        match &mut self.req.body {
            BodySource::Data(list) => list.push(d),
            _ => self.req.body = BodySource::Data(vec![d]),
        }
    }

    fn json(&mut self, d: Data) -> Result<(), ImportError> {
        match &mut self.req.body {
            BodySource::Json(list) => list.push(d),
            BodySource::None => self.req.body = BodySource::Json(vec![d]),
            _ => {
                return Err(ImportError::Curl(
                    "--json with -d or -F: give one body".into(),
                ))
            }
        }
        Ok(())
    }

    fn form(&mut self, v: &str, files: bool) -> Result<(), ImportError> {
        let (name, value) = v
            .split_once('=')
            .ok_or_else(|| ImportError::Curl(format!("-F {v:?}: expected name=value")))?;
        let part = match value.strip_prefix('@') {
            Some(path) if files => {
                if path.contains(';') {
                    return Err(ImportError::Curl(format!(
                        "-F {v:?}: ;type= and ;filename= are not supported"
                    )));
                }
                FormPart::File {
                    name: name.into(),
                    path: path.into(),
                }
            }
            _ if files && value.starts_with('<') => {
                return Err(ImportError::Curl(format!(
                    "-F {v:?}: a part read from a file (<FILE) is not supported; use @FILE"
                )))
            }
            _ => FormPart::Text {
                name: name.into(),
                value: value.into(),
            },
        };
        match &mut self.req.body {
            BodySource::Form(list) => list.push(part),
            BodySource::None => self.req.body = BodySource::Form(vec![part]),
            _ => {
                return Err(ImportError::Curl(
                    "-F with -d or --json: give one body".into(),
                ))
            }
        }
        Ok(())
    }

    fn user(&mut self, v: &str) -> Result<(), ImportError> {
        if !v.contains(':') {
            return Err(ImportError::Curl(format!(
                "-u {v}: without ':PASSWORD' curl asks for it; give USER:PASSWORD"
            )));
        }
        let token = base64::engine::general_purpose::STANDARD.encode(v);
        self.implied
            .insert(0, ("Authorization".into(), format!("Basic {token}")));
        Ok(())
    }

    fn cookie(&mut self, v: &str) -> Result<(), ImportError> {
        if !v.contains('=') {
            return Err(ImportError::Curl(format!(
                "-b {v}: a cookie file is not read; give the cookies as -b 'name=value; ...'"
            )));
        }
        self.implied.push(("Cookie".into(), v.to_string()));
        Ok(())
    }

    fn finish(mut self) -> Result<CurlRequest, ImportError> {
        let url = self
            .url
            .take()
            .ok_or_else(|| ImportError::Curl("no URL given".into()))?;
        let mut parsed = url::Url::parse(&url)
            .or_else(|_| url::Url::parse(&format!("http://{url}")))
            .map_err(|e| ImportError::Curl(format!("URL {url:?}: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ImportError::Curl(format!(
                "URL {url:?}: only http:// and https:// are loaded"
            )));
        }
        parsed.set_fragment(None);
        let mut req = std::mem::take(&mut self.req);
        if self.get {
            // -G: the data goes into the query, the request has no body.
            if let BodySource::Data(list) = std::mem::take(&mut req.body) {
                let query = join_data_text(&list)?;
                let q = match parsed.query() {
                    Some(old) if !old.is_empty() => format!("{old}&{query}"),
                    _ => query,
                };
                parsed.set_query(Some(&q));
            }
        }
        req.url = parsed.to_string();
        req.method = self.method(&req.body);
        req.headers = self.headers(&req.body);
        Ok(req)
    }

    fn method(&self, body: &BodySource) -> String {
        if let Some(m) = &self.explicit_method {
            return m.clone();
        }
        match body {
            _ if self.head => "HEAD".into(),
            BodySource::None => "GET".into(),
            _ if self.get => "GET".into(),
            _ => "POST".into(),
        }
    }

    /// The headers in curl's order: -u's Authorization, the user's -H, then what the options
    /// imply (Cookie, Content-Type), a user's header of the same name replacing an implied one.
    fn headers(&self, body: &BodySource) -> Vec<(String, String)> {
        let mut implied = self.implied.clone();
        match body {
            BodySource::Data(_) => implied.push((
                "Content-Type".into(),
                "application/x-www-form-urlencoded".into(),
            )),
            BodySource::Json(_) => {
                implied.push(("Content-Type".into(), "application/json".into()));
                implied.push(("Accept".into(), "application/json".into()));
            }
            BodySource::Form(_) => implied.push((
                "Content-Type".into(),
                format!("multipart/form-data; boundary={BOUNDARY}"),
            )),
            BodySource::None => {}
        }
        let named = |n: &str| {
            self.user_headers
                .iter()
                .any(|(u, _)| u.eq_ignore_ascii_case(n))
        };
        let mut out: Vec<(String, String)> = Vec::new();
        for (n, v) in implied.iter().filter(|(n, _)| !named(n)) {
            out.push((n.clone(), v.clone()));
        }
        for (n, v) in &self.user_headers {
            if let Some(v) = v {
                out.push((n.clone(), v.clone()));
            }
        }
        out
    }
}

/// `-d VALUE`: `@FILE` reads a file (`@-`, standard input, is not supported: refused later
/// when read), anything else is text.
fn data_arg(v: &str, strip: bool) -> Data {
    match v.strip_prefix('@') {
        Some(path) => Data::File {
            path: path.into(),
            strip,
        },
        None => Data::Text(v.into()),
    }
}

/// `--data-urlencode`: `content`, `=content`, `name=content`, `@file`, `name@file`.
fn urlencode_arg(v: &str) -> Data {
    let eq = v.find('=');
    let at = v.find('@');
    let (name, value) = match (eq, at) {
        (Some(e), Some(a)) if a < e => (&v[..a], data_arg(&v[a..], false)),
        (Some(e), _) => (&v[..e], Data::Text(v[e + 1..].into())),
        (None, Some(a)) => (&v[..a], data_arg(&v[a..], false)),
        (None, None) => ("", Data::Text(v.into())),
    };
    Data::UrlEncode {
        name: (!name.is_empty()).then(|| name.to_string()),
        value: Box::new(value),
    }
}

/// `--cert FILE[:PASSWORD]`: the file (a password is not supported, and not kept).
fn cert_path(v: &str) -> String {
    v.split(':').next().unwrap_or(v).to_string()
}

/// Percent-encoding as curl's `--data-urlencode` does: all but ASCII letters, digits and
/// `-._~`, a space as `+` (what the curl corpus test saw curl 7.88 send).
pub(crate) fn urlencode(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|&b| {
            if b == b' ' {
                "+".to_string()
            } else if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The text of data pieces that need no file (for -G's query).
fn join_data_text(list: &[Data]) -> Result<String, ImportError> {
    let bytes = join_data(list, &|p: &str| {
        Err(format!(
            "-G with @{p}: a file's data in the URL is not supported"
        ))
    })?;
    String::from_utf8(bytes).map_err(|_| ImportError::Curl("-G data is not UTF-8".into()))
}

/// Joins `-d` pieces with `&`, reading files through `read`.
fn join_data(list: &[Data], read: &Reader<'_>) -> Result<Vec<u8>, ImportError> {
    let mut out = Vec::new();
    for (k, d) in list.iter().enumerate() {
        if k > 0 {
            out.push(b'&');
        }
        out.extend(piece(d, read)?);
    }
    Ok(out)
}

/// Reads a file named in a command (`-d @FILE`); errors are a sentence.
pub type Reader<'a> = dyn Fn(&str) -> Result<Vec<u8>, String> + 'a;

fn piece(d: &Data, read: &Reader<'_>) -> Result<Vec<u8>, ImportError> {
    Ok(match d {
        Data::Text(t) => t.clone().into_bytes(),
        Data::File { path, strip } => {
            let mut bytes = read(path).map_err(ImportError::Curl)?;
            if *strip {
                bytes.retain(|b| *b != b'\r' && *b != b'\n');
            }
            bytes
        }
        Data::UrlEncode { name, value } => {
            let raw = piece(value, read)?;
            match name {
                Some(n) => format!("{n}={}", urlencode(&raw)).into_bytes(),
                None => urlencode(&raw).into_bytes(),
            }
        }
    })
}

impl CurlRequest {
    /// The body bytes, reading the files the command names through `read`.
    pub fn body_bytes(&self, read: &Reader<'_>) -> Result<Option<Vec<u8>>, ImportError> {
        Ok(match &self.body {
            BodySource::None => None,
            BodySource::Data(list) => Some(join_data(list, read)?),
            BodySource::Json(list) => {
                let mut out = Vec::new();
                for d in list {
                    out.extend(piece(d, read)?);
                }
                Some(out)
            }
            BodySource::Form(parts) => Some(multipart(parts, read)?),
        })
    }

    /// The one file that is the whole body as it is (`--data-binary @FILE`), which a plan
    /// can name instead of holding the bytes.
    fn body_file(&self) -> Option<&str> {
        match &self.body {
            BodySource::Data(l) | BodySource::Json(l) => match l.as_slice() {
                [Data::File { path, strip: false }] => Some(path),
                _ => None,
            },
            _ => None,
        }
    }

    /// Sentences about what the plan cannot carry over.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if self.follow {
            w.push("-L: loadmark does not follow redirects; the plan sends the first request only and counts a 3xx as its answer".into());
        }
        if !self.ignored.is_empty() {
            w.push(format!(
                "ignored, as they change nothing in the request: {}",
                self.ignored.join(" ")
            ));
        }
        w
    }
}

/// A multipart/form-data body as curl builds it (with [`BOUNDARY`]).
fn multipart(parts: &[FormPart], read: &Reader<'_>) -> Result<Vec<u8>, ImportError> {
    let mut out = Vec::new();
    for part in parts {
        out.extend(format!("--{BOUNDARY}\r\n").into_bytes());
        match part {
            FormPart::Text { name, value } => {
                out.extend(
                    format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}")
                        .into_bytes(),
                );
            }
            FormPart::File { name, path } => {
                let file = path.rsplit('/').next().unwrap_or(path);
                out.extend(
                    format!(
                        "Content-Disposition: form-data; name=\"{name}\"; filename=\"{file}\"\r\n\
                         Content-Type: {}\r\n\r\n",
                        content_type_of(file)
                    )
                    .into_bytes(),
                );
                out.extend(read(path).map_err(ImportError::Curl)?);
            }
        }
        out.extend(b"\r\n");
    }
    out.extend(format!("--{BOUNDARY}--\r\n").into_bytes());
    Ok(out)
}

/// The type curl gives an uploaded file, by its extension (curl's own short list).
fn content_type_of(file: &str) -> &'static str {
    let ext = file.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("gif") => "image/gif",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("png") => "image/png",
        Some("svg") => "image/svg+xml",
        Some("txt") => "text/plain",
        Some("htm" | "html") => "text/html",
        Some("pdf") => "application/pdf",
        Some("xml") => "application/xml",
        _ => "application/octet-stream",
    }
}

/// A curl command as a single-request plan; `read` reads the files it names (`-d @FILE`).
pub fn import_with(
    command: &str,
    opts: &Options,
    read: &Reader<'_>,
) -> Result<Imported, ImportError> {
    import_words(&split(command)?, opts, read)
}

/// [`import_with`] for commands that name no file.
pub fn import(command: &str, opts: &Options) -> Result<Imported, ImportError> {
    import_with(command, opts, &|p: &str| {
        Err(format!("@{p}: files are not read here"))
    })
}

/// [`import_with`] from the command's words (as a shell passed them).
pub fn import_words(
    words: &[String],
    opts: &Options,
    read: &Reader<'_>,
) -> Result<Imported, ImportError> {
    let req = parse(words)?;
    let url = url::Url::parse(&req.url).map_err(|e| ImportError::Curl(e.to_string()))?;
    let origin = url.origin().ascii_serialization();
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    literal_braces(&req, &path, read)?;
    let mut warnings = req.warnings();
    let mut secrets = Secrets::new(opts.keep_secrets);
    let headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|(n, v)| {
            let v = if is_secret_header(n) {
                secrets.replace(n, v, &format!("the {n} header"))
            } else {
                v.clone()
            };
            (n.clone(), v)
        })
        .collect();
    let (body, body_file) = match req.body_file() {
        Some(f) => (None, Some(f.to_string())),
        None => match req.body_bytes(read)? {
            Some(b) => (
                Some(String::from_utf8(b).map_err(|_| {
                    ImportError::Curl(
                        "the body is not UTF-8 text; send it with --data-binary @FILE".into(),
                    )
                })?),
                None,
            ),
            None => (None, None),
        },
    };
    for (what, file) in [
        ("--cacert", &req.cacert),
        ("--cert", &req.cert),
        ("--key", &req.key),
    ] {
        if let Some(f) = file {
            warnings.push(format!(
                "{what} {f}: plan files take no TLS files; run the plan with `loadmark bench` after `loadmark run --curl` shows it works, or pass {what} to `loadmark run`"
            ));
        }
    }
    let mut load = opts.load();
    load.insecure = req.insecure;
    load.http2 = req.http2;
    let (cols, secret_warnings) = secrets.finish();
    warnings.extend(secret_warnings);
    let plan = PlanDoc {
        name: opts
            .name
            .clone()
            .unwrap_or_else(|| format!("{} {}", req.method, req.url)),
        comments: vec!["Imported from a curl command by `loadmark import curl`.".into()],
        target_name: target_name(&url),
        target_url: origin,
        data: (!cols.is_empty()).then(|| opts.secrets_file.clone()),
        body: PlanBody::Request(RequestDoc {
            method: req.method.clone(),
            url: path,
            headers,
            body,
            body_file,
            ..Default::default()
        }),
        load,
        ..Default::default()
    };
    Ok(Imported {
        plan,
        warnings,
        secrets: cols,
    })
}

/// A URL, header or body holding a literal `{{` cannot be a plan's request: refused, by
/// field (`loadmark run --curl` sends it as it is). A body file that cannot be read here is
/// left to the plan loader.
fn literal_braces(req: &CurlRequest, path: &str, read: &Reader<'_>) -> Result<(), ImportError> {
    let body = req
        .body_bytes(read)
        .ok()
        .flatten()
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    let headers = req
        .headers
        .iter()
        .map(|(n, v)| (format!("{n} header"), v.as_str()));
    let fields = [("URL".to_string(), path)]
        .into_iter()
        .chain(headers)
        .chain(body.as_deref().map(|b| ("body".to_string(), b)));
    match crate::literal::holding(fields) {
        Some(field) => Err(ImportError::Curl(format!(
            "the request's {field} holds a literal `{{{{`, and {}: no plan can send it; `loadmark run --curl` sends it as it is",
            crate::literal::WHY
        ))),
        None => Ok(()),
    }
}

/// The target's name in the plan: the host's name, or `api` for an address.
pub(crate) fn target_name(url: &url::Url) -> String {
    match url.host() {
        Some(url::Host::Domain(d)) => d.to_string(),
        _ => "api".into(),
    }
}

#[cfg(test)]
mod tests;
