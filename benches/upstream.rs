//! What governing an upstream MCP server costs: `tools/call` round trips to
//! an upstream directly and through regent (decided by regent's policy,
//! then forwarded), and `tools/resolve` of the upstream's tool, which regent
//! answers alone. One run, side by side, sequential calls over stdio with
//! rmcp's client; p50/p90/p99 of 2,000 calls after 200 to warm up.
//!
//! The upstream is this bench binary itself, started with
//! `REGENT_BENCH_UPSTREAM=1`: an rmcp stdio server with one `echo` tool that
//! answers at once, so what is measured is the hop, not the tool.
//!
//!     cargo bench --bench upstream

use std::time::Instant;

use regent_testkit::rmcp_client::{self, Client, TestClient};
use regent_testkit::{Era, catalog};
use rmcp::ErrorData;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer, ServiceExt};
use serde_json::{Map, json};

const UPSTREAM_ENV: &str = "REGENT_BENCH_UPSTREAM";
const WARM: usize = 200;
const CALLS: usize = 2_000;

/// The upstream: one tool, `echo`, answering with its `text` argument.
#[derive(Clone)]
struct Echo;

impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("bench-echo", "1"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({"type": "object", "properties": {"text": {"type": "string"}, "mode": {"type": "string"}}});
        let serde_json::Value::Object(schema) = schema else {
            unreachable!()
        };
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "echo",
            "Answers with its text.",
            schema,
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = request
            .arguments
            .as_ref()
            .and_then(|a| a.get("text"))
            .and_then(|t| t.as_str())
            .unwrap_or_default()
            .to_string();
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![
            ContentBlock::text(text),
        ])))
    }
}

fn serve_upstream() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let server = Echo
            .serve((tokio::io::stdin(), tokio::io::stdout()))
            .await
            .expect("serve");
        let _ = server.waiting().await;
    });
}

/// rmcp's client (the kit's handler) on `cmd`, a 2025-11-25 session.
async fn connect(cmd: tokio::process::Command) -> (Client, tokio::process::Child) {
    rmcp_client::connect_stdio(cmd, TestClient::default(), rmcp_client::mode(Era::Legacy)).await
}

/// p50/p90/p99 in µs of `CALLS` sequential runs of `f`, after `WARM`.
async fn time<F: AsyncFnMut(usize)>(mut f: F) -> [f64; 3] {
    for i in 0..WARM {
        f(i).await;
    }
    let mut times = Vec::with_capacity(CALLS);
    for i in 0..CALLS {
        let t = Instant::now();
        f(i).await;
        times.push(t.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    let p = |q: f64| times[((times.len() as f64 - 1.0) * q) as usize];
    [p(0.5), p(0.9), p(0.99)]
}

fn echo_args(i: usize) -> Map<String, serde_json::Value> {
    let mut m = Map::new();
    m.insert("text".into(), json!(format!("hello {i}")));
    m.insert("mode".into(), json!("quiet"));
    m
}

async fn call(client: &Client, i: usize) {
    let r = client
        .call_tool(CallToolRequestParams::new("echo").with_arguments(echo_args(i)))
        .await
        .expect("tools/call");
    assert_eq!(r.is_error, Some(false), "{r:?}");
}

fn main() {
    if std::env::var_os(UPSTREAM_ENV).is_some() {
        return serve_upstream();
    }
    // `cargo bench` passes --bench; anything naming another bench skips this one.
    if std::env::args()
        .skip(1)
        .any(|a| !a.starts_with('-') && !"upstream".contains(&*a))
    {
        return;
    }
    let exe = std::env::current_exe().expect("the bench's own path");
    let upstreams = format!(
        "upstreams:\n  - name: bench\n    command: {exe:?}\n    env:\n      set: {{{UPSTREAM_ENV}: \"1\"}}\n    tools:\n      - name: echo\n        annotations: {{readOnlyHint: true, openWorldHint: false}}\n        resolve:\n          - when: {{mode: quiet}}\n            annotations: {{idempotentHint: true}}\n",
    );
    let dir = catalog(&[("upstream.yaml", &upstreams)]);
    regent_testkit::set_binary(env!("CARGO_BIN_EXE_regent"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut direct = tokio::process::Command::new(&exe);
        direct.env(UPSTREAM_ENV, "1");
        let (upstream, _u) = connect(direct).await;

        let mut through = tokio::process::Command::from(regent_testkit::regent());
        through
            .arg("serve")
            .arg(dir.path())
            .arg("--decision-log")
            .arg("/dev/null")
            .env("RUST_LOG", "regent=warn");
        let (regent, _r) = connect(through).await;

        let resolve = async |i: usize| {
            let params = json!({"name": "echo", "arguments": echo_args(i)});
            let v = rmcp_client::custom(&regent, "tools/resolve", params)
                .await
                .expect("tools/resolve");
            assert_eq!(v["annotations"]["idempotentHint"], json!(true), "{v}");
        };

        // Interleaved rounds, so that a disturbance of the machine lands on
        // both sides alike; each row reports its best round's percentiles.
        let mut rows: [(&str, Vec<[f64; 3]>); 3] = [
            ("`tools/call`, upstream directly", Vec::new()),
            ("`tools/call` through regent (policy, then forwarded)", Vec::new()),
            ("`tools/resolve` of the upstream's tool (regent alone)", Vec::new()),
        ];
        for _ in 0..3 {
            rows[0].1.push(time(async |i| call(&upstream, i).await).await);
            rows[1].1.push(time(async |i| call(&regent, i).await).await);
            rows[2].1.push(time(resolve).await);
        }
        println!("\n| sequential round trip, stdio, rmcp client | p50 | p90 | p99 |\n| --- | --- | --- | --- |");
        for (label, rounds) in &rows {
            let best = rounds
                .iter()
                .min_by(|a, b| a[0].total_cmp(&b[0]))
                .unwrap();
            println!(
                "| {label} | {:.0} µs | {:.0} µs | {:.0} µs |",
                best[0], best[1], best[2]
            );
        }
        let _ = regent.cancel().await;
        let _ = upstream.cancel().await;
    });
}
