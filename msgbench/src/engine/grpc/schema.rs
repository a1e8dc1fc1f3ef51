//! Service definitions: where a method's types come from (a .proto compiled here, the server's
//! reflection service, or msgbench's own log service) and the lookup of `--call` in them.
//!
//! Nothing here sends load; reflection is one short call before the run.

use std::path::{Path, PathBuf};

use prost::Message as _;
use prost_reflect::{DescriptorPool, MessageDescriptor, MethodDescriptor};
use prost_types::{FileDescriptorProto, FileDescriptorSet};

/// The encoded descriptor set of `proto/msgbench/log/v1/log.proto`, generated at build time.
pub const LOG_DESCRIPTOR: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/log_descriptor.bin"));

/// The log service's full name.
pub const LOG_SERVICE: &str = "msgbench.log.v1.Log";

/// The descriptors of msgbench's own log service.
pub fn builtin() -> DescriptorPool {
    DescriptorPool::decode(LOG_DESCRIPTOR).expect("the built-in descriptor set is valid")
}

/// The four shapes of a gRPC method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    Unary,
    ClientStreaming,
    ServerStreaming,
    Bidi,
}

impl CallKind {
    pub fn of(m: &MethodDescriptor) -> Self {
        match (m.is_client_streaming(), m.is_server_streaming()) {
            (false, false) => Self::Unary,
            (true, false) => Self::ClientStreaming,
            (false, true) => Self::ServerStreaming,
            (true, true) => Self::Bidi,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unary => "unary",
            Self::ClientStreaming => "client_streaming",
            Self::ServerStreaming => "server_streaming",
            Self::Bidi => "bidi",
        }
    }
}

/// A resolved `--call`.
#[derive(Debug, Clone)]
pub struct Method {
    /// `package.Service/Method`.
    pub name: String,
    /// The HTTP/2 path, `/package.Service/Method`.
    pub path: String,
    pub kind: CallKind,
    pub input: MessageDescriptor,
}

/// Splits `package.Service/Method` (a dot before the method is accepted too, as some tools
/// write it) into the service and the method.
///
/// # Errors
/// When it has neither form.
pub fn split_call(call: &str) -> Result<(&str, &str), String> {
    let call = call.trim().trim_start_matches('/');
    let (service, method) = call
        .rsplit_once('/')
        .or_else(|| call.rsplit_once('.'))
        .ok_or_else(|| "expected package.Service/Method".to_string())?;
    if service.is_empty() || method.is_empty() || method.contains('.') {
        return Err("expected package.Service/Method".into());
    }
    Ok((service, method))
}

/// Finds `call` in `pool`.
///
/// # Errors
/// An unknown service or method, naming what the definition does have.
pub fn method(pool: &DescriptorPool, call: &str) -> Result<Method, String> {
    let (service, name) = split_call(call)?;
    let Some(svc) = pool.get_service_by_name(service) else {
        let known: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
        return Err(if known.is_empty() {
            format!("unknown service {service}: the definition has no services")
        } else {
            format!("unknown service {service} (known: {})", known.join(", "))
        });
    };
    let Some(m) = svc.methods().find(|m| m.name() == name) else {
        let known: Vec<String> = svc.methods().map(|m| m.name().to_string()).collect();
        return Err(format!(
            "{service} has no method {name} (it has: {})",
            known.join(", ")
        ));
    };
    Ok(Method {
        name: format!("{service}/{name}"),
        path: format!("/{service}/{name}"),
        kind: CallKind::of(&m),
        input: m.input(),
    })
}

/// Compiles `file` with protox, resolving imports in `includes` and the file's own folder.
///
/// # Errors
/// Why it does not compile, as protox says it (file, line and column).
pub fn compile(file: &Path, includes: &[PathBuf]) -> Result<DescriptorPool, String> {
    if !file.is_file() {
        return Err(format!("{}: no such file", file.display()));
    }
    let mut roots: Vec<PathBuf> = includes.to_vec();
    let parent = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    // protox wants the file named relative to an include folder: the first that holds it.
    let name = roots
        .iter()
        .find_map(|r| file.strip_prefix(r).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| {
            roots.push(parent.clone());
            PathBuf::from(file.file_name().unwrap_or_default())
        });
    if !roots.contains(&parent) {
        roots.push(parent);
    }
    let set = protox::compile([name], roots).map_err(|e| e.to_string())?;
    DescriptorPool::from_file_descriptor_set(set).map_err(|e| e.to_string())
}

/// Builds a pool from file descriptors in any order (reflection returns them as it likes).
///
/// # Errors
/// Descriptors that do not decode or do not link.
pub fn from_files(encoded: &[Vec<u8>]) -> Result<DescriptorPool, String> {
    let mut files = Vec::new();
    for b in encoded {
        let f = FileDescriptorProto::decode(b.as_slice())
            .map_err(|e| format!("a file descriptor from reflection does not decode: {e}"))?;
        if !files.iter().any(|g: &FileDescriptorProto| g.name == f.name) {
            files.push(f);
        }
    }
    // Dependencies first, as the pool needs them.
    let mut ordered: Vec<FileDescriptorProto> = Vec::with_capacity(files.len());
    while !files.is_empty() {
        let before = files.len();
        let mut i = 0;
        while i < files.len() {
            let ready = files[i]
                .dependency
                .iter()
                .all(|d| ordered.iter().any(|o| o.name() == d));
            if ready {
                ordered.push(files.remove(i));
            } else {
                i += 1;
            }
        }
        if files.len() == before {
            let missing: Vec<&str> = files
                .iter()
                .flat_map(|f| f.dependency.iter())
                .filter(|d| !ordered.iter().any(|o| o.name() == d.as_str()))
                .map(String::as_str)
                .collect();
            return Err(format!("missing imports: {}", missing.join(", ")));
        }
    }
    DescriptorPool::from_file_descriptor_set(FileDescriptorSet { file: ordered })
        .map_err(|e| e.to_string())
}

/// The imports of `encoded` files not among them.
pub fn missing_imports(encoded: &[Vec<u8>]) -> Vec<String> {
    let files: Vec<FileDescriptorProto> = encoded
        .iter()
        .filter_map(|b| FileDescriptorProto::decode(b.as_slice()).ok())
        .collect();
    let mut missing: Vec<String> = files
        .iter()
        .flat_map(|f| f.dependency.iter())
        .filter(|d| !files.iter().any(|f| f.name() == d.as_str()))
        .cloned()
        .collect();
    missing.sort();
    missing.dedup();
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_service_has_its_four_shapes() {
        let pool = builtin();
        let kinds: Vec<(String, CallKind)> = ["Append", "AppendBatch", "AppendStream", "Read"]
            .iter()
            .map(|m| {
                let m = method(&pool, &format!("{LOG_SERVICE}/{m}")).unwrap();
                (m.path, m.kind)
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("/msgbench.log.v1.Log/Append".into(), CallKind::Unary),
                (
                    "/msgbench.log.v1.Log/AppendBatch".into(),
                    CallKind::ClientStreaming
                ),
                ("/msgbench.log.v1.Log/AppendStream".into(), CallKind::Bidi),
                (
                    "/msgbench.log.v1.Log/Read".into(),
                    CallKind::ServerStreaming
                ),
            ]
        );
        // The dotted form some tools use names the same method.
        assert_eq!(
            method(&pool, "msgbench.log.v1.Log.Append").unwrap().path,
            "/msgbench.log.v1.Log/Append"
        );
    }

    #[test]
    fn unknown_services_and_methods_say_what_exists() {
        let pool = builtin();
        let e = method(&pool, "msgbench.log.v1.Log/Apend").unwrap_err();
        assert!(
            e.contains("no method Apend") && e.contains("AppendStream"),
            "{e}"
        );
        let e = method(&pool, "x.Y/Z").unwrap_err();
        assert!(
            e.contains("unknown service x.Y") && e.contains(LOG_SERVICE),
            "{e}"
        );
        assert!(method(&pool, "Append").is_err());
    }

    #[test]
    fn files_link_in_any_order_and_gaps_are_named() {
        let set = FileDescriptorSet::decode(LOG_DESCRIPTOR).unwrap();
        let mut encoded: Vec<Vec<u8>> = set.file.iter().map(|f| f.encode_to_vec()).collect();
        encoded.reverse();
        let pool = from_files(&encoded).unwrap();
        assert!(pool.get_service_by_name(LOG_SERVICE).is_some());
        let mut dep = FileDescriptorProto::decode(encoded[0].as_slice()).unwrap();
        dep.dependency.push("nowhere.proto".into());
        let e = from_files(&[dep.encode_to_vec()]).unwrap_err();
        assert!(e.contains("nowhere.proto"), "{e}");
        assert_eq!(
            missing_imports(&[dep.encode_to_vec()]),
            vec!["nowhere.proto"]
        );
    }
}
