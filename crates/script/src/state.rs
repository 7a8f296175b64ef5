//! One Lua state as wrk makes it: standard libraries, LuaJIT's `bit` library, the `wrk` table
//! with the URL's parts and the command line's headers, then the user's script run once.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mlua::{AnyUserData, Lua, MetaMethod, Table, UserData, UserDataFields, UserDataMethods, Value};

/// How long `wrk.connect` waits: it probes an address, so a short bound keeps a dead target
/// from stalling startup.
const CONNECT_PROBE: Duration = Duration::from_secs(2);

/// The parts of the target URL, as the `wrk` table holds them.
#[derive(Debug, Clone)]
pub struct UrlParts {
    pub scheme: String,
    pub host: String,
    /// The port as written in the URL (nil in Lua when the URL has none, as in wrk).
    pub port: Option<String>,
    /// Path and query.
    pub path: String,
}

/// What the setup state and a worker both reach: the worker's Lua state, its address and
/// its stop flag.
pub(crate) struct ThreadState {
    pub lua: Lua,
    pub addr: Mutex<Option<SocketAddr>>,
    pub stop: AtomicBool,
}

/// A network address from `wrk.lookup`.
#[derive(Clone, Copy)]
pub(crate) struct Addr(pub SocketAddr);

impl UserData for Addr {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        // wrk prints host and service numerically, joined by a colon.
        methods.add_meta_method(MetaMethod::ToString, |_, this, ()| {
            Ok(format!("{}:{}", this.0.ip(), this.0.port()))
        });
    }
}

/// `wrk.thread` and `setup()`'s argument.
#[derive(Clone)]
pub(crate) struct Thread(pub Arc<ThreadState>);

impl UserData for Thread {
    fn add_fields<F: UserDataFields<Self>>(fields: &mut F) {
        fields.add_field_method_get("addr", |_, this| {
            Ok(this.0.addr.lock().expect("not poisoned").map(Addr))
        });
        fields.add_field_method_set("addr", |_, this, addr: Option<AnyUserData>| {
            let addr = match addr {
                Some(ud) => Some(ud.borrow::<Addr>()?.0),
                None => None,
            };
            *this.0.addr.lock().expect("not poisoned") = addr;
            Ok(())
        });
    }

    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("get", |lua, this, name: String| {
            let value: Value = this.0.lua.globals().get(name.as_str())?;
            Transfer::from_value(&value)?.into_value(lua)
        });
        methods.add_method("set", |_, this, (name, value): (String, Value)| {
            let moved = Transfer::from_value(&value)?.into_value(&this.0.lua)?;
            this.0.lua.globals().set(name, moved)
        });
        methods.add_method("stop", |_, this, ()| {
            this.0.stop.store(true, Ordering::Relaxed);
            Ok(())
        });
    }
}

/// A value on its way between two states: only what wrk allows (nil, booleans, numbers,
/// strings, and tables of them).
enum Transfer {
    Nil,
    Bool(bool),
    Number(f64),
    String(Vec<u8>),
    Table(Vec<(Transfer, Transfer)>),
}

impl Transfer {
    fn from_value(value: &Value) -> mlua::Result<Transfer> {
        Ok(match value {
            Value::Nil => Transfer::Nil,
            Value::Boolean(b) => Transfer::Bool(*b),
            Value::Integer(i) => Transfer::Number(*i as f64),
            Value::Number(n) => Transfer::Number(*n),
            Value::String(s) => Transfer::String(s.as_bytes().to_vec()),
            Value::Table(t) => {
                let mut pairs = Vec::new();
                for pair in t.pairs::<Value, Value>() {
                    let (k, v) = pair?;
                    pairs.push((Transfer::from_value(&k)?, Transfer::from_value(&v)?));
                }
                Transfer::Table(pairs)
            }
            other => {
                return Err(mlua::Error::runtime(format!(
                    "cannot transfer '{}' to thread",
                    other.type_name()
                )))
            }
        })
    }

    fn into_value(self, lua: &Lua) -> mlua::Result<Value> {
        Ok(match self {
            Transfer::Nil => Value::Nil,
            Transfer::Bool(b) => Value::Boolean(b),
            Transfer::Number(n) => Value::Number(n),
            Transfer::String(s) => Value::String(lua.create_string(s)?),
            Transfer::Table(pairs) => {
                let table = lua.create_table()?;
                for (k, v) in pairs {
                    table.raw_set(k.into_value(lua)?, v.into_value(lua)?)?;
                }
                Value::Table(table)
            }
        })
    }
}

/// `getaddrinfo` for `wrk.lookup`: a service is a port number or a scheme name.
fn lookup(host: &str, service: &str) -> Result<Vec<SocketAddr>, String> {
    let port = match service {
        "http" => 80,
        "https" => 443,
        other => other
            .parse::<u16>()
            .map_err(|_| format!("unknown service {other:?} (a port number, http or https)"))?,
    };
    (host, port)
        .to_socket_addrs()
        .map(Iterator::collect)
        .map_err(|e| format!("unable to resolve {host}:{service} {e}"))
}

/// Makes one state: libraries, `bit`, the `wrk` table, then runs the script's source.
pub(crate) fn new_state(
    source: &[u8],
    chunk_name: &str,
    url: &UrlParts,
    headers: &[(String, String)],
) -> mlua::Result<Lua> {
    let lua = Lua::new();
    crate::bit::install(&lua)?;
    // Lua's own print writes through C's stdio buffer, which Rust's stdout does not flush:
    // this one writes what it does (tab-separated, tostring'd) through Rust's stdout, so a
    // script's lines come after the report in order.
    lua.globals().set(
        "print",
        lua.create_function(|lua, args: mlua::Variadic<Value>| {
            let tostring: mlua::Function = lua.globals().get("tostring")?;
            let mut line = Vec::new();
            for (i, value) in args.into_iter().enumerate() {
                if i > 0 {
                    line.push(b'\t');
                }
                let text: mlua::String = tostring.call(value)?;
                line.extend_from_slice(&text.as_bytes());
            }
            line.push(b'\n');
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            match out.write_all(&line).and_then(|()| out.flush()) {
                // Stdout's reader is gone (`loadmark run -s s.lua | head`): the line is
                // dropped, as loadmark's own output then is, not a script error.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                result => result.map_err(mlua::Error::external),
            }
        })?,
    )?;
    let wrk: Table = lua
        .load(include_str!("prelude.lua"))
        .set_name("=loadmark wrk prelude")
        .eval()?;
    wrk.set("scheme", url.scheme.as_str())?;
    wrk.set("host", url.host.as_str())?;
    wrk.set("port", url.port.as_deref())?;
    wrk.set("path", url.path.as_str())?;
    let table: Table = wrk.get("headers")?;
    for (name, value) in headers {
        table.set(name.as_str(), value.as_str())?;
    }
    wrk.set(
        "lookup",
        lua.create_function(|lua, (host, service): (String, String)| {
            let found = lookup(&host, &service).map_err(mlua::Error::runtime)?;
            lua.create_sequence_from(found.into_iter().map(Addr))
        })?,
    )?;
    wrk.set(
        "connect",
        lua.create_function(|_, addr: AnyUserData| {
            let addr = addr.borrow::<Addr>()?.0;
            Ok(TcpStream::connect_timeout(&addr, CONNECT_PROBE).is_ok())
        })?,
    )?;
    lua.globals().set("wrk", wrk.clone())?;
    // `require "wrk"` gives the same table, as in wrk.
    let loaded: Table = lua.globals().get::<Table>("package")?.get("loaded")?;
    loaded.set("wrk", wrk)?;
    lua.load(source).set_name(format!("@{chunk_name}")).exec()?;
    Ok(lua)
}

/// The first line of a Lua error ("file:line: message"), without mlua's stack traceback.
pub(crate) fn message(e: &mlua::Error) -> String {
    let text = match e {
        mlua::Error::RuntimeError(m) | mlua::Error::SyntaxError { message: m, .. } => m.clone(),
        mlua::Error::CallbackError { cause, .. } => return message(cause),
        other => other.to_string(),
    };
    let text = text.split("\nstack traceback").next().unwrap_or("");
    text.trim_end().to_string()
}
