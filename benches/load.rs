//! `cargo bench --bench load [-- options]`: the load generator (crates/load,
//! package `regent-load`) on the release binary Cargo built for this bench.
//! The same run without the bench: `cargo run --release -p regent-load`.

use clap::Parser;

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not, and a
    // test run should not start a five-minute measurement or rewrite files.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!("load: not run (measure with `cargo bench --bench load`)");
        return;
    }
    let args = regent_load::Args::parse_from(std::env::args().filter(|a| a != "--bench"));
    regent_load::run(args.opts(env!("CARGO_BIN_EXE_regent").into()));
}
