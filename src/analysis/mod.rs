//! What only `regent check`, `regent test`, `regent review` and `resolve
//! --explain` ask of a compiled catalog, never a request: the worst-case
//! proof (`proof`, over the finite domains of `domain`, the string
//! partitions of `partition`, the literal-directed candidates of `literal`
//! and the caller classes of `caller_classes`), evaluating every rule on
//! samples (`exercise`), which rule produced a field of a resolution
//! (`explain`), Rego unit tests and line coverage (`rego_test`).
//!
//! It sits above `catalog` and below the commands that report: it reads a
//! built `Catalog` and its `Tool`s, their policies as syntax (`rego`) and
//! their engines (`policy`), and computes facts; how a finding is worded,
//! counted or shown is `check`'s, `testing`'s and `review`'s. Nothing on
//! the serving path (`catalog`, `policy`, `protocol`, `http`, `exec`,
//! `state`, …) uses it (the table in `tests/integration/layout.rs`):
//! serving answers the same whether an analysis exists or not.

pub mod caller_classes;
pub mod domain;
pub mod exercise;
pub mod explain;
pub mod literal;
pub mod partition;
pub mod proof;
pub mod rego_test;
