//! MCP servers for `session/new` / `session/load`: read from the JSON users already keep for
//! other agents (`{"mcpServers": {"name": {"command", "args", "env"} | {"type": "http"|"sse",
//! "url", "headers"}}}`, the shape of Claude Desktop, Cursor and Gemini CLI configs), and kept
//! or left out per the agent's `mcpCapabilities` (stdio always; http and sse only when
//! advertised). `tests/client/mcp.json` is the case table.

use serde::{Deserialize, Serialize};

/// A `McpServer` as the wire carries it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum McpServer {
    /// An HTTP or SSE server (`"type": "http"` or `"sse"`): the agent connects to its URL.
    Remote(RemoteServer),
    /// A command the agent starts (no `type` on the wire).
    Stdio(StdioServer),
}

/// `McpServerStdio`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StdioServer {
    /// The server's name: its key in the config file.
    pub name: String,
    /// The program the agent runs (never empty when read by [`parse_config`]).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set for it ([`parse_config`] gives them sorted by name, every name a valid
    /// variable name: [`crate::env::valid_name`]).
    pub env: Vec<NameValue>,
}

/// `McpServerHttp` / `McpServerSse`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteServer {
    /// `http` or `sse`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The server's name: its key in the config file.
    pub name: String,
    /// Its `http://` or `https://` URL.
    pub url: String,
    /// HTTP headers the agent sends with each request ([`parse_config`] gives them sorted by
    /// name).
    pub headers: Vec<NameValue>,
}

/// `EnvVariable` / `HttpHeader`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NameValue {
    /// The variable's or header's name.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// The agent's `mcpCapabilities`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpCapabilities {
    /// The agent connects to MCP servers over HTTP (`mcpCapabilities.http`).
    #[serde(default)]
    pub http: bool,
    /// The agent connects to MCP servers over SSE (`mcpCapabilities.sse`).
    #[serde(default)]
    pub sse: bool,
}

/// The servers to send, and the ones left out with why (to tell the user).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selection {
    /// The servers to send in `mcpServers`, in the order given.
    pub servers: Vec<McpServer>,
    /// One line per server left out: its name and why (for the user).
    pub left_out: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct File {
    mcp_servers: serde_json::Map<String, serde_json::Value>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    disabled: bool,
}

fn pairs(map: std::collections::BTreeMap<String, String>) -> Vec<NameValue> {
    map.into_iter()
        .map(|(name, value)| NameValue { name, value })
        .collect()
}

/// Reads a config file's text, servers sorted by name. Errors name the server and what is
/// wrong; disabled entries (`"disabled": true`) are skipped.
pub fn parse_config(text: &str) -> Result<Vec<McpServer>, String> {
    let file: File = serde_json::from_str(text)
        .map_err(|e| format!("not an MCP config (an object with \"mcpServers\"): {e}"))?;
    let mut out = Vec::new();
    for (name, value) in file.mcp_servers {
        let e: Entry =
            serde_json::from_value(value).map_err(|e| format!("server `{name}`: {e}"))?;
        if e.disabled {
            continue;
        }
        let kind = e
            .kind
            .as_deref()
            .unwrap_or(if e.url.is_some() { "http" } else { "stdio" });
        match kind {
            "stdio" => {
                let command = e
                    .command
                    .filter(|c| !c.is_empty())
                    .ok_or_else(|| format!("server `{name}`: a stdio server needs \"command\""))?;
                for var in e.env.keys() {
                    if !crate::env::valid_name(var) {
                        return Err(format!(
                            "server `{name}`: invalid environment variable name `{}`",
                            crate::display::escape_line(var)
                        ));
                    }
                }
                out.push(McpServer::Stdio(StdioServer {
                    name,
                    command,
                    args: e.args,
                    env: pairs(e.env),
                }));
            }
            "http" | "sse" | "streamable-http" | "streamableHttp" => {
                let url = e
                    .url
                    .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
                    .ok_or_else(|| {
                        format!("server `{name}`: a remote server needs an http(s) \"url\"")
                    })?;
                let kind = if kind == "sse" { "sse" } else { "http" };
                out.push(McpServer::Remote(RemoteServer {
                    kind: kind.to_string(),
                    name,
                    url,
                    headers: pairs(e.headers),
                }));
            }
            other => return Err(format!("server `{name}`: unknown type `{other}`")),
        }
    }
    // By name: the same order whatever map serde_json was built with (feature unification
    // can turn on `preserve_order`).
    out.sort_by(|a, b| a.name().cmp(b.name()));
    Ok(out)
}

impl McpServer {
    /// The server's name.
    pub fn name(&self) -> &str {
        match self {
            McpServer::Remote(r) => &r.name,
            McpServer::Stdio(s) => &s.name,
        }
    }
}

/// Keeps what the agent can use: stdio servers always, http and sse ones when advertised.
pub fn select(servers: &[McpServer], caps: McpCapabilities) -> Selection {
    let mut sel = Selection::default();
    for s in servers {
        match s {
            McpServer::Remote(r)
                if (r.kind == "http" && !caps.http) || (r.kind == "sse" && !caps.sse) =>
            {
                sel.left_out.push(format!(
                    "{} ({} servers are not supported by this agent)",
                    r.name, r.kind
                ));
            }
            _ => sel.servers.push(s.clone()),
        }
    }
    sel
}
