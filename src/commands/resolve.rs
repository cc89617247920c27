//! `regent resolve`: print a tool resolved for some arguments exactly as
//! `tools/resolve` returns it (the server's own function builds it), or the
//! JSON-RPC error the server would send. With `--explain`, say on stderr
//! which rule produced each field that differs from the listing.

use serde_json::{Value, json};

use super::{Failure, exit, load_catalog, print_stdout};
use crate::catalog::explain;
use crate::cli::{CatalogArgs, ResolveArgs};
use crate::diag::Style;

pub fn run(args: &ResolveArgs) -> Result<i32, Failure> {
    let arguments = arguments(args)?;
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
    let answer = crate::protocol::resolve_result(&catalog, Some(&params), true, true, negotiated);
    let code = match &answer {
        Ok(v) => {
            print_stdout(&(serde_json::to_string_pretty(v).unwrap_or_default() + "\n"))?;
            exit::OK
        }
        Err(e) => {
            print_stdout(&(serde_json::to_string_pretty(e).unwrap_or_default() + "\n"))?;
            let reason = e
                .data
                .as_ref()
                .and_then(|d| d.get("reason"))
                .and_then(Value::as_str)
                .unwrap_or("");
            eprintln!("error: {}\n  = help: {}", e.message, help(reason));
            exit::FOUND_ERRORS
        }
    };
    if args.explain {
        eprint!("{}", explanation(&catalog, &args.tool, &arguments));
    }
    Ok(code)
}

/// The arguments: JSON-ARGUMENTS, the `--input` file or standard input, or
/// `{}` when neither is given.
fn arguments(args: &ResolveArgs) -> Result<Value, Failure> {
    let Some(input) = &args.input else {
        let text = args.arguments.as_deref().unwrap_or("{}");
        return serde_json::from_str(text).map_err(|e| {
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
    serde_json::from_str(&text).map_err(|e| {
        Failure::new(
            exit::CANNOT_RUN,
            format!(
                "error: the arguments in {shown} are not valid json: {e}\n  = help: the input must be one JSON object, such as {{\"path\": \"notes.txt\"}}"
            ),
        )
    })
}

fn help(reason: &str) -> &'static str {
    match reason {
        "unknown-tool" => "check the name; `regent check` lists problems with the catalog's tools",
        "invalid-arguments" => "pass arguments that match the tool's inputSchema",
        "not-resolvable" => {
            "the tool has no resolve rules and no policy, so its listing is its only answer"
        }
        "policy-error" | "policy-timeout" | "policy-memory" => {
            "run `regent check` on the catalog to find the failing rule"
        }
        "riskier-than-listed" => {
            "run `regent check` for the counterexample; list the worst case or fix the rule (--explain names it)"
        }
        _ => "see the JSON-RPC error above",
    }
}

/// Which rule produced each field that differs from the listing.
fn explanation(catalog: &crate::catalog::Catalog, tool: &str, args: &Value) -> String {
    let style = Style::plain();
    let Some(t) = catalog.tool(tool) else {
        return String::new();
    };
    let r = match catalog.resolve_layers(tool, args) {
        Ok(r) => r,
        Err(e) => return format!("explain: nothing to explain: {e}\n"),
    };
    let changes = explain::explain(t, args, &r);
    if changes.is_empty() {
        return "explain: every field is as listed\n".to_string();
    }
    let mut out = String::from("explain:\n");
    for c in changes {
        let listed = c.listed.map_or("(absent)".to_string(), |v| v.to_string());
        let by = if c.producers.is_empty() {
            "(no rule: listed)".to_string()
        } else {
            c.producers
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        };
        out.push_str(&format!(
            "  {}: {listed} -> {}  {}\n",
            style.bold(&c.field),
            c.resolved,
            by
        ));
    }
    out
}
