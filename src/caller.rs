//! Who is calling, as a transport verified it: the neutral value that travels
//! from the HTTP layer (a verified JWT) through the protocol layer into
//! `Catalog::resolve`, where it becomes the policy's `input.caller`.
//!
//! It knows nothing of tokens or HTTP: whoever builds one vouches for it.
//! Without one (stdio without `--caller-file`, or HTTP without
//! `--jwt-jwks-file`) `input.caller` is absent.
//!
//! A caller can also be written down (`CallerDocument`): the trusted
//! configuration `serve --caller-file` reads for stdio, a `regent test`
//! case's `caller:` and `regent resolve --caller`.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::diag::{Diagnostic, Location};
use crate::source::YamlPath;

/// The issuer of a written caller that names none.
pub const LOCAL_ISSUER: &str = "local";

/// A verified caller: the token's subject, its issuer and all its claims.
#[derive(Debug, Clone, PartialEq)]
pub struct Caller {
    pub subject: String,
    pub issuer: String,
    /// Every claim of the token, `sub` and `iss` included.
    pub claims: Map<String, Value>,
    /// The claims' numbers spelled otherwise than regent writes them
    /// (`1E2`, `2.50`), as their text spelled them: found in a token's
    /// decoded payload by whoever verified it (`policy::spelled`, through
    /// `protocol::claims_spelled`), or in a caller document's text
    /// ([`Caller::from_file`]), so that a request's evaluations refuse to
    /// write them as the request's own. Empty for a test case's caller.
    pub spelled: Vec<Box<str>>,
}

impl Caller {
    /// `input.caller`: `{"subject": sub, "issuer": iss, "claims": {...}}`.
    pub fn to_value(&self) -> Value {
        let mut o = Map::with_capacity(3);
        o.insert("subject".into(), Value::String(self.subject.clone()));
        o.insert("issuer".into(), Value::String(self.issuer.clone()));
        o.insert("claims".into(), Value::Object(self.claims.clone()));
        Value::Object(o)
    }

    /// Reads a caller document (JSON or YAML) from `path`, with the
    /// numbers its text spells by hand as `numbers` finds them
    /// (`policy::spelled::claim_numbers`, which `commands` hands in: a
    /// caller knows nothing of policies). In YAML a number-like part of a
    /// plain string (`v1.50`) is found too: it may refuse more, never less.
    pub fn from_file(
        path: &Path,
        numbers: fn(&[u8]) -> Vec<Box<str>>,
    ) -> Result<Caller, Diagnostic> {
        let (mut caller, text) = Caller::read(path)?;
        caller.spelled = numbers(text.as_bytes());
        Ok(caller)
    }

    /// The caller document at `path`, and its text.
    fn read(path: &Path) -> Result<(Caller, String), Diagnostic> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Diagnostic::error(
                "caller-file",
                Location::new(path, 0, 0),
                format!(
                    "cannot read the caller file: {}",
                    crate::diag::lower_io(&e)
                ),
            )
            .with_help("pass a readable JSON or YAML file such as {\"subject\": \"alice\", \"claims\": {\"groups\": [\"oncall\"]}}")
        })?;
        Caller::parse(path, &text).map(|caller| (caller, text))
    }

    /// Parses a caller document; `path` only names it in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Caller, Diagnostic> {
        let doc: CallerDocument = yaml_serde::from_str(text).map_err(|e| {
            let d = crate::source::yaml_error(path, &e);
            // A misspelt key's help names the keys; any other help speaks of
            // tool files.
            if d.code == "unknown-key" && d.help.is_some() {
                d
            } else {
                Diagnostic {
                    help: Some(DOCUMENT_HELP.into()),
                    ..d
                }
            }
        })?;
        doc.into_caller().map_err(|(at, message)| {
            let (line, column) = crate::source::LocationIndex::build(text).locate(&at);
            Diagnostic::error("caller-file", Location::new(path, line, column), message)
                .with_help(DOCUMENT_HELP)
        })
    }
}

const DOCUMENT_HELP: &str = "a caller document is one mapping: `subject` (a non-empty string), optionally `issuer` (a string) and `claims` (a mapping), e.g. {\"subject\": \"alice\", \"issuer\": \"https://idp.example.com\", \"claims\": {\"groups\": [\"oncall\"]}}";

/// A caller as written: `{subject, issuer?, claims?}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallerDocument {
    pub subject: String,
    #[serde(default)]
    pub issuer: Option<String>,
    #[serde(default, deserialize_with = "crate::json_value::map")]
    pub claims: Map<String, Value>,
}

impl CallerDocument {
    /// The caller it names. The issuer defaults to [`LOCAL_ISSUER`]; `sub`
    /// and `iss` are added to the claims when absent, as a token has them,
    /// and must agree with `subject` and `issuer` when present.
    ///
    /// An error names the key at fault (under the document) and says why.
    pub fn into_caller(self) -> Result<Caller, (YamlPath, String)> {
        if self.subject.is_empty() {
            return Err((
                YamlPath::root().key("subject"),
                "the caller's subject is empty".into(),
            ));
        }
        let issuer = self.issuer.unwrap_or_else(|| LOCAL_ISSUER.to_string());
        let mut claims = self.claims;
        for (claim, key, want) in [
            ("sub", "subject", &self.subject),
            ("iss", "issuer", &issuer),
        ] {
            match claims.get(claim) {
                None => {
                    claims.insert(claim.into(), Value::String(want.clone()));
                }
                Some(Value::String(s)) if s == want => {}
                Some(other) => {
                    return Err((
                        YamlPath::root().key("claims").key(claim),
                        format!(
                            "the caller's claim `{claim}` is {other}, but its {key} is {want:?}: they must agree"
                        ),
                    ));
                }
            }
        }
        Ok(Caller {
            subject: self.subject,
            issuer,
            claims,
            spelled: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_document_fills_issuer_and_claims() {
        let c = Caller::parse(
            Path::new("c.yaml"),
            "subject: alice\nclaims: {groups: [oncall]}\n",
        )
        .unwrap();
        assert_eq!(
            c.to_value(),
            json!({"subject": "alice", "issuer": "local",
                   "claims": {"groups": ["oncall"], "sub": "alice", "iss": "local"}})
        );
        let c = Caller::parse(
            Path::new("c.json"),
            r#"{"subject": "bob", "issuer": "https://idp", "claims": {"sub": "bob"}}"#,
        )
        .unwrap();
        assert_eq!(c.issuer, "https://idp");
        assert_eq!(c.claims["iss"], json!("https://idp"));
    }

    #[test]
    fn a_malformed_document_says_where_and_how_to_fix_it() {
        let d = Caller::parse(Path::new("c.yaml"), "subject: alice\nrole: admin\n").unwrap_err();
        assert_eq!((d.location.line, d.location.column), (2, 1), "{d}");
        assert!(d.message.contains("unknown field `role`"), "{d}");
        assert!(d.help.is_some());
        let d = Caller::parse(Path::new("c.json"), "{\"issuer\": \"x\"}").unwrap_err();
        assert!(d.message.contains("missing field `subject`"), "{d}");
        let d = Caller::parse(Path::new("c.yaml"), "subject: ''\n").unwrap_err();
        assert!(d.message.contains("subject is empty"), "{d}");
        let d = Caller::parse(Path::new("c.yaml"), "subject: a\nclaims: {sub: b}\n").unwrap_err();
        assert!(d.message.contains("must agree"), "{d}");
        assert_eq!((d.location.line, d.location.column), (2, 10), "{d}");
    }
}
