// The SEP-1862 reference server (manage_files.ts) over Streamable HTTP with
// sessions (the 2025-11-25 era), the way the SDK's examples serve it: one
// transport and one server per session, keyed by `Mcp-Session-Id`, on
// node's own http module. Listens on 127.0.0.1 at the port given as the
// first argument and prints `listening` once it accepts connections.

import { randomUUID } from "node:crypto";
import { createServer as createHttpServer, IncomingMessage, ServerResponse } from "node:http";

import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";

import { createServer } from "./manage_files.js";

const transports = new Map<string, StreamableHTTPServerTransport>();

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    chunks.push(chunk as Buffer);
  }
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.url !== "/mcp") {
    res.writeHead(404).end();
    return;
  }
  const sessionId = req.headers["mcp-session-id"] as string | undefined;
  if (req.method !== "POST") {
    const transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport) {
      res.writeHead(400).end("unknown session");
      return;
    }
    await transport.handleRequest(req, res);
    return;
  }
  const body = await readJson(req);
  let transport = sessionId ? transports.get(sessionId) : undefined;
  if (!transport) {
    if (sessionId || !isInitializeRequest(body)) {
      res.writeHead(400, { "content-type": "application/json" }).end(
        JSON.stringify({
          jsonrpc: "2.0",
          error: { code: -32000, message: "Bad Request: no valid session" },
          id: null,
        }),
      );
      return;
    }
    const created = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        transports.set(id, created);
      },
    });
    created.onclose = () => {
      if (created.sessionId) transports.delete(created.sessionId);
    };
    await createServer().connect(created);
    transport = created;
  }
  await transport.handleRequest(req, res, body);
}

const port = Number(process.argv[2] ?? "0");
const http = createHttpServer((req, res) => {
  handle(req, res).catch((e) => {
    if (!res.headersSent) res.writeHead(500);
    res.end(String(e));
  });
});
http.listen(port, "127.0.0.1", () => {
  process.stdout.write("listening\n");
});
