"""A user's own prompts: one JSON object a line, ``{"prompt": "...", "id": "...",
"max_tokens": N, "class": "code"}`` (``id``, ``max_tokens`` and ``class`` optional; a line
without a class takes ``workload.content``, else ``other``). Speed only, greedy; the report
shows TPOT per class.

The first ``workload.questions`` lines are measured (all when there are fewer), the next
``warmup_requests`` lines (or the first ones again) warm up.
"""

from __future__ import annotations

import json
from pathlib import Path

from tuner.errors import UserError
from tuner.workloads._base import Prepared
from tuner.workloads._base import Prompt
from tuner.workloads._base import Sampling
from tuner.workloads._base import Workload


class JsonlPrompts(Workload):
    kind = "jsonl"

    def _read(self) -> list[Prompt]:
        path = self.settings.path
        if not path:
            raise UserError("the jsonl workload needs workload.path (a prompts file)")
        try:
            lines = Path(path).expanduser().read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise UserError(f"workload.path {path}: cannot read it ({exc.__class__.__name__})"
                            ) from None
        out: list[Prompt] = []
        for i, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                raise UserError(f"{path}:{i}: not JSON") from None
            if not isinstance(rec, dict) or not isinstance(rec.get("prompt"), str):
                raise UserError(f"{path}:{i}: expected an object with a string 'prompt'")
            n = rec.get("max_tokens", self.settings.output_len)
            if not isinstance(n, int) or isinstance(n, bool) or n < 1:
                raise UserError(f"{path}:{i}: max_tokens must be a positive integer")
            label = rec.get("class", self.settings.content or "other")
            if (not isinstance(label, str) or not label.strip() or len(label) > 40
                    or not label.isprintable()):     # a newline would break every table
                raise UserError(f"{path}:{i}: 'class' must be a short label like code or chat "
                                "(printable, at most 40 characters)")
            out.append(Prompt(str(rec.get("id", f"line-{i}")), Sampling(max_new_tokens=n),
                              text=rec["prompt"], content=label.strip()))
        if not out:
            raise UserError(f"{path}: no prompts")
        return out

    def prepare(self) -> Prepared:
        prompts = self._read()
        n, k = self.settings.questions, self.settings.warmup_requests
        measured = prompts[:n]
        rest = prompts[n:] or prompts
        warm = [Prompt(f"warmup-{p.id}", p.sampling, text=p.text, content=p.content)
                for p in rest[:k]]
        return Prepared(warmup=warm, measured=measured)
