//! The methods of features regent does not offer: prompts, resources and
//! completions, none of which its capabilities declare. `prompts/get`,
//! `resources/read`, `resources/subscribe` and `resources/unsubscribe`
//! answer method-not-found as rmcp's defaults do, implemented only to be
//! counted (`count`); the listings and `completion/complete` answer as not
//! offered, where rmcp's defaults would answer empty lists that claim
//! features the capabilities deny.

use rmcp::ErrorData;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestMethod, GetPromptRequestParams,
    GetPromptResponse, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    PaginatedRequestParams, ReadResourceRequestMethod, ReadResourceRequestParams,
    ReadResourceResponse, SubscribeRequestMethod, SubscribeRequestParams, UnsubscribeRequestMethod,
    UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, RoleServer};

use super::{Regent, errors};

impl Regent {
    pub(super) async fn answer_get_prompt(
        &self,
        _request: GetPromptRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let e = ErrorData::method_not_found::<GetPromptRequestMethod>();
        self.counted("prompts/get", Err(e))
    }

    pub(super) async fn answer_read_resource(
        &self,
        _request: ReadResourceRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let e = ErrorData::method_not_found::<ReadResourceRequestMethod>();
        self.counted("resources/read", Err(e))
    }

    pub(super) async fn answer_subscribe(
        &self,
        _request: SubscribeRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let e = ErrorData::method_not_found::<SubscribeRequestMethod>();
        self.counted("resources/subscribe", Err(e))
    }

    pub(super) async fn answer_unsubscribe(
        &self,
        _request: UnsubscribeRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let e = ErrorData::method_not_found::<UnsubscribeRequestMethod>();
        self.counted("resources/unsubscribe", Err(e))
    }

    pub(super) async fn answer_list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.counted("prompts/list", Err(errors::not_offered("prompts/list")))
    }

    pub(super) async fn answer_list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.counted("resources/list", Err(errors::not_offered("resources/list")))
    }

    pub(super) async fn answer_list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.counted(
            "resources/templates/list",
            Err(errors::not_offered("resources/templates/list")),
        )
    }

    pub(super) async fn answer_complete(
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
