//! The records an audit produces: phases, spans, events, checks. They are the report's model,
//! kept in `memlife-report` (written here, read by `memlife diff`, the renderers and
//! `--baseline` alike); this module names them where the engine always found them.

pub use memlife_report::model::*;
