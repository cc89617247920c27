//! Which extensions a request negotiated, judged on that request alone.
//!
//! On 2026-07-28 there is no handshake: a request negotiates an extension
//! when its own `params._meta["io.modelcontextprotocol/clientCapabilities"]`
//! `.extensions` holds the extension's id with an empty settings object. On
//! 2025-11-25 the client's `initialize` capabilities say it once for the
//! session. A non-empty settings object means "unsupported" (the draft's
//! rule), and nothing is inferred from earlier requests or `server/discover`.

use rmcp::model::{ExtensionCapabilities, InitializeRequestParams};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;

use super::wire;

/// regent's own extension: the decision a call would get (allowed, reasons,
/// confirmation) and policy-computed `meta`, in a `tools/resolve` answer of
/// the tool-resolution extension. Advertised in the server's
/// `capabilities.extensions` with `{}`.
pub const DECISION_EXTENSION: &str = "io.github.regent/decision";

/// regent's extension for the resolved `securitySchemes` (SEP-1488's shape:
/// an array of scheme objects) in a `tools/resolve` answer of the
/// tool-resolution extension, as `{"securitySchemes": [...]}`. Advertised in
/// the server's `capabilities.extensions` with `{}`.
pub const SECURITY_EXTENSION: &str = "io.github.regent/security-schemes";

/// `_meta` key under which a 2026-07-28 request carries its capabilities.
pub(super) const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The extensions one request negotiated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Negotiated {
    /// `io.modelcontextprotocol/tool-resolution`: the draft's answers.
    pub resolution: bool,
    /// [`DECISION_EXTENSION`]: regent's decision information in them.
    pub decision: bool,
    /// [`SECURITY_EXTENSION`]: the resolved `securitySchemes` in them.
    pub security: bool,
}

impl Negotiated {
    /// From a client capabilities object's `extensions` member, as JSON.
    pub fn from_json(extensions: Option<&Value>) -> Negotiated {
        let ext = extensions.and_then(Value::as_object);
        let empty = |id: &str| {
            ext.and_then(|e| e.get(id))
                .and_then(Value::as_object)
                .is_some_and(|settings| settings.is_empty())
        };
        Negotiated {
            resolution: empty(wire::EXTENSION),
            decision: empty(DECISION_EXTENSION),
            security: empty(SECURITY_EXTENSION),
        }
    }

    /// From rmcp's typed `capabilities.extensions` (an `initialize`'s).
    pub fn from_typed(extensions: Option<&ExtensionCapabilities>) -> Negotiated {
        let empty = |id: &str| {
            extensions
                .and_then(|e| e.get(id))
                .is_some_and(|settings| settings.is_empty())
        };
        Negotiated {
            resolution: empty(wire::EXTENSION),
            decision: empty(DECISION_EXTENSION),
            security: empty(SECURITY_EXTENSION),
        }
    }

    /// What the request of `ctx` negotiated: its own `_meta` on 2026-07-28
    /// (`modern`), the session's `initialize` otherwise.
    pub fn for_request(ctx: &RequestContext<RoleServer>, modern: bool) -> Negotiated {
        if modern {
            Negotiated::from_json(
                ctx.meta
                    .get(CLIENT_CAPABILITIES)
                    .and_then(|c| c.get("extensions")),
            )
        } else {
            Negotiated::of_session(ctx.peer.peer_info().as_deref())
        }
    }

    /// What a 2025-era session negotiated at `initialize` (`info`, the
    /// client's request): its requests carry no capabilities of their own.
    pub fn of_session(info: Option<&InitializeRequestParams>) -> Negotiated {
        Negotiated::from_typed(info.and_then(|i| i.capabilities.extensions.as_ref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn caps(ext: Value) -> Negotiated {
        Negotiated::from_json(Some(&ext))
    }

    #[test]
    fn only_an_empty_settings_object_negotiates() {
        let id = wire::EXTENSION;
        assert!(caps(json!({id: {}})).resolution);
        assert!(
            !caps(json!({id: {"x": 1}})).resolution,
            "non-empty = unsupported"
        );
        assert!(!caps(json!({id: true})).resolution);
        assert!(!caps(json!({id: null})).resolution);
        assert!(!caps(json!({})).resolution);
        assert!(!caps(json!([id])).resolution);
        assert_eq!(Negotiated::from_json(None), Negotiated::default());
    }

    #[test]
    fn each_extension_is_judged_on_its_own() {
        let n = caps(json!({wire::EXTENSION: {}, DECISION_EXTENSION: {}}));
        assert_eq!(
            n,
            Negotiated {
                resolution: true,
                decision: true,
                security: false
            }
        );
        let n = caps(json!({DECISION_EXTENSION: {}}));
        assert_eq!(
            n,
            Negotiated {
                resolution: false,
                decision: true,
                security: false
            }
        );
        let n = caps(json!({wire::EXTENSION: {}, DECISION_EXTENSION: {"v": 2}}));
        assert_eq!(
            n,
            Negotiated {
                resolution: true,
                decision: false,
                security: false
            }
        );
    }

    #[test]
    fn typed_capabilities_follow_the_same_rule() {
        let mut ext = ExtensionCapabilities::new();
        ext.insert(wire::EXTENSION.into(), Default::default());
        assert!(Negotiated::from_typed(Some(&ext)).resolution);
        let mut settings = rmcp::model::JsonObject::new();
        settings.insert("x".into(), json!(1));
        ext.insert(wire::EXTENSION.into(), settings);
        assert!(!Negotiated::from_typed(Some(&ext)).resolution);
        assert!(!Negotiated::from_typed(None).resolution);
    }

    #[test]
    fn security_schemes_have_their_own_extension() {
        let n = caps(json!({wire::EXTENSION: {}, SECURITY_EXTENSION: {}}));
        assert!(n.resolution && n.security && !n.decision);
        assert!(!caps(json!({SECURITY_EXTENSION: {"v": 1}})).security);
    }
}
