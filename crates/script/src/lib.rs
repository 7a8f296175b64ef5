//! wrk's Lua scripting API for loadmark (`loadmark run URL -s script.lua -- args`).
//!
//! As in wrk: one setup state runs `setup(thread)` for every thread and `done()` at the end;
//! each worker thread has its own state that runs `init(args)`, then `request()`,
//! `response()` and `delay()` per request. The engine sees a worker's state only through
//! [`loadmark_engine::script::WorkerScript`]; when a script defines none of `request()`,
//! `response()` and `delay()`, [`Script::hooks`] is `None` and no Lua runs during the load.
//!
//! The interpreter is Lua 5.1 (built from source by the `mlua` crate) with LuaJIT's `bit`
//! library added: LuaJIT itself does not link for the static musl build.

mod bit;
mod state;
mod stats;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hdrhistogram::Histogram;
use loadmark_engine::script::{count_requests, ScriptFactory, WorkerScript};
use mlua::{Function, Lua, Table, Value};

pub use state::UrlParts;
use state::{message, new_state, Thread, ThreadState};

/// Why a script cannot run; each names the file and, from Lua, the line.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("script {path}: {message}")]
    Read { path: String, message: String },
    /// A syntax error or an error while running the script's top level, `setup()` or
    /// `init()`: Lua's "file:line: message".
    #[error("script {0}")]
    Lua(String),
    /// The first request the script makes is not a valid HTTP/1.1 request.
    #[error("script {path}: {what} is not a valid HTTP request: {message}")]
    Request {
        path: String,
        what: &'static str,
        message: String,
    },
    #[error("script {path}: {message}")]
    Unsupported { path: String, message: String },
}

/// What the script defines, read from the first thread after `init()`.
#[derive(Debug, Clone)]
pub struct Defined {
    pub request: bool,
    pub response: bool,
    pub delay: bool,
    pub done: bool,
}

/// The request in the `wrk` table after `init()`: what is sent when the script has no
/// `request()`, and what a report shows.
#[derive(Debug, Clone)]
pub struct WrkRequest {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}

/// A loaded script: its setup state and every worker's state, set up and initialised.
pub struct Script {
    path: PathBuf,
    main: Lua,
    threads: Vec<Arc<ThreadState>>,
    pub defined: Defined,
    pub request: WrkRequest,
    /// How many requests one `request()` result holds (more than one: pipelined).
    pub pipeline: u32,
    /// The address each thread was given (thread.addr after setup()).
    pub addrs: Vec<Option<SocketAddr>>,
}

/// The totals `done()` receives.
pub struct DoneInput {
    pub duration: Duration,
    pub requests: u64,
    pub bytes: u64,
    /// connect, read, write, status (responses over 399), timeout.
    pub errors: [u64; 5],
    /// Latency, microseconds.
    pub latency: Histogram<u64>,
    /// Requests per second of one thread, one value per thread and second.
    pub rates: Histogram<u64>,
}

impl Script {
    /// Loads `path` into a setup state and `threads` worker states, as wrk does: resolve
    /// the target, then for each thread `setup(thread)` and `init(args)`; `args[0]` is the
    /// URL and the rest are the arguments given after `--`.
    pub fn load(
        path: &Path,
        url: &str,
        parts: &UrlParts,
        headers: &[(String, String)],
        args: &[String],
        threads: usize,
    ) -> Result<Script, ScriptError> {
        let shown = path.display().to_string();
        let source = std::fs::read(path).map_err(|e| ScriptError::Read {
            path: shown.clone(),
            message: e.to_string(),
        })?;
        let lua_err = |e: mlua::Error| ScriptError::Lua(message(&e));
        let main = new_state(&source, &shown, parts, headers).map_err(lua_err)?;
        let wrk: Table = main.globals().get("wrk").map_err(lua_err)?;
        let service = parts.port.clone().unwrap_or_else(|| parts.scheme.clone());
        wrk.get::<Function>("resolve")
            .and_then(|f| f.call::<()>((parts.host.as_str(), service.as_str())))
            .map_err(lua_err)?;
        let found: Table = wrk.get("addrs").map_err(lua_err)?;
        if found.raw_len() == 0 {
            return Err(ScriptError::Unsupported {
                path: shown,
                message: format!("unable to connect to {}:{service}", parts.host),
            });
        }
        let setup: Function = wrk.get("setup").map_err(lua_err)?;
        let mut states = Vec::with_capacity(threads);
        for _ in 0..threads {
            let lua = new_state(&source, &shown, parts, headers).map_err(lua_err)?;
            let state = Arc::new(ThreadState {
                lua,
                addr: Mutex::new(None),
                stop: AtomicBool::new(false),
            });
            let own_wrk: Table = state.lua.globals().get("wrk").map_err(lua_err)?;
            own_wrk
                .set("thread", Thread(state.clone()))
                .map_err(lua_err)?;
            setup.call::<()>(Thread(state.clone())).map_err(lua_err)?;
            let table = state.lua.create_table().map_err(lua_err)?;
            table.raw_set(0, url).map_err(lua_err)?;
            for (i, arg) in args.iter().enumerate() {
                table.raw_set(i + 1, arg.as_str()).map_err(lua_err)?;
            }
            own_wrk
                .get::<Function>("init")
                .and_then(|f| f.call::<()>(table))
                .map_err(lua_err)?;
            states.push(state);
        }
        let first = &states.first().expect("at least one thread").lua;
        let is_fn = |lua: &Lua, name: &str| {
            matches!(lua.globals().get::<Value>(name), Ok(Value::Function(_)))
        };
        let defined = Defined {
            request: is_fn(first, "request"),
            response: is_fn(first, "response"),
            delay: is_fn(first, "delay"),
            done: is_fn(&main, "done"),
        };
        // Like wrk, the first thread's first request is made now and checked, so a script
        // that builds a broken request fails before the load.
        let (what, maker) = if defined.request {
            ("request()", first.globals().get::<Function>("request"))
        } else {
            (
                "wrk.request()",
                wrk_table(first).and_then(|w| w.get("request")),
            )
        };
        let made: Value = maker.and_then(|f| f.call(())).map_err(lua_err)?;
        let Value::String(made) = made else {
            return Err(ScriptError::Request {
                path: shown,
                what,
                message: format!("it returned a {}, not a string", type_name(&made)),
            });
        };
        let pipeline =
            count_requests(&made.as_bytes()).map_err(|message| ScriptError::Request {
                path: shown.clone(),
                what,
                message,
            })?;
        let request = wrk_request(first).map_err(lua_err)?;
        let addrs = states
            .iter()
            .map(|s| *s.addr.lock().expect("not poisoned"))
            .collect();
        Ok(Script {
            path: path.to_path_buf(),
            main,
            threads: states,
            defined,
            request,
            pipeline,
            addrs,
        })
    }

    /// What the engine calls per request, or `None` when the script defines no `request()`,
    /// `response()` or `delay()`: the run then sends the `wrk` table's request, encoded once.
    pub fn hooks(&self) -> Option<Arc<dyn ScriptFactory>> {
        let d = &self.defined;
        (d.request || d.response || d.delay).then(|| {
            Arc::new(Factory {
                threads: self.threads.clone(),
            }) as Arc<dyn ScriptFactory>
        })
    }

    /// Calls `done(summary, latency, requests)` in the setup state, if defined.
    pub fn done(&self, input: DoneInput) -> Result<(), ScriptError> {
        if !self.defined.done {
            return Ok(());
        }
        let lua_err = |e: mlua::Error| ScriptError::Lua(message(&e));
        let lua = &self.main;
        let summary = lua.create_table().map_err(lua_err)?;
        let errors = lua.create_table().map_err(lua_err)?;
        let result = (|| {
            summary.set("duration", input.duration.as_micros() as f64)?;
            summary.set("requests", input.requests as f64)?;
            summary.set("bytes", input.bytes as f64)?;
            for (name, n) in ["connect", "read", "write", "status", "timeout"]
                .iter()
                .zip(input.errors)
            {
                errors.set(*name, n as f64)?;
            }
            summary.set("errors", errors)?;
            let done: Function = lua.globals().get("done")?;
            done.call::<()>((
                summary,
                stats::Stats(input.latency),
                stats::Stats(input.rates),
            ))
        })();
        result.map_err(lua_err)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Lua 5.1's name of a value's type (mlua tells integers apart; Lua 5.1 does not).
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Integer(_) | Value::Number(_) => "number",
        other => other.type_name(),
    }
}

fn wrk_table(lua: &Lua) -> mlua::Result<Table> {
    lua.globals().get("wrk")
}

fn wrk_request(lua: &Lua) -> mlua::Result<WrkRequest> {
    let wrk = wrk_table(lua)?;
    let headers: Table = wrk.get("headers")?;
    let mut list = Vec::new();
    for pair in headers.pairs::<String, Value>() {
        let (name, value) = pair?;
        let value = match value {
            Value::String(s) => s.to_str()?.to_string(),
            Value::Integer(i) => i.to_string(),
            Value::Number(n) => n.to_string(),
            _ => continue,
        };
        list.push((name, value));
    }
    list.sort();
    Ok(WrkRequest {
        method: wrk.get("method")?,
        path: wrk.get("path")?,
        headers: list,
        body: wrk
            .get::<Option<mlua::String>>("body")?
            .map(|s| s.as_bytes().to_vec()),
    })
}

#[derive(Debug)]
struct Factory {
    threads: Vec<Arc<ThreadState>>,
}

impl std::fmt::Debug for ThreadState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ThreadState")
    }
}

impl ScriptFactory for Factory {
    fn worker(&self, index: usize) -> Box<dyn WorkerScript> {
        let state = self.threads[index % self.threads.len()].clone();
        let get = |name: &str| match state.lua.globals().get::<Value>(name) {
            Ok(Value::Function(f)) => Some(f),
            _ => None,
        };
        Box::new(LuaWorker {
            request: get("request"),
            response: get("response"),
            delay: get("delay"),
            state,
            last: None,
        })
    }
}

/// One worker's calls into its own state.
struct LuaWorker {
    state: Arc<ThreadState>,
    request: Option<Function>,
    response: Option<Function>,
    delay: Option<Function>,
    /// The last request string and how many requests it holds: a script that returns one
    /// pre-built string is checked once, not per request.
    last: Option<(mlua::String, u32)>,
}

impl WorkerScript for LuaWorker {
    fn dynamic(&self) -> bool {
        self.request.is_some()
    }

    fn request(&mut self, out: &mut Vec<u8>) -> Result<u32, String> {
        let f = self.request.as_ref().ok_or("no request()")?;
        let made: Value = f.call(()).map_err(|e| message(&e))?;
        let Value::String(s) = made else {
            let info = f.info();
            return Err(format!(
                "request() (defined at {}:{}) returned a {}, not a string (an HTTP request)",
                info.short_src.as_deref().unwrap_or("?"),
                info.line_defined.unwrap_or(0),
                type_name(&made)
            ));
        };
        let bytes = s.as_bytes();
        out.extend_from_slice(&bytes);
        drop(bytes);
        if let Some((last, n)) = &self.last {
            if last.to_pointer() == s.to_pointer() {
                return Ok(*n);
            }
        }
        let n = count_requests(out)
            .map_err(|e| format!("request() returned no valid HTTP request: {e}"))?;
        self.last = Some((s, n));
        Ok(n)
    }

    fn wants_response(&self) -> bool {
        self.response.is_some()
    }

    fn response(
        &mut self,
        status: u16,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<(), String> {
        let Some(f) = &self.response else {
            return Ok(());
        };
        let lua = &self.state.lua;
        let call = || -> mlua::Result<()> {
            let table = lua.create_table_with_capacity(0, headers.len())?;
            for (name, value) in headers {
                table.raw_set(*name, *value)?;
            }
            f.call((status, table, lua.create_string(body)?))
        };
        call().map_err(|e| message(&e))
    }

    fn delay(&mut self) -> Result<Option<Duration>, String> {
        let Some(f) = &self.delay else {
            return Ok(None);
        };
        let ms: Value = f.call(()).map_err(|e| message(&e))?;
        let ms = match ms {
            Value::Integer(i) => i as f64,
            Value::Number(n) => n,
            _ => 0.0,
        };
        Ok(Some(Duration::from_secs_f64(ms.max(0.0) / 1000.0)))
    }

    fn stopped(&self) -> bool {
        self.state.stop.load(Ordering::Relaxed)
    }
}
