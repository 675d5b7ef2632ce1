//! RAM images over a template snapshot: how the `tflm` and `rtos` harnesses turn fuzz input into
//! target memory, and how a real snapshot becomes a seed for them. The template keeps the
//! region layout (addresses and lengths) and the registers; the input only supplies bytes, so
//! every input is a memory the parsers must cope with, and none is rejected before reaching
//! them.

use memlife_core::Snapshot;

/// `template` with its RAM replaced by `image`: the image's bytes go over the template's
/// regions in address order, from the first byte of the first region; where the image ends the
/// template's own bytes stay, and image bytes past the last region are ignored.
pub fn overlay(template: &Snapshot, image: &[u8]) -> Snapshot {
    let mut snap = template.clone();
    let mut rest = image;
    for region in &mut snap.regions {
        let n = rest.len().min(region.data.len());
        let (now, later) = rest.split_at(n);
        region.data[..n].copy_from_slice(now);
        rest = later;
    }
    snap
}

/// The image of `snap` that [`overlay`] lays over `template`: for each byte of the template's
/// regions, the byte `snap` holds at that address, else the template's (a stop whose stack
/// region the template lacks loses it; one the template has more of keeps the template's).
pub fn image_of(template: &Snapshot, snap: &Snapshot) -> Vec<u8> {
    let mut image = Vec::new();
    for region in &template.regions {
        let mut bytes = region.data.clone();
        let end = region.start + bytes.len() as u64;
        for other in &snap.regions {
            let other_end = other.start + other.data.len() as u64;
            let (lo, hi) = (region.start.max(other.start), end.min(other_end));
            if lo < hi {
                let (at, from) = ((lo - region.start) as usize, (lo - other.start) as usize);
                let n = (hi - lo) as usize;
                bytes[at..at + n].copy_from_slice(&other.data[from..from + n]);
            }
        }
        image.extend(bytes);
    }
    image
}

/// Where `addr` lies in an image over `template` (its offset), when a region holds it.
pub fn offset_of(template: &Snapshot, addr: u64) -> Option<usize> {
    let mut base = 0usize;
    for region in &template.regions {
        let len = region.data.len();
        if addr >= region.start && addr < region.start + len as u64 {
            return Some(base + (addr - region.start) as usize);
        }
        base += len;
    }
    None
}
