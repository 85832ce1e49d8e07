// The ts-sdk replica flavour: the official MCP TypeScript SDK's
// StreamableHTTPServerTransport, one per session with the SDK's own
// InMemoryEventStore, wired as the SDK's example (simpleStreamableHttp)
// wires it, serving stormsim's "stream" tool. `stormsim serve` runs it in
// its own process (it replaces itself with this program), so SIGTERM and
// SIGKILL reach it as they reach any replica.
//
//   node server.mjs --addr 127.0.0.1:0 [--stateless] [--no-events] [--shared-store] [--log FILE] [--drain-ms N] [--allow-host NAME]...
//
// --shared-store is a leaky variant kept as an example of what the
// isolation probes exist to catch: one InMemoryEventStore for every session
// instead of one per session. The SDK's store is keyed by stream alone
// (its ids are <streamId>_<ms>_<random>, the stream a random UUID), so any
// session that presents another session's event id is replayed the rest of
// that stream: the class of the fastmcp and frontmcp advisories.
//
// It prints "listening on http://ADDR/mcp" when ready, answers /healthz, and
// writes the production log in the reference replica's format: a start line
// per call and a line per event produced, each with the call's progress
// token. Sessions live in this process: a restart loses them, and a request
// naming one gets the example's 404. A request whose Host, or Origin when it
// has one, names neither a loopback name, the --addr host nor an
// --allow-host NAME gets 403, as the reference replica answers it
// (protocol.Allow; --allow-host '*' turns the check off).
import http from 'node:http';
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, isInitializeRequest, McpError, ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { InMemoryEventStore } from '@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js';

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : def;
};
const addr = opt('--addr', '127.0.0.1:0');
const stateless = args.includes('--stateless');
const noEvents = args.includes('--no-events');
const sharedStore = args.includes('--shared-store') ? new InMemoryEventStore() : undefined;
const drainMS = Number(opt('--drain-ms', '100'));
const logPath = opt('--log', '');
const log = logPath ? fs.openSync(logPath, 'a') : -1;

// The Host and Origin check against DNS rebinding, as protocol.Allow decides
// it: host names compared without case and without the port.
const hostname = (h) => {
  h = h.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(1, h.indexOf(']'));
  const i = h.lastIndexOf(':');
  return i >= 0 && h.indexOf(':') === i ? h.slice(0, i) : h;
};
const allowNames = args.flatMap((a, i) => (args[i - 1] === '--allow-host' ? [a] : []));
const allowAny = allowNames.includes('*');
const allowed = new Set([...allowNames, addr].map(hostname));
const loopback = (h) => h === 'localhost' || h.endsWith('.localhost') || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h);
const hostAllowed = (h) => loopback(h) || allowed.has(h);
function forbidden(req) {
  if (allowAny) return '';
  const host = req.headers.host ?? '';
  if (!hostAllowed(hostname(host))) return `Host ${JSON.stringify(host)} is not one this server answers to`;
  const origin = req.headers.origin;
  if (origin === undefined) return '';
  let o;
  try { o = new URL(origin); } catch { o = null; }
  if (!o || !o.host || !hostAllowed(hostname(o.host))) return `Origin ${JSON.stringify(origin)} is not allowed`;
  return '';
}

// Wall-clock nanoseconds with the monotonic clock's resolution.
const base = BigInt(Date.now()) * 1000000n - process.hrtime.bigint();
const nowNS = () => (base + process.hrtime.bigint()).toString();
const writeLog = (rec) => {
  if (log < 0) return;
  // t_ns is written as a bare integer: JSON numbers in JavaScript stop at 2^53.
  const line = JSON.stringify({ ...rec, t_ns: 0 }).replace(/"t_ns":0}$/, `"t_ns":${nowNS()}}`);
  fs.writeSync(log, line + '\n');
};

const sleep = (ms, signal) => new Promise((resolve, reject) => {
  if (signal?.aborted) return reject(new Error('cancelled'));
  const onAbort = () => { clearTimeout(t); reject(new Error('cancelled')); };
  const t = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(); }, ms);
  signal?.addEventListener('abort', onAbort, { once: true });
});

// newServer is one MCP server with the "stream" tool. The tool sends
// progress 1..N of N, as TypeScript tools do, then the result: N+1 events,
// logged with indices 1..N+1.
function newServer(session) {
  const server = new Server({ name: 'stormsim-ts-sdk-replica', version: '1' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [{
      name: 'stream',
      description: 'sends events progress notifications (progress 1..events of events), interval_ms apart, each carrying bytes of padding, then a result',
      inputSchema: { type: 'object', properties: { events: { type: 'integer' }, interval_ms: { type: 'integer' }, bytes: { type: 'integer' } }, required: ['events'] },
    }],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    if (req.params.name !== 'stream') throw new McpError(ErrorCode.InvalidParams, `unknown tool ${req.params.name}`);
    const a = req.params.arguments ?? {};
    const n = a.events, interval = a.interval_ms ?? 0, bytes = a.bytes ?? 0;
    if (!Number.isInteger(n) || n < 0 || n > 1000000 || interval < 0 || bytes < 0 || bytes > 1 << 20) {
      throw new McpError(ErrorCode.InvalidParams, 'events must be 0..1000000, interval_ms ≥ 0, bytes 0..1048576');
    }
    const token = req.params._meta?.progressToken;
    const tok = token === undefined ? '' : String(token);
    const sid = session();
    writeLog({ session: sid, token: tok, start: true });
    const pad = 'x'.repeat(bytes);
    for (let i = 1; i <= n + 1; i++) {
      await sleep(Math.max(interval, 1), extra.signal);
      writeLog({ index: i, session: sid, token: tok });
      if (i === n + 1) break;
      if (token !== undefined) {
        await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: n, message: pad } });
      }
    }
    return { content: [{ type: 'text', text: `streamed ${n} events` }] };
  });
  return server;
}

const sessions = new Map(); // session id -> transport
const notFound = (res) => {
  res.writeHead(404, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
};

async function readBody(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const s = Buffer.concat(chunks).toString('utf8');
  return s === '' ? undefined : JSON.parse(s);
}

async function handleMCP(req, res) {
  const sid = req.headers['mcp-session-id'];
  let body;
  if (req.method === 'POST') {
    try {
      body = await readBody(req);
    } catch {
      res.writeHead(400, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null }));
      return;
    }
  }
  if (stateless) {
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    const server = newServer(() => '');
    res.on('close', () => { transport.close(); server.close(); });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
    return;
  }
  if (sid) {
    const transport = sessions.get(sid);
    if (!transport) return notFound(res);
    await transport.handleRequest(req, res, body);
    return;
  }
  if (req.method === 'POST' && isInitializeRequest(body)) {
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: noEvents ? undefined : (sharedStore ?? new InMemoryEventStore()),
      onsessioninitialized: (id) => { sessions.set(id, transport); },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    const server = newServer(() => transport.sessionId ?? '');
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
    return;
  }
  res.writeHead(400, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: No valid session ID provided' }, id: null }));
}

const httpServer = http.createServer((req, res) => {
  const path = (req.url ?? '').split('?')[0];
  if (path === '/healthz') {
    res.writeHead(200);
    res.end();
    return;
  }
  if (path !== '/mcp') {
    res.writeHead(404);
    res.end();
    return;
  }
  const why = forbidden(req);
  if (why) {
    res.writeHead(403, { 'Content-Type': 'text/plain' });
    res.end(why + '\n');
    return;
  }
  handleMCP(req, res).catch((err) => {
    if (!res.headersSent) {
      res.writeHead(500, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: String(err?.message ?? err) }, id: null }));
    } else {
      res.end();
    }
  });
});
httpServer.keepAliveTimeout = 60000;

const [host, port] = [addr.slice(0, addr.lastIndexOf(':')), Number(addr.slice(addr.lastIndexOf(':') + 1))];
httpServer.listen(port, host, () => {
  const a = httpServer.address();
  process.stdout.write(`listening on http://${a.address}:${a.port}/mcp\n`);
});

// SIGTERM shuts down as a Node service does: no new connections, running
// streams get up to the drain limit, then the process exits.
process.on('SIGTERM', () => {
  httpServer.close();
  httpServer.closeIdleConnections();
  setTimeout(() => process.exit(0), Math.max(drainMS, 100)).unref();
});
process.on('SIGINT', () => process.exit(0));
