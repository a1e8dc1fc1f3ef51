//! The HTTP/2 frames and HPACK fields msgbench's own unary path ([`super::h2raw`]) writes and
//! reads: frame headers (RFC 9113 4.1), the request's header block as HPACK literals without
//! indexing (RFC 7541 6.2.2, so no encoder state is needed), and padding taken off. Decoding
//! the server's header blocks is left to a real HPACK decoder (`fluke-hpack`).

use super::wire::CallHead;

pub(super) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

pub(super) const DATA: u8 = 0;
pub(super) const HEADERS: u8 = 1;
pub(super) const RST_STREAM: u8 = 3;
pub(super) const SETTINGS: u8 = 4;
pub(super) const PUSH_PROMISE: u8 = 5;
pub(super) const PING: u8 = 6;
pub(super) const GOAWAY: u8 = 7;
pub(super) const WINDOW_UPDATE: u8 = 8;
pub(super) const CONTINUATION: u8 = 9;

pub(super) const END_STREAM: u8 = 0x1;
pub(super) const ACK: u8 = 0x1;
pub(super) const END_HEADERS: u8 = 0x4;
pub(super) const PADDED: u8 = 0x8;
pub(super) const PRIORITY: u8 = 0x20;

/// The request's header block: every field a literal without indexing (RFC 7541 6.2.2), so
/// it can be sent any number of times whatever the server's table holds.
pub(super) fn request_block(head: &CallHead) -> Vec<u8> {
    let mut b = Vec::with_capacity(256);
    let scheme = head.uri.scheme_str().unwrap_or("http");
    let authority = head.uri.authority().map_or("", |a| a.as_str());
    let path = head.uri.path_and_query().map_or("/", |p| p.as_str());
    for (n, v) in [
        (":method", "POST"),
        (":scheme", scheme),
        (":authority", authority),
        (":path", path),
    ] {
        literal(&mut b, n.as_bytes(), v.as_bytes());
    }
    for (n, v) in &head.headers {
        literal(&mut b, n.as_str().as_bytes(), v.as_bytes());
    }
    b
}

pub(super) fn literal(b: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    b.push(0);
    for s in [name, value] {
        integer(b, 0, 7, s.len());
        b.extend_from_slice(s);
    }
}

/// An HPACK integer with an `n`-bit prefix (RFC 7541 5.1), the prefix's other bits `first`.
pub(super) fn integer(b: &mut Vec<u8>, first: u8, n: u32, mut v: usize) {
    let max = (1usize << n) - 1;
    if v < max {
        b.push(first | v as u8);
        return;
    }
    b.push(first | max as u8);
    v -= max;
    while v >= 128 {
        b.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    b.push(v as u8);
}

pub(super) fn put_head(out: &mut Vec<u8>, len: usize, ty: u8, flags: u8, id: u32) {
    let len = len as u32;
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(ty);
    out.push(flags);
    out.extend_from_slice(&id.to_be_bytes());
}

pub(super) fn put_frame(out: &mut Vec<u8>, ty: u8, flags: u8, id: u32, payload: &[u8]) {
    put_head(out, payload.len(), ty, flags, id);
    out.extend_from_slice(payload);
}

pub(super) fn u32_at(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// A DATA or HEADERS payload without its padding; `None` if the padding does not fit.
pub(super) fn unpad(p: &[u8], flags: u8) -> Option<&[u8]> {
    if flags & PADDED == 0 {
        return Some(p);
    }
    let pad = usize::from(*p.first()?);
    if 1 + pad > p.len() {
        return None;
    }
    Some(&p[1..p.len() - pad])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_follow_rfc_7541_examples() {
        // C.1.1: 10 with a 5-bit prefix; C.1.2: 1337 with a 5-bit prefix.
        let mut b = Vec::new();
        integer(&mut b, 0, 5, 10);
        assert_eq!(b, [0x0a]);
        b.clear();
        integer(&mut b, 0, 5, 1337);
        assert_eq!(b, [0x1f, 0x9a, 0x0a]);
    }

    #[test]
    fn a_literal_without_indexing_is_rfc_7541_c_2_2() {
        // C.2.2: ":path: /sample/path", here with a literal name rather than an indexed one.
        let mut b = Vec::new();
        literal(&mut b, b":path", b"/sample/path");
        let mut want = vec![0x00, 0x05];
        want.extend_from_slice(b":path");
        want.push(0x0c);
        want.extend_from_slice(b"/sample/path");
        assert_eq!(b, want);
        // And a real decoder reads it back, leaving its dynamic table empty.
        let mut d = fluke_hpack::Decoder::new();
        let got = d.decode(&b).expect("decodes");
        assert_eq!(got, vec![(b":path".to_vec(), b"/sample/path".to_vec())]);
    }

    #[test]
    fn a_frame_header_is_rfc_9113_4_1() {
        // A SETTINGS acknowledgement: length 0, type 4, flags 1, stream 0.
        let mut b = Vec::new();
        put_frame(&mut b, SETTINGS, ACK, 0, &[]);
        assert_eq!(b, [0, 0, 0, 4, 1, 0, 0, 0, 0]);
        // A DATA frame ending stream 3 with 2 bytes.
        b.clear();
        put_frame(&mut b, DATA, END_STREAM, 3, b"hi");
        assert_eq!(b, [0, 0, 2, 0, 1, 0, 0, 0, 3, b'h', b'i']);
    }

    #[test]
    fn padding_is_taken_off() {
        assert_eq!(unpad(&[2, b'a', b'b', 0, 0], PADDED), Some(&b"ab"[..]));
        assert!(unpad(&[9, b'a'], PADDED).is_none());
    }
}
