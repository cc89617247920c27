"""OPA's own engine as a test oracle, spoken to over JSON lines.

regent's differential tests (src/catalog/opa.rs) start this script with an
interpreter that has `opa-golib-python-bindings` (tests/opa/requirements.txt)
and send one JSON object per line on stdin; each gets one JSON line back:

- {"load": {"modules": [[path, text], ...], "data": {...}}}
  -> {"ok": true} or {"error": "..."}: a fresh engine holding these modules
  and data (the previous one is closed). OPA compiles the modules when the
  first query is prepared, so a module OPA refuses shows as an error there.
- {"eval": [query, ...], "input": {...}}
  -> {"results": [r, ...]}, one per query, in order, each
  {"value": v}, {"undefined": true} or {"error": "..."}.
  A query is a reference (`data.pkg.rule`), evaluated as OPA evaluates a
  document: strict builtin errors, as regent evaluates.
- {"version": true} -> {"version": "..."}

Nothing here decides anything: it reports what OPA answers.
"""

import json
import sys

from opa_bindings import OpaEngine, OpaError, OpaUndefinedError


def evaluate(engine, query, input_doc):
    path = query[len("data."):] if query.startswith("data.") else query
    try:
        return {"value": engine.eval_document(path, input_doc)}
    except OpaUndefinedError:
        return {"undefined": True}
    except OpaError as e:
        return {"error": f"{e.code}: {e.message}"}


def main():
    engine = None
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        if "load" in req:
            if engine is not None:
                engine.close()
            engine = OpaEngine()
            try:
                for path, text in req["load"].get("modules", []):
                    engine.add_policy(path, text)
                data = req["load"].get("data")
                if data:
                    engine.add_data(data)
                resp = {"ok": True}
            except OpaError as e:
                resp = {"error": f"{e.code}: {e.message}"}
        elif "eval" in req:
            if engine is None:
                resp = {"error": "no policy loaded"}
            else:
                input_doc = req.get("input")
                resp = {"results": [evaluate(engine, q, input_doc) for q in req["eval"]]}
        elif "version" in req:
            from importlib.metadata import version
            resp = {"version": version("opa-golib-python-bindings")}
        else:
            resp = {"error": f"unknown request: {sorted(req)}"}
        out.write(json.dumps(resp, ensure_ascii=False) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
