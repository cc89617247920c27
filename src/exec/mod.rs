//! Executing a tool call: a command line (`cli`) or an HTTP request (`http`),
//! built from templates and the call's arguments.
//!
//! This module runs what the catalog compiled and reports what happened. It
//! knows neither MCP wire types nor regorus: whether a call may run at all is
//! decided before it gets here (`catalog::resolve`), and turning an
//! [`Outcome`] into a tool result is `protocol`'s job. Nothing here ever
//! starts a shell: a command is an argv vector handed to the OS, and a value
//! is never split, globbed or quoted.

pub mod cli;
pub mod external;
pub mod http;
pub mod template;

use std::time::Duration;

use serde_json::{Value, json};

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

/// A call that was not started: an argument cannot be used as given, or
/// something the run needs (a secret, the program) is missing. The message
/// is for the caller and names the argument or setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How a started call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// The program exited with this code.
    Exited(i32),
    /// The program was killed by this signal (not by regent).
    Signaled(i32),
    /// The time limit passed; the process group was killed.
    TimedOut(Duration),
    /// The output passed the cap; the command was stopped (or the body cut).
    OutputCapped(usize),
    /// The HTTP response status, with its reason phrase.
    Http(u16, String),
    /// A redirect regent did not follow, with its target.
    Redirect(u16, String),
    /// The client went away; the process group was killed.
    Cancelled,
    /// The program could not start, or the request could not be sent.
    Failed(String),
}

impl Status {
    /// Whether the tool succeeded.
    pub fn is_success(&self) -> bool {
        match self {
            Status::Exited(code) => *code == 0,
            Status::Http(code, _) => *code < 300,
            _ => false,
        }
    }

    /// One line for the caller.
    pub fn describe(&self) -> String {
        match self {
            Status::Exited(code) => format!("the command exited with status {code}"),
            Status::Signaled(sig) => format!("the command was killed by signal {sig}"),
            Status::TimedOut(d) => format!(
                "the call took longer than its timeout of {}; regent stopped it and its child processes",
                human_duration(*d)
            ),
            Status::OutputCapped(cap) => format!(
                "the output passed the cap of {cap} bytes; regent stopped the call and kept the first {cap} bytes"
            ),
            Status::Http(code, reason) => format!("http status {code} {reason}")
                .trim_end()
                .to_string(),
            Status::Redirect(code, to) => format!(
                "http status {code}: a redirect to {to}, which regent did not follow (see `redirects` in the tool's run.http)"
            ),
            Status::Cancelled => "the call was cancelled by the client".to_string(),
            Status::Failed(why) => why.clone(),
        }
    }

    /// The status as the decision log records it.
    pub fn to_json(&self) -> Value {
        match self {
            Status::Exited(code) => json!({"exitCode": code}),
            Status::Signaled(sig) => json!({"signal": sig}),
            Status::TimedOut(d) => json!({"timedOut": true, "timeoutMs": d.as_millis() as u64}),
            Status::OutputCapped(cap) => json!({"outputCapped": cap}),
            Status::Http(code, _) => json!({"httpStatus": code}),
            Status::Redirect(code, _) => json!({"httpStatus": code, "redirectNotFollowed": true}),
            Status::Cancelled => json!({"cancelled": true}),
            Status::Failed(why) => json!({"failed": why}),
        }
    }
}

/// What a started call produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub status: Status,
    /// Standard output, or the response body; at most the cap.
    pub output: Vec<u8>,
    /// The tail of standard error, or of the body of a failed request.
    pub error_tail: String,
    /// The response's content type (HTTP only).
    pub content_type: Option<String>,
    pub duration: Duration,
}

/// Bytes kept from the end of standard error (or a failed body) for messages.
pub const TAIL: usize = 4096;

/// The last `max` bytes of `bytes` as text, starting at a character boundary.
pub fn tail_text(bytes: &[u8], max: usize) -> String {
    let start = bytes.len().saturating_sub(max);
    let text = String::from_utf8_lossy(&bytes[start..]);
    if start > 0 {
        format!("…{}", text.trim_start_matches('\u{FFFD}'))
    } else {
        text.into_owned()
    }
}

/// `30s`, `250ms`, `2m`.
pub fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(60_000) && ms > 0 {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn tails_are_bounded() {
        assert_eq!(tail_text(b"abc", 10), "abc");
        assert_eq!(tail_text(b"abcdef", 3), "…def");
    }
}
