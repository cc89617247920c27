//! The serde model of a tool file: what a person may write, checked for shape only.
//!
//! Every struct denies unknown fields, so a misspelt key is an error with a
//! location rather than a silently ignored setting. Nothing here knows Rego,
//! JSON Schema semantics or MCP: turning this model into something that can
//! answer requests is `catalog`'s job. Keys mirror MCP's Tool where a key
//! exists there (`inputSchema`, `annotations`, `securitySchemes`).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

pub use super::run::Run;

/// `caller:` in a tool file: what a verified caller's claims look like.
/// A caller whose claims do not match is refused every decision.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallerDecl {
    /// A JSON Schema of the claims object (`input.caller.claims`).
    pub claims: Value,
}

/// One tool, as declared.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDecl {
    pub name: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
    #[serde(rename = "outputSchema", default)]
    pub output_schema: Option<Value>,
    /// The worst case across every call; what `tools/list` shows.
    #[serde(default)]
    pub annotations: Option<StaticAnnotations>,
    /// Merged into the tool's `_meta` in `tools/list`.
    #[serde(default)]
    pub meta: Option<Map<String, Value>>,
    #[serde(rename = "securitySchemes", default)]
    pub security_schemes: Option<Vec<Value>>,
    /// YAML mapping rules: the first whose `when` matches applies.
    #[serde(default)]
    pub resolve: Vec<MappingRule>,
    /// A Rego package (`tools.manage_files`) with the logic YAML can't express.
    #[serde(default)]
    pub policy: Option<String>,
    /// A Rego package evaluated beside `policy` on every request, in log-only
    /// mode: its decision is written to the decision log and never changes an
    /// answer or blocks a call (see docs/policy-tooling.md, "Shadow policies").
    #[serde(default)]
    pub shadow_policy: Option<String>,
    /// How `tools/call` executes the tool (see `source::run`). Without it the
    /// tool can be listed and resolved but not called.
    #[serde(default)]
    pub run: Option<Run>,
    /// Parameters the server fills instead of the model (see `source::resolvers`).
    #[serde(default)]
    pub resolvers: super::resolvers::Resolvers,
    /// Arguments that name files under a root, by argument name: each is
    /// canonicalized against the file system before the decision (see
    /// `fence`).
    #[serde(default)]
    pub paths: BTreeMap<String, PathDecl>,
    /// Set on a tool imported from an upstream MCP server (never written in
    /// YAML): `tools/call` forwards to it.
    #[serde(skip)]
    pub upstream: Option<UpstreamRef>,
}

/// Which upstream tool a catalog tool forwards its calls to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamRef {
    pub upstream: String,
    /// The tool's name on the upstream.
    pub tool: String,
}

/// One fenced path argument, as declared (`paths: {path: {root: /srv}}`).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PathDecl {
    /// The directory the argument's paths must stay under, absolute.
    pub root: String,
}

/// The four MCP hints plus the display title MCP keeps beside them.
/// (Spelt out rather than flattened: serde cannot deny unknown fields through
/// `flatten`.)
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct StaticAnnotations {
    #[serde(default)]
    pub title: Option<String>,
    #[serde(rename = "readOnlyHint", default)]
    pub read_only: Option<bool>,
    #[serde(rename = "destructiveHint", default)]
    pub destructive: Option<bool>,
    #[serde(rename = "idempotentHint", default)]
    pub idempotent: Option<bool>,
    #[serde(rename = "openWorldHint", default)]
    pub open_world: Option<bool>,
}

impl StaticAnnotations {
    pub fn hints(&self) -> HintValues {
        HintValues {
            read_only: self.read_only,
            destructive: self.destructive,
            idempotent: self.idempotent,
            open_world: self.open_world,
        }
    }
}

/// Hint values as written; `None` means "not said here".
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct HintValues {
    #[serde(rename = "readOnlyHint", default)]
    pub read_only: Option<bool>,
    #[serde(rename = "destructiveHint", default)]
    pub destructive: Option<bool>,
    #[serde(rename = "idempotentHint", default)]
    pub idempotent: Option<bool>,
    #[serde(rename = "openWorldHint", default)]
    pub open_world: Option<bool>,
}

/// One YAML mapping rule: when every condition holds, its outputs apply.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MappingRule {
    /// Argument name to the value it must equal; a list means any of.
    /// An empty `when` always matches, which makes a catch-all last rule.
    #[serde(default)]
    pub when: Map<String, Value>,
    #[serde(default)]
    pub annotations: Option<HintValues>,
    #[serde(default)]
    pub meta: Option<Map<String, Value>>,
    #[serde(rename = "securitySchemes", default)]
    pub security_schemes: Option<Vec<Value>>,
    /// Reasons to refuse the call when this rule matches (one string or a list).
    #[serde(default)]
    pub deny: Reasons,
    /// A question put to the user before the call runs (see docs/elicitation.md).
    #[serde(default)]
    pub confirm: Option<String>,
}

/// One reason or a list of them, as `deny:` accepts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reasons(pub Vec<String>);

impl<'de> Deserialize<'de> for Reasons {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // A visitor rather than `untagged`, so a wrong shape is reported at
        // the `deny` key itself.
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Reasons;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a reason (a string) or a list of reasons")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Reasons, E> {
                Ok(Reasons(vec![v.to_string()]))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Reasons, A::Error> {
                Vec::<String>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))
                    .map(Reasons)
            }
        }
        d.deserialize_any(V)
    }
}

/// The names every tool key may take, for "did you mean" suggestions.
pub const TOOL_KEYS: &[&str] = &[
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "meta",
    "securitySchemes",
    "resolve",
    "policy",
    "shadow_policy",
    "run",
    "resolvers",
];
