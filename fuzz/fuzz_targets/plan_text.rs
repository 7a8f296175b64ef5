//! The plan's text parsers on arbitrary UTF-8: the URL (`Target::parse`), durations
//! (`parse_duration`), headers (`parse_header`) and rate/connection stages
//! (`Profile::parse`). None may panic, and what parses must read back the same way.
//!
//! Input layout: 1 byte picks the parser, the rest is the text. (The YAML plan-file parser
//! is not fuzzed yet: see README.md.)

#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use loadmark_plan::{format_duration, parse_duration, parse_header, Profile, Target};

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match which % 4 {
        0 => {
            if let Ok(t) = Target::parse(text) {
                let _ = (t.host(), t.port(), t.host_header(), t.path_and_query());
                let again = Target::parse(t.as_str()).expect("a parsed URL parses again");
                assert_eq!(again, t, "normalizing is idempotent");
            }
        }
        1 => {
            if let Ok(d) = parse_duration(text) {
                let shown = format_duration(d);
                let back = parse_duration(&shown).expect("a formatted duration parses");
                // Parsing goes through f64 seconds: exact only below 2^53 (285 million years).
                if d.as_secs() < 1 << 40 {
                    assert!(back <= d, "{shown} reads back as {back:?}, more than {d:?}");
                }
            }
        }
        2 => {
            if let Ok((name, value)) = parse_header(text) {
                let again = parse_header(&format!("{name}: {value}"));
                assert_eq!(again, Ok((name, value)));
            }
        }
        _ => {
            if let Ok(p) = Profile::parse(text, 0.0, "--stages") {
                let d = p.duration();
                let _ = (p.peak(), p.value_at(Duration::ZERO), p.value_at(d / 2));
                let _ = p.total_requests();
                for k in 0..4 {
                    let _ = p.due(k);
                }
                let _ = Profile::parse(&p.to_text(), 0.0, "--stages").expect("to_text parses");
            }
        }
    }
});
