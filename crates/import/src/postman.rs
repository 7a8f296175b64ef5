//! Postman collections (v2.1) into scenarios.
use crate::{ImportError, Imported, Options};

#[derive(Debug, Clone)]
pub struct PostmanOptions {
    pub common: Options,
    pub folder: Option<String>,
}

pub fn import(
    _text: &str,
    _file: &str,
    _env: Option<(&str, &str)>,
    _opts: &PostmanOptions,
) -> Result<Imported, ImportError> {
    Err(ImportError::Empty(
        "Postman import is not implemented yet (issue 41); HAR and curl are".into(),
    ))
}
