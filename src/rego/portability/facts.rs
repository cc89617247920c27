//! What is known of a module before anything runs, from outside its Rego:
//! the inputSchemas of the tools that own it (required, typed, a string of
//! digits by its `pattern`) and the data documents ([`Facts`]). What a
//! finding makes of it is the other files'.

use regorus::unstable::Expr;

use crate::rego::path_of;

/// What is known before anything runs about what a module reads: the
/// inputSchemas of the tools whose engine holds it (the arguments are
/// validated against them first) and the data documents.
pub struct Facts<'a> {
    /// For each module, the inputSchemas of the tools that own it; empty
    /// for a library package (nothing is assumed of its arguments).
    pub schemas: Vec<Vec<&'a serde_json::Value>>,
    pub data: Vec<&'a serde_json::Value>,
    /// Packages of all modules (a `data` path under one is a rule's).
    pub packages: Vec<String>,
}

impl Facts<'_> {
    /// What the arguments' schemas say of `input.arguments.<path>`: whether
    /// every tool requires it (so it is defined), and whether every tool
    /// declares it an array or object.
    fn argument(&self, module: usize, path: &[String]) -> (bool, bool) {
        let schemas = &self.schemas[module];
        if schemas.is_empty() {
            return (false, false);
        }
        let mut defined = true;
        let mut collection = true;
        for schema in schemas {
            let mut at = *schema;
            for seg in path {
                let required = at
                    .get("required")
                    .and_then(serde_json::Value::as_array)
                    .is_some_and(|r| r.iter().any(|x| x.as_str() == Some(seg)));
                defined &= required;
                match at.get("properties").and_then(|p| p.get(seg)) {
                    Some(next) => at = next,
                    None => return (false, false),
                }
            }
            collection &= matches!(
                at.get("type").and_then(serde_json::Value::as_str),
                Some("array" | "object")
            );
        }
        (defined, collection)
    }

    /// Whether every tool's inputSchema declares `input.arguments.<path>`
    /// `type: integer` (the arguments are validated before a policy runs).
    pub(super) fn argument_integer(&self, module: usize, path: &[String]) -> bool {
        self.every_argument_schema(module, path, |at| {
            at.get("type").and_then(serde_json::Value::as_str) == Some("integer")
        })
    }

    /// Whether every tool's inputSchema declares `input.arguments.<path>`
    /// a string or a boolean: no number a client spells can be there.
    pub(super) fn argument_not_number(&self, module: usize, path: &[String]) -> bool {
        self.every_argument_schema(module, path, |at| {
            matches!(
                at.get("type").and_then(serde_json::Value::as_str),
                Some("string" | "boolean")
            )
        })
    }

    /// Whether the argument at `path` is declared, in every schema of the
    /// module's tools, a string of decimal digits: `type: string` with a
    /// `pattern` of [`digits_only`] (`^[0-9]+$`, `^\d{1,6}$`), so
    /// `to_number` of it is an integer (or an error).
    pub(super) fn argument_digits(&self, module: usize, path: &[String]) -> bool {
        self.every_argument_schema(module, path, |at| {
            at.get("type").and_then(serde_json::Value::as_str) == Some("string")
                && at
                    .get("pattern")
                    .and_then(serde_json::Value::as_str)
                    .is_some_and(digits_only)
        })
    }

    /// Whether the module has owning tools and, in every one's inputSchema,
    /// `input.arguments.<path>` is declared (through `properties`) with a
    /// schema that `holds`.
    fn every_argument_schema(
        &self,
        module: usize,
        path: &[String],
        holds: impl Fn(&serde_json::Value) -> bool,
    ) -> bool {
        let schemas = &self.schemas[module];
        !schemas.is_empty()
            && schemas.iter().all(|schema| {
                path.iter()
                    .try_fold(*schema, |at, seg| {
                        at.get("properties").and_then(|p| p.get(seg))
                    })
                    .is_some_and(&holds)
            })
    }

    /// The value of the data document at `path` (after `data`), when no
    /// rule can be there.
    pub(super) fn data_at(&self, path: &[String]) -> Option<&serde_json::Value> {
        if path.iter().any(|p| p == "[_]") {
            return None;
        }
        let dotted = path.join(".");
        if self.packages.iter().any(|p| {
            p == &dotted
                || p.starts_with(&format!("{dotted}."))
                || dotted.starts_with(&format!("{p}."))
        }) {
            return None;
        }
        self.data.iter().find_map(|d| {
            let mut v = *d;
            for seg in path {
                v = v.get(seg)?;
            }
            Some(v)
        })
    }

    /// Whether the reference `e` is surely defined, and surely a collection.
    pub(super) fn reference(&self, module: usize, e: &Expr, bound: &[String]) -> (bool, bool) {
        let path = path_of(e);
        match path.first().map(String::as_str) {
            Some("input") if path.len() == 1 => (true, true),
            Some("input") if path.get(1).map(String::as_str) == Some("arguments") => {
                if path.len() == 2 {
                    (true, true)
                } else if path.iter().any(|p| p == "[_]") {
                    (false, false)
                } else {
                    self.argument(module, &path[2..])
                }
            }
            Some("data") => match self.data_at(&path[1..]) {
                Some(v) => (true, v.is_array() || v.is_object()),
                None => (false, false),
            },
            // A local with no index: defined; its kind unknown.
            Some(n) if path.len() == 1 && bound.iter().any(|b| b == n) => (true, false),
            _ => (false, false),
        }
    }
}

/// Whether the constant regex `p` matches only strings of ASCII digits
/// with an optional leading `-`: anchored (`^…$`), made of `[0-9]`,
/// `[1-9]` or `\d` repeated (`+`, `*`, `?`, `{m,n}`) and an optional `-?` first.
pub(super) fn digits_only(p: &str) -> bool {
    let Some(body) = p.strip_prefix('^').and_then(|b| b.strip_suffix('$')) else {
        return false;
    };
    let body = body.strip_prefix("-?").unwrap_or(body);
    let mut rest = body;
    let mut pieces = 0;
    while !rest.is_empty() {
        rest = if let Some(r) = rest.strip_prefix("[0-9]") {
            r
        } else if let Some(r) = rest.strip_prefix("[1-9]") {
            r
        } else if let Some(r) = rest.strip_prefix("\\d") {
            r
        } else {
            return false;
        };
        pieces += 1;
        // One quantifier, optionally.
        if let Some(r) = rest.strip_prefix(['+', '*', '?']) {
            rest = r;
        } else if rest.starts_with('{') {
            let Some(end) = rest.find('}') else {
                return false;
            };
            if !rest[1..end]
                .bytes()
                .all(|c| c.is_ascii_digit() || c == b',')
            {
                return false;
            }
            rest = &rest[end + 1..];
        }
    }
    pieces > 0
}

#[cfg(test)]
mod tests {
    use super::digits_only;

    #[test]
    fn digits_only_patterns() {
        for p in [
            "^[0-9]+$",
            "^\\d+$",
            "^-?[0-9]{1,6}$",
            "^[0-9][0-9]*$",
            "^\\d{3}$",
        ] {
            assert!(digits_only(p), "{p}");
        }
        for p in [
            "[0-9]+",
            "^[0-9]+",
            "^[0-9.]+$",
            "^\\d+(\\.\\d+)?$",
            "^[0-9]+|x$",
            "^$",
            "^\\d+e\\d+$",
        ] {
            assert!(!digits_only(p), "{p}");
        }
    }
}
