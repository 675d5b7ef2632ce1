//! The client against scripted fake servers on 127.0.0.1: the exact bytes it sends, and how it
//! survives servers that refuse, vanish or never answer.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::time::{Duration, Instant};

use memlife_core::{
    BreakpointKind, Breakpoints, Control, Memory, Register, Registers, StopReason, Target,
    TargetError, WatchKind, Watchpoints,
};
use memlife_rsp::{ConnectOptions, GdbRemote};
use memlife_testkit::rsp::Step::*;
use memlife_testkit::rsp::{Step, ack_pkt, pkt, pkt_raw, serve};

const QSUP: &str = "qSupported:multiprocess+;swbreak+;hwbreak+;qRelocInsn+;xmlRegisters=arm";

/// QEMU 7.2's handshake without a target description: acks on, no `QStartNoAckMode`.
fn qemu_like_handshake() -> Vec<Step> {
    vec![
        Expect(pkt(QSUP)),
        Send(ack_pkt("PacketSize=1000;vContSupported+;multiprocess+")),
        Expect(b"+".to_vec()),
        Expect(pkt("?")),
        Send(ack_pkt("T05thread:p01.01;")),
        Expect(b"+".to_vec()),
        Expect(pkt("vCont?")),
        Send(ack_pkt("vCont;c;C;s;S")),
        Expect(b"+".to_vec()),
        // The QEMU probe; this fake server does not claim to be QEMU.
        Expect(pkt("qqemu.sstepbits")),
        Send(ack_pkt("")),
        Expect(b"+".to_vec()),
    ]
}

fn opts(read_ms: u64) -> ConnectOptions {
    ConnectOptions {
        connect_timeout: Duration::from_secs(2),
        read_timeout: Duration::from_millis(read_ms),
        deadline: None,
    }
}

/// QEMU's classic 168-byte `g`: r0..r15, eight 12-byte FPA registers, fps, then cpsr at 164.
fn classic_g(pc: u32, sp: u32, xpsr: u32) -> String {
    let mut g = vec![0u8; 168];
    g[13 * 4..14 * 4].copy_from_slice(&sp.to_le_bytes());
    g[15 * 4..16 * 4].copy_from_slice(&pc.to_le_bytes());
    g[164..168].copy_from_slice(&xpsr.to_le_bytes());
    memlife_rsp::packet::to_hex(&g)
}

#[test]
fn handshake_with_acks_fallback_registers_and_refused_read() {
    let mut script = qemu_like_handshake();
    script.extend([
        Expect(pkt("g")),
        Send(ack_pkt(&classic_g(0x0800_003c, 0x2002_0000, 0x4100_0000))),
        Expect(b"+".to_vec()),
        Expect(pkt("mf0000000,10")),
        Send(ack_pkt("E01")),
        Expect(b"+".to_vec()),
        Expect(pkt("m20000000,4")),
        Send(ack_pkt("78563412")),
        Expect(b"+".to_vec()),
    ]);
    let (addr, server) = serve(script);
    let mut t = GdbRemote::connect_with(&addr, opts(2000)).unwrap();
    assert!(t.is_halted());
    assert!(!t.has_target_description());
    assert!(t.features().vcont_continue && t.features().vcont_step);
    assert_eq!(t.describe(), format!("gdb-remote {addr}"));
    // One g serves every register while halted.
    assert_eq!(
        t.read_register(Register::ProgramCounter).unwrap(),
        0x0800_003c
    );
    assert_eq!(
        t.read_register(Register::StackPointer).unwrap(),
        0x2002_0000
    );
    let all = t.read_all_registers().unwrap();
    assert_eq!(all.len(), 17);
    assert_eq!(all[16], ("xpsr".to_string(), 0x4100_0000));
    let err = t.read_vec(0xf000_0000, 16).unwrap_err();
    assert!(
        matches!(
            err,
            TargetError::Unmapped {
                addr: 0xf000_0000,
                len: 16
            }
        ),
        "{err:?}"
    );
    assert_eq!(t.read_u32(0x2000_0000).unwrap(), 0x1234_5678);
    let stats = t.link_stats();
    assert_eq!((stats.reads, stats.bytes, stats.max_read), (2, 4, 2046));
    drop(t);
    server.join().unwrap();
}

#[test]
fn no_ack_mode_when_offered_and_split_reads() {
    let script = vec![
        Expect(pkt(QSUP)),
        Send(ack_pkt("PacketSize=100;QStartNoAckMode+")),
        Expect(b"+".to_vec()),
        Expect(pkt("QStartNoAckMode")),
        Send(ack_pkt("OK")),
        Expect(b"+".to_vec()),
        // From here on, no acks either way.
        Expect(pkt("?")),
        Send(pkt("S05")),
        Expect(pkt("vCont?")),
        Send(pkt("")),
        Expect(pkt("qqemu.sstepbits")),
        Send(pkt("")),
        // PacketSize 0x100: (256 - 4) / 2 = 126 bytes per m.
        Expect(pkt("m20000000,7e")),
        Send(pkt(&"11".repeat(126))),
        Expect(pkt("m2000007e,7e")),
        Send(pkt(&"22".repeat(126))),
        Expect(pkt("m200000fc,30")),
        // Run-length encoded reply: "33" then 46 more '3' = 48 chars = 24 bytes, then 24 more.
        Send(pkt_raw(&format!(
            "33*{}{}",
            char::from(46 + 29),
            "44".repeat(24)
        ))),
        Expect(pkt("Z0,8000100,2")),
        Send(pkt("OK")),
        Expect(pkt("Z2,20000004,4")),
        Send(pkt("OK")),
        // No vCont: plain c.
        Expect(pkt("g")),
        Send(pkt(&classic_g(0x0800_0000, 0x2000_1000, 0))),
        Expect(pkt("c")),
        Send(pkt("O48690a")),
        Send(pkt("T05thread:01;watch:20000004;")),
        Expect(pkt("g")),
        Send(pkt(&classic_g(0x0800_0020, 0x2000_1000, 0))),
        // QEMU reports before the store: step with the watchpoints out.
        Expect(pkt("z2,20000004,4")),
        Send(pkt("OK")),
        Expect(pkt("s")),
        Send(pkt("W03")),
    ];
    let (addr, server) = serve(script);
    let mut t = GdbRemote::connect_with(&addr, opts(2000)).unwrap();
    assert_eq!(t.max_read(), 126);
    let data = t.read_vec(0x2000_0000, 300).unwrap();
    assert_eq!(t.link_stats().reads, 3);
    assert!(data[..126].iter().all(|&b| b == 0x11));
    assert!(data[126..252].iter().all(|&b| b == 0x22));
    assert!(data[252..276].iter().all(|&b| b == 0x33));
    assert!(data[276..].iter().all(|&b| b == 0x44));

    t.add_breakpoint(0x0800_0100, BreakpointKind::Software)
        .unwrap();
    t.add_watchpoint(0x2000_0004, 4, WatchKind::Write).unwrap();
    t.resume().unwrap();
    assert!(!t.is_halted());
    assert_eq!(
        t.wait_for_stop(Duration::from_secs(2)).unwrap(),
        Some(StopReason::Watchpoint {
            addr: 0x2000_0004,
            kind: WatchKind::Write
        })
    );
    // Resuming after a watchpoint steps first; this step ends the program.
    t.resume().unwrap();
    assert_eq!(
        t.wait_for_stop(Duration::from_secs(2)).unwrap(),
        Some(StopReason::Exited(3))
    );
    assert!(matches!(t.read_u32(0), Err(TargetError::Exited(3))));
    assert!(matches!(t.resume(), Err(TargetError::Exited(3))));
    drop(t);
    server.join().unwrap();
}

/// A no-ack handshake with `PacketSize=100`: 126 bytes per `m`.
fn small_packet_handshake() -> Vec<Step> {
    vec![
        Expect(pkt(QSUP)),
        Send(ack_pkt("PacketSize=100;QStartNoAckMode+")),
        Expect(b"+".to_vec()),
        Expect(pkt("QStartNoAckMode")),
        Send(ack_pkt("OK")),
        Expect(b"+".to_vec()),
        Expect(pkt("?")),
        Send(pkt("S05")),
        Expect(pkt("vCont?")),
        Send(pkt("")),
        Expect(pkt("qqemu.sstepbits")),
        Send(pkt("")),
    ]
}

#[test]
fn short_memory_replies_are_asked_for_again_at_the_right_offset() {
    let mut script = small_packet_handshake();
    script.extend([
        // Three pipelined reads; the first reply is 26 bytes short.
        Expect(pkt("m20000000,7e")),
        Expect(pkt("m2000007e,7e")),
        Expect(pkt("m200000fc,30")),
        Send(pkt(&"11".repeat(100))),
        Send(pkt(&"22".repeat(126))),
        Send(pkt(&"33".repeat(48))),
        // The gap is asked for again, and comes in two more short replies.
        Expect(pkt("m20000064,1a")),
        Send(pkt(&"aa".repeat(20))),
        Expect(pkt("m20000078,6")),
        Send(pkt(&"bb".repeat(6))),
    ]);
    let (addr, server) = serve(script);
    let mut t = GdbRemote::connect_with(&addr, opts(2000)).unwrap();
    let data = t.read_vec(0x2000_0000, 300).unwrap();
    assert!(data[..100].iter().all(|&b| b == 0x11));
    assert!(data[100..120].iter().all(|&b| b == 0xaa));
    assert!(data[120..126].iter().all(|&b| b == 0xbb));
    assert!(data[126..252].iter().all(|&b| b == 0x22), "not shifted");
    assert!(data[252..].iter().all(|&b| b == 0x33), "not shifted");
    drop(t);
    server.join().unwrap();
}

#[test]
fn a_short_reply_whose_rest_is_refused_fails_naming_the_address() {
    let mut script = small_packet_handshake();
    script.extend([
        Expect(pkt("m20000000,7e")),
        Expect(pkt("m2000007e,2")),
        Send(pkt(&"11".repeat(100))),
        Send(pkt("2222")),
        Expect(pkt("m20000064,1a")),
        Send(pkt("E14")),
    ]);
    let (addr, server) = serve(script);
    let mut t = GdbRemote::connect_with(&addr, opts(2000)).unwrap();
    let err = t.read_vec(0x2000_0000, 128).unwrap_err();
    assert!(
        matches!(
            err,
            TargetError::Unmapped {
                addr: 0x2000_0064,
                len: 26
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("0x20000064"), "{err}");
    drop(t);
    server.join().unwrap();
}

#[test]
fn retransmits_on_nack_and_rejects_bad_checksums() {
    let mut script = qemu_like_handshake();
    script.extend([
        Expect(pkt("m0,4")),
        Send(b"-".to_vec()),
        Expect(pkt("m0,4")),
        Send(b"+$01020304#00".to_vec()),
        Expect(b"-".to_vec()),
        Send(pkt("01020304")),
        Expect(b"+".to_vec()),
    ]);
    let (addr, server) = serve(script);
    let mut t = GdbRemote::connect_with(&addr, opts(2000)).unwrap();
    assert_eq!(t.read_vec(0, 4).unwrap(), vec![1, 2, 3, 4]);
    drop(t);
    server.join().unwrap();
}

#[test]
fn server_vanishing_mid_packet_is_a_clean_error() {
    let mut script = qemu_like_handshake();
    script.extend([Expect(pkt("m0,4")), Send(b"+$0102".to_vec()), Close]);
    let (addr, server) = serve(script);
    let mut t = GdbRemote::connect_with(&addr, opts(5000)).unwrap();
    let started = Instant::now();
    let err = t.read_vec(0, 4).unwrap_err();
    assert!(matches!(err, TargetError::Gone(_)), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "noticed the close, not a timeout"
    );
    // Later calls fail the same way, at once.
    assert!(matches!(t.read_vec(0, 4), Err(TargetError::Gone(_))));
    assert!(matches!(t.resume(), Err(TargetError::Gone(_))));
    server.join().unwrap();
}

#[test]
fn silent_server_times_out() {
    let (addr, server) = serve(vec![Silence(Duration::from_secs(2))]);
    let started = Instant::now();
    let err = GdbRemote::connect_with(&addr, opts(300)).unwrap_err();
    let took = started.elapsed();
    assert!(matches!(err, TargetError::Timeout { .. }), "{err:?}");
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_millis(1500),
        "{took:?}"
    );
    server.join().unwrap();
}

#[test]
fn garbage_server_is_a_protocol_error_or_timeout_not_a_hang() {
    let mut script = qemu_like_handshake();
    script.extend([
        Expect(pkt("m0,4")),
        Send(b"+$zz#zz".to_vec()),
        Expect(b"-".to_vec()),
    ]);
    for _ in 0..3 {
        script.push(Send(b"$zz#zz".to_vec()));
    }
    let (addr, server) = serve(script);
    let mut t = GdbRemote::connect_with(&addr, opts(500)).unwrap();
    let started = Instant::now();
    let err = t.read_vec(0, 4).unwrap_err();
    assert!(
        matches!(err, TargetError::Protocol(_) | TargetError::Timeout { .. }),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    drop(t);
    server.join().unwrap();
}

#[test]
fn interrupt_and_step_off_breakpoint_bytes() {
    let mut script = qemu_like_handshake();
    script.extend([
        Expect(pkt("Z0,8000100,2")),
        Send(ack_pkt("OK")),
        Expect(b"+".to_vec()),
        Expect(pkt("g")),
        Send(ack_pkt(&classic_g(0x0800_0100, 0x2000_1000, 0))),
        Expect(b"+".to_vec()),
        // At the breakpoint: step with it in place (QEMU steps over its own breakpoints)...
        Expect(pkt("vCont;s")),
        Send(b"+".to_vec()),
        Send(pkt("T05thread:p01.01;")),
        Expect(b"+".to_vec()),
        // ...check once that the pc moved, then continue.
        Expect(pkt("g")),
        Send(ack_pkt(&classic_g(0x0800_0102, 0x2000_1000, 0))),
        Expect(b"+".to_vec()),
        Expect(pkt("vCont;c")),
        Send(b"+".to_vec()),
        // Interrupt.
        Expect(vec![0x03]),
        Send(pkt("T02thread:p01.01;")),
        Expect(b"+".to_vec()),
    ]);
    let (addr, server) = serve(script);
    let mut t = GdbRemote::connect_with(&addr, opts(2000)).unwrap();
    t.add_breakpoint(0x0800_0100, BreakpointKind::Software)
        .unwrap();
    t.resume().unwrap();
    assert_eq!(t.wait_for_stop(Duration::from_millis(100)).unwrap(), None);
    assert_eq!(t.halt().unwrap(), StopReason::Halted);
    assert!(t.is_halted());
    drop(t);
    server.join().unwrap();
}

#[test]
fn a_server_that_stops_again_at_its_breakpoint_gets_it_lifted() {
    let mut script = qemu_like_handshake();
    script.extend([
        Expect(pkt("Z0,8000100,2")),
        Send(ack_pkt("OK")),
        Expect(b"+".to_vec()),
        Expect(pkt("g")),
        Send(ack_pkt(&classic_g(0x0800_0100, 0x2000_1000, 0))),
        Expect(b"+".to_vec()),
        Expect(pkt("vCont;s")),
        Send(b"+".to_vec()),
        Send(pkt("T05thread:p01.01;")),
        Expect(b"+".to_vec()),
        // The pc did not move: remove, step, re-insert, continue (as gdb does).
        Expect(pkt("g")),
        Send(ack_pkt(&classic_g(0x0800_0100, 0x2000_1000, 0))),
        Expect(b"+".to_vec()),
        Expect(pkt("z0,8000100,2")),
        Send(ack_pkt("OK")),
        Expect(b"+".to_vec()),
        Expect(pkt("vCont;s")),
        Send(b"+".to_vec()),
        Send(pkt("T05thread:p01.01;")),
        Expect(b"+".to_vec()),
        Expect(pkt("Z0,8000100,2")),
        Send(ack_pkt("OK")),
        Expect(b"+".to_vec()),
        Expect(pkt("vCont;c")),
        Send(b"+".to_vec()),
        Expect(vec![0x03]),
        Send(pkt("T02thread:p01.01;")),
        Expect(b"+".to_vec()),
    ]);
    let (addr, server) = serve(script);
    let mut t = GdbRemote::connect_with(&addr, opts(2000)).unwrap();
    t.add_breakpoint(0x0800_0100, BreakpointKind::Software)
        .unwrap();
    t.resume().unwrap();
    assert_eq!(t.halt().unwrap(), StopReason::Halted);
    drop(t);
    server.join().unwrap();
}

fn rcmd(command: &str) -> Vec<u8> {
    pkt(&format!(
        "qRcmd,{}",
        memlife_rsp::packet::to_hex(command.as_bytes())
    ))
}

/// Console output of a monitor command, as an `O` packet.
fn console(text: &str) -> String {
    format!("O{}", memlife_rsp::packet::to_hex(text.as_bytes()))
}

/// A server that is not QEMU and would refuse QEMU's `system_reset`: memlife asks its `monitor
/// help`, recognises OpenOCD's reset syntax and sends `reset halt`, and keeps that word.
#[test]
fn reset_uses_the_servers_own_word() {
    let mut script = qemu_like_handshake();
    script.extend([
        Expect(rcmd("help")),
        Send(ack_pkt(&console(
            "halt [milliseconds]\nreset [run|halt|init]\n      Reset all targets.\n",
        ))),
        Expect(b"+".to_vec()),
        Send(pkt("OK")),
        Expect(b"+".to_vec()),
        Expect(rcmd("reset halt")),
        Send(ack_pkt("OK")),
        Expect(b"+".to_vec()),
        // The second reset needs no help.
        Expect(rcmd("reset halt")),
        Send(ack_pkt("OK")),
        Expect(b"+".to_vec()),
    ]);
    let (addr, server) = serve(script);
    let mut t = GdbRemote::connect_with(&addr, opts(2000)).unwrap();
    t.reset(true).unwrap();
    assert_eq!(t.reset_command(), Some("reset halt"));
    t.reset(true).unwrap();
    assert!(t.is_halted());
    drop(t);
    server.join().unwrap();
}

/// A server whose help says nothing memlife knows: the reset words are tried in turn until one
/// is accepted.
#[test]
fn reset_falls_back_to_the_word_a_server_accepts() {
    let mut script = qemu_like_handshake();
    script.extend([
        Expect(rcmd("help")),
        Send(ack_pkt("")),
        Expect(b"+".to_vec()),
        Expect(rcmd("reset halt")),
        Send(ack_pkt("E01")),
        Expect(b"+".to_vec()),
        Expect(rcmd("reset")),
        Send(ack_pkt("OK")),
        Expect(b"+".to_vec()),
    ]);
    let (addr, server) = serve(script);
    let mut t = GdbRemote::connect_with(&addr, opts(2000)).unwrap();
    t.reset(true).unwrap();
    assert_eq!(t.reset_command(), Some("reset"));
    drop(t);
    server.join().unwrap();
}

/// `[target] reset = "..."` wins: the configured word is sent, nothing is asked.
#[test]
fn a_configured_reset_word_is_sent_as_is() {
    let mut script = qemu_like_handshake();
    script.extend([
        Expect(rcmd("reset init")),
        Send(ack_pkt("OK")),
        Expect(b"+".to_vec()),
    ]);
    let (addr, server) = serve(script);
    let mut t = GdbRemote::connect_with(&addr, opts(2000)).unwrap();
    t.set_reset_command(Some("reset init".into()));
    t.reset(true).unwrap();
    drop(t);
    server.join().unwrap();
}

/// Nothing accepted: the last refusal is the error, and memlife does not guess further.
#[test]
fn a_server_that_refuses_every_reset_word_is_an_error() {
    let mut script = qemu_like_handshake();
    script.extend([
        Expect(rcmd("help")),
        Send(ack_pkt("E01")),
        Expect(b"+".to_vec()),
    ]);
    for word in ["reset halt", "reset", "system_reset"] {
        script.extend([
            Expect(rcmd(word)),
            Send(ack_pkt("E02")),
            Expect(b"+".to_vec()),
        ]);
    }
    let (addr, server) = serve(script);
    let mut t = GdbRemote::connect_with(&addr, opts(2000)).unwrap();
    let err = t.reset(true).unwrap_err();
    assert!(
        matches!(
            err,
            TargetError::Refused {
                request: "qRcmd",
                code: 2
            }
        ),
        "{err:?}"
    );
    drop(t);
    server.join().unwrap();
}

/// A server that serves its target description one byte per request is cut off after a bounded
/// number of requests instead of keeping the handshake going for a million of them.
#[test]
fn a_target_description_served_byte_by_byte_is_bounded() {
    {
        let part = "mA";
        let mut script = vec![
            Expect(pkt(QSUP)),
            Send(ack_pkt(
                "PacketSize=100;QStartNoAckMode+;qXfer:features:read+",
            )),
            Expect(b"+".to_vec()),
            Expect(pkt("QStartNoAckMode")),
            Send(ack_pkt("OK")),
            Expect(b"+".to_vec()),
            Expect(pkt("?")),
            Send(pkt("S05")),
            Expect(pkt("vCont?")),
            Send(pkt("")),
            Expect(pkt("qqemu.sstepbits")),
            Send(pkt("")),
        ];
        for offset in 0..512 {
            script.push(Expect(pkt(&format!(
                "qXfer:features:read:target.xml:{offset:x},fb"
            ))));
            script.push(Send(pkt(part)));
        }
        let (addr, server) = serve(script);
        let started = Instant::now();
        let err = GdbRemote::connect_with(&addr, opts(2000)).unwrap_err();
        assert!(
            matches!(&err, TargetError::Protocol(m) if m.contains("512 requests")),
            "{err:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(10));
        server.join().unwrap();
    }
}

/// A server that answers every request just within the reply timeout cannot keep the client
/// busy past its deadline.
#[test]
fn a_slow_server_is_bounded_by_the_whole_command_deadline() {
    let mut script = small_packet_handshake();
    for i in 0..20u64 {
        script.push(Expect(pkt(&format!("m{:x},4", 0x2000_0000 + 4 * i))));
        script.push(Silence(Duration::from_millis(150)));
        script.push(Send(pkt("01020304")));
    }
    let (addr, server) = serve(script);
    let mut t = GdbRemote::connect_with(&addr, opts(1000)).unwrap();
    t.set_deadline(Some(Instant::now() + Duration::from_millis(700)));
    let started = Instant::now();
    let mut err = None;
    for i in 0..20u64 {
        if let Err(e) = t.read_u32(0x2000_0000 + 4 * i) {
            err = Some(e);
            break;
        }
    }
    let err = err.expect("the deadline ended the reads");
    assert!(err.to_string().contains("--deadline"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(2));
    drop(t);
    let _ = server.join();
}

/// `Duration::MAX` ("as long as it takes", from a library caller: the command line caps timeouts
/// at a week) must not overflow the clock in any wait: the handshake, a read, a monitor command
/// and a wait for a stop all go through.
#[test]
fn the_longest_read_timeout_waits_without_overflowing_the_clock() {
    let mut script = qemu_like_handshake();
    script.extend([
        Expect(pkt("m20000000,4")),
        Send(ack_pkt("78563412")),
        Expect(b"+".to_vec()),
        Expect(rcmd("info")),
        Send(ack_pkt(&console("fine\n"))),
        Expect(b"+".to_vec()),
        Send(pkt("OK")),
        Expect(b"+".to_vec()),
        Expect(pkt("g")),
        Send(ack_pkt(&classic_g(0x0800_0100, 0x2000_1000, 0))),
        Expect(b"+".to_vec()),
        Expect(pkt("vCont;c")),
        Send(b"+".to_vec()),
        Send(pkt("T05thread:p01.01;")),
        Expect(b"+".to_vec()),
        // Where it stopped.
        Expect(pkt("g")),
        Send(ack_pkt(&classic_g(0x0800_0200, 0x2000_1000, 0))),
        Expect(b"+".to_vec()),
    ]);
    let (addr, server) = serve(script);
    let options = ConnectOptions {
        read_timeout: Duration::MAX,
        ..opts(0)
    };
    let mut t = GdbRemote::connect_with(&addr, options).unwrap();
    assert_eq!(t.read_u32(0x2000_0000).unwrap(), 0x1234_5678);
    assert_eq!(t.monitor("info").unwrap(), "fine\n");
    t.resume().unwrap();
    assert!(matches!(
        t.wait_for_stop(Duration::MAX).unwrap(),
        Some(StopReason::Breakpoint(_) | StopReason::Signal(_) | StopReason::Halted)
    ));
    drop(t);
    server.join().unwrap();
}
