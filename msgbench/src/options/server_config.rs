//! `--server-config KEY=VALUE`: settings for the servers msgbench starts, checked here and
//! written as the server's config file. A key is a dotted path into the config's blocks
//! (`jetstream.max_file_store`); a bare key that belongs to the `jetstream` block (such as
//! `sync_interval`) goes into it, since that is where the server reads it and nowhere else.
//!
//! Values are written quoted unless they are a whole number or a boolean, so text the config
//! language would read as syntax (a brace, a `#`, a variable) stays one value; text that
//! cannot be quoted safely (a quote, a backslash, a control character) is refused.

use crate::result::ServerSetting;

/// Keys of the `jetstream` block a bare key may name.
const JETSTREAM_KEYS: &[&str] = &[
    "sync_interval",
    "max_memory_store",
    "max_mem_store",
    "max_file_store",
    "max_outstanding_catchup",
    "max_buffered_msgs",
    "max_buffered_size",
    "request_queue_limit",
    "strict",
    "unique_tag",
];

/// The last part of a key whose value is a secret: never written into a result, a recorded
/// plan or a text line, only into the server's own config file.
const SECRET_KEYS: &[&str] = &[
    "password",
    "pass",
    "token",
    "auth_token",
    "nkey",
    "seed",
    "key",
    "prev_key",
];

/// What a result and a plan show of a setting's value: a secret's is redacted.
pub fn shown(key: &str, value: &str) -> String {
    if is_secret(key) {
        "(redacted)".into()
    } else {
        value.into()
    }
}

/// Whether `key` (as typed: untrimmed, bare or dotted) names a secret.
pub fn is_secret(key: &str) -> bool {
    let key = key.trim();
    let last = key.rsplit('.').next().unwrap_or(key).to_ascii_lowercase();
    SECRET_KEYS.contains(&last.as_str())
}

/// Settings msgbench itself gives every server it starts (its address, ports, storage,
/// cluster and name): another value would break what it relies on.
const OWN_KEYS: &[&str] = &[
    "host",
    "net",
    "listen",
    "port",
    "http",
    "http_port",
    "monitor_port",
    "https",
    "https_port",
    "server_name",
    "cluster",
    "routes",
    "ports_file_dir",
    "pid_file",
    "include",
    "jetstream",
    "jetstream.store_dir",
    "jetstream.enabled",
    "store_dir",
];

/// One `KEY=VALUE`, its key placed into its block.
///
/// # Errors
/// Why the text cannot be a setting, in words for one line after the flag.
pub fn parse(text: &str) -> Result<ServerSetting, String> {
    let (key, value) = text
        .split_once('=')
        .ok_or("expected KEY=VALUE, such as sync_interval=always")?;
    let key = key.trim();
    let segments: Vec<&str> = key.split('.').collect();
    let good = |s: &&str| {
        s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if !segments.iter().all(good) {
        return Err(format!(
            "the key '{key}' is not a config key (letters, digits and '_', dotted into blocks)"
        ));
    }
    let key = if segments.len() == 1 && JETSTREAM_KEYS.contains(&key) {
        format!("jetstream.{key}")
    } else {
        key.to_string()
    };
    if OWN_KEYS.contains(&key.as_str())
        || OWN_KEYS.contains(&segments[0]) && segments[0] != "jetstream"
    {
        return Err(format!(
            "{key} is set by msgbench for the servers it starts"
        ));
    }
    if value.is_empty() {
        return Err(format!("{key} has no value"));
    }
    if let Some(c) = value
        .chars()
        .find(|c| c.is_control() || *c == '"' || *c == '\\')
    {
        return Err(format!(
            "the value of {key} holds {c:?}, which msgbench cannot write into a config file safely"
        ));
    }
    Ok(ServerSetting {
        key,
        value: value.to_string(),
    })
}

/// Every `--server-config` given, in order; a key given twice, or both as a value and as a
/// block, is refused.
///
/// # Errors
/// The first item that cannot be a setting, naming the flag.
pub fn parse_all(items: &[String]) -> crate::error::Result<Vec<ServerSetting>> {
    let mut settings: Vec<ServerSetting> = Vec::new();
    for item in items {
        let s =
            parse(item).map_err(|why| crate::error::Error::flag("--server-config", item, why))?;
        let clash = settings.iter().find(|o| {
            o.key == s.key
                || s.key.starts_with(&format!("{}.", o.key))
                || o.key.starts_with(&format!("{}.", s.key))
        });
        if let Some(o) = clash {
            return Err(crate::error::Error::flag(
                "--server-config",
                item,
                format!(
                    "{} is given already (as {}={})",
                    s.key,
                    o.key,
                    shown(&o.key, &o.value)
                ),
            ));
        }
        settings.push(s);
    }
    Ok(settings)
}

/// The settings as a config file's text, each block written once.
pub fn render(settings: &[ServerSetting]) -> String {
    let mut out = String::new();
    write_block(&mut out, settings, "", 0);
    out
}

/// Writes the settings under `prefix` (a block's dotted path, with its dot) at `depth`.
fn write_block(out: &mut String, settings: &[ServerSetting], prefix: &str, depth: usize) {
    let pad = "  ".repeat(depth);
    let mut blocks: Vec<&str> = Vec::new();
    for s in settings {
        let Some(rest) = s.key.strip_prefix(prefix) else {
            continue;
        };
        match rest.split_once('.') {
            None => out.push_str(&format!("{pad}{rest}: {}\n", value(&s.value))),
            Some((block, _)) if !blocks.contains(&block) => {
                blocks.push(block);
                out.push_str(&format!("{pad}{block} {{\n"));
                write_block(out, settings, &format!("{prefix}{block}."), depth + 1);
                out.push_str(&format!("{pad}}}\n"));
            }
            Some(_) => {}
        }
    }
}

/// A value as the config language reads it: numbers and booleans bare, the rest quoted.
fn value(v: &str) -> String {
    let number = v.strip_prefix('-').unwrap_or(v);
    if (!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
        || matches!(v, "true" | "false")
    {
        v.to_string()
    } else {
        format!("\"{v}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(items: &[&str]) -> crate::error::Result<Vec<ServerSetting>> {
        parse_all(&items.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn settings_go_into_their_blocks_once_each() {
        let s = all(&[
            "sync_interval=always",
            "max_payload=2000000",
            "jetstream.max_file_store=1G",
            "write_deadline=10s",
        ])
        .unwrap();
        assert_eq!(s[0].key, "jetstream.sync_interval");
        assert_eq!(
            render(&s),
            "jetstream {\n  sync_interval: \"always\"\n  max_file_store: \"1G\"\n}\n\
             max_payload: 2000000\nwrite_deadline: \"10s\"\n"
        );
    }

    #[test]
    fn what_cannot_be_written_safely_is_refused_naming_the_flag() {
        for (bad, why) in [
            ("sync_interval", "KEY=VALUE"),
            ("sync-interval=always", "not a config key"),
            ("jetstream..x=1", "not a config key"),
            ("port=4222", "set by msgbench"),
            ("jetstream.store_dir=/x", "set by msgbench"),
            ("cluster.name=x", "set by msgbench"),
            ("max_payload=", "no value"),
            ("max_payload=1\"}", "cannot write"),
            ("server_tags=a\nb", "cannot write"),
        ] {
            let e = all(&[bad]).unwrap_err().to_string();
            assert!(
                e.contains("--server-config") && e.contains(why),
                "{bad}: {e}"
            );
        }
        let e = all(&["sync_interval=always", "jetstream.sync_interval=2m"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("given already"), "{e}");
        let e = all(&["jetstream.limits=1", "jetstream.limits.x=2"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("given already"), "{e}");
    }
}
