//! `c` and `s` (or `vCont;c` and `vCont;s`) let the core run or step; `vCont?` asks which
//! `vCont` actions the server has. The reply to a run command is a stop reply, read by
//! [`super::stop`] when the core stops.

use memlife_core::{Result, TargetError};

use super::unexpected;
use crate::packet::Reply;

/// `vCont?`: which `vCont` actions the server supports.
pub const VCONT_QUERY: &[u8] = b"vCont?";

/// The `vCont` actions memlife uses that a server supports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VContActions {
    /// `vCont;c`.
    pub continue_: bool,
    /// `vCont;s`.
    pub step: bool,
}

/// The reply to `vCont?`: `vCont;c;C;s;S`-style; the empty reply is a server without `vCont`
/// (and so is an error code: older servers answer that way).
pub fn parse_vcont_actions(reply: Reply) -> Result<VContActions> {
    let d = match reply {
        Reply::Unsupported | Reply::Error(_) => return Ok(VContActions::default()),
        Reply::Ok => return Err(unexpected("vCont?", b"OK")),
        Reply::Data(d) => d,
    };
    let rest = d
        .strip_prefix(b"vCont")
        .ok_or_else(|| unexpected("vCont?", &d))?;
    if !(rest.is_empty() || rest.starts_with(b";")) {
        return Err(unexpected("vCont?", &d));
    }
    let mut actions = VContActions::default();
    for action in rest.split(|&b| b == b';').skip(1) {
        match action {
            b"c" => actions.continue_ = true,
            b"s" => actions.step = true,
            b"" => {
                return Err(TargetError::Protocol(
                    "empty action in the vCont? reply".into(),
                ));
            }
            _ => {}
        }
    }
    Ok(actions)
}

/// Run or step the (only) core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// Run until something stops it.
    Continue,
    /// Execute one instruction.
    Step,
}

impl Resume {
    /// The request: `vCont;c`/`vCont;s` when the server has that action, else `c`/`s`.
    pub fn encode(self, vcont: VContActions) -> &'static [u8] {
        match (self, vcont.continue_, vcont.step) {
            (Resume::Continue, true, _) => b"vCont;c",
            (Resume::Continue, false, _) => b"c",
            (Resume::Step, _, true) => b"vCont;s",
            (Resume::Step, _, false) => b"s",
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::packets::data;

    #[test]
    fn qemu_vcont_actions() {
        let a = parse_vcont_actions(data("vCont;c;C;s;S")).unwrap();
        assert!(a.continue_ && a.step);
        assert_eq!(Resume::Continue.encode(a), b"vCont;c");
        assert_eq!(Resume::Step.encode(a), b"vCont;s");
        let only_c = parse_vcont_actions(data("vCont;c;C;t")).unwrap();
        assert!(only_c.continue_ && !only_c.step);
        assert_eq!(Resume::Step.encode(only_c), b"s");
    }

    #[test]
    fn servers_without_vcont() {
        for r in [Reply::Unsupported, Reply::Error(1), data("vCont")] {
            let a = parse_vcont_actions(r).unwrap();
            assert_eq!(a, VContActions::default());
            assert_eq!(Resume::Continue.encode(a), b"c");
            assert_eq!(Resume::Step.encode(a), b"s");
        }
    }

    #[test]
    fn invalid_vcont_replies() {
        for bad in ["c;s", "vCont?", "vContc;s", "vCont;;c", "vCont;c;"] {
            assert!(parse_vcont_actions(data(bad)).is_err(), "{bad}");
        }
        assert!(parse_vcont_actions(Reply::Ok).is_err());
    }
}
