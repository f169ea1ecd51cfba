//! The MCP side: an rmcp `ServerHandler` that lists the tools of `tools::all` and
//! calls them. A call runs on a blocking thread (tools read files and the index);
//! whatever it returns, even a panic, is a tool result and the server goes on. An
//! unknown tool is a JSON-RPC error (invalid params), as the MCP specification says.

use super::tool::Entry;
use crate::history::History;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::sync::Arc;

const INSTRUCTIONS: &str = "fen-fs holds the history of past coding-agent sessions on this machine (fen's own and Claude Code's, Codex's, pi's, OpenCode's, Gemini CLI's, Copilot CLI's, Cursor's, OpenClaw's) and on other machines whose store is synced here (each session says its host). Use search_sessions to find what was said, decided or tried before; list_sessions for recent sessions (of a project: cwd; of a machine: host); read_session to read one, a page at a time; usage for the tokens and cost of the agents' model calls (per day, week, month, session, project, model, agent or machine); resume_command for the command that continues one. Everything is read-only.";

pub struct Server {
    history: Arc<History>,
    tools: Arc<Vec<Entry>>,
}

impl Server {
    pub fn new(history: Arc<History>) -> Server {
        Server {
            history,
            tools: Arc::new(super::tools::all()),
        }
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let mut info = Implementation::new("fen-fs", env!("CARGO_PKG_VERSION"));
        info.title = Some("fen-fs: past agent sessions".into());
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(info)
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.tools.iter().map(|t| t.spec.clone()).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(tool) = self
            .tools
            .iter()
            .find(|t| t.name() == request.name)
            .cloned()
        else {
            let names: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {:?}: the tools are {}",
                    request.name,
                    names.join(", ")
                ),
                None,
            ));
        };
        let history = self.history.clone();
        let args = request.arguments.unwrap_or_default();
        let name = tool.name().to_string();
        let ran = tokio::task::spawn_blocking(move || tool.call(&history, args)).await;
        let result = match ran {
            Ok(Ok(text)) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Ok(Err(e)) => CallToolResult::error(vec![ContentBlock::text(e.0)]),
            Err(e) => {
                log::error!("tool {name} failed: {e}");
                CallToolResult::error(vec![ContentBlock::text(format!(
                    "{name} failed inside fen-fs ({e}); the server goes on"
                ))])
            }
        };
        Ok(result.into())
    }
}
