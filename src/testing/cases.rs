//! The `*.test.yaml` case format and how one case is judged.
//!
//! ```yaml
//! cases:
//!   - name: reading is read-only          # optional
//!     tool: manage_files
//!     arguments: {path: notes.txt, action: read}
//!     expect:
//!       annotations: {readOnlyHint: true}  # only the keys given are compared
//!       meta: {...}                        # likewise, against the resolved _meta
//!       securitySchemes: [...]             # the resolved securitySchemes, exactly
//!       deny: [...]                        # the resolution's deny list, in any order
//!       confirm: "Delete notes.txt?"      # the question a call would ask; `true`:
//!                                          # any question; `false`: none
//!       error: "invalid arguments"         # resolution fails; message contains this
//! ```
//!
//! A case resolves its tool exactly as `tools/resolve` does (the same
//! function answers both) and compares what it got with what it expects.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::catalog::Catalog;
use crate::diag::{Diagnostic, Location};
use crate::source::{LocationIndex, YamlPath, yaml_error};

/// One `*.test.yaml` file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    pub cases: Vec<Case>,
}

/// One case.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    #[serde(default)]
    pub name: Option<String>,
    pub tool: String,
    #[serde(default)]
    pub arguments: Map<String, Value>,
    pub expect: Expect,
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
    pub file: PathBuf,
    pub location: Location,
}

impl LocatedCase {
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

/// Parses a case file; every case carries its `file:line:column`.
pub fn parse(path: &Path, text: &str) -> Result<Vec<LocatedCase>, Diagnostic> {
    let file: CaseFile = yaml_serde::from_str(text).map_err(|e| yaml_error(path, &e))?;
    let index = LocationIndex::build(text);
    let mut out = Vec::new();
    for (i, case) in file.cases.into_iter().enumerate() {
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
        {
            let (line, column) = index.locate(&at.key("expect"));
            return Err(Diagnostic::error(
                "empty-expectation",
                Location::new(path, line, column),
                format!("case {} expects nothing, so it could never fail", i + 1),
            )
            .with_help(
                "add `annotations`, `meta`, `securitySchemes`, `deny`, `confirm` or `error` under `expect`",
            ));
        }
        out.push(LocatedCase {
            case,
            file: path.to_path_buf(),
            location,
        });
    }
    Ok(out)
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

/// Resolves the case's tool and compares the answer with the expectation.
pub fn run(catalog: &Catalog, c: &Case) -> Outcome {
    let params = json!({"name": c.tool, "arguments": c.arguments});
    let answer = crate::protocol::resolve_result(
        catalog,
        Some(&params),
        true,
        false,
        crate::protocol::Negotiated::default(),
    );
    let mapping = catalog
        .resolve(&c.tool, &Value::Object(c.arguments.clone()))
        .ok()
        .and_then(|r| r.rule);
    let mut rows = Vec::new();
    let mut note = None;
    let e = &c.expect;
    match (&answer, &e.error) {
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
                err.code.0,
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
                        "the resolution has no `deny` list: this build of regent does not support the `deny` contract rule yet, so `expect.deny` cannot pass".to_string(),
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
