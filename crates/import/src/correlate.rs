//! Correlation: a value a request sends that an earlier response returned (a token, an id,
//! a CSRF field) becomes an extraction on that earlier step and `{{var}}` where it is sent.
//! Values the client sent first (a user name echoed back) are not correlated: they came
//! from the client, not the server.

use crate::plan::StepDoc;
use crate::values::{html_candidates, json_candidates, replace_bounded, var_name, Candidate};

/// A value learned from a response.
#[derive(Debug)]
struct Learned {
    candidate: Candidate,
    /// Index (in the steps) of the step whose response holds it.
    step: usize,
    /// The variable, once a later request used it.
    var: Option<String>,
    uses: usize,
}

#[derive(Debug, Default)]
pub struct Correlator {
    learned: Vec<Learned>,
    /// What requests sent so far (URLs, bodies, header values), for "the client sent it".
    sent: String,
    cookies_set: Vec<String>,
    names: Vec<String>,
}

impl Correlator {
    /// Notes what a request sent.
    pub fn sent(&mut self, url: &url::Url, body: Option<&str>, headers: &[(String, String)]) {
        self.sent.push('\n');
        self.sent.push_str(url.as_str());
        if let Some(b) = body {
            self.sent.push('\n');
            self.sent.push_str(b);
        }
        for (_, v) in headers {
            self.sent.push('\n');
            self.sent.push_str(v);
        }
    }

    /// Learns the values the response of step `step` carries.
    pub fn learn(&mut self, step: usize, body: Option<&str>, headers: &[(String, String)]) {
        let mut found = Vec::new();
        if let Some(text) = body {
            match serde_json::from_str::<serde_json::Value>(text) {
                Ok(v) => found.extend(json_candidates(&v)),
                Err(_) => found.extend(html_candidates(text)),
            }
        }
        for (name, value) in headers {
            found.extend(self.header_candidate(name, value));
        }
        for c in found {
            let client_sent = replace_bounded(&self.sent, &c.value, "").1 > 0;
            if !client_sent {
                self.learned.push(Learned {
                    candidate: c,
                    step,
                    var: None,
                    uses: 0,
                });
            }
        }
    }

    fn header_candidate(&mut self, name: &str, value: &str) -> Option<Candidate> {
        let lower = name.to_ascii_lowercase();
        if lower == "set-cookie" {
            let (cookie, rest) = value.split_once('=')?;
            let v = rest.split(';').next().unwrap_or("").trim();
            let cookie = cookie.trim().to_string();
            self.cookies_set.push(cookie.clone());
            return (v.len() >= 6).then(|| Candidate {
                value: v.to_string(),
                extract: format!("cookie {cookie}"),
                hint: var_name(&cookie),
                numeric: false,
            });
        }
        let wanted = lower == "location" || lower.contains("token") || lower.contains("csrf");
        (wanted && value.len() >= 6).then(|| Candidate {
            value: value.to_string(),
            extract: format!("header {name}"),
            hint: var_name(&lower),
            numeric: false,
        })
    }

    /// Whether every cookie of a `Cookie` header was set by an earlier response (so a
    /// cookie jar sends it).
    pub fn all_cookies_set(&self, header: &str) -> bool {
        header.split(';').all(|pair| {
            let name = pair.split('=').next().unwrap_or("").trim();
            !name.is_empty() && self.cookies_set.iter().any(|c| c == name)
        })
    }

    /// The variable for learned value `i`, named on first use.
    fn use_var(&mut self, i: usize) -> String {
        self.learned[i].uses += 1;
        if let Some(v) = &self.learned[i].var {
            return format!("{{{{{v}}}}}");
        }
        let base = self.learned[i].candidate.hint.clone();
        let mut name = base.clone();
        let mut n = 1;
        while self.names.contains(&name) {
            n += 1;
            name = format!("{base}_{n}");
        }
        self.names.push(name.clone());
        self.learned[i].var = Some(name.clone());
        format!("{{{{{name}}}}}")
    }

    /// The learned value equal to `text` (numbers only when `whole`): from the latest
    /// response that holds it, and there the first place (a login's JSON token before the
    /// cookie carrying the same value).
    fn find(&self, text: &str, whole: bool) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (i, l) in self.learned.iter().enumerate() {
            let fits = l.candidate.value == text && (whole || !l.candidate.numeric);
            if fits && best.is_none_or(|b| self.learned[b].step < l.step) {
                best = Some(i);
            }
        }
        best
    }

    /// A URL's path segments and query values that equal a learned value, as `{{var}}`.
    pub fn apply_path(&mut self, url: &str) -> String {
        let (path, query) = match url.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (url, None),
        };
        let mut segments = Vec::new();
        for seg in path.split('/') {
            segments.push(match self.find(seg, true) {
                Some(i) if !seg.is_empty() => self.use_var(i),
                _ => self.apply_text(seg),
            });
        }
        let mut out = segments.join("/");
        if let Some(q) = query {
            let pairs: Vec<String> = q
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((k, v)) => match self.find(v, true) {
                        Some(i) if !v.is_empty() => format!("{k}={}", self.use_var(i)),
                        _ => format!("{k}={}", self.apply_text(v)),
                    },
                    None => pair.to_string(),
                })
                .collect();
            out = format!("{out}?{}", pairs.join("&"));
        }
        out
    }

    /// Learned strings (not numbers: too easily a coincidence in free text) in `text`.
    pub fn apply_text(&mut self, text: &str) -> String {
        let mut out = text.to_string();
        let values: Vec<String> = self
            .learned
            .iter()
            .filter(|l| !l.candidate.numeric)
            .map(|l| l.candidate.value.clone())
            .collect();
        for value in values {
            if replace_bounded(&out, &value, "").1 == 0 {
                continue;
            }
            let Some(i) = self.find(&value, false) else {
                continue;
            };
            let var = self.use_var(i);
            out = replace_bounded(&out, &value, &var).0;
        }
        out
    }

    /// Adds each used value's extraction to the step whose response holds it.
    pub fn place_extractions(&self, steps: &mut [StepDoc]) {
        for l in &self.learned {
            if let (Some(var), Some(StepDoc::Request(r))) = (&l.var, steps.get_mut(l.step)) {
                r.extract.push((var.clone(), l.candidate.extract.clone()));
            }
        }
    }

    /// One sentence per extraction, for the warnings.
    pub fn report(&self) -> Vec<String> {
        self.learned
            .iter()
            .filter_map(|l| {
                let var = l.var.as_ref()?;
                Some(format!(
                    "a recorded value reused by {} later request(s) is extracted as {var} ({}) \
                     and sent as {{{{{var}}}}}",
                    l.uses, l.candidate.extract
                ))
            })
            .collect()
    }
}
