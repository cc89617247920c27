//! What a compiled `run:` is: the plan `catalog/run` builds and `exec`
//! carries out. Cases with their `when` conditions ([`RunPlan`]), a command
//! line ([`cli::CliSpec`]: program, argv template, environment) or an HTTP
//! request ([`http::HttpSpec`]: method, base, path, query, headers, body,
//! auth), placeholder templates ([`template`]) and values kept outside the
//! catalog ([`ValueFrom`]).
//!
//! These are data. Rendering a template is pure; the few things here that
//! look at the machine are the readers of what a plan names outside the
//! catalog, called when a call runs (and by `check`, to warn), never while
//! a catalog is built: [`ValueFrom::read`], [`http::Base::resolve`] and
//! [`cli::find_in_path`]. Starting a process, sending a request, the HTTP
//! client and its connection pools, and what a call's outcome was are
//! `exec`'s; parsing YAML and reporting problems at their location are
//! `source`'s and `catalog`'s.

pub mod cli;
pub mod external;
pub mod http;
pub mod template;

use serde_json::Value;

pub use cli::CliSpec;
pub use external::ValueFrom;
pub use http::HttpSpec;

/// How a tool runs: cases tried in order, the first whose conditions hold.
#[derive(Debug)]
pub struct RunPlan {
    pub cases: Vec<RunCase>,
}

#[derive(Debug)]
pub struct RunCase {
    pub when: Conditions,
    pub spec: RunSpec,
}

#[derive(Debug)]
pub enum RunSpec {
    Cli(Box<CliSpec>),
    Http(Box<HttpSpec>),
}

impl RunPlan {
    /// The specification for `args`, or `None` when no case matches.
    pub fn select(&self, args: &Value) -> Option<&RunSpec> {
        self.cases
            .iter()
            .find(|c| c.when.matches(args))
            .map(|c| &c.spec)
    }
}

/// `when` conditions, with the same meaning as in mapping rules: each
/// argument equals the value; a list means any of; `null` means absent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conditions(pub Vec<(String, Value)>);

impl Conditions {
    pub fn matches(&self, args: &Value) -> bool {
        self.0.iter().all(|(name, expected)| {
            let actual = template::lookup(args, name);
            match expected {
                Value::Null => actual.is_none(),
                Value::Array(any) => actual.is_some_and(|a| any.iter().any(|e| same(e, a))),
                e => actual.is_some_and(|a| same(e, a)),
            }
        })
    }
}

/// JSON equality where `1` and `1.0` are the same number, as in Rego.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn conditions_match_like_mapping_rules() {
        let c = Conditions(vec![
            ("action".into(), json!(["replace", "delete"])),
            ("force".into(), Value::Null),
        ]);
        assert!(c.matches(&json!({"action": "delete"})));
        assert!(c.matches(&json!({"action": "delete", "force": null})));
        assert!(!c.matches(&json!({"action": "delete", "force": true})));
        assert!(!c.matches(&json!({"action": "read"})));
        assert!(Conditions(vec![("n".into(), json!(1))]).matches(&json!({"n": 1.0})));
        assert!(Conditions::default().matches(&json!({})));
    }
}
