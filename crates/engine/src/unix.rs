//! Unix domain sockets as one more [`Transport`]: services behind a local proxy or sidecar
//! (curl's `--unix-socket`). The URL still gives the Host header and the path.

use std::path::PathBuf;
use std::time::Duration;

use loadmark_metrics::ErrorKind;
use tokio::net::UnixStream;

use crate::transport::{classify_io, ConnectError, Inbound, Transport};

/// Connects to a socket file.
#[derive(Clone)]
pub struct Unix {
    pub path: PathBuf,
    pub connect_timeout: Duration,
}

/// Bodies are read, never dropped unread: `MSG_TRUNC` discards only on TCP.
impl Inbound for UnixStream {}

impl Transport for Unix {
    type Stream = UnixStream;
    async fn connect(&self) -> Result<UnixStream, ConnectError> {
        let error = |e: std::io::Error| ConnectError {
            kind: classify_io(&e, ErrorKind::Connect),
            message: format!("connect to unix socket {}: {e}", self.path.display()),
        };
        match tokio::time::timeout(self.connect_timeout, UnixStream::connect(&self.path)).await {
            Ok(result) => result.map_err(error),
            Err(_) => Err(ConnectError {
                kind: ErrorKind::Connect,
                message: format!(
                    "connect to unix socket {}: no answer within {:?} (--connect-timeout)",
                    self.path.display(),
                    self.connect_timeout
                ),
            }),
        }
    }
}
