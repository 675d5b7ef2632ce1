//! The `cargo fuzz` harnesses (`fuzz/harness`) on stable, bounded and deterministic: seeded
//! mutations of the committed fixtures, thousands of cases each. A panic fails the test; so
//! does a harness that takes too long over all its cases.

#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "../../../fuzz/harness/mod.rs"]
mod harness;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use memlife_core::Snapshot;
use memlife_testkit::fuzz::{Xorshift, cases};

fn testdata(name: &str) -> PathBuf {
    memlife_testkit::firmware::repo()
        .join("debugger/heap/testdata")
        .join(name)
}

/// `seed` with a few bytes changed, cut or grown (what a damaged file or a hostile peer sends).
fn mutate(seed: &[u8], rng: &mut Xorshift) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..=rng.below(8) {
        match rng.below(4) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len() as u64) as usize;
                v[i] = rng.byte();
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len() as u64) as usize;
                v.truncate(i);
            }
            2 => {
                let n = rng.below(16) as usize;
                v.extend(rng.bytes(n));
            }
            _ if v.len() >= 4 => {
                // A length-like word: small, huge or all ones.
                let i = rng.below(v.len() as u64 - 3) as usize;
                let w = match rng.below(3) {
                    0 => u32::MAX,
                    1 => rng.next_u32(),
                    _ => rng.below(64) as u32,
                };
                v[i..i + 4].copy_from_slice(&w.to_le_bytes());
            }
            _ => {}
        }
    }
    v
}

fn bounded(what: &str, started: Instant, limit: Duration) {
    assert!(
        started.elapsed() < limit,
        "{what}: {:?} over the bound {limit:?}",
        started.elapsed()
    );
}

#[test]
fn rsp_packet_decoder() {
    let seeds: Vec<Vec<u8>> = [
        "$m20000000,4#fd",
        "+$T05thread:p01.01;#06",
        "$OK#9a",
        "$E14#aa",
        "$3*!#aa",
        "$}]#00",
        "$qSupported:multiprocess+#00",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    let started = Instant::now();
    cases(0x5eed_0001, 20_000, |i, rng| {
        let seed = &seeds[i as usize % seeds.len()];
        harness::rsp_packet(&mutate(seed, rng));
    });
    bounded("rsp_packet", started, Duration::from_secs(60));
}

#[test]
fn snapshot_reader() {
    let seeds: Vec<Vec<u8>> = ["heap4", "nano", "tlsf"]
        .iter()
        .map(|a| std::fs::read(testdata(&format!("{a}-fragmentation.mlsnap"))).unwrap())
        .collect();
    let started = Instant::now();
    cases(0x5eed_0002, 3_000, |i, rng| {
        let seed = &seeds[i as usize % seeds.len()];
        // Most damage where the lengths and the header are.
        let head = seed.len().min(4096);
        let mut v = mutate(&seed[..head], rng);
        v.extend_from_slice(&seed[head..]);
        harness::snapshot(&v);
    });
    bounded("snapshot", started, Duration::from_secs(120));
}

#[test]
fn elf_and_dwarf_loading() {
    let seeds: Vec<Vec<u8>> = ["heap4", "nano", "tlsf"]
        .iter()
        .map(|a| std::fs::read(testdata(&format!("{a}-fragmentation.elf"))).unwrap())
        .collect();
    let started = Instant::now();
    cases(0x5eed_0003, 1_000, |i, rng| {
        let seed = &seeds[i as usize % seeds.len()];
        // The ELF header and section headers hold the lengths and offsets.
        let mut v = seed.clone();
        for _ in 0..=rng.below(4) {
            let at = if rng.below(2) == 0 {
                rng.below(64)
            } else {
                rng.below(v.len() as u64)
            } as usize;
            let end = (at + 4).min(v.len());
            let w = rng.next_u32().to_le_bytes();
            v[at..end].copy_from_slice(&w[..end - at]);
        }
        harness::elf(&v);
    });
    bounded("elf", started, Duration::from_secs(300));
}

#[test]
fn walkers_over_arbitrary_memory() {
    let started = Instant::now();
    for name in ["heap4", "nano", "tlsf"] {
        let symbols =
            memlife_dwarf::Symbols::load(&testdata(&format!("{name}-fragmentation.elf"))).unwrap();
        let walker = memlife_heap::detect(
            &symbols,
            None,
            &memlife_heap::WalkerOptions::default(),
            None,
        )
        .unwrap();
        let template = Snapshot::load(&testdata(&format!("{name}-fragmentation.mlsnap"))).unwrap();
        let real: Vec<u8> = template
            .regions
            .iter()
            .flat_map(|r| r.data.clone())
            .collect();
        cases(0x5eed_0004, 1_000, |_, rng| {
            // Real RAM with damage, or noise.
            let data = if rng.below(4) == 0 {
                let n = 1 + rng.below(4096) as usize;
                rng.bytes(n)
            } else {
                let mut d = real.clone();
                for _ in 0..=rng.below(16) {
                    let i = (rng.below(d.len().saturating_sub(4).max(1) as u64) as usize) & !3;
                    if i + 4 <= d.len() {
                        d[i..i + 4].copy_from_slice(&rng.next_u32().to_le_bytes());
                    }
                }
                d
            };
            harness::walk(walker.as_ref(), &template, &data);
        });
    }
    bounded("walkers", started, Duration::from_secs(300));
}

#[test]
fn server_monitor_commands() {
    let dir = memlife_testkit::process::tempdir("fuzz-monitor");
    let mut bridge = harness::monitor_bridge(
        &testdata("heap4-fragmentation.elf"),
        &testdata("heap4-fragmentation.mlsnap"),
        &dir,
    );
    // Every command with its argument shapes, and the kinds of paths a hostile client sends.
    let seeds: Vec<Vec<u8>> = [
        "help",
        "heap",
        "heap blocks",
        "heap json",
        "allocator",
        "dump",
        "dump d.json",
        "dump ../escape.json",
        "dump /tmp/abs.json",
        "dump-on pvPortMalloc",
        "dump-on vPortFree d-{n}.json",
        "dump-off pvPortMalloc",
        "dump-off nothing",
        "phases",
        "report out",
        "audit missing.rhai",
        "reset",
        "reset halt",
        "  heap\t json \n",
        "\u{e9}\u{ff}",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    let started = Instant::now();
    let mut succeeded = 0;
    cases(0x5eed_0005, 3_000, |i, rng| {
        let seed = &seeds[i as usize % seeds.len()];
        // One line in four intact, so the commands themselves run, not only the parser's errors.
        let line = if rng.below(4) == 0 {
            seed.clone()
        } else {
            mutate(seed, rng)
        };
        succeeded += usize::from(harness::monitor(&mut bridge, &line));
    });
    bounded("monitor", started, Duration::from_secs(300));
    assert!(succeeded >= 100, "only {succeeded} commands succeeded");
    // Nothing was written outside the dump directory: every dump the fuzzer asked for is in it.
    assert!(!dir.join("..").join("escape.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn server_packet_path() {
    let dir = memlife_testkit::process::tempdir("fuzz-packets");
    let mut bridge = harness::live_bridge(
        &testdata("heap4-fragmentation.elf"),
        &testdata("heap4-fragmentation.mlsnap"),
        &dir,
    );
    let hex = |s: &str| -> String { s.bytes().map(|b| format!("{b:02x}")).collect() };
    // What gdb sends at attach, then reads, writes, breakpoints, run control, monitor commands
    // and what a hostile client adds: each seed a session of NUL-separated payloads (mode 0),
    // or raw bytes (mode 1).
    let sessions: Vec<Vec<String>> = vec![
        vec![
            "qSupported:multiprocess+;swbreak+;hwbreak+;qRelocInsn+;xmlRegisters=arm".into(),
            "QStartNoAckMode".into(),
            "qXfer:features:read:target.xml:0,ffb".into(),
            "qXfer:features:read:target.xml:7f0,ffb".into(),
            "?".into(),
            "qAttached".into(),
            "qC".into(),
            "qfThreadInfo".into(),
            "g".into(),
            "p0f".into(),
        ],
        vec![
            "m20000000,40".into(),
            "m0,4".into(),
            "mfffffffc,10".into(),
            "M20000000,4:00000000".into(),
            "X20000000,2:ab".into(),
            "P0f=01000008".into(),
            "G00".into(),
        ],
        vec![
            "Z0,8000100,2".into(),
            "Z1,8000100,2".into(),
            "Z2,20000000,4".into(),
            "z0,8000100,2".into(),
            "vCont?".into(),
            "vCont;c".into(),
            "s".into(),
            "c".into(),
        ],
        vec![
            format!("qRcmd,{}", hex("heap")),
            format!("qRcmd,{}", hex("heap json")),
            format!("qRcmd,{}", hex("allocator")),
            format!("qRcmd,{}", hex("dump d.json")),
            format!("qRcmd,{}", hex("dump ../escape.json")),
            format!("qRcmd,{}", hex("dump-on pvPortMalloc")),
            format!("qRcmd,{}", hex("\u{1b}[2J")),
            "qRcmd,zz".into(),
        ],
        vec!["D".into(), "k".into(), "vKill;1".into(), "qSymbol::".into()],
    ];
    let seeds: Vec<Vec<u8>> = sessions
        .iter()
        .map(|payloads| {
            let mut v = vec![0u8];
            v.extend(payloads.join("\0").into_bytes());
            v
        })
        .chain([
            b"\x01+$m20000000,4#fd\x03$g#67".to_vec(),
            b"\x01$qRcmd,68656170#f0$D#44".to_vec(),
        ])
        .collect();
    let started = Instant::now();
    let mut answered = 0usize;
    cases(0x5eed_0006, 3_000, |i, rng| {
        let seed = &seeds[i as usize % seeds.len()];
        // One session in four intact, so the handlers themselves run.
        let data = if rng.below(4) == 0 {
            seed.clone()
        } else {
            mutate(seed, rng)
        };
        answered += harness::server_packets(&mut bridge, &data);
    });
    bounded("server_packets", started, Duration::from_secs(300));
    assert!(
        answered >= 100_000,
        "the server answered only {answered} bytes"
    );
    assert!(!dir.join("..").join("escape.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The TFLM fixture: the firmware build's ELF and the committed snapshot of it.
fn tflm_fixture() -> harness::TflmFixture {
    harness::tflm_fixture(
        &memlife_testkit::firmware::elf("tflm", "healthy"),
        &fixtures("tflm").join("tflm-healthy.mlsnap"),
    )
}

/// The committed fixtures of a crate: `debugger/CRATE/testdata`.
fn fixtures(krate: &str) -> PathBuf {
    memlife_testkit::firmware::repo()
        .join("debugger")
        .join(krate)
        .join("testdata")
}

/// `image` with damage where the parsers look (`hot`: image offset ranges), or anywhere: words
/// replaced by small, huge, random values or pointers into the hot ranges (lists and chains
/// that loop or lead astray), bytes flipped, a hot range cut short by zeros.
fn damage(image: &mut [u8], hot: &[(usize, usize)], base: u64, rng: &mut Xorshift) {
    let len = image.len();
    let pick = |rng: &mut Xorshift| -> usize {
        let at = match hot.get(rng.below(hot.len() as u64 + 1) as usize) {
            Some(&(s, e)) if e > s => s + rng.below((e - s) as u64) as usize,
            _ => rng.below(len as u64) as usize,
        };
        at.min(len.saturating_sub(4)) & !3
    };
    for _ in 0..=rng.below(12) {
        let at = pick(rng);
        let word = match rng.below(6) {
            0 => rng.below(64) as u32,
            1 => u32::MAX,
            2 => rng.next_u32(),
            // A pointer to another hot word, or just past the image.
            3 => (base + pick(rng) as u64) as u32,
            4 => (base + len as u64 + rng.below(64)) as u32,
            _ => {
                image[at] ^= 1 << rng.below(8);
                continue;
            }
        };
        image[at..at + 4].copy_from_slice(&word.to_le_bytes());
    }
    if rng.below(16) == 0
        && let Some(&(s, e)) = hot.get(rng.below(hot.len() as u64) as usize)
    {
        let cut = s + rng.below((e - s).max(1) as u64) as usize;
        image[cut.min(len)..e.min(len)].fill(0);
    }
}

/// The image offsets of `(address, len)` ranges that lie in `template`.
fn hot_offsets(template: &Snapshot, ranges: &[(u64, u64)]) -> Vec<(usize, usize)> {
    ranges
        .iter()
        .filter_map(|&(a, n)| {
            let s = harness::image::offset_of(template, a)?;
            Some((s, s + n as usize))
        })
        .collect()
}

#[test]
fn tflm_arenas_and_plans_over_arbitrary_memory() {
    let f = tflm_fixture();
    let real = harness::image::image_of(&f.template, &f.template);
    // The fixture itself: one arena, its plan, as `memlife heap` reads it.
    let whole = harness::tflm(&f, &real);
    assert_eq!((whole.arenas, whole.plans), (1, 1), "{whole:?}");
    assert!(whole.tensors >= 8, "{whole:?}");
    // Where the parsers look: the arena allocator, the arena, the interpreter, the model's
    // root tables.
    let arenas = harness::tflm_arenas(&f, &mut f.template.clone()).unwrap();
    let mut ranges = Vec::new();
    for a in &arenas {
        ranges.push((a.allocator.address, 64));
        ranges.push((a.start, a.size));
        if let Some(i) = &a.interpreter {
            ranges.push((i.address, 256));
            ranges.push((i.model.saturating_sub(64), 4096));
        }
    }
    let hot = hot_offsets(&f.template, &ranges);
    let base = f.template.regions[0].start;
    let started = Instant::now();
    let (mut found, mut planned) = (0, 0);
    cases(0x5eed_0007, 600, |_, rng| {
        let data = match rng.below(8) {
            // Noise, or the real RAM cut short (the template's bytes after the cut).
            0 => {
                let n = 1 + rng.below(4096) as usize;
                rng.bytes(n)
            }
            1 => real[..rng.below(real.len() as u64) as usize].to_vec(),
            _ => {
                let mut d = real.clone();
                damage(&mut d, &hot, base, rng);
                d
            }
        };
        let reach = harness::tflm(&f, &data);
        found += usize::from(reach.arenas > 0);
        planned += usize::from(reach.plans > 0);
    });
    bounded("tflm", started, Duration::from_secs(300));
    // Most damage leaves an arena to find and a plan to check: the cases reach the plan, not
    // only the scan's refusals.
    assert!(
        found >= 300 && planned >= 200,
        "{found} arenas, {planned} plans"
    );
}

#[test]
fn rtos_tasks_over_arbitrary_memory() {
    let boards = harness::RTOS_BOARDS;
    let all = harness::rtos_fixtures(&fixtures("rtos"));
    let started = Instant::now();
    let mut read = 0;
    for (index, f) in all.iter().enumerate() {
        let seed = harness::rtos_seed(index as u8, f, &f.template);
        let whole = harness::rtos(&all, &seed);
        assert!(whole >= 10, "{}: {whole} tasks", boards[index]);
        // Where the parsers look: the kernel's lists, each TCB, each saved context and the
        // bottom of each stack (the high-water mark).
        let tasks = harness::rtos_tasks(
            f,
            &mut f.template.clone(),
            harness::snapshot_registers(&f.template).as_ref(),
        )
        .unwrap();
        let layout = f.kernel.layout();
        let mut ranges = vec![
            (layout.current_tcb.addr, layout.current_tcb.size),
            (layout.ready_lists.addr, layout.ready_lists.size),
            (layout.delayed[0].addr, layout.delayed[0].size),
            (layout.delayed[1].addr, layout.delayed[1].size),
            (layout.pending_ready.addr, layout.pending_ready.size),
        ];
        ranges.extend(layout.termination.iter().map(|g| (g.addr, g.size)));
        ranges.extend(layout.suspended.iter().map(|g| (g.addr, g.size)));
        for t in &tasks.tasks {
            ranges.push((t.tcb, layout.tcb.size));
            ranges.push((t.top_of_stack, 0xd0));
            ranges.push((t.stack.low, 64));
        }
        let hot = hot_offsets(&f.template, &ranges);
        let base = f.template.regions[0].start;
        let head = harness::REGISTER_BYTES + 1;
        cases(0x5eed_0008 + index as u64, 500, |_, rng| {
            let mut data = seed.clone();
            match rng.below(8) {
                // No core registers, or the core's with a random exception number and sp.
                0 => data[0] &= !2,
                1 => {
                    data[1 + 64..1 + 68].copy_from_slice(&rng.next_u32().to_le_bytes());
                    let sp = (base + rng.below(0x3_0000)) as u32;
                    data[1 + 52..1 + 56].copy_from_slice(&sp.to_le_bytes());
                }
                2 => data.truncate(head + rng.below((data.len() - head) as u64) as usize),
                _ => {}
            }
            let head = head.min(data.len());
            let (_, image) = data.split_at_mut(head);
            damage(image, &hot, base, rng);
            read += harness::rtos(&all, &data);
        });
    }
    bounded("rtos", started, Duration::from_secs(300));
    // Most damage leaves tasks to read: the cases reach the TCBs, frames and stacks.
    assert!(read >= 5_000, "only {read} tasks read in all");
}

/// Inputs the fuzzers found crashes with (`fuzz/regressions`), through every harness.
#[test]
fn regressions_found_by_fuzzing() {
    let dir = memlife_testkit::firmware::repo().join("fuzz/regressions");
    let scratch = memlife_testkit::process::tempdir("fuzz-regressions");
    let mut bridge = harness::live_bridge(
        &testdata("heap4-fragmentation.elf"),
        &testdata("heap4-fragmentation.mlsnap"),
        &scratch,
    );
    let tflm = tflm_fixture();
    let rtos = harness::rtos_fixtures(&fixtures("rtos"));
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        harness::rsp_packet(&data);
        harness::snapshot(&data);
        harness::elf(&data);
        harness::server_packets(&mut bridge, &data);
        harness::tflm(&tflm, &data);
        harness::rtos(&rtos, &data);
        n += 1;
    }
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(n >= 1, "no regression inputs in {}", dir.display());
}
