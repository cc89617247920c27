//! The serde model of a tool's `run:` section: how regent executes a call,
//! as written, checked for shape only.
//!
//! `run:` is either one run specification or a list of them, each with a
//! `when` (the same conditions as mapping rules; the first match runs). A
//! specification is either `cli` (an argv template, never a shell string) or
//! `http` (a request template). Checking that placeholders name declared
//! arguments, applying durations and sizes, and compiling templates is
//! `catalog::run`'s job; executing is `exec`'s.
//!
//! Several types here accept more than one YAML shape (a string or a list, a
//! string or a mapping). They are written as visitors over the YAML
//! deserializer itself rather than `#[serde(untagged)]`, so that an unknown
//! key deep inside still gets serde's precise message and yaml's location.
//! The visitors also recognise an unquoted placeholder: YAML reads
//! `- {path}` as a mapping `{path: null}`, and the message says to quote it.
//!
//! One step past shape lives here because two sections share it: where a
//! value kept outside the catalog is read from ([`External::compile`],
//! [`ValueSource::compile`]) and an `auth:` declaration as
//! `run_plan::http::Auth` ([`AuthDecl::compile`]), used by `catalog::run`
//! for `run.http.auth` and by `source::upstream` (checking) and `upstream`
//! (reading at each connection) for a `url:` upstream's `auth`. Problems come
//! back at their [`YamlPath`], for the caller to locate. So do the readers of
//! a duration and a size ([`parse_duration`], [`parse_size`]), which an
//! upstream's `timeout`, `start_timeout` and `max_output` use as well.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::YamlPath;
use crate::run_plan::ValueFrom;
use crate::run_plan::cli::absolute;
use crate::run_plan::http::{Auth, is_header_name};

/// A tool's `run:` section: one specification, or cases tried in order.
#[derive(Debug, Clone)]
pub struct Run {
    pub cases: Vec<RunCase>,
    /// Whether it was written as a list (affects YAML paths in diagnostics).
    pub is_list: bool,
}

/// One way to run the tool, chosen when `when` holds.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunCase {
    /// Argument name to the value it must equal; a list means any of;
    /// `null` means absent. Empty: always matches.
    #[serde(default)]
    pub when: Map<String, Value>,
    #[serde(default)]
    pub cli: Option<CliDecl>,
    #[serde(default)]
    pub http: Option<HttpDecl>,
}

/// `run.cli`: a program and its argv template.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CliDecl {
    /// An absolute path, a path relative to the tool file, or a name looked
    /// up in regent's `PATH`.
    pub program: String,
    #[serde(default)]
    pub args: Vec<ArgDecl>,
    /// Arguments whose values may start with `-` (they are meant as options).
    #[serde(default)]
    pub flags: Vec<String>,
    /// Working directory (template); relative paths are relative to the tool file.
    #[serde(default)]
    pub cwd: Option<Text>,
    #[serde(default)]
    pub env: Option<EnvDecl>,
    /// The argument whose value is written to the program's standard input.
    #[serde(default)]
    pub stdin: Option<String>,
    /// `30s`, `500ms`, `2m`.
    #[serde(default)]
    pub timeout: Option<Text>,
    /// `1MiB`, `64KiB`, or bytes.
    #[serde(rename = "maxOutput", default)]
    pub max_output: Option<Text>,
}

/// `run.cli.env`: what the program's environment holds. Nothing else is inherited.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct EnvDecl {
    /// Names copied from regent's own environment (replaces the default list).
    #[serde(default)]
    pub inherit: Option<Vec<String>>,
    /// Variables to set: a literal, or `{env: NAME}` / `{file: PATH}`.
    #[serde(default)]
    pub set: BTreeMap<String, ValueSource>,
}

/// One element of an argv template.
#[derive(Debug, Clone)]
pub enum ArgDecl {
    /// `"--max-count={limit}"`: literal text with placeholders; one argv
    /// element (one per item for an array argument).
    Text(String),
    /// `[--author, "{author}"]`: dropped as a whole when an argument it names is absent.
    Group(Vec<ArgDecl>),
    /// `{if: stat, then: [--stat], else: [...]}`.
    If(IfDecl),
}

#[derive(Debug, Clone)]
pub struct IfDecl {
    pub condition: Condition,
    pub then: Vec<ArgDecl>,
    pub otherwise: Vec<ArgDecl>,
}

/// The `if:` of a conditional element.
#[derive(Debug, Clone)]
pub enum Condition {
    /// Holds when the argument is present and not `false`.
    Arg(String),
    /// Holds when every entry matches, as in a mapping rule's `when`.
    When(Map<String, Value>),
}

/// `run.http`: one request template.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpDecl {
    /// `GET`, or a placeholder naming an argument whose value is the method.
    pub method: Text,
    /// Scheme, host and optional path prefix no request may leave.
    pub base: ValueSource,
    /// Appended to the base; placeholders are percent-encoded path segments.
    #[serde(default)]
    pub path: Option<Text>,
    #[serde(default)]
    pub query: BTreeMap<String, Text>,
    #[serde(default)]
    pub headers: BTreeMap<String, Text>,
    /// A JSON template: a string that is exactly `"{name}"` becomes the
    /// argument's value with its type.
    #[serde(default)]
    pub body: Option<Value>,
    #[serde(default)]
    pub auth: Option<AuthDecl>,
    #[serde(default)]
    pub timeout: Option<Text>,
    #[serde(rename = "maxResponse", default)]
    pub max_response: Option<Text>,
    /// How many redirects to follow (within the base); 0 by default.
    #[serde(default)]
    pub redirects: Option<u32>,
}

/// `run.http.auth`, and the `auth` of a `url:` upstream: exactly one of
/// the three ([`AuthDecl::compile`] says so, for both).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AuthDecl {
    #[serde(default)]
    pub bearer: Option<External>,
    #[serde(default)]
    pub basic: Option<BasicAuthDecl>,
    #[serde(default)]
    pub header: Option<HeaderAuthDecl>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BasicAuthDecl {
    pub username: ValueSource,
    pub password: External,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct HeaderAuthDecl {
    pub name: String,
    pub value: External,
}

/// A value kept outside the catalog: regent's environment or a file, read
/// at each call (files) or when the catalog loads (`base`).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct External {
    #[serde(default)]
    pub env: Option<String>,
    #[serde(default)]
    pub file: Option<String>,
    /// When the variable or file is missing, go on without the value.
    #[serde(default)]
    pub optional: bool,
    /// Used when the variable or file is missing.
    #[serde(default)]
    pub default: Option<String>,
}

/// A literal string, or an [`External`] value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueSource {
    Literal(String),
    External(External),
}

/// A string that may hold placeholders. Numbers and booleans are accepted and
/// kept as written, since YAML reads `1` and `true` as such.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text(pub String);

fn scalar_visitor_text<E: de::Error>(v: impl fmt::Display) -> Result<String, E> {
    Ok(v.to_string())
}

/// The error for `{name}` written without quotes, which YAML reads as a
/// one-key mapping whose value is null.
fn unquoted_placeholder<E: de::Error>(key: &str) -> E {
    E::custom(format!(
        "`{{{key}}}` is a YAML mapping here, not a placeholder; quote it: \"{{{key}}}\""
    ))
}

/// Reads the rest of a mapping whose first key is `first`, to tell an
/// unquoted placeholder from a genuinely wrong mapping.
fn map_as_unquoted<'de, A: MapAccess<'de>>(first: &str, mut map: A) -> Result<bool, A::Error> {
    let value: Value = map.next_value()?;
    Ok(value.is_null() && map.next_key::<String>()?.is_none() && !first.is_empty())
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text, E> {
                Ok(Text(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Text, E> {
                scalar_visitor_text(v).map(Text)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Text, E> {
                scalar_visitor_text(v).map(Text)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Text, E> {
                scalar_visitor_text(v).map(Text)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Text, E> {
                scalar_visitor_text(v).map(Text)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Text, A::Error> {
                let Some(key) = map.next_key::<String>()? else {
                    return Err(de::Error::custom(
                        "expected a string, found an empty mapping",
                    ));
                };
                if map_as_unquoted(&key, map)? {
                    return Err(unquoted_placeholder(&key));
                }
                Err(de::Error::custom("expected a string, found a mapping"))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for ValueSource {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ValueSource;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, or a mapping with `env` or `file`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ValueSource, E> {
                Ok(ValueSource::Literal(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ValueSource, E> {
                Ok(ValueSource::Literal(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ValueSource, E> {
                Ok(ValueSource::Literal(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ValueSource, E> {
                Ok(ValueSource::Literal(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<ValueSource, E> {
                Ok(ValueSource::Literal(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ValueSource, A::Error> {
                External::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(ValueSource::External)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Run {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Run;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping with `cli` or `http`, or a list of them with `when`")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Run, A::Error> {
                let case = RunCase::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Run {
                    cases: vec![case],
                    is_list: false,
                })
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Run, A::Error> {
                let cases =
                    Vec::<RunCase>::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(Run {
                    cases,
                    is_list: true,
                })
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for ArgDecl {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ArgDecl;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a string, a list (an optional group), or a mapping with `if` and `then`",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ArgDecl, E> {
                Ok(ArgDecl::Text(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<ArgDecl, E> {
                Ok(ArgDecl::Text(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<ArgDecl, E> {
                Ok(ArgDecl::Text(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<ArgDecl, E> {
                Ok(ArgDecl::Text(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<ArgDecl, E> {
                Ok(ArgDecl::Text(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ArgDecl, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<ArgDecl>()? {
                    items.push(item);
                }
                Ok(ArgDecl::Group(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ArgDecl, A::Error> {
                const KEYS: &[&str] = &["if", "then", "else"];
                let mut condition = None;
                let mut then = None;
                let mut otherwise = None;
                let mut first = true;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "if" => condition = Some(map.next_value::<Condition>()?),
                        "then" => then = Some(map.next_value::<Vec<ArgDecl>>()?),
                        "else" => otherwise = Some(map.next_value::<Vec<ArgDecl>>()?),
                        other if first => {
                            if map_as_unquoted(other, map)? {
                                return Err(unquoted_placeholder(other));
                            }
                            return Err(de::Error::unknown_field(other, KEYS));
                        }
                        other => return Err(de::Error::unknown_field(other, KEYS)),
                    }
                    first = false;
                }
                let condition = condition.ok_or_else(|| de::Error::missing_field("if"))?;
                let then = then.ok_or_else(|| de::Error::missing_field("then"))?;
                Ok(ArgDecl::If(IfDecl {
                    condition,
                    then,
                    otherwise: otherwise.unwrap_or_default(),
                }))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Condition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Condition;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an argument name, or a mapping of argument names to values")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Condition, E> {
                Ok(Condition::Arg(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Condition, A::Error> {
                Map::<String, Value>::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(Condition::When)
            }
        }
        d.deserialize_any(V)
    }
}

/// A problem with a declaration, at its path; the caller locates it in
/// the file it read.
#[derive(Debug, Clone)]
pub struct Problem {
    pub code: &'static str,
    pub at: YamlPath,
    pub message: String,
    pub help: String,
}

impl Problem {
    fn new(code: &'static str, at: YamlPath, message: String, help: &str) -> Problem {
        Problem {
            code,
            at,
            message,
            help: help.to_string(),
        }
    }
}

impl External {
    /// Where to read the value, with a relative file made absolute against
    /// `base_dir`. A `secret` may not have a `default` written in the catalog.
    pub fn compile(
        &self,
        at: &YamlPath,
        base_dir: &Path,
        secret: bool,
    ) -> Result<ValueFrom, Problem> {
        if secret && self.default.is_some() {
            return Err(Problem::new(
                "secret-default",
                at.key("default"),
                "a secret cannot have a default written in the catalog".into(),
                "remove `default`; use `optional: true` to go on without it",
            ));
        }
        match (&self.env, &self.file) {
            (Some(name), None) if !name.is_empty() && !name.contains('=') => Ok(ValueFrom::Env {
                name: name.clone(),
                optional: self.optional,
                default: self.default.clone(),
            }),
            (None, Some(path)) if !path.is_empty() => Ok(ValueFrom::File {
                path: absolute(base_dir, path),
                optional: self.optional,
                default: self.default.clone(),
            }),
            _ => Err(Problem::new(
                "bad-value-source",
                at.clone(),
                "give exactly one of `env` (a variable name) or `file` (a path)".into(),
                "for example {env: GITHUB_TOKEN} or {file: /run/secrets/token}",
            )),
        }
    }
}

impl ValueSource {
    /// A literal as it is, else as [`External::compile`] (not a secret).
    pub fn compile(&self, at: &YamlPath, base_dir: &Path) -> Result<ValueFrom, Problem> {
        match self {
            ValueSource::Literal(s) => Ok(ValueFrom::Literal(s.clone())),
            ValueSource::External(e) => e.compile(at, base_dir, false),
        }
    }
}

impl AuthDecl {
    /// The credentials to send, each read where the declaration says at
    /// each use, or every problem with the declaration (`at` is `auth`'s own
    /// path). The one check of an `auth:` for `run.http` and `url:` upstreams.
    pub fn compile(&self, at: &YamlPath, base_dir: &Path) -> Result<Auth, Vec<Problem>> {
        let count = [
            self.bearer.is_some(),
            self.basic.is_some(),
            self.header.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count();
        if count != 1 {
            return Err(vec![Problem::new(
                "bad-auth",
                at.clone(),
                "auth needs exactly one of `bearer`, `basic` or `header`".into(),
                "for example auth: {bearer: {env: API_TOKEN}}",
            )]);
        }
        if let Some(b) = &self.bearer {
            return b
                .compile(&at.key("bearer"), base_dir, true)
                .map(Auth::Bearer)
                .map_err(|p| vec![p]);
        }
        if let Some(b) = &self.basic {
            let at = at.key("basic");
            let username = b.username.compile(&at.key("username"), base_dir);
            let password = b.password.compile(&at.key("password"), base_dir, true);
            return match (username, password) {
                (Ok(username), Ok(password)) => Ok(Auth::Basic { username, password }),
                (u, p) => Err(u.err().into_iter().chain(p.err()).collect()),
            };
        }
        let h = self.header.as_ref().expect("one of the three is given");
        let at = at.key("header");
        let mut problems = Vec::new();
        if !is_header_name(&h.name) {
            problems.push(Problem::new(
                "bad-header",
                at.key("name"),
                format!("`{}` is not a valid header name", h.name),
                "use letters, digits and `-`",
            ));
        }
        match h.value.compile(&at.key("value"), base_dir, true) {
            Ok(value) if problems.is_empty() => Ok(Auth::Header {
                name: h.name.clone(),
                value,
            }),
            Ok(_) => Err(problems),
            Err(p) => {
                problems.push(p);
                Err(problems)
            }
        }
    }
}

/// `500ms`, `30s`, `2m`, `1h`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().ok()?;
    let secs = match unit.trim() {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => return None,
    };
    (secs.is_finite() && secs <= 86_400.0).then(|| Duration::from_secs_f64(secs))
}

/// `65536`, `64KiB`, `1MiB`, `1MB`.
pub fn parse_size(text: &str) -> Option<usize> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: usize = num.parse().ok()?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" | "k" => 1024,
        "kb" => 1000,
        "mib" | "m" => 1024 * 1024,
        "mb" => 1_000_000,
        "gib" | "g" => 1024 * 1024 * 1024,
        "gb" => 1_000_000_000,
        _ => return None,
    };
    n.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("3x"), None);
        assert_eq!(parse_size("1MiB"), Some(1 << 20));
        assert_eq!(parse_size("64KiB"), Some(64 << 10));
        assert_eq!(parse_size("100"), Some(100));
        assert_eq!(parse_size("1 TB"), None);
    }
}
