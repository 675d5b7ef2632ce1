//! Unit tests of the bridge, its monitor commands and the audit guard over
//! `memlife_testkit::live` (a live fake target on the heap crate's heap_4 fixture: its real ELF
//! and a snapshot of its RAM), so that run control, breakpoints and dumps are exercised
//! without QEMU.
#![allow(clippy::unwrap_used, clippy::panic)]

mod audit_guard;
mod bridge;
mod monitor;
mod threads;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use memlife_core::Snapshot;
use memlife_dwarf::Symbols;
use memlife_testkit::live::{LiveTarget, Probe};

use crate::{Bridge, ServeEvent, ServeOptions};

fn testdata(name: &str) -> PathBuf {
    memlife_testkit::firmware::repo()
        .join("debugger/heap/testdata")
        .join(name)
}

/// A bridge over the live fake, its probe, its dump directory and the events it told.
pub(crate) struct Bench {
    pub bridge: Bridge,
    pub probe: Probe,
    pub dir: PathBuf,
    pub events: Arc<Mutex<Vec<ServeEvent>>>,
}

impl Bench {
    /// A bench whose dump and script directory is a fresh one; `tweak` sets other options.
    pub fn new(tag: &str, tweak: impl FnOnce(&mut ServeOptions)) -> Bench {
        let dir = memlife_testkit::process::tempdir(&format!("server-{tag}"));
        let events: Arc<Mutex<Vec<ServeEvent>>> = Arc::default();
        let sink = Arc::clone(&events);
        let mut options = ServeOptions {
            places: crate::places::Places {
                dump_dir: dir.clone(),
                script_dirs: vec![dir.clone()],
            },
            events: Some(Arc::new(move |e: &ServeEvent| {
                sink.lock().unwrap().push(e.clone())
            })),
            ..ServeOptions::default()
        };
        tweak(&mut options);
        let snap = Snapshot::load(&testdata("heap4-fragmentation.mlsnap")).unwrap();
        let (target, probe) = LiveTarget::new(snap);
        let bridge = Bridge::new(Box::new(target), symbols(), options);
        Bench {
            bridge,
            probe,
            dir,
            events,
        }
    }

    /// A monitor command's answer, or its error's words.
    pub fn monitor(&mut self, line: &str) -> Result<String, String> {
        self.bridge
            .monitor(line.as_bytes())
            .map_err(|e| crate::error::chain(&e))
    }

    /// The events told so far, as printed.
    pub fn told(&self) -> Vec<String> {
        self.events
            .lock()
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// The files in the dump directory, sorted.
    pub fn files(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

/// The fixture's symbols.
pub(crate) fn symbols() -> Symbols {
    Symbols::load(&testdata("heap4-fragmentation.elf")).unwrap()
}

/// A function's entry in the fixture.
pub(crate) fn entry(name: &str) -> u64 {
    symbols().function(name).unwrap().entry
}

/// gdb's run-length encoding undone: `X*N` is X and N - 29 more of it.
pub(crate) fn unrle(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '*' {
            let n = chars.next().map_or(0, |n| (n as usize).saturating_sub(29));
            let last = out.chars().last().unwrap_or('0');
            out.extend(std::iter::repeat_n(last, n));
        } else {
            out.push(c);
        }
    }
    out
}
