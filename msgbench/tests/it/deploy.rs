//! The deployment files in deploy/ are checked against the program, so they cannot drift apart:
//! - every YAML document in deploy/kubernetes/*.yaml is a Kubernetes object (`apiVersion`,
//!   `kind`, `metadata.name`), and the set holds the agents' Deployment and the coordinator's Job;
//! - every container that runs `msgbench`, and the systemd unit's `ExecStart`, may use only
//!   flags that the built binary's `--help` lists for the subcommand it names;
//! - the Kubernetes files run the image `make image` builds (`msgbench:VERSION`, the crate's
//!   version), as the user deploy/Containerfile gives it, and the systemd unit names that image.
//!
//! Arguments are read as Kubernetes and systemd pass them: `$(VAR)` from the container's `env`
//! (`$$` escapes it), systemd's `%` specifiers, `${VAR}` from `Environment=`, quotes and a
//! trailing `\`. Both `--flag=value` and `--flag value` count as `--flag`. A failure names the
//! file, the object or line, and the flag. The checker is also fed made-up input, so a test proves
//! it reports what it should.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use yaml_rust2::{Yaml, YamlLoader};

/// A `msgbench` command line found in a deployment file: where, and its arguments after the
/// program name.
#[derive(Debug)]
struct Invocation {
    origin: String,
    args: Vec<String>,
}

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// deploy/kubernetes/*.yaml, each with its documents, in name order.
fn manifests() -> Vec<(String, Vec<Yaml>)> {
    let dir = deploy_dir().join("kubernetes");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("deploy/kubernetes: {e}"))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|path| {
            let name = format!("deploy/kubernetes/{}", path.file_name().unwrap().display());
            let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{name}: {e}"));
            let docs = YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, docs)
        })
        .collect()
}

/// What is missing from a document for it to be a Kubernetes object.
fn object_problems(file: &str, doc: &Yaml) -> Vec<String> {
    ["apiVersion", "kind"]
        .iter()
        .filter(|key| doc[**key].as_str().is_none_or(str::is_empty))
        .map(|key| format!("{file}: a document without {key}"))
        .chain(
            doc["metadata"]["name"]
                .as_str()
                .is_none_or(str::is_empty)
                .then(|| format!("{file}: a document without metadata.name")),
        )
        .collect()
}

/// Expands `$(VAR)` as the kubelet does: from a literal `value` in the container's `env`, to a
/// stand-in for one only known at run time (`valueFrom`), left as it is for an unknown name;
/// `$$` is a literal `$`.
fn expand_k8s(arg: &str, env: &BTreeMap<String, Option<String>>) -> String {
    let mut out = String::new();
    let mut rest = arg;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix("$$") {
            out.push('$');
            rest = after;
        } else if let Some((name, after)) = rest
            .strip_prefix("$(")
            .and_then(|r| r.split_once(')'))
            .filter(|(name, _)| env.contains_key(*name))
        {
            match &env[name] {
                Some(value) => out.push_str(value),
                None => out.push_str(&format!("<{name}>")),
            }
            rest = after;
        } else {
            out.push('$');
            rest = &rest[1..];
        }
    }
    out + rest
}

/// The msgbench command lines of every container (and init container) anywhere in `doc`.
/// A container runs msgbench when its `command` starts with it, or when it has no `command` and
/// its image is msgbench's (the image's entrypoint then takes `args`).
fn k8s_invocations(file: &str, doc: &Yaml) -> (Vec<Invocation>, Vec<String>) {
    let object = format!(
        "{file}: {} {}",
        doc["kind"].as_str().unwrap_or("?"),
        doc["metadata"]["name"].as_str().unwrap_or("?")
    );
    let (mut found, mut problems) = (Vec::new(), Vec::new());
    let mut stack = vec![doc];
    while let Some(node) = stack.pop() {
        match node {
            Yaml::Array(items) => stack.extend(items),
            Yaml::Hash(map) => {
                for (key, value) in map {
                    let containers = matches!(key.as_str(), Some("containers" | "initContainers"));
                    match (containers, value.as_vec()) {
                        (true, Some(list)) => {
                            for c in list {
                                let origin = format!(
                                    "{object}, container {}",
                                    c["name"].as_str().unwrap_or("?")
                                );
                                match container_args(c) {
                                    Ok(Some(args)) => found.push(Invocation { origin, args }),
                                    Ok(None) => {}
                                    Err(e) => problems.push(format!("{origin}: {e}")),
                                }
                            }
                        }
                        _ => stack.push(value),
                    }
                }
            }
            _ => {}
        }
    }
    (found, problems)
}

/// A container's msgbench arguments, `None` if it runs something else.
fn container_args(c: &Yaml) -> Result<Option<Vec<String>>, String> {
    let env: BTreeMap<String, Option<String>> = c["env"]
        .as_vec()
        .into_iter()
        .flatten()
        .filter_map(|e| {
            Some((
                e["name"].as_str()?.to_string(),
                e["value"].as_str().map(String::from),
            ))
        })
        .collect();
    let strings = |key: &str| -> Result<Vec<String>, String> {
        match &c[key] {
            Yaml::BadValue | Yaml::Null => Ok(Vec::new()),
            Yaml::Array(items) => items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map(|s| expand_k8s(s, &env))
                        .ok_or_else(|| format!("{key} item {item:?} is not a string (quote it)"))
                })
                .collect(),
            other => Err(format!("{key} is not a list: {other:?}")),
        }
    };
    let (command, args) = (strings("command")?, strings("args")?);
    let image = c["image"].as_str().unwrap_or("");
    let image_name = image
        .rsplit('/')
        .next()
        .unwrap_or("")
        .split([':', '@'])
        .next();
    Ok(match command.split_first() {
        Some((program, rest)) if program.rsplit('/').next() == Some("msgbench") => {
            Some(rest.iter().chain(&args).cloned().collect())
        }
        None if image_name == Some("msgbench") => Some(args),
        _ => None,
    })
}

/// Splits a systemd command line into words: whitespace separates, quotes group, a backslash
/// escapes the next character.
fn split_systemd(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quote, mut open) = (Vec::new(), String::new(), None, false);
    let mut chars = line.chars();
    while let Some(ch) = chars.next() {
        match (ch, quote) {
            ('\\', _) => word.extend(chars.next()),
            (q @ ('"' | '\''), None) => (quote, open) = (Some(q), true),
            (q, Some(open_q)) if q == open_q => quote = None,
            (w, None) if w.is_whitespace() => {
                if open || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                open = false;
            }
            (other, _) => word.push(other),
        }
    }
    if open || !word.is_empty() {
        words.push(word);
    }
    words
}

/// Expands systemd's `%` specifiers (to stand-ins: their values are the host's) and `${VAR}`
/// from the unit's `Environment=` lines.
fn expand_systemd(word: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut chars = word.chars().peekable();
    while let Some(ch) = chars.next() {
        match (ch, chars.peek().copied()) {
            ('%', Some('%')) => {
                chars.next();
                out.push('%');
            }
            ('%', Some(spec)) => {
                chars.next();
                out.push_str(&format!("<%{spec}>"));
            }
            ('$', Some('{')) => {
                let name: String = chars.by_ref().skip(1).take_while(|c| *c != '}').collect();
                out.push_str(env.get(&name).map_or("", String::as_str));
            }
            (other, _) => out.push(other),
        }
    }
    out
}

/// The msgbench command lines of a systemd unit's `ExecStart=` lines, named by the line each
/// starts on.
fn systemd_invocations(file: &str, text: &str) -> Vec<Invocation> {
    // Logical lines: a trailing backslash continues a line on the next.
    let mut lines: Vec<(usize, String)> = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let (n, head) = pending.take().unwrap_or((i + 1, String::new()));
        match raw.strip_suffix('\\') {
            Some(part) => pending = Some((n, head + part + " ")),
            None => lines.push((n, head + raw)),
        }
    }
    lines.retain(|(_, l)| !l.trim_start().starts_with(['#', ';']));
    let env: BTreeMap<String, String> = lines
        .iter()
        .filter_map(|(_, l)| l.trim().strip_prefix("Environment="))
        .flat_map(split_systemd)
        .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.into(), v.into())))
        .collect();
    lines
        .iter()
        .filter_map(|(n, l)| {
            let words: Vec<String> = split_systemd(l.trim().strip_prefix("ExecStart=")?)
                .iter()
                .map(|w| expand_systemd(w, &env))
                .collect();
            let (program, args) = words.split_first()?;
            let program = program.trim_start_matches(['-', '@', ':', '+', '!']);
            (program.rsplit('/').next() == Some("msgbench")).then(|| Invocation {
                origin: format!("{file}:{n} ExecStart"),
                args: args.to_vec(),
            })
        })
        .collect()
}

/// The flags in `args`, in order: `--flag=value` and `--flag value` both give `--flag`,
/// `-x` gives `-x` (clap's `-xVALUE` too). Values, words and negative numbers are not flags;
/// nothing after `--` is.
fn flags_in(args: &[String]) -> Vec<String> {
    args.iter()
        .take_while(|a| *a != "--")
        .filter_map(|a| {
            if a.starts_with("--") {
                Some(a.split('=').next().unwrap().to_string())
            } else {
                let short = a.strip_prefix('-')?.chars().next()?;
                short.is_ascii_alphabetic().then(|| format!("-{short}"))
            }
        })
        .collect()
}

/// The subcommands a help text lists under `Commands:`.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect()
}

/// The flags a help text defines: the `-s, --server <URLS>` that starts an option's entry
/// (indented at most six spaces; descriptions are indented further), and its `[alias: --pubs]`
/// or `[aliases: …]`, however the text wrapped.
fn defined_flags(help: &str) -> Vec<String> {
    let mut flags: Vec<String> = help
        .lines()
        .filter(|l| l.len() - l.trim_start().len() <= 6)
        .map(str::trim_start)
        .filter(|l| l.starts_with('-'))
        .flat_map(|l| {
            l.split_whitespace()
                .take_while(|w| w.starts_with('-'))
                .map(|w| w.trim_end_matches(',').to_string())
        })
        .collect();
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for marker in ["[alias: ", "[aliases: "] {
        for part in flat.split(marker).skip(1) {
            let list = part.split(']').next().unwrap_or("");
            flags.extend(list.split(',').map(|f| f.trim().to_string()));
        }
    }
    flags
}

/// The output of `msgbench PATH… --help`.
fn help(path: &[String]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_msgbench"))
        .args(path)
        .arg("--help")
        .output()
        .expect("msgbench runs");
    assert!(out.status.success(), "msgbench {path:?} --help: {out:?}");
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// `msgbench` and a subcommand path, as a person types it.
fn command_name(path: &[String]) -> String {
    std::iter::once("msgbench")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What is wrong with one invocation: a subcommand msgbench does not have, or a flag that its
/// subcommand's help does not list. Leading words are the subcommand path while the command
/// they reach has subcommands; after that, words are arguments.
fn check(inv: &Invocation) -> Vec<String> {
    let mut path: Vec<String> = Vec::new();
    let mut rest = &inv.args[..];
    let mut text = help(&path);
    while let Some(word) = rest.first().filter(|w| !w.starts_with('-')) {
        let subs = subcommands(&text);
        if subs.is_empty() {
            break;
        }
        if !subs.contains(word) {
            let name = command_name(&path);
            return vec![format!(
                "{}: `{name}` has no subcommand `{word}`",
                inv.origin
            )];
        }
        path.push(word.clone());
        rest = &rest[1..];
        text = help(&path);
    }
    let defined = defined_flags(&text);
    let name = command_name(&path);
    flags_in(rest)
        .into_iter()
        .filter(|flag| !defined.contains(flag))
        .map(|flag| format!("{}: `{name}` has no flag {flag}", inv.origin))
        .collect()
}

#[test]
fn every_manifest_is_a_kubernetes_object_and_the_set_has_a_deployment_and_a_job() {
    let manifests = manifests();
    assert!(
        !manifests.is_empty(),
        "deploy/kubernetes holds no .yaml file"
    );
    let mut problems = Vec::new();
    let mut kinds = Vec::new();
    for (file, docs) in &manifests {
        if docs.is_empty() {
            problems.push(format!("{file}: no YAML document"));
        }
        for doc in docs {
            problems.extend(object_problems(file, doc));
            kinds.extend(doc["kind"].as_str().map(String::from));
        }
    }
    for kind in ["Deployment", "Job"] {
        if !kinds.iter().any(|k| k == kind) {
            problems.push(format!("deploy/kubernetes: no {kind} (found {kinds:?})"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_msgbench_command_in_deploy_uses_only_flags_msgbench_has() {
    let (mut found, mut problems) = (Vec::new(), Vec::new());
    for (file, docs) in manifests() {
        for doc in &docs {
            let (invocations, bad) = k8s_invocations(&file, doc);
            found.extend(invocations);
            problems.extend(bad);
        }
    }
    let k8s = found.len();
    let unit = "deploy/systemd/msgbench-agent.service";
    let text = std::fs::read_to_string(deploy_dir().join("systemd/msgbench-agent.service"))
        .unwrap_or_else(|e| panic!("{unit}: {e}"));
    found.extend(systemd_invocations(unit, &text));
    // The agents and the coordinator, and the unit's agent: fewer means the reading rules no
    // longer find them, and the check below would pass on nothing.
    assert!(
        k8s >= 2,
        "deploy/kubernetes: {k8s} msgbench containers found, expected 2 or more"
    );
    assert_eq!(
        found.len() - k8s,
        1,
        "{unit}: expected one msgbench ExecStart"
    );
    for inv in &found {
        problems.extend(check(inv));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The image `make image` builds: scripts/image.sh tags it with the version `msgbench --version`
/// prints, which is the crate's.
fn image_name() -> String {
    format!("msgbench:{}", env!("CARGO_PKG_VERSION"))
}

/// The user and group deploy/Containerfile's `USER uid:gid` line gives the image.
fn image_user() -> (i64, i64) {
    let path = deploy_dir().join("Containerfile");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("deploy/Containerfile: {e}"));
    let user = text
        .lines()
        .find_map(|l| l.strip_prefix("USER "))
        .expect("deploy/Containerfile has no USER line");
    let (uid, gid) = user
        .trim()
        .split_once(':')
        .expect("deploy/Containerfile: USER is not uid:gid");
    let number = |s: &str| -> i64 {
        s.parse()
            .unwrap_or_else(|_| panic!("deploy/Containerfile: USER {user}: not numeric"))
    };
    (number(uid), number(gid))
}

#[test]
fn the_deploy_files_run_the_image_make_image_builds_as_its_user() {
    let (want, (uid, gid)) = (image_name(), image_user());
    assert_ne!(uid, 0, "deploy/Containerfile: the image runs as root");
    let mut problems = Vec::new();
    let mut containers = 0;
    for (file, docs) in manifests() {
        for doc in &docs {
            let pod = &doc["spec"]["template"]["spec"];
            let object = format!(
                "{file}: {}",
                doc["metadata"]["name"].as_str().unwrap_or("?")
            );
            for c in pod["containers"].as_vec().into_iter().flatten() {
                containers += 1;
                let image = c["image"].as_str().unwrap_or("");
                if image != want {
                    problems.push(format!(
                        "{object}: image {image:?}, `make image` builds {want:?}"
                    ));
                }
            }
            let security = &pod["securityContext"];
            for (key, id) in [("runAsUser", uid), ("runAsGroup", gid)] {
                if security[key].as_i64() != Some(id) {
                    problems.push(format!(
                        "{object}: securityContext.{key} is {:?}, the image's is {id}",
                        security[key]
                    ));
                }
            }
        }
    }
    // The agents and the coordinator: fewer means the files changed shape and the check above
    // would pass on nothing.
    assert!(
        containers >= 2,
        "deploy/kubernetes: {containers} containers found, expected 2 or more"
    );
    let unit = "deploy/systemd/msgbench-agent.service";
    let text = std::fs::read_to_string(deploy_dir().join("systemd/msgbench-agent.service"))
        .unwrap_or_else(|e| panic!("{unit}: {e}"));
    // A whole word: msgbench:0.1.0 must not pass as msgbench:0.1.01.
    let named = text
        .split(|c: char| c.is_whitespace() || "(),`'\"".contains(c))
        .any(|word| word == want);
    if !named {
        problems.push(format!("{unit}: does not name the image {want}"));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checker_reports_a_made_up_flag_or_subcommand_and_accepts_real_ones() {
    let inv = |args: &[&str]| Invocation {
        origin: "made-up.yaml".into(),
        args: args.iter().map(|a| a.to_string()).collect(),
    };
    let fine = inv(&[
        "pubsub",
        "--pubs",
        "2",
        "--json=x",
        "-s",
        "nats://h:4222",
        "-Hk:v",
    ]);
    assert_eq!(check(&fine), Vec::<String>::new());
    // --pubs is an alias on `pub`, listed as `[alias: --pubs]` and not at the line's start.
    assert_eq!(check(&inv(&["pub", "--pubs", "2"])), Vec::<String>::new());
    assert_eq!(
        check(&inv(&[
            "pubsub",
            "--pubs",
            "2",
            "--no-such-flag=1",
            "--json",
            "x"
        ])),
        ["made-up.yaml: `msgbench pubsub` has no flag --no-such-flag"]
    );
    // A flag of another subcommand (`js pub`'s --stream) is not one of pubsub's.
    assert_eq!(
        check(&inv(&["pubsub", "--stream", "s"])),
        ["made-up.yaml: `msgbench pubsub` has no flag --stream"]
    );
    assert_eq!(
        check(&inv(&["js", "no-such-command", "--x"])),
        ["made-up.yaml: `msgbench js` has no subcommand `no-such-command`"]
    );
}

#[test]
fn kubernetes_arguments_are_read_as_the_kubelet_passes_them() {
    let doc = &YamlLoader::load_from_str(
        r#"
kind: Job
metadata: {name: j}
spec:
  template:
    spec:
      initContainers:
        - {name: other, image: busybox, command: [sh, -c, "msgbench --not-read"]}
      containers:
        - name: c
          image: registry.example/team/msgbench:1.2
          args: ["$(MODE)", "--name=$(POD)", "--json", "$$(NOT)", "$(UNSET)", "--", "--after"]
          env:
            - {name: MODE, value: pubsub}
            - name: POD
              valueFrom: {fieldRef: {fieldPath: metadata.name}}
        - {name: n, image: x, command: [/usr/local/bin/msgbench, pub], args: [--msgs, 5]}
"#,
    )
    .unwrap()[0];
    assert_eq!(
        object_problems("j.yaml", doc),
        ["j.yaml: a document without apiVersion"]
    );
    let (found, problems) = k8s_invocations("j.yaml", doc);
    let args: Vec<&Vec<String>> = found.iter().map(|i| &i.args).collect();
    assert_eq!(
        args,
        [&[
            "pubsub",
            "--name=<POD>",
            "--json",
            "$(NOT)",
            "$(UNSET)",
            "--",
            "--after"
        ]
        .map(String::from)
        .to_vec()]
    );
    assert_eq!(flags_in(args[0]), ["--name", "--json"]);
    assert_eq!(found[0].origin, "j.yaml: Job j, container c");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("j.yaml: Job j, container n: args item Integer(5)"),
        "{problems:?}"
    );
}

#[test]
fn systemd_exec_start_is_read_as_systemd_splits_it() {
    let unit = "[Service]\n\
        Environment=\"ZONE=zone-b\" CTL=nats://c:4222\n\
        # ExecStart=/usr/local/bin/msgbench --commented-out\n\
        ExecStartPre=/usr/local/bin/msgbench --not-the-start\n\
        ExecStart=-/usr/local/bin/msgbench agent --control ${CTL} \\\n  \
            --name=%H --label \"zone=${ZONE}\" --lease '' -q\n";
    let found = systemd_invocations("u.service", unit);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].origin, "u.service:5 ExecStart");
    assert_eq!(
        found[0].args,
        [
            "agent",
            "--control",
            "nats://c:4222",
            "--name=<%H>",
            "--label",
            "zone=zone-b",
            "--lease",
            "",
            "-q"
        ]
    );
    assert_eq!(
        flags_in(&found[0].args),
        ["--control", "--name", "--label", "--lease", "-q"]
    );
}
