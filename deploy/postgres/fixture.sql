-- The page-RPC reference fixture: 10,000 rows over 100 tenants with
-- 128-byte payloads, and page(args) returning 100 rows of one tenant. The
-- tenant comes from the verified JWT claims (request.jwt.claims, set by
-- storhd for each call), falling back to args->tenant when the claims have
-- none. Idempotent: safe to load twice.
CREATE TABLE IF NOT EXISTS rpc_items (
    id integer PRIMARY KEY,
    tenant integer NOT NULL,
    payload text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS rpc_items_tenant_id ON rpc_items (tenant, id);
INSERT INTO rpc_items (id, tenant, payload)
SELECT g, g % 100, repeat(md5(g::text), 4) -- 4 x 32 hex = 128 bytes
FROM generate_series(1, 10000) AS g
ON CONFLICT (id) DO NOTHING;
ANALYZE rpc_items;

CREATE OR REPLACE FUNCTION page(args jsonb)
RETURNS TABLE (id integer, tenant integer, payload text, created_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT i.id, i.tenant, i.payload, i.created_at
    FROM rpc_items AS i
    WHERE i.tenant = coalesce(
        (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'tenant')::integer,
        (args ->> 'tenant')::integer)
    ORDER BY i.id
    LIMIT least(coalesce((args ->> 'limit')::integer, 100), 1000)
$$;
