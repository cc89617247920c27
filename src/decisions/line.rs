//! One decision line: an [`Entry`] written straight to JSON text, regent's
//! fields first and OPA's decision-log event after them, its input masked
//! and the whole kept under the format's limit (see [`Entry::line`]). This
//! runs on the writer thread for every decision; where lines go is the
//! writer's and the sinks' business.

use std::borrow::Cow;
use std::time::SystemTime;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::cut::json_size;
use super::digest::arguments_digest;
use super::entry::{Entry, Kind, Phase, ShadowEntry, Verdict};
use super::format::Format;
use super::mask::{CallerRef, Mask, MaskRoot, Masked, erase, holds};
use super::millis;
use super::sent;
use crate::timestamp::rfc3339;

impl ShadowEntry {
    fn result(&self) -> OpaResult<'_> {
        opa_result(
            &self.verdict,
            self.annotations.as_ref(),
            self.confirm.as_deref(),
        )
    }
}

impl Entry {
    /// The line (without its newline) for an entry recorded at `time`,
    /// written straight to JSON text: this runs for every decision.
    ///
    /// regent's own fields come first, unchanged; OPA's decision-log event
    /// fields follow (see docs/execution.md):
    /// - `decision_id`: the line's `id`; `timestamp`: its `time`;
    /// - `path`: `tools/<tool>`, the decision regent made (the tool's
    ///   contract, layered from listed values, YAML rules and the policy's
    ///   rules, not one Rego rule);
    /// - `input`: `{tool, arguments (with --log-arguments only), caller}`;
    /// - `result`: `{allowed, deny, annotations, confirm}`, or `{allowed:
    ///   false, error}` when no decision could be made;
    /// - `labels`: `{id, version, ...--decision-log-label}`;
    /// - `bundles`: `{"regent": {"revision": the catalog revision}}`, or
    ///   with `serve --bundle-url` `{NAME: {"revision": the manifest's
    ///   revision}}` of the bundle the catalog came from;
    /// - `metrics`: `{timer_regent_eval_ns}` when the catalog decided.
    ///
    /// A line is never longer than the format's limit
    /// (`--decision-log-line-bytes`). One that would be is made again with
    /// the arguments (in `arguments` and `input.arguments`) replaced by a
    /// marker, `{"truncated": true, "bytes": <their JSON size>, "digest":
    /// <argumentsDigest>}`; if that is still too long, every other field a
    /// client or a policy can make large is cut too (strings clipped to 1 KiB
    /// and ending in `…`, at most 4 deny reasons, objects over 1 KiB replaced
    /// by the same kind of marker). The line then lists what it lost in
    /// `truncated` (`arguments`, `tool`, `annotations`, `reasons`, `error`,
    /// `refused`, `insufficientScope`, `confirm`, `outcome`, `shadow`): it stays valid JSON, and
    /// `argumentsDigest` is always of the whole (masked) arguments.
    pub fn line(&self, time: SystemTime, format: &Format, out: &mut Vec<u8>) {
        let masked = self.masked(&format.mask);
        let digest = arguments_digest(&masked.arguments);
        let id = self.id();
        let start = out.len();
        let limit = format.line_limit;
        // The arguments' text with their numbers as the client spelled
        // them, when its request spelled some by hand (`sent`).
        let as_sent = self
            .sent
            .as_ref()
            .filter(|_| format.log_arguments)
            .and_then(|text| sent::arguments(text, &self.arguments, &masked.arguments, limit));
        let args_size = format.log_arguments.then(|| {
            as_sent
                .as_ref()
                .map_or_else(|| json_size(&masked.arguments), |a| a.get().len())
        });
        let marker = |size: usize| json!({"truncated": true, "bytes": size, "digest": digest});
        let mut truncated: Vec<&str> = Vec::new();
        // The arguments appear twice: over half the limit, they cannot fit.
        let mut shown = match args_size {
            Some(size) if size.saturating_mul(2) > limit => {
                truncated.push("arguments");
                Some(marker(size))
            }
            _ => None,
        };
        // One line of `entry`, with the arguments as `shown` (the marker
        // that stands for them) or whole.
        let write =
            |entry: &Entry, shown: &Option<Value>, truncated: &[&str], out: &mut Vec<u8>| {
                let arguments = format.log_arguments.then(|| match (shown, &as_sent) {
                    (Some(marker), _) => Shown::Value(marker),
                    (None, Some(sent)) => Shown::Sent(sent),
                    (None, None) => Shown::Value(&masked.arguments),
                });
                entry.write(
                    time, &id, format, &masked, &digest, arguments, truncated, out,
                );
            };
        write(self, &shown, &truncated, out);
        if out.len() - start <= limit {
            return;
        }
        if let Some(size) = args_size
            && shown.is_none()
        {
            out.truncate(start);
            truncated.push("arguments");
            shown = Some(marker(size));
            write(self, &shown, &truncated, out);
            if out.len() - start <= limit {
                return;
            }
        }
        out.truncate(start);
        let (small, cut) = self.cut_down();
        truncated.extend(cut);
        write(&small, &shown, &truncated, out);
    }

    /// The line for [`Entry::line`], with `arguments` shown (when logged)
    /// and `truncated` listed (when any).
    #[allow(clippy::too_many_arguments)]
    fn write(
        &self,
        time: SystemTime,
        id: &str,
        format: &Format,
        masked: &Masked<'_>,
        digest: &str,
        arguments: Option<Shown<'_>>,
        truncated: &[&str],
        out: &mut Vec<u8>,
    ) {
        // Writing strings and values into a Vec cannot fail. Every key is
        // one of this function's plain ASCII names, which JSON writes as
        // they are: copied, not escaped (BENCHMARKS.md, "Session 25").
        fn member<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, key: &str, value: &T) {
            debug_assert!(key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
            out.extend_from_slice(b",\"");
            out.extend_from_slice(key.as_bytes());
            out.extend_from_slice(b"\":");
            let _ = serde_json::to_writer(&mut *out, value);
        }
        let timestamp = rfc3339(time);
        out.extend_from_slice(br#"{"time":"#);
        let _ = serde_json::to_writer(&mut *out, &timestamp);
        member(out, "id", id);
        let kind = match self.kind {
            Kind::Resolve => "resolve",
            Kind::Call => "call",
            Kind::UpstreamRequest => "upstream_request",
        };
        member(out, "kind", kind);
        if let Some(phase) = self.phase {
            let phase = match phase {
                Phase::Intent => "intent",
                Phase::Outcome => "outcome",
            };
            member(out, "phase", phase);
        }
        member(out, "method", self.method);
        member(out, "tool", &self.tool);
        if let Some(c) = self.caller.as_deref().and_then(|c| masked.caller(c)) {
            member(out, "caller", &c);
        }
        member(out, "argumentsDigest", digest);
        if let Some(a) = arguments {
            member(out, "arguments", &a);
        }
        // Where the annotations' text landed: `result` repeats it.
        let mut annotations_at = None;
        if let Some(a) = &self.annotations {
            let start = out.len() + br#","annotations":"#.len();
            member(out, "annotations", a);
            annotations_at = Some(start..out.len());
        }
        match &self.verdict {
            Verdict::Allowed => {
                member(out, "decision", "allowed");
                member(out, "reasons", &[] as &[String]);
            }
            Verdict::Denied(reasons) => {
                member(out, "decision", "denied");
                member(out, "reasons", reasons);
            }
            Verdict::Error(why) => {
                member(out, "decision", "error");
                member(out, "error", why);
            }
        }
        member(out, "revision", &self.revision);
        if let Some(r) = &self.refused {
            member(out, "refused", r);
        }
        if let Some(s) = &self.insufficient_scope {
            member(out, "insufficientScope", s);
        }
        if let Some(o) = &self.outcome {
            member(out, "outcome", o);
        }
        if let Some(d) = self.duration {
            member(out, "durationMs", &millis(d));
        }
        // OPA's decision-log event.
        member(out, "decision_id", id);
        member(out, "timestamp", &timestamp);
        let mut path = String::with_capacity(6 + self.tool.len());
        path.push_str("tools/");
        path.push_str(&self.tool);
        member(out, "path", &path);
        member(out, "input", &self.input(arguments, masked));
        if !masked.erased.is_empty() {
            member(out, "erased", &masked.erased);
        }
        if !truncated.is_empty() {
            member(out, "truncated", truncated);
        }
        let result = self.result();
        out.extend_from_slice(br#","result":"#);
        result.write(annotations_at, out);
        out.extend_from_slice(br#","labels":"#);
        out.extend_from_slice(&format.labels);
        out.extend_from_slice(br#","bundles":"#);
        format.write_bundles(&self.revision, out);
        if let Some(d) = self.eval {
            let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
            // `{"timer_regent_eval_ns": ns}`, without a map to write it.
            out.extend_from_slice(br#","metrics":{"timer_regent_eval_ns":"#);
            let _ = serde_json::to_writer(&mut *out, &ns);
            out.push(b'}');
        }
        if let Some(s) = &self.shadow {
            let shadow = s.result();
            let mut obj = json!({
                "policy": s.policy,
                "result": shadow,
                "agrees": shadow == result,
            });
            if let Some(d) = s.eval {
                let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
                obj["metrics"] = json!({"timer_regent_eval_ns": ns});
            }
            member(out, "shadow", &obj);
        }
        out.push(b'}');
    }

    /// The input this line may show, once `mask` is applied.
    fn masked<'a>(&'a self, mask: &'a [Mask]) -> Masked<'a> {
        let mut m = Masked {
            arguments: Cow::Borrowed(&self.arguments),
            subject: true,
            issuer: true,
            erased: Vec::new(),
        };
        for p in mask {
            let hit = match p.root {
                MaskRoot::Arguments => {
                    holds(&m.arguments, &p.keys) && erase(m.arguments.to_mut(), &p.keys)
                }
                MaskRoot::Caller => {
                    let (subject, issuer) = match p.keys.as_slice() {
                        [] => (true, true),
                        [k] if k == "subject" => (true, false),
                        [k] if k == "issuer" => (false, true),
                        _ => (false, false),
                    };
                    let hit =
                        self.caller.is_some() && ((subject && m.subject) || (issuer && m.issuer));
                    m.subject &= !subject;
                    m.issuer &= !issuer;
                    hit
                }
            };
            if hit {
                m.erased.push(&p.text);
            }
        }
        m
    }

    /// OPA's `input`: what the policy was asked about. The caller is its
    /// subject and issuer only, as in regent's own `caller` field.
    ///
    /// Masking (erasing caller claims or argument paths before they leave
    /// the process, OPA's `erased`/`masked`) belongs here: it is the one
    /// place the policy input is put into a line.
    fn input<'a>(&'a self, arguments: Option<Shown<'a>>, masked: &Masked<'_>) -> OpaInput<'a> {
        OpaInput {
            tool: &self.tool,
            arguments,
            caller: self.caller.as_deref().and_then(|c| masked.caller(c)),
        }
    }

    /// OPA's `result`: the decision.
    fn result(&self) -> OpaResult<'_> {
        opa_result(
            &self.verdict,
            self.annotations.as_ref(),
            self.confirm.as_deref(),
        )
    }

    /// The line, as JSON.
    pub fn to_json(&self, time: SystemTime, log_arguments: bool) -> Value {
        let mut line = Vec::new();
        self.line(time, &Format::new(log_arguments, &[]), &mut line);
        serde_json::from_slice(&line).expect("a decision line is JSON")
    }
}

#[derive(serde::Serialize)]
struct OpaInput<'a> {
    tool: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<Shown<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    caller: Option<CallerRef<'a>>,
}

/// The arguments a line shows: a value (the arguments, or the marker that
/// stands for them), or their text as sent (`sent`).
#[derive(Clone, Copy)]
enum Shown<'a> {
    Value(&'a Value),
    Sent(&'a RawValue),
}

impl serde::Serialize for Shown<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Shown::Value(v) => v.serialize(s),
            Shown::Sent(raw) => raw.serialize(s),
        }
    }
}

fn opa_result<'a>(
    verdict: &'a Verdict,
    annotations: Option<&'a Map<String, Value>>,
    confirm: Option<&'a str>,
) -> OpaResult<'a> {
    let (allowed, deny, error) = match verdict {
        Verdict::Allowed => (true, Some(&[] as &[String]), None),
        Verdict::Denied(reasons) => (false, Some(reasons.as_slice()), None),
        Verdict::Error(why) => (false, None, Some(why.as_str())),
    };
    OpaResult {
        allowed,
        deny,
        error,
        annotations,
        confirm,
    }
}

impl OpaResult<'_> {
    /// Written as serde would write it, with its annotations copied from
    /// `annotations_at` in `out` when they were written there already (the
    /// line's `annotations` member, the same map): this runs for every line.
    fn write(&self, annotations_at: Option<std::ops::Range<usize>>, out: &mut Vec<u8>) {
        // Writing into a Vec cannot fail.
        out.extend_from_slice(if self.allowed {
            br#"{"allowed":true"#
        } else {
            br#"{"allowed":false"#
        });
        if let Some(deny) = self.deny {
            out.extend_from_slice(br#","deny":"#);
            let _ = serde_json::to_writer(&mut *out, deny);
        }
        if let Some(error) = self.error {
            out.extend_from_slice(br#","error":"#);
            let _ = serde_json::to_writer(&mut *out, error);
        }
        if let Some(a) = self.annotations {
            out.extend_from_slice(br#","annotations":"#);
            match annotations_at {
                Some(at) => out.extend_from_within(at),
                None => {
                    let _ = serde_json::to_writer(&mut *out, a);
                }
            }
        }
        if let Some(confirm) = self.confirm {
            out.extend_from_slice(br#","confirm":"#);
            let _ = serde_json::to_writer(&mut *out, confirm);
        }
        out.push(b'}');
    }
}

#[derive(serde::Serialize, PartialEq)]
struct OpaResult<'a> {
    allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    deny: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    confirm: Option<&'a str>,
}
