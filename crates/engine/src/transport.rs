//! Transports: how a connection to the target is opened. Executors are generic over
//! [`Transport`], so TCP, TLS and (later) Unix sockets share one request loop.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use loadmark_metrics::ErrorKind;
use loadmark_plan::TlsPolicy;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// A connection attempt that failed, already classified.
#[derive(Debug, Clone)]
pub struct ConnectError {
    pub kind: ErrorKind,
    pub message: String,
}

impl ConnectError {
    fn io(addr: SocketAddr, e: &io::Error) -> Self {
        ConnectError {
            kind: classify_io(e, ErrorKind::Connect),
            message: format!("connect to {addr}: {e}"),
        }
    }
}

/// Maps an I/O error to a kind: local resource exhaustion is its own kind, whatever the step.
pub fn classify_io(e: &io::Error, step: ErrorKind) -> ErrorKind {
    match e.raw_os_error() {
        Some(libc::EMFILE)
        | Some(libc::ENFILE)
        | Some(libc::EADDRNOTAVAIL)
        | Some(libc::ENOBUFS) => ErrorKind::Resource,
        _ => step,
    }
}

/// Opens connections to one target. Cloned into every worker thread.
pub trait Transport: Clone + Send + 'static {
    type Stream: AsyncRead + AsyncWrite + Unpin + 'static;
    fn connect(&self) -> impl Future<Output = Result<Self::Stream, ConnectError>>;
}

async fn tcp_connect(addr: SocketAddr, timeout: Duration) -> Result<TcpStream, ConnectError> {
    let stream = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(ConnectError::io(addr, &e)),
        Err(_) => {
            return Err(ConnectError {
                kind: ErrorKind::Connect,
                message: format!(
                    "connect to {addr}: no answer within {timeout:?} (--connect-timeout)"
                ),
            })
        }
    };
    // Requests are small and written whole: never wait for Nagle.
    stream
        .set_nodelay(true)
        .map_err(|e| ConnectError::io(addr, &e))?;
    Ok(stream)
}

/// Plain TCP.
#[derive(Clone)]
pub struct Tcp {
    pub addr: SocketAddr,
    pub connect_timeout: Duration,
}

impl Transport for Tcp {
    type Stream = TcpStream;
    async fn connect(&self) -> Result<TcpStream, ConnectError> {
        tcp_connect(self.addr, self.connect_timeout).await
    }
}

/// TLS over TCP (rustls), certificates verified against the Mozilla roots unless insecure.
#[derive(Clone)]
pub struct Tls {
    tcp: Tcp,
    connector: tokio_rustls::TlsConnector,
    server_name: rustls::pki_types::ServerName<'static>,
}

impl Tls {
    pub fn new(tcp: Tcp, host: &str, policy: TlsPolicy) -> Result<Tls, ConnectError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_error(format!("TLS setup: {e}")))?;
        let mut config = match policy {
            TlsPolicy::Verify => {
                let roots = rustls::RootCertStore::from_iter(
                    webpki_roots::TLS_SERVER_ROOTS.iter().cloned(),
                );
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            TlsPolicy::Insecure => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(provider)))
                .with_no_client_auth(),
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let server_name = rustls::pki_types::ServerName::try_from(host.to_string())
            .map_err(|e| tls_error(format!("invalid TLS server name {host:?}: {e}")))?;
        Ok(Tls {
            tcp,
            connector: tokio_rustls::TlsConnector::from(Arc::new(config)),
            server_name,
        })
    }
}

fn tls_error(message: String) -> ConnectError {
    ConnectError {
        kind: ErrorKind::Tls,
        message,
    }
}

impl Transport for Tls {
    type Stream = tokio_rustls::client::TlsStream<TcpStream>;
    async fn connect(&self) -> Result<Self::Stream, ConnectError> {
        let tcp = self.tcp.connect().await?;
        let handshake = self.connector.connect(self.server_name.clone(), tcp);
        match tokio::time::timeout(self.tcp.connect_timeout, handshake).await {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(tls_error(format!(
                "TLS handshake with {}: {e}",
                self.tcp.addr
            ))),
            Err(_) => Err(tls_error(format!(
                "TLS handshake with {}: no answer within {:?} (--connect-timeout)",
                self.tcp.addr, self.tcp.connect_timeout
            ))),
        }
    }
}

/// `--insecure`: any certificate is accepted, but signatures are still checked so the
/// handshake is a real one.
#[derive(Debug)]
struct AcceptAnyCert(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_out_of_local_resources_is_its_own_kind() {
        for errno in [
            libc::EMFILE,
            libc::ENFILE,
            libc::EADDRNOTAVAIL,
            libc::ENOBUFS,
        ] {
            let e = io::Error::from_raw_os_error(errno);
            assert_eq!(
                classify_io(&e, ErrorKind::Connect),
                ErrorKind::Resource,
                "{e}"
            );
        }
        let refused = io::Error::from_raw_os_error(libc::ECONNREFUSED);
        assert_eq!(
            classify_io(&refused, ErrorKind::Connect),
            ErrorKind::Connect
        );
        let reset = io::Error::from_raw_os_error(libc::ECONNRESET);
        assert_eq!(classify_io(&reset, ErrorKind::Read), ErrorKind::Read);
    }
}
