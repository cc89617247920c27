//! `tools/list`: the tools this request's caller sees, each listed exactly
//! as for everyone (`wire`), and the listed tool rmcp asks for to check a
//! Streamable HTTP request's `Mcp-Param-*` headers. Which tools a caller
//! sees is the catalog's (`visible` rules, through `pace`).

use rmcp::ErrorData;
use rmcp::model::{ListToolsResult, PaginatedRequestParams, Tool as McpTool};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;

use super::{Negotiated, Regent, has_result_type, pace, wire};

impl Regent {
    pub(super) async fn answer_list_tools(
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

    /// The listed tool `name`, for rmcp's check of `Mcp-Param-*` headers
    /// against the tool's input schema (Streamable HTTP, SEP-2243).
    pub(super) fn answer_get_tool(&self, name: &str) -> Option<McpTool> {
        let catalog = self.state.current();
        let json = Value::Object(wire::tool_json(catalog.tool(name)?, None));
        serde_json::from_value(json).ok()
    }
}
