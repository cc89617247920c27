//! rmcp's client (an MCP implementation independent of regent's and of the
//! kit's raw [`Server`](crate::Server)), for the tests and benches that want
//! a typed client: one handler ([`TestClient`]), the protocol era as rmcp's
//! lifecycle mode ([`mode`]), a child process connected over stdio
//! ([`connect_stdio`]) and the proposals' custom requests ([`custom`]).

use std::process::Stdio;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    ClientCapabilities, ClientRequest, CustomRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, Implementation, InitializeRequestParams, ProtocolVersion, ServerResult,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, RequestContext, RoleClient, RunningService,
};
use rmcp::{ClientHandler, ServiceError};
use serde_json::{Value, json};

use crate::Era;

/// A connected rmcp client with the kit's handler.
pub type Client = RunningService<RoleClient, TestClient>;

/// rmcp's client handler, answering elicitation as told: `None` declares no
/// elicitation capability at all. Every question asked is recorded in
/// `asked` (its message), so tests can count them.
/// `roots`, when set, declares the roots capability and is what
/// `roots/list` answers (URIs); `answers` fills an accepted question's
/// fields by name. The default declares no capability: a plain client.
#[derive(Clone, Default)]
pub struct TestClient {
    pub elicit: Option<ElicitationAction>,
    pub asked: Arc<Mutex<Vec<String>>>,
    pub roots: Option<Vec<String>>,
    pub answers: serde_json::Map<String, Value>,
    /// How many times `roots/list` was answered.
    pub roots_listed: Arc<Mutex<usize>>,
    /// When set, declares the sampling capability; `sampling/createMessage`
    /// answers with this text (model `test-model`).
    pub sample: Option<String>,
    /// Every `notifications/progress` received, as received (rmcp handles
    /// each notification on a task of its own: not necessarily in order).
    pub progress: Arc<Mutex<Vec<rmcp::model::ProgressNotificationParam>>>,
    /// Every `notifications/message` received, likewise.
    #[allow(deprecated)]
    pub logs: Arc<Mutex<Vec<rmcp::model::LoggingMessageNotificationParam>>>,
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
        if self.sample.is_some() {
            caps.sampling = Some(Default::default());
        }
        InitializeRequestParams::new(caps, Implementation::new("regent-tests", "1"))
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

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _ctx: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params);
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _ctx: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.logs.lock().unwrap().push(params);
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        _params: rmcp::model::CreateMessageRequestParams,
        _ctx: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        let text = self.sample.clone().expect("sampled without the capability");
        Ok(serde_json::from_value(json!({
            "role": "assistant", "model": "test-model",
            "content": {"type": "text", "text": text}
        }))
        .unwrap())
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
pub fn mode(era: Era) -> ClientLifecycleMode {
    match era {
        Era::Legacy => ClientLifecycleMode::Initialize,
        Era::Modern => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    }
}

/// Starts `cmd` (e.g. `tokio::process::Command::from(regent())` with its
/// arguments, or any MCP server) with stdin and stdout piped, and connects
/// `handler` to it over stdio in `mode`. Standard error is as `cmd` says.
/// Dropping the child kills the process.
pub async fn connect_stdio(
    mut cmd: tokio::process::Command,
    handler: TestClient,
    mode: ClientLifecycleMode,
) -> (Client, tokio::process::Child) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the server");
    let stdout = child.stdout.take().expect("stdout");
    let stdin = child.stdin.take().expect("stdin");
    let client = handler
        .serve_with_lifecycle((stdout, stdin), mode)
        .await
        .expect("connect");
    (client, child)
}

/// A request rmcp has no type for (`tools/resolve`, `tools/annotations`);
/// the result as JSON.
pub async fn custom(client: &Client, method: &str, params: Value) -> Result<Value, ServiceError> {
    let req = ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)));
    let result: ServerResult = client.peer().send_request(req).await?;
    Ok(serde_json::to_value(&result).expect("result serializes"))
}
