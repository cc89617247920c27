//! The official MCP conformance suite's tools that regent cannot serve as
//! commands, served by an upstream MCP server of the kit (binary
//! `regent-suite-upstream`, over stdio) so that `.ci/conformance` runs their
//! scenarios through regent: what an upstream says during a call
//! (progress, log messages) and content a command cannot return (image,
//! audio, embedded resource, several kinds at once). Names, arguments and
//! results are the suite's own, as each scenario's description in
//! `@modelcontextprotocol/conformance` (pinned in tests/conformance/suite)
//! asks for them.
//!
//! It also serves the tools that ask the client during the call
//! (`test_sampling`, `test_elicitation`, `test_elicitation_sep1034_defaults`,
//! `test_elicitation_sep1330_enums`): each sends its request to the client
//! it is connected to (regent) and answers with what came back, or with an
//! error when the client did not declare the capability. Whether they pass
//! is regent's relaying of an upstream's requests, not this server's.
//!
//! The JSON-RPC loop is [`crate::upstream::serve_with`]; this module only
//! says what each tool does. Which of these tools the conformance fixture
//! imports is its upstream declaration's business
//! (tests/conformance/tools/suite_upstream.yaml).

use std::io::{BufRead, Write};
use std::time::Duration;

use serde_json::{Value, json};

use crate::upstream::{Call, Tools, serve_with};

/// A 1x1 red PNG, base64.
pub const PNG: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
/// A WAV of eight silent 16-bit samples at 8 kHz, base64.
pub const WAV: &str =
    "UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YRAAAAAAAAAAAAAAAAAAAAAAAAAA";

/// How long a tool waits for the client's answer to its request.
const ASK: Duration = Duration::from_secs(30);

/// The suite's spacing of progress and log notifications ("~50ms").
const STEP: Duration = Duration::from_millis(50);

/// The tools it lists, as its `tools/list` gives them (the conformance
/// fixture pins them in tests/conformance/tools/suite.snapshot.json).
pub fn tools() -> Value {
    let none = json!({});
    let string = |d: &str| json!({"type": "string", "description": d});
    json!([
        tool(
            "test_tool_with_progress",
            "Reports progress 0, 50 and 100 of 100, 50 ms apart",
            none.clone(),
            &[]
        ),
        tool(
            "test_tool_with_logging",
            "Sends three info log messages, 50 ms apart",
            none.clone(),
            &[]
        ),
        tool(
            "test_image_content",
            "Returns a 1x1 PNG image",
            none.clone(),
            &[]
        ),
        tool(
            "test_audio_content",
            "Returns a short WAV",
            none.clone(),
            &[]
        ),
        tool(
            "test_embedded_resource",
            "Returns an embedded text resource",
            none.clone(),
            &[]
        ),
        tool(
            "test_multiple_content_types",
            "Returns text, an image and an embedded resource",
            none.clone(),
            &[]
        ),
        tool(
            "test_sampling",
            "Asks the client to sample an LLM with the prompt",
            json!({"prompt": string("The prompt to send to the LLM")}),
            &["prompt"]
        ),
        tool(
            "test_elicitation",
            "Asks the user for a username and an email",
            json!({"message": string("The message to show the user")}),
            &["message"]
        ),
        tool(
            "test_elicitation_sep1034_defaults",
            "Asks for a form whose fields have defaults (SEP-1034)",
            none.clone(),
            &[]
        ),
        tool(
            "test_elicitation_sep1330_enums",
            "Asks for a form with the five kinds of enum (SEP-1330)",
            none,
            &[]
        ),
    ])
}

struct Suite;

fn text(t: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": t.into()}]})
}

fn failed(t: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": t.into()}], "isError": true})
}

fn tool(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    json!({"name": name, "description": description, "inputSchema": schema})
}

/// Sends `elicitation/create` with `message` and `schema`, when the client
/// declared elicitation, and says what came back.
fn elicit(call: &Call, message: &str, schema: Value) -> Value {
    if call.client_capabilities.get("elicitation").is_none() {
        return failed("the client does not support elicitation (no elicitation capability)");
    }
    let params = json!({"message": message, "requestedSchema": schema});
    match call.request("elicitation/create", params, ASK) {
        Ok(r) => text(format!(
            "Elicitation completed: action={}, content={}",
            r["action"].as_str().unwrap_or("?"),
            r.get("content").unwrap_or(&json!({}))
        )),
        Err(e) => failed(format!("elicitation failed: {e}")),
    }
}

impl Tools for Suite {
    fn server_name(&self) -> &'static str {
        "regent-suite-upstream"
    }

    fn capabilities(&self) -> Value {
        json!({"tools": {}, "logging": {}})
    }

    fn list(&self) -> Value {
        tools()
    }

    fn call(&self, call: &Call) -> Value {
        match call.name.as_str() {
            "test_tool_with_progress" => {
                for (i, p) in [0, 50, 100].into_iter().enumerate() {
                    if i > 0 {
                        std::thread::sleep(STEP);
                    }
                    call.progress(p, 100, None);
                }
                text("Progress tool completed: 3 steps")
            }
            "test_tool_with_logging" => {
                let said = [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ];
                for (i, data) in said.into_iter().enumerate() {
                    if i > 0 {
                        std::thread::sleep(STEP);
                    }
                    call.notify(
                        "notifications/message",
                        json!({"level": "info", "data": data}),
                    );
                }
                text("Logging tool completed: 3 log messages sent")
            }
            "test_image_content" => {
                json!({"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]})
            }
            "test_audio_content" => {
                json!({"content": [{"type": "audio", "data": WAV, "mimeType": "audio/wav"}]})
            }
            "test_embedded_resource" => json!({"content": [{"type": "resource", "resource": {
                "uri": "test://embedded-resource",
                "mimeType": "text/plain",
                "text": "This is an embedded resource content.",
            }}]}),
            "test_multiple_content_types" => json!({"content": [
                {"type": "text", "text": "Multiple content types test:"},
                {"type": "image", "data": PNG, "mimeType": "image/png"},
                {"type": "resource", "resource": {
                    "uri": "test://mixed-content-resource",
                    "mimeType": "application/json",
                    "text": "{\"test\":\"data\",\"value\":123}",
                }},
            ]}),
            "test_sampling" => {
                if call.client_capabilities.get("sampling").is_none() {
                    return failed("the client does not support sampling (no sampling capability)");
                }
                let prompt = call.arguments["prompt"].as_str().unwrap_or_default();
                let params = json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                    "maxTokens": 100,
                });
                match call.request("sampling/createMessage", params, ASK) {
                    Ok(r) => text(format!(
                        "LLM response: {}",
                        r["content"]["text"].as_str().unwrap_or_default()
                    )),
                    Err(e) => failed(format!("sampling failed: {e}")),
                }
            }
            "test_elicitation" => {
                let message = call.arguments["message"].as_str().unwrap_or_default();
                elicit(
                    call,
                    message,
                    json!({
                        "type": "object",
                        "properties": {
                            "username": {"type": "string", "description": "User's response"},
                            "email": {"type": "string", "description": "User's email address"},
                        },
                        "required": ["username", "email"],
                    }),
                )
            }
            "test_elicitation_sep1034_defaults" => elicit(
                call,
                "Please review the defaults",
                json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "default": "John Doe"},
                        "age": {"type": "integer", "default": 30},
                        "score": {"type": "number", "default": 95.5},
                        "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                        "verified": {"type": "boolean", "default": true},
                    },
                }),
            ),
            "test_elicitation_sep1330_enums" => elicit(
                call,
                "Please choose",
                json!({
                    "type": "object",
                    "properties": {
                        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                        "titledSingle": {"type": "string", "oneOf": [
                            {"const": "value1", "title": "First Option"},
                            {"const": "value2", "title": "Second Option"},
                            {"const": "value3", "title": "Third Option"},
                        ]},
                        "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"],
                                       "enumNames": ["Option One", "Option Two", "Option Three"]},
                        "untitledMulti": {"type": "array",
                                          "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                        "titledMulti": {"type": "array", "items": {"anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]}},
                    },
                }),
            ),
            name => failed(format!("no tool {name}")),
        }
    }
}

/// Serves the suite's tools until `input` ends.
pub fn serve(input: impl BufRead, output: impl Write + Send + 'static) {
    serve_with(Suite, input, output, None);
}
