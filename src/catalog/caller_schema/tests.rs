//! Tests of the caller schema on whole catalogs built from files: the
//! declaration's diagnostics at load and what a caller the schema refuses
//! gets from `resolve_as`, `tool_as` and the listing.

use super::*;
use serde_json::json;

fn catalog(files: &[(&str, &str)]) -> Result<Catalog, Vec<Diagnostic>> {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let source = Source::load(&[dir.path().to_path_buf()]).unwrap();
    crate::catalog::build(&source, &Default::default()).map_err(|d| d.0)
}

const TOOLS: &str = "tools:\n  - name: a\n    inputSchema: {type: object}\n";
const CALLER: &str = "caller:\n  claims:\n    type: object\n    properties:\n      groups: {type: array, items: {enum: [ops, dev, banned]}}\n      tenant: {type: string}\n    required: [groups]\n";

fn caller(claims: Value) -> Caller {
    Caller {
        subject: "alice".into(),
        issuer: "local".into(),
        claims: claims.as_object().unwrap().clone(),
        spelled: Vec::new(),
    }
}

#[test]
fn a_mismatching_caller_gets_no_decision_and_is_not_echoed() {
    let c = catalog(&[("t.yaml", &format!("{TOOLS}{CALLER}"))]).unwrap();
    assert!(c.caller_schema().is_some());
    assert_eq!(c.caller_problem(None), None);
    let ok = caller(json!({"groups": ["ops"], "tenant": "t1"}));
    assert_eq!(c.caller_problem(Some(&ok)), None);
    assert!(c.tool_as("a", Some(&ok)).is_some());
    let bad = caller(json!({"groups": "banned-secret-value"}));
    let p = c.caller_problem(Some(&bad)).unwrap();
    assert_eq!((p.claim.as_str(), p.keyword.as_str()), ("/groups", "type"));
    assert!(!p.to_string().contains("secret"), "{p}");
    assert!(p.to_string().contains("`groups`"), "{p}");
    assert!(c.tool_as("a", Some(&bad)).is_none());
    assert_eq!(c.tools_visible_to(Some(&bad)).count(), 0);
    let err = c.resolve_as("a", &json!({}), Some(&bad)).unwrap_err();
    assert!(
        matches!(err, crate::catalog::ResolveError::CallerClaimsInvalid(_)),
        "{err}"
    );
    let p = c
        .caller_problem(Some(&caller(json!({"groups": ["root"]}))))
        .unwrap();
    assert_eq!(
        (p.claim.as_str(), p.keyword.as_str()),
        ("/groups/0", "enum")
    );
    let p = c.caller_problem(Some(&caller(json!({})))).unwrap();
    assert_eq!(p.keyword, "required", "{p}");
}

#[test]
fn one_declaration_per_catalog_and_a_valid_schema() {
    let e = catalog(&[("a.yaml", &format!("{TOOLS}{CALLER}")), ("b.yaml", CALLER)])
        .err()
        .unwrap();
    let d = e.iter().find(|d| d.code == "duplicate-caller").unwrap();
    assert!(d.location.file.ends_with("b.yaml"), "{d}");
    assert!(d.message.contains("a.yaml:4:1"), "{d}");
    let e = catalog(&[("a.yaml", "caller:\n  claims: {type: objekt}\n")])
        .err()
        .unwrap();
    let d = e.iter().find(|d| d.code == "invalid-schema").unwrap();
    assert_eq!(d.location.line, 2, "{d}");
    let d =
        crate::source::parse_tool_file(std::path::Path::new("a.yaml"), "caller:\n  claim: {}\n")
            .unwrap_err();
    assert_eq!(d.code, "unknown-key", "{d}");
}
