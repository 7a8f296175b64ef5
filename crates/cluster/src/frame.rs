//! A worker's result travels on its standard output, framed in short lines, because the
//! launcher cannot assume a shared file system: srun relays each task's output (splitting
//! long lines, prefixing `TASK: ` with `--label`), and `kubectl logs` returns a pod's.
//!
//! The JSON is base64-encoded (no byte of it can be taken for a newline or a label) and cut
//! into lines well under srun's relay buffer; a closing line carries the length, so a result
//! cut short by a killed task is recognised as incomplete rather than parsed.

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

const BEGIN: &str = "LOADMARK-RESULT-BEGIN";
const LINE: &str = "LOADMARK-RESULT ";
const END: &str = "LOADMARK-RESULT-END ";
/// base64 characters per line: far below srun's 1 KiB relay messages even with a label.
const CHUNK: usize = 700;

/// The framed form of `json`, ready to print (ends with a newline).
pub fn frame(json: &str) -> String {
    let encoded = STANDARD.encode(json.as_bytes());
    let mut out = String::with_capacity(encoded.len() + encoded.len() / CHUNK * 20 + 64);
    out.push_str(BEGIN);
    out.push('\n');
    for chunk in encoded.as_bytes().chunks(CHUNK) {
        out.push_str(LINE);
        out.push_str(std::str::from_utf8(chunk).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str(END);
    out.push_str(&json.len().to_string());
    out.push('\n');
    out
}

/// What a task's output held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Collected {
    /// A whole result (the JSON text).
    Result(String),
    /// Framing began but did not end properly: the task died mid-write.
    Incomplete(String),
}

/// Reassembles framed results from output lines, per task.
#[derive(Debug, Default)]
pub struct Collector {
    open: BTreeMap<u32, String>,
    done: BTreeMap<u32, Collected>,
    /// Lines that were not part of a frame, per task (a worker's own messages).
    pub other: Vec<(u32, String)>,
}

impl Collector {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one line of srun `--label` output (`TASK: text`).
    pub fn feed_labelled(&mut self, line: &str) {
        match line.split_once(": ") {
            Some((task, text)) if task.trim().parse::<u32>().is_ok() => {
                self.feed(task.trim().parse().expect("checked"), text)
            }
            _ => self.other.push((u32::MAX, line.to_string())),
        }
    }

    /// Feeds one line of task `task`'s output.
    pub fn feed(&mut self, task: u32, text: &str) {
        let text = text.trim_end_matches(['\r', '\n']);
        if text == BEGIN {
            self.open.insert(task, String::new());
        } else if let Some(chunk) = text.strip_prefix(LINE) {
            match self.open.get_mut(&task) {
                Some(buf) => buf.push_str(chunk),
                None => self.other.push((task, text.to_string())),
            }
        } else if let Some(len) = text.strip_prefix(END) {
            let Some(encoded) = self.open.remove(&task) else {
                self.other.push((task, text.to_string()));
                return;
            };
            let decoded = STANDARD
                .decode(encoded.as_bytes())
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .filter(|s| len.trim().parse::<usize>().ok() == Some(s.len()));
            let entry = match decoded {
                Some(json) => Collected::Result(json),
                None => Collected::Incomplete(format!(
                    "task {task}: a result that does not decode to {len} bytes"
                )),
            };
            self.done.insert(task, entry);
        } else {
            self.other.push((task, text.to_string()));
        }
    }

    /// Every task's outcome; a frame still open is incomplete.
    pub fn finish(mut self) -> (BTreeMap<u32, Collected>, Vec<(u32, String)>) {
        for (task, _) in std::mem::take(&mut self.open) {
            self.done.insert(
                task,
                Collected::Incomplete(format!("task {task}: its result was cut off")),
            );
        }
        (self.done, self.other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_through_labelled_interleaved_lines() {
        let a = format!("{{\"a\":\"{}\",\"µ\":1}}", "x".repeat(5000));
        let b = "{\"b\":2}".to_string();
        let (fa, fb) = (frame(&a), frame(&b));
        let mut c = Collector::new();
        let (mut la, mut lb) = (fa.lines(), fb.lines());
        c.feed_labelled("1: loadmark: starting");
        loop {
            let (x, y) = (la.next(), lb.next());
            if x.is_none() && y.is_none() {
                break;
            }
            if let Some(x) = x {
                c.feed_labelled(&format!("0: {x}"));
            }
            if let Some(y) = y {
                c.feed_labelled(&format!("1: {y}"));
            }
        }
        let (done, other) = c.finish();
        assert_eq!(done[&0], Collected::Result(a));
        assert_eq!(done[&1], Collected::Result(b));
        assert_eq!(other, vec![(1, "loadmark: starting".to_string())]);
        assert!(fa.lines().all(|l| l.len() <= CHUNK + LINE.len()));
    }

    #[test]
    fn a_result_cut_off_is_incomplete_not_parsed() {
        let f = frame("{\"a\":1}");
        let mut c = Collector::new();
        for l in f.lines().take(2) {
            c.feed(2, l);
        }
        let (done, _) = c.finish();
        assert!(matches!(done[&2], Collected::Incomplete(_)));
        let mut c = Collector::new();
        c.feed(0, BEGIN);
        c.feed(0, "LOADMARK-RESULT e30=");
        c.feed(0, "LOADMARK-RESULT-END 9");
        assert!(matches!(c.finish().0[&0], Collected::Incomplete(_)));
    }
}
