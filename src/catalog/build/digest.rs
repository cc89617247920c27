//! The digests a tool's fingerprint is made of: each library file and the
//! data once per build, and the fingerprint over a tool's declaration, its
//! own and shadow files, the libraries it reaches and the data.
//!
//! Which libraries a tool reaches is the parent's to say; what a
//! fingerprint is for is [`Tool::fingerprint`](crate::catalog::Tool::fingerprint)'s.

use super::PolicyFile;
use crate::source::{Source, ToolDecl, ToolSource};

/// One library file, digested once per build: the tools that reach it
/// take its digest into their fingerprints.
pub(super) fn library_digest(path: &str, text: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(format!("library {} {}\n", path.len(), text.len()));
    h.update(path);
    h.update(text);
    h.finalize().into()
}

/// The data documents every engine holds, digested once per build.
pub(super) fn data_digest(source: &Source) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for d in &source.data {
        let text = d.value.to_string();
        h.update(format!("data {} {}\n", d.path.display(), text.len()));
        h.update(text);
    }
    h.finalize().into()
}

/// A digest of everything a tool's answers are made from (see
/// [`Tool::fingerprint`](crate::catalog::Tool::fingerprint)): its declaration where it stands, its own and
/// shadow packages' files, the library files it reaches and the data. A
/// library file it does not reach can change nothing it answers (nor what
/// `check` finds about it), so changing one does not run it again.
pub(super) fn fingerprint(
    data: &[u8; 32],
    library: &[&[u8; 32]],
    file: &ToolSource,
    decl: &ToolDecl,
    own: &[&PolicyFile],
    shadow: &[&PolicyFile],
) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(data);
    for l in library {
        h.update(l);
    }
    // The declaration as parsed, and the file it is in (diagnostics name
    // its lines).
    h.update(format!("{}\n{decl:?}\n", file.path.display()));
    for (kind, files) in [("own", own), ("shadow", shadow)] {
        for p in files {
            h.update(format!("{kind} {} {}\n", p.path, p.text.len()));
            h.update(p.text);
        }
    }
    h.finalize().into()
}
