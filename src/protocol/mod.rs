//! The MCP protocol layer: the only module that knows MCP wire types.
//!
//! [`Regent`] implements rmcp's `ServerHandler`. Each request takes one
//! catalog snapshot from [`CatalogState`] and keeps it until it answers.
//! `tools/resolve` and `tools/annotations` are not in rmcp, so they arrive
//! through its custom-request hook; [`answer`] decides and builds their
//! results, for every transport. The fields rmcp's typed `tools/list` and
//! capabilities cannot carry are put in place by `wire::hoist`. Deciding anything is the catalog's job; this
//! layer only translates.

pub mod answer;
pub mod call;
mod count;
pub mod direct;
mod errors;
pub mod input;
mod line;
pub mod negotiation;
mod notify;
pub mod pace;
pub mod parked;
pub mod spent;
pub mod transport;
pub mod upstream_requests;
pub mod wire;

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, CustomRequest,
    CustomResult, DiscoverResult, ErrorCode, ExtensionCapabilities, GetPromptRequestMethod,
    GetPromptRequestParams, GetPromptResponse, Implementation, InitializeRequestParams,
    InitializeResult, JsonObject, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestMethod, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, SetLevelRequestMethod, SubscribeRequestMethod, SubscribeRequestParams,
    SubscriptionFilter, Tool as McpTool, UnsubscribeRequestMethod, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Map, Value, json};

use crate::caller::Caller;
use crate::catalog::Catalog;
use crate::decisions::{DecisionLog, Entry, Kind, Verdict};
use crate::metrics::Metrics;
use crate::state::CatalogState;
use answer::Answer;
use count::Timed;
pub use errors::{INSUFFICIENT_SCOPE, INSUFFICIENT_SCOPE_CODE, Refusal, resolve_error};
pub use negotiation::Negotiated;

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

/// A session's `logging/setLevel`, unset in every clone (see
/// [`Regent::log_level`]).
#[derive(Default)]
struct SessionLevel(std::sync::Mutex<Option<u8>>);

impl Clone for SessionLevel {
    fn clone(&self) -> SessionLevel {
        SessionLevel::default()
    }
}

#[allow(deprecated)] // logging is deprecated (SEP-2577); both eras still carry it
impl SessionLevel {
    const LEVELS: [rmcp::model::LoggingLevel; 8] = {
        use rmcp::model::LoggingLevel::*;
        [
            Debug, Info, Notice, Warning, Error, Critical, Alert, Emergency,
        ]
    };

    fn set(&self, level: rmcp::model::LoggingLevel) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(crate::upstream::relay::severity(level));
    }

    /// The level set, or `debug` (everything) before any.
    fn get(&self) -> rmcp::model::LoggingLevel {
        let set = *self.0.lock().unwrap_or_else(|p| p.into_inner());
        Self::LEVELS[usize::from(set.unwrap_or(0))]
    }
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

/// The `name` and `arguments` of a `tools/resolve`-shaped request, taken
/// out of `params` (no copy of the arguments). The tool-resolution
/// extension requires `arguments` (`{}` for none); SEP-1862 and the older
/// draft let them default to `{}`.
fn name_and_arguments(
    params: Option<Value>,
    require_arguments: bool,
) -> Result<(String, Value), ErrorData> {
    let Some(Value::Object(mut params)) = params else {
        return Err(ErrorData::invalid_params(
            "params must be an object with `name` and `arguments`",
            None,
        ));
    };
    let name = match params.remove("name") {
        Some(Value::String(name)) => name,
        _ => {
            return Err(ErrorData::invalid_params(
                "params.name must be a string",
                None,
            ));
        }
    };
    let arguments = match params.remove("arguments") {
        None | Some(Value::Null) if require_arguments => {
            return Err(ErrorData::invalid_params(
                "params.arguments is required: pass an object, `{}` for a tool without parameters",
                Some(json!({"tool": name, "reason": "invalid-arguments"})),
            ));
        }
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v,
        Some(other) => {
            return Err(ErrorData::invalid_params(
                format!(
                    "params.arguments must be an object, got {}",
                    crate::diag::json_kind(&other)
                ),
                Some(json!({"tool": name})),
            ));
        }
    };
    Ok((name, arguments))
}

impl Regent {
    /// Answers `tools/resolve` or `tools/annotations` and queues the
    /// decision-log line.
    fn resolve(
        &self,
        catalog: &Catalog,
        params: Option<Value>,
        shape: answer::Shape,
        caller: Option<Arc<Caller>>,
        record: Option<Arc<pace::Tool>>,
    ) -> Result<Answer, ErrorData> {
        resolve_logged(
            catalog,
            params,
            shape,
            Some(Serving {
                log: &self.decisions,
                listed: &self.listed,
                text: self.text,
                pace: record,
            }),
            caller,
            Decider::Enforced,
        )
    }
}

impl Regent {
    /// Answers a request rmcp has no type for (`tools/resolve`,
    /// `tools/annotations`, `regent/status`, or a standard method whose
    /// params did not parse), and counts it. The one place these are
    /// answered, whichever way the request arrived: rmcp's custom-request
    /// hook, or on stdio [`direct`].
    /// `record`: the tool's [`pace`] record, told how long the policy's
    /// evaluation took (only that: not the answer's encoding, nor a wait on
    /// the decision log's queue).
    fn custom(
        &self,
        request: CustomRequest,
        result_type: bool,
        negotiated: Negotiated,
        caller: Option<Arc<Caller>>,
        record: Option<Arc<pace::Tool>>,
    ) -> Result<CustomResult, ErrorData> {
        let started = Instant::now();
        let label = count::custom_label(&request.method);
        let catalog = self.state.current();
        let value = match request.method.as_str() {
            "tools/resolve" => self
                .resolve(
                    &catalog,
                    request.params,
                    answer::Shape {
                        full: true,
                        result_type,
                        negotiated,
                    },
                    caller,
                    record,
                )
                .map(Answer::into_value),
            "tools/annotations" => self
                .resolve(
                    &catalog,
                    request.params,
                    answer::Shape {
                        full: false,
                        result_type,
                        negotiated: Negotiated::default(),
                    },
                    caller,
                    record,
                )
                .map(Answer::into_value),
            // Reload status for operators and tests: the same document as
            // `--status-file`.
            "regent/status" => {
                let mut v = self.state.status().to_json();
                if result_type {
                    v["resultType"] = json!("complete");
                }
                Ok(v)
            }
            // rmcp routes a standard request whose params do not match its
            // type here; that is an invalid-params error, not an unknown method
            // (unless the request's protocol no longer has the method).
            m if errors::is_standard_method(m) && !(result_type && errors::removed_in_2026(m)) => {
                Err(ErrorData::invalid_params(
                    format!("invalid params for {m}"),
                    Some(json!({"method": m})),
                ))
            }
            m => Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: {m}"),
                None,
            )),
        };
        let r = value.map(CustomResult::new);
        self.record(label, count::custom_timed(label), started, &r, count::ok);
        r
    }
}

impl Regent {
    /// [`Regent::custom`], with a resolve's evaluation in place or on a
    /// thread of its own as its tool's [`pace`] says, so that a slow policy
    /// holds up no other request of the session.
    async fn custom_paced(
        &self,
        request: CustomRequest,
        result_type: bool,
        negotiated: Negotiated,
        caller: Option<Arc<Caller>>,
    ) -> Result<CustomResult, ErrorData> {
        let Some(pace) = &self.pace else {
            return self.custom(request, result_type, negotiated, caller, None);
        };
        let params = request.params.as_ref();
        let (here, record) = pace.request(&self.state.current(), &request.method, params, || {
            // rmcp has parsed the request already; its size is not known
            // here, and its arguments' size is what matters.
            params
                .and_then(|p| p.get("arguments"))
                .map_or(0, |a| crate::diag::json_size(a, pace::MAX_IN_PLACE_BYTES))
        });
        if here {
            return self.custom(request, result_type, negotiated, caller, record);
        }
        let me = self.clone();
        pace.off_thread(move || me.custom(request, result_type, negotiated, caller, record))
            .await
            .unwrap_or_else(|e| {
                Err(ErrorData::internal_error(
                    format!("the policy evaluation did not finish: {e}"),
                    None,
                ))
            })
    }
}

/// Which policy decides a resolve: the enforced one, as every request, or
/// the tool's shadow policy, for `regent test` cases that name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decider {
    Enforced,
    Shadow,
}

/// What a served request adds to a resolve: the decision log, the cache of
/// listed members, and whether the answer is rendered as text (stdio).
struct Serving<'a> {
    log: &'a DecisionLog,
    listed: &'a answer::Listed,
    text: bool,
    /// The tool's [`pace`] record, told how long the evaluation took.
    pace: Option<Arc<pace::Tool>>,
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

/// The result of `tools/resolve` (`full`) or `tools/annotations` for the
/// request `params`, exactly as the server answers a request that
/// `negotiated` those extensions. Public so that `regent resolve` prints the
/// same thing without starting a server.
pub fn resolve_result(
    catalog: &Catalog,
    params: Option<&Value>,
    full: bool,
    result_type: bool,
    negotiated: Negotiated,
    caller: Option<&Caller>,
) -> Result<Value, Refusal> {
    resolve_logged(
        catalog,
        params.cloned(),
        answer::Shape {
            full,
            result_type,
            negotiated,
        },
        None,
        caller.cloned().map(Arc::new),
        Decider::Enforced,
    )
    .map(Answer::into_value)
    .map_err(Refusal::from)
}

/// [`resolve_result`] as the tool's shadow policy would answer it (in
/// place of its enforced policy), for `regent test` cases with `shadow:
/// true`. Never an answer to a client: a server only logs shadow decisions.
/// A tool without `shadow_policy` answers -32603 saying so.
pub fn shadow_result(
    catalog: &Catalog,
    params: Option<&Value>,
    caller: Option<&Caller>,
) -> Result<Value, Refusal> {
    resolve_logged(
        catalog,
        params.cloned(),
        answer::Shape {
            full: true,
            result_type: false,
            negotiated: Negotiated::default(),
        },
        None,
        caller.cloned().map(Arc::new),
        Decider::Shadow,
    )
    .map(Answer::into_value)
    .map_err(Refusal::from)
}

fn resolve_logged(
    catalog: &Catalog,
    params: Option<Value>,
    // The extension's answer replaces SEP-1862's only for `tools/resolve`;
    // `tools/annotations` is the older draft's method either way.
    shape: answer::Shape,
    serving: Option<Serving<'_>>,
    caller: Option<Arc<Caller>>,
    decider: Decider,
) -> Result<Answer, ErrorData> {
    let log = serving.as_ref().map(|s| s.log);
    let (name, args) = name_and_arguments(params, shape.draft())?;
    // The pace times every evaluation the resolve makes: the `visible`
    // rules (once per caller and catalog), the policy resolvers, the
    // policy and the shadow policy.
    let paced_from = Instant::now();
    // A tool the caller may not see answers as an unknown one; a caller the
    // catalog's caller schema refuses gets no decision, and the refusal is
    // logged.
    let tool = match catalog.lookup_as(&name, caller.as_deref()) {
        Ok(tool) => tool,
        Err(e @ crate::catalog::ResolveError::CallerClaimsInvalid(_)) => {
            if let Some(log) = log {
                let method = if shape.full {
                    "tools/resolve"
                } else {
                    "tools/annotations"
                };
                let mut entry = Entry::new(Kind::Resolve, method, &name, args, &catalog.revision);
                entry.caller = caller;
                entry.verdict = Verdict::Error(e.to_string());
                // The answer is an error either way.
                let _ = log.record(entry);
            }
            return Err(errors::resolve_error(catalog, &e));
        }
        Err(_) => return Err(errors::not_listed(catalog, &name)),
    };
    if !tool.is_resolvable() {
        return Err(ErrorData::invalid_params(
            format!("tool {name} is not resolvable: it has no resolve rules and no policy"),
            Some(json!({"tool": name, "reason": "not-resolvable"})),
        ));
    }
    let method = if shape.full {
        "tools/resolve"
    } else {
        "tools/annotations"
    };
    // A client's preflight sees what its call would: the parameters the
    // server fills by itself are filled, those the client would be asked for
    // are absent. `regent resolve` and `regent test` take arguments as given,
    // so that a case can supply a resolved parameter as a fixture.
    let filled;
    let decided_on = if log.is_some() && !tool.resolvers.is_empty() {
        if let Some(r) = crate::fill::supplied_by_client(tool, &args) {
            return Err(errors::server_filled(tool, r));
        }
        catalog
            .validate_partial(&name, &args)
            .map_err(|e| errors::resolve_error(catalog, &e))?;
        filled = match crate::fill::fill(
            tool,
            &args,
            &Default::default(),
            crate::fill::Mode::Preflight,
        ) {
            Ok(crate::fill::Fill::Done(v)) => v,
            Ok(_) => args.clone(),
            Err(e) => {
                // A resolver that failed (say, ran into the time limit)
                // counts as much as one that filled.
                if let Some(pace) = serving.as_ref().and_then(|s| s.pace.as_ref()) {
                    pace.took(paced_from.elapsed());
                }
                return Err(errors::resolve_error(catalog, &e));
            }
        };
        &filled
    } else {
        &args
    };
    // Paths fenced under a root are decided on as the file system resolves
    // them (`fence`), as the call will be.
    let fenced_args;
    let (decided_on, fenced) = if tool.fences.is_empty() {
        (decided_on, Vec::new())
    } else {
        let mut v = decided_on.clone();
        let deny = crate::fence::apply(&tool.fences, &mut v);
        fenced_args = v;
        (&fenced_args, deny)
    };
    // The log records the arguments as the client sent them.
    let started = std::time::Instant::now();
    let r = match decider {
        Decider::Enforced => catalog.resolve_as(&name, decided_on, caller.as_deref()),
        Decider::Shadow => match catalog.shadow_as(&name, decided_on, caller.as_deref()) {
            Some(s) => s.resolution,
            None => Err(crate::catalog::ResolveError::Policy {
                tool: name.clone(),
                message: "the tool declares no shadow_policy to test; add `shadow_policy:` to the tool or remove `shadow: true` from the case".into(),
                location: None,
            }),
        },
    };
    let eval = started.elapsed();
    // The shadow decision is for the log: only serving computes it.
    let shadow = log.and_then(|_| call::shadow(catalog, &name, decided_on, caller.as_deref()));
    if let Some(pace) = serving.as_ref().and_then(|s| s.pace.as_ref()) {
        pace.took(paced_from.elapsed());
    }
    let mut r = match r {
        Ok(r) => r,
        Err(e) => {
            if let Some(log) = log {
                let mut entry = Entry::new(Kind::Resolve, method, &name, args, &catalog.revision);
                entry.caller = caller;
                entry.eval = Some(eval);
                entry.shadow = shadow;
                entry.verdict = Verdict::Error(e.to_string());
                // The answer is an error either way.
                let _ = log.record(entry);
            }
            return Err(errors::resolve_error(catalog, &e));
        }
    };
    r.add_deny(fenced);
    let annotations = wire::annotations(tool, Some(&r));
    let listed = shape.has_tool().then(|| match &serving {
        Some(s) => s.listed.get(&catalog.revision, tool),
        None => Arc::new(answer::ListedTool::of(tool)),
    });
    let parts = answer::Parts {
        name: &name,
        annotations: &annotations,
        resolution: &r,
        listed: listed.as_deref(),
    };
    let answer = answer::build(shape, &parts).render(serving.as_ref().is_some_and(|s| s.text));
    if let Some(log) = log {
        let verdict = if r.allowed() {
            Verdict::Allowed
        } else {
            Verdict::Denied(r.deny.clone())
        };
        let mut entry = Entry::new(Kind::Resolve, method, &name, args, &catalog.revision);
        entry.caller = caller;
        entry.annotations = Some(annotations);
        entry.verdict = verdict;
        entry.confirm.clone_from(&r.confirm);
        entry.eval = Some(eval);
        entry.shadow = shadow;
        // Fail closed: a decision the audit log cannot take is not given.
        log.record(entry)
            .map_err(|stalled| ErrorData::internal_error(stalled.to_string(), None))?;
    }
    Ok(answer)
}

impl ServerHandler for Regent {
    #[allow(deprecated)] // the `logging` capability (SEP-2577); both eras still carry it
    fn get_info(&self) -> ServerConfig {
        let mut ext = ExtensionCapabilities::new();
        ext.insert(wire::EXTENSION.into(), JsonObject::new());
        ext.insert(negotiation::DECISION_EXTENSION.into(), JsonObject::new());
        ext.insert(negotiation::SECURITY_EXTENSION.into(), JsonObject::new());
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_extensions_with(ext)
                .enable_tools()
                .enable_tool_list_changed()
                // Upstream log messages are relayed during forwarded calls.
                .enable_logging()
                .build(),
        )
        .with_server_info(Implementation::new("regent", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let catalog = self.state.current();
        let marked = Negotiated::for_request(&ctx, has_result_type(&ctx)).resolution;
        // Only the tools this request's caller sees (all of them unless some
        // tool declares `visible`), each listed exactly as for everyone.
        let caller = self.caller(&ctx);
        // Evaluated off the session's thread when a `visible` rule must be
        // (see `pace`): a slow one holds up nothing else.
        // A caller the catalog's caller schema refuses sees no tool.
        let seen = if catalog.caller_problem(caller.as_deref()).is_some() {
            Some(catalog.nothing_visible())
        } else {
            match pace::visible_set(self.pace.as_deref(), &catalog, caller.as_ref()).await {
                Ok(seen) => seen,
                Err(e) => {
                    let e = ErrorData::internal_error(
                        format!("the evaluation of the tools' visible rules did not finish: {e}"),
                        None,
                    );
                    return self.counted("tools/list", Err(e));
                }
            }
        };
        let tools = catalog
            .tools_in(seen)
            .map(|t| {
                let mut tool = wire::tool_json(t, None);
                if !marked {
                    wire::unmark(&mut tool);
                }
                let json = Value::Object(wire::stash_for_list(tool));
                serde_json::from_value::<McpTool>(json).map_err(|e| {
                    ErrorData::internal_error(
                        format!("tool {} does not fit the MCP Tool type: {e}", t.name),
                        None,
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(ListToolsResult::with_all_items);
        self.counted("tools/list", tools)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let started = Instant::now();
        let catalog = self.state.current();
        let args = Value::Object(request.arguments.unwrap_or_default());
        let cc = call::CallContext {
            log: &self.decisions,
            states: &self.states,
            mrtr: has_result_type(&ctx),
            retry: input::Retry {
                responses: request.input_responses,
                state: request.request_state,
            },
            limit: &self.calls,
            caller: self.caller(&ctx),
            enforce_scopes: self.enforce_scopes,
            pace: self.pace.as_ref(),
            upstreams: &self.upstreams,
            parked: &self.parked,
            state: &self.state,
            log_level: if has_result_type(&ctx) {
                #[allow(deprecated)]
                ctx.meta.log_level()
            } else {
                Some(self.log_level.get())
            },
        };
        // Boxed: rmcp runs every request in one future type whose size is
        // that of its largest branch, and a call's state (execution,
        // confirmation) made it ~9 KB, copied several times when each request
        // is spawned: ~40% of a tools/resolve's instructions (BENCHMARKS.md).
        let r = Box::pin(call::call(catalog, &cc, &request.name, args, &ctx)).await;
        self.record("tools/call", Timed::Call, started, &r, count::call_outcome);
        r
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let result_type = has_result_type(&ctx);
        let negotiated = Negotiated::for_request(&ctx, result_type);
        self.custom_paced(request, result_type, negotiated, self.caller(&ctx))
            .await
    }

    /// A 2025-11-25-era session is ready: from now on, tell it when the tool
    /// list changes.
    async fn on_initialized(&self, ctx: NotificationContext<RoleServer>) {
        if let Some(session) = &self.session
            && let Some(info) = ctx.peer.peer_info()
            && info.protocol_version < ProtocolVersion::V_2026_07_28
        {
            let _ = session.set(Negotiated::of_session(Some(&info)));
        }
        tokio::spawn(notify::forward_to_session(
            ctx.peer,
            self.state.listing_changes(),
        ));
    }

    /// 2026-07-28 `subscriptions/listen`: accept what was asked; rmcp narrows
    /// it to what the capabilities advertise (only `tools.listChanged`).
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, sub: SubscriptionContext) -> Result<(), ErrorData> {
        // Boxed for the same reason as `call_tool`.
        Box::pin(notify::run_subscription(sub, self.state.listing_changes())).await;
        self.counted("subscriptions/listen", Ok(()))
    }

    /// The listed tool `name`, for rmcp's check of `Mcp-Param-*` headers
    /// against the tool's input schema (Streamable HTTP, SEP-2243).
    fn get_tool(&self, name: &str) -> Option<McpTool> {
        let catalog = self.state.current();
        let json = Value::Object(wire::tool_json(catalog.tool(name)?, None));
        serde_json::from_value(json).ok()
    }

    // The methods below answer as rmcp's defaults do; regent implements them
    // only to count them (`count`).
    async fn ping(&self, _ctx: RequestContext<RoleServer>) -> Result<(), ErrorData> {
        self.counted("ping", Ok(()))
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        ctx.peer.set_peer_info(request.clone());
        self.counted("initialize", self.negotiate_initialize(&request))
    }

    async fn discover(
        &self,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        let result = DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        );
        self.counted("server/discover", Ok(result))
    }

    /// The session's least severe level of the upstream log messages
    /// relayed to it (regent logs nothing of its own to clients).
    #[allow(deprecated)] // logging is deprecated (SEP-2577); 2025-11-25 clients may still send it
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // A 2026-07-28 request has no session to set a level on: it says
        // its level in its own `_meta`.
        if has_result_type(&ctx) {
            let e = ErrorData::method_not_found::<SetLevelRequestMethod>();
            return self.counted("logging/setLevel", Err(e));
        }
        self.log_level.set(request.level);
        self.counted("logging/setLevel", Ok(()))
    }

    async fn get_prompt(
        &self,
        _request: GetPromptRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let e = ErrorData::method_not_found::<GetPromptRequestMethod>();
        self.counted("prompts/get", Err(e))
    }

    async fn read_resource(
        &self,
        _request: ReadResourceRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let e = ErrorData::method_not_found::<ReadResourceRequestMethod>();
        self.counted("resources/read", Err(e))
    }

    async fn subscribe(
        &self,
        _request: SubscribeRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let e = ErrorData::method_not_found::<SubscribeRequestMethod>();
        self.counted("resources/subscribe", Err(e))
    }

    async fn unsubscribe(
        &self,
        _request: UnsubscribeRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let e = ErrorData::method_not_found::<UnsubscribeRequestMethod>();
        self.counted("resources/unsubscribe", Err(e))
    }

    // regent declares neither prompts, resources nor completions, so it does
    // not answer for them (rmcp's defaults answer with empty lists, which
    // would claim features the capabilities deny).
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.counted("prompts/list", Err(errors::not_offered("prompts/list")))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.counted("resources/list", Err(errors::not_offered("resources/list")))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.counted(
            "resources/templates/list",
            Err(errors::not_offered("resources/templates/list")),
        )
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.counted(
            "completion/complete",
            Err(errors::not_offered("completion/complete")),
        )
    }
}
