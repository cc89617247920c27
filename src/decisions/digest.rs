//! A line's `argumentsDigest`: SHA-256 of the arguments' canonical JSON
//! (`crate::canonical`), in hex. Users compare it across versions, so its
//! bytes must not change.

use serde_json::Value;

/// `sha256:` and the hex digest of the arguments in canonical form (object
/// keys sorted at every level), so equal arguments give equal digests
/// whatever order a client sent the keys in.
pub fn arguments_digest(args: &Value) -> String {
    let digest = crate::canonical::sha256(args);
    // Hex by table: a `format!` per byte was 32 allocations, most of the cost
    // of a decision-log entry (BENCHMARKS.md).
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(7 + 2 * digest.len());
    out.push_str("sha256:");
    for b in digest.iter() {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    out
}
