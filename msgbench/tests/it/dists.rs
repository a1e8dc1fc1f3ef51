//! Drawn sizes and keys, seen from outside: a raw subscription of the test's own (not
//! msgbench's subscriber) sees every message a run sends and counts what it asked for.
//! - `pub --size`: the payload sizes' shares are the asked weights; the same seed sends the same
//!   sequence of sizes, another seed another.
//! - `kv get --key-dist`: the direct-get requests' subjects name the keys; their counts are
//!   exactly those the seed draws (the library's own draw, replayed per client), and their
//!   shares within 1% of the distribution's exact probabilities. The server keeps no count of
//!   direct gets per key, so a subscription on the requests' subjects is the outside view.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::thread::JoinHandle;

use crate::support::{run_json, schema_errors, stderr, u, TestServer, HANG};

const MSGS: usize = 100_000;

/// Subscribes to `subject` on a plain connection, waits until the server confirms it (the PONG
/// after the SUB), and collects the subject and payload size of the next `n` messages, in order.
fn raw_msgs(url: &str, subject: &str, n: usize) -> JoinHandle<Vec<(String, usize)>> {
    let mut s = TcpStream::connect(url.trim_start_matches("nats://")).unwrap();
    s.set_read_timeout(Some(HANG)).unwrap();
    write!(
        s,
        "CONNECT {{\"verbose\":false}}\r\nSUB {subject} 1\r\nPING\r\n"
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    loop {
        line.clear();
        assert!(r.read_line(&mut line).unwrap() > 0, "the server closed");
        if line.starts_with("PONG") {
            break;
        }
    }
    std::thread::spawn(move || {
        let mut seen = Vec::with_capacity(n);
        let mut body = Vec::new();
        while seen.len() < n {
            line.clear();
            assert!(r.read_line(&mut line).unwrap() > 0, "the server closed");
            if let Some(rest) = line.strip_prefix("MSG ") {
                let words: Vec<&str> = rest.split_whitespace().collect();
                let len: usize = words.last().unwrap().parse().unwrap();
                body.resize(len + 2, 0);
                r.read_exact(&mut body).unwrap();
                seen.push((words[0].to_string(), len));
            } else if line.starts_with("PING") {
                r.get_mut().write_all(b"PONG\r\n").unwrap();
            }
        }
        seen
    })
}

/// The payload sizes of the next `n` messages on `subject`.
fn raw_sizes(url: &str, subject: &str, n: usize) -> JoinHandle<Vec<usize>> {
    let seen = raw_msgs(url, subject, n);
    std::thread::spawn(move || seen.join().unwrap().into_iter().map(|(_, n)| n).collect())
}

/// One `pub` run of MSGS messages with `--size SPEC --seed SEED`, its sizes as the raw
/// subscription saw them, and its result.
fn sizes_sent(url: &str, spec: &str, seed: &str) -> (Vec<usize>, serde_json::Value) {
    let seen = raw_sizes(url, "dists", MSGS);
    let msgs = MSGS.to_string();
    let (out, v) = run_json(&[
        "pub",
        "--server",
        url,
        "--subject",
        "dists",
        "--msgs",
        &msgs,
        "--size",
        spec,
        "--seed",
        seed,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    (seen.join().unwrap(), v)
}

#[test]
fn a_weighted_list_of_sizes_is_sent_in_its_proportions_and_repeats_with_its_seed() {
    let server = TestServer::start();
    let spec = "16B:70%,100B:25%,1000B:5%";
    let (sizes, v) = sizes_sent(&server.url, spec, "7");
    assert_eq!(sizes.len(), MSGS);
    let mut count: HashMap<usize, usize> = HashMap::new();
    sizes
        .iter()
        .for_each(|s| *count.entry(*s).or_default() += 1);
    assert_eq!(count.len(), 3, "sizes seen: {count:?}");
    for (size, want) in [(16, 0.70), (100, 0.25), (1000, 0.05)] {
        let got = count[&size] as f64 / MSGS as f64;
        assert!(
            (got - want).abs() < 0.01,
            "{size} B: {got:.4} of the messages, asked {want}"
        );
    }
    // The result records the distribution as given, its seed, and the bytes actually sent.
    assert!(schema_errors(&v).is_empty(), "{:?}", schema_errors(&v));
    let d = &v["params"]["size_distribution"];
    assert_eq!(d["spec"], spec);
    assert_eq!(d["seed"], 7);
    assert_eq!(
        (d["min"].as_u64(), d["max"].as_u64()),
        (Some(16), Some(1000))
    );
    let bytes: usize = sizes.iter().sum();
    let pubs = v["clients"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["role"] == "pub");
    let sent: u64 = pubs.map(|c| c["bytes"].as_u64().unwrap()).sum();
    assert_eq!(
        sent, bytes as u64,
        "the publisher's bytes are the payloads' sum"
    );

    let (again, _) = sizes_sent(&server.url, spec, "7");
    assert_eq!(
        again, sizes,
        "the same seed sends the same sizes in the same order"
    );
    let (other, _) = sizes_sent(&server.url, spec, "8");
    assert_ne!(other, sizes, "another seed sends another sequence");
}

#[test]
fn bad_distributions_are_refused_in_one_line_before_connecting() {
    // Port 1 has no server: a refusal must come before any dial.
    let (core, js) = (&["pub"][..], &["js", "pub"][..]);
    for (cmds, args, names) in [
        (&[core, js][..], &["--size", "64B:70%,1KiB:20%"][..], "90%"),
        (&[core, js], &["--size", "lognormal:4KiB:1KiB"], "P99"),
        (&[core], &["--size", "8B:50%,1KiB:50%"], "16-byte stamp"),
        (&[js], &["--size", "4B:50%,1KiB:50%"], "8-byte stamp"),
        (
            &[core, js],
            &["--size", "hist:/nonexistent/sizes.json"],
            "cannot read",
        ),
        (&[core, js], &["--seed", "3"], "--seed"),
    ] {
        for cmd in cmds {
            let out =
                crate::support::run(&[cmd, &["--server", "nats://127.0.0.1:1"][..], args].concat());
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{cmd:?} {args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{cmd:?} {args:?}: {err}");
            assert!(
                err.starts_with("error: ") && err.contains(names),
                "{cmd:?} {args:?}: {err}"
            );
        }
    }
}

/// The key each of a `kv get`'s `clients` draws for its operations 0 … msgs-1 under `seed`,
/// replayed with the library's own sampler: what the run must have asked for.
fn keys_drawn(spec: &str, keys: u64, seed: u64, clients: u64, msgs: u64) -> HashMap<u64, u64> {
    use msgbench::engine::load::Keys;
    use msgbench::stats::draw::TokenDist;
    let pick = TokenDist::parse_keys(spec)
        .unwrap()
        .build(Some(keys))
        .unwrap()
        .numbered()
        .unwrap();
    let mut want = HashMap::new();
    for c in 0..clients {
        let k = Keys::drawn(keys, pick, seed).sender(c);
        for seq in 0..msgs {
            *want.entry(k.of(seq)).or_default() += 1;
        }
    }
    want
}

/// A `kv get` with `--key-dist SPEC --seed 5` over 100 keys, 2 clients × 15,000 gets: the keys
/// the raw subscription sees, counted.
fn kv_gets_seen(url: &str, bucket: &str, spec: &str) -> (HashMap<u64, u64>, serde_json::Value) {
    let (clients, msgs) = (2u64, 15_000u64);
    let prefix = format!("$JS.API.DIRECT.GET.KV_{bucket}.$KV.{bucket}.");
    let seen = raw_msgs(url, &format!("{prefix}>"), (clients * msgs) as usize);
    let (out, v) = run_json(&[
        "kv",
        "get",
        "--server",
        url,
        "--bucket",
        bucket,
        "--keys",
        "100",
        "--key-dist",
        spec,
        "--seed",
        "5",
        "--clients",
        &clients.to_string(),
        "--msgs",
        &msgs.to_string(),
        "--max-in-flight",
        "16",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(u(&v["delivery"]["received"]), clients * msgs);
    let mut got = HashMap::new();
    for (subject, _) in seen.join().unwrap() {
        let key: u64 = subject
            .strip_prefix(&prefix)
            .unwrap_or_else(|| panic!("{subject} is no get of {bucket}"))
            .parse()
            .unwrap();
        *got.entry(key).or_default() += 1;
    }
    assert_eq!(
        got,
        keys_drawn(spec, 100, 5, clients, msgs),
        "{spec}: the keys got are those the seed draws"
    );
    (got, v)
}

#[test]
fn kv_gets_draw_their_keys_from_the_distribution_asked() {
    use msgbench::stats::draw::TokenDist;
    let server = TestServer::start();
    for (bucket, spec) in [("zipf", "zipf:1.1"), ("hot", "hot:5%:60%")] {
        let (got, v) = kv_gets_seen(&server.url, bucket, spec);
        assert!(schema_errors(&v).is_empty(), "{:?}", schema_errors(&v));
        let d = &v["params"]["key_distribution"];
        assert_eq!(
            (d["spec"].as_str(), d["seed"].as_u64()),
            (Some(spec), Some(5))
        );
        assert!(v["params"]["key_order"].is_null());
        let pick = TokenDist::parse_keys(spec)
            .unwrap()
            .build(Some(100))
            .unwrap()
            .numbered()
            .unwrap();
        let total: u64 = got.values().sum();
        for k in 0..100 {
            let share = got.get(&k).copied().unwrap_or(0) as f64 / total as f64;
            let want = pick.probability(k);
            assert!(
                (share - want).abs() < 0.01,
                "{spec}: key {k} took {share:.4} of the gets, asked {want:.4}"
            );
        }
    }
}

/// `kv put --key-dist`: a raw subscription on the bucket's subjects sees each put's key, and
/// they are exactly the keys the seed draws; the puts reconcile with the stream.
#[test]
fn kv_puts_draw_their_keys_from_the_distribution_asked() {
    let server = TestServer::start();
    let (spec, msgs) = ("hot:5%:60%", 15_000u64);
    let seen = raw_msgs(&server.url, "$KV.hotput.>", msgs as usize);
    let (out, v) = run_json(&[
        "kv",
        "put",
        "--server",
        &server.url,
        "--bucket",
        "hotput",
        "--keys",
        "100",
        "--key-dist",
        spec,
        "--seed",
        "5",
        "--msgs",
        &msgs.to_string(),
        "--max-in-flight",
        "16",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut got: HashMap<u64, u64> = HashMap::new();
    for (subject, _) in seen.join().unwrap() {
        let key = subject
            .strip_prefix("$KV.hotput.")
            .unwrap()
            .parse()
            .unwrap();
        *got.entry(key).or_default() += 1;
    }
    assert_eq!(
        got,
        keys_drawn(spec, 100, 5, 1, msgs),
        "the keys put are the seed's"
    );
    assert!(schema_errors(&v).is_empty(), "{:?}", schema_errors(&v));
    assert_eq!(v["jetstream"]["reconciled"], true, "{}", v["jetstream"]);
}

#[test]
fn bad_key_distributions_are_refused_in_one_line_before_connecting() {
    for (args, names) in [
        (&["--key-dist", "zipf:0"][..], "--key-dist"),
        (&["--key-dist", "zipf:-2"], "above 0"),
        (&["--key-dist", "hot:1%:50%", "--keys", "10"], "0 hot ones"),
        (&["--key-dist", "hot:150%:50%"], "between 0% and 100%"),
        (&["--key-dist", "zipf:1.1:100"], "--keys"),
        (&["--key-dist", "a,b"], "not a key distribution"),
        (&["--key-dist", ""], "no values"),
        (&["--seed", "3"], "--seed"),
        (&["--key-dist", "uniform", "--order", "random"], "--order"),
    ] {
        for op in ["get", "put"] {
            let out = crate::support::run(
                &[&["kv", op, "--server", "nats://127.0.0.1:1"][..], args].concat(),
            );
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(
                err.starts_with("error: ") && err.contains(names),
                "{op} {args:?}: {err}"
            );
        }
    }
}

/// `js pub --size SPEC --subject TEMPLATE --seed 3` in each publishing mode, seen from a raw
/// subscription on the stream's subjects: every message is the size and goes to the subject the
/// seed draws for it, in order (the library's own draws replayed); the sizes' shares are the
/// weights; the publisher's bytes and the acknowledged bytes are the payloads' sum; the stream
/// (created capturing the template's wildcard) reconciles and the result validates.
#[test]
fn js_pub_sends_each_message_at_its_drawn_size_and_subject_in_every_mode() {
    use msgbench::stats::draw::{
        NamedToken, Purpose, SenderSizes, SizeDist, Sizes, Stream, Template,
    };
    let server = TestServer::start();
    let spec = "16B:70%,100B:25%,1000B:5%";
    let tokens = ["region=us,eu,ap", "id=zipf:1.1:100"];
    let msgs = 20_000usize;
    let sizes = Sizes::build(&SizeDist::parse(spec).unwrap(), 8).unwrap();
    let want_sizes: Vec<usize> = {
        let s = SenderSizes::new(sizes, 3, 0);
        (0..msgs as u64).map(|m| s.of(m)).collect()
    };
    let named: Vec<NamedToken> = tokens
        .iter()
        .map(|t| NamedToken::parse(t).unwrap())
        .collect();
    for (i, mode) in [
        &["--mode", "async"][..],
        &["--mode", "sync", "--dedup"],
        &["--mode", "batch", "--batch", "50"],
        &["--mode", "fast"],
    ]
    .iter()
    .enumerate()
    {
        let template = format!("sized{i}.{{region}}.{{id}}");
        let t = Template::build(&template, &named).unwrap();
        let stream = Stream::new(3, Purpose::Subject, 0);
        let want_subjects: Vec<String> = (0..msgs as u64)
            .map(|m| {
                t.with_subject(&mut stream.at(m), |p| {
                    String::from_utf8(p.concat()).unwrap()
                })
            })
            .collect();
        let seen = raw_msgs(&server.url, &format!("sized{i}.>"), msgs);
        let n = msgs.to_string();
        let name = format!("sized{i}");
        let line = [
            &[
                "js",
                "pub",
                "--server",
                &server.url,
                "--stream",
                &name,
                "--subject",
                &template,
                "--token",
                tokens[0],
                "--token",
                tokens[1],
                "--msgs",
                &n,
                "--size",
                spec,
                "--seed",
                "3",
            ][..],
            mode,
        ]
        .concat();
        let (out, v) = run_json(&line);
        assert!(out.status.success(), "{mode:?}: {}", stderr(&out));
        let (subjects, seen): (Vec<String>, Vec<usize>) = seen.join().unwrap().into_iter().unzip();
        assert!(
            seen == want_sizes,
            "{mode:?}: the sizes sent are not the seed's"
        );
        assert!(
            subjects == want_subjects,
            "{mode:?}: the subjects are not the seed's"
        );
        for (size, weight) in [(16, 0.70), (100, 0.25), (1000, 0.05)] {
            let got = seen.iter().filter(|s| **s == size).count() as f64 / msgs as f64;
            assert!((got - weight).abs() < 0.01, "{mode:?}: {size} B {got:.4}");
        }
        assert!(schema_errors(&v).is_empty(), "{:?}", schema_errors(&v));
        let p = &v["params"];
        let d = &p["size_distribution"];
        assert_eq!(
            (d["spec"].as_str(), d["seed"].as_u64()),
            (Some(spec), Some(3))
        );
        assert_eq!(p["subject_template"]["wildcard"], format!("sized{i}.*.*"));
        assert_eq!(p["streams"][0]["subjects"][0], format!("sized{i}.*.*"));
        let sum: u64 = seen.iter().map(|s| *s as u64).sum();
        for c in v["clients"].as_array().unwrap() {
            assert_eq!(u(&c["bytes"]), sum, "{mode:?}: {} bytes", c["role"]);
        }
        let js = &v["jetstream"];
        assert_eq!(js["reconciled"], true, "{mode:?}: {js}");
        assert_eq!(u(&js["acked"]), msgs as u64, "{mode:?}: {js}");
    }
}

/// What `g` publishers draw from the template for messages 0 … msgs-1 under `seed`: each
/// subject's count, replayed with the library's own sampler.
fn subjects_drawn(
    subject: &str,
    tokens: &[&str],
    seed: u64,
    pubs: u64,
    msgs: u64,
) -> HashMap<String, u64> {
    use msgbench::stats::draw::{NamedToken, Purpose, Stream, Template};
    let tokens: Vec<NamedToken> = tokens
        .iter()
        .map(|t| NamedToken::parse(t).unwrap())
        .collect();
    let t = Template::build(subject, &tokens).unwrap();
    let mut want = HashMap::new();
    for g in 0..pubs {
        let s = Stream::new(seed, Purpose::Subject, g);
        for seq in 0..msgs {
            let subject =
                t.with_subject(&mut s.at(seq), |p| String::from_utf8(p.concat()).unwrap());
            *want.entry(subject).or_default() += 1;
        }
    }
    want
}

/// `pubsub --subject 'orders.{region}.{id}'` with two publishers: a raw subscription on
/// `orders.>` sees exactly the subjects the seed draws, each token's values in their asked
/// shares, and msgbench's own subscriber, on the template's wildcard, receives every message.
#[test]
fn a_subject_template_publishes_the_subjects_its_tokens_draw() {
    let server = TestServer::start();
    let (pubs, msgs) = (2u64, 20_000u64);
    let template = "orders.{region}.{id}";
    let tokens = ["region=us:50%,eu:30%,ap:20%", "id=hot:10%:60%:50"];
    let seen = raw_msgs(&server.url, "orders.>", (pubs * msgs) as usize);
    let (out, v) = run_json(&[
        "pubsub",
        "--server",
        &server.url,
        "--pubs",
        &pubs.to_string(),
        "--msgs",
        &msgs.to_string(),
        "--subject",
        template,
        "--token",
        tokens[0],
        "--token",
        tokens[1],
        "--seed",
        "11",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut got: HashMap<String, u64> = HashMap::new();
    for (subject, _) in seen.join().unwrap() {
        *got.entry(subject).or_default() += 1;
    }
    assert!(
        got == subjects_drawn(template, &tokens, 11, pubs, msgs),
        "the subjects published are not those the seed draws"
    );
    let total = (pubs * msgs) as f64;
    let share = |pred: &dyn Fn(&str, u64) -> bool| {
        got.iter()
            .filter(|(s, _)| {
                let p: Vec<&str> = s.split('.').collect();
                pred(p[1], p[2].parse().unwrap())
            })
            .map(|(_, n)| *n)
            .sum::<u64>() as f64
            / total
    };
    for (region, weight) in [("us", 0.5), ("eu", 0.3), ("ap", 0.2)] {
        let s = share(&|r, _| r == region);
        assert!((s - weight).abs() < 0.01, "{region}: {s:.4}");
    }
    // The first 10% of 50 ids (5) take 60% of the messages, 12% each.
    for id in 0..50u64 {
        let want = if id < 5 { 0.12 } else { 0.4 / 45.0 };
        let s = share(&|_, i| i == id);
        assert!((s - want).abs() < 0.01, "id {id}: {s:.4}");
    }
    assert!(schema_errors(&v).is_empty(), "{:?}", schema_errors(&v));
    let t = &v["params"]["subject_template"];
    assert_eq!(t["wildcard"], "orders.*.*");
    assert_eq!(
        (t["seed"].as_u64(), t["tokens"][1].as_str()),
        (Some(11), Some(tokens[1]))
    );
    let d = &v["delivery"];
    assert_eq!((u(&d["received"]), u(&d["lost"])), (pubs * msgs, 0), "{d}");
}

#[test]
fn bad_templates_are_refused_in_one_line_before_connecting() {
    for (cmd, args, names) in [
        ("pub", &["--subject", "o.{region}"][..], "--token region="),
        (
            "pub",
            &["--subject", "o.{a}", "--token", "a=x", "--token", "b=y"],
            "--token",
        ),
        ("pub", &["--subject", "o.{a}", "--token", "a="], "no values"),
        (
            "pub",
            &["--subject", "o.{a}", "--token", "a=zipf:0:10"],
            "above 0",
        ),
        (
            "pub",
            &["--subject", "o.{a}", "--token", "a=zipf:1.1"],
            "add :N",
        ),
        (
            "pub",
            &["--subject", "o.{a}", "--token", "a=x:60%,y:30%"],
            "90%",
        ),
        (
            "pub",
            &["--subject", "o..{a}", "--token", "a=x"],
            "empty token",
        ),
        (
            "pubsub",
            &["--subject", "o.{a", "--token", "a=x"],
            "without its",
        ),
        (
            "pub",
            &["--subject", "o.{a}", "--token", "a=x", "--multisubject"],
            "--multisubject",
        ),
        ("sub", &["--subject", "o.{a}"], "template"),
        ("sub", &["--token", "a=x"], "--token"),
        (
            "js pub",
            &["--subject", "o.{a}", "--token", "a=x", "--subjects", "o.y"],
            "o.*",
        ),
        (
            "js pub",
            &[
                "--subject",
                "o.{a}",
                "--token",
                "a=x",
                "--streams",
                "2",
                "--clients",
                "2",
            ],
            "--streams",
        ),
        (
            "js pub",
            &["--subject", "o.{b}", "--token", "a=x"],
            "--token b=",
        ),
        ("js consume", &["--subject", "o.{a}"], "template"),
    ] {
        let cmd: Vec<&str> = cmd.split(' ').collect();
        let out =
            crate::support::run(&[&cmd[..], &["--server", "nats://127.0.0.1:1"], args].concat());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{cmd:?} {args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{cmd:?} {args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(names),
            "{cmd:?} {args:?}: {err}"
        );
    }
}

/// Subscribes to `subject` and keeps, for each of the next `n` messages, when it arrived (ns
/// since the first arrival) and the sequence its delivery stamp carries.
fn raw_arrivals(url: &str, subject: &str, n: usize) -> JoinHandle<Vec<(u64, u64)>> {
    let mut s = TcpStream::connect(url.trim_start_matches("nats://")).unwrap();
    s.set_read_timeout(Some(HANG)).unwrap();
    write!(
        s,
        "CONNECT {{\"verbose\":false}}\r\nSUB {subject} 1\r\nPING\r\n"
    )
    .unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    loop {
        line.clear();
        assert!(r.read_line(&mut line).unwrap() > 0, "the server closed");
        if line.starts_with("PONG") {
            break;
        }
    }
    std::thread::spawn(move || {
        let mut seen = Vec::with_capacity(n);
        let mut body = Vec::new();
        let mut first = None;
        while seen.len() < n {
            line.clear();
            assert!(r.read_line(&mut line).unwrap() > 0, "the server closed");
            if let Some(rest) = line.strip_prefix("MSG ") {
                let at = *first.get_or_insert_with(std::time::Instant::now);
                let len: usize = rest.split_whitespace().last().unwrap().parse().unwrap();
                body.resize(len + 2, 0);
                r.read_exact(&mut body).unwrap();
                let seq = msgbench::wire::stamp::read(&body[..len]).unwrap().seq;
                seen.push((at.elapsed().as_nanos() as u64, seq));
            } else if line.starts_with("PING") {
                r.get_mut().write_all(b"PONG\r\n").unwrap();
            }
        }
        seen
    })
}

/// The median absolute deviation of `arrived - due` around its median, in ns: how far the
/// arrivals stray from a schedule once the constant offset (start, one hop) is taken out.
fn spread_around(seen: &[(u64, u64)], due: impl Fn(u64) -> u64) -> u64 {
    let median = |mut v: Vec<i128>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    let offsets: Vec<i128> = seen
        .iter()
        .map(|(at, seq)| i128::from(*at) - i128::from(due(*seq)))
        .collect();
    let m = median(offsets.clone());
    median(offsets.iter().map(|o| (o - m).abs()).collect()) as u64
}

/// `pub --rate R --arrivals poisson`: a raw subscription times each message's arrival, and the
/// arrivals follow the Poisson due times the seed draws (the library's schedule, replayed)
/// within a small spread, while they stray far from the fixed spacing at the same rate.
#[test]
fn poisson_arrivals_send_each_message_at_its_drawn_due_time() {
    use msgbench::stats::schedule::RateSchedule;
    let server = TestServer::start();
    // A Poisson sequence strays from the fixed spacing by about sqrt(k)/rate at its k-th
    // message: at 500/s over 3,000 messages, tens of milliseconds, far beyond what a machine
    // with both cores busy delays an arrival by (at 4,000/s over 12,000 the two were 3.5 ms
    // and 0.7 ms apart on such a machine, too close to tell apart).
    let (rate, msgs) = (500.0, 3_000u64);
    let seen = raw_arrivals(&server.url, "poisson", msgs as usize);
    let (out, v) = run_json(&[
        "pub",
        "--server",
        &server.url,
        "--subject",
        "poisson",
        "--rate",
        "500",
        "--arrivals",
        "poisson",
        "--seed",
        "5",
        "--msgs",
        &msgs.to_string(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let seen = seen.join().unwrap();
    let poisson = RateSchedule::fixed(rate)
        .poisson(5, Some(msgs), None)
        .unwrap();
    let drawn = spread_around(&seen, |k| poisson.due_ns(k as f64).unwrap());
    let fixed = spread_around(&seen, |k| (k as f64 / rate * 1e9) as u64);
    assert!(
        drawn < 5_000_000 && fixed > 5 * drawn,
        "arrivals stray {drawn} ns from the Poisson due times, {fixed} ns from the fixed ones"
    );
    assert!(schema_errors(&v).is_empty(), "{:?}", schema_errors(&v));
    let p = &v["params"];
    assert_eq!(
        (p["arrivals"].as_str(), p["arrivals_seed"].as_u64()),
        (Some("poisson"), Some(5))
    );
}

/// `latency --arrivals poisson`: the corrected latency is measured from each message's Poisson
/// due time, so it stays near the uncorrected one; measured from the fixed spacing it would be
/// the Poisson sequence's drift from it (tens of milliseconds over a few thousand messages).
#[test]
fn latency_is_corrected_against_the_poisson_due_times() {
    let server = TestServer::start();
    let (out, v) = run_json(&[
        "latency",
        "--server",
        &server.url,
        "--rate",
        "2000",
        "--duration",
        "3s",
        "--arrivals",
        "poisson",
        "--seed",
        "3",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(schema_errors(&v).is_empty(), "{:?}", schema_errors(&v));
    let p50 = |key: &str| u(&v[key]["percentiles_ns"]["50"]);
    let (corrected, uncorrected) = (p50("latency"), p50("latency_uncorrected"));
    assert!(
        corrected < uncorrected + 2_000_000,
        "corrected P50 {corrected} ns against uncorrected {uncorrected} ns"
    );
    assert_eq!(v["params"]["arrivals"], "poisson");
}

#[test]
fn poisson_arrivals_are_refused_where_they_cannot_act() {
    for (cmd, args, names) in [
        ("pub", &["--arrivals", "poisson"][..], "give --rate"),
        ("request", &["--arrivals", "poisson"], "give --rate"),
        ("request", &["--seed", "2"], "--arrivals poisson"),
        ("latency", &["--seed", "2"], "--arrivals poisson"),
        (
            "js pub",
            &["--arrivals", "poisson", "--rate", "10"],
            "not to js pub",
        ),
        ("sub", &["--arrivals", "poisson"], "--arrivals"),
        (
            "pub",
            &["--arrivals", "sometimes", "--rate", "10"],
            "--arrivals",
        ),
    ] {
        let cmd: Vec<&str> = cmd.split(' ').collect();
        let out =
            crate::support::run(&[&cmd[..], &["--server", "nats://127.0.0.1:1"], args].concat());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{cmd:?} {args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{cmd:?} {args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(names),
            "{cmd:?} {args:?}: {err}"
        );
    }
}
