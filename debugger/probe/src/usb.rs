//! Whether this machine can see a USB probe at all: said in `memlife probes` and in the error
//! when no probe is attached.

/// Why no probe can be seen at all, when that is known: a Linux machine without a USB bus in
/// sysfs (a container, a build machine) cannot see any probe, attached or not.
pub fn usb_hint() -> &'static str {
    if cfg!(target_os = "linux") && !std::path::Path::new("/sys/bus/usb/devices").exists() {
        "; this machine shows no USB bus (/sys/bus/usb/devices is missing, as in a container)"
    } else {
        ""
    }
}
