//! The renderers: one module per output format (text, Markdown, HTML, CSV, JUnit), each
//! rendering every section a report can have (protocol, WebSocket, scenario, checks, split
//! segments, thresholds, histogram, comparisons) in its own format. They are pure functions
//! of the model. A format imports `model`, `units` and `shared` (what several formats show
//! alike), never another format; nothing in `model` imports from here.

pub(crate) mod csv;
pub(crate) mod html;
pub(crate) mod junit;
pub(crate) mod markdown;
pub(crate) mod shared;
pub(crate) mod text;
