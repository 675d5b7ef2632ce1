//! A gdb session over bytes in memory: the server's whole packet path (gdbstub's framing and
//! decoder, the packet handlers, `qXfer` target descriptions, memory and registers, breakpoints,
//! `monitor` commands) driven without a socket. For fuzzing (`fuzz/`) and for tests that look at
//! the exact bytes a client gets back.
//!
//! It runs gdbstub's state machine byte by byte, where [`crate::serve`] runs its blocking
//! loop on a socket; the [`Bridge`] and every handler are the same. Two differences, both so
//! that a replay never waits: a running target is stopped as by a Ctrl-C the moment gdb waits
//! for it (its stop is reported at once), and a session that ends (detach, kill, a fatal error)
//! is followed by a new one on the rest of the bytes, as the next client would be.

use std::cell::RefCell;
use std::rc::Rc;

use gdbstub::conn::Connection;
use gdbstub::stub::state_machine::GdbStubStateMachine;
use gdbstub::stub::{DisconnectReason, GdbStub};

use crate::bridge::Bridge;
use crate::client::MAX_PACKET;
use crate::event_loop::EventLoop;

/// The most sessions one replay starts (a client that detaches after every byte must not make
/// a replay do unbounded set-up work).
const MAX_SESSIONS: usize = 64;

/// What the server writes: kept in memory, shared with the caller.
#[derive(Clone, Default)]
struct Sink(Rc<RefCell<Vec<u8>>>);

impl Connection for Sink {
    type Error = std::convert::Infallible;

    fn write(&mut self, byte: u8) -> Result<(), Self::Error> {
        self.0.borrow_mut().push(byte);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// Feeds `input` to the server as a client's bytes, and returns every byte the server answered
/// (acks, replies, console output).
pub fn replay(bridge: &mut Bridge, input: &[u8]) -> Vec<u8> {
    let sink = Sink::default();
    let mut rest = input;
    for _ in 0..MAX_SESSIONS {
        if rest.is_empty() {
            break;
        }
        let used = session(bridge, sink.clone(), rest);
        // A session that could not even start consumes one byte, so the loop moves on.
        rest = &rest[used.max(1).min(rest.len())..];
    }
    sink.0.take()
}

/// One client's session over the start of `input`; how many bytes it consumed.
fn session(bridge: &mut Bridge, sink: Sink, input: &[u8]) -> usize {
    bridge.on_attach();
    let mut buffer = vec![0u8; MAX_PACKET];
    let Ok(stub) = GdbStub::builder(sink)
        .with_packet_buffer(&mut buffer)
        .build()
    else {
        return input.len();
    };
    let Ok(mut gdb) = stub.run_state_machine(bridge) else {
        bridge.on_detach(true);
        return 0;
    };
    let mut used = 0;
    let resume = loop {
        gdb = match gdb {
            GdbStubStateMachine::Disconnected(d) => {
                break d.get_reason() != DisconnectReason::Kill;
            }
            GdbStubStateMachine::CtrlCInterrupt(c) => {
                let stop = EventLoop::stop_now(bridge);
                match c.interrupt_handled(bridge, stop) {
                    Ok(next) => next,
                    Err(_) => break true,
                }
            }
            GdbStubStateMachine::Running(r) => {
                // gdb waits for a stop: give it one at once rather than wait on the backend.
                match EventLoop::stop_now(bridge) {
                    Some(stop) => match r.report_stop(bridge, stop) {
                        Ok(next) => next,
                        Err(_) => break true,
                    },
                    None => break true,
                }
            }
            GdbStubStateMachine::Idle(idle) => {
                let Some(&byte) = input.get(used) else {
                    break true;
                };
                used += 1;
                match idle.incoming_data(bridge, byte) {
                    Ok(next) => next,
                    Err(_) => break true,
                }
            }
        };
    };
    bridge.on_detach(resume);
    used
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn bridge() -> Bridge {
        let testdata = memlife_testkit::firmware::repo().join("debugger/heap/testdata");
        let symbols =
            memlife_dwarf::Symbols::load(&testdata.join("heap4-fragmentation.elf")).unwrap();
        let snap =
            memlife_core::Snapshot::load(&testdata.join("heap4-fragmentation.mlsnap")).unwrap();
        Bridge::new(Box::new(snap), symbols, crate::ServeOptions::default())
    }

    fn packet(payload: &str) -> Vec<u8> {
        let sum = payload.bytes().fold(0u8, |a, b| a.wrapping_add(b));
        format!("${payload}#{sum:02x}").into_bytes()
    }

    fn rcmd(command: &[u8]) -> Vec<u8> {
        let hex: String = command.iter().map(|b| format!("{b:02x}")).collect();
        packet(&format!("qRcmd,{hex}"))
    }

    /// The console text of the `O` packets in `reply`.
    fn console(reply: &[u8]) -> Vec<u8> {
        let text = String::from_utf8_lossy(reply);
        let mut out = Vec::new();
        for frame in text.split('$').skip(1) {
            let Some(hex) = frame.split('#').next().and_then(|p| p.strip_prefix('O')) else {
                continue;
            };
            if hex == "K" {
                continue; // "OK"
            }
            for i in (0..hex.len() / 2 * 2).step_by(2) {
                out.push(u8::from_str_radix(&hex[i..i + 2], 16).unwrap());
            }
        }
        out
    }

    #[test]
    fn a_monitor_command_answers_through_the_packet_path() {
        let mut b = bridge();
        let out = console(&replay(&mut b, &rcmd(b"allocator")));
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("freertos-heap4"), "{text}");
    }

    /// An unknown command is echoed in the error: its control bytes are shown, not sent to the
    /// terminal gdb prints to.
    #[test]
    fn an_unknown_command_cannot_drive_the_terminal() {
        let mut b = bridge();
        let out = console(&replay(&mut b, &rcmd(b"\x1b[2J\x1b]0;owned\x07x")));
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("unknown monitor command"), "{text}");
        assert!(text.contains("\\u{1b}[2J\\u{1b}]0;owned\\u{7}x"), "{text}");
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
    }

    /// Memory, registers and the target description, each answered; a `c` on a snapshot (no
    /// run control) ends that session and the next one goes on.
    #[test]
    fn packets_after_a_failed_session_are_still_answered() {
        let mut b = bridge();
        let mut input = packet("qSupported:multiprocess+;xmlRegisters=arm");
        input.extend(packet("qXfer:features:read:target.xml:0,fff"));
        input.extend(packet("c"));
        input.extend(packet("m20000000,4"));
        let reply = String::from_utf8_lossy(&replay(&mut b, &input)).into_owned();
        assert!(reply.contains("PacketSize="), "{reply}");
        assert!(reply.contains("<target"), "{reply}");
        // The read after the failed resume: the snapshot's bytes (run-length encoded).
        let last = reply.rsplit('$').next().unwrap();
        let hex = crate::tests::unrle(last.split('#').next().unwrap());
        let mut snap = memlife_core::Snapshot::load(
            &memlife_testkit::firmware::repo()
                .join("debugger/heap/testdata/heap4-fragmentation.mlsnap"),
        )
        .unwrap();
        let want: String = memlife_core::Memory::read_vec(&mut snap, 0x2000_0000, 4)
            .unwrap()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(hex, want, "{reply}");
    }
}
