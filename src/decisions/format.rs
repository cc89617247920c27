//! What every line of one log shares ([`Format`]): whether arguments are
//! logged, the OPA `labels` object (`--decision-log-label`), the masks, the
//! largest line (`--decision-log-line-bytes`) and the bundles catalogs came
//! from. It makes no line: `line` reads these when it writes one.

use std::sync::Arc;

use serde_json::{Map, json};

use super::instance_id;
use super::mask::Mask;

/// What every line of one log shares: whether arguments are logged, and the
/// OPA `labels` object, serialized once.
#[derive(Debug, Clone)]
pub struct Format {
    pub log_arguments: bool,
    pub(super) labels: Vec<u8>,
    /// Paths erased from the input of every line, in the order given.
    pub(super) mask: Vec<Mask>,
    /// `--decision-log-line-bytes`: the largest line; a larger one is cut
    /// where it is made, and says what it lost (see [`Entry::line`](super::Entry::line)).
    pub(super) line_limit: usize,
    /// Which bundle each catalog revision came from (`serve --bundle-url`).
    bundles: Option<Arc<crate::state::Bundles>>,
}

/// The default `--decision-log-line-bytes`: 1 MiB.
pub const DEFAULT_LINE_BYTES: usize = 1 << 20;
/// The smallest `--decision-log-line-bytes`: room for a line whose every
/// client- or policy-sized field was cut.
pub const MIN_LINE_BYTES: usize = 16 << 10;

/// `--decision-log-line-bytes`, checked: a size such as `1MiB` or `65536`,
/// at least [`MIN_LINE_BYTES`].
pub fn parse_line_bytes(text: &str) -> Result<usize, String> {
    match crate::source::run::parse_size(text) {
        Some(n) if n >= MIN_LINE_BYTES => Ok(n),
        _ => Err(format!(
            "invalid --decision-log-line-bytes {text:?}: give a size of at least 16KiB, for example 1MiB or 262144 (default 1MiB)"
        )),
    }
}

impl Format {
    /// `labels` is `{"id": the instance id, "version": regent's version}`
    /// followed by `extra` (checked by [`parse_label`]: never `id` or
    /// `version`).
    pub fn new(log_arguments: bool, extra: &[(String, String)]) -> Format {
        let mut labels = Map::new();
        labels.insert("id".into(), json!(instance_id()));
        labels.insert("version".into(), json!(env!("CARGO_PKG_VERSION")));
        for (k, v) in extra {
            labels.insert(k.clone(), json!(v));
        }
        Format {
            log_arguments,
            labels: serde_json::to_vec(&labels).expect("labels serialize"),
            mask: Vec::new(),
            line_limit: DEFAULT_LINE_BYTES,
            bundles: None,
        }
    }

    /// The same format, naming in `bundles` the bundle a catalog came from.
    pub fn naming_bundles(mut self, bundles: Option<Arc<crate::state::Bundles>>) -> Format {
        self.bundles = bundles;
        self
    }

    /// The line's `bundles`: OPA's `{name: {revision}}`, the bundle the
    /// deciding catalog came from; `regent` and the catalog's digest when
    /// it came from files.
    /// Written straight to `out` as JSON text: this runs for every line.
    pub(super) fn write_bundles(&self, revision: &str, out: &mut Vec<u8>) {
        // Writing strings into a Vec cannot fail.
        let bundle = self.bundles.as_ref().and_then(|b| b.of(revision));
        let (name, revision) = match &bundle {
            Some(b) => (b.name.as_str(), b.revision.as_str()),
            None => ("regent", revision),
        };
        out.push(b'{');
        let _ = serde_json::to_writer(&mut *out, name);
        out.extend_from_slice(br#":{"revision":"#);
        let _ = serde_json::to_writer(&mut *out, revision);
        out.extend_from_slice(b"}}");
    }

    /// The same format, cutting lines over `bytes` (at least
    /// [`MIN_LINE_BYTES`]).
    pub fn limiting(mut self, bytes: usize) -> Format {
        self.line_limit = bytes.max(MIN_LINE_BYTES);
        self
    }

    /// The same format, erasing `mask` from every line's input.
    pub fn masking(mut self, mask: Vec<Mask>) -> Format {
        self.mask = mask;
        self
    }
}

/// One `--decision-log-label` value, `KEY=VALUE`.
pub fn parse_label(text: &str) -> Result<(String, String), String> {
    let Some((k, v)) = text.split_once('=') else {
        return Err(format!(
            "decision-log label {text:?} has no '=': write it as KEY=VALUE, for example --decision-log-label env=prod"
        ));
    };
    let k = k.trim();
    if k.is_empty() {
        return Err(format!(
            "decision-log label {text:?} has an empty key: write it as KEY=VALUE"
        ));
    }
    if k == "id" || k == "version" {
        return Err(format!(
            "decision-log label {k} is set by regent (the instance id and regent's version): choose another key"
        ));
    }
    Ok((k.to_string(), v.to_string()))
}
