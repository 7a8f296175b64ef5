//! Where reports go: format choice, a writability check before any load, atomic writes.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use loadmark_report::{render_json, render_text, Report};

use crate::args::Format;

/// The format for `path`: the flag if given, else from the extension.
pub fn format_for(path: &Path, flag: Option<Format>) -> Result<Format> {
    if let Some(f) = flag {
        return Ok(f);
    }
    match path.extension().and_then(|e| e.to_str()) {
        Some("json") => Ok(Format::Json),
        Some("txt") | Some("text") => Ok(Format::Text),
        Some("md") | Some("markdown") => Ok(Format::Md),
        Some("csv") => Ok(Format::Csv),
        Some("html") | Some("htm") => Ok(Format::Html),
        _ => bail!(
            "--output {}: cannot tell the format from the extension: use .json, .txt, .md, .csv or .html, or add --format json|text|md|csv|csv-summary|html",
            path.display()
        ),
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

pub fn render(report: &Report, format: Format) -> String {
    match format {
        Format::Text => render_text(report),
        Format::Json => render_json(report),
        Format::Md => {
            loadmark_report::render_markdown(&loadmark_report::Bundle::of_report(report.clone()))
        }
        Format::Csv => loadmark_report::render_csv(report),
        Format::CsvSummary => loadmark_report::render_csv_summary(report),
        Format::Html => loadmark_report::render_html(report),
    }
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
    }

    #[test]
    fn atomic_write_and_unwritable_path() {
        let dir = std::env::temp_dir().join(format!("loadmark-out-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
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
        fs::remove_dir_all(&dir).unwrap();
    }
}
