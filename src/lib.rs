//! regent: an MCP server whose tools are declared in YAML and whose per-call
//! behaviour is decided by Rego policies. See ARCHITECTURE.md for the map.

pub mod diag;
pub mod source;
pub mod catalog;
pub mod protocol;
pub mod state;
pub mod cli;
pub mod commands;
pub mod check;
pub mod testing;
