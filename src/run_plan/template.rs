//! Placeholder templates: `--max-count={limit}`, `/repos/{owner}/{path*}`.
//!
//! A template is literal text with `{name}` placeholders naming top-level
//! arguments; `{{` and `}}` are literal braces. `{name*}` is only meaningful
//! in an HTTP path, where it stands for several segments. Parsing happens once
//! when the catalog loads; rendering turns one placeholder into text, never
//! splitting, globbing or quoting it: what the caller gets is what the
//! argument held. How rendered text is used (an argv element, a URL segment)
//! is for `exec::cli` and `exec::http` to decide.

use serde_json::Value;

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    Literal(String),
    /// `{name}`, or `{name*}` when `segments` is set.
    Arg {
        name: String,
        segments: bool,
    },
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub parts: Vec<Part>,
}

/// Why an argument could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenderError {
    /// The argument is absent or null.
    Absent(String),
    /// The argument is there but cannot be used here; the message says why.
    Refused(String),
}

impl Template {
    /// Parses `text`. Errors are lowercase sentences that say how to fix it.
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut chars = text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '{' if chars.peek().map(|&(_, c)| c) == Some('{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek().map(|&(_, c)| c) == Some('}') => {
                    chars.next();
                    literal.push('}');
                }
                '}' => {
                    return Err(format!(
                        "unmatched `}}` at character {} of {text:?}; write `}}}}` for a literal brace",
                        i + 1
                    ));
                }
                '{' => {
                    let mut name = String::new();
                    let mut closed = false;
                    for (_, c) in chars.by_ref() {
                        if c == '}' {
                            closed = true;
                            break;
                        }
                        name.push(c);
                    }
                    if !closed {
                        return Err(format!(
                            "unclosed `{{` at character {} of {text:?}; write `{{{{` for a literal brace",
                            i + 1
                        ));
                    }
                    let (name, segments) = match name.strip_suffix('*') {
                        Some(n) => (n.to_string(), true),
                        None => (name, false),
                    };
                    if !is_name(&name) {
                        return Err(format!(
                            "`{{{name}}}` in {text:?} is not a placeholder: names are letters, digits, `_`, `-` and `.`; write `{{{{` for a literal brace"
                        ));
                    }
                    if !literal.is_empty() {
                        parts.push(Part::Literal(std::mem::take(&mut literal)));
                    }
                    parts.push(Part::Arg { name, segments });
                }
                c => literal.push(c),
            }
        }
        if !literal.is_empty() || parts.is_empty() {
            parts.push(Part::Literal(literal));
        }
        Ok(Template { parts })
    }

    /// A template without placeholders.
    pub fn literal(text: &str) -> Template {
        Template {
            parts: vec![Part::Literal(text.to_string())],
        }
    }

    /// The argument names this template uses, in order.
    pub fn args(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Arg { name, .. } => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// The literal text, when there are no placeholders.
    pub fn as_literal(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [Part::Literal(s)] => Some(s),
            _ => None,
        }
    }

    /// The argument, when the whole template is one placeholder.
    pub fn as_single_arg(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [Part::Arg { name, .. }] => Some(name),
            _ => None,
        }
    }

    /// The argument whose value starts the rendered text, if a placeholder
    /// comes first (so the value decides whether the text looks like an option).
    pub fn leading_arg(&self) -> Option<&str> {
        match self.parts.first() {
            Some(Part::Arg { name, .. }) => Some(name),
            _ => None,
        }
    }

    /// Whether any placeholder is `{name*}`.
    pub fn has_segments(&self) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p, Part::Arg { segments: true, .. }))
    }

    /// Renders to one string. Every argument must be a scalar.
    pub fn render(&self, args: &Value) -> Result<String, RenderError> {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Literal(s) => out.push_str(s),
                Part::Arg { name, .. } => out.push_str(&scalar(name, lookup(args, name))?),
            }
        }
        Ok(out)
    }

    /// Renders to one string per item when one placeholder names an array
    /// (none for an empty array), or to exactly one string otherwise.
    pub fn render_each(&self, args: &Value) -> Result<Vec<String>, RenderError> {
        let array = self.parts.iter().find_map(|p| match p {
            Part::Arg { name, .. } => match lookup(args, name) {
                Some(Value::Array(items)) => Some((name.as_str(), items)),
                _ => None,
            },
            Part::Literal(_) => None,
        });
        let Some((array_arg, items)) = array else {
            return Ok(vec![self.render(args)?]);
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let mut s = String::new();
            for p in &self.parts {
                match p {
                    Part::Literal(l) => s.push_str(l),
                    Part::Arg { name, .. } if name == array_arg => {
                        s.push_str(&item_scalar(name, item)?);
                    }
                    Part::Arg { name, .. } => s.push_str(&scalar(name, lookup(args, name))?),
                }
            }
            out.push(s);
        }
        Ok(out)
    }
}

/// A top-level argument; `null` counts as absent.
pub fn lookup<'a>(args: &'a Value, name: &str) -> Option<&'a Value> {
    args.get(name).filter(|v| !v.is_null())
}

/// The text of a scalar argument.
pub fn scalar(name: &str, value: Option<&Value>) -> Result<String, RenderError> {
    match value {
        None => Err(RenderError::Absent(name.to_string())),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(Value::Bool(b)) => Ok(b.to_string()),
        Some(Value::Array(_)) => Err(RenderError::Refused(format!(
            "argument `{name}` is an array, which cannot be placed here; only one placeholder of a command-line element may name an array"
        ))),
        Some(Value::Object(_)) => Err(RenderError::Refused(format!(
            "argument `{name}` is an object, which cannot be placed in text; pass it in an http body"
        ))),
        Some(Value::Null) => Err(RenderError::Absent(name.to_string())),
    }
}

fn item_scalar(name: &str, item: &Value) -> Result<String, RenderError> {
    match item {
        Value::Array(_) | Value::Object(_) | Value::Null => Err(RenderError::Refused(format!(
            "argument `{name}` holds an item that is not a string, number or boolean"
        ))),
        other => scalar(name, Some(other)),
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '.')
}

/// A value shortened for messages, so that a megabyte of input does not
/// become a megabyte of error.
pub fn preview(s: &str) -> String {
    const MAX: usize = 60;
    let mut out: String = s.chars().take(MAX).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    format!("{out:?}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_placeholders_and_escapes() {
        let t = Template::parse("--max-count={limit}").unwrap();
        assert_eq!(
            t.parts,
            vec![
                Part::Literal("--max-count=".into()),
                Part::Arg {
                    name: "limit".into(),
                    segments: false
                }
            ]
        );
        assert_eq!(Template::parse("{{x}}").unwrap().as_literal(), Some("{x}"));
        assert_eq!(
            Template::parse("{path*}").unwrap().as_single_arg(),
            Some("path")
        );
        assert!(Template::parse("{oops").unwrap_err().contains("unclosed"));
        assert!(Template::parse("a}").unwrap_err().contains("unmatched"));
        assert!(
            Template::parse("{a b}")
                .unwrap_err()
                .contains("not a placeholder")
        );
        assert_eq!(Template::parse("").unwrap().as_literal(), Some(""));
    }

    #[test]
    fn renders_values_whole() {
        let t = Template::parse("{x}").unwrap();
        let hostile = "; rm -rf / $(id) `id`\n*";
        assert_eq!(t.render(&json!({"x": hostile})).unwrap(), hostile);
        assert_eq!(t.render(&json!({"x": 5})).unwrap(), "5");
        assert_eq!(
            t.render(&json!({})).unwrap_err(),
            RenderError::Absent("x".into())
        );
        assert_eq!(
            t.render(&json!({"x": null})).unwrap_err(),
            RenderError::Absent("x".into())
        );
    }

    #[test]
    fn arrays_render_one_element_per_item() {
        let t = Template::parse("--include={p}").unwrap();
        assert_eq!(
            t.render_each(&json!({"p": ["a b", "*"]})).unwrap(),
            vec!["--include=a b", "--include=*"]
        );
        assert!(t.render_each(&json!({"p": []})).unwrap().is_empty());
    }
}
