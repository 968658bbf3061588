#!/usr/bin/env python3
"""The contract test: validates every response the integration tests got
from storhd against the OpenAPI document storhd serves at /openapi.json.

The test client (client/client.c) records each exchange as one JSON
line in $STORHD_CONTRACT_DIR/<test>.<pid>.ndjson. This script starts the
storhd under test on a scratch root, fetches /openapi.json, and checks each
recorded response:
  - the path and method resolve to an operation (else the answer must be a
    4xx error object: unknown path, other method, rejected path);
  - the status is one the operation declares;
  - the media type is one the response declares (none for 204/304);
  - the response headers it declares required are there, and match;
  - the body validates against that media type's schema (JSON Schema
    2020-12, as OpenAPI 3.1 says); an application/x-ndjson body line by line
    against the row schema;
  - a 2xx answer had a query string of declared parameters with valid
    values, and a JSON or NDJSON request body that validates
    against the operation's request schema (storhd accepted it, so the
    document must too).
Any violation fails (exit 1) and is listed with the test that made it.

  check_responses.py --storhd BIN --dir DIR [--dump FILE]
  check_responses.py --storhd BIN --dump FILE --no-check   (the document only)
"""
import argparse
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import jsonschema


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def fetch_document(storhd):
    root = tempfile.mkdtemp(prefix="storhd-contract-")
    try:
        for _ in range(5):
            port = free_port()
            proc = subprocess.Popen(
                [storhd, "--root", root, "--listen", "127.0.0.1:%d" % port],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                for _ in range(100):
                    try:
                        with urllib.request.urlopen(
                                "http://127.0.0.1:%d/openapi.json" % port, timeout=5) as r:
                            return json.loads(r.read())
                    except OSError:
                        if proc.poll() is not None:
                            break  # the port was taken meanwhile: try another
                        time.sleep(0.05)
            finally:
                proc.terminate()
                proc.wait()
        sys.exit("contract: could not get /openapi.json from %s" % storhd)
    finally:
        shutil.rmtree(root, ignore_errors=True)


class Contract:
    def __init__(self, doc):
        self.doc = doc
        self.components = doc["components"]
        self.validators = {}
        self.routes = []  # (segments, path item)
        for pattern, item in doc["paths"].items():
            self.routes.append((pattern.split("/")[1:], pattern, item))

    def deref(self, obj):
        while isinstance(obj, dict) and "$ref" in obj:
            node = self.doc
            for part in obj["$ref"][2:].split("/"):
                node = node[part]
            obj = node
        return obj

    def validator(self, schema):
        key = json.dumps(schema, sort_keys=True)
        v = self.validators.get(key)
        if v is None:
            # the components travel with the schema so "#/components/..." resolves
            wrapped = dict(schema)
            wrapped["components"] = self.components
            v = jsonschema.Draft202012Validator(wrapped)
            self.validators[key] = v
        return v

    def errors(self, schema, value):
        v = self.validator(schema)
        best = jsonschema.exceptions.best_match(v.iter_errors(value))
        if best is None:
            return None
        where = "/".join(str(p) for p in best.absolute_path)
        return "%s%s" % ("at /%s: " % where if where else "", best.message[:300])

    def route(self, path):
        """The path item of the template that matches: a literal segment beats
        a parameter (as storhd's router does)."""
        segs = path.split("?", 1)[0].split("/")[1:]
        best, best_score = None, -1
        for tsegs, pattern, item in self.routes:
            if len(tsegs) != len(segs):
                continue
            score = 0
            for t, s in zip(tsegs, segs):
                if t.startswith("{") and t.endswith("}"):
                    if not s:
                        break
                elif t == s:
                    score += 1
                else:
                    break
            else:
                if score > best_score:
                    best, best_score = (pattern, item), score
        return best


def media(ctype):
    return ctype.split(";", 1)[0].strip().lower() if ctype else ""


def check_body(c, schema, mtype, text, complete, request=False):
    """Violations of a body against the schema of its media type. A request
    body may end without LF and have blank lines (storhd skips them)."""
    if mtype == "application/x-ndjson":
        lines = text.split("\n")
        if request:
            lines = [line for line in lines if line.strip()]
        elif complete:
            if lines and lines[-1] == "":
                lines.pop()
            elif lines and lines[-1]:
                return ["the stream's last line has no LF"]
        else:
            lines.pop()  # a cut stream: only the lines it finished count
        for i, line in enumerate(lines, 1):
            try:
                row = json.loads(line)
            except ValueError as e:
                return ["line %d is not JSON: %s" % (i, e)]
            err = c.errors(schema, row)
            if err:
                return ["line %d: %s" % (i, err)]
        return []
    if mtype == "application/json":
        if not complete:
            return []
        try:
            value = json.loads(text)
        except ValueError as e:
            return ["not JSON: %s" % e]
        err = c.errors(schema, value)
        return [err] if err else []
    return []


def check_query(c, op, path):
    """A query string storhd accepted: every argument is a declared parameter
    (eq.FIELD through the exploded eq object) and its value validates."""
    if "?" not in path:
        return []
    declared = {}
    for p in op.get("parameters", []):
        p = c.deref(p)
        if p["in"] == "query":
            declared[p["name"]] = p
    problems = []
    for arg in path.split("?", 1)[1].split("&"):
        if not arg:
            continue
        name, _, value = arg.partition("=")
        name, value = urllib.parse.unquote_plus(name), urllib.parse.unquote_plus(value)
        p = declared.get(name)
        if p is None and name.startswith("eq.") and "eq" in declared:
            continue  # any value: a JSON scalar or text
        if p is None:
            problems.append("query parameter %r is not declared" % name)
            continue
        schema = c.deref(p["schema"])
        if schema.get("type") == "integer":
            try:
                value = int(value)
            except ValueError:
                problems.append("query parameter %s=%r is not an integer" % (name, value))
                continue
        err = c.errors(p["schema"], value)
        if err:
            problems.append("query parameter %s=%r: %s" % (name, value, err))
    return problems


def check_exchange(c, x):
    method = x["method"].upper()
    status = x["status"]
    body = x.get("body")
    ctype = media(x.get("ctype"))
    head = method == "HEAD"
    if head:
        method = "GET"
    found = c.route(x["path"]) if "path" in x else None
    op = found[1].get(method.lower()) if found else None
    if op is None:
        # not an operation: unknown path (404), other method (405), or a path
        # refused before routing (400); always the error object
        if not 400 <= status < 500:
            return ["%d for a path or method the document does not have" % status]
        if head:
            return []
        return check_body(c, {"$ref": "#/components/schemas/Error"}, ctype, body or "", True) \
            if ctype == "application/json" else ["error reply is %r, not application/json" % ctype]
    problems = []
    responses = op["responses"]
    resp = responses.get(str(status))
    if resp is None:
        return ["status %d is not declared (declared: %s)" % (status, " ".join(responses))]
    resp = c.deref(resp)
    content = resp.get("content")
    if "not_utf8" in x:
        problems.append("the response body is not UTF-8")
    if content is None:
        if body and not head:
            problems.append("status %d declares no body, got %d bytes" % (status, len(body)))
    elif not head:
        if ctype not in content:
            problems.append("media type %r is not declared (declared: %s)"
                            % (ctype, ", ".join(content)))
        elif body is not None:
            problems += check_body(c, content[ctype]["schema"], ctype, body, x["complete"])
    headers = {}
    for line in (x.get("headers") or "").split("\r\n"):
        if ":" in line and not line.startswith("HTTP/"):
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    for name, h in (resp.get("headers") or {}).items():
        h = c.deref(h)
        value = headers.get(name.lower())
        if value is None:
            if h.get("required"):
                problems.append("header %s is missing" % name)
        elif "schema" in h:
            err = c.errors(h["schema"], value)
            if err:
                problems.append("header %s: %s" % (name, err))
    if 200 <= status < 300:
        problems += ["request: " + p for p in check_query(c, op, x.get("path", ""))]
    req_body = x.get("req_body")
    if 200 <= status < 300 and req_body and "requestBody" in op:
        rb = c.deref(op["requestBody"])["content"]
        rtype = media(x.get("req_ctype"))
        if rtype in rb:
            problems += ["request: " + p for p in
                         check_body(c, rb[rtype]["schema"], rtype, req_body, True, True)]
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--storhd", required=True)
    ap.add_argument("--dir")
    ap.add_argument("--dump", help="also write the document here")
    ap.add_argument("--no-check", action="store_true")
    a = ap.parse_args()
    doc = fetch_document(a.storhd)
    if a.dump:
        with open(a.dump, "w") as f:
            json.dump(doc, f, indent=1)
    if a.no_check:
        return 0
    c = Contract(doc)
    files = sorted(glob.glob(os.path.join(a.dir, "*.ndjson")))
    if not files:
        print("contract: no recorded exchanges in %s" % a.dir)
        return 1
    checked, bad, seen = 0, [], set()
    per_test = {}
    for name in files:
        with open(name, encoding="utf-8") as f:
            for line in f:
                x = json.loads(line)
                checked += 1
                per_test[x["test"]] = per_test.get(x["test"], 0) + 1
                found = c.route(x.get("path", ""))
                method = "GET" if x["method"].upper() == "HEAD" else x["method"].upper()
                if found and method.lower() in found[1]:
                    seen.add((method, found[0], x["status"]))
                for p in check_exchange(c, x):
                    bad.append("%s: %s %s -> %d: %s" % (x["test"], x["method"],
                                                         x.get("path", "?")[:120], x["status"], p))
    ops = sum(len(item) for item in doc["paths"].values())
    seen_ops = len({(m, p) for m, p, _ in seen})
    print("contract: %d responses from %s checked against /openapi.json; %d operations "
          "exercised of %d, %d (operation, status) pairs" % (
              checked, ", ".join("%s %d" % kv for kv in sorted(per_test.items())),
              seen_ops, ops, len(seen)))
    missed = ["%s %s" % (m.upper(), p) for p, item in doc["paths"].items() for m in item
              if (m.upper(), p) not in {(sm, sp) for sm, sp, _ in seen}]
    if missed:
        print("contract: operations no test called (not checked): " + ", ".join(missed))
    if bad:
        print("contract: %d responses do not match the document:" % len(bad))
        for b in bad[:60]:
            print("  " + b)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
