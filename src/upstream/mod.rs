//! Live upstream MCP servers: starting each declared upstream as a child over
//! stdio, connecting to it with rmcp's client, listing its tools into a
//! [`Snapshot`], and forwarding the calls regent has decided to allow.
//!
//! This is the side-effecting half of "upstream MCP servers as a tool
//! source"; the other half (`source::upstream`) is data. The catalog build
//! never sees a connection: `serve` starts the upstreams first and hands
//! their snapshots to `Source::import_upstreams`, and reloads import the same
//! snapshots again. An upstream is connected once, when `serve` starts; a
//! call to one that has gone away fails closed (nothing runs). Not built yet:
//! Streamable HTTP upstreams, restart with backoff, re-import on
//! `notifications/tools/list_changed`, `check` against snapshots.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Map, Value};
use tokio::io::AsyncBufReadExt;

use crate::diag::{Diagnostic, Diagnostics, Location};
use crate::source::Source;
use crate::source::run::ValueSource;
use crate::source::upstream::{Snapshot, UpstreamDecl, UpstreamRef};

/// How long an upstream has to start, answer `initialize` and list its tools.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How many lines of a failed upstream's standard error its error shows.
const STDERR_TAIL_LINES: usize = 5;
/// How long one forwarded call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// One connected upstream.
struct Live {
    client: RunningService<RoleClient, ()>,
    snapshot: Snapshot,
    /// Killed when dropped (regent exits or the set is replaced); asked
    /// whether it has exited before each call.
    child: std::sync::Mutex<tokio::process::Child>,
}

/// Every connected upstream, by name.
#[derive(Default)]
pub struct Upstreams {
    live: BTreeMap<String, Live>,
}

/// Why a forwarded call did not give the upstream's result.
#[derive(Debug)]
pub struct CallError(pub String);

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Upstreams {
    /// Starts and lists every upstream `source` declares, one after another.
    /// Every upstream that fails is reported; serving does not start with
    /// an upstream missing.
    pub async fn start(source: &Source, timeout: Duration) -> Result<Upstreams, Diagnostics> {
        let mut diags = Diagnostics::default();
        let mut live = BTreeMap::new();
        for (f, at, decl) in source.upstreams() {
            let file = &source.tool_files[f];
            let location = file.locate(&at.key("command"));
            let base_dir = std::path::absolute(&file.path)
                .ok()
                .and_then(|p| p.parent().map(Path::to_path_buf))
                .unwrap_or_else(|| PathBuf::from("/"));
            let started = tokio::time::timeout(timeout, connect(decl, &base_dir)).await;
            let result = started.unwrap_or_else(|_| {
                Err(format!(
                    "it did not answer `initialize` and `tools/list` within {}",
                    crate::exec::human_duration(timeout)
                ))
            });
            match result {
                Ok(l) => {
                    tracing::info!(upstream = %decl.name, tools = l.snapshot.tools.len(), "upstream connected");
                    live.insert(decl.name.clone(), l);
                }
                Err(why) => diags.push(start_failed(&decl.name, location, &why)),
            }
        }
        if diags.has_errors() {
            return Err(diags);
        }
        Ok(Upstreams { live })
    }

    /// What each upstream listed, by name: the data the catalog build imports.
    pub fn snapshots(&self) -> BTreeMap<String, Snapshot> {
        self.live
            .iter()
            .map(|(n, l)| (n.clone(), l.snapshot.clone()))
            .collect()
    }

    /// The live upstream of `target`, or why there is none (the call must
    /// then fail closed: nothing is sent).
    fn connected(&self, target: &UpstreamRef) -> Result<&Live, CallError> {
        let Some(live) = self.live.get(&target.upstream) else {
            return Err(CallError(format!(
                "upstream `{}` is not connected; restart regent to connect it",
                target.upstream
            )));
        };
        let exited = live
            .child
            .lock()
            .map_or(true, |mut c| !matches!(c.try_wait(), Ok(None)));
        if exited || live.client.is_closed() {
            return Err(CallError(format!(
                "upstream `{}` has exited; restart regent to start it again",
                target.upstream
            )));
        }
        Ok(live)
    }

    /// Why a call to `target` cannot be sent now, if it cannot.
    pub fn unavailable(&self, target: &UpstreamRef) -> Option<CallError> {
        self.connected(target).err()
    }

    /// Forwards one call, already decided, to its upstream, and returns the
    /// upstream's result as it gave it. Cancelled (and the upstream told so)
    /// when `cancelled` completes or after [`CALL_TIMEOUT`].
    pub async fn call(
        &self,
        target: &UpstreamRef,
        arguments: Map<String, Value>,
        cancelled: impl std::future::Future<Output = ()>,
    ) -> Result<CallToolResult, CallError> {
        let live = self.connected(target)?;
        let mut params = CallToolRequestParams::new(target.tool.clone());
        params.arguments = Some(arguments);
        // Dropping the request future sends `notifications/cancelled` upstream.
        let call = live.client.peer().call_tool_once(params);
        let answer = tokio::select! {
            r = call => r,
            _ = cancelled => return Err(CallError("the call was cancelled".into())),
            _ = tokio::time::sleep(CALL_TIMEOUT) => {
                return Err(CallError(format!(
                    "upstream `{}` did not answer within {}",
                    target.upstream,
                    crate::exec::human_duration(CALL_TIMEOUT)
                )));
            }
        };
        match answer {
            Ok(CallToolResponse::Complete(r)) => Ok(r),
            Ok(_) => Err(CallError(format!(
                "upstream `{}` asked for more input or started a task, which regent does not relay yet",
                target.upstream
            ))),
            Err(e) => Err(CallError(format!(
                "upstream `{}` failed the call: {}",
                target.upstream,
                lower(&e.to_string())
            ))),
        }
    }
}

fn start_failed(name: &str, location: Location, why: &str) -> Diagnostic {
    Diagnostic::error(
        "upstream-start",
        location,
        format!("upstream `{name}` could not be started: {why}"),
    )
    .with_help("check `command`, `args` and `env`; run the command by hand to see whether it speaks MCP on stdio")
}

/// Starts the child, connects, and lists its tools.
async fn connect(decl: &UpstreamDecl, base_dir: &Path) -> Result<Live, String> {
    let program = program(&decl.command, base_dir)?;
    let mut cmd = tokio::process::Command::new(&program);
    cmd.args(&decl.args)
        .current_dir(base_dir)
        .env_clear()
        .envs(environment(decl, base_dir)?)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| {
        format!(
            "cannot run {}: {}",
            program.display(),
            crate::source::files::lower_io(&e)
        )
    })?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err("the child's standard streams are not pipes".into());
    };
    // The upstream's standard error goes to regent's log, never to regent's
    // own standard error (where the decision log may be written).
    // The last lines are kept to explain a failed start.
    let name = decl.name.clone();
    let tail = std::sync::Arc::new(std::sync::Mutex::new(std::collections::VecDeque::new()));
    let kept = tail.clone();
    let drained = tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(upstream = %name, "{line}");
            if let Ok(mut t) = kept.lock() {
                if t.len() == STDERR_TAIL_LINES {
                    t.pop_front();
                }
                t.push_back(line);
            }
        }
    });
    let failed = |what: String| {
        let tail = tail.clone();
        async move {
            // What the child wrote before it went away, if it did.
            let _ = tokio::time::timeout(Duration::from_millis(500), drained).await;
            let lines: Vec<String> = tail
                .lock()
                .map(|t| t.iter().cloned().collect())
                .unwrap_or_default();
            if lines.is_empty() {
                what
            } else {
                format!(
                    "{what}; its standard error ends with:\n{}",
                    lines.join("\n")
                )
            }
        }
    };
    let client = match ().serve((stdout, stdin)).await {
        Ok(c) => c,
        Err(e) => {
            return Err(failed(format!(
                "the mcp handshake failed: {}",
                lower(&e.to_string())
            ))
            .await);
        }
    };
    let tools = match client.peer().list_all_tools().await {
        Ok(t) => t,
        Err(e) => {
            return Err(failed(format!("`tools/list` failed: {}", lower(&e.to_string()))).await);
        }
    };
    let snapshot = snapshot_of(&tools)?;
    Ok(Live {
        client,
        snapshot,
        child: std::sync::Mutex::new(child),
    })
}

/// rmcp's tools as a [`Snapshot`]: through their JSON, as the upstream sent them.
pub fn snapshot_of(tools: &[rmcp::model::Tool]) -> Result<Snapshot, String> {
    let value = serde_json::json!({ "tools": tools });
    serde_json::from_value(value).map_err(|e| format!("the upstream's tool list is malformed: {e}"))
}

/// The program to run: absolute, relative to the tool file, or from `PATH`.
fn program(command: &str, base_dir: &Path) -> Result<PathBuf, String> {
    if command.contains('/') {
        return Ok(base_dir.join(command));
    }
    crate::exec::cli::find_in_path(command)
        .ok_or_else(|| format!("`{command}` is not found in regent's PATH"))
}

/// The child's environment: the allow-list (`env.inherit`, else the same
/// default as commands get) and `env.set`.
fn environment(decl: &UpstreamDecl, base_dir: &Path) -> Result<Vec<(String, String)>, String> {
    let inherit: Vec<String> = match decl.env.as_ref().and_then(|e| e.inherit.clone()) {
        Some(list) => list,
        None => crate::exec::cli::DEFAULT_INHERIT
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    let mut env: Vec<(String, String)> = inherit
        .iter()
        .filter_map(|n| std::env::var(n).ok().map(|v| (n.clone(), v)))
        .collect();
    for (name, value) in decl.env.iter().flat_map(|e| &e.set) {
        let v = match value {
            ValueSource::Literal(s) => Some(s.clone()),
            ValueSource::External(e) => {
                let read = match (&e.env, &e.file) {
                    (Some(var), None) => std::env::var(var).ok(),
                    (None, Some(file)) => std::fs::read_to_string(base_dir.join(file))
                        .ok()
                        .map(|s| s.trim_end_matches('\n').to_string()),
                    _ => {
                        return Err(format!(
                            "env.set.{name}: give exactly one of `env` or `file`"
                        ));
                    }
                };
                match (read, &e.default) {
                    (Some(v), _) => Some(v),
                    (None, Some(d)) => Some(d.clone()),
                    (None, None) if e.optional => None,
                    (None, None) => {
                        return Err(format!(
                            "env.set.{name}: the variable or file it names is missing (add `optional: true` to go on without it)"
                        ));
                    }
                }
            }
        };
        if let Some(v) = v {
            env.retain(|(k, _)| k != name);
            env.push((name.clone(), v));
        }
    }
    Ok(env)
}

fn lower(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().collect::<String>() + chars.as_str(),
        None => String::new(),
    }
}
