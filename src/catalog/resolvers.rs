//! Parameter resolvers, compiled: which parameters the server fills, from
//! where, in which order, and the schemas they are checked against.
//!
//! At load this module checks what a person can get wrong in a `resolvers:`
//! section: a resolver with no source or several, a parameter `inputSchema`
//! does not declare, a dependency on nothing, a requested schema MCP
//! elicitation cannot carry, and dependency cycles, reported with the whole
//! cycle (`a -> b -> a`). The result is a list in dependency order, so that
//! filling is one pass. Evaluating a `policy` resolver's rule is prepared by
//! the builder with the tool's engine; reading files and environment
//! variables and asking the client happen per call, in `fill` and `protocol`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde_json::{Map, Value, json};

use super::schema;
use crate::diag::{Diagnostic, Location};
use crate::policy::engine as policy;
use crate::run_plan::template::{Part, Template};
use crate::source::resolvers::{ElicitDecl, ResolverDecl, RootsDecl, SOURCES};
use crate::source::{ToolDecl, ToolSource, YamlPath};

/// One parameter the server fills.
pub struct Resolver {
    pub param: String,
    pub source: Source,
    /// Parameters (arguments or resolved) that must have values first.
    pub needs: Vec<String>,
    pub location: Location,
    /// The parameter's own schema from `inputSchema`.
    validator: jsonschema::Validator,
    /// Whether the parameter's schema says it is a string: values from the
    /// environment or a file are taken as text, otherwise parsed as JSON.
    pub is_text: bool,
}

/// Where a resolved value comes from.
pub enum Source {
    Env(String),
    File(PathBuf),
    Elicit(Elicit),
    Roots(RootsDecl),
    /// The rule to evaluate; filled in by the builder once the tool's engine
    /// exists (`None` only while compiling).
    Policy {
        rule: String,
        step: Option<policy::Step>,
    },
}

/// A question for the user.
pub struct Elicit {
    pub message: Template,
    /// MCP's `requestedSchema`.
    pub requested: Value,
    /// Whether the parameter receives the whole answer (an explicit schema)
    /// rather than the one field named after it.
    pub whole: bool,
    validator: jsonschema::Validator,
}

impl Resolver {
    /// Whether filling needs the client (a question or its roots).
    pub fn is_interactive(&self) -> bool {
        matches!(self.source, Source::Elicit(_) | Source::Roots(_))
    }

    /// Every reason `value` fails the parameter's schema.
    pub fn validate(&self, value: &Value) -> Vec<schema::ArgError> {
        schema::validate(&self.validator, value)
    }

    /// A short description of the source, for messages (`environment variable X`).
    pub fn describe(&self) -> String {
        match &self.source {
            Source::Env(v) => format!("environment variable {v}"),
            Source::File(p) => format!("file {}", p.display()),
            Source::Elicit(_) => "the user's answer".to_string(),
            Source::Roots(_) => "the client's roots".to_string(),
            Source::Policy { rule, .. } => format!("policy rule {rule}"),
        }
    }
}

impl Elicit {
    /// Every reason an accepted answer fails the requested schema.
    pub fn validate(&self, content: &Value) -> Vec<schema::ArgError> {
        schema::validate(&self.validator, content)
    }
}

/// The property keywords MCP elicitation's primitive schemas allow.
const PRIMITIVE_KEYS: &[&str] = &[
    "type",
    "title",
    "description",
    "enum",
    "enumNames",
    "oneOf",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "format",
    "default",
];

/// Compiles `decl.resolvers` in dependency order. Problems go to `diags`;
/// a resolver with a problem is left out (the tool then fails to load).
pub fn compile(
    file: &ToolSource,
    at: &YamlPath,
    decl: &ToolDecl,
    diags: &mut Vec<Diagnostic>,
) -> Vec<Resolver> {
    if decl.resolvers.is_empty() {
        return Vec::new();
    }
    let props = schema::properties(&decl.input_schema);
    let mut compiled: BTreeMap<&str, Resolver> = BTreeMap::new();
    for (param, r) in &decl.resolvers {
        let r_at = at.key("resolvers").key(param);
        let location = file.locate(&r_at);
        let Some(prop) = props.and_then(|p| p.get(param)) else {
            diags.push(
                Diagnostic::error(
                    "unknown-parameter",
                    location,
                    format!("`{}` resolves parameter `{param}`, which inputSchema does not declare", decl.name),
                )
                .with_help(format!(
                    "declare `{param}` under inputSchema.properties with the schema its values must match"
                )),
            );
            continue;
        };
        // Checked before the source, so both problems show at once.
        let mut ok = true;
        for (i, need) in r.needs.iter().enumerate() {
            if props.is_none_or(|p| !p.contains_key(need)) {
                ok = false;
                diags.push(unknown_need(
                    file.locate(&r_at.key("needs").index(i)),
                    decl,
                    param,
                    need,
                    props,
                ));
            }
        }
        let Some(source) = source(file, &r_at, decl, param, prop, r, diags) else {
            continue;
        };
        let validator = match schema::compile(
            prop,
            file,
            &at.key("inputSchema").key("properties").key(param),
            &format!("the schema of `{param}`"),
        ) {
            Ok(v) => v,
            Err(d) => {
                diags.push(d);
                continue;
            }
        };
        let mut needs: Vec<String> = r.needs.clone();
        if let Source::Elicit(e) = &source {
            needs.extend(e.message.args().map(str::to_string));
        }
        needs.sort();
        needs.dedup();
        if let Source::Elicit(e) = &source {
            for name in e.message.args() {
                if props.is_none_or(|p| !p.contains_key(name)) {
                    ok = false;
                    diags.push(unknown_need(
                        file.locate(&r_at.key("elicit").key("message")),
                        decl,
                        param,
                        name,
                        props,
                    ));
                }
            }
        }
        if !ok {
            continue;
        }
        let is_text = prop.get("type").and_then(Value::as_str) == Some("string")
            || prop.get("type").is_none();
        compiled.insert(
            param,
            Resolver {
                param: param.clone(),
                source,
                needs,
                location: file.locate(&r_at),
                validator,
                is_text,
            },
        );
    }
    order(file, at, decl, compiled, diags)
}

fn unknown_need(
    location: Location,
    decl: &ToolDecl,
    param: &str,
    need: &str,
    props: Option<&Map<String, Value>>,
) -> Diagnostic {
    let known: Vec<String> = props
        .map(|p| p.keys().map(|k| format!("`{k}`")).collect())
        .unwrap_or_default();
    Diagnostic::error(
        "unknown-parameter",
        location,
        format!(
            "the resolver of `{param}` in `{}` needs `{need}`, which inputSchema does not declare",
            decl.name
        ),
    )
    .with_help(if known.is_empty() {
        "declare it under inputSchema.properties".to_string()
    } else {
        format!("declared parameters: {}", known.join(", "))
    })
}

/// The one source a resolver names, compiled.
fn source(
    file: &ToolSource,
    r_at: &YamlPath,
    decl: &ToolDecl,
    param: &str,
    prop: &Value,
    r: &ResolverDecl,
    diags: &mut Vec<Diagnostic>,
) -> Option<Source> {
    let given: Vec<&str> = SOURCES
        .iter()
        .copied()
        .filter(|k| match *k {
            "env" => r.env.is_some(),
            "file" => r.file.is_some(),
            "elicit" => r.elicit.is_some(),
            "roots" => r.roots.is_some(),
            _ => r.policy.is_some(),
        })
        .collect();
    if given.len() != 1 {
        let message = if given.is_empty() {
            format!(
                "the resolver of `{param}` in `{}` names no source",
                decl.name
            )
        } else {
            format!(
                "the resolver of `{param}` in `{}` names {} sources ({}); a parameter has one",
                decl.name,
                given.len(),
                given.join(", ")
            )
        };
        diags.push(
            Diagnostic::error("resolver-source", file.locate(r_at), message)
                .with_help(format!("give exactly one of: {}", SOURCES.join(", "))),
        );
        return None;
    }
    if let Some(v) = &r.env {
        return non_empty(file, &r_at.key("env"), v, "env", diags).then(|| Source::Env(v.clone()));
    }
    if let Some(f) = &r.file {
        if !non_empty(file, &r_at.key("file"), f, "file", diags) {
            return None;
        }
        let path = PathBuf::from(f);
        let path = if path.is_absolute() {
            path
        } else {
            file.path
                .parent()
                .unwrap_or(std::path::Path::new("."))
                .join(path)
        };
        return Some(Source::File(path));
    }
    if let Some(roots) = r.roots {
        let want = if roots == RootsDecl::First {
            "string"
        } else {
            "array"
        };
        let ty = prop.get("type").and_then(Value::as_str);
        if ty.is_some_and(|t| t != want) {
            diags.push(
                Diagnostic::error(
                    "resolver-type",
                    file.locate(&r_at.key("roots")),
                    format!(
                        "`roots: {}` gives `{param}` {}, but its schema says type {}",
                        if roots == RootsDecl::First {
                            "first"
                        } else {
                            "all"
                        },
                        if want == "string" {
                            "a path (a string)"
                        } else {
                            "a list of paths (an array)"
                        },
                        ty.unwrap_or("?")
                    ),
                )
                .with_help(format!(
                    "declare `{param}` with `type: {want}`, or use `roots: {}`",
                    if want == "string" { "all" } else { "first" }
                )),
            );
            return None;
        }
        return Some(Source::Roots(roots));
    }
    if let Some(rule) = &r.policy {
        if !non_empty(file, &r_at.key("policy"), rule, "policy", diags) {
            return None;
        }
        let reference = if rule.starts_with("data.") {
            rule.clone()
        } else if let Some(pkg) = &decl.policy {
            crate::rego::generate::rule_ref(pkg, rule)
        } else {
            diags.push(
                Diagnostic::error(
                    "resolver-policy",
                    file.locate(&r_at.key("policy")),
                    format!(
                        "the resolver of `{param}` names rule `{rule}`, but `{}` has no policy package",
                        decl.name
                    ),
                )
                .with_help("add `policy: <package>` to the tool, or write the full reference `data.<package>.<rule>`"),
            );
            return None;
        };
        return Some(Source::Policy {
            rule: reference,
            step: None,
        });
    }
    let e = r.elicit.as_ref()?;
    elicit(file, &r_at.key("elicit"), param, prop, e, diags).map(Source::Elicit)
}

fn non_empty(
    file: &ToolSource,
    at: &YamlPath,
    v: &str,
    key: &str,
    diags: &mut Vec<Diagnostic>,
) -> bool {
    if v.trim().is_empty() {
        diags.push(
            Diagnostic::error(
                "resolver-source",
                file.locate(at),
                format!("`{key}` is empty"),
            )
            .with_help(format!("name the {key} to read")),
        );
        return false;
    }
    true
}

fn elicit(
    file: &ToolSource,
    at: &YamlPath,
    param: &str,
    prop: &Value,
    e: &ElicitDecl,
    diags: &mut Vec<Diagnostic>,
) -> Option<Elicit> {
    let message = match Template::parse(&e.message) {
        Ok(t) => t,
        Err(why) => {
            diags.push(
                Diagnostic::error("resolver-message", file.locate(&at.key("message")), why)
                    .with_help("placeholders are `{name}` of a parameter; write `{{` for a brace"),
            );
            return None;
        }
    };
    if message
        .parts
        .iter()
        .any(|p| matches!(p, Part::Arg { segments: true, .. }))
    {
        diags.push(
            Diagnostic::error(
                "resolver-message",
                file.locate(&at.key("message")),
                "`{name*}` is only meaningful in an http path",
            )
            .with_help("write `{name}`"),
        );
        return None;
    }
    let (requested, whole, schema_at) = match &e.schema {
        Some(s) => (s.clone(), true, at.key("schema")),
        None => {
            let mut field = Map::new();
            if let Some(obj) = prop.as_object() {
                for (k, v) in obj {
                    if PRIMITIVE_KEYS.contains(&k.as_str()) {
                        field.insert(k.clone(), v.clone());
                    }
                }
            }
            (
                json!({"type": "object", "properties": {param: field}, "required": [param]}),
                false,
                at.clone(),
            )
        }
    };
    if let Some(why) = not_flat(&requested) {
        let help = if whole {
            "MCP elicitation asks for a flat object: give `schema` with `type: object` and properties of type string, number, integer or boolean (enums allowed)"
        } else {
            "MCP elicitation asks for strings, numbers, integers, booleans and enums; give the parameter such a type, or an explicit `schema`"
        };
        diags.push(
            Diagnostic::error(
                "elicit-schema",
                file.locate(&schema_at),
                format!("the question for `{param}` cannot be asked: {why}"),
            )
            .with_help(help),
        );
        return None;
    }
    if whole
        && prop
            .get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| t != "object")
    {
        diags.push(
            Diagnostic::error(
                "resolver-type",
                file.locate(&at.key("schema")),
                format!("with an explicit `schema`, `{param}` receives the whole answer (an object), but its schema says another type"),
            )
            .with_help(format!("declare `{param}` with `type: object`, or drop `schema` to ask for `{param}` itself")),
        );
        return None;
    }
    let validator = match schema::compile(&requested, file, &schema_at, "the requested schema") {
        Ok(v) => v,
        Err(d) => {
            diags.push(d);
            return None;
        }
    };
    Some(Elicit {
        message,
        requested,
        whole,
        validator,
    })
}

/// Why `schema` is not what MCP elicitation can request, if it is not.
fn not_flat(schema: &Value) -> Option<String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Some("the requested schema must have `type: object`".into());
    }
    let Some(props) = schema::properties(schema) else {
        return Some("the requested schema has no `properties`".into());
    };
    for (k, p) in props {
        let ty = p.get("type").and_then(Value::as_str);
        let enumerated = p.get("enum").is_some() || p.get("oneOf").is_some();
        match ty {
            Some("string" | "number" | "integer" | "boolean") => {}
            None if enumerated => {}
            Some(t) => {
                return Some(format!(
                    "`{k}` has type {t}; only strings, numbers, integers, booleans and enums can be asked"
                ));
            }
            None => return Some(format!("`{k}` has no `type`")),
        }
    }
    None
}

/// Orders resolvers so that each comes after every resolver it needs, and
/// reports cycles. Needs that are plain arguments impose no order.
fn order(
    file: &ToolSource,
    at: &YamlPath,
    decl: &ToolDecl,
    mut compiled: BTreeMap<&str, Resolver>,
    diags: &mut Vec<Diagnostic>,
) -> Vec<Resolver> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Visiting,
        Done,
    }
    fn visit<'a>(
        name: &'a str,
        graph: &BTreeMap<&'a str, Vec<&'a str>>,
        marks: &mut BTreeMap<&'a str, Mark>,
        stack: &mut Vec<&'a str>,
        out: &mut Vec<&'a str>,
        cycles: &mut Vec<Vec<&'a str>>,
    ) {
        match marks.get(name) {
            Some(Mark::Done) => return,
            Some(Mark::Visiting) => {
                let start = stack.iter().position(|n| *n == name).unwrap_or(0);
                let mut cycle: Vec<&str> = stack[start..].to_vec();
                cycle.push(name);
                cycles.push(cycle);
                return;
            }
            None => {}
        }
        marks.insert(name, Mark::Visiting);
        stack.push(name);
        for dep in graph.get(name).into_iter().flatten() {
            if graph.contains_key(dep) {
                visit(dep, graph, marks, stack, out, cycles);
            }
        }
        stack.pop();
        marks.insert(name, Mark::Done);
        out.push(name);
    }

    // Every declared resolver is a node, also one that failed to compile, so
    // that a cycle through it is still reported.
    let owned: BTreeMap<String, Vec<String>> = decl
        .resolvers
        .iter()
        .map(|(param, r)| {
            let deps = match compiled.get(param.as_str()) {
                Some(c) => c.needs.clone(),
                None => r.needs.clone(),
            };
            (param.clone(), deps)
        })
        .collect();
    let graph: BTreeMap<&str, Vec<&str>> = owned
        .iter()
        .map(|(k, v)| (k.as_str(), v.iter().map(String::as_str).collect()))
        .collect();
    let mut marks = BTreeMap::new();
    let mut names = Vec::new();
    let mut cycles = Vec::new();
    for name in graph.keys() {
        visit(
            name,
            &graph,
            &mut marks,
            &mut Vec::new(),
            &mut names,
            &mut cycles,
        );
    }
    let mut reported = BTreeSet::new();
    for cycle in cycles {
        // One report per cycle, whichever member the walk entered it by.
        let mut members: Vec<&str> = cycle[..cycle.len() - 1].to_vec();
        members.sort();
        if !reported.insert(members) {
            continue;
        }
        let first = cycle[0];
        diags.push(
            Diagnostic::error(
                "resolver-cycle",
                file.locate(&at.key("resolvers").key(first)),
                format!(
                    "the resolvers of `{}` form a cycle: {}",
                    decl.name,
                    cycle.join(" -> ")
                ),
            )
            .with_help("a resolver cannot need, directly or through others, its own value; remove one `needs` entry (or message placeholder) of the cycle"),
        );
    }
    names
        .into_iter()
        .filter_map(|n| compiled.remove(n))
        .collect()
}

/// `input_schema` as `tools/list` shows it: without the resolved parameters
/// in `properties` and `required`.
pub fn listed_schema(input_schema: &Value, resolved: &[Resolver]) -> Value {
    strip(input_schema, resolved, true)
}

/// `input_schema` as the arguments a client or a test case sends are checked
/// against before the server fills the rest: resolved parameters are no
/// longer required, but a value given for one must still match its schema.
pub fn partial_schema(input_schema: &Value, resolved: &[Resolver]) -> Value {
    strip(input_schema, resolved, false)
}

fn strip(input_schema: &Value, resolved: &[Resolver], properties: bool) -> Value {
    let mut s = input_schema.clone();
    if resolved.is_empty() {
        return s;
    }
    let is_resolved = |k: &str| resolved.iter().any(|r| r.param == k);
    if properties && let Some(Value::Object(p)) = s.get_mut("properties") {
        p.retain(|k, _| !is_resolved(k));
    }
    if let Some(Value::Array(req)) = s.get_mut("required") {
        req.retain(|k| !k.as_str().is_some_and(is_resolved));
    }
    s
}
