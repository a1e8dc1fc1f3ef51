//! Keeps the crate layered: every `crate::…` and `super::…` path in msgbench/src is read, each
//! file is placed in a layer by the table below, and the test fails on an import that points
//! up the table or on a cycle between modules. The self-tests run the same checker on small
//! made-up crates, so the check is shown to fail when an upward import or a cycle is added.
//!
//! An import through a re-export (`pub use`) counts where the name really lives: `crate::Cli`,
//! re-exported at the crate root from `command`, is an import of `command`.
//!
//! Test code (`tests.rs` files and `#[cfg(test)]` items, wherever they stand) is left out: a
//! unit test may need a real server or a scenario above the code it tests, and that does not
//! make the code depend on them.
//!
//! The same reading keeps files and functions short: no file holds more than
//! [`MAX_FILE_LINES`] lines outside its tests, and no function is longer than
//! [`MAX_FN_LINES`], anywhere in src/, bar the few listed here, each with its reason. The
//! self-tests plant each kind of violation (an upward import behind a re-export, a long file
//! whose tests stand above its code, a long function outside `scenario/`) and show it caught.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers from the bottom up. A module may import its own layer and the ones below it.
/// The longest matching prefix places a file; modules in one layer must still not form a
/// cycle.
const LAYERS: &[(u8, &str)] = &[
    (1, "error"),
    (1, "format"),
    (1, "interrupt"),
    (1, "values"),
    (2, "wire"),
    (3, "stats"),
    (3, "metric"),
    (4, "engine"),
    (5, "result"),
    (6, "gate"),
    (7, "cli"),
    (7, "options"),
    (8, "server"),
    (8, "link"),
    (8, "control"),
    (9, "scenario"),
    (10, "plan"),
    (11, "export"),
    (11, "report"),
    (11, "output"),
    (11, "history"),
    (12, "session"),
    (13, "dist"),
    (13, "capacity"),
    (13, "capture"),
    (13, "compare"),
    (14, "command"),
    (14, "app"),
];

/// A module of the table: the longest prefix of `path` that the table names.
fn unit(path: &[String]) -> Option<(&'static str, u8)> {
    let joined = path.join("::");
    LAYERS
        .iter()
        .filter(|(_, p)| joined == *p || joined.starts_with(&format!("{p}::")))
        .max_by_key(|(_, p)| p.len())
        .map(|(l, p)| (*p, *l))
}

/// The module path of a source file: `engine/conn/mod.rs` is `engine::conn`, `lib.rs` the app.
fn module_of(file: &str) -> Vec<String> {
    let f = file.trim_end_matches(".rs");
    if f == "lib" || f == "main" {
        return vec!["app".into()];
    }
    let mut parts: Vec<String> = f.split('/').map(String::from).collect();
    if parts.last().map(String::as_str) == Some("mod") {
        parts.pop();
    }
    parts
}

/// The module a file defines, as paths in the source name it: `lib.rs` is the crate root.
fn real_module(file: &str) -> Vec<String> {
    if file == "lib.rs" {
        return Vec::new();
    }
    module_of(file)
}

/// Source text without comments and without test modules.
fn code_of(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") {
            // Skips the next item: a `mod tests { … }` block (by brace depth) or one line.
            let mut depth = 0i32;
            let mut opened = false;
            for l in lines.by_ref() {
                depth += l.matches('{').count() as i32 - l.matches('}').count() as i32;
                opened |= l.contains('{');
                if (opened && depth <= 0) || (!opened && l.trim_end().ends_with(';')) {
                    break;
                }
            }
            continue;
        }
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Reads a use tree at the start of `s` (`a::b::{c, d::e}`) into its full paths.
fn use_tree(s: &str) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    let bytes = s.as_bytes();
    let mut i = 0;
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        if i > start {
            prefix.push(s[start..i].to_string());
        }
        // `crate::{a, b}` opens with the brace; `a::b::{c, d}` reaches it after a `::`.
        let brace_here = prefix.is_empty() && s[i..].trim_start().starts_with('{');
        if brace_here || s[i..].starts_with("::") {
            if !brace_here {
                i += 2;
            }
            if s[i..].trim_start().starts_with('{') {
                i += s[i..].find('{').unwrap() + 1;
                let mut paths = Vec::new();
                loop {
                    let (sub, used) = use_tree(&s[i..]);
                    i += used;
                    for p in sub {
                        let mut full = prefix.clone();
                        full.extend(p.into_iter().filter(|x| x != "self"));
                        paths.push(full);
                    }
                    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                        i += 1;
                    }
                    match bytes.get(i) {
                        Some(b',') => i += 1,
                        Some(b'}') => {
                            i += 1;
                            break;
                        }
                        _ => break,
                    }
                    if s[i..].trim_start().starts_with('}') {
                        i += s[i..].find('}').unwrap() + 1;
                        break;
                    }
                }
                return (paths, i);
            }
            continue;
        }
        return (vec![prefix], i);
    }
}

/// Every module path one file names, resolved from `crate::` and `super::`.
fn imports(file: &str, text: &str) -> Vec<Vec<String>> {
    let code = code_of(text);
    let mut found = Vec::new();
    let module = module_of(file);
    let is_dir_module = file.ends_with("mod.rs") || file == "lib.rs";
    for (at, _) in code.match_indices("crate::") {
        if at > 0 && code.as_bytes()[at - 1].is_ascii_alphanumeric() {
            continue;
        }
        found.extend(use_tree(&code[at + "crate::".len()..]).0);
    }
    for (at, _) in code.match_indices("super::") {
        let before = &code[..at];
        if before.ends_with("super::") || before.ends_with(|c: char| c.is_alphanumeric()) {
            continue;
        }
        let mut rest = &code[at..];
        // The module a file's `super` names: its parent, or for a mod.rs its own parent.
        let mut base = module.clone();
        if !is_dir_module {
            base.pop();
        }
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        for p in use_tree(rest).0 {
            let mut full = base.clone();
            full.extend(p);
            found.push(full);
        }
    }
    found
}

/// What each module re-exports (`pub use …`, `pub(crate) use …`): module → name → the path
/// the name stands for, read like an import from that module.
type Exports = BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>;

fn reexports(files: &[(String, String)]) -> Exports {
    let mut out: Exports = BTreeMap::new();
    for (file, text) in files {
        let module = real_module(file);
        let code = code_of(text);
        for vis in ["pub use ", "pub(crate) use ", "pub(super) use "] {
            for (at, _) in code.match_indices(vis) {
                let rest = &code[at + vis.len()..];
                for p in use_tree(rest).0 {
                    let Some(name) = p.last().cloned() else {
                        continue;
                    };
                    let target = absolute(&module, file, &p);
                    if target.len() > 1 {
                        out.entry(module.clone()).or_default().insert(name, target);
                    }
                }
            }
        }
    }
    out
}

/// A use path as written in `module` (file `file`), made absolute: `crate::` from the root,
/// `super::` from the parent, `self::` and a bare child module from the module itself.
fn absolute(module: &[String], file: &str, p: &[String]) -> Vec<String> {
    let is_dir_module = file.ends_with("mod.rs") || file == "lib.rs";
    let mut base: Vec<String> = module.to_vec();
    let mut rest = p;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            if !is_dir_module {
                base.pop();
            }
            while rest.first().map(String::as_str) == Some("super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        _ => {}
    }
    base.extend(rest.iter().cloned());
    base
}

/// An import path followed through re-exports to where its name is defined.
fn resolve(path: &[String], exports: &Exports) -> Vec<String> {
    let mut p = path.to_vec();
    // Chains are short; the bound only stops a re-export cycle.
    for _ in 0..16 {
        let hop = (0..p.len()).rev().find_map(|k| {
            let target = exports.get(&p[..k])?.get(&p[k])?;
            (target.as_slice() != &p[..=k]).then(|| {
                let mut t = target.clone();
                t.extend(p[k + 1..].iter().cloned());
                t
            })
        });
        match hop {
            Some(next) => p = next,
            None => break,
        }
    }
    p
}

#[derive(Debug, Default)]
struct Findings {
    upward: Vec<String>,
    cycles: Vec<Vec<&'static str>>,
}

/// Checks a crate given as (path under src, text) pairs.
fn check(files: &[(String, String)]) -> Findings {
    let mut f = Findings::default();
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let exports = reexports(files);
    for (file, text) in files {
        if file.ends_with("tests.rs") || file == "testdir.rs" {
            continue;
        }
        let Some((from, from_layer)) = unit(&module_of(file)) else {
            f.upward.push(format!("{file}: not in the layer table"));
            continue;
        };
        for path in imports(file, text) {
            let path = resolve(&path, &exports);
            let Some((to, to_layer)) = unit(&path) else {
                continue;
            };
            if to_layer > from_layer {
                f.upward.push(format!(
                    "{file} (layer {from_layer}, {from}) imports {} (layer {to_layer}, {to})",
                    path.join("::")
                ));
            }
            if to != from {
                edges.entry(from).or_default().insert(to);
            }
        }
    }
    f.upward.sort();
    f.upward.dedup();
    f.cycles = cycles(&edges);
    f
}

/// Strongly connected components of more than one module (Tarjan's algorithm).
fn cycles<'a>(edges: &BTreeMap<&'a str, BTreeSet<&'a str>>) -> Vec<Vec<&'a str>> {
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(v: &'a str, e: &BTreeMap<&'a str, BTreeSet<&'a str>>, s: &mut State<'a>) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        for &w in e.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(w, e, s);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w);
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(v, edges, &mut s);
        }
    }
    s.out
}

fn crate_sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                walk(&p, root, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    out.sort();
    out
}

#[test]
fn the_crate_imports_only_downward_and_has_no_cycle() {
    let files = crate_sources();
    assert!(files.len() > 50, "read only {} files", files.len());
    let f = check(&files);
    assert!(
        f.upward.is_empty(),
        "imports that point up the layers:\n{}",
        f.upward.join("\n")
    );
    assert!(f.cycles.is_empty(), "modules in a cycle: {:?}", f.cycles);
}

fn made_up(files: &[(&str, &str)]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect()
}

#[test]
fn an_added_upward_import_fails_the_check() {
    let ok = made_up(&[
        (
            "engine/conn.rs",
            "use crate::wire::proto::Op;\nuse crate::stats::x;",
        ),
        ("wire/proto.rs", "pub enum Op {}"),
    ]);
    assert!(check(&ok).upward.is_empty());
    let bad = made_up(&[
        (
            "engine/conn.rs",
            "use crate::{wire::proto::Op, options::Pace};",
        ),
        ("options/mod.rs", "pub struct Pace;"),
    ]);
    let f = check(&bad);
    assert_eq!(f.upward.len(), 1, "{:?}", f.upward);
    assert!(f.upward[0].contains("engine/conn.rs"), "{:?}", f.upward);
    assert!(f.upward[0].contains("options::Pace"), "{:?}", f.upward);
}

#[test]
fn super_paths_and_nested_trees_are_resolved() {
    let bad = made_up(&[(
        "engine/load/publish.rs",
        "use super::super::super::scenario::{self, js::Run};",
    )]);
    let f = check(&bad);
    assert_eq!(f.upward.len(), 2, "{:?}", f.upward);
    // Comments and test modules do not count.
    let quiet = made_up(&[(
        "engine/load/publish.rs",
        "// crate::scenario::run\nfn a() {}\n#[cfg(test)]\nmod tests {\n    use crate::scenario::x;\n}\n",
    )]);
    assert!(check(&quiet).upward.is_empty());
}

#[test]
fn an_upward_import_behind_a_re_export_fails_the_check() {
    let files = |shell: &str| {
        made_up(&[
            (
                "lib.rs",
                "mod cli;\nmod command;\npub use command::{Cli, Command};\n",
            ),
            ("command.rs", "pub struct Cli;\n"),
            ("cli/mod.rs", "mod shell;\npub use shell::completions;\n"),
            ("cli/shell.rs", shell),
        ])
    };
    let f = check(&files(
        "pub fn completions() { let _ = crate::Cli::command(); }",
    ));
    assert_eq!(f.upward.len(), 1, "{:?}", f.upward);
    assert!(
        f.upward[0].contains("cli/shell.rs") && f.upward[0].contains("command::Cli"),
        "{:?}",
        f.upward
    );
    // A re-export within the layer resolves to where the name lives and passes.
    let f = check(&made_up(&[
        ("cli/mod.rs", "mod shell;\npub use shell::completions;\n"),
        ("cli/shell.rs", "pub fn completions() {}"),
        ("options/mod.rs", "use crate::cli::completions;"),
    ]));
    assert!(f.upward.is_empty(), "{:?}", f.upward);
}

#[test]
fn a_cycle_within_one_layer_fails_the_check() {
    let f = check(&made_up(&[
        ("server.rs", "use crate::link::Proxy;"),
        ("link.rs", "use crate::server::Target;"),
    ]));
    assert!(f.upward.is_empty(), "{:?}", f.upward);
    assert_eq!(f.cycles, vec![vec!["link", "server"]]);
}

#[test]
fn every_file_is_placed_in_a_layer() {
    for (file, _) in crate_sources() {
        assert!(
            file == "testdir.rs" || unit(&module_of(&file)).is_some(),
            "{file} is in no layer"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Length: a function tells one step, and a file holds one responsibility. The few that are
// longer are listed here, each with why, where a reader can weigh the reason; a header in the
// file itself exempts nothing.

/// The longest a function may be, from its `fn` line to its closing brace.
const MAX_FN_LINES: usize = 150;

/// The most lines a file may hold outside its `#[cfg(test)]` items.
const MAX_FILE_LINES: usize = 600;

/// Functions allowed past [`MAX_FN_LINES`], as `(file under src/, function, why)`. The test
/// fails on an entry that is no longer over the limit, so the list cannot keep a stale one.
const LONG_FNS: &[(&str, &str, &str)] = &[];

/// Files allowed past [`MAX_FILE_LINES`], as `(file under src/, why)`; stale entries fail.
const LONG_FILES: &[(&str, &str)] = &[(
    "engine/fleet/member.rs",
    "one connection's state machine for the epoll fleet: every step reads and changes the one \
     `Member` (socket, buffer, phase, counts) inside the poll loop's hot path; cut into files by \
     step, that state would be passed across them on every readiness event",
)];

/// The text with comments and the insides of string and char literals blanked out (newlines
/// kept), so braces and `fn` are counted only where they are code.
fn blank_non_code(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            // Block comments nest in Rust.
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if (rest.starts_with(b"r#") || rest.starts_with(b"r\"") || rest.starts_with(b"br"))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
            && rest.iter().find(|&&c| !matches!(c, b'b' | b'r' | b'#')) == Some(&b'"')
        {
            // A raw string: r"…", r#"…"#, br#"…"#.
            let start = i + rest.iter().position(|&c| c == b'"').unwrap();
            let hashes = rest[..start - i].iter().filter(|&&c| c == b'#').count();
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let end = b[start + 1..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| start + 1 + p);
            blank(&mut out, start + 1, end);
            i = end + close.len();
        } else if rest[0] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j);
            i = j + 1;
        } else if rest[0] == b'\'' {
            // A char literal ('x', '\n', '\u{7b}') or a lifetime ('a), which has no closing quote.
            let end = if rest.get(1) == Some(&b'\\') {
                rest[2..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map(|p| i + 2 + p)
            } else {
                let ch = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (rest.get(1 + ch) == Some(&b'\'')).then_some(i + 1 + ch)
            };
            match end {
                Some(e) => {
                    blank(&mut out, i + 1, e);
                    i = e + 1;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Every function with a body in `text`: its name, the line its `fn` is on (from 1) and its
/// length in lines, `fn` line and closing brace included.
fn fn_lengths(text: &str) -> Vec<(String, usize, usize)> {
    let code = blank_non_code(text);
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let line_at = |i: usize| code[..i].iter().filter(|&&c| c == b'\n').count() + 1;
    let mut found = Vec::new();
    let mut i = 0;
    while let Some(p) = code[i..].windows(3).position(|w| w == b"fn ") {
        let at = i + p;
        i = at + 3;
        if at > 0 && ident(code[at - 1]) {
            continue;
        }
        let name_start = at
            + 3
            + code[at + 3..]
                .iter()
                .take_while(|c| c.is_ascii_whitespace())
                .count();
        let name_len = code[name_start..].iter().take_while(|&&c| ident(c)).count();
        if name_len == 0 {
            continue;
        }
        let name = String::from_utf8_lossy(&code[name_start..name_start + name_len]).into_owned();
        // The body opens at the first `{` after the signature; a `;` first means none.
        let Some(open) = code[name_start..]
            .iter()
            .position(|&c| c == b'{' || c == b';')
        else {
            continue;
        };
        let open = name_start + open;
        if code[open] == b';' {
            continue;
        }
        let mut depth = 0usize;
        let mut close = None;
        for (j, &c) in code[open..].iter().enumerate() {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(open + j);
                        break;
                    }
                }
                _ => {}
            }
        }
        let close = close.unwrap_or(code.len() - 1);
        let first = line_at(at);
        found.push((name, first, line_at(close) - first + 1));
    }
    found
}

/// Test code blanked out, lines kept: each `#[cfg(test)]` item (a `mod tests { … }` block by
/// its braces, or one line) becomes empty lines, wherever in the file it stands.
fn without_tests(text: &str) -> String {
    let code = blank_non_code(text);
    let lines: Vec<&str> = text.split('\n').collect();
    let code_lines: Vec<&[u8]> = code.split(|&c| c == b'\n').collect();
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_start().starts_with("#[cfg(test)]") {
            let (mut depth, mut opened) = (0i64, false);
            let mut j = i + 1;
            while j < lines.len() {
                let c = code_lines.get(j).copied().unwrap_or_default();
                depth += c.iter().filter(|&&b| b == b'{').count() as i64;
                depth -= c.iter().filter(|&&b| b == b'}').count() as i64;
                opened |= c.contains(&b'{');
                j += 1;
                if (opened && depth <= 0) || (!opened && lines[j - 1].trim_end().ends_with(';')) {
                    break;
                }
            }
            out.extend(std::iter::repeat_n("", j - i));
            i = j;
            continue;
        }
        out.push(lines[i]);
        i += 1;
    }
    out.join("\n")
}

/// Lines outside test code (blank lines between items included, as a reader meets them).
fn code_line_count(text: &str) -> usize {
    let kept = without_tests(text);
    let lines: Vec<&str> = text.lines().collect();
    kept.lines()
        .zip(lines.iter())
        .filter(|(k, l)| !k.is_empty() || l.trim().is_empty())
        .count()
}

/// Whether a file is test code as a whole.
fn is_test_file(f: &str) -> bool {
    f.ends_with("tests.rs") || f.ends_with("_tests.rs") || f == "testdir.rs"
}

/// The functions over [`MAX_FN_LINES`] outside test code, as `(file, function, line, length)`.
fn long_fns(files: &[(String, String)]) -> Vec<(String, String, usize, usize)> {
    files
        .iter()
        .filter(|(f, _)| !is_test_file(f))
        .flat_map(|(f, text)| {
            fn_lengths(&without_tests(text))
                .into_iter()
                .filter(|(_, _, len)| *len > MAX_FN_LINES)
                .map(move |(name, line, len)| (f.clone(), name, line, len))
        })
        .collect()
}

/// The files over [`MAX_FILE_LINES`] lines outside their tests, as `(file, lines)`.
fn long_files(files: &[(String, String)]) -> Vec<(String, usize)> {
    files
        .iter()
        .filter(|(f, _)| !is_test_file(f))
        .map(|(f, text)| (f.clone(), code_line_count(text)))
        .filter(|(_, n)| *n > MAX_FILE_LINES)
        .collect()
}

#[test]
fn no_function_is_longer_than_150_lines_bar_the_listed() {
    let long = long_fns(&crate_sources());
    let offenders: Vec<String> = long
        .iter()
        .filter(|(f, name, ..)| !LONG_FNS.iter().any(|(lf, ln, _)| lf == f && ln == name))
        .map(|(f, name, line, len)| format!("{f}:{line} fn {name}: {len} lines"))
        .collect();
    assert!(
        offenders.is_empty(),
        "functions over {MAX_FN_LINES} lines (split them into steps):\n{}",
        offenders.join("\n")
    );
    let stale: Vec<String> = LONG_FNS
        .iter()
        .filter(|(f, name, _)| !long.iter().any(|(lf, ln, ..)| lf == f && ln == name))
        .map(|(f, name, _)| format!("{f} fn {name}"))
        .collect();
    assert!(
        stale.is_empty(),
        "no longer over {MAX_FN_LINES} lines: remove from LONG_FNS:\n{}",
        stale.join("\n")
    );
}

#[test]
fn no_file_is_longer_than_600_lines_bar_the_listed() {
    let long = long_files(&crate_sources());
    let offenders: Vec<String> = long
        .iter()
        .filter(|(f, _)| !LONG_FILES.iter().any(|(lf, _)| lf == f))
        .map(|(f, n)| format!("{f}: {n} lines outside its tests"))
        .collect();
    assert!(
        offenders.is_empty(),
        "files over {MAX_FILE_LINES} lines (split them by responsibility):\n{}",
        offenders.join("\n")
    );
    let stale: Vec<&str> = LONG_FILES
        .iter()
        .filter(|(f, _)| !long.iter().any(|(lf, _)| lf == f))
        .map(|(f, _)| *f)
        .collect();
    assert!(
        stale.is_empty(),
        "no longer over {MAX_FILE_LINES} lines: remove from LONG_FILES:\n{}",
        stale.join("\n")
    );
}

/// A made-up file: a function of `body + 2` lines (its `fn` line, `body` lines, its brace).
fn fn_of_lines(name: &str, body: usize) -> String {
    let mut f = format!("fn {name}() {{\n");
    for i in 0..body {
        f.push_str(&format!("    let _x{i} = {i};\n"));
    }
    f.push_str("}\n");
    f
}

#[test]
fn a_long_function_anywhere_is_caught_and_one_in_tests_is_not() {
    let long = fn_of_lines("publish", MAX_FN_LINES + 48);
    let fits = fn_of_lines("connect", MAX_FN_LINES - 2);
    let in_tests = format!("#[cfg(test)]\nmod tests {{\n{long}}}\n");
    let files = made_up(&[
        ("engine/load.rs", &format!("//! A loop.\n\n{fits}\n{long}")),
        ("engine/other.rs", &format!("//! Tests only.\n{in_tests}")),
        ("engine/tests.rs", &long),
    ]);
    assert_eq!(
        long_fns(&files),
        vec![(
            "engine/load.rs".to_string(),
            "publish".to_string(),
            MAX_FN_LINES + 4,
            MAX_FN_LINES + 50
        )]
    );
}

#[test]
fn braces_in_strings_comments_and_chars_do_not_end_a_function() {
    let text = r##"
/// fn not_a_function() {
pub(super) fn outer<'a>(x: &'a str) -> Option<&'a str> {
    let open = '{';
    let s = "}}}";
    let raw = r#"}"#;
    // }
    /* } /* nested } */ } */
    let f: fn(u8) -> u8 = |b| b;
    fn inner() {}
    Some(x)
}
trait T {
    fn declared(&self);
}
"##;
    assert_eq!(
        fn_lengths(text),
        vec![("outer".to_string(), 3, 10), ("inner".to_string(), 10, 1)]
    );
}

#[test]
fn a_long_file_is_caught_even_with_its_tests_above_its_code() {
    let body = |n: usize| {
        (0..n)
            .map(|i| format!("const C{i}: u8 = 0;\n"))
            .collect::<String>()
    };
    let tests = format!("#[cfg(test)]\nmod tests {{\n{}}}\n", body(100));
    // 700 lines of code below a test module: the old count stopped at the first
    // `#[cfg(test)]` and saw one line.
    let tests_above = format!("//! A module.\n{tests}{}", body(699));
    // A header's words exempt nothing.
    let explained = format!(
        "//! A module.\n//! Past 600 lines on purpose.\n{}",
        body(MAX_FILE_LINES)
    );
    let fits = format!("//! A module.\n{}{tests}", body(MAX_FILE_LINES - 1));
    let files = made_up(&[
        ("a/tests_above.rs", &tests_above),
        ("a/explained.rs", &explained),
        ("a/fits.rs", &fits),
    ]);
    let mut found = long_files(&files);
    found.sort();
    assert_eq!(
        found,
        vec![
            ("a/explained.rs".to_string(), MAX_FILE_LINES + 2),
            ("a/tests_above.rs".to_string(), 700),
        ]
    );
}
