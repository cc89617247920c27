//! What `serve` runs of `check` before a catalog serves, at start-up and at
//! every reload (issue 28): a catalog that `regent check` refuses with an
//! error is not swapped in, so reload is never looser than the CI gate.
//!
//! The build already refuses what does not compile; `check` goes further by
//! running the catalog: rules exercised on sample arguments (conflicts,
//! evaluation errors that a client would get as -32603), the worst-case
//! proof (a listing that understates a call), `visible` rules that fail,
//! the lints (unknown functions, arity) and the Rego test files. This module
//! runs exactly those (through `check`'s own `run_catalog`) and keeps their
//! errors; warnings stay `check`'s.
//!
//! Cost: running a tool is the expensive part, so a reload runs only the
//! tools whose compiled form, test cases or test callers changed since the
//! last catalog that passed ([`Checked`], keyed by `Tool::fingerprint`,
//! which covers what the tool reaches: a library package it never imports
//! can change nothing found about it);
//! start-up runs every tool, spread over the cores. A tool carried over
//! unchanged had no errors, or that catalog would not be serving.
//!
//! One difference from `check`, on purpose: an evaluation that ran out of
//! time on a sample (`policy-timeout`) is a warning here. A reload runs at
//! low priority on a machine that is serving, so the clock says as much
//! about the load as about the policy; `check` in CI keeps it an error.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use super::{case_arguments, case_callers, run_catalog};
use crate::catalog::Catalog;
use crate::diag::{Diagnostic, Severity};
use crate::source::Source;

/// What was run for each tool of the serving catalog, by name: the digest
/// of its fingerprint and the test cases and callers it was run with.
#[derive(Debug, Default, Clone)]
pub struct Checked(HashMap<String, [u8; 32]>);

/// What [`on_load`] found.
#[derive(Debug, Default)]
pub struct OnLoad {
    /// `check`'s errors: the catalog must not serve.
    pub errors: Vec<Diagnostic>,
    /// Errors `check` would report that say more about the machine than the
    /// catalog (a sample that ran out of time), kept as warnings.
    pub warnings: Vec<Diagnostic>,
    /// What to hand the next reload, once this catalog serves.
    pub checked: Checked,
    /// How many tools were run (the rest were unchanged).
    pub ran: usize,
}

/// Runs `check`'s error-finding analyses on `catalog` (built from
/// `source`), for the tools that changed since `previous`.
pub fn on_load(source: &Source, catalog: &Catalog, previous: &Checked) -> OnLoad {
    let cases = case_arguments(source);
    let callers = case_callers(source);
    let callers_digest = format!("{callers:?}");
    let key = |tool: &crate::catalog::Tool| -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(tool.fingerprint);
        h.update(format!("{:?}\n", cases.get(&tool.name)));
        h.update(&callers_digest);
        h.finalize().into()
    };
    let mut checked = Checked::default();
    let mut changed = Vec::new();
    for tool in catalog.tools() {
        let k = key(tool);
        if previous.0.get(&tool.name) != Some(&k) {
            changed.push(tool);
        }
        checked.0.insert(tool.name.clone(), k);
    }
    let ran = changed.len();
    // The lints and the Rego test files read every policy whatever changed.
    let (found, catalog_wide) = run_catalog(source, catalog, &changed, &cases, &callers);

    // The build hands a shed tool the modules it parsed; a tool not run
    // here (unchanged at a reload) must not keep them for the catalog's
    // life either.
    for tool in catalog.tools() {
        tool.release_engine();
    }
    // Every failure: on load, errors are errors whatever their count.
    let mut all: Vec<Diagnostic> = found.into_iter().flat_map(|f| f.diagnostics).collect();
    all.extend(catalog_wide);

    let mut out = OnLoad {
        checked,
        ran,
        ..OnLoad::default()
    };
    for mut d in super::dedupe(all) {
        if !d.is_error() {
            continue;
        }
        if d.code == "policy-timeout" {
            d.severity = Severity::Warning;
            d.message = format!(
                "{} (a warning while serving, where the machine's load counts; `regent check` says error)",
                d.message
            );
            out.warnings.push(d);
        } else {
            out.errors.push(d);
        }
    }
    out
}

impl OnLoad {
    /// `serve --skip-load-check`: the errors become warnings that say so,
    /// and the catalog serves.
    pub fn allow_errors(&mut self) {
        for mut d in self.errors.drain(..) {
            d.severity = Severity::Warning;
            d.message = format!(
                "{} (served anyway: --skip-load-check; each such call fails closed)",
                d.message
            );
            self.warnings.push(d);
        }
    }
}
