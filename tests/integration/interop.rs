//! An independent client, rmcp's, driving the real binary in both protocol
//! eras: the handshake (or its absence), typed `tools/list`, and
//! `tools/resolve` / `tools/annotations` sent as custom requests.

use crate::common;

use rmcp::model::{
    ClientCapabilities, ClientRequest, CustomRequest, Implementation, InitializeRequestParams,
    ProtocolVersion, ServerResult,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceError};
use serde_json::{Value, json};

#[derive(Clone)]
struct TestClient;

impl ClientHandler for TestClient {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        InitializeRequestParams::new(
            ClientCapabilities::default(),
            Implementation::new("regent-interop", "1"),
        )
    }
}

async fn connect(
    mode: ClientLifecycleMode,
) -> (
    RunningService<RoleClient, TestClient>,
    tokio::process::Child,
) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_regent"))
        .arg("serve")
        .arg(common::repo_path("examples/manage_files"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start regent");
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    let client = TestClient
        .serve_with_lifecycle((stdout, stdin), mode)
        .await
        .expect("connect");
    (client, child)
}

async fn custom(
    client: &RunningService<RoleClient, TestClient>,
    method: &str,
    params: Value,
) -> Result<Value, ServiceError> {
    let req = ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)));
    let result: ServerResult = client.peer().send_request(req).await?;
    Ok(serde_json::to_value(&result).expect("result serializes"))
}

async fn exercise(mode: ClientLifecycleMode, era: &str) {
    let (client, _child) = connect(mode).await;
    let tools = client.peer().list_tools(None).await.expect("tools/list");
    assert_eq!(tools.tools.len(), 1, "{era}");
    let tool = &tools.tools[0];
    assert_eq!(tool.name, "manage_files", "{era}");
    let listed = tool.annotations.as_ref().expect("annotations");
    assert_eq!(listed.destructive_hint, Some(true), "{era}");
    assert_eq!(listed.read_only_hint, Some(false), "{era}");

    for (action, read_only, destructive, idempotent) in [
        ("read", true, false, true),
        ("append", false, false, false),
        ("replace", false, true, true),
        ("delete", false, true, true),
    ] {
        let r = custom(
            &client,
            "tools/resolve",
            json!({"name": "manage_files", "arguments": {"path": "a", "action": action}}),
        )
        .await
        .unwrap_or_else(|e| panic!("{era} resolve {action}: {e}"));
        let want = json!({"readOnlyHint": read_only, "destructiveHint": destructive, "idempotentHint": idempotent, "openWorldHint": false});
        assert_eq!(r["tool"]["annotations"], want, "{era} {action}: {r}");
        assert_eq!(r["annotations"], want, "{era} {action}: {r}");

        let a = custom(
            &client,
            "tools/annotations",
            json!({"name": "manage_files", "arguments": {"path": "a", "action": action}}),
        )
        .await
        .unwrap_or_else(|e| panic!("{era} annotations {action}: {e}"));
        assert_eq!(a["annotations"], want, "{era} {action}: {a}");
    }

    match custom(
        &client,
        "tools/resolve",
        json!({"name": "ghost", "arguments": {}}),
    )
    .await
    {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code.0, -32602, "{era}");
            assert_eq!(
                e.data.as_ref().map(|d| d["tool"].clone()),
                Some(json!("ghost"))
            );
        }
        other => panic!("{era}: unknown tool answered {other:?}"),
    }
    client.cancel().await.expect("close");
}

#[tokio::test]
async fn rmcp_client_legacy_initialize() {
    exercise(ClientLifecycleMode::Initialize, "2025-11-25").await;
}

#[tokio::test]
async fn rmcp_client_2026_discover() {
    exercise(
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
        "2026-07-28",
    )
    .await;
}
