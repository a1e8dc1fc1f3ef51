//! `msgbench completions` and `msgbench man`, as a shell and `man` see them.
//!
//! The bash script is not read as text: the built binary writes it, a real `bash` sources it,
//! `complete -p msgbench` must name the function that completes msgbench, and that function is
//! called as bash calls it on Tab (COMP_WORDS, COMP_CWORD, COMP_LINE, COMP_POINT set), so the
//! test sees the COMPREPLY a user would be offered.

use std::process::Command;

use crate::support::{self, bin, scratch_dir};

/// The bash completion script, written by the binary under test.
fn bash_script(dir: &std::path::Path) -> std::path::PathBuf {
    let out = bin().args(["completions", "bash"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let file = dir.join("msgbench.bash");
    std::fs::write(&file, &out.stdout).unwrap();
    file
}

/// What `complete -p msgbench` prints once the script is sourced, and the candidates bash's
/// completion function leaves in COMPREPLY for the command line `words` (the last word is
/// the one being completed).
fn complete(script: &std::path::Path, words: &[&str]) -> (String, Vec<String>) {
    // The words reach bash as arguments, never pasted into the program text.
    let program = r#"
        set -u
        source "$1"; shift
        spec="$(complete -p msgbench)" || exit 3
        echo "$spec"
        fn="$(sed -n 's/.* -F \([^ ]*\) .*/\1/p' <<<"$spec")"
        [ -n "$fn" ] || exit 4
        COMP_WORDS=("$@")
        COMP_CWORD=$(( $# - 1 ))
        COMP_LINE="$*"
        COMP_POINT=${#COMP_LINE}
        prev=""
        [ "$COMP_CWORD" -gt 0 ] && prev="${COMP_WORDS[COMP_CWORD-1]}"
        COMPREPLY=()
        "$fn" msgbench "${COMP_WORDS[COMP_CWORD]}" "$prev"
        printf 'reply:%s\n' "${COMPREPLY[@]}"
    "#;
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", program, "bash"])
        .arg(script)
        .args(words)
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "bash exited {}: {stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let spec = stdout.lines().next().unwrap_or_default().to_string();
    let reply = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("reply:"))
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    (spec, reply)
}

#[test]
fn bash_completes_a_subcommand_and_a_flag() {
    let dir = scratch_dir("completions");
    let script = bash_script(&dir);

    let (spec, reply) = complete(&script, &["msgbench", "pu"]);
    assert!(spec.starts_with("complete "), "complete -p printed: {spec}");
    assert!(spec.contains(" -F _msgbench "), "no function named: {spec}");
    assert!(spec.ends_with(" msgbench"), "{spec}");
    assert!(
        reply.iter().any(|w| w == "pub"),
        "`msgbench pu` offered {reply:?}"
    );
    assert!(
        reply.iter().any(|w| w == "pubsub"),
        "`msgbench pu` offered {reply:?}"
    );
    assert!(
        reply.iter().all(|w| w.starts_with("pu")),
        "`msgbench pu` offered {reply:?}"
    );

    let (_, reply) = complete(&script, &["msgbench", "pub", "--ms"]);
    assert_eq!(reply, ["--msgs"], "`msgbench pub --ms` offered {reply:?}");

    // A scenario of a group, from the registry: `js pub` and its own flags.
    let (_, reply) = complete(&script, &["msgbench", "js", "pu"]);
    assert_eq!(reply, ["pub"], "`msgbench js pu` offered {reply:?}");
    let (_, reply) = complete(&script, &["msgbench", "js", "pub", "--strea"]);
    assert!(
        reply.iter().any(|w| w == "--stream"),
        "`msgbench js pub --strea` offered {reply:?}"
    );
}

#[test]
fn every_shell_gets_a_script_and_a_bad_one_is_named() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = bin().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}: {}", support::stderr(&out));
        let text = String::from_utf8(out.stdout).unwrap();
        // Each names a scenario's flag: the tree reached the generator with the registry's
        // subcommands in it.
        assert!(text.contains("msgs"), "{shell}'s script has no --msgs");
    }
    let out = bin().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = support::stderr(&out);
    assert!(err.contains("'tcsh'") && err.contains("SHELL"), "{err}");
}

#[test]
fn the_man_pages_are_written_into_a_folder() {
    let dir = scratch_dir("man");
    let out = bin()
        .args(["man", "--dir"])
        .arg(dir.as_os_str())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", support::stderr(&out));
    let top = std::fs::read_to_string(dir.join("msgbench.1")).unwrap();
    // Every page the top page refers to is there.
    let refs: Vec<String> = top
        .lines()
        .filter_map(|l| l.strip_suffix("(1)"))
        .map(|name| name.replace("\\-", "-"))
        .collect();
    assert!(refs.iter().any(|r| r == "msgbench-pub"), "{refs:?}");
    for r in &refs {
        assert!(dir.join(format!("{r}.1")).is_file(), "{r}.1 is missing");
    }
    // A page per scenario of a group too.
    assert!(dir.join("msgbench-js-pub.1").is_file());

    // Printed, it is the same page.
    let printed = bin().arg("man").output().unwrap();
    assert!(printed.status.success());
    assert!(
        String::from_utf8(printed.stdout).unwrap() == top,
        "`msgbench man` printed another page than msgbench.1"
    );
}

/// `msgbench man --dir NEWDIR` makes the folder, as the install page's command expects (it
/// once exited 1 with "No such file or directory"); a folder that cannot be made is refused in
/// one line with the status of an output that cannot be written (2).
#[test]
fn man_makes_a_new_folder_and_refuses_one_it_cannot_make() {
    let dir = scratch_dir("man-new");
    let new = dir.join("share/man/man1");
    let out = bin().args(["man", "--dir"]).arg(&new).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", support::stderr(&out));
    assert!(new.join("msgbench.1").is_file());
    assert!(new.join("msgbench-pub.1").is_file());
    // Under a file, no folder can be made.
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let under = file.join("man1");
    let out = bin().args(["man", "--dir"]).arg(&under).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", support::stderr(&out));
    let err = support::stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: cannot write --dir") && err.contains(&under.display().to_string()),
        "{err}"
    );
}
