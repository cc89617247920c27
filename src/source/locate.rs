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
///
/// Held as a tree of steps (a node's id and the key or index to its child)
/// rather than a map from whole paths: indexing then copies and hashes one
/// step per node instead of the node's whole path, which made this index
/// half the cost of reading a large catalog's tool files.
#[derive(Debug, Clone, Default)]
pub struct LocationIndex {
    /// The document's root node, once there is one (id 0).
    root: Option<(usize, usize)>,
    /// Every other node and key: (its parent's id, the step from the
    /// parent) to (its own id, its position). The first position read for
    /// a path is kept (a key's, for the value under it).
    steps: HashMap<(u32, Seg), (u32, (usize, usize))>,
}

enum Frame {
    Map {
        id: u32,
        /// The key whose value comes next, once a key has been read.
        key: Option<String>,
    },
    Seq {
        id: u32,
        next: usize,
    },
    /// A container used as a mapping key: legal YAML, never valid here.
    Ignored,
}

impl LocationIndex {
    /// Indexes `text`. A file that does not parse yields a partial index; the
    /// syntax error itself is reported by the serde pass.
    pub fn build(text: &str) -> LocationIndex {
        LocationIndex::build_seeing(text, |_, _, _| {})
    }

    /// [`LocationIndex::build`], showing `seen` each node's event (a
    /// scalar, an alias, a mapping or sequence start) with its position and
    /// its id ([`LocationIndex::id_of`]; `None` for a mapping key or a node
    /// inside a container used as a key): one reading of the file for a
    /// reader that wants more of each node than where it is
    /// (`testing::numbers`, a scalar's text).
    pub fn build_seeing(
        text: &str,
        mut seen: impl FnMut(Option<u32>, &Event, (usize, usize)),
    ) -> LocationIndex {
        let mut index = LocationIndex::default();
        let mut stack: Vec<Frame> = Vec::new();
        for item in Parser::new_from_str(text) {
            let Ok((event, span)) = item else { break };
            let pos = (span.start.line(), span.start.col() + 1);
            match &event {
                Event::Scalar(value, ..) => {
                    let id = index.node(&mut stack, Some(value), pos);
                    seen(id, &event, pos);
                }
                Event::Alias(_) => {
                    let id = index.node(&mut stack, None, pos);
                    seen(id, &event, pos);
                }
                Event::MappingStart(..) | Event::SequenceStart(..) => {
                    let is_map = matches!(event, Event::MappingStart(..));
                    let id = index.node(&mut stack, None, pos);
                    seen(id, &event, pos);
                    let frame = match id {
                        Some(id) if is_map => Frame::Map { id, key: None },
                        Some(id) => Frame::Seq { id, next: 0 },
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

    /// The id of the node at exactly `path` (one id per path: a key and
    /// the value under it share it), `None` when nothing is there.
    pub fn id_of(&self, path: &YamlPath) -> Option<u32> {
        self.root?;
        path.0.iter().try_fold(0, |id, seg| {
            self.steps.get(&(id, seg.clone())).map(|&(child, _)| child)
        })
    }

    /// Accounts for a node starting at `pos`; returns its id, or `None`
    /// when the node is a mapping key (whose position is recorded under the
    /// path it names) or sits inside an ignored container.
    fn node(
        &mut self,
        stack: &mut [Frame],
        scalar: Option<&str>,
        pos: (usize, usize),
    ) -> Option<u32> {
        match stack.last_mut() {
            None => {
                self.root.get_or_insert(pos);
                Some(0)
            }
            Some(Frame::Ignored) => None,
            Some(Frame::Seq { id, next }) => {
                let step = Seg::Index(*next);
                *next += 1;
                Some(self.step(*id, step, pos))
            }
            Some(Frame::Map { id, key }) => match key.take() {
                Some(k) => Some(self.step(*id, Seg::Key(k), pos)),
                None => {
                    // This node is a key. Keys point at themselves, which is
                    // where a reader looks for a misspelt or misplaced key.
                    let k = scalar.unwrap_or("").to_string();
                    self.step(*id, Seg::Key(k.clone()), pos);
                    *key = Some(k);
                    None
                }
            },
        }
    }

    /// The id of the node one `step` below `parent`, recorded at `pos`
    /// unless it already was.
    fn step(&mut self, parent: u32, step: Seg, pos: (usize, usize)) -> u32 {
        let next = u32::try_from(self.steps.len() + 1).unwrap_or(u32::MAX);
        self.steps.entry((parent, step)).or_insert((next, pos)).0
    }

    /// The position of `path`, or of its nearest ancestor that has one.
    pub fn locate(&self, path: &YamlPath) -> (usize, usize) {
        let Some(mut found) = self.root else {
            return (1, 1);
        };
        let mut id = 0;
        for seg in &path.0 {
            match self.steps.get(&(id, seg.clone())) {
                Some(&(child, pos)) => {
                    id = child;
                    found = pos;
                }
                None => break,
            }
        }
        found
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

    #[test]
    fn the_first_position_and_the_nearest_ancestor_are_found() {
        let text = "a:\n  b: 1\n  b:\n    c: 2\ne: [1, {f: 2}]\n";
        let idx = LocationIndex::build(text);
        let at = |p: YamlPath| idx.locate(&p);
        let a = YamlPath::root().key("a");
        let e = YamlPath::root().key("e");
        assert_eq!(at(a.clone()), (1, 1));
        // A key given twice keeps its first place; what is under the
        // second one is found under the same path.
        assert_eq!(at(a.key("b")), (2, 3));
        assert_eq!(at(a.key("b").key("c")), (4, 5));
        assert_eq!(at(a.key("b").key("nowhere").index(3)), (2, 3));
        assert_eq!(at(e.index(1)), (5, 8));
        assert_eq!(at(e.index(1).key("f")), (5, 9));
        assert_eq!(at(e.index(2)), (5, 1));
        assert_eq!(at(YamlPath::root().key("zz")), (1, 1));
        assert_eq!(LocationIndex::build("").locate(&a), (1, 1));
    }
}
