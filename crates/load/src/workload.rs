//! The requests the load generator sends, as raw JSON-RPC lines, and how a
//! sampled response is checked. The same bytes go to every server, so regent
//! and the TypeScript peer parse identical input.

use std::io::Write;

use serde_json::{Value, json};

/// The protocol era a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// `initialize` handshake, 2025-11-25.
    Legacy,
    /// No handshake; every request carries `_meta` with 2026-07-28.
    Modern,
}

impl Era {
    pub fn label(self) -> &'static str {
        match self {
            Era::Legacy => "2025-11-25",
            Era::Modern => "2026-07-28",
        }
    }
}

/// One kind of request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Workload {
    /// `tools/list` of a one-tool catalog: answered from memory, no policy.
    List,
    /// `ping` (legacy era only): the smallest request there is.
    Ping,
    /// `tools/resolve` of `manage_files`, cycling through its four actions.
    Resolve,
    /// `tools/annotations` (the older draft), same arguments.
    Annotations,
    /// `tools/call` of a tool that runs `echo ok`.
    Call,
    /// `tools/resolve` of generated tool `tool_N`, decided by its own Rego
    /// policy (the scale catalogs).
    ResolvePolicy(usize),
    /// `tools/resolve` of `manage_files`, the request negotiating the
    /// tool-resolution extension (2026-07-28 only): the draft's answer.
    ResolveDraft,
    /// `tools/resolve` of the shipped `examples/manage_files` (YAML rules
    /// and its Rego policy), as users run it.
    ResolveShipped,
    /// `tools/resolve` of the shipped `examples/github_api` (Rego policy and
    /// data), cycling through GET, POST and DELETE.
    ResolveGithub,
}

/// The four actions of the SEP's table, and what each resolves to
/// (readOnly, destructive, idempotent, openWorld).
pub const ACTIONS: [(&str, [bool; 4]); 4] = [
    ("read", [true, false, true, false]),
    ("append", [false, false, false, false]),
    ("replace", [false, true, true, false]),
    ("delete", [false, true, true, false]),
];

const MODERN_META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"regent-load","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}"#;

/// [`MODERN_META`] with the tool-resolution extension negotiated.
const DRAFT_META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"regent-load","version":"0"},"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tool-resolution":{}}}}"#;

/// The methods `ResolveGithub` cycles through, and what each resolves to.
pub const GITHUB: [(&str, [bool; 4]); 3] = [
    ("GET", [true, false, true, true]),
    ("POST", [false, false, false, true]),
    ("DELETE", [false, true, true, true]),
];

impl Workload {
    pub fn method(self) -> &'static str {
        match self {
            Workload::List => "tools/list",
            Workload::Ping => "ping",
            Workload::Resolve => "tools/resolve",
            Workload::Annotations => "tools/annotations",
            Workload::Call => "tools/call",
            Workload::ResolvePolicy(_)
            | Workload::ResolveDraft
            | Workload::ResolveShipped
            | Workload::ResolveGithub => "tools/resolve",
        }
    }

    /// How it is named in the tables.
    pub fn label(self) -> &'static str {
        match self {
            Workload::List => "tools/list (floor)",
            Workload::Ping => "ping (floor)",
            Workload::Resolve => "tools/resolve",
            Workload::Annotations => "tools/annotations",
            Workload::Call => "tools/call `echo ok`",
            Workload::ResolvePolicy(_) => "tools/resolve (Rego policy)",
            Workload::ResolveDraft => "tools/resolve (extension negotiated)",
            Workload::ResolveShipped => "tools/resolve, examples/manage_files (YAML + Rego)",
            Workload::ResolveGithub => "tools/resolve, examples/github_api (Rego + data)",
        }
    }

    /// Appends request `id` as one line (with its newline) to `out`. The
    /// arguments differ on every request (a path or repository named after
    /// the id), so nothing a server might cache per argument set helps it.
    pub fn write_line(self, era: Era, id: u64, out: &mut Vec<u8>) {
        let action = ACTIONS[(id % 4) as usize].0;
        let meta = match (era, self) {
            (Era::Legacy, _) => "",
            (Era::Modern, Workload::ResolveDraft) => DRAFT_META,
            (Era::Modern, _) => MODERN_META,
        };
        let sep = if meta.is_empty() { "" } else { "," };
        let _ = write!(
            out,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{}""#,
            self.method()
        );
        let _ = match self {
            Workload::List | Workload::Ping if meta.is_empty() => Ok(()),
            Workload::List | Workload::Ping => write!(out, r#","params":{{{meta}}}"#),
            Workload::Resolve
            | Workload::Annotations
            | Workload::ResolveDraft
            | Workload::ResolveShipped => write!(
                out,
                r#","params":{{"name":"manage_files","arguments":{{"path":"notes/{id}/file{id}.txt","action":"{action}","content":"hello"}}{sep}{meta}}}"#
            ),
            Workload::ResolveGithub => write!(
                out,
                r#","params":{{"name":"github_api","arguments":{{"method":"{}","owner":"owner{}","repo":"repo{id}","path":"issues/{id}"}}{sep}{meta}}}"#,
                GITHUB[(id % 3) as usize].0,
                id % 1000
            ),
            Workload::Call => write!(
                out,
                r#","params":{{"name":"echo","arguments":{{}}{sep}{meta}}}"#
            ),
            Workload::ResolvePolicy(k) => write!(
                out,
                r#","params":{{"name":"tool_{k}","arguments":{{"mode":"get"}}{sep}{meta}}}"#
            ),
        };
        out.extend_from_slice(b"}\n");
    }

    /// Checks a full response to request `id`: the right shape and, for
    /// resolution, the SEP's annotations for that action.
    pub fn check(self, id: u64, response: &Value) -> Result<(), String> {
        let result = response
            .get("result")
            .ok_or_else(|| format!("no result in {response}"))?;
        let want = match self {
            Workload::ResolveGithub => GITHUB[(id % 3) as usize],
            _ => ACTIONS[(id % 4) as usize],
        };
        let hints = |a: &Value| -> Result<(), String> {
            let got = [
                "readOnlyHint",
                "destructiveHint",
                "idempotentHint",
                "openWorldHint",
            ]
            .map(|k| a.get(k).and_then(Value::as_bool));
            if got.map(Some) == want.1.map(|b| Some(Some(b))) {
                Ok(())
            } else {
                Err(format!(
                    "action {} resolved to {a}, the SEP says {:?}",
                    want.0, want.1
                ))
            }
        };
        match self {
            Workload::List => match result.get("tools").and_then(Value::as_array) {
                Some(t) if t.len() == 1 => Ok(()),
                _ => Err(format!("expected one tool in {result}")),
            },
            Workload::Ping => match result.as_object() {
                Some(_) => Ok(()),
                None => Err(format!("ping result is not an object: {result}")),
            },
            Workload::Resolve | Workload::ResolveShipped | Workload::ResolveGithub => hints(
                result
                    .pointer("/tool/annotations")
                    .ok_or_else(|| format!("no tool.annotations in {result}"))?,
            ),
            Workload::ResolveDraft => {
                // The draft's exact shape: these keys and no others.
                let mut keys: Vec<&str> = result
                    .as_object()
                    .map(|m| m.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                keys.sort_unstable();
                if keys != ["annotations", "name", "resultType"] {
                    return Err(format!("not the extension's answer: {result}"));
                }
                hints(&result["annotations"])
            }
            Workload::Annotations => hints(
                result
                    .get("annotations")
                    .ok_or_else(|| format!("no annotations in {result}"))?,
            ),
            Workload::ResolvePolicy(_) => {
                let a = result
                    .pointer("/tool/annotations")
                    .ok_or_else(|| format!("no tool.annotations in {result}"))?;
                if a.get("readOnlyHint") == Some(&Value::Bool(true))
                    && a.get("destructiveHint") == Some(&Value::Bool(false))
                {
                    Ok(())
                } else {
                    Err(format!("the policy's answer is missing from {a}"))
                }
            }
            Workload::Call => {
                if result.get("isError").and_then(Value::as_bool) == Some(true) {
                    return Err(format!("the call failed: {result}"));
                }
                match result.get("content").and_then(Value::as_array) {
                    Some(c) if !c.is_empty() => Ok(()),
                    _ => Err(format!("no content in {result}")),
                }
            }
        }
    }
}

/// The request id of a response line, found without parsing the whole line
/// (the client must stay cheap next to the server it measures). Servers put
/// `"id"` first (rmcp) or last (the TypeScript SDK); nothing we request has
/// an `"id"` key inside its result.
pub fn response_id(line: &[u8]) -> Option<u64> {
    let at = find(line, b"\"id\":")? + 5;
    let digits = line[at..]
        .iter()
        .skip_while(|b| **b == b' ')
        .take_while(|b| b.is_ascii_digit());
    let mut id: u64 = 0;
    let mut any = false;
    for d in digits {
        id = id.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        any = true;
    }
    any.then_some(id)
}

/// The legacy era's `initialize` request with id `id`.
pub fn initialize(id: u64) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},
        "clientInfo":{"name":"regent-load","version":"0"}}})
}

/// Whether a response line is a JSON-RPC error.
pub fn is_error(line: &[u8]) -> bool {
    find(line, b"\"error\":").is_some()
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
