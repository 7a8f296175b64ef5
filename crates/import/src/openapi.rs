//! OpenAPI 3.0/3.1 documents into scenarios.
use crate::{ImportError, Imported, Options};

#[derive(Debug, Clone)]
pub struct OpenApiOptions {
    pub common: Options,
    pub base_url: Option<String>,
    pub tags: Vec<String>,
}

pub fn import(_text: &str, _file: &str, _opts: &OpenApiOptions) -> Result<Imported, ImportError> {
    Err(ImportError::Empty(
        "OpenAPI import is not implemented yet (issue 41); HAR and curl are".into(),
    ))
}
