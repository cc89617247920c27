//! A term's value: constants, `input`, locals and rules answered inline,
//! then every compound term (indexes, comparisons as OPA orders, `%` and
//! `+ - * /` as OPA computes them or a refusal, membership, builtin calls
//! through `budget::call`, composites, comprehensions). Rules, functions
//! and statements are `rules`'; the value helpers are `values`'.

use std::borrow::Cow;

use smallvec::SmallVec;

use regorus::Value;

use super::values::{has_set, index, opa_cmp, opa_only, undefined};
use super::{Cmp, Collect, Eval, Stop, Term};
use crate::opa_builtins::arith::{Declined, Op as Arith};
use crate::policy::budget;

impl Eval<'_> {
    /// The value of `t`. Leaves and memoized values are answered here,
    /// inlined into the caller; the rest in [`Eval::compound`].
    #[inline(always)]
    pub(super) fn term(&mut self, t: &Term, locals: &mut [Value]) -> Result<Value, Stop> {
        match t {
            Term::Const(v) => Ok(v.clone()),
            Term::Input => Ok(self.input.clone()),
            Term::Local(i) => Ok(locals[*i].clone()),
            Term::Rule(i) | Term::Path(i) => {
                let slot = match t {
                    Term::Path(_) => self.program.rules.len() + i,
                    _ => *i,
                };
                match &self.memo[slot] {
                    Some(v) => Ok(v.clone()),
                    None => self.compound(t, locals),
                }
            }
            _ => self.compound(t, locals),
        }
    }

    /// The value of `t` where a borrow does: a constant is not cloned.
    #[inline(always)]
    pub(super) fn operand<'t>(
        &mut self,
        t: &'t Term,
        locals: &mut [Value],
    ) -> Result<Cow<'t, Value>, Stop> {
        match t {
            Term::Const(v) => Ok(Cow::Borrowed(v)),
            _ => self.term(t, locals).map(Cow::Owned),
        }
    }

    #[inline(never)]
    pub(super) fn compound(&mut self, t: &Term, locals: &mut [Value]) -> Result<Value, Stop> {
        Ok(match t {
            Term::Const(v) => v.clone(),
            Term::Input => self.input.clone(),
            Term::Local(i) => locals[*i].clone(),
            Term::Rule(i) => self.rule(*i)?,
            Term::Imported { package, rule } => {
                for &r in package {
                    self.rule(r)?;
                }
                self.rule(*rule)?
            }
            Term::Func(i, args) => self.call(*i, args, locals)?,
            Term::Path(i) => {
                let program = self.program;
                let path = &program.paths[*i];
                let v = match &path.base {
                    Term::Input => index(self.input, &path.key)?,
                    base => index(&self.term(base, locals)?, &path.key)?,
                };
                self.memo[program.rules.len() + i] = Some(v.clone());
                v
            }
            Term::Index(base, key_term) => {
                let base = self.operand(base, locals)?;
                let key = self.operand(key_term, locals)?;
                let v = index(&base, &key)?;
                // An array's member at a number the request spelled with an
                // exponent (`2E0`), or with more digits than a double holds
                // (`1.0000000000000000001`): undefined in OPA, which never
                // reads that text as an integer; the same number from
                // elsewhere is the member. Matched by value, so refused
                // (`policy::spelled`).
                // A literal key is the policy's own integer.
                if matches!((&*base, &*key), (Value::Array(_), Value::Number(_)))
                    && !matches!(key_term.as_ref(), Term::Const(_))
                    && !undefined(&v)
                    && let Some(why) = crate::policy::spelled::index_refusal(&key)
                {
                    return Err(Stop::Refused(why));
                }
                // An object's or a set's member found by a key equal only
                // as the nearest double of a number the request spelled
                // with more digits than a double holds: OPA, comparing
                // exactly, may find none. Not found here is not found there.
                if matches!(&*base, Value::Object(_) | Value::Set(_))
                    && !undefined(&v)
                    && let Some(why) = crate::policy::spelled::member_refusal("key lookup", &key)
                {
                    return Err(Stop::Refused(why));
                }
                v
            }
            Term::Call(b, args) => {
                // Every argument is evaluated before any is found undefined,
                // as regorus does: an error in a later argument is still an
                // error (a fallback here), never an undefined call. At most
                // four arguments (the lowering's limit), kept on the stack.
                let mut values = SmallVec::<[Value; 4]>::new();
                for a in args {
                    values.push(self.term(a, locals)?);
                }
                if values.iter().any(undefined) {
                    return Ok(Value::Undefined);
                }
                let fast = |args: &[Value]| b.fast.as_ref().and_then(|f| f.answer(args));
                match budget::call(
                    b.name,
                    b.fcn,
                    b.estimate,
                    b.compat,
                    &values,
                    self.limits,
                    fast,
                ) {
                    Ok(v) => v,
                    // A number the request spelled that OPA would read
                    // otherwise (`policy::spelled`): refused here, as
                    // regorus refuses it (shadowed, or before it runs).
                    Err(e) => match e.downcast::<crate::policy::spelled::Refusal>() {
                        Ok(refused) => return Err(Stop::Refused(refused.0)),
                        // regorus raises it again, with the call's location.
                        Err(_) => return Err(Stop::Fallback),
                    },
                }
            }
            Term::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    let v = self.term(item, locals)?;
                    if undefined(&v) {
                        return Ok(Value::Undefined);
                    }
                    out.push(v);
                }
                Value::from(out)
            }
            Term::Set(items) => {
                let mut set = Value::new_set();
                let lost = crate::policy::spelled::holds_lost();
                for item in items {
                    let v = self.term(item, locals)?;
                    if undefined(&v) {
                        return Ok(Value::Undefined);
                    }
                    add_member(&mut set, v, lost)?;
                }
                set
            }
            Term::Object(fields) => {
                let mut obj = Value::new_object();
                let lost = crate::policy::spelled::holds_lost();
                for (k, v) in fields {
                    let k = self.term(k, locals)?;
                    let v = self.term(v, locals)?;
                    if undefined(&k) || undefined(&v) {
                        return Ok(Value::Undefined);
                    }
                    let obj = obj.as_object_mut().map_err(|_| Stop::Fallback)?;
                    if lost && obj.contains_key(&k) {
                        merged("object key", &k)?;
                    }
                    obj.insert(k, v);
                }
                obj
            }
            Term::Rem(a, b) => {
                let a = self.operand(a, locals)?;
                let b = self.operand(b, locals)?;
                let (a, b) = (a.as_ref(), b.as_ref());
                if undefined(a) || undefined(b) {
                    return Ok(Value::Undefined);
                }
                if let Some(why) = crate::policy::spelled::lost_refusal("%", [a, b]) {
                    return Err(Stop::Refused(why));
                }
                match crate::opa_builtins::numbers::rem(a, b) {
                    Some(Ok((v, regorus_agrees))) => {
                        if !regorus_agrees {
                            opa_only();
                        }
                        v
                    }
                    // An error in both engines (OPA's operand errors,
                    // modulo by zero): regorus raises its own.
                    _ => return Err(Stop::Fallback),
                }
            }
            Term::Arith(op, a, b, what) => {
                let a = self.operand(a, locals)?;
                let b = self.operand(b, locals)?;
                let (a, b) = (a.as_ref(), b.as_ref());
                if undefined(a) || undefined(b) {
                    return Ok(Value::Undefined);
                }
                if let (Arith::Sub, Value::Set(x), Value::Set(y)) = (op, a, b) {
                    // Set difference, the same in OPA and regorus.
                    let mut out = Value::new_set();
                    let set = out.as_set_mut().map_err(|_| Stop::Fallback)?;
                    let lost = crate::policy::spelled::holds_lost();
                    for v in x.iter() {
                        if !y.contains(v) {
                            set.insert(v.clone());
                        } else if lost {
                            merged("set difference", v)?;
                        }
                    }
                    return Ok(out);
                }
                let lost = (
                    crate::policy::spelled::lost_texts(a),
                    crate::policy::spelled::lost_texts(b),
                );
                if !lost.0.is_empty() || !lost.1.is_empty() {
                    // OPA computes on the text the request spelled: answered
                    // only where every text the operands may stand for gives
                    // regent's number.
                    return match crate::opa_builtins::arith::eval_spelled(
                        *op, a, b, &lost.0, &lost.1,
                    ) {
                        Some((v, regorus_agrees)) => {
                            if !regorus_agrees {
                                opa_only();
                            }
                            Ok(v)
                        }
                        None => Err(Stop::Refused(
                            crate::policy::spelled::lost_refusal(what, [a, b])
                                .unwrap_or_else(|| format!("{what}: a number regent cannot hold")),
                        )),
                    };
                }
                match crate::opa_builtins::arith::eval(*op, a, b) {
                    Ok((v, regorus_agrees)) => {
                        if !regorus_agrees {
                            opa_only();
                        }
                        v
                    }
                    // A set difference, a type error, division by zero:
                    // regorus' answer or error is OPA's.
                    Err(Declined::Regorus) => return Err(Stop::Fallback),
                    Err(Declined::Unrepresentable(text)) => {
                        return Err(Stop::Refused(crate::opa_builtins::arith::refusal(
                            what, &text,
                        )));
                    }
                    Err(Declined::TextUnknown(text)) => {
                        return Err(Stop::Refused(crate::opa_builtins::arith::unknown_text(
                            what, &text,
                        )));
                    }
                }
            }
            Term::Compare(op, a, b) => {
                let a = self.operand(a, locals)?;
                let b = self.operand(b, locals)?;
                let (a, b) = (a.as_ref(), b.as_ref());
                if undefined(a) || undefined(b) {
                    return Ok(Value::Undefined);
                }
                // A number the request spelled with more digits than a
                // double holds: OPA compares its exact decimal, regent the
                // nearest double, which differ only where the doubles are
                // equal (`policy::spelled`).
                if let Some(why) = crate::policy::spelled::compare_refusal(op.text(), a, b) {
                    return Err(Stop::Refused(why));
                }
                let order = || {
                    // regorus orders a set before an object, OPA after: when
                    // either side holds a set, OPA's order decides.
                    let theirs = a.cmp(b);
                    if !has_set(a) && !has_set(b) {
                        return theirs;
                    }
                    let ours = opa_cmp(a, b);
                    if ours != theirs {
                        opa_only();
                    }
                    ours
                };
                Value::Bool(match op {
                    Cmp::Eq => a == b,
                    Cmp::Ne => a != b,
                    Cmp::Lt => order().is_lt(),
                    Cmp::Le => order().is_le(),
                    Cmp::Gt => order().is_gt(),
                    Cmp::Ge => order().is_ge(),
                })
            }
            Term::Compr { kind, stmts, value } => {
                let mut out = match kind {
                    Collect::Array => Value::new_array(),
                    Collect::Set => Value::new_set(),
                    Collect::Object => Value::new_object(),
                };
                let lost = crate::policy::spelled::holds_lost();
                self.stmts(stmts, value, locals, &mut |v| {
                    if undefined(&v) {
                        return Ok(());
                    }
                    match kind {
                        Collect::Array => out.as_array_mut().map_err(|_| Stop::Fallback)?.push(v),
                        Collect::Set => add_member(&mut out, v, lost)?,
                        Collect::Object => {
                            let (Value::Array(kv), Ok(obj)) = (&v, out.as_object_mut()) else {
                                return Err(Stop::Fallback);
                            };
                            let (Some(k), Some(x)) = (kv.get(0), kv.get(1)) else {
                                return Err(Stop::Fallback);
                            };
                            // A key given two values: regorus' error.
                            if obj.get(k).is_some_and(|old| old != x) {
                                return Err(Stop::Fallback);
                            }
                            if lost && obj.contains_key(k) {
                                merged("object key", k)?;
                            }
                            obj.insert(k.clone(), x.clone());
                        }
                    }
                    Ok(())
                })?;
                out
            }
            Term::In(v, coll) => {
                // Anything that is not a collection holds nothing (OPA and
                // regorus). An undefined operand: undefined in OPA, false in
                // regorus.
                let v = self.operand(v, locals)?;
                let coll = self.operand(coll, locals)?;
                let v = v.as_ref();
                if undefined(v) || undefined(coll.as_ref()) {
                    opa_only();
                    return Ok(Value::Undefined);
                }
                let found = match coll.as_ref() {
                    Value::Array(items) => items.contains(v),
                    Value::Set(items) => items.contains(v),
                    Value::Object(fields) => fields.values().any(|x| x == v),
                    _ => false,
                };
                // A member equal to `v` only as the nearest double of a
                // number the request spelled with more digits than a
                // double holds: OPA, comparing exactly, may find none
                // (`policy::spelled`). Not found here is not found there.
                if found && let Some(why) = crate::policy::spelled::compare_refusal("in", v, v) {
                    return Err(Stop::Refused(why));
                }
                Value::Bool(found)
            }
            Term::KeyIn(k, obj) => {
                // As `k in object.keys(obj)`: undefined when `obj` or `k` is
                // (OPA; regorus says false), and regorus' type error when
                // `obj` is not an object.
                let k = self.operand(k, locals)?;
                let obj = self.operand(obj, locals)?;
                match obj.as_ref() {
                    Value::Undefined => {
                        opa_only();
                        Value::Undefined
                    }
                    Value::Object(_) if undefined(k.as_ref()) => {
                        opa_only();
                        Value::Undefined
                    }
                    Value::Object(fields) => {
                        let found = fields.contains_key(k.as_ref());
                        if found {
                            merged("key lookup", k.as_ref())?;
                        }
                        Value::Bool(found)
                    }
                    _ => return Err(Stop::Fallback),
                }
            }
        })
    }
}

/// Adds `v` to `set` (a set value), as every set `native` builds is
/// built: a member met again is refused when the request holds a number
/// regent cannot hold (`lost`, read once per set; [`merged`]).
pub(super) fn add_member(set: &mut Value, v: Value, lost: bool) -> Result<(), Stop> {
    let set = set.as_set_mut().map_err(|_| Stop::Fallback)?;
    if lost && set.contains(&v) {
        merged("set member", &v)?;
    }
    set.insert(v);
    Ok(())
}

/// Refuses `v`, a member or key met again while a set or object is built,
/// or found by a key lookup (`what`), when it is or holds the nearest
/// double of a number the request spelled with more digits than a double
/// holds: OPA, holding both exactly, may keep two where regent keeps one,
/// or find none (`policy::spelled::member_refusal`).
fn merged(what: &str, v: &Value) -> Result<(), Stop> {
    match crate::policy::spelled::member_refusal(what, v) {
        Some(why) => Err(Stop::Refused(why)),
        None => Ok(()),
    }
}
