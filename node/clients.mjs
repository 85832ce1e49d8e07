// The ts-sdk clients: many official MCP TypeScript SDK clients (Client over
// StreamableHTTPClientTransport, the SDK's own reconnection and resumption)
// in one Node process, driven by stormsim's live engine over stdin and
// stdout, one JSON object a line. stormsim decides when each client calls
// and for how long it waits; the SDK decides everything else. Every request
// goes through stormsim's recording proxy (the endpoint stormsim names), which
// stamps the times, so this program reports no times.
//
// In:  {"op":"call","client":C,"seq":K,"endpoint":URL,"name":TOOL,"arguments":{...},"token":T,"renew":B}
//      (renew: the application replaces the client's session first, as
//      client.app_reconnect says: it closes the old Client and transport,
//      with a DELETE unless the server said the session is gone, and
//      connects a new one)
//      {"op":"cancel","client":C,"seq":K}   give the call up (stormsim's call timeout)
//      {"op":"close","client":C}            close the client's session (DELETE)
// Out: {"client":C,"seq":K,"progress":P}    a progress notification of call K
//      {"client":C,"seq":K,"done":true,"error":E,"status":S,"code":N,"is_error":B}
//      (status: the HTTP status of the SDK's StreamableHTTPError; code: the
//      JSON-RPC code of its McpError)
//      {"client":C,"closed":true}
//      {"ready":true}                      once, when the SDK is loaded
import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, McpError, ProgressNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const clients = new Map(); // client id -> { client, transport, seq, abort }

// connect fills st with a connected client.
async function connect(st, id, endpoint) {
  const client = new Client({ name: 'stormsim-ts-sdk-client', version: '1' });
  Object.assign(st, { client, transport: null, seq: -1, abort: null, gone: false });
  // The progress token is stormsim's, carried in _meta as the SDK carries
  // any token; the notifications come to this handler.
  client.setNotificationHandler(ProgressNotificationSchema, (n) => {
    if (st.seq >= 0 && n.params.progressToken === st.token) {
      out({ client: id, seq: st.seq, progress: n.params.progress });
    }
  });
  client.onerror = () => {};
  st.transport = new StreamableHTTPClientTransport(new URL(endpoint));
  // A 404 on any request of the session (a resume, the standalone GET, a
  // call's POST) is the server saying the session is gone.
  st.transport.onerror = (e) => {
    if (e instanceof StreamableHTTPError && e.code === 404) st.gone = true;
  };
  await client.connect(st.transport);
}

// release closes a client's Client and transport: first the DELETE of its
// session, unless the server said it is gone.
async function release(st) {
  if (!st.gone) {
    try {
      await st.transport.terminateSession();
    } catch {}
  }
  await st.client.close().catch(() => {});
}

async function call(m) {
  let st = clients.get(m.client);
  let result;
  try {
    if (st && m.renew && !st.pending) {
      clients.delete(m.client);
      await release(st);
      st = undefined;
    }
    if (!st) {
      st = { pending: true };
      clients.set(m.client, st);
      try {
        await connect(st, m.client, m.endpoint);
        st.pending = false;
      } catch (e) {
        clients.delete(m.client);
        throw e;
      }
    }
    st.seq = m.seq;
    st.token = m.token;
    st.abort = new AbortController();
    result = await st.client.request(
      { method: 'tools/call', params: { name: m.name, arguments: m.arguments, _meta: { progressToken: m.token } } },
      CallToolResultSchema,
      { signal: st.abort.signal, timeout: 2147483647 },
    );
    out({ client: m.client, seq: m.seq, done: true, error: null, is_error: Boolean(result.isError) });
  } catch (e) {
    if (st && e instanceof StreamableHTTPError && e.code === 404) st.gone = true;
    out({
      client: m.client, seq: m.seq, done: true, error: String(e?.message ?? e), is_error: false,
      status: e instanceof StreamableHTTPError ? e.code : null, // an HTTP status
      code: e instanceof McpError ? e.code : null, // a JSON-RPC error code
    });
    // The client is kept, with its session id, whatever the error: the
    // SDK does not re-initialise a session the server lost, so a later
    // call in a dead session gets 404 (the ts-sdk profile's on_404 =
    // "stale"), unless stormsim says the application replaces it (renew).
  } finally {
    if (st) {
      st.seq = -1;
      st.abort = null;
    }
  }
}

async function close(m) {
  const st = clients.get(m.client);
  clients.delete(m.client);
  if (st && !st.pending) await release(st);
  out({ client: m.client, closed: true });
}

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  let m;
  try {
    m = JSON.parse(line);
  } catch {
    return;
  }
  switch (m.op) {
    case 'call':
      call(m);
      break;
    case 'cancel': {
      const st = clients.get(m.client);
      if (st && st.seq === m.seq && st.abort) st.abort.abort(new Error('call timeout'));
      break;
    }
    case 'close':
      close(m);
      break;
  }
});
rl.on('close', () => process.exit(0));
// The SDK is loaded: stormsim starts the run's clock after this line, so
// that Node's start-up is not taken from the clients' schedule.
out({ ready: true });
