//! The server's log file: opened for appending, read back from its end.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// How much of the log's end is read to find the last lines: enough for any error message,
/// bounded so a multi-gigabyte access log costs nothing.
const TAIL_BYTES: u64 = 64 * 1024;

/// Lines longer than this are cut in error messages.
const MAX_LINE_CHARS: usize = 400;

/// Opens (creating it and its directory if needed) the log for appending, writes a header
/// line so that several launches appended to one log can be told apart, and returns the file
/// and the offset where this launch's output begins.
pub(crate) fn open(path: &Path, header: &str) -> io::Result<(File, u64)> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(header.as_bytes())?;
    let start = file.seek(SeekFrom::End(0))?;
    Ok((file, start))
}

/// The last `n` lines written after `start` (this launch's output only). Unreadable logs
/// give no lines: this feeds error messages, which must not fail themselves.
pub(crate) fn last_lines(path: &Path, start: u64, n: usize) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    let Ok(mut file) = File::open(path) else {
        return Vec::new();
    };
    let Ok(len) = file.seek(SeekFrom::End(0)) else {
        return Vec::new();
    };
    let from = start.max(len.saturating_sub(TAIL_BYTES)).min(len);
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(from)).is_err() || file.read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    if bytes.is_empty() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.split('\n').collect();
    if text.ends_with('\n') {
        lines.pop();
    }
    if from > start && !lines.is_empty() {
        // Reading began in the middle of a line.
        lines.remove(0);
    }
    let skip = lines.len().saturating_sub(n);
    lines[skip..]
        .iter()
        .map(|line| {
            let line = line.trim_end_matches('\r');
            if line.chars().count() > MAX_LINE_CHARS {
                let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
                format!("{cut}…")
            } else {
                line.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_this_launchs_last_lines() {
        // Fresh (mkdtemp): the offsets below assume an empty file.
        let dir = loadmark_test_support::TempDir::new("launch-log");
        let path = dir.join("nested/server.log");
        let (mut file, first) = open(&path, "== one\n").unwrap();
        file.write_all(b"old 1\nold 2\n").unwrap();
        let (mut file, start) = open(&path, "== two\n").unwrap();
        assert!(start > first);
        assert!(last_lines(&path, start, 5).is_empty());
        file.write_all(b"a\r\nb\nc\npartial").unwrap();
        assert_eq!(last_lines(&path, start, 2), vec!["c", "partial"]);
        assert_eq!(last_lines(&path, start, 10), vec!["a", "b", "c", "partial"]);
        assert!(last_lines(&path, start, 0).is_empty());
        let long = "x".repeat(1000);
        writeln!(file, "\n{long}").unwrap();
        let last = last_lines(&path, start, 1);
        assert_eq!(last[0].chars().count(), MAX_LINE_CHARS + 1);
    }

    #[test]
    fn a_missing_log_has_no_lines() {
        assert!(last_lines(Path::new("/nonexistent/loadmark.log"), 0, 5).is_empty());
    }
}
