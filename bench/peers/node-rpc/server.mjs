// A page-RPC peer for bench/http/peer.sh: POST /rpc/:fn as a Node.js team
// would build it in an afternoon (Fastify, node-postgres, jose, lru-cache),
// answering storhd's requests with the same bytes so the trials compare
// like with like. It follows storhd's contract, not its code:
//   - RS256 bearer tokens against one public key (imported at start), 30 s
//     of leeway, verified tokens remembered (LRU of 1000) until they expire;
//   - the allow-listed function called through one prepared statement per
//     function whose SQL text is storhd's (claims as request.jwt.claims for
//     the statement, arguments as jsonb, rows aggregated to JSON text by
//     PostgreSQL and sent unchanged), a pool of 8 connections;
//   - answers cached for 5 s under function + arguments + the scope claims
//     (tenant, role), X-Cache and Cache-Control as storhd sends them.
// Settings (environment): PORT, HOST, JWT_PUBLIC_KEY, RPC_FUNCTIONS, RPC_POOL,
// RPC_CACHE_TTL, RPC_CACHE_ENTRIES, RPC_SCOPE_CLAIMS, and PGHOST, PGPORT,
// PGUSER, PGDATABASE for node-postgres.
import { readFile } from 'node:fs/promises';
import Fastify from 'fastify';
import pg from 'pg';
import { importSPKI, jwtVerify } from 'jose';
import { LRUCache } from 'lru-cache';

const setting = (name, fallback) => process.env[name] ?? fallback;
const count = (name, fallback) => {
  const n = Number(setting(name, fallback));
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a whole number >= 0`);
  return n;
};

const ttl = count('RPC_CACHE_TTL', 5);
const scopes = setting('RPC_SCOPE_CLAIMS', 'tenant,role').split(',').filter((s) => s);
const publicKey = await importSPKI(await readFile(setting('JWT_PUBLIC_KEY', 'jwt.pub'), 'utf8'), 'RS256');

const sqlFor = (fn) =>
  "SELECT coalesce(json_agg(t), '[]'::json)::text FROM (SELECT set_config('request.jwt.claims', " +
  `$1, true) AS c) s, LATERAL "${fn}"(CASE WHEN s.c IS NOT NULL THEN $2::jsonb END) t`;
const calls = new Map();
for (const fn of setting('RPC_FUNCTIONS', 'page').split(',').filter((s) => s)) {
  if (!/^[a-z_][a-z0-9_]*$/.test(fn)) throw new Error(`not a plain identifier: ${fn}`);
  calls.set(fn, { name: `peer_${fn}`, text: sqlFor(fn), rowMode: 'array' });
}

const db = new pg.Pool({ max: count('RPC_POOL', 8) });
db.on('error', () => {});
const tokens = new LRUCache({ max: 1000 });
const pages = ttl > 0 ? new LRUCache({ max: count('RPC_CACHE_ENTRIES', 10000), ttl: ttl * 1000 }) : null;
const fail = (reply, status, code, message) => reply.code(status).send({ error: { status, code, message } });

async function claimsOf(header) {
  const token = header?.startsWith('Bearer ') ? header.slice(7) : null;
  if (!token) return null;
  const known = tokens.get(token);
  if (known && (known.exp === undefined || Date.now() / 1000 < known.exp + 30)) return known;
  try {
    const { payload } = await jwtVerify(token, publicKey, { algorithms: ['RS256'], clockTolerance: 30 });
    const entry = { claims: payload, text: JSON.stringify(payload), exp: payload.exp };
    tokens.set(token, entry);
    return entry;
  } catch {
    return null;
  }
}

const app = Fastify({ logger: false, bodyLimit: 1 << 20 });
app.get('/healthz', async () => ({ status: 'ok' }));
app.post('/rpc/:fn', async (req, reply) => {
  const call = calls.get(req.params.fn);
  if (!call) return fail(reply, 404, 'not_found', 'No such rpc function.');
  const who = await claimsOf(req.headers.authorization);
  if (!who) {
    reply.header('WWW-Authenticate', 'Bearer');
    return fail(reply, 401, 'unauthorized', 'A valid bearer token is required.');
  }
  const body = req.body;
  if (!body || typeof body !== 'object' || Array.isArray(body))
    return fail(reply, 400, 'bad_request', 'The body must be a JSON object.');
  const args = JSON.stringify(body);
  const key = pages && [req.params.fn, args, ...scopes.map((c) => (c in who.claims ? JSON.stringify(who.claims[c]) : ''))].join('\n');
  const cached = pages?.get(key);
  reply.type('application/json').header('Cache-Control', pages ? `private, max-age=${ttl}` : 'no-store');
  if (cached !== undefined) return reply.header('X-Cache', 'hit').send(cached);
  let rows;
  try {
    rows = (await db.query({ ...call, values: [who.text, args] })).rows[0][0];
  } catch (e) {
    return e.severity ? fail(reply, 400, 'bad_request', e.message) : fail(reply, 503, 'unavailable', e.message);
  }
  pages?.set(key, rows);
  return reply.header('X-Cache', 'miss').send(rows);
});

for (const sig of ['SIGTERM', 'SIGINT'])
  process.on(sig, () => app.close().then(() => db.end()).then(() => process.exit(0)));
await app.listen({ port: count('PORT', 8080), host: setting('HOST', '127.0.0.1') });
