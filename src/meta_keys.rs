//! Which `_meta` keys a catalog may set.
//!
//! regent's answers carry its own `_meta` entries (`regent/decision`,
//! `io.github.regent/decision`, `io.github.regent/security-schemes`, …) and
//! MCP's (`io.modelcontextprotocol/tool-resolution`). A tool's YAML `meta`
//! and a policy's `meta` are merged into the same objects, so a key under
//! one of those prefixes would sit beside, or stand in for, regent's real
//! decision: `{"regent/decision": {"allowed": true}}` next to a real
//! `allowed: false` (issue 28). Such keys are refused: at load when they are
//! written literally (YAML, `meta := {...}` in Rego), at resolution when a
//! policy computes one.
//!
//! MCP reserves every prefix that has `modelcontextprotocol` or `mcp` as a
//! label followed by another label (`mcp.dev/`, `api.modelcontextprotocol.org/`);
//! regent also reserves `io.modelcontextprotocol/`, which MCP's extensions
//! use, and its own `regent/` and `io.github.regent/`.

/// Why `key` may not come from a catalog, or `None` when it may.
pub fn reserved(key: &str) -> Option<&'static str> {
    // The prefix is what comes before the first `/`: `a.b/c` has `a.b`.
    let (prefix, _) = key.split_once('/')?;
    if prefix == "regent" || prefix == "io.github.regent" {
        return Some("regent's own");
    }
    if prefix == "io.modelcontextprotocol" {
        return Some("MCP's");
    }
    let labels: Vec<&str> = prefix.split('.').collect();
    let followed = &labels[..labels.len() - 1];
    if followed
        .iter()
        .any(|l| *l == "modelcontextprotocol" || *l == "mcp")
    {
        return Some("MCP's");
    }
    None
}

/// The help every refusal shares.
pub const HELP: &str = "keys under `regent/`, `io.github.regent/` and MCP's prefixes \
    (`io.modelcontextprotocol/`, `mcp.*/`, …) are written by regent and MCP only; \
    give the key a prefix of your own, such as `com.example/`";

#[cfg(test)]
mod tests {
    use super::reserved;

    #[test]
    fn regent_and_mcp_prefixes_are_reserved() {
        for k in [
            "regent/decision",
            "regent/execution",
            "io.github.regent/decision",
            "io.github.regent/security-schemes",
            "io.modelcontextprotocol/tool-resolution",
            "modelcontextprotocol.io/x",
            "mcp.dev/x",
            "api.modelcontextprotocol.org/x",
            "tools.mcp.com/x",
        ] {
            assert!(reserved(k).is_some(), "{k}");
        }
        for k in [
            "decision",
            "com.example/decision",
            "regentx/decision",
            "io.github.regentx/y",
            "com.example.mcp/x",
            "example/regent/decision",
        ] {
            assert!(reserved(k).is_none(), "{k}");
        }
    }
}
