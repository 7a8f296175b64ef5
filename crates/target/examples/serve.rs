//! Runs the built-in target until killed, to measure it alone (with wrk, beside nginx):
//! `cargo run --release -p loadmark-target --example serve -- 127.0.0.1:8080 1`
//! (arguments: ADDR, THREADS).

fn main() {
    let mut args = std::env::args().skip(1);
    let addr = args
        .next()
        .unwrap_or_else(|| "127.0.0.1:8080".into())
        .parse()
        .expect("ADDR like 127.0.0.1:8080");
    let threads = args
        .next()
        .map(|t| t.parse().expect("THREADS is a number"))
        .unwrap_or(1);
    let server = loadmark_target::start(loadmark_target::ServerConfig {
        addr,
        threads,
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("serving on http://{}", server.local_addr());
    loop {
        std::thread::park();
    }
}
