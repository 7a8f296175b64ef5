//! The help text: grouped flags, an Examples section per command, and every example command
//! line in it parses as written (so the help cannot drift from the flags).

use std::ffi::OsString;

use clap::CommandFactory;

use super::{argv, Cli};

/// Splits a shell line into words (single and double quotes, backslash in double quotes),
/// stopping at a redirection, a pipe or a comment: what the example gives loadmark, not the
/// shell.
fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut in_word) = (Vec::new(), String::new(), false);
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                word.extend(chars.by_ref().take_while(|&c| c != '\''));
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => word.extend(chars.next()),
                        c => word.push(c),
                    }
                }
            }
            // A `#` that starts a word starts a comment, as in a shell.
            '#' if !in_word => break,
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    let end = words
        .iter()
        .position(|w| matches!(w.as_str(), ">" | ">>" | "<" | "|" | "&&"))
        .unwrap_or(words.len());
    words.truncate(end);
    words
}

/// The example lines (`  loadmark ...` after `Examples:`) of a command's after-help.
fn examples(cmd: &clap::Command) -> Vec<String> {
    let Some(after) = cmd.get_after_help() else {
        return Vec::new();
    };
    let text = after.to_string();
    let Some((_, section)) = text.split_once("Examples:") else {
        return Vec::new();
    };
    section
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.trim().to_string())
        .filter(|l| l.starts_with("loadmark "))
        .collect()
}

fn commands() -> Vec<clap::Command> {
    let cli = Cli::command();
    let mut all = vec![cli.clone()];
    all.extend(cli.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
    all
}

#[test]
fn shell_words_split_as_a_shell_would() {
    assert_eq!(
        shell_words(r#"loadmark run URL#1 -b '{"a":1}' -H "X: \"y\"" > out.txt"#),
        [
            "loadmark",
            "run",
            "URL#1",
            "-b",
            r#"{"a":1}"#,
            "-H",
            r#"X: "y""#
        ]
    );
}

#[test]
fn a_comment_ends_the_words() {
    assert_eq!(
        shell_words("loadmark import postman c.json   # a scenario per folder"),
        ["loadmark", "import", "postman", "c.json"]
    );
}

#[test]
fn every_command_shows_examples_and_each_parses() {
    for cmd in commands() {
        let lines = examples(&cmd);
        assert!(
            lines.len() >= 2,
            "`{}` needs an Examples section with two or more lines: {lines:?}",
            cmd.get_name()
        );
        for line in lines {
            let words: Vec<OsString> = shell_words(&line).into_iter().map(OsString::from).collect();
            let words = argv::prepare(words).unwrap_or_else(|e| panic!("{line}: {}", e.0));
            if let Err(e) = Cli::command().try_get_matches_from(&words) {
                panic!("the example `{line}` does not parse:\n{e}");
            }
        }
    }
}

#[test]
fn run_help_groups_its_flags() {
    let mut cli = Cli::command();
    let help = cli
        .find_subcommand_mut("run")
        .unwrap()
        .render_long_help()
        .to_string();
    for heading in [
        "\nLoad:\n",
        "\nOpen loop:\n",
        "\nRequest:\n",
        "\nProtocol:\n",
        "\nTLS:\n",
        "\nChecks:\n",
        "\nOutput:\n",
        "\nLive:\n",
        "\nExamples:\n",
    ] {
        assert!(
            help.contains(heading),
            "{heading:?} missing from run --help"
        );
    }
    // Under "Options" only help itself is left: every flag has its group.
    let options = help.split("\nOptions:\n").nth(1).unwrap();
    let options = options.split("\n\n").next().unwrap();
    assert!(options.trim_start().starts_with("-h, --help"), "{options}");
    assert_eq!(
        options.matches("\n  -").count() + options.matches("\n      --").count(),
        0,
        "{options}"
    );
}

#[test]
fn ws_help_groups_its_flags() {
    let mut cli = Cli::command();
    let help = cli
        .find_subcommand_mut("ws")
        .unwrap()
        .render_long_help()
        .to_string();
    for heading in [
        "\nLoad:\n",
        "\nMessages:\n",
        "\nTLS:\n",
        "\nChecks:\n",
        "\nOutput:\n",
        "\nLive:\n",
    ] {
        assert!(help.contains(heading), "{heading:?} missing from ws --help");
    }
    let options = help.split("\nOptions:\n").nth(1).unwrap();
    let options = options.split("\n\n").next().unwrap();
    assert!(options.trim_start().starts_with("-h, --help"), "{options}");
}

#[test]
fn help_names_every_format_and_shell() {
    let cli = Cli::command();
    let about = cli.get_long_about().unwrap().to_string();
    let report = cli.find_subcommand("report").unwrap();
    let report_about = report.get_about().unwrap().to_string();
    for word in ["text", "JSON", "Markdown", "HTML", "CSV"] {
        assert!(
            about.contains(word),
            "top-level help: {word} missing: {about}"
        );
        assert!(
            report_about.contains(word),
            "report help: {word} missing: {report_about}"
        );
    }
    assert!(about.contains("JUnit"), "{about}");
    let output = report
        .get_arguments()
        .find(|a| a.get_id() == "output")
        .unwrap();
    let output_help = output.get_help().unwrap().to_string();
    for ext in [".json", ".txt", ".md", ".csv", ".html"] {
        assert!(output_help.contains(ext), "report -o: {ext} missing");
    }
    let completions = cli.find_subcommand("completions").unwrap();
    let about = completions.get_about().unwrap().to_string().to_lowercase();
    use clap::ValueEnum;
    for shell in clap_complete::Shell::value_variants() {
        let name = shell.to_possible_value().unwrap().get_name().to_string();
        assert!(
            about.contains(&name),
            "completions help: {name} missing: {about}"
        );
    }
}
