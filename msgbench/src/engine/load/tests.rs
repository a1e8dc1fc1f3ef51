//! Tests of the frames a publisher builds and of the in-flight window, kept beside the module
//! rather than in it so its files hold only the loops.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::*;
use crate::engine::jsframe;
use crate::wire::proto::{self, parse, Parsed, ServerOp};
use crate::wire::stamp::{self, STAMP_LEN};

fn messages(bytes: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    // Re-read what a publisher wrote as the server would deliver it.
    let delivered = proto::deliver_as_server(bytes, 1);
    let mut out = Vec::new();
    let mut at = 0;
    while at < delivered.len() {
        match parse(&delivered[at..]).unwrap() {
            Parsed::Op(ServerOp::Msg(m), n) => {
                out.push((m.subject.to_vec(), m.payload.to_vec()));
                at += n;
            }
            other => panic!("{other:?}"),
        }
    }
    out
}

#[test]
fn frame_stamps_each_message_with_its_sequence() {
    let payload = vec![7u8; 20];
    let f = Frame::new(
        "s",
        None,
        b"",
        &payload,
        StampKind::Delivery {
            run_tag: 0x1234,
            publisher: 3,
        },
    );
    assert!(f.stamped());
    let mut out = Vec::new();
    for seq in 0..3 {
        f.append(&mut out, seq);
    }
    let msgs = messages(&out);
    assert_eq!(msgs.len(), 3);
    for (seq, (subject, p)) in msgs.iter().enumerate() {
        assert_eq!(subject, b"s");
        let s = stamp::read(p).unwrap();
        assert_eq!((s.run_tag, s.publisher, s.seq), (0x1234, 3, seq as u64));
        assert_eq!(&p[STAMP_LEN..], &[7u8; 4]);
    }
}

/// Drawn sizes: each message carries the size its draw gives (the same draw again for the same
/// seed and sequence), its stamp intact, with or without headers and keys.
#[test]
fn a_sized_frame_sends_each_message_at_its_drawn_size() {
    use crate::stats::draw::{Purpose, SizeDist, Sizes, Stream};
    let sizes = Sizes::build(&SizeDist::parse("uniform:16..300").unwrap(), STAMP_LEN).unwrap();
    let stream = Stream::new(5, Purpose::Size, 2);
    let headers = proto::header_block(&[("K".into(), "V".into())]);
    for (multi, headers) in [(None, &b""[..]), (Some(Keys::cycle(3)), &headers[..])] {
        let f = Frame::new(
            "s",
            multi,
            headers,
            &vec![9u8; sizes.max()],
            StampKind::Delivery {
                run_tag: 1,
                publisher: 2,
            },
        )
        .sized("s", sizes.clone(), stream);
        let mut out = Vec::new();
        let lens: Vec<usize> = (0..200).map(|seq| f.append(&mut out, seq)).collect();
        let msgs = messages(&out);
        assert_eq!(msgs.len(), 200);
        for (seq, (subject, p)) in msgs.iter().enumerate() {
            let want = sizes.draw(&mut stream.at(seq as u64));
            assert_eq!((p.len(), lens[seq]), (want, want), "message {seq}");
            assert_eq!(stamp::read(p).unwrap().seq, seq as u64);
            assert!(p[STAMP_LEN..].iter().all(|b| *b == 9));
            if multi.is_some() {
                assert_eq!(subject, format!("s.{}", seq % 3).as_bytes());
            } else {
                assert_eq!(subject, b"s");
            }
        }
        assert!(lens.iter().any(|l| *l != lens[0]), "the sizes vary");
    }
}

#[test]
fn frame_without_room_for_a_stamp_sends_the_payload_as_is() {
    let f = Frame::new("s", None, b"", b"abcdefg", StampKind::Sequence);
    assert!(!f.stamped());
    let mut out = Vec::new();
    f.append(&mut out, 5);
    assert_eq!(out, b"PUB s 7\r\nabcdefg\r\n");
}

#[test]
fn sequence_stamp_is_the_first_eight_bytes() {
    let f = Frame::new("s", None, b"", &[0xEEu8; 10], StampKind::Sequence);
    assert!(f.stamped());
    let mut out = Vec::new();
    f.append(&mut out, 0x0102_0304_0506_0708);
    let msgs = messages(&out);
    assert_eq!(msgs[0].1, [8, 7, 6, 5, 4, 3, 2, 1, 0xEE, 0xEE]);
}

#[test]
fn random_keys_are_fixed_spread_and_in_range() {
    let k = Keys {
        n: 10,
        random: true,
        drawn: None,
    };
    let seen: std::collections::HashSet<u64> = (0..200).map(|s| k.of(s)).collect();
    assert_eq!(seen.len(), 10, "200 draws over 10 keys reach them all");
    assert!((0..1000).all(|s| k.of(s) < 10));
    let first: Vec<u64> = (0..8).map(|s| k.of(s)).collect();
    assert_ne!(
        first,
        (0..8).collect::<Vec<_>>(),
        "not the sequential order"
    );
    assert_eq!(
        first,
        (0..8).map(|s| k.of(s)).collect::<Vec<_>>(),
        "the same every run"
    );
}

#[test]
fn timed_stamp_carries_the_sequence_and_the_send_time() {
    let f = Frame::new("s", None, b"", &[0u8; 20], StampKind::Timed);
    let mut out = Vec::new();
    f.append(&mut out, 9);
    let msgs = messages(&out);
    assert_eq!(u64::from_le_bytes(msgs[0].1[..8].try_into().unwrap()), 9);
    let now = jsframe::unix_ns();
    let sent = jsframe::sent_at(&msgs[0].1, now).expect("a send time");
    assert!(now - sent < 1_000_000_000, "{now} {sent}");
}

#[test]
fn multisubject_frames_cycle_through_subjects() {
    let f = Frame::new(
        "s",
        Some(Keys::cycle(3)),
        b"",
        &[0u8; 16],
        StampKind::Delivery {
            run_tag: 1,
            publisher: 0,
        },
    );
    let mut out = Vec::new();
    for seq in 0..4 {
        f.append(&mut out, seq);
    }
    let text = String::from_utf8_lossy(&out);
    let lines: Vec<&str> = text
        .split("\r\n")
        .filter(|l| l.starts_with("PUB"))
        .collect();
    assert_eq!(
        lines,
        ["PUB s.0 16", "PUB s.1 16", "PUB s.2 16", "PUB s.0 16"]
    );
}

#[test]
fn keys_from_a_base_name_a_block_of_subjects_and_cycle_within_it() {
    let f = Frame::new("s", Some(Keys::cycle(2)), b"", &[0u8; 8], StampKind::None).keys_from(5);
    let mut out = Vec::new();
    for seq in 0..3 {
        f.append(&mut out, seq);
    }
    let text = String::from_utf8_lossy(&out);
    let lines: Vec<&str> = text
        .split("\r\n")
        .filter(|l| l.starts_with("PUB"))
        .collect();
    assert_eq!(lines, ["PUB s.5 8", "PUB s.6 8", "PUB s.5 8"]);
}

#[test]
fn window_limits_in_flight_and_expires_old_requests() {
    // The limit, with a timeout no test run reaches: a busy machine cannot expire a request
    // between two of these lines and change what they see.
    let w = Window::new(2, Duration::from_secs(3600));
    assert!(w.try_acquire(0) && w.try_acquire(1));
    assert!(!w.try_acquire(2));
    assert_eq!(w.complete(1), Completion::OnTime);
    assert_eq!(
        w.complete(1),
        Completion::Unknown,
        "a second reply for the same request is not awaited"
    );
    assert!(w.try_acquire(2));
    assert_eq!((w.in_flight(), w.timeouts()), (2, 0));

    // Expiry, with a short timeout: every check holds however late each line runs.
    let w = Window::new(2, Duration::from_millis(30));
    let stop = AtomicBool::new(false);
    let t = Instant::now();
    assert!(w.try_acquire(0) && w.try_acquire(1));
    // Nothing answers 0 and 1: acquire waits for 0 to time out, 30 ms after it was sent at
    // the earliest, then proceeds.
    assert!(w.acquire(2, &stop));
    assert!(t.elapsed() >= Duration::from_millis(30));
    assert!(w.timeouts() >= 1);
    assert!(
        matches!(w.complete(0), Completion::Late { .. }),
        "a reply after the timeout is late"
    );
    w.drain(&stop);
    // 0 was answered, late; 1 and 2 never were.
    assert_eq!(w.timeouts(), 2);
}

#[test]
fn reply_subjects_name_each_request() {
    let f = Frame::with_reply(
        "svc",
        None,
        Some("_INBOX.t.0."),
        b"",
        &[0u8; 8],
        StampKind::Sequence,
    );
    let mut out = Vec::new();
    f.append(&mut out, 7);
    f.append(&mut out, 12);
    let text = String::from_utf8_lossy(&out);
    let lines: Vec<&str> = text
        .split("\r\n")
        .filter(|l| l.starts_with("PUB"))
        .collect();
    assert_eq!(lines, ["PUB svc _INBOX.t.0.7 8", "PUB svc _INBOX.t.0.12 8"]);
}

#[test]
fn frame_with_headers_uses_hpub() {
    let block = proto::header_block(&[("A".into(), "b".into())]);
    let f = Frame::new(
        "s",
        None,
        &block,
        &[0u8; 16],
        StampKind::Delivery {
            run_tag: 9,
            publisher: 1,
        },
    );
    let mut out = Vec::new();
    f.append(&mut out, 42);
    assert!(out.starts_with(b"HPUB s 18 34\r\nNATS/1.0\r\nA: b\r\n\r\n"));
    let msgs = messages(&out);
    assert_eq!(stamp::read(&msgs[0].1).unwrap().seq, 42);
}

/// A subject template: each message goes to the subject drawn for its sequence (the same draw
/// again for the same seed), with drawn sizes and headers alike, its stamp intact.
#[test]
fn a_templated_frame_sends_each_message_to_its_drawn_subject() {
    use crate::stats::draw::{NamedToken, Purpose, SizeDist, Sizes, Stream, Template};
    let tokens =
        ["region=us:50%,eu:30%,ap:20%", "id=zipf:1.1:1000"].map(|t| NamedToken::parse(t).unwrap());
    let t = Template::build("orders.{region}.{id}", &tokens).unwrap();
    let stream = Stream::new(5, Purpose::Subject, 2);
    let sizes = Sizes::build(&SizeDist::parse("uniform:16..64").unwrap(), STAMP_LEN).unwrap();
    let headers = proto::header_block(&[("K".into(), "V".into())]);
    for (sized, headers) in [(false, &b""[..]), (true, &headers[..])] {
        let payload = vec![9u8; if sized { sizes.max() } else { 32 }];
        let stamp = StampKind::Delivery {
            run_tag: 1,
            publisher: 2,
        };
        let mut f = Frame::new(t.text(), None, headers, &payload, stamp);
        if sized {
            f = f.sized(t.text(), sizes.clone(), Stream::new(5, Purpose::Size, 2));
        }
        let f = f.templated(t.clone(), stream);
        let mut out = Vec::new();
        (0..300).for_each(|seq| {
            f.append(&mut out, seq);
        });
        let msgs = messages(&out);
        assert_eq!(msgs.len(), 300);
        let mut seen = std::collections::HashSet::new();
        for (seq, (subject, p)) in msgs.iter().enumerate() {
            let want = t.with_subject(&mut stream.at(seq as u64), |parts| parts.concat());
            assert_eq!(subject, &want, "message {seq}");
            assert_eq!(stamp::read(p).unwrap().seq, seq as u64);
            seen.insert(subject.clone());
        }
        assert!(seen.len() > 50, "the subjects vary: {}", seen.len());
    }
}
