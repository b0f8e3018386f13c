#!/usr/bin/env node
/**
 * A small MCP server for the tests, built on the SDK's server side (McpServer). Plain JS, so the host can
 * spawn it with `node` alone (no loader, any working directory).
 *
 *   node mcp-server.mjs            stdio transport
 *   node mcp-server.mjs --http     streamable HTTP on 127.0.0.1 (random port); prints `listening <port>`
 *
 * Tools: echo, add (read-only hint), fail (isError), crash (the process exits), big (many lines), image,
 * slow (waits, honours cancellation), env (one environment variable); with `--write-tool` also write (a file).
 * `--name X` names the server; `--fail-start` exits before answering (a server that never starts); `--stderr`
 * writes a line to stderr; `--task-tool` adds `longjob`, a tool that runs only as an MCP task
 * (execution.taskSupport: 'required').
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const argv = process.argv.slice(2);
const flag = (f) => argv.includes(f);
const option = (f, dflt) => (argv.includes(f) ? argv[argv.indexOf(f) + 1] : dflt);
const text = (t) => ({ content: [{ type: 'text', text: t }] });

/** What `crash` does: exit the process (stdio) or stop listening (http). */
let crash = () => process.exit(3);

function createServer() {
  const server = new McpServer({ name: option('--name', 'caboose-test'), version: '1.0.0' });
  server.registerTool('echo', { description: 'Echo the text back.\nA second line the listing leaves out.', inputSchema: { text: z.string().describe('what to echo') } }, async ({ text: t }) => text(`echo: ${t}`));
  server.registerTool(
    'add',
    { description: 'Add two numbers.', inputSchema: { a: z.number(), b: z.number() }, annotations: { readOnlyHint: true } },
    async ({ a, b }) => text(String(a + b)),
  );
  server.registerTool('fail', { description: 'Always fails.', inputSchema: {} }, async () => ({ content: [{ type: 'text', text: 'the tool failed on purpose' }], isError: true }));
  server.registerTool('crash', { description: 'Ends the server.', inputSchema: {} }, async () => {
    setTimeout(() => crash(), 10);
    return new Promise(() => undefined); // never answers
  });
  server.registerTool('big', { description: 'Prints many lines.', inputSchema: { lines: z.number().int().min(1) } }, async ({ lines }) =>
    text(Array.from({ length: lines }, (_, i) => `line ${i + 1} ${'x'.repeat(40)}`).join('\n')),
  );
  server.registerTool('image', { description: 'Returns an image and a resource.', inputSchema: {} }, async () => ({
    content: [
      { type: 'image', data: Buffer.from('not really a png').toString('base64'), mimeType: 'image/png' },
      { type: 'resource', resource: { uri: 'file:///notes.txt', mimeType: 'text/plain', text: 'resource text' } },
    ],
  }));
  server.registerTool('slow', { description: 'Waits ms milliseconds.', inputSchema: { ms: z.number().int().min(0) } }, async ({ ms }, extra) => {
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      extra.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    return text(extra.signal.aborted ? 'aborted' : `waited ${ms} ms`);
  });
  if (flag('--task-tool')) {
    // Listed with execution.taskSupport 'required': a plain tools/call is refused by the SDK's server.
    server.experimental.tasks.registerToolTask(
      'longjob',
      { description: 'A long job that runs only as a task.', inputSchema: {}, execution: { taskSupport: 'required' } },
      {
        createTask: async () => {
          throw new Error('tasks are not implemented by the test server');
        },
        getTask: async () => {
          throw new Error('tasks are not implemented by the test server');
        },
        getTaskResult: async () => {
          throw new Error('tasks are not implemented by the test server');
        },
      },
    );
  }
  if (flag('--write-tool')) server.registerTool('write', { description: 'Writes text to a file (the sandbox tests).', inputSchema: { path: z.string(), text: z.string() } }, async ({ path, text: t }) => {
    try {
      (await import('node:fs')).writeFileSync(path, t);
      return text(`wrote ${path}`);
    } catch (e) {
      return { content: [{ type: 'text', text: String(e.message) }], isError: true };
    }
  });
  server.registerTool('env', { description: 'One environment variable.', inputSchema: { name: z.string() } }, async ({ name }) => text(`${name}=${process.env[name] ?? '(unset)'}`));
  return server;
}

if (flag('--stderr')) process.stderr.write('test server says hello on stderr\n');
if (flag('--fail-start')) {
  process.stderr.write('cannot start: missing configuration\n');
  process.exit(2);
}

if (flag('--http')) {
  // Stateful: one transport (and server) per session, as a real deployment keeps them.
  const transports = new Map();
  const httpServer = http.createServer(async (req, res) => {
    try {
      const id = req.headers['mcp-session-id'];
      let transport = typeof id === 'string' ? transports.get(id) : undefined;
      if (!transport) {
        if (req.method !== 'POST') {
          res.writeHead(typeof id === 'string' ? 404 : 400).end();
          return;
        }
        if (option('--require-header') && req.headers['x-test-token'] !== option('--require-header')) {
          res.writeHead(401).end('missing token');
          return;
        }
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (sid) => transports.set(sid, transport),
        });
        transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
        await createServer().connect(transport);
      }
      await transport.handleRequest(req, res);
    } catch (err) {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    }
  });
  crash = () => {
    httpServer.closeAllConnections();
    httpServer.close();
    process.exit(3);
  };
  httpServer.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${httpServer.address().port}\n`));
} else {
  await createServer().connect(new StdioServerTransport());
}
