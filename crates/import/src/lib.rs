//! Plans from what users already have (issue 41): HAR recordings, curl command lines,
//! OpenAPI documents and Postman collections become loadmark plan files.
//!
//! ```
//! let opts = loadmark_import::Options::default();
//! let out = loadmark_import::curl::import(
//!     "curl -X POST http://127.0.0.1:8080/echo -H 'Content-Type: application/json' -d '{\"a\":1}'",
//!     &opts,
//! )
//! .unwrap();
//! assert!(out.yaml().contains("method: POST"));
//! ```
//!
//! Design decisions:
//! - Pure: documents in, plan text and warnings out; no files, no network. The CLI reads
//!   inputs and writes outputs, so every importer is tested on strings.
//! - One model ([`plan::PlanDoc`]) and one writer: the YAML reads as a person writes it
//!   (block style, defaults left out), and the same model gives the JSON value the YAML must
//!   load back as, which tests compare (the round trip).
//! - Nothing is dropped silently: every header, request, option or script left out or
//!   replaced is named in [`Imported::warnings`].
//! - A recorded or documented `{{` (which plans have no escape for) leaves its request
//!   out, said, or refuses a curl command: never a plan that does not load (`literal`).
//! - Secrets (cookies, `Authorization`, API keys) recorded in a document are not written
//!   into the plan: they become `{{csv NAME}}` columns of a data file the CLI writes with
//!   placeholders ([`Imported::secrets`]), unless [`Options::keep_secrets`] says otherwise.

mod correlate;
pub mod curl;
pub mod har;
mod literal;
pub mod openapi;
pub mod plan;
pub mod postman;
mod secrets;
mod values;

pub use plan::{PlanBody, PlanDoc, RequestDoc, ScenarioDoc, StepDoc};
pub use secrets::Secrets;

/// What every importer is told.
#[derive(Debug, Clone)]
pub struct Options {
    /// Virtual users (scenario; each scenario's in a plan with several) or connections
    /// (single request) [default: 1].
    pub users: usize,
    /// Iterations (scenario, each scenario's) or requests (single request) [default: 1,
    /// when no duration].
    pub iterations: Option<u64>,
    /// Run for this long instead (`30s`; each scenario, from the run's start).
    pub duration: Option<String>,
    /// Write recorded secrets into the plan as they are, instead of `{{csv NAME}}`.
    pub keep_secrets: bool,
    /// The data file secrets go to, relative to the plan (`secrets.csv`).
    pub secrets_file: String,
    /// The plan's name; [default: from the document].
    pub name: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            users: 1,
            iterations: None,
            duration: None,
            keep_secrets: false,
            secrets_file: "secrets.csv".into(),
            name: None,
        }
    }
}

impl Options {
    /// The `load:` section these options ask for.
    pub(crate) fn load(&self) -> plan::LoadDoc {
        plan::LoadDoc {
            users: self.users,
            iterations: match (&self.duration, self.iterations) {
                (Some(_), None) => None,
                (_, n) => Some(n.unwrap_or(1)),
            },
            duration: self.duration.clone(),
            ..Default::default()
        }
    }
}

/// An imported plan.
#[derive(Debug, Clone)]
pub struct Imported {
    pub plan: PlanDoc,
    /// What was dropped, replaced or guessed, one sentence each.
    pub warnings: Vec<String>,
    /// Data-file columns (name, recorded value) the plan reads as `{{csv NAME}}`; the
    /// recorded values are for the user's eyes only when they ask for them.
    pub secrets: Vec<(String, String)>,
}

impl Imported {
    /// The plan as YAML.
    pub fn yaml(&self) -> String {
        self.plan.to_yaml()
    }

    /// The data file the plan reads secrets from: a header line, then one row of
    /// placeholders (`REPLACE-ME`) the user fills in.
    pub fn secrets_csv(&self) -> Option<String> {
        if self.secrets.is_empty() {
            return None;
        }
        let names: Vec<&str> = self.secrets.iter().map(|(n, _)| n.as_str()).collect();
        let values: Vec<&str> = names.iter().map(|_| "REPLACE-ME").collect();
        Some(format!("{}\n{}\n", names.join(","), values.join(",")))
    }
}

/// Why a document could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file is not well-formed JSON or YAML; fix it at the line and column given.
    #[error("{file}:{line}:{column}: not valid {format}: {message}")]
    Syntax {
        file: String,
        format: &'static str,
        line: usize,
        column: usize,
        message: String,
    },
    /// A field is missing or of the wrong kind; the JSON pointer says which.
    #[error("{file}: at {pointer}: {message}")]
    Field {
        file: String,
        pointer: String,
        message: String,
    },
    /// The document is of a version this importer does not read; convert it to a
    /// supported one (`supported` names them).
    #[error("{file}: {what} {found} is not supported (supported: {supported})")]
    Version {
        file: String,
        what: &'static str,
        found: String,
        supported: &'static str,
    },
    /// A curl command line loadmark cannot turn into a request: an unknown option, a
    /// missing value or URL. The message names the option.
    #[error("curl: {0}")]
    Curl(String),
    /// Nothing was left to load after filtering; the message says what was filtered.
    #[error("{0}")]
    Empty(String),
}

impl ImportError {
    pub(crate) fn field(file: &str, pointer: &str, message: impl Into<String>) -> ImportError {
        ImportError::Field {
            file: file.to_string(),
            pointer: if pointer.is_empty() {
                "/".into()
            } else {
                pointer.into()
            },
            message: message.into(),
        }
    }
}

/// Parses JSON with the error's line and column.
pub(crate) fn parse_json(text: &str, file: &str) -> Result<serde_json::Value, ImportError> {
    serde_json::from_str(text).map_err(|e| ImportError::Syntax {
        file: file.to_string(),
        format: "JSON",
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}

/// Parses a YAML or JSON document (JSON is read as JSON, for its exact error positions);
/// YAML mapping keys that are numbers or booleans (`200:` in OpenAPI responses) become
/// strings, as JSON would spell them.
pub(crate) fn parse_yaml_or_json(text: &str, file: &str) -> Result<serde_json::Value, ImportError> {
    if text.trim_start().starts_with('{') {
        return parse_json(text, file);
    }
    let yaml: serde_norway::Value = serde_norway::from_str(text).map_err(|e| {
        let (line, column) = e.location().map_or((0, 0), |l| (l.line(), l.column()));
        ImportError::Syntax {
            file: file.to_string(),
            format: "YAML",
            line,
            column,
            message: e.to_string(),
        }
    })?;
    Ok(yaml_to_json(yaml))
}

fn yaml_to_json(v: serde_norway::Value) -> serde_json::Value {
    use serde_json::Value as J;
    use serde_norway::Value as Y;
    match v {
        Y::Null => J::Null,
        Y::Bool(b) => J::Bool(b),
        Y::Number(n) => serde_json::to_value(&n).unwrap_or(J::Null),
        Y::String(s) => J::String(s),
        Y::Sequence(list) => J::Array(list.into_iter().map(yaml_to_json).collect()),
        Y::Mapping(m) => J::Object(
            m.into_iter()
                .map(|(k, v)| {
                    let key = match k {
                        Y::String(s) => s,
                        other => serde_norway::to_string(&other)
                            .unwrap_or_default()
                            .trim_end()
                            .to_string(),
                    };
                    (key, yaml_to_json(v))
                })
                .collect(),
        ),
        Y::Tagged(t) => yaml_to_json(t.value),
    }
}

/// Escapes a JSON pointer token (RFC 6901).
pub(crate) fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
pub(crate) mod testing {
    /// Loads `yaml` with loadmark's own plan loader (validation included) and checks that it
    /// means what the importer's model says: the round trip.
    pub fn assert_round_trip(imported: &crate::Imported) {
        let yaml = imported.yaml();
        let data_dir = std::env::temp_dir().join(format!(
            "loadmark-import-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&data_dir).unwrap();
        let plan_path = data_dir.join("plan.yaml");
        std::fs::write(&plan_path, &yaml).unwrap();
        if let (Some(csv), Some(data)) = (imported.secrets_csv(), &imported.plan.data) {
            std::fs::write(data_dir.join(data), csv).unwrap();
        }
        if let Err(e) = loadmark_plan::load_plan_file(&plan_path, 2) {
            panic!("the plan does not load: {e}\n{yaml}");
        }
        let loaded: loadmark_plan::PlanFile = serde_norway::from_str(&yaml).unwrap();
        let meant: loadmark_plan::PlanFile =
            serde_json::from_value(imported.plan.to_value()).unwrap();
        assert_eq!(loaded, meant, "{yaml}");
        let _ = std::fs::remove_dir_all(&data_dir);
    }
}
