//! `memlife serve` end to end: gdb-multiarch against memlife against QEMU.
#![allow(clippy::unwrap_used, clippy::panic)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// A running `memlife serve` (common's [`serve::Served`]) and its `--dump-dir`.
struct Server {
    served: serve::Served,
    addr: String,
    /// Its `--dump-dir`: clients' dumps and reports land here.
    dumps: PathBuf,
}

impl Server {
    /// A server whose dump directory is a fresh one and whose scripts come from `scripts/`.
    fn start(elf: &Path) -> Server {
        Server::start_with(elf, &[], &[])
    }

    /// [`Server::start`] with more flags and environment variables.
    fn start_with(elf: &Path, flags: &[&str], env: &[(&str, &str)]) -> Server {
        // One directory per server: the tests of this file run in parallel in one process.
        static SERVERS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = SERVERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dumps = tempdir(&format!("serve-dumps-{n}"));
        let served = serve::start_with(elf, &["--qemu", "netduinoplus2"], |cmd| {
            cmd.arg("--dump-dir")
                .arg(&dumps)
                .arg("--script-dir")
                .arg(repo().join("scripts"))
                .args(flags)
                .envs(env.iter().copied());
        });
        Server {
            addr: served.addr.clone(),
            served,
            dumps,
        }
    }

    fn log(&self) -> String {
        self.served.log()
    }

    /// Waits for the server to end (after `monitor shutdown`) and checks it ended well.
    fn wait_exit(mut self) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.served.guard.0.try_wait().unwrap() {
                assert!(status.success(), "memlife serve failed: {}", self.log());
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "memlife serve did not end after `monitor shutdown`: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn all_output(o: &Output) -> String {
    format!("{}{}", stdout(o), stderr(o))
}

/// The number after `prefix` on the first line that starts with it.
fn number_after(text: &str, prefix: &str) -> u64 {
    text.lines()
        .find_map(|l| l.trim_start().strip_prefix(prefix))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `{prefix}` line in:\n{text}"))
}

#[test]
fn gdb_drives_memlife_serve_on_the_leak_firmware() {
    drive("leak-on-switch", 368);
}

#[test]
fn gdb_drives_memlife_serve_on_the_healthy_firmware() {
    drive("healthy", 0);
}

/// The issue's session; `leak` is the expected drop of free bytes between dumps.
fn drive(scenario: &str, leak: u64) {
    let elf = elf("heap4", scenario);
    let server = Server::start(&elf);
    let dir = server.dumps.clone();
    let dump_on = "monitor dump-on model_release rel-{n}.json".to_string();
    let out = gdb_batch(
        &elf,
        &server.addr,
        &[
            "info registers xpsr",
            "break model_release",
            "continue",
            "print xFreeBytesRemaining",
            "monitor heap",
            "watch xFreeBytesRemaining",
            "continue",
            "monitor no_such_cmd",
            "delete 2",
            &dump_on,
            "continue",
            "continue",
            "continue",
            "monitor dump-off model_release",
            "detach",
        ],
    );
    let text = all_output(&out);
    assert!(text.contains("xpsr"), "{text}");
    assert!(text.contains("Breakpoint 1, model_release"), "{text}");
    let gdb_free = number_after(&text, "$1 = ");
    let monitor_free = number_after(&text, "free ");
    assert_eq!(gdb_free, monitor_free, "{text}");
    assert!(text.contains("freertos-heap4: "), "{text}");
    assert!(
        text.contains("Hardware watchpoint 2: xFreeBytesRemaining"),
        "{text}"
    );
    assert!(text.contains("Old value = "), "{text}");
    assert!(text.contains("New value = "), "{text}");
    assert!(text.contains("unknown monitor command"), "{text}");
    assert!(text.contains("monitor help"), "{text}");
    assert!(text.contains("dumping the heap to"), "{text}");
    assert!(
        text.contains("no more dumps at model_release (3 written)"),
        "{text}"
    );

    let mut frees = Vec::new();
    for n in 1..=3 {
        let path = dir.join(format!("rel-{n}.json"));
        let json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}\n{text}\n{}", path.display(), server.log())),
        )
        .unwrap();
        frees.push(json["total_free"].as_u64().unwrap());
    }
    assert!(!dir.join("rel-4.json").exists());
    assert_eq!(frees[0] - frees[1], leak, "{frees:?}");
    assert_eq!(frees[1] - frees[2], leak, "{frees:?}");

    // A second client on the same memlife, after the first detached.
    let out = gdb_batch(
        &elf,
        &server.addr,
        &[
            "monitor allocator",
            "monitor dump-off model_release",
            "monitor phases",
            "monitor report early",
            // The leak audit, run inside the gdb session (it takes a while: 60 lifecycles).
            "set remotetimeout 600",
            &format!(
                "monitor audit {}",
                repo().join("scripts/leak.rhai").display()
            ),
            "monitor phases",
            "monitor report report",
            "monitor shutdown",
        ],
    );
    let text = all_output(&out);
    assert!(text.contains("allocator  freertos-heap4"), "{text}");
    assert!(text.contains("no dump-on is set"), "{text}");
    assert!(text.contains("no phases recorded"), "{text}");
    if leak > 0 {
        let lost = format!("{leak} B lost per switch");
        assert!(text.contains("FAIL leak") && text.contains(&lost), "{text}");
    } else {
        assert!(text.contains("PASS leak"), "{text}");
    }
    assert!(
        text.contains("above before), "),
        "phases after the audit: {text}"
    );
    // `monitor report`: refused before any audit, then the audit's page.
    assert!(text.contains("no audit has run in this session"), "{text}");
    assert!(!dir.join("early").exists());
    let page = std::fs::read_to_string(dir.join("report/index.html"))
        .unwrap_or_else(|e| panic!("monitor report wrote no page: {e}\n{text}"));
    assert!(text.contains("report written to"), "{text}");
    assert!(page.contains("memlife audit: leak.rhai"), "page title");
    assert!(
        page.contains(&format!("<dd>{}</dd>", elf.display())),
        "firmware fact"
    );
    if leak > 0 {
        assert!(page.contains("<span class=\"verdict fail\">FAIL</span>"));
        assert!(
            page.contains("<tr class=\"leak\">"),
            "leaked blocks in the heap map"
        );
    } else {
        assert!(page.contains("flat over 10 releases: no leak"));
    }
    let log = server.log();
    assert_eq!(log.matches("connected").count(), 2, "{log}");
    server.wait_exit();
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--walk` and `MEMLIFE_LINK_MODEL` reach the server's heap walks as they reach `memlife heap`'s
/// (they travel with the server's session, not in a setting of the process).
#[test]
fn serve_walks_the_heap_as_its_walk_flag_and_link_model_say() {
    let elf = elf("heap4", "fragmentation");
    for (flags, env, wanted) in [
        (["--walk", "sparse"], None, "(sparse walk)"),
        (["--walk", "bulk"], None, "(bulk walk)"),
        // On a 1 ms, 500 KB/s probe the heap's few dozen blocks are cheaper one by one.
        (
            ["--walk", "auto"],
            Some(("MEMLIFE_LINK_MODEL", "1000:500000")),
            "(sparse walk)",
        ),
    ] {
        let env: Vec<(&str, &str)> = env.into_iter().collect();
        let server = Server::start_with(&elf, &flags, &env);
        let out = gdb_batch(
            &elf,
            &server.addr,
            &[
                "break model_release",
                "continue",
                "monitor heap",
                "monitor shutdown",
            ],
        );
        let text = all_output(&out);
        assert!(text.contains("freertos-heap4: "), "{flags:?}: {text}");
        assert!(text.contains(wanted), "{flags:?} {env:?}: {text}");
        let dumps = server.dumps.clone();
        server.wait_exit();
        let _ = std::fs::remove_dir_all(&dumps);
    }
}

#[test]
fn serve_waits_for_monitor_reset_after_the_firmware_exits_with_no_client() {
    // One lifecycle, then SYS_EXIT: QEMU ends with the firmware.
    let elf = memlife_testkit::firmware::exiting_elf("heap4", "healthy", 1);
    let server = Server::start(&elf);
    // The first client only lets it run (detach resumes the core).
    let out = gdb_batch(&elf, &server.addr, &["detach"]);
    assert!(out.status.success(), "{}", all_output(&out));
    let start = Instant::now();
    while !server.log().contains("the firmware exited with status 0") {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no exit seen: {}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The server is still there; the next client is told, and `monitor reset` starts it again.
    let out = gdb_batch(
        &elf,
        &server.addr,
        &[
            "monitor heap",
            "monitor reset halt",
            "flushregs",
            "monitor heap",
            "info registers pc",
            "monitor shutdown",
        ],
    );
    let text = all_output(&out);
    assert!(
        text.contains("the firmware exited with status 0; `monitor reset` starts it again"),
        "{text}\n{}",
        server.log()
    );
    assert!(
        text.contains("started again, halted at the reset vector"),
        "{text}"
    );
    assert!(text.contains("allocator  freertos-heap4"), "{text}");
    assert!(
        text.contains("Reset_Handler"),
        "pc back at the reset vector: {text}"
    );
    server.wait_exit();
}

/// `$body#checksum`.
fn packet(body: &str) -> String {
    let sum = body.bytes().fold(0u8, |a, b| a.wrapping_add(b));
    format!("${body}#{sum:02x}")
}

/// A function's address, as gdb reads it from the ELF.
fn function_address(elf: &Path, name: &str) -> u64 {
    let mut cmd = std::process::Command::new("gdb-multiarch");
    cmd.args(["-batch", "-nx", "-ex"])
        .arg(format!("info address {name}"))
        .arg(elf);
    let out = run_with_timeout(cmd, Duration::from_secs(60));
    let text = stdout(&out);
    let hex = text
        .split("at address 0x")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_hexdigit()).next())
        .unwrap_or_else(|| panic!("no address for {name}: {text}"));
    u64::from_str_radix(hex, 16).unwrap()
}

fn read_until(stream: &mut TcpStream, wanted: &[&str], timeout: Duration) -> String {
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let start = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while start.elapsed() < timeout {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
        let text = String::from_utf8_lossy(&got);
        if wanted.iter().any(|w| text.contains(w)) {
            return text.into_owned();
        }
    }
    panic!(
        "none of {wanted:?} within {timeout:?}; got {:?}",
        String::from_utf8_lossy(&got)
    );
}

#[test]
fn serve_survives_bad_clients_and_interrupts() {
    let elf = elf("heap4", "leak-on-switch");
    let server = Server::start(&elf);

    // Garbage and a packet with a wrong checksum, then a hang-up.
    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.write_all(b"garbage}}$qSupported#00$m0,4#ff").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    drop(s);

    // A client that vanishes in the middle of a packet.
    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.write_all(b"$qSupported:multipro").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    drop(s);

    // A raw client: continue, interrupt with Ctrl-C, get a stop reply, detach.
    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.write_all(b"+$?#3f").unwrap();
    read_until(&mut s, &["$S", "$T"], Duration::from_secs(10));
    s.write_all(b"+$c#63").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    s.write_all(&[0x03]).unwrap();
    let reply = read_until(&mut s, &["$S02", "$T02"], Duration::from_secs(10));
    assert!(reply.contains("02"), "{reply}");
    s.write_all(b"+$D#44").unwrap();
    read_until(&mut s, &["$OK"], Duration::from_secs(10));
    drop(s);

    // A client that vanishes with a breakpoint inserted and the core running: memlife removes
    // the breakpoint, so the next client never stops there.
    let run = function_address(&elf, "inference_run");
    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.write_all(format!("+{}", packet(&format!("Z0,{run:x},2"))).as_bytes())
        .unwrap();
    read_until(&mut s, &["$OK"], Duration::from_secs(10));
    s.write_all(b"+$c#63").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    drop(s);

    // dump-on where gdb has no breakpoint: memlife dumps and continues on its own.
    let dir = server.dumps.clone();
    let dump_on = "monitor dump-on model_release t-{n}.json".to_string();
    let out = gdb_batch(
        &elf,
        &server.addr,
        &[
            "break model_switch",
            "continue",
            &dump_on,
            "continue",
            "continue",
            "monitor dump-off model_release",
            "monitor allocator",
            "monitor heap blocks",
            // 32 bytes read at once, the last 16 past the end of RAM (0x20030000).
            "print *(unsigned char(*)[32])0x2002fff0",
            "monitor shutdown",
        ],
    );
    let text = all_output(&out);
    assert_eq!(
        text.matches("Breakpoint 1, model_switch").count(),
        3,
        "{text}"
    );
    assert!(!text.contains(", model_release ("), "{text}");
    assert!(
        text.contains("no more dumps at model_release (2 written)"),
        "{text}"
    );
    assert!(dir.join("t-2.json").is_file());
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        text.contains("allocator  freertos-heap4"),
        "{text}\n{}",
        server.log()
    );
    assert!(text.contains("address"), "{text}");
    // gdb got the 16 readable bytes and then learned where memory ends, instead of an error
    // for the whole read.
    assert!(
        text.contains("Cannot access memory at address 0x20030000"),
        "{text}"
    );
    assert!(!text.contains("address 0x2002fff0"), "{text}");
    server.wait_exit();
}

#[test]
fn serve_refuses_remote_listen_without_flag() {
    let elf = elf("heap4", "leak-on-switch");
    let out = run_memlife(&[
        "serve",
        "--elf",
        elf.to_str().unwrap(),
        "--qemu",
        "netduinoplus2",
        "--listen",
        "0.0.0.0:0",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--allow-remote"), "{}", stderr(&out));
}

/// The QEMU that memlife started, found among the processes of memlife's own process group.
fn qemu_of(memlife_pid: u32) -> Option<u32> {
    let pgid = memlife_pid.to_string();
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // pid (comm) state ppid pgrp ...: comm may hold spaces, so split after its ')'.
            let (comm, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
            let pgrp = rest.split_whitespace().nth(2)?;
            (pid != memlife_pid && pgrp == pgid && comm.starts_with("qemu-system")).then_some(pid)
        })
}

/// Whether a process still runs (a zombie waiting for its reaper does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.rsplit_once(") ")?.1.chars().next()?;
            Some(state != 'Z' && state != 'X')
        })
        .unwrap_or(false)
}

#[test]
fn killing_memlife_takes_its_qemu_down() {
    let server = Server::start(&elf("heap4", "healthy"));
    let pid = server.served.guard.0.id();
    let qemu =
        qemu_of(pid).unwrap_or_else(|| panic!("no QEMU in memlife's group: {}", server.log()));
    assert!(running(qemu));
    // SIGKILL to memlife alone: no destructor runs, so only the parent-death signal can end QEMU.
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let start = Instant::now();
    while running(qemu) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "QEMU {qemu} outlived the memlife {pid} that started it"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `monitor heap` on the ESP-IDF heap: the same free bytes gdb reads from the two heaps'
/// `multi_heap_info.free_bytes`, and one line per region with its capabilities.
#[test]
fn monitor_heap_shows_every_esp_idf_region() {
    let elf = elf("tlsf", "fragmentation");
    let server = Server::start(&elf);
    let out = gdb_batch(
        &elf,
        &server.addr,
        &[
            "break model_release",
            "continue",
            "continue",
            "print registered_heaps.slh_first->heap->free_bytes + registered_heaps.slh_first->next.sle_next->heap->free_bytes",
            "monitor heap",
            "detach",
        ],
    );
    let text = all_output(&out);
    let gdb_free = number_after(&text, "$1 = ");
    let monitor_free = number_after(&text, "free ");
    assert_eq!(gdb_free, monitor_free, "{text}");
    assert!(text.contains("allocator  esp-idf-tlsf (ok)"), "{text}");
    let regions: Vec<&str> = text.lines().filter(|l| l.starts_with("region ")).collect();
    assert_eq!(regions.len(), 2, "{text}");
    assert!(
        regions[0].contains(" DRAM ") && regions[0].contains("DMA|INTERNAL|DEFAULT"),
        "{text}"
    );
    assert!(
        regions[1].contains(" PSRAM ") && regions[1].contains("SPIRAM"),
        "{text}"
    );
    assert!(text.contains("alloc max "), "{text}");
}

/// A gdb client cannot make the server write outside its dump directory, nor read a file that
/// is not a script inside its script directories (and never sees such a file's content).
#[test]
fn serve_keeps_clients_inside_its_directories() {
    let elf = elf("heap4", "healthy");
    let server = Server::start(&elf);
    let outside = tempdir("serve-outside");
    std::os::unix::fs::symlink(&outside, server.dumps.join("link")).unwrap();
    let secret = outside.join("secret.rhai");
    std::fs::write(&secret, "let x = 1;\n").unwrap();
    let not_a_script = outside.join("hostname");
    std::fs::write(&not_a_script, "secretword here\n").unwrap();
    let out = gdb_batch(
        &elf,
        &server.addr,
        &[
            &format!("monitor dump {}", outside.join("abs.json").display()),
            "monitor dump ../up.json",
            "monitor dump link/through.json",
            &format!(
                "monitor dump-on model_release {}/x-{{n}}.json",
                outside.display()
            ),
            "monitor report link/report",
            &format!("monitor audit {}", not_a_script.display()),
            &format!("monitor audit {}", secret.display()),
            &format!("monitor audit {}", outside.join("missing.rhai").display()),
            "monitor dump inside.json",
            "monitor shutdown",
        ],
    );
    let text = all_output(&out);
    assert!(!text.contains("secretword"), "{text}");
    assert!(text.contains("is not a Rhai script"), "{text}");
    assert!(text.contains("outside the script directories"), "{text}");
    assert!(text.contains("relative path without `..`"), "{text}");
    // A file that is not a script, a script outside the script directories and no file at
    // all get the same words: the client learns nothing of which host paths exist.
    let refusals: Vec<String> = [&not_a_script, &secret, &outside.join("missing.rhai")]
        .iter()
        .map(|p| {
            let shown = p.display().to_string();
            text.lines()
                .find(|l| l.contains(&shown))
                .unwrap_or_else(|| panic!("no refusal of {shown}: {text}"))
                .replace(&shown, "PATH")
        })
        .collect();
    assert_eq!(refusals[0], refusals[1], "{text}");
    assert_eq!(refusals[1], refusals[2], "{text}");
    assert!(
        std::fs::read_dir(&outside).unwrap().count() == 2,
        "only the two planted files are outside: {text}"
    );
    assert!(!server.dumps.parent().unwrap().join("up.json").exists());
    assert!(server.dumps.join("inside.json").is_file(), "{text}");
    server.wait_exit();
}

/// A client that stops in the middle of a packet, or sends one without end, is dropped (the
/// packet deadline, the packet size bound) and the next client is served.
#[test]
fn a_stalled_or_endless_client_does_not_block_the_next_one() {
    let elf = elf("heap4", "healthy");
    let server = Server::start(&elf);
    let started = Instant::now();
    // Stalls mid-packet and stays connected.
    let mut stalled = TcpStream::connect(&server.addr).unwrap();
    stalled.write_all(b"+$qSupported:multipro").unwrap();
    let mut next = TcpStream::connect(&server.addr).unwrap();
    next.write_all(format!("+{}", packet("?")).as_bytes())
        .unwrap();
    let text = read_until(&mut next, &["$T", "$S"], Duration::from_secs(30));
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(20),
        "served after {waited:?}: {text}"
    );
    drop(next);
    drop(stalled);
    // An endless packet: refused once it outgrows the buffer, long before it ends.
    let mut endless = TcpStream::connect(&server.addr).unwrap();
    endless.write_all(b"+$").unwrap();
    let started = Instant::now();
    let chunk = vec![b'a'; 64 * 1024];
    let mut sent = 0usize;
    while sent < 100 << 20 {
        if endless.write_all(&chunk).is_err() {
            break;
        }
        sent += chunk.len();
    }
    assert!(sent < 100 << 20, "the server read 100 MB of one packet");
    assert!(started.elapsed() < Duration::from_secs(20));
    drop(endless);
    let mut last = TcpStream::connect(&server.addr).unwrap();
    last.write_all(format!("+{}", packet("?")).as_bytes())
        .unwrap();
    read_until(&mut last, &["$T", "$S"], Duration::from_secs(30));
    assert!(server.log().contains("went away"), "{}", server.log());
}

/// `--listen unix:PATH`: a socket only its owner may use, which gdb-multiarch reaches with
/// `target remote PATH`; removed when the server ends. An existing file is never replaced.
#[test]
fn serve_listens_on_an_owner_only_unix_socket() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let elf = elf("heap4", "healthy");
    let dir = tempdir("serve-unix");
    let socket = dir.join("gdb.sock");
    let mut cmd = memlife();
    cmd.args(["serve", "--elf"])
        .arg(&elf)
        .args(["--qemu", "netduinoplus2", "--listen"])
        .arg(format!("unix:{}", socket.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut guard = ChildGuard(cmd.spawn().unwrap());
    let started = Instant::now();
    while !socket.exists() {
        assert!(started.elapsed() < Duration::from_secs(60), "no socket");
        std::thread::sleep(Duration::from_millis(50));
    }
    let meta = std::fs::symlink_metadata(&socket).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let out = gdb_batch(
        &elf,
        socket.to_str().unwrap(),
        &["monitor allocator", "monitor shutdown"],
    );
    let text = all_output(&out);
    assert!(text.contains("allocator  freertos-heap4"), "{text}");
    let status = loop {
        if let Some(s) = guard.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "serve did not end"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
    assert!(!socket.exists(), "the socket file stays behind");
    // A path that exists is refused, not replaced.
    std::fs::write(&socket, "someone's file").unwrap();
    let out = run_memlife(&[
        "serve",
        "--elf",
        elf.to_str().unwrap(),
        "--qemu",
        "netduinoplus2",
        "--listen",
        &format!("unix:{}", socket.display()),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("the path exists"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&socket).unwrap(), "someone's file");
}

/// A raw client's `monitor` command: the console text of its `O` packets, up to the final
/// `OK` or error reply.
fn raw_monitor(s: &mut TcpStream, command: &[u8], timeout: Duration) -> String {
    let hex: String = command.iter().map(|b| format!("{b:02x}")).collect();
    s.write_all(format!("+{}", packet(&format!("qRcmd,{hex}"))).as_bytes())
        .unwrap();
    let reply = read_until(s, &["$OK#9a", "$E"], timeout);
    console_text(&reply)
}

/// The text of the `O` packets in `reply`.
fn console_text(reply: &str) -> String {
    let mut out = Vec::new();
    for frame in reply.split('$').skip(1) {
        let Some(hex) = frame.split('#').next().and_then(|p| p.strip_prefix('O')) else {
            continue;
        };
        if hex == "K" {
            continue;
        }
        for i in (0..hex.len() / 2 * 2).step_by(2) {
            out.push(u8::from_str_radix(&hex[i..i + 2], 16).unwrap());
        }
    }
    String::from_utf8(out).unwrap()
}

/// The red team's idle client: one that connects and sends nothing held every other client off
/// forever. Now it is dropped after the handshake time; while it is served, four more wait in
/// line and the next is refused with a reason gdb prints; once the line is drained the next
/// client is served.
#[test]
fn an_idle_client_is_dropped_and_the_line_is_bounded() {
    let elf = elf("heap4", "healthy");
    let server = Server::start(&elf);
    let started = Instant::now();
    let idle = TcpStream::connect(&server.addr).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let waiting: Vec<TcpStream> = (0..4)
        .map(|_| TcpStream::connect(&server.addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut refused = TcpStream::connect(&server.addr).unwrap();
    refused
        .write_all(format!("+{}", packet("qSupported")).as_bytes())
        .unwrap();
    let text = read_until(&mut refused, &["$E."], Duration::from_secs(10));
    assert!(text.contains("memlife serve is busy"), "{text}");
    // The silent client is dropped after 10 s, the silent ones in line at once after it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !server
        .log()
        .contains("sent no packet within 10s of connecting")
    {
        assert!(Instant::now() < deadline, "{}", server.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    let mut next = TcpStream::connect(&server.addr).unwrap();
    next.write_all(format!("+{}", packet("?")).as_bytes())
        .unwrap();
    read_until(&mut next, &["$T", "$S"], Duration::from_secs(15));
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(25), "served after {waited:?}");
    let log = server.log();
    assert!(log.contains("refused gdb client"), "{log}");
    assert!(log.matches("waits: another client").count() >= 4, "{log}");
    drop((idle, waiting));
}

/// `monitor audit` writes its dumps under DUMP_DIR/memlife-out: a link planted there is refused,
/// and nothing lands where it points.
#[test]
fn monitor_audit_dumps_never_follow_a_planted_memlife_out() {
    let elf = elf("heap4", "healthy");
    let scripts = tempdir("serve-scripts");
    std::fs::write(
        scripts.join("dumps.rhai"),
        "let t = target();\nlet h = t.heap();\ndump(h, \"planted.json\");\n",
    )
    .unwrap();
    let server = Server::start_with(&elf, &["--script-dir", scripts.to_str().unwrap()], &[]);
    let outside = tempdir("serve-memlife-out-outside");
    std::os::unix::fs::symlink(&outside, server.dumps.join("memlife-out")).unwrap();
    let out = gdb_batch(
        &elf,
        &server.addr,
        &[
            &format!("monitor audit {}", scripts.join("dumps.rhai").display()),
            "monitor shutdown",
        ],
    );
    let text = all_output(&out);
    assert!(text.contains("symbolic link"), "{text}");
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "written through the link: {text}"
    );
    server.wait_exit();
}

/// The red team's 384 files in 15 s: a dump-on ends when its client leaves, and after
/// --max-dumps dumps while it stays.
#[test]
fn dump_on_is_bounded_and_ends_with_its_client() {
    let elf = elf("heap4", "leak-on-switch");
    let server = Server::start_with(&elf, &["--max-dumps", "2"], &[]);
    let dir = server.dumps.clone();
    let out = gdb_batch(
        &elf,
        &server.addr,
        &[
            "break model_switch",
            "monitor dump-on model_release capped-{n}.json",
            "continue",
            "continue",
            "continue",
            "continue",
            "continue",
            "monitor dump-off model_release",
            "delete",
            "monitor dump-on model_release gone-{n}.json",
            "detach",
        ],
    );
    let text = all_output(&out);
    assert_eq!(
        text.matches("Breakpoint 1, model_switch").count(),
        5,
        "{text}"
    );
    assert!(text.contains("2 at most"), "{text}");
    assert!(text.contains("no dump-on is set"), "{text}");
    // The client left with its dump-on set; the firmware runs on.
    std::thread::sleep(Duration::from_secs(3));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["capped-1.json", "capped-2.json"],
        "{text}\n{}",
        server.log()
    );
    let log = server.log();
    assert!(
        log.contains("no more dumps at model_release (2 written): as many as one dump-on writes (--max-dumps)"),
        "{log}"
    );
    assert!(
        log.contains(
            "no more dumps at model_release (0 written): the gdb client that asked for them left"
        ),
        "{log}"
    );
}

/// A long `monitor audit` stops on the client's interrupt byte (breakpoints removed, core
/// halted, the reply says so), and on its deadline (--audit-deadline).
#[test]
fn monitor_audit_stops_on_interrupt_and_at_its_deadline() {
    let elf = elf("heap4", "leak-on-switch");
    let server = Server::start_with(&elf, &["--audit-deadline", "4"], &[]);
    let leak = repo().join("scripts/leak.rhai");
    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.write_all(format!("+{}", packet("?")).as_bytes()).unwrap();
    read_until(&mut s, &["$T", "$S"], Duration::from_secs(10));
    let interrupter = {
        let mut s = s.try_clone().unwrap();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1500));
            s.write_all(&[0x03]).unwrap();
        })
    };
    let started = Instant::now();
    let text = raw_monitor(
        &mut s,
        format!("audit {}", leak.display()).as_bytes(),
        Duration::from_secs(60),
    );
    interrupter.join().unwrap();
    assert!(
        text.contains("audit stopped: interrupted by the client (0x03); memlife's breakpoints are removed and the target is halted"),
        "{text}\n{}",
        server.log()
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    // No breakpoint left: the core runs until the client's next interrupt, with no SIGTRAP
    // from an allocator breakpoint on the way (the firmware allocates all the time).
    s.write_all(b"+$c#63").unwrap();
    std::thread::sleep(Duration::from_millis(500));
    s.write_all(&[0x03]).unwrap();
    // The whole signal number, not just the packet's first byte (a read may end between).
    let stop = read_until(&mut s, &["$S02", "$T02"], Duration::from_secs(10));
    assert!(stop.contains("$T02") || stop.contains("$S02"), "{stop}");
    s.write_all(b"+$D#44").unwrap();
    read_until(&mut s, &["$OK"], Duration::from_secs(10));
    drop(s);
    // The deadline: the same audit runs past 4 s.
    let out = gdb_batch(
        &elf,
        &server.addr,
        &[
            "set remotetimeout 60",
            &format!("monitor audit {}", leak.display()),
            "monitor shutdown",
        ],
    );
    let text = all_output(&out);
    assert!(
        text.contains("audit stopped: it ran past its deadline of 4 s (--audit-deadline)"),
        "{text}\n{}",
        server.log()
    );
    server.wait_exit();
}

/// Counts the cycles until the firmware exits, resets, and counts them again.
const CYCLES_AROUND_A_RESET: &str = r#"let t = target();
let seen = 0;
while t.next_cycle() != () { seen += 1; }
print(`before the reset: ${seen} cycle(s), ${t.stopped().why}`);
t.reset();
let again = 0;
while t.next_cycle() != () { again += 1; }
print(`after the reset: ${again} cycle(s), ${t.stopped().why}`);
"#;

/// `monitor audit` on the QEMU `memlife serve` started (`--qemu`, and behind the virtual probe
/// with `--chip ... --probe qemu`): a reset after the firmware's exit starts a fresh QEMU, as
/// `memlife audit --qemu` does, and the firmware runs its cycles again (before, the reset
/// failed: a script error).
#[test]
fn monitor_audit_starts_the_qemu_serve_started_again_after_the_firmware_exits() {
    let elf = memlife_testkit::firmware::exiting_elf("heap4", "leak-on-switch", 3);
    let dir = tempdir("serve-audit-restart");
    let script = dir.join("again.rhai");
    std::fs::write(&script, CYCLES_AROUND_A_RESET).unwrap();
    let backends: [&[&str]; 2] = [
        &["--qemu", "netduinoplus2"],
        &["--chip", "STM32F405RGTx", "--probe", "qemu"],
    ];
    for backend in backends {
        let served = serve::start_with(&elf, backend, |cmd| {
            cmd.arg("--dump-dir")
                .arg(&dir)
                .arg("--script-dir")
                .arg(&dir);
        });
        let out = gdb_batch(
            &elf,
            &served.addr,
            &[
                "set remotetimeout 60",
                &format!("monitor audit {}", script.display()),
                "monitor shutdown",
            ],
        );
        let text = all_output(&out);
        assert!(
            text.contains("before the reset: 3 cycle(s), the firmware exited with status 0")
                && text.contains("after the reset: 3 cycle(s), the firmware exited with status 0"),
            "{backend:?}: {text}\n{}",
            served.log()
        );
        assert!(!text.contains("script error"), "{backend:?}: {text}");
    }
}

/// An escaper that passed U+202E and U+200B (and ESC into file names): the console shows them
/// escaped, and a file name holding any of them is refused.
#[test]
fn bidi_and_zero_width_characters_never_reach_gdb_or_a_file_name() {
    let elf = elf("heap4", "healthy");
    let server = Server::start(&elf);
    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.write_all(format!("+{}", packet("?")).as_bytes()).unwrap();
    read_until(&mut s, &["$T", "$S"], Duration::from_secs(10));
    let text = raw_monitor(
        &mut s,
        "heap\u{202e}\u{200b}x".as_bytes(),
        Duration::from_secs(10),
    );
    assert!(text.contains("unknown monitor command"), "{text}");
    assert!(text.contains("\\u{202e}\\u{200b}"), "{text}");
    for name in [
        "evil\u{202e}nosj.exe",
        "he\u{200b}ap.json",
        "esc\u{1b}[2J.json",
    ] {
        let text = raw_monitor(
            &mut s,
            format!("dump {name}").as_bytes(),
            Duration::from_secs(10),
        );
        assert!(
            text.contains("control, bidirectional or zero-width character"),
            "{name:?}: {text}"
        );
        assert!(
            !text
                .chars()
                .any(|c| matches!(c, '\u{202e}' | '\u{200b}' | '\u{1b}')),
            "{text:?}"
        );
    }
    assert_eq!(
        std::fs::read_dir(&server.dumps).unwrap().count(),
        0,
        "no dump was written"
    );
    raw_monitor(&mut s, b"shutdown", Duration::from_secs(10));
    s.write_all(b"+$D#44").unwrap();
    read_until(&mut s, &["$OK"], Duration::from_secs(10));
    drop(s);
    server.wait_exit();
}

/// `unix:PATH` is removed at the end only while it is still memlife's socket: a file put in
/// its place stays.
#[test]
fn a_replaced_unix_socket_is_left_alone() {
    let elf = elf("heap4", "healthy");
    let dir = tempdir("serve-unix-replaced");
    let socket = dir.join("gdb.sock");
    let mut cmd = memlife();
    cmd.args(["serve", "--elf"])
        .arg(&elf)
        .args(["--qemu", "netduinoplus2", "--listen"])
        .arg(format!("unix:{}", socket.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut guard = ChildGuard(cmd.spawn().unwrap());
    let started = Instant::now();
    while !socket.exists() {
        assert!(started.elapsed() < Duration::from_secs(60), "no socket");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::remove_file(&socket).unwrap();
    std::fs::write(&socket, "someone's file").unwrap();
    let status = std::process::Command::new("kill")
        .args(["-INT", &guard.0.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let status = loop {
        if let Some(s) = guard.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "serve did not end"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    guard
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(&socket).unwrap_or_default(),
        "someone's file",
        "{status:?} {err}"
    );
    assert!(err.contains("no longer memlife's socket"), "{err}");
}
