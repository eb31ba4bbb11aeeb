//! Choosing an `authMethods` entry when the agent says authentication is required.
//!
//! The rules (`tests/client/auth.json` is the case table):
//! 1. A method the user named (`acp chat --auth ID`) is used as it is; an unknown id is an
//!    error listing the methods.
//! 2. Otherwise an `env_var` method whose variables are all set in the agent's environment.
//! 3. Otherwise an `agent` method whose needs are met: one that speaks of an API key (or names
//!    variables) is used when its variables are set: the ones it names, else the well-known key
//!    of the provider it names (`Gemini` → `GEMINI_API_KEY`…); one that asks for setup the
//!    client cannot see (a gateway, a cloud project, a custom endpoint) is not chosen; one that
//!    asks nothing is. Agents such as gemini-cli and codex offer their browser/account logins
//!    as plain `agent` methods that print a URL to stdout and wait for a code read from the
//!    JSON-RPC stream, so a method whose id, name or description speaks of logging in,
//!    signing in, OAuth, a browser or an account is never started uninvited.
//! 4. `terminal` methods never run unless the user named them (the client advertises no
//!    terminal authentication).
//! 5. Nothing fits: the user is told, per method, what it needs (the variable to pass, or the
//!    `--auth` to name).

use serde::{Deserialize, Serialize};

/// An `AuthMethod` as far as the choice needs it (every type in one struct; unknown fields are
/// skipped).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthMethod {
    /// The method's id: what `authenticate`'s `methodId` and `acp chat --auth` name.
    pub id: String,
    /// Its name for the user (empty when the agent gave none).
    #[serde(default)]
    pub name: String,
    /// What the agent says of it, if anything.
    #[serde(default)]
    pub description: Option<String>,
    /// `agent` (also when absent), `env_var`, `terminal`, or a future type.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// `env_var`: the variable (RFD form).
    #[serde(default)]
    pub var_name: Option<String>,
    /// `env_var`: the variables (later form).
    #[serde(default)]
    pub vars: Vec<AuthVar>,
    /// `terminal`: arguments appended to the agent's own command line for its login.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// `terminal`: variables set for the login, over the agent's environment.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
}

/// A variable an `env_var` method reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthVar {
    /// The variable's name.
    pub name: String,
    /// Whether the method works without it (the choice never requires an optional variable).
    #[serde(default)]
    pub optional: bool,
}

/// Providers' well-known key variables, by a word a method's id, name or description uses.
const KNOWN_KEYS: &[(&str, &[&str])] = &[
    ("gemini", &["GEMINI_API_KEY", "GOOGLE_API_KEY"]),
    ("openai", &["OPENAI_API_KEY"]),
    ("codex", &["CODEX_API_KEY", "OPENAI_API_KEY"]),
    ("anthropic", &["ANTHROPIC_API_KEY"]),
    ("claude", &["ANTHROPIC_API_KEY"]),
    ("openrouter", &["OPENROUTER_API_KEY"]),
    ("mistral", &["MISTRAL_API_KEY"]),
    ("groq", &["GROQ_API_KEY"]),
    ("deepseek", &["DEEPSEEK_API_KEY"]),
    ("xai", &["XAI_API_KEY"]),
    ("dashscope", &["DASHSCOPE_API_KEY"]),
    ("qwen", &["DASHSCOPE_API_KEY"]),
];

/// What to do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "choice", rename_all = "snake_case")]
pub enum AuthChoice {
    /// Call `authenticate` with this method.
    #[serde(rename_all = "camelCase")]
    Authenticate {
        /// The `id` of the chosen [`AuthMethod`], as `authenticate`'s `methodId`.
        method_id: String,
        /// Why this method was chosen, for the user ("named with --auth", the variables that
        /// are set…).
        why: String,
    },
    /// The user named a `terminal` method: run the agent's login in the user's terminal.
    #[serde(rename_all = "camelCase")]
    Terminal {
        /// The `id` of the `terminal` method; [`terminal_login`] gives the command it runs.
        method_id: String,
    },
    /// Nothing can be chosen: tell the user this (one line per method).
    #[serde(rename_all = "camelCase")]
    NeedsUser {
        /// What to tell the user: that the method named does not exist (and which do), or that
        /// none can be used without them, then what each method needs, one line per method.
        message: String,
    },
}

impl AuthMethod {
    fn kind(&self) -> &str {
        self.kind.as_deref().unwrap_or("agent")
    }

    /// The variables an `env_var` method requires.
    fn required_vars(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.var_name.iter().map(String::as_str).collect();
        v.extend(
            self.vars
                .iter()
                .filter(|v| !v.optional)
                .map(|v| v.name.as_str()),
        );
        v
    }

    /// Variables named in the name or description (`GEMINI_API_KEY`, `GOOGLE_CLOUD_PROJECT`…):
    /// words of capitals, digits and `_`, with an `_` inside, starting with a capital.
    fn mentioned_vars(&self) -> Vec<String> {
        let text = format!(
            "{} {}",
            self.name,
            self.description.as_deref().unwrap_or("")
        );
        let mut vars: Vec<String> = text
            .split(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .map(|w| w.trim_matches('_'))
            .filter(|w| {
                w.len() > 3 && w.contains('_') && w.starts_with(|c: char| c.is_ascii_uppercase())
            })
            .map(str::to_string)
            .collect();
        vars.dedup();
        vars
    }

    fn text(&self) -> String {
        format!(
            "{} {} {}",
            self.id,
            self.name,
            self.description.as_deref().unwrap_or("")
        )
        .to_ascii_lowercase()
    }

    /// It speaks of an API key, a token or a secret.
    fn wants_key(&self) -> bool {
        let t = self.text();
        ["api key", "api-key", "apikey", "api_key", "token", "secret"]
            .iter()
            .any(|w| t.contains(w))
    }

    /// It needs setup the client cannot check (a gateway, a cloud project, an endpoint).
    fn wants_setup(&self) -> bool {
        let t = self.text();
        [
            "gateway",
            "custom",
            "endpoint",
            "proxy",
            "vertex",
            "cloud",
            "project",
            "enterprise",
            "bedrock",
            "azure",
        ]
        .iter()
        .any(|w| t.contains(w))
    }

    /// The variables that would satisfy it: the ones it names, else the well-known keys of the
    /// providers it names (any one of them will do).
    fn key_vars(&self) -> (Vec<String>, bool) {
        let named = self.mentioned_vars();
        if !named.is_empty() {
            return (named, true);
        }
        let t = self.text();
        let mut known = Vec::new();
        for (word, vars) in KNOWN_KEYS {
            if t.contains(word) {
                for v in *vars {
                    if !known.contains(&v.to_string()) {
                        known.push(v.to_string());
                    }
                }
            }
        }
        (known, false)
    }

    fn looks_interactive(&self) -> bool {
        let text = self.text();
        [
            "login",
            "log in",
            "log-in",
            "signin",
            "sign in",
            "sign-in",
            "oauth",
            "browser",
            "account",
            "chatgpt",
            "device code",
            "subscription",
        ]
        .iter()
        .any(|w| text.contains(w))
    }

    fn label(&self) -> String {
        if self.name.is_empty() || self.name == self.id {
            format!("`{}`", self.id)
        } else {
            format!("`{}` ({})", self.id, self.name)
        }
    }
}

/// The `authMethods` of an `initialize` answer as the agent sent it (JSON text), every type
/// kept (a typed parse may know only some); entries that are not methods are skipped.
pub fn methods_of(initialize_result: &str) -> Vec<AuthMethod> {
    #[derive(Deserialize)]
    struct Answer {
        #[serde(default, rename = "authMethods")]
        auth_methods: Vec<serde_json::Value>,
    }
    serde_json::from_str::<Answer>(initialize_result)
        .map(|a| {
            a.auth_methods
                .into_iter()
                .filter_map(|m| serde_json::from_value(m).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Chooses a method. `has_var(name)`: the variable is set (non-empty) in the environment the
/// agent gets; `requested`: the id the user named.
pub fn choose(
    methods: &[AuthMethod],
    has_var: impl Fn(&str) -> bool,
    requested: Option<&str>,
) -> AuthChoice {
    if let Some(id) = requested {
        return match methods.iter().find(|m| m.id == id) {
            Some(m) if m.kind() == "terminal" => AuthChoice::Terminal {
                method_id: m.id.clone(),
            },
            Some(m) => AuthChoice::Authenticate {
                method_id: m.id.clone(),
                why: "named with --auth".into(),
            },
            None => AuthChoice::NeedsUser {
                message: format!(
                    "the agent has no authentication method `{id}`; it offers: {}",
                    list(methods)
                ),
            },
        };
    }
    if let Some(m) = methods.iter().find(|m| {
        m.kind() == "env_var"
            && !m.required_vars().is_empty()
            && m.required_vars().iter().all(|v| has_var(v))
    }) {
        return AuthChoice::Authenticate {
            method_id: m.id.clone(),
            why: are_set(&m.required_vars()),
        };
    }
    if let Some((m, why)) = methods
        .iter()
        .filter(|m| m.kind() == "agent" && !m.looks_interactive())
        .find_map(|m| agent_method_ready(m, &has_var).map(|why| (m, why)))
    {
        return AuthChoice::Authenticate {
            method_id: m.id.clone(),
            why,
        };
    }
    let mut lines =
        vec!["the agent needs authentication and no method can be used without you:".to_string()];
    for m in methods {
        let need = match m.kind() {
            "env_var" => {
                let missing: Vec<&str> = m
                    .required_vars()
                    .into_iter()
                    .filter(|v| !has_var(v))
                    .collect();
                pass(&missing)
            }
            "terminal" => format!(
                "an interactive login in your terminal: run `acp login --method {}` with the same agent",
                m.id
            ),
            "agent" if m.looks_interactive() => format!(
                "may start an interactive login; choose it with --auth {}",
                m.id
            ),
            "agent" => {
                let (vars, all) = m.key_vars();
                let missing: Vec<String> = vars.iter().filter(|v| !has_var(v)).cloned().collect();
                if !missing.is_empty() && all {
                    pass(&missing)
                } else if !vars.is_empty() {
                    let flags: Vec<String> = vars.iter().map(|v| format!("--env {v}")).collect();
                    format!(
                        "set one of {} and pass it to the agent ({})",
                        vars.join(", "),
                        flags.join(" or ")
                    )
                } else if m.wants_key() {
                    format!(
                        "an API key: pass the agent's key variable with --env NAME, then choose it with --auth {}",
                        m.id
                    )
                } else {
                    format!(
                        "needs setup acp cannot check; choose it with --auth {}",
                        m.id
                    )
                }
            }
            other => format!("a `{other}` method this client does not know"),
        };
        lines.push(format!("  {}: {need}", m.label()));
    }
    if methods.is_empty() {
        lines.push("  (it offers no method: log in with the agent's own command first)".into());
    }
    AuthChoice::NeedsUser {
        message: lines.join("\n"),
    }
}

/// The command a `terminal` method runs in the user's terminal: the agent's own command line
/// (`program`, `args`) with the method's arguments appended and its variables set over the
/// agent's environment. A face shows it with [`crate::terminal::question`] (the same checks and
/// display as an agent's `terminal/create`) and runs it only when the user agrees.
pub fn terminal_login(
    method: &AuthMethod,
    program: &str,
    args: &[String],
    cwd: Option<&str>,
) -> crate::terminal::CommandRequest {
    crate::terminal::CommandRequest {
        command: program.to_string(),
        args: args.iter().chain(&method.args).cloned().collect(),
        cwd: cwd.map(str::to_string),
        env: method
            .env
            .iter()
            .map(|(name, value)| crate::terminal::EnvVariable {
                name: name.clone(),
                value: value.clone(),
            })
            .collect(),
    }
}

/// Why an `agent` method may be used without asking, or `None`.
fn agent_method_ready(m: &AuthMethod, has_var: &impl Fn(&str) -> bool) -> Option<String> {
    let (vars, all) = m.key_vars();
    if !vars.is_empty() {
        let set: Vec<&String> = vars.iter().filter(|v| has_var(v)).collect();
        let ok = if all {
            set.len() == vars.len()
        } else {
            !set.is_empty()
        };
        return ok.then(|| are_set(&set));
    }
    if m.wants_key() || m.wants_setup() {
        return None;
    }
    Some("the agent authenticates by itself".into())
}

/// "A is set" / "A and B are set".
fn are_set<S: AsRef<str>>(vars: &[S]) -> String {
    let names: Vec<&str> = vars.iter().map(AsRef::as_ref).collect();
    match names.as_slice() {
        [one] => format!("{one} is set"),
        _ => format!("{} are set", names.join(" and ")),
    }
}

/// "set A and pass it to the agent (--env A)".
fn pass<S: AsRef<str>>(vars: &[S]) -> String {
    let names: Vec<&str> = vars.iter().map(AsRef::as_ref).collect();
    let flags: Vec<String> = names.iter().map(|n| format!("--env {n}")).collect();
    let (list, it) = match names.as_slice() {
        [one] => (one.to_string(), "it"),
        _ => (names.join(" and "), "them"),
    };
    format!(
        "set {list} and pass {it} to the agent ({})",
        flags.join(" ")
    )
}

fn list(methods: &[AuthMethod]) -> String {
    if methods.is_empty() {
        return "none".into();
    }
    methods
        .iter()
        .map(AuthMethod::label)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_of_keeps_every_type_and_skips_junk() {
        let got = methods_of(
            r#"{"protocolVersion":1,"authMethods":[
                {"id":"k","name":"Key","type":"env_var","vars":[{"name":"K"}]},
                {"id":"t","name":"TUI","type":"terminal","args":["--login"],"env":{"X":"1"}},
                {"id":"a","name":"Agent"},
                42
            ]}"#,
        );
        let kinds: Vec<(&str, Option<&str>)> = got
            .iter()
            .map(|m| (m.id.as_str(), m.kind.as_deref()))
            .collect();
        assert_eq!(
            kinds,
            [("k", Some("env_var")), ("t", Some("terminal")), ("a", None)]
        );
        assert_eq!(got[0].vars[0].name, "K");
        assert_eq!(got[1].args, ["--login"]);
        assert_eq!(got[1].env.get("X").map(String::as_str), Some("1"));
        assert!(methods_of("not json").is_empty());
    }

    #[test]
    fn a_terminal_login_is_the_agents_command_with_the_methods_additions() {
        let m = methods_of(
            r#"{"authMethods":[{"id":"t","name":"TUI","type":"terminal","args":["--login"],"env":{"MODE":"tui"}}]}"#,
        );
        let req = terminal_login(&m[0], "npx", &["-y".into(), "agent".into()], Some("/w"));
        assert_eq!(req.command, "npx");
        assert_eq!(req.args, ["-y", "agent", "--login"]);
        assert_eq!(req.cwd.as_deref(), Some("/w"));
        assert_eq!(req.env.len(), 1);
        assert_eq!(
            (req.env[0].name.as_str(), req.env[0].value.as_str()),
            ("MODE", "tui")
        );
    }
}
