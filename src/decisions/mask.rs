//! `--decision-log-mask`: the paths of the input a line erases before it
//! leaves the process ([`Mask`], [`parse_mask`]), and what a line shows once
//! they are applied ([`Masked`], the caller as a [`CallerRef`]). Applying
//! them to an entry is `line`'s business; which masks apply is the format's.

use std::borrow::Cow;

use serde_json::Value;

use crate::caller::Caller;

/// One `--decision-log-mask` path: a JSON pointer into the policy input as
/// the line records it (OPA's `/input/...` masks), erased before the line
/// leaves the process.
///
/// - `/input/arguments/<key>[/<key>...]`: an argument, or a member of an
///   object argument, at any depth: removed from `arguments` (with
///   `--log-arguments`) and from `input.arguments`, and the line's
///   `argumentsDigest` is then of the masked arguments, so that the digest
///   cannot be used to test guesses of an erased value;
/// - `/input/caller`, `/input/caller/subject`, `/input/caller/issuer`: the
///   caller, or one of its two logged members, removed from `caller` and
///   `input.caller`. (`/input/caller/claims/...` is accepted, for masks
///   written for OPA, and never erases anything: a line never holds claims.)
///
/// Keys are unescaped as in JSON pointers (`~1` is `/`, `~0` is `~`); a path
/// steps through objects only. A path that is absent from a line erases
/// nothing and is not listed in its `erased`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mask {
    pub(super) text: String,
    pub(super) root: MaskRoot,
    /// The keys below the root, unescaped.
    pub(super) keys: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MaskRoot {
    Arguments,
    Caller,
}

/// Parses one `--decision-log-mask` path.
pub fn parse_mask(text: &str) -> Result<Mask, String> {
    let hint = "mask a path under /input/arguments or /input/caller, for example --decision-log-mask /input/arguments/password";
    let Some(rest) = text.strip_prefix("/input/") else {
        return Err(format!(
            "decision-log mask {text:?} is not a path into the logged input: {hint}"
        ));
    };
    let mut parts = rest.split('/');
    let root = match parts.next() {
        Some("arguments") => MaskRoot::Arguments,
        Some("caller") => MaskRoot::Caller,
        Some("tool") => {
            return Err(format!(
                "decision-log mask {text:?} would erase the tool name, which every line keeps: {hint}"
            ));
        }
        _ => {
            return Err(format!(
                "decision-log mask {text:?} names no part of the logged input: {hint}"
            ));
        }
    };
    let keys: Vec<String> = parts
        .map(|k| k.replace("~1", "/").replace("~0", "~"))
        .collect();
    if keys.iter().any(String::is_empty) {
        return Err(format!(
            "decision-log mask {text:?} has an empty key (a doubled or trailing '/'): {hint}"
        ));
    }
    if root == MaskRoot::Arguments && keys.is_empty() {
        return Err(format!(
            "decision-log mask {text:?} would erase every argument: name one (/input/arguments/KEY), or leave out --log-arguments to log only their digest"
        ));
    }
    Ok(Mask {
        text: text.to_string(),
        root,
        keys,
    })
}

/// What a line shows of the input once its masks are applied.
pub(super) struct Masked<'a> {
    pub(super) arguments: Cow<'a, Value>,
    pub(super) subject: bool,
    pub(super) issuer: bool,
    /// The masks that erased something, in the order configured.
    pub(super) erased: Vec<&'a str>,
}

impl Masked<'_> {
    pub(super) fn caller<'c>(&self, c: &'c Caller) -> Option<CallerRef<'c>> {
        (self.subject || self.issuer).then(|| CallerRef {
            subject: self.subject.then_some(c.subject.as_str()),
            issuer: self.issuer.then_some(c.issuer.as_str()),
        })
    }
}

/// Removes the member at `keys` (objects only) from `v`; whether it was there.
pub(super) fn erase(v: &mut Value, keys: &[String]) -> bool {
    let Some((last, path)) = keys.split_last() else {
        return false;
    };
    let mut at = v;
    for k in path {
        match at.get_mut(k.as_str()) {
            Some(next) => at = next,
            None => return false,
        }
    }
    at.as_object_mut().and_then(|m| m.remove(last)).is_some()
}

pub(super) fn holds(v: &Value, keys: &[String]) -> bool {
    let mut at = v;
    for k in keys {
        match at.get(k.as_str()) {
            Some(next) => at = next,
            None => return false,
        }
    }
    true
}

/// The caller as a line shows it: subject and issuer, either masked away.
#[derive(serde::Serialize)]
pub(super) struct CallerRef<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    subject: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    issuer: Option<&'a str>,
}
