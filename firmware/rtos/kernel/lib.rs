//! Empty: this package only names the FreeRTOS-Kernel sources the RTOS firmware is built from
//! (see Cargo.toml).
