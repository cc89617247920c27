//! Catalogs as OPA bundles: bytes in, verified files out.
//!
//! A bundle is a gzip tarball in OPA's layout (`.manifest`, `data.json`
//! files at the data path of their directory, `*.rego`, an optional
//! `.signatures.json`), here also carrying regent's own files (tool YAML,
//! test cases, pinned upstream snapshots), which OPA's loader ignores.
//! [`open`] reads one safely (`archive`), reads its manifest, verifies its
//! signature when a key is given (`sign`, over OPA's file digests, `hash`)
//! and returns its files; `layout` turns them into the files regent's
//! catalog reader reads and writes them under a directory. `archive::write`
//! and `sign::sign` make one (`regent bundle build`).
//!
//! This module knows OPA's bundle format and regent's file names. It does
//! not know Rego, YAML tool declarations, MCP, or where the bytes came from
//! (a file for `check`/`test`, later a download for `serve`).

pub mod archive;
pub mod hash;
pub mod layout;
pub mod sign;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use archive::{Files, Limits};
pub use sign::{PublicKeys, SigningKey};

/// The manifest's path in a bundle.
pub const MANIFEST: &str = ".manifest";
/// The signatures' path in a bundle.
pub const SIGNATURES: &str = ".signatures.json";

/// Why a bundle was refused: the file inside it, when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleError {
    pub file: Option<String>,
    pub message: String,
    pub help: Option<String>,
}

impl BundleError {
    pub fn at(file: &str, message: String) -> BundleError {
        BundleError {
            file: Some(file.to_string()),
            message,
            help: None,
        }
    }

    pub fn whole(message: String) -> BundleError {
        BundleError {
            file: None,
            message,
            help: None,
        }
    }

    pub fn with_help(mut self, help: &str) -> BundleError {
        self.help = Some(help.to_string());
        self
    }

    /// `bundle.tar.gz:policies/x.rego: message`, with `label` naming the bundle.
    pub fn render(&self, label: &str) -> String {
        let mut s = match &self.file {
            Some(f) => format!("{label}:{f}: {}", self.message),
            None => format!("{label}: {}", self.message),
        };
        if let Some(h) = &self.help {
            s.push_str(&format!("\n  help: {h}"));
        }
        s
    }
}

/// A bundle's `.manifest` (the fields regent reads; OPA's others are kept
/// in `rest`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    #[serde(default)]
    pub revision: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rego_version: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(flatten)]
    pub rest: BTreeMap<String, serde_json::Value>,
}

/// What is known of who signed a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signature {
    /// No `.signatures.json`.
    Unsigned,
    /// Signed, but no key was given to verify it with; the key id it claims.
    NotVerified { key_id: Option<String> },
    /// Signed and verified; the key id it names.
    Verified { key_id: Option<String> },
}

/// An opened bundle.
#[derive(Debug, Clone)]
pub struct Bundle {
    pub manifest: Manifest,
    /// Every file but `.signatures.json`, by path from the bundle's root.
    pub files: Files,
    pub signature: Signature,
}

impl Bundle {
    /// One line saying what was verified, for people.
    pub fn describe_signature(&self) -> String {
        match &self.signature {
            Signature::Unsigned => "not signed".to_string(),
            Signature::NotVerified { key_id } => format!(
                "signed{}, signature not verified (no --bundle-public-key)",
                key_part(key_id)
            ),
            Signature::Verified { key_id } => format!("signature verified{}", key_part(key_id)),
        }
    }
}

fn key_part(key_id: &Option<String>) -> String {
    key_id
        .as_deref()
        .map(|k| format!(" (key id `{k}`)"))
        .unwrap_or_default()
}

/// Reads the bundle `bytes`. With `keys`, a signature is required and must
/// verify; without, a signature is read for its key id only
/// ([`Signature::NotVerified`]).
pub fn open(
    bytes: &[u8],
    keys: Option<&PublicKeys>,
    limits: Limits,
) -> Result<Bundle, BundleError> {
    let mut files = archive::read(bytes, limits)?;
    for name in files.keys() {
        refuse_unsupported(name)?;
    }
    let signatures = files.remove(SIGNATURES);
    let signature = match (signatures, keys) {
        (None, None) => Signature::Unsigned,
        (None, Some(_)) => {
            return Err(BundleError::whole(
                "the bundle is not signed (no .signatures.json) and --bundle-public-key requires a signature".to_string(),
            )
            .with_help("sign it with `regent bundle build --signing-key KEY` or `opa build --signing-key KEY`"));
        }
        (Some(s), None) => Signature::NotVerified {
            key_id: sign::claimed_key_id(&s)?,
        },
        (Some(s), Some(keys)) => Signature::Verified {
            key_id: sign::verify(&s, &files, keys)?,
        },
    };
    let manifest = match files.get(MANIFEST) {
        None => Manifest::default(),
        Some(bytes) => read_manifest(bytes)?,
    };
    Ok(Bundle {
        manifest,
        files,
        signature,
    })
}

/// Files OPA reads that regent cannot honour: refused rather than ignored,
/// since OPA serving the same bundle would act on them.
fn refuse_unsupported(name: &str) -> Result<(), BundleError> {
    let base = name.rsplit('/').next().unwrap_or(name);
    let why = if base == "policy.wasm" || name.ends_with(".wasm") {
        "a Wasm module; regent evaluates Rego source only"
    } else if base == "plan.json" {
        "an execution plan; regent evaluates Rego source only"
    } else if base == "patch.json" {
        "a delta bundle's patch; regent reads snapshot bundles only"
    } else if name != SIGNATURES && name.ends_with("signatures.json") {
        "named like OPA's signatures file outside the root; OPA would read it as the bundle's signatures"
    } else if name != MANIFEST && name.ends_with(".manifest") {
        "named like OPA's manifest outside the root; OPA would read it as the bundle's manifest"
    } else {
        return Ok(());
    };
    Err(BundleError::at(name, format!("the file is {why}")))
}

fn read_manifest(bytes: &[u8]) -> Result<Manifest, BundleError> {
    let m: Manifest = serde_json::from_slice(bytes)
        .map_err(|e| BundleError::at(MANIFEST, format!("the manifest is not valid: {e}")))?;
    if let Some(v) = m.rego_version
        && v != 1
    {
        return Err(BundleError::at(
            MANIFEST,
            format!("the manifest's rego_version is {v}; regent reads Rego v1 only"),
        ));
    }
    if let Some(versions) = m.rest.get("file_rego_versions")
        && versions
            .as_object()
            .is_some_and(|o| o.values().any(|v| v.as_i64() != Some(1)))
    {
        return Err(BundleError::at(
            MANIFEST,
            "the manifest's file_rego_versions names a Rego version other than 1; regent reads Rego v1 only".to_string(),
        ));
    }
    if m.rest
        .get("wasm")
        .is_some_and(|w| w.as_array().is_some_and(|a| !a.is_empty()))
    {
        return Err(BundleError::at(
            MANIFEST,
            "the manifest names Wasm modules; regent evaluates Rego source only".to_string(),
        ));
    }
    let roots: Vec<String> = m
        .roots
        .clone()
        .unwrap_or_else(|| vec![String::new()])
        .iter()
        .map(|r| r.trim_matches('/').to_string())
        .collect();
    for (i, a) in roots.iter().enumerate() {
        for b in &roots[i + 1..] {
            if roots_overlap(a, b) {
                return Err(BundleError::at(
                    MANIFEST,
                    format!("the manifest's roots `{a}` and `{b}` overlap"),
                ));
            }
        }
    }
    Ok(m)
}

/// OPA's `RootPathsOverlap`: one root's segments are a prefix of the other's
/// (the empty root holds everything).
fn roots_overlap(a: &str, b: &str) -> bool {
    fn contains(root: &[&str], other: &[&str]) -> bool {
        root == [""] || (root.len() <= other.len() && root == &other[..root.len()])
    }
    let a: Vec<&str> = a.split('/').collect();
    let b: Vec<&str> = b.split('/').collect();
    contains(&a, &b) || contains(&b, &a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_overlap_as_opa_reads_them() {
        assert!(roots_overlap("a", "a/b"));
        assert!(roots_overlap("", "x"));
        assert!(roots_overlap("a/b", "a/b"));
        assert!(!roots_overlap("a", "ab"));
        assert!(!roots_overlap("a/b", "a/c"));
    }

    #[test]
    fn manifests_regent_cannot_honour_are_refused() {
        for (text, why) in [
            (r#"{"rego_version": 0}"#, "rego_version is 0"),
            (r#"{"roots": ["a", "a/b"]}"#, "overlap"),
            (
                r#"{"wasm": [{"entrypoint": "a", "module": "/policy.wasm"}]}"#,
                "Wasm",
            ),
            (
                r#"{"file_rego_versions": {"/x.rego": 0}}"#,
                "file_rego_versions",
            ),
            (r#"{"revision": 5}"#, "not valid"),
        ] {
            let e = read_manifest(text.as_bytes()).unwrap_err();
            assert!(e.message.contains(why), "{text}: {}", e.message);
        }
        let m = read_manifest(br#"{"revision": "r1", "roots": ["tools", "limits"], "metadata": {"a": 1}, "extra": true}"#).unwrap();
        assert_eq!(m.revision, "r1");
        assert!(m.rest.contains_key("extra"));
    }
}
