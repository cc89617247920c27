//! One stdio line, in and out, where regent does it without rmcp: parsing
//! a `tools/resolve` or `tools/annotations` request ([`custom_request`],
//! [`Custom`]) and encoding an outgoing message ([`encode`], rewriting the
//! results rmcp types too narrowly with [`wire::hoist`]). Shared by the
//! transport, which reads and writes the lines, and `direct`, which answers
//! some requests itself; below both, so neither uses the other for it.
//! Framing, buffering and dispatch stay in `transport`.

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, CustomRequest, CustomResult, Extensions, JsonRpcMessage,
    JsonRpcRequest, JsonRpcVersion2_0, RequestId, RequestMetaObject, ServerJsonRpcMessage,
    ServerResult,
};
use serde::Deserialize;
use serde_json::Value;

use super::{answer, wire};

/// The methods regent serves through rmcp's custom-request hook.
const CUSTOM_METHODS: [&str; 2] = ["tools/resolve", "tools/annotations"];

/// A request for one of [`CUSTOM_METHODS`], parsed by [`custom_request`].
pub(super) struct Custom {
    pub id: RequestId,
    pub method: String,
    /// `params` without `_meta`.
    pub params: Option<Value>,
    pub meta: Option<serde_json::Map<String, Value>>,
    /// The numbers the line spelled by hand (`policy::spelled`), for the
    /// request's evaluations.
    pub spelled: Option<std::sync::Arc<crate::policy::spelled::Spelled>>,
}

impl Custom {
    /// The request as rmcp's own deserializer would have built it: `_meta`
    /// moved into the request's extensions, where the era checks and
    /// `ctx.meta` read it.
    pub(super) fn into_message(self) -> ClientJsonRpcMessage {
        let mut extensions = Extensions::new();
        if let Some(meta) = self.meta {
            extensions.insert(RequestMetaObject::from(meta));
        }
        if let Some(spelled) = self.spelled {
            extensions.insert(spelled);
        }
        let request = CustomRequest {
            method: self.method,
            params: self.params,
            extensions,
        };
        JsonRpcMessage::Request(JsonRpcRequest::new(
            self.id,
            ClientRequest::CustomRequest(request),
        ))
    }
}

/// Parses a request for one of [`CUSTOM_METHODS`] without rmcp.
///
/// rmcp parses every incoming message as `ClientRequest`, an untagged union
/// of all the request types it knows, trying each in turn; a method it does
/// not know fails every attempt (formatting an error message for each) before
/// it lands on `CustomRequest`. That was a quarter of the instructions of a
/// `tools/resolve` (callgrind; see BENCHMARKS.md). This builds the same value
/// directly ([`Custom::into_message`]), or hands it to [`direct`].
/// Anything unusual (no id, `params` or `_meta` not an object, a malformed
/// envelope) returns `None` and takes rmcp's path, so errors stay rmcp's.
pub(super) fn custom_request(text: &[u8]) -> Option<Custom> {
    #[derive(Deserialize)]
    struct Envelope {
        #[allow(dead_code)]
        jsonrpc: JsonRpcVersion2_0,
        id: RequestId,
        method: String,
        #[serde(default)]
        params: Option<Value>,
    }
    // A byte search first: other messages pay only for it, not for a parse.
    // A line that merely mentions a method name is parsed once and handed
    // to rmcp, as before.
    if !CUSTOM_METHODS.iter().any(|m| contains(text, m.as_bytes())) {
        return None;
    }
    let Envelope {
        id, method, params, ..
    } = serde_json::from_slice(text).ok()?;
    if !CUSTOM_METHODS.contains(&method.as_str()) {
        return None;
    }
    let (params, meta) = match params {
        None => (None, None),
        Some(Value::Object(mut p)) => {
            let meta = match p.remove("_meta") {
                None => None,
                Some(Value::Object(meta)) => Some(meta),
                Some(_) => return None,
            };
            (Some(Value::Object(p)), meta)
        }
        Some(_) => return None,
    };
    Some(Custom {
        id,
        method,
        params,
        meta,
        spelled: crate::policy::spelled::scan(text),
    })
}

/// Whether `needle` (not empty) occurs in `hay`.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    let (first, rest) = match needle.split_first() {
        Some(split) => split,
        None => return true,
    };
    let mut from = 0;
    while let Some(i) = hay[from..].iter().position(|b| b == first) {
        let at = from + i + 1;
        if hay[at..].starts_with(rest) {
            return true;
        }
        from = at;
    }
    false
}

/// Serializes an outgoing message, rewriting the results rmcp types too
/// narrowly for the tool-resolution fields.
pub(super) fn encode(item: ServerJsonRpcMessage) -> std::io::Result<Vec<u8>> {
    // A result that is already JSON text (`answer`) is written as it is,
    // inside the envelope rmcp would write: jsonrpc, id, result.
    if let JsonRpcMessage::Response(resp) = &item
        && let ServerResult::CustomResult(CustomResult(result)) = &resp.result
        && let Some(text) = answer::raw_text(result)
    {
        let mut out = Vec::with_capacity(text.len() + 48);
        out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        serde_json::to_writer(&mut out, &resp.id)?;
        out.extend_from_slice(br#","result":"#);
        out.extend_from_slice(text.as_bytes());
        out.push(b'}');
        return Ok(out);
    }
    let item = match item {
        JsonRpcMessage::Response(mut resp)
            if matches!(
                resp.result,
                ServerResult::InitializeResult(_)
                    | ServerResult::DiscoverResult(_)
                    | ServerResult::ListToolsResult(_)
            ) =>
        {
            let mut v = serde_json::to_value(&resp.result)?;
            wire::hoist(&mut v);
            resp.result = ServerResult::CustomResult(CustomResult::new(v));
            JsonRpcMessage::Response(resp)
        }
        other => other,
    };
    Ok(serde_json::to_vec(&item)?)
}
