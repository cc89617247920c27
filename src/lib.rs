//! regent: an MCP server whose tools are declared in YAML and whose per-call
//! behaviour is decided by Rego policies. See ARCHITECTURE.md for the map.

pub mod analysis;
pub mod bundle;
pub mod caller;
pub mod canonical;
pub mod catalog;
pub mod check;
pub mod cli;
pub mod commands;
pub mod decisions;
pub mod diag;
#[cfg(test)]
mod differential;
pub mod exec;
pub mod fence;
pub mod fill;
pub mod heap;
pub mod http;
pub mod json_value;
pub mod jwt_crypto;
pub mod meta_keys;
pub mod metrics;
pub mod opa_builtins;
pub mod outbound;
pub mod par;
pub mod policy;
pub mod protocol;
pub mod regex_samples;
pub mod rego;
pub mod reload;
pub mod review;
pub mod run_plan;
pub mod scopes;
pub mod source;
pub mod state;
pub mod testing;
pub mod timestamp;
pub mod upstream;
