//! Registers: the `g` image (cached while halted, written back as one `G`), `p` and `P`.

use memlife_core::{Result, TargetError};

use super::GdbRemote;
use crate::packet::{Reply, from_hex, to_hex};
use crate::tdesc::RegisterInfo;

impl GdbRemote {
    pub(super) fn g_packet(&mut self) -> Result<&[u8]> {
        self.check_halted()?;
        if self.regs_cache.is_none() {
            let d = self.request_data(b"g", "g")?;
            self.regs_cache = Some(from_hex(&d)?);
        }
        Ok(self.regs_cache.as_deref().unwrap_or_default())
    }

    pub(super) fn decode_le(bytes: &[u8]) -> u64 {
        bytes
            .iter()
            .take(8)
            .rev()
            .fold(0u64, |acc, &b| acc << 8 | u64::from(b))
    }

    pub(crate) fn read_reg_info(&mut self, info: &RegisterInfo) -> Result<u64> {
        let (offset, size) = (info.offset, info.size());
        let g = self.g_packet()?;
        if let Some(bytes) = g.get(offset..offset + size) {
            return Ok(Self::decode_le(bytes));
        }
        if !self.has_tdesc {
            return Err(TargetError::Unsupported(
                "this register without a target description",
            ));
        }
        let req = format!("p{:x}", info.regnum);
        let d = self.request_data(req.as_bytes(), "p")?;
        Ok(Self::decode_le(&from_hex(&d)?))
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
        let bytes: Vec<u8> = (0..size)
            .map(|i| if i < 8 { (value >> (8 * i)) as u8 } else { 0 })
            .collect();
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
        let req = format!("P{:x}={}", info.regnum, to_hex(&bytes));
        let r = self.request(req.as_bytes())?;
        self.regs_cache = None;
        match r {
            Reply::Ok => Ok(()),
            Reply::Error(code) => Err(TargetError::Refused { request: "P", code }),
            Reply::Data(_) => Err(TargetError::Protocol("unexpected reply to P".into())),
            Reply::Unsupported => {
                // No P: rewrite the whole g block.
                let mut g = self.g_packet()?.to_vec();
                let slot = g
                    .get_mut(info.offset..info.offset + size)
                    .ok_or(TargetError::Unsupported("writing this register"))?;
                slot.copy_from_slice(&bytes);
                let req = format!("G{}", to_hex(&g));
                self.regs_cache = None;
                self.request_ok(req.as_bytes(), "G")
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
