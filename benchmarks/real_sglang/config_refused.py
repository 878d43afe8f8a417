"""List the flags whose ``--config`` key an SGLang wheel's ConfigArgumentMerger refuses.

    python benchmarks/real_sglang/config_refused.py sglang-0.5.17-*.whl

SGLang 0.5.17's merger refuses every YAML key that is the ``dest`` of an action other than
store/store_true; some real flags share their dest with a deprecated alias action, so
their keys are refused although the flag exists. The printed set is
``tuner.engines._sglang_flags.CONFIG_REFUSED``. Static (AST) reading: nothing is imported.
"""

from __future__ import annotations

import ast
import re
import sys
import zipfile


def refused(wheel: str) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        args_py = zf.read("sglang/srt/server_args.py").decode()
        sources = [args_py] + [zf.read(n).decode() for n in zf.namelist()
                               if n.startswith("sglang/srt/arg_groups/") and n.endswith(".py")]
    fields = set(re.findall(r"^    (\w+): ", args_py, re.M))
    out: set[str] = set()
    for src in sources:
        for node in ast.walk(ast.parse(src)):
            if not (isinstance(node, ast.Call)
                    and getattr(node.func, "attr", "") == "add_argument"):
                continue
            longs = [a.value for a in node.args if isinstance(a, ast.Constant)
                     and isinstance(a.value, str) and a.value.startswith("--")]
            if not longs:
                continue
            kw = {k.arg: k.value for k in node.keywords}
            dest_node = kw.get("dest")
            dest = (dest_node.value if isinstance(dest_node, ast.Constant)
                    else longs[0][2:].replace("-", "_"))
            action = kw.get("action")
            name = ("store" if action is None else action.value
                    if isinstance(action, ast.Constant) else ast.unparse(action))
            if name not in ("store", "store_true") and dest in fields:
                out.add("--" + dest.replace("_", "-"))
    return out


if __name__ == "__main__":
    for flag in sorted(refused(sys.argv[1])):
        print(flag)
