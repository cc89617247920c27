//! The serde model of a tool's `resolvers:` section: parameters the server
//! fills itself instead of taking them from the model, as written, checked
//! for shape only.
//!
//! ```yaml
//! resolvers:
//!   repo: {roots: first}              # the client's first file:// root
//!   org: {env: REGENT_ORG}            # an environment variable
//!   token: {file: secrets/token}      # a file, relative to this tool file
//!   branch: {policy: default_branch, needs: [org]}   # a rule of the tool's policy
//!   sure:
//!     elicit: {message: "Delete {branch} in {org}?"} # the user
//! ```
//!
//! Each resolver names exactly one source; which one, whether its
//! dependencies form a cycle, and whether the parameter is declared are
//! `catalog::resolvers`' checks. Running them is `fill`'s job.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// `resolvers:`: parameter name to how the server fills it.
pub type Resolvers = BTreeMap<String, ResolverDecl>;

/// One resolver: exactly one source key, plus what it depends on.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolverDecl {
    /// The value of an environment variable of the server's.
    #[serde(default)]
    pub env: Option<String>,
    /// The content of a file (one trailing newline removed); a relative path
    /// is taken from the directory of the tool file.
    #[serde(default)]
    pub file: Option<String>,
    /// Ask the user.
    #[serde(default)]
    pub elicit: Option<ElicitDecl>,
    /// The client's roots (`roots/list`).
    #[serde(default)]
    pub roots: Option<RootsDecl>,
    /// A rule of the tool's policy package, evaluated on the arguments known
    /// so far (or a full reference, `data.lib.x.y`).
    #[serde(default)]
    pub policy: Option<String>,
    /// Arguments and other resolved parameters this one needs first.
    /// Placeholders in an `elicit` message are added automatically.
    #[serde(default)]
    pub needs: Vec<String>,
}

/// The source keys, for messages.
pub const SOURCES: &[&str] = &["env", "file", "elicit", "roots", "policy"];

/// A question for the user.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElicitDecl {
    /// What the user is asked; `{name}` placeholders show other arguments.
    pub message: String,
    /// The requested schema: a flat object of strings, numbers, booleans and
    /// enums. Without it the user is asked for the parameter itself, with the
    /// parameter's own schema; with it the parameter receives the whole answer.
    #[serde(default)]
    pub schema: Option<Value>,
}

/// Which of the client's roots fills the parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RootsDecl {
    /// The filesystem path of the first `file://` root (a string).
    First,
    /// The filesystem paths of every `file://` root (an array of strings).
    All,
}
