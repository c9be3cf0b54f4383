//! One script call in a QuickJS sandbox: a fresh runtime and context per
//! call (nothing a script changes survives it), a memory cap, a stack cap,
//! a time budget enforced by QuickJS's interrupt handler (the script's
//! thread stops at the deadline, it is not merely abandoned), and a cap on
//! the result's size.
//!
//! The context has the language and nothing else: no quickjs-libc `std` or
//! `os` module (no files, processes or network), no module loader (no
//! `import`), and `eval` and the `Function` constructors (plain, async,
//! generator) are removed before the script runs. The only host functions
//! are the ones granted in [`Host`]: `grace.search(query, k)` and, when
//! `web_fetch` is enabled, `fetch(url)`.

use crate::access::ReadScope;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use rquickjs::context::intrinsic;
use rquickjs::prelude::Opt;
use rquickjs::{CatchResultExt, CaughtError, Context, Ctx, Function, Object, Runtime, Value};
use serde_json::Value as Json;

use crate::tools::ToolErrorKind;

/// Characters of a script's error message kept.
const MAX_MESSAGE_CHARS: usize = 500;
/// Host calls (`grace.search`, `fetch`) one script call may make.
pub const MAX_HOST_CALLS: u32 = 16;
/// Passages one `grace.search` may ask for.
pub const MAX_SEARCH_K: usize = 20;
/// Characters of a `grace.search` query or a `fetch` URL at most.
const MAX_HOST_ARG_CHARS: usize = 2_000;
/// Stack beyond the script's own for the thread a call runs on (QuickJS's
/// C frames and ours).
const THREAD_STACK_MARGIN: usize = 1024 * 1024;

/// Bounds of one call.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes the script's runtime may allocate.
    pub memory_bytes: usize,
    /// Bytes of stack the script may use.
    pub stack_bytes: usize,
    /// Bytes of the result (as JSON) at most.
    pub max_output_bytes: usize,
    /// Time budget; the interpreter is interrupted when it is spent.
    pub time: Duration,
}

/// `grace.search(query, k)`: passages `[{source, section, text, score}]`.
pub type SearchFn = Arc<dyn Fn(&str, usize, &ReadScope) -> Result<Json, String> + Send + Sync>;
/// `fetch(url)`: what `web_fetch` returned for it.
pub type FetchFn = Arc<dyn Fn(&str) -> Result<Json, String> + Send + Sync>;

/// The host functions a script is granted; absent ones do not exist in
/// its global scope.
#[derive(Clone, Default)]
pub struct Host {
    /// Search of the knowledge base.
    pub search: Option<SearchFn>,
    /// `web_fetch`, only when it is enabled.
    pub fetch: Option<FetchFn>,
    /// What `grace.search` may find: the scope of the call that runs the
    /// script.
    pub scope: ReadScope,
}

/// Why a script call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct SandboxError {
    /// `Timeout` when the budget ran out, `InvalidInput` for an input the
    /// script cannot take, `Failed` otherwise.
    pub kind: ToolErrorKind,
    /// What went wrong (bounded).
    pub message: String,
}

impl SandboxError {
    fn failed(message: impl Into<String>) -> Self {
        Self {
            kind: ToolErrorKind::Failed,
            message: crate::text::ellipsized(&message.into(), MAX_MESSAGE_CHARS),
        }
    }
}

/// Removes `eval` and every `Function` constructor, so that no code can be
/// compiled from a string once the script runs (the check on creation
/// refuses the obvious spellings; this is what holds).
const PRELUDE: &str = r#"(function () {
  "use strict";
  const refuse = function Function() {
    throw new EvalError("code generation from strings is not allowed in this sandbox");
  };
  const kinds = [function () {}, async function () {}, function* () {}, async function* () {}];
  for (const f of kinds) {
    Object.defineProperty(Object.getPrototypeOf(f), "constructor", {
      value: refuse, writable: false, enumerable: false, configurable: false
    });
  }
  refuse.prototype = Object.getPrototypeOf(kinds[0]);
  Object.defineProperty(globalThis, "Function", {
    value: refuse, writable: false, enumerable: false, configurable: false
  });
  delete globalThis.eval;
})();"#;

/// Runs `code` (which defines `function run(input)`) on `input` under
/// `limits`, on a thread of its own with the stack it needs, and returns
/// what `run` returned, as JSON.
pub fn run(code: &str, input: &Json, limits: Limits, host: &Host) -> Result<Json, SandboxError> {
    let code = code.to_string();
    let input = serde_json::to_string(input)
        .map_err(|e| SandboxError::failed(format!("input is not JSON: {e}")))?;
    let host = host.clone();
    let stack = limits.stack_bytes.saturating_add(THREAD_STACK_MARGIN);
    let handle = std::thread::Builder::new()
        .name("rt-script".to_string())
        .stack_size(stack)
        .spawn(move || run_here(&code, &input, limits, &host))
        .map_err(|e| SandboxError {
            kind: ToolErrorKind::Transient,
            message: format!("cannot start the script's thread: {e}"),
        })?;
    handle
        .join()
        .unwrap_or_else(|_| Err(SandboxError::failed("the sandbox panicked")))
}

/// [`run`] on the current thread.
fn run_here(code: &str, input: &str, limits: Limits, host: &Host) -> Result<Json, SandboxError> {
    let started = Instant::now();
    let deadline = started + limits.time;
    let runtime = Runtime::new().map_err(|e| SandboxError::failed(format!("no runtime: {e}")))?;
    runtime.set_memory_limit(limits.memory_bytes);
    runtime.set_max_stack_size(limits.stack_bytes);
    let interrupted = Arc::new(AtomicBool::new(false));
    let flag = interrupted.clone();
    runtime.set_interrupt_handler(Some(Box::new(move || {
        // Once spent, every later check interrupts too: a `catch` cannot
        // buy the script more time.
        if flag.load(Ordering::Relaxed) || Instant::now() >= deadline {
            flag.store(true, Ordering::Relaxed);
            return true;
        }
        false
    })));
    type Intrinsics = (
        intrinsic::Date,
        intrinsic::Eval,
        intrinsic::RegExpCompiler,
        intrinsic::RegExp,
        intrinsic::Json,
        intrinsic::MapSet,
        intrinsic::TypedArrays,
        intrinsic::Promise,
        intrinsic::BigInt,
    );
    let context = Context::custom::<Intrinsics>(&runtime)
        .map_err(|e| classify_plain(&e.to_string(), &interrupted))?;
    let budget = limits.time;
    let outcome = context.with(|ctx| -> Result<Json, SandboxError> {
        let fail = |e: CaughtError<'_>| classify(e, &interrupted, budget);
        ctx.eval::<(), _>(PRELUDE).catch(&ctx).map_err(fail)?;
        install_host(&ctx, host, deadline)
            .catch(&ctx)
            .map_err(fail)?;
        ctx.eval::<(), _>(code).catch(&ctx).map_err(fail)?;
        let run: Value = ctx.globals().get("run").catch(&ctx).map_err(fail)?;
        let Some(run) = run.as_function() else {
            return Err(SandboxError::failed(
                "the script must define `function run(input)`",
            ));
        };
        let input = ctx.json_parse(input).catch(&ctx).map_err(fail)?;
        let mut value: Value = run.call((input,)).catch(&ctx).map_err(fail)?;
        if let Some(promise) = value.as_promise().cloned() {
            value = settle(&ctx, promise).catch(&ctx).map_err(fail)?;
        }
        let text = match ctx.json_stringify(value).catch(&ctx).map_err(fail)? {
            Some(s) => s
                .to_string()
                .map_err(|e| SandboxError::failed(e.to_string()))?,
            None => "null".to_string(),
        };
        if text.len() > limits.max_output_bytes {
            return Err(SandboxError::failed(format!(
                "the result is {} bytes, over the {} allowed (tools.runtime.max_output_bytes)",
                text.len(),
                limits.max_output_bytes
            )));
        }
        serde_json::from_str(&text)
            .map_err(|e| SandboxError::failed(format!("the result is not JSON: {e}")))
    });
    drop(context);
    drop(runtime);
    outcome
}

/// Runs the promise's jobs until it settles; its value, or its rejection
/// as an exception.
fn settle<'js>(ctx: &Ctx<'js>, promise: rquickjs::Promise<'js>) -> rquickjs::Result<Value<'js>> {
    use rquickjs::promise::PromiseState;
    loop {
        match promise.state() {
            PromiseState::Pending => {
                if !ctx.execute_pending_job() {
                    return Err(rquickjs::Exception::throw_message(
                        ctx,
                        "run() returned a promise that never settles",
                    ));
                }
            }
            PromiseState::Resolved | PromiseState::Rejected => {
                return promise
                    .result()
                    .unwrap_or_else(|| Ok(Value::new_undefined(ctx.clone())));
            }
        }
    }
}

/// Defines the granted host functions: `grace.search` and `fetch`.
fn install_host<'js>(ctx: &Ctx<'js>, host: &Host, deadline: Instant) -> rquickjs::Result<()> {
    let calls = Arc::new(AtomicU32::new(0));
    let globals = ctx.globals();
    let grace = Object::new(ctx.clone())?;
    if let Some(search) = host.search.clone() {
        let calls = calls.clone();
        let scope = host.scope.clone();
        let f = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, query: String, k: Opt<f64>| -> rquickjs::Result<Value<'js>> {
                host_gate(&ctx, &calls, deadline)?;
                let query = bounded_arg(&ctx, "query", &query)?;
                let k = k.0.unwrap_or(5.0);
                if !(k >= 1.0 && k <= MAX_SEARCH_K as f64) {
                    return Err(rquickjs::Exception::throw_range(
                        &ctx,
                        &format!("k must be between 1 and {MAX_SEARCH_K}"),
                    ));
                }
                let found = search(query, k as usize, &scope)
                    .map_err(|e| rquickjs::Exception::throw_message(&ctx, &bounded(&e)))?;
                to_js(&ctx, &found)
            },
        )?;
        f.set_name("search")?;
        grace.set("search", f)?;
    }
    globals.set("grace", grace)?;
    if let Some(fetch) = host.fetch.clone() {
        let f = Function::new(
            ctx.clone(),
            move |ctx: Ctx<'js>, url: String| -> rquickjs::Result<Value<'js>> {
                host_gate(&ctx, &calls, deadline)?;
                let url = bounded_arg(&ctx, "url", &url)?;
                let fetched = fetch(url)
                    .map_err(|e| rquickjs::Exception::throw_message(&ctx, &bounded(&e)))?;
                to_js(&ctx, &fetched)
            },
        )?;
        f.set_name("fetch")?;
        globals.set("fetch", f)?;
    }
    Ok(())
}

/// Refuses a host call past the budget or beyond [`MAX_HOST_CALLS`].
fn host_gate(ctx: &Ctx<'_>, calls: &AtomicU32, deadline: Instant) -> rquickjs::Result<()> {
    if Instant::now() >= deadline {
        return Err(rquickjs::Exception::throw_internal(ctx, "interrupted"));
    }
    if calls.fetch_add(1, Ordering::Relaxed) >= MAX_HOST_CALLS {
        return Err(rquickjs::Exception::throw_range(
            ctx,
            &format!("at most {MAX_HOST_CALLS} host calls per call"),
        ));
    }
    Ok(())
}

fn bounded_arg<'a>(ctx: &Ctx<'_>, what: &str, s: &'a str) -> rquickjs::Result<&'a str> {
    let s = s.trim();
    if s.is_empty() || s.chars().count() > MAX_HOST_ARG_CHARS {
        return Err(rquickjs::Exception::throw_range(
            ctx,
            &format!("{what} must be 1 to {MAX_HOST_ARG_CHARS} characters"),
        ));
    }
    Ok(s)
}

fn bounded(message: &str) -> String {
    crate::text::ellipsized(message, MAX_MESSAGE_CHARS)
}

/// A host value as a fresh JavaScript value (parsed from JSON: plain data,
/// own properties only, no setters of the script's run on it).
fn to_js<'js>(ctx: &Ctx<'js>, value: &Json) -> rquickjs::Result<Value<'js>> {
    let text = serde_json::to_string(value)
        .map_err(|e| rquickjs::Exception::throw_message(ctx, &e.to_string()))?;
    ctx.json_parse(text)
}

/// A script's exception as a failure of the right kind.
fn classify(e: CaughtError<'_>, interrupted: &AtomicBool, budget: Duration) -> SandboxError {
    if interrupted.load(Ordering::Relaxed) {
        return SandboxError {
            kind: ToolErrorKind::Timeout,
            message: format!(
                "the script ran out of its {:.1} s budget (tools.runtime.timeout_seconds)",
                budget.as_secs_f64()
            ),
        };
    }
    let message = match &e {
        CaughtError::Exception(ex) => {
            let name: Option<String> = ex.get("name").ok();
            match (name, ex.message()) {
                (Some(n), Some(m)) => format!("{n}: {m}"),
                (None, Some(m)) => m,
                (_, None) => ex.to_string(),
            }
        }
        CaughtError::Value(v) => match v.as_string().and_then(|s| s.to_string().ok()) {
            Some(s) => format!("uncaught {s}"),
            None => format!("uncaught {}", v.type_name()),
        },
        CaughtError::Error(err) => err.to_string(),
    };
    classify_plain(&message, interrupted)
}

fn classify_plain(message: &str, interrupted: &AtomicBool) -> SandboxError {
    if interrupted.load(Ordering::Relaxed) {
        return SandboxError {
            kind: ToolErrorKind::Timeout,
            message: "the script ran out of its time budget".to_string(),
        };
    }
    let lower = message.to_lowercase();
    if lower.contains("out of memory") || lower.contains("allocat") {
        return SandboxError::failed(format!(
            "the script ran out of memory (tools.runtime.memory_bytes): {message}"
        ));
    }
    if lower.contains("call stack") || lower.contains("stack overflow") {
        return SandboxError::failed(format!(
            "the script ran out of stack, too deep a recursion (tools.runtime.stack_bytes): {message}"
        ));
    }
    SandboxError::failed(message)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn limits() -> Limits {
        Limits {
            memory_bytes: 16 << 20,
            stack_bytes: 256 << 10,
            max_output_bytes: 65_536,
            time: Duration::from_secs(2),
        }
    }

    #[test]
    fn runs_a_function_on_its_input() {
        let out = run(
            "function run(input) { return {n: input.words.length}; }",
            &json!({"words": ["a", "b"]}),
            limits(),
            &Host::default(),
        );
        assert_eq!(out, Ok(json!({"n": 2})));
    }

    #[test]
    fn an_async_run_is_awaited() {
        let out = run(
            "async function run(input) { return await Promise.resolve(input.x + 1); }",
            &json!({"x": 1}),
            limits(),
            &Host::default(),
        );
        assert_eq!(out, Ok(json!(2)));
    }

    #[test]
    fn a_thrown_error_is_a_failure_with_its_message() {
        let e = run(
            "function run() { throw new TypeError('bad thing'); }",
            &json!({}),
            limits(),
            &Host::default(),
        )
        .unwrap_err();
        assert_eq!(e.kind, ToolErrorKind::Failed);
        assert!(e.message.contains("TypeError: bad thing"), "{e:?}");
    }

    #[test]
    fn no_run_function_is_a_failure() {
        let e = run("var x = 1;", &json!({}), limits(), &Host::default()).unwrap_err();
        assert!(e.message.contains("function run"), "{e:?}");
    }
}
