//! Filling the parameters a tool's resolvers provide, for one call.
//!
//! One pass over the resolvers in dependency order (the catalog sorted
//! them): environment variables and files are read, policy rules evaluated,
//! and questions for the client (the user's answer, the client's roots) are
//! either answered from `replies` (given in an earlier round) or collected.
//! A resolver whose dependency is still unanswered waits for a later round.
//! The caller puts the questions on the wire, in whichever protocol era, and
//! calls again with the replies; this module knows nothing of MCP's types,
//! only of the neutral [`Question`] and [`Reply`].
//!
//! Fail closed: a value that cannot be had (a missing variable, a declined
//! question, an undefined rule) refuses the call, and a failing policy is an
//! error; a tool never runs with a parameter missing.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::catalog::resolvers::{Resolver, Source};
use crate::catalog::{ResolveError, Tool};
use crate::source::resolvers::RootsDecl;

/// The key of the one `roots/list` question, whichever resolvers need it.
pub const ROOTS_KEY: &str = "regent/roots";

/// The key of the question that fills `param`.
pub fn elicit_key(param: &str) -> String {
    format!("regent/elicit/{param}")
}

/// Something only the client can answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Question {
    /// Ask the user: `schema` is the requested schema.
    Elicit {
        key: String,
        message: String,
        schema: Value,
    },
    /// The client's roots.
    Roots { key: String },
}

impl Question {
    pub fn key(&self) -> &str {
        match self {
            Question::Elicit { key, .. } | Question::Roots { key } => key,
        }
    }
}

/// What the user did with a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Accept,
    Decline,
    Cancel,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Accept => "accept",
            Action::Decline => "decline",
            Action::Cancel => "cancel",
        }
    }
}

/// The client's answer to a [`Question`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Reply {
    Elicit {
        action: Action,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<Value>,
    },
    Roots {
        uris: Vec<String>,
    },
}

/// Replies by question key.
pub type Replies = BTreeMap<String, Reply>;

/// Whether questions may be asked: a call may; a `tools/resolve` preflight
/// fills only what the server can get by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Call,
    Preflight,
}

/// The outcome of one pass.
#[derive(Debug)]
pub enum Fill {
    /// The arguments with every parameter the pass could fill (in `Call`
    /// mode: all of them, checked against the whole input schema).
    Done(Value),
    /// Questions for the client; call again with the replies.
    Ask(Vec<Question>),
    /// The call must not run; the sentence says why.
    Refused(String),
}

/// The first argument the client sent for a parameter the server fills.
/// The model must not choose those values, so such a call is refused
/// rather than silently overridden.
pub fn supplied_by_client<'t>(tool: &'t Tool, args: &Value) -> Option<&'t Resolver> {
    let obj = args.as_object()?;
    tool.resolvers.iter().find(|r| obj.contains_key(&r.param))
}

/// Fills `tool`'s resolved parameters into `args`.
pub fn fill(
    tool: &Tool,
    args: &Value,
    replies: &Replies,
    mode: Mode,
) -> Result<Fill, ResolveError> {
    let mut values: Map<String, Value> = args.as_object().cloned().unwrap_or_default();
    if tool.resolvers.is_empty() {
        return Ok(Fill::Done(Value::Object(values)));
    }
    let mut pending: BTreeSet<&str> = BTreeSet::new();
    let mut questions: Vec<Question> = Vec::new();
    for r in &tool.resolvers {
        if r.needs.iter().any(|n| pending.contains(n.as_str())) {
            pending.insert(&r.param);
            continue;
        }
        let value = match &r.source {
            Source::Env(var) => match std::env::var(var) {
                Ok(text) => coerce(r, text),
                Err(std::env::VarError::NotPresent) => Err(format!(
                    "`{}` comes from the environment variable {var}, which is not set on the server",
                    r.param
                )),
                Err(std::env::VarError::NotUnicode(_)) => Err(format!(
                    "`{}` comes from the environment variable {var}, which is not valid utf-8",
                    r.param
                )),
            },
            Source::File(path) => match std::fs::read_to_string(path) {
                Ok(mut text) => {
                    if text.ends_with('\n') {
                        text.pop();
                        if text.ends_with('\r') {
                            text.pop();
                        }
                    }
                    coerce(r, text)
                }
                Err(e) => Err(format!(
                    "`{}` comes from the file {}, which cannot be read: {}",
                    r.param,
                    path.display(),
                    crate::diag::lower_io(&e)
                )),
            },
            Source::Policy { rule, step } => {
                let Some(step) = step else {
                    return Err(policy_error(
                        tool,
                        format!("resolver rule {rule} was not prepared"),
                    ));
                };
                match tool.eval_resolver(step, &Value::Object(values.clone())) {
                    Err(e) => {
                        return Err(ResolveError::Policy {
                            tool: tool.name.clone(),
                            message: format!("resolver of `{}`: {}", r.param, e.message),
                            location: e.location.map(|l| l.to_string()),
                        });
                    }
                    Ok(None) => Err(format!(
                        "policy rule {rule} gives no value for `{}` with these arguments",
                        r.param
                    )),
                    Ok(Some(v)) => Ok(v),
                }
            }
            Source::Elicit(e) => {
                let key = elicit_key(&r.param);
                match replies.get(&key) {
                    Some(Reply::Elicit {
                        action: Action::Accept,
                        content,
                    }) => {
                        let content = content.clone().unwrap_or(Value::Object(Map::new()));
                        let problems = e.validate(&content);
                        if !problems.is_empty() {
                            Err(format!(
                                "the answer for `{}` does not match the question's schema: {}",
                                r.param,
                                describe(&problems)
                            ))
                        } else if e.whole {
                            Ok(content)
                        } else {
                            content.get(&r.param).cloned().ok_or_else(|| {
                                format!("the answer for `{}` does not contain it", r.param)
                            })
                        }
                    }
                    Some(Reply::Elicit { action, .. }) => Err(format!(
                        "the user was asked for `{}` and answered {}",
                        r.param,
                        action.as_str()
                    )),
                    Some(Reply::Roots { .. }) => Err(format!(
                        "the answer for `{}` is not an elicitation result",
                        r.param
                    )),
                    None => {
                        pending.insert(&r.param);
                        if mode == Mode::Call {
                            questions.push(Question::Elicit {
                                key,
                                message: render(&e.message, &values),
                                schema: e.requested.clone(),
                            });
                        }
                        continue;
                    }
                }
            }
            Source::Roots(which) => match replies.get(ROOTS_KEY) {
                Some(Reply::Roots { uris }) => roots_value(&r.param, *which, uris),
                Some(Reply::Elicit { .. }) => {
                    Err("the answer for the client's roots is not a roots list".to_string())
                }
                None => {
                    pending.insert(&r.param);
                    if mode == Mode::Call && !questions.iter().any(|q| q.key() == ROOTS_KEY) {
                        questions.push(Question::Roots {
                            key: ROOTS_KEY.to_string(),
                        });
                    }
                    continue;
                }
            },
        };
        let value = match value {
            Ok(v) => v,
            // A preflight only reports; the call will refuse.
            Err(_) if mode == Mode::Preflight => {
                pending.insert(&r.param);
                continue;
            }
            Err(why) => return Ok(Fill::Refused(why)),
        };
        let problems = r.validate(&value);
        if !problems.is_empty() && mode == Mode::Preflight {
            pending.insert(&r.param);
            continue;
        }
        if !problems.is_empty() {
            return Ok(Fill::Refused(format!(
                "`{}` from {} does not match its schema: {}",
                r.param,
                r.describe(),
                describe(&problems)
            )));
        }
        values.insert(r.param.clone(), value);
    }
    if !questions.is_empty() {
        return Ok(Fill::Ask(questions));
    }
    let filled = Value::Object(values);
    if mode == Mode::Call {
        let errors = tool.validate_complete(&filled);
        if !errors.is_empty() {
            return Err(ResolveError::InvalidArguments {
                tool: tool.name.clone(),
                errors,
            });
        }
    }
    Ok(Fill::Done(filled))
}

fn policy_error(tool: &Tool, message: String) -> ResolveError {
    ResolveError::Policy {
        tool: tool.name.clone(),
        message,
        location: None,
    }
}

/// A value from the environment or a file: text for a string parameter,
/// JSON for any other.
fn coerce(r: &Resolver, text: String) -> Result<Value, String> {
    if r.is_text {
        return Ok(Value::String(text));
    }
    serde_json::from_str(text.trim()).map_err(|e| {
        format!(
            "`{}` from {} is not json ({e}), and its schema is not a string",
            r.param,
            r.describe()
        )
    })
}

fn describe(problems: &[crate::catalog::ArgError]) -> String {
    problems
        .iter()
        .take(3)
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The message with each `{name}` replaced by that argument: strings as
/// they are, other values as JSON, an absent one as nothing.
fn render(t: &crate::run_plan::template::Template, values: &Map<String, Value>) -> String {
    use crate::run_plan::template::Part;
    let mut out = String::new();
    for p in &t.parts {
        match p {
            Part::Literal(s) => out.push_str(s),
            Part::Arg { name, .. } => match values.get(name) {
                Some(Value::String(s)) => out.push_str(s),
                Some(Value::Null) | None => {}
                Some(v) => out.push_str(&v.to_string()),
            },
        }
    }
    out
}

/// The parameter's value from the client's root URIs.
fn roots_value(param: &str, which: RootsDecl, uris: &[String]) -> Result<Value, String> {
    let paths: Vec<String> = uris.iter().filter_map(|u| file_uri_path(u)).collect();
    match which {
        RootsDecl::First => paths.into_iter().next().map(Value::String).ok_or_else(|| {
            format!(
                "`{param}` comes from the client's roots, and the client shares no file:// root"
            )
        }),
        RootsDecl::All => Ok(Value::Array(paths.into_iter().map(Value::String).collect())),
    }
}

/// The local path of a `file://` URI (`file:///home/a%20b` -> `/home/a b`);
/// `None` for other schemes, remote hosts, malformed escapes and paths that
/// are not UTF-8 or hold a NUL byte. Parsing is the `url` crate's (WHATWG
/// URL: `localhost` is the local host, `.` and `..` segments are resolved).
pub fn file_uri_path(uri: &str) -> Option<String> {
    let url = url::Url::parse(uri).ok()?;
    if url.scheme() != "file" || !valid_escapes(url.path()) {
        return None;
    }
    let path = url
        .to_file_path()
        .ok()?
        .into_os_string()
        .into_string()
        .ok()?;
    if path.contains('\0') {
        return None;
    }
    // A trailing slash names the same directory; keep paths comparable.
    Some(if path.len() > 1 {
        path.trim_end_matches('/').to_string()
    } else {
        path
    })
}

/// Whether every `%` starts a two-digit hex escape: `url` keeps a stray `%`
/// as a literal one, a client's root with one is refused instead.
fn valid_escapes(path: &str) -> bool {
    let b = path.as_bytes();
    b.iter().enumerate().all(|(i, &c)| {
        c != b'%'
            || b.get(i + 1..i + 3)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_become_paths() {
        assert_eq!(
            file_uri_path("file:///home/a%20b/").as_deref(),
            Some("/home/a b")
        );
        assert_eq!(
            file_uri_path("file://localhost/srv").as_deref(),
            Some("/srv")
        );
        assert_eq!(file_uri_path("file:///").as_deref(), Some("/"));
        assert_eq!(file_uri_path("file://host/srv"), None);
        assert_eq!(file_uri_path("https://example.com/x"), None);
        assert_eq!(file_uri_path("file:///bad%zz"), None);
        assert_eq!(file_uri_path("file:///bad%2"), None);
        assert_eq!(file_uri_path("file:///nul%00x"), None);
        assert_eq!(file_uri_path("file:///x%FF"), None);
        assert_eq!(file_uri_path("file://localhost"), Some("/".to_string()));
        assert_eq!(file_uri_path("file://192.168.0.1/srv"), None);
        assert_eq!(file_uri_path("unix:/srv"), None);
        assert_eq!(file_uri_path("/srv"), None);
        assert_eq!(file_uri_path("file:/srv").as_deref(), Some("/srv"));
        assert_eq!(file_uri_path("FILE:///srv").as_deref(), Some("/srv"));
        assert_eq!(
            file_uri_path("file:///srv/a/../b%2Fc").as_deref(),
            Some("/srv/b/c")
        );
    }

    #[test]
    fn replies_round_trip_as_json() {
        let r = Reply::Elicit {
            action: Action::Accept,
            content: Some(serde_json::json!({"x": 1})),
        };
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(
            text,
            r#"{"kind":"elicit","action":"accept","content":{"x":1}}"#
        );
        assert_eq!(serde_json::from_str::<Reply>(&text).unwrap(), r);
    }
}
