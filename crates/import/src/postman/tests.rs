use super::*;
use crate::plan::RequestDoc;
use crate::testing::assert_round_trip;

const JOURNEY: &str = include_str!("../../../../examples/import/journey.postman_collection.json");
const ENV: &str = include_str!("../../../../examples/import/local.postman_environment.json");
const NEWMAN: &str = include_str!("../../testdata/newman-sample.postman_collection.json");
const NEWMAN_V1: &str = include_str!("../../testdata/newman-v1.postman_collection.json");

fn requests(out: &Imported) -> Vec<&RequestDoc> {
    match &out.plan.body {
        PlanBody::Scenario(steps) => steps
            .iter()
            .filter_map(|s| match s {
                StepDoc::Request(r) => Some(r),
                _ => None,
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

fn folder(name: &str) -> PostmanOptions {
    PostmanOptions {
        folder: Some(name.into()),
        ..Default::default()
    }
}

#[test]
fn the_journey_folder_becomes_login_list_open_with_extractions_and_checks() {
    let env = Some((ENV, "local.json"));
    let out = import(JOURNEY, "journey.json", env, &folder("Journey")).unwrap();
    assert_eq!(out.plan.target_url, "http://127.0.0.1:8080");
    assert_eq!(out.plan.name, "loadmark built-in target / Journey");
    let r = requests(&out);
    assert_eq!(r.len(), 3);
    let (login, list, open) = (r[0], r[1], r[2]);
    assert_eq!(
        (login.method.as_str(), login.url.as_str()),
        ("POST", "/login")
    );
    assert_eq!(
        login.body.as_deref(),
        Some(r#"{"user": "alice"}"#),
        "the pre-request value wins over the collection's"
    );
    assert!(
        login.headers.iter().all(|(k, _)| k != "Authorization"),
        "noauth"
    );
    assert_eq!(
        login.extract,
        [("token".to_string(), "json /token".to_string())]
    );
    assert_eq!(login.checks, ["status == 200"]);
    assert_eq!(
        list.headers[1],
        ("Authorization".into(), "Bearer {{token}}".into()),
        "the collection's auth"
    );
    assert_eq!(
        list.extract,
        [("itemid".to_string(), "json /items/2/id".to_string())]
    );
    assert_eq!(open.url, "/items/{{itemid}}");
    assert_eq!(open.checks, ["status == 200"]);
    assert!(out.secrets.is_empty(), "{:?}", out.secrets);
    // The one line no plan can say is listed, with its request.
    let listed: Vec<_> = out
        .warnings
        .iter()
        .filter(|w| w.contains("not translated"))
        .collect();
    assert_eq!(listed.len(), 1, "{:?}", out.warnings);
    assert!(listed[0].contains("\"List items\"") && listed[0].contains("to.be.above(0)"));
    assert_round_trip(&out);
}

fn scenarios(out: &Imported) -> Vec<(&str, Vec<&RequestDoc>)> {
    match &out.plan.body {
        PlanBody::Scenarios(list) => list
            .iter()
            .map(|sc| {
                let steps = sc
                    .steps
                    .iter()
                    .filter_map(|s| match s {
                        StepDoc::Request(r) => Some(r),
                        _ => None,
                    })
                    .collect();
                (sc.name.as_str(), steps)
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn without_a_folder_each_folder_is_a_scenario_with_the_load_asked_for() {
    let opts = PostmanOptions {
        common: Options {
            users: 3,
            iterations: Some(7),
            ..Default::default()
        },
        ..Default::default()
    };
    let out = import(JOURNEY, "journey.json", Some((ENV, "env.json")), &opts).unwrap();
    let list = scenarios(&out);
    let names: Vec<_> = list.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["Journey", "Health"]);
    let journey: Vec<_> = list[0]
        .1
        .iter()
        .map(|r| r.name.as_deref().unwrap())
        .collect();
    assert_eq!(journey, ["Log in", "List items", "Open item"]);
    assert_eq!(list[0].1[2].url, "/items/{{itemid}}", "its own extraction");
    let form = list[1].1[1];
    assert_eq!(
        form.body.as_deref(),
        Some("q=a+b"),
        "the disabled field is left out"
    );
    assert_eq!(
        form.headers,
        [(
            "Content-Type".to_string(),
            "application/x-www-form-urlencoded".to_string()
        )]
    );
    let PlanBody::Scenarios(docs) = &out.plan.body else {
        unreachable!()
    };
    for sc in docs {
        assert_eq!(
            (sc.load.users, sc.load.iterations),
            (3, Some(7)),
            "{}",
            sc.name
        );
    }
    assert!(
        !out.warnings.iter().any(|w| w.contains("one scenario")),
        "{:?}",
        out.warnings
    );
    assert!(out
        .yaml()
        .contains("scenarios:\n  Journey:\n    steps:\n      - name: Log in\n"));
    assert_round_trip(&out);
    let err = import(JOURNEY, "journey.json", None, &folder("Nope"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no folder \"Nope\"; its folders: Journey, Health"),
        "{err}"
    );
}

#[test]
fn flatten_keeps_one_scenario_in_the_collections_order() {
    let opts = PostmanOptions {
        flatten: true,
        ..Default::default()
    };
    let out = import(JOURNEY, "journey.json", None, &opts).unwrap();
    let r = requests(&out);
    assert_eq!(r.len(), 5);
    assert_eq!(r[4].body.as_deref(), Some("q=a+b"));
    assert_round_trip(&out);
}

/// Top-level requests are a scenario of their own (named after the collection); nested
/// folders go into their top-level folder's scenario; names are made printable and unique;
/// a value a response sets in one folder is not another scenario's (a data-file column).
#[test]
fn top_level_requests_nested_folders_and_odd_names() {
    let text = r#"{
      "info": {"name": "Shop", "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"},
      "item": [
        {"name": "ping", "request": {"method": "GET", "url": "http://h.test/ping"}},
        {"name": "Buy\n", "item": [
          {"name": "login", "request": {"method": "POST", "url": "http://h.test/login"},
           "event": [{"listen": "test", "script": {"exec": ["pm.environment.set(\"token\", pm.response.json().token);"]}}]},
          {"name": "Deeper", "item": [
            {"name": "cart", "request": {"method": "GET", "url": "http://h.test/cart",
              "header": [{"key": "Authorization", "value": "Bearer {{token}}"}]}}
          ]}
        ]},
        {"name": "Buy", "item": [
          {"name": "again", "request": {"method": "GET", "url": "http://h.test/again",
            "header": [{"key": "Authorization", "value": "Bearer {{token}}"}]}}
        ]},
        {"name": "health", "request": {"method": "GET", "url": "http://h.test/health"}},
        {"name": "Empty", "item": []}
      ]}"#;
    let out = import(text, "shop.json", None, &PostmanOptions::default()).unwrap();
    let list = scenarios(&out);
    let names: Vec<_> = list.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["Shop", "Buy", "Buy (2)"]);
    let urls = |i: usize| list[i].1.iter().map(|r| r.url.as_str()).collect::<Vec<_>>();
    assert_eq!(urls(0), ["/ping", "/health"]);
    assert_eq!(urls(1), ["/login", "/cart"]);
    assert_eq!(list[1].1[1].headers[0].1, "Bearer {{token}}");
    assert_eq!(list[2].1[0].headers[0].1, "Bearer {{csv token}}");
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("{{token}} is set from a response in another folder")),
        "{:?}",
        out.warnings
    );
    assert!(out
        .warnings
        .iter()
        .any(|w| w.contains("folder \"Empty\": no request left")));
    assert_round_trip(&out);
}

/// A raw body with a `{{` that is no Postman variable (unclosed, `{{{x}}}`) cannot be in a
/// plan: its request is left out, by name; the others stay.
#[test]
fn a_literal_double_brace_leaves_its_request_out_by_name() {
    let text = r#"{
      "info": {"name": "c", "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"},
      "variable": [{"key": "who", "value": "alice"}],
      "item": [
        {"name": "template", "request": {"method": "POST", "url": "http://h.test/t",
          "body": {"mode": "raw", "raw": "Hello {{ unclosed"}}},
        {"name": "triple", "request": {"method": "POST", "url": "http://h.test/t",
          "body": {"mode": "raw", "raw": "{{{who}}}"}}},
        {"name": "query", "request": {"method": "GET", "url": "http://h.test/q?x={{"}},
        {"name": "fine", "request": {"method": "POST", "url": "http://h.test/f",
          "body": {"mode": "raw", "raw": "{\"who\": \"{{who}}\"}"}}}
      ]}"#;
    let out = import(text, "c.json", None, &PostmanOptions::default()).unwrap();
    let r = requests(&out);
    assert_eq!(r.len(), 1, "{:?}", out.warnings);
    assert_eq!(r[0].body.as_deref(), Some(r#"{"who": "alice"}"#));
    for (name, field) in [("template", "body"), ("triple", "body"), ("query", "URL")] {
        let said = format!("\"{name}\": left out: its {field} holds a literal `{{{{`");
        assert!(
            out.warnings.iter().any(|w| w.starts_with(&said)),
            "{said}: {:?}",
            out.warnings
        );
    }
    assert_round_trip(&out);
}

#[test]
fn newmans_sample_collection_imports_and_its_v1_form_is_refused() {
    let out = import(NEWMAN, "sample.json", None, &PostmanOptions::default()).unwrap();
    let r = requests(&out);
    assert_eq!(r.len(), 3);
    assert_eq!(out.plan.target_url, "https://echo.getpostman.com");
    assert_eq!(r[0].url, "/get?source=newman-sample-github-collection");
    assert_eq!(r[0].checks, ["status == 200"], "the legacy tests[] line");
    assert_eq!(
        r[2].body.as_deref(),
        Some(r#"{"text":"Duis posuere augue vel cursus pharetra. In luctus a ex nec pretium..."}"#)
    );
    assert_round_trip(&out);
    let err = import(NEWMAN_V1, "v1.json", None, &PostmanOptions::default())
        .unwrap_err()
        .to_string();
    assert_eq!(err, "v1.json: Postman collection format v1 is not supported (supported: v2.0, v2.1 (export the collection again as v2.1))");
}

#[test]
fn auth_secrets_unknown_variables_and_bodies() {
    let text = r#"{
      "info": {"name": "c", "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"},
      "variable": [{"key": "host", "value": "api.test"}, {"key": "apiKey", "value": "k-123456"}],
      "item": [
        {"name": "basic", "request": {"method": "GET", "url": "https://{{host}}/a",
          "auth": {"type": "basic", "basic": [{"key": "username", "value": "u"}, {"key": "password", "value": "p"}]}}},
        {"name": "key", "request": {"method": "GET", "url": "https://{{host}}/b?x=1",
          "auth": {"type": "apikey", "apikey": [{"key": "key", "value": "api_key"}, {"key": "value", "value": "{{apiKey}}"}, {"key": "in", "value": "query"}]}}},
        {"name": "gql", "request": {"method": "POST", "url": "https://{{host}}/graphql",
          "header": [{"key": "X-Tenant", "value": "{{tenant}}"}, {"key": "X-Off", "value": "1", "disabled": true}],
          "body": {"mode": "graphql", "graphql": {"query": "{ me { id } }", "variables": "{\"a\": 1}"}}}},
        {"name": "elsewhere", "request": "https://other.test/x"}
      ]}"#;
    let out = import(text, "c.json", None, &PostmanOptions::default()).unwrap();
    let r = requests(&out);
    assert_eq!(
        r[0].headers,
        [(
            "Authorization".to_string(),
            "Basic {{csv basic}}".to_string()
        )]
    );
    assert_eq!(r[1].url, "/b?x=1&api_key={{csv api_key}}");
    assert_eq!(
        r[2].headers,
        [
            ("X-Tenant".to_string(), "{{csv tenant}}".to_string()),
            ("Content-Type".into(), "application/json".into())
        ]
    );
    assert_eq!(
        r[2].body.as_deref(),
        Some(r#"{"query":"{ me { id } }","variables":{"a":1}}"#)
    );
    assert_eq!(r.len(), 3, "the other host is left out");
    assert!(out
        .warnings
        .iter()
        .any(|w| w.contains("\"elsewhere\": left out")));
    let names: Vec<_> = out.secrets.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["basic", "api_key", "tenant"]);
    let kept = PostmanOptions {
        common: Options {
            keep_secrets: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let out = import(text, "c.json", None, &kept).unwrap();
    assert_eq!(requests(&out)[0].headers[0].1, "Basic dTpw");
}

#[test]
fn bad_collections_say_where() {
    let err = |t: &str| {
        import(t, "c.json", None, &PostmanOptions::default())
            .unwrap_err()
            .to_string()
    };
    assert!(err("{\n\"info\": }").starts_with("c.json:2:"));
    assert!(err(r#"{"info": {"schema": "https://schema.getpostman.com/json/collection/v3.0.0/"}, "item": []}"#).contains("v3.0.0/ is not supported"));
    assert!(err(r#"{"item": []}"#).contains("at /info: missing"));
    let env = import(
        JOURNEY,
        "j.json",
        Some(("{}", "env.json")),
        &PostmanOptions::default(),
    )
    .unwrap_err();
    assert!(env.to_string().contains("env.json: at /values: missing"));
}
