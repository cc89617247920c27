//! Executing a tool call: a command line (`cli`) or an HTTP request (`http`),
//! built from templates and the call's arguments.
//!
//! This module runs what the catalog compiled (a `run_plan::RunPlan`'s
//! selected `RunSpec`) and reports what happened. It
//! knows neither MCP wire types nor regorus: whether a call may run at all is
//! decided before it gets here (`catalog::resolve`), and turning an
//! [`Outcome`] into a tool result is `protocol`'s job. Nothing here ever
//! starts a shell: a command is an argv vector handed to the OS, and a value
//! is never split, globbed or quoted.

pub mod cli;
pub mod http;

use std::time::Duration;

use crate::timestamp::human_duration;

use serde_json::{Value, json};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_are_bounded() {
        assert_eq!(tail_text(b"abc", 10), "abc");
        assert_eq!(tail_text(b"abcdef", 3), "…def");
    }
}
