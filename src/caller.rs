//! Who is calling, as a transport verified it: the neutral value that travels
//! from the HTTP layer (a verified JWT) through the protocol layer into
//! `Catalog::resolve`, where it becomes the policy's `input.caller`.
//!
//! It knows nothing of tokens or HTTP: whoever builds one vouches for it.
//! Without one (stdio, or HTTP without `--jwt-jwks-file`) `input.caller` is
//! absent.

use serde_json::{Map, Value};

/// A verified caller: the token's subject, its issuer and all its claims.
#[derive(Debug, Clone, PartialEq)]
pub struct Caller {
    pub subject: String,
    pub issuer: String,
    /// Every claim of the token, `sub` and `iss` included.
    pub claims: Map<String, Value>,
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
}
