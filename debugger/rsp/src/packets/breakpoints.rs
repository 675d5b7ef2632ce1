//! `Z type,addr,kind` inserts a breakpoint or watchpoint, `z` removes it.

use memlife_core::{BreakpointKind, Result, WatchKind};

use super::expect_ok;
use crate::packet::Reply;

/// What a `Z`/`z` packet sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// A code breakpoint; `kind` is the breakpoint's size in the server's terms (2 for a Thumb
    /// instruction).
    Break(BreakpointKind),
    /// A data watchpoint; `kind` is the watched length.
    Watch(WatchKind),
}

impl Point {
    /// The packet's type digit.
    fn type_digit(self) -> u8 {
        match self {
            Point::Break(BreakpointKind::Software) => 0,
            Point::Break(BreakpointKind::Hardware) => 1,
            Point::Watch(WatchKind::Write) => 2,
            Point::Watch(WatchKind::Read) => 3,
            Point::Watch(WatchKind::Access) => 4,
        }
    }

    /// What the server refuses or lacks, in an error.
    fn what(self, insert: bool) -> &'static str {
        match (self, insert) {
            (Point::Break(BreakpointKind::Software), true) => "software breakpoints",
            (Point::Break(BreakpointKind::Hardware), true) => "hardware breakpoints",
            (Point::Break(_), false) => "removing breakpoints",
            (Point::Watch(_), true) => "watchpoints",
            (Point::Watch(_), false) => "removing watchpoints",
        }
    }
}

/// `Z` (insert) or `z` (remove).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetPoint {
    /// Insert rather than remove.
    pub insert: bool,
    /// Breakpoint or watchpoint.
    pub point: Point,
    /// Address (thumb bit cleared for code).
    pub addr: u64,
    /// The breakpoint's size, or the watched length.
    pub kind: u64,
}

impl SetPoint {
    /// The request.
    pub fn encode(&self) -> Vec<u8> {
        format!(
            "{}{},{:x},{:x}",
            if self.insert { 'Z' } else { 'z' },
            self.point.type_digit(),
            self.addr,
            self.kind
        )
        .into_bytes()
    }

    /// `OK`; the empty reply is a server without this kind of point, an error code a refusal
    /// (no comparator left, an address it cannot patch).
    pub fn parse_reply(&self, reply: Reply) -> Result<()> {
        expect_ok(reply, self.point.what(self.insert))
    }
}

#[cfg(test)]
mod tests {
    use memlife_core::TargetError;

    use super::*;

    #[test]
    fn insert_and_remove() {
        let bp = SetPoint {
            insert: true,
            point: Point::Break(BreakpointKind::Software),
            addr: 0x0800_0100,
            kind: 2,
        };
        assert_eq!(bp.encode(), b"Z0,8000100,2");
        assert!(bp.parse_reply(Reply::Ok).is_ok());
        let remove = SetPoint {
            insert: false,
            ..bp
        };
        assert_eq!(remove.encode(), b"z0,8000100,2");
        let watch = SetPoint {
            insert: true,
            point: Point::Watch(WatchKind::Access),
            addr: 0x2000_0004,
            kind: 4,
        };
        assert_eq!(watch.encode(), b"Z4,20000004,4");
        let hw = SetPoint {
            point: Point::Break(BreakpointKind::Hardware),
            ..bp
        };
        assert_eq!(hw.encode(), b"Z1,8000100,2");
        let read = SetPoint {
            point: Point::Watch(WatchKind::Read),
            ..watch
        };
        assert_eq!(read.encode(), b"Z3,20000004,4");
    }

    #[test]
    fn invalid_replies_name_what_was_asked() {
        let hw = SetPoint {
            insert: true,
            point: Point::Break(BreakpointKind::Hardware),
            addr: 0x0800_0100,
            kind: 2,
        };
        assert!(matches!(
            hw.parse_reply(Reply::Unsupported),
            Err(TargetError::Unsupported("hardware breakpoints"))
        ));
        assert!(matches!(
            hw.parse_reply(Reply::Error(0x0e)),
            Err(TargetError::Refused {
                request: "hardware breakpoints",
                code: 0x0e
            })
        ));
        assert!(matches!(
            hw.parse_reply(Reply::Data(b"T05".to_vec())),
            Err(TargetError::Protocol(_))
        ));
        let unwatch = SetPoint {
            insert: false,
            point: Point::Watch(WatchKind::Write),
            addr: 0,
            kind: 4,
        };
        assert!(matches!(
            unwatch.parse_reply(Reply::Error(1)),
            Err(TargetError::Refused {
                request: "removing watchpoints",
                ..
            })
        ));
    }
}
