//! How the lifecycle ends and what cycles say of it: a firmware that exits is stopped (and a
//! restart runs it afresh where a reset cannot), and cycles keyed by the model their load call
//! names tell a leak per model.

use super::fake::{self, FREERTOS_LIKE, Firmware, STACK};
use super::{MAIN_A, MAIN_B, cycle, ptr};
use crate::config::PeakMethod;
use crate::debugger::Stopped;
use crate::error::AuditError;
use crate::session::Restart;

/// `model_load(&g_engine, model)`: the engine in RAM, the model's descriptor in flash.
fn load(fw: &mut Firmware, model: u64) {
    fw.call(
        "model_load",
        STACK,
        MAIN_A,
        [fake::RAM + 0x100, model, 0, 0],
    );
}

fn model(fw: &Firmware, name: &str) -> u64 {
    fw.symbols.elf_symbol(name).unwrap().address
}

/// Starts a fresh fake target with its own script.
struct FreshTarget(Option<Firmware>);

impl Restart for FreshTarget {
    fn restart(&mut self) -> Result<Box<dyn memlife_core::Target>, String> {
        let fw = self.0.take().ok_or("started once already")?;
        Ok(fake::target(fw, None).0)
    }

    fn describe(&self) -> String {
        "a fresh fake target".into()
    }
}

/// Two cycles (`load`, `run`), the program's exit after the second.
pub(crate) fn two_cycles_then_exit() -> Firmware {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    let wake = model(&fw, "g_model_wake");
    for _ in 0..2 {
        load(&mut fw, wake);
        fw.ret(MAIN_A, STACK, 0);
        fw.call("inference_run", STACK, MAIN_B, [0; 4]);
        fw.ret(MAIN_B, STACK, 0);
    }
    fw.exit(0);
    fw
}

#[test]
fn an_exit_stops_the_lifecycle_until_a_restart_runs_it_afresh() {
    let (mut dbg, _) = fake::debugger(two_cycles_then_exit(), FREERTOS_LIKE, PeakMethod::Trace);
    assert!(dbg.stopped().is_none());
    cycle(&mut dbg).unwrap();
    // The exit between phases completes the second cycle.
    let last = cycle(&mut dbg).unwrap();
    assert_eq!((last.index, last.exit), (2, Some(0)));
    let stopped = dbg.stopped().cloned().unwrap();
    assert_eq!(
        stopped,
        Stopped::Exit {
            status: 0,
            during: None
        }
    );
    assert!(stopped.is_clean());
    let e = dbg.cycle_begin().unwrap_err();
    assert!(
        matches!(e, AuditError::ExitedAfterCycles { cycles: 2, .. }),
        "{e}"
    );
    // No way to start it again: the reset fails as the target says.
    let e = dbg.reset().unwrap_err().to_string();
    assert!(e.contains("exited with status 0"), "{e}");
    // With one, the reset is a fresh target, and the lifecycle runs on.
    dbg.set_restart(Box::new(FreshTarget(Some(two_cycles_then_exit()))));
    dbg.reset().unwrap();
    assert!(dbg.stopped().is_none());
    let again = cycle(&mut dbg).unwrap();
    assert_eq!(again.index, 3);
    assert_eq!(again.calls.len(), 2);
    // A restart that fails says what was gone and why the start failed.
    cycle(&mut dbg).unwrap();
    let e = dbg.reset().unwrap_err().to_string();
    assert!(
        e.contains("exited with status 0")
            && e.contains("starting a fresh fake target failed: started once already"),
        "{e}"
    );
}

/// Four cycles, models `wake_word` and `command_word` in turn: load allocates 16 B (24 more
/// for command_word, never freed), release frees the 16.
pub(crate) fn alternating_models() -> Firmware {
    let sym = fake::symbols();
    let mut fw = Firmware::new(&sym);
    let models = [model(&fw, "g_model_wake"), model(&fw, "g_model_cmd")];
    for k in 0..4u64 {
        let m = (k % 2) as usize;
        load(&mut fw, models[m]);
        fw.malloc(STACK - 0x20, super::IN_BUILD_GRAPH, ptr(2 * k + 1), 16);
        if m == 1 {
            fw.malloc(STACK - 0x20, super::IN_BUILD_GRAPH, ptr(2 * k + 2), 24);
        }
        fw.ret(MAIN_A, STACK, 0);
        fw.call("model_release", STACK, MAIN_B, [0; 4]);
        fw.free(STACK - 0x20, super::IN_BUILD_GRAPH_2, ptr(2 * k + 1), 16);
        fw.ret(MAIN_B, STACK, 0);
    }
    load(&mut fw, models[0]);
    fw
}

#[test]
fn cycles_are_keyed_by_the_model_their_load_names_and_a_leak_is_that_models() {
    let (mut dbg, _) = fake::debugger(alternating_models(), FREERTOS_LIKE, PeakMethod::Trace);
    let names: Vec<Option<String>> = (0..4).map(|_| cycle(&mut dbg).unwrap().model).collect();
    assert_eq!(
        names,
        ["wake_word", "command_word", "wake_word", "command_word"].map(|n| Some(n.to_string()))
    );
    let models = dbg.models();
    assert_eq!(models.len(), 2);
    let cmd = &models[1];
    assert_eq!(cmd.name, "command_word");
    assert_eq!(
        (cmd.cycles, cmd.every, cmd.measured, cmd.most, cmd.least),
        (2, Some(2), 2, 24, 24)
    );
    assert_eq!(
        cmd.leak_text(dbg.model_cycles()).as_deref(),
        Some("24 B per cycle of command_word (every 2nd cycle)")
    );
    // wake_word's second cycle lost nothing; its first is the audit's first, not measured.
    assert_eq!((models[0].measured, models[0].most), (1, 0));
    // Keying off: no models.
    let (mut off, _) = fake::debugger(alternating_models(), FREERTOS_LIKE, PeakMethod::Trace);
    off.models = crate::observers::Models::new(crate::observers::ModelKey::Off);
    for _ in 0..4 {
        assert_eq!(cycle(&mut off).unwrap().model, None);
    }
    assert!(off.models().is_empty());
}
