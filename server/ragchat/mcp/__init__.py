"""The MCP (Model Context Protocol) server: search, documents and cited answers as tools for AI clients.

`ragchat.mcp.server` builds the tools on the official `mcp` SDK; `ragchat mcp` serves them over stdio as a local
user, and the app mounts them at `/mcp` (streamable HTTP, a personal API token per request: `ragchat.mcp.http`).
"""
