//! The numbers of a case file as the file spells them.
//!
//! A case's `arguments` (and its caller's `claims`) stand for the JSON a
//! client would send: `n: 1.50` means what `{"n": 1.50}` means. OPA keeps
//! a request number's text (`1.50`, `2E0`), and `serve` refuses an
//! evaluation that would answer otherwise than OPA because of it
//! (`policy::spelled`); `yaml_serde` keeps only the value, so without this
//! module `regent test` would answer where `serve` refuses.
//!
//! [`Scalars`] reads the file a second time with the event parser, in
//! the same walk that finds where each node is (`source::locate`'s
//! `LocationIndex::build_seeing`), and keeps every scalar's text, style
//! and position by its node. [`respell`] walks a parsed
//! value: each number is found at its path and read again from its text,
//! as `serde_json` reads a request (`-0` is `-0.0` there, `0` here), and
//! its text is collected for `policy::spelled::Spelled::from_texts`.
//!
//! A number YAML spells and JSON cannot (`0x10`, `0o7`, `0b11`, `+1`,
//! `.5`, `1.`, a tag such as `!!float 1`, `.inf` read as null, `1e400`
//! read as a string) is no number a client sends: refused where it is
//! written, with the JSON spelling to use, rather than guessed. So is a
//! number the walk cannot find written out (under a YAML alias or merge
//! key): its spelling is not known, so neither is `serve`'s answer.
//! Whether a spelling matters, and what regent writes, is
//! `policy::spelled`'s; this module knows YAML text and paths only.

use std::collections::HashMap;

use saphyr_parser::{Event, ScalarStyle};
use serde_json::Value;

use crate::source::{LocationIndex, YamlPath};

/// One scalar as the file writes it.
#[derive(Debug, Clone)]
struct Scalar {
    text: String,
    /// Plain and untagged: the only way JSON's numbers are written in YAML.
    plain: bool,
    /// Whether it has a tag (`!!float 1`).
    tagged: bool,
    line: usize,
    column: usize,
}

/// Every scalar of a file, by its node's id in the file's
/// [`LocationIndex`] (the same reading: one walk of the file gives both).
#[derive(Debug, Default)]
pub struct Scalars {
    index: LocationIndex,
    at: HashMap<u32, Scalar>,
}

impl Scalars {
    /// Reads `text`; what does not parse ends the reading (the serde pass
    /// reports it).
    pub fn build(text: &str) -> Scalars {
        let mut at = HashMap::new();
        let mut anchored: HashMap<usize, Scalar> = HashMap::new();
        let index = LocationIndex::build_seeing(text, |id, event, (line, column)| match event {
            Event::Scalar(value, style, anchor, tag) => {
                let scalar = Scalar {
                    plain: *style == ScalarStyle::Plain && tag.is_none(),
                    tagged: tag.is_some(),
                    text: value.to_string(),
                    line,
                    column,
                };
                if *anchor > 0 {
                    anchored.insert(*anchor, scalar.clone());
                }
                // A key (no id) is a string whatever its spelling. A key
                // given twice shares its id: the later value is kept, as
                // the parsed arguments keep it.
                if let Some(id) = id {
                    at.insert(id, scalar);
                }
            }
            Event::Alias(anchor) => {
                if let Some(id) = id
                    && let Some(s) = anchored.get(anchor)
                {
                    at.insert(id, s.clone());
                }
            }
            _ => {}
        });
        Scalars { index, at }
    }

    /// Where each node of the file is (the reading [`Scalars::build`] made).
    pub fn index(&self) -> &LocationIndex {
        &self.index
    }

    /// The scalar written at exactly `path`.
    fn get(&self, path: &YamlPath) -> Option<&Scalar> {
        self.at.get(&self.index.id_of(path)?)
    }
}

/// A number a case spells that no client could send so: where, why, the fix.
#[derive(Debug)]
pub struct Unspellable {
    /// The value's path.
    pub path: YamlPath,
    /// Where its text is written (`None`: nowhere under its path, the
    /// reader locates the path itself).
    pub at: Option<(usize, usize)>,
    pub message: String,
    pub help: String,
}

/// `value`, written at `at` in the file `scalars` indexes, as JSON text
/// with each number as the file spells it (`{"n":1.50}`): what a failing
/// case's report shows, which regent's own text (`1.5`) would misstate.
/// Run after [`respell`], which refused any number not spelled so.
pub fn written(value: &Value, at: &YamlPath, scalars: &Scalars) -> String {
    match value {
        Value::Array(items) => {
            let items: Vec<String> = items
                .iter()
                .enumerate()
                .map(|(i, v)| written(v, &at.index(i), scalars))
                .collect();
            format!("[{}]", items.join(","))
        }
        Value::Object(members) => {
            let members: Vec<String> = members
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}:{}",
                        Value::from(k.as_str()),
                        written(v, &at.key(k), scalars)
                    )
                })
                .collect();
            format!("{{{}}}", members.join(","))
        }
        Value::Number(n) => scalars
            .get(at)
            .map_or_else(|| n.to_string(), |s| s.text.clone()),
        other => other.to_string(),
    }
}

/// Reads each number of `value`, written at `at` in the file `scalars`
/// indexes, again from its text as `serde_json` reads a request's, and
/// adds that text to `texts`. Refuses a number JSON cannot spell.
pub fn respell(
    value: &mut Value,
    at: &YamlPath,
    scalars: &Scalars,
    texts: &mut Vec<String>,
) -> Result<(), Unspellable> {
    match value {
        Value::Array(items) => {
            for (i, v) in items.iter_mut().enumerate() {
                respell(v, &at.index(i), scalars, texts)?;
            }
            Ok(())
        }
        Value::Object(members) => {
            for (k, v) in members.iter_mut() {
                respell(v, &at.key(k), scalars, texts)?;
            }
            Ok(())
        }
        Value::Number(n) => {
            let Some(s) = scalars.get(at) else {
                return Err(Unspellable {
                    path: at.clone(),
                    at: None,
                    message: format!(
                        "{at}: the number {n} is not written out here (it comes through a YAML \
                         alias or merge key), so how a client would spell it is unknown"
                    ),
                    help: format!("write the number out at {at}, as JSON spells it"),
                });
            };
            if !s.plain || !crate::policy::spelled::is_json_number(&s.text) {
                let what = if s.tagged {
                    format!("`{}` is a number here only by its YAML tag", s.text)
                } else {
                    format!("`{}` is a number in YAML but not as JSON spells it", s.text)
                };
                return Err(Unspellable {
                    path: at.clone(),
                    at: Some((s.line, s.column)),
                    message: format!(
                        "{at}: {what}, and a case's arguments stand for the JSON a client sends"
                    ),
                    help: format!("spell it as JSON would: {n}"),
                });
            }
            match serde_json::from_str::<Value>(&s.text) {
                Ok(read @ Value::Number(_)) => {
                    *value = read;
                    texts.push(s.text.clone());
                    Ok(())
                }
                _ => Err(out_of_range(at, s)),
            }
        }
        Value::String(_) => match scalars.get(at) {
            // `yaml_serde` reads `1e400` as a string; a client sending it
            // is refused by the JSON parser.
            Some(s) if s.plain && crate::policy::spelled::is_json_number(&s.text) => {
                Err(out_of_range(at, s))
            }
            _ => Ok(()),
        },
        Value::Null => match scalars.get(at) {
            // `.inf` and `.nan` are YAML numbers `yaml_serde` reads as null.
            Some(s) if s.plain && !matches!(&*s.text, "" | "~" | "null" | "Null" | "NULL") => {
                Err(Unspellable {
                    path: at.clone(),
                    at: Some((s.line, s.column)),
                    message: format!(
                        "{at}: `{}` is a number in YAML that JSON cannot spell (it would be read \
                         as null)",
                        s.text
                    ),
                    help: "write a JSON number, or `null`".into(),
                })
            }
            _ => Ok(()),
        },
        Value::Bool(_) => Ok(()),
    }
}

fn out_of_range(at: &YamlPath, s: &Scalar) -> Unspellable {
    Unspellable {
        path: at.clone(),
        at: Some((s.line, s.column)),
        message: format!(
            "{at}: the number `{}` is out of the range JSON readers hold (a client sending it \
             is refused as unparsable)",
            s.text
        ),
        help: "write a number between -1.7976931348623157e308 and 1.7976931348623157e308, or \
               quote it for the string"
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spell(yaml: &str) -> Result<(Value, Vec<String>), String> {
        let scalars = Scalars::build(yaml);
        let mut v: Value = yaml_serde::from_str(yaml).unwrap();
        let mut texts = Vec::new();
        respell(&mut v, &YamlPath::root(), &scalars, &mut texts).map_err(|u| {
            let (line, column) = u.at.unwrap_or_default();
            format!("{line}:{column}: {} ({})", u.message, u.help)
        })?;
        Ok((v, texts))
    }

    #[test]
    fn json_spellings_keep_their_text_block_and_flow() {
        let (v, texts) = spell("a: 1.50\nb: {n: 1E2, m: [2E0, '1.50', 3]}\nc: -0\n").unwrap();
        assert_eq!(texts, ["1.50", "1E2", "2E0", "3", "-0"]);
        // As serde_json reads a request: `-0` is negative zero there.
        assert_eq!(v["c"], serde_json::from_str::<Value>("-0").unwrap());
        assert_eq!(v["b"]["m"][1], json!("1.50"));
    }

    #[test]
    fn yaml_only_numbers_are_refused_where_written() {
        for (text, fix) in [
            ("0x10", "16"),
            ("0o7", "7"),
            ("0b11", "3"),
            ("+1", "1"),
            (".5", "0.5"),
            ("1.", "1.0"),
            ("!!float 1", "1.0"),
        ] {
            let err = spell(&format!("x: 1\nn: {text}\n")).unwrap_err();
            assert!(
                err.starts_with("2:4: n: ")
                    && err.ends_with(&format!("(spell it as JSON would: {fix})")),
                "{text}: {err}"
            );
        }
        let err = spell("n: .inf\n").unwrap_err();
        assert!(
            err.contains("`.inf` is a number in YAML that JSON cannot spell"),
            "{err}"
        );
        let err = spell("n: 1e400\n").unwrap_err();
        assert!(err.contains("`1e400` is out of the range"), "{err}");
        // Quoted, it is a string, as a client would send it.
        assert!(spell("n: '0x10'\nm: \"1e400\"\n").is_ok());
    }

    #[test]
    fn aliases_of_scalars_are_followed_of_containers_refused() {
        let (_, texts) = spell("a: &x 1.50\nb: *x\n").unwrap();
        assert_eq!(texts, ["1.50", "1.50"]);
        let err = spell("a: &x {n: 1.50}\nb: *x\n").unwrap_err();
        assert!(
            err.contains("b.n: the number 1.5 is not written out here"),
            "{err}"
        );
    }
}
