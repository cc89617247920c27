//! Evaluation under limits on real regorus engines: an answer after the
//! time limit discarded, one budget shared by a plan, what reads only data
//! computed once at load, a reference looked up once.
//!
//! The pool's shedding and remaking are tested beside it (`engine/pool`).

use super::*;
use std::time::Duration;

/// An engine holding `rego` (package `p`) under `limits`.
fn engine(rego: &str, limits: Limits) -> Engine {
    let mut e = new_engine(limits);
    add_policy(&mut e, "p.rego", &format!("package p\n{rego}")).unwrap();
    e
}

#[test]
fn an_answer_after_the_time_limit_is_discarded() {
    // One builtin call that regorus cannot interrupt and that takes far
    // longer than a millisecond in any build: regorus' own timer never
    // gets a chance to fire, so only the check after the call stops it.
    let limits = Limits {
        time: Duration::from_millis(1),
        memory: 1 << 30,
    };
    let mut e = engine("x if count(numbers.range(1, 3000000)) > 0", limits);
    let err = eval_rule(&mut e, "data.p.x", &limits).unwrap_err();
    assert!(err.timed_out, "{}", err.message);
    assert!(
        err.message.contains("time limit of 1 ms"),
        "{}",
        err.message
    );
    let err = eval_query(&mut e, "data.p.x", &limits).unwrap_err();
    assert!(err.timed_out, "{}", err.message);
}

#[test]
fn a_plan_shares_one_budget() {
    // Each rule alone fits the budget; the plan's two together do not.
    let limits = Limits {
        time: Duration::from_secs(10),
        memory: 3 << 20,
    };
    let rego = "a := count(numbers.range(1, 60000))\nb := count(numbers.range(1, 60000))";
    let mut e = engine(rego, limits);
    assert!(eval_rule(&mut e, "data.p.a", &limits).unwrap().is_some());
    let pool = EnginePool::new(e, limits);
    let steps = [
        Step {
            path: "data.p.a".into(),
            by_query: false,
        },
        Step {
            path: "data.p.b".into(),
            by_query: false,
        },
    ];
    let err = pool.eval(&steps, regorus::Value::new_object()).unwrap_err();
    assert!(err.over_memory_budget(), "{}", err.message);
}

#[test]
fn what_reads_only_data_is_computed_once_at_load() {
    let limits = Limits::default();
    let mut e = new_engine(limits);
    e.add_data(regorus::Value::from_json_str(r#"{"names": ["Ann", "bob"]}"#).unwrap())
        .unwrap();
    let rego = "names := {lower(n) | some n in data.names}\nmine := {n | some n in names; n == input.arguments.who}";
    add_policy(
        &mut e,
        "p.rego",
        &format!("package p\nimport rego.v1\n{rego}"),
    )
    .unwrap();
    let program =
        super::super::lower::program(&mut e, ["data.p.names", "data.p.mine"], limits).unwrap();
    let value = |path: &str| &program.rules[program.entry(path).unwrap()].defs[0].bodies[0].value;
    match value("data.p.names") {
        super::super::native::Term::Const(v) => {
            assert_eq!(
                serde_json::to_value(v).unwrap(),
                serde_json::json!(["ann", "bob"])
            )
        }
        _ => panic!("the data-only comprehension was not folded"),
    }
    // One that reads the input stays a comprehension.
    assert!(matches!(
        value("data.p.mine"),
        super::super::native::Term::Compr { .. }
    ));
}

#[test]
fn a_reference_named_twice_is_looked_up_once() {
    let limits = Limits::default();
    let mut e = new_engine(limits);
    let rego = "r := input.a.b\ns := [input.a.b, input.a[\"b\"], input.a.c, r.d, r.d]";
    add_policy(
        &mut e,
        "p.rego",
        &format!("package p\nimport rego.v1\n{rego}"),
    )
    .unwrap();
    let program = super::super::lower::program(&mut e, ["data.p.r", "data.p.s"], limits).unwrap();
    // `input.a`, `input.a.b`, `input.a.c`, `r.d`.
    assert_eq!(program.paths.len(), 4);
}
