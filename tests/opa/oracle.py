"""OPA's own engine as a test oracle, spoken to over JSON lines.

regent's differential tests (src/differential/opa.rs) start this script with an
interpreter that has `opa-golib-python-bindings` (tests/opa/requirements.txt)
and send one JSON object per line on stdin; each gets one JSON line back:

- {"load": {"modules": [[path, text], ...], "data": {...}}}
  -> {"ok": true} or {"error": "..."}: a fresh engine holding these modules
  and data (the previous one is closed). OPA compiles the modules when the
  first query is prepared, so a module OPA refuses shows as an error there.
- {"eval": [query, ...], "input_text": "{...}"}
  -> {"results": [r, ...]}, one per query, in order, each
  {"value": v}, {"undefined": true} or {"error": "..."}.
  A query is a reference (`data.pkg.rule`), evaluated as OPA evaluates a
  document: strict builtin errors, as regent evaluates.
  Numbers keep their text both ways (issue 27: OPA computes on a number's
  text, and writes a result's text to 64 bits, which a Python float would
  round to 53): the input is handed to OPA as the JSON text regent wrote,
  and each number of a value comes back as {"$opa_number": "its text"}.
- {"version": true} -> {"version": "..."}

Nothing here decides anything: it reports what OPA answers.
"""

import json
import sys

from opa_bindings import OpaEngine, OpaError, OpaUndefinedError
from opa_bindings import engine as _engine


class RawJson(str):
    """JSON text handed to OPA as it is."""


class NumberText(str):
    """A number of OPA's answer, as OPA wrote it."""


_dumps = _engine._dumps
_engine._dumps = lambda x: x.encode() if isinstance(x, RawJson) else _dumps(x)


class _KeepNumberText:
    """The binding's `json`, reading numbers as their text."""

    def __getattr__(self, name):
        return getattr(json, name)

    @staticmethod
    def loads(s, **kw):
        return json.loads(s, parse_float=NumberText, parse_int=NumberText, **kw)


_engine.json = _KeepNumberText()


def tagged(v):
    """`v` with each number as {"$opa_number": text}."""
    if isinstance(v, NumberText):
        return {"$opa_number": str(v)}
    if isinstance(v, list):
        return [tagged(x) for x in v]
    if isinstance(v, dict):
        return {k: tagged(x) for k, x in v.items()}
    return v


def evaluate(engine, query, input_doc):
    path = query[len("data."):] if query.startswith("data.") else query
    try:
        return {"value": tagged(engine.eval_document(path, input_doc))}
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
                text = req.get("input_text")
                input_doc = None if text is None else RawJson(text)
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
