//! `regent resolve`: print a tool resolved for some arguments exactly as
//! `tools/resolve` returns it (the server's own function builds it), or the
//! JSON-RPC error the server would send. With `--explain`, say on stderr
//! which rule produced each field that differs from the listing.

use serde_json::{Value, json};

use super::{Failure, exit, load_catalog, print_stdout};
use crate::analysis::explain;
use crate::cli::{CatalogArgs, ResolveArgs};
use crate::diag::Style;

pub fn run(args: &ResolveArgs) -> Result<i32, Failure> {
    let (arguments, text) = arguments(args)?;
    let caller = match &args.caller {
        Some(path) => Some(
            crate::caller::Caller::from_file(path, crate::policy::spelled::claim_numbers)
                .map_err(|d| Failure::new(exit::CANNOT_RUN, d.render().trim_end().to_string()))?,
        ),
        None => None,
    };
    // As the server does for a request's text and its caller's claims:
    // numbers spelled by hand (`1.50`) are not written back otherwise
    // (`policy::spelled`).
    use crate::policy::spelled::{self, Spelled};
    let spelled = Spelled::joined(
        spelled::scan(text.as_bytes()).as_ref(),
        caller.as_ref().map_or(&[], |c| &c.spelled),
    );
    spelled::with(spelled.as_ref(), || resolve(args, &arguments, caller))
}

fn resolve(
    args: &ResolveArgs,
    arguments: &Value,
    caller: Option<crate::caller::Caller>,
) -> Result<i32, Failure> {
    let catalog = load_catalog(&CatalogArgs {
        paths: args.config.clone(),
        policy_timeout_ms: args.policy_timeout_ms,
        policy_memory_mb: args.policy_memory_mb,
    })
    .map_err(|d| Failure::from_diagnostics(&d))?;

    let params = json!({"name": args.tool, "arguments": arguments});
    // The latest protocol's shape: it carries `resultType`.
    // As a client that advertised each `--extension` with empty settings.
    let ext: serde_json::Map<String, Value> = args
        .extensions
        .iter()
        .map(|id| (id.clone(), json!({})))
        .collect();
    let negotiated = crate::protocol::Negotiated::from_json(Some(&Value::Object(ext)));
    let answer = crate::protocol::resolve_result(
        &catalog,
        Some(&params),
        true,
        true,
        negotiated,
        caller.as_ref(),
    );
    let code = match &answer {
        Ok(v) => {
            print_stdout(&(serde_json::to_string_pretty(v).unwrap_or_default() + "\n"))?;
            exit::OK
        }
        Err(e) => {
            print_stdout(&(serde_json::to_string_pretty(e).unwrap_or_default() + "\n"))?;
            let reason = e.reason();
            // The wire message hides the policy's own (it is in the log); the
            // help depends on it.
            let detail = match catalog.resolve_as(&args.tool, arguments, caller.as_ref()) {
                Err(crate::catalog::ResolveError::Policy { message, .. }) => message,
                _ => e.message.clone(),
            };
            eprintln!("error: {}\n  = help: {}", e.message, help(reason, &detail));
            exit::FOUND_ERRORS
        }
    };
    if args.explain {
        eprint!(
            "{}",
            explanation(&catalog, &args.tool, arguments, caller.as_ref())
        );
    }
    Ok(code)
}

/// The arguments, and their text: JSON-ARGUMENTS, the `--input` file or
/// standard input, or `{}` when neither is given.
fn arguments(args: &ResolveArgs) -> Result<(Value, String), Failure> {
    let Some(input) = &args.input else {
        let text = args.arguments.as_deref().unwrap_or("{}");
        return serde_json::from_str(text).map(|v| (v, text.to_string())).map_err(|e| {
            Failure::new(
                exit::CANNOT_RUN,
                format!(
                    "error: JSON-ARGUMENTS is not valid json: {e}\n  = help: pass one JSON object, quoted for the shell: regent resolve {} '{{\"key\": \"value\"}}', or put it in a file and pass --input FILE",
                    args.tool
                ),
            )
        });
    };
    let stdin = input.as_os_str() == "-";
    let shown = if stdin {
        "standard input".to_string()
    } else {
        input.display().to_string()
    };
    let text = if stdin {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).map(|_| text)
    } else {
        std::fs::read_to_string(input)
    }
    .map_err(|e| {
        Failure::new(
            exit::CANNOT_RUN,
            format!(
                "error: cannot read the arguments from {shown}: {}\n  = help: pass a readable file holding one JSON object, or `-` for standard input",
                crate::source::files::lower_io(&e)
            ),
        )
    })?;
    serde_json::from_str(&text).map(|v| (v, text.clone())).map_err(|e| {
        Failure::new(
            exit::CANNOT_RUN,
            format!(
                "error: the arguments in {shown} are not valid json: {e}\n  = help: the input must be one JSON object, such as {{\"path\": \"notes.txt\"}}"
            ),
        )
    })
}

/// What to do about a failed resolution. `regent check` is named only for
/// what it can find: static findings always, evaluation failures only on
/// the arguments it tries, so those point at a test case with these
/// arguments (check samples every test case's arguments).
fn help(reason: &str, message: &str) -> &'static str {
    match reason {
        "unknown-tool" => "check the name; `regent check` lists problems with the catalog's tools",
        "invalid-arguments" => "pass arguments that match the tool's inputSchema",
        "not-resolvable" => {
            "the tool has no resolve rules and no policy, so its listing is its only answer"
        }
        "policy-error" if crate::policy::errors::is_conflict(message) => {
            "two definitions of a complete rule hold for these arguments with different values: make their conditions exclusive (`else`, or `not` the other condition); then add these arguments as a `regent test` case, so `regent check` reports such a conflict (rego-conflict) if it comes back"
        }
        "policy-error" if message.contains("unsafe") => {
            "bind the variable in the rule's body; `regent check` reports unbound variables before anything runs (rego-unsafe-var), except inside comprehensions and `every`"
        }
        "policy-error" => {
            "fix the failing rule (the log line above names it and where it is); these arguments reproduce the failure. Then add them as a `regent test` case: `regent check` evaluates the rules on every test case's arguments"
        }
        "policy-timeout" => {
            "make the rule cheaper for arguments like these, or raise --policy-timeout-ms; then add them as a `regent test` case: `regent check` evaluates the rules on every test case's arguments"
        }
        "policy-memory" => {
            "bound the argument that sizes the allocation in the inputSchema (`maximum`, `maxLength`, `maxItems`), or raise --policy-memory-mb"
        }
        "riskier-than-listed" => {
            "these arguments are the counterexample: list the worst case in the tool's annotations or fix the rule (--explain names it); then add them as a `regent test` case: `regent check` proves only tools whose hints depend on finite arguments and otherwise samples, test case arguments included"
        }
        _ => "see the JSON-RPC error above",
    }
}

/// Which rule produced each field that differs from the listing.
fn explanation(
    catalog: &crate::catalog::Catalog,
    tool: &str,
    args: &Value,
    caller: Option<&crate::caller::Caller>,
) -> String {
    let style = Style::plain();
    let Some(t) = catalog.tool(tool) else {
        return String::new();
    };
    // Decided as the answer was: on the paths as a `paths:` fence resolves
    // them, with the fence's own reasons, each kept with its fence.
    let mut fenced = args.clone();
    let mut by_fence = Vec::new();
    for f in &t.fences {
        for reason in crate::fence::apply(std::slice::from_ref(f), &mut fenced) {
            by_fence.push((reason, f));
        }
    }
    let mut r = match catalog.resolve_layers_as(tool, &fenced, caller) {
        Ok(r) => r,
        Err(e) => return format!("explain: nothing to explain: {e}\n"),
    };
    r.add_deny(by_fence.iter().map(|(reason, _)| reason.clone()).collect());
    let changes = explain::explain(t, &fenced, caller, &r);
    if changes.is_empty() {
        return "explain: every field is as listed\n".to_string();
    }
    let mut out = String::from("explain:\n");
    for c in changes {
        let fence = by_fence
            .iter()
            .find(|(reason, _)| c.field == "deny" && c.resolved == reason.as_str());
        let by = if let Some((_, f)) = fence {
            format!(
                "the paths: fence of argument `{}` (root {})",
                f.argument,
                f.root.display()
            )
        } else if c.producers.is_empty() && c.is_decision() {
            // Nothing in the layers could be named for it.
            "(no rule)".to_string()
        } else if c.producers.is_empty() {
            "(no rule: listed)".to_string()
        } else {
            c.producers
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        };
        // The decision has no listed value: what it holds, and by whom.
        let value = if c.is_decision() {
            c.resolved.to_string()
        } else {
            let listed = c.listed.map_or("(absent)".to_string(), |v| v.to_string());
            format!("{listed} -> {}", c.resolved)
        };
        out.push_str(&format!("  {}: {value}  {by}\n", style.bold(&c.field)));
    }
    out
}
