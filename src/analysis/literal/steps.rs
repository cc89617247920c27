//! The steps of a derivation (`Step`: `lower`, `trim*`, `split(…)[i]`,
//! `substring`, `concat`, `sprintf`, …) and the tests a comparison makes
//! of the derived string (`Test`: equality, affixes, `contains`, `indexof`,
//! `regex.match`): each run forward as OPA computes it, and inverted into
//! the strings that reach a target.
//!
//! Which derivations the rules hold is `walk`'s; turning the inverted
//! strings into candidates and what they reach is the parent's.

/// How many strings a `regex.match` pattern generates as targets.
const REGEX_SAMPLES: usize = 8;

/// One step of a derivation, applied to the string it receives.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Lower,
    Upper,
    TrimSpace,
    Trim(String),
    TrimLeft(String),
    TrimRight(String),
    TrimPrefix(String),
    TrimSuffix(String),
    /// `split(x, sep)[i]`.
    Split(String, usize),
    /// `substring(x, start, len)`; a negative `len` reads to the end.
    Substring(usize, i64),
    /// `concat` or `sprintf` with constant text before and after.
    Wrap(String, String, &'static str),
}

impl Step {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Step::Lower => "lower",
            Step::Upper => "upper",
            Step::TrimSpace => "trim_space",
            Step::Trim(_) => "trim",
            Step::TrimLeft(_) => "trim_left",
            Step::TrimRight(_) => "trim_right",
            Step::TrimPrefix(_) => "trim_prefix",
            Step::TrimSuffix(_) => "trim_suffix",
            Step::Split(..) => "split",
            Step::Substring(..) => "substring",
            Step::Wrap(_, _, n) => n,
        }
    }

    /// The step as OPA computes it; `None` where OPA's is undefined.
    pub(super) fn apply(&self, x: &str) -> Option<String> {
        Some(match self {
            Step::Lower => x.to_lowercase(),
            Step::Upper => x.to_uppercase(),
            Step::TrimSpace => x.trim().to_string(),
            Step::Trim(c) => x.trim_matches(|ch| c.contains(ch)).to_string(),
            Step::TrimLeft(c) => x.trim_start_matches(|ch| c.contains(ch)).to_string(),
            Step::TrimRight(c) => x.trim_end_matches(|ch| c.contains(ch)).to_string(),
            Step::TrimPrefix(p) => x.strip_prefix(p.as_str()).unwrap_or(x).to_string(),
            Step::TrimSuffix(s) => x.strip_suffix(s.as_str()).unwrap_or(x).to_string(),
            Step::Split(sep, i) => x.split(sep.as_str()).nth(*i)?.to_string(),
            Step::Substring(start, len) => {
                let chars: Vec<char> = x.chars().collect();
                if *start >= chars.len() {
                    return Some(String::new());
                }
                let end = if *len < 0 {
                    chars.len()
                } else {
                    (start + *len as usize).min(chars.len())
                };
                chars[*start..end].iter().collect()
            }
            Step::Wrap(pre, post, _) => format!("{pre}{x}{post}"),
        })
    }

    /// Strings this step maps to `w`, most readable first (`f` is a filler
    /// character in no constant of the comparison).
    pub(super) fn preimages(&self, w: &str, f: char) -> Vec<String> {
        let fs = f.to_string();
        let mut out: Vec<String> = match self {
            Step::Lower => vec![w.to_string(), w.to_uppercase()],
            Step::Upper => vec![w.to_string(), w.to_lowercase()],
            Step::TrimSpace => vec![w.to_string(), format!(" {w} ")],
            Step::Trim(c) | Step::TrimLeft(c) | Step::TrimRight(c) => {
                let mut v = vec![w.to_string()];
                if let Some(ch) = c.chars().next() {
                    v.push(format!("{ch}{w}{ch}"));
                }
                v
            }
            Step::TrimPrefix(p) => vec![format!("{p}{w}"), w.to_string()],
            Step::TrimSuffix(s) => vec![format!("{w}{s}"), w.to_string()],
            Step::Split(sep, i) => {
                let lead = format!("{fs}{sep}").repeat(*i);
                vec![format!("{lead}{w}{sep}{fs}"), format!("{lead}{w}")]
            }
            Step::Substring(start, len) => {
                let lead = fs.repeat(*start);
                vec![format!("{lead}{w}{fs}"), format!("{lead}{w}")]
                    .into_iter()
                    .filter(|_| *len != 0 || w.is_empty())
                    .collect()
            }
            Step::Wrap(pre, post, _) => w
                .strip_prefix(pre.as_str())
                .and_then(|r| r.strip_suffix(post.as_str()))
                .map(|r| vec![r.to_string()])
                .unwrap_or_default(),
        };
        // Only those the step really maps to `w`.
        out.retain(|x| self.apply(x).as_deref() == Some(w));
        out.dedup();
        out
    }

    pub(super) fn constants(&self) -> Vec<&str> {
        match self {
            Step::Trim(c)
            | Step::TrimLeft(c)
            | Step::TrimRight(c)
            | Step::TrimPrefix(c)
            | Step::TrimSuffix(c)
            | Step::Split(c, _) => vec![c],
            Step::Wrap(a, b, _) => vec![a, b],
            _ => Vec::new(),
        }
    }
}

/// What a comparison tests on the derived string.
#[derive(Debug, Clone)]
pub enum Test {
    /// `==` one constant, or `in` a set of them.
    OneOf(Vec<String>),
    Prefix(String),
    Suffix(String),
    Contains(String),
    /// `indexof(d, lit) == n`.
    IndexOf(String, i64),
    /// `regex.match("pattern", d)`, the pattern compiled as OPA reads it
    /// (`opa_builtins::regex`).
    Regex(String, regex::Regex),
}

impl Test {
    pub(super) fn holds(&self, d: &str) -> bool {
        match self {
            Test::OneOf(ls) => ls.iter().any(|l| l == d),
            Test::Prefix(p) => d.starts_with(p.as_str()),
            Test::Suffix(s) => d.ends_with(s.as_str()),
            Test::Contains(c) => d.contains(c.as_str()),
            Test::IndexOf(l, n) => {
                let at = d
                    .find(l.as_str())
                    .map_or(-1, |b| d[..b].chars().count() as i64);
                at == *n
            }
            Test::Regex(_, re) => re.is_match(d),
        }
    }

    pub(super) fn constants(&self) -> Vec<&str> {
        match self {
            Test::OneOf(ls) => ls.iter().map(String::as_str).collect(),
            Test::Prefix(l) | Test::Suffix(l) | Test::Contains(l) | Test::IndexOf(l, _) => {
                vec![l]
            }
            Test::Regex(p, _) => vec![p],
        }
    }

    /// Derived strings that make the test true, then some that make it
    /// false (checked by the caller).
    pub(super) fn targets(&self, f: char) -> Vec<String> {
        let fs = f.to_string();
        let mut out = match self {
            Test::OneOf(ls) => ls.clone(),
            Test::Prefix(p) => vec![format!("{p}{fs}"), p.clone()],
            Test::Suffix(s) => vec![format!("{fs}{s}"), s.clone()],
            Test::Contains(c) => vec![format!("{fs}{c}{fs}"), c.clone()],
            Test::IndexOf(l, n) => {
                let mut v = Vec::new();
                if *n >= 0 {
                    v.push(format!("{}{l}", fs.repeat(*n as usize)));
                }
                v.extend([l.clone(), format!("{fs}{l}")]);
                v
            }
            // Strings generated from the pattern (JSON Schema's reading of
            // it; whether OPA's matches is checked forward).
            Test::Regex(p, _) => crate::regex_samples::pattern_strings(p, 16, REGEX_SAMPLES),
        };
        out.extend([fs.clone(), format!("{fs}{fs}"), String::new()]);
        out
    }
}
