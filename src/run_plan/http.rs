//! A compiled `run.http`: the method, where requests go ([`Base`], fixed or
//! read at each call, checked by [`parse_base`]), the path segments, query,
//! headers and body as templates, authentication from secrets, and the
//! limits; with the lists and checks `catalog/run` compiles against
//! ([`METHODS`], [`RESERVED_HEADERS`], [`is_header_name`]).
//!
//! Building the URL for a call (encoding, staying under the base), reading
//! the secrets, the HTTP client and sending are `exec::http`'s.

use std::time::Duration;

use reqwest::Url;
use serde_json::Value;

use super::ValueFrom;
use super::template::Template;

pub const METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
pub const DEFAULT_MAX_RESPONSE: usize = 1024 * 1024;
/// Headers a tool may not set through `headers`: credentials go through
/// `auth` (so they are read from secrets and never logged), and framing
/// headers are the client library's business.
pub const RESERVED_HEADERS: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
];

/// Where a tool's requests go: a URL written in the catalog, or one read
/// from the environment or a file (`{env: NAME, default: URL}`) at each call,
/// so that building a catalog reads nothing and `check` in CI and `serve` in
/// production compile the same files the same way.
#[derive(Debug, Clone)]
pub enum Base {
    Fixed(Url),
    Read(ValueFrom),
}

impl Base {
    /// The URL, or why there is none to use: missing, unreadable, or not one
    /// [`parse_base`] accepts.
    pub fn resolve(&self) -> Result<Url, String> {
        match self {
            Base::Fixed(url) => Ok(url.clone()),
            Base::Read(from) => match from.read() {
                Ok(Some(text)) => parse_base(&text),
                Ok(None) => Err(format!(
                    "the base url is missing: {} is not set",
                    from.describe()
                )),
                Err(why) => Err(format!("cannot read the base url: {why}")),
            },
        }
    }
}

/// A base URL as text, checked: absolute http(s), a host, no credentials, no
/// fragment, no `.` or `..` segment. The error says which, naming the text.
pub fn parse_base(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("base `{text}` is not a url: {e}"))?;
    let problem = if !matches!(url.scheme(), "http" | "https") {
        Some("its scheme is not http or https")
    } else if url.host().is_none() {
        Some("it has no host")
    } else if !url.username().is_empty() || url.password().is_some() {
        Some("it holds credentials; put them under `auth`")
    } else if url.fragment().is_some() {
        Some("it has a fragment")
    } else if url
        .path_segments()
        .is_some_and(|mut s| s.any(|x| x == "." || x == ".."))
    {
        Some("its path has a `.` or `..` segment")
    } else {
        None
    };
    match problem {
        Some(p) => Err(format!("base `{text}` cannot be used: {p}")),
        None => Ok(url),
    }
}

/// Whether `name` is a header name the HTTP client accepts.
pub fn is_header_name(name: &str) -> bool {
    ::http::HeaderName::from_bytes(name.as_bytes()).is_ok()
}

/// A compiled `run.http`.
#[derive(Debug)]
pub struct HttpSpec {
    pub method: Template,
    pub base: Base,
    /// Path segments after the base's path, one template each.
    pub path: Vec<Template>,
    pub query: Vec<(String, Template)>,
    pub headers: Vec<(String, Template)>,
    pub body: Option<Value>,
    pub auth: Option<Auth>,
    pub timeout: Duration,
    pub max_response: usize,
    pub redirects: u32,
}

#[derive(Debug, Clone)]
pub enum Auth {
    Bearer(ValueFrom),
    Basic {
        username: ValueFrom,
        password: ValueFrom,
    },
    Header {
        name: String,
        value: ValueFrom,
    },
}

impl HttpSpec {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        method: Template,
        base: Base,
        path: Vec<Template>,
        query: Vec<(String, Template)>,
        headers: Vec<(String, Template)>,
        body: Option<Value>,
        auth: Option<Auth>,
        timeout: Duration,
        max_response: usize,
        redirects: u32,
    ) -> HttpSpec {
        HttpSpec {
            method,
            base,
            path,
            query,
            headers,
            body,
            auth,
            timeout,
            max_response,
            redirects,
        }
    }
}
