//! The capabilities the engine acts on, as `initialize` exchanged them, and the rules that
//! depend on them. With [`Config::enforce_capabilities`](crate::Config::enforce_capabilities)
//! (on by default) both roles hold to them:
//!
//! - an agent calls `fs/read_text_file`, `fs/write_text_file` and the `terminal/*` methods only
//!   when the client advertised `fs.readTextFile`, `fs.writeTextFile` and `terminal`
//!   ([`required_client_capability`]);
//! - an agent sends `session/update`s of the kinds `plan_update` / `plan_removed` (client
//!   capability `plan`), `subagent_update` / `session_message` / `session_message_chunk`
//!   (`subagents`), `notice` (`session.notices`) and `compaction_update` /
//!   `compaction_summary_chunk` (`session.compaction`) only to a client that advertised them
//!   ([`required_client_capability_for_update`]); a client that receives one it did not
//!   advertise reports it ([`PeerErrorKind::CapabilityNotAdvertised`](crate::PeerErrorKind))
//!   and drops it, but for `notice` and the compaction kinds, which it reports and delivers
//!   ([`client_drops`]: they were passed on before they were gated, and faces show what they
//!   do not know, as `acp chat --json` prints it);
//! - a client sends a `systemPrompt` in `session/new`, `session/load` or `session/resume`
//!   ([`SYSTEM_PROMPT_METHODS`]) only when the agent advertised
//!   `sessionCapabilities.systemPrompt`, and in the mode `override` only with
//!   `sessionCapabilities.systemPrompt.mode.override`.
//!
//! With the feature `unstable` the draft capabilities are read too (the fields marked so
//! below); `acp_core::unstable` lists the rules that use them.
//!
//! Local refusals are [`Error::CapabilityNotAdvertised`](crate::Error::CapabilityNotAdvertised).
//! A capability object that is present (even `{}`) counts as advertised; `null`, absent or
//! malformed as not, and a malformed part never hides the rest (the schema's
//! `DefaultOnError`).

use serde_json::value::RawValue;

use super::{agent, client, Role};

/// The capability a client must advertise before an agent may call `method`, if any:
/// `fs.readTextFile`, `fs.writeTextFile` or `terminal` (a path in `clientCapabilities`). An
/// agent connection with [`Config::enforce_capabilities`](crate::Config::enforce_capabilities)
/// refuses such a call with
/// [`Error::CapabilityNotAdvertised`](crate::Error::CapabilityNotAdvertised) unless
/// [`ClientCapabilities::allows`] it.
pub fn required_client_capability(method: &str) -> Option<&'static str> {
    match method {
        client::FS_READ_TEXT_FILE => Some("fs.readTextFile"),
        client::FS_WRITE_TEXT_FILE => Some("fs.writeTextFile"),
        client::TERMINAL_CREATE
        | client::TERMINAL_OUTPUT
        | client::TERMINAL_WAIT_FOR_EXIT
        | client::TERMINAL_KILL
        | client::TERMINAL_RELEASE => Some("terminal"),
        _ => None,
    }
}

/// The client capability an agent needs before sending a `session/update` of this kind (its
/// `sessionUpdate`), if any (a path in `clientCapabilities`). With the feature `unstable`,
/// also the draft kinds: `prompt_suggestions_update` (`session.promptSuggestions`) and
/// `cursor_update` (`session.cursors`).
pub fn required_client_capability_for_update(kind: &str) -> Option<&'static str> {
    match kind {
        "plan_update" | "plan_removed" => Some("plan"),
        "subagent_update" | "session_message" | "session_message_chunk" => Some("subagents"),
        "notice" => Some("session.notices"),
        "compaction_update" | "compaction_summary_chunk" => Some("session.compaction"),
        #[cfg(feature = "unstable")]
        crate::unstable::PROMPT_SUGGESTIONS_UPDATE => Some("session.promptSuggestions"),
        #[cfg(feature = "unstable")]
        crate::unstable::CURSOR_UPDATE => Some("session.cursors"),
        _ => None,
    }
}

/// Whether a client drops a `session/update` that needs `capability` (a path
/// [`required_client_capability_for_update`] returns) it did not advertise, after reporting
/// it. `session.notices` and `session.compaction` are reported and delivered: this engine passed
/// those kinds on before it gated them, and a face shows kinds it does not know (acp chat's
/// `--json` prints them verbatim), while an agent of ours never sends them unasked.
pub fn client_drops(capability: &str) -> bool {
    !matches!(capability, "session.notices" | "session.compaction")
}

/// Session methods that may carry a `systemPrompt` (agent capability
/// `sessionCapabilities.systemPrompt`; with the feature `unstable`, also `session/fork`).
#[cfg(not(feature = "unstable"))]
pub const SYSTEM_PROMPT_METHODS: &[&str] = &[
    agent::SESSION_NEW,
    agent::SESSION_LOAD,
    agent::SESSION_RESUME,
];
/// Session methods that may carry a `systemPrompt` (agent capability
/// `sessionCapabilities.systemPrompt`; with the feature `unstable`, also `session/fork`).
#[cfg(feature = "unstable")]
pub const SYSTEM_PROMPT_METHODS: &[&str] = &[
    agent::SESSION_NEW,
    agent::SESSION_LOAD,
    agent::SESSION_RESUME,
    crate::unstable::SESSION_FORK,
];

/// The client capabilities the engine acts on (read from `initialize` params; all else is
/// ignored here and left to the application).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientCapabilities {
    /// `fs.readTextFile` is `true`: the agent may call `fs/read_text_file`.
    pub read_text_file: bool,
    /// `fs.writeTextFile` is `true`: the agent may call `fs/write_text_file`.
    pub write_text_file: bool,
    /// `terminal` is `true`: the agent may call the `terminal/*` methods.
    pub terminal: bool,
    /// `plan`: `plan_update` and `plan_removed` session updates.
    pub plan: bool,
    /// `subagents`: `subagent_update`, `session_message` and `session_message_chunk`.
    pub subagents: bool,
    /// `session.notices`: `notice` session updates.
    pub notices: bool,
    /// `session.compaction`: `compaction_update` and `compaction_summary_chunk`.
    pub compaction: bool,
    /// `session.promptSuggestions` (feature `unstable`): `prompt_suggestions_update` with
    /// suggestions made of `text` and `resource_link` blocks.
    #[cfg(feature = "unstable")]
    pub prompt_suggestions: bool,
    /// `session.promptSuggestions.image` (feature `unstable`): suggestions may hold `image`
    /// blocks.
    #[cfg(feature = "unstable")]
    pub prompt_suggestions_image: bool,
    /// `session.promptSuggestions.audio` (feature `unstable`): suggestions may hold `audio`
    /// blocks.
    #[cfg(feature = "unstable")]
    pub prompt_suggestions_audio: bool,
    /// `session.promptSuggestions.embeddedContext` (feature `unstable`): suggestions may hold
    /// `resource` blocks.
    #[cfg(feature = "unstable")]
    pub prompt_suggestions_embedded_context: bool,
    /// `session.cursors` (feature `unstable`): `cursor_update` session updates.
    #[cfg(feature = "unstable")]
    pub cursors: bool,
}

impl ClientCapabilities {
    /// Whether `capability` (a path [`required_client_capability`] or
    /// [`required_client_capability_for_update`] returns) was advertised. A path the engine
    /// does not track is allowed.
    pub fn allows(&self, capability: &str) -> bool {
        match capability {
            "fs.readTextFile" => self.read_text_file,
            "fs.writeTextFile" => self.write_text_file,
            "terminal" => self.terminal,
            "plan" => self.plan,
            "subagents" => self.subagents,
            "session.notices" => self.notices,
            "session.compaction" => self.compaction,
            #[cfg(feature = "unstable")]
            "session.promptSuggestions" => self.prompt_suggestions,
            #[cfg(feature = "unstable")]
            "session.promptSuggestions.image" => self.prompt_suggestions_image,
            #[cfg(feature = "unstable")]
            "session.promptSuggestions.audio" => self.prompt_suggestions_audio,
            #[cfg(feature = "unstable")]
            "session.promptSuggestions.embeddedContext" => self.prompt_suggestions_embedded_context,
            #[cfg(feature = "unstable")]
            "session.cursors" => self.cursors,
            _ => true,
        }
    }

    /// Reads `clientCapabilities` from `initialize` params (JSON text).
    pub fn from_initialize_params(params: Option<&str>) -> Self {
        let caps = params.and_then(|p| member(p, "clientCapabilities"));
        let caps = caps.map_or("null", RawValue::get);
        let object = |keys: &[&str]| path(caps, keys).is_some_and(is_object);
        let yes = |keys: &[&str]| path(caps, keys).is_some_and(|v| v.get() == "true");
        ClientCapabilities {
            read_text_file: yes(&["fs", "readTextFile"]),
            write_text_file: yes(&["fs", "writeTextFile"]),
            terminal: yes(&["terminal"]),
            plan: object(&["plan"]),
            subagents: object(&["subagents"]),
            notices: object(&["session", "notices"]),
            compaction: object(&["session", "compaction"]),
            #[cfg(feature = "unstable")]
            prompt_suggestions: object(&["session", "promptSuggestions"]),
            #[cfg(feature = "unstable")]
            prompt_suggestions_image: object(&["session", "promptSuggestions", "image"]),
            #[cfg(feature = "unstable")]
            prompt_suggestions_audio: object(&["session", "promptSuggestions", "audio"]),
            #[cfg(feature = "unstable")]
            prompt_suggestions_embedded_context: object(&[
                "session",
                "promptSuggestions",
                "embeddedContext",
            ]),
            #[cfg(feature = "unstable")]
            cursors: object(&["session", "cursors"]),
        }
    }
}

/// The agent capabilities the engine acts on (read from the `initialize` result).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentCapabilities {
    /// `sessionCapabilities.systemPrompt`: a `systemPrompt` (mode `append`) in the
    /// [`SYSTEM_PROMPT_METHODS`].
    pub system_prompt: bool,
    /// `sessionCapabilities.systemPrompt.mode.override`: a `systemPrompt` in mode `override`.
    pub system_prompt_override: bool,
    /// `sessionCapabilities.fork` (feature `unstable`): `session/fork`.
    #[cfg(feature = "unstable")]
    pub session_fork: bool,
    /// `sessionCapabilities.archive` (feature `unstable`): `session/archive` and
    /// `session/unarchive`.
    #[cfg(feature = "unstable")]
    pub session_archive: bool,
    /// `sessionCapabilities.status` (feature `unstable`): `session/status`.
    #[cfg(feature = "unstable")]
    pub session_status: bool,
    /// `sessionCapabilities.title` (feature `unstable`): `session/set_title`.
    #[cfg(feature = "unstable")]
    pub session_title: bool,
    /// `sessionCapabilities.options` (feature `unstable`): `session/options`, and initial
    /// `configOptions` in `session/new`, `load`, `resume` and `fork`.
    #[cfg(feature = "unstable")]
    pub session_options: bool,
    /// `auth.status` (feature `unstable`): the client's `auth/status` and the agent's
    /// `auth/status_update`.
    #[cfg(feature = "unstable")]
    pub auth_status: bool,
    /// `providers` (feature `unstable`): the `providers/*` methods.
    #[cfg(feature = "unstable")]
    pub providers: bool,
    /// `mcpCapabilities.acp` (feature `unstable`): MCP servers of type `acp` in
    /// `session/new`.
    #[cfg(feature = "unstable")]
    pub mcp_acp: bool,
}

impl AgentCapabilities {
    /// Whether `capability` (a path in `agentCapabilities`: one of the fields above) was
    /// advertised. A path the engine does not track is allowed.
    pub fn allows(&self, capability: &str) -> bool {
        match capability {
            "sessionCapabilities.systemPrompt" => self.system_prompt,
            "sessionCapabilities.systemPrompt.mode.override" => self.system_prompt_override,
            #[cfg(feature = "unstable")]
            "sessionCapabilities.fork" => self.session_fork,
            #[cfg(feature = "unstable")]
            "sessionCapabilities.archive" => self.session_archive,
            #[cfg(feature = "unstable")]
            "sessionCapabilities.status" => self.session_status,
            #[cfg(feature = "unstable")]
            "sessionCapabilities.title" => self.session_title,
            #[cfg(feature = "unstable")]
            "sessionCapabilities.options" => self.session_options,
            #[cfg(feature = "unstable")]
            "auth.status" => self.auth_status,
            #[cfg(feature = "unstable")]
            "providers" => self.providers,
            #[cfg(feature = "unstable")]
            "mcpCapabilities.acp" => self.mcp_acp,
            _ => true,
        }
    }

    /// Reads them from an `initialize` result (JSON text).
    pub fn from_initialize_result(result: &str) -> Self {
        let caps = member(result, "agentCapabilities").map_or("null", RawValue::get);
        let object = |keys: &[&str]| path(caps, keys).is_some_and(is_object);
        #[cfg(feature = "unstable")]
        let session = |key: &str| object(&["sessionCapabilities", key]);
        AgentCapabilities {
            system_prompt: object(&["sessionCapabilities", "systemPrompt"]),
            system_prompt_override: object(&[
                "sessionCapabilities",
                "systemPrompt",
                "mode",
                "override",
            ]),
            #[cfg(feature = "unstable")]
            session_fork: session("fork"),
            #[cfg(feature = "unstable")]
            session_archive: session("archive"),
            #[cfg(feature = "unstable")]
            session_status: session("status"),
            #[cfg(feature = "unstable")]
            session_title: session("title"),
            #[cfg(feature = "unstable")]
            session_options: session("options"),
            #[cfg(feature = "unstable")]
            auth_status: object(&["auth", "status"]),
            #[cfg(feature = "unstable")]
            providers: object(&["providers"]),
            #[cfg(feature = "unstable")]
            mcp_acp: path(caps, &["mcpCapabilities", "acp"]).is_some_and(|v| v.get() == "true"),
        }
    }
}

/// Both sides' capabilities as one connection knows them: the client's from the `initialize`
/// params (received by an agent, sent by a client), the agent's from the `initialize` result
/// (received by a client, sent by an agent). All false before `initialize`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Advertised {
    /// The client's, from the `initialize` params.
    pub client: ClientCapabilities,
    /// The agent's, from the `initialize` result.
    pub agent: AgentCapabilities,
}

impl Advertised {
    /// The capability a notification `method` (with `params`, JSON text) sent by `role` needs
    /// and that was not advertised, if any: an agent's gated `session/update` kinds (and, with
    /// the feature `unstable`, its `auth/status_update`, which needs its own `auth.status`).
    /// The engine refuses those in `notify`; a host that queues notifications without a round
    /// trip to the engine asks this first.
    pub fn missing_for_notification(
        &self,
        role: Role,
        method: &str,
        params: Option<&str>,
    ) -> Option<&'static str> {
        if role != Role::Agent {
            return None;
        }
        #[cfg(feature = "unstable")]
        if method == crate::unstable::AUTH_STATUS_UPDATE {
            return (!self.agent.auth_status).then_some("auth.status");
        }
        if method == client::SESSION_UPDATE {
            return missing_for_update(&self.client, params?.as_bytes());
        }
        None
    }

    /// What [`Advertised::missing_for_notification`] and the client's file and terminal
    /// capabilities need, packed into bits, for a host that shares them through an atomic
    /// ([`Advertised::from_bits`] reads them back).
    pub fn to_bits(&self) -> u32 {
        let c = &self.client;
        #[cfg_attr(not(feature = "unstable"), allow(unused_mut))]
        let mut bits = u32::from(c.read_text_file)
            | u32::from(c.write_text_file) << 1
            | u32::from(c.terminal) << 2
            | u32::from(c.plan) << 3
            | u32::from(c.subagents) << 4
            | u32::from(c.notices) << 5
            | u32::from(c.compaction) << 6;
        #[cfg(feature = "unstable")]
        {
            bits |= u32::from(c.prompt_suggestions) << 7
                | u32::from(c.prompt_suggestions_image) << 8
                | u32::from(c.prompt_suggestions_audio) << 9
                | u32::from(c.prompt_suggestions_embedded_context) << 10
                | u32::from(c.cursors) << 11
                | u32::from(self.agent.auth_status) << 16;
        }
        bits
    }

    /// Capabilities back from [`Advertised::to_bits`]; those it does not carry (the agent's,
    /// but for `auth.status`) are false.
    pub fn from_bits(bits: u32) -> Advertised {
        let bit = |n: u32| bits & (1 << n) != 0;
        Advertised {
            client: ClientCapabilities {
                read_text_file: bit(0),
                write_text_file: bit(1),
                terminal: bit(2),
                plan: bit(3),
                subagents: bit(4),
                notices: bit(5),
                compaction: bit(6),
                #[cfg(feature = "unstable")]
                prompt_suggestions: bit(7),
                #[cfg(feature = "unstable")]
                prompt_suggestions_image: bit(8),
                #[cfg(feature = "unstable")]
                prompt_suggestions_audio: bit(9),
                #[cfg(feature = "unstable")]
                prompt_suggestions_embedded_context: bit(10),
                #[cfg(feature = "unstable")]
                cursors: bit(11),
            },
            agent: AgentCapabilities {
                #[cfg(feature = "unstable")]
                auth_status: bit(16),
                ..AgentCapabilities::default()
            },
        }
    }
}

/// The raw value of member `key` of the JSON object `json` (the last one if it repeats);
/// `None` when `json` is not an object or has no such member. Every capability and field the
/// engine reads goes through this one function (one instantiation of serde_json's reader: the
/// wasm build counts its bytes), the members it skips unread.
pub(crate) fn member<'a>(json: &'a str, key: &str) -> Option<&'a RawValue> {
    use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
    struct Find<'k>(&'k str);
    impl<'de> DeserializeSeed<'de> for Find<'_> {
        type Value = Option<&'de RawValue>;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
    }
    impl<'de> Visitor<'de> for Find<'_> {
        type Value = Option<&'de RawValue>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
            let mut found = None;
            while let Some(hit) = m.next_key_seed(KeyIs(self.0))? {
                if hit {
                    found = Some(m.next_value::<&'de RawValue>()?);
                } else {
                    m.next_value::<IgnoredAny>()?;
                }
            }
            Ok(found)
        }
    }
    /// Whether a key (borrowed, or unescaped into a buffer) is the one looked for.
    struct KeyIs<'k>(&'k str);
    impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
        type Value = bool;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
            d.deserialize_str(self)
        }
    }
    impl<'de> Visitor<'de> for KeyIs<'_> {
        type Value = bool;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a key")
        }
        fn visit_str<E>(self, v: &str) -> Result<bool, E> {
            Ok(v == self.0)
        }
    }
    let mut de = serde_json::Deserializer::from_str(json);
    Find(key).deserialize(&mut de).ok().flatten()
}

/// [`member`] along a path of keys.
pub(crate) fn path<'a>(json: &'a str, keys: &[&str]) -> Option<&'a RawValue> {
    let mut at = json;
    let mut found = None;
    for key in keys {
        let v = member(at, key)?;
        at = v.get();
        found = Some(v);
    }
    found
}

/// A capability object is present: an object, not `null` (anything else counts as absent).
fn is_object(v: &RawValue) -> bool {
    v.get().starts_with('{')
}

/// A string member's value, unescaped.
fn string(v: &RawValue) -> Option<String> {
    serde_json::from_str(v.get()).ok()
}

/// The client capability a `session/update` (its params, JSON text) needs and `client` did
/// not advertise, if any. Params that name no gated kind are not parsed.
pub(crate) fn missing_for_update(
    client: &ClientCapabilities,
    params: &[u8],
) -> Option<&'static str> {
    if !may_name_gated_kind(params) {
        return None;
    }
    missing_in(client, member(std::str::from_utf8(params).ok()?, "update")?)
}

/// The same for a whole `session/update` message we wrote
/// (`{"jsonrpc":..,"method":..,"params":{..}}`).
pub(crate) fn missing_for_update_message(
    client: &ClientCapabilities,
    message: &[u8],
) -> Option<&'static str> {
    if !may_name_gated_kind(message) {
        return None;
    }
    missing_in(
        client,
        path(std::str::from_utf8(message).ok()?, &["params", "update"])?,
    )
}

/// What an update (the `update` member) needs that `client` lacks.
fn missing_in(client: &ClientCapabilities, update: &RawValue) -> Option<&'static str> {
    let kind = string(member(update.get(), "sessionUpdate")?)?;
    let cap = required_client_capability_for_update(&kind)?;
    if !client.allows(cap) {
        return Some(cap);
    }
    #[cfg(feature = "unstable")]
    if kind == crate::unstable::PROMPT_SUGGESTIONS_UPDATE {
        return crate::unstable::missing_for_suggestions(client, update.get());
    }
    None
}

/// Whether a `session/update` (params or whole message) may name a gated kind: a
/// `"sessionUpdate"` key whose value is one, or escapes that could spell one (`\u…`, rare:
/// then it is parsed). One pass over the bytes for most updates.
fn may_name_gated_kind(bytes: &[u8]) -> bool {
    const KEY: &[u8] = b"\"sessionUpdate\"";
    if has_unicode_escape(bytes) {
        return true;
    }
    // Its `U`, rarer than its other bytes in what agents send.
    positions(bytes, KEY, 8).any(|at| {
        let rest = skip_ws(&bytes[at + KEY.len()..]);
        let Some(rest) = rest.strip_prefix(b":") else {
            return false;
        };
        let Some(rest) = skip_ws(rest).strip_prefix(b"\"") else {
            return false;
        };
        let Some(end) = memchr::memchr(b'"', rest) else {
            return false;
        };
        std::str::from_utf8(&rest[..end])
            .ok()
            .and_then(required_client_capability_for_update)
            .is_some()
    })
}

/// Where `needle` occurs in `hay`: found by `memchr` on its byte at `pivot`, then compared
/// (`memchr::memmem` would cost the wasm build more than the engine's other searches).
pub(crate) fn positions<'a>(
    hay: &'a [u8],
    needle: &'a [u8],
    pivot: usize,
) -> impl Iterator<Item = usize> + 'a {
    memchr::memchr_iter(needle[pivot], hay).filter_map(move |i| {
        let start = i.checked_sub(pivot)?;
        hay[start..].starts_with(needle).then_some(start)
    })
}

/// Whether JSON text holds a `\u` escape.
pub(crate) fn has_unicode_escape(bytes: &[u8]) -> bool {
    memchr::memchr_iter(b'\\', bytes).any(|i| bytes.get(i + 1) == Some(&b'u'))
}

fn skip_ws(b: &[u8]) -> &[u8] {
    let n = b
        .iter()
        .take_while(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
        .count();
    &b[n..]
}

/// The agent capability a whole request message we wrote (a client's `session/new`, `load`,
/// `resume`, and with the feature `unstable` `fork`) needs for its `systemPrompt`, if it
/// carries one that `agent` does not allow.
pub(crate) fn missing_for_system_prompt(
    agent: &AgentCapabilities,
    message: &[u8],
) -> Option<&'static str> {
    if positions(message, b"systemPrompt", 6).next().is_none() && !has_unicode_escape(message) {
        return None;
    }
    let prompt = path(
        std::str::from_utf8(message).ok()?,
        &["params", "systemPrompt"],
    )?;
    if prompt.get() == "null" {
        return None;
    }
    if !agent.system_prompt {
        return Some("sessionCapabilities.systemPrompt");
    }
    let mode = member(prompt.get(), "mode").and_then(string);
    if mode.as_deref() == Some("override") && !agent.system_prompt_override {
        return Some("sessionCapabilities.systemPrompt.mode.override");
    }
    None
}

/// `params` (or `result`) of a whole message we wrote, as JSON text.
pub(crate) fn member_of_message(message: &[u8], result: bool) -> Option<String> {
    let key = if result { "result" } else { "params" };
    member(std::str::from_utf8(message).ok()?, key).map(|v| v.get().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_capabilities_are_read_leniently() {
        let c = ClientCapabilities::from_initialize_params(Some(
            r#"{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":"yes","writeTextFile":true},"terminal":true,"plan":{},"subagents":null,"session":{"notices":{},"compaction":7}}}"#,
        ));
        assert_eq!(
            c,
            ClientCapabilities {
                write_text_file: true,
                terminal: true,
                plan: true,
                notices: true,
                ..ClientCapabilities::default()
            }
        );
        // A malformed part counts as absent without hiding the rest.
        let c = ClientCapabilities::from_initialize_params(Some(
            r#"{"clientCapabilities":{"fs":7,"session":"x","subagents":{}}}"#,
        ));
        assert!(c.subagents && !c.read_text_file && !c.notices);
        assert_eq!(
            ClientCapabilities::from_initialize_params(Some("not json")),
            ClientCapabilities::default()
        );
    }

    #[test]
    fn agent_capabilities_are_read_leniently() {
        let a = AgentCapabilities::from_initialize_result(
            r#"{"protocolVersion":1,"agentCapabilities":{"sessionCapabilities":{"systemPrompt":{"mode":{"override":{}}}}}}"#,
        );
        assert!(a.system_prompt && a.system_prompt_override);
        let a = AgentCapabilities::from_initialize_result(
            r#"{"agentCapabilities":{"sessionCapabilities":{"systemPrompt":{"mode":3}}}}"#,
        );
        assert!(a.system_prompt && !a.system_prompt_override);
        let a = AgentCapabilities::from_initialize_result(
            r#"{"agentCapabilities":{"sessionCapabilities":{"systemPrompt":null}}}"#,
        );
        assert_eq!(a, AgentCapabilities::default());
    }

    #[test]
    fn gated_updates_are_found_by_their_kind_only() {
        let none = ClientCapabilities::default();
        let p =
            |kind: &str| format!(r#"{{"sessionId":"s","update":{{"sessionUpdate":"{kind}"}}}}"#);
        assert_eq!(
            missing_for_update(&none, p("plan_update").as_bytes()),
            Some("plan")
        );
        assert_eq!(
            missing_for_update(&none, p("session_message_chunk").as_bytes()),
            Some("subagents")
        );
        assert_eq!(
            missing_for_update(&none, p("notice").as_bytes()),
            Some("session.notices")
        );
        assert_eq!(
            missing_for_update(&none, p("compaction_summary_chunk").as_bytes()),
            Some("session.compaction")
        );
        assert_eq!(missing_for_update(&none, p("plan").as_bytes()), None);
        let all = Advertised::from_bits(u32::MAX).client;
        assert_eq!(missing_for_update(&all, p("plan_removed").as_bytes()), None);
        // The name inside text is not the kind, nor is the key's name as a value.
        for text in [
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"plan_update \"sessionUpdate\": \"notice\""}}}"#,
            r#"{"sessionId":"s","update":{"sessionUpdate" : "tool_call","rawInput":{"x":"sessionUpdate"}}}"#,
        ] {
            assert!(!may_name_gated_kind(text.as_bytes()), "{text}");
            assert_eq!(missing_for_update(&none, text.as_bytes()), None);
        }
        // Whitespace around the colon, and an escaped kind, are still found.
        let spaced = r#"{"sessionId":"s","update":{ "sessionUpdate" :	"notice" }}"#;
        assert_eq!(
            missing_for_update(&none, spaced.as_bytes()),
            Some("session.notices")
        );
        let escaped = r#"{"sessionId":"s","update":{"sessionUpdate":"\u006eotice"}}"#;
        assert_eq!(
            missing_for_update(&none, escaped.as_bytes()),
            Some("session.notices")
        );
    }

    #[test]
    fn members_are_found_by_their_unescaped_keys() {
        let j = r#"{"a":{"b":[1,{"c":2}]},"s\u0065ssion":{"x":true},"d":1,"d":2}"#;
        assert_eq!(
            path(j, &["a", "b"]).map(RawValue::get),
            Some(r#"[1,{"c":2}]"#)
        );
        assert_eq!(path(j, &["session", "x"]).map(RawValue::get), Some("true"));
        assert_eq!(member(j, "d").map(RawValue::get), Some("2"), "the last one");
        assert!(member(j, "c").is_none(), "not a nested key");
        assert!(path(j, &["a", "b", "c"]).is_none(), "not an object");
        assert!(member("[1]", "a").is_none() && member("not json", "a").is_none());
    }

    #[test]
    fn bits_round_trip() {
        let a = Advertised {
            client: ClientCapabilities::from_initialize_params(Some(
                r#"{"clientCapabilities":{"fs":{"writeTextFile":true},"subagents":{},"session":{"compaction":{}}}}"#,
            )),
            agent: AgentCapabilities::default(),
        };
        assert_eq!(Advertised::from_bits(a.to_bits()), a);
        assert_eq!(Advertised::from_bits(0), Advertised::default());
    }

    #[test]
    fn system_prompts_need_the_agents_capability() {
        let msg = |sp: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":0,"method":"session/new","params":{{"cwd":"/w","mcpServers":[],"systemPrompt":{sp}}}}}"#
            )
        };
        let none = AgentCapabilities::default();
        let append = AgentCapabilities {
            system_prompt: true,
            ..AgentCapabilities::default()
        };
        let mut both = append;
        both.system_prompt_override = true;
        let a = msg(r#"{"mode":"append","content":[]}"#);
        let o = msg(r#"{"mode":"override","content":[]}"#);
        assert_eq!(
            missing_for_system_prompt(&none, a.as_bytes()),
            Some("sessionCapabilities.systemPrompt")
        );
        assert_eq!(missing_for_system_prompt(&append, a.as_bytes()), None);
        assert_eq!(
            missing_for_system_prompt(&append, o.as_bytes()),
            Some("sessionCapabilities.systemPrompt.mode.override")
        );
        assert_eq!(missing_for_system_prompt(&both, o.as_bytes()), None);
        assert_eq!(
            missing_for_system_prompt(&none, msg("null").as_bytes()),
            None
        );
    }
}
