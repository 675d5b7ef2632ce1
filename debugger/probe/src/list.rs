//! `memlife probes`: the debug probes probe-rs sees, and choosing one of them.

use probe_rs::probe::DebugProbeInfo;
use probe_rs::probe::list::Lister;

use crate::{ProbeError, ProbeSelector};

/// One attached probe, as `memlife probes` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeEntry {
    /// probe-rs's name for it (`STLink V2-1`, `J-Link`, `ESP JTAG`).
    pub name: String,
    /// The selector that picks exactly this probe (`--probe` value).
    pub selector: String,
}

impl std::fmt::Display for ProbeEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name, self.selector)
    }
}

fn entry(info: &DebugProbeInfo) -> ProbeEntry {
    let mut selector = format!("{:04x}:{:04x}", info.vendor_id, info.product_id);
    if let Some(sn) = &info.serial_number {
        selector.push(':');
        selector.push_str(sn);
    }
    ProbeEntry {
        name: info.identifier.clone(),
        selector,
    }
}

/// Every probe probe-rs can see now (USB probes; needs access rights to the USB devices).
pub fn list_probes() -> Vec<ProbeEntry> {
    crate::chip::register_plugins();
    Lister::new().list_all().iter().map(entry).collect()
}

/// The one probe to open: the one matching `selector`, or the only one attached.
pub(crate) fn choose(selector: Option<&ProbeSelector>) -> Result<DebugProbeInfo, ProbeError> {
    crate::chip::register_plugins();
    let all = Lister::new().list_all();
    let found: Vec<String> = all.iter().map(|i| entry(i).to_string()).collect();
    let matching: Vec<DebugProbeInfo> = match selector {
        Some(s) => {
            let s = s.to_probe_rs();
            all.into_iter().filter(|i| s.matches_probe(i)).collect()
        }
        None => all,
    };
    match matching.len() {
        0 => Err(ProbeError::NoProbe {
            selector: selector.map(ToString::to_string),
            found,
        }),
        1 => matching.into_iter().next().ok_or(ProbeError::NoProbe {
            selector: None,
            found: Vec::new(),
        }),
        _ => Err(ProbeError::SeveralProbes {
            found: matching.iter().map(|i| entry(i).to_string()).collect(),
        }),
    }
}
