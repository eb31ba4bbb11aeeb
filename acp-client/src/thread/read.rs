//! A `session/update`'s params read in one pass when the update's tag comes first, as agents
//! write it (the official SDKs and schema crates serialize `sessionUpdate` first): the session
//! id, the tag and the variant's fields are read as they come, instead of keeping the update's
//! text and reading it twice more (its tag, then its variant: [`parse_update`]). Anything else
//! (the tag later in the object, an escaped key, a second tag, an error) is left to the general
//! reading, which gives the same result and the same error text (tested on every update of
//! `tests/client/thread.json` and `session.json`, the tag first and not).
//!
//! [`parse_update`]: super::wire::parse_update

use serde::de::value::{BorrowedStrDeserializer, MapAccessDeserializer};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use super::model::Usage;
use super::wire::{Update, WireCommands, WireConfig, WireInfo, WireMode, WirePlan};

/// The session id and the update of `params`, or `None`: read it the general way.
pub(super) fn one_pass(params: &str) -> Option<(Option<String>, Update)> {
    let mut de = serde_json::Deserializer::from_str(params);
    let read = Params.deserialize(&mut de).ok()??;
    de.end().ok()?;
    Some(read)
}

/// The update variant named `tag`, its fields read from `d` (the tag itself, if `d` still has
/// it, is skipped as an unknown field). An unknown tag's fields are skipped.
pub(super) fn variant<'de, D: de::Deserializer<'de>>(
    tag: String,
    d: D,
) -> Result<Update, D::Error> {
    Ok(match tag.as_str() {
        "user_message_chunk" => Update::UserMessageChunk(Box::deserialize(d)?),
        "agent_message_chunk" => Update::AgentMessageChunk(Box::deserialize(d)?),
        "agent_thought_chunk" => Update::AgentThoughtChunk(Box::deserialize(d)?),
        "tool_call" | "tool_call_update" => Update::ToolCall(Box::deserialize(d)?),
        "plan" => Update::Plan(WirePlan::deserialize(d)?),
        "available_commands_update" => Update::Commands(WireCommands::deserialize(d)?),
        "current_mode_update" => Update::Mode(WireMode::deserialize(d)?),
        "config_option_update" => Update::Config(WireConfig::deserialize(d)?),
        "session_info_update" => Update::Info(WireInfo::deserialize(d)?),
        "usage_update" => Update::Usage(Usage::deserialize(d)?),
        _ => {
            IgnoredAny::deserialize(d)?;
            Update::Unknown(tag)
        }
    })
}

/// The params object: `sessionId`, `update`, other members skipped. `None`: the update's tag
/// is not its first member.
struct Params;

impl<'de> DeserializeSeed<'de> for Params {
    type Value = Option<(Option<String>, Update)>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Params {
    type Value = Option<(Option<String>, Update)>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("session/update params")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut session_id: Option<Option<String>> = None;
        let mut update: Option<Option<Update>> = None;
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                "sessionId" if session_id.is_none() => session_id = Some(map.next_value()?),
                "update" if update.is_none() => update = Some(map.next_value_seed(TagFirst)?),
                "sessionId" | "update" => return Err(de::Error::duplicate_field("a member")),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        match update {
            Some(Some(update)) => Ok(Some((session_id.flatten(), update))),
            Some(None) => Ok(None),
            None => Err(de::Error::missing_field("update")),
        }
    }
}

/// An update whose first member is `sessionUpdate`: its variant read from the members that
/// follow. `None` (the rest skipped) when it is not first.
struct TagFirst;

impl<'de> DeserializeSeed<'de> for TagFirst {
    type Value = Option<Update>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TagFirst {
    type Value = Option<Update>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a session update")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        if map.next_key::<&'de str>()? != Some("sessionUpdate") {
            // (The first member's value, then the others.)
            map.next_value::<IgnoredAny>()?;
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(None);
        }
        let tag: String = map.next_value()?;
        variant(tag, MapAccessDeserializer::new(AfterTag(map))).map(Some)
    }
}

/// The members after the tag, as the variant reads them. A second `sessionUpdate` is an error
/// (the general reading refuses it as a duplicate), and so is an escaped key (it cannot be
/// borrowed): both are left to the general reading.
struct AfterTag<A>(A);

impl<'de, A: MapAccess<'de>> MapAccess<'de> for AfterTag<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match self.0.next_key::<&'de str>()? {
            None => Ok(None),
            Some("sessionUpdate") => Err(de::Error::duplicate_field("sessionUpdate")),
            Some(key) => seed
                .deserialize(BorrowedStrDeserializer::new(key))
                .map(Some),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.0.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::super::wire::{parse_update, Notification};
    use super::super::{Block, ReadUpdate, Thread};
    use crate::thread::BadUpdate;

    /// The general reading alone: the params, then the update's tag, then its variant.
    fn general(params: &str) -> Result<ReadUpdate, BadUpdate> {
        let n: Notification<'_> =
            serde_json::from_str(params).map_err(|e| BadUpdate(e.to_string()))?;
        let update = parse_update(n.update.get()).map_err(|e| BadUpdate(e.to_string()))?;
        Ok(ReadUpdate {
            session_id: n.session_id,
            update,
        })
    }

    /// `params` as text with the update's `sessionUpdate` first (as agents write it); the
    /// other members in their order.
    fn tag_first(params: &Value) -> String {
        fn members<'a>(m: impl Iterator<Item = (&'a String, String)>) -> String {
            let m: Vec<String> = m
                .map(|(k, v)| format!("{}:{v}", Value::from(k.as_str())))
                .collect();
            format!("{{{}}}", m.join(","))
        }
        let update = |u: &Value| match u.as_object() {
            Some(o) => {
                let tag = o
                    .get_key_value("sessionUpdate")
                    .map(|(k, v)| (k, v.to_string()));
                let rest = o.iter().filter(|(k, _)| *k != "sessionUpdate");
                members(tag.into_iter().chain(rest.map(|(k, v)| (k, v.to_string()))))
            }
            None => u.to_string(),
        };
        match params.as_object() {
            Some(o) => members(o.iter().map(|(k, v)| {
                (
                    k,
                    if k == "update" {
                        update(v)
                    } else {
                        v.to_string()
                    },
                )
            })),
            None => params.to_string(),
        }
    }

    /// Reads `params` both ways and folds each into its own thread: the same session id, the
    /// same `Applied`, or the same error. Returns whether the one pass read it.
    fn check(params: &str, fast: &mut Thread, slow: &mut Thread) -> bool {
        let one = super::one_pass(params);
        let read_one = one.is_some();
        match (one, general(params)) {
            (Some((sid, update)), Ok(g)) => {
                assert_eq!(sid, g.session_id, "{params}");
                let a = serde_json::to_value(fast.apply_read(ReadUpdate {
                    session_id: sid,
                    update,
                }))
                .unwrap();
                let b = serde_json::to_value(slow.apply_read(g)).unwrap();
                assert_eq!(a, b, "{params}");
            }
            (Some(_), Err(e)) => {
                panic!("{params}: one pass read what the general way refuses: {e}")
            }
            (None, general) => {
                // Left to the general reading: `ReadUpdate::read` gives its result.
                match (ReadUpdate::read(params), general) {
                    (Ok(r), Ok(g)) => {
                        let a = serde_json::to_value(fast.apply_read(r)).unwrap();
                        let b = serde_json::to_value(slow.apply_read(g)).unwrap();
                        assert_eq!(a, b, "{params}");
                    }
                    (Err(e), Err(g)) => assert_eq!(e, g, "{params}"),
                    (r, g) => panic!("{params}: {:?} vs {:?}", r.is_ok(), g.is_ok()),
                }
            }
        }
        assert_eq!(fast.to_json(), slow.to_json(), "{params}");
        read_one
    }

    /// Every update of the case tables `thread.json` and `session.json`, the tag first and in
    /// the table's order, folded in order (with the turns of `thread.json`): the one-pass
    /// reading and the general one give the same threads, step by step. Each update whose
    /// tag comes first and that the general reading takes is read in one pass.
    #[test]
    fn the_case_tables_read_the_same_in_one_pass() {
        let mut one_pass = 0;
        for file in ["thread.json", "session.json"] {
            let path = format!("{}/../tests/client/{file}", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let table: Value = serde_json::from_str(&text).unwrap();
            for case in table["cases"].as_array().expect("cases") {
                let (mut fast, mut slow) = (Thread::default(), Thread::default());
                let (mut fast2, mut slow2) = (Thread::default(), Thread::default());
                for step in case["steps"].as_array().expect("steps") {
                    if let Some(u) = step.get("update") {
                        let first = tag_first(u);
                        let took = check(&first, &mut fast, &mut slow);
                        assert_eq!(took, general(&first).is_ok(), "{file}: {first}");
                        one_pass += usize::from(took);
                        check(&u.to_string(), &mut fast2, &mut slow2);
                    } else if let Some(p) = step.get("beginTurn") {
                        let blocks: Vec<Block> = match p {
                            Value::String(t) => vec![Block::text(t)],
                            p => serde_json::from_value(p.clone()).expect("blocks"),
                        };
                        for t in [&mut fast, &mut slow, &mut fast2, &mut slow2] {
                            t.begin_turn(blocks.clone());
                        }
                    } else if let Some(r) = step.get("endTurn").and_then(Value::as_str) {
                        for t in [&mut fast, &mut slow, &mut fast2, &mut slow2] {
                            t.end_turn(r);
                        }
                    } else if let Some(m) = step.get("failTurn").and_then(Value::as_str) {
                        for t in [&mut fast, &mut slow, &mut fast2, &mut slow2] {
                            t.fail_turn(m);
                        }
                    }
                }
            }
        }
        assert!(one_pass >= 40, "only {one_pass} updates read in one pass");
    }

    /// Forms the tables do not hold: other members, null ids, unknown tags, missing or
    /// duplicate members, a second tag, escaped keys, trailing bytes.
    #[test]
    fn one_pass_and_the_general_reading_agree() {
        let cases = [
            (
                true,
                r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}"#,
            ),
            (
                false,
                r#"{"update":{"content":{"type":"text","text":"hi"},"sessionUpdate":"agent_message_chunk"},"sessionId":"s"}"#,
            ),
            (
                true,
                r#"{"sessionId":null,"x":[1,{"a":2}],"update":{"sessionUpdate":"plan","entries":[{"content":"a","priority":"high","status":"pending"}]}}"#,
            ),
            (
                true,
                r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read","status":"pending","rawInput":{"p":1}}}"#,
            ),
            (
                true,
                r#"{"sessionId":"s","update":{"sessionUpdate":"current_mode_update","currentModeId":"ask"}}"#,
            ),
            (
                true,
                r#"{"sessionId":"s","update":{"sessionUpdate":"something_new","whatever":[1,2]}}"#,
            ),
            (
                true,
                r#"{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":5,"size":10}}"#,
            ),
            (
                true,
                r#"{"update":{"sessionUpdate":"session_info_update","title":null}}"#,
            ),
            (
                false,
                r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk"}}"#,
            ),
            (
                false,
                r#"{"sessionId":"s","sessionId":"t","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}"#,
            ),
            (
                false,
                r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","sessionUpdate":"plan","content":{"type":"text","text":"hi"}}}"#,
            ),
            (
                false,
                r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"},"sessionUpdate":"agent_message_chunk"}}"#,
            ),
            (
                false,
                r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","cont\u0065nt":{"type":"text","text":"hi"}}}"#,
            ),
            (
                false,
                r#"{"sessionId":"s","upd\u0061te":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}"#,
            ),
            (false, r#"{"sessionId":"s","update":{"sessionUpdate":7}}"#),
            (
                false,
                r#"{"sessionId":"s","update":["agent_message_chunk",{"type":"text","text":"hi"}]}"#,
            ),
            (false, r#"{"sessionId":"s"}"#),
            (false, r#"[1,2]"#),
            (
                false,
                r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}} x"#,
            ),
        ];
        for (in_one_pass, params) in cases {
            let (mut fast, mut slow) = (Thread::default(), Thread::default());
            assert_eq!(check(params, &mut fast, &mut slow), in_one_pass, "{params}");
        }
    }
}
