//! The engine's integration tests, in one test binary: each module is one subject over real
//! loopback sockets (against the built-in target, nginx, and raw TCP servers that send exact
//! bytes). One binary, not one per file: each file linked the engine and its dependencies
//! again, and CI spent minutes of its budget building fifteen binaries of the same code.

mod common;

mod checks;
mod closed_loop;
mod connection_rules;
mod hostile;
mod http2;
mod http2_hostile;
mod http2_nginx;
mod oneshot;
mod open_loop;
mod pipeline;
mod protocol_report;
mod segments;
mod tls;
mod unix_socket;
mod websocket;
