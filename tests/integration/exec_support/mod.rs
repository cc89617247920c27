//! Test support for `tools/call`: start the real `regent` binary on a
//! catalog in a temp dir and drive it with rmcp's client (an independent MCP
//! implementation) in either protocol era.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use rmcp::ServiceError;
use rmcp::model::{CallToolRequestParams, ElicitationAction};
use serde_json::{Value, json};

use crate::common::rmcp_client::{self, Client, TestClient};
use crate::common::{self, Era};

pub use common::catalog;

/// A running `regent serve` with a connected client.
pub struct Regent {
    pub client: Client,
    pub child: tokio::process::Child,
    pub era: Era,
    /// The decision log file.
    pub log: PathBuf,
    _log_dir: tempfile::TempDir,
}

/// How to start regent.
pub struct Start<'a> {
    pub catalog: &'a Path,
    pub env: Vec<(&'a str, String)>,
    pub removed: Vec<&'a str>,
    pub extra_args: Vec<&'a str>,
    /// How the client answers elicitation (default: accept).
    pub elicit: Option<ElicitationAction>,
    pub roots: Option<Vec<String>>,
    pub answers: serde_json::Map<String, Value>,
}

impl<'a> Start<'a> {
    pub fn new(catalog: &'a Path) -> Start<'a> {
        Start {
            catalog,
            env: Vec::new(),
            removed: Vec::new(),
            extra_args: Vec::new(),
            elicit: Some(ElicitationAction::Accept),
            roots: None,
            answers: serde_json::Map::new(),
        }
    }

    /// The client declares roots and lists these URIs.
    pub fn roots(mut self, uris: &[&str]) -> Self {
        self.roots = Some(uris.iter().map(|u| u.to_string()).collect());
        self
    }

    /// An accepted question's field `name` is answered with `value`.
    pub fn answer(mut self, name: &str, value: Value) -> Self {
        self.answers.insert(name.to_string(), value);
        self
    }

    /// The client answers every question with `action`; `None`: it
    /// declares no elicitation capability.
    pub fn elicit(mut self, action: Option<ElicitationAction>) -> Self {
        self.elicit = action;
        self
    }

    pub fn without(mut self, k: &'a str) -> Self {
        self.removed.push(k);
        self
    }

    pub fn env(mut self, k: &'a str, v: impl Into<String>) -> Self {
        self.env.push((k, v.into()));
        self
    }

    pub fn arg(mut self, a: &'a str) -> Self {
        self.extra_args.push(a);
        self
    }

    pub async fn connect(self, era: Era) -> Regent {
        let log_dir = tempfile::tempdir().unwrap();
        let log = log_dir.path().join("decisions.jsonl");
        // The kit's command, with the log level this kit's tests expect.
        let mut cmd = tokio::process::Command::from(common::regent());
        cmd.arg("serve")
            .arg(self.catalog)
            .arg("--decision-log")
            .arg(&log)
            .args(&self.extra_args)
            .env("RUST_LOG", "regent=warn,rmcp=error")
            .stderr(Stdio::inherit());
        for k in &self.removed {
            cmd.env_remove(k);
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let handler = TestClient {
            elicit: self.elicit.clone(),
            roots: self.roots.clone(),
            answers: self.answers.clone(),
            ..TestClient::default()
        };
        let (client, child) =
            rmcp_client::connect_stdio(cmd, handler, rmcp_client::mode(era)).await;
        Regent {
            client,
            child,
            era,
            log,
            _log_dir: log_dir,
        }
    }
}

impl Regent {
    /// regent's process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("regent is running")
    }

    /// `tools/call`; the result as JSON. A JSON-RPC error panics.
    pub async fn call(&self, tool: &str, args: Value) -> Value {
        match self.try_call(tool, args.clone()).await {
            Ok(v) => v,
            Err(e) => panic!("{:?}: tools/call {tool} {args} failed: {e}", self.era),
        }
    }

    pub async fn try_call(&self, tool: &str, args: Value) -> Result<Value, ServiceError> {
        let Value::Object(obj) = args else {
            panic!("arguments must be an object")
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(obj);
        let r = self.client.call_tool(params).await?;
        Ok(serde_json::to_value(&r).expect("result serializes"))
    }

    /// `tools/resolve` as a custom request; the result as JSON.
    pub async fn resolve(&self, tool: &str, args: Value) -> Value {
        let params = json!({"name": tool, "arguments": args});
        rmcp_client::custom(&self.client, "tools/resolve", params)
            .await
            .unwrap_or_else(|e| panic!("tools/resolve {tool}: {e}"))
    }

    /// Every complete decision-log line so far. The writer thread may be
    /// in the middle of appending one (a large batch takes more than one
    /// `write`), so a last line without its newline is not read yet.
    pub fn decisions(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let complete = text.rfind('\n').map_or("", |end| &text[..end]);
        complete
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad log line {l}: {e}")))
            .collect()
    }

    /// Every decision-log line so far, once `ready` holds for them. regent
    /// writes the log from a thread of its own, a moment after it answers,
    /// so a test waits for the lines it expects (up to 20 s, then returns
    /// what there is for the assertion to show).
    pub fn decisions_when(&self, ready: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let lines = self.decisions();
            if ready(&lines) || std::time::Instant::now() > deadline {
                return lines;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// The decision-log line with this id (waiting for it as
    /// [`Self::decisions_when`] does): for a call that ran something, its
    /// `outcome` line, not the `intent` line written before it ran. Lines
    /// are written in order, so every decision made before it is in the
    /// log too.
    pub fn decision(&self, id: &str) -> Value {
        let done = |d: &Value| d["id"] == json!(id) && d["phase"] != json!("intent");
        self.decisions_when(|lines| lines.iter().any(done))
            .into_iter()
            .find(done)
            .unwrap_or_else(|| {
                panic!(
                    "no decision {id} in the log:\n{}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                )
            })
    }

    /// The messages of every question the client was asked so far.
    pub fn asked(&self) -> Vec<String> {
        self.client.service().asked.lock().unwrap().clone()
    }

    /// How many times the client answered `roots/list`.
    pub fn roots_listed(&self) -> usize {
        *self.client.service().roots_listed.lock().unwrap()
    }

    pub async fn close(self) {
        let _ = self.client.cancel().await;
    }
}

/// Whether process `pid` is still running (a zombie is not running).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            // The state is the first field after the parenthesised command name.
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .unwrap_or("?");
            state != "Z" && state != "X"
        }
    }
}
