//! Reads that tell an address the target will not read (a wild pointer: data) from a link that
//! failed (an error).

use memlife_core::{ErrorKind, Memory, TargetError};

/// Whether the error says the memory is not there, rather than that the link failed.
fn inaccessible(e: &TargetError) -> bool {
    matches!(e.kind(), ErrorKind::Unmapped | ErrorKind::Refused)
}

/// `len` bytes at `addr`; `None` when the target will not read them.
pub(crate) fn read_or_none(
    mem: &mut dyn Memory,
    addr: u64,
    len: usize,
) -> Result<Option<Vec<u8>>, TargetError> {
    if addr.checked_add(len as u64).is_none() {
        return Ok(None);
    }
    match mem.read_vec(addr, len) {
        Ok(v) => Ok(Some(v)),
        Err(e) if inaccessible(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Every range, in one pipelined request when all are readable; when one is not, range by
/// range, so that one wild pointer costs its own range only.
pub(crate) fn read_each(
    mem: &mut dyn Memory,
    ranges: &[(u64, usize)],
) -> Result<Vec<Option<Vec<u8>>>, TargetError> {
    if ranges.is_empty() {
        return Ok(Vec::new());
    }
    let wraps = ranges
        .iter()
        .any(|&(a, l)| a.checked_add(l as u64).is_none());
    if !wraps {
        match mem.read_ranges(ranges) {
            Ok(all) if all.len() == ranges.len() => return Ok(all.into_iter().map(Some).collect()),
            Ok(_) => {}
            Err(e) if inaccessible(&e) => {}
            Err(e) => return Err(e),
        }
    }
    ranges
        .iter()
        .map(|&(addr, len)| read_or_none(mem, addr, len))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn one_wild_range_costs_only_itself() {
        let mut mem = memlife_testkit::ram::at(0x1000, vec![7u8; 0x100]);
        let got = read_each(&mut mem, &[(0x1000, 4), (0x9000, 4), (0x10fc, 4)]).unwrap();
        assert_eq!(got, vec![Some(vec![7; 4]), None, Some(vec![7; 4])]);
        assert_eq!(
            read_each(&mut mem, &[(u64::MAX - 1, 4)]).unwrap(),
            vec![None]
        );
        assert_eq!(read_or_none(&mut mem, 0x0, 4).unwrap(), None);
    }

    #[test]
    fn a_dead_link_is_an_error() {
        struct Dead;
        impl Memory for Dead {
            fn read(&mut self, _: u64, _: &mut [u8]) -> memlife_core::Result<()> {
                Err(TargetError::Gone("closed".into()))
            }
        }
        assert!(read_each(&mut Dead, &[(0x1000, 4)]).is_err());
        assert!(read_or_none(&mut Dead, 0x1000, 4).is_err());
    }
}
