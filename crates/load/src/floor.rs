//! The bare-axum floor (issue 32): what one HTTP resolve costs with nothing
//! but the HTTP stack regent is built on.
//!
//! An axum server on 127.0.0.1, on a tokio runtime with one worker per core
//! (as `regent serve --http` runs), whose `POST /mcp` parses the JSON-RPC
//! body and answers a fixed result with the request's id: a one-tool
//! listing for `tools/list`, a resolved `manage_files` for anything else.
//! No MCP, no policy, no session: the gap between it and regent over HTTP
//! in the same run is what regent's HTTP path (rmcp's Streamable HTTP
//! service, guards, rewriting) costs. It runs inside the load generator,
//! on threads of its own, so no binary has to be found; its answers are
//! not checked against the SEP's table (they are fixed by design).

use std::net::SocketAddr;
use std::thread;

use axum::Router;
use axum::body::Bytes;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::Value;
use tokio::sync::oneshot;

const LIST: &str = r#"{"tools":[{"name":"manage_files","description":"Read, write or delete files","inputSchema":{"type":"object","properties":{"action":{"type":"string","enum":["read","write","delete","list"]},"path":{"type":"string"}},"required":["action","path"]},"annotations":{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":false}}]}"#;
const RESOLVED: &str = r#"{"tool":{"name":"manage_files","description":"Read, write or delete files","inputSchema":{"type":"object","properties":{"action":{"type":"string","enum":["read","write","delete","list"]},"path":{"type":"string"}},"required":["action","path"]},"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}}}"#;

/// The floor, serving until dropped.
pub struct Floor {
    pub port: u16,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Floor {
    pub fn start() -> Result<Floor, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("floor")
            .build()
            .map_err(|e| format!("cannot start the floor's runtime: {e}"))?;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind(SocketAddr::from((
                [127, 0, 0, 1],
                0,
            ))))
            .map_err(|e| format!("cannot bind the floor: {e}"))?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = thread::Builder::new()
            .name("floor".into())
            .spawn(move || {
                let app = Router::new().route("/mcp", post(answer));
                let _ = runtime.block_on(async move {
                    axum::serve(listener, app)
                        .with_graceful_shutdown(async {
                            let _ = stopped.await;
                        })
                        .await
                });
            })
            .map_err(|e| e.to_string())?;
        Ok(Floor {
            port,
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Floor {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        // Keep-alive connections end with the clients, which are dropped
        // before the floor; do not wait on one that lingers.
        if let Some(t) = self.thread.take() {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
            while !t.is_finished() && std::time::Instant::now() < deadline {
                thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

async fn answer(body: Bytes) -> Response {
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let result = match request.get("method").and_then(Value::as_str) {
        Some("tools/list") => LIST,
        _ => RESOLVED,
    };
    let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#);
    ([(header::CONTENT_TYPE, "application/json")], text).into_response()
}
