//! HAR 1.2 recordings into scenarios.
use crate::{ImportError, Imported, Options};

/// Think times between steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Think {
    Recorded,
    None,
    Scale(f64),
}

impl Think {
    pub fn parse(text: &str) -> Result<Think, String> {
        match text {
            "recorded" => Ok(Think::Recorded),
            "none" => Ok(Think::None),
            _ => match text.parse::<f64>() {
                Ok(f) if f.is_finite() && f >= 0.0 => Ok(Think::Scale(f)),
                _ => Err(format!(
                    "--think {text}: expected recorded, none or a factor (0.5)"
                )),
            },
        }
    }
}

#[derive(Debug, Clone)]
pub struct HarOptions {
    pub common: Options,
    pub include_host: Option<String>,
    pub exclude: Vec<String>,
    pub include_static: bool,
    pub think: Think,
}

pub fn import(_text: &str, _file: &str, _opts: &HarOptions) -> Result<Imported, ImportError> {
    Err(ImportError::Empty("HAR import: not yet".into()))
}
