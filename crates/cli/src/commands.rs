//! One function per subcommand; each returns the process exit code.

use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::OnceLock;

use anyhow::{Context, Result};
use loadmark_engine::{EngineError, Part, RunResult, StopHandle};
use loadmark_plan::{Load, Plan, RequestSpec, Stop, Target, Timeouts, TlsPolicy};
use loadmark_report::{
    CpuContention, Environment, ProtocolFacts, ProtocolSummary, Report, RunFacts,
};

use crate::args::{
    Command, Format, QuickstartArgs, ReportArgs, ReportFlags, RunArgs, SchemaKind, ServeArgs,
    WsArgs,
};
use crate::output::{check_writable, format_for, print_out, render, render_with, write_atomic};
use crate::progress::ProgressLine;
use crate::verdict::{Judged, Rules};
use crate::{UsageError, EXIT_INTERRUPTED};

/// The machine, and the build of loadmark that ran on it: what every result records.
pub(crate) fn environment() -> Environment {
    Environment {
        build: Some(crate::dist::build()),
        host: Some(loadmark_report::HostState::detect(
            loadmark_engine::usable_cpus(),
        )),
        ..Environment::detect()
    }
}

pub fn dispatch(command: Command) -> Result<ExitCode> {
    match command {
        Command::Run(mut args) => {
            let body = crate::import::apply_curl(&mut args)?;
            run(&args, body)
        }
        Command::Import(args) => crate::import::import(&args),
        Command::History(args) => crate::history::history(&args),
        Command::Find(mut args) => crate::find::find(&mut args),
        Command::Ws(args) => ws(&args),
        Command::Grpc(args) => crate::grpc::grpc(*args),
        Command::Serve(args) => serve(&args),
        Command::Quickstart(args) => quickstart(&args),
        Command::Bench(args) => crate::bench::bench(&args),
        Command::Report(args) => report(&args),
        Command::Merge(args) => crate::gate::merge(&args),
        Command::K8s(args) => crate::k8s::k8s(&args),
        Command::Worker(args) => crate::split::worker(&args),
        Command::Compare(args) => crate::gate::compare(&args),
        Command::Completions(args) => crate::dist::completions(&args),
        Command::Man(args) => crate::dist::man(&args),
        Command::Schema(args) => {
            let schema = match args.what {
                SchemaKind::Plan => loadmark_plan::PlanFile::json_schema(),
                SchemaKind::Result => format!("{:#}", loadmark_report::result_schema()),
                SchemaKind::Bundle => format!("{:#}", loadmark_report::bundle_schema()),
                SchemaKind::Stream => format!("{:#}", loadmark_report::stream_schema()),
            };
            print_out(schema + "\n")?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

struct Signals {
    stop: StopHandle,
    received: mpsc::Receiver<()>,
}

/// The first SIGINT/SIGTERM stops the load (the report is still written); the second exits
/// at once.
fn signals() -> &'static std::sync::Mutex<Signals> {
    static SIGNALS: OnceLock<std::sync::Mutex<Signals>> = OnceLock::new();
    SIGNALS.get_or_init(|| {
        let stop = StopHandle::new();
        let (tx, rx) = mpsc::sync_channel(1);
        let handler_stop = stop.clone();
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let installed = ctrlc::set_handler(move || {
            if COUNT.fetch_add(1, Ordering::SeqCst) > 0 {
                eprintln!("\nloadmark: second signal, exiting now");
                loadmark_launch::kill_all_launched();
                std::process::exit(EXIT_INTERRUPTED as i32);
            }
            eprintln!("\nloadmark: stopping; the report follows (signal again to exit at once)");
            handler_stop.stop();
            let _ = tx.try_send(());
        });
        if let Err(e) = installed {
            eprintln!("loadmark: warning: cannot handle Ctrl-C ({e}); it will end the run without a report");
        }
        std::sync::Mutex::new(Signals { stop, received: rx })
    })
}

pub(crate) fn stop_handle() -> StopHandle {
    signals().lock().expect("signal state").stop.clone()
}

/// `curl_body`: the body of `--curl`'s command, already read.
fn run(args: &RunArgs, curl_body: Option<Vec<u8>>) -> Result<ExitCode> {
    let (plan, script) = plan_from_flags(args, curl_body)?;
    run_plan(&plan, &args.report, script.as_ref())
}

/// The plan `run`'s flags make (`find` makes its steps' from it too): the body read from
/// its file (or `curl_body`, the body of `--curl`'s command), the request, the load, and a
/// wrk script (`-s`) prepared on it.
pub(crate) fn plan_from_flags(
    args: &RunArgs,
    curl_body: Option<Vec<u8>>,
) -> Result<(Plan, Option<loadmark_script::Script>)> {
    let body = match args.body_path().filter(|_| curl_body.is_none()) {
        Some(path) => Some(std::fs::read(&path).map_err(|e| {
            let flag = if args.body_file.is_some() {
                "--body-file"
            } else {
                "--body @FILE"
            };
            UsageError(format!("{flag} {}: cannot read it: {e}", path.display()))
        })?),
        None => curl_body,
    };
    let mut plan = args.to_plan(body)?;
    let script = match &args.script {
        Some(path) => {
            if args.report.split.slurm.is_some() {
                return Err(UsageError(
                    "--script with --slurm: a script's threads share one process (setup() and \
                     done() see all of them); run it without --slurm"
                        .into(),
                )
                .into());
            }
            Some(crate::script::prepare(&mut plan, path, &args.script_args)?)
        }
        None => None,
    };
    Ok((plan, script))
}

/// Where `-o` writes and in which format, checked before any load is sent (`None`: no
/// `-o`).
pub(crate) fn output_of(flags: &ReportFlags) -> Result<Option<(std::path::PathBuf, Format)>> {
    Ok(match &flags.output {
        Some(path) => {
            let format = format_for(path, flags.format).map_err(|e| UsageError(e.to_string()))?;
            check_writable(path).map_err(|e| UsageError(format!("{e:#}")))?;
            Some((path.clone(), format))
        }
        None => None,
    })
}

/// One run of `plan` here, without live outputs, as its report: a step of `find`.
pub(crate) fn run_here(
    plan: &Plan,
    script: Option<&loadmark_script::Script>,
    quiet: bool,
) -> Result<Report> {
    let part = Part {
        script: script.and_then(|s| s.hooks()),
        ..Part::default()
    };
    let result = execute(plan, &part, quiet, &mut crate::live::Live::none())?;
    Ok(build_report(plan, result))
}

/// Runs a plan made from flags (`run`, `ws`) and writes its report as the flags say; a
/// script's `done()` runs after the report is printed, as wrk's does.
pub(crate) fn run_plan(
    plan: &Plan,
    flags: &ReportFlags,
    script: Option<&loadmark_script::Script>,
) -> Result<ExitCode> {
    let thresholds = crate::gate::thresholds_before_run(flags)?;
    let segment = crate::split::resolve(&flags.split)?;
    let tagged;
    let plan = if flags.split.tag_requests {
        tagged = crate::split::tagged(plan);
        &tagged
    } else {
        plan
    };
    if segment.as_ref().is_some_and(|s| !s.segment.is_whole())
        && (!thresholds.is_empty() || flags.strict)
    {
        return Err(UsageError(
            "--threshold/--strict with --segment: a segment is part of a run; check them on the merged result (loadmark merge --threshold ...)".into(),
        )
        .into());
    }
    let output = output_of(flags)?;
    if flags.record.wanted() && segment.as_ref().is_some_and(|s| !s.segment.is_whole()) {
        return Err(UsageError(
            "--record with --segment: a segment is part of a run; record the merged result (loadmark merge ... -o all.json, then loadmark history import all.json)".into(),
        )
        .into());
    }
    // Opened before the run, so a bad store is refused before any load is spent; written
    // only after the run has ended.
    let recorder = crate::history::Recorder::before_run(&flags.record)?;
    let mut live = crate::live::Live::start(
        &flags.live.metrics,
        flags.live.stream.clone(),
        segment
            .as_ref()
            .map(|s| s.run_id.clone())
            .or_else(|| flags.split.run_id.clone()),
        segment.as_ref().map(|s| s.segment.to_text()),
    )?;
    live.begin(plan, 1, 1)?;
    let (mut report, interrupted) = match flags.split.slurm {
        Some(tasks) => {
            crate::split::run_slurm(plan, &crate::split::SlurmRun::from_flags(flags, tasks)?)?
        }
        None => {
            let mut part = segment.as_ref().map(|s| s.part()).unwrap_or_default();
            part.script = script.and_then(|s| s.hooks());
            let result = execute(plan, &part, flags.quiet, &mut live)?;
            let (interrupted, start_skew) = (result.interrupted, result.start_skew);
            let mut report = build_report(plan, result);
            if flags.show_secrets {
                report.plan = plan.clone();
            }
            if let Some(s) = &segment {
                s.mark(&mut report, start_skew);
            }
            (report, interrupted)
        }
    };
    report.thresholds = loadmark_report::check_thresholds(&thresholds, &report);
    live.finish(&report);
    let stdout_format = match (&output, flags.format) {
        (None, Some(f)) => f,
        _ => Format::Text,
    };
    print_out(render_with(&report, stdout_format, &flags.table))?;
    if let Some(script) = script {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        crate::script::done(script, &report)?;
    }
    let saved_json = output
        .as_ref()
        .filter(|(_, format)| *format == Format::Json)
        .map(|(path, _)| path.clone());
    if let Some((path, format)) = output {
        write_atomic(&path, &render_with(&report, format, &flags.table))?;
        eprintln!("loadmark: report written to {}", path.display());
    }
    live.linger();
    crate::gate::write_junit(flags, &report)?;
    let recorded = recorder.is_none_or(|r| r.record_report(&report, saved_json.as_deref()));
    let judged = Judged {
        interrupted: interrupted || report.run.interrupted,
        ..Judged::one(&report)
    };
    let code = crate::verdict::exit_code(
        &[judged],
        &Rules {
            fail_on: &flags.fail_on,
            strict: flags.strict,
            interrupted,
            other_failures: Vec::new(),
        },
    );
    // A run that was not recorded as asked fails, unless its own verdict already did.
    if !recorded && code == ExitCode::SUCCESS {
        return Ok(ExitCode::from(crate::EXIT_RUN_FAILED));
    }
    Ok(code)
}

pub(crate) fn execute(
    plan: &Plan,
    part: &Part,
    quiet: bool,
    live: &mut crate::live::Live,
) -> Result<RunResult> {
    let stop = stop_handle();
    let mut progress = ProgressLine::new(plan, quiet || live.has_tui());
    let result = loadmark_engine::run_part(plan, part, &stop, |p| {
        live.update(p);
        progress.update(p);
    });
    progress.finish();
    result.map_err(|e| match e {
        EngineError::Plan(p) => anyhow::Error::new(p),
        other => anyhow::Error::new(other),
    })
}

/// Takes the result by value: its totals hold the run's histograms (~190 KB each), and a copy
/// would touch every page of them just before the report is written (+1 MiB peak RSS).
pub(crate) fn build_report(plan: &Plan, result: RunResult) -> Report {
    let facts = RunFacts {
        started_at: result.started_at,
        elapsed: result.elapsed,
        measured: result.measured,
        interrupted: result.interrupted,
        client_cpu_user: result.client_cpu.user,
        client_cpu_system: result.client_cpu.system,
        busiest_worker: result.busiest_worker,
        target_addr: result.addr.to_string(),
        contention: result.machine_busy.map(|machine_busy| CpuContention {
            waited_s: result.cpu_wait.as_secs_f64(),
            machine_busy,
            cpus: loadmark_engine::online_cpus(),
            usable_cpus: loadmark_engine::usable_cpus(),
        }),
    };
    let protocol = ProtocolSummary::of(
        plan,
        ProtocolFacts {
            http2_fallback: result.http2_fallback.clone(),
            server_max_concurrent_streams: result.http2_server_streams,
            requests_per_connection: result.requests_per_connection.clone(),
            quic: result.quic.clone(),
        },
    );
    let mut report = Report::new(plan, &facts, result.totals, environment());
    report.summary.protocol = protocol;
    report
}

/// What carried the requests, from the engine's result (issue 16); none for WebSocket runs.
fn ws(args: &WsArgs) -> Result<ExitCode> {
    let plan = args.to_plan()?;
    run_plan(&plan, &args.report, None)
}

/// Descriptors `serve` makes room for up front: the connections of a large closed-loop run.
const SERVE_FILES: usize = 4096;

fn serve(args: &ServeArgs) -> Result<ExitCode> {
    // Accepting past 64, 128, 256... connections would otherwise grow the file table while
    // the server's threads run, each growth a stall of milliseconds (see the engine's sys.rs).
    loadmark_engine::prepare_files_for(SERVE_FILES);
    let server = loadmark_target::start(loadmark_target::ServerConfig {
        addr: (args.host, args.port).into(),
        threads: args.threads.max(1),
        stall: match (args.stall, args.every) {
            (Some(duration), Some(every)) if duration < every => {
                Some(loadmark_target::Stall { duration, every })
            }
            (Some(_), Some(_)) => {
                return Err(UsageError("--stall must be shorter than --every".into()).into())
            }
            _ => None,
        },
        http2: args.http2,
        reuse_port: args.reuse_port,
        tls: args.tls,
        http3: args.http3,
        unix_socket: args.unix_socket.clone(),
        capacity: args.capacity.map(|rate| loadmark_target::Capacity {
            rate,
            queue: args.queue,
        }),
    })?;
    // The certificate is new each start: clients that verify need it in a file.
    let cert_note = match server.tls_cert_pem() {
        Some(pem) => {
            let path =
                std::env::temp_dir().join(format!("loadmark-serve-{}.pem", std::process::id()));
            std::fs::write(&path, pem)
                .with_context(|| format!("writing the certificate to {}", path.display()))?;
            format!(
                "; self-signed certificate in {} (--cacert it, or --insecure)",
                path.display()
            )
        }
        None => String::new(),
    };
    let unix_note = match &args.unix_socket {
        Some(path) => format!(" and on the Unix socket {}", path.display()),
        None => String::new(),
    };
    let signals = signals();
    print_out(format!(
        "loadmark target listening on {}://{}{unix_note} ({}{} thread{}{}{}){cert_note}; Ctrl-C stops it\n",
        if args.tls { "https" } else { "http" },
        server.local_addr(),
        match (args.http2, args.tls, args.http3) {
            (true, true, true) => "HTTP/1.1 and h2 by ALPN, HTTP/3 on UDP, ",
            (false, true, true) => "HTTP/1.1, HTTP/3 on UDP, ",
            (true, true, false) => "HTTP/1.1 and h2 by ALPN, ",
            (true, false, _) => "HTTP/1.1 and h2c, ",
            _ => "",
        },
        args.threads,
        if args.threads == 1 { "" } else { "s" },
        match (args.stall, args.every) {
            (Some(s), Some(e)) => format!(", freezing {s:?} every {e:?}"),
            _ => String::new(),
        },
        match args.capacity {
            Some(n) => format!(", at most {n} req/s, queue {:?}", args.queue),
            None => String::new(),
        }
    ))?;
    let _ = signals.lock().expect("signal state").received.recv();
    let served = server.requests_served();
    let sessions = server.ws_sessions();
    let (received, sent) = (server.ws_messages_received(), server.ws_messages_sent());
    server.shutdown();
    if sessions > 0 {
        print_out(format!(
            "served {served} requests, of which {sessions} WebSocket sessions: {received} messages received, {sent} sent\n"
        ))?;
    } else {
        print_out(format!("served {served} requests\n"))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn quickstart(args: &QuickstartArgs) -> Result<ExitCode> {
    let output = match &args.output {
        Some(path) => {
            let format = format_for(path, None).map_err(|e| UsageError(e.to_string()))?;
            check_writable(path).map_err(|e| UsageError(format!("{e:#}")))?;
            Some((path.clone(), format))
        }
        None => None,
    };
    // One core serves, the other loads: the split this two-core machine allows.
    let server = loadmark_target::start(loadmark_target::ServerConfig {
        addr: ([127, 0, 0, 1], args.port).into(),
        threads: 1,
        ..Default::default()
    })
    .with_context(|| format!("starting the built-in target on 127.0.0.1:{}", args.port))?;
    let url = format!("http://{}{}", server.local_addr(), args.path);
    let plan = Plan {
        request: RequestSpec {
            method: "GET".into(),
            url: Target::parse(&url)?,
            headers: Vec::new(),
            body: Vec::new(),
            keep_alive: true,
        },
        load: Load::Closed {
            connections: args.connections,
            threads: 1,
        },
        stop: Stop::Duration(args.duration),
        timeouts: Timeouts::default(),
        warmup: std::time::Duration::ZERO,
        tls: TlsPolicy::Verify,
        mix: Default::default(),
        websocket: None,
        protocol: Default::default(),
        script: None,
        checks: Vec::new(),
        scenario: None,
        scenarios: Vec::new(),
        cookies: false,
    };
    eprintln!(
        "loadmark quickstart: built-in target on {}, {} connections for {:?} (target and client share this process: one thread each)",
        server.local_addr(),
        args.connections,
        args.duration
    );
    let result = execute(
        &plan,
        &Part::default(),
        false,
        &mut crate::live::Live::none(),
    )?;
    let served = server.requests_served();
    server.shutdown();
    let interrupted = result.interrupted;
    let report = build_report(&plan, result);
    print_out(render(&report, Format::Text))?;
    let counted = report.summary.requests.responses
        + report.summary.requests.in_flight_at_end
        + report.summary.requests.errors;
    print_out(format!(
        "\n  Cross-check   the target counted {served} requests; loadmark counted {} responses, {} errors and {} in flight ({counted} in all)\n",
        report.summary.requests.responses,
        report.summary.requests.errors,
        report.summary.requests.in_flight_at_end
    ))?;
    if let Some((path, format)) = output {
        write_atomic(&path, &render(&report, format))?;
        eprintln!("loadmark: report written to {}", path.display());
    }
    Ok(crate::verdict::exit_code(
        &[Judged::one(&report)],
        &Rules {
            interrupted,
            ..Default::default()
        },
    ))
}

fn report(args: &ReportArgs) -> Result<ExitCode> {
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| UsageError(format!("{}: cannot read it: {e}", args.file.display())))?;
    let bad = |e: loadmark_report::ReadError| UsageError(format!("{}: {e}", args.file.display()));
    let format = match (&args.output, args.format) {
        (Some(path), flag) => format_for(path, flag).map_err(|e| UsageError(e.to_string()))?,
        (None, Some(f)) => f,
        (None, None) => Format::Text,
    };
    let out = if text.contains("\"steps\"") && text.contains("\"plan_text\"") {
        let mut bundle = loadmark_report::Bundle::from_json(&text).map_err(bad)?;
        if !args.table.columns.is_empty() {
            bundle.columns = args.table.columns.clone();
        }
        if args.table.style.is_some() {
            bundle.style = args.table.style;
        }
        match format {
            Format::Md => loadmark_report::render_markdown(&bundle),
            Format::Json => bundle.to_json(),
            Format::Csv => loadmark_report::render_bundle_csv(&bundle),
            Format::CsvSummary => loadmark_report::render_bundle_csv_summary(&bundle),
            Format::CsvSteps => loadmark_report::render_bundle_csv_steps(&bundle),
            Format::Html => loadmark_report::render_html_bundle(&bundle),
            Format::Text => {
                let mut o = String::new();
                for step in &bundle.steps {
                    o.push_str(&format!("== step {}: {}\n", step.number, step.command));
                    o.push_str(&loadmark_report::render_text_titled(
                        &step.report,
                        bundle.name.as_deref(),
                    ));
                    o.push('\n');
                }
                o
            }
        }
    } else {
        let bad = |e| UsageError(format!("{}: {e}", args.file.display()));
        render_with(
            &loadmark_report::read_result(&text).map_err(bad)?,
            format,
            &args.table,
        )
    };
    crate::gate::write_or_print(args.output.as_deref(), &out)?;
    Ok(ExitCode::SUCCESS)
}
