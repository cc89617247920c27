//! Test support for `tools/call`: start the real `regent` binary on a
//! catalog in a temp dir and drive it with rmcp's client (an independent MCP
//! implementation) in either protocol era.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientRequest, CustomRequest, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation, InitializeRequestParams, ProtocolVersion,
    ServerResult,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, RequestContext, RoleClient, RunningService,
};
use rmcp::{ClientHandler, ServiceError};
use serde_json::{Value, json};

use crate::common::{self, Era};

/// rmcp's client, answering elicitation as told: `None` declares no
/// elicitation capability at all. Every question asked is recorded in
/// `asked` (its message), so tests can count them.
/// `roots`, when set, declares the roots capability and is what
/// `roots/list` answers (URIs); `answers` fills an accepted question's
/// fields by name.
#[derive(Clone)]
pub struct TestClient {
    pub elicit: Option<ElicitationAction>,
    pub asked: Arc<Mutex<Vec<String>>>,
    pub roots: Option<Vec<String>>,
    pub answers: serde_json::Map<String, Value>,
    /// How many times `roots/list` was answered.
    pub roots_listed: Arc<Mutex<usize>>,
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut caps = ClientCapabilities::default();
        if self.elicit.is_some() {
            caps.elicitation = Some(serde_json::from_value(json!({"form": {}})).unwrap());
        }
        if self.roots.is_some() {
            caps.roots = Some(Default::default());
        }
        InitializeRequestParams::new(caps, Implementation::new("regent-exec-tests", "1"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _ctx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let (message, fields) = match &request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => {
                let schema = serde_json::to_value(requested_schema).unwrap();
                let fields: Vec<String> = schema["properties"]
                    .as_object()
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default();
                (message.clone(), fields)
            }
            other => (format!("{other:?}"), Vec::new()),
        };
        self.asked.lock().unwrap().push(message);
        let action = self.elicit.clone().expect("asked without the capability");
        let content = matches!(action, ElicitationAction::Accept).then(|| {
            let mut c = serde_json::Map::new();
            for f in fields {
                if let Some(v) = self.answers.get(&f) {
                    c.insert(f, v.clone());
                }
            }
            c
        });
        let mut r = ElicitResult::new(action);
        r.content = content.map(Value::Object);
        Ok(r)
    }

    #[allow(deprecated)]
    async fn list_roots(
        &self,
        _ctx: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        *self.roots_listed.lock().unwrap() += 1;
        let roots: Vec<Value> = self
            .roots
            .clone()
            .expect("roots listed without the capability")
            .into_iter()
            .map(|uri| json!({"uri": uri}))
            .collect();
        Ok(serde_json::from_value(json!({ "roots": roots })).unwrap())
    }
}

/// The protocol era as rmcp's client lifecycle mode.
fn mode(era: Era) -> ClientLifecycleMode {
    match era {
        Era::Legacy => ClientLifecycleMode::Initialize,
        Era::Modern => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    }
}

/// A running `regent serve` with a connected client.
pub struct Regent {
    pub client: RunningService<RoleClient, TestClient>,
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
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        for k in &self.removed {
            cmd.env_remove(k);
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start regent");
        let stdout = child.stdout.take().unwrap();
        let stdin = child.stdin.take().unwrap();
        let handler = TestClient {
            elicit: self.elicit.clone(),
            asked: Arc::new(Mutex::new(Vec::new())),
            roots: self.roots.clone(),
            answers: self.answers.clone(),
            roots_listed: Arc::new(Mutex::new(0)),
        };
        let client = handler
            .serve_with_lifecycle((stdout, stdin), mode(era))
            .await
            .expect("connect to regent");
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
        let req = ClientRequest::CustomRequest(CustomRequest::new(
            "tools/resolve",
            Some(json!({"name": tool, "arguments": args})),
        ));
        let r: ServerResult = self
            .client
            .peer()
            .send_request(req)
            .await
            .unwrap_or_else(|e| panic!("tools/resolve {tool}: {e}"));
        serde_json::to_value(&r).unwrap()
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
    /// [`Self::decisions_when`] does). Lines are written in order, so every
    /// decision made before it is in the log too.
    pub fn decision(&self, id: &str) -> Value {
        self.decisions_when(|lines| lines.iter().any(|d| d["id"] == json!(id)))
            .into_iter()
            .find(|d| d["id"] == json!(id))
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

/// Writes `files` (name, content) into a fresh temp dir.
pub fn catalog(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in files {
        let path = dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, content).unwrap();
    }
    dir
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
