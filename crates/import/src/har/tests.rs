use super::*;

fn opts() -> HarOptions {
    HarOptions {
        common: Options::default(),
        include_host: None,
        exclude: Vec::new(),
        include_static: false,
        think: Think::Recorded,
    }
}

fn steps(out: &Imported) -> &[StepDoc] {
    match &out.plan.body {
        PlanBody::Scenario(steps) => steps,
        other => panic!("{other:?}"),
    }
}

fn requests(out: &Imported) -> Vec<&RequestDoc> {
    steps(out)
        .iter()
        .filter_map(|s| match s {
            StepDoc::Request(r) => Some(r),
            _ => None,
        })
        .collect()
}

/// A Chromium recording (Playwright's recorder) and a mitmproxy one of the built-in
/// target's journey: log in, list, open item 4 (testdata; the integration test records
/// new ones).
#[test]
fn recorded_journeys_become_login_list_open_with_the_token_and_the_id_extracted() {
    for file in ["chromium-journey.har", "mitmproxy-journey.har"] {
        let text = std::fs::read_to_string(format!("testdata/{file}")).unwrap();
        let out = import(&text, file, &opts()).unwrap();
        let r = requests(&out);
        let urls: Vec<(&str, &str)> = r
            .iter()
            .map(|r| (r.method.as_str(), r.url.as_str()))
            .collect();
        let tail = &urls[urls.len() - 3..];
        assert_eq!(tail[0], ("POST", "/login"), "{file}");
        assert_eq!(tail[1], ("GET", "/items"), "{file}");
        assert_eq!(tail[2], ("GET", "/items/{{items_id}}"), "{file}");
        let login = r[r.len() - 3];
        let token = ("token".to_string(), "json /token".to_string());
        assert_eq!(login.extract, [token], "{file}");
        let body = login.body.as_deref();
        assert_eq!(body, Some(r#"{"user":"alice","password":"x"}"#));
        let list = r[r.len() - 2];
        let id = ("items_id".to_string(), "json /items/3/id".to_string());
        assert_eq!(list.extract, [id]);
        let auth = ("Authorization".to_string(), "Bearer {{token}}".to_string());
        assert!(list.headers.contains(&auth), "{file}: {:?}", list.headers);
        assert_eq!(list.checks, ["status == 200"]);
        assert!(
            out.plan.load.cookies,
            "{file}: the session cookie goes to the jar"
        );
        assert!(
            out.secrets.is_empty(),
            "{file}: every secret was correlated"
        );
        let yaml = out.yaml();
        assert!(
            !yaml.contains("616c696365."),
            "{file}: no recorded token\n{yaml}"
        );
        assert!(!yaml.to_ascii_lowercase().contains("sec-ch-ua"), "{yaml}");
        assert!(
            yaml.contains("- think: "),
            "{file}: the recorded pauses\n{yaml}"
        );
        crate::testing::assert_round_trip(&out);
    }
}

#[test]
fn the_favicon_is_a_static_asset_and_is_said_to_be_left_out() {
    let text = std::fs::read_to_string("testdata/mitmproxy-journey.har").unwrap();
    let out = import(&text, "m.har", &opts()).unwrap();
    let said = out
        .warnings
        .iter()
        .any(|w| w.contains("static assets: /favicon.ico"));
    assert!(said, "{:?}", out.warnings);
    assert!(requests(&out).iter().all(|r| r.url != "/favicon.ico"));
    let with_static = HarOptions {
        include_static: true,
        ..opts()
    };
    let all = import(&text, "m.har", &with_static).unwrap();
    assert!(requests(&all).iter().any(|r| r.url == "/favicon.ico"));
}

fn har(entries: &[String]) -> String {
    format!(
        r#"{{"log":{{"version":"1.2","creator":{{"name":"t","version":"1"}},"entries":[{}]}}}}"#,
        entries.join(",")
    )
}

fn entry(t: &str, method: &str, url: &str, headers: &str, resp: &str) -> String {
    format!(
        r#"{{"startedDateTime":"{t}","time":10,"request":{{"method":"{method}","url":"{url}","headers":[{headers}]}},"response":{{"status":200,"headers":[],"content":{{"mimeType":"application/json","text":{resp}}}}}}}"#
    )
}

#[test]
fn other_hosts_excludes_and_think_times_follow_the_flags() {
    let text = har(&[
        entry(
            "2024-01-01T00:00:00.000Z",
            "GET",
            "http://a.test/x",
            "",
            r#""{}""#,
        ),
        entry(
            "2024-01-01T00:00:01.010Z",
            "GET",
            "http://cdn.test/lib",
            "",
            r#""{}""#,
        ),
        entry(
            "2024-01-01T00:00:02.010Z",
            "GET",
            "http://a.test/y",
            "",
            r#""{}""#,
        ),
        entry(
            "2024-01-01T00:00:02.030Z",
            "GET",
            "http://a.test/skip/1",
            "",
            r#""{}""#,
        ),
    ]);
    let excluding = HarOptions {
        exclude: vec!["*/skip/*".into()],
        ..opts()
    };
    let out = import(&text, "t.har", &excluding).unwrap();
    let s = steps(&out);
    assert_eq!(s.len(), 3, "{s:?}");
    assert_eq!(s[1], StepDoc::Think(Duration::from_millis(2000), None));
    assert!(out
        .warnings
        .iter()
        .any(|w| w.contains("other hosts: cdn.test")));
    assert!(out.warnings.iter().any(|w| w.contains("--exclude")));
    let half = HarOptions {
        think: Think::Scale(0.5),
        ..opts()
    };
    let half = import(&text, "t.har", &half).unwrap();
    assert!(steps(&half).contains(&StepDoc::Think(Duration::from_millis(1000), None)));
    let none = HarOptions {
        think: Think::None,
        ..opts()
    };
    let none = import(&text, "t.har", &none).unwrap();
    assert!(steps(&none)
        .iter()
        .all(|s| matches!(s, StepDoc::Request(_))));
    let cdn = HarOptions {
        include_host: Some("cdn.test".into()),
        ..opts()
    };
    let cdn = import(&text, "t.har", &cdn).unwrap();
    assert_eq!(requests(&cdn).len(), 1);
    assert_eq!(cdn.plan.target_url, "http://cdn.test");
}

#[test]
fn an_uncorrelated_secret_becomes_a_data_column_and_a_client_value_is_not_correlated() {
    let secrets = r#"{"name":"Authorization","value":"Bearer abcdef123456"},{"name":"Cookie","value":"sid=zz99zz99"}"#;
    let text = har(&[
        entry(
            "2024-01-01T00:00:00Z",
            "POST",
            "http://a.test/echo?u=user12345",
            "",
            r#""{\"u\":\"user12345\"}""#,
        ),
        entry(
            "2024-01-01T00:00:00.5Z",
            "GET",
            "http://a.test/x?u=user12345",
            secrets,
            r#""{}""#,
        ),
    ]);
    let out = import(&text, "t.har", &opts()).unwrap();
    let r = requests(&out);
    assert_eq!(r[1].url, "/x?u=user12345", "the client sent it first");
    assert!(r[0].extract.is_empty());
    assert_eq!(out.secrets.len(), 2);
    let yaml = out.yaml();
    assert!(!yaml.contains("abcdef123456") && !yaml.contains("zz99zz99"));
    assert_eq!(out.plan.data.as_deref(), Some("secrets.csv"));
    crate::testing::assert_round_trip(&out);
}

#[test]
fn bad_documents_say_where_and_versions_say_which_are_supported() {
    let err = |text: &str| import(text, "x.har", &opts()).unwrap_err().to_string();
    let e = err("{\"log\": [1,}");
    assert!(e.starts_with("x.har:1:"), "{e}");
    let e = err(r#"{"log":{"version":"2.0","entries":[]}}"#);
    assert!(
        e.contains("2.0") && e.contains("supported: 1.1, 1.2"),
        "{e}"
    );
    let e = err(r#"{"log":{"version":"1.2","entries":[{"request":{}}]}}"#);
    assert!(e.contains("/log/entries/0/request/url"), "{e}");
    let e = err(r#"{"nolog":1}"#);
    assert!(e.contains("not a HAR"), "{e}");
}

/// A recorded body or header holding `{{` (a template sent as text) cannot be in a plan: the
/// request is left out by name, the others kept; nothing left is an error, not a plan.
#[test]
fn a_recorded_double_brace_leaves_its_request_out_by_name() {
    let with = |t: &str, url: &str, headers: &str, body: Option<&str>| {
        let post = body.map_or(String::new(), |b| {
            format!(
                r#","postData":{{"mimeType":"text/plain","text":{}}}"#,
                serde_json::json!(b)
            )
        });
        format!(
            r#"{{"startedDateTime":"{t}","time":10,"request":{{"method":"POST","url":"{url}","headers":[{headers}]{post}}},"response":{{"status":200,"headers":[],"content":{{"text":""}}}}}}"#
        )
    };
    let text = har(&[
        with(
            "2024-01-01T00:00:00.000Z",
            "http://a.test/a",
            "",
            Some("x=1"),
        ),
        with(
            "2024-01-01T00:00:00.100Z",
            "http://a.test/t",
            "",
            Some(r#"{"tpl":"Hi {{name}}"}"#),
        ),
        with(
            "2024-01-01T00:00:00.200Z",
            "http://a.test/h",
            r#"{"name":"X-Tpl","value":"{{x}}"}"#,
            None,
        ),
        with("2024-01-01T00:00:00.300Z", "http://a.test/z", "", None),
    ]);
    let out = import(&text, "t.har", &opts()).unwrap();
    let urls: Vec<_> = requests(&out).iter().map(|r| r.url.clone()).collect();
    assert_eq!(urls, ["/a", "/z"]);
    for said in [
        "\"POST /t\": left out: its body holds a literal `{{`",
        "\"POST /h\": left out: its X-Tpl header holds a literal `{{`",
    ] {
        assert!(
            out.warnings.iter().any(|w| w.starts_with(said)),
            "{said}: {:?}",
            out.warnings
        );
    }
    crate::testing::assert_round_trip(&out);
    let only = har(&[with(
        "2024-01-01T00:00:00.000Z",
        "http://a.test/t",
        "",
        Some("{{"),
    )]);
    let err = import(&only, "t.har", &opts()).unwrap_err().to_string();
    assert!(
        err.contains("no request left to load") && err.contains("POST /t"),
        "{err}"
    );
}
