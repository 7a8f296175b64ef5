//! loadmark's gRPC messages (issue 36): the schemas a call needs, found at run time with no
//! `protoc` on the user's machine, and its request made from JSON.
//!
//! ```no_run
//! use loadmark_grpc::{Schema, Source};
//! let source = Source::Proto { files: vec!["helloworld.proto".into()], imports: vec![] };
//! let schema = Schema::load(&source).unwrap();
//! let method = schema.method("helloworld.Greeter/SayHello").unwrap();
//! let body = method.request_body(r#"{"name":"x"}"#).unwrap(); // 5-byte prefix + message
//! assert_eq!(method.path(), "/helloworld.Greeter/SayHello");
//! # let _ = body;
//! ```
//!
//! Design decisions:
//! - `.proto` files are compiled by `protox` (pure Rust) and messages handled by
//!   `prost-reflect`'s dynamic messages, with the proto3 JSON mapping through serde: no code
//!   generated per service, so any method of any file can be called.
//! - Without a `.proto` or a protoset, the server's reflection service gives the files
//!   ([`reflection`]): v1, then v1alpha when v1 is UNIMPLEMENTED. It is asked once, before
//!   the load, over its own HTTP/2 connection (hyper's: this is no hot path).
//! - The load itself never touches this crate: the request is encoded once, and the engine's
//!   own HTTP/2 client sends those bytes (`loadmark_engine`'s gRPC driver).

pub mod reflection;
mod schema;

pub use schema::{Method, Schema, SchemaError, Source};
