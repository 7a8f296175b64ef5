use super::*;

fn req(cmd: &str) -> CurlRequest {
    parse_command(cmd).unwrap()
}

fn header<'a>(r: &'a CurlRequest, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn no_files(p: &str) -> Result<Vec<u8>, String> {
    Err(format!("no file {p}"))
}

#[test]
fn data_implies_post_and_a_form_type_and_pieces_join_with_ampersands() {
    let r = req("curl http://h/x -d a=1 --data-raw '@b' --data-urlencode 'c=d e&f'");
    assert_eq!(r.method, "POST");
    assert_eq!(
        header(&r, "content-type"),
        Some("application/x-www-form-urlencoded")
    );
    let body = r.body_bytes(&no_files).unwrap().unwrap();
    assert_eq!(String::from_utf8(body).unwrap(), "a=1&@b&c=d+e%26f");
}

#[test]
fn files_are_read_and_data_strips_newlines_but_data_binary_does_not() {
    let read = |p: &str| -> Result<Vec<u8>, String> {
        assert_eq!(p, "f.txt");
        Ok(b"x\r\ny\n".to_vec())
    };
    let r = req("curl http://h/ -d @f.txt");
    assert_eq!(r.body_bytes(&read).unwrap().unwrap(), b"xy");
    let r = req("curl http://h/ --data-binary @f.txt");
    assert_eq!(r.body_bytes(&read).unwrap().unwrap(), b"x\r\ny\n");
}

#[test]
fn json_user_cookie_and_compressed_add_the_headers_curl_adds() {
    let r = req("curl --json '{\"a\":1}' -u al:pw -b 's=1; t=2' --compressed -A ua/1 -e http://r/ https://h:8443/p?q=1#frag");
    assert_eq!(r.method, "POST");
    assert_eq!(r.url, "https://h:8443/p?q=1");
    assert_eq!(header(&r, "authorization"), Some("Basic YWw6cHc="));
    assert_eq!(header(&r, "cookie"), Some("s=1; t=2"));
    assert_eq!(header(&r, "content-type"), Some("application/json"));
    assert_eq!(header(&r, "accept"), Some("application/json"));
    assert_eq!(
        header(&r, "accept-encoding"),
        Some("deflate, gzip, br, zstd")
    );
    assert_eq!(header(&r, "user-agent"), Some("ua/1"));
    assert_eq!(header(&r, "referer"), Some("http://r/"));
}

#[test]
fn a_user_header_replaces_an_implied_one_and_an_empty_one_removes_it() {
    let r = req("curl http://h/ -d x -H 'Content-Type: text/plain' -H 'X-Empty;'");
    assert_eq!(header(&r, "content-type"), Some("text/plain"));
    assert_eq!(header(&r, "x-empty"), Some(""));
    let r = req("curl http://h/ -d x -H 'Content-Type:'");
    assert_eq!(header(&r, "content-type"), None);
}

#[test]
fn get_moves_data_into_the_query_and_head_and_x_set_the_method() {
    let r = req("curl -G http://h/s?a=1 -d b=2 -d c=3");
    assert_eq!(
        (r.method.as_str(), r.url.as_str()),
        ("GET", "http://h/s?a=1&b=2&c=3")
    );
    assert_eq!(r.body, BodySource::None);
    assert_eq!(req("curl -I http://h/").method, "HEAD");
    assert_eq!(req("curl -XPUT http://h/ -d x").method, "PUT");
    assert_eq!(req("curl -X DELETE http://h/").method, "DELETE");
}

#[test]
fn clustered_flags_and_connection_options_are_read() {
    let r = req("curl -sSLk --http2 --cacert ca.pem --cert c.pem:pw --key k.pem http://h/");
    assert!(r.insecure && r.http2 && r.follow);
    assert_eq!(r.cacert.as_deref(), Some("ca.pem"));
    assert_eq!(r.cert.as_deref(), Some("c.pem"));
    assert_eq!(r.key.as_deref(), Some("k.pem"));
    assert!(r.warnings().iter().any(|w| w.contains("-L")));
}

#[test]
fn multipart_parts_are_built_as_curl_builds_them() {
    let r = req("curl http://h/up -F a=1 -F 'f=@dir/n.txt'");
    let read = |_: &str| -> Result<Vec<u8>, String> { Ok(b"hi".to_vec()) };
    let body = String::from_utf8(r.body_bytes(&read).unwrap().unwrap()).unwrap();
    let b = BOUNDARY;
    assert_eq!(
        body,
        format!(
            "--{b}\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n1\r\n--{b}\r\n\
             Content-Disposition: form-data; name=\"f\"; filename=\"n.txt\"\r\n\
             Content-Type: text/plain\r\n\r\nhi\r\n--{b}--\r\n"
        )
    );
    assert_eq!(
        header(&r, "content-type").unwrap(),
        format!("multipart/form-data; boundary={b}")
    );
}

#[test]
fn unknown_options_are_refused_by_name() {
    for (cmd, named) in [
        ("curl --proxy http://p:1 http://h/", "--proxy"),
        ("curl -Z http://h/", "-Z"),
        ("curl http://h/ -H", "-H needs a value"),
        ("curl -u alice http://h/", "-u alice"),
        ("curl -b cookies.txt http://h/", "cookie file"),
        ("curl ftp://h/x", "only http"),
        ("curl -H x", "expected 'Name: value'"),
        ("curl", "no URL"),
    ] {
        let e = parse_command(cmd).unwrap_err().to_string();
        assert!(e.contains(named), "{cmd}: {e}");
    }
}

#[test]
fn an_imported_command_is_a_single_request_plan_that_loads_back_as_written() {
    let out = import(
        "curl 'http://127.0.0.1:8080/echo?x=1' -H 'Authorization: Bearer s3cret' --data-raw '{\"a\":\"b: c\"}' -H 'Content-Type: application/json' -k",
        &Options::default(),
    )
    .unwrap();
    let yaml = out.yaml();
    assert!(!yaml.contains("s3cret"), "{yaml}");
    assert!(
        yaml.contains("Authorization: Bearer {{csv authorization}}")
            || yaml.contains("'{{csv authorization}}'"),
        "{yaml}"
    );
    assert_eq!(
        out.secrets,
        [("authorization".into(), "Bearer s3cret".into())]
    );
    assert!(out.warnings.iter().any(|w| w.contains("secret")));
    crate::testing::assert_round_trip(&out);
    let kept = import(
        "curl http://127.0.0.1:8080/status -H 'Authorization: Bearer s3cret'",
        &Options {
            keep_secrets: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(kept.yaml().contains("Bearer s3cret"));
    assert!(kept.secrets.is_empty());
    crate::testing::assert_round_trip(&kept);
}

#[test]
fn a_whole_file_body_is_named_not_copied() {
    let out = import(
        "curl http://127.0.0.1:1/up --data-binary @body.bin",
        &Options::default(),
    )
    .unwrap();
    match &out.plan.body {
        PlanBody::Request(r) => {
            assert_eq!(r.body_file.as_deref(), Some("body.bin"));
            assert_eq!(r.body, None);
        }
        other => panic!("{other:?}"),
    }
}

/// `{{` in curl's data, a header or the query is refused by field (no plan can send it);
/// `run --curl` sends such a request as it is (crates/cli/tests/import.rs).
#[test]
fn a_literal_double_brace_is_refused_by_field() {
    let opts = Options::default();
    for (cmd, field) in [
        ("curl http://h/x --data-raw '{\"a\":\"{{b}}\"}'", "body"),
        ("curl http://h/x -H 'X-T: {{x}}'", "X-T header"),
        ("curl 'http://h/x?q={{x}}'", "URL"),
    ] {
        let err = import(cmd, &opts).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "curl: the request's {field} holds a literal `{{{{`"
            )) && err.contains("loadmark run --curl"),
            "{cmd}: {err}"
        );
    }
    let file = |_: &str| Ok(b"{{x}}".to_vec());
    let err = import_with("curl http://h/x --data-binary @b.txt", &opts, &file).unwrap_err();
    assert!(err.to_string().contains("body holds a literal"), "{err}");
    assert!(import("curl http://h/x -d '{\"a\":{\"b\":1}}'", &opts).is_ok());
}
