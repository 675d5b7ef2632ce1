//! Empty: Cargo.toml exists to fetch the tfmicro crate's sources (see its comment).
