//! Command-line arguments. Parsing only: what each command does lives in
//! `commands`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "regent",
    version,
    about = "An MCP server whose tools are declared in YAML and decided, call by call, by Rego policies",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the catalog under PATH... as an MCP server on stdio, or over HTTP with --http
    Serve(Box<ServeArgs>),
    /// Validate a catalog without serving it; exit 0 clean, 1 errors found (or warnings, with --deny-warnings), 2 could not run
    Check(CheckArgs),
    /// Run the catalog's *.test.yaml cases and Rego test_* rules; exit 0 when all pass
    Test(TestArgs),
    /// Print TOOL resolved for JSON-ARGUMENTS exactly as tools/resolve would, without a server
    Resolve(ResolveArgs),
    /// Work with the upstream MCP servers a catalog declares (`upstreams:`)
    Upstream(UpstreamArgs),
    /// Work with catalogs as OPA bundles (gzip tarballs in OPA's layout, optionally signed)
    Bundle(BundleArgs),
    /// Print each tool's decision table (listing, one row per argument and caller class, the rule behind each field) and check's findings, as Markdown or one self-contained HTML page
    Review(ReviewArgs),
}

#[derive(Debug, Args)]
pub struct BundleArgs {
    #[command(subcommand)]
    pub command: BundleCommand,
}

#[derive(Debug, Subcommand)]
pub enum BundleCommand {
    /// Build the catalog under DIR into an OPA bundle (reproducible; signed with --signing-key); exit 1 when the catalog does not load
    Build(BundleBuildArgs),
}

#[derive(Debug, Args)]
pub struct BundleBuildArgs {
    /// The catalog directory: tool files, policies, data, tests
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,

    /// Where to write the bundle (a .tar.gz)
    #[arg(long, short, value_name = "FILE")]
    pub output: PathBuf,

    /// The manifest's revision (default: a sha256 of the bundle's files)
    #[arg(long, value_name = "R")]
    pub revision: Option<String>,

    /// Sign the bundle with this private key (PEM: RSA, or EC P-256/P-384 in PKCS#8), as `opa build --signing-key` does
    #[arg(long, value_name = "KEY.pem")]
    pub signing_key: Option<PathBuf>,

    /// The key id the signature names (JWS `kid` and the payload's `keyid`)
    #[arg(long, value_name = "ID", requires = "signing_key")]
    pub key_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReviewFormat {
    /// GitHub-flavoured Markdown, for job summaries and pull-request comments
    Markdown,
    /// One self-contained HTML page (inline CSS, no scripts, no network)
    Html,
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    #[command(flatten)]
    pub tooling: ToolingArgs,

    /// Write the review to FILE instead of standard output
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Output format [default: html when --output ends in .html or .htm, else markdown]
    #[arg(long, value_enum)]
    pub format: Option<ReviewFormat>,

    /// Markdown only: the most bytes to print; a longer review is summarized (per-tool counts) and says so [default: 65536, a GitHub comment's limit; a job summary takes 1048576]
    #[arg(long, value_name = "BYTES", default_value_t = crate::review::markdown::COMMENT_LIMIT)]
    pub max_bytes: usize,

    /// Compare with an earlier catalog and lead with what changed: a git revision (the catalog paths as they were at it, e.g. origin/main) or a path (a directory, file or bundle); a name that is both is refused (write ./NAME for the path)
    #[arg(long, value_name = "REF|PATH")]
    pub base: Option<String>,
}

#[derive(Debug, Args)]
pub struct UpstreamArgs {
    #[command(subcommand)]
    pub command: UpstreamCommand,
}

#[derive(Debug, Subcommand)]
pub enum UpstreamCommand {
    /// Start each upstream the catalog under PATH... declares and print, as JSON, the tools it lists (a snapshot to pin); exit 1 when one cannot be started
    Snapshot(SnapshotArgs),
}

#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// Tool files (*.yaml) declaring upstreams, or directories holding them
    #[arg(value_name = "PATH", default_value = ".")]
    pub paths: Vec<PathBuf>,

    /// Write the snapshot to FILE instead of standard output; to pin it, name it *.snapshot.json (never read as data) and name it in the upstream's `snapshot:`
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Paths and limits for the policy tools (`check`, `test`): like
/// [`CatalogArgs`], but the paths default to the current directory.
#[derive(Debug, Args, Clone)]
pub struct ToolingArgs {
    /// Tool files (*.yaml), policies (*.rego), data (*.json), tests, or directories holding them
    #[arg(value_name = "PATH", default_value = ".")]
    pub paths: Vec<PathBuf>,

    /// The most CPU time one policy evaluation may use, in milliseconds (the evaluating thread's CPU time, so a busy machine does not fail a correct policy; serve counts wall-clock time)
    #[arg(long, value_name = "MS", default_value_t = crate::policy::DEFAULT_POLICY_TIMEOUT_MS)]
    pub policy_timeout_ms: u64,

    /// The most memory size-driving builtins (numbers.range, sprintf, concat…) may produce in one policy evaluation, in MiB
    #[arg(long, value_name = "MB", default_value_t = crate::policy::budget::DEFAULT_POLICY_MEMORY_MB)]
    pub policy_memory_mb: u64,

    /// Require every bundle (*.tar.gz) among the paths to be signed and to verify with this public key (PEM, RSA or EC; or a JWK set); without it a bundle's signature is not verified
    #[arg(long, value_name = "FILE")]
    pub bundle_public_key: Option<PathBuf>,
}

impl ToolingArgs {
    pub fn catalog(&self) -> CatalogArgs {
        CatalogArgs {
            paths: self.paths.clone(),
            policy_timeout_ms: self.policy_timeout_ms,
            policy_memory_mb: self.policy_memory_mb,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckFormat {
    /// For people: rustc-style, coloured on a terminal
    Human,
    /// The stable JSON shape documented in docs/policy-tooling.md
    Json,
    /// SARIF 2.1.0, for code-scanning in CI
    Sarif,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub tooling: ToolingArgs,

    /// Output format
    #[arg(long, value_enum, default_value_t = CheckFormat::Human)]
    pub format: CheckFormat,

    /// Fail (exit 1) on warnings too, for CI gates
    #[arg(long, visible_alias = "strict")]
    pub deny_warnings: bool,

    /// Print every failing decision of each tool (the human report shows the first 3 per tool and counts the rest; JSON and SARIF always carry all)
    #[arg(long)]
    pub all_failures: bool,

    /// Start each upstream that names no pinned `snapshot:` (its command runs, at most 30 s to list its tools) and check its tools; off by default, so checking a catalog runs nothing it declares
    #[arg(long)]
    pub start_upstreams: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TestFormat {
    /// For people: failures with expected and actual side by side
    Human,
    /// JUnit XML, for CI test reports
    Junit,
}

#[derive(Debug, Args)]
pub struct TestArgs {
    #[command(flatten)]
    pub tooling: ToolingArgs,

    /// Output format
    #[arg(long, value_enum, default_value_t = TestFormat::Human)]
    pub format: TestFormat,

    /// Report which policy lines and YAML mapping rules the tests exercised
    #[arg(long)]
    pub coverage: bool,

    /// Run only the cases and Rego tests whose name matches REGEX (a case's
    /// `name`, or its tool and arguments; a Rego test's `data.pkg.test_x`)
    #[arg(long, value_name = "REGEX")]
    pub run: Option<String>,

    /// List every test with its result, not only the failures
    #[arg(short, long)]
    pub verbose: bool,
}

#[derive(Debug, Args)]
pub struct ResolveArgs {
    /// Catalog files or directories (repeatable); the current directory when omitted
    #[arg(long = "config", value_name = "PATH", default_value = ".")]
    pub config: Vec<PathBuf>,

    /// The longest one policy evaluation may run, in milliseconds (wall-clock)
    #[arg(long, value_name = "MS", default_value_t = crate::policy::DEFAULT_POLICY_TIMEOUT_MS)]
    pub policy_timeout_ms: u64,

    /// The most memory size-driving builtins (numbers.range, sprintf, concat…) may produce in one policy evaluation, in MiB
    #[arg(long, value_name = "MB", default_value_t = crate::policy::budget::DEFAULT_POLICY_MEMORY_MB)]
    pub policy_memory_mb: u64,

    /// Also show, on stderr, which YAML or Rego rule produced each field that differs from the listing
    #[arg(long)]
    pub explain: bool,

    /// Answer as to a request that negotiated this extension (repeatable):
    /// io.modelcontextprotocol/tool-resolution for the extension draft's
    /// result, io.github.regent/decision for regent's decision in its `_meta`
    #[arg(long = "extension", value_name = "ID")]
    pub extensions: Vec<String>,

    /// The tool's name
    #[arg(value_name = "TOOL")]
    pub tool: String,

    /// The arguments, as a JSON object ({} when omitted)
    #[arg(value_name = "JSON-ARGUMENTS")]
    pub arguments: Option<String>,

    /// Read the arguments (a JSON object) from FILE, or from standard input with `-`, as `opa eval -i`
    #[arg(short, long, value_name = "FILE", conflicts_with = "arguments")]
    pub input: Option<PathBuf>,

    /// Resolve as the caller in FILE (policies' `input.caller`): a JSON or YAML document {subject, issuer?, claims?}
    #[arg(long, value_name = "FILE")]
    pub caller: Option<PathBuf>,
}

/// Settings shared by every command that loads a catalog.
#[derive(Debug, Args, Clone)]
pub struct CatalogArgs {
    /// Tool files (*.yaml), policies (*.rego), data (*.json), or directories holding them
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,

    /// The longest one policy evaluation may run, in milliseconds (wall-clock)
    #[arg(long, value_name = "MS", default_value_t = crate::policy::DEFAULT_POLICY_TIMEOUT_MS)]
    pub policy_timeout_ms: u64,

    /// The most memory size-driving builtins (numbers.range, sprintf, concat…) may produce in one policy evaluation, in MiB
    #[arg(long, value_name = "MB", default_value_t = crate::policy::budget::DEFAULT_POLICY_MEMORY_MB)]
    pub policy_memory_mb: u64,
}

#[derive(Debug, Args)]
#[command(mut_arg("paths", |a| a.required(false).required_unless_present("bundle_url")))]
pub struct ServeArgs {
    #[command(flatten)]
    pub catalog: CatalogArgs,

    /// Serve the catalog of the OPA bundle at URL (http or https), polled for new revisions; with
    /// PATHs, the bundle (Rego and data, as `opa build` makes) is the policy part of the catalog
    /// whose tools are under PATH
    #[arg(long, value_name = "URL", requires = "bundle_dir")]
    pub bundle_url: Option<String>,

    /// Require the bundle to be signed and to verify with this public key (PEM, RSA or EC; or a JWK set)
    #[arg(long, value_name = "FILE", requires = "bundle_url")]
    pub bundle_public_key: Option<PathBuf>,

    /// Trust only the CA certificates in FILE (PEM) for an https --bundle-url, instead of the
    /// system's roots (a private CA, as OPA's services[].tls.ca_cert)
    #[arg(long, value_name = "FILE", requires = "bundle_url")]
    pub bundle_ca: Option<PathBuf>,

    /// Seconds between two polls of --bundle-url (each given or taken 15% at random)
    #[arg(long, value_name = "SECS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub bundle_poll: u64,

    /// Where the last good bundle is kept (its tarball and ETag) and unpacked; a restart serves it without the server
    #[arg(long, value_name = "DIR", requires = "bundle_url")]
    pub bundle_dir: Option<PathBuf>,

    /// Append one JSON line per resolve and call decision to PATH (default: standard error)
    #[arg(long, value_name = "PATH")]
    pub decision_log: Option<PathBuf>,

    /// Sync each call's intent line to disk (fdatasync of the --decision-log file) before the
    /// call runs anything, so a side effect has its line even after a machine crash
    #[arg(long)]
    pub decision_log_sync: bool,

    /// Include the call arguments in decision-log lines (otherwise only their digest)
    #[arg(long)]
    pub log_arguments: bool,

    /// Also POST decision-log lines to URL in batches, as OPA's decision-log plugin does (a gzip-compressed JSON array)
    #[arg(long, value_name = "URL", value_parser = crate::decisions::ship::parse_url)]
    pub decision_log_url: Option<reqwest::Url>,

    /// How many decisions may wait for --decision-log-url; beyond, the oldest are dropped (and counted)
    #[arg(long, value_name = "N", default_value_t = crate::decisions::ship::DEFAULT_BUFFER, value_parser = crate::decisions::ship::parse_buffer)]
    pub decision_log_buffer: usize,

    /// How many bytes of decision lines may wait for --decision-log-url, the upload in flight
    /// included (OPA's buffer_size_limit_bytes); beyond, the oldest are dropped (and counted)
    #[arg(long, value_name = "SIZE", default_value = "32MiB", value_parser = crate::decisions::ship::parse_bytes("--decision-log-buffer-bytes"))]
    pub decision_log_buffer_bytes: usize,

    /// The largest upload to --decision-log-url: bytes of the JSON array before gzip (a
    /// single larger line goes alone)
    #[arg(long, value_name = "SIZE", default_value = "1MiB", value_parser = crate::decisions::ship::parse_bytes("--decision-log-upload-bytes"))]
    pub decision_log_upload_bytes: usize,

    /// The longest decision-log line (file, stderr and collector alike); a longer one has its
    /// arguments, then any other large field, replaced by a marker and lists them in `truncated`
    #[arg(long, value_name = "SIZE", default_value = "1MiB", value_parser = crate::decisions::parse_line_bytes)]
    pub decision_log_line_bytes: usize,

    /// A label KEY=VALUE added to every decision-log line's OPA `labels` (repeatable)
    #[arg(long, value_name = "KEY=VALUE", value_parser = crate::decisions::parse_label)]
    pub decision_log_label: Vec<(String, String)>,

    /// Erase PATH from every decision-log line's input before it is written, as OPA's masking
    /// does (repeatable): /input/arguments/KEY[/KEY...], /input/caller[/subject|/issuer];
    /// a line lists what it lost in `erased`
    #[arg(long, value_name = "PATH", value_parser = crate::decisions::parse_mask)]
    pub decision_log_mask: Vec<crate::decisions::Mask>,

    /// HMAC key (at least 32 bytes) for the requestState of 2026-07-28
    /// confirmations; default: a random key generated at start
    #[arg(long, value_name = "PATH")]
    pub request_state_key_file: Option<PathBuf>,

    /// Redis (or Valkey) that remembers spent 2026-07-28 requestStates for every
    /// replica, so a state is accepted once across the fleet: redis://[USER[:PASSWORD]@]HOST:PORT[/DB]
    /// or rediss://… (TLS); needs --request-state-key-file; default: remembered in this process
    #[arg(long, value_name = "URL")]
    pub request_state_store: Option<String>,

    /// Password for --request-state-store, read from FILE (one trailing newline removed);
    /// default: env REGENT_REQUEST_STATE_STORE_PASSWORD, then the URL's
    #[arg(long, value_name = "FILE", requires = "request_state_store")]
    pub request_state_store_password_file: Option<PathBuf>,

    /// PEM certificates to trust for a rediss:// --request-state-store (a private CA) instead
    /// of the system's roots
    #[arg(long, value_name = "FILE", requires = "request_state_store")]
    pub request_state_store_ca: Option<PathBuf>,

    /// How long a 2026-07-28 requestState stays valid, in seconds
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    pub request_state_ttl: u64,

    /// Do not watch PATH... for changes (SIGHUP still reloads)
    #[arg(long)]
    pub no_watch: bool,

    /// Serve a catalog even where `regent check` refuses it with an error
    /// found by running its rules (failing, conflicting or riskier than
    /// listed on sample arguments); each such call still fails closed. For
    /// testing regent's run-time guards, not for production
    #[arg(long)]
    pub skip_load_check: bool,

    /// Keep the reload status as JSON in FILE, rewritten atomically after every reload attempt
    #[arg(long, value_name = "FILE")]
    pub status_file: Option<PathBuf>,

    /// Over stdio, the caller every request is made by (policies' `input.caller`): a JSON or YAML
    /// document {subject, issuer?, claims?} at PATH, trusted as configuration (or set
    /// REGENT_CALLER_FILE); refused with --http, where callers come from verified tokens
    #[arg(long, value_name = "PATH")]
    pub caller_file: Option<PathBuf>,

    /// The most tool executions (tools/call) running at once, over all sessions; one more is refused with -32603
    #[arg(long, value_name = "N", default_value_t = crate::protocol::call::DEFAULT_MAX_CONCURRENT_CALLS)]
    pub max_concurrent_calls: usize,

    /// Refuse a tools/call whose resolved securitySchemes need OAuth scopes the caller's token
    /// (or --caller-file claims) does not grant (`scope` or `scp`); over HTTP a 403 with
    /// WWW-Authenticate: Bearer error="insufficient_scope"
    #[arg(long)]
    pub enforce_scopes: bool,

    #[command(flatten)]
    pub http: HttpArgs,
}

/// `serve --http`: MCP Streamable HTTP instead of stdio. See docs/http.md.
#[derive(Debug, Args, Clone)]
#[command(next_help_heading = "HTTP")]
pub struct HttpArgs {
    /// Serve MCP over HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8080; port 0 picks a free port)
    #[arg(long, value_name = "ADDR")]
    pub http: Option<std::net::SocketAddr>,

    /// Allow --http to bind an address that is not loopback
    #[arg(long, requires = "http")]
    pub allow_remote: bool,

    /// A Host (name or name:port) clients may address; repeatable; replaces the loopback defaults
    #[arg(long = "allowed-host", value_name = "HOST", requires = "http")]
    pub allowed_hosts: Vec<String>,

    /// A browser Origin (scheme://host[:port|:*]) allowed to call; repeatable; replaces the loopback defaults
    #[arg(long = "allowed-origin", value_name = "ORIGIN", requires = "http")]
    pub allowed_origins: Vec<String>,

    /// Require `Authorization: Bearer TOKEN`, with TOKEN read from PATH (or set REGENT_AUTH_TOKEN)
    #[arg(long, value_name = "PATH", requires = "http", conflicts_with = "jwks")]
    pub auth_token_file: Option<PathBuf>,

    /// Require a JWT bearer token signed by a key of the JWKS (JSON Web Key Set) at PATH; its claims reach policies as `input.caller`
    #[arg(long, value_name = "PATH", group = "jwks", requires_all = ["http", "jwt_issuer"])]
    pub jwt_jwks_file: Option<PathBuf>,

    /// As --jwt-jwks-file, with the JWKS fetched from an https:// URL (the identity provider's jwks_uri), refetched periodically and when a token names an unknown key id
    #[arg(long, value_name = "URL", group = "jwks", requires_all = ["http", "jwt_issuer"])]
    pub jwt_jwks_url: Option<String>,

    /// How often the JWKS of --jwt-jwks-url is refetched, in seconds
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 300,
        requires = "jwt_jwks_url"
    )]
    pub jwt_jwks_refresh_seconds: u64,

    /// A CA certificate (PEM) to trust, beside the system's, for the server of --jwt-jwks-url
    #[arg(long, value_name = "PATH", requires = "jwt_jwks_url")]
    pub jwt_jwks_ca: Option<PathBuf>,

    /// The issuer (`iss`) a JWT must name
    #[arg(long, value_name = "ISS", requires = "jwks")]
    pub jwt_issuer: Option<String>,

    /// An audience (`aud`) a JWT may name; repeatable; the token must name one of them (--oauth-resource is one too)
    #[arg(long = "jwt-audience", value_name = "AUD", requires = "jwks")]
    pub jwt_audiences: Vec<String>,

    /// The JWT signature algorithms accepted (public-key ones only: `none` and HS* are refused)
    #[arg(
        long,
        value_name = "ALG,...",
        value_delimiter = ',',
        default_value = crate::http::jwt::DEFAULT_ALGORITHMS,
        requires = "jwks"
    )]
    pub jwt_algorithms: Vec<String>,

    /// Clock skew allowed when checking a JWT's `exp` and `nbf`, in seconds
    #[arg(long, value_name = "SECS", default_value_t = 60, requires = "jwks")]
    pub jwt_leeway_seconds: u64,

    /// This server's OAuth resource identifier (e.g. https://mcp.example.com/mcp): serves its protected resource metadata (RFC 9728), names it in every 401, and is an audience tokens may name; needs a JWT key set
    #[arg(long, value_name = "URL", requires = "http")]
    pub oauth_resource: Option<String>,

    /// An authorization server (issuer URL) clients get tokens from, for the metadata; repeatable; default: --jwt-issuer
    #[arg(
        long = "oauth-authorization-server",
        value_name = "URL",
        requires = "http"
    )]
    pub oauth_authorization_servers: Vec<String>,

    /// A scope this server understands, for the metadata and the 401's scope; repeatable or comma-separated
    #[arg(
        long = "oauth-scopes-supported",
        value_name = "SCOPE,...",
        value_delimiter = ',',
        requires = "http"
    )]
    pub oauth_scopes_supported: Vec<String>,

    /// A page for people about this server, for the metadata's resource_documentation
    #[arg(long, value_name = "URL", requires = "http")]
    pub oauth_resource_documentation: Option<String>,

    /// The largest request body accepted, in bytes
    #[arg(long, value_name = "BYTES", default_value_t = 4 * 1024 * 1024, requires = "http")]
    pub max_body_bytes: usize,

    /// The most HTTP connections open at once; past it a new connection is closed at once
    #[arg(long, value_name = "N", default_value_t = 1024, requires = "http")]
    pub max_connections: usize,

    /// The most HTTP connections open at once from one IP address (default and 0: no per-address limit, as behind a load balancer or proxy, where every connection comes from its address; for clients that connect directly)
    #[arg(long, value_name = "N", requires = "http")]
    pub max_connections_per_peer: Option<usize>,

    /// The longest one MCP request may take, from its first byte to the end of its response, in seconds
    #[arg(long, value_name = "SECS", default_value_t = 120, requires = "http")]
    pub request_timeout_secs: u64,

    /// On SIGINT/SIGTERM, how long requests in flight may take to finish, in seconds
    #[arg(long, value_name = "SECS", default_value_t = 30, requires = "http")]
    pub shutdown_grace_secs: u64,
}
