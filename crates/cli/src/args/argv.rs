//! The command line before clap reads it: other tools' habits that clap cannot express.
//!
//! - oha, hey, ab, wrk and bombardier take the URL as their main argument, so `loadmark URL`
//!   and `loadmark -c 100 -d 5s URL` mean `loadmark run ...` (`ws` for a ws:// URL).
//! - hey's and oha's `-q N` is a rate, where loadmark's `-q` is `--quiet`: refused, naming
//!   `-R/--rate`, since the two tools do not even agree on what N counts.

use std::ffi::OsString;

use clap::CommandFactory;

use super::Cli;

/// A usage error found in the raw arguments (exit code 2).
#[derive(Debug, PartialEq, Eq)]
pub struct ArgvError(pub String);

/// The arguments as clap should read them: `run` (or `ws`) inserted where the user left the
/// subcommand out; other tools' spellings that would be misread refused.
pub fn prepare(args: Vec<OsString>) -> Result<Vec<OsString>, ArgvError> {
    let cli = Cli::command();
    let mut args = args;
    if let Some(sub) = implied_subcommand(&cli, &args) {
        args.insert(1, OsString::from(sub));
    }
    if let Some(sub) = args.get(1).and_then(|a| a.to_str()) {
        if let Some(cmd) = cli.find_subcommand(sub) {
            if matches!(cmd.get_name(), "run" | "ws") {
                refuse_rate_as_quiet(cmd, &args[2..])?;
            }
        }
    }
    Ok(args)
}

/// `run` or `ws` when the first argument is no subcommand but a URL, or a flag of `run`
/// (`ws` when the first URL among the arguments is ws:// or wss://).
fn implied_subcommand(cli: &clap::Command, args: &[OsString]) -> Option<&'static str> {
    let first = args.get(1)?.to_str()?;
    if cli.find_subcommand(first).is_some() || first == "help" {
        return None;
    }
    if looks_like_url(first) {
        return Some(if is_ws_url(first) { "ws" } else { "run" });
    }
    if !first.starts_with('-') || first == "-" || first == "--" {
        return None;
    }
    let url = args[1..]
        .iter()
        .take_while(|a| *a != "--")
        .filter_map(|a| a.to_str())
        .find(|a| a.contains("://"));
    let sub = if url.is_some_and(is_ws_url) {
        "ws"
    } else {
        "run"
    };
    let cmd = cli.find_subcommand(sub)?;
    is_flag_of(cmd, first).then_some(sub)
}

/// A URL with a scheme, or `host:port[/path]` as bombardier takes it (`run` then says the
/// scheme is missing). A mistyped subcommand (`rnu`) has neither `:` nor `/`.
fn looks_like_url(text: &str) -> bool {
    if text.starts_with('-') || text.contains(char::is_whitespace) {
        return false;
    }
    if let Some((scheme, _)) = text.split_once("://") {
        return !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric());
    }
    let authority = text.split('/').next().unwrap_or("");
    match authority.rsplit_once(':') {
        Some((host, port)) => {
            !host.is_empty()
                && !port.is_empty()
                && port.chars().all(|c| c.is_ascii_digit())
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-[]:".contains(c))
        }
        None => false,
    }
}

fn is_ws_url(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower.starts_with("ws://") || lower.starts_with("wss://")
}

/// True when `arg` (`--name`, `--name=value`, `-x`, `-xVALUE`) is one of `cmd`'s flags, help
/// and version aside (`loadmark -h` stays the top-level help).
fn is_flag_of(cmd: &clap::Command, arg: &str) -> bool {
    if let Some(long) = arg.strip_prefix("--") {
        let name = long.split('=').next().unwrap_or("");
        return name != "help"
            && name != "version"
            && cmd.get_arguments().any(|a| {
                a.get_long() == Some(name)
                    || a.get_all_aliases()
                        .is_some_and(|aliases| aliases.contains(&name))
            });
    }
    let Some(short) = arg.strip_prefix('-').and_then(|s| s.chars().next()) else {
        return false;
    };
    short != 'h'
        && short != 'V'
        && cmd.get_arguments().any(|a| {
            a.get_short() == Some(short)
                || a.get_all_short_aliases()
                    .is_some_and(|aliases| aliases.contains(&short))
        })
}

/// The argument of `cmd` named by `--long` or `-s`, if any.
fn find_arg<'a>(
    cmd: &'a clap::Command,
    long: Option<&str>,
    short: Option<char>,
) -> Option<&'a clap::Arg> {
    cmd.get_arguments().find(|a| {
        (long.is_some()
            && (a.get_long() == long
                || a.get_all_aliases()
                    .is_some_and(|al| long.is_some_and(|l| al.contains(&l)))))
            || (short.is_some()
                && (a.get_short() == short
                    || a.get_all_short_aliases()
                        .is_some_and(|al| short.is_some_and(|s| al.contains(&s)))))
    })
}

fn takes_value(arg: &clap::Arg) -> bool {
    arg.get_action().takes_values()
}

/// hey's `-q N` (a rate per worker) and oha's `-q N` (a rate in all) would read here as
/// `--quiet` and a stray argument: refused, naming loadmark's rate flag. Values of other
/// flags (`-H -q`) are skipped, so only a `-q` that clap would take as `--quiet` counts.
fn refuse_rate_as_quiet(cmd: &clap::Command, args: &[OsString]) -> Result<(), ArgvError> {
    let mut i = 0;
    while i < args.len() {
        let Some(arg) = args[i].to_str() else {
            i += 1;
            continue;
        };
        i += 1;
        if arg == "--" {
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            if !long.contains('=') && find_arg(cmd, Some(long), None).is_some_and(takes_value) {
                i += 1;
            }
            continue;
        }
        let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) else {
            continue;
        };
        for (at, short) in cluster.char_indices() {
            let rest = &cluster[at + short.len_utf8()..];
            if short == 'q' {
                let value = if rest.is_empty() {
                    args.get(i).and_then(|a| a.to_str())
                } else {
                    Some(rest)
                };
                if let Some(n) = value.filter(|v| v.trim().parse::<f64>().is_ok()) {
                    return Err(ArgvError(format!(
                        "-q {n}: -q is --quiet here and takes no value. hey's -q is a rate per \
                         worker and oha's a rate in all, so loadmark cannot tell which you meant: \
                         give the total rate with -R/--rate (hey's -c C -q Q is -c C -R C*Q; \
                         oha's -q Q is -R Q)"
                    )));
                }
            }
            if find_arg(cmd, None, Some(short)).is_some_and(takes_value) {
                if rest.is_empty() {
                    i += 1;
                }
                break;
            }
        }
    }
    Ok(())
}

/// The hint that follows clap's own error when the first argument is no subcommand: what
/// loading a URL (or running a plan file) looks like.
pub fn hint_for(error: &clap::Error, args: &[OsString]) -> Option<&'static str> {
    if error.kind() != clap::error::ErrorKind::InvalidSubcommand {
        return None;
    }
    let first = args.get(1).and_then(|a| a.to_str()).unwrap_or("");
    Some(if first.ends_with(".yml") || first.ends_with(".yaml") {
        "to run a plan file: loadmark bench FILE; to load a URL: loadmark run URL"
    } else {
        "to load a URL: loadmark run URL [-c N -d DURATION] (or loadmark URL)"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prep(line: &[&str]) -> Result<Vec<String>, ArgvError> {
        let args = std::iter::once("loadmark")
            .chain(line.iter().copied())
            .map(OsString::from)
            .collect();
        prepare(args).map(|v| {
            v.into_iter()
                .skip(1)
                .map(|a| a.into_string().unwrap())
                .collect()
        })
    }

    #[test]
    fn a_url_or_a_load_flag_first_means_run() {
        let url = "http://127.0.0.1:8080/";
        assert_eq!(prep(&[url]).unwrap(), ["run", url]);
        assert_eq!(
            prep(&["-c", "100", "-d", "5s", url]).unwrap(),
            ["run", "-c", "100", "-d", "5s", url]
        );
        assert_eq!(
            prep(&["-t", "2", "-c", "10", "-d", "2s", url]).unwrap()[0],
            "run"
        );
        assert_eq!(prep(&["--connections=3", url]).unwrap()[0], "run");
        assert_eq!(prep(&["-c3", url]).unwrap()[0], "run");
        assert_eq!(prep(&["--vus", "3", url]).unwrap()[0], "run");
        assert_eq!(prep(&["127.0.0.1:8080/x"]).unwrap()[0], "run");
        assert_eq!(prep(&["localhost:8080"]).unwrap()[0], "run");
        assert_eq!(prep(&["[::1]:8080"]).unwrap()[0], "run");
        assert_eq!(prep(&["ws://127.0.0.1:8080/ws/echo"]).unwrap()[0], "ws");
        assert_eq!(
            prep(&[
                "-c",
                "3",
                "--interval",
                "5ms",
                "ws://127.0.0.1:8080/ws/echo"
            ])
            .unwrap()[0],
            "ws"
        );
    }

    #[test]
    fn subcommands_help_version_and_typos_are_left_to_clap() {
        for line in [
            vec!["run", "http://h/"],
            vec!["ws", "ws://h/"],
            vec!["bench", "plan.yml"],
            vec!["--help"],
            vec!["-h"],
            vec!["--version"],
            vec!["-V"],
            vec!["help", "run"],
            vec!["rnu", "http://h/"],
            vec!["plan.yml"],
            vec![],
            vec!["--bogus", "http://h/"],
        ] {
            let expected: Vec<String> = line.iter().map(|s| s.to_string()).collect();
            assert_eq!(prep(&line).unwrap(), expected, "{line:?}");
        }
    }

    #[test]
    fn a_rate_after_q_is_refused_naming_the_rate_flag() {
        for line in [
            vec!["run", "http://h/", "-q", "100"],
            vec!["run", "-q", "100", "http://h/"],
            vec!["http://h/", "-c", "10", "-q", "2.5"],
            vec!["run", "http://h/", "-q100"],
            vec!["run", "http://h/", "-kq", "100"],
            vec!["ws", "ws://h/", "-q", "10"],
        ] {
            let e = prep(&line).unwrap_err();
            assert!(e.0.contains("-R/--rate"), "{line:?}: {}", e.0);
        }
        // -q as --quiet, and a -q that is another flag's value, stay.
        for line in [
            vec!["run", "-q", "http://h/", "-n", "100"],
            vec!["run", "http://h/", "-q", "-n", "100"],
            vec!["run", "http://h/", "-H", "X: 1", "-b", "-q", "-n", "5"],
            vec!["run", "http://h/", "-s", "x.lua", "--", "-q", "5"],
        ] {
            assert!(prep(&line).is_ok(), "{line:?}");
        }
    }
}
