//! Strings a regular expression matches (a JSON Schema `pattern`, a
//! constant of a policy's `regex.match`), for the analyses that need
//! example values: `catalog::schema`'s samples, the proof's partitions,
//! `rego::reads`' hints. Deterministic (a fixed seed), so `check` says the
//! same thing on every run. It knows regular expressions only; what the
//! strings are for, and whether they pass a schema, is the caller's.

/// Up to `n` distinct strings matching `pattern` (as `catalog::schema::from_pattern`);
/// `max_len` bounds unbounded repetitions (at 16), not the result.
pub fn pattern_strings(pattern: &str, max_len: usize, n: usize) -> Vec<String> {
    use rand::SeedableRng;
    use rand::distr::Distribution;
    let repeat = u32::try_from(max_len.min(16)).unwrap_or(16);
    // ASCII first, for readable samples; Unicode when the pattern needs it.
    let ascii = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .build()
        .parse(pattern)
        .ok();
    let Some(hir) = ascii.or_else(|| regex_syntax::Parser::new().parse(pattern).ok()) else {
        return Vec::new();
    };
    let hir = without_looks(hir);
    let Ok(generator) = rand_regex::Regex::with_hir(hir, repeat.max(1)) else {
        return Vec::new();
    };
    // A fixed seed: `check` must say the same thing on every run.
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x7265_6765_6e74);
    let mut out: Vec<String> = Vec::new();
    for _ in 0..n * 8 {
        let s: Result<String, _> = generator.sample(&mut rng);
        if let Ok(s) = s
            && !out.contains(&s)
        {
            out.push(s);
            if out.len() == n {
                break;
            }
        }
    }
    out
}

/// `hir` with its assertions (`^`, `$`, `\b`) taken as empty: rand_regex
/// refuses them, and a pattern's anchors hold for what its body generates
/// (the sample is validated afterwards all the same).
fn without_looks(hir: regex_syntax::hir::Hir) -> regex_syntax::hir::Hir {
    use regex_syntax::hir::{Capture, Hir, HirKind, Repetition};
    match hir.into_kind() {
        HirKind::Look(_) => Hir::empty(),
        HirKind::Concat(hs) => Hir::concat(hs.into_iter().map(without_looks).collect()),
        HirKind::Alternation(hs) => Hir::alternation(hs.into_iter().map(without_looks).collect()),
        HirKind::Repetition(r) => Hir::repetition(Repetition {
            sub: Box::new(without_looks(*r.sub)),
            ..r
        }),
        HirKind::Capture(c) => Hir::capture(Capture {
            sub: Box::new(without_looks(*c.sub)),
            ..c
        }),
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(l) => Hir::literal(l.0),
        HirKind::Class(c) => Hir::class(c),
    }
}
