//! Naming a review's files as the user knows them (`b.tar.gz:x.rego`,
//! `HEAD~1:x.rego`) when the catalog was read from a temporary directory:
//! every text that may name a file, never a decision's values. Where the
//! names come from is the command's business (`commands::bundle`,
//! `commands::review::revision`).

use super::{Coverage, Review, RowOutcome};

impl Review {
    /// Every text that may name a file of the catalog passed through `f`:
    /// the paths, locations, findings, reasons and *set by* entries (never
    /// a decision's values). For a catalog read from a temporary directory
    /// (a bundle opened, a git revision written out), whose files are
    /// named as the user knows them (`b.tar.gz:x.rego`, `HEAD~1:x.rego`).
    pub fn relabel(&mut self, f: &dyn Fn(&str) -> String) {
        let each = |v: &mut Vec<String>| v.iter_mut().for_each(|s| *s = f(s));
        each(&mut self.paths);
        for x in &mut self.findings {
            x.location = f(&x.location);
            x.message = f(&x.message);
            x.help = x.help.as_deref().map(f);
        }
        for t in &mut self.tools {
            t.location = f(&t.location);
            if let Coverage::NotCovered { warning } = &mut t.coverage {
                *warning = f(warning);
            }
            for r in &mut t.rows {
                match &mut r.outcome {
                    RowOutcome::Hidden { why: None } => {}
                    RowOutcome::Hidden { why: Some(s) }
                    | RowOutcome::Invalid(s)
                    | RowOutcome::Failed(s)
                    | RowOutcome::CallerRefused(s) => *s = f(s),
                    RowOutcome::Decided(d) => {
                        d.hints.iter_mut().for_each(|h| each(&mut h.by));
                        d.fields
                            .iter_mut()
                            .chain(&mut d.deny)
                            .chain(&mut d.confirm)
                            .for_each(|x| each(&mut x.by));
                    }
                }
            }
        }
    }
}
