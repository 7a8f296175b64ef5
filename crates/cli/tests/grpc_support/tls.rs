//! `loadmark grpc` over TLS and mutual TLS against the Python grpcio server
//! (grpc.ssl_server_credentials), with certificates made here: the server's certificate is
//! verified (its CA, its name), ghz's --insecure stays plaintext, --skip-verify skips the
//! checks, and a server that requires a client certificate gets --cert/--key.

use super::*;

/// A private CA, a certificate for `localhost` it signed and a client certificate, as PEM
/// files in `dir`: ca.pem, server.pem, server.key, client.pem, client.key.
fn certificates(dir: &Path) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa};
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "loadmark gRPC test CA");
    let ca = ca.self_signed(&ca_key).unwrap();
    let server_key = rcgen::KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&server_key, &ca, &ca_key)
        .unwrap();
    let client_key = rcgen::KeyPair::generate().unwrap();
    let mut client = CertificateParams::new(Vec::<String>::new()).unwrap();
    client
        .distinguished_name
        .push(DnType::CommonName, "loadmark client");
    client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client = client.signed_by(&client_key, &ca, &ca_key).unwrap();
    for (name, pem) in [
        ("ca.pem", ca.pem()),
        ("server.pem", server.pem()),
        ("server.key", server_key.serialize_pem()),
        ("client.pem", client.pem()),
        ("client.key", client_key.serialize_pem()),
    ] {
        std::fs::write(dir.join(name), pem).unwrap();
    }
}

/// The Python server over TLS (mutual when `client_ca`), counting its Echo calls in `count`.
fn tls_server(dir: &Path, count: &Path, client_ca: bool) -> (Daemon, u16) {
    let python = tool(workspace().join("target/ci-grpc/py/bin/python"));
    start("server.py (TLS)", |port| {
        let mut c = Command::new(&python);
        c.arg(support("server.py"))
            .arg(port.to_string())
            .arg(count)
            .arg(dir.join("server.pem"))
            .arg(dir.join("server.key"));
        if client_ca {
            c.arg(dir.join("ca.pem"));
        }
        c
    })
}

fn served(count: &Path) -> u64 {
    std::fs::read_to_string(count)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

#[test]
fn tls_verifies_the_servers_certificate_and_name_and_mutual_tls_presents_the_client_certificate() {
    let dir = temp_dir("grpc", "tls");
    certificates(dir.path());
    let file = |name: &str| dir.path().join(name).display().to_string();
    let (ca, cert, key) = (file("ca.pem"), file("client.pem"), file("client.key"));
    let count = dir.path().join("count");
    let (server, port) = tls_server(dir.path(), &count, false);
    let host = format!("localhost:{port}");
    let call = "loadmark.test.Tester/Echo";
    let echo = |target: &str, extra: &[&str]| {
        let mut args = vec![
            target,
            "--call",
            call,
            "--data",
            r#"{"name":"x"}"#,
            "-n",
            "10",
        ];
        args.extend_from_slice(extra);
        run(&args)
    };

    // The private CA trusted: the reflection call and every load call over TLS.
    let (out, report) = echo(&host, &["--cacert", &ca, "-c", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(codes(&report), [("OK".to_string(), 10)]);
    assert!(
        report["plan"]["request"]["url"]
            .as_str()
            .unwrap()
            .starts_with("https://"),
        "{}",
        report["plan"]["request"]["url"]
    );
    // The same from the .proto, the target written as https://.
    let proto = support("tester.proto");
    let includes = support("");
    let https = format!("https://{host}");
    let (out, report) = echo(
        &https,
        &["--cacert", &ca, "--proto", &proto, "-i", &includes],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(codes(&report), [("OK".to_string(), 10)]);
    assert_eq!(served(&count), 20);

    // Not trusted (the Mozilla roots do not hold the test CA): refused, saying what to do.
    let (out, _) = echo(&host, &["--tls"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not trusted") && stderr(&out).contains("--skip-verify"),
        "{}",
        stderr(&out)
    );
    // The certificate is for localhost, not 127.0.0.1: the name is verified too.
    let (out, _) = echo(&format!("127.0.0.1:{port}"), &["--cacert", &ca]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("certificate not valid for name \"127.0.0.1\"")
            && stderr(&out).contains("the certificate is for another name"),
        "{}",
        stderr(&out)
    );
    // Through the load path as well (the schema from the .proto): every call a TLS error.
    let (out, report) = echo(
        &format!("127.0.0.1:{port}"),
        &["--cacert", &ca, "--proto", &proto, "-i", &includes],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    // Each call is also counted under the status a gRPC client gives a failed connection.
    assert_eq!(codes(&report), [("UNAVAILABLE".to_string(), 10)]);
    let findings = report["run"]["health"]["findings"].to_string();
    assert!(
        findings.contains("add --skip-verify; for a private CA, --cacert FILE"),
        "{findings}"
    );
    assert!(
        report["summary"]["errors"]["tls"]["count"]
            .as_u64()
            .unwrap()
            > 0,
        "{}",
        report["summary"]["errors"]
    );
    assert_eq!(served(&count), 20);
    // --cname (ghz's): reached by address, the certificate verified against the name given,
    // for the reflection call and every load call.
    let by_address = format!("127.0.0.1:{port}");
    let (out, report) = echo(&by_address, &["--cacert", &ca, "--cname", "localhost"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(codes(&report), [("OK".to_string(), 10)]);
    assert_eq!(served(&count), 30);
    // A name the certificate does not hold fails as the address did; plaintext refuses it.
    let (out, _) = echo(&by_address, &["--cacert", &ca, "--cname", "other.test"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("certificate not valid for name \"other.test\""),
        "{}",
        stderr(&out)
    );
    let (out, _) = echo(&by_address, &["--cname", "localhost"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--cname localhost: the server name is TLS's"),
        "{}",
        stderr(&out)
    );
    // --skip-verify: encrypted, nothing verified (no CA, the wrong name).
    let (out, report) = echo(&format!("127.0.0.1:{port}"), &["--skip-verify"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(codes(&report), [("OK".to_string(), 10)]);
    assert_eq!(served(&count), 40);
    // ghz's --insecure is plaintext: beside a TLS flag it is refused, naming --skip-verify.
    let (out, _) = echo(&host, &["--insecure", "--cacert", &ca]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(
            "--insecure with --cacert: in loadmark grpc (as in ghz) --insecure means plaintext"
        ) && stderr(&out).contains("use --skip-verify"),
        "{}",
        stderr(&out)
    );
    server.stop(Duration::from_secs(5));

    // Mutual TLS: without a client certificate the server refuses the handshake; with
    // --cert and --key every call is served.
    let count = dir.path().join("count.mtls");
    let (server, port) = tls_server(dir.path(), &count, true);
    let host = format!("localhost:{port}");
    let (out, _) = echo(&host, &["--cacert", &ca]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("server reflection"),
        "{}",
        stderr(&out)
    );
    let (out, report) = echo(
        &host,
        &["--cacert", &ca, "--cert", &cert, "--key", &key, "-c", "2"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(codes(&report), [("OK".to_string(), 10)]);
    assert_eq!(served(&count), 10);
    server.stop(Duration::from_secs(5));
}
