//! Whether an operand of `<`, `<=`, `>`, `>=` may hold a set (regorus
//! orders sets before objects, OPA after): nothing from `input` or `data`
//! does, nor a scalar literal or a builtin whose value is a scalar. A local
//! holding an integer is ruled out by the caller (`integers`).

use regorus::unstable::Expr;

use crate::rego::path_of;

/// Whether `e` may hold a set: nothing from `input` or `data` (JSON) does,
/// nor a scalar literal; a set, a call, a rule or a local may.
pub(super) fn may_hold_set(e: &Expr) -> bool {
    match e {
        Expr::String { .. }
        | Expr::RawString { .. }
        | Expr::Number { .. }
        | Expr::Bool { .. }
        | Expr::Null { .. }
        | Expr::ArithExpr { .. }
        | Expr::BoolExpr { .. }
        | Expr::Membership { .. }
        | Expr::UnaryExpr { .. } => false,
        Expr::Array { items, .. } => items.iter().any(|i| may_hold_set(i)),
        Expr::Object { fields, .. } => fields
            .iter()
            .any(|(_, k, v)| may_hold_set(k) || may_hold_set(v)),
        Expr::RefDot { .. } | Expr::RefBrack { .. } => !matches!(
            path_of(e).first().map(String::as_str),
            Some("input" | "data")
        ),
        Expr::Var { value, .. } => !matches!(
            value.as_string().as_deref().map(|s| s.as_ref()),
            Ok("input" | "data")
        ),
        // A builtin whose value is a number, a string or a boolean (or an
        // error): `n > to_number(code)` compares no set. Not `max`/`min`,
        // whose value is a member of any kind.
        Expr::Call { fcn, .. } => !matches!(
            path_of(fcn).join(".").as_str(),
            "count"
                | "sum"
                | "product"
                | "to_number"
                | "abs"
                | "round"
                | "ceil"
                | "floor"
                | "indexof"
                | "strings.count"
                | "units.parse"
                | "units.parse_bytes"
                | "time.now_ns"
                | "time.parse_ns"
                | "time.parse_rfc3339_ns"
                | "time.parse_duration_ns"
                | "format_int"
                | "lower"
                | "upper"
                | "sprintf"
                | "concat"
                | "substring"
                | "trim"
                | "trim_space"
                | "replace"
                | "type_name"
                | "json.marshal"
        ),
        _ => true,
    }
}
