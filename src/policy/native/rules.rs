//! Evaluating rules: a rule's value from its definitions (`else` chains,
//! `default`, partial sets; each computed once per evaluation), a call of a
//! user-defined function, a body's statements (`:=`, `not` after its
//! guards, `some … in`, `every`; `walk` hands the rest of the body to
//! `walk`) on the body's locals. A term's value is `terms`';
//! the value helpers (order, indexing, one value per rule) are `values`'.

use smallvec::SmallVec;

use regorus::Value;

use super::values::{
    clear_opa_only, opa_only, opa_only_noted, set_members, settle, truthy, undefined,
};
use super::{Body, CLOCK_EVERY, Eval, Guard, Kind, SMALL, Stmt, Stop, Term};

impl Eval<'_> {
    pub(super) fn tick(&mut self) -> Result<(), Stop> {
        self.ticks = self.ticks.wrapping_add(1);
        if self.ticks.is_multiple_of(CLOCK_EVERY) && self.scope.elapsed() > self.limits.time {
            return Err(Stop::TimedOut);
        }
        Ok(())
    }

    pub(super) fn rule(&mut self, i: usize) -> Result<Value, Stop> {
        if let Some(v) = &self.memo[i] {
            return Ok(v.clone());
        }
        let program = self.program;
        let rule = &program.rules[i];
        let v = match rule.kind {
            Kind::PartialSet => {
                let mut set = Value::new_set();
                let lost = crate::policy::spelled::holds_lost();
                for def in &rule.defs {
                    for body in &def.bodies {
                        self.body(body, &[], &mut |v| {
                            if !undefined(&v) {
                                super::terms::add_member(&mut set, v, lost)?;
                            }
                            Ok(())
                        })?;
                    }
                }
                set
            }
            // Only called through `Eval::call`.
            Kind::Function(_) => return Err(Stop::Fallback),
            Kind::Complete => {
                let mut value = Value::Undefined;
                for def in &rule.defs {
                    for body in &def.bodies {
                        let mut held = false;
                        self.body(body, &[], &mut |v| {
                            if undefined(&v) {
                                return Ok(());
                            }
                            if held {
                                // One body holding twice (`some`): regorus
                                // decides whether that is a conflict.
                                return Err(Stop::Fallback);
                            }
                            held = true;
                            // Two definitions, two values: regorus'
                            // conflict error.
                            settle(&mut value, v)
                        })?;
                        // An `else` body counts only when the ones before failed.
                        if held {
                            break;
                        }
                    }
                }
                match (&value, &rule.default) {
                    (Value::Undefined, Some(d)) => d.clone(),
                    _ => value,
                }
            }
        };
        self.memo[i] = Some(v.clone());
        Ok(v)
    }

    /// Runs `body` with its first locals bound to `args` (a function's
    /// parameters), calling `emit` with its value (possibly undefined) for
    /// every way it holds.
    pub(super) fn body(
        &mut self,
        body: &Body,
        args: &[Value],
        emit: &mut dyn FnMut(Value) -> Result<(), Stop>,
    ) -> Result<(), Stop> {
        // Locals on the stack unless there are many; most bodies have none.
        if body.locals == 0 {
            if !self.indexed(body, &mut [])? {
                return Ok(());
            }
            self.stmts(&body.stmts, &body.value, &mut [], emit)
        } else {
            let mut locals = SmallVec::<[Value; SMALL]>::from_elem(Value::Undefined, body.locals);
            locals[..args.len()].clone_from_slice(args);
            if !self.indexed(body, &mut locals)? {
                return Ok(());
            }
            self.stmts(&body.stmts, &body.value, &mut locals, emit)
        }
    }

    /// Whether OPA's rule index would run `body` (`Body::index`). When it
    /// would not, the body fails; regorus runs it in order and may meet an
    /// error first, so (debug builds) the body is run in order to learn
    /// whether this answer is OPA's alone.
    fn indexed(&mut self, body: &Body, locals: &mut [Value]) -> Result<bool, Stop> {
        for g in &body.index {
            let (Guard::Defined(t) | Guard::Holds(t)) = g;
            let v = match self.term(t, locals) {
                Ok(v) => v,
                // A number regent cannot hold compared with the scalar:
                // left to the body, which refuses only where it compares.
                Err(Stop::Refused(_)) => continue,
                Err(e) => return Err(e),
            };
            let pass = match g {
                Guard::Defined(_) => !undefined(&v),
                Guard::Holds(_) => truthy(&v),
            };
            if !pass {
                #[cfg(debug_assertions)]
                if self
                    .stmts(&body.stmts, &body.value, locals, &mut |_| Ok(()))
                    .is_err()
                {
                    opa_only();
                }
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// A call of the function `i`, as regorus' `eval_call_impl`: every
    /// argument evaluated first (an error in any is an error), undefined
    /// when one is (the bodies are not run); each definition's value is
    /// that of the first of its `else` chain to hold; the definitions that
    /// give a value must all give the same one. Whatever is not plainly
    /// regorus' falls back: a body holding with an undefined value, one body
    /// giving two values, two definitions giving two values.
    pub(super) fn call(
        &mut self,
        i: usize,
        args: &[Term],
        locals: &mut [Value],
    ) -> Result<Value, Stop> {
        self.tick()?;
        let mut values = SmallVec::<[Value; 4]>::new();
        for a in args {
            values.push(self.term(a, locals)?);
        }
        if values.iter().any(undefined) {
            return Ok(Value::Undefined);
        }
        let program = self.program;
        let rule = &program.rules[i];
        if rule.kind != Kind::Function(values.len()) {
            return Err(Stop::Fallback);
        }
        let mut result = Value::Undefined;
        for def in &rule.defs {
            let mut out = Value::Undefined;
            for body in &def.bodies {
                let mut held = false;
                self.body(body, &values, &mut |v| {
                    if undefined(&v) {
                        // regorus: the body holds, the definition is
                        // undefined and its `else` is not tried.
                        return Err(Stop::Fallback);
                    }
                    held = true;
                    // Two values: "function produced multiple outputs".
                    settle(&mut out, v)
                })?;
                if held {
                    break;
                }
            }
            if undefined(&out) {
                continue;
            }
            // Two definitions, two values: "functions must not produce
            // multiple outputs for same inputs".
            settle(&mut result, out)?;
        }
        Ok(result)
    }

    /// Whether `every k, v in domain { body }` holds: the body holds for
    /// each member of `domain`, taken in OPA's order (an array's by index,
    /// an object's by key, a set's sorted as OPA sorts it), the first
    /// member it fails for ending the walk; a domain that is not a
    /// collection fails it (OPA and regorus).
    fn every(
        &mut self,
        key: Option<usize>,
        slot: usize,
        domain: &Term,
        body: &[Stmt],
        locals: &mut [Value],
    ) -> Result<bool, Stop> {
        let domain = self.term(domain, locals)?;
        match &domain {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if !self.member(key, slot, || Value::from(i as u64), item, body, locals)? {
                        return Ok(false);
                    }
                }
            }
            Value::Set(items) => {
                // OPA's order where it differs from regorus' (as `some`).
                for item in set_members(|| items.iter()) {
                    if !self.member(key, slot, || item.clone(), item, body, locals)? {
                        return Ok(false);
                    }
                }
            }
            Value::Object(fields) => {
                for (k, v) in fields.iter() {
                    if !self.member(key, slot, || k.clone(), v, body, locals)? {
                        return Ok(false);
                    }
                }
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Whether `every`'s body holds for one member (`key` and `value`).
    /// OPA stops at the first way it holds; regorus goes on through the
    /// body's other ways (`some`), where it may meet an error OPA never
    /// evaluates: such an error after the body held is OPA's `true`, noted
    /// as OPA's alone.
    fn member(
        &mut self,
        key: Option<usize>,
        slot: usize,
        key_value: impl FnOnce() -> Value,
        value: &Value,
        body: &[Stmt],
        locals: &mut [Value],
    ) -> Result<bool, Stop> {
        self.tick()?;
        if let Some(k) = key {
            locals[k] = key_value();
        }
        locals[slot] = value.clone();
        let mut held = false;
        let done = Term::Const(Value::Bool(true));
        let ran = self.stmts(body, &done, locals, &mut |_| {
            held = true;
            Ok(())
        });
        match ran {
            Ok(()) => Ok(held),
            Err(Stop::Fallback | Stop::Refused(_)) if held => {
                opa_only();
                Ok(true)
            }
            Err(e) => Err(e),
        }
    }

    pub(super) fn stmts(
        &mut self,
        mut stmts: &[Stmt],
        value: &Term,
        locals: &mut [Value],
        emit: &mut dyn FnMut(Value) -> Result<(), Stop>,
    ) -> Result<(), Stop> {
        // Statements that hold at most once go on in this loop; only `some`
        // and `walk` recurse, once per member.
        let (first, rest) = loop {
            let Some((first, rest)) = stmts.split_first() else {
                let v = self.term(value, locals)?;
                emit(v)?;
                return Ok(());
            };
            match first {
                Stmt::Expr(t) => {
                    // An `in` that is undefined (OPA) or false (regorus)
                    // fails the body alike: nothing to note.
                    let noted = opa_only_noted();
                    if !truthy(&self.term(t, locals)?) {
                        if matches!(t, Term::In(..) | Term::KeyIn(..)) && !noted {
                            clear_opa_only();
                        }
                        return Ok(());
                    }
                }
                Stmt::Not(t, guards, every_index) => {
                    for g in guards {
                        if undefined(&self.term(g, locals)?) {
                            // OPA: the body fails; regorus: the `not` holds.
                            opa_only();
                            return Ok(());
                        }
                    }
                    if truthy(&self.term(t, locals)?) {
                        return Ok(());
                    }
                    if *every_index {
                        opa_only();
                    }
                }
                Stmt::Assign(slot, t) => {
                    let v = self.term(t, locals)?;
                    if undefined(&v) {
                        return Ok(());
                    }
                    locals[*slot] = v;
                }
                Stmt::SomeIn { .. } | Stmt::Walk { .. } => break (first, rest),
                Stmt::Every {
                    key,
                    value: slot,
                    domain,
                    body,
                } => {
                    if !self.every(*key, *slot, domain, body, locals)? {
                        return Ok(());
                    }
                }
            }
            stmts = rest;
        };
        let (key, slot, collection) = match first {
            Stmt::SomeIn {
                key,
                value,
                collection,
            } => (key, value, collection),
            Stmt::Walk { of, call, out } => {
                return self.walk(of, call, out, rest, value, locals, emit);
            }
            _ => return Err(Stop::Fallback),
        };
        let coll = self.term(collection, locals)?;
        match &coll {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.tick()?;
                    if let Some(k) = key {
                        locals[*k] = Value::from(i as u64);
                    }
                    locals[*slot] = item.clone();
                    self.stmts(rest, value, locals, emit)?;
                }
            }
            Value::Set(items) => {
                for item in set_members(|| items.iter()) {
                    self.tick()?;
                    if let Some(k) = key {
                        locals[*k] = item.clone();
                    }
                    locals[*slot] = item.clone();
                    self.stmts(rest, value, locals, emit)?;
                }
            }
            Value::Object(fields) => {
                for (k, v) in fields.iter() {
                    self.tick()?;
                    if let Some(kslot) = key {
                        locals[*kslot] = k.clone();
                    }
                    locals[*slot] = v.clone();
                    self.stmts(rest, value, locals, emit)?;
                }
            }
            Value::Undefined => {}
            // Iterating a scalar: OPA iterates nothing; regorus fails.
            _ => opa_only(),
        }
        Ok(())
    }
}
