//! The permission question every face shows, decided once: its title, the options in order,
//! and what it is about — the tool call's kind and locations, **the change itself** (a unified
//! diff) or the command line.
//!
//! Three sources, one model ([`Question`]):
//! - [`permission`]: the agent's `session/request_permission` (its params as sent), completed
//!   by what the conversation already knows of the tool call (a request's `toolCall` is an
//!   update: it often carries only a title, the diff came with the earlier `tool_call`);
//! - [`write()`]: a write that changes what runs (acp-client's [`writes`](crate::writes) rule),
//!   which the client asks about itself: the real path, why, the diff;
//! - [`command`]: a `terminal/create` ([`terminal::question`](crate::terminal::question)).
//!
//! The rules:
//! - **Every agent-supplied string is one escaped line** ([`display`](crate::display): no
//!   control, bidi or line-breaking character) of bounded length ([`MAX_FIELD_CHARS`]; a diff
//!   line [`MAX_LINE_CHARS`]), so nothing the agent sent can act on a terminal, fake a line of
//!   the question or push it off screen. Diff lines are escaped too: a line holding ESC or
//!   `\r` shows `\e`, `\r`.
//! - **A change is shown as a unified diff** (`@@` hunks, [`CONTEXT_LINES`] of context, `+N
//!   -M` counts; [`Diff`]). A question shows its first [`SHOWN_LINES`] lines, then "… N more
//!   lines" ([`Diff::hidden`]); it keeps up to [`MAX_LINES`] (its diffs together) for a face's
//!   "whole diff". A binary-looking change (a NUL byte) shows no lines, only sizes.
//! - **Bounded work and memory** whatever the agent sends (a 64 MiB file, a 60 MB line): the
//!   texts are read a bounded number of times; the alignment is bounded by [`MAX_ALIGN_LINES`],
//!   [`MAX_EDITS`] and [`MAX_WORK`] (past them the changed region is shown whole, still exact);
//!   at most [`MAX_DIFFS`] files, [`MAX_LOCATIONS`] locations, [`MAX_TEXTS`] text blocks and
//!   [`MAX_INPUT_CHARS`] of the tool's input are kept. See the `diff` module's docs for the costs.
//!
//! `tests/client/question.json` is the case table (Rust and, through the wasm build, the
//! extension).

mod diff;
pub mod hunks;
pub mod v2;

use serde::Serialize;
use serde_json::Value;

use crate::display::{escape_line_clipped, escape_line_prefix};
use crate::permission::OptionKind;
use crate::terminal::CommandQuestion;
use crate::writes::Sensitive;

use diff::Budget;

pub use diff::{
    Before, Diff, CONTEXT_LINES, MAX_ALIGN_LINES, MAX_EDITS, MAX_LINES, MAX_LINE_CHARS, MAX_WORK,
    SHOWN_LINES,
};

/// Characters of a one-line field (a title, an option's name, a path) shown, then `…
/// (+N characters)`.
pub const MAX_FIELD_CHARS: usize = 500;
/// Characters of the tool's input (`rawInput`, compact JSON) shown.
pub const MAX_INPUT_CHARS: usize = 300;
/// Files whose diff a question shows; the others are counted.
pub const MAX_DIFFS: usize = 16;
/// Locations kept.
pub const MAX_LOCATIONS: usize = 16;
/// Text blocks of the tool call's content shown (one line each).
pub const MAX_TEXTS: usize = 4;

/// The option id of "Write it" in [`write()`]'s question (the other is [`REFUSE`]).
pub const WRITE: &str = "write";
/// The option id of "Run it" in [`command`]'s question.
pub const RUN: &str = "run";
/// The option id of the refusal in the client's own questions.
pub const REFUSE: &str = "refuse";

/// What a face shows to ask for permission. Every string is one escaped line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    /// What the agent wants to do: `Edit src/main.rs (edit)`, ``run `ls` in /w``, `write
    /// /w/.git/config (git runs …)`.
    pub title: String,
    /// The tool's kind (`edit`, `execute`…), when the agent gave one other than `other`.
    pub kind: Option<String>,
    /// The files the tool call touches: `path` or `path:line`.
    pub locations: Vec<String>,
    /// The command line, exactly what runs (a `terminal/create`).
    pub command: Option<String>,
    /// The changes, one per file.
    pub diffs: Vec<Diff>,
    /// Further lines, in order: warnings (`⚠ …`), the tool's text, the locations no diff
    /// shows (`at path:line`), its input (`input: {…}`) when there is no diff.
    pub detail: Vec<String>,
    /// The options, in the agent's order.
    pub options: Vec<Choice>,
}

/// One option as shown.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Choice {
    /// Its number, from 1 (what a user types in `acp chat`).
    pub number: usize,
    /// The id the answer names (as the agent sent it: not for showing).
    pub option_id: String,
    /// Its name, escaped (the kind in words when the agent gave none).
    pub name: String,
    /// What choosing it means.
    pub kind: OptionKind,
}

impl Question {
    /// The question as JSON text: what `serde_json::to_string` writes of it (the same fields
    /// and values), written without serde's code, for the wasm build's answer.
    pub fn to_json(&self) -> String {
        let mut o = Obj::new();
        o.str("title", &self.title);
        o.opt("kind", self.kind.as_deref());
        o.strs("locations", &self.locations);
        o.opt("command", self.command.as_deref());
        let out = o.key("diffs");
        out.push('[');
        for (i, d) in self.diffs.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let mut j = Obj::new();
            j.str("path", &d.path);
            j.str("summary", &d.summary);
            j.bool("newFile", d.new_file);
            j.bool("binary", d.binary);
            j.bool("whole", d.whole);
            j.num("added", d.added);
            j.num("removed", d.removed);
            j.strs("lines", &d.lines);
            j.num("shown", d.shown);
            j.num("hidden", d.hidden);
            out.push_str(&j.end());
        }
        out.push(']');
        o.strs("detail", &self.detail);
        let out = o.key("options");
        out.push('[');
        for (i, c) in self.options.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let mut j = Obj::new();
            j.num("number", c.number);
            j.str("optionId", &c.option_id);
            j.str("name", &c.name);
            j.str("kind", c.kind.name());
            out.push_str(&j.end());
        }
        out.push(']');
        o.end()
    }

    /// Diff lines the question does not show (its diffs together): a face offers the whole
    /// diff when this is not 0.
    pub fn hidden_lines(&self) -> usize {
        self.diffs.iter().map(|d| d.hidden).sum()
    }
}

/// One escaped line of at most [`MAX_FIELD_CHARS`].
fn line(text: &str) -> String {
    escape_line_clipped(text, MAX_FIELD_CHARS)
}

/// A string field, trimmed, unless empty.
fn text(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

fn non_null<'a>(v: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    v?.get(key).filter(|v| !v.is_null())
}

/// The question of a `session/request_permission`: `params` as the agent sent them,
/// `known` the tool call as the conversation knows it (the thread's `ToolCall`, or any object
/// with the wire's `title`, `kind`, `locations`, `content`, `rawInput`): what the request's
/// `toolCall` leaves out is taken from it. Lenient: a field of another type is ignored.
pub fn permission(params: &Value, known: Option<&Value>) -> Question {
    let call = params.get("toolCall");
    let field = |key: &str| non_null(call, key).or_else(|| non_null(known, key));
    let title = match text(non_null(call, "title")).or_else(|| text(non_null(known, "title"))) {
        Some(t) => line(t),
        None => {
            let id = call
                .and_then(|c| str_of(c, "toolCallId"))
                .unwrap_or_default();
            format!("tool call {}", line(id))
        }
    };
    let kind = text(field("kind")).filter(|k| *k != "other").map(line);
    let title = match &kind {
        Some(k) => format!("{title} ({k})"),
        None => title,
    };

    let mut budget = Budget::question();
    let mut diffs = Vec::new();
    let mut diff_paths: Vec<&str> = Vec::new();
    let mut detail = Vec::new();
    let mut left_out = 0;
    for item in array(field("content")) {
        match str_of(item, "type") {
            Some("diff") => {
                let (Some(path), Some(new)) = (str_of(item, "path"), str_of(item, "newText"))
                else {
                    continue;
                };
                if diffs.len() == MAX_DIFFS {
                    left_out += 1;
                    continue;
                }
                let old = str_of(item, "oldText").map_or(Before::Missing, Before::Text);
                diffs.push(diff::diff(path, old, new, &mut budget));
                diff_paths.push(path);
            }
            Some("content") => {
                let block = item.get("content");
                let t = match block.and_then(|b| str_of(b, "type")) {
                    Some("text") => block.and_then(|b| text(b.get("text"))),
                    _ => None,
                };
                let Some(t) = t else { continue };
                if detail.len() == MAX_TEXTS {
                    left_out += 1;
                } else {
                    detail.push(line(t));
                }
            }
            _ => {}
        }
    }

    let mut locations = Vec::new();
    let all = array(field("locations"));
    for loc in all.iter().take(MAX_LOCATIONS) {
        let Some(path) = str_of(loc, "path") else {
            continue;
        };
        let mut shown = line(path);
        if let Some(n) = loc.get("line").and_then(Value::as_u64) {
            shown.push(':');
            shown.push_str(&n.to_string());
        }
        if !diff_paths.contains(&path) {
            detail.push(format!("at {shown}"));
        }
        locations.push(shown);
    }
    left_out += all.len().saturating_sub(MAX_LOCATIONS);
    if left_out > 0 {
        detail.push(format!(
            "… {left_out} more item(s) of the tool call (changes, texts, locations) not shown"
        ));
    }
    if diffs.is_empty() {
        if let Some(input) = field("rawInput") {
            detail.push(format!("input: {}", compact_json(input, MAX_INPUT_CHARS)));
        }
    }

    let mut options = Vec::new();
    for o in array(params.get("options")) {
        if let (Some(id), Some(kind)) = (str_of(o, "optionId"), str_of(o, "kind")) {
            let name = str_of(o, "name").unwrap_or_default();
            options.push(choice(options.len(), id, name, OptionKind::from_name(kind)));
        }
    }

    Question {
        title,
        kind,
        locations,
        command: None,
        diffs,
        detail,
        options,
    }
}

/// `v[key]` when it is a string.
fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key)?.as_str()
}

/// `v` when it is an array, else nothing.
fn array(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn choice(index: usize, option_id: &str, name: &str, kind: OptionKind) -> Choice {
    let name = match name.trim() {
        "" => line(kind.label()),
        n => line(n),
    };
    Choice {
        number: index + 1,
        option_id: option_id.to_string(),
        name,
        kind,
    }
}

/// `value` as compact JSON on one escaped line of at most `max` characters (`…` when cut);
/// at most about `4 × max` bytes of it are written, whatever its size. Strings are written
/// between quotes with `"` and `\` escaped; what else they hold is escaped as every line is.
fn compact_json(value: &Value, max: usize) -> String {
    let mut text = String::new();
    let whole = write_json(value, &mut text, 4 * max + 4);
    let (mut shown, stopped) = escape_line_prefix(&text, max);
    if stopped.is_some() || !whole {
        shown.push('…');
    }
    shown
}

/// Writes `v` into `out` while it holds less than `limit` bytes; `false` when cut.
fn write_json(v: &Value, out: &mut String, limit: usize) -> bool {
    if out.len() >= limit {
        return false;
    }
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => return json_str(out, s, limit),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !write_json(item, out, limit) {
                    return false;
                }
            }
            out.push(']');
        }
        Value::Object(fields) => {
            out.push('{');
            for (i, (k, item)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !json_str(out, k, limit) {
                    return false;
                }
                out.push(':');
                if !write_json(item, out, limit) {
                    return false;
                }
            }
            out.push('}');
        }
    }
    true
}

/// `s` as a JSON string into `out`, while it holds less than `limit` bytes (`false`: cut).
fn json_str(out: &mut String, s: &str, limit: usize) -> bool {
    let room = limit.saturating_sub(out.len());
    let mut end = s.len().min(room);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    out.push_str(&serde_json::to_string(&s[..end]).unwrap_or_default());
    end == s.len()
}

/// A JSON object written field by field ([`Question::to_json`]).
struct Obj(String);

impl Obj {
    fn new() -> Obj {
        Obj(String::from("{"))
    }

    fn key(&mut self, k: &str) -> &mut String {
        if self.0.len() > 1 {
            self.0.push(',');
        }
        json_str(&mut self.0, k, usize::MAX);
        self.0.push(':');
        &mut self.0
    }

    fn str(&mut self, k: &str, v: &str) {
        json_str(self.key(k), v, usize::MAX);
    }

    fn opt(&mut self, k: &str, v: Option<&str>) {
        match v {
            Some(v) => self.str(k, v),
            None => self.key(k).push_str("null"),
        }
    }

    fn num(&mut self, k: &str, n: usize) {
        let n = n.to_string();
        self.key(k).push_str(&n);
    }

    fn bool(&mut self, k: &str, b: bool) {
        self.key(k).push_str(if b { "true" } else { "false" });
    }

    fn strs(&mut self, k: &str, v: &[String]) {
        let out = self.key(k);
        out.push('[');
        for (i, s) in v.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            json_str(out, s, usize::MAX);
        }
        out.push(']');
    }

    fn end(mut self) -> String {
        self.0.push('}');
        self.0
    }
}

/// What a sensitive write is, as the face found it.
#[derive(Clone, Copy, Debug)]
pub struct WriteRequest<'a> {
    /// The real path the write reaches (symlinks resolved).
    pub path: &'a str,
    /// The path the agent named, when the face knows it: shown when it differs.
    pub asked_path: Option<&'a str>,
    /// Why it needs the question ([`crate::writes::classify`]).
    pub reason: Sensitive,
    /// The file exists.
    pub exists: bool,
    /// It is executable (and stays so if allowed).
    pub executable: bool,
    /// Its current text; `None` when it does not exist or cannot be read as text.
    pub old_text: Option<&'a str>,
    /// The text the agent wants written.
    pub new_text: &'a str,
}

/// The question the client asks about a write that changes what runs: the real path, why,
/// and the diff; options [`WRITE`] ("Write it") and [`REFUSE`].
pub fn write(w: &WriteRequest<'_>) -> Question {
    let path = line(w.path);
    let old = match (w.exists, w.old_text) {
        (false, _) => Before::Missing,
        (true, Some(t)) => Before::Text(t),
        (true, None) => Before::Unreadable,
    };
    let mut detail = Vec::new();
    if let Some(asked) = w.asked_path.filter(|a| *a != w.path) {
        detail.push(format!(
            "the agent asked for {}, which leads there",
            line(asked)
        ));
    }
    if w.executable {
        detail.push("⚠ the file is executable and stays executable".to_string());
    }
    Question {
        title: format!("write {path} ({})", w.reason.describe()),
        kind: Some("edit".to_string()),
        locations: vec![path],
        command: None,
        diffs: vec![diff::diff(w.path, old, w.new_text, &mut Budget::question())],
        detail,
        options: vec![
            choice(0, WRITE, "Write it", OptionKind::AllowOnce),
            choice(1, REFUSE, "Do not write it", OptionKind::RejectOnce),
        ],
    }
}

/// The question the client asks before running a command (`terminal/create`): acp-client's
/// [`CommandQuestion`] with options [`RUN`] ("Run it") and [`REFUSE`].
pub fn command(q: &CommandQuestion) -> Question {
    Question {
        title: q.title.clone(),
        kind: Some("execute".to_string()),
        locations: Vec::new(),
        command: Some(q.command_line.clone()),
        diffs: Vec::new(),
        detail: q.warnings.iter().map(|w| format!("⚠ {w}")).collect(),
        options: vec![
            choice(0, RUN, "Run it", OptionKind::AllowOnce),
            choice(1, REFUSE, "Do not run it", OptionKind::RejectOnce),
        ],
    }
}

/// The diff of one file as a question shows it.
pub fn diff(path: &str, before: Before<'_>, new: &str) -> Diff {
    diff::diff(path, before, new, &mut Budget::question())
}

/// A change in one line: `+3 -1`, `new file, +12`, `no changes`… (the [`Diff::summary`] of
/// the same rule, without keeping any line).
pub fn summary(before: Before<'_>, new: &str) -> String {
    diff::diff("", before, new, &mut Budget::none()).summary
}

/// What a face logs after a write the agent made: `wrote PATH (+N -M)`, the path escaped.
pub fn wrote(path: &str, before: Before<'_>, new: &str) -> String {
    format!("wrote {} ({})", line(path), summary(before, new))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_request_is_completed_by_what_the_conversation_knows() {
        let params = json!({"sessionId": "s", "toolCall": {"toolCallId": "t1", "title": "Write a.txt"},
            "options": [{"optionId": "y", "name": "  ", "kind": "allow_once"},
                        {"optionId": "n", "name": "No\nway", "kind": "reject_once"}]});
        let known = json!({"toolCallId": "t1", "title": "old title", "kind": "edit",
            "content": [{"type": "diff", "path": "/w/a.txt", "oldText": "a\n", "newText": "b\n"}],
            "locations": [{"path": "/w/a.txt"}, {"path": "/w/b.txt", "line": 3}]});
        let q = permission(&params, Some(&known));
        assert_eq!(q.title, "Write a.txt (edit)");
        assert_eq!(q.diffs[0].lines, ["@@ -1 +1 @@", "-a", "+b"]);
        assert_eq!(q.detail, ["at /w/b.txt:3"]);
        assert_eq!(q.options[0].name, "allow once");
        assert_eq!(q.options[1].name, "No\\nway");
        assert_eq!(q.options[1].number, 2);
        // Without what the conversation knows: the request alone.
        let q = permission(&params, None);
        assert_eq!((q.title.as_str(), q.diffs.len()), ("Write a.txt", 0));
    }

    #[test]
    fn the_input_is_shown_bounded_when_there_is_no_diff() {
        let big = "\u{1b}".repeat(1 << 20);
        let params =
            json!({"toolCall": {"toolCallId": "t", "rawInput": {"command": big}}, "options": []});
        let q = permission(&params, None);
        assert_eq!(q.title, "tool call t");
        let input = &q.detail[0];
        assert!(
            input.starts_with("input: {\"command\":\"\\\\u001b"),
            "{input}"
        );
        assert!(
            input.ends_with('…') && input.chars().count() < 320,
            "{input}"
        );
    }

    #[test]
    fn a_write_summary_for_logs() {
        assert_eq!(
            wrote("/w/a\n.txt", Before::Text("a\nb\n"), "a\nc\n"),
            "wrote /w/a\\n.txt (+1 -1)"
        );
        assert_eq!(
            wrote("/w/n", Before::Missing, "x\ny\n"),
            "wrote /w/n (new file, +2 -0)"
        );
    }
}
