//! Registers: the `g` image (cached while halted, written back as one `G`), `p` and `P`.

use memlife_core::{Result, TargetError};

use super::GdbRemote;
use crate::packets::registers::{
    READ_REGISTERS, ReadRegister, WriteRegister, Written, decode_le, encode_le,
    parse_read_registers, parse_write_registers, write_registers,
};
use crate::tdesc::RegisterInfo;

impl GdbRemote {
    pub(super) fn g_packet(&mut self) -> Result<&[u8]> {
        self.check_halted()?;
        if self.regs_cache.is_none() {
            let reply = self.request(READ_REGISTERS)?;
            self.regs_cache = Some(parse_read_registers(reply)?);
        }
        Ok(self.regs_cache.as_deref().unwrap_or_default())
    }

    pub(crate) fn read_reg_info(&mut self, info: &RegisterInfo) -> Result<u64> {
        let (offset, size) = (info.offset, info.size());
        let g = self.g_packet()?;
        if let Some(bytes) = g.get(offset..offset + size) {
            return Ok(decode_le(bytes));
        }
        if !self.has_tdesc {
            return Err(TargetError::Unsupported(
                "this register without a target description",
            ));
        }
        let read = ReadRegister {
            regnum: info.regnum,
        };
        let reply = self.request(&read.encode())?;
        Ok(decode_le(&read.parse_reply(reply)?))
    }

    pub(crate) fn register_info(&self, regnum: u16) -> Result<RegisterInfo> {
        self.layout
            .by_number(u32::from(regnum))
            .cloned()
            .ok_or(TargetError::Unsupported("this register number"))
    }

    pub(crate) fn write_reg_info(&mut self, info: &RegisterInfo, value: u64) -> Result<()> {
        self.check_halted()?;
        let size = info.size();
        let bytes = encode_le(value, size);
        // A register inside the `g` image is changed there and sent as one `G` with the next
        // request or run command: several writes at a stop cost no round trip of their own.
        if self.has_tdesc || self.regs_cache.is_some() {
            self.g_packet()?;
            if let Some(slot) = self
                .regs_cache
                .as_mut()
                .and_then(|g| g.get_mut(info.offset..info.offset + size))
            {
                slot.copy_from_slice(&bytes);
                self.regs_dirty = true;
                return Ok(());
            }
        }
        let write = WriteRegister {
            regnum: info.regnum,
            value: &bytes,
        };
        let reply = self.request(&write.encode())?;
        self.regs_cache = None;
        match write.parse_reply(reply)? {
            Written::Done => Ok(()),
            Written::NoSinglePacket => {
                // No P: rewrite the whole g block.
                let mut g = self.g_packet()?.to_vec();
                let slot = g
                    .get_mut(info.offset..info.offset + size)
                    .ok_or(TargetError::Unsupported("writing this register"))?;
                slot.copy_from_slice(&bytes);
                self.regs_cache = None;
                let reply = self.request(&write_registers(&g))?;
                parse_write_registers(reply)
            }
        }
    }

    pub(crate) fn all_registers(&mut self) -> Result<Vec<(String, u64)>> {
        let regs: Vec<RegisterInfo> = self
            .layout
            .registers()
            .iter()
            .filter(|r| r.bitsize <= 64)
            .cloned()
            .collect();
        let mut out = Vec::with_capacity(regs.len());
        for r in regs {
            match self.read_reg_info(&r) {
                Ok(v) => out.push((r.name.clone(), v)),
                Err(e @ (TargetError::Unsupported(_) | TargetError::Refused { .. })) => {
                    tracing::debug!(register = r.name, error = %e, "skipping register");
                }
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    pub(crate) fn pc(&mut self) -> Result<u64> {
        let info = self.register_info(15)?;
        self.read_reg_info(&info)
    }
}
