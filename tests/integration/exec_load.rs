//! Mistakes in a `run:` section stop the catalog from loading, each reported
//! at its `file:line:column` with a fix, by the real binary.

use crate::common;

/// Runs `regent serve` on a catalog holding `yaml`; returns its stderr after
/// checking that it refused to start.
fn refuse(yaml: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.yaml"), yaml).unwrap();
    let out = common::regent()
        .arg("serve")
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "stderr:\n{stderr}");
    stderr
}

fn expect(stderr: &str, lines: &[&str]) {
    for want in lines {
        assert!(
            stderr.contains(want),
            "expected in stderr: {want}\nactual stderr:\n{stderr}"
        );
    }
}

const HEAD: &str = "tools:
  - name: t
    inputSchema:
      type: object
      properties:
        repo: {type: string}
        opt: {type: string}
      required: [repo]
";

#[test]
fn an_unquoted_placeholder_is_explained() {
    let err = refuse(&format!(
        "{HEAD}    run:\n      cli:\n        program: git\n        args: [-C, {{repo}}]\n"
    ));
    expect(
        &err,
        &[
            "t.yaml:12:20: error: tools[0].run.cli.args[1]: `{repo}` is a YAML mapping here, not a placeholder; quote it: \"{repo}\"",
        ],
    );
}

#[test]
fn command_line_mistakes_are_located() {
    let err = refuse(&format!(
        "{HEAD}    run:
      cli:
        program: git
        args:
          - \"{{nope}}\"
          - \"--opt={{opt}}\"
          - \"{{repo*}}\"
        timeout: soon
        maxOutput: lots
        flags: [ghost]
        env:
          set:
            X: {{env: A, file: b}}
"
    ));
    expect(
        &err,
        &[
            "t.yaml:13:13: error: placeholder `{nope}` of `t` names an argument that inputSchema does not declare",
            "help: declared arguments: `repo`, `opt`",
            "t.yaml:14:13: error: `--opt={opt}` uses optional argument `opt` outside a group",
            "help: wrap it in a list, [\"--opt={opt}\"], which is dropped when `opt` is absent",
            "t.yaml:15:13: error: `{repo*}`: `{name*}` is only for http paths",
            "t.yaml:16:9: error: `soon` is not a duration",
            "t.yaml:17:9: error: `lots` is not a size",
            "t.yaml:18:17: error: `flags` of `t` names argument `ghost`, which inputSchema does not declare",
            "t.yaml:21:13: error: give exactly one of `env` (a variable name) or `file` (a path)",
        ],
    );
}

#[test]
fn http_mistakes_are_located() {
    let err = refuse(&format!(
        "{HEAD}    run:
      - cli: {{program: ls}}
        http: {{method: GET, base: \"http://x\"}}
      - http:
          method: FETCH
          base: \"https://user:pw@example.com\"
          path: /a/../{{opt}}
          headers: {{Authorization: \"Bearer x\"}}
          auth: {{bearer: {{env: T, default: abc}}}}
"
    ));
    expect(
        &err,
        &[
            "t.yaml:10:9: error: a run case of `t` needs exactly one of `cli` or `http`",
            "t.yaml:13:11: error: `FETCH` is not an http method regent sends",
            "t.yaml:14:11: error: base `https://user:pw@example.com` cannot be used: it holds credentials; put them under `auth`",
            "t.yaml:15:11: error: path `/a/../{opt}` has a `..` segment",
            "t.yaml:15:11: error: path placeholder `{opt}` names an argument that is not required",
            "t.yaml:16:21: error: header `Authorization` cannot be set in `headers`",
            "t.yaml:17:35: error: a secret cannot have a default written in the catalog",
        ],
    );
}

#[test]
fn a_mapping_rule_may_deny_with_one_reason_or_a_list() {
    // Rules 1 and 2 parse (serde stops at the first error), rule 3 does not.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("t.yaml"),
        format!(
            "{HEAD}    resolve:\n      - when: {{opt: a}}\n        deny: one reason\n      - when: {{opt: b}}\n        deny: [first, second]\n      - when: {{opt: c}}\n        deny: {{not: a list}}\n"
        ),
    )
    .unwrap();
    let out = common::regent()
        .arg("serve")
        .arg(dir.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    expect(
        &stderr,
        &[
            "t.yaml:15:15: error: tools[0].resolve[2].deny: invalid type: map, expected a reason (a string) or a list of reasons",
        ],
    );
}
