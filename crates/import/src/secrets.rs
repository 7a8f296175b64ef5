//! Secrets found in a document (cookies, `Authorization`, API keys): replaced by
//! `{{csv NAME}}` columns of a data file, never written into the plan unless asked.

/// Header names whose values are credentials.
const SECRET_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
    "api-key",
    "x-auth-token",
    "x-csrf-token",
    "x-xsrf-token",
];

/// Whether a header's value is a credential.
pub fn is_secret_header(name: &str) -> bool {
    SECRET_HEADERS.contains(&name.to_ascii_lowercase().as_str())
}

/// The secrets of one import, as data-file columns.
#[derive(Debug, Default)]
pub struct Secrets {
    keep: bool,
    columns: Vec<(String, String)>,
    warnings: Vec<String>,
}

impl Secrets {
    pub fn new(keep: bool) -> Secrets {
        Secrets {
            keep,
            ..Default::default()
        }
    }

    /// The text to write for a secret `value` found in `place` (`the Authorization header
    /// of GET /x`): the value itself when kept, else `{{csv NAME}}`, the same column for the
    /// same value.
    pub fn replace(&mut self, hint: &str, value: &str, place: &str) -> String {
        if self.keep {
            return value.to_string();
        }
        if let Some((name, _)) = self.columns.iter().find(|(_, v)| v == value) {
            return format!("{{{{csv {name}}}}}");
        }
        let base: String = hint
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        let mut name = base.clone();
        let mut n = 1;
        while self.columns.iter().any(|(c, _)| *c == name) {
            n += 1;
            name = format!("{base}_{n}");
        }
        self.warnings.push(format!(
            "{place}: a secret, replaced by {{{{csv {name}}}}} (fill in the data file, or import \
             with --keep-secrets)"
        ));
        self.columns.push((name.clone(), value.to_string()));
        format!("{{{{csv {name}}}}}")
    }

    /// The columns and the warnings, once the import is done.
    pub fn finish(self) -> (Vec<(String, String)>, Vec<String>) {
        (self.columns, self.warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_becomes_one_column_and_is_kept_only_when_asked() {
        let mut s = Secrets::new(false);
        assert_eq!(
            s.replace("Authorization", "Bearer x", "GET /a"),
            "{{csv authorization}}"
        );
        assert_eq!(
            s.replace("Authorization", "Bearer x", "GET /b"),
            "{{csv authorization}}"
        );
        assert_eq!(
            s.replace("Authorization", "Bearer y", "GET /c"),
            "{{csv authorization_2}}"
        );
        let (cols, warnings) = s.finish();
        assert_eq!(cols.len(), 2);
        assert_eq!(warnings.len(), 2);
        assert!(warnings[0].contains("GET /a") && !warnings[0].contains("Bearer x"));
        let mut kept = Secrets::new(true);
        assert_eq!(kept.replace("Cookie", "a=b", "GET /"), "a=b");
        assert!(is_secret_header("COOKIE") && !is_secret_header("Accept"));
    }
}
