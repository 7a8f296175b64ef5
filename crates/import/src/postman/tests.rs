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

#[test]
fn without_a_folder_all_are_flattened_and_said() {
    let out = import(JOURNEY, "journey.json", None, &PostmanOptions::default()).unwrap();
    let r = requests(&out);
    assert_eq!(r.len(), 5);
    assert!(
        out.warnings[0].contains("folders (Journey, Health) are one scenario"),
        "{:?}",
        out.warnings
    );
    let form = r[4];
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
        folder: None,
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
