//! ACP v2's permission question read as v1's, so every face asks it through the same model:
//! v2 asks with a `title` (and optionally a `subject` naming a tool call) instead of v1's
//! `toolCall`. Plain JSON work, in every build (the faces call it only on a v2 connection).

use serde_json::{json, Value};

/// A v2 `session/request_permission`'s params (JSON text) as v1's request: the question is
/// about a tool call of that title, with the subject's id when it names one (so the
/// conversation's tool call completes it), else `permission`. `None`: not a v2 question (a
/// v1 request with `toolCall`, no `title`, or not a JSON object), for the caller to read as it
/// is.
pub fn as_v1(params: &str) -> Option<String> {
    let mut v: Value = serde_json::from_str(params).ok()?;
    let o = v.as_object_mut()?;
    if o.contains_key("toolCall") {
        return None;
    }
    let title = o.get("title")?.as_str()?.to_string();
    let id = o
        .get("subject")
        .and_then(|s| s.get("toolCallId"))
        .and_then(Value::as_str)
        .unwrap_or("permission")
        .to_string();
    o.insert("toolCall".into(), json!({"toolCallId": id, "title": title}));
    Some(v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v2_question_becomes_a_v1_question_about_its_title() {
        let v2 = r#"{"sessionId":"s","title":"Write x?","options":[{"optionId":"a","name":"Allow","kind":"allow_once"}]}"#;
        let v1: Value = serde_json::from_str(&as_v1(v2).unwrap()).unwrap();
        assert_eq!(v1["toolCall"]["title"], "Write x?");
        assert_eq!(v1["toolCall"]["toolCallId"], "permission");
        assert_eq!(v1["options"][0]["optionId"], "a");
        let subject = r#"{"sessionId":"s","title":"Run?","subject":{"type":"tool_call","toolCallId":"t7"},"options":[]}"#;
        let v1: Value = serde_json::from_str(&as_v1(subject).unwrap()).unwrap();
        assert_eq!(v1["toolCall"]["toolCallId"], "t7");
        // A v1 request, and one without a title, are left alone.
        assert!(as_v1(r#"{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[]}"#).is_none());
        assert!(as_v1(r#"{"sessionId":"s","options":[]}"#).is_none());
        assert!(as_v1(r#"{"sessionId":"s","title":7,"options":[]}"#).is_none());
        assert!(as_v1("not json").is_none());
        assert!(as_v1("[1]").is_none());
    }
}
