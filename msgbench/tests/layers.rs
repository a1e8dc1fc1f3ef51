//! Keeps the crate layered: every `crate::…` and `super::…` path in msgbench/src is read, each
//! file is placed in a layer by the table below, and the test fails on an import that points
//! up the table or on a cycle between modules. The self-tests run the same checker on small
//! made-up crates, so the check is shown to fail when an upward import or a cycle is added.
//!
//! Test code (`tests.rs` files and `#[cfg(test)]` modules) is left out: a unit test may need a
//! real server or a scenario above the code it tests, and that does not make the code depend
//! on them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The layers from the bottom up. A module may import its own layer and the ones below it.
/// The longest matching prefix places a file; modules in one layer must still not form a
/// cycle.
const LAYERS: &[(u8, &str)] = &[
    (1, "error"),
    (1, "format"),
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
    (11, "dist"),
    (11, "capacity"),
    (11, "compare"),
    (12, "command"),
    (12, "app"),
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

#[derive(Debug, Default)]
struct Findings {
    upward: Vec<String>,
    cycles: Vec<Vec<&'static str>>,
}

/// Checks a crate given as (path under src, text) pairs.
fn check(files: &[(String, String)]) -> Findings {
    let mut f = Findings::default();
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (file, text) in files {
        if file.ends_with("tests.rs") || file == "testdir.rs" {
            continue;
        }
        let Some((from, from_layer)) = unit(&module_of(file)) else {
            f.upward.push(format!("{file}: not in the layer table"));
            continue;
        };
        for path in imports(file, text) {
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
