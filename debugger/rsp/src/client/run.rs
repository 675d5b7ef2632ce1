//! Run control: continue and step (off an inserted breakpoint, as gdb does), interrupt, reset,
//! and reading stop replies.

use std::time::Duration;

use memlife_core::limits::Deadline;
use memlife_core::{BreakpointKind, Result, StopReason, TargetError};

use super::{GdbRemote, Pending, RunState};
use crate::packets::registers::decode_le;
use crate::packets::resume::{Resume, VContActions};
use crate::packets::stop::{self, SIGINT, StopPacket};

impl GdbRemote {
    pub(crate) fn halted(&self) -> bool {
        self.state == RunState::Halted
    }

    /// Sends continue or step without any stepping-off logic.
    pub(super) fn send_run(&mut self, step: bool) -> Result<()> {
        let vcont = VContActions {
            continue_: self.features.vcont_continue,
            step: self.features.vcont_step,
        };
        let cmd = if step { Resume::Step } else { Resume::Continue }.encode(vcont);
        let timeout = self.timeout;
        if self.has_pending_writes() && self.features.qemu && !self.conn.ack_pending_allowed() {
            // QEMU (system emulation) does not wait for the `+` of its replies, and any byte it
            // receives while running stops it: the writes and the run command go out in one
            // segment and the write replies are read without acknowledging them.
            let mut packets = self.take_pending_writes();
            let writes = packets.len();
            packets.push(cmd.to_vec());
            let r = self.conn.send_many(&packets);
            self.note(r)?;
            // The target runs from here, whatever the write replies say.
            self.set_running(step);
            return self.check_write_replies_unacked(writes);
        }
        if self.has_pending_writes() {
            // The writes go out together, but not with the run command: in ack mode the `+`
            // we owe for their replies would reach the server after the continue, and QEMU takes
            // any byte it receives while running as an interrupt.
            let packets = self.take_pending_writes();
            let writes = packets.len();
            let r = self.conn.send_many(&packets);
            self.note(r)?;
            self.check_write_replies(writes)?;
        }
        let r = self.conn.send(cmd, timeout);
        self.note(r)?;
        self.set_running(step);
        Ok(())
    }

    /// The core runs after a step or continue was sent: cached registers are stale.
    fn set_running(&mut self, step: bool) {
        self.regs_cache = None;
        self.state = RunState::Running;
        self.pending = if step {
            Pending::Step
        } else {
            Pending::Continue
        };
    }

    /// One instruction with the breakpoints at the pc (and, after a watchpoint hit, the
    /// watchpoints) taken out, so the step is not reported as a new hit.
    pub(super) fn raw_step(&mut self) -> Result<StopReason> {
        let pc = self.pc()?;
        let at_pc: Vec<(u64, BreakpointKind)> = self
            .breakpoint_list()
            .into_iter()
            .filter(|&(a, _)| a == pc)
            .collect();
        // Most servers (QEMU included) step over their own breakpoint at the pc, which saves
        // two packets and, on QEMU, two flushes of its translation cache per stop. Learn on the
        // first step whether this one does; if not, lift the breakpoint as gdb does.
        if !at_pc.is_empty() && self.step_keeps_breakpoints != Some(false) {
            let reason = self.step_once(&[])?;
            if self.step_keeps_breakpoints.is_none() && self.halted() {
                let moved = self.pc()? != pc;
                self.step_keeps_breakpoints = Some(moved);
                if !moved {
                    tracing::debug!("the server does not step over its breakpoints: lifting them");
                    return self.step_once(&at_pc);
                }
            }
            return Ok(reason);
        }
        self.step_once(&at_pc)
    }

    /// One `s`, with `lift` breakpoints (and, after a watchpoint stop, the watchpoints) removed
    /// for the step and put back afterwards.
    pub(super) fn step_once(&mut self, lift: &[(u64, BreakpointKind)]) -> Result<StopReason> {
        let lift_watch = matches!(self.last_stop, Some(StopReason::Watchpoint { .. }));
        let watches = if lift_watch {
            self.watchpoints.clone()
        } else {
            Vec::new()
        };
        for &(a, k) in lift {
            self.delete_breakpoint(a, k)?;
        }
        for &(a, l, k) in &watches {
            self.delete_watchpoint(a, l, k)?;
        }
        self.send_run(true)?;
        let timeout = self.timeout;
        let reason = self
            .wait_stop(timeout)?
            .ok_or(TargetError::timeout(timeout, "single step"))?;
        if self.halted() {
            for &(a, k) in lift {
                self.insert_breakpoint(a, k)?;
            }
            for &(a, l, k) in &watches {
                self.insert_watchpoint(a, l, k)?;
            }
        }
        Ok(reason)
    }

    pub(crate) fn do_step(&mut self) -> Result<StopReason> {
        self.check_halted()?;
        self.early_stop = None;
        self.raw_step()
    }

    pub(crate) fn do_resume(&mut self) -> Result<()> {
        self.check_alive()?;
        if self.state == RunState::Running {
            return Ok(());
        }
        let pc = self.pc()?;
        let on_bp = self.breakpoints.iter().any(|&(a, _)| a == pc);
        let after_watch = matches!(self.last_stop, Some(StopReason::Watchpoint { .. }));
        if on_bp || after_watch {
            let reason = self.raw_step()?;
            if reason != StopReason::Step {
                // The step itself stopped somewhere meaningful: report it instead of running.
                self.early_stop = Some(reason);
                return Ok(());
            }
        }
        self.send_run(false)
    }

    pub(super) fn interrupt_and_wait(&mut self) -> Result<StopReason> {
        let r = self.conn.interrupt();
        self.note(r)?;
        self.pending = Pending::Interrupt;
        let timeout = self.timeout;
        self.wait_stop(timeout)?
            .ok_or(TargetError::timeout(timeout, "halt"))
    }

    pub(crate) fn do_halt(&mut self) -> Result<StopReason> {
        if let Some(early) = self.early_stop.take() {
            return Ok(early);
        }
        self.check_alive()?;
        if self.state == RunState::Halted {
            return Ok(self.last_stop.unwrap_or(StopReason::Halted));
        }
        self.interrupt_and_wait()
    }

    pub(crate) fn do_reset(&mut self, halt: bool) -> Result<()> {
        self.check_alive()?;
        if self.state == RunState::Running {
            self.interrupt_and_wait()?;
        }
        self.early_stop = None;
        self.reset_halted()?;
        self.regs_cache = None;
        self.last_stop = Some(StopReason::Halted);
        if !halt {
            self.do_resume()?;
        }
        Ok(())
    }

    pub(crate) fn do_wait(&mut self, timeout: Duration) -> Result<Option<StopReason>> {
        // A stop seen while stepping off is reported even when it was the program's end.
        if let Some(early) = self.early_stop.take() {
            return Ok(Some(early));
        }
        self.check_alive()?;
        if self.state == RunState::Halted {
            return Ok(self.last_stop);
        }
        self.wait_stop(timeout)
    }

    /// Reads stop replies until one arrives or `timeout` passes.
    pub(super) fn wait_stop(&mut self, timeout: Duration) -> Result<Option<StopReason>> {
        self.check_deadline()?;
        let deadline = Deadline::after(self.until_deadline(timeout));
        loop {
            let left = deadline.left_or_max();
            let r = self.conn.recv(left, "a stop reply");
            let Some(data) = self.note(r)? else {
                // Cut short by the whole command's deadline: say so, not "no stop yet".
                self.check_deadline()?;
                return Ok(None);
            };
            let parsed = stop::parse(&data).map_err(|e| {
                TargetError::Protocol(format!(
                    "bad stop reply {:?}: {e}",
                    String::from_utf8_lossy(&data[..data.len().min(40)])
                ))
            })?;
            let reason = match parsed {
                StopPacket::Output(text) => {
                    tracing::info!(target: "memlife_rsp::console", "{}", String::from_utf8_lossy(&text));
                    continue;
                }
                StopPacket::FileIo(io) => {
                    self.answer_file_io(io)?;
                    continue;
                }
                StopPacket::Exited(code) => match self.killed_by_signal() {
                    Some((sig, line)) => {
                        self.state =
                            RunState::Gone(format!("QEMU was killed by signal {sig} ({line})"));
                        StopReason::Terminated(sig)
                    }
                    None => {
                        self.state = RunState::Exited(i32::from(code));
                        StopReason::Exited(i32::from(code))
                    }
                },
                StopPacket::Terminated(sig) => {
                    self.state =
                        RunState::Gone(format!("the program was terminated by signal {sig}"));
                    StopReason::Terminated(sig)
                }
                StopPacket::Stopped(s) => {
                    self.state = RunState::Halted;
                    self.regs_cache = None;
                    if let Some((kind, addr)) = s.watch {
                        StopReason::Watchpoint { addr, kind }
                    } else if self.pending == Pending::Step {
                        StopReason::Step
                    } else if s.signal == SIGINT && self.pending == Pending::Interrupt {
                        StopReason::Halted
                    } else {
                        let pc = match s.registers.iter().find(|(n, _)| *n == 15) {
                            Some((_, bytes)) => decode_le(bytes),
                            None => self.pc()?,
                        };
                        if self.breakpoints.iter().any(|&(a, _)| a == pc) || s.swbreak || s.hwbreak
                        {
                            StopReason::Breakpoint(pc)
                        } else if self.pending == Pending::Interrupt {
                            StopReason::Halted
                        } else {
                            StopReason::Signal(s.signal)
                        }
                    }
                }
            };
            self.last_stop = Some(reason);
            return Ok(Some(reason));
        }
    }

    /// Whether the QEMU behind this client says it was killed by a signal (it still sends
    /// `W00`). Its stderr is drained by a thread: give it a moment to catch up.
    fn killed_by_signal(&self) -> Option<(u8, String)> {
        let log = self.server_log.as_ref()?;
        for _ in 0..10 {
            let text = log
                .lock()
                .map(|l| String::from_utf8_lossy(&l).into_owned())
                .unwrap_or_default();
            if let Some(found) = crate::qemu::killed_by(&text) {
                return Some(found);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}
