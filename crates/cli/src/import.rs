//! `loadmark import` and `loadmark run --curl` (issue 41): documents read here, turned into
//! plans by the `loadmark-import` crate, checked by loadmark's own plan loader, and written.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use loadmark_import::{curl, har, openapi, postman, Imported, Options};

use crate::args::{ImportArgs, ImportKind, RunArgs};
use crate::UsageError;

/// `run --curl`: the command's request into `args` (URL, method, headers, TLS options); its
/// body comes back, read from the files it names.
pub fn apply_curl(args: &mut RunArgs) -> Result<Option<Vec<u8>>> {
    let Some(command) = args.curl.clone() else {
        return Ok(None);
    };
    if !args.url.is_empty() {
        return Err(UsageError(format!(
            "--curl and a URL ({}): the curl command names the URL",
            args.url
        ))
        .into());
    }
    let req = curl::parse_command(&command).map_err(|e| UsageError(e.to_string()))?;
    for w in req.warnings() {
        eprintln!("loadmark: note: {w}");
    }
    let body = req
        .body_bytes(&read_file)
        .map_err(|e| UsageError(e.to_string()))?;
    args.url = req.url.clone();
    args.method = Some(req.method.clone());
    args.headers = req.headers.clone();
    args.insecure |= req.insecure;
    args.http2 |= req.http2;
    let tls = &mut args.tls;
    tls.cacert = tls.cacert.take().or(req.cacert.map(PathBuf::from));
    tls.cert = tls.cert.take().or(req.cert.map(PathBuf::from));
    tls.key = tls.key.take().or(req.key.map(PathBuf::from));
    Ok(body)
}

/// Reads a file a curl command names (relative to the working directory, as curl does).
fn read_file(path: &str) -> std::result::Result<Vec<u8>, String> {
    if path == "-" {
        return Err("@- (standard input) is not read; name a file".into());
    }
    std::fs::read(path).map_err(|e| format!("@{path}: cannot read it: {e}"))
}

/// `loadmark import KIND ...`.
pub fn import(args: &ImportArgs) -> Result<ExitCode> {
    let (imported, common) = match &args.what {
        ImportKind::Curl(a) => {
            let opts = options(&a.common);
            let out = if a.command.len() == 1 {
                curl::import_with(&a.command[0], &opts, &read_file)
            } else {
                curl::import_words(&a.command, &opts, &read_file)
            };
            (out.map_err(|e| UsageError(e.to_string()))?, &a.common)
        }
        ImportKind::Har(a) => {
            let think = har::Think::parse(&a.think).map_err(UsageError)?;
            let opts = har::HarOptions {
                common: options(&a.common),
                include_host: a.include_host.clone(),
                exclude: a.exclude.clone(),
                include_static: a.include_static,
                think,
            };
            let (text, name) = read_doc(&a.file)?;
            (usage(har::import(&text, &name, &opts))?, &a.common)
        }
        ImportKind::Openapi(a) => {
            let methods = match a.read_only {
                true => vec!["GET".into(), "HEAD".into(), "OPTIONS".into()],
                false => a.methods.iter().map(|m| m.to_ascii_uppercase()).collect(),
            };
            let opts = openapi::OpenApiOptions {
                common: options(&a.common),
                base_url: a.base_url.clone(),
                server: a.server,
                tags: a.tags.clone(),
                per_tag: a.per_tag,
                methods,
                check_schema: a.check_schema,
            };
            let (text, name) = read_doc(&a.file)?;
            (usage(openapi::import(&text, &name, &opts))?, &a.common)
        }
        ImportKind::Postman(a) => {
            let env = match &a.environment {
                Some(p) => Some(read_doc(p)?),
                None => None,
            };
            let opts = postman::PostmanOptions {
                common: options(&a.common),
                folder: a.folder.clone(),
                flatten: a.flatten,
            };
            let (text, name) = read_doc(&a.file)?;
            let env = env.as_ref().map(|(t, n)| (t.as_str(), n.as_str()));
            (usage(postman::import(&text, &name, env, &opts))?, &a.common)
        }
    };
    write(&imported, common.output.as_deref())?;
    Ok(ExitCode::SUCCESS)
}

fn usage(r: Result<Imported, loadmark_import::ImportError>) -> Result<Imported> {
    r.map_err(|e| UsageError(e.to_string()).into())
}

fn read_doc(path: &Path) -> Result<(String, String)> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| UsageError(format!("{}: cannot read it: {e}", path.display())))?;
    Ok((text, path.display().to_string()))
}

fn options(c: &crate::args::ImportCommon) -> Options {
    Options {
        users: c.users.unwrap_or(1),
        iterations: c.iterations,
        duration: c.duration.clone(),
        keep_secrets: c.keep_secrets,
        secrets_file: "secrets.csv".into(),
        name: c.name.clone(),
    }
}

/// The data file for secrets beside `plan` (`journey.secrets.csv`).
fn secrets_name(plan: Option<&Path>) -> String {
    match plan.and_then(|p| p.file_stem()) {
        Some(stem) => format!("{}.secrets.csv", stem.to_string_lossy()),
        None => "secrets.csv".into(),
    }
}

/// Writes the plan (and its secrets' data file), checks it with the plan loader, and says
/// on stderr what was left out or replaced.
fn write(imported: &Imported, output: Option<&Path>) -> Result<()> {
    let mut imported = imported.clone();
    if imported.plan.data.is_some() {
        imported.plan.data = Some(secrets_name(output));
    }
    let yaml = imported.yaml();
    let dir = output
        .and_then(|p| p.parent())
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if let (Some(csv), Some(data)) = (imported.secrets_csv(), &imported.plan.data) {
        let path = dir.join(data);
        std::fs::write(&path, csv).with_context(|| format!("writing {}", path.display()))?;
        eprintln!(
            "loadmark import: wrote {} (fill in its REPLACE-ME values)",
            path.display()
        );
    }
    for w in &imported.warnings {
        eprintln!("loadmark import: {w}");
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match output {
        Some(path) => {
            // Checked beside its data file under a name of its own first, so a plan that
            // does not load is never left where the user asked for one.
            let mut trial = path.as_os_str().to_owned();
            trial.push(".import-check");
            let trial = PathBuf::from(trial);
            std::fs::write(&trial, &yaml)
                .with_context(|| format!("writing {}", trial.display()))?;
            if let Err(e) = loadmark_plan::load_plan_file(&trial, cores) {
                let _ = std::fs::remove_file(&trial);
                return Err(anyhow::Error::new(e).context(format!(
                    "the imported plan does not load; {} not written",
                    path.display()
                )));
            }
            std::fs::rename(&trial, path).with_context(|| format!("writing {}", path.display()))?;
            eprintln!("loadmark import: wrote {}", path.display());
        }
        None => {
            loadmark_plan::load_plan_text(&yaml, "(imported plan)", cores)
                .context("the imported plan does not load")?;
            print!("{yaml}");
        }
    }
    Ok(())
}
