//! [`StreamWriter`]: the streamed result, one JSON line per final second, flushed at once.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use loadmark_report::{Report, StreamLine, StreamSecond, StreamStart};

use crate::{LiveError, Tick};

/// Writes a stream file (its format: `loadmark_report::StreamLine`).
pub struct StreamWriter {
    path: PathBuf,
    out: BufWriter<File>,
}

impl StreamWriter {
    /// Creates (or truncates) `path` and writes the start line.
    pub fn create(path: &Path, start: StreamStart) -> Result<Self, LiveError> {
        let file = File::create(path).map_err(|source| LiveError::Stream {
            path: path.to_path_buf(),
            source,
        })?;
        let mut w = StreamWriter {
            path: path.to_path_buf(),
            out: BufWriter::new(file),
        };
        w.line(&StreamLine::Start(start))?;
        Ok(w)
    }

    /// Writes the tick's seconds, one line each, and flushes them: a reader following the
    /// file sees each second as soon as it is final. The last tick's seconds are marked
    /// partial exactly as the report marks them.
    pub fn tick(&mut self, tick: &Tick) -> Result<(), LiveError> {
        for s in tick.seconds {
            let mut point = s.point.clone();
            if tick.finished {
                point.mark_partial(tick.elapsed);
            }
            self.line(&StreamLine::Second(StreamSecond {
                point,
                snapshot: s.snapshot.clone(),
            }))?;
        }
        Ok(())
    }

    /// Writes the last line: the whole report.
    pub fn summary(&mut self, report: &Report) -> Result<(), LiveError> {
        self.line(&StreamLine::Summary(Box::new(report.clone())))
    }

    fn line(&mut self, line: &StreamLine) -> Result<(), LiveError> {
        let io = |source| LiveError::Stream {
            path: self.path.clone(),
            source,
        };
        serde_json::to_writer(&mut self.out, line).map_err(|e| io(e.into()))?;
        self.out.write_all(b"\n").map_err(io)?;
        self.out.flush().map_err(io)
    }
}
