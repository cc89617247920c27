//! The literal-directed candidates' tests: the issue's example, each step
//! inverted, and what is named when a use cannot be reached.

use super::*;

fn uses_of(text: &str) -> BTreeMap<String, Uses> {
    let mut e = regorus::Engine::new();
    e.add_policy("p.rego".into(), text.into()).unwrap();
    let modules = crate::rego::modules(&mut e);
    let mut out = BTreeMap::new();
    rego_uses(&modules, Some("t"), &mut out);
    out
}

fn reach_of(text: &str) -> Reach {
    let u = uses_of(text);
    reach("q", u.get("q"), &[], |_| Ok(()))
}

#[test]
fn the_issue_example() {
    let r = reach_of(
        r#"package t
import rego.v1
first := lower(trim_space(split(input.arguments.q, " ")[0]))
annotations := {"openWorldHint": true} if first == "copy"
"#,
    );
    assert!(r.unreached.is_none(), "{:?}", r.unreached);
    assert_eq!(r.through, ["split", "trim_space", "lower"]);
    // One per truth vector: "COPY x" is "copy x" to the rule.
    assert_eq!(r.candidates, ["copy x", "x x"]);
}

#[test]
fn inverts_each_step() {
    for body in [
        r#"parts := split(input.arguments.q, "/"); parts[2] == "etc""#,
        r#"trim_prefix(input.arguments.q, "cmd:") == "rm""#,
        r#"startswith(upper(trim(input.arguments.q, "*")), "DROP")"#,
        r#"substring(input.arguments.q, 2, 3) == "abc""#,
        r#"concat("-", ["a", input.arguments.q, "b"]) == "a-x-b""#,
        r#"sprintf("cmd %s!", [input.arguments.q]) == "cmd rm!""#,
        r#"indexof(lower(input.arguments.q), "rm") == 0"#,
        r#"endswith(trim_suffix(input.arguments.q, ".bak"), ".sql")"#,
        r#"lower(input.arguments.q) in {"a", "b"}"#,
        r#"regex.match(`^[a-z]+-prod$`, trim_space(input.arguments.q))"#,
        r#"x := lower(input.arguments.q); x != "safe""#,
        r#"startswith(lower(input.arguments.q), "ab"); endswith(lower(input.arguments.q), "yz")"#,
    ] {
        let r = reach_of(&format!(
            "package t\nimport rego.v1\nannotations := {{\"destructiveHint\": true}} if {{ {body} }}\n"
        ));
        assert!(r.unreached.is_none(), "{body}: {:?}", r.unreached);
        assert!(r.candidates.len() >= 2, "{body}: {r:?}");
    }
}

#[test]
fn names_what_it_cannot_reach() {
    for (body, why) in [
        (
            r#"count(split(input.arguments.q, "/")) > 2"#,
            "which they do not invert",
        ),
        (
            r#"lower(input.arguments.q) == "Copy""#,
            "no candidate makes",
        ),
        (
            r#"base64.decode(input.arguments.q) == "x""#,
            "which they do not invert",
        ),
        (
            r#"p := split(input.arguments.q, " "); p[0] == "a"; p[1] == "b"; p[0] == p[1]"#,
            "`p[0] == p[1]` is no comparison",
        ),
        (
            r#"lower(input.arguments.q) == "ab"; startswith(upper(input.arguments.q), "X")"#,
            "hold together",
        ),
    ] {
        let r = reach_of(&format!(
            "package t\nimport rego.v1\nannotations := {{\"destructiveHint\": true}} if {{ {body} }}\n"
        ));
        let (_, got) = r.unreached.expect(body);
        assert!(got.contains(why), "{body}: {got}");
    }
}
