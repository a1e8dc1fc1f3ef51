use super::*;

fn op(buf: &[u8]) -> (ServerOp<'_>, usize) {
    match parse(buf).unwrap() {
        Parsed::Op(op, n) => (op, n),
        other => panic!("expected an operation, got {other:?}"),
    }
}

#[test]
fn parses_msg_without_reply() {
    let buf = b"MSG foo.bar 9 5\r\nhello\r\nPING\r\n";
    let (o, n) = op(buf);
    assert_eq!(
        o,
        ServerOp::Msg(Msg {
            subject: b"foo.bar",
            sid: 9,
            reply: None,
            headers: None,
            payload: b"hello"
        })
    );
    assert_eq!(n, 24);
    assert_eq!(op(&buf[n..]), (ServerOp::Ping, 6));
}

#[test]
fn parses_msg_with_reply_and_tabs() {
    let (o, _) = op(b"MSG\tfoo 1\t_INBOX.x  3\r\nabc\r\n");
    let ServerOp::Msg(m) = o else { panic!() };
    assert_eq!(m.reply, Some(&b"_INBOX.x"[..]));
    assert_eq!(m.payload, b"abc");
}

#[test]
fn parses_empty_payload() {
    let (o, n) = op(b"MSG a 1 0\r\n\r\n");
    let ServerOp::Msg(m) = o else { panic!() };
    assert_eq!(m.payload, b"");
    assert_eq!(n, 13);
}

#[test]
fn parses_hmsg() {
    let buf = b"HMSG s 2 r 19 24\r\nNATS/1.0\r\nA: bb\r\n\r\nhello\r\n";
    let (o, n) = op(buf);
    let ServerOp::Msg(m) = o else { panic!() };
    assert_eq!(m.headers, Some(&b"NATS/1.0\r\nA: bb\r\n\r\n"[..]));
    assert_eq!(m.payload, b"hello");
    assert_eq!(m.reply, Some(&b"r"[..]));
    assert_eq!(n, buf.len());
    let (o, _) = op(b"HMSG s 2 12 12\r\nNATS/1.0\r\n\r\n\r\n");
    let ServerOp::Msg(m) = o else { panic!() };
    assert_eq!((m.reply, m.payload), (None, &b""[..]));
}

#[test]
fn parses_control_ops() {
    assert_eq!(op(b"PONG\r\n"), (ServerOp::Pong, 6));
    assert_eq!(op(b"ping\r\n"), (ServerOp::Ping, 6));
    assert_eq!(op(b"+OK\r\n"), (ServerOp::Ok, 5));
    assert_eq!(
        op(b"-ERR 'Slow Consumer'\r\n"),
        (ServerOp::Err(b"Slow Consumer"), 22)
    );
    assert_eq!(
        op(b"INFO {\"a\":1} \r\n"),
        (ServerOp::Info(b"{\"a\":1}"), 15)
    );
}

#[test]
fn every_split_point_of_a_stream_yields_the_same_ops() {
    // A message split across reads at any byte must parse only when complete, and never
    // earlier or differently.
    let stream: &[u8] =
        b"INFO {}\r\nMSG a.b 1 4\r\nab\r\n\r\nHMSG c 2 12 14\r\nNATS/1.0\r\n\r\nhi\r\nPING\r\n";
    let mut whole = Vec::new();
    let mut at = 0;
    while at < stream.len() {
        let (o, n) = op(&stream[at..]);
        whole.push(format!("{o:?}"));
        at += n;
    }
    assert_eq!(whole.len(), 4);
    for cut in 0..stream.len() {
        let mut seen = Vec::new();
        let mut at = 0;
        while at < cut {
            match parse(&stream[at..cut]).unwrap() {
                Parsed::Op(o, n) => {
                    seen.push(format!("{o:?}"));
                    at += n;
                }
                Parsed::Incomplete { need } => {
                    if let Some(need) = need {
                        assert!(at + need > cut, "claimed incomplete with enough bytes");
                    }
                    break;
                }
            }
        }
        assert_eq!(seen[..], whole[..seen.len()], "cut at {cut}");
    }
}

#[test]
fn incomplete_msg_reports_needed_length() {
    assert_eq!(
        parse(b"MSG a 1 10\r\nabc").unwrap(),
        Parsed::Incomplete { need: Some(24) }
    );
    assert_eq!(
        parse(b"MSG a 1 1").unwrap(),
        Parsed::Incomplete { need: None }
    );
}

#[test]
fn rejects_malformed_input() {
    assert_eq!(parse(b"PING\n"), Err(ProtocolError::MissingCr));
    assert_eq!(parse(b"\n"), Err(ProtocolError::MissingCr));
    assert_eq!(
        parse(b"FOO\r\n"),
        Err(ProtocolError::UnknownOp("FOO".into()))
    );
    assert_eq!(
        parse(b"MSG a\r\n"),
        Err(ProtocolError::MalformedArgs("MSG"))
    );
    assert_eq!(
        parse(b"MSG a 1 x\r\n"),
        Err(ProtocolError::MalformedArgs("MSG"))
    );
    assert_eq!(
        parse(b"MSG a 1 r 2 3\r\n"),
        Err(ProtocolError::MalformedArgs("MSG"))
    );
    assert_eq!(
        parse(b"MSG a 1 2\r\nabXY"),
        Err(ProtocolError::MissingPayloadEnd)
    );
    assert_eq!(
        parse(b"HMSG a 1 9 3\r\n"),
        Err(ProtocolError::MalformedArgs("HMSG"))
    );
    assert_eq!(
        parse(b"MSG a 1 99999999999\r\n"),
        Err(ProtocolError::MessageTooLarge {
            size: 99_999_999_999,
            limit: MAX_MESSAGE_SIZE
        })
    );
    let long = vec![b'A'; MAX_CONTROL_LINE + 2];
    assert_eq!(
        parse(&long),
        Err(ProtocolError::ControlLineTooLong {
            limit: MAX_CONTROL_LINE
        })
    );
    assert_eq!(
        parse(b"MSG a 18446744073709551616 1\r\n"),
        Err(ProtocolError::MalformedArgs("MSG"))
    );
}

#[test]
fn control_line_limit_does_not_depend_on_how_bytes_arrive() {
    // A line of exactly the limit: accepted whole, and still pending with only its CR.
    let mut line = b"INFO ".to_vec();
    line.resize(MAX_CONTROL_LINE, b'x');
    let mut whole = line.clone();
    whole.extend_from_slice(b"\r\n");
    assert!(matches!(
        parse(&whole),
        Ok(Parsed::Op(ServerOp::Info(_), _))
    ));
    assert_eq!(
        parse(&whole[..whole.len() - 1]),
        Ok(Parsed::Incomplete { need: None })
    );
    // One byte longer: rejected whether or not the CRLF is already there.
    let mut over = line.clone();
    over.push(b'x');
    let mut over_whole = over.clone();
    over_whole.extend_from_slice(b"\r\n");
    assert_eq!(
        parse(&over_whole),
        Err(ProtocolError::ControlLineTooLong {
            limit: MAX_CONTROL_LINE
        })
    );
    over.push(b'\r');
    assert_eq!(
        parse(&over),
        Err(ProtocolError::ControlLineTooLong {
            limit: MAX_CONTROL_LINE
        })
    );
    assert_eq!(
        parse(b"MSG a 18446744073709551615 1\r\nx\r\n").map(|p| matches!(p, Parsed::Op(..))),
        Ok(true)
    );
}

#[test]
fn encodes_commands_exactly() {
    let mut b = Vec::new();
    encode_pub(&mut b, b"foo", None, b"", b"hi");
    encode_pub(&mut b, b"foo", Some(b"rep"), b"", b"");
    encode_sub(&mut b, "foo.>", None, 7);
    encode_sub(&mut b, "foo", Some("q"), 8);
    encode_unsub(&mut b, 7, Some(10));
    encode_unsub(&mut b, 8, None);
    encode_ping(&mut b);
    encode_pong(&mut b);
    assert_eq!(
        b,
        b"PUB foo 2\r\nhi\r\nPUB foo rep 0\r\n\r\nSUB foo.> 7\r\nSUB foo q 8\r\n\
UNSUB 7 10\r\nUNSUB 8\r\nPING\r\nPONG\r\n"
    );
}

#[test]
fn encodes_hpub_with_header_block() {
    let block = header_block(&[("K".into(), "V".into())]);
    assert_eq!(block, b"NATS/1.0\r\nK: V\r\n\r\n");
    let mut b = Vec::new();
    encode_pub(&mut b, b"s", None, &block, b"xyz");
    assert_eq!(b, b"HPUB s 18 21\r\nNATS/1.0\r\nK: V\r\n\r\nxyz\r\n");
    // What we encode, a server would echo back as HMSG that we parse to the same parts.
    let echoed = b"HMSG s 1 18 21\r\nNATS/1.0\r\nK: V\r\n\r\nxyz\r\n";
    let (o, _) = op(echoed);
    let ServerOp::Msg(m) = o else { panic!() };
    assert_eq!((m.headers.unwrap(), m.payload), (&block[..], &b"xyz"[..]));
}

#[test]
fn connect_omits_absent_credentials() {
    let mut b = Vec::new();
    let o = ConnectOptions {
        verbose: false,
        pedantic: false,
        tls_required: false,
        name: "n",
        lang: "rust",
        version: "0",
        protocol: 1,
        headers: true,
        no_responders: true,
        echo: true,
        user: None,
        pass: None,
        auth_token: Some("t"),
        nkey: None,
        sig: None,
        jwt: None,
    };
    encode_connect(&mut b, &o);
    let s = String::from_utf8(b).unwrap();
    assert!(s.starts_with("CONNECT {") && s.ends_with("}\r\n"));
    assert!(s.contains("\"auth_token\":\"t\"") && !s.contains("\"user\""));
}
