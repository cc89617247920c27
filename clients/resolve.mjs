// tools/resolve from the official MCP TypeScript SDK (@modelcontextprotocol/sdk
// 1.32.2), negotiating io.modelcontextprotocol/tool-resolution. Tested by .ci/run:
//
//     (cd clients && npm ci) && node clients/resolve.mjs target/debug/regent
import { fileURLToPath } from 'node:url';
// README: begin (the README quotes from here to `README: end` verbatim; .ci/clients checks)
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { z } from 'zod';

// The draft's answer, exactly: anything else fails validation.
const ResolveResult = z.strictObject({
  resultType: z.literal('complete'),
  name: z.string(),
  annotations: z.record(z.string(), z.boolean()),
  _meta: z.record(z.string(), z.unknown()).optional(),
});

const regent = process.argv[2] ?? 'target/debug/regent';
const catalog = fileURLToPath(new URL('../examples/manage_files', import.meta.url));
const client = new Client({ name: 'resolve-example', version: '1.0.0' }, {
  capabilities: {
    extensions: {
      'io.modelcontextprotocol/tool-resolution': {}, // the draft's answers
      'io.github.regent/decision': {}, // regent's decision under _meta
    },
  },
});
await client.connect(new StdioClientTransport({ command: regent, args: ['serve', catalog] }));

const resolved = {};
for (const action of ['read', 'delete']) {
  const params = { name: 'manage_files', arguments: { path: 'notes.txt', action } };
  const r = await client.request({ method: 'tools/resolve', params }, ResolveResult);
  console.log(action, JSON.stringify(r.annotations), JSON.stringify(r._meta));
  resolved[action] = r.annotations;
}
await client.close();
// README: end

if (resolved.read.readOnlyHint !== true || resolved.delete.destructiveHint !== true) {
  console.error('unexpected annotations:', resolved);
  process.exit(1);
}
