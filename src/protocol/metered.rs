//! Counting MCP requests: a `ServerHandler` that passes every method to the
//! handler it wraps and records, per request, the method, the outcome and
//! (for `tools/resolve`, `tools/annotations` and `tools/call`) the latency.
//!
//! This is the protocol layer's only contact with [`Metrics`]: the handler it
//! wraps stays unaware of metrics, and the HTTP layer counts HTTP responses,
//! never MCP methods. Every `ServerHandler` method is forwarded explicitly
//! (rmcp's version is pinned), so whatever the inner handler overrides keeps
//! working through the wrapper.
//!
//! Requests that rmcp answers before any handler method runs (a 2026-07-28
//! request without its `_meta`, an unsupported protocol version, `ping` in
//! the 2026-07-28 era) are not counted here; over HTTP they still show in
//! the HTTP response counts.

#![allow(deprecated)] // `subscribe`/`unsubscribe` are legacy-only but still forwarded.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CancelledNotificationParam,
    CompleteRequestParams, CompleteResult, CustomNotification, CustomRequest, CustomResult,
    DiscoverResult, ErrorCode, GetPromptRequestParams, GetPromptResponse, GetSkillRequestParams,
    GetSkillResult, GetTaskParams, GetTaskResult, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListSkillsResult,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion,
    ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult, ReadResourceRequestParams,
    ReadResourceResponse, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
    SubscriptionFilter, Tool, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};

use crate::metrics::Metrics;

/// A handler whose requests are counted in `metrics`.
#[derive(Clone)]
pub struct Metered<H> {
    inner: H,
    metrics: Arc<Metrics>,
}

impl<H> Metered<H> {
    pub fn new(inner: H, metrics: Arc<Metrics>) -> Metered<H> {
        Metered { inner, metrics }
    }
}

/// Which latency histogram a method feeds, if any.
#[derive(Clone, Copy, PartialEq)]
enum Timed {
    No,
    Resolve,
    Call,
}

/// The label for a custom method: the known ones by name, anything else as
/// `other`, so clients cannot grow the number of series.
fn custom_label(method: &str) -> &'static str {
    match method {
        "tools/resolve" => "tools/resolve",
        "tools/annotations" => "tools/annotations",
        // rmcp routes a spec method whose params did not parse here too.
        "tools/call" => "tools/call",
        "tools/list" => "tools/list",
        "initialize" => "initialize",
        "server/discover" => "server/discover",
        "ping" => "ping",
        "subscriptions/listen" => "subscriptions/listen",
        _ => "other",
    }
}

/// The outcome label of a JSON-RPC error.
fn error_outcome(e: &ErrorData) -> &'static str {
    match e.code {
        ErrorCode::INVALID_PARAMS => "invalid_params",
        ErrorCode::METHOD_NOT_FOUND => "method_not_found",
        ErrorCode::INTERNAL_ERROR => "internal_error",
        ErrorCode::INVALID_REQUEST => "invalid_request",
        _ => "error",
    }
}

/// The reason a policy evaluation failed, as `protocol::errors` records it in
/// the error's `data.reason`; `None` for errors that are not policy failures.
fn policy_failure(e: &ErrorData) -> Option<&'static str> {
    let reason = e.data.as_ref()?.get("reason")?.as_str()?;
    match reason {
        "policy-error" => Some("policy-error"),
        "policy-timeout" => Some("policy-timeout"),
        "policy-memory" => Some("policy-memory"),
        "riskier-than-listed" => Some("riskier-than-listed"),
        _ => None,
    }
}

impl<H> Metered<H> {
    /// Records one answered request.
    fn record<T>(
        &self,
        method: &'static str,
        timed: Timed,
        started: Instant,
        result: &Result<T, ErrorData>,
        outcome_ok: impl FnOnce(&T) -> &'static str,
    ) {
        let elapsed = started.elapsed();
        match timed {
            Timed::Resolve => self.metrics.resolve_seconds.observe(elapsed),
            Timed::Call => self.metrics.call_seconds.observe(elapsed),
            Timed::No => {}
        }
        let outcome = match result {
            Ok(v) => outcome_ok(v),
            Err(e) => {
                if let Some(reason) = policy_failure(e) {
                    self.metrics.count_policy_error(reason);
                }
                error_outcome(e)
            }
        };
        self.metrics.count_request(method, outcome);
    }
}

fn ok<T>(_: &T) -> &'static str {
    "ok"
}

impl<H: ServerHandler> ServerHandler for Metered<H> {
    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        let t = Instant::now();
        let r = self.inner.ping(context).await;
        self.record("ping", Timed::No, t, &r, ok);
        r
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let t = Instant::now();
        let r = self.inner.initialize(request, context).await;
        self.record("initialize", Timed::No, t, &r, ok);
        r
    }

    fn negotiate_initialize(
        &self,
        request: &InitializeRequestParams,
    ) -> Result<InitializeResult, ErrorData> {
        self.inner.negotiate_initialize(request)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.inner.supported_protocol_versions()
    }

    async fn discover(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        let t = Instant::now();
        let r = self.inner.discover(context).await;
        self.record("server/discover", Timed::No, t, &r, ok);
        r
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let t = Instant::now();
        let r = self.inner.complete(request, context).await;
        self.record("completion/complete", Timed::No, t, &r, ok);
        r
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let t = Instant::now();
        let r = self.inner.set_level(request, context).await;
        self.record("logging/setLevel", Timed::No, t, &r, ok);
        r
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let t = Instant::now();
        let r = self.inner.get_prompt(request, context).await;
        self.record("prompts/get", Timed::No, t, &r, ok);
        r
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let t = Instant::now();
        let r = self.inner.list_prompts(request, context).await;
        self.record("prompts/list", Timed::No, t, &r, ok);
        r
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let t = Instant::now();
        let r = self.inner.list_resources(request, context).await;
        self.record("resources/list", Timed::No, t, &r, ok);
        r
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let t = Instant::now();
        let r = self.inner.list_resource_templates(request, context).await;
        self.record("resources/templates/list", Timed::No, t, &r, ok);
        r
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let t = Instant::now();
        let r = self.inner.read_resource(request, context).await;
        self.record("resources/read", Timed::No, t, &r, ok);
        r
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        self.inner.accepted_subscription_filter(requested)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let t = Instant::now();
        let r = self.inner.listen(context).await;
        self.record("subscriptions/listen", Timed::No, t, &r, ok);
        r
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let t = Instant::now();
        let r = self.inner.subscribe(request, context).await;
        self.record("resources/subscribe", Timed::No, t, &r, ok);
        r
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let t = Instant::now();
        let r = self.inner.unsubscribe(request, context).await;
        self.record("resources/unsubscribe", Timed::No, t, &r, ok);
        r
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let t = Instant::now();
        let r = self.inner.call_tool(request, context).await;
        self.record("tools/call", Timed::Call, t, &r, |resp| match resp {
            CallToolResponse::Complete(c) if c.is_error == Some(true) => "tool_error",
            CallToolResponse::InputRequired(_) => "input_required",
            _ => "ok",
        });
        r
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let t = Instant::now();
        let r = self.inner.list_tools(request, context).await;
        self.record("tools/list", Timed::No, t, &r, ok);
        r
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.inner.get_tool(name)
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let method = custom_label(&request.method);
        let timed = match method {
            "tools/resolve" | "tools/annotations" => Timed::Resolve,
            _ => Timed::No,
        };
        let t = Instant::now();
        let r = self.inner.on_custom_request(request, context).await;
        self.record(method, timed, t, &r, ok);
        r
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        context: NotificationContext<RoleServer>,
    ) {
        self.inner.on_cancelled(notification, context).await
    }

    async fn on_progress(
        &self,
        notification: ProgressNotificationParam,
        context: NotificationContext<RoleServer>,
    ) {
        self.inner.on_progress(notification, context).await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.inner.on_initialized(context).await
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        self.inner.on_roots_list_changed(context).await
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        context: NotificationContext<RoleServer>,
    ) {
        self.inner
            .on_custom_notification(notification, context)
            .await
    }

    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let t = Instant::now();
        let r = self.inner.get_task(request, context).await;
        self.record("tasks/get", Timed::No, t, &r, ok);
        r
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let t = Instant::now();
        let r = self.inner.update_task(request, context).await;
        self.record("tasks/update", Timed::No, t, &r, ok);
        r
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let t = Instant::now();
        let r = self.inner.cancel_task(request, context).await;
        self.record("tasks/cancel", Timed::No, t, &r, ok);
        r
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        let t = Instant::now();
        let r = self.inner.list_skills(request, context).await;
        self.record("skills/list", Timed::No, t, &r, ok);
        r
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        let t = Instant::now();
        let r = self.inner.get_skill(request, context).await;
        self.record("skills/get", Timed::No, t, &r, ok);
        r
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        let t = Instant::now();
        let r = self.inner.read_resource_directory(request, context).await;
        self.record("resources/directory/read", Timed::No, t, &r, ok);
        r
    }
}
