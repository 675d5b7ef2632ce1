//! The exit status of an interrupted run, shared by the top level and wide runs' summary.

/// The exit status after Ctrl-C or SIGTERM: 128 + SIGINT, as shells report it.
pub(crate) const EXIT_INTERRUPTED: u8 = 130;
