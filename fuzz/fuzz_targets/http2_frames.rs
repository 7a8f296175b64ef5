//! The HTTP/2 client's frame handling (frame reader, HPACK decoder, the rules of RFC 9113)
//! on arbitrary bytes from the server, read in two pieces split where the fuzzer chooses.
//! It must never panic, and each of the three streams open must end exactly once
//! (`loadmark_wire::http2::fuzz_server_bytes` checks both).
//!
//! Input layout: 2 bytes the cut, then the bytes the "server" sent.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let cut = usize::from(u16::from_le_bytes([data[0], data[1]]));
    loadmark_wire::http2::fuzz_server_bytes(&data[2..], cut);
});
