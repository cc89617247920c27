//! `logging/setLevel`: the least severe level of the upstream log messages
//! a 2025-11-25 session wants relayed to it, kept per session
//! ([`SessionLevel`]). Relaying them is `upstream::relay`'s; a 2026-07-28
//! request names its level in its own `_meta` (`call`).

use rmcp::ErrorData;
use rmcp::model::SetLevelRequestMethod;
use rmcp::service::{RequestContext, RoleServer};

use super::{Regent, has_result_type};

/// A session's `logging/setLevel`, unset in every clone (see
/// [`Regent::log_level`]).
#[derive(Default)]
pub(super) struct SessionLevel(std::sync::Mutex<Option<u8>>);

impl Clone for SessionLevel {
    fn clone(&self) -> SessionLevel {
        SessionLevel::default()
    }
}

#[allow(deprecated)] // logging is deprecated (SEP-2577); both eras still carry it
impl SessionLevel {
    const LEVELS: [rmcp::model::LoggingLevel; 8] = {
        use rmcp::model::LoggingLevel::*;
        [
            Debug, Info, Notice, Warning, Error, Critical, Alert, Emergency,
        ]
    };

    fn set(&self, level: rmcp::model::LoggingLevel) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(crate::upstream::relay::severity(level));
    }

    /// The level set, or `debug` (everything) before any.
    pub(super) fn get(&self) -> rmcp::model::LoggingLevel {
        let set = *self.0.lock().unwrap_or_else(|p| p.into_inner());
        Self::LEVELS[usize::from(set.unwrap_or(0))]
    }
}

impl Regent {
    /// The session's least severe level of the upstream log messages
    /// relayed to it (regent logs nothing of its own to clients).
    #[allow(deprecated)] // logging is deprecated (SEP-2577); 2025-11-25 clients may still send it
    pub(super) async fn answer_set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // A 2026-07-28 request has no session to set a level on: it says
        // its level in its own `_meta`.
        if has_result_type(&ctx) {
            let e = ErrorData::method_not_found::<SetLevelRequestMethod>();
            return self.counted("logging/setLevel", Err(e));
        }
        self.log_level.set(request.level);
        self.counted("logging/setLevel", Ok(()))
    }
}
