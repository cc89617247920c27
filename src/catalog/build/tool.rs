//! Compiling one tool: its declaration's schemas, rules, `paths:`, its
//! policy and shadow packages (a missing one located at the YAML), its
//! engine's errors located, into a [`Tool`] or its diagnostics.
//!
//! The build's shared state ([`Shared`], [`PolicyFile`]) and the order of
//! tools are the parent's; the mapping rules' checks are `rules`', the
//! engine's making and warming is `engine`'s.

use serde_json::Value;

use super::engine::{Own, ToolEngine, tool_engine};
use super::rules::{compile_rules, reserved_meta};
use super::{PolicyFile, Shared};
use crate::catalog::{BuildOptions, Tool, hints::Hints, resolvers, run, schema, schema_keywords};
use crate::diag::{Diagnostic, Location};
use crate::policy::engine::{self as policy, EnginePool, Step};
use crate::source::{ToolDecl, ToolSource, YamlPath};

pub(super) fn compile_tool(
    file: &ToolSource,
    at: &YamlPath,
    decl: &ToolDecl,
    (own, shadow): (&[&PolicyFile], &[&PolicyFile]),
    shared: &Shared<'_>,
    opts: &BuildOptions,
) -> Result<(Tool, Vec<Diagnostic>), Vec<Diagnostic>> {
    let Shared {
        all,
        parsed_all,
        portability,
        number_reads,
        base,
        library,
        library_modules,
        library_index,
        validators,
    } = *shared;
    let mut diags = Vec::new();
    // Findings that do not stop the tool from compiling.
    let mut warnings = Vec::new();
    let location = file.locate(&at.key("name"));

    if decl.name.is_empty() {
        diags.push(
            Diagnostic::error("empty-name", location.clone(), "tool name is empty")
                .with_help("give the tool a name, unique in the catalog"),
        );
    } else if let Some(problem) = crate::source::tool_name::check(&decl.name) {
        // A character that can make a name display as another is refused;
        // the rest of MCP's guidance is a warning (clients may know the
        // tool by an older name).
        let d = if problem.is_deceptive() {
            Diagnostic::error(
                "tool-name-deceptive",
                location.clone(),
                format!("tool name {:?} cannot be listed: {problem}", decl.name),
            )
        } else {
            Diagnostic::warning(
                "tool-name",
                location.clone(),
                format!(
                    "tool name {:?} does not follow MCP's naming guidance: {problem}",
                    decl.name
                ),
            )
        };
        let d = d.with_help(crate::source::tool_name::HELP);
        if problem.is_deceptive() {
            diags.push(d);
        } else {
            warnings.push(d);
        }
    }
    if decl.input_schema.get("type").and_then(Value::as_str) != Some("object") {
        diags.push(
            Diagnostic::error(
                "input-schema-not-object",
                file.locate(&at.key("inputSchema")),
                format!("inputSchema of `{}` must have `type: object`", decl.name),
            )
            .with_help(
                "MCP tool arguments are always an object; declare `type: object` with `properties`",
            ),
        );
    }
    let validator = match validators.compile(
        &decl.input_schema,
        file,
        &at.key("inputSchema"),
        "inputSchema",
    ) {
        Ok(v) => Some(v),
        Err(d) => {
            diags.push(d);
            None
        }
    };
    let output_validator = match &decl.output_schema {
        None => None,
        Some(out) => match validators.compile(out, file, &at.key("outputSchema"), "outputSchema") {
            Ok(v) => Some(v),
            Err(d) => {
                diags.push(d);
                None
            }
        },
    };
    // Keys no validator reads, in the schemas the catalog wrote (an
    // upstream's own schema is its author's to fix, and has no YAML here).
    if decl.upstream.is_none() {
        if validator.is_some() {
            warnings.extend(schema_keywords::check(
                &decl.input_schema,
                file,
                &at.key("inputSchema"),
                "inputSchema",
            ));
        }
        if let (Some(out), Some(_)) = (&decl.output_schema, &output_validator) {
            warnings.extend(schema_keywords::check(
                out,
                file,
                &at.key("outputSchema"),
                "outputSchema",
            ));
        }
    }

    let declared = decl
        .annotations
        .as_ref()
        .map(|a| a.hints())
        .unwrap_or_default();
    let listed = Hints::WORST.overlay(&declared);
    reserved_meta(
        decl.meta.as_ref(),
        file,
        &at.key("meta"),
        &decl.name,
        &mut diags,
    );
    let rules = compile_rules(file, at, decl, &listed, &mut diags);
    let mut probes = Vec::new();
    let run = run::compile(file, at, decl, &mut diags, &mut warnings, &mut probes);
    let mut resolvers = resolvers::compile(file, at, decl, &mut diags);
    let resolver_rules: Vec<(usize, String)> = resolvers
        .iter()
        .enumerate()
        .filter_map(|(i, r)| match &r.source {
            resolvers::Source::Policy { rule, .. } => Some((i, rule.clone())),
            _ => None,
        })
        .collect();

    let packages = [decl.policy.as_ref(), decl.shadow_policy.as_ref()];
    let needs_engine = !rules.is_empty()
        || decl.policy.is_some()
        || decl.shadow_policy.is_some()
        || !resolver_rules.is_empty();
    if let Some(pkg) = &decl.policy
        && own.is_empty()
    {
        if !parsed_all {
            // A policy file did not parse; its error is the one to fix.
            return Err(diags);
        }
        diags.push(missing_package(file, at, "policy", pkg, all));
    }
    if let Some(pkg) = &decl.shadow_policy {
        if decl.policy.as_deref() == Some(pkg.as_str()) {
            diags.push(
                Diagnostic::error(
                    "shadow-is-enforced",
                    file.locate(&at.key("shadow_policy")),
                    format!("shadow_policy `{pkg}` is the tool's enforced policy"),
                )
                .with_help("name the new package under test here, the one `policy` will point to once it has proven itself"),
            );
        } else if shadow.is_empty() {
            if !parsed_all {
                return Err(diags);
            }
            diags.push(missing_package(file, at, "shadow_policy", pkg, all));
        }
    }
    // With `keep_riskier_rules` (regent check), a riskier YAML rule is still
    // reported but does not stop the tool from compiling, so the worst-case
    // proof can name the exact arguments that reach it.
    let blocking = |ds: &[Diagnostic]| {
        ds.iter()
            .any(|d| !(opts.keep_riskier_rules && d.code == "riskier-than-listed"))
    };
    let mut engines = None;
    let mut plan = Vec::new();
    let mut visible = None;
    let mut upstream_request = None;
    let mut shadow_plan = Vec::new();
    if needs_engine && !blocking(&diags) {
        let rule_refs: Vec<&str> = resolver_rules.iter().map(|(_, r)| r.as_str()).collect();
        let own = Own { own, shadow };
        match tool_engine(decl, own, base, library, &rule_refs, &opts.policy_limits) {
            Ok(ToolEngine {
                engine,
                added,
                plan: p,
                resolver_steps: steps,
                visible: v,
                upstream_request: ur,
                shadow: (sp, shadow_errors),
            }) => {
                let pool = EnginePool::new(engine, opts.policy_limits);
                let lowered = p.iter().map(|(_, s)| s).chain(steps.iter().flatten());
                let lowered = lowered.chain(sp.iter().map(|(_, s)| s));
                let lowered: Vec<&Step> = lowered.chain(v.iter()).chain(ur.iter()).collect();
                let pool = pool.with_native(lowered.iter().copied());
                // Every step on `native`: regorus is only its fallback, so
                // the engine, warmed and lowered, is dropped and made again
                // when first needed (`policy::EnginePool::shed`).
                let all_native = pool.is_native(lowered.iter().copied());
                let warm = lowered.first().map(|s| (*s).clone());
                // A construct where regorus answers differently from OPA:
                // native answers as OPA and, where it hands a request to
                // regorus, only regorus' error may come back; a tool whose
                // enforced policy does not run natively is refused (a shadow
                // policy's findings stay warnings: it never stops a tool).
                let flagged = packages
                    .iter()
                    .flatten()
                    .map(|pkg| pkg.as_str())
                    .chain([""])
                    .filter_map(|pkg| portability.get(pkg))
                    .flatten()
                    .next()
                    .map(|f| format!("{}: {}", f.diagnostic.location, f.diagnostic.message));
                let enforced: Vec<&Step> = p
                    .iter()
                    .map(|(_, s)| s)
                    .chain(steps.iter().flatten())
                    .chain(v.iter())
                    .chain(ur.iter())
                    .collect();
                let own_findings = decl
                    .policy
                    .as_deref()
                    .and_then(|pkg| portability.get(pkg))
                    .map_or(&[][..], Vec::as_slice);
                if !own_findings.is_empty() && !pool.is_native(enforced.iter().copied()) {
                    for f in own_findings {
                        let mut d = f.diagnostic.clone();
                        d.severity = crate::diag::Severity::Error;
                        d.message = format!(
                            "{}; tool `{}` runs this policy on regorus, so regent refuses it",
                            d.message, decl.name
                        );
                        diags.push(d);
                    }
                }
                let pool = pool.with_flagged(flagged);
                // Where the tool's modules first refer to a request's value
                // that may be a number. None: no number of the request can
                // meet its rules, so its evaluations need not look at how
                // the request spelled them.
                let number_read = packages
                    .iter()
                    .flatten()
                    .map(|pkg| pkg.as_str())
                    .chain([""])
                    .find_map(|pkg| number_reads.get(pkg));
                // YAML rules compile into a module of their own
                // (`rego::generate`), which compares arguments with the
                // `when` values: taken as reading them.
                let pool = pool.with_request_numbers(
                    number_read.is_some() || !rules.is_empty() || !resolver_rules.is_empty(),
                );
                if let Some((at, reference)) = number_read
                    && !pool.is_native(enforced.iter().copied())
                {
                    warnings.push(regorus_numbers_finding(&decl.name, at, reference));
                }
                // Where the tool's modules index with a computed key, which
                // a number spelled `2E0` could be: what regorus evaluates
                // for a request holding one fails closed.
                let computed_index = crate::rego::data_numbers::computed_index(
                    own.own
                        .iter()
                        .chain(own.shadow)
                        .filter_map(|p| p.module.as_ref()),
                )
                .or_else(|| library_index.clone());
                let pool = pool.with_computed_index(computed_index);
                engines = Some(Box::new(if all_native {
                    // The modules the build parsed, so that reading the
                    // shed tool's (`check::on_load`) parses none again.
                    let parsed = own.own.iter().chain(own.shadow);
                    let parsed = parsed.filter_map(|p| p.module.clone()).collect();
                    pool.shed(policy::Recipe {
                        base: base.clone(),
                        library: library_modules.clone(),
                        modules: added,
                        warm,
                    })
                    .with_parsed(parsed)
                } else {
                    pool
                }));
                plan = p;
                visible = v;
                upstream_request = ur;
                shadow_plan = sp;
                // A shadow rule that fails on the sample arguments is worth
                // knowing, but never stops the enforced policy from loading.
                for e in shadow_errors {
                    let mut d = e.located_or(
                        file.locate(&at.key("shadow_policy")),
                        &schema::sample(&decl.input_schema),
                    );
                    d.severity = crate::diag::Severity::Warning;
                    d.code = "shadow-policy-eval";
                    d.message = format!(
                        "shadow policy `{}` (log-only) fails: {}; its decisions are logged as errors and the enforced policy is unaffected",
                        decl.shadow_policy.as_deref().unwrap_or("?"),
                        d.message
                    );
                    warnings.push(d);
                }
                for ((i, _), step) in resolver_rules.iter().zip(steps) {
                    match step {
                        Ok(step) => {
                            if let resolvers::Source::Policy { step: s, .. } =
                                &mut resolvers[*i].source
                            {
                                *s = Some(step);
                            }
                        }
                        Err(d) => diags.push(d.located_or(
                            resolvers[*i].location.clone(),
                            &schema::sample(&decl.input_schema),
                        )),
                    }
                }
            }
            Err(d) => {
                diags.push(d.located_or(location.clone(), &schema::sample(&decl.input_schema)))
            }
        }
    }

    // Arguments as a client (or a test case) sends them: resolved parameters
    // may be missing, but a value given for one is still checked.
    let partial_validator = if resolvers.is_empty() {
        None
    } else {
        match jsonschema::validator_for(&resolvers::partial_schema(&decl.input_schema, &resolvers))
        {
            Ok(v) => Some(v),
            Err(e) => {
                diags.push(Diagnostic::error(
                    "invalid-schema",
                    file.locate(&at.key("inputSchema")),
                    format!("inputSchema without its resolved parameters cannot be compiled: {e}"),
                ));
                None
            }
        }
    };
    let fences = compile_paths(file, at, decl, &mut diags);
    let ok = !blocking(&diags);
    diags.append(&mut warnings);
    match validator {
        Some(validator) if ok => Ok((
            Tool {
                name: decl.name.clone(),
                title: decl.title.clone(),
                description: decl.description.clone(),
                input_schema: decl.input_schema.clone(),
                listed_input_schema: resolvers::listed_schema(&decl.input_schema, &resolvers),
                output_schema: decl.output_schema.clone(),
                annotations_title: decl.annotations.as_ref().and_then(|a| a.title.clone()),
                listed,
                meta: decl.meta.clone().unwrap_or_default(),
                security_schemes: decl.security_schemes.clone(),
                rules,
                policy: decl.policy.clone(),
                shadow_policy: decl.shadow_policy.clone(),
                shadow_plan,
                location,
                validator,
                partial_validator,
                resolvers,
                output_validator,
                engines,
                run,
                probes,
                upstream: decl.upstream.clone(),
                plan,
                visible,
                upstream_request,
                fences,
                fingerprint: [0; 32],
                reach: crate::catalog::Reach::default(),
            },
            diags,
        )),
        _ => Err(diags),
    }
}

/// The tool's `paths:`: each names a declared argument that holds a string
/// or an array of strings, and an absolute root.
fn compile_paths(
    file: &ToolSource,
    at: &YamlPath,
    decl: &ToolDecl,
    diags: &mut Vec<Diagnostic>,
) -> Vec<crate::fence::Fence> {
    let props = schema::properties(&decl.input_schema);
    let mut out = Vec::new();
    for (arg, p) in &decl.paths {
        let here = at.key("paths").key(arg);
        let Some(prop) = props.and_then(|ps| ps.get(arg)) else {
            diags.push(
                Diagnostic::error(
                    "unknown-argument",
                    file.locate(&here),
                    format!("`paths` of `{}` names argument `{arg}`, which inputSchema does not declare", decl.name),
                )
                .with_help("name an argument of the tool's inputSchema that holds a path"),
            );
            continue;
        };
        let ty = |v: &Value| v.get("type").and_then(Value::as_str).map(str::to_string);
        let holds_paths = match ty(prop).as_deref() {
            None | Some("string") => true,
            Some("array") => prop
                .get("items")
                .is_none_or(|items| matches!(ty(items).as_deref(), None | Some("string"))),
            _ => false,
        };
        if !holds_paths {
            diags.push(
                Diagnostic::error(
                    "path-argument-type",
                    file.locate(&here),
                    format!("argument `{arg}` of `{}` is fenced under a root but holds neither a string nor an array of strings", decl.name),
                )
                .with_help("fence the argument that names the file (a string, or an array of strings)"),
            );
            continue;
        }
        let root = std::path::PathBuf::from(&p.root);
        if !root.is_absolute() {
            diags.push(
                Diagnostic::error(
                    "path-root",
                    file.locate(&here.key("root")),
                    format!(
                        "root {:?} of argument `{arg}` is not an absolute path",
                        p.root
                    ),
                )
                .with_help("write the directory from `/`, as the tool or upstream sees it"),
            );
            continue;
        }
        out.push(crate::fence::Fence {
            argument: arg.clone(),
            root,
        });
    }
    out
}

fn missing_package(
    file: &ToolSource,
    at: &YamlPath,
    key: &str,
    pkg: &str,
    all: &[PolicyFile],
) -> Diagnostic {
    let mut known: Vec<&str> = all.iter().map(|p| p.package.as_str()).collect();
    known.sort();
    known.dedup();
    let nearest = known
        .iter()
        .map(|k| (strsim::levenshtein(k, pkg), *k))
        .min()
        .filter(|(d, _)| *d <= 3);
    let help = match nearest {
        Some((_, k)) => format!("did you mean `{k}`?"),
        None if known.is_empty() => format!("add a .rego file that starts with `package {pkg}`"),
        None => format!(
            "add a .rego file with `package {pkg}`; defined packages: {}",
            known.join(", ")
        ),
    };
    Diagnostic::error(
        "missing-package",
        file.locate(&at.key(key)),
        format!("{key} package `{pkg}` is not defined by any .rego file"),
    )
    .with_help(help)
}

/// A tool whose policy runs on regorus and reads a request's value that
/// may be a number (`reference`, first at `at`): regorus compares where
/// regent cannot watch, so a request holding a number past a double's
/// digits is refused whole (`policy::spelled::regorus_lost_refusal`).
fn regorus_numbers_finding(tool: &str, at: &Location, reference: &str) -> Diagnostic {
    Diagnostic::warning(
        "opa-number-lost",
        at.clone(),
        format!(
            "`{reference}` may be or hold a number the request spells with more digits than a double holds (`18446744073709551617`, `4.999999999999999999`); tool `{tool}` runs its policy on regorus, where regent cannot see which comparisons meet such a number, so it fails closed on any request holding one, where OPA answers on the exact decimal"
        ),
    )
    .with_help(
        "clients that send at most 17 significant digits and integers within ±2^53 are answered as OPA answers; a policy regent evaluates natively refuses only where such a number decides the answer",
    )
}
