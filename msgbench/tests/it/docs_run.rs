//! The docs' worked examples, run for real, as a reader would type them: `docs.rs` parses every
//! command, this runs them. Each page is followed from its first code block to its last, in a
//! scratch folder of its own: the servers and agents are started by the page's own lines
//! (`$ .tools/bin/nats-server … &`, `$ msgbench agent … &`), the signing key is the one the
//! page's `msgbench agent keygen` made, and each `$ msgbench …` line runs through `sh` with its
//! pipes and redirections. What each prints is compared with what the page shows under it by
//! its shape, not its figures: the set of line heads (the first word of each line, digits made
//! `#`; a banner `!! WORD`). A line the run prints and the page lacks (a `Durability:` line
//! added since) fails, and so does one the page shows and the run no longer prints. A page
//! that elides lines (`…`) is only checked for what it shows. `$ echo $?` checks the status.
//!
//! Ports are the page's, each moved to a free one: `127.0.0.1:4222` in every line of a page
//! becomes the same free port, so the test never collides with a server of the machine's, and a
//! page that uses a server it never started fails here. Lines that cannot run in a test (an
//! agent killed by hand mid-run) are listed with their reason in [`EXCLUDED`]; every other
//! prompted line of the covered pages runs.
//!
//! Cost: the pages' examples are kept short (a few seconds each); the whole module takes about
//! a minute on a 2-core machine, most of it README's and load-shapes.md's timed runs.
//!
//! `MSGBENCH_DOCS_BIN=DIR` runs the pages with the msgbench in DIR (a release build), and
//! `MSGBENCH_DOCS_OUTPUT=DIR` keeps what each line printed, `<page>-<line>.txt`: the figures a
//! page shows are pasted from such a run.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{scratch_dir, Scratch, CLEARED_ENV, HANG};

/// Lines of a covered page that this test does not run, each with why; matched by the
/// command's start. Everything else a covered page prompts for runs.
const EXCLUDED: &[(&str, &str, &str)] = &[
    (
        "docs/agents.md",
        "msgbench pubsub --pubs 2 --subs 2 --rate 20000 --duration 20s --agent-silence 2s",
        "it needs an agent killed by hand mid-run; tests/it/agents.rs kills one and checks the \
         partial result",
    ),
    (
        "docs/install.md",
        "msgbench man | man -l -",
        "it shows the page in man, which a test machine may not have; the next line writes the \
         same pages into a folder, and runs",
    ),
    (
        "docs/jetstream.md",
        "msgbench js pub --mode async --rate 2000 --duration 6s --reconnect",
        "it needs the server killed by hand 3 s into the run and started again; \
         tests/it/js_restart.rs restarts a real server under js pub",
    ),
    (
        "docs/jetstream.md",
        "msgbench js pub --server nats://127.0.0.1:37699",
        "it needs the server frozen by hand (SIGSTOP) for 1.5 s mid-run; tests/it/fates.rs \
         freezes a real server under js pub",
    ),
    (
        "docs/load-shapes.md",
        "msgbench capacity latency --slo 'p99<2ms' --probe-duration 1s --probe-runs 2 --start-rate 4000",
        "its point is a machine too busy to keep a 4,000/s schedule; elsewhere it is a long \
         ordinary search (tests/it/capacity.rs plants a tool that cannot keep its schedule)",
    ),
    (
        "docs/agents.md",
        "curl ",
        "not msgbench: it reads --metrics-listen, which tests/it/agents_metrics.rs checks",
    ),
];

/// One prompted line of a page and what the page shows under it.
#[derive(Debug)]
struct Example {
    line: usize,
    command: String,
    shown: Vec<String>,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate lives in a workspace folder")
        .to_path_buf()
}

/// Every command of a page's code blocks, in order: prompted lines (`$ `) with the lines
/// under them up to the next prompt, and in a block without prompts its `msgbench` and
/// `mkdir` lines (commands to type, with nothing shown).
fn examples(text: &str) -> Vec<Example> {
    let mut out = Vec::new();
    let mut block: Option<Vec<(usize, &str)>> = None;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            match block.take() {
                Some(lines) => out.extend(block_examples(&lines)),
                None => block = Some(Vec::new()),
            }
            continue;
        }
        if let Some(b) = block.as_mut() {
            b.push((i + 1, line));
        }
    }
    out
}

fn block_examples(lines: &[(usize, &str)]) -> Vec<Example> {
    let prompted = lines.iter().any(|(_, l)| l.trim_start().starts_with("$ "));
    let mut out: Vec<Example> = Vec::new();
    for (n, line) in lines {
        let t = line.trim_start();
        if let Some(cmd) = t.strip_prefix("$ ") {
            out.push(Example {
                line: *n,
                command: cmd.to_string(),
                shown: Vec::new(),
            });
        } else if prompted {
            if let Some(e) = out.last_mut() {
                e.shown.push((*line).to_string());
            }
        } else if t.starts_with("msgbench ") || t.starts_with("mkdir ") {
            // A command to type in a block without prompts: its comment is not part of it.
            let cmd = t.split(" # ").next().unwrap_or(t).trim_end();
            out.push(Example {
                line: *n,
                command: cmd.to_string(),
                shown: Vec::new(),
            });
        }
    }
    out
}

/// A line's shape: its first word with each number made `#` (`P99.9` is `P#`, `16,000/s` is
/// `#/s`), or a banner's first two (`!! LOSS:`); none for a blank line. A threshold's verdict
/// is one shape whichever way it went (`PASS`, `FAIL`): how a gate on a figure of this machine
/// at this moment came out is a figure, not a line of another kind.
fn head(line: &str) -> Option<String> {
    let mut words = line.split_whitespace();
    let first = words.next()?;
    if matches!(first, "PASS" | "FAIL") {
        return Some("PASS|FAIL".to_string());
    }
    // A public NKey, as keygen prints it: each run makes its own.
    if first.len() == 56
        && first.starts_with('U')
        && first
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    {
        return Some("<public key>".to_string());
    }
    let word = if first == "!!" {
        format!("!! {}", words.next().unwrap_or(""))
    } else {
        first.to_string()
    };
    let mut out = String::new();
    let mut in_number = false;
    for c in word.chars() {
        let digit = c.is_ascii_digit() || (in_number && (c == ',' || c == '.'));
        if digit && !in_number {
            out.push('#');
        } else if !digit {
            out.push(c);
        }
        in_number = digit;
    }
    Some(out)
}

/// Heads that depend on the machine or the moment, not on what msgbench prints for a command:
/// a rate the tool could not keep, a subscriber that fell behind, a reconnect; the server's
/// samples, their events (`  2.8 s  server_restart …`), the servers' CPU per message and what
/// limited the run (and a search's failing run: `  what bounded its run there`), which need
/// the run to outlast a sample or a tick.
fn conditional(head: &str) -> bool {
    [
        "!! RATE",
        "warning:",
        "Errors:",
        "Connections:",
        "Retries:",
        "Server",
        "Servers'",
        "#",
        "Limit:",
        "what",
    ]
    .contains(&head)
}

/// A row of a table or a list the pages may cut short: a percentile (`P#`), a client (`[#]`),
/// a probe (`#/s`), a second of the live view (`[`), the latency table's last rows.
fn table_row(head: &str) -> bool {
    ["P#", "[#]", "#/s", "[", "min", "median", "max", "#s"].contains(&head)
}

fn elided(line: &str) -> bool {
    matches!(line.trim(), "…" | "..." | "(…)")
}

/// What differs between the lines a page shows and those the run printed, by shape. A page
/// that ends its output with `…` shows the first lines only: the run's first lines are
/// compared with them.
fn compare(shown: &[String], got: &str) -> Option<String> {
    let last = shown.iter().rev().find(|l| !l.trim().is_empty());
    if last.is_some_and(|l| elided(l)) {
        let kept: Vec<String> = shown.iter().take_while(|l| !elided(l)).cloned().collect();
        let first: Vec<&str> = got.lines().take(kept.len()).collect();
        return compare(&kept, &first.join("\n"));
    }
    let heads = |lines: &mut dyn Iterator<Item = &str>| -> BTreeSet<String> {
        lines.filter_map(head).filter(|h| !conditional(h)).collect()
    };
    let page = heads(&mut shown.iter().map(String::as_str).filter(|l| !elided(l)));
    let run = heads(&mut got.lines());
    let missing: Vec<&String> = page.difference(&run).collect();
    // An elided page may leave out rows of a table (percentiles, clients, probes, the live
    // lines of each second), never a line of its own kind: a `Durability:` line the page
    // lacks fails even where it elides.
    let cut = shown.iter().any(|l| elided(l));
    let extra: Vec<&String> = run
        .difference(&page)
        .filter(|h| !(cut && table_row(h)))
        .collect();
    (!missing.is_empty() || !extra.is_empty()).then(|| {
        format!("the page shows lines the run did not print: {missing:?}; the run printed lines the page does not show: {extra:?}")
    })
}

/// A page's run: its scratch folder, the ports it moved, the processes its lines left running.
struct Session {
    page: &'static str,
    dir: Scratch,
    ports: BTreeMap<u16, u16>,
    /// The key the page's keygen printed, and the one this run's printed.
    key: Option<(String, String)>,
    background: Vec<(Child, PathBuf)>,
    status: Option<i32>,
    /// The line before was not run.
    skipped: bool,
    problems: Vec<String>,
}

impl Drop for Session {
    fn drop(&mut self) {
        for (c, _) in &mut self.background {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

impl Session {
    fn new(page: &'static str) -> Self {
        let dir = scratch_dir("docs-run");
        // `.tools/bin/nats-server` as the pages type it, from the checkout the test runs in.
        std::os::unix::fs::symlink(repo_root().join(".tools"), dir.join(".tools")).unwrap();
        std::fs::create_dir_all(dir.join("home")).unwrap();
        Session {
            page,
            dir,
            ports: BTreeMap::new(),
            key: None,
            background: Vec::new(),
            status: None,
            skipped: false,
            problems: Vec::new(),
        }
    }

    /// The command with the page's ports and key replaced by this run's.
    fn localise(&mut self, command: &str) -> String {
        let mut out = command.to_string();
        let mut at = 0;
        while let Some(i) = out[at..].find("127.0.0.1:") {
            let start = at + i + "127.0.0.1:".len();
            let digits: String = out[start..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            at = start;
            let Ok(port) = digits.parse::<u16>() else {
                continue;
            };
            let mine = *self.ports.entry(port).or_insert_with(free_port);
            out.replace_range(start..start + digits.len(), &mine.to_string());
            at = start + mine.to_string().len();
        }
        // A server's own port: `nats-server … -p 4222`.
        if out.contains("nats-server") {
            let words: Vec<String> = out.split(' ').map(str::to_string).collect();
            let mut moved = Vec::with_capacity(words.len());
            for (i, w) in words.iter().enumerate() {
                match w.parse::<u16>() {
                    Ok(port) if i > 0 && words[i - 1] == "-p" => {
                        let mine = *self.ports.entry(port).or_insert_with(free_port);
                        moved.push(mine.to_string());
                    }
                    _ => moved.push(w.clone()),
                }
            }
            out = moved.join(" ");
        }
        if let Some((theirs, mine)) = &self.key {
            out = out.replace(theirs.as_str(), mine);
        }
        out
    }

    fn shell(&self, command: &str) -> Command {
        // MSGBENCH_DOCS_BIN runs the pages with another build's msgbench (a release build, to
        // refresh the figures they show); by default, the one these tests were built with.
        let bin = std::env::var_os("MSGBENCH_DOCS_BIN").map_or_else(
            || {
                Path::new(env!("CARGO_BIN_EXE_msgbench"))
                    .parent()
                    .unwrap()
                    .to_path_buf()
            },
            PathBuf::from,
        );
        let path = format!(
            "{}:{}:{}",
            bin.display(),
            self.dir.join(".tools/bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(command)
            .current_dir(&*self.dir)
            .env("PATH", path)
            .env("HOME", self.dir.join("home"));
        for k in CLEARED_ENV {
            c.env_remove(k);
        }
        c
    }

    /// A line that ends in `&`: started and left running, and waited for until it is ready (a
    /// server listening on its port, an agent saying it listens).
    fn start(&mut self, command: &str) {
        let command = command.trim_end_matches('&').trim_end();
        let log = self
            .dir
            .join(format!("background-{}.log", self.background.len()));
        let redirected = command.contains('>');
        let mut c = self.shell(&format!("exec {command}"));
        if !redirected {
            c.stdout(std::fs::File::create(&log).unwrap());
            c.stderr(std::fs::File::create(self.dir.join("bg.err")).unwrap());
        }
        let child = c.spawn().unwrap();
        let deadline = Instant::now() + HANG;
        if command.contains("nats-server") {
            let port = self.localise_port(command);
            while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
                assert!(
                    Instant::now() < deadline,
                    "{}: {command} never listened",
                    self.page
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        } else if command.contains("msgbench agent") {
            // Its log: the file it is sent to, or the one given it here.
            let file = match command.split("> ").nth(1) {
                Some(rest) => self.dir.join(rest.split_whitespace().next().unwrap()),
                None => self.dir.join("bg.err"),
            };
            while !std::fs::read_to_string(&file)
                .unwrap_or_default()
                .contains("listening on")
            {
                assert!(
                    Instant::now() < deadline,
                    "{}: {command} never listened: {:?}",
                    self.page,
                    std::fs::read_to_string(&file)
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            // Each agent's own log from here on.
            if !redirected {
                let _ = std::fs::rename(self.dir.join("bg.err"), &log);
            }
        }
        self.background.push((child, log));
    }

    fn localise_port(&self, command: &str) -> u16 {
        command
            .split_whitespace()
            .skip_while(|w| *w != "-p")
            .nth(1)
            .and_then(|p| p.parse().ok())
            .expect("a server line names its port with -p")
    }

    /// Runs one line in the foreground and returns everything it printed.
    fn run(&mut self, command: &str) -> String {
        let mut child = self
            .shell(command)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
        let e = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let mut text = String::new();
        let _ = out.read_to_string(&mut text);
        text.push_str(&e.join().unwrap());
        self.status = child.wait().unwrap().code();
        text
    }

    fn follow(&mut self, e: &Example) {
        let original = e.command.as_str();
        if let Some((_, _, why)) = EXCLUDED
            .iter()
            .find(|(p, start, _)| *p == self.page && original.starts_with(start))
        {
            println!("{}:{}: not run: {why}", self.page, e.line);
            // Its status is not known, so an `echo $?` after it is not checked.
            self.status = None;
            self.skipped = true;
            return;
        }
        if original == "echo $?" && std::mem::take(&mut self.skipped) {
            return;
        }
        self.skipped = false;
        if original == "echo $?" {
            let want = e.shown.first().map(|s| s.trim().to_string());
            let got = self.status.map(|s| s.to_string());
            if want != got {
                self.problems.push(format!(
                    "{}:{}: the page shows status {want:?}, the run exited {got:?}",
                    self.page, e.line
                ));
            }
            return;
        }
        let command = self.localise(original);
        if command.ends_with('&') {
            self.start(&command);
            return;
        }
        let began = Instant::now();
        let got = self.run(&command);
        println!(
            "{}:{}: {:.1} s: {original}",
            self.page,
            e.line,
            began.elapsed().as_secs_f64()
        );
        if original.starts_with("msgbench agent keygen") {
            self.learn_key(e, &got);
        }
        // MSGBENCH_DOCS_OUTPUT=DIR keeps what each line printed, to paste into its page, with
        // the page's own ports where the run used others.
        if let Some(dir) = std::env::var_os("MSGBENCH_DOCS_OUTPUT") {
            let name = format!("{}-{}.txt", self.page.replace('/', "_"), e.line);
            let mut text = got.clone();
            for (page_port, mine) in &self.ports {
                text = text.replace(
                    &format!("127.0.0.1:{mine}"),
                    &format!("127.0.0.1:{page_port}"),
                );
            }
            let _ = std::fs::write(Path::new(&dir).join(name), text);
        }
        if let Some(d) = compare(&e.shown, &got) {
            self.problems.push(format!(
                "{}:{}: `{original}`: {d}\n--- the run printed:\n{got}",
                self.page, e.line
            ));
        }
    }

    /// The public key the page's keygen printed, and this run's: later lines that name the
    /// page's key get this run's.
    fn learn_key(&mut self, e: &Example, got: &str) {
        let key = |lines: &mut dyn Iterator<Item = &str>| {
            lines
                .map(str::trim)
                .find(|l| l.len() == 56 && l.starts_with('U'))
                .map(str::to_string)
        };
        let file = self.dir.join("trusted.keys");
        let mine = key(&mut got.lines()).or_else(|| {
            std::fs::read_to_string(file)
                .ok()
                .and_then(|t| key(&mut t.lines()))
        });
        if let (Some(theirs), Some(mine)) = (key(&mut e.shown.iter().map(String::as_str)), mine) {
            self.key = Some((theirs, mine));
        }
    }
}

/// Runs every example of `page` in order and fails with every difference found.
fn check_page(page: &'static str) {
    let text = std::fs::read_to_string(repo_root().join(page)).unwrap();
    let all = examples(&text);
    assert!(!all.is_empty(), "{page} has no example to run");
    let mut s = Session::new(page);
    for e in &all {
        s.follow(e);
    }
    let problems = std::mem::take(&mut s.problems);
    drop(s);
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn the_readme_runs_as_typed() {
    check_page("README.md");
}

#[test]
fn the_agents_page_runs_as_typed() {
    check_page("docs/agents.md");
}

#[test]
fn the_load_shapes_page_runs_as_typed() {
    check_page("docs/load-shapes.md");
}

#[test]
fn the_jetstream_page_runs_as_typed() {
    check_page("docs/jetstream.md");
}

#[test]
fn the_install_page_runs_as_typed() {
    check_page("docs/install.md");
}

#[test]
fn a_shape_is_its_lines_heads_and_a_difference_either_way_is_named() {
    let shown: Vec<String> = ["Pacing: 1 msgs/s", "Delivery (exact): 1", "  P99.9   1 ms"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    // Other figures, the same lines: the same shape.
    assert_eq!(
        compare(
            &shown,
            "Pacing: 9 msgs/s\nDelivery (exact): 5\n  P99.9  8 ms\n"
        ),
        None
    );
    // A line the page lacks, and one it shows that the run no longer prints.
    let d = compare(&shown, "Pacing: 9\nDurability: 5 sent\n  P99.9 8 ms\n").unwrap();
    assert!(
        d.contains("\"Delivery\"") && d.contains("\"Durability:\""),
        "{d}"
    );
    // An elided page may leave out table rows, not a line of another kind.
    let elided: Vec<String> = ["Pacing: 1", "  P50 1 ms", "…", "Delivery: 1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        compare(
            &elided,
            "Pacing: 2\n  P50 1 ms\n  P99.9 1 ms\n  max 2 ms\nDelivery: 2\n"
        ),
        None
    );
    let d = compare(
        &elided,
        "Pacing: 2\n  P50 1 ms\nDurability: 1\nDelivery: 2\n",
    )
    .unwrap();
    assert!(d.contains("\"Durability:\""), "{d}");
    // A page that ends in `…` shows the first lines only: what follows them is not compared,
    // what they are is.
    let first: Vec<String> = ["Pacing: 1", "  P50 1 ms", "…"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        compare(&first, "Pacing: 2\n  P50 1 ms\nDurability: 1\n"),
        None
    );
    assert!(compare(&first, "Durability: 1\n  P50 1 ms\nPacing: 2\n").is_some());
    // A public key is a key whichever one a run made.
    assert_eq!(
        head("UAXLOQXTVFTAMR7JK3KJGSEIGNGHOKTUMS3Z3KLVMTXEUO2ALZJXACCD"),
        head("UDALOXKANWQ2SFB4EIN7PH5JK3PX6N4UC2HQJJZFO3B5NB7G9CLEMABC")
    );
    // A gate that passed on the page and failed here (or the reverse) is the same line.
    assert_eq!(
        head("  PASS p99<2ms (measured 1 ms)"),
        head("  FAIL p99<2ms (measured 6 ms)")
    );
    // Numbers of any length are one shape.
    assert_eq!(head("  16,000/s  run 1/1"), head("1,000/s  run 2/3"));
    assert_eq!(head("  P99.999  1 ms").as_deref(), Some("P#"));
    // A rate the machine could not keep is no difference in shape.
    assert_eq!(
        compare(
            &shown,
            "Pacing: 9\nDelivery (exact): 5\n  P99.9 8\n!! RATE SHORTFALL: x\n"
        ),
        None
    );
}

#[test]
fn a_page_is_read_as_prompted_lines_with_their_output_and_typed_lines_without() {
    let page = "text\n```\n$ msgbench pub --msgs 1\nmsgbench pub against x\n$ echo $?\n0\n```\n\
                ```sh\nmkdir -p ~/x   # a comment\nmsgbench man --dir ~/x\nman -l -\n```\n";
    let e = examples(page);
    let cmds: Vec<&str> = e.iter().map(|e| e.command.as_str()).collect();
    assert_eq!(
        cmds,
        [
            "msgbench pub --msgs 1",
            "echo $?",
            "mkdir -p ~/x",
            "msgbench man --dir ~/x"
        ]
    );
    assert_eq!(e[0].shown, ["msgbench pub against x"]);
    assert_eq!(e[1].shown, ["0"]);
    assert_eq!(e[0].line, 3);
}
