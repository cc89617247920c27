//! Compiling a tool's `run:` section into a [`RunPlan`]: templates
//! parsed, every placeholder checked against `inputSchema`, durations and
//! sizes read, paths made absolute against the tool file, HTTP bases checked.
//!
//! Every problem is a diagnostic at the `file:line:column` of the key that
//! caused it. Nothing here executes anything or looks at the machine: a
//! program's presence and an HTTP `base` given as `{env: NAME}` or
//! `{file: PATH}` are recorded as [`Probe`]s, for `check` to look at and for
//! each call to read.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use super::schema;
use crate::diag::{Diagnostic, Location};
use crate::run_plan::cli::{self, ArgNode, CliSpec, Condition, Program};
use crate::run_plan::http::{self, Auth, Base, HttpSpec};
use crate::run_plan::template::Template;
use crate::run_plan::{Conditions, RunCase, RunPlan, RunSpec, ValueFrom};
use crate::source::run::{
    ArgDecl, AuthDecl, CliDecl, Condition as ConditionDecl, HttpDecl, Problem, Text, ValueSource,
    parse_duration, parse_size,
};
use crate::source::{ToolDecl, ToolSource, YamlPath};

/// What a tool's arguments look like, for checking placeholders.
struct Args<'a> {
    tool: &'a str,
    properties: Option<&'a Map<String, Value>>,
    required: BTreeSet<&'a str>,
}

impl Args<'_> {
    fn declared(&self, name: &str) -> bool {
        self.properties.is_some_and(|p| p.contains_key(name))
    }

    fn schema(&self, name: &str) -> Option<&Value> {
        self.properties.and_then(|p| p.get(name))
    }

    fn known(&self) -> String {
        match self.properties {
            Some(p) if !p.is_empty() => format!(
                "declared arguments: {}",
                p.keys()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => "declare it under inputSchema.properties".to_string(),
        }
    }
}

/// One tool file being compiled: where to report and what paths are relative to.
struct Ctx<'a> {
    file: &'a ToolSource,
    base_dir: PathBuf,
    args: Args<'a>,
    errors: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
    probes: Vec<Probe>,
}

/// Something a tool's `run:` needs from the machine it runs on, where the
/// catalog asks for it. The build only records it; `check` looks
/// (`check::environment`), and a call without it fails closed.
#[derive(Debug, Clone)]
pub struct Probe {
    pub at: Location,
    pub need: Need,
}

#[derive(Debug, Clone)]
pub enum Need {
    /// A program to run: a path that should exist, or a name looked up in
    /// `PATH` at each call.
    Program(Program),
    /// An HTTP base read from the environment or a file at each call.
    Base(Base),
}

impl Ctx<'_> {
    fn at(&self, path: &YamlPath) -> Location {
        self.file.locate(path)
    }

    fn error(
        &mut self,
        code: &'static str,
        at: &YamlPath,
        message: String,
        help: impl Into<String>,
    ) {
        let d = Diagnostic::error(code, self.at(at), message).with_help(help);
        self.errors.push(d);
    }

    /// Parses a template and checks that each placeholder names a declared argument.
    fn template(&mut self, text: &str, at: &YamlPath) -> Option<Template> {
        let t = match Template::parse(text) {
            Ok(t) => t,
            Err(msg) => {
                self.error(
                    "bad-template",
                    at,
                    msg,
                    "placeholders look like {name}, naming an argument",
                );
                return None;
            }
        };
        let mut ok = true;
        for name in t.args() {
            if !self.args.declared(name) {
                let help = self.args.known();
                self.error(
                    "unknown-argument",
                    at,
                    format!(
                        "placeholder `{{{name}}}` of `{}` names an argument that inputSchema does not declare",
                        self.args.tool
                    ),
                    help,
                );
                ok = false;
            }
        }
        ok.then_some(t)
    }

    fn arg_name(&mut self, name: &str, at: &YamlPath, what: &str) -> bool {
        if self.args.declared(name) {
            return true;
        }
        let help = self.args.known();
        self.error(
            "unknown-argument",
            at,
            format!(
                "{what} of `{}` names argument `{name}`, which inputSchema does not declare",
                self.args.tool
            ),
            help,
        );
        false
    }

    fn conditions(&mut self, when: &Map<String, Value>, at: &YamlPath) -> Conditions {
        let mut out = Vec::new();
        for (name, value) in when {
            if self.arg_name(name, &at.key(name), "a `when` condition") {
                out.push((name.clone(), value.clone()));
            }
        }
        Conditions(out)
    }

    /// A problem [`AuthDecl::compile`] or [`External::compile`] found, located.
    fn problem(&mut self, p: Problem) {
        let d = Diagnostic::error(p.code, self.at(&p.at), p.message).with_help(p.help);
        self.errors.push(d);
    }

    /// A literal, or a `{env}` / `{file}` value with relative files made absolute.
    fn value_source(&mut self, v: &ValueSource, at: &YamlPath) -> Option<ValueFrom> {
        v.compile(at, &self.base_dir)
            .map_err(|p| self.problem(p))
            .ok()
    }

    fn duration(&mut self, t: Option<&Text>, at: &YamlPath, default: Duration) -> Duration {
        let Some(Text(text)) = t else { return default };
        match parse_duration(text) {
            Some(d) if !d.is_zero() => d,
            _ => {
                self.error(
                    "bad-duration",
                    at,
                    format!("`{text}` is not a duration"),
                    "write a positive number with a unit: `500ms`, `30s`, `2m`",
                );
                default
            }
        }
    }

    fn size(&mut self, t: Option<&Text>, at: &YamlPath, default: usize) -> usize {
        let Some(Text(text)) = t else { return default };
        match parse_size(text) {
            Some(n) if n > 0 => n,
            _ => {
                self.error(
                    "bad-size",
                    at,
                    format!("`{text}` is not a size"),
                    "write bytes or a number with a unit: `65536`, `64KiB`, `1MiB`",
                );
                default
            }
        }
    }
}

/// Compiles `decl.run`, if any. Errors and warnings go to the given lists.
pub fn compile(
    file: &ToolSource,
    at: &YamlPath,
    decl: &ToolDecl,
    errors: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
    probes: &mut Vec<Probe>,
) -> Option<RunPlan> {
    let run = decl.run.as_ref()?;
    let file_path = std::path::absolute(&file.path).unwrap_or_else(|_| file.path.clone());
    let base_dir = file_path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("/"));
    let required = decl
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut ctx = Ctx {
        file,
        base_dir,
        args: Args {
            tool: &decl.name,
            properties: schema::properties(&decl.input_schema),
            required,
        },
        errors: Vec::new(),
        warnings: Vec::new(),
        probes: Vec::new(),
    };
    let run_at = at.key("run");
    if run.cases.is_empty() {
        ctx.error(
            "empty-run",
            &run_at,
            format!("run of `{}` lists no cases", decl.name),
            "give one `cli` or `http`, or remove `run`",
        );
    }
    let mut cases = Vec::new();
    for (i, case) in run.cases.iter().enumerate() {
        let case_at = if run.is_list {
            run_at.index(i)
        } else {
            run_at.clone()
        };
        let when = ctx.conditions(&case.when, &case_at.key("when"));
        let spec = match (&case.cli, &case.http) {
            (Some(c), None) => {
                compile_cli(&mut ctx, c, &case_at.key("cli")).map(|c| RunSpec::Cli(Box::new(c)))
            }
            (None, Some(h)) => {
                compile_http(&mut ctx, h, &case_at.key("http")).map(|h| RunSpec::Http(Box::new(h)))
            }
            _ => {
                ctx.error(
                    "bad-run",
                    &case_at,
                    format!("a run case of `{}` needs exactly one of `cli` or `http`", decl.name),
                    "run a program with `cli: {program: ..., args: [...]}` or call an api with `http: {method: ..., base: ...}`",
                );
                None
            }
        };
        if let Some(spec) = spec {
            cases.push(RunCase { when, spec });
        }
    }
    let ok = ctx.errors.is_empty();
    errors.append(&mut ctx.errors);
    warnings.append(&mut ctx.warnings);
    probes.append(&mut ctx.probes);
    ok.then_some(RunPlan { cases })
}

fn compile_cli(ctx: &mut Ctx, c: &CliDecl, at: &YamlPath) -> Option<CliSpec> {
    let errors_before = ctx.errors.len();
    let program = if c.program.is_empty() {
        ctx.error(
            "bad-program",
            &at.key("program"),
            "program is empty".into(),
            "name a program (`git`) or give its path",
        );
        Program::Search(String::new())
    } else if c.program.contains('/') {
        Program::Path(cli::absolute(&ctx.base_dir, &c.program))
    } else {
        Program::Search(c.program.clone())
    };
    if !c.program.is_empty() {
        ctx.probes.push(Probe {
            at: ctx.at(&at.key("program")),
            need: Need::Program(program.clone()),
        });
    }

    let required: BTreeSet<String> = ctx.args.required.iter().map(|s| s.to_string()).collect();
    let args = arg_nodes(ctx, &c.args, &at.key("args"), &required, false);

    let mut flags = BTreeSet::new();
    for (i, f) in c.flags.iter().enumerate() {
        if ctx.arg_name(f, &at.key("flags").index(i), "`flags`") {
            flags.insert(f.clone());
        }
    }
    let cwd = c.cwd.as_ref().and_then(|Text(text)| {
        let t = ctx.template(text, &at.key("cwd"))?;
        for name in t.args() {
            if !ctx.args.required.contains(name) {
                ctx.error(
                    "optional-placeholder",
                    &at.key("cwd"),
                    format!("cwd uses `{{{name}}}`, which is not a required argument"),
                    format!("add `{name}` to inputSchema.required"),
                );
            }
        }
        Some(t)
    });

    let mut env_inherit: Vec<String> = cli::DEFAULT_INHERIT.iter().map(|s| s.to_string()).collect();
    let mut env_set = Vec::new();
    if let Some(env) = &c.env {
        if let Some(list) = &env.inherit {
            env_inherit.clear();
            for (i, name) in list.iter().enumerate() {
                if valid_env_name(name) {
                    env_inherit.push(name.clone());
                } else {
                    ctx.error(
                        "bad-env-name",
                        &at.key("env").key("inherit").index(i),
                        format!("`{name}` is not an environment variable name"),
                        "use letters, digits and `_`",
                    );
                }
            }
        }
        for (name, value) in &env.set {
            let value_at = at.key("env").key("set").key(name);
            if !valid_env_name(name) {
                ctx.error(
                    "bad-env-name",
                    &value_at,
                    format!("`{name}` is not an environment variable name"),
                    "use letters, digits and `_`",
                );
                continue;
            }
            if let Some(from) = ctx.value_source(value, &value_at) {
                env_set.push((name.clone(), from));
            }
        }
    }
    if let Some(name) = &c.stdin {
        ctx.arg_name(name, &at.key("stdin"), "`stdin`");
    }
    let timeout = ctx.duration(c.timeout.as_ref(), &at.key("timeout"), cli::DEFAULT_TIMEOUT);
    let max_output = ctx.size(
        c.max_output.as_ref(),
        &at.key("maxOutput"),
        cli::DEFAULT_MAX_OUTPUT,
    );

    (ctx.errors.len() == errors_before).then(|| CliSpec {
        program,
        args,
        flags,
        cwd,
        base_dir: ctx.base_dir.clone(),
        env_inherit,
        env_set,
        stdin: c.stdin.clone(),
        timeout,
        max_output,
    })
}

fn valid_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Compiles argv nodes. `present` holds the arguments known to be present
/// here: the required ones, plus those an enclosing `if` tested. Outside a
/// group, a placeholder must name one of them, or a call without it could
/// only fail.
fn arg_nodes(
    ctx: &mut Ctx,
    decls: &[ArgDecl],
    at: &YamlPath,
    present: &BTreeSet<String>,
    in_group: bool,
) -> Vec<ArgNode> {
    let mut out = Vec::new();
    for (i, d) in decls.iter().enumerate() {
        let here = at.index(i);
        match d {
            ArgDecl::Text(text) => {
                let Some(t) = ctx.template(text, &here) else {
                    continue;
                };
                if t.has_segments() {
                    ctx.error(
                        "bad-template",
                        &here,
                        format!("`{text}`: `{{name*}}` is only for http paths"),
                        "write `{name}`; an array argument already gives one element per item",
                    );
                    continue;
                }
                if !in_group {
                    let missing: Vec<String> = t
                        .args()
                        .filter(|a| !present.contains(*a))
                        .map(str::to_string)
                        .collect();
                    for name in missing {
                        ctx.error(
                            "optional-placeholder",
                            &here,
                            format!("`{text}` uses optional argument `{name}` outside a group, so a call without it could not run"),
                            format!("wrap it in a list, [{}], which is dropped when `{name}` is absent; or add `{name}` to inputSchema.required", serde_json::to_string(text).unwrap_or_default()),
                        );
                    }
                }
                out.push(ArgNode::Element(t));
            }
            ArgDecl::Group(inner) => {
                let nodes = arg_nodes(ctx, inner, &here, present, true);
                out.push(ArgNode::Group(nodes));
            }
            ArgDecl::If(decl) => {
                let mut then_present = present.clone();
                let condition = match &decl.condition {
                    ConditionDecl::Arg(name) => {
                        ctx.arg_name(name, &here.key("if"), "`if`");
                        then_present.insert(name.clone());
                        Condition::Arg(name.clone())
                    }
                    ConditionDecl::When(map) => {
                        let c = ctx.conditions(map, &here.key("if"));
                        for (name, v) in &c.0 {
                            if !v.is_null() {
                                then_present.insert(name.clone());
                            }
                        }
                        Condition::When(c)
                    }
                };
                let then = arg_nodes(ctx, &decl.then, &here.key("then"), &then_present, in_group);
                let otherwise =
                    arg_nodes(ctx, &decl.otherwise, &here.key("else"), present, in_group);
                out.push(ArgNode::If {
                    condition,
                    then,
                    otherwise,
                });
            }
        }
    }
    out
}

fn compile_http(ctx: &mut Ctx, h: &HttpDecl, at: &YamlPath) -> Option<HttpSpec> {
    let errors_before = ctx.errors.len();

    let method = ctx.template(&h.method.0, &at.key("method"));
    if let Some(m) = &method {
        if let Some(lit) = m.as_literal() {
            if !http::METHODS.contains(&lit) {
                ctx.error(
                    "bad-method",
                    &at.key("method"),
                    format!("`{lit}` is not an http method regent sends"),
                    format!("use one of {}", http::METHODS.join(", ")),
                );
            }
        } else if let Some(name) = m.as_single_arg() {
            if !ctx.args.required.contains(name) {
                ctx.error(
                    "optional-placeholder",
                    &at.key("method"),
                    format!("method `{{{name}}}` names an argument that is not required"),
                    format!("add `{name}` to inputSchema.required"),
                );
            }
            let bad: Vec<String> = ctx
                .args
                .schema(name)
                .and_then(|s| s.get("enum"))
                .and_then(Value::as_array)
                .map(|e| {
                    e.iter()
                        .filter(|v| !v.as_str().is_some_and(|s| http::METHODS.contains(&s)))
                        .map(Value::to_string)
                        .collect()
                })
                .unwrap_or_default();
            if !bad.is_empty() {
                ctx.error(
                    "bad-method",
                    &at.key("method"),
                    format!(
                        "the enum of `{name}` allows {}, which are not http methods",
                        bad.join(", ")
                    ),
                    format!("allow only {}", http::METHODS.join(", ")),
                );
            }
        } else {
            ctx.error(
                "bad-method",
                &at.key("method"),
                format!("method `{}` mixes text and placeholders", h.method.0),
                "write a method (`GET`) or one placeholder (`{method}`)",
            );
        }
    }

    let base = base_url(ctx, &h.base, &at.key("base"));

    let mut path = Vec::new();
    if let Some(Text(p)) = &h.path {
        let path_at = at.key("path");
        let trimmed = p.strip_prefix('/').unwrap_or(p);
        if !trimmed.is_empty() {
            for seg in trimmed.split('/') {
                let Some(t) = ctx.template(seg, &path_at) else {
                    continue;
                };
                if t.as_literal().is_some_and(|l| l == "." || l == "..") {
                    ctx.error(
                        "bad-path",
                        &path_at,
                        format!("path `{p}` has a `{seg}` segment"),
                        "write the path without `.` and `..` segments",
                    );
                }
                if t.has_segments() && t.as_single_arg().is_none() {
                    ctx.error(
                        "bad-template",
                        &path_at,
                        format!("`{seg}`: a `{{name*}}` placeholder must be a whole path segment"),
                        "write it between slashes: /files/{path*}",
                    );
                }
                if !t.has_segments() {
                    for name in t.args() {
                        if !ctx.args.required.contains(name) {
                            ctx.error(
                                "optional-placeholder",
                                &path_at,
                                format!("path placeholder `{{{name}}}` names an argument that is not required"),
                                format!("add `{name}` to inputSchema.required, or use `{{{name}*}}`, which is left out when absent"),
                            );
                        }
                    }
                }
                path.push(t);
            }
        }
    }

    let mut query = Vec::new();
    for (name, Text(text)) in &h.query {
        if let Some(t) = ctx.template(text, &at.key("query").key(name)) {
            query.push((name.clone(), t));
        }
    }
    let mut headers = Vec::new();
    for (name, Text(text)) in &h.headers {
        let header_at = at.key("headers").key(name);
        if !http::is_header_name(name) {
            ctx.error(
                "bad-header",
                &header_at,
                format!("`{name}` is not a valid header name"),
                "use letters, digits and `-`",
            );
            continue;
        }
        if http::RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            ctx.error(
                "reserved-header",
                &header_at,
                format!("header `{name}` cannot be set in `headers`"),
                "credentials go under `auth` (bearer, basic or header), read from the environment or a file",
            );
            continue;
        }
        if let Some(t) = ctx.template(text, &header_at) {
            headers.push((name.clone(), t));
        }
    }
    if let Some(body) = &h.body {
        check_body(ctx, body, &at.key("body"));
        if let Some(lit) = method.as_ref().and_then(|m| m.as_literal())
            && (lit == "GET" || lit == "HEAD")
        {
            ctx.error(
                "body-on-get",
                &at.key("body"),
                format!("a {lit} request has no body"),
                "remove `body`, or use POST, PUT or PATCH",
            );
        }
    }
    let auth = h
        .auth
        .as_ref()
        .and_then(|a| compile_auth(ctx, a, &at.key("auth")));
    let timeout = ctx.duration(
        h.timeout.as_ref(),
        &at.key("timeout"),
        http::DEFAULT_TIMEOUT,
    );
    let max_response = ctx.size(
        h.max_response.as_ref(),
        &at.key("maxResponse"),
        http::DEFAULT_MAX_RESPONSE,
    );

    if ctx.errors.len() != errors_before {
        return None;
    }
    Some(HttpSpec::new(
        method?,
        base?,
        path,
        query,
        headers,
        h.body.clone(),
        auth,
        timeout,
        max_response,
        h.redirects.unwrap_or(0),
    ))
}

fn check_body(ctx: &mut Ctx, v: &Value, at: &YamlPath) {
    match v {
        Value::String(s) => {
            ctx.template(s, at);
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                check_body(ctx, item, &at.index(i));
            }
        }
        Value::Object(fields) => {
            for (k, item) in fields {
                check_body(ctx, item, &at.key(k));
            }
        }
        _ => {}
    }
}

fn base_url(ctx: &mut Ctx, v: &ValueSource, at: &YamlPath) -> Option<Base> {
    let from = ctx.value_source(v, at)?;
    let ValueFrom::Literal(text) = from else {
        // Read at each call (and looked at by `check`), never while building.
        let base = Base::Read(from);
        ctx.probes.push(Probe {
            at: ctx.at(at),
            need: Need::Base(base.clone()),
        });
        return Some(base);
    };
    match http::parse_base(&text) {
        Ok(url) => Some(Base::Fixed(url)),
        Err(message) => {
            let help = if message.contains("is not a url") {
                "write an absolute url such as https://api.example.com/v1"
            } else {
                "write an absolute http(s) url such as https://api.example.com/v1"
            };
            ctx.error("bad-base", at, message, help);
            None
        }
    }
}

fn compile_auth(ctx: &mut Ctx, a: &AuthDecl, at: &YamlPath) -> Option<Auth> {
    match a.compile(at, &ctx.base_dir) {
        Ok(auth) => Some(auth),
        Err(problems) => {
            for p in problems {
                ctx.problem(p);
            }
            None
        }
    }
}
