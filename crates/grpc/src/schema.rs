//! Schemas from `.proto` files, protosets or reflection, and methods resolved in them.

use std::path::PathBuf;

use miette::Diagnostic;
use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, MethodDescriptor};

/// Where the schemas come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// `.proto` files (`--proto`), their imports found under `imports` (`-i`) and beside
    /// each file.
    Proto {
        files: Vec<PathBuf>,
        imports: Vec<PathBuf>,
    },
    /// A `FileDescriptorSet` (`--protoset`, `protoc --descriptor_set_out --include_imports`).
    Protoset(PathBuf),
}

/// Why schemas could not be loaded or a call made from them.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// A `.proto` file does not compile: the message names its file, line and column. Fix
    /// the file, or add the folder its imports are under with `-i`.
    #[error("{0}")]
    Proto(String),
    /// The protoset cannot be read or is no `FileDescriptorSet`: make it with
    /// `protoc --descriptor_set_out=FILE --include_imports`.
    #[error("protoset {path}: {why}")]
    Protoset { path: String, why: String },
    /// `--call` is not `package.Service/Method` or `package.Service.Method`.
    #[error("--call {0:?}: expected package.Service/Method (as ghz and grpcurl spell it)")]
    CallSyntax(String),
    /// The service is in none of the files: the message lists those that are.
    #[error("no service {service:?} in the schemas; services there: {known}")]
    UnknownService { service: String, known: String },
    /// The service has no such method: the message lists its methods.
    #[error("service {service} has no method {method:?}; its methods: {known}")]
    UnknownMethod {
        service: String,
        method: String,
        known: String,
    },
    /// The request JSON does not fit the method's input message (proto3 JSON mapping).
    #[error("the request is not a valid {message} in JSON: {why}")]
    Json { message: String, why: String },
    /// A response message that does not decode as the method's output message.
    #[error("the response is not a valid {message}: {why}")]
    Decode { message: String, why: String },
}

/// The files a run's calls are described by.
#[derive(Debug, Clone)]
pub struct Schema {
    pub pool: DescriptorPool,
}

impl Schema {
    pub fn load(source: &Source) -> Result<Schema, SchemaError> {
        match source {
            Source::Proto { files, imports } => compile(files, imports),
            Source::Protoset(path) => {
                let shown = path.display().to_string();
                let bytes = std::fs::read(path).map_err(|e| SchemaError::Protoset {
                    path: shown.clone(),
                    why: e.to_string(),
                })?;
                let pool = DescriptorPool::decode(bytes.as_slice()).map_err(|e| {
                    SchemaError::Protoset {
                        path: shown,
                        why: e.to_string(),
                    }
                })?;
                Ok(Schema { pool })
            }
        }
    }

    /// The schema as a `FileDescriptorSet`'s bytes (as a protoset file holds it).
    pub fn encode(&self) -> Vec<u8> {
        Schema::encode_all([self])
    }

    /// Several schemas as one `FileDescriptorSet`'s bytes, each file once (reflection's
    /// schemas of several services share their imports).
    pub fn encode_all<'a>(schemas: impl IntoIterator<Item = &'a Schema>) -> Vec<u8> {
        let mut seen = std::collections::HashSet::new();
        let file = schemas
            .into_iter()
            .flat_map(|s| s.pool.file_descriptor_protos())
            .filter(|f| seen.insert(f.name().to_owned()))
            .cloned()
            .collect();
        prost_types::FileDescriptorSet { file }.encode_to_vec()
    }

    /// A schema from a `FileDescriptorSet`'s bytes ([`Schema::encode`]).
    pub fn decode(bytes: &[u8]) -> Result<Schema, String> {
        let pool = DescriptorPool::decode(bytes).map_err(|e| e.to_string())?;
        Ok(Schema { pool })
    }

    /// A schema from file descriptors (reflection's answers), in any order.
    pub fn from_files(files: Vec<prost_types::FileDescriptorProto>) -> Result<Schema, String> {
        let set = prost_types::FileDescriptorSet { file: files };
        let pool =
            DescriptorPool::decode(set.encode_to_vec().as_slice()).map_err(|e| e.to_string())?;
        Ok(Schema { pool })
    }

    /// The method `call` names (`pkg.Service/Method`, or `pkg.Service.Method`).
    pub fn method(&self, call: &str) -> Result<Method, SchemaError> {
        let (service, method) = split_call(call)?;
        let Some(svc) = self.pool.get_service_by_name(service) else {
            let known: Vec<String> = self
                .pool
                .services()
                .map(|s| s.full_name().to_string())
                .collect();
            return Err(SchemaError::UnknownService {
                service: service.into(),
                known: list(known),
            });
        };
        let found = svc.methods().find(|m| m.name() == method);
        let Some(descriptor) = found else {
            let known: Vec<String> = svc.methods().map(|m| m.name().to_string()).collect();
            return Err(SchemaError::UnknownMethod {
                service: service.into(),
                method: method.into(),
                known: list(known),
            });
        };
        Ok(Method { descriptor })
    }
}

/// `pkg.Service/Method` (or `pkg.Service.Method`) as service and method.
pub fn split_call(call: &str) -> Result<(&str, &str), SchemaError> {
    let call = call.trim_start_matches('/');
    let split = call.rsplit_once('/').or_else(|| call.rsplit_once('.'));
    match split {
        Some((s, m)) if !s.is_empty() && !m.is_empty() && !m.contains('/') => Ok((s, m)),
        _ => Err(SchemaError::CallSyntax(call.into())),
    }
}

fn list(mut names: Vec<String>) -> String {
    names.sort();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

fn compile(files: &[PathBuf], imports: &[PathBuf]) -> Result<Schema, SchemaError> {
    // Each file's own folder is an import path too (as ghz does), after the user's.
    let mut paths: Vec<PathBuf> = imports.to_vec();
    for f in files {
        let dir = f.parent().map(PathBuf::from).unwrap_or_default();
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        if !paths.contains(&dir) {
            paths.push(dir);
        }
    }
    let mut compiler = protox::Compiler::new(&paths).map_err(located)?;
    compiler.include_imports(true);
    for f in files {
        // A file is named relative to the import path that holds it.
        let name = paths
            .iter()
            .find_map(|p| f.strip_prefix(p).ok().filter(|_| p.as_os_str() != "."))
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                f.file_name()
                    .map(PathBuf::from)
                    .unwrap_or_else(|| f.clone())
            });
        compiler.open_file(&name).map_err(located)?;
    }
    Ok(Schema {
        pool: compiler.descriptor_pool(),
    })
}

/// protox's error with its place: `file:line:col: message`.
fn located(e: protox::Error) -> SchemaError {
    let mut place = e.file().map(str::to_string);
    if let (Some(source), Some(label)) = (e.source_code(), e.labels().and_then(|mut l| l.next())) {
        if let Ok(span) = source.read_span(label.inner(), 0, 0) {
            let file = span
                .name()
                .map(str::to_string)
                .or(place.clone())
                .unwrap_or_default();
            place = Some(format!("{file}:{}:{}", span.line() + 1, span.column() + 1));
        }
    }
    let why = match e.help() {
        Some(help) => format!("{e} ({help})"),
        None => e.to_string(),
    };
    SchemaError::Proto(match place {
        Some(place) => format!("{place}: {why}"),
        None => why,
    })
}

/// One method, and how its messages are made and read.
#[derive(Debug, Clone)]
pub struct Method {
    pub descriptor: MethodDescriptor,
}

impl Method {
    /// The HTTP/2 `:path`: `/pkg.Service/Method`.
    pub fn path(&self) -> String {
        format!(
            "/{}/{}",
            self.descriptor.parent_service().full_name(),
            self.descriptor.name()
        )
    }

    pub fn input(&self) -> MessageDescriptor {
        self.descriptor.input()
    }

    pub fn output(&self) -> MessageDescriptor {
        self.descriptor.output()
    }

    /// Whether the client or the server sends a stream of messages.
    pub fn is_streaming(&self) -> bool {
        self.descriptor.is_client_streaming() || self.descriptor.is_server_streaming()
    }

    /// The request message from JSON (the proto3 JSON mapping), encoded.
    pub fn encode_json(&self, json: &str) -> Result<Vec<u8>, SchemaError> {
        let input = self.input();
        let mut de = serde_json::Deserializer::from_str(json);
        let message = DynamicMessage::deserialize(input.clone(), &mut de)
            .and_then(|m| de.end().map(|()| m))
            .map_err(|e| SchemaError::Json {
                message: input.full_name().to_string(),
                why: e.to_string(),
            })?;
        Ok(message.encode_to_vec())
    }

    /// The request body: the message from JSON, with gRPC's 5-byte prefix.
    pub fn request_body(&self, json: &str) -> Result<Vec<u8>, SchemaError> {
        let message = self.encode_json(json)?;
        let mut out = Vec::with_capacity(5 + message.len());
        out.push(0);
        out.extend_from_slice(&(message.len() as u32).to_be_bytes());
        out.extend_from_slice(&message);
        Ok(out)
    }

    /// A response message (without its prefix) as JSON.
    pub fn decode_json(&self, bytes: &[u8]) -> Result<serde_json::Value, SchemaError> {
        let output = self.output();
        let err = |why: String| SchemaError::Decode {
            message: output.full_name().to_string(),
            why,
        };
        let message =
            DynamicMessage::decode(output.clone(), bytes).map_err(|e| err(e.to_string()))?;
        serde_json::to_value(&message).map_err(|e| err(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &std::path::Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn tempdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("loadmark-grpc-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    const GREETER: &str = "syntax = \"proto3\";\npackage helloworld;\n\
        service Greeter { rpc SayHello (HelloRequest) returns (HelloReply) {} }\n\
        message HelloRequest { string name = 1; }\nmessage HelloReply { string message = 1; }\n";

    #[test]
    fn a_proto_file_gives_the_method_its_json_and_its_response() {
        let dir = tempdir("ok");
        let file = write(&dir, "helloworld.proto", GREETER);
        let schema = Schema::load(&Source::Proto {
            files: vec![file],
            imports: vec![],
        })
        .unwrap();
        let m = schema.method("helloworld.Greeter/SayHello").unwrap();
        assert_eq!(m.path(), "/helloworld.Greeter/SayHello");
        assert_eq!(
            m.request_body(r#"{"name":"ab"}"#).unwrap(),
            [0, 0, 0, 0, 4, 10, 2, b'a', b'b']
        );
        let reply = m.decode_json(&[10, 2, b'h', b'i']).unwrap();
        assert_eq!(reply, serde_json::json!({"message": "hi"}));
        assert_eq!(
            schema.method("helloworld.Greeter.SayHello").unwrap().path(),
            m.path()
        );
    }

    #[test]
    fn errors_name_the_place_the_service_the_method_and_the_field() {
        let dir = tempdir("bad");
        let bad = write(
            &dir,
            "bad.proto",
            "syntax = \"proto3\";\npackage p;\nmessage M { strin x = 1; }\n",
        );
        let e = Schema::load(&Source::Proto {
            files: vec![bad],
            imports: vec![],
        })
        .unwrap_err();
        assert!(e.to_string().starts_with("bad.proto:3:"), "{e}");
        let good = write(&dir, "helloworld.proto", GREETER);
        let schema = Schema::load(&Source::Proto {
            files: vec![good],
            imports: vec![],
        })
        .unwrap();
        let e = schema.method("helloworld.Greeter/SayBye").unwrap_err();
        assert!(e.to_string().contains("its methods: SayHello"), "{e}");
        let e = schema.method("helloworld.Nope/SayHello").unwrap_err();
        assert!(
            e.to_string().contains("services there: helloworld.Greeter"),
            "{e}"
        );
        let m = schema.method("helloworld.Greeter/SayHello").unwrap();
        let e = m.encode_json(r#"{"nam":"x"}"#).unwrap_err();
        assert!(
            e.to_string().contains("helloworld.HelloRequest") && e.to_string().contains("nam"),
            "{e}"
        );
        assert!(matches!(
            schema.method("nomethod"),
            Err(SchemaError::CallSyntax(_))
        ));
    }

    #[test]
    fn a_protoset_loads_as_the_proto_does() {
        let dir = tempdir("set");
        let file = write(&dir, "helloworld.proto", GREETER);
        let schema = Schema::load(&Source::Proto {
            files: vec![file],
            imports: vec![],
        })
        .unwrap();
        let set = write(&dir, "hw.protoset", "");
        std::fs::write(&set, schema.pool.encode_to_vec()).unwrap();
        let loaded = Schema::load(&Source::Protoset(set)).unwrap();
        assert_eq!(
            loaded.method("helloworld.Greeter/SayHello").unwrap().path(),
            "/helloworld.Greeter/SayHello"
        );
        let junk = write(&dir, "junk.protoset", "not a set");
        assert!(matches!(
            Schema::load(&Source::Protoset(junk)),
            Err(SchemaError::Protoset { .. })
        ));
    }
}
