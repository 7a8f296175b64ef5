//! loadmark's engine: executors that drive transports and record every request.
//!
//! [`run`] takes a validated [`loadmark_plan::Plan`] and returns a [`RunResult`] whose totals
//! are exact: every request began ends as a response, an error, or "in flight" at the stop.
//!
//! ```no_run
//! use loadmark_engine::{run, StopHandle};
//! # fn plan() -> loadmark_plan::Plan { panic!("the example only shows the call") }
//! let result = run(&plan(), &StopHandle::new(), |_progress| {}).unwrap();
//! println!("{} responses", result.totals.snapshot.responses);
//! ```
//!
//! Design decisions:
//! - One OS thread per worker, each with its own current-thread tokio runtime and its own
//!   `Recorder` (wrk's model): no lock or cross-thread traffic per request; workers hand over
//!   whole seconds once a second.
//! - Request bytes are encoded once per run and written as-is; reads land in one receive
//!   buffer per worker (not per connection) and are parsed at once; bodies are counted by the
//!   incremental parser, never stored.
//! - Transports (TCP, TLS) sit behind the [`transport::Transport`] trait, so executors do not
//!   care what carries the bytes.
//! - Latency in a closed loop runs from the first byte written to the last byte received;
//!   connect time is recorded apart, once per new connection. "Received" is when the kernel
//!   received those bytes on kept-alive plain TCP (`arrival.rs`), so time a response spends
//!   waiting for the worker is not charged to the server; elsewhere it is when they were read.

mod arrival;
mod carried;
mod checks;
mod closed;
mod connection;
mod cookies;
mod counted;
mod error;
mod exchange;
mod grpc;
mod http2;
mod http3;
mod linger;
mod oneshot;
mod open;
mod pipeline;
mod pool;
mod proxy;
mod runner;
mod scenario;
pub mod script;
mod service;
mod settle;
mod source;
mod sys;
pub mod transport;
mod unix;
mod worker;
mod ws;

pub use checks::CAPTURE_LIMIT;
pub use error::EngineError;
pub use http2::Negotiated;
pub use runner::{run, run_part, Part, Progress, RunResult, StopHandle};
pub use sys::{
    machine_cpu_ticks, online_cpus, prepare_files_for, thread_cpu_time, thread_cpu_wait,
    usable_cpus, CpuTime,
};
pub use unix::Unix;
