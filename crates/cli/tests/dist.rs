//! What a copied binary says about itself: `--version` and the build recorded in results,
//! shell completions loaded into a real bash, man pages rendered by `man -l`.

mod common;

use common::*;

use std::path::Path;
use std::process::{Command, Stdio};

/// The subcommands, each of which gets its own man page.
const SUBCOMMANDS: [&str; 16] = [
    "run",
    "find",
    "ws",
    "grpc",
    "serve",
    "quickstart",
    "bench",
    "report",
    "import",
    "schema",
    "merge",
    "compare",
    "history",
    "k8s",
    "completions",
    "man",
];

/// Subcommands of subcommands: a page each, which their parent's page names.
const NESTED: [(&str, &str); 10] = [
    ("import", "curl"),
    ("import", "har"),
    ("import", "openapi"),
    ("import", "postman"),
    ("history", "list"),
    ("history", "trend"),
    ("history", "detect"),
    ("history", "gate"),
    ("history", "import"),
    ("history", "compare"),
];

fn stdout_of(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn version_names_commit_target_and_features_and_every_result_records_them() {
    let version = stdout_of(loadmark().arg("--version"));
    let line = version.trim_end();
    let expected_start = format!("loadmark {} (commit ", env!("CARGO_PKG_VERSION"));
    assert!(line.starts_with(&expected_start), "{line}");
    assert!(line.contains(", features: "), "{line}");
    assert_eq!(
        stdout_of(loadmark().arg("-V")).trim_end(),
        line,
        "-V and --version say the same"
    );
    // Built inside this repository (the test runs from it), the commit is HEAD's, unless the
    // builder set LOADMARK_COMMIT on purpose.
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    if let (Ok(head), None) = (head, std::env::var_os("LOADMARK_COMMIT")) {
        if head.status.success() {
            let head = String::from_utf8(head.stdout).unwrap();
            assert!(
                line.contains(&format!("(commit {}, ", head.trim())),
                "{line} is not HEAD {head}"
            );
        }
    }

    let server = target();
    let dir = temp_dir("dist", "version");
    let out = dir.join("r.json");
    let url = format!("http://{}/status", server.local_addr());
    let args = ["run", &url, "-n", "50", "-c", "2", "-t", "1", "-o"];
    stdout_of(loadmark().args(args).arg(&out));
    let report = report_json(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(report.summary.requests.responses, 50);
    let build = report
        .environment
        .build
        .expect("the result records the build");
    assert_eq!(build.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(
        format!("loadmark {build}"),
        line,
        "the result records what --version says"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// Loads `loadmark completions bash` into a real bash and drives the completion function the
/// way readline does (COMP_WORDS, COMP_CWORD, then the function `complete -p` names).
fn bash_complete(script: &Path, words: &[&str]) -> Vec<String> {
    let driver = r#"
        set -u
        source "$1"; shift
        spec=$(complete -p loadmark) || { echo "no completion registered for loadmark" >&2; exit 9; }
        fn=$(sed -n 's/.* -F \([^ ]*\) .*/\1/p' <<<"$spec")
        [ -n "$fn" ] || { echo "no function in: $spec" >&2; exit 9; }
        COMP_WORDS=("$@")
        COMP_CWORD=$(( $# - 1 ))
        COMP_LINE="$*"
        COMP_POINT=${#COMP_LINE}
        COMP_TYPE=9
        "$fn" loadmark "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
        printf '%s\n' "${COMPREPLY[@]}"
    "#;
    let out = Command::new("bash")
        .args(["--noprofile", "--norc", "-c", driver, "driver"])
        .arg(script)
        .args(words)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "bash completion driver failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completion_completes_flags_and_subcommands() {
    let dir = temp_dir("dist", "bash");
    let script = dir.join("loadmark.bash");
    std::fs::write(&script, stdout_of(loadmark().args(["completions", "bash"]))).unwrap();

    assert_eq!(
        bash_complete(&script, &["loadmark", "run", "--no-k"]),
        ["--no-keepalive"],
        "`loadmark run --no-k<TAB>` completes to the one flag it can be"
    );
    let subcommands = bash_complete(&script, &["loadmark", "c"]);
    for want in ["compare", "completions"] {
        assert!(subcommands.iter().any(|s| s == want), "{subcommands:?}");
    }
    // Flags of another subcommand are not offered: completion follows the clap definitions.
    let ws = bash_complete(&script, &["loadmark", "ws", "--no-k"]);
    assert!(ws.is_empty(), "ws has no --no-keepalive: {ws:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn zsh_and_fish_completions_parse_in_their_shells() {
    let dir = temp_dir("dist", "zsh-fish");
    for (shell, check) in [("zsh", ["zsh", "-n"]), ("fish", ["fish", "--no-execute"])] {
        let text = stdout_of(loadmark().args(["completions", shell]));
        assert!(text.contains("no-keepalive"), "{shell}: {text}");
        let file = dir.join(format!("loadmark.{shell}"));
        std::fs::write(&file, text).unwrap();
        // .ci/run installs zsh and fish; a missing shell fails here rather than passing unseen.
        let out = Command::new(check[0])
            .arg(check[1])
            .arg(&file)
            .output()
            .unwrap_or_else(|e| panic!("{shell} is needed to check its completion: {e}"));
        assert!(
            out.status.success(),
            "{shell} does not parse the completion: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let bad = loadmark()
        .args(["completions", "tcsh"])
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("tcsh") && err.contains("bash"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// `man -l` renders a page file as a user would see it, as plain text.
fn render_man(page: &Path) -> String {
    let out = Command::new("man")
        .arg("-l")
        .arg(page)
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .env("LC_ALL", "C.UTF-8")
        // man-db's seccomp sandbox cannot start inside some containers; rendering needs none.
        .env("MAN_DISABLE_SECCOMP", "1")
        .output()
        .expect("man runs (.ci/run installs man-db)");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && err.trim().is_empty(),
        "man -l {} failed or warned: {err}",
        page.display()
    );
    // Without a terminal man prints plain text; strip any overstrike (x\bx) all the same.
    let mut text = String::new();
    for c in String::from_utf8(out.stdout).unwrap().chars() {
        if c == '\u{8}' {
            text.pop();
        } else {
            text.push(c);
        }
    }
    // Justified lines pad with extra spaces: compare words, not layout.
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn man_writes_one_page_per_subcommand_that_man_renders() {
    let dir = temp_dir("dist", "man");
    let pages = dir.join("man1");
    let listed = stdout_of(loadmark().arg("man").arg(&pages));
    let mut expected = vec![pages.join("loadmark.1")];
    expected.extend(
        SUBCOMMANDS
            .iter()
            .map(|s| pages.join(format!("loadmark-{s}.1"))),
    );
    expected.extend(
        NESTED
            .iter()
            .map(|(p, s)| pages.join(format!("loadmark-{p}-{s}.1"))),
    );
    let mut listed: Vec<_> = listed.lines().map(std::path::PathBuf::from).collect();
    listed.sort();
    expected.sort();
    assert_eq!(
        listed, expected,
        "one page per subcommand, and each is named"
    );
    let mut on_disk: Vec<_> = std::fs::read_dir(&pages)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    on_disk.sort();
    assert_eq!(on_disk, expected, "no help page or strays");

    let top = render_man(&pages.join("loadmark.1"));
    assert!(top.contains("NAME") && top.contains("SYNOPSIS"), "{top}");
    for sub in SUBCOMMANDS {
        assert!(
            top.contains(&format!("loadmark-{sub}(1)")),
            "loadmark(1) refers to loadmark-{sub}(1): {top}"
        );
    }
    assert!(
        top.contains("Exit codes: 0 ok"),
        "after_help is kept: {top}"
    );
    assert!(
        top.contains(&format!("{} (commit", env!("CARGO_PKG_VERSION"))),
        "the page names the build: {top}"
    );

    let run = render_man(&pages.join("loadmark-run.1"));
    assert!(run.contains("loadmark-run"), "NAME: {run}");
    assert!(run.contains("loadmark run"), "SYNOPSIS: {run}");
    assert!(run.contains("--no-keepalive"), "{run}");
    assert!(run.contains("--rate"), "{run}");
    assert!(run.contains("<URL>") || run.contains("URL"), "{run}");
    let ws = render_man(&pages.join("loadmark-ws.1"));
    assert!(
        ws.contains("loadmark ws") && ws.contains("WebSocket"),
        "{ws}"
    );
    for sub in SUBCOMMANDS {
        let page = render_man(&pages.join(format!("loadmark-{sub}.1")));
        assert!(
            page.contains(&format!("loadmark-{sub}")),
            "{sub}'s page names itself: {page}"
        );
    }
    for (parent, sub) in NESTED {
        let name = format!("loadmark-{parent}-{sub}");
        let page = render_man(&pages.join(format!("{name}.1")));
        assert!(page.contains(&name), "{name}'s page names itself: {page}");
        let up = render_man(&pages.join(format!("loadmark-{parent}.1")));
        assert!(
            up.contains(&format!("{name}(1)")),
            "loadmark-{parent}(1) refers to {name}(1): {up}"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}
