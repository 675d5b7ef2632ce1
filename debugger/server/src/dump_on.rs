//! [`DumpOn`], a `monitor dump-on` request as the bridge keeps it until its client leaves.

/// A `monitor dump-on` request.
#[derive(Debug, Clone)]
pub(crate) struct DumpOn {
    pub symbol: String,
    pub addr: u64,
    /// May contain `{n}`, the 1-based count of dumps written for this symbol.
    pub path: String,
    pub written: u32,
}
