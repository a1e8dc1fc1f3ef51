//! Fuzzes the parsers of the values people type on the command line: sizes, counts, rates,
//! durations and server URL lists, plus `redact`, which keeps credentials out of error messages,
//! and `--size`, `--token` and `--key-dist` as distributions.
//!
//! The first input byte picks the parser (the ASCII digit `6` the size distribution, `7` a
//! token's or key's distribution, any other
//! byte by its value mod 6, so the ASCII digits `0`..`5` pick size, count, rate, duration,
//! servers and redact, and seed files stay readable); the rest, decoded
//! lossily as UTF-8, is the text typed. Besides "nothing panics", each parser is compared with a
//! small independent model of the syntax its doc comment promises, and what it returns must
//! survive printing and parsing again:
//! - size: Ok(n) exactly when the leading digits times the unit fit in usize, and then n is that
//!   product; `n` and `n/1024 KiB` parse back to n;
//! - count: Ok(n) exactly when the written number is whole and fits in u64, and then n is that
//!   number; it parses back from `n`;
//! - rate: Ok(r) exactly for the documented syntax with a finite value, and then r is the f64
//!   nearest the written number;
//! - duration: Ok(d) exactly when the terms `<number><unit>` (or a bare number of seconds) add up
//!   to a whole number of nanoseconds, more than zero and at most u64::MAX seconds, and then d is
//!   that sum; it parses back from `{secs}s {nanos}ns`;
//! - servers: one URL per comma-separated entry; each has a host and a non-zero port, prints as
//!   `nats://host:port` and parses back from that; what it prints (Display and Debug) does not
//!   depend on the password or token; an entry of the plain shape `[nats://][userinfo@]host[:port]`
//!   gives exactly the host, port and percent-decoded credentials written; an error message
//!   quotes the entry only through `redact`;
//! - redact: leaves text without `@` alone, is idempotent, keeps what follows the last `@`, and
//!   never shows the password or token of a `user:pass@` or `token@` prefix;
//! - size distribution: what parses prints as text that parses back to the same value, and its
//!   sampler (a histogram file aside: no files are read here) is built or refused without a
//!   panic, and when built draws sizes within its own minimum and maximum, at least the stamp;
//! - token and key distribution: what parses prints as text that parses back to the same value;
//!   what `--key-dist` accepts `--token` accepts too; a sampler is built or refused without a
//!   panic, and one over the count of keys given draws keys below it, of nonzero probability;
//!   a subject template of one such token draws subjects its wildcard matches.

#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use msgbench::wire::url::{parse_servers, redact, Auth, ServerUrl, DEFAULT_PORT};
use msgbench::values::{parse_count, parse_duration, parse_rate, parse_size};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let s = String::from_utf8_lossy(rest);
    if selector == b'6' {
        return check_size_dist(&s);
    }
    if selector == b'7' {
        return check_token_dist(&s);
    }
    match selector % 6 {
        0 => check_size(&s),
        1 => check_count(&s),
        2 => check_rate(&s),
        3 => check_duration(&s),
        4 => check_servers(&s),
        _ => check_redact(&s),
    }
});

// ---- token and key distributions ----

fn check_token_dist(s: &str) {
    use msgbench::stats::draw::{token::Token, Purpose, Stream, TokenDist};
    let Ok(d) = TokenDist::parse(s) else {
        assert!(TokenDist::parse_keys(s).is_err(), "{s:?}: a key spec that is no token spec");
        return;
    };
    let again = TokenDist::parse(&d.to_string());
    assert_eq!(again.as_ref(), Ok(&d), "{s:?} prints as {:?}", d.to_string());
    // A key distribution draws over --keys; a token's over its own count, or 1000 when it
    // names none.
    let n = 1000;
    let Ok(token) = d.build(Some(n)) else {
        return;
    };
    let stream = Stream::new(1, Purpose::Key, 0);
    for seq in 0..64 {
        if let Token::Numbered(p) = &token {
            let v = p.draw(&mut stream.at(seq));
            // Over the 1000 values given (a Zipf's probability sums its N terms).
            if !d.names_count() {
                assert!(v < n && p.probability(v) > 0.0, "{s:?} drew {v} of {n}");
            }
        } else {
            let _ = token.draw(&mut stream.at(seq));
        }
    }
    check_template(s);
}

/// A template whose one token takes these values draws subjects of exactly its shape: the
/// literal token, then one non-empty token without a dot or wildcard (what its wildcard
/// `x.*` matches).
fn check_template(s: &str) {
    use msgbench::stats::draw::{NamedToken, Purpose, Stream, Template};
    let Ok(t) = NamedToken::parse(&format!("t={s}")) else {
        return;
    };
    let Ok(template) = Template::build("x.{t}", &[t]) else {
        return;
    };
    assert_eq!(template.wildcard(), "x.*");
    let stream = Stream::new(1, Purpose::Subject, 0);
    for seq in 0..16 {
        let subject = template.with_subject(&mut stream.at(seq), |p| p.concat());
        let tail = subject.strip_prefix(b"x.").expect("the literal first");
        assert!(
            !tail.is_empty() && !tail.iter().any(|b| matches!(b, b'.' | b'*' | b'>' | b' ')),
            "{s:?} drew {:?}",
            String::from_utf8_lossy(&subject)
        );
    }
}

// ---- size distributions ----

fn check_size_dist(s: &str) {
    use msgbench::stats::draw::{Purpose, SizeDist, Sizes, Stream};
    let Ok(d) = SizeDist::parse(s) else {
        return;
    };
    let again = SizeDist::parse(&d.to_string());
    assert_eq!(again.as_ref(), Ok(&d), "{s:?} prints as {:?}", d.to_string());
    if matches!(d, SizeDist::Hist(_)) {
        return;
    }
    let Ok(sizes) = Sizes::build(&d, 16) else {
        return;
    };
    let stream = Stream::new(1, Purpose::Size, 0);
    for seq in 0..64 {
        let n = sizes.draw(&mut stream.at(seq));
        assert!(
            (sizes.min()..=sizes.max()).contains(&n),
            "{s:?} drew {n}, outside {}..={}",
            sizes.min(),
            sizes.max()
        );
        assert!(n >= 16 || d.fixed().is_some(), "{s:?} drew {n}");
    }
}

// ---- sizes ----

fn check_size(s: &str) {
    let got = parse_size(s);
    let t = s.trim();
    let digits_end = t
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(t.len());
    let (digits, unit) = t.split_at(digits_end);
    let mult: u128 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => 0,
    };
    let expected = if digits.is_empty() || mult == 0 {
        None
    } else {
        big_uint(digits)
            .and_then(|n| n.checked_mul(mult))
            .and_then(|n| usize::try_from(n).ok())
    };
    match (&got, expected) {
        (Ok(n), Some(want)) => assert_eq!(*n, want, "parse_size({s:?})"),
        (Err(_), None) => {}
        _ => panic!("parse_size({s:?}) = {got:?}, expected {expected:?}"),
    }
    if let Ok(n) = got {
        assert_eq!(parse_size(&n.to_string()), Ok(n), "reparse of {n}");
        if n % 1024 == 0 {
            assert_eq!(parse_size(&format!("{}KiB", n / 1024)), Ok(n), "{n} in KiB");
        }
    }
}

/// A decimal integer that may have many leading zeros; None when it does not fit in u128.
fn big_uint(digits: &str) -> Option<u128> {
    let significant = digits.trim_start_matches('0');
    if significant.len() > 38 {
        return None;
    }
    Some(significant.parse().unwrap_or(0))
}

// ---- counts and rates ----

/// A number as written: `digits × 10^exp`, with no leading or trailing zeros in `digits`
/// (empty for zero), so that equal values have equal representations.
#[derive(Debug)]
struct Decimal {
    digits: String,
    exp: i64,
}

impl Decimal {
    /// The syntax the doc comments of `parse_count` and `parse_rate` describe: digits with at most
    /// one `.`, `_` anywhere as a separator, and an optional k/M/G suffix (decimal multiples).
    fn parse(s: &str) -> Option<Decimal> {
        let t: String = s.trim().chars().filter(|&c| c != '_').collect();
        let (num, mut exp) = match t.as_bytes().last() {
            Some(b'k' | b'K') => (&t[..t.len() - 1], 3),
            Some(b'm' | b'M') => (&t[..t.len() - 1], 6),
            Some(b'g' | b'G') => (&t[..t.len() - 1], 9),
            _ => (&t[..], 0),
        };
        let (int, frac) = num.split_once('.').unwrap_or((num, ""));
        let all_digits = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
        if int.is_empty() && frac.is_empty() || !all_digits(int) || !all_digits(frac) {
            return None;
        }
        exp -= frac.len() as i64;
        let joined = format!("{int}{frac}");
        let trimmed = joined.trim_start_matches('0');
        let digits = trimmed.trim_end_matches('0');
        exp += (trimmed.len() - digits.len()) as i64;
        if digits.is_empty() {
            exp = 0;
        }
        Some(Decimal {
            digits: digits.to_string(),
            exp,
        })
    }

    /// The nearest f64 (infinite when out of range), rounded once from the exact value.
    fn to_f64(&self) -> f64 {
        if self.digits.is_empty() {
            return 0.0;
        }
        format!("{}e{}", self.digits, self.exp).parse().unwrap()
    }

    /// The value times `m` when that is a whole number: its decimal digits (no sign, maybe
    /// leading zeros). Schoolbook arithmetic on the digits, so any length works.
    fn times_whole(&self, m: u64) -> Option<String> {
        let mut product = Vec::new();
        let mut carry: u128 = 0;
        for b in self.digits.bytes().rev() {
            let v = u128::from(b - b'0') * u128::from(m) + carry;
            product.push(b'0' + (v % 10) as u8);
            carry = v / 10;
        }
        while carry > 0 {
            product.push(b'0' + (carry % 10) as u8);
            carry /= 10;
        }
        product.reverse();
        let mut product = String::from_utf8(product).unwrap();
        if self.exp >= 0 {
            product.extend(std::iter::repeat_n('0', self.exp as usize));
            return Some(product);
        }
        let shift = self.exp.unsigned_abs() as usize;
        if product.len() < shift {
            product.insert_str(0, &"0".repeat(shift - product.len()));
        }
        let (int, frac) = product.split_at(product.len() - shift);
        frac.bytes().all(|b| b == b'0').then(|| format!("0{int}"))
    }
}

fn check_count(s: &str) {
    let got = parse_count(s);
    let want = Decimal::parse(s)
        .and_then(|dec| dec.times_whole(1))
        .and_then(|digits| big_uint(&digits))
        .and_then(|n| u64::try_from(n).ok());
    match (&got, want) {
        (Ok(n), Some(w)) => assert_eq!(*n, w, "parse_count({s:?})"),
        (Err(_), None) => {}
        _ => panic!(
            "parse_count({s:?}) = {got:?}, written {:?}",
            Decimal::parse(s)
        ),
    }
    if let Ok(n) = got {
        assert_eq!(parse_count(&n.to_string()), Ok(n), "reparse of {n}");
    }
}

fn check_rate(s: &str) {
    let got = parse_rate(s);
    let Some(dec) = Decimal::parse(s) else {
        assert!(got.is_err(), "parse_rate({s:?}) = {got:?}, not a number");
        return;
    };
    let want = dec.to_f64();
    if want.is_finite() {
        assert_eq!(got, Ok(want), "parse_rate({s:?}), written {dec:?}");
    } else {
        assert!(got.is_err(), "parse_rate({s:?}) = {got:?}, written {dec:?}");
    }
}

// ---- durations ----

/// Nanoseconds in each unit `parse_duration` documents.
fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" | "nsec" | "nanos" => 1,
        "us" | "µs" | "μs" | "usec" => 1_000,
        "ms" | "msec" | "millis" => 1_000_000,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000_000_000,
        "m" | "min" | "mins" | "minute" | "minutes" => 60_000_000_000,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600_000_000_000,
        "d" | "day" | "days" => 86_400_000_000_000,
        _ => return None,
    })
}

/// What `parse_duration` must make of `s`: a bare number of seconds, or terms `<number><unit>`
/// with whitespace allowed around and between them; Some(sum) when the sum is a whole number of
/// nanoseconds, more than zero and at most u64::MAX seconds.
fn model_duration(s: &str) -> Option<Duration> {
    let is_num = |c: char| c.is_ascii_digit() || c == '.';
    // Whitespace separates tokens; within a word, a token is a run of number characters or of
    // anything else.
    let mut tokens = Vec::new();
    for word in s.split_whitespace() {
        let mut rest = word;
        while let Some(first) = rest.chars().next() {
            let len = rest
                .find(|c: char| is_num(c) != is_num(first))
                .unwrap_or(rest.len());
            tokens.push(&rest[..len]);
            rest = &rest[len..];
        }
    }
    let terms: Vec<(&str, u64)> = match tokens.as_slice() {
        [number] => vec![(*number, 1_000_000_000)],
        _ if tokens.len() % 2 == 0 => tokens
            .chunks(2)
            .map(|pair| Some((pair[0], unit_nanos(pair[1])?)))
            .collect::<Option<_>>()?,
        _ => return None,
    };
    // Each term is checked against the limit before adding, so the sum (at most ~2,000 terms in a
    // 4 KiB input) cannot overflow u128.
    let limit = u128::from(u64::MAX) * 1_000_000_000 + 999_999_999;
    let mut total: u128 = 0;
    for (number, nanos) in terms {
        if !number.chars().all(is_num) {
            return None;
        }
        let term = big_uint(&Decimal::parse(number)?.times_whole(nanos)?)?;
        if term > limit {
            return None;
        }
        total += term;
    }
    if total == 0 || total > limit {
        return None;
    }
    let secs = u64::try_from(total / 1_000_000_000).unwrap();
    Some(Duration::new(secs, (total % 1_000_000_000) as u32))
}

fn check_duration(s: &str) {
    let got = parse_duration(s);
    let want = model_duration(s);
    assert_eq!(got.clone().ok(), want, "parse_duration({s:?}) = {got:?}");
    if let Ok(d) = got {
        let spelled = format!("{}s {}ns", d.as_secs(), d.subsec_nanos());
        assert_eq!(
            parse_duration(&spelled),
            Ok(d),
            "parse_duration({s:?}) -> {spelled:?}"
        );
    }
}

// ---- server URLs ----

fn check_servers(s: &str) {
    let got = parse_servers(s);
    let entries: Vec<&str> = s.split(',').map(str::trim).collect();
    match &got {
        Ok(list) => {
            assert_eq!(list.len(), entries.len(), "parse_servers({s:?})");
            for url in list {
                check_server_url(s, url);
            }
        }
        Err(msg) => {
            // An entry is only ever quoted through `redact`; `check_redact` covers what that hides.
            let quoted = entries
                .iter()
                .any(|e| msg.starts_with(&format!("'{}': ", redact(e))));
            assert!(
                quoted || msg == "empty entry in the server list",
                "parse_servers({s:?}) error {msg:?} does not quote a redacted entry"
            );
        }
    }
    let modelled: Option<Vec<Result<ServerUrl, ()>>> =
        entries.iter().map(|e| model_entry(e)).collect();
    if let Some(want) = modelled {
        let want: Result<Vec<ServerUrl>, ()> = want.into_iter().collect();
        match (&got, &want) {
            (Ok(g), Ok(w)) => assert_eq!(g, w, "parse_servers({s:?})"),
            (Err(_), Err(())) => {}
            _ => panic!("parse_servers({s:?}) = {got:?}, expected {want:?}"),
        }
    }
}

fn check_server_url(s: &str, url: &ServerUrl) {
    assert!(
        !url.host.is_empty(),
        "parse_servers({s:?}): {url:?} has no host"
    );
    assert_ne!(url.port, 0, "parse_servers({s:?}): {url:?}");
    let shown = url.to_string();
    let scheme = if url.tls { "tls" } else { "nats" };
    assert_eq!(shown, format!("{scheme}://{}", url.host_port()), "{url:?}");
    assert!(!shown.contains('@'), "{url:?} shown as {shown:?}");

    // Display and Debug must come out the same whatever the secret is, so they cannot show it.
    let public = ServerUrl {
        auth: match &url.auth {
            Auth::None => Auth::None,
            Auth::UserPass { user, .. } => Auth::UserPass {
                user: user.clone(),
                pass: String::new(),
            },
            Auth::Token(_) => Auth::Token(String::new()),
            // Not from a URL, but their output must not depend on the secret either.
            Auth::NKey { public, .. } => Auth::NKey {
                public: public.clone(),
                seed: String::new(),
            },
            Auth::Creds { .. } => Auth::Creds {
                jwt: String::new(),
                seed: String::new(),
            },
        },
        ..url.clone()
    };
    assert_eq!(
        format!("{url} {url:?}"),
        format!("{public} {public:?}"),
        "parse_servers({s:?}): output depends on the secret"
    );

    // What is printed can be pasted back.
    let without_auth = ServerUrl {
        auth: Auth::None,
        ..url.clone()
    };
    assert_eq!(
        parse_servers(&shown),
        Ok(vec![without_auth]),
        "parse_servers({s:?}) printed {shown:?}"
    );
}

/// What `parse_servers` must make of one (already trimmed) entry of the plain shape
/// `[nats://][userinfo@]host[:port]`, host letters, digits, `.` and `-`: Ok with exactly the host,
/// port and percent-decoded credentials written, or Err when the port is out of range or the
/// percent-encoding is bad. None for any other shape.
fn model_entry(entry: &str) -> Option<Result<ServerUrl, ()>> {
    let rest = match scheme_prefix_len(entry) {
        0 => entry,
        7 if entry[..7].eq_ignore_ascii_case("nats://") => &entry[7..],
        _ => return None,
    };
    let (userinfo, host_port) = match rest.rfind('@') {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    };
    let (host, port) = host_port.split_once(':').unwrap_or((host_port, ""));
    if !host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        || !port.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    if let Some(ui) = userinfo {
        // Delimiters end the authority, and the URL parser drops tabs and newlines anywhere.
        if ui.contains(['/', '?', '#', '\\', '\t', '\n', '\r']) {
            return None;
        }
    }
    if host.is_empty() {
        return Some(Err(()));
    }
    let port = if port.is_empty() {
        DEFAULT_PORT
    } else {
        match big_uint(port).and_then(|p| u16::try_from(p).ok()) {
            Some(p) if p != 0 => p,
            _ => return Some(Err(())),
        }
    };
    let auth = match userinfo {
        None => Auth::None,
        Some(ui) => {
            let decode = |x: &str| strict_percent_decode(x).ok_or(());
            // A ':' makes a user and a password, even an empty one (`u:@h`, as the Go client
            // reads it); without one the user part is a token. `@h` and `:@h` have neither.
            let auth = match ui.split_once(':') {
                None if ui.is_empty() => Ok(Auth::None),
                None => decode(ui).map(Auth::Token),
                Some(("", "")) => Ok(Auth::None),
                Some((user, pass)) => decode(user).and_then(|user| {
                    Ok(Auth::UserPass {
                        user,
                        pass: decode(pass)?,
                    })
                }),
            };
            match auth {
                Ok(auth) => auth,
                Err(()) => return Some(Err(())),
            }
        }
    };
    Some(Ok(ServerUrl {
        host: host.to_string(),
        port,
        auth,
        tls: false,
        tls_name: None,
    }))
}

/// `%` must be followed by two hex digits; the result must be UTF-8.
fn strict_percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

// ---- redact ----

fn check_redact(s: &str) {
    let r = redact(s);
    assert_eq!(redact(&r), r, "redact not idempotent on {s:?}");
    match s.rfind('@') {
        None => assert_eq!(r, s, "redact({s:?}) changed text without '@'"),
        Some(at) => {
            let after = &s[at + 1..];
            assert!(r.ends_with(after), "redact({s:?}) = {r:?} lost {after:?}");
        }
    }

    // The userinfo as a URL parser reads it: after an optional `scheme://`, up to the last `@`
    // before the authority ends.
    let start = scheme_prefix_len(s);
    let authority_end = s[start..]
        .find(['/', '?', '#'])
        .map_or(s.len(), |i| start + i);
    let Some(at) = s[start..authority_end].rfind('@').map(|i| start + i) else {
        return;
    };
    let userinfo = &s[start..at];
    let secret = userinfo.split_once(':').map_or(userinfo, |(_, pass)| pass);
    let ideal = format!("{}***{}", &s[..start], &s[at..]);
    // The secret can still appear by coincidence where it also occurs outside the userinfo, or
    // (when it has a `*`) in the `***` put in its place.
    if secret.is_empty() || secret.contains('*') || ideal.contains(secret) {
        return;
    }
    assert!(
        !r.contains(secret),
        "redact({s:?}) = {r:?} shows {secret:?}"
    );
}

/// Length of a leading `scheme://` (a letter, then letters, digits, `+`, `-`, `.`), or 0.
fn scheme_prefix_len(s: &str) -> usize {
    let b = s.as_bytes();
    if !b.first().is_some_and(u8::is_ascii_alphabetic) {
        return 0;
    }
    let end = b
        .iter()
        .position(|&c| !(c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.')))
        .unwrap_or(b.len());
    if s[end..].starts_with("://") {
        end + 3
    } else {
        0
    }
}
