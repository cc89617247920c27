//! Whether a request an upstream sends during a forwarded call (an
//! elicitation, `roots/list`, a sampling request) may reach the calling
//! client: each tool's `upstream_request` rule, and the defaults without one.
//!
//! The rule is evaluated with input `{"tool", "arguments", "caller"?,
//! "request": {"method", "params"}}`: the call's tool and its decided
//! arguments, the verified caller, and the upstream's request as it sent it
//! (neutral JSON: this module knows no MCP type; `protocol` and `upstream`
//! map the wire). It answers `"relay"` or `"refuse"`. Undefined (a package
//! without the rule, or none of its definitions holding) takes the default:
//! relay `elicitation/create` and `roots/list`, refuse everything else
//! (`sampling/createMessage` above all: a model call paid for and steered
//! by the upstream). Anything else it answers, and an evaluation error or
//! timeout, refuses (fail closed) and says why.
//!
//! Like `visible` (`catalog::visibility`), the rule is outside the tool's
//! resolution plan: it decides a different question, on a different input,
//! at a different time. What the decision leads to (the decision-log line,
//! the error the upstream gets) is `protocol`'s.

use serde_json::Value;

use super::Tool;
use crate::caller::Caller;
use crate::policy::engine as policy;

/// The methods relayed when the tool's package has no `upstream_request`
/// rule (or it is undefined for the request).
pub const RELAYED_BY_DEFAULT: &[&str] = &["elicitation/create", "roots/list"];

/// What became of one upstream request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestDecision {
    /// Relay it to the client; `by_policy`: the rule said so (else the default).
    Relay { by_policy: bool },
    /// Refuse it; `by_policy`: the rule said so (else the default).
    Refuse { by_policy: bool },
    /// The rule failed or answered something else: refused, and why.
    Failed(String),
}

impl RequestDecision {
    pub fn relays(&self) -> bool {
        matches!(self, RequestDecision::Relay { .. })
    }
}

impl Tool {
    /// Decides an upstream's request `method` (with `params`) made during a
    /// call of this tool with `args` by `caller`.
    pub fn upstream_request(
        &self,
        args: &Value,
        caller: Option<&Caller>,
        method: &str,
        params: &Value,
    ) -> RequestDecision {
        let default = || {
            if RELAYED_BY_DEFAULT.contains(&method) {
                RequestDecision::Relay { by_policy: false }
            } else {
                RequestDecision::Refuse { by_policy: false }
            }
        };
        let (Some(step), Some(engines)) = (&self.upstream_request, &self.engines) else {
            return default();
        };
        let pkg = self.policy.as_deref().unwrap_or("");
        let input = policy::upstream_request_input(&self.name, args, caller, method, params);
        match engines.eval([step], input) {
            Ok(mut values) => match values.pop().flatten() {
                None => default(),
                Some(Value::String(s)) if s == "relay" => {
                    RequestDecision::Relay { by_policy: true }
                }
                Some(Value::String(s)) if s == "refuse" => {
                    RequestDecision::Refuse { by_policy: true }
                }
                Some(other) => RequestDecision::Failed(format!(
                    "rule {pkg}.upstream_request must be \"relay\" or \"refuse\", got {}",
                    match &other {
                        Value::String(s) => format!("\"{s}\""),
                        v => crate::diag::json_kind(v).to_string(),
                    }
                )),
            },
            Err(e) => RequestDecision::Failed(match &e.location {
                Some(l) => format!("{} (at {l})", e.message),
                None => e.message,
            }),
        }
    }

    /// Whether the package declares an `upstream_request` rule.
    pub fn has_upstream_request_rule(&self) -> bool {
        self.upstream_request.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use serde_json::json;

    /// A catalog with tool `a` (policy `p` when `rego` is given, an
    /// argument `n`) and tool `b` (no policy).
    fn catalog(rego: Option<&str>) -> Catalog {
        crate::catalog::two_tool_catalog("{type: object, properties: {n: {type: integer}}}", rego)
    }

    fn decide(
        c: &Catalog,
        tool: &str,
        args: Value,
        method: &str,
        params: Value,
    ) -> RequestDecision {
        c.tool_as(tool, None)
            .unwrap()
            .upstream_request(&args, None, method, &params)
    }

    #[test]
    fn without_a_rule_elicitation_and_roots_are_relayed_and_the_rest_refused() {
        let c = catalog(Some("deny contains \"no\" if input.arguments.n == 0"));
        for tool in ["a", "b"] {
            assert!(!c.tool_as(tool, None).unwrap().has_upstream_request_rule());
            for (method, relays) in [
                ("elicitation/create", true),
                ("roots/list", true),
                ("sampling/createMessage", false),
                ("something/else", false),
            ] {
                let d = decide(&c, tool, json!({}), method, json!({}));
                assert_eq!(d.relays(), relays, "{tool} {method}: {d:?}");
                assert!(!matches!(d, RequestDecision::Failed(_)));
            }
        }
    }

    #[test]
    fn the_rule_decides_on_the_call_and_the_request_and_undefined_is_the_default() {
        let c = catalog(Some(
            "upstream_request := \"relay\" if {\n\tinput.request.method == \"sampling/createMessage\"\n\tinput.arguments.n > 1\n}\n\n\
             upstream_request := \"refuse\" if input.request.params.mode == \"url\"",
        ));
        assert!(c.tool_as("a", None).unwrap().has_upstream_request_rule());
        let sample = "sampling/createMessage";
        assert_eq!(
            decide(&c, "a", json!({"n": 2}), sample, json!({})),
            RequestDecision::Relay { by_policy: true }
        );
        assert_eq!(
            decide(&c, "a", json!({"n": 1}), sample, json!({})),
            RequestDecision::Refuse { by_policy: false }
        );
        let elicit = "elicitation/create";
        assert_eq!(
            decide(&c, "a", json!({}), elicit, json!({"mode": "url"})),
            RequestDecision::Refuse { by_policy: true }
        );
        assert_eq!(
            decide(&c, "a", json!({}), elicit, json!({"mode": "form"})),
            RequestDecision::Relay { by_policy: false }
        );
    }

    #[test]
    fn any_other_answer_or_a_failure_refuses() {
        let c = catalog(Some("upstream_request := \"yes\""));
        let d = decide(&c, "a", json!({}), "roots/list", json!({}));
        assert!(
            matches!(&d, RequestDecision::Failed(m) if m.contains("must be \"relay\" or \"refuse\", got \"yes\"")),
            "{d:?}"
        );
        assert!(!d.relays());
        // Two definitions disagreeing on this request: an evaluation error.
        let c = catalog(Some(
            "upstream_request := \"relay\" if input.request.method == \"roots/list\"\n\n\
             upstream_request := \"refuse\" if input.arguments.n == 3",
        ));
        let d = decide(&c, "a", json!({"n": 3}), "roots/list", json!({}));
        assert!(matches!(d, RequestDecision::Failed(_)), "{d:?}");
        assert_eq!(
            decide(&c, "a", json!({"n": 2}), "roots/list", json!({})),
            RequestDecision::Relay { by_policy: true }
        );
    }
}
