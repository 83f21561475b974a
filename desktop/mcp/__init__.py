"""The MCP adapter: an MCP server on stdio that calls the running Keepmind's API."""
