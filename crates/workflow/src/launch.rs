//! A plan's `launch:` block as the launcher's spec, and the command checks `bench --check`
//! makes: which programs a launch command runs that are not there.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use loadmark_launch::{LaunchSpec, Readiness};
use loadmark_plan::{Launch, LoadedPlan, Ready};

/// Why a launch block cannot become a launch spec.
#[derive(Debug, thiserror::Error)]
pub enum LaunchSpecError {
    /// `ready.port` does not resolve to an address: give it as host:port (127.0.0.1:8080).
    #[error("{name}: ready.port: {addr:?} is not host:port")]
    ReadyPort { name: String, addr: String },
}

impl LaunchSpecError {
    /// Every one is the plan's to fix.
    pub fn is_usage(&self) -> bool {
        true
    }
}

/// The launcher's spec of server `name`, logging into `log_dir/NAME.log`. `exe` is the
/// binary running the plan: `loadmark` in the command means it (see [`own_binary`]).
pub fn launch_spec(
    name: &str,
    l: &Launch,
    log_dir: &Path,
    exe: Option<&Path>,
) -> Result<LaunchSpec, LaunchSpecError> {
    let ready = match &l.ready {
        Ready::Port(addr) => Readiness::Port(
            std::net::ToSocketAddrs::to_socket_addrs(addr)
                .ok()
                .and_then(|mut a| a.next())
                .ok_or_else(|| LaunchSpecError::ReadyPort {
                    name: name.to_string(),
                    addr: addr.clone(),
                })?,
        ),
        Ready::Http(url) => Readiness::Http(url.clone()),
        Ready::Delay(d) => Readiness::Delay(*d),
    };
    Ok(LaunchSpec {
        name: name.to_string(),
        command: match exe {
            Some(exe) => own_binary(&l.command, exe),
            None => l.command.clone(),
        },
        env: l.env.clone(),
        cwd: l.cwd.clone(),
        ready,
        ready_timeout: l.ready_timeout,
        stop_grace: l.stop_grace,
        log_path: log_dir.join(format!("{name}.log")),
    })
}

/// Shell builtins and keywords: nothing to find on PATH.
const SHELL_WORDS: &[&str] = &[
    "cd", "exec", "export", "set", "unset", ".", "source", "true", "false", "echo", "test", "[",
    "ulimit", "umask", "trap", "wait", "eval", "exit", "if", "then", "else", "fi", "for", "do",
    "done", "while", "{", "}", "(", ")",
];

/// The index of each simple command's program word in `words` (after `exec` and `NAME=value`
/// assignments), for the commands of `command` separated by `;`, `&&`, `||`, `|` or `&`.
fn program_words(words: &[&str]) -> Vec<usize> {
    let mut found = Vec::new();
    let mut at_start = true;
    for (i, w) in words.iter().enumerate() {
        if matches!(*w, ";" | "&&" | "||" | "|" | "&") {
            at_start = true;
            continue;
        }
        if !at_start {
            continue;
        }
        let assignment = w.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if *w == "exec" || assignment {
            continue;
        }
        found.push(i);
        at_start = false;
    }
    found
}

/// `loadmark ...` in a plan's launch command runs this very binary, not whichever `loadmark`
/// PATH finds (or none, under `cargo run`): a plan measures the loadmark that runs it.
pub fn own_binary(command: &str, exe: &Path) -> String {
    let words: Vec<&str> = command.split(' ').collect();
    let programs = program_words(&words);
    let quoted = format!("'{}'", exe.display().to_string().replace('\'', r"'\''"));
    words
        .iter()
        .enumerate()
        .map(|(i, w)| {
            if *w == "loadmark" && programs.contains(&i) {
                quoted.as_str()
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The programs `command` runs that neither `path` (a PATH value) nor the file system has.
/// `loadmark` is always there: it is the binary running the plan.
pub fn missing_programs(command: &str, cwd: Option<&Path>, path: &OsStr) -> Vec<String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    program_words(&words)
        .into_iter()
        .map(|i| words[i])
        .filter(|w| *w != "loadmark" && !SHELL_WORDS.contains(w))
        .filter(|w| {
            // Quoting and expansions are the shell's business: say nothing rather than guess.
            !w.contains(['$', '`', '"', '\'', '(', '<', '>'])
        })
        .filter(|w| {
            use std::os::unix::fs::PermissionsExt;
            let executable = |p: &Path| {
                std::fs::metadata(p)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            };
            if w.contains('/') {
                let p = Path::new(w);
                let p: PathBuf = match cwd {
                    Some(dir) if p.is_relative() => dir.join(p),
                    _ => p.to_path_buf(),
                };
                !executable(&p)
            } else {
                !std::env::split_paths(path).any(|dir| executable(&dir.join(w)))
            }
        })
        .map(str::to_string)
        .collect()
}

/// A program a plan's launch command runs that is not there (`bench --check` warns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingProgram {
    /// Where the command is in the plan: `targets.NAME.launch` or `services.NAME`.
    pub at: String,
    pub program: String,
}

/// Every program the plan's targets and services would run that `path` does not have, in
/// plan order (targets first).
pub fn missing_in_plan(plan: &LoadedPlan, path: &OsStr) -> Vec<MissingProgram> {
    let launches = plan
        .launches
        .iter()
        .map(|(name, l)| (format!("targets.{name}.launch"), l))
        .chain(
            plan.services
                .services
                .iter()
                .map(|s| (format!("services.{}", s.name), &s.launch)),
        );
    let mut out = Vec::new();
    for (at, l) in launches {
        for program in missing_programs(&l.command, l.cwd.as_deref(), path) {
            out.push(MissingProgram {
                at: at.clone(),
                program,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn loadmark_in_a_launch_command_is_this_binary() {
        let exe = Path::new("/opt/my build/loadmark");
        assert_eq!(
            own_binary("loadmark serve --port 8080", exe),
            "'/opt/my build/loadmark' serve --port 8080"
        );
        assert_eq!(
            own_binary("RUST_LOG=info exec loadmark serve", exe),
            "RUST_LOG=info exec '/opt/my build/loadmark' serve"
        );
        assert_eq!(
            own_binary("cd /srv && loadmark serve --path loadmark", exe),
            "cd /srv && '/opt/my build/loadmark' serve --path loadmark"
        );
        assert_eq!(
            own_binary("nginx -c loadmark.conf", exe),
            "nginx -c loadmark.conf"
        );
        assert_eq!(
            own_binary("x", Path::new("/it's/loadmark")),
            "x",
            "nothing to replace"
        );
        assert_eq!(
            own_binary("loadmark serve", Path::new("/it's/loadmark")),
            r"'/it'\''s/loadmark' serve"
        );
    }

    #[test]
    fn missing_programs_are_named() {
        let path = OsStr::new("/usr/bin:/bin");
        assert!(missing_programs("loadmark serve", None, path).is_empty());
        assert!(missing_programs("sh -c 'sleep 1'", None, path).is_empty());
        assert_eq!(
            missing_programs("FOO=1 no-such-program-here --port 1 && sleep 1", None, path),
            ["no-such-program-here"]
        );
        assert_eq!(
            missing_programs("cd /tmp && ./not-a-file-here", Some(Path::new("/")), path),
            ["./not-a-file-here"]
        );
        assert!(missing_programs("/bin/sh -c true", None, path).is_empty());
        // PATH is the one given, not the process's.
        assert_eq!(
            missing_programs("sh -c true", None, OsStr::new("/nonexistent")),
            ["sh"]
        );
    }

    fn launch(command: &str, ready: Ready) -> Launch {
        Launch {
            command: command.into(),
            env: vec![("A".into(), "1".into())],
            cwd: None,
            ready,
            ready_timeout: Duration::from_secs(3),
            stop_grace: Duration::from_secs(1),
        }
    }

    #[test]
    fn a_launch_block_becomes_a_spec_logging_under_the_log_dir() {
        let l = launch("loadmark serve", Ready::Port("127.0.0.1:8080".into()));
        let spec = launch_spec("api", &l, Path::new("out/logs"), Some(Path::new("/x/lm"))).unwrap();
        assert_eq!(spec.command, "'/x/lm' serve");
        assert_eq!(spec.log_path, Path::new("out/logs/api.log"));
        assert!(matches!(spec.ready, Readiness::Port(a) if a.port() == 8080));
        assert_eq!(spec.env, l.env);
        let spec = launch_spec("api", &l, Path::new("l"), None).unwrap();
        assert_eq!(
            spec.command, "loadmark serve",
            "no binary given: as written"
        );
    }

    #[test]
    fn a_ready_port_that_is_not_an_address_is_the_plans_error() {
        let l = launch("x", Ready::Port("no port here".into()));
        let e = launch_spec("api", &l, Path::new("l"), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "api: ready.port: \"no port here\" is not host:port"
        );
        assert!(crate::is_usage(&e));
    }
}
