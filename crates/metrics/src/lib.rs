//! The vocabulary of a loadmark measurement.
//!
//! Every request an executor issues ends as exactly one of: a [`Sample`] (a response arrived,
//! whatever its status), an error of one [`ErrorKind`], or "in flight" when the run stopped.
//! Samples and errors go into a per-worker [`Recorder`] that no other thread touches; the
//! recorder cuts its data into one-second [`Interval`]s, and an [`Aggregate`] adds the intervals
//! of all workers into the per-second series and the run's totals.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use loadmark_metrics::{Aggregate, Recorder, Sample};
//!
//! let origin = Instant::now();
//! let mut recorder = Recorder::new(origin);
//! let started = origin + Duration::from_millis(10);
//! recorder.record(&Sample {
//!     scheduled: None,
//!     started,
//!     first_byte: started + Duration::from_micros(300),
//!     ended: started + Duration::from_micros(450),
//!     status: 200,
//!     bytes_read: 120,
//!     bytes_written: 80,
//! });
//! let mut aggregate = Aggregate::new(1, 0);
//! aggregate.add(recorder.finish());
//! let totals = aggregate.finish();
//! assert_eq!(totals.snapshot.responses, 1);
//! assert_eq!(totals.snapshot.latency.max(), 450);
//! ```
//!
//! Design decisions:
//! - Histograms are HDR (1 µs to 1 h, 3 significant digits) in microseconds, so memory is
//!   fixed whatever the request count, and results merge exactly by adding histograms. No
//!   percentile is ever averaged.
//! - A sample is bucketed by the second in which it *ended*, so per-second counts add up to the
//!   total exactly; the recorder closes a second the moment a later sample arrives, without a
//!   timer.
//! - Errors are data: a closed list of kinds, each with a count and the first example message.
//! - No tokio and no I/O here: everything is pure and unit-tested without sockets.

mod aggregate;
mod checks;
mod error_kind;
mod grpc;
mod per_connection;
mod quic;
mod recorder;
mod scenario;
mod snapshot;
mod summary;
mod websocket;

pub use aggregate::{Aggregate, ScenarioPoint, Second, SeriesPoint, Totals};
pub use checks::{CheckStat, CheckStats, CHECK_EXAMPLE_CHARS};
pub use error_kind::{ErrorCounts, ErrorKind, ErrorStat};
pub use grpc::{grpc_code_name, GrpcCall, GrpcCode, GrpcStats, GrpcStreamStats, GRPC_CODES};
pub use per_connection::{ConnectionSpread, RequestsPerConnection};
pub use quic::{EarlyData, HandshakeMs, QuicConnection, QuicFigures, QuicTally, ZeroRttFigures};
pub use recorder::{Busy, Interval, Recorder, Sample, WorkerReport};
pub use scenario::{merge_named, ScenarioSlot, ScenarioStats, StepOutcome, StepStats};
pub use snapshot::{
    new_histogram, record_us, HistogramDecodeError, PoolCounts, Snapshot, StatusCounts,
    HISTOGRAM_MAX_US,
};
pub use summary::{Distribution, Percentile, REPORTED_QUANTILES};
pub use websocket::WsStats;
