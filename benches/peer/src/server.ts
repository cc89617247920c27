// The SEP-1862 reference server (manage_files.ts) over stdio, the way the
// SDK's examples serve stdio.

import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

import { createServer } from "./manage_files.js";

await createServer().connect(new StdioServerTransport());
