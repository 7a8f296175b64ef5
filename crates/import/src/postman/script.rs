//! Postman scripts, line by line: what a plan can say is translated (plain assignments of
//! literals, status assertions, values set from the response's JSON or headers); every
//! other line is returned, so the importer lists it (never dropped silently).

use crate::pointer_token;

/// What a script says, as a plan says it.
#[derive(Debug, Default, PartialEq)]
pub struct Script {
    /// Variables set to literals (`pm.environment.set("user", "alice")`).
    pub sets: Vec<(String, String)>,
    /// Variables set from the response: (Postman name, extraction `json /token`).
    pub extracts: Vec<(String, String)>,
    pub checks: Vec<String>,
    /// Lines (trimmed) with something not translated.
    pub untranslated: Vec<String>,
}

/// Translates a script's lines.
pub fn translate(lines: &[String]) -> Script {
    let mut out = Script::default();
    let mut aliases: Vec<String> = Vec::new();
    for line in lines.iter().flat_map(|l| l.lines()) {
        let mut ok = true;
        for stmt in statements(line) {
            ok &= statement(stmt, &mut aliases, &mut out);
        }
        if !ok {
            out.untranslated.push(line.trim().to_string());
        }
    }
    out
}

/// A line's statements, without a `pm.test("...", function () {` opening or a `});`
/// closing, which only group assertions.
fn statements(line: &str) -> Vec<&str> {
    let mut s = line.trim();
    if s.starts_with("//") {
        return Vec::new();
    }
    if s.starts_with("pm.test(") {
        if let Some(at) = s.find('{') {
            s = &s[at + 1..];
        }
    }
    for end in ["});", "})", "}"] {
        if let Some(rest) = s.strip_suffix(end) {
            s = rest;
            break;
        }
    }
    s.split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

/// One statement; false if it could not be translated.
fn statement(s: &str, aliases: &mut Vec<String>, out: &mut Script) -> bool {
    for decl in ["var ", "let ", "const "] {
        if let Some((name, value)) = s.strip_prefix(decl).and_then(|r| r.split_once('=')) {
            let value = value.trim();
            if value == "pm.response.json()" || value == "JSON.parse(responseBody)" {
                aliases.push(name.trim().to_string());
                return true;
            }
        }
    }
    if let Some(check) = status_check(s) {
        out.checks.push(check);
        return true;
    }
    let Some((name, value)) = setter(s) else {
        return false;
    };
    if let Some(lit) = literal(value) {
        out.sets.push((name, lit));
        return true;
    }
    match extraction(value, aliases) {
        Some(e) => {
            out.extracts.push((name, e));
            true
        }
        None => false,
    }
}

/// `pm.response.to.have.status(200)` and its spellings, as a check.
fn status_check(s: &str) -> Option<String> {
    let number = |r: &str| r.trim().parse::<u16>().ok();
    if let Some(r) = s.strip_prefix("pm.response.to.have.status(") {
        return Some(format!("status == {}", number(r.strip_suffix(')')?)?));
    }
    for pre in [
        "pm.expect(pm.response.code).to.eql(",
        "pm.expect(pm.response.code).to.equal(",
    ] {
        if let Some(r) = s.strip_prefix(pre) {
            return Some(format!("status == {}", number(r.strip_suffix(')')?)?));
        }
    }
    if matches!(s, "pm.response.to.be.ok" | "pm.response.to.be.success") {
        return Some("status in 200..299".into());
    }
    if let Some(r) = s.strip_prefix("pm.response.to.have.header(") {
        let name = literal(r.strip_suffix(')')?)?;
        return Some(format!("header {name} exists"));
    }
    // The legacy sandbox: tests["..."] = responseCode.code === 200
    let (_, rhs) = s.strip_prefix("tests[")?.split_once("] =")?;
    let code = rhs
        .trim()
        .trim_start_matches('(')
        .strip_prefix("responseCode.code")?
        .trim();
    let code = code.strip_prefix("===").or(code.strip_prefix("=="))?;
    Some(format!(
        "status == {}",
        number(code.trim_end_matches(')').trim_start_matches('('))?
    ))
}

/// `pm.environment.set("name", VALUE)` (and pm.variables, pm.collectionVariables,
/// pm.globals, the legacy postman.setEnvironmentVariable): the name and VALUE's text.
fn setter(s: &str) -> Option<(String, &str)> {
    const SETTERS: &[&str] = &[
        "pm.environment.set(",
        "pm.variables.set(",
        "pm.collectionVariables.set(",
        "pm.globals.set(",
        "postman.setEnvironmentVariable(",
        "postman.setGlobalVariable(",
    ];
    let args = SETTERS
        .iter()
        .find_map(|p| s.strip_prefix(p))?
        .strip_suffix(')')?;
    let (name, value) = args.split_once(',')?;
    Some((literal(name.trim())?, value.trim()))
}

/// A string or number literal's text (`"alice"`, `'x'`, `` `y` `` without `${}`, `42`).
fn literal(s: &str) -> Option<String> {
    let s = s.trim();
    for q in ['"', '\'', '`'] {
        if let Some(inner) = s.strip_prefix(q).and_then(|r| r.strip_suffix(q)) {
            let plain = !inner.contains(q) && !inner.contains('\\') && !inner.contains("${");
            return plain.then(|| inner.to_string());
        }
    }
    s.parse::<f64>().is_ok().then(|| s.to_string())
}

/// A value read from the response: `pm.response.json().a[0].b` or `ALIAS.a` as `json /a/0/b`,
/// `pm.response.headers.get("X")` as `header X`.
fn extraction(value: &str, aliases: &[String]) -> Option<String> {
    if let Some(r) = value.strip_prefix("pm.response.headers.get(") {
        return Some(format!("header {}", literal(r.strip_suffix(')')?)?));
    }
    let rest = value.strip_prefix("pm.response.json()").or_else(|| {
        aliases.iter().find_map(|a| {
            value
                .strip_prefix(a.as_str())
                .filter(|r| r.starts_with(['.', '[']))
        })
    })?;
    Some(format!("json {}", pointer(rest)?))
}

/// `.a[0]["b c"]` as `/a/0/b c` (escaped as JSON pointers are).
fn pointer(mut path: &str) -> Option<String> {
    let mut out = String::new();
    while !path.is_empty() {
        let (token, rest) = if let Some(r) = path.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let name = &r[..end];
            let ident = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_alphanumeric() || "_$".contains(c));
            (ident.then(|| name.to_string())?, &r[end..])
        } else {
            let (inside, r) = path.strip_prefix('[')?.split_once(']')?;
            let token = match inside.parse::<usize>() {
                Ok(n) => n.to_string(),
                Err(_) => literal(inside).filter(|_| inside.trim().parse::<f64>().is_err())?,
            };
            (token, r)
        };
        out.push('/');
        out.push_str(&pointer_token(&token));
        path = rest;
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn assignments_status_assertions_and_response_values_are_translated() {
        let s = translate(&lines(
            r#"pm.test("Status code is 200", function () {
    pm.response.to.have.status(200);
});
var jsonData = pm.response.json();
pm.environment.set("token", jsonData.token);
pm.collectionVariables.set('first', pm.response.json().items[0]["id"]);
pm.variables.set("user", "alice");
postman.setEnvironmentVariable("n", 3);
pm.globals.set("etag", pm.response.headers.get("ETag"));
tests["ok"] = responseCode.code === 201;
pm.test("ok", () => { pm.response.to.be.ok; });"#,
        ));
        assert_eq!(
            s.checks,
            ["status == 200", "status == 201", "status in 200..299"]
        );
        assert_eq!(
            s.extracts,
            [
                ("token".to_string(), "json /token".to_string()),
                ("first".into(), "json /items/0/id".into()),
                ("etag".into(), "header ETag".into())
            ]
        );
        assert_eq!(
            s.sets,
            [
                ("user".to_string(), "alice".to_string()),
                ("n".into(), "3".into())
            ]
        );
        assert!(s.untranslated.is_empty(), "{:?}", s.untranslated);
    }

    #[test]
    fn everything_else_is_listed() {
        let s = translate(&lines(
            "pm.expect(pm.response.json().name).to.include(\"item\");\n\
             pm.environment.set(\"t\", Date.now());\n\
             // a comment\n\
             if (x) { y(); }",
        ));
        assert_eq!(s.untranslated.len(), 3, "{:?}", s.untranslated);
        assert!(s.checks.is_empty() && s.sets.is_empty() && s.extracts.is_empty());
    }
}
