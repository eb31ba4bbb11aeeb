//! The client's decisions ([`acp_client`]) for JavaScript (feature `client`): which permission
//! option an automatic or dismissed answer picks, which file writes need the user's question,
//! the `terminal/create` question's text, the environment allowlist, which `authMethods` entry
//! to use, the JSON-RPC error of each fs/terminal failure, and the terminal limits.
//!
//! Mechanical like the rest of the wrapper: each export checks and parses its arguments, calls
//! one `acp_client` function and hands its result over as a plain JS object, whose shape is
//! exactly the `expect` of the case tables in `tests/client/*.json` (serde writes both). The
//! rules themselves live only in `acp-client`; the extension and the browser client call these
//! instead of keeping their own copies.
//!
//! Structured arguments are JSON text (`optionsJson`, `factsJson`, `ownDirsJson`, `requestJson`,
//! `userEnvJson`: `JSON.stringify` of the case tables' inputs), parsed into a
//! `serde_json::Value` and read field by field rather than through acp-client's derived
//! `Deserialize` (which cost the module about 20 KB more of its 250 KB budget). A non-string,
//! invalid JSON or JSON of another shape is a `TypeError` naming the argument and the shape it
//! must have. Enum names (`mode`, `reason`, option kinds, `failure`) are matched against
//! acp-client's own serde names. The first decisions' results are written by serde and handed
//! over as plain objects (one `JSON.parse`); the later ones (`chooseAuth`, `failureError`,
//! `terminalLimits`, like [`crate::thread`] and [`crate::session_engine`]) return serde's JSON text
//! itself, for the caller to parse or pass on.

use acp_client::auth::{self, AuthMethod};
use acp_client::display;
use acp_client::env;
use acp_client::errors::Failure;
use acp_client::permission::{self, AutoMode, OptionKind, PermissionOption};
use acp_client::prompt::{self, Attachment, PromptCapabilities};
use acp_client::terminal::{self, CommandRequest, EnvVariable};
use acp_client::writes::{self, FileFacts, Sensitive};
use js_sys::Array;
use serde::Serialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::errors::type_error;

#[allow(dead_code)] // read through the custom section
const TS_TYPES: &str = r#"
/** The kind of a permission option; kinds this version does not know are kept as strings and
 *  never chosen automatically. */
export type PermissionOptionKind = "allow_once" | "allow_always" | "reject_once" | "reject_always" | (string & {});

/** An agent's `PermissionOption`, as far as the decision needs it (other fields are ignored). */
export interface PermissionOptionInput { optionId: string; name?: string | null; kind: PermissionOptionKind }

/** How automatic answers were set: every question to the user, approve this call only,
 *  approve persisting the agent's "always" rule (asked for by name), refuse this call only. */
export type PermissionMode = "ask" | "allow_once" | "allow_always" | "deny";

/** Why a question is answered `cancelled` (send `session/cancel` for the session first). */
export type PermissionCancelReason = "no_options" | "no_reject_once" | "dismissed" | "unanswerable";

/** What to answer a `session/request_permission` (tests/client/permission.json). */
export type PermissionDecision =
  | { answer: "ask" }
  | { answer: "select"; optionId: string; kind: PermissionOptionKind }
  | { answer: "cancelled"; reason: PermissionCancelReason };

/** What the face knows of a file before writing it (absent: false). */
export interface FileFacts { exists?: boolean | null; executable?: boolean | null }

/** Why a write needs the user's question (`client_files`: under the client's own directories;
 *  `agent_config`: another coding agent's configuration). */
export type WriteReason = "git" | "editor" | "shell" | "environment" | "tool" | "executable" | "client_files" | "agent_config";

/** The decision for one write (tests/client/writes.json). */
export type WriteClass = { class: "ordinary" } | { class: "ask"; reason: WriteReason };

/** The parts of a `terminal/create` request its question is about. */
export interface TerminalCommandRequest {
  command: string;
  args?: string[] | null;
  cwd?: string | null;
  env?: Array<{ name: string; value: string }> | null;
}

/** One variable of the request's `env` compared with the user's environment. */
export interface TerminalEnvChange { name: string; value: string; change: "added" | "changed" | "same" }

/** Why a `terminal/create` is refused before anyone is asked. */
export type TerminalInvalid =
  | { reason: "env_name"; name: string }
  | { reason: "nul"; field: string }
  | { reason: "empty_command" };

/** The `terminal/create` question (tests/client/terminal.json): every agent-supplied field on
 *  one line, escaped; `env` lists the variables the request adds or changes, with values. */
export type TerminalQuestion =
  | { question: { title: string; commandLine: string; cwd: string | null; env: TerminalEnvChange[]; warnings: string[] } }
  | { invalid: TerminalInvalid };

/** An agent's `AuthMethod`, as far as the choice needs it (other fields are ignored). */
export interface AuthMethodInput {
  id: string;
  name?: string;
  description?: string | null;
  /** "agent" (also when absent), "env_var", "terminal", or a type this version does not know. */
  type?: string | null;
  varName?: string | null;
  vars?: Array<{ name: string; optional?: boolean }>;
}

/** What to do when the agent needs authentication (tests/client/auth.json; the JSON text
 *  `chooseAuth` returns). */
export type AuthChoice =
  | { choice: "authenticate"; methodId: string; why: string }
  | { choice: "terminal"; methodId: string }
  | { choice: "needs_user"; message: string };

/** How an fs/* or terminal/* request failed (tests/client/errors.json). */
export type FailureName = "relative_path" | "invalid_path" | "is_a_directory" | "outside_roots"
  | "not_found" | "unknown_terminal" | "too_large" | "not_text" | "permission_denied"
  | "invalid_command" | "command_not_found" | "spawn_failed" | "too_many_terminals"
  | "answer_budget" | "io";

/** The JSON-RPC error to answer for a failure: its `code`, and `reason` for `data.reason`
 *  (the JSON text `failureError` returns). */
export interface FailureError { code: number; reason: FailureName }

/** Terminal limits every face applies (the JSON text `terminalLimits` returns). */
/** What the user attached to a prompt, as the face found it (tests/client/prompt.json). */
export type PromptAttachment =
  | { kind: "file"; uri: string; name: string; mimeType?: string | null; size?: number | null; text?: string | null }
  | { kind: "symbol"; uri: string; name: string; line: number }
  | { kind: "selection"; uri: string; name: string; lines: { start: number; end: number }; text: string; language?: string | null }
  | { kind: "image"; name: string; mimeType: string; data: string };

/** The content block to send for an attachment, or why it is refused. */
export type PromptAttachDecision = { block: { type: string; [k: string]: unknown } } | { refuse: string };

/** Limits of `attachToPrompt`: text embedded at most, image bytes at most, image types sent. */
export interface PromptLimits { maxEmbedBytes: number; maxImageBytes: number; imageTypes: string[] }

export interface TerminalLimits {
  /** Output kept per terminal when the request names no `outputByteLimit` (and the most kept). */
  maxOutputBytes: number;
  /** Terminals an agent may have unreleased at once. */
  maxTerminals: number;
  /** `terminal/kill`: SIGTERM to the group, then SIGKILL after this many ms. */
  killGraceMs: number;
}
"#;

#[wasm_bindgen(typescript_custom_section)]
const TS_SECTION: &'static str = TS_TYPES;

// ----- reading arguments -----

/// JSON text parsed into a [`Value`] (the parse the wrapper already has for error `data`); a
/// non-string or invalid JSON is `None`.
fn json(text: &JsValue) -> Option<Value> {
    serde_json::from_str(&text.as_string()?).ok()
}

/// A string field, or `None` when absent or `null`; `Err(())` for another type.
fn optional_str(v: Option<&Value>) -> Result<Option<String>, ()> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(()),
    }
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key)?.as_str().map(str::to_string)
}

/// An array field; absent or `null` reads as empty. `None`: another type.
fn array_field<'a>(v: &'a Value, key: &str) -> Option<&'a [Value]> {
    match v.get(key) {
        None | Some(Value::Null) => Some(&[]),
        Some(Value::Array(a)) => Some(a),
        Some(_) => None,
    }
}

/// The serde name of a unit variant (`"allow_once"`), without the quotes.
pub(crate) fn wire_name<T: Serialize>(value: &T) -> String {
    let quoted = serde_json::to_string(value).unwrap_or_default();
    quoted.trim_matches('"').to_string()
}

/// The variant of `all` whose serde name is `name`.
pub(crate) fn by_name<T: Serialize>(all: impl IntoIterator<Item = T>, name: &str) -> Option<T> {
    all.into_iter().find(|v| wire_name(v) == name)
}

/// Every variant of acp-client's enums read by name (tests check the lists are complete).
const KINDS: [OptionKind; 4] = [
    OptionKind::AllowOnce,
    OptionKind::AllowAlways,
    OptionKind::RejectOnce,
    OptionKind::RejectAlways,
];

const MODES: [AutoMode; 4] = [
    AutoMode::Ask,
    AutoMode::AllowOnce,
    AutoMode::AllowAlways,
    AutoMode::Deny,
];
pub(crate) const REASONS: [Sensitive; 8] = [
    Sensitive::Git,
    Sensitive::Editor,
    Sensitive::Shell,
    Sensitive::Environment,
    Sensitive::Tool,
    Sensitive::Executable,
    Sensitive::ClientFiles,
    Sensitive::AgentConfig,
];

/// Every way an fs/terminal request fails, read by name (`failureError`).
const FAILURES: [Failure; 15] = [
    Failure::RelativePath,
    Failure::InvalidPath,
    Failure::IsADirectory,
    Failure::OutsideRoots,
    Failure::NotFound,
    Failure::UnknownTerminal,
    Failure::TooLarge,
    Failure::NotText,
    Failure::PermissionDenied,
    Failure::InvalidCommand,
    Failure::CommandNotFound,
    Failure::SpawnFailed,
    Failure::TooManyTerminals,
    Failure::AnswerBudget,
    Failure::Io,
];

/// A kind as acp-client's (untagged) deserializer reads it: a known name, else `Other`.
fn option_kind(name: String) -> OptionKind {
    by_name(KINDS, &name).unwrap_or(OptionKind::Other(name))
}

fn options_arg(options_json: &JsValue) -> Result<Vec<PermissionOption>, JsValue> {
    let read = || -> Option<Vec<PermissionOption>> {
        let mut out = Vec::new();
        for o in json(options_json)?.as_array()? {
            out.push(PermissionOption {
                option_id: str_field(o, "optionId")?,
                name: optional_str(o.get("name")).ok()?.unwrap_or_default(),
                kind: option_kind(str_field(o, "kind")?),
            });
        }
        Some(out)
    };
    read().ok_or_else(|| {
        type_error("optionsJson must be the JSON text of an array of permission options ({optionId: string, name?: string, kind: string})")
    })
}

fn command_request(request_json: &JsValue) -> Result<CommandRequest, JsValue> {
    let read = || -> Option<CommandRequest> {
        let r = json(request_json)?;
        let mut args = Vec::new();
        for a in array_field(&r, "args")? {
            args.push(a.as_str()?.to_string());
        }
        let mut env = Vec::new();
        for v in array_field(&r, "env")? {
            env.push(EnvVariable {
                name: str_field(v, "name")?,
                value: str_field(v, "value")?,
            });
        }
        Some(CommandRequest {
            command: str_field(&r, "command")?,
            args,
            cwd: optional_str(r.get("cwd")).ok()?,
            env,
        })
    };
    read().ok_or_else(|| {
        type_error("requestJson must be the JSON text of {command: string, args?: string[], cwd?: string | null, env?: {name: string, value: string}[]}")
    })
}

/// A result as a plain JS object (one `JSON.parse` of what serde wrote).
fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsValue> {
    js_sys::JSON::parse(&serde_json::to_string(value).unwrap_or_default())
}

// ----- exports -----

/// The answer to a permission request before anyone is asked: an automatic one for `mode`, or
/// `{answer: "ask"}`.
#[wasm_bindgen(js_name = decidePermission, unchecked_return_type = "PermissionDecision")]
pub fn decide_permission(
    #[wasm_bindgen(js_name = optionsJson, unchecked_param_type = "string")] options_json: JsValue,
    #[wasm_bindgen(unchecked_param_type = "PermissionMode")] mode: JsValue,
) -> Result<JsValue, JsValue> {
    let options = options_arg(&options_json)?;
    let mode = mode
        .as_string()
        .and_then(|m| by_name(MODES, &m))
        .ok_or_else(|| {
            type_error("mode must be one of \"ask\", \"allow_once\", \"allow_always\", \"deny\"")
        })?;
    to_js(&permission::decide(&options, mode))
}

/// The answer when the user dismissed the question (Escape, a closed dialog).
#[wasm_bindgen(js_name = dismissedPermission, unchecked_return_type = "PermissionDecision")]
pub fn dismissed_permission(
    #[wasm_bindgen(js_name = optionsJson, unchecked_param_type = "string")] options_json: JsValue,
) -> Result<JsValue, JsValue> {
    to_js(&permission::dismissed(&options_arg(&options_json)?))
}

/// The answer when no one can answer (end of input, the window closing).
#[wasm_bindgen(js_name = unanswerablePermission, unchecked_return_type = "PermissionDecision")]
pub fn unanswerable_permission() -> Result<JsValue, JsValue> {
    to_js(&permission::unanswerable())
}

/// The option a typed answer names (its 1-based number), or `null`: ask again.
#[wasm_bindgen(js_name = chosenPermission, unchecked_return_type = "PermissionDecision | null")]
pub fn chosen_permission(
    #[wasm_bindgen(js_name = optionsJson, unchecked_param_type = "string")] options_json: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string")] typed: JsValue,
) -> Result<JsValue, JsValue> {
    let options = options_arg(&options_json)?;
    let typed = typed
        .as_string()
        .ok_or_else(|| type_error("typed must be a string"))?;
    match permission::chosen(&options, &typed) {
        Some(d) => to_js(&d),
        None => Ok(JsValue::NULL),
    }
}

/// Whether a write to `path` (the real path it reaches: symlinks resolved) needs the user's
/// question. `ownDirsJson`: the JSON text of the client's own directories (absolute, real
/// paths: the registry cache it reads, its storage), `[]` for none.
#[wasm_bindgen(js_name = classifyWrite, unchecked_return_type = "WriteClass")]
pub fn classify_write(
    #[wasm_bindgen(unchecked_param_type = "string")] path: JsValue,
    #[wasm_bindgen(js_name = factsJson, unchecked_param_type = "string")] facts_json: JsValue,
    #[wasm_bindgen(js_name = ownDirsJson, unchecked_param_type = "string")] own_dirs_json: JsValue,
) -> Result<JsValue, JsValue> {
    let path = path
        .as_string()
        .ok_or_else(|| type_error("path must be a string"))?;
    let read = || -> Option<FileFacts> {
        let f = json(&facts_json)?;
        let flag = |key: &str| match f.get(key) {
            None | Some(Value::Null) => Some(false),
            Some(v) => v.as_bool(),
        };
        f.is_object().then_some(())?;
        Some(FileFacts {
            exists: flag("exists")?,
            executable: flag("executable")?,
        })
    };
    let facts = read().ok_or_else(|| {
        type_error("factsJson must be the JSON text of {exists?: boolean, executable?: boolean}")
    })?;
    let own = json(&own_dirs_json)
        .and_then(|v| match v {
            Value::Array(dirs) => dirs
                .into_iter()
                .map(|d| match d {
                    Value::String(d) => Some(d),
                    _ => None,
                })
                .collect::<Option<Vec<String>>>(),
            _ => None,
        })
        .ok_or_else(|| type_error("ownDirsJson must be the JSON text of an array of paths"))?;
    to_js(&writes::classify(&path, facts, &writes::OwnDirs::new(&own)))
}

/// Why a write of this reason needs the question, in words for it ("git runs what its
/// directory configures (hooks, core.fsmonitor, filters)").
#[wasm_bindgen(js_name = describeWriteReason)]
pub fn describe_write_reason(
    #[wasm_bindgen(unchecked_param_type = "WriteReason")] reason: JsValue,
) -> Result<String, JsValue> {
    reason
        .as_string()
        .and_then(|r| by_name(REASONS, &r))
        .map(|r| r.describe().into())
        .ok_or_else(|| {
            type_error("reason must be one of \"git\", \"editor\", \"shell\", \"environment\", \"tool\", \"executable\", \"client_files\", \"agent_config\"")
        })
}

/// Checks a `terminal/create` request and builds its question. `requestJson`: `command`,
/// `args`, `cwd`, `env` as the agent sent them; `userEnvJson`: the variables the command gets
/// without the request's `env` (an object, name to value).
#[wasm_bindgen(js_name = terminalQuestion, unchecked_return_type = "TerminalQuestion")]
pub fn terminal_question(
    #[wasm_bindgen(js_name = requestJson, unchecked_param_type = "string")] request_json: JsValue,
    #[wasm_bindgen(js_name = userEnvJson, unchecked_param_type = "string")] user_env_json: JsValue,
) -> Result<JsValue, JsValue> {
    let request = command_request(&request_json)?;
    let base = json(&user_env_json)
        .and_then(|v| match v {
            Value::Object(map) => map
                .into_iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Some((k, s)),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>(),
            _ => None,
        })
        .ok_or_else(|| {
            type_error("userEnvJson must be the JSON text of an object of strings (name to value)")
        })?;
    let lookup = |n: &str| base.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    // `{"question": …}` or `{"invalid": …}`, written around serde's text of the value.
    let (key, inner) = match terminal::question(&request, lookup) {
        Ok(q) => ("question", serde_json::to_string(&q)),
        Err(e) => ("invalid", serde_json::to_string(&e)),
    };
    js_sys::JSON::parse(&format!("{{\"{key}\":{}}}", inner.unwrap_or_default()))
}

/// The message of the error answered to the agent when `terminalQuestion` refuses this request
/// (one line), or `undefined` when it does not refuse it.
#[wasm_bindgen(js_name = terminalInvalidMessage)]
pub fn terminal_invalid_message(
    #[wasm_bindgen(js_name = requestJson, unchecked_param_type = "string")] request_json: JsValue,
) -> Result<Option<String>, JsValue> {
    let request = command_request(&request_json)?;
    // Refusals do not depend on the user's environment.
    Ok(terminal::question(&request, |_| None)
        .err()
        .map(|e| e.message()))
}

/// `text` on one line, as every face shows agent-supplied text in a question: newlines, escape
/// sequences, other controls, bidi overrides and zero-width characters written as `\n`, `\e`,
/// `\x07`, `\u202e`…, backslashes doubled (so escapes cannot be forged). A non-string is a
/// `TypeError`.
#[wasm_bindgen(js_name = escapeLine)]
pub fn escape_line(
    #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
) -> Result<String, JsValue> {
    let text = text
        .as_string()
        .ok_or_else(|| type_error("text must be a string"))?;
    Ok(display::escape_line(&text))
}

/// The host variables agents and their commands get by default (a trailing `*` matches a
/// prefix), in order.
#[wasm_bindgen(js_name = envAllowlist, unchecked_return_type = "string[]")]
pub fn env_allowlist() -> Array {
    env::DEFAULT_ALLOWLIST
        .iter()
        .map(|p| JsValue::from_str(p))
        .collect()
}

/// Whether `name` is a portable variable name (`[A-Za-z_][A-Za-z0-9_]*`); any other value,
/// a non-string included, is not.
#[wasm_bindgen(js_name = validEnvName)]
pub fn valid_env_name(#[wasm_bindgen(unchecked_param_type = "string")] name: JsValue) -> bool {
    name.as_string().is_some_and(|n| env::valid_name(&n))
}

/// Which `authMethods` entry to use when the agent says authentication is required (JSON text
/// of an `AuthChoice`). `methodsJson`: the agent's `authMethods`; `setVarsJson`: the names of
/// the variables set (non-empty) in the environment the agent gets; `requested`: the method id
/// the user named, or `null`.
#[wasm_bindgen(js_name = chooseAuth)]
pub fn choose_auth(
    #[wasm_bindgen(js_name = methodsJson, unchecked_param_type = "string")] methods_json: JsValue,
    #[wasm_bindgen(js_name = setVarsJson, unchecked_param_type = "string")] set_vars_json: JsValue,
    #[wasm_bindgen(unchecked_param_type = "string | null")] requested: JsValue,
) -> Result<String, JsValue> {
    let methods: Vec<AuthMethod> = methods_json
        .as_string()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(|| {
            type_error("methodsJson must be the JSON text of an array of auth methods ({id: string, name?: string, description?: string | null, type?: string, varName?: string, vars?: {name: string, optional?: boolean}[]})")
        })?;
    let set: Vec<String> = set_vars_json
        .as_string()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(|| {
            type_error("setVarsJson must be the JSON text of an array of variable names (strings)")
        })?;
    let requested = match requested.as_string() {
        Some(id) => Some(id),
        None if requested.is_null() || requested.is_undefined() => None,
        None => {
            return Err(type_error(
                "requested must be a string (a method id) or null",
            ))
        }
    };
    let choice = auth::choose(
        &methods,
        |v| set.iter().any(|s| s == v),
        requested.as_deref(),
    );
    Ok(serde_json::to_string(&choice).unwrap_or_default())
}

/// The JSON-RPC error every face answers for an fs/terminal failure: JSON text of
/// `{code, reason}` (`reason` goes in the error's `data.reason`).
#[wasm_bindgen(js_name = failureError)]
pub fn failure_error(
    #[wasm_bindgen(unchecked_param_type = "FailureName")] failure: JsValue,
) -> Result<String, JsValue> {
    let failure = failure
        .as_string()
        .and_then(|f| by_name(FAILURES, &f))
        .ok_or_else(|| {
            type_error("failure must be the name of an fs/terminal failure (\"relative_path\", \"not_found\", \"permission_denied\", …: see FailureName)")
        })?;
    #[derive(Serialize)]
    struct Answer {
        code: i64,
        reason: &'static str,
    }
    let answer = Answer {
        code: failure.code(),
        reason: failure.reason(),
    };
    Ok(serde_json::to_string(&answer).unwrap_or_default())
}

/// The content block an attachment is sent as, per the agent's `promptCapabilities`, or why it
/// is refused (JSON text of `{"block": ContentBlock}` or `{"refuse": message}`;
/// tests/client/prompt.json). `capsJson`: the agent's `promptCapabilities` (or `null`);
/// `attachmentJson`: a `PromptAttachment`.
#[wasm_bindgen(js_name = attachToPrompt)]
pub fn attach_to_prompt(
    #[wasm_bindgen(js_name = capsJson, unchecked_param_type = "string")] caps_json: JsValue,
    #[wasm_bindgen(js_name = attachmentJson, unchecked_param_type = "string")]
    attachment_json: JsValue,
) -> Result<String, JsValue> {
    let caps: Option<PromptCapabilities> = caps_json
        .as_string()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(|| {
            type_error("capsJson must be the JSON text of the agent's promptCapabilities ({image?: boolean, audio?: boolean, embeddedContext?: boolean}) or null")
        })?;
    let attachment = json(&attachment_json)
        .and_then(|v| Attachment::from_json(&v).ok())
        .ok_or_else(|| {
            type_error("attachmentJson must be the JSON text of a PromptAttachment ({kind: \"file\", uri, name, mimeType?, size?, text?} | {kind: \"symbol\", uri, name, line} | {kind: \"selection\", uri, name, lines: {start, end}, text, language?} | {kind: \"image\", name, mimeType, data})")
        })?;
    Ok(
        serde_json::to_string(&prompt::attach(caps.unwrap_or_default(), &attachment))
            .unwrap_or_default(),
    )
}

/// The prompt limits (`acp_client::prompt`): JSON text of `{maxEmbedBytes, maxImageBytes,
/// imageTypes}`.
#[wasm_bindgen(js_name = promptLimits)]
pub fn prompt_limits() -> String {
    serde_json::json!({
        "maxEmbedBytes": prompt::MAX_EMBED_BYTES,
        "maxImageBytes": prompt::MAX_IMAGE_BYTES,
        "imageTypes": prompt::IMAGE_TYPES,
    })
    .to_string()
}

/// The terminal limits (`acp_client::terminal`): JSON text of
/// `{maxOutputBytes, maxTerminals, killGraceMs}`.
#[wasm_bindgen(js_name = terminalLimits)]
pub fn terminal_limits() -> String {
    format!(
        "{{\"maxOutputBytes\":{},\"maxTerminals\":{},\"killGraceMs\":{}}}",
        terminal::MAX_OUTPUT_BYTES,
        terminal::MAX_TERMINALS,
        terminal::KILL_GRACE_MS
    )
}

#[cfg(test)]
mod tests {
    use super::{by_name, option_kind, FAILURES, KINDS, MODES, REASONS, TS_TYPES};
    use acp_client::auth::AuthChoice;
    use acp_client::errors::Failure;
    use acp_client::permission::{AutoMode, CancelReason, OptionKind};
    use acp_client::writes::Sensitive;

    /// The TypeScript above is written by hand: it names every wire name.
    fn in_ts(name: &str) {
        assert!(
            TS_TYPES.contains(&format!("\"{name}\"")),
            "{name:?} is missing from the TypeScript types in policy.rs"
        );
    }

    fn name<T: serde::Serialize>(v: &T) -> String {
        serde_json::to_value(v)
            .unwrap()
            .as_str()
            .unwrap()
            .to_string()
    }

    /// The lists read by name hold every variant: the matches are exhaustive, so a new variant
    /// in acp-client fails to compile here until it is listed.
    #[test]
    fn every_variant_is_listed_and_typed() {
        let kind = |k: &OptionKind| match k {
            OptionKind::AllowOnce
            | OptionKind::AllowAlways
            | OptionKind::RejectOnce
            | OptionKind::RejectAlways => true,
            OptionKind::Other(_) => false,
        };
        assert_eq!(KINDS.iter().filter(|k| kind(k)).count(), 4);
        let mode = |m: &AutoMode| match m {
            AutoMode::Ask | AutoMode::AllowOnce | AutoMode::AllowAlways | AutoMode::Deny => 4,
        };
        assert_eq!(MODES.len(), mode(&MODES[0]));
        let reason = |r: &Sensitive| match r {
            Sensitive::Git
            | Sensitive::Editor
            | Sensitive::Shell
            | Sensitive::Environment
            | Sensitive::Tool
            | Sensitive::Executable
            | Sensitive::ClientFiles
            | Sensitive::AgentConfig => 8,
        };
        assert_eq!(REASONS.len(), reason(&REASONS[0]));
        for k in &KINDS {
            in_ts(&name(k));
        }
        for m in &MODES {
            in_ts(&name(m));
            assert_eq!(by_name(MODES, &name(m)).as_ref(), Some(m));
        }
        for r in &REASONS {
            in_ts(&name(r));
            assert_eq!(by_name(REASONS, &name(r)).as_ref(), Some(r));
        }
        for r in [
            CancelReason::NoOptions,
            CancelReason::NoRejectOnce,
            CancelReason::Dismissed,
            CancelReason::Unanswerable,
        ] {
            in_ts(&name(&r));
        }
        assert_eq!(by_name(REASONS, "Git"), None, "names are matched exactly");
        let failure = |f: &Failure| match f {
            Failure::RelativePath
            | Failure::InvalidPath
            | Failure::IsADirectory
            | Failure::OutsideRoots
            | Failure::NotFound
            | Failure::UnknownTerminal
            | Failure::TooLarge
            | Failure::NotText
            | Failure::PermissionDenied
            | Failure::InvalidCommand
            | Failure::CommandNotFound
            | Failure::SpawnFailed
            | Failure::TooManyTerminals
            | Failure::AnswerBudget
            | Failure::Io => 15,
        };
        assert_eq!(FAILURES.len(), failure(&FAILURES[0]));
        for f in &FAILURES {
            in_ts(&name(f));
            assert_eq!(by_name(FAILURES, &name(f)).as_ref(), Some(f));
            assert_eq!(name(f), f.reason(), "the wire name is data.reason");
        }
        let choice = |c: &AuthChoice| match c {
            AuthChoice::Authenticate { .. } => "authenticate",
            AuthChoice::Terminal { .. } => "terminal",
            AuthChoice::NeedsUser { .. } => "needs_user",
        };
        for c in [
            AuthChoice::Authenticate {
                method_id: String::new(),
                why: String::new(),
            },
            AuthChoice::Terminal {
                method_id: String::new(),
            },
            AuthChoice::NeedsUser {
                message: String::new(),
            },
        ] {
            let v = serde_json::to_value(&c).unwrap();
            assert_eq!(v["choice"], choice(&c));
            in_ts(choice(&c));
        }
    }

    /// `option_kind` reads kinds as acp-client's (untagged) deserializer does.
    #[test]
    fn option_kinds_read_like_serde() {
        for text in [
            "allow_once",
            "allow_always",
            "reject_once",
            "reject_always",
            "allow_sometimes",
            "",
        ] {
            let serde: OptionKind = serde_json::from_value(text.into()).unwrap();
            assert_eq!(option_kind(text.to_string()), serde, "{text}");
        }
    }
}
