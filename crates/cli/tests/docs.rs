//! The docs cannot go stale: every `loadmark` command of the README and the book (docs/src)
//! runs here against the built-in target, bounded, and must exit as the docs say (0, or the
//! `# exits N` of its comment). The conventions (URLs, caps, `no-run` blocks) are written for
//! readers at the top of the book, docs/src/introduction.md; `docs_support/extract.rs` is
//! their implementation. Relative links of the same files must point at files that exist.

mod common;
#[path = "docs_support/extract.rs"]
mod extract;

use common::*;
use extract::{bench_overrides, bound, commands, doc_files, retarget, words, DocCommand};
use std::collections::VecDeque;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// At least this many commands must run: a broken extraction that finds none must fail.
const MIN_RAN: usize = 80;
/// Each command's bound; the longest (a few plan steps of 1 s, each launching a server) take
/// about 15 s on a busy two-core machine, so this is only hit by a command that hangs.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// Pages run side by side, each page's commands in order (a later one reads what an earlier
/// one wrote).
const PARALLEL_PAGES: usize = 3;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn all_commands() -> Vec<DocCommand> {
    let root = repo_root();
    doc_files(&root)
        .iter()
        .flat_map(|f| commands(f, &std::fs::read_to_string(f).unwrap()))
        .collect()
}

/// What a command did, for the summary and the failure message.
struct Outcome {
    command: DocCommand,
    ran: String,
    code: Option<i32>,
    output: String,
}

/// Plans launch their servers on fixed ports (examples/*.yaml): one plan runs at a time.
static BENCH: Mutex<()> = Mutex::new(());

#[test]
fn every_command_in_the_docs_runs_as_documented() {
    let all = all_commands();
    let skipped = all.iter().filter(|c| c.skip).count();
    let server = loadmark_target::start(loadmark_target::ServerConfig {
        addr: ([127, 0, 0, 1], 0).into(),
        threads: 2,
        http2: true,
        ..Default::default()
    })
    .unwrap();
    let addr = server.local_addr().to_string();
    let bin_dir = temp_dir("docs", "bin");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_loadmark"), bin_dir.join("loadmark")).unwrap();

    // One queue entry per page, its runnable commands in order.
    let mut pages: Vec<Vec<DocCommand>> = Vec::new();
    for command in all.into_iter().filter(|c| !c.skip) {
        match pages.last_mut() {
            Some(page) if page[0].file == command.file => page.push(command),
            _ => pages.push(vec![command]),
        }
    }
    let queue = Mutex::new(pages.into_iter().collect::<VecDeque<_>>());
    let outcomes = Mutex::new(Vec::new());
    let kept = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..PARALLEL_PAGES {
            s.spawn(|| loop {
                let Some(page) = queue.lock().unwrap().pop_front() else {
                    break;
                };
                let dir = temp_dir("docs", "page");
                std::os::unix::fs::symlink(repo_root().join("examples"), dir.join("examples"))
                    .unwrap();
                let mut failed = false;
                for command in page {
                    let outcome = run_one(command, &addr, &dir, &bin_dir);
                    failed |= outcome.code != Some(outcome.command.expect);
                    outcomes.lock().unwrap().push(outcome);
                }
                if failed {
                    kept.lock().unwrap().push(dir);
                }
            });
        }
    });
    let outcomes = outcomes.into_inner().unwrap();
    let failures: Vec<String> = outcomes
        .iter()
        .filter(|o| o.code != Some(o.command.expect))
        .map(|o| {
            format!(
                "{}:{}: {}\n  ran: {}\n  exit {:?}, the docs say {}\n{}",
                o.command
                    .file
                    .strip_prefix(repo_root())
                    .unwrap_or(&o.command.file)
                    .display(),
                o.command.line,
                o.command.text,
                o.ran,
                o.code,
                o.command.expect,
                tail(&o.output, 1500)
            )
        })
        .collect();
    println!(
        "docs: {} commands ran, {} skipped (no-run), {} failed, in {:.0?}",
        outcomes.len(),
        skipped,
        failures.len(),
        started.elapsed()
    );
    assert!(failures.is_empty(), "{} of the docs' commands did not run as documented (scratch directories kept above):\n\n{}", failures.len(), failures.join("\n\n"));
    assert!(
        outcomes.len() >= MIN_RAN,
        "only {} commands ran; expected at least {MIN_RAN}",
        outcomes.len()
    );
    drop(kept);
}

fn tail(text: &str, max: usize) -> String {
    let start = text.len().saturating_sub(max);
    let start = (start..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    text[start..].to_string()
}

fn run_one(command: DocCommand, addr: &str, dir: &Path, bin_dir: &Path) -> Outcome {
    let retargeted = match retarget(&command.text, addr) {
        Ok(text) => text,
        Err(why) => {
            return Outcome {
                ran: String::new(),
                code: None,
                output: format!("{} (mark its block sh,no-run)", why.0),
                command,
            }
        }
    };
    let mut argv = bound(&words(&retargeted));
    let sub = argv.get(1).cloned().unwrap_or_default();
    let plan_run = sub == "bench" && !argv.iter().any(|w| w == "--check" || w == "--explain");
    if plan_run {
        if let Some(plan) = argv
            .iter()
            .find(|w| w.ends_with(".yaml") || w.ends_with(".yml"))
        {
            let text = std::fs::read_to_string(dir.join(plan)).unwrap_or_default();
            argv.extend(bench_overrides(&text));
        }
    }
    let ran = argv.join(" ");
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out_file = dir.join(format!("out-{}.log", command.line));
    let mut sh = std::process::Command::new("sh");
    sh.arg("-c")
        .arg(&ran)
        .current_dir(dir)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_file).unwrap())
        .stderr(std::fs::File::create(dir.join(format!("err-{}.log", command.line))).unwrap());
    std::os::unix::process::CommandExt::process_group(&mut sh, 0);
    let serve = sub == "serve";
    if serve {
        // Read as it comes: the test waits for the "listening on" line.
        sh.stdout(Stdio::piped());
    }
    let _bench = plan_run.then(|| BENCH.lock().unwrap_or_else(|e| e.into_inner()));
    let mut child = sh.spawn().unwrap();
    let mut output = String::new();
    let code = if serve {
        let listening = said_listening(&mut child, &mut output);
        kill_group(&child, libc::SIGINT);
        // Stopped at all: its exit status is Ctrl-C's business, not the docs'.
        let stopped = wait_bounded(child, Duration::from_secs(10));
        (listening && stopped.is_some()).then_some(0)
    } else {
        wait_bounded(child, COMMAND_TIMEOUT).flatten()
    };
    for name in [
        format!("out-{}.log", command.line),
        format!("err-{}.log", command.line),
    ] {
        if let Ok(mut f) = std::fs::File::open(dir.join(name)) {
            let _ = f.read_to_string(&mut output);
        }
    }
    Outcome {
        command,
        ran,
        code,
        output,
    }
}

/// The exit status's code (None when a signal ended it), or None after killing the command's
/// process group at the deadline.
fn wait_bounded(mut child: Child, timeout: Duration) -> Option<Option<i32>> {
    let group = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait().ok().and_then(|s| s.code()));
    });
    let code = match rx.recv_timeout(timeout) {
        Ok(code) => Some(code),
        Err(_) => {
            // SAFETY: kill(2) on the process group this test made for the child.
            unsafe { libc::kill(-group, libc::SIGKILL) };
            let _ = rx.recv();
            None
        }
    };
    waiter.join().unwrap();
    code
}

fn kill_group(child: &Child, signal: i32) {
    // SAFETY: kill(2) on the process group this test made for the child (process_group(0)).
    unsafe { libc::kill(-(child.id() as i32), signal) };
}

/// Whether `loadmark serve` said "listening on" within 30 s (its stdout is collected into
/// `output`); a reader thread forwards its lines, so the wait ends at the line.
fn said_listening(child: &mut Child, output: &mut String) -> bool {
    use std::io::BufRead;
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        output.push_str(&line);
        output.push('\n');
        if line.contains("listening on") {
            return true;
        }
    }
    false
}

/// Relative links in the README and the book point at files that exist (mdBook does not
/// check them), every page is in SUMMARY.md, and every `{{#include}}` names a file.
#[test]
fn links_and_includes_resolve_and_every_page_is_in_the_summary() {
    let root = repo_root();
    let summary = std::fs::read_to_string(root.join("docs/src/SUMMARY.md")).unwrap();
    let mut broken = Vec::new();
    for file in doc_files(&root) {
        let text = std::fs::read_to_string(&file).unwrap();
        let dir = file.parent().unwrap();
        let mut targets: Vec<String> = Vec::new();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            if let Some(end) = after.find(')') {
                targets.push(after[..end].to_string());
            }
            rest = after;
        }
        let mut rest = text.as_str();
        while let Some(at) = rest.find("{{#include ") {
            let after = &rest[at + 11..];
            if let Some(end) = after.find("}}") {
                targets.push(after[..end].trim().to_string());
            }
            rest = after;
        }
        for target in targets {
            let path = target.split('#').next().unwrap();
            if path.is_empty() || path.contains("://") || path.starts_with("mailto:") {
                continue;
            }
            if !dir.join(path).exists() {
                broken.push(format!(
                    "{}: {target}",
                    file.strip_prefix(&root).unwrap().display()
                ));
            }
        }
        if let Ok(page) = file.strip_prefix(root.join("docs/src")) {
            let page = page.to_str().unwrap();
            if page != "SUMMARY.md" && !summary.contains(&format!("({page})")) {
                broken.push(format!("docs/src/{page}: not in SUMMARY.md"));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "broken links or pages:\n{}",
        broken.join("\n")
    );
}

/// The README stays what a newcomer reads on a screen or two (the rest is the book).
#[test]
fn the_readme_fits_in_250_lines_and_says_how_to_install() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines; move detail into docs/src"
    );
    let head: String = readme.lines().take(15).collect::<Vec<_>>().join("\n");
    assert!(
        head.contains("cargo install --locked --path crates/cli"),
        "the README's first lines say how to install loadmark"
    );
    for tool in [
        "wrk",
        "wrk2",
        "ab",
        "oha",
        "hey",
        "bombardier",
        "vegeta",
        "k6",
    ] {
        assert!(
            readme.contains(&format!("**{tool}**")),
            "the README's cheat sheet has no entry for {tool}"
        );
    }
}
