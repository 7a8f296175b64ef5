//! Finding the commands in the docs, and bounding them for a test run. The conventions are
//! written for readers at the top of the book (docs/src/introduction.md); this is their
//! one implementation.

use std::path::{Path, PathBuf};

/// One `loadmark ...` line of a fenced shell block.
#[derive(Debug, Clone)]
pub struct DocCommand {
    pub file: PathBuf,
    /// 1-based line of the command's first line.
    pub line: usize,
    /// As written, continuation lines joined, the `$ ` prompt and the trailing comment removed.
    pub text: String,
    /// The exit code the docs imply: 0, or the `# exits N` of the line's comment.
    pub expect: i32,
    /// In a block whose info string says `no-run`.
    pub skip: bool,
}

/// The README and every page of the book, in a fixed order.
pub fn doc_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md")];
    let mut pages = Vec::new();
    walk(&root.join("docs/src"), &mut pages);
    pages.sort();
    files.extend(pages);
    files
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// The `loadmark` commands of one Markdown file: lines starting with `loadmark ` in fenced
/// blocks whose language is `sh`, `bash` or `console`.
pub fn commands(file: &Path, text: &str) -> Vec<DocCommand> {
    let mut found = Vec::new();
    // Some((runnable language, no-run)) inside a fence.
    let mut block: Option<(bool, bool)> = None;
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if trimmed.starts_with("```") {
            block = match block {
                Some(_) => None,
                None => {
                    let info = trimmed.trim_start_matches('`').trim();
                    let lang = info.split([',', ' ']).next().unwrap_or("");
                    Some((
                        matches!(lang, "sh" | "bash" | "console"),
                        info.contains("no-run"),
                    ))
                }
            };
            pending = None;
            continue;
        }
        let Some((true, skip)) = block else { continue };
        let line = trimmed.strip_prefix("$ ").unwrap_or(trimmed);
        let (start, joined) = match pending.take() {
            Some((start, so_far)) => (start, format!("{so_far} {line}")),
            None if line.starts_with("loadmark ") => (i + 1, line.to_string()),
            None => continue,
        };
        if let Some(head) = joined.strip_suffix('\\') {
            pending = Some((start, head.trim_end().to_string()));
            continue;
        }
        let (command, comment) = split_comment(&joined);
        found.push(DocCommand {
            file: file.to_path_buf(),
            line: start,
            text: command.trim().to_string(),
            expect: expected_exit(comment),
            skip,
        });
    }
    found
}

/// Splits a shell line at its comment: a `#` outside quotes that starts a word.
fn split_comment(line: &str) -> (&str, &str) {
    let (mut single, mut double) = (false, false);
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => return (&line[..i], &line[i..]),
            _ => {}
        }
        prev = c;
    }
    (line, "")
}

fn expected_exit(comment: &str) -> i32 {
    comment
        .split("exits ")
        .nth(1)
        .and_then(|rest| {
            let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
            digits.parse().ok()
        })
        .unwrap_or(0)
}

/// Splits a command into words, keeping each word's quotes as written.
pub fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut single, mut double) = (false, false);
    for c in command.chars() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            c if c.is_whitespace() && !single && !double => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A word without its outer quotes, and a function that puts them back.
fn unquote(word: &str) -> (String, Option<char>) {
    for q in ['\'', '"'] {
        if word.len() >= 2 && word.starts_with(q) && word.ends_with(q) {
            return (word[1..word.len() - 1].to_string(), Some(q));
        }
    }
    (word.to_string(), None)
}

fn requote(value: &str, quote: Option<char>) -> String {
    match quote {
        Some(q) => format!("{q}{value}{q}"),
        None => value.to_string(),
    }
}

/// Why a command cannot run in the test (it needs a block marked no-run).
#[derive(Debug)]
pub struct NeedsNoRun(pub String);

/// Points every URL of the command at `addr` (the test's built-in target, `127.0.0.1:PORT`).
pub fn retarget(command: &str, addr: &str) -> Result<String, NeedsNoRun> {
    let mut out = String::new();
    let mut rest = command;
    while let Some(at) = rest.find("://") {
        let scheme_start = rest[..at]
            .rfind(|c: char| !c.is_ascii_alphanumeric())
            .map_or(0, |i| i + 1);
        let scheme = &rest[scheme_start..at];
        if matches!(scheme, "https" | "wss") {
            return Err(NeedsNoRun(format!(
                "{scheme}:// cannot reach the test's target (it has no TLS)"
            )));
        }
        out.push_str(&rest[..at + 3]);
        let host_end = rest[at + 3..]
            .find(['/', '\'', '"', ' ', '?'])
            .map_or(rest.len(), |i| at + 3 + i);
        if matches!(scheme, "http" | "ws") {
            out.push_str(addr);
        } else {
            out.push_str(&rest[at + 3..host_end]);
        }
        rest = &rest[host_end..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Seconds in a duration as the CLI writes it (`500ms`, `30s`, `2m`, `1m30s`, `1h`).
fn seconds(value: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut number = String::new();
    let mut chars = value.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            number.push(c);
            continue;
        }
        let mut unit = c.to_string();
        while let Some(&n) = chars.peek() {
            if n.is_ascii_alphabetic() {
                unit.push(n);
                chars.next();
            } else {
                break;
            }
        }
        let n: f64 = number.parse().ok()?;
        number.clear();
        total += n * match unit.as_str() {
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        any = true;
    }
    (any && number.is_empty()).then_some(total)
}

fn cap_duration(value: &str, cap: &str) -> String {
    match (seconds(value), seconds(cap)) {
        (Some(v), Some(c)) if v > c => cap.to_string(),
        _ => value.to_string(),
    }
}

fn cap_number(value: &str, cap: f64) -> String {
    match value.parse::<f64>() {
        Ok(v) if v > cap => format!("{cap}"),
        _ => value.to_string(),
    }
}

/// Stages with every duration 1 s and every rate or count at most 2000.
fn cap_stages(spec: &str) -> String {
    spec.split(',')
        .map(|stage| match stage.split_once(':') {
            Some((_, to)) => {
                let to = to
                    .split("->")
                    .map(|n| cap_number(n.trim(), 2000.0))
                    .collect::<Vec<_>>()
                    .join("->");
                format!("1s:{to}")
            }
            None => stage.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The bounded form of a `loadmark` command's words (URLs already retargeted): durations,
/// counts, rates and connections capped, metrics on port 0 without the linger, `serve` and
/// `quickstart` on a free port. The plan's own settings of a `bench` are shortened by
/// [`bench_overrides`].
pub fn bound(words: &[String]) -> Vec<String> {
    let sub = words.get(1).map(String::as_str).unwrap_or("");
    let warmup = words.iter().any(|w| w.starts_with("--warmup"));
    let max_d = if warmup { "2s" } else { "1s" };
    let mut out: Vec<String> = Vec::new();
    let mut port_given = false;
    let mut linger_given = false;
    let mut i = 0;
    while i < words.len() {
        let word = &words[i];
        // The flag, and its value: the next word, after `=`, or attached to a short flag.
        let (flag, attached) =
            if let Some((f, v)) = word.split_once('=').filter(|_| word.starts_with("--")) {
                (f.to_string(), Some(v.to_string()))
            } else if word.len() > 2 && word.starts_with('-') && !word.starts_with("--") {
                (word[..2].to_string(), Some(word[2..].to_string()))
            } else {
                (word.clone(), None)
            };
        let capped = |value: &str| -> Option<String> {
            let (v, q) = unquote(value);
            let new = match (sub, flag.as_str()) {
                ("run" | "ws" | "quickstart", "-d" | "--duration" | "-z") => {
                    cap_duration(&v, max_d)
                }
                ("ws", "--session-duration") => cap_duration(&v, "1s"),
                ("run" | "ws", "--warmup") => cap_duration(&v, "1s"),
                ("run" | "ws", "-n" | "--requests" | "--messages") => cap_number(&v, 2000.0),
                ("run" | "ws" | "quickstart", "-c" | "--connections" | "--sessions") => {
                    cap_number(&v, 20.0)
                }
                ("run" | "ws", "-t" | "--threads") => cap_number(&v, 2.0),
                ("run", "-R" | "--rate") => cap_number(&v, 2000.0),
                ("run", "--max-connections") => cap_number(&v, 50.0),
                ("run", "--stages") => cap_stages(&v),
                (_, "--metrics-listen") => "127.0.0.1:0".to_string(),
                (_, "--metrics-linger") => "0".to_string(),
                ("serve" | "quickstart", "-p" | "--port") => "0".to_string(),
                ("bench", "-o") if v.contains('=') => {
                    let (key, val) = v.split_once('=').expect("checked");
                    format!("{key}={}", cap_duration(val, "1s"))
                }
                _ => return None,
            };
            Some(requote(&new, q))
        };
        if matches!(flag.as_str(), "-p" | "--port") && matches!(sub, "serve" | "quickstart") {
            port_given = true;
        }
        if flag == "--metrics-linger" {
            linger_given = true;
        }
        match attached {
            Some(value) => match capped(&value) {
                Some(new) if word.starts_with("--") => out.push(format!("{flag}={new}")),
                Some(new) => out.push(format!("{flag}{new}")),
                None => out.push(word.clone()),
            },
            None => match words.get(i + 1).and_then(|next| capped(next)) {
                Some(new) if word.starts_with('-') => {
                    out.push(word.clone());
                    out.push(new);
                    i += 1;
                }
                _ => out.push(word.clone()),
            },
        }
        i += 1;
    }
    if matches!(sub, "serve" | "quickstart") && !port_given {
        out.push("--port".into());
        out.push("0".into());
    }
    if words.iter().any(|w| w.starts_with("--metrics-listen")) && !linger_given {
        out.push("--metrics-linger".into());
        out.push("0".into());
    }
    out
}

/// `-o KEY=VALUE` overrides that shorten a plan's own durations to about a second (the plan
/// file as the docs name it, relative to the directory the command runs in).
pub fn bench_overrides(plan: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut set = |key: &str, value: &str| {
        out.push("-o".to_string());
        out.push(format!("{key}={value}"));
    };
    let value_of = |key: &str| -> Option<String> {
        plan.lines().find_map(|l| {
            let l = l.trim().trim_start_matches("- ");
            l.strip_prefix(key)
                .and_then(|r| r.strip_prefix(':'))
                .map(|v| {
                    v.split(" #")
                        .next()
                        .unwrap_or("")
                        .trim()
                        .trim_matches(['\'', '"'])
                        .to_string()
                })
        })
    };
    if plan.lines().any(|l| l.starts_with("execution:")) {
        // A Taurus config: one execution item.
        if value_of("hold-for").is_some() {
            set("execution.0.hold-for", "1s");
        }
        if value_of("ramp-up").is_some() {
            set("execution.0.ramp-up", "1s");
        }
        return out;
    }
    if value_of("duration").is_some() {
        set("load.duration", "1s");
    }
    if value_of("warmup").is_some() {
        set("load.warmup", "0s");
    }
    if value_of("session_duration").is_some() {
        set("websocket.session_duration", "1s");
    }
    if plan.lines().any(|l| l.starts_with("pause:")) {
        set("pause", "0s");
    }
    if let Some(stages) = value_of("stages") {
        set("load.stages", &cap_stages(&stages));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_join_continuations_and_read_the_exit_code() {
        let md = "text\n```sh\n# a comment\nloadmark run http://h:1/x \\\n    -n 5   # exits 3: fails\nother\n```\n```sh,no-run\nloadmark run https://x/\n```\n```yaml\nloadmark: no\n```\n";
        let found = commands(Path::new("f.md"), md);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].text, "loadmark run http://h:1/x -n 5");
        assert_eq!(
            (found[0].line, found[0].expect, found[0].skip),
            (4, 3, false)
        );
        assert!(found[1].skip);
    }

    #[test]
    fn a_hash_inside_quotes_is_not_a_comment() {
        assert_eq!(split_comment("a 'b # c' # d").0, "a 'b # c' ");
        assert_eq!(split_comment("a x#y").1, "");
    }

    #[test]
    fn urls_point_at_the_test_target_and_tls_needs_no_run() {
        let cmd = "loadmark run 'http://localhost:8080/a?b=1' -o k.url=http://api:9/x ws://h/ws";
        assert_eq!(
            retarget(cmd, "127.0.0.1:5").unwrap(),
            "loadmark run 'http://127.0.0.1:5/a?b=1' -o k.url=http://127.0.0.1:5/x ws://127.0.0.1:5/ws"
        );
        assert!(retarget("loadmark run https://host/", "a").is_err());
    }

    #[test]
    fn bounds_cap_every_spelling() {
        let w = words("loadmark run -t8 -c100 -d30s --duration=1m -n 2000000 -R 20000 --stages '10s:0->5000,40s:5000' --metrics-listen 127.0.0.1:9464 -c -5 -p body.json");
        assert_eq!(
            bound(&w).join(" "),
            "loadmark run -t2 -c20 -d1s --duration=1s -n 2000 -R 2000 --stages '1s:0->2000,1s:2000' --metrics-listen 127.0.0.1:0 -c -5 -p body.json --metrics-linger 0"
        );
        let w = words("loadmark run u -d 20s --warmup 5s");
        assert_eq!(bound(&w).join(" "), "loadmark run u -d 2s --warmup 1s");
        let w = words("loadmark serve --port 8080");
        assert_eq!(bound(&w).join(" "), "loadmark serve --port 0");
        assert_eq!(
            bound(&words("loadmark serve")).join(" "),
            "loadmark serve --port 0"
        );
        let w = words("loadmark bench t.yml -o execution.0.hold-for=20s -o x=y");
        assert_eq!(
            bound(&w).join(" "),
            "loadmark bench t.yml -o execution.0.hold-for=1s -o x=y"
        );
    }

    #[test]
    fn plans_are_shortened_by_overrides() {
        let plan = "load:\n  duration: 10s\n  stages: '5s:20,10s:20'\npause: 2s\n";
        assert_eq!(
            bench_overrides(plan).join(" "),
            "-o load.duration=1s -o pause=0s -o load.stages=1s:20,1s:20"
        );
        let taurus = "execution:\n- concurrency: 20\n  ramp-up: 10s\n  hold-for: 1m\n";
        assert_eq!(
            bench_overrides(taurus).join(" "),
            "-o execution.0.hold-for=1s -o execution.0.ramp-up=1s"
        );
    }
}
