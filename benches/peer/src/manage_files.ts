// The SEP-1862 reference server for `manage_files` ("Reference
// Implementation", Server Implementation (TypeScript)), on the official MCP
// TypeScript SDK. regent's load generator (benches/load) measures it next to
// regent in the same run: over stdio (server.ts) and HTTP (http.ts).
//
// The server code below is the SEP's, unchanged in logic. What the SEP leaves
// out is filled in the way the SDK itself does it:
// - the imports; the SEP's module-level code is wrapped in `createServer()`
//   so the HTTP entry point can make one server per session, as the SDK's
//   own examples do (the stdio entry point makes one);
// - `ResolveToolRequestSchema`: SDK 1.32.2 has no `tools/resolve`, so it is
//   defined here with zod exactly as the SDK defines `CallToolRequestSchema`
//   (`RequestSchema.extend({method: z.literal(...), params: ...})`, params
//   extending the SDK's base request params, which carry `_meta`).
// - the capabilities object is named before use (see there);
// `strict` is off in tsconfig.json so the SEP's code compiles as written
// (`args.action` on optional arguments).

import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  RequestSchema,
  TaskAugmentedRequestParamsSchema,
} from "@modelcontextprotocol/sdk/types.js";
import * as z from "zod/v4";

/** The SDK's base request params (`_meta`), which it does not export on its own. */
const BaseRequestParamsSchema = TaskAugmentedRequestParamsSchema.omit({ task: true });

/** Parameters for a `tools/resolve` request (SEP-1862). */
export const ResolveToolRequestParamsSchema = BaseRequestParamsSchema.extend({
  /** The name of the tool to resolve. */
  name: z.string(),
  /** The arguments the client intends to call the tool with. */
  arguments: z.record(z.string(), z.unknown()).optional(),
});

/** Sent from the client to get a tool's metadata refined for one set of arguments. */
export const ResolveToolRequestSchema = RequestSchema.extend({
  method: z.literal("tools/resolve"),
  params: ResolveToolRequestParamsSchema,
});

export function createServer(): Server {
  // ---- From here on: the SEP's reference implementation. ----

  // The SEP writes these capabilities inline; SDK 1.32.2's ServerCapabilities
  // type has no `tools.resolve`, so TypeScript rejects it as an excess property
  // of a literal. Declared as a constant first, the same object passes through
  // to the wire unchanged.
  const capabilities = {
    tools: {
      listChanged: false,
      resolve: true,
    },
  };

  const server = new Server(
    {
      name: "file-server",
      version: "1.0.0",
    },
    {
      capabilities,
    },
  );

  // Base tool definition (used in both list and resolve)
  const manageFilesTool = {
    name: "manage_files",
    description: "Read, append, replace, or delete file contents",
    inputSchema: {
      type: "object" as const,
      properties: {
        path: { type: "string", description: "File path to operate on" },
        action: {
          type: "string",
          enum: ["read", "append", "replace", "delete"],
          description: "Operation to perform",
        },
        content: {
          type: "string",
          description: "Content for append/replace operations",
        },
      },
      required: ["path", "action"],
    },
    // Conservative default annotations (worst-case)
    annotations: {
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: false,
      openWorldHint: false,
    },
    resolve: true,
  };

  // Tool listing
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    return { tools: [manageFilesTool] };
  });

  // Tool resolution handler
  server.setRequestHandler(ResolveToolRequestSchema, async (request) => {
    const { name, arguments: args } = request.params;

    if (name !== "manage_files") {
      throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    }

    const action = args.action as string;

    // Return full tool with refined annotations
    const resolvedTool = {
      ...manageFilesTool,
      annotations: getAnnotationsForAction(action),
    };

    return { tool: resolvedTool };
  });

  function getAnnotationsForAction(action: string) {
    switch (action) {
      case "read":
        return {
          readOnlyHint: true,
          destructiveHint: false,
          idempotentHint: true,
          openWorldHint: false,
        };

      case "append":
        return {
          readOnlyHint: false,
          destructiveHint: false, // Additive only
          idempotentHint: false,
          openWorldHint: false,
        };

      case "replace":
        return {
          readOnlyHint: false,
          destructiveHint: true,
          idempotentHint: true, // Same content = same result
          openWorldHint: false,
        };

      case "delete":
        return {
          readOnlyHint: false,
          destructiveHint: true,
          idempotentHint: true, // Deleting twice = same result
          openWorldHint: false,
        };

      default:
        // Default to conservative for unknown actions
        return manageFilesTool.annotations;
    }
  }

  // ---- End of the SEP's code. ----
  return server;
}
