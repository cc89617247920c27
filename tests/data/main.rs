//! The data-driven suites, one test per case: `cases` runs every
//! `*.test.yaml` file (the format users write for `regent test`) against the
//! served binary in both eras, and `corpus` runs every case directory under
//! `tests/corpus/` and every example through `check`, `test` and `serve`.
//! libtest-mimic gives them libtest's names, filters and summary line:
//! `cargo test --test data hostile::` runs one group.
//!
//! The other integration tests are plain `#[test]`s in `tests/integration`.

// The kit (crates/testkit), by the name the suites use.
use regent_testkit as common;

mod cases;
mod corpus;

fn main() {
    common::set_binary(env!("CARGO_BIN_EXE_regent"));
    let args = libtest_mimic::Arguments::from_args();
    let mut trials = cases::trials();
    trials.extend(corpus::trials());
    libtest_mimic::run(&args, trials).exit();
}
