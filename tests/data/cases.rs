//! Data-driven resolution tests: every `*.test.yaml` under `examples/` and
//! `tests/cases/` is one test per protocol era. Each file sits next to the
//! catalog it tests (the files of its directory) and uses the same case format
//! people write for `regent test`:
//!
//! ```yaml
//! defaults: {caller: {...}, arguments: {...}}   # optional: for cases without their own
//! cases:
//!   - name: read is read-only          # optional
//!     tool: manage_files
//!     arguments: {path: a.txt, action: read}
//!     caller: {subject: alice, claims: {groups: [oncall]}}   # optional: input.caller
//!     expect:
//!       annotations: {readOnlyHint: true}   # a subset of the resolved hints
//!       meta: {...}                         # a subset of the resolved _meta
//!       securitySchemes: [...]              # the resolved securitySchemes, exactly
//!       deny: [...]                         # the deny reasons, exactly ([] = allowed)
//!       error: "substring of the error message"
//!       visible: false                      # listed or not; hidden answers as unknown
//! ```
//!
//! The real binary is started per file and driven over stdio; a case with a
//! `caller` goes to a server started with that caller as `--caller-file`
//! (one per distinct caller), so `regent test` and the stdio server are held
//! to the same answers.
//!
//! A catalog that declares `upstreams:` needs its upstream MCP servers
//! running to be served, so its files are listed as ignored here: `regent
//! test` holds them (every example's cases run in tests/data/corpus.rs, from the
//! pinned snapshot), and the upstream's own end-to-end test serves them
//! against the real server (tests/integration/upstream_filesystem.rs).

use std::path::{Path, PathBuf};

use crate::common::{self, Era, Server, assert_subset};
use libtest_mimic::{Failed, Trial};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    #[serde(default)]
    defaults: Option<Defaults>,
    cases: Vec<Case>,
}

/// What every case that does not set its own gets: the caller, and
/// arguments merged shallowly under the case's (its keys win).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Defaults {
    #[serde(default, deserialize_with = "some_value")]
    caller: Option<Value>,
    #[serde(
        default = "empty_object",
        deserialize_with = "regent::json_value::value"
    )]
    arguments: Value,
}

impl Defaults {
    fn apply(&self, case: &mut Case) {
        if case.caller.is_none() {
            case.caller.clone_from(&self.caller);
        }
        if let (Some(base), Some(own)) = (self.arguments.as_object(), case.arguments.as_object()) {
            let mut merged = base.clone();
            merged.extend(own.clone());
            case.arguments = Value::Object(merged);
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    #[serde(default)]
    name: Option<String>,
    tool: String,
    #[serde(
        default = "empty_object",
        deserialize_with = "regent::json_value::value"
    )]
    arguments: Value,
    #[serde(default, deserialize_with = "some_value")]
    caller: Option<Value>,
    expect: Expect,
    /// Where each argument and the caller are written in the file (the
    /// case's own, or `defaults`'), to send their numbers as spelled.
    #[serde(skip)]
    at: Written,
}

/// Where a case's arguments and caller are written: paths into the file.
#[derive(Debug, Default)]
struct Written {
    /// By argument name.
    arguments: std::collections::BTreeMap<String, Vec<String>>,
    caller: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    #[serde(default)]
    annotations: Option<Value>,
    #[serde(default)]
    meta: Option<Value>,
    #[serde(rename = "securitySchemes", default)]
    security_schemes: Option<Value>,
    #[serde(default)]
    deny: Option<Value>,
    #[serde(default)]
    error: Option<String>,
    /// A message, or `true`/`false` for whether there is a question.
    #[serde(default)]
    confirm: Option<Value>,
    /// Whether the caller sees the tool: in `tools/list`, and a hidden one
    /// answers `tools/resolve` and `tools/call` exactly as an unknown one.
    #[serde(default)]
    visible: Option<bool>,
}

/// A case's numbers past 64 bits are read as a request's are (the nearest
/// double; `regent::json_value`), then sent as the file spells them.
fn some_value<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    regent::json_value::value(d).map(Some)
}

fn empty_object() -> Value {
    json!({})
}

fn case_files() -> Vec<PathBuf> {
    let root = common::repo_root();
    let mut files = Vec::new();
    for base in ["examples", "tests/cases"] {
        let Ok(dirs) = std::fs::read_dir(root.join(base)) else {
            continue;
        };
        for dir in dirs.flatten() {
            let Ok(entries) = std::fs::read_dir(dir.path()) else {
                continue;
            };
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                if name.ends_with(".test.yaml") || name.ends_with("_test.yaml") {
                    files.push(e.path());
                }
            }
        }
    }
    files.sort();
    files
}

/// Whether a tool file in `dir` declares upstream MCP servers.
fn declares_upstreams(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            (name.ends_with(".yaml") || name.ends_with(".yml"))
                && std::fs::read_to_string(e.path())
                    .is_ok_and(|t| t.lines().any(|l| l.starts_with("upstreams:")))
        })
}

fn run_file(path: &Path, era: Era) -> Result<(), Failed> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let mut file: CaseFile =
        yaml_serde::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let defaults = file.defaults.take().unwrap_or_default();
    for (i, case) in file.cases.iter_mut().enumerate() {
        let own = |key: &str| vec!["cases".to_string(), i.to_string(), key.to_string()];
        let default = |key: &str| vec!["defaults".to_string(), key.to_string()];
        let mine: Vec<String> = case
            .arguments
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        case.at.caller = if case.caller.is_some() {
            own("caller")
        } else {
            default("caller")
        };
        defaults.apply(case);
        for k in case
            .arguments
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
        {
            let mut at = if mine.contains(k) {
                own("arguments")
            } else {
                default("arguments")
            };
            at.push(k.clone());
            case.at.arguments.insert(k.clone(), at);
        }
    }
    let scalars = plain_scalars(&text);
    if file.cases.is_empty() {
        return Err(format!("{} holds no cases", path.display()).into());
    }
    let dir = path.parent().expect("file has a directory");
    let catalog = dir.to_str().expect("utf-8 path");
    // Servers by caller (`None`: no --caller-file), started when first needed.
    let mut servers: std::collections::BTreeMap<Option<String>, Server> = Default::default();
    let callers = tempfile::tempdir().map_err(|e| e.to_string())?;
    for (i, case) in file.cases.iter().enumerate() {
        let label = format!(
            "{} case {} ({})",
            path.display(),
            i + 1,
            case.name.as_deref().unwrap_or(&case.tool)
        );
        // The caller file spells its numbers as the case file does.
        let key = case
            .caller
            .as_ref()
            .map(|c| spelled(c, &mut case.at.caller.clone(), &scalars));
        let server = servers.entry(key.clone()).or_insert_with(|| match &key {
            // Some case catalogs hold what `check` refuses on purpose
            // (a failing or riskier policy): the cases test how each such
            // call fails closed, which `serve` would otherwise not reach.
            None => Server::start(era, &["--skip-load-check", catalog]),
            Some(doc) => {
                let file = callers.path().join(format!("caller-{i}.json"));
                std::fs::write(&file, doc).expect("write the caller file");
                let file = file.to_str().expect("utf-8 path").to_string();
                Server::start(era, &["--skip-load-check", "--caller-file", &file, catalog])
            }
        });
        run_case(server, case, &arguments_text(case, &scalars), &label)?;
    }
    Ok(())
}

/// Every plain scalar of a case file, by its path (`["cases", "0",
/// "arguments", "n"]`): a case's numbers are sent as the file spells them
/// (`n: 1.50` is `{"n": 1.50}`, which a `Value` would write `1.5`), as
/// `regent test` reads them, so that both are held to the same answers.
fn plain_scalars(text: &str) -> std::collections::HashMap<Vec<String>, String> {
    use saphyr_parser::{Event, Parser, ScalarStyle};
    enum Frame {
        Map(Vec<String>, Option<String>),
        Seq(Vec<String>, usize),
    }
    // The path of the node starting now; `None` for a key.
    fn place(stack: &mut [Frame], key: &str) -> Option<Vec<String>> {
        match stack.last_mut() {
            None => Some(Vec::new()),
            Some(Frame::Seq(path, next)) => {
                let mut p = path.clone();
                p.push(next.to_string());
                *next += 1;
                Some(p)
            }
            Some(Frame::Map(path, pending)) => match pending.take() {
                Some(k) => {
                    let mut p = path.clone();
                    p.push(k);
                    Some(p)
                }
                None => {
                    *pending = Some(key.to_string());
                    None
                }
            },
        }
    }
    let mut out = std::collections::HashMap::new();
    let mut stack = Vec::new();
    for item in Parser::new_from_str(text) {
        let Ok((event, _)) = item else { break };
        match event {
            Event::Scalar(value, style, _, tag) => {
                if let Some(path) = place(&mut stack, &value)
                    && style == ScalarStyle::Plain
                    && tag.is_none()
                {
                    out.insert(path, value.to_string());
                }
            }
            Event::MappingStart(..) => {
                let path = place(&mut stack, "").unwrap_or_default();
                stack.push(Frame::Map(path, None));
            }
            Event::SequenceStart(..) => {
                let path = place(&mut stack, "").unwrap_or_default();
                stack.push(Frame::Seq(path, 0));
            }
            Event::Alias(_) => {
                place(&mut stack, "");
            }
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
            }
            _ => {}
        }
    }
    out
}

/// `v`, written at `path`, as JSON text with each number as the file
/// spells it where that is a JSON number.
fn spelled(
    v: &Value,
    path: &mut Vec<String>,
    scalars: &std::collections::HashMap<Vec<String>, String>,
) -> String {
    match v {
        Value::Number(n) => scalars
            .get(path)
            .filter(|t| matches!(serde_json::from_str::<Value>(t), Ok(Value::Number(_))))
            .cloned()
            .unwrap_or_else(|| n.to_string()),
        Value::Array(items) => {
            let mut parts = Vec::new();
            for (i, x) in items.iter().enumerate() {
                path.push(i.to_string());
                parts.push(spelled(x, path, scalars));
                path.pop();
            }
            format!("[{}]", parts.join(","))
        }
        Value::Object(members) => {
            let mut parts = Vec::new();
            for (k, x) in members {
                path.push(k.clone());
                parts.push(format!("{}:{}", json!(k), spelled(x, path, scalars)));
                path.pop();
            }
            format!("{{{}}}", parts.join(","))
        }
        other => other.to_string(),
    }
}

/// A case's arguments as JSON text, their numbers as the file spells them.
fn arguments_text(case: &Case, scalars: &std::collections::HashMap<Vec<String>, String>) -> String {
    let Some(args) = case.arguments.as_object() else {
        return case.arguments.to_string();
    };
    let parts: Vec<String> = args
        .iter()
        .map(|(k, v)| {
            let mut at = case.at.arguments.get(k).cloned().unwrap_or_default();
            format!("{}:{}", json!(k), spelled(v, &mut at, scalars))
        })
        .collect();
    format!("{{{}}}", parts.join(","))
}

fn run_case(server: &mut Server, case: &Case, arguments: &str, label: &str) -> Result<(), Failed> {
    // The arguments' text goes in place of a placeholder, as spelled.
    let send = |server: &mut Server, method: &str| {
        server.request_edited(
            method,
            json!({"name": case.tool, "arguments": "@ARGUMENTS@"}),
            |line| line.replace("\"@ARGUMENTS@\"", arguments),
        )
    };
    let response = send(server, "tools/resolve");
    let seen = case.expect.visible.map(|_| {
        let list = server.request("tools/list", json!({}));
        let call = send(server, "tools/call");
        (list, call)
    });
    // A listed-only tool (no rules, no policy) is refused by tools/resolve
    // as not resolvable; a client falls back to its tools/list entry, which
    // is what `regent test` judges too.
    let not_resolvable =
        response["error"]["data"]["reason"] == "not-resolvable" && case.expect.error.is_none();
    let response = if not_resolvable {
        let list = server.request("tools/list", json!({}));
        let listed = list["result"]["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["name"] == case.tool.as_str())
            .cloned()
            .unwrap_or_else(|| panic!("{label}: {} is not in tools/list: {list}", case.tool));
        assert!(
            case.expect.deny.is_none() && case.expect.confirm.is_none(),
            "{label}: a listed-only tool's decision is not on the wire (tools/resolve refuses it); expect only its annotations, meta or securitySchemes here"
        );
        json!({"result": {
            "annotations": listed["annotations"],
            "_meta": listed.get("_meta").cloned().unwrap_or_else(|| json!({})),
            "tool": listed,
        }})
    } else {
        response
    };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if let (Some(want), Some((list, call))) = (case.expect.visible, &seen)
            && !check_visible(want, &case.tool, &response, list, call, label)
        {
            return;
        }
        check(&response, &case.expect, label);
    }));
    outcome.map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Failed::from(msg)
    })
}

/// Checks that `tool` is listed exactly when `want`, and that a hidden one
/// answers `tools/resolve` and `tools/call` as an unknown tool does. Returns
/// whether there is a resolution left to check.
fn check_visible(
    want: bool,
    tool: &str,
    resolve: &Value,
    list: &Value,
    call: &Value,
    label: &str,
) -> bool {
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{label}: tools/list gave no tools: {list}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        names.contains(&tool),
        want,
        "{label}: visible\n  expected: {want}\n  listed:   {names:?}"
    );
    if want {
        return true;
    }
    let unknown = json!({
        "code": -32602,
        "message": format!("unknown tool: {tool}"),
        "data": {"tool": tool, "reason": "unknown-tool"},
    });
    for (method, response) in [("tools/resolve", resolve), ("tools/call", call)] {
        assert_eq!(
            response.get("error"),
            Some(&unknown),
            "{label}: a hidden tool must answer {method} as an unknown one: {response}"
        );
    }
    false
}

fn check(response: &Value, expect: &Expect, label: &str) {
    if let Some(want) = &expect.error {
        let Some(err) = response.get("error") else {
            panic!("{label}: expected an error containing {want:?}, got {response}");
        };
        let msg = err["message"].as_str().unwrap_or_default();
        assert!(
            msg.contains(want.as_str()),
            "{label}: error message\n  expected to contain: {want:?}\n  actual:              {msg:?}"
        );
        return;
    }
    let Some(result) = response.get("result") else {
        panic!("{label}: expected a result, got {response}");
    };
    if let Some(a) = &expect.annotations {
        assert_subset(a, &result["annotations"], &format!("{label}: annotations"));
        // The SEP-1862 `tool` and the extension's `annotations` must agree.
        assert_eq!(
            result["annotations"], result["tool"]["annotations"],
            "{label}: result.annotations and result.tool.annotations differ"
        );
    }
    if let Some(m) = &expect.meta {
        assert_subset(m, &result["_meta"], &format!("{label}: _meta"));
    }
    if let Some(want) = &expect.deny {
        // The decision a call would get, as tools/resolve reports it.
        let decision = &result["_meta"]["regent/decision"];
        assert_eq!(
            &decision["reasons"], want,
            "{label}: deny reasons\n  expected: {want}\n  actual:   {decision}"
        );
        assert_eq!(
            decision["allowed"],
            json!(want.as_array().is_some_and(|a| a.is_empty())),
            "{label}: allowed disagrees with the reasons: {decision}"
        );
    }
    if let Some(want) = &expect.confirm {
        let got = result["_meta"]["regent/decision"].get("confirm");
        let ok = match want {
            Value::Bool(asked) => got.is_some() == *asked,
            message => got == Some(message),
        };
        assert!(
            ok,
            "{label}: confirm\n  expected: {want}\n  actual:   {got:?}"
        );
    }
    if let Some(s) = &expect.security_schemes {
        assert_eq!(
            &result["tool"]["securitySchemes"], s,
            "{label}: securitySchemes\n  expected: {s}\n  actual:   {}",
            result["tool"]["securitySchemes"]
        );
    }
}

/// One test per case file and era.
pub fn trials() -> Vec<Trial> {
    let root = common::repo_root();
    let mut trials = Vec::new();
    for file in case_files() {
        let rel = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        let ignored = declares_upstreams(file.parent().expect("file has a directory"));
        for era in Era::ALL {
            let f = file.clone();
            trials.push(
                Trial::test(format!("{rel}::{era:?}").to_lowercase(), move || {
                    run_file(&f, era)
                })
                .with_ignored_flag(ignored),
            );
        }
    }
    trials
}
