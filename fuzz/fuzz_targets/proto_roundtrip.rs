//! Encodes publishes with the crate's encoders, turns each into the MSG/HMSG a server would
//! deliver for it, and checks that `parse` gives back exactly the parts that were published.
//!
//! Checked:
//! - `encode_pub` writes the control line `PUB subject [reply] size` or
//!   `HPUB subject [reply] hdr_len total_len` with the right numbers;
//! - the delivered MSG/HMSG parses to the same subject, sid, reply, header block and payload,
//!   consuming exactly its own bytes, also when several are back to back in one buffer;
//! - every proper prefix of a delivery is `Incomplete`, with `need` equal to the delivery's
//!   length as soon as the control line is complete.

#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use msgbench::wire::proto::{encode_pub, header_block, parse, Msg, Parsed, ServerOp};

#[derive(Debug, Arbitrary)]
enum Headers {
    None,
    /// Built with `header_block`, as msgbench does for `--header k=v`.
    Pairs(Vec<(String, String)>),
    /// Any bytes: the block is length-delimited, so its content must not matter to framing.
    Raw(Vec<u8>),
}

#[derive(Debug, Arbitrary)]
struct Publish {
    subject: Vec<u8>,
    reply: Option<Vec<u8>>,
    headers: Headers,
    payload: Vec<u8>,
    sid: u64,
}

/// Subjects and replies are single tokens of the control line: no separators, no line breaks.
fn token(raw: &[u8]) -> Vec<u8> {
    let mut t: Vec<u8> = raw
        .iter()
        .map(|&b| match b {
            b' ' | b'\t' | b'\r' | b'\n' => b'_',
            b => b,
        })
        .collect();
    if t.is_empty() {
        t.push(b'x');
    }
    t
}

/// The first bytes of `b`, escaped, for failure reports.
fn show(b: &[u8]) -> String {
    let head: String = b
        .iter()
        .take(120)
        .flat_map(|c| c.escape_ascii())
        .map(char::from)
        .collect();
    if b.len() > 120 {
        format!("\"{head}\"...({} bytes)", b.len())
    } else {
        format!("\"{head}\"")
    }
}

/// A delivery: the bytes a server sends, and the message they must parse to.
struct Delivery {
    wire: Vec<u8>,
    subject: Vec<u8>,
    sid: u64,
    reply: Option<Vec<u8>>,
    headers: Option<Vec<u8>>,
    payload: Vec<u8>,
}

impl Delivery {
    fn expected(&self) -> Msg<'_> {
        Msg {
            subject: &self.subject,
            sid: self.sid,
            reply: self.reply.as_deref(),
            headers: self.headers.as_deref(),
            payload: &self.payload,
        }
    }
}

fn deliver(p: &Publish) -> Delivery {
    let subject = token(&p.subject);
    let reply = p.reply.as_deref().map(token);
    let block = match &p.headers {
        Headers::None => Vec::new(),
        Headers::Pairs(pairs) => header_block(pairs),
        Headers::Raw(raw) => raw.clone(),
    };
    // Any u64 is a valid sid: the parser accepts the full range.
    let sid = p.sid;

    let mut published = Vec::new();
    encode_pub(
        &mut published,
        &subject,
        reply.as_deref(),
        &block,
        &p.payload,
    );

    // Check the encoder's control line, then rewrite it the way a server delivers it.
    let line_end = published
        .windows(2)
        .position(|w| w == b"\r\n")
        .expect("PUB has a control line");
    let line = &published[..line_end];
    let body = &published[line_end + 2..];
    let words: Vec<&[u8]> = line.split(|b| *b == b' ').collect();
    let total = (block.len() + p.payload.len()).to_string();
    let mut expected_words: Vec<&[u8]> = vec![&subject];
    if let Some(r) = &reply {
        expected_words.push(r);
    }
    let hdr_len = block.len().to_string();
    let op: &[u8] = if block.is_empty() {
        b"MSG"
    } else {
        expected_words.push(hdr_len.as_bytes());
        b"HMSG"
    };
    expected_words.push(total.as_bytes());
    let published_op: &[u8] = if block.is_empty() { b"PUB" } else { b"HPUB" };
    assert_eq!(
        words[0],
        published_op,
        "encoded control line {}",
        show(line)
    );
    assert_eq!(
        &words[1..],
        &expected_words[..],
        "encoded control line {}",
        show(line)
    );
    assert_eq!(body.len(), block.len() + p.payload.len() + 2);
    assert!(body.ends_with(b"\r\n"));

    let mut wire = op.to_vec();
    wire.push(b' ');
    wire.extend_from_slice(&subject);
    wire.push(b' ');
    wire.extend_from_slice(sid.to_string().as_bytes());
    for w in &words[2..] {
        wire.push(b' ');
        wire.extend_from_slice(w);
    }
    wire.extend_from_slice(b"\r\n");
    wire.extend_from_slice(body);

    Delivery {
        wire,
        subject,
        sid,
        reply,
        headers: (!block.is_empty()).then_some(block),
        payload: p.payload.clone(),
    }
}

fuzz_target!(|publishes: Vec<Publish>| {
    let deliveries: Vec<Delivery> = publishes.iter().take(16).map(deliver).collect();

    // Each delivery alone, and each of its proper prefixes.
    for d in &deliveries {
        match parse(&d.wire) {
            Ok(Parsed::Op(ServerOp::Msg(m), n)) => {
                assert_eq!(m, d.expected());
                assert_eq!(n, d.wire.len());
            }
            other => panic!("delivery {} parsed as {other:?}", show(&d.wire)),
        }
        let line_len = d.wire.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
        for cut in 0..d.wire.len() {
            let want = if cut >= line_len {
                Some(d.wire.len())
            } else {
                None
            };
            match parse(&d.wire[..cut]) {
                Ok(Parsed::Incomplete { need }) => assert_eq!(need, want, "prefix of {cut}"),
                other => panic!("prefix of {cut} bytes parsed as {other:?}"),
            }
        }
    }

    // All deliveries back to back in one buffer.
    let stream: Vec<u8> = deliveries
        .iter()
        .flat_map(|d| d.wire.iter().copied())
        .collect();
    let mut at = 0;
    for d in &deliveries {
        match parse(&stream[at..]) {
            Ok(Parsed::Op(ServerOp::Msg(m), n)) => {
                assert_eq!(m, d.expected());
                assert_eq!(n, d.wire.len());
                at += n;
            }
            other => panic!("delivery at {at} of the stream parsed as {other:?}"),
        }
    }
    assert_eq!(at, stream.len());
    assert_eq!(parse(&stream[at..]), Ok(Parsed::Incomplete { need: None }));
});
