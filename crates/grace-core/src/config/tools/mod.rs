//! The `tools` section: which tools exist, how each call is bounded and
//! retried, who may see each tool, and where tools beyond the built-in
//! three come from (other MCP servers, the web, scripts created at run
//! time), with the reflection thresholds that mark a tool unreliable.

mod validate;
pub(super) use self::validate::validate_tools;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The tools a run may use (see `grace::tools`). Only the tools named in
/// `enabled` are constructed; a name GRACE does not know is an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    /// Tools a run may use (`tools.enabled`); known: `rag_search`, `reasoning`,
    /// `ask_user`.
    pub enabled: Vec<String>,
    /// Timeout, retries and default limit of `rag_search` (`tools.rag_search`).
    pub rag_search: RagSearchConfig,
    /// Timeout and retries of `reasoning` (`tools.reasoning`).
    pub reasoning: ReasoningConfig,
    /// Timeout and retries of `ask_user` (`tools.ask_user`).
    pub ask_user: AskUserConfig,
    /// Other MCP servers whose tools GRACE registers as `mcp.<server>.<tool>`.
    pub mcp_servers: Vec<McpServerConfig>,
    /// `web_fetch` and `web_search` (`tools.web`).
    pub web: WebConfig,
    /// Tools created at run time, as `rt.<name>` (`tools.runtime`).
    pub runtime: RuntimeToolsConfig,
    /// When a tool is marked unreliable, slow or disabled (`tools.reflection`).
    pub reflection: ReflectionConfig,
}

/// The built-in search tool's name (`grace::tools::RagSearch::NAME`).
pub const RAG_SEARCH: &str = "rag_search";
/// The built-in answering tool's name (`grace::tools::Reasoning::NAME`).
pub const REASONING: &str = "reasoning";
/// The built-in tool that asks a person (`grace::tools::AskUser::NAME`).
pub const ASK_USER: &str = "ask_user";

impl Default for ToolsConfig {
    fn default() -> Self {
        Self {
            enabled: [RAG_SEARCH, REASONING, ASK_USER]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            rag_search: RagSearchConfig::default(),
            reasoning: ReasoningConfig::default(),
            ask_user: AskUserConfig::default(),
            mcp_servers: Vec::new(),
            web: WebConfig::default(),
            runtime: RuntimeToolsConfig::default(),
            reflection: ReflectionConfig::default(),
        }
    }
}

/// How a tool call is bounded and retried.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToolPolicy {
    /// A call running longer fails with a timeout.
    pub timeout_seconds: f64,
    /// Extra attempts after a transient failure or a timeout.
    pub retry_count: u32,
    /// Wait before the first retry; doubled before each further one.
    pub retry_delay_seconds: f64,
}

/// The most passages one `rag_search` call (and so one ask) may retrieve:
/// `tools.rag_search.limit`, an ask's `limit` and a plan's `limit` are
/// checked against it.
pub const MAX_RAG_SEARCH_LIMIT: usize = 100;

/// `rag_search`: vector search over the knowledge base.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RagSearchConfig {
    /// Seconds one call may take before it fails as a timeout.
    pub timeout_seconds: f64,
    /// Retries after a timeout or a transient failure.
    pub retry_count: u32,
    /// Seconds to wait before the first retry; doubled before each further one.
    pub retry_delay_seconds: f64,
    /// Who may see the tool.
    pub callers: Callers,
    /// Passages returned when the call gives no `limit`.
    pub limit: usize,
}

impl Default for RagSearchConfig {
    fn default() -> Self {
        Self {
            timeout_seconds: 10.0,
            retry_count: 1,
            retry_delay_seconds: 0.5,
            callers: Callers::ALL,
            limit: 5,
        }
    }
}

/// `reasoning`: an answer from sources by the configured generator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReasoningConfig {
    /// Seconds one call may take before it fails as a timeout.
    pub timeout_seconds: f64,
    /// Retries after a timeout or a transient failure.
    pub retry_count: u32,
    /// Seconds to wait before the first retry; doubled before each further one.
    pub retry_delay_seconds: f64,
    /// Who may see the tool.
    pub callers: Callers,
}

impl Default for ReasoningConfig {
    fn default() -> Self {
        Self {
            timeout_seconds: 30.0,
            retry_count: 1,
            retry_delay_seconds: 1.0,
            callers: Callers::ALL,
        }
    }
}

/// `ask_user`: a structured question for a human.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AskUserConfig {
    /// Seconds one call may take before it fails as a timeout.
    pub timeout_seconds: f64,
    /// Retries after a timeout or a transient failure.
    pub retry_count: u32,
    /// Seconds to wait before the first retry; doubled before each further one.
    pub retry_delay_seconds: f64,
    /// Who may see the tool.
    pub callers: Callers,
}

impl Default for AskUserConfig {
    fn default() -> Self {
        Self {
            timeout_seconds: 5.0,
            retry_count: 0,
            retry_delay_seconds: 0.0,
            callers: Callers::ALL,
        }
    }
}

/// Who may see and call a tool.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Caller {
    /// The planner and the agent loop (the catalogue a model reads).
    Agent,
    /// Clients of `grace mcp`.
    Mcp,
    /// Clients of the HTTP API (`GET /v1/tools`, `POST /v1/tools/{name}/call`).
    Http,
}

impl Caller {
    /// Every caller, in a fixed order.
    pub const ALL: [Caller; 3] = [Caller::Agent, Caller::Mcp, Caller::Http];

    /// The name used in config and output.
    pub fn as_str(self) -> &'static str {
        match self {
            Caller::Agent => "agent",
            Caller::Mcp => "mcp",
            Caller::Http => "http",
        }
    }
}

/// A set of [`Caller`]s, written in config as a list
/// (`callers: [agent, mcp, http]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Vec<Caller>", into = "Vec<Caller>")]
pub struct Callers(u8);

impl Callers {
    /// Every caller.
    pub const ALL: Callers = Callers(0b111);
    /// The agent and planner only.
    pub const AGENT: Callers = Callers(0b001);

    fn bit(c: Caller) -> u8 {
        match c {
            Caller::Agent => 1,
            Caller::Mcp => 2,
            Caller::Http => 4,
        }
    }

    /// Whether `caller` is in the set.
    pub fn allows(self, caller: Caller) -> bool {
        self.0 & Self::bit(caller) != 0
    }

    /// The callers in the set, in [`Caller::ALL`] order.
    pub fn list(self) -> Vec<Caller> {
        Caller::ALL
            .into_iter()
            .filter(|c| self.allows(*c))
            .collect()
    }
}

impl From<Vec<Caller>> for Callers {
    fn from(list: Vec<Caller>) -> Self {
        Callers(list.into_iter().fold(0, |m, c| m | Self::bit(c)))
    }
}

impl From<Callers> for Vec<Caller> {
    fn from(c: Callers) -> Self {
        c.list()
    }
}

/// Keys every tool's section has at its top level (serde's `flatten` does
/// not combine with `deny_unknown_fields`): the call policy and who sees it.
macro_rules! tool_policy {
    ($($config:ty),*) => {$(
        impl $config {
            /// Timeout and retries of the tool.
            pub fn policy(&self) -> ToolPolicy {
                ToolPolicy {
                    timeout_seconds: self.timeout_seconds,
                    retry_count: self.retry_count,
                    retry_delay_seconds: self.retry_delay_seconds,
                }
            }
        }
    )*};
}

tool_policy!(
    RagSearchConfig,
    ReasoningConfig,
    AskUserConfig,
    WebFetchConfig,
    WebSearchConfig,
    McpServerConfig,
    RuntimeToolsConfig
);

/// A server whose tools GRACE takes (`tools.mcp_servers[]`): started as a
/// child process on stdio (`command`, `args`, `env`) or reached over
/// streamable HTTP (`url`). Its tools are registered as
/// `mcp.<name>.<tool>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpServerConfig {
    /// The server's name in tool names (`mcp.<name>.<tool>`): lowercase
    /// letters, digits and `_`, at most 32.
    pub name: String,
    /// Whether its tools are registered.
    pub enabled: bool,
    /// The program to start (stdio); exclusive with `url`.
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment variables set for it (nothing else of GRACE's
    /// environment is passed beyond `PATH`, `HOME` and `LANG`).
    pub env: BTreeMap<String, String>,
    /// Streamable-HTTP endpoint (`http(s)://host:port/mcp`); exclusive with
    /// `command`.
    pub url: Option<String>,
    /// An environment variable holding a bearer token sent to `url`.
    pub bearer_token_env: Option<String>,
    /// Tools to take (empty: all); glob patterns on the server's own names.
    pub include: Vec<String>,
    /// Tools to leave out; glob patterns, applied after `include`.
    pub exclude: Vec<String>,
    /// Seconds one call may take (every tool of the server, unless
    /// `tools.<tool>` says otherwise).
    pub timeout_seconds: f64,
    /// Retries after a timeout or a transient failure (a lost connection).
    pub retry_count: u32,
    /// Seconds before the first retry; doubled before each further one.
    pub retry_delay_seconds: f64,
    /// Who may see its tools.
    pub callers: Callers,
    /// Seconds the first connection (start, handshake, tool list) may take.
    pub connect_timeout_seconds: f64,
    /// Longest wait between reconnection attempts after the server went
    /// away (the wait doubles from 1 s up to this).
    pub reconnect_max_seconds: f64,
    /// Bytes of one call's result kept at most (text beyond is cut).
    pub max_result_bytes: usize,
    /// Per-tool overrides, keyed by the server's own tool name.
    pub tools: BTreeMap<String, ToolOverride>,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        Self {
            name: String::new(),
            enabled: true,
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            url: None,
            bearer_token_env: None,
            include: Vec::new(),
            exclude: Vec::new(),
            timeout_seconds: 30.0,
            retry_count: 1,
            retry_delay_seconds: 1.0,
            callers: Callers::AGENT,
            connect_timeout_seconds: 20.0,
            reconnect_max_seconds: 60.0,
            max_result_bytes: 262_144,
            tools: BTreeMap::new(),
        }
    }
}

impl McpServerConfig {
    /// The policy and callers of the server's tool `tool`: the server's,
    /// with the tool's overrides on top; `None` when the override disables it.
    pub fn tool_policy(&self, tool: &str) -> Option<(ToolPolicy, Callers)> {
        let base = self.policy();
        let Some(o) = self.tools.get(tool) else {
            return Some((base, self.callers));
        };
        if o.enabled == Some(false) {
            return None;
        }
        Some((
            ToolPolicy {
                timeout_seconds: o.timeout_seconds.unwrap_or(base.timeout_seconds),
                retry_count: o.retry_count.unwrap_or(base.retry_count),
                retry_delay_seconds: o.retry_delay_seconds.unwrap_or(base.retry_delay_seconds),
            },
            o.callers.unwrap_or(self.callers),
        ))
    }
}

/// One tool's overrides of its server's policy (`tools.mcp_servers[].tools.<tool>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct ToolOverride {
    /// `false` leaves the tool out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Seconds one call may take.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<f64>,
    /// Retries after a timeout or a transient failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_count: Option<u32>,
    /// Seconds before the first retry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_delay_seconds: Option<f64>,
    /// Who may see the tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub callers: Option<Callers>,
}

/// The web tools (`tools.web`): `web_fetch` and `web_search`, both off by
/// default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct WebConfig {
    /// Host names or IP addresses (`host` or `host:port`) that may be
    /// fetched although they are loopback, private, link-local or
    /// metadata addresses; nothing else of that kind is ever fetched.
    pub allow_hosts: Vec<String>,
    /// `web_fetch` (`tools.web.fetch`).
    pub fetch: WebFetchConfig,
    /// `web_search` (`tools.web.search`).
    pub search: WebSearchConfig,
}

/// `web_fetch`: one http(s) page, read as passages scored against the
/// question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebFetchConfig {
    /// Whether the tool is registered.
    pub enabled: bool,
    /// Seconds one call (all redirects, the body) may take.
    pub timeout_seconds: f64,
    /// Retries after a timeout or a transient failure.
    pub retry_count: u32,
    /// Seconds before the first retry; doubled before each further one.
    pub retry_delay_seconds: f64,
    /// Who may see the tool.
    pub callers: Callers,
    /// Bytes of a body read at most; the rest is cut (and said so).
    pub max_bytes: usize,
    /// Redirects followed at most, each checked like the first URL.
    pub max_redirects: usize,
    /// Content types read (by their `type/subtype`); others are refused.
    pub content_types: Vec<String>,
    /// Whether `robots.txt` is read and obeyed.
    pub respect_robots: bool,
    /// The `User-Agent` sent (and matched in `robots.txt`).
    pub user_agent: String,
    /// Passages returned at most.
    pub passages: usize,
}

impl Default for WebFetchConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            timeout_seconds: 15.0,
            retry_count: 1,
            retry_delay_seconds: 1.0,
            callers: Callers::AGENT,
            max_bytes: 2_000_000,
            max_redirects: 5,
            content_types: [
                "text/html",
                "text/markdown",
                "text/plain",
                "text/x-markdown",
            ]
            .map(String::from)
            .to_vec(),
            respect_robots: true,
            user_agent: concat!("grace/", env!("CARGO_PKG_VERSION")).to_string(),
            passages: 5,
        }
    }
}

/// `web_search`: a search endpoint's results (titles, snippets, URLs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebSearchConfig {
    /// Whether the tool is registered.
    pub enabled: bool,
    /// The endpoint, e.g. a SearXNG instance's `http://host:8888/search`.
    pub endpoint: String,
    /// The response shape: `searxng` (`{results: [{title, url, content}]}`).
    pub shape: String,
    /// Query parameter carrying the query.
    pub query_param: String,
    /// Extra query parameters sent with every search (SearXNG needs
    /// `format: json`).
    pub params: BTreeMap<String, String>,
    /// Seconds one call may take.
    pub timeout_seconds: f64,
    /// Retries after a timeout or a transient failure.
    pub retry_count: u32,
    /// Seconds before the first retry; doubled before each further one.
    pub retry_delay_seconds: f64,
    /// Who may see the tool.
    pub callers: Callers,
    /// Results returned at most.
    pub max_results: usize,
}

impl Default for WebSearchConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            endpoint: String::new(),
            shape: "searxng".to_string(),
            query_param: "q".to_string(),
            params: BTreeMap::from([("format".to_string(), "json".to_string())]),
            timeout_seconds: 15.0,
            retry_count: 1,
            retry_delay_seconds: 1.0,
            callers: Callers::AGENT,
            max_results: 5,
        }
    }
}

/// Tools created at run time (`tools.runtime`): JavaScript run in a
/// QuickJS sandbox, registered as `rt.<name>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RuntimeToolsConfig {
    /// Whether stored run-time tools are registered and may be created.
    pub enabled: bool,
    /// Whether the agent may create tools (`create_tool` in its catalogue).
    pub allow_agent_create: bool,
    /// Whether `grace mcp` offers the tools that create and delete them.
    pub allow_mcp_create: bool,
    /// Seconds one call may take (the script's time budget).
    pub timeout_seconds: f64,
    /// Retries after a timeout or a transient failure.
    pub retry_count: u32,
    /// Seconds before the first retry.
    pub retry_delay_seconds: f64,
    /// Who may see run-time tools.
    pub callers: Callers,
    /// Bytes of a script at most.
    pub max_code_bytes: usize,
    /// Bytes of memory a script may allocate.
    pub memory_bytes: usize,
    /// Bytes of stack a script may use (deep recursion stops here).
    pub stack_bytes: usize,
    /// Bytes of a script's result at most.
    pub max_output_bytes: usize,
    /// Run-time tools at most.
    pub max_tools: usize,
}

impl Default for RuntimeToolsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            allow_agent_create: false,
            allow_mcp_create: false,
            timeout_seconds: 2.0,
            retry_count: 0,
            retry_delay_seconds: 0.0,
            callers: Callers::ALL,
            max_code_bytes: 65_536,
            memory_bytes: 16 * 1024 * 1024,
            stack_bytes: 256 * 1024,
            max_output_bytes: 65_536,
            max_tools: 100,
        }
    }
}

/// When a tool is marked unreliable or slow, or disabled
/// (`tools.reflection`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReflectionConfig {
    /// Failures in a row with the same kind that mark a tool unreliable.
    pub failures: u32,
    /// Failures in a row after which a tool is disabled until
    /// `grace tools enable` (0: never).
    pub disable_after: u32,
    /// A tool whose p95 latency is above this many seconds is slow.
    pub slow_seconds: f64,
    /// Calls kept per tool for latency percentiles and failure patterns.
    pub history: usize,
}

impl Default for ReflectionConfig {
    fn default() -> Self {
        Self {
            failures: 3,
            disable_after: 0,
            slow_seconds: 5.0,
            history: 1000,
        }
    }
}
