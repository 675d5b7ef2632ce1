//! `monitor audit` under its deadline and its client's interrupt: stopped cleanly (memlife's
//! breakpoints removed, the core halted, the reply says why), and its dumps never through a
//! link planted at `DUMP_DIR/memlife-out`.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::Bench;
use crate::guard::{ClientSignal, ClientSignals};

/// A script that waits for a function the fake core never reaches.
const WAITS: &str = "let t = target();\nt.run_to(\"model_release\");\nprint(\"reached\");\n";

/// A client that sends `signal` at its `after`-th look.
struct Client {
    looks: Cell<u32>,
    after: u32,
    signal: ClientSignal,
}

impl ClientSignals for Client {
    fn poll(&self) -> ClientSignal {
        self.looks.set(self.looks.get() + 1);
        if self.looks.get() >= self.after {
            self.signal
        } else {
            ClientSignal::Quiet
        }
    }
}

fn audit(b: &mut Bench, source: &str) -> String {
    // The fixture's RAM snapshot stops short of the stack top: a stack the engine can read.
    b.probe.0.borrow_mut().regs[memlife_core::cortex_m::SP] = 0x2001_0000;
    std::fs::write(b.dir.join("s.rhai"), source).unwrap();
    let line = format!("audit {}", b.dir.join("s.rhai").display());
    b.monitor(&line).unwrap()
}

/// What every stopped audit leaves: no breakpoint, a halted core, a working bridge.
fn left_clean(b: &mut Bench) {
    let state = b.probe.state();
    assert!(state.breakpoints.is_empty(), "{:?}", state.breakpoints);
    assert!(!state.running, "the core is halted");
    drop(state);
    assert!(b.monitor("heap").unwrap().contains("freertos-heap4"));
}

#[test]
fn an_audit_past_its_deadline_is_stopped() {
    let mut b = Bench::new("audit-deadline", |o| {
        o.audit_deadline = Duration::from_millis(300)
    });
    let started = Instant::now();
    let out = audit(&mut b, WAITS);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(
        out.contains("audit stopped: it ran past its deadline of 0.3 s (--audit-deadline)"),
        "{out}"
    );
    assert!(!out.contains("reached"), "{out}");
    left_clean(&mut b);
}

#[test]
fn the_clients_interrupt_stops_an_audit() {
    let mut b = Bench::new("audit-interrupt", |_| {});
    b.bridge.client = Some(Rc::new(Client {
        looks: Cell::new(0),
        after: 3,
        signal: ClientSignal::Interrupt,
    }));
    let started = Instant::now();
    let out = audit(&mut b, WAITS);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(
        out.contains("audit stopped: interrupted by the client (0x03); memlife's breakpoints are removed and the target is halted"),
        "{out}"
    );
    left_clean(&mut b);
}

#[test]
fn a_client_that_leaves_stops_its_audit() {
    let mut b = Bench::new("audit-gone", |_| {});
    b.bridge.client = Some(Rc::new(Client {
        looks: Cell::new(0),
        after: 1,
        signal: ClientSignal::Gone,
    }));
    let out = audit(&mut b, WAITS);
    assert!(out.contains("audit stopped: the client left"), "{out}");
    left_clean(&mut b);
}

/// An audit that ends by itself says nothing of a stop, and a quiet client is only looked at.
#[test]
fn an_audit_that_ends_is_not_stopped() {
    let mut b = Bench::new("audit-ends", |_| {});
    b.bridge.client = Some(Rc::new(Client {
        looks: Cell::new(0),
        after: u32::MAX,
        signal: ClientSignal::Interrupt,
    }));
    let out = audit(
        &mut b,
        "let t = target();\ncheck(\"free\", t.heap().free > 0);\n",
    );
    assert!(out.contains("PASS free"), "{out}");
    assert!(!out.contains("audit stopped"), "{out}");
    left_clean(&mut b);
}

/// A link planted at DUMP_DIR/memlife-out: the script's dump is refused, nothing lands outside.
#[test]
fn audit_dumps_never_follow_a_planted_memlife_out() {
    let mut b = Bench::new("audit-link", |_| {});
    let outside = memlife_testkit::process::tempdir("server-audit-link-outside");
    std::os::unix::fs::symlink(&outside, b.dir.join("memlife-out")).unwrap();
    let out = audit(
        &mut b,
        "let t = target();\nlet h = t.heap();\nh.dump(\"x.json\");\n",
    );
    assert!(out.contains("symbolic link"), "{out}");
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "{out}");
}
