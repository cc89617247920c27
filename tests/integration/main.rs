//! regent's integration tests: one binary, one module per area (ripgrep's
//! `tests/integration` layout), so the dependency tree is linked once
//! instead of once per file. Every test drives the real `regent` binary
//! (or a real client or server beside it) through the kit shared with
//! the data suites and benches, `regent-testkit` (crates/testkit), named
//! `common` here; area helpers live beside the areas that use them.
//!
//! The data-driven suites are a binary of their own, because they generate one
//! test per case file: `tests/data/cases.rs` (the `regent test` format) and
//! `tests/data/corpus.rs` (case directories).
//!
//! Run one area with a filter: `cargo test --test integration http::`.

use regent_testkit as common;
mod exec_support;
mod jwt_support;
mod reload_support;

mod broken_pipe;
mod bundle;
mod bundle_serve;
mod caller_stdio;
mod confirm;
mod decision_log;
mod decision_log_bounds;
mod decision_log_ship;
mod elicit_numbers;
mod exec_cli;
mod exec_fence;
mod exec_git;
mod exec_http;
mod exec_load;
mod exec_policy;
mod http;
mod http_direct;
mod http_jwks;
mod http_jwt;
mod http_jwt_claims;
mod http_lifecycle;
mod http_limits;
mod http_oauth;
mod http_ops;
mod http_scopes;
mod interop;
mod layout;
mod pace;
mod plan;
mod protocol;
mod protocol_meta;
mod reload;
mod reload_layouts;
mod request_numbers;
mod request_state_store;
mod resolve_input;
mod resolvers;
mod review;
mod schema_drift;
mod shadow;
mod stack_reservation;
mod start_up;
mod upstream_drift;
mod upstream_edges;
mod upstream_filesystem;
mod upstream_git;
mod upstream_http;
mod upstream_http_edges;
mod upstream_http_reload;
mod upstream_relay;
mod upstream_requests;
mod upstream_stdio;
mod upstream_stdio_lifecycle;
mod upstream_suite;
