//! Where reports go: format choice, a writability check before any load, atomic writes.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{bail, Context, Result};
use loadmark_report::{render_json, render_text, Report};

use crate::args::Format;

/// The format for `path`: from the extension, or the flag when the extension says nothing.
/// An extension that names another format than the flag is refused, so `-o r.json --format
/// md` never writes Markdown into a `.json` file.
pub fn format_for(path: &Path, flag: Option<Format>) -> Result<Format> {
    let by_extension = match path.extension().and_then(|e| e.to_str()) {
        Some("json") => Some(Format::Json),
        Some("txt") | Some("text") => Some(Format::Text),
        Some("md") | Some("markdown") => Some(Format::Md),
        Some("csv") => Some(Format::Csv),
        Some("html") | Some("htm") => Some(Format::Html),
        _ => None,
    };
    match (by_extension, flag) {
        // Both CSV tables are .csv files.
        (Some(Format::Csv), Some(f @ (Format::CsvSummary | Format::CsvSteps))) => Ok(f),
        (Some(ext), Some(f)) if ext != f => bail!(
            "--output {} is a {} file but --format {} asks for {}: name the file .{} or drop --format",
            path.display(),
            ext.name(),
            f.flag(),
            f.name(),
            f.extension()
        ),
        (_, Some(f)) => Ok(f),
        (Some(ext), None) => Ok(ext),
        (None, None) => bail!(
            "--output {}: cannot tell the format from the extension: use .json, .txt, .md, .csv or .html, or add --format json|text|md|csv|csv-summary|csv-steps|html",
            path.display()
        ),
    }
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "JSON",
            Format::Md => "Markdown",
            Format::Csv => "CSV",
            Format::CsvSummary => "CSV summary",
            Format::CsvSteps => "CSV of scenario steps",
            Format::Html => "HTML",
        }
    }

    fn flag(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Md => "md",
            Format::Csv => "csv",
            Format::CsvSummary => "csv-summary",
            Format::CsvSteps => "csv-steps",
            Format::Html => "html",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Format::Text => "txt",
            Format::Json => "json",
            Format::Md => "md",
            Format::Csv | Format::CsvSummary | Format::CsvSteps => "csv",
            Format::Html => "html",
        }
    }
}

fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "report".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

/// Fails now, before an hour of load, if the report could not be written at the end.
pub fn check_writable(path: &Path) -> Result<()> {
    let probe = temp_path(path);
    fs::File::create(&probe)
        .with_context(|| format!("--output {}: cannot write there", path.display()))?;
    let _ = fs::remove_file(&probe);
    if path.is_dir() {
        bail!("--output {}: is a directory", path.display());
    }
    Ok(())
}

/// Writes via a temporary file and a rename, so a reader never sees half a report.
pub fn write_atomic(path: &Path, contents: &str) -> Result<()> {
    let tmp = temp_path(path);
    let result = (|| -> std::io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(contents.as_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.with_context(|| format!("writing {}", path.display()))
}

/// Stdout's reader went away (the pipe was closed: `loadmark schema result | head`); what is
/// printed after that is dropped.
static STDOUT_GONE: AtomicBool = AtomicBool::new(false);

/// Everything a command prints to stdout goes through here (`print!` panics on a closed
/// pipe, with a backtrace). A reader that closed the pipe (EPIPE) is not an error: the rest
/// of the output is dropped and the command goes on and ends as it would have, quietly.
///
/// Why not SIGPIPE's default action instead (the C way: the process dies on the write)?
/// `run` prints the report before it writes `-o FILE` and before it decides its exit code:
/// `loadmark run URL -o r.json | head -3` would die without writing r.json and exit by the
/// signal instead of its documented code; `serve` and `bench` would die mid-way the same way.
/// So SIGPIPE stays ignored, as the Rust runtime sets it, and EPIPE is handled here.
pub(crate) fn print_out(text: impl AsRef<[u8]>) -> Result<()> {
    if STDOUT_GONE.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_ref()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            STDOUT_GONE.store(true, Ordering::Relaxed);
            Ok(())
        }
        result => result.context("writing to stdout"),
    }
}

pub fn render(report: &Report, format: Format) -> String {
    render_with(report, format, &crate::args::TableFlags::default())
}

/// As [`render`], with the step table's columns and style for Markdown, HTML and the CSV
/// summary (which, with columns, is the one-step bundle's: step, target and params first).
pub fn render_with(report: &Report, format: Format, table: &crate::args::TableFlags) -> String {
    let bundle = || {
        let mut b = loadmark_report::Bundle::of_report(report.clone());
        b.columns = table.columns.clone();
        b.style = table.style;
        b
    };
    match format {
        Format::Text => render_text(report) + &styled_text(&bundle()),
        Format::Json => render_json(report),
        Format::Md => loadmark_report::render_markdown(&bundle()),
        Format::Csv => loadmark_report::render_csv(report),
        Format::CsvSummary if !table.columns.is_empty() => {
            loadmark_report::render_bundle_csv_summary(&bundle())
        }
        Format::CsvSummary => loadmark_report::render_csv_summary(report),
        Format::CsvSteps => loadmark_report::render_csv_steps(report),
        Format::Html => loadmark_report::render_html_bundle(&bundle()),
    }
}

/// `--style` on the terminal: after the text report, the run laid out as wrk (bombardier,
/// ab, taurus) prints it, under a title that says whose figures they are. Empty without
/// `--style`.
fn styled_text(bundle: &loadmark_report::Bundle) -> String {
    let mut out = String::new();
    for block in loadmark_report::style_blocks(bundle) {
        // A single run has no steps to number.
        let title = block
            .title
            .strip_prefix(&format!("Step {}: in", block.step))
            .filter(|_| bundle.steps.len() == 1)
            .map_or(block.title.clone(), |rest| format!("In{rest}"));
        out.push_str(&format!("\n{title}:\n"));
        for line in &block.lines {
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_from_extension_or_flag() {
        assert_eq!(format_for(Path::new("r.json"), None).unwrap(), Format::Json);
        assert_eq!(format_for(Path::new("r.txt"), None).unwrap(), Format::Text);
        assert_eq!(
            format_for(Path::new("r.out"), Some(Format::Json)).unwrap(),
            Format::Json
        );
        let err = format_for(Path::new("r.out"), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("--output r.out"), "{err}");
        let err = format_for(Path::new("r.json"), Some(Format::Md))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "--output r.json is a JSON file but --format md asks for Markdown: name the file .md or drop --format"
        );
        assert!(format_for(Path::new("r.html"), Some(Format::Csv)).is_err());
        assert_eq!(
            format_for(Path::new("r.json"), Some(Format::Json)).unwrap(),
            Format::Json
        );
        assert_eq!(
            format_for(Path::new("s.csv"), Some(Format::CsvSummary)).unwrap(),
            Format::CsvSummary
        );
    }

    #[test]
    fn atomic_write_and_unwritable_path() {
        // Fresh (mkdtemp): a directory left by an earlier run could hold a stray .tmp file.
        let dir = loadmark_test_support::TempDir::new("out");
        let path = dir.join("r.json");
        check_writable(&path).unwrap();
        write_atomic(&path, "{}").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "{}");
        let leftovers: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
        assert!(check_writable(&dir.join("missing-dir/r.json")).is_err());
    }
}
