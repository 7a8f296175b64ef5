//! `loadmark bench plan.yaml`: runs every step of a plan file (launching, monitoring and
//! stopping servers as it says) and writes the benchmark document and its JSON bundle.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use loadmark_launch::{launch, LaunchSpec, Launched, Readiness};
use loadmark_monitor::{find_pid_by_listener, find_pid_by_name, Listener, Monitor, ProcessSeries};
use loadmark_plan::{load_plan_file_with, Launch, LoadedPlan, Ready};
use loadmark_report::{
    render_markdown, reproduce_command, Bundle, BundleService, BundleStep, BundleTarget,
    ServerUsage, UsageSample, SCHEMA_VERSION,
};

use crate::args::BenchArgs;
use crate::commands::{build_report, execute, stop_handle};
use crate::output::{print_out, write_atomic};
use crate::services::Services;
use crate::verdict::{Judged, Rules};
use crate::UsageError;

pub fn bench(args: &BenchArgs) -> Result<ExitCode> {
    let mut args = args.clone();
    let (overrides, dirs): (Vec<String>, Vec<String>) =
        args.o.iter().cloned().partition(|o| o.contains('='));
    if let Some(dir) = dirs.last() {
        args.out = PathBuf::from(dir);
    }
    let args = &args;
    let cores = loadmark_engine::usable_cpus();
    let mut plan = load_plan_file_with(&args.plan, cores, &overrides)
        .map_err(|e| UsageError(e.to_string()))?;
    // The environment's proxy (`*_PROXY`, `NO_PROXY`), as `run` honours it.
    for step in &mut plan.steps {
        step.plan.protocol.proxy =
            loadmark_plan::Proxy::for_plan(None, &step.plan, |name| std::env::var(name).ok())
                .map_err(|e| UsageError(e.to_string()))?;
    }
    if args.explain {
        let native = plan.file.to_yaml();
        if loadmark_plan::is_taurus(&std::fs::read_to_string(&args.plan).unwrap_or_default()) {
            print_out(format!(
                "# {} translated from Taurus; `loadmark bench` runs this plan\n",
                args.plan.display()
            ))?;
        }
        print_out(native)?;
        return Ok(ExitCode::SUCCESS);
    }
    let thresholds = crate::gate::plan_thresholds(&plan.file.thresholds, &args.plan)?;
    if args.check {
        print_out(format!(
            "{}: OK, {} step{}\n",
            args.plan.display(),
            plan.steps.len(),
            if plan.steps.len() == 1 { "" } else { "s" }
        ))?;
        for step in &plan.steps {
            print_out(format!(
                "  {}. {}\n",
                step.number,
                command_of(&step.plan, args.show_secrets, &plan.file.thresholds)
            ))?;
        }
        if !plan.services.services.is_empty() {
            print_out("order:\n")?;
            for line in plan.services.describe(plan.steps.len()) {
                print_out(format!("  {line}\n"))?;
            }
        }
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
        for (at, l) in launches {
            for program in missing_programs(&l.command, l.cwd.as_deref()) {
                eprintln!(
                    "loadmark: warning: {at}.command runs `{program}`, which is not on PATH (nor a file); the step will fail to start it"
                );
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let out = &args.out;
    std::fs::create_dir_all(out.join("logs"))
        .map_err(|e| UsageError(format!("--out {}: cannot create it: {e}", out.display())))?;
    crate::output::check_writable(&out.join("bundle.json"))
        .map_err(|e| UsageError(format!("{e:#}")))?;
    let mut bundle = run_steps(&plan, args)?;
    for step in &mut bundle.steps {
        step.report.thresholds = loadmark_report::check_thresholds(&thresholds, &step.report);
    }
    let md = render_markdown(&bundle);
    write_atomic(&out.join("bundle.json"), &bundle.to_json())?;
    write_atomic(&out.join("BENCHMARKS.md"), &md)?;
    eprintln!(
        "loadmark: {} of {} steps ran; wrote {} and {}",
        bundle.steps.len(),
        plan.steps.len(),
        out.join("BENCHMARKS.md").display(),
        out.join("bundle.json").display()
    );
    print_out(loadmark_report::render_steps_text(&bundle))?;
    let last = bundle.steps.len().saturating_sub(1);
    let runs: Vec<Judged<'_>> = bundle
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| Judged {
            // A signal stops the step that runs: the last one (a Slurm step's merged
            // report may not say so itself).
            interrupted: s.report.run.interrupted || (bundle.interrupted && i == last),
            ..Judged::named(Some(format!("step {}", s.number)), &s.report)
        })
        .collect();
    // A service that died failed the steps that needed it: the document says which.
    let died = !bundle.notes.is_empty() || bundle.steps.iter().any(|s| !s.notes.is_empty());
    Ok(crate::verdict::exit_code(
        &runs,
        &Rules {
            interrupted: bundle.interrupted,
            other_failures: if died {
                vec!["a service died; see the notes in BENCHMARKS.md".into()]
            } else {
                Vec::new()
            },
            ..Default::default()
        },
    ))
}

/// The step's `loadmark run` command, with the plan's thresholds (which every step is
/// checked against), secrets redacted unless asked for.
fn command_of(plan: &loadmark_plan::Plan, show_secrets: bool, thresholds: &[String]) -> String {
    if show_secrets {
        reproduce_command(plan, thresholds)
    } else {
        reproduce_command(&plan.redacted(), thresholds)
    }
}

pub(crate) fn launch_spec(name: &str, l: &Launch, log_dir: &Path) -> Result<LaunchSpec> {
    let ready = match &l.ready {
        Ready::Port(addr) => Readiness::Port(
            std::net::ToSocketAddrs::to_socket_addrs(addr)
                .ok()
                .and_then(|mut a| a.next())
                .ok_or_else(|| {
                    UsageError(format!("{name}: ready.port: {addr:?} is not host:port"))
                })?,
        ),
        Ready::Http(url) => Readiness::Http(url.clone()),
        Ready::Delay(d) => Readiness::Delay(*d),
    };
    Ok(LaunchSpec {
        name: name.to_string(),
        command: match std::env::current_exe() {
            Ok(exe) => own_binary(&l.command, &exe),
            Err(_) => l.command.clone(),
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
fn own_binary(command: &str, exe: &Path) -> String {
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

/// The programs `command` runs that neither PATH nor the file system has (checked by
/// `bench --check`). `loadmark` is always there: it is this binary.
fn missing_programs(command: &str, cwd: Option<&Path>) -> Vec<String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let path = std::env::var_os("PATH").unwrap_or_default();
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
                let p = match cwd {
                    Some(dir) if p.is_relative() => dir.join(p),
                    _ => p.to_path_buf(),
                };
                !executable(&p)
            } else {
                !std::env::split_paths(&path).any(|dir| executable(&dir.join(w)))
            }
        })
        .map(str::to_string)
        .collect()
}

pub(crate) fn usage(series: &ProcessSeries) -> Option<ServerUsage> {
    let s = series.summary()?;
    Some(ServerUsage {
        pid: series.pid,
        rss_start_bytes: s.rss_start_bytes,
        rss_peak_bytes: s.rss_peak_bytes,
        rss_end_bytes: s.rss_end_bytes,
        cpu_mean_percent: s.cpu_mean_percent,
        cpu_peak_percent: s.cpu_peak_percent,
        threads_peak: s.threads_peak,
        fds_peak: s.fds_peak,
        samples: series
            .samples
            .iter()
            .map(|x| UsageSample {
                at_ms: x.at_ms,
                cpu_percent: x.cpu_percent,
                rss_bytes: x.rss_bytes,
            })
            .collect(),
    })
}

/// The step as the document's tables name it.
fn step_name(step: &loadmark_plan::Step) -> String {
    if step.params.is_empty() {
        step.target.clone()
    } else {
        let p: Vec<String> = step
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        p.join(", ")
    }
}

/// Sleeps `d`, waking early when a stop was asked for.
fn pause(d: Duration) {
    let stop = stop_handle();
    let end = Instant::now() + d;
    while Instant::now() < end && !stop.is_stopped() {
        std::thread::sleep(Duration::from_millis(20).min(end - Instant::now()));
    }
}

fn run_steps(plan: &LoadedPlan, args: &BenchArgs) -> Result<Bundle> {
    let stop = stop_handle();
    let mut live = crate::live::Live::start(&args.metrics, None, args.run_id.clone(), None)?;
    let file = &plan.file;
    let targets = file
        .targets
        .iter()
        .map(|(name, t)| BundleTarget {
            name: name.clone(),
            url: t.url.clone(),
            labels: t
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            launch: t.launch.as_ref().map(|l| l.command.clone()),
            attach: t.attach.as_ref().map(|a| {
                if let Some(pid) = a.pid {
                    format!("pid {pid}")
                } else if let Some(name) = &a.process {
                    format!("process {name}")
                } else if let Some(path) = &a.socket {
                    format!("the listener of {}", path.display())
                } else {
                    a.port
                        .map_or_else(String::new, |p| format!("the listener of port {p}"))
                }
            }),
        })
        .collect();
    let mut bundle = Bundle {
        schema_version: SCHEMA_VERSION,
        loadmark_version: env!("CARGO_PKG_VERSION").to_string(),
        name: file.name.clone(),
        description: file.description.clone(),
        plan_file: args.plan.display().to_string(),
        plan_text: if args.show_secrets {
            plan.text.clone()
        } else {
            loadmark_plan::redact_plan_text(&plan.text)
        },
        environment: crate::commands::environment(),
        targets,
        services: plan
            .services
            .services
            .iter()
            .map(|s| BundleService {
                name: s.name.clone(),
                launch: s.launch.command.clone(),
                depends_on: s.depends_on.clone(),
            })
            .collect(),
        steps: Vec::new(),
        compare: file.compare.clone(),
        columns: if args.table.columns.is_empty() {
            file.report.columns.clone()
        } else {
            args.table.columns.clone()
        },
        style: args.table.style.or(file.report.style),
        interrupted: false,
        notes: Vec::new(),
    };
    let mut services = Services::new(&plan.services);
    let log_dir: PathBuf = args.out.join("logs");
    // Targets are outermost in the step order: launch each before its first step, stop it
    // after its last.
    let mut running: Option<(String, Launched)> = None;
    for (i, step) in plan.steps.iter().enumerate() {
        if stop.is_stopped() {
            bundle.interrupted = true;
            break;
        }
        if running
            .as_ref()
            .is_some_and(|(name, _)| *name != step.target)
        {
            let (name, server) = running.take().expect("checked");
            server
                .stop()
                .with_context(|| format!("stopping target {name}"))?;
        }
        services.start_before(i, step.number, &log_dir)?;
        let missing = services.check(i);
        if !missing.is_empty() {
            for gone in missing {
                let note = format!(
                    "Step {} ({}) did not run: {}; {}",
                    step.number,
                    step_name(step),
                    gone.what,
                    gone.last_words
                );
                eprintln!("loadmark: {note}");
                bundle.notes.push(note);
            }
            services.stop_after(i)?;
            continue;
        }
        if running.is_none() {
            if let Some((_, l)) = plan.launches.iter().find(|(n, _)| *n == step.target) {
                eprintln!("loadmark: starting target {}: {}", step.target, l.command);
                let spec = launch_spec(&step.target, l, &log_dir)?;
                let server = launch(&spec).with_context(|| {
                    format!("step {} needs target {} running", step.number, step.target)
                })?;
                running = Some((step.target.clone(), server));
            }
        }
        let pid = match (&running, &file.targets[&step.target].attach) {
            (Some((_, server)), _) => Some(server.pid()),
            (None, Some(a)) => attached_pid(&step.target, a)?,
            _ => None,
        };
        let monitor = match (pid, plan.monitor_interval) {
            (Some(pid), Some(interval)) => Some(
                Monitor::start(pid, interval)
                    .with_context(|| format!("monitoring target {} (pid {pid})", step.target))?,
            ),
            _ => None,
        };
        let service_monitors = services.monitor(i, plan.monitor_interval)?;
        let command = command_of(&step.plan, args.show_secrets, &file.thresholds);
        eprintln!(
            "loadmark: step {}/{}: {command}",
            step.number,
            plan.steps.len()
        );
        live.begin(
            &step.plan,
            u32::try_from(step.number).unwrap_or(u32::MAX),
            u32::try_from(plan.steps.len()).unwrap_or(u32::MAX),
        )?;
        let (mut report, interrupted) = match args.slurm {
            Some(tasks) => {
                let run_id = format!("bench-step-{}-{}", step.number, std::process::id());
                let how = crate::split::SlurmRun {
                    tasks,
                    start_at: None,
                    run_id: Some(&run_id),
                    srun_args: &args.srun_args,
                    quiet: args.quiet,
                };
                crate::split::run_slurm(&step.plan, &how)
                    .with_context(|| format!("step {} over {tasks} Slurm tasks", step.number))?
            }
            None => {
                let result = execute(&step.plan, &Default::default(), args.quiet, &mut live)?;
                let interrupted = result.interrupted;
                (build_report(&step.plan, result), interrupted)
            }
        };
        let server = monitor.map(Monitor::stop).as_ref().and_then(usage);
        let service_usage = crate::services::usages(service_monitors);
        let notes: Vec<String> = services
            .check(i)
            .into_iter()
            .map(|gone| {
                format!(
                    "{} during this step (its figures may show it); {}",
                    gone.what, gone.last_words
                )
            })
            .collect();
        for note in &notes {
            eprintln!("loadmark: step {}: {note}", step.number);
        }
        if args.show_secrets {
            report.plan = step.plan.clone();
        }
        eprintln!(
            "loadmark: step {}: {:.0} req/s, p99 {}, {} failed",
            step.number,
            report.summary.rps,
            loadmark_report::format_pct(&report.summary.latency, 99.0),
            report.failed()
        );
        bundle.steps.push(BundleStep {
            number: step.number,
            target: step.target.clone(),
            params: step.params.clone(),
            command,
            report,
            server,
            services: service_usage,
            notes,
        });
        services.stop_after(i)?;
        if interrupted {
            bundle.interrupted = true;
            break;
        }
        if i + 1 < plan.steps.len() && !plan.pause.is_zero() {
            pause(plan.pause);
        }
    }
    if let Some((name, server)) = running {
        server
            .stop()
            .with_context(|| format!("stopping target {name}"))?;
    }
    services.stop_all()?;
    live.linger();
    Ok(bundle)
}

/// The pid of a target's `attach:` server: given, or found by name or by what it listens on.
fn attached_pid(target: &str, a: &loadmark_plan::AttachFile) -> anyhow::Result<Option<u32>> {
    let context = |field: &str| format!("targets.{target}.attach.{field}");
    Ok(if let Some(pid) = a.pid {
        Some(pid)
    } else if let Some(name) = &a.process {
        Some(find_pid_by_name(name).with_context(|| context("process"))?)
    } else if let Some(path) = &a.socket {
        Some(
            find_pid_by_listener(&Listener::Unix(path.clone()))
                .with_context(|| context("socket"))?,
        )
    } else if let Some(port) = a.port {
        Some(find_pid_by_listener(&Listener::Tcp(port)).with_context(|| context("port"))?)
    } else {
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(missing_programs("loadmark serve", None).is_empty());
        assert!(missing_programs("sh -c 'sleep 1'", None).is_empty());
        assert_eq!(
            missing_programs("FOO=1 no-such-program-here --port 1 && sleep 1", None),
            ["no-such-program-here"]
        );
        assert_eq!(
            missing_programs("cd /tmp && ./not-a-file-here", Some(Path::new("/"))),
            ["./not-a-file-here"]
        );
        assert!(missing_programs("/bin/sh -c true", None).is_empty());
    }
}
