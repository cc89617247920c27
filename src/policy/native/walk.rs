//! Evaluating `walk(x, out)` (`Stmt::Walk`): its `[path, value]` pairs in
//! OPA's order (a node before its members; an array's by index, an
//! object's by key, a set's in OPA's order, a set member's path segment
//! the member itself), built through regorus' `walk` guard so that they
//! are charged as regorus charges them, each bound to the pattern before
//! the rest of the body runs.

use regorus::Value;

use super::values::{set_members, undefined};
use super::{Builtin, Eval, Stmt, Stop, Term, WalkOut};
use crate::policy::budget;

impl Eval<'_> {
    /// `walk(of, out)` and the statements after it (`Stmt::Walk`): the
    /// pairs built by regorus' `walk` through `budget::call` (charged as
    /// its guard charges them), with OPA's order of set members
    /// (`values::walk`), each bound to `out` before the rest of the body.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn walk(
        &mut self,
        of: &Term,
        call: &Builtin,
        out: &WalkOut,
        rest: &[Stmt],
        value: &Term,
        locals: &mut [Value],
        emit: &mut dyn FnMut(Value) -> Result<(), Stop>,
    ) -> Result<(), Stop> {
        let x = self.term(of, locals)?;
        if undefined(&x) {
            return Ok(());
        }
        let pairs = match budget::call(
            call.name,
            call.fcn,
            call.estimate,
            call.compat,
            std::slice::from_ref(&x),
            self.limits,
            |args| Some(walk_pairs(&args[0])),
        ) {
            Ok(v) => v,
            Err(e) => match e.downcast::<crate::policy::spelled::Refusal>() {
                Ok(refused) => return Err(Stop::Refused(refused.0)),
                Err(_) => return Err(Stop::Fallback),
            },
        };
        let Value::Array(pairs) = &pairs else {
            return Err(Stop::Fallback);
        };
        for pair in pairs.iter() {
            self.tick()?;
            match out {
                WalkOut::Whole(slot) => locals[*slot] = pair.clone(),
                WalkOut::Pair(path, member) => {
                    let Value::Array(pv) = pair else {
                        return Err(Stop::Fallback);
                    };
                    let [p, v] = pv.as_slice() else {
                        return Err(Stop::Fallback);
                    };
                    locals[*path] = p.clone();
                    locals[*member] = v.clone();
                }
            }
            self.stmts(rest, value, locals, emit)?;
        }
        Ok(())
    }
}

/// `walk(v)` as OPA answers it: `[path, node]` for `v` and every node
/// under it, a node before its members, a set's members in OPA's order
/// (noted as OPA's alone where regorus' differs: `set_members`).
fn walk_pairs(v: &Value) -> Value {
    let mut out = Vec::new();
    visit(&mut Vec::new(), v, &mut out);
    Value::from(out)
}

fn visit(path: &mut Vec<Value>, v: &Value, out: &mut Vec<Value>) {
    out.push(Value::from(vec![Value::from(path.clone()), v.clone()]));
    match v {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(Value::from(i as u64));
                visit(path, item, out);
                path.pop();
            }
        }
        Value::Set(items) => {
            for item in set_members(|| items.iter()) {
                path.push(item.clone());
                visit(path, item, out);
                path.pop();
            }
        }
        Value::Object(fields) => {
            for (k, item) in fields.iter() {
                path.push(k.clone());
                visit(path, item, out);
                path.pop();
            }
        }
        _ => {}
    }
}
