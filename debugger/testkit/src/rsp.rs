//! Scripted GDB servers on loopback: the exact bytes a client must send next and what the
//! server answers, step by step (a mismatch fails the test through the server thread's join).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use memlife_rsp::packet::encode;

/// One step of a fake server's script.
pub enum Step {
    /// The client must send exactly these bytes next.
    Expect(Vec<u8>),
    /// The server sends these bytes.
    Send(Vec<u8>),
    /// The server closes the connection.
    Close,
    /// The server reads whatever comes and never answers, for this long.
    Silence(Duration),
}

/// `s` framed as a packet (`$s#cs`), the bytes a client or server puts on the wire.
pub fn pkt(s: &str) -> Vec<u8> {
    encode(s.as_bytes())
}

/// An acknowledgement followed by `s` framed as a packet (`+$s#cs`): a reply as a server in
/// acknowledged mode sends it.
pub fn ack_pkt(s: &str) -> Vec<u8> {
    let mut v = b"+".to_vec();
    v.extend(pkt(s));
    v
}

/// Starts a server that plays `script` to the first client; joining it returns the script's
/// verdict (a mismatch panics in the server thread and fails the join).
pub fn serve(script: Vec<Step>) -> (String, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let handle = std::thread::spawn(move || {
        let (mut sock, _) = listener.accept().unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        for (i, step) in script.into_iter().enumerate() {
            match step {
                Step::Expect(want) => {
                    let mut got = vec![0u8; want.len()];
                    sock.read_exact(&mut got).unwrap_or_else(|e| {
                        panic!(
                            "step {i}: waiting for {:?}: {e}",
                            String::from_utf8_lossy(&want)
                        )
                    });
                    assert_eq!(
                        String::from_utf8_lossy(&got),
                        String::from_utf8_lossy(&want),
                        "step {i}"
                    );
                }
                Step::Send(bytes) => sock.write_all(&bytes).unwrap(),
                Step::Close => return,
                Step::Silence(d) => {
                    let end = Instant::now() + d;
                    let mut sink = [0u8; 256];
                    sock.set_read_timeout(Some(Duration::from_millis(20)))
                        .unwrap();
                    while Instant::now() < end {
                        let _ = sock.read(&mut sink);
                    }
                }
            }
        }
        // Keep the socket open until the client is done.
        let mut rest = Vec::new();
        let _ = sock.read_to_end(&mut rest);
    });
    (addr, handle)
}

/// Frames an already-encoded payload (for run-length replies `encode` would escape).
pub fn pkt_raw(raw: &str) -> Vec<u8> {
    let cs = raw.bytes().fold(0u8, |a, b| a.wrapping_add(b));
    format!("${raw}#{cs:02x}").into_bytes()
}
