//! An independent client, rmcp's, driving the real binary in both protocol
//! eras and over both transports: the handshake (or its absence), typed
//! `tools/list`, and `tools/resolve` / `tools/annotations` sent as custom
//! requests. Over Streamable HTTP it is rmcp's own reqwest-based client
//! (independent of our raw test client) against `serve --http` with a
//! bearer token, which a wrong token does not get past.

use crate::common;

use common::Era;
use common::http::HttpServer;
use common::regent;
use common::rmcp_client::{Client, TestClient, connect_stdio, custom, mode};
use rmcp::ServiceError;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;

const TOKEN: &str = "interop-token-0123456789";

/// The server behind a client: a child on stdio (held: dropping it kills
/// the server), or an HTTP server.
enum Serving {
    Stdio { _child: tokio::process::Child },
    Http(HttpServer),
}

async fn connect_regent_stdio(mode: ClientLifecycleMode) -> (Client, Serving) {
    let mut cmd = tokio::process::Command::from(regent());
    cmd.arg("serve")
        .arg(common::repo_path("examples/manage_files"))
        .stderr(std::process::Stdio::null());
    let (client, child) = connect_stdio(cmd, TestClient::default(), mode).await;
    (client, Serving::Stdio { _child: child })
}

fn start_http() -> HttpServer {
    let mut cmd = regent();
    cmd.env("REGENT_AUTH_TOKEN", TOKEN)
        .args(["serve", "--http", "127.0.0.1:0"])
        .arg(common::repo_path("examples/manage_files"));
    HttpServer::spawn(cmd)
}

async fn connect_http(
    server: &HttpServer,
    mode: ClientLifecycleMode,
    token: &str,
) -> Result<Client, String> {
    // regent builds reqwest without a rustls crypto provider (see
    // exec/http.rs); rmcp's client builds a reqwest client too, so the
    // provider must be installed first, even for plain http.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.url("/mcp")).auth_header(token),
    );
    TestClient::default()
        .serve_with_lifecycle(transport, mode)
        .await
        .map_err(|e| e.to_string())
}

async fn exercise(http: bool, mode: ClientLifecycleMode, era: &str) {
    let (client, serving) = if http {
        let server = start_http();
        let client = connect_http(&server, mode.clone(), TOKEN)
            .await
            .unwrap_or_else(|e| panic!("{era}: connect: {e}\n{}", server.stderr()));
        (client, Serving::Http(server))
    } else {
        connect_regent_stdio(mode.clone()).await
    };
    let negotiated = client
        .peer()
        .peer_info()
        .map(|i| i.protocol_version.to_string());
    assert_eq!(negotiated.as_deref(), Some(era));

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
        let args = json!({"name": "manage_files", "arguments": {"path": "a", "action": action}});
        let want = json!({"readOnlyHint": read_only, "destructiveHint": destructive, "idempotentHint": idempotent, "openWorldHint": false});
        let r = custom(&client, "tools/resolve", args.clone())
            .await
            .unwrap_or_else(|e| panic!("{era} resolve {action}: {e}"));
        assert_eq!(r["tool"]["annotations"], want, "{era} {action}: {r}");
        assert_eq!(r["annotations"], want, "{era} {action}: {r}");
        let a = custom(&client, "tools/annotations", args)
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

    if let Serving::Http(server) = &serving {
        // The same client with a wrong token does not get in.
        assert!(
            connect_http(server, mode, "not-the-token").await.is_err(),
            "{era}: a wrong token was accepted"
        );
    }
}

#[tokio::test]
async fn rmcp_client_legacy_initialize() {
    exercise(false, ClientLifecycleMode::Initialize, "2025-11-25").await;
}

#[tokio::test]
async fn rmcp_client_2026_discover() {
    exercise(false, mode(Era::Modern), "2026-07-28").await;
}

#[tokio::test]
async fn rmcp_http_client_legacy_initialize() {
    exercise(true, ClientLifecycleMode::Initialize, "2025-11-25").await;
}

#[tokio::test]
async fn rmcp_http_client_2026_discover() {
    exercise(true, mode(Era::Modern), "2026-07-28").await;
}
