//! Replays the language-neutral case tables in `tests/client/` (the extension replays the same
//! files through the wasm build).

use std::collections::HashMap;

use acp_client::permission::{self, AutoMode, PermissionOption};
use acp_client::terminal::{self, CommandRequest};
use acp_client::writes::{self, FileFacts};
use serde_json::{json, Value};

/// Replays `tests/client/{file}`: `decide` gives each case's result, compared with its
/// `expect`. `ACP_BLESS=1` writes the results into `expect` instead (review the diff before
/// committing).
fn replay(file: &str, decide: impl Fn(&Value) -> Value) {
    let path = format!("{}/../tests/client/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut cases = v["cases"].as_array().expect("a cases array").clone();
    assert!(!cases.is_empty(), "{path} has no cases");
    let bless = std::env::var_os("ACP_BLESS").is_some();
    for case in &mut cases {
        let got = decide(case);
        if bless {
            case["expect"] = compress(got);
        } else {
            let expect = expand(&case["expect"]);
            assert_eq!(
                got, expect,
                "{file}: case {:?}\n  got:    {got}\n  expect: {expect}",
                case["name"]
            );
        }
    }
    if bless {
        let text = serde_json::to_string_pretty(&json!({ "cases": cases })).unwrap();
        std::fs::write(path, text + "\n").unwrap();
    }
}

#[test]
fn permission_cases() {
    replay("permission.json", |case| {
        let options: Vec<PermissionOption> =
            serde_json::from_value(case["options"].clone()).expect("options");
        let on = &case["on"];
        let decision = if let Some(mode) = on.get("auto") {
            let mode: AutoMode = serde_json::from_value(mode.clone()).expect("mode");
            Some(permission::decide(&options, mode))
        } else if let Some(text) = on.get("typed") {
            permission::chosen(&options, text.as_str().expect("typed text"))
        } else if on == "dismissed" {
            Some(permission::dismissed(&options))
        } else if on == "unanswerable" {
            Some(permission::unanswerable())
        } else {
            panic!("unknown `on` {on}")
        };
        json!(decision)
    });
}

#[test]
fn hunk_cases() {
    use acp_client::question::hunks;
    replay("hunks.json", |case| {
        let (old, new) = (
            case["old"].as_str().expect("old"),
            case["new"].as_str().expect("new"),
        );
        let take: Vec<usize> = serde_json::from_value(case["take"].clone()).expect("take");
        json!({
            "hunks": hunks::hunks(old, new),
            "text": hunks::select(old, new, |i| take.contains(&i)),
        })
    });
}

#[test]
fn write_cases() {
    replay("writes.json", |case| {
        let facts: FileFacts = serde_json::from_value(case["facts"].clone()).expect("facts");
        let own: Vec<String> = match case.get("ownDirs") {
            Some(dirs) => serde_json::from_value(dirs.clone()).expect("ownDirs"),
            None => Vec::new(),
        };
        let class = writes::classify(
            case["path"].as_str().expect("path"),
            facts,
            &writes::OwnDirs::new(&own),
        );
        json!(class)
    });
}

#[test]
fn terminal_cases() {
    replay("terminal.json", |case| {
        let request: CommandRequest =
            serde_json::from_value(case["request"].clone()).expect("request");
        let user: HashMap<String, String> =
            serde_json::from_value(case["userEnv"].clone()).expect("userEnv");
        let got = match terminal::question(&request, |n| user.get(n).cloned()) {
            Ok(q) => json!({ "question": q }),
            Err(e) => json!({ "invalid": e }),
        };
        got
    });
}

#[test]
fn thread_cases() {
    use acp_client::thread::{Block, Limits, Thread};
    let file = "thread.json";
    replay(file, |case| {
        let mut t = Thread::new(Limits::default());
        let mut applied = Vec::new();
        for step in case["steps"].as_array().expect("steps") {
            let got = if let Some(u) = step.get("update") {
                match t.apply_json(&u.to_string()) {
                    Ok(a) => json!(a),
                    Err(e) => {
                        json!({ "error": e.to_string().starts_with("unreadable session/update") })
                    }
                }
            } else if let Some(p) = step.get("beginTurn") {
                let blocks: Vec<Block> = serde_json::from_value(p.clone()).expect("blocks");
                json!({ "entry": t.begin_turn(blocks) })
            } else if let Some(r) = step.get("endTurn") {
                t.end_turn(r.as_str().expect("stop reason"));
                Value::Null
            } else if let Some(m) = step.get("failTurn") {
                t.fail_turn(m.as_str().expect("message"));
                Value::Null
            } else {
                panic!("unknown step {step}")
            };
            applied.push(got);
        }
        let saved: Value = serde_json::from_str(&t.to_json()).expect("saved form");
        let got = json!({ "applied": applied, "thread": saved });
        // The saved form reads back to the same thread.
        let back = Thread::from_json(&t.to_json(), Limits::default()).expect("reads back");
        assert_eq!(
            back.to_json(),
            t.to_json(),
            "{file}: {:?} round trip",
            case["name"]
        );
        got
    });
}

#[test]
fn auth_cases() {
    use acp_client::auth::{self, AuthMethod};
    replay("auth.json", |case| {
        let methods: Vec<AuthMethod> =
            serde_json::from_value(case["methods"].clone()).expect("methods");
        let env: Vec<String> = serde_json::from_value(case["env"].clone()).expect("env");
        let requested = case["requested"].as_str();
        let got = auth::choose(&methods, |v| env.iter().any(|e| e == v), requested);
        json!(got)
    });
}

#[test]
fn restart_cases() {
    use acp_client::restart::{CrashBudget, RestartPolicy};
    use std::time::Duration;
    let file = "restart.json";
    replay(file, |case| {
        let policy: RestartPolicy = if case["policy"].is_null() {
            RestartPolicy::default()
        } else {
            serde_json::from_value(case["policy"].clone()).expect("policy")
        };
        let mut budget = CrashBudget::new(policy);
        let mut got = Vec::new();
        for step in case["steps"].as_array().expect("steps") {
            if let Some(at) = step.get("crashAtMs") {
                let at = Duration::from_millis(at.as_u64().expect("ms"));
                got.push(json!(budget.record_crash(at)));
            } else if step.get("reset").is_some() {
                budget.reset();
                got.push(Value::Null);
            } else {
                panic!("unknown step {step}");
            }
        }
        json!(got)
    });
}

#[test]
fn error_cases() {
    use acp_client::errors::Failure;
    replay("errors.json", |case| {
        let f: Failure = serde_json::from_value(case["failure"].clone()).expect("failure");
        json!({ "code": f.code(), "reason": f.reason() })
    });
}

#[test]
fn mcp_cases() {
    use acp_client::mcp::{self, McpCapabilities};
    replay("mcp.json", |case| {
        let caps: McpCapabilities = serde_json::from_value(case["caps"].clone()).expect("caps");
        let got = match mcp::parse_config(&case["config"].to_string()) {
            Ok(servers) => json!(mcp::select(&servers, caps)),
            Err(e) => match case["expect"].get("error_starts") {
                Some(prefix) if e.starts_with(prefix.as_str().unwrap()) => {
                    json!({ "error_starts": prefix })
                }
                _ => json!({ "error": e }),
            },
        };
        got
    });
}

#[test]
fn registry_cases() {
    use acp_client::registry;
    replay("registry.json", |case| {
        let got = (|| -> Result<(String, registry::Launch), String> {
            let base = if case["registry"].is_null() {
                registry::parse(registry::SNAPSHOT)?
            } else {
                registry::parse(&case["registry"].to_string())?
            };
            let reg = if case["overlay"].is_null() {
                base
            } else {
                registry::merge(base, registry::parse(&case["overlay"].to_string())?)
            };
            let agent = registry::find(&reg, case["agent"].as_str().expect("agent"))?;
            let launch = registry::launch(agent, case["platform"].as_str().expect("platform"))?;
            Ok((agent.id.clone(), launch))
        })();
        // `given`: the variables the user gives themselves (`--env`).
        let given: Vec<String> = match case.get("given") {
            Some(g) => serde_json::from_value(g.clone()).expect("given"),
            None => Vec::new(),
        };
        match got {
            Ok((id, l)) => {
                let env = registry::review_env(&l.env, |n| given.iter().any(|g| g == n));
                let mut got = json!({ "launch": l, "env": env });
                if let Some(why) = registry::refusal(&id, &env) {
                    got["refused"] = json!(why);
                }
                got
            }
            Err(e) => json!({ "error": e }),
        }
    });
}

#[test]
fn prompt_cases() {
    use acp_client::prompt::{self, Attachment, PromptCapabilities};
    replay("prompt.json", |case| {
        let caps: PromptCapabilities = serde_json::from_value(case["caps"].clone()).expect("caps");
        let a = Attachment::from_json(&case["attachment"]).expect("attachment");
        json!(prompt::attach(caps, &a))
    });
}

#[test]
fn session_cases() {
    session_table("session.json");
}

/// ACP v2 in the session engine (feature `unstable_protocol_v2`): the same steps, a v2 agent.
#[cfg(feature = "unstable_protocol_v2")]
#[test]
fn session_v2_cases() {
    session_table("session_v2.json");
}

fn session_table(file: &str) {
    use acp_client::restart::RestartPolicy;
    use acp_client::session::{Intent, Session};
    use acp_client::thread::{Block, Limits};
    use std::time::Duration;
    replay(file, |case| {
        let intent: Intent = serde_json::from_value(case["intent"].clone()).expect("intent");
        let policy: RestartPolicy = match case.get("policy") {
            Some(p) if !p.is_null() => serde_json::from_value(p.clone()).expect("policy"),
            _ => RestartPolicy::default(),
        };
        let mut session = match Session::new(intent, "/p", Limits::default(), policy) {
            Ok(s) => s,
            Err(refused) => return json!({ "refused": refused }),
        };
        let text = |v: &Value| serde_json::to_string(v).unwrap();
        let mut outputs = Vec::new();
        for step in case["steps"].as_array().expect("steps") {
            let (kind, input) = step
                .as_object()
                .and_then(|o| o.iter().next())
                .expect("a step is {kind: input}");
            let out = match kind.as_str() {
                "initialized" => match session.initialized(&text(input)) {
                    Ok(open) => json!(open),
                    Err(e) => json!({ "error": e }),
                },
                "update" => match session.update(&text(input)) {
                    Ok(routed) => json!(routed),
                    Err(e) => json!({ "error": e.to_string() }),
                },
                "opened" => match session.opened(&text(input)) {
                    Ok(opened) => json!(opened),
                    Err(e) => json!({ "error": e }),
                },
                "openFailed" => json!(session.open_failed(
                    input["code"].as_i64().expect("code"),
                    input["message"].as_str().expect("message"),
                )),
                "agentEnded" => json!(session.agent_ended(
                    Duration::from_millis(input["atMs"].as_u64().expect("atMs")),
                    input["why"].as_str().expect("why"),
                )),
                "beginTurn" => {
                    let prompt = input.as_str().expect("prompt text");
                    json!(session.thread_mut().begin_turn(vec![Block::text(prompt)]))
                }
                "endTurn" => {
                    session
                        .thread_mut()
                        .end_turn(input.as_str().expect("stop reason"));
                    Value::Null
                }
                "promptAnswered" => match session.prompt_answered(&text(input)) {
                    Ok(stop) => json!({ "stopReason": stop }),
                    Err(e) => json!({ "error": e.to_string() }),
                },
                "turnEnded" => json!({ "stopReason": session.turn_ended() }),
                other => panic!("unknown step {other}"),
            };
            outputs.push(out);
        }
        json!({
            "steps": outputs,
            "sessionId": session.session_id(),
            "open": session.is_open(),
            "title": session.title(),
        })
    });
}

#[test]
fn remote_cases() {
    replay("remote.json", |case| {
        let s = |k: &str| case[k].as_str().unwrap_or_else(|| panic!("{k}"));
        match acp_client::remote::check_token_transport(
            s("scheme"),
            s("authority"),
            s("host"),
            case["allowInsecure"].as_bool().expect("allowInsecure"),
            "the switch",
        ) {
            Ok(()) => json!({ "ok": true }),
            Err(refused) => json!({ "refused": refused }),
        }
    });
}

#[test]
fn windows_cases() {
    use acp_client::windows;
    let text = |v: &Value| v.as_str().map(str::to_string);
    replay("windows.json", |case| {
        if let Some(f) = case.get("find") {
            // The face's answer: a case-insensitive file system holding `files`.
            let files: Vec<String> = f["files"]
                .as_array()
                .expect("files")
                .iter()
                .map(|v| v.as_str().expect("a file").to_ascii_lowercase())
                .collect();
            let found = windows::find_program(
                f["command"].as_str().expect("command"),
                f["path"].as_str().expect("path"),
                text(&f["pathext"]).as_deref(),
                |candidate| files.contains(&candidate.to_ascii_lowercase()),
            );
            json!(found)
        } else if let Some(p) = case.get("plan") {
            let facts: windows::Facts = serde_json::from_value(p["facts"].clone()).expect("facts");
            let args: Vec<String> = serde_json::from_value(p["args"].clone()).expect("args");
            match windows::plan(&facts, &args) {
                Ok(spawn) => json!({ "spawn": spawn }),
                Err(e) => json!({ "error": e }),
            }
        } else if let Some(c) = case.get("contains") {
            json!(windows::contains(
                c["root"].as_str().expect("root"),
                c["path"].as_str().expect("path")
            ))
        } else {
            panic!("a windows.json case is find, plan or contains: {case}")
        }
    });
}

/// A row with its generators expanded (inputs and `expect`), so huge inputs and their long
/// diffs are written small: `{"$lines": {"text": T, "count": N}}` is the text `T1\nT2\n…TN\n`,
/// `{"$repeat": S, "times": N}` is S N times, and in an array `{"$each": {"text": T, "from":
/// A, "count": N}}` stands for the N strings `TA`, `TA+1`….
fn expand(v: &Value) -> Value {
    match v {
        Value::Object(o) => {
            if let Some(g) = o.get("$lines") {
                let text = g["text"].as_str().expect("$lines text");
                let count = g["count"].as_u64().expect("$lines count");
                return Value::String((1..=count).map(|i| format!("{text}{i}\n")).collect());
            }
            if let Some(s) = o.get("$repeat") {
                let times = o["times"].as_u64().expect("$repeat times");
                return Value::String(s.as_str().expect("$repeat text").repeat(times as usize));
            }
            Value::Object(o.iter().map(|(k, v)| (k.clone(), expand(v))).collect())
        }
        Value::Array(a) => {
            let mut out = Vec::new();
            for v in a {
                match v.get("$each") {
                    Some(g) => {
                        let text = g["text"].as_str().expect("$each text");
                        let from = g["from"].as_u64().expect("$each from");
                        let count = g["count"].as_u64().expect("$each count");
                        out.extend((from..from + count).map(|i| json!(format!("{text}{i}"))));
                    }
                    None => out.push(expand(v)),
                }
            }
            Value::Array(out)
        }
        v => v.clone(),
    }
}

/// The other way, for `ACP_BLESS`: runs of 20 or more strings `TA`, `TA+1`… in an array
/// written as one `$each`.
fn compress(v: Value) -> Value {
    fn split(s: &str) -> Option<(&str, u64)> {
        let digits = s.len() - s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (text, n) = s.split_at(s.len() - digits);
        if digits == 0 || n.starts_with('0') {
            return None;
        }
        Some((text, n.parse().ok()?))
    }
    match v {
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, compress(v))).collect()),
        Value::Array(a) => {
            let mut out = Vec::new();
            let mut i = 0;
            while i < a.len() {
                let run = a[i].as_str().and_then(split).map(|(text, from)| {
                    let len = a[i..]
                        .iter()
                        .zip(from..)
                        .take_while(|(v, n)| v.as_str().and_then(split) == Some((text, *n)))
                        .count();
                    (text.to_string(), from, len)
                });
                match run {
                    Some((text, from, len)) if len >= 20 => {
                        out.push(json!({"$each": {"text": text, "from": from, "count": len}}));
                        i += len;
                    }
                    _ => {
                        out.push(compress(a[i].clone()));
                        i += 1;
                    }
                }
            }
            Value::Array(out)
        }
        v => v,
    }
}

#[test]
fn question_cases() {
    use acp_client::question::{self, WriteRequest};
    use acp_client::writes::Sensitive;
    replay("question.json", |case| {
        let case = expand(case);
        let q = if let Some(request) = case.get("request") {
            question::permission(request, case.get("known"))
        } else if let Some(w) = case.get("write") {
            let reason: Sensitive = serde_json::from_value(w["reason"].clone()).expect("reason");
            question::write(&WriteRequest {
                path: w["path"].as_str().expect("path"),
                asked_path: w.get("askedPath").and_then(Value::as_str),
                reason,
                exists: w["exists"].as_bool().expect("exists"),
                executable: w["executable"].as_bool().expect("executable"),
                old_text: w["oldText"].as_str(),
                new_text: w["newText"].as_str().expect("newText"),
            })
        } else if let Some(c) = case.get("command") {
            let request: CommandRequest =
                serde_json::from_value(c["request"].clone()).expect("request");
            let user: HashMap<String, String> =
                serde_json::from_value(c["userEnv"].clone()).expect("userEnv");
            let q = terminal::question(&request, |n| user.get(n).cloned()).expect("a question");
            question::command(&q)
        } else {
            panic!("a row has `request`, `write` or `command`")
        };
        // Whatever the agent sent, nothing shown holds a hidden character.
        let shown = serde_json::to_value(&q).unwrap();
        // The wasm build's JSON writer writes what serde does.
        let written: Value = serde_json::from_str(&q.to_json()).expect("valid JSON");
        assert_eq!(written, shown, "{:?}: to_json", case["name"]);
        let mut strings = Vec::new();
        collect_strings(&shown, &mut strings);
        for s in strings {
            assert!(
                !s.chars().any(acp_client::display::is_hidden),
                "{:?}: {s:?}",
                case["name"]
            );
        }
        shown
    });
}

fn collect_strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(o) => o
            .iter()
            .filter(|(k, _)| k.as_str() != "optionId")
            .for_each(|(_, v)| collect_strings(v, out)),
        _ => {}
    }
}

#[test]
fn edit_cases() {
    use acp_client::edits::{EditRecord, Prior};
    replay("edits.json", |case| {
        let mut record = EditRecord::new();
        for w in case["writes"].as_array().expect("writes") {
            let before: Prior = serde_json::from_value(w["before"].clone()).expect("before");
            record.record(
                w["path"].as_str().expect("path"),
                before,
                w["after"].as_str().expect("after"),
            );
        }
        let u = &case["undo"];
        let path = u["path"].as_str().expect("undo.path");
        let step = record.undo(
            path,
            u["now"].as_str(),
            u["force"].as_bool().expect("force"),
        );
        let mut got = json!(step);
        if let acp_client::edits::UndoStep::Refuse { reason } = step {
            got["message"] = json!(reason.describe(path));
        }
        got
    });
}
