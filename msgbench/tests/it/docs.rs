//! The documentation is checked against the program, so the two cannot drift apart:
//! - every `msgbench …` command that README.md or a docs/ page shows, in a code block or an
//!   inline code span, may use only flags that exist on the (sub)command it names. The command
//!   tree is read from clap itself (`Cli::command()`), never from a list kept here;
//! - every `msgbench …` command in a code block (a `$ msgbench` line, or a `msgbench` line of a
//!   block without prompts) is one a reader may copy and type, so it must get through the real
//!   parser (`Cli::try_parse_from`) exactly as written. An optional flag in brackets
//!   (`[--reconnect-jitter off]`) fails here; a page shows it as a second command or in prose.
//!   A command followed in its block by an `error: …` line shows a refusal: if the parser
//!   refuses it, the line shown must be the one msgbench prints;
//! - a flag named on its own in an inline code span (`--busy-poll`) must exist on some command;
//! - every relative link between the pages points at a file that exists, and a `#heading` in it
//!   at a heading that exists;
//! - no page names an investigation by its report number: the docs describe them in user terms;
//! - every `msgbench …` command in the CI examples (examples/ci/*.yml) must name real flags and
//!   parse as typed, as a code block's do. The files are read with a YAML parser, and only the
//!   shell scripts of their jobs (`run:` in GitHub Actions; `script:`, `before_script:` and
//!   `after_script:` in GitLab CI) are read, each as a code block without prompts.
//!
//! A failure names the file, the line and the flag, link or clap's message. The checker is also fed made-up
//! pages, so a test proves it reports what it should and accepts what it should.
//!
//! Reading rules, chosen so that output is never mistaken for a command:
//! - in a code block with a `$ ` prompt anywhere, only prompted lines are commands (the other
//!   lines are output, and output starts with `msgbench pub against …`);
//! - in a code block without prompts, a line that starts with `msgbench` is a command;
//! - a trailing `\` joins the next line; a shell operator (`|`, `&&`, `;`, `>`, `#`) ends it;
//! - `VAR=value` before `msgbench` is the environment, not part of the command (nor is it set
//!   for the parser: no command the pages show needs its environment to parse);
//! - inline code spans are checked for flags only, never parsed: in prose, `msgbench run` or
//!   `msgbench capacity latency --slo` names a command or a flag; it is not a line to type.
//!
//! Placeholders get no special treatment, since a reader's shell gives them none: `<URL>` is a
//! redirection (the flag before it is left without a value), and `…`, or `RATE` where a number
//! belongs, reach clap as they are and are refused. A code block shows commands with real
//! values; where a value is the reader's to choose, the prose says so.
//!
//! No server is needed: nothing here runs a command, it only parses them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser};
use msgbench::cli::one_line;
use msgbench::Cli;

/// One thing wrong in one page, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Problem {
    file: String,
    line: usize,
    what: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.what)
    }
}

/// A command or code span found in a page, with the line it starts on.
#[derive(Debug, Clone)]
struct Found {
    line: usize,
    text: String,
}

/// A command of a code block, and the refusal the page shows right under it, if any
/// (`$ msgbench pub --size 10XB` followed by `error: …`).
#[derive(Debug, Clone)]
struct Typed {
    command: Found,
    shown_error: Option<String>,
}

/// What one page contains that can be checked.
#[derive(Debug, Default)]
struct Page {
    /// Command lines starting with `msgbench`, from code blocks and inline code spans.
    commands: Vec<Found>,
    /// The commands of code blocks alone: lines a reader copies and types, which must parse.
    typed: Vec<Typed>,
    /// Inline code spans that start with a flag (`--rate R`, `-H K:V`).
    bare_flags: Vec<Found>,
    /// Link targets outside code: `[text](target)`.
    links: Vec<Found>,
    /// Heading anchors as GitHub makes them.
    anchors: BTreeSet<String>,
    /// Prose outside code blocks, by line, for the report-number rule.
    prose: Vec<Found>,
}

impl Page {
    /// The commands of one code block: checked for flags, like any command, and typed.
    fn add_block(&mut self, lines: &[(usize, &str)]) {
        let typed = commands_in_block(lines);
        self.commands
            .extend(typed.iter().map(|t| t.command.clone()));
        self.typed.extend(typed);
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate lives in a workspace folder")
        .to_path_buf()
}

/// README.md and every docs/*.md, README first. A missing docs/ folder is a failure, not a
/// reason to check less.
fn doc_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md")];
    let docs = root.join("docs");
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&docs)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", docs.display()))
        .map(|entry| entry.expect("a readable docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    assert!(!pages.is_empty(), "docs/ holds no .md page");
    files.extend(pages);
    files
}

/// The name a problem report uses for a file: relative to the repository.
fn display_name(root: &Path, file: &Path) -> String {
    file.strip_prefix(root)
        .unwrap_or(file)
        .display()
        .to_string()
}

// ---------------------------------------------------------------------------------------------
// Reading a page

fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

/// Splits a page into code blocks and prose, and collects what can be checked in each.
fn read_page(text: &str) -> Page {
    let mut page = Page::default();
    let mut block: Option<Vec<(usize, &str)>> = None;
    let mut prose: Vec<(usize, &str)> = Vec::new();
    let mut seen_anchors: BTreeMap<String, usize> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if is_fence(line) {
            match block.take() {
                Some(lines) => page.add_block(&lines),
                None => block = Some(Vec::new()),
            }
            // A fence also ends a paragraph, so a code span cannot run across it.
            prose.push((n, ""));
            continue;
        }
        match block.as_mut() {
            Some(lines) => lines.push((n, line)),
            None => {
                if let Some(heading) = heading_text(line) {
                    let slug = slug(heading);
                    let count = seen_anchors.entry(slug.clone()).or_insert(0);
                    let anchor = if *count == 0 {
                        slug.clone()
                    } else {
                        format!("{slug}-{count}")
                    };
                    *count += 1;
                    page.anchors.insert(anchor);
                }
                prose.push((n, line));
            }
        }
    }
    // An unclosed fence runs to the end of the page, as Markdown renders it.
    if let Some(lines) = block {
        page.add_block(&lines);
    }
    read_prose(&prose, &mut page);
    page
}

/// The text of an ATX heading (`## Title`), if the line is one.
fn heading_text(line: &str) -> Option<&str> {
    let hashes = line.chars().take_while(|&c| c == '#').count();
    if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
        Some(line[hashes..].trim().trim_end_matches('#').trim())
    } else {
        None
    }
}

/// The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Commands in one code block (see the module's reading rules).
fn commands_in_block(lines: &[(usize, &str)]) -> Vec<Typed> {
    let prompted = lines.iter().any(|(_, l)| l.trim_start().starts_with("$ "));
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let (n, line) = lines[i];
        i += 1;
        let t = line.trim_start();
        let candidate = if prompted {
            t.strip_prefix("$ ")
        } else {
            Some(t)
        };
        let Some(candidate) = candidate else { continue };
        let mut text = candidate.trim_end().to_string();
        while text.ends_with('\\') && i < lines.len() {
            text.pop();
            text.truncate(text.trim_end().len());
            text.push(' ');
            text.push_str(lines[i].1.trim());
            i += 1;
        }
        if names_msgbench(&text) {
            // In a block with prompts, the line after a command is its output.
            let shown_error = lines
                .get(i)
                .filter(|_| prompted)
                .map(|(_, next)| next.trim())
                .filter(|next| next.starts_with("error: "))
                .map(str::to_string);
            found.push(Typed {
                command: Found { line: n, text },
                shown_error,
            });
        }
    }
    found
}

/// Whether a command line runs msgbench (after any `VAR=value` environment).
fn names_msgbench(text: &str) -> bool {
    command_words(text).first().is_some_and(|w| w == "msgbench")
}

/// Inline code spans and links in the prose. A span may wrap onto the next line of its
/// paragraph; a blank line ends it.
fn read_prose(lines: &[(usize, &str)], page: &mut Page) {
    let mut span: Option<(usize, String)> = None;
    for &(n, line) in lines {
        if line.trim().is_empty() {
            span = None;
        }
        page.prose.push(Found {
            line: n,
            text: line.to_string(),
        });
        let mut outside = String::new();
        for c in line.chars() {
            if c == '`' {
                match span.take() {
                    Some((start, code)) => classify_span(start, code.trim(), page),
                    None => {
                        links_in(&outside, n, page);
                        outside.clear();
                        span = Some((n, String::new()));
                    }
                }
            } else if let Some((_, code)) = span.as_mut() {
                code.push(c);
            } else {
                outside.push(c);
            }
        }
        match span.as_mut() {
            Some((_, code)) => code.push(' '),
            None => links_in(&outside, n, page),
        }
    }
}

fn classify_span(line: usize, code: &str, page: &mut Page) {
    let found = Found {
        line,
        text: code.to_string(),
    };
    if names_msgbench(code) {
        page.commands.push(found);
    } else if is_flag_span(code) {
        page.bare_flags.push(found);
    }
}

/// `--name …` or `-x …`; not `-ERR` (a protocol operation) nor `-bin` (a metadata suffix).
fn is_flag_span(code: &str) -> bool {
    let first = first_flag_word(code);
    if let Some(long) = first.strip_prefix("--") {
        return long
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric());
    }
    let mut chars = first.chars();
    chars.next() == Some('-')
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.next().is_none()
}

/// The first word of a span, without the comma of a list such as `-s, --server URL`.
fn first_flag_word(code: &str) -> &str {
    code.split_whitespace()
        .next()
        .unwrap_or("")
        .trim_end_matches(',')
}

/// `[text](target)` in a stretch of prose with the code spans taken out.
fn links_in(text: &str, line: usize, page: &mut Page) {
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let Some(end) = after.find(')') else { break };
        let target = after[..end].trim();
        // `[text](url "title")`: the title is not part of the target.
        let target = target.split_whitespace().next().unwrap_or("");
        if !target.is_empty() {
            page.links.push(Found {
                line,
                text: target.to_string(),
            });
        }
        rest = &after[end..];
    }
}

// ---------------------------------------------------------------------------------------------
// Words of a command line

/// Shell-like words: quotes group, a backslash escapes one character, and the first shell
/// operator or comment ends the command.
fn shell_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    in_word = true;
                }
                '\\' => {
                    if let Some(next) = chars.next() {
                        word.push(next);
                    }
                    in_word = true;
                }
                c if c.is_whitespace() => {
                    if in_word {
                        if is_operator(&word) {
                            return words;
                        }
                        words.push(std::mem::take(&mut word));
                        in_word = false;
                    }
                }
                '|' | ';' | '&' | '>' | '<' if !in_word || word.is_empty() => return words,
                '#' if !in_word => return words,
                _ => {
                    word.push(c);
                    in_word = true;
                }
            },
        }
    }
    if in_word && !is_operator(&word) {
        words.push(word);
    }
    words
}

fn is_operator(word: &str) -> bool {
    matches!(word, "|" | "||" | "&&" | ";" | "&") || word.starts_with("2>")
}

/// The words of a command, without the `VAR=value` environment in front of it.
fn command_words(text: &str) -> Vec<String> {
    let words = shell_words(text);
    let skip = words
        .iter()
        .take_while(|w| {
            w.split_once('=').is_some_and(|(name, _)| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
        })
        .count();
    words[skip..].to_vec()
}

/// A flag's name as the docs may write it: letters, digits, `-` and `_`. Anything else
/// (`--tls-*`, `--…`) is a placeholder for several flags, not one, and is left alone.
fn is_flag_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

// ---------------------------------------------------------------------------------------------
// Checking against the command tree

fn command_tree() -> clap::Command {
    // `msgbench capacity WORKLOAD.yaml` takes a file where a scenario would be: its flags are
    // a command of their own, reached here under the name the walk gives a workload file.
    let mut cmd = Cli::command().mut_subcommand("capacity", |c| {
        c.subcommand(msgbench::command::workload_search_command().name(WORKLOAD))
    });
    // Building adds --help and --version and fills in what the derive left implicit.
    cmd.build();
    cmd
}

/// The name under which the command tree holds `capacity`'s workload search.
const WORKLOAD: &str = "WORKLOAD.yaml";

fn find_long<'a>(cmd: &'a clap::Command, name: &str) -> Option<&'a clap::Arg> {
    cmd.get_arguments().find(|a| {
        a.get_long() == Some(name)
            || a.get_all_aliases()
                .is_some_and(|aliases| aliases.contains(&name))
    })
}

fn find_short(cmd: &clap::Command, c: char) -> Option<&clap::Arg> {
    cmd.get_arguments().find(|a| {
        a.get_short() == Some(c)
            || a.get_all_short_aliases()
                .is_some_and(|aliases| aliases.contains(&c))
    })
}

/// Checks one command line: walks its subcommands (`msgbench compare --clients native,go
/// request …` is `compare`, then its scenario `request`) and looks every flag up on the
/// subcommand reached at that point. Returns what is wrong, one line per flag.
fn check_command(tree: &clap::Command, text: &str) -> Vec<String> {
    let words = command_words(text);
    let mut errors = Vec::new();
    if words.first().map(String::as_str) != Some("msgbench") {
        return errors;
    }
    let mut cmd = tree;
    let mut path = String::from("msgbench");
    let mut i = 1;
    while i < words.len() {
        let word = words[i].as_str();
        i += 1;
        if word == "--" {
            break;
        }
        let arg = if let Some(long) = word.strip_prefix("--") {
            let (name, inline_value) = match long.split_once('=') {
                Some((name, _)) => (name, true),
                None => (long, false),
            };
            if !is_flag_name(name) {
                continue;
            }
            match find_long(cmd, name) {
                Some(arg) => (arg, inline_value),
                None => {
                    errors.push(format!("`--{name}` is not a flag of `{path}`"));
                    continue;
                }
            }
        } else if let Some(short) = word.strip_prefix('-').filter(|s| !s.is_empty()) {
            let c = short.chars().next().expect("not empty");
            if !c.is_ascii_alphabetic() {
                // A negative number or a lone `-` (stdin): a value, not a flag.
                continue;
            }
            match find_short(cmd, c) {
                // `-n20000`: the value is attached.
                Some(arg) => (arg, short.len() > c.len_utf8()),
                None => {
                    errors.push(format!("`-{c}` is not a flag of `{path}`"));
                    continue;
                }
            }
        } else {
            let is_file = [".yaml", ".yml"].iter().any(|e| word.ends_with(e));
            let word = if is_file && cmd.find_subcommand(WORKLOAD).is_some() {
                WORKLOAD
            } else {
                word
            };
            if let Some(sub) = cmd.find_subcommand(word) {
                cmd = sub;
                path.push(' ');
                path.push_str(sub.get_name());
            }
            continue;
        };
        let (arg, value_attached) = arg;
        if arg.get_action().takes_values() && !value_attached {
            i += 1;
        }
    }
    errors
}

/// The line msgbench prints when the parser refuses a command typed as written (`error: …`),
/// or `None` when it parses. The words are the shell's (see the module's reading rules), given
/// to the real parser as they are. `--help` and `--version` parse: clap reports them as errors
/// only to stop there.
fn parse_error(text: &str) -> Option<String> {
    use clap::error::ErrorKind as K;
    let err = Cli::try_parse_from(command_words(text)).err()?;
    if matches!(err.kind(), K::DisplayHelp | K::DisplayVersion) {
        return None;
    }
    Some(format!("error: {}", one_line(&err)))
}

/// The commands of one page's code blocks that do not parse as typed. A command shown with its
/// refusal (`error: …` on the next line) is a bad-input example: if the parser refuses it, the
/// page must show the line msgbench prints. One the parser accepts is refused later (by
/// validation or the server), which only running it could check.
fn check_typed(file: &str, page: &Page) -> Vec<Problem> {
    let mut problems = Vec::new();
    for typed in &page.typed {
        let Some(error) = parse_error(&typed.command.text) else {
            continue;
        };
        let what = match &typed.shown_error {
            Some(shown) if *shown == error => continue,
            Some(shown) => format!(
                "`{}` is shown refused with `{shown}`, but msgbench prints `{error}`",
                typed.command.text
            ),
            None => format!("`{}` does not parse: {error}", typed.command.text),
        };
        problems.push(Problem {
            file: file.to_string(),
            line: typed.command.line,
            what,
        });
    }
    problems
}

/// Every long and short flag anywhere in the tree, for flags named on their own in prose.
fn all_flags(cmd: &clap::Command, longs: &mut BTreeSet<String>, shorts: &mut BTreeSet<char>) {
    for arg in cmd.get_arguments() {
        longs.extend(arg.get_long().map(str::to_string));
        longs.extend(
            arg.get_all_aliases()
                .unwrap_or_default()
                .into_iter()
                .map(str::to_string),
        );
        shorts.extend(arg.get_short());
        shorts.extend(arg.get_all_short_aliases().unwrap_or_default());
    }
    for sub in cmd.get_subcommands() {
        all_flags(sub, longs, shorts);
    }
}

/// Flag problems in one page: its commands, and flags named on their own.
fn check_flags(tree: &clap::Command, file: &str, page: &Page) -> Vec<Problem> {
    let mut problems = Vec::new();
    for found in &page.commands {
        for what in check_command(tree, &found.text) {
            problems.push(Problem {
                file: file.to_string(),
                line: found.line,
                what: format!("{what}, in `{}`", found.text),
            });
        }
    }
    let (mut longs, mut shorts) = (BTreeSet::new(), BTreeSet::new());
    all_flags(tree, &mut longs, &mut shorts);
    for found in &page.bare_flags {
        let first = first_flag_word(&found.text);
        let (flag, known) = if let Some(long) = first.strip_prefix("--") {
            let name = long.split_once('=').map_or(long, |(n, _)| n);
            if !is_flag_name(name) {
                continue;
            }
            (format!("--{name}"), longs.contains(name))
        } else {
            let c = first.chars().nth(1).expect("a flag span has a letter");
            (format!("-{c}"), shorts.contains(&c))
        };
        if !known {
            problems.push(Problem {
                file: file.to_string(),
                line: found.line,
                what: format!("`{flag}` is not a flag of any msgbench command"),
            });
        }
    }
    problems
}

/// Link problems in one page: relative targets that do not exist, and anchors with no heading.
/// `dir` is the folder the page is in; `anchors_of` reads the headings of another page.
fn check_links(
    file: &str,
    dir: &Path,
    page: &Page,
    anchors_of: &dyn Fn(&Path) -> Option<BTreeSet<String>>,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    for link in &page.links {
        let target = link.text.as_str();
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((path, anchor)) => (path, Some(anchor)),
            None => (target, None),
        };
        let problem = |what: String| Problem {
            file: file.to_string(),
            line: link.line,
            what,
        };
        let anchors = if path.is_empty() {
            Some(page.anchors.clone())
        } else {
            let resolved = dir.join(path);
            if !resolved.exists() {
                problems.push(problem(format!("link to `{target}`: no such file")));
                continue;
            }
            if resolved.extension().is_some_and(|x| x == "md") {
                anchors_of(&resolved)
            } else {
                None
            }
        };
        if let (Some(anchor), Some(anchors)) = (anchor, anchors) {
            if !anchors.contains(anchor) {
                problems.push(problem(format!(
                    "link to `{target}`: no heading with the anchor `#{anchor}`"
                )));
            }
        }
    }
    problems
}

/// Prose that names an investigation by its number (`the 004 report`, `000/002/003`).
fn check_report_numbers(file: &str, page: &Page) -> Vec<Problem> {
    let mut problems = Vec::new();
    for found in &page.prose {
        for word in found.text.split_whitespace() {
            let word = word.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '/');
            // "the 004's findings" names it as much as "the 004 report" does.
            let word = word
                .strip_suffix("'s")
                .or_else(|| word.strip_suffix("\u{2019}s"))
                .unwrap_or(word);
            if word
                .split('/')
                .any(|part| matches!(part, "000" | "001" | "002" | "003" | "004"))
            {
                problems.push(Problem {
                    file: file.to_string(),
                    line: found.line,
                    what: format!(
                        "`{word}` names an investigation by number; describe it in user terms"
                    ),
                });
            }
        }
    }
    problems
}

fn read_pages(root: &Path) -> Vec<(PathBuf, Page)> {
    doc_files(root)
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
            let page = read_page(&text);
            (file, page)
        })
        .collect()
}

/// examples/ci/*.yml, sorted. A missing folder or one without a job file is a failure.
fn ci_files(root: &Path) -> Vec<PathBuf> {
    let dir = root.join("examples").join("ci");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("a readable examples/ci entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yml" || x == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "examples/ci holds no .yml file");
    files
}

/// The keys whose values are shell scripts, in GitHub Actions and GitLab CI.
const SCRIPT_KEYS: &[&str] = &["run", "script", "before_script", "after_script"];

/// Every shell script of a CI file's jobs, as the runner hands it to the shell: a string, or
/// each item of a list.
fn ci_scripts(doc: &yaml_rust2::Yaml, out: &mut Vec<String>) {
    use yaml_rust2::Yaml;
    match doc {
        Yaml::Hash(map) => {
            for (key, value) in map {
                let is_script = key.as_str().is_some_and(|k| SCRIPT_KEYS.contains(&k));
                match value {
                    Yaml::String(text) if is_script => out.push(text.clone()),
                    Yaml::Array(items) if is_script => {
                        out.extend(items.iter().filter_map(|i| i.as_str().map(str::to_string)))
                    }
                    other => ci_scripts(other, out),
                }
            }
        }
        Yaml::Array(items) => items.iter().for_each(|i| ci_scripts(i, out)),
        _ => {}
    }
}

/// A CI file read as a page: its scripts are its code blocks. A script line is reported at
/// the first line of the file, at or after the previous one, that holds it.
fn read_ci(text: &str) -> Page {
    let docs =
        yaml_rust2::YamlLoader::load_from_str(text).unwrap_or_else(|e| panic!("not YAML: {e}"));
    let mut scripts = Vec::new();
    docs.iter().for_each(|d| ci_scripts(d, &mut scripts));
    let raw: Vec<&str> = text.lines().collect();
    let mut page = Page::default();
    let mut at = 0;
    for script in &scripts {
        let lines: Vec<(usize, &str)> = script
            .lines()
            .map(|line| {
                let needle = line.trim();
                if let Some(k) = raw[at..].iter().position(|r| r.contains(needle)) {
                    at += k;
                }
                (at + 1, line)
            })
            .collect();
        page.add_block(&lines);
    }
    page
}

fn anchors_from_disk(path: &Path) -> Option<BTreeSet<String>> {
    std::fs::read_to_string(path)
        .ok()
        .map(|text| read_page(&text).anchors)
}

fn report(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(|p| format!("  {p}\n"))
        .collect::<String>()
}

// ---------------------------------------------------------------------------------------------
// The checks on the real pages

#[test]
fn every_flag_the_docs_show_exists_on_the_command_it_is_shown_with() {
    let root = repo_root();
    let tree = command_tree();
    let pages = read_pages(&root);
    let readme_commands = pages[0].1.commands.len();
    assert!(
        readme_commands > 0,
        "README.md shows no msgbench command: the reading rules or the README changed"
    );
    let mut problems = Vec::new();
    for (file, page) in &pages {
        problems.extend(check_flags(&tree, &display_name(&root, file), page));
    }
    assert!(
        problems.is_empty(),
        "{} flag(s) in the docs do not exist:\n{}",
        problems.len(),
        report(&problems)
    );
}

#[test]
fn every_command_in_a_code_block_parses_as_typed() {
    let root = repo_root();
    let pages = read_pages(&root);
    let typed: usize = pages.iter().map(|(_, p)| p.typed.len()).sum();
    assert!(
        !pages[0].1.typed.is_empty() && typed > pages[0].1.typed.len(),
        "README.md or docs/ shows no msgbench command in a code block: the reading rules or \
         the pages changed"
    );
    let mut problems = Vec::new();
    for (file, page) in &pages {
        problems.extend(check_typed(&display_name(&root, file), page));
    }
    assert!(
        problems.is_empty(),
        "{} of {typed} command line(s) in the docs' code blocks fail to parse as typed:\n{}",
        problems.len(),
        report(&problems)
    );
}

#[test]
fn every_msgbench_command_of_the_ci_examples_exists_and_parses_as_typed() {
    let root = repo_root();
    let tree = command_tree();
    let mut problems = Vec::new();
    for file in ci_files(&root) {
        let name = display_name(&root, &file);
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let page = read_ci(&text);
        assert!(
            !page.typed.is_empty(),
            "{name} runs no msgbench command: the reading rules or the file changed"
        );
        problems.extend(check_flags(&tree, &name, &page));
        problems.extend(check_typed(&name, &page));
    }
    assert!(
        problems.is_empty(),
        "{} problem(s) in the CI examples:\n{}",
        problems.len(),
        report(&problems)
    );
}

#[test]
fn every_relative_link_between_the_pages_resolves() {
    let root = repo_root();
    let pages = read_pages(&root);
    let links: usize = pages.iter().map(|(_, p)| p.links.len()).sum();
    assert!(
        links > 0,
        "no links found: the reading rules or the pages changed"
    );
    let mut problems = Vec::new();
    for (file, page) in &pages {
        let dir = file.parent().expect("a page is in a folder");
        problems.extend(check_links(
            &display_name(&root, file),
            dir,
            page,
            &anchors_from_disk,
        ));
    }
    assert!(
        problems.is_empty(),
        "{} broken link(s):\n{}",
        problems.len(),
        report(&problems)
    );
}

#[test]
fn no_page_names_an_investigation_by_its_report_number() {
    let root = repo_root();
    let mut problems = Vec::new();
    for (file, page) in read_pages(&root) {
        problems.extend(check_report_numbers(&display_name(&root, &file), &page));
    }
    assert!(problems.is_empty(), "{}", report(&problems));
}

// ---------------------------------------------------------------------------------------------
// The checker itself, on made-up pages: it must report what is wrong and accept what is right.

fn flag_problems(text: &str) -> Vec<Problem> {
    check_flags(&command_tree(), "made-up.md", &read_page(text))
}

#[test]
fn a_ci_script_is_read_from_both_kinds_of_job_and_checked() {
    let text = concat!(
        "name: msgbench gate\n",
        "jobs:\n",
        "  gate:\n",
        "    steps:\n",
        "      - name: msgbench pub is not a script\n",
        "        run: msgbench pub --msgs 10k --no-such-flag 1\n",
        "      - run: |\n",
        "          if true; then\n",
        "            msgbench diff a.json b.json --fail-on-regression 5%\n",
        "          fi\n",
        "gitlab:\n",
        "  script:\n",
        "    - msgbench request --runs\n",
        "    - echo msgbench pub --nope\n",
    );
    let page = read_ci(text);
    let commands: Vec<(usize, &str)> = page
        .typed
        .iter()
        .map(|t| (t.command.line, t.command.text.as_str()))
        .collect();
    assert_eq!(
        commands,
        [
            (6, "msgbench pub --msgs 10k --no-such-flag 1"),
            (9, "msgbench diff a.json b.json --fail-on-regression 5%"),
            (13, "msgbench request --runs"),
        ]
    );
    let flags = check_flags(&command_tree(), "ci.yml", &page);
    assert_eq!(flags.len(), 1, "{flags:?}");
    assert_eq!(flags[0].line, 6);
    assert!(
        flags[0].what.contains("`--no-such-flag`"),
        "{}",
        flags[0].what
    );
    let typed = check_typed("ci.yml", &page);
    assert_eq!(typed.len(), 2, "{typed:?}");
    assert_eq!((typed[0].line, typed[1].line), (6, 13));
    assert!(typed[1].what.contains("--runs"), "{}", typed[1].what);
}

#[test]
fn a_made_up_flag_is_reported_with_its_file_line_and_command() {
    let page =
        "# Title\n\nSome prose.\n\n```sh\nmsgbench js pub --mode sync --no-such-flag 3\n```\n";
    let problems = flag_problems(page);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].file, "made-up.md");
    assert_eq!(problems[0].line, 6);
    assert!(
        problems[0]
            .what
            .starts_with("`--no-such-flag` is not a flag of `msgbench js pub`"),
        "{}",
        problems[0].what
    );
}

#[test]
fn real_flags_values_and_quoted_words_pass() {
    let page = concat!(
        "```sh\n",
        "msgbench js pub --mode sync --msgs 20000 --subject orders.new\n",
        "msgbench grpc --data '{\"stream\":\"hi-{{stream}}\",\"data\":\"{{bytes 128}}\"}' \\\n",
        "    --streams 5 -H 'k: v' --in-flight 2000\n",
        "msgbench grpc serve --listen 127.0.0.1:50051\n",
        "msgbench report a.json b.json -o report.html\n",
        "msgbench pub --pubs 2 --size=16   # an alias, and a value after '='\n",
        "```\n",
    );
    assert_eq!(flag_problems(page), Vec::new());
}

#[test]
fn a_compare_scenario_is_checked_as_the_nested_subcommand() {
    // `--in-flight` belongs to request; `--mode` to js-pub, not request.
    let ok = "`msgbench compare --clients native,go request --in-flight 4`";
    assert_eq!(flag_problems(ok), Vec::new());
    let bad = "`msgbench compare --clients native,go request --mode sync`";
    let problems = flag_problems(bad);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0]
            .what
            .starts_with("`--mode` is not a flag of `msgbench compare request`"),
        "{}",
        problems[0].what
    );
}

#[test]
fn only_prompted_lines_of_an_output_block_are_commands() {
    let page = concat!(
        "```\n",
        "$ msgbench pub --msgs 1M --bogus-one\n",
        "msgbench pub against nats://127.0.0.1:4222 --bogus-output\n",
        "$ NATS_PASSWORD=x msgbench pub --bogus-two && echo --bogus-three\n",
        "```\n",
    );
    let problems = flag_problems(page);
    let found: Vec<(usize, &str)> = problems
        .iter()
        .map(|p| (p.line, p.what.split('`').nth(1).unwrap_or("")))
        .collect();
    assert_eq!(found, vec![(2, "--bogus-one"), (4, "--bogus-two")]);
}

#[test]
fn an_inline_span_is_checked_and_reported_at_the_line_it_starts_on() {
    let page =
        "First line.\nSee `msgbench\nlatency --rate 5 --nope` and `--also-nope`, or `-ERR`.\n";
    let problems = flag_problems(page);
    let found: Vec<(usize, &str)> = problems
        .iter()
        .map(|p| (p.line, p.what.split('`').nth(1).unwrap_or("")))
        .collect();
    assert_eq!(found, vec![(2, "--nope"), (3, "--also-nope")]);
}

#[test]
fn a_missing_page_and_a_missing_heading_are_reported() {
    let root = repo_root();
    let page = read_page(concat!(
        "# Here\n\n",
        "[fine](#here) [gone](no-such-page.md) [no anchor](#nowhere)\n",
        "[fine too](README.md#msgbench) [bad anchor](README.md#no-such-heading) [web](https://x.y/z)\n",
        "`[not a link](inside-code.md)`\n",
    ));
    let problems = check_links("made-up.md", &root, &page, &|path: &Path| {
        (path == root.join("README.md")).then(|| BTreeSet::from(["msgbench".to_string()]))
    });
    let found: Vec<(usize, &str)> = problems
        .iter()
        .map(|p| (p.line, p.what.split('`').nth(1).unwrap_or("")))
        .collect();
    assert_eq!(
        found,
        vec![
            (3, "no-such-page.md"),
            (3, "#nowhere"),
            (4, "README.md#no-such-heading")
        ]
    );
}

#[test]
fn a_report_number_in_prose_is_reported_and_ordinary_numbers_are_not() {
    let page = read_page(
        "The 004 report.\nSee 000/002 too.\n2,000 messages, 0.004 s.\nThe 003's tails.\n",
    );
    let lines: Vec<usize> = check_report_numbers("made-up.md", &page)
        .iter()
        .map(|p| p.line)
        .collect();
    assert_eq!(lines, vec![1, 2, 4]);
}

#[test]
fn headings_get_the_anchors_github_gives_them() {
    let page = read_page("# msgbench\n## `js pub`: publish, and ack!\n## Faults\n## Faults\n");
    let expected: BTreeSet<String> = ["msgbench", "js-pub-publish-and-ack", "faults", "faults-1"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(page.anchors, expected);
}

fn typed_problems(text: &str) -> Vec<Problem> {
    check_typed("made-up.md", &read_page(text))
}

#[test]
fn an_optional_flag_in_brackets_fails_with_its_file_line_and_clap_message() {
    let page = concat!(
        "# Herd\n\n",
        "```\n",
        "msgbench conns --clients 20 --hold 1s \\\n",
        "  --fault restart@1s:1s --reconnect [--reconnect-jitter off]\n",
        "```\n",
    );
    let problems = typed_problems(page);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(
        (problems[0].file.as_str(), problems[0].line),
        ("made-up.md", 4)
    );
    assert!(
        problems[0]
            .what
            .ends_with("does not parse: error: unexpected argument '[--reconnect-jitter' found"),
        "{}",
        problems[0].what
    );
}

#[test]
fn placeholders_and_ellipses_fail_as_they_would_when_typed() {
    // `<URL>` is a redirection to the shell, so `--server` is left without a value; `…` and an
    // upper-case name where a number belongs reach the parser as they are.
    let page = concat!(
        "```sh\n",
        "msgbench pub --server <URL>\n",
        "msgbench pub --msgs 1M …\n",
        "msgbench latency --rate R\n",
        "```\n",
    );
    let lines: Vec<usize> = typed_problems(page).iter().map(|p| p.line).collect();
    assert_eq!(lines, vec![2, 3, 4]);
}

#[test]
fn quotes_continuations_environment_redirects_and_help_parse() {
    let page = concat!(
        "```sh\n",
        "msgbench latency --rate 1000 --duration 3s --threshold 'p99<2ms' \\\n",
        "    --threshold \"lost==0\" --print-plan > latency.json\n",
        "NATS_PASSWORD=secret msgbench pub --user bench --msgs 10k\n",
        "msgbench js pub --help\n",
        "msgbench compare --clients native,go request --in-flight 4 | tee out.txt\n",
        "```\n",
        "\n",
        "`msgbench run` alone, in prose, names a command; it is not typed.\n",
    );
    assert_eq!(typed_problems(page), Vec::new());
}

#[test]
fn a_refusal_shown_under_its_command_must_be_the_line_msgbench_prints() {
    let shown_right = concat!(
        "```\n",
        "$ msgbench pub --size 10XB\n",
        "error: invalid value '10XB' for '--size <SIZE>': unknown unit 'xb' (use B, KB/KiB, MB/MiB or GB/GiB)\n",
        "$ msgbench pub --server nats://127.0.0.1:1\n",
        "error: cannot connect to nats://127.0.0.1:1: Connection refused (os error 111)\n",
        "```\n",
    );
    assert_eq!(typed_problems(shown_right), Vec::new());
    let shown_wrong = concat!(
        "```\n",
        "$ msgbench pub --size 10XB\n",
        "error: --size is not a size\n",
        "$ msgbench pub --size 10XC\n",
        "msgbench pub against nats://127.0.0.1:4222\n",
        "```\n",
    );
    let problems = typed_problems(shown_wrong);
    let found: Vec<(usize, bool)> = problems
        .iter()
        .map(|p| (p.line, p.what.contains("is shown refused with")))
        .collect();
    assert_eq!(found, vec![(2, true), (4, false)], "{problems:?}");
}

// "Not yet" claims. A page that says a feature is missing "yet" goes stale the day the feature
// lands, and nothing tells its author. So every sentence of prose that says something is not
// there yet (a negation, `not`, `no`, `cannot`, `…n't`, within five words before `yet`, or
// `yet to`) must name what is missing in code, in one of the forms the program can be asked
// about, and at least one thing it names must still be missing:
// - a flag (`--frobnicate`): on no command of the tree;
// - a command (`msgbench js get`): a word that is not a subcommand where one is expected, or a
//   flag its (sub)command does not have;
// - a refusal (`error: …`, as msgbench prints it): its words are still in the source, so the
//   combination is still refused.
// When everything a sentence names exists, the feature was built and the sentence is stale. A
// sentence about data rather than features (a write `not yet synced`) is not a claim: the
// states that follow `not yet` in such sentences are listed in DATA_STATES.

/// What a message or a write may not be yet: said of data, not of msgbench.
const DATA_STATES: &[&str] = &[
    "synced",
    "acknowledged",
    "written",
    "stored",
    "flushed",
    "delivered",
    "received",
    "sent",
    "read",
    "applied",
    "replicated",
    "committed",
];

/// One sentence of prose: where it starts, its words outside code, and its code spans.
#[derive(Debug)]
struct Sentence {
    line: usize,
    words: Vec<String>,
    spans: Vec<String>,
}

/// The sentences of a page's prose. A blank line, a list item, a table row or a heading
/// starts a new block; a `.`, `!` or `?` outside code and before a space ends a sentence. A
/// code span opens with a run of backticks and closes with a run as long (CommonMark), so
/// ``error: `x` …`` quotes a message that has backticks in it.
fn sentences(prose: &[Found]) -> Vec<Sentence> {
    let mut out = Vec::new();
    let mut text: Vec<(usize, char)> = Vec::new();
    let flush = |text: &mut Vec<(usize, char)>, out: &mut Vec<Sentence>| {
        out.extend(split_sentences(text));
        text.clear();
    };
    for found in prose {
        let t = found.text.trim_start();
        let starts_block = t.is_empty()
            || t.starts_with("- ")
            || t.starts_with("* ")
            || t.starts_with('|')
            || t.starts_with('#')
            || t.split_once(". ")
                .is_some_and(|(n, _)| n.parse::<u32>().is_ok());
        if starts_block {
            flush(&mut text, &mut out);
        }
        if t.is_empty() {
            continue;
        }
        text.extend(t.chars().map(|c| (found.line, c)));
        text.push((found.line, ' '));
    }
    flush(&mut text, &mut out);
    out
}

fn split_sentences(text: &[(usize, char)]) -> Vec<Sentence> {
    let mut out = Vec::new();
    let mut cur = Sentence {
        line: text.first().map_or(0, |(l, _)| *l),
        words: Vec::new(),
        spans: Vec::new(),
    };
    let mut outside = String::new();
    let mut i = 0;
    while i < text.len() {
        let (line, c) = text[i];
        if c == '`' {
            let run = text[i..].iter().take_while(|(_, c)| *c == '`').count();
            let body_start = i + run;
            let close = (body_start..text.len()).find(|&j| {
                text[j..].iter().take_while(|(_, c)| *c == '`').count() == run
                    && (j == 0 || text[j - 1].1 != '`')
            });
            if let Some(end) = close {
                let span: String = text[body_start..end].iter().map(|(_, c)| c).collect();
                cur.spans.push(span.trim().to_string());
                outside.push(' ');
                i = end + run;
                continue;
            }
        }
        outside.push(c);
        let ends =
            matches!(c, '.' | '!' | '?') && text.get(i + 1).is_none_or(|(_, n)| n.is_whitespace());
        if ends {
            cur.words = words_of(&outside);
            out.push(std::mem::replace(
                &mut cur,
                Sentence {
                    line,
                    words: Vec::new(),
                    spans: Vec::new(),
                },
            ));
            outside.clear();
        }
        i += 1;
    }
    cur.words = words_of(&outside);
    if !cur.words.is_empty() || !cur.spans.is_empty() {
        out.push(cur);
    }
    out
}

fn words_of(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '\u{2019}'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether a sentence says that something is not there yet (see the rules above).
fn is_not_yet_claim(words: &[String]) -> bool {
    let negation = |w: &str| {
        matches!(w, "not" | "no" | "never" | "none" | "nothing" | "cannot")
            || w.ends_with("n't")
            || w.ends_with("n\u{2019}t")
    };
    words.iter().enumerate().any(|(i, w)| {
        if w != "yet" {
            return false;
        }
        if words.get(i + 1).is_some_and(|n| n == "to") {
            return true;
        }
        let data = words
            .get(i + 1)
            .is_some_and(|n| DATA_STATES.contains(&n.as_str()));
        !data && words[i.saturating_sub(5)..i].iter().any(|w| negation(w))
    })
}

/// Whether `span` names something that does not exist (or a refusal still in `source`);
/// `None` when it names nothing the program can be asked about.
fn names_missing(tree: &clap::Command, source: &str, span: &str) -> Option<bool> {
    if let Some(refusal) = span.strip_prefix("error: ") {
        return Some(source.contains(&normalise(refusal)));
    }
    if span.starts_with("--") && is_flag_name(&span[2..]) {
        let (mut longs, mut shorts) = (BTreeSet::new(), BTreeSet::new());
        all_flags(tree, &mut longs, &mut shorts);
        return Some(!longs.contains(&span[2..]));
    }
    let words = command_words(span);
    if words.first().map(String::as_str) != Some("msgbench") {
        return None;
    }
    let mut cmd = tree;
    for w in &words[1..] {
        if let Some(flag) = w.strip_prefix("--") {
            let name = flag.split('=').next().unwrap_or_default();
            if find_long(cmd, name).is_none() {
                return Some(true);
            }
        } else if cmd.has_subcommands() {
            match cmd.find_subcommand(w) {
                Some(sub) => cmd = sub,
                None => return Some(true),
            }
        }
    }
    Some(false)
}

/// Source text as a printed message reads: a string literal's `\` line continuations joined
/// and runs of white space made one space.
fn normalise(text: &str) -> String {
    let joined = text.replace("\\\n", "");
    joined.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every `.rs` file under msgbench/src, normalised and concatenated.
fn source_text(root: &Path) -> String {
    fn walk(dir: &Path, out: &mut String) {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
            .map(|e| e.expect("a readable entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push_str(&std::fs::read_to_string(&p).unwrap());
                out.push('\n');
            }
        }
    }
    let mut all = String::new();
    walk(&root.join("msgbench").join("src"), &mut all);
    normalise(&all)
}

/// The stale or unchecked "not yet" sentences of one page.
fn check_not_yet(tree: &clap::Command, source: &str, file: &str, page: &Page) -> Vec<Problem> {
    let mut problems = Vec::new();
    for s in sentences(&page.prose) {
        if !is_not_yet_claim(&s.words) {
            continue;
        }
        let named: Vec<(&String, bool)> = s
            .spans
            .iter()
            .filter_map(|span| names_missing(tree, source, span).map(|m| (span, m)))
            .collect();
        let what = if named.is_empty() {
            "says something is not there yet but names nothing the program can be asked about: \
             name the missing flag or command, or quote its refusal (`error: …`)"
                .to_string()
        } else if named.iter().all(|(_, missing)| !missing) {
            let names: Vec<String> = named.iter().map(|(n, _)| format!("`{n}`")).collect();
            format!(
                "says something is not there yet, but everything it names exists ({}): the \
                 sentence is stale",
                names.join(", ")
            )
        } else {
            continue;
        };
        problems.push(Problem {
            file: file.to_string(),
            line: s.line,
            what,
        });
    }
    problems
}

#[test]
fn no_page_says_not_yet_of_what_exists() {
    let root = repo_root();
    let tree = command_tree();
    let source = source_text(&root);
    let mut problems = Vec::new();
    for (file, page) in read_pages(&root) {
        problems.extend(check_not_yet(
            &tree,
            &source,
            &display_name(&root, &file),
            &page,
        ));
    }
    assert!(
        problems.is_empty(),
        "{} \"not yet\" sentence(s) are stale or unchecked:\n{}",
        problems.len(),
        report(&problems)
    );
}

#[test]
fn the_not_yet_checker_finds_stale_and_unchecked_claims_and_passes_the_rest() {
    let tree = command_tree();
    let source = normalise("Error::Usage(\"--agents: `js pub --mode fast` does not run on \\\n                 agents yet (one process)\".into())");
    let page = read_page(
        "Intro. The `--frobnicate` flag is not built yet. Rates (`--rate`) are not supported \
         yet.\n\nReplays are not built yet.\n\
         Data written but not yet synced is lost on power loss.\n\n\
         - `msgbench js get`: no equivalent yet (`msgbench kv get` times direct gets).\n\
         - `msgbench kv get --frobnicate` is not there yet.\n\
         - Fast mode does not run on agents yet: \
         ``error: --agents: `js pub --mode fast` does not run on agents yet``.\n\
         - The other mode does not run there yet: `error: --agents: a refusal now gone`.\n\
         - A pipeline with no baseline yet to compare against says so.\n",
    );
    let problems = check_not_yet(&tree, &source, "made-up.md", &page);
    let lines: Vec<(usize, bool)> = problems
        .iter()
        .map(|p| (p.line, p.what.contains("stale")))
        .collect();
    // Line 1: `--rate` exists (stale); line 3: names nothing; line 9: the refusal is gone
    // (stale); line 10: names nothing ("yet to" is a claim too).
    assert_eq!(
        lines,
        vec![(1, true), (3, false), (9, true), (10, false)],
        "{}",
        report(&problems)
    );
}
