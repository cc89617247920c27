//! The `*.test.yaml` case format and how one case is judged.
//!
//! ```yaml
//! defaults:                                # optional: for every case that
//!   caller: {subject: alice}               # gives no `caller`, and arguments
//!   arguments: {path: notes.txt}           # under each case's (its keys win)
//! cases:
//!   - name: reading is read-only          # optional
//!     tool: manage_files
//!     arguments: {path: notes.txt, action: read}
//!     caller:                              # optional: input.caller, as a verified
//!       subject: alice                     # token or --caller-file would give it
//!       issuer: https://idp.example.com    # optional, default "local"
//!       claims: {groups: [oncall]}         # optional; sub and iss added
//!     shadow: true                         # optional: judge the tool's shadow_policy
//!                                          # (in place of its policy), not the enforced one
//!     expect:
//!       annotations: {readOnlyHint: true}  # only the keys given are compared
//!       meta: {...}                        # likewise, against the resolved _meta
//!       securitySchemes: [...]             # the resolved securitySchemes, exactly
//!       deny: [...]                        # the resolution's deny list, in any order
//!       confirm: "Delete notes.txt?"      # the question a call would ask; `true`:
//!                                          # any question; `false`: none
//!       error: "invalid arguments"         # resolution fails; message contains this
//!       upstream_request: refuse           # with `request:` below: relay or refuse
//!     request:                             # optional: an upstream's request during
//!       method: sampling/createMessage     # the call (`upstream_request`'s input)
//!       params: {maxTokens: 10}            # optional, default {}
//! ```
//!
//! A case resolves its tool exactly as `tools/resolve` does (the same
//! function answers both) and compares what it got with what it expects.
//! Its numbers are those the file spells (`n: 1.50` is what `{"n": 1.50}`
//! is in a request, `testing::numbers`), evaluated as `serve` evaluates a
//! request's spelled by hand (`policy::spelled`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::caller::{Caller, CallerDocument};
use crate::catalog::Catalog;
use crate::diag::{Diagnostic, Location};
use crate::policy::spelled::{self, Spelled};
use crate::source::{YamlPath, yaml_error};

/// One `*.test.yaml` file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    #[serde(default)]
    pub defaults: Option<Defaults>,
    pub cases: Vec<Case>,
}

/// A file's `defaults`: what every case that does not set its own gets.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    /// The caller of every case without `caller`.
    #[serde(default)]
    pub caller: Option<CallerDocument>,
    /// Merged shallowly under each case's `arguments`: a case's keys
    /// replace these, the others are added.
    #[serde(default, deserialize_with = "crate::json_value::map")]
    pub arguments: Map<String, Value>,
}

impl Defaults {
    /// `case` with the defaults it does not set itself.
    fn apply(&self, mut case: Case) -> Case {
        if case.caller.is_none() {
            case.caller.clone_from(&self.caller);
        }
        if !self.arguments.is_empty() {
            let own = std::mem::replace(&mut case.arguments, self.arguments.clone());
            case.arguments.extend(own);
        }
        case
    }
}

/// One case.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    #[serde(default)]
    pub name: Option<String>,
    pub tool: String,
    #[serde(default, deserialize_with = "crate::json_value::map")]
    pub arguments: Map<String, Value>,
    /// Who asks (`input.caller`); absent when not given.
    #[serde(default)]
    pub caller: Option<CallerDocument>,
    /// Whether the case judges the tool's `shadow_policy` decision (what it
    /// would answer in place of the enforced policy) rather than the
    /// enforced one.
    #[serde(default)]
    pub shadow: bool,
    /// An upstream's request during the call, for `expect.upstream_request`.
    #[serde(default)]
    pub request: Option<RequestCase>,
    pub expect: Expect,
    /// The numbers of `arguments` the file spells otherwise than regent
    /// writes them (`1.50`, `2E0`), found by [`parse`] (`testing::numbers`):
    /// the case is evaluated with them as `serve` evaluates a request
    /// spelling them (`policy::spelled`).
    #[serde(skip)]
    pub spelled: Option<Arc<Spelled>>,
    /// `arguments` as JSON text with its numbers as the file spells them,
    /// for the report of a failing case; none when `spelled` is none
    /// (regent's own text is then the file's).
    #[serde(skip)]
    pub sent: Option<String>,
}

/// A case's `request`: what an upstream sends during the call.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestCase {
    pub method: String,
    #[serde(
        default = "empty_object",
        deserialize_with = "crate::json_value::value"
    )]
    pub params: Value,
}

fn empty_object() -> Value {
    json!({})
}

/// `expect.upstream_request`.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RequestExpect {
    Relay,
    Refuse,
}

/// What a case expects. At least one key must be given.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    #[serde(default)]
    pub annotations: Option<Map<String, Value>>,
    #[serde(default)]
    pub meta: Option<Map<String, Value>>,
    #[serde(rename = "securitySchemes", default)]
    pub security_schemes: Option<Vec<Value>>,
    #[serde(default)]
    pub deny: Option<Vec<Value>>,
    #[serde(default)]
    pub error: Option<String>,
    /// The confirmation a call would ask for: the exact message, `true` for
    /// any, `false` for none.
    #[serde(default)]
    pub confirm: Option<ConfirmExpect>,
    /// Whether the case's caller sees the tool (its `visible` rule). A tool
    /// expected hidden answers as an unknown one, which is then no failure.
    #[serde(default)]
    pub visible: Option<bool>,
    /// What the tool's `upstream_request` rule (or its default) makes of
    /// the case's `request`. A case that expects only this does not judge
    /// the resolution (unless it expects an `error`).
    #[serde(default)]
    pub upstream_request: Option<RequestExpect>,
}

/// `expect.confirm`: a message, or whether there is one at all.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum ConfirmExpect {
    Asked(bool),
    Message(String),
}

/// A case with where it was written.
#[derive(Debug, Clone)]
pub struct LocatedCase {
    pub case: Case,
    /// The case's `caller`, checked.
    pub caller: Option<Caller>,
    /// Where that caller is written (the case's `caller`, or the file's
    /// `defaults.caller`).
    pub caller_at: Option<Location>,
    pub file: PathBuf,
    pub location: Location,
}

impl LocatedCase {
    /// A test-file error when the case's caller does not match the
    /// catalog's caller schema (`caller:`): such a caller gets no decision,
    /// so the case could only test the refusal, which it must then expect
    /// (`expect: {error: caller schema}`).
    pub fn caller_problem(&self, catalog: &Catalog) -> Option<Diagnostic> {
        if self.case.expect.error.is_some() {
            return None;
        }
        let why = catalog.caller_problem(self.caller.as_ref())?;
        let at = self
            .caller_at
            .clone()
            .unwrap_or_else(|| self.location.clone());
        let schema_at = catalog
            .caller_schema()
            .map_or_else(String::new, |s| format!(" declared at {}", s.location));
        Some(
            Diagnostic::error(
                "caller-claims-invalid",
                at,
                format!("case {}: {why}", self.title()),
            )
            .with_help(format!(
                "give the case a caller whose claims match the caller schema{schema_at}, or expect the refusal with `expect: {{error: caller schema}}`"
            )),
        )
    }

    /// The case's name, or one made from its tool and arguments.
    pub fn title(&self) -> String {
        self.case.name.clone().unwrap_or_else(|| {
            format!(
                "{} {}",
                self.case.tool,
                Value::Object(self.case.arguments.clone())
            )
        })
    }
}

/// A case file's cases: each parsed case with its `file:line:column`, or the
/// error that makes it malformed. A malformed case (a misspelt key, a value
/// of the wrong type, nothing expected) is an error for that case alone; the
/// file's other cases still run.
#[derive(Debug, Default)]
pub struct Parsed {
    pub cases: Vec<LocatedCase>,
    pub malformed: Vec<Diagnostic>,
}

/// The shape of a case file with each case unread, to know how many there
/// are when one of them does not parse.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Outline {
    #[serde(default)]
    defaults: Option<Defaults>,
    cases: Vec<serde::de::IgnoredAny>,
}

/// Parses a case file, each case with the file's `defaults` applied. `Err`
/// when the file itself is broken (not YAML, no `cases` list, a key beside
/// `defaults` and `cases`, malformed `defaults`).
pub fn parse(path: &Path, text: &str) -> Result<Parsed, Diagnostic> {
    // One reading of the file for where each node is and how each number
    // is spelled (`numbers`).
    let scalars = super::numbers::Scalars::build(text);
    let index = scalars.index();
    let (defaults, cases): (_, Vec<Result<Case, Diagnostic>>) =
        match yaml_serde::from_str::<CaseFile>(text) {
            Ok(file) => (file.defaults, file.cases.into_iter().map(Ok).collect()),
            Err(_) => {
                // Read case by case, so that one bad case does not hide the
                // rest; what is wrong outside the cases is the file's error.
                let outline: Outline =
                    yaml_serde::from_str(text).map_err(|e| yaml_error(path, &e))?;
                let cases = (0..outline.cases.len())
                    .map(|i| {
                        use serde::de::DeserializeSeed;
                        OneCase(i)
                            .deserialize(yaml_serde::Deserializer::from_str(text))
                            .map_err(|e| yaml_error(path, &e))
                    })
                    .collect();
                (outline.defaults, cases)
            }
        };
    let defaults = defaults.unwrap_or_default();
    // A default caller is checked once, where it is written.
    if let Some(Err((_, message))) = defaults.caller.clone().map(CallerDocument::into_caller) {
        let at = YamlPath::root().key("defaults").key("caller");
        let (line, column) = index.locate(&at);
        return Err(
            Diagnostic::error("caller", Location::new(path, line, column), format!("defaults.caller: {message}"))
                .with_help("give `caller` a non-empty `subject`; `sub` and `iss` under `claims`, when given, must equal `subject` and `issuer`"),
        );
    }
    // Whether each case gives its own caller, to say where its caller is written.
    // And which arguments, to find where each number is written.
    let cases = cases.into_iter().map(|c| {
        c.map(|c| {
            let own = c.caller.is_some();
            let own_args: Vec<String> = c.arguments.keys().cloned().collect();
            (defaults.apply(c), own, own_args)
        })
    });
    let mut out = Parsed::default();
    for (i, case) in cases.into_iter().enumerate() {
        let (mut case, own_caller, own_args) = match case {
            Ok(c) => c,
            Err(d) => {
                out.malformed.push(d);
                continue;
            }
        };
        let at = YamlPath::root().key("cases").index(i);
        let (line, column) = index.locate(&at.key("tool"));
        let location = Location::new(path, line, column);
        let e = &case.expect;
        if e.annotations.is_none()
            && e.meta.is_none()
            && e.security_schemes.is_none()
            && e.deny.is_none()
            && e.error.is_none()
            && e.confirm.is_none()
            && e.visible.is_none()
            && e.upstream_request.is_none()
        {
            let (line, column) = index.locate(&at.key("expect"));
            out.malformed.push(
                Diagnostic::error(
                    "empty-expectation",
                    Location::new(path, line, column),
                    format!("case {} expects nothing, so it could never fail", i + 1),
                )
                .with_help(
                    "add `annotations`, `meta`, `securitySchemes`, `deny`, `confirm`, `visible`, `upstream_request` or `error` under `expect`",
                ),
            );
            continue;
        }
        if e.upstream_request.is_some() && case.request.is_none() {
            let (line, column) = index.locate(&at.key("expect").key("upstream_request"));
            out.malformed.push(
                Diagnostic::error(
                    "upstream-request-without-request",
                    Location::new(path, line, column),
                    format!("case {} expects `upstream_request` but gives no `request`", i + 1),
                )
                .with_help("add `request: {method: elicitation/create, params: {...}}` to the case: the upstream's request the rule decides"),
            );
            continue;
        }
        // The numbers as the file spells them, read as a request's are.
        let (mut texts, mut claim_texts) = (Vec::new(), Vec::new());
        let args_at = |k: &str| {
            let from = if own_args.iter().any(|o| o == k) {
                at.clone()
            } else {
                YamlPath::root().key("defaults")
            };
            from.key("arguments").key(k)
        };
        let caller_path = if own_caller {
            at.key("caller")
        } else {
            YamlPath::root().key("defaults").key("caller")
        };
        let respelled = case
            .arguments
            .iter_mut()
            .try_for_each(|(k, v)| super::numbers::respell(v, &args_at(k), &scalars, &mut texts))
            .and_then(|()| {
                case.caller.iter_mut().try_for_each(|doc| {
                    doc.claims.iter_mut().try_for_each(|(k, v)| {
                        let path = caller_path.key("claims").key(k);
                        super::numbers::respell(v, &path, &scalars, &mut claim_texts)
                    })
                })
            });
        if let Err(u) = respelled {
            let (line, column) = u.at.unwrap_or_else(|| index.locate(&u.path));
            out.malformed.push(
                Diagnostic::error("case-number", Location::new(path, line, column), u.message)
                    .with_help(u.help),
            );
            continue;
        }
        case.spelled = Spelled::from_texts(texts.iter().map(String::as_str));
        if case.spelled.is_some() {
            let members: Vec<String> = case
                .arguments
                .iter()
                .map(|(k, v)| {
                    let v = super::numbers::written(v, &args_at(k), &scalars);
                    format!("{}:{v}", Value::from(k.as_str()))
                })
                .collect();
            case.sent = Some(format!("{{{}}}", members.join(",")));
        }
        let caller = match case.caller.clone().map(CallerDocument::into_caller) {
            None => None,
            // A claim spelled by hand is the caller's, as a caller file's is.
            Some(Ok(mut c)) => {
                c.spelled = claim_texts
                    .iter()
                    .flat_map(|t| spelled::claim_numbers(t.as_bytes()))
                    .collect();
                Some(c)
            }
            Some(Err((_, message))) => {
                let (line, column) = index.locate(&at.key("caller"));
                out.malformed.push(
                    Diagnostic::error("caller", Location::new(path, line, column), message)
                        .with_help("give `caller` a non-empty `subject`; `sub` and `iss` under `claims`, when given, must equal `subject` and `issuer`"),
                );
                continue;
            }
        };
        let caller_at = caller.as_ref().map(|_| {
            let at = if own_caller {
                at.key("caller")
            } else {
                YamlPath::root().key("defaults").key("caller")
            };
            let (line, column) = index.locate(&at);
            Location::new(path, line, column)
        });
        out.cases.push(LocatedCase {
            case,
            caller,
            caller_at,
            file: path.to_path_buf(),
            location,
        });
    }
    Ok(out)
}

/// Reads a case file keeping only case `.0`: the others are skipped unread,
/// so the error (if any) is that case's own, with its location and path.
struct OneCase(usize);

impl<'de> serde::de::DeserializeSeed<'de> for OneCase {
    type Value = Case;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Case, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for OneCase {
    type Value = Case;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a case file")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Case, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "cases" {
                found = Some(map.next_value_seed(CaseAt(self.0))?);
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        found.ok_or_else(|| serde::de::Error::missing_field("cases"))
    }
}

/// The `cases` list, keeping only the case at `.0`.
struct CaseAt(usize);

impl<'de> serde::de::DeserializeSeed<'de> for CaseAt {
    type Value = Case;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Case, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for CaseAt {
    type Value = Case;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of cases")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Case, A::Error> {
        let mut found = None;
        let mut i = 0;
        loop {
            if i == self.0 {
                match seq.next_element::<Case>()? {
                    Some(c) => found = Some(c),
                    None => break,
                }
            } else if seq.next_element::<serde::de::IgnoredAny>()?.is_none() {
                break;
            }
            i += 1;
        }
        found.ok_or_else(|| serde::de::Error::invalid_length(i, &"one more case"))
    }
}

/// One compared value.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub field: String,
    pub expected: String,
    pub actual: String,
    pub ok: bool,
}

/// How a case went.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub passed: bool,
    /// Every value compared, in order.
    pub rows: Vec<Row>,
    /// Why it failed when the rows alone do not say.
    pub note: Option<String>,
    /// The YAML mapping rule that matched, for coverage.
    pub mapping: Option<usize>,
}

fn show(v: Option<&Value>) -> String {
    match v {
        None => "(absent)".to_string(),
        Some(v) => v.to_string(),
    }
}

/// Resolves the case's tool, as asked by `caller`, and compares the answer
/// with the expectation. Its evaluations see the numbers the case and its
/// caller spell by hand, as `serve`'s see a request's and its caller's.
pub fn run(catalog: &Catalog, c: &Case, caller: Option<&Caller>) -> Outcome {
    spelled::with(numbers(c, caller).as_ref(), || judge(catalog, c, caller))
}

/// The numbers the case and its caller spell by hand: what its
/// evaluations see, in [`run`] and in coverage alike.
pub fn numbers(c: &Case, caller: Option<&Caller>) -> Option<Arc<Spelled>> {
    Spelled::joined(c.spelled.as_ref(), caller.map_or(&[], |c| &c.spelled))
}

/// [`run`] inside the case's numbers.
fn judge(catalog: &Catalog, c: &Case, caller: Option<&Caller>) -> Outcome {
    let params = json!({"name": c.tool, "arguments": c.arguments});
    let args = Value::Object(c.arguments.clone());
    // A tool with listed annotations only (no rules, no policy) has no
    // resolution: `tools/resolve` refuses it (-32602, not-resolvable) and a
    // client falls back to its `tools/list` entry. That entry is what such a
    // case judges, unless it expects the refusal itself (`error`).
    let listed_only = catalog
        .tool_as(&c.tool, caller)
        .filter(|t| !t.is_resolvable() && !c.shadow && c.expect.error.is_none());
    let (answer, mapping) = if let Some(tool) = listed_only {
        (listing(catalog, tool, &args, caller), None)
    } else if c.shadow {
        let answer = crate::protocol::shadow_result(catalog, Some(&params), caller);
        let mapping = catalog
            .shadow_as(&c.tool, &args, caller)
            .and_then(|s| s.resolution.ok())
            .and_then(|r| r.rule);
        (answer, mapping)
    } else {
        let answer = crate::protocol::resolve_result(
            catalog,
            Some(&params),
            true,
            false,
            crate::protocol::Negotiated::default(),
            caller,
        );
        let mapping = catalog
            .resolve_as(&c.tool, &args, caller)
            .ok()
            .and_then(|r| r.rule);
        (answer, mapping)
    };
    let mut rows = Vec::new();
    let mut note = None;
    let e = &c.expect;
    // Whether the caller sees the tool; `None` when no tool has the name.
    let visible = catalog
        .tool(&c.tool)
        .map(|_| catalog.tool_as(&c.tool, caller).is_some());
    if let Some(want) = e.visible {
        rows.push(Row {
            field: "visible".into(),
            expected: want.to_string(),
            actual: match visible {
                Some(v) => v.to_string(),
                None => "(unknown tool)".to_string(),
            },
            ok: visible == Some(want),
        });
    }
    if let (Some(want), Some(request)) = (e.upstream_request, &c.request) {
        use crate::catalog::upstream_request::RequestDecision;
        // As `serve` sees an upstream's request: parsed by rmcp, its
        // numbers' text unseen (`protocol/upstream_requests`), beside the
        // case's own numbers.
        let numbers = spelled::Spelled::with_unseen(
            spelled::current().as_ref(),
            [&request.params],
            "the upstream's request",
        );
        let decision = spelled::with(numbers.as_ref(), || {
            catalog
                .tool_as(&c.tool, caller)
                .map(|t| t.upstream_request(&args, caller, &request.method, &request.params))
        });
        let (actual, relays) = match &decision {
            None => ("(unknown tool)".to_string(), None),
            Some(RequestDecision::Relay { by_policy }) => (
                format!("relay{}", if *by_policy { "" } else { " (default)" }),
                Some(true),
            ),
            Some(RequestDecision::Refuse { by_policy }) => (
                format!("refuse{}", if *by_policy { "" } else { " (default)" }),
                Some(false),
            ),
            Some(RequestDecision::Failed(why)) => (format!("refuse (failed: {why})"), Some(false)),
        };
        rows.push(Row {
            field: "upstream_request".into(),
            expected: match want {
                RequestExpect::Relay => "relay",
                RequestExpect::Refuse => "refuse",
            }
            .into(),
            actual,
            ok: relays == Some(want == RequestExpect::Relay),
        });
    }
    // A case about an upstream's request alone does not judge the
    // resolution (a tool may have nothing to resolve: no policy, no rules).
    let request_only = e.upstream_request.is_some()
        && e.annotations.is_none()
        && e.meta.is_none()
        && e.security_schemes.is_none()
        && e.deny.is_none()
        && e.confirm.is_none()
        && e.visible.is_none();
    match (&answer, &e.error) {
        (Err(_), None) if request_only => {}
        // A tool expected hidden, and hidden, answers as an unknown one: the
        // `visible` row says so.
        (Err(_), None) if e.visible == Some(false) && visible == Some(false) => {}
        (Err(err), Some(want)) => rows.push(Row {
            field: "error".into(),
            expected: format!("contains {want:?}"),
            actual: format!("{:?}", err.message),
            ok: err.message.contains(want.as_str()),
        }),
        (Err(err), None) => {
            rows.push(Row {
                field: "error".into(),
                expected: "(none)".into(),
                actual: format!("{:?}", err.message),
                ok: false,
            });
            note = Some(format!(
                "resolution failed with {} {}",
                err.code,
                err.data.as_ref().map(Value::to_string).unwrap_or_default()
            ));
        }
        (Ok(_), Some(want)) => rows.push(Row {
            field: "error".into(),
            expected: format!("contains {want:?}"),
            actual: "(resolved without error)".into(),
            ok: false,
        }),
        (Ok(_), None) => {}
    }
    if let Ok(result) = &answer {
        compare_keys(
            &mut rows,
            "annotations",
            e.annotations.as_ref(),
            result.get("annotations"),
        );
        compare_keys(&mut rows, "_meta", e.meta.as_ref(), result.get("_meta"));
        if let Some(want) = &e.security_schemes {
            let got = result.pointer("/tool/securitySchemes");
            rows.push(Row {
                field: "securitySchemes".into(),
                expected: Value::Array(want.clone()).to_string(),
                actual: show(got),
                ok: got == Some(&Value::Array(want.clone())),
            });
        }
        if let Some(want) = &e.confirm {
            // tools/resolve shows the question in its decision `_meta`.
            let got = result.pointer("/_meta/regent~1decision/confirm");
            let (expected, ok) = match want {
                ConfirmExpect::Message(m) => (json!(m).to_string(), got == Some(&json!(m))),
                ConfirmExpect::Asked(true) => ("a question".to_string(), got.is_some()),
                ConfirmExpect::Asked(false) => ("no question".to_string(), got.is_none()),
            };
            rows.push(Row {
                field: "confirm".into(),
                expected,
                actual: match got {
                    Some(v) => v.to_string(),
                    None => "no question".to_string(),
                },
                ok,
            });
        }
        if let Some(want) = &e.deny {
            // tools/resolve reports the reasons in its decision `_meta`.
            let reasons = result
                .pointer("/_meta/regent~1decision/reasons")
                .or_else(|| result.get("deny"));
            match reasons {
                Some(Value::Array(got)) => rows.push(Row {
                    field: "deny".into(),
                    expected: Value::Array(want.clone()).to_string(),
                    actual: Value::Array(got.clone()).to_string(),
                    ok: got.len() == want.len() && want.iter().all(|w| got.contains(w)),
                }),
                other => {
                    rows.push(Row {
                        field: "deny".into(),
                        expected: Value::Array(want.clone()).to_string(),
                        actual: show(other),
                        ok: false,
                    });
                    note = Some(
                        "tools/resolve gave no deny reasons (`_meta[\"regent/decision\"].reasons`) to compare with".to_string(),
                    );
                }
            }
        }
    }
    let passed = rows.iter().all(|r| r.ok) && note.is_none();
    Outcome {
        passed,
        rows,
        note,
        mapping,
    }
}

/// What a client knows of a listed-only tool, shaped as `tools/resolve`'s
/// answer so that one comparison judges both: the `tools/list` entry (its
/// annotations, `_meta` and `securitySchemes`), and under
/// `_meta["regent/decision"]` the decision a call with `args` would get
/// (no rules and no policy, so only a path fence can deny it, and nothing
/// asks for a confirmation). Arguments the `inputSchema` refuses are the
/// refusal a call would get.
fn listing(
    catalog: &Catalog,
    tool: &crate::catalog::Tool,
    args: &Value,
    caller: Option<&Caller>,
) -> Result<Value, crate::protocol::Refusal> {
    let mut fenced = args.clone();
    let reasons = crate::fence::apply(&tool.fences, &mut fenced);
    let mut r = catalog
        .resolve_as(&tool.name, &fenced, caller)
        .map_err(|e| crate::protocol::Refusal::from(crate::protocol::resolve_error(catalog, &e)))?;
    r.add_deny(reasons);
    let listed = crate::protocol::wire::tool_json(tool, None);
    let mut meta = listed
        .get("_meta")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    meta.insert(
        "regent/decision".into(),
        json!({"allowed": r.allowed(), "reasons": r.deny}),
    );
    Ok(json!({
        "annotations": listed.get("annotations").cloned().unwrap_or_else(|| json!({})),
        "_meta": meta,
        "tool": listed,
    }))
}

fn compare_keys(
    rows: &mut Vec<Row>,
    what: &str,
    want: Option<&Map<String, Value>>,
    got: Option<&Value>,
) {
    let Some(want) = want else { return };
    for (k, v) in want {
        let actual = got.and_then(|g| g.get(k));
        rows.push(Row {
            field: format!("{what}.{k}"),
            expected: v.to_string(),
            actual: show(actual),
            ok: actual == Some(v),
        });
    }
}
