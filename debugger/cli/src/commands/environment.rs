//! memlife's environment variables, read here and nowhere else, once per command, and passed
//! down as values (the libraries read none):
//!
//! - `MEMLIFE_LINK_MODEL=RTT_US:BYTES_PER_S`: the link's cost model for `--walk auto`, instead of
//!   measuring it (a benchmark models a slow probe with it);
//! - `MEMLIFE_NO_EMULATION`: resume from breakpoints by single steps on the target, not by
//!   executing the instruction on the host (comparisons);
//! - `MEMLIFE_NO_VECTOR_CATCH`: catch faults by breakpoints on their handlers, not by the core's
//!   vector catch (comparisons).
//!
//! (`MEMLIFE_LOG` is the log filter, read where logging starts, in `main`.)

use anyhow::{Result, bail};
use memlife_audit::EngineTuning;
use memlife_heap::{LinkModel, LinkState, WalkStrategy};
use memlife_plan::Environment;

/// The variable that models the link.
pub const LINK_MODEL: &str = "MEMLIFE_LINK_MODEL";

/// What the environment says; a link model that is not one is refused, naming the variable.
pub fn read() -> Result<Environment> {
    Ok(Environment {
        link_model: link_model(std::env::var(LINK_MODEL))?,
        tuning: EngineTuning {
            host_resume: std::env::var_os("MEMLIFE_NO_EMULATION").is_none(),
            vector_catch: std::env::var_os("MEMLIFE_NO_VECTOR_CATCH").is_none(),
        },
    })
}

/// How the live walks of one command read the target: `--walk` (default auto) with the
/// environment's link model.
pub fn link(walk: Option<WalkStrategy>, env: &Environment) -> LinkState {
    LinkState::new(walk.unwrap_or(WalkStrategy::Auto), env.link_model)
}

/// The model `MEMLIFE_LINK_MODEL` gives, when set and not empty.
fn link_model(value: Result<String, std::env::VarError>) -> Result<Option<LinkModel>> {
    match value {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => match v.parse() {
            Ok(model) => Ok(Some(model)),
            Err(e) => bail!("{LINK_MODEL}={e}"),
        },
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => bail!("{LINK_MODEL} is not valid UTF-8"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn given(v: &str) -> Result<Option<LinkModel>> {
        link_model(Ok(v.to_string()))
    }

    #[test]
    fn the_link_model_is_a_positive_pair_and_its_errors_name_the_variable() {
        assert_eq!(
            given("1000:500000").unwrap(),
            Some(LinkModel {
                rtt_us: 1000.0,
                bytes_per_s: 500_000.0
            })
        );
        assert_eq!(given("  ").unwrap(), None);
        assert_eq!(
            link_model(Err(std::env::VarError::NotPresent)).unwrap(),
            None
        );
        // See issue 30: a round trip of 0 µs was accepted although the message says positive.
        for bad in ["0:500000", "1ms:fast", "-5:100", "100:0"] {
            let e = given(bad).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!(
                    "MEMLIFE_LINK_MODEL=`{bad}`: expected RTT_US:BYTES_PER_S, two positive numbers"
                )),
                "{e}"
            );
        }
    }
}
