// Package mcp is contextd's MCP client: one [Session] per configured upstream
// server, over stdio or Streamable HTTP, built on the official go-sdk
// (imported everywhere as mcpsdk, since this package shares its name).
//
// A Session does only what contextd needs from a server's resources
// (MCP specification 2025-11-25, "Resources"):
//
//   - After initialize it checks the resources capability. A server without
//     it receives no resources/* request at all; its lists are empty and
//     complete, and [Session.Read] fails with [ErrNoResources].
//   - [Session.ListResources] and [Session.ListTemplates] walk every page by
//     nextCursor with their own loop (the SDK's page iterator has no guard):
//     a repeated cursor or more than [Options.MaxPages] pages stops the walk
//     and marks the list incomplete.
//   - [Session.Read] returns every content item: text with its MIME type,
//     blobs decoded to bytes, a missing MIME type left empty (never guessed).
//     Not-found (-32002, or -32602 from servers that follow the newer
//     revision) is a [*NotFoundError], never empty content.
//   - [Session.Subscribe] uses resources/subscribe before protocol
//     2026-07-28 and a subscriptions/listen stream per URI from it, and
//     succeeds only for a URI the server's acknowledgement honours; see
//     listen.go for what the session adds to the go-sdk there.
//   - A stdio server's stdout lines that cannot begin a JSON-RPC message
//     (banners, log lines) are skipped and logged rather than ending the
//     session, and Close stops the process in stages: stdin closed, SIGTERM,
//     SIGKILL.
package mcp
