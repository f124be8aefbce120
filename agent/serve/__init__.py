"""hoptree served: the HTTP API (native routes, the OpenAI-compatible routes, the trace page in
``web/``) and the MCP server."""
