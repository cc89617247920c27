//! The classes of one string argument or claim and a representative of
//! each (`partition_in`, `representatives`): the canonical strings of the
//! parent's doc, and the first candidate the schema accepts whose truth
//! vector is the class's; the bounds on how many there may be.
//!
//! Which uses there are is `walk`'s; checking a value against inputSchema
//! (`validator`) and the entry points are the parent's.

use serde_json::Value;

use super::{Fold, Partition, Uses, add};

/// The most contains-literals one argument may have (2^n subsets).
const MAX_CONTAINS: usize = 6;
/// The most classes one argument may have.
const MAX_CLASSES: usize = 256;

pub(super) fn partition_in(
    name: &str,
    s: Option<&Value>,
    uses: Option<&Uses>,
    valid: impl FnMut(&str) -> Result<(), String>,
) -> Result<Partition, String> {
    if s.and_then(|s| s.get("type")) != Some(&Value::String("string".into())) {
        return Err("it is not declared `type: string`".to_string());
    }
    let empty = Uses::default();
    let u = uses.unwrap_or(&empty);
    if let Some((_, why)) = &u.blocked {
        return Err(why.clone());
    }
    let s = s.cloned().unwrap_or(Value::Null);
    let shape = Shape {
        min_len: s.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize,
        samples: s
            .get("pattern")
            .and_then(Value::as_str)
            .map(|p| {
                let max = s
                    .get("maxLength")
                    .and_then(Value::as_u64)
                    .map_or(usize::MAX, |m| m as usize);
                crate::regex_samples::pattern_strings(p, max, PATTERN_SAMPLES)
            })
            .unwrap_or_default(),
    };
    // A constant a folded string cannot hold makes its predicate false
    // for every value: it tells no values apart.
    let fold = u.fold.unwrap_or_default();
    let keep = |v: &Vec<String>| -> Vec<String> {
        v.iter().filter(|l| fold.can_hold(l)).cloned().collect()
    };
    let u = Uses {
        fold: u.fold,
        equals: keep(&u.equals),
        prefixes: keep(&u.prefixes),
        suffixes: keep(&u.suffixes),
        contains: keep(&u.contains),
        ..Uses::default()
    };
    let reps = representatives(&u, fold, &shape, valid)?;
    Ok(Partition {
        argument: name.to_string(),
        fold,
        equals: u.equals,
        prefixes: u.prefixes,
        suffixes: u.suffixes,
        contains: u.contains,
        representatives: reps,
    })
}

/// How many strings generated from a `pattern` are tried as
/// representatives of classes no constructed string fits.
const PATTERN_SAMPLES: usize = 64;

/// What the argument's schema asks of a string, to choose representatives
/// it accepts: its `minLength`, and strings generated from its `pattern`.
#[derive(Debug, Default)]
pub(super) struct Shape {
    pub(super) min_len: usize,
    pub(super) samples: Vec<String>,
}

/// The truth of every predicate of `u` on `w`.
pub(super) fn vector(u: &Uses, w: &str) -> Vec<bool> {
    let mut v: Vec<bool> = u.equals.iter().map(|l| w == l).collect();
    v.extend(u.prefixes.iter().map(|l| w.starts_with(l.as_str())));
    v.extend(u.suffixes.iter().map(|l| w.ends_with(l.as_str())));
    v.extend(u.contains.iter().map(|l| w.contains(l.as_str())));
    v
}

/// Characters tried as separators and fillers, most readable first.
fn filler_chars() -> Vec<char> {
    let mut out: Vec<char> = Vec::new();
    for c in "xyzq_0-XYZ~.ab"
        .chars()
        .chain('a'..='z')
        .chain('A'..='Z')
        .chain('0'..='9')
        .chain('!'..='~')
    {
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// `lead p F c1 F … F s trail`, where `F` is `f`, the first one repeated
/// to make the whole at least `min_len` characters long.
fn build(
    p: &str,
    cs: &[&String],
    s: &str,
    f: char,
    lead: &str,
    trail: &str,
    min_len: usize,
) -> String {
    let mut r = String::from(lead);
    r.push_str(p);
    let at = r.len();
    for c in cs {
        r.push(f);
        r.push_str(c);
    }
    r.push(f);
    r.push_str(s);
    r.push_str(trail);
    let n = r.chars().count();
    if n < min_len {
        r.insert_str(at, &f.to_string().repeat(min_len - n));
    }
    r
}

/// One string per class of the predicates in `u` (see the module's doc),
/// each accepted by `valid`.
///
/// The classes are those of the canonical representatives, built with a
/// separator in no constant. For each class, the first candidate `valid`
/// accepts whose predicates hold exactly as the canonical one's stands for
/// it: the canonical shape with each filler character in turn (padded to
/// `minLength`), then with one character before or after it, then strings
/// generated from the schema's pattern, then the pieces with no separator
/// (`/etc` under a `maxLength`). Whatever the candidate, its truth
/// vector is computed, not assumed, so the argument of completeness is the
/// canonical one's: every string has the vector of some canonical
/// representative, and every canonical vector has a representative. A
/// class no candidate fits fails the partition, naming its canonical
/// representative and why inputSchema refused it: the class may hold
/// values the schema accepts, so it is never dropped.
pub(super) fn representatives(
    u: &Uses,
    fold: Fold,
    shape: &Shape,
    mut valid: impl FnMut(&str) -> Result<(), String>,
) -> Result<Vec<String>, String> {
    if u.contains.len() > MAX_CONTAINS {
        return Err(format!(
            "it is tested with contains on {} constants (at most {MAX_CONTAINS})",
            u.contains.len()
        ));
    }
    let combos = (u.prefixes.len() + 1) * (1 << u.contains.len()) * (u.suffixes.len() + 1);
    if combos + u.equals.len() > MAX_CLASSES {
        return Err(format!("it would have more than {MAX_CLASSES} classes"));
    }
    let all: Vec<&String> = u
        .equals
        .iter()
        .chain(&u.prefixes)
        .chain(&u.suffixes)
        .chain(&u.contains)
        .collect();
    let free = |c: &char| all.iter().all(|l| !l.contains(*c));
    let fillers: Vec<char> = filler_chars().into_iter().filter(free).collect();
    // The canonical separator: any character in no constant will do.
    let sep = fillers
        .first()
        .copied()
        .or_else(|| ('\u{e000}'..='\u{f8ff}').find(free))
        .ok_or("its constants hold every character tried as a separator")?;
    let mut reps: Vec<String> = Vec::new();
    // Equality classes: the constant itself is the only member (folded,
    // the constant if it folds to itself).
    for e in &u.equals {
        if fold.apply(e) != *e {
            return Err(format!(
                "it is compared with {} by {}(), which that constant does not survive",
                Value::String(e.clone()),
                fold.name().unwrap_or_default(),
            ));
        }
        if let Err(why) = valid(e) {
            return Err(format!(
                "representative {} rejected by inputSchema: {why}",
                Value::String(e.clone())
            ));
        }
        add(&mut reps, e.clone());
    }
    let none = String::new();
    let edges: Vec<String> = ('!'..='~').map(String::from).collect();
    for p in std::iter::once(&none).chain(&u.prefixes) {
        for mask in 0..(1usize << u.contains.len()) {
            let cs: Vec<&String> = u
                .contains
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, c)| c)
                .collect();
            for s in std::iter::once(&none).chain(&u.suffixes) {
                let canonical = build(p, &cs, s, sep, "", "", 0);
                let want = vector(u, &canonical);
                let fits = |r: &str| vector(u, &fold.apply(r)) == want;
                let mut first_error: Option<(String, String)> = None;
                let mut chosen: Option<String> = None;
                let mut try_one = |r: String, valid: &mut dyn FnMut(&str) -> Result<(), String>| {
                    if !fits(&r) {
                        return false;
                    }
                    match valid(&r) {
                        Ok(()) => {
                            chosen = Some(r);
                            true
                        }
                        Err(why) => {
                            first_error.get_or_insert((r, why));
                            false
                        }
                    }
                };
                let min = shape.min_len;
                let found = fillers
                    .iter()
                    .any(|&f| try_one(build(p, &cs, s, f, "", "", min), &mut valid))
                    || fillers.iter().take(4).any(|&f| {
                        edges.iter().any(|e| {
                            (p.is_empty() && try_one(build(p, &cs, s, f, e, "", min), &mut valid))
                                || (s.is_empty()
                                    && try_one(build(p, &cs, s, f, "", e, min), &mut valid))
                                || (p.is_empty()
                                    && s.is_empty()
                                    && try_one(build(p, &cs, s, f, e, e, min), &mut valid))
                        })
                    })
                    || shape.samples.iter().any(|w| try_one(w.clone(), &mut valid))
                    || try_one(
                        format!(
                            "{p}{}{s}",
                            cs.iter().map(|c| c.as_str()).collect::<String>()
                        ),
                        &mut valid,
                    );
                if !found {
                    let (r, why) = first_error
                        .unwrap_or_else(|| (canonical.clone(), "no candidate fits".to_string()));
                    return Err(format!(
                        "representative {} rejected by inputSchema: {why}",
                        Value::String(r)
                    ));
                }
                if let Some(r) = chosen {
                    add(&mut reps, r);
                }
            }
        }
    }
    Ok(reps)
}
