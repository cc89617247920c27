//! Differential tests (test builds only): regent's answers held against
//! another engine's on generated inputs, so a difference fails a test
//! instead of reaching a policy.
//!
//! - [`harness`]: the generated arguments and callers, the shipped
//!   catalogs, and `policy/native` against regorus on every tool of them
//!   (the same comparison the debug build makes on every evaluation);
//! - [`opa`]: OPA's own engine as the oracle (`tests/opa/oracle.py`, run
//!   with `OPA_PYTHON`), and [`opa_catalogs`]: every rule set a request
//!   evaluates, for every shipped catalog and every construct of
//!   `tests/opa/constructs.yaml`, in regent and in OPA;
//! - [`native`], [`builtins`], [`opa_builtins`]: the native evaluator, the
//!   native builtins and `opa_builtins` against regorus and OPA.
//!
//! Nothing here is built into regent: the serving path never depends on
//! it, and it may use any module below `commands`.

pub(crate) mod builtins;
pub(crate) mod harness;
pub(crate) mod native;
pub(crate) mod opa;
pub(crate) mod opa_builtins;
pub(crate) mod opa_catalogs;
