use super::*;
use crate::plan::RequestDoc;
use crate::testing::assert_round_trip;
use serde_json::json;

const PETSTORE: &str = include_str!("../../testdata/petstore3.openapi.yaml");
const TARGET: &str = include_str!("../../../../examples/import/target.openapi.yaml");

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

fn step<'a>(out: &'a Imported, name: &str) -> &'a RequestDoc {
    requests(out)
        .into_iter()
        .find(|r| r.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no step {name}:\n{}", out.yaml()))
}

fn header<'a>(r: &'a RequestDoc, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

#[test]
fn petstore_gives_a_step_per_operation_in_document_order_with_generated_bodies() {
    let out = import(PETSTORE, "petstore.yaml", &OpenApiOptions::default()).unwrap();
    let names: Vec<&str> = requests(&out)
        .iter()
        .map(|r| r.name.as_deref().unwrap())
        .collect();
    assert_eq!(names.len(), 19, "{names:?}");
    assert_eq!(&names[..3], ["updatePet", "addPet", "findPetsByStatus"]);
    assert_eq!(names[18], "deleteUser");
    assert_eq!(out.plan.target_url, "https://petstore3.swagger.io");
    let add = step(&out, "addPet");
    assert_eq!(add.url, "/api/v3/pet");
    assert_eq!(header(add, "Content-Type"), Some("application/json"));
    let pet: Value = serde_json::from_str(add.body.as_deref().unwrap()).unwrap();
    assert_eq!(pet["name"], "doggie", "the schema's example: {pet}");
    assert_eq!(
        pet["category"]["name"], "Dogs",
        "a $ref inside a $ref: {pet}"
    );
    assert_eq!(pet["photoUrls"], json!(["string"]));
    assert_eq!(pet["status"], "available", "the first enum value");
    let order: Value =
        serde_json::from_str(step(&out, "placeOrder").body.as_deref().unwrap()).unwrap();
    assert_eq!(order["shipDate"], "2024-01-01T00:00:00Z");
    assert_eq!(order["complete"], true);
    let user: Value =
        serde_json::from_str(step(&out, "createUser").body.as_deref().unwrap()).unwrap();
    assert_eq!(user["username"], "theUser");
    let by_status = step(&out, "findPetsByStatus");
    assert_eq!(by_status.url, "/api/v3/pet/findByStatus?status=available");
    assert_eq!(step(&out, "getPetById").url, "/api/v3/pet/1");
    assert_eq!(step(&out, "getOrderById").url, "/api/v3/store/order/1");
    assert_eq!(step(&out, "getUserByName").url, "/api/v3/user/string");
    assert_eq!(step(&out, "getPetById").checks, ["status == 200"]);
    // OAuth2 and the API key: columns of the data file, never values in the plan.
    assert_eq!(
        header(add, "Authorization"),
        Some("Bearer {{csv petstore_auth}}")
    );
    assert_eq!(
        header(step(&out, "getPetById"), "api_key"),
        Some("{{csv api_key}}")
    );
    assert_eq!(out.secrets.len(), 2);
    assert!(out
        .secrets_csv()
        .unwrap()
        .starts_with("petstore_auth,api_key\n"));
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("application/octet-stream")),
        "{:?}",
        out.warnings
    );
    assert_round_trip(&out);
}

#[test]
fn petstore_read_only_and_by_tag() {
    let opts = OpenApiOptions {
        methods: vec!["GET".into(), "HEAD".into()],
        tags: vec!["store".into()],
        ..Default::default()
    };
    let out = import(PETSTORE, "petstore.yaml", &opts).unwrap();
    let names: Vec<_> = requests(&out)
        .iter()
        .map(|r| r.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["getInventory", "getOrderById"]);
    assert!(
        out.warnings[0].starts_with("left out 17 operation(s)"),
        "{:?}",
        out.warnings
    );
    assert_round_trip(&out);
}

#[test]
fn the_targets_document_maps_servers_security_and_schema_checks() {
    let opts = OpenApiOptions {
        check_schema: true,
        ..Default::default()
    };
    let out = import(TARGET, "target.openapi.yaml", &opts).unwrap();
    assert_eq!(
        out.plan.target_url, "http://127.0.0.1:8080",
        "server variables' defaults"
    );
    let items = step(&out, "getItem");
    assert_eq!(items.url, "/items/3", "the parameter's first example");
    assert_eq!(
        header(items, "Authorization"),
        Some("Bearer {{csv bearer}}")
    );
    assert_eq!(
        items.checks,
        [
            "status == 200",
            "json /id exists",
            "json /name exists",
            "json /price exists"
        ]
    );
    assert_eq!(
        header(step(&out, "me"), "Cookie"),
        Some("session={{csv session}}")
    );
    assert_eq!(step(&out, "statusCode").url, "/status/204");
    assert_eq!(step(&out, "statusCode").checks, ["status in 200..299"]);
    assert_eq!(step(&out, "bytes").url, "/bytes/64", "the schema's minimum");
    let msg: Value = serde_json::from_str(step(&out, "echo").body.as_deref().unwrap()).unwrap();
    assert_eq!(
        msg,
        json!({"text": "string", "at": "2024-01-01T00:00:00Z", "level": "info", "count": 1, "parts": ["string"]})
    );
    assert_eq!(
        step(&out, "login").body.as_deref(),
        Some(r#"{"user":"alice"}"#)
    );
    assert_round_trip(&out);
}

#[test]
fn json_documents_and_base_urls_and_server_choice() {
    // Written out: json! would sort the paths.
    let text = r#"{
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "/v1"}, {"url": "https://b.example/v2"}],
        "paths": {"/z": {"get": {"responses": {"default": {"description": "x"}}}},
                  "/a": {"delete": {"responses": {"204": {"description": "x"}}}}}
    }"#;
    let out = import(
        text,
        "t.json",
        &OpenApiOptions {
            server: Some(2),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(out.plan.target_url, "https://b.example");
    let r = requests(&out);
    assert_eq!(
        (r[0].url.as_str(), r[1].url.as_str()),
        ("/v2/z", "/v2/a"),
        "document order"
    );
    assert_eq!(r[0].checks, ["status < 400"]);
    let opts = OpenApiOptions {
        base_url: Some("http://127.0.0.1:9/x".into()),
        ..Default::default()
    };
    let out = import(text, "t.json", &opts).unwrap();
    assert_eq!(requests(&out)[1].url, "/x/a");
    let err = import(
        text,
        "t.json",
        &OpenApiOptions {
            server: Some(3),
            ..Default::default()
        },
    );
    assert!(err
        .unwrap_err()
        .to_string()
        .contains("--server 3: the document lists 2"));
}

#[test]
fn bad_documents_say_where_or_which_versions() {
    let err = |text: &str| {
        import(text, "api.yaml", &OpenApiOptions::default())
            .unwrap_err()
            .to_string()
    };
    assert!(
        err("openapi: 3.0.0\npaths: [\n").starts_with("api.yaml:3:"),
        "{}",
        err("openapi: 3.0.0\npaths: [\n")
    );
    assert!(err("{\"openapi\": \"3.0.0\",\n \"paths\": }").starts_with("api.yaml:2:"));
    let swagger = err("swagger: '2.0'\ninfo: {title: t}\n");
    assert!(
        swagger.contains("Swagger 2.0 is not supported (supported: OpenAPI 3.0.x, 3.1.x"),
        "{swagger}"
    );
    assert!(err("openapi: 4.0.0\n").contains("4.0.0 is not supported"));
    assert!(err("info: {}\n").contains("at /openapi: missing"));
    let remote = err("openapi: 3.1.0\npaths:\n  /a:\n    get:\n      responses:\n        '200': {$ref: 'common.yaml#/R'}\n");
    assert!(
        remote
            .contains("at /paths/~1a/get/responses/200/$ref: $ref \"common.yaml#/R\": only local"),
        "{remote}"
    );
    let dangling = err("openapi: 3.1.0\npaths: {}\nx: {$ref: '#/components/nope'}\n");
    assert!(dangling.contains("points at nothing"), "{dangling}");
}

/// --per-tag: a scenario per tag in one plan, in the order tags are first met; untagged
/// operations in `untagged`, one with several tags under its first (said); the load asked
/// for is each scenario's.
#[test]
fn per_tag_gives_a_scenario_per_tag_with_the_load_asked_for() {
    let opts = OpenApiOptions {
        per_tag: true,
        common: Options {
            users: 2,
            duration: Some("5s".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let out = import(TARGET, "target.yaml", &opts).unwrap();
    let PlanBody::Scenarios(list) = &out.plan.body else {
        panic!("{}", out.yaml())
    };
    let got: Vec<(&str, Vec<&str>)> = list
        .iter()
        .map(|sc| {
            let steps = sc
                .steps
                .iter()
                .filter_map(|s| match s {
                    StepDoc::Request(r) => r.name.as_deref(),
                    _ => None,
                })
                .collect();
            (sc.name.as_str(), steps)
        })
        .collect();
    assert_eq!(
        got,
        [
            ("probes", vec!["status", "json", "statusCode", "bytes"]),
            ("untagged", vec!["echo"]),
            ("session", vec!["login", "me"]),
            ("items", vec!["listItems", "getItem"]),
        ]
    );
    for sc in list {
        assert_eq!(sc.load.users, 2);
        assert_eq!(
            (sc.load.iterations, sc.load.duration.as_deref()),
            (None, Some("5s"))
        );
    }
    assert!(
        out.warnings.iter().any(|w| w.contains(
            "several tags go under their first: GET /me (session, items: under session)"
        )),
        "{:?}",
        out.warnings
    );
    assert!(
        !out.yaml().contains("\nload:"),
        "nothing shared:\n{}",
        out.yaml()
    );
    assert_round_trip(&out);
    // With --tag, only those tags' operations, each under the first of those kept.
    let items = OpenApiOptions {
        tags: vec!["items".into()],
        ..opts
    };
    let out = import(TARGET, "target.yaml", &items).unwrap();
    let PlanBody::Scenarios(list) = &out.plan.body else {
        panic!()
    };
    assert_eq!(list.len(), 1);
    assert_eq!((list[0].name.as_str(), list[0].steps.len()), ("items", 3));
    assert_round_trip(&out);
    // Petstore: pet, store, user.
    let pets = OpenApiOptions {
        per_tag: true,
        ..Default::default()
    };
    let out = import(PETSTORE, "petstore.yaml", &pets).unwrap();
    let PlanBody::Scenarios(list) = &out.plan.body else {
        panic!()
    };
    let names: Vec<_> = list.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["pet", "store", "user"]);
    assert_eq!(list.iter().map(|s| s.steps.len()).sum::<usize>(), 19);
    assert_round_trip(&out);
}

/// A documented example holding `{{` (a template the API stores) leaves its operation out,
/// by name; the security scheme's own `{{csv NAME}}` is no such thing, and a query value is
/// percent-encoded (no `{{` left).
#[test]
fn an_example_with_a_double_brace_leaves_its_operation_out() {
    let doc = json!({
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "http://h.test"}],
        "security": [{"key": []}],
        "components": {"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Key"}}},
        "paths": {
            "/templates": {"post": {
                "operationId": "create",
                "requestBody": {"content": {"application/json": {"example": {"text": "Hi {{name}}"}}}},
                "responses": {"201": {"description": "ok"}}
            }},
            "/render": {"get": {
                "operationId": "render",
                "parameters": [
                    {"name": "t", "in": "query", "required": true, "example": "{{x}}"},
                    {"name": "X-Tpl", "in": "header", "required": true, "example": "{{y}}"}
                ],
                "responses": {"200": {"description": "ok"}}
            }},
            "/ok": {"get": {
                "operationId": "ok",
                "parameters": [{"name": "t", "in": "query", "required": true, "example": "{{x}}"}],
                "responses": {"200": {"description": "ok"}}
            }}
        }
    })
    .to_string();
    let out = import(&doc, "t.json", &OpenApiOptions::default()).unwrap();
    let names: Vec<_> = requests(&out)
        .iter()
        .map(|r| r.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["ok"]);
    assert_eq!(header(requests(&out)[0], "X-Key"), Some("{{csv key}}"));
    assert_eq!(requests(&out)[0].url, "/ok?t=%7B%7Bx%7D%7D");
    for said in [
        "\"POST /templates\": left out: its body (from the document's example) holds a literal `{{`",
        "\"GET /render\": left out: its X-Tpl header (from the document's example) holds",
    ] {
        assert!(
            out.warnings.iter().any(|w| w.starts_with(said)),
            "{said}: {:?}",
            out.warnings
        );
    }
    assert_round_trip(&out);
}
