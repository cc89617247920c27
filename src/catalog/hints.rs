//! The four MCP behaviour hints, their worst-case defaults, and the one safety
//! rule regent enforces: a resolved hint is never riskier than the listed one.

use serde_json::{Map, Value};

use crate::source::HintValues;

/// One of the four MCP hints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hint {
    ReadOnly,
    Destructive,
    Idempotent,
    OpenWorld,
}

impl Hint {
    pub const ALL: [Hint; 4] = [
        Hint::ReadOnly,
        Hint::Destructive,
        Hint::Idempotent,
        Hint::OpenWorld,
    ];

    /// The hint's name on the wire.
    pub fn key(self) -> &'static str {
        match self {
            Hint::ReadOnly => "readOnlyHint",
            Hint::Destructive => "destructiveHint",
            Hint::Idempotent => "idempotentHint",
            Hint::OpenWorld => "openWorldHint",
        }
    }

    /// The value that is safe for a client to assume: what the hint means
    /// when a tool does nothing risky.
    pub fn safe_value(self) -> bool {
        match self {
            Hint::ReadOnly | Hint::Idempotent => true,
            Hint::Destructive | Hint::OpenWorld => false,
        }
    }

    /// MCP's default when a tool says nothing: the risky value for every hint.
    pub fn mcp_default(self) -> bool {
        !self.safe_value()
    }

    pub fn from_key(key: &str) -> Option<Hint> {
        Hint::ALL.into_iter().find(|h| h.key() == key)
    }

    /// Why a value is risky, for error messages.
    pub fn risky_meaning(self) -> &'static str {
        match self {
            Hint::ReadOnly => "may modify its environment",
            Hint::Destructive => "may destroy data",
            Hint::Idempotent => "may have a different effect when repeated",
            Hint::OpenWorld => "may reach systems outside the server",
        }
    }
}

/// All four hints, each decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

impl Hints {
    /// What MCP assumes of a tool that declares nothing.
    pub const WORST: Hints = Hints {
        read_only: false,
        destructive: true,
        idempotent: false,
        open_world: true,
    };

    pub fn get(&self, h: Hint) -> bool {
        match h {
            Hint::ReadOnly => self.read_only,
            Hint::Destructive => self.destructive,
            Hint::Idempotent => self.idempotent,
            Hint::OpenWorld => self.open_world,
        }
    }

    pub fn set(&mut self, h: Hint, v: bool) {
        match h {
            Hint::ReadOnly => self.read_only = v,
            Hint::Destructive => self.destructive = v,
            Hint::Idempotent => self.idempotent = v,
            Hint::OpenWorld => self.open_world = v,
        }
    }

    /// `self` with every hint that `values` states replaced.
    pub fn overlay(mut self, values: &HintValues) -> Hints {
        for (h, v) in [
            (Hint::ReadOnly, values.read_only),
            (Hint::Destructive, values.destructive),
            (Hint::Idempotent, values.idempotent),
            (Hint::OpenWorld, values.open_world),
        ] {
            if let Some(v) = v {
                self.set(h, v);
            }
        }
        self
    }

    /// The hints on which `self` is riskier than `listed`.
    pub fn riskier_than(&self, listed: &Hints) -> Vec<Hint> {
        Hint::ALL
            .into_iter()
            .filter(|&h| self.get(h) != listed.get(h) && self.get(h) != h.safe_value())
            .collect()
    }

    /// The least risky hints that are still at least as risky as both.
    pub fn join(&self, other: &Hints) -> Hints {
        let mut out = *self;
        for h in Hint::ALL {
            if other.get(h) != h.safe_value() {
                out.set(h, other.get(h));
            }
        }
        out
    }

    /// The four hints as a JSON object, in MCP's order.
    pub fn to_json(&self) -> Map<String, Value> {
        let mut m = Map::new();
        for h in Hint::ALL {
            m.insert(h.key().to_string(), Value::Bool(self.get(h)));
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn riskier_is_per_hint_and_direction_aware() {
        let listed = Hints {
            read_only: false,
            destructive: false,
            idempotent: true,
            open_world: false,
        };
        let mut resolved = listed;
        assert!(resolved.riskier_than(&listed).is_empty());
        resolved.read_only = true; // safer
        assert!(resolved.riskier_than(&listed).is_empty());
        resolved.destructive = true;
        resolved.idempotent = false;
        assert_eq!(
            resolved.riskier_than(&listed),
            vec![Hint::Destructive, Hint::Idempotent]
        );
    }
}
