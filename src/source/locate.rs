//! Where each node of a YAML file is: a map from a path (`tools[0].resolve[1].when.action`)
//! to its line and column.
//!
//! serde gives us positions only for its own errors. Problems found later,
//! such as a mapping rule naming an argument that the tool does not declare,
//! still deserve `file:line:column`, so we read the file a second time with an
//! event parser that reports spans. Only positions are kept here; values come
//! from the serde model.

use std::collections::HashMap;
use std::fmt;

use saphyr_parser::{Event, Parser};

/// One step of a path into a YAML document.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// A path into a YAML document, printed as `tools[0].resolve[1].when`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct YamlPath(pub Vec<Seg>);

impl YamlPath {
    pub fn root() -> YamlPath {
        YamlPath(Vec::new())
    }

    pub fn key(&self, k: &str) -> YamlPath {
        let mut p = self.clone();
        p.0.push(Seg::Key(k.to_string()));
        p
    }

    pub fn index(&self, i: usize) -> YamlPath {
        let mut p = self.clone();
        p.0.push(Seg::Index(i));
        p
    }
}

impl fmt::Display for YamlPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(k) if i == 0 => write!(f, "{k}")?,
                Seg::Key(k) => write!(f, ".{k}")?,
                Seg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// Line and column (both 1-based) of every node and key in a document.
#[derive(Debug, Clone, Default)]
pub struct LocationIndex {
    positions: HashMap<YamlPath, (usize, usize)>,
}

enum Frame {
    Map {
        path: YamlPath,
        /// The key whose value comes next, once a key has been read.
        key: Option<String>,
    },
    Seq {
        path: YamlPath,
        next: usize,
    },
    /// A container used as a mapping key: legal YAML, never valid here.
    Ignored,
}

impl LocationIndex {
    /// Indexes `text`. A file that does not parse yields a partial index; the
    /// syntax error itself is reported by the serde pass.
    pub fn build(text: &str) -> LocationIndex {
        let mut index = LocationIndex::default();
        let mut stack: Vec<Frame> = Vec::new();
        for item in Parser::new_from_str(text) {
            let Ok((event, span)) = item else { break };
            let pos = (span.start.line(), span.start.col() + 1);
            match event {
                Event::Scalar(value, ..) => {
                    if let Some(path) = index.node(&mut stack, Some(&value), pos) {
                        index.positions.entry(path).or_insert(pos);
                    }
                }
                Event::Alias(_) => {
                    if let Some(path) = index.node(&mut stack, None, pos) {
                        index.positions.entry(path).or_insert(pos);
                    }
                }
                Event::MappingStart(..) | Event::SequenceStart(..) => {
                    let is_map = matches!(event, Event::MappingStart(..));
                    let frame = match index.node(&mut stack, None, pos) {
                        Some(path) => {
                            index.positions.entry(path.clone()).or_insert(pos);
                            if is_map {
                                Frame::Map { path, key: None }
                            } else {
                                Frame::Seq { path, next: 0 }
                            }
                        }
                        None => Frame::Ignored,
                    };
                    stack.push(frame);
                }
                Event::MappingEnd | Event::SequenceEnd => {
                    stack.pop();
                }
                _ => {}
            }
        }
        index
    }

    /// Accounts for a node starting at `pos`; returns its path, or `None`
    /// when the node is a mapping key (whose position is recorded under the
    /// path it names) or sits inside an ignored container.
    fn node(
        &mut self,
        stack: &mut [Frame],
        scalar: Option<&str>,
        pos: (usize, usize),
    ) -> Option<YamlPath> {
        match stack.last_mut() {
            None => Some(YamlPath::root()),
            Some(Frame::Ignored) => None,
            Some(Frame::Seq { path, next }) => {
                let p = path.index(*next);
                *next += 1;
                Some(p)
            }
            Some(Frame::Map { path, key }) => match key.take() {
                Some(k) => Some(path.key(&k)),
                None => {
                    // This node is a key. Keys point at themselves, which is
                    // where a reader looks for a misspelt or misplaced key.
                    let k = scalar.unwrap_or("").to_string();
                    self.positions.entry(path.key(&k)).or_insert(pos);
                    *key = Some(k);
                    None
                }
            },
        }
    }

    /// The position of `path`, or of its nearest ancestor that has one.
    pub fn locate(&self, path: &YamlPath) -> (usize, usize) {
        let mut p = path.0.clone();
        loop {
            if let Some(pos) = self.positions.get(&YamlPath(p.clone())) {
                return *pos;
            }
            if p.pop().is_none() {
                return (1, 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_keys_and_items() {
        let text = "tools:\n  - name: a\n    resolve:\n      - when: {action: read}\n";
        let idx = LocationIndex::build(text);
        let p = YamlPath::root()
            .key("tools")
            .index(0)
            .key("resolve")
            .index(0)
            .key("when")
            .key("action");
        assert_eq!(idx.locate(&p), (4, 16));
        assert_eq!(
            idx.locate(&YamlPath::root().key("tools").index(0).key("name")),
            (2, 5)
        );
        assert_eq!(p.to_string(), "tools[0].resolve[0].when.action");
    }
}
