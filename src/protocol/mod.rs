//! The MCP protocol layer: the only module that knows MCP wire types.
//!
//! [`Regent`] implements rmcp's `ServerHandler`. Each request takes one
//! catalog snapshot from [`CatalogState`] and keeps it until it answers.
//! `tools/resolve` and `tools/annotations` are not in rmcp, so they arrive
//! through its custom-request hook; [`answer`] decides and builds their
//! results, for every transport. The fields rmcp's typed `tools/list` and
//! capabilities cannot carry are put in place by `wire::hoist`. Deciding anything is the catalog's job; this
//! layer only translates.
//!
//! This file holds the [`Regent`] type, its construction and the
//! `ServerHandler` impl, one line per method; each method is answered in a
//! file of its own named after it (`initialize`, `discover`, `list_tools`,
//! `call`, `custom` routing to `resolve`, `listen`, `set_level`, `ping`,
//! and `unoffered` for prompts, resources and completions).

pub mod answer;
pub mod call;
mod count;
mod custom;
pub mod direct;
mod discover;
mod errors;
mod initialize;
pub mod input;
mod line;
mod list_tools;
mod listen;
pub mod negotiation;
mod notify;
pub mod pace;
pub mod parked;
mod ping;
mod resolve;
mod set_level;
pub mod spent;
pub mod transport;
mod unoffered;
pub mod upstream_requests;
pub mod wire;

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, CustomRequest,
    CustomResult, DiscoverResult, GetPromptRequestParams, GetPromptResponse,
    InitializeRequestParams, InitializeResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ServerConfig, SubscribeRequestParams,
    SubscriptionFilter, Tool as McpTool, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};

use crate::caller::Caller;
use crate::decisions::DecisionLog;
use crate::metrics::Metrics;
use crate::policy::spelled::Spelled;
use crate::state::CatalogState;
use count::Timed;
pub use errors::{INSUFFICIENT_SCOPE, INSUFFICIENT_SCOPE_CODE, Refusal, resolve_error};
pub use negotiation::Negotiated;
pub use resolve::{resolve_result, shadow_result};
use set_level::SessionLevel;

/// regent's MCP server: a view of the live catalog.
#[derive(Clone)]
pub struct Regent {
    state: Arc<CatalogState>,
    decisions: Arc<DecisionLog>,
    states: Arc<input::RequestStates>,
    /// Tools' listed members, serialized once per catalog revision.
    listed: Arc<answer::Listed>,
    /// Whether answers go out as JSON text (see `answer`).
    text: bool,
    /// The bound on tool executions running at once, over every session.
    calls: Arc<call::CallLimit>,
    /// The caller of every request that brings none of its own: the stdio
    /// server's `--caller-file`, trusted configuration.
    caller: Option<Arc<Caller>>,
    /// `serve --enforce-scopes`: a call runs only when the caller's token
    /// grants the OAuth scopes its resolved `securitySchemes` need.
    enforce_scopes: bool,
    /// The connected upstream MCP servers imported tools forward to.
    upstreams: Arc<crate::upstream::Upstreams>,
    /// 2026-07-28 forwarded calls parked between rounds, over every session.
    parked: Arc<parked::ParkedCalls>,
    /// Where answered requests are counted (`count`), when this server
    /// exports metrics.
    metrics: Option<Arc<Metrics>>,
    /// Where the handshake leaves what a stdio session negotiated, for
    /// [`direct`]; `None` for a server without a direct path (HTTP).
    session: Option<direct::Session>,
    /// The log level this 2025-11-25 session set (`logging/setLevel`), for
    /// the upstream log messages relayed to it. Each clone starts unset:
    /// rmcp makes each HTTP session's handler by cloning this one.
    log_level: SessionLevel,
    /// Which tools' evaluations (resolves, calls' resolvers and decisions,
    /// upstream requests, `visible` rules) run in place and which on a
    /// thread of their own (see [`pace`]): stdio's, whose one
    /// thread serves the session. `None` over HTTP, where each request is a
    /// task of its own on a multi-threaded runtime, and a slow evaluation
    /// holds one worker while the others go on: there, timing evaluations
    /// cost a fifth of resolve throughput (benches/http_auth.sh) and the
    /// scheduler's preemptions on a busy machine read as slow policies.
    pace: Option<Arc<pace::Pace>>,
}

impl Regent {
    /// A server whose decision log goes to standard error.
    ///
    /// `requestState` values are sealed with a key generated here; use
    /// [`Regent::with_request_states`] for a configured one.
    pub fn new(state: Arc<CatalogState>) -> Regent {
        let states = input::RequestStates::generated()
            .unwrap_or_else(|e| panic!("no request-state key: {e}"));
        Regent {
            state,
            decisions: Arc::new(DecisionLog::stderr(false)),
            states: Arc::new(states),
            listed: Arc::new(answer::Listed::default()),
            text: false,
            calls: Arc::new(call::CallLimit::new(
                call::DEFAULT_MAX_CONCURRENT_CALLS,
                Arc::new(crate::metrics::Metrics::new()),
            )),
            caller: None,
            enforce_scopes: false,
            upstreams: Arc::new(crate::upstream::Upstreams::default()),
            parked: parked::ParkedCalls::new(
                parked::MAX_PARKED,
                Arc::new(crate::metrics::Metrics::new()),
            ),
            metrics: None,
            session: None,
            log_level: SessionLevel::default(),
            pace: None,
        }
    }

    /// Takes `caller` as the caller of every request whose transport names
    /// none (stdio's `--caller-file`). Over HTTP the caller comes only from
    /// a verified token: `serve` refuses `--caller-file` with `--http`.
    pub fn with_caller(mut self, caller: Caller) -> Regent {
        self.caller = Some(Arc::new(caller));
        self
    }

    /// The caller of a request: the one its transport verified, else the
    /// configured one, else none.
    fn caller(&self, ctx: &RequestContext<RoleServer>) -> Option<Arc<Caller>> {
        caller_of(ctx).or_else(|| self.caller.clone())
    }

    /// Refuses a `tools/call` whose resolved `securitySchemes` the caller's
    /// scopes do not meet (`serve --enforce-scopes`, see `crate::scopes`).
    pub fn with_scope_enforcement(mut self, on: bool) -> Regent {
        self.enforce_scopes = on;
        self
    }

    /// Bounds tool executions with `limit` (shared by every clone).
    pub fn with_call_limit(mut self, limit: Arc<call::CallLimit>) -> Regent {
        self.calls = limit;
        self
    }

    /// The upstream MCP servers that imported tools' calls go to.
    pub fn with_upstreams(mut self, upstreams: Arc<crate::upstream::Upstreams>) -> Regent {
        self.upstreams = upstreams;
        self
    }

    /// Answers `tools/resolve` and `tools/annotations` with JSON text under
    /// `answer::RAW_KEY`, for a transport that writes it verbatim (the stdio
    /// [`transport::LineTransport`] does; rmcp's own transports do not).
    pub fn with_text_answers(mut self) -> Regent {
        self.text = true;
        self
    }

    /// Seals and opens `requestState` with `states` (a configured key).
    pub fn with_request_states(mut self, states: input::RequestStates) -> Regent {
        self.states = Arc::new(states);
        self
    }

    /// This server, and the [`direct::Direct`] that answers its stdio
    /// session's resolves without rmcp once the handshake is over. Call it
    /// last: the two share what the server is configured with now.
    pub fn with_direct(mut self) -> (Regent, direct::Direct) {
        let session = direct::Session::default();
        self.session = Some(session.clone());
        let pace = Arc::new(pace::Pace::default());
        self.pace = Some(pace.clone());
        let direct = direct::Direct::new(self.clone(), session, pace);
        (self, direct)
    }

    /// What answers this server's stateless 2026-07-28 `tools/resolve`
    /// POSTs over HTTP without rmcp ([`direct::HttpDirect`]): this server,
    /// configured as it is now, with its answers as text.
    pub fn http_direct(&self) -> direct::HttpDirect {
        direct::HttpDirect::new(self.clone().with_text_answers())
    }

    /// Sends decision-log lines to `log` instead.
    pub fn with_decision_log(mut self, log: Arc<DecisionLog>) -> Regent {
        self.decisions = log;
        self
    }

    /// Counts every answered request in `metrics` (see `count`). Off by
    /// default: only the HTTP server renders metrics.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Regent {
        self.parked = parked::ParkedCalls::new(parked::MAX_PARKED, metrics.clone());
        self.metrics = Some(metrics);
        self
    }

    /// Counts one answered request, when metrics are on.
    fn record<T>(
        &self,
        method: &'static str,
        timed: Timed,
        started: Instant,
        result: &Result<T, ErrorData>,
        outcome_ok: impl FnOnce(&T) -> &'static str,
    ) {
        if let Some(metrics) = &self.metrics {
            count::record(metrics, method, timed, started, result, outcome_ok);
        }
    }

    /// `result`, counted as an answer to `method` (not timed).
    fn counted<T>(
        &self,
        method: &'static str,
        result: Result<T, ErrorData>,
    ) -> Result<T, ErrorData> {
        self.record(method, Timed::No, Instant::now(), &result, count::ok);
        result
    }
}

/// Whether this request uses the 2026-07-28 protocol, which has `resultType`.
fn has_result_type(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

/// The verified caller of a request, when its transport put one there: over
/// HTTP, rmcp hands the handler the request's `http::request::Parts`, whose
/// extensions hold the `Caller` the HTTP layer verified. Over stdio, and
/// over HTTP without JWT verification, there is none.
pub fn caller_of(ctx: &RequestContext<RoleServer>) -> Option<Arc<Caller>> {
    ctx.extensions
        .get::<http::request::Parts>()
        .and_then(|p| p.extensions.get::<Arc<Caller>>())
        .cloned()
}

/// Scans a request's text for numbers spelled by hand (`policy::spelled`),
/// for a transport to put in the request's extensions where
/// [`spelled_of`] finds them; here so that `http` reads the wire without
/// knowing `policy`.
pub fn scan_spelled(text: &[u8]) -> Option<Arc<Spelled>> {
    crate::policy::spelled::scan(text)
}

/// The numbers of a caller's claims (`text`, a token's decoded payload)
/// spelled by hand, for `Caller::spelled`; here so that `http` reads a
/// token without knowing `policy`.
pub fn claims_spelled(text: &[u8]) -> Vec<Box<str>> {
    crate::policy::spelled::claim_numbers(text)
}

/// The numbers the request spelled by hand (`policy::spelled`), when its
/// transport found any in its text: over stdio in the message's own
/// extensions (`transport`), over HTTP in the request's `Parts` (`http`,
/// which reads every POST body before rmcp does).
pub fn spelled_of(ctx: &RequestContext<RoleServer>) -> Option<Arc<Spelled>> {
    ctx.extensions.get::<Arc<Spelled>>().cloned().or_else(|| {
        ctx.extensions
            .get::<http::request::Parts>()
            .and_then(|p| p.extensions.get::<Arc<Spelled>>())
            .cloned()
    })
}

/// Each method is answered in a file of its own (named after it) and
/// delegated here in one line.
impl ServerHandler for Regent {
    fn get_info(&self) -> ServerConfig {
        self.answer_get_info()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.answer_list_tools(request, ctx).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.answer_call_tool(request, ctx).await
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        self.answer_custom_request(request, ctx).await
    }

    async fn on_initialized(&self, ctx: NotificationContext<RoleServer>) {
        self.answer_initialized(ctx).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.answer_accepted_subscription_filter(requested)
    }

    async fn listen(&self, sub: SubscriptionContext) -> Result<(), ErrorData> {
        self.answer_listen(sub).await
    }

    fn get_tool(&self, name: &str) -> Option<McpTool> {
        self.answer_get_tool(name)
    }

    // The methods below answer as rmcp's defaults do; regent implements them
    // only to count them (`count`).
    async fn ping(&self, ctx: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.answer_ping(ctx).await
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        self.answer_initialize(request, ctx).await
    }

    async fn discover(&self, ctx: RequestContext<RoleServer>) -> Result<DiscoverResult, ErrorData> {
        self.answer_discover(ctx).await
    }

    #[allow(deprecated)] // logging is deprecated (SEP-2577); 2025-11-25 clients may still send it
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.answer_set_level(request, ctx).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.answer_get_prompt(request, ctx).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.answer_read_resource(request, ctx).await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.answer_subscribe(request, ctx).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.answer_unsubscribe(request, ctx).await
    }

    // regent declares neither prompts, resources nor completions, so it does
    // not answer for them (rmcp's defaults answer with empty lists, which
    // would claim features the capabilities deny).
    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.answer_list_prompts(request, ctx).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.answer_list_resources(request, ctx).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.answer_list_resource_templates(request, ctx).await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.answer_complete(request, ctx).await
    }
}
