//! One decision as the request path records it: an [`Entry`] of raw parts
//! (no digest, no JSON: the writer thread makes those), its [`Kind`],
//! [`Phase`] and [`Verdict`], and a shadow policy's [`ShadowEntry`]. Writing
//! it as a line is `line`'s business, cutting it down `cut`'s.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::new_id;
use crate::caller::Caller;

/// Which request decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Resolve,
    Call,
    /// A request an upstream sent during a forwarded call (its `method`:
    /// `elicitation/create`, `roots/list`, `sampling/createMessage`),
    /// decided by the tool's `upstream_request` rule or its default; the
    /// line carries the call's id, and `allowed` means relayed.
    UpstreamRequest,
}

/// Where a call's line stands relative to what the call does. A call that
/// runs something writes an `intent` line (the decision, before anything
/// runs) and an `outcome` line (the same decision with how it ended), with
/// one id; every other decision is one line without a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Intent,
    Outcome,
}

/// The decision itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    Denied(Vec<String>),
    /// The decision could not be made (invalid arguments, a failing policy);
    /// nothing ran.
    Error(String),
}

/// One decision, and for calls what followed it.
///
/// Built on the request path, so it holds the raw parts: the digest, the id
/// of a resolve line and the JSON are made by the writer thread.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Calls carry their id in the result, so it is made with the entry;
    /// `None` (resolve lines, whose answers carry no id) gets a fresh one
    /// when the line is written.
    pub id: Option<String>,
    pub kind: Kind,
    /// `intent` or `outcome` for a call that runs something (see [`Phase`]).
    pub phase: Option<Phase>,
    /// The JSON-RPC method: `tools/resolve`, `tools/annotations`,
    /// `tools/call`; for [`Kind::UpstreamRequest`], the upstream's method.
    pub method: &'static str,
    pub tool: String,
    /// Who asked, when a transport verified it (HTTP with a JWT): the line
    /// records its subject and issuer, never the token or its other claims.
    pub caller: Option<Arc<Caller>>,
    pub arguments: Value,
    /// The request's text, when it spelled numbers otherwise than regent
    /// writes them (`policy::spelled` keeps it then): with
    /// `--log-arguments`, the line writes the arguments' numbers from it,
    /// as the client spelled them (`sent`).
    pub sent: Option<Arc<[u8]>>,
    /// The resolved annotations, when resolution succeeded.
    pub annotations: Option<Map<String, Value>>,
    pub verdict: Verdict,
    pub revision: String,
    /// Calls only: why an allowed call did not start (an argument refused by
    /// the command-line rules, a missing secret).
    pub refused: Option<String>,
    /// Calls only, refused for scope (`serve --enforce-scopes`):
    /// `{"scopes": [all the call needs], "missing": [...]}`, the line's
    /// `insufficientScope`.
    pub insufficient_scope: Option<Value>,
    /// Calls only: how execution ended (see `exec::Status::to_json`).
    pub outcome: Option<Value>,
    pub duration: Option<Duration>,
    /// The question the decision asks the user before a call runs.
    pub confirm: Option<String>,
    /// How long the catalog took to decide (`Catalog::resolve_as`: the
    /// tool's plan evaluated and layered), when it decided.
    pub eval: Option<Duration>,
    /// The tool's shadow policy's decision, when it declares one and the
    /// request got as far as a decision.
    pub shadow: Option<ShadowEntry>,
}

/// A shadow policy's decision for the same request: computed, logged,
/// never acted on (see `Catalog::shadow_as`). Its line member is
/// `shadow: {policy, result, agrees, metrics?}`: `result` has the shape
/// of OPA's `result` (`{allowed, deny, annotations, confirm}`, or
/// `{allowed: false, error}` when the shadow policy failed or timed out),
/// `agrees` whether it equals the enforced `result`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShadowEntry {
    /// The shadow package.
    pub policy: String,
    pub verdict: Verdict,
    pub annotations: Option<Map<String, Value>>,
    pub confirm: Option<String>,
    /// How long the shadow decision took.
    pub eval: Option<Duration>,
}

impl Entry {
    /// A call entry has its id from the start; a resolve entry gets one
    /// when written.
    pub fn new(
        kind: Kind,
        method: &'static str,
        tool: &str,
        arguments: Value,
        revision: &str,
    ) -> Entry {
        Entry {
            id: (kind == Kind::Call).then(new_id),
            kind,
            phase: None,
            method,
            tool: tool.to_string(),
            caller: None,
            arguments,
            sent: None,
            annotations: None,
            verdict: Verdict::Error("undecided".into()),
            revision: revision.to_string(),
            refused: None,
            insufficient_scope: None,
            outcome: None,
            duration: None,
            confirm: None,
            eval: None,
            shadow: None,
        }
    }

    /// The id the line carries (fresh for a resolve entry).
    pub fn id(&self) -> String {
        self.id.clone().unwrap_or_else(new_id)
    }
}
