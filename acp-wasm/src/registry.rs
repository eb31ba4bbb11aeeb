//! Agent presets for JavaScript (feature `client`): acp-client's [`registry::presets`], the
//! built-in snapshot of well-known agents with an optional registry file laid over it, each
//! with how it starts on the given platform. Mechanical: the rules live in acp-client.

use acp_client::registry;
use serde_json::{Map, Value};
use wasm_bindgen::prelude::*;

use crate::errors::type_error;

#[allow(dead_code)] // read through the custom section
const TS_TYPES: &str = r#"
/** One variable a registry entry sets (acp-client's `registry::EntryVar`): `shown` is
 *  `NAME=value` on one line; `refused` when it changes what code runs or cannot be set. */
export interface AgentPresetVar {
  name: string;
  value: string;
  shown: string;
  status: "passed" | "replaced" | "refused";
}
/** One agent to offer (acp-client's `registry::Preset`): `launch` when it starts by a command
 *  here (`command[0]` the program, the rest its arguments; `env` what it sets), `env` every
 *  variable it sets, reviewed; `problem` why it cannot be offered as it is (no command here, or
 *  a refused variable: then `launch` is there too, to be shown). */
export interface AgentPreset {
  id: string;
  name: string;
  version: string;
  description: string;
  launch?: { command: string[]; env: Record<string, string>; via: string };
  env: AgentPresetVar[];
  problem?: string;
}
/** What `agentPresets` answers: the presets, and why an overlay was left out. */
export interface AgentPresets {
  agents: AgentPreset[];
  overlayProblem?: string;
}
"#;

#[wasm_bindgen(typescript_custom_section)]
const TS_APPEND: &str = TS_TYPES;

/// The agents to offer: `platform` is a registry platform key (`linux-x86_64`,
/// `darwin-aarch64`…), `overlayJson` a registry file's text (the cached public registry) or
/// null. JSON text of an `AgentPresets`.
#[wasm_bindgen(js_name = agentPresets, unchecked_return_type = "string")]
pub fn agent_presets(
    #[wasm_bindgen(unchecked_param_type = "string")] platform: JsValue,
    #[wasm_bindgen(js_name = overlayJson, unchecked_param_type = "string | null")]
    overlay_json: JsValue,
) -> Result<String, JsValue> {
    let platform = platform
        .as_string()
        .ok_or_else(|| type_error("platform must be a string such as \"linux-x86_64\""))?;
    let overlay = if overlay_json.is_null() || overlay_json.is_undefined() {
        None
    } else {
        Some(
            overlay_json
                .as_string()
                .ok_or_else(|| type_error("overlayJson must be a registry file's text or null"))?,
        )
    };
    let (presets, problem) = registry::presets(overlay.as_deref(), &platform);
    // Built by hand (plain loops, no derived `Serialize`): the wasm stays within its budget.
    let text = |s: &str| Value::String(s.to_owned());
    let mut agents = Vec::with_capacity(presets.len());
    for p in &presets {
        let mut a = Map::new();
        a.insert("id".into(), text(&p.id));
        a.insert("name".into(), text(&p.name));
        a.insert("version".into(), text(&p.version));
        a.insert("description".into(), text(&p.description));
        if let Some(l) = &p.launch {
            let mut launch = Map::new();
            launch.insert(
                "command".into(),
                Value::Array(l.command.iter().map(|c| text(c)).collect()),
            );
            let mut env = Map::new();
            for (k, v) in &l.env {
                env.insert(k.clone(), text(v));
            }
            launch.insert("env".into(), Value::Object(env));
            launch.insert("via".into(), text(&l.via));
            a.insert("launch".into(), Value::Object(launch));
        }
        let mut vars = Vec::with_capacity(p.env.len());
        for v in &p.env {
            let mut var = Map::new();
            var.insert("name".into(), text(&v.name));
            var.insert("value".into(), text(&v.value));
            var.insert("shown".into(), text(&v.shown));
            let status = match v.status {
                registry::VarStatus::Passed => "passed",
                registry::VarStatus::Replaced => "replaced",
                registry::VarStatus::Refused => "refused",
            };
            var.insert("status".into(), text(status));
            vars.push(Value::Object(var));
        }
        a.insert("env".into(), Value::Array(vars));
        if let Some(why) = &p.problem {
            a.insert("problem".into(), text(why));
        }
        agents.push(Value::Object(a));
    }
    let mut answer = Map::new();
    answer.insert("agents".into(), Value::Array(agents));
    if let Some(p) = problem {
        answer.insert("overlayProblem".into(), Value::String(p));
    }
    let answer = Value::Object(answer);
    Ok(answer.to_string())
}
