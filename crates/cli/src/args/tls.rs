//! TLS files as curl spells them (`--cacert`, `--cert`, `--key`).

use std::path::PathBuf;

use clap::Args;
use loadmark_plan::{PlanError, TlsFiles, TlsPolicy};

/// TLS files as curl spells them: shared by `run` and `ws`.
#[derive(Args, Debug, Default)]
#[command(next_help_heading = "TLS")]
pub struct TlsFlags {
    /// Trust the CA certificates in this PEM file instead of the usual roots (a private CA)
    #[arg(long = "cacert", value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Present this PEM client certificate (chain) to servers that require one (mutual TLS)
    #[arg(long = "cert", value_name = "FILE")]
    pub cert: Option<PathBuf>,
    /// The PEM private key of --cert [default: in the --cert file]
    #[arg(long = "key", value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
}

impl TlsFlags {
    /// The plan's TLS policy: `insecure` alone, or the files (checked readable now, before
    /// any load, so a typo is a usage error).
    pub fn policy(&self, insecure: bool) -> Result<TlsPolicy, PlanError> {
        for (flag, file) in [
            ("--cacert", &self.cacert),
            ("--cert", &self.cert),
            ("--key", &self.key),
        ] {
            if let Some(path) = file {
                if std::fs::File::open(path).is_err() {
                    return Err(PlanError::invalid(
                        flag,
                        path.display().to_string(),
                        "a readable PEM file",
                    ));
                }
            }
        }
        Ok(match (&self.cacert, &self.cert, insecure) {
            (None, None, false) => TlsPolicy::Verify,
            (None, None, true) => TlsPolicy::Insecure,
            _ => TlsPolicy::Files(TlsFiles {
                ca: self.cacert.clone(),
                cert: self.cert.clone(),
                key: self.key.clone(),
                insecure,
            }),
        })
    }
}
