//! Running an HTTP request (a compiled [`HttpSpec`], see `run_plan::http`):
//! URL building that cannot leave the declared base, authentication from the
//! environment or files, the clients (one per base and redirect limit), and a
//! capped response.
//!
//! Path placeholders are percent-encoded as whole segments (`/`, `?`, `#`
//! and everything else outside RFC 3986's unreserved set become `%XX`), and a
//! segment that would read as `.` or `..` is refused, since URL parsers
//! resolve those even when encoded. `{name*}` splits a value on `/` into
//! several segments under the same rules. The built URL is checked once more
//! against the base's origin and path prefix before anything is sent.
//! Redirects are not followed unless the tool allows some, and then only
//! within the base. Nothing from the MCP request other than the declared
//! arguments reaches the upstream request.

use std::future::Future;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use reqwest::Url;
use serde_json::{Map, Value};

use super::{Outcome, Refusal, Status, TAIL};
use crate::outbound::{error_chain, install_crypto};
use crate::run_plan::ValueFrom;
use crate::run_plan::http::{Auth, HttpSpec, METHODS};
use crate::run_plan::template::{self, Part, RenderError, Template};

/// A request ready to send. Its `Debug` output hides credentials.
pub struct Prepared {
    pub method: String,
    /// The base the URL was built under, as read for this call.
    pub base: Url,
    pub url: Url,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    auth: Option<PreparedAuth>,
}

enum PreparedAuth {
    Bearer(String),
    Basic(String, String),
    Header(String, String),
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("method", &self.method)
            .field("url", &self.url.as_str())
            .field("headers", &self.headers)
            .field("auth", &self.auth.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl HttpSpec {
    /// Builds the request for `args`, or says why it cannot be sent.
    pub fn prepare(&self, args: &Value) -> Result<Prepared, Refusal> {
        let method = self
            .method
            .render(args)
            .map_err(|e| refusal(e, "the method"))?;
        if !METHODS.contains(&method.as_str()) {
            return Err(Refusal(format!(
                "method {} is not one regent sends; use one of {}",
                template::preview(&method),
                METHODS.join(", ")
            )));
        }

        let base = self.base.resolve().map_err(Refusal)?;
        let mut url = base.clone();
        if !self.path.is_empty() {
            let mut path = base_path(&base).to_string();
            for seg in &self.path {
                for piece in render_segment(seg, args)? {
                    path.push('/');
                    path.push_str(&piece);
                }
            }
            url.set_path(&path);
        }
        let query: Vec<(String, String)> = {
            let mut pairs = Vec::new();
            for (name, t) in &self.query {
                match t.render_each(args) {
                    Ok(values) => pairs.extend(values.into_iter().map(|v| (name.clone(), v))),
                    Err(RenderError::Absent(_)) => {}
                    Err(RenderError::Refused(m)) => return Err(Refusal(m)),
                }
            }
            pairs
        };
        if !query.is_empty() {
            let mut q = url.query_pairs_mut();
            for (k, v) in &query {
                q.append_pair(k, v);
            }
        }
        // The segments cannot leave the base by construction; this check is
        // what makes that a property rather than a hope.
        if url.origin() != base.origin() || !url.path().starts_with(base_path(&base)) {
            return Err(Refusal(format!(
                "the request url {url} would leave the tool's base {base}"
            )));
        }

        let mut headers = Vec::new();
        for (name, t) in &self.headers {
            let value = match t.render(args) {
                Ok(v) => v,
                Err(RenderError::Absent(_)) => continue,
                Err(RenderError::Refused(m)) => return Err(Refusal(m)),
            };
            if value.chars().any(|c| c == '\r' || c == '\n' || c == '\0') {
                return Err(Refusal(format!(
                    "header {name} would hold a line break or NUL byte, which http does not allow"
                )));
            }
            headers.push((name.clone(), value));
        }

        let body = match &self.body {
            None => None,
            Some(t) => render_json(t, args)?
                .map(|v| serde_json::to_vec(&v).expect("json values serialize")),
        };

        let auth = match &self.auth {
            None => None,
            Some(a) => prepare_auth(a)?,
        };
        Ok(Prepared {
            method,
            base,
            url,
            headers,
            body,
            auth,
        })
    }
}

/// Clients by base and redirect limit (a `reqwest::Client` is a handle to
/// a shared pool, and its redirect policy keeps to its base). Bases read at
/// each call may change; past [`CLIENTS_KEPT`] the least used client goes.
static CLIENTS: LazyLock<quick_cache::sync::Cache<(Url, u32), reqwest::Client>> =
    LazyLock::new(|| quick_cache::sync::Cache::new(CLIENTS_KEPT));
const CLIENTS_KEPT: usize = 64;

/// The client for requests under `base` following at most `redirects`
/// redirects within it. Callers asking for the same one at once wait for
/// one build.
fn client(base: &Url, redirects: u32) -> Result<reqwest::Client, String> {
    CLIENTS.get_or_insert_with(&(base.clone(), redirects), || {
        build_client(base, base_path(base), redirects)
    })
}

/// The base's path without a trailing `/`: every request path starts with it.
fn base_path(base: &Url) -> &str {
    base.path().trim_end_matches('/')
}

/// Whether `path` is `base_path` (without its trailing `/`) or below it at a
/// segment boundary: under `/api/v1`, `/api/v1/x` is, `/api/v10/secret` is
/// not. The url crate has already resolved `..` and `%2e%2e` segments.
fn under(base_path: &str, path: &str) -> bool {
    match path.strip_prefix(base_path) {
        Some(rest) => rest.is_empty() || rest.starts_with('/'),
        None => false,
    }
}

fn refusal(e: RenderError, what: &str) -> Refusal {
    match e {
        RenderError::Absent(name) => {
            Refusal(format!("{what} needs argument `{name}`, which is absent"))
        }
        RenderError::Refused(m) => Refusal(m),
    }
}

/// One template segment of the path as zero or more encoded segments.
fn render_segment(seg: &Template, args: &Value) -> Result<Vec<String>, Refusal> {
    if let [
        Part::Arg {
            name,
            segments: true,
        },
    ] = seg.parts.as_slice()
    {
        let Some(value) = template::lookup(args, name) else {
            return Ok(Vec::new());
        };
        let text = template::scalar(name, Some(value)).map_err(|e| refusal(e, "the url path"))?;
        let mut out = Vec::new();
        for piece in text.split('/') {
            check_segment(name, piece)?;
            out.push(encode(piece));
        }
        return Ok(out);
    }
    let text = seg.render(args).map_err(|e| refusal(e, "the url path"))?;
    let name = seg.args().next();
    if let Some(name) = name {
        check_segment(name, &text)?;
    }
    Ok(vec![encode(&text)])
}

fn check_segment(name: &str, text: &str) -> Result<(), Refusal> {
    if text.is_empty() {
        return Err(Refusal(format!(
            "argument `{name}` would make an empty url path segment"
        )));
    }
    if text == "." || text == ".." {
        return Err(Refusal(format!(
            "argument `{name}` would make a url path segment `{text}`, which could leave the tool's base url"
        )));
    }
    Ok(())
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Renders a JSON body template. A string that is exactly one placeholder
/// becomes the argument's value, typed; other strings are interpolated. An
/// absent argument drops its key or item, or the whole body at the top.
pub fn render_json(t: &Value, args: &Value) -> Result<Option<Value>, Refusal> {
    Ok(match t {
        Value::String(s) => {
            let tmpl = Template::parse(s).map_err(Refusal)?;
            if let Some(name) = tmpl.as_single_arg() {
                template::lookup(args, name).cloned()
            } else {
                match tmpl.render(args) {
                    Ok(v) => Some(Value::String(v)),
                    Err(RenderError::Absent(_)) => None,
                    Err(RenderError::Refused(m)) => return Err(Refusal(m)),
                }
            }
        }
        Value::Array(items) => {
            let mut out = Vec::new();
            for i in items {
                if let Some(v) = render_json(i, args)? {
                    out.push(v);
                }
            }
            Some(Value::Array(out))
        }
        Value::Object(fields) => {
            let mut out = Map::new();
            for (k, v) in fields {
                if let Some(v) = render_json(v, args)? {
                    out.insert(k.clone(), v);
                }
            }
            Some(Value::Object(out))
        }
        other => Some(other.clone()),
    })
}

fn prepare_auth(a: &Auth) -> Result<Option<PreparedAuth>, Refusal> {
    let read = |from: &ValueFrom, what: &str| {
        from.read()
            .map_err(|why| Refusal(format!("cannot authenticate ({what}): {why}")))
    };
    Ok(match a {
        Auth::Bearer(t) => read(t, "bearer token")?.map(PreparedAuth::Bearer),
        Auth::Basic { username, password } => {
            match (read(username, "user name")?, read(password, "password")?) {
                (Some(u), Some(p)) => Some(PreparedAuth::Basic(u, p)),
                _ => None,
            }
        }
        Auth::Header { name, value } => {
            read(value, name)?.map(|v| PreparedAuth::Header(name.clone(), v))
        }
    })
}

fn build_client(base: &Url, base_path: &str, redirects: u32) -> Result<reqwest::Client, String> {
    install_crypto();
    let policy = if redirects == 0 {
        reqwest::redirect::Policy::none()
    } else {
        let origin = base.origin();
        let prefix = base_path.to_string();
        let max = redirects as usize;
        reqwest::redirect::Policy::custom(move |attempt| {
            let inside = attempt.url().origin() == origin && under(&prefix, attempt.url().path());
            if attempt.previous().len() > max || !inside {
                attempt.stop()
            } else {
                attempt.follow()
            }
        })
    };
    reqwest::Client::builder()
        .no_proxy()
        .redirect(policy)
        .user_agent(concat!("regent/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot set up the http client: {}", error_chain(&e)))
}

/// Sends `p` and reads at most the cap of the response. `cancel` completing
/// abandons the request.
pub async fn run(spec: &HttpSpec, p: Prepared, cancel: impl Future<Output = ()>) -> Outcome {
    let started = Instant::now();
    let done = |status, output: Vec<u8>, error_tail, content_type| Outcome {
        status,
        output,
        error_tail,
        content_type,
        duration: started.elapsed(),
    };
    let client = match client(&p.base, spec.redirects) {
        Ok(c) => c,
        Err(why) => return done(Status::Failed(why), Vec::new(), String::new(), None),
    };
    let method = reqwest::Method::from_bytes(p.method.as_bytes()).expect("checked method");
    let mut rb = client.request(method, p.url.clone()).timeout(spec.timeout);
    let mut has_content_type = false;
    for (k, v) in &p.headers {
        has_content_type |= k.eq_ignore_ascii_case("content-type");
        rb = rb.header(k.as_str(), v.as_str());
    }
    if let Some(body) = p.body {
        if !has_content_type {
            rb = rb.header("content-type", "application/json");
        }
        rb = rb.body(body);
    }
    rb = match p.auth {
        None => rb,
        Some(PreparedAuth::Bearer(t)) => rb.bearer_auth(t),
        Some(PreparedAuth::Basic(u, pw)) => rb.basic_auth(u, Some(pw)),
        Some(PreparedAuth::Header(name, value)) => {
            match reqwest::header::HeaderValue::from_str(&value) {
                Ok(mut hv) => {
                    hv.set_sensitive(true);
                    rb.header(name.as_str(), hv)
                }
                Err(_) => {
                    return done(
                        Status::Failed(format!(
                            "the secret for header {name} is not a valid header value"
                        )),
                        Vec::new(),
                        String::new(),
                        None,
                    );
                }
            }
        }
    };

    tokio::pin!(cancel);
    let sent = tokio::select! {
        r = rb.send() => r,
        _ = &mut cancel => return done(Status::Cancelled, Vec::new(), String::new(), None),
    };
    let mut resp = match sent {
        Ok(r) => r,
        Err(e) => return done(failure(&e, spec.timeout), Vec::new(), String::new(), None),
    };
    let code = resp.status();
    let content_type = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let location = resp
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);

    let mut body = Vec::new();
    let mut capped = false;
    loop {
        let chunk = tokio::select! {
            c = resp.chunk() => c,
            _ = &mut cancel => return done(Status::Cancelled, body, String::new(), content_type),
        };
        match chunk {
            Ok(Some(bytes)) => {
                let room = spec.max_response - body.len();
                if bytes.len() > room {
                    body.extend_from_slice(&bytes[..room]);
                    capped = true;
                    break;
                }
                body.extend_from_slice(&bytes);
            }
            Ok(None) => break,
            Err(e) => return done(failure(&e, spec.timeout), body, String::new(), content_type),
        }
    }

    let status = if capped {
        Status::OutputCapped(spec.max_response)
    } else if code.is_redirection() {
        Status::Redirect(
            code.as_u16(),
            location.unwrap_or_else(|| "(no location)".into()),
        )
    } else {
        Status::Http(
            code.as_u16(),
            code.canonical_reason().unwrap_or_default().to_string(),
        )
    };
    let tail = if status.is_success() {
        String::new()
    } else {
        super::tail_text(&body, TAIL)
    };
    done(status, body, tail, content_type)
}

fn failure(e: &reqwest::Error, timeout: Duration) -> Status {
    if e.is_timeout() {
        Status::TimedOut(timeout)
    } else {
        Status::Failed(format!("the request failed: {}", error_chain(e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_plan::http::{Base, DEFAULT_MAX_RESPONSE, DEFAULT_TIMEOUT};
    use serde_json::json;

    #[test]
    fn redirects_stay_under_the_base_at_a_segment_boundary() {
        assert!(under("/api/v1", "/api/v1"));
        assert!(under("/api/v1", "/api/v1/"));
        assert!(under("/api/v1", "/api/v1/repos/x"));
        assert!(!under("/api/v1", "/api/v10/secret"));
        assert!(!under("/api/v1", "/api/v1x"));
        assert!(!under("/api/v1", "/api"));
        assert!(!under("/api/v1", "/other"));
        // A base at the root (`http://host/`) has the empty base path.
        assert!(under("", "/anything"));
        assert!(under("", ""));
    }

    fn spec(path: &str) -> HttpSpec {
        let segs = path
            .trim_start_matches('/')
            .split('/')
            .map(|s| Template::parse(s).unwrap())
            .collect();
        HttpSpec::new(
            Template::literal("GET"),
            Base::Fixed(Url::parse("http://127.0.0.1:9/api/").unwrap()),
            segs,
            vec![("q".into(), Template::parse("{q}").unwrap())],
            Vec::new(),
            None,
            None,
            DEFAULT_TIMEOUT,
            DEFAULT_MAX_RESPONSE,
            0,
        )
    }

    fn spec_with_base(base: Base) -> HttpSpec {
        HttpSpec::new(
            Template::literal("GET"),
            base,
            vec![Template::parse("{id}").unwrap()],
            Vec::new(),
            Vec::new(),
            None,
            None,
            DEFAULT_TIMEOUT,
            DEFAULT_MAX_RESPONSE,
            0,
        )
    }

    #[test]
    fn a_base_from_outside_is_read_at_each_call_and_refused_when_missing_or_unusable() {
        let unset = spec_with_base(Base::Read(ValueFrom::Env {
            name: "REGENT_TEST_UNSET_BASE_URL".into(),
            optional: false,
            default: None,
        }));
        let err = unset.prepare(&json!({"id": "x"})).unwrap_err().0;
        assert!(
            err.contains("cannot read the base url") && err.contains("REGENT_TEST_UNSET_BASE_URL"),
            "{err}"
        );

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("base");
        let from_file = spec_with_base(Base::Read(ValueFrom::File {
            path: file.clone(),
            optional: false,
            default: None,
        }));
        assert!(from_file.prepare(&json!({"id": "x"})).is_err());
        std::fs::write(&file, "https://api.example.com/v1\n").unwrap();
        let p = from_file.prepare(&json!({"id": "x"})).unwrap();
        assert_eq!(p.url.as_str(), "https://api.example.com/v1/x");
        std::fs::write(&file, "ftp://api.example.com/\n").unwrap();
        let err = from_file.prepare(&json!({"id": "x"})).unwrap_err().0;
        assert!(err.contains("its scheme is not http or https"), "{err}");
    }

    #[test]
    fn path_values_are_single_encoded_segments() {
        let s = spec("/items/{id}");
        let url = |args: Value| s.prepare(&args).map(|p| p.url.to_string());
        assert_eq!(
            url(json!({"id": "a/b?c#d e"})).unwrap(),
            "http://127.0.0.1:9/api/items/a%2Fb%3Fc%23d%20e"
        );
        assert!(url(json!({"id": ".."})).unwrap_err().0.contains("`..`"));
        assert!(url(json!({"id": "."})).is_err());
        assert!(url(json!({"id": ""})).is_err());
        // `%2e%2e` typed by the caller is encoded again, so it stays inert.
        assert_eq!(
            url(json!({"id": "%2e%2e"})).unwrap(),
            "http://127.0.0.1:9/api/items/%252e%252e"
        );
        assert_eq!(
            url(json!({"id": "x", "q": "a&b=c"})).unwrap(),
            "http://127.0.0.1:9/api/items/x?q=a%26b%3Dc"
        );
    }

    #[test]
    fn multi_segment_placeholders_keep_slashes_but_not_dot_segments() {
        let s = spec("/repos/{path*}");
        let url = |args: Value| s.prepare(&args).map(|p| p.url.to_string());
        assert_eq!(
            url(json!({"path": "contents/READ ME.md"})).unwrap(),
            "http://127.0.0.1:9/api/repos/contents/READ%20ME.md"
        );
        assert_eq!(url(json!({})).unwrap(), "http://127.0.0.1:9/api/repos");
        assert!(url(json!({"path": "a/../../x"})).is_err());
        assert!(url(json!({"path": "a//b"})).is_err());
    }

    #[test]
    fn body_templates_keep_types_and_drop_absent_values() {
        let t = json!({"title": "{title}", "labels": "{labels}", "note": "by {who}", "n": 1});
        let v = render_json(&t, &json!({"title": "x", "labels": ["a"]})).unwrap();
        assert_eq!(v, Some(json!({"title": "x", "labels": ["a"], "n": 1})));
        assert_eq!(render_json(&json!("{body}"), &json!({})).unwrap(), None);
    }
}
