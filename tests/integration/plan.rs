//! What a resolution evaluates: only the rules a tool declares, each in the
//! cheapest way regorus can answer it.

use regent::catalog::{self, BuildOptions, Field};
use regent::source::Source;

fn plan_of(dir: &str, tool: &str) -> Vec<(Field, String, bool)> {
    let path = crate::common::repo_path(dir);
    let source = Source::load(&[path]).expect("load");
    let catalog = catalog::build(&source, &BuildOptions::default()).expect("build");
    catalog
        .tool(tool)
        .expect("tool")
        .plan()
        .iter()
        .map(|(f, s)| (*f, s.path.clone(), s.by_query))
        .collect()
}

#[test]
fn a_yaml_only_tool_evaluates_one_rule() {
    assert_eq!(
        // examples/git is YAML only (manage_files has a policy for deny and confirm).
        plan_of("examples/git", "git"),
        vec![(
            Field::Mapping,
            "data.regent.decision.mapping".to_string(),
            false
        )]
    );
}

#[test]
fn only_declared_contract_rules_are_planned() {
    // deploy.rego declares annotations and meta, not security_schemes.
    assert_eq!(
        plan_of("tests/cases/yaml_and_policy", "deploy"),
        vec![
            (
                Field::Mapping,
                "data.regent.decision.mapping".to_string(),
                false
            ),
            (
                Field::Contract("annotations"),
                "data.tools.deploy.annotations".to_string(),
                false
            ),
            (
                Field::Contract("meta"),
                "data.tools.deploy.meta".to_string(),
                false
            ),
        ]
    );
}

#[test]
fn rules_defined_by_path_are_read_by_query() {
    assert_eq!(
        plan_of("tests/cases/path_rules", "files"),
        vec![
            (
                Field::Contract("annotations"),
                "data.tools.files.annotations".to_string(),
                true
            ),
            (
                Field::Contract("meta"),
                "data.tools.files.meta".to_string(),
                true
            ),
        ]
    );
}
