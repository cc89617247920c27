//! Policy evaluation: warm regorus engines per tool (`engine`), the native
//! evaluator of the planned rules (`native`, lowered to by `lower`, with the
//! constant-argument builtins of `builtins`), the time and memory budget of
//! one evaluation (`budget`), the clock its time limit counts (`clock`), the
//! numbers a request spelled by hand that its evaluations must not write
//! (`spelled`) and the reading of regorus' errors (`errors`).
//!
//! It knows regorus as an evaluator; Rego as syntax is `rego`'s, OPA's
//! builtin answers `opa_builtins`'. It knows nothing of catalogs, tools'
//! schemas or the wire: `catalog` builds an engine pool per tool and asks it
//! for values, `protocol` and `check` read its error messages.

pub mod budget;
pub(crate) mod builtins;
pub mod clock;
pub mod engine;
pub mod errors;
pub(crate) mod lower;
pub mod native;
pub mod spelled;

/// The default limit on one policy evaluation. Policies take microseconds;
/// the limit exists only to stop a runaway. Serving measures wall-clock time
/// (regorus' timer, and a request's latency, are wall time), so the limit
/// must leave room for a machine whose cores are busy: at 100 ms, a
/// scheduling stall on a loaded 2-core machine failed healthy evaluations.
/// `check` and `test` count the thread's CPU time instead (`clock`).
/// (Recursion, which once made this limit a guard for the stack, is refused at
/// load; builtins it cannot interrupt are charged by `budget` instead.)
pub const DEFAULT_POLICY_TIMEOUT_MS: u64 = 250;
